package graph

import (
	"fmt"
	"slices"

	"github.com/tensorforge/tensorforge/ir"
)

// This file holds the reduction helpers and the rules of the classes
// Reduce (reduce_sum, reduce_max, reduce_min, reduce_mean) and LogSumExp.

// NormalizeAxes checks the axes of a reduction over a tensor of the given
// rank and returns them counted from the front, sorted. An axis must lie
// in [-rank, rank); negative ones count from the end; no dimension may be
// named twice.
//
//	NormalizeAxes([-1, 0], 3) = [0, 2]
//	NormalizeAxes([2], 2)     -> axis 2 is out of range for rank 2
//	NormalizeAxes([1, -1], 2) -> axes 1 and -1 refer to the same dimension
func NormalizeAxes(axes []int64, rank int) ([]int64, error) {
	out := make([]int64, len(axes))
	seen := make(map[int64]int64, len(axes)) // normalised axis -> as written
	for i, a := range axes {
		n := a
		if n < 0 {
			n += int64(rank)
		}
		if n < 0 || n >= int64(rank) {
			return nil, fmt.Errorf("axis %d is out of range for rank %d", a, rank)
		}
		if prev, dup := seen[n]; dup {
			if prev == a {
				return nil, fmt.Errorf("axis %d is repeated", a)
			}
			return nil, fmt.Errorf("axes %d and %d refer to the same dimension", prev, a)
		}
		seen[n] = a
		out[i] = n
	}
	slices.Sort(out)
	return out, nil
}

// ReducedShape returns the shape left after reducing shape along axes:
// the reduced dimensions are dropped, or kept with extent 1 if keepdim.
// Axes are those NormalizeAxes accepts; negative ones count from the end.
//
//	ReducedShape([4, 8, 16], [1], false) = [4, 16]
//	ReducedShape([4, 8, 16], [1], true)  = [4, 1, 16]
func ReducedShape(shape []int64, axes []int64, keepdim bool) []int64 {
	reduced := make([]bool, len(shape))
	for _, a := range axes {
		if a < 0 {
			a += int64(len(shape))
		}
		if a >= 0 && a < int64(len(shape)) {
			reduced[a] = true
		}
	}
	out := make([]int64, 0, len(shape))
	for i, d := range shape {
		switch {
		case !reduced[i]:
			out = append(out, d)
		case keepdim:
			out = append(out, 1)
		}
	}
	return out
}

// reduceAttrs reads the attributes every Reduce op declares alike, axes
// and keepdim, through the accessors generated for graph.reduce_sum.
func reduceAttrs(op *ir.Operation) (axes []int64, keepdim bool) {
	r := ReduceSumOp{op}
	return r.Axes(), r.Keepdim()
}

// inferReduce: `%s = graph.reduce_sum %x {axes = [1]} : (tensor<4x8xf32>) -> tensor<4xf32>`.
//
//	attribute 'axes' must name at least one dimension
//	axis 2 is out of range for rank 2
//	dimension 1 of 'tensor<4x?xf32>' is reduced, so it must be static
func inferReduce(op *ir.Operation) ([]ir.Type, error) {
	axes, keepdim := reduceAttrs(op)
	if len(axes) == 0 {
		return nil, ir.OpError(op, "attribute 'axes' must name at least one dimension")
	}
	return reduceAlong(op, axes, keepdim)
}

// reduceAlong checks the axes of a reduction of operand 0 and returns
// its result type.
func reduceAlong(op *ir.Operation, axes []int64, keepdim bool) ([]ir.Type, error) {
	in := operandType(op, 0)
	norm, err := NormalizeAxes(axes, in.Rank())
	if err != nil {
		return nil, ir.OpError(op, "%v", err)
	}
	if err := checkStaticDims(op, in, norm...); err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorType{Shape: ReducedShape(in.Shape, norm, keepdim), Elem: in.Elem}}, nil
}

// inferLogSumExp: `%l = graph.logsumexp %x {axis = -1} : (tensor<4x8xf32>) -> tensor<4xf32>`
// reduces one axis, as Reduce does.
func inferLogSumExp(op *ir.Operation) ([]ir.Type, error) {
	l := LogSumExpOp{op}
	return reduceAlong(op, []int64{l.Axis()}, l.Keepdim())
}
