package llvmemit

import (
	"fmt"
	"math"

	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

// ---------------------------------------------------------------------------
// Types
//
// A loop value of element type T lives in a register of T's storage type:
//
//	index, i64        i64          f32   float
//	i32, ui32         i32          f64   double
//	i16, ui16         i16          f16   i16 (bits; arithmetic goes through `half`)
//	i8, ui8           i8           bf16  i16 (bits)
//	i1                i1           f8*   i8  (bits)
//
// and a `vector<8xT>` in `<8 x storage>`. In memory i1 takes a byte, so a
// buffer of i1 is an `i8*`. Signedness is not part of an LLVM integer type:
// the ops that care (div, cmp, max, casts) read it from the loop type.

// scalarType is the register type of one element of kind k.
func scalarType(k ir.ElemKind) (types.Type, bool) {
	switch k {
	case ir.F64:
		return types.Double, true
	case ir.F32:
		return types.Float, true
	case ir.F16, ir.BF16, ir.I16, ir.UI16:
		return types.I16, true
	case ir.F8E4M3FN, ir.F8E5M2, ir.I8, ir.UI8:
		return types.I8, true
	case ir.I1:
		return types.I1, true
	case ir.I32, ir.UI32:
		return types.I32, true
	case ir.I64, ir.Index:
		return types.I64, true
	}
	return nil, false
}

// memType is the type of one element of kind k in memory.
func memType(k ir.ElemKind) (types.Type, bool) {
	if k == ir.I1 {
		return types.I8, true
	}
	return scalarType(k)
}

// lanes is the vector width of a loop type, 0 for a scalar.
func lanes(t ir.Type) int {
	if v, ok := t.(ir.VectorType); ok && len(v.Shape) == 1 {
		return int(v.Shape[0])
	}
	return 0
}

// elemKind is the element kind of a scalar, vector or memref type.
func elemKind(t ir.Type) ir.ElemKind {
	e, _ := ir.ElemOf(t)
	return e.Kind
}

// shaped returns elem itself for w == 0 and `<w x elem>` otherwise.
func shaped(w int, elem types.Type) types.Type {
	if w == 0 {
		return elem
	}
	return types.NewVector(uint64(w), elem)
}

// widthOf is the lane count of an LLVM type, 0 for a scalar.
func widthOf(t types.Type) int {
	if v, ok := t.(*types.VectorType); ok {
		return int(v.Len)
	}
	return 0
}

// scalarOf is the element type of an LLVM vector, or t itself.
func scalarOf(t types.Type) types.Type {
	if v, ok := t.(*types.VectorType); ok {
		return v.ElemType
	}
	return t
}

// withScalar is a type of t's width with element e.
func withScalar(t types.Type, e types.Type) types.Type { return shaped(widthOf(t), e) }

// valueType maps a loop scalar, vector or index type to its register type.
func valueType(t ir.Type) (types.Type, error) {
	switch t := t.(type) {
	case ir.ElemType:
		if s, ok := scalarType(t.Kind); ok {
			return s, nil
		}
	case ir.VectorType:
		if len(t.Shape) == 1 && t.Shape[0] > 0 {
			if s, ok := scalarType(t.Elem.Kind); ok {
				return types.NewVector(uint64(t.Shape[0]), s), nil
			}
		}
	}
	return nil, fmt.Errorf("type '%s' has no LLVM counterpart", t)
}

// pointerTo is the parameter type of a buffer of element kind k.
func pointerTo(k ir.ElemKind) (*types.PointerType, error) {
	m, ok := memType(k)
	if !ok {
		return nil, fmt.Errorf("element type '%s' cannot be stored", k)
	}
	return types.NewPointer(m), nil
}

// mangle is the overload suffix of an intrinsic: f32, v8f32, i64, v8i16.
func mangle(t types.Type) string {
	if v, ok := t.(*types.VectorType); ok {
		return fmt.Sprintf("v%d%s", v.Len, mangle(v.ElemType))
	}
	switch t {
	case types.Float:
		return "f32"
	case types.Double:
		return "f64"
	case types.Half:
		return "f16"
	}
	if it, ok := t.(*types.IntType); ok {
		return fmt.Sprintf("i%d", it.BitSize)
	}
	return t.LLString()
}

// ---------------------------------------------------------------------------
// Constants

// splat makes a constant of type t (scalar or vector) from its scalar c.
func splat(t types.Type, c constant.Constant) constant.Constant {
	v, ok := t.(*types.VectorType)
	if !ok {
		return c
	}
	elems := make([]constant.Constant, v.Len)
	for i := range elems {
		elems[i] = c
	}
	return constant.NewVector(v, elems...)
}

// fconst is the float or double constant v, splat to t's width.
func fconst(t types.Type, v float64) constant.Constant {
	ft := scalarOf(t).(*types.FloatType)
	if ft == types.Float {
		v = float64(float32(v))
	}
	return splat(t, constant.NewFloat(ft, v))
}

// iconst is the integer constant v, splat to t's width.
func iconst(t types.Type, v int64) constant.Constant {
	return intBits(t, uint64(v))
}

// elemConst is the register constant of value v in element kind k (bits
// for the narrow floats, rounded as a store rounds).
func elemConst(k ir.ElemKind, v float64) (constant.Constant, error) {
	st, ok := scalarType(k)
	if !ok {
		return nil, fmt.Errorf("no constant of type '%s'", k)
	}
	switch {
	case k == ir.F32 || k == ir.F64:
		return fconst(st, v), nil
	case k.IsFloat():
		bits, _ := numeric.ToBits(v, k)
		return intBits(st, bits), nil
	case k == ir.I1:
		return constant.NewBool(v != 0), nil
	}
	if v != math.Trunc(v) || math.IsInf(v, 0) || math.IsNaN(v) {
		return nil, fmt.Errorf("value %v is not an integer, as '%s' needs", v, k)
	}
	// keep the low bits: 255 in ui8 is the i8 constant -1
	return intBits(st, uint64(int64(numeric.WrapInt(v, k)))), nil
}

// intBits is the integer constant of type t with the low bits of b,
// written as the signed value LLVM prints (`i8 -1` for 0xFF).
func intBits(t types.Type, b uint64) constant.Constant {
	it := scalarOf(t).(*types.IntType)
	if it.BitSize == 1 {
		return splat(t, constant.NewBool(b&1 == 1))
	}
	shift := 64 - it.BitSize
	return splat(t, constant.NewInt(it, int64(b<<shift)>>shift))
}

// isConstInt reports whether v is the integer constant want.
func isConstInt(v value.Value, want int64) bool {
	c, ok := v.(*constant.Int)
	return ok && c.X.IsInt64() && c.X.Int64() == want
}
