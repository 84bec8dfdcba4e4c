package triton

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
	"github.com/tensorforge/tensorforge/parser"

	// the passes of the pipelines the tests run
	_ "github.com/tensorforge/tensorforge/lowering"
	_ "github.com/tensorforge/tensorforge/passes"
)

// o2 is tfc's -O2: fusion, then lowering to loops.
const o2 = "canonicalize,cse,legalize-numerics,decompose,fuse,canonicalize,cse,dce,lower-to-loops,sram-alloc"

// lower parses src and runs pipeline on it for the h200.
func lower(t *testing.T, src, pipeline string) ir.Module {
	t.Helper()
	m, err := parser.Parse("test.tir", src)
	require.NoError(t, err)
	require.NoError(t, ir.Verify(m.Operation))
	tg, err := target.Lookup("h200")
	require.NoError(t, err)
	if pipeline != "" {
		p, err := ir.ParsePipeline(pipeline)
		require.NoError(t, err)
		diags := &ir.Diagnostics{}
		pm := &ir.PassManager{Pipeline: p, VerifyEach: true}
		require.NoError(t, pm.Run(m, &ir.PassContext{Diags: diags, Target: tg}), "%v", diags.List)
	}
	return m
}

// emitO2 compiles src with -O2 for the h200 and emits it.
func emitO2(t *testing.T, src string) string {
	t.Helper()
	text, err := Emit(lower(t, src, o2), Options{Source: "test.tir", Target: "h200"})
	require.NoError(t, err)
	return text
}

// requirePython checks that each text compiles as Python 3, with one run
// of python3 (required, as by the lit suite).
func requirePython(t *testing.T, texts ...string) {
	t.Helper()
	python, err := exec.LookPath("python3")
	require.NoError(t, err, "the Triton emitter's tests need python3 to check the modules they emit")
	dir := t.TempDir()
	args := []string{"-c", `import sys
for f in sys.argv[1:]:
    compile(open(f).read(), f, "exec")`}
	for i, text := range texts {
		path := filepath.Join(dir, fmt.Sprintf("mod%d.py", i))
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
		args = append(args, path)
	}
	out, err := exec.Command(python, args...).CombinedOutput()
	require.NoError(t, err, "not valid Python:\n%s", out)
}

// function returns the text of the Python function name (up to the next
// definition).
func function(t *testing.T, text, name string) string {
	t.Helper()
	start := strings.Index(text, "def "+name+"(")
	require.GreaterOrEqual(t, start, 0, "no function %s in\n%s", name, text)
	rest := text[start:]
	if end := strings.Index(rest, "\n\n\n"); end >= 0 {
		rest = rest[:end]
	}
	return rest
}

// inOrder checks that the substrings appear in s in this order.
func inOrder(t *testing.T, s string, subs ...string) {
	t.Helper()
	at := 0
	for _, sub := range subs {
		i := strings.Index(s[at:], sub)
		require.GreaterOrEqual(t, i, 0, "%q not found after position %d in\n%s", sub, at, s)
		at += i + len(sub)
	}
}

const rmsChain = `
func.func @rms_silu_mul(%x: tensor<?x8192xbf16>, %w: tensor<8192xbf16>, %z: tensor<?x8192xbf16>) -> tensor<?x8192xbf16> {
  %n = graph.rmsnorm %x, %w {eps = 1.0e-05 : f32} : (tensor<?x8192xbf16>, tensor<8192xbf16>) -> tensor<?x8192xbf16>
  %s = graph.silu %n : tensor<?x8192xbf16>
  %y = graph.mul %s, %z : tensor<?x8192xbf16>
  return %y : tensor<?x8192xbf16>
}`

