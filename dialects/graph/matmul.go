package graph

import "github.com/tensorforge/tensorforge/ir"

// This file holds the rules of the contraction class, MatMul.

// inferMatMul:
// `%c = graph.matmul %a, %b : (tensor<2x4x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>`.
// The contraction dimension K is reduced, so it must be static; leading
// (batch) dimensions broadcast.
//
//	expects operands of rank 2 or more, but got 'tensor<4xf32>'
//	contraction dimensions differ: 8 in 'tensor<4x8xf32>' and 7 in 'tensor<7x16xf32>'
//	batch dimensions of 'tensor<2x4x8xf32>' and 'tensor<3x8x4xf32>' are not broadcast-compatible
func inferMatMul(op *ir.Operation) ([]ir.Type, error) {
	a, b := operandType(op, 0), operandType(op, 1)
	for _, t := range []ir.TensorType{a, b} {
		if t.Rank() < 2 {
			return nil, ir.OpError(op, "expects operands of rank 2 or more, but got %s", q(t))
		}
	}
	if err := checkSameElem(op, 0, 1); err != nil {
		return nil, err
	}
	ra, rb := int64(a.Rank()), int64(b.Rank())
	m, ka := a.Shape[ra-2], ra-1
	kb, n := rb-2, b.Shape[rb-1]
	if (MatMulOp{op}).TransposeB() {
		kb, n = rb-1, b.Shape[rb-2]
	}
	if err := checkStaticDims(op, a, ka); err != nil {
		return nil, err
	}
	if err := checkStaticDims(op, b, kb); err != nil {
		return nil, err
	}
	if a.Shape[ka] != b.Shape[kb] {
		return nil, ir.OpError(op, "contraction dimensions differ: %d in %s and %d in %s", a.Shape[ka], q(a), b.Shape[kb], q(b))
	}
	batch, err := BroadcastShapes(a.Shape[:ra-2], b.Shape[:rb-2])
	if err != nil {
		return nil, ir.OpError(op, "batch dimensions of %s and %s are not broadcast-compatible", q(a), q(b))
	}
	return []ir.Type{ir.TensorType{Shape: append(batch, m, n), Elem: a.Elem}}, nil
}
