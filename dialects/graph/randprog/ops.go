package randprog

import (
	"fmt"
	"slices"

	"github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/ir"
)

// This file holds the op generators: one per group of graph ops, each
// picking operands from the pool (or making fresh ones) and attributes
// that the op's verifier accepts.

var loc = ir.Location{}

const graphConstantName = graph.OpConstant

func graphNeg(b *ir.Builder, x *ir.Value) (graph.NegOp, error) { return graph.BuildNeg(b, loc, x) }

func graphConstant(b *ir.Builder, v ir.DenseAttr) (graph.ConstantOp, error) {
	return graph.BuildConstant(b, loc, v)
}

// generators returns the op generators with their weights.
func generators(cfg Config) []generator {
	gens := []generator{
		{"unary", 18, genUnary},
		{"binary", 20, genBinary},
		{"cmp-select", 4, genCmpSelect},
		{"clamp", 3, genClamp},
		{"cast", 6, genFloatCast},
		{"reduce", 6, genReduce},
		{"norm", 4, genNorm},
		{"softmax", 5, genSoftmax},
		{"reshape", 3, genReshape},
		{"transpose", 3, genTranspose},
		{"roll", 2, genRoll},
		{"gather", 2, genGather},
		{"slice", 3, genSlice},
		{"concat", 2, genConcat},
		{"matmul", 3, genMatMul},
		{"quant-matmul", 2, genQuantMatMul},
		{"decode-scores", 1, genDecodeScores},
		{"broadcast_to", 2, genBroadcastTo},
		{"constant-expr", 2, genConstantExpr},
		{"naive-logaddexp", 2, genNaiveLogAddExp},
		{"naive-softmax", 1, genNaiveSoftmax},
		{"identity", 4, genIdentity},
		{"repeat", 3, genRepeat},
		{"index_copy", 2, genIndexCopy},
	}
	if !cfg.NoIntCasts {
		gens = append(gens, generator{"int-cast", 3, genIntCast}, generator{"manual-quantize", 1, genManualQuantize})
	}
	if !cfg.NoQuant {
		gens = append(gens, generator{"quantize", 3, genQuantize}, generator{"dequantize", 2, genDequantize},
			generator{"requantize", 1, genRequantize})
	}
	return gens
}

type unaryBuilder struct {
	name  string
	build func(b *ir.Builder, x *ir.Value) (*ir.Value, error)
}

var unaryOps = []unaryBuilder{
	{"neg", func(b *ir.Builder, x *ir.Value) (*ir.Value, error) { return val(graph.BuildNeg(b, loc, x)) }},
	{"abs", func(b *ir.Builder, x *ir.Value) (*ir.Value, error) { return val(graph.BuildAbs(b, loc, x)) }},
	{"exp", func(b *ir.Builder, x *ir.Value) (*ir.Value, error) { return val(graph.BuildExp(b, loc, x)) }},
	{"exp2", func(b *ir.Builder, x *ir.Value) (*ir.Value, error) { return val(graph.BuildExp2(b, loc, x)) }},
	{"log", func(b *ir.Builder, x *ir.Value) (*ir.Value, error) { return val(graph.BuildLog(b, loc, x)) }},
	{"log2", func(b *ir.Builder, x *ir.Value) (*ir.Value, error) { return val(graph.BuildLog2(b, loc, x)) }},
	{"log1p", func(b *ir.Builder, x *ir.Value) (*ir.Value, error) { return val(graph.BuildLog1p(b, loc, x)) }},
	{"expm1", func(b *ir.Builder, x *ir.Value) (*ir.Value, error) { return val(graph.BuildExpm1(b, loc, x)) }},
	{"sqrt", func(b *ir.Builder, x *ir.Value) (*ir.Value, error) { return val(graph.BuildSqrt(b, loc, x)) }},
	{"rsqrt", func(b *ir.Builder, x *ir.Value) (*ir.Value, error) { return val(graph.BuildRsqrt(b, loc, x)) }},
	{"reciprocal", func(b *ir.Builder, x *ir.Value) (*ir.Value, error) { return val(graph.BuildReciprocal(b, loc, x)) }},
	{"tanh", func(b *ir.Builder, x *ir.Value) (*ir.Value, error) { return val(graph.BuildTanh(b, loc, x)) }},
	{"sigmoid", func(b *ir.Builder, x *ir.Value) (*ir.Value, error) { return val(graph.BuildSigmoid(b, loc, x)) }},
	{"silu", func(b *ir.Builder, x *ir.Value) (*ir.Value, error) { return val(graph.BuildSilu(b, loc, x)) }},
	{"gelu", func(b *ir.Builder, x *ir.Value) (*ir.Value, error) { return val(graph.BuildGelu(b, loc, x, "none")) }},
	{"gelu-tanh", func(b *ir.Builder, x *ir.Value) (*ir.Value, error) { return val(graph.BuildGelu(b, loc, x, "tanh")) }},
	{"relu", func(b *ir.Builder, x *ir.Value) (*ir.Value, error) { return val(graph.BuildRelu(b, loc, x)) }},
	{"sin", func(b *ir.Builder, x *ir.Value) (*ir.Value, error) { return val(graph.BuildSin(b, loc, x)) }},
	{"cos", func(b *ir.Builder, x *ir.Value) (*ir.Value, error) { return val(graph.BuildCos(b, loc, x)) }},
	{"floor", func(b *ir.Builder, x *ir.Value) (*ir.Value, error) { return val(graph.BuildFloor(b, loc, x)) }},
	{"ceil", func(b *ir.Builder, x *ir.Value) (*ir.Value, error) { return val(graph.BuildCeil(b, loc, x)) }},
	{"round", func(b *ir.Builder, x *ir.Value) (*ir.Value, error) { return val(graph.BuildRound(b, loc, x)) }},
}

