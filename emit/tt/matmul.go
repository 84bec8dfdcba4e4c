package tt

import (
	"fmt"
	"slices"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// This file maps a kernel of kind "matmul" (loop.MatchMatMul gives its
// structure) onto matmul_tiles. The work is split tile by tile over the
// result: unit t is result tile (rb, ct) of the [R, N] result matrix
// (R the rows of every batch together, ct < Ct = N/32). Per unit the
// reader streams, for kt < Kt = K/32, tile (rb, kt) of A and tile (kt, ct)
// of each B (tile (ct, kt) with transpose_b) into their circular buffers,
// after the tiles the epilogue reads; the compute kernel accumulates
// every dot product in a DST tile of its own,
//
//	tile_regs_acquire();
//	for (uint32_t kt = 0; kt < Kt; ++kt) {
//	    cb_wait_front(cb_a, 1);
//	    cb_wait_front(cb_b, 1);
//	    matmul_tiles(cb_a, cb_b, 0, 0, 0, transpose);
//	    cb_pop_front(cb_b, 1);
//	    cb_pop_front(cb_a, 1);
//	}
//
// applies the epilogue of the loop IR (the ops after the loops over K)
// to those DST tiles with the SFPU, and packs the result into the
// writer's circular buffer. matmul_tiles reads A and B through srcA /
// srcB: 19 bits (TF32) of a Float32 tile, bf16 and f16 exactly; the
// products of 11-bit significands are exact and DST accumulates them in
// f32 (fp32_dest_acc_en).

// mmDot is one dot product of a matmul kernel on tiles.
type mmDot struct {
	b    *param
	cbB  *cbuf
	slot int // the DST tile it accumulates in (set when the compute kernel is written)
}

// mmPlan is a matmul kernel on tiles.
type mmPlan struct {
	a         *param
	cbA       *cbuf
	kt        int64
	transpose bool
	dots      []*mmDot
}

// planMatMul builds the statements of a kernel of kind "matmul".
func (g *kgen) planMatMul() {
	mm, err := loop.MatchMatMul(g.k)
	if err != nil {
		d := ir.AsDiagnostics(err)[0]
		g.fail(nil, "of kind 'matmul' does not have the structure the backend tiles (%s)", d.Message)
	}
	g.grid = mm.Grid
	for _, op := range mm.Grid.Body().Entry().Ops() {
		switch name := op.Name(); {
		case name == loop.OpConst, indexOps[name], name == loop.OpYield, op == mm.Cols.Operation:
		case name == loop.OpLoad, isAlias(op):
			// a value per row ([M, 1]) the epilogue reads: a column tile
		default:
			g.fail(op, "computes '%s' once per row of a matmul; the backend tiles matmuls whose epilogue is computed per element", name)
		}
	}
	first := mm.Dots[0]
	a := g.byArg[first.Lhs.Memref()]
	if a == nil || a.output {
		g.fail(first.Lhs.Operation, "reads the left operand of a matmul from a buffer that is not an input")
	}
	// the one store: the result tile
	var store loop.StoreOp
	nstores := 0
	mm.Cols.Operation.Walk(func(o *ir.Operation) bool {
		if s, ok := loop.AsStore(o); ok {
			store = s
			nstores++
		}
		return true
	})
	if nstores != 1 {
		g.fail(mm.Cols.Operation, "stores %d values per element of a matmul; the backend tiles a matmul with one result", nstores)
	}
	out := g.byArg[store.Memref()]
	if out == nil || !out.output {
		g.fail(store.Operation, "stores a matmul's result to a buffer that is not an output")
	}
	j := mm.Cols.Body().Entry().Args[0]
	si := store.Indices()
	if len(si) < 2 || si[len(si)-1] != j || len(out.shape) != len(si) {
		g.fail(store.Operation, "stores a matmul's result at [..., m, j] where the backend expects the column loop's index last")
	}
	// static shapes, whole tiles
	for _, p := range []*param{a, out} {
		for d, n := range p.shape {
			if n == ir.Dynamic {
				g.fail(store.Operation, "multiplies matrices of run-time extent (dimension %d of '%s'); the backend tiles matmuls of static shapes", d, p.name)
			}
		}
	}
	k := first.K
	n := out.shape[len(out.shape)-1]
	m := a.shape[len(a.shape)-2]
	rows := int64(1)
	for _, e := range out.shape[:len(out.shape)-1] {
		rows *= e
	}
	if m%TileRows != 0 || n%TileCols != 0 || k%TileCols != 0 {
		g.fail(first.Loop.Operation, "multiplies %dx%d by %dx%d matrices; matmul_tiles takes whole 32x32 tiles, so M, N and K must be multiples of 32 (the backend does not pad a matmul's operands yet)", m, k, k, n)
	}
	// A is read at row r of the result: its rows are the result's rows
	li := first.Lhs.Indices()
	if len(li) != len(si) || !slices.Equal(li[:len(li)-1], si[:len(si)-1]) || !slices.Equal(a.shape[:len(a.shape)-1], out.shape[:len(out.shape)-1]) {
		g.fail(first.Lhs.Operation, "reads the left operand of a matmul through an index map (a broadcast or view of its rows); the backend tiles a left operand whose rows are the result's")
	}
	if a.fmt.isInt() || out.fmt.isInt() {
		elem := out.elem
		if a.fmt.isInt() {
			elem = a.elem
		}
		g.fail(first.Loop.Operation, "multiplies or stores %s matrices; the backend runs matmul_tiles on float tiles (f32, bf16, f16) only", elem)
	}
	plan := &mmPlan{a: a, kt: k / TileCols, transpose: first.TransposeB}
	a.seen, a.access = true, clsFull
	mt := m / TileRows
	plan.cbA = g.newCB("cb_"+a.name, a.fmt, 2, fmt.Sprintf("tiles of %s (the left operand), a row of Kt = %d along K", a.name, plan.kt))
	a.tileIndex = fmt.Sprintf("rb * %d + kt", plan.kt)
	byLoop := map[*ir.Value]*mmDot{}
	for _, d := range mm.Dots {
		if d.TransposeB != plan.transpose {
			g.fail(d.Loop.Operation, "mixes dot products with and without transpose_b; the backend configures matmul_tiles for one form per kernel")
		}
		b := g.byArg[d.Rhs.Memref()]
		if b == nil || b.output {
			g.fail(d.Rhs.Operation, "reads the right operand of a matmul from a buffer that is not an input")
		}
		if b.fmt.isInt() {
			g.fail(d.Loop.Operation, "multiplies by '%s', whose elements are %s; the backend runs matmul_tiles on float tiles (f32, bf16, f16) only", b.name, b.elem)
		}
		if b.seen {
			g.fail(d.Rhs.Operation, "reads '%s' in two dot products (or as both operands); the backend streams each operand once", b.name)
		}
		for dd, e := range b.shape {
			if e == ir.Dynamic {
				g.fail(d.Rhs.Operation, "multiplies by '%s', whose dimension %d has a run-time extent; the backend tiles matmuls of static shapes", b.name, dd)
			}
		}
		ri := d.Rhs.Indices()
		nb := len(b.shape)
		batched := false
		switch {
		case nb == 2:
		case nb == len(out.shape) && slices.Equal(b.shape[:nb-2], out.shape[:nb-2]) && slices.Equal(ri[:nb-2], si[:nb-2]):
			batched = true
		default:
			g.fail(d.Rhs.Operation, "reads the right operand '%s' of a batched matmul through a batch map (a broadcast over the batch); the backend tiles a right operand of one matrix, or of one matrix per batch", b.name)
		}
		b.seen, b.access = true, clsFull
		bt := "0"
		if batched {
			bt = fmt.Sprintf("rb / %d", mt)
		}
		if plan.transpose {
			// B is [..., N, K]: tile (ct, kt) of the batch's matrix
			b.tileIndex = fmt.Sprintf("(%s * Ct + ct) * %d + kt", bt, plan.kt)
			if !batched {
				b.tileIndex = fmt.Sprintf("ct * %d + kt", plan.kt)
			}
		} else {
			b.tileIndex = fmt.Sprintf("(%s * %d + kt) * Ct + ct", bt, plan.kt)
			if !batched {
				b.tileIndex = "kt * Ct + ct"
			}
		}
		what := "(kt, ct)"
		if plan.transpose {
			what = "(ct, kt), transposed by matmul_tiles"
		}
		dot := &mmDot{b: b, cbB: g.newCB("cb_"+b.name, b.fmt, 2, fmt.Sprintf("tiles %s of %s (a right operand)", what, b.name))}
		plan.dots = append(plan.dots, dot)
		byLoop[d.Loop.Result(0)] = dot
	}
	out.seen, out.access = true, clsFull
	g.mm = plan
	g.kind = "matmul"
	g.perTile = true
	g.rows, g.cols, g.rowLen = constExpr(rows), constExpr(n), n

	// the epilogue: one tree from the dot products to the stored value
	e := &mmEpilogue{g: g, j: j, store: store, si: si, dots: byLoop, uses: map[*ir.Value]int{}, loads: map[*ir.Value]*cbValue{}}
	e.countUses(mm.Cols.Body().Entry())
	tree := e.tree(store.Value(), store.Operation, out.fmt)
	if len(e.used) != len(plan.dots) {
		g.fail(mm.Cols.Operation, "computes a dot product its result does not use")
	}
	if need(tree)+len(plan.dots)-1 > dstTiles {
		g.fail(store.Operation, "has a matmul epilogue that needs more than the %d DST tiles of an acquire (with fp32_dest_acc_en)", dstTiles)
	}
	cbOut := g.newCB("cb_"+out.name, out.fmt, 2, fmt.Sprintf("result tiles of %s, to the writer", out.name))
	var kReads []stmt
	kReads = append(kReads, &readStmt{p: a, cb: plan.cbA})
	for _, d := range plan.dots {
		kReads = append(kReads, &readStmt{p: d.b, cb: d.cbB})
	}
	sec := &sectionStmt{comment: "the result tile: " + tree.describe(), tree: tree, dests: []*cbuf{cbOut}, mm: plan}
	// the epilogue's tiles come first in a unit: the compute kernel waits
	// for them before the loop over K
	var pre []stmt
	for _, l := range e.loadOrder {
		pre = append(pre, &readStmt{p: l.p, cb: l.cv.cb})
		sec.waits = append(sec.waits, cbOp{cb: l.cv.cb, n: "1"})
		sec.pops = append(sec.pops, cbOp{cb: l.cv.cb, n: "1", pop: true})
	}
	g.body = append(pre, &loopStmt{kt: plan.kt, body: kReads}, sec, &writeStmt{p: out, cb: cbOut})
}

// mmEpilogue builds the expression tree of a matmul's epilogue.
type mmEpilogue struct {
	g         *kgen
	j         *ir.Value
	store     loop.StoreOp
	si        []*ir.Value // the store's indices
	dots      map[*ir.Value]*mmDot
	used      map[*mmDot]bool
	uses      map[*ir.Value]int
	loads     map[*ir.Value]*cbValue
	loadOrder []mmLoad
}

// mmLoad is an operand tile the epilogue reads.
type mmLoad struct {
	p  *param
	cv *cbValue
}

// countUses counts the users of each value of the column loop's body,
// through casts that widen.
func (e *mmEpilogue) countUses(b *ir.Block) {
	for _, op := range b.Ops() {
		if _, ok := e.dots[opResult(op)]; ok {
			continue
		}
		if isAlias(op) {
			continue
		}
		for _, a := range op.Operands() {
			e.uses[e.base(a)]++
		}
	}
}

func opResult(op *ir.Operation) *ir.Value {
	if op.NumResults() == 0 {
		return nil
	}
	return op.Result(0)
}

// base follows casts that change nothing (widening) to the value they give.
func (e *mmEpilogue) base(v *ir.Value) *ir.Value {
	for {
		op := v.DefiningOp()
		if op == nil || op.Name() != loop.OpCast || !isAlias(op) {
			return v
		}
		v = op.Operand(0)
	}
}

// tree is the node computing v; at is the op using it (for messages).
// out is the format the result is packed in: a cast to it at the root is
// the packer's rounding.
func (e *mmEpilogue) tree(v *ir.Value, at *ir.Operation, out format) *node {
	g := e.g
	v = e.base(v)
	if d := e.dots[v]; d != nil {
		if e.used == nil {
			e.used = map[*mmDot]bool{}
		}
		if e.used[d] || e.uses[v] > 1 {
			g.fail(v.DefiningOp(), "uses a dot product twice in its epilogue; the backend keeps each dot product in one DST tile and uses it once")
		}
		e.used[d] = true
		return &node{kind: nDot, cls: clsFull, dot: d}
	}
	if c, ok := constFloat(v); ok && v.DefiningOp().Name() == loop.OpConst {
		return &node{kind: nConst, cls: clsConst, c: c}
	}
	op := v.DefiningOp()
	if op == nil {
		g.fail(at, "has a matmul epilogue reading a value the backend cannot follow")
	}
	if e.uses[v] > 1 {
		g.fail(op, "uses '%s' twice in a matmul epilogue; the backend evaluates the epilogue as one expression tree in DST", op.Name())
	}
	if f, ok := isNarrowing(op); ok {
		if at.Name() != loop.OpStore || f != out {
			g.fail(op, "rounds a value of its matmul epilogue to %s before computing on it; the backend rounds only the stored result (the packer's rounding), so this epilogue is not supported yet", f)
		}
		return e.tree(op.Operand(0), op, out)
	}
	if l, ok := loop.AsLoad(op); ok {
		return e.load(l)
	}
	switch name := op.Name(); {
	case elementwise[name] && name != loop.OpCmp && name != loop.OpSelect:
		for _, a := range op.Operands() {
			if el, _ := ir.ElemOf(a.Type()); el.Kind != ir.F32 {
				g.fail(op, "computes on %s in a matmul epilogue (f32 only)", el)
			}
		}
		n := &node{kind: nOp, cls: clsFull, val: v, op: name}
		if gl, ok := loop.AsGelu(op); ok {
			n.approx = gl.Approximate() == "tanh"
		}
		for _, a := range op.Operands() {
			n.args = append(n.args, e.tree(a, op, out))
		}
		if len(n.args) == 2 {
			if _, ok := sfpuBinary[name]; !ok {
				g.fail(op, "uses '%s' in a matmul epilogue, which the backend has no SFPU form for", name)
			}
		} else if _, ok := sfpuUnary[name]; !ok && name != loop.OpLog2 && name != loop.OpGelu && name != loop.OpRound {
			g.fail(op, "uses '%s' in a matmul epilogue, which the backend has no SFPU form for", name)
		}
		if _, _, ok := scalarOperand(n); !ok && len(n.args) == 2 && n.args[0].kind == nConst && n.args[1].kind == nConst {
			g.fail(op, "computes on two constants in a matmul epilogue")
		}
		return n
	default:
		g.fail(op, "uses '%s' in a matmul epilogue; the backend applies element-wise f32 ops (SFPU), constants, and tiles of operands read at the result's element or column, to the result tile in DST", name)
	}
	return nil
}

// load is the leaf of an operand the epilogue reads: at the result's
// element (a full tile, copy_tile) or at its column only (a bias [N]: a
// tile with the values in row 0, unary_bcast<ROW>).
func (e *mmEpilogue) load(l loop.LoadOp) *node {
	g := e.g
	p := g.byArg[l.Memref()]
	if p == nil || p.output {
		g.fail(l.Operation, "reads a buffer in a matmul epilogue that is not an input")
	}
	if p.tileIndex != "" {
		g.fail(l.Operation, "reads '%s', an operand of the matmul, again in its epilogue; the backend streams each operand once", p.name)
	}
	if cv := e.loads[l.Result(0)]; cv != nil {
		return &node{kind: nLeaf, cls: cv.cls, leaf: cv}
	}
	for d, x := range p.shape {
		if x == ir.Dynamic {
			g.fail(l.Operation, "reads '%s' in a matmul epilogue, whose dimension %d has a run-time extent", p.name, d)
		}
	}
	idx := l.Indices()
	n := len(idx)
	out := e.g.byArg[e.store.Memref()]
	outLead, _ := g.leadIndices(out, e.si[:len(e.si)-1])
	isZero := func(vs []*ir.Value) bool {
		for _, v := range vs {
			if k, ok := constIndex(v); !ok || k != 0 {
				return false
			}
		}
		return true
	}
	c := clsConst
	if n > 0 && idx[n-1] == e.j {
		lead, _ := g.leadIndices(p, idx[:n-1])
		switch {
		case isZero(lead) && p.shape[len(p.shape)-1] == out.shape[len(out.shape)-1]:
			c = clsRow // a value per column: a bias [N]
		case slices.Equal(lead, outLead) && slices.Equal(p.shape, out.shape):
			c = clsFull
		}
	} else {
		lead, _ := g.leadIndices(p, idx)
		switch {
		case isZero(lead):
			c = clsScalar
		case slices.Equal(lead, outLead) && numElements(p.shape) == numElements(out.shape[:len(out.shape)-1]):
			c = clsCol // a value per row: [M, 1] or [M]
		}
	}
	if c == clsConst {
		g.fail(l.Operation, "reads '%s' in a matmul epilogue with its rows or columns mapped to others (a broadcast or a view); the backend reads operands at the result's element, row or column", p.name)
	}
	if p.seen && p.access != c {
		g.fail(l.Operation, "accesses '%s' both as %s and as %s tiles", p.name, p.access, c)
	}
	p.seen, p.access = true, c
	cb := g.newCB("cb_"+p.name, p.fmt, 2, fmt.Sprintf("%s tiles of %s, for the epilogue", c, p.name))
	cv := &cbValue{cb: cb, index: "0", cls: c}
	e.loads[l.Result(0)] = cv
	e.loadOrder = append(e.loadOrder, mmLoad{p: p, cv: cv})
	return &node{kind: nLeaf, cls: c, leaf: cv}
}

// numElements is the product of a static shape's extents.
func numElements(shape []int64) int64 {
	n := int64(1)
	for _, e := range shape {
		n *= e
	}
	return n
}
