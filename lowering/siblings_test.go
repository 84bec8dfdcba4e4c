package lowering

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	geval "github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/dialects/loop"
	leval "github.com/tensorforge/tensorforge/dialects/loop/eval"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/parser"
)

// siblingsSrc: q's and k's rotary embeddings (sharing cos and sin); a
// KV-cache update whose keys are k's embedding and whose values v's
// transposed write (sharing the positions): a decode step's three kernels
// around attention.
const siblingsSrc = `
func.func @rope(%q: tensor<1x4x?x16xbf16>, %k: tensor<1x2x?x16xbf16>, %cos: tensor<1x1x?x16xbf16>, %sin: tensor<1x1x?x16xbf16>) -> (tensor<1x4x?x16xbf16>, tensor<1x2x?x16xbf16>) {
  %qc = graph.mul %q, %cos : (tensor<1x4x?x16xbf16>, tensor<1x1x?x16xbf16>) -> tensor<1x4x?x16xbf16>
  %qr = graph.roll %q {shift = 8} : tensor<1x4x?x16xbf16>
  %qs = graph.mul %qr, %sin : (tensor<1x4x?x16xbf16>, tensor<1x1x?x16xbf16>) -> tensor<1x4x?x16xbf16>
  %qe = graph.add %qc, %qs : tensor<1x4x?x16xbf16>
  %kc = graph.mul %k, %cos : (tensor<1x2x?x16xbf16>, tensor<1x1x?x16xbf16>) -> tensor<1x2x?x16xbf16>
  %kr = graph.roll %k {shift = 8} : tensor<1x2x?x16xbf16>
  %ks = graph.mul %kr, %sin : (tensor<1x2x?x16xbf16>, tensor<1x1x?x16xbf16>) -> tensor<1x2x?x16xbf16>
  %ke = graph.add %kc, %ks : tensor<1x2x?x16xbf16>
  return %qe, %ke : tensor<1x4x?x16xbf16>, tensor<1x2x?x16xbf16>
}

func.func @step(%kc: tensor<1x2x8x16xf32>, %vc: tensor<1x2x8x16xf32>, %pos: tensor<1xi64>, %k: tensor<1x1x32xf32>, %v: tensor<1x1x32xf32>, %s: tensor<1x1x1x16xf32>) -> tensor<1x1x32xf32> {
  %k4 = graph.reshape %k : (tensor<1x1x32xf32>) -> tensor<1x1x2x16xf32>
  %kt = graph.transpose %k4 {perm = [0, 2, 1, 3]} : (tensor<1x1x2x16xf32>) -> tensor<1x2x1x16xf32>
  %kr = graph.mul %kt, %s : (tensor<1x2x1x16xf32>, tensor<1x1x1x16xf32>) -> tensor<1x2x1x16xf32>
  graph.index_copy %kc, %pos, %kr {axis = 2} : (tensor<1x2x8x16xf32>, tensor<1xi64>, tensor<1x2x1x16xf32>) -> ()
  %v4 = graph.reshape %v : (tensor<1x1x32xf32>) -> tensor<1x1x2x16xf32>
  %vt = graph.transpose %v4 {perm = [0, 2, 1, 3]} : (tensor<1x1x2x16xf32>) -> tensor<1x2x1x16xf32>
  graph.index_copy %vc, %pos, %vt {axis = 2} : (tensor<1x2x8x16xf32>, tensor<1xi64>, tensor<1x2x1x16xf32>) -> ()
  %o = graph.exp %v : tensor<1x1x32xf32>
  return %o : tensor<1x1x32xf32>
}

func.func @captured(%kc: tensor<1x2x8x16xbf16>, %vc: tensor<1x2x8x16xbf16>, %pos: tensor<1xi64>, %k: tensor<1x2x1x16xbf16>, %vt: tensor<1x2x1x16xbf16>, %cos: tensor<1x1x1x16xbf16>, %sin: tensor<1x1x1x16xbf16>) {
  %kk = graph.mul %k, %cos : (tensor<1x2x1x16xbf16>, tensor<1x1x1x16xbf16>) -> tensor<1x2x1x16xbf16>
  %kr = graph.roll %k {shift = 8} : tensor<1x2x1x16xbf16>
  %ks = graph.mul %kr, %sin : (tensor<1x2x1x16xbf16>, tensor<1x1x1x16xbf16>) -> tensor<1x2x1x16xbf16>
  %ke = graph.add %kk, %ks : tensor<1x2x1x16xbf16>
  graph.index_copy %kc, %pos, %ke {axis = 2} : (tensor<1x2x8x16xbf16>, tensor<1xi64>, tensor<1x2x1x16xbf16>) -> ()
  graph.index_copy %vc, %pos, %vt {axis = 2} : (tensor<1x2x8x16xbf16>, tensor<1xi64>, tensor<1x2x1x16xbf16>) -> ()
  return
}

`

