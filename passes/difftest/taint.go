package difftest

import (
	"fmt"
	"math"

	"github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/ir"
)

// Taint: which result elements depend on a value no reference can vouch
// for. Two kinds of value are fragile:
//
//   - an overflow (or an underflow to 0): exp(1e4) is inf even in float64,
//     and from there neither the original nor its float64 reference says
//     anything about the exact result: pow(-1, log2(2^x + 2^y)) is 1 when
//     the sum overflows to inf and NaN when legalize-numerics computes the
//     logarithm exactly;
//   - a step taken next to a discontinuity: ceil(log(e^a + e^b)) is 0 when
//     b = -inf and a = 1e-45 rounds exp(a) to 1, and 1 when the logarithm
//     is computed as a + log1p(...), which is exact; float64 rounds the
//     same way, so only a discontinuity of the op reveals it.
//
// MarkOverflow and MarkDiscontinuities build copies of a function in which
// every fragile value is replaced by a marker; an element is tainted when
// the copies with two different markers disagree on it, or the copy with
// marker NaN makes it NaN where it is not otherwise: when it depends on a
// fragile value.

// MarkOverflow returns a detached copy of f in which the result of every
// op that can overflow (exp, exp2, expm1, pow, mul, add, sub, cast,
// reduce_sum, reduce_mean; graph.fused bodies included) that is ±inf
// while the operands it is computed from are finite, or that underflows
// (exp, exp2, pow, mul, cast, softmax: 0 from finite operands, non-zero
// ones for those where 0 is exact then), is replaced by marker:
//
//	%e = graph.exp %x : tensor<4xf32>
//
// becomes
//
//	%e0 = graph.exp %x : tensor<4xf32>
//	%a = graph.abs %e0 : tensor<4xf32>
//	%inf = graph.cmp %a, %cinf {predicate = "eq"} : (tensor<4xf32>, tensor<f32>) -> tensor<4xi1>
//	%ax = graph.abs %x : tensor<4xf32>
//	%fin = graph.cmp %ax, %cinf {predicate = "lt"} : (tensor<4xf32>, tensor<f32>) -> tensor<4xi1>
//	%m = graph.select %inf, %fin, %false : (tensor<4xi1>, tensor<4xi1>, tensor<i1>) -> tensor<4xi1>
//	...                                  // or exp underflowed: %a == 0 and %fin
//	%e = graph.select %m, %cmarker, %e0 : (tensor<4xi1>, tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
//
// For a reduction the operands' finiteness is reduce_max(abs(x)) over the
// same axes. Only the creation of an infinity (or a 0) from finite
// operands counts: an infinite input that propagates does not, nor does a
// pole (log(0), 1/0), whose infinity is exact.
func MarkOverflow(f ir.Func, marker Marker) (ir.Func, error) {
	return markEach(f, marker, func(op *ir.Operation) bool {
		_, under := underflowing[op.Name()]
		return (overflowing[op.Name()] || under) && op.NumResults() == 1 && isFloat(op.Result(0))
	}, markOverflow)
}

// MarkDiscontinuities returns a detached copy of f in which the result of
// every op whose input lies next to one of its discontinuities, within
// 2^-10 of its magnitude (at least 1), is replaced by marker: ceil and
// floor near an integer, round near a half-integer, a float -> integer
// cast near an integer, quantize (per tensor) where x / scale is near a
// half-integer, cmp with nearly equal operands, log and log2 of exactly 1
// (the trace of a sum that absorbed a smaller term). A rewrite that rounds an
// earlier step differently may land on the other side; so may the exact
// value, which float64 does not always resolve. Integer and i1 results
// take the marker's sign (markers 3 and 5 for integers, true for a
// positive marker); a NaN marker leaves them alone.
func MarkDiscontinuities(f ir.Func, marker Marker) (ir.Func, error) {
	return markEach(f, marker, func(op *ir.Operation) bool {
		switch op.Name() {
		case graph.OpCeil, graph.OpFloor, graph.OpRound:
			return true
		case graph.OpCmp:
			return isFloat(op.Operand(0))
		case graph.OpCast:
			return isFloat(op.Operand(0)) && !isFloat(op.Result(0))
		case graph.OpQuantize:
			return op.NumOperands() == 1
		case graph.OpLog, graph.OpLog2:
			return isFloat(op.Operand(0))
		}
		return false
	}, markDiscontinuity)
}

