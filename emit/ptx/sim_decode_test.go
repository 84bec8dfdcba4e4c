package ptx

import (
	"fmt"
	"math/rand"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/parser"
)

// decodeSrc holds matmuls of few rows for the decode form (decode.go):
// rows `?` (the twin) and static (the form itself), N past a tile of 64
// (136), K of 1 to 5 steps and K = 200 (the clamped copies), K = 40 (A
// and B rows not 16-byte aligned: the 2-byte copies), two dot products
// with SwiGLU, a bias, and grouped-query attention's scores at a decode
// step (a batch of one-row matrices, the keys broadcast to the heads);
// @d_kn's B is [k, n] (ldmatrix.trans of 64-column rows).
const decodeSrc = `
func.func @d_tb(%x: tensor<?x192xbf16>, %w: tensor<136x192xbf16>) -> tensor<?x136xbf16> {
  %y = graph.matmul %x, %w {transpose_b = true} : (tensor<?x192xbf16>, tensor<136x192xbf16>) -> tensor<?x136xbf16>
  return %y : tensor<?x136xbf16>
}
func.func @d_k512(%x: tensor<?x512xbf16>, %w: tensor<136x512xbf16>) -> tensor<?x136xbf16> {
  %y = graph.matmul %x, %w {transpose_b = true} : (tensor<?x512xbf16>, tensor<136x512xbf16>) -> tensor<?x136xbf16>
  return %y : tensor<?x136xbf16>
}
func.func @d_k200(%x: tensor<?x200xbf16>, %w: tensor<72x200xbf16>, %b: tensor<72xbf16>) -> tensor<?x72xbf16> {
  %m = graph.matmul %x, %w {transpose_b = true} : (tensor<?x200xbf16>, tensor<72x200xbf16>) -> tensor<?x72xbf16>
  %y = graph.add %m, %b : (tensor<?x72xbf16>, tensor<72xbf16>) -> tensor<?x72xbf16>
  return %y : tensor<?x72xbf16>
}
func.func @d_k40(%x: tensor<?x40xf16>, %w: tensor<70x40xf16>) -> tensor<?x70xf16> {
  %y = graph.matmul %x, %w {transpose_b = true} : (tensor<?x40xf16>, tensor<70x40xf16>) -> tensor<?x70xf16>
  return %y : tensor<?x70xf16>
}
func.func @d_swiglu(%x: tensor<?x320xbf16>, %wg: tensor<40x320xbf16>, %wu: tensor<40x320xbf16>) -> tensor<?x40xbf16> {
  %g = graph.matmul %x, %wg {transpose_b = true} : (tensor<?x320xbf16>, tensor<40x320xbf16>) -> tensor<?x40xbf16>
  %u = graph.matmul %x, %wu {transpose_b = true} : (tensor<?x320xbf16>, tensor<40x320xbf16>) -> tensor<?x40xbf16>
  %s = graph.silu %g : tensor<?x40xbf16>
  %y = graph.mul %s, %u : tensor<?x40xbf16>
  return %y : tensor<?x40xbf16>
}
func.func @d_rows3(%x: tensor<3x128xbf16>, %w: tensor<200x128xbf16>) -> tensor<3x200xbf16> {
  %y = graph.matmul %x, %w {transpose_b = true} : (tensor<3x128xbf16>, tensor<200x128xbf16>) -> tensor<3x200xbf16>
  return %y : tensor<3x200xbf16>
}
func.func @d_rows17(%x: tensor<17x128xbf16>, %w: tensor<200x128xbf16>) -> tensor<17x200xbf16> {
  %y = graph.matmul %x, %w {transpose_b = true} : (tensor<17x128xbf16>, tensor<200x128xbf16>) -> tensor<17x200xbf16>
  return %y : tensor<17x200xbf16>
}
func.func @d_gqa(%q: tensor<8x1x64xbf16>, %k: tensor<2x1x72x64xbf16>, %mask: tensor<1x72xbf16>) -> tensor<8x1x72xbf16> {
  %kb = graph.broadcast_to %k : (tensor<2x1x72x64xbf16>) -> tensor<2x4x72x64xbf16>
  %kh = graph.reshape %kb : (tensor<2x4x72x64xbf16>) -> tensor<8x72x64xbf16>
  %s = graph.matmul %q, %kh {transpose_b = true} : (tensor<8x1x64xbf16>, tensor<8x72x64xbf16>) -> tensor<8x1x72xbf16>
  %y = graph.add %s, %mask : (tensor<8x1x72xbf16>, tensor<1x72xbf16>) -> tensor<8x1x72xbf16>
  return %y : tensor<8x1x72xbf16>
}
func.func @d_kn(%x: tensor<?x128xbf16>, %w: tensor<128x136xbf16>) -> tensor<?x136xbf16> {
  %y = graph.matmul %x, %w : (tensor<?x128xbf16>, tensor<128x136xbf16>) -> tensor<?x136xbf16>
  return %y : tensor<?x136xbf16>
}
`

