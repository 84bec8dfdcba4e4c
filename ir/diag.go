package ir

import (
	"fmt"
	"sort"
	"strings"
)

// Severity of a diagnostic.
type Severity uint8

const (
	SevError Severity = iota
	SevWarning
	SevNote
	SevRemark
)

func (s Severity) String() string {
	if s > SevRemark {
		return fmt.Sprintf("severity(%d)", s)
	}
	return [...]string{"error", "warning", "note", "remark"}[s]
}

// Diagnostic is a located message: `file:3:5: error: message`.
// It implements error, so a failing function can return one directly.
type Diagnostic struct {
	Severity Severity
	Loc      Location
	Message  string
	Notes    []*Diagnostic
}

func (d *Diagnostic) Error() string {
	if d.Loc.Known() {
		return fmt.Sprintf("%s:%d:%d: %s: %s", d.Loc.File, d.Loc.Line, d.Loc.Col, d.Severity, d.Message)
	}
	return fmt.Sprintf("%s: %s", d.Severity, d.Message)
}

// AddNote attaches a note to the diagnostic and returns it.
func (d *Diagnostic) AddNote(loc Location, format string, args ...any) *Diagnostic {
	d.Notes = append(d.Notes, &Diagnostic{Severity: SevNote, Loc: loc, Message: fmt.Sprintf(format, args...)})
	return d
}

// Errorf builds an error diagnostic at loc.
func Errorf(loc Location, format string, args ...any) *Diagnostic {
	return &Diagnostic{Severity: SevError, Loc: loc, Message: fmt.Sprintf(format, args...)}
}

// OpError is an error about an op, printed at its location with the
// MLIR-style prefix `'graph.add' op ...`.
func OpError(op *Operation, format string, args ...any) *Diagnostic {
	return Errorf(op.Loc, "'%s' op %s", op.Name(), fmt.Sprintf(format, args...))
}

// Diagnostics collects diagnostics; it is what passes and the verifier
// report into. It is not safe for concurrent use.
type Diagnostics struct {
	List []*Diagnostic
	// Handler, if set, sees each diagnostic as it is reported.
	Handler func(*Diagnostic)
}

// Report records a diagnostic.
func (ds *Diagnostics) Report(d *Diagnostic) {
	if ds == nil {
		return
	}
	ds.List = append(ds.List, d)
	if ds.Handler != nil {
		ds.Handler(d)
	}
}

// Emit records a diagnostic built from its parts.
func (ds *Diagnostics) Emit(sev Severity, loc Location, format string, args ...any) *Diagnostic {
	d := &Diagnostic{Severity: sev, Loc: loc, Message: fmt.Sprintf(format, args...)}
	ds.Report(d)
	return d
}

// HasErrors reports whether an error was recorded.
func (ds *Diagnostics) HasErrors() bool {
	if ds == nil {
		return false
	}
	for _, d := range ds.List {
		if d.Severity == SevError {
			return true
		}
	}
	return false
}

// SourceManager keeps source texts so diagnostics can quote the line.
type SourceManager struct {
	files map[string][]string
}

// AddFile registers the text of a source file.
func (sm *SourceManager) AddFile(name, text string) {
	if sm.files == nil {
		sm.files = map[string][]string{}
	}
	sm.files[name] = strings.Split(text, "\n")
}

// Line returns line n (1-based) of file, if known.
func (sm *SourceManager) Line(file string, n int) (string, bool) {
	if sm == nil {
		return "", false
	}
	lines, ok := sm.files[file]
	if !ok || n < 1 || n > len(lines) {
		return "", false
	}
	return strings.TrimRight(lines[n-1], "\r"), true
}

// Render formats a diagnostic (and its notes) as a compiler prints it:
//
//	file.tir:3:5: error: message
//	  %x = graph.add %a : tensor<4xf32>
//	       ^
func (sm *SourceManager) Render(d *Diagnostic) string {
	var sb strings.Builder
	sm.render(&sb, d)
	for _, n := range d.Notes {
		sm.render(&sb, n)
	}
	return sb.String()
}

func (sm *SourceManager) render(sb *strings.Builder, d *Diagnostic) {
	sb.WriteString(d.Error())
	sb.WriteByte('\n')
	if !d.Loc.Known() {
		return
	}
	line, ok := sm.Line(d.Loc.File, d.Loc.Line)
	if !ok {
		return
	}
	sb.WriteString(line)
	sb.WriteByte('\n')
	col := d.Loc.Col - 1
	if col < 0 {
		col = 0
	}
	// Columns count bytes. The pad has one character per character of the
	// line before the column, not per byte, and keeps tabs, so the caret
	// lines up under the column.
	pad := make([]byte, 0, col)
	for _, r := range line[:min(col, len(line))] {
		if r == '\t' {
			pad = append(pad, '\t')
		} else {
			pad = append(pad, ' ')
		}
	}
	for i := len(line); i < col; i++ {
		pad = append(pad, ' ')
	}
	sb.Write(pad)
	sb.WriteString("^\n")
}

// SortDiagnostics orders diagnostics by file position, stable for equal ones.
func SortDiagnostics(ds []*Diagnostic) {
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i].Loc, ds[j].Loc
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
}
