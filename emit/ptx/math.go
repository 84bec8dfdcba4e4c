package ptx

import (
	"math"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// This file holds the instruction sequences of the element-wise
// functions. The fast instructions are used where their documented error
// keeps the result within the bounds of docs/ptx.md (which docs/numerics.md
// relies on), and never alone where it would not:
//
//   - ex2.approx.f32 (2 ULP over the full range, PTX ISA) is exp2 itself,
//     and the core of exp after a Cody-Waite reduction to |r| <= ln2/2,
//     which keeps the rounding of r * log2(e) below 1/2 ULP of the result;
//   - rsqrt.approx.f32 (relative error 2^-22.9) gets one Newton step;
//   - division, reciprocal and square root are the correctly rounded
//     div.rn, rcp.rn and sqrt.rn; lg2.approx is not used (its error is
//     absolute, not relative, near 1): logarithms use the reduction and
//     polynomials of FreeBSD's msun (logf, log2f, log1pf), expm1 and tanh
//     its expm1f and tanhf, gelu its erfcf;
//   - sin, cos and pow compute in f64 (reduction by pi/2 in two parts,
//     Taylor polynomials; pow as exp(y log x) in f64) and round once.
//
// Every sequence is straight-line code: each branch of the original is
// computed and the right one selected, so a vector's lanes never diverge.
// The arithmetic is written with explicit rounding (add.rn, mul.rn, fma.rn)
// so that ptxas does not contract it differently from what was analysed.
// ±inf and NaN get the reference's results (docs/ptx.md lists them).

// fb is the f32 immediate with bit pattern b.
func fb(b uint32) opnd { return f32Imm(math.Float32frombits(b)) }

// fv is the f32 immediate nearest v.
func fv(v float64) opnd { return f32Imm(float32(v)) }

// dv is the f64 immediate v.
func dv(v float64) opnd { return f64Imm(v) }

var (
	f32Inf    = fb(0x7f800000)
	f32NegInf = fb(0xff800000)
	f32NaN    = fb(0x7fffffff)
	f32NegZ   = fb(0x80000000)
	f64Inf    = f64Imm(math.Inf(1))
	f64NegInf = f64Imm(math.Inf(-1))
	f64NaN    = opnd{s: "0d7FFFFFFFFFFFFFFF", cls: rF64, imm: true}
)

// unaryF32 computes a unary op on an f32 lane.
func (ke *kernelEmitter) unaryF32(op *ir.Operation, x opnd) opnd {
	switch op.Name() {
	case loop.OpNeg:
		return ke.f32("neg.f32", x)
	case loop.OpAbs:
		return ke.f32("abs.f32", x)
	case loop.OpExp:
		if ke.precisionNeeded(op.Result(0)) <= fastBits {
			return ke.expFastF32(x, maxShiftedSum(op))
		}
		return ke.expF32(x, maxShiftedSum(op))
	case loop.OpExp2:
		return ke.f32("ex2.approx.f32", x)
	case loop.OpLog:
		return ke.logF32(x, false)
	case loop.OpLog2:
		return ke.logF32(x, true)
	case loop.OpLog1p:
		return ke.log1pF32(x)
	case loop.OpExpm1:
		return ke.expm1F32(x)
	case loop.OpSqrt:
		return ke.f32("sqrt.rn.f32", x)
	case loop.OpRsqrt:
		return ke.rsqrtF32(x)
	case loop.OpReciprocal:
		return ke.f32("rcp.rn.f32", x)
	case loop.OpTanh:
		if ke.precisionNeeded(op.Result(0)) <= tanhApproxBits {
			return ke.f32("tanh.approx.f32", x)
		}
		return ke.tanhF32(x)
	case loop.OpSigmoid:
		return ke.sigmoidF32(x, false, ke.precisionNeeded(op.Result(0)) <= fastBits)
	case loop.OpSilu:
		return ke.sigmoidF32(x, true, ke.precisionNeeded(op.Result(0)) <= fastBits)
	case loop.OpGelu:
		if a, _ := op.Attr("approximate").(ir.StringAttr); a == "tanh" {
			return ke.geluTanhF32(x, ke.precisionNeeded(op.Result(0)) <= fastBits)
		}
		return ke.geluErfF32(x)
	case loop.OpRelu:
		return ke.f32("max.NaN.f32", x, fv(0))
	case loop.OpSin:
		return ke.sinCosF32(x, false)
	case loop.OpCos:
		return ke.sinCosF32(x, true)
	case loop.OpFloor:
		return ke.f32("cvt.rmi.f32.f32", x)
	case loop.OpCeil:
		return ke.f32("cvt.rpi.f32.f32", x)
	case loop.OpRound:
		return ke.f32("cvt.rni.f32.f32", x)
	}
	ke.fail(op, "is not an element-wise op the PTX emitter knows")
	return opnd{}
}

// selF32 is p ? x : y.
func (ke *kernelEmitter) selF32(p, x, y opnd) opnd { return ke.f32("selp.f32", x, y, p) }

// ---------------------------------------------------------------------------
// exp

// Cody-Waite split of ln 2, for the exp that scales by 2^bias.
const (
	expLnHi = 0x3f317200 // 0.693145751953125
	expLnLo = 0x35bfbe8e // 1.42860677e-6
	log2e   = 0x3fb8aa3b // 1.44269502, log2(e) rounded to f32
	log2eLo = 0x32a57060 // 1.92596299e-8, log2(e) - log2e
	ln2F32  = 0x3f317218 // 0.693147182
)

// expF32 is e^x within 3 ULP:
//
//	t = x * log2e                     (rounded)
//	p = ex2.approx(t)                 (2 ULP of 2^t, full range)
//	r = x * log2e - t + x * log2eLo   (fma: the exact rest of the product)
//	e^x = p + (p ln2) r               (one rounding)
//
// The product's rounding, up to 2^-17.5 of the result near overflow, is
// put back by the last fma with its exact residual (|r ln2| < 2^-17, so
// 2^r = 1 + r ln2 to 2^-35). The sequence has no conversion and no
// integer arithmetic: the multiply-add pipe does all but the one
// ex2.approx. Where ex2.approx's result is 0 (t <= -160, or below 2^-126
// with ftz) the correction keeps it: 0 + 0 r. Where the correction is NaN
// (x = ±inf, where r is NaN; t >= 128, where p = +inf and a negative or
// zero r makes inf - inf or inf 0) p stands, 0 or +inf; a NaN x gives NaN
// either way. Subnormal results take the correction like the others.
//
// With ftz (the terms of a max-shifted sum, maxShiftedSum) results below
// 2^-126 are 0: ex2.approx.ftz.f32 is the bare special-function
// instruction, where for ex2.approx.f32 ptxas adds four instructions that
// halve the argument and square the result below 2^-126.
func (ke *kernelEmitter) expF32(x opnd, ftz bool) opnd {
	t := ke.f32("mul.rn.f32", x, fb(log2e))
	ex2 := "ex2.approx.f32"
	if ftz {
		ex2 = "ex2.approx.ftz.f32"
	}
	p := ke.f32(ex2, t)
	nt := ke.f32("neg.f32", t)
	r := ke.f32("fma.rn.f32", x, fb(log2e), nt)
	r = ke.f32("fma.rn.f32", x, fb(log2eLo), r)
	q := ke.f32("mul.rn.f32", p, fb(ln2F32))
	e := ke.f32("fma.rn.f32", q, r, p)
	nan := ke.pred("setp.nan.f32", e, e)
	return ke.selF32(nan, p, e)
}

// maxShiftedSum reports whether an exp is a term of logsumexp's sum,
// exp(x - m) with m the maximum of the row x (or 0 where that maximum is
// infinite), whose only use is that sum. The row is an sram buffer that
// the loop taking the maximum fills, or one filled before it (a row held
// in its input's type, read through a cast):
//
//	%acc = loop.for ... {combine = ["max"]} { ...; %m1 = loop.max %c, %x; loop.store %x, %row, %i; ... }
//	%m = loop.reduce %acc {kind = "max"}      (%s = loop.select %inf, 0.0, %m, or of max(-inf, %m))
//	loop.for ... {combine = ["add"]} { %v = loop.load %row, %j; %d = loop.sub %v, broadcast(%s);
//	                                    %e = loop.exp %d; %a = loop.add %c2, %e; loop.yield %a }
//
// The largest term is then e^0 = 1, and terms below 2^-126 flushed to 0
// change the sum by less than n 2^-126 relatively.
func maxShiftedSum(op *ir.Operation) bool {
	sub := op.Operand(0).DefiningOp()
	if sub == nil || sub.Name() != loop.OpSub || !op.Result(0).HasUses() {
		return false
	}
	for _, u := range op.Result(0).Users() {
		if u.Name() != loop.OpAdd || !feedsCarriedSum(u) {
			return false
		}
	}
	row, cast, ok := rowRead(sub.Operand(0))
	if !ok || len(row.Indices()) != 1 {
		return false
	}
	red, ok := loop.AsReduce(rowMaximum(sub.Operand(1)))
	if !ok || red.Kind() != "max" {
		return false
	}
	// the maximum is over the values the row holds: the loop that
	// stores them into the row also takes their maximum, or reads them
	// from the row after every store to it
	acc := red.Input()
	first := acc.DefiningOp()
	f, ok := loop.AsFor(first)
	if !ok || f.Dist() != "threads" {
		return false
	}
	j := -1
	for i, r := range f.Values() {
		if r == acc {
			j = i
		}
	}
	if j < 0 || f.Combine()[j] != "max" {
		return false
	}
	body := f.Body().Entry()
	y := yieldedAt(f, j)
	if y == nil {
		return false
	}
	mx := y.DefiningOp()
	if mx == nil || mx.Name() != loop.OpMax {
		return false
	}
	carried := body.Args[1+j]
	var x *ir.Value
	switch {
	case mx.Operand(0) == carried:
		x = mx.Operand(1)
	case mx.Operand(1) == carried:
		x = mx.Operand(0)
	default:
		return false
	}
	if !filledBy(row.Memref(), x, cast, f) {
		return false
	}
	// the row is read at the index of the same iteration space
	g, ok := loop.AsFor(row.Operation.Block().ParentOp())
	if !ok || row.Indices()[0] != g.Body().Entry().Args[0] {
		return false
	}
	for _, p := range [][2]*ir.Value{{f.Lower(), g.Lower()}, {f.Upper(), g.Upper()}, {f.Step(), g.Step()}} {
		a, okA := staticIndex(p[0])
		b, okB := staticIndex(p[1])
		if p[0] != p[1] && !(okA && okB && a == b) {
			return false
		}
	}
	return true
}

// rowRead is the load that v is, or that v casts (from a narrower float).
func rowRead(v *ir.Value) (loop.LoadOp, *ir.Operation, bool) {
	d := v.DefiningOp()
	var cast *ir.Operation
	if d != nil && d.Name() == loop.OpCast {
		cast, d = d, d.Operand(0).DefiningOp()
	}
	l, ok := loop.AsLoad(d)
	return l, cast, ok
}

// rowMaximum is the op behind the shift of a max-shifted sum: through its
// broadcast, the select of 0 for an infinite maximum, and a max with the
// constant -inf.
func rowMaximum(v *ir.Value) *ir.Operation {
	shift := v.DefiningOp()
	if shift != nil && shift.Name() == loop.OpBroadcast {
		shift = shift.Operand(0).DefiningOp()
	}
	if shift != nil && shift.Name() == loop.OpSelect {
		if c, ok := constValue(shift.Operand(1)); !ok || c != 0 {
			return nil
		}
		shift = shift.Operand(2).DefiningOp()
	}
	if shift != nil && shift.Name() == loop.OpMax {
		if c, ok := constValue(shift.Operand(0)); ok && math.IsInf(c, -1) {
			shift = shift.Operand(1).DefiningOp()
		} else if c, ok := constValue(shift.Operand(1)); ok && math.IsInf(c, -1) {
			shift = shift.Operand(0).DefiningOp()
		}
	}
	return shift
}

// filledBy reports whether the values of row, as the sum reads them (cast
// by cast, if not nil), are the x whose maximum loop f takes: f stores x
// into the row at its index, its one store; or x is the same cast of a
// load of the row at f's index, and every store to the row comes before f.
func filledBy(row, x *ir.Value, cast *ir.Operation, f loop.ForOp) bool {
	body := f.Body().Entry()
	if cast == nil {
		stores := 0
		for _, u := range row.Users() {
			if st, ok := loop.AsStore(u); ok {
				stores++
				if st.Value() != x || u.Block() != body || len(st.Indices()) != 1 || st.Indices()[0] != body.Args[0] {
					return false
				}
			}
		}
		return stores == 1
	}
	l, c, ok := rowRead(x)
	if !ok || c == nil || l.Memref() != row || len(l.Indices()) != 1 || l.Indices()[0] != body.Args[0] ||
		elemKindOf(c.Operand(0).Type()) != elemKindOf(cast.Operand(0).Type()) ||
		elemKindOf(c.Result(0).Type()) != elemKindOf(cast.Result(0).Type()) {
		return false
	}
	fb := f.Operation.Block()
	before := map[*ir.Operation]bool{}
	for o := fb.First(); o != nil && o != f.Operation; o = o.Next() {
		before[o] = true
	}
	for _, u := range row.Users() {
		if u.Name() == loop.OpStore && !before[topLevel(u, fb)] {
			return false
		}
	}
	return true
}

// feedsCarriedSum reports whether an add is a loop's running sum: one
// operand the carried value, the result yielded in its place, combined
// with add over the threads.
func feedsCarriedSum(add *ir.Operation) bool {
	body := add.Block()
	f, ok := loop.AsFor(body.ParentOp())
	if !ok || !add.Result(0).HasUses() {
		return false
	}
	for _, u := range add.Result(0).Users() {
		if u.Name() != loop.OpYield {
			return false
		}
		for i, v := range u.Operands() {
			if v == add.Result(0) && (body.Args[1+i] != add.Operand(0) && body.Args[1+i] != add.Operand(1) || f.Combine()[i] != "add") {
				return false
			}
		}
	}
	return true
}

// expF32Reduced is e^(hi + lo) * 2^bias for the pair hi + lo (lo nil:
// 0), within 3 ULP, with ex2.approx's result kept normal: results that
// are subnormal (or that a bias keeps normal, for silu, which multiplies
// them by x) round once, so that a product with them stays accurate.
//
//	j = round(hi * log2 e)            (clamped to [-160, 160])
//	r = hi - j * ln2 (two parts) + lo, |r| <= ln2/2 (+ |lo|)
//	e^x 2^bias = ex2.approx(r * log2 e) * 2^(j + bias)
//
// The product r * log2 e is rounded to 2^-25 absolute at most, which is
// below 0.7 ULP of the result; ex2.approx adds 2 ULP. 2^(j + bias) is
// applied as two exact powers of two.
func (ke *kernelEmitter) expF32Reduced(hi opnd, lo *opnd, bias int) opnd {
	t := ke.f32("mul.rn.f32", hi, fb(log2e))
	j := ke.f32("cvt.rni.f32.f32", t)
	j = ke.f32("max.f32", j, fv(-160))
	j = ke.f32("min.f32", j, fv(160))
	r := ke.f32("fma.rn.f32", j, fb(expLnHi|0x80000000), hi)
	r = ke.f32("fma.rn.f32", j, fb(expLnLo|0x80000000), r)
	if lo != nil {
		r = ke.f32("add.rn.f32", r, *lo)
	}
	r = ke.f32("mul.rn.f32", r, fb(log2e))
	p := ke.f32("ex2.approx.f32", r)
	if bias != 0 {
		j = ke.f32("add.rn.f32", j, fv(float64(bias)))
	}
	return ke.scale2F32(p, j)
}

// divRefined is x / d for a normal d (a denominator of the sequences
// here, like 1 + e^-|x|): the correctly rounded reciprocal, the quotient,
// and one correction with the exact residual x - q d, which gives the
// correctly rounded quotient but in rare cases. Unlike div.rn.f32 it has
// no slow path for a zero or tiny x. Where the correction is NaN (x
// infinite) the product stands.
func (ke *kernelEmitter) divRefined(x, d opnd) opnd {
	r := ke.f32("rcp.rn.f32", d)
	q := ke.f32("mul.rn.f32", ke.reg(x), r)
	nq := ke.f32("neg.f32", q)
	res := ke.f32("fma.rn.f32", nq, d, x)
	q1 := ke.f32("fma.rn.f32", res, r, q)
	nan := ke.pred("setp.nan.f32", q1, q1)
	return ke.selF32(nan, q, q1)
}

// expFastF32 is e^x for a result that keeps at most fastBits: the
// rounding of the product x log2 e is |x| 2^-24 relative at most (2^-17.5
// below overflow), which a result rounded to bf16 or f16 does not see
// (docs/ptx.md). With ftz (the terms of a max-shifted sum) it is the bare
// ex2.approx.ftz of the product. Otherwise it is the square of
// ex2.approx.ftz(x log2(e) / 2), the halving folded into the constant:
// the half power is normal wherever e^x is not below 2^-252 (where both
// are 0), so nothing is flushed, subnormal results round once in the
// square, and overflow and ±inf come out of it as from e^x itself. Three
// instructions, where ex2.approx.f32 alone is five (ptxas halves and
// squares conditionally); the square doubles ex2's 2 ULP.
func (ke *kernelEmitter) expFastF32(x opnd, ftz bool) opnd {
	if ftz {
		t := ke.f32("mul.rn.f32", x, fb(log2e))
		return ke.f32("ex2.approx.ftz.f32", t)
	}
	t := ke.f32("mul.rn.f32", x, fb(log2e-1<<23))
	p := ke.f32("ex2.approx.ftz.f32", t)
	return ke.f32("mul.rn.f32", p, p)
}

// fastBits is the most significand bits (after the leading one) a
// result of the fast forms may be rounded to: f16's 10. tanhApproxBits
// is bf16's 7, for tanh.approx.f32 (relative error 2^-11).
const (
	fastBits       = 10
	tanhApproxBits = 7
)

// scale2F32 is p * 2^j for an integral j in [-160, 160], as two exact
// factors 2^(j>>1) and 2^(j - j>>1), each a normal f32.
func (ke *kernelEmitter) scale2F32(p, j opnd) opnd {
	ji := ke.b32("cvt.rzi.s32.f32", j)
	j1 := ke.b32("shr.s32", ji, i32(1))
	j2 := ke.b32("sub.s32", ji, j1)
	pow := func(e opnd) opnd {
		b := ke.b32("shl.b32", e, i32(23))
		b = ke.b32("add.s32", b, i32(0x3f800000))
		return ke.f32("mov.b32", b)
	}
	p = ke.f32("mul.rn.f32", p, pow(j1))
	return ke.f32("mul.rn.f32", p, pow(j2))
}

// ---------------------------------------------------------------------------
// Logarithms (msun logf, log2f, log1pf)

// Constants of msun's logf: ln 2 in two parts and the polynomial of
// log(1+f) = f - f^2/2 + s*(f^2/2 + R(s^2)), s = f/(2+f).
var (
	logLn2Hi = fb(0x3f317180) // 6.9313812256e-01
	logLn2Lo = fb(0x3717f7d1) // 9.0580006145e-06
	logLg1   = fv(0xaaaaaa.0p-24)
	logLg2   = fv(0xccce13.0p-25)
	logLg3   = fv(0x91e9ee.0p-25)
	logLg4   = fv(0xf89e26.0p-26)
)

// logParts reduces x > 0 to 2^k * (1 + f), with 1 + f in [sqrt(2)/2,
// sqrt(2)): subnormals are scaled by 2^25 first. It returns f and k.
func (ke *kernelEmitter) logParts(x opnd) (f, k opnd) {
	ix := ke.b32("mov.b32", x)
	sub := ke.pred("setp.lt.u32", ix, i32(0x00800000))
	xs := ke.f32("mul.rn.f32", x, fv(math.Ldexp(1, 25)))
	xs = ke.selF32(sub, xs, x)
	k0 := ke.b32("selp.b32", i32(-25), i32(0), sub)
	iy := ke.b32("mov.b32", xs)
	iy = ke.b32("add.s32", iy, i32(0x3f800000-0x3f3504f3))
	k = ke.b32("shr.s32", iy, i32(23))
	k = ke.b32("add.s32", k, i32(-0x7f))
	k = ke.b32("add.s32", k, k0)
	iy = ke.b32("and.b32", iy, i32(0x007fffff))
	iy = ke.b32("add.s32", iy, i32(0x3f3504f3))
	m := ke.f32("mov.b32", iy)
	return ke.f32("sub.rn.f32", m, fv(1)), k
}

// logSeries returns s = f/(2+f), hfsq = f^2/2 and R, the pieces of
// log(1+f) = f - hfsq + s*(hfsq + R).
func (ke *kernelEmitter) logSeries(f opnd) (s, hfsq, r opnd) {
	d := ke.f32("add.rn.f32", f, fv(2))
	// s enters only the correction s*(hfsq + R), of the order of f^3: an
	// error of 2 ULP in s does not reach the result, and div.full has no
	// slow path for f = 0
	s = ke.f32("div.full.f32", f, d)
	z := ke.f32("mul.rn.f32", s, s)
	w := ke.f32("mul.rn.f32", z, z)
	t1 := ke.f32("fma.rn.f32", w, logLg4, logLg2)
	t1 = ke.f32("mul.rn.f32", w, t1)
	t2 := ke.f32("fma.rn.f32", w, logLg3, logLg1)
	t2 = ke.f32("mul.rn.f32", z, t2)
	r = ke.f32("add.rn.f32", t2, t1)
	hf := ke.f32("mul.rn.f32", f, fv(0.5))
	hfsq = ke.f32("mul.rn.f32", hf, f)
	return s, hfsq, r
}

// logTail is k*ln2 + log(1+f) (+ c, a correction of 1+f): msun's
// s*(hfsq+R) + (k*ln2_lo + c) - hfsq + f + k*ln2_hi.
func (ke *kernelEmitter) logTail(f, k opnd, c *opnd) opnd {
	s, hfsq, r := ke.logSeries(f)
	dk := ke.f32("cvt.rn.f32.s32", k)
	u := ke.f32("add.rn.f32", hfsq, r)
	u = ke.f32("mul.rn.f32", s, u)
	lo := ke.f32("mul.rn.f32", dk, logLn2Lo)
	if c != nil {
		lo = ke.f32("add.rn.f32", lo, *c)
	}
	v := ke.f32("add.rn.f32", u, lo)
	v = ke.f32("sub.rn.f32", v, hfsq)
	v = ke.f32("add.rn.f32", v, f)
	hi := ke.f32("mul.rn.f32", dk, logLn2Hi)
	return ke.f32("add.rn.f32", v, hi)
}

// logSpecials gives log's results outside (0, inf): -inf at ±0, NaN
// below 0, +inf at +inf, NaN at NaN.
func (ke *kernelEmitter) logSpecials(x, y opnd) opnd {
	z := ke.pred("setp.eq.f32", x, fv(0))
	sp := ke.selF32(z, f32NegInf, x)
	n := ke.pred("setp.lt.f32", x, fv(0))
	sp = ke.selF32(n, f32NaN, sp)
	pa := ke.pred("setp.gt.f32", x, fv(0))
	pb := ke.pred("setp.lt.f32", x, f32Inf)
	ok := ke.pred("and.pred", pa, pb)
	return ke.selF32(ok, y, sp)
}

// logF32 is ln x (msun logf, below 1 ULP), or log2 x (msun log2f: the
// sum split so that hi * (1/ln2)_hi is exact).
func (ke *kernelEmitter) logF32(x opnd, base2 bool) opnd {
	f, k := ke.logParts(x)
	if !base2 {
		return ke.logSpecials(x, ke.logTail(f, k, nil))
	}
	s, hfsq, r := ke.logSeries(f)
	hi := ke.f32("sub.rn.f32", f, hfsq)
	hb := ke.b32("mov.b32", hi)
	hb = ke.b32("and.b32", hb, i32(-0x1000)) // 0xfffff000
	hi = ke.f32("mov.b32", hb)
	lo := ke.f32("sub.rn.f32", f, hi)
	lo = ke.f32("sub.rn.f32", lo, hfsq)
	u := ke.f32("add.rn.f32", hfsq, r)
	u = ke.f32("mul.rn.f32", s, u)
	lo = ke.f32("add.rn.f32", lo, u)
	ivln2hi, ivln2lo := fb(0x3fb8b000), fb(0xb9389ad4) // 1.4428710938e+00, -1.7605285393e-04
	t := ke.f32("add.rn.f32", lo, hi)
	y := ke.f32("mul.rn.f32", t, ivln2lo)
	y = ke.f32("add.rn.f32", y, ke.f32("mul.rn.f32", lo, ivln2hi))
	y = ke.f32("add.rn.f32", y, ke.f32("mul.rn.f32", hi, ivln2hi))
	y = ke.f32("add.rn.f32", y, ke.f32("cvt.rn.f32.s32", k))
	return ke.logSpecials(x, y)
}

// log1pF32 is ln(1+x) (msun log1pf): near 0 the series on x itself;
// further out log(u) for u = 1+x with the correction c = (1+x) - u.
func (ke *kernelEmitter) log1pF32(x opnd) opnd {
	u := ke.f32("add.rn.f32", x, fv(1))
	iu := ke.b32("mov.b32", u)
	iu = ke.b32("add.s32", iu, i32(0x3f800000-0x3f3504f3))
	kb := ke.b32("shr.s32", iu, i32(23))
	kb = ke.b32("add.s32", kb, i32(-0x7f))
	c1 := ke.f32("sub.rn.f32", u, x)
	c1 = ke.f32("sub.rn.f32", fv(1), c1) // 1 - (u - x), when k >= 2
	c2 := ke.f32("sub.rn.f32", u, fv(1))
	c2 = ke.f32("sub.rn.f32", x, c2) // x - (u - 1)
	k2 := ke.pred("setp.ge.s32", kb, i32(2))
	c := ke.selF32(k2, c1, c2)
	c = ke.f32("div.full.f32", c, u) // a correction below one ULP of the result
	k25 := ke.pred("setp.lt.s32", kb, i32(25))
	c = ke.selF32(k25, c, fv(0))
	iu = ke.b32("and.b32", iu, i32(0x007fffff))
	iu = ke.b32("add.s32", iu, i32(0x3f3504f3))
	fbig := ke.f32("mov.b32", iu)
	fbig = ke.f32("sub.rn.f32", fbig, fv(1))
	// 1 + x in [sqrt(2)/2, sqrt(2)): k = 0, f = x, no correction
	pa := ke.pred("setp.ge.f32", x, fb(0xbe95f619))
	pb := ke.pred("setp.lt.f32", x, fb(0x3ed413d0))
	small := ke.pred("and.pred", pa, pb)
	f := ke.selF32(small, x, fbig)
	k := ke.b32("selp.b32", i32(0), kb, small)
	c = ke.selF32(small, fv(0), c)
	y := ke.logTail(f, k, &c)
	// |x| < 2^-24 (and ±0): x itself
	ax := ke.f32("abs.f32", x)
	tiny := ke.pred("setp.lt.f32", ax, fv(math.Ldexp(1, -24)))
	y = ke.selF32(tiny, x, y)
	below := ke.pred("setp.lt.f32", x, fv(-1))
	y = ke.selF32(below, f32NaN, y)
	m1 := ke.pred("setp.eq.f32", x, fv(-1))
	y = ke.selF32(m1, f32NegInf, y)
	inf := ke.pred("setp.eq.f32", x, f32Inf)
	y = ke.selF32(inf, f32Inf, y)
	nan := ke.pred("setp.nan.f32", x, x)
	return ke.selF32(nan, x, y)
}

// ---------------------------------------------------------------------------
// log1p(e^z) for z <= 0: logaddexp's tail

// Coefficients of log(1 + e^-d) on [0, 1], after ln 2: c1 d + ... + c8 d^8
// (a least-squares fit, 2^-28 from the function; ln 2 is added last as
// its f32 value plus the rest, softplusLn2Lo).
var (
	softplusPoly  = []uint32{0xbf000000, 0x3e000003, 0xb55feb7b, 0xbbaa7ac1, 0xb7a510da, 0x39c975db, 0xb81dc635, 0xb717c675}
	softplusLn2Lo = fb(0xb102e308) // ln 2 - f32(ln 2), -1.90465e-9
)

// softplusArg reports whether a log1p is log(1 + e^z) with z known to be
// at most 0 (logaddexp's max(a, b) + log1p(exp(-|a - b|))), and returns
// the lanes of z.
func (ke *kernelEmitter) softplusArg(op *ir.Operation) ([]opnd, bool) {
	if op.Name() != loop.OpLog1p || elemKindOf(op.Result(0).Type()) != ir.F32 {
		return nil, false
	}
	e := op.Operand(0).DefiningOp()
	if e == nil || e.Name() != loop.OpExp || e.Block() != op.Block() {
		return nil, false
	}
	if _, hi := valueRange(e.Operand(0)); !(hi <= 0) {
		return nil, false
	}
	z, ok := ke.vals[e.Operand(0)]
	return z, ok
}

// expOnlyInSoftplus reports whether every use of an exp is a log1p that
// softplusArg computes from the exp's operand: the exp itself is then
// not emitted.
func (ke *kernelEmitter) expOnlyInSoftplus(op *ir.Operation) bool {
	if op.Name() != loop.OpExp || !op.Result(0).HasUses() {
		return false
	}
	for _, u := range op.Result(0).Users() {
		if u.Name() != loop.OpLog1p || u.Operand(0) != op.Result(0) || u.Block() != op.Block() ||
			elemKindOf(u.Result(0).Type()) != ir.F32 {
			return false
		}
	}
	_, hi := valueRange(op.Operand(0))
	return hi <= 0
}

// log1pExpF32 is log(1 + e^z) for z <= 0, as a function of d = -z, in
// ULPs of max(|y|, |a|, |b|) of the logaddexp it ends (docs/numerics.md):
// the absolute error matters, and it is below 2^-24.4 here.
//
//   - d < 1: a polynomial in d. No exp is involved, so the result near
//     d = 0 (where max(|y|, |a|, |b|) can be as small as ln(2)/2) does not
//     carry ex2.approx's 2 ULP of e^-d ~ 1.
//   - d >= 1 (and ±inf, NaN): e = ex2.approx(z log2 e) <= e^-1, and msun's
//     log1pf series on it without reduction (1 + e < sqrt 2): with
//     s = e/(2 + e) <= 0.16, log1p(e) = e - (e^2/2 - s (e^2/2 + R(s^2))).
//     s enters only the correction, of the order of e^3, so rcp.approx
//     (1 ULP) serves for the division. The rounding of z log2 e is
//     d 2^-24 of e, absolute e d 2^-24 <= 2^-25.4, below the 2 ULP of
//     max(|y|, |a|, |b|) >= (d + log1p(e^-d))/2 >= 0.65 that it may cost.
func (ke *kernelEmitter) log1pExpF32(z opnd) opnd {
	d := ke.f32("neg.f32", z)
	// near: ln 2 + d (c1 + d (c2 + ...))
	q := ke.reg(fb(softplusPoly[len(softplusPoly)-1]))
	for i := len(softplusPoly) - 2; i >= 0; i-- {
		q = ke.f32("fma.rn.f32", q, d, fb(softplusPoly[i]))
	}
	near := ke.f32("fma.rn.f32", d, q, softplusLn2Lo)
	near = ke.f32("add.rn.f32", near, fv(math.Ln2))
	// far: log1p(e), e = e^z
	t := ke.f32("mul.rn.f32", z, fb(log2e))
	e := ke.f32("ex2.approx.ftz.f32", t) // below 2^-126 log1p(e) = e is no error
	den := ke.f32("add.rn.f32", e, fv(2))
	rd := ke.f32("rcp.approx.ftz.f32", den) // den in [2, 3]
	s := ke.f32("mul.rn.f32", e, rd)
	s2 := ke.f32("mul.rn.f32", s, s)
	r := ke.reg(logLg4)
	for _, c := range []opnd{logLg3, logLg2, logLg1} {
		r = ke.f32("fma.rn.f32", r, s2, c)
	}
	r = ke.f32("mul.rn.f32", r, s2)
	he := ke.f32("mul.rn.f32", e, fv(0.5))
	hfsq := ke.f32("mul.rn.f32", he, e)
	u := ke.f32("add.rn.f32", hfsq, r)
	nhfsq := ke.f32("neg.f32", hfsq)
	u = ke.f32("fma.rn.f32", s, u, nhfsq) // s (hfsq + R) - hfsq
	far := ke.f32("add.rn.f32", e, u)
	isNear := ke.pred("setp.lt.f32", d, fv(1))
	return ke.selF32(isNear, near, far)
}

// ---------------------------------------------------------------------------
// expm1, tanh (msun expm1f, tanhf)

// expm1F32 is e^x - 1 (msun expm1f, below 1 ULP): x = k ln2 + r (+ c),
// a rational approximation of e^r - 1 on |r| <= ln2/2, and one of the
// forms of 2^k (e^r - 1) + (2^k - 1) chosen by k to avoid cancellation.
func (ke *kernelEmitter) expm1F32(x opnd) opnd {
	ln2hi, ln2lo := fb(0x3f317180), fb(0x3717f7d1)
	q1, q2 := fb(0xbd088868), fb(0x3acf3010) // -3.3333212137e-2, 1.5807170421e-3
	kf := ke.f32("mul.rn.f32", x, fb(log2e))
	kf = ke.f32("cvt.rni.f32.f32", kf)
	kf = ke.f32("max.f32", kf, fv(-160))
	kf = ke.f32("min.f32", kf, fv(160))
	nkf := ke.f32("neg.f32", kf)
	hi := ke.f32("fma.rn.f32", nkf, ln2hi, x) // exact: k * ln2hi has 16 bits
	lo := ke.f32("mul.rn.f32", kf, ln2lo)
	r := ke.f32("sub.rn.f32", hi, lo)
	c := ke.f32("sub.rn.f32", hi, r)
	c = ke.f32("sub.rn.f32", c, lo)
	hfx := ke.f32("mul.rn.f32", r, fv(0.5))
	hxs := ke.f32("mul.rn.f32", r, hfx)
	r1 := ke.f32("fma.rn.f32", hxs, q2, q1)
	r1 = ke.f32("fma.rn.f32", hxs, r1, fv(1))
	nr1 := ke.f32("neg.f32", r1)
	t := ke.f32("fma.rn.f32", nr1, hfx, fv(3))
	num := ke.f32("sub.rn.f32", r1, t)
	nr := ke.f32("neg.f32", r)
	den := ke.f32("fma.rn.f32", nr, t, fv(6))
	e := ke.f32("div.full.f32", num, den) // a correction term, as in log
	e = ke.f32("mul.rn.f32", hxs, e)
	// k == 0: r - (r*e - hxs)
	nhxs := ke.f32("neg.f32", hxs)
	a0 := ke.f32("fma.rn.f32", r, e, nhxs)
	y0 := ke.f32("sub.rn.f32", r, a0)
	// k != 0: e = r*(e - c) - c - hxs
	d := ke.f32("sub.rn.f32", e, c)
	nc := ke.f32("neg.f32", c)
	ek := ke.f32("fma.rn.f32", r, d, nc)
	ek = ke.f32("sub.rn.f32", ek, hxs)
	rme := ke.f32("sub.rn.f32", r, ek)
	// k == -1: (r - e)/2 - 1/2
	ym1 := ke.f32("fma.rn.f32", rme, fv(0.5), fv(-0.5))
	// k == 1: -2 (e - (r + 1/2)) below r = -1/4, else 1 + 2 (r - e)
	rh := ke.f32("add.rn.f32", r, fv(0.5))
	ya := ke.f32("sub.rn.f32", ek, rh)
	ya = ke.f32("mul.rn.f32", ya, fv(-2))
	yb := ke.f32("fma.rn.f32", rme, fv(2), fv(1))
	lowR := ke.pred("setp.lt.f32", r, fv(-0.25))
	yp1 := ke.selF32(lowR, ya, yb)
	// k < 0 or k > 56: 2^k (r - e + 1) - 1
	yg := ke.f32("add.rn.f32", rme, fv(1))
	yg = ke.scale2F32(yg, kf)
	yg = ke.f32("sub.rn.f32", yg, fv(1))
	// 2 <= k < 23: 2^k (r - e + (1 - 2^-k)); 23 <= k <= 56: 2^k (r - (e + 2^-k) + 1)
	ki := ke.b32("cvt.rzi.s32.f32", kf)
	ufb := ke.b32("sub.s32", i32(0x7f), ki)
	ufb = ke.b32("shl.b32", ufb, i32(23))
	uf := ke.f32("mov.b32", ufb)
	oneMinus := ke.f32("sub.rn.f32", fv(1), uf)
	y23 := ke.f32("add.rn.f32", rme, oneMinus)
	y23 = ke.scale2F32(y23, kf)
	eu := ke.f32("add.rn.f32", ek, uf)
	y56 := ke.f32("sub.rn.f32", r, eu)
	y56 = ke.f32("add.rn.f32", y56, fv(1))
	y56 = ke.scale2F32(y56, kf)
	lt23 := ke.pred("setp.lt.s32", ki, i32(23))
	y := ke.selF32(lt23, y23, y56)
	outside := ke.pred("setp.lt.s32", ki, i32(0))
	gt56 := ke.pred("setp.gt.s32", ki, i32(56))
	outside = ke.pred("or.pred", outside, gt56)
	y = ke.selF32(outside, yg, y)
	is1 := ke.pred("setp.eq.s32", ki, i32(1))
	y = ke.selF32(is1, yp1, y)
	ism1 := ke.pred("setp.eq.s32", ki, i32(-1))
	y = ke.selF32(ism1, ym1, y)
	is0 := ke.pred("setp.eq.s32", ki, i32(0))
	y = ke.selF32(is0, y0, y)
	// |x| < 2^-25: x; x <= -27 ln2: -1; x > 88.72: +inf; NaN: NaN
	ax := ke.f32("abs.f32", x)
	tiny := ke.pred("setp.lt.f32", ax, fb(0x33000000))
	y = ke.selF32(tiny, x, y)
	low := ke.pred("setp.le.f32", x, fb(0xc195b844))
	y = ke.selF32(low, fv(-1), y)
	high := ke.pred("setp.gt.f32", x, fb(0x42b17180))
	y = ke.selF32(high, f32Inf, y)
	nan := ke.pred("setp.nan.f32", x, x)
	return ke.selF32(nan, x, y)
}

// tanhF32 is tanh x (msun tanhf) from one expm1: 1 - 2/(e+2) with
// e = expm1(2|x|) above |x| = log(3)/2, e/(e+2) down to log(5/3)/2,
// -e/(e+2) with e = expm1(-2|x|) below; 1 beyond |x| = 10.
func (ke *kernelEmitter) tanhF32(x opnd) opnd {
	ax := ke.f32("abs.f32", x)
	ux := ke.b32("mov.b32", ax)
	big := ke.pred("setp.gt.u32", ux, i32(0x3f0c9f54))
	mid := ke.pred("setp.gt.u32", ux, i32(0x3e82c578))
	up := ke.f32("mul.rn.f32", ax, fv(2))
	down := ke.f32("mul.rn.f32", ax, fv(-2))
	arg := ke.selF32(mid, up, down)
	e := ke.expm1F32(arg)
	d := ke.f32("add.rn.f32", e, fv(2))
	q := ke.divRefined(fv(2), d)
	tb := ke.f32("sub.rn.f32", fv(1), q)
	tm := ke.divRefined(e, d)
	ts := ke.f32("neg.f32", tm)
	t := ke.selF32(mid, tm, ts)
	t = ke.selF32(big, tb, t)
	huge := ke.pred("setp.gt.u32", ux, i32(0x41200000))
	t = ke.selF32(huge, fv(1), t)
	sub := ke.pred("setp.lt.u32", ux, i32(0x00800000))
	t = ke.selF32(sub, ax, t)
	sx := ke.b32("mov.b32", x)
	neg := ke.pred("setp.lt.s32", sx, i32(0))
	nt := ke.f32("neg.f32", t)
	t = ke.selF32(neg, nt, t)
	nan := ke.pred("setp.nan.f32", x, x)
	return ke.selF32(nan, x, t)
}

// ---------------------------------------------------------------------------
// sigmoid, silu, gelu

// sigmoidF32 is 1/(1+e^-x) for x >= 0 and e^x/(1+e^x) below, one exp of
// -|x| for both (x times that for silu, which is -0 at -inf); fast, the
// exp and the division are the approximate ones.
func (ke *kernelEmitter) sigmoidF32(x opnd, silu, fast bool) opnd {
	if fast {
		return ke.sigmoidFastF32(x, silu)
	}
	ax := ke.f32("abs.f32", x)
	nax := ke.f32("neg.f32", ax)
	if !silu {
		return ke.logisticF32(x, x, ke.expF32(nax, false), false, false)
	}
	// silu: x e^x for x < 0 is representable where e^x alone is subnormal
	// or zero (x down to -104): e^x is formed times 2^64, multiplied by x,
	// and scaled back once
	es := ke.expF32Reduced(nax, nil, 64)
	e := ke.f32("mul.rn.f32", es, fv(math.Ldexp(1, -64)))
	d := ke.f32("add.rn.f32", e, fv(1))
	xe := ke.f32("mul.rn.f32", x, es)
	xe = ke.f32("mul.rn.f32", xe, fv(math.Ldexp(1, -64)))
	pos := ke.pred("setp.ge.f32", x, fv(0))
	y := ke.divRefined(ke.selF32(pos, x, xe), d)
	minf := ke.pred("setp.eq.f32", x, f32NegInf)
	return ke.selF32(minf, f32NegZ, y)
}

// sigmoidFastF32 is the sigmoid of x (x times it for silu) for a result
// rounded to 10 bits or fewer: 1/(1 + e^-x) with e^-x formed times 2^-64,
// so that it stays finite down to x = -120, below which the sigmoid (and
// x times it) is under half the least bf16 or f16, as it is at -120:
//
//	x' = max.NaN(x, -120)                  (-inf gives 0, and -0 for silu)
//	e = ex2.approx.ftz(-x' log2 e - 64)    (e^-x' 2^-64, one fma)
//	s = rcp(e + 2^-64) 2^-64               (the sigmoid; rcpFastF32)
//	y = x' s
//
// The fma's rounding is 2^-16.5 of e at most, ex2.approx 2 ULP and the
// refined reciprocal 1: the sigmoid is within 2^-16 relatively, unseen
// after rounding to 10 bits. ex2's results below 2^-126 are 0 (.ftz, the
// bare special-function instruction: without it ptxas adds a scaling of
// subnormal results), beside 2^-64 that is no error. Eight instructions
// (nine for silu), of which only max.NaN is not on the multiply-add pipe
// or the special-function unit.
func (ke *kernelEmitter) sigmoidFastF32(x opnd, silu bool) opnd {
	x = ke.f32("max.NaN.f32", x, fv(-120))
	t := ke.f32("fma.rn.f32", x, fb(log2e|0x80000000), fv(-64))
	e := ke.f32("ex2.approx.ftz.f32", t)
	d := ke.f32("add.rn.f32", e, fv(math.Ldexp(1, -64)))
	r := ke.rcpFastF32(d)
	sg := ke.f32("mul.rn.f32", r, fv(math.Ldexp(1, -64)))
	if !silu {
		return sg
	}
	return ke.f32("mul.rn.f32", x, sg)
}

// rcpFastF32 is 1/d for a normal d whose reciprocal is normal or
// flushed to 0 with no harm: rcp.approx.ftz (the bare special-function
// instruction; without .ftz ptxas wraps it in a scaling of subnormals)
// refined by one Newton step on the multiply-add pipe, r + r (1 - d r),
// which leaves it within 1 ULP of f32 whatever the hardware's
// approximation: a sigmoid rounded to bf16 then flips its rounding no
// more often than a correctly rounded one would (swiglu's product with u
// would carry such a flip into 2 ULP of its result).
func (ke *kernelEmitter) rcpFastF32(d opnd) opnd {
	r := ke.f32("rcp.approx.ftz.f32", d)
	nd := ke.f32("neg.f32", d)
	e := ke.f32("fma.rn.f32", nd, r, fv(1))
	return ke.f32("fma.rn.f32", r, e, r)
}

// logisticF32 is the sigmoid of z (or x times it) from e = e^-|z|.
func (ke *kernelEmitter) logisticF32(x, z, e opnd, timesX, fast bool) opnd {
	d := ke.f32("add.rn.f32", e, fv(1))
	pos := ke.pred("setp.ge.f32", z, fv(0))
	var num opnd
	if timesX {
		xe := ke.f32("mul.rn.f32", x, e)
		num = ke.selF32(pos, x, xe)
	} else {
		num = ke.selF32(pos, fv(1), e)
	}
	var y opnd
	if fast {
		// d is in [1, 2]: rcp.approx (1 ULP) and the product, 1.5 ULP of
		// f32, unseen after rounding to 10 bits or fewer
		y = ke.f32("mul.rn.f32", num, ke.rcpFastF32(d))
	} else {
		y = ke.divRefined(num, d)
	}
	if timesX {
		minf := ke.pred("setp.eq.f32", x, f32NegInf)
		y = ke.selF32(minf, f32NegZ, y)
	}
	return y
}

// splitF64 rounds an f64 to an f32 pair hi + lo.
func (ke *kernelEmitter) splitF64(d opnd) (hi, lo opnd) {
	hi = ke.f32("cvt.rn.f32.f64", d)
	back := ke.f64("cvt.f64.f32", hi)
	rest := ke.f64("sub.rn.f64", d, back)
	return hi, ke.f32("cvt.rn.f32.f64", rest)
}

// geluTanhF32 is x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3): 2u
// is formed in f64 and kept as an f32 pair, so that e^-|2u| is accurate
// in the tail, where x times it is tiny.
func (ke *kernelEmitter) geluTanhF32(x opnd, fast bool) opnd {
	if fast {
		x2 := ke.f32("mul.rn.f32", x, x)
		in := ke.f32("fma.rn.f32", x2, fv(0.044715), fv(1))
		in = ke.f32("mul.rn.f32", in, x)
		z := ke.f32("mul.rn.f32", in, fv(2*math.Sqrt(2/math.Pi)))
		az := ke.f32("abs.f32", z)
		e := ke.expFastF32(ke.f32("neg.f32", az), false)
		y := ke.logisticF32(x, z, e, true, true)
		nan := ke.pred("setp.nan.f32", x, x)
		return ke.selF32(nan, x, y)
	}
	xc := ke.f32("max.f32", x, fv(-20))
	xc = ke.f32("min.f32", xc, fv(20))
	xd := ke.f64("cvt.f64.f32", xc)
	x3 := ke.f64("mul.rn.f64", xd, xd)
	x3 = ke.f64("mul.rn.f64", x3, xd)
	in := ke.f64("fma.rn.f64", x3, dv(0.044715), xd)
	zd := ke.f64("mul.rn.f64", in, dv(2*math.Sqrt(2/math.Pi)))
	zh, zl := ke.splitF64(zd)
	azh := ke.f32("abs.f32", zh)
	nazh := ke.f32("neg.f32", azh)
	pos := ke.pred("setp.ge.f32", zh, fv(0))
	nzl := ke.f32("neg.f32", zl)
	lo := ke.selF32(pos, nzl, zl) // -|z| = -|zh| - sign(z) zl
	e := ke.expF32Reduced(nazh, &lo, 0)
	y := ke.logisticF32(xc, zh, e, true, false)
	big := ke.pred("setp.gt.f32", x, fv(20))
	y = ke.selF32(big, x, y)
	small := ke.pred("setp.lt.f32", x, fv(-20))
	y = ke.selF32(small, f32NegZ, y)
	nan := ke.pred("setp.nan.f32", x, x)
	return ke.selF32(nan, x, y)
}

// Constants of msun's erff/erfcf (bit patterns).
var (
	erfPP = []uint32{0x3e0375d4, 0xbea66beb, 0xbce9528f, 0xbbbd1489, 0xb7c756b1}                                     // pp0..pp4
	erfQQ = []uint32{0x3ecbbbce, 0x3d852a63, 0x3ba68116, 0x390aee49, 0xb684e21a}                                     // qq1..qq5
	erfPA = []uint32{0xbb1acdc6, 0x3ed46805, 0xbebe9208, 0x3ea2fe54, 0xbde31cc2, 0x3d1151b3, 0xbb0df9c0}             // pa0..pa6
	erfQA = []uint32{0x3dd9f331, 0x3f0a5785, 0x3d931ae7, 0x3e013307, 0x3c5f6e13, 0x3c445aa3}                         // qa1..qa6
	erfRA = []uint32{0xbc21a093, 0xbf31a0b7, 0xc128f022, 0xc2798057, 0xc322658c, 0xc3389ae7, 0xc2a2932b, 0xc11d077e} // ra0..ra7
	erfSA = []uint32{0x419d35ce, 0x4309a863, 0x43d9486f, 0x442158c9, 0x43d6810b, 0x42d9451f, 0x40d23f7c, 0xbd777f97} // sa1..sa8
	erfRB = []uint32{0xbc21a092, 0xbf4c9dd4, 0xc18e104b, 0xc320a2ea, 0xc41f6441, 0xc480230b, 0xc3f1c275}             // rb0..rb6
	erfSB = []uint32{0x41f2b459, 0x43a2e571, 0x44c01759, 0x4547fdbb, 0x451f90ce, 0x43ed43a7, 0xc1b38712}             // sb1..sb7
	erfX  = uint32(0x3f58560b)                                                                                       // erx = 8.4506291151e-01
)

// horner is c[0] + z*(c[1] + z*(... + z*c[n-1])), with fma.
func (ke *kernelEmitter) horner(z opnd, c []uint32) opnd {
	acc := fb(c[len(c)-1])
	accReg := ke.reg(acc)
	for i := len(c) - 2; i >= 0; i-- {
		accReg = ke.f32("fma.rn.f32", accReg, z, fb(c[i]))
	}
	return accReg
}

// hornerOne is 1 + z*(c[0] + z*(c[1] + ...)).
func (ke *kernelEmitter) hornerOne(z opnd, c []uint32) opnd {
	p := ke.horner(z, c)
	return ke.f32("fma.rn.f32", p, z, fv(1))
}

// geluErfF32 is x * Phi(x) = x/2 * erfc(-x/sqrt 2). With a = |x|/sqrt 2
// and E = erfc(a) (msun erfcf on a >= 0): x (1 - E/2) for x >= 0,
// x E / 2 below. Past a = 1.25, E = e^(-a^2 - 0.5625 + R/S) / a, so that
// x E / 2 = -e^(...) / sqrt 2 exactly in form; a^2 = x^2/2 is formed in
// f64 (exactly) and kept as an f32 pair, so the tail is accurate.
func (ke *kernelEmitter) geluErfF32(x opnd) opnd {
	ax := ke.f32("abs.f32", x)
	a := ke.f32("mul.rn.f32", ax, fv(1/math.Sqrt2))
	pos := ke.pred("setp.ge.f32", x, fv(0))
	// a < 0.84375: erf(a) = a + a*P/Q(a^2)
	z := ke.f32("mul.rn.f32", a, a)
	rr := ke.horner(z, erfPP)
	ss := ke.hornerOne(z, erfQQ)
	yq := ke.divRefined(rr, ss)
	ay := ke.f32("mul.rn.f32", a, yq)
	e1 := ke.f32("add.rn.f32", a, ay)
	e1 = ke.f32("sub.rn.f32", fv(1), e1) // a < 1/4: 1 - (a + a y)
	e2 := ke.f32("add.rn.f32", a, fv(-0.5))
	e2 = ke.f32("add.rn.f32", ay, e2)
	e2 = ke.f32("sub.rn.f32", fv(0.5), e2) // 0.5 - (a y + (a - 0.5))
	quarter := ke.pred("setp.lt.f32", a, fv(0.25))
	eSmall := ke.selF32(quarter, e1, e2)
	// 0.84375 <= a < 1.25: (1 - erx) - P/Q(a - 1)
	s1 := ke.f32("sub.rn.f32", a, fv(1))
	pp := ke.horner(s1, erfPA)
	qq := ke.hornerOne(s1, erfQA)
	pq := ke.divRefined(pp, qq)
	eMid := ke.f32("sub.rn.f32", fv(1-float64(math.Float32frombits(erfX))), pq)
	// 1.25 <= a: W = e^(-a^2 - 0.5625 + R/S) / sqrt 2, E = W sqrt 2 / a
	s := ke.f32("mul.rn.f32", a, a)
	s = ke.f32("rcp.rn.f32", s)
	ra := ke.horner(s, erfRA)
	sa := ke.hornerOne(s, erfSA)
	rb := ke.horner(s, erfRB)
	sb := ke.hornerOne(s, erfSB)
	near := ke.pred("setp.lt.f32", a, fb(0x4036db6e)) // 1/0.35
	rs := ke.divRefined(ke.selF32(near, ra, rb), ke.selF32(near, sa, sb))
	// past |x| = 40 the tail is below the smallest subnormal: clamped, the
	// exponent stays finite
	xc := ke.f32("max.f32", x, fv(-40))
	xc = ke.f32("min.f32", xc, fv(40))
	xd := ke.f64("cvt.f64.f32", xc)
	q := ke.f64("mul.rn.f64", xd, xd)
	q = ke.f64("fma.rn.f64", q, dv(-0.5), dv(-0.5625)) // -a^2 - 0.5625, exact
	qh, ql := ke.splitF64(q)
	lo := ke.f32("add.rn.f32", ql, rs)
	w := ke.expF32Reduced(qh, &lo, 0)
	w = ke.f32("mul.rn.f32", w, fv(1/math.Sqrt2))
	// the forms of the result
	tailPos := ke.f32("sub.rn.f32", x, w)
	tailNeg := ke.f32("neg.f32", w)
	tail := ke.selF32(pos, tailPos, tailNeg)
	inner := ke.pred("setp.lt.f32", a, fv(0.84375))
	e := ke.selF32(inner, eSmall, eMid)
	hx := ke.f32("mul.rn.f32", x, fv(0.5))
	half := ke.f32("fma.rn.f32", e, fv(-0.5), fv(1))
	head := ke.selF32(pos, ke.f32("mul.rn.f32", x, half), ke.f32("mul.rn.f32", hx, e))
	far := ke.pred("setp.ge.f32", a, fv(1.25))
	y := ke.selF32(far, tail, head)
	inf := ke.pred("setp.eq.f32", x, f32Inf)
	y = ke.selF32(inf, f32Inf, y)
	minf := ke.pred("setp.eq.f32", x, f32NegInf)
	y = ke.selF32(minf, f32NegZ, y)
	nan := ke.pred("setp.nan.f32", x, x)
	return ke.selF32(nan, x, y)
}

// ---------------------------------------------------------------------------
// rsqrt, sin, cos, pow

// rsqrtF32 is rsqrt.approx.f32 refined by one Newton step,
// y + y/2 (1 - x y^2); where the step is NaN (x = 0, inf, below 0, NaN)
// the approximation's own special results stand.
func (ke *kernelEmitter) rsqrtF32(x opnd) opnd {
	y := ke.f32("rsqrt.approx.f32", x)
	h := ke.f32("mul.rn.f32", x, y)
	nh := ke.f32("neg.f32", h)
	e := ke.f32("fma.rn.f32", nh, y, fv(1))
	hy := ke.f32("mul.rn.f32", y, fv(0.5))
	y1 := ke.f32("fma.rn.f32", hy, e, y)
	nan := ke.pred("setp.nan.f32", y1, y1)
	return ke.selF32(nan, y, y1)
}

// Taylor coefficients of sin r / r and cos r in r^2, in f64.
var (
	sinCoef = []float64{1, -1.0 / 6, 1.0 / 120, -1.0 / 5040, 1.0 / 362880, -1.0 / 39916800, 1.0 / 6227020800}
	cosCoef = []float64{1, -1.0 / 2, 1.0 / 24, -1.0 / 720, 1.0 / 40320, -1.0 / 3628800, 1.0 / 479001600, -1.0 / 87178291200}
)

// hornerF64 is c[0] + z*(c[1] + ...), with fma.
func (ke *kernelEmitter) hornerF64(z opnd, c []float64) opnd {
	acc := ke.reg(dv(c[len(c)-1]))
	for i := len(c) - 2; i >= 0; i-- {
		acc = ke.f64("fma.rn.f64", acc, z, dv(c[i]))
	}
	return acc
}

// sinCosF32 is sin x or cos x, computed in f64: k = round(x 2/pi),
// r = x - k pi/2 (pi/2 in two parts), |r| <= pi/4, polynomials, the
// quadrant k mod 4 picking sin r, cos r and the sign; one rounding to f32.
// Accurate to 1 ULP for |x| < 2^20; for larger |x| the reduction loses
// bits (the result stays in [-1, 1]).
func (ke *kernelEmitter) sinCosF32(x opnd, cos bool) opnd {
	xd := ke.f64("cvt.f64.f32", x)
	kd := ke.f64("mul.rn.f64", xd, dv(2/math.Pi))
	kd = ke.f64("cvt.rni.f64.f64", kd)
	pio2Hi, pio2Lo := math.Pi/2, 6.123233995736766e-17
	nk := ke.f64("neg.f64", kd)
	r := ke.f64("fma.rn.f64", nk, dv(pio2Hi), xd)
	r = ke.f64("fma.rn.f64", nk, dv(pio2Lo), r)
	z := ke.f64("mul.rn.f64", r, r)
	sinr := ke.f64("mul.rn.f64", ke.hornerF64(z, sinCoef), r)
	cosr := ke.hornerF64(z, cosCoef)
	q := ke.b32("cvt.rzi.s32.f64", kd)
	if cos {
		q = ke.b32("add.s32", q, i32(1))
	}
	odd := ke.b32("and.b32", q, i32(1))
	podd := ke.pred("setp.ne.s32", odd, i32(0))
	v := ke.f64("selp.f64", cosr, sinr, podd)
	hi := ke.b32("and.b32", q, i32(2))
	pneg := ke.pred("setp.ne.s32", hi, i32(0))
	nv := ke.f64("neg.f64", v)
	v = ke.f64("selp.f64", nv, v, pneg)
	y := ke.f32("cvt.rn.f32.f64", v)
	if !cos {
		zero := ke.pred("setp.eq.f32", x, fv(0))
		y = ke.selF32(zero, x, y) // sin(-0) = -0
	}
	return y
}

// powF32 is x^y, computed in f64 (exp(y log|x|), error about 2^-45) and
// rounded once.
func (ke *kernelEmitter) powF32(x, y opnd) opnd {
	xd := ke.f64("cvt.f64.f32", x)
	yd := ke.f64("cvt.f64.f32", y)
	return ke.f32("cvt.rn.f32.f64", ke.powF64(xd, yd))
}

// ---------------------------------------------------------------------------
// f64

// unaryF64 computes a unary op on an f64 lane.
func (ke *kernelEmitter) unaryF64(op *ir.Operation, x opnd) opnd {
	switch op.Name() {
	case loop.OpNeg:
		return ke.f64("neg.f64", x)
	case loop.OpAbs:
		return ke.f64("abs.f64", x)
	case loop.OpExp:
		return ke.expF64(x, false)
	case loop.OpExp2:
		return ke.expF64(x, true)
	case loop.OpLog:
		return ke.logF64(x)
	case loop.OpLog2:
		return ke.f64("mul.rn.f64", ke.logF64(x), dv(math.Log2E))
	case loop.OpLog1p:
		return ke.log1pF64(x)
	case loop.OpExpm1:
		return ke.expm1F64(x)
	case loop.OpSqrt:
		return ke.f64("sqrt.rn.f64", x)
	case loop.OpRsqrt:
		return ke.f64("rcp.rn.f64", ke.f64("sqrt.rn.f64", x))
	case loop.OpReciprocal:
		return ke.f64("rcp.rn.f64", x)
	case loop.OpTanh:
		return ke.tanhF64(x)
	case loop.OpSigmoid, loop.OpSilu:
		ax := ke.f64("abs.f64", x)
		e := ke.expF64(ke.f64("neg.f64", ax), false)
		d := ke.f64("add.rn.f64", e, dv(1))
		pos := ke.pred("setp.ge.f64", x, dv(0))
		if op.Name() == loop.OpSigmoid {
			return ke.f64("div.rn.f64", ke.f64("selp.f64", dv(1), e, pos), d)
		}
		xe := ke.f64("mul.rn.f64", x, e)
		y := ke.f64("div.rn.f64", ke.f64("selp.f64", x, xe, pos), d)
		minf := ke.pred("setp.eq.f64", x, f64NegInf)
		return ke.f64("selp.f64", dv(math.Copysign(0, -1)), y, minf)
	case loop.OpRelu:
		return ke.maxMinF64("max", x, ke.reg(dv(0)))
	case loop.OpFloor:
		return ke.f64("cvt.rmi.f64.f64", x)
	case loop.OpCeil:
		return ke.f64("cvt.rpi.f64.f64", x)
	case loop.OpRound:
		return ke.f64("cvt.rni.f64.f64", x)
	}
	ke.fail(op, "is not supported on f64 by the PTX emitter (f64 has exp, exp2, log, log2, log1p, expm1, tanh, sigmoid, silu, pow and the exact ops)")
	return opnd{}
}

// f64 ln 2 in two parts (msun): k * ln2Hi is exact for |k| < 2^11.
var (
	ln2HiF64 = math.Float64frombits(0x3fe62e42fee00000)
	ln2LoF64 = math.Float64frombits(0x3dea39ef35793c76)
)

// expCoef are the Taylor coefficients of e^r to r^13: |r| <= ln2/2 leaves
// a remainder below 2^-57.
var expCoef = func() []float64 {
	c := make([]float64, 14)
	f := 1.0
	for i := range c {
		if i > 0 {
			f *= float64(i)
		}
		c[i] = 1 / f
	}
	return c
}()

// expF64 is e^x (or 2^x): x = k ln2 + r, e^r by its Taylor polynomial,
// 2^k as two exact powers of two.
func (ke *kernelEmitter) expF64(x opnd, base2 bool) opnd {
	var kd, r opnd
	if base2 {
		kd = ke.f64("cvt.rni.f64.f64", x)
		kd = ke.f64("max.f64", kd, dv(-1100))
		kd = ke.f64("min.f64", kd, dv(1100))
		f := ke.f64("sub.rn.f64", x, kd)
		r = ke.f64("mul.rn.f64", f, dv(math.Ln2))
	} else {
		t := ke.f64("mul.rn.f64", x, dv(math.Log2E))
		kd = ke.f64("cvt.rni.f64.f64", t)
		kd = ke.f64("max.f64", kd, dv(-1100))
		kd = ke.f64("min.f64", kd, dv(1100))
		nk := ke.f64("neg.f64", kd)
		r = ke.f64("fma.rn.f64", nk, dv(ln2HiF64), x)
		r = ke.f64("fma.rn.f64", nk, dv(ln2LoF64), r)
	}
	p := ke.hornerF64(r, expCoef)
	ki := ke.b32("cvt.rzi.s32.f64", kd)
	k1 := ke.b32("shr.s32", ki, i32(1))
	k2 := ke.b32("sub.s32", ki, k1)
	pow := func(e opnd) opnd {
		w := ke.b64("cvt.s64.s32", e)
		w = ke.b64("shl.b64", w, i32(52))
		w = ke.b64("add.s64", w, intImm(0x3ff0000000000000, rB64))
		return ke.f64("mov.b64", w)
	}
	y := ke.f64("mul.rn.f64", p, pow(k1))
	y = ke.f64("mul.rn.f64", y, pow(k2))
	over, under := 709.8, -745.2
	if base2 {
		over, under = 1024, -1075
	}
	hi := ke.pred("setp.gt.f64", x, dv(over))
	y = ke.f64("selp.f64", f64Inf, y, hi)
	lo := ke.pred("setp.lt.f64", x, dv(under))
	return ke.f64("selp.f64", dv(0), y, lo)
}

// logCoef are the coefficients of log(1+f) = s * (2 + 2s^2/3 + 2s^4/5 +
// ...), s = f/(2+f), |s| <= 0.172: to s^21, a remainder below 2^-57.
var logCoef = func() []float64 {
	c := make([]float64, 11)
	for i := range c {
		c[i] = 2 / float64(2*i+1)
	}
	return c
}()

// logF64 is ln x: x = 2^k m, m in [sqrt(2)/2, sqrt(2)), the atanh series
// of log m, k ln2 in two parts.
func (ke *kernelEmitter) logF64(x opnd) opnd {
	sub := ke.pred("setp.lt.f64", x, dv(0x1p-1022))
	xs := ke.f64("mul.rn.f64", x, dv(0x1p54))
	xs = ke.f64("selp.f64", xs, x, sub)
	k0 := ke.b32("selp.b32", i32(-54), i32(0), sub)
	bits := ke.b64("mov.b64", xs)
	lo, hi := ke.a.reg(rB32), ke.a.reg(rB32)
	ke.a.raw(nil, false, "mov.b64", "{"+lo.s+", "+hi.s+"}", bits.s)
	hi = ke.b32("add.s32", hi, i32(0x3ff00000-0x3fe6a09e))
	k := ke.b32("shr.s32", hi, i32(20))
	k = ke.b32("add.s32", k, i32(-0x3ff))
	k = ke.b32("add.s32", k, k0)
	hi = ke.b32("and.b32", hi, i32(0x000fffff))
	hi = ke.b32("add.s32", hi, i32(0x3fe6a09e))
	mb := ke.a.reg(rB64)
	ke.a.raw(nil, false, "mov.b64", mb.s, "{"+lo.s+", "+hi.s+"}")
	m := ke.f64("mov.b64", mb)
	f := ke.f64("sub.rn.f64", m, dv(1))
	d := ke.f64("add.rn.f64", f, dv(2))
	s := ke.f64("div.rn.f64", f, d)
	z := ke.f64("mul.rn.f64", s, s)
	l := ke.f64("mul.rn.f64", ke.hornerF64(z, logCoef), s)
	dk := ke.f64("cvt.rn.f64.s32", k)
	y := ke.f64("fma.rn.f64", dk, dv(ln2LoF64), l)
	y = ke.f64("fma.rn.f64", dk, dv(ln2HiF64), y)
	zero := ke.pred("setp.eq.f64", x, dv(0))
	sp := ke.f64("selp.f64", f64NegInf, x, zero)
	neg := ke.pred("setp.lt.f64", x, dv(0))
	sp = ke.f64("selp.f64", f64NaN, sp, neg)
	pa := ke.pred("setp.gt.f64", x, dv(0))
	pb := ke.pred("setp.lt.f64", x, f64Inf)
	ok := ke.pred("and.pred", pa, pb)
	return ke.f64("selp.f64", y, sp, ok)
}

// log1pF64 is ln(1+x) = log(u) x / (u - 1) for u = 1 + x (x where u = 1),
// which cancels the rounding of u.
func (ke *kernelEmitter) log1pF64(x opnd) opnd {
	u := ke.f64("add.rn.f64", x, dv(1))
	l := ke.logF64(u)
	um1 := ke.f64("sub.rn.f64", u, dv(1))
	q := ke.f64("div.rn.f64", x, um1)
	y := ke.f64("mul.rn.f64", l, q)
	one := ke.pred("setp.eq.f64", u, dv(1))
	y = ke.f64("selp.f64", x, y, one)
	inf := ke.pred("setp.eq.f64", x, f64Inf)
	y = ke.f64("selp.f64", f64Inf, y, inf)
	m1 := ke.pred("setp.eq.f64", x, dv(-1))
	return ke.f64("selp.f64", f64NegInf, y, m1)
}

// expm1F64 is e^x - 1 = (u - 1) x / log u for u = e^x (x where u = 1,
// -1 where u - 1 = -1).
func (ke *kernelEmitter) expm1F64(x opnd) opnd {
	u := ke.expF64(x, false)
	um1 := ke.f64("sub.rn.f64", u, dv(1))
	l := ke.logF64(u)
	q := ke.f64("div.rn.f64", x, l)
	y := ke.f64("mul.rn.f64", um1, q)
	one := ke.pred("setp.eq.f64", u, dv(1))
	y = ke.f64("selp.f64", x, y, one)
	m1 := ke.pred("setp.eq.f64", um1, dv(-1))
	y = ke.f64("selp.f64", dv(-1), y, m1)
	inf := ke.pred("setp.eq.f64", u, f64Inf)
	y = ke.f64("selp.f64", f64Inf, y, inf)
	nan := ke.pred("setp.nan.f64", x, x)
	return ke.f64("selp.f64", x, y, nan)
}

// tanhF64 is sign(x) e/(e+2) with e = expm1(2|x|), 1 beyond |x| = 22.
func (ke *kernelEmitter) tanhF64(x opnd) opnd {
	ax := ke.f64("abs.f64", x)
	ac := ke.f64("min.f64", ax, dv(22))
	e := ke.expm1F64(ke.f64("add.rn.f64", ac, ac))
	d := ke.f64("add.rn.f64", e, dv(2))
	t := ke.f64("div.rn.f64", e, d)
	big := ke.pred("setp.ge.f64", ax, dv(22))
	t = ke.f64("selp.f64", dv(1), t, big)
	bits := ke.b64("mov.b64", x)
	neg := ke.pred("setp.lt.s64", bits, intImm(0, rB64))
	nt := ke.f64("neg.f64", t)
	t = ke.f64("selp.f64", nt, t, neg)
	zero := ke.pred("setp.eq.f64", x, dv(0))
	t = ke.f64("selp.f64", x, t, zero)
	nan := ke.pred("setp.nan.f64", x, x)
	return ke.f64("selp.f64", x, t, nan)
}

// powF64 is x^y = exp(y log|x|) with IEEE pow's special cases: the sign
// of an odd integer power of a negative x, NaN for a negative finite x
// with a finite non-integer y, 1 for y = 0 or x = 1 (NaN in the other
// operand too) and for |x| = 1 with an infinite y.
func (ke *kernelEmitter) powF64(x, y opnd) opnd {
	ax := ke.f64("abs.f64", x)
	t := ke.f64("mul.rn.f64", y, ke.logF64(ax))
	r := ke.expF64(t, false)
	yt := ke.f64("cvt.rzi.f64.f64", y)
	yint := ke.pred("setp.eq.f64", yt, y)
	h := ke.f64("mul.rn.f64", y, dv(0.5))
	ht := ke.f64("cvt.rzi.f64.f64", h)
	heven := ke.pred("setp.eq.f64", ht, h)
	nh := ke.pred("not.pred", heven)
	odd := ke.pred("and.pred", yint, nh)
	bits := ke.b64("mov.b64", x)
	xsign := ke.pred("setp.lt.s64", bits, intImm(0, rB64))
	flip := ke.pred("and.pred", xsign, odd)
	nr := ke.f64("neg.f64", r)
	r = ke.f64("selp.f64", nr, r, flip)
	// negative finite x, finite non-integer y: NaN
	xneg := ke.pred("setp.lt.f64", x, dv(0))
	xfin := ke.pred("setp.lt.f64", ax, f64Inf)
	ay := ke.f64("abs.f64", y)
	yfin := ke.pred("setp.lt.f64", ay, f64Inf)
	nint := ke.pred("not.pred", yint)
	bad := ke.pred("and.pred", xneg, xfin)
	bad = ke.pred("and.pred", bad, yfin)
	bad = ke.pred("and.pred", bad, nint)
	r = ke.f64("selp.f64", f64NaN, r, bad)
	// |x| = 1 with y = ±inf, x = 1, y = 0: 1
	unit := ke.pred("setp.eq.f64", ax, dv(1))
	yinf := ke.pred("setp.eq.f64", ay, f64Inf)
	one := ke.pred("and.pred", unit, yinf)
	x1 := ke.pred("setp.eq.f64", x, dv(1))
	one = ke.pred("or.pred", one, x1)
	y0 := ke.pred("setp.eq.f64", y, dv(0))
	one = ke.pred("or.pred", one, y0)
	return ke.f64("selp.f64", dv(1), r, one)
}
