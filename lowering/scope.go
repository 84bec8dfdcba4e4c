package lowering

import (
	"math"
	"slices"

	"github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/passes"
)

// This file translates the graph ops of an element-wise or row kernel body
// into loop ops, at two levels of one program instance (one row):
//
//   - the row scope computes, as scalars, the values that do not vary
//     along the row: per-row values (reduction results and what is
//     computed from them), scalars and constants;
//   - a loop scope, inside a loop over the row, computes the values that
//     vary along it, W lanes at a time (or one in a scalar loop), and
//     broadcasts the row scope's values it needs.
//
// Values are computed on demand, so a loop computes exactly what its
// stores and reductions need. An op casts its operands to the type it
// computes in (f32, or f64 when f64 is involved, or the integer type
// itself). Its result is held in the type evaluator.hold gives: by default
// an f16, bf16 or f8 result computed in f32 stays f32 (vector<8xf32>) and
// is rounded only where it is stored to a kernel result or cast by a
// graph.cast; with Options.ExactRounding every result is cast back to its
// element type (a bf16 value as vector<8xbf16>), which rounds between any
// two ops as op-by-op evaluation does.

// indexKind says how one dimension of a buffer is indexed at a point
// (row, column) of the iteration space.
type indexKind uint8

const (
	idxZero    indexKind = iota // a broadcast dimension of extent 1
	idxLead                     // the row's index in a leading dimension
	idxLeadRem                  // the same modulo the buffer's extent (a `?` that may be 1)
	idxCol                      // the column: the start of a vector
)

// accessPlan indexes a buffer: per dimension, a kind and (for idxLead,
// idxLeadRem) the iteration dimension it follows.
type accessPlan struct {
	kinds []indexKind
	lead  []int
}

// varies reports whether the plan reads along the row.
func (p accessPlan) varies() bool {
	for _, k := range p.kinds {
		if k == idxCol {
			return true
		}
	}
	return false
}

// planAccess indexes a buffer of shape s in the iteration space iter,
// aligned from the right (NumPy broadcasting), or from the left for the
// per-row values [R...] of a row kernel.
func planAccess(s, iter []int64, fromLeft bool) accessPlan {
	n, m := len(iter), len(s)
	p := accessPlan{kinds: make([]indexKind, m), lead: make([]int, m)}
	off := n - m
	if fromLeft {
		off = 0
	}
	for j, e := range s {
		d := j + off
		p.lead[j] = d
		switch {
		case d == n-1 && !fromLeft:
			if e == 1 && iter[d] != 1 {
				p.kinds[j] = idxZero
			} else {
				p.kinds[j] = idxCol
			}
		case e == 1:
			p.kinds[j] = idxZero
		case e == ir.Dynamic && iter[d] != ir.Dynamic:
			p.kinds[j] = idxLeadRem
		default:
			p.kinds[j] = idxLead
		}
	}
	return p
}

// evaluator holds what the scopes of one kernel share.
type evaluator struct {
	k    *kernelBuilder
	info *passes.KernelInfo
	iter []int64
	// buffers maps the body's block arguments and yielded values to the
	// kernel's buffer arguments.
	buffers map[*ir.Value]*ir.Value
	plans   map[*ir.Value]accessPlan
	varying map[*ir.Value]bool
	// rowIdx are the instance's indices of the leading dimensions.
	rowIdx []*ir.Value
	// rowIndices caches the row part of each buffer's indices.
	rowIndices map[*ir.Value][]*ir.Value
	// one-pass row kernels: the sram buffers of the rows kept, the loop
	// (phase) storing each, the phase computing each value, and the phase
	// of the loop being built.
	cached   map[*ir.Value]*ir.Value
	keptFrom map[*ir.Value]int
	valPhase map[*ir.Value]int
	phase    int
	// cached-schedule row kernels (CPU): the full-row results stored,
	// as they are held, by the loop of an earlier phase, which a later
	// phase reads back from the output (from the core's cache) instead of
	// computing them again from their operands
	storedRow map[*ir.Value]*ir.Value
	// viewRead are the input buffers read only through views.
	viewRead []*ir.Value
	// entryArgs are the body's block arguments, the kernel's inputs.
	entryArgs []*ir.Value
	// partLo and partHi are the rows of the kernel's row dimension
	// info.Views.RowDim that the part being built runs (rowGrid)
	partLo, partHi int64
}

