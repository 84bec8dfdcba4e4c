package main

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/tensorforge/tensorforge/ir"
)

// This file implements --verify-diagnostics with MLIR's semantics. A test
// states the diagnostics it expects in comments:
//
//	// expected-error @+1 {{'graph.add' op operand types differ}}
//	%y = graph.add %a, %b : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
//	%z = graph.exp %y : tensor<4xf32> // expected-warning {{exp of}}
//
// The text between `{{` and `}}` must occur in the message. The line is the
// comment's own, or moved by a designator: `@+N` / `@-N` (N lines below or
// above), `@above` (the closest line above that holds no expectation),
// `@below` (the closest such line below) or `@unknown` (a diagnostic
// without a location). Every diagnostic emitted must be expected, and
// every expectation met; a diagnostic's notes count as diagnostics too.

// expectation is one `expected-KIND {{text}}` comment.
type expectation struct {
	sev     ir.Severity
	line    int  // the line the diagnostic must be on
	unknown bool // @unknown: a diagnostic without a location
	substr  string
	at      ir.Location // where the comment is, for "was not produced"
	matched bool
}

// expectedRE is MLIR's pattern for an expectation.
var expectedRE = regexp.MustCompile(`expected-(error|warning|note|remark) *(@([+-][0-9]+|above|below|unknown))? *\{\{(.*)\}\}\s*$`)

// expectedStartRE finds what looks like the start of an expectation, so a
// malformed one is reported instead of silently ignored.
var expectedStartRE = regexp.MustCompile(`expected-(error|warning|note|remark) *(@|\{\{)`)

var severityByName = map[string]ir.Severity{
	"error": ir.SevError, "warning": ir.SevWarning, "note": ir.SevNote, "remark": ir.SevRemark,
}

// parseExpectations collects the expectations of one input. text starts at
// line firstLine of file. Malformed expectations come back as errors.
func parseExpectations(file, text string, firstLine int) ([]*expectation, []*ir.Diagnostic) {
	var (
		exps      []*expectation
		problems  []*ir.Diagnostic
		pending   []*expectation  // @below, waiting for the next plain line
		lastPlain = firstLine - 1 // the last line without an expectation
	)
	lines := strings.Split(text, "\n")
	for i, raw := range lines {
		lineNo := firstLine + i
		line := strings.TrimRight(raw, " \t\r")
		m := expectedRE.FindStringSubmatchIndex(line)
		if m == nil {
			if s := expectedStartRE.FindStringIndex(line); s != nil {
				problems = append(problems, ir.Errorf(ir.Location{File: file, Line: lineNo, Col: s[0] + 1},
					"malformed expectation: write `expected-KIND {{text}}`, optionally with @+N, @-N, @above, @below or @unknown after KIND"))
			}
			for _, e := range pending {
				e.line = lineNo
			}
			pending = pending[:0]
			lastPlain = lineNo
			continue
		}
		e := &expectation{
			sev:    severityByName[line[m[2]:m[3]]],
			line:   lineNo,
			substr: line[m[8]:m[9]],
			at:     ir.Location{File: file, Line: lineNo, Col: m[0] + 1},
		}
		if m[6] >= 0 {
			switch d := line[m[6]:m[7]]; d {
			case "above":
				e.line = lastPlain
			case "below":
				pending = append(pending, e)
				e.line = firstLine + len(lines) // dangling unless a plain line follows
			case "unknown":
				e.unknown = true
			default:
				n, _ := strconv.Atoi(d[1:])
				if d[0] == '+' {
					e.line += n
				} else {
					e.line -= n
				}
			}
		}
		if !e.unknown && e.line < firstLine {
			problems = append(problems, ir.Errorf(e.at, "expectation points above the start of its input (line %d)", e.line))
			continue
		}
		exps = append(exps, e)
	}
	return exps, problems
}

// verifyDiagnostics matches the diagnostics emitted for one input against
// the expectations written in it, and returns what is left to report: the
// mismatches (as errors) and problems with the expectations themselves.
// It returns nil when everything matched.
func verifyDiagnostics(file, text string, firstLine int, emitted []*ir.Diagnostic) []*ir.Diagnostic {
	exps, out := parseExpectations(file, text, firstLine)
	var flat []*ir.Diagnostic
	for _, d := range emitted {
		flat = append(flat, d)
		flat = append(flat, d.Notes...)
	}
	for _, d := range flat {
		if problem := matchDiagnostic(file, exps, d); problem != nil {
			out = append(out, problem)
		}
	}
	for _, e := range exps {
		if !e.matched {
			out = append(out, ir.Errorf(e.at, "expected %s \"%s\" was not produced", e.sev, e.substr))
		}
	}
	return out
}

// matchDiagnostic marks the expectation d meets, or returns the error to
// report. An expectation may meet several identical diagnostics, as in
// MLIR; an unmet one is preferred.
func matchDiagnostic(file string, exps []*expectation, d *ir.Diagnostic) *ir.Diagnostic {
	unknown := !d.Loc.Known() || d.Loc.File != file
	var best, nearMiss *expectation
	for _, e := range exps {
		if e.unknown != unknown || (!unknown && e.line != d.Loc.Line) || !strings.Contains(d.Message, e.substr) {
			continue
		}
		if e.sev != d.Severity {
			if nearMiss == nil {
				nearMiss = e
			}
			continue
		}
		if best == nil || (best.matched && !e.matched) {
			best = e
		}
	}
	switch {
	case best != nil:
		best.matched = true
		return nil
	case nearMiss != nil:
		return ir.Errorf(nearMiss.at, "'%s' diagnostic emitted when expecting a '%s'", d.Severity, nearMiss.sev)
	}
	if unknown {
		// elsewhere (another file, the pass pipeline) or nowhere: say where
		if d.Loc.Known() {
			return ir.Errorf(ir.Location{}, "unexpected %s at %s:%d:%d: %s", d.Severity, d.Loc.File, d.Loc.Line, d.Loc.Col, d.Message)
		}
		return ir.Errorf(ir.Location{}, "unexpected %s: %s", d.Severity, d.Message)
	}
	return ir.Errorf(d.Loc, "unexpected %s: %s", d.Severity, d.Message)
}
