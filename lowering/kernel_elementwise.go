package lowering

import (
	"slices"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
	"github.com/tensorforge/tensorforge/passes"
)

// elementwise builds an element-wise kernel: one program instance per row
// of the iteration space (its leading dimensions), and in each a loop
// over the row, W lanes at a time, spread over the instance's threads:
//
//	loop.parallel %c0, %rows, %c1 {dist = "grid"} {
//	^bb0(%r: index):
//	  loop.for %c0, %c64, %c8 {dist = "threads"} {
//	  ^bb0(%i: index):
//	    %a = loop.load %x, %r, %i : (memref<?x64xbf16, dram>, index, index) -> vector<8xbf16>
//	    ...
//	    loop.store %y8, %y, %r, %i : (vector<8xbf16>, memref<?x64xbf16, dram>, index, index) -> ()
//	    loop.yield
//	  } : index
//	  loop.yield
//	} : index
//
// A row of dynamic length C gets a vector loop over [0, C - C mod W) and a
// scalar loop over the rest. Operands broadcast along the row (a [R, 1]
// column, a scalar) are read once per row and splat.
func (k *kernelBuilder) elementwise(fused *ir.Operation, info *passes.KernelInfo) error {
	ev := newEvaluator(k, fused, info)
	n := len(info.Shape)
	outs := yielded(fused)
	ext := make([]*ir.Value, n)
	for d := range ext {
		ext[d] = k.spaceExtent(info, d, outs)
	}
	var leadExt []*ir.Value
	var cols *ir.Value
	width, widest := int64(1), int64(1) // the kernel's, and the widest loop's between cuts
	if n > 0 {
		leadExt, cols = ext[:n-1], ext[n-1]
		widest = rollWidth(k.vectorWidth(info.Shape[n-1], ev.alongRow()), info.Ops)
		if len(info.OutViews) > 0 {
			widest = outViewWidth(widest, info.OutViews, k.stridedAccesses(), n)
		}
		width = viewWidth(widest, info.Views, k.stridedAccesses())
	}
	tileDim, tiled := k.tiledWalk(info)
	if tiled {
		// as wide as a tile allows: the last tile of a row ends in scalars
		width = min(rollWidth(k.vectorWidth(transposeTile, ev.alongRow()), info.Ops), transposeTile)
		if info.Views != nil {
			width = dividingWidth(width, info.Views)
		}
	}

	// the loops over the row: a vector loop, and a scalar tail for a dynamic row
	type span struct {
		lower, upper, step *ir.Value
		width              int64
	}
	var spans []span
	switch {
	case n == 0:
	case width == 1 && (info.Views == nil || len(info.Views.Cuts) == 0):
		spans = []span{{k.index(0), cols, k.index(1), 0}}
	case info.Views != nil && len(info.Views.Cuts) > 0:
		// one loop per stretch between the edges of concat pieces, each
		// as wide as the reads of the pieces in it allow
		lo := int64(0)
		width = 1
		for _, c := range append(slices.Clone(info.Views.Cuts), info.Shape[n-1]) {
			w := info.Views.SpanWidth(widest, lo, c)
			lanes := w
			if w == 1 {
				lanes = 0
			}
			spans = append(spans, span{k.index(lo), k.index(c), k.index(w), lanes})
			width = max(width, w)
			lo = c
		}
	case info.Shape[n-1] != ir.Dynamic:
		spans = []span{{k.index(0), cols, k.index(width), width}}
	default:
		rem := must(loop.BuildRemi(k.kb, k.loc, cols, k.index(width))).Output()
		main := must(loop.BuildSubi(k.kb, k.loc, cols, rem)).Output()
		main.Name = "nvec"
		spans = []span{{k.index(0), main, k.index(width), width}, {main, cols, k.index(1), 0}}
	}
	k.setAttr("vector_width", intAttr(width))

	rowBody := func(b *ir.Builder, spans []span) {
		row := ev.rowScope(b)
		var alongRow []int
		for i, y := range outs {
			if ev.plans[k.outs[i]].varies() || info.OutViews[y] != nil {
				alongRow = append(alongRow, i)
			}
		}
		if len(alongRow) > 0 {
			for _, sp := range spans {
				row.loop(sp.lower, sp.upper, sp.step, sp.width, nil, nil, func(s *scope, _ []*ir.Value) []*ir.Value {
					for _, i := range alongRow {
						s.storeResult(outs[i], k.outs[i])
					}
					return nil
				})
			}
		}
		for i, y := range outs {
			if !ev.plans[k.outs[i]].varies() && info.OutViews[y] == nil {
				row.store(row.get(y), k.outs[i])
			}
		}
	}
	if tiled {
		// a tile's rows span a cache line of the narrowest operand
		elemBytes := int64(8)
		for _, in := range k.ins {
			elemBytes = min(elemBytes, in.Type().(ir.MemRefType).Elem.Kind.ByteSize())
		}
		k.tileGrid(leadExt, cols, info.Shape, tileDim, tileRows(elemBytes), func(b *ir.Builder, idx []*ir.Value, colLo, cols *ir.Value) {
			ev.rowIdx = idx
			hi := must(loop.BuildAddi(b, k.loc, colLo, cols)).Output()
			lanes := width
			if width == 1 {
				lanes = 0
			}
			if c, ok := loop.EvalIndex(cols, nil); ok && c%width == 0 || width == 1 {
				rowBody(b, []span{{colLo, hi, k.index(width), lanes}})
				return
			}
			// the last tile of a row, cut short: vectors, then scalars
			rem := must(loop.BuildRemi(b, k.loc, cols, k.index(width))).Output()
			main := must(loop.BuildSubi(b, k.loc, hi, rem)).Output()
			rowBody(b, []span{{colLo, main, k.index(width), width}, {main, hi, k.index(1), 0}})
		})
		return nil
	}
	k.rowGrid(ev, leadExt, func(b *ir.Builder) { rowBody(b, spans) })
	return nil
}

