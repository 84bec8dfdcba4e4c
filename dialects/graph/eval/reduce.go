package eval

import (
	"fmt"
	"math"
	"sort"

	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

func init() {
	register(evalReduce, "graph.reduce_sum", "graph.reduce_max", "graph.reduce_min", "graph.reduce_mean")
	register(evalRMSNorm, "graph.rmsnorm")
	register(evalLayerNorm, "graph.layernorm")
	register(evalSoftmax, "graph.softmax", "graph.log_softmax")
	register(evalLogSumExp, "graph.logsumexp")
}

// reduceAxes returns the sorted, distinct axes named by the `axes`
// attribute (negative ones count from the end); all axes when absent.
func reduceAxes(op *ir.Operation, rank int) ([]int, error) {
	vs, ok, err := attrInts(op, "axes")
	if err != nil {
		return nil, err
	}
	if !ok {
		all := make([]int, rank)
		for i := range all {
			all[i] = i
		}
		return all, nil
	}
	seen := map[int]bool{}
	axes := make([]int, 0, len(vs))
	for _, v := range vs {
		a, err := normAxis(v, rank)
		if err != nil {
			return nil, err
		}
		if seen[a] {
			return nil, fmt.Errorf("axis %d is reduced twice", v)
		}
		seen[a] = true
		axes = append(axes, a)
	}
	sort.Ints(axes)
	return axes, nil
}

// reducedShape returns the shape after reducing axes, and the shape of the
// same size with 1 in the reduced dims (the keepdim shape).
func reducedShape(shape []int64, axes []int) (dropped, kept []int64) {
	red := map[int]bool{}
	for _, a := range axes {
		red[a] = true
	}
	dropped = []int64{}
	kept = make([]int64, len(shape))
	for i, d := range shape {
		if red[i] {
			kept[i] = 1
			continue
		}
		kept[i] = d
		dropped = append(dropped, d)
	}
	return dropped, kept
}

// evalReduce is `graph.reduce_sum %x {axes = [-1], keepdim = false}`.
//
// Elements are combined in row-major order of the input. A float sum
// accumulates in float64 under Options.F64 (or for f64 data) and otherwise
// in float32, rounding after every addition (in reverse order under
// Options.ReverseSums); mean is that sum divided by
// the element count in the same precision. max and min propagate NaN.
// Integer sums use integer arithmetic wrapped to the result type, and an
// integer mean is the sum divided by the count, truncated toward zero.
// An empty reduction gives 0 for sum, NaN for mean, and the identity of
// max/min (-inf/+inf, or the integer type's range end).
func evalReduce(m *machine, op *ir.Operation, args []*Tensor) ([]*Tensor, error) {
	if err := wantOperands(args, 1, 1); err != nil {
		return nil, err
	}
	x := args[0]
	k, err := resultElem(op, 0)
	if err != nil {
		return nil, err
	}
	axes, err := reduceAxes(op, x.Rank())
	if err != nil {
		return nil, err
	}
	keep, err := attrBool(op, "keepdim", false)
	if err != nil {
		return nil, err
	}
	dropped, kept := reducedShape(x.Shape, axes)
	outShape := dropped
	if keep {
		outShape = kept
	}
	count := 1.0
	for _, a := range axes {
		count *= float64(x.Shape[a])
	}
	// Walk the input in row-major order with the output as a broadcast
	// "input": each input element maps to the offset of its reduction.
	bc, err := newBroadcaster(x.Shape, kept)
	if err != nil {
		return nil, err
	}
	out := NewTensor(k, outShape)
	kind := op.Name()[len("graph.reduce_"):]
	intMode := k.IsInt() && x.Elem.IsInt()
	p := m.precOf(op, args)

	acc := make([]float64, len(out.Data))
	iacc := make([]int64, len(out.Data))
	init := 0.0
	switch kind {
	case "max":
		init = math.Inf(-1)
	case "min":
		init = math.Inf(1)
	}
	for i := range acc {
		acc[i] = init
	}
	visit := bc.each
	if m.opts.ReverseSums && (kind == "sum" || kind == "mean") && !intMode {
		// the same walk backwards (Options.ReverseSums)
		visit = func(fn func(o int, offs []int)) {
			var os, js []int
			bc.each(func(o int, offs []int) { os, js = append(os, o), append(js, offs[0]) })
			for i := len(os) - 1; i >= 0; i-- {
				fn(os[i], js[i:i+1])
			}
		}
	}
	visit(func(o int, offs []int) {
		v := x.Data[o]
		j := offs[0]
		switch {
		case kind == "max":
			acc[j] = numeric.Maximum(acc[j], v)
		case kind == "min":
			acc[j] = numeric.Minimum(acc[j], v)
		case intMode:
			iacc[j] += int64(v)
		default:
			acc[j] = p.r(acc[j] + v)
		}
	})
	for j := range out.Data {
		switch {
		case kind == "max" || kind == "min":
			v := acc[j]
			if intMode && math.IsInf(v, 0) {
				lo, hi := k.IntRange()
				v = float64(hi)
				if kind == "max" {
					v = float64(lo)
				}
			}
			out.Data[j] = m.store(v, k)
		case intMode && kind == "sum":
			out.Data[j] = float64(numeric.WrapInt64(iacc[j], k))
		case intMode: // mean
			out.Data[j] = numeric.WrapInt(float64(iacc[j])/count, k)
		case kind == "sum":
			out.Data[j] = m.store(acc[j], k)
		default: // mean
			out.Data[j] = m.store(p.r(acc[j]/p.r(count)), k)
		}
	}
	return []*Tensor{out}, nil
}

// ---------------------------------------------------------------------------
// Row operations: normalisations along one axis.

// rowAxis returns the normalised `axis` attribute (default -1).
func rowAxis(op *ir.Operation, rank int) (int, error) {
	a, err := attrInt(op, "axis", -1)
	if err != nil {
		return 0, err
	}
	return normAxis(a, rank)
}

// forRows calls fn once per row of shape along axis, with the offset of the
// row's first element and the stride between its elements.
func forRows(shape []int64, axis int, fn func(base, stride int)) {
	outer, inner := 1, 1
	for i, d := range shape {
		switch {
		case i < axis:
			outer *= int(d)
		case i > axis:
			inner *= int(d)
		}
	}
	n := int(shape[axis])
	for o := 0; o < outer; o++ {
		for i := 0; i < inner; i++ {
			fn(o*n*inner+i, inner)
		}
	}
}

// alongAxis returns, for a per-row parameter p (a weight or bias), a
// function from element offset of x to the offset of p's value: a 1-D p
// whose length is the extent of axis lines up with that axis; any other p
// must broadcast to x's shape as NumPy does.
func alongAxis(x, p *Tensor, axis int) (func(off int) int, error) {
	if p.Rank() == 1 && p.Shape[0] == x.Shape[axis] {
		inner := 1
		for _, d := range x.Shape[axis+1:] {
			inner *= int(d)
		}
		n := int(x.Shape[axis])
		return func(off int) int { return off / inner % n }, nil
	}
	bc, err := newBroadcaster(x.Shape, p.Shape)
	if err != nil {
		return nil, err
	}
	idx := make([]int, len(x.Data))
	bc.each(func(o int, offs []int) { idx[o] = offs[0] })
	return func(off int) int { return idx[off] }, nil
}

// evalRMSNorm is `graph.rmsnorm %x, %w {eps = 1.0e-05 : f32, axis = -1}`:
// y = x * rsqrt(mean(x^2) + eps) * w, in the op's precision step by step
// (the sum of squares accumulates like reduce_sum; rsqrt is rounded once).
func evalRMSNorm(m *machine, op *ir.Operation, args []*Tensor) ([]*Tensor, error) {
	if err := wantOperands(args, 1, 2); err != nil {
		return nil, err
	}
	return normalize(m, op, args, false)
}

// evalLayerNorm is `graph.layernorm %x, %w, %b {eps, axis}`:
// y = (x - mean) * rsqrt(var + eps) * w + b with the biased variance
// mean((x - mean)^2), computed in two passes.
func evalLayerNorm(m *machine, op *ir.Operation, args []*Tensor) ([]*Tensor, error) {
	if err := wantOperands(args, 1, 3); err != nil {
		return nil, err
	}
	return normalize(m, op, args, true)
}

// normalize implements rmsnorm (center false) and layernorm (center true).
// Missing weight and bias operands count as 1 and 0.
func normalize(m *machine, op *ir.Operation, args []*Tensor, center bool) ([]*Tensor, error) {
	x := args[0]
	k, err := resultElem(op, 0)
	if err != nil {
		return nil, err
	}
	if x.Rank() == 0 {
		return nil, fmt.Errorf("operand must have rank 1 or more")
	}
	axis, err := rowAxis(op, x.Rank())
	if err != nil {
		return nil, err
	}
	eps, err := attrFloat(op, "eps", 1e-5)
	if err != nil {
		return nil, err
	}
	param := func(i int) (*Tensor, func(int) int, error) {
		if i >= len(args) {
			return nil, nil, nil
		}
		at, err := alongAxis(x, args[i], axis)
		if err != nil {
			return nil, nil, fmt.Errorf("operand #%d: %v", i, err)
		}
		return args[i], at, nil
	}
	w, wAt, err := param(1)
	if err != nil {
		return nil, err
	}
	b, bAt, err := param(2)
	if err != nil {
		return nil, err
	}
	p := m.precOf(op, args)
	eps = p.r(eps)
	out := NewTensor(k, x.Shape)
	n := int(x.Shape[axis])
	nf := p.r(float64(n))
	forRows(x.Shape, axis, func(base, stride int) {
		mean := 0.0
		if center {
			s := 0.0
			for j := 0; j < n; j++ {
				s = p.r(s + x.Data[base+j*stride])
			}
			mean = p.r(s / nf)
		}
		ss := 0.0
		for j := 0; j < n; j++ {
			d := p.r(x.Data[base+j*stride] - mean)
			ss = p.r(ss + p.r(d*d))
		}
		r := p.r(1 / math.Sqrt(p.r(p.r(ss/nf)+eps)))
		for j := 0; j < n; j++ {
			off := base + j*stride
			y := p.r(p.r(x.Data[off]-mean) * r)
			if w != nil {
				y = p.r(y * w.Data[wAt(off)])
			}
			if b != nil {
				y = p.r(y + b.Data[bAt(off)])
			}
			out.Data[off] = m.store(y, k)
		}
	})
	return []*Tensor{out}, nil
}

// rowMax is the NaN-propagating maximum of a row.
func rowMax(x *Tensor, base, stride, n int) float64 {
	mx := math.Inf(-1)
	for j := 0; j < n; j++ {
		mx = numeric.Maximum(mx, x.Data[base+j*stride])
	}
	return mx
}

// rowSumExp returns sum(exp(x - mx)) over a row in the op's precision.
func rowSumExp(p prec, x *Tensor, base, stride, n int, mx float64) float64 {
	s := 0.0
	for j := 0; j < n; j++ {
		s = p.r(s + p.r(math.Exp(p.r(x.Data[base+j*stride]-mx))))
	}
	return s
}

// evalSoftmax is `graph.softmax %x {axis = -1}` and `graph.log_softmax`:
// with mx the row maximum, softmax = exp(x - mx) / sum(exp(x - mx)) and
// log_softmax = (x - mx) - log(sum(exp(x - mx))), so neither overflows.
// A row of all -inf, or one holding +inf or NaN, gives NaN (the
// indeterminate -inf - -inf or inf - inf).
func evalSoftmax(m *machine, op *ir.Operation, args []*Tensor) ([]*Tensor, error) {
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
	axis, err := rowAxis(op, x.Rank())
	if err != nil {
		return nil, err
	}
	logForm := op.Name() == "graph.log_softmax"
	p := m.precOf(op, args)
	out := NewTensor(k, x.Shape)
	n := int(x.Shape[axis])
	forRows(x.Shape, axis, func(base, stride int) {
		mx := rowMax(x, base, stride, n)
		s := rowSumExp(p, x, base, stride, n, mx)
		ls := p.r(math.Log(s))
		for j := 0; j < n; j++ {
			off := base + j*stride
			d := p.r(x.Data[off] - mx)
			var y float64
			if logForm {
				y = p.r(d - ls)
			} else {
				y = p.r(p.r(math.Exp(d)) / s)
			}
			out.Data[off] = m.store(y, k)
		}
	})
	return []*Tensor{out}, nil
}

// evalLogSumExp is `graph.logsumexp %x {axis = -1, keepdim = false}`:
// ln(sum(e^x)) = mx + log(sum(exp(x - mx))), which never overflows. A row
// of all -inf gives -inf, a row holding +inf gives +inf, NaN gives NaN, an
// empty row gives -inf (the log of an empty sum).
func evalLogSumExp(m *machine, op *ir.Operation, args []*Tensor) ([]*Tensor, error) {
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
	axis, err := rowAxis(op, x.Rank())
	if err != nil {
		return nil, err
	}
	keep, err := attrBool(op, "keepdim", false)
	if err != nil {
		return nil, err
	}
	dropped, kept := reducedShape(x.Shape, []int{axis})
	outShape := dropped
	if keep {
		outShape = kept
	}
	p := m.precOf(op, args)
	out := NewTensor(k, outShape)
	n := int(x.Shape[axis])
	// Rows come in row-major order of the remaining dims, which is the
	// order of the output's elements.
	o := 0
	forRows(x.Shape, axis, func(base, stride int) {
		mx := rowMax(x, base, stride, n)
		var y float64
		if math.IsInf(mx, 0) || math.IsNaN(mx) {
			y = mx
		} else {
			y = p.r(mx + p.r(math.Log(rowSumExp(p, x, base, stride, n, mx))))
		}
		out.Data[o] = m.store(y, k)
		o++
	})
	return []*Tensor{out}, nil
}
