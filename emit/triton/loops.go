package triton

import (
	"fmt"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// ---------------------------------------------------------------------------
// Loops
//
// A threads loop of a one-block kernel is straight-line code over the
// block; its carried values start as full blocks of their initial value,
// and each is reduced over the block at the end, which is both the
// combine over threads and the loop.reduce over lanes that follows it in
// the loop IR:
//
//	%acc = loop.for %c0, %c64, %c8, %zero {combine = ["add"], dist = "threads"} {
//	^bb0(%i: index, %a: vector<8xf32>):
//	  ...
//	  %a2 = loop.add %a, %sq : vector<8xf32>
//	  loop.yield %a2 : vector<8xf32>
//	}
//	%ss = loop.reduce %acc {kind = "add"} : (vector<8xf32>) -> f32
//
// becomes
//
//	acc = tl.full((BLOCK,), 0.0, tl.float32)
//	...
//	t5 = acc + t4
//	ss = tl.sum(tl.where(cmask, t5, acc), axis=0)
//
// In a looped kernel the same loop is a Python loop over chunks of BLOCK
// columns carrying the block, and the reduction follows it. A serial loop
// over the last output dimension of a generic kernel is run as such a
// loop of blocks; other serial loops stay loops (scf.for), carrying
// scalars or blocks as their level says.

func (k *kernelEmitter) emitFor(op *ir.Operation) error {
	f, _ := loop.AsFor(op)
	switch {
	case f.Dist() == "threads" && k.plan.tails[op]:
		// the masked block of a flat kernel covers the scalar tail
		op.Walk(func(o *ir.Operation) bool {
			k.emitted[o] = true
			return true
		})
		return nil
	case f.Dist() == "threads" && k.plan.mode == modeFlat && k.plan.spans[op] != [2]int64{}:
		// the lanes of the loop's stretch of the row
		span := k.plan.spans[op]
		outer := k.blk.mask
		mask := k.names.fresh("smask")
		k.w.assign(mask, fmt.Sprintf("%s & (%s >= %d) & (%s < %d)", outer, k.blk.cols, span[0], k.blk.cols, span[1]))
		k.blk.mask = mask
		defer func() { k.blk.mask = outer }()
		return k.emitOneBlock(f)
	case f.Dist() == "threads" && k.plan.stretched:
		blk := k.stretch[op]
		if blk == nil {
			return kernelError(op, "is a threads loop outside the stretches of its row")
		}
		outer := k.blk
		k.blk = blk
		defer func() { k.blk = outer }()
		return k.emitOneBlock(f)
	case f.Dist() == "threads" && (k.plan.mode == modeFlat || k.plan.oneBlock):
		return k.emitOneBlock(f)
	case f.Dist() == "threads" && k.plan.chunks[op]:
		return k.emitChunk(f)
	case f.Dist() == "threads":
		return k.emitLooped(f, true)
	case k.plan.vectorized[op]:
		return k.emitLooped(f, false)
	}
	return k.emitSerial(f)
}

// combineKinds returns the combine attribute of a threads loop.
func combineKinds(f loop.ForOp) ([]string, error) {
	n := len(f.Inits())
	if n == 0 {
		return nil, nil
	}
	arr, ok := f.Operation.Attr("combine").(ir.ArrayAttr)
	if !ok || len(arr) != n {
		return nil, kernelError(f.Operation, "is a threads loop carrying %d values without a combine kind for each", n)
	}
	out := make([]string, n)
	for i, a := range arr {
		s, ok := a.(ir.StringAttr)
		if !ok || (s != "add" && s != "max" && s != "min") {
			return nil, kernelError(f.Operation, "combines with %s; the Triton emitter knows add, max and min", a)
		}
		out[i] = string(s)
	}
	return out, nil
}

// initBlocks assigns the carried values of a loop their initial blocks.
func (k *kernelEmitter) initBlocks(f loop.ForOp) ([]string, error) {
	entry := f.Body().Entry()
	accs := make([]string, len(f.Inits()))
	for i, init := range f.Inits() {
		arg := entry.Args[i+1]
		full, err := k.fullOf(init, k.level[arg])
		if err != nil {
			return nil, kernelError(f.Operation, "%v", err)
		}
		accs[i] = k.names.fresh(ivName(arg, "acc"))
		k.w.assign(accs[i], full)
		k.bind(arg, accs[i])
	}
	return accs, nil
}

// fullOf is value v as a tensor of level l: a constant as tl.full, a
// value of a lower level broadcast.
func (k *kernelEmitter) fullOf(v *ir.Value, l level) (string, error) {
	shape := k.shapeOf(l)
	if c, kind, ok := constOf(v); ok {
		t, err := tlType(kind)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("tl.full(%s, %s, %s)", shape, pyLiteral(c, kind), t), nil
	}
	if k.level[v] < l && shape != "[]" {
		return fmt.Sprintf("tl.broadcast_to(%s, %s)", k.ref(v), shape), nil
	}
	return k.ref(v), nil
}

// checkVectorStep checks that a threads loop steps by the width of the
// vectors it reads and writes (1 for scalars): its iterations then cover
// every element of [lower, upper), as the lanes of a block do.
func checkVectorStep(f loop.ForOp) error {
	width := loopVectorWidth(f)
	if step, ok := indexConst(f.Step()); !ok || step != width {
		return kernelError(f.Operation, "is a threads loop whose step is not the width of its vectors (%d)", width)
	}
	return nil
}

// loopVectorWidth is the widest vector f's body reads or writes (1: scalars).
func loopVectorWidth(f loop.ForOp) int64 {
	width := int64(1)
	f.Operation.Walk(func(op *ir.Operation) bool {
		for _, v := range append(op.Operands(), op.Results()...) {
			if vt, ok := v.Type().(ir.VectorType); ok && len(vt.Shape) == 1 {
				width = max(width, vt.Shape[0])
			}
		}
		return true
	})
	return width
}

// blockLoopStart checks a threads loop emitted as one block and starts
// its carried values: their combine kinds and initial blocks.
func (k *kernelEmitter) blockLoopStart(f loop.ForOp) (kinds, accs []string, err error) {
	if err := checkVectorStep(f); err != nil {
		return nil, nil, err
	}
	if kinds, err = combineKinds(f); err != nil {
		return nil, nil, err
	}
	accs, err = k.initBlocks(f)
	return kinds, accs, err
}

// emitOneBlock translates a threads loop that is one block.
func (k *kernelEmitter) emitOneBlock(f loop.ForOp) error {
	kinds, accs, err := k.blockLoopStart(f)
	if err != nil {
		return err
	}
	entry := f.Body().Entry()
	if err := k.emitBlock(entry); err != nil {
		return err
	}
	yield := entry.Last()
	for i, res := range f.Values() {
		y := yield.Operand(i)
		name := k.fresh(res)
		if v, ok := k.invariantOperand(entry.Args[i+1], y, kinds[i]); ok {
			// max or min of the same value in every column: the value
			init, err := k.typedRef(f.Inits()[i])
			if err != nil {
				return err
			}
			k.w.assign(name, fmt.Sprintf("%s(%s, %s)", k.combineFn(kinds[i]), init, k.ref(v)))
		} else {
			block, err := k.fullOf(y, lvBlock)
			if err != nil {
				return kernelError(f.Operation, "%v", err)
			}
			if k.blk.cmask != "" {
				block = fmt.Sprintf("tl.where(%s, %s, %s)", k.blk.cmask, block, accs[i])
			}
			k.w.assign(name, k.reduceExpr(kinds[i], block, elemKind(res.Type())))
		}
		k.bind(res, name)
		k.reduced[res] = kinds[i]
	}
	return nil
}

// invariantOperand recognises a loop combining by max or min a value that
// does not vary along the row: `max(acc, broadcast(s))` is s (max and min
// are idempotent), which saves reducing a block of copies.
func (k *kernelEmitter) invariantOperand(acc, y *ir.Value, kind string) (*ir.Value, bool) {
	op := y.DefiningOp()
	if op == nil || (kind == "max") != (op.Name() == loop.OpMax) || (kind == "min") != (op.Name() == loop.OpMin) || kind == "add" {
		return nil, false
	}
	a, b := op.Operand(0), op.Operand(1)
	if b == acc {
		a, b = b, a
	}
	if a != acc || b == acc || k.level[b] >= lvBlock {
		return nil, false
	}
	return b, true
}

// combineFn is the Triton function combining two values by kind.
func (k *kernelEmitter) combineFn(kind string) string {
	if kind == "min" {
		k.uses["_min_nan"] = true
		return "_min_nan"
	}
	k.uses["_max_nan"] = true
	return "_max_nan"
}

// reduceExpr reduces block x over its columns by kind: tl.sum, or
// tl.reduce with a maximum or minimum that propagates NaN (tl.max does
// not). Small integers are summed in int32 by tl.sum and wrapped back.
func (k *kernelEmitter) reduceExpr(kind, x string, e ir.ElemKind) string {
	axis := "0"
	keep := ""
	if k.plan.twoD {
		axis, keep = "1", ", keep_dims=True"
	}
	if kind == "add" {
		s := fmt.Sprintf("tl.sum(%s, axis=%s%s)", x, axis, keep)
		if e.IsInt() && e.BitWidth() < 32 {
			t, _ := tlType(e)
			s += ".to(" + t + ")"
		}
		return s
	}
	return fmt.Sprintf("tl.reduce(%s, %s, %s%s)", x, axis, k.combineFn(kind), keep)
}

// emitLooped translates a threads loop (or a vectorized serial loop) as a
// Python loop over chunks of BLOCK columns.
func (k *kernelEmitter) emitLooped(f loop.ForOp, threads bool) error {
	var kinds []string
	if threads {
		var err error
		if kinds, err = combineKinds(f); err != nil {
			return err
		}
	}
	accs, err := k.initBlocks(f)
	if err != nil {
		return err
	}
	entry := f.Body().Entry()
	iv := entry.Args[0]
	lb, ub := k.ref(f.Lower()), k.ref(f.Upper())
	// a threads loop steps by its vector width over consecutive elements,
	// which the lanes of a block are already; a serial loop's step is the
	// distance between the elements it visits
	stride, chunk := "", "BLOCK"
	if threads {
		if err := checkVectorStep(f); err != nil {
			return err
		}
	} else if w := loopVectorWidth(f); w > 1 && isIndexConst(f.Step(), w) {
		// a serial loop by vectors (a GPU reduce kernel's columns, each
		// thread's vector contiguous): its lanes are consecutive
		// elements, as a block's are
	} else if !isIndexConst(f.Step(), 1) {
		stride = " * " + k.ref(f.Step())
		chunk = "BLOCK" + stride
	}
	start := k.names.fresh("c0")
	if threads && k.plan.online && len(accs) == 0 {
		// the second pass of an online row kernel, backwards: the chunk
		// at lb + j*BLOCK for j from the last down to 0
		step, n, first := k.names.fresh("c"), ub+" - "+lb, lb+" + "
		if lb == "0" {
			n, first = ub, ""
		}
		k.w.open(fmt.Sprintf("for %s in range(0, %s, BLOCK):", step, n))
		k.w.assign(start, fmt.Sprintf("%s((%s - 1) // BLOCK) * BLOCK - %s", first, n, step))
		saved := k.evict
		k.evict = "evict_first"
		defer func() { k.evict = saved }()
	} else {
		k.w.open(fmt.Sprintf("for %s in range(%s, %s, %s):", start, lb, ub, chunk))
	}
	cols := k.names.fresh(ivName(iv, "cols"))
	colsExpr := start + " + tl.arange(0, BLOCK)" + stride
	if !threads {
		// generic kernels index with products of extents: 64-bit
		colsExpr = "(" + colsExpr + ").to(tl.int64)"
	}
	k.w.assign(cols, colsExpr)
	cmask := k.names.fresh("cmask")
	k.w.assign(cmask, cols+" < "+ub)

	savedBlk, savedLoads, savedSubst := k.blk, k.loads, k.subst
	k.blk = &blockCtx{cols: cols, mask: cmask, cmask: cmask}
	k.loads = map[string]string{}
	k.subst = map[*ir.Value]string{}
	k.bind(iv, cols)
	if err := k.emitBlock(entry); err != nil {
		return err
	}
	if len(accs) > 0 {
		yield := entry.Last()
		next := make([]string, len(accs))
		for i := range accs {
			block, err := k.fullOf(yield.Operand(i), lvBlock)
			if err != nil {
				return kernelError(f.Operation, "%v", err)
			}
			next[i] = fmt.Sprintf("tl.where(%s, %s, %s)", cmask, block, accs[i])
		}
		k.w.assignMany(accs, next)
	}
	k.w.close()
	k.blk, k.loads, k.subst = savedBlk, savedLoads, savedSubst

	for i, res := range f.Values() {
		name := k.fresh(res)
		k.w.assign(name, k.reduceExpr(kinds[i], accs[i], elemKind(res.Type())))
		k.bind(res, name)
		k.reduced[res] = kinds[i]
	}
	return nil
}

// emitChunk translates a threads loop over one chunk of an online row
// kernel, [0, n) with n <= BLOCK, as straight-line code over a block of
// columns, masked where n < BLOCK, reduced at its end as a one-block
// loop is.
//
// A chunk of a resident split narrower than BLOCK (kernelPlan.widths) is a
// block of its own width, tl.arange(0, W).
func (k *kernelEmitter) emitChunk(f loop.ForOp) error {
	if k.plan.online {
		// the first pass: the row is read again by the second
		saved := k.evict
		k.evict = "evict_last"
		defer func() { k.evict = saved }()
	}
	width := k.plan.widths[f.Operation]
	savedBlk, savedLoads, savedSubst := k.blk, k.loads, k.subst
	// the carried values start as blocks of the chunk's width
	blk := &blockCtx{width: width}
	k.blk = blk
	kinds, accs, err := k.blockLoopStart(f)
	if err != nil {
		return err
	}
	entry := f.Body().Entry()
	n, _ := indexConst(f.Upper())
	cols := k.names.fresh(ivName(entry.Args[0], "cols"))
	lanes, ar := k.plan.block, "tl.arange(0, BLOCK)"
	if width > 0 {
		lanes, ar = width, fmt.Sprintf("tl.arange(0, %d)", width)
	}
	k.w.assign(cols, ar)
	blk.cols = cols
	if n < lanes {
		blk.cmask = k.names.fresh("cmask")
		k.w.assign(blk.cmask, fmt.Sprintf("%s < %d", cols, n))
		blk.mask = blk.cmask
	}
	k.loads = map[string]string{}
	k.subst = map[*ir.Value]string{}
	k.bind(entry.Args[0], cols)
	if err := k.emitBlock(entry); err != nil {
		return err
	}
	yield := entry.Last()
	for i, res := range f.Values() {
		block, err := k.fullOf(yield.Operand(i), lvBlock)
		if err != nil {
			return kernelError(f.Operation, "%v", err)
		}
		if blk.cmask != "" {
			block = fmt.Sprintf("tl.where(%s, %s, %s)", blk.cmask, block, accs[i])
		}
		name := k.fresh(res)
		k.w.assign(name, k.reduceExpr(kinds[i], block, elemKind(res.Type())))
		k.bind(res, name)
		k.reduced[res] = kinds[i]
	}
	k.blk, k.loads, k.subst = savedBlk, savedLoads, savedSubst
	return nil
}

// emitSerial translates a serial loop as a loop of the program.
func (k *kernelEmitter) emitSerial(f loop.ForOp) error {
	accs, err := k.initBlocks(f)
	if err != nil {
		return err
	}
	entry := f.Body().Entry()
	iv := entry.Args[0]
	ivn := k.names.fresh(ivName(iv, "k"))
	rng := []string{k.ref(f.Lower()), k.ref(f.Upper())}
	if !isIndexConst(f.Step(), 1) {
		rng = append(rng, k.ref(f.Step()))
	}
	k.w.open(fmt.Sprintf("for %s in range(%s):", ivn, strings.Join(rng, ", ")))
	savedLoads := k.loads
	k.loads = map[string]string{}
	k.bind(iv, ivn)
	if err := k.emitBlock(entry); err != nil {
		return err
	}
	if len(accs) > 0 {
		yield := entry.Last()
		next := make([]string, len(accs))
		for i := range accs {
			if next[i], err = k.fullOf(yield.Operand(i), k.level[entry.Args[i+1]]); err != nil {
				return kernelError(f.Operation, "%v", err)
			}
		}
		k.w.assignMany(accs, next)
	}
	k.w.close()
	k.loads = savedLoads
	for i, res := range f.Values() {
		k.bind(res, accs[i])
	}
	return nil
}
