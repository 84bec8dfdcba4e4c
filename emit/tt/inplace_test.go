package tt

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/ir"
)

// A kept row overwritten in place (log_softmax stores x - max over x)
// while another value of the same loop still reads the old tile
// (logaddexp(min, x)) used to stop the backend with its own check,
// "overwrites its kept row (cb_row) before it is done reading the tile",
// reported as a user error (random programs found it). The replacement
// tile now waits in a buffer of its own until the old one is read for the
// last time; the results match the interpreter.
func TestInPlaceRowReadAfterItsReplacementIsMade(t *testing.T) {
	t.Parallel()
	progs := map[string]string{
		"logaddexp and log_softmax": `func.func @f(%x: tensor<40x70xf32>) -> (tensor<40x70xf32>, tensor<40x70xf32>) {
  %m = graph.reduce_min %x {axes = [-1], keepdim = true} : (tensor<40x70xf32>) -> tensor<40x1xf32>
  %a = graph.logaddexp %m, %x : (tensor<40x1xf32>, tensor<40x70xf32>) -> tensor<40x70xf32>
  %s = graph.log_softmax %x {axis = -1} : tensor<40x70xf32>
  return %a, %s : tensor<40x70xf32>, tensor<40x70xf32>
}`,
		"bf16 rows": `func.func @f(%x: tensor<33x64xbf16>) -> (tensor<33x64xbf16>, tensor<33x64xbf16>) {
  %m = graph.reduce_min %x {axes = [-1], keepdim = true} : (tensor<33x64xbf16>) -> tensor<33x1xbf16>
  %a = graph.logaddexp %m, %x : (tensor<33x1xbf16>, tensor<33x64xbf16>) -> tensor<33x64xbf16>
  %s = graph.log_softmax %x {axis = -1} : tensor<33x64xbf16>
  return %a, %s : tensor<33x64xbf16>, tensor<33x64xbf16>
}`,
	}
	var cases []builtCase
	for _, name := range []string{"logaddexp and log_softmax", "bf16 rows"} {
		for i, tg := range []string{"blackhole-p150", "wormhole-n300"} {
			built, err := buildCases(t, name, progs[name], graphPipeline, tg, int64(3+i), 37)
			require.NoError(t, err, "%s on %s", name, tg)
			for _, c := range built {
				compute := fileOf(c.c.out, "f_k0/compute.cpp")
				assert.Contains(t, compute, "cb_row_next", "%s: the replacement tile waits in its own buffer", name)
			}
			cases = append(cases, built...)
		}
	}
	runAndCompare(t, cases)
}

// A broken invariant of the backend is an internal error (an
// *ir.InternalError, which the driver reports with exit status 2), not a
// diagnostic about the program.
func TestBrokenInvariantIsAnInternalError(t *testing.T) {
	row := &cbuf{name: "cb_row"}
	g := &kgen{name: "k", sram: map[*ir.Value]*sramBuf{nil: {cb: row}}}
	b := &ir.Block{}
	old := &cbValue{cb: row, index: "0", scope: b}
	// the replacement is pushed by the first section, the old tile popped
	// only by the second
	stmts := []stmt{
		&sectionStmt{dests: []*cbuf{row}},
		&sectionStmt{reads: []*cbValue{old}, pops: []cbOp{{cb: row, n: "1", pop: true}}},
	}
	g.k.Operation = &ir.Operation{}
	err := catchInternal(func() { g.checkInPlace(stmts) })
	var ie *ir.InternalError
	require.True(t, errors.As(err, &ie), "%v", err)
	require.Len(t, ie.Diags, 1)
	assert.True(t, strings.HasSuffix(ie.Diags[0].Message, "overwrites its kept row (cb_row) before it is done reading the tile"), ie.Diags[0].Message)
}
