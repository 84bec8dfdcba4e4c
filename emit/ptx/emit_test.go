package ptx

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

const rmsSiluMul = `
func.func @rms_silu_mul(%x: tensor<?x8192xbf16>, %w: tensor<8192xbf16>, %z: tensor<?x8192xbf16>) -> tensor<?x8192xbf16> {
  %n = graph.rmsnorm %x, %w {eps = 1.0e-05 : f32} : (tensor<?x8192xbf16>, tensor<8192xbf16>) -> tensor<?x8192xbf16>
  %s = graph.silu %n : tensor<?x8192xbf16>
  %y = graph.mul %s, %z : tensor<?x8192xbf16>
  return %y : tensor<?x8192xbf16>
}
`

func TestRowKernelText(t *testing.T) {
	files := emitFiles(t, rmsSiluMul)
	require.Contains(t, files, "rms_silu_mul.ptx")
	require.Contains(t, files, "rms_silu_mul.py")
	ptx := files["rms_silu_mul.ptx"]
	for _, want := range []string{
		".version 8.0\n.target sm_90\n.address_size 64\n",
		".extern .shared .align 16 .b8 tf_smem[];",
		".visible .entry rms_silu_mul_k0(",
		"\t.param .u64 rms_silu_mul_k0_param_0,\t// %x: memref<?x8192xbf16, dram>",
		".reqntid 256, 1, 1",
		"// Groups: 256 thread(s) per instance, 1 instance(s) per CTA of 256 threads.",
		"// Sram in registers: %row.",
		"ld.param.u64",
		"cvta.to.global.u64",
		"ld.global.nc.v4.b32",
		", -65536;", // the upper bf16 of a word, to f32 with its bits
		", 16;",
		"shfl.sync.bfly.b32 \t%r",
		", 16, 31, -1;",
		"@%p1 st.shared.f32",
		"bar.sync \t0;",
		"rsqrt.approx.f32",
		"ex2.approx.ftz.f32",
		"rcp.approx.ftz.f32",
		"cvt.rn.bf16x2.f32",
		"st.global.v4.b32",
		"ret;",
	} {
		assert.Contains(t, ptx, want)
	}
	// the row is read from DRAM once: one load of x per unrolled copy
	assert.Equal(t, 4, strings.Count(ptx, "ld.global.nc.v4.b32")-8, "loads of x (4) besides w and z (4 each)")
	// the kept row is in registers: no shared memory but the combine's
	assert.NotContains(t, ptx, "st.shared.v4")
}

func TestLauncherText(t *testing.T) {
	files := emitFiles(t, rmsSiluMul+`
func.func @pair(%a: tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<?xf32>) {
  %e = graph.exp %a : tensor<?x64xf32>
  %s = graph.reduce_sum %a {axes = [-1]} : (tensor<?x64xf32>) -> tensor<?xf32>
  return %e, %s : tensor<?x64xf32>, tensor<?xf32>
}
`)
	py := files["rms_silu_mul.py"]
	for _, want := range []string{
		"def rms_silu_mul(*args):",
		`x = _arg(args[0], "x", torch.bfloat16, (None, 8192))`,
		`w = _arg(args[1], "w", torch.bfloat16, (8192,))`,
		"x_d0 = x.shape[0]",
		"y = torch.empty((x_d0, 8192), dtype=torch.bfloat16, device=device)",
		"z_d0 = z.shape[0]",
		`_launch(fns, "rms_silu_mul_k0", _grid_rms_silu_mul_k0(sm, x_d0, z_d0, x_d0), 256, 32, stream, (x, w, z, y, x_d0, z_d0, x_d0))`,
		"    return y\n",
		"def _grid_rms_silu_mul_k0(sm, e0, e1, e2):\n    n = _trip(0, e2, 1)\n    return min(_cdiv(n, 1), 2147483647)\n",
		`("rms_silu_mul_k0", 256, 32),`,
		"torch.cuda.current_stream(device).cuda_stream",
		"cuLaunchKernel",
		"cuModuleLoadDataEx",
		`os.path.join(os.path.dirname(os.path.abspath(__file__)), "rms_silu_mul.ptx")`,
	} {
		assert.Contains(t, py, want)
	}
	pair := files["pair.py"]
	assert.Contains(t, pair, "def pair(*args):")
	assert.Contains(t, pair, "return (e, s)")
}

