package ptx

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// This file decides, before any instruction is written, how a kernel
// maps onto CTAs: flat or groups, the group size, which threads loops
// are unrolled, which sram buffers live in registers and where the rest
// sits in shared memory.

const (
	// flatBlock is the CTA size of flat kernels.
	flatBlock = 256
	// maxUnroll bounds the copies of an unrolled threads loop.
	maxUnroll = 16
	// groupsBlock is the CTA size when groups are smaller than a warp.
	groupsBlock = 256
)

// flatMaxUnroll bounds the copies per thread of a flat kernel's long
// loops (a variable so that tests and measurements can change it).
var flatMaxUnroll int64 = 8

// bulkThreads bounds the group size of kernels with bulk copies (0: sized
// as the others). Their threads wait for the copy and then read shared
// memory, and fewer of them let more CTAs share an SM: on an H100, softmax
// over 4096 rows of 256000 bf16 in clusters of 8 splits of 32000 ran at
// 0.83, 0.83, 0.86, 0.84, 0.68 and 0.45 of copy with 128, 192, 256, 384,
// 512 and the 800 the other kernels' rule gives; rows of 32000 copied
// whole at 0.91, 0.93, 0.96, 0.98 and 0.93 with 128 to 384 and 800
// (bench/results/gpu-h100-2026-12-07-bulk-emitted.txt).
var bulkThreads = 256

// regBudget bounds the registers per thread holding sram buffers (a
// variable so that tests can send every buffer to shared memory).
var regBudget int64 = 64

// targetIters is the iterations of a threads loop each thread should get,
// and the copies of a flat kernel's long loops: four 16-byte loads in
// flight per thread and input.
var targetIters int64 = 4

// plan is the mapping of one kernel onto the GPU.
type plan struct {
	flat  bool
	block int // threads per CTA

	// groups form
	group, rows  int                         // G threads per instance, R instances per CTA
	loops        map[*ir.Operation]*loopPlan // threads loops
	promoted     map[*ir.Operation]bool      // loop.alloc ops held in registers
	allocOffset  map[*ir.Operation]int64     // shared offset of the others in the group's sram
	groupBytes   int64                       // sram of one group, 16-byte aligned
	redOff       int64                       // cross-warp scratch
	redBytes     int64                       //
	shared       int64                       // dynamic shared memory per CTA
	barrierAfter map[*ir.Operation]bool      // ops after which shared sram must be synchronised

	// prefetch lists, per unrolled loop (a threads loop, or a flat
	// kernel's long loop), the loads of kernel inputs issued ahead of the
	// loop body: for a threads loop before the combine of the threads loop
	// that precedes it, so that their latency overlaps the combine's
	// shuffles and barriers; for a flat loop the loads of every copy
	// before the first copy's arithmetic
	prefetch map[*ir.Operation][]*ir.Operation
	// pipeline lists the serial loops over chunks whose next chunk's
	// loads are issued an iteration ahead (pipeline.go)
	pipeline map[*ir.Operation]*pipePlan
	// narrowRows keeps sram rows widened from bf16 or f16 in their narrow
	// form between the loops (widened again where read): where loads are
	// held ahead of a combine, the registers matter more than one
	// instruction per element
	narrowRows bool

	// flat form
	phases      []*flatPhase
	distributed map[*ir.Operation]bool
	rowWork     bool // the grid body has per-instance stores

	// resident splits (sync.go): the loop.ticket and loop.group_sync ops
	// of the grid's body, and the shared slot that hands a ticket from
	// thread 0 to the CTA
	tickets, syncs []*ir.Operation
	syncOff        int64
	// cluster, when not 0, is the size of the thread-block clusters that
	// are the groups of the resident split (clusterSize)
	cluster int

	// bulk lists the threads loops that copy a span of an input into
	// shared memory as bulk copies (bulk.go), completing on the mbarrier
	// at mbarOff
	bulk    map[*ir.Operation]*bulkCopy
	mbarOff int64
	// exchange lists a cluster's dram buffers of partial results that
	// live in distributed shared memory instead, at exchangeOff (sync.go)
	exchange    []*ir.Value
	exchangeOff []int64

	// tensor-core form (tc.go) of a matmul kernel; tcWhy says why a
	// matmul kernel keeps the scalar loops
	tc    *tcPlan
	tcWhy string
}

// loopPlan is how one threads loop runs.
type loopPlan struct {
	trip   int64 // iterations; -1 when dynamic
	unroll int   // copies of the body; 0: a loop at run time
	guard  bool  // whether some copies run past the end in some lanes
}

// flatPhase is one loop of a flat kernel.
type flatPhase struct {
	loop                *ir.Operation
	group, rows, unroll int
	trip                int64
	guard               bool // some lanes of some copies run past the end
	nested              bool // the body has loops of its own
	// join: the loop runs in the tiles of the loop before it (both of R
	// instances per tile), after it, not in a grid sweep of its own
	join bool
}

