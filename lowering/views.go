package lowering

import (
	"github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/passes"
)

// This file lowers the views of an element-wise kernel (transpose,
// reshape, broadcast_to, slice, concat; passes.IsView) as index maps.
// A view's operand is computed in a view scope: a scope whose point is
// the view's map of the point it is read at, in the coordinates of the
// operand's shape (its space). Everything below the view is computed
// there, the loads at the leaves indexing their buffers from that point
// by broadcasting, so a chain of views costs index arithmetic, not a copy:
//
//	%y = graph.transpose %x {perm = [0, 2, 1, 3]}   read at [b, h, t, c]
//	  -> %x read at [b, t, h, c]: loop.load %x, %b, %t, %h, %c
//
// Where the view sends the kernel's column (passes.ColumnMap) decides the
// width of the scope: the parent's vectors when the column stays
// contiguous along the operand's last dimension, one scalar splat over
// the lanes when the operand does not vary along it. A concat along the
// column picks its piece statically: the loop over the row is cut at the
// pieces' edges (passes.ViewPlan.Cuts), so each loop reads one piece.

// viewScope returns the scope computing operand i of view op (or
// graph.roll) read from scope s, whose point in op's result is given by
// broadcasting s's point.
func (s *scope) viewScope(op *ir.Operation, i int) *scope {
	key := viewKey{op, i}
	if c, ok := s.views[key]; ok {
		c.b = s.b
		return c
	}
	ev := s.ev
	res := shapeOf(op.Result(0))
	p := s.pointIn(res)
	cm := passes.BroadcastColumn(s.cm, s.shape(), res)
	ocm, orm, err := passes.ViewOperandMaps(op, i, cm, passes.BroadcastRows(s.rowMap(), s.shape(), res), len(ev.iter))
	if err != nil {
		panic(lowerError{err})
	}
	q := s.mapPoint(op, i, p)
	width := s.width
	if ocm.Kind == passes.ColumnNone {
		width = 0
	}
	c := &scope{ev: ev, b: s.b, parent: s, width: width, space: shapeOf(op.Operand(i)), pt: q, cm: ocm, rm: orm, spanLo: s.spanLo, spanHi: s.spanHi, spanStatic: s.spanStatic,
		vals: map[*ir.Value]*ir.Value{}, comp: map[*ir.Value]*ir.Value{}, splat: map[*ir.Value]*ir.Value{},
		recip: map[*ir.Value]*ir.Value{}}
	if s.views == nil {
		s.views = map[viewKey]*scope{}
	}
	s.views[key] = c
	return c
}

type viewKey struct {
	op *ir.Operation
	i  int
}

// shape is the space of scope s: a view scope's, or the kernel's.
func (s *scope) shape() []int64 {
	if s.space != nil {
		return s.space
	}
	return s.ev.iter
}

// here is s's point in its space: a view scope's own, or the kernel's
// row indices and column (0 in the row scope, whose values do not vary
// along the row).
func (s *scope) here() []*ir.Value {
	if s.space != nil {
		return s.pt
	}
	ev := s.ev
	p := append([]*ir.Value(nil), ev.rowIdx...)
	if s.parent == nil {
		return append(p, ev.k.index(0))
	}
	return append(p, s.column())
}

// pointIn broadcasts s's point to a value of shape sh (NumPy, from the
// right): a dimension of extent 1 where the space's is not is index 0.
func (s *scope) pointIn(sh []int64) []*ir.Value {
	space, pt := s.shape(), s.here()
	out := make([]*ir.Value, len(sh))
	off := len(space) - len(sh)
	for j, e := range sh {
		d := j + off
		if e == 1 && space[d] != 1 {
			out[j] = s.ev.k.index(0)
		} else {
			out[j] = pt[d]
		}
	}
	return out
}

