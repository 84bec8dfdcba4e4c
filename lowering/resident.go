package lowering

import (
	"math"
	"slices"

	"github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
	"github.com/tensorforge/tensorforge/passes"
)

// Resident splits: a row kernel that normalises rows too long for one
// program's sram (softmax or log_softmax over a vocabulary of logits) runs
// on a GPU as one kernel whose instances each take one of S splits of a
// row and keep it in sram, so that the row is read from DRAM once, where
// the online kernel reads it twice (its max and sum in one pass, the
// normalised row in a second). Instance t, numbered by a loop.ticket,
// takes split j = t mod S of row t / S:
//
//  1. it reads its L = C / S columns into an sram buffer, taking their
//     max m_j and their sum s_j of exp against h(m_j), as one chunk of an
//     online kernel, and stores them in two [R..., S] f32 buffers. Where
//     the columns are an input's (x, or x widened from bf16 or f16), the
//     buffer holds them as loaded, filled by a threads loop that only
//     copies (copySpan), which the PTX emitter turns into bulk copies
//     that put the whole split in flight at once (emit/ptx/bulk.go), and
//     the loops after it widen what they read;
//  2. loop.group_sync waits for the S instances of the row;
//  3. each combines the row's S pairs, m = max_j m_j and
//     s = sum_j s_j exp(h(m_j) - h(m)), in split order, so every instance
//     of the row gets the same m and s;
//  4. and computes the third phase over its split from the sram buffer,
//     storing the normalised columns.
//
// A row whose values are an input's and that fits the budget whole (32000
// bf16, counted as 128000 bytes of f32, with resident-bytes=131072) is a
// split of S = 1: no group, no partial results, a one-pass kernel whose
// row is copied as loaded rather than held in f32 by its first loop
// (residentRow).
//
// The instances of a row wait for each other: tickets hand out the
// instances in the order they start, so a group's instances are all
// running once its first is and the group ahead of it is done, and a GPU
// that holds at least S instances at once (one instance per program)
// never deadlocks. One form would serve every row count, but a few rows
// run faster as the split online kernels of split.go: where those apply
// (fewer rows than twice the SMs), they take the few rows, and a `?` row
// count launches both forms, guarded.
//
// It is not the default (lower-to-loops{resident=true} asks for it): on
// an H100 the wait at the sync, two trips to L2 and an atomic, costs what
// the second read saves. Softmax over 4096 rows of 256000 bf16 ran at
// 0.68-0.73 of the copy bandwidth with Triton against 0.65 online, but
// at 0.59 against 0.63 with PTX, and a decode step of 1 to 16 rows took
// 8.5-13 us of GPU time against 5.8-9.5 for the split online kernels
// (bench/results/gpu-h100-2026-12-06-resident.txt).

// Resident split choices.
const (
	// residentBytes bounds the sram buffer of one instance: splits of 8000
	// f32 of a row of 256000, whose programs are small enough for four or
	// five to share an SM. On an H100, softmax over 4096 rows of 256000
	// bf16 (Triton) took 1.90-2.05 ms in splits of 8000, 2.12-2.14 in
	// 16000 and 2.27-2.34 in 4000
	// (bench/results/gpu-h100-2026-12-06-resident.txt).
	residentBytes = 32 * 1024
	// residentMax bounds S, the instances a group must hold at once.
	residentMax = 64
)

// residentCount is S for row kernel info on target t (0: no resident
// split): the smallest power of two that cuts the row into splits of at
// most residentBytes of held bytes a column, each a multiple of the
// vector width w. held counts a column as f32 (or wider) even where the
// split is copied as loaded (copies): Triton's registers hold the widened
// values, and its measured split sizes are those of f32; the PTX
// emitter's copy in shared memory takes the input's bytes, half of that
// for bf16.
func residentCount(t *target.Target, info *passes.KernelInfo, held, w int64, copies bool, opts Options) int64 {
	if !opts.Resident || opts.ExactRounding || t == nil || t.Family != target.CUDA || !normalizes(info) || info.Views != nil ||
		info.RowLen < opts.ResidentMinCols {
		return 0
	}
	// a row short enough for one program is kept by the one-pass
	// schedule, unless the row is copied as loaded: then it is a "split"
	// of S = 1, copied whole, read once
	switch info.Schedule {
	case passes.ScheduleOnline:
	case passes.ScheduleOnePass:
		if !copies {
			return 0
		}
	default:
		return 0
	}
	c := info.RowLen
	budget := int64(residentBytes)
	if opts.ResidentBytes > 0 {
		budget = opts.ResidentBytes
	}
	first := int64(2)
	if copies {
		first = 1 // a split of one: the row copied whole
	}
	for s := first; s <= residentMax; s *= 2 {
		if c%s == 0 && (c/s)%max(w, 1) == 0 && (c/s)*held <= budget {
			return s
		}
	}
	return 0
}

