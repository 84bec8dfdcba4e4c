package ptx

import (
	"fmt"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// This file is the dequantize prologue of the tensor-core matmul: a
// right operand stored as i8, ui8, f8E4M3FN or f8E5M2 and widened to the
// left operand's bf16 or f16 (W8A16: `graph.cast` of the weight before
// the matmul, its per-channel scale an epilogue) goes to shared memory in
// its own bytes, half of a bf16 weight's, and is converted there: in
// registers before each mma.sync (the decode form, decode.go, and the
// 128-row mma.sync form), or into each stage's B tile for wgmma
// (wgConvert). Every such value is exact in bf16 and in f16 (8
// significant bits at most, exponents within range), so the products are
// those of the program: the bound is the bf16 matmul's.
//
// ldmatrix would need the weight in halves. Instead the k of each 64-k
// block of a stage is permuted, the same way in both operands (a dot
// product's terms in another order, summed by the same mma.sync): thread
// (g, t4) of a warp (lane = 4g + t4) reads 16 bytes of its weight row
// g, k = 16*t4 .. 16*t4+15 of the block, and word s of them (k 16*t4 +
// 4s .. +3) is its fragment of the block's k-step s: b0 its first two
// bytes, b1 its last two, where mma.sync's k-slots are (2*t4, 2*t4+1)
// and (2*t4+8, 2*t4+9). The left operand's fragments follow: a0 and a2
// of step s are the halves k = 16*t4 + 4s .. +3 of row g (a1, a3 of row
// g+8), 32 bytes a row for the four steps, two ld.shared.v4 each.
//
// A stage holds each weight as bn rows of BK bytes, rows 64 bytes apart
// modulo 128 (pitch BK+64 for BK 128 and 256, 64 for BK 64): the 16-byte
// reads of a quarter warp (rows g and g+1) fall in distinct banks.

// dequantKind reports whether a right operand stored as k can be widened
// in registers to bf16 or f16 exactly.
func dequantKind(k ir.ElemKind) bool {
	return k == ir.I8 || k == ir.UI8 || k == ir.F8E4M3FN || k == ir.F8E5M2
}

// isWidenedOf reports whether v is load widened to f32 through half: a
// loop.cast to half, then one to f32.
func isWidenedOf(v, load *ir.Value, half ir.ElemKind) bool {
	op := v.DefiningOp()
	if op == nil || op.Name() != loop.OpCast {
		return false
	}
	h := op.Operand(0)
	return elemKindOf(h.Type()) == half && isCastOf(h, load)
}

// dequant reports whether the plan's right operands are converted in
// registers.
func (tp *tcPlan) dequant() bool { return !tp.int8 && len(tp.bKind) > 0 && tp.bKind[0] != tp.half }

// dequantWhy says why a matmul with a dequantized right operand cannot
// take the decode form ("" when it can, or when no operand is one).
func (tp *tcPlan) dequantWhy() string {
	if tp.int8 {
		return ""
	}
	some := false
	for _, k := range tp.bKind {
		some = some || k != tp.half
	}
	if !some {
		return ""
	}
	for d, k := range tp.bKind {
		switch {
		case k != tp.bKind[0]:
			return fmt.Sprintf("its dot products multiply %s by %s and by %s", tp.half, tp.bKind[0], k)
		case !tp.transB[d]:
			return fmt.Sprintf("its right operand is %s as [k, n]; the dequantizing form reads [n, k] (transpose_b)", k)
		case tp.K%64 != 0:
			return fmt.Sprintf("its right operand is %s and K = %d is not a multiple of 64", k, tp.K)
		case !tp.alignedB[d]:
			return fmt.Sprintf("its right operand is %s in rows not 16-byte aligned", k)
		}
	}
	return ""
}

// Copy geometry of a dequantized weight: a row of a stage is bk/16
// chunks of 16 bytes; rowsB8 rows are copied in a pass, passB8 passes
// cover the bn rows of a tile.
func (tp *tcPlan) chunksB8() int64 { return tp.bk / 16 }
func (tp *tcPlan) rowsB8() int64   { return tp.threads / tp.chunksB8() }
func (tp *tcPlan) passB8() int     { return int(tp.bn / tp.rowsB8()) }

// pitchB8 is the bytes between two rows of a dequantized weight in a
// stage: bk, plus 64 where bk is a multiple of 128.
func (tp *tcPlan) pitchB8() int64 {
	if tp.bk%128 == 0 {
		return tp.bk + 64
	}
	return tp.bk
}

// dqOperand sets up the copies of dot d's dequantized weight for the
// tile of columns from n0: per pass, the address of the thread's chunk
// at k = 0, its src-size (0 past N) and where it lands in stage 0.
func (ke *kernelEmitter) dqOperand(tp *tcPlan, op *tcOperand, d int, n0, row0, base opnd) {
	dot := tp.mm.Dots[d]
	chunk := ke.b64("and.b64", ke.tid, intImm(tp.chunksB8()-1, rB64))
	crow := ke.b64("shr.u64", ke.tid, intImm(int64(log2(int(tp.chunksB8()))), rB32))
	off := ke.b64("shl.b64", chunk, intImm(4, rB32))
	op.dst = ke.b64("add.s64", base, ke.b64("mad.lo.s64", crow, intImm(tp.pitchB8(), rB64), off))
	for h := 0; h < tp.passB8(); h++ {
		n := ke.b64("add.s64", ke.b64("add.s64", n0, crow), intImm(tp.rowsB8()*int64(h), rB64))
		v := ke.pred("setp.lt.s64", n, intImm(tp.N, rB64))
		nc := ke.b64("min.s64", n, intImm(tp.N-1, rB64))
		ra := ke.tcAddr(dot.Rhs, row0, ixv{reg: nc, has: true}, d)
		op.src = append(op.src, ke.b64("add.s64", ra, off))
		op.size = append(op.size, ke.b32("selp.b32", intImm(16, rB32), intImm(0, rB32), v))
	}
}

// dqCopy copies step kt of K of a dequantized weight into the stage at
// byte offset sOff: cp.async of 16 bytes, nothing past N.
func (ke *kernelEmitter) dqCopy(tp *tcPlan, op *tcOperand, d int, kt, sOff opnd) {
	kb := ke.b64("shl.b64", kt, intImm(tp.kShift(), rB32)) // 1 byte an element
	dst := ke.b64("add.s64", op.dst, sOff)
	for h := 0; h < tp.passB8(); h++ {
		src := ke.b64("add.s64", op.src[h], kb)
		ke.a.raw(nil, false, "cp.async.cg.shared.global", memRef(dst, tp.b8Off[d]+int64(h)*tp.rowsB8()*tp.pitchB8()), memRef(src, 0), "16", op.size[h].s)
	}
}

// wgConvert converts the weights' bytes of the stage at byte offset sCur
// (from base) into its B tiles for wgmma: [bn][64] halves in rows of 128
// bytes, 16-byte chunk c of row r at chunk c ^ (r % 8). Thread t converts
// chunks q = t, t + threads, ...: row q / 8, weights 8c .. 8c+7 of it,
// read as two words. The generic proxy's writes are fenced for the async
// proxy and the CTA meets before the step's wgmma reads them.
func (ke *kernelEmitter) wgConvert(tp *tcPlan, base, sCur opnd) {
	a := ke.a
	st := ke.b64("add.s64", base, sCur)
	chunks := tp.bn * 8
	for d := range tp.mm.Dots {
		for h := int64(0); h < chunks/tp.threads; h++ {
			q := ke.b64("add.s64", ke.tid, intImm(h*tp.threads, rB64))
			r := ke.b64("shr.u64", q, intImm(3, rB32))
			c := ke.b64("and.b64", q, intImm(7, rB64))
			src := ke.b64("add.s64", st, ke.b64("mad.lo.s64", r, intImm(tp.pitchB8(), rB64), ke.b64("shl.b64", c, intImm(3, rB32))))
			sw := ke.b64("xor.b64", c, ke.b64("and.b64", r, intImm(7, rB64)))
			dst := ke.b64("add.s64", st, ke.b64("mad.lo.s64", r, intImm(tcBK*2, rB64), ke.b64("shl.b64", sw, intImm(4, rB32))))
			w := ke.tcRegs(2)
			a.raw(nil, false, "ld.shared.b32", w[0].s, memRef(src, tp.b8Off[d]))
			a.raw(nil, false, "ld.shared.b32", w[1].s, memRef(src, tp.b8Off[d]+4))
			out := []opnd{
				ke.dqPair(w[0], 0, tp.bKind[d], tp.half), ke.dqPair(w[0], 1, tp.bKind[d], tp.half),
				ke.dqPair(w[1], 0, tp.bKind[d], tp.half), ke.dqPair(w[1], 1, tp.bKind[d], tp.half),
			}
			a.raw(nil, false, "st.shared.v4.b32", memRef(dst, tp.bOff[d]), vecRef(out))
		}
	}
	a.raw(nil, false, "fence.proxy.async.shared::cta")
	a.ins("bar.sync", intImm(0, rB32))
}

// dqLanes is where the thread's fragment reads start in stage 0: row
// wm*wtm + g of A at k = 16*t4, and row wn*wtn + g of each weight at
// byte 16*t4.
func (ke *kernelEmitter) dqLanes(tp *tcPlan, g, t4, wm, wn opnd) (opnd, []opnd) {
	arow := ke.b64("mad.lo.s64", wm, intImm(tp.wtm(), rB64), g)
	aq := ke.b64("mad.lo.s64", arow, intImm(tp.pitchK(), rB64), ke.b64("shl.b64", t4, intImm(5, rB32)))
	aq = ke.b64("add.s64", aq, ke.smemCTA)
	row := ke.b64("mad.lo.s64", wn, intImm(tp.wtn, rB64), g)
	bq := ke.b64("mad.lo.s64", row, intImm(tp.pitchB8(), rB64), ke.b64("shl.b64", t4, intImm(4, rB32)))
	bq = ke.b64("add.s64", bq, ke.smemCTA)
	out := make([]opnd, len(tp.bOff))
	for d, off := range tp.bOff {
		out[d] = ke.b64("add.s64", bq, intImm(off, rB64))
	}
	return aq, out
}

// dqStep multiplies the stage at byte offset sCur: per 64-k block, the
// left operand's fragments of its four k-steps by two ld.shared.v4 a
// row, each weight's 16 bytes a column tile by one, converted to halves,
// then the mma.sync of each step. With more than two row tiles a warp
// (the 128-row form) a block is taken in two halves of two steps, so
// that A's fragments of only two steps are held beside the accumulators
// (the weight's word read again in the second half).
func (ke *kernelEmitter) dqStep(tp *tcPlan, sCur, aq opnd, bq []opnd, acc [][]opnd, nj int) {
	a := ke.a
	typ := halfName(tp.half)
	aBase := ke.b64("add.s64", sCur, aq)
	bBase := make([]opnd, len(bq))
	for d := range bq {
		bBase[d] = ke.b64("add.s64", sCur, bq[d])
	}
	pitch := tp.pitchK()
	per := 4 // k-steps of a block taken at once
	if tp.ni() > 2 {
		per = 2
	}
	for blk := int64(0); blk < tp.bk/64; blk++ {
		for s0 := 0; s0 < 4; s0 += per {
			// af[i][s-s0]: the four registers of k-step s of row tile i
			af := make([][][]opnd, tp.ni())
			for i := range af {
				var rows [2][]opnd // rows g and g+8: 2 words a step
				for h := range rows {
					rows[h] = ke.tcRegs(2 * per)
					at := int64(i*16+8*h)*pitch + blk*128 + int64(s0)*8
					for v := 0; v < per/2; v++ {
						a.raw(nil, false, "ld.shared.v4.b32", vecRef(rows[h][4*v:4*v+4]), memRef(aBase, at+int64(16*v)))
					}
				}
				for s := 0; s < per; s++ {
					af[i] = append(af[i], []opnd{rows[0][2*s], rows[1][2*s], rows[0][2*s+1], rows[1][2*s+1]})
				}
			}
			for d := range tp.mm.Dots {
				for j := 0; j < nj; j++ {
					w := ke.tcRegs(4)
					a.raw(nil, false, "ld.shared.v4.b32", vecRef(w), memRef(bBase[d], int64(j)*8*tp.pitchB8()+blk*64))
					for s := s0; s < s0+per; s++ {
						b := []opnd{ke.dqPair(w[s], 0, tp.bKind[d], tp.half), ke.dqPair(w[s], 1, tp.bKind[d], tp.half)}
						for i := range af {
							c := acc[d][(i*nj+j)*4 : (i*nj+j)*4+4]
							a.raw(nil, false, "mma.sync.aligned.m16n8k16.row.col.f32."+typ+"."+typ+".f32", vecRef(c), vecRef(af[i][s-s0]), vecRef(b), vecRef(c))
						}
					}
				}
			}
		}
	}
}

// dqMagic is 1.5 * 2^23, an f32 whose last mantissa bits hold an 8-bit
// integer added to its bits (dqPair); dqMagicBits its bits.
const (
	dqMagic     = 12582912.0
	dqMagicBits = 0x4B400000
)

// dqPair converts bytes 2p and 2p+1 of word w, two values of kind k, to
// a pair of halves (the first in the low half): exact.
func (ke *kernelEmitter) dqPair(w opnd, p int, k, half ir.ElemKind) opnd {
	a := ke.a
	h2 := "cvt.rn." + halfName(half) + "x2.f32"
	switch k {
	case ir.I8, ir.UI8:
		// without the conversion unit (cvt.rn.f32.s32 and
		// cvt.rn.bf16x2.f32 issue at a quarter of the ALU's rate or less,
		// and a weight needs one per value): the byte, sign-extended,
		// added to the bits of 1.5 * 2^23 is the f32 1.5 * 2^23 + v
		// (exact: an integer below 2^24), less 1.5 * 2^23 is v; v has 8
		// significant bits at most, so its bf16 is the upper half of its
		// f32, and two upper halves make the pair (bfi). f16: cvt of the
		// pair, exact.
		ext := "bfe.s32"
		if k == ir.UI8 {
			ext = "bfe.u32"
		}
		f := func(b int) opnd {
			t := ke.b32("add.s32", ke.b32(ext, w, i32(int64(8*b)), i32(8)), i32(dqMagicBits))
			return ke.f32("sub.rn.f32", ke.f32("mov.b32", t), f32Imm(dqMagic))
		}
		lo, hi := f(2*p), f(2*p+1)
		if half == ir.F16 {
			return ke.b32(h2, hi, lo)
		}
		lo16 := ke.b32("bfe.u32", ke.b32("mov.b32", lo), i32(16), i32(16))
		return ke.b32("bfi.b32", lo16, ke.b32("mov.b32", hi), i32(0), i32(16))
	}
	// f8 to f16, exact: an f8E5M2 is the upper byte of its f16; the
	// f8E4M3FN pair goes through cvt.rn.f16x2.e4m3x2; to bf16 through f32
	var f16 opnd
	if k == ir.F8E5M2 {
		lo := ke.b32("shl.b32", ke.b32("bfe.u32", w, i32(int64(16*p)), i32(8)), i32(8))
		f16 = ke.b32("bfi.b32", ke.b32("bfe.u32", w, i32(int64(16*p+8)), i32(8)), lo, i32(24), i32(8))
	} else {
		lo, hi := a.reg(rB16), a.reg(rB16)
		a.raw(nil, false, "mov.b32", "{"+lo.s+", "+hi.s+"}", w.s)
		x := lo
		if p == 1 {
			x = hi
		}
		f16 = ke.b32("cvt.rn.f16x2."+f8Name(k), x)
	}
	if half == ir.F16 {
		return f16
	}
	l, h := a.reg(rB16), a.reg(rB16)
	a.raw(nil, false, "mov.b32", "{"+l.s+", "+h.s+"}", f16.s)
	return ke.b32(h2, ke.f32("cvt.f32.f16", h), ke.f32("cvt.f32.f16", l))
}
