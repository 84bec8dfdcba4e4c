// Package eval is the reference interpreter of the loop dialect: it runs a
// lowered function, launching its kernels on buffers, so that a lowering
// can be checked against the graph interpreter on the program it came
// from:
//
//	want, _ := geval.Run(graphFn, inputs, geval.Options{})
//	got, err := eval.Run(loweredModule, "f", inputs)
//
// Inputs and results are the graph interpreter's tensors, in the order of
// the function's input arguments and of its output arguments (the last
// `num_results` arguments).
//
// # Semantics
//
// Numbers follow the graph interpreter (dialects/graph/eval): values of
// f16, bf16 and f8 exist only in buffers and are rounded to their type
// with numeric.RoundTo when stored or cast; f32 arithmetic rounds every
// step to float32, and unary functions (exp, tanh, silu, ...) are
// evaluated in float64 and rounded once; f64 is not rounded; integers wrap
// to their type. loop.fma computes a*b exactly and rounds the sum (to
// float64, then to f32), as the graph interpreter's matmul accumulates.
// max and min propagate NaN and order -0 below +0; cmp is false with a NaN
// operand except for "ne". loop.reduce combines lanes in lane order.
//
// A loop.parallel runs its instances one after the other, and a loop.for
// with dist = "threads" runs its iterations in order as a single thread,
// whose carried values are then the combined totals (combine over one
// thread is the identity). Every instance gets its own loop.alloc
// buffers.
//
// A dynamic extent of an output buffer is the extent passed for it at the
// first launch that writes it: outputs are allocated then. Scratchpad and
// intermediate buffers start filled with NaN (integers: their type's
// lowest value), so a kernel reading what it never wrote shows it.
// Out-of-bounds accesses, division of indices by zero and malformed IR are
// errors located at the op, never panics.
package eval

