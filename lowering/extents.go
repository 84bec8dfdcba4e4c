package lowering

import (
	"slices"

	"github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// This file derives the run-time extents of the values a kernel computes
// from the extents of what it reads, as index arithmetic in the lowered
// function: an intermediate buffer with a `?` needs its extent before the
// kernel that writes it runs.
//
//	%t = graph.fused %x ... : (tensor<?x64xf32>) -> tensor<?x64xf32>
//
// gives `loop.alloc_dram %n` with %n the extent of %x's first dimension.
//
// Two `?` extents that broadcast together are taken to be equal; a `?`
// paired with a static extent n takes n (the `?` is then 1 or n at run
// time, which kernels handle when they index). Each such assumption about
// the extents of the function's arguments is recorded (funcLowering.
// require) and becomes the function's `extent_checks`, which every runner
// and launcher checks before the first kernel runs (loop.ExtentChecks).

// extentEnv maps graph values to their per-dimension extents (nil for a
// static dimension) and emits the arithmetic it needs with b.
type extentEnv struct {
	l   *funcLowering
	b   *ir.Builder
	ext map[*ir.Value][]*ir.Value
}

// resultExtents returns the extents of every result of a graph.fused.
func (l *funcLowering) resultExtents(fused *ir.Operation) [][]*ir.Value {
	env := &extentEnv{l: l, b: l.fb, ext: map[*ir.Value][]*ir.Value{}}
	entry := fused.Region(0).Entry()
	for i, a := range entry.Args {
		env.ext[a] = l.extents[l.buffer(fused, fused.Operand(i))]
	}
	for op := entry.First(); op != nil; op = op.Next() {
		if op.Name() == graph.OpYield {
			out := make([][]*ir.Value, op.NumOperands())
			for i, v := range op.Operands() {
				out[i] = env.of(v)
			}
			return out
		}
		env.propagate(op)
	}
	fail(fused, "has no graph.yield")
	return nil
}

// of returns the extents of v.
func (e *extentEnv) of(v *ir.Value) []*ir.Value {
	if x, ok := e.ext[v]; ok {
		return x
	}
	shape, _ := ir.ShapeOf(v.Type())
	if ir.HasDynamicDim(shape) {
		if d := v.DefiningOp(); d != nil {
			fail(d, "has a result of dynamic shape whose extents are unknown")
		}
	}
	return make([]*ir.Value, len(shape))
}

// dim returns the extent of dimension d of v as an index value.
func (e *extentEnv) dim(v *ir.Value, d int) *ir.Value {
	shape, _ := ir.ShapeOf(v.Type())
	if shape[d] != ir.Dynamic {
		return e.l.indexConst(shape[d])
	}
	return e.of(v)[d]
}

// propagate records the extents of op's results, and what the op assumes
// of the extents of its operands.
func (e *extentEnv) propagate(op *ir.Operation) {
	e.requirePaired(op)
	for _, r := range op.Results() {
		shape, _ := ir.ShapeOf(r.Type())
		out := make([]*ir.Value, len(shape))
		e.ext[r] = out
		if !ir.HasDynamicDim(shape) {
			continue
		}
		for d := range shape {
			if shape[d] == ir.Dynamic {
				out[d] = e.resultDim(op, r, d)
			}
		}
	}
}

// resultDim derives the extent of the `?` dimension d of result r of op.
func (e *extentEnv) resultDim(op *ir.Operation, r *ir.Value, d int) *ir.Value {
	rank := len(shapeOf(r))
	switch op.Name() {
	case graph.OpRoll:
		return e.dim(op.Operand(0), d) // the operand's shape
	case graph.OpSlice:
		// a size of -1: the operand's whole dimension
		if sizes := (graph.SliceOp{Operation: op}).Sizes(); d < len(sizes) && sizes[d] == -1 {
			return e.dim(op.Operand(0), d)
		}
	case graph.OpGather:
		return e.dim(op.Operand(1), d) // the index tensor's shape
	case graph.OpTranspose:
		perm := graph.TransposeOp{Operation: op}.Perm()
		src := rank - 1 - d // the default reverses
		if len(perm) == rank {
			src = int(perm[d])
		}
		return e.dim(op.Operand(0), src)
	case graph.OpReduceSum, graph.OpReduceMax, graph.OpReduceMin, graph.OpReduceMean:
		in := shapeOf(op.Operand(0))
		axes := reduceAxes(op, len(in))
		keep, _ := op.Attr("keepdim").(ir.BoolAttr)
		kept := 0
		for i := range in {
			if slices.Contains(axes, int64(i)) {
				if bool(keep) {
					if kept == d {
						return e.l.indexConst(1)
					}
					kept++
				}
				continue
			}
			if kept == d {
				return e.dim(op.Operand(0), i)
			}
			kept++
		}
	case graph.OpConcat:
		c := graph.ConcatOp{Operation: op}
		axis := int(normAxis(c.Axis(), rank))
		if d == axis {
			var sum *ir.Value
			for _, v := range op.Operands() {
				x := e.dim(v, d)
				if sum == nil {
					sum = x
				} else {
					sum = must(loop.BuildAddi(e.b, op.Loc, sum, x)).Output()
				}
			}
			return sum
		}
		for _, v := range op.Operands() {
			if shapeOf(v)[d] == ir.Dynamic {
				return e.dim(v, d)
			}
		}
	case graph.OpMatMul:
		mm := graph.MatMulOp{Operation: op}
		lhs, rhs := mm.Lhs(), mm.Rhs()
		switch {
		case d == rank-2:
			return e.dim(lhs, len(shapeOf(lhs))-2)
		case d == rank-1:
			rs := len(shapeOf(rhs))
			if mm.TransposeB() {
				return e.dim(rhs, rs-2)
			}
			return e.dim(rhs, rs-1)
		}
		return e.broadcastDim(op, []*ir.Value{lhs, rhs}, d, rank, 2)
	case graph.OpReshape:
		return e.reshapeDim(op, r)
	default:
		if op.HasTrait(ir.Elementwise) || op.Name() == graph.OpBroadcastTo {
			return e.broadcastDim(op, op.Operands(), d, rank, 0)
		}
	}
	fail(op, "has a result whose dimension %d is dynamic, but its extent cannot be derived from the operands", d)
	return nil
}

// requirePaired records what op assumes of its operands' `?` extents where
// its result's extent is static: broadcasting operands (element-wise ops,
// broadcast_to) have n or 1 there (n only in the last dimension, which
// kernels index along), and matmul's contracted extents agree.
func (e *extentEnv) requirePaired(op *ir.Operation) {
	if op.Name() == graph.OpMatMul {
		mm := graph.MatMulOp{Operation: op}
		lhs, rhs := mm.Lhs(), mm.Rhs()
		ls, rs := shapeOf(lhs), shapeOf(rhs)
		if len(ls) < 2 || len(rs) < 2 {
			return
		}
		k := len(rs) - 2
		if mm.TransposeB() {
			k = len(rs) - 1
		}
		e.requireEqual(lhs, len(ls)-1, rhs, k)
		return
	}
	if g, ok := graph.AsGather(op); ok {
		// the index tensor's extents are the data's, but along the axis
		axis := int(normAxis(g.Axis(), len(shapeOf(g.Input()))))
		for d := range shapeOf(g.Input()) {
			if d != axis {
				e.requireEqual(g.Input(), d, g.Indices(), d)
			}
		}
		return
	}
	if !op.HasTrait(ir.Elementwise) && op.Name() != graph.OpBroadcastTo {
		return
	}
	for _, r := range op.Results() {
		out := shapeOf(r)
		for d, n := range out {
			if n == ir.Dynamic {
				continue
			}
			for _, v := range op.Operands() {
				s := shapeOf(v)
				if j := d - (len(out) - len(s)); j >= 0 && j < len(s) && s[j] == ir.Dynamic {
					e.l.require(e.dim(v, j), nil, n, d != len(out)-1)
				}
			}
		}
	}
}

// requireEqual records that dimension i of a and j of b must have equal
// extents, where either is `?`; a static one gives its value.
func (e *extentEnv) requireEqual(a *ir.Value, i int, b *ir.Value, j int) {
	sa, sb := shapeOf(a), shapeOf(b)
	switch {
	case sa[i] == ir.Dynamic && sb[j] == ir.Dynamic:
		e.l.require(e.dim(a, i), e.dim(b, j), 0, false)
	case sa[i] == ir.Dynamic:
		e.l.require(e.dim(a, i), nil, sb[j], false)
	case sb[j] == ir.Dynamic:
		e.l.require(e.dim(b, j), nil, sa[i], false)
	}
}

// broadcastDim finds the extent of result dimension d among operands
// aligned from the right (ignoring the last skip dimensions of each, for
// matmul's batch): the first operand whose aligned extent is `?`.
func (e *extentEnv) broadcastDim(op *ir.Operation, operands []*ir.Value, d, rank, skip int) *ir.Value {
	var found *ir.Value
	for _, v := range operands {
		s := shapeOf(v)
		j := d - (rank - len(s))
		if j >= 0 && j < len(s)-skip && s[j] == ir.Dynamic {
			x := e.dim(v, j)
			if found == nil {
				found = x
			} else {
				// the others are taken to be equal to it
				e.l.require(found, x, 0, false)
			}
		}
	}
	if found != nil {
		return found
	}
	fail(op, "has a result whose dimension %d is dynamic, but no operand gives its extent", d)
	return nil
}

// reshapeDim is the one `?` of a reshape's result: the operand's element
// count divided by the static extents of the result.
func (e *extentEnv) reshapeDim(op *ir.Operation, r *ir.Value) *ir.Value {
	out := shapeOf(r)
	static := int64(1)
	ndyn := 0
	for _, n := range out {
		if n == ir.Dynamic {
			ndyn++
		} else {
			static *= n
		}
	}
	if ndyn != 1 {
		fail(op, "reshapes to %s, which has more than one dynamic dimension; its extents cannot be derived", graph.FormatShape(out))
	}
	in := op.Operand(0)
	var total *ir.Value
	for i := range shapeOf(in) {
		x := e.dim(in, i)
		if total == nil {
			total = x
		} else {
			total = must(loop.BuildMuli(e.b, op.Loc, total, x)).Output()
		}
	}
	if total == nil {
		total = e.l.indexConst(1)
	}
	return must(loop.BuildDivi(e.b, op.Loc, total, e.l.indexConst(static))).Output()
}

// shapeOf returns the shape of a shaped value.
func shapeOf(v *ir.Value) []int64 {
	s, _ := ir.ShapeOf(v.Type())
	return s
}

// normAxis maps a negative axis to its dimension.
func normAxis(a int64, rank int) int64 {
	if a < 0 {
		return a + int64(rank)
	}
	return a
}

// reduceAxes returns the sorted normalised `axes` of a reduction (all
// axes when absent).
func reduceAxes(op *ir.Operation, rank int) []int64 {
	arr, ok := op.Attr("axes").(ir.ArrayAttr)
	if !ok {
		all := make([]int64, rank)
		for i := range all {
			all[i] = int64(i)
		}
		return all
	}
	raw, _ := arr.Int64s()
	axes, err := graph.NormalizeAxes(raw, rank)
	if err != nil {
		fail(op, "%v", err)
	}
	slices.Sort(axes)
	return axes
}
