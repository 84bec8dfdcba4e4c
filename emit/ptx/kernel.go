package ptx

import (
	"fmt"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// This file translates one loop.kernel into one `.visible .entry`: the
// parameters, the kernel's prologue (constants and index arithmetic on
// its extents), and the launch grid in one of two forms, which plan.go
// chooses:
//
// groups: every instance of the grid (a row) is run by a group of G
// threads of a CTA, R groups per CTA (G*R threads); CTAs take R rows at a
// time in a grid-stride loop (a "round"):
//
//	k = ctaid * R
//	round:  if k >= ninst goto done
//	        r = k + group            (clamped to the last row; stores off)
//	        ... the grid body: threads loops over the G lanes ...
//	        k += nctaid * R; goto round
//	done:   ret
//
// flat: the instances and the iterations of each loop that carries
// nothing are one space of tiles, taken by CTAs in a grid-stride loop;
// one thread runs one iteration (several, unrolled, in long rows).

// emitError carries a located error out of the recursion.
type emitError struct{ err error }

// kernelInfo is what the launcher needs to know about a kernel.
type kernelInfo struct {
	entry    string
	block    int
	shared   int64
	nargs    int
	nextents int
	// gridPy is the Python source of `_grid_<entry>(sm, e0, e1, ...)`,
	// the grid size for the extents given (the tiles, for a matmul on
	// tensor cores).
	gridPy string
	// mm: a matmul on tensor cores, which takes three parameters after
	// its extents (split-K: the parts, the workspace, the counters)
	mm *tcLaunch
	// perInstance: the instances meet at a loop.group_sync, and the grid
	// must give each its own CTA (sync.go)
	perInstance bool
	// parts: a kernel of several parts in one launch (parts.go); gridPy
	// then defines `_parts_<entry>(sm, e0, ...)`, which gives the grid and
	// the first CTA of each part after the first, passed after the
	// kernel's arguments
	parts int
	// wgmma: the kernel uses sm_90a's wgmma (the module's target is then
	// sm_90a)
	wgmma bool
	// narrow: the 128-column twin of a wide wgmma matmul whose rows are
	// `?` (same parameters), launched where the wide tiles would not
	// fill the SMs
	narrow *kernelInfo
	// decode: the decode twins of a matmul whose rows are `?` (same
	// parameters, decode.go), by their tile's rows (16, then 32 where
	// TCDecodeMaxRows is 32), each launched for its tile's rows or fewer
	// and more than the previous one's; gridPy then also defines
	// `_rows_<entry>(sm, e0, ...)`, the rows of a matrix of the result
	decode []*kernelInfo
}

// ixv is an index value: a register plus a constant, or a constant alone
// (no register). Keeping the constant apart folds it into address
// offsets: the lanes of an unrolled loop differ by constants only.
type ixv struct {
	reg opnd
	has bool
	off int64
}

func constIx(c int64) ixv { return ixv{off: c} }

// kernelEmitter holds the state of the translation of one kernel.
type kernelEmitter struct {
	// atEnd emits what goes at the end of the instance, after every op of
	// the grid's body (a group sync's departure)
	atEnd []func()
	// bulkIssued are the copy loops issued with the copy loop before them
	// (emitBulkCopy)
	bulkIssued map[*ir.Operation]bool
	k          loop.KernelOp
	entry      string
	a          *asm
	plan       *plan
	// gridName names the kernel's _grid_ function (entry, or the part's
	// name within a kernel of several parts)
	gridName string
	// cta, when set, is the part's own range of the launch's CTAs (a
	// kernel of several parts in one launch, parts.go): %ctaid.x and
	// %nctaid.x as the part sees them
	cta *ctaRange

	body *ir.Block // the kernel's block
	grid loop.ParallelOp
	nin  int

	vals  map[*ir.Value][]opnd // scalar and vector values: one operand per lane
	ixs   map[*ir.Value]ixv    // index values
	mults map[*ir.Value]int64  // a known divisor of index values (0: any)
	bufs  map[*ir.Value]*buffer

	// thread coordinates (b64)
	tid, lane, grp opnd
	laneZero       *opnd // lane == 0 within the group (groups mode, G > 1)
	warpOff4       opnd  // (tid / 32) * 4 and * 8: slots of the cross-warp step
	warpOff8       opnd
	lane32Zero     *opnd
	smemCTA        opnd // shared address of the CTA's dynamic shared memory
	parity         opnd // the phase parity of the next bulk copy (bulk.go)
	// exchangeReady: this round waited for the cluster's CTAs to start
	// before its first store into their shared memory (sync.go)
	exchangeReady bool
	smemGroup     opnd // shared address of this group's sram

	// predicates of the context: loads (an iteration past the end of its
	// loop), stores (also: not the group's first lane at row scope, or a
	// row past the end)
	ldPred, stPred *opnd
	active         *opnd

	// the unrolled threads loop being emitted and the copy of its body
	curLoop *ir.Operation
	copyIdx int

	preReduced map[*ir.Operation][]opnd
	prefetched map[prefetchKey][]opnd    // loads issued ahead of their loop body
	piped      map[prefetchKey]*wordLoad // loads issued an iteration ahead (pipeline.go)
	halves     map[string]halfSrc        // 16-bit lanes unpacked from a 32-bit word
	hoisted    map[*ir.Operation]addr
	precision  map[*ir.Value]int  // memo of precisionNeeded
	nonNeg     map[*ir.Value]bool // memo of nonNegative

	// addresses computed in the scopes being emitted, to reuse them
	addrCache map[string]opnd
	scopes    [][]string
}

// halfSrc is where a 16-bit lane came from: the low or high half of a
// 32-bit word (a load's word, or a pair rounded by cvt.rn.bf16x2.f32).
type halfSrc struct {
	word opnd
	high bool
}

// prefetchKey names a load issued ahead of its loop: the load and the
// unrolled copy of the body it belongs to.
type prefetchKey struct {
	op   *ir.Operation
	copy int
}

// emitKernel translates k into the text of a PTX entry called entry.
func emitKernel(k loop.KernelOp, entry string) (info *kernelInfo, text string, err error) {
	defer catchEmit(k, &err)
	if len(loop.Parts(k)) > 1 {
		return emitPartsKernel(k, entry)
	}
	ke := newKernelEmitter(k, entry, newAsm("$L_"+entry))
	ke.plan = makePlan(ke)
	ke.emit()
	info, text = ke.info(), ke.text()
	if tp := ke.plan.tc; tp != nil && tp.wideDyn {
		var t string
		info.narrow, t = emitTwin(k, entry+wgTwinSuffix, func(on bool) { wgNarrow = on })
		text += "\n" + t
	}
	if tp := ke.plan.tc; tp != nil && tp.decodeDyn {
		for _, bm := range decodeTwinRows() {
			in, t := emitTwin(k, entry+decodeSuffix(bm), func(on bool) {
				tcDecodeTwin = 0
				if on {
					tcDecodeTwin = bm
				}
			})
			info.decode = append(info.decode, in)
			text += "\n" + t
		}
	}
	return info, text, nil
}

// emitTwin translates k again into entry name with its form set (set
// true, then false) while it is planned and emitted: a twin of a matmul
// whose rows are `?`, which the launcher takes for some rows (wgNarrow:
// 128 columns; tcDecodeTwin: the decode form).
func emitTwin(k loop.KernelOp, name string, set func(bool)) (*kernelInfo, string) {
	set(true)
	defer set(false)
	twin := newKernelEmitter(k, name, newAsm("$L_"+name))
	twin.plan = makePlan(twin)
	twin.emit()
	return twin.info(), twin.text()
}

// catchEmit, deferred, turns the panic that stops the translation of k
// (ke.fail) into its error in *err.
func catchEmit(k loop.KernelOp, err *error) {
	if r := recover(); r != nil {
		if e, ok := r.(emitError); ok {
			*err = e.err
			return
		}
		// A malformed module that slipped past the verifier must not
		// crash the driver.
		*err = ir.OpError(k.Operation, "internal error in the PTX emitter: %v", r)
	}
}

// newKernelEmitter starts the translation of k (one part: one grid) into
// entry, with asm a.
func newKernelEmitter(k loop.KernelOp, entry string, a *asm) *kernelEmitter {
	ke := &kernelEmitter{
		k: k, entry: entry, gridName: entry, a: a,
		vals: map[*ir.Value][]opnd{}, ixs: map[*ir.Value]ixv{}, mults: map[*ir.Value]int64{},
		bufs: map[*ir.Value]*buffer{}, preReduced: map[*ir.Operation][]opnd{}, hoisted: map[*ir.Operation]addr{},
		prefetched: map[prefetchKey][]opnd{}, piped: map[prefetchKey]*wordLoad{}, halves: map[string]halfSrc{},
		addrCache: map[string]opnd{},
	}
	ke.body = k.Body().Entry()
	if ke.body == nil {
		ke.fail(k.Operation, "has no body")
	}
	ke.nin = int(k.NumInputs())
	found := 0
	for op := ke.body.First(); op != nil; op = op.Next() {
		if p, ok := loop.AsParallel(op); ok {
			ke.grid = p
			found++
		}
	}
	if found != 1 {
		ke.fail(k.Operation, "expects exactly one 'loop.parallel' (the launch grid), but found %d", found)
	}
	return ke
}

// fail stops the translation with an error at op.
func (ke *kernelEmitter) fail(op *ir.Operation, format string, args ...any) {
	panic(emitError{ir.OpError(op, format, args...)})
}

// paramName is the name of kernel parameter i, as nvcc spells them.
func (ke *kernelEmitter) paramName(i int) string {
	return fmt.Sprintf("%s_param_%d", ke.entry, i)
}

// text assembles the entry: signature, tuning directive, register
// declarations and body.
func (ke *kernelEmitter) text() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "// %s: %s kernel", ke.k.SymName(), ke.k.Kind())
	if s, ok := ke.k.Schedule(); ok {
		fmt.Fprintf(&sb, ", %s", s)
	}
	if n, ok := ke.k.RowLen(); ok {
		fmt.Fprintf(&sb, ", rows of %d", n)
	}
	sb.WriteString(".\n")
	for _, line := range ke.plan.describe() {
		sb.WriteString("// " + line + "\n")
	}
	writeEntry(&sb, ke.entry, ke.body.Args, ke.extraParams(), ke.plan.block, ke.plan.cluster, ke.a)
	return sb.String()
}

