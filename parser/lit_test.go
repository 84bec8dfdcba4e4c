package parser

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	// the ops the lit inputs use, for the verifier tfc runs after parsing
	_ "github.com/tensorforge/tensorforge/dialects/graph"
	_ "github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// TestLitInputs runs the RUN lines of lit-tests/parser with `%tfc` standing
// for parse-and-print and a small FileCheck, so the lit inputs are checked
// against the parser and printer here too. It understands the flags the
// parser's lit tests use: --split-input-file, --verify-diagnostics,
// --print-op-generic, --print-debuginfo.
func TestLitInputs(t *testing.T) {
	files, err := filepath.Glob("../lit-tests/parser/*.tir")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 12)
	for _, file := range files {
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		text := string(b)
		t.Run(filepath.Base(file), func(t *testing.T) {
			runs := 0
			for _, line := range strings.Split(text, "\n") {
				_, run, ok := strings.Cut(line, "// RUN: ")
				if !ok {
					continue
				}
				runs++
				t.Run(run, func(t *testing.T) { runLit(t, file, text, run) })
			}
			require.Positive(t, runs, "no RUN lines")
		})
	}
}

func runLit(t *testing.T, file, text, run string) {
	var out string
	for i, cmd := range strings.Split(run, " | ") {
		args := strings.Fields(cmd)
		switch args[0] {
		case "%tfc":
			name, in := file, text
			if args[len(args)-1] == "-" {
				require.Positive(t, i, "stdin of the first command")
				name, in = "<stdin>", out
			}
			out = fakeTfc(t, name, in, args[1:len(args)-1])
		case "FileCheck":
			prefix := "CHECK"
			for _, a := range args[1:] {
				if p, ok := strings.CutPrefix(a, "--check-prefix="); ok {
					prefix = p
				}
			}
			fileCheck(t, text, out, prefix)
		default:
			t.Fatalf("unknown command %q", args[0])
		}
	}
}

func fakeTfc(t *testing.T, name, in string, flags []string) string {
	var opts ir.PrintOptions
	split, verify := false, false
	for _, f := range flags {
		switch f {
		case "--split-input-file":
			split = true
		case "--verify-diagnostics":
			verify = true
		case "--print-op-generic":
			opts.Generic = true
		case "--print-debuginfo":
			opts.DebugInfo = true
		default:
			t.Fatalf("unknown flag %q", f)
		}
	}
	chunks := []Chunk{{Text: in, FirstLine: 1}}
	if split {
		chunks = SplitInput(in)
	}
	var outs []string
	for _, c := range chunks {
		m, err := ParseAt(name, c.Text, c.FirstLine)
		if err == nil {
			err = ir.Verify(m.Operation) // tfc verifies what it parses
		}
		if verify {
			verifyDiagnostics(t, c, err)
			continue
		}
		require.NoError(t, err)
		outs = append(outs, ir.Print(m.Operation, opts))
	}
	return strings.Join(outs, "// -----\n")
}

var expectedRE = regexp.MustCompile(`expected-(error|note|warning|remark)\s*(@[-+]\d+|@above|@below)?\s*\{\{(.*?)\}\}`)

// verifyDiagnostics checks the parse or verifier errors of a chunk (and their notes)
// against the chunk's `expected-error @+1 {{...}}` comments.
func verifyDiagnostics(t *testing.T, c Chunk, err error) {
	type diag struct {
		sev  string
		line int
		msg  string
	}
	var want []diag
	for i, line := range strings.Split(c.Text, "\n") {
		for _, m := range expectedRE.FindAllStringSubmatch(line, -1) {
			n := c.FirstLine + i
			switch {
			case m[2] == "@above":
				n--
			case m[2] == "@below":
				n++
			case m[2] != "":
				off, _ := strconv.Atoi(m[2][1:])
				n += off
			}
			want = append(want, diag{m[1], n, m[3]})
		}
	}
	var got []diag
	for _, d := range ir.AsDiagnostics(err) {
		for _, x := range append([]*ir.Diagnostic{d}, d.Notes...) {
			got = append(got, diag{x.Severity.String(), x.Loc.Line, x.Message})
		}
	}
	require.Equal(t, len(want), len(got), "expected %v, got %v", want, got)
	used := make([]bool, len(got))
	for _, w := range want {
		found := false
		for i, g := range got {
			if !used[i] && g.sev == w.sev && g.line == w.line && strings.Contains(g.msg, w.msg) {
				used[i], found = true, true
				break
			}
		}
		require.True(t, found, "expected %v among %v", w, got)
	}
}