// TestDecodeForm checks which kernels take the decode form: static rows
// of at most 32 per matrix take it alone (tiles of 16 rows up to 16, of
// 32 beyond); `?` rows keep their kernel and gain the 16- and 32-row
// twins, which the launcher takes for 16 rows or fewer and for 17 to 32
// (`_rows_<entry>`, before the wide wgmma kernel's own choice).
func TestDecodeForm(t *testing.T) {
	files := emitFiles(t, decodeSrc)
	// the K of a stage: TCDecodeBK (128) where it divides K in two steps
	// or more, else halved down to 64
	for fn, bk := range map[string]int{"d_tb": 64, "d_k512": 128, "d_k200": 64, "d_k40": 64, "d_swiglu": 64, "d_rows3": 64, "d_gqa": 64, "d_kn": 64} {
		text := files[fn+".ptx"]
		checkText(t, fn, text)
		form := fmt.Sprintf("// Matmul on tensor cores, decode form: CTA tile 16 x 64 x %d, 128 threads (4 warps side by side, warp tile 16 x 16), mma.sync.m16n8k16", bk)
		assert.Equal(t, 1, strings.Count(text, form), fn)
		_, err := parseSim(text)
		require.NoError(t, err, fn)
	}
	for _, fn := range []string{"d_rows3", "d_gqa"} {
		assert.NotContains(t, files[fn+".ptx"], decodeSuffix(16), fn)
		assert.NotContains(t, files[fn+".py"], "_rows_", fn)
		assert.NotContains(t, files[fn+".ptx"], "wgmma", fn)
	}
	for _, fn := range []string{"d_tb", "d_k512", "d_k200", "d_k40", "d_swiglu", "d_kn"} {
		assert.Contains(t, files[fn+".ptx"], ".visible .entry "+fn+"_k0"+decodeSuffix(16)+"(", fn)
		assert.Contains(t, files[fn+".ptx"], "// The 16-row twin of the kernel above: the launcher takes it for 16 rows or fewer.", fn)
		assert.Contains(t, files[fn+".py"], fmt.Sprintf("    if _rows_%s_k0(sm, ", fn), fn)
		assert.Contains(t, files[fn+".py"], fmt.Sprintf(`_launch_mm(fns, "%s_k0%s", _grid_%s_k0%s(sm, `, fn, decodeSuffix(16), fn, decodeSuffix(16)), fn)
	}
	// d_tb's wide wgmma kernel keeps its 128-column twin, chosen after
	// the rows: three kernels, three branches
	assert.Contains(t, files["d_tb.ptx"], ".visible .entry d_tb_k0"+wgTwinSuffix+"(")
	assert.Regexp(t, `(?s)    if _rows_d_tb_k0\(sm, [^\n]*\) <= 16:\n        _launch_mm\(fns, "d_tb_k0_m16".*\n    elif _rows_d_tb_k0\(sm, [^\n]*\) <= 32:\n        _launch_mm\(fns, "d_tb_k0_m32".*\n    elif _grid_d_tb_k0\(sm, [^\n]*\) >= sm:\n        _launch_mm\(fns, "d_tb_k0",.*\n    else:\n        _launch_mm\(fns, "d_tb_k0_n128"`, files["d_tb.py"])
	// two dot products: 8 accumulators each, 4 k-steps of 2 mma.sync each
	// per stage in each of the two kernels' forms
	assert.Contains(t, files["d_swiglu.ptx"], "2 dot product(s)")
	assert.Contains(t, files["d_kn.ptx"], "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16")
	// 17 static rows: 32-row tiles (two mma.sync tiles a warp)
	assert.Contains(t, files["d_rows17.ptx"], "decode form: CTA tile 32 x 64 x 64, 128 threads (4 warps side by side, warp tile 32 x 16)")
	assert.NotContains(t, files["d_rows17.ptx"], decodeSuffix(16))
	// the stages: K's steps plus one, at most 8 and as many as let two
	// CTAs share an SM: of 11520 bytes at BK = 64 (A 16 x 144, B 64 x 144),
	// 4 for K = 192 and 3 for K = 128 (BK 64: two steps); of 21760 at BK =
	// 128 (rows of 272 bytes), 5 for K = 512; two dot products at 64, 5 of
	// 20736 for K = 320 (6 steps)
	assert.Contains(t, files["d_tb.py"], `("d_tb_k0_m16", 128, 46080)`)
	assert.Contains(t, files["d_rows3.py"], `("d_rows3_k0", 128, 34560)`)
	assert.Contains(t, files["d_k512.py"], `("d_k512_k0_m16", 128, 108800)`)
	assert.NotContains(t, files["d_tb.py"], "_rows_d_tb_k0_n128")
	assert.Contains(t, files["d_swiglu.py"], `("d_swiglu_k0_m16", 128, 103680)`)
	// switched off: no twin
	old := TCDecode
	TCDecode = false
	defer func() { TCDecode = old }()
	off := emitFiles(t, decodeSrc)
	for _, fn := range []string{"d_tb", "d_rows3", "d_gqa"} {
		assert.NotContains(t, off[fn+".ptx"], "decode form", fn)
		assert.NotContains(t, off[fn+".py"], "_rows_", fn)
	}
}

