package parser

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tensorforge/tensorforge/ir"
)

func TestSplitInput(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []Chunk
	}{
		{"no separator", "a\nb\n", []Chunk{{"a\nb\n", 1}}},
		{"empty", "", []Chunk{{"", 1}}},
		{"two chunks", "a\n// -----\nb\n", []Chunk{{"a\n", 1}, {"b\n", 3}}},
		{"whitespace around the separator", "a\n  // -----  \r\nb\n\t// -----\nc", []Chunk{{"a\n", 1}, {"b\n", 3}, {"c", 5}}},
		{"separator first and last", "// -----\na\n// -----", []Chunk{{"", 1}, {"a\n", 2}, {"", 4}}},
		{"not a separator", "// ------\n//  -----\n// ----- x\n", []Chunk{{"// ------\n//  -----\n// ----- x\n", 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, SplitInput(tc.src))
		})
	}
}

// TestSplitThenParse checks that errors in later chunks point into the
// original file.
func TestSplitThenParse(t *testing.T) {
	src := "func.func @a() {\n  return\n}\n// -----\n\nfunc.func @b() {\n  %y = graph.neg %q : f32\n}\n"
	chunks := SplitInput(src)
	require.Len(t, chunks, 2)
	_, err := ParseAt("s.tir", chunks[0].Text, chunks[0].FirstLine)
	require.NoError(t, err)
	_, err = ParseAt("s.tir", chunks[1].Text, chunks[1].FirstLine)
	require.Error(t, err)
	assert.Equal(t, ir.Location{File: "s.tir", Line: 7, Col: 18}, err.(*ir.Diagnostic).Loc)
}
