package ptx

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	geval "github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
	"github.com/tensorforge/tensorforge/parser"
)

// matmulSrc holds the matmuls the tensor-core form (tc.go) takes, and one
// it does not (an i8 weight), run in the simulator against the loop
// interpreter.
const matmulSrc = `
func.func @mm_bf16(%a: tensor<37x45xbf16>, %b: tensor<45x29xbf16>) -> tensor<37x29xbf16> {
  %y = graph.matmul %a, %b : (tensor<37x45xbf16>, tensor<45x29xbf16>) -> tensor<37x29xbf16>
  return %y : tensor<37x29xbf16>
}
func.func @mm_f16(%a: tensor<37x45xf16>, %b: tensor<45x29xf16>) -> tensor<37x29xf32> {
  %m = graph.matmul %a, %b : (tensor<37x45xf16>, tensor<45x29xf16>) -> tensor<37x29xf16>
  %y = graph.cast %m : (tensor<37x29xf16>) -> tensor<37x29xf32>
  return %y : tensor<37x29xf32>
}
func.func @tb(%x: tensor<?x64xbf16>, %w: tensor<136x64xbf16>) -> tensor<?x136xbf16> {
  %y = graph.matmul %x, %w {transpose_b = true} : (tensor<?x64xbf16>, tensor<136x64xbf16>) -> tensor<?x136xbf16>
  return %y : tensor<?x136xbf16>
}
func.func @bmm_bias(%a: tensor<2x?x24xf16>, %b: tensor<2x24x40xf16>, %c: tensor<40xf16>) -> tensor<2x?x40xf16> {
  %m = graph.matmul %a, %b : (tensor<2x?x24xf16>, tensor<2x24x40xf16>) -> tensor<2x?x40xf16>
  %y = graph.add %m, %c : (tensor<2x?x40xf16>, tensor<40xf16>) -> tensor<2x?x40xf16>
  return %y : tensor<2x?x40xf16>
}
func.func @silu_res(%x: tensor<?x48xbf16>, %w: tensor<48x40xbf16>, %h: tensor<?x40xbf16>) -> tensor<?x40xbf16> {
  %m = graph.matmul %x, %w : (tensor<?x48xbf16>, tensor<48x40xbf16>) -> tensor<?x40xbf16>
  %s = graph.silu %m : tensor<?x40xbf16>
  %y = graph.add %s, %h : tensor<?x40xbf16>
  return %y : tensor<?x40xbf16>
}
func.func @swiglu(%x: tensor<?x40xbf16>, %wg: tensor<36x40xbf16>, %wu: tensor<36x40xbf16>) -> tensor<?x36xbf16> {
  %g = graph.matmul %x, %wg {transpose_b = true} : (tensor<?x40xbf16>, tensor<36x40xbf16>) -> tensor<?x36xbf16>
  %u = graph.matmul %x, %wu {transpose_b = true} : (tensor<?x40xbf16>, tensor<36x40xbf16>) -> tensor<?x36xbf16>
  %s = graph.silu %g : tensor<?x36xbf16>
  %y = graph.mul %s, %u : tensor<?x36xbf16>
  return %y : tensor<?x36xbf16>
}
func.func @deep_tb(%x: tensor<?x192xbf16>, %w: tensor<136x192xbf16>) -> tensor<?x136xbf16> {
  %y = graph.matmul %x, %w {transpose_b = true} : (tensor<?x192xbf16>, tensor<136x192xbf16>) -> tensor<?x136xbf16>
  return %y : tensor<?x136xbf16>
}
func.func @deep_kn(%x: tensor<?x128xbf16>, %w: tensor<128x136xbf16>) -> tensor<?x136xbf16> {
  %y = graph.matmul %x, %w : (tensor<?x128xbf16>, tensor<128x136xbf16>) -> tensor<?x136xbf16>
  return %y : tensor<?x136xbf16>
}
func.func @deep_swiglu(%x: tensor<?x320xbf16>, %wg: tensor<40x320xbf16>, %wu: tensor<40x320xbf16>) -> tensor<?x40xbf16> {
  %g = graph.matmul %x, %wg {transpose_b = true} : (tensor<?x320xbf16>, tensor<40x320xbf16>) -> tensor<?x40xbf16>
  %u = graph.matmul %x, %wu {transpose_b = true} : (tensor<?x320xbf16>, tensor<40x320xbf16>) -> tensor<?x40xbf16>
  %s = graph.silu %g : tensor<?x40xbf16>
  %y = graph.mul %s, %u : tensor<?x40xbf16>
  return %y : tensor<?x40xbf16>
}
func.func @kv(%x: tensor<?x64xbf16>, %wk: tensor<40x64xbf16>, %wv: tensor<40x64xbf16>) -> (tensor<?x40xbf16>, tensor<?x40xbf16>) {
  %k = graph.matmul %x, %wk {transpose_b = true} : (tensor<?x64xbf16>, tensor<40x64xbf16>) -> tensor<?x40xbf16>
  %v = graph.matmul %x, %wv {transpose_b = true} : (tensor<?x64xbf16>, tensor<40x64xbf16>) -> tensor<?x40xbf16>
  return %k, %v : tensor<?x40xbf16>, tensor<?x40xbf16>
}
func.func @w8(%x: tensor<?x64xbf16>, %q: tensor<40x64xi8>) -> tensor<?x40xbf16> {
  %w = graph.cast %q : (tensor<40x64xi8>) -> tensor<40x64xbf16>
  %y = graph.matmul %x, %w {transpose_b = true} : (tensor<?x64xbf16>, tensor<40x64xbf16>) -> tensor<?x40xbf16>
  return %y : tensor<?x40xbf16>
}
`

