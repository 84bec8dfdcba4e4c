package eval

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tensorforge/tensorforge/ir"
)

func ramp(k ir.ElemKind, shape ...int64) *Tensor {
	x := NewTensor(k, shape)
	for i := range x.Data {
		x.Data[i] = float64(i)
	}
	return x
}

func TestReshape(t *testing.T) {
	x := ramp(ir.F32, 2, 6)
	got := mustOp(t, "graph.reshape", nil, tt(ir.F32, 3, 4), defOpt, x)
	assert.Equal(t, []int64{3, 4}, got.Shape)
	assert.Equal(t, x.Data, got.Data)
	got = mustOp(t, "graph.reshape", nil, tt(ir.F32, ir.Dynamic, 3), defOpt, x)
	assert.Equal(t, []int64{4, 3}, got.Shape)
	got = mustOp(t, "graph.reshape", nil, tt(ir.F32), defOpt, ramp(ir.F32, 1, 1))
	assert.Equal(t, []int64{}, got.Shape)
	_, err := evalOp("graph.reshape", nil, tt(ir.F32, ir.Dynamic, 5), defOpt, x)
	assert.ErrorContains(t, err, "cannot reshape 12 elements into tensor<?x5xf32>")
	_, err = evalOp("graph.reshape", nil, tt(ir.F32, ir.Dynamic, ir.Dynamic), defOpt, x)
	assert.ErrorContains(t, err, "cannot infer two dynamic extents")
}

func TestTranspose(t *testing.T) {
	x := ramp(ir.F32, 2, 3)
	got := mustOp(t, "graph.transpose", ir.Attrs("perm", ir.IntArray(1, 0)), tt(ir.F32, 3, 2), defOpt, x)
	checkValues(t, "2-D", []float64{0, 3, 1, 4, 2, 5}, got, exact)
	checkValues(t, "default perm", []float64{0, 3, 1, 4, 2, 5}, mustOp(t, "graph.transpose", nil, tt(ir.F32, 3, 2), defOpt, x), exact)
	y := ramp(ir.I32, 2, 3, 4)
	got = mustOp(t, "graph.transpose", ir.Attrs("perm", ir.IntArray(2, 0, 1)), tt(ir.I32, 4, 2, 3), defOpt, y)
	// result[k][i][j] = y[i][j][k] = 12i + 4j + k
	for k := 0; k < 4; k++ {
		for i := 0; i < 2; i++ {
			for j := 0; j < 3; j++ {
				assert.Equal(t, float64(12*i+4*j+k), got.Data[k*6+i*3+j])
			}
		}
	}
}

func TestBroadcastTo(t *testing.T) {
	x := vec(t, ir.F32, 1, 2, 3)
	got := mustOp(t, "graph.broadcast_to", nil, tt(ir.F32, 2, 3), defOpt, x)
	checkValues(t, "row", []float64{1, 2, 3, 1, 2, 3}, got, exact)
	col := mk(t, ir.F32, []int64{2, 1}, 5, 6)
	got = mustOp(t, "graph.broadcast_to", nil, tt(ir.F32, 2, 2, 3), defOpt, col)
	checkValues(t, "col", []float64{5, 5, 5, 6, 6, 6, 5, 5, 5, 6, 6, 6}, got, exact)
	got = mustOp(t, "graph.broadcast_to", nil, tt(ir.F32, 4, ir.Dynamic), defOpt, x)
	assert.Equal(t, []int64{4, 3}, got.Shape)
	_, err := evalOp("graph.broadcast_to", nil, tt(ir.F32, 2, 4), defOpt, x)
	assert.ErrorContains(t, err, "shape 3 does not broadcast to 2x4")
	_, err = evalOp("graph.broadcast_to", nil, tt(ir.F32, ir.Dynamic, 3), defOpt, x)
	assert.ErrorContains(t, err, "cannot resolve dynamic extent #0")
}

