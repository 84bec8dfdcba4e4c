package randprog

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

// errNotApplicable is what an op generator returns when the values built
// so far offer nothing it can use; the generator then tries another op.
var errNotApplicable = errors.New("not applicable")

// gen builds one function. Values are chosen from pool, every value the
// function has so far (arguments, constants and op results) in creation
// order; new arguments are added when an op needs a fresh input.
type gen struct {
	r    *rand.Rand
	cfg  Config
	fn   ir.Func
	b    *ir.Builder
	dyn  bool    // the function's arguments may have `?` dimensions
	base []int64 // the shape most arguments derive from, so that they broadcast
	pool []*ir.Value
	ops  int // ops built so far, constants not counted
}

// generator adds one op (or a short chain of ops) to the function.
type generator struct {
	name   string
	weight int
	run    func(g *gen) error
}

func generateFunc(r *rand.Rand, cfg Config, name string) (ir.Func, error) {
	g := &gen{r: r, cfg: cfg}
	g.fn = ir.NewFunc(ir.Location{}, name, ir.FunctionType{})
	g.b = ir.NewBuilderAtEnd(g.fn.Body())
	g.dyn = cfg.DynamicPercent > 0 && r.IntN(100) < cfg.DynamicPercent
	g.base = g.randomShape(1 + r.IntN(cfg.MaxRank))
	g.newArg(g.base, g.floatElem())
	if r.IntN(2) == 0 {
		g.newArg(g.derivedShape(g.base), g.elemOf(g.pool[0]))
	}

	gens := generators(cfg)
	total := 0
	for _, gn := range gens {
		total += gn.weight
	}
	target := 1 + r.IntN(cfg.MaxOps)
	for attempt := 0; g.ops < target && attempt < 30*target; attempt++ {
		pick := r.IntN(total)
		var gn generator
		for _, gn = range gens {
			if pick < gn.weight {
				break
			}
			pick -= gn.weight
		}
		if err := gn.run(g); err != nil && err != errNotApplicable {
			return ir.Func{}, fmt.Errorf("@%s: %s: %w", name, gn.name, err)
		}
	}
	if g.ops == 0 {
		if _, err := g.push(val(graphNeg(g.b, g.pool[0]))); err != nil {
			return ir.Func{}, err
		}
	}
	results := g.pickResults()
	g.fn.Body().Append(ir.NewOperation(ir.ReturnOpName, ir.Location{}, results, nil, nil, 0))
	ft := ir.FunctionType{}
	for _, a := range g.fn.Args() {
		ft.Inputs = append(ft.Inputs, a.Type())
	}
	for _, v := range results {
		ft.Results = append(ft.Results, v.Type())
	}
	g.fn.SetType(ft)
	return g.fn, nil
}

// val returns the single result of a freshly built op.
func val[T interface{ Result(int) *ir.Value }](op T, err error) (*ir.Value, error) {
	if err != nil {
		return nil, err
	}
	return op.Result(0), nil
}

// push records a value an op produced and counts the op.
func (g *gen) push(v *ir.Value, err error) (*ir.Value, error) {
	if err != nil {
		return nil, err
	}
	g.pool = append(g.pool, v)
	g.ops++
	return v, nil
}

// ---------------------------------------------------------------------------
// Types and run-time shapes

func (g *gen) typeOf(v *ir.Value) ir.TensorType {
	t, _ := v.Type().(ir.TensorType)
	return t
}

func (g *gen) elemOf(v *ir.Value) ir.ElemKind { return g.typeOf(v).Elem.Kind }

func (g *gen) shapeOf(v *ir.Value) []int64 { return g.typeOf(v).Shape }

// runtime returns the extents a shape has when the program runs: `?` is
// DynExtent.
func runtime(shape []int64) []int64 {
	out := make([]int64, len(shape))
	for i, d := range shape {
		if d == ir.Dynamic {
			d = DynExtent
		}
		out[i] = d
	}
	return out
}

// count is the run-time element count of a shape.
func count(shape []int64) int64 {
	n := int64(1)
	for _, d := range runtime(shape) {
		n *= d
	}
	return n
}

// isStatic reports whether a shape has no `?`.
func isStatic(shape []int64) bool { return !ir.HasDynamicDim(shape) }

