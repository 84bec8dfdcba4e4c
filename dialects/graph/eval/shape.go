package eval

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

func init() {
	register(evalReshape, "graph.reshape")
	register(evalTranspose, "graph.transpose")
	register(evalBroadcastTo, "graph.broadcast_to")
	register(evalSlice, "graph.slice")
	register(evalRoll, "graph.roll")
	register(evalGather, "graph.gather")
	register(evalIndexCopy, "graph.index_copy")
	register(evalConcat, "graph.concat")
	register(evalMatmul, "graph.matmul")
	register(evalConstant, "graph.constant")
}

// gather builds a tensor of shape out whose element at index (i0, i1, ...)
// is src.Data[base + i0*strides[0] + i1*strides[1] + ...].
func gather(m *machine, src *Tensor, k ir.ElemKind, out []int64, base int, strides []int) *Tensor {
	t := NewTensor(k, out)
	idx := make([]int64, len(out))
	off := base
	for o := range t.Data {
		t.Data[o] = m.store(src.Data[off], k)
		for d := len(out) - 1; d >= 0; d-- {
			idx[d]++
			off += strides[d]
			if idx[d] < out[d] {
				break
			}
			off -= strides[d] * int(out[d])
			idx[d] = 0
		}
	}
	return t
}

// evalReshape is `graph.reshape %x : (tensor<4x8xf32>) -> tensor<32xf32>`.
// The result type gives the shape; one `?` in it is inferred from the
// element count.
func evalReshape(m *machine, op *ir.Operation, args []*Tensor) ([]*Tensor, error) {
	if err := wantOperands(args, 1, 1); err != nil {
		return nil, err
	}
	x := args[0]
	rs, k, err := resultType(op, 0)
	if err != nil {
		return nil, err
	}
	shape := append([]int64(nil), rs...)
	dyn := -1
	known := int64(1)
	for i, d := range shape {
		if d == ir.Dynamic {
			if dyn >= 0 {
				return nil, fmt.Errorf("cannot infer two dynamic extents of %s", op.Result(0).Type())
			}
			dyn = i
			continue
		}
		known *= d
	}
	n := int64(len(x.Data))
	if dyn >= 0 {
		if known == 0 || n%known != 0 {
			return nil, fmt.Errorf("cannot reshape %d elements into %s", n, op.Result(0).Type())
		}
		shape[dyn] = n / known
	}
	if c, ok := ir.NumElements(shape); !ok || c != n {
		return nil, fmt.Errorf("cannot reshape %s (%d elements) into %s", FormatShape(x.Shape), n, op.Result(0).Type())
	}
	out := NewTensor(k, shape)
	for i, v := range x.Data {
		out.Data[i] = m.store(v, k)
	}
	return []*Tensor{out}, nil
}

// evalTranspose is `graph.transpose %x {perm = [1, 0]}`: result dim i is
// operand dim perm[i]. Without perm the dims are reversed.
func evalTranspose(m *machine, op *ir.Operation, args []*Tensor) ([]*Tensor, error) {
	if err := wantOperands(args, 1, 1); err != nil {
		return nil, err
	}
	x := args[0]
	k, err := resultElem(op, 0)
	if err != nil {
		return nil, err
	}
	perm, ok, err := attrInts(op, "perm")
	if err != nil {
		return nil, err
	}
	if !ok {
		for i := x.Rank() - 1; i >= 0; i-- {
			perm = append(perm, int64(i))
		}
	}
	if len(perm) != x.Rank() {
		return nil, fmt.Errorf("perm %v does not match rank %d", perm, x.Rank())
	}
	seen := make([]bool, x.Rank())
	st := rowMajorStrides(x.Shape)
	out := make([]int64, len(perm))
	strides := make([]int, len(perm))
	for i, p := range perm {
		if p < 0 || p >= int64(x.Rank()) || seen[p] {
			return nil, fmt.Errorf("perm %v is not a permutation of 0..%d", perm, x.Rank()-1)
		}
		seen[p] = true
		out[i] = x.Shape[p]
		strides[i] = st[p]
	}
	return []*Tensor{gather(m, x, k, out, 0, strides)}, nil
}