type binaryBuilder struct {
	name  string
	build func(b *ir.Builder, x, y *ir.Value) (*ir.Value, error)
}

var binaryOps = []binaryBuilder{
	{"add", func(b *ir.Builder, x, y *ir.Value) (*ir.Value, error) { return val(graph.BuildAdd(b, loc, x, y)) }},
	{"sub", func(b *ir.Builder, x, y *ir.Value) (*ir.Value, error) { return val(graph.BuildSub(b, loc, x, y)) }},
	{"mul", func(b *ir.Builder, x, y *ir.Value) (*ir.Value, error) { return val(graph.BuildMul(b, loc, x, y)) }},
	{"div", func(b *ir.Builder, x, y *ir.Value) (*ir.Value, error) { return val(graph.BuildDiv(b, loc, x, y)) }},
	{"max", func(b *ir.Builder, x, y *ir.Value) (*ir.Value, error) { return val(graph.BuildMax(b, loc, x, y)) }},
	{"min", func(b *ir.Builder, x, y *ir.Value) (*ir.Value, error) { return val(graph.BuildMin(b, loc, x, y)) }},
	{"pow", func(b *ir.Builder, x, y *ir.Value) (*ir.Value, error) { return val(graph.BuildPow(b, loc, x, y)) }},
	{"logaddexp", func(b *ir.Builder, x, y *ir.Value) (*ir.Value, error) {
		return val(graph.BuildLogAddExp(b, loc, x, y))
	}},
	{"logaddexp2", func(b *ir.Builder, x, y *ir.Value) (*ir.Value, error) {
		return val(graph.BuildLogAddExp2(b, loc, x, y))
	}},
}

// choose returns a random element of xs.
func choose[T any](g *gen, xs ...T) T { return xs[g.r.IntN(len(xs))] }

// spellAxis writes a dimension as the user might: from the front, or
// counted from the end (-1 for the last).
func (g *gen) spellAxis(d, rank int) int64 {
	if g.r.IntN(2) == 0 {
		return int64(d - rank)
	}
	return int64(d)
}

func genUnary(g *gen) error {
	x := g.pickFloat(nil)
	if x == nil {
		return errNotApplicable
	}
	u := unaryOps[g.r.IntN(len(unaryOps))]
	_, err := g.push(u.build(g.b, x))
	return err
}

func genBinary(g *gen) error {
	a := g.pickFloat(nil)
	if a == nil {
		return errNotApplicable
	}
	b, err := g.partner(a)
	if err != nil {
		return err
	}
	if g.r.IntN(3) == 0 {
		a, b = b, a
	}
	op := binaryOps[g.r.IntN(len(binaryOps))]
	_, err = g.push(op.build(g.b, a, b))
	return err
}

// genCmpSelect: `%c = graph.cmp %a, %b` and `graph.select %c, %a, %b`
// (a max or min written out, or a mask).
func genCmpSelect(g *gen) error {
	a := g.pickFloat(nil)
	if a == nil {
		return errNotApplicable
	}
	b, err := g.partner(a)
	if err != nil {
		return err
	}
	pred := choose(g, "eq", "ne", "lt", "le", "gt", "ge")
	c, err := g.push(val(graph.BuildCmp(g.b, loc, a, b, pred)))
	if err != nil {
		return err
	}
	if g.r.IntN(2) == 0 {
		a, b = b, a
	}
	_, err = g.push(val(graph.BuildSelect(g.b, loc, c, a, b)))
	return err
}

func genClamp(g *gen) error {
	x := g.pickFloat(nil)
	if x == nil {
		return errNotApplicable
	}
	lo := choose(g, -1.0, 0.0, -2.5, -6.0)
	hi := lo + choose(g, 0.0, 0.5, 1.0, 6.0, 12.0)
	_, err := g.push(val(graph.BuildClamp(g.b, loc, x, lo, hi)))
	return err
}

// genFloatCast casts between f32, bf16 and f16 (f64 now and then), and
// once in a while to the same type, which canonicalize removes.
func genFloatCast(g *gen) error {
	x := g.pickFloat(nil)
	if x == nil {
		return errNotApplicable
	}
	from, to := g.elemOf(x), g.floatElem()
	if to == from && g.r.IntN(5) != 0 {
		to = choose(g, ir.F32, ir.BF16, ir.F16)
	}
	_, err := g.push(val(graph.BuildCast(g.b, loc, x, tensorOf(to, g.shapeOf(x)))))
	return err
}

