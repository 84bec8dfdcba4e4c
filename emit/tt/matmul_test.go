package tt

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
	"github.com/tensorforge/tensorforge/ir/target"
	"github.com/tensorforge/tensorforge/parser"
)

// Matmul kernels on matmul_tiles, run on the emulation and held to the
// graph interpreter. bf16 and f16 operands reach the FPU exactly and their
// products are exact, so the sums are the interpreter's (f32, k in order)
// and the results within halfULPs. f32 operands are read through srcA /
// srcB as TF32 (10 mantissa bits, truncated): each product is off by at
// most 2^-9 of |a||b|, and the f32 sums by K * 2^-24 of sum |a||b| in
// either order, so an f32 result is held to
//
//	|got - want| <= (2^-9 + K * 2^-23) * sum_k |a_ik| |b_kj|
//
// times the epilogue's Lipschitz bound (1 for a bias, 1.1 for SiLU), plus
// 2^-21 of the result for the epilogue's own roundings.

// mmCase is a program and how its result is bounded.
type mmCase struct {
	name string
	src  string
	// fuse: the program has an epilogue, which the Tenstorrent target's
	// graph passes fuse into the matmul kernel (tileEpilogue).
	fuse bool
	// inputs, when set, gives the inputs; else random ones of scale 1
	inputs func(fn ir.Func) ([]*geval.Tensor, error)
	// bound, for f32 results: the allowed error of element i given the
	// inputs (nil: compareTT)
	bound func(in []*geval.Tensor, i int) float64
}

// mmBound is the bound of C = A @ B (B^T with transpose) at element i of
// C [.., M, N], times lip: (2^-9 + K 2^-23) sum_k |a||b|.
func mmBound(a, b *geval.Tensor, transpose bool, i int, lip float64) float64 {
	k := a.Shape[len(a.Shape)-1]
	var n int64
	if transpose {
		n = b.Shape[len(b.Shape)-2]
	} else {
		n = b.Shape[len(b.Shape)-1]
	}
	row, col := int64(i)/n, int64(i)%n
	m := a.Shape[len(a.Shape)-2]
	batch := row / m
	bOff := int64(0)
	if len(b.Shape) > 2 {
		bOff = batch * k * n
	}
	s := 0.0
	for kk := int64(0); kk < k; kk++ {
		av := a.Data[row*k+kk]
		var bv float64
		if transpose {
			bv = b.Data[bOff+col*k+kk]
		} else {
			bv = b.Data[bOff+kk*n+col]
		}
		s += math.Abs(av * bv)
	}
	return lip * (math.Ldexp(1, -9) + float64(k)*math.Ldexp(1, -23)) * s
}

// extremeInputs fills every input with values of magnitude 10^-18 to
// 10^18, of both signs: products far from 1, never overflowing or
// leaving the normal range.
func extremeInputs(fn ir.Func) ([]*geval.Tensor, error) {
	in, err := geval.RandomInputs(fn, 11, 1, 32)
	if err != nil {
		return nil, err
	}
	r := rand.New(rand.NewSource(5))
	for _, t := range in {
		for i := range t.Data {
			v := math.Pow(10, r.Float64()*36-18)
			if r.Intn(2) == 0 {
				v = -v
			}
			t.Data[i] = numeric.RoundTo(v, t.Elem)
		}
	}
	return in, nil
}

