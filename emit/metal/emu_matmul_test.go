package metal_test

import (
	"fmt"
	"math"
	"math/big"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	geval "github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/dialects/loop"
	leval "github.com/tensorforge/tensorforge/dialects/loop/eval"
	"github.com/tensorforge/tensorforge/ir"
)

// matmulLinear are the functions of testdata/matmul.tir whose results are
// linear in each dot product (the matmul, then a bias, a residual, a
// per-channel scale or casts), with the sizes of their K: they are held
// to the bound of an f32 sum over K in any order.
var matmulLinear = map[string]int64{
	"mm_f32": 45, "mm_bf16": 45, "mm_even": 64, "mm_tb_f16": 70, "bmm_bias": 20, "bmm_broadcast": 40,
	"residual": 48, "w8": 64, "f8": 24,
}

// matmulGeneric are the functions whose kernel the tiled form does not
// take (int8 x int8 accumulated in int32).
var matmulGeneric = map[string]bool{"w8a8": true}

// TestEmulatedMatMul runs the matmuls of testdata/matmul.tir, tiled with
// simdgroup_float8x8 (emit/metal/matmul.go), on the emulation:
//
//   - on the input sets of TestEmulatedKernels (random with 5 rows for
//     `?`, the same with 65 threads, which leaves two whole simdgroups
//     taking two quarters of the tile each and a partial one that only
//     stages, and extreme values: ±inf, NaN, ±1e30, subnormals, the range
//     ends in the operands), against the loop and graph interpreters;
//
//   - on random inputs with 37 rows for `?` (two tiles of rows, the
//     second partial) and 96 threads (three simdgroups, the first taking
//     two quarters), against the loop interpreter within emuULPs and, for
//     the functions linear in their dot products, against the exact
//     result (float64) within
//
//     |got - exact| <= K * 2^-23 * mag + 3 ULP(mag),
//
//     mag being the function evaluated on the magnitudes of its inputs
//     (the sum of |a * b| over K, plus |bias|...). K * 2^-23 is twice
//     the first-order bound K * 2^-24 of an f32 sum of K terms in any
//     order, which is what a device that sums the 8 x 8 blocks in its own
//     order may do; the ULPs are the roundings of the result type (a bf16
//     matmul rounded before its epilogue, the epilogue, the store). The
//     emulation sums each element in k order, as the loop IR does, so it
//     is in fact far closer.
//
// It also checks which kernels are tiled, and their descriptions.
func TestEmulatedMatMul(t *testing.T) {
	bin, progs, _ := sharedHarness(t)
	var p *emuProgram
	for _, q := range progs {
		if q.name == "matmul/O2" {
			p = q
		}
	}
	require.NotNil(t, p, "testdata/matmul.tir is not among the programs")
	tiled := os.Getenv("TENSORFORGE_TILED_MATMUL") != "0" // (=0: every matmul is generic)
	for _, k := range p.prog.Kernels {
		if !tiled {
			assert.Nil(t, k.MatMul, "%s is not tiled", k.Name)
			continue
		}
		fn := strings.TrimSuffix(k.Name, "_k0")
		if matmulGeneric[fn] {
			assert.Nil(t, k.MatMul, "%s is not tiled", k.Name)
			continue
		}
		require.NotNil(t, k.MatMul, "%s is tiled", k.Name)
		assert.Equal(t, "matmul", k.Kind, k.Name)
		assert.Equal(t, 32, k.MatMul.TileM, k.Name)
		assert.Equal(t, 32, k.MatMul.MinThreads, k.Name)
		assert.Equal(t, int64(4096*(1+k.MatMul.Dots)), k.ThreadgroupMemoryBytes, k.Name)
	}
	for _, f := range p.prog.Functions {
		for _, l := range f.Launches {
			if tiled && !matmulGeneric[f.Name] {
				assert.Equal(t, "128", l.ThreadsPerThreadgroup, f.Name)
			}
		}
	}
	for _, fn := range p.graph.Funcs() {
		t.Run(fn.SymName(), func(t *testing.T) {
			t.Parallel()
			diffFunction(t, bin, p, fn)
			diffMatMulRows(t, bin, p, fn)
		})
	}
}

