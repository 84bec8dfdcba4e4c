package graph

import (
	"math"

	"github.com/tensorforge/tensorforge/ir"
)

// This file holds the rules of the quantisation classes: Quantize,
// Dequantize and Requantize. Each side of a conversion (requantize has
// two) has its parameters either per tensor, as the attributes
//
//	%q = graph.quantize %x {scale = 0.5 : f32, zero_point = 128} : (tensor<4x8xf32>) -> tensor<4x8xui8>
//
// or per channel, as 1-D operands along `axis`:
//
//	%q = graph.quantize %x, %s, %z {axis = 1} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xi32>) -> tensor<4x8xi8>

// QuantRange returns the range quantised values of kind k saturate to:
// the integer range of an integer kind, [-448, 448] for f8E4M3FN.
func QuantRange(k ir.ElemKind) (lo, hi int64) {
	if k == ir.F8E4M3FN {
		return -448, 448
	}
	return k.IntRange()
}

// quantSide is one side of a conversion. Its parameters are the
// attributes prefix+"scale" and prefix+"zero_point", or the operands
// prefix+"scales" and prefix+"zero_points" (numbers first and first+1);
// elem is the quantised type that bounds its zero point.
type quantSide struct {
	prefix    string
	scale     float64
	zeroPoint int64
	first     int
	elem      ir.ElemType
}

func verifyQuantize(op *ir.Operation) error {
	qo, out := QuantizeOp{op}, resultType(op, 0)
	return checkQuant(op, qo.Axis(), quantSide{"", qo.Scale(), qo.ZeroPoint(), 1, out.Elem})
}

func verifyDequantize(op *ir.Operation) error {
	dq, in := DequantizeOp{op}, operandType(op, 0)
	return checkQuant(op, dq.Axis(), quantSide{"", dq.Scale(), dq.ZeroPoint(), 1, in.Elem})
}

func verifyRequantize(op *ir.Operation) error {
	rq, in, out := RequantizeOp{op}, operandType(op, 0), resultType(op, 0)
	return checkQuant(op, rq.Axis(),
		quantSide{"in_", rq.InScale(), rq.InZeroPoint(), 1, in.Elem},
		quantSide{"", rq.Scale(), rq.ZeroPoint(), 3, out.Elem})
}

// checkQuant checks the shapes, `dtype` and the parameters of every side.
//
//	attribute 'axis' is only valid with per-channel scales and zero points
//	attribute 'scale' must be positive and finite, but got 0.0
//	attribute 'zero_point' (300) is out of range [0, 255] of 'ui8'
//	attribute 'scale' cannot be combined with per-channel scales and zero points
//	operand 'scales' must have shape [8] (dimension 1 of the input), but got 'tensor<4xf32>'
func checkQuant(op *ir.Operation, axis int64, sides ...quantSide) error {
	if err := checkSameShape(op); err != nil {
		return err
	}
	if err := checkDtype(op, resultType(op, 0).Elem); err != nil {
		return err
	}
	if op.NumOperands() == 1 {
		if op.Attr("axis") != nil {
			return ir.OpError(op, "attribute 'axis' is only valid with per-channel scales and zero points")
		}
		for _, s := range sides {
			if !(s.scale > 0) || math.IsInf(s.scale, 0) {
				return ir.OpError(op, "attribute '%sscale' must be positive and finite, but got %s", s.prefix, ir.FormatFloat(s.scale, ir.F64))
			}
			if lo, hi := QuantRange(s.elem.Kind); s.zeroPoint < lo || s.zeroPoint > hi {
				return ir.OpError(op, "attribute '%szero_point' (%d) is out of range [%d, %d] of %s", s.prefix, s.zeroPoint, lo, hi, q(s.elem))
			}
		}
		return nil
	}
	for _, s := range sides {
		for _, name := range []string{s.prefix + "scale", s.prefix + "zero_point"} {
			if op.Attr(name) != nil {
				return ir.OpError(op, "attribute '%s' cannot be combined with per-channel scales and zero points", name)
			}
		}
	}
	in := operandType(op, 0)
	norm, err := NormalizeAxes([]int64{axis}, in.Rank())
	if err != nil {
		return ir.OpError(op, "%v", err)
	}
	d := norm[0]
	for _, s := range sides {
		for i, name := range []string{s.prefix + "scales", s.prefix + "zero_points"} {
			if s.first+i >= op.NumOperands() {
				continue // zero points left out (dequantize): all 0
			}
			t := operandType(op, s.first+i)
			if len(t.Shape) != 1 || !extentsAgree(t.Shape[0], in.Shape[d]) {
				return ir.OpError(op, "operand '%s' must have shape %s (dimension %d of the input), but got %s",
					name, FormatShape(in.Shape[d:d+1]), d, q(t))
			}
		}
	}
	return nil
}

// extentsAgree reports whether two extents can be equal at run time.
func extentsAgree(a, b int64) bool { return a == b || a == ir.Dynamic || b == ir.Dynamic }
