package ptx

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/dialects/loop"
)

// TestSimulatedParts runs kernels of several parts (testdata/parts.tir)
// against the loop interpreter: the parts share one launch, each CTA
// running the part its number falls in over its own range of CTAs
// (parts.go), with several rounds of the grid-stride loops per part.
func TestSimulatedParts(t *testing.T) {
	m := lowerFile(t, "testdata/parts.tir")
	multi := 0
	for _, k := range loop.KernelsOf(m) {
		if len(loop.Parts(k)) > 1 {
			multi++
		}
	}
	require.Equal(t, 2, multi, "lower-to-loops forms a kernel of two parts per function")
	for _, c := range []simCase{
		{fn: "rope_qk", shapes: [][]int64{{1, 4, 37, 16}, {1, 2, 37, 16}, {1, 1, 37, 16}, {1, 1, 37, 16}}, ulps: 1},
		{fn: "rope_qk", shapes: [][]int64{{1, 4, 1, 16}, {1, 2, 1, 16}, {1, 1, 1, 16}, {1, 1, 1, 16}}, ulps: 1},
		{fn: "norm_qk", shapes: [][]int64{{13, 8, 64}, {13, 2, 64}, {64}, {64}, {13, 1, 64}}, ulps: 2, rel: 1e-6},
	} {
		t.Run(c.fn, func(t *testing.T) { runSimCase(t, m, c, true) })
	}
	files, err := emitted(m)
	require.NoError(t, err)
	for _, f := range files {
		if !strings.HasSuffix(f.Name, ".ptx") {
			continue
		}
		// one entry per kernel of parts: none split
		assert.Equal(t, 1, strings.Count(f.Text, ".visible .entry"), f.Name)
		assert.Contains(t, f.Text, "of 2 parts in one launch", f.Name)
	}
}
