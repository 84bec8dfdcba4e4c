package ods

import (
	"slices"

	"github.com/tensorforge/tensorforge/ir"
)

// Constraint restricts the type of an operand or result, as ODS type
// constraints do (`TensorOf<[AnyFloat]>`). The generated verifiers check
// them before an op's class rules run, so those rules may assume, say,
// that every operand is an ir.TensorType.
//
// A dialect needing a new restriction adds an entry here; the generator
// refers to it by its Go name.
type Constraint uint8

const (
	// invalidConstraint is the zero value: every operand and result must
	// state its constraint.
	invalidConstraint Constraint = iota
	// AnyTensor is a tensor of any element type.
	AnyTensor
	// NumericTensor is a tensor of numbers: any element type but i1.
	NumericTensor
	// FloatTensor is a tensor of floating-point values.
	FloatTensor
	// BoolTensor is a tensor of i1 values.
	BoolTensor
	// QuantizedTensor holds quantised values: ui8, i8 or f8E4M3FN.
	QuantizedTensor
	// RequantizableTensor holds what requantize reads: i32, i8 or ui8.
	RequantizableTensor
	// DequantizableTensor holds what dequantize reads: quantised values or
	// i32 accumulators.
	DequantizableTensor
	numConstraints
)

var constraintInfo = [numConstraints]struct {
	goName  string
	summary string
	elems   func(ir.ElemKind) bool // nil: any element type
}{
	AnyTensor:     {"AnyTensor", "tensor of any type values", nil},
	NumericTensor: {"NumericTensor", "tensor of numeric (not i1) values", func(k ir.ElemKind) bool { return k != ir.I1 }},
	FloatTensor:   {"FloatTensor", "tensor of floating-point values", ir.ElemKind.IsFloat},
	BoolTensor:    {"BoolTensor", "tensor of i1 values", func(k ir.ElemKind) bool { return k == ir.I1 }},
	QuantizedTensor: {"QuantizedTensor", "tensor of ui8, i8 or f8E4M3FN values",
		oneOf(ir.UI8, ir.I8, ir.F8E4M3FN)},
	RequantizableTensor: {"RequantizableTensor", "tensor of i32, i8 or ui8 values",
		oneOf(ir.I32, ir.I8, ir.UI8)},
	DequantizableTensor: {"DequantizableTensor", "tensor of i32, i8, ui8 or f8E4M3FN values",
		oneOf(ir.I32, ir.I8, ir.UI8, ir.F8E4M3FN)},
}

func oneOf(kinds ...ir.ElemKind) func(ir.ElemKind) bool {
	return func(k ir.ElemKind) bool { return slices.Contains(kinds, k) }
}

func (c Constraint) valid() bool { return c > invalidConstraint && c < numConstraints }

// String returns the constraint's Go name, "FloatTensor".
func (c Constraint) String() string {
	if !c.valid() {
		return "invalid constraint"
	}
	return constraintInfo[c].goName
}

// Summary describes the allowed types for diagnostics and docs:
// "tensor of floating-point values".
func (c Constraint) Summary() string {
	if !c.valid() {
		return "invalid constraint"
	}
	return constraintInfo[c].summary
}

// Allows reports whether t satisfies the constraint.
func (c Constraint) Allows(t ir.Type) bool {
	if !c.valid() {
		return false
	}
	tt, ok := t.(ir.TensorType)
	if !ok {
		return false
	}
	elems := constraintInfo[c].elems
	return elems == nil || elems(tt.Elem.Kind)
}
