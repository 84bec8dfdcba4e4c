package ptx

import (
	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// This file pipelines a serial loop over chunks of a row (the online
// schedule's loop over a long row): the loads of the next chunk are
// issued at the top of each iteration, before this chunk's arithmetic and
// its combines, into registers that the next iteration takes over, so a
// thread has a chunk in flight while it waits at the combines' shuffles and
// barriers. Before the loop, the first chunk's loads:
//
//	(loads of chunk lower into cur)
//	head: setp.ge %i, upper; @p bra exit
//	      setp.lt %next, %i + step, upper
//	      @next (loads of chunk %i + step into nxt)
//	      body, reading cur where it loaded
//	      mov cur, nxt; add %i, %i, step; bra head
//	exit:
//
// The loads are those of the first unrolled threads loop of the body that
// read kernel inputs at indices computed from the two loops' induction
// variables and values defined before the loop (pipelineLoads).

// Pipeline turns the pipelining of serial chunk loops on. Off by default
// until measured on a GPU; TENSORFORGE_PTX_PIPELINE=1 turns it on in tfc.
var Pipeline = false

// pipelineBudget bounds the 32-bit registers per thread that hold a
// pipelined loop's next chunk (the current one takes as many).
const pipelineBudget = 32

// pipePlan is a pipelined serial loop: its threads loop and the loads
// of it that are issued an iteration ahead.
type pipePlan struct {
	threads *ir.Operation
	loads   []*ir.Operation
}

// keys lists the loads of pp by copy, in program order.
func (pp *pipePlan) keys(ke *kernelEmitter) []prefetchKey {
	var out []prefetchKey
	for c := 0; c < ke.plan.loops[pp.threads].unroll; c++ {
		for _, op := range pp.loads {
			out = append(out, prefetchKey{op, c})
		}
	}
	return out
}

// wordLoad is a load issued as words, unpacked into lanes where read.
type wordLoad struct {
	words      [][]opnd // per chunk of the access, its words
	wordBytes  int64
	esize      int64
	kind       ir.ElemKind
	lanesTotal int64
}

// planPipelines finds the serial loops of the grid body worth pipelining
// within left registers, and returns the registers they take.
func (pl *plan) planPipelines(ke *kernelEmitter, gb *ir.Block, left int64) int64 {
	if !Pipeline {
		return 0
	}
	var used int64
	for op := gb.First(); op != nil; op = op.Next() {
		f, ok := loop.AsFor(op)
		if !ok || f.Dist() == "threads" || staticTrip(f) < 1 {
			continue
		}
		var threads *ir.Operation
		for o := f.Body().Entry().First(); o != nil; o = o.Next() {
			if t, ok := loop.AsFor(o); ok && t.Dist() == "threads" {
				threads = o
				break
			}
		}
		lp := pl.loops[threads]
		if threads == nil || lp == nil || lp.unroll == 0 {
			continue
		}
		loads := pipelineLoads(ke, f, loop.ForOp{Operation: threads})
		var regs int64
		for _, l := range loads {
			t := loop.LoadOp{Operation: l}.Output().Type()
			regs += int64(lp.unroll) * ceilDiv(int64(lanesOf(t))*max(elemKindOf(t).ByteSize(), 1), 4)
		}
		if len(loads) == 0 || used+regs > min(left, pipelineBudget) {
			continue
		}
		pl.pipeline[op] = &pipePlan{threads: threads, loads: loads}
		used += regs
	}
	return used
}

// pipelineLoads lists the loads of kernel inputs in threads loop t (the
// body of serial loop f) whose indices are index arithmetic of the two
// loops' induction variables and of values defined before f.
func pipelineLoads(ke *kernelEmitter, f, t loop.ForOp) []*ir.Operation {
	ivs := map[*ir.Value]bool{f.Body().Entry().Args[0]: true, t.Body().Entry().Args[0]: true}
	var ready func(v *ir.Value) bool
	ready = func(v *ir.Value) bool {
		if ivs[v] || !definedIn(f.Operation, v) {
			return true
		}
		op := v.DefiningOp()
		if op == nil || !isIndexArith(op) {
			return false
		}
		for _, x := range op.Operands() {
			if !ready(x) {
				return false
			}
		}
		return true
	}
	for _, b := range []*ir.Value{t.Lower(), t.Upper(), t.Step()} {
		if definedIn(f.Operation, b) {
			return nil
		}
	}
	var out []*ir.Operation
	for op := t.Body().Entry().First(); op != nil; op = op.Next() {
		l, ok := loop.AsLoad(op)
		if !ok || !isKernelInput(ke, l.Memref()) {
			continue
		}
		all := true
		for _, v := range l.Indices() {
			if !ready(v) {
				all = false
			}
		}
		if all {
			out = append(out, op)
		}
	}
	return out
}

// isIndexArith reports whether op computes an index from indices alone.
func isIndexArith(op *ir.Operation) bool {
	switch op.Name() {
	case loop.OpConst, loop.OpAddi, loop.OpSubi, loop.OpMuli, loop.OpDivi, loop.OpRemi, loop.OpMini:
		return true
	}
	return false
}

// pipeLoads issues the pipelined loads of pp for the iteration of serial
// loop f at iv, under pred (nil: always), and returns them per load and
// copy of the threads loop.
func (ke *kernelEmitter) pipeLoads(f loop.ForOp, pp *pipePlan, iv ixv, pred *opnd) map[prefetchKey]*wordLoad {
	fiv := f.Body().Entry().Args[0]
	t := loop.ForOp{Operation: pp.threads}
	tiv := t.Body().Entry().Args[0]
	savedF, hadF := ke.ixs[fiv]
	savedFM := ke.mults[fiv]
	savedPred := ke.ldPred
	ke.ixs[fiv] = iv
	ke.mults[fiv] = gcd(ke.multOf(f.Lower()), ke.multOf(f.Step()))
	lp := ke.plan.loops[pp.threads]
	lb, ub, step := ke.ix(t.Lower()), ke.ix(t.Upper()), ke.ix(t.Step())
	base := ke.ixAdd(ke.ixMul(ixv{reg: ke.lane, has: true}, step), lb)
	g := int64(ke.plan.group)
	out := map[prefetchKey]*wordLoad{}
	ke.pushScope()
	for c := 0; c < lp.unroll; c++ {
		it := base
		it.off += int64(c) * g * step.off
		ke.ixs[tiv] = it
		ke.mults[tiv] = gcd(ke.multOf(t.Lower()), ke.multOf(t.Step()))
		// the index arithmetic the loads read, for this iteration and copy
		for _, blk := range []*ir.Block{f.Body().Entry(), t.Body().Entry()} {
			for op := blk.First(); op != nil; op = op.Next() {
				if isIndexArith(op) && op.Name() != loop.OpConst && ke.operandsKnown(op) {
					ke.emitOp(op)
				}
			}
		}
		ke.ldPred = ke.andPred(ke.copyGuard(lp, c, it, ub), pred)
		for _, op := range pp.loads {
			l := loop.LoadOp{Operation: op}
			b := ke.buf(op, l.Memref())
			ty := l.Output().Type()
			ad := ke.access(op, b, l.Indices())
			out[prefetchKey{op, c}] = ke.loadWords(b, ad, int64(lanesOf(ty)), elemKindOf(ty))
		}
	}
	ke.popScope()
	delete(ke.ixs, tiv)
	if hadF {
		ke.ixs[fiv], ke.mults[fiv] = savedF, savedFM
	} else {
		delete(ke.ixs, fiv)
	}
	ke.ldPred = savedPred
	return out
}

// operandsKnown reports whether every operand of op has an index value.
func (ke *kernelEmitter) operandsKnown(op *ir.Operation) bool {
	for _, v := range op.Operands() {
		if _, ok := ke.ixs[v]; !ok {
			return false
		}
	}
	return true
}

// loadWords issues the loads of w lanes of kind k at ad as words.
func (ke *kernelEmitter) loadWords(b *buffer, ad addr, w int64, k ir.ElemKind) *wordLoad {
	a := ke.a
	pc := split(w, b.esize, alignOf(b, ad))
	per := pc.chunk / b.esize // lanes per chunk
	opc := b.memOp(true)
	if pc.words > 1 {
		opc += ".v" + itoa(pc.words)
	}
	opc += "." + wordType(k, pc.word, b.esize, true)
	wc := wordClass(k, pc.word, b.esize)
	wl := &wordLoad{wordBytes: pc.word, esize: b.esize, kind: k, lanesTotal: w}
	for c := int64(0); c < w/per; c++ {
		words := make([]opnd, pc.words)
		for i := range words {
			words[i] = a.reg(wc)
		}
		a.raw(ke.ldPred, false, opc, vecRef(words), memRef(ad.reg, ad.off+c*pc.chunk))
		wl.words = append(wl.words, words)
	}
	return wl
}

// unpackWords splits a word load into its lanes.
func (ke *kernelEmitter) unpackWords(wl *wordLoad) []opnd {
	out := make([]opnd, 0, wl.lanesTotal)
	for _, words := range wl.words {
		for _, wd := range words {
			out = append(out, ke.unpack(wd, wl.wordBytes/wl.esize, wl.esize, wl.kind)...)
		}
	}
	return out
}

// movWords copies the words of src into those of dst (the same shape).
func (ke *kernelEmitter) movWords(dst, src *wordLoad) {
	for i, words := range src.words {
		for j, wd := range words {
			ke.mov(dst.words[i][j], wd)
		}
	}
}
