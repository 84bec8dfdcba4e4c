package lowering

import (
	"math"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
)

// onlinePair is the max and the sum of exp an online row kernel takes in
// one pass (passes.KernelInfo.Online).
type onlinePair struct {
	max, sum *ir.Operation
}

// onlineChunk is the columns of one chunk of an online row kernel on
// target t: a few KiB of f32, the block one GPU program holds in registers
// or a CPU core in L1, rounded down to a multiple of the vector width w,
// and no more than the target's scratchpad holds in held bytes a column.
// Rows shorter than a chunk are one chunk.
func onlineChunk(t *target.Target, c, w, held int64) int64 {
	n := int64(4096)
	if t != nil && t.Family != target.CUDA {
		n = 2048
	}
	if t != nil && t.ScratchpadBytes > 0 {
		n = min(n, t.ScratchpadBytes/max(held, 1))
	}
	n = max(n/w*w, w)
	return min(n, c)
}

// onlinePhases builds phases 0 and 1 of an online row kernel: the row,
// chunk by chunk, each chunk read once from DRAM into an sram buffer of
// one chunk, its max taken (the phase-0 loop, which also stores the
// phase-0 results), then its sum of exp(x - h) from the buffer, with
// the running max m, h(m) = m where finite and 0 at +-inf, and the running
// sum rescaled by exp(h(m_old) - h(m_new)):
//
//	%r:2 = loop.for %c0, %full, %cCH, %ninf, %zero (%c, %m, %s) {
//	  %mv = loop.for %c0, %cCH, %cW, ... {combine = ["max"], dist = "threads"} { load x[c + i], store buf[i] }
//	  ... %m2 = max(%m, reduce(%mv)), %h = guard(%m2) ...
//	  %sv = loop.for %c0, %cCH, %cW, ... {combine = ["add"], dist = "threads"} { exp(buf[i] - %h) }
//	  %s2 = %s * select(%m == -inf, 0, exp(guard(%m) - %h)) + reduce(%sv)
//	}
//
// and the columns after the last whole chunk as one more chunk. At the
// end the max is the phase-0 reduction's result, and the sum, multiplied
// by exp(h(m) - g) for the g the program subtracts, the phase-1 one.
func (ev *evaluator) onlinePhases(row *scope, on *onlinePair, stores []int, outs []*ir.Value, width, c int64) {
	m, s := ev.onlineSpan(row, on, stores, outs, width, c, nil)
	ev.onlineResults(row, on, m, s)
}

// onlineResults gives the reductions of on their values from the running
// max m and the sum s against h(m): the max, and the sum multiplied by
// exp(h(m) - g) for the g the program subtracts.
func (ev *evaluator) onlineResults(row *scope, on *onlinePair, m, s *ir.Value) {
	b := row.b
	f32 := ir.F32Type
	maxRes := on.max.Result(0)
	row.vals[maxRes] = row.cast(m, ev.hold(elemOf(maxRes), f32))
	g := row.compute(row.get(on.g()), f32)
	factor := ev.scalarOp(b, loop.OpExp, ev.scalarOp(b, loop.OpSub, ev.guard(b, m), g))
	sumRes := on.sum.Result(0)
	row.vals[sumRes] = row.cast(ev.scalarOp(b, loop.OpMul, s, factor), ev.hold(elemOf(sumRes), f32))
}

// g is the per-row value the sum's exp(x - g) subtracts.
func (on *onlinePair) g() *ir.Value {
	return on.sum.Operand(0).DefiningOp().Operand(0).DefiningOp().Operand(1)
}

// scalarOp builds an f32 op of the row.
func (ev *evaluator) scalarOp(b *ir.Builder, name string, args ...*ir.Value) *ir.Value {
	o := b.Insert(ir.NewOperation(name, ev.k.loc, args, []ir.Type{args[0].Type()}, nil, 0))
	if err := o.Def().Verify(o); err != nil {
		panic(lowerError{err})
	}
	return o.Result(0)
}

// guard is h(m): m where finite, 0 at +-inf (NaN stays NaN), for scalars
// and vectors of f32.
func (ev *evaluator) guard(b *ir.Builder, m *ir.Value) *ir.Value {
	k := ev.k
	inf := must(loop.BuildCmp(b, k.loc, ev.scalarOp(b, loop.OpAbs, m), k.constant(m.Type(), math.Inf(1)), "eq")).Output()
	return must(loop.BuildSelect(b, k.loc, inf, k.constant(m.Type(), 0), m)).Output()
}

// onlineSpan takes the max and the sum of exp of the c columns of the row
// from column base (nil: 0), chunk by chunk, and returns the running max
// and the sum against h(max).
func (ev *evaluator) onlineSpan(row *scope, on *onlinePair, stores []int, outs []*ir.Value, width, c int64, base *ir.Value) (*ir.Value, *ir.Value) {
	m, s, _ := ev.onlineSpanIn(row, on, stores, outs, width, c, base, 0, nil)
	return m, s
}