func TestRowKernelOneBlock(t *testing.T) {
	text := emitO2(t, rmsChain)
	k := function(t, text, "rms_silu_mul_k0")
	// a 2-D block [ROWS, BLOCK] over rows of 8192: no column mask
	inOrder(t, k,
		"def rms_silu_mul_k0(x, w, z, y, x_d0, z_d0, y_d0, BLOCK: tl.constexpr, ROWS: tl.constexpr):",
		"pid = tl.program_id(0)",
		"r = (pid * ROWS).to(tl.int64) + tl.arange(0, ROWS)[:, None]",
		"rmask = r < y_d0",
		"cols = tl.arange(0, BLOCK)[None, :]",
		// every input row is read up front, before the reduction
		`x_1 = tl.load(x + (r * 8192) + cols, mask=rmask)`,
		`w_1 = tl.load(w + cols)`,
		`z_1 = tl.load(z + (r * 8192) + cols, mask=rmask)`,
		"acc = tl.full((ROWS, BLOCK), 0.0, tl.float32)",
		".to(tl.float32)",
		"tl.sum(",
		", axis=1, keep_dims=True)",
		// 1/8192 is a power of two: the mean is a multiplication
		"* 0.0001220703125",
		"tl.rsqrt(",
		"_silu(",
		".to(tl.bfloat16)",
		"tl.store(y + (r * 8192) + cols, ",
		", mask=rmask)")
	assert.NotContains(t, k, "cmask", "a row of 8192 fills its block")
	// the kept row is the register tensor of phase 1: x is read once
	assert.Equal(t, 1, strings.Count(k, "tl.load(x "))
	assert.Contains(t, text, `"rms_silu_mul_k0": {"BLOCK": 8192, "ROWS": 1, "num_warps": 8},`)
	assert.Contains(t, text, "def _silu(x):")
}

func TestRowKernelMaskedAndShortRows(t *testing.T) {
	text := emitO2(t, softmaxAndShortRows)
	k := function(t, text, "softmax_k0")
	inOrder(t, k,
		"cmask = cols < 5120",
		"bmask = rmask & cmask",
		"tl.load(x + (r * 5120) + cols, mask=bmask",
		// masked lanes do not take part in a reduction; max propagates NaN
		"tl.reduce(tl.where(cmask, ",
		"_max_nan, keep_dims=True)",
		"tl.sum(tl.where(cmask, ",
		"tl.store(p + (r * 5120) + cols, ",
		"mask=bmask)")
	assert.Contains(t, text, `"softmax_k0": {"BLOCK": 8192, "ROWS": 1, "num_warps": 8},`)
	assert.Contains(t, text, "propagate_nan=tl.PropagateNan.ALL")
	// rows of 64: 64 of them per program, per-row results stored under the row mask
	assert.Contains(t, text, `"short_k0": {"BLOCK": 64, "ROWS": 64, "num_warps": 4},`)
	inOrder(t, function(t, text, "short_k0"), "tl.sum(", "axis=1, keep_dims=True)", "tl.store(s + r, ", "mask=rmask)")
}

func TestFlatKernel(t *testing.T) {
	text := emitO2(t, flatPrograms)
	k := function(t, text, "lae_k0")
	inOrder(t, k,
		"def lae_k0(a, b, y, a_d0, b_d0, y_d0, total, BLOCK: tl.constexpr, WIDE: tl.constexpr):",
		"pid = tl.program_id(0)",
		"if WIDE:", "pid = pid.to(tl.int64)",
		"offs = pid * BLOCK + tl.arange(0, BLOCK)",
		"emask = offs < total",
		"tl.load(a + offs, mask=emask)",
		"tl.load(b + offs, mask=emask)",
		"libdevice.log1p(",
		"tl.where(",
		"tl.store(y + offs, ", ", mask=emask)")
	// the scalar tail of the vector loop is covered by the masked block
	assert.Equal(t, 1, strings.Count(k, "tl.store("))
	assert.NotContains(t, k, "% 4", "the tail's index arithmetic is dropped")
	assert.Contains(t, text, "from triton.language.extra import libdevice")
	assert.Contains(t, text, "WIDE_FROM = 2**31")
	inOrder(t, function(t, text, "lae"),
		"total = a_d0",
		`grid = (_cdiv(total, cfg["BLOCK"]),)`,
		"if grid[0] > 0:",
		`_launch(lae_k0, grid, (a, b, y, a_d0, b_d0, a_d0, total), BLOCK=cfg["BLOCK"], WIDE=total + cfg["BLOCK"] > WIDE_FROM, num_warps=cfg["num_warps"])`)

	// rows and columns of the flat offset: full operands at offs, a row
	// operand at the column, a column operand at the row
	k = function(t, text, "bcast_k0")
	inOrder(t, k, "r = offs // y_d1", "i = offs % y_d1",
		"tl.load(x + offs, mask=emask)", "tl.load(b + i, mask=emask)", "tl.load(c + r, mask=emask)",
		"tl.store(y + offs, ")
}

