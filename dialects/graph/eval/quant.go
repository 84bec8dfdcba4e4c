package eval

import (
	"fmt"
	"math"

	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

func init() {
	register(evalQuantize, "graph.quantize")
	register(evalDequantize, "graph.dequantize")
	register(evalRequantize, "graph.requantize")
}

// quantParams gives the scale and zero point that apply to each element of
// x: per tensor from attributes, or per channel from 1-D tensor operands
// along the `axis` attribute.
type quantParams struct {
	scale, zp   float64
	scales, zps *Tensor
	at          func(off int) int
}

func (q *quantParams) get(off int) (scale, zp float64) {
	if q.scales == nil {
		return q.scale, q.zp
	}
	i := q.at(off)
	scale = q.scales.Data[i]
	if q.zps != nil {
		zp = q.zps.Data[i]
	}
	return scale, zp
}

// readQuantParams reads one side of a conversion: with only the operand x,
// the attributes prefix+"scale" and prefix+"zero_point" (default 0);
// otherwise the operands #first (scales) and #first+1 (zero points, which
// may be absent when they are the last operand).
func readQuantParams(op *ir.Operation, args []*Tensor, prefix string, first int) (*quantParams, error) {
	x := args[0]
	if len(args) == 1 {
		if !hasAttr(op, prefix+"scale") {
			return nil, fmt.Errorf("requires a '%sscale' attribute", prefix)
		}
		scale, err := attrFloat(op, prefix+"scale", 1)
		if err != nil {
			return nil, err
		}
		zp, err := attrFloat(op, prefix+"zero_point", 0)
		if err != nil {
			return nil, err
		}
		return &quantParams{scale: scale, zp: zp}, nil
	}
	if x.Rank() == 0 {
		return nil, fmt.Errorf("per-channel parameters need an operand of rank 1 or more")
	}
	axis, err := rowAxis(op, x.Rank())
	if err != nil {
		return nil, err
	}
	if first >= len(args) {
		return nil, fmt.Errorf("per-channel parameters need operand #%d", first)
	}
	q := &quantParams{scales: args[first]}
	params := args[first : first+1]
	if first+1 < len(args) {
		q.zps = args[first+1]
		params = args[first : first+2]
	}
	for i, t := range params {
		if t.Rank() != 1 || t.Shape[0] != x.Shape[axis] {
			return nil, fmt.Errorf("per-channel operand #%d has shape %s, want %d (the extent of axis %d)", first+i, FormatShape(t.Shape), x.Shape[axis], axis)
		}
	}
	q.at, err = alongAxis(x, q.scales, axis)
	return q, err
}

// quantizeValue is saturate(round_half_even(v / scale) + zp) into integer
// kind k, with NaN giving zp; for a float kind (f8) it is v / scale + zp
// saturated to the kind's finite range and rounded to nearest even (NaN
// stays NaN). The division is exact float64 arithmetic on the stored
// values, so ties are decided on the true quotient. round says whether to
// round a float result to k (not under Options.F64).
func quantizeValue(v, scale, zp float64, k ir.ElemKind, round bool) float64 {
	t := v / scale
	if k.IsFloat() {
		t += zp
		if math.IsNaN(t) {
			return t
		}
		lim := numeric.MaxFinite(k)
		t = math.Max(-lim, math.Min(lim, t))
		if round {
			t = numeric.RoundTo(t, k)
		}
		return t
	}
	if math.IsNaN(t) {
		return numeric.SaturateInt(zp, k)
	}
	return numeric.SaturateInt(numeric.RoundHalfEven(t)+zp, k)
}

func checkQuantResult(k ir.ElemKind) error {
	if k.IsInt() || k == ir.F8E4M3FN || k == ir.F8E5M2 {
		return nil
	}
	return fmt.Errorf("result element type must be an integer or f8 type, got %s", k)
}

// evalQuantize is `graph.quantize %x {scale = 0.5 : f32, zero_point = 128}`
// to ui8 [0, 255], i8 [-128, 127], f8E4M3FN [-448, 448] (or any integer or
// f8 type's range), per tensor or per channel
// (`graph.quantize %x, %scale, %zp {axis = 0}`).
func evalQuantize(m *machine, op *ir.Operation, args []*Tensor) ([]*Tensor, error) {
	if err := wantOperands(args, 1, 3); err != nil {
		return nil, err
	}
	k, err := resultElem(op, 0)
	if err != nil {
		return nil, err
	}
	if err := checkQuantResult(k); err != nil {
		return nil, err
	}
	qp, err := readQuantParams(op, args, "", 1)
	if err != nil {
		return nil, err
	}
	x := args[0]
	out := NewTensor(k, x.Shape)
	for i, v := range x.Data {
		scale, zp := qp.get(i)
		out.Data[i] = quantizeValue(v, scale, zp, k, !m.opts.F64)
	}
	return []*Tensor{out}, nil
}

// evalDequantize is `graph.dequantize %q {scale, zero_point}`:
// (q - zero_point) * scale in the op's precision, per tensor or per channel.
func evalDequantize(m *machine, op *ir.Operation, args []*Tensor) ([]*Tensor, error) {
	if err := wantOperands(args, 1, 3); err != nil {
		return nil, err
	}
	k, err := resultElem(op, 0)
	if err != nil {
		return nil, err
	}
	if !k.IsFloat() {
		return nil, fmt.Errorf("result element type must be a float type, got %s", k)
	}
	qp, err := readQuantParams(op, args, "", 1)
	if err != nil {
		return nil, err
	}
	p := m.precOf(op, args)
	x := args[0]
	out := NewTensor(k, x.Shape)
	for i, v := range x.Data {
		scale, zp := qp.get(i)
		out.Data[i] = m.store(p.r(p.r(v-zp)*scale), k)
	}
	return []*Tensor{out}, nil
}

// evalRequantize is `graph.requantize %q {in_scale, in_zero_point, scale,
// zero_point}` = quantize(dequantize(q)): the dequantized value is formed in
// the op's precision, then quantized as graph.quantize does. Per channel,
// operands #1 and #2 are the input side's scales and zero points and #3
// and #4 the output side's, along `axis`.
func evalRequantize(m *machine, op *ir.Operation, args []*Tensor) ([]*Tensor, error) {
	if len(args) != 1 && len(args) != 5 {
		return nil, fmt.Errorf("expects 1 operand (parameters as attributes) or 5, got %d", len(args))
	}
	k, err := resultElem(op, 0)
	if err != nil {
		return nil, err
	}
	if err := checkQuantResult(k); err != nil {
		return nil, err
	}
	in, err := readQuantParams(op, args[:min(len(args), 3)], "in_", 1)
	if err != nil {
		return nil, err
	}
	outq, err := readQuantParams(op, args, "", 3)
	if err != nil {
		return nil, err
	}
	p := m.precOf(op, args)
	x := args[0]
	out := NewTensor(k, x.Shape)
	for i, v := range x.Data {
		inScale, inZP := in.get(i)
		scale, zp := outq.get(i)
		d := p.r(p.r(v-inZP) * inScale)
		out.Data[i] = quantizeValue(d, scale, zp, k, !m.opts.F64)
	}
	return []*Tensor{out}, nil
}