// writeEntry writes entry's signature (a .u64 parameter per argument,
// then one per line of extra, which says what it is), its CTA size, its
// cluster size (when not 0), and the registers and body of a.
func writeEntry(sb *strings.Builder, entry string, args []*ir.Value, extra []string, block, cluster int, a *asm) {
	fmt.Fprintf(sb, ".visible .entry %s(\n", entry)
	n := len(args) + len(extra)
	for i := range n {
		sep := ","
		if i == n-1 {
			sep = ""
		}
		what := ""
		if i < len(args) {
			what = fmt.Sprintf("%%%s: %s", argName(args[i], i), args[i].Type())
		} else {
			what = extra[i-len(args)]
		}
		fmt.Fprintf(sb, "\t.param .u64 %s_param_%d%s\t// %s\n", entry, i, sep, what)
	}
	sb.WriteString(")\n")
	if cluster > 0 {
		fmt.Fprintf(sb, ".reqnctapercluster %d, 1, 1\n", cluster)
	}
	fmt.Fprintf(sb, ".reqntid %d, 1, 1\n{\n", block)
	for _, d := range a.decls() {
		sb.WriteString(d + "\n")
	}
	sb.WriteString("\n")
	for _, l := range a.lines {
		sb.WriteString(l + "\n")
	}
	sb.WriteString("}\n")
}

