// Package graph is the graph dialect: whole-tensor ops as users write them,
//
//	%n = graph.rmsnorm %x, %w {eps = 1.0e-05 : f32} : (tensor<4096x8192xbf16>, tensor<8192xbf16>) -> tensor<4096x8192xbf16>
//	%s = graph.silu %n : tensor<4096x8192xbf16>
//	%y = graph.mul %s, %z : tensor<4096x8192xbf16>
//
// Every op is declared once, in package defs; gen_ops.go is generated from
// those declarations and holds, per op, the name constant (OpAdd), a typed
// wrapper (AddOp, AsAdd) with operand and attribute accessors, a builder
// that infers the result type (BuildAdd) and the registered verifier. The
// files of this package hold what a declaration cannot say: the shape and
// type rules of each op class (one file per category of op) and the shape
// helpers passes share, such as BroadcastShapes, NormalizeAxes and
// ReducedShape.
//
// The reference docs, docs/dialects/graph.md, are generated too.
package graph

//go:generate go run ../odsgen -dialect graph

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/ods"
	"github.com/tensorforge/tensorforge/ir"
)

// tensorType returns the type of v. The generated verifiers have checked
// the operand constraints before any class rule runs, so it is a tensor.
func tensorType(v *ir.Value) ir.TensorType {
	t, _ := v.Type().(ir.TensorType)
	return t
}

// operandType returns the tensor type of operand i of op.
func operandType(op *ir.Operation, i int) ir.TensorType { return tensorType(op.Operand(i)) }

// resultType returns the tensor type of result i of op.
func resultType(op *ir.Operation, i int) ir.TensorType { return tensorType(op.Result(i)) }

// q quotes a type for a diagnostic: 'tensor<4xf32>'.
func q(t ir.Type) string { return ods.QuoteType(t) }

// FormatShape spells a shape for diagnostics: [4, ?, 8].
func FormatShape(shape []int64) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		if d == ir.Dynamic {
			parts[i] = "?"
		} else {
			parts[i] = fmt.Sprint(d)
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// same returns operand 0's type as the single result type: for ops whose
// result is their input's type.
func same(op *ir.Operation) ([]ir.Type, error) {
	return []ir.Type{op.Operand(0).Type()}, nil
}

// checkSameElem reports operands of op (given by index) whose element
// types differ from the first one's.
//
//	requires the same element type for all operands, but got 'f32' and 'f16'
func checkSameElem(op *ir.Operation, operands ...int) error {
	first := operandType(op, operands[0]).Elem
	for _, i := range operands[1:] {
		if e := operandType(op, i).Elem; e != first {
			return ir.OpError(op, "requires the same element type for all operands, but got %s and %s", q(first), q(e))
		}
	}
	return nil
}

// checkSameShape reports a result whose shape differs from operand 0's.
//
//	requires the same shape for the operand and the result, but got 'tensor<8xf32>' and 'tensor<4xbf16>'
func checkSameShape(op *ir.Operation) error {
	in, out := operandType(op, 0), resultType(op, 0)
	if !slices.Equal(in.Shape, out.Shape) {
		return ir.OpError(op, "requires the same shape for the operand and the result, but got %s and %s", q(in), q(out))
	}
	return nil
}

// checkDtype checks the optional `dtype` attribute against the element
// type it restates.
//
//	attribute 'dtype' is 'f16', but the result element type is 'bf16'
func checkDtype(op *ir.Operation, elem ir.ElemType) error {
	t, ok := ods.GetType(op, "dtype")
	if !ok {
		return nil
	}
	if !ir.TypeEqual(t, elem) {
		return ir.OpError(op, "attribute 'dtype' is %s, but the result element type is %s", q(t), q(elem))
	}
	return nil
}

// checkStaticDims reports the first dimension of t among dims that is
// dynamic: a reduced or contracted extent must be known to the compiler.
//
//	dimension 1 of 'tensor<4x?xf32>' is reduced, so it must be static
func checkStaticDims(op *ir.Operation, t ir.TensorType, dims ...int64) error {
	for _, d := range dims {
		if t.Shape[d] == ir.Dynamic {
			return ir.OpError(op, "dimension %d of %s is reduced, so it must be static", d, q(t))
		}
	}
	return nil
}
