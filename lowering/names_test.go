package lowering

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tensorforge/tensorforge/dialects/loop"
)

// TestKernelNamesAvoidFunctions: a kernel is never named like a function
// of the module, such as a user's @f_k0 beside @f.
func TestKernelNamesAvoidFunctions(t *testing.T) {
	src := `
func.func @f_k0(%a: tensor<4xf32>) -> tensor<4xf32> {
  %x = graph.exp %a : tensor<4xf32>
  return %x : tensor<4xf32>
}
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %x = graph.exp %a : tensor<4xf32>
  return %x : tensor<4xf32>
}
`
	m := lowerText(t, src, "lower-to-loops", "cpu")
	var names []string
	for o := m.Body().First(); o != nil; o = o.Next() {
		if k, ok := loop.AsKernel(o); ok {
			names = append(names, k.SymName())
		}
	}
	assert.Equal(t, []string{"f_k0_k0", "f_k1"}, names)
}
