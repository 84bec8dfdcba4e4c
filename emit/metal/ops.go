package metal

import (
	"strings"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// This file spells the element-wise ops of the loop dialect, one lane at
// a time. Float arithmetic is on f32 (the loop dialect computes nothing
// in f16 or bf16); transcendental functions are metal::precise ones, so
// that they are accurate whatever the compile options; maximum and
// minimum propagate NaN (tf_max, tf_min).

// floatCalls are the f32 functions that are one call of one argument.
var floatCalls = map[string]string{
	loop.OpAbs:     "metal::fabs",
	loop.OpExp:     "metal::precise::exp",
	loop.OpExp2:    "metal::precise::exp2",
	loop.OpLog:     "metal::precise::log",
	loop.OpLog2:    "metal::precise::log2",
	loop.OpLog1p:   "tf_log1p",
	loop.OpExpm1:   "tf_expm1",
	loop.OpSqrt:    "metal::precise::sqrt",
	loop.OpRsqrt:   "metal::precise::rsqrt",
	loop.OpTanh:    "metal::precise::tanh",
	loop.OpSigmoid: "tf_sigmoid",
	loop.OpSilu:    "tf_silu",
	loop.OpRelu:    "tf_relu",
	loop.OpSin:     "metal::precise::sin",
	loop.OpCos:     "metal::precise::cos",
	loop.OpFloor:   "metal::floor",
	loop.OpCeil:    "metal::ceil",
	loop.OpRound:   "metal::rint",
}

// binarySymbols are the binary ops that are C operators.
var binarySymbols = map[string]string{
	loop.OpAdd: "+", loop.OpSub: "-", loop.OpMul: "*", loop.OpDiv: "/",
}

var predicates = map[string]string{"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}

// operand wraps an expression that starts with a sign, so that `-x` of
// `-1.0f` is not `--1.0f`.
func operand(s string) string {
	if strings.HasPrefix(s, "-") {
		return "(" + s + ")"
	}
	return s
}

// emitCompute writes an element-wise op, a comparison, a select or a
// cast.
func (ke *kernelEmitter) emitCompute(op *ir.Operation) {
	args := make([]val, op.NumOperands())
	for i, a := range op.Operands() {
		args[i] = ke.get(a)
	}
	res := op.Result(0)
	rk := elemKind(res.Type())
	lane := ke.laneFunc(op, args, rk)
	ke.define(res, lane)
}

// laneFunc returns the expression of lane l of op's result.
func (ke *kernelEmitter) laneFunc(op *ir.Operation, args []val, rk ir.ElemKind) func(l string) string {
	a := func(i int, l string) string { return operand(args[i].lane(l)) }
	name := op.Name()
	switch name {
	case loop.OpCast:
		return func(l string) string { return ke.cast(args[0].lane(l), args[0].kind, rk) }
	case loop.OpSelect:
		return func(l string) string { return a(0, l) + " ? " + a(1, l) + " : " + a(2, l) }
	case loop.OpCmp:
		c, _ := loop.AsCmp(op)
		sym, ok := predicates[c.Predicate()]
		if !ok {
			fail(op, "has an unknown predicate '%s'", c.Predicate())
		}
		return func(l string) string { return a(0, l) + " " + sym + " " + a(1, l) }
	}
	ck := args[0].kind
	if ck.IsFloat() {
		if ck != ir.F32 {
			fail(op, "computes in %s; the loop dialect computes floats in f32", ck)
		}
		return ke.floatLane(op, a)
	}
	return ke.intLane(op, a, ck)
}

// floatLane spells an f32 op.
func (ke *kernelEmitter) floatLane(op *ir.Operation, a func(int, string) string) func(l string) string {
	name := op.Name()
	if sym, ok := binarySymbols[name]; ok {
		return func(l string) string { return a(0, l) + " " + sym + " " + a(1, l) }
	}
	call := func(fn string, n int) func(l string) string {
		if strings.HasPrefix(fn, "tf_") {
			ke.helpers.use(fn)
		}
		return func(l string) string {
			parts := make([]string, n)
			for i := range parts {
				parts[i] = a(i, l)
			}
			return fn + "(" + strings.Join(parts, ", ") + ")"
		}
	}
	if fn, ok := floatCalls[name]; ok {
		return call(fn, 1)
	}
	switch name {
	case loop.OpNeg:
		return func(l string) string { return "-" + a(0, l) }
	case loop.OpReciprocal:
		return func(l string) string { return "1.0f / " + a(0, l) }
	case loop.OpMax:
		return call("tf_max", 2)
	case loop.OpMin:
		return call("tf_min", 2)
	case loop.OpPow:
		return call("metal::precise::pow", 2)
	case loop.OpFma:
		return call("metal::fma", 3)
	case loop.OpGelu:
		g, _ := loop.AsGelu(op)
		if g.Approximate() == "tanh" {
			return call("tf_gelu_tanh", 1)
		}
		return call("tf_gelu", 1)
	}
	fail(op, "cannot be translated to Metal")
	return nil
}

// intLane spells an op on integers of kind k, wrapping to k as the
// reference does.
func (ke *kernelEmitter) intLane(op *ir.Operation, a func(int, string) string, k ir.ElemKind) func(l string) string {
	t := metalType(k)
	name := op.Name()
	if k == ir.I1 {
		// booleans as one-bit integers: + and - are xor, * is and
		switch name {
		case loop.OpAdd, loop.OpSub:
			return func(l string) string { return a(0, l) + " != " + a(1, l) }
		case loop.OpMul, loop.OpMin:
			return func(l string) string { return a(0, l) + " && " + a(1, l) }
		case loop.OpMax:
			return func(l string) string { return a(0, l) + " || " + a(1, l) }
		case loop.OpNeg, loop.OpAbs, loop.OpRelu, loop.OpFloor, loop.OpCeil, loop.OpRound:
			return func(l string) string { return a(0, l) }
		}
		fail(op, "cannot be translated to Metal on i1 values")
	}
	if sym, ok := binarySymbols[name]; ok {
		return func(l string) string { return t + "(" + a(0, l) + " " + sym + " " + a(1, l) + ")" }
	}
	switch name {
	case loop.OpMax:
		return func(l string) string { return "metal::max(" + a(0, l) + ", " + a(1, l) + ")" }
	case loop.OpMin:
		return func(l string) string { return "metal::min(" + a(0, l) + ", " + a(1, l) + ")" }
	case loop.OpNeg:
		return func(l string) string { return t + "(-" + a(0, l) + ")" }
	case loop.OpAbs:
		if k.IsUnsigned() {
			return func(l string) string { return a(0, l) }
		}
		return func(l string) string { return t + "(" + a(0, l) + " < 0 ? -" + a(0, l) + " : " + a(0, l) + ")" }
	case loop.OpRelu:
		return func(l string) string { return a(0, l) + " > 0 ? " + a(0, l) + " : " + t + "(0)" }
	case loop.OpFloor, loop.OpCeil, loop.OpRound:
		return func(l string) string { return a(0, l) }
	case loop.OpFma:
		return func(l string) string { return t + "(" + a(0, l) + " * " + a(1, l) + " + " + a(2, l) + ")" }
	}
	fail(op, "cannot be translated to Metal on %s values", k)
	return nil
}

// cast converts x from element kind from to kind to. Floats go through
// f32 (exact for every narrower float), so each conversion rounds once;
// float to integer truncates toward zero and wraps to the width as the
// reference does for values within the range of a 64-bit integer.
func (ke *kernelEmitter) cast(x string, from, to ir.ElemKind) string {
	if from == to {
		return x
	}
	toF32 := func() string {
		switch from {
		case ir.F32:
			return x
		case ir.F8E4M3FN:
			ke.helpers.use("tf_from_f8e4m3")
			return "tf_from_f8e4m3(" + x + ")"
		case ir.F8E5M2:
			ke.helpers.use("tf_from_f8e5m2")
			return "tf_from_f8e5m2(" + x + ")"
		}
		return "float(" + x + ")"
	}
	switch {
	case to == ir.F32:
		return toF32()
	case to == ir.F16 || to == ir.BF16:
		return metalType(to) + "(" + toF32() + ")"
	case to == ir.F8E4M3FN:
		ke.helpers.use("tf_to_f8e4m3")
		return "tf_to_f8e4m3(" + toF32() + ")"
	case to == ir.F8E5M2:
		ke.helpers.use("tf_to_f8e5m2")
		return "tf_to_f8e5m2(" + toF32() + ")"
	case to == ir.I1 && from.IsFloat():
		return "bool(long(" + toF32() + ") & 1)"
	case to == ir.I1:
		return "bool(" + operand(x) + " & 1)"
	case from.IsFloat() && to == ir.I64:
		return "long(" + toF32() + ")"
	case from.IsFloat():
		return metalType(to) + "(long(" + toF32() + "))"
	}
	return metalType(to) + "(" + x + ")"
}
