package eval

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

func inputsFn(types ...ir.Type) ir.Func {
	return buildFn(types, types[:1], func(b *ir.Builder, args []*ir.Value) []*ir.Value { return args[:1] })
}

func TestRandomInputs(t *testing.T) {
	fn := inputsFn(tt(ir.F32, ir.Dynamic, 64), tt(ir.BF16, 64), tt(ir.UI8, 8), tt(ir.I8, 8), tt(ir.I1, 16), tt(ir.F8E4M3FN, 32))
	a, err := RandomInputs(fn, 42, 2, 5)
	require.NoError(t, err)
	b, err := RandomInputs(fn, 42, 2, 5)
	require.NoError(t, err)
	c, err := RandomInputs(fn, 43, 2, 5)
	require.NoError(t, err)
	require.Len(t, a, 6)
	assert.Equal(t, []int64{5, 64}, a[0].Shape)
	for i := range a {
		assert.Equal(t, a[i].Data, b[i].Data, "same seed, same inputs")
		for _, v := range a[i].Data {
			assert.True(t, same(v, numeric.RoundTo(v, a[i].Elem)), "%s value %v is not representable", a[i].Elem, v)
		}
	}
	assert.NotEqual(t, a[0].Data, c[0].Data, "another seed, other inputs")
	// roughly normal with standard deviation 2
	sum, sq := 0.0, 0.0
	for _, v := range a[0].Data {
		sum += v
		sq += v * v
	}
	n := float64(len(a[0].Data))
	assert.InDelta(t, 0, sum/n, 0.5)
	assert.InDelta(t, 2, math.Sqrt(sq/n), 0.5)
	for _, v := range a[2].Data {
		assert.True(t, v >= 0 && v <= 255)
	}
	for _, v := range a[4].Data {
		assert.True(t, v == 0 || v == 1)
	}
	// values are pinned so that a change of generator is noticed
	assert.Equal(t, []float64{0.13657402992248535, -0.2088956981897354, -0.4356668293476105}, a[0].Data[:3])
	assert.Equal(t, []float64{3, -1, 1, -2, 1, 2, 1, -1}, a[3].Data)

	_, err = RandomInputs(buildFn([]ir.Type{ir.FunctionType{}}, nil, func(*ir.Builder, []*ir.Value) []*ir.Value { return nil }), 1, 1, 1)
	assert.ErrorContains(t, err, "not a tensor type")
}

func TestExtremeInputs(t *testing.T) {
	fn := inputsFn(tt(ir.F32, 4, ir.Dynamic), tt(ir.F16, 64), tt(ir.F8E4M3FN, 64), tt(ir.I8, 32), tt(ir.BF16, 2))
	a, err := ExtremeInputs(fn, 9)
	require.NoError(t, err)
	b, err := ExtremeInputs(fn, 9)
	require.NoError(t, err)
	require.Len(t, a, 5)
	assert.Equal(t, []int64{4, ExtremeDynExtent}, a[0].Shape)
	for i := range a {
		assert.Equal(t, len(a[i].Data), len(b[i].Data))
		for j := range a[i].Data {
			assert.True(t, same(a[i].Data[j], b[i].Data[j]), "deterministic")
		}
	}
	has := func(x *Tensor, v float64) bool {
		for _, d := range x.Data {
			if same(d, v) {
				return true
			}
		}
		return false
	}
	f := a[0]
	for _, v := range []float64{0, negZ, inf, -inf, nan, f32(88.73), -f32(88.73), 1e4, -1e4, f32(1e30), -f32(1e30), sub32, -sub32, math.MaxFloat32, -math.MaxFloat32, math.Ldexp(1, -126)} {
		assert.True(t, has(f, v), "f32 input lacks %v", v)
	}
	assert.True(t, has(a[1], inf), "1e30 is inf in f16")
	assert.True(t, has(a[1], 65504))
	assert.True(t, has(a[1], math.Ldexp(1, -24)))
	assert.True(t, has(a[2], 448))
	assert.True(t, has(a[2], nan))
	assert.False(t, has(a[2], inf), "f8E4M3FN has no inf")
	for _, v := range []float64{-128, 127, 0, 1, -1} {
		assert.True(t, has(a[3], v), "i8 input lacks %v", v)
	}
	// random values are mixed in
	ordinary := 0
	for _, v := range a[1].Data {
		if !math.IsNaN(v) && !math.IsInf(v, 0) && math.Abs(v) > 1e-3 && math.Abs(v) < 80 {
			ordinary++
		}
	}
	assert.Greater(t, ordinary, 5)
	for i := range a {
		for _, v := range a[i].Data {
			assert.True(t, same(v, numeric.RoundTo(v, a[i].Elem)), "%s value %v is not representable", a[i].Elem, v)
		}
	}
}
