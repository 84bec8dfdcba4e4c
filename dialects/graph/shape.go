package graph

import (
	"fmt"
	"math"
	"slices"

	"github.com/tensorforge/tensorforge/ir"
)

// This file holds the rules of the shape classes: Reshape, Transpose,
// BroadcastTo, Slice and Concat, and of Cast, which changes the element
// type and keeps the shape.

// checkSameElemAsResult reports a result whose element type differs from
// operand 0's.
//
//	requires the same element type for the operand and the result, but got 'f32' and 'f16'
func checkSameElemAsResult(op *ir.Operation) error {
	in, out := operandType(op, 0).Elem, resultType(op, 0).Elem
	if in != out {
		return ir.OpError(op, "requires the same element type for the operand and the result, but got %s and %s", q(in), q(out))
	}
	return nil
}

// verifyCast: `%y = graph.cast %x : (tensor<4x8xf32>) -> tensor<4x8xbf16>`
// keeps the shape; `dtype`, if given, restates the result element type.
func verifyCast(op *ir.Operation) error {
	if err := checkSameShape(op); err != nil {
		return err
	}
	return checkDtype(op, resultType(op, 0).Elem)
}

// verifyReshape: `%y = graph.reshape %x : (tensor<4x8xf32>) -> tensor<32xf32>`
// keeps the element type and, between static shapes, the element count.
//
//	operand type 'tensor<4x8xf32>' has 32 elements, but result type 'tensor<4x4xf32>' has 16
func verifyReshape(op *ir.Operation) error {
	if err := checkSameElemAsResult(op); err != nil {
		return err
	}
	in, out := operandType(op, 0), resultType(op, 0)
	n, staticIn := ir.NumElements(in.Shape)
	m, staticOut := ir.NumElements(out.Shape)
	if staticIn && staticOut && n != m {
		return ir.OpError(op, "operand type %s has %d elements, but result type %s has %d", q(in), n, q(out), m)
	}
	return nil
}

// inferTranspose: `%y = graph.transpose %x {perm = [1, 0]} : (tensor<4x8xf32>) -> tensor<8x4xf32>`.
//
//	attribute 'perm' must be a permutation of [0, 2), but got [0, 0]
func inferTranspose(op *ir.Operation) ([]ir.Type, error) {
	in, perm := operandType(op, 0), TransposeOp{op}.Perm()
	seen := make([]bool, in.Rank())
	ok := len(perm) == in.Rank()
	for _, p := range perm {
		if !ok || p < 0 || p >= int64(in.Rank()) || seen[p] {
			ok = false
			break
		}
		seen[p] = true
	}
	if !ok {
		return nil, ir.OpError(op, "attribute 'perm' must be a permutation of [0, %d), but got %s", in.Rank(), op.Attr("perm"))
	}
	shape := make([]int64, len(perm))
	for i, p := range perm {
		shape[i] = in.Shape[p]
	}
	return []ir.Type{ir.TensorType{Shape: shape, Elem: in.Elem}}, nil
}

// verifyBroadcastTo: `%y = graph.broadcast_to %x : (tensor<8xf32>) -> tensor<4x8xf32>`.
//
//	operand type 'tensor<3xf32>' cannot be broadcast to result type 'tensor<4x4xf32>'
func verifyBroadcastTo(op *ir.Operation) error {
	if err := checkSameElemAsResult(op); err != nil {
		return err
	}
	in, out := operandType(op, 0), resultType(op, 0)
	if got, err := BroadcastShapes(in.Shape, out.Shape); err != nil || !slices.Equal(got, out.Shape) {
		return ir.OpError(op, "operand type %s cannot be broadcast to result type %s", q(in), q(out))
	}
	return nil
}

