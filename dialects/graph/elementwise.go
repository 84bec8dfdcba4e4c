package graph

import "github.com/tensorforge/tensorforge/ir"

// This file holds the rules of the element-wise classes: Unary, Clamp,
// BinaryBroadcast, Compare and Select.

// inferUnary: `%y = graph.exp %x : tensor<4x8xf32>` has its operand's type.
func inferUnary(op *ir.Operation) ([]ir.Type, error) { return same(op) }

// inferClamp: `%y = graph.clamp %x {max = 6.0 : f32, min = 0.0 : f32} : tensor<4x8xf32>`
// has its operand's type, and its bounds are ordered.
//
//	expects min <= max, but got min = 6.0 and max = 0.0
func inferClamp(op *ir.Operation) ([]ir.Type, error) {
	c := ClampOp{op}
	if !(c.Min() <= c.Max()) {
		return nil, ir.OpError(op, "expects min <= max, but got min = %s and max = %s",
			ir.FormatFloat(c.Min(), ir.F64), ir.FormatFloat(c.Max(), ir.F64))
	}
	return same(op)
}

// inferBinaryBroadcast:
// `%z = graph.add %x, %y : (tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x8xf32>`
// has the broadcast shape of its operands, which share an element type.
func inferBinaryBroadcast(op *ir.Operation) ([]ir.Type, error) {
	if err := checkSameElem(op, 0, 1); err != nil {
		return nil, err
	}
	shape, err := broadcastOperands(op, 0, 1)
	if err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorType{Shape: shape, Elem: operandType(op, 0).Elem}}, nil
}

// inferCompare:
// `%c = graph.cmp %x, %y {predicate = "lt"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>`
// broadcasts as BinaryBroadcast and gives i1.
func inferCompare(op *ir.Operation) ([]ir.Type, error) {
	if err := checkSameElem(op, 0, 1); err != nil {
		return nil, err
	}
	shape, err := broadcastOperands(op, 0, 1)
	if err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorType{Shape: shape, Elem: ir.I1Type}}, nil
}

// inferSelect:
// `%z = graph.select %c, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>`
// broadcasts all three operands; the values share an element type.
//
//	requires the same element type for the true and false values, but got 'f32' and 'f16'
func inferSelect(op *ir.Operation) ([]ir.Type, error) {
	a, b := operandType(op, 1).Elem, operandType(op, 2).Elem
	if a != b {
		return nil, ir.OpError(op, "requires the same element type for the true and false values, but got %s and %s", q(a), q(b))
	}
	shape, err := broadcastOperands(op, 0, 1, 2)
	if err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorType{Shape: shape, Elem: a}}, nil
}