// diffMatMulRows runs fn with 37 rows for `?` on 96 threads (see
// TestEmulatedMatMul).
func diffMatMulRows(t *testing.T, bin string, p *emuProgram, fn ir.Func) {
	name := fn.SymName()
	what := fmt.Sprintf("%s @%s, 37 rows, 96 threads", p.name, name)
	desc := p.prog.Description(name+".metal", name)
	require.Len(t, desc.Functions, 1)
	in, err := geval.RandomInputs(fn, 11, 1, 37)
	require.NoError(t, err, what)
	loopWant, err := leval.Run(p.lowered, name, clone(in))
	require.NoError(t, err, what)
	var shapes [][]int64
	for _, w := range loopWant {
		shapes = append(shapes, w.Shape)
	}
	lf, ok := p.lowered.Lookup(name)
	require.True(t, ok, what)
	opts := runOptions{threads: func(n int64) int64 { return min(n, 96) }, updated: loop.WrittenInputs(lf, loop.KernelsOf(p.lowered))}
	got, err := runFunction(bin, t.TempDir(), p.ns, desc, desc.Functions[0], clone(in), shapes, opts)
	require.NoError(t, err, what)
	exact, err := geval.Run(fn, clone(in), geval.Options{F64: true})
	require.NoError(t, err, what)
	same := 0
	total := 0
	for r := range got {
		compare(t, fmt.Sprintf("%s, result %d vs the loop interpreter", what, r), loopWant[r], exact[r], got[r], emuULPs, false)
		for i := range got[r].Data {
			total++
			if got[r].Data[i] == loopWant[r].Data[i] {
				same++
			}
		}
	}
	t.Logf("%s: %d of %d elements equal to the loop interpreter's", what, same, total)
	K, linear := matmulLinear[name]
	if !linear {
		return
	}
	// the function on the magnitudes of its inputs bounds every sum
	abs := clone(in)
	for _, x := range abs {
		for i, v := range x.Data {
			x.Data[i] = math.Abs(v)
		}
	}
	mag, err := geval.Run(fn, abs, geval.Options{F64: true})
	require.NoError(t, err, what)
	for r := range got {
		var bad []string
		worst := 0.0
		for i, g := range got[r].Data {
			e, m := exact[r].Data[i], mag[r].Data[i]
			bound := float64(K)*math.Ldexp(m, -23) + 3*ulpAt(m, got[r].Elem)
			worst = max(worst, math.Abs(g-e)/bound)
			if !(math.Abs(g-e) <= bound) && len(bad) < 6 {
				bad = append(bad, fmt.Sprintf("[%d] exact %v got %v (bound %v)", i, e, g, bound))
			}
		}
		require.Empty(t, bad, "%s, result %d against float64: %s", what, r, strings.Join(bad, "; "))
		t.Logf("%s, result %d: the largest error is %.3f of the bound", what, r, worst)
	}
}

// TestMatMulNumericsExtremes checks what the tiled form computes with
// infinities and NaN in an operand, where the result is defined: a row of
// A holding +inf against a positive column of B gives +inf, against a
// column holding both signs NaN, a NaN anywhere in a row gives NaN in
// that row, a product past the f32 range is infinite; the elements beside
// stay finite and exact (sums of small integers).
func TestMatMulNumericsExtremes(t *testing.T) {
	bin, progs, _ := sharedHarness(t)
	var p *emuProgram
	for _, q := range progs {
		if q.name == "matmul/O2" {
			p = q
		}
	}
	require.NotNil(t, p)
	a := geval.NewTensor(ir.F32, []int64{37, 45})
	b := geval.NewTensor(ir.F32, []int64{45, 29})
	for i := range a.Data {
		a.Data[i] = float64(i%7) - 3
	}
	for i := range b.Data {
		b.Data[i] = float64(i%5) - 2
	}
	// column 0 of B positive, column 1 of both signs
	for k := 0; k < 45; k++ {
		b.Data[k*29] = 1
		b.Data[k*29+1] = float64(1 - 2*(k%2))
	}
	a.Data[3*45+43] = math.Inf(1) // row 3, the last two k (in the second tile of K)
	a.Data[3*45+44] = math.Inf(1)
	a.Data[36*45+0] = math.NaN() // row 36, the last row (in the partial tile of rows)
	a.Data[5*45+10] = 1e30       // row 5: large, finite products
	b.Data[10*29+2] = 1e30
	desc := p.prog.Description("mm_f32.metal", "mm_f32")
	got, err := runFunction(bin, t.TempDir(), p.ns, desc, desc.Functions[0], []*geval.Tensor{a, b}, [][]int64{{37, 29}},
		runOptions{threads: func(n int64) int64 { return n }})
	require.NoError(t, err)
	y := got[0].Data
	at := func(i, j int) float64 { return y[i*29+j] }
	assert.True(t, math.IsInf(at(3, 0), 1), "inf * 1 summed: +inf, got %v", at(3, 0))
	assert.True(t, math.IsNaN(at(3, 1)), "inf * -1 + inf * 1: NaN, got %v", at(3, 1))
	for j := 0; j < 29; j++ {
		assert.True(t, math.IsNaN(at(36, j)), "a NaN in row 36 reaches column %d: got %v", j, at(36, j))
	}
	assert.True(t, math.IsInf(at(5, 2), 1), "1e30 * 1e30, past the f32 range: +inf, got %v", at(5, 2))
	// elsewhere: the serial f32 fused multiply-adds over k in order, each
	// rounded once (what the emulation computes; a device sums an 8 x 8
	// block in its own order)
	for i := 0; i < 37; i++ {
		for j := 0; j < 29; j++ {
			if i == 3 || i == 36 || (i == 5 && j == 2) {
				continue
			}
			acc := float32(0)
			for k := 0; k < 45; k++ {
				acc = fma32(float32(a.Data[i*45+k]), float32(b.Data[k*29+j]), acc)
			}
			require.Equal(t, float64(acc), at(i, j), "[%d, %d]", i, j)
			require.False(t, math.IsNaN(at(i, j)) || math.IsInf(at(i, j), 0), "[%d, %d] = %v", i, j, at(i, j))
		}
	}
}

// fma32 is a * b + c rounded once to float32 (finite operands).
func fma32(a, b, c float32) float32 {
	x := new(big.Float).SetPrec(200).SetFloat64(float64(a))
	x.Mul(x, new(big.Float).SetPrec(200).SetFloat64(float64(b)))
	x.Add(x, new(big.Float).SetPrec(200).SetFloat64(float64(c)))
	f, _ := x.Float32()
	return f
}
