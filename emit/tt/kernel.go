package tt

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// This file maps one loop.kernel onto tiles. The launch grid's rows are
// taken 32 at a time (a row block: one tile row), the row's C elements are
// Ct = ceil(C/32) column tiles, and every value of the kernel becomes a
// tile of one of five classes:
//
//	full     a value per element: a row of the input, of the kept row, x*x
//	row      a value per column, in row 0: a weight [C] (broadcast rows)
//	col      a value per row, in column 0: a reduction, what is computed
//	         from it (rsqrt(mean + eps)), a [R, 1] input (broadcast cols)
//	scalar   one value, in element (0, 0): a 0-d input
//	const    a loop.const: filled into DST or folded into the op
//
// A `dist = "threads"` loop over the row becomes a loop over its Ct column
// tiles; its carried vectors become one accumulator tile each, combined
// element-wise, and loop.reduce becomes reduce_tile over that tile
// (REDUCE_ROW). A loop.alloc in sram becomes a circular buffer of Ct tiles
// in L1 (the row block kept between phases). Each DRAM load becomes a
// stream of tiles the reader kernel pushes into a circular buffer, each
// DRAM store one the writer pops; in between the compute kernel evaluates
// expression trees in DST (see section.go). A row cut into stretches (one
// threads loop each, [0, 64) and [64, 128) where a graph.roll or a concat
// cuts it) is a loop over each stretch's column tiles (tileRange), and a
// load at the loop's column shifted by whole tiles (%i + 64) a stream
// reading the tile that many column tiles away (columnShift, tileExprAt).

// class says how a tile value varies over the rows and columns of a tile.
type class uint8

const (
	clsConst class = iota
	clsScalar
	clsRow
	clsCol
	clsFull
)

func (c class) String() string {
	return [...]string{"const", "scalar", "row", "col", "full"}[c]
}

// join is the class of an element-wise op on values of classes a and b.
func join(a, b class) class {
	if a < b {
		a, b = b, a
	}
	if a == clsCol && b == clsRow {
		return clsFull
	}
	return a
}

// param is a buffer parameter of the kernel.
type param struct {
	v      *ir.Value
	index  int
	name   string
	output bool
	elem   ir.ElemKind
	shape  []int64
	fmt    format
	access class
	seen   bool // accessed at all
	// rowMap, when set, is the C++ expression of the row of the buffer
	// (in its layout's matrix) that row r of the kernel reads: an operand
	// broadcast over a leading dimension ([R0, 1, C] in [R0, R1, C] reads
	// row r / R1). Its tiles are gathered row by row by the reader. Loads
	// through other views have their own (kgen.rowMaps); this is the
	// first load's that gathers.
	rowMap string
	// scratch is the reader's page for the source tiles of a gather.
	scratch *cbuf
	// rowCache, when set, holds a row block of the buffer in L1 (its
	// rowTiles tiles), which the reader reads from DRAM once per unit and
	// copies into the circular buffers of the buffer's streams: one read
	// straight and shifted (q and rotate_half(q)) is read once.
	rowCache *cbuf
	// tileIndex, when set, is the tile a unit reads (a transpose's input).
	tileIndex string
}

// tileExpr is the index of the tile a unit of work touches in the
// buffer, in the reader's and writer's variables rb (row block) and ct
// (column tile).
func (p *param) tileExpr() string {
	if p.tileIndex != "" {
		return p.tileIndex
	}
	switch p.access {
	case clsFull:
		return "rb * Ct + ct"
	case clsRow:
		return "ct"
	case clsCol:
		return "rb"
	}
	return "0"
}

// tileExprAt is the index of the tile a stream of the buffer reads when
// its column index is the loop's shifted by off whole tiles (a graph.roll
// by a multiple of 32, or a concat of slices cut on tile boundaries): the
// tile off column tiles to the right (left for off < 0) of the unit's, in
// the same row block. A shifted buffer's row is static and whole tiles
// (access checks it), so its tiles per row are a constant, which need not
// be the kernel's Ct (a slice of a wider row).
func (p *param) tileExprAt(off int64) string {
	if off == 0 {
		return p.tileExpr()
	}
	col := colTileExpr(off)
	switch p.access {
	case clsFull:
		return fmt.Sprintf("rb * %du + %s", p.rowTiles(), col)
	case clsRow:
		return col
	}
	return p.tileExpr()
}

// colTileExpr is the column tile a stream shifted by off tiles reads:
// "ct", "ct + 2u", "ct - 2u".
func colTileExpr(off int64) string {
	switch {
	case off > 0:
		return fmt.Sprintf("ct + %du", off)
	case off < 0:
		return fmt.Sprintf("ct - %du", -off)
	}
	return "ct"
}

// rowTiles is the number of column tiles of a row of the buffer when the
// row is static.
func (p *param) rowTiles() int64 {
	if len(p.shape) == 0 {
		return 1
	}
	return (p.shape[len(p.shape)-1] + TileCols - 1) / TileCols
}

// layout is how the buffer is laid out in tiles (see Buffer).
func (p *param) layout() string { return layoutFor(p.access, p.shape) }

func layoutFor(access class, shape []int64) string {
	if access == clsCol && len(shape) > 0 && shape[len(shape)-1] != 1 {
		return "column"
	}
	return "rows"
}

// cbuf is a circular buffer of the kernel.
type cbuf struct {
	index   int
	name    string
	fmt     format
	pages   int64
	purpose string
}

// cbValue is a tile value held in a circular buffer: at page index (a C++
// expression) of the front once waited for.
type cbValue struct {
	cb    *cbuf
	index string
	cls   class
	// scope is where the value is produced once per iteration; the
	// consumers wait for it before their first use and pop it after their
	// last (see placeWaits). nil for values whose waits and pops are
	// written where they are made (accumulators, kept rows read whole).
	scope *ir.Block
}

// vinfo is what the kernel knows about one SSA value.
type vinfo struct {
	cls  class
	base *ir.Value // the value after casts that change nothing and broadcasts
	// users are the ops using the value (through its aliases), one entry
	// per operand.
	users []*ir.Operation
	cbv   *cbValue // where it lives when it is in a circular buffer
	// accUpdate marks the combine op of a carried value (written at the
	// loop.yield).
	accUpdate bool
}