// stridedAccesses reports whether the kernel's target takes loads and
// stores whose lanes run along another axis than the last (loop.load's
// and loop.store's `axis`): CPU targets, whose emitter builds them lane
// by lane.
func (k *kernelBuilder) stridedAccesses() bool {
	return k.target != nil && k.target.Family == target.CPU
}

// tiledWalk reports whether an element-wise kernel info walks tiles of
// its dimension d and its column (tileGrid) rather than rows: on a CPU,
// where it reads an operand through a transpose that moves the operand's
// last axis to d (passes.ViewPlan.TileDim), or stores a result through
// transposes whose last axis d indexes (outViewAxes), so that a row of
// the kernel would touch one element per line and per page of it, and
// both dimensions are longer than a tile, or `?`. Such operands are
// read, and such results written, with strided vector accesses
// (`axis`), which reuse the lines a tile touches, and the rest of the
// kernel keeps its vectors. Concats cutting its rows or columns, results
// stored through reshapes, and reads and stores that disagree on d keep
// the rows (and one lane at a time).
func (k *kernelBuilder) tiledWalk(info *passes.KernelInfo) (int, bool) {
	n := len(info.Shape)
	if !k.stridedAccesses() || n < 2 {
		return 0, false
	}
	d := -1
	if plan := info.Views; plan != nil {
		switch {
		case len(plan.Cuts) > 0 || plan.RowDim >= 0 || plan.Scalar && plan.TileDim < 0:
			return 0, false
		case plan.Scalar:
			d = plan.TileDim
		}
	}
	for _, chain := range info.OutViews {
		_, last, ok := outViewAxes(chain, n)
		switch {
		case !ok || d >= 0 && last != n-1 && last != d:
			return 0, false
		case last != n-1:
			d = last
		}
	}
	if d < 0 {
		return 0, false
	}
	if shortAxis(info.Shape[d]) || shortAxis(info.Shape[n-1]) {
		return 0, false
	}
	return d, true
}

