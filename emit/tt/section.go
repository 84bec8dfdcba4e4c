package tt

import (
	"fmt"
	"math"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// This file turns the ops of one block (the grid body, or the body of a
// loop over the row) into statements of the three kernels: reads and
// writes of tiles, and compute sections. A section is one
// tile_regs_acquire ... tile_regs_release: an expression tree evaluated in
// DST and packed into one or more circular buffers.
//
// A value gets a circular buffer of its own (it is "materialized") when
// the tile must outlive the section computing it: it has several users, a
// user in another block (a per-row value the loop over the row reads),
// a user of a wider class (a per-row value broadcast over a full tile
// needs unary_bcast from a circular buffer), or it is stored, or it is a
// rounding to bf16 (the packer rounds) or a conversion to ui8 or i8 (the
// packer writes the low byte of the integer typecast_tile leaves in DST).
// Everything else is computed inline in the tree of its one user.

// stmt is a statement of the kernels.
type stmt interface{ isStmt() }

// loopStmt is the loop over the Ct column tiles of a row block (a threads
// loop of the loop IR). before and after are waits and pops the compute
// kernel does around it.
type loopStmt struct {
	op *ir.Operation
	// kt, when set, makes it the loop over the Kt tiles along K of a
	// matmul (the reader's; the compute kernel's is in its section).
	kt            int64
	body          []stmt
	before, after []cbOp
	// lo and hi are the column tiles [lo, hi) the loop covers (C++
	// expressions): "0" and "Ct" for the whole row, constants for a
	// stretch of a row cut by a graph.roll or a concat (tileRange).
	lo, hi string
}

// header is the C++ for header of the loop over column tiles.
func (s *loopStmt) header() string {
	lo, hi := s.lo, s.hi
	if lo == "" {
		lo = "0"
	}
	if hi == "" {
		hi = "Ct"
	}
	return fmt.Sprintf("for (uint32_t ct = %s; ct < %s; ++ct)", lo, hi)
}

// cbOp is cb_wait_front (or cb_pop_front when pop) of n pages.
type cbOp struct {
	cb  *cbuf
	n   string
	pop bool
}

// cbStmt is a list of waits and pops of the compute kernel.
type cbStmt struct {
	ops     []cbOp
	comment string
}

// sectionStmt computes tree in DST and packs it into dests.
type sectionStmt struct {
	comment string
	tree    *node
	dests   []*cbuf
	// waits come before tile_regs_acquire, pops after tile_regs_commit
	// (before the dests are reserved, so a one-page buffer read and
	// written by the section never blocks).
	waits, pops []cbOp
	reads       []*cbValue
	// mm is the matmul whose dot products (the tree's nDot nodes) the
	// section accumulates first.
	mm *mmPlan
}

// readStmt is a tile the reader kernel reads from a buffer into cb; off
// shifts the column tile it reads by whole tiles (param.tileExprAt).
type readStmt struct {
	p   *param
	cb  *cbuf
	off int64
	// rowMap is the row of p that row r of the kernel reads, where the
	// reader gathers the tile's rows ("" for p's own tiles; loads of one
	// buffer through different views each have theirs)
	rowMap string
	// tile, when set, is the tile the reader reads whole for a load
	// whose row map moves whole tiles (mappedTile)
	tile string
}

// writeStmt is a tile the writer kernel writes from cb into a buffer.
type writeStmt struct {
	p  *param
	cb *cbuf
}

func (*loopStmt) isStmt()    {}
func (*cbStmt) isStmt()      {}
func (*sectionStmt) isStmt() {}
func (*readStmt) isStmt()    {}
func (*writeStmt) isStmt()   {}

// nodeKind is the kind of a tree node.
type nodeKind uint8

const (
	nLeaf   nodeKind = iota // a tile in a circular buffer
	nConst                  // a constant
	nOp                     // an element-wise op
	nReduce                 // reduce_tile of an accumulator tile over its row
	nMask                   // the operand, with the columns past C of the last column tile set to c
	nDot                    // a dot product of a matmul, accumulated in a DST tile by matmul_tiles
)

// node is a node of an expression tree.
type node struct {
	kind nodeKind
	cls  class
	val  *ir.Value // the loop IR value (nOp)
	leaf *cbValue
	c    float64
	// op is the loop op name, or "isnan" / "notnan" (cmp ne / eq of a
	// value with itself).
	op     string
	pred   string
	approx bool
	args   []*node
	// fpu is the FPU form of add, sub and mul with both operands in
	// circular buffers: "plain", "rows", "cols" or "scalar" (the
	// broadcast of the second operand); "" computes on the SFPU.
	fpu string
	red string // nReduce: add, max or min
	// castFrom and castTo are the typecast_tile formats of a "typecast"
	// (Float32 to UInt8 or Int8, or back).
	castFrom, castTo string
	// dot is the dot product of an nDot.
	dot *mmDot
}

// describe spells the tree for a comment: rsqrt(add(div(sum(acc), 64), 1e-05)).
func (n *node) describe() string {
	switch n.kind {
	case nLeaf:
		return n.leaf.cb.name
	case nConst:
		return floatComment(n.c)
	case nReduce:
		return "row_" + n.red + "(" + n.leaf.cb.name + ")"
	case nMask:
		return "mask(" + n.args[0].describe() + ")"
	case nDot:
		return "matmul(" + n.dot.b.name + ")"
	}
	if n.op == "typecast" {
		return "typecast<" + n.castFrom + ", " + n.castTo + ">(" + n.args[0].describe() + ")"
	}
	parts := make([]string, len(n.args))
	for i, a := range n.args {
		parts[i] = a.describe()
	}
	name := strings.TrimPrefix(n.op, "loop.")
	if n.pred != "" {
		name += "_" + n.pred
	}
	return name + "(" + strings.Join(parts, ", ") + ")"
}

// scope builds the statements of block b; loopOp is the threads loop
// whose body b is (nil for the grid body).
func (g *kgen) scope(b *ir.Block, loopOp *ir.Operation) []stmt {
	var out []stmt
	for _, op := range b.Ops() {
		name := op.Name()
		switch {
		case name == loop.OpConst, indexOps[name], name == loop.OpAlloc, isAlias(op):
		case name == loop.OpYield:
			if loopOp != nil {
				out = append(out, g.accUpdates(op, loopOp, b)...)
			}
		case name == loop.OpLoad:
			out = append(out, g.load(op, b, loopOp)...)
		case name == loop.OpStore:
			out = append(out, g.store(op, b)...)
		case name == loop.OpFor:
			f, _ := loop.AsFor(op)
			if !isTail(f) {
				out = append(out, g.forLoop(f, b)...)
			}
		case op.NumResults() == 1 && g.info[op.Result(0)].accUpdate:
		default:
			if v := op.Result(0); g.isRoot(v) {
				out = append(out, g.materialize(v, b)...)
			}
		}
	}
	return out
}

// blockOf is the block a value is defined in.
func blockOf(v *ir.Value) *ir.Block {
	if op := v.DefiningOp(); op != nil {
		return op.Block()
	}
	return v.OwnerBlock()
}

// isRoot reports whether value v gets a circular buffer of its own.
func (g *kgen) isRoot(v *ir.Value) bool {
	op := v.DefiningOp()
	inf := g.info[v]
	if op == nil || inf == nil || inf.base != v || len(inf.users) == 0 {
		return false
	}
	switch op.Name() {
	case loop.OpConst, loop.OpLoad, loop.OpFor:
		return false
	}
	if _, ok := isNarrowing(op); ok {
		return true
	}
	if isToInt(op) {
		return true
	}
	if len(inf.users) != 1 {
		return true
	}
	u := inf.users[0]
	if u.Block() != op.Block() {
		return true
	}
	switch u.Name() {
	case loop.OpStore, loop.OpYield:
		return true
	}
	if u.NumResults() == 1 {
		uc := g.info[u.Result(0)].cls
		if uc != inf.cls && join(inf.cls, uc) == uc {
			return true // broadcast: from a circular buffer only
		}
	}
	return false
}

// load handles a loop.load: a tile the reader streams, or a tile of a kept
// row.
func (g *kgen) load(op *ir.Operation, b *ir.Block, loopOp *ir.Operation) []stmt {
	l, _ := loop.AsLoad(op)
	v := op.Result(0)
	inf := g.info[v]
	if len(inf.users) == 0 {
		return nil // nothing reads it: the reader skips it too
	}
	if p := g.byArg[l.Memref()]; p != nil {
		// every load is a stream of its own; a load at a column shifted by
		// whole tiles (a graph.roll by 64: q[ct + 2]) is one too. A buffer
		// read both straight and shifted (q * cos and rotate_half(q) * sin)
		// is read from DRAM once per row block into a row cache, which
		// feeds its streams (planRowCaches)
		off := g.colOff[op]
		name, what := "cb_"+p.name, ""
		if off != 0 {
			name = fmt.Sprintf("cb_%s_%s%d", p.name, map[bool]string{true: "plus", false: "minus"}[off > 0], max(off, -off))
			what = " at column tile " + colTileExpr(off)
		}
		rowMap := g.rowMaps[op]
		cb := g.newCB(name, p.fmt, 2, fmt.Sprintf("%s tiles of %s%s, from the reader", describeAccess(p.access, rowMap), p.name, what))
		tile := ""
		if rowMap != "" {
			tile = g.mappedTile(p, l.Indices(), rowMap, off)
		}
		if tile != "" {
			rowMap = "" // whole tiles of p: no gather
		}
		if rowMap != "" && p.scratch == nil {
			p.scratch = g.newCB("cb_"+p.name+"_src", p.fmt, 1, fmt.Sprintf("the reader's copy of a tile of %s, whose rows it gathers", p.name))
		}
		inf.cbv = &cbValue{cb: cb, index: "0", cls: inf.cls, scope: b}
		return []stmt{&readStmt{p: p, cb: cb, off: off, rowMap: rowMap, tile: tile}}
	}
	sb := g.sram[l.Memref()]
	if sb == nil || loopOp == nil {
		g.fail(op, "reads a buffer that is neither a parameter nor a kept row")
	}
	ph, _ := g.sramMode(sb, loopOp)
	if ph.write {
		// read and overwritten tile by tile: the front tile, popped once
		// read, its replacement pushed at the back
		inf.cbv = &cbValue{cb: sb.cb, index: "0", cls: clsFull, scope: b}
	} else {
		// read whole: waited for before the loop, tile ct of the front
		inf.cbv = &cbValue{cb: sb.cb, index: "ct", cls: clsFull}
	}
	return nil
}

// storeDest is the circular buffer a store's tile is packed into, and the
// writer's statement for a DRAM store.
func (g *kgen) storeDest(op *ir.Operation) (*cbuf, []stmt) {
	s, _ := loop.AsStore(op)
	if p := g.byArg[s.Memref()]; p != nil {
		cb := g.storeCB[op]
		if cb == nil {
			cb = g.newCB("cb_"+p.name, p.fmt, 2, fmt.Sprintf("%s tiles of %s, to the writer", p.access, p.name))
			g.storeCB[op] = cb
		}
		return cb, []stmt{&writeStmt{p: p, cb: cb}}
	}
	sb := g.sram[s.Memref()]
	if sb == nil {
		g.fail(op, "stores to a buffer that is neither a parameter nor a kept row")
	}
	return sb.cb, nil
}

// store handles a loop.store whose value no section packs directly: a
// loaded tile, a constant or a value of an outer block, copied.
func (g *kgen) store(op *ir.Operation, b *ir.Block) []stmt {
	s, _ := loop.AsStore(op)
	base := g.info[s.Value()].base
	if g.isRoot(base) && blockOf(base) == b {
		return nil // packed where it is computed
	}
	dest, after := g.storeDest(op)
	tree := g.operand(base)
	out := g.section(tree, []*cbuf{dest}, b, "store "+tree.describe())
	return append(out, after...)
}

// materialize computes root value v in a section packing it into a
// circular buffer of its own (when read again) and into the buffers of
// the stores of v in the same block.
func (g *kgen) materialize(v *ir.Value, b *ir.Block) []stmt {
	inf := g.info[v]
	op := v.DefiningOp()
	f := float32Format
	if nf, ok := isNarrowing(op); ok {
		f = nf
	}
	if isToInt(op) {
		f = uint8Format
	}
	var dests []*cbuf
	var after []stmt
	own := false
	for _, u := range inf.users {
		if u.Name() == loop.OpStore && u.Block() == b && u.Operand(0) != nil && g.info[u.Operand(0)].base == v {
			cb, w := g.storeDest(u)
			dests = append(dests, cb)
			after = append(after, w...)
			continue
		}
		own = true
	}
	tree := g.tree(v)
	if own {
		name := "cb_" + cIdent(v.Name, "im")
		cb := g.newCB(name, f, 1, fmt.Sprintf("%s tile of %s", inf.cls, tree.describe()))
		dests = append([]*cbuf{cb}, dests...)
	}
	out := g.section(tree, dests, b, tree.describe())
	if own {
		inf.cbv = &cbValue{cb: dests[0], index: "0", cls: inf.cls, scope: b}
	}
	return append(out, after...)
}

// tree is the expression computing value v, its operands inlined unless
// they are in circular buffers.
func (g *kgen) tree(v *ir.Value) *node {
	op := v.DefiningOp()
	if _, ok := isNarrowing(op); ok {
		return g.operand(op.Operand(0))
	}
	n := &node{kind: nOp, cls: g.info[v].cls, val: v, op: op.Name()}
	if from, to, _, ok := intCast(op); ok {
		// the conversion happens in DST, between the f32 the SFPU computes
		// on and the integer the UInt8 tiles hold
		n.op, n.castFrom, n.castTo = "typecast", typecastFormat(from), typecastFormat(to)
		n.args = []*node{g.operand(op.Operand(0))}
		return n
	}
	switch op.Name() {
	case loop.OpReduce:
		r, _ := loop.AsReduce(op)
		acc := g.info[r.Input()]
		if acc.cbv == nil || r.Input().DefiningOp() == nil || r.Input().DefiningOp().Name() != loop.OpFor {
			g.fail(op, "reduces a vector that is not the result of a loop over the row")
		}
		if want := g.accKind[r.Input()]; want != r.Kind() {
			g.fail(op, "reduces with '%s' an accumulator combined with '%s'", r.Kind(), want)
		}
		g.needScaler()
		return &node{kind: nReduce, cls: clsCol, leaf: acc.cbv, red: r.Kind()}
	case loop.OpCmp:
		c, _ := loop.AsCmp(op)
		n.pred = c.Predicate()
		if g.info[c.Lhs()].base == g.info[c.Rhs()].base && (n.pred == "ne" || n.pred == "eq") {
			// x != x is isnan(x)
			n.op = map[string]string{"ne": "isnan", "eq": "notnan"}[n.pred]
			n.pred = ""
			n.args = []*node{g.operand(c.Lhs())}
			return n
		}
	case loop.OpGelu:
		gl, _ := loop.AsGelu(op)
		n.approx = gl.Approximate() == "tanh"
	}
	for _, a := range op.Operands() {
		n.args = append(n.args, g.operand(a))
	}
	g.planFPU(n)
	return n
}

// operand is the node for an operand: a constant, a tile in a circular
// buffer, or the operand's own tree.
func (g *kgen) operand(a *ir.Value) *node {
	base := g.info[a].base
	inf := g.info[base]
	if c, ok := constFloat(base); ok {
		return &node{kind: nConst, cls: clsConst, c: c}
	}
	if f := g.accFinal[base]; f != nil {
		// a scalar loop over the row: its result is the reduced row
		g.needScaler()
		return &node{kind: nReduce, cls: clsCol, leaf: f, red: g.accKind[base]}
	}
	if inf.cbv != nil {
		return &node{kind: nLeaf, cls: inf.cls, leaf: inf.cbv}
	}
	if base.DefiningOp() == nil || g.isRoot(base) {
		g.internal(base.DefiningOp(), "uses a value before the tile holding it is made")
	}
	return g.tree(base)
}

// forLoop handles a threads loop: the accumulators it carries are set
// before it, its body becomes the loop over the column tiles, and the
// kept rows it reads whole are waited for around it.
func (g *kgen) forLoop(f loop.ForOp, b *ir.Block) []stmt {
	lop := f.Operation
	var pre []stmt
	combine := combineKinds(lop)
	var accs []*cbuf
	for j, init := range f.Inits() {
		c, ok := constFloat(init)
		if !ok {
			g.fail(lop, "carries a value that does not start from a constant")
		}
		if j >= len(combine) {
			g.fail(lop, "carries a value without a combine kind")
		}
		if combine[j] == "min" {
			c = -c // a min accumulates -x with max (reduce_tile has no MIN)
		}
		acc := g.newCB("cb_acc", float32Format, 1, fmt.Sprintf("the %s accumulator tile of a loop over the row", combine[j]))
		accs = append(accs, acc)
		pre = append(pre, g.section(&node{kind: nConst, cls: clsConst, c: c}, []*cbuf{acc}, b, "start "+acc.name+" at "+floatComment(c))...)
	}
	g.accCBs[lop] = accs
	body := g.deferInPlace(f.Body().Entry(), g.scope(f.Body().Entry(), lop))
	g.placeWaits(f.Body().Entry(), body)
	for j, r := range f.Values() {
		final := &cbValue{cb: accs[j], index: "0", cls: clsFull, scope: b}
		g.accKind[r] = combine[j]
		if _, vec := r.Type().(ir.VectorType); vec {
			g.info[r].cbv = final
		} else {
			g.accFinal[r] = final
		}
	}
	if g.perTile {
		return append(pre, body...)
	}
	ls := &loopStmt{op: lop, body: body}
	ls.lo, ls.hi = g.tileRange(f)
	for _, sb := range g.sramList() {
		ph, i := g.sramMode(sb, lop)
		if i < 0 || !ph.read || ph.write {
			continue
		}
		ls.before = append(ls.before, cbOp{cb: sb.cb, n: "Ct"})
		if i+1 == len(sb.phases) || !sb.phases[i+1].read {
			ls.after = append(ls.after, cbOp{cb: sb.cb, n: "Ct", pop: true})
		}
	}
	return append(pre, ls)
}

// combineKinds is the combine attribute of a threads loop.
func combineKinds(op *ir.Operation) []string {
	arr, _ := op.Attr("combine").(ir.ArrayAttr)
	out := make([]string, len(arr))
	for i, a := range arr {
		s, _ := a.(ir.StringAttr)
		out[i] = string(s)
	}
	return out
}

// accUpdates writes, at the loop.yield of a threads loop, the combine of
// each accumulator with this tile's contribution: acc = acc + x (or max,
// or max with -x for a min), the contribution masked to the identity past
// the row's end.
func (g *kgen) accUpdates(yield, lop *ir.Operation, b *ir.Block) []stmt {
	accs := g.accCBs[lop]
	combine := combineKinds(lop)
	carried := b.Args[1:]
	var out []stmt
	for j, y := range yield.Operands() {
		op := y.DefiningOp()
		want := map[string]string{"add": loop.OpAdd, "max": loop.OpMax, "min": loop.OpMin}[combine[j]]
		if op == nil || op.Name() != want || op.Block() != b {
			g.fail(lop, "carries a value not updated by '%s' of itself and the row's tile", want)
		}
		var x *ir.Value
		switch {
		case op.Operand(0) == carried[j]:
			x = op.Operand(1)
		case op.Operand(1) == carried[j]:
			x = op.Operand(0)
		default:
			g.fail(op, "updates an accumulator from something other than itself")
		}
		if len(carried[j].Uses()) != 1 {
			g.fail(op, "reads an accumulator inside the loop over the row")
		}
		contrib := g.operand(x)
		identity := 0.0
		if combine[j] != "add" {
			identity = math.Inf(-1)
		}
		if combine[j] == "min" {
			contrib = &node{kind: nOp, cls: clsFull, op: loop.OpNeg, args: []*node{contrib}}
		}
		if g.mask != nil {
			contrib = &node{kind: nMask, cls: clsFull, c: identity, args: []*node{contrib}}
		}
		accLeaf := &cbValue{cb: accs[j], index: "0", cls: clsFull}
		comb := loop.OpAdd
		if combine[j] != "add" {
			comb = loop.OpMax
		}
		tree := &node{kind: nOp, cls: clsFull, op: comb, args: []*node{{kind: nLeaf, cls: clsFull, leaf: accLeaf}, contrib}}
		secs := g.section(tree, []*cbuf{accs[j]}, b, accs[j].name+" = "+tree.describe())
		last := secs[len(secs)-1].(*sectionStmt)
		last.waits = append(last.waits, cbOp{cb: accs[j], n: "1"})
		last.pops = append(last.pops, cbOp{cb: accs[j], n: "1", pop: true})
		out = append(out, secs...)
	}
	return out
}

// section makes the statements computing tree into dests: first the
// sections of subtrees too big for DST, then the tree's own.
func (g *kgen) section(tree *node, dests []*cbuf, b *ir.Block, comment string) []stmt {
	var out []stmt
	for need(tree) > dstTiles {
		sub := biggestSubtree(tree)
		if sub == nil {
			g.fail(nil, "has an expression that needs more than %d DST tiles", dstTiles)
		}
		cb := g.newCB("cb_im", float32Format, 1, fmt.Sprintf("%s tile of %s (split for DST)", sub.cls, sub.describe()))
		moved := *sub
		out = append(out, g.section(&moved, []*cbuf{cb}, b, sub.describe()+" (split)")...)
		*sub = node{kind: nLeaf, cls: sub.cls, leaf: &cbValue{cb: cb, index: "0", cls: sub.cls, scope: b}}
	}
	s := &sectionStmt{comment: comment, tree: tree, dests: dests}
	var collect func(n *node)
	collect = func(n *node) {
		if (n.kind == nLeaf || n.kind == nReduce) && n.leaf.scope != nil {
			s.reads = append(s.reads, n.leaf)
		}
		for _, a := range n.args {
			collect(a)
		}
	}
	collect(tree)
	return append(out, s)
}

// need is the number of DST tiles evaluating n takes.
func need(n *node) int {
	switch n.kind {
	case nLeaf, nConst, nReduce, nDot:
		return 1
	case nMask:
		return max(need(n.args[0]), 3)
	}
	if n.fpu != "" {
		return 1
	}
	if other, _, ok := scalarOperand(n); ok {
		return need(other)
	}
	switch len(n.args) {
	case 1:
		return need(n.args[0])
	case 2:
		a, b := need(n.args[0]), need(n.args[1])
		if a == b {
			return a + 1
		}
		return max(a, b)
	}
	ns := []int{need(n.args[0]), need(n.args[1]), need(n.args[2])}
	for i := 0; i < 3; i++ {
		for j := i + 1; j < 3; j++ {
			if ns[j] > ns[i] {
				ns[i], ns[j] = ns[j], ns[i]
			}
		}
	}
	return max(ns[0], ns[1]+1, ns[2]+2)
}

// biggestSubtree is the operand subtree of n (searching down the
// operands that need the most) to compute in a section of its own.
func biggestSubtree(n *node) *node {
	var best *node
	for _, a := range n.args {
		if a.kind == nOp && a.fpu == "" && (best == nil || need(a) > need(best)) {
			best = a
		}
	}
	if best == nil {
		for _, a := range n.args {
			if s := biggestSubtree(a); s != nil {
				return s
			}
		}
	}
	return best
}

// scalarOperand finds the constant operand of a binary op the SFPU takes
// as a parameter: x + c, c + x, x - c, c - x (rsub), x * c, c * x, x / c
// and x ** c. It returns the other operand and the constant.
func scalarOperand(n *node) (*node, float64, bool) {
	if n.kind != nOp || len(n.args) != 2 || n.fpu != "" {
		return nil, 0, false
	}
	a, b := n.args[0], n.args[1]
	switch n.op {
	case loop.OpAdd, loop.OpMul, loop.OpSub:
		if b.kind == nConst {
			return a, b.c, true
		}
		if a.kind == nConst {
			return b, a.c, true
		}
	case loop.OpDiv:
		// div_unary_tile multiplies by a reciprocal: exact only when the
		// divisor is a power of two; otherwise div_binary_tile divides
		// (correctly rounded in f32) by a filled tile
		if b.kind == nConst && exactReciprocal(b.c) {
			return a, b.c, true
		}
	case loop.OpPow:
		if b.kind == nConst {
			return a, b.c, true
		}
	}
	return nil, 0, false
}

// exactReciprocal reports whether 1/c is an f32 without rounding: c is a
// power of two whose reciprocal is in range.
func exactReciprocal(c float64) bool {
	if c == 0 || math.IsInf(c, 0) || math.IsNaN(c) {
		return false
	}
	frac, _ := math.Frexp(c)
	r := 1 / c
	return math.Abs(frac) == 0.5 && float64(float32(r)) == r && !math.IsInf(float64(float32(r)), 0)
}

// planFPU picks the FPU for add, sub and mul of two tiles in circular
// buffers: the first operand through srcA must be a 16-bit tile (srcA
// and srcB hold 19 bits of a Float32 tile, TF32); the second may be a
// Float32 broadcast tile when the result is rounded to bf16 or f16 before
// anything else reads it, so the 10-bit mantissa of srcB stays below the
// result's rounding. Otherwise the SFPU computes in f32.
func (g *kgen) planFPU(n *node) {
	if len(n.args) != 2 || (n.op != loop.OpAdd && n.op != loop.OpSub && n.op != loop.OpMul) {
		return
	}
	a, b := n.args[0], n.args[1]
	if a.kind != nLeaf || b.kind != nLeaf {
		return
	}
	if a.cls != n.cls && b.cls == n.cls && n.op != loop.OpSub {
		a, b = b, a
	}
	if a.cls != n.cls || !a.leaf.cb.fmt.exact16() {
		return
	}
	form := "plain"
	switch {
	case b.cls == n.cls:
	case b.cls == clsScalar:
		form = "scalar"
	case b.cls == clsRow && n.cls == clsFull:
		form = "rows"
	case b.cls == clsCol && n.cls == clsFull:
		form = "cols"
	default:
		return
	}
	if !b.leaf.cb.fmt.exact16() && (form == "plain" || !g.roundsTo16(n.val, 0)) {
		return
	}
	n.args[0], n.args[1] = a, b
	n.fpu = form
}

// roundsTo16 reports whether every use of v ends, through element-wise
// ops, in a rounding to bf16 or f16.
func (g *kgen) roundsTo16(v *ir.Value, depth int) bool {
	inf := g.info[v]
	if v == nil || inf == nil || depth > 8 || len(inf.users) == 0 {
		return false
	}
	for _, u := range inf.users {
		if _, ok := isNarrowing(u); ok {
			continue
		}
		if !elementwise[u.Name()] || u.Name() == loop.OpCmp || !g.roundsTo16(u.Result(0), depth+1) {
			return false
		}
	}
	return true
}

// deferInPlace makes sure a kept row overwritten tile by tile gets its
// replacement tile only once the tile it replaces is read for the last
// time: the row's buffer holds the row and no more, so the section
// pushing the replacement must come no earlier than the one popping the
// front tile (checkInPlace). Sections follow the ops, and a value stored
// into the row may be computed before other values that read the old
// tile (x - max stored in place, while logaddexp(min, x) of the same tile
// still reads x); such a section packs into a tile of its own instead,
// copied into the row after the last section reading the old tile.
func (g *kgen) deferInPlace(b *ir.Block, stmts []stmt) []stmt {
	lastRead := map[*cbuf]int{}
	for i, s := range stmts {
		if sec, ok := s.(*sectionStmt); ok {
			for _, v := range sec.reads {
				if v.scope == b && g.isSram(v.cb) {
					lastRead[v.cb] = i
				}
			}
		}
	}
	copies := map[int][]stmt{}
	for i, s := range stmts {
		sec, ok := s.(*sectionStmt)
		if !ok {
			continue
		}
		for j, d := range sec.dests {
			last, inPlace := lastRead[d]
			if !inPlace || last <= i {
				continue
			}
			tmp := g.newCB(d.name+"_next", d.fmt, 1, fmt.Sprintf("the tile replacing the front of %s, until the front is read for the last time", d.name))
			sec.dests[j] = tmp
			v := &cbValue{cb: tmp, index: "0", cls: clsFull, scope: b}
			copies[last] = append(copies[last], &sectionStmt{comment: "store " + tmp.name,
				tree: &node{kind: nLeaf, cls: clsFull, leaf: v}, dests: []*cbuf{d}, reads: []*cbValue{v}})
		}
	}
	if len(copies) == 0 {
		return stmts
	}
	var out []stmt
	for i, s := range stmts {
		out = append(out, s)
		out = append(out, copies[i]...)
	}
	return out
}

// placeWaits places, in the statements of block b, the wait before the
// first statement reading each tile produced in b and the pop after the
// last one.
func (g *kgen) placeWaits(b *ir.Block, stmts []stmt) {
	type span struct{ first, last int }
	spans := map[*cbValue]*span{}
	var order []*cbValue
	var reads func(s stmt, fn func(*cbValue))
	reads = func(s stmt, fn func(*cbValue)) {
		switch s := s.(type) {
		case *sectionStmt:
			for _, v := range s.reads {
				fn(v)
			}
		case *loopStmt:
			for _, t := range s.body {
				reads(t, fn)
			}
		}
	}
	for i, s := range stmts {
		reads(s, func(v *cbValue) {
			if v.scope != b {
				return
			}
			if sp := spans[v]; sp != nil {
				sp.last = i
				return
			}
			spans[v] = &span{i, i}
			order = append(order, v)
		})
	}
	for _, v := range order {
		sp := spans[v]
		wait, pop := cbOp{cb: v.cb, n: "1"}, cbOp{cb: v.cb, n: "1", pop: true}
		switch s := stmts[sp.first].(type) {
		case *sectionStmt:
			s.waits = append(s.waits, wait)
		case *loopStmt:
			s.before = append(s.before, wait)
		}
		switch s := stmts[sp.last].(type) {
		case *sectionStmt:
			s.pops = append(s.pops, pop)
		case *loopStmt:
			s.after = append(s.after, pop)
		}
	}
	g.checkInPlace(stmts)
}

// checkInPlace checks that a kept row overwritten tile by tile is popped
// no later than the section pushing its replacement: the buffer is full.
func (g *kgen) checkInPlace(stmts []stmt) {
	inPlace := map[*cbuf]bool{}
	for _, s := range stmts {
		if sec, ok := s.(*sectionStmt); ok {
			for _, v := range sec.reads {
				if g.isSram(v.cb) {
					inPlace[v.cb] = true
				}
			}
		}
	}
	popped := map[*cbuf]bool{}
	for _, s := range stmts {
		sec, ok := s.(*sectionStmt)
		if !ok {
			continue
		}
		for _, p := range sec.pops {
			popped[p.cb] = true
		}
		for _, d := range sec.dests {
			if inPlace[d] && !popped[d] {
				g.internal(nil, "overwrites its kept row (%s) before it is done reading the tile", d.name)
			}
		}
	}
}

// isSram reports whether cb holds a kept row.
func (g *kgen) isSram(cb *cbuf) bool {
	for _, sb := range g.sram {
		if sb.cb == cb {
			return true
		}
	}
	return false
}

// needScaler makes the circular buffer of the reduce_tile scaler, a tile
// the reader fills once.
func (g *kgen) needScaler() {
	if g.scaler == nil {
		g.scaler = g.newCB("cb_scaler", float16bFormat, 1, "the reduce_tile scaler (1.0), from the reader")
	}
}

// mappedTile is, for a load of p whose rows come from other rows of p
// through rowMap, the C++ index of the tile the reader reads whole when
// the map moves whole tiles: the kernel's rows are whole row blocks
// (static, a multiple of 32), and each row block's 32 rows map to the 32
// rows of one tile row of p, in order (a slice of leading dimensions by
// whole matrices of whole tiles, grouped-query attention's expand of
// keys of whole tiles of tokens). "" otherwise: the reader gathers.
func (g *kgen) mappedTile(p *param, idx []*ir.Value, rowMap string, off int64) string {
	if p.access != clsFull || g.rows.Const == nil {
		return ""
	}
	rows := *g.rows.Const
	if rows <= 0 || rows%TileRows != 0 || rows > 1<<22 {
		return ""
	}
	lead, hasCol := g.leadIndices(p, idx)
	if !hasCol || len(lead) == 0 {
		return ""
	}
	n := len(idx) - 1
	src := int64(1)
	for _, d := range p.shape[:n] {
		src *= d
	}
	for r := int64(0); r < rows; r++ {
		base, ok := g.rowAt(p, idx[:n], r-r%TileRows)
		if !ok || base%TileRows != 0 {
			return ""
		}
		v, ok := g.rowAt(p, idx[:n], r)
		if !ok || v != base+r%TileRows || v < 0 || v >= src {
			return ""
		}
	}
	col := "ct"
	if off != 0 {
		col = colTileExpr(off)
	}
	return fmt.Sprintf("[&](uint32_t r) { return %s; }(rb * %du) / %du * %du + %s", rowMap, TileRows, TileRows, p.rowTiles(), col)
}

// rowAt is the row of p's matrix that row r of the kernel reads at the
// leading indices idx, as rowMapOf spells it; ok is false where an index
// is not arithmetic on r and constants.
func (g *kgen) rowAt(p *param, idx []*ir.Value, r int64) (int64, bool) {
	row, stride := int64(0), int64(1)
	for d := len(idx) - 1; d >= 0; d-- {
		x, ok := g.indexAt(idx[d], r)
		if !ok {
			return 0, false
		}
		row += x * stride
		stride *= p.shape[d]
	}
	return row, true
}

// indexAt evaluates an index of the grid body at the kernel's row r, as
// indexExpr spells it.
func (g *kgen) indexAt(v *ir.Value, r int64) (int64, bool) {
	row := g.grid.Body().Entry().Args[0]
	return loop.EvalIndex(v, func(x *ir.Value) (int64, bool) { return r, x == row })
}