// Marker is what stands for a fragile value in a marked copy.
type Marker struct {
	// Value replaces a fragile float value (an integer or i1 result takes
	// 3 or 1 for a positive Value, 5 or 0 otherwise). NaN is special: it
	// flows through most float ops, but a comparison, a conversion to an
	// integer type or a quantisation turns it into an ordinary value. A
	// copy with a NaN marker therefore keeps the plain computation next to
	// the marked one and poisons those ops where they read a NaN that the
	// plain computation does not have: they give Poison instead.
	Value float64
	// Poison is what a poisoned op gives: true (1, or 3 for integers) or
	// false (0, or 5). Two copies that differ only in Poison disagree on
	// every element that a marked NaN reaches through such an op.
	Poison bool
}

// companionMarker marks the companion computation of a copy with a NaN
// marker: the NaNs the marked computation has and the companion has not
// come from a marker (the plain computation is no companion: where exp
// overflows, inf / inf is NaN in it too).
const companionMarker = 3.0

// markEach copies f and applies mark to every op that selectOp accepts.
func markEach(f ir.Func, marker Marker, selectOp func(*ir.Operation) bool,
	mark func(m *marking, op *ir.Operation) *ir.Value) (ir.Func, error) {
	c := ir.Func{Operation: f.Operation.Clone(ir.Mapping{})}
	type part struct {
		ops   []*ir.Operation
		value float64
	}
	parts := []part{{[]*ir.Operation{c.Operation}, marker.Value}}
	var pairs [][2]*ir.Operation // marked op, companion op
	if math.IsNaN(marker.Value) {
		// the marked computation follows its companion and returns
		companion := c.Body().Ops()
		var copies []*ir.Operation
		copies, pairs = duplicateBody(c)
		parts = []part{{companion[:len(companion)-1], companionMarker}, {copies, marker.Value}}
	}
	for _, p := range parts {
		var ops []*ir.Operation
		for _, r := range p.ops {
			r.Walk(func(op *ir.Operation) bool {
				if op.Dialect() == "graph" && op.NumResults() == 1 && selectOp(op) {
					ops = append(ops, op)
				}
				return true
			})
		}
		for _, op := range ops {
			m := &marking{b: ir.NewBuilderBefore(op.Next()), loc: op.Loc}
			mask := mark(m, op)
			if err := m.replace(op.Result(0), mask, p.value); err != nil {
				return ir.Func{}, fmt.Errorf("difftest: marking %s: %w", op.Name(), err)
			}
		}
	}
	for _, p := range pairs {
		if err := poison(p[0], p[1], marker.Poison); err != nil {
			return ir.Func{}, fmt.Errorf("difftest: poisoning %s: %w", p[0].Name(), err)
		}
	}
	return c, nil
}

// duplicateBody appends to f's body a copy of its ops (the marked
// computation) that the return then reads. It returns the copied
// top-level ops, and each copied op (nested ones included) paired with
// the op it repeats, in program order.
func duplicateBody(f ir.Func) (copies []*ir.Operation, pairs [][2]*ir.Operation) {
	ret := f.Return()
	m := ir.Mapping{}
	for _, op := range f.Body().Ops() {
		if op == ret {
			break
		}
		c := op.Clone(m)
		f.Body().InsertBefore(c, ret)
		copies = append(copies, c)
		var orig, dup []*ir.Operation
		op.Walk(func(o *ir.Operation) bool { orig = append(orig, o); return true })
		c.Walk(func(o *ir.Operation) bool { dup = append(dup, o); return true })
		for i := range dup {
			pairs = append(pairs, [2]*ir.Operation{dup[i], orig[i]})
		}
	}
	for i, v := range ret.Operands() {
		ret.SetOperand(i, m.Lookup(v))
	}
	return copies, pairs
}