// kgen builds one kernel.
type kgen struct {
	a      *arch
	k      loop.KernelOp
	name   string
	kind   string
	params []*param
	byArg  map[*ir.Value]*param
	extent map[*ir.Value]Expr
	grid   loop.ParallelOp
	lead   []*ir.Value // the row indices of output 0: what "this row" is
	info   map[*ir.Value]*vinfo
	cbs    []*cbuf
	names  map[string]bool
	// perTile: an element-wise kernel whose grid holds only its loop over
	// the row is split tile by tile; otherwise by row blocks.
	perTile bool
	rowLen  int64 // C when static, else -1
	rows    Expr
	cols    Expr
	// rowReduce: the kernel reduces rows; scaler is the reduce_tile
	// scaler tile and mask the column mask of a last, partial column tile.
	scaler, mask *cbuf
	sram         map[*ir.Value]*sramBuf
	threadsIV    map[*ir.Value]bool
	body         []stmt
	// stores maps a DRAM store to the circular buffer the writer drains.
	storeCB map[*ir.Operation]*cbuf
	// accumulators: the circular buffers of each threads loop's carried
	// values, the combine kind of each loop result, and the reduced row
	// of a scalar loop's result
	accCBs   map[*ir.Operation][]*cbuf
	accKind  map[*ir.Value]string
	accFinal map[*ir.Value]*cbValue
	// unpackToDest are the Float32 circular buffers whose tiles must reach
	// DST with all 32 bits (UnpackToDestMode::UnpackToDestFp32).
	unpackToDest []*cbuf
	// mm is the plan of a matmul kernel (matmul.go).
	mm *mmPlan
	// colOff is, for a load whose column is the loop's shifted by whole
	// tiles, the shift in tiles: the reader's stream of that load reads
	// the tile colOff column tiles away (see columnShift).
	colOff map[*ir.Operation]int64
	// rowMaps is, for a load whose rows the reader gathers, the row of
	// its buffer that row r of the kernel reads (the param's rowMap is
	// the first load's)
	rowMaps map[*ir.Operation]string
	// readerExtents are the run-time extents the reader's row maps read
	// (runtime arguments "extent:<buffer>:<axis>", each a C++ variable
	// named by extentVar), in the order they were first needed
	readerExtents []Expr
}

// extentVar is the C++ variable of the reader holding extent e (a buffer's
// axis of run-time extent), passed as the runtime argument
// "extent:<buffer>:<axis>".
func (g *kgen) extentVar(e Expr) string {
	for _, x := range g.readerExtents {
		if x.Buffer == e.Buffer && x.Axis == e.Axis {
			return extentVarName(x)
		}
	}
	g.readerExtents = append(g.readerExtents, e)
	return extentVarName(e)
}

func extentVarName(e Expr) string { return fmt.Sprintf("extent_%s_%d", e.Buffer, e.Axis) }

// sramBuf is a kept row block: a loop.alloc in sram.
type sramBuf struct {
	v      *ir.Value
	name   string
	cb     *cbuf
	phases []sramAccess // per threads loop touching it, in order
}

type sramAccess struct {
	loop  *ir.Operation
	read  bool
	write bool
}

// errorf is a located diagnostic about the kernel, in the form
// "'tt' backend: kernel 'k' ...".
func (g *kgen) errorf(op *ir.Operation, format string, args ...any) *ir.Diagnostic {
	loc := g.k.Loc
	if op != nil {
		loc = op.Loc
	}
	return ir.Errorf(loc, "'tt' backend: kernel '%s' %s", g.name, fmt.Sprintf(format, args...))
}

// bail carries a diagnostic out of the analysis (recovered in
// buildKernel).
type bail struct{ d *ir.Diagnostic }

// fail stops the analysis with a diagnostic at op (the kernel when nil).
func (g *kgen) fail(op *ir.Operation, format string, args ...any) {
	panic(bail{g.errorf(op, format, args...)})
}

// internalBail carries a broken invariant of the backend out of the
// analysis or the code generation: a bug in the backend, not a problem of
// the program.
type internalBail struct{ d *ir.Diagnostic }

// internal stops with an internal error at op (the kernel when nil).
func (g *kgen) internal(op *ir.Operation, format string, args ...any) {
	panic(internalBail{g.errorf(op, format, args...)})
}

// internalError is the error Emit returns for a broken invariant: an
// *ir.InternalError, which the driver reports as an internal compiler
// error (exit status 2), with the located diagnostic as its detail.
func internalError(d *ir.Diagnostic) *ir.InternalError {
	return &ir.InternalError{Pass: "--emit=tt", Value: d.Message, Diags: []*ir.Diagnostic{d}}
}

// catchInternal runs f and returns the internal error it stops with, if
// any.
func catchInternal(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			ib, ok := r.(internalBail)
			if !ok {
				panic(r)
			}
			err = internalError(ib.d)
		}
	}()
	f()
	return nil
}

// buildKernel analyses a loop.kernel and builds its statement lists.
func buildKernel(a *arch, k loop.KernelOp) (g *kgen, err error) {
	g = &kgen{a: a, k: k, name: k.SymName(), kind: k.Kind(), byArg: map[*ir.Value]*param{}, extent: map[*ir.Value]Expr{},
		info: map[*ir.Value]*vinfo{}, names: map[string]bool{}, sram: map[*ir.Value]*sramBuf{},
		threadsIV: map[*ir.Value]bool{}, storeCB: map[*ir.Operation]*cbuf{}, rowLen: -1,
		accCBs: map[*ir.Operation][]*cbuf{}, accKind: map[*ir.Value]string{}, accFinal: map[*ir.Value]*cbValue{},
		colOff: map[*ir.Operation]int64{}, rowMaps: map[*ir.Operation]string{}}
	defer func() {
		if r := recover(); r != nil {
			switch b := r.(type) {
			case bail:
				g, err = nil, b.d
			case internalBail:
				g, err = nil, internalError(b.d)
			default:
				panic(r)
			}
		}
	}()
	g.refuseGatheredLoads()
	if g.kind == "generic" {
		g.readParams()
		g.findGrid()
		if !g.planTranspose() && !g.planRowCopy() {
			g.fail(nil, "of kind 'generic' is not supported yet (the tt backend maps row and element-wise kernels, transposes of the last two dimensions, and views that keep the last axis and move rows, onto tiles)")
		}
		return g, nil
	}
	if g.kind == "matmul" {
		g.readParams()
		g.planMatMul()
		if len(g.cbs) > maxCBs {
			g.fail(nil, "needs %d circular buffers, more than the %d of a Tensix core", len(g.cbs), maxCBs)
		}
		return g, nil
	}
	if g.kind != "row" && g.kind != "elementwise" {
		g.fail(nil, "of kind '%s' is not supported yet (the tt backend maps row and element-wise kernels onto tiles)", g.kind)
	}
	g.readParams()
	g.findGrid()
	g.classify()
	g.planWork()
	g.planSram()
	g.body = g.scope(g.grid.Body().Entry(), nil)
	g.placeWaits(g.grid.Body().Entry(), g.body)
	g.drainSram()
	g.planRowCaches()
	if len(g.cbs) > maxCBs {
		g.fail(nil, "needs %d circular buffers, more than the %d of a Tensix core", len(g.cbs), maxCBs)
	}
	return g, nil
}

