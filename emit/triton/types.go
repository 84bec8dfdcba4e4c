package triton

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/tensorforge/tensorforge/ir"
)

// elemInfo is how one element type is spelled on each side of a kernel
// launch.
type elemInfo struct {
	tl    string // the Triton dtype: tl.bfloat16
	torch string // the torch dtype: torch.bfloat16
}

var elemInfos = map[ir.ElemKind]elemInfo{
	ir.F64:      {"tl.float64", "torch.float64"},
	ir.F32:      {"tl.float32", "torch.float32"},
	ir.F16:      {"tl.float16", "torch.float16"},
	ir.BF16:     {"tl.bfloat16", "torch.bfloat16"},
	ir.F8E4M3FN: {"tl.float8e4nv", "torch.float8_e4m3fn"},
	ir.F8E5M2:   {"tl.float8e5", "torch.float8_e5m2"},
	ir.I1:       {"tl.int1", "torch.bool"},
	ir.I8:       {"tl.int8", "torch.int8"},
	ir.I16:      {"tl.int16", "torch.int16"},
	ir.I32:      {"tl.int32", "torch.int32"},
	ir.I64:      {"tl.int64", "torch.int64"},
	ir.UI8:      {"tl.uint8", "torch.uint8"},
	ir.UI16:     {"tl.uint16", "torch.uint16"},
	ir.UI32:     {"tl.uint32", "torch.uint32"},
	ir.Index:    {"tl.int64", "torch.int64"},
}

// tlType is the Triton dtype of element kind k.
func tlType(k ir.ElemKind) (string, error) {
	if info, ok := elemInfos[k]; ok {
		return info.tl, nil
	}
	return "", fmt.Errorf("element type %s has no Triton equivalent", k)
}

// torchType is the torch dtype of element kind k.
func torchType(k ir.ElemKind) (string, error) {
	if info, ok := elemInfos[k]; ok {
		return info.torch, nil
	}
	return "", fmt.Errorf("element type %s has no torch equivalent", k)
}

// elemKind is the element kind of a scalar, vector or memref type.
func elemKind(t ir.Type) ir.ElemKind {
	e, _ := ir.ElemOf(t)
	return e.Kind
}

// pyLiteral spells a constant of kind k as Python source: an integer for
// integer and index kinds, otherwise a float that converts back to the
// same value (the exact float64 value, which for an f32 constant is the
// f32 value itself), with `float("inf")` and `float("nan")` for the
// specials.
func pyLiteral(v float64, k ir.ElemKind) string {
	if k.IsInt() {
		if k == ir.I1 {
			if v != 0 {
				return "True"
			}
			return "False"
		}
		return strconv.FormatInt(int64(v), 10)
	}
	switch {
	case math.IsNaN(v):
		return `float("nan")`
	case math.IsInf(v, 1):
		return `float("inf")`
	case math.IsInf(v, -1):
		return `(-float("inf"))`
	}
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if !strings.ContainsAny(s, ".en") {
		s += ".0"
	}
	if strings.HasPrefix(s, "-") {
		s = "(" + s + ")"
	}
	return s
}

// nextPow2 is the smallest power of two >= n (1 for n <= 1).
func nextPow2(n int64) int64 {
	p := int64(1)
	for p < n {
		p *= 2
	}
	return p
}