func TestLoopedKernelRecomputesKeptRow(t *testing.T) {
	// 40000 f32 (160 KB) fits the scratchpad: one-pass, the row kept in
	// sram; it does not fit a block of registers, so each loop reads it
	// from DRAM again
	text := emitO2(t, longRows)
	k := function(t, text, "long_k0")
	assert.Contains(t, k, "# row, one-pass: one program per row, loops over BLOCK-element chunks")
	assert.Equal(t, 3, strings.Count(k, "in range(0, 40000, BLOCK):"))
	assert.Equal(t, 3, strings.Count(k, "tl.load(x + (r * 40000) + "))
	inOrder(t, k,
		"r = pid.to(tl.int64)",
		"acc = tl.full((BLOCK,), (-float(\"inf\")), tl.float32)",
		"for c0 in range(0, 40000, BLOCK):",
		"i = c0 + tl.arange(0, BLOCK)",
		"cmask = i < 40000",
		"acc = tl.where(cmask, ",
		"tl.reduce(acc, 0, _max_nan)",
		"tl.sum(acc_2, axis=0)",
		"tl.store(p + (r * 40000) + i_2, ")
	assert.Contains(t, text, `"long_k0": {"BLOCK": 4096, "num_warps": 4},`)
}

func TestGenericKernels(t *testing.T) {
	text := emitO2(t, genericPrograms)
	inOrder(t, function(t, text, "tr_k0"),
		"r = pid.to(tl.int64)",
		"for c0 in range(0, y_d1, BLOCK):",
		"j = (c0 + tl.arange(0, BLOCK)).to(tl.int64)",
		"cmask = j < y_d1",
		"tl.load(x + (j * 64) + r, mask=cmask)",
		"tl.store(y + (r * y_d1) + j, ")
	// a matmul is tiled for tl.dot: K (32) shorter than a tile is
	// masked, the 16 columns clamped for the loads and masked at the store
	inOrder(t, function(t, text, "mm_k0"),
		"rows = pid_b * c_d0 + tl.minimum(offs_m, c_d0 - 1)[:, None]",
		"cols = tl.minimum(offs_n, 16 - 1)[None, :]",
		"omask = (offs_m[:, None] < c_d0) & (offs_n[None, :] < 16)",
		"b0_ptrs = b + ((offs_k[:, None]) * 16) + cols",
		// the second launch of split-K sums the parts in a fixed order
		"if EPI:",
		"for s_k in range(SPLIT_K):",
		"acc0 += tl.load(mm_ws + s_k * nb * (c_d0 * 16) + ws_off, mask=omask, other=0.0)",
		// the first sums part pid_k of K
		"k_lo = pid_k * k_per",
		"b0_ptrs += k_lo * BK * 16",
		"for kk in range(k_lo, k_hi):",
		"a_t = tl.load(a_ptrs, mask=offs_k[None, :] < krem, other=0.0)",
		"acc0 = tl.dot(a_t, tl.load(b0_ptrs, mask=offs_k[:, None] < krem, other=0.0), acc0)",
		"b0_ptrs += BK * 16",
		"if SPLIT_K > 1 and not EPI:",
		"tl.store(mm_ws + pid_k * nb * (c_d0 * 16) + ws_off, acc0, mask=omask)",
		// serial split-K: the last part of a tile to store its sums adds
		// them all, in order, resets the tile's counter and stores
		"if SPLIT_K > 1 and SERIAL:",
		"tl.debug_barrier()",
		"lock = mm_lock + pid_b * tl.num_programs(0) + pid",
		"last = tl.atomic_add(lock, 1) == SPLIT_K - 1",
		"acc0 = tl.zeros((BM, BN), dtype=tl.float32)",
		"for s_k in range(SPLIT_K):",
		`acc0 += tl.load(mm_ws + s_k * nb * (c_d0 * 16) + ws_off, mask=omask & last, other=0.0, cache_modifier=".cg")`,
		"tl.atomic_xchg(lock, 0, mask=last)",
		"omask = omask & last",
		"if SPLIT_K == 1 or EPI or SERIAL:",
		"tl.store(c + (rows * 16) + cols, t0, mask=omask)")
	inOrder(t, text, `cfg = _mm_config(CONFIGS["mm_k0"], a_d0)`,
		`split = _mm_split(cfg, dev, tiles * 1, 32, (a_d0 * 16))`,
		"if split > 1:",
		"if _MM_SERIAL:",
		`_launch(mm_k0, (tiles, 1, split), (`, "_mm_locks(dev, tiles * 1)), ", "SPLIT_K=split, EPI=False, SERIAL=True)",
		"else:",
		`_launch(mm_k0, (tiles, 1, split), (`, "SPLIT_K=split, EPI=False, SERIAL=False)",
		`_launch(mm_k0, (tiles, 1, 1), (`, "SPLIT_K=split, EPI=True, SERIAL=False)",
		"else:",
		`_launch(mm_k0, (tiles, 1, 1), (`, "SPLIT_K=1, EPI=False, SERIAL=False)")
	assert.NotContains(t, function(t, text, "mm_k0"), "% a_d0", "the unused batch index is dropped")
}

