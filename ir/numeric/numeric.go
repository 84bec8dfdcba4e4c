// Package numeric defines how values are stored in each element type of the
// IR: the binary formats of f16, bf16, f8E4M3FN and f8E5M2, rounding from
// float32/float64 into them, integer conversions, and distances in units in
// the last place (ULPs) used to state and check error bounds.
//
// Every function here works on float64 values, which hold every value of
// every element type exactly except i64/index integers beyond 2^53.
//
// # Floating-point formats
//
//	kind      exponent  mantissa  bias  max finite       inf  NaN
//	f64       11        52        1023  1.80e308         yes  yes
//	f32       8         23        127   3.40e38          yes  yes
//	f16       5         10        15    65504            yes  yes
//	bf16      8         7         127   3.39e38          yes  yes
//	f8E5M2    5         2         15    57344            yes  yes
//	f8E4M3FN  4         3         7     448              no   S.1111.111 only
//
// All formats have subnormals and signed zeros. Rounding into a format is
// always a single round-to-nearest-even from the exact input value: rounding
// a float64 to f16 does not go through float32 (which could round twice).
// A value that rounds past the largest finite value becomes infinity, or NaN
// in f8E4M3FN, which has no infinity (the non-saturating conversion of the
// OCP 8-bit floating point specification; saturation is an op's business,
// see quantize). Infinities map to NaN in f8E4M3FN for the same reason.
//
// # Integers
//
// Two conversions from floating point exist, both truncating toward zero:
//
//   - SaturateInt is the checked conversion (LLVM's fptosi.sat): NaN gives 0
//     and out-of-range values clamp to the kind's range.
//   - WrapInt is the unchecked conversion of graph.cast, fixed to what x86-64
//     does for `fptosi` followed by `trunc`: the value is truncated toward
//     zero to an int64 as cvttsd2si does, where NaN and values outside
//     [-2^63, 2^63) give INT64_MIN (0x8000000000000000), and the int64 is
//     then truncated to the kind's width in two's complement (unsigned kinds
//     keep the low bits as an unsigned number, i1 keeps the lowest bit). So
//     NaN and huge values become 0 in every kind narrower than 64 bits, 300.7
//     becomes 44 in i8, and -1.5 becomes 255 in ui8.
package numeric

import (
	"math"

	"github.com/tensorforge/tensorforge/ir"
)

// format describes a binary floating-point format narrower than float64.
type format struct {
	exp, man int // exponent and explicit mantissa bits
	bias     int
	// finiteOnly formats (f8E4M3FN) have no infinity: the all-ones exponent
	// holds normal numbers, and only the all-ones pattern is NaN.
	finiteOnly bool
}

var (
	fmtF32      = format{exp: 8, man: 23, bias: 127}
	fmtF16      = format{exp: 5, man: 10, bias: 15}
	fmtBF16     = format{exp: 8, man: 7, bias: 127}
	fmtF8E4M3FN = format{exp: 4, man: 3, bias: 7, finiteOnly: true}
	fmtF8E5M2   = format{exp: 5, man: 2, bias: 15}
	fmtF64      = format{exp: 11, man: 52, bias: 1023}
)

func formatOf(k ir.ElemKind) (format, bool) {
	switch k {
	case ir.F64:
		return fmtF64, true
	case ir.F32:
		return fmtF32, true
	case ir.F16:
		return fmtF16, true
	case ir.BF16:
		return fmtBF16, true
	case ir.F8E4M3FN:
		return fmtF8E4M3FN, true
	case ir.F8E5M2:
		return fmtF8E5M2, true
	}
	return format{}, false
}

// emin is the exponent of the smallest normal number.
func (f format) emin() int { return 1 - f.bias }

// emax is the exponent of the largest finite number.
func (f format) emax() int {
	if f.finiteOnly {
		return (1<<f.exp - 1) - f.bias
	}
	return (1<<f.exp - 2) - f.bias
}

func (f format) maxFinite() float64 {
	if f.finiteOnly {
		// the all-ones mantissa of the top binade is NaN
		return math.Ldexp(2-math.Ldexp(1, 1-f.man), f.emax())
	}
	return math.Ldexp(2-math.Ldexp(1, -f.man), f.emax())
}

// quantum returns the spacing of the format's values around a (a > 0, finite):
// one ULP of the binade holding a, or of the subnormals.
func (f format) quantum(a float64) int {
	if a < math.Ldexp(1, f.emin()) {
		return f.emin() - f.man
	}
	_, e := math.Frexp(a) // a = m * 2^e, m in [0.5, 1)
	return e - 1 - f.man
}

