package passes

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/ir"
)

// TestDecomposeRMSNorm checks the expansion op by op: f32 compute with
// casts, a keepdim sum over the last axis, the mean as a quotient by C.
func TestDecomposeRMSNorm(t *testing.T) {
	m := fzParse(t, `func.func @f(%x: tensor<4x8xbf16>, %w: tensor<8xbf16>) -> tensor<4x8xbf16> {
  %n = graph.rmsnorm %x, %w {eps = 1.0e-05 : f32} : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
  return %n : tensor<4x8xbf16>
}`)
	require.True(t, Decompose(m.Operation))
	require.NoError(t, ir.Verify(m.Operation))
	want := `module {
  func.func @f(%x: tensor<4x8xbf16>, %w: tensor<8xbf16>) -> tensor<4x8xbf16> {
    %0 = graph.cast %x : (tensor<4x8xbf16>) -> tensor<4x8xf32>
    %1 = graph.constant dense<8.0> : tensor<f32>
    %2 = graph.mul %0, %0 : tensor<4x8xf32>
    %3 = graph.reduce_sum %2 {axes = [-1], keepdim = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
    %4 = graph.div %3, %1 : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
    %5 = graph.constant dense<1.0e-05> : tensor<f32>
    %6 = graph.add %4, %5 : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
    %7 = graph.rsqrt %6 : tensor<4x1xf32>
    %8 = graph.mul %0, %7 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
    %9 = graph.cast %w : (tensor<8xbf16>) -> tensor<8xf32>
    %10 = graph.mul %8, %9 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %n = graph.cast %10 : (tensor<4x8xf32>) -> tensor<4x8xbf16>
    return %n : tensor<4x8xbf16>
  }
}`
	assert.Equal(t, want, strings.TrimSpace(ir.Print(m.Operation, ir.PrintOptions{})))
	assert.False(t, Decompose(m.Operation), "a second run finds nothing to do")
}

// TestDecomposeLeavesPrimitives: a program of primitives is unchanged.
func TestDecomposeLeavesPrimitives(t *testing.T) {
	src := fzReadFile(t, "../examples/swiglu.tir")
	m := fzParse(t, src)
	before := ir.Print(m.Operation, ir.PrintOptions{})
	assert.False(t, Decompose(m.Operation))
	assert.Equal(t, before, ir.Print(m.Operation, ir.PrintOptions{}))
}

// TestDecomposeInsideKernels expands composites in graph.fused bodies, as
// lowering needs for a composite op it wraps alone.
func TestDecomposeInsideKernels(t *testing.T) {
	m := fzParse(t, `func.func @f(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %k = graph.fused %x {kind = "row"} {
  ^bb0(%a: tensor<4x8xf32>):
    %m = graph.reduce_mean %a {axes = [-1]} : (tensor<4x8xf32>) -> tensor<4xf32>
    %l = graph.logsumexp %a : (tensor<4x8xf32>) -> tensor<4xf32>
    %s = graph.add %m, %l : tensor<4xf32>
    graph.yield %s : tensor<4xf32>
  } : (tensor<4x8xf32>) -> tensor<4xf32>
  return %k : tensor<4xf32>
}`)
	require.True(t, Decompose(m.Operation))
	require.NoError(t, ir.Verify(m.Operation))
	fused := fzTopOps(m.Funcs()[0])[0]
	for _, op := range fused.Region(0).Entry().Ops() {
		assert.False(t, IsComposite(op), op.Name())
	}
	info, err := ClassifyKernel(fused)
	require.NoError(t, err)
	assert.Equal(t, KernelRow, info.Kind)
}

// TestDecomposeDifferential holds every expansion to the reference
// interpreter's composite ops, for each float type, rows of a length that
// is not a power of two, along the last axis and another one.
func TestDecomposeDifferential(t *testing.T) {
	ops := []struct {
		name, args, results, body string
	}{
		{"rmsnorm", "%x: tensor<3x6xT>, %w: tensor<6xT>", "tensor<3x6xT>",
			"%y = graph.rmsnorm %x, %w {eps = 1.0e-06 : f32} : (tensor<3x6xT>, tensor<6xT>) -> tensor<3x6xT>"},
		{"rmsnorm axis 0", "%x: tensor<3x6xT>, %w: tensor<3xT>", "tensor<3x6xT>",
			"%y = graph.rmsnorm %x, %w {axis = 0} : (tensor<3x6xT>, tensor<3xT>) -> tensor<3x6xT>"},
		{"layernorm", "%x: tensor<2x3x10xT>, %w: tensor<10xT>, %b: tensor<10xT>", "tensor<2x3x10xT>",
			"%y = graph.layernorm %x, %w, %b : (tensor<2x3x10xT>, tensor<10xT>, tensor<10xT>) -> tensor<2x3x10xT>"},
		{"layernorm axis 1", "%x: tensor<2x3x10xT>, %w: tensor<3xT>, %b: tensor<3xT>", "tensor<2x3x10xT>",
			"%y = graph.layernorm %x, %w, %b {axis = 1, eps = 0.001 : f32} : (tensor<2x3x10xT>, tensor<3xT>, tensor<3xT>) -> tensor<2x3x10xT>"},
		{"reduce_mean", "%x: tensor<?x7xT>", "tensor<?xT>", "%y = graph.reduce_mean %x {axes = [-1]} : (tensor<?x7xT>) -> tensor<?xT>"},
		{"reduce_mean of two axes", "%x: tensor<3x5x2xT>", "tensor<1x5x1xT>",
			"%y = graph.reduce_mean %x {axes = [0, 2], keepdim = true} : (tensor<3x5x2xT>) -> tensor<1x5x1xT>"},
		{"softmax", "%x: tensor<?x12xT>", "tensor<?x12xT>", "%y = graph.softmax %x : tensor<?x12xT>"},
		{"log_softmax axis 0", "%x: tensor<5x3xT>", "tensor<5x3xT>", "%y = graph.log_softmax %x {axis = 0} : tensor<5x3xT>"},
		{"logsumexp", "%x: tensor<4x9xT>", "tensor<4xT>", "%y = graph.logsumexp %x : (tensor<4x9xT>) -> tensor<4xT>"},
		{"logaddexp", "%x: tensor<4x9xT>, %z: tensor<9xT>", "tensor<4x9xT>", "%y = graph.logaddexp %x, %z : (tensor<4x9xT>, tensor<9xT>) -> tensor<4x9xT>"},
	}
	for _, op := range ops {
		for _, elem := range []string{"f32", "bf16", "f16", "f64"} {
			t.Run(op.name+"/"+elem, func(t *testing.T) {
				src := strings.ReplaceAll(fmt.Sprintf("func.func @f(%s) -> %s {\n  %s\n  return %%y : %s\n}\n",
					op.args, op.results, op.body, op.results), "xT>", "x"+elem+">")
				worst := fzDiff(t, src, "decompose", fzDiffBound)
				t.Logf("largest difference: %v ULPs", worst)
			})
		}
	}
}

// TestDecomposePass reports through the pass manager like any pass.
func TestDecomposePass(t *testing.T) {
	m := fzParse(t, fzReadFile(t, "../examples/add_rmsnorm.tir"))
	fzPipeline(t, m, "decompose", fzCtx(t, "cpu"))
	counts := map[string]int{}
	m.Walk(func(op *ir.Operation) bool {
		counts[op.Name()]++
		return true
	})
	assert.Zero(t, counts["graph.rmsnorm"])
	assert.Equal(t, 1, counts["graph.reduce_sum"])
	assert.Equal(t, 1, counts["graph.rsqrt"])
}
