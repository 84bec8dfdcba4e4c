package ptx

import (
	"math"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// This file bounds the values of a kernel where the choice of an
// instruction sequence depends on them: a float to integer cast whose
// operand is clamped to a small range converts in 32 bits,
//
//	%15 = loop.min %14, %4 : vector<4xf32>     (%14 = loop.max %13, 0.0)
//	%16 = loop.cast %15 : (vector<4xf32>) -> vector<4xui8>
//
// is cvt.rzi.s32.f32 rather than the 64-bit conversion, and log1p(exp(z))
// with z <= 0 is logaddexp's tail, computed as one function. The bounds
// ignore NaN, which every sequence chosen with them passes through.

// valueRange is [lo, hi] for the non-NaN values v may take (lanes of a
// vector alike); unknown values give [-inf, inf].
func valueRange(v *ir.Value) (lo, hi float64) {
	return valueRangeDepth(v, 8)
}

func valueRangeDepth(v *ir.Value, depth int) (lo, hi float64) {
	inf := math.Inf(1)
	op := v.DefiningOp()
	if op == nil || depth == 0 {
		return -inf, inf
	}
	if c, ok := loop.AsConst(op); ok {
		if k := elemKindOf(v.Type()); k.IsFloat() || k.IsInt() {
			x := c.Value()
			return x, x
		}
		return -inf, inf
	}
	arg := func(i int) (float64, float64) { return valueRangeDepth(op.Operand(i), depth-1) }
	switch op.Name() {
	case loop.OpMin:
		l1, h1 := arg(0)
		l2, h2 := arg(1)
		return math.Min(l1, l2), math.Min(h1, h2)
	case loop.OpMax:
		l1, h1 := arg(0)
		l2, h2 := arg(1)
		return math.Max(l1, l2), math.Max(h1, h2)
	case loop.OpNeg:
		l, h := arg(0)
		return -h, -l
	case loop.OpAbs:
		l, h := arg(0)
		if l >= 0 {
			return l, h
		}
		if h <= 0 {
			return -h, -l
		}
		return 0, math.Max(-l, h)
	case loop.OpExp:
		l, h := arg(0)
		return math.Exp(l), math.Exp(h)
	case loop.OpBroadcast:
		return arg(0)
	case loop.OpSelect:
		l1, h1 := arg(1)
		l2, h2 := arg(2)
		return math.Min(l1, l2), math.Max(h1, h2)
	}
	return -inf, inf
}

// constValue is the value of a constant (or a broadcast of one) that
// every lane of v holds.
func constValue(v *ir.Value) (float64, bool) {
	op := v.DefiningOp()
	for op != nil && op.Name() == loop.OpBroadcast {
		op = op.Operand(0).DefiningOp()
	}
	if op == nil {
		return 0, false
	}
	c, ok := loop.AsConst(op)
	if !ok {
		return 0, false
	}
	return c.Value(), true
}
