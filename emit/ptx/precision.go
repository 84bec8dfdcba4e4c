package ptx

import (
	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// This file decides how many significand bits the uses of an f32 value
// keep, which chooses between the accurate and the fast sequences of
// math.go (docs/ptx.md, "Fast forms").
//
// A value needs 7 bits when every path from it ends in a cast to bf16, 10
// for f16, 3 and 2 for f8, and 23 when some path keeps f32. Paths go
// through the ops that keep a relative error relative:
//
//   - mul, div, neg, abs, max, min, select (its values), broadcast;
//   - add, where both operands are non-negative: a sum of terms each within
//     a relative error e is within e of the exact sum (there is no
//     cancellation), so the running sum of softmax's e^(x - max) is;
//   - a loop's carried value (its yield, its init, its result) and the
//     reduce of a vector (max, min; add of non-negative lanes);
//   - a store to a buffer only this instance reads back (an sram alloc,
//     a cluster's exchange buffer), through the loads of it, rounded to
//     the buffer's element type.
//
// Sub never passes (it cancels); nor does add of a value whose sign is
// unknown, nor any op not listed (its need is 23). A value with no uses is
// not observed: it needs nothing.

// precisionNeeded is the significand bits the uses of an f32 value keep.
func (ke *kernelEmitter) precisionNeeded(v *ir.Value) int {
	if ke.precision == nil {
		ke.precision = map[*ir.Value]int{}
	}
	b, _ := ke.precisionOf(v, newWalk())
	return b
}

// fullBits is the most precision a value can need (f32's significand).
const fullBits = 23

// A walk is one query of the analyses below: the values whose answer is
// being computed (busy: a path back to one goes around a loop), and the
// steps taken, bounded so that a kernel of many shared subexpressions (a
// fuzzer's) cannot make a query exponential: past walkSteps the answer
// is the conservative one (fullBits; not non-negative).
type walk struct {
	busy  map[*ir.Value]bool
	steps int
}

const walkSteps = 1 << 14

func newWalk() *walk { return &walk{busy: map[*ir.Value]bool{}} }

// spent counts a step and reports whether the walk is over its bound.
func (w *walk) spent() bool {
	w.steps++
	return w.steps > walkSteps
}

// precisionOf is precisionNeeded of v within walk w: a path back to a busy
// value (a loop's carried sum) adds nothing, since that value's need is
// the most of its other paths. Such a partial result is not memoised.
func (ke *kernelEmitter) precisionOf(v *ir.Value, w *walk) (need int, partial bool) {
	if b, ok := ke.precision[v]; ok {
		return b, false
	}
	if w.busy[v] {
		return 0, true
	}
	if w.spent() {
		return fullBits, true
	}
	w.busy[v] = true
	defer delete(w.busy, v)
	for _, u := range v.Users() {
		b, p := ke.useNeed(v, u, w)
		need, partial = max(need, b), partial || p
		if need >= fullBits {
			need = fullBits
			break
		}
	}
	if !partial {
		ke.precision[v] = need
	}
	return need, partial
}

// useNeed is the bits use u of v keeps.
func (ke *kernelEmitter) useNeed(v *ir.Value, u *ir.Operation, w *walk) (int, bool) {
	through := func(xs ...*ir.Value) (int, bool) {
		need, partial := 0, false
		for _, x := range xs {
			b, p := ke.precisionOf(x, w)
			need, partial = max(need, b), partial || p
		}
		return need, partial
	}
	switch u.Name() {
	case loop.OpCast:
		if b := significandBits(elemKindOf(u.Result(0).Type())); b < fullBits {
			return b, false
		}
	case loop.OpMul, loop.OpDiv, loop.OpNeg, loop.OpAbs, loop.OpMax, loop.OpMin, loop.OpBroadcast:
		return through(u.Result(0))
	case loop.OpSelect:
		if u.Operand(0) != v {
			return through(u.Result(0))
		}
	case loop.OpAdd:
		if ke.nonNegative(u.Operand(0)) && ke.nonNegative(u.Operand(1)) {
			return through(u.Result(0))
		}
	case loop.OpReduce:
		r, _ := loop.AsReduce(u)
		switch r.Kind() {
		case "max", "min":
			return through(u.Result(0))
		case "add":
			if ke.nonNegative(v) {
				return through(u.Result(0))
			}
		}
	case loop.OpYield:
		if f, ok := loop.AsFor(u.Block().ParentOp()); ok && carriedSafe(f) {
			ws, ok := ke.carriedAs(f, u.Operands(), v)
			if !ok {
				return fullBits, false
			}
			return through(ws...)
		}
	case loop.OpFor:
		if f, ok := loop.AsFor(u); ok && carriedSafe(f) {
			ws, ok := ke.carriedAs(f, f.Inits(), v)
			if !ok {
				return fullBits, false
			}
			if len(ws) > 0 {
				return through(ws...)
			}
		}
	case loop.OpStore:
		st, _ := loop.AsStore(u)
		if st.Value() != v {
			break
		}
		loads, ok := ke.readBack(st.Memref())
		if !ok {
			break
		}
		var reads []*ir.Value
		for _, l := range loads {
			if ke.mayRead(l.DefiningOp(), u) {
				reads = append(reads, l)
			}
		}
		need, partial := through(reads...)
		return min(need, significandBits(elemKindOf(st.Memref().Type()))), partial
	}
	return fullBits, false
}

// carriedAs is what v becomes where it is the carried value i of loop f
// (among vals: f's inits, or its yield's operands): f's result and its
// body's argument i, for every i at which v stands; false where such a
// value does not combine relative errors (combinesRelative).
func (ke *kernelEmitter) carriedAs(f loop.ForOp, vals []*ir.Value, v *ir.Value) ([]*ir.Value, bool) {
	var ws []*ir.Value
	for i, w := range vals {
		if w == v {
			if !ke.combinesRelative(f, i, v) {
				return nil, false
			}
			ws = append(ws, f.Values()[i], f.Body().Entry().Args[1+i])
		}
	}
	return ws, true
}

// carriedSafe reports whether a loop's carried values are combined across
// threads only by ops that keep relative errors relative.
func carriedSafe(f loop.ForOp) bool {
	for _, c := range f.Combine() {
		if c != "add" && c != "max" && c != "min" {
			return false
		}
	}
	return true
}

// combinesRelative reports whether v, the init or the yielded value of
// loop f's carried value i, keeps its relative error through the combine
// of the threads' values: a max or min does; a sum does where v is
// non-negative (the threads' values of a carried sum of non-negative
// terms are; others could cancel).
func (ke *kernelEmitter) combinesRelative(f loop.ForOp, i int, v *ir.Value) bool {
	c := f.Combine()
	if i >= len(c) || c[i] != "add" {
		return true
	}
	return ke.nonNegative(v)
}

// significandBits is the significand bits (after the leading one) of an
// element kind, fullBits for f32 and wider.
func significandBits(k ir.ElemKind) int {
	switch k {
	case ir.BF16:
		return 7
	case ir.F16:
		return 10
	case ir.F8E4M3FN:
		return 3
	case ir.F8E5M2:
		return 2
	}
	return fullBits
}

// readBack lists the loads of buffer m, where m is read only by this
// kernel, and only by loads and stores: an sram alloc, or a dram buffer
// that every launch of the kernel passes a loop.alloc_dram of its own (a
// resident split's partial maxima and sums, which its instances exchange).
// ok is false for any other buffer: a kernel's outputs are read by what
// follows it.
func (ke *kernelEmitter) readBack(m *ir.Value) (loads []*ir.Value, ok bool) {
	private := false
	if d := m.DefiningOp(); d != nil {
		_, private = loop.AsAlloc(d)
	} else if m.OwnerBlock() == ke.body {
		for i, a := range ke.body.Args {
			if a == m {
				private = ke.privateArg(i)
			}
		}
	}
	if !private {
		return nil, false
	}
	for _, u := range m.Users() {
		switch {
		case u.Name() == loop.OpLoad && u.Operand(0) == m:
			loads = append(loads, u.Result(0))
		case u.Name() == loop.OpStore && u.Operand(1) == m && u.Operand(0) != m:
		default:
			return nil, false
		}
	}
	return loads, true
}

// mayRead reports whether a load can read what a store of the same
// buffer wrote, by the order of the ops in the grid's body: a load in an
// op after the store's does; one in an op before it does not; in the same
// op, a load that comes before the store in one loop body, both at the
// loop's index (each iteration its own element), reads what was there
// before the loop.
func (ke *kernelEmitter) mayRead(load, store *ir.Operation) bool {
	if ke.grid.Operation == nil {
		return true
	}
	gb := ke.grid.Body().Entry()
	tl, ts := topLevel(load, gb), topLevel(store, gb)
	if tl == nil || ts == nil {
		return true
	}
	if tl != ts {
		for o := ts.Next(); o != nil; o = o.Next() {
			if o == tl {
				return true
			}
		}
		return false
	}
	body := store.Block()
	f, ok := loop.AsFor(body.ParentOp())
	if !ok || load.Block() != body || !atIndex(load, f) || !atIndex(store, f) {
		return true
	}
	for o := body.First(); o != nil; o = o.Next() {
		if o == store {
			return true
		}
		if o == load {
			return false
		}
	}
	return true
}

// atIndex reports whether a load or store of loop f's body addresses its
// buffer at f's index alone.
func atIndex(op *ir.Operation, f loop.ForOp) bool {
	var idx []*ir.Value
	if l, ok := loop.AsLoad(op); ok {
		idx = l.Indices()
	} else if s, ok := loop.AsStore(op); ok {
		idx = s.Indices()
	}
	return len(idx) == 1 && idx[0] == f.Body().Entry().Args[0]
}

// privateArg reports whether every launch of the kernel (there is one at
// least) passes as argument i a loop.alloc_dram that nothing else uses.
func (ke *kernelEmitter) privateArg(i int) bool {
	mod := ke.k.Operation.Block()
	if mod == nil {
		return false
	}
	launches := 0
	for op := mod.First(); op != nil; op = op.Next() {
		if op.Name() != ir.FuncOpName {
			continue
		}
		f := ir.Func{Operation: op}
		if f.Body() == nil {
			continue
		}
		for o := f.Body().First(); o != nil; o = o.Next() {
			l, ok := loop.AsLaunch(o)
			if !ok || l.Kernel() != ke.k.SymName() {
				continue
			}
			launches++
			args := l.Args()
			if i >= len(args) {
				return false
			}
			a := args[i]
			if _, ok := loop.AsAllocDRAM(a.DefiningOp()); !ok {
				return false
			}
			for _, u := range a.Users() {
				if u != o {
					return false
				}
			}
		}
	}
	return launches > 0
}

// nonNegative reports whether every value v takes is >= 0 (or NaN): e^x,
// constants >= 0, and what sums, products, quotients, maxima, selects and
// reductions make of them; a carried value whose init and yielded values
// are; a load of a buffer of readBack whose every store is.
func (ke *kernelEmitter) nonNegative(v *ir.Value) bool {
	if ke.nonNeg == nil {
		ke.nonNeg = map[*ir.Value]bool{}
	}
	ok, _ := ke.nonNegativeIn(v, newWalk())
	return ok
}

// nonNegativeIn is nonNegative within walk w. A value whose proof is in
// progress (busy: around a loop) is taken to be, as an induction over the
// iterations shows; an answer that took it so (assumed) is not memoised
// unless it is false, which no assumption of the kind can make true.
func (ke *kernelEmitter) nonNegativeIn(v *ir.Value, w *walk) (ok, assumed bool) {
	if v == nil {
		return false, false
	}
	if r, hit := ke.nonNeg[v]; hit {
		return r, false
	}
	if w.busy[v] {
		return true, true
	}
	if w.spent() {
		return false, true
	}
	w.busy[v] = true
	defer delete(w.busy, v)
	ok, assumed = ke.nonNegativeOp(v, w)
	if !ok || !assumed {
		ke.nonNeg[v] = ok
	}
	return ok, assumed
}

// nonNegativeOp is nonNegativeIn by the op that defines v.
func (ke *kernelEmitter) nonNegativeOp(v *ir.Value, w *walk) (ok, assumed bool) {
	all := func(xs ...*ir.Value) (bool, bool) {
		as := false
		for _, x := range xs {
			ok, a := ke.nonNegativeIn(x, w)
			if !ok {
				return false, false
			}
			as = as || a
		}
		return true, as
	}
	op := v.DefiningOp()
	if op == nil {
		// a loop's carried value
		blk := v.OwnerBlock()
		if blk == nil {
			return false, false
		}
		f, ok := loop.AsFor(blk.ParentOp())
		if !ok || !carriedSafe(f) {
			return false, false
		}
		for i, a := range blk.Args {
			if a == v && i > 0 {
				return all(f.Inits()[i-1], yieldedAt(f, i-1))
			}
		}
		return false, false
	}
	switch op.Name() {
	case loop.OpConst:
		c, ok := constValue(v)
		return ok && c >= 0, false
	case loop.OpExp, loop.OpExp2, loop.OpAbs, loop.OpSqrt, loop.OpSigmoid:
		return true, false
	case loop.OpAdd, loop.OpMul, loop.OpDiv, loop.OpMin:
		return all(op.Operand(0), op.Operand(1))
	case loop.OpMax:
		if ok, a := all(op.Operand(0)); ok {
			return true, a
		}
		return all(op.Operand(1))
	case loop.OpBroadcast:
		return all(op.Operand(0))
	case loop.OpSelect:
		return all(op.Operand(1), op.Operand(2))
	case loop.OpReduce:
		r, _ := loop.AsReduce(op)
		if r.Kind() == "mul" {
			return false, false
		}
		return all(r.Input())
	case loop.OpFor:
		f, _ := loop.AsFor(op)
		if !carriedSafe(f) {
			return false, false
		}
		for i, r := range f.Values() {
			if r == v {
				return all(f.Inits()[i], yieldedAt(f, i))
			}
		}
	case loop.OpLoad:
		l, _ := loop.AsLoad(op)
		if _, ok := ke.readBack(l.Memref()); !ok {
			return false, false
		}
		var stored []*ir.Value
		for _, u := range l.Memref().Users() {
			if st, ok := loop.AsStore(u); ok && st.Memref() == l.Memref() {
				stored = append(stored, st.Value())
			}
		}
		return all(stored...)
	}
	return false, false
}

// yieldedAt is the value a loop's body yields for its carried value i.
func yieldedAt(f loop.ForOp, i int) *ir.Value {
	var y *ir.Value
	for o := f.Body().Entry().First(); o != nil; o = o.Next() {
		if o.Name() == loop.OpYield && i < o.NumOperands() {
			y = o.Operand(i)
		}
	}
	return y
}
