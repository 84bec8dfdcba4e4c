package ptx

import (
	"fmt"
)

// This file is the wgmma form of the tensor-core matmul (sm_90a's
// warpgroup MMA): the tile order, split-K and epilogue of the mma.sync
// form of tc.go, with the multiply done by wgmma.mma_async reading both
// operands from shared memory, in CTA tiles of 128 x BN (BN 128, or 256
// for one dot product: wgWideN).
//
//	256 threads: warpgroup w (warps 4w..4w+3) owns rows 64w..64w+63 of
//	  the tile, one m64nBNk16 accumulator of BN/2 f32 a thread per dot
//	  product (the mma.sync C fragment repeated along n, warp q of the
//	  group its rows 16q..16q+15)
//	a stage: A [128][64] then each B [BN][64] (K-major: B is [n, k]),
//	  rows of 128 bytes in the 128-byte swizzle: 16-byte chunk c of row r
//	  lies at chunk c ^ (r % 8), the stages at 1024-byte boundaries
//	for kt:
//	  cp.async.wait_group; fence.proxy.async; bar.sync 0
//	  copy stage kt+stages-2 into the slot step kt-2 read; commit
//	  wgmma.fence; 4 k-steps of 16: wgmma A(kk) x B(kk) per dot product
//	  wgmma.commit_group; wgmma.wait_group 1 (step kt-1 is done)
//
// One step's wgmma stays in flight while the next step's copies and
// barrier run, so a slot is refilled two steps after it was read: the
// pipeline copies stages-2 steps ahead.
//
// Descriptors (PTX ISA, "Matrix Descriptor Format"): bits 0-13 the start
// address >> 4, 16-29 the leading byte offset >> 4 (1: unused by a
// K-major swizzled operand), 32-45 the stride byte offset >> 4 (1024:
// between groups of 8 rows), 62-63 the swizzle (1: 128 bytes). The k-step
// kk of a stage starts 32*kk bytes into the rows: the swizzle applies to
// the address bits (bits 4-6 ^= bits 7-9), so the start moves by 2.
//
// It takes kernels whose operands all have 16-byte aligned rows, K a
// multiple of 64 and every B [n, k] (transpose_b: linear layers' weights);
// the others keep mma.sync. On an H100 it ran the Llama-3-8B projections
// at 0.76-0.88 of cuBLAS at 4096 rows where mma.sync ran at 0.42-0.51
// (bench/results/gpu-h100-2026-12-07-wgmma.txt). WGMMA switches it off
// (tfc: TENSORFORGE_PTX_MMA=sync).

// WGMMA makes matmul kernels that can take the wgmma form take it.
var WGMMA = true

// wgNarrow makes planWG keep 128 columns: set while emitting the twin of
// a wide kernel whose rows are `?` (emitKernel).
var wgNarrow = false

// wgTwinSuffix names the 128-column twin of a wide kernel.
const wgTwinSuffix = "_n128"

const (
	wgAlign = 1024 // the 128-byte swizzle repeats every 8 rows of 128 bytes
	// wgDescHi: swizzle 128B (bit 62), stride byte offset 1024 >> 4 = 64
	// (bits 32-45), leading byte offset 1 (bits 16-29)
	wgDescHi = 1<<62 | 64<<32 | 1<<16
	wgStages = 5 // at most; fewer where shared memory runs short
	// wgInFlight is the steps whose wgmma stay in flight at the end of a
	// step (1: the next step's copies and barrier overlap it; the slot
	// it reads is refilled a step later, so the copies run one step
	// less ahead)
	wgInFlight = 1
	// wgWideN is the tile's columns for one dot product of more than
	// tcBN columns: m64n256k16, 128 accumulators a thread. Each k-step of
	// the CTA then moves 32 KiB through shared memory (12 copied in, 20
	// read by the two warpgroups) for 1 MFLOP, where 128 columns move 20
	// KiB for half of it: the tile is bound by shared memory's 128 bytes
	// a clock at 128 columns, not at 256. Two dot products keep 128 each
	// (they share A: the same ratio). On an H100 at 4096 rows the wide
	// tiles took qkv from 0.64 to 0.76 of cuBLAS, up 0.69 -> 0.78, down
	// 0.80 -> 0.88; at 1 and 32 rows (split-K over fewer tiles) they lost
	// 0.77-0.93 -> 0.66-0.82 (bench/results/gpu-h100-2026-12-07-wgmma.txt).
	// So a matmul whose rows are static takes them only where the wide
	// tiles fill the SMs (wgSMs); one whose rows are `?` is emitted both
	// ways, and the launcher takes the wide kernel where its tiles fill
	// the device's SMs, the 128-column twin elsewhere.
	wgWideN = 256
	wgSMs   = 132 // the H100's and H200's
)