// fileCheck is the part of LLVM's FileCheck the parser's lit tests use:
// PREFIX, -NEXT, -SAME, -LABEL and -NOT directives whose patterns are text
// with {{regex}} parts, horizontal whitespace matching any run of it.
func fileCheck(t *testing.T, checkText, input, prefix string) {
	type directive struct {
		kind string // "", NEXT, SAME, LABEL, NOT
		re   *regexp.Regexp
		src  string
	}
	var ds []directive
	dirRE := regexp.MustCompile(regexp.QuoteMeta(prefix) + `(-NEXT|-SAME|-LABEL|-NOT)?:(.*)$`)
	for _, line := range strings.Split(checkText, "\n") {
		m := dirRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		ds = append(ds, directive{strings.TrimPrefix(m[1], "-"), checkPattern(t, strings.TrimSpace(m[2])), line})
	}
	require.NotEmpty(t, ds, "no %s: lines", prefix)
	lines := strings.Split(input, "\n")
	line, col := 0, 0 // where the previous match ended
	matched := false
	var nots []directive
	notsFrom := [2]int{0, 0}
	checkNots := func(toLine, toCol int) {
		for _, n := range nots {
			for l := notsFrom[0]; l <= toLine && l < len(lines); l++ {
				s := lines[l]
				if l == toLine {
					s = s[:min(toCol, len(s))]
				}
				if l == notsFrom[0] {
					s = s[min(notsFrom[1], len(s)):]
				}
				require.False(t, n.re.MatchString(s), "%s\nmatched %q", n.src, lines[l])
			}
		}
		nots = nil
	}
	for _, d := range ds {
		switch d.kind {
		case "NOT":
			if len(nots) == 0 {
				notsFrom = [2]int{line, col}
			}
			nots = append(nots, d)
			continue
		case "SAME":
			require.True(t, matched, "%s: nothing matched before", d.src)
			loc := d.re.FindStringIndex(lines[line][col:])
			require.NotNil(t, loc, "%s\non line %q", d.src, lines[line])
			checkNots(line, col+loc[0])
			col += loc[1]
			continue
		case "NEXT":
			require.True(t, matched, "%s: nothing matched before", d.src)
			require.Less(t, line+1, len(lines), d.src)
			loc := d.re.FindStringIndex(lines[line+1])
			require.NotNil(t, loc, "%s\nnext line is %q", d.src, lines[line+1])
			checkNots(line+1, loc[0])
			line, col = line+1, loc[1]
			continue
		}
		found := false
		for l := line; l < len(lines) && !found; l++ {
			from := 0
			if l == line && matched {
				from = col
			}
			if loc := d.re.FindStringIndex(lines[l][from:]); loc != nil {
				checkNots(l, from+loc[0])
				line, col, found = l, from+loc[1], true
			}
		}
		require.True(t, found, "%s\nnot found after line %d of:\n%s", d.src, line+1, input)
		matched = true
	}
	checkNots(len(lines)-1, len(lines[len(lines)-1]))
}

func checkPattern(t *testing.T, p string) *regexp.Regexp {
	var sb strings.Builder
	for p != "" {
		i := strings.Index(p, "{{")
		lit := p
		if i >= 0 {
			lit = p[:i]
		}
		for j, part := range strings.Fields(lit) {
			if j > 0 || (lit != "" && (lit[0] == ' ' || lit[0] == '\t')) {
				sb.WriteString(`[ \t]+`)
			}
			sb.WriteString(regexp.QuoteMeta(part))
		}
		if lit != "" && strings.TrimRight(lit, " \t") != lit && strings.TrimSpace(lit) != "" {
			sb.WriteString(`[ \t]+`)
		}
		if i < 0 {
			break
		}
		end := strings.Index(p[i+2:], "}}")
		require.GreaterOrEqual(t, end, 0, "unclosed {{ in %q", p)
		fmt.Fprintf(&sb, "(?:%s)", p[i+2:i+2+end])
		p = p[i+2+end+2:]
	}
	return regexp.MustCompile(sb.String())
}