// poison makes a comparison, a float -> integer cast or a quantisation to
// an integer type give the poison value where an operand is NaN in the
// marked computation but not in its companion:
//
//	%c = graph.cmp %x, %y {predicate = "lt"} : ...
//
// becomes
//
//	%c0 = graph.cmp %x, %y {predicate = "lt"} : ...
//	%p = (isnan(%x) and not isnan(%xp)) or (isnan(%y) and not isnan(%yp))
//	%c = graph.select %p, %true, %c0 : ...
//
// where %xp and %yp are the companion's operands.
func poison(marked, plain *ir.Operation, outcome bool) error {
	switch {
	case marked.Name() == graph.OpCmp && isFloat(marked.Operand(0)):
	case (marked.Name() == graph.OpCast || marked.Name() == graph.OpQuantize) &&
		isFloat(marked.Operand(0)) && !isFloat(marked.Result(0)):
	default:
		return nil
	}
	m := &marking{b: ir.NewBuilderBefore(marked.Next()), loc: marked.Loc}
	cond := m.scalar(ir.I1, 0)
	for i, o := range marked.Operands() {
		if !isFloat(o) || i >= plain.NumOperands() {
			continue
		}
		p := plain.Operand(i)
		cond = m.or(cond, m.and(m.cmp(o, o, "ne"), m.cmp(p, p, "eq")))
	}
	v := -1.0
	if outcome {
		v = 1
	}
	return m.replace(marked.Result(0), cond, v)
}

// overflowing lists the ops whose result can overflow while the exact
// value is finite. Poles are not overflows: log(0) = -inf and 1/0 = inf
// are exact, so div, reciprocal, rsqrt and the logarithms are left out.
var overflowing = map[string]bool{
	graph.OpExp: true, graph.OpExp2: true, graph.OpExpm1: true, graph.OpPow: true,
	graph.OpMul: true, graph.OpAdd: true, graph.OpSub: true, graph.OpCast: true,
	graph.OpReduceSum: true, graph.OpReduceMean: true,
}

// underflowing lists the ops whose result can round to 0 while the exact
// value is not (exp(-1e30), 1e-30 * 1e-30, a cast of 1e-10 to f16): an
// underflow the original may turn into a pole later (log(0) = -inf) and a
// rewrite may avoid. A sum that cancels to 0 is exact and is not one. The
// value says whether a 0 is exact when an operand is 0 (0 * x,
// pow(0, y), a cast of 0); exp, exp2 and softmax are never 0 exactly.
var underflowing = map[string]bool{
	graph.OpExp: false, graph.OpExp2: false, graph.OpPow: true, graph.OpMul: true, graph.OpCast: true,
	graph.OpSoftmax: false, // whose entries far below the row maximum underflow
}

var reductions = map[string]bool{
	graph.OpReduceSum: true, graph.OpReduceMax: true, graph.OpReduceMin: true, graph.OpReduceMean: true,
}

func isFloat(v *ir.Value) bool {
	_, ok := floatKind(v)
	return ok
}

func floatKind(v *ir.Value) (ir.ElemKind, bool) {
	t, ok := v.Type().(ir.TensorType)
	return t.Elem.Kind, ok && t.Elem.Kind.IsFloat()
}

func kindOf(v *ir.Value) ir.ElemKind {
	e, _ := ir.ElemOf(v.Type())
	return e.Kind
}

// markOverflow returns the mask of the elements of op's result that
// overflowed or underflowed.
func markOverflow(m *marking, op *ir.Operation) *ir.Value {
	r := op.Result(0)
	rk := kindOf(r)
	absR := m.abs(r)
	finite, nonzero := m.scalar(ir.I1, 1), m.scalar(ir.I1, 1)
	axes, keepdim := reductionAttrs(op)
	for _, o := range op.Operands() {
		k, ok := floatKind(o)
		if !ok {
			continue
		}
		mag := m.abs(o)
		if reductions[op.Name()] {
			mag = m.reduceMax(mag, axes, keepdim)
		}
		finite = m.and(finite, m.cmp(mag, m.scalar(k, math.Inf(1)), "lt"))
		nonzero = m.and(nonzero, m.cmp(mag, m.scalar(k, 0), "gt"))
	}
	mask := m.and(m.cmp(absR, m.scalar(rk, math.Inf(1)), "eq"), finite)
	if zeroIsExact, ok := underflowing[op.Name()]; ok {
		cond := finite
		if zeroIsExact {
			cond = m.and(finite, nonzero)
		}
		mask = m.or(mask, m.and(m.cmp(absR, m.scalar(rk, 0), "eq"), cond))
	}
	return mask
}