// compileMatMul builds the emulation case of src on target tg, and the
// interpreter's results.
func compileMatMul(t *testing.T, c mmCase, tgName string) builtCase {
	tg, err := target.Lookup(tgName)
	require.NoError(t, err)
	orig, err := compileFor(c.src, graphPipeline, tg)
	require.NoError(t, err, c.name)
	lowered, err := compileFor(c.src, graphPipeline, tg)
	require.NoError(t, err, c.name)
	p, err := ir.ParsePipeline("lower-to-loops,sram-alloc")
	require.NoError(t, err)
	pm := &ir.PassManager{Pipeline: p, VerifyEach: true}
	require.NoError(t, pm.Run(lowered, &ir.PassContext{Diags: &ir.Diagnostics{}, Target: tg}), c.name)
	out, err := Emit(lowered, Options{Target: tg})
	require.NoError(t, err, c.name)
	if c.fuse {
		require.Len(t, out.Program.Kernels, 1, "%s: the epilogue is fused into the matmul kernel", c.name)
	}
	fn := orig.Funcs()[0]
	inputs := c.inputs
	if inputs == nil {
		inputs = func(fn ir.Func) ([]*geval.Tensor, error) { return geval.RandomInputs(fn, 3, 1, 32) }
	}
	in, err := inputs(fn)
	require.NoError(t, err)
	want, err := geval.Run(fn, cloneAll(in), geval.Options{})
	require.NoError(t, err)
	return newBuiltCase(fmt.Sprintf("%s on %s", c.name, tgName), out, fn.SymName(), in, want)
}

