package ptx

import (
	"strconv"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// This file turns a threads loop that does nothing but copy a contiguous
// span of a kernel input into an sram buffer (a resident split's split of
// the row, lowering/resident.go)
//
//	loop.for %c0, %c32000, %c8 {dist = "threads"} {
//	^bb2(%i: index):
//	  %12 = loop.addi %11, %i : index
//	  %s_1 = loop.load %s, %10, %12 : (memref<?x256000xbf16, dram>, index, index) -> vector<8xbf16>
//	  loop.store %s_1, %held, %i : (vector<8xbf16>, memref<32000xbf16, sram>, index) -> ()
//	  loop.yield
//	} : index
//
// into asynchronous bulk copies of sm_90 (the TMA unit's one-dimensional
// form, which needs no tensor map): thread 0 arms an mbarrier in shared
// memory with the span's bytes and issues the copies, each completing its
// bytes on the mbarrier, and every thread waits for the mbarrier's phase:
//
//	bar.sync 	0;
//	@%p5 fence.proxy.async.shared::cta;
//	@%p5 mbarrier.arrive.expect_tx.shared::cta.b64 	%rd20, [%rd9+64016], 64000;
//	@%p5 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes 	[%rd9+0], [%rd17+0], 16000, [%rd9+64016];
//	...                                   // the other pieces
//	$L_k0_5:
//	mbarrier.try_wait.parity.shared::cta.b64 	%p7, [%rd9+64016], %r12;
//	@!%p7 bra 	$L_k0_5;
//	xor.b32 	%r12, %r12, 1;
//
// The whole span is in flight at once, where a loop of loads into
// registers keeps only what the registers hold in flight: on an H100 a
// hand-written softmax over rows of 256000 bf16 held this way in clusters
// of 8 CTAs ran at 0.99 of a copy's bandwidth, against 0.64 for the
// register-held forms (bench/gpu/bulk_softmax.py). The mbarrier is
// initialised once per CTA before the grid's rounds; the parity register
// follows its phases, one per copy. The bar.sync before each copy makes the
// initialisation visible and keeps the copy from overwriting what threads
// may still read of an earlier round's span.
//
// A copy needs 16-byte aligned addresses and a multiple of 16 bytes: the
// plan takes a loop whose span is a multiple of 16 bytes and whose buffer
// sits at a multiple of 16, and the emitter checks that the source address
// is known to be a multiple of 16 where it translates it, and otherwise
// translates the loop as any other (its buffer in shared memory either
// way).

// bulkCopies turns copy loops into bulk copies (tests turn it off to
// compare with the loop form).
var bulkCopies = true

// bulkThreadsSetting and clusterExchangeSetting set bulkThreads and
// clusterExchange in a measurement build (bench/gpu/build_bulk.sh: go build -ldflags "-X
// github.com/tensorforge/tensorforge/emit/ptx.bulkThreadsSetting=512"),
// so that the forms can be timed side by side without editing the source.
var bulkThreadsSetting, clusterExchangeSetting string

func init() {
	if n, err := strconv.Atoi(bulkThreadsSetting); err == nil && n >= 32 && n <= 1024 && n%32 == 0 {
		bulkThreads = n
	}
	if clusterExchangeSetting == "off" {
		clusterExchange = false
	}
}

// bulkPiece bounds the bytes of one bulk copy: a span is issued in pieces
// (4 of 16000 bytes for a split of 32000 bf16, the form measured).
const bulkPiece = 16 * 1024

// maxBulkBytes bounds a span: an mbarrier phase counts at most 2^20 - 1
// bytes of transactions.
const maxBulkBytes = 1<<20 - 16

// bulkCopy is a threads loop that copies a span of a kernel input into an
// sram buffer.
type bulkCopy struct {
	load  loop.LoadOp
	alloc *ir.Operation
	// start is the span's first column, defined before the loop (nil: 0)
	start *ir.Value
	bytes int64
}

// findBulkCopies lists the copy loops of grid body gb that can be bulk
// copies.
func findBulkCopies(ke *kernelEmitter, gb *ir.Block) map[*ir.Operation]*bulkCopy {
	out := map[*ir.Operation]*bulkCopy{}
	if !bulkCopies {
		return out
	}
	for op := gb.First(); op != nil; op = op.Next() {
		if bc := asBulkCopy(ke, op); bc != nil {
			out[op] = bc
		}
	}
	return out
}

// asBulkCopy returns the bulk copy threads loop op is, or nil: a loop from
// 0 to a static n by the width of its vector accesses, carrying nothing,
// whose body loads the vector of a kernel input at the induction variable
// (plus a start defined outside the loop) along the last dimension and
// stores it into an sram buffer of the same element type at the induction
// variable, and does nothing else.
func asBulkCopy(ke *kernelEmitter, op *ir.Operation) *bulkCopy {
	f, ok := loop.AsFor(op)
	if !ok || f.Dist() != "threads" || len(f.Inits()) != 0 {
		return nil
	}
	lo, ok1 := staticIndex(f.Lower())
	n, ok2 := staticIndex(f.Upper())
	step, ok3 := staticIndex(f.Step())
	if !ok1 || !ok2 || !ok3 || lo != 0 || n <= 0 || step <= 0 || n%step != 0 {
		return nil
	}
	body := f.Body().Entry()
	iv := body.Args[0]
	// the body: [addi], load, store, yield
	var ops []*ir.Operation
	for o := body.First(); o != nil; o = o.Next() {
		ops = append(ops, o)
	}
	if len(ops) < 3 || len(ops) > 4 || ops[len(ops)-1].Name() != loop.OpYield {
		return nil
	}
	l, ok := loop.AsLoad(ops[len(ops)-3])
	s, ok2 := loop.AsStore(ops[len(ops)-2])
	if !ok || !ok2 || s.Value() != l.Output() || len(l.Output().Users()) != 1 || !isKernelInput(ke, l.Memref()) {
		return nil
	}
	if int64(lanesOf(l.Output().Type())) != step && !(step == 1 && lanesOf(l.Output().Type()) == 0) {
		return nil
	}
	alloc := s.Memref().DefiningOp()
	if alloc == nil || alloc.Name() != loop.OpAlloc || len(s.Indices()) != 1 || s.Indices()[0] != iv {
		return nil
	}
	src, _ := l.Memref().Type().(ir.MemRefType)
	dst, _ := s.Memref().Type().(ir.MemRefType)
	if src.Elem.Kind != dst.Elem.Kind || len(dst.Shape) != 1 || dst.Shape[0] < n {
		return nil
	}
	idx := l.Indices()
	for _, v := range idx[:len(idx)-1] {
		if definedIn(op, v) {
			return nil
		}
	}
	bc := &bulkCopy{load: l, alloc: alloc, bytes: n * max(src.Elem.Kind.ByteSize(), 1)}
	switch last := idx[len(idx)-1]; {
	case last == iv && len(ops) == 3:
	case len(ops) == 4 && last.DefiningOp() == ops[0] && ops[0].Name() == loop.OpAddi:
		a, b := ops[0].Operand(0), ops[0].Operand(1)
		if b != iv {
			a, b = b, a
		}
		if b != iv || definedIn(op, a) {
			return nil
		}
		bc.start = a
	default:
		return nil
	}
	if bc.bytes%16 != 0 || bc.bytes > maxBulkBytes {
		return nil
	}
	return bc
}

// initBulk initialises the CTA's mbarrier for its bulk copies (before the
// grid's rounds) and the register holding the parity of the phase the
// next copy completes.
func (ke *kernelEmitter) initBulk() {
	if len(ke.plan.bulk) == 0 {
		return
	}
	a := ke.a
	a.comment("the mbarrier of the bulk copies: one arrival (thread 0's) and the bytes of each copy per phase")
	t0 := ke.threadZero()
	a.raw(&t0, false, "mbarrier.init.shared::cta.b64", memRef(ke.smemCTA, ke.plan.mbarOff), "1")
	a.raw(&t0, false, "fence.mbarrier_init.release.cluster")
	ke.parity = a.reg(rB32)
	a.raw(nil, false, "mov.b32", ke.parity.s, "0")
}

// emitBulkCopy translates copy loop op as bulk copies, with the copy
// loops right after it (a kernel copying several inputs' rows): one
// mbarrier phase armed with all their bytes, one wait. It reports whether
// it did (false: the source is not known to be 16-byte aligned).
func (ke *kernelEmitter) emitBulkCopy(op *ir.Operation, bc *bulkCopy) bool {
	if ke.bulkIssued[op] {
		return true // issued with the copy loop before it
	}
	first, ok := ke.bulkPlaceOf(op, bc)
	if !ok {
		return false
	}
	spans := []bulkPlace{first}
	total := bc.bytes
	for next := op.Next(); next != nil; next = next.Next() {
		if next.Name() == loop.OpAlloc {
			ke.alloc(next) // an sram buffer sram-alloc placed: no code
			continue
		}
		nb := ke.plan.bulk[next]
		if nb == nil || total+nb.bytes > maxBulkBytes {
			break
		}
		sp, ok := ke.bulkPlaceOf(next, nb)
		if !ok {
			break
		}
		spans = append(spans, sp)
		total += nb.bytes
		if ke.bulkIssued == nil {
			ke.bulkIssued = map[*ir.Operation]bool{}
		}
		ke.bulkIssued[next] = true
	}
	a := ke.a
	mbar := memRef(ke.smemCTA, ke.plan.mbarOff)
	if len(spans) == 1 {
		a.comment("threads loop: a copy of %d bytes into shared memory, by bulk copies thread 0 issues, completing on the mbarrier", bc.bytes)
	} else {
		a.comment("threads loops: copies of %d bytes in all into shared memory (%d loops), by bulk copies thread 0 issues, completing on the mbarrier", total, len(spans))
	}
	a.ins("bar.sync", i32(0))
	t0 := ke.threadZero()
	state := a.reg(rB64)
	a.raw(&t0, false, "fence.proxy.async.shared::cta")
	// the byte counts in registers, as the copies were measured with
	sizes := map[int64]opnd{}
	size := func(n int64) opnd {
		if r, ok := sizes[n]; ok {
			return r
		}
		r := a.reg(rB32)
		a.raw(nil, false, "mov.b32", r.s, itoa(n))
		sizes[n] = r
		return r
	}
	a.raw(&t0, false, "mbarrier.arrive.expect_tx.shared::cta.b64", state.s, mbar, size(total).s)
	for _, sp := range spans {
		for off := int64(0); off < sp.bytes; off += bulkPiece {
			n := size(min(bulkPiece, sp.bytes-off))
			a.raw(&t0, false, "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes",
				memRef(sp.dst.base, sp.dst.off+off), memRef(sp.src.reg, sp.src.off+off), n.s, mbar)
		}
	}
	spin := a.newLabel()
	a.label(spin)
	done := a.reg(rPred)
	a.raw(nil, false, "mbarrier.try_wait.parity.shared::cta.b64", done.s, mbar, ke.parity.s)
	a.bra(&done, true, spin)
	a.raw(nil, false, "xor.b32", ke.parity.s, ke.parity.s, "1")
	return true
}

// bulkPlace is where one copy loop copies: its destination in shared
// memory, its source address, its bytes.
type bulkPlace struct {
	dst   *buffer
	src   addr
	bytes int64
}

// bulkPlaceOf returns the place of copy loop op, or false where it cannot be
// a bulk copy (its buffer not in shared memory at a multiple of 16, its
// source not known to be 16-byte aligned).
func (ke *kernelEmitter) bulkPlaceOf(op *ir.Operation, bc *bulkCopy) (bulkPlace, bool) {
	src := ke.buf(op, bc.load.Memref())
	dst := ke.buf(op, bc.alloc.Result(0))
	if dst.promoted || dst.off%16 != 0 {
		return bulkPlace{}, false
	}
	idx := append([]*ir.Value(nil), bc.load.Indices()...)
	if bc.start != nil {
		idx[len(idx)-1] = bc.start
	} else {
		idx[len(idx)-1] = nil
	}
	ad := ke.spanAddr(op, src, idx)
	if alignOf(src, ad) != 16 || ad.off%16 != 0 {
		return bulkPlace{}, false
	}
	return bulkPlace{dst: dst, src: ad, bytes: bc.bytes}, true
}

// spanAddr is the address of the element of buffer b at idx, where a nil
// last index stands for 0.
func (ke *kernelEmitter) spanAddr(op *ir.Operation, b *buffer, idx []*ir.Value) addr {
	n := len(idx) - 1
	if idx[n] != nil {
		return ke.partialAddr(op, b, idx, b.base, b.off, 0)
	}
	return ke.partialAddr(op, b, idx[:n], b.base, b.off, 0)
}