// lowerResident launches the resident split of a row kernel, when it
// applies.
func (l *funcLowering) lowerResident(fused *ir.Operation, info *passes.KernelInfo, inputs, outputs []*ir.Value) bool {
	if len(outputs) == 0 {
		return false
	}
	maxOp, sumOp, ok := info.Online()
	if !ok {
		return false
	}
	// the split counts as f32 (or wider); a copy holds the input's bytes
	held := max(int64(4), elemOf(maxOp.Operand(0)).Kind.ByteSize())
	src := copySource(maxOp.Operand(0))
	s := residentCount(l.target, info, held, l.rowWidth(fused, info, inputs), src != nil, l.opts)
	if s == 0 {
		return false
	}
	length := info.RowLen / s
	on := &onlinePair{max: maxOp, sum: sumOp}
	if s == 1 {
		l.opts.Remarks.Remark("fusion", fused.Loc, "keep each row of %d in sram as loaded (%d bytes), copied whole before its max and sum of exp are taken, so that it is read once",
			info.RowLen, length*max(elemOf(src).Kind.ByteSize(), 1))
		l.launch(fused.Loc, "row", inputs, outputs, func(k *kernelBuilder) error {
			return k.resident(fused, info, on, 1)
		})
		return true
	}
	bytes := length * held
	if src != nil {
		bytes = length * max(elemOf(src).Kind.ByteSize(), 1)
	}
	l.opts.Remarks.Remark("fusion", fused.Loc, "split the rows of %d across groups of %d programs that each keep %d columns in sram (%d bytes) and meet at a loop.group_sync to combine their max and sum of exp, so that each row is read once",
		info.RowLen, s, length, bytes)

	pm := l.rowBuffer(fused, info, outputs, "split_max", s, ir.F32Type, false)
	ps := l.rowBuffer(fused, info, outputs, "split_sum", s, ir.F32Type, false)
	// the counters: one ticket counter, arrivals and departures per row
	ta := must(loop.BuildAllocDRAM(l.fb, fused.Loc, nil, ir.MemRefType{Shape: []int64{1}, Elem: ir.I32Type, Space: ir.DRAM}))
	ta.SetAttr("zeroed", ir.BoolAttr(true))
	tickets := ta.Output()
	tickets.Name = "tickets"
	l.extents[tickets] = []*ir.Value{nil}
	sync := l.rowBuffer(fused, info, outputs, "groups", 2, ir.I32Type, true)
	outs := append(slices.Clone(outputs), pm, ps, tickets, sync)
	l.launch(fused.Loc, "row", inputs, outs, func(k *kernelBuilder) error {
		return k.resident(fused, info, on, s)
	})
	return true
}

