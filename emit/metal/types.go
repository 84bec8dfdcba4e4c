package metal

import (
	"math"
	"strconv"
	"strings"

	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

// This file maps element types to Metal: the type a value or a buffer
// element has, the name of its four-lane vector, its spelling in a launch
// description, and constants.
//
//	f32 float   f16 half   bf16 bfloat   f8E4M3FN, f8E5M2 uchar (the bits)
//	i1 bool     i8 char    i16 short     i32 int    i64 long
//	ui8 uchar   ui16 ushort ui32 uint    index uint
//
// Metal has no 64-bit float type: a kernel with an f64 value is an error.
// The 8-bit floats have no Metal type either; they are held as their bits
// and converted by the helpers tf_from_f8e4m3 and friends.

// metalType is the Metal scalar type of element kind k ("" for f64).
func metalType(k ir.ElemKind) string {
	switch k {
	case ir.F32:
		return "float"
	case ir.F16:
		return "half"
	case ir.BF16:
		return "bfloat"
	case ir.F8E4M3FN, ir.F8E5M2, ir.UI8:
		return "uchar"
	case ir.I1:
		return "bool"
	case ir.I8:
		return "char"
	case ir.I16:
		return "short"
	case ir.I32:
		return "int"
	case ir.I64:
		return "long"
	case ir.UI16:
		return "ushort"
	case ir.UI32, ir.Index:
		return "uint"
	}
	return ""
}

// dtypeName is the element type as a launch description, NumPy and MLX
// spell it.
func dtypeName(k ir.ElemKind) string {
	switch k {
	case ir.F32:
		return "float32"
	case ir.F16:
		return "float16"
	case ir.BF16:
		return "bfloat16"
	case ir.F8E4M3FN:
		return "float8_e4m3fn"
	case ir.F8E5M2:
		return "float8_e5m2"
	case ir.I1:
		return "bool"
	case ir.I8:
		return "int8"
	case ir.I16:
		return "int16"
	case ir.I32:
		return "int32"
	case ir.I64:
		return "int64"
	case ir.UI8:
		return "uint8"
	case ir.UI16:
		return "uint16"
	case ir.UI32:
		return "uint32"
	}
	return k.String()
}

// isF8 reports whether k is an 8-bit float held as its bits.
func isF8(k ir.ElemKind) bool { return k == ir.F8E4M3FN || k == ir.F8E5M2 }

// vecLoadable reports whether buffers of k are read and written as Metal
// vectors; bool elements are moved one by one.
func vecLoadable(k ir.ElemKind) bool { return k != ir.I1 }

// literal spells value v of element kind k as a Metal constant of that
// type: 1.0e-05f, -INFINITY, bfloat(0.5f), char(-3), 8192.
func literal(k ir.ElemKind, v float64) string {
	switch {
	case k == ir.F32:
		return floatLiteral(v)
	case k == ir.F16 || k == ir.BF16:
		return metalType(k) + "(" + floatLiteral(v) + ")"
	case isF8(k):
		bits, _ := numeric.ToBits(v, k)
		return "uchar(" + strconv.FormatUint(bits, 10) + ")"
	case k == ir.I1:
		if v != 0 {
			return "true"
		}
		return "false"
	case k == ir.I32:
		if v == math.MinInt32 {
			return "int(-2147483647 - 1)"
		}
		return strconv.FormatInt(int64(v), 10)
	case k == ir.UI32:
		return strconv.FormatUint(uint64(v), 10) + "u"
	case k == ir.Index:
		return strconv.FormatInt(int64(v), 10)
	case k == ir.I64:
		if v <= math.MinInt64 {
			return "long(-9223372036854775807 - 1)"
		}
		return "long(" + strconv.FormatInt(int64(v), 10) + ")"
	}
	return metalType(k) + "(" + strconv.FormatInt(int64(v), 10) + ")"
}

// floatLiteral spells an f32 value: the shortest decimal that reads back
// as the same float, with an f suffix.
func floatLiteral(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NAN"
	case math.IsInf(v, 1):
		return "INFINITY"
	case math.IsInf(v, -1):
		return "-INFINITY"
	}
	s := strconv.FormatFloat(float64(float32(v)), 'g', -1, 32)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s + "f"
}
