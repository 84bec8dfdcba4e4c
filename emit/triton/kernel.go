package triton

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// ---------------------------------------------------------------------------
// Kernels
//
// A loop.kernel becomes one @triton.jit function whose parameters are the
// kernel's block arguments (a pointer per buffer, an integer per dynamic
// extent) and the constexprs of its form:
//
//	loop.kernel {kind = "row", sym_name = "f_k0", ...} {
//	^bb0(%x: memref<?x64xf32, dram>, %y: memref<?x64xf32, dram>, %x_d0: index, %y_d0: index):
//
// becomes
//
//	@triton.jit
//	def f_k0(x, y, x_d0, y_d0, BLOCK: tl.constexpr, ROWS: tl.constexpr):
//
// The launch grid (the one loop.parallel) is tl.program_id(0); what a
// loop of the loop IR spreads over the threads of an instance
// (dist = "threads") becomes an operation on a whole block of Triton
// values, cols = tl.arange(0, BLOCK), whatever the vector width W of the
// loop IR: Triton picks its own vectors. Values are classified by what
// they vary with (level): uniform values are Python or Triton scalars,
// values of a row are scalars (or [ROWS, 1] tensors), values along a row
// are [BLOCK] (or [ROWS, BLOCK]) tensors.

// level says what a value varies with inside one program.
type level uint8

const (
	lvUniform level = iota // the same in every program: arguments, constants
	lvRow                  // one value per row (grid iteration)
	lvBlock                // one value per element of a block
)

// blockCtx is the block being computed: the column of each lane and the
// masks of accesses along it.
type blockCtx struct {
	cols  string // the column (or flat offset) of each lane
	mask  string // the mask of a block-level access ("" when every lane is in range)
	cmask string // the column mask alone ("" when every column is in range)
	// width is the number of columns of a stretch's block (0: BLOCK)
	width int64
}

// scratchRow is a row an sram buffer keeps: the value stored and the loop
// storing it, and in a one-block kernel the tensor holding it.
type scratchRow struct {
	value *ir.Value
	loop  *ir.Operation
	name  string
}

// kernelEmitter translates one loop.kernel.
type kernelEmitter struct {
	// atEnd writes what goes at the end of the grid's body, after every
	// op (a group sync's departure)
	atEnd []func()
	op    loop.KernelOp
	name  string
	plan  *kernelPlan
	body  *ir.Block
	w     *pyWriter
	names *namer
	uses  map[string]bool // module helpers the kernel calls
	// part is set for a part of a kernel of several (horizontal.go): the
	// function takes its program id as the argument pid.
	part bool
	pid  string

	params []string
	// extents gives, per buffer argument, the Python spelling of each
	// extent: a literal or the extent parameter.
	extents map[*ir.Value][]string
	env     map[*ir.Value]string
	// subst overrides env while a loop of a looped kernel recomputes a
	// kept row; rematting makes emitOp bind there.
	subst     map[*ir.Value]string
	rematting bool
	level     map[*ir.Value]level
	// rowDep marks the values computed from the grid's induction variable.
	rowDep  map[*ir.Value]bool
	emitted map[*ir.Operation]bool
	scratch map[*ir.Value]*scratchRow
	// scratchAt is the row each sram load reads: the last store before it
	// (a buffer may be stored again by a later loop).
	scratchAt map[*ir.Operation]*scratchRow
	// loads caches the loads of the current straight-line scope by
	// address, so a row read twice is read once.
	loads map[string]string
	// offs is the name of the flat offsets of a flat kernel, total the
	// parameter holding its number of elements; rmask the mask of the rows
	// of a program of several rows.
	offs, total, rmask string
	// reduced maps each result of a threads loop to its combine kind.
	reduced map[*ir.Value]string
	blk     *blockCtx
	// stretch is the block of each stretch of a kernel cut into stretches.
	stretch map[*ir.Operation]*blockCtx
	// colSpan is the first column and width of each stretch's columns,
	// by name; colAt the name of the columns of a first column and width.
	colSpan map[string][2]int64
	colAt   map[[2]int64]string
	// cg marks, in a kernel that holds a loop.group_sync, the DRAM buffers
	// it stores: its loads of them bypass L1 (cache_modifier=".cg"), which
	// is not coherent with the stores of the group's other programs.
	cg map[*ir.Value]bool
	// evict is the eviction policy of the DRAM loads and stores emitted
	// now: "evict_last" in the first pass of an online row kernel, whose
	// row is read again, "evict_first" in its backward second pass.
	evict string
}

// kernelError is an error at an op of the kernel.
func kernelError(op *ir.Operation, format string, args ...any) error {
	return ir.OpError(op, "cannot be translated to Triton: "+format, args...)
}

func newKernelEmitter(k loop.KernelOp, name string, p *kernelPlan, uses map[string]bool) *kernelEmitter {
	return &kernelEmitter{
		op: k, name: name, plan: p, body: k.Body().Entry(), w: &pyWriter{}, names: newNamer(helperNames...),
		uses: uses, extents: map[*ir.Value][]string{}, env: map[*ir.Value]string{}, subst: map[*ir.Value]string{},
		level: map[*ir.Value]level{}, rowDep: map[*ir.Value]bool{}, emitted: map[*ir.Operation]bool{}, scratch: map[*ir.Value]*scratchRow{}, scratchAt: map[*ir.Operation]*scratchRow{},
		loads: map[string]string{}, reduced: map[*ir.Value]string{},
	}
}