// TestSimulatedDecode runs the decode form in the simulator against the
// loop interpreter within TestSimulatedMatMul's bound (K * 2^-23 *
// sum |a b| before the result's rounding): 1, 5 and 16 rows of the `?`
// kernels (the twin), 17 rows (the other kernel: the twin is not
// launched), the static 3-row and attention kernels, split-K forced into
// 3 parts with the CTAs run in both orders (the same bits), and inf and
// NaN where the inputs put them.
func TestSimulatedDecode(t *testing.T) {
	for _, bk := range []int64{64, 256} {
		// the other stage widths (K = 512: 8 steps of 64, 2 of 256; K =
		// 128: 2 of 64 either way)
		t.Run(fmt.Sprintf("bk%d", bk), func(t *testing.T) {
			defer func(old int64) { TCDecodeBK = old }(TCDecodeBK)
			TCDecodeBK = bk
			m := lower(t, decodeSrc, fullPipeline, "h200")
			g, err := parser.Parse("test.tir", decodeSrc)
			require.NoError(t, err)
			for _, c := range []mmCase{{"d_k512", 5, 512, true}, {"d_k512", 16, 512, true}, {"d_rows3", 3, 128, true}} {
				t.Run(fmt.Sprintf("%s/%d", c.fn, c.rows), func(t *testing.T) {
					checkMatMul(t, m, g, c)
				})
			}
		})
	}
	m := lower(t, decodeSrc, fullPipeline, "h200")
	g, err := parser.Parse("test.tir", decodeSrc)
	require.NoError(t, err)
	var ran []string
	simTwins = &ran
	defer func() { simTwins = nil }()
	cases := []mmCase{
		{"d_tb", 1, 192, true}, {"d_tb", 5, 192, true}, {"d_tb", 16, 192, true}, {"d_tb", 17, 192, true},
		{"d_k512", 1, 512, true}, {"d_k512", 11, 512, true},
		{"d_k200", 5, 200, false}, {"d_k40", 16, 40, true}, {"d_k40", 1, 40, true},
		{"d_swiglu", 5, 320, false}, {"d_swiglu", 1, 320, false},
		{"d_rows3", 3, 128, true}, {"d_gqa", 1, 64, false},
		{"d_kn", 1, 128, true}, {"d_kn", 16, 128, true}, {"d_kn", 17, 128, true},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%d", c.fn, c.rows), func(t *testing.T) {
			checkMatMul(t, m, g, c)
		})
	}
	assert.Equal(t, []string{
		"d_tb_k0_m16", "d_tb_k0_m16", "d_tb_k0_m16", "d_tb_k0_m32",
		"d_k512_k0_m16", "d_k512_k0_m16",
		"d_k200_k0_m16", "d_k40_k0_m16", "d_k40_k0_m16",
		"d_swiglu_k0_m16", "d_swiglu_k0_m16",
		"d_rows3_k0", "d_gqa_k0",
		"d_kn_k0_m16", "d_kn_k0_m16", "d_kn_k0_m32",
	}, ran)
	for _, c := range []mmCase{{"d_tb", 5, 192, true}, {"d_k512", 16, 512, true}, {"d_swiglu", 16, 320, false}, {"d_gqa", 1, 64, false}, {"d_kn", 9, 128, true}} {
		t.Run(fmt.Sprintf("%s/%d/split3", c.fn, c.rows), func(t *testing.T) {
			checkMatMulSplit(t, m, g, c, 3)
		})
	}
}

