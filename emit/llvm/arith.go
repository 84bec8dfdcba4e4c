package llvmemit

import (
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// The element-wise ops. Floats are f32 or f64 (the verifier casts narrow
// floats away first); integers are i8 to i64 and index, signed or not.
// Every op follows the reference interpreter (dialects/graph/eval):
//
//   - +, -, *, / and sqrt are the IEEE operations of the type;
//   - max and min propagate NaN and order -0 below +0 (IEEE 754-2019
//     maximum and minimum), built from fcmp and select because LLVM 14's
//     maxnum and minnum drop NaN;
//   - integer arithmetic wraps; integer division truncates toward zero,
//     and gives 0 for a zero divisor (the interpreter rejects it; native
//     code must not trap);
//   - the transcendental functions of f32 are computed in f64 and rounded
//     once (mathfn.go), as the interpreter computes them.

var unaryOps = map[string]bool{
	loop.OpNeg: true, loop.OpAbs: true, loop.OpExp: true, loop.OpExp2: true, loop.OpLog: true,
	loop.OpLog2: true, loop.OpLog1p: true, loop.OpExpm1: true, loop.OpSqrt: true, loop.OpRsqrt: true,
	loop.OpReciprocal: true, loop.OpTanh: true, loop.OpSigmoid: true, loop.OpSilu: true,
	loop.OpGelu: true, loop.OpRelu: true, loop.OpSin: true, loop.OpCos: true, loop.OpFloor: true,
	loop.OpCeil: true, loop.OpRound: true,
}

var binaryOps = map[string]bool{
	loop.OpAdd: true, loop.OpSub: true, loop.OpMul: true, loop.OpDiv: true,
	loop.OpMax: true, loop.OpMin: true, loop.OpPow: true,
}

// operands returns the LLVM values of op's operands.
func (fe *fnEmitter) operands(op *ir.Operation) ([]value.Value, error) {
	vs := make([]value.Value, op.NumOperands())
	for i := range vs {
		v, err := fe.val(op.Operand(i))
		if err != nil {
			return nil, err
		}
		vs[i] = v
	}
	return vs, nil
}

// emitConst: `%c = loop.const {value = 0.5} : vector<8xf32>` is a splat
// constant; narrow floats are their bit patterns.
func (fe *fnEmitter) emitConst(op *ir.Operation) error {
	t := op.Result(0).Type()
	vt, err := valueType(t)
	if err != nil {
		return ir.OpError(op, "%v", err)
	}
	c, err := elemConst(elemKind(t), loop.ConstOp{Operation: op}.Value())
	if err != nil {
		return ir.OpError(op, "%v", err)
	}
	fe.vals[op.Result(0)] = splat(vt, c)
	return nil
}

// emitBroadcast: `%v = loop.broadcast %s : (f32) -> vector<8xf32>` is an
// insertelement and a shufflevector with an all-zero mask.
func (fe *fnEmitter) emitBroadcast(op *ir.Operation) error {
	s, err := fe.val(op.Operand(0))
	if err != nil {
		return err
	}
	vt, err := valueType(op.Result(0).Type())
	if err != nil {
		return ir.OpError(op, "%v", err)
	}
	fe.vals[op.Result(0)] = fe.splatValue(vt, s)
	return nil
}

// splatValue broadcasts the scalar s to the vector type vt.
func (fe *fnEmitter) splatValue(vt types.Type, s value.Value) value.Value {
	w := widthOf(vt)
	if w == 0 {
		return s
	}
	b := fe.cur
	ins := b.NewInsertElement(constant.NewUndef(vt), s, constant.NewInt(types.I32, 0))
	mask := constant.NewZeroInitializer(types.NewVector(uint64(w), types.I32))
	return b.NewShuffleVector(ins, constant.NewUndef(vt), mask)
}

// emitTranspose: `%c:16 = loop.transpose %r0, ..., %r15 : vector<16xbf16>`,
// as log2(W) rounds of two-operand shuffles. The round of distance d
// swaps, in every pair of rows r and r+d (r without the bit d), the
// lanes of r with the bit d set and the lanes of r+d without it: the
// bit d of the row and of the lane trade places, and after the rounds
// of d = W/2 down to 1 every element (i, j) is at (j, i). W*log2(W)
// shuffles for W*W elements (64 for 16 x 16), each an unpack or a
// two-table permute on x86.
func (fe *fnEmitter) emitTranspose(op *ir.Operation) error {
	n := op.NumOperands()
	rows := make([]value.Value, n)
	for i := range rows {
		v, err := fe.val(op.Operand(i))
		if err != nil {
			return err
		}
		rows[i] = v
	}
	if n != op.NumResults() || n < 2 || n&(n-1) != 0 || widthOf(rows[0].Type()) != n {
		return ir.OpError(op, "is malformed: it transposes W vectors of W lanes into W results, W a power of two")
	}
	mt := types.NewVector(uint64(n), types.I32)
	for d := n / 2; d >= 1; d /= 2 {
		lo := make([]constant.Constant, n)
		hi := make([]constant.Constant, n)
		for c := range n {
			if c&d == 0 {
				lo[c] = constant.NewInt(types.I32, int64(c))   // row r keeps its lane
				hi[c] = constant.NewInt(types.I32, int64(c+d)) // row r+d takes row r's lane c+d
			} else {
				lo[c] = constant.NewInt(types.I32, int64(n+c-d)) // row r takes row r+d's lane c-d
				hi[c] = constant.NewInt(types.I32, int64(n+c))   // row r+d keeps its lane
			}
		}
		loMask, hiMask := constant.NewVector(mt, lo...), constant.NewVector(mt, hi...)
		for r := range n {
			if r&d != 0 {
				continue
			}
			a, b := rows[r], rows[r+d]
			rows[r] = fe.cur.NewShuffleVector(a, b, loMask)
			rows[r+d] = fe.cur.NewShuffleVector(a, b, hiMask)
		}
	}
	for i, v := range rows {
		fe.vals[op.Result(i)] = v
	}
	return nil
}

// emitIndexArith: `%k = loop.addi %i, %j : index` and friends, on i64.
func (fe *fnEmitter) emitIndexArith(op *ir.Operation) error {
	vs, err := fe.operands(op)
	if err != nil {
		return err
	}
	a, c := vs[0], vs[1]
	b := fe.cur
	var r value.Value
	switch op.Name() {
	case loop.OpAddi:
		r = b.NewAdd(a, c)
	case loop.OpSubi:
		r = b.NewSub(a, c)
	case loop.OpMuli:
		r = b.NewMul(a, c)
	case loop.OpDivi:
		r = b.NewSDiv(a, c)
	case loop.OpRemi:
		r = b.NewSRem(a, c)
	case loop.OpMini:
		r = b.NewSelect(b.NewICmp(enum.IPredSLT, a, c), a, c)
	}
	fe.vals[op.Result(0)] = r
	return nil
}

// emitClampIndex: `%j = loop.clamp_index %t, %n : (i64, index) -> index`
// widens the integer to i64 (signed, or unsigned for ui*) and clamps it
// to max(0, min(t, n - 1)).
func (fe *fnEmitter) emitClampIndex(op *ir.Operation) error {
	vs, err := fe.operands(op)
	if err != nil {
		return err
	}
	k := elemKind(op.Operand(0).Type())
	x := fe.resizeInt(vs[0], k, ir.I64, types.I64)
	b := fe.cur
	last := b.NewSub(vs[1], iconst(types.I64, 1))
	x = b.NewSelect(b.NewICmp(enum.IPredSLT, x, last), x, last)
	zero := iconst(types.I64, 0)
	fe.vals[op.Result(0)] = b.NewSelect(b.NewICmp(enum.IPredSGT, x, zero), x, zero)
	return nil
}

// emitCmp: `%c = loop.cmp %x, %y {predicate = "lt"}` is an ordered fcmp
// (false with NaN) except "ne", which is unordered (true with NaN), or
// an icmp signed or not as the operand type is.
func (fe *fnEmitter) emitCmp(op *ir.Operation) error {
	vs, err := fe.operands(op)
	if err != nil {
		return err
	}
	pred := loop.CmpOp{Operation: op}.Predicate()
	k := elemKind(op.Operand(0).Type())
	b := fe.cur
	if k.IsFloat() {
		fp := map[string]enum.FPred{
			"eq": enum.FPredOEQ, "ne": enum.FPredUNE, "lt": enum.FPredOLT,
			"le": enum.FPredOLE, "gt": enum.FPredOGT, "ge": enum.FPredOGE,
		}[pred]
		if fp == 0 {
			return ir.OpError(op, "unknown predicate '%s'", pred)
		}
		fe.vals[op.Result(0)] = b.NewFCmp(fp, vs[0], vs[1])
		return nil
	}
	ip, ok := intPred(pred, k.IsUnsigned())
	if !ok {
		return ir.OpError(op, "unknown predicate '%s'", pred)
	}
	fe.vals[op.Result(0)] = b.NewICmp(ip, vs[0], vs[1])
	return nil
}

// intPred maps a predicate to an icmp predicate of the right signedness.
func intPred(pred string, unsigned bool) (enum.IPred, bool) {
	signed := map[string]enum.IPred{
		"eq": enum.IPredEQ, "ne": enum.IPredNE, "lt": enum.IPredSLT,
		"le": enum.IPredSLE, "gt": enum.IPredSGT, "ge": enum.IPredSGE,
	}
	uns := map[string]enum.IPred{
		"eq": enum.IPredEQ, "ne": enum.IPredNE, "lt": enum.IPredULT,
		"le": enum.IPredULE, "gt": enum.IPredUGT, "ge": enum.IPredUGE,
	}
	if unsigned {
		p, ok := uns[pred]
		return p, ok
	}
	p, ok := signed[pred]
	return p, ok
}

// emitSelect: `%r = loop.select %c, %a, %b` is a select.
func (fe *fnEmitter) emitSelect(op *ir.Operation) error {
	vs, err := fe.operands(op)
	if err != nil {
		return err
	}
	fe.vals[op.Result(0)] = fe.cur.NewSelect(vs[0], vs[1], vs[2])
	return nil
}

// emitFma: `%r = loop.fma %a, %b, %c` is llvm.fma (one rounding) on
// floats, a wrapping multiply and add on integers.
func (fe *fnEmitter) emitFma(op *ir.Operation) error {
	vs, err := fe.operands(op)
	if err != nil {
		return err
	}
	t := vs[0].Type()
	if elemKind(op.Operand(0).Type()).IsFloat() {
		fe.vals[op.Result(0)] = fe.cur.NewCall(fe.me.intrinsic("llvm.fma", t, t, t, t), vs[0], vs[1], vs[2])
		return nil
	}
	fe.vals[op.Result(0)] = fe.cur.NewAdd(fe.cur.NewMul(vs[0], vs[1]), vs[2])
	return nil
}

// emitReduce: `%s = loop.reduce %v {kind = "add"} : (vector<8xf32>) -> f32`.
// A float sum is llvm.vector.reduce.fadd without reassociation, which adds
// the lanes in order; max and min halve the vector with NaN-propagating
// steps (their result does not depend on the order).
func (fe *fnEmitter) emitReduce(op *ir.Operation) error {
	v, err := fe.val(op.Operand(0))
	if err != nil {
		return err
	}
	kind := loop.ReduceOp{Operation: op}.Kind()
	k := elemKind(op.Operand(0).Type())
	vt := v.Type()
	et := scalarOf(vt)
	b := fe.cur
	var r value.Value
	switch {
	case k.IsFloat() && kind == "add":
		f := fe.me.declare("llvm.vector.reduce.fadd."+mangle(vt), et, et, vt)
		r = b.NewCall(f, fconst(et, negZero), v)
	case k.IsFloat():
		r = fe.reduceTree(v, func(x, y value.Value) value.Value { return fe.fminmax(x, y, kind == "max") })
	default:
		name := map[string]string{"add": "add", "max": "smax", "min": "smin"}[kind]
		if k.IsUnsigned() && kind != "add" {
			name = "u" + name[1:]
		}
		if name == "" {
			return ir.OpError(op, "unknown reduction kind '%s'", kind)
		}
		if k == ir.I1 {
			return ir.OpError(op, "cannot reduce i1 values")
		}
		r = b.NewCall(fe.me.declare("llvm.vector.reduce."+name+"."+mangle(vt), et, vt), v)
	}
	fe.vals[op.Result(0)] = r
	return nil
}

// negZero is -0.0, the identity of IEEE addition.
var negZero = func() float64 { z := 0.0; return -z }()

// reduceTree combines the lanes of v pairwise: the upper half with the
// lower half until one lane is left.
func (fe *fnEmitter) reduceTree(v value.Value, combine func(x, y value.Value) value.Value) value.Value {
	for w := widthOf(v.Type()); w > 1; w = widthOf(v.Type()) {
		half := w / 2
		lo := make([]constant.Constant, half)
		hi := make([]constant.Constant, half)
		for i := 0; i < half; i++ {
			lo[i] = constant.NewInt(types.I32, int64(i))
			hi[i] = constant.NewInt(types.I32, int64(w-half+i))
		}
		mt := types.NewVector(uint64(half), types.I32)
		a := fe.cur.NewShuffleVector(v, constant.NewUndef(v.Type()), constant.NewVector(mt, lo...))
		c := fe.cur.NewShuffleVector(v, constant.NewUndef(v.Type()), constant.NewVector(mt, hi...))
		r := combine(a, c)
		if w%2 == 1 {
			// an odd lane out joins the first lane
			last := fe.cur.NewExtractElement(v, constant.NewInt(types.I32, int64(half)))
			first := fe.cur.NewExtractElement(r, constant.NewInt(types.I32, 0))
			r = fe.cur.NewInsertElement(r, combine(first, last), constant.NewInt(types.I32, 0))
		}
		v = r
		if half == 1 {
			return fe.cur.NewExtractElement(v, constant.NewInt(types.I32, 0))
		}
	}
	if widthOf(v.Type()) == 1 {
		return fe.cur.NewExtractElement(v, constant.NewInt(types.I32, 0))
	}
	return v
}

// fminmax is IEEE 754-2019 maximum (or minimum) of two floats:
//
//	NaN if either is NaN; the larger (smaller) otherwise; for equal
//	values the AND (OR) of their bits, so max(-0, +0) = +0 and
//	min(-0, +0) = -0.
func (fe *fnEmitter) fminmax(a, c value.Value, isMax bool) value.Value {
	b := fe.cur
	t := a.Type()
	it := withScalar(t, intOfFloat(scalarOf(t)))
	var pick value.Value
	if isMax {
		pick = b.NewSelect(b.NewFCmp(enum.FPredOGT, a, c), a, c)
	} else {
		pick = b.NewSelect(b.NewFCmp(enum.FPredOLT, a, c), a, c)
	}
	ai, ci := b.NewBitCast(a, it), b.NewBitCast(c, it)
	var bits value.Value
	if isMax {
		bits = b.NewAnd(ai, ci)
	} else {
		bits = b.NewOr(ai, ci)
	}
	pick = b.NewSelect(b.NewFCmp(enum.FPredOEQ, a, c), b.NewBitCast(bits, t), pick)
	// a NaN c was picked already (no comparison with it holds)
	return b.NewSelect(b.NewFCmp(enum.FPredUNO, a, a), a, pick)
}

// intOfFloat is the integer type of a float's width.
func intOfFloat(t types.Type) types.Type {
	switch t {
	case types.Double:
		return types.I64
	case types.Half:
		return types.I16
	}
	return types.I32
}

// emitBinary: `%z = loop.add %x, %y : vector<8xf32>` and the other binary ops.
func (fe *fnEmitter) emitBinary(op *ir.Operation) error {
	vs, err := fe.operands(op)
	if err != nil {
		return err
	}
	a, c := vs[0], vs[1]
	k := elemKind(op.Operand(0).Type())
	b := fe.cur
	var r value.Value
	if k.IsFloat() {
		switch op.Name() {
		case loop.OpAdd:
			r = b.NewFAdd(a, c)
		case loop.OpSub:
			r = b.NewFSub(a, c)
		case loop.OpMul:
			r = b.NewFMul(a, c)
		case loop.OpDiv:
			r = b.NewFDiv(a, c)
		case loop.OpMax:
			r = fe.fminmax(a, c, true)
		case loop.OpMin:
			r = fe.fminmax(a, c, false)
		case loop.OpPow:
			r = fe.viaF64(func(d ...value.Value) value.Value { return fe.libm("pow", d...) }, a, c)
		}
		fe.vals[op.Result(0)] = r
		return nil
	}
	if k == ir.I1 {
		return ir.OpError(op, "does not take i1 operands")
	}
	switch op.Name() {
	case loop.OpAdd:
		r = b.NewAdd(a, c)
	case loop.OpSub:
		r = b.NewSub(a, c)
	case loop.OpMul:
		r = b.NewMul(a, c)
	case loop.OpDiv:
		r = fe.intDiv(a, c, k.IsUnsigned())
	case loop.OpMax, loop.OpMin:
		p, _ := intPred(map[string]string{loop.OpMax: "gt", loop.OpMin: "lt"}[op.Name()], k.IsUnsigned())
		r = b.NewSelect(b.NewICmp(p, a, c), a, c)
	default:
		return ir.OpError(op, "does not take integer operands")
	}
	fe.vals[op.Result(0)] = r
	return nil
}

// intDiv divides truncating toward zero without trapping: a zero divisor
// gives 0, and MIN / -1 wraps to MIN.
func (fe *fnEmitter) intDiv(a, c value.Value, unsigned bool) value.Value {
	b := fe.cur
	t := a.Type()
	zero := b.NewICmp(enum.IPredEQ, c, iconst(t, 0))
	safe := b.NewSelect(zero, iconst(t, 1), c)
	if unsigned {
		return b.NewSelect(zero, iconst(t, 0), b.NewUDiv(a, safe))
	}
	bits := scalarOf(t).(*types.IntType).BitSize
	minV := iconst(t, int64(-1)<<(bits-1))
	ovf := b.NewAnd(b.NewICmp(enum.IPredEQ, a, minV), b.NewICmp(enum.IPredEQ, safe, iconst(t, -1)))
	safe2 := b.NewSelect(ovf, iconst(t, 1), safe)
	return b.NewSelect(zero, iconst(t, 0), b.NewSDiv(a, safe2))
}

// emitUnary: `%y = loop.exp %x : vector<8xf32>` and the other unary ops.
func (fe *fnEmitter) emitUnary(op *ir.Operation) error {
	x, err := fe.val(op.Operand(0))
	if err != nil {
		return err
	}
	k := elemKind(op.Operand(0).Type())
	t := x.Type()
	b := fe.cur
	if !k.IsFloat() {
		var r value.Value
		switch op.Name() {
		case loop.OpNeg:
			r = b.NewSub(iconst(t, 0), x)
		case loop.OpAbs:
			r = x
			if !k.IsUnsigned() {
				r = b.NewSelect(b.NewICmp(enum.IPredSLT, x, iconst(t, 0)), b.NewSub(iconst(t, 0), x), x)
			}
		case loop.OpRelu:
			r = x
			if !k.IsUnsigned() {
				r = b.NewSelect(b.NewICmp(enum.IPredSGT, x, iconst(t, 0)), x, iconst(t, 0))
			}
		case loop.OpFloor, loop.OpCeil, loop.OpRound:
			r = x
		default:
			return ir.OpError(op, "does not take integer operands")
		}
		fe.vals[op.Result(0)] = r
		return nil
	}
	if k == ir.F32 {
		var r value.Value
		switch {
		case op.Name() == loop.OpExp:
			r = fe.expF32(x, false, 0)
		case op.Name() == loop.OpExp2:
			r = fe.expF32(x, true, 0)
		case op.Name() == loop.OpSigmoid:
			r = fe.sigmoidF32(x)
		case op.Name() == loop.OpSilu:
			r = fe.siluF32(x)
		case op.Name() == loop.OpGelu && loop.GeluOp{Operation: op}.Approximate() == "tanh" && onlyNarrowed(op.Result(0)):
			r = fe.geluTanhF32(x)
		}
		if r != nil {
			fe.vals[op.Result(0)] = r
			return nil
		}
	}
	var r value.Value
	switch op.Name() {
	case loop.OpNeg:
		r = b.NewFNeg(x)
	case loop.OpAbs:
		r = fe.call1("llvm.fabs", x)
	case loop.OpSqrt:
		r = fe.call1("llvm.sqrt", x)
	case loop.OpFloor:
		r = fe.call1("llvm.floor", x)
	case loop.OpCeil:
		r = fe.call1("llvm.ceil", x)
	case loop.OpRound:
		r = fe.call1("llvm.roundeven", x)
	case loop.OpReciprocal:
		r = b.NewFDiv(fconst(t, 1), x)
	case loop.OpRsqrt:
		r = fe.viaF64(func(d ...value.Value) value.Value {
			return fe.cur.NewFDiv(fconst(d[0].Type(), 1), fe.call1("llvm.sqrt", d[0]))
		}, x)
	case loop.OpRelu:
		// NaN stays NaN, -0 becomes +0
		keep := b.NewSelect(b.NewFCmp(enum.FPredUNO, x, x), x, fconst(t, 0))
		r = b.NewSelect(b.NewFCmp(enum.FPredOGT, x, fconst(t, 0)), x, keep)
	case loop.OpExp:
		r = fe.viaF64(func(d ...value.Value) value.Value { return fe.exp(d[0], k == ir.F64) }, x)
	case loop.OpExp2:
		r = fe.viaF64(func(d ...value.Value) value.Value { return fe.exp2(d[0], k == ir.F64) }, x)
	case loop.OpSigmoid:
		r = fe.viaF64(func(d ...value.Value) value.Value { return fe.sigmoid(d[0], k == ir.F64) }, x)
	case loop.OpSilu:
		r = fe.viaF64(func(d ...value.Value) value.Value { return fe.silu(d[0], k == ir.F64) }, x)
	case loop.OpGelu:
		tanhForm := loop.GeluOp{Operation: op}.Approximate() == "tanh"
		r = fe.viaF64(func(d ...value.Value) value.Value { return fe.gelu(d[0], tanhForm, k == ir.F64) }, x)
	default:
		name, ok := libmUnary[op.Name()]
		if !ok {
			return ir.OpError(op, "cannot be translated to LLVM IR")
		}
		r = fe.viaF64(func(d ...value.Value) value.Value { return fe.libm(name, d...) }, x)
	}
	fe.vals[op.Result(0)] = r
	return nil
}

// libmUnary are the unary ops computed by the C library's double function.
var libmUnary = map[string]string{
	loop.OpLog: "log", loop.OpLog2: "log2", loop.OpLog1p: "log1p", loop.OpExpm1: "expm1",
	loop.OpTanh: "tanh", loop.OpSin: "sin", loop.OpCos: "cos",
}

// call1 calls a one-operand intrinsic overloaded on x's type.
func (fe *fnEmitter) call1(base string, x value.Value) value.Value {
	t := x.Type()
	return fe.cur.NewCall(fe.me.intrinsic(base, t, t), x)
}

// viaF64 computes f on the operands widened to double and rounds the
// result back to float once; double operands are passed as they are.
func (fe *fnEmitter) viaF64(f func(d ...value.Value) value.Value, xs ...value.Value) value.Value {
	t := xs[0].Type()
	if scalarOf(t) == types.Double {
		return f(xs...)
	}
	dt := withScalar(t, types.Double)
	ds := make([]value.Value, len(xs))
	for i, x := range xs {
		ds[i] = fe.cur.NewFPExt(x, dt)
	}
	return fe.cur.NewFPTrunc(f(ds...), t)
}

// libm calls the C library's double function name lane by lane.
func (fe *fnEmitter) libm(name string, xs ...value.Value) value.Value {
	params := make([]types.Type, len(xs))
	for i := range params {
		params[i] = types.Double
	}
	f := fe.me.declare(name, types.Double, params...)
	t := xs[0].Type()
	w := widthOf(t)
	if w == 0 {
		return fe.cur.NewCall(f, xs...)
	}
	var out value.Value = constant.NewUndef(t)
	for i := 0; i < w; i++ {
		idx := constant.NewInt(types.I32, int64(i))
		args := make([]value.Value, len(xs))
		for j, x := range xs {
			args[j] = fe.cur.NewExtractElement(x, idx)
		}
		out = fe.cur.NewInsertElement(out, fe.cur.NewCall(f, args...), idx)
	}
	return out
}
