package ptx

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/ir"
)

// TestSimulatedCapturedLayers runs every region of the decoder layers the
// PyTorch frontend captured (lit-tests/pytorch), with 2 tokens and the MLP
// width cut to 448, in the simulator against the loop interpreter: the
// kernels real models bring, with their kept rows, in-place rows and
// narrow row copies.
func TestSimulatedCapturedLayers(t *testing.T) {
	files, err := filepath.Glob("../../lit-tests/pytorch/*prefill*.tir")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	shrink := strings.NewReplacer("x4096x", "x2x", ", 4096, ", ", 2, ", "14336", "448", "12288", "384")
	for _, f := range files {
		if strings.HasSuffix(f, "-matmul.tir") {
			// rows flattened to [4096, 4096] are tokens and hidden size
			// alike, which a textual shrink cannot tell apart; the
			// matmul kernels are simulated in sim_diff_test.go
			continue
		}
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		m := lower(t, shrink.Replace(string(src)), fullPipeline, "h200")
		for _, fn := range m.Funcs() {
			nres := int(fn.Operation.Attr("num_results").(ir.IntAttr).Value)
			var shapes [][]int64
			for _, a := range fn.Args()[:len(fn.Args())-nres] {
				shapes = append(shapes, a.Type().(ir.MemRefType).Shape)
			}
			c := simCase{fn: fn.SymName(), shapes: shapes, ulps: 2, rel: 1e-3}
			t.Run(filepath.Base(f)+"/"+c.fn, func(t *testing.T) { runSimCase(t, m, c, false) })
		}
	}
}
