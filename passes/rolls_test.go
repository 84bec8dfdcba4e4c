package passes

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/ir"
)

// A roll of RMSNorm's result, of an exp and of another roll sinks to rolls
// of the function's arguments (the per-row rsqrt, a splat and the weight's
// broadcast stay as they are), two rolls become one, and the results are the
// same bits before and after, on random and extreme inputs.
func TestSinkRolls(t *testing.T) {
	src := `func.func @norm(%x: tensor<3x16xf32>, %w: tensor<16xf32>) -> tensor<3x16xf32> {
  %p = graph.mul %x, %x : tensor<3x16xf32>
  %m = graph.reduce_mean %p {axes = [1], keepdim = true} : (tensor<3x16xf32>) -> tensor<3x1xf32>
  %r = graph.rsqrt %m : tensor<3x1xf32>
  %n = graph.mul %x, %r : (tensor<3x16xf32>, tensor<3x1xf32>) -> tensor<3x16xf32>
  %y = graph.mul %w, %n : (tensor<16xf32>, tensor<3x16xf32>) -> tensor<3x16xf32>
  %yr = graph.roll %y {shift = 8} : tensor<3x16xf32>
  %o = graph.add %y, %yr : tensor<3x16xf32>
  return %o : tensor<3x16xf32>
}
func.func @twice(%x: tensor<2x6xf32>) -> tensor<2x6xf32> {
  %two = graph.constant dense<2.0> : tensor<f32>
  %e = graph.exp %x : tensor<2x6xf32>
  %s = graph.mul %e, %two : (tensor<2x6xf32>, tensor<f32>) -> tensor<2x6xf32>
  %a = graph.roll %s {shift = 4} : tensor<2x6xf32>
  %b = graph.roll %a {shift = -1} : tensor<2x6xf32>
  return %b : tensor<2x6xf32>
}
`
	before := fzParse(t, src)
	after := fzParse(t, src)
	for _, f := range after.Funcs() {
		require.True(t, sinkRolls(f.Body()))
	}
	DCE(after.Operation)
	require.NoError(t, ir.Verify(after.Operation))
	rolls := map[string][]int64{}
	after.Operation.Walk(func(op *ir.Operation) bool {
		if r, ok := graph.AsRoll(op); ok {
			require.True(t, r.Input().IsBlockArg(), "a roll of a computed value is left:\n%s", ir.Print(after.Operation, ir.PrintOptions{}))
			fn := op.ParentOp()
			for fn != nil && fn.Name() != ir.FuncOpName {
				fn = fn.ParentOp()
			}
			name := ir.Func{Operation: fn}.SymName()
			rolls[name] = append(rolls[name], r.Shift())
		}
		return true
	})
	require.Equal(t, map[string][]int64{"norm": {8, 8}, "twice": {3}}, rolls, "x and w rolled by 8; 4 - 1 as one roll")
	fb, fa := before.Funcs(), after.Funcs()
	for i := range fb {
		require.Zero(t, fzCompare(t, fb[i], fa[i], 0))
	}
}
