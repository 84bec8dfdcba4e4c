package difftest

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/ir/numeric"
	"github.com/tensorforge/tensorforge/parser"
)

// RoundingError measures a backend's result got against ref, the float64
// evaluation of the program in which only inputs, outputs and explicit
// casts are rounded (eval.Options{F64: true, RoundCasts: true}): the
// measure the rounding modes are held to (docs/numerics.md).
//
// The error of an element is |got - ref| in ULPs of the result type at
// max(|ref|, scale/256), scale being the largest finite |ref| of the
// result: an element that cancels to far below the magnitude of its
// tensor is only known to the absolute error of the terms it is the
// difference of. A NaN reference must be matched by a NaN and an infinite
// one by the same infinity, or by NaN where a factor of it underflows in
// f32 though not in float64 (silu(-88.7) * inf); a mismatch is listed in
// bad. A finite reference whose result is infinite or NaN overflowed in f32
// on the way (1e30 * 1e30 - 1e30 * 1e30 is finite only in float64): such
// elements are counted in overflows, not measured.
func RoundingError(ref, got *eval.Tensor) (worst float64, overflows int, bad []string) {
	k := got.Elem
	scale := 0.0
	for _, v := range ref.Data {
		if !math.IsInf(v, 0) && !math.IsNaN(v) {
			scale = math.Max(scale, math.Abs(v))
		}
	}
	for i, r := range ref.Data {
		g, rk := got.Data[i], numeric.RoundTo(r, k)
		finite := !math.IsInf(g, 0) && !math.IsNaN(g)
		if !finite && !math.IsInf(rk, 0) && !math.IsNaN(rk) {
			overflows++
			continue
		}
		if math.IsInf(rk, 0) || math.IsNaN(rk) || !finite {
			if !(g == rk || math.IsNaN(g) && (math.IsNaN(rk) || math.IsInf(rk, 0))) && len(bad) < 8 {
				bad = append(bad, fmt.Sprintf("[%d] %v where the reference is %v", i, g, r))
			}
			continue
		}
		at := math.Max(math.Abs(r), scale/256)
		worst = math.Max(worst, math.Abs(g-r)/numeric.ULP(at, k))
	}
	return worst, overflows, bad
}

// RoundingChain is one example chain in one element type, at extents small
// enough to interpret and simulate.
type RoundingChain struct {
	Name, Dtype, Src string
	// ExactBound bounds the exact-rounding mode's RoundingError: 4 ULPs,
	// 64 where rounded terms cancel (RoPE rounds both products before
	// their difference is taken).
	ExactBound float64
}

// DefaultRoundingBound bounds the default mode's RoundingError on every
// chain: the final rounding (0.5 ULP) and what f32 arithmetic and row
// sums add to it.
const DefaultRoundingBound = 1.0

// RoundingChains reads the examples the rounding modes are measured on
// from dir (the repository's examples/) in bf16 and f16, their large
// extents made small.
func RoundingChains(dir string) ([]RoundingChain, error) {
	// SwiGLU's 4096x28672 is listed whole: the replacer takes the first
	// pattern matching at a position, and 4096x would leave rows of 28672
	// (688128 elements, a hundred times the other chains); at 24x1024
	// every backend measures the same worst errors as at 24x28672.
	shrink := strings.NewReplacer("4096x28672", "24x1024", "32768x", "24x", "4096x", "24x", "x4096x", "x24x", "x8192x", "x256x",
		"x8192", "x256", "8192x", "256x", "<8192", "<256", "x32x", "x4x", "x8x", "x2x", "4096", "256")
	var out []RoundingChain
	for _, name := range []string{"add_rmsnorm", "rms_silu_mul", "swiglu", "attention_softmax", "rope"} {
		src, err := os.ReadFile(filepath.Join(dir, name+".tir"))
		if err != nil {
			return nil, err
		}
		for _, dtype := range []string{"bf16", "f16"} {
			text := strings.ReplaceAll(shrink.Replace(string(src)), "xbf16>", "x"+dtype+">")
			bound := 4.0
			if name == "rope" {
				bound = 64
			}
			out = append(out, RoundingChain{Name: name, Dtype: dtype, Src: text, ExactBound: bound})
		}
	}
	return out, nil
}

// RoundingCase is one function of a chain on one input set, with its
// float64 reference (inputs, outputs and explicit casts rounded).
type RoundingCase struct {
	Func   string
	Set    int
	Inputs []*eval.Tensor
	Ref    []*eval.Tensor
}

// Cases parses the chain, decomposes it (composite ops round what they
// return, as graph.casts) and evaluates the reference of every function
// on three random input sets and an extreme one. A backend runs each
// case's inputs (cloned) and measures its results with RoundingError.
func (c RoundingChain) Cases() ([]RoundingCase, error) {
	m, err := parser.Parse(c.Name+".tir", c.Src)
	if err != nil {
		return nil, err
	}
	if err := RunPipeline(m, "decompose", "h200"); err != nil {
		return nil, err
	}
	var out []RoundingCase
	for _, fn := range m.Funcs() {
		for set := 0; set < 4; set++ {
			var in []*eval.Tensor
			if set == 3 {
				in, err = eval.ExtremeInputs(fn, 1)
			} else {
				in, err = eval.RandomInputs(fn, int64(set+1), 1, 5)
			}
			if err != nil {
				return nil, err
			}
			ref, err := evalWithUpdates(fn, in, eval.Options{F64: true, RoundCasts: true})
			if err != nil {
				return nil, err
			}
			out = append(out, RoundingCase{Func: fn.SymName(), Set: set, Inputs: in, Ref: ref})
		}
	}
	return out, nil
}
