package ptx

import "fmt"

// This file is the decode form of the tensor-core matmul: the mma.sync
// kernel of tc.go in CTA tiles of 16 (or 32) rows, for results of at
// most TCDecodeMaxRows rows per matrix (a decode step's tokens, a batch
// of single-query attention heads).
//
//	128 threads: 4 warps side by side along N, warp w the columns
//	  16w..16w+15 of a 16 x 64 tile (2 mma.sync tiles of 16 x 8, 8 f32
//	  accumulators a thread per dot product; twice that for 32 rows)
//	a stage: A [bm][BK+8] then each B: [64][BK+8] where it is [n, k] (a
//	  linear layer's weight, attention's keys), [BK][64+8] where it is
//	  [k, n] (read by ldmatrix.trans); BK 128 (TCDecodeBK) or less for a
//	  short K
//	up to tcDecodeStages stages, no more than K's steps plus one, and as
//	  many as let two CTAs share an SM
//	one tile of rows a matrix: a tile is (matrix, column tile), K cut
//	  into parts by split-K as in the 128-row forms
//
// A 128-row tile computes 128 rows where a decode step has 1 to 16: here
// the copies of A are a sixteenth of the bytes, the tensor cores do a
// sixteenth of the work, and a tile has 64 columns, not 128 or 256, so
// that the weight's rows spread over twice to four times the CTAs. What
// bounds the kernel is then the weight's bytes: each CTA keeps all its
// stages but one in flight.
//
// Where the rows are static, at most TCDecodeMaxRows per matrix, the kernel
// takes this form; where they are `?`, the kernel of the other forms
// comes with twins in this form (`<entry>_m16`, and `_m32` where
// TCDecodeMaxRows is 32) that the launcher takes for 16 rows or fewer and
// for 17 to 32. TCDecode switches it off (tfc: TENSORFORGE_PTX_DECODE=0).

// TCDecode makes matmul kernels of few rows take the decode form.
var TCDecode = true

// TCDecodeBK is the K of a decode stage at most (a power of 2 from 64 to
// 256; halved, down to 64, where it does not divide K or K has fewer than
// two such steps): each of the tile's B rows is read 2*BK contiguous
// bytes at a time.
var TCDecodeBK = DefaultDecodeBK

// DefaultDecodeBK and DefaultDecodeMaxRows are TCDecodeBK's and
// TCDecodeMaxRows's defaults (tfc restores them when its environment does
// not name others).
const (
	DefaultDecodeBK      int64 = 128
	DefaultDecodeMaxRows int64 = 32
)

// tcDecodeTwin makes planTC plan the decode form in tiles of that many
// rows: set while emitting a decode twin of a kernel whose rows are `?`
// (emitKernel); 0 otherwise.
var tcDecodeTwin int64

// TCDecodeMaxRows is the most rows a matrix of the result may have for
// the decode form: 32 (tiles of 16 rows up to 16, of 32 beyond: two
// mma.sync tiles high, each warp 32 x 16) or 16. On an H100 (2026-12-07,
// bench/results/gpu-h100-2026-12-07-s7-decode-w8.txt) 32-row tiles took
// Llama-3-8B's projections at 32 rows from 0.0316 to 0.0282 ms (qo), 0.0305
// to 0.0153 (kv), 0.0654 to 0.0634 (down) and 0.132 to 0.045 (the int8
// up), against 0.0608 to 0.0645 for up; 1 to 16 rows ran 1-3% slower in
// them than in 16-row tiles, hence the two twins.
var TCDecodeMaxRows = DefaultDecodeMaxRows

// decodeTwinRows is the tile rows of the decode twins of a kernel whose
// rows are `?`: 16, and TCDecodeMaxRows where it is more.
func decodeTwinRows() []int64 {
	if TCDecodeMaxRows > 16 {
		return []int64{16, TCDecodeMaxRows}
	}
	return []int64{16}
}