// mapPoint maps point p of op's result to the point of operand i that
// it reads.
func (s *scope) mapPoint(op *ir.Operation, i int, p []*ir.Value) []*ir.Value {
	return s.mapPointAt(s.b, op, i, p)
}

// mapPointAt is mapPoint with the index arithmetic built by b.
func (s *scope) mapPointAt(b *ir.Builder, op *ir.Operation, i int, p []*ir.Value) []*ir.Value {
	k := s.ev.k
	addc := func(x *ir.Value, c int64) *ir.Value {
		if n, ok := loop.EvalIndex(x, nil); ok && c != 0 {
			return k.index(n + c)
		}
		if d := x.DefiningOp(); d != nil && d.Name() == loop.OpAddi && c != 0 {
			if n, ok := loop.EvalIndex(d.Operand(1), nil); ok {
				// (y + n) + c: a part's row, read in a piece
				x, c = d.Operand(0), c+n
			}
		}
		switch {
		case c == 0:
			return x
		case c > 0:
			return must(loop.BuildAddi(b, k.loc, x, k.index(c))).Output()
		}
		return must(loop.BuildSubi(b, k.loc, x, k.index(-c))).Output()
	}
	res, opd := shapeOf(op.Result(0)), shapeOf(op.Operand(i))
	q := make([]*ir.Value, len(opd))
	switch op.Name() {
	case graph.OpTranspose:
		for r, d := range passes.TransposePerm(graph.TransposeOp{Operation: op}) {
			q[d] = p[r]
		}
	case graph.OpBroadcastTo:
		off := len(res) - len(opd)
		for j, e := range opd {
			if e == 1 && res[j+off] != 1 {
				q[j] = k.index(0)
			} else {
				q[j] = p[j+off]
			}
		}
	case graph.OpSlice:
		sl := graph.SliceOp{Operation: op}
		strides := graph.SliceStrides(sl)
		for d, o := range sl.Offsets() {
			x := p[d]
			if strides[d] != 1 {
				x = must(loop.BuildMuli(b, k.loc, x, k.index(strides[d]))).Output()
			}
			q[d] = addc(x, o)
		}
	case graph.OpRoll:
		copy(q, p)
		last := len(q) - 1
		n := opd[last]
		if o := ((n-graph.RollOp{Operation: op}.Shift())%n + n) % n; o != 0 {
			q[last] = s.rolledColumn(b, p[last], o, n, res)
		}
	case graph.OpConcat:
		copy(q, p)
		c := graph.ConcatOp{Operation: op}
		axis := passes.ConcatAxis(c)
		off := int64(0)
		for _, x := range c.Inputs()[:i] {
			off += shapeOf(x)[axis]
		}
		q[axis] = addc(p[axis], -off)
	case graph.OpReshape:
		groups, _ := passes.ReshapeGroups(graph.ReshapeOp{Operation: op})
		for _, g := range groups {
			k.regroup(b, p, res, g.Out, q, opd, g.In)
		}
		k.zeroUnset(q) // the operand's dimensions of extent 1
	default:
		fail(op, "is not a view (internal error in lower-to-loops)")
	}
	return q
}

// throughView computes the result of view op at s's point: the operand's
// value at the mapped point, held as the operand is. A concat reads the
// piece the loop's columns fall in.
func (s *scope) throughView(op *ir.Operation) *ir.Value {
	i := 0
	if c, ok := graph.AsConcat(op); ok {
		i = s.concatPiece(c)
	}
	cs := s.viewScope(op, i)
	x := cs.get(op.Operand(i))
	x = s.cast(x, s.ev.heldElem(op.Result(0)))
	if cs.width == 0 && s.width > 0 {
		x = s.broadcast(x)
	}
	return x
}