// mmCase is one run: the rows for `?`, K, and whether the epilogue is
// linear in the dot products (else the bound doubles, see below).
type mmCase struct {
	fn     string
	rows   int64
	K      int64
	linear bool
}

// matmulInputs fills the inputs: normal values of scale 1 in the
// operands' types, and special values in a few places: +inf in row 3 of
// the first operand, NaN in its last row (in one element of the second
// operand instead when there is one row), -inf in one element of the
// second.
func matmulInputs(fn ir.Func, rows int64, seed int64) []*geval.Tensor {
	rng := rand.New(rand.NewSource(seed))
	var out []*geval.Tensor
	for i, a := range fn.Args() {
		tt := a.Type().(ir.TensorType)
		shape := append([]int64(nil), tt.Shape...)
		for d := range shape {
			if shape[d] == ir.Dynamic {
				shape[d] = rows
			}
		}
		k := tt.Elem.Kind
		x := geval.NewTensor(k, shape)
		for j := range x.Data {
			v := rng.NormFloat64()
			if k.IsInt() {
				v = float64(rng.Intn(255) - 127)
			}
			x.Data[j] = numeric.RoundTo(v, k)
		}
		if !k.IsInt() && len(shape) >= 2 {
			n := shape[len(shape)-1]
			switch i {
			case 0:
				if len(x.Data) > int(4*n) {
					x.Data[3*n+n/2] = math.Inf(1)
				}
				if rows != 1 {
					// (not in a single row: every result would be NaN)
					x.Data[len(x.Data)-2] = math.NaN()
				}
			case 1:
				x.Data[int(n)+1] = math.Inf(-1)
				if rows == 1 {
					x.Data[len(x.Data)-2] = math.NaN()
				}
			}
		}
		out = append(out, x)
	}
	return out
}

// hasSpecials reports whether some input holds an inf or a NaN (an
// integer weight at one row holds none: matmulInputs puts them in the
// left operand from the fifth row on).
func hasSpecials(in []*geval.Tensor) bool {
	for _, x := range in {
		for _, v := range x.Data {
			if math.IsInf(v, 0) || math.IsNaN(v) {
				return true
			}
		}
	}
	return false
}

// TestSimulatedMatMul runs the tensor-core kernels in the simulator
// against the loop interpreter (the serial f32 fma over k), element by
// element, within
//
//	|ours - ref| <= K * 2^-23 * mag + u * ULP(|ref|)
//
// mag being the function on the magnitudes of its inputs in float64 (the
// sum of |a_k b_k|, plus |bias|...): the loop interpreter's sequential
// f32 sum and the simulator's (each mma.sync rounded once to f32 from
// float64) are each within K * 2^-24 * mag of the exact sum, and u = 1
// ULP of the result type (bf16's, f16's) covers the two roundings of the
// result, which round sums a few f32 ULPs apart to neighbouring values of
// the type where they straddle a rounding boundary (2 where
// the epilogue rounds again, and the bound doubles where the epilogue is
// not linear: silu). NaN must be NaN and infinities equal.
func TestSimulatedMatMul(t *testing.T) {
	mmaSync(t) // (TestSimulatedWGMMA runs the wgmma form)
	m := lower(t, matmulSrc, fullPipeline, "h200")
	g, err := parser.Parse("test.tir", matmulSrc)
	require.NoError(t, err)
	cases := []mmCase{
		{"mm_bf16", 0, 45, true}, {"mm_f16", 0, 45, true},
		{"tb", 130, 64, true}, {"tb", 1, 64, true},
		{"bmm_bias", 19, 24, true},
		{"silu_res", 1, 48, false}, {"silu_res", 67, 48, false},
		{"swiglu", 5, 40, false},
		// sibling matmuls (one kernel of two dot products, two results)
		{"kv", 3, 64, true}, {"kv", 130, 64, true},
		{"w8", 3, 64, true},
		// K a multiple of 64 with aligned rows: the chunk addresses set
		// once per tile, several turns of the stages (3 for one dot
		// product, 4 for two), N past the tile
		{"deep_tb", 130, 192, true},
		{"deep_kn", 67, 128, true},
		{"deep_swiglu", 5, 320, false},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%d", c.fn, c.rows), func(t *testing.T) {
			checkMatMul(t, m, g, c)
		})
	}
}

