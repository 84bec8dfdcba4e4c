package ptx

import (
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

// This file translates loop.cast with the rounding of the reference
// interpreter: float to float rounds to nearest even once (f64 to a
// narrow float through f32 rounded to odd, which makes the second
// rounding exact); integer to float rounds; float to integer truncates to
// 64 bits and wraps to the width, as x86-64 does for in-range values;
// integers wrap. Pairs of f32 lanes become bf16 or f16 with one
// cvt.rn.bf16x2.f32 / cvt.rn.f16x2.f32.

// cast translates `loop.cast`.
func (ke *kernelEmitter) cast(op *ir.Operation) {
	from := elemKindOf(op.Operand(0).Type())
	to := elemKindOf(op.Result(0).Type())
	x := ke.get(op, op.Operand(0))
	out := make([]opnd, len(x))
	l := 0
	for l < len(x) {
		if l+1 < len(x) && from == ir.F32 && (to == ir.BF16 || to == ir.F16) {
			lo, hi := ke.f32PairToHalf(ke.reg(x[l]), ke.reg(x[l+1]), to)
			out[l], out[l+1] = lo, hi
			l += 2
			continue
		}
		out[l] = ke.castLane(op, x[l], from, to)
		l++
	}
	ke.vals[op.Result(0)] = out
}

// halfName is the PTX type name of a 16-bit float kind.
func halfName(k ir.ElemKind) string {
	if k == ir.BF16 {
		return "bf16"
	}
	return "f16"
}

// f8Name is the PTX name of an f8 kind in pairs.
func f8Name(k ir.ElemKind) string {
	if k == ir.F8E5M2 {
		return "e5m2x2"
	}
	return "e4m3x2"
}

// f32PairToHalf rounds two f32 lanes to bf16 or f16 with one instruction:
// cvt.rn.bf16x2.f32 puts its first source in the upper half.
func (ke *kernelEmitter) f32PairToHalf(lo, hi opnd, to ir.ElemKind) (opnd, opnd) {
	a := ke.a
	r := ke.b32("cvt.rn."+halfName(to)+"x2.f32", hi, lo)
	hl, hh := a.reg(rB16), a.reg(rB16)
	a.raw(nil, false, "mov.b32", "{"+hl.s+", "+hh.s+"}", r.s)
	ke.halves[hl.s], ke.halves[hh.s] = halfSrc{r, false}, halfSrc{r, true}
	return hl, hh
}

// castLane converts one lane.
func (ke *kernelEmitter) castLane(op *ir.Operation, x opnd, from, to ir.ElemKind) opnd {
	x = ke.reg(x)
	switch {
	case from == to:
		return x
	case from == ir.I1:
		return ke.fromBool(x, to)
	case to == ir.I1:
		var n opnd
		if from.IsFloat() {
			n = ke.floatToInt64(ke.toWide(x, from), from)
		} else {
			n = ke.intTo64(x, from)
		}
		low := ke.b64("and.b64", n, intImm(1, rB64))
		return ke.pred("setp.ne.s64", low, intImm(0, rB64))
	case from.IsFloat() && to.IsFloat():
		return ke.floatToFloat(x, from, to)
	case from.IsFloat():
		w := ke.toWide(x, from)
		if lo, hi := valueRange(op.Operand(0)); w.cls == rF32 && lo > -(1<<31) && hi < 1<<31 {
			// within 32 bits (and NaN, which both give 0): the 32-bit
			// conversion, and no wrap where the range fits the type
			n := ke.b32("cvt.rzi.s32.f32", w)
			if tlo, thi := to.IntRange(); laneClass(to) != rB64 && float64(tlo) <= lo && hi < float64(thi)+1 {
				return n
			}
			return ke.int64To(ke.b64("cvt.s64.s32", n), to)
		}
		n := ke.floatToInt64(w, from)
		return ke.int64To(n, to)
	case to.IsFloat():
		return ke.intToFloat(x, from, to)
	}
	return ke.int64To(ke.intTo64(x, from), to)
}

// fromBool is 1 or 0 of kind to.
func (ke *kernelEmitter) fromBool(p opnd, to ir.ElemKind) opnd {
	switch laneClass(to) {
	case rF32:
		return ke.f32("selp.f32", f32Imm(1), f32Imm(0), p)
	case rF64:
		return ke.f64("selp.f64", f64Imm(1), f64Imm(0), p)
	case rB16:
		one, _ := numeric.ToBits(1, to)
		return ke.b16("selp.b16", opnd{s: itoa(int64(one)), cls: rB16, imm: true}, intImm(0, rB16), p)
	case rB64:
		return ke.b64("selp.b64", intImm(1, rB64), intImm(0, rB64), p)
	}
	return ke.b32("selp.b32", i32(1), i32(0), p)
}

// toWide widens a float lane to f32 (f64 stays): exact.
func (ke *kernelEmitter) toWide(x opnd, from ir.ElemKind) opnd {
	switch from {
	case ir.F32, ir.F64:
		return x
	case ir.BF16:
		// a bf16 is the upper half of the f32 with its bits: from the
		// word it came in, one and or shift (cvt.f32.bf16 of a half
		// costs ptxas two instructions for the upper one)
		if h, ok := ke.halves[x.s]; ok {
			if h.high {
				return ke.f32("mov.b32", ke.b32("and.b32", h.word, i32(-0x10000)))
			}
			return ke.f32("mov.b32", ke.b32("shl.b32", h.word, i32(16)))
		}
		return ke.f32("cvt.f32.bf16", x)
	case ir.F16:
		return ke.f32("cvt.f32.f16", x)
	case ir.F8E4M3FN, ir.F8E5M2:
		// the f8 value in the low byte becomes the low f16 of the pair
		h2 := ke.b32("cvt.rn.f16x2."+f8Name(from), x)
		lo, hi := ke.a.reg(rB16), ke.a.reg(rB16)
		ke.a.raw(nil, false, "mov.b32", "{"+lo.s+", "+hi.s+"}", h2.s)
		return ke.f32("cvt.f32.f16", lo)
	}
	return x
}

// floatToFloat converts between float kinds with one rounding.
func (ke *kernelEmitter) floatToFloat(x opnd, from, to ir.ElemKind) opnd {
	w := ke.toWide(x, from) // f32 or f64, exact
	wk := ir.F32
	if from == ir.F64 {
		wk = ir.F64
	}
	switch to {
	case ir.F32:
		if wk == ir.F64 {
			return ke.f32("cvt.rn.f32.f64", w)
		}
		return w
	case ir.F64:
		return ke.f64("cvt.f64.f32", w)
	}
	if wk == ir.F64 {
		w = ke.f64ToOddF32(w)
	}
	switch to {
	case ir.BF16, ir.F16:
		return ke.b16("cvt.rn."+halfName(to)+".f32", w)
	case ir.F8E4M3FN, ir.F8E5M2:
		return ke.f32ToF8(w, to)
	}
	return w
}

// f64ToOddF32 rounds an f64 to f32 toward zero and sets the last bit when
// that was inexact (round to odd): rounding the result again to a format
// of 11 bits or fewer is then the correct rounding of the f64.
func (ke *kernelEmitter) f64ToOddF32(x opnd) opnd {
	t := ke.f32("cvt.rz.f32.f64", x)
	back := ke.f64("cvt.f64.f32", t)
	inexact := ke.pred("setp.neu.f64", back, x)
	bits := ke.b32("mov.b32", t)
	odd := ke.b32("or.b32", bits, i32(1))
	sel := ke.b32("selp.b32", odd, bits, inexact)
	return ke.f32("mov.b32", sel)
}

// f32ToF8 rounds an f32 to f8 (in the low byte of a b16). PTX saturates
// finite values past the range (.satfinite); the reference rounds them
// to NaN (f8E4M3FN, which has no infinity) or to infinity (f8E5M2): the
// values past the last midpoint get that pattern here.
func (ke *kernelEmitter) f32ToF8(x opnd, to ir.ElemKind) opnd {
	pair := ke.b16("cvt.rn.satfinite."+f8Name(to)+".f32", x, x)
	lo := ke.b16("and.b16", pair, intImm(0xff, rB16))
	ax := ke.f32("abs.f32", x)
	// f8E4M3FN: 464 is the midpoint of 448 and 480 and rounds to the even
	// 448; beyond it, NaN. f8E5M2: 61440, the midpoint of 57344 and 65536,
	// rounds to the even 65536, which is infinity.
	over := ke.pred("setp.gt.f32", ax, f32Imm(464))
	pos, neg := int64(0x7f), int64(0xff)
	if to == ir.F8E5M2 {
		over = ke.pred("setp.ge.f32", ax, f32Imm(61440))
		pos, neg = 0x7c, 0xfc
	}
	isNeg := ke.pred("setp.lt.f32", x, f32Imm(0))
	pat := ke.b16("selp.b16", intImm(neg, rB16), intImm(pos, rB16), isNeg)
	return ke.b16("selp.b16", pat, lo, over)
}

// floatToInt64 truncates an f32 or f64 toward zero into 64 bits.
func (ke *kernelEmitter) floatToInt64(w opnd, from ir.ElemKind) opnd {
	if w.cls == rF64 {
		return ke.b64("cvt.rzi.s64.f64", w)
	}
	return ke.b64("cvt.rzi.s64.f32", w)
}

// intTo64 sign- or zero-extends an integer lane to 64 bits.
func (ke *kernelEmitter) intTo64(x opnd, from ir.ElemKind) opnd {
	if laneClass(from) == rB64 {
		return x
	}
	if from.IsUnsigned() {
		return ke.b64("cvt.u64.u32", x)
	}
	return ke.b64("cvt.s64.s32", x)
}

// int64To wraps a 64-bit integer to kind to.
func (ke *kernelEmitter) int64To(n opnd, to ir.ElemKind) opnd {
	if laneClass(to) == rB64 {
		return n
	}
	return ke.wrap(ke.b32("cvt.u32.u64", n), to)
}

// intToFloat converts an integer lane to a float kind, rounding once
// (through f64, exact for integers of 32 bits, for the narrow floats).
func (ke *kernelEmitter) intToFloat(x opnd, from, to ir.ElemKind) opnd {
	src := intType(from)
	if from.IsUnsigned() {
		src = "u32"
	}
	switch to {
	case ir.F32:
		return ke.f32("cvt.rn.f32."+src, x)
	case ir.F64:
		return ke.f64("cvt.rn.f64."+src, x)
	}
	d := ke.f64("cvt.rn.f64."+src, x)
	return ke.floatToFloat(d, ir.F64, to)
}
