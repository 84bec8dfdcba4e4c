package difftest

import (
	"fmt"

	"github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/ir"
)

// SaturateCasts gives a module the meaning legalize-numerics gives it:
// every unchecked float -> integer graph.cast (to i8, i16, i32, ui8, ui16
// or ui32) becomes the saturating conversion of numeric.SaturateInt, NaN
// to 0 and values beyond the range to its ends. It is written
// independently of the pass, as comparisons in f64, where every range end
// and its neighbour are exact:
//
//	%y = graph.cast %x : (tensor<4xf32>) -> tensor<4xui8>
//
// becomes
//
//	%d = graph.cast %x : (tensor<4xf32>) -> tensor<4xf64>
//	%nan = graph.cmp %d, %d {predicate = "ne"} : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xi1>
//	%over = graph.cmp %d, %c256 {predicate = "ge"} : (tensor<4xf64>, tensor<f64>) -> tensor<4xi1>
//	%under = graph.cmp %d, %cm1 {predicate = "le"} : (tensor<4xf64>, tensor<f64>) -> tensor<4xi1>
//	%t = graph.cast %d : (tensor<4xf64>) -> tensor<4xui8>
//	%a = graph.select %under, %c0, %t : (tensor<4xi1>, tensor<ui8>, tensor<4xui8>) -> tensor<4xui8>
//	%b = graph.select %over, %c255, %a : (tensor<4xi1>, tensor<ui8>, tensor<4xui8>) -> tensor<4xui8>
//	%y = graph.select %nan, %c0, %b : (tensor<4xi1>, tensor<ui8>, tensor<4xui8>) -> tensor<4xui8>
//
// In range, the cast truncates toward zero as both conversions do. Casts
// to i1, i64 and index are left alone (their range ends are not all
// float64 values, and legalize-numerics keeps them as they are too).
func SaturateCasts(m ir.Module) error {
	var casts []*ir.Operation
	m.Walk(func(op *ir.Operation) bool {
		if op.Name() == graph.OpCast && op.NumOperands() == 1 && op.NumResults() == 1 {
			from, _ := ir.ElemOf(op.Operand(0).Type())
			to, _ := ir.ElemOf(op.Result(0).Type())
			if from.Kind.IsFloat() && saturable(to.Kind) {
				casts = append(casts, op)
			}
		}
		return true
	})
	for _, op := range casts {
		y, err := saturatingCast(ir.NewBuilderBefore(op), op)
		if err != nil {
			return fmt.Errorf("difftest: saturating %s: %w", op, err)
		}
		op.Result(0).ReplaceAllUsesWith(y)
		op.Erase()
	}
	return nil
}

// saturable reports whether casts to k are made saturating.
func saturable(k ir.ElemKind) bool {
	switch k {
	case ir.I8, ir.I16, ir.I32, ir.UI8, ir.UI16, ir.UI32:
		return true
	}
	return false
}

func saturatingCast(b *ir.Builder, op *ir.Operation) (*ir.Value, error) {
	loc := op.Loc
	x := op.Operand(0)
	xt, ok := x.Type().(ir.TensorType)
	to, ok2 := op.Result(0).Type().(ir.TensorType)
	if !ok || !ok2 {
		return nil, fmt.Errorf("expects tensor types")
	}
	k := to.Elem.Kind
	var err error
	first := func(v *ir.Value, e error) *ir.Value {
		if e != nil && err == nil {
			err = e
		}
		return v
	}
	res := func(op interface{ Result(int) *ir.Value }, e error) (*ir.Value, error) {
		if e != nil {
			return nil, e
		}
		return op.Result(0), nil
	}
	scalar := func(kind ir.ElemKind, v float64) *ir.Value {
		if err != nil {
			return nil
		}
		return first(res(graph.BuildConstant(b, loc, ir.DenseAttr{Type: ir.Tensor(ir.ElemType{Kind: kind}), Values: []float64{v}})))
	}
	cmp := func(a, c *ir.Value, pred string) *ir.Value {
		if err != nil {
			return nil
		}
		return first(res(graph.BuildCmp(b, loc, a, c, pred)))
	}
	sel := func(c, a, d *ir.Value) *ir.Value {
		if err != nil {
			return nil
		}
		return first(res(graph.BuildSelect(b, loc, c, a, d)))
	}
	d := x
	if xt.Elem.Kind != ir.F64 {
		d = first(res(graph.BuildCast(b, loc, x, xt.WithElem(ir.F64Type))))
	}
	if err != nil {
		return nil, err
	}
	lo, hi := k.IntRange()
	nan := cmp(d, d, "ne")
	over := cmp(d, scalar(ir.F64, float64(hi)+1), "ge")
	under := cmp(d, scalar(ir.F64, float64(lo)-1), "le")
	var t *ir.Value
	if err == nil {
		t = first(res(graph.BuildCast(b, loc, d, to)))
	}
	y := sel(under, scalar(k, float64(lo)), t)
	y = sel(over, scalar(k, float64(hi)), y)
	y = sel(nan, scalar(k, 0), y)
	if err != nil {
		return nil, err
	}
	return y, nil
}