// evalBroadcastTo is `graph.broadcast_to %x : (tensor<8xf32>) -> tensor<4x8xf32>`
// with NumPy rules. A `?` in the result type takes the operand's extent of
// the same (end-aligned) dimension.
func evalBroadcastTo(m *machine, op *ir.Operation, args []*Tensor) ([]*Tensor, error) {
	if err := wantOperands(args, 1, 1); err != nil {
		return nil, err
	}
	x := args[0]
	rs, k, err := resultType(op, 0)
	if err != nil {
		return nil, err
	}
	shape := append([]int64(nil), rs...)
	off := len(shape) - x.Rank()
	for i, d := range shape {
		if d != ir.Dynamic {
			continue
		}
		if i < off {
			return nil, fmt.Errorf("cannot resolve dynamic extent #%d of %s from an operand of rank %d", i, op.Result(0).Type(), x.Rank())
		}
		shape[i] = x.Shape[i-off]
	}
	bc, err := newBroadcaster(shape, x.Shape)
	if err != nil {
		return nil, err
	}
	out := NewTensor(k, shape)
	bc.each(func(o int, offs []int) { out.Data[o] = m.store(x.Data[offs[0]], k) })
	return []*Tensor{out}, nil
}

// evalSlice is `graph.slice %x {offsets = [0, 4], sizes = [2, 4]}`, with
// an optional `strides` attribute (default 1). Without `sizes` the result
// type gives them; a size of -1 or a `?` runs to the end of the dimension.
func evalSlice(m *machine, op *ir.Operation, args []*Tensor) ([]*Tensor, error) {
	if err := wantOperands(args, 1, 1); err != nil {
		return nil, err
	}
	x := args[0]
	rs, k, err := resultType(op, 0)
	if err != nil {
		return nil, err
	}
	rank := x.Rank()
	get := func(name string, def func(i int) int64) ([]int64, error) {
		vs, ok, err := attrInts(op, name)
		if err != nil {
			return nil, err
		}
		if !ok {
			vs = make([]int64, rank)
			for i := range vs {
				vs[i] = def(i)
			}
		}
		if len(vs) != rank {
			return nil, fmt.Errorf("attribute '%s' has %d entries for rank %d", name, len(vs), rank)
		}
		return vs, nil
	}
	offsets, err := get("offsets", func(int) int64 { return 0 })
	if err != nil {
		return nil, err
	}
	steps, err := get("strides", func(int) int64 { return 1 })
	if err != nil {
		return nil, err
	}
	sizes, err := get("sizes", func(i int) int64 {
		if i < len(rs) {
			return rs[i]
		}
		return ir.Dynamic
	})
	if err != nil {
		return nil, err
	}
	st := rowMajorStrides(x.Shape)
	base := 0
	strides := make([]int, rank)
	out := make([]int64, rank)
	for i := 0; i < rank; i++ {
		o, s, step := offsets[i], sizes[i], steps[i]
		if step < 1 {
			return nil, fmt.Errorf("stride %d of dimension %d must be positive", step, i)
		}
		if o < 0 || o > x.Shape[i] {
			return nil, fmt.Errorf("offset %d is out of range for dimension %d of extent %d", o, i, x.Shape[i])
		}
		if s < 0 {
			s = (x.Shape[i] - o + step - 1) / step
		}
		if s > 0 && o+(s-1)*step >= x.Shape[i] {
			return nil, fmt.Errorf("slice [%d, %d) with stride %d exceeds dimension %d of extent %d", o, o+(s-1)*step+1, step, i, x.Shape[i])
		}
		out[i] = s
		base += int(o) * st[i]
		strides[i] = int(step) * st[i]
	}
	return []*Tensor{gather(m, x, k, out, base, strides)}, nil
}

