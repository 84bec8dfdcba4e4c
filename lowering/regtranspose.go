package lowering

import (
	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// This file transposes the tiles of a transposed operand in registers on
// CPU targets. A tile walk (tileGrid) reads such an operand with strided
// loads, a vector whose lanes run down a column of the operand:
//
//	loop.for %c0, %rows, %c1 {                       // S: the tile's rows
//	^bb0(%u: index):
//	  %c = loop.addi %base, %u : index
//	  loop.for %lo, %hi, %c16 {dist = "threads"} {   // T: its columns
//	  ^bb1(%j: index):
//	    %v = loop.load %x, %j, %c {axis = 0} : (...) -> vector<16xbf16>
//	    ... %v ...
//
// The x86 emitter builds such a load as 16 scalar loads. Sixteen
// consecutive rows of S read the same 16 x 16 square of x, column by
// column: S runs by 16 instead, T's body is repeated once per row of the
// step, and the square is read as 16 contiguous vectors (rows %j .. %j+15
// of x, columns %c .. %c+15) transposed by loop.transpose, whose columns
// are the 16 strided loads' vectors. The rows of S past the last multiple
// of 16 run as before.
//
// The rewrite reorders the iterations of S (the repeated body runs its
// rows side by side), so it applies only where that cannot change what
// S computes: S reads no buffer it writes, and each store in S writes at
// an index that is S's induction variable plus a value S does not change,
// so different rows write different elements.

// maxTransposeBody bounds the ops of T's body times the rows of a step:
// the code of the repeated body.
const maxTransposeBody = 4096

// registerTransposes rewrites the tile loops of the kernel being built.
func (k *kernelBuilder) registerTransposes() {
	var loops []*ir.Operation
	k.kernel.Walk(func(op *ir.Operation) bool {
		if f, ok := loop.AsFor(op); ok && f.Dist() == "serial" && len(f.Values()) == 0 && isIndexConst(f.Step(), 1) {
			loops = append(loops, op)
		}
		return true
	})
	for _, op := range loops {
		if tl := matchTileLoop(loop.ForOp{Operation: op}); tl != nil {
			k.transposeTileLoop(tl)
		}
	}
}

// tileLoop is a loop S that registerTransposes rewrites: its inner loop T
// and T's strided loads, whose lanes run along axis of a buffer indexed
// along its last axis by S's induction variable plus a value S does not
// change.
type tileLoop struct {
	dep   *dependence
	s, t  loop.ForOp
	loads []loop.LoadOp
	// stores are T's strided stores (a result stored through such a
	// transpose): the W rows' vectors are transposed and stored as W
	// contiguous vectors at the end of T's repeated body
	stores []loop.StoreOp
	w      int64
}

// matchTileLoop returns the rewrite of s, or nil when s is not a tile
// loop or its rows may not run side by side.
func matchTileLoop(s loop.ForOp) *tileLoop {
	body := s.Body().Entry()
	iv := body.Args[0]
	dep := dependence{iv: iv, memo: map[*ir.Value]bool{}}
	tl := &tileLoop{s: s, dep: &dep}
	for op := body.First(); op != nil; op = op.Next() {
		f, ok := loop.AsFor(op)
		if !ok {
			continue
		}
		var loads []loop.LoadOp
		var stores []loop.StoreOp
		for in := f.Body().Entry().First(); in != nil; in = in.Next() {
			if l, ok := loop.AsLoad(in); ok {
				if _, strided := l.Axis(); strided {
					loads = append(loads, l)
				}
			}
			if st, ok := loop.AsStore(in); ok {
				if _, strided := st.Axis(); strided {
					stores = append(stores, st)
				}
			}
		}
		if len(loads)+len(stores) == 0 {
			continue
		}
		if tl.t.Operation != nil {
			return nil // one inner loop walks the tile
		}
		tl.t, tl.loads, tl.stores = f, loads, stores
	}
	if tl.t.Operation == nil || len(tl.t.Values()) > 0 {
		return nil
	}
	t := tl.t
	for _, v := range []*ir.Value{t.Lower(), t.Upper(), t.Step()} {
		if dep.on(v) {
			return nil
		}
	}
	nops := 0
	for op := t.Body().Entry().First(); op != nil; op = op.Next() {
		nops++
		if len(op.Regions()) > 0 {
			return nil
		}
	}
	square := func(t ir.Type, idx []*ir.Value, axis int64) bool {
		w := loop.Lanes(t)
		a := int(axis)
		if tl.w == 0 {
			tl.w = w
		}
		last := len(idx) - 1
		if w != tl.w || w < 2 || w > 64 || w&(w-1) != 0 || a == last {
			return false
		}
		for d, v := range idx {
			if d == last {
				if !dep.plusIV(v) {
					return false
				}
			} else if dep.on(v) {
				return false
			}
		}
		return true
	}
	for _, l := range tl.loads {
		if a, _ := l.Axis(); !square(l.Output().Type(), l.Indices(), a) {
			return nil
		}
	}
	for _, st := range tl.stores {
		if a, _ := st.Axis(); !square(st.Value().Type(), st.Indices(), a) {
			return nil
		}
	}
	if int64(nops)*tl.w > maxTransposeBody || !rowsIndependent(s, &dep) {
		return nil
	}
	return tl
}

// rowsIndependent reports whether the iterations of s may run in any
// order: no buffer s stores to is loaded in s, and every store's indices
// hold s's induction variable plus a value s does not change.
func rowsIndependent(s loop.ForOp, dep *dependence) bool {
	stored := map[*ir.Value]bool{}
	var stores []loop.StoreOp
	ok := true
	s.Operation.Walk(func(op *ir.Operation) bool {
		if st, isStore := loop.AsStore(op); isStore {
			stored[st.Memref()] = true
			stores = append(stores, st)
		}
		if op.Name() == loop.OpGroupSync || op.Name() == loop.OpTicket {
			ok = false
		}
		return ok
	})
	if !ok {
		return false
	}
	s.Operation.Walk(func(op *ir.Operation) bool {
		if l, isLoad := loop.AsLoad(op); isLoad && stored[l.Memref()] {
			ok = false
		}
		return ok
	})
	for _, st := range stores {
		distinct := false
		for _, v := range st.Indices() {
			distinct = distinct || dep.plusIV(v)
		}
		ok = ok && distinct
	}
	return ok
}

// dependence answers whether values depend on the induction variable iv
// of a loop.
type dependence struct {
	iv   *ir.Value
	memo map[*ir.Value]bool
}

// on reports whether v is computed from iv.
func (d *dependence) on(v *ir.Value) bool {
	if v == d.iv {
		return true
	}
	if r, ok := d.memo[v]; ok {
		return r
	}
	d.memo[v] = false
	def := v.DefiningOp()
	r := false
	if def != nil {
		for _, o := range def.Operands() {
			r = r || d.on(o)
		}
	}
	d.memo[v] = r
	return r
}

// plusIV reports whether v is iv, or iv plus a value not computed from it.
func (d *dependence) plusIV(v *ir.Value) bool {
	if v == d.iv {
		return true
	}
	def := v.DefiningOp()
	if def == nil || def.Name() != loop.OpAddi {
		return false
	}
	x, y := def.Operand(0), def.Operand(1)
	return x == d.iv && !d.on(y) || y == d.iv && !d.on(x)
}

// transposeTileLoop rewrites tl: a loop by W over S's rows up to the last
// multiple of W, whose body is S's, each op repeated for the W rows and T
// once with its body repeated, the strided loads replaced by a square of
// contiguous loads and its transpose; then S over the rows left.
func (k *kernelBuilder) transposeTileLoop(tl *tileLoop) {
	s, t, w := tl.s, tl.t, tl.w
	loc := s.Operation.Loc
	b := ir.NewBuilderAtEnd(s.Operation.Block())
	b.SetInsertionPointBefore(s.Operation)
	var main *ir.Value
	lo, okLo := loop.ConstIndex(s.Lower())
	hi, okHi := loop.ConstIndex(s.Upper())
	if okLo && okHi {
		main = k.index(hi - (hi-lo)%w)
	} else {
		n := must(loop.BuildSubi(b, loc, s.Upper(), s.Lower())).Output()
		rem := must(loop.BuildRemi(b, loc, n, k.index(w))).Output()
		main = must(loop.BuildSubi(b, loc, s.Upper(), rem)).Output()
	}
	body := s.Body().Entry()
	iv := body.Args[0]
	must(loop.BuildFor(b, loc, s.Lower(), main, k.index(w), nil, "serial", nil,
		func(bb *ir.Builder, base *ir.Value, _ []*ir.Value) ([]*ir.Value, error) {
			base.Name = iv.Name
			maps := make([]ir.Mapping, w)
			for u := range maps {
				at := base
				if u > 0 {
					at = must(loop.BuildAddi(bb, loc, base, k.index(int64(u)))).Output()
				}
				maps[u] = ir.Mapping{iv: at}
			}
			for op := body.First(); op != nil && op != body.Last(); op = op.Next() {
				if op == t.Operation {
					k.repeatTile(bb, tl, maps)
					continue
				}
				if tl.invariant(op) {
					// the same for every row: once
					c := bb.Insert(op.Clone(maps[0]))
					for _, m := range maps[1:] {
						for i, r := range op.Results() {
							m[r] = c.Result(i)
						}
					}
					continue
				}
				for _, m := range maps {
					bb.Insert(op.Clone(m))
				}
			}
			return nil, nil
		}))
	if okLo && okHi && (hi-lo)%w == 0 {
		s.Operation.Erase() // no rows left
		return
	}
	s.Operation.SetOperand(0, main)
}

// invariant reports whether op computes the same values in every row of
// S: a pure op without regions whose operands do not depend on S's
// induction variable.
func (tl *tileLoop) invariant(op *ir.Operation) bool {
	if !op.HasTrait(ir.Pure) || len(op.Regions()) > 0 || op.NumResults() == 0 {
		return false
	}
	for _, v := range op.Operands() {
		if tl.dep.on(v) {
			return false
		}
	}
	return true
}

// repeatTile builds T once at bb, its body repeated for the W rows of maps
// (row u's values mapped by maps[u]); row 0's copy of each strided load
// reads the square and transposes it, and row u's copy is column u.
func (k *kernelBuilder) repeatTile(bb *ir.Builder, tl *tileLoop, maps []ir.Mapping) {
	t, w := tl.t, tl.w
	loc := t.Operation.Loc
	m0 := maps[0]
	f := must(loop.BuildFor(bb, loc, m0.Lookup(t.Lower()), m0.Lookup(t.Upper()), m0.Lookup(t.Step()), nil, t.Dist(), nil,
		func(tb *ir.Builder, j *ir.Value, _ []*ir.Value) ([]*ir.Value, error) {
			tbody := t.Body().Entry()
			j.Name = tbody.Args[0].Name
			copies := make([]ir.Mapping, w)
			for u := range copies {
				copies[u] = ir.Mapping{}
				for from, to := range maps[u] {
					copies[u][from] = to
				}
				copies[u][tbody.Args[0]] = j
			}
			// the W rows' vectors of each strided store
			stored := make([][]*ir.Value, len(tl.stores))
			for u, m := range copies {
				for op := tbody.First(); op != nil && op != tbody.Last(); op = op.Next() {
					i := -1
					for x, l := range tl.loads {
						if l.Operation == op {
							i = x
						}
					}
					if x := storeIndex(tl.stores, op); x >= 0 {
						stored[x] = append(stored[x], m.Lookup(op.Operand(0)))
						continue
					}
					switch {
					case i < 0 && u > 0 && tl.invariant(op):
						for r, v := range op.Results() {
							m[v] = copies[0][op.Result(r)]
						}
					case i < 0:
						tb.Insert(op.Clone(m))
					case u == 0:
						cols := k.transposedSquare(tb, tl.loads[i], m, w)
						for v, c := range cols {
							copies[v][op.Result(0)] = c
						}
					}
				}
			}
			for x, st := range tl.stores {
				k.storeSquare(tb, st, copies[0], stored[x])
			}
			return nil, nil
		}))
	for _, a := range t.Operation.Attrs {
		if f.Operation.Attr(a.Name) == nil {
			f.Operation.SetAttr(a.Name, a.Value)
		}
	}
}

// transposedSquare reads the W x W square whose columns the W rows' copies
// of strided load l read (m maps row 0's values), as W contiguous vectors
// along the buffer's last axis, and returns their transpose's results:
// column u is row u's load.
func (k *kernelBuilder) transposedSquare(b *ir.Builder, l loop.LoadOp, m ir.Mapping, w int64) []*ir.Value {
	loc := l.Operation.Loc
	axis, _ := l.Axis()
	rows := make([]*ir.Value, w)
	for r, at := range k.squareRows(b, loc, l.Indices(), int(axis), m, w) {
		rows[r] = must(loop.BuildLoad(b, loc, l.Memref(), at, l.Output().Type())).Output()
	}
	return must(loop.BuildTranspose(b, loc, rows)).Operation.Results()
}

// storeIndex is the position of op among stores, or -1.
func storeIndex(stores []loop.StoreOp, op *ir.Operation) int {
	for i, st := range stores {
		if st.Operation == op {
			return i
		}
	}
	return -1
}

// storeSquare stores the W rows' vectors of strided store st (vecs, row
// u's lanes along its axis at its own index of the last axis; m maps row
// 0's values) as the W x W square they fill: transposed, W contiguous
// vectors along the buffer's last axis.
func (k *kernelBuilder) storeSquare(b *ir.Builder, st loop.StoreOp, m ir.Mapping, vecs []*ir.Value) {
	loc := st.Operation.Loc
	axis, _ := st.Axis()
	rows := must(loop.BuildTranspose(b, loc, vecs)).Operation.Results()
	for r, at := range k.squareRows(b, loc, st.Indices(), int(axis), m, int64(len(vecs))) {
		must(loop.BuildStore(b, loc, rows[r], st.Memref(), at))
	}
}

// squareRows are the indices of the W rows of a square: those of a
// strided access (mapped by m) with axis, the lanes' dimension, advanced
// by 0 .. W-1; each row runs along the last axis from the access's index
// there.
func (k *kernelBuilder) squareRows(b *ir.Builder, loc ir.Location, indices []*ir.Value, axis int, m ir.Mapping, w int64) [][]*ir.Value {
	idx := make([]*ir.Value, len(indices))
	for d, v := range indices {
		idx[d] = m.Lookup(v)
	}
	out := make([][]*ir.Value, w)
	for r := range out {
		at := append([]*ir.Value(nil), idx...)
		if r > 0 {
			at[axis] = must(loop.BuildAddi(b, loc, idx[axis], k.index(int64(r)))).Output()
		}
		out[r] = at
	}
	return out
}
