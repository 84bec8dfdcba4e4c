package costmodel

import (
	"fmt"

	"github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/passes"
)

// This file counts the floating-point work of graph ops, the numerator of
// a kernel's arithmetic intensity. The rules are those of a roofline
// model, not of an instruction count:
//
//   - an element-wise op is one FLOP per result element: add, mul, max,
//     cmp, select, clamp, and the transcendentals (exp, log, tanh, rsqrt,
//     silu, gelu, ...) too, although the hardware spends several
//     instructions on them, as every roofline tool counts them;
//   - a reduction is one FLOP per input element (the combine of each
//     element into its accumulator);
//   - a matmul is 2*M*N*K per batch (a multiply and an add per term);
//   - casts, constants, reshape, transpose, broadcast_to, slice and concat
//     move or convert data and do no arithmetic: zero;
//   - a composite op (rmsnorm, softmax, quantize, ...) counts as the
//     primitives `decompose` expands it into, which is how every pipeline
//     runs it.

// elementwiseOps are the primitives counted one FLOP per result element.
var elementwiseOps = map[string]bool{}

func init() {
	for _, n := range []string{
		graph.OpNeg, graph.OpAbs, graph.OpExp, graph.OpExp2, graph.OpLog, graph.OpLog2, graph.OpLog1p,
		graph.OpExpm1, graph.OpSqrt, graph.OpRsqrt, graph.OpReciprocal, graph.OpTanh, graph.OpSigmoid,
		graph.OpSilu, graph.OpGelu, graph.OpRelu, graph.OpSin, graph.OpCos, graph.OpFloor, graph.OpCeil,
		graph.OpRound, graph.OpAdd, graph.OpSub, graph.OpMul, graph.OpDiv, graph.OpMax, graph.OpMin,
		graph.OpPow, graph.OpCmp, graph.OpSelect, graph.OpClamp,
	} {
		elementwiseOps[n] = true
	}
}

// reductionOps are counted one FLOP per input element.
var reductionOps = map[string]bool{
	graph.OpReduceSum: true, graph.OpReduceMax: true, graph.OpReduceMin: true,
}

// dataOps move or convert data: zero FLOPs.
var dataOps = map[string]bool{
	graph.OpCast: true, graph.OpConstant: true, graph.OpReshape: true, graph.OpTranspose: true,
	graph.OpBroadcastTo: true, graph.OpSlice: true, graph.OpConcat: true, graph.OpRoll: true, graph.OpGather: true,
	graph.OpYield: true, ir.ReturnOpName: true,
}

// CountFLOPs returns the floating-point work of one graph op (of a whole
// graph.fused body for a graph.fused), with every `?` extent taken as
// opts.DynamicExtent.
//
//	%y = graph.mul %a, %b : tensor<4x8xf32>                                      // 32
//	%s = graph.reduce_sum %a {axes = [1]} : (tensor<4x8xf32>) -> tensor<4xf32>  // 32
//	%c = graph.matmul %a, %b : (tensor<4x8xf32>, tensor<8x16xf32>) -> ...       // 2*4*16*8 = 1024
func CountFLOPs(op *ir.Operation, opts Options) (int64, error) {
	name := op.Name()
	switch {
	case dataOps[name]:
		return 0, nil
	case elementwiseOps[name]:
		return elementsOf(op.Result(0).Type(), opts)
	case reductionOps[name]:
		return elementsOf(op.Operand(0).Type(), opts)
	case name == graph.OpMatMul:
		return matmulFLOPs(op, opts)
	case name == graph.OpFused:
		var total int64
		for _, b := range op.Region(0).Blocks {
			for _, inner := range b.Ops() {
				n, err := CountFLOPs(inner, opts)
				if err != nil {
					return 0, err
				}
				if total, err = addChecked(total, n); err != nil {
					return 0, ir.OpError(op, "%v", err)
				}
			}
		}
		return total, nil
	}
	if n, ok, err := compositeFLOPs(op, opts); ok || err != nil {
		return n, err
	}
	return 0, ir.OpError(op, "has no FLOP count in the cost model")
}

// matmulFLOPs is 2*K per result element: `[..., M, K] x [..., K, N]`.
func matmulFLOPs(op *ir.Operation, opts Options) (int64, error) {
	out, err := elementsOf(op.Result(0).Type(), opts)
	if err != nil {
		return 0, err
	}
	a, ok := op.Operand(0).Type().(ir.TensorType)
	if !ok || a.Rank() < 2 {
		return 0, ir.OpError(op, "expects a tensor of rank 2 or more")
	}
	k := a.Shape[a.Rank()-1] // the contraction extent is static
	n, err := mulChecked(out, 2*k)
	if err != nil {
		return 0, ir.OpError(op, "%v", err)
	}
	return n, nil
}

// elementsOf counts the elements of a tensor type.
func elementsOf(t ir.Type, opts Options) (int64, error) {
	shape, ok := ir.ShapeOf(t)
	if !ok {
		return 0, fmt.Errorf("%s has no elements to count", t)
	}
	var n int64 = 1
	for _, d := range shape {
		if d == ir.Dynamic {
			d = opts.dynamic()
		}
		var err error
		if n, err = mulChecked(n, d); err != nil {
			return 0, err
		}
	}
	return n, nil
}

func mulChecked(a, b int64) (int64, error) {
	if a != 0 && b > (1<<62)/a {
		return 0, fmt.Errorf("the FLOP count overflows")
	}
	return a * b, nil
}

func addChecked(a, b int64) (int64, error) {
	if a > (1<<62)-b {
		return 0, fmt.Errorf("the FLOP count overflows")
	}
	return a + b, nil
}

// compositeFLOPs counts a composite op as the primitives Decompose expands
// it into: the op is cloned into a scratch region, expanded there and the
// expansion counted. ok is false for an op that is not composite.
func compositeFLOPs(op *ir.Operation, opts Options) (n int64, ok bool, err error) {
	if !passes.IsComposite(op) {
		return 0, false, nil
	}
	scratch := ir.NewOperation(graph.OpFused, op.Loc, nil, nil, nil, 1)
	entry := ir.NewBlock()
	scratch.Region(0).AppendBlock(entry)
	m := ir.Mapping{}
	for _, v := range op.Operands() {
		if _, seen := m[v]; !seen {
			m[v] = entry.AddArg(v.Type())
		}
	}
	entry.Append(op.Clone(m))
	passes.Decompose(scratch)
	for _, inner := range entry.Ops() {
		if passes.IsComposite(inner) {
			return 0, true, ir.OpError(op, "cannot be decomposed to count its FLOPs")
		}
		k, err := CountFLOPs(inner, opts)
		if err != nil {
			return 0, true, err
		}
		if n, err = addChecked(n, k); err != nil {
			return 0, true, ir.OpError(op, "%v", err)
		}
	}
	return n, true, nil
}
