package ptx

import (
	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// This file translates the ops by which the instances of a resident split
// (lowering/resident.go: S instances per row, each holding its split in
// shared memory) meet: `loop.ticket` and `loop.group_sync`. Their counters
// are `loop.alloc_dram {zeroed = true}` buffers, zero when a launch begins
// and zero again when it ends; the launcher keeps them across calls.
//
// A ticket is taken by thread 0 of the CTA and handed to the others
// through shared memory:
//
//	@%p1 atom.global.add.u32 	%r1, [%rd5], 1;
//	@%p2 st.global.b32 	[%rd5], 0;        // the last ticket: back to 0
//	@%p1 st.shared.b32 	[%rd9+64016], %r1;
//	bar.sync 	0;
//	ld.shared.b32 	%r2, [%rd9+64016];
//
// A group sync is a barrier of the CTA, thread 0 counting the CTA in
// (a release reduction), spinning until the group is complete (acquire
// loads), and a second barrier; thread 0 counts the CTA out at the end of
// the instance, the last one out setting both counters back to 0:
//
//	bar.sync 	0;
//	@!%p3 bra 	$L_k0_9;
//	red.release.gpu.global.add.u32 	[%rd12], 1;
//	$L_k0_10:
//	ld.acquire.gpu.global.u32 	%r4, [%rd12];
//	setp.lt.u32 	%p4, %r4, %r5;
//	@%p4 bra 	$L_k0_10;
//	$L_k0_9:
//	bar.sync 	0;
//	...                                   // the rest of the instance
//	@%p3 atom.global.add.u32 	%r6, [%rd12+4], 1;   // counted out
//	...                                   // the last out: both back to 0
//
// Loads, in such a kernel, of the buffers it also stores (the partial
// results the instances exchange) are ld.global.cg: from L2, never a line
// of L1 read before another SM's store.
//
// Where a group is at most maxCluster instances, numbered as the lowering
// numbers them (group = ticket / S, the grid 0, 1, ... its instances), the
// group is a thread-block cluster instead (sm_90): the entry declares
// `.reqnctapercluster S, 1, 1`, the instance is the CTA's place in the
// grid (the hardware starts a cluster's S consecutive CTAs together, so
// no ticket is needed to keep a group's instances running), and the
// group sync is the cluster's barrier, whose release and acquire order the
// instances' stores before the others' loads, with no counters:
//
//	barrier.cluster.arrive.release.aligned;
//	barrier.cluster.wait.acquire.aligned;
//
// One instance per CTA: tickets number the CTAs that run the instances,
// and the group's instances wait for each other, so a CTA must not hold
// two of them (the plan fails where it would). The launcher gives every
// instance its own CTA: in a grid-stride loop a CTA's second instance
// could be the one its first waits for.

// maxCluster is the largest portable cluster size of sm_90: groups of more
// instances meet through the atomic counters.
const maxCluster = 8

// clusterGroups makes groups of at most maxCluster instances clusters
// (tests turn it off to run the counters' form on small groups).
var clusterGroups = true

// clusterSize is the cluster size of a resident split whose groups can be
// thread-block clusters (0: they cannot): one ticket numbering the
// instances of a grid from 0 by 1 (its count the grid's upper bound), and
// one group sync whose group is the ticket divided by its size S, a
// constant from 2 to maxCluster of which the instance count is a multiple
// (a constant multiple, or a product with S), so that the grid is whole
// clusters.
func clusterSize(ke *kernelEmitter, tickets, syncs []*ir.Operation) int {
	if !clusterGroups || len(tickets) != 1 || len(syncs) != 1 {
		return 0
	}
	lb, ok1 := staticIndex(ke.grid.Lower())
	step, ok2 := staticIndex(ke.grid.Step())
	if !ok1 || !ok2 || lb != 0 || step != 1 || (loop.TicketOp{Operation: tickets[0]}).Count() != ke.grid.Upper() {
		return 0
	}
	g := loop.GroupSyncOp{Operation: syncs[0]}
	size, ok := staticIndex(g.Size())
	if !ok || size < 2 || size > maxCluster || !wholeGroups(ke.grid.Upper(), size) {
		return 0
	}
	div, ok := loop.AsDivi(g.Group().DefiningOp())
	if !ok || div.Operand(0) != tickets[0].Result(0) {
		return 0
	}
	if d, ok := staticIndex(div.Operand(1)); !ok || d != size {
		return 0
	}
	return int(size)
}

// wholeGroups reports whether index v, an instance count, is a multiple
// of the group size c: a constant multiple, or a product with c.
func wholeGroups(v *ir.Value, c int64) bool {
	if n, ok := staticIndex(v); ok {
		return n > 0 && n%c == 0
	}
	return productWith(v, c)
}

// productWith reports whether index v is a loop.muli with the constant c
// as one of its operands.
func productWith(v *ir.Value, c int64) bool {
	mul := v.DefiningOp()
	if mul == nil || mul.Name() != loop.OpMuli {
		return false
	}
	for _, o := range mul.Operands() {
		if n, ok := staticIndex(o); ok && n == c {
			return true
		}
	}
	return false
}

// syncOps lists the loop.ticket and loop.group_sync ops of a kernel,
// failing on any outside the top level of the grid's body.
func syncOps(ke *kernelEmitter) (tickets, syncs []*ir.Operation) {
	gb := ke.grid.Body().Entry()
	ke.k.Operation.Walk(func(o *ir.Operation) bool {
		switch o.Name() {
		case loop.OpTicket, loop.OpGroupSync:
			if o.Block() != gb {
				ke.fail(o, "is outside the top level of the grid's body; the PTX emitter runs it once per CTA there")
			}
			if o.Name() == loop.OpTicket {
				tickets = append(tickets, o)
			} else {
				syncs = append(syncs, o)
			}
		}
		return true
	})
	if len(syncs) > 1 {
		// a CTA could arrive at the second before the last one out of
		// the first set the counters back to 0
		ke.fail(syncs[1], "is a second 'loop.group_sync' in the kernel; the PTX emitter supports one")
	}
	return tickets, syncs
}

// threadZero is the predicate of thread 0 of the CTA.
func (ke *kernelEmitter) threadZero() opnd {
	return ke.pred("setp.eq.s64", ke.tid, intImm(0, rB64))
}

// u32Of is an index as a 32-bit operand: an immediate when constant.
func (ke *kernelEmitter) u32Of(x ixv) opnd {
	if !x.has {
		return intImm(x.off, rB32)
	}
	return ke.b32("cvt.u32.u64", ke.ixReg(x))
}

// counterBuffer returns the i32 dram buffer of a ticket's or sync's
// counters.
func (ke *kernelEmitter) counterBuffer(op *ir.Operation, v *ir.Value) *buffer {
	b := ke.buf(op, v)
	if b.space != ir.DRAM || b.elem != ir.I32 || b.promoted {
		ke.fail(op, "has counters of type %s; the PTX emitter expects i32 in dram", v.Type())
	}
	return b
}

// ticket translates `loop.ticket`.
func (ke *kernelEmitter) ticket(op *ir.Operation) {
	a := ke.a
	t := loop.TicketOp{Operation: op}
	b := ke.counterBuffer(op, t.Counter())
	if ke.plan.cluster > 0 {
		// the instance of the grid (clusterSize: from 0 by 1)
		iv := ke.grid.Body().Entry().Args[0]
		a.comment("loop.ticket: the instance is the CTA's place in the grid (its cluster's CTAs run together)")
		ke.ixs[op.Result(0)] = ke.ix(iv)
		ke.mults[op.Result(0)] = 1
		return
	}
	count := ke.ix(t.Count())
	last := ke.u32Of(ke.ixAdd(count, constIx(-1)))
	t0 := ke.threadZero()
	a.comment("loop.ticket: thread 0 takes the next of 0 .. count-1; the one that takes count-1 sets the counter back to 0")
	old := a.reg(rB32)
	a.raw(nil, false, "mov.b32", old.s, "0")
	a.raw(&t0, false, "atom.global.add.u32", old.s, memRef(b.base, b.off), "1")
	isLast := ke.pred("setp.eq.s32", old, last)
	reset := ke.andPred(&t0, &isLast)
	a.raw(reset, false, "st.global.b32", memRef(b.base, b.off), "0")
	a.raw(&t0, false, "st.shared.b32", memRef(ke.smemCTA, ke.plan.syncOff), old.s)
	a.ins("bar.sync", intImm(0, rB32))
	got := a.reg(rB32)
	a.raw(nil, false, "ld.shared.b32", got.s, memRef(ke.smemCTA, ke.plan.syncOff))
	ke.ixs[op.Result(0)] = ixv{reg: ke.b64("cvt.u64.u32", got), has: true}
	ke.mults[op.Result(0)] = 1
}

// groupSync translates `loop.group_sync`.
func (ke *kernelEmitter) groupSync(op *ir.Operation) {
	a := ke.a
	g := loop.GroupSyncOp{Operation: op}
	b := ke.counterBuffer(op, g.Counters())
	if ke.plan.cluster > 0 {
		a.comment("loop.group_sync: the group is the CTA's cluster; its barrier orders every thread's stores before the loads after it")
		a.raw(nil, false, "barrier.cluster.arrive.release.aligned")
		a.raw(nil, false, "barrier.cluster.wait.acquire.aligned")
		return
	}
	// everything thread 0 uses is computed before it branches off alone
	// (addresses computed here may be reused by every thread later)
	group := ke.ixReg(ke.ix(g.Group()))
	size := ke.u32Of(ke.ix(g.Size()))
	lastOut := ke.u32Of(ke.ixAdd(ke.ix(g.Size()), constIx(-1)))
	arr := ke.b64("mad.lo.s64", group, intImm(8, rB64), b.base)
	t0 := ke.threadZero()
	a.comment("loop.group_sync: the CTA's stores are done; thread 0 counts it in (release), waits for the group (acquire), counts it out; the last out resets both counters")
	a.ins("bar.sync", intImm(0, rB32))
	skip, spin := a.newLabel(), a.newLabel()
	a.bra(&t0, true, skip)
	// the release reduction orders the CTA's stores before it (bar.sync
	// made them thread 0's to order); it returns nothing to wait for
	a.raw(nil, false, "red.release.gpu.global.add.u32", memRef(arr, b.off), "1")
	a.label(spin)
	seen := a.reg(rB32)
	a.raw(nil, false, "ld.acquire.gpu.global.u32", seen.s, memRef(arr, b.off))
	wait := ke.pred("setp.lt.u32", seen, size)
	a.bra(&wait, false, spin)
	a.label(skip)
	a.comment("the group's stores are visible to every thread of the CTA")
	a.ins("bar.sync", intImm(0, rB32))
	// the departure only resets the counters for the next launch: it is
	// counted at the end of the instance, after its stores, not before
	// the loads the sync was for
	ke.atEnd = append(ke.atEnd, func() {
		a.comment("loop.group_sync's departure: the last of the group out resets both counters")
		t0 := ke.threadZero()
		out := a.reg(rB32)
		a.raw(&t0, false, "atom.global.add.u32", out.s, memRef(arr, b.off+4), "1")
		isLast := ke.pred("setp.eq.s32", out, lastOut)
		isLast = *ke.andPred(&t0, &isLast)
		a.raw(&isLast, false, "st.global.b32", memRef(arr, b.off), "0")
		a.raw(&isLast, false, "st.global.b32", memRef(arr, b.off+4), "0")
	})
}

// markCoherentLoads makes the loads, in a kernel with a group sync, of
// buffers the kernel also stores ld.global.cg.
func (ke *kernelEmitter) markCoherentLoads() {
	if len(ke.plan.syncs) == 0 {
		return
	}
	loads, stores := map[*ir.Value]bool{}, map[*ir.Value]bool{}
	memorySets(ke.grid.Operation, loads, stores)
	for v := range stores {
		if b, ok := ke.bufs[v]; ok && b.space == ir.DRAM {
			b.coherent = true
		}
	}
}

// Distributed shared memory. In a cluster, the partial results the group's
// instances exchange (a resident split's max and sum per split: dram
// buffers [R..., S] the kernel stores before its group sync and loads
// after it) need not go through L2: every CTA of the cluster keeps a slot
// array of S elements per buffer in its shared memory, the store of split
// j's value writes slot j of every CTA of the cluster (`mapa` turns the
// CTA's own slot address into each other CTA's, `st.shared::cluster`
// writes there), and the loads after the sync read the CTA's own slots
// with ld.shared:
//
//	barrier.cluster.arrive.relaxed.aligned;   // at the instance's start
//	...
//	barrier.cluster.wait.aligned;             // every CTA of the cluster runs
//	mapa.shared::cluster.u64 	%rd50, %rd49, 0;
//	@%p9 st.shared::cluster.f32 	[%rd50], %f12;
//	...                                       // ranks 1 .. S-1
//	barrier.cluster.arrive.release.aligned;   // the group sync
//	barrier.cluster.wait.acquire.aligned;
//	ld.shared.v4.f32 	{%f20, %f21, %f22, %f23}, [%rd23+64016];
//
// The first cluster barrier keeps a CTA from writing into one that has not
// started; none writes into another after the group sync, so none exits
// while another may still write to it. The dram buffers are left unwritten.

// clusterExchange turns the exchange through dram into distributed shared
// memory (tests turn it off to run the L2 form on clusters).
var clusterExchange = true

// exchangeBuffers lists the dram buffers of a cluster's exchange, in
// argument order, or none where the kernel's accesses to one do not fit
// the form: f32 or i32 buffers of last extent S (the cluster size), stored
// only at the top level of the grid's body before the group sync, at the
// instance's split as last index (the ticket mod S), and loaded only after
// the sync, every access with the same leading indices.
func exchangeBuffers(ke *kernelEmitter, pl *plan) []*ir.Value {
	if !clusterExchange || pl.cluster == 0 || len(pl.syncs) != 1 || len(pl.tickets) != 1 {
		return nil
	}
	gb := ke.grid.Body().Entry()
	sync := pl.syncs[0]
	ticket := pl.tickets[0].Result(0)
	before := map[*ir.Operation]bool{}
	for op := gb.First(); op != nil && op != sync; op = op.Next() {
		before[op] = true
	}
	var out []*ir.Value
	for _, arg := range ke.body.Args[ke.nin : ke.nin+int(ke.k.NumOutputs())] {
		m, ok := arg.Type().(ir.MemRefType)
		if !ok || len(m.Shape) < 2 || m.Shape[len(m.Shape)-1] != int64(pl.cluster) || max(m.Elem.Kind.ByteSize(), 1) != 4 {
			continue
		}
		var lead []*ir.Value
		stored, loaded, fits := false, false, true
		same := func(idx []*ir.Value) bool {
			if lead == nil {
				lead = idx[:len(idx)-1]
				return true
			}
			for d, v := range idx[:len(idx)-1] {
				if v != lead[d] {
					return false
				}
			}
			return true
		}
		for _, user := range arg.Users() {
			switch {
			case user.Name() == loop.OpStore && user.Operand(1) == arg && user.Operand(0) != arg:
				idx := loop.StoreOp{Operation: user}.Indices()
				if user.Block() != gb || !before[user] || !isSplitOf(idx[len(idx)-1], ticket, pl.cluster) || !same(idx) {
					fits = false
				}
				stored = true
			case user.Name() == loop.OpLoad && user.Operand(0) == arg:
				l := loop.LoadOp{Operation: user}
				if before[topLevel(user, gb)] || !same(l.Indices()) {
					fits = false
				}
				loaded = true
			default:
				fits = false
			}
		}
		if fits && stored && loaded {
			out = append(out, arg)
		}
	}
	return out
}

// isSplitOf reports whether index v is the ticket t mod the constant s.
func isSplitOf(v, t *ir.Value, s int) bool {
	op := v.DefiningOp()
	if op == nil || op.Name() != loop.OpRemi || op.Operand(0) != t {
		return false
	}
	n, ok := staticIndex(op.Operand(1))
	return ok && n == int64(s)
}

// topLevel is the op of block gb that is or holds op.
func topLevel(op *ir.Operation, gb *ir.Block) *ir.Operation {
	for op != nil && op.Block() != gb {
		op = op.ParentOp()
	}
	return op
}

// bindExchange makes the exchange buffers the CTA's slot arrays in shared
// memory (their leading indices, the row's, contribute nothing), and
// arrives at the cluster barrier that the first exchange store waits on.
func (ke *kernelEmitter) bindExchange() {
	pl := ke.plan
	for i, v := range pl.exchange {
		m := v.Type().(ir.MemRefType)
		b := &buffer{space: ir.SRAM, elem: m.Elem.Kind, esize: 4, base: ke.smemCTA, off: pl.exchangeOff[i],
			baseAlign: 16, exchange: true}
		for range m.Shape {
			b.dims = append(b.dims, constIx(1))
			b.strides = append(b.strides, constIx(0))
			b.smults = append(b.smults, 0)
		}
		n := len(m.Shape) - 1
		b.dims[n], b.strides[n], b.smults[n] = constIx(int64(pl.cluster)), constIx(1), 1
		ke.bufs[v] = b
	}
}

// exchangeStore writes the lanes of a store to an exchange buffer at
// shared address ad into the same slot of every CTA of the cluster.
func (ke *kernelEmitter) exchangeStore(op *ir.Operation, b *buffer, ad addr, lanes []opnd, k ir.ElemKind) {
	a := ke.a
	if !ke.exchangeReady {
		a.comment("every CTA of the cluster has started: its shared memory may be written")
		a.raw(nil, false, "barrier.cluster.wait.aligned")
		ke.exchangeReady = true
	}
	local := ke.b64("add.s64", ad.reg, intImm(ad.off, rB64))
	a.comment("%s: the slot in every CTA of the cluster", op.Name())
	for r := 0; r < ke.plan.cluster; r++ {
		remote := a.reg(rB64)
		a.raw(nil, false, "mapa.shared::cluster.u64", remote.s, local.s, itoa(int64(r)))
		for l, x := range lanes {
			a.raw(ke.stPred, false, "st.shared::cluster."+wordType(k, b.esize, b.esize, false), memRef(remote, int64(l)*b.esize), x.s)
		}
	}
}

// exchangeWhere says where a cluster's instances exchange their partials.
func exchangeWhere(pl *plan) string {
	if len(pl.exchange) > 0 {
		return "the partials they exchange held in the cluster's shared memory"
	}
	return "the buffers they exchange read with ld.global.cg"
}