// argName is the name of a block argument for comments.
func argName(v *ir.Value, i int) string {
	if v.Name != "" {
		return v.Name
	}
	return fmt.Sprintf("arg%d", i)
}

// info describes the kernel for the launcher.
func (ke *kernelEmitter) info() *kernelInfo {
	nbuf := int(ke.k.NumInputs() + ke.k.NumOutputs())
	return &kernelInfo{
		entry: ke.entry, block: ke.plan.block, shared: ke.plan.shared,
		nargs: len(ke.body.Args), nextents: len(ke.body.Args) - nbuf,
		gridPy: ke.gridPython(), mm: ke.tcLaunch(), perInstance: len(ke.plan.syncs) > 0,
		wgmma: ke.plan.tc != nil && ke.plan.tc.wg,
	}
}

// ---------------------------------------------------------------------------
// Emission

func (ke *kernelEmitter) emit() {
	a := ke.a
	nbuf := int(ke.k.NumInputs() + ke.k.NumOutputs())
	a.comment("parameters: buffers (global addresses), then extents")
	for i, arg := range ke.body.Args {
		p := a.reg(rB64)
		a.raw(nil, false, "ld.param.u64", p.s, "["+ke.paramName(i)+"]")
		if i < nbuf {
			g := a.reg(rB64)
			a.ins("cvta.to.global.u64", g, p)
			ke.bufs[arg] = &buffer{base: g, input: i < ke.nin, cached: !ke.plan.flat}
			continue
		}
		ke.ixs[arg] = ixv{reg: p, has: true}
		ke.mults[arg] = 1
	}
	var ext []ixv
	for _, arg := range ke.body.Args[nbuf:] {
		ext = append(ext, ke.ixs[arg])
	}
	for _, arg := range ke.body.Args[:nbuf] {
		m, ok := arg.Type().(ir.MemRefType)
		if !ok {
			ke.fail(ke.k.Operation, "has a buffer argument of type %s", arg.Type())
		}
		n := 0
		for _, d := range m.Shape {
			if d == ir.Dynamic {
				n++
			}
		}
		if n > len(ext) {
			ke.fail(ke.k.Operation, "has fewer extent arguments than dynamic dimensions")
		}
		ke.bindDRAM(arg, ext[:n])
		ext = ext[n:]
	}
	ke.markCoherentLoads()
	ke.threadCoordinates()
	for op := ke.body.First(); op != nil && op != ke.grid.Operation; op = op.Next() {
		ke.emitOp(op)
	}
	switch {
	case ke.plan.tc != nil:
		ke.emitTC()
	case ke.plan.flat:
		ke.emitFlat()
	default:
		ke.emitGroups()
	}
	a.ins("ret")
}

