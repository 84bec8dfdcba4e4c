package ptx

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	geval "github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/passes/difftest"
)

// TestSimulatedRoundingModes holds the PTX the h200 runs, in the
// simulator, to the float64 bounds of both rounding modes
// (difftest.RoundingError; lowering's TestRoundingModes holds the loop
// interpreter to them): every example chain in bf16 and f16, compiled with
// -O2 in the default mode and with exact rounding, on random and extreme
// inputs. The GPU's approximate exp, rsqrt and division are inside the
// bounds.
func TestSimulatedRoundingModes(t *testing.T) {
	chains, err := difftest.RoundingChains("../../examples")
	require.NoError(t, err)
	var table []string
	for _, c := range chains {
		worst := [2]float64{}
		for mode, pipeline := range []string{fullPipeline, strings.Replace(fullPipeline, "lower-to-loops", "lower-to-loops{exact-rounding=true}", 1)} {
			cases, err := c.Cases()
			require.NoError(t, err, c.Name)
			m := lower(t, c.Src, pipeline, "h200")
			for _, k := range cases {
				got, err := simRunFunc(m, k.Func, clone(k.Inputs))
				require.NoError(t, err, "%s %s", c.Name, c.Dtype)
				for r := range k.Ref {
					e, _, bad := difftest.RoundingError(k.Ref[r], got[r])
					require.Empty(t, bad, "%s %s (mode %d) result %d, input set %d", c.Name, c.Dtype, mode, r, k.Set)
					worst[mode] = max(worst[mode], e)
				}
			}
		}
		assert.LessOrEqual(t, worst[0], difftest.DefaultRoundingBound, "%s %s, default rounding", c.Name, c.Dtype)
		assert.LessOrEqual(t, worst[1], c.ExactBound, "%s %s, exact rounding", c.Name, c.Dtype)
		table = append(table, fmt.Sprintf("| %-17s | %-4s | %6.3f | %6.3f |", c.Name, c.Dtype, worst[0], worst[1]))
	}
	t.Logf("PTX (simulated) against float64, ULPs of the result type\n| chain | type | default | exact |\n%s", strings.Join(table, "\n"))
}

func clone(ts []*geval.Tensor) []*geval.Tensor {
	out := make([]*geval.Tensor, len(ts))
	for i, t := range ts {
		out[i] = t.Clone()
	}
	return out
}
