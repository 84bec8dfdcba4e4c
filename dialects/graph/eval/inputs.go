package eval

import (
	"fmt"
	"math"

	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

// ExtremeDynExtent is the extent ExtremeInputs gives every `?` dimension.
const ExtremeDynExtent = 16

// rng is SplitMix64: tiny, and fixed here so that inputs made from a seed
// stay the same across Go releases (math/rand's streams may change).
type rng struct{ s uint64 }

func newRNG(seed int64) *rng { return &rng{s: uint64(seed)*0x9e3779b97f4a7c15 + 0x2545f4914f6cdd1d} }

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// float returns a uniform value in (0, 1].
func (r *rng) float() float64 { return float64(r.next()>>11+1) / (1 << 53) }

// intn returns a uniform integer in [0, n).
func (r *rng) intn(n int) int { return int(r.next() % uint64(n)) }

// normal returns a standard normal value (Box-Muller).
func (r *rng) normal() float64 {
	return math.Sqrt(-2*math.Log(r.float())) * math.Cos(2*math.Pi*r.float())
}

// argShapes resolves the argument types of fn, giving `?` the extent dyn.
func argShapes(fn ir.Func, dyn int64) ([][]int64, []ir.ElemKind, error) {
	if fn.Operation == nil || fn.Body() == nil {
		return nil, nil, fmt.Errorf("eval: needs a func.func with a body")
	}
	var shapes [][]int64
	var elems []ir.ElemKind
	for i, a := range fn.Args() {
		shape, k, ok := tensorTypeOf(a.Type())
		if !ok {
			return nil, nil, ir.Errorf(fn.Loc, "@%s: argument #%d has type %s, not a tensor type", fn.SymName(), i, a.Type())
		}
		s := make([]int64, len(shape))
		for j, d := range shape {
			if d == ir.Dynamic {
				d = dyn
			}
			s[j] = d
		}
		if _, err := numElems(s); err != nil {
			return nil, nil, ir.Errorf(fn.Loc, "@%s: argument #%d: %v", fn.SymName(), i, err)
		}
		shapes = append(shapes, s)
		elems = append(elems, k)
	}
	return shapes, elems, nil
}

// InputElements is how many elements the inputs of fn hold when every
// `?` dimension has the extent dyn (RandomInputs' dynExtent, or
// ExtremeDynExtent for ExtremeInputs), without making them; the error is
// the one those functions would return.
func InputElements(fn ir.Func, dyn int64) (int64, error) {
	shapes, _, err := argShapes(fn, dyn)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, s := range shapes {
		m, _ := ir.NumElements(s)
		n += m
	}
	return n, nil
}

// RandomInputs makes deterministic inputs for fn from a seed: normal-ish
// values scaled by `scale`, dynamic dims = dynExtent. Float values are
// rounded to the element type; signed integers are the rounded normal
// value, unsigned ones its magnitude, both saturated to the type's range;
// i1 values are fair coin flips. The indices of a graph.gather are
// uniform over the gathered axis.
func RandomInputs(fn ir.Func, seed int64, scale float64, dynExtent int64) ([]*Tensor, error) {
	shapes, elems, err := argShapes(fn, dynExtent)
	if err != nil {
		return nil, err
	}
	bounds := gatherBounds(fn, dynExtent)
	r := newRNG(seed)
	var out []*Tensor
	for i, shape := range shapes {
		k := elems[i]
		t := NewTensor(k, shape)
		for j := range t.Data {
			t.Data[j] = randomValue(r, k, scale)
			if n, ok := bounds[i]; ok {
				t.Data[j] = float64(r.intn(int(n)))
			}
		}
		out = append(out, t)
	}
	return out, nil
}

// gatherBounds finds the arguments of fn that a graph.gather (or
// graph.index_copy) reads as its indices (directly or through graph.fused operands) and returns, for
// each, the smallest extent n of a gathered axis, a `?` counting as dyn:
// random and extreme inputs give such an argument indices in [0, n), the
// only ones the reference interpreter accepts.
func gatherBounds(fn ir.Func, dyn int64) map[int]int64 {
	bounds := map[int]int64{}
	var walk func(v *ir.Value) (int64, bool)
	walk = func(v *ir.Value) (int64, bool) {
		best, found := int64(0), false
		note := func(n int64) {
			if !found || n < best {
				best, found = n, true
			}
		}
		for _, u := range v.Uses() {
			op := u.Owner
			switch {
			case op.Name() == "graph.gather" && u.Index == 1:
				if n, ok := axisExtent(op, -1, dyn); ok {
					note(n)
				}
			case op.Name() == "graph.index_copy" && u.Index == 1:
				// positions along the destination's axis
				if n, ok := axisExtent(op, 0, dyn); ok {
					note(n)
				}
			case op.Name() == "graph.fused" && op.NumRegions() == 1 && len(op.Region(0).Blocks) == 1:
				if args := op.Region(0).Entry().Args; u.Index < len(args) {
					if n, ok := walk(args[u.Index]); ok {
						note(n)
					}
				}
			}
		}
		return best, found
	}
	for i, a := range fn.Args() {
		if n, ok := walk(a); ok && n > 0 {
			bounds[i] = n
		}
	}
	return bounds
}

// axisExtent is the extent of operand 0 of op along its `axis` attribute
// (def when absent), a `?` counting as dyn.
func axisExtent(op *ir.Operation, def int64, dyn int64) (int64, bool) {
	shape, _, ok := tensorTypeOf(op.Operand(0).Type())
	a, err := attrInt(op, "axis", def)
	if !ok || err != nil {
		return 0, false
	}
	d, err := normAxis(a, len(shape))
	if err != nil {
		return 0, false
	}
	if shape[d] == ir.Dynamic {
		return dyn, true
	}
	return shape[d], true
}

// gatherIndexValues are the indices ExtremeInputs plants in an argument
// read as graph.gather indices into an axis of extent n: both ends, and
// the rest at random.
func gatherIndexValues(n int64) []float64 {
	if n == 1 {
		return []float64{0}
	}
	return []float64{0, float64(n - 1)}
}

func randomValue(r *rng, k ir.ElemKind, scale float64) float64 {
	v := r.normal() * scale
	switch {
	case k == ir.I1:
		return float64(r.next() & 1)
	case k.IsUnsigned():
		return numeric.SaturateInt(numeric.RoundHalfEven(math.Abs(v)), k)
	case k.IsInt():
		return numeric.SaturateInt(numeric.RoundHalfEven(v), k)
	}
	return numeric.RoundTo(v, k)
}

// extremeValues lists the special values of kind k that ExtremeInputs
// plants, each already rounded to k (so 1e30 is inf in f16 and NaN in
// f8E4M3FN, which has no infinity).
func extremeValues(k ir.ElemKind) []float64 {
	if k.IsInt() {
		lo, hi := k.IntRange()
		top, below := float64(hi), float64(hi-1)
		if k == ir.I64 {
			// 2^63 - 1 and 2^63 - 2 are no float64s: the largest ones below them
			top = math.Nextafter(1<<63, 0)
			below = math.Nextafter(top, 0)
		}
		vs := []float64{0, 1, float64(lo), top}
		if k != ir.I1 {
			vs = append(vs, float64(lo+1), below, 2, 100)
			if !k.IsUnsigned() {
				vs = append(vs, -1, -2, -100)
			}
		}
		return vs
	}
	sub, norm, top := numeric.SmallestSubnormal(k), numeric.SmallestNormal(k), numeric.MaxFinite(k)
	mags := []float64{88.73, 1e4, 1e30, sub, norm - sub, norm, top}
	vs := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN()}
	for _, m := range mags {
		vs = append(vs, m, -m)
	}
	for i, v := range vs {
		vs[i] = numeric.RoundTo(v, k)
	}
	return vs
}

