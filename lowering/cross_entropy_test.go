package lowering

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	geval "github.com/tensorforge/tensorforge/dialects/graph/eval"
	leval "github.com/tensorforge/tensorforge/dialects/loop/eval"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
	"github.com/tensorforge/tensorforge/parser"
)

// Cross-entropy, `logsumexp(x) - x[row, target[row]]` and its mean over the
// rows, lowered fused (one row kernel) and unfused (a kernel per op), held
// to a float64 evaluation of the same formula:
//
//	|got - want| <= crossEntropyULPs ULPs of f32 at max(|logsumexp|, |x[t]|, 1)
//
// per 1024 elements of the row. The loss is a difference of two values of
// the size of the logits, so its error is measured in their ULPs, not in
// the loss's own (a loss of 0.5 from logits near 1e4 has no more than a
// few bits right in any f32 evaluation). The f32 kernels round the row
// maximum's subtraction, each exp, the sum (in W lanes, then across them)
// and the log: 1.3 ULPs at most on these inputs, held to 4 per 1024. Special values follow
// float64: a NaN in the row gives NaN, +inf gives +inf (NaN when the
// target is that +inf), a row of -inf gives NaN (-inf - -inf). The mean
// is held to the float64 mean of the float64 losses within the bound plus
// one ULP per row at the largest of them; reduce_mean sums before it
// scales, so a sum past the f32 range (losses of huge logits) is inf in
// both.

const crossEntropyULPs = 4

// crossEntropySrc is the per-row loss over rows of c logits of type elem,
// and the mean over 6 rows.
func crossEntropySrc(c int, elem string) string {
	return fmt.Sprintf(`
func.func @rows(%%logits: tensor<?x%[1]dx%[2]s>, %%target: tensor<?x1xi64>) -> tensor<?x1xf32> {
  %%x = graph.cast %%logits : (tensor<?x%[1]dx%[2]s>) -> tensor<?x%[1]dxf32>
  %%lse = graph.logsumexp %%x {axis = -1, keepdim = true} : (tensor<?x%[1]dxf32>) -> tensor<?x1xf32>
  %%picked = graph.gather %%x, %%target {axis = -1} : (tensor<?x%[1]dxf32>, tensor<?x1xi64>) -> tensor<?x1xf32>
  %%loss = graph.sub %%lse, %%picked : tensor<?x1xf32>
  return %%loss : tensor<?x1xf32>
}

func.func @mean(%%logits: tensor<6x%[1]dx%[2]s>, %%target: tensor<6x1xi32>) -> tensor<f32> {
  %%x = graph.cast %%logits : (tensor<6x%[1]dx%[2]s>) -> tensor<6x%[1]dxf32>
  %%lse = graph.logsumexp %%x {axis = -1} : (tensor<6x%[1]dxf32>) -> tensor<6xf32>
  %%picked = graph.gather %%x, %%target {axis = -1} : (tensor<6x%[1]dxf32>, tensor<6x1xi32>) -> tensor<6x1xf32>
  %%p = graph.reshape %%picked : (tensor<6x1xf32>) -> tensor<6xf32>
  %%loss = graph.sub %%lse, %%p : tensor<6xf32>
  %%mean = graph.reduce_mean %%loss {axes = [0]} : (tensor<6xf32>) -> tensor<f32>
  return %%mean : tensor<f32>
}
`, c, elem)
}

// crossEntropyRef is the float64 loss of each row of x (rows of c) at
// targets t, clamped as compiled kernels clamp them.
func crossEntropyRef(x []float64, t []float64, c int) []float64 {
	out := make([]float64, len(t))
	for r := range t {
		row := x[r*c : (r+1)*c]
		m := math.Inf(-1)
		nan := false
		for _, v := range row {
			nan = nan || math.IsNaN(v)
			m = math.Max(m, v)
		}
		lse := m
		switch {
		case nan:
			lse = math.NaN()
		case !math.IsInf(m, 0):
			s := 0.0
			for _, v := range row {
				s += math.Exp(v - m)
			}
			lse = m + math.Log(s)
		}
		j := int(math.Max(0, math.Min(t[r], float64(c-1))))
		out[r] = lse - row[j]
	}
	return out
}

