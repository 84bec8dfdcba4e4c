package loop

import (
	"slices"

	"github.com/tensorforge/tensorforge/dialects/ods"
	"github.com/tensorforge/tensorforge/ir"
)

// This file holds the rules of the op classes of defs.Dialect, one
// function per class. The generated verifiers have checked the operand
// and result constraints (index, memref, scalar or vector) before these
// run.

// q quotes a type for a diagnostic: 'memref<8xf32, sram>'.
func q(t ir.Type) string { return ods.QuoteType(t) }

// width is the lane count of a vector type, or 0 for a scalar.
func width(t ir.Type) int64 {
	if v, ok := t.(ir.VectorType); ok && len(v.Shape) == 1 {
		return v.Shape[0]
	}
	return 0
}

// Lanes is the lane count of a value of type t: a vector's width, 1 for a
// scalar.
func Lanes(t ir.Type) int64 { return max(width(t), 1) }

// elemKind is the element kind of a scalar or shaped type.
func elemKind(t ir.Type) ir.ElemKind {
	e, _ := ir.ElemOf(t)
	return e.Kind
}

// WithElem returns a scalar or vector type of t's shape with element e:
// WithElem(vector<8xbf16>, f32) = vector<8xf32>.
func WithElem(t ir.Type, e ir.ElemType) ir.Type {
	if w := width(t); w > 0 {
		return ir.VectorType{Shape: []int64{w}, Elem: e}
	}
	return e
}

// Vector returns `vector<W x e>`, or the scalar e when w is 0.
func Vector(w int64, e ir.ElemType) ir.Type {
	if w <= 0 {
		return e
	}
	return ir.VectorType{Shape: []int64{w}, Elem: e}
}

// enclosing returns the nearest ancestor of op called name, or nil.
func enclosing(op *ir.Operation, name string) *ir.Operation {
	for p := op.ParentOp(); p != nil; p = p.ParentOp() {
		if p.Name() == name {
			return p
		}
	}
	return nil
}

// singleBlock returns the one block of region 0 of op.
//
//	expects a body of one block, but found 2
func singleBlock(op *ir.Operation) (*ir.Block, error) {
	blocks := op.Region(0).Blocks
	if len(blocks) != 1 {
		return nil, ir.OpError(op, "expects a body of one block, but found %d", len(blocks))
	}
	return blocks[0], nil
}

// DynamicExtents counts the `?` extents of the buffers: the number of
// trailing index arguments a kernel over them takes.
func DynamicExtents(buffers []ir.Type) int {
	n := 0
	for _, t := range buffers {
		if s, ok := ir.ShapeOf(t); ok {
			for _, d := range s {
				if d == ir.Dynamic {
					n++
				}
			}
		}
	}
	return n
}

// verifyKernel: a module-level op whose block takes num_inputs +
// num_outputs dram buffers, then one index per `?` of theirs; the body
// computes constants and indices, runs one loop.parallel (the grid), or
// several independent ones (its parts, parts.go), and ends in loop.return.
//
//	expects parent op 'builtin.module'
//	block argument #1 must be a memref in dram, but got 'memref<8xf32, sram>'
//	expects 2 index arguments (one per dynamic extent of its buffers), but found 1
//	expects a 'loop.parallel' in its body (the launch grid), but found none
//	'loop.store' must be inside a 'loop.parallel' of the kernel
//	its parts #0 and #1 both access '%y', which part #0 writes; parts must be independent
func verifyKernel(op *ir.Operation) error {
	k := KernelOp{op}
	if p := op.ParentOp(); p != nil && p.Name() != ir.ModuleOpName {
		return ir.OpError(op, "expects parent op '%s'", ir.ModuleOpName)
	}
	nin, nout := k.NumInputs(), k.NumOutputs()
	if nin < 0 || nout < 0 {
		return ir.OpError(op, "expects non-negative num_inputs and num_outputs, but got %d and %d", nin, nout)
	}
	if s, ok := k.SramBytes(); ok && s < 0 {
		return ir.OpError(op, "expects a non-negative sram_bytes, but got %d", s)
	}
	body, err := singleBlock(op)
	if err != nil {
		return err
	}
	nbuf := int(nin + nout)
	if len(body.Args) < nbuf {
		return ir.OpError(op, "expects %d buffer arguments (num_inputs + num_outputs), but found %d", nbuf, len(body.Args))
	}
	var bufs []ir.Type
	for i, a := range body.Args[:nbuf] {
		if m, ok := a.Type().(ir.MemRefType); !ok || m.Space != ir.DRAM {
			return ir.OpError(op, "block argument #%d must be a memref in dram, but got %s", i, q(a.Type()))
		}
		bufs = append(bufs, a.Type())
	}
	ndyn := DynamicExtents(bufs)
	if len(body.Args)-nbuf != ndyn {
		return ir.OpError(op, "expects %d index arguments (one per dynamic extent of its buffers), but found %d", ndyn, len(body.Args)-nbuf)
	}
	for i, a := range body.Args[nbuf:] {
		if elemKind(a.Type()) != ir.Index || width(a.Type()) != 0 {
			return ir.OpError(op, "block argument #%d must be index (an extent), but got %s", nbuf+i, q(a.Type()))
		}
	}
	if _, ok := AsReturn(body.Last()); !ok {
		return ir.OpError(op, "expects the body to end with '%s'", OpReturn)
	}
	var grids []*ir.Operation
	for o := body.First(); o != nil; o = o.Next() {
		switch {
		case o.Name() == OpParallel:
			grids = append(grids, o)
		case o.Name() == OpReturn || o.HasTrait(ir.Pure):
		default:
			return ir.OpError(o, "must be inside a '%s' of the kernel", OpParallel)
		}
	}
	if len(grids) == 0 {
		return ir.OpError(op, "expects a '%s' in its body (the launch grid), but found none", OpParallel)
	}
	return verifyParts(op, grids)
}