// resident builds the kernel of a resident split in s (the buffers after
// the kernel's outputs: the splits' max and sum, the ticket counter and
// the groups' counters; none for s = 1, a row per instance with no group
// to meet).
func (k *kernelBuilder) resident(fused *ir.Operation, info *passes.KernelInfo, on *onlinePair, s int64) error {
	if s == 1 {
		return k.residentRow(fused, info, on)
	}
	ev, length, width := k.splitKernel(fused, info, s, passes.ScheduleResident)
	n := len(info.Shape)
	outs := yielded(fused)
	stores := ev.phaseZeroStores(outs)
	pm, ps := k.outs[len(outs)], k.outs[len(outs)+1]
	tickets, sync := k.outs[len(outs)+2], k.outs[len(outs)+3]
	leadExt := make([]*ir.Value, n-1)
	for d := range leadExt {
		leadExt[d] = k.dim(pm, d)
	}
	rows := k.product(k.kb, leadExt)
	instances := k.product(k.kb, []*ir.Value{rows, k.index(s)})
	x := on.max.Operand(0)
	k.grid(instances, func(b *ir.Builder, _ *ir.Value) {
		t := must(loop.BuildTicket(b, k.loc, tickets, instances)).Output()
		t.Name = "t"
		j := must(loop.BuildRemi(b, k.loc, t, k.index(s))).Output()
		j.Name = "split"
		r := must(loop.BuildDivi(b, k.loc, t, k.index(s))).Output()
		ev.rowIdx = k.splitRow(b, r, leadExt)
		row := ev.rowScope(b)
		base := must(loop.BuildMuli(b, k.loc, j, k.index(length))).Output()
		// 1. the split, kept in sram whole: one chunk of an online kernel,
		// from a copy of the input where x is one
		row.off = base
		src, kept := ev.copySpan(row, x, length, width)
		if kept != nil {
			ev.cached[src] = kept
			ev.keptFrom[src] = ev.phase - 1
		}
		m, sum, buf := ev.onlineSpanIn(row, on, stores, outs, width, length, base, length, kept)
		idx := append(append([]*ir.Value(nil), ev.rowIdx...), j)
		must(loop.BuildStore(row.b, k.loc, m, pm, idx))
		must(loop.BuildStore(row.b, k.loc, sum, ps, idx))
		// 2. the row's instances meet
		must(loop.BuildGroupSync(row.b, k.loc, sync, r, k.index(s)))
		// 3. the row's max and sum from its splits, in split order
		m, sum = ev.combineSplits(row, pm, ps, s)
		ev.onlineResults(row, on, m, sum)
		// 4. the normalised split, from sram
		ev.keepFrom(x, src, kept, buf)
		ev.phase = 2
		row.off = base
		ev.storePhase(row, outs, width, length)
	})
	return nil
}

// copySpan copies the n columns from row.off of the kernel input x is
// computed from (x itself, or a float input x widens) into an sram buffer
// of the input's type, in a threads loop that does nothing else, and
// returns the input and the buffer (nil where x is computed otherwise).
// The PTX emitter turns such a loop into asynchronous bulk copies
// (emit/ptx/bulk.go); the other emitters read it as any loop storing sram.
func (ev *evaluator) copySpan(row *scope, x *ir.Value, n, width int64) (*ir.Value, *ir.Value) {
	src := copySource(x)
	if src == nil || !ev.varying[src] || !ir.TypeEqual(ev.heldElem(src), elemOf(src)) {
		return nil, nil
	}
	k := ev.k
	buf := must(loop.BuildAlloc(row.b, k.loc, ir.MemRefType{Shape: []int64{n}, Elem: elemOf(src), Space: ir.SRAM})).Output()
	buf.Name = "held"
	lanes := width
	if width == 1 {
		lanes = 0
	}
	row.loop(k.index(0), k.index(n), k.index(width), lanes, nil, nil, func(ls *scope, _ []*ir.Value) []*ir.Value {
		must(loop.BuildStore(ls.b, k.loc, ls.load(src), buf, []*ir.Value{ls.col}))
		return nil
	})
	return src, buf
}

// residentRow builds the kernel of a resident "split" of one: each
// instance copies its row into sram as loaded (when the row's values are
// an input's, else keeps them as the online chunk does), takes its max and
// sum of exp from there and writes the normalised row from there.
func (k *kernelBuilder) residentRow(fused *ir.Operation, info *passes.KernelInfo, on *onlinePair) error {
	ev, length, width := k.splitKernel(fused, info, 1, passes.ScheduleResident)
	n := len(info.Shape)
	outs := yielded(fused)
	stores := ev.phaseZeroStores(outs)
	leadExt := make([]*ir.Value, n-1)
	for d := range leadExt {
		leadExt[d] = k.spaceExtent(info, d, outs)
	}
	x := on.max.Operand(0)
	k.grid(k.product(k.kb, leadExt), func(b *ir.Builder, r *ir.Value) {
		ev.rowIdx = k.splitRow(b, r, leadExt)
		row := ev.rowScope(b)
		src, kept := ev.copySpan(row, x, length, width)
		if kept != nil {
			ev.cached[src] = kept
			ev.keptFrom[src] = ev.phase - 1
		}
		m, sum, buf := ev.onlineSpanIn(row, on, stores, outs, width, length, nil, length, kept)
		ev.onlineResults(row, on, m, sum)
		ev.keepFrom(x, src, kept, buf)
		ev.phase = 2
		ev.storePhase(row, outs, width, length)
	})
	return nil
}