// genIntCast is an unchecked float -> integer cast (legalize-numerics
// makes it saturate) or an integer -> float cast.
func genIntCast(g *gen) error {
	x := g.pick(func(v *ir.Value) bool { return g.elemOf(v) != ir.F8E4M3FN })
	if x == nil {
		return errNotApplicable
	}
	var to ir.ElemKind
	if g.elemOf(x).IsFloat() {
		to = choose(g, ir.UI8, ir.I8, ir.I32, ir.I16)
	} else {
		to = choose(g, ir.F32, ir.F32, ir.BF16, ir.F16)
	}
	_, err := g.push(val(graph.BuildCast(g.b, loc, x, tensorOf(to, g.shapeOf(x)))))
	return err
}

// reducible reports whether a shape has a dimension a reduction may take.
func reducible(shape []int64) bool { return len(staticDims(shape)) > 0 }

func genReduce(g *gen) error {
	x := g.pickFloat(reducible)
	if x == nil {
		return errNotApplicable
	}
	s := g.shapeOf(x)
	dims := staticDims(s)
	g.r.Shuffle(len(dims), func(i, j int) { dims[i], dims[j] = dims[j], dims[i] })
	n := 1
	if len(dims) > 1 && g.r.IntN(3) == 0 {
		n = 2 + g.r.IntN(len(dims)-1)
	}
	axes := make([]int64, n)
	for i, d := range dims[:n] {
		axes[i] = g.spellAxis(d, len(s))
	}
	keep := g.r.IntN(2) == 0
	var err error
	switch g.r.IntN(4) {
	case 0:
		_, err = g.push(val(graph.BuildReduceSum(g.b, loc, x, axes, keep)))
	case 1:
		_, err = g.push(val(graph.BuildReduceMax(g.b, loc, x, axes, keep)))
	case 2:
		_, err = g.push(val(graph.BuildReduceMin(g.b, loc, x, axes, keep)))
	default:
		_, err = g.push(val(graph.BuildReduceMean(g.b, loc, x, axes, keep)))
	}
	return err
}

// normAxis picks the dimension a normalisation runs along: the last one
// when it is static (as models do), another static one now and then.
func (g *gen) normAxis(s []int64) (dim int, axis int64) {
	dims := staticDims(s)
	dim = dims[g.r.IntN(len(dims))]
	if last := len(s) - 1; s[last] != ir.Dynamic && g.r.IntN(4) != 0 {
		dim = last
	}
	if dim == len(s)-1 && g.r.IntN(2) == 0 {
		return dim, -1
	}
	return dim, g.spellAxis(dim, len(s))
}

func genNorm(g *gen) error {
	x := g.pickFloat(reducible)
	if x == nil {
		return errNotApplicable
	}
	s, k := g.shapeOf(x), g.elemOf(x)
	dim, axis := g.normAxis(s)
	c := []int64{s[dim]}
	w, err := g.weight(c, k)
	if err != nil {
		return err
	}
	eps := choose(g, 1e-5, 1e-6, 0.01)
	eps = float64(float32(eps)) // the attribute is an f32
	if g.r.IntN(3) == 0 {
		bias, err := g.weight(c, k)
		if err != nil {
			return err
		}
		_, err = g.push(val(graph.BuildLayerNorm(g.b, loc, x, w, bias, eps, axis)))
		return err
	}
	_, err = g.push(val(graph.BuildRMSNorm(g.b, loc, x, w, eps, axis)))
	return err
}

// weight returns a 1-D operand of a normalisation: an argument or a
// dense constant near 1.
func (g *gen) weight(shape []int64, k ir.ElemKind) (*ir.Value, error) {
	if g.canAddArg() && g.r.IntN(2) == 0 {
		return g.newArg(shape, k), nil
	}
	vs := make([]float64, shape[0])
	for i := range vs {
		vs[i] = 1 + float64(g.r.IntN(9)-4)/8
	}
	return g.constant(shape, k, vs)
}

func genSoftmax(g *gen) error {
	x := g.pickFloat(reducible)
	if x == nil {
		return errNotApplicable
	}
	_, axis := g.normAxis(g.shapeOf(x))
	var err error
	switch g.r.IntN(3) {
	case 0:
		_, err = g.push(val(graph.BuildSoftmax(g.b, loc, x, axis)))
	case 1:
		_, err = g.push(val(graph.BuildLogSoftmax(g.b, loc, x, axis)))
	default:
		_, err = g.push(val(graph.BuildLogSumExp(g.b, loc, x, axis, g.r.IntN(3) == 0)))
	}
	return err
}

// ---------------------------------------------------------------------------
// Quantisation