// LookupKernel returns the loop.kernel called name in the module holding
// op (or op itself if it is the module).
func LookupKernel(op *ir.Operation, name string) (KernelOp, bool) {
	m := op
	for m != nil && m.Name() != ir.ModuleOpName {
		m = m.ParentOp()
	}
	if m == nil || m.NumRegions() != 1 || len(m.Region(0).Blocks) != 1 {
		return KernelOp{}, false
	}
	// an index lookup: a module launches each of its many kernels by name
	if o := m.Region(0).Blocks[0].LookupSymbol(name); o != nil {
		if k, ok := AsKernel(o); ok {
			return k, true
		}
	}
	return KernelOp{}, false
}

// verifyLaunch: the kernel exists and the operands match its arguments.
//
//	refers to kernel 'k9', which is not a 'loop.kernel' of the module
//	passes 2 operands, but kernel 'k0' takes 3 arguments
//	operand #1 has type 'memref<4xf32, dram>', but kernel 'k0' takes 'memref<8xf32, dram>'
func verifyLaunch(op *ir.Operation) error {
	l := LaunchOp{op}
	if err := verifyGuard(l); err != nil {
		return err
	}
	if op.Block() == nil {
		return nil // a detached launch is checked once inserted
	}
	k, ok := LookupKernel(op, l.Kernel())
	if !ok {
		return ir.OpError(op, "refers to kernel '%s', which is not a '%s' of the module", l.Kernel(), OpKernel)
	}
	if k.NumRegions() == 0 || k.Body().Entry() == nil {
		return nil // the kernel's own verifier reports it
	}
	body := k.Body().Entry()
	if len(body.Args) != op.NumOperands() {
		return ir.OpError(op, "passes %d operands, but kernel '%s' takes %d arguments", op.NumOperands(), l.Kernel(), len(body.Args))
	}
	for i, a := range body.Args {
		if got := op.Operand(i).Type(); !ir.TypeEqual(got, a.Type()) {
			return ir.OpError(op, "operand #%d has type %s, but kernel '%s' takes %s", i, q(got), l.Kernel(), q(a.Type()))
		}
		if countsSync(a) && !isZeroed(op.Operand(i)) {
			return ir.OpError(op, "operand #%d holds the counters of kernel '%s''s %s or %s, so it must be allocated by a '%s' with zeroed = true (they are zero when a launch begins)",
				i, l.Kernel(), OpTicket, OpGroupSync, OpAllocDRAM)
		}
	}
	return nil
}

// countsSync reports whether kernel argument a is the counter buffer of
// a loop.ticket or loop.group_sync.
func countsSync(a *ir.Value) bool {
	for _, u := range a.Uses() {
		if n := u.Owner.Name(); (n == OpTicket || n == OpGroupSync) && u.Index == 0 {
			return true
		}
	}
	return false
}

// isZeroed reports whether v is allocated by a loop.alloc_dram with
// zeroed = true.
func isZeroed(v *ir.Value) bool {
	a, ok := AsAllocDRAM(v.DefiningOp())
	if !ok {
		return false
	}
	z, has := a.Zeroed()
	return has && z
}