// broadcastRuntime returns the run-time broadcast of two shapes and
// whether their run-time extents are compatible. It is stricter than the
// static rule, which lets `?` meet any extent.
func broadcastRuntime(a, b []int64) ([]int64, bool) {
	ra, rb := runtime(a), runtime(b)
	if len(ra) < len(rb) {
		ra, rb = rb, ra
	}
	out := append([]int64(nil), ra...)
	off := len(ra) - len(rb)
	for i, y := range rb {
		x := ra[off+i]
		switch {
		case x == y || y == 1:
		case x == 1:
			out[off+i] = y
		default:
			return nil, false
		}
	}
	return out, true
}

// fits reports whether a value of this shape stays within MaxElements.
func (g *gen) fits(shape []int64) bool { return count(shape) <= g.cfg.MaxElements }

// staticDims lists the dimensions of shape that are not `?`.
func staticDims(shape []int64) []int {
	var out []int
	for i, d := range shape {
		if d != ir.Dynamic {
			out = append(out, i)
		}
	}
	return out
}

// extent returns a random static extent, 1 now and then.
func (g *gen) extent() int64 {
	if g.r.IntN(8) == 0 {
		return 1
	}
	return 1 + g.r.Int64N(g.cfg.MaxExtent)
}

// randomShape returns a shape of the given rank; in a dynamic function
// the leading dimension is usually `?`.
func (g *gen) randomShape(rank int) []int64 {
	for {
		s := make([]int64, rank)
		for i := range s {
			s[i] = g.extent()
		}
		if g.dyn && rank > 0 && g.r.IntN(10) < 7 {
			s[0] = ir.Dynamic
		}
		if g.fits(s) {
			return s
		}
	}
}

// derivedShape returns a shape that broadcasts with s to s: a suffix of s
// with some extents replaced by 1.
func (g *gen) derivedShape(s []int64) []int64 {
	drop := 0
	if len(s) > 0 && g.r.IntN(3) == 0 {
		drop = g.r.IntN(len(s) + 1)
	}
	out := append([]int64(nil), s[drop:]...)
	for i := range out {
		if g.r.IntN(4) == 0 {
			out[i] = 1
		}
	}
	return out
}

// floatElem returns a random floating-point element type, mostly f32.
func (g *gen) floatElem() ir.ElemKind {
	switch n := g.r.IntN(20); {
	case n < 11:
		return ir.F32
	case n < 15:
		return ir.BF16
	case n < 19:
		return ir.F16
	}
	return ir.F64
}

func tensorOf(k ir.ElemKind, shape []int64) ir.TensorType {
	return ir.Tensor(ir.ElemType{Kind: k}, shape...)
}

// ---------------------------------------------------------------------------
// Choosing and making values

