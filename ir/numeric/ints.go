package numeric

import (
	"math"

	"github.com/tensorforge/tensorforge/ir"
)

// two63 is 2^63, the first float64 above the int64 range.
const two63 = 9223372036854775808.0

// SaturateInt converts v to integer kind k the checked way (LLVM's
// fptosi.sat / fptoui.sat): truncation toward zero, NaN gives 0, and values
// outside the kind's range clamp to its ends. For a non-integer kind it
// returns v unchanged.
//
//	SaturateInt(300.7, ir.I8) == 127   SaturateInt(-3.9, ir.UI8) == 0
//	SaturateInt(NaN, ir.I32) == 0      SaturateInt(-2.5, ir.I8) == -2
func SaturateInt(v float64, k ir.ElemKind) float64 {
	if !k.IsInt() {
		return v
	}
	if math.IsNaN(v) {
		return 0
	}
	lo, hi := k.IntRange()
	t := math.Trunc(v)
	if t <= float64(lo) {
		return float64(lo)
	}
	if t >= float64(hi) {
		return float64(hi)
	}
	if t == 0 {
		return 0 // integers have no -0
	}
	return t
}

// WrapInt converts v to integer kind k the unchecked way of graph.cast,
// fixed to what x86-64 does for LLVM's fptosi then trunc: v is truncated
// toward zero to an int64 as cvttsd2si does, NaN and values outside
// [-2^63, 2^63) giving INT64_MIN, and the int64 is then wrapped to the
// kind's width by WrapInt64. For a non-integer kind it returns v unchanged.
//
//	WrapInt(300.7, ir.I8) == 44    WrapInt(-1.5, ir.UI8) == 255
//	WrapInt(NaN, ir.I32) == 0      WrapInt(NaN, ir.I64) == -2^63
//	WrapInt(3e9, ir.I32) == -1294967296
func WrapInt(v float64, k ir.ElemKind) float64 {
	if !k.IsInt() {
		return v
	}
	return float64(WrapInt64(FloatToInt64(v), k))
}

// FloatToInt64 is x86-64's cvttsd2si: truncation toward zero, with NaN and
// values outside [-2^63, 2^63) giving INT64_MIN, the "integer indefinite".
func FloatToInt64(v float64) int64 {
	t := math.Trunc(v)
	if math.IsNaN(t) || t < -two63 || t >= two63 {
		return math.MinInt64
	}
	return int64(t)
}

// WrapInt64 wraps an integer to the width of kind k in two's complement:
// signed kinds sign-extend their low bits, unsigned kinds keep their low
// bits as an unsigned number, and i1 keeps the lowest bit (0 or 1). i64 and
// index return i unchanged; any other kind returns i unchanged too.
func WrapInt64(i int64, k ir.ElemKind) int64 {
	switch k {
	case ir.I1:
		return i & 1
	case ir.I8:
		return int64(int8(i))
	case ir.I16:
		return int64(int16(i))
	case ir.I32:
		return int64(int32(i))
	case ir.UI8:
		return int64(uint8(i))
	case ir.UI16:
		return int64(uint16(i))
	case ir.UI32:
		return int64(uint32(i))
	}
	return i
}