// rolledColumn is (x + o) mod n, the column of a roll's operand that
// column x of its result (of shape res) reads: x + o or x + o - n when
// the columns of s's loop lie on one side of where the roll wraps (the
// loop was cut there, passes.ViewPlan.Cuts), the remainder otherwise.
func (s *scope) rolledColumn(b *ir.Builder, x *ir.Value, o, n int64, res []int64) *ir.Value {
	k := s.ev.k
	addc := func(c int64) *ir.Value {
		switch {
		case c == 0:
			return x
		case c > 0:
			return must(loop.BuildAddi(b, k.loc, x, k.index(c))).Output()
		}
		return must(loop.BuildSubi(b, k.loc, x, k.index(-c))).Output()
	}
	switch lo, hi, ok := s.columnsIn(res); {
	case ok && hi <= n-o:
		return addc(o)
	case ok && lo >= n-o:
		return addc(o - n)
	}
	return must(loop.BuildRemi(b, k.loc, addc(o), k.index(n))).Output()
}

// columnsIn returns the range [lo, hi) of the last index of a point of
// shape res that s's loop reads, when the loop's columns are the last
// axis of res (at an offset) and its bounds are static.
func (s *scope) columnsIn(res []int64) (lo, hi int64, ok bool) {
	if !s.spanStatic {
		return 0, 0, false
	}
	cm := passes.BroadcastColumn(s.cm, s.shape(), res)
	if cm.Kind != passes.ColumnAt || cm.Dim != len(res)-1 {
		return 0, 0, false
	}
	return s.spanLo + cm.Off, s.spanHi + cm.Off, true
}

// concatPiece is the piece of concat c that the columns of s's loop read:
// the loop was cut at the pieces' edges, so its first column decides. A
// concat along a row reads the piece of the part being built, whose rows
// were cut at the pieces' edges (rowGrid).
func (s *scope) concatPiece(c graph.ConcatOp) int {
	res := shapeOf(c.Output())
	cm := passes.BroadcastColumn(s.cm, s.shape(), res)
	axis := passes.ConcatAxis(c)
	var at, last int64
	switch rm := passes.BroadcastRows(s.rowMap(), s.shape(), res); {
	case cm.Kind == passes.ColumnAt && cm.Dim == axis:
		at = s.spanLo + cm.Off
		last = at
	case rm[axis].Dim >= 0 && s.ev.info.Views != nil && rm[axis].Dim == s.ev.info.Views.RowDim:
		at, last = s.ev.partLo+rm[axis].Off, s.ev.partHi-1+rm[axis].Off
	default:
		fail(c.Operation, "is read where neither the column nor the part picks its piece (internal error in lower-to-loops)")
	}
	edge := int64(0)
	for i, x := range c.Inputs() {
		edge += shapeOf(x)[axis]
		if at < edge {
			if last >= edge {
				fail(c.Operation, "is read by rows of more than one piece in one part (internal error in lower-to-loops)")
			}
			return i
		}
	}
	return len(c.Inputs()) - 1
}

// viewLoad reads block argument v at the point of view scope s: its
// buffer indexed by broadcasting the point, a vector when it varies along
// the scope's lanes and a scalar splat otherwise.
func (s *scope) viewLoad(v *ir.Value) *ir.Value {
	ev := s.ev
	buf := ev.buffers[v]
	sh := shapeOf(v)
	idx := s.pointIn(sh)
	space := s.shape()
	for j, e := range sh {
		d := j + len(space) - len(sh)
		if e == ir.Dynamic && space[d] != ir.Dynamic {
			// a `?` that may be 1 in a static dimension of the space
			idx[j] = must(loop.BuildRemi(s.b, ev.k.loc, idx[j], ev.k.dim(buf, j))).Output()
		}
	}
	// where the scope's column runs in v: along its last axis (a vector),
	// along another (a strided vector, on CPU targets: viewWidth), or
	// nowhere (a scalar, splat)
	cm := passes.BroadcastColumn(s.cm, space, sh)
	lanes := s.width > 0 && len(sh) > 0 && cm.Kind != passes.ColumnNone
	t := ir.Type(elemOf(v))
	var x *ir.Value
	if lanes && cm.Kind == passes.ColumnAt && cm.Dim != len(sh)-1 {
		x = must(loop.BuildStridedLoad(s.b, ev.k.loc, buf, idx, s.typeOf(elemOf(v)), cm.Dim)).Output()
	} else {
		if lanes {
			t = s.typeOf(elemOf(v))
		}
		x = must(loop.BuildLoad(s.b, ev.k.loc, buf, idx, t)).Output()
	}
	if v.Name != "" {
		x.Name = v.Name
	}
	if !lanes && s.width > 0 {
		x = s.broadcast(x)
	}
	return x
}

