package passes

import (
	"fmt"
	"math"
	"slices"

	"github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/ir"
)

// This file decides how an element-wise kernel reads through views:
// transpose, reshape, broadcast_to, slice and concat (and graph.roll) are
// index maps there, not copies. A view's operand is computed at the point
// the view maps the kernel's point to, so a chain of views between a
// kernel's inputs and its results costs no bytes and no launch.
//
// The kernel's loops run over rows (its leading dimensions) and, W lanes
// at a time, along the row (its last dimension, the column). Where each
// view sends the column decides how the operands below it can be read:
//
//	column    the column lands in one dimension of the value plus a static
//	          offset (slices, concat pieces, transposes, reshapes keeping
//	          the dimension): a concat along that dimension picks its piece
//	          statically once the row's loop is cut at the pieces' edges;
//	lanes     a vector of the column is contiguous along the value's last
//	          dimension, at a position computed from it (a reshape that
//	          regroups the last dimension, a roll);
//	none      the value does not vary along the column (a broadcast);
//	scattered the lanes of a vector land in different rows of the value
//	          (a transpose moving the last axis): the kernel runs one lane
//	          at a time.

// viewOps are the shape ops an element-wise kernel reads through.
var viewOps = map[string]bool{
	graph.OpTranspose: true, graph.OpReshape: true, graph.OpBroadcastTo: true,
	graph.OpSlice: true, graph.OpConcat: true,
}

// IsView reports whether op is a shape op that element-wise kernels read
// through as an index map (graph.roll is one too, handled on its own).
func IsView(op *ir.Operation) bool { return op != nil && viewOps[op.Name()] }

// ColumnKind says where a view chain sends the kernel's column.
type ColumnKind uint8

const (
	ColumnNone      ColumnKind = iota // the value does not vary along the column
	ColumnAt                          // dimension Dim is the column plus Off
	ColumnLanes                       // lanes are contiguous along the last dimension
	ColumnScattered                   // lanes land in different rows
)

// ColumnMap is where the kernel's column is in the coordinates of a value
// read through views.
type ColumnMap struct {
	Kind ColumnKind
	Dim  int   // ColumnAt: the dimension holding the column
	Off  int64 // ColumnAt: the value's index there is column + Off
}

// TransposePerm is the permutation of a graph.transpose: result dimension
// i is operand dimension perm[i]; without `perm` the dimensions reverse.
func TransposePerm(t graph.TransposeOp) []int64 {
	if p := t.Perm(); p != nil {
		return p
	}
	n := len(shapeOf(t.Input()))
	p := make([]int64, n)
	for i := range p {
		p[i] = int64(n - 1 - i)
	}
	return p
}

// MovesLastAxis reports whether transpose t sends its operand's last axis
// elsewhere: a row of its result is then a column of the operand.
func MovesLastAxis(t graph.TransposeOp) bool {
	p := TransposePerm(t)
	return len(p) > 0 && p[len(p)-1] != int64(len(p)-1)
}

// ConcatAxis is a graph.concat's axis, from 0.
func ConcatAxis(c graph.ConcatOp) int {
	a := int(c.Axis())
	if a < 0 {
		a += len(shapeOf(c.Output()))
	}
	return a
}

// ReshapeGroup is one group of a graph.reshape: the operand dimensions
// In hold the same elements as the result dimensions Out, in row-major
// order. Dimensions of extent 1 belong to no group.
type ReshapeGroup struct{ In, Out []int }

