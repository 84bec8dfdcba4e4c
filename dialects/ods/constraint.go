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
	// IndexTensor holds indices into another tensor: i32 or i64.
	IndexTensor

	// The loop dialect's values are scalars, vectors, indices and buffers.

	// AnyType is a value of any type.
	AnyType
	// IndexValue is an `index`.
	IndexValue
	// ScalarValue is a scalar of any element type but index.
	ScalarValue
	// VectorValue is a 1-D vector: `vector<8xf32>`.
	VectorValue
	// ScalarOrVector is a ScalarValue or a VectorValue.
	ScalarOrVector
	// IntegerScalar is a scalar of an integer type (not i1, not index).
	IntegerScalar
	// AnyMemRef is a buffer in any memory space.
	AnyMemRef
	// DRAMMemRef is a buffer in device memory: `memref<?x8192xbf16, dram>`.
	DRAMMemRef
	// SRAMMemRef is a scratchpad buffer: `memref<8192xf32, sram>`.
	SRAMMemRef
	numConstraints
)

var constraintInfo = [numConstraints]struct {
	goName  string
	summary string
	allows  func(ir.Type) bool
}{
	AnyTensor:     {"AnyTensor", "tensor of any type values", tensorOf(func(ir.ElemKind) bool { return true })},
	NumericTensor: {"NumericTensor", "tensor of numeric (not i1) values", tensorOf(func(k ir.ElemKind) bool { return k != ir.I1 })},
	FloatTensor:   {"FloatTensor", "tensor of floating-point values", tensorOf(ir.ElemKind.IsFloat)},
	BoolTensor:    {"BoolTensor", "tensor of i1 values", tensorOf(oneOf(ir.I1))},
	QuantizedTensor: {"QuantizedTensor", "tensor of ui8, i8 or f8E4M3FN values",
		tensorOf(oneOf(ir.UI8, ir.I8, ir.F8E4M3FN))},
	RequantizableTensor: {"RequantizableTensor", "tensor of i32, i8 or ui8 values",
		tensorOf(oneOf(ir.I32, ir.I8, ir.UI8))},
	DequantizableTensor: {"DequantizableTensor", "tensor of i32, i8, ui8 or f8E4M3FN values",
		tensorOf(oneOf(ir.I32, ir.I8, ir.UI8, ir.F8E4M3FN))},
	IndexTensor: {"IndexTensor", "tensor of i32 or i64 values", tensorOf(oneOf(ir.I32, ir.I64))},
	AnyType:     {"AnyType", "any type", func(ir.Type) bool { return true }},
	IndexValue:  {"IndexValue", "index", isIndex},
	ScalarValue: {"ScalarValue", "scalar of any element type but index", isScalar},
	VectorValue: {"VectorValue", "1-D vector of any element type but index", isVector},
	ScalarOrVector: {"ScalarOrVector", "scalar or 1-D vector of any element type but index",
		func(t ir.Type) bool { return isScalar(t) || isVector(t) }},
	IntegerScalar: {"IntegerScalar", "scalar of an integer type", func(t ir.Type) bool {
		e, ok := t.(ir.ElemType)
		return ok && e.Kind.IsInt() && e.Kind != ir.I1 && e.Kind != ir.Index
	}},
	AnyMemRef:  {"AnyMemRef", "memref in any memory space", memRefIn(ir.DRAM, ir.SRAM, ir.Reg)},
	DRAMMemRef: {"DRAMMemRef", "memref in dram", memRefIn(ir.DRAM)},
	SRAMMemRef: {"SRAMMemRef", "memref in sram", memRefIn(ir.SRAM)},
}

// tensorOf allows tensors whose element kind satisfies elems.
func tensorOf(elems func(ir.ElemKind) bool) func(ir.Type) bool {
	return func(t ir.Type) bool {
		tt, ok := t.(ir.TensorType)
		return ok && elems(tt.Elem.Kind)
	}
}

func isIndex(t ir.Type) bool {
	e, ok := t.(ir.ElemType)
	return ok && e.Kind == ir.Index
}

func isScalar(t ir.Type) bool {
	e, ok := t.(ir.ElemType)
	return ok && e.Kind != ir.Index && e.Kind != ir.InvalidElem
}

func isVector(t ir.Type) bool {
	v, ok := t.(ir.VectorType)
	return ok && len(v.Shape) == 1 && v.Elem.Kind != ir.Index && v.Elem.Kind != ir.InvalidElem
}

func memRefIn(spaces ...ir.MemSpace) func(ir.Type) bool {
	return func(t ir.Type) bool {
		m, ok := t.(ir.MemRefType)
		return ok && slices.Contains(spaces, m.Space)
	}
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
	return c.valid() && constraintInfo[c].allows(t)
}