// TestSimulatedDecodeRandom runs the decode form on matmuls of random
// shapes against the loop interpreter, within TestSimulatedMatMul's bound:
// K of 1 to 300 (every BK, the clamped and the 2-byte copies), N of 1 to
// 200 (a last tile of any width), 1 to 16 rows, bf16 and f16, a batch of
// matrices with a weight each, a bias epilogue, and B as [k, n].
func TestSimulatedDecodeRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	var src strings.Builder
	var cases []mmCase
	for i := 0; i < 16; i++ {
		k, n, m := 1+rng.Int63n(300), 1+rng.Int63n(200), 1+rng.Int63n(16)
		typ := []string{"bf16", "f16"}[rng.Intn(2)]
		fn := fmt.Sprintf("r%d", i)
		switch i % 4 {
		case 0: // one matrix, `?` rows
			fmt.Fprintf(&src, `func.func @%s(%%x: tensor<?x%dx%s>, %%w: tensor<%dx%dx%s>) -> tensor<?x%dx%s> {
  %%y = graph.matmul %%x, %%w {transpose_b = true} : (tensor<?x%dx%s>, tensor<%dx%dx%s>) -> tensor<?x%dx%s>
  return %%y : tensor<?x%dx%s>
}
`, fn, k, typ, n, k, typ, n, typ, k, typ, n, k, typ, n, typ, n, typ)
			cases = append(cases, mmCase{fn, m, k, true})
		case 1: // a batch of 3 static-row matrices, a weight each
			fmt.Fprintf(&src, `func.func @%s(%%x: tensor<3x%dx%dx%s>, %%w: tensor<3x%dx%dx%s>) -> tensor<3x%dx%dx%s> {
  %%y = graph.matmul %%x, %%w {transpose_b = true} : (tensor<3x%dx%dx%s>, tensor<3x%dx%dx%s>) -> tensor<3x%dx%dx%s>
  return %%y : tensor<3x%dx%dx%s>
}
`, fn, m, k, typ, n, k, typ, m, n, typ, m, k, typ, n, k, typ, m, n, typ, m, n, typ)
			cases = append(cases, mmCase{fn, m, k, true})
		case 3: // B [k, n], `?` rows
			fmt.Fprintf(&src, `func.func @%s(%%x: tensor<?x%dx%s>, %%w: tensor<%dx%dx%s>) -> tensor<?x%dx%s> {
  %%y = graph.matmul %%x, %%w : (tensor<?x%dx%s>, tensor<%dx%dx%s>) -> tensor<?x%dx%s>
  return %%y : tensor<?x%dx%s>
}
`, fn, k, typ, k, n, typ, n, typ, k, typ, k, n, typ, n, typ, n, typ)
			cases = append(cases, mmCase{fn, m, k, true})
		default: // a bias, `?` rows
			fmt.Fprintf(&src, `func.func @%s(%%x: tensor<?x%dx%s>, %%w: tensor<%dx%dx%s>, %%b: tensor<%dx%s>) -> tensor<?x%dx%s> {
  %%m = graph.matmul %%x, %%w {transpose_b = true} : (tensor<?x%dx%s>, tensor<%dx%dx%s>) -> tensor<?x%dx%s>
  %%y = graph.add %%m, %%b : (tensor<?x%dx%s>, tensor<%dx%s>) -> tensor<?x%dx%s>
  return %%y : tensor<?x%dx%s>
}
`, fn, k, typ, n, k, typ, n, typ, n, typ, k, typ, n, k, typ, n, typ, n, typ, n, typ, n, typ, n, typ)
			cases = append(cases, mmCase{fn, m, k, false})
		}
	}
	m := lower(t, src.String(), fullPipeline, "h200")
	g, err := parser.Parse("test.tir", src.String())
	require.NoError(t, err)
	files, err := emitted(m)
	require.NoError(t, err)
	for _, f := range files {
		if strings.HasSuffix(f.Name, ".ptx") {
			require.Contains(t, f.Text, "decode form", f.Name)
		}
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%d/K%d", c.fn, c.rows, c.K), func(t *testing.T) {
			checkMatMul(t, m, g, c)
		})
	}
}