// refuseGatheredLoads stops at a loop.clamp_index, the column of a load
// read from memory (graph.gather): the reader streams whole 32x32 tiles in
// the order the compute kernel consumes them, and has no way yet to fetch
// one element per row at a column it learns only from another tile.
func (g *kgen) refuseGatheredLoads() {
	g.k.Walk(func(op *ir.Operation) bool {
		if op.Name() == loop.OpClampIndex {
			g.fail(op, "reads or writes a buffer at an index loaded from memory (a graph.gather or graph.index_copy); the tt backend streams whole 32x32 tiles in a fixed order, so it cannot address one element at a data-dependent position yet")
		}
		return true
	})
}

// readParams reads the kernel's buffer arguments and the extents after them.
func (g *kgen) readParams() {
	entry := g.k.Body().Entry()
	nin, nout := int(g.k.NumInputs()), int(g.k.NumOutputs())
	next := nin + nout
	// the names the kernels' own variables take
	used := map[string]bool{}
	for _, n := range []string{"unit", "unit_start", "unit_count", "num_units", "Ct", "t", "rb", "ct"} {
		used[n] = true
	}
	for i, a := range entry.Args[:nin+nout] {
		m, ok := a.Type().(ir.MemRefType)
		if !ok {
			g.fail(nil, "argument #%d is not a buffer", i)
		}
		name := paramIdent(a.Name, fmt.Sprintf("arg%d", i), used)
		f, ok := formatOf(m.Elem.Kind)
		if !ok {
			g.fail(nil, "reads or writes %s elements; %s", m.Elem, unsupportedElem(m.Elem.Kind))
		}
		p := &param{v: a, index: i, name: name, output: i >= nin, elem: m.Elem.Kind, shape: m.Shape, fmt: f}
		g.params = append(g.params, p)
		g.byArg[a] = p
		for d, n := range m.Shape {
			if n == ir.Dynamic {
				if next >= len(entry.Args) {
					g.fail(nil, "has fewer extent arguments than its buffers have '?' dimensions")
				}
				g.extent[entry.Args[next]] = Expr{Buffer: name, Axis: d}
				next++
			}
		}
	}
}

// findGrid finds the one loop.parallel of the kernel body.
func (g *kgen) findGrid() {
	for _, op := range g.k.Body().Entry().Ops() {
		if p, ok := loop.AsParallel(op); ok {
			g.grid = p
			return
		}
	}
	g.fail(nil, "has no loop.parallel")
}

// classify computes, for every value of the kernel, its class, its base
// value (through casts that change nothing and broadcasts) and its users,
// and for every buffer how the kernel reads or writes it.
func (g *kgen) classify() {
	// the row indices of output 0 say what "the current row" is: of the
	// first output this kernel stores (a part of a kernel of several,
	// loop.SplitParts, keeps every buffer of the kernel and stores some)
	stored := map[*param]bool{}
	g.walk(g.grid.Operation, func(op *ir.Operation) {
		if s, ok := loop.AsStore(op); ok && g.byArg[s.Memref()] != nil {
			stored[g.byArg[s.Memref()]] = true
		}
	})
	var out0 *param
	for _, p := range g.params {
		if p.output && (out0 == nil || !stored[out0] && stored[p]) {
			out0 = p
		}
	}
	g.walk(g.grid.Operation, func(op *ir.Operation) {
		if f, ok := loop.AsFor(op); ok {
			if f.Dist() != "threads" {
				g.fail(op, "has a serial loop, which only generic kernels have")
			}
			g.threadsIV[f.Body().Entry().Args[0]] = true
		}
	})
	g.walk(g.grid.Operation, func(op *ir.Operation) {
		if s, ok := loop.AsStore(op); ok && g.lead == nil && g.byArg[s.Memref()] == out0 {
			lead, _ := g.leadIndices(out0, s.Indices())
			g.lead = append([]*ir.Value{}, lead...)
		}
	})

	g.walk(g.k.Operation, func(op *ir.Operation) {
		if op == g.k.Operation {
			return
		}
		for _, r := range op.Results() {
			g.info[r] = &vinfo{base: r}
		}
		for _, reg := range op.Regions() {
			for _, b := range reg.Blocks {
				for _, a := range b.Args {
					g.info[a] = &vinfo{base: a, cls: clsFull}
				}
			}
		}
		g.classifyOp(op)
	})
	// the combine op of each carried value is written at the loop.yield
	g.walk(g.grid.Operation, func(op *ir.Operation) {
		if f, ok := loop.AsFor(op); ok && len(f.Inits()) > 0 {
			y := f.Body().Entry().Last()
			for _, v := range y.Operands() {
				if d := v.DefiningOp(); d != nil && d.NumResults() == 1 {
					g.info[v].accUpdate = true
				}
			}
		}
	})
	// users, through aliases
	g.walk(g.grid.Operation, func(op *ir.Operation) {
		if isAlias(op) {
			return
		}
		for _, a := range op.Operands() {
			if inf := g.info[a]; inf != nil {
				b := g.info[inf.base]
				b.users = append(b.users, op)
			}
		}
	})
}

// walk visits op and every op nested in it, in order.
func (g *kgen) walk(op *ir.Operation, fn func(*ir.Operation)) {
	op.Walk(func(o *ir.Operation) bool {
		fn(o)
		return true
	})
}

