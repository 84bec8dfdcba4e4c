package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/ir"
)

func TestParseExpectations(t *testing.T) {
	type exp struct {
		sev     ir.Severity
		line    int
		unknown bool
		substr  string
	}
	tests := []struct {
		name      string
		text      string
		firstLine int
		want      []exp
	}{
		{"same line", "%x = graph.exp %a : tensor<f32> // expected-error {{bad exp}}", 1,
			[]exp{{ir.SevError, 1, false, "bad exp"}}},
		{"plus offset, no space", "// expected-warning@+2 {{w}}\nA\nB", 1,
			[]exp{{ir.SevWarning, 3, false, "w"}}},
		{"plus offset with space", "// expected-note @+1 {{n}}\nA", 1,
			[]exp{{ir.SevNote, 2, false, "n"}}},
		{"minus offset", "A\nB\n// expected-remark@-2 {{r}}", 1,
			[]exp{{ir.SevRemark, 1, false, "r"}}},
		{"above skips other expectations", "A\n// expected-error@above {{one}}\n// expected-note@above {{two}}", 1,
			[]exp{{ir.SevError, 1, false, "one"}, {ir.SevNote, 1, false, "two"}}},
		{"below skips other expectations", "// expected-error@below {{one}}\n// expected-note@below {{two}}\nA", 1,
			[]exp{{ir.SevError, 3, false, "one"}, {ir.SevNote, 3, false, "two"}}},
		{"dangling below points past the end", "A\n// expected-error@below {{x}}", 1,
			[]exp{{ir.SevError, 3, false, "x"}}},
		{"unknown location", "// expected-error@unknown {{nowhere}}", 1,
			[]exp{{ir.SevError, 1, true, "nowhere"}}},
		{"first line of a split part", "A\n// expected-error@-1 {{x}}", 10,
			[]exp{{ir.SevError, 10, false, "x"}}},
		{"text may hold braces", "// expected-error {{expects {a = 1}}}", 1,
			[]exp{{ir.SevError, 1, false, "expects {a = 1}"}}},
		{"prose is not an expectation", "// CHECK: expected error \"x\" was not produced\n// expected-error is what the comment says", 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, problems := parseExpectations("f.tir", tt.text, tt.firstLine)
			require.Empty(t, problems)
			var g []exp
			for _, e := range got {
				g = append(g, exp{e.sev, e.line, e.unknown, e.substr})
			}
			assert.Equal(t, tt.want, g)
		})
	}
}

func TestParseExpectationsProblems(t *testing.T) {
	tests := []struct {
		text, want string
	}{
		{"// expected-error@+x {{m}}", "f.tir:1:4: error: malformed expectation"},
		{"// expected-error {{m}", "f.tir:1:4: error: malformed expectation"},
		{"// expected-error@-3 {{m}}", "f.tir:1:4: error: expectation points above the start of its input (line -2)"},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			_, problems := parseExpectations("f.tir", tt.text, 1)
			require.Len(t, problems, 1)
			assert.True(t, strings.HasPrefix(problems[0].Error(), tt.want), problems[0].Error())
		})
	}
}

func diagAt(sev ir.Severity, line, col int, msg string) *ir.Diagnostic {
	return &ir.Diagnostic{Severity: sev, Loc: ir.Location{File: "f.tir", Line: line, Col: col}, Message: msg}
}

func TestVerifyDiagnostics(t *testing.T) {
	const src = `// expected-error@+1 {{operand types differ}}
%y = graph.add
%z = graph.exp // expected-warning {{exp}}
// expected-note@-1 {{defined here}}
// expected-remark@below {{fused}}
%w = graph.mul`
	withNote := diagAt(ir.SevWarning, 3, 6, "exp may overflow")
	withNote.AddNote(ir.Location{File: "f.tir", Line: 3, Col: 1}, "defined here")
	allMet := []*ir.Diagnostic{
		diagAt(ir.SevError, 2, 6, "'graph.add' op operand types differ: f32 and f16"),
		withNote,
		diagAt(ir.SevRemark, 6, 6, "[fusion] fused 2 ops"),
	}

	tests := []struct {
		name    string
		emitted []*ir.Diagnostic
		want    []string
	}{
		{"every expectation met", allMet, nil},
		{"one expectation may meet identical diagnostics", append(append([]*ir.Diagnostic{}, allMet...),
			diagAt(ir.SevError, 2, 9, "'graph.add' op operand types differ again")), nil},
		{"unexpected diagnostic", append(append([]*ir.Diagnostic{}, allMet...), diagAt(ir.SevError, 6, 6, "surprise")),
			[]string{"f.tir:6:6: error: unexpected error: surprise"}},
		{"expectation not produced", allMet[1:],
			[]string{`f.tir:1:4: error: expected error "operand types differ" was not produced`}},
		{"wrong line", []*ir.Diagnostic{diagAt(ir.SevError, 3, 6, "operand types differ"), withNote, allMet[2]},
			[]string{
				"f.tir:3:6: error: unexpected error: operand types differ",
				`f.tir:1:4: error: expected error "operand types differ" was not produced`,
			}},
		{"wrong severity is a near miss", []*ir.Diagnostic{diagAt(ir.SevWarning, 2, 6, "operand types differ"), withNote, allMet[2]},
			[]string{
				"f.tir:1:4: error: 'warning' diagnostic emitted when expecting a 'error'",
				`f.tir:1:4: error: expected error "operand types differ" was not produced`,
			}},
		{"an unexpected note", []*ir.Diagnostic{allMet[0], diagAt(ir.SevWarning, 3, 6, "exp").AddNote(ir.Location{File: "f.tir", Line: 2, Col: 1}, "elsewhere"), allMet[2]},
			[]string{
				"f.tir:2:1: error: unexpected note: elsewhere",
				`f.tir:4:4: error: expected note "defined here" was not produced`,
			}},
		{"a diagnostic without location", append(append([]*ir.Diagnostic{}, allMet...), &ir.Diagnostic{Severity: ir.SevError, Message: "global"}),
			[]string{"error: unexpected error: global"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := verifyDiagnostics("f.tir", src, 1, tt.emitted)
			var msgs []string
			for _, d := range got {
				msgs = append(msgs, d.Error())
			}
			assert.Equal(t, tt.want, msgs)
		})
	}
}

func TestVerifyDiagnosticsUnknownLocation(t *testing.T) {
	src := "// expected-error@unknown {{global}}\nA"
	got := verifyDiagnostics("f.tir", src, 1, []*ir.Diagnostic{{Severity: ir.SevError, Message: "a global problem"}})
	assert.Empty(t, got)
	got = verifyDiagnostics("f.tir", src, 1, []*ir.Diagnostic{diagAt(ir.SevError, 1, 1, "global")})
	require.Len(t, got, 2)
	assert.Equal(t, "f.tir:1:1: error: unexpected error: global", got[0].Error())
}
