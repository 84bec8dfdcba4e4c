package lowering

import (
	"math"

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
// and computes the kernel's per-row results from m and s. The split of a
// row is static: one module serves every row count, and 4096 rows simply
// run 4096 S instances of a row S times shorter.

// Split choices.
const (
	// splitMinRow is the shortest row split.
	splitMinRow = 16384
	// splitMinLen is the shortest split: one chunk of an online kernel.
	splitMinLen = 4096
	// splitMax bounds S.
	splitMax = 64
)

// splitCount is S for row kernel info on target t (0: not split): the
// largest power of two up to splitMax dividing the row into splits of at
// least splitMinLen columns, a multiple of the vector width w each.
func splitCount(t *target.Target, info *passes.KernelInfo, exact bool, w int64) int64 {
	if exact || t == nil || t.Family != target.CUDA || info.Schedule != passes.ScheduleOnline ||
		info.RowLen < splitMinRow || !info.OnlyPerRowAfterOnline() {
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

// lowerSplit launches the two kernels of a split row kernel.
func (l *funcLowering) lowerSplit(fused *ir.Operation, info *passes.KernelInfo, inputs, outputs []*ir.Value) bool {
	if len(outputs) == 0 {
		return false
	}
	maxOp, sumOp, ok := info.Online()
	if !ok {
		return false
	}
	// the width the kernels' loops over the row take
	n := len(info.Shape)
	var alongRow []*ir.Value
	for i, a := range fused.Region(0).Entry().Args {
		if info.AccessOf(a) == passes.AccessFull {
			alongRow = append(alongRow, inputs[i])
		}
	}
	kb := &kernelBuilder{target: l.target}
	w := kb.vectorWidth(info.RowLen, alongRow)
	s := splitCount(l.target, info, l.opts.ExactRounding, w)
	if s == 0 {
		return false
	}
	l.opts.Remarks.Remark("fusion", fused.Loc, "split the rows of %d into %d splits of %d: the first kernel takes each split's max and sum of exp, %d instances per row, and a second combines them per row, so that a few rows fill the GPU",
		info.RowLen, s, info.RowLen/s, s)
	on := &onlinePair{max: maxOp, sum: sumOp}
	// the partial buffers [R..., S]
	lead := l.extents[outputs[0]]
	shape := append(append([]int64(nil), info.Shape[:n-1]...), s)
	ext := append(append([]*ir.Value(nil), lead[:n-1]...), nil)
	var dyn []*ir.Value
	for d, e := range shape {
		if e == ir.Dynamic {
			dyn = append(dyn, ext[d])
		}
	}
	partial := func(name string) *ir.Value {
		m := ir.MemRefType{Shape: shape, Elem: ir.F32Type, Space: ir.DRAM}
		buf := must(loop.BuildAllocDRAM(l.fb, fused.Loc, dyn, m)).Output()
		buf.Name = name
		l.extents[buf] = ext
		return buf
	}
	pm, ps := partial("split_max"), partial("split_sum")
	l.launch(fused.Loc, "row", inputs, append(append([]*ir.Value(nil), outputs...), pm, ps), func(k *kernelBuilder) error {
		return k.splitPartials(fused, info, on, s)
	})
	l.launch(fused.Loc, "row", append(append([]*ir.Value(nil), inputs...), pm, ps), outputs, func(k *kernelBuilder) error {
		return k.splitCombine(fused, info, on, s)
	})
	return true
}

// splitPartials builds the first kernel of a split row kernel: instance
// i takes split i mod S of row i / S, storing its max and sum in the two
// buffers after the kernel's outputs; the full rows the kernel stores
// (phase 0) are stored there too.
func (k *kernelBuilder) splitPartials(fused *ir.Operation, info *passes.KernelInfo, on *onlinePair, s int64) error {
	ev := newEvaluator(k, fused, info)
	n := len(info.Shape)
	length := info.RowLen / s
	width := k.vectorWidth(length, ev.alongRow())
	k.setAttr("row_len", intAttr(length))
	k.setAttr("schedule", ir.StringAttr(passes.ScheduleOnline))
	k.setAttr("vector_width", intAttr(width))
	outs := yielded(fused)
	var stores []int
	for i := range outs {
		if ev.plans[k.outs[i]].varies() {
			stores = append(stores, i)
		}
	}
	pm, ps := k.outs[len(outs)], k.outs[len(outs)+1]
	leadExt := make([]*ir.Value, n-1)
	for d := range leadExt {
		leadExt[d] = k.dim(pm, d)
	}
	rows := k.product(k.kb, leadExt)
	instances := k.product(k.kb, []*ir.Value{rows, k.index(s)})
	k.grid(instances, func(b *ir.Builder, i *ir.Value) {
		j := must(loop.BuildRemi(b, k.loc, i, k.index(s))).Output()
		j.Name = "split"
		r := must(loop.BuildDivi(b, k.loc, i, k.index(s))).Output()
		ev.rowIdx = k.splitRow(b, r, leadExt)
		row := ev.rowScope(b)
		base := must(loop.BuildMuli(b, k.loc, j, k.index(length))).Output()
		m, sum := ev.onlineSpan(row, on, stores, outs, width, length, base)
		idx := append(append([]*ir.Value(nil), ev.rowIdx...), j)
		must(loop.BuildStore(row.b, k.loc, m, pm, idx))
		must(loop.BuildStore(row.b, k.loc, sum, ps, idx))
	})
	return nil
}

// splitCombine builds the second kernel: per row, the max and the sum of
// its S splits, then the kernel's per-row results.
func (k *kernelBuilder) splitCombine(fused *ir.Operation, info *passes.KernelInfo, on *onlinePair, s int64) error {
	ev := newEvaluator(k, fused, info)
	n := len(info.Shape)
	nargs := len(fused.Region(0).Entry().Args)
	pm, ps := k.ins[nargs], k.ins[nargs+1]
	width := k.vectorWidth(s, []*ir.Value{pm})
	lanes := width
	if width == 1 {
		lanes = 0
	}
	k.setAttr("row_len", intAttr(s))
	k.setAttr("schedule", ir.StringAttr(passes.ScheduleOnePass))
	k.setAttr("vector_width", intAttr(width))
	outs := yielded(fused)
	leadExt := make([]*ir.Value, n-1)
	for d := range leadExt {
		leadExt[d] = k.dim(pm, d)
	}
	f32 := ir.F32Type
	vec := loop.Vector(lanes, f32)
	k.grid(k.product(k.kb, leadExt), func(b *ir.Builder, r *ir.Value) {
		ev.rowIdx = k.splitRow(b, r, leadExt)
		row := ev.rowScope(b)
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
		mv := row.loop(k.index(0), k.index(s), k.index(width), lanes, []*ir.Value{k.constant(vec, math.Inf(-1))}, []string{"max"},
			func(ls *scope, carried []*ir.Value) []*ir.Value {
				return []*ir.Value{ls.op(loop.OpMax, []*ir.Value{carried[0], at(ls, pm)}, vec, nil)}
			})[0]
		m := reduce(mv, "max")
		h := ev.guard(row.b, m)
		sv := row.loop(k.index(0), k.index(s), k.index(width), lanes, []*ir.Value{k.constant(vec, 0)}, []string{"add"},
			func(ls *scope, carried []*ir.Value) []*ir.Value {
				hj := ev.guard(ls.b, at(ls, pm))
				scale := ls.op(loop.OpExp, []*ir.Value{ls.op(loop.OpSub, []*ir.Value{hj, ls.broadcast(h)}, vec, nil)}, vec, nil)
				t := ls.op(loop.OpMul, []*ir.Value{at(ls, ps), scale}, vec, nil)
				return []*ir.Value{ls.op(loop.OpAdd, []*ir.Value{carried[0], t}, vec, nil)}
			})[0]
		ev.onlineResults(row, on, m, reduce(sv, "add"))
		for i, y := range outs {
			if !ev.plans[k.outs[i]].varies() {
				row.store(row.get(y), k.outs[i])
			}
		}
	})
	return nil
}