// threadCoordinates reads %tid.x and derives the lane and group of the
// thread, and the shared addresses it uses.
func (ke *kernelEmitter) threadCoordinates() {
	a := ke.a
	pl := ke.plan
	t32 := a.reg(rB32)
	a.raw(nil, false, "mov.u32", t32.s, "%tid.x")
	ke.tid = a.reg(rB64)
	a.ins("cvt.u64.u32", ke.tid, t32)
	g := pl.group
	if pl.flat {
		g = pl.block
	}
	switch {
	case g >= pl.block:
		ke.lane = ke.tid
		ke.grp = intImm(0, rB64)
	default:
		ke.lane = a.reg(rB64)
		a.ins("and.b64", ke.lane, ke.tid, intImm(int64(g-1), rB64))
		ke.grp = a.reg(rB64)
		a.ins("shr.u64", ke.grp, ke.tid, intImm(int64(log2(g)), rB64))
	}
	if !pl.flat && pl.group > 1 {
		p := a.reg(rPred)
		a.ins("setp.eq.s64", p, ke.lane, intImm(0, rB64))
		ke.laneZero = &p
	}
	if pl.shared > 0 {
		ke.smemCTA = a.reg(rB64)
		a.raw(nil, false, "mov.u64", ke.smemCTA.s, SharedName)
		ke.smemGroup = ke.smemCTA
		if pl.rows > 1 && pl.groupBytes > 0 {
			ke.smemGroup = a.reg(rB64)
			a.ins("mad.lo.s64", ke.smemGroup, ke.grp, intImm(pl.groupBytes, rB64), ke.smemCTA)
		}
	}
	if !pl.flat && pl.group > 32 {
		w := a.reg(rB64)
		a.ins("shr.u64", w, ke.tid, intImm(5, rB64))
		ke.warpOff4 = a.reg(rB64)
		a.ins("shl.b64", ke.warpOff4, w, intImm(2, rB64))
		ke.warpOff8 = a.reg(rB64)
		a.ins("shl.b64", ke.warpOff8, w, intImm(3, rB64))
		l := a.reg(rB64)
		a.ins("and.b64", l, ke.tid, intImm(31, rB64))
		p := a.reg(rPred)
		a.ins("setp.eq.s64", p, l, intImm(0, rB64))
		ke.lane32Zero = &p
	}
}

// specialReg reads a special register (%ctaid.x, %nctaid.x) as a b64.
func (ke *kernelEmitter) specialReg(name string) opnd {
	if ke.cta != nil {
		switch name {
		case "%ctaid.x":
			return ke.cta.ctaid
		case "%nctaid.x":
			return ke.cta.nctaid
		}
	}
	r := ke.a.reg(rB32)
	ke.a.raw(nil, false, "mov.u32", r.s, name)
	d := ke.a.reg(rB64)
	ke.a.ins("cvt.u64.u32", d, r)
	return d
}

// gridBounds returns the lower bound, step and instance count of the grid.
func (ke *kernelEmitter) gridBounds() (lb, step, n ixv) {
	g := ke.grid
	lb, ub, step := ke.ix(g.Lower()), ke.ix(g.Upper()), ke.ix(g.Step())
	return lb, step, ke.tripCount(lb, ub, step)
}

// tripCount is max(0, ceil((ub - lb) / step)), folded when constant.
func (ke *kernelEmitter) tripCount(lb, ub, step ixv) ixv {
	if !lb.has && !ub.has && !step.has {
		if step.off <= 0 {
			return constIx(0)
		}
		return constIx(max(0, ceilDiv(ub.off-lb.off, step.off)))
	}
	d := ke.ixSub(ub, lb)
	if !step.has && step.off == 1 {
		return ke.ixMax0(d)
	}
	d = ke.ixAdd(d, ke.ixSub(step, constIx(1)))
	return ke.ixMax0(ke.ixDiv(d, step))
}

// bindGridIV binds the grid's induction variable, for instance number k,
// to lb + k * step.
func (ke *kernelEmitter) bindGridIV(k ixv, lb, step ixv) {
	iv := ke.grid.Body().Entry().Args[0]
	ke.ixs[iv] = ke.ixAdd(ke.ixMul(k, step), lb)
	ke.mults[iv] = gcd(ke.multOf(ke.grid.Lower()), ke.multOf(ke.grid.Step()))
}

