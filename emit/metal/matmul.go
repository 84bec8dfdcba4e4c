package metal

import (
	"fmt"
	"os"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// ---------------------------------------------------------------------------
// Matmul kernels
//
// A kernel of kind "matmul" (loop.MatchMatMul) whose dot products are f32
// fused multiply-adds of f32, f16 or bf16 operands (or of a right operand
// converted from i8, ui8, f8E4M3FN or f8E5M2 under f16 or bf16) runs as a
// tiled kernel on the simdgroup matrices of Metal 3: each threadgroup
// computes a 32 x 32 tile of one matrix of the result, and each of its
// simdgroups a 16 x 16 quarter of the tile, as 2 x 2 blocks of
// simdgroup_float8x8 accumulators per dot product:
//
//	for (uint mm_k0 = 0; mm_k0 < K; mm_k0 += 32) {
//	  threadgroup_barrier(mem_flags::mem_threadgroup);
//	  ... stage A[32][32] and each B (as float, zero outside the result) in mm_tile ...
//	  threadgroup_barrier(mem_flags::mem_threadgroup);
//	  for (uint mm_kk = 0; mm_kk < 32; mm_kk += 8) {
//	    simdgroup_load(mm_a[i], ...); simdgroup_load(mm_b[j], ...);
//	    simdgroup_multiply_accumulate(mm_acc0[s][i][j], mm_a[i], mm_b[j], mm_acc0[s][i][j]);
//	  }
//	}
//	... simdgroup_store the accumulators into mm_tile, then the epilogue
//	of the loop IR on each element of the tile inside the result
//
// The operands are converted to float as they are staged, by the casts
// of the loop IR (the dequantize prologue of an int8 or f8 weight is
// those casts), so every product and sum is an f32 fused multiply-add, as
// the loop IR's loop.fma is. Rows, columns and k past the ends of the
// result are staged as zeros (so nothing outside a buffer is read), and
// the epilogue skips the elements outside the result. The epilogue (bias,
// SiLU of the gate times the up projection, casts, a per-channel scale)
// is the loop IR's own code on each element, the dot products read from
// the result tiles in threadgroup memory.
//
// A threadgroup of 128 threads has four simdgroups, one per quarter; with
// fewer whole simdgroups each takes several quarters, so any threadgroup
// of 32 to 1024 threads computes the same result (a partial simdgroup
// only stages and runs the epilogue). The threadgroups are the tiles of
// every matrix of a batched matmul, batch-major: gid = (batch * tiles_m
// + tile_m) * tiles_n + tile_n.
//
// Kernels the tiled form does not take run as generic kernels (one output
// element per thread, a serial loop over K): more than mmMaxDots dot
// products, integer accumulation (i8 x i8 in i32), other element types,
// operands read through index maps that loop.MatchMatMul rejects (a
// transposed left operand, a slice of the weight's rows), a right operand
// whose batch is not a function of the matrix the row lies in, code after
// the loop over the columns. Their comment says why.

// The tile of a threadgroup: mmTile rows and columns of the result, and
// mmTile steps of K staged at a time.
const (
	mmTile    = 32
	mmQuarter = 16                                          // a simdgroup's share: 16 x 16
	mmSlots   = (mmTile / mmQuarter) * (mmTile / mmQuarter) // quarters of a tile
	mmThreads = 32 * mmSlots                                // a simdgroup per quarter
	mmMaxDots = 4
	// mmTileFloats is the floats of one staged tile (A, a B or a result).
	mmTileFloats = mmTile * mmTile
)

// tiledMatMul turns the tiled form on (the default); with
// TENSORFORGE_TILED_MATMUL=0 in the environment matmul kernels run as
// generic kernels, for comparison (the Triton emitter reads the same
// variable).
var tiledMatMul = os.Getenv("TENSORFORGE_TILED_MATMUL") != "0"

// MatMulTiling describes a tiled matmul kernel in the launch description.
type MatMulTiling struct {
	TileM      int `json:"tile_m"`
	TileN      int `json:"tile_n"`
	TileK      int `json:"tile_k"`
	Simdgroups int `json:"simdgroups"`
	Dots       int `json:"dot_products"`
	// MinThreads is the fewest threads per threadgroup the kernel
	// computes with: one whole simdgroup.
	MinThreads int `json:"min_threads_per_threadgroup"`
}

// mmOperand is an operand of a dot product: its load in the loop over K
// and the casts from it to the factor of the fma.
type mmOperand struct {
	load  loop.LoadOp
	chain []*ir.Operation
	// at spells its indices over mmRowVar, mmKVar and mmColVar.
	at []*expr
}

// The placeholders of the index expressions of the operands: the row of
// the grid (for a right operand, the first row of the matrix), k and the
// column.
const (
	mmRowVar = "@row"
	mmKVar   = "@k"
	mmColVar = "@col"
)

// matmulPlan is a matmul kernel the emitter tiles.
type matmulPlan struct {
	mm       *loop.MatMul
	row, col *ir.Value // the grid's and the column loop's induction variables
	lhs      mmOperand // shared by the dot products
	rhs      []mmOperand
	K        int64
	// M, N and batch are the rows and columns of one matrix of the
	// result and the matrices, over the kernel's parameters.
	M, N, batch *expr
}

// tgBytes is the threadgroup memory of the kernel: a tile of A and one
// of each B (the result tiles reuse them).
func (mp *matmulPlan) tgBytes() int64 {
	return int64(mmTileFloats * 4 * (1 + len(mp.rhs)))
}

// groups is the number of threadgroups: the tiles of every matrix.
func (mp *matmulPlan) groups() *expr {
	return bin("*", mp.batch, bin("*", ceilDiv(mp.M, cst(mmTile)), ceilDiv(mp.N, cst(mmTile))))
}

// planMatMul returns the tiling of the kernel, or nil and why it runs as
// a generic kernel ("" when it is not a matmul).
func (ke *kernelEmitter) planMatMul() (*matmulPlan, string) {
	p := ke.p
	if p.k.Kind() != "matmul" {
		return nil, ""
	}
	if !tiledMatMul {
		return nil, "TENSORFORGE_TILED_MATMUL=0"
	}
	mm, err := loop.MatchMatMul(p.k)
	if err != nil {
		return nil, "its loops are not those loop.MatchMatMul takes"
	}
	if len(mm.Dots) > mmMaxDots {
		return nil, fmt.Sprintf("%d dot products, more than the %d the tiles hold", len(mm.Dots), mmMaxDots)
	}
	if mm.Grid.Operation != p.grid.Operation || len(p.allocs) > 0 || len(p.outs) == 0 {
		return nil, "its grid is not one of output rows"
	}
	for _, v := range []*ir.Value{mm.Grid.Lower(), mm.Cols.Lower()} {
		if c, ok := loop.AsConst(v.DefiningOp()); !ok || c.Value() != 0 {
			return nil, "its loops do not start at 0"
		}
	}
	for _, v := range []*ir.Value{mm.Grid.Step(), mm.Cols.Step()} {
		if c, ok := loop.AsConst(v.DefiningOp()); !ok || c.Value() != 1 {
			return nil, "its loops do not step by 1"
		}
	}
	// the row code before the column loop is element-wise, nothing follows it
	after := false
	for op := p.gridBody.First(); op != nil; op = op.Next() {
		switch {
		case op == mm.Cols.Operation:
			after = true
		case after && op.Name() != loop.OpYield:
			return nil, "code follows its loop over the columns"
		case !after && (op.NumRegions() > 0 || op.Name() == loop.OpStore):
			return nil, "its row code loops or stores"
		}
	}
	mp := &matmulPlan{mm: mm, row: p.gridBody.Args[0], col: mm.Cols.Body().Entry().Args[0], K: mm.Dots[0].K}
	if need := int64(mmTileFloats * 4 * (1 + len(mm.Dots))); need > ke.t.ScratchpadBytes {
		return nil, fmt.Sprintf("its tiles need %d bytes of threadgroup memory, more than the target's %d", need, ke.t.ScratchpadBytes)
	}

	// the result's matrices: [batch..., M, N]
	out := p.outs[0]
	om := out.Type().(ir.MemRefType)
	if len(om.Shape) < 2 {
		return nil, "its result has fewer than two dimensions"
	}
	dims := make([]*expr, len(om.Shape))
	for d, n := range om.Shape {
		dims[d] = cst(n)
		if n == ir.Dynamic {
			dims[d] = vr(ke.params[p.extentOf[out][d]])
		}
	}
	mp.batch = cst(1)
	for _, d := range dims[:len(dims)-2] {
		mp.batch = bin("*", mp.batch, d)
	}
	mp.M = dims[len(dims)-2]
	rows := ke.paramExpr(mm.Grid.Upper())
	if rows == nil || rows.String() != bin("*", mp.batch, mp.M).String() {
		return nil, "its grid is not the rows of its result"
	}
	if mp.N = ke.paramExpr(mm.Cols.Upper()); mp.N == nil {
		return nil, "its columns are computed in the grid"
	}

	// the operands
	lk := elemKind(mm.Dots[0].Lhs.Output().Type())
	for i, d := range mm.Dots {
		body := d.Loop.Body().Entry()
		step := body.Last().Operand(0).DefiningOp()
		if step == nil || step.Name() != loop.OpFma || width(step.Result(0).Type()) != 0 ||
			elemKind(step.Result(0).Type()) != ir.F32 || step.Operand(2) != body.Args[1] {
			return nil, "a dot product is not a sum of f32 fused multiply-adds (integer or f64 accumulation)"
		}
		// the factors are the loads converted, in either order
		ac, ok1 := castChain(step.Operand(0), d.Lhs.Output())
		bc, ok2 := castChain(step.Operand(1), d.Rhs.Output())
		if !ok1 || !ok2 {
			ac, ok1 = castChain(step.Operand(1), d.Lhs.Output())
			bc, ok2 = castChain(step.Operand(0), d.Rhs.Output())
		}
		if !ok1 || !ok2 {
			return nil, "a dot product multiplies other values than its operands converted"
		}
		rk := elemKind(d.Rhs.Output().Type())
		if elemKind(d.Lhs.Output().Type()) != lk || !loop.TiledOperands(lk, rk) || (lk != ir.F32 && lk != ir.F16 && lk != ir.BF16) {
			return nil, fmt.Sprintf("it multiplies %s by %s", lk, rk)
		}
		kv := body.Args[0]
		a := mmOperand{load: d.Lhs, chain: ac}
		var ok bool
		if a.at, ok = ke.mmIndices(d.Lhs.Indices(), map[*ir.Value]*expr{mp.row: vr(mmRowVar), kv: vr(mmKVar)}); !ok {
			return nil, "its left operand's index map is not index arithmetic over the row and k"
		}
		if i == 0 {
			mp.lhs = a
		} else if !sameOperand(mp.lhs, a) {
			return nil, "its dot products read the left operand differently"
		}
		b := mmOperand{load: d.Rhs, chain: bc}
		ri := d.Rhs.Indices()
		for _, x := range ri[:len(ri)-2] {
			if !mp.batchOnly(ke, x) {
				return nil, "its right operand varies within a matrix of the result"
			}
		}
		if b.at, ok = ke.mmIndices(ri, map[*ir.Value]*expr{mp.row: vr(mmRowVar), kv: vr(mmKVar), mp.col: vr(mmColVar)}); !ok {
			return nil, "its right operand's index map is not index arithmetic over the batch, k and the column"
		}
		mp.rhs = append(mp.rhs, b)
	}
	return mp, ""
}

// castChain returns the casts that turn load into v, in order; false when
// v is computed from it otherwise.
func castChain(v, load *ir.Value) ([]*ir.Operation, bool) {
	var chain []*ir.Operation
	for v != load {
		op := v.DefiningOp()
		if op == nil || op.Name() != loop.OpCast || width(op.Result(0).Type()) != 0 {
			return nil, false
		}
		chain = append([]*ir.Operation{op}, chain...)
		v = op.Operand(0)
	}
	return chain, true
}

// sameOperand reports whether two operands are read and converted alike.
func sameOperand(a, b mmOperand) bool {
	if a.load.Memref() != b.load.Memref() || len(a.chain) != len(b.chain) || len(a.at) != len(b.at) {
		return false
	}
	for i := range a.chain {
		if elemKind(a.chain[i].Result(0).Type()) != elemKind(b.chain[i].Result(0).Type()) {
			return false
		}
	}
	for i := range a.at {
		if a.at[i].String() != b.at[i].String() {
			return false
		}
	}
	return true
}

// mmIndices spells index values with sub (see mmIndex).
func (ke *kernelEmitter) mmIndices(vs []*ir.Value, sub map[*ir.Value]*expr) ([]*expr, bool) {
	out := make([]*expr, len(vs))
	for i, v := range vs {
		e, ok := ke.mmIndex(v, sub)
		if !ok {
			return nil, false
		}
		out[i] = e
	}
	return out, true
}

// mmIndex spells index value v as an expression: a value of sub, a
// constant, a value computed before the grid, or index arithmetic over
// them (loop.mini, which lowering does not emit, is not taken).
func (ke *kernelEmitter) mmIndex(v *ir.Value, sub map[*ir.Value]*expr) (*expr, bool) {
	if e, ok := sub[v]; ok {
		return e, true
	}
	if e := ke.paramExpr(v); e != nil {
		return e, true
	}
	op := v.DefiningOp()
	if op == nil || !isIndexArith(op.Name()) || op.Name() == loop.OpMini {
		return nil, false
	}
	a, ok1 := ke.mmIndex(op.Operand(0), sub)
	b, ok2 := ke.mmIndex(op.Operand(1), sub)
	if !ok1 || !ok2 {
		return nil, false
	}
	return bin(arithSymbol(op.Name()), a, b), true
}

// batchOnly reports whether index value v depends on the grid's row r
// only through the matrix r lies in: r / M, or r / c for a multiple c of
// a static M (a batch index of a broadcast right operand), or r itself
// when M is 1. A right operand read so is the same for every row of a
// tile.
func (mp *matmulPlan) batchOnly(ke *kernelEmitter, v *ir.Value) bool {
	if v == mp.row {
		return mp.M.isConst() && mp.M.val == 1
	}
	op := v.DefiningOp()
	if op == nil || !isIndexArith(op.Name()) {
		return true // k, the column, parameters and constants
	}
	if op.Name() == loop.OpDivi && op.Operand(0) == mp.row {
		if d, ok := ke.mmIndex(op.Operand(1), nil); ok {
			if d.String() == mp.M.String() || (d.isConst() && mp.M.isConst() && mp.M.val > 0 && d.val%mp.M.val == 0) {
				return true
			}
		}
	}
	for _, a := range op.Operands() {
		if !mp.batchOnly(ke, a) {
			return false
		}
	}
	return true
}

// mmOffset spells the row-major element offset of indices xs in buffer
// b, in 64 bits: `size_t(mm_row0 + mm_m) * 256 + mm_k`.
func mmOffset(b bufRef, xs []*expr) string {
	off := ""
	wide := false // off is a size_t
	for d, x := range xs {
		s := x.String()
		if strings.Contains(s, " - ") {
			s = "(" + s + ")"
		}
		if d > 0 && off != "" {
			switch {
			case !wide:
				off = "size_t(" + off + ") * " + b.extents[d]
			case strings.ContainsAny(off, " "):
				off = "(" + off + ") * " + b.extents[d]
			default:
				off += " * " + b.extents[d]
			}
			wide = true
		}
		switch {
		case s == "0":
		case off == "":
			off = s
		default:
			off += " + " + s
		}
	}
	if off == "" {
		return "0"
	}
	return off
}

// mmNames are the C names of a tiled matmul kernel's own variables.
type mmNames struct {
	tile, tilesN, tiles, batch, tileIdx, m0, n0, row0, nsg, mma, k0, e, m, k, n, s, q, qm, qn, kk, i, j, a, b string
	acc                                                                                                       []string
}

// emitMatMul writes the body of a tiled matmul kernel (after the index
// arithmetic before the grid).
func (ke *kernelEmitter) emitMatMul() {
	mp := ke.p.mm
	f := ke.names.fresh
	nm := mmNames{tile: f("mm_tile"), tilesN: f("mm_tiles_n"), tiles: f("mm_tiles"), batch: f("mm_batch"), tileIdx: f("mm_t"),
		m0: f("mm_m0"), n0: f("mm_n0"), row0: f("mm_row0"), nsg: f("mm_nsg"), mma: f("mm_mma"), k0: f("mm_k0"),
		e: f("mm_e"), m: f("mm_m"), k: f("mm_k"), n: f("mm_n"), s: f("mm_s"), q: f("mm_q"), qm: f("mm_qm"), qn: f("mm_qn"),
		kk: f("mm_kk"), i: f("mm_i"), j: f("mm_j"), a: f("mm_a"), b: f("mm_b")}
	for d := range mp.rhs {
		nm.acc = append(nm.acc, f(fmt.Sprintf("mm_acc%d", d)))
	}
	nd := len(mp.rhs)
	M, N := mp.M.String(), mp.N.String()

	ke.line("// staged tiles: A [%d][%d] at 0, then each B; after the loop over K, each dot product's result tile", mmTile, mmTile)
	ke.line("threadgroup float %s[%d];", nm.tile, mmTileFloats*(1+nd))
	tilesN := ceilDiv(mp.N, cst(mmTile))
	tiles := bin("*", ceilDiv(mp.M, cst(mmTile)), vr(nm.tilesN))
	ke.line("const uint %s = %s;", nm.tilesN, tilesN)
	tile := "gid"
	row0 := cst(0)
	if !(mp.batch.isConst() && mp.batch.val == 1) {
		// the tiles of every matrix, batch-major
		ke.line("const uint %s = %s;", nm.tiles, tiles)
		ke.line("const uint %s = gid / %s;", nm.batch, nm.tiles)
		ke.line("const uint %s = gid %% %s;", nm.tileIdx, nm.tiles)
		tile = nm.tileIdx
		ke.line("const uint %s = %s; // the matrix's first row of the grid", nm.row0, bin("*", vr(nm.batch), mp.M))
		row0 = vr(nm.row0)
	}
	ke.line("const uint %s = %s / %s * %d;", nm.m0, tile, nm.tilesN, mmTile)
	ke.line("const uint %s = %s %% %s * %d;", nm.n0, tile, nm.tilesN, mmTile)
	ke.line("// the whole simdgroups multiply, each the quarters simd_id, simd_id + %s, ... of the tile", nm.nsg)
	ke.line("const uint %s = tg_size / 32;", nm.nsg)
	ke.line("const bool %s = simd_id < %s;", nm.mma, nm.nsg)
	for _, acc := range nm.acc {
		ke.line("simdgroup_float8x8 %s[%d][2][2];", acc, mmSlots)
	}
	quarters := func(body func()) {
		ke.line("for (uint %s = 0; %s < %d; ++%s) {", nm.s, nm.s, mmSlots, nm.s)
		ke.indent++
		ke.line("const uint %s = simd_id + %s * %s;", nm.q, nm.s, nm.nsg)
		ke.line("if (%s < %d) {", nm.q, mmSlots)
		ke.indent++
		ke.line("const uint %s = %s / %d * %d, %s = %s %% %d * %d;", nm.qm, nm.q, mmTile/mmQuarter, mmQuarter, nm.qn, nm.q, mmTile/mmQuarter, mmQuarter)
		body()
		ke.indent--
		ke.line("}")
		ke.indent--
		ke.line("}")
	}
	blocks := func(stmt string) {
		ke.line("for (uint %s = 0; %s < 2; ++%s) {", nm.i, nm.i, nm.i)
		ke.line("  for (uint %s = 0; %s < 2; ++%s) %s", nm.j, nm.j, nm.j, stmt)
		ke.line("}")
	}
	ke.line("if (%s) {", nm.mma)
	ke.indent++
	quarters(func() {
		for _, acc := range nm.acc {
			blocks(fmt.Sprintf("%s[%s][%s][%s] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);", acc, nm.s, nm.i, nm.j))
		}
	})
	ke.indent--
	ke.line("}")

	// the loop over K
	ke.line("for (uint %s = 0; %s < %d; %s += %d) {", nm.k0, nm.k0, mp.K, nm.k0, mmTile)
	ke.openScope()
	ke.barrier("every simdgroup is done with the previous tiles")
	kCheck := mp.K%mmTile != 0
	mCheck := !(mp.M.isConst() && mp.M.val%mmTile == 0)
	nCheck := !(mp.N.isConst() && mp.N.val%mmTile == 0)
	stage := func(what string, base int, outer, inner string, outerV, innerV string, op mmOperand, sub map[string]*expr, conds []string) {
		ke.line("// %s", what)
		ke.line("for (uint %s = lid; %s < %d; %s += tg_size) {", nm.e, nm.e, mmTileFloats, nm.e)
		ke.openScope()
		ke.line("const uint %s = %s + %s / %d;", outer, outerV, nm.e, mmTile)
		ke.line("const uint %s = %s + %s %% %d;", inner, innerV, nm.e, mmTile)
		xs := make([]*expr, len(op.at))
		for i, x := range op.at {
			xs[i] = x.subst(sub)
		}
		b := ke.buffer(op.load.Memref())
		x := b.name + "[" + mmOffset(b, xs) + "]"
		from := b.kind
		for _, c := range op.chain {
			to := elemKind(c.Result(0).Type())
			x = ke.cast(x, from, to)
			from = to
		}
		dst := plus(fmt.Sprint(base), nm.e)
		if len(conds) == 0 {
			ke.line("%s[%s] = %s;", nm.tile, dst, x)
		} else {
			ke.line("%s[%s] = (%s) ? %s : 0.0f;", nm.tile, dst, strings.Join(conds, " && "), x)
		}
		ke.closeScope()
		ke.line("}")
	}
	// the bounds checks a tile needs where an extent is not a whole number of tiles
	var mIn, kIn, nIn []string
	if mCheck {
		mIn = []string{nm.m + " < " + M}
	}
	if kCheck {
		kIn = []string{fmt.Sprintf("%s < %d", nm.k, mp.K)}
	}
	if nCheck {
		nIn = []string{nm.n + " < " + N}
	}
	rowAt := bin("+", row0, vr(nm.m))
	stage("A, converted to float: zero past the result's rows and past K", 0, nm.m, nm.k, nm.m0, nm.k0, mp.lhs,
		map[string]*expr{mmRowVar: rowAt, mmKVar: vr(nm.k)},
		append(append([]string(nil), mIn...), kIn...))
	for d, op := range mp.rhs {
		sub := map[string]*expr{mmRowVar: row0, mmKVar: vr(nm.k), mmColVar: vr(nm.n)}
		conds := append(append([]string(nil), kIn...), nIn...)
		base := mmTileFloats * (1 + d)
		if mp.mm.Dots[d].TransposeB {
			stage(fmt.Sprintf("B of dot product %d, read as [n][k] (transpose_b) and loaded transposed", d), base, nm.n, nm.k, nm.n0, nm.k0, op, sub, conds)
		} else {
			stage(fmt.Sprintf("B of dot product %d, [k][n]", d), base, nm.k, nm.n, nm.k0, nm.n0, op, sub, conds)
		}
	}
	ke.barrier("the tiles are staged")
	ke.line("if (%s) {", nm.mma)
	ke.indent++
	quarters(func() {
		ke.line("for (uint %s = 0; %s < %d; %s += 8) {", nm.kk, nm.kk, mmTile, nm.kk)
		ke.indent++
		ke.line("simdgroup_float8x8 %s[2], %s[2];", nm.a, nm.b)
		ke.line("simdgroup_load(%s[0], %s + %s * %d + %s, %d);", nm.a, nm.tile, nm.qm, mmTile, nm.kk, mmTile)
		ke.line("simdgroup_load(%s[1], %s + (%s + 8) * %d + %s, %d);", nm.a, nm.tile, nm.qm, mmTile, nm.kk, mmTile)
		for d := range mp.rhs {
			base := mmTileFloats * (1 + d)
			if mp.mm.Dots[d].TransposeB {
				for j := 0; j < 2; j++ {
					n := nm.qn
					if j > 0 {
						n = fmt.Sprintf("(%s + %d)", nm.qn, 8*j)
					}
					ke.line("simdgroup_load(%s[%d], %s + %d + %s * %d + %s, %d, ulong2(0, 0), true);", nm.b, j, nm.tile, base, n, mmTile, nm.kk, mmTile)
				}
			} else {
				for j := 0; j < 2; j++ {
					n := nm.qn
					if j > 0 {
						n = fmt.Sprintf("%s + %d", nm.qn, 8*j)
					}
					ke.line("simdgroup_load(%s[%d], %s + %d + %s * %d + %s, %d);", nm.b, j, nm.tile, base, nm.kk, mmTile, n, mmTile)
				}
			}
			acc := fmt.Sprintf("%s[%s][%s][%s]", nm.acc[d], nm.s, nm.i, nm.j)
			blocks(fmt.Sprintf("simdgroup_multiply_accumulate(%s, %s[%s], %s[%s], %s);", acc, nm.a, nm.i, nm.b, nm.j, acc))
		}
		ke.indent--
		ke.line("}")
	})
	ke.indent--
	ke.line("}")
	ke.closeScope()
	ke.line("}")

	// the result tiles replace the staged ones
	ke.barrier("every simdgroup is done with the staged tiles")
	ke.line("if (%s) {", nm.mma)
	ke.indent++
	quarters(func() {
		for d, acc := range nm.acc {
			at := plus(fmt.Sprint(mmTileFloats*d), fmt.Sprintf("(%s + 8 * %s) * %d + %s + 8 * %s", nm.qm, nm.i, mmTile, nm.qn, nm.j))
			blocks(fmt.Sprintf("simdgroup_store(%s[%s][%s][%s], %s + %s, %d);", acc, nm.s, nm.i, nm.j, nm.tile, at, mmTile))
		}
	})
	ke.indent--
	ke.line("}")
	ke.barrier("the result tiles are stored")

	// the epilogue on each element of the tile inside the result
	ke.line("// the epilogue of the loop IR, element by element")
	ke.line("for (uint %s = lid; %s < %d; %s += tg_size) {", nm.e, nm.e, mmTile*mmTile, nm.e)
	ke.openScope()
	ke.line("const uint %s = %s + %s / %d;", nm.m, nm.m0, nm.e, mmTile)
	colName := ke.valueName(mp.col)
	ke.line("const uint %s = %s + %s %% %d;", colName, nm.n0, nm.e, mmTile)
	inside := append([]string(nil), mIn...)
	if nCheck {
		inside = append(inside, colName+" < "+N)
	}
	if len(inside) == 0 {
		ke.line("{") // whole tiles
	} else {
		ke.line("if (%s) {", strings.Join(inside, " && "))
	}
	ke.openScope()
	rowName := ke.valueName(mp.row)
	ke.line("const uint %s = %s;", rowName, rowAt)
	ke.vals[mp.row] = val{expr: rowName, kind: ir.Index}
	ke.vals[mp.col] = val{expr: colName, kind: ir.Index}
	dots := map[*ir.Operation]bool{}
	for d, dot := range mp.mm.Dots {
		dots[dot.Loop.Operation] = true
		ke.vals[dot.Loop.Values()[0]] = val{expr: fmt.Sprintf("%s[%s]", nm.tile, plus(fmt.Sprint(mmTileFloats*d), nm.e)), kind: ir.F32}
	}
	for op := ke.p.gridBody.First(); op != mp.mm.Cols.Operation; op = op.Next() {
		ke.emitOp(op, false)
	}
	for op := mp.mm.Cols.Body().Entry().First(); op != nil; op = op.Next() {
		if !dots[op] && op.Name() != loop.OpYield {
			ke.emitOp(op, false)
		}
	}
	ke.closeScope()
	ke.line("}")
	ke.closeScope()
	ke.line("}")
}