// emit returns the text of the @triton.jit function.
func (k *kernelEmitter) emit() (string, error) {
	if err := k.bindParams(); err != nil {
		return "", err
	}
	if err := k.analyzeLevels(); err != nil {
		return "", err
	}
	k.markCG()
	p := k.plan
	for op := k.body.First(); op != p.grid.Operation; op = op.Next() {
		if err := k.emitOp(op); err != nil {
			return "", err
		}
	}
	if err := k.prologue(); err != nil {
		return "", err
	}
	if p.mode == modeFlat || p.oneBlock {
		if err := k.hoistLoads(); err != nil {
			return "", err
		}
	}
	if err := k.emitBlock(p.grid.Body().Entry()); err != nil {
		return "", err
	}
	for _, f := range k.atEnd {
		f()
	}
	if p.persist {
		k.w.close() // the loop over the blocks of rows
	}
	for op := p.grid.Operation.Next(); op != nil; op = op.Next() {
		if op.Name() != loop.OpReturn {
			return "", kernelError(op, "follows the launch grid; a kernel ends after it")
		}
	}
	k.w.prune()

	var sb strings.Builder
	sb.WriteString("@triton.jit\n")
	consts := []string{"BLOCK: tl.constexpr"}
	switch {
	case p.mode == modeFlat:
		consts = []string{k.total, "BLOCK: tl.constexpr", "WIDE: tl.constexpr"}
	case p.twoD:
		consts = append(consts, "ROWS: tl.constexpr")
	}
	if p.persist {
		consts = append(consts, "STAGES: tl.constexpr")
	}
	params := slices.Clone(k.params)
	if k.part {
		params = append(params, k.pid)
	}
	fmt.Fprintf(&sb, "def %s(%s):\n", k.name, strings.Join(append(params, consts...), ", "))
	fmt.Fprintf(&sb, "    # %s\n", k.describe())
	sb.WriteString(k.w.render(1))
	return sb.String(), nil
}

// hasTicket reports whether kernel k numbers its instances by a
// loop.ticket.
func hasTicket(k loop.KernelOp) bool {
	found := false
	k.Operation.Walk(func(op *ir.Operation) bool {
		found = found || op.Name() == loop.OpTicket
		return !found
	})
	return found
}

// describe says in one line what form the kernel took.
func (k *kernelEmitter) describe() string {
	p := k.plan
	kind := k.op.Kind()
	if s, ok := k.op.Schedule(); ok {
		kind += ", " + s
	}
	switch {
	case p.mode == modeFlat:
		return kind + ": a 1-D grid over every element, BLOCK elements per program"
	case p.resident && !hasTicket(k.op):
		return kind + ": a program per row, its row kept in one block as loaded (a split of one: no group)"
	case p.resident:
		return kind + ": a program per split of a row, numbered by a ticket, its split kept in one block across the sync with the row's other splits"
	case p.stretched:
		return fmt.Sprintf("%s: rows of %d cut into stretches %s, ROWS rows per program", kind, p.rowLen, p.spanList())
	case p.persist:
		return fmt.Sprintf("%s: rows of %d in one block, ROWS rows per iteration, a program looping over blocks of rows", kind, p.rowLen)
	case p.oneBlock && p.twoD:
		return fmt.Sprintf("%s: rows of %d in one block, ROWS rows per program", kind, p.rowLen)
	case p.oneBlock:
		return fmt.Sprintf("%s: rows of %d in one block, one row per program", kind, p.rowLen)
	case len(p.vectorized) > 0:
		return kind + ": one program per output row, BLOCK elements at a time"
	case hasThreadsLoop(p):
		return kind + ": one program per row, loops over BLOCK-element chunks"
	}
	return kind + ": one program per grid iteration, scalar code"
}

// hasThreadsLoop reports whether the grid holds a threads loop.
func hasThreadsLoop(p *kernelPlan) bool {
	for op := p.grid.Body().Entry().First(); op != nil; op = op.Next() {
		if f, ok := loop.AsFor(op); ok && f.Dist() == "threads" {
			return true
		}
	}
	return false
}

// bindParams names the kernel's parameters and records the spelling of
// every buffer extent.
func (k *kernelEmitter) bindParams() error {
	args := k.body.Args
	nbuf := int(k.op.NumInputs() + k.op.NumOutputs())
	if nbuf > len(args) {
		return kernelError(k.op.Operation, "declares %d buffers but has %d arguments", nbuf, len(args))
	}
	for i, a := range args {
		want := a.Name
		if want == "" {
			want = fmt.Sprintf("arg%d", i)
		}
		name := k.names.fresh(want)
		k.params = append(k.params, name)
		k.env[a] = name
		k.level[a] = lvUniform
	}
	next := nbuf
	for _, buf := range args[:nbuf] {
		m, ok := buf.Type().(ir.MemRefType)
		if !ok || m.Space != ir.DRAM {
			return kernelError(k.op.Operation, "has an argument of type %s where a dram buffer is expected", buf.Type())
		}
		ext := make([]string, len(m.Shape))
		for d, n := range m.Shape {
			if n != ir.Dynamic {
				ext[d] = fmt.Sprint(n)
				continue
			}
			if next >= len(args) {
				return kernelError(k.op.Operation, "has too few extent arguments for its buffers")
			}
			ext[d] = k.params[next]
			next++
		}
		k.extents[buf] = ext
	}
	if next != len(args) {
		return kernelError(k.op.Operation, "has %d arguments; its buffers need %d", len(args), next)
	}
	if k.plan.mode == modeFlat {
		// the launcher passes the number of elements, as a Python int that
		// Triton makes 64-bit when it must be
		k.total = k.names.fresh("total")
	}
	return nil
}