// viewGet computes body value v in view scope s.
func (s *scope) viewGet(v *ir.Value) *ir.Value {
	op := v.DefiningOp()
	switch {
	case op != nil && op.Name() == graph.OpConstant:
		return s.ev.k.constant(s.typeOf(elemOf(v)), graph.ConstantOp{Operation: op}.Value().At(0))
	case v.IsBlockArg():
		return s.viewLoad(v)
	case passes.IsView(op) || op.Name() == graph.OpRoll:
		return s.throughView(op)
	}
	args := make([]*ir.Value, op.NumOperands())
	for i, a := range op.Operands() {
		args[i] = s.get(a)
	}
	return s.emit(op, args)
}

// viewWidth narrows vector width w for the views of a kernel: to one lane
// when a vector would not be contiguous, else until it divides every
// offset and extent the plan lists. With strided (a CPU target), reads
// whose column runs along another axis than the value's last do not
// narrow it (passes.ViewPlan.Strided: viewLoad reads them with strided
// loads), unless a concat cuts the kernel's rows or columns.
func viewWidth(w int64, plan *passes.ViewPlan, strided bool) int64 {
	if plan == nil {
		return w
	}
	if plan.Scalar && !(strided && plan.Strided && len(plan.Cuts) == 0 && plan.RowDim < 0) {
		return 1
	}
	return dividingWidth(w, plan)
}

// dividingWidth narrows vector width w until it divides every offset and
// extent plan lists.
func dividingWidth(w int64, plan *passes.ViewPlan) int64 {
	for _, d := range plan.Divides {
		for w > 1 && d%w != 0 {
			w /= 2
		}
	}
	return w
}

// regroup sets the dimensions toDims of point q (of shape to) from the
// dimensions fromDims of point p (of shape from), a group of a reshape
// (passes.ReshapeGroups): the row-major position of p in the group,
// split into the group's dimensions of to. A group of one dimension on
// each side (a `?` among them) is copied.
func (k *kernelBuilder) regroup(b *ir.Builder, p []*ir.Value, from []int64, fromDims []int, q []*ir.Value, to []int64, toDims []int) {
	if len(fromDims) == 1 && len(toDims) == 1 {
		q[toDims[0]] = p[fromDims[0]]
		return
	}
	lin := p[fromDims[0]]
	for _, d := range fromDims[1:] {
		lin = must(loop.BuildMuli(b, k.loc, lin, k.index(from[d]))).Output()
		lin = must(loop.BuildAddi(b, k.loc, lin, p[d])).Output()
	}
	stride := int64(1)
	for n := len(toDims) - 1; n >= 0; n-- {
		j := toDims[n]
		x := lin
		if stride != 1 {
			x = must(loop.BuildDivi(b, k.loc, x, k.index(stride))).Output()
		}
		if n > 0 {
			x = must(loop.BuildRemi(b, k.loc, x, k.index(to[j]))).Output()
		}
		q[j] = x
		stride *= to[j]
	}
}

// zeroUnset sets the dimensions of point q that no group of a reshape
// set (its dimensions of extent 1) to index 0.
func (k *kernelBuilder) zeroUnset(q []*ir.Value) {
	for j := range q {
		if q[j] == nil {
			q[j] = k.index(0)
		}
	}
}