// pick returns a value of the pool that ok accepts, preferring recent ones
// so that ops form chains, or nil.
func (g *gen) pick(ok func(v *ir.Value) bool) *ir.Value {
	var cands []*ir.Value
	for _, v := range g.pool {
		if ok(v) {
			cands = append(cands, v)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	if len(cands) > 4 && g.r.IntN(10) < 6 {
		cands = cands[len(cands)-4:]
	}
	return cands[g.r.IntN(len(cands))]
}

// pickFloat returns a floating-point value whose shape ok accepts (ok may
// be nil), or nil.
func (g *gen) pickFloat(ok func(shape []int64) bool) *ir.Value {
	return g.pick(func(v *ir.Value) bool {
		return g.elemOf(v).IsFloat() && (ok == nil || ok(g.shapeOf(v)))
	})
}

// canAddArg reports whether the function may take another argument.
func (g *gen) canAddArg() bool { return len(g.fn.Args()) < g.cfg.MaxArgs }

// newArg adds a function argument %xN of the given type to the pool.
func (g *gen) newArg(shape []int64, k ir.ElemKind) *ir.Value {
	a := g.fn.Body().AddArg(tensorOf(k, shape))
	a.Name = fmt.Sprintf("x%d", len(g.fn.Args())-1)
	g.pool = append(g.pool, a)
	return a
}

// input returns a fresh input of the given type: a new argument while the
// function may take more, otherwise a constant (with `?` dims as 1).
func (g *gen) input(shape []int64, k ir.ElemKind) (*ir.Value, error) {
	if g.canAddArg() && g.r.IntN(4) != 0 {
		return g.newArg(shape, k), nil
	}
	return g.randomConstant(staticize(shape), k)
}

// exactInput returns a fresh input of exactly the given type: a new
// argument, or a constant when the shape is static.
func (g *gen) exactInput(shape []int64, k ir.ElemKind) (*ir.Value, error) {
	if g.canAddArg() && (g.r.IntN(4) != 0 || !isStatic(shape)) {
		return g.newArg(shape, k), nil
	}
	if !isStatic(shape) {
		return nil, errNotApplicable
	}
	return g.randomConstant(shape, k)
}

// staticize replaces `?` extents by 1, which broadcasts against them.
func staticize(shape []int64) []int64 {
	out := append([]int64(nil), shape...)
	for i, d := range out {
		if d == ir.Dynamic {
			out[i] = 1
		}
	}
	return out
}

// constant builds `graph.constant dense<...>` of a static shape; one value
// is a splat. Values are rounded to the element type, so the program
// prints and parses back to the same values.
func (g *gen) constant(shape []int64, k ir.ElemKind, values []float64) (*ir.Value, error) {
	vs := make([]float64, len(values))
	for i, v := range values {
		vs[i] = numeric.RoundTo(v, k)
	}
	c, err := val(graphConstant(g.b, ir.DenseAttr{Type: tensorOf(k, shape), Values: vs}))
	if err != nil {
		return nil, err
	}
	g.pool = append(g.pool, c)
	return c, nil
}

// randomConstant is a splat (often a value the canonicalizer knows, such
// as 0 or 1) or, for small shapes, dense random values.
func (g *gen) randomConstant(shape []int64, k ir.ElemKind) (*ir.Value, error) {
	n := count(shape)
	if n == 1 || n > 64 || g.r.IntN(3) != 0 {
		return g.constant(shape, k, []float64{g.constValue(k)})
	}
	vs := make([]float64, n)
	for i := range vs {
		vs[i] = g.constValue(k)
	}
	return g.constant(shape, k, vs)
}

// specialConstants are the splats the canonicalizer's identities look for
// and a few ordinary ones.
var specialConstants = []float64{0, 1, -1, 2, 0.5, -0.25, 3, 1e-3}

// constValue returns a constant element: a special value or a random one
// on a coarse grid (exact in every float type used).
func (g *gen) constValue(k ir.ElemKind) float64 {
	if !k.IsFloat() {
		return float64(g.r.IntN(7) - 3)
	}
	if g.r.IntN(2) == 0 {
		return specialConstants[g.r.IntN(len(specialConstants))]
	}
	return math.Round(g.r.NormFloat64()*16) / 8
}

// partner returns a second operand for a, of a's element type, whose
// run-time shape broadcasts with a's to at most MaxElements: a value of
// the pool, a fresh input or a constant.
func (g *gen) partner(a *ir.Value) (*ir.Value, error) {
	k, sa := g.elemOf(a), g.shapeOf(a)
	compatible := func(s []int64) bool {
		out, ok := broadcastRuntime(sa, s)
		return ok && int64(len(out)) <= int64(g.cfg.MaxRank)+1 && g.fits(out)
	}
	switch g.r.IntN(10) {
	case 0, 1, 2, 3:
		if v := g.pick(func(v *ir.Value) bool { return g.elemOf(v) == k && compatible(g.shapeOf(v)) }); v != nil {
			return v, nil
		}
	case 4:
		// a larger partner: one more leading dimension
		s := append([]int64{1 + g.r.Int64N(3)}, sa...)
		if compatible(s) && len(s) <= g.cfg.MaxRank+1 {
			return g.input(s, k)
		}
	case 5, 6:
		if g.r.IntN(2) == 0 {
			return g.constant(nil, k, []float64{g.constValue(k)})
		}
		return g.randomConstant(staticize(g.derivedShape(sa)), k)
	}
	return g.input(g.derivedShape(sa), k)
}

// pickResults chooses 1 to MaxResults values to return, preferring op
// results nothing uses yet; the ops left unused are dead code.
func (g *gen) pickResults() []*ir.Value {
	var unused, used []*ir.Value
	for _, v := range g.pool {
		if v.IsBlockArg() || v.DefiningOp().Name() == graphConstantName {
			continue
		}
		if v.HasUses() {
			used = append(used, v)
		} else {
			unused = append(unused, v)
		}
	}
	want := 1 + g.r.IntN(g.cfg.MaxResults)
	var out []*ir.Value
	for _, list := range [][]*ir.Value{unused, used} {
		g.r.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
		for _, v := range list {
			if len(out) < want {
				out = append(out, v)
			}
		}
	}
	if len(out) == 0 {
		out = append(out, g.pool[len(g.pool)-1])
	}
	return out
}
