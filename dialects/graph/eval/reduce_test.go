package eval

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

func TestReductions(t *testing.T) {
	x := mk(t, ir.F32, []int64{2, 3}, 1, 2, 3, 4, 5, 6)
	axes := func(a ...int64) ir.AttrDict { return ir.Attrs("axes", ir.IntArray(a...)) }
	checkValues(t, "sum -1", []float64{6, 15}, mustOp(t, "graph.reduce_sum", axes(-1), tt(ir.F32, 2), defOpt, x), exact)
	checkValues(t, "sum 0", []float64{5, 7, 9}, mustOp(t, "graph.reduce_sum", axes(0), tt(ir.F32, 3), defOpt, x), exact)
	checkValues(t, "sum all", []float64{21}, mustOp(t, "graph.reduce_sum", nil, tt(ir.F32), defOpt, x), exact)
	got := mustOp(t, "graph.reduce_sum", ir.Attrs("axes", ir.IntArray(1), "keepdim", ir.BoolAttr(true)), tt(ir.F32, 2, 1), defOpt, x)
	assert.Equal(t, []int64{2, 1}, got.Shape)
	checkValues(t, "sum keepdim", []float64{6, 15}, got, exact)
	checkValues(t, "mean", []float64{2, 5}, mustOp(t, "graph.reduce_mean", axes(1), tt(ir.F32, 2), defOpt, x), exact)
	checkValues(t, "mean 0", []float64{2.5, 3.5, 4.5}, mustOp(t, "graph.reduce_mean", axes(-2), tt(ir.F32, 3), defOpt, x), exact)
	checkValues(t, "max", []float64{3, 6}, mustOp(t, "graph.reduce_max", axes(1), tt(ir.F32, 2), defOpt, x), exact)
	checkValues(t, "min", []float64{1, 2, 3}, mustOp(t, "graph.reduce_min", axes(0), tt(ir.F32, 3), defOpt, x), exact)

	// rank 3 over two axes, in any order
	y := NewTensor(ir.F32, []int64{2, 3, 4})
	for i := range y.Data {
		y.Data[i] = float64(i)
	}
	got = mustOp(t, "graph.reduce_sum", axes(2, 0), tt(ir.F32, 3), defOpt, y)
	// sum over i,k of 12i + 4j + k = 4*12 + 8*4j + 2*6
	checkValues(t, "sum [0,2]", []float64{60, 92, 124}, got, exact)

	// special values: NaN propagates through max/min/sum, inf - inf is NaN
	s := mk(t, ir.F32, []int64{4, 2}, nan, 1, -inf, 1, inf, -inf, negZ, 0)
	checkValues(t, "max specials", []float64{nan, 1, inf, 0}, mustOp(t, "graph.reduce_max", axes(1), tt(ir.F32, 4), defOpt, s), exact)
	checkValues(t, "min specials", []float64{nan, -inf, -inf, negZ}, mustOp(t, "graph.reduce_min", axes(1), tt(ir.F32, 4), defOpt, s), exact)
	checkValues(t, "sum specials", []float64{nan, -inf, nan, 0}, mustOp(t, "graph.reduce_sum", axes(1), tt(ir.F32, 4), defOpt, s), exact)

	// empty reductions
	e := NewTensor(ir.F32, []int64{2, 0})
	checkValues(t, "empty sum", []float64{0, 0}, mustOp(t, "graph.reduce_sum", axes(1), tt(ir.F32, 2), defOpt, e), exact)
	checkValues(t, "empty max", []float64{-inf, -inf}, mustOp(t, "graph.reduce_max", axes(1), tt(ir.F32, 2), defOpt, e), exact)
	checkValues(t, "empty mean", []float64{nan, nan}, mustOp(t, "graph.reduce_mean", axes(1), tt(ir.F32, 2), defOpt, e), exact)
}

