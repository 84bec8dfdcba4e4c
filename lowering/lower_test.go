package lowering

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
	"github.com/tensorforge/tensorforge/parser"
)

const smallChain = `
func.func @f(%x: tensor<?x16xf32>, %w: tensor<16xf32>) -> tensor<?x16xf32> {
  %n = graph.rmsnorm %x, %w : (tensor<?x16xf32>, tensor<16xf32>) -> tensor<?x16xf32>
  %t = graph.transpose %n {perm = [0, 1]} : (tensor<?x16xf32>) -> tensor<?x16xf32>
  return %t : tensor<?x16xf32>
}`

// Lowering a lowered module changes nothing, and the output is the same
// bytes every time.
func TestIdempotentAndDeterministic(t *testing.T) {
	m := lowerText(t, smallChain, "lower-to-loops,sram-alloc", "h200")
	once := ir.Print(m.Operation, ir.PrintOptions{})
	runPipeline(t, m, "lower-to-loops,sram-alloc", "h200")
	require.Equal(t, once, ir.Print(m.Operation, ir.PrintOptions{}))
	for range 3 {
		again := lowerText(t, smallChain, "lower-to-loops,sram-alloc", "h200")
		require.Equal(t, once, ir.Print(again.Operation, ir.PrintOptions{}))
	}
	var kernels []string
	for o := m.Body().First(); o != nil; o = o.Next() {
		if k, ok := loop.AsKernel(o); ok {
			kernels = append(kernels, k.SymName()+":"+k.Kind())
		}
	}
	require.Equal(t, []string{"f_k0:row", "f_k1:generic"}, kernels)
}

// LowerToLoops without a target lowers for the cpu: 32 f32 lanes (128
// bytes), halved to the row length of 16.
func TestDefaultTarget(t *testing.T) {
	m, err := parser.Parse("t.tir", smallChain)
	require.NoError(t, err)
	require.NoError(t, LowerToLoops(m, nil))
	require.NoError(t, ir.Verify(m.Operation))
	k, ok := loop.LookupKernel(m.Operation, "f_k0")
	require.True(t, ok)
	w, _ := k.VectorWidth()
	require.Equal(t, int64(16), w)
	h200, err := target.Lookup("h200")
	require.NoError(t, err)
	m2, _ := parser.Parse("t.tir", smallChain)
	require.NoError(t, LowerToLoops(m2, h200))
	k2, _ := loop.LookupKernel(m2.Operation, "f_k0")
	w2, _ := k2.VectorWidth()
	require.Equal(t, int64(4), w2) // 16 bytes of f32
}

// What cannot be lowered is an error at the op, not a panic.
func TestErrors(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{`func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = "test.op"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %c : tensor<4xf32>
}`, "t.tir:2:3: error: 'test.op' op cannot be lowered to loops: only graph ops are"},
		{`func.func @f(%x: tensor<1x4xf32>) -> tensor<?x4xf32> {
  %b = graph.broadcast_to %x : (tensor<1x4xf32>) -> tensor<?x4xf32>
  return %b : tensor<?x4xf32>
}`, "t.tir:2:3: error: 'graph.broadcast_to' op has a result whose dimension 0 is dynamic, but no operand gives its extent"},
	} {
		m, err := parser.Parse("t.tir", c.src)
		require.NoError(t, err)
		err = LowerToLoops(m, nil)
		require.Error(t, err)
		require.Equal(t, c.want, err.Error())
	}
}
