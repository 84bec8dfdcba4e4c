package passes

import (
	"slices"

	"github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/ir"
)

// This file classifies a reduce kernel with the element-wise work around
// its reduction: a reduction over axes other than the last alone (a
// column sum, a mean over the tokens) whose operand is computed in the
// kernel from its inputs by element-wise ops over the operand's shape
// (its producers), and whose result the kernel carries on through
// element-wise ops over the result's shape (its consumers):
//
//	%e = graph.exp %x : tensor<64x128xf32>
//	%s = graph.reduce_sum %e {axes = [0]} : (tensor<64x128xf32>) -> tensor<128xf32>
//	%y = graph.mul %s, %b : tensor<128xf32>
//
// is one kernel: for each element of the result a loop over the reduced
// elements computes exp at each and sums, then the product is stored; the
// exponentials are never written to memory. A producer's value read by
// anything but the reduction and other producers (a result of the kernel,
// a consumer) would have to be written over the operand's shape as well,
// so such a group is refused, and the reduction stays apart.

// reduceKernel classifies ops (body: without constants) around the one
// reduction red over axes other than the last alone.
func reduceKernel(ops, body []*ir.Operation, red *ir.Operation, inputs, outputs []*ir.Value) (*KernelInfo, error) {
	in, out := shapeOf(red.Operand(0)), shapeOf(red.Result(0))
	axes, _ := reductionAxes(red)
	for _, a := range axes {
		if in[a] == ir.Dynamic {
			return nil, ir.OpError(red, "reduces axis %d of run-time extent, which a reduce kernel's loop over the reduced elements needs static", a)
		}
	}
	inBody := map[*ir.Operation]bool{}
	for _, op := range body {
		inBody[op] = true
	}
	// the producers: the ops of the body the reduction's operand is computed by
	before := map[*ir.Operation]bool{}
	var mark func(v *ir.Value)
	mark = func(v *ir.Value) {
		op := v.DefiningOp()
		if op == nil || !inBody[op] || before[op] {
			return
		}
		before[op] = true
		for _, x := range op.Operands() {
			mark(x)
		}
	}
	mark(red.Operand(0))
	for _, op := range body {
		if IsView(op) {
			if err := inputView(op, inBody, before, outputs); err != nil {
				return nil, err
			}
		}
	}
	for _, op := range body {
		switch {
		case op == red, IsView(op):
		case !isElementwisePrimitive(op):
			return nil, ir.OpError(op, "is not element-wise, so it cannot share a kernel with '%s', a reduction over axes %s", red.Name(), graph.FormatShape(axes))
		case before[op]:
			// computed at each point of its own shape the reduction reads
			// it at (through views, which map the point)
			own := shapeOf(op.Result(0))
			for _, u := range op.Result(0).Users() {
				if u != red && !before[u] && inBody[u] {
					return nil, ir.OpError(op, "is read by '%s' at %s after the reduction, so a reduce kernel would write it over %s as well", u.Name(), locString(u.Loc), graph.FormatShape(own))
				}
			}
			if slices.Contains(outputs, op.Result(0)) {
				return nil, ir.OpError(op, "is a result of the kernel over %s, the reduction's operand shape: a reduce kernel writes results over %s only", graph.FormatShape(own), graph.FormatShape(out))
			}
			if err := operandsBroadcast(op, own); err != nil {
				return nil, err
			}
		default:
			if !slices.Equal(shapeOf(op.Result(0)), out) {
				return nil, ir.OpError(op, "computes %s after the reduction at %s, not its result shape %s", graph.FormatShape(shapeOf(op.Result(0))), locString(red.Loc), graph.FormatShape(out))
			}
			if err := operandsBroadcast(op, out); err != nil {
				return nil, err
			}
			for _, x := range op.Operands() {
				if d := x.DefiningOp(); d != nil && before[d] {
					return nil, ir.OpError(op, "reads '%s' over %s, the reduction's operand shape, after the reduction", d.Name(), graph.FormatShape(in))
				}
			}
		}
	}
	for i, y := range outputs {
		if !slices.Equal(shapeOf(y), out) {
			return nil, ir.Errorf(red.Loc, "a reduce kernel writes its results over the reduction's result shape %s, not %s (result #%d)", graph.FormatShape(out), graph.FormatShape(shapeOf(y)), i)
		}
	}
	info := &KernelInfo{Kind: KernelReduce, Shape: slices.Clone(in), Op: red, Ops: ops, Phases: make([]int, len(ops)),
		NumPhases: 1, access: map[*ir.Value]Access{}}
	for _, v := range inputs {
		info.access[v] = AccessWhole
		info.Operands = append(info.Operands, AccessWhole)
	}
	for _, v := range outputs {
		info.access[v] = AccessWhole
		info.Results = append(info.Results, AccessWhole)
	}
	return info, nil
}

