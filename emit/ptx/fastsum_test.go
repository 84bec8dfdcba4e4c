package ptx

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	geval "github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

// fastSumSrc: softmax rows whose results are rounded to bf16 or f16 (the
// sum of e^(x - max) keeps 7 or 10 bits of its terms: each term, the sum,
// its reciprocal and the product only scale relative errors), and the
// rows whose results keep f32's precision (softmax in f32, logsumexp,
// whose log turns the sum's relative error into an absolute one).
const fastSumSrc = `
func.func @sm_bf16(%s: tensor<?x4096xbf16>) -> tensor<?x4096xbf16> {
  %x = graph.cast %s : (tensor<?x4096xbf16>) -> tensor<?x4096xf32>
  %p = graph.softmax %x {axis = -1} : tensor<?x4096xf32>
  %y = graph.cast %p : (tensor<?x4096xf32>) -> tensor<?x4096xbf16>
  return %y : tensor<?x4096xbf16>
}
func.func @sm_f16(%x: tensor<?x4096xf16>) -> tensor<?x4096xf16> {
  %y = graph.softmax %x {axis = -1} : tensor<?x4096xf16>
  return %y : tensor<?x4096xf16>
}
func.func @sm_f32(%x: tensor<?x4096xf32>) -> tensor<?x4096xf32> {
  %y = graph.softmax %x {axis = -1} : tensor<?x4096xf32>
  return %y : tensor<?x4096xf32>
}
func.func @lse_bf16(%x: tensor<?x4096xbf16>) -> tensor<?xbf16> {
  %y = graph.logsumexp %x {axis = -1} : (tensor<?x4096xbf16>) -> tensor<?xbf16>
  return %y : tensor<?xbf16>
}
`

// log2eLoImm is the immediate of the accurate exp's correction (the rest
// of log2(e) beyond f32), present only where that sequence is.
var log2eLoImm = fb(log2eLo).s

// halfLog2eImm is log2(e)/2, the constant of the fast exp's half power.
var halfLog2eImm = fb(log2e - 1<<23).s

// TestFastSumsChosen: the sums of softmax rows rounded to bf16 or f16 take
// the fast exp: ex2.approx of the product, without ftz where the terms
// are kept for the results too (one-pass rows), the bare ex2.approx.ftz
// where they are only summed (the largest term is 1: the resident
// splits, which compute e^(x - max) again for the results); f32 softmax
// and logsumexp keep the accurate exp.
func TestFastSumsChosen(t *testing.T) {
	files := emitFiles(t, fastSumSrc)
	for _, fn := range []string{"sm_bf16", "sm_f16"} {
		text := files[fn+".ptx"]
		require.False(t, strings.Contains(text, log2eLoImm), "%s has the accurate exp", fn)
		// the fast exp of a kept term: the square of the half power
		require.True(t, strings.Contains(text, halfLog2eImm), "%s does not halve the power", fn)
		require.False(t, strings.Contains(text, "ex2.approx.f32"), "%s has ptxas's conditional halving", fn)
	}
	for _, fn := range []string{"sm_f32", "lse_bf16"} {
		require.True(t, strings.Contains(files[fn+".ptx"], log2eLoImm), "%s has no accurate exp", fn)
	}
	// the resident split of a vocabulary (clusters exchanging the partial
	// sums in shared memory): its sums go through the exchange
	m := lower(t, residentSrc, residentPipeline, "h200")
	fs, err := emitted(m)
	require.NoError(t, err)
	for _, f := range fs {
		switch f.Name {
		case "softmax.ptx", "softmax_vocab.ptx":
			require.False(t, strings.Contains(f.Text, log2eLoImm), "%s has the accurate exp", f.Name)
			// the sum's terms: the bare ex2.approx.ftz of x log2(e)
			require.True(t, strings.Contains(f.Text, "0f3FB8AA3B;\n\tex2.approx.ftz.f32"), "%s has no bare exp in its sum", f.Name)
			// the results': the square of the half power
			require.True(t, strings.Contains(f.Text, halfLog2eImm), "%s does not halve the power", f.Name)
		case "log_softmax.ptx":
			require.True(t, strings.Contains(f.Text, log2eLoImm), "%s has no accurate exp", f.Name)
		}
	}
}

