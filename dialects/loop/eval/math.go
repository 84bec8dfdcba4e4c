package eval

import (
	"math"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

// The functions of the element-wise ops, with the graph interpreter's
// definitions: each is exact in float64 (or the library's float64
// function), and the caller rounds the result to the op's type once.

var unaryFloat = map[string]func(float64) float64{
	loop.OpNeg:        func(x float64) float64 { return -x },
	loop.OpAbs:        math.Abs,
	loop.OpExp:        math.Exp,
	loop.OpExp2:       math.Exp2,
	loop.OpLog:        math.Log,
	loop.OpLog2:       math.Log2,
	loop.OpLog1p:      math.Log1p,
	loop.OpExpm1:      math.Expm1,
	loop.OpSqrt:       math.Sqrt,
	loop.OpRsqrt:      func(x float64) float64 { return 1 / math.Sqrt(x) },
	loop.OpReciprocal: func(x float64) float64 { return 1 / x },
	loop.OpTanh:       math.Tanh,
	loop.OpSigmoid:    numeric.Sigmoid,
	loop.OpSilu:       numeric.SiLU,
	loop.OpGelu:       numeric.GeluErf,
	loop.OpRelu:       numeric.ReLU,
	loop.OpSin:        math.Sin,
	loop.OpCos:        math.Cos,
	loop.OpFloor:      math.Floor,
	loop.OpCeil:       math.Ceil,
	loop.OpRound:      numeric.RoundHalfEven,
}

var binaryFloat = map[string]func(a, b float64) float64{
	loop.OpAdd: func(a, b float64) float64 { return a + b },
	loop.OpSub: func(a, b float64) float64 { return a - b },
	loop.OpMul: func(a, b float64) float64 { return a * b },
	loop.OpDiv: func(a, b float64) float64 { return a / b },
	loop.OpMax: numeric.Maximum,
	loop.OpMin: numeric.Minimum,
	loop.OpPow: math.Pow,
}

var predicates = map[string]func(a, b float64) bool{
	"eq": func(a, b float64) bool { return a == b },
	"ne": func(a, b float64) bool { return a != b },
	"lt": func(a, b float64) bool { return a < b },
	"le": func(a, b float64) bool { return a <= b },
	"gt": func(a, b float64) bool { return a > b },
	"ge": func(a, b float64) bool { return a >= b },
}

// unaryInt computes the unary ops defined on integers, wrapping to k.
func (mc *machine) unaryInt(name string, x float64, k ir.ElemKind) float64 {
	i := int64(x)
	switch name {
	case loop.OpNeg:
		i = -i
	case loop.OpAbs:
		if i < 0 {
			i = -i
		}
	case loop.OpRelu:
		i = max(i, 0)
	case loop.OpFloor, loop.OpCeil, loop.OpRound:
	default:
		mc.fail("does not take integer operands")
	}
	return float64(numeric.WrapInt64(i, k))
}

// binary computes a binary op in kind k: integers exactly, wrapped; floats
// with one rounding.
func (mc *machine) binary(name string, a, b float64, k ir.ElemKind) float64 {
	if !k.IsInt() {
		return roundTo(binaryFloat[name](a, b), k)
	}
	x, y := int64(a), int64(b)
	var r int64
	switch name {
	case loop.OpAdd:
		r = x + y
	case loop.OpSub:
		r = x - y
	case loop.OpMul:
		r = x * y
	case loop.OpDiv:
		if y == 0 {
			mc.fail("integer division by zero")
		}
		r = x / y
	case loop.OpMax:
		r = max(x, y)
	case loop.OpMin:
		r = min(x, y)
	default:
		mc.fail("does not take integer operands")
	}
	return float64(numeric.WrapInt64(r, k))
}
