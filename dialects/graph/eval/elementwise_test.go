package eval

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

func f32(v float64) float64 { return float64(float32(v)) }

// sub32 is the smallest float32 subnormal.
var sub32 = math.Ldexp(1, -149)

// TestUnaryF32 checks every unary op on ordinary values, edge values and
// subnormals against float64 values worked out by hand (closed forms or
// published constants), within 1 f32 ULP, and exactly where the result is
// exact.
func TestUnaryF32(t *testing.T) {
	type tc struct {
		in, want float64
		ulps     float64
	}
	cases := map[string][]tc{
		"graph.neg":        {{1.5, -1.5, 0}, {0, negZ, 0}, {negZ, 0, 0}, {inf, -inf, 0}, {nan, nan, 0}, {sub32, -sub32, 0}},
		"graph.abs":        {{-1.5, 1.5, 0}, {negZ, 0, 0}, {-inf, inf, 0}, {nan, nan, 0}, {-sub32, sub32, 0}},
		"graph.exp":        {{1, math.E, 1}, {0, 1, 0}, {-inf, 0, 0}, {inf, inf, 0}, {nan, nan, 0}, {88, 1.6516362549940018e38, 1}, {89, inf, 0}, {-104, 0, 0}, {sub32, 1, 0}, {-1e30, 0, 0}},
		"graph.exp2":       {{10, 1024, 0}, {-1, 0.5, 0}, {-149, sub32, 0}, {128, inf, 0}, {-inf, 0, 0}},
		"graph.log":        {{math.E, 1, 1}, {1, 0, 0}, {0, -inf, 0}, {negZ, -inf, 0}, {-1, nan, 0}, {inf, inf, 0}, {-inf, nan, 0}, {sub32, -103.27892990343184, 1}},
		"graph.log2":       {{8, 3, 0}, {0.125, -3, 0}, {sub32, -149, 0}, {0, -inf, 0}, {-2, nan, 0}},
		"graph.log1p":      {{1e-10, 1e-10, 1}, {-1, -inf, 0}, {-2, nan, 0}, {math.E - 1, 1, 1}, {negZ, negZ, 0}, {inf, inf, 0}},
		"graph.expm1":      {{1e-10, 1e-10, 1}, {1, math.E - 1, 1}, {-inf, -1, 0}, {negZ, negZ, 0}, {89, inf, 0}},
		"graph.sqrt":       {{4, 2, 0}, {2, math.Sqrt2, 1}, {negZ, negZ, 0}, {-1, nan, 0}, {inf, inf, 0}, {sub32, math.Sqrt2 * math.Ldexp(1, -75), 1}},
		"graph.rsqrt":      {{4, 0.5, 0}, {0, inf, 0}, {negZ, -inf, 0}, {inf, 0, 0}, {-1, nan, 0}, {sub32, math.Sqrt2 * math.Ldexp(1, 74), 1}},
		"graph.reciprocal": {{4, 0.25, 0}, {0, inf, 0}, {negZ, -inf, 0}, {-inf, negZ, 0}, {3, 1.0 / 3, 1}, {sub32, inf, 0}},
		"graph.tanh":       {{1, 0.7615941559557649, 1}, {inf, 1, 0}, {-inf, -1, 0}, {negZ, negZ, 0}, {20, 1, 0}, {nan, nan, 0}},
		"graph.sigmoid":    {{0, 0.5, 0}, {1, 0.7310585786300049, 1}, {-1, 0.2689414213699951, 1}, {inf, 1, 0}, {-inf, 0, 0}, {-1e4, 0, 0}, {1e4, 1, 0}, {nan, nan, 0}, {-100, 3.720075976020836e-44, 1}},
		"graph.silu":       {{1, 0.7310585786300049, 1}, {-1, -0.2689414213699951, 1}, {0, 0, 0}, {inf, inf, 0}, {-inf, negZ, 0}, {-1e4, negZ, 0}, {1e30, 1e30, 1}, {nan, nan, 0}},
		"graph.relu":       {{1.5, 1.5, 0}, {-1.5, 0, 0}, {negZ, 0, 0}, {nan, nan, 0}, {-inf, 0, 0}, {inf, inf, 0}, {sub32, sub32, 0}},
		"graph.sin":        {{math.Pi / 2, 1, 1}, {negZ, negZ, 0}, {inf, nan, 0}, {nan, nan, 0}},
		"graph.cos":        {{0, 1, 0}, {math.Pi, -1, 1}, {-inf, nan, 0}},
		"graph.floor":      {{-0.5, -1, 0}, {2.7, 2, 0}, {negZ, negZ, 0}, {-inf, -inf, 0}, {sub32, 0, 0}, {-sub32, -1, 0}},
		"graph.ceil":       {{-0.5, negZ, 0}, {2.1, 3, 0}, {inf, inf, 0}, {sub32, 1, 0}},
		"graph.round":      {{0.5, 0, 0}, {1.5, 2, 0}, {2.5, 2, 0}, {-2.5, -2, 0}, {-0.5, negZ, 0}, {2.6, 3, 0}, {nan, nan, 0}, {8388609, 8388609, 0}},
	}
	for name, cs := range cases {
		in := make([]float64, len(cs))
		for i, c := range cs {
			in[i] = c.in
		}
		out := mustOp(t, name, nil, tt(ir.F32, int64(len(cs))), defOpt, vec(t, ir.F32, in...))
		for i, c := range cs {
			g := out.Data[i]
			assert.True(t, same(g, f32(g)), "%s(%v) = %v is not a float32", name, c.in, g)
			if c.ulps == 0 {
				assert.True(t, same(c.want, g), "%s(%v) = %v, want %v", name, c.in, g, c.want)
			} else {
				assert.LessOrEqual(t, numeric.ULPDiff(c.want, g, ir.F32), c.ulps, "%s(%v) = %v, want %v", name, c.in, g, c.want)
			}
		}
	}
}