// fastSumRows fills rows of cols: normal values of scale 3 with -inf
// sprinkled in; one large value among values 60 below (terms of e^-60);
// a ramp over [-50, 50]; values 85 to 95 below the maximum, whose terms
// are below 2^-126 (flushed in the sum) and whose results are subnormal in
// bf16 (not flushed); and two equal maxima.
func fastSumRows(x *geval.Tensor) {
	cols := int(x.Shape[1])
	rng := rand.New(rand.NewSource(11))
	for r := 0; r < int(x.Shape[0]); r++ {
		row := x.Data[r*cols : (r+1)*cols]
		for j := range row {
			switch r % 5 {
			case 0:
				row[j] = rng.NormFloat64() * 3
				if rng.Intn(50) == 0 {
					row[j] = math.Inf(-1)
				}
			case 1:
				row[j] = -60
			case 2:
				row[j] = float64(j)/float64(cols)*100 - 50
			case 3:
				row[j] = -85 - 10*rng.Float64()
			case 4:
				row[j] = rng.Float64()
			}
		}
		switch r % 5 {
		case 1:
			row[cols/3] = 0
		case 3:
			row[7] = 0
		case 4:
			row[1], row[cols-2] = 2, 2
		}
		for j := range row {
			row[j] = numeric.RoundTo(row[j], x.Elem)
		}
	}
}

// softmax64 is softmax of the rows of x in float64.
func softmax64(x *geval.Tensor) []float64 {
	cols := int(x.Shape[1])
	out := make([]float64, len(x.Data))
	for r := 0; r < int(x.Shape[0]); r++ {
		row := x.Data[r*cols : (r+1)*cols]
		m := math.Inf(-1)
		for _, v := range row {
			m = max(m, v)
		}
		s := 0.0
		for _, v := range row {
			s += math.Exp(v - m)
		}
		for j, v := range row {
			out[r*cols+j] = math.Exp(v-m) / s
		}
	}
	return out
}

// TestFastSumsAccuracy: softmax rows with the fast sums, every approximate
// instruction of the simulator moved 2 ULP either way, within 1 ULP of
// bf16 or f16 of float64 (docs/ptx.md, "Fast forms"): one-pass rows and
// the resident splits of 61440 (S = 4, the clusters' exchange).
func TestFastSumsAccuracy(t *testing.T) {
	defer func() { simNudge = 0 }()
	one := lower(t, fastSumSrc, fullPipeline, "h200")
	res := lower(t, residentSrc, residentPipeline, "h200")
	for _, c := range []struct {
		m    ir.Module
		fn   string
		k    ir.ElemKind
		rows int64
		cols int64
	}{
		{one, "sm_bf16", ir.BF16, 5, 4096},
		{one, "sm_f16", ir.F16, 5, 4096},
		{res, "softmax", ir.BF16, 5, 61440},
	} {
		for _, nudge := range []int{-2, 0, 2} {
			if testing.Short() && c.cols > 4096 && nudge != -2 {
				continue
			}
			t.Run(fmt.Sprintf("%s/nudge=%d", c.fn, nudge), func(t *testing.T) {
				simNudge = nudge
				x := &geval.Tensor{Shape: []int64{c.rows, c.cols}, Elem: c.k, Data: make([]float64, c.rows*c.cols)}
				fastSumRows(x)
				got, err := simRunFunc(c.m, c.fn, []*geval.Tensor{x})
				require.NoError(t, err)
				want := softmax64(x)
				worst := 0.0
				for i, w := range want {
					d := numeric.ULPDiff(w, got[0].Data[i], c.k)
					worst = max(worst, d)
					require.LessOrEqual(t, d, 1.0, "%s[%d, %d] = %v, want %v", c.fn, i/int(c.cols), i%int(c.cols), got[0].Data[i], w)
				}
				t.Logf("max %.3f ULP of %s", worst, c.k)
			})
		}
	}
}

