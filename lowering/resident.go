package lowering

import (
	"math"
	"slices"

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
//     online kernel, and stores them in two [R..., S] f32 buffers;
//  2. loop.group_sync waits for the S instances of the row;
//  3. each combines the row's S pairs, m = max_j m_j and
//     s = sum_j s_j exp(h(m_j) - h(m)), in split order, so every instance
//     of the row gets the same m and s;
//  4. and computes the third phase over its split from the sram buffer,
//     storing the normalised columns.
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
// most residentBytes held in sram, each a multiple of the vector width w.
func residentCount(t *target.Target, info *passes.KernelInfo, held, w int64, opts Options) int64 {
	if !opts.Resident || opts.ExactRounding || t == nil || t.Family != target.CUDA ||
		info.Schedule != passes.ScheduleOnline || !normalizes(info) || info.Views != nil {
		return 0
	}
	c := info.RowLen
	budget := int64(residentBytes)
	if opts.ResidentBytes > 0 {
		budget = opts.ResidentBytes
	}
	for s := int64(2); s <= residentMax; s *= 2 {
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
	held := max(int64(4), elemOf(maxOp.Operand(0)).Kind.ByteSize())
	s := residentCount(l.target, info, held, l.rowWidth(fused, info, inputs), l.opts)
	if s == 0 {
		return false
	}
	length := info.RowLen / s
	l.opts.Remarks.Remark("fusion", fused.Loc, "split the rows of %d across groups of %d programs that each keep %d columns in sram (%d bytes) and meet at a loop.group_sync to combine their max and sum of exp, so that each row is read once",
		info.RowLen, s, length, length*held)

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
		return k.resident(fused, info, &onlinePair{max: maxOp, sum: sumOp}, s)
	})
	return true
}

// resident builds the kernel of a resident split in s (the buffers after
// the kernel's outputs: the splits' max and sum, the ticket counter and
// the groups' counters).
func (k *kernelBuilder) resident(fused *ir.Operation, info *passes.KernelInfo, on *onlinePair, s int64) error {
	ev, length, width := k.splitKernel(fused, info, s, passes.ScheduleResident)
	n := len(info.Shape)
	outs := yielded(fused)
	var stores []int // the full rows of phase 0
	for i, y := range outs {
		if ev.plans[k.outs[i]].varies() && ev.valPhase[y] == 0 {
			stores = append(stores, i)
		}
	}
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
		// 1. the split, kept in sram whole: one chunk of an online kernel
		m, sum, buf := ev.onlineSpanIn(row, on, stores, outs, width, length, base, length)
		idx := append(append([]*ir.Value(nil), ev.rowIdx...), j)
		must(loop.BuildStore(row.b, k.loc, m, pm, idx))
		must(loop.BuildStore(row.b, k.loc, sum, ps, idx))
		// 2. the row's instances meet
		must(loop.BuildGroupSync(row.b, k.loc, sync, r, k.index(s)))
		// 3. the row's max and sum from its splits, in split order
		m, sum = ev.combineSplits(row, pm, ps, s)
		ev.onlineResults(row, on, m, sum)
		// 4. the normalised split, from sram
		ev.cached[x] = buf
		ev.keptFrom[x] = 0
		ev.phase = 2
		row.off = base
		lanes := width
		if width == 1 {
			lanes = 0
		}
		row.loop(k.index(0), k.index(length), k.index(width), lanes, nil, nil, func(ls *scope, _ []*ir.Value) []*ir.Value {
			for i, y := range outs {
				if ev.valPhase[y] >= 2 {
					ls.store(ls.get(y), k.outs[i])
				}
			}
			return nil
		})
	})
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
