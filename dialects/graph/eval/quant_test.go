package eval

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

// quantDef is the definition of quantize into an integer range, written
// out independently of the implementation.
func quantDef(x, scale, zp, lo, hi float64) float64 {
	if math.IsNaN(x) {
		return zp
	}
	q := math.RoundToEven(x/scale) + zp
	return math.Max(lo, math.Min(hi, q))
}

// allF16 is a tensor holding every f16 bit pattern.
func allF16() *Tensor {
	x := NewTensor(ir.F16, []int64{1 << 16})
	for b := range x.Data {
		x.Data[b] = float64(numeric.F16FromBits(uint16(b)))
	}
	return x
}

func quantAttrs(scale float64, zp int64) ir.AttrDict {
	return ir.Attrs("scale", ir.FloatAttr{Value: scale}, "zero_point", ir.IntAttr{Value: zp})
}

// TestQuantizeEveryF16 quantizes all 65536 f16 values to ui8 and i8 with
// several scales (ties are frequent with power-of-two scales) and expects
// no mismatch with the definition, in both modes.
func TestQuantizeEveryF16(t *testing.T) {
	x := allF16()
	n := int64(len(x.Data))
	for _, c := range []struct {
		k      ir.ElemKind
		lo, hi float64
		zp     int64
	}{{ir.UI8, 0, 255, 128}, {ir.UI8, 0, 255, 0}, {ir.I8, -128, 127, 0}, {ir.I8, -128, 127, -3}} {
		for _, scale := range []float64{0.5, 1, 0.1, 1.0 / 3, math.Ldexp(1, -10), 1000} {
			for _, opts := range []Options{defOpt, refOpt} {
				got := mustOp(t, "graph.quantize", quantAttrs(scale, c.zp), tt(c.k, n), opts, x)
				s := f32(scale) // the attribute is an f32
				bad := 0
				for i, v := range x.Data {
					if got.Data[i] != quantDef(v, s, float64(c.zp), c.lo, c.hi) {
						bad++
					}
				}
				assert.Zero(t, bad, "%s scale %v zero_point %d F64=%v: mismatches", c.k, scale, c.zp, opts.F64)
			}
		}
	}
}

// nearestE4M3 rounds v (finite, |v| <= 448) to the nearest f8E4M3FN value by
// searching every finite value, ties to the even bit pattern.
func nearestE4M3(v float64, vals []float64, bits []uint64) float64 {
	best := 0
	for i := range vals {
		d, bd := math.Abs(v-vals[i]), math.Abs(v-vals[best])
		if d < bd || (d == bd && bits[i]&1 == 0 && bits[best]&1 == 1) {
			best = i
		}
	}
	r := vals[best]
	if r == 0 {
		return math.Copysign(0, v)
	}
	return r
}

func TestQuantizeEveryF16ToF8(t *testing.T) {
	var vals []float64
	var bits []uint64
	for b := uint64(0); b < 256; b++ {
		if v, _ := numeric.FromBits(b, ir.F8E4M3FN); !math.IsNaN(v) {
			vals = append(vals, v)
			bits = append(bits, b)
		}
	}
	require.Len(t, vals, 254)

	x := allF16()
	n := int64(len(x.Data))
	for _, scale := range []float64{1, 0.25, 3} {
		got := mustOp(t, "graph.quantize", quantAttrs(scale, 0), tt(ir.F8E4M3FN, n), defOpt, x)
		bad := 0
		for i, v := range x.Data {
			q := v/f32(scale) + 0 // + zero_point, which makes -0 +0
			var want float64
			if math.IsNaN(q) {
				want = nan
			} else {
				want = nearestE4M3(math.Max(-448, math.Min(448, q)), vals, bits)
			}
			if !same(want, got.Data[i]) {
				bad++
			}
		}
		assert.Zero(t, bad, "f8E4M3FN scale %v: mismatches", scale)
	}
}

func TestQuantizeEdges(t *testing.T) {
	x := vec(t, ir.F32, 0.25, 0.75, -0.25, -0.75, nan, inf, -inf, 1e30, -1e30, 63.75, 64.25, sub32, negZ)
	got := mustOp(t, "graph.quantize", quantAttrs(0.5, 0), tt(ir.I8, 13), defOpt, x)
	checkValues(t, "i8", []float64{0, 2, 0, -2, 0, 127, -128, 127, -128, 127, 127, 0, 0}, got, exact)
	got = mustOp(t, "graph.quantize", quantAttrs(0.5, 128), tt(ir.UI8, 13), defOpt, x)
	checkValues(t, "ui8", []float64{128, 130, 128, 126, 128, 255, 0, 255, 0, 255, 255, 128, 128}, got, exact)
	// the example's zero_point defaults to 0 and may be omitted
	got = mustOp(t, "graph.quantize", ir.Attrs("scale", ir.FloatAttr{Value: 2}), tt(ir.UI8, 3), defOpt, vec(t, ir.F32, 3, 5, -3))
	checkValues(t, "default zero point", []float64{2, 2, 0}, got, exact)

	y := vec(t, ir.F32, 1000, -inf, nan, 0.3, 464, 465, -0.0009, 0.001)
	got = mustOp(t, "graph.quantize", quantAttrs(1, 0), tt(ir.F8E4M3FN, 8), defOpt, y)
	checkValues(t, "f8", []float64{448, -448, nan, numeric.RoundTo(f32(0.3), ir.F8E4M3FN), 448, 448, negZ, math.Ldexp(1, -9)}, got, exact)
	got = mustOp(t, "graph.quantize", quantAttrs(1, 0), tt(ir.F8E4M3FN, 8), refOpt, y)
	checkValues(t, "f8 unrounded under F64", []float64{448, -448, nan, f32(0.3), 448, 448, f32(-0.0009), f32(0.001)}, got, exact)
}