func TestDeterministic(t *testing.T) {
	src, err := os.ReadFile("testdata/shapes.tir")
	require.NoError(t, err)
	a := emitFiles(t, string(src))
	b := emitFiles(t, string(src))
	require.Equal(t, a, b)
}

// verifiedOpcodes are the instructions ptxas -arch=sm_90 (CUDA 13.0) has
// accepted in the emitter's output for testdata/*.tir, the examples and
// the GPU workloads (bench/gpu/ptx_check.sh on an H200), sram in shared
// memory included. An instruction that output starts to use must be
// checked with ptxas before it is added. (ld.global.nc.b64 and
// ld.global.b64, graph.gather's i64 indices, were checked in a kernel of
// their own: ptxas of CUDA 13.0 on the H200; ld.global.v2.f32 in the
// kernels of testdata/views.tir, and st.global.v2.f32.)
var verifiedOpcodes = strings.Fields(`
abs.f32 abs.f64 add.rn.f32 add.rn.f64 add.s32 add.s64 and.b16 and.b32 and.b64 and.pred bar.sync
bfe.s32 bfe.u32 bfi.b32 bra cvt.f32.bf16 cvt.f32.f16 cvt.f64.f32 cvt.rmi.f32.f32 cvt.rn.bf16.f32
cvt.rn.bf16x2.f32 cvt.rn.f16.f32 cvt.rn.f16x2.e4m3x2 cvt.rn.f16x2.f32 cvt.rn.f32.f64 cvt.rn.f32.s32
cvt.rn.f64.s32 cvt.rn.satfinite.e4m3x2.f32 cvt.rn.satfinite.e5m2x2.f32 cvt.rni.f32.f32
cvt.rni.f64.f64 cvt.rpi.f32.f32 cvt.rz.f32.f64 cvt.rzi.f64.f64 cvt.rzi.s32.f32 cvt.rzi.s32.f64
cvt.rzi.s64.f32 cvt.s64.s32 cvt.u16.u32 cvt.u32.u16 cvt.u32.u64 cvt.u64.u32 cvta.to.global.u64
div.full.f32 div.rn.f32 div.rn.f64 div.s64 div.u64 ex2.approx.f32 ex2.approx.ftz.f32 fma.rn.f32 fma.rn.f64
ld.global.nc.b16 ld.global.nc.b32 ld.global.nc.b64 ld.global.nc.f32 ld.global.nc.f64 ld.global.nc.u8
ld.global.nc.v2.b32 ld.global.nc.v2.f64 ld.global.nc.v4.b32 ld.global.nc.v4.f32 ld.param.u64
ld.global.b16 ld.global.b32 ld.global.b64 ld.global.f32 ld.global.f64 ld.global.u8 ld.global.v2.b32 ld.global.v2.f64
ld.global.v2.f32 ld.global.v4.b32 ld.global.v4.f32
ld.shared.f32 ld.shared.f64 ld.shared.v4.f32 mad.lo.s64 max.NaN.f32 max.f32 max.f64 max.s64
min.NaN.f32 min.f32 min.f64 min.s64 mov.b32 mov.b64 mov.f32 mov.f64 mov.u32 mov.u64 mul.lo.s64
mul.rn.f32 mul.rn.f64 neg.f32 neg.f64 not.pred or.b32 or.pred rcp.approx.f32 rcp.approx.ftz.f32 rcp.rn.f32 rcp.rn.f64 rem.s64 ret
rsqrt.approx.f32 selp.b16 selp.b32 selp.f32 selp.f64 selp.u32 setp.eq.f32 setp.eq.f64 setp.eq.s32
setp.eq.s64 setp.ge.f32 setp.ge.f64 setp.ge.s32 setp.ge.s64 setp.gt.f32 setp.gt.f64 setp.gt.s32
setp.gt.u32 setp.le.f32 setp.lt.f32 setp.lt.f64 setp.lt.s32 setp.lt.s64 setp.lt.u32 setp.nan.f32
setp.nan.f64 setp.ne.s32 setp.neu.f32 setp.neu.f64 shfl.sync.bfly.b32 shl.b32 shl.b64 shr.s32
shr.u64 sqrt.rn.f32 sqrt.rn.f64 st.global.b16 st.global.b32 st.global.f32 st.global.f64 st.global.u8
st.global.v2.b32 st.global.v2.f32 st.global.v2.f64 st.global.v4.b32 st.global.v4.f32 st.shared.f32 st.shared.f64
st.shared.v4.f32 sub.rn.f32 sub.rn.f64 sub.s32 sub.s64 tanh.approx.f32`)

