package passes

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

// graph.dequantize with per-channel scales and no zero points (zero
// points 0) was rejected ("expected 1 or 3 operands, found 2") though the
// zero points are optional; it now verifies, evaluates, and expands in
// legalize-numerics and decompose to the interpreter's values, which are
// those of explicit zero points of 0. i32 accumulators, f8 and a middle
// axis included.
func TestDequantizeWithoutZeroPoints(t *testing.T) {
	for _, c := range []struct{ q, axis, out string }{
		{"tensor<3x5x7xi8>", "1", "tensor<3x5x7xf32>"},
		{"tensor<3x5x7xi32>", "2", "tensor<3x5x7xbf16>"},
		{"tensor<3x5x7xui8>", "0", "tensor<3x5x7xf16>"},
		{"tensor<3x5x7xf8E4M3FN>", "-1", "tensor<3x5x7xf32>"},
	} {
		ch := map[string]string{"0": "3", "1": "5", "2": "7", "-1": "7"}[c.axis]
		src := strings.NewReplacer("$Q", c.q, "$A", c.axis, "$C", ch, "$O", c.out).Replace(`func.func @f(%q: $Q, %s: tensor<$Cxf32>, %z: tensor<$Cxi32>) -> ($O, $O) {
  %a = graph.dequantize %q, %s {axis = $A} : ($Q, tensor<$Cxf32>) -> $O
  %zero = graph.constant dense<0> : tensor<$Cxi32>
  %b = graph.dequantize %q, %s, %zero {axis = $A} : ($Q, tensor<$Cxf32>, tensor<$Cxi32>) -> $O
  return %a, %b : $O, $O
}`)
		name := fmt.Sprintf("%s axis %s", c.q, c.axis)
		orig := numParse(t, src)
		dq, ok := graph.AsDequantize(numOnlyFunc(t, orig).Body().First())
		require.True(t, ok, name)
		require.Equal(t, 2, dq.NumOperands(), name)
		require.Nil(t, dq.ZeroPoints(), name)
		for _, pipeline := range []string{"legalize-numerics", "decompose"} {
			m := numParse(t, src)
			p, err := ir.ParsePipeline(pipeline)
			require.NoError(t, err)
			require.NoError(t, (&ir.PassManager{Pipeline: p, VerifyEach: true}).Run(m, &ir.PassContext{Diags: &ir.Diagnostics{}}), "%s: %s", name, pipeline)
			m.Walk(func(op *ir.Operation) bool {
				require.NotEqual(t, graph.OpDequantize, op.Name(), "%s: %s expands every dequantize", name, pipeline)
				return true
			})
			fn := numOnlyFunc(t, orig)
			for seed := int64(1); seed <= 3; seed++ {
				in, err := eval.RandomInputs(fn, seed, 20, 0)
				require.NoError(t, err)
				for i := range in[1].Data {
					in[1].Data[i] = numeric.RoundTo(0.01+math.Abs(in[1].Data[i])/100, in[1].Elem)
				}
				want, err := eval.Run(fn, in, eval.Options{})
				require.NoError(t, err, name)
				got, err := eval.Run(numOnlyFunc(t, m), in, eval.Options{})
				require.NoError(t, err, name)
				for r := range want {
					for i := range want[r].Data {
						require.True(t, numSame(want[r].Data[i], got[r].Data[i]), "%s %s result %d element %d: got %v, want %v", name, pipeline, r, i, got[r].Data[i], want[r].Data[i])
						require.True(t, numSame(want[0].Data[i], want[1].Data[i]), "%s: no zero points are zero points of 0", name)
					}
				}
			}
		}
	}
}
