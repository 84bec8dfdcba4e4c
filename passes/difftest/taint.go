package difftest

import (
	"fmt"
	"math"

	"github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/ir"
)

// Overflow taint: which result elements of the original depend on a value
// that overflowed (or underflowed to 0) even in float64: exp(1e4),
// pow(10, 1e30), exp(-1e30). There the
// original's value, and its float64 reference, say nothing about the
// exact result: pow(-1, log2(2^x + 2^y)) is 1 when the sum overflows to
// inf and NaN when legalize-numerics computes the logarithm exactly.
//
// MarkOverflow builds a copy of the function in which every overflow is
// replaced by a marker value; an element is tainted when the copies with
// two different markers disagree on it, or the copy with marker NaN makes
// it NaN: when it depends on an overflowed value. Only the creation of an infinity from finite operands
// is an overflow: an infinite input that propagates is not.

// MarkOverflow returns a detached copy of f in which the result of every
// op that can overflow (exp, exp2, expm1, pow, mul, add, sub, cast,
// reduce_sum, reduce_mean; graph.fused bodies included) that is ±inf
// while the operands it is computed from are finite, or that underflows
// (exp, exp2, pow, mul, cast, softmax: 0 from finite non-zero operands),
// is replaced by marker:
//
//	%e = graph.exp %x : tensor<4xf32>
//
// becomes
//
//	%e0 = graph.exp %x : tensor<4xf32>
//	%a = graph.abs %e0 : tensor<4xf32>
//	%inf = graph.cmp %a, %cinf {predicate = "eq"} : (tensor<4xf32>, tensor<f32>) -> tensor<4xi1>
//	%ax = graph.abs %x : tensor<4xf32>
//	%fin = graph.cmp %ax, %cinf {predicate = "lt"} : (tensor<4xf32>, tensor<f32>) -> tensor<4xi1>
//	%m = graph.select %inf, %fin, %false : (tensor<4xi1>, tensor<4xi1>, tensor<i1>) -> tensor<4xi1>
//	%e = graph.select %m, %cmarker, %e0 : (tensor<4xi1>, tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
//
// For a reduction the operands' finiteness is reduce_max(abs(x)) over the
// same axes.
func MarkOverflow(f ir.Func, marker float64) (ir.Func, error) {
	c := ir.Func{Operation: f.Operation.Clone(ir.Mapping{})}
	var ops []*ir.Operation
	c.Walk(func(op *ir.Operation) bool {
		if markable(op) {
			ops = append(ops, op)
		}
		return true
	})
	for _, op := range ops {
		if err := markOp(op, marker); err != nil {
			return ir.Func{}, fmt.Errorf("difftest: marking overflow of %s: %w", op.Name(), err)
		}
	}
	return c, nil
}

var reductions = map[string]bool{
	graph.OpReduceSum: true, graph.OpReduceMax: true, graph.OpReduceMin: true, graph.OpReduceMean: true,
}

// overflowing lists the ops whose result can overflow while the exact
// value is finite. Poles are not overflows: log(0) = -inf and 1/0 = inf
// are exact, so div, reciprocal, rsqrt and the logarithms are left out.
var overflowing = map[string]bool{
	graph.OpExp: true, graph.OpExp2: true, graph.OpExpm1: true, graph.OpPow: true,
	graph.OpMul: true, graph.OpAdd: true, graph.OpSub: true, graph.OpCast: true,
	graph.OpReduceSum: true, graph.OpReduceMean: true,
}

// underflowing lists the ops whose result can round to 0 while the
// exact value is not (exp(-1e30), 1e-30 * 1e-30, a cast of 1e-10 to f16):
// an underflow the original may turn into a pole later (log(0) = -inf)
// and a rewrite may avoid. A sum that cancels to 0 is exact and is not
// one.
// The value says whether a 0 is exact when an operand is 0 (0 * x,
// pow(0, y), a cast of 0); exp, exp2 and softmax are never 0 exactly.
var underflowing = map[string]bool{
	graph.OpExp: false, graph.OpExp2: false, graph.OpPow: true, graph.OpMul: true, graph.OpCast: true,
	graph.OpSoftmax: false, // whose entries far below the row maximum underflow
}

