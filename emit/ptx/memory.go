package ptx

import (
	"strings"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// This file translates loop.load and loop.store. A buffer is row-major
// over its extents; an access of W lanes of S bytes is split into the
// widest naturally aligned pieces of at most 16 bytes the address is
// known to allow:
//
//	%v = loop.load %x, %r, %i : (memref<?x64xbf16, dram>, index, index) -> vector<8xbf16>
//
// with %i a multiple of 8 and rows of 64 is one
//
//	ld.global.nc.v4.b32 	{%r4, %r5, %r6, %r7}, [%rd9];
//	mov.b32 	{%h0, %h1}, %r4;
//	...
//
// What the address is known to be a multiple of comes from the index
// values (constants, loop steps, static extents); where it is not known
// (a row of dynamic length, say) the lanes are accessed one by one.
// Inputs of the kernel are read through the non-coherent cache
// (ld.global.nc; flat kernels plain ld.global): no kernel writes what it reads.
// A kernel with a loop.group_sync reads the buffers it also stores with
// ld.global.cg (sync.go).

// buffer is a memref a kernel accesses.
type buffer struct {
	space     ir.MemSpace
	elem      ir.ElemKind
	esize     int64
	dims      []ixv
	strides   []ixv   // in elements
	smults    []int64 // a known divisor of each stride
	base      opnd    // b64 address: global, or shared
	off       int64   // constant byte offset from base (sram at its offset)
	baseAlign int64   // bytes the base (plus off) is aligned to
	input     bool    // an input of the kernel: read only
	// cached: inputs are read through the non-coherent (read-only) path,
	// ld.global.nc. Flat kernels, which read each byte once in a pure
	// stream, use plain ld.global: 1% faster on the H200's element-wise
	// workloads, where the row kernels are 1 to 2% faster with .nc.
	cached bool
	// coherent: a buffer a kernel with a loop.group_sync stores and
	// loads (what other CTAs stored before the sync), read from L2 with
	// ld.global.cg, never through L1 (sync.go)
	coherent bool
	promoted bool // an sram buffer held in registers
	// exchange: a cluster's dram buffer of partials held in its CTAs'
	// shared memory, a store writing every CTA's slot (sync.go)
	exchange bool
	regs     map[int][]opnd
	// narrow: per copy, the 16-bit lanes a promoted buffer's values were
	// widened from (a bf16 or f16 row cast to f32); narrowKind their kind
	narrow     map[int][]opnd
	narrowKind ir.ElemKind
}

// addr is a computed address: register plus constant byte offset, with a
// known divisor of its distance from the buffer's base.
type addr struct {
	reg  opnd
	off  int64
	mult int64
}

// bindDRAM records the extents and strides of a dram buffer argument;
// ext gives the extents of its `?` dimensions, in order.
func (ke *kernelEmitter) bindDRAM(arg *ir.Value, ext []ixv) {
	m := arg.Type().(ir.MemRefType)
	b := ke.bufs[arg]
	b.space = ir.DRAM
	b.elem = m.Elem.Kind
	b.esize = max(m.Elem.Kind.ByteSize(), 1)
	b.baseAlign = 16 // the launcher passes 16-byte aligned tensors
	next := 0
	for _, n := range m.Shape {
		if n == ir.Dynamic {
			b.dims = append(b.dims, ext[next])
			next++
		} else {
			b.dims = append(b.dims, constIx(n))
		}
	}
	ke.strides(b, m.Shape)
}

// strides computes row-major strides (in the kernel's prologue).
func (ke *kernelEmitter) strides(b *buffer, shape []int64) {
	n := len(b.dims)
	b.strides = make([]ixv, n)
	b.smults = make([]int64, n)
	st, sm := constIx(1), int64(1)
	for d := n - 1; d >= 0; d-- {
		b.strides[d], b.smults[d] = st, sm
		st = ke.ixMul(st, b.dims[d])
		if shape[d] != ir.Dynamic {
			sm = capMult(sm * shape[d])
		}
	}
}

// alloc translates `loop.alloc`: registers for a promoted buffer, else
// the group's shared memory at the buffer's offset.
func (ke *kernelEmitter) alloc(op *ir.Operation) {
	if _, done := ke.bufs[op.Result(0)]; done {
		return // placed ahead of its turn, for a bulk copy (emitBulkCopy)
	}
	m, ok := op.Result(0).Type().(ir.MemRefType)
	if !ok || m.Space != ir.SRAM || ir.HasDynamicDim(m.Shape) {
		ke.fail(op, "allocates %s; the PTX emitter expects a static memref in sram", op.Result(0).Type())
	}
	b := &buffer{space: ir.SRAM, elem: m.Elem.Kind, esize: max(m.Elem.Kind.ByteSize(), 1)}
	for _, n := range m.Shape {
		b.dims = append(b.dims, constIx(n))
	}
	ke.strides(b, m.Shape)
	switch {
	case ke.plan.flat:
		ke.fail(op, "allocates sram in a flat kernel (internal error in the PTX emitter's plan)")
	case ke.plan.promoted[op]:
		b.promoted = true
		b.regs = map[int][]opnd{}
	default:
		off, ok := ke.plan.allocOffset[op]
		if !ok {
			ke.fail(op, "allocates sram the PTX emitter's plan did not place")
		}
		b.base, b.off = ke.smemGroup, off
		b.baseAlign = gcd(16, off)
		if b.baseAlign == 0 {
			b.baseAlign = 16
		}
	}
	ke.bufs[op.Result(0)] = b
}

// buf returns the buffer v names.
func (ke *kernelEmitter) buf(op *ir.Operation, v *ir.Value) *buffer {
	b, ok := ke.bufs[v]
	if !ok {
		ke.fail(op, "accesses a buffer the PTX emitter does not know")
	}
	return b
}

// definedIn reports whether value v is defined inside op's regions.
func definedIn(op *ir.Operation, v *ir.Value) bool {
	var p *ir.Operation
	if d := v.DefiningOp(); d != nil {
		p = d.ParentOp()
	} else if b := v.OwnerBlock(); b != nil {
		p = b.ParentOp()
	}
	for ; p != nil; p = p.ParentOp() {
		if p == op {
			return true
		}
	}
	return false
}

// hoistAddresses computes, before a loop, the part of the address of each
// access of its body that does not change in the loop: everything but
// the last index, when only that one is computed inside.
func (ke *kernelEmitter) hoistAddresses(loopOp *ir.Operation) {
	body := loopOp.Region(0).Entry()
	for op := body.First(); op != nil; op = op.Next() {
		var mem *ir.Value
		var idx []*ir.Value
		if l, ok := loop.AsLoad(op); ok {
			mem, idx = l.Memref(), l.Indices()
		} else if s, ok := loop.AsStore(op); ok {
			mem, idx = s.Memref(), s.Indices()
		} else {
			continue
		}
		b, ok := ke.bufs[mem]
		if !ok || b.promoted || len(idx) < 2 {
			continue
		}
		if _, ahead := ke.prefetched[prefetchKey{op, 0}]; ahead {
			continue
		}
		outside := true
		for _, v := range idx[:len(idx)-1] {
			if definedIn(loopOp, v) {
				outside = false
			}
		}
		if outside {
			ke.hoisted[op] = ke.partialAddr(op, b, idx[:len(idx)-1], b.base, b.off, 0)
		}
	}
}

// partialAddr adds the terms of idx (the leading indices of an access) to
// base + off.
func (ke *kernelEmitter) partialAddr(op *ir.Operation, b *buffer, idx []*ir.Value, base opnd, off, mult int64) addr {
	var terms []opnd
	mult = gcd(mult, off)
	for d, v := range idx {
		x := ke.ix(v)
		st := b.strides[d]
		if !x.has && !st.has {
			c := x.off * st.off * b.esize
			off += c
			mult = gcd(mult, c)
			continue
		}
		mult = gcd(mult, capMult(ke.multOf(v)*b.smults[d]*b.esize))
		t := ke.ixScale(ke.ixMul(x, st), b.esize)
		off += t.off
		if t.has {
			terms = append(terms, t.reg)
		}
	}
	if len(terms) == 0 {
		return addr{reg: base, off: off, mult: mult}
	}
	var key strings.Builder
	key.WriteString("addr " + base.s)
	for _, t := range terms {
		key.WriteString(" " + t.s)
	}
	reg := ke.cached(key.String(), func() opnd {
		r := base
		for _, t := range terms {
			n := ke.a.reg(rB64)
			ke.a.ins("add.s64", n, r, t)
			r = n
		}
		return r
	})
	return addr{reg: reg, off: off, mult: mult}
}

// access computes the address of a load or store.
func (ke *kernelEmitter) access(op *ir.Operation, b *buffer, idx []*ir.Value) addr {
	if len(idx) != len(b.dims) {
		ke.fail(op, "has %d indices for a buffer of rank %d", len(idx), len(b.dims))
	}
	if h, ok := ke.hoisted[op]; ok {
		return ke.partialAddrFrom(op, b, h, idx)
	}
	return ke.partialAddr(op, b, idx, b.base, b.off, 0)
}

// partialAddrFrom adds the last index to a hoisted partial address.
func (ke *kernelEmitter) partialAddrFrom(op *ir.Operation, b *buffer, h addr, idx []*ir.Value) addr {
	n := len(idx) - 1
	x := ke.ix(idx[n])
	mult := gcd(h.mult, capMult(ke.multOf(idx[n])*b.smults[n]*b.esize))
	t := ke.ixScale(ke.ixMul(x, b.strides[n]), b.esize)
	off := h.off + t.off
	if !t.has {
		return addr{reg: h.reg, off: off, mult: gcd(mult, t.off)}
	}
	reg := ke.cached("addr "+h.reg.s+" "+t.reg.s, func() opnd {
		r := ke.a.reg(rB64)
		ke.a.ins("add.s64", r, h.reg, t.reg)
		return r
	})
	return addr{reg: reg, off: off, mult: mult}
}

// piece is how an access of lanes is split: chunks of `chunk` bytes, each
// `words` machine words of `word` bytes.
type piece struct {
	chunk, word, words int64
}

// split chooses the pieces of an access of w lanes of esize bytes at an
// address aligned to align bytes.
func split(w, esize, align int64) piece {
	total := w * esize
	chunk := esize
	for _, c := range []int64{16, 8, 4, 2} {
		if c > esize && c <= total && total%c == 0 && align%c == 0 && !(esize == 1 && c == 2) {
			chunk = c
			break
		}
	}
	word := esize
	if esize < 4 && chunk >= 4 {
		word = 4
	}
	return piece{chunk: chunk, word: word, words: chunk / word}
}

// alignOf is the alignment of an address: its known divisor and the
// buffer base's, at most 16.
func alignOf(b *buffer, ad addr) int64 {
	a := b.baseAlign
	if ad.mult != 0 {
		a = gcd(a, ad.mult)
	}
	if a == 0 || a > 16 {
		a = 16
	}
	return a
}

// memOp is the opcode prefix of an access: ld.global.nc, st.shared, ...
func (b *buffer) memOp(load bool) string {
	space := ".global"
	if b.space == ir.SRAM {
		space = ".shared"
	}
	if load {
		if b.coherent && b.space == ir.DRAM {
			return "ld.global.cg"
		}
		if b.input && b.cached {
			return "ld" + space + ".nc"
		}
		return "ld" + space
	}
	return "st" + space
}

// wordType is the type suffix of a machine word of an access.
func wordType(k ir.ElemKind, word, esize int64, load bool) string {
	if word != esize {
		return "b32" // packed lanes
	}
	switch {
	case k == ir.F32:
		return "f32"
	case k == ir.F64:
		return "f64"
	case esize == 8:
		return "b64"
	case esize == 4:
		return "b32"
	case esize == 2 && laneClass(k) == rB16:
		return "b16"
	case esize == 2:
		if load && k == ir.I16 {
			return "s16"
		}
		return "u16"
	}
	if load && k == ir.I8 {
		return "s8"
	}
	return "u8"
}

// wordClass is the register class a word is loaded into.
func wordClass(k ir.ElemKind, word, esize int64) regClass {
	if word != esize {
		return rB32
	}
	c := laneClass(k)
	if c == rPred {
		return rB32
	}
	return c
}

// load translates `loop.load`.
func (ke *kernelEmitter) load(op *ir.Operation) {
	l := loop.LoadOp{Operation: op}
	b := ke.buf(op, l.Memref())
	t := l.Output().Type()
	if b.promoted {
		lanes, ok := b.regs[ke.copyIdx]
		if !ok || ke.curLoop == nil {
			ke.fail(op, "reads an sram element no earlier store of this thread wrote (internal error in the PTX emitter's plan)")
		}
		if src, ok := b.narrow[ke.copyIdx]; ok {
			// widened again from the narrow lanes, which take half the
			// registers while the loads ahead of this loop are in flight
			lanes = make([]opnd, len(src))
			for i, x := range src {
				lanes[i] = ke.toWide(x, b.narrowKind)
			}
		}
		ke.vals[op.Result(0)] = lanes
		return
	}
	if lanes, ok := ke.prefetched[prefetchKey{op, ke.copyIdx}]; ok {
		delete(ke.prefetched, prefetchKey{op, ke.copyIdx})
		ke.vals[op.Result(0)] = lanes
		return
	}
	if wl, ok := ke.piped[prefetchKey{op, ke.copyIdx}]; ok {
		delete(ke.piped, prefetchKey{op, ke.copyIdx})
		ke.vals[op.Result(0)] = ke.unpackWords(wl)
		return
	}
	ad := ke.access(op, b, l.Indices())
	ke.vals[op.Result(0)] = ke.loadLanes(b, ad, int64(lanesOf(t)), elemKindOf(t))
}

// prefetchLoads issues loads of an unrolled loop body for its copy c,
// under guard (the copy's iterations past the end), ahead of the body:
// the body's own translation then takes their registers. The induction
// variable is bound to the copy's value; a load whose indices are not
// all known yet is left to the body.
func (ke *kernelEmitter) prefetchLoads(loads []*ir.Operation, c int, guard *opnd) {
	saved := ke.ldPred
	ke.ldPred = guard
	for _, op := range loads {
		l := loop.LoadOp{Operation: op}
		ready := true
		for _, v := range l.Indices() {
			if _, ok := ke.ixs[v]; !ok {
				ready = false
			}
		}
		if !ready {
			continue
		}
		b := ke.buf(op, l.Memref())
		t := l.Output().Type()
		ad := ke.access(op, b, l.Indices())
		ke.prefetched[prefetchKey{op, c}] = ke.loadLanes(b, ad, int64(lanesOf(t)), elemKindOf(t))
	}
	ke.ldPred = saved
}

// loadLanes reads w lanes of kind k at ad.
func (ke *kernelEmitter) loadLanes(b *buffer, ad addr, w int64, k ir.ElemKind) []opnd {
	return ke.unpackWords(ke.loadWords(b, ad, w, k))
}

// unpack splits a loaded word into n lanes of esize bytes of kind k.
func (ke *kernelEmitter) unpack(wd opnd, n, esize int64, k ir.ElemKind) []opnd {
	a := ke.a
	c := laneClass(k)
	if n == 1 {
		if c == rPred {
			p := a.reg(rPred)
			a.ins("setp.ne.u32", p, wd, intImm(0, rB32))
			return []opnd{p}
		}
		return []opnd{wd}
	}
	if c == rB16 && esize == 2 {
		lo, hi := a.reg(rB16), a.reg(rB16)
		a.raw(nil, false, "mov.b32", "{"+lo.s+", "+hi.s+"}", wd.s)
		ke.halves[lo.s], ke.halves[hi.s] = halfSrc{wd, false}, halfSrc{wd, true}
		return []opnd{lo, hi}
	}
	out := make([]opnd, n)
	bits := esize * 8
	for i := range out {
		r := a.reg(rB32)
		ext := "bfe.u32"
		if k == ir.I8 || k == ir.I16 {
			ext = "bfe.s32"
		}
		a.ins(ext, r, wd, intImm(int64(i)*bits, rB32), intImm(bits, rB32))
		switch c {
		case rPred:
			p := a.reg(rPred)
			a.ins("setp.ne.u32", p, r, intImm(0, rB32))
			out[i] = p
		case rB16:
			h := a.reg(rB16)
			a.ins("cvt.u16.u32", h, r)
			out[i] = h
		default:
			out[i] = r
		}
	}
	return out
}

// store translates `loop.store`.
func (ke *kernelEmitter) store(op *ir.Operation) {
	s := loop.StoreOp{Operation: op}
	b := ke.buf(op, s.Memref())
	lanes := ke.get(op, s.Value())
	if b.promoted {
		if ke.curLoop == nil {
			ke.fail(op, "writes an sram buffer held in registers outside an unrolled loop (internal error in the PTX emitter's plan)")
		}
		b.regs[ke.copyIdx] = lanes
		// the narrow copy of what the buffer held before is stale: a row
		// stored in place of another (softmax's exp(x - m) over x, a
		// residual sum over the input it was read from) must not be
		// read back as the old row's narrow lanes
		delete(b.narrow, ke.copyIdx)
		if c, ok := loop.AsCast(s.Value().DefiningOp()); ok && ke.plan.narrowRows && elemKindOf(s.Value().Type()) == ir.F32 {
			if from := elemKindOf(c.Operand(0).Type()); from == ir.BF16 || from == ir.F16 {
				if b.narrow == nil {
					b.narrow = map[int][]opnd{}
				}
				b.narrow[ke.copyIdx] = ke.get(op, c.Operand(0))
				b.narrowKind = from
			}
		}
		return
	}
	ad := ke.access(op, b, s.Indices())
	k := elemKindOf(s.Value().Type())
	if b.exchange {
		ke.exchangeStore(op, b, ad, lanes, k)
		return
	}
	a := ke.a
	w := int64(len(lanes))
	pc := split(w, b.esize, alignOf(b, ad))
	per := pc.chunk / b.esize
	opc := b.memOp(false)
	if pc.words > 1 {
		opc += ".v" + itoa(pc.words)
	}
	opc += "." + wordType(k, pc.word, b.esize, false)
	lpw := pc.word / b.esize // lanes per word
	for c := int64(0); c < w/per; c++ {
		words := make([]opnd, pc.words)
		for i := range words {
			at := c*per + int64(i)*lpw
			words[i] = ke.pack(lanes[at:at+lpw], b.esize, k)
		}
		a.raw(ke.stPred, false, opc, memRef(ad.reg, ad.off+c*pc.chunk), vecRef(words))
	}
	if b.space == ir.SRAM && ke.plan.barrierAfter[op] {
		a.comment("other threads of the group read what this store wrote")
		a.ins("bar.sync", intImm(0, rB32))
	}
}

// pack joins lanes into one word to store.
func (ke *kernelEmitter) pack(lanes []opnd, esize int64, k ir.ElemKind) opnd {
	a := ke.a
	c := laneClass(k)
	if len(lanes) == 1 {
		x := lanes[0]
		if c == rPred {
			r := a.reg(rB32)
			a.ins("selp.u32", r, intImm(1, rB32), intImm(0, rB32), x)
			return r
		}
		return ke.reg(x)
	}
	if c == rB16 && esize == 2 {
		r := a.reg(rB32)
		a.raw(nil, false, "mov.b32", r.s, "{"+ke.reg(lanes[0]).s+", "+ke.reg(lanes[1]).s+"}")
		return r
	}
	bits := esize * 8
	var w opnd
	for i, x := range lanes {
		var r opnd
		switch c {
		case rPred:
			r = a.reg(rB32)
			a.ins("selp.u32", r, intImm(1, rB32), intImm(0, rB32), x)
		case rB16:
			r = a.reg(rB32)
			a.ins("cvt.u32.u16", r, ke.reg(x))
		default:
			r = ke.reg(x)
		}
		if i == 0 {
			w = r
			continue
		}
		n := a.reg(rB32)
		a.ins("bfi.b32", n, r, w, intImm(int64(i)*bits, rB32), intImm(bits, rB32))
		w = n
	}
	return w
}
