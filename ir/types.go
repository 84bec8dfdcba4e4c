package ir

import (
	"fmt"
	"math"
	"strings"
)

// Type is an IR type: an element type, a tensor, a memref, a vector or a
// function type. Types are immutable values; compare them with TypeEqual.
type Type interface {
	// String returns the textual form, exactly as the parser accepts it.
	String() string
	isType()
}

// TypeEqual reports whether two types are the same. It compares
// structurally: printing is never needed, so it is cheap in hot loops
// (the verifier and the printer call it for every op).
func TypeEqual(a, b Type) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	switch a := a.(type) {
	case TensorType:
		b, ok := b.(TensorType)
		return ok && a.Elem == b.Elem && shapeEqual(a.Shape, b.Shape)
	case ElemType:
		b, ok := b.(ElemType)
		return ok && a == b
	case MemRefType:
		b, ok := b.(MemRefType)
		return ok && a.Elem == b.Elem && a.Space == b.Space && shapeEqual(a.Shape, b.Shape)
	case VectorType:
		b, ok := b.(VectorType)
		return ok && a.Elem == b.Elem && shapeEqual(a.Shape, b.Shape)
	case FunctionType:
		b, ok := b.(FunctionType)
		return ok && typeListEqual(a.Inputs, b.Inputs) && typeListEqual(a.Results, b.Results)
	}
	return a.String() == b.String()
}

func shapeEqual(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func typeListEqual(a, b []Type) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !TypeEqual(a[i], b[i]) {
			return false
		}
	}
	return true
}

// ---------------------------------------------------------------------------
// Element types

// ElemKind enumerates the scalar element types: f64 f32 f16 bf16 f8E4M3FN
// f8E5M2 i1 i8 i16 i32 i64 ui8 ui16 ui32 index.
type ElemKind uint8

const (
	InvalidElem ElemKind = iota
	F64
	F32
	F16
	BF16
	F8E4M3FN
	F8E5M2
	I1
	I8
	I16
	I32
	I64
	UI8
	UI16
	UI32
	Index
)

var elemNames = [...]string{
	InvalidElem: "<invalid>", F64: "f64", F32: "f32", F16: "f16", BF16: "bf16",
	F8E4M3FN: "f8E4M3FN", F8E5M2: "f8E5M2", I1: "i1", I8: "i8", I16: "i16", I32: "i32",
	I64: "i64", UI8: "ui8", UI16: "ui16", UI32: "ui32", Index: "index",
}

// ElemKinds lists every valid element kind in declaration order.
func ElemKinds() []ElemKind {
	ks := make([]ElemKind, 0, len(elemNames)-1)
	for k := F64; k <= Index; k++ {
		ks = append(ks, k)
	}
	return ks
}

// ElemType is a scalar element type such as `f32` or `ui8`.
type ElemType struct{ Kind ElemKind }

func (e ElemType) String() string { return e.Kind.String() }
func (ElemType) isType()          {}

func (k ElemKind) String() string {
	if int(k) < len(elemNames) {
		return elemNames[k]
	}
	return fmt.Sprintf("<elem %d>", k)
}

// ParseElemKind maps the spelling of an element type to its kind.
func ParseElemKind(s string) (ElemKind, bool) {
	for k := F64; k <= Index; k++ {
		if elemNames[k] == s {
			return k, true
		}
	}
	return InvalidElem, false
}

// Convenience element types.
var (
	F64Type   = ElemType{F64}
	F32Type   = ElemType{F32}
	F16Type   = ElemType{F16}
	BF16Type  = ElemType{BF16}
	I1Type    = ElemType{I1}
	I8Type    = ElemType{I8}
	I32Type   = ElemType{I32}
	I64Type   = ElemType{I64}
	UI8Type   = ElemType{UI8}
	IndexType = ElemType{Index}
)

// IsFloat reports whether k is a floating-point kind.
func (k ElemKind) IsFloat() bool { return k >= F64 && k <= F8E5M2 }