// isAlias reports whether op gives its operand again, as far as tiles go:
// a cast to a wider float (the tile converts exactly when unpacked), from
// i1 to a float (a comparison already gives 1.0 / 0.0), and a broadcast.
func isAlias(op *ir.Operation) bool {
	switch op.Name() {
	case loop.OpBroadcast:
		return true
	case loop.OpCast:
		from, _ := ir.ElemOf(op.Operand(0).Type())
		to, _ := ir.ElemOf(op.Result(0).Type())
		return widens(from.Kind, to.Kind) || (from.Kind == ir.I1 && to.Kind.IsFloat() && to.Kind != ir.F64)
	}
	return false
}

// widens reports whether every value of from is exactly a value of to.
func widens(from, to ir.ElemKind) bool {
	switch {
	case from == to:
		return true
	case to == ir.F32:
		return from == ir.BF16 || from == ir.F16
	}
	return false
}

// isNarrowing reports whether op rounds a float to bf16 or f16: the value
// is packed into a 16-bit tile.
func isNarrowing(op *ir.Operation) (format, bool) {
	if op.Name() != loop.OpCast {
		return 0, false
	}
	from, _ := ir.ElemOf(op.Operand(0).Type())
	to, _ := ir.ElemOf(op.Result(0).Type())
	if from.Kind.IsFloat() && from.Kind != ir.F64 && (to.Kind == ir.BF16 || to.Kind == ir.F16) && from.Kind != to.Kind {
		f, _ := formatOf(to.Kind)
		return f, true
	}
	return 0, false
}

// intCast reports whether op converts between a float the SFPU computes
// on (f32, bf16, f16) and an 8-bit integer (ui8, i8): typecast_tile in DST.
// toInt says which way; from and to are the element kinds.
func intCast(op *ir.Operation) (from, to ir.ElemKind, toInt, ok bool) {
	if op == nil || op.Name() != loop.OpCast {
		return 0, 0, false, false
	}
	f, _ := ir.ElemOf(op.Operand(0).Type())
	t, _ := ir.ElemOf(op.Result(0).Type())
	from, to = f.Kind, t.Kind
	isFloat := func(k ir.ElemKind) bool { return k == ir.F32 || k == ir.BF16 || k == ir.F16 }
	isByte := func(k ir.ElemKind) bool { return k == ir.UI8 || k == ir.I8 }
	switch {
	case isFloat(from) && isByte(to):
		return from, to, true, true
	case isByte(from) && isFloat(to):
		return from, to, false, true
	}
	return 0, 0, false, false
}

// isToInt reports whether op converts a float to ui8 or i8: its tile is
// packed into a UInt8 circular buffer.
func isToInt(op *ir.Operation) bool {
	_, _, toInt, ok := intCast(op)
	return ok && toInt
}

// elementwise is the set of float ops the SFPU and FPU compute.
var elementwise = map[string]bool{
	loop.OpNeg: true, loop.OpAbs: true, loop.OpExp: true, loop.OpExp2: true, loop.OpLog: true, loop.OpLog2: true,
	loop.OpLog1p: true, loop.OpExpm1: true, loop.OpSqrt: true, loop.OpRsqrt: true, loop.OpReciprocal: true,
	loop.OpTanh: true, loop.OpSigmoid: true, loop.OpSilu: true, loop.OpGelu: true, loop.OpRelu: true,
	loop.OpSin: true, loop.OpCos: true, loop.OpFloor: true, loop.OpCeil: true, loop.OpRound: true,
	loop.OpAdd: true, loop.OpSub: true, loop.OpMul: true, loop.OpDiv: true, loop.OpMax: true, loop.OpMin: true,
	loop.OpPow: true, loop.OpCmp: true, loop.OpSelect: true,
}

// indexOps are the ops on indices (addresses and bounds): no tiles.
var indexOps = map[string]bool{
	loop.OpAddi: true, loop.OpSubi: true, loop.OpMuli: true, loop.OpDivi: true, loop.OpRemi: true, loop.OpMini: true,
}

// classifyOp sets the class of op's results.
func (g *kgen) classifyOp(op *ir.Operation) {
	res := func() *vinfo { return g.info[op.Result(0)] }
	switch name := op.Name(); {
	case indexOps[name], name == loop.OpYield, name == loop.OpParallel, name == loop.OpReturn:
	case name == loop.OpConst:
		res().cls = clsConst
	case name == loop.OpAlloc:
		m := op.Result(0).Type().(ir.MemRefType)
		if m.Space != ir.SRAM {
			g.fail(op, "allocates outside sram")
		}
	case name == loop.OpLoad:
		l, _ := loop.AsLoad(op)
		if p := g.byArg[l.Memref()]; p != nil {
			res().cls = g.access(op, p, l.Indices(), false)
		} else {
			res().cls = clsFull // a kept row
		}
	case name == loop.OpStore:
		s, _ := loop.AsStore(op)
		if p := g.byArg[s.Memref()]; p != nil {
			g.access(op, p, s.Indices(), true)
		}
	case isAlias(op):
		inf := g.info[op.Operand(0)]
		r := res()
		r.cls, r.base = inf.cls, inf.base
	case name == loop.OpCast:
		_, _, _, isInt := intCast(op)
		if _, ok := isNarrowing(op); !ok && !isInt {
			from, _ := ir.ElemOf(op.Operand(0).Type())
			to, _ := ir.ElemOf(op.Result(0).Type())
			g.fail(op, "casts %s to %s; the backend casts between f32, bf16 and f16, and between them and ui8 or i8, so far", from, to)
		}
		res().cls = g.info[op.Operand(0)].cls
	case elementwise[name]:
		c := clsConst
		for _, a := range op.Operands() {
			if e, _ := ir.ElemOf(a.Type()); e.Kind == ir.F64 || (e.Kind.IsInt() && e.Kind != ir.I1) {
				g.fail(op, "computes on %s, which the Tensix SFPU does not (f32 only)", e)
			}
			c = join(c, g.info[a].cls)
		}
		res().cls = c
	case name == loop.OpReduce:
		res().cls = clsCol
	case name == loop.OpFor:
		for _, r := range op.Results() {
			if _, vec := r.Type().(ir.VectorType); vec {
				g.info[r].cls = clsFull // the accumulator tile, reduced by loop.reduce
			} else {
				g.info[r].cls = clsCol // a scalar loop: already combined over the row
			}
		}
	case name == loop.OpFma:
		g.fail(op, "uses loop.fma, which has no single-rounding form on the SFPU")
	default:
		g.fail(op, "contains '%s', which the tt backend cannot map onto tiles", name)
	}
}