// sweeps groups the flat kernel's loops into grid-stride loops: a loop
// with the loops that join it.
func (pl *plan) sweeps() [][]*flatPhase {
	var out [][]*flatPhase
	for _, ph := range pl.phases {
		if ph.join && len(out) > 0 {
			out[len(out)-1] = append(out[len(out)-1], ph)
			continue
		}
		out = append(out, []*flatPhase{ph})
	}
	return out
}

func makePlan(ke *kernelEmitter) *plan {
	pl := &plan{
		loops: map[*ir.Operation]*loopPlan{}, promoted: map[*ir.Operation]bool{},
		allocOffset: map[*ir.Operation]int64{}, barrierAfter: map[*ir.Operation]bool{},
		distributed: map[*ir.Operation]bool{}, prefetch: map[*ir.Operation][]*ir.Operation{},
		pipeline: map[*ir.Operation]*pipePlan{},
	}
	gb := ke.grid.Body().Entry()
	if gb == nil {
		ke.fail(ke.grid.Operation, "has no body")
	}
	pl.tickets, pl.syncs = syncOps(ke)
	if len(pl.tickets)+len(pl.syncs) > 0 {
		// one instance per CTA, in the groups form
		pl.cluster = clusterSize(ke, pl.tickets, pl.syncs)
		pl.planGroups(ke, gb)
		return pl
	}
	tp, why := planTC(ke)
	if tp != nil {
		pl.tc = tp
		pl.block, pl.group, pl.rows = int(tp.threads), int(tp.threads), 1
		pl.shared = tp.sharedBytes()
		return pl
	}
	pl.tcWhy = why
	if pl.tryFlat(ke, gb) {
		return pl
	}
	pl.planGroups(ke, gb)
	return pl
}

// staticIndex evaluates an index value defined by constants and index
// arithmetic on them.
func staticIndex(v *ir.Value) (int64, bool) { return loop.EvalIndex(v, nil) }

// staticTrip is the trip count of a loop with constant bounds, or -1.
func staticTrip(f loop.ForOp) int64 { return staticRange(f.Lower(), f.Upper(), f.Step()) }

// staticRange is the trip count of a loop from lower to upper by step, or
// -1 when one of them is not a constant.
func staticRange(lower, upper, step *ir.Value) int64 {
	lb, ok1 := staticIndex(lower)
	ub, ok2 := staticIndex(upper)
	st, ok3 := staticIndex(step)
	if !ok1 || !ok2 || !ok3 || st <= 0 {
		return -1
	}
	return ceilDiv(ub-lb, st)
}

// hasNested reports whether a loop body holds ops with regions.
func hasNested(op *ir.Operation) bool {
	nested := false
	for o := op.Region(0).Entry().First(); o != nil; o = o.Next() {
		if o.NumRegions() > 0 {
			nested = true
		}
	}
	return nested
}

// containsThreads reports whether op holds a threads loop.
func containsThreads(op *ir.Operation) bool {
	found := false
	op.Walk(func(o *ir.Operation) bool {
		if o != op {
			if f, ok := loop.AsFor(o); ok && f.Dist() == "threads" {
				found = true
			}
		}
		return !found
	})
	return found
}

// boundsInKernel reports whether a loop's bounds are computed before the
// grid, so that its trip count is one for every instance.
func boundsInKernel(ke *kernelEmitter, f loop.ForOp) bool {
	for _, v := range []*ir.Value{f.Lower(), f.Upper(), f.Step()} {
		if valueBlock(v) != ke.body {
			return false
		}
	}
	return true
}

// valueBlock is the block defining v: its owner for a block argument,
// its op's block for a result.
func valueBlock(v *ir.Value) *ir.Block {
	if d := v.DefiningOp(); d != nil {
		return d.Block()
	}
	return v.OwnerBlock()
}

// memorySets collects the buffers op (and what it holds) loads and stores.
func memorySets(op *ir.Operation, loads, stores map[*ir.Value]bool) {
	op.Walk(func(o *ir.Operation) bool {
		if l, ok := loop.AsLoad(o); ok {
			loads[l.Memref()] = true
		}
		if s, ok := loop.AsStore(o); ok {
			stores[s.Memref()] = true
		}
		return true
	})
}