// newEvaluator maps the body of fused to the kernel's buffers and decides
// which values vary along the row.
func newEvaluator(k *kernelBuilder, fused *ir.Operation, info *passes.KernelInfo) *evaluator {
	ev := &evaluator{k: k, info: info, iter: info.Shape, buffers: map[*ir.Value]*ir.Value{},
		plans: map[*ir.Value]accessPlan{}, varying: map[*ir.Value]bool{}, rowIndices: map[*ir.Value][]*ir.Value{},
		cached: map[*ir.Value]*ir.Value{}, keptFrom: map[*ir.Value]int{}, valPhase: map[*ir.Value]int{}}
	entry := fused.Region(0).Entry()
	ev.entryArgs = entry.Args
	for i, a := range entry.Args {
		ev.buffers[a] = k.ins[i]
		if info.AccessOf(a) == passes.AccessView {
			ev.viewRead = append(ev.viewRead, k.ins[i])
			continue
		}
		p := ev.plan(a)
		ev.plans[k.ins[i]] = p
		ev.varying[a] = p.varies()
	}
	for i, y := range yielded(fused) {
		if info.OutViews[y] != nil {
			continue // stored through its views (storeViewed), not planned
		}
		ev.plans[k.outs[i]] = ev.plan(y)
	}
	for i, op := range info.Ops {
		if op.NumResults() == 0 {
			continue
		}
		r := op.Result(0)
		ev.valPhase[r] = info.Phases[i]
		if info.AccessOf(r) == passes.AccessView {
			continue
		}
		if info.AccessOf(r) == passes.AccessStoredView {
			ev.varying[r] = true // a view of a full row, of another shape
			continue
		}
		if isRowReduction(op) {
			ev.valPhase[r]++
		}
		// a value varies along the row when its shape does (a constant of
		// the full shape included)
		ev.varying[r] = ev.plan(r).varies()
	}
	return ev
}

// alongRow returns the kernel's buffers accessed along the row (with
// vectors), inputs then outputs.
func (ev *evaluator) alongRow() []*ir.Value {
	var out []*ir.Value
	for _, buf := range append(append([]*ir.Value(nil), ev.k.ins...), ev.k.outs...) {
		if ev.plans[buf].varies() || slices.Contains(ev.viewRead, buf) {
			out = append(out, buf)
		}
	}
	return out
}

// plan indexes the buffer of body value v as its access in the kernel
// says. In a row kernel the classification decides (a [R, 1] value is
// per-row even when rows have one element); in an element-wise kernel the
// shape, aligned from the right.
func (ev *evaluator) plan(v *ir.Value) accessPlan {
	s := shapeOf(v)
	p := planAccess(s, ev.iter, false)
	if ev.info.Kind != passes.KernelRow {
		return p
	}
	switch ev.info.AccessOf(v) {
	case passes.AccessPerRow:
		if len(s) == len(ev.iter)-1 {
			return planAccess(s, ev.iter, true)
		}
		for j, k := range p.kinds {
			if k == idxCol {
				p.kinds[j] = idxZero
			}
		}
	case passes.AccessScalar:
		for j := range p.kinds {
			p.kinds[j] = idxZero
		}
	}
	return p
}

// yielded returns the values a graph.fused body yields.
func yielded(fused *ir.Operation) []*ir.Value {
	return fused.Region(0).Entry().Last().Operands()
}

// isRowReduction reports whether op is a reduction inside a row kernel
// (the classification has checked it reduces the last axis).
func isRowReduction(op *ir.Operation) bool {
	switch op.Name() {
	case graph.OpReduceSum, graph.OpReduceMax, graph.OpReduceMin:
		return true
	}
	return false
}

