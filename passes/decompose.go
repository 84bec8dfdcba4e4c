package passes

import (
	"github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

// Decompose expands every composite op nested in root, inside graph.fused
// regions too, into the primitives a kernel is made of: element-wise ops,
// casts, splat constants and reductions. A backend then needs nothing
// else; the reductions stay explicit reduce ops over the last axis, which
// fuse turns into row kernels. For example
//
//	%n = graph.rmsnorm %x, %w {eps = 1.0e-05 : f32} : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
//
// becomes, computed in f32 as the graph dialect defines it,
//
//	%0 = graph.cast %x : (tensor<4x8xbf16>) -> tensor<4x8xf32>
//	%1 = graph.constant dense<8.0> : tensor<f32>
//	%2 = graph.mul %0, %0 : tensor<4x8xf32>
//	%3 = graph.reduce_sum %2 {axes = [-1], keepdim = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
//	%4 = graph.div %3, %1 : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
//	%5 = graph.constant dense<1.0e-05> : tensor<f32>
//	%6 = graph.add %4, %5 : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
//	%7 = graph.rsqrt %6 : tensor<4x1xf32>
//	%8 = graph.mul %0, %7 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
//	%9 = graph.cast %w : (tensor<8xbf16>) -> tensor<8xf32>
//	%10 = graph.mul %8, %9 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
//	%n = graph.cast %10 : (tensor<4x8xf32>) -> tensor<4x8xbf16>
//
// A normalisation along another axis than the last is transposed so that
// its reductions run over the last axis, and transposed back. reduce_mean
// becomes reduce_sum times 1/C (the means of the normalisations divide by
// C, which is per-row work and rounds exactly as the dialect defines them). softmax, log_softmax, logsumexp,
// logaddexp, logaddexp2 and the quantisation ops use the overflow-safe
// expansions that legalize-numerics shares (numerics_expand.go).
//
// It reports whether anything changed. An op whose expansion cannot be
// built is left as it is (fuse then keeps it as a kernel of its own);
// the decompose pass reports it as an error.
func Decompose(root *ir.Operation) bool {
	changed, _ := decompose(root)
	return changed
}

// decompose expands the composites of root and returns the first failure.
func decompose(root *ir.Operation) (bool, error) {
	changed := false
	var firstErr error
	failed := map[*ir.Operation]bool{}
	// An expansion never produces composites, but one pass over a
	// snapshot keeps the walk independent of the rewrites.
	for {
		var todo []*ir.Operation
		root.Walk(func(op *ir.Operation) bool {
			if op != root && IsComposite(op) && !failed[op] && compositeExpanders[op.Name()] != nil {
				todo = append(todo, op)
			}
			return true
		})
		if len(todo) == 0 {
			return changed, firstErr
		}
		for _, op := range todo {
			if err := expandComposite(op); err != nil {
				failed[op] = true
				if firstErr == nil {
					firstErr = err
				}
				continue
			}
			changed = true
		}
	}
}

// expandComposite replaces op by its expansion, or leaves it untouched and
// returns why it could not.
func expandComposite(op *ir.Operation) error {
	d := &decomposer{b: ir.NewBuilderBefore(op), loc: op.Loc}
	y := compositeExpanders[op.Name()](d, op)
	if d.err == nil && y == nil {
		d.err = ir.OpError(op, "has no expansion into primitives for these operands")
	}
	if d.err != nil {
		d.discard()
		return d.err
	}
	if y.Name == "" {
		y.Name = op.Result(0).Name
	}
	op.Result(0).ReplaceAllUsesWith(y)
	op.Erase()
	return nil
}

// compositeExpanders maps each composite op to its expansion.
var compositeExpanders = map[string]func(d *decomposer, op *ir.Operation) *ir.Value{
	graph.OpRMSNorm:    expandRMSNorm,
	graph.OpLayerNorm:  expandLayerNorm,
	graph.OpReduceMean: expandReduceMean,
	graph.OpSoftmax:    expandNumericsComposite,
	graph.OpLogSoftmax: expandNumericsComposite,
	graph.OpLogSumExp:  expandNumericsComposite,
	graph.OpLogAddExp:  expandNumericsComposite,
	graph.OpLogAddExp2: expandNumericsComposite,
	graph.OpQuantize:   expandNumericsComposite,
	graph.OpDequantize: expandNumericsComposite,
	graph.OpRequantize: expandNumericsComposite,
}

// expandNumericsComposite uses the overflow-safe expansion legalize-numerics shares
// (numerics_expand.go). On failure the ops it built so far, between the
// op's former predecessor and the op, are erased again.
func expandNumericsComposite(d *decomposer, op *ir.Operation) *ir.Value {
	before := op.Prev()
	v, err := ExpandNumericsOp(d.b, op)
	if err == nil {
		return v
	}
	d.err = err
	var built []*ir.Operation
	for o := op.Prev(); o != nil && o != before; o = o.Prev() {
		built = append(built, o)
	}
	for _, o := range built { // latest first: users before producers
		o.Erase()
	}
	return nil
}

// ---------------------------------------------------------------------------
// The builder of expansions

// decomposer builds the ops of one expansion before the composite op. The
// first failure sticks: later calls return nil and build nothing, and
// discard removes what was built.
type decomposer struct {
	b       *ir.Builder
	loc     ir.Location
	err     error
	created []*ir.Operation
}

// emit runs one generated builder and records the op it built.
func (d *decomposer) emit(build func() (*ir.Operation, error)) *ir.Value {
	if d.err != nil {
		return nil
	}
	op, err := build()
	if err != nil {
		d.err = err
		return nil
	}
	d.created = append(d.created, op)
	return op.Result(0)
}

// discard erases what the expansion built, users first: nothing outside
// the expansion uses its values yet.
func (d *decomposer) discard() {
	for i := len(d.created) - 1; i >= 0; i-- {
		d.created[i].Erase()
	}
	d.created = nil
}

// ok reports whether building may go on with operands vs.
func (d *decomposer) ok(vs ...*ir.Value) bool {
	if d.err != nil {
		return false
	}
	for _, v := range vs {
		if v == nil {
			return false
		}
	}
	return true
}

// binary builds one of the broadcasting element-wise binary ops.
func (d *decomposer) binary(name string, x, y *ir.Value) *ir.Value {
	if !d.ok(x, y) {
		return nil
	}
	return d.emit(func() (*ir.Operation, error) {
		switch name {
		case graph.OpAdd:
			o, err := graph.BuildAdd(d.b, d.loc, x, y)
			return o.Operation, err
		case graph.OpSub:
			o, err := graph.BuildSub(d.b, d.loc, x, y)
			return o.Operation, err
		case graph.OpDiv:
			o, err := graph.BuildDiv(d.b, d.loc, x, y)
			return o.Operation, err
		default:
			o, err := graph.BuildMul(d.b, d.loc, x, y)
			return o.Operation, err
		}
	})
}

func (d *decomposer) add(x, y *ir.Value) *ir.Value { return d.binary(graph.OpAdd, x, y) }
func (d *decomposer) sub(x, y *ir.Value) *ir.Value { return d.binary(graph.OpSub, x, y) }
func (d *decomposer) mul(x, y *ir.Value) *ir.Value { return d.binary(graph.OpMul, x, y) }
func (d *decomposer) div(x, y *ir.Value) *ir.Value { return d.binary(graph.OpDiv, x, y) }

func (d *decomposer) rsqrt(x *ir.Value) *ir.Value {
	if !d.ok(x) {
		return nil
	}
	return d.emit(func() (*ir.Operation, error) {
		o, err := graph.BuildRsqrt(d.b, d.loc, x)
		return o.Operation, err
	})
}

// reduceSum builds `graph.reduce_sum %x {axes, keepdim}`.
func (d *decomposer) reduceSum(x *ir.Value, axes []int64, keepdim bool) *ir.Value {
	if !d.ok(x) {
		return nil
	}
	return d.emit(func() (*ir.Operation, error) {
		o, err := graph.BuildReduceSum(d.b, d.loc, x, axes, keepdim)
		return o.Operation, err
	})
}

// scalar builds a rank-0 splat constant of elem holding v rounded to elem.
func (d *decomposer) scalar(v float64, elem ir.ElemType) *ir.Value {
	if d.err != nil {
		return nil
	}
	return d.emit(func() (*ir.Operation, error) {
		o, err := graph.BuildConstant(d.b, d.loc, ir.DenseAttr{Type: ir.Tensor(elem), Values: []float64{numeric.RoundTo(v, elem.Kind)}})
		return o.Operation, err
	})
}

// castTo builds `graph.cast %x` to elem, or returns x when it has elem already.
func (d *decomposer) castTo(x *ir.Value, elem ir.ElemType) *ir.Value {
	if !d.ok(x) {
		return nil
	}
	t, ok := x.Type().(ir.TensorType)
	if !ok || t.Elem == elem {
		return x
	}
	return d.emit(func() (*ir.Operation, error) {
		o, err := graph.BuildCast(d.b, d.loc, x, t.WithElem(elem))
		return o.Operation, err
	})
}

// transpose builds `graph.transpose %x {perm}`.
func (d *decomposer) transpose(x *ir.Value, perm []int64) *ir.Value {
	if !d.ok(x) {
		return nil
	}
	return d.emit(func() (*ir.Operation, error) {
		o, err := graph.BuildTranspose(d.b, d.loc, x, perm)
		return o.Operation, err
	})
}

// ComputeElem is the element type a composite op of elem computes in: f32
// for f16, bf16 and the f8 types (the graph dialect computes them in f32
// and rounds when storing), the type itself otherwise.
func ComputeElem(elem ir.ElemType) ir.ElemType {
	switch elem.Kind {
	case ir.F16, ir.BF16, ir.F8E4M3FN, ir.F8E5M2:
		return ir.F32Type
	}
	return elem
}

// toLastAxis moves dimension axis of x to the end with a transpose, so
// that a row computation can reduce over the last axis. It returns the
// moved value and a function that moves a result of the same shape back.
func (d *decomposer) toLastAxis(x *ir.Value, axis int64) (*ir.Value, func(*ir.Value) *ir.Value) {
	t, _ := x.Type().(ir.TensorType)
	rank := int64(t.Rank())
	if axis == rank-1 {
		return x, func(y *ir.Value) *ir.Value { return y }
	}
	perm := make([]int64, 0, rank)
	for i := int64(0); i < rank; i++ {
		if i != axis {
			perm = append(perm, i)
		}
	}
	perm = append(perm, axis)
	inv := make([]int64, rank)
	for i, p := range perm {
		inv[p] = int64(i)
	}
	return d.transpose(x, perm), func(y *ir.Value) *ir.Value { return d.transpose(y, inv) }
}

// normalizedAxis returns op's `axis` attribute counted from the front.
func normalizedAxis(op *ir.Operation, x *ir.Value) (int64, bool) {
	t, ok := x.Type().(ir.TensorType)
	if !ok {
		return 0, false
	}
	axis := int64(-1)
	if a, ok := op.Attr("axis").(ir.IntAttr); ok {
		axis = a.Value
	}
	norm, err := graph.NormalizeAxes([]int64{axis}, t.Rank())
	if err != nil {
		return 0, false
	}
	return norm[0], true
}

// epsOf returns the `eps` attribute as the value of its type (f32 unless
// stated), as the graph dialect reads it; 1e-5 when absent.
func epsOf(op *ir.Operation) float64 {
	if a, ok := op.Attr("eps").(ir.FloatAttr); ok {
		k := a.Type.Kind
		if k == ir.InvalidElem {
			k = ir.F32
		}
		return numeric.RoundTo(a.Value, k)
	}
	return numeric.RoundTo(1e-5, ir.F32)
}

// ---------------------------------------------------------------------------
// Expansions

// expandRMSNorm: y = x * rsqrt(sum(x*x) / C + eps) * w, in f32 for
// narrow floats, with the sum a reduction over the last axis.
func expandRMSNorm(d *decomposer, op *ir.Operation) *ir.Value {
	return expandNorm(d, op, false)
}

// expandLayerNorm: with m = sum(x) / C and v = sum((x-m)^2) / C,
// y = (x - m) * rsqrt(v + eps) * w + b, the biased variance as the graph
// dialect defines it.
func expandLayerNorm(d *decomposer, op *ir.Operation) *ir.Value {
	return expandNorm(d, op, true)
}

func expandNorm(d *decomposer, op *ir.Operation, center bool) *ir.Value {
	x := op.Operand(0)
	t, ok := x.Type().(ir.TensorType)
	axis, ok2 := normalizedAxis(op, x)
	if !ok || !ok2 {
		return nil
	}
	ce := ComputeElem(t.Elem)
	rows, back := d.toLastAxis(x, axis)
	xf := d.castTo(rows, ce)
	// The means divide by C: it is per-row work, and it rounds as the
	// graph dialect's definition does (a product with 1/C may not, and the
	// subtraction of layernorm would magnify the difference).
	c := d.scalar(float64(t.Shape[axis]), ce)
	centred := xf
	if center {
		mean := d.div(d.reduceSum(xf, []int64{-1}, true), c)
		centred = d.sub(xf, mean)
	}
	ss := d.reduceSum(d.mul(centred, centred), []int64{-1}, true)
	r := d.rsqrt(d.add(d.div(ss, c), d.scalar(epsOf(op), ce)))
	y := d.mul(centred, r)
	if op.NumOperands() > 1 {
		y = d.mul(y, d.castTo(op.Operand(1), ce))
	}
	if center && op.NumOperands() > 2 {
		y = d.add(y, d.castTo(op.Operand(2), ce))
	}
	return back(d.castTo(y, t.Elem))
}

// expandReduceMean: reduce_mean(x) = reduce_sum(x) * (1/C), C the number of
// elements reduced, summed in f32 for narrow floats.
func expandReduceMean(d *decomposer, op *ir.Operation) *ir.Value {
	m, _ := graph.AsReduceMean(op)
	x := m.Input()
	t, ok := x.Type().(ir.TensorType)
	axes, ok2 := reductionAxes(op)
	if !ok || !ok2 {
		return nil
	}
	count := 1.0
	for _, a := range axes {
		count *= float64(t.Shape[a])
	}
	ce := ComputeElem(t.Elem)
	sum := d.reduceSum(d.castTo(x, ce), m.Axes(), m.Keepdim())
	return d.castTo(d.mul(sum, d.scalar(1/count, ce)), t.Elem)
}

// ---------------------------------------------------------------------------
// The pass

func init() {
	ir.RegisterPass(&ir.PassInfo{
		Name: "decompose", Title: "Decompose",
		Summary: "expand composite ops (rmsnorm, layernorm, softmax, logsumexp, reduce_mean, logaddexp, quantize ...) into primitives",
		New: func(ir.PassOptions) (ir.Pass, error) {
			return ir.PassFunc(func(m ir.Module, ctx *ir.PassContext) error {
				_, err := decompose(m.Operation)
				return err
			}), nil
		},
	})
}