// emitGroups emits the grid in groups form: rounds of R instances per CTA.
func (ke *kernelEmitter) emitGroups() {
	a := ke.a
	pl := ke.plan
	lb, step, n := ke.gridBounds()
	nreg := ke.ixReg(n)
	ctaid := ke.specialReg("%ctaid.x")
	nctaid := ke.specialReg("%nctaid.x")
	k := a.reg(rB64)
	stride := a.reg(rB64)
	if pl.rows > 1 {
		a.ins("mul.lo.s64", k, ctaid, intImm(int64(pl.rows), rB64))
		a.ins("mul.lo.s64", stride, nctaid, intImm(int64(pl.rows), rB64))
	} else {
		a.ins("mov.b64", k, ctaid)
		a.ins("mov.b64", stride, nctaid)
	}
	var last opnd
	if pl.rows > 1 {
		last = ke.b64("add.s64", nreg, intImm(-1, rB64))
	}
	ke.initBulk()
	ke.bindExchange()
	round, done := a.newLabel(), a.newLabel()
	a.comment("rounds: %d instance(s) of the grid per CTA, %d thread(s) each", pl.rows, pl.group)
	a.label(round)
	p := a.reg(rPred)
	a.ins("setp.ge.s64", p, k, nreg)
	a.bra(&p, false, done)
	ke.pushScope()
	inst := k
	ke.active = nil
	if pl.rows > 1 {
		kk := a.reg(rB64)
		a.ins("add.s64", kk, k, ke.grp)
		act := a.reg(rPred)
		a.ins("setp.lt.s64", act, kk, nreg)
		ke.active = &act
		inst = a.reg(rB64)
		a.ins("min.s64", inst, kk, last)
	}
	ke.bindGridIV(ixv{reg: inst, has: true}, lb, step)
	ke.ldPred = nil
	ke.stPred = ke.andPred(ke.laneZero, ke.active)
	if len(pl.exchange) > 0 {
		a.comment("the cluster's CTAs arrive; the first store into their shared memory waits for all")
		a.raw(nil, false, "barrier.cluster.arrive.relaxed.aligned")
		ke.exchangeReady = false
	}
	gb := ke.grid.Body().Entry()
	for op := gb.First(); op != nil; op = op.Next() {
		if op.Name() == loop.OpYield {
			break
		}
		ke.emitOp(op)
	}
	for _, f := range ke.atEnd {
		f()
	}
	ke.atEnd = nil
	if pl.shared > 0 && (pl.groupBytes > 0 || len(pl.tickets) > 0) {
		a.comment("the next round overwrites this round's sram (and ticket)")
		a.ins("bar.sync", intImm(0, rB32))
	}
	ke.popScope()
	a.ins("add.s64", k, k, stride)
	a.bra(nil, false, round)
	a.label(done)
}

// emitFlat emits the grid in flat form: one grid-stride loop over tiles
// per sweep (a loop that carries nothing, with the loops after it that
// join its tiles), then one over the instances for the rest of the grid
// body (per-row stores), when there is any.
func (ke *kernelEmitter) emitFlat() {
	a := ke.a
	pl := ke.plan
	lb, step, n := ke.gridBounds()
	ctaid := ke.specialReg("%ctaid.x")
	nctaid := ke.specialReg("%nctaid.x")
	gb := ke.grid.Body().Entry()
	for _, sweep := range pl.sweeps() {
		ke.emitFlatSweep(sweep, lb, step, n, ctaid, nctaid, gb)
	}
	if !pl.rowWork {
		return
	}
	// the rest of the grid body, one thread per instance
	a.comment("per-instance work: one thread per instance")
	k := a.reg(rB64)
	a.ins("mad.lo.s64", k, ctaid, intImm(int64(pl.block), rB64), ke.tid)
	stride := a.reg(rB64)
	a.ins("mul.lo.s64", stride, nctaid, intImm(int64(pl.block), rB64))
	nreg := ke.ixReg(n)
	loopL, done := a.newLabel(), a.newLabel()
	a.label(loopL)
	p := a.reg(rPred)
	a.ins("setp.ge.s64", p, k, nreg)
	a.bra(&p, false, done)
	ke.pushScope()
	ke.bindGridIV(ixv{reg: k, has: true}, lb, step)
	ke.ldPred, ke.stPred = nil, nil
	for op := gb.First(); op != nil; op = op.Next() {
		if op.Name() == loop.OpYield {
			break
		}
		if pl.distributed[op] {
			continue
		}
		ke.emitOp(op)
	}
	ke.popScope()
	a.ins("add.s64", k, k, stride)
	a.bra(nil, false, loopL)
	a.label(done)
}

