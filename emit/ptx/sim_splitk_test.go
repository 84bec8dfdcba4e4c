package ptx

import (
	"fmt"
	"math"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/parser"
)

// splitKSrc holds decode-shaped matmuls for split-K (tc.go): K of 4 to 8
// steps of 64, N past one tile (136: a second tile of 8 columns), B as
// [n, k] and [k, n], one dot product and the SwiGLU pair, and K = 200 (not
// a multiple of 64: the clamped copies, and with 3 parts an empty one).
const splitKSrc = `
func.func @sk_tb(%x: tensor<?x256xbf16>, %w: tensor<136x256xbf16>) -> tensor<?x136xbf16> {
  %y = graph.matmul %x, %w {transpose_b = true} : (tensor<?x256xbf16>, tensor<136x256xbf16>) -> tensor<?x136xbf16>
  return %y : tensor<?x136xbf16>
}
func.func @sk_kn(%x: tensor<?x512xbf16>, %w: tensor<512x136xbf16>) -> tensor<?x136xbf16> {
  %y = graph.matmul %x, %w : (tensor<?x512xbf16>, tensor<512x136xbf16>) -> tensor<?x136xbf16>
  return %y : tensor<?x136xbf16>
}
func.func @sk_swiglu(%x: tensor<?x256xbf16>, %wg: tensor<40x256xbf16>, %wu: tensor<40x256xbf16>) -> tensor<?x40xbf16> {
  %g = graph.matmul %x, %wg {transpose_b = true} : (tensor<?x256xbf16>, tensor<40x256xbf16>) -> tensor<?x40xbf16>
  %u = graph.matmul %x, %wu {transpose_b = true} : (tensor<?x256xbf16>, tensor<40x256xbf16>) -> tensor<?x40xbf16>
  %s = graph.silu %g : tensor<?x40xbf16>
  %y = graph.mul %s, %u : tensor<?x40xbf16>
  return %y : tensor<?x40xbf16>
}
func.func @sk_k200(%x: tensor<?x200xbf16>, %w: tensor<72x200xbf16>) -> tensor<?x72xbf16> {
  %y = graph.matmul %x, %w {transpose_b = true} : (tensor<?x200xbf16>, tensor<72x200xbf16>) -> tensor<?x72xbf16>
  return %y : tensor<?x72xbf16>
}
`

// TestSimulatedSplitK runs the matmuls of splitKSrc cut into 2 to 4 parts
// of K against the loop interpreter, within TestSimulatedMatMul's bound:
// the parts' f32 sums, added in order, still put each product through at
// most K roundings of 2^-24 relative (K * 2^-23 * sum |a b| with the
// other side's). simRunFunc checks the counters are back at 0; the CTAs
// run again last to first, so that another part of each tile is the last
// to finish, and the results must not change by a bit.
func TestSimulatedSplitK(t *testing.T) {
	m := lower(t, splitKSrc, fullPipeline, "h200")
	g, err := parser.Parse("test.tir", splitKSrc)
	require.NoError(t, err)
	cases := []struct {
		mmCase
		split int64
	}{
		{mmCase{"sk_tb", 1, 256, true}, 2}, {mmCase{"sk_tb", 5, 256, true}, 4},
		{mmCase{"sk_kn", 1, 512, true}, 4}, {mmCase{"sk_kn", 5, 512, true}, 3},
		{mmCase{"sk_swiglu", 5, 256, false}, 2}, {mmCase{"sk_swiglu", 1, 256, false}, 4},
		{mmCase{"sk_k200", 5, 200, true}, 3},
	}
	defer func() { simSplitK, simReverseCTAs, simSplits = 0, false, nil }()
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%d/split%d", c.fn, c.rows, c.split), func(t *testing.T) {
			simSplits = nil
			checkMatMulSplit(t, m, g, c.mmCase, c.split)
			require.Equal(t, []int64{c.split, c.split}, simSplits)
		})
	}
}

