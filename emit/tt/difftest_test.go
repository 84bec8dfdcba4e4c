package tt

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	geval "github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
	"github.com/tensorforge/tensorforge/ir/target"
	_ "github.com/tensorforge/tensorforge/lowering"
	"github.com/tensorforge/tensorforge/parser"
	_ "github.com/tensorforge/tensorforge/passes"
)

// The differential tests compile graph programs for blackhole-p150 and
// wormhole-n300, emit their tt-metal kernels, run them on the emulation
// and compare the results with the graph interpreter on the program after
// the graph-level passes. The bounds: a bf16 or f16 result within
// halfULPs of its type (one rounding more from the TF32 srcB of a
// broadcast multiply, and sums in another order than the interpreter's),
// an f32 result within f32ULPs of itself or of the largest result, an
// integer result (quantisation, saturating casts) exactly.

const (
	halfULPs = 2
	f32ULPs  = 64
)

const graphPipeline = "canonicalize,cse,legalize-numerics,decompose,fuse,canonicalize,cse,dce"

// compileFor runs pipeline on src for target tg.
func compileFor(src, pipeline string, tg *target.Target) (ir.Module, error) {
	m, err := parser.Parse("input.tir", src)
	if err != nil {
		return ir.Module{}, err
	}
	if err := ir.Verify(m.Operation); err != nil {
		return ir.Module{}, err
	}
	p, err := ir.ParsePipeline(pipeline)
	if err != nil {
		return ir.Module{}, err
	}
	pm := &ir.PassManager{Pipeline: p, VerifyEach: true}
	if err := pm.Run(m, &ir.PassContext{Diags: &ir.Diagnostics{}, Target: tg}); err != nil {
		return ir.Module{}, err
	}
	return m, nil
}

// shrinkTT makes an example small, with rows and rows lengths that are
// not multiples of 32 (partial row blocks and masked column tiles).
func shrinkTT(src string) string {
	sizes := map[string]string{"67108864": "1000", "32768": "70", "28672": "100", "8192": "96", "4096": "40"}
	return regexp.MustCompile(`[0-9]+`).ReplaceAllStringFunc(src, func(s string) string {
		if small, ok := sizes[s]; ok {
			return small
		}
		return s
	})
}

// ttCase builds the emulation case of one function of src, or returns the
// emitter's error.
type builtCase struct {
	c    *emuCase
	want []*geval.Tensor
}

func buildCases(t *testing.T, name, src, pipeline, targetName string, seed int64, dyn int64) ([]builtCase, error) {
	return buildCasesWith(t, name, src, pipeline, targetName, func(fn ir.Func) ([]*geval.Tensor, error) {
		return geval.RandomInputs(fn, seed, 1, dyn)
	})
}

// buildCasesWith is buildCases with the inputs of each function given by
// inputs.
func buildCasesWith(t *testing.T, name, src, pipeline, targetName string, inputs func(ir.Func) ([]*geval.Tensor, error)) ([]builtCase, error) {
	tg, err := target.Lookup(targetName)
	require.NoError(t, err)
	orig, err := compileFor(src, pipeline, tg)
	require.NoError(t, err, name)
	lowered, err := compileFor(src, pipeline+",lower-to-loops,sram-alloc", tg)
	require.NoError(t, err, name)
	out, err := Emit(lowered, Options{Target: tg})
	if err != nil {
		return nil, err
	}
	var cases []builtCase
	for _, fn := range orig.Funcs() {
		in, err := inputs(fn)
		require.NoError(t, err)
		want, err := geval.Run(fn, cloneAll(in), geval.Options{})
		require.NoError(t, err)
		cases = append(cases, newBuiltCase(fmt.Sprintf("%s @%s on %s", name, fn.SymName(), targetName), out, fn.SymName(), in, want))
	}
	return cases, nil
}

func cloneAll(ts []*geval.Tensor) []*geval.Tensor {
	out := make([]*geval.Tensor, len(ts))
	for i, t := range ts {
		out[i] = t.Clone()
	}
	return out
}

// compareTT holds the emulation's result to the interpreter's.
func compareTT(t *testing.T, what string, want, got *geval.Tensor) {
	t.Helper()
	require.Equal(t, want.Shape, got.Shape, what)
	if want.Elem.IsInt() {
		var bad []string
		for i := range want.Data {
			if want.Data[i] != got.Data[i] && len(bad) < 6 {
				bad = append(bad, fmt.Sprintf("[%d] want %v got %v", i, want.Data[i], got.Data[i]))
			}
		}
		require.Empty(t, bad, "%s: %s", what, strings.Join(bad, "; "))
		return
	}
	ulps := float64(halfULPs)
	if want.Elem == ir.F32 {
		ulps = f32ULPs
	}
	scale := 0.0
	for _, v := range want.Data {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			scale = max(scale, math.Abs(v))
		}
	}
	var bad []string
	for i := range want.Data {
		w, g := want.Data[i], got.Data[i]
		if math.IsNaN(w) && math.IsNaN(g) || w == g {
			continue
		}
		d := numeric.ULPDiff(w, g, want.Elem)
		if d <= ulps || math.Abs(w-g) <= ulps*ulpOf(scale, want.Elem) {
			continue
		}
		if len(bad) < 6 {
			bad = append(bad, fmt.Sprintf("[%d] want %v got %v (%v ULP)", i, w, g, d))
		}
	}
	require.Empty(t, bad, "%s: %s", what, strings.Join(bad, "; "))
}