// scope is one level at which body values are computed.
type scope struct {
	ev     *evaluator
	b      *ir.Builder
	parent *scope
	width  int64     // lanes of the values: 0 for scalars
	col    *ir.Value // the column (loop scopes)
	// off is the first column of the chunk a loop scope runs over (the
	// online schedule): the column read and written in DRAM is off + col,
	// while sram is indexed by col; nil for loops over the whole row.
	off, absCol *ir.Value
	// point marks the scalar scope of one column that a graph.gather
	// reads in the row scope; it reads DRAM, never a kept row
	point bool
	vals  map[*ir.Value]*ir.Value
	comp  map[*ir.Value]*ir.Value
	splat map[*ir.Value]*ir.Value
	// recip caches the reciprocal of each per-row divisor (divByRowValue).
	recip map[*ir.Value]*ir.Value
	// a view scope (views.go) computes a view's operand: space is the
	// operand's shape, pt the point read in it (the last index the first
	// column of a vector), nil for the kernel's own scopes
	space []int64
	pt    []*ir.Value
	// cm is where the kernel's column is in the scope's space, spanLo the
	// first column of the loop the scope is in, and views the view scopes
	// opened from this one
	cm     passes.ColumnMap
	spanLo int64
	// spanHi is the end of the loop's columns when spanStatic
	spanHi     int64
	spanStatic bool
	views      map[viewKey]*scope
	// rm is where the kernel's indices are in a view scope's space
	// (passes.RowAt per dimension); nil for the kernel's own scopes
	rm []passes.RowAt
}

// rowMap is where the kernel's indices are in s's space.
func (s *scope) rowMap() []passes.RowAt {
	if s.space != nil {
		return s.rm
	}
	return passes.KernelRows(len(s.ev.iter))
}

func (ev *evaluator) rowScope(b *ir.Builder) *scope {
	return &scope{ev: ev, b: b, vals: map[*ir.Value]*ir.Value{}, comp: map[*ir.Value]*ir.Value{}, splat: map[*ir.Value]*ir.Value{},
		recip: map[*ir.Value]*ir.Value{}}
}

// loop builds a loop over the columns [lower, upper) by step with width
// lanes (0: scalars), spread over the instance's threads, carrying inits
// combined with combine. body gets the loop's scope and the carried
// values and returns the next ones. While the loop is built, the row
// scope computes what it needs in front of it. loop returns the results.
func (row *scope) loop(lower, upper, step *ir.Value, width int64, inits []*ir.Value, combine []string,
	body func(s *scope, carried []*ir.Value) []*ir.Value) []*ir.Value {
	return row.loopDist(lower, upper, step, width, inits, combine, "threads", body)
}

// loopDist is loop with the loop's distribution: "threads", or "serial"
// (a matmul kernel's loop over the columns, which its emitters
// distribute as they choose).
func (row *scope) loopDist(lower, upper, step *ir.Value, width int64, inits []*ir.Value, combine []string, dist string,
	body func(s *scope, carried []*ir.Value) []*ir.Value) []*ir.Value {
	end := row.b
	defer func() { row.b = end }()
	f := must(loop.BuildFor(end, row.ev.k.loc, lower, upper, step, inits, dist, combine,
		func(bb *ir.Builder, iv *ir.Value, carried []*ir.Value) ([]*ir.Value, error) {
			iv.Name = "i"
			loopOp := iv.OwnerBlock().ParentOp()
			row.b = ir.NewBuilderBefore(loopOp)
			// the per-row values a nested scope (an online chunk's) computes
			// in its root go before what holds this loop in the root's
			// block, not at the block's end, after it
			if root := row.rootScope(); root != row {
				if at := ancestorIn(loopOp, root.b.InsertionBlock()); at != nil {
					saved := root.b
					root.b = ir.NewBuilderBefore(at)
					defer func() { root.b = saved }()
				}
			}
			s := &scope{ev: row.ev, b: bb, parent: row, width: width, col: iv, off: row.off,
				vals: map[*ir.Value]*ir.Value{}, comp: map[*ir.Value]*ir.Value{}, splat: map[*ir.Value]*ir.Value{},
				cm: passes.ColumnMap{Kind: passes.ColumnAt, Dim: len(row.ev.iter) - 1}, spanLo: max(constIndex(lower), 0),
				spanHi: constIndex(upper), spanStatic: constIndex(lower) >= 0 && constIndex(upper) >= 0}
			return body(s, carried), nil
		}))
	return f.Values()
}

// rootScope is the row scope s is nested in (s itself at the top).
func (s *scope) rootScope() *scope {
	for s.parent != nil {
		s = s.parent
	}
	return s
}

// ancestorIn is op or the op holding it that is in block b (nil: none).
func ancestorIn(op *ir.Operation, b *ir.Block) *ir.Operation {
	for op != nil && op.Block() != b {
		op = op.ParentOp()
	}
	return op
}