// isInput reports whether buf is one of the kernel's input buffers.
func (k *kernelEmitter) isInput(buf *ir.Value) bool {
	return buf.IsBlockArg() && buf.OwnerBlock() == k.body && buf.ResultIndex() < int(k.op.NumInputs())
}

// ---------------------------------------------------------------------------
// Levels

// analyzeLevels computes the level of every value of the kernel: a value
// computed from others has the highest of their levels; the grid's
// induction variable is a row (each element, in a flat kernel), the
// induction variable of a threads loop or a vectorized serial loop is a
// block; the value a serial loop carries has the level of its initial
// value or of what it yields, whichever is higher (repeated until stable).
func (k *kernelEmitter) analyzeLevels() error {
	for changed := true; changed; {
		changed = false
		set := func(v *ir.Value, l level) {
			if old, ok := k.level[v]; !ok || l > old {
				k.level[v] = l
				changed = true
			}
		}
		dep := func(v *ir.Value, d bool) {
			if d && !k.rowDep[v] {
				k.rowDep[v] = true
				changed = true
			}
		}
		var walk func(b *ir.Block)
		walk = func(b *ir.Block) {
			for op := b.First(); op != nil; op = op.Next() {
				switch op.Name() {
				case loop.OpParallel:
					iv := op.Region(0).Entry().Args[0]
					dep(iv, true)
					if k.plan.mode == modeFlat {
						set(iv, lvBlock)
					} else {
						set(iv, lvRow)
					}
					walk(op.Region(0).Entry())
					continue
				case loop.OpFor:
					f, _ := loop.AsFor(op)
					entry := f.Body().Entry()
					if f.Dist() == "threads" || k.plan.vectorized[op] {
						set(entry.Args[0], lvBlock)
						for i, a := range entry.Args[1:] {
							set(a, lvBlock)
							set(f.Values()[i], lvRow)
							dep(a, true)
							dep(f.Values()[i], true)
						}
					} else {
						set(entry.Args[0], max(k.level[f.Lower()], k.level[f.Upper()], k.level[f.Step()]))
						dep(entry.Args[0], k.rowDep[f.Lower()] || k.rowDep[f.Upper()] || k.rowDep[f.Step()])
						yield := entry.Last()
						for i, a := range entry.Args[1:] {
							l := k.level[f.Inits()[i]]
							d := k.rowDep[f.Inits()[i]]
							if yield != nil && i < yield.NumOperands() {
								l = max(l, k.level[yield.Operand(i)])
								d = d || k.rowDep[yield.Operand(i)]
							}
							set(a, l)
							set(f.Values()[i], l)
							dep(a, d)
							dep(f.Values()[i], d)
						}
					}
					walk(entry)
					continue
				case loop.OpTicket:
					// an instance's number: what a row is computed from
					set(op.Result(0), lvRow)
					dep(op.Result(0), true)
					continue
				case loop.OpLoad:
					l := lvUniform
					d := false
					if m, ok := op.Operand(0).Type().(ir.MemRefType); ok && m.Space != ir.DRAM {
						l, d = lvBlock, true
					}
					for _, x := range op.Operands()[1:] {
						l = max(l, k.level[x])
						d = d || k.rowDep[x]
					}
					set(op.Result(0), l)
					dep(op.Result(0), d)
					continue
				}
				l := lvUniform
				d := false
				for _, x := range op.Operands() {
					l = max(l, k.level[x])
					d = d || k.rowDep[x]
				}
				for _, r := range op.Results() {
					set(r, l)
					dep(r, d)
				}
			}
		}
		walk(k.body)
	}
	return nil
}

// shapeOf is the Python tuple of the shape of a tensor of level l.
func (k *kernelEmitter) shapeOf(l level) string {
	switch {
	case l == lvUniform:
		return "[]"
	case k.plan.twoD && l == lvRow:
		return "(ROWS, 1)"
	case k.plan.twoD && k.blk != nil && k.blk.width > 0:
		return fmt.Sprintf("(ROWS, %d)", k.blk.width)
	case k.plan.twoD:
		return "(ROWS, BLOCK)"
	case l == lvBlock && k.blk != nil && k.blk.width > 0:
		return fmt.Sprintf("(%d,)", k.blk.width)
	case l == lvBlock || k.plan.mode == modeFlat:
		return "(BLOCK,)"
	}
	return "[]"
}

// ---------------------------------------------------------------------------
// The grid