// quantParams returns a scale and a zero point in the range of k.
func (g *gen) quantParams(k ir.ElemKind) (scale float64, zp int64) {
	scale = choose(g, 0.5, 0.25, 0.125, 2.0, 1.0/64, float64(float32(0.1)), float64(float32(0.01)))
	switch k {
	case ir.UI8:
		zp = choose[int64](g, 0, 128, 10, 255)
	case ir.I8:
		zp = choose[int64](g, 0, -3, 5, -128)
	case ir.I32:
		zp = choose[int64](g, 0, 7, -100)
	}
	return scale, zp
}

// perChannel returns constant per-channel scales (f32) and zero points
// (i32, in the range of k) of length c.
func (g *gen) perChannel(c int64, k ir.ElemKind) (scales, zps *ir.Value, err error) {
	ss := make([]float64, c)
	zs := make([]float64, c)
	for i := range ss {
		s, z := g.quantParams(k)
		ss[i], zs[i] = s, float64(z)
	}
	if scales, err = g.constant([]int64{c}, ir.F32, ss); err != nil {
		return nil, nil, err
	}
	zps, err = g.constant([]int64{c}, ir.I32, zs)
	return scales, zps, err
}

// channelAxis picks the channel dimension of a per-channel conversion of
// a value of shape s, if it has a static one.
func (g *gen) channelAxis(s []int64) (dim int, axis int64, ok bool) {
	if !reducible(s) || g.r.IntN(4) != 0 {
		return 0, 0, false
	}
	dims := staticDims(s)
	dim = dims[g.r.IntN(len(dims))]
	return dim, g.spellAxis(dim, len(s)), true
}

func genQuantize(g *gen) error {
	x := g.pickFloat(nil)
	if x == nil {
		return errNotApplicable
	}
	s := g.shapeOf(x)
	k := choose(g, ir.UI8, ir.UI8, ir.I8, ir.I8, ir.F8E4M3FN)
	out := tensorOf(k, s)
	if dim, axis, ok := g.channelAxis(s); ok {
		scales, zps, err := g.perChannel(s[dim], k)
		if err != nil {
			return err
		}
		_, err = g.push(val(graph.BuildQuantize(g.b, loc, x, scales, zps, out, 1, 0, axis)))
		return err
	}
	scale, zp := g.quantParams(k)
	_, err := g.push(val(graph.BuildQuantize(g.b, loc, x, nil, nil, out, scale, zp, -1)))
	return err
}

// quantized returns a value of one of the kinds, or a fresh argument.
func (g *gen) quantized(kinds ...ir.ElemKind) (*ir.Value, error) {
	if q := g.pick(func(v *ir.Value) bool { return slices.Contains(kinds, g.elemOf(v)) }); q != nil {
		return q, nil
	}
	if !g.canAddArg() {
		return nil, errNotApplicable
	}
	return g.newArg(g.derivedShape(g.base), kinds[g.r.IntN(len(kinds))]), nil
}

func genDequantize(g *gen) error {
	q, err := g.quantized(ir.UI8, ir.I8, ir.I32, ir.F8E4M3FN)
	if err != nil {
		return err
	}
	s, k := g.shapeOf(q), g.elemOf(q)
	out := tensorOf(choose(g, ir.F32, ir.F32, ir.BF16, ir.F16), s)
	if dim, axis, ok := g.channelAxis(s); ok {
		scales, zps, err := g.perChannel(s[dim], k)
		if err != nil {
			return err
		}
		_, err = g.push(val(graph.BuildDequantize(g.b, loc, q, scales, zps, out, 1, 0, axis)))
		return err
	}
	scale, zp := g.quantParams(k)
	_, err = g.push(val(graph.BuildDequantize(g.b, loc, q, nil, nil, out, scale, zp, -1)))
	return err
}

func genRequantize(g *gen) error {
	q, err := g.quantized(ir.I32, ir.I8, ir.UI8)
	if err != nil {
		return err
	}
	s, in := g.shapeOf(q), g.elemOf(q)
	k := choose(g, ir.UI8, ir.I8)
	inScale, inZP := g.quantParams(in)
	scale, zp := g.quantParams(k)
	_, err = g.push(val(graph.BuildRequantize(g.b, loc, q, nil, nil, nil, nil, tensorOf(k, s), inScale, inZP, scale, zp, -1)))
	return err
}

// ---------------------------------------------------------------------------
// Shape ops and matmul

// factor splits n into a random shape of rank 1 to 3.
func (g *gen) factor(n int64) []int64 {
	rank := 1 + g.r.IntN(3)
	out := make([]int64, 0, rank)
	for i := 0; i < rank-1; i++ {
		var divs []int64
		for d := int64(1); d <= n; d++ {
			if n%d == 0 {
				divs = append(divs, d)
			}
		}
		d := divs[g.r.IntN(len(divs))]
		out = append(out, d)
		n /= d
	}
	return append(out, n)
}

func genReshape(g *gen) error {
	x := g.pick(func(v *ir.Value) bool { return isStatic(g.shapeOf(v)) })
	if x == nil {
		return errNotApplicable
	}
	s := g.factor(count(g.shapeOf(x)))
	_, err := g.push(val(graph.BuildReshape(g.b, loc, x, tensorOf(g.elemOf(x), s))))
	return err
}

