package tt

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/x448/float16"

	geval "github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

// Quantisation is exact in the reference semantics (docs/numerics.md), and
// the kernels must be too: the differential test below runs the quantising
// programs on inputs that reach every path of the expansion (NaN, the
// infinities, values far outside the integer range, quotients on and next
// to half-integers) and requires every byte to match the interpreter.

// tiesInputs are inputs whose quotients by the scales of the tests land on
// and next to half-integers: float inputs step by 0.05 from -30, integer
// inputs run through their whole range.
func tiesInputs(fn ir.Func) ([]*geval.Tensor, error) {
	in, err := geval.RandomInputs(fn, 1, 1, 37)
	if err != nil {
		return nil, err
	}
	for _, t := range in {
		lo, hi := int64(0), int64(0)
		if t.Elem.IsInt() {
			lo, hi = t.Elem.IntRange()
		}
		for i := range t.Data {
			if t.Elem.IsInt() {
				t.Data[i] = float64(lo + int64(i)%(hi-lo+1))
				continue
			}
			t.Data[i] = numeric.RoundTo(float64(i-600)*0.05, t.Elem)
		}
	}
	return in, nil
}

func TestQuantizationIsExact(t *testing.T) {
	t.Parallel()
	progs := workloads(t)
	names := []string{"examples/quantize_activations", "testdata/quantize_i8", "testdata/dequantize"}
	inputs := map[string]func(ir.Func) ([]*geval.Tensor, error){
		"scale 100": func(fn ir.Func) ([]*geval.Tensor, error) { return geval.RandomInputs(fn, 11, 100, 37) },
		"extreme":   func(fn ir.Func) ([]*geval.Tensor, error) { return geval.ExtremeInputs(fn, 12) },
		"ties":      tiesInputs,
	}
	var cases []builtCase
	for _, name := range names {
		for _, kind := range []string{"scale 100", "extreme", "ties"} {
			built, err := buildCasesWith(t, kind+" "+name, progs[name], graphPipeline, "wormhole-n300", inputs[kind])
			require.NoError(t, err, name)
			cases = append(cases, built...)
		}
	}
	// an unchecked cast (keep-unchecked-casts): typecast_tile truncates
	// and keeps the low byte, which is what the interpreter's x86-64
	// conversion gives for |x| < 2^31
	unchecked := `func.func @wrap(%x: tensor<40x100xf32>) -> (tensor<40x100xui8>, tensor<40x100xi8>) {
  %u = graph.cast %x : (tensor<40x100xf32>) -> tensor<40x100xui8>
  %s = graph.cast %x : (tensor<40x100xf32>) -> tensor<40x100xi8>
  return %u, %s : tensor<40x100xui8>, tensor<40x100xi8>
}`
	built, err := buildCasesWith(t, "unchecked casts", unchecked, "legalize-numerics{keep-unchecked-casts},decompose,fuse",
		"blackhole-p150", func(fn ir.Func) ([]*geval.Tensor, error) { return geval.RandomInputs(fn, 13, 300, 37) })
	require.NoError(t, err)
	cases = append(cases, built...)

	// every f16 value, as f32, through two scales without an exact
	// reciprocal (the quotient must be the correctly rounded one for the
	// exact rounding of the expansion to hold)
	everyF16 := `func.func @every_f16(%x: tensor<64x1024xf32>) -> (tensor<64x1024xi8>, tensor<64x1024xui8>) {
  %a = graph.quantize %x {scale = 0.1 : f32, zero_point = 0} : (tensor<64x1024xf32>) -> tensor<64x1024xi8>
  %b = graph.quantize %x {scale = 0.333333343 : f32, zero_point = 128} : (tensor<64x1024xf32>) -> tensor<64x1024xui8>
  return %a, %b : tensor<64x1024xi8>, tensor<64x1024xui8>
}`
	built, err = buildCasesWith(t, "every f16", everyF16, graphPipeline, "blackhole-p150", func(fn ir.Func) ([]*geval.Tensor, error) {
		x := geval.NewTensor(ir.F32, []int64{64, 1024})
		for i := range x.Data {
			x.Data[i] = float64(float16.Frombits(uint16(i)).Float32())
		}
		return []*geval.Tensor{x}, nil
	})
	require.NoError(t, err)
	cases = append(cases, built...)

	runAndCompare(t, cases)
}

