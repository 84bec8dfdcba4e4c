package llvmemit

import (
	lir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// ---------------------------------------------------------------------------
// Matmul kernels
//
// A kernel of kind "matmul" (loop.MatchMatMul) whose dot products are f32
// multiply-adds runs as a register-blocked micro-kernel instead of one
// scalar loop over K per output element. Each call of the row-range body
// walks the columns in panels of cpuPanel columns; for every panel it
// packs each right operand, widened to f32, into a stack array laid out
// [K][cpuPanel] (so transpose_b or not, the panel is read as contiguous
// vectors), then computes tiles of mr rows x cpuPanel columns:
//
//	for k in 0..K:                         // accumulators stay in registers
//	    a_i = splat(f32(lhs[row_i, k]))      for each of the mr rows
//	    acc[d][i][v] = fma(a_i, pack_d[k][v*8 : v*8+8], acc[d][i][v])
//
// Every element is still the serial sum over k in order, one fma at a
// time, so the results are bit for bit those of the loop IR. The tile is
// then written to a small stack array and the epilogue of the loop IR
// (the ops of the row and column loops other than the dot products) runs
// on each element of it that lies inside the result. Rows past the end
// of the range and columns past N are clamped to the last one for the
// loads and skipped by the epilogue.

const (
	cpuLanes = 8            // f32 lanes of one accumulator vector
	cpuPanel = 2 * cpuLanes // columns of a panel
	cpuPack  = 4 << 20      // the most bytes of packed panels on the stack
	cpuNV    = cpuPanel / cpuLanes
)

// cpuMatMul is a matmul kernel the LLVM emitter tiles.
type cpuMatMul struct {
	mm *loop.MatMul
	mr int // rows of a tile
	// aChain and bChain are the casts from each dot's loads to the
	// operands of its fma.
	aChain, bChain [][]*ir.Operation
}

// planMatMul returns the tiling of kernel k, or nil when it runs as
// plain loops (another structure, integer or f64 dot products, packed
// panels too large for the stack).
func planMatMul(k loop.KernelOp) *cpuMatMul {
	if k.Kind() != "matmul" {
		return nil
	}
	mm, err := loop.MatchMatMul(k)
	if err != nil {
		return nil
	}
	if lo, ok := constIndex(mm.Grid.Lower()); !ok || lo != 0 {
		return nil
	}
	if st, ok := constIndex(mm.Grid.Step()); !ok || st != 1 {
		return nil
	}
	// the row ops before the column loop are pure, nothing follows it
	gb := mm.Grid.Body().Entry()
	for op := gb.First(); op != nil; op = op.Next() {
		if op == mm.Cols.Operation {
			if n := op.Next(); n == nil || n.Name() != loop.OpYield || n.Next() != nil {
				return nil
			}
			break
		}
		if op.NumRegions() > 0 || op.Name() == loop.OpStore {
			return nil
		}
	}
	p := &cpuMatMul{mm: mm}
	K := mm.Dots[0].K
	if K*int64(cpuPanel)*4*int64(len(mm.Dots)) > cpuPack {
		return nil
	}
	for _, d := range mm.Dots {
		body := d.Loop.Body().Entry()
		y := body.Last()
		step := y.Operand(0).DefiningOp()
		if y.NumOperands() != 1 || step == nil || step.Name() != loop.OpFma || elemKind(step.Result(0).Type()) != ir.F32 || step.Operand(2) != body.Args[1] {
			return nil
		}
		if lanes(step.Result(0).Type()) != 0 {
			return nil
		}
		ac, ok1 := castChain(step.Operand(0), d.Lhs.Output())
		bc, ok2 := castChain(step.Operand(1), d.Rhs.Output())
		if !ok1 || !ok2 {
			return nil
		}
		p.aChain = append(p.aChain, ac)
		p.bChain = append(p.bChain, bc)
		// the right operand's other indices are the same for every row
		ri := d.Rhs.Indices()
		for _, x := range ri[:len(ri)-2] {
			if !definedOutside(x, mm.Grid.Operation) {
				return nil
			}
		}
		// the left operand's rows depend on the row alone
		li := d.Lhs.Indices()
		for _, x := range li[:len(li)-1] {
			if !definedOutside(x, mm.Cols.Operation) {
				return nil
			}
		}
	}
	switch n := len(mm.Dots); {
	case n <= 2:
		p.mr = 4
	case n <= 4:
		p.mr = 2
	default:
		p.mr = 1
	}
	return p
}

// castChain returns the casts that turn load into v (in order), false
// when v is computed from it otherwise.
func castChain(v, load *ir.Value) ([]*ir.Operation, bool) {
	var chain []*ir.Operation
	for v != load {
		op := v.DefiningOp()
		if op == nil || op.Name() != loop.OpCast {
			return nil, false
		}
		chain = append([]*ir.Operation{op}, chain...)
		v = op.Operand(0)
	}
	return chain, true
}

// definedOutside reports whether v is defined before op's region: a
// block argument of another region or the result of an op not inside op.
func definedOutside(v *ir.Value, op *ir.Operation) bool {
	d := v.DefiningOp()
	if d == nil {
		b := v.OwnerBlock()
		if b == nil {
			return true
		}
		d = b.ParentOp()
		if d == nil || d == op {
			return d == nil
		}
	}
	return !op.IsAncestor(d)
}

// constIndex is the value of an index constant of the loop IR.
func constIndex(v *ir.Value) (int64, bool) {
	c, ok := loop.AsConst(v.DefiningOp())
	if !ok {
		return 0, false
	}
	return int64(c.Value()), true
}

// counted emits `for iv = lb; iv < ub; iv += step { body(iv) }` at the
// current block and leaves fe.cur after it.
func (fe *fnEmitter) counted(kind string, lb, ub, step value.Value, body func(iv value.Value) error) error {
	header := fe.newBlock(kind, "header")
	bodyB := fe.newBlock(kind, "body")
	pre := fe.cur
	pre.NewBr(header)
	iv := header.NewPhi(lir.NewIncoming(lb, pre))
	more := header.NewICmp(enum.IPredSLT, iv, ub)
	fe.cur = bodyB
	if err := body(iv); err != nil {
		return err
	}
	latch := fe.cur
	iv.Incs = append(iv.Incs, lir.NewIncoming(latch.NewAdd(iv, step), latch))
	latch.NewBr(header)
	exit := fe.newBlock(kind, "exit")
	header.NewCondBr(more, bodyB, exit)
	fe.cur = exit
	return nil
}

// guarded emits body in a block entered only when cond holds.
func (fe *fnEmitter) guarded(kind string, cond value.Value, body func() error) error {
	then := fe.newBlock(kind, "then")
	fe.cur.NewCondBr(cond, then, nil)
	br := fe.cur.Term.(*lir.TermCondBr)
	fe.cur = then
	if err := body(); err != nil {
		return err
	}
	join := fe.newBlock(kind, "join")
	fe.cur.NewBr(join)
	br.TargetFalse = join
	fe.cur = join
	return nil
}

func i64(n int64) constant.Constant { return constant.NewInt(types.I64, n) }

// emitMatMulGrid emits the grid iterations [begin, end) of a tiled
// matmul kernel (see the top of this file).
func (fe *fnEmitter) emitMatMulGrid(p *cpuMatMul, begin, end value.Value) error {
	mm := p.mm
	nd := len(mm.Dots)
	K := mm.Dots[0].K
	r := mm.Grid.Body().Entry().Args[0]
	j := mm.Cols.Body().Entry().Args[0]
	N, err := fe.val(mm.Cols.Upper())
	if err != nil {
		return err
	}
	vt := types.NewVector(cpuLanes, types.Float)
	panelT := types.NewArray(uint64(K*cpuPanel), types.Float)
	packs := make([]value.Value, nd)
	for d := range packs {
		packs[d] = fe.cur.NewBitCast(fe.newAlloca(panelT), types.NewPointer(types.Float))
	}
	tileT := types.NewArray(uint64(nd*p.mr*cpuPanel), types.Float)
	tile := fe.cur.NewBitCast(fe.newAlloca(tileT), types.NewPointer(types.Float))
	gb := mm.Grid.Body().Entry()
	cb := mm.Cols.Body().Entry()
	last := func(n value.Value) value.Value { return fe.cur.NewSub(n, i64(1)) }
	clamp := func(x, hi value.Value) value.Value {
		return fe.cur.NewSelect(fe.cur.NewICmp(enum.IPredSLT, x, hi), x, hi)
	}
	// rowOps emits the row values of row rv (the ops of the grid body
	// before the column loop).
	rowOps := func(rv value.Value) error {
		fe.vals[r] = rv
		for op := gb.First(); op != mm.Cols.Operation; op = op.Next() {
			if err := fe.emitOp(op); err != nil {
				return err
			}
		}
		return nil
	}
	// elemPtr is the address of load ld's element, the index values
	// bound, as a float of its memory type.
	elemPtr := func(ld loop.LoadOp) (value.Value, types.Type, error) {
		mt, _ := memType(elemKind(ld.Output().Type()))
		ptr, err := fe.address(ld.Operation, ld.Memref(), ld.Indices(), mt)
		return ptr, mt, err
	}
	chain := func(x value.Value, ops []*ir.Operation) (value.Value, error) {
		for _, c := range ops {
			from, to := elemKind(c.Operand(0).Type()), elemKind(c.Result(0).Type())
			st, _ := scalarType(to)
			y, ok := fe.convert(x, from, to, withScalar(x.Type(), st))
			if !ok {
				return nil, ir.OpError(c, "cannot convert '%s' to '%s'", from, to)
			}
			x = y
		}
		return x, nil
	}
	fma := fe.me.intrinsic("llvm.fma", vt, vt, vt, vt)

	return fe.counted("panel", i64(0), N, i64(cpuPanel), func(j0 value.Value) error {
		// pack the panel of every right operand: pack[k][c] = B[col_c, k]
		// (or B[k, col_c]) in f32, columns clamped to N - 1
		err := fe.counted("pack", i64(0), i64(K), i64(1), func(kv value.Value) error {
			for d, dot := range mm.Dots {
				fe.vals[dot.Loop.Body().Entry().Args[0]] = kv
				row := fe.cur.NewMul(kv, i64(cpuPanel))
				for c := 0; c < cpuPanel; c++ {
					fe.vals[j] = clamp(fe.cur.NewAdd(j0, i64(int64(c))), last(N))
					ptr, mt, err := elemPtr(dot.Rhs)
					if err != nil {
						return err
					}
					x := value.Value(fe.cur.NewLoad(mt, ptr))
					if x, err = chain(x, p.bChain[d]); err != nil {
						return err
					}
					dst := fe.cur.NewGetElementPtr(types.Float, packs[d], fe.cur.NewAdd(row, i64(int64(c))))
					fe.cur.NewStore(x, dst)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		return fe.counted("tile", begin, end, i64(int64(p.mr)), func(r0 value.Value) error {
			// the left operand's row addresses at k = 0
			rows := make([]value.Value, p.mr)
			aPtr := make([]value.Value, p.mr)
			var aMT types.Type
			k0 := mm.Dots[0].Loop.Body().Entry().Args[0]
			for i := range rows {
				rows[i] = clamp(fe.cur.NewAdd(r0, i64(int64(i))), last(end))
				if err := rowOps(rows[i]); err != nil {
					return err
				}
				fe.vals[k0] = i64(0)
				ptr, mt, err := elemPtr(mm.Dots[0].Lhs)
				if err != nil {
					return err
				}
				aPtr[i], aMT = ptr, mt
			}
			// the loop over K, the accumulators in phis
			pre := fe.cur
			header := fe.newBlock("dot", "header")
			bodyB := fe.newBlock("dot", "body")
			pre.NewBr(header)
			kv := header.NewPhi(lir.NewIncoming(i64(0), pre))
			n := nd * p.mr * cpuNV
			accs := make([]*lir.InstPhi, n)
			for i := range accs {
				accs[i] = header.NewPhi(lir.NewIncoming(constant.NewZeroInitializer(vt), pre))
			}
			more := header.NewICmp(enum.IPredSLT, kv, i64(K))
			fe.cur = bodyB
			a := make([]value.Value, p.mr)
			for i := range a {
				x := value.Value(fe.cur.NewLoad(aMT, fe.cur.NewGetElementPtr(aMT, aPtr[i], kv)))
				x, err := chain(x, p.aChain[0])
				if err != nil {
					return err
				}
				a[i] = fe.splatValue(vt, x)
			}
			next := make([]value.Value, n)
			for d := 0; d < nd; d++ {
				for v := 0; v < cpuNV; v++ {
					off := fe.cur.NewAdd(fe.cur.NewMul(kv, i64(cpuPanel)), i64(int64(v*cpuLanes)))
					bp := fe.cur.NewBitCast(fe.cur.NewGetElementPtr(types.Float, packs[d], off), types.NewPointer(vt))
					bl := fe.cur.NewLoad(vt, bp)
					bl.Align = 4
					for i := 0; i < p.mr; i++ {
						x := (d*p.mr+i)*cpuNV + v
						next[x] = fe.cur.NewCall(fma, a[i], bl, accs[x])
					}
				}
			}
			latch := fe.cur
			for i, acc := range accs {
				acc.Incs = append(acc.Incs, lir.NewIncoming(next[i], latch))
			}
			kv.Incs = append(kv.Incs, lir.NewIncoming(latch.NewAdd(kv, i64(1)), latch))
			latch.NewBr(header)
			exit := fe.newBlock("dot", "exit")
			header.NewCondBr(more, bodyB, exit)
			fe.cur = exit
			for x, acc := range accs {
				p := fe.cur.NewBitCast(fe.cur.NewGetElementPtr(types.Float, tile, i64(int64(x*cpuLanes))), types.NewPointer(vt))
				st := fe.cur.NewStore(acc, p)
				st.Align = 4
			}
			// the epilogue on the elements of the tile inside the result
			return fe.counted("erow", i64(0), i64(int64(p.mr)), i64(1), func(i value.Value) error {
				rv := fe.cur.NewAdd(r0, i)
				return fe.guarded("erow", fe.cur.NewICmp(enum.IPredSLT, rv, end), func() error {
					if err := rowOps(rv); err != nil {
						return err
					}
					return fe.counted("ecol", i64(0), i64(cpuPanel), i64(1), func(c value.Value) error {
						jv := fe.cur.NewAdd(j0, c)
						return fe.guarded("ecol", fe.cur.NewICmp(enum.IPredSLT, jv, N), func() error {
							fe.vals[j] = jv
							for d, dot := range mm.Dots {
								// tile[((d * mr + i) * NV) * lanes + c]
								base := fe.cur.NewMul(fe.cur.NewAdd(i64(int64(d*p.mr)), i), i64(cpuPanel))
								ep := fe.cur.NewGetElementPtr(types.Float, tile, fe.cur.NewAdd(base, c))
								fe.vals[dot.Loop.Result(0)] = fe.cur.NewLoad(types.Float, ep)
							}
							return fe.epilogue(cb, mm)
						})
					})
				})
			})
		})
	})
}

// epilogue emits the ops of the column loop's body other than the dot
// products and its yield.
func (fe *fnEmitter) epilogue(cb *ir.Block, mm *loop.MatMul) error {
	dots := map[*ir.Operation]bool{}
	for _, d := range mm.Dots {
		dots[d.Loop.Operation] = true
	}
	for op := cb.First(); op != nil; op = op.Next() {
		if dots[op] || op.Name() == loop.OpYield {
			continue
		}
		if err := fe.emitOp(op); err != nil {
			return err
		}
	}
	return nil
}