// leadIndices strips the column index (a threads loop's variable, or that
// shifted by a constant) and the indices of extent-1 dimensions (0 in any
// access in bounds, whether a constant or computed: a concat's piece
// indexes a [1, ...] buffer with the row's quotient) from a buffer access:
// what is left says which row is accessed.
func (g *kgen) leadIndices(p *param, idx []*ir.Value) (lead []*ir.Value, hasCol bool) {
	n := len(idx)
	if n > 0 {
		if _, _, ok := g.ivPlusConst(idx[n-1]); ok {
			hasCol = true
			n--
		}
	}
	for d := 0; d < n; d++ {
		if d < len(p.shape) && p.shape[d] == 1 {
			continue
		}
		lead = append(lead, idx[d])
	}
	return lead, hasCol
}

// ivPlusConst matches index v as a threads loop's variable plus a
// constant (through loop.addi and loop.subi of loop.consts): the column
// a graph.roll or a concat of slices reads, %i + 64 or %i - 64.
func (g *kgen) ivPlusConst(v *ir.Value) (iv *ir.Value, off int64, ok bool) {
	if g.threadsIV[v] {
		return v, 0, true
	}
	d := v.DefiningOp()
	if d == nil {
		return nil, 0, false
	}
	switch d.Name() {
	case loop.OpAddi:
		if c, isConst := constIndex(d.Operand(1)); isConst {
			if iv, off, ok := g.ivPlusConst(d.Operand(0)); ok {
				return iv, off + c, true
			}
		}
		if c, isConst := constIndex(d.Operand(0)); isConst {
			if iv, off, ok := g.ivPlusConst(d.Operand(1)); ok {
				return iv, off + c, true
			}
		}
	case loop.OpSubi:
		if c, isConst := constIndex(d.Operand(1)); isConst {
			if iv, off, ok := g.ivPlusConst(d.Operand(0)); ok {
				return iv, off - c, true
			}
		}
	}
	return nil, 0, false
}

// columnShift checks the column index col of an access to p that is
// computed from a threads loop's variable, and returns the shift in whole
// tiles. The reader can address another tile of the same row block, not
// columns within a tile, so the index must be the loop's variable plus or
// minus a multiple of 32, p's row static and whole tiles, the loop's
// bounds static, and every tile read inside p's row; anything else is
// reported at op.
func (g *kgen) columnShift(op *ir.Operation, p *param, col *ir.Value, store bool) int64 {
	iv, off, ok := g.ivPlusConst(col)
	if !ok {
		g.fail(op, "reads '%s' at columns computed from the loop's other than by a constant shift (a graph.roll, or a concat of slices); tiles are read whole, so the tt backend cannot rotate within them yet", p.name)
	}
	if store {
		g.fail(op, "stores to '%s' at columns shifted by %d from the loop's; the writer writes each tile at the kernel's own column", p.name, off)
	}
	if off%TileCols != 0 {
		g.fail(op, "reads '%s' at columns shifted by %d from the loop's (a graph.roll, or a concat of slices), not a whole number of %d-column tiles; tiles are read whole, so the tt backend cannot rotate within them yet", p.name, off, TileCols)
	}
	row := int64(ir.Dynamic)
	if len(p.shape) > 0 {
		row = p.shape[len(p.shape)-1]
	}
	if row == ir.Dynamic || row%TileCols != 0 {
		what := fmt.Sprintf("of %d columns", row)
		if row == ir.Dynamic {
			what = "of run-time length"
		}
		g.fail(op, "reads '%s' at columns shifted by %d from the loop's, in a row %s; the reader shifts by whole tiles of a static row that is whole tiles", p.name, off, what)
	}
	f, isFor := loop.AsFor(iv.OwnerBlock().ParentOp())
	if !isFor {
		g.internal(op, "reads '%s' at a column shifted from a threads loop's variable that is no loop's", p.name)
	}
	lo, okLo := constIndex(f.Lower())
	hi, okHi := constIndex(f.Upper())
	if !okLo || !okHi {
		g.fail(op, "reads '%s' at columns shifted by %d from the loop's, in a loop whose bounds are not constants", p.name, off)
	}
	if lo+off < 0 || roundUp(hi, TileCols)+off > row {
		g.fail(op, "reads '%s' at columns [%d, %d) (the loop's [%d, %d) shifted by %d), outside its row of %d", p.name, lo+off, hi+off, lo, hi, off, row)
	}
	return off / TileCols
}

// roundUp is n rounded up to a multiple of m.
func roundUp(n, m int64) int64 { return (n + m - 1) / m * m }

// access classifies one load or store of buffer p and records it.
func (g *kgen) access(op *ir.Operation, p *param, idx []*ir.Value, store bool) class {
	if n := len(idx); n > 0 && !g.threadsIV[idx[n-1]] && g.dependsOnThreadsIV(idx[n-1]) {
		// a column computed from the loop's: graph.roll's rotated columns,
		// a concat's pieces; a shift by whole tiles is another stream
		if dt := g.columnShift(op, p, idx[n-1], store); dt != 0 {
			g.colOff[op] = dt
		}
	}
	lead, hasCol := g.leadIndices(p, idx)
	same := len(lead) == len(g.lead)
	for i := 0; same && i < len(lead); i++ {
		same = lead[i] == g.lead[i]
	}
	zero := true
	for _, v := range lead {
		if c, ok := constIndex(v); !ok || c != 0 {
			zero = false
		}
	}
	var c class
	rowMap := ""
	switch {
	case same && hasCol:
		c = clsFull
	case same:
		c = clsCol
	case zero && hasCol:
		c = clsRow
	case zero:
		c = clsScalar
	default:
		// a broadcast over a leading dimension: the rows of a row block
		// come from rows of the buffer that are not one tile row; the
		// reader gathers them
		if store {
			g.fail(op, "stores to '%s' with its rows mapped to other rows", p.name)
		}
		c = clsCol
		if hasCol {
			c = clsFull
		}
		rowMap = g.rowMapOf(op, p, idx, hasCol)
		if gatherLocals[p.name] {
			// the reader's gather declares these in the accessor's scope
			p.name = g.unusedParamName(p.name + "_")
		}
	}
	if store && c != clsFull && c != clsCol {
		g.fail(op, "stores a %s value to '%s'", c, p.name)
	}
	// loads of one buffer through different views (slices of its
	// leading dimensions) are streams of their own, each gathering its
	// rows (or reading the buffer's own tiles); one buffer accessed in
	// two classes is not supported
	if p.seen && p.access != c {
		g.fail(op, "accesses '%s' both as %s and as %s tiles", p.name, describeAccess(p.access, p.rowMap), describeAccess(c, rowMap))
	}
	if p.rowMap == "" {
		p.rowMap = rowMap
	}
	p.seen, p.access = true, c
	if rowMap != "" {
		g.rowMaps[op] = rowMap
	}
	return c
}