func TestGelu(t *testing.T) {
	in := vec(t, ir.F32, 1, -1, 0, 3, -inf, inf, nan, -40, 1e30)
	// x * Phi(x), Phi from the normal distribution table to 16 digits
	exactWant := []float64{0.8413447460685429, -0.15865525393145707, 0, 2.99595030590511, negZ, inf, nan, negZ, 1e30}
	// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
	tanhWant := []float64{0.8411919906082768, -0.15880800939172324, 0, 2.996362607918227, negZ, inf, nan, negZ, 1e30}
	got := mustOp(t, "graph.gelu", nil, tt(ir.F32, 9), defOpt, in)
	checkValues(t, "gelu", exactWant, got, 1)
	assert.True(t, same(negZ, got.Data[4]) && same(negZ, got.Data[7]) && math.IsNaN(got.Data[6]))
	got = mustOp(t, "graph.gelu", ir.Attrs("approximate", ir.StringAttr("none")), tt(ir.F32, 9), defOpt, in)
	checkValues(t, "gelu none", exactWant, got, 1)
	got = mustOp(t, "graph.gelu", ir.Attrs("approximate", ir.StringAttr("tanh")), tt(ir.F32, 9), defOpt, in)
	checkValues(t, "gelu tanh", tanhWant, got, 1)
	assert.True(t, same(negZ, got.Data[4]))
}