// emitFlatSweep emits the tiles of one loop that carries nothing: a tile
// is R instances times G iterations, or one instance times U*G
// consecutive iterations (the chunk) of a long loop. The loops that join
// it (sweep[1:], of R instances too) run in the same tiles, each after
// the one before, so that an instance's loops read its data while it is
// in cache (RoPE's two halves of a row read both halves each) rather
// than in a sweep of the whole grid each.
func (ke *kernelEmitter) emitFlatSweep(sweep []*flatPhase, lb, step, n ixv, ctaid, nctaid opnd, gb *ir.Block) {
	a := ke.a
	ph := sweep[0]
	// the loops' trip counts, computed once, before the tiles
	nds := make([]ixv, len(sweep))
	for i, p := range sweep {
		f := loop.ForOp{Operation: p.loop}
		nds[i] = ke.tripCount(ke.ix(f.Lower()), ke.ix(f.Upper()), ke.ix(f.Step()))
	}
	nd := nds[0]
	chunk := int64(ph.group * ph.unroll)
	var nchunks ixv
	if ph.rows > 1 {
		nchunks = constIx(1)
	} else {
		nchunks = ke.ixDiv(ke.ixAdd(nd, constIx(chunk-1)), constIx(chunk))
	}
	ntiles := ke.ixMul(ke.ixDiv(ke.ixAdd(n, constIx(int64(ph.rows-1))), constIx(int64(ph.rows))), nchunks)
	ntReg := ke.ixReg(ntiles)
	a.comment("tiles of %s: %d instance(s) x %d iteration(s) of %d thread(s)", ph.loop.Name(), ph.rows, ph.group*ph.unroll, ph.group)
	if len(sweep) > 1 {
		a.comment("and in the same tiles, after it: %d loop(s) more", len(sweep)-1)
	}
	q := a.reg(rB64)
	a.ins("mov.b64", q, ctaid)
	loopL, next, done := a.newLabel(), a.newLabel(), a.newLabel()
	a.label(loopL)
	p := a.reg(rPred)
	a.ins("setp.ge.s64", p, q, ntReg)
	a.bra(&p, false, done)
	ke.pushScope()
	var inst, jbase ixv
	lane := ke.tid
	if ph.rows > 1 {
		lane = a.reg(rB64)
		a.ins("and.b64", lane, ke.tid, intImm(int64(ph.group-1), rB64))
		grp := a.reg(rB64)
		a.ins("shr.u64", grp, ke.tid, intImm(int64(log2(ph.group)), rB64))
		kk := a.reg(rB64)
		a.ins("mad.lo.s64", kk, q, intImm(int64(ph.rows), rB64), grp)
		pk := a.reg(rPred)
		a.ins("setp.ge.s64", pk, kk, ke.ixReg(n))
		a.bra(&pk, false, next)
		inst = ixv{reg: kk, has: true}
		jbase = ixv{reg: lane, has: true}
	} else if !nchunks.has && nchunks.off == 1 {
		inst = ixv{reg: q, has: true}
		jbase = ixv{reg: lane, has: true}
	} else if !n.has && n.off == 1 {
		// one instance (a rank-1 element-wise kernel): the tile is the
		// chunk, with no division
		j := a.reg(rB64)
		a.ins("mad.lo.s64", j, q, intImm(chunk, rB64), lane)
		inst = constIx(0)
		jbase = ixv{reg: j, has: true}
	} else {
		nc := ke.ixReg(nchunks)
		kq := a.reg(rB64)
		a.ins("div.u64", kq, q, nc)
		c := a.reg(rB64)
		a.ins("mul.lo.s64", c, kq, nc)
		a.ins("sub.s64", c, q, c)
		j := a.reg(rB64)
		a.ins("mad.lo.s64", j, c, intImm(chunk, rB64), lane)
		inst = ixv{reg: kq, has: true}
		jbase = ixv{reg: j, has: true}
	}
	ke.bindGridIV(inst, lb, step)
	ke.ldPred, ke.stPred = nil, nil
	// the grid body's values these loops read
	last := sweep[len(sweep)-1].loop
	for op := gb.First(); op != nil && op != last; op = op.Next() {
		if isRowValueOp(op) {
			ke.emitOp(op)
		}
	}
	for i, ph := range sweep {
		ke.emitFlatTile(ph, nds[i], jbase)
	}
	a.label(next)
	ke.popScope()
	a.ins("add.s64", q, q, nctaid)
	a.bra(nil, false, loopL)
	a.label(done)
}

// emitFlatTile emits one loop's part of a tile: its U copies of G
// iterations from jbase, of the nd the loop has.
func (ke *kernelEmitter) emitFlatTile(ph *flatPhase, nd, jbase ixv) {
	a := ke.a
	f := loop.ForOp{Operation: ph.loop}
	flb, fstep := ke.ix(f.Lower()), ke.ix(f.Step())
	body := f.Body().Entry()
	iv := body.Args[0]
	ke.hoistAddresses(ph.loop)
	ndReg := ke.ixReg(nd)
	guards := make([]*opnd, ph.unroll)
	its := make([]ixv, ph.unroll)
	for u := range its {
		j := jbase
		j.off += int64(u * ph.group)
		if ph.guard {
			g := a.reg(rPred)
			a.ins("setp.lt.s64", g, ke.ixReg(j), ndReg)
			guards[u] = &g
		}
		its[u] = ke.ixAdd(ke.ixMul(j, fstep), flb)
	}
	ivMult := gcd(ke.multOf(f.Lower()), ke.multOf(f.Step()))
	if loads := ke.plan.prefetch[ph.loop]; len(loads) > 0 {
		a.comment("the loads of the %d copies first, so that they are in flight together", ph.unroll)
		for u := range its {
			ke.ixs[iv], ke.mults[iv] = its[u], ivMult
			ke.prefetchLoads(loads, u, guards[u])
		}
	}
	for u := 0; u < ph.unroll; u++ {
		guard := guards[u]
		ke.ixs[iv], ke.mults[iv] = its[u], ivMult
		ke.copyIdx = u
		if ph.nested && guard != nil {
			// a body with loops of its own is skipped, not predicated
			skip := a.newLabel()
			a.bra(guard, true, skip)
			ke.ldPred, ke.stPred = nil, nil
			ke.emitBody(body, nil)
			a.label(skip)
			continue
		}
		ke.ldPred, ke.stPred = guard, guard
		ke.emitBody(body, nil)
	}
	ke.ldPred, ke.stPred = nil, nil
}