func TestRoll(t *testing.T) {
	x := ramp(ir.F32, 2, 4) // [0 1 2 3; 4 5 6 7]
	for _, c := range []struct {
		shift int64
		want  []float64
	}{
		{1, []float64{3, 0, 1, 2, 7, 4, 5, 6}},
		{-1, []float64{1, 2, 3, 0, 5, 6, 7, 4}},
		{2, []float64{2, 3, 0, 1, 6, 7, 4, 5}},
		{0, []float64{0, 1, 2, 3, 4, 5, 6, 7}},
		{4, []float64{0, 1, 2, 3, 4, 5, 6, 7}},
		{-9, []float64{1, 2, 3, 0, 5, 6, 7, 4}},
	} {
		got := mustOp(t, "graph.roll", ir.Attrs("shift", ir.IntAttr{Value: c.shift}), tt(ir.F32, 2, 4), defOpt, x)
		checkValues(t, fmt.Sprint("shift ", c.shift), c.want, got, exact)
	}
	_, err := evalOp("graph.roll", nil, tt(ir.F32, 2, 4), defOpt, x)
	assert.ErrorContains(t, err, "attribute 'shift' is missing")
}

func TestGather(t *testing.T) {
	x := ramp(ir.F32, 2, 4) // [0 1 2 3; 4 5 6 7]
	rows, _ := TensorOf(ir.I64, []int64{2, 1}, []float64{3, 1})
	got := mustOp(t, "graph.gather", ir.Attrs("axis", ir.IntAttr{Value: -1}), tt(ir.F32, 2, 1), defOpt, x, rows)
	checkValues(t, "one per row", []float64{3, 5}, got, exact)

	many, _ := TensorOf(ir.I32, []int64{2, 3}, []float64{0, 0, 3, 2, 1, 0})
	got = mustOp(t, "graph.gather", nil, tt(ir.F32, 2, 3), defOpt, x, many)
	checkValues(t, "three per row", []float64{0, 0, 3, 6, 5, 4}, got, exact)

	cols, _ := TensorOf(ir.I64, []int64{1, 4}, []float64{1, 0, 1, 0})
	got = mustOp(t, "graph.gather", ir.Attrs("axis", ir.IntAttr{Value: 0}), tt(ir.F32, 1, 4), defOpt, x, cols)
	checkValues(t, "axis 0", []float64{4, 1, 6, 3}, got, exact)

	for _, bad := range []float64{4, -1} {
		idx, _ := TensorOf(ir.I64, []int64{2, 1}, []float64{0, bad})
		_, err := evalOp("graph.gather", nil, tt(ir.F32, 2, 1), defOpt, x, idx)
		assert.ErrorContains(t, err, fmt.Sprintf("index %g at [1, 0] of the index tensor is outside [0, 4), the extent of dimension 1 of the data", bad))
	}
	short, _ := TensorOf(ir.I64, []int64{1, 1}, []float64{0})
	_, err := evalOp("graph.gather", nil, tt(ir.F32, 1, 1), defOpt, x, short)
	assert.ErrorContains(t, err, "they differ in dimension 0, which is not the axis")
}

func TestSlice(t *testing.T) {
	x := ramp(ir.F32, 3, 4)
	got := mustOp(t, "graph.slice", ir.Attrs("offsets", ir.IntArray(1, 1), "sizes", ir.IntArray(2, 2)), tt(ir.F32, 2, 2), defOpt, x)
	checkValues(t, "window", []float64{5, 6, 9, 10}, got, exact)
	got = mustOp(t, "graph.slice", ir.Attrs("offsets", ir.IntArray(0, 2)), tt(ir.F32, 3, 2), defOpt, x)
	checkValues(t, "sizes from type", []float64{2, 3, 6, 7, 10, 11}, got, exact)
	got = mustOp(t, "graph.slice", ir.Attrs("offsets", ir.IntArray(1, 0), "sizes", ir.IntArray(-1, 4)), tt(ir.F32, ir.Dynamic, 4), defOpt, x)
	assert.Equal(t, []int64{2, 4}, got.Shape)
	got = mustOp(t, "graph.slice", ir.Attrs("offsets", ir.IntArray(0, 1), "sizes", ir.IntArray(2, 2), "strides", ir.IntArray(2, 2)), tt(ir.F32, 2, 2), defOpt, x)
	checkValues(t, "strided", []float64{1, 3, 9, 11}, got, exact)
	got = mustOp(t, "graph.slice", ir.Attrs("offsets", ir.IntArray(3, 0), "sizes", ir.IntArray(0, 4)), tt(ir.F32, 0, 4), defOpt, x)
	assert.Empty(t, got.Data)
}