func TestMatMulEmulated(t *testing.T) {
	t.Parallel()
	plain := func(elem string, transpose bool) string {
		bShape, attr := "96x32", ""
		if transpose {
			bShape, attr = "32x96", " {transpose_b = true}"
		}
		return fmt.Sprintf(`func.func @mm(%%a: tensor<64x96x%[1]s>, %%b: tensor<%[2]sx%[1]s>) -> tensor<64x32x%[1]s> {
  %%c = graph.matmul %%a, %%b%[3]s : (tensor<64x96x%[1]s>, tensor<%[2]sx%[1]s>) -> tensor<64x32x%[1]s>
  return %%c : tensor<64x32x%[1]s>
}`, elem, bShape, attr)
	}
	f32Bound := func(transpose bool, lip float64) func(in []*geval.Tensor, i int) float64 {
		return func(in []*geval.Tensor, i int) float64 { return mmBound(in[0], in[1], transpose, i, lip) }
	}
	cases := []mmCase{
		{name: "f32 64x96 @ 96x32", src: plain("f32", false), bound: f32Bound(false, 1)},
		{name: "bf16 64x96 @ 96x32", src: plain("bf16", false)},
		{name: "f16 64x96 @ 96x32", src: plain("f16", false)},
		{name: "f32 transpose_b", src: plain("f32", true), bound: f32Bound(true, 1)},
		{name: "bf16 transpose_b", src: plain("bf16", true)},
		{name: "f32 extreme magnitudes", src: plain("f32", false), inputs: extremeInputs, bound: f32Bound(false, 1)},
		{name: "bf16 extreme magnitudes", src: plain("bf16", true), inputs: extremeInputs},
		{name: "f32 batched", src: `func.func @bmm(%a: tensor<2x64x64xf32>, %b: tensor<2x64x32xf32>) -> tensor<2x64x32xf32> {
  %c = graph.matmul %a, %b : (tensor<2x64x64xf32>, tensor<2x64x32xf32>) -> tensor<2x64x32xf32>
  return %c : tensor<2x64x32xf32>
}`, bound: f32Bound(false, 1)},
		{name: "bf16 batched transpose_b, B shared", src: `func.func @bmm(%a: tensor<2x32x64xbf16>, %b: tensor<64x64xbf16>) -> tensor<2x32x64xbf16> {
  %c = graph.matmul %a, %b {transpose_b = true} : (tensor<2x32x64xbf16>, tensor<64x64xbf16>) -> tensor<2x32x64xbf16>
  return %c : tensor<2x32x64xbf16>
}`},
		{name: "f32 bias epilogue", fuse: true, src: `func.func @mm(%a: tensor<64x96xf32>, %b: tensor<96x32xf32>, %bias: tensor<32xf32>) -> tensor<64x32xf32> {
  %c = graph.matmul %a, %b : (tensor<64x96xf32>, tensor<96x32xf32>) -> tensor<64x32xf32>
  %y = graph.add %c, %bias : (tensor<64x32xf32>, tensor<32xf32>) -> tensor<64x32xf32>
  return %y : tensor<64x32xf32>
}`, bound: func(in []*geval.Tensor, i int) float64 { return mmBound(in[0], in[1], false, i, 1) }},
		{name: "bf16 bias epilogue", fuse: true, src: `func.func @mm(%a: tensor<64x96xbf16>, %b: tensor<96x32xbf16>, %bias: tensor<32xbf16>) -> tensor<64x32xbf16> {
  %c = graph.matmul %a, %b : (tensor<64x96xbf16>, tensor<96x32xbf16>) -> tensor<64x32xbf16>
  %y = graph.add %c, %bias : (tensor<64x32xbf16>, tensor<32xbf16>) -> tensor<64x32xbf16>
  return %y : tensor<64x32xbf16>
}`},
		{name: "bf16 SwiGLU epilogue", fuse: true, src: `func.func @swiglu(%x: tensor<64x96xbf16>, %wg: tensor<32x96xbf16>, %wu: tensor<32x96xbf16>) -> tensor<64x32xbf16> {
  %g = graph.matmul %x, %wg {transpose_b = true} : (tensor<64x96xbf16>, tensor<32x96xbf16>) -> tensor<64x32xbf16>
  %u = graph.matmul %x, %wu {transpose_b = true} : (tensor<64x96xbf16>, tensor<32x96xbf16>) -> tensor<64x32xbf16>
  %s = graph.silu %g : tensor<64x32xbf16>
  %y = graph.mul %s, %u : (tensor<64x32xbf16>, tensor<64x32xbf16>) -> tensor<64x32xbf16>
  return %y : tensor<64x32xbf16>
}`},
		{name: "f32 per-row scale epilogue", fuse: true, src: `func.func @mm(%a: tensor<64x96xf32>, %b: tensor<96x32xf32>, %sc: tensor<64x1xf32>) -> tensor<64x32xf32> {
  %c = graph.matmul %a, %b : (tensor<64x96xf32>, tensor<96x32xf32>) -> tensor<64x32xf32>
  %y = graph.mul %c, %sc : (tensor<64x32xf32>, tensor<64x1xf32>) -> tensor<64x32xf32>
  return %y : tensor<64x32xf32>
}`, bound: func(in []*geval.Tensor, i int) float64 {
			return mmBound(in[0], in[1], false, i, math.Abs(in[2].Data[i/32]))
		}},
		{name: "f32 silu epilogue, scaled", fuse: true, src: `func.func @mm(%a: tensor<64x96xf32>, %b: tensor<32x96xf32>) -> tensor<64x32xf32> {
  %c = graph.matmul %a, %b {transpose_b = true} : (tensor<64x96xf32>, tensor<32x96xf32>) -> tensor<64x32xf32>
  %h = graph.constant dense<0.5> : tensor<f32>
  %s = graph.mul %c, %h : (tensor<64x32xf32>, tensor<f32>) -> tensor<64x32xf32>
  %y = graph.silu %s : tensor<64x32xf32>
  return %y : tensor<64x32xf32>
}`, bound: f32Bound(true, 0.55)},
		{name: "f32 SwiGLU epilogue", fuse: true, src: `func.func @swiglu(%x: tensor<64x96xf32>, %wg: tensor<32x96xf32>, %wu: tensor<32x96xf32>) -> tensor<64x32xf32> {
  %g = graph.matmul %x, %wg {transpose_b = true} : (tensor<64x96xf32>, tensor<32x96xf32>) -> tensor<64x32xf32>
  %u = graph.matmul %x, %wu {transpose_b = true} : (tensor<64x96xf32>, tensor<32x96xf32>) -> tensor<64x32xf32>
  %s = graph.silu %g : tensor<64x32xf32>
  %y = graph.mul %s, %u : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
  return %y : tensor<64x32xf32>
}`, bound: func(in []*geval.Tensor, i int) float64 {
			// silu(g) u: 1.1 e_g |u| + |silu(g)| e_u, with |silu(g)| <= |g| + 0.3
			eg, eu := mmBound(in[0], in[1], true, i, 1), mmBound(in[0], in[2], true, i, 1)
			g, u := dotAt(in[0], in[1], i), dotAt(in[0], in[2], i)
			return 1.1*eg*(math.Abs(u)+eu) + (math.Abs(g)+0.3+1.1*eg)*eu
		}},
	}
	var built []builtCase
	for _, c := range cases {
		for _, tg := range []string{"blackhole-p150", "wormhole-n300"} {
			built = append(built, compileMatMul(t, c, tg))
		}
	}
	emuCases := make([]*emuCase, len(built))
	for i, b := range built {
		emuCases[i] = b.c
	}
	results := runEmu(t, emuCases)
	for i, b := range built {
		c := cases[i/2]
		r := results[i]
		require.Zero(t, r.code, "%s: the emulation failed:\n%s", b.c.name, r.stderr)
		require.Len(t, r.outs, 1, b.c.name)
		want, got := b.want[0], r.outs[0]
		if c.bound == nil {
			compareTT(t, b.c.name, want, got)
			continue
		}
		require.Equal(t, want.Shape, got.Shape, b.c.name)
		var bad []string
		for j := range want.Data {
			w, g := want.Data[j], got.Data[j]
			if w == g || math.IsNaN(w) && math.IsNaN(g) {
				continue
			}
			if d := math.Abs(w - g); !(d <= c.bound(b.c.in, j)+math.Ldexp(math.Abs(w), -21)) && len(bad) < 6 {
				bad = append(bad, fmt.Sprintf("[%d] want %v got %v (bound %v)", j, w, g, c.bound(b.c.in, j)))
			}
		}
		require.Empty(t, bad, "%s: %s", b.c.name, strings.Join(bad, "; "))
		if !c.fuse {
			// without an epilogue the result is exactly the sum of the
			// TF32 operands' products, k in order, in f32
			for j := range want.Data {
				if x := tf32Dot(b.c.in[0], b.c.in[1], strings.Contains(c.src, "transpose_b"), j); float64(x) != got.Data[j] && len(bad) < 6 {
					bad = append(bad, fmt.Sprintf("[%d] TF32 sum %v got %v", j, x, got.Data[j]))
				}
			}
			require.Empty(t, bad, "%s: %s", b.c.name, strings.Join(bad, "; "))
		}
	}
}

