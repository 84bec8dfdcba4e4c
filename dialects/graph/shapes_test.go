package graph

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/ir"
)

const dyn = ir.Dynamic

func TestBroadcastShapes(t *testing.T) {
	for _, c := range []struct {
		a, b, want []int64
	}{
		{[]int64{4, 1}, []int64{8}, []int64{4, 8}},
		{[]int64{8}, []int64{4, 1}, []int64{4, 8}},
		{[]int64{}, []int64{2, 3}, []int64{2, 3}},
		{[]int64{2, 3}, nil, []int64{2, 3}},
		{[]int64{dyn, 8}, []int64{4, 1}, []int64{4, 8}},
		{[]int64{dyn}, []int64{1}, []int64{dyn}},
		{[]int64{1}, []int64{dyn}, []int64{dyn}},
		{[]int64{dyn}, []int64{dyn}, []int64{dyn}},
		{[]int64{4}, []int64{dyn}, []int64{4}},
		{[]int64{0}, []int64{1}, []int64{0}},
		{[]int64{2, 1, 4}, []int64{3, 1}, []int64{2, 3, 4}},
	} {
		got, err := BroadcastShapes(c.a, c.b)
		require.NoError(t, err, "%v %v", c.a, c.b)
		require.Equal(t, c.want, got, "%v %v", c.a, c.b)
	}
	_, err := BroadcastShapes([]int64{4, 8}, []int64{3, 8})
	require.EqualError(t, err, "shapes [4, 8] and [3, 8] are not broadcast-compatible")
	_, err = BroadcastShapes([]int64{2}, []int64{dyn, 3})
	require.EqualError(t, err, "shapes [?, 3] and [2] are not broadcast-compatible")
}

// BroadcastShapes does not alias its inputs.
func TestBroadcastShapesCopies(t *testing.T) {
	a := []int64{4, 8}
	got, err := BroadcastShapes(a, []int64{1})
	require.NoError(t, err)
	got[0] = 99
	require.Equal(t, []int64{4, 8}, a)
}

func TestNormalizeAxes(t *testing.T) {
	for _, c := range []struct {
		axes []int64
		rank int
		want []int64
	}{
		{[]int64{-1, 0}, 3, []int64{0, 2}},
		{[]int64{1}, 2, []int64{1}},
		{[]int64{-2}, 2, []int64{0}},
		{[]int64{}, 2, []int64{}},
	} {
		got, err := NormalizeAxes(c.axes, c.rank)
		require.NoError(t, err)
		require.Equal(t, c.want, got)
	}
	for _, c := range []struct {
		axes []int64
		rank int
		want string
	}{
		{[]int64{2}, 2, "axis 2 is out of range for rank 2"},
		{[]int64{-3}, 2, "axis -3 is out of range for rank 2"},
		{[]int64{0}, 0, "axis 0 is out of range for rank 0"},
		{[]int64{1, 1}, 2, "axis 1 is repeated"},
		{[]int64{1, -1}, 2, "axes 1 and -1 refer to the same dimension"},
	} {
		_, err := NormalizeAxes(c.axes, c.rank)
		require.EqualError(t, err, c.want)
	}
}

func TestReducedShape(t *testing.T) {
	shape := []int64{4, 8, 16}
	require.Equal(t, []int64{4, 16}, ReducedShape(shape, []int64{1}, false))
	require.Equal(t, []int64{4, 1, 16}, ReducedShape(shape, []int64{1}, true))
	require.Equal(t, []int64{8}, ReducedShape(shape, []int64{0, -1}, false))
	require.Equal(t, []int64{}, ReducedShape(shape, []int64{0, 1, 2}, false))
	require.Equal(t, []int64{1, 1, 1}, ReducedShape(shape, []int64{0, 1, 2}, true))
	require.Equal(t, []int64{dyn, 16}, ReducedShape([]int64{dyn, 8, 16}, []int64{1}, false))
	require.Equal(t, []int64{4, 8, 16}, shape, "the input is not changed")
}

func TestQuantRange(t *testing.T) {
	for _, c := range []struct {
		k      ir.ElemKind
		lo, hi int64
	}{
		{ir.UI8, 0, 255}, {ir.I8, -128, 127}, {ir.F8E4M3FN, -448, 448}, {ir.I32, -1 << 31, 1<<31 - 1},
	} {
		lo, hi := QuantRange(c.k)
		require.Equal(t, [2]int64{c.lo, c.hi}, [2]int64{lo, hi}, c.k.String())
	}
}

func TestFormatShape(t *testing.T) {
	require.Equal(t, "[4, ?, 8]", FormatShape([]int64{4, dyn, 8}))
	require.Equal(t, "[]", FormatShape(nil))
}