// TestUnaryStoreRounding checks that f16/bf16/f8 results are f32 results
// rounded to nearest even when stored, and not rounded under F64.
func TestUnaryStoreRounding(t *testing.T) {
	in := []float64{1, 12, -1, 0.1}
	for _, k := range []ir.ElemKind{ir.F16, ir.BF16, ir.F8E4M3FN, ir.F8E5M2} {
		x := vec(t, k, in...)
		got := mustOp(t, "graph.exp", nil, tt(k, 4), defOpt, x)
		ref := mustOp(t, "graph.exp", nil, tt(k, 4), refOpt, x)
		for i, v := range x.Data {
			want := numeric.RoundTo(f32(math.Exp(v)), k)
			assert.True(t, same(want, got.Data[i]), "%s exp(%v) = %v, want %v", k, v, got.Data[i], want)
			assert.Equal(t, math.Exp(v), ref.Data[i], "%s exp(%v) under F64", k, v)
		}
	}
	// exp(12) = 162754.79 overflows f16 and f8E5M2, and is NaN in f8E4M3FN
	got := mustOp(t, "graph.exp", nil, tt(ir.F16, 1), defOpt, vec(t, ir.F16, 12))
	assert.True(t, math.IsInf(got.Data[0], 1))
	got = mustOp(t, "graph.exp", nil, tt(ir.F8E4M3FN, 1), defOpt, vec(t, ir.F8E4M3FN, 12))
	assert.True(t, math.IsNaN(got.Data[0]))
	got = mustOp(t, "graph.exp", nil, tt(ir.BF16, 1), defOpt, vec(t, ir.BF16, 1))
	assert.Equal(t, 2.71875, got.Data[0])
	// f64 tensors compute in float64 even without F64
	got = mustOp(t, "graph.exp", nil, tt(ir.F64, 1), defOpt, vec(t, ir.F64, 1))
	assert.Equal(t, math.E, got.Data[0])
}

func TestIntUnary(t *testing.T) {
	x := vec(t, ir.I8, -128, -5, 0, 7, 127)
	checkValues(t, "neg", []float64{-128, 5, 0, -7, -127}, mustOp(t, "graph.neg", nil, tt(ir.I8, 5), defOpt, x), exact)
	checkValues(t, "abs", []float64{-128, 5, 0, 7, 127}, mustOp(t, "graph.abs", nil, tt(ir.I8, 5), defOpt, x), exact)
	checkValues(t, "relu", []float64{0, 0, 0, 7, 127}, mustOp(t, "graph.relu", nil, tt(ir.I8, 5), defOpt, x), exact)
	checkValues(t, "round", []float64{-128, -5, 0, 7, 127}, mustOp(t, "graph.round", nil, tt(ir.I8, 5), defOpt, x), exact)
}

func TestBinaryF32(t *testing.T) {
	type tc struct{ a, b, want float64 }
	cases := map[string][]tc{
		"graph.add": {{1, 2, 3}, {inf, -inf, nan}, {negZ, negZ, negZ}, {negZ, 0, 0}, {1, 1e-8, 1}, {3.4e38, 3.4e38, inf}, {sub32, sub32, 2 * sub32}},
		"graph.sub": {{1, 3, -2}, {inf, inf, nan}, {0, 0, 0}, {negZ, 0, negZ}},
		"graph.mul": {{1.5, -2, -3}, {0, inf, nan}, {negZ, 5, negZ}, {1e20, 1e20, inf}, {sub32, 0.5, 0}},
		"graph.div": {{1, 4, 0.25}, {1, 0, inf}, {-1, 0, -inf}, {1, negZ, -inf}, {0, 0, nan}, {inf, inf, nan}, {1, inf, 0}},
		"graph.max": {{1, 2, 2}, {nan, 1, nan}, {1, nan, nan}, {0, negZ, 0}, {negZ, 0, 0}, {-inf, -1, -1}},
		"graph.min": {{1, 2, 1}, {nan, 1, nan}, {0, negZ, negZ}, {negZ, 0, negZ}, {inf, 1, 1}},
		"graph.pow": {{2, 10, 1024}, {nan, 0, 1}, {1, nan, 1}, {-8, 1.0 / 3, nan}, {0, -1, inf}, {negZ, -1, -inf}, {-2, 3, -8}, {10, 39, inf}},
		// ln(e^a + e^b) by its definition; never overflows for finite inputs
		"graph.logaddexp": {
			{0, 0, math.Ln2}, {inf, inf, inf}, {-inf, -inf, -inf}, {inf, -inf, inf}, {-inf, 3, 3},
			{nan, 1, nan}, {1, nan, nan}, {88.73, 88.73, f32(88.73) + math.Ln2}, {1000, 1000, 1000 + math.Ln2},
			{1e30, 1e30, 1e30}, {-1e30, 1e30, 1e30}, {1, 2, 2.3132616875182228}, {-1e4, -1e4 + 1, -1e4 + 1.3132616875182228},
		},
		"graph.logaddexp2": {{3, 3, 4}, {10, 0, 10.001408194392809}, {-inf, -inf, -inf}, {inf, inf, inf}, {nan, 0, nan}, {200, 200, 201}},
	}
	for name, cs := range cases {
		var as, bs []float64
		for _, c := range cs {
			as = append(as, c.a)
			bs = append(bs, c.b)
		}
		n := int64(len(cs))
		out := mustOp(t, name, nil, tt(ir.F32, n), defOpt, vec(t, ir.F32, as...), vec(t, ir.F32, bs...))
		for i, c := range cs {
			// within 1 f32 ULP of the definition, exact for the special values
			want, g := c.want, out.Data[i]
			if math.IsInf(want, 0) || math.IsNaN(want) || want == 0 {
				assert.True(t, same(want, g), "%s(%v, %v) = %v, want %v", name, c.a, c.b, g, want)
				continue
			}
			assert.LessOrEqual(t, numeric.ULPDiff(want, g, ir.F32), 1.0, "%s(%v, %v) = %v, want %v", name, c.a, c.b, g, want)
		}
	}
}