// round rounds v to the nearest value of the format, ties to even.
func (f format) round(v float64) float64 {
	switch {
	case math.IsNaN(v):
		return v
	case math.IsInf(v, 0):
		if f.finiteOnly {
			return math.NaN()
		}
		return v
	case v == 0:
		return v
	}
	a := math.Abs(v)
	if !f.finiteOnly && f.man < 52 {
		// A value in the format's normal range (the common case): the
		// low bits of the float64's significand are rounded away, ties
		// to even; a carry out of the significand moves the value to the
		// next binade, as it should.
		bits := math.Float64bits(a)
		if e := int(bits>>52) - 1023; e >= f.emin() && e <= f.emax() {
			sh := uint(52 - f.man)
			bits = (bits + (1<<(sh-1) - 1) + (bits>>sh)&1) &^ (1<<sh - 1)
			if int(bits>>52)-1023 > f.emax() {
				return math.Copysign(math.Inf(1), v)
			}
			return math.Copysign(math.Float64frombits(bits), v)
		}
	}
	return f.roundScaled(v, a)
}

// roundScaled rounds v (a = |v|, finite, not zero) by scaling its quantum
// to 1: every format, and the subnormals and overflows round's fast path
// leaves to it.
func (f format) roundScaled(v, a float64) float64 {
	q := f.quantum(a)
	// Scaling by a power of two is exact, so this is one rounding.
	r := math.Ldexp(math.RoundToEven(math.Ldexp(a, -q)), q)
	if r > f.maxFinite() {
		if f.finiteOnly {
			return math.NaN()
		}
		r = math.Inf(1)
	}
	return math.Copysign(r, v)
}

// encode returns the bit pattern of v, which round has already made
// representable. NaNs encode as the canonical quiet NaN with v's sign.
func (f format) encode(v float64) uint64 {
	var sign uint64
	if math.Signbit(v) {
		sign = 1 << (f.exp + f.man)
	}
	expMask := uint64(1)<<f.exp - 1
	switch {
	case math.IsNaN(v):
		if f.finiteOnly {
			return sign | expMask<<f.man | (1<<f.man - 1)
		}
		return sign | expMask<<f.man | 1<<(f.man-1)
	case math.IsInf(v, 0):
		return sign | expMask<<f.man
	case v == 0:
		return sign
	}
	a := math.Abs(v)
	q := f.quantum(a)
	m := uint64(math.Ldexp(a, -q)) // integral significand, hidden bit included
	if a < math.Ldexp(1, f.emin()) {
		return sign | m
	}
	e := uint64(q + f.man + f.bias)
	return sign | e<<f.man | (m - 1<<f.man)
}

// decode returns the value of a bit pattern.
func (f format) decode(b uint64) float64 {
	manMask := uint64(1)<<f.man - 1
	expMask := uint64(1)<<f.exp - 1
	m := b & manMask
	e := (b >> f.man) & expMask
	neg := b>>(f.exp+f.man)&1 == 1
	var v float64
	switch {
	case e == expMask && f.finiteOnly && m == manMask:
		v = math.NaN()
	case e == expMask && !f.finiteOnly:
		if m != 0 {
			v = math.NaN()
		} else {
			v = math.Inf(1)
		}
	case e == 0:
		v = math.Ldexp(float64(m), f.emin()-f.man)
	default:
		v = math.Ldexp(float64(m|1<<f.man), int(e)-f.bias-f.man)
	}
	if neg {
		v = -v
	}
	return v
}

// ordinal maps a value onto a line where consecutive values of the format
// are one apart and zero is 0. Between two values of the format it is
// linear, so values that are not representable get fractional positions;
// past the largest finite value the top binade's spacing continues.
func (f format) ordinal(v float64) float64 {
	a := math.Abs(v)
	var o float64
	if a < math.Ldexp(1, f.emin()) {
		o = math.Ldexp(a, f.man-f.emin())
	} else {
		q := f.quantum(a)
		binade := q + f.man - f.emin() // 0 for the lowest normal binade
		o = math.Ldexp(float64(binade+1), f.man) + (math.Ldexp(a, -q) - math.Ldexp(1, f.man))
	}
	if v < 0 {
		return -o
	}
	return o
}