func genTranspose(g *gen) error {
	x := g.pick(func(v *ir.Value) bool { return len(g.shapeOf(v)) >= 2 })
	if x == nil {
		return errNotApplicable
	}
	perm := make([]int64, len(g.shapeOf(x)))
	for i, p := range g.r.Perm(len(perm)) {
		perm[i] = int64(p)
	}
	_, err := g.push(val(graph.BuildTranspose(g.b, loc, x, perm)))
	return err
}

// genRoll rotates a value with a static last dimension by a shift in
// [-n, n] (any integer is valid; these cover both signs and the identity).
func genRoll(g *gen) error {
	x := g.pick(func(v *ir.Value) bool {
		s := g.shapeOf(v)
		return len(s) >= 1 && s[len(s)-1] != ir.Dynamic && s[len(s)-1] > 0
	})
	if x == nil {
		return errNotApplicable
	}
	s := g.shapeOf(x)
	n := s[len(s)-1]
	shift := g.r.Int64N(2*n+1) - n
	_, err := g.push(val(graph.BuildRoll(g.b, loc, x, shift)))
	return err
}

// genGather takes elements of a value along one axis: usually one per row
// of the last axis (cross-entropy's x[row, target[row]]), otherwise any
// number along any axis. The indices are a new i32 or i64 argument, which
// eval's inputs fill with indices in range, or a constant of such indices
// when the axis is static.
func genGather(g *gen) error {
	x := g.pick(func(v *ir.Value) bool { return len(g.shapeOf(v)) >= 1 })
	if x == nil {
		return errNotApplicable
	}
	s := g.shapeOf(x)
	axis := len(s) - 1
	if g.r.IntN(3) == 0 {
		axis = g.r.IntN(len(s))
	}
	shape := slices.Clone(s)
	shape[axis] = 1
	if g.r.IntN(3) == 0 {
		shape[axis] = 1 + g.r.Int64N(g.cfg.MaxExtent)
	}
	k := ir.I64
	if g.r.IntN(2) == 0 {
		k = ir.I32
	}
	var idx *ir.Value
	switch n := s[axis]; {
	case g.canAddArg() && (g.r.IntN(4) != 0 || n == ir.Dynamic || !isStatic(shape)):
		idx = g.newArg(shape, k)
	case n == ir.Dynamic || n == 0 || !isStatic(shape):
		return errNotApplicable
	default:
		vs := make([]float64, count(shape))
		for i := range vs {
			vs[i] = float64(g.r.Int64N(n))
		}
		var err error
		if idx, err = g.constant(shape, k, vs); err != nil {
			return err
		}
	}
	_, err := g.push(val(graph.BuildGather(g.b, loc, x, idx, int64(axis-len(s)))))
	return err
}

// genIndexCopy writes a computed value into a fresh argument in place at
// the positions of an index argument (a KV-cache update). The destination
// stays out of the pool, so nothing else reads it, as the verifier
// requires; the harnesses compare it after the update as one more result.
func genIndexCopy(g *gen) error {
	if len(g.fn.Args())+2 > g.cfg.MaxArgs {
		return errNotApplicable
	}
	src := g.pick(func(v *ir.Value) bool {
		return !v.IsBlockArg() && v.DefiningOp().Name() != graphConstantName && len(g.shapeOf(v)) >= 1
	})
	if src == nil {
		return errNotApplicable
	}
	s := g.shapeOf(src)
	axis := g.r.IntN(len(s))
	shape := slices.Clone(s)
	shape[axis] = 1 + g.r.Int64N(g.cfg.MaxExtent+2)
	if !g.fits(runtime(shape)) {
		return errNotApplicable
	}
	k := ir.I64
	if g.r.IntN(2) == 0 {
		k = ir.I32
	}
	idx := g.newArg([]int64{s[axis]}, k)
	dst := g.fn.Body().AddArg(tensorOf(g.elemOf(src), shape))
	dst.Name = fmt.Sprintf("x%d", len(g.fn.Args())-1)
	a := int64(axis)
	if g.r.IntN(3) == 0 {
		a -= int64(len(s))
	}
	if _, err := graph.BuildIndexCopy(g.b, loc, dst, idx, src, a); err != nil {
		return err
	}
	g.ops++
	return nil
}

// genSlice takes a part of a tensor: a random window of each static
// dimension, or (always for a `?` one, sometimes for a static one) the whole
// dimension, a size of -1.
func genSlice(g *gen) error {
	x := g.pick(func(v *ir.Value) bool { return len(g.shapeOf(v)) > 0 })
	if x == nil {
		return errNotApplicable
	}
	s := g.shapeOf(x)
	offsets, sizes := make([]int64, len(s)), make([]int64, len(s))
	for i, d := range s {
		if d == ir.Dynamic || d < 1 || g.r.IntN(6) == 0 {
			sizes[i] = -1
			continue
		}
		sizes[i] = 1 + g.r.Int64N(d)
		offsets[i] = g.r.Int64N(d - sizes[i] + 1)
	}
	_, err := g.push(val(graph.BuildSlice(g.b, loc, x, offsets, sizes)))
	return err
}