// dependsOnThreadsIV reports whether index v is computed from a threads
// loop's variable.
func (g *kgen) dependsOnThreadsIV(v *ir.Value) bool {
	if g.threadsIV[v] {
		return true
	}
	d := v.DefiningOp()
	if d == nil {
		return false
	}
	for _, a := range d.Operands() {
		if g.dependsOnThreadsIV(a) {
			return true
		}
	}
	return false
}

// unusedParamName is name, or name with underscores added, that no
// parameter has.
func (g *kgen) unusedParamName(name string) string {
	for {
		taken := false
		for _, q := range g.params {
			taken = taken || q.name == name
		}
		if !taken {
			return name
		}
		name += "_"
	}
}

// gatherLocals are the variables the reader's gather of a tile declares.
var gatherLocals = map[string]bool{"r": true, "i": true, "src": true, "tile": true, "dst": true, "loaded": true}

// describeAccess spells an access for a message: "full", "full (row r / 10u)".
func describeAccess(c class, rowMap string) string {
	if rowMap == "" {
		return c.String()
	}
	return fmt.Sprintf("%s (row %s)", c, rowMap)
}

// rowMapOf is the C++ expression of the row of p's matrix that row r of
// the kernel reads at indices idx: the indices flattened over the rows of
// p's layout (every dimension but the last for whole rows, every
// dimension for one value per row).
func (g *kgen) rowMapOf(op *ir.Operation, p *param, idx []*ir.Value, hasCol bool) string {
	n := len(idx)
	if hasCol {
		n--
	}
	// the stride of dimension d: a constant times the run-time extents
	// of the dimensions after it (runtime arguments of the reader)
	var terms []string
	stride, dyn := int64(1), []int(nil)
	scaled := func(e string) string {
		if stride != 1 {
			e = fmt.Sprintf("%s * %du", e, stride)
		}
		for _, d := range dyn {
			e += " * " + g.extentVar(Expr{Buffer: p.name, Axis: d})
		}
		return e
	}
	grow := func(d int) {
		if p.shape[d] == ir.Dynamic {
			dyn = append(dyn, d)
		} else {
			stride *= p.shape[d]
		}
	}
	for d := n - 1; d >= 0; d-- {
		if c, ok := constIndex(idx[d]); ok && c == 0 {
			grow(d)
			continue
		}
		terms = append([]string{scaled(g.indexExpr(op, p, idx[d]))}, terms...)
		grow(d)
	}
	if len(terms) == 0 {
		return "0u"
	}
	return strings.Join(terms, " + ")
}

// indexExpr spells an index of the grid body in C++ over the kernel's row
// r: index arithmetic on r and constants.
func (g *kgen) indexExpr(op *ir.Operation, p *param, v *ir.Value) string {
	if v == g.grid.Body().Entry().Args[0] {
		return "r"
	}
	if c, ok := constIndex(v); ok {
		return fmt.Sprintf("%du", c)
	}
	if e, ok := g.extent[v]; ok {
		return g.extentVar(e) // a run-time extent: a runtime argument
	}
	ops := map[string]string{loop.OpAddi: "+", loop.OpSubi: "-", loop.OpMuli: "*", loop.OpDivi: "/", loop.OpRemi: "%"}
	if d := v.DefiningOp(); d != nil && ops[d.Name()] != "" {
		return "(" + g.indexExpr(op, p, d.Operand(0)) + " " + ops[d.Name()] + " " + g.indexExpr(op, p, d.Operand(1)) + ")"
	}
	g.fail(op, "reads '%s' at a row the backend cannot compute from the kernel's row", p.name)
	return ""
}

// constIndex is the value of an index constant.
func constIndex(v *ir.Value) (int64, bool) {
	c, ok := loop.AsConst(v.DefiningOp())
	if !ok {
		return 0, false
	}
	return int64(c.Value()), true
}

// constFloat is the value of a float constant (scalar or splat).
func constFloat(v *ir.Value) (float64, bool) {
	c, ok := loop.AsConst(v.DefiningOp())
	if !ok {
		return 0, false
	}
	return c.Value(), true
}

// extentOf spells an index value of the kernel as an extent of its
// parameters.
func (g *kgen) extentOf(v *ir.Value) Expr {
	if e, ok := g.extent[v]; ok {
		return e
	}
	if c, ok := constIndex(v); ok {
		return constExpr(c)
	}
	op := v.DefiningOp()
	if op != nil && op.Name() == loop.OpSubi {
		// C - C mod W: the vector part of a dynamic row, which the tiles
		// cover whole (the scalar tail loop is dropped)
		if rem := op.Operand(1).DefiningOp(); rem != nil && rem.Name() == loop.OpRemi && rem.Operand(0) == op.Operand(0) {
			return g.extentOf(op.Operand(0))
		}
	}
	ops := map[string]string{loop.OpMuli: "mul", loop.OpAddi: "add", loop.OpSubi: "sub", loop.OpDivi: "div", loop.OpRemi: "rem", loop.OpMini: "min"}
	if op != nil && ops[op.Name()] != "" {
		return Expr{Op: ops[op.Name()], Args: []Expr{g.extentOf(op.Operand(0)), g.extentOf(op.Operand(1))}}
	}
	g.fail(op, "has an extent the backend cannot follow to its buffers")
	return Expr{}
}

