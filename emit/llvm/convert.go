package llvmemit

import (
	"math"

	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// loop.cast, with the conversions of graph.cast (ir/numeric):
//
//   - float to float rounds to nearest even, once: f64 to a narrow format
//     goes through f32 rounded to odd, which keeps the final rounding
//     exact; overflow gives inf (NaN in f8E4M3FN, which has no inf).
//     f16 uses LLVM's `half` (fpext / fptrunc, vcvtph2ps and vcvtps2ph
//     with F16C); bf16 and the f8 formats are rounded on the bits, since
//     LLVM 14's bfloat cannot be converted on x86 (bf16 with the short
//     form of encodeBF16, the others with encodeNarrow).
//   - float to integer is the interpreter's unchecked conversion: the
//     value is truncated to an i64 where it fits, and NaN or anything
//     outside [-2^63, 2^63) gives INT64_MIN, as x86's cvttsd2si; the i64
//     is then truncated to the result width. (A bare fptosi would be
//     poison out of range.)
//   - integer to float rounds to nearest even (sitofp / uitofp);
//   - integer to integer truncates, or extends by the source's sign.

// narrowFormat describes a float format stored in an integer register.
type narrowFormat struct {
	bits, exp, man, bias int
	// finiteOnly formats (f8E4M3FN) have no infinity and one NaN pattern
	// per sign, S.1111.111.
	finiteOnly bool
}

var narrowFormats = map[ir.ElemKind]narrowFormat{
	ir.BF16:     {bits: 16, exp: 8, man: 7, bias: 127},
	ir.F16:      {bits: 16, exp: 5, man: 10, bias: 15},
	ir.F8E4M3FN: {bits: 8, exp: 4, man: 3, bias: 7, finiteOnly: true},
	ir.F8E5M2:   {bits: 8, exp: 5, man: 2, bias: 15},
}

func (f narrowFormat) emin() int { return 1 - f.bias }

// emitCast: `%f = loop.cast %v : (vector<8xbf16>) -> vector<8xf32>`.
func (fe *fnEmitter) emitCast(op *ir.Operation) error {
	c := loop.CastOp{Operation: op}
	x, err := fe.val(c.Input())
	if err != nil {
		return err
	}
	from, to := elemKind(c.Input().Type()), elemKind(c.Output().Type())
	rt, err := valueType(c.Output().Type())
	if err != nil {
		return ir.OpError(op, "%v", err)
	}
	r, ok := fe.convert(x, from, to, rt)
	if !ok {
		return ir.OpError(op, "cannot convert '%s' to '%s'", from, to)
	}
	fe.vals[op.Result(0)] = r
	return nil
}

// convert converts x, of element kind from, to kind to (register type rt).
func (fe *fnEmitter) convert(x value.Value, from, to ir.ElemKind, rt types.Type) (value.Value, bool) {
	if from == to {
		return x, true
	}
	b := fe.cur
	switch {
	case from.IsFloat() && to.IsFloat():
		return fe.narrow(fe.widen(x, from), to), true
	case from.IsFloat() && to.IsInt():
		return fe.resizeInt(fe.wrapToI64(fe.widen(x, from)), ir.I64, to, rt), true
	case from.IsInt() && to.IsFloat():
		signed := !from.IsUnsigned() && from != ir.I1
		toFloat := func(t types.Type) value.Value {
			if signed {
				return b.NewSIToFP(x, t)
			}
			return b.NewUIToFP(x, t)
		}
		switch to {
		case ir.F32:
			return toFloat(rt), true
		case ir.F64:
			return toFloat(rt), true
		}
		// integers up to 2^53 are exact in double, which then rounds once
		return fe.narrow(toFloat(withScalar(x.Type(), types.Double)), to), true
	case from.IsInt() && to.IsInt():
		return fe.resizeInt(x, from, to, rt), true
	}
	return nil, false
}

// widen turns a float of kind k into float lanes (double for f64).
func (fe *fnEmitter) widen(x value.Value, k ir.ElemKind) value.Value {
	b := fe.cur
	t := x.Type()
	switch k {
	case ir.F32, ir.F64:
		return x
	case ir.BF16:
		i32 := withScalar(t, types.I32)
		return b.NewBitCast(b.NewShl(b.NewZExt(x, i32), iconst(i32, 16)), withScalar(t, types.Float))
	case ir.F16:
		return b.NewFPExt(b.NewBitCast(x, withScalar(t, types.Half)), withScalar(t, types.Float))
	}
	return fe.decodeNarrow(x, narrowFormats[k])
}

// narrow rounds float or double lanes to kind k.
func (fe *fnEmitter) narrow(x value.Value, k ir.ElemKind) value.Value {
	b := fe.cur
	t := x.Type()
	isDouble := scalarOf(t) == types.Double
	switch k {
	case ir.F64:
		if isDouble {
			return x
		}
		return b.NewFPExt(x, withScalar(t, types.Double))
	case ir.F32:
		if isDouble {
			return b.NewFPTrunc(x, withScalar(t, types.Float))
		}
		return x
	}
	if isDouble {
		x = fe.roundToOddFloat(x)
	}
	switch k {
	case ir.F16:
		t = x.Type()
		h := fe.cur.NewFPTrunc(x, withScalar(t, types.Half))
		return fe.cur.NewBitCast(h, withScalar(t, types.I16))
	case ir.BF16:
		return fe.encodeBF16(x)
	}
	return fe.encodeNarrow(x, narrowFormats[k])
}

// encodeBF16 rounds float lanes to bf16 bits, to nearest even. bf16 is
// the upper half of an f32, so rounding the 32-bit pattern is right for
// every finite value, subnormals and the carry into inf included:
//
//	r = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
//
// NaN, whose addition could carry into inf, keeps its upper half made
// quiet.
func (fe *fnEmitter) encodeBF16(x value.Value) value.Value {
	b := fe.cur
	t := x.Type()
	it := withScalar(t, types.I32)
	u := b.NewBitCast(x, it)
	hi := b.NewLShr(u, iconst(it, 16))
	lsb := b.NewAnd(hi, iconst(it, 1))
	r := b.NewLShr(b.NewAdd(b.NewAdd(u, iconst(it, 0x7FFF)), lsb), iconst(it, 16))
	nan := b.NewOr(hi, iconst(it, 0x40))
	r2 := b.NewSelect(b.NewFCmp(enum.FPredUNO, x, x), nan, r)
	return b.NewTrunc(r2, withScalar(t, types.I16))
}

// roundToOddFloat rounds double lanes to float with round-to-odd: the
// truncation toward zero, with the last bit set when inexact. A second
// rounding of the result to a format of at most 22 significant bits is
// then the correct single rounding of the double.
func (fe *fnEmitter) roundToOddFloat(d value.Value) value.Value {
	b := fe.cur
	dt := d.Type()
	ft := withScalar(dt, types.Float)
	it := withScalar(dt, types.I32)
	r := b.NewFPTrunc(d, ft)
	back := b.NewFPExt(r, dt)
	inexact := b.NewFCmp(enum.FPredONE, back, d)
	bits := b.NewBitCast(r, it)
	even := b.NewICmp(enum.IPredEQ, b.NewAnd(bits, iconst(it, 1)), iconst(it, 0))
	away := b.NewFCmp(enum.FPredOGT, fe.call1("llvm.fabs", back), fe.call1("llvm.fabs", d))
	adj := b.NewSelect(away, b.NewSub(bits, iconst(it, 1)), b.NewAdd(bits, iconst(it, 1)))
	fixed := b.NewSelect(b.NewAnd(inexact, even), adj, bits)
	return b.NewBitCast(fixed, ft)
}

// encodeNarrow rounds float lanes to the format f, to nearest even, and
// returns its bit patterns:
//
//	a = |bits|; NaN if a > 0x7F800000
//	normal:    rn = (a + (half - 1) + lsb) >> (23 - man), rebiased
//	subnormal: |x| + 2^(emin-man+23) rounds to the format's quantum in f32;
//	           the bits above those of the constant count quanta
//	overflow:  rn past the largest finite pattern gives inf (NaN in FN)
func (fe *fnEmitter) encodeNarrow(x value.Value, f narrowFormat) value.Value {
	b := fe.cur
	ft := x.Type()
	it := withScalar(ft, types.I32)
	u := b.NewBitCast(x, it)
	sign := b.NewAnd(u, iconst(it, math.MinInt32))
	a := b.NewAnd(u, iconst(it, math.MaxInt32))

	sh := int64(23 - f.man)
	lsb := b.NewAnd(b.NewLShr(a, iconst(it, sh)), iconst(it, 1))
	var rn value.Value = b.NewLShr(b.NewAdd(b.NewAdd(a, iconst(it, 1<<(sh-1)-1)), lsb), iconst(it, sh))
	if rebias := int64(127-f.bias) << f.man; rebias != 0 {
		rn = b.NewSub(rn, iconst(it, rebias))
	}

	quantum := math.Ldexp(1, f.emin()-f.man+23)
	qc := fconst(ft, quantum)
	sum := b.NewFAdd(fe.call1("llvm.fabs", x), qc)
	sub := b.NewSub(b.NewBitCast(sum, it), b.NewBitCast(qc, it))
	isSub := b.NewICmp(enum.IPredULT, a, iconst(it, int64(f.emin()+127)<<23))
	var r value.Value = b.NewSelect(isSub, sub, rn)

	expMask := int64(1)<<f.exp - 1
	var maxFinite, overflow, nan int64
	if f.finiteOnly {
		maxFinite = expMask<<f.man | (1<<f.man - 2)
		overflow = expMask<<f.man | (1<<f.man - 1)
		nan = overflow
	} else {
		maxFinite = expMask<<f.man - 1
		overflow = expMask << f.man
		nan = expMask<<f.man | 1<<(f.man-1)
	}
	r = b.NewSelect(b.NewICmp(enum.IPredUGT, r, iconst(it, maxFinite)), iconst(it, overflow), r)
	r = b.NewSelect(b.NewICmp(enum.IPredUGT, a, iconst(it, 0x7F800000)), iconst(it, nan), r)
	r = b.NewOr(r, b.NewLShr(sign, iconst(it, int64(32-f.bits))))
	return b.NewTrunc(r, withScalar(ft, types.NewInt(uint64(f.bits))))
}

// decodeNarrow widens bit patterns of format f to float lanes (exact):
//
//	normal:    bits << (23 - man), rebiased
//	subnormal: mantissa * 2^(emin - man)
//	inf, NaN:  the all-ones exponent (in FN only S.1111.111 is NaN)
func (fe *fnEmitter) decodeNarrow(x value.Value, f narrowFormat) value.Value {
	b := fe.cur
	t := x.Type()
	it := withScalar(t, types.I32)
	ft := withScalar(t, types.Float)
	u := b.NewZExt(x, it)
	sign := b.NewShl(b.NewAnd(u, iconst(it, 1<<(f.bits-1))), iconst(it, int64(32-f.bits)))
	a := b.NewAnd(u, iconst(it, 1<<(f.bits-1)-1))
	manMask := int64(1)<<f.man - 1
	expMask := int64(1)<<f.exp - 1

	normal := b.NewAdd(b.NewShl(a, iconst(it, int64(23-f.man))), iconst(it, int64(127-f.bias)<<23))
	subVal := b.NewFMul(b.NewUIToFP(b.NewAnd(a, iconst(it, manMask)), ft), fconst(ft, math.Ldexp(1, f.emin()-f.man)))
	subBits := b.NewBitCast(subVal, it)
	isSub := b.NewICmp(enum.IPredULT, a, iconst(it, 1<<f.man))
	r := b.NewSelect(isSub, subBits, normal)
	if f.finiteOnly {
		isNaN := b.NewICmp(enum.IPredEQ, a, iconst(it, expMask<<f.man|manMask))
		r = b.NewSelect(isNaN, iconst(it, 0x7FC00000), r)
	} else {
		special := b.NewICmp(enum.IPredUGE, a, iconst(it, expMask<<f.man))
		infNaN := b.NewOr(iconst(it, 0x7F800000), b.NewShl(b.NewAnd(a, iconst(it, manMask)), iconst(it, int64(23-f.man))))
		r = b.NewSelect(special, infNaN, r)
	}
	return b.NewBitCast(b.NewOr(r, sign), ft)
}

// wrapToI64 converts float or double lanes to i64 as x86-64's cvttsd2si:
// truncation toward zero in [-2^63, 2^63), INT64_MIN for NaN and the rest.
func (fe *fnEmitter) wrapToI64(x value.Value) value.Value {
	b := fe.cur
	t := x.Type()
	it := withScalar(t, types.I64)
	inRange := b.NewAnd(
		b.NewFCmp(enum.FPredOGE, x, fconst(t, -math.Ldexp(1, 63))),
		b.NewFCmp(enum.FPredOLT, x, fconst(t, math.Ldexp(1, 63))))
	safe := b.NewSelect(inRange, x, fconst(t, 0))
	return b.NewSelect(inRange, b.NewFPToSI(safe, it), iconst(it, math.MinInt64))
}

// resizeInt truncates or extends an integer of kind from to kind to.
func (fe *fnEmitter) resizeInt(x value.Value, from, to ir.ElemKind, rt types.Type) value.Value {
	fb, tb := from.BitWidth(), to.BitWidth()
	b := fe.cur
	switch {
	case tb < fb:
		return b.NewTrunc(x, rt)
	case tb > fb:
		if from.IsUnsigned() || from == ir.I1 {
			return b.NewZExt(x, rt)
		}
		return b.NewSExt(x, rt)
	}
	return x
}