// decodeSuffix names the decode twin of bm rows of a kernel whose rows
// are `?`.
func decodeSuffix(bm int64) string { return fmt.Sprintf("_m%d", bm) }

const (
	tcDecodeBN     = 64 // the columns of a decode tile: four warps of 16
	tcDecodeStages = 8  // at most; fewer where two CTAs would not fit an SM
)

// decodeTakes reports whether the matmul of tp can take the decode form.
func decodeTakes(tp *tcPlan) bool { return TCDecode }

// planDecode sets tp up for the decode form in tiles of bm rows.
func planDecode(tp *tcPlan, bm int64) {
	tp.decode = true
	tp.bm, tp.bn = bm, tcDecodeBN
	tp.threads, tp.warpsN, tp.wtn = 128, 4, tcDecodeBN/4
	tp.bk = TCDecodeBK
	for tp.bk > tcBK && (tp.K%tp.bk != 0 || tp.K < 2*tp.bk) {
		tp.bk /= 2
	}
	off := tp.bm * tp.pitchK()
	tp.bOff = tp.bOff[:0]
	for _, t := range tp.transB {
		tp.bOff = append(tp.bOff, off)
		if tp.dequant() {
			tp.b8Off = append(tp.b8Off, off)
			off += tp.bn * tp.pitchB8() // [n, k] in its own bytes (dequant.go)
		} else if t {
			off += tp.bn * tp.pitchK() // [n, k]: bn rows of BK
		} else {
			off += tp.bk * tp.pitchN() // [k, n]: BK rows of bn
		}
	}
	tp.stageBytes = off
	// no more stages than K has steps, plus the one being refilled: a
	// short K (attention scores over a head of 128) leaves shared memory
	// for more CTAs an SM (on an H100, 32 one-row matrices of 2048 x 128
	// took 25.5 us of GPU time with 3 stages of 64, 37.1 with 5 of 128)
	tp.stages = min(tcDecodeStages, ceilDiv(tp.K, tp.bk)+1)
	for tp.stages > 3 && tp.sharedBytes() > tcSharedTwo {
		tp.stages--
	}
}

// describeDecode says what the decode form of tp is, for the kernel's
// comment.
func (tp *tcPlan) describeDecode() []string {
	var out []string
	switch {
	case tp.twin && tp.bm > 16:
		out = append(out, fmt.Sprintf("The %d-row twin of the kernel above: the launcher takes it for 17 to %d rows.", tp.bm, tp.bm))
	case tp.twin:
		out = append(out, fmt.Sprintf("The %d-row twin of the kernel above: the launcher takes it for %d rows or fewer.", tp.bm, tp.bm))
	}
	b := "every B [n, k]"
	nk := 0
	for _, t := range tp.transB {
		if t {
			nk++
		}
	}
	switch nk {
	case 0:
		b = "every B [k, n]"
	case len(tp.transB):
	default:
		b = "B [n, k] and [k, n]"
	}
	if tp.dequant() {
		b = fmt.Sprintf("every B [n, k] %s, copied in its own bytes and converted to %s in registers (k permuted alike in A and B within blocks of 64)", tp.bKind[0], halfName(tp.half))
	}
	out = append(out,
		fmt.Sprintf("Matmul on tensor cores, decode form: CTA tile %d x %d x %d, %d threads (%d warps side by side, warp tile %d x %d), mma.sync.%s %s, %s accumulators; %d dot product(s), %s.", tp.bm, tp.bn, tp.bk, tp.threads, tp.threads/32, tp.bm, tp.wtn, tp.mmaShape(), tp.inputs(), tp.accName(), len(tp.transB), b),
		fmt.Sprintf("%d stages of %d bytes of shared memory (%d in all); copies: cp.async.cg 16 bytes, %d stages ahead.", tp.stages, tp.stageBytes, tp.sharedBytes(), tp.ahead()))
	return append(out, tp.splitKLine()...)
}