// ExtremeInputs returns inputs that mix +-0, +-inf, NaN, +-88.73, +-1e4,
// +-1e30, subnormals and the element type's range ends with random values
// (deterministic from seed). Every special value appears at least once in
// each input with enough elements; the rest are, with equal odds, another
// special value or a normal value of scale 10; the order is shuffled.
// Integer inputs mix 0, +-1, +-2, +-100 and the range ends, except the
// indices of a graph.gather, which mix both ends of the gathered axis with
// random indices into it. Dynamic dimensions get ExtremeDynExtent.
func ExtremeInputs(fn ir.Func, seed int64) ([]*Tensor, error) {
	shapes, elems, err := argShapes(fn, ExtremeDynExtent)
	if err != nil {
		return nil, err
	}
	bounds := gatherBounds(fn, ExtremeDynExtent)
	r := newRNG(seed)
	var out []*Tensor
	for i, shape := range shapes {
		k := elems[i]
		t := NewTensor(k, shape)
		special := extremeValues(k)
		n, isIndex := bounds[i]
		if isIndex {
			special = gatherIndexValues(n)
		}
		for j := range t.Data {
			switch {
			case j < len(special):
				t.Data[j] = special[j]
			case isIndex:
				t.Data[j] = float64(r.intn(int(n)))
			case r.next()&1 == 0:
				t.Data[j] = special[r.intn(len(special))]
			default:
				t.Data[j] = randomValue(r, k, 10)
			}
		}
		for j := len(t.Data) - 1; j > 0; j-- {
			l := r.intn(j + 1)
			t.Data[j], t.Data[l] = t.Data[l], t.Data[j]
		}
		out = append(out, t)
	}
	return out, nil
}