// checkMatMul runs case c in the simulator and the loop interpreter and
// checks every result within the bound above; it returns the simulated
// results.
func checkMatMul(t *testing.T, m ir.Module, g ir.Module, c mmCase) []*geval.Tensor {
	t.Helper()
	gf, ok := g.Lookup(c.fn)
	require.True(t, ok)
	in := matmulInputs(gf, c.rows, 7)
	clone := func() []*geval.Tensor {
		var out []*geval.Tensor
		for _, x := range in {
			y := geval.NewTensor(x.Elem, x.Shape)
			copy(y.Data, x.Data)
			out = append(out, y)
		}
		return out
	}
	want := reference(t, m, c.fn, in)
	got, err := simRunFunc(m, c.fn, clone())
	require.NoError(t, err)
	abs := clone()
	for _, x := range abs {
		for i, v := range x.Data {
			x.Data[i] = math.Abs(v)
		}
	}
	mag, err := geval.Run(gf, abs, geval.Options{F64: true})
	require.NoError(t, err)
	u, f := 1.0, 1.0
	if !c.linear {
		u, f = 2, 2
	}
	if c.fn == "bmm_bias" || c.fn == "mm_f16" {
		u = 2 // rounded to f16, then the bias (or the cast) rounds
	}
	for r := range want {
		w, gr := want[r], got[r]
		require.Equal(t, fmt.Sprint(w.Shape), fmt.Sprint(gr.Shape))
		var bad []string
		worst, specials := 0.0, 0
		for i := range w.Data {
			x, y := w.Data[i], gr.Data[i]
			if math.IsNaN(x) || math.IsInf(x, 0) {
				specials++
				if !(math.IsNaN(x) && math.IsNaN(y)) && x != y && len(bad) < 6 {
					bad = append(bad, fmt.Sprintf("[%d] interpreted %v simulated %v", i, x, y))
				}
				continue
			}
			bound := f*float64(c.K)*math.Ldexp(mag[r].Data[i], -23) + u*numeric.ULP(x, w.Elem)
			d := math.Abs(x - y)
			if math.IsNaN(mag[r].Data[i]) || math.IsInf(mag[r].Data[i], 0) {
				bound = math.Inf(1)
			}
			worst = max(worst, d/bound)
			if !(d <= bound) && len(bad) < 6 {
				bad = append(bad, fmt.Sprintf("[%d] interpreted %v simulated %v (bound %.3g)", i, x, y, bound))
			}
		}
		assert.Empty(t, bad, "%s rows %d result %d: %s", c.fn, c.rows, r, strings.Join(bad, "; "))
		if hasSpecials(in) {
			assert.Positive(t, specials, "the inputs' inf and NaN reach some results")
		}
		t.Logf("%s rows %d: largest error %.3f of the bound, %d inf/NaN results", c.fn, c.rows, worst, specials)
	}
	return got
}

// TestMatMulForm checks which matmul kernels take the tensor-core form:
// the emitted PTX has cp.async, ldmatrix and mma.sync, and the i8 weight
// is converted in registers.
func TestMatMulForm(t *testing.T) {
	mmaSync(t) // (TestWGMMAForm checks the wgmma form)
	files := emitFiles(t, matmulSrc)
	for _, fn := range []string{"mm_bf16", "mm_f16", "tb", "bmm_bias", "silu_res", "swiglu"} {
		text := files[fn+".ptx"]
		checkText(t, fn, text)
		assert.Contains(t, text, "// Matmul on tensor cores", fn)
		assert.Contains(t, text, "mma.sync.aligned.m16n8k16.row.col.f32.", fn)
		assert.Contains(t, text, "ldmatrix.sync.aligned.m8n8.x4.", fn)
		assert.Contains(t, text, "cp.async.commit_group", fn)
		assert.Contains(t, text, "cp.async.wait_group", fn)
	}
	assert.Contains(t, files["tb.ptx"], "cp.async.cg.shared.global")
	assert.Contains(t, files["tb.ptx"], "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32")
	assert.Contains(t, files["bmm_bias.ptx"], "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")
	assert.Contains(t, files["bmm_bias.ptx"], "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16")
	assert.NotContains(t, files["tb.ptx"], ".trans.")
	assert.Contains(t, files["mm_bf16.ptx"], "by 2-byte loads")
	assert.Equal(t, 128, strings.Count(files["swiglu.ptx"], "mma.sync.aligned"))
	// the i8 weight: converted in registers (dequant.go, TestDequantForm)
	assert.Contains(t, files["w8.ptx"], "// Dot product 0: B [n, k] i8, copied in its own bytes and converted to bf16 in registers")
	// shared memory above 48 KiB: the launcher raises the limit
	assert.Contains(t, files["tb.py"], `("tb_k0", 128, 110592)`)
	assert.Contains(t, files["tb.py"], "cuFuncSetAttribute")
}
