package lowering

import (
	"slices"

	"fmt"
	"math"

	"github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
	"github.com/tensorforge/tensorforge/ir/target"
	"github.com/tensorforge/tensorforge/passes"
)

// This file holds what every kind of kernel needs: the kernel's buffers
// and extents, constants, the launch grid over rows, and the choice of
// kernel for a graph.fused.

// kernelBuilder builds the body of one loop.kernel.
type kernelBuilder struct {
	target *target.Target
	// exact rounds every op's result to its element type (Options.ExactRounding).
	exact bool
	// copyRows copies the inputs a one-pass row kernel reads in several
	// phases into sram as loaded (Options.RowCopies on a GPU; rowCopies).
	copyRows bool
	// remarks receives the kernel's remarks (Options.Remarks).
	remarks *ir.PassContext
	loc     ir.Location
	kernel  *ir.Operation
	// kb appends to the kernel body; cb creates constants, before the grid
	// once it exists.
	kb, cb *ir.Builder
	ins    []*ir.Value
	outs   []*ir.Value
	// extents gives, per buffer argument, its extents (nil where static).
	extents map[*ir.Value][]*ir.Value
	consts  map[string]*ir.Value
	// scatters are the outputs stored through a graph.index_copy: their
	// coordinate along the axis is the entry of the index buffer there, and
	// their extent along it is the index buffer's.
	scatters map[*ir.Value]scatterOut
}

func newKernelBuilder(t *target.Target, loc ir.Location, kb *ir.Builder, args []*ir.Value, nin, nout int) *kernelBuilder {
	k := &kernelBuilder{target: t, loc: loc, kernel: kb.InsertionBlock().ParentOp(), kb: kb, cb: kb,
		ins: args[:nin], outs: args[nin : nin+nout], extents: map[*ir.Value][]*ir.Value{}, consts: map[string]*ir.Value{},
		scatters: map[*ir.Value]scatterOut{}}
	next := nin + nout
	for _, buf := range args[:nin+nout] {
		m := buf.Type().(ir.MemRefType)
		ext := make([]*ir.Value, len(m.Shape))
		for d, n := range m.Shape {
			if n == ir.Dynamic {
				ext[d] = args[next]
				next++
			}
		}
		k.extents[buf] = ext
	}
	return k
}

// setAttr records an attribute on the kernel.
func (k *kernelBuilder) setAttr(name string, v ir.Attr) { k.kernel.SetAttr(name, v) }

func intAttr(v int64) ir.Attr { return ir.IntAttr{Value: v, Type: ir.I64Type} }

// constant returns a loop.const of type t (scalar, vector or index) with
// value v rounded to its element type; one per kernel for each type and
// value, created before the grid.
func (k *kernelBuilder) constant(t ir.Type, v float64) *ir.Value {
	e, _ := ir.ElemOf(t)
	if e.Kind != ir.Index {
		v = numeric.RoundTo(v, e.Kind)
	}
	key := fmt.Sprintf("%s:%x", t, math.Float64bits(v))
	if c, ok := k.consts[key]; ok {
		return c
	}
	c := must(loop.BuildConstant(k.cb, k.loc, t, v)).Output()
	if e.Kind == ir.Index {
		c.Name = fmt.Sprintf("c%d", int64(v))
	}
	k.consts[key] = c
	return c
}

// index returns an index constant.
func (k *kernelBuilder) index(v int64) *ir.Value { return k.constant(ir.IndexType, float64(v)) }

// dim returns extent d of a buffer argument.
func (k *kernelBuilder) dim(buf *ir.Value, d int) *ir.Value {
	if sc, ok := k.scatters[buf]; ok && d == sc.axis {
		// the rows stored, one per index
		return k.dim(sc.indices, 0)
	}
	if e := k.extents[buf][d]; e != nil {
		return e
	}
	return k.index(buf.Type().(ir.MemRefType).Shape[d])
}

// scatterIndex is idx, an index of output buf in the iteration space,
// as buf is stored: for an output stored through a graph.index_copy, the
// coordinate along its axis replaced by the entry of the index buffer
// there, clamped into the destination's extent (built with b).
func (k *kernelBuilder) scatterIndex(b *ir.Builder, buf *ir.Value, idx []*ir.Value) []*ir.Value {
	sc, ok := k.scatters[buf]
	if !ok {
		return idx
	}
	t := must(loop.BuildLoad(b, k.loc, sc.indices, []*ir.Value{idx[sc.axis]}, sc.indices.Type().(ir.MemRefType).Elem)).Output()
	bound := k.extents[buf][sc.axis] // the destination's own extent
	if bound == nil {
		bound = k.index(buf.Type().(ir.MemRefType).Shape[sc.axis])
	}
	out := slices.Clone(idx)
	out[sc.axis] = must(loop.BuildClampIndex(b, k.loc, t, bound)).Output()
	out[sc.axis].Name = "at"
	return out
}