// wgmmaTakes reports whether the matmul of tp takes the wgmma form.
func wgmmaTakes(tp *tcPlan) bool {
	if !WGMMA || tp.K%tcBK != 0 || !tp.alignedA {
		return false
	}
	for d, t := range tp.transB {
		if !t || !tp.alignedB[d] {
			return false
		}
	}
	return true
}

// planWG sets tp up for the wgmma form; rowTiles is the tiles along the
// rows of the result (batches times ceil(M / 128)) where they are static,
// else -1.
func planWG(tp *tcPlan, rowTiles int64) {
	tp.wg = true
	// (a dequantized weight keeps 128 columns: on the H100 the 128 x 256
	// tiles' accumulators and conversions took 255 registers and spilled
	// 216 bytes, bench/results/e2e-h100-2026-12-07-s7.txt; so does the
	// int8 form, whose 128 x 256 tiles spilled 188 bytes,
	// bench/results/gpu-h100-2026-12-07-s8-int8.txt)
	if len(tp.transB) == 1 && tp.N > tcBN && !wgNarrow && !tp.dequant() && !tp.int8 && (rowTiles < 0 || rowTiles*ceilDiv(tp.N, wgWideN) >= wgSMs) {
		tp.bn = wgWideN
		tp.wideDyn = rowTiles < 0
	}
	tp.twin = wgNarrow && len(tp.transB) == 1 && tp.N > tcBN && rowTiles < 0
	tp.threads, tp.warpsN, tp.wtn = 256, 1, tp.bn
	row := int64(tcBK * 2) // a K row of a stage: 128 bytes
	tp.bOff = tp.bOff[:0]
	off := tcBM * row
	for range tp.transB {
		tp.bOff = append(tp.bOff, off)
		off += tp.bn * row
	}
	if tp.dequant() {
		// the weights' bytes after the stage's halves: each step
		// converts them into B (wgConvert)
		tp.b8Off = tp.b8Off[:0]
		for range tp.transB {
			tp.b8Off = append(tp.b8Off, off)
			off += tp.bn * tp.pitchB8()
		}
	}
	tp.stageBytes = off
	tp.stages = wgStages
	for tp.stages > 3 && tp.sharedBytes() > maxSharedBytes {
		tp.stages--
	}
}

// wgDescs is the per-thread state of the wgmma form: the descriptors of
// stage 0 (A: the warpgroup's 64 rows; each B: all 128 rows) and the
// predicate scale-d (true: D += A x B).
type wgDescs struct {
	a   opnd
	b   []opnd
	acc opnd
}

// wgBase is the first 1024-byte boundary in the CTA's shared memory.
func (ke *kernelEmitter) wgBase() opnd {
	r := ke.b64("add.s64", ke.smemCTA, intImm(wgAlign-1, rB64))
	r = ke.b64("shr.u64", r, intImm(10, rB32))
	return ke.b64("shl.b64", r, intImm(10, rB32))
}