// inputView checks that view op of a reduce kernel views a kernel input
// or, on the way to the reduction (before), a value the kernel computes
// there, in a way the kernel reads by index arithmetic alone: a transpose,
// a slice, a broadcast_to, or a reshape that regroups dimensions. A concat
// (whose piece a point selects) and a roll stay out.
func inputView(op *ir.Operation, inBody, before map[*ir.Operation]bool, outputs []*ir.Value) error {
	switch op.Name() {
	case graph.OpTranspose, graph.OpSlice, graph.OpBroadcastTo:
	case graph.OpReshape:
		if _, ok := ReshapeGroups(graph.ReshapeOp{Operation: op}); !ok {
			return ir.OpError(op, "regroups a dynamic dimension with others, which a reduce kernel does not read through")
		}
	default:
		return ir.OpError(op, "is a view a reduce kernel does not read through (a transpose, a slice, a broadcast_to or a reshape it does)")
	}
	if d := op.Operand(0).DefiningOp(); d != nil && inBody[d] && !IsView(d) && !before[op] {
		return ir.OpError(op, "views '%s', a value the kernel computes after the reduction: a reduce kernel reads through views of its inputs and of what the reduction reads only", d.Name())
	}
	if slices.Contains(outputs, op.Result(0)) {
		return ir.OpError(op, "is a result of the kernel: a reduce kernel writes the reduction's results, not views")
	}
	return nil
}

// operandsBroadcast checks that every operand of element-wise op
// broadcasts to shape (broadcastsTo).
func operandsBroadcast(op *ir.Operation, shape []int64) error {
	for _, x := range op.Operands() {
		if !broadcastsTo(shapeOf(x), shape) {
			return ir.OpError(op, "reads an operand of shape %s, which does not broadcast to %s", graph.FormatShape(shapeOf(x)), graph.FormatShape(shape))
		}
	}
	return nil
}

// splitThreads is the number of threads a GPU reduce kernel should have
// at least (two full waves of 1024 threads on 132 SMs): below it, a
// reduction over a long axis is split in two (splitReductions).
const splitThreads = 2 * 132 * 1024

// splitReductions rewrites, on GPU targets, each reduction over one axis
// other than the last whose result has too few elements to give a reduce
// kernel's threads (one per result element) enough work in parallel, and
// whose reduced extent R is long: the axis is viewed as [S, R/S], reduced
// over R/S first (S times more threads, each a loop of R/S), then over S:
//
//	%m = graph.reduce_max %a {axes = [0]} : (tensor<4096x4096xf32>) -> tensor<4096xf32>
//
// becomes
//
//	%v = graph.reshape %a : (tensor<4096x4096xf32>) -> tensor<128x32x4096xf32>
//	%p = graph.reduce_max %v {axes = [1]} : (tensor<128x32x4096xf32>) -> tensor<128x4096xf32>
//	%m = graph.reduce_max %p {axes = [0]} : (tensor<128x4096xf32>) -> tensor<4096xf32>
//
// The first reduction takes the producers into its kernel, the second the
// consumers. S is the smallest divisor of R that reaches splitThreads,
// with chunks of at least 32. A sum is then added in another order.
func splitReductions(ctx *ir.PassContext, body *ir.Block) {
	for _, op := range otherAxisReductions(body) {
		axes, ok := reductionAxes(op)
		in, out := shapeOf(op.Operand(0)), shapeOf(op.Result(0))
		if !ok || len(axes) != 1 || int(axes[0]) == len(in)-1 || slices.Contains(out, ir.Dynamic) {
			continue
		}
		d := int(axes[0])
		r, n := in[d], int64(1)
		for _, e := range out {
			n *= e
		}
		if r == ir.Dynamic || n >= splitThreads {
			continue
		}
		s := int64(0)
		for c := int64(2); c <= min(r/32, 1<<16); c++ {
			if r%c == 0 && c*n >= splitThreads {
				s = c
				break
			}
		}
		if s == 0 {
			for c := min(r/32, 1<<16); c >= 2; c-- { // the most the chunks allow
				if r%c == 0 {
					s = c
					break
				}
			}
		}
		if s < 2 {
			continue
		}
		keep := keepdimOf(op)
		elem := op.Operand(0).Type().(ir.TensorType).Elem
		split := append(append(append([]int64(nil), in[:d]...), s, r/s), in[d+1:]...)
		part := append(append(append([]int64(nil), in[:d]...), s), in[d+1:]...)
		b := ir.NewBuilderBefore(op)
		v, err := graph.BuildReshape(b, op.Loc, op.Operand(0), ir.TensorType{Shape: split, Elem: elem})
		if err != nil {
			continue
		}
		p, err := buildReduce(b, op, v.Output(), int64(d+1), false)
		if err != nil || !slices.Equal(shapeOf(p), part) {
			continue
		}
		y, err := buildReduce(b, op, p, int64(d), keep)
		if err != nil || !slices.Equal(shapeOf(y), out) {
			continue
		}
		ctx.Remark("fusion", op.Loc, "split '%s' over axis %d of %d elements into %d x %d, reduced in two kernels: its %d results, a thread each, would leave the GPU idle",
			op.Name(), d, r, s, r/s, n)
		op.Result(0).ReplaceAllUsesWith(y)
		op.Erase()
	}
}