// tcOpcodes are the instructions of the tensor-core matmul form (tc.go).
// ptxas -arch=sm_90 (an H100 machine's CUDA) accepted the kernels of
// bench/gpu/matmul/{qkv,up,down,gateup}.tir: the bf16 mma.sync, ldmatrix
// without .trans, cp.async and its groups, selp.b64. Not yet through
// ptxas, written after the PTX ISA 8.0: the f16 mma.sync, ldmatrix .trans
// (a [k, n] right operand) and the 2-byte copies of unaligned rows
// (mov.b16, setp.gt.s64, st.shared.v4.b32).
var tcOpcodes = strings.Fields(`
cp.async.cg.shared.global cp.async.commit_group cp.async.wait_group
ldmatrix.sync.aligned.m8n8.x4.shared.b16 ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
mov.b16 selp.b64 st.shared.v4.b32 setp.gt.s64 shr.u64 and.b64 rem.s64 div.s64 min.s64 max.s64`)

// splitKOpcodes are the instructions of split-K in the tensor-core form:
// the counter's atomic add, the fences, the flag of the last part in
// shared memory.
var splitKOpcodes = strings.Fields(`
atom.global.add.u32 fence.acq_rel.gpu setp.le.s64 st.shared.b32 ld.shared.b32`)

// residentOpcodes are the instructions of the resident splits' tickets
// and group syncs (sync.go), after the PTX ISA 8.0 (red and atom with
// .release and .gpu, ld with .acquire and .gpu, sm_70 and later; the .cg
// loads of the partial results). ptxas of CUDA 13.0 assembled them all
// (bench/results/gpu-h100-2026-12-06-resident.txt, bench/gpu/ptx_check.sh:
// atom.release in call 2, red.release in call 3).
var residentOpcodes = strings.Fields(`
atom.release.gpu.global.add.u32 red.release.gpu.global.add.u32 ld.acquire.gpu.global.u32 ld.global.cg.f32 ld.global.cg.v2.f32 ld.global.cg.v4.f32`)

// bulkOpcodes are the instructions of the bulk copies (bulk.go) and of
// the exchange in a cluster's distributed shared memory (sync.go), after
// the PTX ISA 8.0 (sm_90): ptxas of an H100 machine's CUDA assembled every
// module of bench/gpu/build_bulk.sh (the resident splits in clusters, on
// counters and through L2, the rows copied whole, the row copies of add +
// RMSNorm and RMSNorm -> SiLU -> Mul) and they ran correctly
// (bench/results/gpu-h100-2026-12-07-bulk-emitted.txt).
var bulkOpcodes = strings.Fields(`
barrier.cluster.arrive.relaxed.aligned barrier.cluster.arrive.release.aligned
barrier.cluster.wait.acquire.aligned barrier.cluster.wait.aligned
cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes fence.mbarrier_init.release.cluster
fence.proxy.async.shared::cta ld.shared.v4.b32 mapa.shared::cluster.u64 mbarrier.arrive.expect_tx.shared::cta.b64
mbarrier.init.shared::cta.b64 mbarrier.try_wait.parity.shared::cta.b64 st.shared::cluster.f32 xor.b32`)

// wgmmaOpcodes are the instructions of the wgmma form (wgmma.go), after
// the PTX ISA 8.0 (sm_90a): ptxas of CUDA 13.0 (-arch=sm_90a) assembled
// the kernels of bench/gpu/matmul/*.tir with them and they ran correctly
// on an H100 (bench/results/gpu-h100-2026-12-07-wgmma.txt: bf16 m64n128k16
// and m64n256k16); the f16 forms are written after the ISA and run in the
// simulator only.
var wgmmaOpcodes = strings.Fields(`
wgmma.fence.sync.aligned wgmma.commit_group.sync.aligned wgmma.wait_group.sync.aligned
wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16
xor.b64 setp.ne.b32`)

// int8Opcodes are the instructions of the int8 form (int8.go): ptxas of
// CUDA 13.0 assembled the kernels of emit/ptx/testdata/int8/matmuls.tir
// and bench/gpu/matmul/w8a8.tir with them (sm_90a for wgmma), and the w8a8
// kernels ran correctly on an H100
// (bench/results/gpu-h100-2026-12-07-s8-int8.txt).
var int8Opcodes = strings.Fields(`
mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32
mma.sync.aligned.m16n8k32.row.col.s32.s8.u8.s32
wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8
ld.global.v4.s32 st.global.v4.s32 add.s32`)

