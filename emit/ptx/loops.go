package ptx

import (
	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// This file translates loop.for. A serial loop is a loop in each thread.
// A threads loop (groups form) gives iteration i to lane i mod G:
// unrolled into copies when its trip count is static and small,
//
//	%i(copy t) = lane * step + lower + t * G * step
//
// with the loads and stores of a copy predicated on %i < upper where the
// last copy runs past the end in some lanes; otherwise a loop at run time
// from lower + lane * step by G * step. Its carried values are then
// combined over the group: within a warp by a butterfly of
// shfl.sync.bfly.b32, which leaves every lane the same total (each step
// combines two lanes that end up equal); across warps through shared
// memory, every thread combining the warps' totals in warp order.

// emitFor translates a loop.for.
func (ke *kernelEmitter) emitFor(op *ir.Operation) {
	f := loop.ForOp{Operation: op}
	if f.Dist() == "threads" {
		if bc := ke.plan.bulk[op]; bc != nil && ke.emitBulkCopy(op, bc) {
			return
		}
		if ke.plan.flat {
			ke.fail(op, "is a threads loop the flat plan did not distribute (internal error in the PTX emitter's plan)")
		}
		ke.emitThreadsLoop(f)
		return
	}
	ke.emitSerialLoop(f)
}

// initLanes returns the lanes of a loop's inits.
func (ke *kernelEmitter) initLanes(f loop.ForOp) [][]opnd {
	inits := f.Inits()
	out := make([][]opnd, len(inits))
	for i, v := range inits {
		if elemKindOf(v.Type()) == ir.Index {
			ke.fail(f.Operation, "carries an index value, which the PTX emitter does not")
		}
		out[i] = ke.get(f.Operation, v)
	}
	return out
}

// freshCopies allocates registers for carried values and copies vs in.
func (ke *kernelEmitter) freshCopies(vs [][]opnd, kinds []ir.ElemKind) [][]opnd {
	out := make([][]opnd, len(vs))
	for i, lanes := range vs {
		out[i] = make([]opnd, len(lanes))
		for l, x := range lanes {
			r := ke.a.reg(laneClass(kinds[i]))
			ke.mov(r, x)
			out[i][l] = r
		}
	}
	return out
}

// carriedKinds returns the element kinds of a loop's results.
func carriedKinds(f loop.ForOp) []ir.ElemKind {
	var ks []ir.ElemKind
	for _, r := range f.Values() {
		ks = append(ks, elemKindOf(r.Type()))
	}
	return ks
}

// assign copies src into the loop registers dst as a parallel copy: a
// source that is also a destination is read before it is overwritten.
func (ke *kernelEmitter) assign(dst, src [][]opnd) {
	isDst := map[string]bool{}
	for _, lanes := range dst {
		for _, r := range lanes {
			isDst[r.s] = true
		}
	}
	clash := false
	for i, lanes := range src {
		for l, x := range lanes {
			if !x.imm && isDst[x.s] && x.s != dst[i][l].s {
				clash = true
			}
		}
	}
	if clash {
		tmp := make([][]opnd, len(src))
		for i, lanes := range src {
			tmp[i] = make([]opnd, len(lanes))
			for l, x := range lanes {
				r := ke.a.reg(dst[i][l].cls)
				ke.mov(r, x)
				tmp[i][l] = r
			}
		}
		src = tmp
	}
	for i, lanes := range src {
		for l, x := range lanes {
			if x.s != dst[i][l].s {
				ke.mov(dst[i][l], x)
			}
		}
	}
}

// emitSerialLoop emits a loop run by each thread on its own.
//
//	mov.b64 %i, lower
//	head: setp.ge.s64 %p, %i, upper; @%p bra exit
//	      body; carried = yielded; add.s64 %i, %i, step; bra head
//	exit:
func (ke *kernelEmitter) emitSerialLoop(f loop.ForOp) {
	a := ke.a
	lb, ub, step := ke.ix(f.Lower()), ke.ix(f.Upper()), ke.ix(f.Step())
	kinds := carriedKinds(f)
	c := ke.freshCopies(ke.initLanes(f), kinds)
	body := f.Body().Entry()
	ke.hoistAddresses(f.Operation)
	pp := ke.plan.pipeline[f.Operation]
	var cur map[prefetchKey]*wordLoad
	if pp != nil {
		a.comment("the first chunk's loads, ahead of the loop (pipelined)")
		cur = ke.pipeLoads(f, pp, lb, nil)
	}
	i := a.reg(rB64)
	a.ins("mov.b64", i, ke.ixReg(lb))
	ubr := ke.ixReg(ub)
	stepr := ke.ixReg(step)
	head, exit := a.newLabel(), a.newLabel()
	a.label(head)
	p := a.reg(rPred)
	a.ins("setp.ge.s64", p, i, ubr)
	a.bra(&p, false, exit)
	ke.pushScope()
	iv := body.Args[0]
	var next map[prefetchKey]*wordLoad
	if pp != nil {
		a.comment("the next chunk's loads, in flight while this one is combined")
		ni := a.reg(rB64)
		a.ins("add.s64", ni, i, stepr)
		more := a.reg(rPred)
		a.ins("setp.lt.s64", more, ni, ubr)
		next = ke.pipeLoads(f, pp, ixv{reg: ni, has: true}, &more)
		for _, k := range pp.keys(ke) {
			ke.piped[k] = cur[k]
		}
	}
	ke.ixs[iv] = ixv{reg: i, has: true}
	ke.mults[iv] = gcd(ke.multOf(f.Lower()), ke.multOf(f.Step()))
	saved := ke.curLoop
	ke.curLoop = nil
	y := ke.emitBody(body, c)
	ke.curLoop = saved
	ke.assign(c, y)
	if pp != nil {
		a.comment("the next chunk's words become this one's")
		for _, k := range pp.keys(ke) {
			ke.movWords(cur[k], next[k])
			delete(ke.piped, k)
		}
	}
	ke.popScope()
	a.ins("add.s64", i, i, stepr)
	a.bra(nil, false, head)
	a.label(exit)
	for j, r := range f.Values() {
		ke.vals[r] = c[j]
	}
}

// emitThreadsLoop emits a threads loop over the lanes of the group, then
// the combine of its carried values.
func (ke *kernelEmitter) emitThreadsLoop(f loop.ForOp) {
	a := ke.a
	pl := ke.plan
	lp := pl.loops[f.Operation]
	if lp == nil {
		ke.fail(f.Operation, "is a threads loop the PTX emitter's plan missed")
	}
	lb, ub, step := ke.ix(f.Lower()), ke.ix(f.Upper()), ke.ix(f.Step())
	kinds := carriedKinds(f)
	body := f.Body().Entry()
	iv := body.Args[0]
	g := int64(pl.group)
	savedLd, savedSt := ke.ldPred, ke.stPred
	savedLoop, savedCopy := ke.curLoop, ke.copyIdx
	ke.hoistAddresses(f.Operation)
	var carried [][]opnd
	if lp.unroll > 0 {
		a.comment("threads loop: %d iteration(s), %d copies over %d lane(s)", lp.trip, lp.unroll, g)
		carried = ke.initLanes(f)
		base := ke.ixAdd(ke.ixMul(ixv{reg: ke.lane, has: true}, step), lb)
		ke.pushScope()
		for t := 0; t < lp.unroll; t++ {
			it := base
			it.off += int64(t) * g * step.off
			guard := ke.copyGuard(lp, t, it, ub)
			ke.ixs[iv] = it
			ke.mults[iv] = gcd(ke.multOf(f.Lower()), ke.multOf(f.Step()))
			ke.curLoop, ke.copyIdx = f.Operation, t
			ke.ldPred = guard
			ke.stPred = ke.andPred(guard, ke.active)
			y := ke.emitBody(body, carried)
			if guard != nil {
				// lanes past the end keep what they carried
				kept := make([][]opnd, len(y))
				for j := range y {
					kept[j] = make([]opnd, len(y[j]))
					for l := range y[j] {
						kept[j][l] = ke.selectLane(kinds[j], *guard, y[j][l], carried[j][l])
					}
				}
				y = kept
			}
			carried = y
		}
		ke.popScope()
	} else {
		a.comment("threads loop over %d lane(s), at run time", g)
		carried = ke.freshCopies(ke.initLanes(f), kinds)
		i := a.reg(rB64)
		a.ins("mov.b64", i, ke.ixReg(ke.ixAdd(ke.ixMul(ixv{reg: ke.lane, has: true}, step), lb)))
		stride := ke.ixReg(ke.ixScale(step, g))
		ubr := ke.ixReg(ub)
		head, exit := a.newLabel(), a.newLabel()
		a.label(head)
		p := a.reg(rPred)
		a.ins("setp.ge.s64", p, i, ubr)
		a.bra(&p, false, exit)
		ke.pushScope()
		ke.ixs[iv] = ixv{reg: i, has: true}
		ke.mults[iv] = gcd(ke.multOf(f.Lower()), ke.multOf(f.Step()))
		ke.curLoop = nil
		ke.ldPred, ke.stPred = nil, ke.active
		y := ke.emitBody(body, carried)
		ke.assign(carried, y)
		ke.popScope()
		a.ins("add.s64", i, i, stride)
		a.bra(nil, false, head)
		a.label(exit)
	}
	ke.ldPred, ke.stPred = savedLd, savedSt
	ke.curLoop, ke.copyIdx = savedLoop, savedCopy
	if len(f.Values()) > 0 {
		ke.prefetchLater(f.Operation)
		ke.combineThreads(f, carried, kinds)
	}
	if pl.barrierAfter[f.Operation] {
		a.comment("other threads of the group read the sram this loop wrote")
		a.ins("bar.sync", i32(0))
	}
}

// prefetchLater issues, before the combine of threads loop op, the loads
// the plan moved ahead of the unrolled threads loops that follow it in
// the grid body: their memory latency overlaps the combine's shuffles
// and barriers and this loop's arithmetic (in rms_silu_mul, w and z are
// in flight while the sum of squares crosses the group).
func (ke *kernelEmitter) prefetchLater(op *ir.Operation) {
	pl := ke.plan
	if op.Block() != ke.grid.Body().Entry() {
		return
	}
	for next := op.Next(); next != nil; next = next.Next() {
		loads := pl.prefetch[next]
		lp := pl.loops[next]
		if len(loads) == 0 || lp == nil || lp.unroll == 0 {
			continue
		}
		f := loop.ForOp{Operation: next}
		lb, okL := ke.ixs[f.Lower()]
		ub, okU := ke.ixs[f.Upper()]
		step, okS := ke.ixs[f.Step()]
		if !okL || !okU || !okS || step.has {
			continue
		}
		ke.a.comment("the inputs of the threads loop after the combine, ahead of it")
		iv := f.Body().Entry().Args[0]
		base := ke.ixAdd(ke.ixMul(ixv{reg: ke.lane, has: true}, step), lb)
		g := int64(pl.group)
		for t := 0; t < lp.unroll; t++ {
			it := base
			it.off += int64(t) * g * step.off
			ke.ixs[iv] = it
			ke.mults[iv] = gcd(ke.multOf(f.Lower()), ke.multOf(f.Step()))
			ke.prefetchLoads(loads, t, ke.copyGuard(lp, t, it, ub))
		}
		delete(ke.ixs, iv)
		// the copies' loads are issued once
		delete(pl.prefetch, next)
	}
}

// copyGuard is the predicate of copy t of an unrolled threads loop whose
// iteration it is: nil when every lane's iteration is in the loop.
func (ke *kernelEmitter) copyGuard(lp *loopPlan, t int, it, ub ixv) *opnd {
	if !lp.guard || int64(t+1)*int64(ke.plan.group) <= lp.trip {
		return nil
	}
	p := ke.a.reg(rPred)
	ke.a.ins("setp.lt.s64", p, ke.ixReg(it), ke.ixReg(ub))
	return &p
}

// combineThreads combines a threads loop's carried values over the group
// and binds the results (and the lane reductions answered on the way).
func (ke *kernelEmitter) combineThreads(f loop.ForOp, carried [][]opnd, kinds []ir.ElemKind) {
	comb := f.Combine()
	if len(comb) != len(carried) {
		ke.fail(f.Operation, "has %d combine kinds for %d carried values", len(comb), len(carried))
	}
	type slot struct {
		res  int
		lane int // -1: the lanes reduced in the thread
	}
	var xs []opnd
	var ks []ir.ElemKind
	var kindOf []string
	var slots []slot
	for j, lanes := range carried {
		r := f.Values()[j]
		if preReducible(r, comb[j]) {
			acc := lanes[0]
			for _, y := range lanes[1:] {
				acc = ke.combine(f.Operation, comb[j], kinds[j], acc, y)
			}
			xs = append(xs, acc)
			ks = append(ks, kinds[j])
			kindOf = append(kindOf, comb[j])
			slots = append(slots, slot{j, -1})
			continue
		}
		for l, x := range lanes {
			xs = append(xs, x)
			ks = append(ks, kinds[j])
			kindOf = append(kindOf, comb[j])
			slots = append(slots, slot{j, l})
		}
	}
	if ke.plan.group > 1 {
		ke.a.comment("combine over the %d thread(s) of the group", ke.plan.group)
	}
	tot := ke.groupCombine(f.Operation, xs, ks, kindOf)
	results := make([][]opnd, len(carried))
	for i, s := range slots {
		r := f.Values()[s.res]
		if s.lane < 0 {
			for _, u := range r.Users() {
				ke.preReduced[u] = []opnd{tot[i]}
			}
			continue
		}
		if results[s.res] == nil {
			results[s.res] = make([]opnd, len(carried[s.res]))
		}
		results[s.res][s.lane] = tot[i]
	}
	for j, r := range f.Values() {
		if results[j] != nil {
			ke.vals[r] = results[j]
		}
	}
}

// groupCombine combines scalars over the G threads of the group; every
// thread gets the same totals.
func (ke *kernelEmitter) groupCombine(op *ir.Operation, xs []opnd, ks []ir.ElemKind, kinds []string) []opnd {
	g := ke.plan.group
	if g == 1 {
		return xs
	}
	out := make([]opnd, len(xs))
	for i, x := range xs {
		out[i] = ke.reg(x)
	}
	width := min(g, 32)
	for off := width / 2; off >= 1; off /= 2 {
		for i := range out {
			y := ke.shuffleXor(out[i], ks[i], off)
			out[i] = ke.combine(op, kinds[i], ks[i], out[i], y)
		}
	}
	if g <= 32 {
		return out
	}
	a := ke.a
	nw := int64(g / 32)
	a.comment("across the %d warps: each warp's first lane writes its total, every thread combines them in warp order", nw)
	offs := make([]int64, len(out))
	next := ke.plan.redOff
	for i := range out {
		offs[i] = next
		next += nw * slotBytes(ks[i])
	}
	for i, x := range out {
		sz := slotBytes(ks[i])
		w := ke.warpOff4
		if sz == 8 {
			w = ke.warpOff8
		}
		ad := ke.cached("addr "+ke.smemCTA.s+" "+w.s, func() opnd {
			return ke.b64("add.s64", ke.smemCTA, w)
		})
		a.raw(ke.lane32Zero, false, "st.shared."+slotType(ks[i]), memRef(ad, offs[i]), ke.reg(x).s)
	}
	a.ins("bar.sync", i32(0))
	for i := range out {
		sz := slotBytes(ks[i])
		var acc opnd
		for w := int64(0); w < nw; w++ {
			v := a.reg(slotClass(ks[i]))
			a.raw(nil, false, "ld.shared."+slotType(ks[i]), v.s, memRef(ke.smemCTA, offs[i]+w*sz))
			if w == 0 {
				acc = v
				continue
			}
			acc = ke.combine(op, kinds[i], ks[i], acc, v)
		}
		out[i] = acc
	}
	a.comment("the scratch is free again once every thread has read it")
	a.ins("bar.sync", i32(0))
	return out
}

// slotType is the PTX type of a value of kind k in the combine scratch.
func slotType(k ir.ElemKind) string {
	switch laneClass(k) {
	case rF32:
		return "f32"
	case rF64:
		return "f64"
	case rB64:
		return "b64"
	}
	return "b32"
}

// slotClass is the register class of a value of kind k read back from
// the scratch.
func slotClass(k ir.ElemKind) regClass {
	c := laneClass(k)
	if c == rB16 || c == rPred {
		return rB32
	}
	return c
}

// shuffleXor returns x from lane (lane ^ off) of the warp.
func (ke *kernelEmitter) shuffleXor(x opnd, k ir.ElemKind, off int) opnd {
	a := ke.a
	shfl := func(r opnd) opnd {
		d := a.reg(rB32)
		a.ins("shfl.sync.bfly.b32", d, r, i32(int64(off)), i32(31), i32(-1))
		return d
	}
	switch laneClass(k) {
	case rF32:
		r := ke.b32("mov.b32", x)
		return ke.f32("mov.b32", shfl(r))
	case rB32:
		return shfl(x)
	case rB64, rF64:
		bits := x
		if x.cls == rF64 {
			bits = ke.b64("mov.b64", x)
		}
		lo, hi := a.reg(rB32), a.reg(rB32)
		a.raw(nil, false, "mov.b64", "{"+lo.s+", "+hi.s+"}", bits.s)
		lo, hi = shfl(lo), shfl(hi)
		y := a.reg(rB64)
		a.raw(nil, false, "mov.b64", y.s, "{"+lo.s+", "+hi.s+"}")
		if x.cls == rF64 {
			return ke.f64("mov.b64", y)
		}
		return y
	}
	ke.fail(ke.k.Operation, "combines %s values over threads, which the PTX emitter does not", k)
	return opnd{}
}
