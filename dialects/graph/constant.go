package graph

import (
	"math"
	"strconv"

	"github.com/tensorforge/tensorforge/dialects/ods"
	"github.com/tensorforge/tensorforge/ir"
)

// This file holds the rules of the Constant class.

// inferConstant: `%c = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>`
// has the type of its value.
//
//	attribute 'value' must have a static tensor type, but got 'tensor<?xf32>'
//	attribute 'value' has 3 elements, but its type 'tensor<4xf32>' has 4
//	attribute 'value' element 300 is out of range [-128, 127] of 'i8'
//	attribute 'value' element 1.5 is not an integer, as 'i32' requires
func inferConstant(op *ir.Operation) ([]ir.Type, error) {
	v := ConstantOp{op}.Value()
	t, ok := v.Type.(ir.TensorType)
	if !ok || ir.HasDynamicDim(t.Shape) {
		return nil, ir.OpError(op, "attribute 'value' must have a static tensor type, but got %s", q(v.Type))
	}
	if err := ods.CheckTypeSize(t); err != nil {
		return nil, ir.OpError(op, "attribute 'value': %v", err)
	}
	n, _ := ir.NumElements(t.Shape)
	if len(v.Values) != 1 && int64(len(v.Values)) != n {
		return nil, ir.OpError(op, "attribute 'value' has %d elements, but its type %s has %d", len(v.Values), q(t), n)
	}
	if k := t.Elem.Kind; k.IsInt() {
		lo, hi := k.IntRange()
		for _, x := range v.Values {
			if x != math.Trunc(x) {
				return nil, ir.OpError(op, "attribute 'value' element %s is not an integer, as %s requires", strconv.FormatFloat(x, 'g', -1, 64), q(t.Elem))
			}
			// float64(hi) may round up (i64), so compare on the float side
			if x < float64(lo) || x > float64(hi) {
				return nil, ir.OpError(op, "attribute 'value' element %s is out of range [%d, %d] of %s", strconv.FormatFloat(x, 'g', -1, 64), lo, hi, q(t.Elem))
			}
		}
	}
	return []ir.Type{t}, nil
}