// keepFrom makes the phases after the first read x from sram: from the
// copy of src, or from buf, the chunk the first phase stored x into.
func (ev *evaluator) keepFrom(x, src, kept, buf *ir.Value) {
	if kept != nil {
		ev.keptFrom[src] = 0
		return
	}
	ev.cached[x] = buf
	ev.keptFrom[x] = 0
}

// storePhase stores, over the n columns of the row scope (from its
// offset), the outputs computed after the row's reductions.
func (ev *evaluator) storePhase(row *scope, outs []*ir.Value, width, n int64) {
	k := ev.k
	lanes := width
	if width == 1 {
		lanes = 0
	}
	row.loop(k.index(0), k.index(n), k.index(width), lanes, nil, nil, func(ls *scope, _ []*ir.Value) []*ir.Value {
		for i, y := range outs {
			if ev.valPhase[y] >= 2 {
				ls.store(ls.get(y), k.outs[i])
			}
		}
		return nil
	})
}

// copySource is the kernel input a resident split can copy to compute x
// from: x itself, or the float input x widens exactly (nil: none).
func copySource(x *ir.Value) *ir.Value {
	if op := x.DefiningOp(); op != nil && op.Name() == graph.OpCast && op.Operand(0).IsBlockArg() &&
		elemOf(op.Operand(0)).Kind.IsFloat() && elemOf(x).Kind.IsFloat() &&
		elemOf(op.Operand(0)).Kind.ByteSize() < elemOf(x).Kind.ByteSize() {
		return op.Operand(0)
	}
	if x.IsBlockArg() {
		return x
	}
	return nil
}

// combineSplits loads the s split maxima and sums of the row from pm and
// ps and combines them: m = max_j m_j, and the sum against h(m),
// sum_j s_j exp(h(m_j) - h(m)), where a split whose max is -inf adds 0.
func (ev *evaluator) combineSplits(row *scope, pm, ps *ir.Value, s int64) (*ir.Value, *ir.Value) {
	k := ev.k
	width := k.vectorWidth(s, []*ir.Value{pm})
	lanes := width
	if width == 1 {
		lanes = 0
	}
	vec := loop.Vector(lanes, ir.F32Type)
	at := func(ls *scope, buf *ir.Value) *ir.Value {
		idx := append(append([]*ir.Value(nil), ev.rowIdx...), ls.col)
		return must(loop.BuildLoad(ls.b, k.loc, buf, idx, vec)).Output()
	}
	reduce := func(acc *ir.Value, kind string) *ir.Value {
		if lanes == 0 {
			return acc
		}
		return must(loop.BuildReduce(row.b, k.loc, acc, kind)).Output()
	}
	off := row.off
	row.off = nil
	defer func() { row.off = off }()
	mv := row.loop(k.index(0), k.index(s), k.index(width), lanes, []*ir.Value{k.constant(vec, math.Inf(-1))}, []string{"max"},
		func(ls *scope, carried []*ir.Value) []*ir.Value {
			return []*ir.Value{ls.op(loop.OpMax, []*ir.Value{carried[0], at(ls, pm)}, vec, nil)}
		})[0]
	m := reduce(mv, "max")
	h := ev.guard(row.b, m)
	sv := row.loop(k.index(0), k.index(s), k.index(width), lanes, []*ir.Value{k.constant(vec, 0)}, []string{"add"},
		func(ls *scope, carried []*ir.Value) []*ir.Value {
			mj := at(ls, pm)
			hj := ev.guard(ls.b, mj)
			scale := ls.op(loop.OpExp, []*ir.Value{ls.op(loop.OpSub, []*ir.Value{hj, ls.broadcast(h)}, vec, nil)}, vec, nil)
			// a split of -inf alone has the sum 0, which adds 0 even where
			// exp(0 - h) overflows (h far below 0): not 0 x inf = NaN
			empty := must(loop.BuildCmp(ls.b, k.loc, mj, k.constant(vec, math.Inf(-1)), "eq")).Output()
			scale = must(loop.BuildSelect(ls.b, k.loc, empty, k.constant(vec, 0), scale)).Output()
			t := ls.op(loop.OpMul, []*ir.Value{at(ls, ps), scale}, vec, nil)
			return []*ir.Value{ls.op(loop.OpAdd, []*ir.Value{carried[0], t}, vec, nil)}
		})[0]
	return m, reduce(sv, "add")
}
