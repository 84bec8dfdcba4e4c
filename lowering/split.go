package lowering

import (
	"fmt"
	"slices"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
	"github.com/tensorforge/tensorforge/passes"
)

// Split rows: an online row kernel whose results are per-row values
// (logsumexp, a cross-entropy loss) over a long row runs as two kernels
// on a GPU, so that a few rows still fill the machine. The first has S
// instances per row, each taking the max m_j and the sum s_j of exp
// against h(m_j) of one split of the row (columns [j L, (j+1) L), L =
// C / S), chunk by chunk as an online kernel does, and storing them in
// two [R..., S] f32 buffers; the second combines them per row,
//
//	m = max_j m_j,  s = sum_j s_j exp(h(m_j) - h(m))
//
// and computes the kernel's per-row results from m and s.
//
// Splitting pays where the rows alone cannot fill the GPU: with thousands
// of rows, R S short instances lose more to their ramps and to the extra
// kernels than they gain. A static row count chooses one form; a `?` one
// launches both, the split kernels guarded by R < splitRowsPerCore x SMs
// (lower-to-loops{split-rows-below=N} sets the bound) and the kernel of
// one instance per row by the rest (loop.RowGuard), so
// that one module serves a decode step and a prefill. The split of a row,
// S, is static. With lower-to-loops{resident=true}, the form for the rest
// of a normalising kernel is its resident split (resident.go).

// Split choices.
const (
	// splitMinRow is the shortest row split.
	splitMinRow = 16384
	// splitMinLen is the shortest split: one chunk of an online kernel.
	splitMinLen = 4096
	// splitMax bounds S.
	splitMax = 64
	// splitRowsPerCore: rows are split when there are fewer than this
	// many per SM.
	splitRowsPerCore = 2
)

// splitCount is S for row kernel info on target t (0: not split): the
// largest power of two up to splitMax dividing the row into splits of at
// least splitMinLen columns, a multiple of the vector width w each.
func splitCount(t *target.Target, info *passes.KernelInfo, exact bool, w int64) int64 {
	if exact || t == nil || t.Family != target.CUDA || info.Schedule != passes.ScheduleOnline ||
		info.RowLen < splitMinRow || !(info.OnlyPerRowAfterOnline() || normalizes(info)) {
		return 0
	}
	c := info.RowLen
	for s := int64(splitMax); s >= 2; s /= 2 {
		if c%s == 0 && c/s >= splitMinLen && (c/s)%max(w, 1) == 0 {
			return s
		}
	}
	return 0
}

// normalizes reports whether row kernel info, after its online pass, only
// computes full rows from the row and the two reductions (softmax's
// normalisation, log_softmax): three phases, no reduction in the third,
// and no per-row result. Split, it is three kernels: the splits, the
// combine, and the third phase over the splits again.
func normalizes(info *passes.KernelInfo) bool {
	if info.NumPhases != 3 {
		return false
	}
	for i, op := range info.Ops {
		if info.Phases[i] == 2 && slices.Contains(info.RowReductions, op) {
			return false
		}
	}
	for _, a := range info.Results {
		if a != passes.AccessFull {
			return false
		}
	}
	return true
}

// rowWidth is the vector width the loops over the rows of row kernel
// fused (reading inputs) take.
func (l *funcLowering) rowWidth(fused *ir.Operation, info *passes.KernelInfo, inputs []*ir.Value) int64 {
	var alongRow []*ir.Value
	for i, a := range fused.Region(0).Entry().Args {
		if info.AccessOf(a) == passes.AccessFull {
			alongRow = append(alongRow, inputs[i])
		}
	}
	kb := &kernelBuilder{target: l.target}
	return kb.vectorWidth(info.RowLen, alongRow)
}

