package tt

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	geval "github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/ir/target"
	"github.com/tensorforge/tensorforge/passes/difftest"
)

// TestEmulatedRoundingModes holds the tt-metal kernels, run on the
// emulation, to the float64 bounds of both rounding modes
// (difftest.RoundingError, as lowering's TestRoundingModes and the PTX
// simulator are): every example chain (RoPE's rotated columns are whole
// tiles: streams of their own, colOff), in bf16 and f16, compiled with -O2 in the
// default mode and with exact rounding, on random and extreme inputs. One
// harness builds every case.
//
// The bounds are the device's, not lowering's: intermediate tiles pass
// between the FPU and the SFPU through circular buffers in the tile's data
// format (a bf16 or f16 tile), whatever the rounding mode, and the SFPU's
// exp and reciprocal are approximations, so RMSNorm -> SiLU -> Mul is up
// to 3.5 ULPs (bf16) and 4.9 (f16) from float64 in either mode (seen over
// more input sets than the test runs); ttBound is the bound of every chain
// in both modes.
const ttBound = 6.0

func TestEmulatedRoundingModes(t *testing.T) {
	t.Parallel()
	chains, err := difftest.RoundingChains("../../examples")
	require.NoError(t, err)
	tg, err := target.Lookup("wormhole-n300")
	require.NoError(t, err)
	type run struct {
		chain int
		mode  int
		ref   []*geval.Tensor
	}
	var cases []*emuCase
	var runs []run
	for ci, c := range chains {
		ref, err := compileFor(c.Src, "decompose", tg)
		require.NoError(t, err)
		for mode, lower := range []string{"lower-to-loops", "lower-to-loops{exact-rounding=true}"} {
			lowered, err := compileFor(c.Src, graphPipeline+","+lower+",sram-alloc", tg)
			require.NoError(t, err, c.Name)
			out, err := Emit(lowered, Options{Target: tg})
			require.NoError(t, err, c.Name)
			for _, fn := range ref.Funcs() {
				for seed := int64(0); seed <= 1; seed++ {
					in, err := geval.RandomInputs(fn, seed, 1, 37)
					if seed == 0 {
						in, err = geval.ExtremeInputs(fn, 1)
					}
					require.NoError(t, err)
					want, err := geval.Run(fn, cloneAll(in), geval.Options{F64: true, RoundCasts: true})
					require.NoError(t, err)
					bc := newBuiltCase(fmt.Sprintf("%s %s mode %d seed %d", c.Name, c.Dtype, mode, seed), out, fn.SymName(), in, want)
					cases = append(cases, bc.c)
					runs = append(runs, run{chain: ci, mode: mode, ref: want})
				}
			}
		}
	}
	results := runEmu(t, cases)
	worst := map[int]*[2]float64{}
	for i, r := range runs {
		res := results[i]
		require.Zero(t, res.code, "%s: the emulation failed:\n%s", cases[i].name, res.stderr)
		if worst[r.chain] == nil {
			worst[r.chain] = &[2]float64{}
		}
		for j := range r.ref {
			e, _, bad := difftest.RoundingError(r.ref[j], res.outs[j])
			require.Empty(t, bad, "%s result %d", cases[i].name, j)
			worst[r.chain][r.mode] = max(worst[r.chain][r.mode], e)
		}
	}
	var table []string
	for ci, c := range chains {
		w := worst[ci]
		if w == nil {
			continue
		}
		assert.LessOrEqual(t, w[0], ttBound, "%s %s, default rounding", c.Name, c.Dtype)
		assert.LessOrEqual(t, w[1], max(ttBound, c.ExactBound), "%s %s, exact rounding", c.Name, c.Dtype)
		table = append(table, fmt.Sprintf("| %-17s | %-4s | %6.3f | %6.3f |", c.Name, c.Dtype, w[0], w[1]))
	}
	t.Logf("tt-metal (emulated) against float64, ULPs of the result type\n| chain | type | default | exact |\n%s", strings.Join(table, "\n"))
}