// onlineSpanIn is onlineSpan with chunks of chunk columns (0: the
// target's, onlineChunk), which also returns the sram buffer of a chunk:
// with chunk = c, the c columns themselves.
//
// With kept, an sram buffer already holding the c columns from base of
// the input x is computed from (a resident split's copy, resident.go,
// which the caller has made ev.cached), the chunk is the whole span and
// both loops compute x from the copy: they load nothing from dram and
// store nothing to sram.
func (ev *evaluator) onlineSpanIn(row *scope, on *onlinePair, stores []int, outs []*ir.Value, width, c int64, base *ir.Value, chunk int64, kept *ir.Value) (*ir.Value, *ir.Value, *ir.Value) {
	k := ev.k
	loc := k.loc
	lanes := width
	if width == 1 {
		lanes = 0
	}
	x := on.max.Operand(0)
	f32 := ir.F32Type
	if chunk <= 0 {
		chunk = onlineChunk(k.target, c, width, max(ev.heldElem(x).Kind.ByteSize(), 1))
	}
	full := c / chunk * chunk
	buf := kept
	if kept == nil {
		buf = must(loop.BuildAlloc(row.b, loc, ir.MemRefType{Shape: []int64{chunk}, Elem: ev.heldElem(x), Space: ir.SRAM})).Output()
		buf.Name = "chunk"
	} else if chunk != c {
		fail(on.max, "keeps a span of %d columns in chunks of %d (internal error in lower-to-loops)", c, chunk)
	}

	scalar, guard := ev.scalarOp, ev.guard
	// offset is the column base + at
	offset := func(b *ir.Builder, at *ir.Value) *ir.Value {
		if base == nil {
			return at
		}
		if isIndexConst(at, 0) {
			return base
		}
		return must(loop.BuildAddi(b, loc, base, at)).Output()
	}
	// step takes the chunk of n columns from off, from the running max m
	// and sum s, in chunk scope cs, and returns the next ones.
	step := func(cs *scope, off *ir.Value, n int64, m, s *ir.Value) (*ir.Value, *ir.Value) {
		cs.off = off
		vec := loop.Vector(lanes, f32)
		mv := cs.loop(k.index(0), k.index(n), k.index(width), lanes, []*ir.Value{k.constant(vec, math.Inf(-1))}, []string{"max"},
			func(ls *scope, carried []*ir.Value) []*ir.Value {
				v := ls.get(x)
				if kept == nil {
					must(loop.BuildStore(ls.b, loc, ls.cast(v, ev.heldElem(x)), buf, []*ir.Value{ls.col}))
				}
				for _, i := range stores {
					ls.storeResult(outs[i], k.outs[i])
				}
				return []*ir.Value{ls.op(loop.OpMax, []*ir.Value{carried[0], ls.compute(v, f32)}, carried[0].Type(), nil)}
			})[0]
		b := cs.b
		mc := mv
		if lanes > 0 {
			mc = must(loop.BuildReduce(b, loc, mv, "max")).Output()
		}
		m2 := scalar(b, loop.OpMax, m, mc)
		h := guard(b, m2)
		sv := cs.loop(k.index(0), k.index(n), k.index(width), lanes, []*ir.Value{k.constant(vec, 0)}, []string{"add"},
			func(ls *scope, carried []*ir.Value) []*ir.Value {
				var v *ir.Value
				if kept != nil {
					v = ls.get(x) // from the copy
				} else {
					v = must(loop.BuildLoad(ls.b, loc, buf, []*ir.Value{ls.col}, ls.typeOf(ev.heldElem(x)))).Output()
				}
				d := ls.op(loop.OpSub, []*ir.Value{ls.compute(v, f32), ls.broadcast(h)}, vec, nil)
				e := ls.op(loop.OpExp, []*ir.Value{d}, vec, nil)
				return []*ir.Value{ls.op(loop.OpAdd, []*ir.Value{carried[0], e}, vec, nil)}
			})[0]
		b = cs.b
		sc := sv
		if lanes > 0 {
			sc = must(loop.BuildReduce(b, loc, sv, "add")).Output()
		}
		// before the first finite max the sum is 0: no rescale (exp of
		// 0 - h could overflow to inf, and 0 * inf is NaN)
		first := must(loop.BuildCmp(b, loc, m, k.constant(f32, math.Inf(-1)), "eq")).Output()
		rescale := scalar(b, loop.OpExp, scalar(b, loop.OpSub, guard(b, m), h))
		scale := must(loop.BuildSelect(b, loc, first, k.constant(f32, 0), rescale)).Output()
		return m2, scalar(b, loop.OpAdd, scalar(b, loop.OpMul, s, scale), sc)
	}
	chunkScope := func(b *ir.Builder) *scope {
		return &scope{ev: ev, b: b, parent: row, vals: map[*ir.Value]*ir.Value{}, comp: map[*ir.Value]*ir.Value{},
			splat: map[*ir.Value]*ir.Value{}, recip: map[*ir.Value]*ir.Value{}}
	}

	m, s := k.constant(f32, math.Inf(-1)), k.constant(f32, 0)
	if full > chunk {
		f := must(loop.BuildFor(row.b, loc, k.index(0), k.index(full), k.index(chunk), []*ir.Value{m, s}, "serial", nil,
			func(bb *ir.Builder, iv *ir.Value, carried []*ir.Value) ([]*ir.Value, error) {
				iv.Name = "c"
				m2, s2 := step(chunkScope(bb), offset(bb, iv), chunk, carried[0], carried[1])
				return []*ir.Value{m2, s2}, nil
			}))
		m, s = f.Values()[0], f.Values()[1]
		m.Name, s.Name = "max", "sum"
	} else {
		m, s = step(chunkScope(row.b), offset(row.b, k.index(0)), chunk, m, s)
	}
	if tail := c - full; tail > 0 {
		m, s = step(chunkScope(row.b), offset(row.b, k.index(full)), tail, m, s)
	}
	return m, s, buf
}