// inferDim: `%n = loop.dim %x {axis = 0} : (memref<?x8xf32, dram>) -> index`.
//
//	axis 2 is out of range for 'memref<?x8xf32, dram>'
func inferDim(op *ir.Operation) ([]ir.Type, error) {
	d := DimOp{op}
	m, _ := d.Memref().Type().(ir.MemRefType)
	if a := d.Axis(); a < 0 || a >= int64(len(m.Shape)) {
		return nil, ir.OpError(op, "axis %d is out of range for %s", a, q(m))
	}
	return []ir.Type{ir.IndexType}, nil
}

// verifyAllocDRAM: one extent per `?`, and a size that holds a static buffer.
//
//	expects 1 extent operands (one per '?' of 'memref<?x8xf32, dram>'), but found 0
//	size 16 is smaller than the 32 bytes of 'memref<8xf32, dram>'
func verifyAllocDRAM(op *ir.Operation) error {
	a := AllocDRAMOp{op}
	m, _ := a.Output().Type().(ir.MemRefType)
	if n := DynamicExtents([]ir.Type{m}); n != op.NumOperands() {
		return ir.OpError(op, "expects %d extent operands (one per '?' of %s), but found %d", n, q(m), op.NumOperands())
	}
	if off, ok := a.Offset(); ok && off < 0 {
		return ir.OpError(op, "expects a non-negative offset, but got %d", off)
	}
	if size, ok := a.Size(); ok {
		if size < 0 {
			return ir.OpError(op, "expects a non-negative size, but got %d", size)
		}
		if bytes, static := ir.ByteSizeOf(m); static && size < bytes {
			return ir.OpError(op, "size %d is smaller than the %d bytes of %s", size, bytes, q(m))
		}
	}
	return nil
}

// verifyParallel: the grid of a kernel, one index argument, a bare yield.
//
//	expects parent op 'loop.kernel'
//	expects one block argument of type index (the induction variable)
//	expects the body to end with 'loop.yield' without operands
func verifyParallel(op *ir.Operation) error {
	if p := op.ParentOp(); p != nil && p.Name() != OpKernel {
		return ir.OpError(op, "expects parent op '%s'", OpKernel)
	}
	body, err := singleBlock(op)
	if err != nil {
		return err
	}
	if len(body.Args) != 1 || elemKind(body.Args[0].Type()) != ir.Index || width(body.Args[0].Type()) != 0 {
		return ir.OpError(op, "expects one block argument of type index (the induction variable)")
	}
	if y, ok := AsYield(body.Last()); !ok || y.NumOperands() != 0 {
		return ir.OpError(op, "expects the body to end with '%s' without operands", OpYield)
	}
	return checkBounds(op)
}

// ConstIndex returns the value of v when a loop.const of an integer value
// defines it.
func ConstIndex(v *ir.Value) (int64, bool) {
	c, ok := AsConst(v.DefiningOp())
	if !ok {
		return 0, false
	}
	switch a := c.Attr("value").(type) {
	case ir.IntAttr:
		return a.Value, true
	case ir.FloatAttr:
		if n := int64(a.Value); float64(n) == a.Value {
			return n, true
		}
	}
	return 0, false
}

// checkBounds checks the constant bounds of a loop.for or loop.parallel
// (operands 0, 1, 2: lower, upper, step). Every backend counts the
// induction variable up from lower by step, so a step that is not
// positive would never end, and a negative lower bound indexes before
// the start of every buffer.
//
//	has a step of 0; the step must be positive
//	has a negative lower bound (-4); indices start at 0
func checkBounds(op *ir.Operation) error {
	if step, ok := ConstIndex(op.Operand(2)); ok && step <= 0 {
		return ir.OpError(op, "has a step of %d; the step must be positive", step)
	}
	if lo, ok := ConstIndex(op.Operand(0)); ok && lo < 0 {
		return ir.OpError(op, "has a negative lower bound (%d); indices start at 0", lo)
	}
	return nil
}

// ivRange returns the first and last value the induction variable v
// takes, when v is the induction variable of a loop.for or loop.parallel
// with constant bounds that runs at least once.
func ivRange(v *ir.Value) (first, last int64, ok bool) {
	if !v.IsBlockArg() || v.OwnerBlock() == nil || len(v.OwnerBlock().Args) == 0 || v.OwnerBlock().Args[0] != v {
		return 0, 0, false
	}
	loopOp := v.OwnerBlock().ParentOp()
	if loopOp == nil || (loopOp.Name() != OpFor && loopOp.Name() != OpParallel) || loopOp.NumOperands() < 3 {
		return 0, 0, false
	}
	lo, ok1 := ConstIndex(loopOp.Operand(0))
	hi, ok2 := ConstIndex(loopOp.Operand(1))
	step, ok3 := ConstIndex(loopOp.Operand(2))
	if !ok1 || !ok2 || !ok3 || step <= 0 || hi <= lo {
		return 0, 0, false
	}
	return lo, lo + (hi-lo-1)/step*step, true
}

