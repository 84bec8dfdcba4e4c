package loop_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/ir"
)

// boundsKernel is a kernel over 4 rows of 64 f32 whose grid and threads
// loop take their bounds from the constants named.
func boundsKernel(gridHi, lo, hi, step string) string {
	return fmt.Sprintf(`loop.kernel {kind = "row", num_inputs = 1, num_outputs = 1, sym_name = "k"} {
^bb0(%%x: memref<4x64xf32, dram>, %%y: memref<4x64xf32, dram>):
  %%c0 = loop.const {value = 0} : index
  %%c1 = loop.const {value = 1} : index
  %%c4 = loop.const {value = 4} : index
  %%c5 = loop.const {value = 5} : index
  %%c8 = loop.const {value = 8} : index
  %%c60 = loop.const {value = 60} : index
  %%c64 = loop.const {value = 64} : index
  %%c65 = loop.const {value = 65} : index
  %%cm8 = loop.const {value = -8} : index
  loop.parallel %%c0, %s, %%c1 {dist = "grid"} {
  ^bb0(%%r: index):
    loop.for %s, %s, %s {dist = "threads"} {
    ^bb0(%%i: index):
      %%v = loop.load %%x, %%r, %%i : (memref<4x64xf32, dram>, index, index) -> vector<4xf32>
      loop.store %%v, %%y, %%r, %%i : (vector<4xf32>, memref<4x64xf32, dram>, index, index) -> ()
      loop.yield
    } : index
    loop.yield
  } : index
  loop.return
}
`, gridHi, lo, hi, step)
}

// Loops whose constant bounds never end, or whose accesses leave the
// buffer, are verifier errors at the op; every backend used to emit them.
func TestLoopBounds(t *testing.T) {
	cases := []struct {
		name                 string
		gridHi, lo, hi, step string
		want                 string // "" when valid
	}{
		{"in range", "%c4", "%c0", "%c64", "%c4", ""},
		{"last vector ends at the extent", "%c4", "%c0", "%c64", "%c60", ""},
		{"no iteration", "%c4", "%c64", "%c0", "%c4", ""},
		{"a loop that stops short", "%c4", "%c0", "%c60", "%c8", ""},
		{"step 0", "%c4", "%c0", "%c64", "%c0", "'loop.for' op has a step of 0; the step must be positive"},
		{"negative step", "%c4", "%c0", "%c64", "%cm8", "'loop.for' op has a step of -8; the step must be positive"},
		{"negative lower bound", "%c4", "%cm8", "%c64", "%c8", "'loop.for' op has a negative lower bound (-8); indices start at 0"},
		{"lanes past the row", "%c4", "%c0", "%c65", "%c8", "'loop.load' op index #1 goes up to 64 (the loop's last iteration), and its 4 lanes end at 68, past the 64 elements of dimension #1 of 'memref<4x64xf32, dram>'"},
		{"grid past the rows", "%c5", "%c0", "%c64", "%c4", "'loop.load' op index #0 goes up to 4 (the loop's last iteration), past the 4 elements of dimension #0 of 'memref<4x64xf32, dram>'"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := parse(t, boundsKernel(c.gridHi, c.lo, c.hi, c.step))
			err := ir.Verify(m.Operation)
			if c.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			diags := ir.AsDiagnostics(err)
			assert.Equal(t, c.want, diags[0].Message)
			assert.True(t, diags[0].Loc.Known(), "the error is located")
		})
	}
}