// tf32Dot is element i of A @ B (B^T with transpose) as matmul_tiles
// computes it: operands truncated to TF32, exact products, f32 sums in k
// order.
func tf32Dot(a, b *geval.Tensor, transpose bool, i int) float32 {
	tf32 := func(v float64) float32 {
		return math.Float32frombits(math.Float32bits(float32(v)) & 0xffffe000)
	}
	k := a.Shape[len(a.Shape)-1]
	n := b.Shape[len(b.Shape)-1]
	if transpose {
		n = b.Shape[len(b.Shape)-2]
	}
	row, col := int64(i)/n, int64(i)%n
	bOff := int64(0)
	if len(b.Shape) > 2 {
		bOff = row / a.Shape[len(a.Shape)-2] * k * n
	}
	var acc float32
	for kk := int64(0); kk < k; kk++ {
		bv := b.Data[bOff+kk*n+col]
		if transpose {
			bv = b.Data[bOff+col*k+kk]
		}
		p := tf32(a.Data[row*k+kk]) * tf32(bv)
		acc += p
	}
	return acc
}

// dotAt is row i / N of a times column i % N of b^T (b [N, K]), exactly.
func dotAt(a, b *geval.Tensor, i int) float64 {
	k := a.Shape[len(a.Shape)-1]
	n := b.Shape[0]
	row, col := int64(i)/n, int64(i)%n
	s := 0.0
	for kk := int64(0); kk < k; kk++ {
		s += a.Data[row*k+kk] * b.Data[col*k+kk]
	}
	return s
}