// Combine kinds of a threads loop.
var combineKinds = []string{"add", "max", "min"}

// Combine returns the `combine` kinds of a loop.for, one per result; nil
// when it has none.
func (op ForOp) Combine() []string {
	arr, ok := op.Attr("combine").(ir.ArrayAttr)
	if !ok {
		return nil
	}
	out := make([]string, len(arr))
	for i, a := range arr {
		s, _ := a.(ir.StringAttr)
		out[i] = string(s)
	}
	return out
}

// verifyFor: body arguments and yielded values match the inits and
// results; combine is given exactly for a threads loop with results.
//
//	expects 2 block arguments (the induction variable and one per init), but found 1
//	block argument #0 must be index (the induction variable), but got 'f32'
//	type of block argument #1 ('f32') does not match init #0 ('vector<8xf32>')
//	result #0 has type 'f32', but init #0 has 'vector<8xf32>'
//	yields 0 values, but has 1 results
//	requires 'combine' with one kind per result ("add", "max" or "min")
//	has 'combine', which only a loop with dist = "threads" and results takes
//	may not be nested in another loop with dist = "threads"
func verifyFor(op *ir.Operation) error {
	f := ForOp{op}
	for _, na := range op.Attrs {
		if na.Name != "dist" && na.Name != "combine" {
			return ir.OpError(op, "unknown attribute '%s'", na.Name)
		}
	}
	if err := checkBounds(op); err != nil {
		return err
	}
	inits := f.Inits()
	if len(inits) != op.NumResults() {
		return ir.OpError(op, "has %d inits, but %d results", len(inits), op.NumResults())
	}
	for i, v := range inits {
		if !ir.TypeEqual(v.Type(), op.Result(i).Type()) {
			return ir.OpError(op, "result #%d has type %s, but init #%d has %s", i, q(op.Result(i).Type()), i, q(v.Type()))
		}
	}
	body, err := singleBlock(op)
	if err != nil {
		return err
	}
	if len(body.Args) != 1+len(inits) {
		return ir.OpError(op, "expects %d block arguments (the induction variable and one per init), but found %d", 1+len(inits), len(body.Args))
	}
	if t := body.Args[0].Type(); elemKind(t) != ir.Index || width(t) != 0 {
		return ir.OpError(op, "block argument #0 must be index (the induction variable), but got %s", q(t))
	}
	for i, v := range inits {
		if a := body.Args[i+1].Type(); !ir.TypeEqual(a, v.Type()) {
			return ir.OpError(op, "type of block argument #%d (%s) does not match init #%d (%s)", i+1, q(a), i, q(v.Type()))
		}
	}
	y, ok := AsYield(body.Last())
	if !ok {
		return ir.OpError(op, "expects the body to end with '%s'", OpYield)
	}
	if y.NumOperands() != op.NumResults() {
		return ir.OpError(op, "yields %d values, but has %d results", y.NumOperands(), op.NumResults())
	}
	for i, v := range y.Values() {
		if want := op.Result(i).Type(); !ir.TypeEqual(v.Type(), want) {
			return ir.OpError(op, "type of yielded value #%d (%s) does not match result #%d (%s)", i, q(v.Type()), i, q(want))
		}
	}
	threads := f.Dist() == "threads"
	if c := op.Attr("combine"); c != nil {
		if !threads || op.NumResults() == 0 {
			return ir.OpError(op, "has 'combine', which only a loop with dist = \"threads\" and results takes")
		}
		arr, ok := c.(ir.ArrayAttr)
		if !ok || len(arr) != op.NumResults() {
			return ir.OpError(op, "requires 'combine' with one kind per result (%s)", ods.EnumList(combineKinds))
		}
		for i, a := range arr {
			s, ok := a.(ir.StringAttr)
			if !ok || !slices.Contains(combineKinds, string(s)) {
				return ir.OpError(op, "combine kind #%d must be one of %s, but got %s", i, ods.EnumList(combineKinds), a)
			}
			if t := op.Result(i).Type(); elemKind(t) == ir.Index || elemKind(t) == ir.InvalidElem || !isScalarOrVector(t) {
				return ir.OpError(op, "result #%d of type %s cannot be combined over threads (a scalar or vector is needed)", i, q(t))
			}
		}
	} else if threads && op.NumResults() > 0 {
		return ir.OpError(op, "requires 'combine' with one kind per result (%s)", ods.EnumList(combineKinds))
	}
	if threads {
		for p := op.ParentOp(); p != nil; p = p.ParentOp() {
			if pf, ok := AsFor(p); ok && pf.Dist() == "threads" {
				return ir.OpError(op, "may not be nested in another loop with dist = \"threads\"")
			}
		}
	}
	return nil
}

