package lowering

import (
	"slices"

	"github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/passes"
)

// This file stores the results of a row kernel that are views of its full
// rows (passes.KernelInfo.OutViews): the row's value at the kernel's point
// p, stored at the point of the view's result that reads p, computed by
// the inverse of each view's index map in turn:
//
//	transpose perm   result[r] = p[perm[r]]
//	reshape          each group of dimensions linearised row-major in p's
//	                 shape and split into the result's
//
// A reshape keeps the buffer's row-major order, so a vector of columns
// stays contiguous where its lanes do not cross a row of the result
// (outViewWidth); a transpose that moves the last axis stores one lane at
// a time, or, in a CPU kernel, a vector by a strided store (loop.store's
// `axis`) down the result's dimension that holds the column (an
// element-wise kernel walking tiles: tiledWalk).

// storeViewed stores the value the views of chain read, at s's point,
// into buf, the buffer of the chain's result.
func (s *scope) storeViewed(chain []*ir.Operation, buf *ir.Value) {
	k := s.ev.k
	x := s.cast(s.get(chain[0].Operand(0)), buf.Type().(ir.MemRefType).Elem)
	p := append(slices.Clone(s.ev.rowIdx), s.column())
	for _, op := range chain {
		p = s.viewedPoint(op, p)
	}
	if col, _, ok := outViewAxes(chain, len(s.ev.iter)); ok && s.width > 0 && col != len(p)-1 {
		must(loop.BuildStridedStore(s.b, k.loc, x, buf, p, col))
		return
	}
	must(loop.BuildStore(s.b, k.loc, x, buf, p))
}

// outViewAxes follows a chain of transposes of a value of the kernel's
// rank n: col is the dimension of the chain's result that holds the
// kernel's column, last the kernel dimension that the result's last
// dimension indexes. ok is false for a chain with another view.
func outViewAxes(chain []*ir.Operation, n int) (col, last int, ok bool) {
	p := make([]int, n) // result dimension r holds kernel dimension p[r]
	for i := range p {
		p[i] = i
	}
	for _, op := range chain {
		if op.Name() != graph.OpTranspose || len(shapeOf(op.Operand(0))) != n {
			return 0, 0, false
		}
		q := make([]int, n)
		for r, d := range passes.TransposePerm(graph.TransposeOp{Operation: op}) {
			q[r] = p[d]
		}
		p = q
	}
	if n == 0 {
		return 0, 0, false
	}
	return slices.Index(p, n-1), p[n-1], true
}

// storeResult stores result y of the kernel into its buffer buf at s's
// point: through its views where it has them.
func (s *scope) storeResult(y, buf *ir.Value) {
	if chain := s.ev.info.OutViews[y]; chain != nil {
		s.storeViewed(chain, buf)
		return
	}
	s.store(s.get(y), buf)
}

// viewedPoint maps point p of view op's operand to the point of its result
// that reads it.
func (s *scope) viewedPoint(op *ir.Operation, p []*ir.Value) []*ir.Value {
	k := s.ev.k
	res, opd := shapeOf(op.Result(0)), shapeOf(op.Operand(0))
	q := make([]*ir.Value, len(res))
	switch op.Name() {
	case graph.OpTranspose:
		for r, d := range passes.TransposePerm(graph.TransposeOp{Operation: op}) {
			q[r] = p[d]
		}
	case graph.OpReshape:
		groups, _ := passes.ReshapeGroups(graph.ReshapeOp{Operation: op})
		for _, g := range groups {
			k.regroup(s.b, p, opd, g.In, q, res, g.Out)
		}
		k.zeroUnset(q) // the result's dimensions of extent 1
	default:
		fail(op, "is not a view a row kernel stores through (internal error in lower-to-loops)")
	}
	return q
}

// outViewWidth narrows vector width w so that each chain of views stores
// whole vectors: the column must stay the last index of every view's
// result, and a vector must not cross a row of a reshape's result (its
// static last extent a multiple of the width). With strided (a CPU
// target) a chain of transposes alone of a value of the kernel's rank n
// is stored by strided stores wherever the column goes (storeViewed).
func outViewWidth(w int64, chains map[*ir.Value][]*ir.Operation, strided bool, n int) int64 {
	for _, chain := range chains {
		if _, _, ok := outViewAxes(chain, n); ok && strided {
			continue // transposes alone, stored by strided stores on a CPU
		}
		for _, op := range chain {
			res := shapeOf(op.Result(0))
			switch op.Name() {
			case graph.OpTranspose:
				if passes.MovesLastAxis(graph.TransposeOp{Operation: op}) {
					return 1
				}
			case graph.OpReshape:
				last := res[len(res)-1]
				if last == ir.Dynamic {
					continue // a `?` alone in its group: the column itself
				}
				for w > 1 && last%w != 0 {
					w /= 2
				}
			}
		}
	}
	return w
}

// spaceExtent is extent d of the iteration space of an element-wise or
// row kernel info, whose body yields yields: output 0's where it has the
// space's shape, or else (a result broadcast over the space, results
// stored through views, whose buffers have the views' shapes) the static
// extent, that of a result or input of the space's shape, or that of the
// dimension of a viewed result that d becomes.
func (k *kernelBuilder) spaceExtent(info *passes.KernelInfo, d int, yields []*ir.Value) *ir.Value {
	if len(info.OutViews) == 0 && len(yields) > 0 && slices.Equal(shapeOf(yields[0]), info.Shape) {
		return k.dim(k.outs[0], d)
	}
	if e := info.Shape[d]; e != ir.Dynamic {
		return k.index(e)
	}
	// a buffer whose dimension d is the space's `?` itself: a full value,
	// or a per-row one ([R..., 1] or [R...], led by the rows)
	spans := func(buf *ir.Value, a passes.Access) bool {
		s := buf.Type().(ir.MemRefType).Shape
		switch a {
		case passes.AccessFull:
			return len(s) == len(info.Shape) && s[d] == ir.Dynamic
		case passes.AccessPerRow:
			return d < len(s) && s[d] == ir.Dynamic
		}
		return false
	}
	for i, a := range info.Results {
		if spans(k.outs[i], a) {
			return k.dim(k.outs[i], d)
		}
	}
	for i, a := range info.Operands {
		if spans(k.ins[i], a) {
			return k.dim(k.ins[i], d)
		}
	}
	// the result's dimension that d becomes through its views
	for i, y := range yields {
		chain := info.OutViews[y]
		if chain == nil {
			continue
		}
		e, ok := d, true
		for _, op := range chain {
			if e, ok = viewedDim(op, e); !ok {
				break
			}
		}
		if ok {
			return k.dim(k.outs[i], e)
		}
	}
	panic(lowerError{ir.Errorf(k.loc, "a kernel whose results are all stored through views and whose iteration space has a run-time extent reads no value of that space to take it from (internal error in lower-to-loops)")})
}

// viewedDim is the dimension of view op's result that dimension d of its
// operand becomes, when it becomes one alone (a transpose's, or a
// dimension a reshape keeps whole).
func viewedDim(op *ir.Operation, d int) (int, bool) {
	switch op.Name() {
	case graph.OpTranspose:
		for r, p := range passes.TransposePerm(graph.TransposeOp{Operation: op}) {
			if int(p) == d {
				return r, true
			}
		}
	case graph.OpReshape:
		groups, _ := passes.ReshapeGroups(graph.ReshapeOp{Operation: op})
		for _, g := range groups {
			if len(g.In) == 1 && len(g.Out) == 1 && g.In[0] == d {
				return g.Out[0], true
			}
		}
	}
	return 0, false
}