// TestSimulatedDecode32 runs the decode form's 32-row tiles (two
// mma.sync tiles a warp): the `?` kernels' `_m32` twin, taken for 17 to
// 32 rows (`_m16` below, the other kernels above); static rows take
// 16-row tiles up to 16 and 32-row tiles beyond; split-K in 3 parts gives
// the same bits in both CTA orders. With TCDecodeMaxRows 16
// (TENSORFORGE_PTX_DECODE_ROWS=16) there is no `_m32` twin and 17 static
// rows keep the other forms.
func TestSimulatedDecode32(t *testing.T) {
	src := decodeSrc + `
func.func @d_rows20(%x: tensor<20x128xbf16>, %w: tensor<200x128xbf16>) -> tensor<20x200xbf16> {
  %y = graph.matmul %x, %w {transpose_b = true} : (tensor<20x128xbf16>, tensor<200x128xbf16>) -> tensor<20x200xbf16>
  return %y : tensor<20x200xbf16>
}
`
	m := lower(t, src, fullPipeline, "h200")
	g, err := parser.Parse("test.tir", src)
	require.NoError(t, err)
	files, err := emitted(m)
	require.NoError(t, err)
	text := map[string]string{}
	for _, f := range files {
		text[f.Name] = f.Text
	}
	assert.Contains(t, text["d_tb.ptx"], ".visible .entry d_tb_k0_m32(")
	assert.Contains(t, text["d_tb.py"], "    elif _rows_d_tb_k0(sm, x_d0, x_d0) <= 32:\n")
	assert.Contains(t, text["d_rows20.ptx"], "decode form: CTA tile 32 x 64")
	assert.Contains(t, text["d_rows3.ptx"], "decode form: CTA tile 16 x 64")
	assert.Contains(t, text["d_rows17.ptx"], "decode form: CTA tile 32 x 64")
	var ran []string
	simTwins = &ran
	defer func() { simTwins = nil }()
	for _, c := range []mmCase{
		{"d_tb", 1, 192, true}, {"d_tb", 32, 192, true}, {"d_tb", 33, 192, true},
		{"d_swiglu", 27, 320, false}, {"d_k512", 21, 512, true}, {"d_rows20", 20, 128, true},
	} {
		t.Run(fmt.Sprintf("%s/%d", c.fn, c.rows), func(t *testing.T) {
			checkMatMul(t, m, g, c)
		})
	}
	assert.Equal(t, []string{"d_tb_k0_m16", "d_tb_k0_m32", "d_tb_k0_n128", "d_swiglu_k0_m32", "d_k512_k0_m32", "d_rows20_k0"}, ran)
	for _, c := range []mmCase{{"d_tb", 30, 192, true}, {"d_swiglu", 19, 320, false}} {
		t.Run(fmt.Sprintf("%s/%d/split3", c.fn, c.rows), func(t *testing.T) {
			checkMatMulSplit(t, m, g, c, 3)
		})
	}
	t.Run("rows16", func(t *testing.T) {
		defer func(old int64) { TCDecodeMaxRows = old }(TCDecodeMaxRows)
		TCDecodeMaxRows = 16
		files := emitFiles(t, src)
		assert.NotContains(t, files["d_tb.ptx"], decodeSuffix(32))
		assert.Contains(t, files["d_tb.py"], "    if _rows_d_tb_k0(sm, x_d0, x_d0) <= 16:\n")
		assert.Contains(t, files["d_tb.py"], "    elif _grid_d_tb_k0(sm, x_d0, x_d0) >= sm:\n")
		assert.NotContains(t, files["d_rows17.ptx"], "decode form")
		assert.Contains(t, files["d_rows3.ptx"], "decode form: CTA tile 16 x 64")
	})
}