// inferSlice: `%y = graph.slice %x {offsets = [0, 2], sizes = [4, 4]} : (tensor<4x8xf32>) -> tensor<4x4xf32>`.
//
//	attribute 'offsets' must have one entry per dimension (2), but has 1
//	attribute 'sizes' has negative entry -2 for dimension 0
//	slice of dimension 1 (offset 6, size 4) exceeds its extent 8
//	a size of -1 takes all of dimension 0 from offset 0 with stride 1, but its offset is 2 and its stride 1
//
// A size of -1 takes the whole dimension: the result has the operand's
// extent there, static or `?`.
func inferSlice(op *ir.Operation) ([]ir.Type, error) {
	in, s := operandType(op, 0), SliceOp{op}
	offsets, sizes := s.Offsets(), s.Sizes()
	for _, attr := range []struct {
		name   string
		values []int64
	}{{"offsets", offsets}, {"sizes", sizes}} {
		if len(attr.values) != in.Rank() {
			return nil, ir.OpError(op, "attribute '%s' must have one entry per dimension (%d), but has %d", attr.name, in.Rank(), len(attr.values))
		}
		for d, v := range attr.values {
			if v < 0 && (attr.name != "sizes" || v != -1) {
				return nil, ir.OpError(op, "attribute '%s' has negative entry %d for dimension %d", attr.name, v, d)
			}
		}
	}
	strides := SliceStrides(s)
	if len(strides) != in.Rank() {
		return nil, ir.OpError(op, "attribute 'strides' must have one entry per dimension (%d), but has %d", in.Rank(), len(strides))
	}
	for d, st := range strides {
		if st < 1 {
			return nil, ir.OpError(op, "attribute 'strides' has entry %d for dimension %d; strides are positive", st, d)
		}
	}
	shape := append([]int64(nil), sizes...)
	for d, extent := range in.Shape {
		if sizes[d] == -1 {
			if offsets[d] != 0 || strides[d] != 1 {
				return nil, ir.OpError(op, "a size of -1 takes all of dimension %d from offset 0 with stride 1, but its offset is %d and its stride %d", d, offsets[d], strides[d])
			}
			shape[d] = extent
			continue
		}
		if extent == ir.Dynamic {
			continue
		}
		if offsets[d] > extent || (sizes[d] > 0 && (sizes[d]-1) > (extent-1-offsets[d])/strides[d]) || (sizes[d] > 0 && offsets[d] >= extent) {
			stride := ""
			if strides[d] != 1 {
				stride = fmt.Sprintf(", stride %d", strides[d])
			}
			return nil, ir.OpError(op, "slice of dimension %d (offset %d, size %d%s) exceeds its extent %d", d, offsets[d], sizes[d], stride, extent)
		}
	}
	return []ir.Type{ir.TensorType{Shape: shape, Elem: in.Elem}}, nil
}

// SliceStrides is a graph.slice's strides: its `strides`, or 1 in every
// dimension.
func SliceStrides(s SliceOp) []int64 {
	if st := s.Strides(); st != nil {
		return st
	}
	out := make([]int64, len(s.Offsets()))
	for i := range out {
		out[i] = 1
	}
	return out
}

// inferConcat: `%y = graph.concat %a, %b {axis = 1} : (tensor<4x8xf32>, tensor<4x2xf32>) -> tensor<4x10xf32>`.
//
//	expects at least one operand
//	requires operands of the same rank, but got 'tensor<4x8xf32>' and 'tensor<8xf32>'
//	operand #1 type 'tensor<3x2xf32>' differs from 'tensor<4x8xf32>' in dimension 0, which is not the concatenation axis
func inferConcat(op *ir.Operation) ([]ir.Type, error) {
	if op.NumOperands() == 0 {
		return nil, ir.OpError(op, "expects at least one operand")
	}
	first := operandType(op, 0)
	all := make([]int, op.NumOperands())
	for i := range all {
		all[i] = i
		if t := operandType(op, i); t.Rank() != first.Rank() {
			return nil, ir.OpError(op, "requires operands of the same rank, but got %s and %s", q(first), q(t))
		}
	}
	if err := checkSameElem(op, all...); err != nil {
		return nil, err
	}
	norm, err := NormalizeAxes([]int64{ConcatOp{op}.Axis()}, first.Rank())
	if err != nil {
		return nil, ir.OpError(op, "%v", err)
	}
	axis := norm[0]
	shape := append([]int64(nil), first.Shape...)
	for i := 1; i < op.NumOperands(); i++ {
		t := operandType(op, i)
		for d, e := range t.Shape {
			switch {
			case int64(d) == axis:
				if shape[d] == ir.Dynamic || e == ir.Dynamic {
					shape[d] = ir.Dynamic
				} else if e > math.MaxInt64-shape[d] {
					return nil, ir.OpError(op, "the concatenated extent of dimension %d overflows int64", d)
				} else {
					shape[d] += e
				}
			case !extentsAgree(shape[d], e):
				return nil, ir.OpError(op, "operand #%d type %s differs from %s in dimension %d, which is not the concatenation axis", i, q(t), q(first), d)
			case shape[d] == ir.Dynamic:
				shape[d] = e
			}
		}
	}
	return []ir.Type{ir.TensorType{Shape: shape, Elem: first.Elem}}, nil
}

