package numeric

import (
	"math"

	"github.com/tensorforge/tensorforge/ir"
	"github.com/x448/float16"
)

// Bit patterns of the narrow formats. Every XBits function rounds to
// nearest even (one rounding from the float32 value) and every XFromBits is
// exact. NaN payloads are not preserved except by f16 (which keeps the top
// payload bits); any NaN pattern decodes to NaN.

// F16Bits returns the IEEE binary16 pattern nearest to v.
func F16Bits(v float32) uint16 { return float16.Fromfloat32(v).Bits() }

// F16FromBits returns the value of an IEEE binary16 pattern.
func F16FromBits(b uint16) float32 { return float16.Frombits(b).Float32() }

// BF16Bits returns the bfloat16 pattern nearest to v (the top half of a
// float32, rounded to nearest even rather than truncated).
func BF16Bits(v float32) uint16 { return uint16(fmtBF16.encode(fmtBF16.round(float64(v)))) }

// BF16FromBits returns the value of a bfloat16 pattern.
func BF16FromBits(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// F8E4M3FNBits returns the f8E4M3FN pattern nearest to v. Values whose
// rounding exceeds 448 (|v| > 464), infinities and NaN give NaN (0x7f or 0xff).
func F8E4M3FNBits(v float32) uint8 {
	return uint8(fmtF8E4M3FN.encode(fmtF8E4M3FN.round(float64(v))))
}

// F8E4M3FNFromBits returns the value of an f8E4M3FN pattern.
func F8E4M3FNFromBits(b uint8) float32 { return float32(fmtF8E4M3FN.decode(uint64(b))) }

// F8E5M2Bits returns the f8E5M2 pattern nearest to v; values whose rounding
// exceeds 57344 (|v| >= 61440) become infinity.
func F8E5M2Bits(v float32) uint8 { return uint8(fmtF8E5M2.encode(fmtF8E5M2.round(float64(v)))) }

// F8E5M2FromBits returns the value of an f8E5M2 pattern.
func F8E5M2FromBits(b uint8) float32 { return float32(fmtF8E5M2.decode(uint64(b))) }

// ToBits returns the storage bit pattern of v in float kind k (f64, f32,
// f16, bf16, f8E4M3FN, f8E5M2) after rounding it to nearest even, in the low
// bits of the result. ok is false for a non-float kind.
func ToBits(v float64, k ir.ElemKind) (bits uint64, ok bool) {
	switch k {
	case ir.F64:
		return math.Float64bits(v), true
	case ir.F32:
		return uint64(math.Float32bits(float32(v))), true
	}
	f, ok := formatOf(k)
	if !ok {
		return 0, false
	}
	return f.encode(f.round(v)), true
}

// FromBits returns the value of the bit pattern b (in its low bits) of
// float kind k; ok is false for a non-float kind.
func FromBits(b uint64, k ir.ElemKind) (v float64, ok bool) {
	switch k {
	case ir.F64:
		return math.Float64frombits(b), true
	case ir.F32:
		return float64(math.Float32frombits(uint32(b))), true
	}
	f, ok := formatOf(k)
	if !ok {
		return 0, false
	}
	return f.decode(b & (1<<(f.exp+f.man+1) - 1)), true
}