// isTail reports whether a threads loop is the scalar tail of a dynamic
// row after its vector loop (it starts at a computed column, C - C mod
// W), which the column tiles already cover. A loop starting at a constant
// past 0 is a stretch of the row (a graph.roll or a concat cuts the row
// into stretches, one loop each): see tileRange.
func isTail(f loop.ForOp) bool {
	_, ok := constIndex(f.Lower())
	return !ok
}

// planWork decides how the work is split and finds R and C.
func (g *kgen) planWork() {
	g.rows = g.extentOf(g.grid.Upper())
	if n, ok := g.k.RowLen(); ok {
		g.rowLen = n
		g.cols = constExpr(n)
	}
	only := true
	var loops []loop.ForOp
	for _, op := range g.grid.Body().Entry().Ops() {
		switch {
		case op.Name() == loop.OpFor:
			f, _ := loop.AsFor(op)
			if isTail(f) {
				if len(f.Inits()) > 0 {
					g.fail(op, "has a scalar tail loop carrying values")
				}
				continue
			}
			loops = append(loops, f)
		case op.Name() == loop.OpConst, indexOps[op.Name()], op.Name() == loop.OpYield:
		default:
			only = false
		}
	}
	if g.kind == "row" {
		if g.rowLen < 0 {
			g.fail(nil, "is a row kernel without a static row_len")
		}
		for _, f := range loops {
			lo, _ := constIndex(f.Lower())
			hi, ok := constIndex(f.Upper())
			if lo != 0 || !ok || hi != g.rowLen {
				g.fail(f.Operation, "is a row kernel with a loop over part of its row; the tt backend maps a row kernel's loops over the whole row")
			}
		}
	} else {
		// the stretches of a cut row: the row ends where the last one does
		// (constant bounds, checked by tileRange)
		g.perTile = only && len(loops) == 1
		if len(loops) == 1 {
			g.cols = g.extentOf(loops[0].Upper())
		} else if len(loops) > 1 {
			end := int64(0)
			for _, f := range loops {
				hi, ok := constIndex(f.Upper())
				if !ok {
					g.fail(f.Operation, "cuts its row into loops over stretches of run-time length; the tt backend maps stretches of a static row only")
				}
				end = max(end, hi)
			}
			g.cols = constExpr(end)
		} else {
			g.cols = constExpr(1)
		}
		if c := g.cols.Const; c != nil {
			g.rowLen = *c
		}
	}
	for _, f := range loops {
		if lo, _ := constIndex(f.Lower()); lo != 0 {
			g.perTile = false // a unit must know its stretch: row blocks
		}
		g.tileRange(f)
	}
	if g.kind == "row" && g.rowLen%TileCols != 0 {
		g.mask = g.newCB("cb_mask", float16bFormat, 1, fmt.Sprintf("column mask of the last column tile (%d of %d columns)", g.rowLen%TileCols, TileCols))
	}
}

// tileRange is the column tiles [lo, hi) a threads loop covers, as C++
// expressions: "0" and "Ct" for a loop over the whole row, constants for
// a stretch of a row cut by a graph.roll or a concat ([64, 128) is tiles
// 2 to 4). A stretch must start on a tile boundary and end on one or at
// the row's end: a tile belongs to one stretch, whose ops compute it.
func (g *kgen) tileRange(f loop.ForOp) (lo, hi string) {
	l, okL := constIndex(f.Lower())
	u, okU := constIndex(f.Upper())
	if okL && l == 0 && (!okU || u == g.rowLen) {
		return "0", "Ct"
	}
	if !okL || !okU || g.rowLen < 0 {
		g.fail(f.Operation, "has a loop over part of its row with bounds that are not constants")
	}
	if l%TileCols != 0 || (u%TileCols != 0 && u != g.rowLen) || l >= u {
		g.fail(f.Operation, "cuts its row into stretches at columns that are not tile boundaries (a loop over [%d, %d) of %d columns; a graph.roll or a concat whose pieces are not whole 32-column tiles); a tile is computed whole, by one stretch's ops", l, u, g.rowLen)
	}
	return fmt.Sprintf("%d", l/TileCols), fmt.Sprintf("%d", (u+TileCols-1)/TileCols)
}

// ct is the number of column tiles of a static row.
func (g *kgen) ct() int64 { return (g.rowLen + TileCols - 1) / TileCols }

// newCB adds a circular buffer with a C++ name not used yet.
func (g *kgen) newCB(name string, f format, pages int64, purpose string) *cbuf {
	base := name
	// cb_<name> of a value may spell an API call (cb_wait_front)
	for i := 2; g.names[name] || cbAPI[name]; i++ {
		name = fmt.Sprintf("%s_%d", base, i)
	}
	g.names[name] = true
	cb := &cbuf{index: -1, name: name, fmt: f, pages: pages, purpose: purpose}
	g.cbs = append(g.cbs, cb)
	return cb
}

// planSram finds the kept rows and, per threads loop, whether it reads
// and writes each.
func (g *kgen) planSram() {
	for _, op := range g.grid.Body().Entry().Ops() {
		if op.Name() != loop.OpAlloc {
			continue
		}
		if g.perTile || g.kind != "row" {
			g.fail(op, "keeps a row in sram outside a row kernel")
		}
		v := op.Result(0)
		name := nonEmpty(v.Name, "row")
		sb := &sramBuf{v: v, name: name}
		g.sram[v] = sb
		allBF16, allF16 := true, true
		for _, use := range v.Uses() {
			user := use.Owner
			if s, ok := loop.AsStore(user); ok && s.Memref() == v {
				base := g.info[s.Value()].base
				f := g.naturalFormat(base)
				allBF16 = allBF16 && f == float16bFormat
				allF16 = allF16 && f == float16Format
			}
		}
		m := v.Type().(ir.MemRefType)
		f, _ := formatOf(m.Elem.Kind)
		if m.Elem.Kind == ir.F32 {
			// every value kept is a widened 16-bit value: keep it in 16 bits,
			// exactly, in half the L1
			if allBF16 {
				f = float16bFormat
			} else if allF16 {
				f = float16Format
			}
		}
		sb.cb = g.newCB("cb_"+cIdent(name, "row"), f, g.ct(), fmt.Sprintf("the row block kept between phases (%s of %d tiles)", name, g.ct()))
		for _, lop := range g.grid.Body().Entry().Ops() {
			f, ok := loop.AsFor(lop)
			if !ok || isTail(f) {
				continue
			}
			acc := sramAccess{loop: lop}
			g.walk(lop, func(o *ir.Operation) {
				if l, ok := loop.AsLoad(o); ok && l.Memref() == v {
					acc.read = true
				}
				if s, ok := loop.AsStore(o); ok && s.Memref() == v {
					acc.write = true
				}
			})
			if acc.read || acc.write {
				sb.phases = append(sb.phases, acc)
			}
		}
		for i, ph := range sb.phases {
			if i == 0 && ph.read {
				g.fail(ph.loop, "reads the kept row '%s' before storing it", name)
			}
			if i > 0 && ph.write && !ph.read && !sb.phases[i-1].read {
				g.fail(ph.loop, "stores the kept row '%s' twice without reading it", name)
			}
		}
	}
}