// TestReduceAccumulation shows the documented accumulation: float32 with a
// rounding after every addition, float64 under F64.
func TestReduceAccumulation(t *testing.T) {
	x := vec(t, ir.F32, 16777216, 1, 1, 1, 1)
	got := mustOp(t, "graph.reduce_sum", nil, tt(ir.F32), defOpt, x)
	checkValues(t, "f32 accumulation", []float64{16777216}, got, exact)
	got = mustOp(t, "graph.reduce_sum", nil, tt(ir.F32), refOpt, x)
	checkValues(t, "f64 accumulation", []float64{16777220}, got, exact)
	got = mustOp(t, "graph.reduce_mean", nil, tt(ir.F32), refOpt, x)
	checkValues(t, "f64 mean", []float64{16777220.0 / 5}, got, exact)
	// bf16 results are rounded when stored, not during the accumulation
	b := vec(t, ir.BF16, 256, 1, 1)
	checkValues(t, "bf16 sum", []float64{258}, mustOp(t, "graph.reduce_sum", nil, tt(ir.BF16), defOpt, b), exact)
	checkValues(t, "bf16 sum of 257", []float64{256}, mustOp(t, "graph.reduce_sum", nil, tt(ir.BF16), defOpt, vec(t, ir.BF16, 256, 1)), exact)
}

func TestIntReductions(t *testing.T) {
	u := mk(t, ir.UI8, []int64{2, 2}, 200, 100, 7, 255)
	axes := ir.Attrs("axes", ir.IntArray(1))
	checkValues(t, "ui8 sum wraps", []float64{44, 6}, mustOp(t, "graph.reduce_sum", axes, tt(ir.UI8, 2), defOpt, u), exact)
	checkValues(t, "ui8 max", []float64{200, 255}, mustOp(t, "graph.reduce_max", axes, tt(ir.UI8, 2), defOpt, u), exact)
	checkValues(t, "ui8 min", []float64{100, 7}, mustOp(t, "graph.reduce_min", axes, tt(ir.UI8, 2), defOpt, u), exact)
	i := vec(t, ir.I32, 2147483647, 2147483647, -3)
	checkValues(t, "i32 sum wraps", []float64{-5}, mustOp(t, "graph.reduce_sum", nil, tt(ir.I32), defOpt, i), exact)
	checkValues(t, "i32 mean truncates", []float64{-3}, mustOp(t, "graph.reduce_mean", nil, tt(ir.I32), defOpt, vec(t, ir.I32, -3, -4)), exact)
	checkValues(t, "empty i8 max", []float64{-128}, mustOp(t, "graph.reduce_max", nil, tt(ir.I8), defOpt, NewTensor(ir.I8, []int64{0})), exact)
}

// rmsRef is rmsnorm in float64 along the last axis.
func rmsRef(x, w []float64, n int, eps float64) []float64 {
	out := make([]float64, len(x))
	for r := 0; r < len(x)/n; r++ {
		ss := 0.0
		for j := 0; j < n; j++ {
			ss += x[r*n+j] * x[r*n+j]
		}
		inv := 1 / math.Sqrt(ss/float64(n)+eps)
		for j := 0; j < n; j++ {
			out[r*n+j] = x[r*n+j] * inv * w[j]
		}
	}
	return out
}

func TestRMSNorm(t *testing.T) {
	x := mk(t, ir.F32, []int64{2, 4}, 1, 2, 3, 4, -0.5, 0, 0.25, 8)
	w := vec(t, ir.F32, 1, 0.5, 2, -1)
	eps := f32(1e-5)
	want := rmsRef(x.Data, w.Data, 4, eps)
	attrs := ir.Attrs("eps", ir.FloatAttr{Value: 1e-5})
	got := mustOp(t, "graph.rmsnorm", attrs, tt(ir.F32, 2, 4), defOpt, x, w)
	checkValues(t, "rmsnorm f32", want, got, 4)
	ref := mustOp(t, "graph.rmsnorm", attrs, tt(ir.F32, 2, 4), refOpt, x, w)
	for i := range want {
		assert.InDelta(t, want[i], ref.Data[i], 1e-15*math.Abs(want[i])+1e-300)
	}
	// default eps is 1e-5 (as f32) and default axis is -1
	checkValues(t, "rmsnorm defaults", got.Data, mustOp(t, "graph.rmsnorm", nil, tt(ir.F32, 2, 4), defOpt, x, w), exact)

	// axis 0: the weight runs along dim 0
	xt := mk(t, ir.F32, []int64{4, 2}, 1, -0.5, 2, 0, 3, 0.25, 4, 8)
	got = mustOp(t, "graph.rmsnorm", ir.Attrs("axis", ir.IntAttr{Value: 0}), tt(ir.F32, 4, 2), defOpt, xt, w)
	for r := 0; r < 4; r++ {
		for c := 0; c < 2; c++ {
			assert.LessOrEqual(t, numeric.ULPDiff(want[c*4+r], got.Data[r*2+c], ir.F32), 4.0)
		}
	}

	// edge rows: zeros give zeros; huge values overflow x^2 in f32 but
	// not in the float64 reference; a NaN poisons its row only
	e := mk(t, ir.F32, []int64{3, 2}, 0, 0, 1e30, 1e30, nan, 1)
	ones := vec(t, ir.F32, 1, 1)
	got = mustOp(t, "graph.rmsnorm", nil, tt(ir.F32, 3, 2), defOpt, e, ones)
	checkValues(t, "rmsnorm edges f32", []float64{0, 0, 0, 0, nan, nan}, got, exact)
	ref = mustOp(t, "graph.rmsnorm", nil, tt(ir.F32, 3, 2), refOpt, e, ones)
	checkValues(t, "rmsnorm edges f64", []float64{0, 0, 1, 1, nan, nan}, ref, 1)

	// bf16 storage of an f32 computation
	xb := mk(t, ir.BF16, []int64{1, 4}, 1, 2, 3, 4)
	wb := vec(t, ir.BF16, 1, 1, 1, 1)
	got = mustOp(t, "graph.rmsnorm", nil, tt(ir.BF16, 1, 4), defOpt, xb, wb)
	for i, v := range rmsRef(xb.Data, wb.Data, 4, eps) {
		assert.LessOrEqual(t, numeric.ULPDiff(v, got.Data[i], ir.BF16), 0.5+1e-3, "element %d", i)
	}
}

