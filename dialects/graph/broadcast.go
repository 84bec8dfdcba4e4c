package graph

import (
	"fmt"
	"strings"

	"github.com/tensorforge/tensorforge/ir"
)

// BroadcastShapes returns the NumPy broadcast of two shapes. Aligned from
// the last dimension, each pair of extents must be equal or one of them 1;
// missing leading dimensions count as 1. A dynamic extent (ir.Dynamic,
// `?`) broadcasts with anything: paired with a static n other than 1 it
// gives n (the `?` must then be 1 or n at run time), otherwise `?`.
//
//	BroadcastShapes([4, 1], [8])    = [4, 8]
//	BroadcastShapes([?, 8], [4, 1]) = [4, 8]
//	BroadcastShapes([?], [1])       = [?]
//	BroadcastShapes([4], [3])       -> error
func BroadcastShapes(a, b []int64) ([]int64, error) {
	if len(a) < len(b) {
		a, b = b, a
	}
	out := append([]int64(nil), a...)
	off := len(a) - len(b)
	for i, y := range b {
		x := a[off+i]
		switch {
		case x == y || y == 1:
			out[off+i] = x
		case x == 1 || x == ir.Dynamic:
			out[off+i] = y
		case y == ir.Dynamic:
			out[off+i] = x
		default:
			return nil, fmt.Errorf("shapes %s and %s are not broadcast-compatible", FormatShape(a), FormatShape(b))
		}
	}
	return out, nil
}

// broadcastOperands broadcasts the shapes of the given operands of op.
//
//	operands of types 'tensor<4x8xf32>' and 'tensor<3x8xf32>' are not broadcast-compatible
func broadcastOperands(op *ir.Operation, operands ...int) ([]int64, error) {
	shape := operandType(op, operands[0]).Shape
	for _, i := range operands[1:] {
		var err error
		if shape, err = BroadcastShapes(shape, operandType(op, i).Shape); err != nil {
			types := make([]string, len(operands))
			for j, k := range operands {
				types[j] = q(op.Operand(k).Type())
			}
			return nil, ir.OpError(op, "operands of types %s are not broadcast-compatible", joinAnd(types))
		}
	}
	return shape, nil
}

// joinAnd joins words as "a, b and c".
func joinAnd(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}