// IsInt reports whether k is an integer kind (signed, unsigned, i1 or index).
func (k ElemKind) IsInt() bool { return k >= I1 && k <= Index }

// IsUnsigned reports whether k is an unsigned integer kind.
func (k ElemKind) IsUnsigned() bool { return k == UI8 || k == UI16 || k == UI32 }

// BitWidth is the storage width in bits (index is 64).
func (k ElemKind) BitWidth() int {
	switch k {
	case F64, I64, Index:
		return 64
	case F32, I32, UI32:
		return 32
	case F16, BF16, I16, UI16:
		return 16
	case F8E4M3FN, F8E5M2, I8, UI8:
		return 8
	case I1:
		return 1
	}
	return 0
}

// ByteSize is the storage size of one element in bytes (i1 takes a byte).
func (k ElemKind) ByteSize() int64 {
	if k == I1 {
		return 1
	}
	return int64(k.BitWidth() / 8)
}

// IntRange returns the inclusive value range of an integer kind.
func (k ElemKind) IntRange() (lo, hi int64) {
	switch k {
	case I1:
		return 0, 1
	case I8:
		return math.MinInt8, math.MaxInt8
	case I16:
		return math.MinInt16, math.MaxInt16
	case I32:
		return math.MinInt32, math.MaxInt32
	case I64, Index:
		return math.MinInt64, math.MaxInt64
	case UI8:
		return 0, math.MaxUint8
	case UI16:
		return 0, math.MaxUint16
	case UI32:
		return 0, math.MaxUint32
	}
	return 0, 0
}

// ---------------------------------------------------------------------------
// Shaped types

// Dynamic marks an extent unknown until run time (`?`).
const Dynamic int64 = -1

// ShapedType is implemented by tensor, memref and vector types.
type ShapedType interface {
	Type
	GetShape() []int64
	GetElem() ElemType
}

// TensorType is `tensor<4x?x8xf32>`; rank 0 is `tensor<f32>`.
type TensorType struct {
	Shape []int64
	Elem  ElemType
}

func (TensorType) isType()             {}
func (t TensorType) GetShape() []int64 { return t.Shape }
func (t TensorType) GetElem() ElemType { return t.Elem }
func (t TensorType) String() string    { return "tensor<" + shapePrefix(t.Shape) + t.Elem.String() + ">" }
func (t TensorType) Rank() int         { return len(t.Shape) }
func (t TensorType) WithElem(e ElemType) TensorType {
	return TensorType{Shape: t.Shape, Elem: e}
}

// Tensor builds a tensor type.
func Tensor(elem ElemType, shape ...int64) TensorType {
	return TensorType{Shape: append([]int64(nil), shape...), Elem: elem}
}

// MemSpace is the memory space of a memref.
type MemSpace uint8

const (
	// DRAM is device memory (global memory on a GPU, DRAM on a Tensix grid).
	DRAM MemSpace = iota
	// SRAM is on-chip scratchpad: CUDA shared memory, Metal threadgroup
	// memory, Tenstorrent L1.
	SRAM
	// Reg is private per-thread storage (registers).
	Reg
)

var memSpaceNames = [...]string{DRAM: "dram", SRAM: "sram", Reg: "reg"}

func (m MemSpace) String() string {
	if int(m) < len(memSpaceNames) {
		return memSpaceNames[m]
	}
	return fmt.Sprintf("<space %d>", m)
}

// ParseMemSpace maps `dram`, `sram` or `reg` to a memory space.
func ParseMemSpace(s string) (MemSpace, bool) {
	for i, n := range memSpaceNames {
		if n == s {
			return MemSpace(i), true
		}
	}
	return 0, false
}

// MemRefType is `memref<?x8192xbf16, dram>`.
type MemRefType struct {
	Shape []int64
	Elem  ElemType
	Space MemSpace
}

