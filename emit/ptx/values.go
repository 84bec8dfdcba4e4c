package ptx

import (
	"math"
	"strconv"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

// This file translates the ops that compute values: constants,
// broadcasts, reductions over lanes, the element-wise ops, comparisons,
// selections and casts. A vector value is one register per lane; an op on
// vectors is its scalar translation once per lane.
//
// Lanes live in registers by element type:
//
//	f32 -> .f32 %f     f64 -> .f64 %fd     f16, bf16, f8 -> .b16 %h (f8 in the low byte)
//	i8 .. i32, ui8 .. ui32 -> .b32 %r, sign- or zero-extended from their width
//	i64, index -> .b64 %rd    i1 -> .pred %p

// laneClass is the register class of a lane of kind k.
func laneClass(k ir.ElemKind) regClass {
	switch k {
	case ir.F32:
		return rF32
	case ir.F64:
		return rF64
	case ir.F16, ir.BF16, ir.F8E4M3FN, ir.F8E5M2:
		return rB16
	case ir.I1:
		return rPred
	case ir.I64, ir.Index:
		return rB64
	}
	return rB32
}

// lanesOf is the lane count of a scalar (1) or vector type.
func lanesOf(t ir.Type) int {
	if v, ok := t.(ir.VectorType); ok && len(v.Shape) == 1 {
		return int(v.Shape[0])
	}
	return 1
}

// elemKindOf is the element kind of a scalar, vector or memref type.
func elemKindOf(t ir.Type) ir.ElemKind {
	e, _ := ir.ElemOf(t)
	return e.Kind
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// get returns the lanes of value v, used by op.
func (ke *kernelEmitter) get(op *ir.Operation, v *ir.Value) []opnd {
	x, ok := ke.vals[v]
	if !ok {
		if d := v.DefiningOp(); d != nil {
			ke.fail(d, "defines a value the PTX emitter has not computed")
		}
		ke.fail(op, "reads a value the PTX emitter has not computed")
	}
	return x
}

// reg materialises an immediate in a register of its class.
func (ke *kernelEmitter) reg(x opnd) opnd {
	if !x.imm {
		return x
	}
	r := ke.a.reg(x.cls)
	ke.mov(r, x)
	return r
}

// mov copies src into dst, both of dst's class.
func (ke *kernelEmitter) mov(dst, src opnd) {
	switch dst.cls {
	case rPred:
		if src.imm {
			t := ke.a.reg(rB32)
			ke.a.ins("mov.u32", t, opnd{s: src.s, cls: rB32, imm: true})
			ke.a.ins("setp.ne.u32", dst, t, intImm(0, rB32))
			return
		}
		ke.a.ins("mov.pred", dst, src)
	case rB16:
		ke.a.ins("mov.b16", dst, src)
	case rB32:
		ke.a.ins("mov.b32", dst, src)
	case rB64:
		ke.a.ins("mov.b64", dst, src)
	case rF32:
		ke.a.ins("mov.f32", dst, src)
	case rF64:
		ke.a.ins("mov.f64", dst, src)
	}
}

// op1 emits `ins d, args...` with a fresh d of class c and returns d.
func (ke *kernelEmitter) op1(ins string, c regClass, args ...opnd) opnd {
	d := ke.a.reg(c)
	ke.a.ins(ins, append([]opnd{d}, args...)...)
	return d
}

func (ke *kernelEmitter) f32(ins string, args ...opnd) opnd { return ke.op1(ins, rF32, args...) }
func (ke *kernelEmitter) f64(ins string, args ...opnd) opnd { return ke.op1(ins, rF64, args...) }
func (ke *kernelEmitter) b32(ins string, args ...opnd) opnd { return ke.op1(ins, rB32, args...) }
func (ke *kernelEmitter) b64(ins string, args ...opnd) opnd { return ke.op1(ins, rB64, args...) }
func (ke *kernelEmitter) b16(ins string, args ...opnd) opnd { return ke.op1(ins, rB16, args...) }
func (ke *kernelEmitter) pred(ins string, args ...opnd) opnd {
	return ke.op1(ins, rPred, args...)
}

// i32 is a 32-bit integer immediate.
func i32(v int64) opnd { return intImm(v, rB32) }

// ---------------------------------------------------------------------------
// Dispatch

// emitOp translates one op of a kernel.
func (ke *kernelEmitter) emitOp(op *ir.Operation) {
	switch op.Name() {
	case loop.OpConst:
		ke.constant(op)
	case loop.OpAddi, loop.OpSubi, loop.OpMuli, loop.OpDivi, loop.OpRemi, loop.OpMini:
		ke.indexArith(op)
	case loop.OpClampIndex:
		ke.clampIndex(op)
	case loop.OpBroadcast:
		x := ke.get(op, op.Operand(0))
		n := lanesOf(op.Result(0).Type())
		out := make([]opnd, n)
		for i := range out {
			out[i] = x[0]
		}
		ke.vals[op.Result(0)] = out
	case loop.OpReduce:
		ke.reduce(op)
	case loop.OpLoad:
		ke.load(op)
	case loop.OpStore:
		ke.store(op)
	case loop.OpAlloc:
		ke.alloc(op)
	case loop.OpFor:
		ke.emitFor(op)
	case loop.OpCast:
		ke.cast(op)
	case loop.OpCmp:
		ke.compare(op)
	case loop.OpSelect:
		ke.selectOp(op)
	case loop.OpFma:
		ke.fma(op)
	case loop.OpTicket:
		ke.ticket(op)
	case loop.OpGroupSync:
		ke.groupSync(op)
	case loop.OpYield, loop.OpReturn:
	case loop.OpParallel:
		ke.fail(op, "is a second launch grid; a kernel has one")
	default:
		if op.Dialect() == "loop" && op.NumResults() == 1 && op.HasTrait(ir.Elementwise) {
			ke.elementwise(op)
			return
		}
		ke.fail(op, "cannot be translated to PTX")
	}
}

// constant translates `loop.const`.
func (ke *kernelEmitter) constant(op *ir.Operation) {
	c := loop.ConstOp{Operation: op}
	t := op.Result(0).Type()
	k := elemKindOf(t)
	v := c.Value()
	if k == ir.Index {
		n := int64(v)
		ke.ixs[op.Result(0)] = constIx(n)
		ke.mults[op.Result(0)] = capMult(abs64(n))
		return
	}
	x := ke.immediate(op, v, k)
	out := make([]opnd, lanesOf(t))
	for i := range out {
		out[i] = x
	}
	ke.vals[op.Result(0)] = out
}

// immediate spells value v of kind k as an operand: an immediate, or a
// predicate register for i1.
func (ke *kernelEmitter) immediate(op *ir.Operation, v float64, k ir.ElemKind) opnd {
	switch {
	case k == ir.F32:
		return f32Imm(float32(v))
	case k == ir.F64:
		return f64Imm(v)
	case k.IsFloat():
		bits, ok := numeric.ToBits(v, k)
		if !ok {
			ke.fail(op, "has a constant of type %s the PTX emitter cannot encode", k)
		}
		return opnd{s: "0x" + strconv.FormatUint(bits, 16), cls: rB16, imm: true}
	case k == ir.I1:
		p := ke.a.reg(rPred)
		ke.mov(p, intImm(int64(numeric.WrapInt(v, ir.I1)), rB32))
		return p
	case k.IsInt():
		n := int64(numeric.WrapInt(math.Trunc(v), k))
		if k == ir.UI32 {
			n = int64(uint32(n))
		}
		return intImm(n, laneClass(k))
	}
	ke.fail(op, "has a constant of type %s the PTX emitter cannot encode", k)
	return opnd{}
}

// reduce translates `loop.reduce`: the lanes in order, or the value a
// threads loop's combine already reduced.
func (ke *kernelEmitter) reduce(op *ir.Operation) {
	if v, ok := ke.preReduced[op]; ok {
		ke.vals[op.Result(0)] = v
		return
	}
	r := loop.ReduceOp{Operation: op}
	x := ke.get(op, r.Input())
	k := elemKindOf(r.Output().Type())
	acc := x[0]
	for _, y := range x[1:] {
		acc = ke.combine(op, r.Kind(), k, acc, y)
	}
	ke.vals[op.Result(0)] = []opnd{acc}
}

// combine is x `kind` y for reductions: add, or a maximum or minimum
// that propagates NaN.
func (ke *kernelEmitter) combine(op *ir.Operation, kind string, k ir.ElemKind, x, y opnd) opnd {
	switch kind {
	case "add":
		return ke.binaryLane(op, loop.OpAdd, k, x, y)
	case "max":
		return ke.binaryLane(op, loop.OpMax, k, x, y)
	case "min":
		return ke.binaryLane(op, loop.OpMin, k, x, y)
	}
	ke.fail(op, "combines with '%s'; expected add, max or min", kind)
	return opnd{}
}

// elementwise translates the unary and binary element-wise ops lane by lane.
func (ke *kernelEmitter) elementwise(op *ir.Operation) {
	k := elemKindOf(op.Result(0).Type())
	n := lanesOf(op.Result(0).Type())
	if ke.expOnlyInSoftplus(op) {
		return // its log1p computes from its operand
	}
	if z, ok := ke.softplusArg(op); ok {
		out := make([]opnd, n)
		for l := range out {
			out[l] = ke.log1pExpF32(ke.reg(z[l]))
		}
		ke.vals[op.Result(0)] = out
		return
	}
	args := make([][]opnd, op.NumOperands())
	for i, v := range op.Operands() {
		args[i] = ke.get(op, v)
	}
	out := make([]opnd, n)
	for l := range out {
		switch op.NumOperands() {
		case 1:
			out[l] = ke.unaryLane(op, k, args[0][l])
		case 2:
			out[l] = ke.binaryLane(op, op.Name(), k, args[0][l], args[1][l])
		default:
			ke.fail(op, "has %d operands; the PTX emitter expects 1 or 2", op.NumOperands())
		}
	}
	ke.vals[op.Result(0)] = out
}

// fma translates `loop.fma`: one rounding.
func (ke *kernelEmitter) fma(op *ir.Operation) {
	k := elemKindOf(op.Result(0).Type())
	a, b, c := ke.get(op, op.Operand(0)), ke.get(op, op.Operand(1)), ke.get(op, op.Operand(2))
	out := make([]opnd, len(a))
	for l := range out {
		x := ke.reg(a[l]) // immediates go in later operands only
		switch {
		case k == ir.F32:
			out[l] = ke.f32("fma.rn.f32", x, b[l], c[l])
		case k == ir.F64:
			out[l] = ke.f64("fma.rn.f64", x, b[l], c[l])
		case laneClass(k) == rB64:
			out[l] = ke.b64("mad.lo.s64", x, b[l], c[l])
		case laneClass(k) == rB32:
			out[l] = ke.wrap(ke.b32("mad.lo.s32", x, b[l], c[l]), k)
		default:
			ke.fail(op, "computes on %s; the PTX emitter computes fma on f32, f64 and integers", k)
		}
	}
	ke.vals[op.Result(0)] = out
}

// ---------------------------------------------------------------------------
// Integers

// intType is the PTX type of integer arithmetic on kind k.
func intType(k ir.ElemKind) string {
	switch {
	case laneClass(k) == rB64:
		return "s64"
	case k.IsUnsigned():
		return "u32"
	}
	return "s32"
}

// wrap normalises a 32-bit register to kind k: narrow kinds keep their
// low bits, sign- or zero-extended.
func (ke *kernelEmitter) wrap(x opnd, k ir.ElemKind) opnd {
	switch k {
	case ir.I8:
		return ke.b32("bfe.s32", x, i32(0), i32(8))
	case ir.I16:
		return ke.b32("bfe.s32", x, i32(0), i32(16))
	case ir.UI8:
		return ke.b32("and.b32", x, i32(0xff))
	case ir.UI16:
		return ke.b32("and.b32", x, i32(0xffff))
	}
	return x
}

// intUnary computes a unary op on an integer lane.
func (ke *kernelEmitter) intUnary(op *ir.Operation, k ir.ElemKind, x opnd) opnd {
	t := intType(k)
	c := laneClass(k)
	switch op.Name() {
	case loop.OpNeg:
		return ke.wrap(ke.op1("neg."+signed(t), c, ke.reg(x)), k)
	case loop.OpAbs:
		if k.IsUnsigned() {
			return x
		}
		return ke.wrap(ke.op1("abs."+t, c, ke.reg(x)), k)
	case loop.OpRelu:
		if k.IsUnsigned() {
			return x
		}
		return ke.op1("max."+t, c, ke.reg(x), intImm(0, c))
	case loop.OpFloor, loop.OpCeil, loop.OpRound:
		return x
	}
	ke.fail(op, "does not take integer operands")
	return opnd{}
}

// signed turns u32 into s32 for instructions without unsigned forms.
func signed(t string) string {
	if t == "u32" {
		return "s32"
	}
	return t
}

// intBinary computes a binary op on integer lanes.
func (ke *kernelEmitter) intBinary(op *ir.Operation, name string, k ir.ElemKind, x, y opnd) opnd {
	t := intType(k)
	c := laneClass(k)
	var r opnd
	switch name {
	case loop.OpAdd:
		r = ke.op1("add."+signed(t), c, x, y)
	case loop.OpSub:
		r = ke.op1("sub."+signed(t), c, x, y)
	case loop.OpMul:
		r = ke.op1("mul.lo."+signed(t), c, x, y)
	case loop.OpDiv:
		r = ke.op1("div."+t, c, x, y)
	case loop.OpMax:
		return ke.op1("max."+t, c, x, y)
	case loop.OpMin:
		return ke.op1("min."+t, c, x, y)
	default:
		ke.fail(op, "does not take integer operands")
	}
	return ke.wrap(r, k)
}

// ---------------------------------------------------------------------------
// Floats

// unaryLane computes a unary op on one lane.
func (ke *kernelEmitter) unaryLane(op *ir.Operation, k ir.ElemKind, x opnd) opnd {
	switch {
	case k == ir.I1:
		ke.fail(op, "computes on i1, which the PTX emitter does not")
	case k.IsInt():
		return ke.intUnary(op, k, x)
	case k == ir.F32:
		return ke.unaryF32(op, ke.reg(x))
	case k == ir.F64:
		return ke.unaryF64(op, ke.reg(x))
	}
	ke.fail(op, "computes on %s; arithmetic is on f32, f64 and integers", k)
	return opnd{}
}

// binaryLane computes a binary op on one lane.
func (ke *kernelEmitter) binaryLane(op *ir.Operation, name string, k ir.ElemKind, x, y opnd) opnd {
	// immediates go in the second operand only
	if x.imm && !y.imm && commutative(name) {
		x, y = y, x
	}
	x = ke.reg(x)
	switch {
	case k == ir.I1:
		ke.fail(op, "computes on i1, which the PTX emitter does not")
	case k.IsInt():
		return ke.intBinary(op, name, k, x, y)
	case k == ir.F32:
		switch name {
		case loop.OpAdd:
			return ke.f32("add.rn.f32", x, y)
		case loop.OpSub:
			return ke.f32("sub.rn.f32", x, y)
		case loop.OpMul:
			return ke.f32("mul.rn.f32", x, y)
		case loop.OpDiv:
			if r, ok := exactReciprocal(op, name); ok {
				// x / 2^k and x * 2^-k round the same exact value
				return ke.f32("mul.rn.f32", x, fv(r))
			}
			if ke.precisionNeeded(op.Result(0)) <= fastBits && op.Name() == loop.OpDiv {
				// 2 ULP of f32 across the full range, unseen after rounding
				return ke.f32("div.full.f32", x, y)
			}
			return ke.f32("div.rn.f32", x, y)
		case loop.OpMax:
			if y.imm && y.s == f32NegInf.s {
				return x // max.NaN(x, -inf) is x, NaN and -0 included: a maximum's first step
			}
			return ke.f32("max.NaN.f32", x, y)
		case loop.OpMin:
			if y.imm && y.s == f32Inf.s {
				return x
			}
			return ke.f32("min.NaN.f32", x, y)
		case loop.OpPow:
			return ke.powF32(ke.reg(x), ke.reg(y))
		}
	case k == ir.F64:
		switch name {
		case loop.OpAdd:
			return ke.f64("add.rn.f64", x, y)
		case loop.OpSub:
			return ke.f64("sub.rn.f64", x, y)
		case loop.OpMul:
			return ke.f64("mul.rn.f64", x, y)
		case loop.OpDiv:
			if r, ok := exactReciprocal(op, name); ok {
				return ke.f64("mul.rn.f64", x, dv(r))
			}
			return ke.f64("div.rn.f64", x, y)
		case loop.OpMax:
			return ke.maxMinF64("max", ke.reg(x), ke.reg(y))
		case loop.OpMin:
			return ke.maxMinF64("min", ke.reg(x), ke.reg(y))
		case loop.OpPow:
			return ke.powF64(ke.reg(x), ke.reg(y))
		}
	default:
		ke.fail(op, "computes on %s; arithmetic is on f32, f64 and integers", k)
	}
	ke.fail(op, "is not an element-wise op the PTX emitter knows")
	return opnd{}
}

// exactReciprocal is 1/c for a division by a constant c = ±2^k whose
// reciprocal is a normal number of the op's type (quantize's x / 0.5):
// the product by it is the quotient, bit for bit, subnormal, infinite and
// NaN results included.
func exactReciprocal(op *ir.Operation, name string) (float64, bool) {
	if name != loop.OpDiv || op.Name() != loop.OpDiv || op.NumOperands() != 2 {
		return 0, false
	}
	c, ok := constValue(op.Operand(1))
	if !ok || c == 0 || math.IsInf(c, 0) || math.IsNaN(c) {
		return 0, false
	}
	frac, e := math.Frexp(math.Abs(c))
	if frac != 0.5 {
		return 0, false
	}
	// |c| = 2^(e-1); 1/c must be normal in the type
	minExp, maxExp := -126, 127
	if elemKindOf(op.Result(0).Type()) == ir.F64 {
		minExp, maxExp = -1022, 1023
	}
	if k := 1 - e; k < minExp || k > maxExp {
		return 0, false
	}
	return 1 / c, true
}

// maxMinF64 is IEEE 754-2019 maximum / minimum on f64: max.f64 orders -0
// below +0 but returns the other operand for one NaN; a NaN in either
// gives NaN here.
func (ke *kernelEmitter) maxMinF64(which string, x, y opnd) opnd {
	m := ke.f64(which+".f64", x, y)
	nan := ke.pred("setp.nan.f64", x, y)
	s := ke.f64("add.rn.f64", x, y)
	return ke.f64("selp.f64", s, m, nan)
}

// ---------------------------------------------------------------------------
// Comparisons and selections

// compare translates `loop.cmp`: ordered comparisons, except ne, which
// is true for NaN.
func (ke *kernelEmitter) compare(op *ir.Operation) {
	k := elemKindOf(op.Operand(0).Type())
	pred, _ := op.Attr("predicate").(ir.StringAttr)
	x, y := ke.get(op, op.Operand(0)), ke.get(op, op.Operand(1))
	var t string
	switch {
	case k == ir.F32:
		t = "f32"
	case k == ir.F64:
		t = "f64"
	case k == ir.I1:
		t = "u32"
	case k.IsInt():
		t = intType(k)
		if k.IsUnsigned() {
			t = "u32"
		} else if laneClass(k) == rB64 {
			t = "s64"
		}
	default:
		ke.fail(op, "compares %s; the PTX emitter compares f32, f64 and integers", k)
	}
	p := string(pred)
	switch p {
	case "eq", "lt", "le", "gt", "ge":
	case "ne":
		if k.IsFloat() {
			p = "neu"
		}
	default:
		ke.fail(op, "has predicate '%s'", pred)
	}
	out := make([]opnd, len(x))
	for l := range out {
		a, b := x[l], y[l]
		if k == ir.I1 {
			a, b = ke.predToInt(a), ke.predToInt(b)
		}
		out[l] = ke.pred("setp."+p+"."+t, ke.reg(a), b)
	}
	ke.vals[op.Result(0)] = out
}

// predToInt is 1 or 0 in a b32 register.
func (ke *kernelEmitter) predToInt(p opnd) opnd {
	return ke.b32("selp.u32", i32(1), i32(0), p)
}

// selectOp translates `loop.select`.
func (ke *kernelEmitter) selectOp(op *ir.Operation) {
	c := ke.get(op, op.Operand(0))
	x, y := ke.get(op, op.Operand(1)), ke.get(op, op.Operand(2))
	k := elemKindOf(op.Result(0).Type())
	out := make([]opnd, len(x))
	for l := range out {
		out[l] = ke.selectLane(k, c[l], x[l], y[l])
	}
	ke.vals[op.Result(0)] = out
}

// selectLane is c ? x : y.
func (ke *kernelEmitter) selectLane(k ir.ElemKind, c, x, y opnd) opnd {
	switch laneClass(k) {
	case rPred:
		t := ke.pred("and.pred", c, x)
		nc := ke.pred("not.pred", c)
		f := ke.pred("and.pred", nc, y)
		return ke.pred("or.pred", t, f)
	case rB16:
		return ke.b16("selp.b16", x, y, c)
	case rB32:
		return ke.b32("selp.b32", x, y, c)
	case rB64:
		return ke.b64("selp.b64", x, y, c)
	case rF32:
		return ke.f32("selp.f32", x, y, c)
	}
	return ke.f64("selp.f64", x, y, c)
}

// commutative reports whether a binary op's operands may be swapped.
func commutative(name string) bool {
	switch name {
	case loop.OpAdd, loop.OpMul, loop.OpMax, loop.OpMin:
		return true
	}
	return false
}