func TestPerChannelQuantize(t *testing.T) {
	x := mk(t, ir.F32, []int64{2, 3}, 1, 2, 3, -1, -2, 300)
	scales0 := vec(t, ir.F32, 0.5, 2)
	zps0 := vec(t, ir.I32, 0, 10)
	got := mustOp(t, "graph.quantize", ir.Attrs("axis", ir.IntAttr{Value: 0}), tt(ir.UI8, 2, 3), defOpt, x, scales0, zps0)
	checkValues(t, "axis 0", []float64{2, 4, 6, 10, 9, 160}, got, exact)
	scales1 := vec(t, ir.F32, 1, 0.5, 0.25)
	got = mustOp(t, "graph.quantize", nil, tt(ir.I8, 2, 3), defOpt, x, scales1)
	checkValues(t, "axis -1", []float64{1, 4, 12, -1, -4, 127}, got, exact)
	_, err := evalOp("graph.quantize", nil, tt(ir.I8, 2, 3), defOpt, x, scales0)
	assert.ErrorContains(t, err, "per-channel operand #1 has shape 2, want 3")

	q := mk(t, ir.UI8, []int64{2, 3}, 2, 4, 6, 10, 9, 160)
	got = mustOp(t, "graph.dequantize", ir.Attrs("axis", ir.IntAttr{Value: 0}), tt(ir.F32, 2, 3), defOpt, q, scales0, zps0)
	checkValues(t, "dequantize axis 0", []float64{1, 2, 3, 0, -2, 300}, got, exact)
}

func TestDequantizeRequantize(t *testing.T) {
	q := vec(t, ir.UI8, 0, 128, 255)
	got := mustOp(t, "graph.dequantize", quantAttrs(0.5, 128), tt(ir.F32, 3), defOpt, q)
	checkValues(t, "dequantize", []float64{-64, 0, 63.5}, got, exact)
	got = mustOp(t, "graph.dequantize", quantAttrs(0.1, 0), tt(ir.BF16, 3), defOpt, q)
	checkValues(t, "dequantize bf16", []float64{0, numeric.RoundTo(f32(128*f32(0.1)), ir.BF16), numeric.RoundTo(f32(255*f32(0.1)), ir.BF16)}, got, exact)

	r := vec(t, ir.I32, -1000, 0, 3, 5, 1000000, 6)
	attrs := ir.Attrs("in_scale", ir.FloatAttr{Value: 0.25}, "in_zero_point", ir.IntAttr{Value: 0},
		"scale", ir.FloatAttr{Value: 0.5}, "zero_point", ir.IntAttr{Value: 0})
	got = mustOp(t, "graph.requantize", attrs, tt(ir.I8, 6), defOpt, r)
	// r * 0.25 / 0.5 = r / 2, ties to even, saturated
	checkValues(t, "requantize", []float64{-128, 0, 2, 2, 127, 3}, got, exact)
	attrs.Set("in_zero_point", ir.IntAttr{Value: 4})
	attrs.Set("zero_point", ir.IntAttr{Value: 100})
	got = mustOp(t, "graph.requantize", attrs, tt(ir.UI8, 6), defOpt, r)
	// (r - 4) / 2 + 100
	checkValues(t, "requantize ui8", []float64{0, 98, 100, 100, 255, 101}, got, exact)

	// per channel along axis 0: rows use (in 0.25, 4 -> out 0.5, 100) and
	// (in 1, 0 -> out 1, 0)
	r2 := mk(t, ir.I32, []int64{2, 3}, -1000, 0, 6, 5, -300, 7)
	got = mustOp(t, "graph.requantize", ir.Attrs("axis", ir.IntAttr{Value: 0}), tt(ir.I8, 2, 3), defOpt, r2,
		vec(t, ir.F32, 0.25, 1), vec(t, ir.I32, 4, 0), vec(t, ir.F32, 0.5, 1), vec(t, ir.I32, 100, 0))
	checkValues(t, "requantize per channel", []float64{-128, 98, 101, 5, -128, 7}, got, exact)
	_, err := evalOp("graph.requantize", nil, tt(ir.I8, 2, 3), defOpt, r2, vec(t, ir.F32, 0.25, 1))
	assert.ErrorContains(t, err, "expects 1 operand (parameters as attributes) or 5, got 2")
}