// discontinuityTolerance is how near a discontinuity, relative to the
// magnitude (at least 1), an input counts as next to it.
const discontinuityTolerance = 0x1p-10

// markDiscontinuity returns the mask of the elements of op's result whose
// input lies next to a discontinuity of op.
func markDiscontinuity(m *marking, op *ir.Operation) *ir.Value {
	x := op.Operand(0)
	k := kindOf(x)
	// near reports |a - b| <= tol * max(|a|, |b|, 1)
	near := func(a, b *ir.Value) *ir.Value {
		scale := m.max(m.max(m.abs(a), m.abs(b)), m.scalar(k, 1))
		return m.cmp(m.abs(m.sub(a, b)), m.mul(scale, m.scalar(k, discontinuityTolerance)), "le")
	}
	half := func(v *ir.Value) *ir.Value { return m.add(m.floor(v), m.scalar(k, 0.5)) }
	switch op.Name() {
	case graph.OpLog, graph.OpLog2:
		// a logarithm of exactly 1: where a sum absorbed a term below its
		// rounding (1 + 3e-39 is 1 even in float64), log is 0 and what
		// follows (log2 of it) is -inf, where log1p, as legalize-numerics
		// writes log(exp(a) + exp(b)), keeps the term and is exact
		return m.cmp(x, m.scalar(k, 1), "eq")
	case graph.OpCmp:
		return near(x, op.Operand(1))
	case graph.OpRound:
		return near(x, half(x))
	case graph.OpQuantize:
		scale, _ := ir.AttrAsFloat(op.Attr("scale"))
		if scale == 0 {
			scale = 1
		}
		q := m.div(x, m.scalar(k, scale))
		return near(q, half(q))
	}
	// ceil, floor, casts to integers: at the integers
	return near(x, m.round(x))
}

// reductionAttrs reads `axes` and `keepdim` of a reduction.
func reductionAttrs(op *ir.Operation) ([]int64, bool) {
	var axes []int64
	if a, ok := op.Attr("axes").(ir.ArrayAttr); ok {
		axes, _ = a.Int64s()
	}
	keep, _ := op.Attr("keepdim").(ir.BoolAttr)
	return axes, bool(keep)
}

// marking builds the ops that mark one op's result. The first builder
// error is kept and every later step is skipped.
type marking struct {
	b       *ir.Builder
	loc     ir.Location
	err     error
	created []*ir.Operation
}

func (m *marking) val(build func() (*ir.Value, error)) *ir.Value {
	if m.err != nil {
		return nil
	}
	v, err := build()
	if err != nil {
		m.err = err
		return nil
	}
	m.created = append(m.created, v.DefiningOp())
	return v
}

func firstResult[T interface{ Result(int) *ir.Value }](op T, err error) (*ir.Value, error) {
	if err != nil {
		return nil, err
	}
	return op.Result(0), nil
}

func (m *marking) scalar(k ir.ElemKind, v float64) *ir.Value {
	return m.val(func() (*ir.Value, error) {
		return firstResult(graph.BuildConstant(m.b, m.loc, ir.DenseAttr{Type: ir.Tensor(ir.ElemType{Kind: k}), Values: []float64{v}}))
	})
}

func (m *marking) abs(v *ir.Value) *ir.Value {
	return m.val(func() (*ir.Value, error) { return firstResult(graph.BuildAbs(m.b, m.loc, v)) })
}

func (m *marking) floor(v *ir.Value) *ir.Value {
	return m.val(func() (*ir.Value, error) { return firstResult(graph.BuildFloor(m.b, m.loc, v)) })
}

func (m *marking) round(v *ir.Value) *ir.Value {
	return m.val(func() (*ir.Value, error) { return firstResult(graph.BuildRound(m.b, m.loc, v)) })
}

func (m *marking) add(x, y *ir.Value) *ir.Value {
	return m.val(func() (*ir.Value, error) { return firstResult(graph.BuildAdd(m.b, m.loc, x, y)) })
}