func TestLayerNorm(t *testing.T) {
	x := mk(t, ir.F32, []int64{2, 4}, 1, 2, 3, 4, 10, 10, 10, 10)
	w := vec(t, ir.F32, 1, 2, 1, 1)
	b := vec(t, ir.F32, 0, 0, 0, 1)
	eps := f32(1e-5)
	inv := 1 / math.Sqrt(1.25+eps)
	want := []float64{-1.5 * inv, -0.5 * inv * 2, 0.5 * inv, 1.5*inv + 1, 0, 0, 0, 1}
	checkValues(t, "layernorm", want, mustOp(t, "graph.layernorm", nil, tt(ir.F32, 2, 4), defOpt, x, w, b), 2)
	ref := mustOp(t, "graph.layernorm", nil, tt(ir.F32, 2, 4), refOpt, x, w, b)
	for i := range want {
		assert.InDelta(t, want[i], ref.Data[i], 1e-15)
	}
	// without weight and bias
	checkValues(t, "layernorm plain", []float64{-1.5 * inv, -0.5 * inv, 0.5 * inv, 1.5 * inv}, mustOp(t, "graph.layernorm", nil, tt(ir.F32, 1, 4), defOpt, mk(t, ir.F32, []int64{1, 4}, 1, 2, 3, 4)), 2)
}

func TestSoftmaxFamily(t *testing.T) {
	x := mk(t, ir.F32, []int64{5, 3},
		1, 2, 3,
		1000, 1000, 1000, // would overflow without the max subtraction
		-inf, -inf, -inf, // indeterminate
		-inf, 0, 0, // a -inf entry is a zero weight
		-1e30, 1e30, 0)
	sum := math.Exp(-2) + math.Exp(-1) + 1
	soft := []float64{
		math.Exp(-2) / sum, math.Exp(-1) / sum, 1 / sum,
		1.0 / 3, 1.0 / 3, 1.0 / 3,
		nan, nan, nan,
		0, 0.5, 0.5,
		0, 1, 0,
	}
	checkValues(t, "softmax", soft, mustOp(t, "graph.softmax", nil, tt(ir.F32, 5, 3), defOpt, x), 2)
	ref := mustOp(t, "graph.softmax", ir.Attrs("axis", ir.IntAttr{Value: -1}), tt(ir.F32, 5, 3), refOpt, x)
	for i, w := range soft {
		if math.IsNaN(w) {
			assert.True(t, math.IsNaN(ref.Data[i]))
			continue
		}
		assert.InDelta(t, w, ref.Data[i], 1e-15)
	}
	ls := math.Log(sum)
	logSoft := []float64{
		-2 - ls, -1 - ls, -ls,
		-math.Log(3), -math.Log(3), -math.Log(3),
		nan, nan, nan,
		-inf, -math.Ln2, -math.Ln2,
		-2e30, 0, -1e30,
	}
	checkValues(t, "log_softmax", logSoft, mustOp(t, "graph.log_softmax", nil, tt(ir.F32, 5, 3), defOpt, x), 2)
	lse := []float64{3 + ls, 1000 + math.Log(3), -inf, math.Ln2, 1e30}
	got := mustOp(t, "graph.logsumexp", nil, tt(ir.F32, 5), defOpt, x)
	checkValues(t, "logsumexp", lse, got, 1)
	assert.True(t, math.IsInf(got.Data[2], -1), "a row of all -inf gives -inf")
	got = mustOp(t, "graph.logsumexp", ir.Attrs("keepdim", ir.BoolAttr(true)), tt(ir.F32, 5, 1), refOpt, x)
	assert.Equal(t, []int64{5, 1}, got.Shape)
	checkValues(t, "logsumexp f64", lse, got, 1)

	// +inf and NaN in logsumexp rows; axis 0
	y := mk(t, ir.F32, []int64{2, 3}, inf, nan, -inf, 1, 2, -inf)
	got = mustOp(t, "graph.logsumexp", ir.Attrs("axis", ir.IntAttr{Value: 0}), tt(ir.F32, 3), defOpt, y)
	checkValues(t, "logsumexp axis 0", []float64{inf, nan, -inf}, got, exact)
	got = mustOp(t, "graph.softmax", ir.Attrs("axis", ir.IntAttr{Value: 0}), tt(ir.F32, 2, 2), defOpt, mk(t, ir.F32, []int64{2, 2}, 0, 1, 0, 1))
	checkValues(t, "softmax axis 0", []float64{0.5, 0.5, 0.5, 0.5}, got, exact)
}

