package ptx

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	geval "github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/parser"
)

// int8File holds the int8 matmuls (its comment says which).
const int8File = "testdata/int8/matmuls.tir"

// int8Src reads int8File.
func int8Src(t *testing.T) string { return readSrc(t, int8File) }

// TestInt8Form checks the forms of matmuls of 8-bit integers summed in
// i32: `?` rows take the wgmma form (m64nNk32 s8) with the decode form's
// twins (mma.sync.m16n8k32), static rows of a few take the decode form,
// TENSORFORGE_PTX_MMA=sync the 128-row mma.sync form; u8 operands name
// their type; an odd K and a weight [k, n] keep the loops with the reason.
func TestInt8Form(t *testing.T) {
	files := emitFiles(t, int8Src(t))
	for fn, want := range map[string]string{
		"a8":      "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8",
		"k200":    "mma.sync.aligned.m16n8k32.row.col.s32.s8.u8.s32",
		"requant": "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8",
		"two":     "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32",
		"u8s8":    "mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32",
	} {
		text := files[fn+".ptx"]
		checkText(t, fn, text)
		assert.Contains(t, text, want, fn)
		assert.Contains(t, text, "s32 accumulators", fn)
		assert.Contains(t, text, "// Int8 form: K is counted in pairs of bytes", fn)
		assert.NotContains(t, text, "scalar loops", fn)
	}
	assert.Contains(t, files["u8s8.ptx"], "decode form: CTA tile 16 x 64 x 128")
	assert.NotContains(t, files["u8s8.ptx"], "_m16")
	for _, fn := range []string{"a8", "k200", "requant", "two"} {
		assert.Regexp(t, fmt.Sprintf(`(?s)    if _rows_%[1]s_k0\(sm, [^\n]*\) <= 16:\n        _launch_mm\(fns, "%[1]s_k0_m16", `, fn), files[fn+".py"], fn)
	}
	assert.Contains(t, files["two.ptx"], "2 dot product(s)")
	// split-K's parts add in s32
	assert.Contains(t, files["a8.ptx"], "ld.global.v4.s32")
	assert.Contains(t, files["a8.ptx"], "add.s32")
	for fn, why := range map[string]string{
		"odd": "Matmul as scalar loops, not on tensor cores: it multiplies 8-bit integers over K = 99, which is odd; the int8 form reads pairs of bytes.",
		"kn":  "Matmul as scalar loops, not on tensor cores: its right operand is i8 as [k, n]; the int8 form reads [n, k] (transpose_b).",
	} {
		assert.Contains(t, files[fn+".ptx"], why, fn)
		assert.NotContains(t, files[fn+".ptx"], "mma.sync", fn)
	}
	defer func(old bool) { WGMMA = old }(WGMMA)
	WGMMA = false
	sync := emitFiles(t, int8Src(t))
	text := sync["a8.ptx"]
	checkText(t, "a8", text)
	assert.Contains(t, text, "// Matmul on tensor cores: CTA tile 128 x 128 x 64, 128 threads (4 warps, 2 x 2, warp tile 64 x 64), mma.sync.m16n8k32 s8 x s8, s32 accumulators.")
	assert.NotContains(t, text, "wgmma")
}

// TestSimulatedInt8 runs the int8 forms in the simulator against the loop
// interpreter. The sums are exact in i32 on both sides and the epilogues
// the same f32 operations, so every result must be bit for bit the
// interpreter's: 1 to 33 rows (the decode twins), 130 (the wgmma form,
// a partial tile of rows and two of columns), the 128-row mma.sync form,
// K of 200 (a step and a partial one, rows not 16-byte aligned: 2-byte
// copies), u8 operands, two dot products, a requantizing epilogue, the
// kernels left to the loops, a batch of u8 weights, and split-K in 3 parts
// in both CTA orders.
func TestSimulatedInt8(t *testing.T) {
	src := int8Src(t)
	m := lower(t, src, fullPipeline, "h200")
	g, err := parser.Parse("test.tir", src)
	require.NoError(t, err)
	var ran []string
	simTwins = &ran
	defer func() { simTwins = nil }()
	cases := []mmCase{
		{"a8", 1, 256, false}, {"a8", 16, 256, false}, {"a8", 17, 256, false}, {"a8", 130, 256, false},
		{"u8s8", 5, 512, false},
		{"k200", 3, 200, false}, {"k200", 70, 200, false},
		{"requant", 9, 384, false}, {"requant", 40, 384, false},
		{"two", 2, 320, false}, {"two", 40, 320, false},
		{"odd", 3, 99, false}, {"kn", 3, 128, false},
		{"batched", 5, 128, false}, {"batched", 40, 128, false},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%d", c.fn, c.rows), func(t *testing.T) {
			checkExact(t, m, g, c, 0)
		})
	}
	assert.Equal(t, []string{
		"a8_k0_m16", "a8_k0_m16", "a8_k0_m32", "a8_k0", "u8s8_k0",
		"k200_k0_m16", "k200_k0",
		"requant_k0_m16", "requant_k0",
		"two_k0_m16", "two_k0",
		"odd_k0", "kn_k0",
		"batched_k0_m16", "batched_k0",
	}, ran)
	t.Run("sync", func(t *testing.T) {
		defer func(old bool) { WGMMA = old }(WGMMA)
		WGMMA = false
		m := lower(t, src, fullPipeline, "h200")
		for _, c := range []mmCase{{"a8", 130, 256, false}, {"two", 40, 320, false}, {"k200", 70, 200, false}} {
			checkExact(t, m, g, c, 0)
		}
	})
	for _, c := range []mmCase{{"a8", 4, 256, false}, {"requant", 40, 384, false}, {"u8s8", 5, 512, false}} {
		t.Run(fmt.Sprintf("%s/%d/split3", c.fn, c.rows), func(t *testing.T) {
			checkExact(t, m, g, c, 3)
		})
	}
}

// checkExact runs case c in the simulator (split-K in split parts, in
// both CTA orders, where split > 1) and the loop interpreter, and checks
// that every result is the same value.
func checkExact(t *testing.T, m, g ir.Module, c mmCase, split int64) {
	t.Helper()
	gf, ok := g.Lookup(c.fn)
	require.True(t, ok)
	in := matmulInputs(gf, c.rows, 11)
	want := reference(t, m, c.fn, in)
	orders := []bool{false}
	if split > 1 {
		orders = append(orders, true)
	}
	defer func() { simSplitK, simReverseCTAs = 0, false }()
	for _, rev := range orders {
		simSplitK, simReverseCTAs = split, rev
		got, err := simRunFunc(m, c.fn, cloneTensors(in))
		require.NoError(t, err)
		for r := range want {
			var bad []string
			nonzero := 0
			for i, x := range want[r].Data {
				y := got[r].Data[i]
				if x != 0 {
					nonzero++
				}
				if !(x == y || math.IsNaN(x) && math.IsNaN(y)) && len(bad) < 6 {
					bad = append(bad, fmt.Sprintf("[%d] interpreted %v simulated %v", i, x, y))
				}
			}
			assert.Empty(t, bad, "%s rows %d result %d split %d reversed %v: %s", c.fn, c.rows, r, split, rev, strings.Join(bad, "; "))
			assert.Greater(t, nonzero, len(want[r].Data)/2, "%s: most results are not 0", c.fn)
		}
	}
}

// cloneTensors copies in.
func cloneTensors(in []*geval.Tensor) []*geval.Tensor {
	var out []*geval.Tensor
	for _, x := range in {
		y := geval.NewTensor(x.Elem, x.Shape)
		copy(y.Data, x.Data)
		out = append(out, y)
	}
	return out
}
