package graph

import "github.com/tensorforge/tensorforge/ir"

// This file holds the region ops the fusion pass produces, graph.fused
// and graph.yield:
//
//	%r = graph.fused %x, %w {kind = "row"} {
//	^bb0(%a: tensor<4x8xf32>, %b: tensor<8xf32>):
//	  %n = graph.rmsnorm %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
//	  graph.yield %n : tensor<4x8xf32>
//	} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
//
// The body is isolated from above: the generic verifier checks that it
// uses only its arguments and its own values, and that it ends in a
// terminator.

// BuildFused creates a graph.fused of the given kind over inputs at b's
// insertion point. body fills the region: it gets a builder at the end of
// the entry block and the block arguments (one per input, of the same
// type), and returns the values to yield, whose types become the op's
// result types. Further attributes can be set on the op afterwards. It
// returns an error, and leaves nothing behind, when body fails or the op
// would not verify (a body that uses values from outside fails:
// graph.fused is isolated from above).
func BuildFused(b *ir.Builder, loc ir.Location, kind string, inputs []*ir.Value,
	body func(bb *ir.Builder, args []*ir.Value) ([]*ir.Value, error)) (FusedOp, error) {
	op := ir.NewOperation(OpFused, loc, inputs, nil, ir.Attrs("kind", ir.StringAttr(kind)), 1)
	if err := checkFusedInputs(op); err != nil {
		op.DropOperands()
		return FusedOp{}, err
	}
	types := make([]ir.Type, len(inputs))
	for i, v := range inputs {
		types[i] = v.Type()
	}
	entry := ir.NewBlock(types...)
	op.Region(0).AppendBlock(entry)
	bb := ir.NewBuilderAtEnd(entry)
	bb.Loc = loc
	yielded, err := body(bb, entry.Args)
	if err == nil {
		_, err = BuildYield(bb, loc, yielded)
	}
	if err != nil {
		op.Erase()
		return FusedOp{}, err
	}
	for _, v := range yielded {
		op.AddResult(v.Type())
	}
	b.Insert(op)
	// The whole verifier, not only graph.fused's rules: a body that uses a
	// value from outside breaks IsolatedFromAbove.
	if err := ir.Verify(op); err != nil {
		op.Erase()
		return FusedOp{}, err
	}
	return FusedOp{op}, nil
}

// verifyFused checks the body against the operands and results.
//
//	expects a body of one block, but found 2
//	expects 2 body arguments (one per operand), but found 1
//	type of body argument #0 ('tensor<4xf16>') does not match operand #0 ('tensor<4xf32>')
//	expects the body to end with 'graph.yield'
//	yields 1 values, but has 2 results
//	type of yielded value #0 ('tensor<4xf32>') does not match result #0 ('tensor<4xf16>')
func verifyFused(op *ir.Operation) error {
	blocks := op.Region(0).Blocks
	if len(blocks) != 1 {
		return ir.OpError(op, "expects a body of one block, but found %d", len(blocks))
	}
	entry := blocks[0]
	if len(entry.Args) != op.NumOperands() {
		return ir.OpError(op, "expects %d body arguments (one per operand), but found %d", op.NumOperands(), len(entry.Args))
	}
	for i, a := range entry.Args {
		if want := op.Operand(i).Type(); !ir.TypeEqual(a.Type(), want) {
			return ir.OpError(op, "type of body argument #%d (%s) does not match operand #%d (%s)", i, q(a.Type()), i, q(want))
		}
	}
	y, ok := AsYield(entry.Last())
	if !ok {
		return ir.OpError(op, "expects the body to end with 'graph.yield'")
	}
	if y.NumOperands() != op.NumResults() {
		return ir.OpError(op, "yields %d values, but has %d results", y.NumOperands(), op.NumResults())
	}
	for i, v := range y.Values() {
		if want := op.Result(i).Type(); !ir.TypeEqual(v.Type(), want) {
			return ir.OpError(op, "type of yielded value #%d (%s) does not match result #%d (%s)", i, q(v.Type()), i, q(want))
		}
	}
	return nil
}

// verifyYield checks where a graph.yield stands; its parent checks the
// yielded types.
//
//	expects parent op 'graph.fused'
func verifyYield(op *ir.Operation) error {
	if p := op.ParentOp(); p == nil || p.Name() != OpFused {
		return ir.OpError(op, "expects parent op '%s'", OpFused)
	}
	return nil
}
