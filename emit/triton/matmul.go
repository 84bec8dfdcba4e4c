package triton

import (
	"fmt"
	"os"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// ---------------------------------------------------------------------------
// Matmul kernels
//
// A kernel of kind "matmul" (loop.MatchMatMul) whose operands are bf16,
// f16 or f32 becomes a tiled tensor-core kernel: each program computes a
// BM x BN tile of one matrix of the result with tl.dot over K, BK at a
// time, accumulating in f32 (f32 operands in IEEE f32, not TF32), and
// applies the epilogue of the loop IR to the whole tile before it stores
// it:
//
//	acc0 = tl.zeros((BM, BN), dtype=tl.float32)
//	for kk in range(0, tl.cdiv(4096, BK)):
//	    a_t = tl.load(a_ptrs)
//	    acc0 = tl.dot(a_t, tl.load(b0_ptrs), acc0)
//	    ...
//	t3 = _silu(acc0) * acc1
//	tl.store(y + ((rows * 14336) + cols), t3.to(tl.bfloat16), mask=omask)
//
// Rows and columns past the ends of the result are clamped to the last
// one for every load (so no load needs a mask) and masked at the store.
//
// Split-K: when the grid of tiles would leave most of the GPU idle (decode
// shapes of a few rows against a narrow N, such as a down projection's
// 4096 columns), the launcher splits K into SPLIT_K parts. Each program
// sums one part and stores its f32 accumulators in a workspace; the last
// part of a tile to finish (a counter per tile, SERIAL) adds the parts up
// in a fixed order and applies the epilogue, so the result does not
// depend on the order the programs ran in. With TENSORFORGE_MM_SERIAL=0
// a second launch of the same kernel (EPI) does that instead.

// Programs walk the tiles in groups of GROUP_M rows of tiles, so that the
// right operand's columns stay in L2 while a group reads them. The tile
// configuration is chosen at launch from the number of rows M (decode
// shapes of 1 to 64 rows take narrow tiles, prefill wide ones):
// matmulConfigs.

// tiledMatMul turns the tiled form on (the default); with
// TENSORFORGE_TILED_MATMUL=0 in the environment matmul kernels run as
// generic kernels, for comparison.
var tiledMatMul = os.Getenv("TENSORFORGE_TILED_MATMUL") != "0"

// matmulPlan is what a tiled matmul kernel needs at launch.
type matmulPlan struct {
	match *loop.MatMul
	out   *ir.Value // the first output buffer: its extents are the result's
	elem  ir.ElemKind
	acc   ir.ElemKind // f32, or i32 for int8 operands
	// i8Bits: convert i8 / ui8 right operands through f32 bits
	// (Options.I8Bits)
	i8Bits bool
}

// tileMatMul returns the plan of matmul kernel k when the Triton emitter
// tiles it, nil when it runs as a generic kernel (other element types).
func tileMatMul(k loop.KernelOp) (*matmulPlan, error) {
	if k.Kind() != "matmul" || !tiledMatMul {
		return nil, nil
	}
	mm, err := loop.MatchMatMul(k)
	if err != nil {
		// operands read through index maps the tiles do not take (a
		// transposed left operand): a generic kernel
		return nil, nil
	}
	if len(mm.Dots) > 4 {
		return nil, nil // (matmulLocals names four accumulators)
	}
	elem := elemKind(mm.Dots[0].Lhs.Output().Type())
	acc := ir.F32
	switch elem {
	case ir.BF16, ir.F16, ir.F32:
	case ir.I8:
		acc = ir.I32 // int8 x int8 accumulated in int32, exactly
	default:
		return nil, nil
	}
	for _, d := range mm.Dots {
		if elemKind(d.Lhs.Output().Type()) != elem || !loop.TiledOperands(elem, elemKind(d.Rhs.Output().Type())) {
			return nil, nil
		}
		if elemKind(d.Loop.Values()[0].Type()) != acc {
			return nil, nil
		}
	}
	body := k.Body().Entry()
	out := body.Args[k.NumInputs()]
	if m, ok := out.Type().(ir.MemRefType); !ok || len(m.Shape) < 2 {
		return nil, nil
	}
	return &matmulPlan{match: mm, out: out, elem: elem, acc: acc}, nil
}

// matmulConfig is one tile configuration, for results of at most maxM
// rows (0: any).
type matmulConfig struct {
	maxM               int64
	bm, bn, bk, groupM int64
	warps, stages      int64
	comment            string
}

// matmulConfigs are the launch choices by rows, first match wins, from
// bench/gpu/matmul.py --sweep on the H200 (2026-12-02, Llama-3-8B's
// projections; bench/results/gpu-h200-2026-12-02-matmul-sweep.json):
// 32 x 64 tiles at 32 rows and 128 x 256 with 4 stages at 4096 rows
// (several dot products halve BN: matmulConfigText). Up to 16 rows,
// 16 x 64 tiles over BK = 256 at 3 stages: with the weights read from
// DRAM, as a decode step reads them (bench/gpu/gemv_sweep.py, H100,
// 2026-12-06, bench/results/gpu-h100-2026-12-06-gemv-sweep-cold.txt),
// at 1 row the gate/up kernel took 78.4 us against 80.9 with the
// 16 x 128 x 128 tiles chosen before (cuBLAS, two calls: 80.2), the
// down projection 41.9 against 42.8 (cuBLAS 42.8), q and o 15.2 against
// 15.5 (cuBLAS 15.4), k and v 7.2 (cuBLAS 8.4).
var matmulConfigs = []matmulConfig{
	{maxM: 16, bm: 16, bn: 64, bk: 256, groupM: 1, warps: 4, stages: 3, comment: "decode"},
	{maxM: 64, bm: 32, bn: 64, bk: 128, groupM: 1, warps: 4, stages: 4},
	{maxM: 512, bm: 128, bn: 128, bk: 64, groupM: 8, warps: 4, stages: 4},
	{maxM: 0, bm: 128, bn: 256, bk: 64, groupM: 8, warps: 8, stages: 4, comment: "prefill"},
}

// int8Prefill replaces the widest configuration for int8 operands: 128 x
// 128 x 128 tiles at 3 stages were the fastest of the sweep at 4096 rows
// (0.399 ms against 0.532 with 128 x 256 x 64 on Llama-3-8B's up
// projection, H200 2026-12-02; bench/results/gpu-h200-2026-12-02-matmul-w8a8.json).
var int8Prefill = matmulConfig{maxM: 0, bm: 128, bn: 128, bk: 128, groupM: 8, warps: 8, stages: 3}

// narrowRows replaces the configuration of 17 to 64 rows for one dot
// product of float operands: 32 x 32 tiles over BK = 256 give the grid
// twice the programs of 32 x 64 (128 for N = 4096), so that split-K is
// not needed there. At 32 rows, CUDA-graph replay on an H100
// (2026-12-06, bench/gpu/gemv_sweep.py --rows 32,
// bench/results/gpu-h100-2026-12-06-gemv-sweep-32.txt): the down
// projection (K = 14336, N = 4096) 42.78 us against 44.73 with 32 x 64 x
// 128 and cuBLAS's 44.52; q and o 11.20 against 12.61; k and v 6.74
// against 7.68. `--tune` on the H200 chose the same tiles for the down
// projection at 32 rows (lit-tests/tfc/Inputs/tune-h200.json). Gate and
// up (two dot products) keep 32 x 64 x 128: 80.0 us against 89.6.
var narrowRows = matmulConfig{maxM: 64, bm: 32, bn: 32, bk: 256, groupM: 1, warps: 4, stages: 4}

// wideDecode replaces the decode configuration of one dot product over
// wideDecodeCols columns or more: the 16 x 64 tiles would make a grid of
// more than a wave of programs there. At 1 row, weights read from DRAM
// (H100, 2026-12-06, bench/results/gpu-h100-2026-12-06-gemv-sweep-cold.txt),
// Llama-3-8B's up projection alone (N = 14336) took 42.0 us with 16 x 128
// x 128 tiles against 45.2 with 16 x 64 x 256 (cuBLAS 43.2), while q and o
// (N = 4096) took 15.4 with 16 x 128 x 128 and 15.2 with 16 x 64 x 256.
// Gate and up as one kernel of two dot
// products keep 16 x 64 x 256 (78.4 us against 80.9 with 16 x 128 x 128,
// 83.6 with 16 x 64 x 128): the threshold is between 4096 and 14336.
var wideDecode = matmulConfig{maxM: 16, bm: 16, bn: 128, bk: 128, groupM: 1, warps: 4, stages: 4}

const wideDecodeCols = 8192

// widen converts a right operand's tile b of kind rk to the left
// operand's type t. With i8Bits an i8 or ui8 tile goes through the bits of
// an f32: the integer added to the bits of 1.5 * 2^23 is the f32 1.5 *
// 2^23 + v (exact below 2^24), less 1.5 * 2^23 is v; for bf16 the upper
// half of v's f32 is its bf16 (v has 8 significant bits at most), moved
// by a shift, for f16 a cast (exact).
func (mp *matmulPlan) widen(b string, rk ir.ElemKind, t string) string {
	if !mp.i8Bits || (rk != ir.I8 && rk != ir.UI8) || (mp.elem != ir.BF16 && mp.elem != ir.F16) {
		return b + ".to(" + t + ")"
	}
	f := fmt.Sprintf("((%s.to(tl.int32) + 0x4B400000).to(tl.float32, bitcast=True) - 12582912.0)", b)
	if mp.elem == ir.F16 {
		return f + ".to(tl.float16)"
	}
	return fmt.Sprintf("(%s.to(tl.int32, bitcast=True) >> 16).to(tl.int16).to(tl.bfloat16, bitcast=True)", f)
}

// dequantDecode replaces the decode configuration of a kernel whose right
// operand is converted as it is loaded (an int8 or f8 weight of a bf16
// matmul): a tile of int8 weights holds half the bytes of a bf16 one, so
// it is wider and has more warps. On the int8-weight up projection
// (K = 4096, N = 14336, weights read from DRAM, H100, 2026-12-06,
// bench/results/gpu-h100-2026-12-06-gemv-sweep-cold.txt) 16 x 128 x 256 at
// 8 warps and 4 stages took 26.1 us at 1 row and 24.2 at 16 rows against
// 28.1 and 25.6 with 16 x 128 x 128 at 4 warps and 31.9 at 1 row with the
// float decode tiles; cuBLAS's bf16 GEMV of the shape took 42.3 and 43.8.
var dequantDecode = matmulConfig{maxM: 16, bm: 16, bn: 128, bk: 256, groupM: 1, warps: 8, stages: 4}

// dequantizes reports whether some dot product of the plan converts its
// right operand from a narrower type as it loads it.
func (mp *matmulPlan) dequantizes() bool {
	for _, d := range mp.match.Dots {
		if elemKind(d.Rhs.Output().Type()) != mp.elem {
			return true
		}
	}
	return false
}

// columns is the static last extent of the plan's result (ir.Dynamic when
// it is not static).
func (mp *matmulPlan) columns() int64 {
	m, ok := mp.out.Type().(ir.MemRefType)
	if !ok || len(m.Shape) == 0 {
		return ir.Dynamic
	}
	return m.Shape[len(m.Shape)-1]
}

// maxPipelineBytes is the shared memory a block may hold on sm_90 (227
// KiB), which Triton's OutOfResources reports against.
const maxPipelineBytes = 232448

// fitShared returns c with its pipeline within maxPipelineBytes: Triton
// keeps num_stages - 1 tiles of the left operand and of each dot
// product's right operand in shared memory (16 x 64 x 512 at 3 stages
// over two dot products of bf16 asked 294912 bytes, 2 x (16 * 512 * 2 +
// 2 * 64 * 512 * 2)), so stages drop to 2, then BN halves.
func (mp *matmulPlan) fitShared(c matmulConfig) matmulConfig {
	for mp.pipelineBytes(c) > maxPipelineBytes && c.stages > 2 {
		c.stages--
	}
	for mp.pipelineBytes(c) > maxPipelineBytes && c.bn > 16 {
		c.bn /= 2
	}
	return c
}

// pipelineBytes is the shared memory Triton asks for c: num_stages - 1
// tiles of the left operand and of each dot product's right operand.
func (mp *matmulPlan) pipelineBytes(c matmulConfig) int64 {
	stage := c.bm * c.bk * mp.elem.ByteSize()
	for _, d := range mp.match.Dots {
		stage += c.bn * c.bk * elemKind(d.Rhs.Output().Type()).ByteSize()
	}
	return (c.stages - 1) * stage
}

// matmulConfigText is the CONFIGS entry of the tiled matmul kernel of
// plan mp: a list of configurations by rows.
func matmulConfigText(mp *matmulPlan) string {
	dots, int8 := len(mp.match.Dots), mp.acc == ir.I32
	n := mp.columns()
	var parts []string
	for _, c := range matmulConfigs {
		if int8 && c.maxM == 0 {
			c = int8Prefill
		}
		if c.maxM == wideDecode.maxM && dots == 1 && n != ir.Dynamic && n >= wideDecodeCols {
			c = wideDecode
		}
		if c.maxM == dequantDecode.maxM && mp.dequantizes() {
			c = dequantDecode
		}
		if c.maxM == narrowRows.maxM && dots == 1 && !int8 {
			c = narrowRows
		}
		// several accumulators share the registers of one tile
		for t := dots; t > 1 && c.bm*c.bn > 128*128; t /= 2 {
			c.bn /= 2
		}
		c = mp.fitShared(c)
		parts = append(parts, fmt.Sprintf(`{"max_m": %d, "BM": %d, "BN": %d, "BK": %d, "GROUP_M": %d, "num_warps": %d, "num_stages": %d}`,
			c.maxM, c.bm, c.bn, c.bk, c.groupM, c.warps, c.stages))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// matmulLocals are the names of a tiled matmul kernel's own variables.
var matmulLocals = []string{"pid", "pid_b", "npm", "npn", "gw", "first_m", "gsize", "pid_m", "pid_n", "offs_m", "offs_n", "offs_k",
	"rows", "cols", "omask", "a_ptrs", "a_t", "kk", "krem", "BM", "BN", "BK", "GROUP_M", "acc0", "acc1", "acc2", "acc3",
	"b0_ptrs", "b1_ptrs", "b2_ptrs", "b3_ptrs", "pid_k", "k_lo", "k_hi", "k_per", "s_k", "nb", "ws_off",
	"mm_ws", "mm_lock", "lock", "last", "SPLIT_K", "EPI", "SERIAL"}

// maxTile is the largest BN and BK of matmulConfigs: an extent that is a
// multiple of it needs no clamp (N) or mask (K) for any configuration.
const maxTile = 256

// emitMatMul returns the text of a tiled matmul kernel.
func (k *kernelEmitter) emitMatMul() (string, error) {
	mp := k.plan.mm
	mm := mp.match
	// the names the tile code uses are not the kernel's
	k.names = newNamer(append(append([]string(nil), helperNames...), matmulLocals...)...)
	if err := k.bindParams(); err != nil {
		return "", err
	}
	ext := k.extents[mp.out]
	n := len(ext)
	M, N := ext[n-2], ext[n-1]
	K := mm.Dots[0].K
	w := k.w
	for op := k.body.First(); op != mm.Grid.Operation; op = op.Next() {
		if err := k.emitOp(op); err != nil {
			return "", err
		}
	}
	for _, l := range []string{
		"pid = tl.program_id(0)",
		"pid_b = tl.program_id(1)",
		fmt.Sprintf("npm = tl.cdiv(%s, BM)", M),
		fmt.Sprintf("npn = tl.cdiv(%s, BN)", N),
		"gw = GROUP_M * npn",
		"first_m = (pid // gw) * GROUP_M",
		"gsize = tl.minimum(npm - first_m, GROUP_M)",
		"pid_m = first_m + (pid % gw) % gsize",
		"pid_n = (pid % gw) // gsize",
		"offs_m = pid_m * BM + tl.arange(0, BM)",
		"offs_n = pid_n * BN + tl.arange(0, BN)",
		"offs_k = tl.arange(0, BK)",
	} {
		w.line(l)
	}
	w.line(fmt.Sprintf("rows = pid_b * %s + tl.minimum(offs_m, %s - 1)[:, None]", atom(M), atom(M)))
	if nc, ok := staticExtent(N); ok && nc%maxTile == 0 {
		w.line("cols = offs_n[None, :]")
	} else {
		w.line(fmt.Sprintf("cols = tl.minimum(offs_n, %s - 1)[None, :]", atom(N)))
	}
	w.line(fmt.Sprintf("omask = (offs_m[:, None] < %s) & (offs_n[None, :] < %s)", M, N))
	r := mm.Grid.Body().Entry().Args[0]
	j := mm.Cols.Body().Entry().Args[0]
	row0 := "pid_b * " + atom(M)

	// the operands' tiles
	first := mm.Dots[0]
	kA := first.Loop.Body().Entry().Args[0]
	aOff, err := k.inlineOffset(first.Lhs.Operation, first.Lhs.Memref(), first.Lhs.Indices(), map[*ir.Value]string{r: "rows", kA: "offs_k[None, :]"})
	if err != nil {
		return "", err
	}
	w.line("a_ptrs = " + join("+", k.ref(first.Lhs.Memref()), aOff))
	accType, zero := "tl.float32", "0.0"
	if mp.acc == ir.I32 {
		accType, zero = "tl.int32", "0"
	}
	bPtrs := make([]string, len(mm.Dots))
	bStep := make([]string, len(mm.Dots))
	accs := make([]string, len(mm.Dots))
	for i, d := range mm.Dots {
		kv := d.Loop.Body().Entry().Args[0]
		off, err := k.inlineOffset(d.Rhs.Operation, d.Rhs.Memref(), d.Rhs.Indices(), map[*ir.Value]string{r: row0, j: "cols", kv: "offs_k[:, None]"})
		if err != nil {
			return "", err
		}
		bPtrs[i] = fmt.Sprintf("b%d_ptrs", i)
		w.line(bPtrs[i] + " = " + join("+", k.ref(d.Rhs.Memref()), off))
		bStep[i] = "BK"
		if !d.TransposeB {
			bStep[i] = "BK * " + atom(N)
		}
		accs[i] = fmt.Sprintf("acc%d", i)
		w.line(accs[i] + " = tl.zeros((BM, BN), dtype=" + accType + ")")
	}
	// the workspace of split-K: [SPLIT_K, dots, batch, M, N] in f32
	w.line("pid_k = tl.program_id(2)")
	w.line("nb = tl.num_programs(1)")
	w.line(fmt.Sprintf("ws_off = (pid_b * %s + offs_m[:, None]) * %s + offs_n[None, :]", atom(M), atom(N)))
	wsAt := func(part string, i int) string {
		if len(mm.Dots) > 1 {
			part = fmt.Sprintf("(%s * %d + %d)", part, len(mm.Dots), i)
		}
		return fmt.Sprintf("mm_ws + %s * nb * %s + ws_off", part, mulExpr(atom(M), atom(N)))
	}
	w.open("if EPI:")
	w.open("for s_k in range(SPLIT_K):")
	for i := range mm.Dots {
		w.line(fmt.Sprintf("%s += tl.load(%s, mask=omask, other=%s)", accs[i], wsAt("s_k", i), zero))
	}
	w.close()
	w.close()
	w.open("else:")
	w.open("if SPLIT_K == 1:")
	w.line("k_lo = 0")
	w.line(fmt.Sprintf("k_hi = tl.cdiv(%d, BK)", K))
	w.close()
	w.open("else:")
	w.line(fmt.Sprintf("k_per = tl.cdiv(tl.cdiv(%d, BK), SPLIT_K)", K))
	w.line("k_lo = pid_k * k_per")
	w.line(fmt.Sprintf("k_hi = tl.minimum(k_lo + k_per, tl.cdiv(%d, BK))", K))
	w.line("a_ptrs += k_lo * BK")
	for i := range mm.Dots {
		w.line(fmt.Sprintf("%s += k_lo * %s", bPtrs[i], bStep[i]))
	}
	w.close()
	kmask := K%maxTile != 0
	prec := ""
	switch {
	case mp.elem == ir.F32:
		prec = `, input_precision="ieee"`
	case mp.acc == ir.I32:
		prec = ", out_dtype=tl.int32" // (tl.dot's default is f32)
	}
	w.open("for kk in range(k_lo, k_hi):")
	aMask, bMask := "", ""
	if kmask {
		w.line(fmt.Sprintf("krem = %d - kk * BK", K))
		aMask, bMask = ", mask=offs_k[None, :] < krem, other="+zero, ", mask=offs_k[:, None] < krem, other="+zero
	}
	w.line("a_t = tl.load(a_ptrs" + aMask + ")")
	for i, d := range mm.Dots {
		b := fmt.Sprintf("tl.load(%s%s)", bPtrs[i], bMask)
		if rk := elemKind(d.Rhs.Output().Type()); rk != mp.elem {
			// the dequantize prologue: converted as it is loaded
			t, err := tlType(mp.elem)
			if err != nil {
				return "", err
			}
			b = mp.widen(b, rk, t)
		}
		w.line(fmt.Sprintf("%s = tl.dot(a_t, %s, %s%s)", accs[i], b, accs[i], prec))
	}
	w.line("a_ptrs += BK")
	for i := range mm.Dots {
		w.line(fmt.Sprintf("%s += %s", bPtrs[i], bStep[i]))
	}
	w.close()
	w.close()
	// a part of split-K stores its sums; the epilogue runs once they are in
	w.open("if SPLIT_K > 1 and not EPI:")
	for i := range mm.Dots {
		w.line(fmt.Sprintf("tl.store(%s, %s, mask=omask)", wsAt("pid_k", i), accs[i]))
	}
	w.close()
	// serial split-K: the tile's counter says which part finished last;
	// that program adds the parts in order and runs the epilogue
	w.open("if SPLIT_K > 1 and SERIAL:")
	w.line("tl.debug_barrier()")
	w.line("lock = mm_lock + pid_b * tl.num_programs(0) + pid")
	w.line("last = tl.atomic_add(lock, 1) == SPLIT_K - 1")
	for i := range mm.Dots {
		w.line(accs[i] + " = tl.zeros((BM, BN), dtype=" + accType + ")")
	}
	w.open("for s_k in range(SPLIT_K):")
	for i := range mm.Dots {
		w.line(fmt.Sprintf("%s += tl.load(%s, mask=omask & last, other=%s, cache_modifier=\".cg\")", accs[i], wsAt("s_k", i), zero))
	}
	w.close()
	w.line("tl.atomic_xchg(lock, 0, mask=last)")
	w.line("omask = omask & last")
	w.close()
	w.open("if SPLIT_K == 1 or EPI or SERIAL:")

	// the epilogue, on whole tiles: the row values at rows, the column
	// values at cols, each dot product its accumulator
	k.bind(r, "rows")
	k.bind(j, "cols")
	for i, d := range mm.Dots {
		k.bind(d.Loop.Values()[0], accs[i])
		d.Loop.Operation.Walk(func(o *ir.Operation) bool {
			k.emitted[o] = true
			return true
		})
	}
	emit := func(b *ir.Block) error {
		for op := b.First(); op != nil; op = op.Next() {
			if op == mm.Cols.Operation || k.emitted[op] {
				continue
			}
			if err := k.emitTileOp(op); err != nil {
				return err
			}
		}
		return nil
	}
	if err := emit(mm.Grid.Body().Entry()); err != nil {
		return "", err
	}
	if err := emit(mm.Cols.Body().Entry()); err != nil {
		return "", err
	}
	w.close()
	w.prune()

	var sb strings.Builder
	sb.WriteString("@triton.jit\n")
	consts := []string{"mm_ws", "mm_lock", "BM: tl.constexpr", "BN: tl.constexpr", "BK: tl.constexpr", "GROUP_M: tl.constexpr",
		"SPLIT_K: tl.constexpr", "EPI: tl.constexpr", "SERIAL: tl.constexpr"}
	fmt.Fprintf(&sb, "def %s(%s):\n", k.name, strings.Join(append(append([]string(nil), k.params...), consts...), ", "))
	fmt.Fprintf(&sb, "    # matmul: %d dot product(s) over K = %d with tl.dot, BM x BN tiles, then the epilogue on each tile\n", len(mm.Dots), K)
	sb.WriteString(w.render(1))
	return sb.String(), nil
}

// emitTileOp translates an op of a matmul kernel's epilogue: loads and
// stores address whole tiles (rows clamped, stores masked by omask).
func (k *kernelEmitter) emitTileOp(op *ir.Operation) error {
	switch op.Name() {
	case loop.OpLoad:
		k.emitted[op] = true
		ld, _ := loop.AsLoad(op)
		off, err := k.inlineOffset(op, ld.Memref(), ld.Indices(), nil)
		if err != nil {
			return err
		}
		name := k.fresh(ld.Output())
		k.w.assign(name, "tl.load("+join("+", k.ref(ld.Memref()), off)+")")
		k.bind(ld.Output(), name)
		return nil
	case loop.OpStore:
		k.emitted[op] = true
		st, _ := loop.AsStore(op)
		off, err := k.inlineOffset(op, st.Memref(), st.Indices(), nil)
		if err != nil {
			return err
		}
		ptr := join("+", k.ref(st.Memref()), off)
		if ids := identifiers(off); !contains(ids, "rows") || !contains(ids, "cols") {
			// an offset without the rows (a result of one row, its index
			// folded to 0) or the columns spans less than the tile omask
			// masks: widen it to the tile
			ptr = fmt.Sprintf("tl.broadcast_to(%s, (BM, BN))", ptr)
		}
		k.w.line(fmt.Sprintf("tl.store(%s, %s, mask=omask)", ptr, k.ref(st.Value())))
		return nil
	case loop.OpFor, loop.OpParallel, loop.OpReduce:
		return kernelError(op, "is not element-wise, which a matmul kernel's epilogue is")
	}
	return k.emitOp(op)
}

// inlineOffset spells the row-major offset of indices idx of buffer buf
// as one expression, the index values given by sub or already named.
func (k *kernelEmitter) inlineOffset(at *ir.Operation, buf *ir.Value, idx []*ir.Value, sub map[*ir.Value]string) (string, error) {
	ext, ok := k.extents[buf]
	if !ok || len(ext) != len(idx) {
		return "", kernelError(at, "addresses a buffer that is not a kernel argument, or with the wrong number of indices")
	}
	off := ""
	for d, x := range idx {
		s, err := k.inlineIndex(at, x, sub)
		if err != nil {
			return "", err
		}
		if d == 0 {
			off = s
			continue
		}
		off = join("+", mulExpr(off, ext[d]), s)
	}
	if off == "" {
		off = "0"
	}
	return off, nil
}

// inlineIndex spells index value v: from sub, its name, a literal, or the
// index arithmetic computing it.
func (k *kernelEmitter) inlineIndex(at *ir.Operation, v *ir.Value, sub map[*ir.Value]string) (string, error) {
	if s, ok := sub[v]; ok {
		return s, nil
	}
	if c, kind, ok := constOf(v); ok {
		return pyLiteral(c, kind), nil
	}
	op := v.DefiningOp()
	if op == nil || sub == nil {
		if s, ok := k.env[v]; ok {
			return s, nil
		}
		return "", kernelError(at, "reads an index the tiled matmul cannot spell")
	}
	switch op.Name() {
	case loop.OpAddi, loop.OpSubi, loop.OpMuli, loop.OpDivi, loop.OpRemi, loop.OpMini:
		a, err := k.inlineIndex(at, op.Operand(0), sub)
		if err != nil {
			return "", err
		}
		b, err := k.inlineIndex(at, op.Operand(1), sub)
		if err != nil {
			return "", err
		}
		if op.Name() == loop.OpMuli {
			return mulExpr(a, b), nil
		}
		return "(" + hostIndexExpr(op.Name(), a, b) + ")", nil
	}
	if s, ok := k.env[v]; ok {
		return s, nil
	}
	return "", kernelError(op, "computes an index of a matmul operand, which the tiled matmul reads only through index arithmetic")
}

// staticExtent parses an extent spelled as a literal.
func staticExtent(e string) (int64, bool) {
	var n int64
	if _, err := fmt.Sscan(e, &n); err != nil || fmt.Sprint(n) != e {
		return 0, false
	}
	return n, true
}

// matmulConfigSource chooses a tiled matmul's configuration by rows, and
// the number of parts split-K cuts K into.
const matmulConfigSource = `def _mm_config(configs, m):
    """The first configuration of a matmul kernel for m rows (CONFIGS)."""
    for c in configs:
        if c["max_m"] == 0 or m <= c["max_m"]:
            return c
    return configs[-1]


_MM_SMS = {}

# The fewest steps of BK a part of split-K keeps (TENSORFORGE_MM_MIN_STEPS
# overrides it, for measurements). 2 measured faster than 24 on every decode
# GEMV of a Llama-3-8B layer on the H200 (bench/results/
# e2e-h200-2026-12-03-min-steps.txt): the q and o projections (K = 4096 over
# 32 tiles) 16.2 -> 12.2 and 16.4 -> 13.1 us, k and v (8 tiles) 15.2 -> 9.4 us.
_MM_MIN_STEPS = int(os.environ.get("TENSORFORGE_MM_MIN_STEPS", "2"))


# Split-K runs serially by default: one launch, whose last part to finish
# on each tile adds the parts and runs the epilogue. TENSORFORGE_MM_SERIAL=0
# launches the kernel a second time for that instead (EPI), for measurements.
_MM_SERIAL = os.environ.get("TENSORFORGE_MM_SERIAL", "1") != "0"
_MM_LOCKS = {}


def _mm_locks(dev, n):
    """At least n int32 counters at zero, one per tile of a serial split-K
    launch, kept per device and stream: each part of a tile adds 1 to its
    counter when its sums are stored, and the last one resets it to 0 for
    the next launch."""
    key = (dev, torch._C._cuda_getCurrentRawStream(dev.index if dev.index is not None else torch.cuda.current_device()))
    t = _MM_LOCKS.get(key)
    if t is None or t.numel() < n:
        t = _MM_LOCKS[key] = torch.zeros((max(n, 1024),), dtype=torch.int32, device=dev)
    return t


_MM_WS = {}


def _mm_ws(dev, n, dtype):
    """A workspace of at least n elements of dtype for the parts of a
    split-K launch, kept per device, stream and dtype: every part writes its
    sums before any reads them within the launch, and the launches of a
    stream run in order, so one buffer serves them all (no allocation per
    call). A miss while a CUDA graph is being captured is allocated for that
    graph alone, not kept."""
    key = (dev, torch._C._cuda_getCurrentRawStream(dev.index if dev.index is not None else torch.cuda.current_device()), dtype)
    t = _MM_WS.get(key)
    if t is None or t.numel() < n:
        if torch.cuda.is_current_stream_capturing():
            return torch.empty((n,), dtype=dtype, device=dev)
        t = _MM_WS[key] = torch.empty((n,), dtype=dtype, device=dev)
    return t


def _mm_split(cfg, dev, programs, k, size):
    """The number of parts split-K cuts K into: 1, unless the grid's
    programs would keep fewer than half the GPU's multiprocessors busy
    over a long K. Each halving of the parts keeps the grid within the
    multiprocessors, at least _MM_MIN_STEPS steps of BK in each part and the f32
    workspace (size elements per part) indexable in 32 bits: a decode
    GEMV is bound by its weight bytes, and a grid of a few dozen tiles
    reads them at a fraction of the bandwidth. A configuration's own
    SPLIT_K entry wins."""
    if "SPLIT_K" in cfg:
        return cfg["SPLIT_K"]
    if dev not in _MM_SMS:
        _MM_SMS[dev] = torch.cuda.get_device_properties(dev).multi_processor_count
    steps = -(-k // cfg["BK"])
    split = 1
    while 2 * programs * split <= _MM_SMS[dev] and steps // (2 * split) >= _MM_MIN_STEPS and 2 * split * size < 2**31:
        split *= 2
    return split
`

// emitMatMulLaunch writes the launch of a tiled matmul kernel: a program
// per tile of the result, in a grid of (tiles of one matrix, matrices,
// parts of K). With split-K the kernel is launched twice over one f32
// workspace: the parts, then the sum and the epilogue.
func (l *launcher) emitMatMulLaunch(kname string, k loop.KernelOp, mp *matmulPlan, call []string) error {
	args := k.Body().Entry().Args
	nbuf := int(k.NumInputs() + k.NumOutputs())
	// the extents of the result, from the launch's operands
	next := nbuf
	var ext []string
	for _, buf := range args[:nbuf] {
		m := buf.Type().(ir.MemRefType)
		for _, e := range m.Shape {
			spelled := fmt.Sprint(e)
			if e == ir.Dynamic {
				spelled = call[next]
				next++
			}
			if buf == mp.out {
				ext = append(ext, spelled)
			}
		}
	}
	n := len(ext)
	M, N := ext[n-2], ext[n-1]
	batch := "1"
	for _, e := range ext[:n-2] {
		batch = mulExpr(batch, e)
	}
	dots := len(mp.match.Dots)
	w := l.w
	w.assign("cfg", fmt.Sprintf("_mm_config(CONFIGS[%q], %s)", kname, M))
	w.assign("tiles", fmt.Sprintf(`_cdiv(%s, cfg["BM"]) * _cdiv(%s, cfg["BN"])`, M, N))
	size := mulExpr(mulExpr(mulExpr(fmt.Sprint(dots), batch), M), N)
	w.assign("split", fmt.Sprintf("_mm_split(cfg, %s, tiles * %s, %d, %s)", l.dev, atom(batch), mp.match.Dots[0].K, size))
	consts := []string{`BM=cfg["BM"]`, `BN=cfg["BN"]`, `BK=cfg["BK"]`, `GROUP_M=cfg["GROUP_M"]`, `num_warps=cfg["num_warps"]`, `num_stages=cfg["num_stages"]`}
	launch := func(grid, ws, lock, split, epi, serial string) string {
		c := append(append([]string(nil), call...), ws, lock)
		meta := append(append([]string(nil), consts...), "SPLIT_K="+split, "EPI="+epi, "SERIAL="+serial)
		return fmt.Sprintf("_launch(%s, %s, (%s), %s)", kname, grid, strings.Join(c, ", "), strings.Join(meta, ", "))
	}
	out := call[k.NumInputs()]
	if b, ok := staticExtent(batch); ok && b > 0 {
		w.open("if tiles > 0:")
	} else {
		w.open(fmt.Sprintf("if tiles > 0 and %s > 0:", atom(batch)))
	}
	w.open("if split > 1:")
	ws := l.names.fresh("mm_ws")
	wsType := "torch.float32"
	if mp.acc == ir.I32 {
		wsType = "torch.int32" // int32 sums stay exact
	}
	w.assign(ws, fmt.Sprintf("_mm_ws(%s, split * %s, %s)", l.dev, atom(size), wsType))
	w.open("if _MM_SERIAL:")
	w.line(launch(fmt.Sprintf("(tiles, %s, split)", batch), ws, fmt.Sprintf("_mm_locks(%s, tiles * %s)", l.dev, atom(batch)), "split", "False", "True"))
	w.close()
	w.open("else:")
	w.line(launch(fmt.Sprintf("(tiles, %s, split)", batch), ws, ws, "split", "False", "False"))
	w.line(launch(fmt.Sprintf("(tiles, %s, 1)", batch), ws, ws, "split", "True", "False"))
	w.close()
	w.close()
	w.open("else:")
	w.line(launch(fmt.Sprintf("(tiles, %s, 1)", batch), out, out, "1", "False", "False"))
	w.close()
	w.close()
	return nil
}
