package passes

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
	"github.com/tensorforge/tensorforge/ir/target"
	"github.com/tensorforge/tensorforge/parser"
)

// Helpers of the decompose, fuse and kernel tests (prefix fz).

// fzParse parses and verifies a module.
func fzParse(t testing.TB, src string) ir.Module {
	t.Helper()
	m, err := parser.Parse("test.tir", src)
	require.NoError(t, err, src)
	require.NoError(t, ir.Verify(m.Operation), src)
	return m
}

// fzCtx is a pass context for target name with the fusion remarks on.
func fzCtx(t testing.TB, targetName string) *ir.PassContext {
	t.Helper()
	tg, err := target.Lookup(targetName)
	require.NoError(t, err)
	return &ir.PassContext{Diags: &ir.Diagnostics{}, Target: tg, Remarks: map[string]bool{"fusion": true}}
}

// fzPipeline runs a pipeline on m, verifying after every pass.
func fzPipeline(t testing.TB, m ir.Module, pipeline string, ctx *ir.PassContext) {
	t.Helper()
	p, err := ir.ParsePipeline(pipeline)
	require.NoError(t, err)
	pm := &ir.PassManager{Pipeline: p, VerifyEach: true}
	err = pm.Run(m, ctx)
	if ie, ok := err.(*ir.InternalError); ok {
		t.Log(ie.Stack)
	}
	require.NoError(t, err, "pipeline %s on\n%s", pipeline, ir.Print(m.Operation, ir.PrintOptions{}))
}

// fzTopOps returns the ops of a function's body without its terminator.
func fzTopOps(f ir.Func) []*ir.Operation {
	var ops []*ir.Operation
	for _, op := range f.Body().Ops() {
		if !op.HasTrait(ir.Terminator) {
			ops = append(ops, op)
		}
	}
	return ops
}

// fzNames returns the names of ops.
func fzNames(ops []*ir.Operation) []string {
	out := make([]string, len(ops))
	for i, op := range ops {
		out[i] = op.Name()
	}
	return out
}

// fzMessages returns the messages of diagnostics.
func fzMessages(ds []*ir.Diagnostic) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Message
	}
	return out
}

// fzSmallShapes makes the examples' shapes small enough to interpret.
var fzSmallShapes = strings.NewReplacer("67108864", "96", "32768", "6", "28672", "48", "16384", "80", "8192", "64", "4096", "8")

// fzReadFile reads a file (relative to this package).
func fzReadFile(t testing.TB, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}

// fzReadExample reads an example program with small shapes.
func fzReadExample(t testing.TB, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "examples", name))
	require.NoError(t, err)
	return fzSmallShapes.Replace(string(data))
}

// fzLitInputs returns the inputs of the lit tests of a folder, split at
// `// -----`, with the file name and part number.
func fzLitInputs(t testing.TB, dir string) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "lit-tests", dir, "*.tir"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	out := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		for i, ch := range parser.SplitInput(string(data)) {
			out[filepath.Base(f)+"#"+strconv.Itoa(i)] = ch.Text
		}
	}
	return out
}

// fzDiffBound is the error bound the differential tests hold decompose and
// fuse to, in ULPs of each result's element type. The expansions compute
// the composites' steps in the same order and precision as the reference
// interpreter, so most results are identical; reduce_mean multiplies by
// 1/C where the interpreter divides by C, and logaddexp rounds its steps
// where the interpreter rounds once, which moves a result by one ULP.
const fzDiffBound = 2

// fzDiff evaluates every function of src before and after pipeline on
// random and extreme inputs and checks that the results agree within
// bound ULPs, NaN for NaN. It returns the largest difference seen.
func fzDiff(t *testing.T, src, pipeline string, bound float64) float64 {
	t.Helper()
	before := fzParse(t, src)
	after := fzParse(t, src)
	fzPipeline(t, after, pipeline, fzCtx(t, "cpu"))
	fb, fa := before.Funcs(), after.Funcs()
	require.Equal(t, len(fb), len(fa))
	worst := 0.0
	for i := range fb {
		worst = math.Max(worst, fzCompare(t, fb[i], fa[i], bound))
	}
	return worst
}

// fzSameResults checks that two functions compute the same within
// fzDiffBound.
func fzSameResults(t *testing.T, before, after ir.Func) {
	t.Helper()
	fzCompare(t, before, after, fzDiffBound)
}

// fzCompare evaluates two functions of the same signature on random and
// extreme inputs and checks that their results agree within bound ULPs.
func fzCompare(t *testing.T, fb, fa ir.Func, bound float64) float64 {
	t.Helper()
	worst := 0.0
	for seed := int64(1); seed <= 3; seed++ {
		inputs := map[string]func(ir.Func) ([]*eval.Tensor, error){
			"random":  func(f ir.Func) ([]*eval.Tensor, error) { return eval.RandomInputs(f, seed, 2, 5) },
			"extreme": func(f ir.Func) ([]*eval.Tensor, error) { return eval.ExtremeInputs(f, seed) },
		}
		for _, kind := range []string{"random", "extreme"} {
			inB, err := inputs[kind](fb)
			require.NoError(t, err)
			inA, err := inputs[kind](fa)
			require.NoError(t, err)
			want, err := eval.Run(fb, inB, eval.Options{ExactRounding: true})
			require.NoError(t, err)
			got, err := eval.Run(fa, inA, eval.Options{ExactRounding: true})
			require.NoError(t, err, ir.Print(fa.Operation, ir.PrintOptions{}))
			require.Equal(t, len(want), len(got))
			for r := range want {
				require.Equal(t, want[r].Shape, got[r].Shape)
				k := want[r].Elem
				for j := range want[r].Data {
					d := numeric.ULPDiff(want[r].Data[j], got[r].Data[j], k)
					if d > bound || math.IsNaN(d) {
						t.Fatalf("@%s result #%d element %d (%s inputs, seed %d): %v before, %v after (%v ULPs of %s)\n%s",
							fb.SymName(), r, j, kind, seed, want[r].Data[j], got[r].Data[j], d, k,
							ir.Print(fa.Operation, ir.PrintOptions{}))
					}
					worst = math.Max(worst, d)
				}
			}
		}
	}
	return worst
}

// fzFuncRE finds the function headers of a module.
var fzFuncRE = regexp.MustCompile(`func\.func @`)

// fzHasFuncs reports whether src defines a function.
func fzHasFuncs(src string) bool { return fzFuncRE.MatchString(src) }