func init() {
	verifiedOpcodes = append(verifiedOpcodes, int8Opcodes...)
	verifiedOpcodes = append(verifiedOpcodes, wgmmaOpcodes...)
	verifiedOpcodes = append(verifiedOpcodes, bulkOpcodes...)
	verifiedOpcodes = append(verifiedOpcodes, tcOpcodes...)
	verifiedOpcodes = append(verifiedOpcodes, splitKOpcodes...)
	verifiedOpcodes = append(verifiedOpcodes, residentOpcodes...)
}

var (
	regUse      = regexp.MustCompile(`%(p|h|rd|r|fd|f)([0-9]+)\b`)
	regDeclLine = regexp.MustCompile(`\.reg \.\w+ \t%(\w+)<([0-9]+)>;`)
)

// checkText checks what ptxas would reject in a module the simulator
// parses: registers used beyond their declaration, branches to labels
// that do not exist, instructions not in verifiedOpcodes.
func checkText(t *testing.T, name, text string) {
	t.Helper()
	_, err := parseSim(text)
	require.NoError(t, err, name)
	verified := map[string]bool{}
	for _, o := range verifiedOpcodes {
		verified[o] = true
	}
	for _, entry := range strings.Split(text, ".visible .entry ")[1:] {
		decl := map[string]int{}
		for _, m := range regDeclLine.FindAllStringSubmatch(entry, -1) {
			n, _ := strconv.Atoi(m[2])
			decl[m[1]] = n
		}
		for _, line := range strings.Split(entry, "\n") {
			if i := strings.Index(line, "//"); i >= 0 {
				line = line[:i]
			}
			line = strings.TrimSpace(line)
			if !strings.HasSuffix(line, ";") || strings.HasPrefix(line, ".") {
				continue
			}
			for _, m := range regUse.FindAllStringSubmatch(line, -1) {
				n, _ := strconv.Atoi(m[2])
				require.Less(t, n, decl[m[1]], "%s: %%%s%s used but %d declared: %s", name, m[1], m[2], decl[m[1]], line)
			}
			op := line
			if strings.HasPrefix(op, "@") {
				op = strings.TrimSpace(op[strings.IndexAny(op, " \t"):])
			}
			if i := strings.IndexAny(op, " \t;"); i >= 0 {
				op = op[:i]
			}
			require.True(t, verified[op], "%s: instruction %s has not been checked with ptxas: %s", name, op, line)
		}
	}
}

func TestTextWellFormed(t *testing.T) {
	var srcs []string
	for _, pat := range []string{"testdata/*.tir", "../../examples/*.tir", "../../bench/gpu/workloads/*.tir"} {
		m, _ := filepath.Glob(pat)
		srcs = append(srcs, m...)
	}
	sort.Strings(srcs)
	require.NotEmpty(t, srcs)
	for _, path := range srcs {
		src, err := os.ReadFile(path)
		require.NoError(t, err)
		for name, text := range emitFiles(t, string(src)) {
			if strings.HasSuffix(name, ".ptx") {
				checkText(t, filepath.Base(path)+":"+name, text)
			}
		}
	}
}

// planOf emits the one kernel of src and returns its plan.
func planOf(t *testing.T, src string) *plan {
	t.Helper()
	m := lower(t, src, fullPipeline, "h200")
	for op := m.Body().First(); op != nil; op = op.Next() {
		if k, ok := loop.AsKernel(op); ok {
			ke := &kernelEmitter{k: k, body: k.Body().Entry(), nin: int(k.NumInputs())}
			for o := ke.body.First(); o != nil; o = o.Next() {
				if p, ok := loop.AsParallel(o); ok {
					ke.grid = p
				}
			}
			return makePlan(ke)
		}
	}
	t.Fatal("no kernel")
	return nil
}