func genConcat(g *gen) error {
	x := g.pick(func(v *ir.Value) bool { return reducible(g.shapeOf(v)) })
	if x == nil {
		return errNotApplicable
	}
	s, k := g.shapeOf(x), g.elemOf(x)
	dims := staticDims(s)
	dim := dims[g.r.IntN(len(dims))]
	parts := []*ir.Value{x}
	for n := 1 + g.r.IntN(2); n > 0; n-- {
		other := x
		if g.r.IntN(2) == 0 {
			t := append([]int64(nil), s...)
			t[dim] = 1 + g.r.Int64N(g.cfg.MaxExtent)
			var err error
			if other, err = g.exactInput(t, k); err != nil {
				return err
			}
		}
		parts = append(parts, other)
	}
	total := int64(0)
	for _, p := range parts {
		total += runtime(g.shapeOf(p))[dim]
	}
	out := runtime(s)
	out[dim] = total
	if !g.fits(out) {
		return errNotApplicable
	}
	_, err := g.push(val(graph.BuildConcat(g.b, loc, parts, g.spellAxis(dim, len(s)))))
	return err
}

// matmulShape picks a float left operand of a matmul and the shapes
// around it: the result's and the right operand's (2-D, [K, N] or, with
// transposeB, [N, K]); nil when no value fits.
type matmulShape struct {
	x          *ir.Value
	s, out, bs []int64
	transposeB bool
}

func (g *gen) matmulShape(transposeOneIn int) *matmulShape {
	x := g.pickFloat(func(s []int64) bool { return len(s) >= 2 && s[len(s)-1] != ir.Dynamic })
	if x == nil {
		return nil
	}
	s := g.shapeOf(x)
	kdim, n := s[len(s)-1], 1+g.r.Int64N(g.cfg.MaxExtent)
	out := append(append([]int64(nil), s[:len(s)-1]...), n)
	if !g.fits(out) {
		return nil
	}
	m := &matmulShape{x: x, s: s, out: out, bs: []int64{kdim, n}, transposeB: g.r.IntN(transposeOneIn) == 0}
	if m.transposeB {
		m.bs = []int64{n, kdim}
	}
	return m
}

func genMatMul(g *gen) error {
	m := g.matmulShape(3)
	if m == nil {
		return errNotApplicable
	}
	x, s, k, bs, transposeB := m.x, m.s, g.elemOf(m.x), m.bs, m.transposeB
	if len(s) > 2 && g.r.IntN(3) == 0 {
		bs = append(append([]int64(nil), s[:len(s)-2]...), bs...) // batched rhs
	}
	b, err := g.input(bs, k)
	if err != nil {
		return err
	}
	if _, err = g.push(val(graph.BuildMatMul(g.b, loc, x, b, transposeB))); err != nil || g.r.IntN(2) != 0 {
		return err
	}
	// a sibling: another weight of the same shape against the same x (k's
	// and v's projections), which fusion makes one kernel with the first
	b2, err := g.input(bs, k)
	if err != nil {
		return err
	}
	_, err = g.push(val(graph.BuildMatMul(g.b, loc, x, b2, transposeB)))
	return err
}

// genDecodeScores is a decode step's attention scores: a batched matmul
// with one row per matrix ([B, 1, K] against keys [B, N, K] or [B, K, N])
// reduced over its rows by a softmax, a log_softmax or a logsumexp, which
// fusion makes one row kernel computing the dot products in its loop over
// the row (passes.matmulRows).
func genDecodeScores(g *gen) error {
	x := g.pickFloat(func(s []int64) bool { return len(s) == 3 && s[1] == 1 && s[0] > 1 && s[2] != ir.Dynamic })
	k := ir.F32
	var err error
	if x == nil {
		if x0 := g.pickFloat(nil); x0 != nil {
			k = g.elemOf(x0)
		}
		shape := []int64{1 + g.r.Int64N(4), 1, 1 + g.r.Int64N(g.cfg.MaxExtent)}
		if x, err = g.input(shape, k); err != nil {
			return err
		}
	}
	k = g.elemOf(x)
	s := g.shapeOf(x)
	n := 1 + g.r.Int64N(g.cfg.MaxExtent)
	transposeB := g.r.IntN(3) != 0
	bs := []int64{s[0], s[2], n}
	if transposeB {
		bs = []int64{s[0], n, s[2]}
	}
	if !g.fits(bs) || !g.fits([]int64{s[0], 1, n}) {
		return errNotApplicable
	}
	keys, err := g.input(bs, k)
	if err != nil {
		return err
	}
	scores, err := val(graph.BuildMatMul(g.b, loc, x, keys, transposeB))
	if err != nil {
		return err
	}
	switch g.r.IntN(3) {
	case 0:
		_, err = g.push(val(graph.BuildSoftmax(g.b, loc, scores, -1)))
	case 1:
		_, err = g.push(val(graph.BuildLogSoftmax(g.b, loc, scores, -1)))
	default:
		_, err = g.push(val(graph.BuildLogSumExp(g.b, loc, scores, -1, g.r.IntN(2) == 0)))
	}
	return err
}

