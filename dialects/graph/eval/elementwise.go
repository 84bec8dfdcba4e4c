package eval

import (
	"fmt"
	"math"

	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

// ---------------------------------------------------------------------------
// Unary ops: `%y = graph.exp %x : tensor<4xf32>`

// unaryFloat gives the float64 definition of each unary op. In float32
// mode the float64 result is rounded to float32 once, as a correctly
// rounded float32 library function would return it.
var unaryFloat = map[string]func(float64) float64{
	"graph.neg":        func(x float64) float64 { return -x },
	"graph.abs":        math.Abs,
	"graph.exp":        math.Exp,
	"graph.exp2":       math.Exp2,
	"graph.log":        math.Log,
	"graph.log2":       math.Log2,
	"graph.log1p":      math.Log1p,
	"graph.expm1":      math.Expm1,
	"graph.sqrt":       math.Sqrt,
	"graph.rsqrt":      func(x float64) float64 { return 1 / math.Sqrt(x) },
	"graph.reciprocal": func(x float64) float64 { return 1 / x },
	"graph.tanh":       math.Tanh,
	"graph.sigmoid":    numeric.Sigmoid,
	"graph.silu":       numeric.SiLU,
	"graph.relu":       numeric.ReLU,
	"graph.sin":        math.Sin,
	"graph.cos":        math.Cos,
	"graph.floor":      math.Floor,
	"graph.ceil":       math.Ceil,
	"graph.round":      numeric.RoundHalfEven,
}

// unaryInt gives the integer definition of the unary ops that accept
// integer tensors; results wrap to the result type.
var unaryInt = map[string]func(int64) int64{
	"graph.neg": func(x int64) int64 { return -x },
	"graph.abs": func(x int64) int64 {
		if x < 0 {
			return -x
		}
		return x
	},
	"graph.relu":  func(x int64) int64 { return max(x, 0) },
	"graph.floor": func(x int64) int64 { return x },
	"graph.ceil":  func(x int64) int64 { return x },
	"graph.round": func(x int64) int64 { return x },
}

func init() {
	for name := range unaryFloat {
		register(evalUnary, name)
	}
	register(evalUnary, "graph.gelu")
}

func evalUnary(m *machine, op *ir.Operation, args []*Tensor) ([]*Tensor, error) {
	if err := wantOperands(args, 1, 1); err != nil {
		return nil, err
	}
	x := args[0]
	k, err := resultElem(op, 0)
	if err != nil {
		return nil, err
	}
	out := NewTensor(k, x.Shape)
	if k.IsInt() && x.Elem.IsInt() {
		f, ok := unaryInt[op.Name()]
		if !ok {
			return nil, fmt.Errorf("does not accept integer element types (%s)", x.Elem)
		}
		for i, v := range x.Data {
			out.Data[i] = float64(numeric.WrapInt64(f(int64(v)), k))
		}
		return []*Tensor{out}, nil
	}
	if !k.IsFloat() {
		return nil, fmt.Errorf("result element type %s must be a float type for %s operands", k, x.Elem)
	}
	f := unaryFloat[op.Name()]
	if op.Name() == "graph.gelu" {
		approx, err := attrString(op, "approximate", "none")
		if err != nil {
			return nil, err
		}
		switch approx {
		case "none":
			f = numeric.GeluErf
		case "tanh":
			f = numeric.GeluTanh
		default:
			return nil, fmt.Errorf(`attribute 'approximate' must be "none" or "tanh", got %q`, approx)
		}
	}
	p := m.precOf(op, args)
	for i, v := range x.Data {
		out.Data[i] = m.store(p.r(f(v)), k)
	}
	return []*Tensor{out}, nil
}

// ---------------------------------------------------------------------------
// Binary ops: `%y = graph.add %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>`

var binaryFloat = map[string]func(a, b float64) float64{
	"graph.add":        func(a, b float64) float64 { return a + b },
	"graph.sub":        func(a, b float64) float64 { return a - b },
	"graph.mul":        func(a, b float64) float64 { return a * b },
	"graph.div":        func(a, b float64) float64 { return a / b },
	"graph.max":        numeric.Maximum,
	"graph.min":        numeric.Minimum,
	"graph.pow":        math.Pow,
	"graph.logaddexp":  logAddExp,
	"graph.logaddexp2": logAddExp2,
}

var binaryInt = map[string]func(a, b int64) (int64, error){
	"graph.add": func(a, b int64) (int64, error) { return a + b, nil },
	"graph.sub": func(a, b int64) (int64, error) { return a - b, nil },
	"graph.mul": func(a, b int64) (int64, error) { return a * b, nil },
	"graph.max": func(a, b int64) (int64, error) { return max(a, b), nil },
	"graph.min": func(a, b int64) (int64, error) { return min(a, b), nil },
	"graph.div": func(a, b int64) (int64, error) {
		if b == 0 {
			return 0, fmt.Errorf("integer division by zero")
		}
		return a / b, nil // truncates toward zero; MinInt64 / -1 wraps
	},
}

// logAddExp is ln(e^a + e^b), computed as max + log1p(e^-|a-b|) so that it
// never overflows; equal arguments (equal infinities included) give
// a + ln 2, and NaN gives NaN.
func logAddExp(a, b float64) float64 {
	switch {
	case math.IsNaN(a) || math.IsNaN(b):
		return math.NaN()
	case a == b:
		return a + math.Ln2
	}
	m := math.Max(a, b)
	return m + math.Log1p(math.Exp(-math.Abs(a-b)))
}

// logAddExp2 is log2(2^a + 2^b), computed like logAddExp.
func logAddExp2(a, b float64) float64 {
	switch {
	case math.IsNaN(a) || math.IsNaN(b):
		return math.NaN()
	case a == b:
		return a + 1
	}
	m := math.Max(a, b)
	return m + math.Log1p(math.Exp2(-math.Abs(a-b)))/math.Ln2
}

func init() {
	for name := range binaryFloat {
		register(evalBinary, name)
	}
}

func evalBinary(m *machine, op *ir.Operation, args []*Tensor) ([]*Tensor, error) {
	if err := wantOperands(args, 2, 2); err != nil {
		return nil, err
	}
	a, b := args[0], args[1]
	k, err := resultElem(op, 0)
	if err != nil {
		return nil, err
	}
	shape, err := broadcastShapes(a.Shape, b.Shape)
	if err != nil {
		return nil, err
	}
	bc, err := newBroadcaster(shape, a.Shape, b.Shape)
	if err != nil {
		return nil, err
	}
	out := NewTensor(k, shape)
	if k.IsInt() && a.Elem.IsInt() && b.Elem.IsInt() {
		f, ok := binaryInt[op.Name()]
		if !ok {
			return nil, fmt.Errorf("does not accept integer element types (%s, %s)", a.Elem, b.Elem)
		}
		var ferr error
		bc.each(func(o int, offs []int) {
			v, err := f(int64(a.Data[offs[0]]), int64(b.Data[offs[1]]))
			if err != nil && ferr == nil {
				ferr = err
			}
			out.Data[o] = float64(numeric.WrapInt64(v, k))
		})
		return []*Tensor{out}, ferr
	}
	if !k.IsFloat() {
		return nil, fmt.Errorf("result element type %s must be a float type for %s operands", k, a.Elem)
	}
	f := binaryFloat[op.Name()]
	p := m.precOf(op, args)
	bc.each(func(o int, offs []int) {
		out.Data[o] = m.store(p.r(f(a.Data[offs[0]], b.Data[offs[1]])), k)
	})
	return []*Tensor{out}, nil
}

// ---------------------------------------------------------------------------
// `%c = graph.cmp %a, %b {predicate = "lt"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>`

var predicates = map[string]func(a, b float64) bool{
	"eq": func(a, b float64) bool { return a == b },
	"ne": func(a, b float64) bool { return a != b },
	"lt": func(a, b float64) bool { return a < b },
	"le": func(a, b float64) bool { return a <= b },
	"gt": func(a, b float64) bool { return a > b },
	"ge": func(a, b float64) bool { return a >= b },
}

func init() {
	register(evalCmp, "graph.cmp")
	register(evalSelect, "graph.select")
	register(evalClamp, "graph.clamp")
	register(evalCast, "graph.cast")
}

// evalCmp compares values exactly (integers are exact in float64); with a
// NaN operand every predicate is false except "ne", as in C.
func evalCmp(m *machine, op *ir.Operation, args []*Tensor) ([]*Tensor, error) {
	if err := wantOperands(args, 2, 2); err != nil {
		return nil, err
	}
	pred, err := attrString(op, "predicate", "")
	if err != nil {
		return nil, err
	}
	f, ok := predicates[pred]
	if !ok {
		return nil, fmt.Errorf(`attribute 'predicate' must be one of "eq", "ne", "lt", "le", "gt", "ge", got %q`, pred)
	}
	k, err := resultElem(op, 0)
	if err != nil {
		return nil, err
	}
	a, b := args[0], args[1]
	shape, err := broadcastShapes(a.Shape, b.Shape)
	if err != nil {
		return nil, err
	}
	bc, err := newBroadcaster(shape, a.Shape, b.Shape)
	if err != nil {
		return nil, err
	}
	out := NewTensor(k, shape)
	bc.each(func(o int, offs []int) {
		if f(a.Data[offs[0]], b.Data[offs[1]]) {
			out.Data[o] = 1
		}
	})
	return []*Tensor{out}, nil
}

// evalSelect is `graph.select %c, %a, %b`: a where c is nonzero, else b,
// all three broadcast together.
func evalSelect(m *machine, op *ir.Operation, args []*Tensor) ([]*Tensor, error) {
	if err := wantOperands(args, 3, 3); err != nil {
		return nil, err
	}
	k, err := resultElem(op, 0)
	if err != nil {
		return nil, err
	}
	c, a, b := args[0], args[1], args[2]
	shape, err := broadcastShapes(c.Shape, a.Shape, b.Shape)
	if err != nil {
		return nil, err
	}
	bc, err := newBroadcaster(shape, c.Shape, a.Shape, b.Shape)
	if err != nil {
		return nil, err
	}
	out := NewTensor(k, shape)
	bc.each(func(o int, offs []int) {
		v := b.Data[offs[2]]
		if c.Data[offs[0]] != 0 {
			v = a.Data[offs[1]]
		}
		out.Data[o] = m.store(v, k)
	})
	return []*Tensor{out}, nil
}

// evalClamp is `graph.clamp %x {min = -1.0, max = 1.0}`: min(max(x, lo), hi)
// with NaN propagated; either bound may be absent. The bounds may instead
// be given as two more operands, broadcast with x.
func evalClamp(m *machine, op *ir.Operation, args []*Tensor) ([]*Tensor, error) {
	if len(args) != 1 && len(args) != 3 {
		return nil, fmt.Errorf("expects 1 operand (bounds as attributes) or 3, got %d", len(args))
	}
	k, err := resultElem(op, 0)
	if err != nil {
		return nil, err
	}
	x := args[0]
	var lo, hi *Tensor
	if len(args) == 3 {
		lo, hi = args[1], args[2]
	} else {
		l, err := attrFloat(op, "min", math.Inf(-1))
		if err != nil {
			return nil, err
		}
		h, err := attrFloat(op, "max", math.Inf(1))
		if err != nil {
			return nil, err
		}
		lo, hi = &Tensor{Shape: []int64{}, Elem: ir.F64, Data: []float64{l}}, &Tensor{Shape: []int64{}, Elem: ir.F64, Data: []float64{h}}
	}
	shape, err := broadcastShapes(x.Shape, lo.Shape, hi.Shape)
	if err != nil {
		return nil, err
	}
	bc, err := newBroadcaster(shape, x.Shape, lo.Shape, hi.Shape)
	if err != nil {
		return nil, err
	}
	out := NewTensor(k, shape)
	bc.each(func(o int, offs []int) {
		// as graph.max and graph.min order them: NaN stays NaN, -0 is
		// below +0 (so clamping -0 to [0, 1] gives +0, as the kernels do)
		v := numeric.Minimum(numeric.Maximum(x.Data[offs[0]], lo.Data[offs[1]]), hi.Data[offs[2]])
		if k.IsInt() {
			// integer bounds outside the type saturate, not wrap
			v = numeric.SaturateInt(v, k)
		}
		out.Data[o] = m.store(v, k)
	})
	return []*Tensor{out}, nil
}

// evalCast is `graph.cast %x : (tensor<4xf32>) -> tensor<4xi8>`:
//   - float to float rounds to nearest even (f8E4M3FN overflow gives NaN);
//   - float to int is unchecked: numeric.WrapInt (truncate toward zero to
//     an int64, NaN and out-of-range giving INT64_MIN, then keep the low
//     bits of the result type);
//   - int to int wraps to the result width (sign or zero extension follows
//     from the value: -1 in i8 becomes 4294967295 in ui32);
//   - int to float rounds the integer's value to nearest even;
//   - i1 is 0 or 1 both ways.
func evalCast(m *machine, op *ir.Operation, args []*Tensor) ([]*Tensor, error) {
	if err := wantOperands(args, 1, 1); err != nil {
		return nil, err
	}
	k, err := resultElem(op, 0)
	if err != nil {
		return nil, err
	}
	x := args[0]
	out := NewTensor(k, x.Shape)
	for i, v := range x.Data {
		if k.IsInt() {
			out.Data[i] = numeric.WrapInt(v, k)
		} else {
			out.Data[i] = m.round(v, k) // an explicit cast rounds in every mode
		}
	}
	return []*Tensor{out}, nil
}