// tryFlat plans a flat kernel: element-wise and generic kernels whose
// loops at grid level carry nothing, that read no buffer they write and
// use no sram. It reports false, planning nothing, otherwise.
func (pl *plan) tryFlat(ke *kernelEmitter, gb *ir.Block) bool {
	kind := ke.k.Kind()
	if kind != "elementwise" && kind != "generic" && kind != "matmul" {
		return false
	}
	ok := true
	ke.grid.Operation.Walk(func(o *ir.Operation) bool {
		if o.Name() == loop.OpAlloc {
			ok = false
		}
		return ok
	})
	if !ok {
		return false
	}
	var dist []*ir.Operation
	for op := gb.First(); op != nil; op = op.Next() {
		f, isFor := loop.AsFor(op)
		if !isFor {
			continue
		}
		threads := f.Dist() == "threads"
		switch {
		case threads && len(f.Values()) == 0 && boundsInKernel(ke, f) && !containsThreads(op):
			dist = append(dist, op)
		case !threads && (kind == "generic" || kind == "matmul") && len(f.Values()) == 0 && boundsInKernel(ke, f) && !containsThreads(op):
			// thread per output: the iterations of these loops write
			// distinct elements (lower-to-loops builds them so)
			dist = append(dist, op)
		case threads || containsThreads(op):
			return false
		}
	}
	isDist := map[*ir.Operation]bool{}
	for _, d := range dist {
		isDist[d] = true
	}
	// a distributed loop may read only what a tile recomputes
	for _, d := range dist {
		d.Walk(func(o *ir.Operation) bool {
			for _, v := range o.Operands() {
				if def := v.DefiningOp(); def != nil && def.Block() == gb && !isRowValueOp(def) {
					ok = false
				}
			}
			return ok
		})
	}
	if !ok {
		return false
	}
	loads, stores := map[*ir.Value]bool{}, map[*ir.Value]bool{}
	rowLoads, rowStores := map[*ir.Value]bool{}, map[*ir.Value]bool{}
	rowWork := false
	for op := gb.First(); op != nil; op = op.Next() {
		if isDist[op] {
			memorySets(op, loads, stores)
			continue
		}
		memorySets(op, rowLoads, rowStores)
	}
	for b := range rowStores {
		rowWork = true
		if loads[b] || stores[b] || rowLoads[b] {
			return false
		}
	}
	for b := range stores {
		if loads[b] || rowLoads[b] {
			return false
		}
	}
	pl.flat = true
	pl.block = flatBlock
	pl.rowWork = rowWork
	for _, d := range dist {
		pl.distributed[d] = true
		f := loop.ForOp{Operation: d}
		ph := &flatPhase{loop: d, trip: staticTrip(f), nested: hasNested(d)}
		switch {
		case ph.trip >= 0 && ph.trip <= flatBlock/2:
			g := int(pow2Ceil(max(ph.trip, 1)))
			u := 1
			if n := staticRange(ke.grid.Lower(), ke.grid.Upper(), ke.grid.Step()); !ph.nested && (shortUnrollTiles == 0 || n >= 0 && ceilDiv(n, int64(flatBlock/g)) >= shortUnrollTiles) {
				u = min(ShortUnroll, g)
			}
			ph.group = g / u
			ph.rows = flatBlock / ph.group
			ph.unroll = u
			ph.guard = int64(g) != ph.trip
		default:
			ph.group, ph.rows = flatBlock, 1
			ph.unroll = int(targetIters)
			if ph.nested {
				ph.unroll = 1
			} else if ph.trip >= 0 {
				ph.unroll = flatUnroll(ph.trip)
			}
			ph.guard = !(ph.trip >= 0 && ph.trip%int64(ph.group*ph.unroll) == 0)
		}
		if k := len(pl.phases); k > 0 && ph.rows > 1 && pl.phases[k-1].rows == ph.rows {
			ph.join = true
		}
		pl.phases = append(pl.phases, ph)
		if ph.unroll > 1 && !ph.nested {
			pl.planPrefetch(ke, d, int64(ph.unroll), prefetchBudget, false)
		}
	}
	return true
}

// ShortUnroll is the copies per thread of a short loop of a flat kernel
// (a tile of several instances) with shortUnrollTiles tiles or more: each
// thread takes that many of an instance's iterations, their loads issued
// together. On an H100, DeepSeek's keys at decode b32 (8388608 rows of
// 128 bf16 read through a transpose, and 64 more) ran in 2.12 ms at 2
// against 3.45 ms at 1 (and 2.14 at 4), where a kernel of a few hundred
// tiles (a decode step's RoPE) ran 1 to 2 us slower at 2 than at 1:
// bench/results/gpu-h100-2026-12-07-short-unroll.txt.
var ShortUnroll = 2

// shortUnrollTiles is four rounds of the largest grid a flat kernel takes
// on a GPU of 132 SMs (gridPython): below it, the tiles do not fill the GPU
// many times over and a thread's single load is not what limits them. A
// kernel over a `?` count of instances keeps one copy; 0 unrolls every
// short loop (the simulator's tests).
var shortUnrollTiles int64 = 4 * 132 * 8 * 2048 / flatBlock

// flatUnroll is the copies per thread of a long loop of a flat kernel
// with a static trip count: targetIters, or where that leaves the last
// chunk of each instance partly empty and a count of copies from 2 to
// flatMaxUnroll divides the instance into whole chunks, that count (the
// largest): a row of 28672 bf16 is 3584 vectors, 14 per thread of 256,
// two chunks of 7 copies rather than four chunks of 4, the last half
// empty.
func flatUnroll(trip int64) int {
	per := ceilDiv(trip, flatBlock)
	if per <= targetIters {
		return int(max(per, 1))
	}
	if trip%flatBlock != 0 || per%targetIters == 0 {
		return int(targetIters)
	}
	for u := flatMaxUnroll; u >= 2; u-- {
		if per%u == 0 {
			return int(u)
		}
	}
	return int(targetIters)
}