func (MemRefType) isType()             {}
func (t MemRefType) GetShape() []int64 { return t.Shape }
func (t MemRefType) GetElem() ElemType { return t.Elem }
func (t MemRefType) String() string {
	return "memref<" + shapePrefix(t.Shape) + t.Elem.String() + ", " + t.Space.String() + ">"
}

// VectorType is `vector<8xf32>`: a fixed-size register value.
type VectorType struct {
	Shape []int64
	Elem  ElemType
}

func (VectorType) isType()             {}
func (t VectorType) GetShape() []int64 { return t.Shape }
func (t VectorType) GetElem() ElemType { return t.Elem }
func (t VectorType) String() string    { return "vector<" + shapePrefix(t.Shape) + t.Elem.String() + ">" }

func shapePrefix(shape []int64) string {
	var sb strings.Builder
	for _, d := range shape {
		if d == Dynamic {
			sb.WriteString("?")
		} else {
			fmt.Fprintf(&sb, "%d", d)
		}
		sb.WriteByte('x')
	}
	return sb.String()
}

// FunctionType is `(T1, T2) -> T3` or `(T) -> (T, T)`.
type FunctionType struct {
	Inputs  []Type
	Results []Type
}

func (FunctionType) isType() {}
func (t FunctionType) String() string {
	var sb strings.Builder
	sb.WriteByte('(')
	writeTypeList(&sb, t.Inputs)
	sb.WriteString(") -> ")
	if len(t.Results) == 1 {
		if _, isFn := t.Results[0].(FunctionType); !isFn {
			sb.WriteString(typeString(t.Results[0]))
			return sb.String()
		}
	}
	sb.WriteByte('(')
	writeTypeList(&sb, t.Results)
	sb.WriteByte(')')
	return sb.String()
}

func writeTypeList(sb *strings.Builder, ts []Type) {
	for i, t := range ts {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(typeString(t))
	}
}

// typeString spells t, and a missing type as MLIR does: invalid IR (an
// op with a null operand) must still print.
func typeString(t Type) string {
	if t == nil {
		return "<<NULL TYPE>>"
	}
	return t.String()
}

// ---------------------------------------------------------------------------
// Helpers on shaped types

// ElemOf returns the element type of a scalar or shaped type.
func ElemOf(t Type) (ElemType, bool) {
	switch t := t.(type) {
	case ElemType:
		return t, true
	case ShapedType:
		return t.GetElem(), true
	}
	return ElemType{}, false
}

// ShapeOf returns the shape of a shaped type (nil, true for a scalar).
func ShapeOf(t Type) ([]int64, bool) {
	switch t := t.(type) {
	case ElemType:
		return nil, true
	case ShapedType:
		return t.GetShape(), true
	}
	return nil, false
}

// HasDynamicDim reports whether any extent is `?`.
func HasDynamicDim(shape []int64) bool {
	for _, d := range shape {
		if d == Dynamic {
			return true
		}
	}
	return false
}

// NumElements returns the element count of a static shape; ok is false when
// a dimension is dynamic or the product overflows int64.
func NumElements(shape []int64) (n int64, ok bool) {
	zero := false
	for _, d := range shape {
		if d < 0 {
			return 0, false
		}
		zero = zero || d == 0
	}
	if zero {
		// 0x2^62x2^62 holds no element; the product must not be taken
		// as overflowing on the way.
		return 0, true
	}
	n = 1
	for _, d := range shape {
		if n > math.MaxInt64/d {
			return 0, false
		}
		n *= d
	}
	return n, true
}

// ByteSizeOf returns the storage bytes of a static shaped type; ok is false
// when a dimension is dynamic or the size overflows int64.
func ByteSizeOf(t ShapedType) (int64, bool) {
	n, ok := NumElements(t.GetShape())
	if !ok {
		return 0, false
	}
	b := t.GetElem().Kind.ByteSize()
	if b != 0 && n > math.MaxInt64/b {
		return 0, false
	}
	return n * b, true
}
