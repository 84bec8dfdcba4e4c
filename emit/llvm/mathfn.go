package llvmemit

import (
	"math"

	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// The transcendental functions. The reference interpreter evaluates them
// in float64 and rounds to float32 once, like a correctly rounded float32
// library; so do these, on double lanes (<8 x float> widens to
// <8 x double>):
//
//   - exp and exp2 of f32 values run inline, vectorised: the argument is
//     clamped to where the f32 result is neither 0 nor inf for sure,
//     split as n*ln2 + r with |r| <= ln2/2, e^r is a degree-9 Taylor
//     polynomial (relative error below 2^-37) and 2^n is built in the
//     exponent bits. Rounded to f32 this is the correctly rounded result
//     except within 2^-37 of a tie between two floats.
//   - sigmoid, silu and gelu ("tanh") are built on that exp, with the
//     interpreter's formulas: sigmoid(x) = 1/(1+e^-x) for x >= 0 and
//     e^x/(1+e^x) otherwise, silu(-inf) = -0, gelu as x * sigmoid(2u).
//   - log, log2, log1p, expm1, tanh, sin, cos, pow and the erfc of exact
//     gelu call the C library's double functions lane by lane.
//   - f64 operations call the C library for exp and exp2 as well.

// Constants of the exp reduction: ln 2 split in a part whose products
// with small integers are exact and the rest (fdlibm's ln2HI, ln2LO), and
// 1.5 * 2^52, which rounds a double to an integer when added.
const (
	// expDegree is the degree of the Taylor polynomial of e^r on
	// |r| <= ln2/2: its relative error r^10/10! is below 2^-37, so an f32
	// result is the correctly rounded one except within 2^-13 of an ULP of
	// a tie.
	expDegree  = 9
	ln2Hi      = 6.93147180369123816490e-01
	ln2Lo      = 1.90821492927058770002e-10
	roundShift = 6755399441055744.0
)

// exp is e^d for double lanes: the C library's exp when exact, otherwise
// the inline reduction, valid for results rounded to f32.
func (fe *fnEmitter) exp(d value.Value, exact bool) value.Value {
	if exact {
		return fe.libm("exp", d)
	}
	return fe.expReduced(d, false)
}

// exp2 is 2^d, as exp.
func (fe *fnEmitter) exp2(d value.Value, exact bool) value.Value {
	if exact {
		return fe.libm("exp2", d)
	}
	return fe.expReduced(d, true)
}

// expReduced computes e^d (2^d when base2) for double lanes holding f32
// values:
//
//	c = clamp(d, -708, 89)                NaN passes through
//	t = c*log2(e) + 1.5*2^52              rounds to the integer n in t's low bits
//	r = c - n*ln2Hi - n*ln2Lo             (fused where the target has FMA; base 2: (c - n) * ln 2)
//	e^r = 1 + r + r^2/2! + ... + r^9/9!
//	2^n = bits((n + 1023) << 52)
func (fe *fnEmitter) expReduced(d value.Value, base2 bool) value.Value {
	b := fe.cur
	t := d.Type()
	it := withScalar(t, types.I64)
	// Below lo the result is 0 in f32 even after a product with the
	// largest float (silu(x) = x * e^x), above hi it is inf; 2^n stays a
	// normal double in between.
	lo, hi := -708.0, 89.0
	if base2 {
		lo, hi = -1022.0, 129.0
	}
	c := b.NewSelect(b.NewFCmp(enum.FPredOGT, d, fconst(t, hi)), fconst(t, hi), d)
	c = b.NewSelect(b.NewFCmp(enum.FPredOLT, c, fconst(t, lo)), fconst(t, lo), c)

	// fmuladd fuses where the target has FMA: one rounding fewer, and the
	// reduction stays as accurate either way
	fmuladd := fe.me.intrinsic("llvm.fmuladd", t, t, t, t)
	var tt, r value.Value
	if base2 {
		tt = b.NewFAdd(c, fconst(t, roundShift))
		n := b.NewFSub(tt, fconst(t, roundShift))
		r = b.NewFMul(b.NewFSub(c, n), fconst(t, math.Ln2))
	} else {
		tt = b.NewCall(fmuladd, c, fconst(t, math.Log2E), fconst(t, roundShift))
		n := b.NewFSub(tt, fconst(t, roundShift))
		r = b.NewCall(fmuladd, n, fconst(t, -ln2Hi), c)
		r = b.NewCall(fmuladd, n, fconst(t, -ln2Lo), r)
	}
	// Horner from the highest power: p = (((c9 r + c8) r + ...) r + 1) r + 1
	fact := 1.0
	coef := make([]float64, expDegree+1)
	for k := range coef {
		if k > 0 {
			fact *= float64(k)
		}
		coef[k] = 1 / fact
	}
	var p value.Value = fconst(t, coef[expDegree])
	for k := expDegree - 1; k >= 0; k-- {
		p = b.NewCall(fmuladd, p, r, fconst(t, coef[k]))
	}
	ni := b.NewSub(b.NewBitCast(tt, it), iconst(it, int64(math.Float64bits(roundShift))))
	scale := b.NewBitCast(b.NewShl(b.NewAdd(ni, iconst(it, 1023)), iconst(it, 52)), t)
	return b.NewFMul(p, scale)
}

// sigmoid is 1/(1+e^-d) for d >= 0 and e^d/(1+e^d) otherwise, so that
// neither side overflows; NaN gives NaN.
func (fe *fnEmitter) sigmoid(d value.Value, exact bool) value.Value {
	t := d.Type()
	e := fe.exp(fe.cur.NewFNeg(fe.call1("llvm.fabs", d)), exact)
	b := fe.cur
	den := b.NewFAdd(fconst(t, 1), e)
	pos := b.NewFDiv(fconst(t, 1), den)
	neg := b.NewFDiv(e, den)
	return b.NewSelect(b.NewFCmp(enum.FPredOGE, d, fconst(t, 0)), pos, neg)
}

// silu is d * sigmoid(d), with its limit -0 at -inf.
func (fe *fnEmitter) silu(d value.Value, exact bool) value.Value {
	s := fe.sigmoid(d, exact)
	return fe.atNegInf(d, fe.cur.NewFMul(d, s))
}

// gelu is x/2 * erfc(-x/sqrt 2), or with the tanh approximation
// x * sigmoid(2u), u = sqrt(2/pi) * (x + 0.044715 x^3); -inf gives -0.
func (fe *fnEmitter) gelu(d value.Value, tanhForm, exact bool) value.Value {
	t := d.Type()
	b := fe.cur
	var r value.Value
	if tanhForm {
		x3 := b.NewFMul(b.NewFMul(b.NewFMul(fconst(t, 0.044715), d), d), d)
		u := b.NewFMul(fconst(t, math.Sqrt(2/math.Pi)), b.NewFAdd(d, x3))
		s := fe.sigmoid(fe.cur.NewFMul(fconst(t, 2), u), exact)
		r = fe.cur.NewFMul(d, s)
	} else {
		arg := b.NewFDiv(b.NewFNeg(d), fconst(t, math.Sqrt2))
		erfc := fe.libm("erfc", arg)
		r = fe.cur.NewFMul(fe.cur.NewFMul(fconst(t, 0.5), d), erfc)
	}
	return fe.atNegInf(d, r)
}

// atNegInf replaces r by -0 where d is -inf (the limit of x*f(x) for the
// functions above, which would compute -inf * 0 = NaN).
func (fe *fnEmitter) atNegInf(d, r value.Value) value.Value {
	t := d.Type()
	b := fe.cur
	return b.NewSelect(b.NewFCmp(enum.FPredOEQ, d, fconst(t, math.Inf(-1))), fconst(t, negZero), r)
}

// ---------------------------------------------------------------------------
// Fast f32 forms
//
// A result that is only ever rounded to f16, bf16 or f8 (the loop value is
// used by nothing but loop.cast to those) does not need f64 lanes: an f32
// error of a few ULPs is 2^-10 to 2^-20 of an ULP of the stored type, so
// the stored value is the interpreter's except where the exact result lies
// within a few f32 ULPs of a rounding midpoint of the narrow type, and there
// it is one ULP off. These forms work on float lanes, twice as many per
// register:
//
//	e^x: Cody-Waite reduction with ln 2 = 0.693359375 - 2.12194440e-4,
//	     Cephes' degree-7 polynomial (about 1 ULP of f32), 2^n applied in
//	     two halves so results down to the f32 subnormals are rounded once.

// onlyNarrowed reports whether every use of v is a loop.cast to a float
// type narrower than f32.
func onlyNarrowed(v *ir.Value) bool {
	if !v.HasUses() {
		return false
	}
	for _, u := range v.Uses() {
		if u.Owner.Name() != loop.OpCast {
			return false
		}
		switch elemKind(u.Owner.Result(0).Type()) {
		case ir.F16, ir.BF16, ir.F8E4M3FN, ir.F8E5M2:
		default:
			return false
		}
	}
	return true
}

// Cephes expf: ln 2 in two parts and the polynomial of e^r - 1 - r.
const (
	expfC1 = 0.693359375
	expfC2 = -2.12194440e-4
	// 1.5 * 2^23 rounds a float to an integer when added
	roundShiftF = 12582912.0
)

var expfPoly = []float64{1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1}

// expFast is e^x (2^x when base2) on float lanes.
func (fe *fnEmitter) expFast(x value.Value, base2 bool) value.Value {
	b := fe.cur
	t := x.Type()
	it := withScalar(t, types.I32)
	lo, hi := -104.0, 89.0
	if base2 {
		lo, hi = -150.0, 129.0
	}
	c := b.NewSelect(b.NewFCmp(enum.FPredOGT, x, fconst(t, hi)), fconst(t, hi), x)
	c = b.NewSelect(b.NewFCmp(enum.FPredOLT, c, fconst(t, lo)), fconst(t, lo), c)
	fmuladd := fe.me.intrinsic("llvm.fmuladd", t, t, t, t)
	var tt, r value.Value
	if base2 {
		tt = b.NewFAdd(c, fconst(t, roundShiftF))
		n := b.NewFSub(tt, fconst(t, roundShiftF))
		r = b.NewFMul(b.NewFSub(c, n), fconst(t, math.Ln2))
	} else {
		tt = b.NewCall(fmuladd, c, fconst(t, math.Log2E), fconst(t, roundShiftF))
		n := b.NewFSub(tt, fconst(t, roundShiftF))
		r = b.NewCall(fmuladd, n, fconst(t, -expfC1), c)
		r = b.NewCall(fmuladd, n, fconst(t, -expfC2), r)
	}
	var p value.Value = fconst(t, expfPoly[0])
	for _, k := range expfPoly[1:] {
		p = b.NewCall(fmuladd, p, r, fconst(t, k))
	}
	// e^r = 1 + r + r^2 * p
	p = b.NewFAdd(b.NewCall(fmuladd, b.NewFMul(r, r), p, r), fconst(t, 1))
	n := b.NewSub(b.NewBitCast(tt, it), iconst(it, int64(math.Float32bits(roundShiftF))))
	n1 := b.NewAShr(n, iconst(it, 1))
	n2 := b.NewSub(n, n1)
	scale := func(k value.Value) value.Value {
		return b.NewBitCast(b.NewShl(b.NewAdd(k, iconst(it, 127)), iconst(it, 23)), t)
	}
	return b.NewFMul(b.NewFMul(p, scale(n1)), scale(n2))
}

// sigmoidFast, siluFast and geluTanhFast are sigmoid, silu and the tanh
// form of gelu on float lanes, with expFast.
func (fe *fnEmitter) sigmoidFast(x value.Value) value.Value {
	t := x.Type()
	e := fe.expFast(fe.cur.NewFNeg(fe.call1("llvm.fabs", x)), false)
	b := fe.cur
	num := b.NewSelect(b.NewFCmp(enum.FPredOGE, x, fconst(t, 0)), fconst(t, 1), e)
	return b.NewFDiv(num, b.NewFAdd(fconst(t, 1), e))
}

func (fe *fnEmitter) siluFast(x value.Value) value.Value {
	s := fe.sigmoidFast(x)
	return fe.atNegInf(x, fe.cur.NewFMul(x, s))
}

func (fe *fnEmitter) geluTanhFast(x value.Value) value.Value {
	t := x.Type()
	b := fe.cur
	x3 := b.NewFMul(b.NewFMul(b.NewFMul(fconst(t, 0.044715), x), x), x)
	u := b.NewFMul(fconst(t, math.Sqrt(2/math.Pi)), b.NewFAdd(x, x3))
	s := fe.sigmoidFast(fe.cur.NewFMul(fconst(t, 2), u))
	return fe.atNegInf(x, fe.cur.NewFMul(x, s))
}