func isScalarOrVector(t ir.Type) bool { return ods.ScalarOrVector.Allows(t) }

// verifyYield: the parent is a loop.
//
//	expects parent op 'loop.for' or 'loop.parallel'
func verifyYield(op *ir.Operation) error {
	if p := op.ParentOp(); p == nil || (p.Name() != OpFor && p.Name() != OpParallel) {
		return ir.OpError(op, "expects parent op '%s' or '%s'", OpFor, OpParallel)
	}
	return nil
}

// verifyReturn: the parent is a kernel.
//
//	expects parent op 'loop.kernel'
func verifyReturn(op *ir.Operation) error {
	if p := op.ParentOp(); p == nil || p.Name() != OpKernel {
		return ir.OpError(op, "expects parent op '%s'", OpKernel)
	}
	return nil
}

// verifyAlloc: a static sram buffer inside a kernel.
//
//	expects a static shape, but got 'memref<?xf32, sram>'
//	must be inside a 'loop.kernel'
func verifyAlloc(op *ir.Operation) error {
	a := AllocOp{op}
	m, _ := a.Output().Type().(ir.MemRefType)
	if ir.HasDynamicDim(m.Shape) {
		return ir.OpError(op, "expects a static shape, but got %s", q(m))
	}
	if off, ok := a.Offset(); ok && off < 0 {
		return ir.OpError(op, "expects a non-negative offset, but got %d", off)
	}
	if op.Block() != nil && enclosing(op, OpKernel) == nil {
		return ir.OpError(op, "must be inside a '%s'", OpKernel)
	}
	return nil
}

// checkAccess checks the indices and the accessed value of a load or store
// whose lanes run along dimension axis of the buffer.
//
//	expects 2 indices for 'memref<?x8xf32, dram>', but found 1
//	accesses 'vector<8xbf16>', but the buffer holds 'f32'
//	reads 16 lanes, more than the 8 of the last dimension of 'memref<4x8xf32, dram>'
func checkAccess(op *ir.Operation, m ir.MemRefType, indices []*ir.Value, value ir.Type, axis int) error {
	if nidx := len(indices); nidx != len(m.Shape) {
		return ir.OpError(op, "expects %d indices for %s, but found %d", len(m.Shape), q(m), nidx)
	}
	if elemKind(value) != m.Elem.Kind {
		return ir.OpError(op, "accesses %s, but the buffer holds %s", q(value), q(m.Elem))
	}
	if w := width(value); w > 0 {
		if len(m.Shape) == 0 {
			return ir.OpError(op, "accesses %s in a rank-0 buffer, which holds one element", q(value))
		}
		if e := m.Shape[axis]; e != ir.Dynamic && w > e {
			if axis == len(m.Shape)-1 {
				return ir.OpError(op, "accesses %d lanes, more than the %d of the last dimension of %s", w, e, q(m))
			}
			return ir.OpError(op, "accesses %d lanes, more than the %d of dimension #%d of %s", w, e, axis, q(m))
		}
	}
	return checkInRange(op, m, indices, value, axis)
}

// checkInRange checks the indices that are induction variables of loops
// with constant bounds against the static extents of the buffer: the
// last iteration's access (its lanes included, along dimension axis)
// must stay inside it.
//
//	index #1 goes up to 64 (the loop's last iteration), past the 64 elements of dimension #1 of 'memref<4x64xf32, dram>'
func checkInRange(op *ir.Operation, m ir.MemRefType, indices []*ir.Value, value ir.Type, axis int) error {
	for d, idx := range indices {
		extent := m.Shape[d]
		if extent == ir.Dynamic {
			continue
		}
		_, last, ok := ivRange(idx)
		if !ok {
			continue
		}
		end := last + 1
		if d == axis {
			if w := width(value); w > 0 {
				end = last + w
			}
		}
		if end > extent {
			if end-1 == last {
				return ir.OpError(op, "index #%d goes up to %d (the loop's last iteration), past the %d elements of dimension #%d of %s", d, last, extent, d, q(m))
			}
			return ir.OpError(op, "index #%d goes up to %d (the loop's last iteration), and its %d lanes end at %d, past the %d elements of dimension #%d of %s", d, last, end-last, end, extent, d, q(m))
		}
	}
	return nil
}

