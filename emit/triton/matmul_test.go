package triton

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/dialects/loop"
)

// matmulPlanOf lowers src with -O2 for the h200 and returns the plan of
// its one tiled matmul kernel.
func matmulPlanOf(t *testing.T, src string) *matmulPlan {
	t.Helper()
	m := lower(t, src, o2)
	var plans []*matmulPlan
	for op := m.Body().First(); op != nil; op = op.Next() {
		if k, ok := loop.AsKernel(op); ok {
			mp, err := tileMatMul(k)
			require.NoError(t, err)
			if mp != nil {
				plans = append(plans, mp)
			}
		}
	}
	require.Len(t, plans, 1)
	return plans[0]
}

func TestFitShared(t *testing.T) {
	f32 := matmulPlanOf(t, `func.func @swiglu(%x: tensor<?x256xf32>, %wg: tensor<512x256xf32>, %wu: tensor<512x256xf32>) -> tensor<?x512xf32> {
  %g = graph.matmul %x, %wg {transpose_b = true} : (tensor<?x256xf32>, tensor<512x256xf32>) -> tensor<?x512xf32>
  %u = graph.matmul %x, %wu {transpose_b = true} : (tensor<?x256xf32>, tensor<512x256xf32>) -> tensor<?x512xf32>
  %s = graph.silu %g : tensor<?x512xf32>
  %y = graph.mul %s, %u : tensor<?x512xf32>
  return %y : tensor<?x512xf32>
}`)
	require.Len(t, f32.match.Dots, 2)
	// 16 x 128 x 512 over two f32 dot products: 557056 bytes a stage, so
	// 2 stages, then BN 128 -> 64 -> 32 (163840 bytes)
	c := f32.fitShared(matmulConfig{maxM: 16, bm: 16, bn: 128, bk: 512, groupM: 1, warps: 4, stages: 4})
	assert.Equal(t, int64(2), c.stages)
	assert.Equal(t, int64(32), c.bn)
	assert.Equal(t, int64(163840), f32.pipelineBytes(c))
	// a configuration that fits is kept as it is
	fits := matmulConfig{maxM: 64, bm: 16, bn: 32, bk: 128, groupM: 1, warps: 4, stages: 4}
	assert.Equal(t, fits, f32.fitShared(fits))

	bf16 := matmulPlanOf(t, `func.func @down(%x: tensor<?x14336xbf16>, %w: tensor<4096x14336xbf16>) -> tensor<?x4096xbf16> {
  %y = graph.matmul %x, %w {transpose_b = true} : (tensor<?x14336xbf16>, tensor<4096x14336xbf16>) -> tensor<?x4096xbf16>
  return %y : tensor<?x4096xbf16>
}`)
	// the sweep's measured configurations are unchanged: 128 x 256 x 64
	// at 4 stages of bf16 asks 147456 bytes
	assert.Equal(t, int64(147456), bf16.pipelineBytes(matmulConfigs[3]))
	for _, c := range matmulConfigs {
		assert.Equal(t, c, bf16.fitShared(c))
		assert.LessOrEqual(t, bf16.pipelineBytes(c), int64(maxPipelineBytes))
	}
}

// TestI8Bits checks the conversion of an int8 weight through the bits of
// an f32 (Options.I8Bits): the emitted expression, .to() without the
// option, and the arithmetic it relies on for every i8 and ui8 value (the
// integer added to the bits of 1.5 * 2^23 gives the f32 1.5 * 2^23 + v;
// less 1.5 * 2^23 is v; the upper half of v's f32 bits, shifted down
// arithmetically and truncated to 16 bits, is v's bf16). That Triton's
// casts are those (int32 >> 16 arithmetic, int32 -> int16 truncating)
// only a GPU run shows (bench/gpu/decode_ab.sh).
func TestI8Bits(t *testing.T) {
	src := `func.func @w8(%x: tensor<?x256xbf16>, %q: tensor<96x256xi8>) -> tensor<?x96xbf16> {
  %w = graph.cast %q : (tensor<96x256xi8>) -> tensor<96x256xbf16>
  %y = graph.matmul %x, %w {transpose_b = true} : (tensor<?x256xbf16>, tensor<96x256xbf16>) -> tensor<?x96xbf16>
  return %y : tensor<?x96xbf16>
}`
	m := lower(t, src, o2)
	plain, err := Emit(m, Options{Target: "h200"})
	require.NoError(t, err)
	assert.Contains(t, plain, "tl.dot(a_t, tl.load(b0_ptrs).to(tl.bfloat16), acc0)")
	bits, err := Emit(lower(t, src, o2), Options{Target: "h200", I8Bits: true})
	require.NoError(t, err)
	assert.Contains(t, bits, "tl.dot(a_t, (((tl.load(b0_ptrs).to(tl.int32) + 0x4B400000).to(tl.float32, bitcast=True) - 12582912.0).to(tl.int32, bitcast=True) >> 16).to(tl.int16).to(tl.bfloat16, bitcast=True), acc0)")
	for v := int32(-128); v < 256; v++ {
		f := math.Float32frombits(uint32(v+0x4B400000)) - 12582912.0
		require.Equal(t, float32(v), f, "v = %d", v)
		b := int16(int32(math.Float32bits(f)) >> 16)
		require.Equal(t, float32(v), math.Float32frombits(uint32(uint16(b))<<16), "v = %d", v)
	}
}