// TestMatMulKernelText checks the compute kernel's calls and the
// reader's tile order.
func TestMatMulKernelText(t *testing.T) {
	src := `func.func @mm(%a: tensor<64x96xbf16>, %b: tensor<32x96xbf16>) -> tensor<64x32xbf16> {
  %c = graph.matmul %a, %b {transpose_b = true} : (tensor<64x96xbf16>, tensor<32x96xbf16>) -> tensor<64x32xbf16>
  return %c : tensor<64x32xbf16>
}`
	out, err := emitSrc(t, src, "blackhole-p150")
	require.NoError(t, err)
	files := map[string]string{}
	for _, f := range out.Files {
		files[f.Path] = string(f.Data)
	}
	compute := files["mm_k0/compute.cpp"]
	assert.Contains(t, compute, "mm_init(cb_a, cb_b, cb_c, 1);")
	assert.Contains(t, compute, "for (uint32_t kt = 0; kt < 3; ++kt) {")
	assert.Contains(t, compute, "matmul_tiles(cb_a, cb_b, 0, 0, 0, 1);")
	reader := files["mm_k0/reader.cpp"]
	assert.Contains(t, reader, "noc_async_read_tile(rb * 3 + kt, a, get_write_ptr(cb_a));")
	assert.Contains(t, reader, "noc_async_read_tile(ct * 3 + kt, b, get_write_ptr(cb_b));")
	k := out.Program.Kernels[0]
	assert.Equal(t, "matmul", k.Kind)
	assert.Equal(t, "tile", k.Work.Unit)
	// A and B double-buffered, the result double-buffered: 6 bf16 pages
	assert.Equal(t, int64(6*2048), k.L1Bytes)
}

// emitFused emits src with the graph passes run for the cpu target (which
// fuse views and epilogues into matmul kernels) and the lowering for tg.
func emitFused(t *testing.T, src, tgName string) (*Output, error) {
	tg, err := target.Lookup(tgName)
	require.NoError(t, err)
	cpu, err := target.Lookup("cpu")
	require.NoError(t, err)
	m, err := compileFor(src, graphPipeline, cpu)
	require.NoError(t, err)
	p, err := ir.ParsePipeline("lower-to-loops,sram-alloc")
	require.NoError(t, err)
	pm := &ir.PassManager{Pipeline: p, VerifyEach: true}
	require.NoError(t, pm.Run(m, &ir.PassContext{Diags: &ir.Diagnostics{}, Target: tg}))
	return Emit(m, Options{Target: tg})
}

// TestMatMulReported checks what the backend does not tile is reported at
// the op, with the reason.
func TestMatMulReported(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"a right operand broadcast over the batch", `func.func @q(%q: tensor<4x32x64xbf16>, %k: tensor<2x1x64x64xbf16>) -> tensor<4x32x64xbf16> {
  %kb = graph.broadcast_to %k : (tensor<2x1x64x64xbf16>) -> tensor<2x2x64x64xbf16>
  %kh = graph.reshape %kb : (tensor<2x2x64x64xbf16>) -> tensor<4x64x64xbf16>
  %s = graph.matmul %q, %kh {transpose_b = true} : (tensor<4x32x64xbf16>, tensor<4x64x64xbf16>) -> tensor<4x32x64xbf16>
  return %s : tensor<4x32x64xbf16>
}`, "input.tir:2:3: error: 'tt' backend: kernel 'q_k0' reads the right operand 'k' of a batched matmul through a batch map"},
		{"an epilogue computing per row", `func.func @s(%a: tensor<32x32xf32>, %b: tensor<32x32xf32>, %sc: tensor<32x1xf32>) -> tensor<32x32xf32> {
  %c = graph.matmul %a, %b : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  %e = graph.exp %sc : tensor<32x1xf32>
  %y = graph.mul %c, %e : (tensor<32x32xf32>, tensor<32x1xf32>) -> tensor<32x32xf32>
  return %y : tensor<32x32xf32>
}`, "input.tir:2:3: error: 'tt' backend: kernel 's_k0' computes 'loop.exp' once per row of a matmul"},
		{"int8 weights", `func.func @w(%a: tensor<32x32xbf16>, %b: tensor<32x32xi8>) -> tensor<32x32xbf16> {
  %bf = graph.cast %b : (tensor<32x32xi8>) -> tensor<32x32xbf16>
  %c = graph.matmul %a, %bf : (tensor<32x32xbf16>, tensor<32x32xbf16>) -> tensor<32x32xbf16>
  return %c : tensor<32x32xbf16>
}`, "error: 'tt' backend: kernel 'w_k0' multiplies by 'b', whose elements are i8; the backend runs matmul_tiles on float tiles"},
		{"K not a multiple of 32", `func.func @k(%a: tensor<32x40xf32>, %b: tensor<40x32xf32>) -> tensor<32x32xf32> {
  %c = graph.matmul %a, %b : (tensor<32x40xf32>, tensor<40x32xf32>) -> tensor<32x32xf32>
  return %c : tensor<32x32xf32>
}`, "input.tir:2:3: error: 'tt' backend: kernel 'k_k0' multiplies 32x40 by 40x32 matrices; matmul_tiles takes whole 32x32 tiles"},
		{"a run-time M", `func.func @d(%a: tensor<?x32xf32>, %b: tensor<32x32xf32>) -> tensor<?x32xf32> {
  %c = graph.matmul %a, %b : (tensor<?x32xf32>, tensor<32x32xf32>) -> tensor<?x32xf32>
  return %c : tensor<?x32xf32>
}`, "input.tir:2:3: error: 'tt' backend: kernel 'd_k0' multiplies matrices of run-time extent"},
	} {
		_, err := emitFused(t, c.src, "blackhole-p150")
		require.Error(t, err, c.name)
		assert.Contains(t, err.Error(), c.want, c.name)
	}
}

