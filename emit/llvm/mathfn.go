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
// library. The kernels are memory-bound only if the functions on the hot
// paths of LLM chains (exp in softmax, sigmoid and silu in the MLP) cost a
// few vector instructions per element, so those run on float lanes with
// stated bounds (docs/cpu-backend.md), the others on double lanes:
//
//   - exp and exp2 of f32 values (expF32): Cody-Waite reduction, a degree-7
//     polynomial, 2^n in the exponent bits; within 1 ULP (faithful).
//   - sigmoid and silu of f32 values (sigmoidF32, siluF32) on that exp:
//     sigmoid(x) = 1/(1+e^-x) for x >= 0 and e^x/(1+e^x) otherwise, one
//     division either way; silu forms x e^x at a scale of 2^64 so that its
//     subnormal results keep their bits; silu(-inf) = -0.
//   - gelu ("tanh") of f32 values, as x * sigmoid(2u), runs on double
//     lanes: the rounding of u, which sigmoid amplifies, would cost more
//     than an f32 bound worth stating. Its exp there is expReduced below,
//     a degree-9 Taylor polynomial, correctly rounded to f32 except within
//     2^-37 of a tie.
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
// f32 forms on float lanes
//
// e^x for an f32 x, within 1 ULP of the exact value:
//
//	c = clamp(x, -104, 89)                 NaN passes through
//	t = c*log2(e) + 1.5*2^23               rounds to the integer n in t's low bits
//	r = c - n*ln2Hi                        exact (fused; ln2Hi = ln 2 rounded to f32)
//	s = r - n*ln2Lo                        the rest of ln 2 (fused where the target has FMA)
//	e^s = 1 + s (1 + s (1/2 + s p(s)))     Cephes' expf coefficients, Horner to the end,
//	                                       so the last step rounds once
//	2^n applied in two halves              results down to the subnormals round once
//
// A float32 model of the sequence is at most 0.89 ULP from e^x over every
// f32 input; TestF32TranscendentalsSweep holds the native code to 1 ULP.

// Cephes expf's polynomial: e^s = 1 + s + s^2 (expfPoly in s), highest power first.
var expfPoly = []float64{1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1}

// 1.5 * 2^23 rounds a float to an integer when added.
const roundShiftF = 12582912.0

// ln 2 as an f32 and the f32 nearest the rest.
var (
	ln2HiF = float64(float32(math.Ln2))
	ln2LoF = float64(float32(math.Ln2 - float64(float32(math.Ln2))))
)

// expF32 is e^x (2^x when base2) on float lanes, times 2^bias: bias 64
// keeps results that would be subnormal normal, for a caller that scales
// back once at its end. Then the argument must be <= 0 and is clamped at
// -120 instead of -104 (2^(n+64) stays a normal float), and the power of
// two is applied in one factor.
func (fe *fnEmitter) expF32(x value.Value, base2 bool, bias int64) value.Value {
	b := fe.cur
	t := x.Type()
	it := withScalar(t, types.I32)
	lo, hi := -104.0, 89.0
	if base2 {
		lo, hi = -150.0, 129.0
	}
	if bias != 0 {
		lo = -120
	}
	c := x
	if bias == 0 { // with a bias the argument is <= 0 (or NaN)
		c = b.NewSelect(b.NewFCmp(enum.FPredOGT, x, fconst(t, hi)), fconst(t, hi), x)
	}
	c = b.NewSelect(b.NewFCmp(enum.FPredOLT, c, fconst(t, lo)), fconst(t, lo), c)
	fmuladd := fe.me.intrinsic("llvm.fmuladd", t, t, t, t)
	fma := fe.me.intrinsic("llvm.fma", t, t, t, t)
	var tt, s value.Value
	if base2 {
		tt = b.NewFAdd(c, fconst(t, roundShiftF))
		n := b.NewFSub(tt, fconst(t, roundShiftF))
		// c - n is exact; its product with ln 2 rounds once
		s = b.NewFMul(b.NewFSub(c, n), fconst(t, math.Ln2))
	} else {
		tt = b.NewCall(fmuladd, c, fconst(t, math.Log2E), fconst(t, roundShiftF))
		n := b.NewFSub(tt, fconst(t, roundShiftF))
		// llvm.fma, not fmuladd: the exactness of r needs the single rounding
		r := b.NewCall(fma, n, fconst(t, -ln2HiF), c)
		s = b.NewCall(fmuladd, n, fconst(t, -ln2LoF), r)
	}
	var p value.Value = fconst(t, expfPoly[0])
	for _, k := range expfPoly[1:] {
		p = b.NewCall(fmuladd, p, s, fconst(t, k))
	}
	p = b.NewCall(fmuladd, p, s, fconst(t, 1))
	p = b.NewCall(fmuladd, p, s, fconst(t, 1))
	n := b.NewSub(b.NewBitCast(tt, it), iconst(it, int64(math.Float32bits(roundShiftF))))
	pow2 := func(k value.Value) value.Value {
		return b.NewBitCast(b.NewShl(b.NewAdd(k, iconst(it, 127)), iconst(it, 23)), t)
	}
	if bias != 0 {
		return b.NewFMul(p, pow2(b.NewAdd(n, iconst(it, bias))))
	}
	n1 := b.NewAShr(n, iconst(it, 1))
	return b.NewFMul(b.NewFMul(p, pow2(n1)), pow2(b.NewSub(n, n1)))
}