// threadsLoops lists the threads loops in the grid body, in order.
func threadsLoops(gb *ir.Block) []*ir.Operation {
	var out []*ir.Operation
	for op := gb.First(); op != nil; op = op.Next() {
		op.Walk(func(o *ir.Operation) bool {
			if f, ok := loop.AsFor(o); ok && f.Dist() == "threads" {
				out = append(out, o)
			}
			return true
		})
	}
	return out
}

// planGroups plans the groups form.
func (pl *plan) planGroups(ke *kernelEmitter, gb *ir.Block) {
	tls := threadsLoops(gb)
	pl.bulk = findBulkCopies(ke, gb)
	maxTrip, dynamic := int64(0), false
	sched, _ := ke.k.Schedule()
	for _, op := range tls {
		if sched == "online" && !keepsChunk(op) {
			// the group is sized for the chunks; the loops over the
			// whole row after them run at run time
			continue
		}
		t := staticTrip(loop.ForOp{Operation: op})
		if t < 0 {
			dynamic = true
		}
		maxTrip = max(maxTrip, t)
	}
	var allocs []*ir.Operation
	ke.grid.Operation.Walk(func(o *ir.Operation) bool {
		if o.Name() == loop.OpAlloc {
			allocs = append(allocs, o)
		}
		return true
	})
	switch {
	case len(tls) == 0:
		pl.group = 1
	case dynamic:
		pl.group = 256
	default:
		target := targetIters
		if !storesPerIteration(tls) && sched != "online" {
			// a row reduced to per-row results (logsumexp): the
			// threads' fixed work per row (the combines, the row's
			// scalars) is most of what they do beside the loads, and
			// fewer threads per row do less of it. Not so for the chunks
			// of an online kernel, whose fixed work is once per row of
			// many chunks: there more threads keep more loads in flight
			// (on an H100, 128 threads per chunk of 4096 instead of 64
			// took a decode step's logsumexp over 32000 logits from 6.7
			// to 4.8 us of GPU time, 256000 from 8.0 to 6.0, as fast at
			// 4096 rows; 256 were slower there,
			// bench/results/gpu-h100-2026-12-06-ptx-online-threads.txt)
			target *= 2
		}
		if sched == "resident" {
			// a resident split's instances wait at the group sync while
			// they hold their split: fewer threads, each with more of
			// it, let more instances share an SM. On an H100, softmax
			// over 4096 rows of 256000 in splits of 8000 took 2.082 ms
			// with 128 threads against 2.375 with 256 (online: 2.189;
			// bench/results/gpu-h100-2026-12-06-resident.txt, call 6)
			target *= 2
		}
		pl.group = groupFor(maxTrip, target)
		if bulkThreads > 0 && len(pl.bulk) > 0 {
			pl.group = min(pl.group, bulkThreads)
		}
	}
	for {
		pl.planLoops(tls)
		// more threads per instance hold fewer registers each, down to one
		// iteration per thread
		if pl.promotion(allocs, false) || 2*pl.group > 1024 || len(tls) == 0 || dynamic || maxTrip <= int64(pl.group) {
			pl.promotion(allocs, true)
			break
		}
		pl.group *= 2
	}
	// the inputs that later threads loops read go ahead of the earlier
	// loops' combines, in the registers the sram left
	var promotedRegs int64
	for al := range pl.promoted {
		regs, _ := pl.promotable(al)
		promotedRegs += regs
	}
	left := min(prefetchBudget, regsPerThread(pl.group)-promotedRegs)
	seenCombine := false
	for _, op := range tls {
		f := loop.ForOp{Operation: op}
		lp := pl.loops[op]
		if seenCombine && lp.unroll > 0 && op.Block() == gb {
			// short rows (groups of less than a warp, several instances
			// a CTA) take the weight's loads ahead too: a row is a few
			// loads, and one issued after the combine waits its whole
			// latency (a cache hit's included) with nothing in flight
			if used := pl.planPrefetch(ke, op, int64(lp.unroll), left, pl.group >= 32 && !PrefetchShared); used > 0 {
				left -= used
				pl.narrowRows = true
			}
		}
		if len(f.Values()) > 0 && pl.group > 1 {
			seenCombine = true
		}
	}
	left -= pl.planPipelines(ke, gb, left)
	pl.rows = 1
	if pl.group < 32 {
		pl.rows = groupsBlock / pl.group
	}
	pl.block = pl.group * pl.rows
	if pl.rows > 1 {
		// one thread issues a CTA's bulk copies: they are for one instance
		// per CTA (the buffers stay in shared memory, filled by the loops)
		pl.bulk = nil
	}

	// shared memory: the group's sram buffers that stay there, then the
	// scratch of the cross-warp combine
	next := int64(0)
	for _, al := range allocs {
		if pl.promoted[al] {
			continue
		}
		m := al.Result(0).Type().(ir.MemRefType)
		size, ok := ir.ByteSizeOf(m)
		if !ok {
			ke.fail(al, "allocates %s, which has no static size", m)
		}
		off, hasOff := loop.AllocOp{Operation: al}.Offset()
		if !hasOff {
			off = alignUp(next, 16)
		}
		pl.allocOffset[al] = off
		next = max(next, off+size)
		pl.groupBytes = alignUp(max(pl.groupBytes, off+size), 16)
	}
	for _, op := range tls {
		f := loop.ForOp{Operation: op}
		if pl.group > 32 && len(f.Values()) > 0 {
			var bytes int64
			for j, r := range f.Values() {
				n := int64(lanesOf(r.Type()))
				if preReducible(r, f.Combine()[j]) {
					n = 1
				}
				bytes += n * slotBytes(elemKindOf(r.Type())) * int64(pl.group/32)
			}
			pl.redBytes = max(pl.redBytes, bytes)
		}
		if pl.writesSharedSram(op) {
			pl.barrierAfter[op] = true
		}
	}
	for op := gb.First(); op != nil; op = op.Next() {
		if s, ok := loop.AsStore(op); ok && pl.isSharedSram(s.Memref()) {
			pl.barrierAfter[op] = true
		}
	}
	pl.redOff = int64(pl.rows) * pl.groupBytes
	pl.shared = pl.redOff + pl.redBytes
	if len(pl.tickets)+len(pl.syncs) > 0 {
		if pl.rows > 1 {
			op := append(pl.syncs, pl.tickets...)[0]
			ke.fail(op, "is in a kernel whose plan puts %d instances in a CTA (groups of %d threads); tickets and group syncs need one instance per CTA", pl.rows, pl.group)
		}
		if len(pl.tickets) > 0 && pl.cluster == 0 {
			pl.syncOff = alignUp(pl.shared, 16)
			pl.shared = pl.syncOff + 16
		}
	}
	for _, v := range exchangeBuffers(ke, pl) {
		off := alignUp(pl.shared, 16)
		pl.exchange = append(pl.exchange, v)
		pl.exchangeOff = append(pl.exchangeOff, off)
		pl.shared = off + 4*int64(pl.cluster)
	}
	if len(pl.bulk) > 0 {
		pl.mbarOff = alignUp(pl.shared, 8)
		pl.shared = pl.mbarOff + 8
	}
	if pl.shared > maxSharedBytes {
		ke.fail(ke.k.Operation, "needs %d bytes of shared memory per CTA (%d instance(s) of %d bytes of sram, %d of scratch); sm_90 allows %d",
			pl.shared, pl.rows, pl.groupBytes, pl.redBytes, maxSharedBytes)
	}
}