func TestLogAddExpF64Reference(t *testing.T) {
	// In F64 mode the definition holds to float64 precision.
	a := vec(t, ir.F32, 1, 2, -3)
	b := vec(t, ir.F32, 1.5, -40, -3)
	got := mustOp(t, "graph.logaddexp", nil, tt(ir.F32, 3), refOpt, a, b)
	for i := range a.Data {
		want := math.Log(math.Exp(a.Data[i]) + math.Exp(b.Data[i]))
		assert.InDelta(t, want, got.Data[i], 4e-16*math.Abs(want))
	}
}

func TestBroadcasting(t *testing.T) {
	a := mk(t, ir.F32, []int64{2, 3}, 1, 2, 3, 4, 5, 6)
	row := vec(t, ir.F32, 10, 20, 30)
	col := mk(t, ir.F32, []int64{2, 1}, 100, 200)
	s := Scalar(ir.F32, 0.5)
	checkValues(t, "[2,3]+[3]", []float64{11, 22, 33, 14, 25, 36}, mustOp(t, "graph.add", nil, tt(ir.F32, 2, 3), defOpt, a, row), exact)
	checkValues(t, "[3]+[2,3]", []float64{11, 22, 33, 14, 25, 36}, mustOp(t, "graph.add", nil, tt(ir.F32, 2, 3), defOpt, row, a), exact)
	checkValues(t, "[2,1]*[3]", []float64{1000, 2000, 3000, 2000, 4000, 6000}, mustOp(t, "graph.mul", nil, tt(ir.F32, 2, 3), defOpt, col, row), exact)
	checkValues(t, "[2,3]*[]", []float64{0.5, 1, 1.5, 2, 2.5, 3}, mustOp(t, "graph.mul", nil, tt(ir.F32, 2, 3), defOpt, a, s), exact)
	// three-way in select, and rank 3 against rank 1
	b3 := NewTensor(ir.F32, []int64{2, 1, 3})
	for i := range b3.Data {
		b3.Data[i] = float64(i)
	}
	got := mustOp(t, "graph.sub", nil, tt(ir.F32, 2, 2, 3), defOpt, b3, mk(t, ir.F32, []int64{2, 1}, 0, 10))
	checkValues(t, "[2,1,3]-[2,1]", []float64{0, 1, 2, -10, -9, -8, 3, 4, 5, -7, -6, -5}, got, exact)
	_, err := evalOp("graph.add", nil, tt(ir.F32, 2, 3), defOpt, a, vec(t, ir.F32, 1, 2))
	assert.ErrorContains(t, err, "shapes 2x3, 2 do not broadcast")
}

