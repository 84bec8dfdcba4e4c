package parser

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/ir"
)

// TestNestingLimit: input nested past MaxNestingDepth is a located error,
// not a stack overflow or a hang, 100,000 levels deep too; the limit
// itself parses.
func TestNestingLimit(t *testing.T) {
	const deep = 100_000
	modules := func(n int) string { return strings.Repeat("module {\n", n) + strings.Repeat("}\n", n) }
	regions := func(n int) string {
		return "func.func @f() {\n" + strings.Repeat("\"test.op\"() ({\n", n) + strings.Repeat("}) : () -> ()\n", n) + "return\n}\n"
	}
	arrays := func(n int) string {
		return "func.func @f() attributes {a = " + strings.Repeat("[", n) + strings.Repeat("]", n) + "} {\nreturn\n}\n"
	}
	dense := func(n int) string {
		return "func.func @f() {\n  %c = graph.constant dense<" + strings.Repeat("[", n) + "1.0" + strings.Repeat("]", n) +
			"> : tensor<f32>\n  return\n}\n"
	}
	cases := []struct {
		name string
		src  func(int) string
		// the line and column of the bracket past the limit, at depth n
		line, col func(n int) int
		what      string
	}{
		{"modules", modules, func(n int) int { return MaxNestingDepth + 1 }, func(int) int { return 8 }, "region"},
		{"regions", regions, func(n int) int { return MaxNestingDepth + 1 }, func(int) int { return 14 }, "region"},
		{"arrays", arrays, func(int) int { return 1 }, func(int) int { return len("func.func @f() attributes {a = ") + MaxNestingDepth + 1 }, "array"},
		{"dense", dense, func(int) int { return 2 }, func(int) int { return len("  %c = graph.constant dense<") + MaxNestingDepth }, "dense literal list"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("deep.tir", c.src(deep))
			require.Error(t, err)
			d, ok := err.(*ir.Diagnostic)
			require.True(t, ok, "%T: %v", err, err)
			assert.Contains(t, d.Message, c.what+" nested too deeply: more than 256 levels")
			assert.Equal(t, "deep.tir", d.Loc.File)
			assert.Equal(t, c.line(deep), d.Loc.Line, d.Message)
			assert.Equal(t, c.col(deep), d.Loc.Col, d.Message)
		})
	}
	t.Run("at the limit", func(t *testing.T) {
		// the function's body and 255 op regions: 256 levels (the implicit
		// module of a file has no braces)
		_, err := Parse("deep.tir", regions(MaxNestingDepth-1))
		require.NoError(t, err)
		_, err = Parse("deep.tir", regions(MaxNestingDepth))
		require.Error(t, err)
		_, err = Parse("deep.tir", modules(MaxNestingDepth))
		require.NoError(t, err)
		_, err = Parse("deep.tir", modules(MaxNestingDepth+1))
		require.Error(t, err)
	})
}