func (m *marking) sub(x, y *ir.Value) *ir.Value {
	return m.val(func() (*ir.Value, error) { return firstResult(graph.BuildSub(m.b, m.loc, x, y)) })
}

func (m *marking) mul(x, y *ir.Value) *ir.Value {
	return m.val(func() (*ir.Value, error) { return firstResult(graph.BuildMul(m.b, m.loc, x, y)) })
}

func (m *marking) div(x, y *ir.Value) *ir.Value {
	return m.val(func() (*ir.Value, error) { return firstResult(graph.BuildDiv(m.b, m.loc, x, y)) })
}

func (m *marking) max(x, y *ir.Value) *ir.Value {
	return m.val(func() (*ir.Value, error) { return firstResult(graph.BuildMax(m.b, m.loc, x, y)) })
}

func (m *marking) cmp(x, y *ir.Value, pred string) *ir.Value {
	return m.val(func() (*ir.Value, error) { return firstResult(graph.BuildCmp(m.b, m.loc, x, y, pred)) })
}

func (m *marking) sel(c, x, y *ir.Value) *ir.Value {
	return m.val(func() (*ir.Value, error) { return firstResult(graph.BuildSelect(m.b, m.loc, c, x, y)) })
}

func (m *marking) reduceMax(x *ir.Value, axes []int64, keepdim bool) *ir.Value {
	return m.val(func() (*ir.Value, error) { return firstResult(graph.BuildReduceMax(m.b, m.loc, x, axes, keepdim)) })
}

func (m *marking) and(x, y *ir.Value) *ir.Value { return m.sel(x, y, m.scalar(ir.I1, 0)) }

func (m *marking) or(x, y *ir.Value) *ir.Value { return m.sel(x, m.scalar(ir.I1, 1), y) }

// replace makes every use of r, except the marking's own, read
// select(mask, marker, r). Integer and i1 results take a marker of the
// marker's sign; NaN leaves them alone.
func (m *marking) replace(r, mask *ir.Value, marker float64) error {
	k := kindOf(r)
	if !k.IsFloat() {
		switch {
		case math.IsNaN(marker):
			return m.err
		case k == ir.I1:
			marker = map[bool]float64{true: 1, false: 0}[marker > 0]
		case marker > 0:
			marker = 3
		default:
			marker = 5
		}
	}
	marked := m.sel(mask, m.scalar(k, marker), r)
	if m.err != nil {
		return m.err
	}
	own := map[*ir.Operation]bool{}
	for _, op := range m.created {
		own[op] = true
	}
	for _, u := range append([]*ir.Operand(nil), r.Uses()...) {
		if !own[u.Owner] {
			u.Set(marked)
		}
	}
	return nil
}

// exactOps compute their results without rounding: moving data, choosing
// among operands, or rounding to an integer, which every float type holds.
var exactOps = map[string]bool{
	graph.OpConstant: true, graph.OpReshape: true, graph.OpTranspose: true, graph.OpBroadcastTo: true,
	graph.OpSlice: true, graph.OpConcat: true, graph.OpRoll: true, graph.OpGather: true, graph.OpSelect: true, graph.OpMax: true, graph.OpMin: true,
	graph.OpAbs: true, graph.OpNeg: true, graph.OpRelu: true, graph.OpClamp: true,
	graph.OpFloor: true, graph.OpCeil: true, graph.OpRound: true, graph.OpReduceMax: true, graph.OpReduceMin: true,
}

// PerturbRounding returns a detached copy of f in which every float
// argument, every float constant and the float result of every op that
// rounds are multiplied by 1 ± one ULP (at 1) of their type, the sign of
// value number i (arguments, then in walk order) being sign(i):
//
//	%e = graph.exp %x : tensor<4xf16>
//
// becomes
//
//	%e0 = graph.exp %x : tensor<4xf16>
//	%u = graph.constant dense<1.0009766> : tensor<f16>
//	%e = graph.mul %e0, %u : (tensor<4xf16>, tensor<f16>) -> tensor<4xf16>
//
// Evaluated in float64, it shows how far the program's results move when
// every step rounds by about one ULP more or less, which is what a
// rewrite that rounds one step differently may do: the conditioning of the
// computation, as Monte Carlo arithmetic estimates it. Perturbing the
// inputs too holds a rewrite to backward stability: near a cancellation
// (logaddexp2(-0.375, -2.23) is -0.023), no sequence of rounded steps is
// within a few ULP of the result, but one is exact for inputs within an
// ULP.
func PerturbRounding(f ir.Func, sign func(i int) float64) (ir.Func, error) {
	return perturb(f, func(m *marking, i int, _ *ir.Value, k ir.ElemKind, ulp float64) *ir.Value {
		return m.scalar(k, 1+sign(i)*ulp)
	})
}