func TestLogsumexpDropsReductionOfOneValue(t *testing.T) {
	// logsumexp without keepdim reduces its [R, 1] result over its last
	// axis; a max of copies of one value is that value
	k := function(t, emitO2(t, `
func.func @lse(%s: tensor<?x4096xbf16>) -> tensor<?xf32> {
  %x = graph.cast %s : (tensor<?x4096xbf16>) -> tensor<?x4096xf32>
  %l = graph.logsumexp %x {axis = -1} : (tensor<?x4096xf32>) -> tensor<?xf32>
  return %l : tensor<?xf32>
}`), "lse_k0")
	assert.Equal(t, 1, strings.Count(k, "tl.reduce("))
	assert.Equal(t, 1, strings.Count(k, "tl.sum("))
	assert.Contains(t, k, `_max_nan(tl.full([], (-float("inf")), tl.float32), `)
	assert.Contains(t, k, `tl.where(`)
}

func TestLauncher(t *testing.T) {
	text := emitO2(t, launcherProgram)
	l := function(t, text, "two")
	inOrder(t, l,
		"def two(x, r, w):",
		`"""two(x: f32[?, 64], r: f32[?, 64], w: f32[64]) -> (f32[?, 64], f32[64, ?])"""`,
		`x = _tensor("two", "x", x, torch.float32, (None, 64))`,
		`w = _tensor("two", "w", w, torch.float32, (64,))`,
		"dev = x.device",
		"x_d0 = x.shape[0]",
		"torch.empty((x_d0, 64), dtype=torch.float32, device=dev)",
		`cfg = _fit_rows(CONFIGS["two_k0"], x_d0)`,
		"_launch(two_k0",
		"return (")
	// the add and the norm are one kernel writing n, and h transposed
	// through the transpose's index map: h is never written as it is
	assert.Equal(t, 1, strings.Count(l, "_launch("), "one kernel")
	assert.Equal(t, 2, strings.Count(l, "torch.empty("), "the two results")
	inOrder(t, l, "t = torch.empty((64, x_d0)", "n = torch.empty((x_d0, 64)", "_launch(two_k0, grid, (x, r, w, t, n, ")
	assert.Contains(t, text, "def _tensor(fn, name, t, dtype, shape):")
	assert.Regexp(t, regexp.MustCompile(`return \(\w+, \w+\)\n`), l)
}

func TestStaticGridNeedsNoGuard(t *testing.T) {
	text := emitO2(t, `
func.func @s(%x: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %y = graph.exp %x : tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}`)
	l := function(t, text, "s")
	assert.Contains(t, l, "total = 1024\n")
	assert.NotContains(t, l, "if grid[0] > 0:")
	assert.Contains(t, function(t, text, "s_k0"), "tl.load(x + offs, mask=emask)")
}

func TestDeterministic(t *testing.T) {
	assert.Equal(t, emitO2(t, rmsChain), emitO2(t, rmsChain))
}

// TestModulesArePython compiles, as Python, the modules of programs of
// every kernel form.
func TestModulesArePython(t *testing.T) {
	var texts []string
	for _, src := range []string{rmsChain, softmaxAndShortRows, flatPrograms, longRows, genericPrograms, launcherProgram, keywordNames} {
		texts = append(texts, emitO2(t, src))
	}
	requirePython(t, texts...)
}

func TestNamesArePythonIdentifiers(t *testing.T) {
	// arguments named after Python keywords and the module's own names
	text := emitO2(t, keywordNames)
	assert.Contains(t, text, "def lambda_1(tl_1, torch_1, mask_1):")
	assert.Contains(t, text, "def lambda_k0(tl_1, torch_1, mask_1, y, total, ")
	assert.Contains(t, text, "tl_2 = tl.load(tl_1 + offs, mask=emask)")

	// arguments named as the emitter's own variables
	k := function(t, emitO2(t, `
func.func @f(%rmask: tensor<?x64xf32>, %cols: tensor<64xf32>) -> tensor<?xf32> {
  %m = graph.mul %rmask, %cols : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %s = graph.reduce_sum %m {axes = [-1]} : (tensor<?x64xf32>) -> tensor<?xf32>
  return %s : tensor<?xf32>
}`), "f_k0")
	inOrder(t, k, "def f_k0(rmask, cols, s, rmask_d0, s_d0, ", "rmask_1 = r < s_d0", "cols_1 = tl.arange(0, BLOCK)[None, :]",
		"tl.load(rmask + (r * 64) + cols_1, mask=rmask_1)", "tl.load(cols + cols_1)", "tl.store(s + r, acc_1, mask=rmask_1)")
}