// normRopeSrc is Qwen3's per-head RMSNorm then RoPE of q (4 heads) and of
// k (2 heads) of 16, two row kernels that read the same cos and sin.
var normRopeSrc = func() string {
	head := func(x string, h int) string {
		t := fmt.Sprintf("tensor<1x?x%dx16xbf16>", h)
		f := fmt.Sprintf("tensor<1x?x%dx16xf32>", h)
		r := fmt.Sprintf("tensor<1x?x%dx1xf32>", h)
		return strings.NewReplacer("X", x, "T", t, "F", f, "R", r).Replace(`  %Xc = graph.cast %X : (T) -> F
  %Xp = graph.mul %Xc, %Xc : F
  %Xm = graph.reduce_mean %Xp {axes = [3], keepdim = true} : (F) -> R
  %Xa = graph.add %Xm, %eps : (R, tensor<f32>) -> R
  %Xr = graph.rsqrt %Xa : R
  %Xn = graph.mul %Xc, %Xr : (F, R) -> F
  %Xnb = graph.cast %Xn : (F) -> T
  %Xy = graph.mul %wX, %Xnb : (tensor<16xbf16>, T) -> T
  %Xyr = graph.roll %Xy {shift = 8} : T
  %Xys = graph.mul %Xyr, %sign : (T, tensor<16xbf16>) -> T
  %Xt1 = graph.mul %Xy, %cos : (T, tensor<1x?x1x16xbf16>) -> T
  %Xt2 = graph.mul %Xys, %sin : (T, tensor<1x?x1x16xbf16>) -> T
  %Xo = graph.add %Xt1, %Xt2 : T
`)
	}
	return `
func.func @normrope(%q: tensor<1x?x4x16xbf16>, %k: tensor<1x?x2x16xbf16>, %wq: tensor<16xbf16>, %wk: tensor<16xbf16>, %cos: tensor<1x?x1x16xbf16>, %sin: tensor<1x?x1x16xbf16>, %sign: tensor<16xbf16>) -> (tensor<1x?x4x16xbf16>, tensor<1x?x2x16xbf16>) {
  %eps = graph.constant dense<1.0e-06> : tensor<f32>
` + head("q", 4) + head("k", 2) + `  return %qo, %ko : tensor<1x?x4x16xbf16>, tensor<1x?x2x16xbf16>
}
`
}()