func floatKind(v *ir.Value) (ir.ElemKind, bool) {
	t, ok := v.Type().(ir.TensorType)
	return t.Elem.Kind, ok && t.Elem.Kind.IsFloat()
}

// markable reports whether op can overflow and its operands line up with
// its result (element-wise ops and reductions), with one float result.
func markable(op *ir.Operation) bool {
	_, under := underflowing[op.Name()]
	if !overflowing[op.Name()] && !under || op.NumResults() != 1 {
		return false
	}
	_, ok := floatKind(op.Result(0))
	return ok
}

func markOp(op *ir.Operation, marker float64) (err error) {
	b := ir.NewBuilderBefore(op.Next())
	loc := op.Loc
	must := func(v *ir.Value, e error) *ir.Value {
		if e != nil && err == nil {
			err = e
		}
		return v
	}
	build := func(f func() (*ir.Value, error)) *ir.Value {
		if err != nil {
			return nil
		}
		return must(f())
	}
	scalar := func(k ir.ElemKind, v float64) *ir.Value {
		return build(func() (*ir.Value, error) {
			return firstResult(graph.BuildConstant(b, loc, ir.DenseAttr{Type: ir.Tensor(ir.ElemType{Kind: k}), Values: []float64{v}}))
		})
	}
	abs := func(v *ir.Value) *ir.Value {
		return build(func() (*ir.Value, error) { return firstResult(graph.BuildAbs(b, loc, v)) })
	}
	cmp := func(x, y *ir.Value, pred string) *ir.Value {
		return build(func() (*ir.Value, error) { return firstResult(graph.BuildCmp(b, loc, x, y, pred)) })
	}
	sel := func(c, x, y *ir.Value) *ir.Value {
		return build(func() (*ir.Value, error) { return firstResult(graph.BuildSelect(b, loc, c, x, y)) })
	}

	r := op.Result(0)
	rk, _ := floatKind(r)
	absR := abs(r)
	trueV, falseV := scalar(ir.I1, 1), scalar(ir.I1, 0)
	and := func(x, y *ir.Value) *ir.Value { return sel(x, y, falseV) }
	finite, nonzero := trueV, trueV
	axes, keepdim := reductionAttrs(op)
	for _, o := range op.Operands() {
		k, ok := floatKind(o)
		if !ok {
			continue
		}
		mag := abs(o)
		if reductions[op.Name()] {
			elems := mag
			mag = build(func() (*ir.Value, error) { return firstResult(graph.BuildReduceMax(b, loc, elems, axes, keepdim)) })
		}
		finite = and(finite, cmp(mag, scalar(k, math.Inf(1)), "lt"))
		nonzero = and(nonzero, cmp(mag, scalar(k, 0), "gt"))
	}
	mask := and(cmp(absR, scalar(rk, math.Inf(1)), "eq"), finite)
	if zeroIsExact, ok := underflowing[op.Name()]; ok {
		cond := finite
		if zeroIsExact {
			cond = and(finite, nonzero)
		}
		mask = sel(mask, trueV, and(cmp(absR, scalar(rk, 0), "eq"), cond))
	}
	marked := sel(mask, scalar(rk, marker), r)
	if err != nil {
		return err
	}
	r.ReplaceAllUsesWith(marked)
	// the marking itself reads the unmarked value
	absR.DefiningOp().SetOperand(0, r)
	marked.DefiningOp().SetOperand(2, r)
	return nil
}

// reductionAttrs reads `axes` and `keepdim` of a reduction.
func reductionAttrs(op *ir.Operation) ([]int64, bool) {
	var axes []int64
	if a, ok := op.Attr("axes").(ir.ArrayAttr); ok {
		axes, _ = a.Int64s()
	}
	keep, _ := op.Attr("keepdim").(ir.BoolAttr)
	return axes, bool(keep)
}

func firstResult[T interface{ Result(int) *ir.Value }](op T, err error) (*ir.Value, error) {
	if err != nil {
		return nil, err
	}
	return op.Result(0), nil
}