// keepsChunk reports whether threads loop op of an online row kernel is
// one of the loops over a chunk: those that store or load its sram buffer.
func keepsChunk(op *ir.Operation) bool {
	found := false
	op.Walk(func(o *ir.Operation) bool {
		var buf *ir.Value
		if ld, ok := loop.AsLoad(o); ok {
			buf = ld.Memref()
		} else if st, ok := loop.AsStore(o); ok {
			buf = st.Memref()
		}
		if buf != nil && buf.DefiningOp() != nil && buf.DefiningOp().Name() == loop.OpAlloc {
			found = true
		}
		return !found
	})
	return found
}

// groupFor is the group size for threads loops of at most trip
// iterations: the threads that give each one about targetIters
// iterations. When a multiple of a warp divides the trip count into
// between 2 and maxUnroll iterations, every thread gets the same number
// (the one nearest targetIters): a row of 5120 bf16 (640 vectors) gets
// 160 threads of 4 vectors, where 256 threads would leave half of them
// idle in a third copy, and a row of 14336 (1792 vectors) 448 threads
// of 4. Otherwise the group is the power of two that gives each thread
// targetIters or fewer (below a warp, groups share a CTA).
func groupFor(trip, targetIters int64) int {
	umin := max(ceilDiv(trip, 1024), 2)
	best, bestDist := int64(0), int64(0)
	for u := umin; u <= maxUnroll; u++ {
		if trip%u != 0 || (trip/u)%32 != 0 {
			continue
		}
		d := u - targetIters
		if d < 0 {
			// fewer iterations per thread are less work in flight than as
			// many more
			d = -2 * d
		}
		if best == 0 || d < bestDist {
			best, bestDist = trip/u, d
		}
	}
	if best > 0 {
		return int(best)
	}
	return int(min(1024, pow2Ceil(ceilDiv(trip, targetIters))))
}