import (
	"fmt"
	"math"

	geval "github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

// buffer is the storage of a memref: row-major elements, each a float64
// holding a value of elem exactly.
type buffer struct {
	shape []int64
	elem  ir.ElemKind
	data  []float64
	// output marks an output argument not yet allocated.
	pending bool
}

// value is a run-time value: an index, a scalar or vector (lanes), or a
// buffer.
type value struct {
	i     int64
	lanes []float64
	buf   *buffer
	// ok marks a value that has been computed
	ok bool
}

// maxElements bounds one buffer (a malformed shape gives an error, not an
// allocation failure).
const maxElements = 1 << 28

// Run interprets function fn of m (the first function when fn is "") on
// inputs, one per input argument, and returns its results, one per output
// argument. An input whose element type differs from its argument's is
// converted as the graph interpreter converts it (float to float rounds).
// An input a kernel writes (graph.index_copy's destination) is updated in
// place when its element type is the argument's.
func Run(m ir.Module, fn string, inputs []*geval.Tensor) (results []*geval.Tensor, err error) {
	f, err := lookupFunc(m, fn)
	if err != nil {
		return nil, err
	}
	mc := &machine{slot: map[*ir.Value]int32{}, blocks: map[*ir.Block]*block{}, kernels: map[string]*ir.Operation{}}
	for o := m.Body().First(); o != nil; o = o.Next() {
		if k, ok := loop.AsKernel(o); ok {
			mc.kernels[k.SymName()] = o
		}
	}
	defer func() {
		if r := recover(); r != nil {
			op := mc.cur
			if op == nil {
				op = f.Operation
			}
			if re, ok := r.(runError); ok {
				results, err = nil, re.err
				return
			}
			results, err = nil, ir.OpError(op, "evaluation failed: %v", r)
		}
	}()
	args := f.Args()
	nres, _ := ir.AttrAsInt(f.Attr("num_results"))
	nin := len(args) - int(nres)
	if nres < 0 || nin < 0 {
		return nil, ir.Errorf(f.Loc, "@%s: attribute num_results (%d) does not fit its %d arguments", f.SymName(), nres, len(args))
	}
	if len(inputs) != nin {
		return nil, ir.Errorf(f.Loc, "@%s takes %d inputs but %d were given", f.SymName(), nin, len(inputs))
	}
	for i, a := range args {
		mt, ok := a.Type().(ir.MemRefType)
		if !ok {
			return nil, ir.Errorf(f.Loc, "@%s: argument #%d has type %s, not a memref", f.SymName(), i, a.Type())
		}
		if i >= nin {
			mc.bind(a, value{buf: &buffer{shape: mt.Shape, elem: mt.Elem.Kind, pending: true}})
			continue
		}
		b, err := bindInput(f, i, mt, inputs[i])
		if err != nil {
			return nil, err
		}
		mc.bind(a, value{buf: b})
	}
	inShapes := make([][]int64, nin)
	for i, t := range inputs {
		if t != nil {
			inShapes[i] = t.Shape
		}
	}
	if err := loop.CheckExtents(f, inShapes); err != nil {
		return nil, err
	}
	mc.runBlock(f.Body())
	for _, op := range mc.zeroed {
		for _, v := range mc.get(op.Result(0)).buf.data {
			if v != 0 {
				mc.cur = op
				mc.fail("holds counters that the kernels using them did not leave at zero (a later launch would start from them)")
			}
		}
	}
	// the inputs kernels wrote into (graph.index_copy's destination) are
	// updated in place, as a compiled function updates the caller's buffer
	for i, a := range args[:nin] {
		if b := mc.get(a).buf; b != nil && inputs[i].Elem == b.elem {
			copy(inputs[i].Data, b.data)
		}
	}
	for i, a := range args[nin:] {
		b := mc.get(a).buf
		if b.pending {
			return nil, ir.Errorf(f.Loc, "@%s: output #%d is never written by a launch", f.SymName(), i)
		}
		results = append(results, &geval.Tensor{Shape: append([]int64{}, b.shape...), Elem: b.elem, Data: b.data})
	}
	return results, nil
}

func lookupFunc(m ir.Module, name string) (ir.Func, error) {
	fs := m.Funcs()
	if len(fs) == 0 {
		return ir.Func{}, ir.Errorf(m.Loc, "the module has no function")
	}
	if name == "" {
		return fs[0], nil
	}
	if f, ok := m.Lookup(name); ok {
		return f, nil
	}
	return ir.Func{}, ir.Errorf(m.Loc, "the module has no function @%s", name)
}

// bindInput checks an input tensor against argument i and copies it into
// a buffer of the argument's element type.
func bindInput(f ir.Func, i int, mt ir.MemRefType, t *geval.Tensor) (*buffer, error) {
	fail := func(format string, a ...any) error {
		return ir.Errorf(f.Loc, "@%s: argument #%d: %s", f.SymName(), i, fmt.Sprintf(format, a...))
	}
	if t == nil {
		return nil, fail("no input tensor")
	}
	n, ok := ir.NumElements(t.Shape)
	if !ok || n != int64(len(t.Data)) {
		return nil, fail("input has shape %s but %d values", geval.FormatShape(t.Shape), len(t.Data))
	}
	if len(t.Shape) != len(mt.Shape) {
		return nil, fail("input of shape %s does not match type %s", geval.FormatShape(t.Shape), mt)
	}
	for d, e := range mt.Shape {
		if e != ir.Dynamic && e != t.Shape[d] {
			return nil, fail("input of shape %s does not match type %s", geval.FormatShape(t.Shape), mt)
		}
	}
	b := &buffer{shape: append([]int64(nil), t.Shape...), elem: mt.Elem.Kind, data: make([]float64, len(t.Data))}
	for j, v := range t.Data {
		r := numeric.RoundTo(v, b.elem)
		if b.elem.IsInt() && r != v {
			return nil, fail("input element %d (%v) is not exactly representable in %s", j, v, b.elem)
		}
		b.data[j] = r
	}
	return b, nil
}

// runError carries a located error out of the interpreter's recursion.
type runError struct{ err error }

// machine is the state of one Run.
type machine struct {
	// vals holds the value of each slot; slot numbers the values, blocks
	// the compiled blocks (steps.go)
	vals    []value
	slot    map[*ir.Value]int32
	blocks  map[*ir.Block]*block
	kernels map[string]*ir.Operation
	// chunk is where the lanes of new values are cut from (lanes)
	chunk []float64
	cur   *ir.Operation
	// lane holds the operands of a lanewise step's function at one lane
	// (the functions are leaves: they never run a step themselves)
	lane [4]float64
	// zeroed are the counters of loop.ticket and loop.group_sync, which
	// must be zero again when the function returns
	zeroed []*ir.Operation
}

// fail stops the run with an error at the current op.
func (mc *machine) fail(format string, args ...any) {
	panic(runError{ir.OpError(mc.cur, format, args...)})
}

// get returns the value of v.
func (mc *machine) get(v *ir.Value) value {
	s, ok := mc.slot[v]
	if !ok || !mc.vals[s].ok {
		mc.fail("uses a value that has not been computed (used before it is defined?)")
	}
	return mc.vals[s]
}

// at returns the value in slot s.
func (mc *machine) at(s int32) value {
	x := mc.vals[s]
	if !x.ok {
		mc.fail("uses a value that has not been computed (used before it is defined?)")
	}
	return x
}

// bind sets the value of v.
func (mc *machine) bind(v *ir.Value, x value) {
	x.ok = true
	mc.vals[mc.slotOf(v)] = x
}

// runBlock runs the ops of b and returns the operands of its terminator.
func (mc *machine) runBlock(b *ir.Block) []value {
	return mc.runSteps(mc.compiled(b))
}

// elem is the element kind of a scalar or vector type.
func elem(t ir.Type) ir.ElemKind {
	e, _ := ir.ElemOf(t)
	return e.Kind
}

// lanesOf is the lane count of a type: 1 for a scalar.
func lanesOf(t ir.Type) int {
	if v, ok := t.(ir.VectorType); ok && len(v.Shape) == 1 {
		return int(v.Shape[0])
	}
	return 1
}

// exec runs one op that is not a terminator.
func (mc *machine) exec(op *ir.Operation) {
	name := op.Name()
	_, unary := unaryFloat[name]
	_, binary := binaryFloat[name]
	if unary || binary {
		mc.fail("expects one result") // with one, it is a step of its own (steps.go)
	}
	switch name {
	case loop.OpLaunch:
		mc.launch(op)
	case loop.OpDim:
		b := mc.get(op.Operand(0)).buf
		axis, _ := ir.AttrAsInt(op.Attr("axis"))
		if b.pending {
			mc.fail("reads an extent of an output that no launch has written yet")
		}
		if axis < 0 || int(axis) >= len(b.shape) {
			mc.fail("axis %d is out of range", axis)
		}
		mc.set(op, value{i: b.shape[axis]})
	case loop.OpAllocDRAM, loop.OpAlloc:
		mc.alloc(op)
	case loop.OpParallel:
		if op.NumOperands() < 3 || len(op.Regions()) != 1 || op.Region(0).Entry() == nil {
			mc.fail("is malformed: it needs a lower bound, an upper bound, a step and a body")
		}
		mc.parallelStaged(op)
	case loop.OpTicket:
		mc.ticket(op)
	case loop.OpGroupSync:
		mc.fail("is reached outside the body of a grid (internal error)")
	case loop.OpFor:
		mc.fail("is malformed: it needs a lower bound, an upper bound, a step and a body")
	case loop.OpConst:
		_, why := mc.constValue(op)
		mc.fail("%s", why)
	case loop.OpReduce:
		mc.reduce(op)
	case loop.OpTranspose:
		mc.transpose(op)
	case loop.OpClampIndex:
		mc.clampIndex(op)
	case loop.OpCmp:
		pred, _ := op.Attr("predicate").(ir.StringAttr)
		if _, ok := predicates[string(pred)]; !ok {
			mc.fail("unknown predicate %s", op.Attr("predicate"))
		}
		mc.fail("expects one result")
	case loop.OpFma, loop.OpSelect, loop.OpCast, loop.OpLoad, loop.OpStore, loop.OpBroadcast,
		loop.OpAddi, loop.OpSubi, loop.OpMuli, loop.OpDivi, loop.OpRemi, loop.OpMini:
		mc.fail("is malformed: wrong number of operands or results")
	default:
		mc.fail("is not supported by the loop interpreter")
	}
}

// set records the single result of op.
func (mc *machine) set(op *ir.Operation, v value) {
	if op.NumResults() != 1 {
		mc.fail("expects one result")
	}
	mc.bind(op.Result(0), v)
}

// roundTo stores an arithmetic result in kind k (f32 rounds, f64 keeps).
func roundTo(v float64, k ir.ElemKind) float64 {
	if k == ir.F64 {
		return v
	}
	return numeric.RoundTo(v, k)
}

// constValue is the value of a loop.const, or why it has none.
func (mc *machine) constValue(op *ir.Operation) (value, string) {
	if op.NumResults() != 1 {
		return value{}, "expects one result"
	}
	t := op.Result(0).Type()
	a := op.Attr("value")
	if elem(t) == ir.Index {
		n, ok := ir.AttrAsInt(a)
		if !ok {
			return value{}, fmt.Sprintf("index constant %s is not an integer", a)
		}
		return value{i: n, ok: true}, ""
	}
	v, ok := ir.AttrAsFloat(a)
	if !ok {
		return value{}, "attribute 'value' is not a number"
	}
	if ia, isInt := a.(ir.IntAttr); isInt {
		v = float64(ia.Value)
	}
	k := elem(t)
	if k.IsInt() {
		v = float64(numeric.WrapInt64(int64(v), k))
	} else {
		v = numeric.RoundTo(v, k)
	}
	out := make([]float64, lanesOf(t))
	for i := range out {
		out[i] = v
	}
	return value{lanes: out, ok: true}, ""
}

func (mc *machine) indexArith(s *step) {
	op := s.op
	a, b := mc.at(s.args[0]).i, mc.at(s.args[1]).i
	var r int64
	switch op.Name() {
	case loop.OpAddi:
		r = a + b
	case loop.OpSubi:
		r = a - b
	case loop.OpMuli:
		r = a * b
	case loop.OpDivi, loop.OpRemi:
		if b == 0 {
			mc.fail("divides an index by zero")
		}
		if op.Name() == loop.OpDivi {
			r = a / b
		} else {
			r = a % b
		}
	case loop.OpMini:
		r = min(a, b)
	}
	mc.vals[s.res] = value{i: r, ok: true}
}

// clampIndex is loop.clamp_index: the integer as an index, clamped into
// [0, bound - 1], as compiled kernels clamp a gathered index.
func (mc *machine) clampIndex(op *ir.Operation) {
	x, bound := mc.get(op.Operand(0)).lanes[0], mc.get(op.Operand(1)).i
	r := int64(0)
	switch {
	case x != x || x <= 0:
	case x >= float64(bound-1):
		r = max(bound-1, 0)
	default:
		r = int64(x)
	}
	mc.set(op, value{i: r})
}

// ---------------------------------------------------------------------------
// Buffers

// newBuffer allocates a buffer of shape filled with a value that shows
// reads of elements never written.
func (mc *machine) newBuffer(shape []int64, k ir.ElemKind) *buffer {
	n, ok := ir.NumElements(shape)
	if !ok || n > maxElements {
		mc.fail("allocates a buffer of shape %s, which is too large or invalid", geval.FormatShape(shape))
	}
	for _, d := range shape {
		if d < 0 {
			mc.fail("allocates a buffer of negative extent (shape %s)", geval.FormatShape(shape))
		}
	}
	fill := math.NaN()
	if k.IsInt() {
		lo, _ := k.IntRange()
		fill = float64(lo)
	}
	data := make([]float64, n)
	for i := range data {
		data[i] = fill
	}
	return &buffer{shape: append([]int64(nil), shape...), elem: k, data: data}
}

func (mc *machine) alloc(op *ir.Operation) {
	mt, ok := op.Result(0).Type().(ir.MemRefType)
	if !ok {
		mc.fail("allocates a non-memref type")
	}
	shape := append([]int64(nil), mt.Shape...)
	next := 0
	for d, e := range shape {
		if e == ir.Dynamic {
			if next >= op.NumOperands() {
				mc.fail("has fewer extents than dynamic dimensions")
			}
			shape[d] = mc.get(op.Operand(next)).i
			next++
		}
	}
	b := mc.newBuffer(shape, mt.Elem.Kind)
	if a, ok := loop.AsAllocDRAM(op); ok {
		if z, _ := a.Zeroed(); z {
			clear(b.data)
			mc.zeroed = append(mc.zeroed, op)
		}
	}
	mc.set(op, value{buf: b})
}

// offset returns the element offset of indices idx in b, checking that n
// elements from there along dimension axis (the last for a contiguous
// access) are inside it, and the elements between two of them.
func (mc *machine) offset(b *buffer, idx []int32, n, axis int) (int, int) {
	if len(idx) != len(b.shape) {
		mc.fail("has %d indices for a buffer of rank %d", len(idx), len(b.shape))
	}
	off, stride := int64(0), int64(1)
	for d, v := range idx {
		i := mc.at(v).i
		limit := b.shape[d]
		hi := i
		if d == axis {
			hi = i + int64(n) - 1
			stride = 1
		} else {
			stride *= limit
		}
		if i < 0 || hi >= limit {
			mc.fail("accesses index %d (%d lanes) of dimension %d, whose extent is %d", i, n, d, limit)
		}
		off = off*b.shape[d] + i
	}
	if len(idx) == 0 && n != 1 {
		mc.fail("accesses %d lanes of a rank-0 buffer", n)
	}
	if n != 1 && (axis < 0 || axis >= len(idx)) {
		mc.fail("accesses lanes along dimension %d of a buffer of rank %d", axis, len(idx))
	}
	return int(off), int(stride)
}

// ---------------------------------------------------------------------------
// Kernels and loops

// launch binds a kernel's arguments (allocating outputs on their first
// launch) and runs its body.
func (mc *machine) launch(op *ir.Operation) {
	name, _ := op.Attr("kernel").(ir.StringAttr)
	k, ok := mc.kernels[string(name)]
	if !ok {
		mc.fail("launches kernel '%s', which the module does not define", name)
	}
	kernel := loop.KernelOp{Operation: k}
	body := kernel.Body().Entry()
	if body == nil || len(body.Args) != op.NumOperands() {
		mc.fail("passes %d operands to kernel '%s'", op.NumOperands(), name)
	}
	nbuf := int(kernel.NumInputs() + kernel.NumOutputs())
	if nbuf > op.NumOperands() {
		mc.fail("kernel '%s' has more buffers than the launch passes", name)
	}
	ext := op.Operands()[nbuf:]
	next := 0
	for i, v := range op.Operands()[:nbuf] {
		b := mc.get(v).buf
		if b == nil {
			mc.fail("passes operand #%d, which is not a buffer", i)
		}
		if b.pending {
			shape := append([]int64(nil), b.shape...)
			for d, e := range shape {
				if e == ir.Dynamic {
					if next >= len(ext) {
						mc.fail("passes fewer extents than the dynamic dimensions of its buffers")
					}
					shape[d] = mc.get(ext[next]).i
					next++
				}
			}
			*b = *mc.newBuffer(shape, b.elem)
			continue
		}
		mt := v.Type().(ir.MemRefType)
		for d, e := range mt.Shape {
			if e != ir.Dynamic {
				continue
			}
			if next >= len(ext) {
				mc.fail("passes fewer extents than the dynamic dimensions of its buffers")
			}
			if got := mc.get(ext[next]).i; got != b.shape[d] {
				mc.fail("passes extent %d for dimension %d of operand #%d, whose extent is %d", got, d, i, b.shape[d])
			}
			next++
		}
	}
	if g, ok := (loop.LaunchOp{Operation: op}).Guard(); ok {
		static, dyn, err := loop.LaunchOp{Operation: op}.GuardRows(g)
		if err != nil {
			mc.fail("%v", err)
		}
		for _, e := range dyn {
			static *= mc.get(e).i
		}
		if !g.Admits(static) {
			return // the other form of the kernel runs for these rows
		}
	}
	c := mc.compiled(body)
	for i, a := range c.args {
		mc.vals[a] = mc.get(op.Operand(i))
	}
	saved := mc.cur
	mc.runSteps(c)
	mc.cur = saved
}

// bounds reads the lower bound, upper bound and step of a loop.
func (mc *machine) bounds(s []int32) (lo, hi, step int64) {
	lo, hi, step = mc.at(s[0]).i, mc.at(s[1]).i, mc.at(s[2]).i
	if step <= 0 {
		mc.fail("has a step of %d; it must be positive", step)
	}
	return
}

// parallel runs a grid without loop.group_sync, one instance after the
// other.
func (mc *machine) parallel(s *step) {
	lo, hi, step := mc.bounds(s.args)
	body := mc.compiled(s.op.Region(0).Entry())
	if len(body.args) < 1 {
		mc.fail("has a body without an induction variable")
	}
	for iv := lo; iv < hi; iv += step {
		mc.vals[body.args[0]] = value{i: iv, ok: true}
		mc.runSteps(body)
		mc.cur = s.op
	}
}

// hasGroupSync reports whether a grid's body holds a loop.group_sync (the
// verifier keeps them at its top level).
func hasGroupSync(body *ir.Block) bool {
	for op := body.First(); op != nil; op = op.Next() {
		if op.Name() == loop.OpGroupSync {
			return true
		}
	}
	return false
}

// parallelStaged runs a grid whose instances meet at loop.group_sync ops:
// every instance runs up to the first sync, in order, each in its own
// environment; then the groups are checked (each has exactly its size of
// instances there) and their counters counted up and back down as the
// instances arrive and leave; then every instance runs on to the next
// sync, and so on. This is one order a GPU may run them in; ticket order
// makes the instances' numbers those of this order.
func (mc *machine) parallelStaged(op *ir.Operation) {
	body := mc.compiled(op.Region(0).Entry())
	if len(body.args) < 1 {
		mc.fail("has a body without an induction variable")
	}
	lo, hi, step := mc.bounds(mc.slotsOf(op.Operands()))
	// every value of the body has its slot (compiled compiles nested
	// blocks too), so the instances' copies of the slots stay whole
	base := mc.vals
	var envs [][]value
	for iv := lo; iv < hi; iv += step {
		env := append([]value(nil), base...)
		env[body.args[0]] = value{i: iv, ok: true}
		envs = append(envs, env)
	}
	defer func() { mc.vals = base }()
	first := 0
	for first < len(body.steps) {
		var sync *ir.Operation
		next := len(body.steps)
		type arrival struct{ group, size int64 }
		arrivals := make([]arrival, len(envs))
		for i, env := range envs {
			mc.vals = env
			sync = nil
			for j := first; j < len(body.steps); j++ {
				s := &body.steps[j]
				mc.cur = s.op
				if s.op.Name() == loop.OpGroupSync {
					sync, next = s.op, j+1
					arrivals[i] = arrival{mc.get(s.op.Operand(1)).i, mc.get(s.op.Operand(2)).i}
					break
				}
				mc.runStep(s)
			}
		}
		if sync == nil {
			return
		}
		mc.cur = sync
		mc.vals = envs[0]
		counters := mc.get(sync.Operand(0)).buf
		count := map[int64]int64{}
		var order []int64
		for _, a := range arrivals {
			if 2*a.group+1 >= int64(len(counters.data)) || a.group < 0 {
				mc.fail("syncs group %d, beyond its %d counters", a.group, len(counters.data)/2)
			}
			if count[a.group] == 0 {
				order = append(order, a.group)
			}
			count[a.group]++
			counters.data[2*a.group]++
		}
		for _, g := range order {
			size := int64(-1)
			for _, a := range arrivals {
				if a.group == g {
					if size >= 0 && a.size != size {
						mc.fail("syncs group %d with sizes %d and %d", g, size, a.size)
					}
					size = a.size
				}
			}
			if count[g] != size {
				mc.fail("group %d has %d instances at this sync, but its size is %d (on a GPU they would wait forever)", g, count[g], size)
			}
			if counters.data[2*g] != float64(size) {
				mc.fail("group %d's arrival counter is %v, not %d: it did not start at zero", g, counters.data[2*g], size)
			}
			// every instance leaves; the last resets both counters
			counters.data[2*g+1] += float64(size)
			counters.data[2*g], counters.data[2*g+1] = 0, 0
		}
		first = next
	}
}

// ticket takes the next ticket from counter[0]; the last one resets it.
func (mc *machine) ticket(op *ir.Operation) {
	c := mc.get(op.Operand(0)).buf
	n := mc.get(op.Operand(1)).i
	if c == nil || len(c.data) < 1 {
		mc.fail("has no counter")
	}
	t := int64(c.data[0])
	if t >= n || t < 0 {
		mc.fail("takes ticket %d of %d: more instances than tickets, or a counter that was not zero", t, n)
	}
	c.data[0] = float64(t + 1)
	if t == n-1 {
		c.data[0] = 0
	}
	mc.set(op, value{i: t})
}

func (mc *machine) forLoop(s *step) {
	op := s.op
	lo, hi, step := mc.bounds(s.args)
	body := mc.compiled(op.Region(0).Entry())
	carried := make([]value, len(s.args)-3)
	for i, v := range s.args[3:] {
		carried[i] = mc.at(v)
	}
	if len(body.args) != len(carried)+1 {
		mc.fail("has %d carried values for a body of %d arguments", len(carried), len(body.args))
	}
	for iv := lo; iv < hi; iv += step {
		mc.vals[body.args[0]] = value{i: iv, ok: true}
		for i, c := range carried {
			mc.vals[body.args[i+1]] = c
		}
		carried = mc.runSteps(body)
		mc.cur = op
		if len(carried) != op.NumResults() {
			mc.fail("yields %d values for %d results", len(carried), op.NumResults())
		}
	}
	if len(carried) != op.NumResults() {
		mc.fail("carries %d values for %d results", len(carried), op.NumResults())
	}
	for i, r := range op.Results() {
		mc.bind(r, carried[i])
	}
}

// reduce combines the lanes of a vector in lane order.
// transpose binds result j to the lanes j of the operands, in operand
// order: the columns of the square whose rows are the operands.
func (mc *machine) transpose(op *ir.Operation) {
	n := op.NumOperands()
	if op.NumResults() != n {
		mc.fail("is malformed: it needs as many results as operands")
	}
	rows := make([][]float64, n)
	for i := range rows {
		rows[i] = mc.get(op.Operand(i)).lanes
		if len(rows[i]) != n {
			mc.fail("transposes %d vectors, but operand #%d has %d lanes", n, i, len(rows[i]))
		}
	}
	for j := range n {
		col := make([]float64, n)
		for i := range col {
			col[i] = rows[i][j]
		}
		mc.bind(op.Result(j), value{lanes: col})
	}
}

func (mc *machine) reduce(op *ir.Operation) {
	x := mc.get(op.Operand(0)).lanes
	kind, _ := op.Attr("kind").(ir.StringAttr)
	k := elem(op.Result(0).Type())
	if len(x) == 0 {
		mc.fail("reduces an empty vector")
	}
	acc := x[0]
	for _, v := range x[1:] {
		switch kind {
		case "add":
			acc = mc.binary(loop.OpAdd, acc, v, k)
		case "max":
			acc = mc.binary(loop.OpMax, acc, v, k)
		case "min":
			acc = mc.binary(loop.OpMin, acc, v, k)
		default:
			mc.fail("unknown reduction kind %s", op.Attr("kind"))
		}
	}
	mc.set(op, value{lanes: []float64{acc}})
}