// Sibling kernels are launched as one kernel of several parts, which
// computes what the separate kernels compute bit for bit (the loop
// interpreter on both, and on the parts split back), prints and parses
// back to the same text, and is deterministic.
func TestSiblingsLaunchedAsOne(t *testing.T) {
	const pipeline = "canonicalize,cse,legalize-numerics,decompose,fuse,canonicalize,cse,dce,lower-to-loops,sram-alloc"
	merged := lowerText(t, siblingsSrc+normRopeSrc, pipeline, "h200")
	apart := lowerText(t, siblingsSrc+normRopeSrc, "canonicalize,cse,legalize-numerics,decompose,fuse,canonicalize,cse,dce,lower-to-loops{horizontal=false},sram-alloc", "h200")

	launches := func(m ir.Module, fn string) (n int, parts []int) {
		f, ok := m.Lookup(fn)
		require.True(t, ok)
		kernels := loop.KernelsOf(m)
		for _, op := range f.Body().Ops() {
			if l, ok := loop.AsLaunch(op); ok {
				n++
				parts = append(parts, len(loop.Parts(kernels[l.Kernel()])))
			}
		}
		return n, parts
	}
	n, parts := launches(merged, "rope")
	require.Equal(t, 1, n)
	require.Equal(t, []int{2}, parts)
	n, _ = launches(apart, "rope")
	require.Equal(t, 2, n)
	// k's and v's cache writes share the positions; the exp of v is
	// element-wise over v too, and joins them
	n, parts = launches(merged, "step")
	require.Equal(t, 1, n, ir.Print(merged.Operation, ir.PrintOptions{}))
	require.Equal(t, []int{3}, parts)
	n, _ = launches(apart, "step")
	require.Equal(t, 3, n)
	// as a captured layer gives it: v transposed by PyTorch, an argument;
	// its cache write is an element-wise copy, and joins k's RoPE
	n, parts = launches(merged, "captured")
	require.Equal(t, 1, n)
	require.Equal(t, []int{2}, parts)
	n, _ = launches(apart, "captured")
	require.Equal(t, 2, n)
	n, parts = launches(merged, "normrope")
	require.Equal(t, 1, n)
	require.Equal(t, []int{2}, parts)
	require.Equal(t, "row", loop.KernelsOf(merged)["normrope_k0"].Kind())

	// print and parse: the same text
	text := ir.Print(merged.Operation, ir.PrintOptions{})
	back, err := parser.Parse("merged.tir", text)
	require.NoError(t, err)
	require.NoError(t, ir.Verify(back.Operation))
	require.Equal(t, text, ir.Print(back.Operation, ir.PrintOptions{}))
	again := lowerText(t, siblingsSrc+normRopeSrc, pipeline, "h200")
	require.Equal(t, text, ir.Print(again.Operation, ir.PrintOptions{}))

	split, err := parser.Parse("split.tir", text)
	require.NoError(t, err)
	require.NoError(t, loop.SplitParts(split, nil))
	require.NoError(t, ir.Verify(split.Operation))
	n, parts = launches(split, "step")
	require.Equal(t, 3, n)
	require.Equal(t, []int{1, 1, 1}, parts)

	rng := rand.New(rand.NewSource(5))
	tensor := func(k ir.ElemKind, shape ...int64) *geval.Tensor {
		n := int64(1)
		for _, d := range shape {
			n *= d
		}
		data := make([]float64, n)
		for i := range data {
			data[i] = rng.NormFloat64() * 4
		}
		if n > 3 {
			data[0], data[1], data[2] = math.Inf(1), math.NaN(), math.Copysign(0, -1)
		}
		x, err := geval.TensorOf(k, shape, data)
		require.NoError(t, err)
		return x
	}
	clone := func(ts []*geval.Tensor) []*geval.Tensor {
		out := make([]*geval.Tensor, len(ts))
		for i, x := range ts {
			c := *x
			c.Data = append([]float64(nil), x.Data...)
			out[i] = &c
		}
		return out
	}
	same := func(what string, a, b []*geval.Tensor) {
		require.Len(t, b, len(a), what)
		for i := range a {
			require.Equal(t, len(a[i].Data), len(b[i].Data), what)
			for j := range a[i].Data {
				x, y := a[i].Data[j], b[i].Data[j]
				if !(x == y && math.Signbit(x) == math.Signbit(y) || math.IsNaN(x) && math.IsNaN(y)) {
					t.Fatalf("%s: tensor %d element %d: %v and %v", what, i, j, x, y)
				}
			}
		}
	}
	for _, tokens := range []int64{1, 5, 33} {
		in := []*geval.Tensor{tensor(ir.BF16, 1, 4, tokens, 16), tensor(ir.BF16, 1, 2, tokens, 16), tensor(ir.BF16, 1, 1, tokens, 16), tensor(ir.BF16, 1, 1, tokens, 16)}
		want, err := leval.Run(apart, "rope", clone(in))
		require.NoError(t, err)
		for what, m := range map[string]ir.Module{"merged": merged, "split": split} {
			got, err := leval.Run(m, "rope", clone(in))
			require.NoError(t, err, what)
			same(what, want, got)
		}
	}
	for _, tokens := range []int64{1, 3, 17} {
		in := []*geval.Tensor{tensor(ir.BF16, 1, tokens, 4, 16), tensor(ir.BF16, 1, tokens, 2, 16), tensor(ir.BF16, 16), tensor(ir.BF16, 16),
			tensor(ir.BF16, 1, tokens, 1, 16), tensor(ir.BF16, 1, tokens, 1, 16), tensor(ir.BF16, 16)}
		want, err := leval.Run(apart, "normrope", clone(in))
		require.NoError(t, err)
		for what, m := range map[string]ir.Module{"merged": merged, "split": split} {
			got, err := leval.Run(m, "normrope", clone(in))
			require.NoError(t, err, what)
			same(what, want, got)
		}
	}
	for _, p := range []float64{0, 7, 3} {
		pos, err := geval.TensorOf(ir.I64, []int64{1}, []float64{p})
		require.NoError(t, err)
		in := []*geval.Tensor{tensor(ir.F32, 1, 2, 8, 16), tensor(ir.F32, 1, 2, 8, 16), pos, tensor(ir.F32, 1, 1, 32), tensor(ir.F32, 1, 1, 32), tensor(ir.F32, 1, 1, 1, 16)}
		wantIn := clone(in)
		want, err := leval.Run(apart, "step", wantIn)
		require.NoError(t, err)
		for what, m := range map[string]ir.Module{"merged": merged, "split": split} {
			gotIn := clone(in)
			got, err := leval.Run(m, "step", gotIn)
			require.NoError(t, err, what)
			same(what, want, got)
			same(what+" (caches)", wantIn[:2], gotIn[:2])
		}
	}
	for _, p := range []float64{0, 7, -2, 9} {
		pos, err := geval.TensorOf(ir.I64, []int64{1}, []float64{p})
		require.NoError(t, err)
		in := []*geval.Tensor{tensor(ir.BF16, 1, 2, 8, 16), tensor(ir.BF16, 1, 2, 8, 16), pos, tensor(ir.BF16, 1, 2, 1, 16),
			tensor(ir.BF16, 1, 2, 1, 16), tensor(ir.BF16, 1, 1, 1, 16), tensor(ir.BF16, 1, 1, 1, 16)}
		wantIn := clone(in)
		_, err = leval.Run(apart, "captured", wantIn)
		require.NoError(t, err)
		// the value cache holds v at the clamped position, the rest untouched
		at := int(min(max(p, 0), 7))
		for h := 0; h < 2; h++ {
			for j := 0; j < 16; j++ {
				got, want := wantIn[1].Data[(h*8+at)*16+j], in[4].Data[h*16+j]
				require.True(t, got == want || math.IsNaN(got) && math.IsNaN(want), "head %d column %d: %v, want %v", h, j, got, want)
			}
		}
		for what, m := range map[string]ir.Module{"merged": merged, "split": split} {
			gotIn := clone(in)
			_, err := leval.Run(m, "captured", gotIn)
			require.NoError(t, err, what)
			same(what+" (caches)", wantIn[:2], gotIn[:2])
		}
	}
}