func TestIntBinaryWraps(t *testing.T) {
	i8 := func(vs ...float64) *Tensor { return vec(t, ir.I8, vs...) }
	checkValues(t, "i8 add", []float64{-56, 0, -2}, mustOp(t, "graph.add", nil, tt(ir.I8, 3), defOpt, i8(100, -1, 127), i8(100, 1, 127)), exact)
	checkValues(t, "i8 sub", []float64{127, -128}, mustOp(t, "graph.sub", nil, tt(ir.I8, 2), defOpt, i8(-128, 0), i8(1, -128)), exact)
	checkValues(t, "i8 mul", []float64{16, -128}, mustOp(t, "graph.mul", nil, tt(ir.I8, 2), defOpt, i8(4, 64), i8(4, 2)), exact)
	checkValues(t, "i8 div", []float64{-3, 3, -128}, mustOp(t, "graph.div", nil, tt(ir.I8, 3), defOpt, i8(-7, -7, -128), i8(2, -2, -1)), exact)
	checkValues(t, "i8 max/min", []float64{5, -3}, mustOp(t, "graph.max", nil, tt(ir.I8, 2), defOpt, i8(5, -3), i8(-5, -4)), exact)
	u := vec(t, ir.UI8, 0, 200)
	checkValues(t, "ui8 sub", []float64{255, 100}, mustOp(t, "graph.sub", nil, tt(ir.UI8, 2), defOpt, u, vec(t, ir.UI8, 1, 100)), exact)
	checkValues(t, "ui8 add", []float64{1, 44}, mustOp(t, "graph.add", nil, tt(ir.UI8, 2), defOpt, u, vec(t, ir.UI8, 1, 100)), exact)
	// i32 products beyond 2^53 are exact in integer arithmetic
	big := vec(t, ir.I32, 2147483647, -2147483648)
	checkValues(t, "i32 mul", []float64{1, 0}, mustOp(t, "graph.mul", nil, tt(ir.I32, 2), defOpt, big, big), exact)
	checkValues(t, "ui32 mul", []float64{1}, mustOp(t, "graph.mul", nil, tt(ir.UI32, 1), defOpt, vec(t, ir.UI32, 4294967295), vec(t, ir.UI32, 4294967295)), exact)
}

func TestCmpSelect(t *testing.T) {
	a := vec(t, ir.F32, 1, 2, nan, negZ, -inf)
	b := vec(t, ir.F32, 2, 2, nan, 0, -inf)
	want := map[string][]float64{
		"eq": {0, 1, 0, 1, 1}, "ne": {1, 0, 1, 0, 0}, "lt": {1, 0, 0, 0, 0},
		"le": {1, 1, 0, 1, 1}, "gt": {0, 0, 0, 0, 0}, "ge": {0, 1, 0, 1, 1},
	}
	for pred, w := range want {
		got := mustOp(t, "graph.cmp", ir.Attrs("predicate", ir.StringAttr(pred)), tt(ir.I1, 5), defOpt, a, b)
		checkValues(t, "cmp "+pred, w, got, exact)
		assert.Equal(t, ir.I1, got.Elem)
	}
	// integers compare exactly, with broadcasting
	got := mustOp(t, "graph.cmp", ir.Attrs("predicate", ir.StringAttr("lt")), tt(ir.I1, 3), defOpt, vec(t, ir.I32, -5, 0, 5), Scalar(ir.I32, 0))
	checkValues(t, "cmp i32", []float64{1, 0, 0}, got, exact)

	c := vec(t, ir.I1, 1, 0, 1)
	sel := mustOp(t, "graph.select", nil, tt(ir.F32, 2, 3), defOpt, c, mk(t, ir.F32, []int64{2, 1}, 1, 2), Scalar(ir.F32, nan))
	checkValues(t, "select", []float64{1, nan, 1, 2, nan, 2}, sel, exact)
}