// crossEntropyInputs are the logits of each input set: random, large
// (|x| up to 1e4, past exp's f32 range), huge (near the f32 maximum, where
// x - max must not overflow), and rows holding +inf, -inf and NaN.
func crossEntropyInputs(rows, c int, elem ir.ElemKind) map[string][]float64 {
	rng := uint64(7)
	next := func() float64 { // uniform in [0, 1)
		rng = rng*6364136223846793005 + 1442695040888963407
		return float64(rng>>11) / (1 << 53)
	}
	fill := func(f func(r, j int) float64) []float64 {
		out := make([]float64, rows*c)
		for r := 0; r < rows; r++ {
			for j := 0; j < c; j++ {
				out[r*c+j] = numeric.RoundTo(f(r, j), elem)
			}
		}
		return out
	}
	big := 3e38
	if elem == ir.F16 {
		big = 6e4
	}
	return map[string][]float64{
		"random": fill(func(_, _ int) float64 { return 4*next() - 2 }),
		"large":  fill(func(r, _ int) float64 { return float64(r%2*2-1)*1e4 + 40*next() }),
		"huge":   fill(func(r, _ int) float64 { return float64(r%2*2-1) * big * (0.5 + next()/2) }),
		"special": fill(func(r, j int) float64 {
			switch {
			case r == 0 && j == 3:
				return math.Inf(1)
			case r == 1:
				return math.Inf(-1)
			case r == 2 && j == 5:
				return math.NaN()
			case r == 3 && j%2 == 0:
				return math.Inf(-1)
			}
			return 3 * next()
		}),
	}
}

func TestCrossEntropyAgainstFloat64(t *testing.T) {
	const rows = 6
	for _, c := range []int{1000, 4096} {
		for _, elem := range []ir.ElemKind{ir.BF16, ir.F32} {
			src := crossEntropySrc(c, elem.String())
			for _, pipeline := range []string{"decompose,fuse,lower-to-loops,sram-alloc", "lower-to-loops,sram-alloc"} {
				m, err := parser.Parse("ce.tir", src)
				require.NoError(t, err)
				runPipeline(t, m, pipeline, "h200")
				if pipeline[0] == 'd' {
					assert.Equal(t, 1, countKernels(m, "rows"), "the fused per-row loss is one kernel")
				}
				bound := float64(crossEntropyULPs * max(1, c/1024))
				for name, x := range crossEntropyInputs(rows, c, elem) {
					// targets: both ends, out of range on both sides (clamped), and inside
					targets := []float64{0, float64(c - 1), 3, 5, float64(c + 7), -2}
					what := fmt.Sprintf("c=%d %s %s, %s logits", c, elem, pipeline, name)
					xs, err := geval.TensorOf(elem, []int64{rows, int64(c)}, x)
					require.NoError(t, err)
					ts, err := geval.TensorOf(ir.I64, []int64{rows, 1}, targets)
					require.NoError(t, err)
					got, err := leval.Run(m, "rows", []*geval.Tensor{xs, ts})
					require.NoError(t, err, what)
					want := crossEntropyRef(x, targets, c)
					checkCrossEntropy(t, what, x, targets, c, want, got[0].Data, bound)

					ts32, err := geval.TensorOf(ir.I32, []int64{rows, 1}, targets)
					require.NoError(t, err)
					mean, err := leval.Run(m, "mean", []*geval.Tensor{xs.Clone(), ts32})
					require.NoError(t, err, what)
					// reduce_mean sums, then scales: a sum past the f32 range is inf
					sum := 0.0
					for _, v := range want {
						sum += v
					}
					wantMean := numeric.RoundTo(sum, ir.F32) / rows
					gotMean := mean[0].Data[0]
					switch {
					case math.IsNaN(wantMean) || math.IsInf(wantMean, 0):
						assert.Equal(t, fmt.Sprint(wantMean), fmt.Sprint(gotMean), "%s: mean", what)
					default:
						scale := 1.0
						for r := range want {
							scale = max(scale, math.Abs(want[r]), math.Abs(x[r*c+clampTarget(targets[r], c)]))
						}
						assert.LessOrEqual(t, math.Abs(gotMean-wantMean), (bound+rows)*ulpAt(scale, ir.F32),
							"%s: mean %v, float64 %v", what, gotMean, wantMean)
					}
				}
			}
		}
	}
}

func clampTarget(t float64, c int) int { return int(math.Max(0, math.Min(t, float64(c-1)))) }

// checkCrossEntropy holds the per-row losses got to the bound of the file
// comment against the float64 losses want.
func checkCrossEntropy(t *testing.T, what string, x, targets []float64, c int, want, got []float64, bound float64) {
	t.Helper()
	for r := range want {
		w, g := want[r], got[r]
		if math.IsNaN(w) || math.IsInf(w, 0) {
			assert.Equal(t, fmt.Sprint(w), fmt.Sprint(g), "%s: row %d", what, r)
			continue
		}
		lse := w + x[r*c+clampTarget(targets[r], c)]
		scale := max(math.Abs(lse), math.Abs(x[r*c+clampTarget(targets[r], c)]), 1)
		assert.LessOrEqual(t, math.Abs(g-w), bound*ulpAt(scale, ir.F32),
			"%s: row %d loss %v, float64 %v (%.1f ULPs of f32 at %g)", what, r, g, w, math.Abs(g-w)/ulpAt(scale, ir.F32), scale)
	}
}

// countKernels counts the launches of function name.
func countKernels(m ir.Module, name string) int {
	n := 0
	for _, f := range m.Funcs() {
		if f.SymName() != name {
			continue
		}
		f.Walk(func(op *ir.Operation) bool {
			if op.Name() == "loop.launch" {
				n++
			}
			return true
		})
	}
	return n
}