// storesPerIteration reports whether some threads loop stores to a
// buffer of the kernel (a per-element result, or sram).
func storesPerIteration(tls []*ir.Operation) bool {
	for _, op := range tls {
		stores := false
		op.Walk(func(o *ir.Operation) bool {
			if _, ok := loop.AsStore(o); ok {
				if m, isMem := o.Operand(1).Type().(ir.MemRefType); isMem && m.Space == ir.DRAM {
					stores = true
				}
			}
			return !stores
		})
		if stores {
			return true
		}
	}
	return false
}

// regsPerThread is what a thread of a CTA of block threads may hold
// (65536 registers per SM, 255 at most per thread), halved: the other
// half is the working set of the arithmetic.
func regsPerThread(block int) int64 {
	return min(255, 65536/int64(max(block, groupsBlock))) / 2
}

// planLoops decides how each threads loop runs for the current group
// size: unrolled when its copies' lanes fit the registers of a thread.
func (pl *plan) planLoops(tls []*ir.Operation) {
	avail := regsPerThread(pl.group)
	for _, op := range tls {
		f := loop.ForOp{Operation: op}
		lp := &loopPlan{trip: staticTrip(f)}
		if lp.trip >= 0 && !hasNested(op) {
			t := ceilDiv(lp.trip, int64(pl.group))
			step, _ := staticIndex(f.Step())
			if t <= maxUnroll && t*max(step, 1) <= avail {
				lp.unroll = int(t)
				lp.guard = lp.trip%int64(pl.group) != 0
			}
		}
		pl.loops[op] = lp
	}
}

// promotion decides which sram buffers live in registers: those whose
// every access is by the thread that wrote the element, in unrolled
// threads loops of one iteration space, at the lanes of the loop's own
// induction variable. It reports whether all candidates fit the register
// budget; with commit it records the choice (all candidates when they
// fit, else as many as fit, in order).
func (pl *plan) promotion(allocs []*ir.Operation, commit bool) bool {
	budget := min(regBudget, regsPerThread(pl.group))
	var total int64
	for _, al := range allocs {
		regs, ok := pl.promotable(al)
		if !ok {
			continue
		}
		if commit && total+regs <= budget {
			pl.promoted[al] = true
		}
		total += regs
	}
	return total <= budget
}

// promotable reports whether an alloc can live in registers, and how
// many per thread it takes.
func (pl *plan) promotable(al *ir.Operation) (int64, bool) {
	for _, bc := range pl.bulk {
		if bc.alloc == al {
			return 0, false // a bulk copy's destination is shared memory
		}
	}
	buf := al.Result(0)
	m, ok := buf.Type().(ir.MemRefType)
	if !ok || len(m.Shape) != 1 {
		return 0, false
	}
	// the loops of the accesses share their lower bound, step and lanes:
	// copy t of each holds the same elements, lane·step + lower + t·G·step
	// (a loop over a shorter stretch, a row's last chunk, has fewer copies)
	var space *loopPlan
	var lb, st int64
	lanes := 0
	var copies, stored int
	for _, user := range buf.Users() {
		var idx []*ir.Value
		var access ir.Type
		isStore := false
		switch {
		case user.Name() == loop.OpLoad && user.Operand(0) == buf:
			l := loop.LoadOp{Operation: user}
			idx, access = l.Indices(), l.Output().Type()
		case user.Name() == loop.OpStore && user.Operand(1) == buf && user.Operand(0) != buf:
			s := loop.StoreOp{Operation: user}
			idx, access = s.Indices(), s.Value().Type()
			isStore = true
		default:
			return 0, false
		}
		parent := user.Block().ParentOp()
		f, isFor := loop.AsFor(parent)
		if !isFor || f.Dist() != "threads" {
			return 0, false
		}
		lp := pl.loops[parent]
		if lp == nil || lp.unroll == 0 || len(idx) != 1 || idx[0] != f.Body().Entry().Args[0] {
			return 0, false
		}
		l, _ := staticIndex(f.Lower())
		s, _ := staticIndex(f.Step())
		w := lanesOf(access)
		if int64(w) != s {
			return 0, false
		}
		if space == nil {
			space, lb, st, lanes = lp, l, s, w
		} else if l != lb || s != st || w != lanes {
			return 0, false
		}
		copies = max(copies, lp.unroll)
		if isStore {
			stored = max(stored, lp.unroll)
		}
	}
	if space == nil || stored < copies {
		return 0, false // a copy read that no loop stores (not in a program that reads what it wrote)
	}
	per := int64(1)
	if m.Elem.Kind.ByteSize() == 8 {
		per = 2
	}
	return int64(copies) * int64(lanes) * per, true
}

// PrefetchShared sends the loads every instance reads alike (a norm's
// weight) ahead of the combine in rows of a warp or more too, as short
// rows always do. Off by default until measured on a GPU
// (TENSORFORGE_PTX_PREFETCH_SHARED=1 in tfc, for decode's few rows, where
// the weight's load after the combine waits an L2 hit's latency with
// nothing else in flight).
var PrefetchShared = false