// product multiplies index values with b (1 for none).
func (k *kernelBuilder) product(b *ir.Builder, vs []*ir.Value) *ir.Value {
	var p *ir.Value
	for _, v := range vs {
		switch {
		case p == nil:
			p = v
		case isIndexConst(p, 1):
			p = v
		case isIndexConst(v, 1):
		case constIndex(p) >= 0 && constIndex(v) >= 0:
			p = k.index(constIndex(p) * constIndex(v))
		default:
			p = must(loop.BuildMuli(b, k.loc, p, v)).Output()
		}
	}
	if p == nil {
		return k.index(1)
	}
	return p
}

// constIndex returns the value of a non-negative index constant, or -1.
func constIndex(v *ir.Value) int64 {
	c, ok := loop.AsConst(v.DefiningOp())
	if !ok || !ir.TypeEqual(v.Type(), ir.IndexType) || c.Value() < 0 {
		return -1
	}
	return int64(c.Value())
}

// isIndexConst reports whether v is the index constant n.
func isIndexConst(v *ir.Value, n int64) bool {
	c, ok := loop.AsConst(v.DefiningOp())
	return ok && ir.TypeEqual(v.Type(), ir.IndexType) && c.Value() == float64(n)
}

// grid builds the launch grid over rows instances; body gets a builder in
// the instance and its number.
func (k *kernelBuilder) grid(rows *ir.Value, body func(b *ir.Builder, r *ir.Value)) {
	c0, c1 := k.index(0), k.index(1)
	must(loop.BuildParallel(k.kb, k.loc, c0, rows, c1, func(bb *ir.Builder, r *ir.Value) error {
		k.cb = ir.NewBuilderBefore(r.OwnerBlock().ParentOp())
		r.Name = "r"
		body(bb, r)
		return nil
	}))
}

// rowGrid launches the rows of the kernel ev builds, of leading extents
// leadExt: one grid over them all, each instance's indices in ev.rowIdx
// when body runs; or, when a concat along a row cuts them
// (passes.ViewPlan.RowCuts), one part per stretch of rows between cuts,
// each a grid whose rows read one piece of the concat:
//
//	loop.parallel %c0, %c4, %c1 {dist = "grid"} { ... rows 0-3, piece %a ... }
//	loop.parallel %c0, %c2, %c1 {dist = "grid"} { ... rows 4-5, piece %b ... }
func (k *kernelBuilder) rowGrid(ev *evaluator, leadExt []*ir.Value, body func(b *ir.Builder)) {
	plan := ev.info.Views
	if plan == nil || len(plan.RowCuts) == 0 {
		if plan != nil && plan.RowDim >= 0 {
			// every row in one piece of each concat along the rows (a
			// slice of one piece): one part, all of them
			ev.partLo, ev.partHi = 0, ev.info.Shape[plan.RowDim]
		}
		k.grid(k.product(k.kb, leadExt), func(b *ir.Builder, r *ir.Value) {
			ev.rowIdx = k.splitRow(b, r, leadExt)
			body(b)
		})
		return
	}
	d := plan.RowDim
	lo := int64(0)
	for _, hi := range append(slices.Clone(plan.RowCuts), ev.info.Shape[d]) {
		ext := slices.Clone(leadExt)
		ext[d] = k.index(hi - lo)
		ev.partLo, ev.partHi = lo, hi
		clear(ev.rowIndices)
		k.grid(k.product(k.kb, ext), func(b *ir.Builder, r *ir.Value) {
			ev.rowIdx = k.splitRow(b, r, ext)
			if c, ok := loop.EvalIndex(ev.rowIdx[d], nil); ok {
				ev.rowIdx[d] = k.index(c + lo) // a part of one row along d
			} else if lo > 0 {
				ev.rowIdx[d] = must(loop.BuildAddi(b, k.loc, ev.rowIdx[d], k.index(lo))).Output()
			}
			body(b)
		})
		lo = hi
	}
}