func TestConcat(t *testing.T) {
	a := ramp(ir.F32, 2, 2)
	b := mk(t, ir.F32, []int64{2, 1}, 10, 11)
	got := mustOp(t, "graph.concat", ir.Attrs("axis", ir.IntAttr{Value: 1}), tt(ir.F32, 2, 3), defOpt, a, b)
	checkValues(t, "axis 1", []float64{0, 1, 10, 2, 3, 11}, got, exact)
	got = mustOp(t, "graph.concat", nil, tt(ir.F32, 2, 3), defOpt, a, b)
	checkValues(t, "default axis -1", []float64{0, 1, 10, 2, 3, 11}, got, exact)
	got = mustOp(t, "graph.concat", ir.Attrs("axis", ir.IntAttr{Value: 0}), tt(ir.F32, 4, 2), defOpt, a, a)
	checkValues(t, "axis 0", []float64{0, 1, 2, 3, 0, 1, 2, 3}, got, exact)
	_, err := evalOp("graph.concat", ir.Attrs("axis", ir.IntAttr{Value: 0}), tt(ir.F32, 4, 2), defOpt, a, b)
	assert.ErrorContains(t, err, "operand #1 has shape 2x1, which differs from 2x2 outside axis 0")
}

func TestMatmul(t *testing.T) {
	a := mk(t, ir.F32, []int64{2, 3}, 1, 2, 3, 4, 5, 6)
	b := mk(t, ir.F32, []int64{3, 2}, 7, 8, 9, 10, 11, 12)
	want := []float64{58, 64, 139, 154}
	checkValues(t, "2-D", want, mustOp(t, "graph.matmul", nil, tt(ir.F32, 2, 2), defOpt, a, b), exact)
	bt := mustOp(t, "graph.transpose", nil, tt(ir.F32, 2, 3), defOpt, b)
	checkValues(t, "transpose_b", want, mustOp(t, "graph.matmul", ir.Attrs("transpose_b", ir.BoolAttr(true)), tt(ir.F32, 2, 2), defOpt, a, bt), exact)

	// batched, with b broadcast over the batch
	ab := NewTensor(ir.F32, []int64{2, 2, 3})
	copy(ab.Data, a.Data)
	for i := 0; i < 6; i++ {
		ab.Data[6+i] = -a.Data[i]
	}
	got := mustOp(t, "graph.matmul", nil, tt(ir.F32, 2, 2, 2), defOpt, ab, b)
	checkValues(t, "batched", []float64{58, 64, 139, 154, -58, -64, -139, -154}, got, exact)
	b2 := NewTensor(ir.F32, []int64{2, 3, 2})
	copy(b2.Data, b.Data)
	copy(b2.Data[6:], b.Data)
	got = mustOp(t, "graph.matmul", nil, tt(ir.F32, 2, 2, 2), defOpt, a, b2)
	checkValues(t, "batched b", append(append([]float64(nil), want...), want...), got, exact)

	// integer matmul accumulates exactly and wraps to the result type
	ia := mk(t, ir.I8, []int64{1, 2}, 127, 127)
	ib := mk(t, ir.I8, []int64{2, 1}, 127, 127)
	checkValues(t, "i8->i32", []float64{32258}, mustOp(t, "graph.matmul", nil, tt(ir.I32, 1, 1), defOpt, ia, ib), exact)
	checkValues(t, "i8->i8", []float64{2}, mustOp(t, "graph.matmul", nil, tt(ir.I8, 1, 1), defOpt, ia, ib), exact)

	// f32 accumulation loses the small terms that float64 keeps
	la := mk(t, ir.F32, []int64{1, 3}, 16777216, 1, 1)
	lb := mk(t, ir.F32, []int64{3, 1}, 1, 1, 1)
	checkValues(t, "f32 acc", []float64{16777216}, mustOp(t, "graph.matmul", nil, tt(ir.F32, 1, 1), defOpt, la, lb), exact)
	checkValues(t, "f64 acc", []float64{16777218}, mustOp(t, "graph.matmul", nil, tt(ir.F32, 1, 1), refOpt, la, lb), exact)
	// special values
	sa := mk(t, ir.F32, []int64{1, 2}, inf, 1)
	sb := mk(t, ir.F32, []int64{2, 2}, 0, 1, 1, 1)
	checkValues(t, "inf*0", []float64{math.NaN(), inf}, mustOp(t, "graph.matmul", nil, tt(ir.F32, 1, 2), defOpt, sa, sb), exact)
}