// verifyLoad: `%v = loop.load %x, %r, %i : (memref<?x8xbf16, dram>, index, index) -> vector<8xbf16>`.
//
//	'axis' 2 is not a dimension of 'memref<4x8xf32, dram>'
//	'axis' is given to an access of 'bf16', which has no lanes
func verifyLoad(op *ir.Operation) error {
	l := LoadOp{op}
	m, _ := l.Memref().Type().(ir.MemRefType)
	axis, err := LoadAxis(l)
	if err != nil {
		return err
	}
	return checkAccess(op, m, l.Indices(), l.Output().Type(), axis)
}

// LoadAxis is the dimension of its buffer that the lanes of load l run
// along: its `axis`, or the last.
func LoadAxis(l LoadOp) (int, error) {
	a, ok := l.Axis()
	return lanesAxis(l.Operation, l.Memref(), l.Output().Type(), a, ok)
}

// StoreAxis is LoadAxis for store s.
func StoreAxis(s StoreOp) (int, error) {
	a, ok := s.Axis()
	return lanesAxis(s.Operation, s.Memref(), s.Value().Type(), a, ok)
}

// lanesAxis checks the `axis` a (given: ok) of access op to buffer mem of
// a value of type t, and returns the dimension its lanes run along.
func lanesAxis(op *ir.Operation, mem *ir.Value, t ir.Type, a int64, ok bool) (int, error) {
	m, _ := mem.Type().(ir.MemRefType)
	n := len(m.Shape)
	switch {
	case !ok:
		return n - 1, nil
	case a < 0 || a >= int64(n):
		return 0, ir.OpError(op, "'axis' %d is not a dimension of %s", a, q(m))
	case width(t) == 0:
		return 0, ir.OpError(op, "'axis' is given to an access of %s, which has no lanes", q(t))
	}
	return int(a), nil
}

// verifyStore: `loop.store %v, %y, %r, %i : (vector<8xbf16>, memref<?x8xbf16, dram>, index, index) -> ()`.
func verifyStore(op *ir.Operation) error {
	s := StoreOp{op}
	m, _ := s.Memref().Type().(ir.MemRefType)
	axis, err := StoreAxis(s)
	if err != nil {
		return err
	}
	return checkAccess(op, m, s.Indices(), s.Value().Type(), axis)
}

// verifyConst: a scalar, vector or index of a value its type can hold.
//
//	result must be a scalar, a vector or index, but got 'memref<4xf32, dram>'
//	value 0.5 is not an integer, as 'index' needs
func verifyConst(op *ir.Operation) error {
	t := op.Result(0).Type()
	if !isScalarOrVector(t) && !(elemKind(t) == ir.Index && width(t) == 0 && isElem(t)) {
		return ir.OpError(op, "result must be a scalar, a vector or index, but got %s", q(t))
	}
	v := ConstOp{op}.Value()
	if k := elemKind(t); k.IsInt() {
		if v != float64(int64(v)) {
			return ir.OpError(op, "value %s is not an integer, as %s needs", op.Attr("value"), q(ir.ElemType{Kind: k}))
		}
		if lo, hi := k.IntRange(); k != ir.I64 && k != ir.Index && (v < float64(lo) || v > float64(hi)) {
			return ir.OpError(op, "value %s is out of the range of %s", op.Attr("value"), q(ir.ElemType{Kind: k}))
		}
	}
	return nil
}

func isElem(t ir.Type) bool {
	_, ok := t.(ir.ElemType)
	return ok
}

// verifyBroadcast: `%v = loop.broadcast %s : (f32) -> vector<8xf32>`.
//
//	result 'vector<8xf16>' does not hold the operand's type 'f32'
func verifyBroadcast(op *ir.Operation) error {
	b := BroadcastOp{op}
	if elemKind(b.Output().Type()) != elemKind(b.Input().Type()) {
		return ir.OpError(op, "result %s does not hold the operand's type %s", q(b.Output().Type()), q(b.Input().Type()))
	}
	return nil
}