func TestQuantizeEmitsTypecast(t *testing.T) {
	src, err := os.ReadFile("testdata/quantize_i8.tir")
	require.NoError(t, err)
	out, err := emitSrc(t, string(src), "blackhole-p150")
	require.NoError(t, err)
	compute := fileOf(out, "quantize_i8_k0/compute.cpp")
	assert.Contains(t, compute, `#include "api/compute/eltwise_unary/typecast.h"`)
	assert.Contains(t, compute, "typecast_tile_init<(uint32_t)DataFormat::Float32, (uint32_t)DataFormat::Int8>();")
	assert.Contains(t, compute, "typecast_tile<(uint32_t)DataFormat::Float32, (uint32_t)DataFormat::Int8>(")
	// 0.1 has no exact reciprocal: a filled tile and div_binary_tile
	assert.Contains(t, compute, "div_binary_tile(0, 1, 0);")
	assert.NotContains(t, compute, "div_unary_tile")
	var k *Kernel
	for i := range out.Program.Kernels {
		if out.Program.Kernels[i].Name == "quantize_i8_k0" {
			k = &out.Program.Kernels[i]
		}
	}
	require.NotNil(t, k)
	assert.Equal(t, "i8", k.Params[1].DType)
	var q CircularBuffer
	for _, cb := range k.CircularBuffers {
		if cb.Name == "cb_q" {
			q = cb
		}
	}
	// i8 tiles are declared UInt8 (two's complement bytes): tt-metal's
	// Int8 is sign-magnitude
	assert.Equal(t, "UInt8", q.DataFormat)
	assert.Equal(t, int64(1024), q.PageBytes)
	for _, f := range out.Program.Functions {
		for _, b := range f.Buffers {
			if b.DType == "i8" || b.DType == "ui8" {
				assert.Equal(t, "UInt8", b.DataFormat, b.Name)
				assert.Equal(t, int64(1024), b.PageBytes, b.Name)
			}
		}
	}

	deq, err := os.ReadFile("testdata/dequantize.tir")
	require.NoError(t, err)
	out, err = emitSrc(t, string(deq), "wormhole-n300")
	require.NoError(t, err)
	compute = fileOf(out, "dequant_rmsnorm_k0/compute.cpp")
	// integer tiles switch the math engine's INT8 mode: every
	// reconfiguration of the kernel passes to_from_int8
	assert.Contains(t, compute, "reconfig_data_format_srca<true>(cb_q);")
	assert.Contains(t, compute, "typecast_tile<(uint32_t)DataFormat::UInt8, (uint32_t)DataFormat::Float32>(0);")
	assert.NotContains(t, compute, "reconfig_data_format_srca(")
	compute = fileOf(out, "dequantize_i8_k0/compute.cpp")
	assert.Contains(t, compute, "typecast_tile<(uint32_t)DataFormat::Int8, (uint32_t)DataFormat::Float32>(0);")
}

func TestDivisionByAConstant(t *testing.T) {
	src := `func.func @d(%x: tensor<40x64xf32>) -> (tensor<40x64xf32>, tensor<40x64xf32>) {
  %c = graph.constant dense<64.0> : tensor<f32>
  %a = graph.div %x, %c : (tensor<40x64xf32>, tensor<f32>) -> tensor<40x64xf32>
  %t = graph.constant dense<3.0> : tensor<f32>
  %b = graph.div %x, %t : (tensor<40x64xf32>, tensor<f32>) -> tensor<40x64xf32>
  return %a, %b : tensor<40x64xf32>, tensor<40x64xf32>
}`
	out, err := emitSrc(t, src, "blackhole-p150")
	require.NoError(t, err)
	compute := fileOf(out, "d_k0/compute.cpp")
	// div_unary_tile multiplies by its parameter, the reciprocal: only
	// exact for a power of two
	assert.Contains(t, compute, "div_unary_tile(0, 0x3c800000u);  // / 64 (times 0.015625)")
	assert.NotContains(t, compute, "0x42800000u")
	assert.Contains(t, compute, "fill_tile_bitcast(1, 0x40400000u);  // 3")
	assert.Contains(t, compute, "div_binary_tile(0, 1, 0);")
}

func TestF8IsReported(t *testing.T) {
	src := `func.func @f8(%x: tensor<40x100xf32>) -> tensor<40x100xf8E4M3FN> {
  %q = graph.quantize %x {scale = 0.1 : f32, zero_point = 0} : (tensor<40x100xf32>) -> tensor<40x100xf8E4M3FN>
  return %q : tensor<40x100xf8E4M3FN>
}`
	for _, tg := range []string{"blackhole-p150", "wormhole-n300"} {
		_, err := emitSrc(t, src, tg)
		require.Error(t, err, tg)
		assert.Contains(t, err.Error(), "'tt' backend: kernel 'f8_k0' reads or writes f8E4M3FN elements", tg)
		assert.Contains(t, err.Error(), "no tt-metal data format that matches it", tg)
		assert.Contains(t, err.Error(), "input.tir:", "located")
	}
}