// evalConcat is `graph.concat %a, %b {axis = 0}`: the operands agree on
// every dimension except axis (default -1).
func evalConcat(m *machine, op *ir.Operation, args []*Tensor) ([]*Tensor, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("expects at least one operand")
	}
	k, err := resultElem(op, 0)
	if err != nil {
		return nil, err
	}
	first := args[0]
	if first.Rank() == 0 {
		return nil, fmt.Errorf("operands must have rank 1 or more")
	}
	axis, err := rowAxis(op, first.Rank())
	if err != nil {
		return nil, err
	}
	shape := append([]int64(nil), first.Shape...)
	shape[axis] = 0
	for i, a := range args {
		if a.Rank() != first.Rank() {
			return nil, fmt.Errorf("operand #%d has rank %d, operand #0 rank %d", i, a.Rank(), first.Rank())
		}
		for d := range a.Shape {
			if d != axis && a.Shape[d] != first.Shape[d] {
				return nil, fmt.Errorf("operand #%d has shape %s, which differs from %s outside axis %d", i, FormatShape(a.Shape), FormatShape(first.Shape), axis)
			}
		}
		shape[axis] += a.Shape[axis]
	}
	out := NewTensor(k, shape)
	// Each operand contributes a block of rows of its own axis extent for
	// every index of the outer dimensions.
	outer := 1
	for _, d := range shape[:axis] {
		outer *= int(d)
	}
	inner := 1
	for _, d := range shape[axis+1:] {
		inner *= int(d)
	}
	pos := 0
	for o := 0; o < outer; o++ {
		for _, a := range args {
			chunk := int(a.Shape[axis]) * inner
			for _, v := range a.Data[o*chunk : (o+1)*chunk] {
				out.Data[pos] = m.store(v, k)
				pos++
			}
		}
	}
	return []*Tensor{out}, nil
}

// evalMatmul is `graph.matmul %a, %b {transpose_b = false}`:
// [..., M, K] x [..., K, N] -> [..., M, N] ([..., N, K] for b when
// transpose_b), batch dims broadcast as NumPy does. Each dot product
// accumulates over k in order, in float32 (acc = f32(acc + a*b), the
// product exact, as a fused multiply-add does) or float64 under
// Options.F64; integers accumulate exactly and wrap to the result type.
func evalMatmul(m *machine, op *ir.Operation, args []*Tensor) ([]*Tensor, error) {
	if err := wantOperands(args, 2, 2); err != nil {
		return nil, err
	}
	a, b := args[0], args[1]
	k, err := resultElem(op, 0)
	if err != nil {
		return nil, err
	}
	tb, err := attrBool(op, "transpose_b", false)
	if err != nil {
		return nil, err
	}
	if a.Rank() < 2 || b.Rank() < 2 {
		return nil, fmt.Errorf("operands must have rank 2 or more, got %s and %s", FormatShape(a.Shape), FormatShape(b.Shape))
	}
	ra, rb := a.Rank(), b.Rank()
	M, K := int(a.Shape[ra-2]), int(a.Shape[ra-1])
	kb, N := int(b.Shape[rb-2]), int(b.Shape[rb-1])
	if tb {
		kb, N = N, kb
	}
	if kb != K {
		return nil, fmt.Errorf("contracted extents differ: %s x %s (transpose_b = %v)", FormatShape(a.Shape), FormatShape(b.Shape), tb)
	}
	batchA, batchB := a.Shape[:ra-2], b.Shape[:rb-2]
	batch, err := broadcastShapes(batchA, batchB)
	if err != nil {
		return nil, err
	}
	bc, err := newBroadcaster(batch, batchA, batchB)
	if err != nil {
		return nil, err
	}
	out := NewTensor(k, append(append([]int64(nil), batch...), int64(M), int64(N)))
	// strides of b's element (kk, j) inside one matrix
	bk, bj := N, 1
	if tb {
		bk, bj = 1, K
	}
	intMode := k.IsInt() && a.Elem.IsInt() && b.Elem.IsInt()
	p := m.precOf(op, args)
	bc.each(func(o int, offs []int) {
		ab, bb, ob := offs[0]*M*K, offs[1]*K*N, o*M*N
		for i := 0; i < M; i++ {
			for j := 0; j < N; j++ {
				if intMode {
					var acc int64
					for kk := 0; kk < K; kk++ {
						acc += int64(a.Data[ab+i*K+kk]) * int64(b.Data[bb+kk*bk+j*bj])
					}
					out.Data[ob+i*N+j] = float64(numeric.WrapInt64(acc, k))
					continue
				}
				acc := 0.0
				for kk := 0; kk < K; kk++ {
					acc = p.r(acc + a.Data[ab+i*K+kk]*b.Data[bb+kk*bk+j*bj])
				}
				out.Data[ob+i*N+j] = m.store(acc, k)
			}
		}
	})
	return []*Tensor{out}, nil
}

