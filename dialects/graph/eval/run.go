package eval

import (
	"fmt"
	"math"

	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

// Options select how Run computes.
type Options struct {
	// F64 evaluates every op in float64 and never rounds a floating-point
	// result to its element type: the reference that error bounds are
	// measured against. Integer results keep their integer semantics
	// (wrapping, saturation), and inputs and constants are still the
	// values of their element types.
	F64 bool
	// ExactRounding rounds every op's result to its element type inside
	// graph.fused bodies too, as op-by-op evaluation does. By default a
	// fused body keeps its f16, bf16 and f8 values in f32 between ops and
	// rounds them only where the fused op yields them (a kernel writing its
	// results) and at explicit graph.cast ops: what a fused kernel computes
	// unless lowered with lower-to-loops{exact-rounding=true}.
	ExactRounding bool
	// RoundCasts, with F64, still rounds what graph.cast converts to a
	// narrower float: the reference that rounding modes are measured
	// against, a float64 evaluation with only inputs, outputs (rounded by
	// the caller) and explicit casts rounded.
	RoundCasts bool
	// ReverseSums adds the elements of every float reduce_sum and
	// reduce_mean in reverse order: a second order of the same arithmetic,
	// against which the differential tests measure how much a result
	// depends on the order of its sums (3e38 + x - 3e38 keeps nothing of x
	// in one order and all of it in another).
	ReverseSums bool
}

// handler evaluates one op on its operand tensors.
type handler func(m *machine, op *ir.Operation, args []*Tensor) ([]*Tensor, error)

// handlers maps op names to their evaluation; filled in by each op file.
var handlers = map[string]handler{}

func register(h handler, names ...string) {
	for _, n := range names {
		handlers[n] = h
	}
}

// machine holds the state of one Run.
type machine struct {
	opts Options
	vals map[*ir.Value]*Tensor
	cur  *ir.Operation // the op being evaluated, for error locations
	// fused counts the graph.fused bodies being evaluated: inside one, by
	// default, narrow floats stay f32 (Options.ExactRounding).
	fused int
}

// Run evaluates a func.func on inputs (one per argument, in order) and
// returns its results. Dynamic `?` extents are taken from the inputs;
// shape mismatches against the signature are errors naming the argument.
// An input whose element type differs from its argument's is converted:
// float to float rounds to nearest even, any other conversion must be
// exact. Results never share storage with the inputs.
func Run(fn ir.Func, inputs []*Tensor, opts Options) (results []*Tensor, err error) {
	if fn.Operation == nil || fn.Name() != ir.FuncOpName || fn.NumRegions() != 1 || fn.Body() == nil {
		return nil, fmt.Errorf("eval: Run needs a func.func with a body")
	}
	m := &machine{opts: opts, vals: map[*ir.Value]*Tensor{}}
	defer func() {
		// Malformed IR that slipped past the checks must not crash a tool.
		if r := recover(); r != nil {
			op := m.cur
			if op == nil {
				op = fn.Operation
			}
			results, err = nil, ir.OpError(op, "evaluation failed: %v", r)
		}
	}()
	args := fn.Args()
	if len(inputs) != len(args) {
		return nil, ir.Errorf(fn.Loc, "@%s takes %d arguments but %d inputs were given", fn.SymName(), len(args), len(inputs))
	}
	isInput := map[*Tensor]bool{}
	for i, a := range args {
		t, err := bindInput(fn, i, a, inputs[i])
		if err != nil {
			return nil, err
		}
		m.vals[a] = t
		isInput[inputs[i]] = true
	}
	outs, err := m.runBlock(fn.Body(), ir.ReturnOpName, "return")
	if err != nil {
		if _, isDiag := err.(*ir.Diagnostic); !isDiag {
			err = ir.OpError(fn.Operation, "%v", err)
		}
		return nil, err
	}
	for i, t := range outs {
		if isInput[t] {
			outs[i] = t.Clone()
		}
	}
	return outs, nil
}

// bindInput checks input t against argument i of fn and converts its
// element type if needed.
func bindInput(fn ir.Func, i int, arg *ir.Value, t *Tensor) (*Tensor, error) {
	name := fmt.Sprintf("argument #%d", i)
	if arg.Name != "" {
		name += " (%" + arg.Name + ")"
	}
	fail := func(format string, a ...any) error {
		return ir.Errorf(fn.Loc, "@%s: %s: %s", fn.SymName(), name, fmt.Sprintf(format, a...))
	}
	shape, elem, ok := tensorTypeOf(arg.Type())
	if !ok {
		return nil, fail("type %s is not a tensor type", arg.Type())
	}
	if t == nil {
		return nil, fail("no input tensor")
	}
	n, ok := ir.NumElements(t.Shape)
	if !ok || n != int64(len(t.Data)) {
		return nil, fail("input has shape %s but %d values", FormatShape(t.Shape), len(t.Data))
	}
	if !matchesType(t.Shape, shape) {
		return nil, fail("input of shape %s does not match type %s", FormatShape(t.Shape), arg.Type())
	}
	if t.Elem == elem {
		return t, nil
	}
	c := &Tensor{Shape: t.Shape, Elem: elem, Data: make([]float64, len(t.Data))}
	for j, v := range t.Data {
		r := numeric.RoundTo(v, elem)
		if !(t.Elem.IsFloat() && elem.IsFloat()) && r != v && !(math.IsNaN(r) && math.IsNaN(v)) {
			return nil, fail("input element %d (%v) of type %s is not exactly representable in %s", j, v, t.Elem, elem)
		}
		c.Data[j] = r
	}
	return c, nil
}

// tensorTypeOf returns the shape and element kind of a tensor type; a
// scalar element type counts as a rank-0 tensor.
func tensorTypeOf(t ir.Type) ([]int64, ir.ElemKind, bool) {
	switch t := t.(type) {
	case ir.TensorType:
		return t.Shape, t.Elem.Kind, t.Elem.Kind != ir.InvalidElem
	case ir.ElemType:
		return nil, t.Kind, t.Kind != ir.InvalidElem
	}
	return nil, ir.InvalidElem, false
}

// runBlock evaluates the ops of b up to its terminator, one of the names in
// terms, and returns the terminator's operands.
func (m *machine) runBlock(b *ir.Block, terms ...string) ([]*Tensor, error) {
	for op := b.First(); op != nil; op = op.Next() {
		m.cur = op
		args := make([]*Tensor, op.NumOperands())
		for i, v := range op.Operands() {
			t, ok := m.vals[v]
			if !ok || v == nil {
				return nil, ir.OpError(op, "operand #%d has no value (used before it is defined?)", i)
			}
			args[i] = t
		}
		for _, term := range terms {
			if op.Name() == term {
				return args, nil
			}
		}
		h, ok := handlers[op.Name()]
		if !ok {
			return nil, ir.OpError(op, "is not supported by the reference interpreter")
		}
		outs, err := h(m, op, args)
		if err != nil {
			if _, isDiag := err.(*ir.Diagnostic); isDiag {
				return nil, err
			}
			return nil, ir.OpError(op, "%v", err)
		}
		if len(outs) != op.NumResults() {
			return nil, ir.OpError(op, "produced %d results but has %d", len(outs), op.NumResults())
		}
		for i, t := range outs {
			shape, elem, ok := tensorTypeOf(op.Result(i).Type())
			if !ok {
				return nil, ir.OpError(op, "result #%d has type %s, not a tensor type", i, op.Result(i).Type())
			}
			if !matchesType(t.Shape, shape) {
				return nil, ir.OpError(op, "result #%d has shape %s at run time, which does not match its type %s", i, FormatShape(t.Shape), op.Result(i).Type())
			}
			t.Elem = elem
			m.vals[op.Result(i)] = t
		}
	}
	return nil, fmt.Errorf("block has no terminator (%v)", terms)
}

// ---------------------------------------------------------------------------
// Precision

// prec is the arithmetic an op computes in: float32 (each result of a
// basic step rounded to nearest float32) or float64.
type prec struct{ f64 bool }

// r rounds a step's result to the compute precision.
func (p prec) r(v float64) float64 {
	if p.f64 {
		return v
	}
	return float64(float32(v))
}

// precOf is float64 under Options.F64 or when an operand or result of op is
// f64, float32 otherwise.
func (m *machine) precOf(op *ir.Operation, args []*Tensor) prec {
	if m.opts.F64 {
		return prec{true}
	}
	for _, a := range args {
		if a.Elem == ir.F64 {
			return prec{true}
		}
	}
	for _, r := range op.Results() {
		if _, k, _ := tensorTypeOf(r.Type()); k == ir.F64 {
			return prec{true}
		}
	}
	return prec{false}
}

// store rounds a computed value to the element kind it is stored as:
// floats to nearest even (not under Options.F64), integers by wrapping.
// Inside a fused body an f16, bf16 or f8 value is held in f32 instead,
// unless Options.ExactRounding is set.
func (m *machine) store(v float64, k ir.ElemKind) float64 {
	if m.opts.F64 && k.IsFloat() {
		return v
	}
	if m.fused > 0 && !m.opts.ExactRounding && narrowFloat(k) {
		return numeric.RoundTo(v, ir.F32)
	}
	return numeric.RoundTo(v, k)
}

// round rounds a value to element kind k where the program asks for it
// (a graph.cast, a value a fused op yields): always, except for floats
// under Options.F64.
func (m *machine) round(v float64, k ir.ElemKind) float64 {
	if m.opts.F64 && k.IsFloat() && !m.opts.RoundCasts {
		return v
	}
	return numeric.RoundTo(v, k)
}

// narrowFloat reports whether k is a float kind computed in f32 and
// rounded to k: f16, bf16 and the f8 kinds.
func narrowFloat(k ir.ElemKind) bool { return k.IsFloat() && k != ir.F32 && k != ir.F64 }

// resultElem returns the element kind of result i of op.
func resultElem(op *ir.Operation, i int) (ir.ElemKind, error) {
	if i >= op.NumResults() {
		return ir.InvalidElem, fmt.Errorf("expects %d result(s)", i+1)
	}
	_, k, ok := tensorTypeOf(op.Result(i).Type())
	if !ok {
		return ir.InvalidElem, fmt.Errorf("result #%d has type %s, not a tensor type", i, op.Result(i).Type())
	}
	return k, nil
}

// resultType returns the shape (with `?`) and element kind of result i.
func resultType(op *ir.Operation, i int) ([]int64, ir.ElemKind, error) {
	if i >= op.NumResults() {
		return nil, ir.InvalidElem, fmt.Errorf("expects %d result(s)", i+1)
	}
	s, k, ok := tensorTypeOf(op.Result(i).Type())
	if !ok {
		return nil, ir.InvalidElem, fmt.Errorf("result #%d has type %s, not a tensor type", i, op.Result(i).Type())
	}
	return s, k, nil
}

func wantOperands(args []*Tensor, lo, hi int) error {
	if len(args) < lo || len(args) > hi {
		if lo == hi {
			return fmt.Errorf("expects %d operand(s), got %d", lo, len(args))
		}
		return fmt.Errorf("expects %d to %d operands, got %d", lo, hi, len(args))
	}
	return nil
}

// ---------------------------------------------------------------------------
// Attributes

// attrFloat returns a float attribute as the value of its declared type
// (f32 unless stated, so `eps = 1.0e-05` is float32(1e-5)), an integer
// attribute as is, or, when absent, def as an f32 attribute.
func attrFloat(op *ir.Operation, name string, def float64) (float64, error) {
	switch a := op.Attr(name).(type) {
	case nil:
		return numeric.RoundTo(def, ir.F32), nil
	case ir.FloatAttr:
		k := a.Type.Kind
		if k == ir.InvalidElem {
			k = ir.F32
		}
		return numeric.RoundTo(a.Value, k), nil
	case ir.IntAttr:
		return float64(a.Value), nil
	default:
		return 0, fmt.Errorf("attribute '%s' must be a number, got %s", name, a)
	}
}

// hasAttr reports whether op carries attribute name.
func hasAttr(op *ir.Operation, name string) bool { return op.Attr(name) != nil }

func attrInt(op *ir.Operation, name string, def int64) (int64, error) {
	a := op.Attr(name)
	if a == nil {
		return def, nil
	}
	if arr, ok := a.(ir.ArrayAttr); ok && len(arr) == 1 {
		a = arr[0]
	}
	v, ok := ir.AttrAsInt(a)
	if !ok {
		return 0, fmt.Errorf("attribute '%s' must be an integer, got %s", name, a)
	}
	return v, nil
}

func attrBool(op *ir.Operation, name string, def bool) (bool, error) {
	switch a := op.Attr(name).(type) {
	case nil:
		return def, nil
	case ir.BoolAttr:
		return bool(a), nil
	case ir.IntAttr:
		if a.Value == 0 || a.Value == 1 {
			return a.Value == 1, nil
		}
	}
	return false, fmt.Errorf("attribute '%s' must be true or false, got %s", name, op.Attr(name))
}

func attrString(op *ir.Operation, name, def string) (string, error) {
	switch a := op.Attr(name).(type) {
	case nil:
		return def, nil
	case ir.StringAttr:
		return string(a), nil
	}
	return "", fmt.Errorf("attribute '%s' must be a string, got %s", name, op.Attr(name))
}

// attrInts returns an integer array attribute (a single integer counts as
// a one-element array); ok is false when absent.
func attrInts(op *ir.Operation, name string) (vs []int64, ok bool, err error) {
	switch a := op.Attr(name).(type) {
	case nil:
		return nil, false, nil
	case ir.ArrayAttr:
		vs, ok := a.Int64s()
		if !ok {
			return nil, true, fmt.Errorf("attribute '%s' must be an array of integers, got %s", name, a)
		}
		return vs, true, nil
	case ir.IntAttr:
		return []int64{a.Value}, true, nil
	case ir.DenseAttr:
		vs := make([]int64, len(a.Values))
		for i, v := range a.Values {
			vs[i] = int64(v)
		}
		return vs, true, nil
	}
	return nil, true, fmt.Errorf("attribute '%s' must be an array of integers, got %s", name, op.Attr(name))
}

// normAxis maps a possibly negative axis onto [0, rank).
func normAxis(axis int64, rank int) (int, error) {
	a := axis
	if a < 0 {
		a += int64(rank)
	}
	if a < 0 || a >= int64(rank) {
		return 0, fmt.Errorf("axis %d is out of range for rank %d", axis, rank)
	}
	return int(a), nil
}

func init() {
	register(evalFused, "graph.fused")
}

// evalFused evaluates the region of a graph.fused op: its entry block's
// arguments are the operands, and graph.yield gives the results.
func evalFused(m *machine, op *ir.Operation, args []*Tensor) ([]*Tensor, error) {
	if op.NumRegions() != 1 || op.Region(0).Entry() == nil {
		return nil, fmt.Errorf("expects one region with a block")
	}
	b := op.Region(0).Entry()
	if len(b.Args) != len(args) {
		return nil, fmt.Errorf("region takes %d arguments but the op has %d operands", len(b.Args), len(args))
	}
	for i, a := range b.Args {
		m.vals[a] = args[i]
	}
	m.fused++
	outs, err := m.runBlock(b, "graph.yield")
	m.fused--
	m.cur = op
	if err != nil {
		return nil, err
	}
	// A yielded block argument is an operand of the fused op: copy it so
	// the result does not share the operand's storage. What the body kept
	// in f32 is rounded as the kernel's store rounds it.
	res := make([]*Tensor, len(outs))
	for i, t := range outs {
		res[i] = t.Clone()
		if k := res[i].Elem; narrowFloat(k) {
			for j, v := range res[i].Data {
				res[i].Data[j] = m.round(v, k)
			}
		}
	}
	return res, nil
}