func TestClamp(t *testing.T) {
	x := vec(t, ir.F32, -2, 0.5, 3, nan, -inf, inf, negZ)
	got := mustOp(t, "graph.clamp", ir.Attrs("min", ir.FloatAttr{Value: -1}, "max", ir.FloatAttr{Value: 1}), tt(ir.F32, 7), defOpt, x)
	checkValues(t, "clamp", []float64{-1, 0.5, 1, nan, -1, 1, negZ}, got, exact)
	got = mustOp(t, "graph.clamp", ir.Attrs("min", ir.FloatAttr{Value: 0}), tt(ir.F32, 7), defOpt, x)
	// min(max(x, 0), inf) with graph.max's order: -0 is below +0, so it clamps to +0
	checkValues(t, "clamp min only", []float64{0, 0.5, 3, nan, 0, inf, 0}, got, exact)
	// bounds are f32 attributes and the result is stored as bf16
	got = mustOp(t, "graph.clamp", ir.Attrs("max", ir.FloatAttr{Value: 0.1}), tt(ir.BF16, 1), defOpt, vec(t, ir.BF16, 1))
	checkValues(t, "clamp bf16", []float64{numeric.RoundTo(0.1, ir.BF16)}, got, exact)
	got = mustOp(t, "graph.clamp", ir.Attrs("min", ir.IntAttr{Value: 0}, "max", ir.IntAttr{Value: 1000}), tt(ir.I8, 3), defOpt, vec(t, ir.I8, -128, 5, 127))
	checkValues(t, "clamp i8", []float64{0, 5, 127}, got, exact)
	// bounds as operands
	got = mustOp(t, "graph.clamp", nil, tt(ir.F32, 2), defOpt, vec(t, ir.F32, 5, -5), vec(t, ir.F32, 0, -1), Scalar(ir.F32, 2))
	checkValues(t, "clamp operands", []float64{2, -1}, got, exact)
}