// isRowValueOp reports whether a grid-body op computes a value without
// effects (an index, a constant, a load, arithmetic): what a tile
// recomputes for its instance.
func isRowValueOp(op *ir.Operation) bool {
	switch op.Name() {
	case loop.OpStore, loop.OpFor, loop.OpAlloc, loop.OpYield:
		return false
	}
	return op.NumRegions() == 0
}

// emitBody emits the ops of a loop body up to its loop.yield and returns
// the yielded values (lanes); carried binds the body's arguments after
// the induction variable.
func (ke *kernelEmitter) emitBody(b *ir.Block, carried [][]opnd) [][]opnd {
	for i, v := range b.Args[1:] {
		ke.vals[v] = carried[i]
	}
	for op := b.First(); op != nil; op = op.Next() {
		if op.Name() == loop.OpYield {
			out := make([][]opnd, op.NumOperands())
			for i, v := range op.Operands() {
				out[i] = ke.get(op, v)
			}
			return out
		}
		ke.emitOp(op)
	}
	ke.fail(b.ParentOp(), "expects its body to end in 'loop.yield'")
	return nil
}

// ---------------------------------------------------------------------------
// Scopes of reusable address computations

func (ke *kernelEmitter) pushScope() { ke.scopes = append(ke.scopes, nil) }

func (ke *kernelEmitter) popScope() {
	top := ke.scopes[len(ke.scopes)-1]
	for _, key := range top {
		delete(ke.addrCache, key)
	}
	ke.scopes = ke.scopes[:len(ke.scopes)-1]
}

// cached returns the register computed for key in an enclosing scope, or
// computes it with f and records it in the innermost scope.
func (ke *kernelEmitter) cached(key string, f func() opnd) opnd {
	if r, ok := ke.addrCache[key]; ok {
		return r
	}
	r := f()
	ke.addrCache[key] = r
	if n := len(ke.scopes); n > 0 {
		ke.scopes[n-1] = append(ke.scopes[n-1], key)
	}
	return r
}

// ---------------------------------------------------------------------------
// Predicates

// andPred is the conjunction of two optional predicates.
func (ke *kernelEmitter) andPred(x, y *opnd) *opnd {
	switch {
	case x == nil:
		return y
	case y == nil:
		return x
	}
	p := ke.a.reg(rPred)
	ke.a.ins("and.pred", p, *x, *y)
	return &p
}

// ---------------------------------------------------------------------------
// Index arithmetic on ixv

// ix returns index value v.
func (ke *kernelEmitter) ix(v *ir.Value) ixv {
	x, ok := ke.ixs[v]
	if !ok {
		if op := v.DefiningOp(); op != nil {
			ke.fail(op, "defines an index the PTX emitter has not computed")
		}
		ke.fail(ke.k.Operation, "reads an index the PTX emitter has not computed")
	}
	return x
}

// ixReg materialises x as an operand: an immediate, its register, or
// their sum.
func (ke *kernelEmitter) ixReg(x ixv) opnd {
	switch {
	case !x.has:
		return intImm(x.off, rB64)
	case x.off == 0:
		return x.reg
	}
	key := fmt.Sprintf("add %s %d", x.reg.s, x.off)
	return ke.cached(key, func() opnd {
		r := ke.a.reg(rB64)
		ke.a.ins("add.s64", r, x.reg, intImm(x.off, rB64))
		return r
	})
}

func (ke *kernelEmitter) ixAdd(x, y ixv) ixv {
	switch {
	case !y.has:
		return ixv{reg: x.reg, has: x.has, off: x.off + y.off}
	case !x.has:
		return ixv{reg: y.reg, has: true, off: x.off + y.off}
	}
	r := ke.a.reg(rB64)
	ke.a.ins("add.s64", r, x.reg, y.reg)
	return ixv{reg: r, has: true, off: x.off + y.off}
}

func (ke *kernelEmitter) ixSub(x, y ixv) ixv {
	if !y.has {
		return ixv{reg: x.reg, has: x.has, off: x.off - y.off}
	}
	r := ke.a.reg(rB64)
	ke.a.ins("sub.s64", r, ke.ixReg(ixv{reg: x.reg, has: x.has}), y.reg)
	return ixv{reg: r, has: true, off: x.off - y.off}
}

func (ke *kernelEmitter) ixMul(x, y ixv) ixv {
	switch {
	case !x.has && !y.has:
		return constIx(x.off * y.off)
	case !y.has:
		return ke.ixScale(x, y.off)
	case !x.has:
		return ke.ixScale(y, x.off)
	}
	r := ke.a.reg(rB64)
	ke.a.ins("mul.lo.s64", r, ke.ixReg(x), ke.ixReg(y))
	return ixv{reg: r, has: true}
}

