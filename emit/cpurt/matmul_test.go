package cpurt_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	llvmemit "github.com/tensorforge/tensorforge/emit/llvm"
)

// The matmul kernels run as register-blocked micro-kernels over packed
// panels (emit/llvm/matmul.go): every element is still the serial sum
// over k, so they must agree with the loop interpreter within nativeULPs,
// at row counts, column counts and K that leave partial tiles and panels.
const matmulPrograms = `
func.func @swiglu(%x: tensor<?x72xbf16>, %wg: tensor<37x72xbf16>, %wu: tensor<37x72xbf16>) -> tensor<?x37xbf16> {
  %g = graph.matmul %x, %wg {transpose_b = true} : (tensor<?x72xbf16>, tensor<37x72xbf16>) -> tensor<?x37xbf16>
  %u = graph.matmul %x, %wu {transpose_b = true} : (tensor<?x72xbf16>, tensor<37x72xbf16>) -> tensor<?x37xbf16>
  %s = graph.silu %g : tensor<?x37xbf16>
  %y = graph.mul %s, %u : tensor<?x37xbf16>
  return %y : tensor<?x37xbf16>
}
func.func @batched(%a: tensor<3x5x7xf32>, %b: tensor<3x7x9xf32>) -> tensor<3x5x9xf32> {
  %y = graph.matmul %a, %b : (tensor<3x5x7xf32>, tensor<3x7x9xf32>) -> tensor<3x5x9xf32>
  return %y : tensor<3x5x9xf32>
}
func.func @shared_rhs(%a: tensor<3x5x7xf16>, %b: tensor<7x33xf16>, %bias: tensor<33xf16>) -> tensor<3x5x33xf16> {
  %y = graph.matmul %a, %b : (tensor<3x5x7xf16>, tensor<7x33xf16>) -> tensor<3x5x33xf16>
  %z = graph.add %y, %bias : (tensor<3x5x33xf16>, tensor<33xf16>) -> tensor<3x5x33xf16>
  return %z : tensor<3x5x33xf16>
}
func.func @residual(%x: tensor<?x16xf32>, %w: tensor<48x16xf32>, %r: tensor<?x48xf32>) -> tensor<?x48xf32> {
  %y = graph.matmul %x, %w {transpose_b = true} : (tensor<?x16xf32>, tensor<48x16xf32>) -> tensor<?x48xf32>
  %z = graph.add %y, %r : tensor<?x48xf32>
  return %z : tensor<?x48xf32>
}
func.func @w8a16(%x: tensor<?x40xbf16>, %q: tensor<24x40xi8>, %s: tensor<24xbf16>) -> tensor<?x24xbf16> {
  %w = graph.cast %q : (tensor<24x40xi8>) -> tensor<24x40xbf16>
  %y = graph.matmul %x, %w {transpose_b = true} : (tensor<?x40xbf16>, tensor<24x40xbf16>) -> tensor<?x24xbf16>
  %z = graph.mul %y, %s : (tensor<?x24xbf16>, tensor<24xbf16>) -> tensor<?x24xbf16>
  return %z : tensor<?x24xbf16>
}
func.func @w8f8(%x: tensor<5x40xf16>, %q: tensor<40x17xf8E4M3FN>) -> tensor<5x17xf16> {
  %w = graph.cast %q : (tensor<40x17xf8E4M3FN>) -> tensor<40x17xf16>
  %y = graph.matmul %x, %w : (tensor<5x40xf16>, tensor<40x17xf16>) -> tensor<5x17xf16>
  return %y : tensor<5x17xf16>
}
func.func @w8a8(%x: tensor<?x40xi8>, %q: tensor<24x40xi8>, %s: tensor<24xf32>) -> (tensor<?x24xbf16>, tensor<?x24xi32>) {
  %xa = graph.cast %x : (tensor<?x40xi8>) -> tensor<?x40xi32>
  %qa = graph.cast %q : (tensor<24x40xi8>) -> tensor<24x40xi32>
  %acc = graph.matmul %xa, %qa {transpose_b = true} : (tensor<?x40xi32>, tensor<24x40xi32>) -> tensor<?x24xi32>
  %f = graph.cast %acc : (tensor<?x24xi32>) -> tensor<?x24xf32>
  %y = graph.mul %f, %s : (tensor<?x24xf32>, tensor<24xf32>) -> tensor<?x24xf32>
  %z = graph.cast %y : (tensor<?x24xf32>) -> tensor<?x24xbf16>
  return %z, %acc : tensor<?x24xbf16>, tensor<?x24xi32>
}
func.func @gqa(%q: tensor<8x4x16xf32>, %k: tensor<2x1x32x16xf32>) -> tensor<8x4x32xf32> {
  %kb = graph.broadcast_to %k : (tensor<2x1x32x16xf32>) -> tensor<2x4x32x16xf32>
  %kr = graph.reshape %kb : (tensor<2x4x32x16xf32>) -> tensor<8x32x16xf32>
  %s = graph.matmul %q, %kr {transpose_b = true} : (tensor<8x4x16xf32>, tensor<8x32x16xf32>) -> tensor<8x4x32xf32>
  %t = graph.mul %s, %s : tensor<8x4x32xf32>
  return %t : tensor<8x4x32xf32>
}
func.func @tlhs(%a: tensor<16x5xbf16>, %w: tensor<16x7xbf16>) -> tensor<5x7xbf16> {
  %at = graph.transpose %a {perm = [1, 0]} : (tensor<16x5xbf16>) -> tensor<5x16xbf16>
  %y = graph.matmul %at, %w : (tensor<5x16xbf16>, tensor<16x7xbf16>) -> tensor<5x7xbf16>
  return %y : tensor<5x7xbf16>
}
func.func @slice_w(%x: tensor<?x8xf32>, %w: tensor<20x8xi8>) -> tensor<?x6xf32> {
  %ws = graph.slice %w {offsets = [3, 0], sizes = [6, 8]} : (tensor<20x8xi8>) -> tensor<6x8xi8>
  %wf = graph.cast %ws : (tensor<6x8xi8>) -> tensor<6x8xf32>
  %y = graph.matmul %x, %wf {transpose_b = true} : (tensor<?x8xf32>, tensor<6x8xf32>) -> tensor<?x6xf32>
  return %y : tensor<?x6xf32>
}
func.func @k1(%x: tensor<6x1xf32>, %w: tensor<1x3xf32>) -> tensor<6x3xf32> {
  %y = graph.matmul %x, %w : (tensor<6x1xf32>, tensor<1x3xf32>) -> tensor<6x3xf32>
  return %y : tensor<6x3xf32>
}
`

func TestMatMulKernels(t *testing.T) {
	for _, level := range []string{"O2", "O0"} {
		t.Run(level, func(t *testing.T) {
			diffProgram(t, "matmul", matmulPrograms, level)
		})
	}
	// the kernels took the tiled form, but for @batched, whose right
	// operand changes with the row (it runs as plain loops)
	m, err := compile(matmulPrograms, pipelines["O2"]+","+lowerTail())
	require.NoError(t, err)
	text, err := llvmemit.EmitText(m, llvmemit.Options{})
	require.NoError(t, err)
	require.Equal(t, 6, strings.Count(text, "\npanel1.header:"), "one panel loop per tiled matmul kernel")
}