// TestNormWeightBroadcast checks that a weight which is not 1-D along the
// axis broadcasts to x as NumPy does.
func TestNormWeightBroadcast(t *testing.T) {
	x := mk(t, ir.F32, []int64{2, 4}, 1, 2, 3, 4, -0.5, 0, 0.25, 8)
	w := vec(t, ir.F32, 1, 0.5, 2, -1)
	w2 := mk(t, ir.F32, []int64{1, 4}, 1, 0.5, 2, -1)
	full := mk(t, ir.F32, []int64{2, 4}, 1, 0.5, 2, -1, 1, 0.5, 2, -1)
	want := mustOp(t, "graph.rmsnorm", nil, tt(ir.F32, 2, 4), defOpt, x, w)
	checkValues(t, "[1,4] weight", want.Data, mustOp(t, "graph.rmsnorm", nil, tt(ir.F32, 2, 4), defOpt, x, w2), exact)
	checkValues(t, "[2,4] weight", want.Data, mustOp(t, "graph.rmsnorm", nil, tt(ir.F32, 2, 4), defOpt, x, full), exact)
	_, err := evalOp("graph.rmsnorm", nil, tt(ir.F32, 2, 4), defOpt, x, vec(t, ir.F32, 1, 2))
	assert.ErrorContains(t, err, "operand #1: shape 2 does not broadcast to 2x4")
	_, err = evalOp("graph.layernorm", nil, tt(ir.F32, 2, 4), defOpt, x, w, vec(t, ir.F32, 1, 2, 3))
	assert.ErrorContains(t, err, "operand #2: shape 3 does not broadcast to 2x4")
}

// TestReverseSums: Options.ReverseSums adds a sum's elements backwards, a
// second order the differential tests compare against (1e30 - 1e30 + 5 is
// 5 forwards and 0 backwards); max is the same either way.
func TestReverseSums(t *testing.T) {
	x := mk(t, ir.F32, []int64{2, 3}, 1e30, -1e30, 5, 1, 2, 3)
	axes := ir.Attrs("axes", ir.IntArray(1))
	rev := Options{ReverseSums: true}
	checkValues(t, "forwards", []float64{5, 6}, mustOp(t, "graph.reduce_sum", axes, tt(ir.F32, 2), defOpt, x), exact)
	checkValues(t, "backwards", []float64{0, 6}, mustOp(t, "graph.reduce_sum", axes, tt(ir.F32, 2), rev, x), exact)
	checkValues(t, "mean backwards", []float64{0, 2}, mustOp(t, "graph.reduce_mean", axes, tt(ir.F32, 2), rev, x), exact)
	checkValues(t, "max backwards", []float64{float64(float32(1e30)), 3}, mustOp(t, "graph.reduce_max", axes, tt(ir.F32, 2), rev, x), exact)
}
