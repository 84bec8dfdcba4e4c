package graph

import (
	"math"
	"slices"

	"github.com/tensorforge/tensorforge/ir"
)

// This file holds the rules of the normalisation classes: Normalization
// (rmsnorm, layernorm) and Softmax (softmax, log_softmax).

// normAttrs reads the attributes every Normalization op declares alike,
// eps and axis, through the accessors generated for graph.rmsnorm.
func normAttrs(op *ir.Operation) (eps float64, axis int64) {
	n := RMSNormOp{op}
	return n.Eps(), n.Axis()
}

// normalizedDim checks the `axis` of op against its input and returns it
// counted from the front. The dimension is reduced, so it must be static.
func normalizedDim(op *ir.Operation, axis int64) (int64, error) {
	in := operandType(op, 0)
	norm, err := NormalizeAxes([]int64{axis}, in.Rank())
	if err != nil {
		return 0, ir.OpError(op, "%v", err)
	}
	if err := checkStaticDims(op, in, norm[0]); err != nil {
		return 0, err
	}
	return norm[0], nil
}

// inferNormalization:
// `%n = graph.rmsnorm %x, %w : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>`
// and `graph.layernorm %x, %w, %b` keep the input's type; the weight and
// bias run along the normalised dimension.
//
//	attribute 'eps' must be finite and not negative, but got -1.0
//	weight must have shape [8] (dimension 1 of the input), but got 'tensor<4xbf16>'
func inferNormalization(op *ir.Operation) ([]ir.Type, error) {
	eps, axis := normAttrs(op)
	if eps < 0 || math.IsInf(eps, 0) || math.IsNaN(eps) {
		return nil, ir.OpError(op, "attribute 'eps' must be finite and not negative, but got %s", ir.FormatFloat(eps, ir.F64))
	}
	all := make([]int, op.NumOperands())
	for i := range all {
		all[i] = i
	}
	if err := checkSameElem(op, all...); err != nil {
		return nil, err
	}
	d, err := normalizedDim(op, axis)
	if err != nil {
		return nil, err
	}
	want := []int64{operandType(op, 0).Shape[d]}
	for i, name := range []string{"weight", "bias"}[:op.NumOperands()-1] {
		if t := operandType(op, i+1); !slices.Equal(t.Shape, want) {
			return nil, ir.OpError(op, "%s must have shape %s (dimension %d of the input), but got %s", name, FormatShape(want), d, q(t))
		}
	}
	return same(op)
}

// inferSoftmax: `%p = graph.softmax %x {axis = -1} : tensor<4x8xf32>`
// keeps the input's type; the axis is reduced internally.
func inferSoftmax(op *ir.Operation) ([]ir.Type, error) {
	if _, err := normalizedDim(op, SoftmaxOp{op}.Axis()); err != nil {
		return nil, err
	}
	return same(op)
}