// prologue computes the program's rows and the block of columns.
func (k *kernelEmitter) prologue() error {
	p := k.plan
	g := p.grid
	iv := g.Body().Entry().Args[0]
	w := k.w
	pid := k.names.fresh("pid")
	if k.part {
		k.pid = pid
	} else {
		w.assign(pid, "tl.program_id(0)")
	}

	if p.mode == modeFlat {
		w.open("if WIDE:")
		w.assign(pid, pid+".to(tl.int64)")
		w.close()
		offs := k.names.fresh("offs")
		k.offs = offs
		w.assign(offs, pid+" * BLOCK + tl.arange(0, BLOCK)")
		cols := k.ref(p.cols)
		oneRow := isIndexConst(g.Upper(), 1) && isIndexConst(g.Lower(), 0)
		totalName := k.total
		mask := k.names.fresh("emask")
		w.assign(mask, offs+" < "+totalName)
		col := offs
		if oneRow {
			k.env[iv] = "0"
		} else {
			r := k.names.fresh(ivName(iv, "r"))
			w.assign(r, offs+" // "+cols)
			k.env[iv] = r
			col = k.names.fresh("i")
			w.assign(col, offs+" % "+cols)
		}
		k.blk = &blockCtx{cols: col, mask: mask}
		k.bindThreadsIVs(col)
		return nil
	}

	if p.persist {
		return k.persistentPrologue(pid, iv)
	}
	r := k.names.fresh(ivName(iv, "r"))
	if p.twoD {
		w.assign(r, "("+pid+" * ROWS).to(tl.int64) + tl.arange(0, ROWS)[:, None]")
		k.rmask = k.names.fresh("rmask")
		w.assign(k.rmask, r+" < "+k.ref(g.Upper()))
	} else {
		expr := pid + ".to(tl.int64)"
		if !isIndexConst(g.Step(), 1) {
			expr += " * " + k.ref(g.Step())
		}
		if !isIndexConst(g.Lower(), 0) {
			expr = k.ref(g.Lower()) + " + " + expr
		}
		w.assign(r, expr)
	}
	k.env[iv] = r
	if !p.oneBlock {
		return nil
	}
	if p.stretched {
		k.stretchBlocks()
		return nil
	}
	k.columns()
	if p.twoD {
		k.rowsMask()
	}
	return nil
}

// columns binds the block of a one-block row kernel: its columns
// (cols = tl.arange(0, BLOCK), [None, :] for [ROWS, BLOCK] blocks) and,
// when the row does not fill the block, their mask, which is then the
// block's mask until rowsMask joins the rows' to it.
func (k *kernelEmitter) columns() {
	p, w := k.plan, k.w
	cols := k.names.fresh("cols")
	if p.twoD {
		w.assign(cols, "tl.arange(0, BLOCK)[None, :]")
	} else {
		w.assign(cols, "tl.arange(0, BLOCK)")
	}
	blk := &blockCtx{cols: cols}
	if p.rowLen != p.block {
		blk.cmask = k.names.fresh("cmask")
		w.assign(blk.cmask, fmt.Sprintf("%s < %d", cols, p.rowLen))
	}
	blk.mask = blk.cmask
	k.blk = blk
	k.bindThreadsIVs(cols)
}

// rowsMask makes the block's mask the rows' (rmask), joined to the
// columns' when there is one (bmask = rmask & cmask).
func (k *kernelEmitter) rowsMask() {
	blk := k.blk
	blk.mask = k.rmask
	if blk.cmask != "" {
		blk.mask = k.names.fresh("bmask")
		k.w.assign(blk.mask, k.rmask+" & "+blk.cmask)
	}
}

// persistentPrologue begins a persistent row kernel (kernelPlan.persist):
// the columns, and the loads that do not depend on the row (a weight),
// once per program; then the loop over the blocks of rows the program
// takes, every tl.num_programs(0)-th from its own, in which the rows of
// the block, their mask and the rest of the kernel are computed. emit
// closes the loop.
//
//	pid = tl.program_id(0)
//	cols = tl.arange(0, BLOCK)[None, :]
//	w_1 = tl.load(w + cols, mask=cmask)
//	for rblk in tl.range(pid, tl.cdiv(y_d0, ROWS), tl.num_programs(0), num_stages=STAGES):
//	    r = (rblk * ROWS).to(tl.int64) + tl.arange(0, ROWS)[:, None]
func (k *kernelEmitter) persistentPrologue(prog string, iv *ir.Value) error {
	p := k.plan
	w := k.w
	k.columns()
	// the grid's induction variable is not bound yet: only the loads
	// whose addresses do not depend on the row are hoisted here
	if err := k.hoistLoads(); err != nil {
		return err
	}
	pid := k.names.fresh("rblk")
	w.open(fmt.Sprintf("for %s in tl.range(%s, tl.cdiv(%s, ROWS), tl.num_programs(0), num_stages=STAGES):",
		pid, prog, k.ref(p.grid.Upper())))
	r := k.names.fresh(ivName(iv, "r"))
	w.assign(r, "("+pid+" * ROWS).to(tl.int64) + tl.arange(0, ROWS)[:, None]")
	k.rmask = k.names.fresh("rmask")
	w.assign(k.rmask, r+" < "+k.ref(p.grid.Upper()))
	k.env[iv] = r
	k.rowsMask()
	return nil
}