func TestPlans(t *testing.T) {
	row := func(n int, elem string) string {
		return `func.func @f(%x: tensor<?x` + strconv.Itoa(n) + `x` + elem + `>) -> tensor<?x` + strconv.Itoa(n) + `x` + elem + `> {
  %y = graph.softmax %x {axis = -1} : tensor<?x` + strconv.Itoa(n) + `x` + elem + `>
  return %y : tensor<?x` + strconv.Itoa(n) + `x` + elem + `>
}`
	}
	// long bf16 rows: a group of 256 threads per row, four vectors each,
	// the row kept in registers
	p := planOf(t, row(8192, "bf16"))
	assert.False(t, p.flat)
	assert.Equal(t, 256, p.group)
	assert.Equal(t, 1, p.rows)
	assert.Len(t, p.promoted, 1)
	assert.Empty(t, p.allocOffset)
	// short rows: several rows per CTA, groups within a warp
	p = planOf(t, row(64, "f32"))
	assert.Equal(t, 4, p.group)
	assert.Equal(t, 64, p.rows)
	assert.Equal(t, 256, p.block)
	assert.Zero(t, p.redBytes, "no cross-warp combine for groups within a warp")
	// rows of 32768 f32: 1024 threads, 8 vectors of 4 each, 32 registers
	p = planOf(t, row(32768, "f32"))
	assert.Equal(t, 1024, p.group)
	assert.Len(t, p.promoted, 1)
	assert.Equal(t, int64(32*4), p.redBytes, "one f32 per warp for each of max and sum... the larger")
	// without registers to spare, the row goes to shared memory
	regBudget = 0
	p = planOf(t, row(1000, "f32"))
	regBudget = 64
	assert.Empty(t, p.promoted)
	assert.Equal(t, int64(4000), p.groupBytes)
	assert.Equal(t, int64(4000)*int64(p.rows)+p.redBytes, p.shared)
	// element-wise: flat, long rows in chunks of 4 x 256 iterations
	p = planOf(t, `func.func @f(%x: tensor<?xf32>) -> tensor<?xf32> {
  %y = graph.exp %x : tensor<?xf32>
  return %y : tensor<?xf32>
}`)
	assert.True(t, p.flat)
	require.Len(t, p.phases, 2, "the vector loop and the scalar tail")
	assert.Equal(t, 256, p.phases[0].group)
	assert.Equal(t, 4, p.phases[0].unroll)
	assert.True(t, p.phases[0].guard)
	// short rows of a generic kernel: several rows per tile
	p = planOf(t, `func.func @f(%a: tensor<?x64xf32>, %b: tensor<64x48xf32>) -> tensor<?x48xf32> {
  %y = graph.matmul %a, %b : (tensor<?x64xf32>, tensor<64x48xf32>) -> tensor<?x48xf32>
  return %y : tensor<?x48xf32>
}`)
	assert.True(t, p.flat)
	require.Len(t, p.phases, 1)
	assert.Equal(t, 64, p.phases[0].group)
	assert.Equal(t, 4, p.phases[0].rows)
	assert.True(t, p.phases[0].nested)
	// rotate_half: the row's two halves are two loops of 8 instances per
	// tile; the second runs in the first's tiles (one sweep), so that a
	// row is read from DRAM once, not once per half
	p = planOf(t, `func.func @f(%q: tensor<64x128xbf16>, %c: tensor<128xbf16>) -> tensor<64x128xbf16> {
  %a = graph.slice %q {offsets = [0, 0], sizes = [64, 64]} : (tensor<64x128xbf16>) -> tensor<64x64xbf16>
  %b = graph.slice %q {offsets = [0, 64], sizes = [64, 64]} : (tensor<64x128xbf16>) -> tensor<64x64xbf16>
  %n = graph.neg %b : tensor<64x64xbf16>
  %r = graph.concat %n, %a {axis = 1} : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x128xbf16>
  %y = graph.mul %r, %c : (tensor<64x128xbf16>, tensor<128xbf16>) -> tensor<64x128xbf16>
  return %y : tensor<64x128xbf16>
}`)
	assert.True(t, p.flat)
	require.Len(t, p.phases, 2, "one loop per half")
	assert.Equal(t, p.phases[0].rows, p.phases[1].rows)
	assert.Greater(t, p.phases[0].rows, 1)
	assert.False(t, p.phases[0].join)
	assert.True(t, p.phases[1].join)
	assert.Len(t, p.sweeps(), 1)
}

