package triton

import (
	"strings"
)

// This file holds the writer of Python statements the kernels and
// launchers are made of. Every translated op becomes one assignment,
//
//	t5 = t4 * t4
//
// so the writer knows which names each line defines and reads, and can
// drop the assignments nothing reads (index arithmetic the Triton form
// does not need, a row mask of a kernel that masks nothing), keeping the
// text short without a separate analysis in the translation.

// stmt is one line of Python.
type stmt struct {
	indent int
	text   string
	// defs are the names the line assigns; pure lines whose defs nothing
	// else reads are dropped.
	defs []string
	pure bool
	// opens is set on a line ending in ':' (a `for` or `if`), whose body is
	// the following lines of deeper indentation.
	opens bool
	dead  bool
}

// pyWriter collects the lines of one Python function.
type pyWriter struct {
	lines  []*stmt
	indent int
}

// assign writes `name = rhs`, which is dropped when name is never read.
func (w *pyWriter) assign(name, rhs string) {
	w.lines = append(w.lines, &stmt{indent: w.indent, text: name + " = " + rhs, defs: []string{name}, pure: true})
}

// assignMany writes `a, b = x, y`: one line defining several names,
// dropped only when none of them is read.
func (w *pyWriter) assignMany(names, rhs []string) {
	w.lines = append(w.lines, &stmt{indent: w.indent,
		text: strings.Join(names, ", ") + " = " + strings.Join(rhs, ", "),
		defs: append([]string(nil), names...), pure: true})
}

// effect writes `name = rhs` for an rhs with an effect (an atomic), kept
// whether or not name is read.
func (w *pyWriter) effect(name, rhs string) {
	w.lines = append(w.lines, &stmt{indent: w.indent, text: name + " = " + rhs, defs: []string{name}})
}

// line writes a line that is always kept (a store, a return, a comment).
func (w *pyWriter) line(text string) {
	w.lines = append(w.lines, &stmt{indent: w.indent, text: text})
}

// open writes a line ending in ':' and indents what follows.
func (w *pyWriter) open(text string) {
	w.lines = append(w.lines, &stmt{indent: w.indent, text: text, opens: true})
	w.indent++
}

// close ends the body opened last.
func (w *pyWriter) close() { w.indent-- }

// prune drops, until nothing changes, the pure lines none of whose names is
// read by another line that is kept.
func (w *pyWriter) prune() {
	defined := map[string]bool{}
	for _, s := range w.lines {
		for _, d := range s.defs {
			defined[d] = true
		}
	}
	reads := make([][]string, len(w.lines))
	for i, s := range w.lines {
		text := s.text
		if len(s.defs) > 0 {
			// the names read are those right of the '='
			text = text[strings.Index(text, " = ")+3:]
		}
		for _, id := range identifiers(text) {
			if defined[id] {
				reads[i] = append(reads[i], id)
			}
		}
	}
	for changed := true; changed; {
		changed = false
		used := map[string]int{}
		for i, s := range w.lines {
			if s.dead {
				continue
			}
			for _, id := range reads[i] {
				if !contains(s.defs, id) {
					used[id]++
				}
			}
		}
		for _, s := range w.lines {
			if s.dead || !s.pure {
				continue
			}
			live := false
			for _, d := range s.defs {
				if used[d] > 0 {
					live = true
				}
			}
			if !live {
				s.dead = true
				changed = true
			}
		}
	}
}

// String renders the lines kept, indented by base levels of four spaces.
// A body left empty by pruning gets a `pass`.
func (w *pyWriter) render(base int) string {
	var sb strings.Builder
	var live []*stmt
	for _, s := range w.lines {
		if !s.dead {
			live = append(live, s)
		}
	}
	for i, s := range live {
		sb.WriteString(strings.Repeat("    ", base+s.indent))
		sb.WriteString(s.text)
		sb.WriteByte('\n')
		if s.opens && (i+1 == len(live) || live[i+1].indent <= s.indent) {
			sb.WriteString(strings.Repeat("    ", base+s.indent+1))
			sb.WriteString("pass\n")
		}
	}
	return sb.String()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// identifiers returns the Python names a line reads: identifiers outside
// string literals that are not attributes (`tl.float32` reads `tl` only)
// and not keyword-argument names (`mask=m` reads `m` only).
func identifiers(text string) []string {
	var out []string
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == '"' || c == '\'':
			j := i + 1
			for j < len(text) && text[j] != c {
				j++
			}
			i = j + 1
		case isIdentStart(c):
			j := i + 1
			for j < len(text) && isIdentPart(text[j]) {
				j++
			}
			attr := i > 0 && text[i-1] == '.'
			kwarg := j < len(text) && text[j] == '=' && (j+1 >= len(text) || text[j+1] != '=')
			if !attr && !kwarg {
				out = append(out, text[i:j])
			}
			i = j
		case c >= '0' && c <= '9':
			// a number, with any exponent or suffix letters it carries
			j := i + 1
			for j < len(text) && (isIdentPart(text[j]) || text[j] == '.') {
				j++
			}
			i = j
		default:
			i++
		}
	}
	return out
}

func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isIdentPart(c byte) bool  { return isIdentStart(c) || c >= '0' && c <= '9' }