// row builds a row kernel: one program instance per row [R...] of rows of
// length C, and in it one loop over the row per phase. A phase's loop
// accumulates the reductions of that phase (vector partial results
// combined over threads, then across lanes), computes and stores the full
// rows the phase produces, and, in a one-pass schedule, keeps in sram the
// values later phases read; a two-pass schedule reads them from DRAM again
// and recomputes them instead. Per-row values are scalars of the instance.
//
//	loop.parallel %c0, %rows, %c1 {dist = "grid"} {
//	^bb0(%r: index):
//	  %buf = loop.alloc : memref<64xf32, sram>
//	  %acc = loop.for %c0, %c64, %c8, %zero {combine = ["add"], dist = "threads"} { ... }
//	  %ss = loop.reduce %acc {kind = "add"} : (vector<8xf32>) -> f32
//	  ... per-row scalars ...
//	  loop.for %c0, %c64, %c8 {dist = "threads"} { ... loop.load %buf ... loop.store ... }
//	  loop.yield
//	} : index
func (k *kernelBuilder) row(fused *ir.Operation, info *passes.KernelInfo) error {
	ev := newEvaluator(k, fused, info)
	n := len(info.Shape)
	c := info.RowLen
	width := viewWidth(rollWidth(k.vectorWidth(c, ev.alongRow()), info.Ops), info.Views, k.stridedAccesses())
	if len(info.OutViews) > 0 {
		width = outViewWidth(width, info.OutViews, k.stridedAccesses(), len(info.Shape))
	}
	if len(info.MatMuls) > 0 {
		// a row of dot products (passes.matmulRows): each is a serial loop
		// over K, whose right operand is read along K, not along the row
		width = 1
	}
	schedule := info.Schedule
	var online *onlinePair
	switch schedule {
	case passes.ScheduleOnePass, passes.ScheduleTwoPass, passes.ScheduleCached:
	case passes.ScheduleOnline:
		maxOp, sumOp, ok := info.Online()
		if !ok {
			return ir.OpError(fused, "has schedule 'online', but its first two phases are not a max of a row and then a sum of exp(x - max) alone")
		}
		if k.exact {
			// rescaled sums do not round as op-by-op evaluation does
			schedule = passes.ScheduleTwoPass
		} else {
			online = &onlinePair{max: maxOp, sum: sumOp}
		}
	default:
		return ir.OpError(fused, "has schedule '%s'; expected 'one-pass', 'two-pass', 'cached' or 'online'", schedule)
	}
	k.setAttr("row_len", intAttr(c))
	k.setAttr("schedule", ir.StringAttr(schedule))
	k.setAttr("vector_width", intAttr(width))
	lanes := width
	if width == 1 {
		lanes = 0
	}

	// the leading extents come from output 0: full rows [R..., C] or
	// per-row values [R..., 1] / [R...], all led by R
	outs := yielded(fused)
	leadExt := make([]*ir.Value, n-1)
	for d := range leadExt {
		leadExt[d] = k.spaceExtent(info, d, outs)
	}

	// what each phase's loop must do
	reductions := make([][]*ir.Operation, info.NumPhases)
	stores := make([][]int, info.NumPhases)
	keeps := make([][]*ir.Value, info.NumPhases)
	for i, op := range info.Ops {
		if isRowReduction(op) && ev.varying[op.Operand(0)] {
			reductions[info.Phases[i]] = append(reductions[info.Phases[i]], op)
		}
	}
	for i, y := range outs {
		if chain := info.OutViews[y]; chain != nil {
			// stored through views, in the phase of the row they read
			p := ev.valPhase[chain[0].Operand(0)]
			stores[p] = append(stores[p], i)
			continue
		}
		if ev.plans[k.outs[i]].varies() {
			p := ev.valPhase[y]
			stores[p] = append(stores[p], i)
		}
	}
	var inPlace map[*ir.Value]*ir.Value
	var copied []*ir.Value
	if schedule == passes.ScheduleOnePass && k.copyRows && !k.exact && info.Views == nil && len(info.MatMuls) == 0 && len(info.OutViews) == 0 {
		copied = ev.rowCopies(reductions, stores, outs, c)
	}
	if len(copied) > 0 {
		// every phase reads the copies; what they compute is computed
		// again from them, as a two-pass kernel does from DRAM
		for _, src := range copied {
			ev.keptFrom[src] = -1
		}
		if k.remarks != nil {
			k.remarks.Remark("fusion", fused.Loc, "copy the rows of %d of %d input(s) into sram as loaded (%d bytes) before the first loop, and compute every phase from the copies, so that each row is read once",
				c, len(copied), ev.copyBytes(copied, c))
		}
	} else if schedule == passes.ScheduleOnePass {
		keeps, inPlace = ev.planKeptRows(reductions, stores, outs)
		limit := k.target.ScratchpadBytes
		if kept := ev.keptRowBytes(keeps, inPlace, c); kept > limit && info.RowBufferBytes() <= limit {
			// the plan counts rows as if every kept row could take the
			// buffer of one no longer read; lowering reuses one only for
			// a row of its element type, read last where the other is
			// first kept (an f16 input kept beside an f32 row takes two).
			// Rows the plan saw fit but do not are read again; a one-pass
			// schedule the plan would not choose (written by hand) stays,
			// for sram-alloc to refuse.
			schedule = info.RereadSchedule(k.target)
			if schedule == passes.ScheduleOnline && k.exact {
				schedule = passes.ScheduleTwoPass // as an online plan is lowered with exact rounding
			}
			if schedule == passes.ScheduleOnline {
				maxOp, sumOp, _ := info.Online()
				online = &onlinePair{max: maxOp, sum: sumOp}
			}
			k.setAttr("schedule", ir.StringAttr(schedule))
			if k.remarks != nil {
				k.remarks.Remark("fusion", fused.Loc, "lowered %s: the rows a one-pass kernel keeps take %d bytes as held (the plan counted %d), more than the %d-byte scratchpad of %s",
					schedule, kept, info.RowBufferBytes(), limit, k.target.Name)
			}
			keeps, inPlace = make([][]*ir.Value, info.NumPhases), nil
			clear(ev.keptFrom)
		}
	}
	if schedule == passes.ScheduleCached && info.Views == nil {
		// a full row stored exactly as it is held (an f32 result, or any
		// result with exact rounding) is read back by the later phases:
		// one stream from the cache instead of its operands' (add +
		// RMSNorm in f32 reads h, not x and r, to normalise it). Only on a
		// CPU, where an instance is one thread: on a GPU, other threads
		// of the instance would read what one stored.
		ev.storedRow = map[*ir.Value]*ir.Value{}
		for i, y := range outs {
			if ev.plans[k.outs[i]].varies() && !y.IsBlockArg() && ir.TypeEqual(elemOf(k.outs[i]), ev.heldElem(y)) {
				ev.storedRow[y] = k.outs[i]
			}
		}
	}

	k.rowGrid(ev, leadExt, func(b *ir.Builder) {
		row := ev.rowScope(b)
		for _, src := range copied {
			_, ev.cached[src] = ev.copySpan(row, src, c, width)
		}
		for p := 0; p < info.NumPhases; p++ {
			if len(reductions[p])+len(stores[p])+len(keeps[p]) == 0 {
				continue
			}
			ev.phase = p
			if online != nil && p == 0 {
				ev.onlinePhases(row, online, stores[0], outs, width, c)
				p++ // phase 1 is done too
				continue
			}
			for _, v := range keeps[p] {
				if w, ok := inPlace[v]; ok {
					ev.cached[v] = ev.cached[w]
					continue
				}
				buf := must(loop.BuildAlloc(b, k.loc, ir.MemRefType{Shape: []int64{c}, Elem: ev.heldElem(v), Space: ir.SRAM})).Output()
				buf.Name = "row"
				ev.cached[v] = buf
			}
			var inits []*ir.Value
			var combine []string
			var accElems []ir.ElemType
			for _, red := range reductions[p] {
				kind := reduceKind(red)
				ce := computeElem(elemOf(red.Operand(0)), elemOf(red.Result(0)))
				accElems = append(accElems, ce)
				inits = append(inits, k.constant(loop.Vector(lanes, ce), identity(kind, ce)))
				combine = append(combine, kind)
			}
			accs := row.loop(k.index(0), k.index(c), k.index(width), lanes, inits, combine, func(s *scope, carried []*ir.Value) []*ir.Value {
				next := make([]*ir.Value, len(carried))
				for j, red := range reductions[p] {
					x := s.compute(s.get(red.Operand(0)), accElems[j])
					next[j] = s.op(combineOp(combine[j]), []*ir.Value{carried[j], x}, carried[j].Type(), nil)
				}
				for _, i := range stores[p] {
					s.storeResult(outs[i], k.outs[i])
				}
				// every read of a kept row comes before the first store, so
				// a row may take the place of one read here for the last time
				kept := make([]*ir.Value, len(keeps[p]))
				for j, v := range keeps[p] {
					kept[j] = s.get(v)
				}
				for j, v := range keeps[p] {
					must(loop.BuildStore(s.b, k.loc, s.cast(kept[j], ev.heldElem(v)), ev.cached[v], []*ir.Value{s.col}))
				}
				return next
			})
			for j, red := range reductions[p] {
				acc := accs[j]
				acc.Name = "acc"
				total := acc
				if lanes > 0 {
					total = must(loop.BuildReduce(b, k.loc, acc, combine[j])).Output()
				}
				row.vals[red.Result(0)] = row.cast(total, ev.hold(elemOf(red.Result(0)), accElems[j]))
			}
		}
		for i, y := range outs {
			if !ev.plans[k.outs[i]].varies() && info.OutViews[y] == nil {
				row.store(row.get(y), k.outs[i])
			}
		}
	})
	return nil
}