// dequantFile holds the dequantizing matmuls (its comment says which).
const dequantFile = "testdata/dequant/matmuls.tir"

// dequantSrc reads dequantFile.
func dequantSrc(t *testing.T) string { return readSrc(t, dequantFile) }

// readSrc reads a program of testdata.
func readSrc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// TestDequantForm checks the forms of dequantizing matmuls: `?` rows
// take the wgmma form, each step converting the weight's bytes into the
// stage's B, in 128 x 128 tiles even where N > 128 (q_i8: no wide tiles,
// which spilled), with the decode form's twins, which the launcher takes for up to 16 and
// 32 rows; static rows of 16 or fewer take the decode form alone; with
// TENSORFORGE_PTX_MMA=sync the 128-row mma.sync form converts fragments
// in registers; K not a multiple of 64 and a weight [k, n] keep the loops
// with a comment that says why.
func TestDequantForm(t *testing.T) {
	files := emitFiles(t, dequantSrc(t))
	for fn, want := range map[string]string{
		"q_i8":     "CTA tile 16 x 64 x 128, 128 threads (4 warps side by side, warp tile 16 x 16), mma.sync.m16n8k16 bf16, f32 accumulators; 1 dot product(s), every B [n, k] i8, copied in its own bytes and converted to bf16 in registers",
		"q_e4":     "CTA tile 16 x 64 x 64, 128 threads (4 warps side by side, warp tile 16 x 16), mma.sync.m16n8k16 bf16, f32 accumulators; 1 dot product(s), every B [n, k] f8E4M3FN",
		"q_e5":     "mma.sync.m16n8k16 f16, f32 accumulators; 1 dot product(s), every B [n, k] f8E5M2",
		"q_u8":     "every B [n, k] ui8, copied in its own bytes and converted to f16",
		"q_swiglu": "2 dot product(s), every B [n, k] i8",
	} {
		text := files[fn+".ptx"]
		checkText(t, fn, text)
		assert.Contains(t, text, "// Matmul on tensor cores, decode form: ", fn)
		assert.Contains(t, text, want, fn)
	}
	assert.NotContains(t, files["q_e5.ptx"], decodeSuffix(16))
	assert.NotContains(t, files["q_e5.ptx"], "wgmma")
	for fn, b := range map[string]string{"q_i8": "i8", "q_e4": "f8E4M3FN", "q_u8": "ui8", "q_swiglu": "i8"} {
		text := files[fn+".ptx"]
		assert.Contains(t, text, "wgmma.mma_async.sync.aligned", fn)
		assert.Contains(t, text, "every B [n, k] "+b+", copied in its own bytes and converted by each step into the stage's", fn)
		assert.Regexp(t, fmt.Sprintf(`(?s)    if _rows_%[1]s_k0\(sm, [^\n]*\) <= 16:\n        _launch_mm\(fns, "%[1]s_k0_m16", .*\n    elif _rows_%[1]s_k0\(sm, [^\n]*\) <= 32:\n        _launch_mm\(fns, "%[1]s_k0_m32", `, fn), files[fn+".py"], fn)
	}
	assert.Contains(t, files["q_i8.ptx"], "CTA tile 128 x 128 x 64, 256 threads (2 warpgroups of 64 x 128)")
	assert.NotContains(t, files["q_i8.ptx"], wgTwinSuffix)
	for fn, why := range map[string]string{
		"q_k96": "Matmul as scalar loops, not on tensor cores: its right operand is i8 and K = 96 is not a multiple of 64.",
		"q_kn":  "Matmul as scalar loops, not on tensor cores: its right operand is i8 as [k, n]; the dequantizing form reads [n, k] (transpose_b).",
	} {
		assert.Contains(t, files[fn+".ptx"], why, fn)
		assert.NotContains(t, files[fn+".ptx"], "mma.sync", fn)
		assert.NotContains(t, files[fn+".py"], "_rows_", fn)
	}
	// mma.sync everywhere: the 128-row form on 8 warps
	defer func(old bool) { WGMMA = old }(WGMMA)
	WGMMA = false
	sync := emitFiles(t, dequantSrc(t))
	for fn, b := range map[string]string{"q_i8": "i8", "q_e4": "f8E4M3FN", "q_u8": "ui8"} {
		text := sync[fn+".ptx"]
		checkText(t, fn, text)
		assert.Contains(t, text, "// Matmul on tensor cores: CTA tile 128 x 128 x 64, 256 threads (8 warps, 2 x 4, warp tile 64 x 32)", fn)
		assert.Contains(t, text, "// Dot product 0: B [n, k] "+b+", copied in its own bytes", fn)
		assert.NotContains(t, text, "wgmma", fn)
	}
}