// typeOf is the loop type of a value of element e in scope s.
func (s *scope) typeOf(e ir.ElemType) ir.Type { return loop.Vector(s.width, e) }

// elemOf is the element type of a graph or loop value.
func elemOf(v *ir.Value) ir.ElemType {
	e, _ := ir.ElemOf(v.Type())
	return e
}

// narrowFloat reports whether k is a float type computed in f32 and
// rounded to k: f16, bf16 and the f8 types.
func narrowFloat(k ir.ElemKind) bool { return k.IsFloat() && k != ir.F32 && k != ir.F64 }

// hold is the element type an op's result of element type res, computed
// in ce, is held in between ops: ce (f32) for a narrow float by default,
// res itself in exact-rounding mode and for every other type.
func (ev *evaluator) hold(res, ce ir.ElemType) ir.ElemType {
	if !ev.k.exact && narrowFloat(res.Kind) && ce.Kind == ir.F32 {
		return ce
	}
	return res
}

// heldElem is the element type body value v is held in (what hold gives
// its defining op): arguments, constants and rolled arguments as loaded,
// graph.cast results in the cast's type, and an op that yields a narrow
// float computes it in f32.
func (ev *evaluator) heldElem(v *ir.Value) ir.ElemType {
	e := elemOf(v)
	op := v.DefiningOp()
	if op == nil {
		return e
	}
	switch op.Name() {
	case graph.OpCast, graph.OpConstant, graph.OpRoll:
		return e
	case graph.OpGather, graph.OpTranspose, graph.OpReshape, graph.OpBroadcastTo, graph.OpSlice:
		return ev.heldElem(op.Operand(0))
	case graph.OpConcat:
		// the pieces in one type: as held, f32 if they differ
		h := ev.heldElem(op.Operand(0))
		for _, a := range op.Operands()[1:] {
			if !ir.TypeEqual(ev.heldElem(a), h) {
				return ev.hold(e, ir.F32Type)
			}
		}
		return h
	}
	return ev.hold(e, ir.F32Type)
}

// get returns body value v in scope s, computing it if needed.
func (s *scope) get(v *ir.Value) *ir.Value {
	if x, ok := s.vals[v]; ok {
		return x
	}
	ev := s.ev
	var x *ir.Value
	op := v.DefiningOp()
	switch {
	case s.space != nil:
		x = s.viewGet(v)
	case op != nil && op.Name() == graph.OpConstant:
		c := graph.ConstantOp{Operation: op}
		x = ev.k.constant(s.typeOf(elemOf(v)), c.Value().At(0))
	case op != nil && op.Name() == graph.OpMatMul && !s.readsKept(v):
		// (a row of dot products kept on chip is read back below)
		x = s.dot(op)
	case op != nil && op.Name() == graph.OpRoll && !op.Operand(0).IsBlockArg() && passes.RollSource(op.Operand(0)).IsBlockArg():
		// a roll of a view of a kernel operand: the roll's index map
		// composed with the views'
		x = s.throughView(op)
	case op != nil && op.Name() == graph.OpRoll && !op.Operand(0).IsBlockArg():
		x = s.get(op.Operand(0)) // a splat constant, which rotation leaves as it is
	case op != nil && op.Name() == graph.OpRoll:
		x = s.loadRolled(graph.RollOp{Operation: op})
	case s.parent != nil && !ev.varying[v]:
		// a per-row value, computed once in the row scope: the root of a
		// view scope's chain of parents, whose immediate parent may be
		// the (vector) column scope
		root := s.parent
		for root.parent != nil {
			root = root.parent
		}
		x = s.broadcast(root.get(v))
	case op != nil && op.Name() == graph.OpGather:
		x = s.gathered(graph.GatherOp{Operation: op})
	case s.readsKept(v):
		x = must(loop.BuildLoad(s.b, ev.k.loc, ev.cached[v], []*ir.Value{s.col}, s.typeOf(ev.heldElem(v)))).Output()
	case ev.storedRow[v] != nil && ev.valPhase[v] < ev.phase && s.parent != nil && !s.point && s.space == nil:
		buf := ev.storedRow[v]
		x = must(loop.BuildLoad(s.b, ev.k.loc, buf, s.indices(buf), s.typeOf(ev.heldElem(v)))).Output()
	case passes.IsView(op):
		x = s.throughView(op)
	case v.IsBlockArg():
		x = s.load(v)
	case isRowReduction(op) && !ev.varying[op.Operand(0)]:
		// the reduction of a per-row value, over its dimension of extent 1
		x = s.reduceOne(op, s.get(op.Operand(0)))
	case isRowReduction(op):
		fail(op, "is used before its row is reduced (internal error in lower-to-loops)")
	default:
		if ev.varying[v] && s.parent == nil {
			fail(op, "varies along the row but is needed outside the loop over it (internal error in lower-to-loops)")
		}
		args := make([]*ir.Value, op.NumOperands())
		for i, a := range op.Operands() {
			args[i] = s.get(a)
		}
		x = s.emit(op, args)
	}
	s.vals[v] = x
	return x
}