// checkMatMulSplit runs c with K cut into split parts, the CTAs in order
// and then last to first (so that another part of each tile is the last
// to finish), each within checkMatMul's bound, and requires the two
// results to be the same bits.
func checkMatMulSplit(t *testing.T, m, g ir.Module, c mmCase, split int64) {
	t.Helper()
	defer func() { simSplitK, simReverseCTAs = 0, false }()
	simSplitK, simReverseCTAs = split, false
	got := checkMatMul(t, m, g, c)
	simReverseCTAs = true
	again := checkMatMul(t, m, g, c)
	for r := range got {
		for i := range got[r].Data {
			x, y := got[r].Data[i], again[r].Data[i]
			if !(x == y || math.IsNaN(x) && math.IsNaN(y)) {
				t.Fatalf("%s: result %d [%d] is %v with the CTAs in order, %v last to first", c.fn, r, i, x, y)
			}
		}
	}
}

// TestSplitKChoice checks the number of parts chosen at launch from the
// tiles (so from M): the benchmark's decode shapes split on an H100's 132
// SMs, prefill (M = 4096) and short K do not; the launcher's _mm_split
// (run with python3 where there is one) agrees with tcSplit.
func TestSplitKChoice(t *testing.T) {
	type shape struct {
		m, n, k, want int64
	}
	shapes := []shape{
		{1, 6144, 4096, 2},    // qkv: 48 tiles
		{32, 6144, 4096, 2},   // qkv, 32 rows: still one tile of rows
		{1, 14336, 4096, 1},   // up and gate+up: 112 tiles
		{1, 4096, 14336, 4},   // down: 32 tiles
		{32, 4096, 14336, 4},  // down
		{33, 1024, 4096, 16},  // 8 tiles: 16 parts of 4 steps
		{4096, 6144, 4096, 1}, // prefill
		{4096, 4096, 14336, 1},
		{4096, 14336, 4096, 1},
		{256, 4096, 14336, 2}, // 2 tiles of rows: 64 tiles
		{384, 4096, 14336, 1}, // 96 tiles
		{1, 128, 256, 1},      // 4 steps of K: too short to cut
		{1, 128, 512, 2},
		{0, 4096, 4096, 1},
	}
	var py []string
	for _, s := range shapes {
		tiles := (s.m + tcBM - 1) / tcBM * ((s.n + tcBN - 1) / tcBN)
		steps := (s.k + tcBK - 1) / tcBK
		assert.Equal(t, s.want, tcSplit(tiles, 132, steps), "M %d N %d K %d", s.m, s.n, s.k)
		py = append(py, fmt.Sprintf("print(_mm_split(%d, 132, %d))", tiles, steps))
	}
	// the launcher: _launch_mm with the kernel's slots and steps
	files := emitFiles(t, splitKSrc)
	launcher := files["sk_kn.py"]
	assert.Regexp(t, `_launch_mm\(fns, "sk_kn_k0", _grid_sk_kn_k0\(sm, x_d0, x_d0\), 128, \d+, stream, \(x, w, y, x_d0, x_d0\), device, sm, 8, 16384\)`, launcher)
	assert.Contains(t, files["sk_swiglu.py"], "device, sm, 4, 32768)")
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 to run _mm_split")
	}
	def := regexp.MustCompile(`(?s)_MM_MIN_STEPS = \d+\n.*?\n    return split\n`).FindString(launcher)
	require.NotEmpty(t, def)
	src := "import os\n_MM_SPLIT_K = True\n" + def + strings.Join(py, "\n") + "\n"
	out, err := exec.Command(python, "-c", src).CombinedOutput()
	require.NoError(t, err, string(out))
	var want []string
	for _, s := range shapes {
		want = append(want, fmt.Sprint(s.want))
	}
	assert.Equal(t, strings.Join(want, "\n"), strings.TrimSpace(string(out)))
}

// TestSplitKForm checks the split-K code of a tensor-core kernel: the
// three parameters, the counter's atomic add between fences, the reset.
func TestSplitKForm(t *testing.T) {
	files := emitFiles(t, splitKSrc)
	text := files["sk_tb.ptx"]
	checkText(t, "sk_tb", text)
	for _, s := range []string{
		"// split-K: parts of K (1: none)", "atom.global.add.u32", "fence.acq_rel.gpu",
		"st.global.v4.f32", "ld.global.v4.f32", "st.global.b32",
	} {
		assert.Contains(t, text, s)
	}
	_, err := parseSim(text)
	require.NoError(t, err)
}
