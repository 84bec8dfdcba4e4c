package lowering

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/parser"
)

// Programs with zero-extent rows or index tensors are refused with an
// error at the op that says why, instead of the failure of a loop op the
// user never wrote ("'loop.load' op accesses 32 lanes, more than the 0
// ..."). Zero extents elsewhere lower and run.
func TestUnsupportedTensorTypes(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"exp of an empty vector", `func.func @f(%x: tensor<0xf32>) -> tensor<0xf32> {
  %y = graph.exp %x : tensor<0xf32>
  return %y : tensor<0xf32>
}`, "'tensor<0xf32>' has a last dimension of extent 0: tensors with zero-extent rows are not supported by the backends (tfc interpret evaluates them)"},
		{"reduction of empty rows", `func.func @f(%x: tensor<4x0xf32>) -> tensor<4xf32> {
  %y = graph.reduce_sum %x {axes = [1]} : (tensor<4x0xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}`, "'tensor<4x0xf32>' has a last dimension of extent 0"},
		{"softmax of empty rows", `func.func @f(%x: tensor<4x0xf32>) -> tensor<4x0xf32> {
  %y = graph.softmax %x : tensor<4x0xf32>
  return %y : tensor<4x0xf32>
}`, "'tensor<4x0xf32>' has a last dimension of extent 0"},
		{"index add", `func.func @f(%x: tensor<4xindex>, %z: tensor<4xindex>) -> tensor<4xindex> {
  %y = graph.add %x, %z : tensor<4xindex>
  return %y : tensor<4xindex>
}`, "'tensor<4xindex>' has index elements: index tensors are not supported by the backends (tfc interpret evaluates them); use i64 or i32 elements"},
		{"no rows", `func.func @f(%x: tensor<0x4xf32>) -> tensor<0x4xf32> {
  %y = graph.exp %x : tensor<0x4xf32>
  return %y : tensor<0x4xf32>
}`, ""},
		{"rows of zero rows", `func.func @f(%x: tensor<0x4xf32>) -> tensor<0xf32> {
  %y = graph.reduce_sum %x {axes = [1]} : (tensor<0x4xf32>) -> tensor<0xf32>
  return %y : tensor<0xf32>
}`, ""},
		{"an empty reduction", `func.func @f(%x: tensor<0x4xf32>) -> tensor<4xf32> {
  %y = graph.reduce_sum %x {axes = [0]} : (tensor<0x4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}`, ""},
	}
	for _, c := range cases {
		for _, pipeline := range []string{"lower-to-loops", "decompose,fuse,lower-to-loops,sram-alloc"} {
			t.Run(c.name+"/"+pipeline, func(t *testing.T) {
				m, err := parser.Parse("in.tir", c.src)
				require.NoError(t, err)
				p, err := ir.ParsePipeline(pipeline)
				require.NoError(t, err)
				pm := &ir.PassManager{Pipeline: p, VerifyEach: true}
				err = pm.Run(m, &ir.PassContext{Diags: &ir.Diagnostics{}})
				if c.want == "" {
					require.NoError(t, err)
					return
				}
				require.Error(t, err)
				diags := ir.AsDiagnostics(err)
				require.Len(t, diags, 1, "%v", err)
				assert.Contains(t, diags[0].Message, c.want)
				assert.Equal(t, ir.Location{File: "in.tir", Line: 2, Col: 3}, diags[0].Loc)
			})
		}
	}
}