// readsKept reports whether scope s reads v from the row an earlier phase
// kept on chip (a one-pass schedule's row buffer).
func (s *scope) readsKept(v *ir.Value) bool {
	ev := s.ev
	return ev.cached[v] != nil && ev.keptFrom[v] < ev.phase && s.parent != nil && !s.point
}

// broadcast turns a row-scope scalar into this scope's shape.
func (s *scope) broadcast(x *ir.Value) *ir.Value {
	if s.width == 0 {
		return x
	}
	if y, ok := s.splat[x]; ok {
		return y
	}
	y := must(loop.BuildBroadcast(s.b, s.ev.k.loc, x, s.typeOf(elemOf(x)))).Output()
	s.splat[x] = y
	return y
}

// indices returns the indices of buffer buf at the current point: the row
// part computed once per row, then the column.
func (s *scope) indices(buf *ir.Value) []*ir.Value {
	ev := s.ev
	row := s
	for row.parent != nil {
		row = row.parent
	}
	plan := ev.plans[buf]
	idx, ok := ev.rowIndices[buf]
	if !ok {
		idx = make([]*ir.Value, len(plan.kinds))
		for j, kind := range plan.kinds {
			switch kind {
			case idxZero:
				idx[j] = ev.k.index(0)
			case idxLead:
				idx[j] = ev.rowIdx[plan.lead[j]]
			case idxLeadRem:
				idx[j] = must(loop.BuildRemi(row.b, ev.k.loc, ev.rowIdx[plan.lead[j]], ev.k.dim(buf, j))).Output()
			}
		}
		idx = ev.k.scatterIndex(row.b, buf, idx)
		ev.rowIndices[buf] = idx
	}
	out := append([]*ir.Value(nil), idx...)
	for j, kind := range plan.kinds {
		if kind == idxCol {
			out[j] = s.column()
		}
	}
	return out
}

// column is the DRAM column of a loop scope: its column, offset by the
// chunk's first column in an online chunk.
func (s *scope) column() *ir.Value {
	if s.off == nil {
		return s.col
	}
	if s.absCol == nil {
		s.absCol = must(loop.BuildAddi(s.b, s.ev.k.loc, s.off, s.col)).Output()
	}
	return s.absCol
}

// load reads block argument v at the current point.
func (s *scope) load(v *ir.Value) *ir.Value {
	buf := s.ev.buffers[v]
	t := ir.Type(elemOf(v))
	if s.ev.varying[v] {
		t = s.typeOf(elemOf(v))
	}
	x := must(loop.BuildLoad(s.b, s.ev.k.loc, buf, s.indices(buf), t)).Output()
	if v.Name != "" {
		x.Name = v.Name
	}
	return x
}

// loadRolled reads the operand of a graph.roll, a block argument read in
// full, at the rotated column: element j of the result is element
// (j + n - shift mod n) mod n of the operand's row. The kernel's vector
// width divides the shift, so a vector of the result is one contiguous
// vector of the operand.
func (s *scope) loadRolled(r graph.RollOp) *ir.Value {
	v := r.Input()
	if !v.IsBlockArg() || s.parent == nil {
		fail(r.Operation, "is not a load of a kernel operand along the row (internal error in lower-to-loops)")
	}
	ev := s.ev
	buf := ev.buffers[v]
	shape := shapeOf(v)
	n := shape[len(shape)-1]
	idx := s.indices(buf)
	last := len(idx) - 1
	if off := ((n-r.Shift())%n + n) % n; off != 0 {
		idx[last] = s.rolledColumn(s.b, idx[last], off, n, shape)
	}
	x := must(loop.BuildLoad(s.b, ev.k.loc, buf, idx, s.typeOf(elemOf(v)))).Output()
	x.Name = "rolled"
	return x
}