// TestPlanShapes: groups that divide the row, copies that divide a flat
// loop's rows, more iterations per thread for rows reduced to one value,
// and the loads moved ahead of a combine.
func TestPlanShapes(t *testing.T) {
	for _, c := range []struct{ trip, target, want int64 }{
		{1024, 4, 256}, // 8192 bf16: 256 threads of 4 vectors
		{640, 4, 160},  // 5120 bf16: 160 of 4, not 256 with a third copy half idle
		{1792, 4, 448}, // 14336 bf16
		{512, 8, 64},   // 4096 bf16 reduced to one value per row: 64 of 8
		{250, 4, 64},   // no multiple of a warp divides: the power of two
		{8, 4, 2},      // short rows: groups within a warp
		{8192, 4, 1024},
	} {
		assert.Equal(t, int(c.want), groupFor(c.trip, c.target), "trip %d", c.trip)
	}
	assert.Equal(t, 7, flatUnroll(3584), "28672 bf16: two chunks of 7 copies")
	assert.Equal(t, 4, flatUnroll(4096))
	assert.Equal(t, 4, flatUnroll(1000), "not whole chunks: 4 copies, guarded")
	assert.Equal(t, 2, flatUnroll(300))

	p := planOf(t, rmsSiluMul)
	var ahead []string
	for _, loads := range p.prefetch {
		for _, l := range loads {
			ahead = append(ahead, l.Operand(0).Name)
		}
	}
	assert.Equal(t, []string{"z"}, ahead, "z ahead of the combine; w, the same for every row, where it is used")
	assert.True(t, p.narrowRows)

	p = planOf(t, `func.func @f(%s: tensor<?x4096xbf16>) -> tensor<?xf32> {
  %x = graph.cast %s : (tensor<?x4096xbf16>) -> tensor<?x4096xf32>
  %l = graph.logsumexp %x {axis = -1} : (tensor<?x4096xf32>) -> tensor<?xf32>
  return %l : tensor<?xf32>
}`)
	assert.Equal(t, 64, p.group)

	p = planOf(t, `func.func @f(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xf32> {
  %y = graph.logaddexp %a, %b : tensor<?xf32>
  return %y : tensor<?xf32>
}`)
	require.True(t, p.flat)
	assert.Len(t, p.prefetch[p.phases[0].loop], 2, "the loads of a and b of every copy first")
}

func TestSplit(t *testing.T) {
	for _, c := range []struct {
		w, esize, align int64
		want            piece
	}{
		{8, 2, 16, piece{16, 4, 4}}, // 8 bf16: one v4.b32
		{4, 4, 16, piece{16, 4, 4}}, // 4 f32: one v4.f32
		{8, 4, 16, piece{16, 4, 4}}, // 8 f32: two v4.f32
		{8, 2, 4, piece{4, 4, 1}},   // 8 bf16, 4-byte aligned: four b32
		{4, 4, 4, piece{4, 4, 1}},   // 4 f32 at an unknown multiple of 4 bytes: scalars
		{2, 8, 16, piece{16, 8, 2}}, // 2 f64: one v2.f64
		{4, 1, 16, piece{4, 4, 1}},  // 4 ui8: one b32
		{2, 1, 16, piece{1, 1, 1}},  // 2 ui8: bytes (no b16 packing of bytes)
		{1, 2, 2, piece{2, 2, 1}},   // one bf16
	} {
		assert.Equal(t, c.want, split(c.w, c.esize, c.align), "%d x %d bytes at %d", c.w, c.esize, c.align)
	}
}

func TestErrors(t *testing.T) {
	// f64 gelu has no sequence: an error at the op, not a panic
	m := lower(t, `func.func @g(%x: tensor<?xf64>) -> tensor<?xf64> {
  %y = graph.gelu %x : tensor<?xf64>
  return %y : tensor<?xf64>
}`, fullPipeline, "h200")
	_, err := Emit(m)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "'loop.gelu' op is not supported on f64 by the PTX emitter")
	assert.Contains(t, err.Error(), "test.tir:2:")

	// a module that is not lowered
	m = lower(t, `func.func @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.exp %x : tensor<4xf32>
  return %y : tensor<4xf32>
}`, "canonicalize", "h200")
	_, err = Emit(m)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not lowered")

	// a function named like a Python keyword
	m = lower(t, `func.func @lambda(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.exp %x : tensor<4xf32>
  return %y : tensor<4xf32>
}`, fullPipeline, "h200")
	files, err := Emit(m)
	require.NoError(t, err)
	require.Len(t, files, 2)
	assert.Contains(t, files[1].Text, "\ndef lambda_(")

	_, err = Emit(ir.Module{})
	require.Error(t, err)
}

func TestWriteDir(t *testing.T) {
	m := lower(t, rmsSiluMul, fullPipeline, "h200")
	dir := filepath.Join(t.TempDir(), "out")
	paths, err := WriteDir(m, dir)
	require.NoError(t, err)
	require.Equal(t, []string{filepath.Join(dir, "rms_silu_mul.ptx"), filepath.Join(dir, "rms_silu_mul.py")}, paths)
	b, err := os.ReadFile(paths[0])
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(b), "//"))
}