// inferReduce: `%s = loop.reduce %v {kind = "add"} : (vector<8xf32>) -> f32`.
func inferReduce(op *ir.Operation) ([]ir.Type, error) {
	r := ReduceOp{op}
	if err := checkArith(op, r.Input().Type(), true); err != nil {
		return nil, err
	}
	e, _ := ir.ElemOf(r.Input().Type())
	return []ir.Type{e}, nil
}

// inferTranspose: `%c0, %c1 = loop.transpose %r0, %r1 : (vector<2xf32>, vector<2xf32>) -> (vector<2xf32>, vector<2xf32>)`.
//
//	transposes 3 vectors of 2 lanes; a square of W vectors of W lanes is transposed, W a power of two from 2 to 64
func inferTranspose(op *ir.Operation) ([]ir.Type, error) {
	n := op.NumOperands()
	if n == 0 {
		return nil, ir.OpError(op, "transposes no vectors; a square of W vectors of W lanes is transposed, W a power of two from 2 to 64")
	}
	t := op.Operand(0).Type()
	for i := 1; i < n; i++ {
		if !ir.TypeEqual(op.Operand(i).Type(), t) {
			return nil, ir.OpError(op, "operand #%d has type %s, unlike operand #0's %s; the rows of the square have one type", i, q(op.Operand(i).Type()), q(t))
		}
	}
	if w := width(t); w != int64(n) || n < 2 || n > 64 || n&(n-1) != 0 {
		return nil, ir.OpError(op, "transposes %d vectors of %d lanes; a square of W vectors of W lanes is transposed, W a power of two from 2 to 64", n, w)
	}
	out := make([]ir.Type, n)
	for i := range out {
		out[i] = t
	}
	return out, nil
}

// inferIndexArith: `%k = loop.addi %i, %j : index`.
func inferIndexArith(op *ir.Operation) ([]ir.Type, error) {
	return []ir.Type{ir.IndexType}, nil
}

// inferClampIndex: `%j = loop.clamp_index %t, %n : (i64, index) -> index`;
// the operand constraints say everything else.
func inferClampIndex(op *ir.Operation) ([]ir.Type, error) {
	return []ir.Type{ir.IndexType}, nil
}

// intUnary are the unary ops defined on integers as well.
var intUnary = []string{OpNeg, OpAbs, OpRelu, OpFloor, OpCeil, OpRound}

// checkArith checks the element type arithmetic runs on: f32 or f64, or
// (when ints) an integer type other than i1.
//
//	computes on f32 or f64 only; cast 'vector<8xbf16>' to f32 first
//	does not take integer operands ('i32')
func checkArith(op *ir.Operation, t ir.Type, ints bool) error {
	k := elemKind(t)
	switch {
	case k == ir.F32 || k == ir.F64:
		return nil
	case k.IsFloat():
		return ir.OpError(op, "computes on f32 or f64 only; cast %s to f32 first", q(t))
	case ints && k != ir.I1:
		return nil
	}
	return ir.OpError(op, "does not take %s operands (%s)", map[bool]string{true: "i1", false: "integer"}[k == ir.I1], q(t))
}

// inferUnary: `%y = loop.exp %x : vector<8xf32>` has its operand's type.
func inferUnary(op *ir.Operation) ([]ir.Type, error) {
	t := op.Operand(0).Type()
	if err := checkArith(op, t, slices.Contains(intUnary, op.Name())); err != nil {
		return nil, err
	}
	return []ir.Type{t}, nil
}

// sameTypes reports operands of op whose types differ from the first one's.
//
//	requires operands of one type, but got 'vector<8xf32>' and 'f32'
func sameTypes(op *ir.Operation, operands ...int) error {
	first := op.Operand(operands[0]).Type()
	for _, i := range operands[1:] {
		if t := op.Operand(i).Type(); !ir.TypeEqual(t, first) {
			return ir.OpError(op, "requires operands of one type, but got %s and %s", q(first), q(t))
		}
	}
	return nil
}

// inferBinary: `%z = loop.add %x, %y : vector<8xf32>`.
func inferBinary(op *ir.Operation) ([]ir.Type, error) {
	if err := sameTypes(op, 0, 1); err != nil {
		return nil, err
	}
	t := op.Operand(0).Type()
	if err := checkArith(op, t, op.Name() != OpPow); err != nil {
		return nil, err
	}
	return []ir.Type{t}, nil
}

// inferFma: `%r = loop.fma %a, %b, %c : f32`.
func inferFma(op *ir.Operation) ([]ir.Type, error) {
	if err := sameTypes(op, 0, 1, 2); err != nil {
		return nil, err
	}
	t := op.Operand(0).Type()
	if err := checkArith(op, t, true); err != nil {
		return nil, err
	}
	return []ir.Type{t}, nil
}