// ixScale multiplies by a constant, keeping the constant part apart.
func (ke *kernelEmitter) ixScale(x ixv, c int64) ixv {
	switch {
	case c == 0 || !x.has:
		return constIx(x.off * c)
	case c == 1:
		return x
	}
	r := ke.cached(fmt.Sprintf("scale %s %d", x.reg.s, c), func() opnd {
		r := ke.a.reg(rB64)
		if c > 0 && c&(c-1) == 0 {
			ke.a.ins("shl.b64", r, x.reg, intImm(int64(log2(int(c))), rB32))
		} else {
			ke.a.ins("mul.lo.s64", r, x.reg, intImm(c, rB64))
		}
		return r
	})
	return ixv{reg: r, has: true, off: x.off * c}
}

// ixDiv is x / y rounded toward zero.
func (ke *kernelEmitter) ixDiv(x, y ixv) ixv {
	if !x.has && !y.has {
		if y.off == 0 {
			ke.fail(ke.k.Operation, "divides an index by zero")
		}
		return constIx(x.off / y.off)
	}
	if !y.has && y.off == 1 {
		return x
	}
	r := ke.a.reg(rB64)
	ke.a.ins("div.s64", r, ke.ixReg(x), ke.ixReg(y))
	return ixv{reg: r, has: true}
}

// ixMax0 is max(x, 0).
func (ke *kernelEmitter) ixMax0(x ixv) ixv {
	if !x.has {
		return constIx(max(x.off, 0))
	}
	r := ke.a.reg(rB64)
	ke.a.ins("max.s64", r, ke.ixReg(x), intImm(0, rB64))
	return ixv{reg: r, has: true}
}

// multOf is a known divisor of index value v (0 when v is the constant 0).
func (ke *kernelEmitter) multOf(v *ir.Value) int64 {
	if m, ok := ke.mults[v]; ok {
		return m
	}
	return 1
}

// clampIndex emits `loop.clamp_index %t, %n`: the integer widened to 64
// bits, then max(0, min(t, n - 1)).
func (ke *kernelEmitter) clampIndex(op *ir.Operation) {
	k := op.Operand(0).Type().(ir.ElemType).Kind
	x := ke.intTo64(ke.reg(ke.get(op, op.Operand(0))[0]), k)
	n := ke.ix(op.Operand(1))
	n.off--
	m := ke.b64("min.s64", x, ke.ixReg(n))
	ke.ixs[op.Result(0)] = ixv{reg: ke.b64("max.s64", m, intImm(0, rB64)), has: true}
	ke.mults[op.Result(0)] = 1
}

// indexArith emits `loop.addi` and its kin, folding constants.
func (ke *kernelEmitter) indexArith(op *ir.Operation) {
	x, y := ke.ix(op.Operand(0)), ke.ix(op.Operand(1))
	mx, my := ke.multOf(op.Operand(0)), ke.multOf(op.Operand(1))
	var r ixv
	var m int64 = 1
	constant := !x.has && !y.has
	switch op.Name() {
	case loop.OpAddi:
		r, m = ke.ixAdd(x, y), gcd(mx, my)
	case loop.OpSubi:
		r, m = ke.ixSub(x, y), gcd(mx, my)
	case loop.OpMuli:
		r, m = ke.ixMul(x, y), capMult(mx*my)
	case loop.OpDivi, loop.OpRemi:
		if constant {
			if y.off == 0 {
				ke.fail(op, "divides an index by zero")
			}
			if op.Name() == loop.OpDivi {
				r = constIx(x.off / y.off)
			} else {
				r = constIx(x.off % y.off)
			}
			break
		}
		ins := "div.s64"
		if op.Name() == loop.OpRemi {
			ins = "rem.s64"
			m = gcd(mx, my)
		}
		d := ke.a.reg(rB64)
		ke.a.ins(ins, d, ke.ixReg(x), ke.ixReg(y))
		r = ixv{reg: d, has: true}
	case loop.OpMini:
		if constant {
			r = constIx(min(x.off, y.off))
			break
		}
		d := ke.a.reg(rB64)
		ke.a.ins("min.s64", d, ke.ixReg(x), ke.ixReg(y))
		r, m = ixv{reg: d, has: true}, gcd(mx, my)
	}
	if !r.has {
		m = abs64(r.off)
	}
	ke.ixs[op.Result(0)] = r
	ke.mults[op.Result(0)] = capMult(m)
}

// ---------------------------------------------------------------------------
// Small integer helpers

func gcd(a, b int64) int64 {
	a, b = abs64(a), abs64(b)
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func abs64(a int64) int64 {
	if a < 0 {
		return -a
	}
	return a
}

// capMult keeps known divisors small: only divisibility by 16 bytes and
// less is ever asked.
func capMult(m int64) int64 {
	if m == 0 {
		return 0
	}
	return gcd(m, 1<<12)
}

func ceilDiv(a, b int64) int64 {
	if a <= 0 {
		return 0
	}
	return (a + b - 1) / b
}

// log2 of a power of two.
func log2(n int) int {
	l := 0
	for 1<<l < n {
		l++
	}
	return l
}

// pow2Ceil is the least power of two >= n (1 for n <= 1).
func pow2Ceil(n int64) int64 {
	p := int64(1)
	for p < n {
		p *= 2
	}
	return p
}