// stretchBlocks gives each stretch [lo, hi) of a kernel cut into
// stretches its block: columns lo + tl.arange(0, W)[None, :] for W the
// power of two at or above hi - lo, masked by the rows and, when W is
// wider than the stretch, by cols < hi.
func (k *kernelEmitter) stretchBlocks() {
	k.stretch = map[*ir.Operation]*blockCtx{}
	k.colSpan = map[string][2]int64{}
	k.colAt = map[[2]int64]string{}
	for op := k.plan.grid.Body().Entry().First(); op != nil; op = op.Next() {
		span, ok := k.plan.spans[op]
		if !ok {
			continue
		}
		f, _ := loop.AsFor(op)
		width := nextPow2(span[1] - span[0])
		cols := k.names.fresh("cols")
		ar := fmt.Sprintf("tl.arange(0, %d)[None, :]", width)
		if span[0] != 0 {
			ar = fmt.Sprintf("%d + %s", span[0], ar)
		}
		k.w.assign(cols, ar)
		blk := &blockCtx{cols: cols, mask: k.rmask, width: width}
		if width != span[1]-span[0] {
			blk.cmask = k.names.fresh("cmask")
			k.w.assign(blk.cmask, fmt.Sprintf("%s < %d", cols, span[1]))
			blk.mask = k.names.fresh("bmask")
			k.w.assign(blk.mask, k.rmask+" & "+blk.cmask)
		}
		k.stretch[op] = blk
		k.colSpan[cols] = [2]int64{span[0], width}
		k.colAt[[2]int64{span[0], width}] = cols
		k.env[f.Body().Entry().Args[0]] = cols
	}
}

// rowMask is the mask of row-level accesses ("" when every row is valid).
func (k *kernelEmitter) rowMask() string { return k.rmask }

// ivName is the name of an induction variable: its own, or want.
func ivName(iv *ir.Value, want string) string {
	if iv.Name != "" {
		return iv.Name
	}
	return want
}

// bindThreadsIVs makes the induction variable of every threads loop of
// the grid the column expression of the one block.
func (k *kernelEmitter) bindThreadsIVs(cols string) {
	for op := k.plan.grid.Body().Entry().First(); op != nil; op = op.Next() {
		if f, ok := loop.AsFor(op); ok && f.Dist() == "threads" {
			k.env[f.Body().Entry().Args[0]] = cols
		}
	}
}

// hoistLoads emits, ahead of everything else, the loads of input rows the
// threads loops of a one-block or flat kernel make: all of a program's
// DRAM reads are then in flight at once, before the first reduction
// waits (what Liger-Kernel does by hand with the weight row).
func (k *kernelEmitter) hoistLoads() error {
	for op := k.plan.grid.Body().Entry().First(); op != nil; op = op.Next() {
		f, ok := loop.AsFor(op)
		// the loads of a stretch of the row run under its mask: outside it,
		// a concat piece's address may leave its buffer
		if !ok || f.Dist() != "threads" || k.plan.tails[op] || k.plan.spans[op] != [2]int64{} {
			continue
		}
		for in := f.Body().Entry().First(); in != nil; in = in.Next() {
			ld, ok := loop.AsLoad(in)
			if !ok || !k.isInput(ld.Memref()) {
				continue
			}
			hoistable := true
			for _, x := range ld.Indices() {
				if !k.pureIndex(x) {
					hoistable = false
				}
			}
			if !hoistable {
				continue
			}
			for _, x := range ld.Indices() {
				if err := k.ensure(x); err != nil {
					return err
				}
			}
			if err := k.emitOp(in); err != nil {
				return err
			}
		}
	}
	return nil
}

// pureIndex reports whether index value x is computed by index arithmetic
// from arguments, constants and induction variables bound already.
func (k *kernelEmitter) pureIndex(x *ir.Value) bool {
	op := x.DefiningOp()
	if op == nil {
		_, bound := k.env[x]
		return bound
	}
	switch op.Name() {
	case loop.OpConst:
		return true
	case loop.OpAddi, loop.OpSubi, loop.OpMuli, loop.OpDivi, loop.OpRemi, loop.OpMini:
		for _, a := range op.Operands() {
			if !k.pureIndex(a) {
				return false
			}
		}
		return true
	}
	return false
}

// ensure emits the index arithmetic computing x, if not done yet.
func (k *kernelEmitter) ensure(x *ir.Value) error {
	op := x.DefiningOp()
	if op == nil || k.emitted[op] {
		return nil
	}
	for _, a := range op.Operands() {
		if err := k.ensure(a); err != nil {
			return err
		}
	}
	return k.emitOp(op)
}

// emitBlock translates the ops of a block in order.
func (k *kernelEmitter) emitBlock(b *ir.Block) error {
	for op := b.First(); op != nil; op = op.Next() {
		if err := k.emitOp(op); err != nil {
			return err
		}
	}
	return nil
}

// ---------------------------------------------------------------------------
// Values

// ref is the Python expression of v: its name, or the literal of a
// constant.
func (k *kernelEmitter) ref(v *ir.Value) string {
	if s, ok := k.subst[v]; ok {
		return s
	}
	if s, ok := k.env[v]; ok {
		return s
	}
	if c, kind, ok := constOf(v); ok {
		return pyLiteral(c, kind)
	}
	// unreachable for verified IR in dominance order: name it so the
	// generated code fails loudly rather than silently
	return "undefined_" + sanitize(v.Name)
}

// typedRef is ref, with a constant spelled as a typed Triton scalar (a
// Python literal has no dtype of its own).
func (k *kernelEmitter) typedRef(v *ir.Value) (string, error) {
	c, kind, ok := constOf(v)
	if !ok {
		return k.ref(v), nil
	}
	if kind == ir.Index {
		return pyLiteral(c, kind), nil
	}
	t, err := tlType(kind)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("tl.full([], %s, %s)", pyLiteral(c, kind), t), nil
}