// keptRowBytes is the sram the kept rows (keeps) take: a buffer of c
// elements, as held, for each row not kept in place of another, each from
// a multiple of 16 bytes as sram-alloc places them.
func (ev *evaluator) keptRowBytes(keeps [][]*ir.Value, inPlace map[*ir.Value]*ir.Value, c int64) int64 {
	var n int64
	for _, vs := range keeps {
		for _, v := range vs {
			if _, ok := inPlace[v]; !ok {
				n += sramRowBytes(c, ev.heldElem(v))
			}
		}
	}
	return n
}

// rowCopies lists the inputs of a one-pass row kernel that its phases
// read more than once (in more than one loop), in input order, for the
// kernel to copy into sram as loaded (copySpan: bulk copies in PTX)
// rather than keep the rows computed from them: an input of bf16 held as
// loaded takes half the bytes of its f32 row, and the copy puts the whole
// row in flight at once. None where the copies would not fit the
// scratchpad, or where the phases read no input twice.
func (ev *evaluator) rowCopies(reductions [][]*ir.Operation, stores [][]int, outs []*ir.Value, c int64) []*ir.Value {
	reads := map[*ir.Value]int{} // the loops reading each input
	for p := range reductions {
		seen := map[*ir.Value]bool{}
		var visit func(v *ir.Value)
		visit = func(v *ir.Value) {
			if !ev.varying[v] || seen[v] {
				return
			}
			seen[v] = true
			if v.IsBlockArg() {
				reads[v]++
				return
			}
			for _, a := range v.DefiningOp().Operands() {
				visit(a)
			}
		}
		for _, red := range reductions[p] {
			visit(red.Operand(0))
		}
		for _, i := range stores[p] {
			visit(outs[i])
		}
	}
	var copied []*ir.Value
	for _, a := range ev.entryArgs {
		if reads[a] > 1 && ev.info.AccessOf(a) == passes.AccessFull && ir.TypeEqual(ev.heldElem(a), elemOf(a)) {
			copied = append(copied, a)
		}
	}
	if len(copied) == 0 || ev.copyBytes(copied, c) > ev.k.target.ScratchpadBytes {
		return nil
	}
	return copied
}