// naturalFormat is the format a value's tile has where it is made: its
// circular buffer's for a load, 16 bits for a rounding cast, Float32 for
// what DST computes.
func (g *kgen) naturalFormat(base *ir.Value) format {
	if op := base.DefiningOp(); op != nil {
		if l, ok := loop.AsLoad(op); ok {
			if p := g.byArg[l.Memref()]; p != nil {
				return p.fmt
			}
			if sb := g.sram[l.Memref()]; sb != nil && sb.cb != nil {
				return sb.cb.fmt
			}
		}
		if f, ok := isNarrowing(op); ok {
			return f
		}
	}
	return float32Format
}

// sramMode says how a threads loop uses a kept row.
func (g *kgen) sramMode(sb *sramBuf, lop *ir.Operation) (sramAccess, int) {
	for i, ph := range sb.phases {
		if ph.loop == lop {
			return ph, i
		}
	}
	return sramAccess{}, -1
}

// drainSram pops, at the end of a unit, the kept rows the last phase left
// in their circular buffers.
func (g *kgen) drainSram() {
	for _, sb := range g.sramList() {
		if n := len(sb.phases); n > 0 && sb.phases[n-1].write {
			ct := "Ct"
			g.body = append(g.body, &cbStmt{ops: []cbOp{{cb: sb.cb, n: ct}, {cb: sb.cb, n: ct, pop: true}}, comment: "the kept row is not read again"})
		}
	}
}

// sramList is the kept rows in program order.
func (g *kgen) sramList() []*sramBuf {
	var out []*sramBuf
	for _, op := range g.grid.Body().Entry().Ops() {
		if op.Name() == loop.OpAlloc && g.sram[op.Result(0)] != nil {
			out = append(out, g.sram[op.Result(0)])
		}
	}
	return out
}

// nonEmpty is s, or def when s is empty.
func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// cIdent turns a value name into a C++ identifier.
func cIdent(s, def string) string {
	var sb strings.Builder
	for i, r := range s {
		switch {
		case r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'):
			sb.WriteRune(r)
		case r >= '0' && r <= '9':
			if i == 0 {
				sb.WriteByte('v')
			}
			sb.WriteRune(r)
		default:
			sb.WriteByte('_')
		}
	}
	if sb.Len() == 0 {
		return def
	}
	return sb.String()
}

// floatBits spells a float constant as the uint32 of its f32 bits, the
// form the SFPU's scalar parameters take.
func floatBits(v float64) string {
	return fmt.Sprintf("0x%08xu", math.Float32bits(float32(v)))
}

// floatComment spells v for a comment.
func floatComment(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+inf"
	case math.IsInf(v, -1):
		return "-inf"
	case math.IsNaN(v):
		return "nan"
	}
	return fmt.Sprintf("%g", float32(v))
}

// assignCBIndices numbers the circular buffers as tt-metal kernels do:
// the reader's streams from c_0, the writer's from c_16, the compute
// kernel's own from c_24; a group that runs out takes the lowest free
// index.
func (g *kgen) assignCBIndices(role func(*cbuf) int) {
	// the streams of the inputs first, then the tiles the reader makes
	var streams, made []*cbuf
	for _, cb := range g.cbs {
		if cb == g.scaler || cb == g.mask {
			made = append(made, cb)
		} else {
			streams = append(streams, cb)
		}
	}
	g.cbs = append(streams, made...)
	used := map[int]bool{}
	starts := [3]int{0, 16, 24}
	for r := 0; r < 3; r++ {
		next := starts[r]
		for _, cb := range g.cbs {
			if role(cb) != r {
				continue
			}
			for next < maxCBs && used[next] {
				next++
			}
			i := next
			if i >= maxCBs {
				for i = 0; used[i]; i++ {
				}
			}
			cb.index = i
			used[i] = true
		}
	}
	sort.SliceStable(g.cbs, func(i, j int) bool { return g.cbs[i].index < g.cbs[j].index })
}

// planRowCaches gives a row cache (param.rowCache) to each buffer the
// reader reads through several streams, straight and shifted by whole
// tiles (RoPE's q, read at ct and at ct +/- 2), when the work is split by
// row blocks and the buffer's rows are its own whole tiles: the reader
// then reads each tile of the row block once and copies it into every
// stream that needs it.
func (g *kgen) planRowCaches() {
	if g.perTile {
		return
	}
	streams := map[*param]map[int64]bool{}
	var visit func(ss []stmt)
	visit = func(ss []stmt) {
		for _, s := range ss {
			switch s := s.(type) {
			case *loopStmt:
				visit(s.body)
			case *readStmt:
				if streams[s.p] == nil {
					streams[s.p] = map[int64]bool{}
				}
				streams[s.p][s.off] = true
			}
		}
	}
	visit(g.body)
	for _, p := range g.params {
		if len(streams[p]) < 2 || p.rowMap != "" || p.access != clsFull || len(p.shape) == 0 {
			continue
		}
		if c := p.shape[len(p.shape)-1]; c == ir.Dynamic || c%TileCols != 0 {
			continue
		}
		p.rowCache = g.newCB("cb_"+p.name+"_row", p.fmt, p.rowTiles(),
			fmt.Sprintf("a row block of %s, read once per unit for its %d streams", p.name, len(streams[p])))
	}
}
