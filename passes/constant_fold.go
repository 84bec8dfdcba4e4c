package passes

import (
	"math"

	"github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

// maxFoldElements bounds the size of a constant the canonicalizer creates:
// folding must not turn a small splat into a huge dense literal.
const maxFoldElements = 1024

// constantFold evaluates a side-effect-free graph op whose operands are all
// constants with the reference interpreter, so folding agrees with the
// interpreter's semantics bit for bit:
//
//	%a = graph.constant dense<2.0> : tensor<f32>
//	%b = graph.exp %a : tensor<f32>     // -> graph.constant dense<7.38905621> : tensor<f32>
var constantFold = ir.PatternFunc("ConstantFold", "", func(op *ir.Operation, rw *ir.Rewriter) bool {
	if op.Dialect() != "graph" || !op.HasTrait(ir.Pure) || op.HasTrait(ir.ConstantLike) ||
		op.HasTrait(ir.Terminator) || op.NumRegions() > 0 || op.NumOperands() == 0 || op.NumResults() == 0 {
		return false
	}
	inputs := make([]*eval.Tensor, op.NumOperands())
	inTypes := make([]ir.Type, op.NumOperands())
	for i, v := range op.Operands() {
		t, ok := constantTensor(v)
		if !ok {
			return false
		}
		inputs[i], inTypes[i] = t, v.Type()
	}
	if uncheckedCastOutOfRange(op, inputs) {
		return false
	}
	outTypes := make([]ir.Type, op.NumResults())
	for i, r := range op.Results() {
		st, ok := r.Type().(ir.TensorType)
		if !ok {
			return false
		}
		if n, ok := ir.NumElements(st.Shape); !ok || n > maxFoldElements {
			return false
		}
		outTypes[i] = st
	}
	// Evaluate a one-op function holding a copy of op.
	fn := ir.NewFunc(op.Loc, "fold", ir.FunctionType{Inputs: inTypes, Results: outTypes})
	m := ir.Mapping{}
	for i, v := range op.Operands() {
		m[v] = fn.Args()[i]
	}
	c := op.Clone(m)
	fn.Body().Append(c)
	fn.Body().Append(ir.NewOperation(ir.ReturnOpName, op.Loc, c.Results(), nil, nil, 0))
	outs, err := eval.Run(fn, inputs, eval.Options{})
	if err != nil {
		return false
	}
	repl := make([]*ir.Value, len(outs))
	for i, t := range outs {
		st := outTypes[i].(ir.TensorType)
		attr := ir.DenseAttr{Type: st, Values: splatOrAll(t.Data)}
		repl[i] = rw.Create("graph.constant", op.Loc, nil, []ir.Type{st}, ir.Attrs("value", attr)).Result(0)
	}
	rw.ReplaceOp(op, repl)
	return true
})

// uncheckedCastOutOfRange reports whether op is a float-to-integer
// graph.cast of a value it does not hold (NaN, or past the range): what
// such a cast gives is the target's, until legalize-numerics makes it
// saturating, so folding it would bake one target's answer in.
func uncheckedCastOutOfRange(op *ir.Operation, inputs []*eval.Tensor) bool {
	if op.Name() != "graph.cast" || len(inputs) != 1 {
		return false
	}
	in, ok1 := ir.ElemOf(op.Operand(0).Type())
	out, ok2 := ir.ElemOf(op.Result(0).Type())
	if !ok1 || !ok2 || !in.Kind.IsFloat() || !out.Kind.IsInt() {
		return false
	}
	for _, v := range inputs[0].Data {
		t := math.Trunc(v)
		if math.IsNaN(v) || numeric.SaturateInt(t, out.Kind) != t {
			return true
		}
	}
	return false
}

// constantTensor returns the value of a graph.constant operand.
func constantTensor(v *ir.Value) (*eval.Tensor, bool) {
	d := v.DefiningOp()
	if d == nil || !d.HasTrait(ir.ConstantLike) {
		return nil, false
	}
	da, ok := d.Attr("value").(ir.DenseAttr)
	st, ok2 := v.Type().(ir.TensorType)
	if !ok || !ok2 || ir.HasDynamicDim(st.Shape) {
		return nil, false
	}
	n, ok := ir.NumElements(st.Shape)
	if !ok || n > maxFoldElements {
		return nil, false
	}
	data := make([]float64, n)
	for i := range data {
		data[i] = da.At(int64(i))
	}
	t, err := eval.TensorOf(st.Elem.Kind, st.Shape, data)
	return t, err == nil
}

// splatOrAll stores a constant compactly: one value when all are equal.
func splatOrAll(data []float64) []float64 {
	if len(data) == 0 {
		return data
	}
	for _, x := range data[1:] {
		if !sameFloat(x, data[0]) {
			return append([]float64(nil), data...)
		}
	}
	return []float64{data[0]}
}

// sameFloat compares bit-for-bit in meaning: NaN equals NaN, -0 differs from +0.
func sameFloat(a, b float64) bool {
	if a != a && b != b {
		return true
	}
	return a == b && (a != 0 || (1/a > 0) == (1/b > 0))
}
