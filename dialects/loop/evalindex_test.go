package loop_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/parser"
)

// TestEvalIndex evaluates index arithmetic over constants and a bound
// loop variable, and refuses a division it cannot do the same way on
// every backend.
func TestEvalIndex(t *testing.T) {
	m, err := parser.Parse("t.tir", `loop.kernel {kind = "elementwise", num_inputs = 1, num_outputs = 0, sram_bytes = 0, sym_name = "k", vector_width = 1} {
^bb0(%x: memref<64xf32, dram>):
  %c0 = loop.const {value = 0} : index
  %c1 = loop.const {value = 1} : index
  %c3 = loop.const {value = 3} : index
  %c5 = loop.const {value = 5} : index
  %c64 = loop.const {value = 64} : index
  loop.parallel %c0, %c64, %c1 {dist = "grid"} {
  ^bb1(%r: index):
    %a = loop.muli %r, %c3 : index
    %b = loop.addi %a, %c5 : index
    %d = loop.divi %b, %c3 : index
    %e = loop.remi %b, %c5 : index
    %f = loop.subi %c1, %c5 : index
    %g = loop.divi %f, %c3 : index
    %h = loop.mini %e, %c1 : index
    loop.yield
  } : index
  loop.return
}`)
	if !assert.NoError(t, err) {
		return
	}
	// the values in the order they are defined
	var defs []*ir.Value
	var r *ir.Value
	m.Operation.Walk(func(op *ir.Operation) bool {
		if op.Name() == loop.OpParallel {
			r = op.Region(0).Entry().Args[0]
		}
		if op.NumResults() == 1 {
			defs = append(defs, op.Result(0))
		}
		return true
	})
	names := []string{"c0", "c1", "c3", "c5", "c64", "a", "b", "d", "e", "f", "g", "h"}
	if !assert.Len(t, defs, len(names)) {
		return
	}
	vals := map[string]*ir.Value{}
	for i, n := range names {
		vals[n] = defs[i]
	}
	leaf := func(v *ir.Value) (int64, bool) { return 7, v == r }
	for name, want := range map[string]int64{"a": 21, "b": 26, "d": 8, "e": 1, "f": -4, "h": 1} {
		got, ok := loop.EvalIndex(vals[name], leaf)
		assert.True(t, ok, name)
		assert.Equal(t, want, got, name)
	}
	_, ok := loop.EvalIndex(vals["g"], leaf) // -4 / 3: truncating and flooring differ
	assert.False(t, ok)
	_, ok = loop.EvalIndex(vals["a"], nil) // r unbound
	assert.False(t, ok)
	c, ok := loop.EvalIndex(vals["c64"], nil)
	assert.True(t, ok)
	assert.Equal(t, int64(64), c)
}