// splitRow turns the row number r into the indices of the leading
// dimensions of extents ext, row-major: the last one varies fastest.
func (k *kernelBuilder) splitRow(b *ir.Builder, r *ir.Value, ext []*ir.Value) []*ir.Value {
	idx := make([]*ir.Value, len(ext))
	// the first dimension that is not a leading 1 takes what is left of
	// r, with no division (a [1, T, 8] space of a batch of one: t = r / 8,
	// not (r / 8) % T)
	first := 0
	for first < len(ext)-1 && isIndexConst(ext[first], 1) {
		idx[first] = k.index(0)
		first++
	}
	rest := r
	for d := len(ext) - 1; d >= first; d-- {
		switch {
		case d == first:
			idx[d] = rest
		case isIndexConst(ext[d], 1):
			idx[d] = k.index(0)
		default:
			idx[d] = must(loop.BuildRemi(b, k.loc, rest, ext[d])).Output()
			rest = must(loop.BuildDivi(b, k.loc, rest, ext[d])).Output()
		}
	}
	return idx
}

// vectorWidth is the lanes of a vector access: the target's vector bytes
// over the largest element of the buffers accessed along the row (vecs),
// halved until it divides the row length n (when static).
func (k *kernelBuilder) vectorWidth(n int64, vecs []*ir.Value) int64 {
	largest := int64(1)
	for _, buf := range vecs {
		largest = max(largest, buf.Type().(ir.MemRefType).Elem.Kind.ByteSize())
	}
	w := max(int64(k.target.VectorBytes)/largest, 1)
	for p := int64(1); ; p *= 2 { // a power of two
		if p*2 > w {
			w = p
			break
		}
	}
	if n != ir.Dynamic {
		for w > 1 && n%w != 0 {
			w /= 2
		}
	}
	return w
}

// ---------------------------------------------------------------------------
// Choosing the kernel

// lowerKernel builds the kernel of a graph.fused reading inputs and
// writing outputs (buffers of the function) and launches it.
func (l *funcLowering) lowerKernel(fused *ir.Operation, inputs, outputs []*ir.Value) {
	entry := fused.Region(0).Entry()
	if c, ok := graph.AsConstant(entry.First()); ok && c.Operation.Next() == entry.Last() && !c.Value().IsSplat() {
		l.launch(fused.Loc, "generic", inputs, outputs, func(k *kernelBuilder) error {
			return k.denseConstant(c)
		})
		return
	}
	info, err := passes.ClassifyKernel(fused)
	if err != nil {
		panic(lowerError{err})
	}
	switch info.Kind {
	case passes.KernelElementwise:
		l.launch(fused.Loc, "elementwise", inputs, outputs, func(k *kernelBuilder) error {
			return k.elementwise(fused, &info)
		})
	case passes.KernelRow:
		if info.Schedule == "" {
			info.PlanSchedule(l.target)
		}
		// few rows split (both forms, guarded, for a `?` count), then
		// a resident split, where asked for, for many; a kernel storing
		// results through views (outviews.go) keeps one program per row
		if len(info.OutViews) == 0 && (l.lowerSplit(fused, &info, inputs, outputs) || l.lowerResident(fused, &info, inputs, outputs)) {
			return
		}
		l.launch(fused.Loc, "row", inputs, outputs, func(k *kernelBuilder) error {
			return k.row(fused, &info)
		})
	case passes.KernelMatMul:
		l.launch(fused.Loc, "matmul", inputs, outputs, func(k *kernelBuilder) error {
			return k.matmul(fused, &info)
		})
	default:
		l.launch(fused.Loc, "generic", inputs, outputs, func(k *kernelBuilder) error {
			return k.generic(fused, &info)
		})
	}
}

// copyBuffer is the body of a kernel copying its input to its output
// (through the indices of a graph.index_copy, when it is one).
func (k *kernelBuilder) copyBuffer() error {
	in, out := k.ins[0], k.outs[0]
	src := ir.NewBlock(tensorOf(in.Type()))
	fused := ir.NewOperation(graph.OpFused, k.loc, nil, nil, ir.Attrs("kind", ir.StringAttr("elementwise")), 1)
	fused.Region(0).AppendBlock(src)
	ir.NewBuilderAtEnd(src).Insert(ir.NewOperation(graph.OpYield, k.loc, src.Args, nil, nil, 0))
	// the input's shape: an output stored through the indices of a
	// graph.index_copy is larger along their axis
	fused.AddResult(ir.TensorType{Shape: tensorOf(in.Type()).Shape, Elem: tensorOf(out.Type()).Elem})
	info, err := passes.ClassifyKernel(fused)
	if err != nil {
		return err
	}
	return k.elementwise(fused, &info)
}

// tensorOf is the tensor type of a buffer type.
func tensorOf(t ir.Type) ir.TensorType {
	m := t.(ir.MemRefType)
	return ir.TensorType{Shape: m.Shape, Elem: m.Elem}
}