// inferRoll: `%y = graph.roll %x {shift = 4} : tensor<2x8xf32>` has its
// operand's type; the rotated (last) dimension is static.
//
//	rolls a dimension of run-time extent; graph.roll needs a static last dimension
func inferRoll(op *ir.Operation) ([]ir.Type, error) {
	in := operandType(op, 0)
	if in.Rank() == 0 {
		return nil, ir.OpError(op, "rolls a rank-0 tensor, which has no last axis")
	}
	if in.Shape[in.Rank()-1] == ir.Dynamic {
		return nil, ir.OpError(op, "rolls a dimension of run-time extent; graph.roll needs a static last dimension")
	}
	return same(op)
}

// RollSource is the column of the operand that column j of a roll's
// result reads: (j - shift) mod n.
func RollSource(j, shift, n int64) int64 {
	return ((j-shift)%n + n) % n
}

// inferGather:
// `%g = graph.gather %x, %t {axis = -1} : (tensor<4x32000xf32>, tensor<4x1xi64>) -> tensor<4x1xf32>`
// has the index tensor's shape and the data's element type; the index
// tensor has the data's rank and its extents away from the axis.
//
//	gathers from a rank-0 tensor, which has no axis to index
//	index tensor 'tensor<4xi64>' has rank 1, but the data 'tensor<4x8xf32>' has rank 2
//	index tensor 'tensor<2x1xi64>' has extent 2 in dimension 0, but the data 'tensor<4x8xf32>' has 4
func inferGather(op *ir.Operation) ([]ir.Type, error) {
	x, idx := operandType(op, 0), operandType(op, 1)
	if x.Rank() == 0 {
		return nil, ir.OpError(op, "gathers from a rank-0 tensor, which has no axis to index")
	}
	axis, err := GatherAxis(op)
	if err != nil {
		return nil, err
	}
	if idx.Rank() != x.Rank() {
		return nil, ir.OpError(op, "index tensor %s has rank %d, but the data %s has rank %d", q(idx), idx.Rank(), q(x), x.Rank())
	}
	for d := range x.Shape {
		if d != axis && !extentsAgree(idx.Shape[d], x.Shape[d]) {
			return nil, ir.OpError(op, "index tensor %s has extent %s in dimension %d, but the data %s has %s (only dimension %d, the axis, may differ)",
				q(idx), formatExtent(idx.Shape[d]), d, q(x), formatExtent(x.Shape[d]), axis)
		}
	}
	return []ir.Type{ir.TensorType{Shape: slices.Clone(idx.Shape), Elem: x.Elem}}, nil
}

// GatherAxis returns the `axis` of a graph.gather counted from the front,
// or a located error when it lies outside [-rank, rank) of the data.
//
//	attribute 'axis' must be in [-2, 2), but got 2
func GatherAxis(op *ir.Operation) (int, error) {
	rank := operandType(op, 0).Rank()
	a := GatherOp{op}.Axis()
	if a < -int64(rank) || a >= int64(rank) {
		return 0, ir.OpError(op, "attribute 'axis' must be in [%d, %d), but got %d", -rank, rank, a)
	}
	if a < 0 {
		a += int64(rank)
	}
	return int(a), nil
}