// wgDescriptors computes the descriptors of stage 0 for the thread's
// warpgroup.
func (ke *kernelEmitter) wgDescriptors(tp *tcPlan, base, warp opnd) *wgDescs {
	desc := func(addr opnd) opnd {
		f := ke.b64("and.b64", ke.b64("shr.u64", addr, intImm(4, rB32)), intImm(0x3fff, rB64))
		return ke.b64("add.s64", f, intImm(wgDescHi, rB64)) // (the fields do not overlap)
	}
	wg := ke.b64("shr.u64", warp, intImm(2, rB32))
	d := &wgDescs{a: desc(ke.b64("mad.lo.s64", wg, intImm(64*tcBK*2, rB64), base))}
	for _, off := range tp.bOff {
		d.b = append(d.b, desc(ke.b64("add.s64", base, intImm(off, rB64))))
	}
	d.acc = ke.pred("setp.ne.b32", ke.b32("mov.b32", intImm(1, rB32)), intImm(0, rB32))
	return d
}

// wgStep multiplies the stage at byte offset sCur into the accumulators
// and leaves the step's wgmma group in flight, waiting for the previous
// step's.
func (ke *kernelEmitter) wgStep(tp *tcPlan, d *wgDescs, sCur opnd, acc [][]opnd) {
	a := ke.a
	s4 := ke.b64("shr.u64", sCur, intImm(4, rB32))
	da := ke.b64("add.s64", d.a, s4)
	db := make([]opnd, len(d.b))
	for i := range db {
		db[i] = ke.b64("add.s64", d.b[i], s4)
	}
	a.raw(nil, false, "wgmma.fence.sync.aligned")
	for kk := int64(0); kk < tcBK/16; kk++ {
		ak := da
		if kk > 0 {
			ak = ke.b64("add.s64", da, intImm(2*kk, rB64))
		}
		for i := range acc {
			bk := db[i]
			if kk > 0 {
				bk = ke.b64("add.s64", db[i], intImm(2*kk, rB64))
			}
			op, rest := tp.wgmmaOp(i)
			a.raw(nil, false, op, append([]string{vecRef(acc[i]), ak.s, bk.s, d.acc.s}, rest...)...)
		}
	}
	a.raw(nil, false, "wgmma.commit_group.sync.aligned")
	a.raw(nil, false, "wgmma.wait_group.sync.aligned", itoa(wgInFlight))
}

// wgDequantNote completes describeWG's line for dequantized weights.
func (tp *tcPlan) wgDequantNote() string {
	if !tp.dequant() {
		return ""
	}
	return fmt.Sprintf(" %s, copied in its own bytes and converted by each step into the stage's %s B", tp.bKind[0], halfName(tp.half))
}

// describeWG says what the wgmma form of tp is, for the kernel's comment.
func (tp *tcPlan) describeWG() []string {
	var out []string
	if tp.twin {
		out = append(out, "The 128-column twin of the kernel above: the launcher takes it where that kernel's 128 x 256 tiles would leave SMs idle (few rows).")
	}
	out = append(out,
		fmt.Sprintf("Matmul on tensor cores: CTA tile %d x %d x %d, %d threads (2 warpgroups of 64 x %d), wgmma.mma_async.m64n%dk%d %s with both operands in shared memory, %s accumulators; %d dot product(s), every B [n, k]%s.", tcBM, tp.bn, tcBK, tp.threads, tp.bn, tp.bn, tp.mmaK(), tp.inputs(), tp.accName(), len(tp.transB), tp.wgDequantNote()),
		fmt.Sprintf("%d stages of %d bytes of shared memory (%d in all, from the first 1024-byte boundary), rows of 128 bytes in the 128-byte swizzle; copies: cp.async.cg 16 bytes, %d stages ahead, one step's wgmma in flight.", tp.stages, tp.stageBytes, tp.sharedBytes(), tp.ahead()))
	return append(out, tp.splitKLine()...)
}