// ReshapeGroups splits a graph.reshape into groups of dimensions that
// regroup among themselves (MLIR's reassociation), leaving out extents of
// 1: static dimensions with equal products, or one `?` in each shape,
// alone, standing for the same extent. ok is false when the reshape is
// not of that form (it regroups a `?` with other dimensions).
func ReshapeGroups(r graph.ReshapeOp) (groups []ReshapeGroup, ok bool) {
	in, out := shapeOf(r.Input()), shapeOf(r.Output())
	nonUnit := func(s []int64) []int {
		var ds []int
		for d, e := range s {
			if e != 1 {
				ds = append(ds, d)
			}
		}
		return ds
	}
	ins, outs := nonUnit(in), nonUnit(out)
	dyn := 0
	i, j := 0, 0
	for i < len(ins) && j < len(outs) {
		var g ReshapeGroup
		a, b := in[ins[i]], out[outs[j]]
		g.In, g.Out = []int{ins[i]}, []int{outs[j]}
		i, j = i+1, j+1
		if a == ir.Dynamic || b == ir.Dynamic {
			if a != b {
				return nil, false
			}
			dyn++
		} else {
			for a != b {
				switch {
				case a < b && i < len(ins) && in[ins[i]] != ir.Dynamic:
					a *= in[ins[i]]
					g.In = append(g.In, ins[i])
					i++
				case b < a && j < len(outs) && out[outs[j]] != ir.Dynamic:
					b *= out[outs[j]]
					g.Out = append(g.Out, outs[j])
					j++
				default:
					return nil, false
				}
			}
		}
		groups = append(groups, g)
	}
	return groups, i == len(ins) && j == len(outs) && dyn <= 1
}

// BroadcastColumn returns where the column is in a value of shape opd
// read, with NumPy broadcasting from the right, at the points of shape res
// whose column map is m.
func BroadcastColumn(m ColumnMap, res, opd []int64) ColumnMap {
	if m.Kind == ColumnNone || m.Kind == ColumnScattered {
		return m
	}
	if len(opd) == 0 {
		return ColumnMap{Kind: ColumnNone}
	}
	d := m.Dim
	if m.Kind == ColumnLanes {
		d = len(res) - 1
	}
	j := d - (len(res) - len(opd))
	if j < 0 || (opd[j] == 1 && res[d] != 1) {
		return ColumnMap{Kind: ColumnNone}
	}
	out := m
	out.Dim = j
	return out
}

// RowAt is where one dimension of a value read through views is in the
// kernel's coordinates: the value's index there is the kernel's index in
// dimension Dim plus Off, or (Dim < 0) no single index of the kernel's.
type RowAt struct {
	Dim int
	Off int64
}

// KernelRows is the row map of the kernel's own space of rank n: each
// dimension is itself.
func KernelRows(n int) []RowAt {
	rm := make([]RowAt, n)
	for d := range rm {
		rm[d] = RowAt{Dim: d}
	}
	return rm
}

// BroadcastRows is the row map of a value of shape opd read, with NumPy
// broadcasting from the right, at the points of shape res whose row map
// is rm: a dimension of extent 1 where res's is not is index 0.
func BroadcastRows(rm []RowAt, res, opd []int64) []RowAt {
	out := make([]RowAt, len(opd))
	off := len(res) - len(opd)
	for j, e := range opd {
		if d := j + off; d < 0 || (e == 1 && res[d] != 1) {
			out[j] = RowAt{Dim: -1}
		} else {
			out[j] = rm[d]
		}
	}
	return out
}

// ViewOperandRows returns the row map of operand i of op (a view, a roll
// or an element-wise op) given op's result's.
func ViewOperandRows(op *ir.Operation, i int, rm []RowAt) []RowAt {
	res, opd := shapeOf(op.Result(0)), shapeOf(op.Operand(i))
	none := RowAt{Dim: -1}
	q := make([]RowAt, len(opd))
	switch op.Name() {
	case graph.OpTranspose:
		for r, d := range TransposePerm(graph.TransposeOp{Operation: op}) {
			q[d] = rm[r]
		}
	case graph.OpSlice:
		sl := graph.SliceOp{Operation: op}
		strides := graph.SliceStrides(sl)
		for d, o := range sl.Offsets() {
			q[d] = none
			if strides[d] == 1 && rm[d].Dim >= 0 {
				q[d] = RowAt{Dim: rm[d].Dim, Off: rm[d].Off + o}
			}
		}
	case graph.OpRoll:
		copy(q, rm)
		q[len(q)-1] = none
	case graph.OpConcat:
		copy(q, rm)
		c := graph.ConcatOp{Operation: op}
		axis := ConcatAxis(c)
		for _, x := range c.Inputs()[:i] {
			if q[axis].Dim >= 0 {
				q[axis].Off -= shapeOf(x)[axis]
			}
		}
	case graph.OpReshape:
		for d := range q {
			q[d] = none
		}
		if groups, ok := ReshapeGroups(graph.ReshapeOp{Operation: op}); ok {
			for _, g := range groups {
				if len(g.In) == 1 && len(g.Out) == 1 {
					q[g.In[0]] = rm[g.Out[0]]
				}
			}
		}
	default:
		return BroadcastRows(rm, res, opd)
	}
	return q
}