// ulpOf is one ULP of kind k at magnitude x.
func ulpOf(x float64, k ir.ElemKind) float64 {
	r := numeric.RoundTo(x, k)
	for s := math.Max(r, 1e-30) * 1e-9; s < 1e300; s *= 2 {
		if u := numeric.RoundTo(r+s, k); u != r {
			return u - r
		}
	}
	return math.Inf(1)
}

// workloads are the programs run on both targets: the examples, shrunk,
// and the programs of testdata/.
func workloads(t *testing.T) map[string]string {
	out := map[string]string{}
	files, err := filepath.Glob("../../examples/*.tir")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		out["examples/"+strings.TrimSuffix(filepath.Base(f), ".tir")] = shrinkTT(string(data))
	}
	more, err := filepath.Glob("testdata/*.tir")
	require.NoError(t, err)
	for _, f := range more {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		out["testdata/"+strings.TrimSuffix(filepath.Base(f), ".tir")] = string(data)
	}
	return out
}

// unsupported are the workloads the backend reports instead of emitting,
// with what the report says.
var unsupported = map[string]string{
	// a column read from memory is not a tile read either
	"examples/cross_entropy": "reads or writes a buffer at an index loaded from memory (a graph.gather or graph.index_copy)",
	// one query row per head: M = 1 is not a whole tile for matmul_tiles
	"examples/gqa_scores": "multiplies 1x128 by 128x2048 matrices; matmul_tiles takes whole 32x32 tiles",
}

// TestDifferential runs every workload on both targets.
func TestDifferential(t *testing.T) {
	t.Parallel()
	progs := workloads(t)
	var names []string
	for n := range progs {
		names = append(names, n)
	}
	sort.Strings(names)
	var cases []builtCase
	for _, name := range names {
		for i, tg := range []string{"blackhole-p150", "wormhole-n300"} {
			built, err := buildCases(t, name, progs[name], graphPipeline, tg, int64(7+i), 37)
			if want, ok := unsupported[name]; ok {
				require.Error(t, err, name)
				require.Contains(t, err.Error(), want, name)
				require.Contains(t, err.Error(), "'tt' backend", name)
				continue
			}
			require.NoError(t, err, "%s on %s", name, tg)
			cases = append(cases, built...)
		}
	}
	// unfused (-O0): a kernel per op, intermediates in DRAM between them
	for _, name := range []string{"examples/rms_silu_mul", "testdata/softmax_f32"} {
		built, err := buildCases(t, "O0 "+name, progs[name], "legalize-numerics,decompose", "wormhole-n300", 3, 33)
		require.NoError(t, err, name)
		cases = append(cases, built...)
	}
	// rows a multiple of 32: whole row blocks only
	for _, name := range []string{"examples/attention_softmax", "testdata/softmax_f32", "testdata/unary_zoo"} {
		built, err := buildCases(t, "64 rows "+name, progs[name], graphPipeline, "blackhole-p150", 5, 64)
		require.NoError(t, err, name)
		cases = append(cases, built...)
	}
	runAndCompare(t, cases)
}

// newBuiltCase is the case running fn of the program in out on in, whose
// results the interpreter gave as want.
func newBuiltCase(name string, out *Output, fn string, in, want []*geval.Tensor) builtCase {
	c := &emuCase{name: name, out: out, fn: fn, in: in}
	for _, w := range want {
		c.outShapes = append(c.outShapes, w.Shape)
		c.outElems = append(c.outElems, w.Elem)
	}
	return builtCase{c: c, want: want}
}

// runAndCompare runs every case in the emulation (one harness) and holds
// its results to the interpreter's.
func runAndCompare(t *testing.T, cases []builtCase) {
	t.Helper()
	emuCases := make([]*emuCase, len(cases))
	for i, c := range cases {
		emuCases[i] = c.c
	}
	results := runEmu(t, emuCases)
	for i, c := range cases {
		r := results[i]
		require.Zero(t, r.code, "%s: the emulation failed:\n%s", c.c.name, r.stderr)
		require.Len(t, r.outs, len(c.want), c.c.name)
		for j := range c.want {
			compareTT(t, fmt.Sprintf("%s, result %d", c.c.name, j), c.want[j], r.outs[j])
		}
	}
}
