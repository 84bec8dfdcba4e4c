package lowering

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	leval "github.com/tensorforge/tensorforge/dialects/loop/eval"
	"github.com/tensorforge/tensorforge/parser"
	"github.com/tensorforge/tensorforge/passes/difftest"
)

// The two rounding modes against float64. Each example chain, in bf16 and
// f16, is compiled with -O2's graph passes and lowered in either mode, run
// in the loop interpreter (what every backend computes, up to the order
// of row sums), and compared with the float64 evaluation of the program in
// which only the inputs, the outputs and the explicit graph.casts are
// rounded (geval.Options{F64: true, RoundCasts: true}). The program is
// taken after decompose, which writes the rounding of a composite op's
// result (rmsnorm, softmax, ... round what they return, as a library call
// does) as a graph.cast.
//
// The error of an element is |got - ref| in ULPs of the result type at
// max(|ref|, scale/256), scale being the largest finite |ref| of the
// result: an element that cancels to far below the magnitude of its
// tensor (RoPE's x1 cos - x2 sin) is only known to the absolute error of
// the terms it is the difference of. A NaN reference must be matched by a
// NaN and an infinite one by the same infinity, or by NaN where a factor
// of it underflows in f32 though not in float64 (silu(-88.7) * inf). A
// finite reference whose result is infinite or NaN overflowed in f32 on the
// way (1e30 * 1e30 - 1e30 * 1e30 is finite only in float64): such elements
// are counted and reported, not measured.
//
// Bounds: by default (f32 between ops) 1 ULP, the final rounding (0.5) and
// what f32 arithmetic and row sums add to it; with exact rounding every op
// rounds, 4 ULPs, except where rounded terms cancel: RoPE's two products
// are rounded before their difference is taken, which loses up to 256
// ULPs of a result far below its tensor's scale (64 measured as bound).
// The default must be at least as accurate as exact rounding on every
// chain. `go test -run TestRoundingModes -v ./lowering`
// prints the table.

func TestRoundingModes(t *testing.T) {
	pipeline := "canonicalize,cse,legalize-numerics,decompose,fuse,canonicalize,cse,dce,lower-to-loops,sram-alloc"
	var table []string
	chains, err := difftest.RoundingChains("../examples")
	require.NoError(t, err)
	for _, c := range chains {
		worst, over := [2]float64{}, [2]int{}
		for mode, exact := range []bool{false, true} {
			worst[mode], over[mode] = roundingError(t, c, pipeline, exact)
			bound := difftest.DefaultRoundingBound
			if exact {
				bound = c.ExactBound
			}
			assert.LessOrEqual(t, worst[mode], bound, "%s %s, exact rounding %v", c.Name, c.Dtype, exact)
		}
		assert.LessOrEqual(t, worst[0], worst[1]+0.5, "%s %s: the default rounding is less accurate than exact rounding", c.Name, c.Dtype)
		table = append(table, fmt.Sprintf("| %-17s | %-4s | %6.3f | %6.3f | %d / %d |", c.Name, c.Dtype, worst[0], worst[1], over[0], over[1]))
	}
	t.Logf("max error against float64 (ULPs of the result type)\n"+
		"| chain             | type | default (f32 between ops) | exact rounding | f32 overflows (default / exact) |\n%s", strings.Join(table, "\n"))
}

// roundingError is the largest error (in the measure of the file comment)
// of the lowered chain over random and extreme inputs.
func roundingError(t *testing.T, c difftest.RoundingChain, pipeline string, exact bool) (worst float64, overflows int) {
	t.Helper()
	cases, err := c.Cases()
	require.NoError(t, err, c.Name)
	lowered, err := parser.Parse("chain.tir", c.Src)
	require.NoError(t, err, c.Name)
	runPipelineMode(t, lowered, pipeline, "h200", exact)
	for _, k := range cases {
		got, err := leval.Run(lowered, k.Func, cloneTensors(k.Inputs))
		require.NoError(t, err, c.Name)
		for r := range k.Ref {
			e, n, bad := difftest.RoundingError(k.Ref[r], got[r])
			require.Empty(t, bad, "%s %s (exact rounding %v) @%s result %d, input set %d", c.Name, c.Dtype, exact, k.Func, r, k.Set)
			worst = math.Max(worst, e)
			overflows += n
		}
	}
	return worst, overflows
}