// rowConcat reports whether op is a concat whose piece the kernel's row
// position picks: along a dimension (of op's result, row map rm) that is
// a row dimension of the kernel's (rank n) at an offset.
func rowConcat(op *ir.Operation, rm []RowAt, n int) bool {
	c, ok := graph.AsConcat(op)
	if !ok || rm == nil {
		return false
	}
	d := rm[ConcatAxis(c)].Dim
	return d >= 0 && d < n-1
}

// ViewOperandMaps is ViewOperandMap with the row maps: a concat along a
// dimension the kernel's rows index at an offset (rowConcat) is read a
// piece per part of the kernel (ViewPlan.RowCuts), its pieces at the
// column the kernel's. n is the rank of the kernel's space.
func ViewOperandMaps(op *ir.Operation, i int, m ColumnMap, rm []RowAt, n int) (ColumnMap, []RowAt, error) {
	orm := ViewOperandRows(op, i, rm)
	if rowConcat(op, rm, n) {
		axis := ConcatAxis(graph.ConcatOp{Operation: op})
		if (m.Kind == ColumnAt && m.Dim == axis) || (m.Kind == ColumnLanes && axis == len(rm)-1) {
			return m, nil, ir.OpError(op, "concatenates along axis %d, which holds both a row and the column of the kernel (internal error in the view plan)", axis)
		}
		return m, orm, nil
	}
	om, err := ViewOperandMap(op, i, m)
	return om, orm, err
}

// ViewOperandMap returns where the column is in the coordinates of
// operand i of op (a view or an element-wise op), given where it is in
// op's result. It fails for a concat the column cannot pick a piece of.
func ViewOperandMap(op *ir.Operation, i int, m ColumnMap) (ColumnMap, error) {
	res, opd := shapeOf(op.Result(0)), shapeOf(op.Operand(i))
	if len(opd) == 0 {
		return ColumnMap{Kind: ColumnNone}, nil
	}
	if m.Kind == ColumnNone {
		if c, ok := graph.AsConcat(op); ok && !allOnes(shapeOf(c.Output())) {
			return m, ir.OpError(op, "%s", rowConcatError(ConcatAxis(c)))
		}
		return m, nil
	}
	broadcast := func() ColumnMap { return BroadcastColumn(m, res, opd) }
	switch op.Name() {
	case graph.OpBroadcastTo:
		return broadcast(), nil
	case graph.OpTranspose:
		perm := TransposePerm(graph.TransposeOp{Operation: op})
		switch m.Kind {
		case ColumnAt:
			return ColumnMap{Kind: ColumnAt, Dim: int(perm[m.Dim]), Off: m.Off}, nil
		case ColumnLanes:
			if MovesLastAxis(graph.TransposeOp{Operation: op}) {
				return ColumnMap{Kind: ColumnScattered}, nil
			}
		}
		return m, nil
	case graph.OpSlice:
		sl := graph.SliceOp{Operation: op}
		strides := graph.SliceStrides(sl)
		switch {
		case m.Kind == ColumnAt && strides[m.Dim] != 1:
			// every stride-th element: the lanes of a vector are apart
			return ColumnMap{Kind: ColumnScattered}, nil
		case m.Kind == ColumnAt:
			m.Off += sl.Offsets()[m.Dim]
		case m.Kind == ColumnLanes && strides[len(strides)-1] != 1:
			return ColumnMap{Kind: ColumnScattered}, nil
		}
		return m, nil
	case graph.OpRoll:
		last := len(res) - 1
		if (m.Kind == ColumnAt && m.Dim == last) || m.Kind == ColumnLanes {
			return ColumnMap{Kind: ColumnLanes}, nil
		}
		return m, nil
	case graph.OpReshape:
		groups, ok := ReshapeGroups(graph.ReshapeOp{Operation: op})
		if !ok {
			return m, ir.OpError(op, "regroups a dynamic dimension with others (%s to %s): an element-wise kernel reads through a reshape that keeps each `?` dimension as it is",
				graph.FormatShape(opd), graph.FormatShape(res))
		}
		if m.Kind == ColumnScattered {
			return m, nil
		}
		d := m.Dim
		if m.Kind == ColumnLanes {
			d = len(res) - 1
		}
		for _, g := range groups {
			if !slices.Contains(g.Out, d) {
				continue
			}
			lastOut, lastIn := g.Out[len(g.Out)-1], g.In[len(g.In)-1]
			switch {
			case m.Kind == ColumnAt && d == lastOut && res[d] == opd[lastIn]:
				// the group's last dimension is kept: the column stays in it
				return ColumnMap{Kind: ColumnAt, Dim: lastIn, Off: m.Off}, nil
			case d == len(res)-1 && lastIn == len(opd)-1:
				return ColumnMap{Kind: ColumnLanes}, nil
			}
			return ColumnMap{Kind: ColumnScattered}, nil
		}
		return ColumnMap{Kind: ColumnNone}, nil
	case graph.OpConcat:
		c := graph.ConcatOp{Operation: op}
		axis := ConcatAxis(c)
		if m.Kind == ColumnAt && m.Dim == axis {
			off := int64(0)
			for _, x := range c.Inputs()[:i] {
				off += shapeOf(x)[axis]
			}
			m.Off -= off
			return m, nil
		}
		if m.Kind == ColumnAt || m.Kind == ColumnNone {
			return m, ir.OpError(op, "%s", rowConcatError(axis))
		}
		return m, ir.OpError(op, "concatenates along axis %d at columns the kernel computes (through a reshape or roll above it): an element-wise kernel reads through a concat whose pieces the column picks by an offset", axis)
	}
	return broadcast(), nil
}

