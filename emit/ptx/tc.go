package ptx

import (
	"fmt"
	"math/bits"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// This file is the tensor-core form of kernels of kind "matmul" that
// loop.MatchMatMul takes: bf16 x bf16 (or f16 x f16) dot products summed
// in f32, the right operand [..., k, n] or [..., n, k] (transpose_b),
// batches, a `?` row count, N and K static. A CTA computes a 128 x 128
// tile of one matrix of the result: one dot product with 128 threads (4
// warps, 2 x 2, each 64 x 64 of the tile: 4 x 8 mma.sync.m16n8k16
// accumulators, 128 f32 registers a thread), two with 256 threads (8
// warps, 2 x 4, each 64 x 32 per dot product, 64 registers each):
//
//	for tile = ctaid; tile < tiles; tile += nctaid:       (batch, m0, n0)
//	  (batch-major; groups of 16 tiles along M walk the columns in turn)
//	  prologue: the first stages-1 stages of K (64 each) global -> shared
//	  for kt in [0, ceil(K/64)):
//	    cp.async.wait_group stages-2; bar.sync 0
//	    copy stage kt+stages-1 (if any); cp.async.commit_group
//	    for kk in {0, 16, 32, 48}: ldmatrix A (4 x .x4), B (.x4, .trans
//	      for [k, n]), the mma.sync of each dot product
//	  cp.async.wait_group 0; bar.sync 0
//	  epilogue: the loop IR after the dots, per accumulator element, its
//	  loads and stores predicated on (m < M, n < N)
//
// Split-K (decode shapes of a few rows, whose tiles leave SMs idle): the
// launcher chooses split parts of K from the tiles (tcSplit), the grid
// runs over (tile, part) pairs, each walking its steps of K; a part
// stores its accumulators to an f32 workspace and adds 1 to its tile's
// counter after a fence, and the last part to arrive (it reads split-1)
// resets the counter, adds the parts in order 0, 1, ... and runs the
// epilogue (tcSplitK). With split 1 (prefill) that code is skipped.
//
// Shared memory holds stages (3 for one dot product, so that two CTAs
// share an SM; 4 for two) of A [128][64+8] and of each B ([128][64+8]
// for [n, k], [64][128+8] for [k, n]): rows padded by 8 halves so that
// the eight row addresses of an ldmatrix fall in distinct 16-byte bank
// groups. The copies are cp.async.cg of 16 bytes, the src-size operand
// zero-filling what lies past K, M or N; where K is a multiple of 64 and
// the rows are aligned, each chunk's address at k = 0 and its src-size
// are set once per tile and the loop adds the stage's byte offset. Where
// the rows of an operand are not 16-byte aligned (its last extent not a
// multiple of 8, or dynamic) that operand's chunks are copied by
// predicated 2-byte loads and a st.shared.v4.b32 instead.

// Tile of the tensor-core form.
const (
	tcBM, tcBN, tcBK = 128, 128, 64
	tcStages         = 4 // at most; fewer where shared memory runs short
	// shared memory of one CTA such that two fit an SM (228 KiB, 1 KiB
	// reserved per CTA): a kernel of one dot product takes at most 128
	// registers a thread, and two CTAs of it hide each other's latency
	tcSharedTwo = 113 * 1024
	tcPad       = 8 // halves added to every shared row
	tcMaxDots   = 2
)

// tensorCores turns the tensor-core form on; when false every matmul
// kernel runs as scalar loops (a switch for comparisons and bisection).
var tensorCores = true

// tcPlan is a matmul kernel on tensor cores.
type tcPlan struct {
	mm   *loop.MatMul
	half ir.ElemKind // bf16 or f16 (the int8 form: A's i8 or ui8)
	// int8: 8-bit integers summed in i32 (int8.go): K counts pairs of
	// bytes, which the copies and ldmatrix move as halves
	int8   bool
	K, N   int64
	out    *ir.Value // the result whose rows the grid runs over
	transB []bool
	// aligned: the operand's rows start at 16-byte boundaries, so its
	// chunks are cp.async copies (A, then each B)
	alignedA bool
	alignedB []bool
	// shared layout of one stage: A at 0, B d at bOff[d]
	bOff       []int64
	stageBytes int64
	stages     int64
	// threads of a CTA: 2 x warpsN warps, each a 64 x wtn tile of the
	// result (wtn = 128 / warpsN)
	threads, warpsN, wtn int64
	// Python spelling of the tiles for the launcher
	tilesPy string
	// wg: the wgmma form (wgmma.go): two warpgroups, stages in 128-byte
	// swizzled rows, read by wgmma.mma_async through descriptors
	wg bool
	// bn: the columns of a CTA tile (tcBN; the wgmma form of one dot
	// product takes 256)
	bn int64
	// wideDyn: bn is wgWideN for rows that are `?`: the kernel comes with
	// a 128-column twin the launcher takes where the wide tiles would
	// leave SMs idle (wgmma.go)
	wideDyn bool
	// twin: this is that 128-column twin (or, with decode, a 16- or
	// 32-row twin of a kernel whose rows are `?`)
	twin bool
	// bm: the rows of a CTA tile (tcBM; the decode form's 16 or 32)
	bm int64
	// bk: the K of a stage (tcBK; the decode form's may be wider)
	bk int64
	// decode: the decode form (decode.go): tiles of 16 rows, warps side
	// by side along N
	decode bool
	// decodeDyn: the rows are `?`, and the kernel comes with twins in
	// the decode form that the launcher takes for few rows
	decodeDyn bool
	// b8Off: where each dequantized weight's bytes lie in a stage (the
	// wgmma form converts them into B at bOff; the mma.sync forms read
	// them there: b8Off = bOff)
	b8Off []int64
	// bKind is the element type each dot product's right operand is
	// stored in: the half type, or i8 / ui8 / f8 converted to it
	// (dequant.go)
	bKind []ir.ElemKind
	// rowsPy is the Python spelling of the rows of a matrix of the
	// result, for the launcher's choice among the decode twins
	rowsPy string
}

// wtm is the rows of a warp's tile, ni its mma.sync tiles of 16 rows:
// 64 (two warps along M) in the 128-row form, the tile's 16 or 32 in the
// decode form.
func (tp *tcPlan) wtm() int64 {
	if tp.decode {
		return tp.bm
	}
	return tp.bm / 2
}

func (tp *tcPlan) ni() int { return int(tp.wtm() / 16) }

func (tp *tcPlan) sharedBytes() int64 {
	if tp.wg {
		return tp.stages*tp.stageBytes + wgAlign // the stages start at the next 1024-byte boundary
	}
	return tp.stages * tp.stageBytes
}

// pitchK is the bytes between two K rows (A, [n, k] B) in a stage.
func (tp *tcPlan) pitchK() int64 {
	if tp.wg {
		return tcBK * 2
	}
	return (tp.bk + tcPad) * 2
}

// ahead is the stages of K copied ahead of the one being multiplied: the
// wgmma form keeps one step's wgmma in flight while the next is issued,
// so the stage that step reads is not yet free.
func (tp *tcPlan) ahead() int64 {
	if tp.wg {
		return tp.stages - 1 - wgInFlight
	}
	return tp.stages - 1
}

// pitches in halves
const (
	tcPitchK = tcBK + tcPad // A and [n, k] B rows
	tcPitchN = tcBN + tcPad // [k, n] B rows
)

// planTC returns the tensor-core plan of a matmul kernel, or nil and why
// it keeps the scalar loops ("" when it is not a matmul).
func planTC(ke *kernelEmitter) (*tcPlan, string) {
	k := ke.k
	if k.Kind() != "matmul" {
		return nil, ""
	}
	if !tensorCores {
		return nil, "the tensor-core form is switched off (tensorCores)"
	}
	mm, err := loop.MatchMatMul(k)
	if err != nil {
		return nil, "its loops are not those loop.MatchMatMul takes"
	}
	if len(mm.Dots) > tcMaxDots {
		return nil, fmt.Sprintf("%d dot products, more than the %d whose accumulators fit the registers", len(mm.Dots), tcMaxDots)
	}
	if mm.Grid.Operation != ke.grid.Operation {
		return nil, "its grid is not the kernel's"
	}
	for _, v := range []*ir.Value{mm.Grid.Lower(), mm.Cols.Lower()} {
		if c, ok := staticIndex(v); !ok || c != 0 {
			return nil, "its loops do not start at 0"
		}
	}
	for _, v := range []*ir.Value{mm.Grid.Step(), mm.Cols.Step()} {
		if c, ok := staticIndex(v); !ok || c != 1 {
			return nil, "its loops do not step by 1"
		}
	}
	gb := mm.Grid.Body().Entry()
	after := false
	for op := gb.First(); op != nil; op = op.Next() {
		switch {
		case op == mm.Cols.Operation:
			after = true
		case after && op.Name() != loop.OpYield:
			return nil, "code follows its loop over the columns"
		case !after && (op.NumRegions() > 0 || op.Name() == loop.OpStore || op.Name() == loop.OpAlloc):
			return nil, "its row code loops, stores or allocates"
		}
	}
	tp := &tcPlan{mm: mm, K: mm.Dots[0].K, bn: tcBN, bm: tcBM, bk: tcBK}
	n, ok := staticIndex(mm.Cols.Upper())
	if !ok || n < 1 {
		return nil, "its column count is not static"
	}
	tp.N = n

	// the result: [batch..., M, N], the grid its rows
	nbuf := int(k.NumInputs() + k.NumOutputs())
	args := ke.body.Args
	var out *ir.Value
	for _, a := range args[ke.nin:nbuf] {
		m, _ := a.Type().(ir.MemRefType)
		if len(m.Shape) >= 2 && m.Shape[len(m.Shape)-1] == tp.N && out == nil {
			out = a
		}
	}
	if out == nil {
		return nil, "no result is [..., M, N]"
	}
	tp.out = out
	dims := extentRefs(ke)[out]
	want := map[*ir.Value]int{}
	var static int64 = 1
	for _, d := range dims[:len(dims)-1] {
		if d.ext != nil {
			want[d.ext]++
		} else {
			static *= d.n
		}
	}
	gs, gext, ok := productOf(mm.Grid.Upper())
	if !ok || gs != static || len(gext) != len(want) {
		return nil, "its grid is not the rows of its result"
	}
	for v, c := range gext {
		if want[v] != c {
			return nil, "its grid is not the rows of its result"
		}
	}
	py := func(d extentRef) string {
		if d.ext != nil {
			return fmt.Sprintf("e%d", d.extIndex)
		}
		return itoa(d.n)
	}
	batchPy := "1"
	for _, d := range dims[:len(dims)-2] {
		batchPy += " * " + py(d)
	}
	mPy := py(dims[len(dims)-2])
	tiles := func() {
		tp.tilesPy = fmt.Sprintf("%s * _cdiv(%s, %d) * %d", batchPy, mPy, tp.bm, ceilDiv(tp.N, tp.bn))
	}
	mDim := dims[len(dims)-2]
	tp.rowsPy = mPy

	// the operands
	row, col := gb.Args[0], mm.Cols.Body().Entry().Args[0]
	for i, d := range mm.Dots {
		body := d.Loop.Body().Entry()
		step := body.Last().Operand(0).DefiningOp()
		if step == nil || step.Name() != loop.OpFma || lanesOf(step.Result(0).Type()) != 1 || step.Operand(2) != body.Args[1] {
			return nil, "a dot product is not a sum of fused multiply-adds"
		}
		lk, rk := elemKindOf(d.Lhs.Output().Type()), elemKindOf(d.Rhs.Output().Type())
		// 8-bit integers summed in i32: the int8 form (int8.go)
		intDot := elemKindOf(step.Result(0).Type()) == ir.I32 && byteInt(lk) && byteInt(rk)
		if !intDot && elemKindOf(step.Result(0).Type()) != ir.F32 {
			return nil, "a dot product is not a sum of f32 fused multiply-adds (or of i32 ones of 8-bit integers)"
		}
		// an i8 or f8 right operand widened to lk is exact: the decode
		// form converts it in registers (a dequantize prologue)
		narrow := !intDot && lk != rk && (lk == ir.BF16 || lk == ir.F16) && dequantKind(rk)
		if !intDot && !narrow && (lk != rk || (lk != ir.BF16 && lk != ir.F16)) {
			return nil, fmt.Sprintf("it multiplies %s by %s; mma.sync takes bf16 x bf16, f16 x f16 or 8-bit integers summed in i32 here", lk, rk)
		}
		if i == 0 {
			tp.half, tp.int8 = lk, intDot
		} else if lk != tp.half || intDot != tp.int8 {
			return nil, "its dot products multiply different types"
		}
		if lanesOf(d.Lhs.Output().Type()) != 1 || lanesOf(d.Rhs.Output().Type()) != 1 {
			return nil, "its operands are read as vectors"
		}
		rhsOf := func(v *ir.Value) bool {
			return isCastOf(v, d.Rhs.Output()) || narrow && isWidenedOf(v, d.Rhs.Output(), lk)
		}
		if !(isCastOf(step.Operand(0), d.Lhs.Output()) && rhsOf(step.Operand(1))) &&
			!(isCastOf(step.Operand(1), d.Lhs.Output()) && rhsOf(step.Operand(0))) {
			return nil, "a dot product multiplies other values than its operands widened to f32"
		}
		tp.bKind = append(tp.bKind, rk)
		kv := body.Args[0]
		li, ri := d.Lhs.Indices(), d.Rhs.Indices()
		for _, x := range li[:len(li)-1] {
			if x.DependsOn(kv) || x.DependsOn(col) {
				return nil, "its left operand's rows depend on k or the column"
			}
		}
		if i > 0 {
			l0 := mm.Dots[0].Lhs.Indices()
			k0 := mm.Dots[0].Loop.Body().Entry().Args[0]
			if len(l0) != len(li) {
				return nil, "its dot products read the left operand differently"
			}
			for j := range li {
				if !sameIndex(li[j], l0[j], kv, k0) {
					return nil, "its dot products read the left operand differently"
				}
			}
		}
		nr := len(ri)
		for _, x := range ri[:nr-2] {
			if x.DependsOn(kv) || x.DependsOn(col) || !batchOnly(x, row, mDim) {
				return nil, "its right operand varies within a matrix of the result"
			}
		}
		tp.transB = append(tp.transB, d.TransposeB)
		bm := d.Rhs.Memref().Type().(ir.MemRefType)
		last := bm.Shape[len(bm.Shape)-1]
		if !d.TransposeB && last == ir.Dynamic {
			return nil, "its right operand [k, n] has rows of dynamic length"
		}
		rowElems := int64(8) // a row's elements in 16 bytes
		if intDot {
			rowElems = 16
		}
		tp.alignedB = append(tp.alignedB, last != ir.Dynamic && last%rowElems == 0)
		if i == 0 {
			am := d.Lhs.Memref().Type().(ir.MemRefType)
			al := am.Shape[len(am.Shape)-1]
			tp.alignedA = al != ir.Dynamic && al%rowElems == 0
		}
	}
	tp.mm = mm
	if tp.int8 {
		if why := tp.int8Why(); why != "" {
			return nil, why
		}
		tp.K /= 2 // pairs of bytes (int8.go)
	}
	if why := tp.dequantWhy(); why != "" {
		return nil, why
	}
	if decodeTakes(tp) {
		if tcDecodeTwin > 0 || (mDim.ext == nil && mDim.n <= TCDecodeMaxRows) {
			bm := tcDecodeTwin
			if bm == 0 {
				bm = TCDecodeMaxRows
				if mDim.n <= 16 {
					bm = 16
				}
			}
			planDecode(tp, bm)
			tp.twin = tcDecodeTwin > 0
			tiles()
			return tp, ""
		}
		tp.decodeDyn = mDim.ext != nil && !wgNarrow // (the 128-column twin has none)
	}
	if wgmmaTakes(tp) {
		rowTiles := int64(-1) // the tiles along the rows: unknown where an extent is `?`
		if len(want) == 0 && mDim.n > 0 {
			rowTiles = static / mDim.n * ceilDiv(mDim.n, tcBM)
		}
		planWG(tp, rowTiles)
		tiles()
		return tp, ""
	}
	tiles()
	off := int64(tcBM * tcPitchK * 2)
	for _, t := range tp.transB {
		tp.bOff = append(tp.bOff, off)
		if tp.dequant() {
			tp.b8Off = append(tp.b8Off, off)
			off += tcBN * tp.pitchB8() // [n, k] in its own bytes (dequant.go)
		} else if t {
			off += tcBN * tcPitchK * 2
		} else {
			off += tcBK * tcPitchN * 2
		}
	}
	tp.stageBytes = off
	// one dot product: 4 warps of 64 x 64 (128 accumulators a thread, 8
	// ldmatrix.x4 for 32 mma.sync a k-step); two: 8 warps of 64 x 32 per
	// dot product (the same ratio, A's fragments shared)
	// (a dequantized weight: 8 warps for one dot product too, so that the
	// converted fragments fit the registers beside the accumulators: on
	// the H100 4 warps of 64 x 64 took 255 registers and spilled 408 bytes)
	tp.threads, tp.warpsN = 256, 4
	if len(mm.Dots) == 1 && !tp.dequant() {
		tp.threads, tp.warpsN = 128, 2
	}
	tp.wtn = tcBN / tp.warpsN
	budget := int64(maxSharedBytes)
	if len(mm.Dots) == 1 {
		budget = tcSharedTwo
	}
	tp.stages = tcStages
	for tp.stages > 3 && tp.sharedBytes() > budget {
		tp.stages--
	}
	if tp.sharedBytes() > maxSharedBytes {
		return nil, "its stages do not fit shared memory"
	}
	return tp, ""
}

// isCastOf reports whether v is load widened to f32 by one loop.cast.
func isCastOf(v, load *ir.Value) bool {
	op := v.DefiningOp()
	return op != nil && op.Name() == loop.OpCast && op.Operand(0) == load
}

// sameIndex reports whether a (with k value ka) and b (kb) compute the
// same index.
func sameIndex(a, b, ka, kb *ir.Value) bool {
	if a == b || (a == ka && b == kb) {
		return true
	}
	oa, ob := a.DefiningOp(), b.DefiningOp()
	if oa == nil || ob == nil || oa.Name() != ob.Name() || oa.NumOperands() != ob.NumOperands() || oa.NumRegions() > 0 {
		return false
	}
	if ca, ok := loop.AsConst(oa); ok {
		cb, _ := loop.AsConst(ob)
		return ca.Value() == cb.Value() && a.Type().String() == b.Type().String()
	}
	if !isIndexOp(oa.Name()) {
		return false
	}
	for i := range oa.Operands() {
		if !sameIndex(oa.Operand(i), ob.Operand(i), ka, kb) {
			return false
		}
	}
	return true
}

func isIndexOp(name string) bool {
	switch name {
	case loop.OpAddi, loop.OpSubi, loop.OpMuli, loop.OpDivi, loop.OpRemi, loop.OpMini:
		return true
	}
	return false
}

// batchOnly reports whether index v depends on the grid's row only
// through the matrix the row lies in: row / M (or / a multiple of a
// static M), or the row itself when M is 1. The right operand is then one
// matrix per tile, read with the tile's first row.
func batchOnly(v, row *ir.Value, m extentRef) bool {
	if v == row {
		return m.ext == nil && m.n == 1
	}
	op := v.DefiningOp()
	if op == nil || !v.DependsOn(row) {
		return true
	}
	if op.Name() == loop.OpDivi && op.Operand(0) == row {
		d := op.Operand(1)
		if m.ext != nil && d == m.ext {
			return true
		}
		if c, ok := staticIndex(d); ok && m.ext == nil && m.n > 0 && c%m.n == 0 {
			return true
		}
	}
	if !isIndexOp(op.Name()) {
		return false
	}
	for _, a := range op.Operands() {
		if !batchOnly(a, row, m) {
			return false
		}
	}
	return true
}

// extentRef is one extent of a buffer argument: static n, or the extent
// argument ext (extIndex among the extents).
type extentRef struct {
	n        int64
	ext      *ir.Value
	extIndex int
}

// extentRefs gives the extents of every buffer argument, as the emitter
// binds them (the `?` of the buffers in order take the extent arguments
// in order).
func extentRefs(ke *kernelEmitter) map[*ir.Value][]extentRef {
	nbuf := int(ke.k.NumInputs() + ke.k.NumOutputs())
	args := ke.body.Args
	next := 0
	out := map[*ir.Value][]extentRef{}
	for _, a := range args[:nbuf] {
		m, _ := a.Type().(ir.MemRefType)
		var ds []extentRef
		for _, n := range m.Shape {
			if n == ir.Dynamic {
				if nbuf+next < len(args) {
					ds = append(ds, extentRef{ext: args[nbuf+next], extIndex: next})
				}
				next++
				continue
			}
			ds = append(ds, extentRef{n: n})
		}
		out[a] = ds
	}
	return out
}

// productOf writes index v as a static factor times extent arguments (a
// multiset); false when it is anything else.
func productOf(v *ir.Value) (int64, map[*ir.Value]int, bool) {
	if c, ok := staticIndex(v); ok {
		return c, map[*ir.Value]int{}, true
	}
	if v.IsBlockArg() {
		return 1, map[*ir.Value]int{v: 1}, true
	}
	op := v.DefiningOp()
	if op.Name() != loop.OpMuli {
		return 0, nil, false
	}
	a, ea, ok1 := productOf(op.Operand(0))
	b, eb, ok2 := productOf(op.Operand(1))
	if !ok1 || !ok2 {
		return 0, nil, false
	}
	for x, c := range eb {
		ea[x] += c
	}
	return a * b, ea, true
}

// ---------------------------------------------------------------------------
// Emission

// tcOperand is the per-thread state of copying one operand's chunks.
type tcOperand struct {
	row   []opnd // global address of the chunk's row (or matrix) at k = 0, per pass
	valid []opnd // the row (A, [n, k] B) lies inside the result
	// fast path (rows 16-byte aligned, K a multiple of tcBK): the
	// address of the thread's chunk at k = 0 and the src-size operand,
	// both set once per tile
	src    []opnd
	size   []opnd
	n      opnd // [k, n] B: the first column of the thread's chunk
	nValid opnd
	nLeft  opnd // [k, n] B: the halves of the chunk inside N (0 to 8)
	dst    opnd // a dequantized B: where the thread's chunk lands in stage 0
}

// Copy geometry: a K row of a tile is bk/8 chunks of 16 bytes.
const tcGroupM = 16 // tiles along M that take the columns in turn (L2 reuse of B)

// chunksK is the 16-byte chunks of a K row (A, [n, k] B), kShift
// log2(bk).
func (tp *tcPlan) chunksK() int64 { return tp.bk / 8 }
func (tp *tcPlan) kShift() int64  { return int64(bits.TrailingZeros64(uint64(tp.bk))) }

// rowsK is the K rows (A, [n, k] B) the CTA copies in one pass, passK
// the passes over a tile of bm rows, passB over bn rows of a [n, k] B;
// rowsN and passN the same for the BK rows of a [k, n] B (bn/8 chunks
// each).
func (tp *tcPlan) rowsK() int64 { return tp.threads / tp.chunksK() }
func (tp *tcPlan) passK() int   { return int(tp.bm / tp.rowsK()) }
func (tp *tcPlan) passB() int   { return int(tp.bn / tp.rowsK()) } // of a B [n, k]
func (tp *tcPlan) rowsN() int64 { return tp.threads / tp.chunksN() }
func (tp *tcPlan) passN() int   { return int(tp.bk / tp.rowsN()) }

// chunksN is the 16-byte chunks of a [k, n] B row of a tile, pitchN the
// bytes between two such rows in a stage (bn + tcPad halves).
func (tp *tcPlan) chunksN() int64 { return tp.bn / 8 }
func (tp *tcPlan) pitchN() int64  { return (tp.bn + tcPad) * 2 }

// fastK reports whether the chunks of an operand with rows aligned as
// given never need clamping along K.
func (tp *tcPlan) fastK(aligned bool) bool { return aligned && tp.K%tp.bk == 0 }

// emitTC writes the tensor-core kernel (after the kernel's prologue).
func (ke *kernelEmitter) emitTC() {
	a := ke.a
	tp := ke.plan.tc
	mm := tp.mm
	ob := ke.bufs[tp.out]
	nd := len(ob.dims)
	M := ob.dims[nd-2]
	batch := constIx(1)
	for _, d := range ob.dims[:nd-2] {
		batch = ke.ixMul(batch, d)
	}
	nt := ceilDiv(tp.N, tp.bn)
	mReg := ke.ixReg(M)
	mt := ke.ixDiv(ke.ixAdd(M, constIx(tp.bm-1)), constIx(tp.bm))
	if tp.decode {
		// a decode kernel runs for at most bm rows a matrix (static, or
		// the launcher takes the twin for no more): one tile of rows, so
		// that a tile is a matrix and a column tile, with no division by
		// run-time tile counts
		mt = constIx(1)
	}
	perMatrix := ke.ixMul(mt, constIx(nt))
	tiles := ke.ixMul(batch, perMatrix)
	tilesReg := ke.ixReg(tiles)
	perMatrixReg := ke.ixReg(perMatrix)
	mLast := ke.ixReg(ke.ixAdd(M, constIx(-1)))
	mtReg := ke.ixReg(mt)

	// the thread's coordinates: warp (wm, wn), lane (g, t)
	tid := ke.tid
	warp := ke.b64("shr.u64", tid, intImm(5, rB32))
	lane := ke.b64("and.b64", tid, intImm(31, rB64))
	var wm, wn opnd // mma.sync: the warp's place in the tile
	if !tp.wg {
		wm = ke.b64("shr.u64", warp, intImm(tp.warpsN/2, rB32)) // warpsN is 2 or 4
		wn = ke.b64("and.b64", warp, intImm(tp.warpsN-1, rB64))
	}
	g := ke.b64("shr.u64", lane, intImm(2, rB32))
	t4 := ke.b64("and.b64", lane, intImm(3, rB64))
	base := ke.smemCTA
	var aLane opnd
	var bLane []opnd
	var wgd *wgDescs
	if tp.wg {
		base = ke.wgBase()
		wgd = ke.wgDescriptors(tp, base, warp)
	} else if tp.dequant() {
		aLane, bLane = ke.dqLanes(tp, g, t4, wm, wn)
	} else {
		aLane, bLane = ke.tcLanes(tp, lane, wm, wn)
	}
	// where the thread's chunks land in stage 0
	chunk := ke.b64("and.b64", tid, intImm(tp.chunksK()-1, rB64)) // 8-half chunk of a K row
	crow := ke.b64("shr.u64", tid, intImm(tp.kShift()-3, rB32))   // row of a tile (and + tp.rowsK() per pass)
	dChunk := chunk
	if tp.wg {
		// 128-byte swizzle: chunk c of row r lies at chunk c ^ (r % 8)
		dChunk = ke.b64("xor.b64", chunk, ke.b64("and.b64", crow, intImm(7, rB64)))
	}
	dK0 := ke.b64("add.s64", base, ke.b64("mad.lo.s64", crow, intImm(tp.pitchK(), rB64), ke.b64("shl.b64", dChunk, intImm(4, rB32))))
	krN := ke.b64("shr.u64", tid, intImm(int64(bits.TrailingZeros64(uint64(tp.chunksN()))), rB32)) // [k, n] B: K row of the chunk
	cN := ke.b64("and.b64", tid, intImm(tp.chunksN()-1, rB64))                                     // [k, n] B: chunk of the row
	dN0 := ke.b64("add.s64", ke.smemCTA, ke.b64("mad.lo.s64", krN, intImm(tp.pitchN(), rB64), ke.b64("shl.b64", cN, intImm(4, rB32))))

	// split-K (the three parameters after the extents): the parts of K,
	// the f32 workspace of their partial tiles, a counter per tile
	nargs := len(ke.body.Args)
	param := func(i int) opnd {
		r := a.reg(rB64)
		a.raw(nil, false, "ld.param.u64", r.s, "["+ke.paramName(nargs+i)+"]")
		return r
	}
	split := param(0)
	wsBase := ke.b64("cvta.to.global.u64", param(1))
	cntBase := ke.b64("cvta.to.global.u64", param(2))
	kT := ceilDiv(tp.K, tp.bk)
	kPer := ke.b64("div.s64", ke.b64("add.s64", split, intImm(kT-1, rB64)), split) // steps of K a part
	work := ke.b64("mul.lo.s64", tilesReg, split)

	ctaid := ke.specialReg("%ctaid.x")
	nctaid := ke.specialReg("%nctaid.x")
	q := a.reg(rB64)
	a.ins("mov.b64", q, ctaid)
	tileL, done := a.newLabel(), a.newLabel()
	a.comment("(tile, part of K) = (q %% tiles, q / tiles); tiles of %d x %d: batch-major, then groups of %d tiles along M that walk the columns", tp.bm, tp.bn, tcGroupM)
	a.label(tileL)
	p := a.reg(rPred)
	a.ins("setp.ge.s64", p, q, work)
	a.bra(&p, false, done)
	ke.pushScope()
	part := ke.b64("div.s64", q, tilesReg)
	tq := ke.b64("rem.s64", q, tilesReg)
	kLo := ke.b64("mul.lo.s64", part, kPer)
	kHi := ke.b64("min.s64", ke.b64("add.s64", kLo, kPer), intImm(kT, rB64))
	bIdx := ke.b64("div.s64", tq, perMatrixReg)
	rest := ke.b64("rem.s64", tq, perMatrixReg)
	m0, ntile := ke.b64("mov.b64", intImm(0, rB64)), rest // decode: the one tile of rows
	if !tp.decode {
		width := intImm(tcGroupM*nt, rB64)
		firstM := ke.b64("mul.lo.s64", ke.b64("div.s64", rest, width), intImm(tcGroupM, rB64))
		gsz := ke.b64("min.s64", ke.b64("sub.s64", mtReg, firstM), intImm(tcGroupM, rB64))
		inGroup := ke.b64("rem.s64", rest, width)
		mtile := ke.b64("add.s64", firstM, ke.b64("rem.s64", inGroup, gsz))
		ntile = ke.b64("div.s64", inGroup, gsz)
		m0 = ke.b64("shl.b64", mtile, intImm(int64(bits.TrailingZeros64(uint64(tp.bm))), rB32)) // bm: a power of 2
	}
	n0 := ke.b64("shl.b64", ntile, intImm(int64(bits.TrailingZeros64(uint64(tp.bn))), rB32)) // bn: a power of 2
	row0 := ke.b64("mul.lo.s64", bIdx, mReg)                                                 // the matrix's first row of the grid

	// per-thread copy state
	var opA tcOperand
	opsB := make([]tcOperand, len(mm.Dots))
	fastSize := func(valid opnd) opnd {
		return ke.b32("selp.b32", intImm(16, rB32), intImm(0, rB32), valid)
	}
	for h := 0; h < tp.passK(); h++ {
		m := ke.b64("add.s64", ke.b64("add.s64", m0, crow), intImm(int64(tp.rowsK()*int64(h)), rB64))
		v := ke.pred("setp.lt.s64", m, mReg)
		r := ke.b64("add.s64", row0, ke.b64("min.s64", m, mLast))
		ra := ke.tcAddr(mm.Dots[0].Lhs, r, constIx(0), 0)
		opA.valid = append(opA.valid, v)
		opA.row = append(opA.row, ra)
		if tp.fastK(tp.alignedA) {
			opA.src = append(opA.src, ke.b64("add.s64", ra, ke.b64("shl.b64", chunk, intImm(4, rB32))))
			opA.size = append(opA.size, fastSize(v))
		}
	}
	for d, dot := range mm.Dots {
		op := &opsB[d]
		if tp.dequant() {
			ke.dqOperand(tp, op, d, n0, row0, base)
			continue
		}
		if tp.transB[d] {
			for h := 0; h < tp.passB(); h++ {
				n := ke.b64("add.s64", ke.b64("add.s64", n0, crow), intImm(int64(tp.rowsK()*int64(h)), rB64))
				v := ke.pred("setp.lt.s64", n, intImm(tp.N, rB64))
				nc := ke.b64("min.s64", n, intImm(tp.N-1, rB64))
				ra := ke.tcAddr(dot.Rhs, row0, ixv{reg: nc, has: true}, d)
				op.valid = append(op.valid, v)
				op.row = append(op.row, ra)
				if tp.fastK(tp.alignedB[d]) {
					op.src = append(op.src, ke.b64("add.s64", ra, ke.b64("shl.b64", chunk, intImm(4, rB32))))
					op.size = append(op.size, fastSize(v))
				}
			}
			continue
		}
		// [k, n]: rows k = tid/16 (and + 16 per pass), columns n0 + 8*(tid%16)
		op.row = []opnd{ke.tcAddr(dot.Rhs, row0, constIx(0), d)}
		op.n = ke.b64("add.s64", n0, ke.b64("shl.b64", cN, intImm(3, rB32)))
		op.nValid = ke.pred("setp.lt.s64", op.n, intImm(tp.N, rB64))
		nLeft := ke.b64("sub.s64", intImm(tp.N, rB64), op.n)
		op.nLeft = ke.b64("max.s64", ke.b64("min.s64", nLeft, intImm(8, rB64)), intImm(0, rB64))
		if tp.fastK(tp.alignedB[d]) {
			b := ke.buf(dot.Rhs.Operation, dot.Rhs.Memref())
			st := b.strides[len(b.strides)-2]
			ncl := ke.b64("min.s64", op.n, intImm(max(tp.N-8, 0), rB64))
			base := ke.b64("add.s64", op.row[0], ke.b64("shl.b64", ncl, intImm(1, rB32)))
			size := ke.b32("cvt.u32.u64", ke.b64("shl.b64", op.nLeft, intImm(1, rB32)))
			for h := 0; h < tp.passN(); h++ {
				k := ke.b64("add.s64", krN, intImm(int64(tp.rowsN()*int64(h)), rB64))
				op.src = append(op.src, ke.b64("add.s64", base, ke.ixReg(ke.ixScale(ke.ixMul(ixv{reg: k, has: true}, st), b.esize))))
				op.size = append(op.size, size)
			}
		}
	}

	// accumulators: ni x nj mma tiles of 16 x 8, 4 registers each (the
	// wgmma form: one row of 16 tiles, a warp's 16 rows of m64n128)
	ni, nj := tp.ni(), int(tp.wtn/8)
	if tp.wg {
		ni, nj = 1, int(tp.bn/8)
	}
	acc := make([][]opnd, len(mm.Dots))
	for d := range acc {
		acc[d] = make([]opnd, ni*nj*4)
		for i := range acc[d] {
			if tp.int8 {
				acc[d][i] = a.reg(rB32)
				a.ins("mov.b32", acc[d][i], intImm(0, rB32))
			} else {
				acc[d][i] = a.reg(rF32)
				a.ins("mov.f32", acc[d][i], f32Imm(0))
			}
		}
	}

	stages, ahead := tp.stages, tp.ahead()
	a.comment("prologue: the first %d stages of the part's K, [kLo, kHi) in steps of %d", ahead, tp.bk)
	for s := int64(0); s < ahead; s++ {
		if s < kT {
			skip := a.newLabel()
			ks := ke.b64("add.s64", kLo, intImm(s, rB64))
			ps := ke.pred("setp.ge.s64", ks, kHi)
			a.bra(&ps, false, skip)
			ke.pushScope()
			ke.tcCopy(tp, &opA, opsB, ks, intImm(s*tp.stageBytes, rB64), dK0, dN0, krN)
			ke.popScope()
			a.label(skip)
		}
		a.raw(nil, false, "cp.async.commit_group")
	}
	kt := a.reg(rB64)
	a.ins("mov.b64", kt, kLo)
	sCur, sNext := a.reg(rB64), a.reg(rB64)
	a.ins("mov.b64", sCur, intImm(0, rB64))
	a.ins("mov.b64", sNext, intImm(ahead*tp.stageBytes, rB64))
	kL, kDone := a.newLabel(), a.newLabel()
	pNone := ke.pred("setp.ge.s64", kLo, kHi)
	a.bra(&pNone, false, kDone) // an empty part (split-K): its sums are 0
	a.comment("the loop over K, %d at a time, %d stages", tp.bk, stages)
	a.label(kL)
	ke.pushScope()
	a.raw(nil, false, "cp.async.wait_group", itoa(ahead-1))
	if tp.wg {
		// the stage's copies (generic proxy) before wgmma reads it (async proxy)
		a.raw(nil, false, "fence.proxy.async.shared::cta")
	}
	a.ins("bar.sync", intImm(0, rB32))
	ktn := ke.b64("add.s64", kt, intImm(ahead, rB64))
	skip := a.newLabel()
	pk := ke.pred("setp.ge.s64", ktn, kHi)
	a.bra(&pk, false, skip)
	ke.pushScope()
	ke.tcCopy(tp, &opA, opsB, ktn, sNext, dK0, dN0, krN)
	ke.popScope()
	a.label(skip)
	a.raw(nil, false, "cp.async.commit_group")
	switch {
	case tp.wg && tp.dequant():
		ke.wgConvert(tp, base, sCur)
		ke.wgStep(tp, wgd, sCur, acc)
	case tp.wg:
		ke.wgStep(tp, wgd, sCur, acc)
	case tp.dequant():
		ke.dqStep(tp, sCur, aLane, bLane, acc, nj)
	default:
		ke.tcStep(tp, sCur, aLane, bLane, acc, nj)
	}
	// rotate the stages
	for _, s := range []opnd{sCur, sNext} {
		a.ins("add.s64", s, s, intImm(tp.stageBytes, rB64))
		w := ke.pred("setp.ge.s64", s, intImm(stages*tp.stageBytes, rB64))
		a.ins("selp.b64", s, intImm(0, rB64), s, w)
	}
	ke.popScope()
	a.ins("add.s64", kt, kt, intImm(1, rB64))
	pl := ke.pred("setp.lt.s64", kt, kHi)
	a.bra(&pl, false, kL)
	a.label(kDone)
	if tp.wg {
		a.raw(nil, false, "wgmma.wait_group.sync.aligned", "0")
	}
	a.raw(nil, false, "cp.async.wait_group", "0")
	a.comment("every warp is done with the stages before the next tile's copies")
	a.ins("bar.sync", intImm(0, rB32))
	ke.tcEnd(tp, acc, ni, nj, split, wsBase, cntBase, tq, part, m0, n0, warp, wm, wn, g, t4, row0, mReg, mLast)
	ke.popScope()
	a.ins("add.s64", q, q, nctaid)
	a.bra(nil, false, tileL)
	a.label(done)
}

// tcStep multiplies the stage at byte offset sCur by ldmatrix and
// mma.sync into the accumulators.
func (ke *kernelEmitter) tcStep(tp *tcPlan, sCur, aLane opnd, bLane []opnd, acc [][]opnd, nj int) {
	a := ke.a
	mm := tp.mm
	aBase := ke.b64("add.s64", sCur, aLane)
	bBase := make([]opnd, len(mm.Dots))
	for d := range bBase {
		bBase[d] = ke.b64("add.s64", sCur, bLane[d])
	}
	pitch := tp.pitchK()
	for kk := int64(0); kk < tp.bk; kk += 16 {
		af := make([][]opnd, tp.ni())
		for i := range af {
			af[i] = ke.tcRegs(4)
			a.raw(nil, false, "ldmatrix.sync.aligned.m8n8.x4.shared.b16", vecRef(af[i]), memRef(aBase, int64(i)*16*pitch+kk*2))
		}
		for d := range mm.Dots {
			bf := make([][]opnd, nj/2)
			for jp := range bf {
				bf[jp] = ke.tcRegs(4)
				if tp.transB[d] {
					a.raw(nil, false, "ldmatrix.sync.aligned.m8n8.x4.shared.b16", vecRef(bf[jp]), memRef(bBase[d], int64(jp)*16*pitch+kk*2))
				} else {
					a.raw(nil, false, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16", vecRef(bf[jp]), memRef(bBase[d], kk*tp.pitchN()+int64(jp)*16*2))
				}
			}
			for i := range af {
				for j := 0; j < nj; j++ {
					c := acc[d][(i*nj+j)*4 : (i*nj+j)*4+4]
					b := bf[j/2][2*(j%2) : 2*(j%2)+2]
					a.raw(nil, false, tp.mmaSync(d), vecRef(c), vecRef(af[i]), vecRef(b), vecRef(c))
				}
			}
		}
	}
}

// tcEnd writes what follows the loop over K in a tile: split-K's sums,
// then the epilogue per accumulator element. Accumulator (i*nj+j)*4 +
// 2*h + c of a thread is the element at row mW + 16*i + 8*h, column
// nW + 8*j + c, with (mW, nW) the thread's first: for mma.sync warp
// (wm, wn)'s tile row 64*wm + g, column wn*wtn + 2*t4; for wgmma
// warpgroup w's warp q row 64*w + 16*q + g, column 2*t4.
func (ke *kernelEmitter) tcEnd(tp *tcPlan, acc [][]opnd, ni, nj int, split, wsBase, cntBase, tq, part, m0, n0, warp, wm, wn, g, t4, row0, mReg, mLast opnd) {
	a := ke.a
	mm := tp.mm
	gb := mm.Grid.Body().Entry()
	row, col := gb.Args[0], mm.Cols.Body().Entry().Args[0]
	epi, next := a.newLabel(), a.newLabel()
	ke.tcSplitK(tp, acc, split, wsBase, cntBase, tq, part, epi, next)
	a.label(epi)

	// the epilogue, per element of the accumulators
	a.comment("epilogue: the loop IR after the dot products, per element")
	var mW, nW opnd
	if tp.wg {
		mW = ke.b64("add.s64", m0, ke.b64("shl.b64", warp, intImm(4, rB32))) // 64*w + 16*q = 16*warp
		mW = ke.b64("add.s64", mW, g)
		nW = ke.b64("add.s64", n0, ke.b64("shl.b64", t4, intImm(1, rB32)))
	} else {
		mW = ke.b64("add.s64", m0, ke.b64("mul.lo.s64", wm, intImm(tp.wtm(), rB64)))
		mW = ke.b64("add.s64", mW, g)
		nW = ke.b64("add.s64", n0, ke.b64("mul.lo.s64", wn, intImm(tp.wtn, rB64)))
		nW = ke.b64("add.s64", nW, ke.b64("shl.b64", t4, intImm(1, rB32)))
	}
	nCheck := tp.N%tp.bn != 0
	cb := mm.Cols.Body().Entry()
	dots := map[*ir.Operation]int{}
	for d, dot := range mm.Dots {
		dots[dot.Loop.Operation] = d
	}
	for i := 0; i < ni; i++ {
		for h := 0; h < 2; h++ {
			m := ke.b64("add.s64", mW, intImm(int64(i*16+8*h), rB64))
			inM := ke.pred("setp.lt.s64", m, mReg)
			r := ke.b64("add.s64", row0, ke.b64("min.s64", m, mLast))
			ke.pushScope()
			ke.ixs[row] = ixv{reg: r, has: true}
			ke.mults[row] = 1
			ke.ldPred, ke.stPred = &inM, &inM
			for op := gb.First(); op != mm.Cols.Operation; op = op.Next() {
				ke.emitOp(op)
			}
			for j := 0; j < nj; j++ {
				for c := 0; c < 2; c++ {
					n := ixv{reg: nW, has: true, off: int64(j*8 + c)}
					in := &inM
					if nCheck {
						pn := ke.pred("setp.lt.s64", ke.ixReg(n), intImm(tp.N, rB64))
						in = ke.andPred(&inM, &pn)
					}
					ke.ixs[col] = n
					ke.mults[col] = 1
					ke.ldPred, ke.stPred = in, in
					for d, dot := range mm.Dots {
						ke.vals[dot.Loop.Values()[0]] = []opnd{acc[d][(i*nj+j)*4+2*h+c]}
					}
					for op := cb.First(); op != nil; op = op.Next() {
						if _, isDot := dots[op]; isDot || op.Name() == loop.OpYield {
							continue
						}
						ke.emitOp(op)
					}
				}
			}
			ke.popScope()
		}
	}
	ke.ldPred, ke.stPred = nil, nil
	a.label(next)
}

// tcLanes is where the thread's ldmatrix rows start in stage 0: of A,
// and of each B.
func (ke *kernelEmitter) tcLanes(tp *tcPlan, lane, wm, wn opnd) (opnd, []opnd) {
	// ldmatrix lane offsets (bytes, in a stage)
	l16 := ke.b64("and.b64", lane, intImm(15, rB64))
	l8 := ke.b64("and.b64", lane, intImm(7, rB64))
	hi16 := ke.b64("shr.u64", lane, intImm(4, rB32))                                     // l / 16
	mid8 := ke.b64("and.b64", ke.b64("shr.u64", lane, intImm(3, rB32)), intImm(1, rB64)) // (l / 8) % 2
	// A: row wm*64 + l%16, column 8*(l/16)
	aRow := ke.b64("mad.lo.s64", wm, intImm(tp.wtm(), rB64), l16)
	aLane := ke.b64("mad.lo.s64", aRow, intImm(tp.pitchK(), rB64), ke.b64("shl.b64", hi16, intImm(4, rB32)))
	aLane = ke.b64("add.s64", aLane, ke.smemCTA)
	bLane := make([]opnd, len(tp.mm.Dots))
	for d, tr := range tp.transB {
		if tr {
			// rows n = wn*wtn + l%8 + 8*(l/16), column k 8*((l/8)%2)
			n := ke.b64("add.s64", ke.b64("mad.lo.s64", wn, intImm(tp.wtn, rB64), l8), ke.b64("shl.b64", hi16, intImm(3, rB32)))
			bLane[d] = ke.b64("mad.lo.s64", n, intImm(tp.pitchK(), rB64), ke.b64("shl.b64", mid8, intImm(4, rB32)))
		} else {
			// rows k = l%8 + 8*((l/8)%2), column n wn*wtn + 8*(l/16)
			kr := ke.b64("add.s64", l8, ke.b64("shl.b64", mid8, intImm(3, rB32)))
			n := ke.b64("add.s64", ke.b64("mul.lo.s64", wn, intImm(tp.wtn, rB64)), ke.b64("shl.b64", hi16, intImm(3, rB32)))
			bLane[d] = ke.b64("mad.lo.s64", kr, intImm(tp.pitchN(), rB64), ke.b64("shl.b64", n, intImm(1, rB32)))
		}
		bLane[d] = ke.b64("add.s64", ke.b64("add.s64", bLane[d], ke.smemCTA), intImm(tp.bOff[d], rB64))
	}
	return aLane, bLane
}

// tcRegs returns n fresh b32 registers.
func (ke *kernelEmitter) tcRegs(n int) []opnd {
	out := make([]opnd, n)
	for i := range out {
		out[i] = ke.a.reg(rB32)
	}
	return out
}

// tcAddr is the global address of ld's element at grid row r, column
// col and k = 0 (for a [k, n] right operand: also column 0 when col is
// the constant 0), through the index arithmetic of the row code and of
// dot d's body.
func (ke *kernelEmitter) tcAddr(ld loop.LoadOp, r opnd, col ixv, d int) opnd {
	mm := ke.plan.tc.mm
	gb := mm.Grid.Body().Entry()
	ke.ixs[gb.Args[0]] = ixv{reg: r, has: true}
	ke.mults[gb.Args[0]] = 1
	cv := mm.Cols.Body().Entry().Args[0]
	ke.ixs[cv] = col
	ke.mults[cv] = 1
	body := mm.Dots[d].Loop.Body().Entry()
	ke.ixs[body.Args[0]] = constIx(0)
	ke.mults[body.Args[0]] = 0
	emitIdx := func(b *ir.Block, stop *ir.Operation) {
		for op := b.First(); op != nil && op != stop; op = op.Next() {
			if isIndexOp(op.Name()) || (op.Name() == loop.OpConst && elemKindOf(op.Result(0).Type()) == ir.Index) {
				ke.emitOp(op)
			}
		}
	}
	emitIdx(gb, mm.Cols.Operation)
	emitIdx(mm.Cols.Body().Entry(), mm.Dots[d].Loop.Operation)
	emitIdx(body, nil)
	b := ke.buf(ld.Operation, ld.Memref())
	ad := ke.access(ld.Operation, b, ld.Indices())
	if ad.off == 0 {
		return ad.reg
	}
	return ke.b64("add.s64", ad.reg, intImm(ad.off, rB64))
}

// tcCopy copies stage kt of K (a b64 register or immediate) of A and of
// every B into the shared stage at byte offset sOff: cp.async of 16
// bytes, zero-filled past the edges, or predicated 2-byte loads where
// rows are not aligned. dK0 and dN0 are where the thread's chunks land
// in stage 0 (K rows and [k, n] rows), kr the thread's row of a [k, n]
// pass.
func (ke *kernelEmitter) tcCopy(tp *tcPlan, opA *tcOperand, opsB []tcOperand, kt, sOff, dK0, dN0, kr opnd) {
	a := ke.a
	dK := ke.b64("add.s64", dK0, sOff)
	k0 := ke.b64("shl.b64", kt, intImm(tp.kShift(), rB32))
	var kb opnd // fast path: the bytes of the stage's first k in a K row
	if tp.fastK(tp.alignedA) || tp.fastK(anyAlignedTrans(tp.alignedB, tp.transB)) {
		kb = ke.b64("shl.b64", kt, intImm(tp.kShift()+1, rB32))
	}
	// slow path: the thread's K chunk k0 + 8*chunk, the halves left in it
	var kc, left, kcl opnd
	slow := func() {
		if kc.s != "" {
			return
		}
		chunk := ke.b64("and.b64", ke.tid, intImm(tp.chunksK()-1, rB64))
		kc = ke.b64("add.s64", k0, ke.b64("shl.b64", chunk, intImm(3, rB32)))
		left = ke.b64("sub.s64", intImm(tp.K, rB64), kc)
		left = ke.b64("max.s64", ke.b64("min.s64", left, intImm(8, rB64)), intImm(0, rB64))
		kcl = ke.b64("min.s64", kc, intImm((tp.K-1)/8*8, rB64))
	}
	copyK := func(op *tcOperand, h int, aligned bool, dstOff int64) {
		if tp.fastK(aligned) {
			src := ke.b64("add.s64", op.src[h], kb)
			a.raw(nil, false, "cp.async.cg.shared.global", memRef(dK, dstOff), memRef(src, 0), "16", op.size[h].s)
			return
		}
		slow()
		valid := op.valid[h]
		if aligned {
			src := ke.b64("add.s64", op.row[h], ke.b64("shl.b64", kcl, intImm(1, rB32)))
			n := ke.b64("selp.b64", ke.b64("shl.b64", left, intImm(1, rB32)), intImm(0, rB64), valid)
			a.raw(nil, false, "cp.async.cg.shared.global", memRef(dK, dstOff), memRef(src, 0), "16", ke.b32("cvt.u32.u64", n).s)
			return
		}
		// unaligned rows: the halves one by one (the address unclamped,
		// the loads predicated)
		src := ke.b64("add.s64", op.row[h], ke.b64("shl.b64", kc, intImm(1, rB32)))
		ke.tcScalarChunk(src, func(e int) opnd {
			pe := ke.pred("setp.gt.s64", left, intImm(int64(e), rB64))
			return ke.pred("and.pred", pe, valid)
		}, dK, dstOff)
	}
	for h := 0; h < tp.passK(); h++ {
		copyK(opA, h, tp.alignedA, int64(h)*tp.rowsK()*tp.pitchK())
	}
	for d := range opsB {
		op := &opsB[d]
		if tp.dequant() {
			ke.dqCopy(tp, op, d, kt, sOff)
			continue
		}
		if tp.transB[d] {
			for h := 0; h < tp.passB(); h++ {
				copyK(op, h, tp.alignedB[d], tp.bOff[d]+int64(h)*tp.rowsK()*tp.pitchK())
			}
			continue
		}
		// [k, n]: rows k0 + kr (+16 per pass), columns op.n .. op.n+7
		dot := ke.plan.tc.mm.Dots[d]
		b := ke.buf(dot.Rhs.Operation, dot.Rhs.Memref())
		st := b.strides[len(b.strides)-2]
		dN := ke.b64("add.s64", dN0, sOff)
		if tp.fastK(tp.alignedB[d]) {
			kbN := ke.ixReg(ke.ixScale(ke.ixMul(ixv{reg: k0, has: true}, st), b.esize))
			for h := 0; h < tp.passN(); h++ {
				src := ke.b64("add.s64", op.src[h], kbN)
				a.raw(nil, false, "cp.async.cg.shared.global", memRef(dN, tp.bOff[d]+int64(h)*tp.rowsN()*tp.pitchN()), memRef(src, 0), "16", op.size[h].s)
			}
			continue
		}
		for h := 0; h < tp.passN(); h++ {
			k := ke.b64("add.s64", ke.b64("add.s64", k0, kr), intImm(int64(tp.rowsN()*int64(h)), rB64))
			kv := ke.pred("setp.lt.s64", k, intImm(tp.K, rB64))
			kcl := ke.b64("min.s64", k, intImm(tp.K-1, rB64))
			rowAddr := ke.b64("add.s64", op.row[0], ke.ixReg(ke.ixScale(ke.ixMul(ixv{reg: kcl, has: true}, st), b.esize)))
			dOff := tp.bOff[d] + int64(h)*tp.rowsN()*tp.pitchN()
			if tp.alignedB[d] {
				ncl := ke.b64("min.s64", op.n, intImm(max(tp.N-8, 0), rB64))
				src := ke.b64("add.s64", rowAddr, ke.b64("shl.b64", ncl, intImm(1, rB32)))
				n := ke.b64("selp.b64", ke.b64("shl.b64", op.nLeft, intImm(1, rB32)), intImm(0, rB64), kv)
				a.raw(nil, false, "cp.async.cg.shared.global", memRef(dN, dOff), memRef(src, 0), "16", ke.b32("cvt.u32.u64", n).s)
				continue
			}
			src := ke.b64("add.s64", rowAddr, ke.b64("shl.b64", op.n, intImm(1, rB32)))
			ke.tcScalarChunk(src, func(e int) opnd {
				pe := ke.pred("setp.gt.s64", op.nLeft, intImm(int64(e), rB64))
				return ke.pred("and.pred", pe, kv)
			}, dN, dOff)
		}
	}
}

// anyAlignedTrans reports whether some transposed operand is aligned.
func anyAlignedTrans(aligned, trans []bool) bool {
	for i, t := range trans {
		if t && aligned[i] {
			return true
		}
	}
	return false
}

// tcScalarChunk copies 8 halves at src, each where in(e) holds (zero
// elsewhere), into the 16 shared bytes at dst+off.
func (ke *kernelEmitter) tcScalarChunk(src opnd, in func(e int) opnd, dst opnd, off int64) {
	a := ke.a
	hs := make([]opnd, 8)
	for e := range hs {
		hs[e] = a.reg(rB16)
		a.ins("mov.b16", hs[e], intImm(0, rB16))
		p := in(e)
		a.raw(&p, false, "ld.global.nc.b16", hs[e].s, memRef(src, int64(2*e)))
	}
	ws := make([]opnd, 4)
	for i := range ws {
		ws[i] = a.reg(rB32)
		a.raw(nil, false, "mov.b32", ws[i].s, "{"+hs[2*i].s+", "+hs[2*i+1].s+"}")
	}
	a.raw(nil, false, "st.shared.v4.b32", memRef(dst, off), vecRef(ws))
}

// ---------------------------------------------------------------------------
// Split-K

// tcSplitK turns split-K on: the launcher cuts K into parts where the
// tiles leave SMs idle (decode shapes of a few rows). When false it
// always launches one part (the kernel keeps its three parameters).
var tcSplitK = true

// tcMinSteps is the fewest steps of bk a part of split-K keeps (halved
// parts stop there): the pipeline's prologue fills stages-1 of them.
const tcMinSteps = 4

// tcLaunch is what the launcher needs to know about a matmul on tensor
// cores to choose and set up split-K.
type tcLaunch struct {
	out    int   // the result's index among the kernel's arguments
	steps  int64 // ceil(K / bk)
	wsTile int64 // f32 of the workspace per tile and part: dots * bm * bn
	bn     int64 // the columns of a tile
	bm     int64 // its rows
}

// tcLaunch describes a matmul on tensor cores for the launcher; nil for
// any other kernel.
func (ke *kernelEmitter) tcLaunch() *tcLaunch {
	tp := ke.plan.tc
	if tp == nil {
		return nil
	}
	l := &tcLaunch{out: -1, steps: ceilDiv(tp.K, tp.bk), wsTile: int64(len(tp.mm.Dots)) * tp.bm * tp.bn, bn: tp.bn, bm: tp.bm}
	for i, a := range ke.body.Args {
		if a == tp.out {
			l.out = i
		}
	}
	return l
}

// extraParams names the parameters a kernel takes after its extents.
func (ke *kernelEmitter) extraParams() []string {
	if ke.plan.tc == nil {
		return nil
	}
	return []string{"split-K: parts of K (1: none)", "split-K: f32 workspace [tiles, parts, chunks, threads, 4]", "split-K: i32 counter per tile, 0 between launches"}
}

// tcSplit is the number of parts split-K cuts K into for a launch of
// tiles tiles on sms SMs (the launcher's _mm_split, in Go for the tests):
// 1, unless the tiles fill at most half the SMs; each doubling keeps the
// CTAs within one per SM and at least tcMinSteps steps of K in a part.
// Prefill shapes (M = 4096: hundreds of tiles) keep 1. One CTA per SM,
// though two of one dot product fit: on the H100 at M = 1 (same call)
// qkv's 48 tiles took 57.2 us whole, 42.8 in 2 parts, 43.0 in 4, 60.5 in
// 8; down's 32 tiles 176 us, 99 in 2, 68.9 in 4, 72.9 in 8; up's 112
// tiles 65.9 us, 68.4 in 2 (the parts' sums cost more than the idle SMs).
func tcSplit(tiles, sms, steps int64) int64 {
	split := int64(1)
	for tcSplitK && tiles > 0 && 2*tiles*split <= sms && steps/(2*split) >= tcMinSteps {
		split *= 2
	}
	return split
}

// tcSplitK writes the end of a part of split-K (skipped when split is 1):
// the part stores its accumulators to the workspace, then the CTA adds 1
// to its tile's counter (after a fence); the CTA that finds split-1 there
// is the last part of the tile: it resets the counter, adds the parts up
// in order 0, 1, ... into the accumulators and goes on to the epilogue at
// epi; the others go to next. Workspace layout per (tile, part): chunk c
// of 4 accumulators of thread t at ((c * threads) + t) * 16 bytes, so
// that every v4 access of a warp is contiguous.
func (ke *kernelEmitter) tcSplitK(tp *tcPlan, acc [][]opnd, split, ws, cnt, tile, part opnd, epi, next string) {
	a := ke.a
	var chunks [][]opnd
	for d := range acc {
		for i := 0; i < len(acc[d]); i += 4 {
			chunks = append(chunks, acc[d][i:i+4])
		}
	}
	stride := tp.threads * 16
	partBytes := int64(len(chunks)) * stride
	a.comment("split-K: the part's sums to the workspace; the last part of the tile adds the parts in order")
	one := ke.pred("setp.le.s64", split, intImm(1, rB64))
	a.bra(&one, false, epi)
	ke.pushScope()
	tid16 := ke.b64("shl.b64", ke.tid, intImm(4, rB32))
	tileWS := ke.b64("add.s64", ke.b64("mad.lo.s64", ke.b64("mul.lo.s64", tile, split), intImm(partBytes, rB64), ws), tid16)
	mine := ke.b64("mad.lo.s64", part, intImm(partBytes, rB64), tileWS)
	for c, ch := range chunks {
		a.raw(nil, false, "st.global.v4."+tp.accName(), memRef(mine, int64(c)*stride), vecRef(ch))
	}
	a.raw(nil, false, "fence.acq_rel.gpu")
	a.ins("bar.sync", intImm(0, rB32))
	t0 := ke.pred("setp.eq.s64", ke.tid, intImm(0, rB64))
	ctr := ke.b64("mad.lo.s64", tile, intImm(4, rB64), cnt)
	old := a.reg(rB32)
	a.raw(nil, false, "mov.b32", old.s, "0")
	a.raw(&t0, false, "atom.global.add.u32", old.s, memRef(ctr, 0), "1")
	a.raw(&t0, false, "fence.acq_rel.gpu")
	last := ke.pred("setp.eq.s32", old, ke.b32("cvt.u32.u64", ke.b64("sub.s64", split, intImm(1, rB64))))
	a.comment("the last part resets the counter for the next launch")
	a.raw(&last, false, "st.global.b32", memRef(ctr, 0), "0")
	flag := ke.b32("selp.b32", intImm(1, rB32), intImm(0, rB32), last)
	a.raw(&t0, false, "st.shared.b32", memRef(ke.smemCTA, 0), flag.s)
	a.ins("bar.sync", intImm(0, rB32))
	got := a.reg(rB32)
	a.raw(nil, false, "ld.shared.b32", got.s, memRef(ke.smemCTA, 0))
	a.comment("every thread has read the flag before the next tile's copies")
	a.ins("bar.sync", intImm(0, rB32))
	notLast := ke.pred("setp.eq.s32", got, intImm(0, rB32))
	a.bra(&notLast, false, next)
	a.raw(nil, false, "fence.acq_rel.gpu")
	for c, ch := range chunks {
		a.raw(nil, false, "ld.global.v4."+tp.accName(), vecRef(ch), memRef(tileWS, int64(c)*stride))
	}
	pp := a.reg(rB64)
	a.ins("mov.b64", pp, intImm(1, rB64))
	src := a.reg(rB64)
	a.ins("add.s64", src, tileWS, intImm(partBytes, rB64))
	loopL := a.newLabel()
	a.label(loopL)
	pe := ke.pred("setp.ge.s64", pp, split)
	a.bra(&pe, false, epi)
	for c, ch := range chunks {
		cls, add := rF32, "add.rn.f32"
		if tp.int8 {
			cls, add = rB32, "add.s32"
		}
		t := []opnd{a.reg(cls), a.reg(cls), a.reg(cls), a.reg(cls)}
		a.raw(nil, false, "ld.global.v4."+tp.accName(), vecRef(t), memRef(src, int64(c)*stride))
		for i := range ch {
			a.ins(add, ch[i], ch[i], t[i])
		}
	}
	a.ins("add.s64", pp, pp, intImm(1, rB64))
	a.ins("add.s64", src, src, intImm(partBytes, rB64))
	a.bra(nil, false, loopL)
	ke.popScope()
}
