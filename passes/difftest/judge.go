package difftest

import (
	"fmt"
	"math"

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
	// excused: the original overflowed even in float64 and the transformed
	// result is plausible (legalized meaning only).
	excused
	mismatch
)

// judge applies the comparison rules of the package documentation to the
// elements of one result.
type judge struct {
	k         ir.ElemKind
	bound     float64
	rounding  bool // the pipeline may change rounding: rules 2 to 4 apply
	legalized bool // the legalized meaning: overflow excuses apply
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
	mantissa := map[ir.ElemKind]int{ir.F32: 23, ir.F16: 10, ir.BF16: 7, ir.F8E4M3FN: 3, ir.F8E5M2: 2}
	if m, ok := mantissa[k]; ok {
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

// element judges one element. ref and scrubbed return the float64
// reference of the original on the same inputs and on the inputs with
// NaN replaced by 0; they are evaluated only when needed, and report
// false when the interpreter failed.
func (j judge) element(before, after float64, ref, scrubbed func() (float64, bool)) (verdict, string) {
	dist := ulpDiff
	if j.rounding {
		dist = Distance
	}
	d := dist(before, after, j.k)
	if d <= j.bound {
		return same, ""
	}
	off := fmt.Sprintf("differs from the original by %g ULP (bound %g)", d, j.bound)
	if !j.rounding {
		return mismatch, off
	}
	r, ok := ref()
	if !ok {
		return mismatch, off + "; the float64 reference of the original failed"
	}
	if !j.k.IsFloat() {
		errB, errA := math.Abs(before-r), math.Abs(after-r)
		if errA <= j.bound+Slack*errB {
			return viaReference, ""
		}
		return mismatch, fmt.Sprintf("%s, and from the float64 reference by %g (the original by %g)", off, errA, errB)
	}
	rk := numeric.RoundTo(r, j.k)
	switch {
	case finite(before) && finite(rk):
		errB, errA := dist(before, r, j.k), dist(after, r, j.k)
		if errA <= j.bound+Slack*errB {
			return viaReference, ""
		}
		return mismatch, fmt.Sprintf("%s, and from the float64 reference by %g ULP (the original by %g ULP)", off, errA, errB)
	case finite(rk):
		// The original overflowed in its own precision; the exact value is
		// representable.
		errA := dist(after, r, j.k)
		if errA <= j.bound+0.5 {
			return viaReference, ""
		}
		return mismatch, fmt.Sprintf("%s; the original is %g where the exact value is %g, and the transformed one is %g ULP from it",
			off, before, r, errA)
	}
	// The exact value rounds to inf or NaN in k.
	if dist(after, rk, j.k) == 0 {
		return viaReference, ""
	}
	if j.legalized && !finite(r) && !finite(before) && !math.IsNaN(after) {
		if math.IsInf(r, 0) && finite(after) && math.Signbit(r) == math.Signbit(after) {
			return excused, ""
		}
		if math.IsNaN(r) {
			s, ok := scrubbed()
			switch {
			case ok && math.IsNaN(s):
				return excused, ""
			case ok && math.IsInf(s, 0) && math.Signbit(s) == math.Signbit(after):
				return excused, ""
			case ok && finite(s):
				return mismatch, off + "; the original is NaN because an input is NaN, and the transformed program does not propagate it"
			}
		}
	}
	return mismatch, fmt.Sprintf("%s; the exact value is %g (%g in %s)", off, r, rk, j.k)
}