// prefetchBudget bounds the registers per thread that hold loads issued
// ahead of their loop.
var prefetchBudget int64 = 64

// planPrefetch chooses the loads of an unrolled loop's body to issue
// ahead of it, copies times each, within budget registers (32-bit words
// of the loaded data), and returns the registers they take. A load
// qualifies when it reads an input of the kernel (never written by it)
// at indices known before the body runs: the induction variable and
// values defined outside the loop. With perInstance, only loads whose
// address depends on the instance qualify: what every instance reads
// alike (rmsnorm's weight) stays in the caches after the first, and is
// not worth the registers (short rows pass false: their few loads are).
func (pl *plan) planPrefetch(ke *kernelEmitter, loopOp *ir.Operation, copies, budget int64, perInstance bool) int64 {
	body := loopOp.Region(0).Entry()
	gridIV := ke.grid.Body().Entry().Args[0]
	var used int64
	for op := body.First(); op != nil; op = op.Next() {
		l, ok := loop.AsLoad(op)
		if !ok || !isKernelInput(ke, l.Memref()) {
			continue
		}
		ready, varies := true, false
		for _, v := range l.Indices() {
			if v != body.Args[0] && definedIn(loopOp, v) {
				ready = false
			}
			if v == gridIV || (valueBlock(v) != ke.body && v != body.Args[0]) {
				varies = true
			}
		}
		if perInstance && !varies {
			continue
		}
		m := l.Memref().Type().(ir.MemRefType)
		words := ceilDiv(int64(lanesOf(l.Output().Type()))*max(m.Elem.Kind.ByteSize(), 1), 4) * copies
		if !ready || used+words > budget {
			continue
		}
		used += words
		pl.prefetch[loopOp] = append(pl.prefetch[loopOp], op)
	}
	return used
}

// isKernelInput reports whether v is a buffer argument the kernel only
// reads.
func isKernelInput(ke *kernelEmitter, v *ir.Value) bool {
	for i, a := range ke.body.Args {
		if a == v {
			return i < ke.nin
		}
	}
	return false
}

// isSharedSram reports whether buf is an sram buffer kept in shared memory.
func (pl *plan) isSharedSram(buf *ir.Value) bool {
	op := buf.DefiningOp()
	return op != nil && op.Name() == loop.OpAlloc && !pl.promoted[op]
}

// writesSharedSram reports whether op stores to an sram buffer in shared
// memory.
func (pl *plan) writesSharedSram(op *ir.Operation) bool {
	found := false
	op.Walk(func(o *ir.Operation) bool {
		if s, ok := loop.AsStore(o); ok && pl.isSharedSram(s.Memref()) {
			found = true
		}
		return !found
	})
	return found
}

// preReducible reports whether a threads loop result is only reduced
// over its lanes with its own combining kind: its lanes can then be
// combined in the thread first, and one scalar across threads.
func preReducible(r *ir.Value, kind string) bool {
	if lanesOf(r.Type()) <= 1 || !r.HasUses() {
		return false
	}
	for _, u := range r.Users() {
		red, ok := loop.AsReduce(u)
		if !ok || red.Kind() != kind {
			return false
		}
	}
	return true
}

// slotBytes is the bytes of one value in the cross-warp scratch.
func slotBytes(k ir.ElemKind) int64 {
	if k.ByteSize() == 8 {
		return 8
	}
	return 4
}

func alignUp(n, a int64) int64 { return (n + a - 1) / a * a }

// splitKLine describes split-K in a matmul kernel's comment (and, for
// the int8 form, how it counts K).
func (tp *tcPlan) splitKLine() []string {
	out := []string{"Split-K: the launcher cuts K into parts where the tiles leave SMs idle (few rows); each part stores its " + tp.accName() + " sums, the last of a tile to finish adds them in order and runs the epilogue."}
	if tp.int8 {
		out = append(out, fmt.Sprintf("Int8 form: K is counted in pairs of bytes, a step of %d holds %d values of K.", tp.bk, 2*tp.bk))
	}
	return out
}

