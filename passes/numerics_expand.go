package passes

// Overflow-safe expansions of the numerically delicate graph ops into the
// primitive graph ops of docs/numerics.md. legalize-numerics and decompose
// share them, so each form has exactly one implementation. The signatures
// are stable:
//
//	func ExpandLogAddExp(b *ir.Builder, loc ir.Location, a, b2 *ir.Value, base2 bool) *ir.Value
//	func ExpandSoftmax(b *ir.Builder, loc ir.Location, x *ir.Value, axis int64) *ir.Value
//	func ExpandLogSoftmax(b *ir.Builder, loc ir.Location, x *ir.Value, axis int64) *ir.Value
//	func ExpandLogSumExp(b *ir.Builder, loc ir.Location, x *ir.Value, axis int64, keepdim bool) *ir.Value
//	func ExpandQuantize(b *ir.Builder, loc ir.Location, op *ir.Operation) *ir.Value
//	func ExpandDequantize(b *ir.Builder, loc ir.Location, op *ir.Operation) *ir.Value
//	func ExpandRequantize(b *ir.Builder, loc ir.Location, op *ir.Operation) *ir.Value
//	func ExpandSaturatingCast(b *ir.Builder, loc ir.Location, x *ir.Value, to ir.Type) *ir.Value
//	func IsSaturatingCast(op *ir.Operation) bool
//	func IsNumericsComposite(op *ir.Operation) bool
//	func ExpandNumericsOp(b *ir.Builder, op *ir.Operation) (*ir.Value, error)
//
// Each Expand function builds at b's insertion point and returns the value
// that replaces the op's result; the caller redirects the uses and erases
// the op. Their operands must be those of a verified op: a malformed input
// is a compiler bug and panics. ExpandNumericsOp is the checked entry
// point: it verifies the op first and returns an error at its location.
//
// Common to every expansion: f16, bf16 and f8 inputs are cast to f32 once,
// everything is computed in f32 (f64 stays f64), and the result is cast
// back to the op's element type once at the end.