func TestCast(t *testing.T) {
	x := vec(t, ir.F32, 300.7, -1.5, nan, inf, -inf, 3e9, -0.9, 127.9)
	checkValues(t, "f32->i8 (wraps)", []float64{44, -1, 0, 0, 0, 0, 0, 127}, mustOp(t, "graph.cast", nil, tt(ir.I8, 8), defOpt, x), exact)
	checkValues(t, "f32->ui8 (wraps)", []float64{44, 255, 0, 0, 0, 0, 0, 127}, mustOp(t, "graph.cast", nil, tt(ir.UI8, 8), defOpt, x), exact)
	checkValues(t, "f32->i32", []float64{300, -1, 0, 0, 0, -1294967296, 0, 127}, mustOp(t, "graph.cast", nil, tt(ir.I32, 8), defOpt, x), exact)
	checkValues(t, "f32->ui32", []float64{300, 4294967295, 0, 0, 0, 3e9, 0, 127}, mustOp(t, "graph.cast", nil, tt(ir.UI32, 8), defOpt, x), exact)
	m64 := float64(math.MinInt64)
	checkValues(t, "f32->i64", []float64{300, -1, m64, m64, m64, 3e9, 0, 127}, mustOp(t, "graph.cast", nil, tt(ir.I64, 8), defOpt, x), exact)
	checkValues(t, "f32->i1", []float64{0, 1, 0, 0, 0, 0, 0, 1}, mustOp(t, "graph.cast", nil, tt(ir.I1, 8), defOpt, x), exact)
	// same under F64: integer semantics do not change
	checkValues(t, "f32->i8 F64", []float64{44, -1, 0, 0, 0, 0, 0, 127}, mustOp(t, "graph.cast", nil, tt(ir.I8, 8), refOpt, x), exact)

	// float to float rounds to nearest even; f8E4M3FN has no inf
	y := vec(t, ir.F32, 1+math.Ldexp(1, -8), 1+3*math.Ldexp(1, -8), 500, 464, -inf, sub32, 65520)
	checkValues(t, "f32->bf16", []float64{1, 1 + math.Ldexp(1, -6), 500, 464, -inf, 0, 65536}, mustOp(t, "graph.cast", nil, tt(ir.BF16, 7), defOpt, y), exact)
	checkValues(t, "f32->f8E4M3FN", []float64{1, 1, nan, 448, nan, 0, nan}, mustOp(t, "graph.cast", nil, tt(ir.F8E4M3FN, 7), defOpt, y), exact)
	checkValues(t, "f32->f16", []float64{1 + math.Ldexp(1, -8), 1 + 3*math.Ldexp(1, -8), 500, 464, -inf, 0, inf}, mustOp(t, "graph.cast", nil, tt(ir.F16, 7), defOpt, y), exact)
	checkValues(t, "f32->f16 F64", y.Data, mustOp(t, "graph.cast", nil, tt(ir.F16, 7), refOpt, y), exact)
	// int to float rounds the value; int to int wraps by value
	checkValues(t, "i32->f16", []float64{2048, 2052, -65504, inf}, mustOp(t, "graph.cast", nil, tt(ir.F16, 4), defOpt, vec(t, ir.I32, 2049, 2051, -65504, 65520)), exact)
	checkValues(t, "i8->ui32", []float64{4294967295, 5}, mustOp(t, "graph.cast", nil, tt(ir.UI32, 2), defOpt, vec(t, ir.I8, -1, 5)), exact)
	checkValues(t, "i32->i8", []float64{44, -1}, mustOp(t, "graph.cast", nil, tt(ir.I8, 2), defOpt, vec(t, ir.I32, 300, 255)), exact)
	checkValues(t, "i1->f32", []float64{1, 0}, mustOp(t, "graph.cast", nil, tt(ir.F32, 2), defOpt, vec(t, ir.I1, 1, 0)), exact)
	checkValues(t, "bf16->f32", []float64{2.71875}, mustOp(t, "graph.cast", nil, tt(ir.F32, 1), defOpt, vec(t, ir.BF16, math.E)), exact)
}

// TestNaiveLogAddExpOverflows runs the naive_logaddexp example: in f32 the
// exponentials overflow past 88.72, in the float64 reference they do not.
func TestNaiveLogAddExpOverflows(t *testing.T) {
	ty := tt(ir.F32, 3)
	fn := buildFn([]ir.Type{ty, ty}, []ir.Type{ty}, func(b *ir.Builder, args []*ir.Value) []*ir.Value {
		ea := b.CreateHere("graph.exp", args[:1], []ir.Type{ty}, nil).Result(0)
		eb := b.CreateHere("graph.exp", args[1:], []ir.Type{ty}, nil).Result(0)
		s := b.CreateHere("graph.add", []*ir.Value{ea, eb}, []ir.Type{ty}, nil).Result(0)
		return []*ir.Value{b.CreateHere("graph.log", []*ir.Value{s}, []ir.Type{ty}, nil).Result(0)}
	})
	in := []*Tensor{vec(t, ir.F32, 1, 88.73, 100), vec(t, ir.F32, 2, 0, 100)}
	got, err := Run(fn, in, defOpt)
	require.NoError(t, err)
	checkValues(t, "f32", []float64{2.3132616875182228, inf, inf}, got[0], 1)
	ref, err := Run(fn, in, refOpt)
	require.NoError(t, err)
	assert.InDelta(t, f32(88.73), ref[0].Data[1], 1e-12)
	assert.InDelta(t, 100+math.Ln2, ref[0].Data[2], 1e-12)
	// graph.logaddexp itself never overflows
	direct := mustOp(t, "graph.logaddexp", nil, ty, defOpt, in...)
	checkValues(t, "logaddexp", []float64{2.3132616875182228, f32(88.73), 100 + math.Ln2}, direct, 1)
}