// tileReductions rewrites, for a Tenstorrent target (named tname), each
// reduction over the second-to-last axis alone as a transpose of the last
// two dimensions and the same reduction over the last (with keepdim, its
// [..., C, 1] transposed back to [..., 1, C]): the tt backend reduces rows
// of tiles (reduce_tile REDUCE_ROW) and transposes tiles, and has no
// kernel for a reduction over another axis.
// The transpose is a kernel of its own there (a copy of the operand
// through DRAM); the reduction a row kernel with its producers' and
// consumers' element-wise work. Other reductions over other axes stay as
// they are, and the backend refuses them with a located error.
func tileReductions(ctx *ir.PassContext, body *ir.Block, tname string) {
	for _, op := range otherAxisReductions(body) {
		axes, ok := reductionAxes(op)
		in, out := shapeOf(op.Operand(0)), shapeOf(op.Result(0))
		if !ok || len(in) < 2 || len(axes) != 1 || int(axes[0]) != len(in)-2 {
			continue
		}
		keep := keepdimOf(op)
		perm := make([]int64, len(in))
		for i := range perm {
			perm[i] = int64(i)
		}
		perm[len(in)-2], perm[len(in)-1] = perm[len(in)-1], perm[len(in)-2]
		b := ir.NewBuilderBefore(op)
		var made []*ir.Operation
		undo := func() {
			for i := len(made) - 1; i >= 0; i-- {
				made[i].Erase()
			}
		}
		tr, err := graph.BuildTranspose(b, op.Loc, op.Operand(0), perm)
		if err != nil {
			continue
		}
		made = append(made, tr.Operation)
		y, err := buildReduce(b, op, tr.Output(), int64(len(in)-1), keep)
		if err != nil {
			undo()
			continue
		}
		made = append(made, y.DefiningOp())
		how := "then a reduction of its rows"
		if keep {
			// [..., C, 1] back to [..., 1, C]: a transpose again
			back, err := graph.BuildTranspose(b, op.Loc, y, perm)
			if err != nil {
				undo()
				continue
			}
			y = back.Output()
			made = append(made, back.Operation)
			how = "a reduction of its rows, and a transpose of the [..., C, 1] result back"
		}
		if !slices.Equal(shapeOf(y), out) {
			undo()
			continue
		}
		ctx.Remark("fusion", op.Loc, "'%s' over axis %d on %s: a transpose of the last two dimensions (a kernel of its own), %s: the tt backend reduces rows of tiles", op.Name(), len(in)-2, tname, how)
		op.Result(0).ReplaceAllUsesWith(y)
		op.Erase()
	}
}

// otherAxisReductions lists the reductions of body over axes other than
// the last alone, in order (the rewrites above replace them as they go).
func otherAxisReductions(body *ir.Block) []*ir.Operation {
	var out []*ir.Operation
	for op := body.First(); op != nil; op = op.Next() {
		if isReduceOp(op) && !isRowReduction(op) {
			out = append(out, op)
		}
	}
	return out
}

// keepdimOf is a reduction's keepdim attribute (false when absent).
func keepdimOf(op *ir.Operation) bool {
	k, ok := op.Attr("keepdim").(ir.BoolAttr)
	return ok && bool(k)
}

// buildReduce builds a reduction of the kind of op over axis of x.
func buildReduce(b *ir.Builder, op *ir.Operation, x *ir.Value, axis int64, keepdim bool) (*ir.Value, error) {
	switch op.Name() {
	case graph.OpReduceSum:
		o, err := graph.BuildReduceSum(b, op.Loc, x, []int64{axis}, keepdim)
		if err != nil {
			return nil, err
		}
		return o.Output(), nil
	case graph.OpReduceMax:
		o, err := graph.BuildReduceMax(b, op.Loc, x, []int64{axis}, keepdim)
		if err != nil {
			return nil, err
		}
		return o.Output(), nil
	}
	o, err := graph.BuildReduceMin(b, op.Loc, x, []int64{axis}, keepdim)
	if err != nil {
		return nil, err
	}
	return o.Output(), nil
}