func TestErrors(t *testing.T) {
	// a module still at the graph level
	m := lower(t, `
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = graph.exp %x : tensor<8xf32>
  return %y : tensor<8xf32>
}`, "")
	_, err := Emit(m, Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not lowered to loops")

	// a threads loop stepping by other than its vector width
	m = lower(t, `
loop.kernel {kind = "elementwise", num_inputs = 1, num_outputs = 1, sym_name = "k"} {
^bb0(%x: memref<64xf32, dram>, %y: memref<64xf32, dram>):
  %c0 = loop.const {value = 0} : index
  %c1 = loop.const {value = 1} : index
  %c2 = loop.const {value = 2} : index
  %c64 = loop.const {value = 64} : index
  loop.parallel %c0, %c1, %c1 {dist = "grid"} {
  ^bb1(%r: index):
    loop.for %c0, %c64, %c2 {dist = "threads"} {
    ^bb2(%i: index):
      %v = loop.load %x, %i : (memref<64xf32, dram>, index) -> f32
      loop.store %v, %y, %i : (f32, memref<64xf32, dram>, index) -> ()
      loop.yield
    } : index
    loop.yield
  } : index
  loop.return
}`, "")
	_, err = Emit(m, Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "step is not the width of its vectors")
	d, ok := err.(*ir.Diagnostic)
	require.True(t, ok, "a located diagnostic, not %T", err)
	assert.Equal(t, 10, d.Loc.Line)
}

// The programs of the tests.
const (
	softmaxAndShortRows = `
func.func @softmax(%x: tensor<?x5120xbf16>) -> tensor<?x5120xbf16> {
  %p = graph.softmax %x {axis = -1} : tensor<?x5120xbf16>
  return %p : tensor<?x5120xbf16>
}
func.func @short(%x: tensor<?x64xf32>) -> tensor<?xf32> {
  %s = graph.reduce_sum %x {axes = [-1]} : (tensor<?x64xf32>) -> tensor<?xf32>
  return %s : tensor<?xf32>
}`
	flatPrograms = `
func.func @lae(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xf32> {
  %y = graph.logaddexp %a, %b : tensor<?xf32>
  return %y : tensor<?xf32>
}
func.func @bcast(%x: tensor<?x?xf32>, %b: tensor<?xf32>, %c: tensor<?x1xf32>) -> tensor<?x?xf32> {
  %s = graph.add %x, %b : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  %y = graph.mul %s, %c : (tensor<?x?xf32>, tensor<?x1xf32>) -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}`
	longRows = `
func.func @long(%x: tensor<?x40000xf32>) -> tensor<?x40000xf32> {
  %p = graph.softmax %x {axis = -1} : tensor<?x40000xf32>
  return %p : tensor<?x40000xf32>
}`
	genericPrograms = `
func.func @tr(%x: tensor<?x64xf32>) -> tensor<64x?xf32> {
  %y = graph.transpose %x {perm = [1, 0]} : (tensor<?x64xf32>) -> tensor<64x?xf32>
  return %y : tensor<64x?xf32>
}
func.func @mm(%a: tensor<?x32xbf16>, %b: tensor<32x16xbf16>) -> tensor<?x16xbf16> {
  %c = graph.matmul %a, %b : (tensor<?x32xbf16>, tensor<32x16xbf16>) -> tensor<?x16xbf16>
  return %c : tensor<?x16xbf16>
}`
	keywordNames = `
func.func @lambda(%tl: tensor<8xf32>, %torch: tensor<8xf32>, %mask: tensor<8xf32>) -> tensor<8xf32> {
  %a = graph.add %tl, %torch : tensor<8xf32>
  %y = graph.mul %a, %mask : tensor<8xf32>
  return %y : tensor<8xf32>
}`
	launcherProgram = `
func.func @two(%x: tensor<?x64xf32>, %r: tensor<?x64xf32>, %w: tensor<64xf32>) -> (tensor<?x64xf32>, tensor<64x?xf32>) {
  %h = graph.add %x, %r : tensor<?x64xf32>
  %t = graph.transpose %h {perm = [1, 0]} : (tensor<?x64xf32>) -> tensor<64x?xf32>
  %n = graph.rmsnorm %h, %w {eps = 1.0e-05 : f32} : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  return %n, %t : tensor<?x64xf32>, tensor<64x?xf32>
}`
)

// TestPersistentRows checks the opt-in persistent form of row kernels of
// one block (TENSORFORGE_PERSISTENT_ROWS=1): the weight is read once per
// program before a loop over blocks of rows, the launcher bounds the grid
// with _persist and passes STAGES; kernels of other forms are unchanged,
// and so is the default form.
func TestPersistentRows(t *testing.T) {
	plain := emitO2(t, rmsChain)
	persistentRows = true
	t.Cleanup(func() { persistentRows = false })
	text := emitO2(t, rmsChain)
	k := function(t, text, "rms_silu_mul_k0")
	inOrder(t, k,
		"def rms_silu_mul_k0(x, w, z, y, x_d0, z_d0, y_d0, BLOCK: tl.constexpr, ROWS: tl.constexpr, STAGES: tl.constexpr):",
		"pid = tl.program_id(0)",
		"cols = tl.arange(0, BLOCK)[None, :]",
		`w_1 = tl.load(w + cols)`,
		"for rblk in tl.range(pid, tl.cdiv(y_d0, ROWS), tl.num_programs(0), num_stages=STAGES):",
		"r = (rblk * ROWS).to(tl.int64) + tl.arange(0, ROWS)[:, None]",
		"rmask = r < y_d0",
		`x_1 = tl.load(x + (r * 8192) + cols, mask=rmask)`,
		`z_1 = tl.load(z + (r * 8192) + cols, mask=rmask)`,
		"tl.sum(",
		"tl.store(y + (r * 8192) + cols, ")
	assert.Equal(t, 1, strings.Count(k, "tl.load(w "), "the weight is read once per program")
	assert.Equal(t, 1, strings.Count(k, "tl.load(x "))
	assert.Contains(t, text, fmt.Sprintf(`"rms_silu_mul_k0": {"BLOCK": 8192, "ROWS": 1, "num_warps": 8, "PERSIST": %d, "STAGES": %d},`,
		persistPrograms, persistStages))
	assert.Contains(t, text, `grid = (_persist(_cdiv(x_d0, cfg["ROWS"]), cfg),)`)
	assert.Contains(t, text, `STAGES=cfg["STAGES"]`)
	assert.Contains(t, text, "def _persist(n, cfg):")
	assert.NotContains(t, plain, "_persist")
	assert.NotContains(t, plain, "STAGES")

	// masked rows and short rows; a flat kernel has no persistent form
	masked := emitO2(t, softmaxAndShortRows)
	inOrder(t, function(t, masked, "softmax_k0"), "cmask = cols < 5120", "for rblk in tl.range(", "bmask = rmask & cmask",
		"tl.load(x + (r * 5120) + cols, mask=bmask")
	inOrder(t, function(t, masked, "short_k0"), "for rblk in tl.range(", "tl.store(s + r, ", "mask=rmask)")
	flat := emitO2(t, flatPrograms)
	assert.NotContains(t, flat, "tl.range(")
	requirePython(t, text, masked)
}

// A reduce kernel over the tokens on a GPU target reads vectors of the
// channels (lowering's reduceWidth): its serial loop over the chunk steps
// by the vector width, and the Triton kernel takes the chunk's channels
// as one contiguous block, not every fourth of them.
func TestVectorReduceKernel(t *testing.T) {
	text := emitO2(t, `
func.func @chan(%x: tensor<64x256xbf16>) -> tensor<256xf32> {
  %c = graph.cast %x : (tensor<64x256xbf16>) -> tensor<64x256xf32>
  %a = graph.abs %c : tensor<64x256xf32>
  %m = graph.reduce_max %a {axes = [0]} : (tensor<64x256xf32>) -> tensor<256xf32>
  return %m : tensor<256xf32>
}`)
	k := function(t, text, "chan_k0")
	inOrder(t, k,
		"for c0 in range(0, 256, BLOCK):",
		"cols = (c0 + tl.arange(0, BLOCK)).to(tl.int64)",
		"j = t2 + cols",
		"for e in range(0, 32):",
		"tl.load(x + (t4 * 256) + j, mask=cmask)",
		"tl.store(arg1 + (t1 * 256) + j, acc, mask=cmask)")
	assert.NotContains(t, k, "BLOCK * 4")
}
