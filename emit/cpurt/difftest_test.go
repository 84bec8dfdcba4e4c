package cpurt_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	geval "github.com/tensorforge/tensorforge/dialects/graph/eval"
	leval "github.com/tensorforge/tensorforge/dialects/loop/eval"
	"github.com/tensorforge/tensorforge/emit/cpurt"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
	"github.com/tensorforge/tensorforge/ir/target"
	_ "github.com/tensorforge/tensorforge/lowering"
	"github.com/tensorforge/tensorforge/parser"
	_ "github.com/tensorforge/tensorforge/passes"
)

// The differential tests compile graph programs through a pipeline down
// to native code and compare what the program computes with two
// references, on random inputs and on extreme ones (±0, ±inf, NaN,
// ±88.73, ±1e30, subnormals, the range ends):
//
//   - the loop interpreter on the same lowered module: the native code
//     must agree within nativeULPs (it rounds every op the same way; only
//     the C library's functions may differ by one rounding). A module with
//     exp, exp2, sigmoid or silu of f32 values, which run on float lanes
//     within their bounds (up to 4 ULP), gets nativeFnULPs of the result
//     or of the largest result of the tensor for its f32 results: a later
//     add or sub (logaddexp's m + log1p(e)) makes the error absolute;
//   - the graph interpreter on the program after the graph-level passes:
//     within the bound of the lowering (sums over lanes), sumULPs of the
//     result or of the largest result of the tensor (sumULPsF32 for f32). On extreme inputs, where a sum in
//     another order may cancel differently, only the class of each value
//     (NaN, +inf, -inf, finite) is compared, and only where the
//     interpreter gives the same class in float32 and in float64.

const (
	nativeULPs   = 1
	nativeFnULPs = 8
	// sumULPs bounds results of f16, bf16 and f8, sumULPsF32 those of f32
	// and f64, whose sums over long rows round more often in another
	// order (docs/numerics.md: 96 ULP for an f32 softmax)
	sumULPs    = 8
	sumULPsF32 = 128
)

// pipelines are the graph-level parts of -O2 and -O0 (the lowering
// follows).
var pipelines = map[string]string{
	"O2": "canonicalize,cse,legalize-numerics,decompose,fuse,canonicalize,cse,dce",
	"O0": "legalize-numerics,decompose",
}

// lowerTail finishes a pipeline: lower-to-loops, and sram-alloc when it
// is registered.
func lowerTail() string {
	if ir.LookupPass("sram-alloc") != nil {
		return "lower-to-loops,sram-alloc"
	}
	return "lower-to-loops"
}