// gathered computes graph.gather's x[row, t[row]] in the row scope: this
// row's index, clamped into the row (loop.clamp_index), is the column of
// a scalar scope that computes the data there as a loop over the row
// would, from DRAM: one load of each operand it reads, at that column.
// It never reads a row kept in sram, which the threads of an earlier loop
// may still be writing.
func (s *scope) gathered(g graph.GatherOp) *ir.Value {
	ev := s.ev
	if s.parent != nil || ev.info.Kind != passes.KernelRow {
		fail(g.Operation, "is not read once per row (internal error in lower-to-loops)")
	}
	col := must(loop.BuildClampIndex(s.b, g.Loc, s.get(g.Indices()), ev.k.index(ev.info.RowLen))).Output()
	col.Name = "gathered"
	pt := &scope{ev: ev, b: s.b, parent: s, col: col, point: true,
		vals: map[*ir.Value]*ir.Value{}, comp: map[*ir.Value]*ir.Value{}, splat: map[*ir.Value]*ir.Value{}}
	return pt.get(g.Input())
}

// rollWidth narrows a vector width w until it divides the shift of every
// graph.roll among ops, so that each rotated vector is contiguous.
func rollWidth(w int64, ops []*ir.Operation) int64 {
	for _, op := range ops {
		if r, ok := graph.AsRoll(op); ok {
			for w > 1 && r.Shift()%w != 0 {
				w /= 2
			}
		}
	}
	return w
}

// store writes x (of this scope's shape) to output buffer buf, rounding
// it to the buffer's element type.
func (s *scope) store(x, buf *ir.Value) {
	x = s.cast(x, buf.Type().(ir.MemRefType).Elem)
	must(loop.BuildStore(s.b, s.ev.k.loc, x, buf, s.indices(buf)))
}

// ---------------------------------------------------------------------------
// Graph ops as loop ops

// elementwiseOps maps the graph dialect's element-wise primitives to the
// loop op computing them.
var elementwiseOps = map[string]string{
	graph.OpNeg: loop.OpNeg, graph.OpAbs: loop.OpAbs, graph.OpExp: loop.OpExp, graph.OpExp2: loop.OpExp2,
	graph.OpLog: loop.OpLog, graph.OpLog2: loop.OpLog2, graph.OpLog1p: loop.OpLog1p, graph.OpExpm1: loop.OpExpm1,
	graph.OpSqrt: loop.OpSqrt, graph.OpRsqrt: loop.OpRsqrt, graph.OpReciprocal: loop.OpReciprocal,
	graph.OpTanh: loop.OpTanh, graph.OpSigmoid: loop.OpSigmoid, graph.OpSilu: loop.OpSilu, graph.OpGelu: loop.OpGelu,
	graph.OpRelu: loop.OpRelu, graph.OpSin: loop.OpSin, graph.OpCos: loop.OpCos, graph.OpFloor: loop.OpFloor,
	graph.OpCeil: loop.OpCeil, graph.OpRound: loop.OpRound,
	graph.OpAdd: loop.OpAdd, graph.OpSub: loop.OpSub, graph.OpMul: loop.OpMul, graph.OpDiv: loop.OpDiv,
	graph.OpMax: loop.OpMax, graph.OpMin: loop.OpMin, graph.OpPow: loop.OpPow,
}

// computeElem is the type an op with operand and result elements elems
// computes in: f64 if one is f64, the integer type for integers, f32
// otherwise.
func computeElem(elems ...ir.ElemType) ir.ElemType {
	allInt := true
	for _, e := range elems {
		if e.Kind == ir.F64 {
			return ir.F64Type
		}
		if !e.Kind.IsInt() {
			allInt = false
		}
	}
	if allInt {
		return elems[0]
	}
	return ir.F32Type
}