// lowerSplit launches the kernels of a split row kernel.
func (l *funcLowering) lowerSplit(fused *ir.Operation, info *passes.KernelInfo, inputs, outputs []*ir.Value) bool {
	if len(outputs) == 0 || info.Views != nil {
		return false
	}
	maxOp, sumOp, ok := info.Online()
	if !ok {
		return false
	}
	n := len(info.Shape)
	s := splitCount(l.target, info, l.opts.ExactRounding, l.rowWidth(fused, info, inputs))
	if s == 0 {
		return false
	}
	// the rows below which splitting pays, and the rows when static
	few := splitRowsPerCore * int64(l.target.Cores)
	if l.opts.SplitRowsBelow > 0 {
		few = l.opts.SplitRowsBelow
	}
	if few <= 1 {
		return false // split-rows-below=1: no row count is split
	}
	rows := int64(1)
	for _, e := range info.Shape[:n-1] {
		if e == ir.Dynamic {
			rows = -1
			break
		}
		rows *= e
	}
	if rows >= few {
		l.opts.Remarks.Remark("fusion", fused.Loc, "kept the rows of %d whole: %d rows fill the GPU (splitting pays below %d)", info.RowLen, rows, few)
		return false
	}
	// with a `?` row count, both forms, guarded on the rows of an input
	// read in full (of shape [R..., C] in every launch, where the inputs
	// come first)
	guard := -1
	if rows < 0 {
		for i, a := range fused.Region(0).Entry().Args {
			if info.AccessOf(a) == passes.AccessFull {
				guard = i
				break
			}
		}
	}
	third := ""
	if !info.OnlyPerRowAfterOnline() {
		third = ", and a third computes the rows over the splits again"
	}
	when := ""
	if guard >= 0 {
		when = fmt.Sprintf(" when there are fewer than %d rows (one instance per row otherwise: both forms are launched, each guarded by the row count)", few)
	}
	l.opts.Remarks.Remark("fusion", fused.Loc, "split the rows of %d into %d splits of %d%s: the first kernel takes each split's max and sum of exp, %d instances per row, and a second combines them per row%s, so that a few rows fill the GPU",
		info.RowLen, s, info.RowLen/s, when, s, third)
	on := &onlinePair{max: maxOp, sum: sumOp}
	if guard < 0 {
		l.launchSplit(fused, info, inputs, outputs, on, s)
		return true
	}
	// the split kernels for few rows, the kernel of one instance per row
	// for the rest
	l.guard = &loop.RowGuard{Operand: guard, Max: few - 1}
	l.launchSplit(fused, info, inputs, outputs, on, s)
	l.guard = &loop.RowGuard{Operand: guard, Min: few, Max: -1}
	if !l.lowerResident(fused, info, inputs, outputs) {
		l.launch(fused.Loc, "row", inputs, outputs, func(k *kernelBuilder) error {
			return k.row(fused, info)
		})
	}
	l.guard = nil
	return true
}

// launchSplit allocates the partial buffers of a row kernel split in s
// and launches its kernels: the splits and the combine (and the rows over
// the splits again, for a kernel that normalises its rows).
func (l *funcLowering) launchSplit(fused *ir.Operation, info *passes.KernelInfo, inputs, outputs []*ir.Value, on *onlinePair, s int64) {
	// the partial buffers [R..., S]
	pm := l.rowBuffer(fused, info, outputs, "split_max", s, ir.F32Type, false)
	ps := l.rowBuffer(fused, info, outputs, "split_sum", s, ir.F32Type, false)
	with := func(bufs []*ir.Value, more ...*ir.Value) []*ir.Value {
		return append(append([]*ir.Value(nil), bufs...), more...)
	}
	l.launch(fused.Loc, "row", inputs, with(outputs, pm, ps), func(k *kernelBuilder) error {
		return k.splitPartials(fused, info, on, s)
	})
	if info.OnlyPerRowAfterOnline() {
		l.launch(fused.Loc, "row", with(inputs, pm, ps), outputs, func(k *kernelBuilder) error {
			return k.splitCombine(fused, info, on, s, nil)
		})
		return
	}
	// the row's max and sum, [R..., 1], for the third kernel
	rm := l.rowBuffer(fused, info, outputs, "row_max", 1, ir.F32Type, false)
	rs := l.rowBuffer(fused, info, outputs, "row_sum", 1, ir.F32Type, false)
	l.launch(fused.Loc, "row", with(inputs, pm, ps), with(outputs, rm, rs), func(k *kernelBuilder) error {
		return k.splitCombine(fused, info, on, s, []*ir.Value{k.outs[len(outputs)], k.outs[len(outputs)+1]})
	})
	l.launch(fused.Loc, "row", with(inputs, rm, rs), outputs, func(k *kernelBuilder) error {
		return k.splitApply(fused, info, on, s)
	})
}