// ViewPlan is how an element-wise kernel with views reads them: where its
// loop over the row is cut so that every concat reads one piece per loop,
// and what its vector width must divide.
type ViewPlan struct {
	// Cuts are the columns, in increasing order, where the loop over the
	// row is cut: each an edge between two pieces of a concat, or where a
	// roll along the row wraps around.
	Cuts []int64
	// Divides lists extents and offsets the vector width must divide so
	// that every vector read through a view is contiguous.
	Divides []int64
	// Scalar is set when some vector would not be contiguous: the kernel
	// runs one lane at a time.
	Scalar bool
	// RowCuts are the rows, in increasing order, where the kernel's row
	// dimension RowDim is cut: each an edge between two pieces of a concat
	// along a dimension the rows index. The kernel runs a part (a launch
	// grid, loop.Parts) per stretch between cuts, whose rows read one
	// piece of each such concat. RowDim is -1 where no concat is along a
	// row, and may be set with no cuts (every row in one piece).
	RowCuts []int64
	RowDim  int
	// TileDim is the kernel's row dimension whose index addresses the
	// last, contiguous axis of a value the kernel reads through a view
	// that does not keep the column there (a transpose moving the last
	// axis): walking a row of the kernel reads one element per line of
	// that value, and a CPU kernel walks tiles of TileDim and the column
	// instead, reading such values with strided vector loads. Where it is
	// set, those reads are all that make the plan Scalar, and Divides
	// holds for the rest. -1 where no read is transposed, reads disagree,
	// or another read is scalar.
	TileDim int
	// Strided is set when every read that makes the plan Scalar is one
	// with the column along another axis than the value's last: a kernel
	// for a CPU reads those with strided vector loads and keeps its
	// vectors (lowering's viewWidth).
	Strided bool
	// limits are Scalar and Divides by the columns they hold for: a
	// concat's piece is read only in the columns it fills, and a loop
	// over those columns alone may take wider vectors than another.
	limits []viewLimit
	// columnConcats are the concats along the column.
	columnConcats []*ir.Operation
}

// viewLimit is one requirement of a read through views on the columns
// [lo, hi) of the kernel: lanes one at a time (scalar), or a vector width
// dividing divides.
type viewLimit struct {
	lo, hi  int64
	scalar  bool
	divides int64
}