// describe says in a few lines what the plan is, for the kernel's
// comment.
func (pl *plan) describe() []string {
	if tp := pl.tc; tp != nil {
		if tp.wg {
			return tp.describeWG()
		}
		if tp.decode {
			return tp.describeDecode()
		}
		out := []string{fmt.Sprintf("Matmul on tensor cores: CTA tile %d x %d x %d, %d threads (%d warps, 2 x %d, warp tile 64 x %d), mma.sync.%s %s, %s accumulators.", tcBM, tcBN, tcBK, tp.threads, tp.threads/32, tp.warpsN, tp.wtn, tp.mmaShape(), tp.inputs(), tp.accName())}
		for d, t := range tp.transB {
			b := "[k, n], ldmatrix.trans"
			switch {
			case tp.dequant():
				b = fmt.Sprintf("[n, k] %s, copied in its own bytes and converted to %s in registers (k permuted alike in A and B within blocks of 64)", tp.bKind[d], halfName(tp.half))
			case t:
				b = "[n, k] (transpose_b), ldmatrix"
			}
			out = append(out, fmt.Sprintf("Dot product %d: B %s.", d, b))
		}
		copies := "cp.async.cg 16 bytes"
		if !tp.alignedA {
			copies = "A by 2-byte loads (rows not 16-byte aligned), B by cp.async.cg"
		}
		for d, al := range tp.alignedB {
			if !al {
				copies += fmt.Sprintf("; B %d by 2-byte loads (rows not 16-byte aligned)", d)
			}
		}
		out = append(out, fmt.Sprintf("%d stages of %d bytes of shared memory (%d in all); copies: %s.", tp.stages, tp.stageBytes, tp.sharedBytes(), copies))
		return append(out, tp.splitKLine()...)
	}
	var pre []string
	if pl.tcWhy != "" {
		pre = append(pre, "Matmul as scalar loops, not on tensor cores: "+pl.tcWhy+".")
	}
	return append(pre, pl.describeLoops()...)
}

func (pl *plan) describeLoops() []string {
	if pl.flat {
		var out []string
		out = append(out, fmt.Sprintf("Flat: CTAs of %d threads take tiles in a grid-stride loop.", pl.block))
		for i, ph := range pl.phases {
			if ph.join {
				out = append(out, fmt.Sprintf("Loop %d: in loop %d's tiles, after it.", i, i-1))
			} else if ph.rows > 1 && ph.unroll > 1 {
				out = append(out, fmt.Sprintf("Loop %d: a tile is %d instances x %d iterations, %d per thread.", i, ph.rows, ph.group*ph.unroll, ph.unroll))
			} else if ph.rows > 1 {
				out = append(out, fmt.Sprintf("Loop %d: a tile is %d instances x %d iterations, a thread each.", i, ph.rows, ph.group))
			} else {
				out = append(out, fmt.Sprintf("Loop %d: a tile is %d consecutive iterations of one instance, %d per thread.", i, ph.group*ph.unroll, ph.unroll))
			}
		}
		if pl.rowWork {
			out = append(out, "Per-instance stores: one thread per instance.")
		}
		return out
	}
	out := []string{fmt.Sprintf("Groups: %d thread(s) per instance, %d instance(s) per CTA of %d threads.", pl.group, pl.rows, pl.block)}
	switch {
	case pl.cluster > 0:
		out = append(out, fmt.Sprintf("Resident split: one instance per CTA, a group of %d a thread-block cluster (the instance is the CTA's place in the grid, the group sync a cluster barrier), %s.", pl.cluster, exchangeWhere(pl)))
	case len(pl.syncs) > 0:
		out = append(out, "Resident split: one instance per CTA, numbered by tickets; the instances of a group meet at a group sync (atomics on zeroed counters), the buffers they exchange read with ld.global.cg.")
	}
	var regs, shared []string
	for al := range pl.promoted {
		regs = append(regs, allocName(al))
	}
	for al := range pl.allocOffset {
		shared = append(shared, fmt.Sprintf("%s at %d", allocName(al), pl.allocOffset[al]))
	}
	sort.Strings(regs)
	sort.Strings(shared)
	if len(regs) > 0 {
		out = append(out, "Sram in registers: "+strings.Join(regs, ", ")+".")
	}
	if len(shared) > 0 {
		out = append(out, fmt.Sprintf("Sram in shared memory (%d bytes per instance): %s.", pl.groupBytes, strings.Join(shared, ", ")))
	}
	if pl.redBytes > 0 {
		out = append(out, fmt.Sprintf("Cross-warp combine: %d bytes of shared memory at %d.", pl.redBytes, pl.redOff))
	}
	if len(pl.exchange) > 0 {
		var slots []string
		for i, v := range pl.exchange {
			slots = append(slots, fmt.Sprintf("%%%s at %d", v.Name, pl.exchangeOff[i]))
		}
		out = append(out, fmt.Sprintf("Exchange in the cluster's shared memory, %d slots each: %s.", pl.cluster, strings.Join(slots, ", ")))
	}
	if len(pl.bulk) > 0 {
		var fills []string
		for _, bc := range pl.bulk {
			fills = append(fills, fmt.Sprintf("%s (%d bytes)", allocName(bc.alloc), bc.bytes))
		}
		sort.Strings(fills)
		out = append(out, fmt.Sprintf("Bulk copies into %s, completing on the mbarrier at %d.", strings.Join(fills, ", "), pl.mbarOff))
	}
	return out
}

// allocName names an sram buffer for comments.
func allocName(al *ir.Operation) string {
	if n := al.Result(0).Name; n != "" {
		return "%" + n
	}
	return al.Result(0).Type().String()
}