// constOf returns the value of a constant (or of a splat of one).
func constOf(v *ir.Value) (float64, ir.ElemKind, bool) {
	op := v.DefiningOp()
	if op == nil {
		return 0, 0, false
	}
	if b, ok := loop.AsBroadcast(op); ok {
		return constOf(b.Input())
	}
	c, ok := loop.AsConst(op)
	if !ok {
		return 0, 0, false
	}
	return c.Value(), elemKind(v.Type()), true
}

// bind records the Python name of a result.
func (k *kernelEmitter) bind(v *ir.Value, expr string) {
	if k.rematting {
		k.subst[v] = expr
		return
	}
	k.env[v] = expr
}

// fresh names the value v.
func (k *kernelEmitter) fresh(v *ir.Value) string { return k.names.fresh(v.Name) }

// ---------------------------------------------------------------------------
// Ops

// emitOp translates one op.
func (k *kernelEmitter) emitOp(op *ir.Operation) error {
	if !k.rematting {
		if k.emitted[op] {
			return nil
		}
		k.emitted[op] = true
	}
	switch op.Name() {
	case loop.OpConst, loop.OpYield, loop.OpReturn:
		return nil
	case loop.OpParallel:
		return kernelError(op, "is a second launch grid")
	case loop.OpFor:
		return k.emitFor(op)
	case loop.OpLoad:
		return k.emitLoad(op)
	case loop.OpStore:
		return k.emitStore(op)
	case loop.OpAlloc:
		return nil // rows live in registers; the stores say which
	case loop.OpTicket:
		return k.emitTicket(op)
	case loop.OpGroupSync:
		return k.emitGroupSync(op)
	case loop.OpReduce:
		return k.emitReduce(op)
	case loop.OpBroadcast:
		// a block of Triton values takes a scalar as it is
		k.bind(op.Result(0), k.ref(op.Operand(0)))
		return nil
	case loop.OpDim:
		d, _ := loop.AsDim(op)
		ext, ok := k.extents[d.Memref()]
		if !ok || int(d.Axis()) >= len(ext) {
			return kernelError(op, "asks for an extent of a buffer that is not a kernel argument")
		}
		k.bind(op.Result(0), ext[d.Axis()])
		return nil
	}
	if op.NumRegions() > 0 || op.NumResults() != 1 {
		return kernelError(op, "is not an op of the loop dialect the Triton emitter knows")
	}
	if k.plan.stretched && k.foldColumn(op) {
		return nil
	}
	rhs, err := k.expr(op)
	if err != nil {
		return err
	}
	// in a kernel cut into stretches (straight-line code, every name
	// assigned once) the same index arithmetic is computed once: the
	// stretches then share their loads of the same addresses
	key := "=" + rhs
	if k.plan.stretched && isIndexArith(op) {
		if name, ok := k.loads[key]; ok {
			k.bind(op.Result(0), name)
			return nil
		}
	}
	name := k.fresh(op.Result(0))
	k.w.assign(name, rhs)
	k.bind(op.Result(0), name)
	if k.plan.stretched && isIndexArith(op) {
		k.loads[key] = name
	}
	return nil
}

// isIndexArith reports whether op is integer index arithmetic.
func isIndexArith(op *ir.Operation) bool {
	switch op.Name() {
	case loop.OpAddi, loop.OpSubi, loop.OpMuli, loop.OpDivi, loop.OpRemi, loop.OpMini:
		return true
	}
	return false
}

// foldColumn binds `cols ± c`, for cols the columns lo + arange(W) of a
// stretch, to the columns of the stretch at lo ± c of the same width when
// there is one: rotate_half's second stretch reads the first one's
// columns, so both read q at the same addresses.
func (k *kernelEmitter) foldColumn(op *ir.Operation) bool {
	if op.Name() != loop.OpAddi && op.Name() != loop.OpSubi {
		return false
	}
	a, b := op.Operand(0), op.Operand(1)
	at, ok := k.colSpan[k.ref(a)]
	c, okc := indexConst(b)
	if !ok || !okc {
		if op.Name() == loop.OpSubi {
			return false
		}
		at, ok = k.colSpan[k.ref(b)]
		c, okc = indexConst(a)
		if !ok || !okc {
			return false
		}
	}
	if op.Name() == loop.OpSubi {
		c = -c
	}
	name, ok := k.colAt[[2]int64{at[0] + c, at[1]}]
	if !ok {
		return false
	}
	k.bind(op.Result(0), name)
	return true
}

// address is the pointer expression of element indices of buffer buf,
// and its level. The row-major offset is built as Horner's rule,
// ((i0 * E1 + i1) * E2 + i2) ..., where the split of a row number into
// leading indices (r // E1, r % E1) recombines into the row number, so
// that a buffer read at [r, i] is `buf + r * C + i`: a scalar row start
// plus the columns of the block (and in a flat kernel simply
// `buf + offs`).
func (k *kernelEmitter) address(buf *ir.Value, idx []*ir.Value) (string, access, error) {
	ext, ok := k.extents[buf]
	ptr := k.ref(buf)
	if !ok {
		return "", access{}, fmt.Errorf("is not a buffer argument of the kernel")
	}
	if len(idx) != len(ext) {
		return "", access{}, fmt.Errorf("has %d indices for a buffer of rank %d", len(idx), len(ext))
	}
	var l access
	for _, x := range idx {
		l.level = max(l.level, k.level[x])
		l.row = l.row || k.rowDep[x]
	}
	n := len(idx)
	if n == 0 {
		return ptr, l, nil
	}
	lead := hornerTerm{v: idx[0]}
	for d := 1; d < n-1; d++ {
		lead = k.horner(lead, idx[d], ext[d])
	}
	if n == 1 {
		return join("+", ptr, k.termExpr(lead)), l, nil
	}
	last := idx[n-1]
	if k.plan.mode == modeFlat && lead.v != nil && k.isGridIV(lead.v) && k.isThreadsIV(last) &&
		compatibleExtent(ext[n-1], k.plan.cols) {
		return join("+", ptr, k.flatOffsets()), l, nil
	}
	return join("+", ptr, mulExpr(k.termExpr(lead), ext[n-1]), k.ref(last)), l, nil
}