// sigmoidF32 is sigmoid on float lanes: 1/(1+e) for x >= 0 and e/(1+e)
// otherwise, with e = e^-|x|, one division; within 3 ULP.
func (fe *fnEmitter) sigmoidF32(x value.Value) value.Value {
	t := x.Type()
	e := fe.expF32(fe.cur.NewFNeg(fe.call1("llvm.fabs", x)), false, 0)
	b := fe.cur
	num := b.NewSelect(b.NewFCmp(enum.FPredOGE, x, fconst(t, 0)), fconst(t, 1), e)
	return b.NewFDiv(num, b.NewFAdd(fconst(t, 1), e))
}

// siluF32 is silu on float lanes, within 4 ULP: x/(1+e) for x >= 0 and
// x e/(1+e) otherwise, e = e^-|x|. For x < 0 the numerator is formed with
// e scaled by 2^64 and the quotient scaled back once, so that results
// down to the subnormals (x near -108) are not the product of two rounded
// tiny values; below -120, where the result is -0, x is clamped there so
// that the product stays tiny; -inf gives -0.
func (fe *fnEmitter) siluF32(x value.Value) value.Value {
	t := x.Type()
	a := fe.cur.NewFNeg(fe.call1("llvm.fabs", x))
	es := fe.expF32(a, false, 64)
	b := fe.cur
	e := b.NewFMul(es, fconst(t, 0x1p-64))
	pos := b.NewFCmp(enum.FPredOGE, x, fconst(t, 0))
	xc := b.NewSelect(b.NewFCmp(enum.FPredOLT, x, fconst(t, -120)), fconst(t, -120), x)
	num := b.NewSelect(pos, x, b.NewFMul(xc, es))
	q := b.NewFDiv(num, b.NewFAdd(fconst(t, 1), e))
	// -inf needs no case of its own: its numerator is -120 e^-120 2^64
	return b.NewSelect(pos, q, b.NewFMul(q, fconst(t, 0x1p-64)))
}

// geluTanhF32 is the tanh form of gelu on float lanes, x * sigmoid(2u),
// for results only stored in a narrower float (the rounding of u in f32
// is a small fraction of a bf16 or f16 ULP there).
func (fe *fnEmitter) geluTanhF32(x value.Value) value.Value {
	t := x.Type()
	b := fe.cur
	x3 := b.NewFMul(b.NewFMul(b.NewFMul(fconst(t, 0.044715), x), x), x)
	u := b.NewFMul(fconst(t, math.Sqrt(2/math.Pi)), b.NewFAdd(x, x3))
	s := fe.sigmoidF32(fe.cur.NewFMul(fconst(t, 2), u))
	return fe.atNegInf(x, fe.cur.NewFMul(x, s))
}

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