// TestMatMulEpilogueOnTiles holds the Tenstorrent graph passes to what
// the backend tiles: an epilogue it applies in DST is fused into the
// matmul kernel; one it does not (a value used twice, two results, an
// op computed per row, a broadcast it does not read, exact rounding, an
// op without an SFPU form here) stays kernels of their own, so the
// program compiles instead of meeting the backend's refusal.
func TestMatMulEpilogueOnTiles(t *testing.T) {
	for _, c := range []struct {
		name  string
		src   string
		exact bool
		fused bool
	}{
		{"bias and silu", `func.func @f(%a: tensor<64x96xbf16>, %b: tensor<32x96xbf16>, %bias: tensor<32xbf16>) -> tensor<64x32xbf16> {
  %c = graph.matmul %a, %b {transpose_b = true} : (tensor<64x96xbf16>, tensor<32x96xbf16>) -> tensor<64x32xbf16>
  %d = graph.add %c, %bias : (tensor<64x32xbf16>, tensor<32xbf16>) -> tensor<64x32xbf16>
  %y = graph.silu %d : tensor<64x32xbf16>
  return %y : tensor<64x32xbf16>
}`, false, true},
		{"residual add", `func.func @f(%a: tensor<64x96xf32>, %b: tensor<96x32xf32>, %r: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %c = graph.matmul %a, %b : (tensor<64x96xf32>, tensor<96x32xf32>) -> tensor<64x32xf32>
  %y = graph.add %c, %r : tensor<64x32xf32>
  return %y : tensor<64x32xf32>
}`, false, true},
		{"a value used twice", `func.func @f(%a: tensor<64x96xf32>, %b: tensor<96x32xf32>) -> tensor<64x32xf32> {
  %c = graph.matmul %a, %b : (tensor<64x96xf32>, tensor<96x32xf32>) -> tensor<64x32xf32>
  %s = graph.sigmoid %c : tensor<64x32xf32>
  %y = graph.mul %c, %s : tensor<64x32xf32>
  return %y : tensor<64x32xf32>
}`, false, false},
		{"two results", `func.func @f(%a: tensor<64x96xf32>, %b: tensor<96x32xf32>) -> (tensor<64x32xf32>, tensor<64x32xf32>) {
  %c = graph.matmul %a, %b : (tensor<64x96xf32>, tensor<96x32xf32>) -> tensor<64x32xf32>
  %y = graph.silu %c : tensor<64x32xf32>
  return %c, %y : tensor<64x32xf32>, tensor<64x32xf32>
}`, false, false},
		{"an op computed per row", `func.func @f(%a: tensor<32x32xf32>, %b: tensor<32x32xf32>, %sc: tensor<32x1xf32>) -> tensor<32x32xf32> {
  %c = graph.matmul %a, %b : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  %e = graph.exp %sc : tensor<32x1xf32>
  %y = graph.mul %c, %e : (tensor<32x32xf32>, tensor<32x1xf32>) -> tensor<32x32xf32>
  return %y : tensor<32x32xf32>
}`, false, false},
		{"a broadcast over rows of a [1, N] operand", `func.func @f(%a: tensor<2x32x32xf32>, %b: tensor<2x32x32xf32>, %w: tensor<1x32x32xf32>) -> tensor<2x32x32xf32> {
  %c = graph.matmul %a, %b : (tensor<2x32x32xf32>, tensor<2x32x32xf32>) -> tensor<2x32x32xf32>
  %y = graph.add %c, %w : (tensor<2x32x32xf32>, tensor<1x32x32xf32>) -> tensor<2x32x32xf32>
  return %y : tensor<2x32x32xf32>
}`, false, false},
		{"a comparison", `func.func @f(%a: tensor<32x32xf32>, %b: tensor<32x32xf32>, %z: tensor<32x32xf32>) -> tensor<32x32xf32> {
  %c = graph.matmul %a, %b : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  %y = graph.max %c, %z : tensor<32x32xf32>
  return %y : tensor<32x32xf32>
}`, false, false},
		{"two biased dot products", `func.func @f(%x: tensor<64x96xbf16>, %wg: tensor<32x96xbf16>, %wu: tensor<32x96xbf16>, %bg: tensor<32xbf16>, %bu: tensor<32xbf16>) -> tensor<64x32xbf16> {
  %g = graph.matmul %x, %wg {transpose_b = true} : (tensor<64x96xbf16>, tensor<32x96xbf16>) -> tensor<64x32xbf16>
  %u = graph.matmul %x, %wu {transpose_b = true} : (tensor<64x96xbf16>, tensor<32x96xbf16>) -> tensor<64x32xbf16>
  %gb = graph.add %g, %bg : (tensor<64x32xbf16>, tensor<32xbf16>) -> tensor<64x32xbf16>
  %ub = graph.add %u, %bu : (tensor<64x32xbf16>, tensor<32xbf16>) -> tensor<64x32xbf16>
  %s = graph.silu %gb : tensor<64x32xbf16>
  %y = graph.mul %s, %ub : tensor<64x32xbf16>
  return %y : tensor<64x32xbf16>
}`, false, false},
		{"exact rounding", `func.func @f(%a: tensor<64x96xbf16>, %b: tensor<32x96xbf16>) -> tensor<64x32xbf16> {
  %c = graph.matmul %a, %b {transpose_b = true} : (tensor<64x96xbf16>, tensor<32x96xbf16>) -> tensor<64x32xbf16>
  %y = graph.silu %c : tensor<64x32xbf16>
  return %y : tensor<64x32xbf16>
}`, true, false},
	} {
		for _, tgName := range []string{"blackhole-p150", "wormhole-n300"} {
			tg, err := target.Lookup(tgName)
			require.NoError(t, err)
			m, err := parser.Parse("input.tir", c.src)
			require.NoError(t, err)
			p, err := ir.ParsePipeline(graphPipeline + ",lower-to-loops,sram-alloc")
			require.NoError(t, err)
			pm := &ir.PassManager{Pipeline: p, VerifyEach: true}
			require.NoError(t, pm.Run(m, &ir.PassContext{Diags: &ir.Diagnostics{}, Target: tg, ExactRounding: c.exact}), c.name)
			out, err := Emit(m, Options{Target: tg})
			require.NoError(t, err, "%s on %s", c.name, tgName)
			if c.fused {
				require.Len(t, out.Program.Kernels, 1, "%s on %s: the epilogue joins the matmul kernel", c.name, tgName)
			} else {
				require.Greater(t, len(out.Program.Kernels), 1, "%s on %s: the epilogue stays apart", c.name, tgName)
			}
		}
	}
}