// compute returns x cast to element e (cached per scope).
func (s *scope) compute(x *ir.Value, e ir.ElemType) *ir.Value {
	if elemOf(x) == e {
		return x
	}
	if y, ok := s.comp[x]; ok && elemOf(y) == e {
		return y
	}
	y := s.cast(x, e)
	s.comp[x] = y
	return y
}

// cast converts x to element e.
func (s *scope) cast(x *ir.Value, e ir.ElemType) *ir.Value {
	if elemOf(x) == e {
		return x
	}
	return must(loop.BuildCast(s.b, s.ev.k.loc, x, loop.WithElem(x.Type(), e))).Output()
}

// op creates a loop op with inferred or given result type.
func (s *scope) op(name string, args []*ir.Value, result ir.Type, attrs ir.AttrDict) *ir.Value {
	o := s.b.Insert(ir.NewOperation(name, s.ev.k.loc, args, []ir.Type{result}, attrs, 0))
	if err := o.Def().Verify(o); err != nil {
		panic(lowerError{err})
	}
	return o.Result(0)
}

// emit computes graph op op on operands args (in this scope's shape) and
// returns its result in the result's element type.
func (s *scope) emit(op *ir.Operation, args []*ir.Value) *ir.Value {
	res := elemOf(op.Result(0))
	switch op.Name() {
	case graph.OpCast:
		return s.cast(args[0], res)
	case graph.OpSelect:
		// the branches in one type: both as held, f32 if either is
		h := s.ev.hold(res, computeElem(elemOf(args[1]), elemOf(args[2]), res))
		a, b := s.compute(args[1], h), s.compute(args[2], h)
		return must(loop.BuildSelect(s.b, s.ev.k.loc, args[0], a, b)).Output()
	case graph.OpCmp:
		ce := computeElem(elemOf(args[0]), elemOf(args[1]))
		a, b := s.compute(args[0], ce), s.compute(args[1], ce)
		return must(loop.BuildCmp(s.b, s.ev.k.loc, a, b, graph.CmpOp{Operation: op}.Predicate())).Output()
	case graph.OpClamp:
		c := graph.ClampOp{Operation: op}
		ce := computeElem(elemOf(args[0]), res)
		x := s.compute(args[0], ce)
		lo, hi := c.Min(), c.Max()
		if ce.Kind.IsInt() {
			lo, hi = math.Ceil(lo), math.Floor(hi)
		}
		x = s.op(loop.OpMax, []*ir.Value{x, s.ev.k.constant(x.Type(), lo)}, x.Type(), nil)
		x = s.op(loop.OpMin, []*ir.Value{x, s.ev.k.constant(x.Type(), hi)}, x.Type(), nil)
		return s.cast(x, s.ev.hold(res, ce))
	}
	if y := s.divByRowValue(op, args); y != nil {
		return y
	}
	name, ok := elementwiseOps[op.Name()]
	if !ok {
		fail(op, "cannot be lowered inside an element-wise or row kernel")
	}
	elems := []ir.ElemType{res}
	for _, a := range args {
		elems = append(elems, elemOf(a))
	}
	ce := computeElem(elems...)
	cargs := make([]*ir.Value, len(args))
	for i, a := range args {
		cargs[i] = s.compute(a, ce)
	}
	var attrs ir.AttrDict
	if op.Name() == graph.OpGelu {
		if a := (graph.GeluOp{Operation: op}).Approximate(); a != "none" {
			attrs.Set("approximate", ir.StringAttr(a))
		}
	}
	return s.cast(s.op(name, cargs, cargs[0].Type(), attrs), s.ev.hold(res, ce))
}

// reciprocalFinite reports whether divisor v is known to have a finite
// f32 reciprocal wherever the quotient is finite: a constant of magnitude
// 2^-120 or more (or zero), or a sum of exponentials of a row less its
// maximum (softmax's denominator, at least 1). A sum of exponentials that
// may all be subnormal (exp(x) / sum(exp(x)) written without the maximum)
// has a reciprocal that overflows where the quotients are 1, so its
// division stays a division.
func reciprocalFinite(v *ir.Value) bool {
	op := v.DefiningOp()
	if c, ok := graph.AsConstant(op); ok && c.Value().IsSplat() {
		x := math.Abs(c.Value().At(0))
		return x == 0 || x >= 0x1p-120
	}
	if op == nil || !isRowReduction(op) || op.Name() != graph.OpReduceSum {
		return false
	}
	e := op.Operand(0).DefiningOp()
	if e == nil || (e.Name() != graph.OpExp && e.Name() != graph.OpExp2) {
		return false
	}
	d := e.Operand(0).DefiningOp()
	if d == nil || d.Name() != graph.OpSub {
		return false
	}
	return isRowMaxOf(d.Operand(1), d.Operand(0))
}

