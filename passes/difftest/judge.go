package difftest

import (
	"fmt"
	"math"

	"github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

// verdict is how one result element compares.
type verdict uint8

const (
	// same: within the bound of the original's own result (rule 1).
	same verdict = iota
	// viaReference: held to the float64 reference instead (rules 2 to 4).
	viaReference
	// excused: no reference can judge the element (it depends on an
	// overflow or a step next to a discontinuity; see unverifiable).
	excused
	mismatch
)

// judge applies the comparison rules of the package documentation to the
// elements of one result.
type judge struct {
	// elem is the result's element type; k is the kind distances are
	// measured in: elem for integers, for floats the narrowest float type
	// the result's computation rounds to (Precision).
	elem      ir.ElemKind
	k         ir.ElemKind
	bound     float64
	rounding  bool // the pipeline may change rounding: rules 2 to 4 apply
	legalized bool // the legalized meaning: its excuses apply
}

// ulpDiff is numeric.ULPDiff, with integers of every kind as plain numbers.
func ulpDiff(a, b float64, k ir.ElemKind) float64 { return numeric.ULPDiff(a, b, k) }

// computeUnit is the spacing of the precision kind k is computed in, at 1:
// 2^-52 for f64, 2^-23 (f32) for every other float kind.
func computeUnit(k ir.ElemKind) float64 {
	if k == ir.F64 {
		return 0x1p-52
	}
	return 0x1p-23
}

// Floor returns the magnitude below which distances between results of
// float kind k are absolute: the magnitude where one ULP of k is
// computeUnit(k), 1 for f32 and f64, 2^-13 for f16, 2^-16 for bf16,
// 2^-20 for f8E4M3FN, 2^-21 for f8E5M2.
func Floor(k ir.ElemKind) float64 {
	if m, ok := mantissaBits[k]; ok && k != ir.F64 {
		return math.Ldexp(1, m-23)
	}
	return 1
}

// Distance is how far apart two results of kind k are, in ULPs of k:
// numeric.ULPDiff where the larger magnitude is at least Floor(k), and
// |a - b| / computeUnit(k) below it. A result below 1 (in the compute
// precision) is only known to the absolute error a computation on values
// of magnitude 1 makes: log(1 + 1e-4) computed from a sum that rounded by
// one ULP at 1 is off by hundreds of ULPs at 1e-4, and 0 against 1e-38 is
// millions of ULPs apart though both are within 2^-24 of the exact value.
// Infinities and NaN are as in ULPDiff; integers are |a - b|.
func Distance(a, b float64, k ir.ElemKind) float64 {
	if !k.IsFloat() || !finite(a) || !finite(b) {
		return ulpDiff(a, b, k)
	}
	if math.Max(math.Abs(a), math.Abs(b)) >= Floor(k) {
		return ulpDiff(a, b, k)
	}
	return math.Abs(a-b) / computeUnit(k)
}

func finite(v float64) bool { return !math.IsInf(v, 0) && !math.IsNaN(v) }

// evidence is what the rules may consult about one element beyond the
// two results; each is evaluated only when a rule needs it.
type evidence struct {
	// ref is the float64 reference of the original; false if the
	// interpreter failed.
	ref func() (float64, bool)
	// scrubbed is ref on the inputs with every NaN replaced by 0.
	scrubbed func() (float64, bool)
	// tainted reports whether the element depends on a value the
	// original overflows to even in float64 (MarkOverflow).
	tainted func() bool
	// overflows reports whether the element depends on an overflow in
	// its own precision in both the original and the transformed program.
	overflows func() bool
	// discontinuous reports whether the element depends on a step the
	// original takes next to a discontinuity (MarkDiscontinuities).
	discontinuous func() bool
	// perturbed returns the element in float64 evaluations of the
	// original with every rounding step moved by one ULP
	// (PerturbRounding).
	perturbed func() []float64
}

// spread is how far one-ULP steps move the original from ref: the
// original's sensitivity to rounding at this element.
func (j judge) spread(r float64, ev evidence, dist func(a, b float64, k ir.ElemKind) float64) float64 {
	s := 0.0
	for _, p := range ev.perturbed() {
		if d := dist(p, r, j.k); d > s {
			s = d
		}
	}
	return s
}

// unverifiable reports whether no reference can judge the element: the
// original overflows on the way to it even in float64 (legalized meaning
// only); both programs overflow on the way to it in their own precision,
// so that neither is near the exact value (a pass is not required to
// remove every overflow, only the ones it rewrites); or the original
// takes a step next to a discontinuity (ceil, round, cmp...), where a
// difference of one rounding, or one float64 cannot see, changes the
// outcome.
func (j judge) unverifiable(ev evidence) bool {
	return (j.legalized && ev.tainted()) || ev.overflows() || ev.discontinuous()
}

// element judges one element.
func (j judge) element(before, after float64, ev evidence) (verdict, string) {
	ref, scrubbed := ev.ref, ev.scrubbed
	dist := ulpDiff
	if j.rounding {
		dist = Distance
	}
	d := dist(before, after, j.k)
	if d <= j.bound {
		return same, ""
	}
	off := fmt.Sprintf("differs from the original by %g ULP (bound %g)", d, j.bound)
	if j.k != j.elem {
		off = fmt.Sprintf("differs from the original by %g ULP of %s, the narrowest type it is computed in (bound %g)", d, j.k, j.bound)
	}
	if !j.rounding {
		return mismatch, off
	}
	r, ok := ref()
	if !ok {
		return mismatch, off + "; the float64 reference of the original failed"
	}
	if !j.k.IsFloat() {
		errB, errA := math.Abs(before-r), math.Abs(after-r)
		if errA <= j.bound+Slack*errB || errA <= j.bound+Slack*j.spread(r, ev, dist) {
			return viaReference, ""
		}
		if j.unverifiable(ev) {
			return excused, ""
		}
		return mismatch, fmt.Sprintf("%s, and from the float64 reference by %g (the original by %g)", off, errA, errB)
	}
	rk := numeric.RoundTo(r, j.elem)
	switch {
	case finite(before) && finite(rk):
		errB, errA := dist(before, r, j.k), dist(after, r, j.k)
		if errA <= j.bound+Slack*errB || errA <= j.bound+Slack*j.spread(r, ev, dist) {
			return viaReference, ""
		}
		if j.unverifiable(ev) {
			return excused, ""
		}
		return mismatch, fmt.Sprintf("%s, and from the float64 reference by %g ULP (the original by %g ULP)", off, errA, errB)
	case finite(rk):
		// The original overflowed in its own precision; the exact value is
		// representable.
		errA := dist(after, r, j.k)
		if errA <= j.bound+0.5+Slack*j.spread(r, ev, dist) {
			return viaReference, ""
		}
		if j.unverifiable(ev) {
			return excused, ""
		}
		return mismatch, fmt.Sprintf("%s; the original is %g where the exact value is %g, and the transformed one is %g ULP from it",
			off, before, r, errA)
	}
	// The exact value rounds to inf or NaN in k.
	if dist(after, rk, j.k) == 0 {
		return viaReference, ""
	}
	if j.unverifiable(ev) || j.legalized && nanOfItsOwn(before, after, r, ev) {
		return excused, ""
	}
	if j.legalized && math.IsNaN(r) && !math.IsNaN(after) {
		if s, ok := scrubbed(); ok && finite(s) {
			return mismatch, off + "; the original is NaN because an input is NaN, and the transformed program does not propagate it"
		}
	}
	return mismatch, fmt.Sprintf("%s; the exact value is %g (%g in %s)", off, r, rk, j.elem)
}

// mantissaBits orders the float kinds by precision.
var mantissaBits = map[ir.ElemKind]int{
	ir.F64: 52, ir.F32: 23, ir.F16: 10, ir.BF16: 7, ir.F8E4M3FN: 3, ir.F8E5M2: 2,
}

// Precision returns, for each result of f, the kind its error is measured
// in: for a float result, the narrowest float type that an op on the way
// to it rounds to (function arguments and constants are exact and do not
// count). An f64 result cast from an f32 computation is only as accurate
// as f32 (a rewrite that moves the f32 value by one ULP moves the f64
// result by 2^29 of its ULPs), and an f32 result of a bf16 intermediate
// only as accurate as bf16. Integer results keep their own type.
func Precision(f ir.Func) []ir.ElemKind {
	ret := f.Return()
	if ret == nil {
		return nil
	}
	memo := map[*ir.Value]ir.ElemKind{}
	var narrowest func(v *ir.Value) ir.ElemKind // ir.F64 when nothing narrower
	narrowest = func(v *ir.Value) ir.ElemKind {
		if k, ok := memo[v]; ok {
			return k
		}
		memo[v] = ir.F64 // cycles cannot occur in verified IR; stop anyway
		k := ir.F64
		op := v.DefiningOp()
		if op != nil && !op.HasTrait(ir.ConstantLike) {
			if e, ok := ir.ElemOf(v.Type()); ok && e.Kind.IsFloat() {
				k = e.Kind
			}
			for _, o := range op.Operands() {
				if n := narrowest(o); mantissaBits[n] < mantissaBits[k] {
					k = n
				}
			}
		}
		memo[v] = k
		return k
	}
	out := make([]ir.ElemKind, ret.NumOperands())
	for i, v := range ret.Operands() {
		e, _ := ir.ElemOf(v.Type())
		out[i] = e.Kind
		if e.Kind.IsFloat() {
			if n := narrowest(v); mantissaBits[n] < mantissaBits[e.Kind] {
				out[i] = n
			}
		}
	}
	// then the arguments updated in place, in the order evalWithUpdates
	// appends them: each as narrow as the narrowest source written into it
	for i, u := range graph.UpdatedArgs(f) {
		if !u {
			continue
		}
		a := f.Args()[i]
		e, _ := ir.ElemOf(a.Type())
		k := e.Kind
		if k.IsFloat() {
			for _, user := range a.Users() {
				if ic, ok := graph.AsIndexCopy(user); ok && ic.Dst() == a {
					if n := narrowest(ic.Source()); mantissaBits[n] < mantissaBits[k] {
						k = n
					}
				}
			}
		}
		out = append(out, k)
	}
	return out
}

// nanOfItsOwn reports whether the original is NaN from its own
// arithmetic (still NaN with the NaN inputs replaced by 0: inf - inf,
// 0 / 0 after exp underflows) where the transformed program computes a
// number or an infinity.
func nanOfItsOwn(before, after, r float64, ev evidence) bool {
	if math.IsNaN(r) && math.IsNaN(before) && !math.IsNaN(after) {
		s, ok := ev.scrubbed()
		return ok && math.IsNaN(s)
	}
	return false
}