// PerturbElements is PerturbRounding with a sign of its own for each
// element along the last axis of each value, where that extent is static:
// the terms of a sum then move apart instead of together, which shows how
// much a sum that cancels depends on its terms' rounding (bf16 terms near
// 100 summing to -1.6 each round by up to 0.25, where moving them all by
// the same factor moves the sum by 2^-8 of -1.6). The signs are a hash of
// the value's number, the element's index and pattern, so that two
// patterns move most pairs of terms apart in one of them (alternation
// alone moves terms 0 and 2 together).
func PerturbElements(f ir.Func, pattern int) (ir.Func, error) {
	return perturb(f, func(m *marking, i int, v *ir.Value, k ir.ElemKind, ulp float64) *ir.Value {
		s, _ := ir.ShapeOf(v.Type())
		if len(s) == 0 || s[len(s)-1] < 2 {
			return m.scalar(k, 1+elementSign(i, 0, pattern)*ulp)
		}
		n := s[len(s)-1]
		vals := make([]float64, n)
		for j := range vals {
			vals[j] = 1 + elementSign(i, j, pattern)*ulp
		}
		return m.val(func() (*ir.Value, error) {
			return firstResult(graph.BuildConstant(m.b, m.loc, ir.DenseAttr{Type: ir.Tensor(ir.ElemType{Kind: k}, n), Values: vals}))
		})
	})
}

// elementSign is the sign PerturbElements gives element j of value i in
// pattern p: a bit of a multiplicative hash.
func elementSign(i, j, p int) float64 {
	h := (uint32(i)*0x9e3779b1 ^ uint32(j)*0x85ebca6b ^ uint32(p)*0xc2b2ae35) * 0x27d4eb2f
	if h>>31 == 0 {
		return 1
	}
	return -1
}

// perturb multiplies every site of PerturbRounding by factor's value.
func perturb(f ir.Func, factor func(m *marking, i int, v *ir.Value, k ir.ElemKind, ulp float64) *ir.Value) (ir.Func, error) {
	c := ir.Func{Operation: f.Operation.Clone(ir.Mapping{})}
	// The inputs and constants first, as rounded once on their way in:
	// a rewrite whose result is exact for inputs one ULP away (backward
	// stable) is as good as any the types allow.
	type site struct {
		v   *ir.Value
		at  *ir.Operation // the op before which the product goes
		loc ir.Location
	}
	var sites []site
	if first := c.Body().First(); first != nil {
		for _, a := range c.Body().Args {
			if isFloat(a) {
				sites = append(sites, site{a, first, first.Loc})
			}
		}
	}
	c.Walk(func(op *ir.Operation) bool {
		rounds := !exactOps[op.Name()] || op.Name() == graph.OpConstant
		if op.Dialect() == "graph" && op.NumResults() == 1 && op.NumRegions() == 0 && rounds && isFloat(op.Result(0)) {
			sites = append(sites, site{op.Result(0), op.Next(), op.Loc})
		}
		return true
	})
	for i, s := range sites {
		k := kindOf(s.v)
		m := &marking{b: ir.NewBuilderBefore(s.at), loc: s.loc}
		ulp := 1.0
		if bits, ok := mantissaBits[k]; ok {
			ulp = math.Ldexp(1, -bits)
		}
		scaled := m.mul(s.v, factor(m, i, s.v, k, ulp))
		if m.err != nil {
			return ir.Func{}, fmt.Errorf("difftest: perturbing %s: %w", s.v, m.err)
		}
		for _, u := range append([]*ir.Operand(nil), s.v.Uses()...) {
			if u.Owner != scaled.DefiningOp() {
				u.Set(scaled)
			}
		}
	}
	return c, nil
}