// evalConstant is `graph.constant dense<[1.0, 2.0]> : tensor<2xf32>`: the
// DenseAttr `value` (splat or full), each value rounded to the element
// type as stored data always is.
func evalConstant(m *machine, op *ir.Operation, args []*Tensor) ([]*Tensor, error) {
	if err := wantOperands(args, 0, 0); err != nil {
		return nil, err
	}
	dense, ok := op.Attr("value").(ir.DenseAttr)
	if !ok {
		for _, na := range op.Attrs {
			if d, isDense := na.Value.(ir.DenseAttr); isDense {
				dense, ok = d, true
				break
			}
		}
	}
	if !ok || dense.Type == nil {
		return nil, fmt.Errorf("requires a dense attribute 'value'")
	}
	rs, k, err := resultType(op, 0)
	if err != nil {
		return nil, err
	}
	shape := dense.Type.GetShape()
	if ir.HasDynamicDim(shape) {
		return nil, fmt.Errorf("dense attribute type %s must be static", dense.Type)
	}
	if !matchesType(shape, rs) {
		return nil, fmt.Errorf("dense attribute of type %s does not match result type %s", dense.Type, op.Result(0).Type())
	}
	out := NewTensor(k, shape)
	if !dense.IsSplat() && len(dense.Values) != len(out.Data) {
		return nil, fmt.Errorf("dense attribute has %d values for %d elements", len(dense.Values), len(out.Data))
	}
	if len(dense.Values) == 0 && len(out.Data) > 0 {
		return nil, fmt.Errorf("dense attribute has no values")
	}
	for i := range out.Data {
		out.Data[i] = numeric.RoundTo(dense.At(int64(i)), k)
	}
	return []*Tensor{out}, nil
}

// evalRoll is `graph.roll %x {shift = 4}`: y[..., j] = x[..., (j - shift) mod n].
func evalRoll(m *machine, op *ir.Operation, args []*Tensor) ([]*Tensor, error) {
	if err := wantOperands(args, 1, 1); err != nil {
		return nil, err
	}
	x := args[0]
	k, err := resultElem(op, 0)
	if err != nil {
		return nil, err
	}
	if x.Rank() == 0 {
		return nil, fmt.Errorf("operand must have rank 1 or more")
	}
	shift, ok := op.Attr("shift").(ir.IntAttr)
	if !ok {
		return nil, fmt.Errorf("attribute 'shift' is missing")
	}
	t := NewTensor(k, x.Shape)
	n := x.Shape[x.Rank()-1]
	if n == 0 {
		return []*Tensor{t}, nil
	}
	for base := 0; base < len(t.Data); base += int(n) {
		for j := int64(0); j < n; j++ {
			t.Data[base+int(j)] = m.store(x.Data[base+int(((j-shift.Value)%n+n)%n)], k)
		}
	}
	return []*Tensor{t}, nil
}