// genQuantMatMul is a matmul whose operands are casts of narrow inputs,
// the prologue matmul kernels convert as they load: a W8A16 weight (int8,
// uint8 or f8E4M3FN cast to the float left operand's type), or W8A8
// (int8 activations and weights cast to i32, accumulated in i32, then
// cast to f32 so that float ops may follow).
func genQuantMatMul(g *gen) error {
	m := g.matmulShape(2)
	if m == nil {
		return errNotApplicable
	}
	x, s, k, out, bs, transposeB := m.x, m.s, g.elemOf(m.x), m.out, m.bs, m.transposeB
	if g.r.IntN(2) == 0 {
		q, err := g.exactInput(bs, choose(g, ir.I8, ir.UI8, ir.F8E4M3FN))
		if err != nil {
			return err
		}
		w, err := val(graph.BuildCast(g.b, loc, q, tensorOf(k, bs)))
		if err != nil {
			return err
		}
		_, err = g.push(val(graph.BuildMatMul(g.b, loc, x, w, transposeB)))
		return err
	}
	// W8A8: the int8 left operand is x quantized by a cast (saturating
	// once legalize-numerics has run), or an int8 input
	var a8 *ir.Value
	var err error
	if g.r.IntN(2) == 0 && !g.cfg.NoIntCasts {
		a8, err = val(graph.BuildCast(g.b, loc, x, tensorOf(ir.I8, s)))
	} else {
		a8, err = g.exactInput(s, ir.I8)
	}
	if err != nil {
		return err
	}
	q, err := g.exactInput(bs, ir.I8)
	if err != nil {
		return err
	}
	a32, err := val(graph.BuildCast(g.b, loc, a8, tensorOf(ir.I32, s)))
	if err != nil {
		return err
	}
	q32, err := val(graph.BuildCast(g.b, loc, q, tensorOf(ir.I32, bs)))
	if err != nil {
		return err
	}
	acc, err := val(graph.BuildMatMul(g.b, loc, a32, q32, transposeB))
	if err != nil {
		return err
	}
	_, err = g.push(val(graph.BuildCast(g.b, loc, acc, tensorOf(ir.F32, out))))
	return err
}

func genBroadcastTo(g *gen) error {
	x := g.pick(func(v *ir.Value) bool { return len(g.shapeOf(v)) < g.cfg.MaxRank+1 })
	if x == nil {
		return errNotApplicable
	}
	s := g.shapeOf(x)
	out := append([]int64(nil), s...)
	for i, d := range out {
		if d == 1 && g.r.IntN(2) == 0 {
			out[i] = 2 + g.r.Int64N(3)
		}
	}
	if g.r.IntN(2) == 0 {
		out = append([]int64{1 + g.r.Int64N(3)}, out...)
	}
	if !g.fits(out) {
		return errNotApplicable
	}
	_, err := g.push(val(graph.BuildBroadcastTo(g.b, loc, x, tensorOf(g.elemOf(x), out))))
	return err
}

// genConstantExpr computes on constants only, which canonicalize folds.
func genConstantExpr(g *gen) error {
	k := g.floatElem()
	shape := staticize(g.derivedShape(g.base))
	c, err := g.randomConstant(shape, k)
	if err != nil {
		return err
	}
	if g.r.IntN(2) == 0 {
		d, err := g.randomConstant(staticize(g.derivedShape(shape)), k)
		if err != nil {
			return err
		}
		_, err = g.push(binaryOps[g.r.IntN(len(binaryOps))].build(g.b, c, d))
		return err
	}
	_, err = g.push(unaryOps[g.r.IntN(len(unaryOps))].build(g.b, c))
	return err
}

// ---------------------------------------------------------------------------
// Patterns the passes look for

// genNaiveLogAddExp writes log(exp(a) + exp(b)) (or the base-2 form),
// which overflows in f32 past 88.72 until legalize-numerics rewrites it.
func genNaiveLogAddExp(g *gen) error {
	a := g.pickFloat(nil)
	if a == nil {
		return errNotApplicable
	}
	b, err := g.partner(a)
	if err != nil {
		return err
	}
	exp, log := unaryOps[2], unaryOps[4]
	if g.r.IntN(5) == 0 {
		exp, log = unaryOps[3], unaryOps[5]
	}
	ea, err := g.push(exp.build(g.b, a))
	if err != nil {
		return err
	}
	eb, err := g.push(exp.build(g.b, b))
	if err != nil {
		return err
	}
	s, err := g.push(val(graph.BuildAdd(g.b, loc, ea, eb)))
	if err != nil {
		return err
	}
	_, err = g.push(log.build(g.b, s))
	return err
}

