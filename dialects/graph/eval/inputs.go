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
// i1 values are fair coin flips.
func RandomInputs(fn ir.Func, seed int64, scale float64, dynExtent int64) ([]*Tensor, error) {
	shapes, elems, err := argShapes(fn, dynExtent)
	if err != nil {
		return nil, err
	}
	r := newRNG(seed)
	var out []*Tensor
	for i, shape := range shapes {
		k := elems[i]
		t := NewTensor(k, shape)
		for j := range t.Data {
			t.Data[j] = randomValue(r, k, scale)
		}
		out = append(out, t)
	}
	return out, nil
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
		vs := []float64{0, 1, float64(lo), float64(hi)}
		if k != ir.I1 {
			vs = append(vs, float64(lo+1), float64(hi-1), 2, 100)
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
// Integer inputs mix 0, +-1, +-2, +-100 and the range ends. Dynamic
// dimensions get ExtremeDynExtent.
func ExtremeInputs(fn ir.Func, seed int64) ([]*Tensor, error) {
	shapes, elems, err := argShapes(fn, ExtremeDynExtent)
	if err != nil {
		return nil, err
	}
	r := newRNG(seed)
	var out []*Tensor
	for i, shape := range shapes {
		k := elems[i]
		t := NewTensor(k, shape)
		special := extremeValues(k)
		for j := range t.Data {
			switch {
			case j < len(special):
				t.Data[j] = special[j]
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