// flatOffsets is the element offset of every lane of a flat kernel.
func (k *kernelEmitter) flatOffsets() string {
	if k.env[k.plan.grid.Body().Entry().Args[0]] == "0" {
		return k.blk.cols // the one row: the column is the offset
	}
	return k.offs
}

// hornerTerm is a partial offset: an SSA value that may still recombine,
// or an expression.
type hornerTerm struct {
	v    *ir.Value
	expr string
}

// horner extends the offset acc by the next index x of a dimension of
// extent e (its Python spelling).
func (k *kernelEmitter) horner(acc hornerTerm, x *ir.Value, e string) hornerTerm {
	if acc.v != nil {
		div, ok1 := loop.AsDivi(acc.v.DefiningOp())
		rem, ok2 := loop.AsRemi(x.DefiningOp())
		if ok1 && ok2 && div.Lhs() == rem.Lhs() && div.Rhs() == rem.Rhs() && compatibleExtent(e, div.Rhs()) {
			return hornerTerm{v: div.Lhs()}
		}
	}
	return hornerTerm{expr: join("+", mulExpr(k.termExpr(acc), e), k.ref(x))}
}

func (k *kernelEmitter) termExpr(t hornerTerm) string {
	if t.v != nil {
		return k.ref(t.v)
	}
	return t.expr
}

// compatibleExtent reports whether a buffer extent spelled e can be the
// extent v the indices were split by: equal when both are static; a
// dynamic one is equal by construction of lower-to-loops, which indexes a
// dimension by the iteration's index only where the extents match.
func compatibleExtent(e string, v *ir.Value) bool {
	c, ok := indexConst(v)
	if !ok {
		return true
	}
	if e[0] < '0' || e[0] > '9' {
		return true
	}
	return e == fmt.Sprint(c)
}

func (k *kernelEmitter) isGridIV(v *ir.Value) bool {
	return v == k.plan.grid.Body().Entry().Args[0]
}

func (k *kernelEmitter) isThreadsIV(v *ir.Value) bool {
	if !v.IsBlockArg() || v.ResultIndex() != 0 {
		return false
	}
	f, ok := loop.AsFor(v.OwnerBlock().ParentOp())
	return ok && f.Dist() == "threads"
}

// mulExpr is `a * e`, simplified for the literals 0 and 1 and folded
// when both are integers.
func mulExpr(a, e string) string {
	x, errA := strconv.ParseInt(a, 10, 64)
	y, errE := strconv.ParseInt(e, 10, 64)
	if errA == nil && errE == nil && (x == 0 || (x*y)/x == y) {
		return strconv.FormatInt(x*y, 10)
	}
	switch {
	case a == "0" || e == "0":
		return "0"
	case e == "1":
		return a
	case a == "1":
		return e
	}
	return "(" + atom(a) + " * " + atom(e) + ")"
}

// atom parenthesises a Python expression unless it is one token or
// already wrapped in one pair of parentheses, so that it can be an
// operand of a product: (t1 * 8) + t2 times 16 is ((t1 * 8) + t2) * 16.
func atom(s string) string {
	if !strings.ContainsAny(s, " +-*/%") {
		return s
	}
	if strings.HasPrefix(s, "(") {
		depth := 0
		for i, c := range s {
			switch c {
			case '(':
				depth++
			case ')':
				depth--
				if depth == 0 && i != len(s)-1 {
					return "(" + s + ")"
				}
			}
		}
		return s
	}
	return "(" + s + ")"
}

// join joins the terms that are not the literal 0 with op.
func join(op string, terms ...string) string {
	var keep []string
	for _, t := range terms {
		if t != "0" && t != "" {
			keep = append(keep, t)
		}
	}
	if len(keep) == 0 {
		return "0"
	}
	return strings.Join(keep, " "+op+" ")
}

// access is what an address varies with.
type access struct {
	level level
	row   bool // computed from the grid's induction variable
}

// maskFor is the mask of an access: the row mask when the address depends
// on the row (in a program of several rows), the column mask when it
// varies along the block; a flat kernel has one mask.
func (k *kernelEmitter) maskFor(a access) string {
	if k.plan.mode == modeFlat {
		if a.level >= lvRow {
			return k.blk.mask
		}
		return ""
	}
	var parts []string
	if a.row && k.rowMask() != "" {
		parts = append(parts, k.rowMask())
	}
	if a.level == lvBlock && k.blk != nil && k.blk.cmask != "" {
		parts = append(parts, k.blk.cmask)
	}
	if len(parts) == 2 && k.blk.mask != k.blk.cmask {
		return k.blk.mask // rmask & cmask, computed once
	}
	return strings.Join(parts, " & ")
}