// sramRowBytes is what a row of c elements of e takes in sram, from a
// multiple of 16 bytes as sram-alloc places it.
func sramRowBytes(c int64, e ir.ElemType) int64 {
	return (c*int64(max(e.Kind.ByteSize(), 1)) + 15) / 16 * 16
}

// copyBytes is the sram the copies of rows of c columns of inputs take,
// each from a multiple of 16 bytes.
func (ev *evaluator) copyBytes(inputs []*ir.Value, c int64) int64 {
	var n int64
	for _, a := range inputs {
		n += sramRowBytes(c, elemOf(a))
	}
	return n
}

// planKeptRows decides, for a one-pass schedule, which full rows are kept
// in sram and in which phase's loop they are stored. Walking each loop's
// needs from its reductions and stores down to the values it loads, the
// first value met that an earlier loop computes anyway (an operand it
// read, a row it computed) is kept by that loop and read back here,
// instead of being read from DRAM and recomputed again. Values only a
// later loop needs are read there, once, from DRAM.
//
// A row stored by a loop that reads another kept row of the same type for
// the last time takes that row's buffer (inPlace maps it to the row whose
// buffer it takes): the loop reads element i of the old row before it
// writes element i of the new one, so softmax's exp(x - max) replaces x.
func (ev *evaluator) planKeptRows(reductions [][]*ir.Operation, stores [][]int, outs []*ir.Value) (keeps [][]*ir.Value, inPlace map[*ir.Value]*ir.Value) {
	phases := len(reductions)
	keeps = make([][]*ir.Value, phases)
	computedIn := map[*ir.Value]int{} // the first loop computing a value
	lastRead := map[*ir.Value]int{}   // the last loop reading a kept row
	for p := 0; p < phases; p++ {
		needed := map[*ir.Value]bool{}
		var order []*ir.Value
		var visit func(v *ir.Value)
		visit = func(v *ir.Value) {
			if !ev.varying[v] || needed[v] {
				return
			}
			if _, kept := ev.keptFrom[v]; kept {
				lastRead[v] = p
				return
			}
			if q, ok := computedIn[v]; ok && q < p && ev.info.AccessOf(v) == passes.AccessFull {
				ev.keptFrom[v] = q
				keeps[q] = append(keeps[q], v)
				lastRead[v] = p
				return
			}
			needed[v] = true
			order = append(order, v)
			if op := v.DefiningOp(); op != nil {
				for _, a := range op.Operands() {
					visit(a)
				}
			}
		}
		for _, red := range reductions[p] {
			visit(red.Operand(0))
		}
		for _, i := range stores[p] {
			visit(outs[i])
		}
		for _, v := range order {
			if _, ok := computedIn[v]; !ok {
				computedIn[v] = p
			}
		}
	}
	inPlace = map[*ir.Value]*ir.Value{}
	taken := map[*ir.Value]bool{} // rows whose buffer is already taken
	var all []*ir.Value
	for q := range keeps {
		for _, v := range keeps[q] {
			for _, w := range all {
				if !taken[w] && lastRead[w] == q && ir.TypeEqual(ev.heldElem(w), ev.heldElem(v)) {
					taken[w] = true
					inPlace[v] = w
					break
				}
			}
		}
		all = append(all, keeps[q]...)
	}
	return keeps, inPlace
}