// inferCompare: `%c = loop.cmp %x, %y {predicate = "lt"} : (f32, f32) -> i1`.
func inferCompare(op *ir.Operation) ([]ir.Type, error) {
	if err := sameTypes(op, 0, 1); err != nil {
		return nil, err
	}
	t := op.Operand(0).Type()
	if err := checkArith(op, t, true); err != nil {
		return nil, err
	}
	return []ir.Type{WithElem(t, ir.I1Type)}, nil
}

// inferSelect: `%r = loop.select %c, %a, %b : (vector<8xi1>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>`.
//
//	condition 'vector<4xi1>' does not match the values' type 'vector<8xf32>'
func inferSelect(op *ir.Operation) ([]ir.Type, error) {
	if err := sameTypes(op, 1, 2); err != nil {
		return nil, err
	}
	s := SelectOp{op}
	t := s.OnTrue().Type()
	if c := s.Cond().Type(); !ir.TypeEqual(c, WithElem(t, ir.I1Type)) {
		return nil, ir.OpError(op, "condition %s does not match the values' type %s", q(c), q(t))
	}
	return []ir.Type{t}, nil
}

// verifyCast: `%f = loop.cast %v : (vector<8xbf16>) -> vector<8xf32>` keeps the shape.
//
//	cannot change the shape: 'vector<8xbf16>' to 'f32'
func verifyCast(op *ir.Operation) error {
	c := CastOp{op}
	in, out := c.Input().Type(), c.Output().Type()
	if width(in) != width(out) {
		return ir.OpError(op, "cannot change the shape: %s to %s", q(in), q(out))
	}
	return nil
}

// syncCounters checks the counters of a loop.ticket or loop.group_sync: a
// zeroed i32 buffer of the shape given (nil: [G..., 2], any G), and
// that op is in the body of the grid's loop.parallel itself, where every
// thread of an instance reaches it.
//
//	counters must be 'memref<?x2xi32, dram>', but got 'memref<8xf32, dram>'
//	counters must be allocated by a 'loop.alloc_dram' with zeroed = true (they are zero when a launch begins)
//	must be in the body of the grid's 'loop.parallel' itself, not in a loop or a branch
func syncCounters(op *ir.Operation, c *ir.Value, shape []int64, spell string) error {
	m, ok := c.Type().(ir.MemRefType)
	good := ok && m.Elem.Kind == ir.I32
	if good && shape == nil {
		// group counters: [G..., 2], group g at elements 2g and 2g+1
		good = len(m.Shape) >= 2 && m.Shape[len(m.Shape)-1] == 2
	} else {
		good = good && len(m.Shape) == len(shape)
		for d := 0; good && d < len(shape); d++ {
			good = m.Shape[d] == shape[d]
		}
	}
	if !good {
		return ir.OpError(op, "counters must be '%s', but got %s", spell, q(c.Type()))
	}
	if c.DefiningOp() != nil && !isZeroed(c) {
		return ir.OpError(op, "counters must be allocated by a '%s' with zeroed = true (they are zero when a launch begins)", OpAllocDRAM)
	}
	if op.Block() != nil {
		if p := op.ParentOp(); p == nil || p.Name() != OpParallel {
			return ir.OpError(op, "must be in the body of the grid's '%s' itself, not in a loop or a branch", OpParallel)
		}
	}
	return nil
}

// inferTicket: `%t = loop.ticket %tickets, %n : (memref<1xi32, dram>, index) -> index`.
func inferTicket(op *ir.Operation) ([]ir.Type, error) {
	if err := syncCounters(op, op.Operand(0), []int64{1}, "memref<1xi32, dram>"); err != nil {
		return nil, err
	}
	return []ir.Type{ir.IndexType}, nil
}

// verifyGroupSync: zeroed [G..., 2] counters (group g is the linear index
// of the leading dimensions), in the grid's body after a
// loop.ticket.
//
//	expects a 'loop.ticket' before it in the grid's body (its instances must start in ticket order)
func verifyGroupSync(op *ir.Operation) error {
	if err := syncCounters(op, op.Operand(0), nil, "memref<...x2xi32, dram>"); err != nil {
		return err
	}
	if op.Block() == nil {
		return nil
	}
	for p := op.Prev(); p != nil; p = p.Prev() {
		if p.Name() == OpTicket {
			return nil
		}
	}
	return ir.OpError(op, "expects a '%s' before it in the grid's body (its instances must start in ticket order)", OpTicket)
}