// genNaiveSoftmax writes exp(x) / sum(exp(x)) along the last axis.
func genNaiveSoftmax(g *gen) error {
	x := g.pickFloat(func(s []int64) bool { return len(s) > 0 && s[len(s)-1] != ir.Dynamic })
	if x == nil {
		return errNotApplicable
	}
	e, err := g.push(val(graph.BuildExp(g.b, loc, x)))
	if err != nil {
		return err
	}
	s, err := g.push(val(graph.BuildReduceSum(g.b, loc, e, []int64{-1}, true)))
	if err != nil {
		return err
	}
	_, err = g.push(val(graph.BuildDiv(g.b, loc, e, s)))
	return err
}

// genManualQuantize writes cast(round(x * 2) + 128) to ui8 by hand, with
// the unchecked cast that wraps -1 to 255.
func genManualQuantize(g *gen) error {
	x := g.pickFloat(nil)
	if x == nil {
		return errNotApplicable
	}
	k := g.elemOf(x)
	two, err := g.constant(nil, k, []float64{2})
	if err != nil {
		return err
	}
	zp, err := g.constant(nil, k, []float64{128})
	if err != nil {
		return err
	}
	m, err := g.push(val(graph.BuildMul(g.b, loc, x, two)))
	if err != nil {
		return err
	}
	r, err := g.push(val(graph.BuildRound(g.b, loc, m)))
	if err != nil {
		return err
	}
	t, err := g.push(val(graph.BuildAdd(g.b, loc, r, zp)))
	if err != nil {
		return err
	}
	_, err = g.push(val(graph.BuildCast(g.b, loc, t, tensorOf(ir.UI8, g.shapeOf(t)))))
	return err
}

// genIdentity writes something the canonicalizer simplifies: x * 1,
// 0 + x, x - 0, x / 1, x ** 1, neg(neg x), a transpose of a transpose,
// a reshape of a reshape, a cast or broadcast_to to the same type.
func genIdentity(g *gen) error {
	x := g.pickFloat(nil)
	if x == nil {
		return errNotApplicable
	}
	k, s := g.elemOf(x), g.shapeOf(x)
	splat := func(v float64) (*ir.Value, error) { return g.constant(nil, k, []float64{v}) }
	switch g.r.IntN(9) {
	case 0, 1, 2, 3, 4:
		pairs := []struct {
			op       int // index into binaryOps
			identity float64
			left     bool // the identity may come first
		}{{2, 1, true}, {0, 0, true}, {1, 0, false}, {3, 1, false}, {6, 1, false}}
		p := pairs[g.r.IntN(len(pairs))]
		c, err := splat(p.identity)
		if err != nil {
			return err
		}
		if p.left && g.r.IntN(2) == 0 {
			_, err = g.push(binaryOps[p.op].build(g.b, c, x))
		} else {
			_, err = g.push(binaryOps[p.op].build(g.b, x, c))
		}
		return err
	case 5:
		n, err := g.push(val(graph.BuildNeg(g.b, loc, x)))
		if err != nil {
			return err
		}
		_, err = g.push(val(graph.BuildNeg(g.b, loc, n)))
		return err
	case 6:
		if len(s) < 2 {
			return errNotApplicable
		}
		t := x
		for i := 0; i < 2; i++ {
			perm := make([]int64, len(s))
			for i, p := range g.r.Perm(len(s)) {
				perm[i] = int64(p)
			}
			var err error
			if t, err = g.push(val(graph.BuildTranspose(g.b, loc, t, perm))); err != nil {
				return err
			}
		}
		return nil
	case 7:
		if !isStatic(s) {
			return errNotApplicable
		}
		r1, err := g.push(val(graph.BuildReshape(g.b, loc, x, tensorOf(k, g.factor(count(s))))))
		if err != nil {
			return err
		}
		_, err = g.push(val(graph.BuildReshape(g.b, loc, r1, tensorOf(k, g.factor(count(s))))))
		return err
	default:
		if g.r.IntN(2) == 0 {
			_, err := g.push(val(graph.BuildCast(g.b, loc, x, x.Type())))
			return err
		}
		_, err := g.push(val(graph.BuildBroadcastTo(g.b, loc, x, x.Type())))
		return err
	}
}

// genRepeat repeats an op of the function with the same operands, which
// cse merges.
func genRepeat(g *gen) error {
	var ops []*ir.Operation
	for _, op := range g.fn.Body().Ops() {
		// an index_copy writes its own argument: a repeat would be a second use
		if op.Name() != graph.OpConstant && op.Name() != graph.OpIndexCopy {
			ops = append(ops, op)
		}
	}
	if len(ops) == 0 {
		return errNotApplicable
	}
	c := g.b.Insert(ops[g.r.IntN(len(ops))].Clone(ir.Mapping{}))
	if c.NumResults() != 1 {
		return fmt.Errorf("repeated %s has %d results", c.Name(), c.NumResults())
	}
	_, err := g.push(c.Result(0), nil)
	return err
}