// isRowMaxOf reports whether m is the maximum of the rows of a, or that
// maximum with its infinities replaced (legalize-numerics' guard: a select
// of it and a constant).
func isRowMaxOf(m, a *ir.Value) bool {
	op := m.DefiningOp()
	if op == nil {
		return false
	}
	if op.Name() == graph.OpSelect {
		return isRowMaxOf(op.Operand(1), a) || isRowMaxOf(op.Operand(2), a)
	}
	return op.Name() == graph.OpReduceMax && isRowReduction(op) && op.Operand(0) == a
}

// divByRowValue lowers a division, in the loop over the row of a row
// kernel, of a value by a per-row value (softmax's normalisation by its
// sum, a mean by a count) as a multiplication by the divisor's
// reciprocal, computed once per row: a division per element costs ten
// times a multiplication on every backend. The product is within 1.5 ULP
// of f32 of the quotient, so only the default rounding does it, where
// values are f32 between ops and are rounded to a narrower type where
// stored; exact rounding keeps the division. It returns nil when the
// division is not of that form. A view scope keeps its divisions: what
// only views read is not classified per row (ev.varying does not know
// it), and its loads index the view's point, not the row's.
func (s *scope) divByRowValue(op *ir.Operation, args []*ir.Value) *ir.Value {
	ev := s.ev
	if op.Name() != graph.OpDiv || ev.k.exact || ev.info.Kind != passes.KernelRow || s.parent == nil || s.space != nil ||
		!ev.varying[op.Operand(0)] || ev.varying[op.Operand(1)] || !reciprocalFinite(op.Operand(1)) {
		return nil
	}
	res := elemOf(op.Result(0))
	ce := computeElem(res, elemOf(args[0]), elemOf(args[1]))
	if ce.Kind != ir.F32 {
		return nil
	}
	row := s.parent
	d := row.compute(row.get(op.Operand(1)), ce)
	r, ok := row.recip[d]
	if !ok {
		r = row.op(loop.OpDiv, []*ir.Value{ev.k.constant(d.Type(), 1), d}, d.Type(), nil)
		row.recip[d] = r
	}
	x := s.compute(args[0], ce)
	return s.cast(s.op(loop.OpMul, []*ir.Value{x, s.broadcast(r)}, x.Type(), nil), ev.hold(res, ce))
}

// reduceOne reduces one element x as a reduction from its identity does:
// combine(identity, x), so a sum of -0 is +0 as the graph interpreter
// computes it.
func (s *scope) reduceOne(op *ir.Operation, x *ir.Value) *ir.Value {
	kind := reduceKind(op)
	res := elemOf(op.Result(0))
	ce := computeElem(elemOf(x), res)
	x = s.compute(x, ce)
	id := s.ev.k.constant(x.Type(), identity(kind, ce))
	return s.cast(s.op(combineOp(kind), []*ir.Value{id, x}, x.Type(), nil), s.ev.hold(res, ce))
}

// identity is the start value of a reduction of kind over element e.
func identity(kind string, e ir.ElemType) float64 {
	switch kind {
	case "max":
		if e.Kind.IsInt() {
			lo, _ := e.Kind.IntRange()
			return float64(lo)
		}
		return math.Inf(-1)
	case "min":
		if e.Kind.IsInt() {
			_, hi := e.Kind.IntRange()
			return float64(hi)
		}
		return math.Inf(1)
	}
	return 0
}

// reduceKind is "add", "max" or "min" for a graph reduction.
func reduceKind(op *ir.Operation) string {
	switch op.Name() {
	case graph.OpReduceMax:
		return "max"
	case graph.OpReduceMin:
		return "min"
	}
	return "add"
}

// combineOp is the loop op combining two values of a reduction.
func combineOp(kind string) string {
	switch kind {
	case "max":
		return loop.OpMax
	case "min":
		return loop.OpMin
	}
	return loop.OpAdd
}