// evalGather is `graph.gather %x, %idx {axis = a}`: y[..., i_a, ...] =
// x[..., idx[..., i_a, ...], ...]. An index outside [0, n) for the
// extent n of the axis is an error (compiled kernels clamp it instead).
func evalGather(m *machine, op *ir.Operation, args []*Tensor) ([]*Tensor, error) {
	if err := wantOperands(args, 2, 2); err != nil {
		return nil, err
	}
	x, idx := args[0], args[1]
	k, err := resultElem(op, 0)
	if err != nil {
		return nil, err
	}
	if x.Rank() == 0 || idx.Rank() != x.Rank() {
		return nil, fmt.Errorf("the data (shape %s) must have rank 1 or more and the index tensor (shape %s) the same rank",
			FormatShape(x.Shape), FormatShape(idx.Shape))
	}
	axisAttr, err := attrInt(op, "axis", -1)
	if err != nil {
		return nil, err
	}
	axis, err := normAxis(axisAttr, x.Rank())
	if err != nil {
		return nil, err
	}
	for d := range x.Shape {
		if d != axis && idx.Shape[d] != x.Shape[d] {
			return nil, fmt.Errorf("the index tensor has shape %s at run time and the data %s: they differ in dimension %d, which is not the axis",
				FormatShape(idx.Shape), FormatShape(x.Shape), d)
		}
	}
	n := x.Shape[axis]
	// strides of x: inner is the product of the extents after the axis
	inner := int64(1)
	for _, e := range x.Shape[axis+1:] {
		inner *= e
	}
	t := NewTensor(k, idx.Shape)
	along := idx.Shape[axis]
	for o := range t.Data {
		i := int64(o)
		outer, rest := i/(along*inner), i%inner
		j := idx.Data[o]
		if j != j || j < 0 || j >= float64(n) {
			return nil, fmt.Errorf("index %s at %s of the index tensor is outside [0, %d), the extent of dimension %d of the data",
				strconv.FormatFloat(j, 'f', -1, 64), strings.ReplaceAll(fmt.Sprint(unflatten(i, idx.Shape)), " ", ", "), n, axis)
		}
		t.Data[o] = m.store(x.Data[(outer*n+int64(j))*inner+rest], k)
	}
	return []*Tensor{t}, nil
}

// unflatten returns the index of row-major element i of shape.
func unflatten(i int64, shape []int64) []int64 {
	out := make([]int64, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 0 {
			out[d] = i % shape[d]
			i /= shape[d]
		}
	}
	return out
}

// evalIndexCopy is `graph.index_copy %dst, %idx, %src {axis = a}`:
// dst[..., idx[j], ...] = src[..., j, ...], written into the destination
// argument's tensor in place (the caller's input, unless Run had to
// convert its element type). An index outside [0, n) for the extent n of
// the axis is an error (compiled kernels clamp it instead); nothing is
// written then.
func evalIndexCopy(m *machine, op *ir.Operation, args []*Tensor) ([]*Tensor, error) {
	if err := wantOperands(args, 3, 3); err != nil {
		return nil, err
	}
	dst, idx, src := args[0], args[1], args[2]
	if dst.Rank() == 0 || src.Rank() != dst.Rank() || idx.Rank() != 1 {
		return nil, fmt.Errorf("the destination (shape %s) must have rank 1 or more, the source (shape %s) the same rank, and the index tensor (shape %s) rank 1",
			FormatShape(dst.Shape), FormatShape(src.Shape), FormatShape(idx.Shape))
	}
	axisAttr, err := attrInt(op, "axis", 0)
	if err != nil {
		return nil, err
	}
	axis, err := normAxis(axisAttr, dst.Rank())
	if err != nil {
		return nil, err
	}
	for d := range dst.Shape {
		if d != axis && src.Shape[d] != dst.Shape[d] {
			return nil, fmt.Errorf("the source has shape %s at run time and the destination %s: they differ in dimension %d, which is not the axis",
				FormatShape(src.Shape), FormatShape(dst.Shape), d)
		}
	}
	along := src.Shape[axis]
	if idx.Shape[0] != along {
		return nil, fmt.Errorf("the index tensor has %d indices at run time but the source %d slices along the axis", idx.Shape[0], along)
	}
	n := dst.Shape[axis]
	for j, v := range idx.Data {
		if v != v || v < 0 || v >= float64(n) {
			return nil, fmt.Errorf("index %s at [%d] of the index tensor is outside [0, %d), the extent of dimension %d of the destination",
				strconv.FormatFloat(v, 'f', -1, 64), j, n, axis)
		}
	}
	inner := int64(1)
	for _, e := range src.Shape[axis+1:] {
		inner *= e
	}
	for o := range src.Data {
		i := int64(o)
		outer, j, rest := i/(along*inner), i/inner%along, i%inner
		dst.Data[(outer*n+int64(idx.Data[j]))*inner+rest] = m.store(src.Data[o], dst.Elem)
	}
	return nil, nil
}
