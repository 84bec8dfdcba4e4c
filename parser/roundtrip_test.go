package parser

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tensorforge/tensorforge/ir"
)

var printForms = []struct {
	name string
	opts ir.PrintOptions
}{
	{"custom", ir.PrintOptions{}},
	{"generic", ir.PrintOptions{Generic: true}},
	{"custom+debuginfo", ir.PrintOptions{DebugInfo: true}},
	{"generic+debuginfo", ir.PrintOptions{Generic: true, DebugInfo: true}},
}

// roundTrip checks that parse -> print -> parse -> print gives the same
// bytes in every print form, and that every form parses back to the same
// IR. m is the parsed input.
func roundTrip(t testing.TB, m ir.Module) {
	for _, f := range printForms {
		if f.opts.DebugInfo && !allLocationsKnown(m) {
			// the printer omits unknown locations, which then become
			// positions in the printed text
			continue
		}
		first := ir.Print(m.Operation, f.opts)
		m2, err := Parse("printed.tir", first)
		require.NoError(t, err, "%s form does not parse back:\n%s", f.name, first)
		second := ir.Print(m2.Operation, f.opts)
		require.Equal(t, first, second, "%s form does not round-trip", f.name)
		require.Equal(t, structure(m, f.opts.DebugInfo), structure(m2, f.opts.DebugInfo), "%s form parses to different IR", f.name)
	}
}

// structure prints a copy of m in the generic form without value names and
// block labels: the IR without the name hints, which the custom form of a
// function (no entry block label) does not keep. withLocs adds locations.
func structure(m ir.Module, withLocs bool) string {
	c := m.Clone(ir.Mapping{})
	c.Walk(func(op *ir.Operation) bool {
		for _, r := range op.Results() {
			r.Name = ""
		}
		for _, r := range op.Regions() {
			for _, b := range r.Blocks {
				b.Label = ""
				for _, a := range b.Args {
					a.Name = ""
				}
			}
		}
		return true
	})
	return ir.Print(c, ir.PrintOptions{Generic: true, DebugInfo: withLocs})
}

func allLocationsKnown(m ir.Module) bool {
	known := true
	m.Walk(func(op *ir.Operation) bool {
		known = known && op.Loc.Known()
		return known
	})
	return known
}

// validInputs returns every valid input the tests know: the print tests
// and the lit tests of the parser that expect no diagnostics.
func validInputs(t *testing.T) map[string]string {
	in := map[string]string{}
	for _, tc := range printTests {
		in["print/"+tc.name] = tc.src
	}
	files, err := filepath.Glob("../lit-tests/parser/*.tir")
	require.NoError(t, err)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		if strings.Contains(string(b), "expected-error") {
			continue
		}
		for i, c := range SplitInput(string(b)) {
			in[filepath.Base(f)+"#"+string(rune('0'+i))] = c.Text
		}
	}
	return in
}

func TestRoundTrip(t *testing.T) {
	for name, src := range validInputs(t) {
		t.Run(name, func(t *testing.T) {
			m, err := Parse("input.tir", src)
			require.NoError(t, err)
			roundTrip(t, m)
		})
	}
}

// TestLocationsSurvive checks that printed locations, not the positions in
// the printed text, are what a reparse records.
func TestLocationsSurvive(t *testing.T) {
	src := "func.func @f(%x: f32) -> f32 {\n  %y = graph.neg %x : f32\n  return %y : f32\n}\n"
	m, err := Parse("orig.tir", src)
	require.NoError(t, err)
	printed := ir.Print(m.Operation, ir.PrintOptions{DebugInfo: true})
	require.Contains(t, printed, `%y = graph.neg %x : f32 loc("orig.tir":2:3)`)
	require.Contains(t, printed, `return %y : f32 loc("orig.tir":3:3)`)
	require.Contains(t, printed, `} loc("orig.tir":1:1)`)
	m2, err := Parse("other.tir", printed)
	require.NoError(t, err)
	fn := m2.Funcs()[0]
	require.Equal(t, ir.Location{File: "orig.tir", Line: 1, Col: 1}, fn.Loc)
	require.Equal(t, ir.Location{File: "orig.tir", Line: 2, Col: 3}, fn.Body().First().Loc)
	require.Equal(t, ir.Location{File: "orig.tir", Line: 1, Col: 1}, m2.Loc)
}

func TestForwardReference(t *testing.T) {
	src := `func.func @f(%x: f32) -> f32 {
  test.region {
    %u = graph.add %later, %x : f32
  }
  %r:2 = test.pair %later : (f32) -> (f32, f32)
  %later = graph.neg %x : f32
  return %later : f32
}`
	m, err := Parse("fwd.tir", src)
	require.NoError(t, err)
	ops := m.Funcs()[0].Body().Ops()
	later := ops[2].Result(0)
	require.Equal(t, "later", later.Name)
	add := ops[0].Region(0).Entry().First()
	require.Same(t, later, add.Operand(0))
	require.Same(t, later, ops[1].Operand(0))
	require.Len(t, later.Uses(), 3)
}