// TestFastExpSubnormals: the fast exp (the square of the half power) of
// arguments whose results are bf16 subnormals or underflow, and near
// overflow, every approximate instruction moved 2 ULP either way: within
// 1 ULP of bf16 and f16 of float64.
func TestFastExpSubnormals(t *testing.T) {
	defer func() { simNudge = 0 }()
	m := lowerFile(t, "testdata/ops.tir")
	var xs []float64
	for i := 0; i <= 2000; i++ {
		xs = append(xs, float64(float32(-110+25*float64(i)/2000)))
		xs = append(xs, float64(float32(85+5*float64(i)/2000)))
	}
	in := &geval.Tensor{Shape: []int64{int64(len(xs))}, Elem: ir.F32, Data: xs}
	for _, c := range []struct {
		fn string
		k  ir.ElemKind
	}{{"exp_bf16", ir.BF16}, {"exp_f16", ir.F16}} {
		for _, nudge := range []int{-2, 0, 2} {
			simNudge = nudge
			got, err := simRunFunc(m, c.fn, []*geval.Tensor{in})
			require.NoError(t, err)
			for i, x := range xs {
				want, g := math.Exp(x), got[0].Data[i]
				if r := numeric.RoundTo(want, c.k); math.IsInf(r, 0) {
					require.Equal(t, r, g, "%s(%v) (nudge %d)", c.fn, x, nudge)
					continue
				}
				d := numeric.ULPDiff(want, g, c.k)
				require.LessOrEqual(t, d, 1.0, "%s(%v) = %v, want %v (nudge %d)", c.fn, x, g, want, nudge)
			}
		}
	}
}

// TestPrecisionWalkBounded: a row sum of a chain in which every value has
// two users that the next joins (2^20 paths from the exp to the sum, all
// of them partial answers, around the loop of the sum) is emitted at once:
// the analyses' walks are bounded (walkSteps) and memoised.
func TestPrecisionWalkBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("func.func @f(%x: tensor<?x4096xbf16>) -> tensor<?xbf16> {\n")
	b.WriteString("  %v0 = graph.exp %x : tensor<?x4096xbf16>\n")
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&b, "  %%a%d = graph.mul %%v%d, %%v%d : tensor<?x4096xbf16>\n", i, i-1, i-1)
		fmt.Fprintf(&b, "  %%b%d = graph.mul %%v%d, %%v0 : tensor<?x4096xbf16>\n", i, i-1)
		fmt.Fprintf(&b, "  %%v%d = graph.add %%a%d, %%b%d : tensor<?x4096xbf16>\n", i, i, i)
	}
	b.WriteString("  %s = graph.reduce_sum %v20 {axes = [1]} : (tensor<?x4096xbf16>) -> tensor<?xbf16>\n")
	b.WriteString("  return %s : tensor<?xbf16>\n}\n")
	m := lower(t, b.String(), fullPipeline, "h200")
	done := make(chan error, 1)
	go func() {
		_, err := emitted(m)
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(60 * time.Second):
		t.Fatal("emitting a chain of shared values did not finish in 60 s")
	}
}

// TestExpEdges: the accurate exp where ex2.approx's result is 0, subnormal
// or +inf, which the correction keeps or gives way to (its NaN selects
// ex2's result): a dense sweep of -110..-85 and 85..90, the largest
// finite values and ±inf, every approximate instruction moved 2 ULP either
// way, within 3 ULP of f32 (docs/ptx.md), infinities and zeros exact.
func TestExpEdges(t *testing.T) {
	defer func() { simNudge = 0 }()
	m := lowerFile(t, "testdata/ops.tir")
	xs := []float64{math.Inf(1), math.Inf(-1), 3.4e38, -3.4e38, 1e30, -1e30, 88.72283, 88.72284, -87.33655, -103.97}
	for i := 0; i <= 4000; i++ {
		xs = append(xs, -110+25*float64(i)/4000, 85+5*float64(i)/4000)
	}
	for i, x := range xs {
		xs[i] = float64(float32(x))
	}
	in := &geval.Tensor{Shape: []int64{int64(len(xs))}, Elem: ir.F32, Data: xs}
	for _, nudge := range []int{-2, 0, 2} {
		simNudge = nudge
		got, err := simRunFunc(m, "exp_f32", []*geval.Tensor{in})
		require.NoError(t, err)
		for i, x := range xs {
			want, g := math.Exp(x), got[0].Data[i]
			if r := numeric.RoundTo(want, ir.F32); math.IsInf(r, 0) || r == 0 {
				require.True(t, g == r || math.Abs(g) <= math.SmallestNonzeroFloat32*3, "exp(%v) = %v, want %v (nudge %d)", x, g, r, nudge)
				continue
			}
			require.LessOrEqual(t, numeric.ULPDiff(want, g, ir.F32), 3.0, "exp(%v) = %v, want %v (nudge %d)", x, g, want, nudge)
		}
	}
}
