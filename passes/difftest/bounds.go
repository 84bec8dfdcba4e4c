package difftest

import (
	"strings"

	"github.com/tensorforge/tensorforge/ir"
)

// Names of the graph-level passes: their output is still graph dialect,
// which the reference interpreter runs.
const (
	Canonicalize     = "canonicalize"
	CSE              = "cse"
	DCE              = "dce"
	LegalizeNumerics = "legalize-numerics"
	Decompose        = "decompose"
	Fuse             = "fuse"
)

// GraphPasses lists the graph-level passes, registered or not.
var GraphPasses = []string{Canonicalize, CSE, DCE, LegalizeNumerics, Decompose, Fuse}

// O2GraphPipeline is the graph-level part of `tfc -O2`: everything before
// lowering to loops.
const O2GraphPipeline = "canonicalize,cse,legalize-numerics,decompose,fuse,canonicalize,cse,dce"

// exactPasses keep every result bit for bit: they only remove, merge or
// fold ops, and constant folding uses the interpreter itself.
var exactPasses = map[string]bool{Canonicalize: true, CSE: true, DCE: true}

// ChangesRounding reports whether a pass may change how results round:
// it rewrites ops into others (legalize-numerics, decompose) or regroups
// them (fuse). Unknown passes are assumed to.
func ChangesRounding(pass string) bool { return !exactPasses[pass] }

// DefaultULP is the bound, in ULPs of the result element type k, that a
// pass is held to: 0 for the exact passes; for the others 8 in f64, 4 in
// f32, 2 in f16 and bf16, 1 in the 8-bit floats and 1 for integers (a
// rounding tie decided the other way before quantising), 0 for i1. A
// pipeline is held to the largest bound of its passes.
//
// The f32 bound is that of a few f32 steps replacing one correctly
// rounded op (logaddexp as max + log1p(exp(-|a - b|)), 1/C * sum for a
// mean, rsqrt(mean + eps) * x * w); narrower types round the f32 result
// once more, which absorbs most of it.
func DefaultULP(pass string, k ir.ElemKind) float64 {
	if exactPasses[pass] {
		return 0
	}
	switch k {
	case ir.F64:
		return 8
	case ir.F32:
		return 4
	case ir.F16, ir.BF16:
		return 2
	case ir.F8E4M3FN, ir.F8E5M2:
		return 1
	case ir.I1:
		return 0
	}
	return 1
}

// RegisteredGraphPasses returns the graph-level passes that are
// registered, in GraphPasses order.
func RegisteredGraphPasses() []string {
	var out []string
	for _, p := range GraphPasses {
		if ir.LookupPass(p) != nil {
			out = append(out, p)
		}
	}
	return out
}

// Registered keeps the passes of a comma-separated pipeline of pass names
// that are registered, and reports which were left out.
func Registered(pipeline string) (kept string, missing []string) {
	var parts []string
	for _, p := range strings.Split(pipeline, ",") {
		p = strings.TrimSpace(p)
		name := p
		if i := strings.IndexByte(p, '{'); i >= 0 {
			name = p[:i]
		}
		if ir.LookupPass(name) == nil {
			missing = append(missing, name)
			continue
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ","), missing
}

// Pipelines returns the pipelines the differential tests run: every
// registered graph-level pass alone, then O2GraphPipeline with its
// registered passes.
func Pipelines() []string {
	out := RegisteredGraphPasses()
	if o2, _ := Registered(O2GraphPipeline); o2 != "" {
		out = append(out, o2)
	}
	return out
}