// rowBuffer allocates a DRAM buffer [R..., last] of elem beside row kernel
// fused, R the leading extents of its rows (those of its first output),
// zeroed for counters (loop.alloc_dram {zeroed = true}).
func (l *funcLowering) rowBuffer(fused *ir.Operation, info *passes.KernelInfo, outputs []*ir.Value, name string, last int64, elem ir.ElemType, zeroed bool) *ir.Value {
	n := len(info.Shape)
	lead := l.extents[outputs[0]]
	shape := append(slices.Clone(info.Shape[:n-1]), last)
	ext := append(slices.Clone(lead[:n-1]), nil)
	var dyn []*ir.Value
	for d, e := range shape {
		if e == ir.Dynamic {
			dyn = append(dyn, ext[d])
		}
	}
	a := must(loop.BuildAllocDRAM(l.fb, fused.Loc, dyn, ir.MemRefType{Shape: shape, Elem: elem, Space: ir.DRAM}))
	if zeroed {
		a.SetAttr("zeroed", ir.BoolAttr(true))
	}
	buf := a.Output()
	buf.Name = name
	l.extents[buf] = ext
	return buf
}

// splitPartials builds the first kernel of a split row kernel: instance
// i takes split i mod S of row i / S, storing its max and sum in the two
// buffers after the kernel's outputs; the full rows the kernel stores
// (phase 0) are stored there too.
func (k *kernelBuilder) splitPartials(fused *ir.Operation, info *passes.KernelInfo, on *onlinePair, s int64) error {
	ev, length, width := k.splitKernel(fused, info, s, passes.ScheduleOnline)
	n := len(info.Shape)
	outs := yielded(fused)
	stores := ev.phaseZeroStores(outs)
	pm, ps := k.outs[len(outs)], k.outs[len(outs)+1]
	leadExt := make([]*ir.Value, n-1)
	for d := range leadExt {
		leadExt[d] = k.dim(pm, d)
	}
	rows := k.product(k.kb, leadExt)
	instances := k.product(k.kb, []*ir.Value{rows, k.index(s)})
	k.grid(instances, func(b *ir.Builder, i *ir.Value) {
		j := k.splitOf(b, i, s, ev, leadExt)
		row := ev.rowScope(b)
		base := must(loop.BuildMuli(b, k.loc, j, k.index(length))).Output()
		m, sum := ev.onlineSpan(row, on, stores, outs, width, length, base)
		idx := append(append([]*ir.Value(nil), ev.rowIdx...), j)
		must(loop.BuildStore(row.b, k.loc, m, pm, idx))
		must(loop.BuildStore(row.b, k.loc, sum, ps, idx))
	})
	return nil
}

// splitKernel starts a kernel over the splits of a row kernel's rows: its
// evaluator, the split's length and vector width, and the attributes.
func (k *kernelBuilder) splitKernel(fused *ir.Operation, info *passes.KernelInfo, s int64, schedule string) (*evaluator, int64, int64) {
	ev := newEvaluator(k, fused, info)
	length := info.RowLen / s
	width := k.vectorWidth(length, ev.alongRow())
	k.setAttr("row_len", intAttr(length))
	k.setAttr("schedule", ir.StringAttr(schedule))
	k.setAttr("vector_width", intAttr(width))
	return ev, length, width
}

// splitOf returns the split i mod s that instance i takes, and sets the
// evaluator's row indices to those of its row i / s.
func (k *kernelBuilder) splitOf(b *ir.Builder, i *ir.Value, s int64, ev *evaluator, leadExt []*ir.Value) *ir.Value {
	j := must(loop.BuildRemi(b, k.loc, i, k.index(s))).Output()
	j.Name = "split"
	r := must(loop.BuildDivi(b, k.loc, i, k.index(s))).Output()
	ev.rowIdx = k.splitRow(b, r, leadExt)
	return j
}