func (k *kernelEmitter) emitLoad(op *ir.Operation) error {
	ld, _ := loop.AsLoad(op)
	buf := ld.Memref()
	if m, ok := buf.Type().(ir.MemRefType); ok && m.Space != ir.DRAM {
		return k.loadScratch(op, ld)
	}
	addr, l, err := k.address(buf, ld.Indices())
	if err != nil {
		return kernelError(op, "%v", err)
	}
	args := addr
	if m := k.maskFor(l); m != "" {
		args += ", mask=" + m
	}
	if k.cg[buf] {
		args += `, cache_modifier=".cg"`
	}
	if k.evict != "" {
		args += `, eviction_policy="` + k.evict + `"`
	}
	if name, ok := k.loads[args]; ok {
		k.bind(ld.Output(), name)
		return nil
	}
	name := k.fresh(ld.Output())
	k.w.assign(name, "tl.load("+args+")")
	k.loads[args] = name
	k.bind(ld.Output(), name)
	return nil
}

func (k *kernelEmitter) emitStore(op *ir.Operation) error {
	st, _ := loop.AsStore(op)
	buf := st.Memref()
	if m, ok := buf.Type().(ir.MemRefType); ok && m.Space != ir.DRAM {
		return k.storeScratch(op, st)
	}
	addr, l, err := k.address(buf, st.Indices())
	if err != nil {
		return kernelError(op, "%v", err)
	}
	args := addr + ", " + k.ref(st.Value())
	if m := k.maskFor(l); m != "" {
		args += ", mask=" + m
	}
	if k.evict == "evict_first" {
		args += `, eviction_policy="evict_first"`
	}
	k.w.line("tl.store(" + args + ")")
	return nil
}

// enclosingLoop is the loop.for whose body holds op directly, or nil.
func enclosingLoop(op *ir.Operation) *ir.Operation {
	p := op.ParentOp()
	if p != nil && p.Name() == loop.OpFor {
		return p
	}
	return nil
}

// scratchIndex checks that an sram row is accessed at the column of the
// loop around the access.
func scratchIndex(op *ir.Operation, indices []*ir.Value) (*ir.Operation, error) {
	f := enclosingLoop(op)
	if f == nil || len(indices) != 1 || indices[0] != f.Region(0).Entry().Args[0] {
		return nil, kernelError(op, "accesses an sram buffer other than at the column of the loop around it")
	}
	return f, nil
}

func (k *kernelEmitter) storeScratch(op *ir.Operation, st loop.StoreOp) error {
	f, err := scratchIndex(op, st.Indices())
	if err != nil {
		return err
	}
	k.scratch[st.Memref()] = &scratchRow{value: st.Value(), loop: f, name: k.ref(st.Value())}
	return nil
}

func (k *kernelEmitter) loadScratch(op *ir.Operation, ld loop.LoadOp) error {
	if _, err := scratchIndex(op, ld.Indices()); err != nil {
		return err
	}
	row, ok := k.scratchAt[op]
	if !ok {
		row = k.scratch[ld.Memref()]
		k.scratchAt[op] = row
	}
	if row == nil {
		return kernelError(op, "reads an sram buffer before any loop stores it")
	}
	if k.plan.oneBlock || k.plan.mode == modeFlat || (k.plan.chunks[row.loop] && k.plan.chunks[enclosingLoop(op)]) {
		k.bind(ld.Output(), row.name)
		return nil
	}
	name, err := k.remat(row.value, row.loop)
	if err != nil {
		return err
	}
	k.bind(ld.Output(), name)
	return nil
}

// remat recomputes, in the loop being emitted, the value v an earlier loop
// src computed and kept in sram: a looped kernel has no room for a whole
// row, so it reads its inputs from DRAM again.
func (k *kernelEmitter) remat(v *ir.Value, src *ir.Operation) (string, error) {
	if s, ok := k.subst[v]; ok {
		return s, nil
	}
	if v.IsBlockArg() {
		if v.OwnerBlock().ParentOp() != src {
			return k.ref(v), nil
		}
		if v.ResultIndex() != 0 {
			return "", kernelError(src, "keeps in sram a value computed from what the loop carries")
		}
		k.subst[v] = k.blk.cols
		return k.blk.cols, nil
	}
	op := v.DefiningOp()
	if !src.IsAncestor(op) {
		return k.ref(v), nil
	}
	if op.NumRegions() > 0 {
		return "", kernelError(op, "computes a kept row in a nested loop")
	}
	for _, a := range op.Operands() {
		if _, err := k.remat(a, src); err != nil {
			return "", err
		}
	}
	prev := k.rematting
	k.rematting = true
	err := k.emitOp(op)
	k.rematting = prev
	if err != nil {
		return "", err
	}
	return k.ref(v), nil
}

func (k *kernelEmitter) emitReduce(op *ir.Operation) error {
	rd, _ := loop.AsReduce(op)
	in := rd.Input()
	kind, ok := k.reduced[in]
	if !ok {
		return kernelError(op, "reduces a vector that is not the result of a threads loop; blocks have no lanes of their own")
	}
	if kind != rd.Kind() {
		return kernelError(op, "reduces with '%s' the result of a threads loop that combines with '%s'", rd.Kind(), kind)
	}
	// the threads loop has reduced its whole block already
	k.bind(rd.Output(), k.ref(in))
	return nil
}
