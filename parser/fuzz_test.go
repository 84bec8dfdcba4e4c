package parser

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tensorforge/tensorforge/ir"
)

// FuzzParse checks that parsing never panics, that every error is a
// diagnostic pointing into the input, that the scanner agrees with the
// reference Rules, and that whatever parses round-trips through the printer.
// Its corpus is testdata/fuzz/FuzzParse (valid and invalid inputs, and the
// inputs that once broke the parser).
func FuzzParse(f *testing.F) {
	for _, tc := range printTests {
		f.Add(tc.src)
	}
	for _, tc := range errorTests {
		f.Add(tc.src)
	}
	for _, src := range lexerCases {
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, src string) {
		requireSameTokens(t, src)
		p := newParser("fuzz.tir", src, 1)
		m, err := p.parse()
		if err != nil {
			d, ok := err.(*ir.Diagnostic)
			require.True(t, ok, "error is a %T", err)
			requireInside(t, src, d)
			var sm ir.SourceManager
			sm.AddFile("fuzz.tir", src)
			require.NotEmpty(t, sm.Render(d))
			return
		}
		roundTrip(t, m)
	})
}

// requireInside checks that a diagnostic points at a character of src or
// just past the end of a line.
func requireInside(t *testing.T, src string, d *ir.Diagnostic) {
	require.Equal(t, "fuzz.tir", d.Loc.File)
	lines := strings.Split(src, "\n")
	require.True(t, d.Loc.Line >= 1 && d.Loc.Line <= len(lines), "line %d of %d: %s", d.Loc.Line, len(lines), d.Message)
	line := lines[d.Loc.Line-1]
	require.True(t, d.Loc.Col >= 1 && d.Loc.Col <= len(line)+1, "column %d of a line of %d bytes: %s", d.Loc.Col, len(line), d.Message)
	require.NotEmpty(t, d.Message)
}