// TestSimulatedDequant runs the dequantizing forms in the simulator
// against the loop interpreter within TestSimulatedMatMul's bound (the
// conversions are exact): 1 to 32 rows of the decode twins, more of the
// wgmma form (partial tiles, two dot products) and of the 128-row
// mma.sync form, the static decode kernel, the two matmuls
// left to the loops, the decode form's BK of 64, 128 and 256, and split-K
// in 3 parts in both CTA orders (the same bits).
func TestSimulatedDequant(t *testing.T) {
	src := dequantSrc(t)
	m := lower(t, src, fullPipeline, "h200")
	g, err := parser.Parse("test.tir", src)
	require.NoError(t, err)
	var ran []string
	simTwins = &ran
	defer func() { simTwins = nil }()
	cases := []mmCase{
		{"q_i8", 1, 256, false}, {"q_i8", 7, 256, false}, {"q_i8", 16, 256, false}, {"q_i8", 17, 256, false}, {"q_i8", 33, 256, false},
		{"q_e4", 3, 192, true}, {"q_e4", 70, 192, true}, {"q_e5", 5, 512, true}, {"q_u8", 16, 128, true}, {"q_u8", 33, 128, true},
		{"q_swiglu", 2, 320, false}, {"q_swiglu", 40, 320, false},
		{"q_k96", 5, 96, true}, {"q_kn", 5, 128, true},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%d", c.fn, c.rows), func(t *testing.T) {
			checkMatMul(t, m, g, c)
		})
	}
	assert.Equal(t, []string{
		"q_i8_k0_m16", "q_i8_k0_m16", "q_i8_k0_m16", "q_i8_k0_m32", "q_i8_k0",
		"q_e4_k0_m16", "q_e4_k0", "q_e5_k0", "q_u8_k0_m16", "q_u8_k0",
		"q_swiglu_k0_m16", "q_swiglu_k0", "q_k96_k0", "q_kn_k0",
	}, ran)
	t.Run("tiles", func(t *testing.T) {
		// a partial tile of rows, two tiles of columns (N = 136)
		ran = ran[:0]
		checkMatMul(t, m, g, mmCase{"q_i8", 130, 256, false})
		assert.Equal(t, []string{"q_i8_k0"}, ran)
	})
	t.Run("sync", func(t *testing.T) {
		// mma.sync everywhere: the 128-row form converts in registers
		defer func(old bool) { WGMMA = old }(WGMMA)
		WGMMA = false
		m := lower(t, src, fullPipeline, "h200")
		for _, c := range []mmCase{{"q_i8", 130, 256, false}, {"q_swiglu", 40, 320, false}, {"q_u8", 33, 128, true}} {
			checkMatMul(t, m, g, c)
		}
	})
	for _, c := range []mmCase{{"q_i8", 4, 256, false}, {"q_swiglu", 9, 320, false}, {"q_i8", 40, 256, false}} {
		t.Run(fmt.Sprintf("%s/%d/split3", c.fn, c.rows), func(t *testing.T) {
			checkMatMulSplit(t, m, g, c, 3)
		})
	}
	for _, bk := range []int64{64, 256} {
		t.Run(fmt.Sprintf("bk%d", bk), func(t *testing.T) {
			defer func(old int64) { TCDecodeBK = old }(TCDecodeBK)
			TCDecodeBK = bk
			m := lower(t, src, fullPipeline, "h200")
			for _, c := range []mmCase{{"q_e5", 5, 512, true}, {"q_i8", 9, 256, false}} {
				checkMatMul(t, m, g, c)
			}
		})
	}
}