// SpanWidth is the vector width, w or less, of a loop over the columns
// [lo, hi) between two cuts: one that divides both ends and every extent
// and offset the reads in those columns require.
func (p *ViewPlan) SpanWidth(w, lo, hi int64) int64 {
	for w > 1 && (lo%w != 0 || hi%w != 0) {
		w /= 2
	}
	for _, l := range p.limits {
		if l.hi <= lo || l.lo >= hi {
			continue
		}
		if l.scalar {
			return 1
		}
		for w > 1 && l.divides%w != 0 {
			w /= 2
		}
	}
	return w
}

// planViews walks the body of a kernel with views from its
// results down, following where the column goes, and returns its plan or
// the error of a view it cannot read through.
//
// The walks start at values whose last dimension is the kernel's column:
// the results of an element-wise kernel; the full results of a row kernel
// and the operands of its row reductions, where the walks stop.
//
// A concat along a dimension that the kernel's rows index at an offset
// (rowConcat) cuts the rows instead (RowCuts); all such concats must cut
// the same dimension of the kernel, of static extent.
func planViews(ops []*ir.Operation, starts []*ir.Value, shape []int64) (*ViewPlan, error) {
	inBody := map[*ir.Operation]bool{}
	for _, op := range ops {
		inBody[op] = true
	}
	plan := &ViewPlan{RowDim: -1, TileDim: -1}
	// the kernel dimensions that address the last axis of a value read
	// with the column along another of its axes, and whether any read is
	// scalar for another reason
	tileDims := map[int]bool{}
	otherScalar := false
	n := len(shape)
	if n == 0 {
		return plan, nil
	}
	// the walk follows the columns [lo, hi) of the kernel a value is read
	// at: all of them, or below a concat along the column those of the
	// piece read
	type visit struct {
		v      *ir.Value
		m      ColumnMap
		lo, hi int64
		rows   string
	}
	seen := map[visit]bool{}
	cuts := map[int64]bool{}
	rowCuts := map[int64]bool{}
	scalar := func(lo, hi int64) {
		plan.Scalar = true
		plan.limits = append(plan.limits, viewLimit{lo: lo, hi: hi, scalar: true})
	}
	divides := func(lo, hi, d int64) {
		plan.Divides = append(plan.Divides, d)
		plan.limits = append(plan.limits, viewLimit{lo: lo, hi: hi, divides: d})
	}
	var walk func(v *ir.Value, m ColumnMap, rm []RowAt, lo, hi int64) error
	walk = func(v *ir.Value, m ColumnMap, rm []RowAt, lo, hi int64) error {
		key := visit{v, m, lo, hi, fmt.Sprint(rm)}
		if seen[key] {
			return nil
		}
		seen[key] = true
		s := shapeOf(v)
		switch m.Kind {
		case ColumnAt:
			if m.Dim != len(s)-1 {
				scalar(lo, hi) // strided, which tileDims may take
			} else if m.Off != 0 {
				divides(lo, hi, abs64(m.Off))
			}
		case ColumnLanes:
			if last := s[len(s)-1]; last != ir.Dynamic {
				divides(lo, hi, last)
			} else {
				scalar(lo, hi)
				otherScalar = true
			}
		case ColumnScattered:
			scalar(lo, hi)
			otherScalar = true
		}
		op := v.DefiningOp()
		if op == nil || !inBody[op] || isConstant(op) || isRowReduction(op) {
			if last := len(s) - 1; m.Kind == ColumnAt && m.Dim != last && last < len(rm) && (op == nil || !inBody[op]) {
				tileDims[rm[last].Dim] = true // read from memory across its lines
			}
			return nil
		}
		// the columns of the kernel each operand is read at
		ranges := make([][2]int64, len(op.Operands()))
		for i := range ranges {
			ranges[i] = [2]int64{lo, hi}
		}
		if c, ok := graph.AsConcat(op); ok && m.Kind == ColumnAt && m.Dim == ConcatAxis(c) {
			plan.columnConcats = append(plan.columnConcats, op)
			edge := int64(0)
			for i, x := range c.Inputs() {
				next := edge + shapeOf(x)[m.Dim]
				if i < len(c.Inputs())-1 {
					if cut := next - m.Off; cut > 0 && cut < shape[n-1] {
						cuts[cut] = true
					}
					plan.Divides = append(plan.Divides, shapeOf(x)[m.Dim])
				}
				ranges[i] = [2]int64{max(lo, edge-m.Off), min(hi, next-m.Off)}
				edge = next
			}
		}
		if c, ok := graph.AsConcat(op); ok && rowConcat(op, rm, n) {
			if err := rowCut(c, rm, shape, plan, rowCuts); err != nil {
				return err
			}
		}
		if r, ok := graph.AsRoll(op); ok {
			plan.Divides = append(plan.Divides, abs64(r.Shift()))
			// the column where the roll wraps around: cut there, each loop
			// reads the rolled row at a plain offset, without a remainder
			if last := s[len(s)-1]; m.Kind == ColumnAt && m.Dim == len(s)-1 && last != ir.Dynamic && shape[n-1] != ir.Dynamic {
				if o := ((last-r.Shift())%last + last) % last; o != 0 {
					if cut := last - o - m.Off; cut > 0 && cut < shape[n-1] {
						cuts[cut] = true
					}
				}
			}
		}
		for i, a := range op.Operands() {
			am, arm, err := ViewOperandMaps(op, i, m, rm, n)
			if err != nil {
				return err
			}
			if r := ranges[i]; r[0] < r[1] {
				if err := walk(a, am, arm, r[0], r[1]); err != nil {
					return err
				}
			}
		}
		return nil
	}
	cols := shape[n-1]
	if cols == ir.Dynamic {
		cols = math.MaxInt64
	}
	for _, y := range starts {
		ys := shapeOf(y)
		if err := walk(y, ColumnMap{Kind: ColumnAt, Dim: len(ys) - 1}, BroadcastRows(KernelRows(n), shape, ys), 0, cols); err != nil {
			return nil, err
		}
	}
	plan.Strided = plan.Scalar && !otherScalar
	if len(tileDims) == 1 && !otherScalar {
		for d := range tileDims {
			if d >= 0 && d < n-1 {
				plan.TileDim = d
			}
		}
	}
	for c := range rowCuts {
		plan.RowCuts = append(plan.RowCuts, c)
	}
	slices.Sort(plan.RowCuts)
	for c := range cuts {
		plan.Cuts = append(plan.Cuts, c)
	}
	slices.Sort(plan.Cuts)
	if len(plan.Cuts) > 0 && shape[n-1] == ir.Dynamic {
		return nil, fmt.Errorf("a concat along the column of a kernel over rows of dynamic length")
	}
	plan.Divides = append(plan.Divides, plan.Cuts...)
	slices.Sort(plan.Divides)
	plan.Divides = slices.Compact(plan.Divides)
	return plan, nil
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// rowCut records the edges between the pieces of concat c, whose result's
// row map is rm, as cuts of the kernel's rows (of shape shape) in plan.
func rowCut(c graph.ConcatOp, rm []RowAt, shape []int64, plan *ViewPlan, cuts map[int64]bool) error {
	axis := ConcatAxis(c)
	at := rm[axis]
	switch {
	case plan.RowDim >= 0 && plan.RowDim != at.Dim:
		return ir.OpError(c.Operation, "concatenates along dimension %d of the kernel's rows, and another concat along dimension %d: a kernel's rows are cut along one dimension", at.Dim, plan.RowDim)
	case shape[at.Dim] == ir.Dynamic:
		return ir.OpError(c.Operation, "concatenates along dimension %d of the kernel's rows, which is dynamic: a concat along a row cuts a dimension of static extent", at.Dim)
	}
	plan.RowDim = at.Dim
	edge := int64(0)
	for i, x := range c.Inputs() {
		e := shapeOf(x)[axis]
		if e == ir.Dynamic {
			return ir.OpError(c.Operation, "concatenates a piece of dynamic extent along axis %d, which the kernel's rows index: a concat along a row has pieces of static extent", axis)
		}
		edge += e
		if cut := edge - at.Off; i < len(c.Inputs())-1 && cut > 0 && cut < shape[at.Dim] {
			cuts[cut] = true
		}
	}
	return nil
}

// rowConcatError explains a concat along axis that neither the kernel's
// column nor one of its row indices picks a piece of.
func rowConcatError(axis int) string {
	return fmt.Sprintf("concatenates along axis %d, whose position the kernel computes from several of its indices (a reshape merging it with other dimensions, a strided slice): a kernel reads through a concat along its column, or along a row dimension of its own at an offset", axis)
}