// RoundTo rounds v to the nearest value representable in kind k (round half
// to even), as stored by a tensor of that element type: floats via their
// format (f32 via float32), ints by the documented wrap (WrapInt, which
// truncates toward zero). An invalid kind returns v unchanged.
func RoundTo(v float64, k ir.ElemKind) float64 {
	switch {
	case k == ir.F64:
		return v
	case k == ir.F32:
		return float64(float32(v))
	case k.IsFloat():
		f, _ := formatOf(k)
		return f.round(v)
	case k.IsInt():
		return WrapInt(v, k)
	}
	return v
}

// RoundHalfEven rounds v to the nearest integer, ties to the even one
// (2.5 -> 2, 3.5 -> 4, -0.5 -> -0). NaN and infinities are returned as is.
func RoundHalfEven(v float64) float64 { return math.RoundToEven(v) }

// MaxFinite returns the largest finite value of kind k: 448 for f8E4M3FN,
// 57344 for f8E5M2, 65504 for f16, the upper end of the range for integers
// (as a float64, so 2^63 for i64). It returns 0 for an invalid kind.
func MaxFinite(k ir.ElemKind) float64 {
	if k.IsInt() {
		_, hi := k.IntRange()
		return float64(hi)
	}
	if f, ok := formatOf(k); ok {
		return f.maxFinite()
	}
	return 0
}

// SmallestNormal returns the smallest positive normal value of a float
// kind (2^-14 for f16), or 1 for an integer kind.
func SmallestNormal(k ir.ElemKind) float64 {
	if f, ok := formatOf(k); ok {
		return math.Ldexp(1, f.emin())
	}
	return 1
}

// SmallestSubnormal returns the smallest positive subnormal value of a
// float kind (2^-24 for f16, 2^-9 for f8E4M3FN), or 1 for an integer kind.
func SmallestSubnormal(k ir.ElemKind) float64 {
	if f, ok := formatOf(k); ok {
		return math.Ldexp(1, f.emin()-f.man)
	}
	return 1
}

// ULP returns one unit in the last place of float kind k at magnitude |x|:
// the spacing of k's values in the binade holding |x| rounded to k (the
// subnormal spacing below the normals), +Inf where |x| rounds beyond k's
// finite range, and 1 for a kind that is not a float.
func ULP(x float64, k ir.ElemKind) float64 {
	f, ok := formatOf(k)
	if !ok {
		return 1
	}
	a := math.Abs(f.round(math.Abs(x)))
	if math.IsInf(a, 0) || math.IsNaN(a) {
		return math.Inf(1)
	}
	if a == 0 {
		return math.Ldexp(1, f.emin()-f.man)
	}
	return math.Ldexp(1, f.quantum(a))
}

// ULPDiff returns the distance in units in the last place of kind k between
// a and b. It is 0 when both are NaN or a == b (+0 and -0 included, and
// equal infinities), and +Inf when exactly one is NaN or one is an infinity
// the other is not. Otherwise it counts the representable values of k
// stepped over: neighbours are 1 apart, the smallest subnormals on either
// side of zero 2 apart, and a value that k cannot represent lies at a
// fractional position between its neighbours (so ULPDiff(exact, rounded, k)
// is at most 0.5 for a correctly rounded result). For integer kinds the
// distance is |a - b|.
func ULPDiff(a, b float64, k ir.ElemKind) float64 {
	na, nb := math.IsNaN(a), math.IsNaN(b)
	switch {
	case na && nb:
		return 0
	case na || nb:
		return math.Inf(1)
	case a == b:
		return 0
	case math.IsInf(a, 0) || math.IsInf(b, 0):
		return math.Inf(1)
	}
	if k == ir.F64 {
		return ulpDiff64(a, b)
	}
	f, ok := formatOf(k)
	if !ok {
		return math.Abs(a - b)
	}
	return math.Abs(f.ordinal(a) - f.ordinal(b))
}

// ulpDiff64 counts float64 steps exactly through the bit patterns, which
// are ordered like the values within each sign.
func ulpDiff64(a, b float64) float64 {
	ord := func(v float64) int64 {
		bits := int64(math.Float64bits(math.Abs(v)))
		if v < 0 {
			return -bits
		}
		return bits
	}
	oa, ob := ord(a), ord(b)
	if (oa < 0) == (ob < 0) {
		d := oa - ob
		if d < 0 {
			d = -d
		}
		return float64(d)
	}
	// opposite signs: the difference may not fit an int64
	return math.Abs(float64(oa)) + math.Abs(float64(ob))
}