// splitCombine builds the second kernel: per row, the max and the sum of
// its S splits, then the kernel's per-row results, or, with stats, the
// max and the sum stored there ([R..., 1] buffers) for a third kernel.
func (k *kernelBuilder) splitCombine(fused *ir.Operation, info *passes.KernelInfo, on *onlinePair, s int64, stats []*ir.Value) error {
	ev := newEvaluator(k, fused, info)
	n := len(info.Shape)
	nargs := len(fused.Region(0).Entry().Args)
	pm, ps := k.ins[nargs], k.ins[nargs+1]
	width := k.vectorWidth(s, []*ir.Value{pm})
	k.setAttr("row_len", intAttr(s))
	k.setAttr("schedule", ir.StringAttr(passes.ScheduleOnePass))
	k.setAttr("vector_width", intAttr(width))
	outs := yielded(fused)
	leadExt := make([]*ir.Value, n-1)
	for d := range leadExt {
		leadExt[d] = k.dim(pm, d)
	}
	k.grid(k.product(k.kb, leadExt), func(b *ir.Builder, r *ir.Value) {
		ev.rowIdx = k.splitRow(b, r, leadExt)
		row := ev.rowScope(b)
		m, sum := ev.combineSplits(row, pm, ps, s)
		ev.onlineResults(row, on, m, sum)
		if stats != nil {
			idx := append(append([]*ir.Value(nil), ev.rowIdx...), k.index(0))
			must(loop.BuildStore(row.b, k.loc, row.vals[on.max.Result(0)], stats[0], idx))
			must(loop.BuildStore(row.b, k.loc, row.vals[on.sum.Result(0)], stats[1], idx))
			return
		}
		for i, y := range outs {
			if !ev.plans[k.outs[i]].varies() {
				row.store(row.get(y), k.outs[i])
			}
		}
	})
	return nil
}

// splitApply builds the third kernel of a split normalisation: instance i
// computes the third phase over split i mod S of row i / S, from the row
// and the max and sum the second kernel stored (the inputs after the
// kernel's), and stores the full rows it computes.
func (k *kernelBuilder) splitApply(fused *ir.Operation, info *passes.KernelInfo, on *onlinePair, s int64) error {
	ev, length, width := k.splitKernel(fused, info, s, passes.ScheduleTwoPass)
	n := len(info.Shape)
	lanes := width
	if width == 1 {
		lanes = 0
	}
	outs := yielded(fused)
	nargs := len(fused.Region(0).Entry().Args)
	rm, rs := k.ins[nargs], k.ins[nargs+1]
	leadExt := make([]*ir.Value, n-1)
	for d := range leadExt {
		leadExt[d] = k.dim(rm, d)
	}
	instances := k.product(k.kb, []*ir.Value{k.product(k.kb, leadExt), k.index(s)})
	k.grid(instances, func(b *ir.Builder, i *ir.Value) {
		j := k.splitOf(b, i, s, ev, leadExt)
		ev.phase = 2
		row := ev.rowScope(b)
		row.off = must(loop.BuildMuli(b, k.loc, j, k.index(length))).Output()
		idx := append(append([]*ir.Value(nil), ev.rowIdx...), k.index(0))
		row.vals[on.max.Result(0)] = must(loop.BuildLoad(b, k.loc, rm, idx, ir.F32Type)).Output()
		row.vals[on.sum.Result(0)] = must(loop.BuildLoad(b, k.loc, rs, idx, ir.F32Type)).Output()
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

// phaseZeroStores lists the outputs among outs stored as full rows in
// phase 0 (the first loop over the row), by their index.
func (ev *evaluator) phaseZeroStores(outs []*ir.Value) []int {
	var stores []int
	for i, y := range outs {
		if ev.plans[ev.k.outs[i]].varies() && ev.valPhase[y] == 0 {
			stores = append(stores, i)
		}
	}
	return stores
}