func formatExtent(e int64) string {
	if e == ir.Dynamic {
		return "?"
	}
	return fmt.Sprint(e)
}

// verifyIndexCopy:
// `graph.index_copy %cache, %pos, %k {axis = 2} : (tensor<1x8x2048x128xbf16>, tensor<?xi64>, tensor<1x8x?x128xbf16>) -> ()`
// writes into a function argument that nothing else reads, so that the
// in-place write is the only way the function observes it.
//
//	the destination must be an argument of the enclosing function, but it is the result of graph.add
//	the destination must have no other use than this write, but it has 2
//	index tensor 'tensor<2x1xi64>' must be 1-D
//	the source 'tensor<1x8x2x64xbf16>' has extent 64 in dimension 3, but the destination 'tensor<1x8x16x128xbf16>' has 128
func verifyIndexCopy(op *ir.Operation) error {
	dst, idx, src := operandType(op, 0), operandType(op, 1), operandType(op, 2)
	d := op.Operand(0)
	if def := d.DefiningOp(); def != nil {
		return ir.OpError(op, "the destination must be an argument of the enclosing function, but it is the result of %s", def.Name())
	}
	if b := d.OwnerBlock(); b == nil || b.ParentOp() == nil || b.ParentOp().Name() != ir.FuncOpName {
		return ir.OpError(op, "the destination must be an argument of the enclosing function")
	}
	if n := len(d.Uses()); n != 1 {
		return ir.OpError(op, "the destination must have no other use than this write, but it has %d", n)
	}
	if dst.Rank() == 0 {
		return ir.OpError(op, "writes into a rank-0 tensor, which has no axis to index")
	}
	axis, err := IndexCopyAxis(op)
	if err != nil {
		return err
	}
	if idx.Rank() != 1 {
		return ir.OpError(op, "index tensor %s must be 1-D", q(idx))
	}
	if src.Rank() != dst.Rank() {
		return ir.OpError(op, "the source %s has rank %d, but the destination %s has rank %d", q(src), src.Rank(), q(dst), dst.Rank())
	}
	if src.Elem != dst.Elem {
		return ir.OpError(op, "the source %s and the destination %s have different element types", q(src), q(dst))
	}
	for i := range dst.Shape {
		if i != axis && !extentsAgree(src.Shape[i], dst.Shape[i]) {
			return ir.OpError(op, "the source %s has extent %s in dimension %d, but the destination %s has %s (only dimension %d, the axis, may differ)",
				q(src), formatExtent(src.Shape[i]), i, q(dst), formatExtent(dst.Shape[i]), axis)
		}
	}
	if !extentsAgree(idx.Shape[0], src.Shape[axis]) {
		return ir.OpError(op, "index tensor %s has %s indices, but the source %s has extent %s along the axis",
			q(idx), formatExtent(idx.Shape[0]), q(src), formatExtent(src.Shape[axis]))
	}
	return nil
}

// IndexCopyAxis returns the `axis` of a graph.index_copy counted from the
// front, or a located error when it lies outside [-rank, rank).
func IndexCopyAxis(op *ir.Operation) (int, error) {
	rank := operandType(op, 0).Rank()
	a := IndexCopyOp{op}.Axis()
	if a < -int64(rank) || a >= int64(rank) {
		return 0, ir.OpError(op, "attribute 'axis' must be in [%d, %d), but got %d", -rank, rank, a)
	}
	if a < 0 {
		a += int64(rank)
	}
	return int(a), nil
}

// UpdatedArgs reports, per argument of fn, whether fn updates it in place:
// the destination of a graph.index_copy.
func UpdatedArgs(fn ir.Func) []bool {
	out := make([]bool, len(fn.Args()))
	for i, a := range fn.Args() {
		for _, u := range a.Users() {
			if ic, ok := AsIndexCopy(u); ok && ic.Dst() == a {
				out[i] = true
			}
		}
	}
	return out
}