// compile runs pipeline on src for the cpu target.
func compile(src, pipeline string) (ir.Module, error) {
	m, err := parser.Parse("input.tir", src)
	if err != nil {
		return ir.Module{}, err
	}
	if err := ir.Verify(m.Operation); err != nil {
		return ir.Module{}, err
	}
	tg, _ := target.Lookup("cpu")
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

// shrink makes an example small enough to interpret: the large extents
// of its types become small ones.
func shrink(src string) string {
	sizes := map[string]string{"67108864": "512", "32768": "16", "28672": "96", "8192": "64", "4096": "32", "2048": "48"}
	return regexp.MustCompile(`[0-9]+`).ReplaceAllStringFunc(src, func(s string) string {
		if small, ok := sizes[s]; ok {
			return small
		}
		return s
	})
}

// diffProgram checks every function of src under one pipeline.
func diffProgram(t *testing.T, name, src, level string) {
	t.Helper()
	// the reference is the program after the graph-level passes, which
	// may change its meaning (legalize-numerics fixes overflows)
	orig, err := compile(src, pipelines[level])
	require.NoError(t, err)
	lowered, err := compile(src, pipelines[level]+","+lowerTail())
	if err != nil {
		t.Skipf("%s does not lower under %s: %v", name, level, firstLine(err.Error()))
	}
	fnF32 := hasF32Functions(lowered)
	for _, fn := range orig.Funcs() {
		p, err := cpurt.Compile(lowered, fn.SymName())
		require.NoError(t, err, "%s @%s (%s)", name, fn.SymName(), level)
		t.Cleanup(func() { p.Close() })
		for set := 0; set < 3; set++ {
			var in []*geval.Tensor
			extreme := set == 2
			if extreme {
				in, err = geval.ExtremeInputs(fn, int64(set))
			} else {
				in, err = geval.RandomInputs(fn, int64(set+1), 1, 5)
			}
			require.NoError(t, err)
			what := fmt.Sprintf("%s @%s %s, input set %d", name, fn.SymName(), level, set)
			want, err := geval.Run(fn, clone(in), geval.Options{})
			if err != nil {
				// the program needs related extents (a `?` that must be 1)
				t.Logf("%s: inputs rejected by the interpreter: %v", what, firstLine(err.Error()))
				continue
			}
			got, err := p.Run(clone(in))
			require.NoError(t, err, what)

			loopWant, err := leval.Run(lowered, fn.SymName(), clone(in))
			require.NoError(t, err, what)
			require.Len(t, got, len(loopWant), what)
			for r := range got {
				compareNative(t, fmt.Sprintf("%s, result %d vs the loop interpreter", what, r), loopWant[r], got[r], fnF32)
			}

			want64, err := geval.Run(fn, clone(in), geval.Options{F64: true})
			require.NoError(t, err, what)
			for r := range got {
				compareGraph(t, fmt.Sprintf("%s, result %d vs the graph interpreter", what, r), want[r], want64[r], got[r], extreme)
			}
		}
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func clone(ts []*geval.Tensor) []*geval.Tensor {
	out := make([]*geval.Tensor, len(ts))
	for i, t := range ts {
		out[i] = t.Clone()
	}
	return out
}

// hasF32Functions reports whether m computes exp, exp2, sigmoid or silu
// of f32 values (on float lanes, within their bounds).
func hasF32Functions(m ir.Module) bool {
	found := false
	m.Operation.WalkPost(func(op *ir.Operation) {
		switch op.Name() {
		case "loop.exp", "loop.exp2", "loop.sigmoid", "loop.silu":
			if op.NumResults() == 1 && strings.Contains(op.Result(0).Type().String(), "f32") {
				found = true
			}
		}
	})
	return found
}

// compareNative holds native results to the loop interpreter's; fnF32
// says the module has f32 functions on float lanes (nativeFnULPs).
func compareNative(t *testing.T, what string, want, got *geval.Tensor, fnF32 bool) {
	t.Helper()
	require.Equal(t, want.Shape, got.Shape, what)
	bound, scale := float64(nativeULPs), 0.0
	if fnF32 && want.Elem == ir.F32 {
		bound = nativeFnULPs
		for _, v := range want.Data {
			if class(v) == 3 {
				scale = max(scale, math.Abs(v))
			}
		}
	}
	var bad []string
	for i := range want.Data {
		d := numeric.ULPDiff(want.Data[i], got.Data[i], want.Elem)
		if d <= bound || (scale > 0 && math.Abs(want.Data[i]-got.Data[i]) <= bound*ulpAt(scale, want.Elem)) {
			continue
		}
		if len(bad) < 6 {
			bad = append(bad, fmt.Sprintf("[%d] want %v got %v (%v ULP)", i, want.Data[i], got.Data[i], d))
		}
	}
	require.Empty(t, bad, "%s: %s", what, strings.Join(bad, "; "))
}

// class is NaN, +inf, -inf or finite.
func class(v float64) int {
	switch {
	case math.IsNaN(v):
		return 0
	case math.IsInf(v, 1):
		return 1
	case math.IsInf(v, -1):
		return 2
	}
	return 3
}

// compareGraph holds native results to the graph interpreter's (want in
// float32 steps, want64 in float64).
func compareGraph(t *testing.T, what string, want, want64, got *geval.Tensor, extreme bool) {
	t.Helper()
	require.Equal(t, want.Shape, got.Shape, what)
	scale := 0.0
	for _, v := range want.Data {
		if class(v) == 3 {
			scale = max(scale, math.Abs(v))
		}
	}
	var bad []string
	for i := range want.Data {
		w, g := want.Data[i], got.Data[i]
		if extreme {
			if class(w) == class(want64.Data[i]) && class(g) != class(w) && len(bad) < 6 {
				bad = append(bad, fmt.Sprintf("[%d] want %v got %v", i, w, g))
			}
			continue
		}
		bound := float64(sumULPs)
		if want.Elem == ir.F32 || want.Elem == ir.F64 {
			bound = sumULPsF32
		}
		d := numeric.ULPDiff(w, g, want.Elem)
		if d <= bound || math.Abs(w-g) <= bound*ulpAt(scale, want.Elem) {
			continue
		}
		if len(bad) < 6 {
			bad = append(bad, fmt.Sprintf("[%d] want %v got %v (%v ULP)", i, w, g, d))
		}
	}
	require.Empty(t, bad, "%s: %s", what, strings.Join(bad, "; "))
}

// ulpAt is one ULP of kind k at magnitude x.
func ulpAt(x float64, k ir.ElemKind) float64 {
	if k.IsInt() {
		return 1
	}
	if k == ir.F64 {
		return math.Nextafter(x, math.Inf(1)) - x
	}
	r := numeric.RoundTo(x, k)
	for s := math.Max(r, 1e-45) * 1e-9; s < 1e300; s *= 2 {
		if u := numeric.RoundTo(r+s, k); u != r {
			return u - r
		}
	}
	return math.Inf(1)
}

// TestExamples compiles every example, shrunk, at -O2 and -O0.
func TestExamples(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.tir")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, level := range []string{"O2", "O0"} {
			name := strings.TrimSuffix(filepath.Base(f), ".tir")
			t.Run(name+"/"+level, func(t *testing.T) {
				diffProgram(t, name, shrink(string(data)), level)
			})
		}
	}
}

// TestLitInputs runs the inputs of the lowering and fusion lit tests: every
// `// -----` part that parses and lowers.
//
// It compiles some sixty programs (about a minute and a half on two cores),
// so it runs only with TFC_LONG_TESTS=1.
func TestLitInputs(t *testing.T) {
	if os.Getenv("TFC_LONG_TESTS") != "1" {
		t.Skip("set TFC_LONG_TESTS=1 to run the lit inputs of lowering and fusion natively")
	}
	var files []string
	for _, dir := range []string{"lowering", "fusion"} {
		fs, _ := filepath.Glob(filepath.Join("../../lit-tests", dir, "*.tir"))
		files = append(files, fs...)
	}
	sort.Strings(files)
	if len(files) == 0 {
		t.Skip("no lit inputs yet")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		for i, ch := range parser.SplitInput(string(data)) {
			if strings.Contains(ch.Text, "expected-error") {
				continue
			}
			name := strings.TrimSuffix(filepath.Base(f), ".tir") + "#" + strconv.Itoa(i)
			t.Run(name, func(t *testing.T) { diffProgram(t, name, shrink(ch.Text), "O2") })
		}
	}
}
