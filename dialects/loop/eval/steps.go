package eval

import (
	"math"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

// The interpreter runs a block as a list of steps compiled from its ops
// the first time it is reached: every value has a slot in machine.vals,
// and a step names its operands and result by slot, so running an op
// costs no map lookups. The ops inside loop bodies, which run once per
// iteration and lane, take the fast paths below (element-wise ops with
// their function and element kind resolved, loads and stores, index
// arithmetic, constants); the others run through exec.

// stepKind is how a step runs.
type stepKind uint8

const (
	stepGeneric stepKind = iota
	stepLanewise
	stepLoad
	stepStore
	stepIndex
	stepConst
	stepBroadcast
	stepFor
	stepParallel
)

// step is one compiled op.
type step struct {
	op   *ir.Operation
	kind stepKind
	args []int32 // operand slots
	res  int32   // slot of the single result, or -1
	// lanewise: the lane count, the result's kind and the function of the
	// lanes at one position
	n  int
	k  ir.ElemKind
	fn func(x []float64) float64
	// const: the value (lanes are never written after they are made, so
	// every run may share them)
	konst value
	// load, store: the dimension of the buffer the lanes run along
	axis int
}

// block is a compiled block: its steps, its arguments' slots and the
// slots its terminator yields.
type block struct {
	steps []step
	args  []int32
	yield []int32
}

// slotOf returns v's slot, giving it one the first time.
func (mc *machine) slotOf(v *ir.Value) int32 {
	if s, ok := mc.slot[v]; ok {
		return s
	}
	s := int32(len(mc.vals))
	mc.slot[v] = s
	mc.vals = append(mc.vals, value{})
	return s
}

// slotsOf returns the slots of vs.
func (mc *machine) slotsOf(vs []*ir.Value) []int32 {
	out := make([]int32, len(vs))
	for i, v := range vs {
		out[i] = mc.slotOf(v)
	}
	return out
}

// compiled returns b compiled, with the blocks of its ops' regions: a
// block is compiled once, before it first runs, so every value inside a
// kernel has its slot before any of it runs (parallelStaged copies the
// slots of a grid's instances).
func (mc *machine) compiled(b *ir.Block) *block {
	if c, ok := mc.blocks[b]; ok {
		return c
	}
	c := &block{args: mc.slotsOf(b.Args)}
	mc.blocks[b] = c
	for op := b.First(); op != nil; op = op.Next() {
		switch op.Name() {
		case loop.OpYield, loop.OpReturn, ir.ReturnOpName:
			c.yield = mc.slotsOf(op.Operands())
			return c
		}
		c.steps = append(c.steps, mc.compileStep(op))
		for _, r := range op.Regions() {
			for _, rb := range r.Blocks {
				mc.compiled(rb)
			}
		}
	}
	return c
}

// compileStep resolves what op needs at every run.
func (mc *machine) compileStep(op *ir.Operation) step {
	s := step{op: op, res: -1, args: mc.slotsOf(op.Operands())}
	if res := mc.slotsOf(op.Results()); len(res) == 1 {
		t := op.Result(0).Type()
		s.res, s.n, s.k = res[0], lanesOf(t), elem(t)
	}
	name := op.Name()
	if fn := mc.laneFunc(op, s.k); fn != nil && s.res >= 0 {
		s.kind, s.fn = stepLanewise, fn
		return s
	}
	switch name {
	case loop.OpLoad:
		if s.res >= 0 && len(s.args) >= 1 {
			s.kind, s.axis = stepLoad, len(s.args)-2
			if a, ok := (loop.LoadOp{Operation: op}).Axis(); ok {
				s.axis = int(a)
			}
		}
	case loop.OpStore:
		if len(s.args) >= 2 {
			s.kind, s.axis = stepStore, len(s.args)-3
			if a, ok := (loop.StoreOp{Operation: op}).Axis(); ok {
				s.axis = int(a)
			}
		}
	case loop.OpAddi, loop.OpSubi, loop.OpMuli, loop.OpDivi, loop.OpRemi, loop.OpMini:
		if s.res >= 0 && len(s.args) == 2 {
			s.kind = stepIndex
		}
	case loop.OpBroadcast:
		if s.res >= 0 && len(s.args) == 1 {
			s.kind = stepBroadcast
		}
	case loop.OpConst:
		if s.res >= 0 {
			if v, why := mc.constValue(op); why == "" {
				s.kind, s.konst = stepConst, v
			}
		}
	case loop.OpFor:
		if len(s.args) >= 3 && len(op.Regions()) == 1 && op.Region(0).Entry() != nil {
			s.kind = stepFor
		}
	case loop.OpParallel:
		if len(s.args) >= 3 && len(op.Regions()) == 1 && op.Region(0).Entry() != nil &&
			!hasGroupSync(op.Region(0).Entry()) {
			s.kind = stepParallel
		}
	}
	return s
}

// laneFunc is the function of an element-wise op at one lane position,
// for results of kind k; nil for other ops.
func (mc *machine) laneFunc(op *ir.Operation, k ir.ElemKind) func(x []float64) float64 {
	name := op.Name()
	if f, ok := unaryFloat[name]; ok {
		if k.IsInt() {
			return func(x []float64) float64 { return mc.unaryInt(name, x[0], k) }
		}
		if name == loop.OpGelu {
			if a, _ := op.Attr("approximate").(ir.StringAttr); a == "tanh" {
				f = numeric.GeluTanh
			}
		}
		if k == ir.F64 {
			return func(x []float64) float64 { return f(x[0]) }
		}
		return func(x []float64) float64 { return numeric.RoundTo(f(x[0]), k) }
	}
	if f, ok := binaryFloat[name]; ok {
		if k.IsInt() {
			return func(x []float64) float64 { return mc.binary(name, x[0], x[1], k) }
		}
		return func(x []float64) float64 { return roundTo(f(x[0], x[1]), k) }
	}
	switch name {
	case loop.OpFma:
		switch {
		case k.IsInt():
			return func(x []float64) float64 {
				return float64(numeric.WrapInt64(int64(x[0])*int64(x[1])+int64(x[2]), k))
			}
		case k == ir.F64:
			return func(x []float64) float64 { return math.FMA(x[0], x[1], x[2]) }
		}
		return func(x []float64) float64 { return roundTo(x[0]*x[1]+x[2], k) }
	case loop.OpCmp:
		pred, _ := op.Attr("predicate").(ir.StringAttr)
		cmp, ok := predicates[string(pred)]
		if !ok {
			return nil // exec reports it
		}
		return func(x []float64) float64 {
			if cmp(x[0], x[1]) {
				return 1
			}
			return 0
		}
	case loop.OpSelect:
		return func(x []float64) float64 {
			if x[0] != 0 {
				return x[1]
			}
			return x[2]
		}
	case loop.OpCast:
		if k.IsInt() {
			return func(x []float64) float64 { return numeric.WrapInt(x[0], k) }
		}
		return func(x []float64) float64 { return numeric.RoundTo(x[0], k) }
	}
	return nil
}

// runSteps runs a compiled block and returns the values its terminator
// yields.
func (mc *machine) runSteps(c *block) []value {
	for i := range c.steps {
		mc.runStep(&c.steps[i])
	}
	out := make([]value, len(c.yield))
	for i, v := range c.yield {
		out[i] = mc.at(v)
	}
	return out
}

// runStep runs one step.
func (mc *machine) runStep(s *step) {
	mc.cur = s.op
	switch s.kind {
	case stepLanewise:
		mc.lanewiseStep(s)
	case stepLoad:
		b := mc.at(s.args[0]).buf
		if b == nil || b.pending {
			mc.fail("reads a buffer that has not been allocated")
		}
		off, stride := mc.offset(b, s.args[1:], s.n, s.axis)
		out := mc.lanes(s.n)
		if stride == 1 {
			copy(out, b.data[off:off+s.n])
		} else {
			for l := range out {
				out[l] = b.data[off+l*stride]
			}
		}
		mc.vals[s.res] = value{lanes: out, ok: true}
	case stepStore:
		mc.storeStep(s)
	case stepIndex:
		mc.indexArith(s)
	case stepConst:
		mc.vals[s.res] = s.konst
	case stepBroadcast:
		x := mc.at(s.args[0]).lanes[0]
		out := mc.lanes(s.n)
		for i := range out {
			out[i] = x
		}
		mc.vals[s.res] = value{lanes: out, ok: true}
	case stepFor:
		mc.forLoop(s)
	case stepParallel:
		mc.parallel(s)
	default:
		mc.exec(s.op)
	}
}

// lanewiseStep computes an element-wise op lane by lane.
func (mc *machine) lanewiseStep(s *step) {
	var argsBuf [4][]float64
	args, x := argsBuf[:0], mc.lane[:0]
	if len(s.args) > len(argsBuf) {
		args, x = make([][]float64, 0, len(s.args)), make([]float64, 0, len(s.args))
	}
	for i, v := range s.args {
		a := mc.at(v).lanes
		if len(a) != s.n {
			mc.fail("operand #%d has %d lanes, the result %d", i, len(a), s.n)
		}
		args = append(args, a)
		x = append(x, 0)
	}
	out := mc.lanes(s.n)
	for l := range out {
		for i := range args {
			x[i] = args[i][l]
		}
		out[l] = s.fn(x)
	}
	mc.vals[s.res] = value{lanes: out, ok: true}
}

func (mc *machine) storeStep(s *step) {
	x := mc.at(s.args[0]).lanes
	b := mc.at(s.args[1]).buf
	if b == nil || b.pending {
		mc.fail("writes a buffer that has not been allocated")
	}
	off, stride := mc.offset(b, s.args[2:], len(x), s.axis)
	if b.elem.IsInt() {
		for i, v := range x {
			b.data[off+i*stride] = numeric.WrapInt(v, b.elem)
		}
		return
	}
	for i, v := range x {
		b.data[off+i*stride] = numeric.RoundTo(v, b.elem)
	}
}

// lanes returns room for the n lanes of a new value, cut from a chunk
// shared by many values: one allocation serves hundreds of ops (lanes are
// never written after their op made them, so a chunk is only reclaimed
// when no value of it is left).
func (mc *machine) lanes(n int) []float64 {
	if n > len(mc.chunk) {
		if n > 256 {
			return make([]float64, n)
		}
		mc.chunk = make([]float64, 4096)
	}
	out := mc.chunk[:n:n]
	mc.chunk = mc.chunk[n:]
	return out
}