import (
	"fmt"
	"math"

	"github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

// ---------------------------------------------------------------------------
// Building blocks

// emitter builds primitive graph ops at one location. The inputs come from
// verified ops, so every op it builds is well typed; a build error is a bug
// in an expansion and panics (ExpandNumericsOp turns it into an error).
type emitter struct {
	b   *ir.Builder
	loc ir.Location
	// consts holds the scalar constants built so far, so that one
	// expansion builds each value once
	consts map[constKey]*ir.Value
}

type constKey struct {
	kind ir.ElemKind
	bits uint64
}

// newEmitter starts an expansion at b's insertion point.
func newEmitter(b *ir.Builder, loc ir.Location) *emitter {
	return &emitter{b: b, loc: loc, consts: map[constKey]*ir.Value{}}
}

// builtValue returns the single result of a freshly built op.
func builtValue[T interface{ Result(int) *ir.Value }](op T, err error) *ir.Value {
	if err != nil {
		panic(fmt.Sprintf("numerics expansion built an invalid op: %v", err))
	}
	return op.Result(0)
}

// elemKindOf returns the element kind of a tensor value.
func elemKindOf(v *ir.Value) ir.ElemKind {
	e, _ := ir.ElemOf(v.Type())
	return e.Kind
}

// tensorOf returns the tensor type of v.
func tensorOf(v *ir.Value) ir.TensorType {
	t, ok := v.Type().(ir.TensorType)
	if !ok {
		panic(fmt.Sprintf("numerics expansion expects a tensor, got %s", v.Type()))
	}
	return t
}

// computeKind is the precision an expansion computes in: f64 for f64 data,
// f32 for everything else (f32, f16, bf16, f8).
func computeKind(k ir.ElemKind) ir.ElemKind {
	if k == ir.F64 {
		return ir.F64
	}
	return ir.F32
}

// constant builds a rank-0 splat `graph.constant dense<v> : tensor<k>`,
// which broadcasts against any operand.
func (e *emitter) constant(k ir.ElemKind, v float64) *ir.Value {
	v = numeric.RoundTo(v, k)
	key := constKey{k, math.Float64bits(v)}
	if c, ok := e.consts[key]; ok {
		return c
	}
	t := ir.Tensor(ir.ElemType{Kind: k})
	c := builtValue(graph.BuildConstant(e.b, e.loc, ir.DenseAttr{Type: t, Values: []float64{v}}))
	e.consts[key] = c
	return c
}

// cast converts v to element kind k, or returns v if it already has it.
func (e *emitter) cast(v *ir.Value, k ir.ElemKind) *ir.Value {
	if elemKindOf(v) == k {
		return v
	}
	return builtValue(graph.BuildCast(e.b, e.loc, v, tensorOf(v).WithElem(ir.ElemType{Kind: k})))
}

func (e *emitter) add(x, y *ir.Value) *ir.Value { return builtValue(graph.BuildAdd(e.b, e.loc, x, y)) }
func (e *emitter) sub(x, y *ir.Value) *ir.Value { return builtValue(graph.BuildSub(e.b, e.loc, x, y)) }
func (e *emitter) mul(x, y *ir.Value) *ir.Value { return builtValue(graph.BuildMul(e.b, e.loc, x, y)) }
func (e *emitter) div(x, y *ir.Value) *ir.Value { return builtValue(graph.BuildDiv(e.b, e.loc, x, y)) }
func (e *emitter) max(x, y *ir.Value) *ir.Value { return builtValue(graph.BuildMax(e.b, e.loc, x, y)) }
func (e *emitter) abs(x *ir.Value) *ir.Value    { return builtValue(graph.BuildAbs(e.b, e.loc, x)) }
func (e *emitter) neg(x *ir.Value) *ir.Value    { return builtValue(graph.BuildNeg(e.b, e.loc, x)) }
func (e *emitter) exp(x *ir.Value) *ir.Value    { return builtValue(graph.BuildExp(e.b, e.loc, x)) }
func (e *emitter) exp2(x *ir.Value) *ir.Value   { return builtValue(graph.BuildExp2(e.b, e.loc, x)) }
func (e *emitter) log(x *ir.Value) *ir.Value    { return builtValue(graph.BuildLog(e.b, e.loc, x)) }
func (e *emitter) log1p(x *ir.Value) *ir.Value  { return builtValue(graph.BuildLog1p(e.b, e.loc, x)) }
func (e *emitter) round(x *ir.Value) *ir.Value  { return builtValue(graph.BuildRound(e.b, e.loc, x)) }
func (e *emitter) floor(x *ir.Value) *ir.Value  { return builtValue(graph.BuildFloor(e.b, e.loc, x)) }

func (e *emitter) cmp(x, y *ir.Value, pred string) *ir.Value {
	return builtValue(graph.BuildCmp(e.b, e.loc, x, y, pred))
}

func (e *emitter) sel(c, x, y *ir.Value) *ir.Value {
	return builtValue(graph.BuildSelect(e.b, e.loc, c, x, y))
}

// clamp builds `graph.clamp` with bounds typed like the data: f32
// attributes, or f64 ones for f64 data so that bounds such as 2^63 - 1024
// keep their value.
func (e *emitter) clamp(x *ir.Value, lo, hi float64) *ir.Value {
	op, err := graph.BuildClamp(e.b, e.loc, x, lo, hi)
	v := builtValue(op, err)
	if elemKindOf(x) == ir.F64 {
		op.SetAttr("min", ir.FloatAttr{Value: lo, Type: ir.F64Type})
		op.SetAttr("max", ir.FloatAttr{Value: hi, Type: ir.F64Type})
	}
	return v
}

func (e *emitter) reduceMax(x *ir.Value, axis int64, keepdim bool) *ir.Value {
	return builtValue(graph.BuildReduceMax(e.b, e.loc, x, []int64{axis}, keepdim))
}

func (e *emitter) reduceSum(x *ir.Value, axis int64, keepdim bool) *ir.Value {
	return builtValue(graph.BuildReduceSum(e.b, e.loc, x, []int64{axis}, keepdim))
}

// isNaN is `graph.cmp %x, %x {predicate = "ne"}`: true exactly for NaN.
func (e *emitter) isNaN(x *ir.Value) *ir.Value { return e.cmp(x, x, "ne") }

// isInf is `cmp(abs(x), inf, "eq")`: true for +inf and -inf.
func (e *emitter) isInf(x *ir.Value) *ir.Value {
	return e.cmp(e.abs(x), e.constant(elemKindOf(x), math.Inf(1)), "eq")
}

// reductionAxis checks axis against x and returns it as the reductions of
// an expansion spell it: -1 for the last dimension (the form the fused row
// kernels expect), the index from the front otherwise.
func reductionAxis(x *ir.Value, axis int64) int64 {
	rank := tensorOf(x).Rank()
	norm, err := graph.NormalizeAxes([]int64{axis}, rank)
	if err != nil {
		panic(fmt.Sprintf("numerics expansion: %v", err))
	}
	if norm[0] == int64(rank-1) {
		return -1
	}
	return norm[0]
}

// ---------------------------------------------------------------------------
// logaddexp, logaddexp2

// ExpandLogAddExp expands `graph.logaddexp %a, %b` (base2: logaddexp2) into
// the form that never overflows for finite inputs,
//
//	max(a, b) + log1p(exp(-|a - b|))              // ln(e^a + e^b)
//	max(a, b) + log1p(exp2(-|a - b|)) * (1/ln 2)  // log2(2^a + 2^b)
//
// with a select for equal arguments, where |a - b| is NaN for equal
// infinities: logaddexp(inf, inf) = inf, logaddexp(-inf, -inf) = -inf.
// NaN in either operand gives NaN (max propagates it). For f32 operands:
//
//	%m = graph.max %a, %b : tensor<4xf32>
//	%d = graph.sub %a, %b : tensor<4xf32>
//	%ad = graph.abs %d : tensor<4xf32>
//	%nd = graph.neg %ad : tensor<4xf32>
//	%e = graph.exp %nd : tensor<4xf32>
//	%l = graph.log1p %e : tensor<4xf32>
//	%r = graph.add %m, %l : tensor<4xf32>
//	%ln2 = graph.constant dense<0.6931472> : tensor<f32>
//	%t = graph.add %a, %ln2 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
//	%eq = graph.cmp %a, %b {predicate = "eq"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
//	%y = graph.select %eq, %t, %r : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
//
// The operands broadcast as in graph.logaddexp; f16, bf16 and f8 operands
// are cast to f32 first and the result cast back.
func ExpandLogAddExp(b *ir.Builder, loc ir.Location, a, b2 *ir.Value, base2 bool) *ir.Value {
	e := newEmitter(b, loc)
	k := elemKindOf(a)
	ck := computeKind(k)
	x, y := e.cast(a, ck), e.cast(b2, ck)
	m := e.max(x, y)
	nd := e.neg(e.abs(e.sub(x, y)))
	var l *ir.Value
	if base2 {
		l = e.mul(e.log1p(e.exp2(nd)), e.constant(ck, 1/math.Ln2))
	} else {
		l = e.log1p(e.exp(nd))
	}
	r := e.add(m, l)
	tieStep := math.Ln2 // logaddexp(a, a) = a + ln 2
	if base2 {
		tieStep = 1 // logaddexp2(a, a) = a + 1
	}
	tie := e.add(x, e.constant(ck, tieStep))
	return e.cast(e.sel(e.cmp(x, y, "eq"), tie, r), k)
}

// ---------------------------------------------------------------------------
// softmax, log_softmax, logsumexp

// ExpandSoftmax expands `graph.softmax %x {axis}` into the max-subtracted
// form exp(x - m) / sum(exp(x - m)) with m the row maximum, which never
// overflows. For a row holding +inf or one of all -inf the quotient is the
// indeterminate inf/inf or 0/0 and the row is NaN, as the reference
// interpreter defines it. For f32 along the last axis:
//
//	%m = graph.reduce_max %x {axes = [-1], keepdim = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
//	%d = graph.sub %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
//	%e = graph.exp %d : tensor<4x8xf32>
//	%s = graph.reduce_sum %e {axes = [-1], keepdim = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
//	%y = graph.div %e, %s : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
func ExpandSoftmax(b *ir.Builder, loc ir.Location, x *ir.Value, axis int64) *ir.Value {
	e := newEmitter(b, loc)
	k := elemKindOf(x)
	ax := reductionAxis(x, axis)
	xc := e.cast(x, computeKind(k))
	ex := e.exp(e.sub(xc, e.reduceMax(xc, ax, true)))
	return e.cast(e.div(ex, e.reduceSum(ex, ax, true)), k)
}

// ExpandLogSoftmax expands `graph.log_softmax %x {axis}` into
// (x - m) - log(sum(exp(x - m))), which never overflows; rows holding +inf
// or all -inf give NaN as in ExpandSoftmax. For f32 along the last axis:
//
//	%m = graph.reduce_max %x {axes = [-1], keepdim = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
//	%d = graph.sub %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
//	%e = graph.exp %d : tensor<4x8xf32>
//	%s = graph.reduce_sum %e {axes = [-1], keepdim = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
//	%l = graph.log %s : tensor<4x1xf32>
//	%y = graph.sub %d, %l : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
func ExpandLogSoftmax(b *ir.Builder, loc ir.Location, x *ir.Value, axis int64) *ir.Value {
	e := newEmitter(b, loc)
	k := elemKindOf(x)
	ax := reductionAxis(x, axis)
	xc := e.cast(x, computeKind(k))
	d := e.sub(xc, e.reduceMax(xc, ax, true))
	l := e.log(e.reduceSum(e.exp(d), ax, true))
	return e.cast(e.sub(d, l), k)
}

// ExpandLogSumExp expands `graph.logsumexp %x {axis, keepdim}` into
// m' + log(sum(exp(x - m'))) with the shift m' = select(isinf(m), 0, m) of
// the row maximum m. The shift keeps the infinite rows defined: a row of
// all -inf gives log(0) = -inf (not -inf - -inf = NaN) and a row holding
// +inf gives +inf; NaN gives NaN. keepdim = false drops the axis by
// reducing the keepdim result over its extent-1 axis, which needs no
// reshape and works with `?` dims. For f32 along the last axis:
//
//	%m = graph.reduce_max %x {axes = [-1], keepdim = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
//	%am = graph.abs %m : tensor<4x1xf32>
//	%inf = graph.constant dense<inf> : tensor<f32>
//	%isinf = graph.cmp %am, %inf {predicate = "eq"} : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xi1>
//	%zero = graph.constant dense<0.0> : tensor<f32>
//	%sh = graph.select %isinf, %zero, %m : (tensor<4x1xi1>, tensor<f32>, tensor<4x1xf32>) -> tensor<4x1xf32>
//	%d = graph.sub %x, %sh : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
//	%e = graph.exp %d : tensor<4x8xf32>
//	%s = graph.reduce_sum %e {axes = [-1], keepdim = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
//	%l = graph.log %s : tensor<4x1xf32>
//	%yk = graph.add %sh, %l : tensor<4x1xf32>
//	%y = graph.reduce_max %yk {axes = [-1]} : (tensor<4x1xf32>) -> tensor<4xf32>
func ExpandLogSumExp(b *ir.Builder, loc ir.Location, x *ir.Value, axis int64, keepdim bool) *ir.Value {
	e := newEmitter(b, loc)
	k := elemKindOf(x)
	ck := computeKind(k)
	ax := reductionAxis(x, axis)
	xc := e.cast(x, ck)
	m := e.reduceMax(xc, ax, true)
	shift := e.sel(e.isInf(m), e.constant(ck, 0), m)
	s := e.reduceSum(e.exp(e.sub(xc, shift)), ax, true)
	y := e.add(shift, e.log(s))
	if !keepdim {
		// the maximum of one element is that element, bit for bit
		y = e.reduceMax(y, ax, false)
	}
	return e.cast(y, k)
}

// ---------------------------------------------------------------------------
// Saturating float -> int casts

// saturationBounds returns the clamp bounds of a float -> int conversion
// computed in kind ck: the target's range ends, or, where an end is not
// representable in ck (2^31 - 1 in f32), the nearest representable value
// inside the range. exact reports whether the upper end is exact; lo is
// always exact (0 or -2^n).
func saturationBounds(target, ck ir.ElemKind) (lo, hiIn float64, exact bool) {
	l, h := target.IntRange()
	// above reports whether v lies beyond h, comparing as integers:
	// float64(h) itself rounds up to 2^63 for i64
	above := func(v float64) bool { return v >= 1<<63 || int64(v) > h }
	hiIn = numeric.RoundTo(float64(h), ck)
	if above(hiIn) {
		bits, _ := numeric.ToBits(hiIn, ck)
		hiIn, _ = numeric.FromBits(bits-1, ck)
	}
	// i64 and index: 2^63 - 1 is not a float64 either; the top of the
	// range saturates to the largest float below 2^63.
	exact = int64(hiIn) == h || target.BitWidth() == 64
	return float64(l), hiIn, exact
}

// ExpandSaturatingCast expands a float -> int `graph.cast %x` into the
// checked conversion of numeric.SaturateInt (LLVM's fptosi.sat): NaN gives
// 0, values beyond the range clamp to its ends, and the remaining cast
// truncates a value that is now in range. f32 to ui8:
//
//	%nan = graph.cmp %x, %x {predicate = "ne"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
//	%zero = graph.constant dense<0.0> : tensor<f32>
//	%n = graph.select %nan, %zero, %x : (tensor<4xi1>, tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
//	%c = graph.clamp %n {max = 255.0 : f32, min = 0.0 : f32} : tensor<4xf32>
//	%y = graph.cast %c : (tensor<4xf32>) -> tensor<4xui8>
//
// f16, bf16 and f8 inputs are cast to f32 first (exactly). Where the top
// of the range is not representable in the compute type (2^31 - 1 in f32),
// the clamp stops at the largest float below it and a select on the
// integer side saturates the values above it:
//
//	%c = graph.clamp %n {max = 2147483520.0 : f32, min = -2147483648.0 : f32} : tensor<4xf32>
//	%t = graph.cast %c : (tensor<4xf32>) -> tensor<4xi32>
//	%big = graph.cmp %x, %hi {predicate = "gt"} : (tensor<4xf32>, tensor<f32>) -> tensor<4xi1>
//	%y = graph.select %big, %imax, %t : (tensor<4xi1>, tensor<i32>, tensor<4xi32>) -> tensor<4xi32>
//
// to is the cast's result type (same shape as x, integer elements).
func ExpandSaturatingCast(b *ir.Builder, loc ir.Location, x *ir.Value, to ir.Type) *ir.Value {
	e := newEmitter(b, loc)
	target, _ := ir.ElemOf(to)
	ck := computeKind(elemKindOf(x))
	xc := e.cast(x, ck)
	lo, hiIn, exact := saturationBounds(target.Kind, ck)
	n := e.sel(e.isNaN(xc), e.constant(ck, 0), xc)
	y := e.cast(e.clamp(n, lo, hiIn), target.Kind)
	if !exact {
		_, hi := target.Kind.IntRange()
		big := e.cmp(xc, e.constant(ck, hiIn), "gt")
		y = e.sel(big, e.constant(target.Kind, float64(hi)), y)
	}
	return y
}

// IsSaturatingCast reports whether op is a float -> int graph.cast whose
// input is already in range and free of NaN, as ExpandSaturatingCast and
// the quantize expansions leave it:
//
//	%n = graph.select %nan, ..., ...  // %nan = graph.cmp %v, %v {predicate = "ne"}
//	%c = graph.clamp %n {min, max}    // within the target's range
//	%y = graph.cast %c
//
// legalize-numerics leaves these casts alone, so running it twice changes
// nothing.
func IsSaturatingCast(op *ir.Operation) bool {
	if op.Name() != graph.OpCast || op.NumOperands() != 1 || op.NumResults() != 1 {
		return false
	}
	target := elemKindOf(op.Result(0))
	if !target.IsInt() || !elemKindOf(op.Operand(0)).IsFloat() {
		return false
	}
	c, ok := graph.AsClamp(op.Operand(0).DefiningOp())
	if !ok {
		return false
	}
	l, h := target.IntRange()
	if !(c.Min() >= float64(l) && c.Max() <= float64(h)) {
		return false
	}
	s, ok := graph.AsSelect(c.Input().DefiningOp())
	if !ok {
		return false
	}
	nan, ok := graph.AsCmp(s.Operand(0).DefiningOp())
	return ok && nan.Predicate() == "ne" && nan.Lhs() == nan.Rhs()
}

// ---------------------------------------------------------------------------
// quantize, dequantize, requantize

// quantParam is one side's scale and zero point, as values that broadcast
// against the data: rank-0 constants per tensor, or the per-channel 1-D
// operands reshaped to [C, 1, ..., 1] so that they line up with `axis`.
type quantParam struct {
	scale *ir.Value // in the compute kind
	// perTensor sides keep their attribute values, for the special cases
	// (zero point 0, scale 1) and the split of the scale.
	perTensor             bool
	scaleValue, zeroValue float64
	zeroPoints            *ir.Value // per channel: reshaped, element type as given
	zeroCache             *ir.Value
}

// zero returns the zero point in compute kind ck, built on first use.
func (p *quantParam) zero(e *emitter, ck ir.ElemKind) *ir.Value {
	if p.zeroCache == nil {
		if p.perTensor || p.zeroPoints == nil {
			p.zeroCache = e.constant(ck, p.zeroValue)
		} else {
			p.zeroCache = e.cast(p.zeroPoints, ck)
		}
	}
	return p.zeroCache
}

// hasZero reports whether the zero point may be nonzero: per channel,
// when the zero points are given (graph.dequantize may leave them out).
func (p *quantParam) hasZero() bool {
	if p.perTensor {
		return p.zeroValue != 0
	}
	return p.zeroPoints != nil
}

// channelOperand reshapes a per-channel operand [C] of data x to
// [C, 1, ..., 1] along axis, so that it broadcasts against x.
func (e *emitter) channelOperand(p, x *ir.Value, axis int64) *ir.Value {
	rank := tensorOf(x).Rank()
	norm, err := graph.NormalizeAxes([]int64{axis}, rank)
	if err != nil {
		panic(fmt.Sprintf("numerics expansion: %v", err))
	}
	trailing := rank - 1 - int(norm[0])
	if trailing == 0 {
		return p
	}
	pt := tensorOf(p)
	shape := []int64{pt.Shape[0]}
	for range trailing {
		shape = append(shape, 1)
	}
	return builtValue(graph.BuildReshape(e.b, e.loc, p, ir.TensorType{Shape: shape, Elem: pt.Elem}))
}

// quantSide builds the parameters of one side of a conversion: the
// attributes scale/zero_point (per tensor) or the operands scales and
// zeroPoints (per channel, when scales is not nil; zeroPoints nil means
// zero points of 0).
func (e *emitter) quantSide(x *ir.Value, ck ir.ElemKind, scales, zeroPoints *ir.Value, scale float64, zero int64, axis int64) *quantParam {
	if scales == nil {
		return &quantParam{
			scale: e.constant(ck, scale), perTensor: true,
			scaleValue: numeric.RoundTo(scale, ck), zeroValue: float64(zero),
		}
	}
	p := &quantParam{scale: e.cast(e.channelOperand(scales, x, axis), ck)}
	if zeroPoints != nil {
		p.zeroPoints = e.channelOperand(zeroPoints, x, axis)
	}
	return p
}

// quantComputeKind is f32 unless the data or a scale needs f64: an f64
// tensor, or a per-tensor scale attribute that f32 cannot hold exactly.
func quantComputeKind(vals []*ir.Value, scales ...float64) ir.ElemKind {
	for _, v := range vals {
		if v != nil && elemKindOf(v) == ir.F64 {
			return ir.F64
		}
	}
	for _, s := range scales {
		if float64(float32(s)) != s {
			return ir.F64
		}
	}
	return ir.F32
}

// isPowerOfTwo reports whether v is 2^n: a division by it is exact.
func isPowerOfTwo(v float64) bool {
	frac, _ := math.Frexp(v)
	return frac == 0.5
}

// splitScale returns hi + lo = s (lo nil when it is 0) with hi and lo short enough (12 bits in
// f32, 27 in f64: Veltkamp's split) that q * hi and q * lo are exact for a
// quotient q with up to 12 significant bits.
func (e *emitter) splitScale(p *quantParam, ck ir.ElemKind) (hi, lo *ir.Value) {
	c := 4097.0 // 2^12 + 1
	if ck == ir.F64 {
		c = 134217729 // 2^27 + 1
	}
	if p.perTensor {
		h, l := veltkamp(p.scaleValue, c, ck)
		if l == 0 {
			return e.constant(ck, h), nil // a short scale: hi is all of it
		}
		return e.constant(ck, h), e.constant(ck, l)
	}
	t := e.mul(p.scale, e.constant(ck, c))
	hi = e.sub(t, e.sub(t, p.scale))
	return hi, e.sub(p.scale, hi)
}

// veltkamp splits s as splitScale does, in the arithmetic of ck.
func veltkamp(s, c float64, ck ir.ElemKind) (hi, lo float64) {
	if ck == ir.F32 {
		s32 := float32(s)
		t := float32(s32 * float32(c))
		h := float32(t - float32(t-s32))
		return float64(h), float64(float32(s32 - h))
	}
	t := s * c
	h := t - (t - s)
	return h, s - h
}

// roundQuotient returns round_half_even(x / s) of the exact quotient, given
// q = x / s rounded to the compute precision. Rounding q can land exactly on
// a half-integer h that the true quotient is not (0.1 * 25.0000005 is not
// 2.5 but may round to it), and rounding h then goes the wrong way. Where q
// is a half-integer, the sign of the residual x - q*s, computed exactly
// with s split as hi + lo (x - q*hi is exact by Sterbenz's lemma, q*lo is
// exact), says on which side of h the true quotient lies:
//
//	%r = graph.round %q : tensor<4xf32>
//	%f = graph.floor %q : tensor<4xf32>
//	%fr = graph.sub %q, %f : tensor<4xf32>
//	%half = graph.cmp %fr, %c0.5 {predicate = "eq"} : (tensor<4xf32>, tensor<f32>) -> tensor<4xi1>
//	%p = graph.mul %q, %shi : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
//	%e = graph.sub %x, %p : tensor<4xf32>
//	%pl = graph.mul %q, %slo : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
//	%res = graph.sub %e, %pl : tensor<4xf32>
//	%up = graph.add %q, %c0.5 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
//	%dn = graph.sub %q, %c0.5 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
//	%gt = graph.cmp %res, %c0 {predicate = "gt"} : (tensor<4xf32>, tensor<f32>) -> tensor<4xi1>
//	%lt = graph.cmp %res, %c0 {predicate = "lt"} : (tensor<4xf32>, tensor<f32>) -> tensor<4xi1>
//	%r1 = graph.select %lt, %dn, %r : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
//	%r2 = graph.select %gt, %up, %r1 : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
//	%rq = graph.select %half, %r2, %r : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
//
// The products are exact while |q| < 2^11 and the scale is a normal
// number; larger quotients saturate every quantised type either way.
func (e *emitter) roundQuotient(q, x *ir.Value, p *quantParam, ck ir.ElemKind) *ir.Value {
	r := e.round(q)
	half := e.constant(ck, 0.5)
	isHalf := e.cmp(e.sub(q, e.floor(q)), half, "eq")
	hi, lo := e.splitScale(p, ck)
	res := e.sub(x, e.mul(q, hi))
	if lo != nil {
		res = e.sub(res, e.mul(q, lo))
	}
	zero := e.constant(ck, 0)
	r1 := e.sel(e.cmp(res, zero, "lt"), e.sub(q, half), r)
	r2 := e.sel(e.cmp(res, zero, "gt"), e.add(q, half), r1)
	return e.sel(isHalf, r2, r)
}

// quantizeCore quantises x (already in its compute kind) to the result
// type with parameters p, as graph.quantize defines it.
func (e *emitter) quantizeCore(x *ir.Value, p *quantParam, resultType ir.TensorType) *ir.Value {
	ck, k := elemKindOf(x), resultType.Elem.Kind
	q := x
	if !(p.perTensor && p.scaleValue == 1) {
		q = e.div(x, p.scale)
	}
	if k.IsFloat() {
		// f8: x / scale + zero_point saturated to the finite range, then
		// one rounding by the cast; NaN stays NaN through clamp and cast.
		// The zero point is added even when it is 0: -0 + 0 is +0, as the
		// reference computes it (found by FuzzPipeline).
		q = e.add(q, p.zero(e, ck))
		lim := numeric.MaxFinite(k)
		return builtValue(graph.BuildCast(e.b, e.loc, e.clamp(q, -lim, lim), resultType))
	}
	var v *ir.Value
	if p.perTensor && isPowerOfTwo(p.scaleValue) {
		v = e.round(q) // the quotient is exact
	} else {
		v = e.roundQuotient(q, x, p, ck)
	}
	if p.hasZero() {
		v = e.add(v, p.zero(e, ck))
	}
	v = e.sel(e.isNaN(q), p.zero(e, ck), v)
	lo, hi := graph.QuantRange(k)
	return builtValue(graph.BuildCast(e.b, e.loc, e.clamp(v, float64(lo), float64(hi)), resultType))
}

// dequantizeCore returns (q - zero_point) * scale in compute kind ck, with
// the difference rounded once, as the reference forms it: i32 data is
// widened to i64 and the difference with an integer zero point taken
// exactly there, since f32 cannot hold every i32.
func (e *emitter) dequantizeCore(x *ir.Value, p *quantParam, ck ir.ElemKind) *ir.Value {
	var d *ir.Value
	wide := elemKindOf(x) == ir.I32 && p.hasZero() && (p.perTensor || elemKindOf(p.zeroPoints).IsInt())
	switch {
	case !p.hasZero():
		d = e.cast(x, ck)
	case wide:
		d = e.cast(x, ir.I64)
		if p.perTensor {
			d = e.sub(d, e.constant(ir.I64, p.zeroValue))
		} else {
			d = e.sub(d, e.cast(p.zeroPoints, ir.I64))
		}
		d = e.cast(d, ck)
	default:
		d = e.sub(e.cast(x, ck), p.zero(e, ck))
	}
	if p.perTensor && p.scaleValue == 1 {
		return d
	}
	return e.mul(d, p.scale)
}

// ExpandQuantize expands `graph.quantize` (per tensor or per channel) into
// saturate(round_half_even(x / scale) + zero_point) with explicit
// saturation on both sides, NaN mapped to the zero point and a final cast
// that is in range. The quotient is rounded as the exact quotient would
// be (see roundQuotient). f32 to ui8 with scale 0.5 and zero point 128:
//
//	%s = graph.constant dense<0.5> : tensor<f32>
//	%q = graph.div %x, %s : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
//	%rq = graph.round %q : tensor<4xf32>  // 0.5 is a power of two: q is exact
//	%zp = graph.constant dense<128.0> : tensor<f32>
//	%v = graph.add %rq, %zp : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
//	%nan = graph.cmp %q, %q {predicate = "ne"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
//	%n = graph.select %nan, %zp, %v : (tensor<4xi1>, tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
//	%c = graph.clamp %n {max = 255.0 : f32, min = 0.0 : f32} : tensor<4xf32>
//	%y = graph.cast %c : (tensor<4xf32>) -> tensor<4xui8>
//
// Any other scale rounds the quotient as the exact quotient would be
// (roundQuotient). To f8E4M3FN it is clamp(x / scale + zero_point, -448,
// 448) and a cast that rounds to nearest even; NaN stays NaN. Per channel,
// the scales and zero points are reshaped to line up with `axis` and cast
// to f32.
func ExpandQuantize(b *ir.Builder, loc ir.Location, op *ir.Operation) *ir.Value {
	e := newEmitter(b, loc)
	qo := graph.QuantizeOp{Operation: op}
	x := qo.Input()
	ck := quantComputeKind([]*ir.Value{x, qo.Scales()}, qo.Scale())
	p := e.quantSide(x, ck, qo.Scales(), qo.ZeroPoints(), qo.Scale(), qo.ZeroPoint(), qo.Axis())
	return e.quantizeCore(e.cast(x, ck), p, tensorOf(qo.Output()))
}

// ExpandDequantize expands `graph.dequantize` into (q - zero_point) * scale
// computed in f32 (f64 for an f64 result) and cast to the result type:
//
//	%s = graph.constant dense<0.5> : tensor<f32>
//	%f = graph.cast %q : (tensor<4xui8>) -> tensor<4xf32>
//	%zp = graph.constant dense<128.0> : tensor<f32>
//	%d = graph.sub %f, %zp : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
//	%y = graph.mul %d, %s : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
//
// An i32 input is widened to i64 for the subtraction, which is then exact.
func ExpandDequantize(b *ir.Builder, loc ir.Location, op *ir.Operation) *ir.Value {
	e := newEmitter(b, loc)
	dq := graph.DequantizeOp{Operation: op}
	x := dq.Input()
	rk := elemKindOf(dq.Output())
	ck := quantComputeKind([]*ir.Value{dq.Output(), dq.Scales()}, dq.Scale())
	p := e.quantSide(x, ck, dq.Scales(), dq.ZeroPoints(), dq.Scale(), dq.ZeroPoint(), dq.Axis())
	return e.cast(e.dequantizeCore(x, p, ck), rk)
}

// ExpandRequantize expands `graph.requantize` into the dequantize and
// quantize expansions back to back, without rounding the intermediate to
// a storage type: quantize(dequantize(q)) with the output side's
// saturation, NaN handling and exact rounding of the quotient.
func ExpandRequantize(b *ir.Builder, loc ir.Location, op *ir.Operation) *ir.Value {
	e := newEmitter(b, loc)
	rq := graph.RequantizeOp{Operation: op}
	x := rq.Input()
	ck := quantComputeKind([]*ir.Value{rq.InScales(), rq.Scales()}, rq.InScale(), rq.Scale())
	in := e.quantSide(x, ck, rq.InScales(), rq.InZeroPoints(), rq.InScale(), rq.InZeroPoint(), rq.Axis())
	out := e.quantSide(x, ck, rq.Scales(), rq.ZeroPoints(), rq.Scale(), rq.ZeroPoint(), rq.Axis())
	return e.quantizeCore(e.dequantizeCore(x, in, ck), out, tensorOf(rq.Output()))
}

// ---------------------------------------------------------------------------
// Dispatch

// IsNumericsComposite reports whether op is one of the ops the expansions
// of this file replace: logaddexp, logaddexp2, softmax, log_softmax,
// logsumexp, quantize, dequantize, requantize.
func IsNumericsComposite(op *ir.Operation) bool {
	switch op.Name() {
	case graph.OpLogAddExp, graph.OpLogAddExp2, graph.OpSoftmax, graph.OpLogSoftmax, graph.OpLogSumExp,
		graph.OpQuantize, graph.OpDequantize, graph.OpRequantize:
		return true
	}
	return false
}

// ExpandNumericsOp verifies op, one of IsNumericsComposite's ops, and
// builds its expansion at b's insertion point. It returns the replacement
// of op's result, or an error at op's location when op does not verify or
// is not such an op. The caller replaces the uses and erases op.
func ExpandNumericsOp(b *ir.Builder, op *ir.Operation) (v *ir.Value, err error) {
	if !IsNumericsComposite(op) {
		return nil, ir.OpError(op, "has no numerics expansion")
	}
	if d := op.Def(); d != nil && d.Verify != nil {
		if err := d.Verify(op); err != nil {
			return nil, err
		}
	}
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, ir.OpError(op, "cannot be expanded: %v", r)
		}
	}()
	switch op.Name() {
	case graph.OpLogAddExp, graph.OpLogAddExp2:
		return ExpandLogAddExp(b, op.Loc, op.Operand(0), op.Operand(1), op.Name() == graph.OpLogAddExp2), nil
	case graph.OpSoftmax:
		return ExpandSoftmax(b, op.Loc, op.Operand(0), graph.SoftmaxOp{Operation: op}.Axis()), nil
	case graph.OpLogSoftmax:
		return ExpandLogSoftmax(b, op.Loc, op.Operand(0), graph.LogSoftmaxOp{Operation: op}.Axis()), nil
	case graph.OpLogSumExp:
		l := graph.LogSumExpOp{Operation: op}
		return ExpandLogSumExp(b, op.Loc, op.Operand(0), l.Axis(), l.Keepdim()), nil
	case graph.OpQuantize:
		return ExpandQuantize(b, op.Loc, op), nil
	case graph.OpDequantize:
		return ExpandDequantize(b, op.Loc, op), nil
	default: // graph.OpRequantize
		return ExpandRequantize(b, op.Loc, op), nil
	}
}
