package passes

import (
	"github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/ir"
)

// sinkRolls rewrites each graph.roll of a value computed element-wise as
// the same computation on rolled operands, down to the values the kernels
// read from memory:
//
//	roll(f(a, s), k)  ->  f(roll(a, k), s)
//
// for an element-wise f, where an operand whose last extent is 1 (a
// per-row value such as RMSNorm's rsqrt, a scalar) or a splat constant is
// the same at every column and stays as it is, and roll(roll(x, j), k) is
// roll(x, j + k). A kernel reads a roll at rotated columns of a load, so
// a roll of computed work (rotate_half of a per-head RMSNorm's result,
// Qwen3's q_norm before RoPE) was a kernel boundary: the work was written
// to memory to be read back rotated. Rewritten, that work is done twice
// in one kernel, at each column and at the rotated one, reading its inputs
// at both. Each element of the result is computed from the same inputs by
// the same ops, so the rewrite changes no bit. Rolls of anything else (a
// view, a reduction's full-row result, a matmul) stay.
func sinkRolls(body *ir.Block) bool {
	var rolls []*ir.Operation
	for op := body.First(); op != nil; op = op.Next() {
		if op.Name() == graph.OpRoll {
			rolls = append(rolls, op)
		}
	}
	changed := false
	for _, r := range rolls {
		rr := graph.RollOp{Operation: r}
		x := rr.Input()
		if !sinkable(x) {
			continue
		}
		s := rollSinker{at: ir.NewBuilderBefore(r), loc: r.Loc, memo: map[rollKey]*ir.Value{}}
		y := s.rolled(x, rr.Shift())
		if s.failed || y == r.Result(0) {
			continue
		}
		r.Result(0).ReplaceAllUsesWith(y)
		r.Erase()
		changed = true
	}
	return changed
}

// sinkable reports whether a roll of x sinks: x is computed by an
// element-wise op, or is itself a roll (two rolls are one).
func sinkable(x *ir.Value) bool {
	d := x.DefiningOp()
	return d != nil && (d.Name() == graph.OpRoll || isElementwisePrimitive(d))
}

type rollKey struct {
	v     *ir.Value
	shift int64
}

// rollSinker builds the rolled copies of one roll's operand before it.
type rollSinker struct {
	at   *ir.Builder
	loc  ir.Location
	memo map[rollKey]*ir.Value
	// failed is set when a roll could not be built
	failed bool
}

// rolled returns v rolled by shift along its last axis.
func (s *rollSinker) rolled(v *ir.Value, shift int64) *ir.Value {
	sh := shapeOf(v)
	if len(sh) == 0 {
		return v
	}
	n := sh[len(sh)-1]
	if n == 1 {
		return v // the same at every column
	}
	if n != ir.Dynamic {
		if shift = ((shift % n) + n) % n; shift == 0 {
			return v
		}
	}
	key := rollKey{v, shift}
	if y, ok := s.memo[key]; ok {
		return y
	}
	var y *ir.Value
	d := v.DefiningOp()
	switch {
	case isSplatConstant(v):
		y = v
	case d != nil && d.Name() == graph.OpRoll:
		y = s.rolled(d.Operand(0), shift+graph.RollOp{Operation: d}.Shift())
	case d != nil && isElementwisePrimitive(d):
		m := ir.Mapping{}
		for _, a := range d.Operands() {
			m[a] = s.rolled(a, shift)
		}
		c := s.at.Insert(d.Clone(m))
		c.Loc = d.Loc
		y = c.Result(0)
		y.Name = ""
	default:
		r, err := graph.BuildRoll(s.at, s.loc, v, shift)
		if err != nil {
			// (a roll of a tensor with a last axis verifies; should one not,
			// the roll stays as written and what was built is dead code)
			s.failed = true
			return v
		}
		y = r.Output()
	}
	s.memo[key] = y
	return y
}
