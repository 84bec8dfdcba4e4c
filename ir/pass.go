package ir

import (
	"fmt"
	"io"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tensorforge/tensorforge/ir/target"
)

// Pass transforms a module in place. Passes are plain values created from
// their registered PassInfo with parsed options.
type Pass interface {
	Run(m Module, ctx *PassContext) error
}

// PassFunc adapts a function to Pass.
type PassFunc func(m Module, ctx *PassContext) error

// Run calls f.
func (f PassFunc) Run(m Module, ctx *PassContext) error { return f(m, ctx) }

// OptionKind is the type of a pass option.
type OptionKind uint8

const (
	OptInt OptionKind = iota
	OptBool
	OptString
	// OptBytes is a byte size: `228KiB`, `1.5MiB`, `4096`.
	OptBytes
)

// PassOption declares one option: `fuse{max-ops=64}`.
type PassOption struct {
	Name    string
	Kind    OptionKind
	Default string
	Help    string
}

// PassInfo registers a pass under its pipeline name.
type PassInfo struct {
	Name    string // pipeline name, "fuse"
	Title   string // display name in IR dumps, "Fuse"
	Summary string
	Options []PassOption
	// New builds the pass from validated options.
	New func(opts PassOptions) (Pass, error)
}

// PassOptions holds the parsed options of one pass instance.
type PassOptions struct {
	info   *PassInfo
	values map[string]string
}

// Int returns an integer option (its default if unset).
func (o PassOptions) Int(name string) int64 {
	n, _ := strconv.ParseInt(o.raw(name), 0, 64)
	return n
}

// Bool returns a boolean option.
func (o PassOptions) Bool(name string) bool { return o.raw(name) == "true" || o.raw(name) == "1" }

// String returns a string option.
func (o PassOptions) String(name string) string { return o.raw(name) }

// Bytes returns a byte-size option.
func (o PassOptions) Bytes(name string) int64 {
	n, _ := ParseByteSize(o.raw(name))
	return n
}

// IsSet reports whether the option was given explicitly.
func (o PassOptions) IsSet(name string) bool {
	_, ok := o.values[name]
	return ok
}

func (o PassOptions) raw(name string) string {
	if v, ok := o.values[name]; ok {
		return v
	}
	if o.info != nil {
		for _, d := range o.info.Options {
			if d.Name == name {
				return d.Default
			}
		}
	}
	return ""
}

// Spec returns the options as written in a pipeline: `{a=1 b=2}` or "".
func (o PassOptions) Spec() string {
	if len(o.values) == 0 {
		return ""
	}
	keys := make([]string, 0, len(o.values))
	for k := range o.values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + o.values[k]
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// ParseByteSize parses `228KiB`, `1.5MiB`, `64KB`, `4096` into bytes.
func ParseByteSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := 1.0
	for _, u := range []struct {
		suffix string
		m      float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.m
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	// !(f >= 0) also rejects "nan", which ParseFloat accepts
	if err != nil || !(f >= 0) || f*mult > 1<<62 {
		return 0, fmt.Errorf("'%s' is not a byte size (examples: 4096, 228KiB, 1.5MiB)", s)
	}
	return int64(f * mult), nil
}

var passRegistry = map[string]*PassInfo{}

// RegisterPass makes a pass available to pipelines by name.
func RegisterPass(info *PassInfo) {
	if _, dup := passRegistry[info.Name]; dup {
		panic("ir: pass registered twice: " + info.Name)
	}
	passRegistry[info.Name] = info
}

// LookupPass returns a registered pass, or nil.
func LookupPass(name string) *PassInfo { return passRegistry[name] }

// RegisteredPasses returns every pass sorted by name.
func RegisteredPasses() []*PassInfo {
	out := make([]*PassInfo, 0, len(passRegistry))
	for _, p := range passRegistry {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// PassContext is what a running pass may consult and report into.
type PassContext struct {
	Diags *Diagnostics
	// Target is the machine being compiled for.
	Target *target.Target
	// Remarks holds the enabled remark categories (`--remarks=fusion,numerics`).
	Remarks map[string]bool
	// ExactRounding asks for op-by-op rounding of f16, bf16 and f8 values
	// inside fused kernels (`tfc --exact-rounding`), where by default they
	// stay f32 between ops; passes with their own option take it as its
	// default.
	ExactRounding bool
}

// Remark emits a remark of a category if that category is enabled.
func (c *PassContext) Remark(category string, loc Location, format string, args ...any) {
	if c == nil || !(c.Remarks[category] || c.Remarks["all"]) {
		return
	}
	c.Diags.Emit(SevRemark, loc, "[%s] %s", category, fmt.Sprintf(format, args...))
}

// Warning emits a warning.
func (c *PassContext) Warning(loc Location, format string, args ...any) {
	if c == nil {
		return
	}
	c.Diags.Emit(SevWarning, loc, format, args...)
}

// PipelineEntry is one pass of a pipeline with its options.
type PipelineEntry struct {
	Info    *PassInfo
	Options PassOptions
}

// Spec returns the entry as written in a pipeline: `fuse{max-ops=64}`.
func (e PipelineEntry) Spec() string { return e.Info.Name + e.Options.Spec() }

// Pipeline is an ordered list of passes.
type Pipeline []PipelineEntry

// String returns the textual pipeline.
func (p Pipeline) String() string {
	parts := make([]string, len(p))
	for i, e := range p {
		parts[i] = e.Spec()
	}
	return strings.Join(parts, ",")
}

// PipelineFile is the pseudo file name of diagnostics about a pipeline string.
const PipelineFile = "<pass-pipeline>"

// ParsePipeline parses `canonicalize,fuse{max-ops=64},sram-alloc{capacity=228KiB}`.
// The MLIR wrappers `builtin.module(...)`, `func.func(...)` and `any(...)`
// are accepted and stripped: every pass here runs on the whole module.
func ParsePipeline(text string) (Pipeline, error) {
	pp := &pipelineParser{s: text}
	var out Pipeline
	if err := pp.parseList(&out, 0); err != nil {
		return nil, err
	}
	if pp.i < len(pp.s) {
		r, _ := utf8.DecodeRuneInString(pp.s[pp.i:])
		return nil, pp.errorf(pp.i, "unexpected '%c' in pass pipeline", r)
	}
	return out, nil
}

type pipelineParser struct {
	s string
	i int
}

func (pp *pipelineParser) errorf(pos int, format string, args ...any) *Diagnostic {
	return Errorf(Location{File: PipelineFile, Line: 1, Col: pos + 1}, format, args...)
}

func (pp *pipelineParser) skipSpace() {
	for pp.i < len(pp.s) && (pp.s[pp.i] == ' ' || pp.s[pp.i] == '\t' || pp.s[pp.i] == '\n') {
		pp.i++
	}
}

func (pp *pipelineParser) ident() string {
	start := pp.i
	for pp.i < len(pp.s) {
		c := pp.s[pp.i]
		if c == '-' || c == '_' || c == '.' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') {
			pp.i++
			continue
		}
		break
	}
	return pp.s[start:pp.i]
}

func (pp *pipelineParser) parseList(out *Pipeline, depth int) error {
	for {
		pp.skipSpace()
		if pp.i >= len(pp.s) || pp.s[pp.i] == ')' {
			return nil
		}
		start := pp.i
		name := pp.ident()
		if name == "" {
			return pp.errorf(pp.i, "expected a pass name in pass pipeline")
		}
		pp.skipSpace()
		if pp.i < len(pp.s) && pp.s[pp.i] == '(' {
			switch name {
			case "builtin.module", "func.func", "any":
			default:
				return pp.errorf(start, "'%s' is not an op that can hold a nested pipeline (use builtin.module, func.func or any)", name)
			}
			pp.i++
			if err := pp.parseList(out, depth+1); err != nil {
				return err
			}
			if pp.i >= len(pp.s) || pp.s[pp.i] != ')' {
				return pp.errorf(pp.i, "expected ')' to close '%s('", name)
			}
			pp.i++
		} else {
			info := LookupPass(name)
			if info == nil {
				return pp.errorf(start, "'%s' does not refer to a registered pass (see `tfc passes`)", name)
			}
			opts := PassOptions{info: info, values: map[string]string{}}
			if pp.i < len(pp.s) && pp.s[pp.i] == '{' {
				if err := pp.parseOptions(info, &opts); err != nil {
					return err
				}
			}
			*out = append(*out, PipelineEntry{Info: info, Options: opts})
		}
		pp.skipSpace()
		if pp.i < len(pp.s) && pp.s[pp.i] == ',' {
			comma := pp.i
			pp.i++
			pp.skipSpace()
			if pp.i >= len(pp.s) || pp.s[pp.i] == ')' {
				return pp.errorf(comma, "expected a pass name after ','")
			}
			continue
		}
		if pp.i < len(pp.s) && pp.s[pp.i] == ')' && depth == 0 {
			return pp.errorf(pp.i, "unbalanced ')' in pass pipeline")
		}
		return nil
	}
}

func (pp *pipelineParser) parseOptions(info *PassInfo, opts *PassOptions) error {
	open := pp.i
	pp.i++ // '{'
	for {
		pp.skipSpace()
		if pp.i < len(pp.s) && pp.s[pp.i] == ',' {
			pp.i++
			continue
		}
		if pp.i >= len(pp.s) {
			return pp.errorf(open, "unterminated options of pass '%s': missing '}'", info.Name)
		}
		if pp.s[pp.i] == '}' {
			pp.i++
			return nil
		}
		kstart := pp.i
		key := pp.ident()
		if key == "" {
			return pp.errorf(pp.i, "expected an option name in the options of pass '%s'", info.Name)
		}
		var decl *PassOption
		for i := range info.Options {
			if info.Options[i].Name == key {
				decl = &info.Options[i]
			}
		}
		if decl == nil {
			return pp.errorf(kstart, "pass '%s' has no option '%s'%s", info.Name, key, optionList(info))
		}
		pp.skipSpace()
		val := "true"
		if pp.i < len(pp.s) && pp.s[pp.i] == '=' {
			pp.i++
			pp.skipSpace()
			vstart := pp.i
			for pp.i < len(pp.s) && !strings.ContainsRune(" \t,}", rune(pp.s[pp.i])) {
				pp.i++
			}
			val = pp.s[vstart:pp.i]
			if err := checkOptionValue(decl, val); err != nil {
				return pp.errorf(vstart, "invalid value '%s' for option '%s' of pass '%s': %v", val, key, info.Name, err)
			}
		} else if decl.Kind != OptBool {
			return pp.errorf(kstart, "option '%s' of pass '%s' needs a value: %s=...", key, info.Name, key)
		}
		opts.values[key] = val
	}
}

func optionList(info *PassInfo) string {
	if len(info.Options) == 0 {
		return " (it takes no options)"
	}
	names := make([]string, len(info.Options))
	for i, o := range info.Options {
		names[i] = o.Name
	}
	return " (options: " + strings.Join(names, ", ") + ")"
}

func checkOptionValue(d *PassOption, v string) error {
	switch d.Kind {
	case OptInt:
		n, err := strconv.ParseInt(v, 0, 64)
		if err != nil {
			return fmt.Errorf("expected an integer")
		}
		if n < 0 {
			return fmt.Errorf("expected a non-negative integer")
		}
	case OptBool:
		if v != "true" && v != "false" && v != "1" && v != "0" {
			return fmt.Errorf("expected true or false")
		}
	case OptBytes:
		_, err := ParseByteSize(v)
		return err
	}
	return nil
}

// NewPipelineEntry builds an entry from a pass name and an option map (for
// `--fuse`-style flags and named pipelines).
func NewPipelineEntry(name string, options string) (PipelineEntry, error) {
	p, err := ParsePipeline(name + options)
	if err != nil {
		return PipelineEntry{}, err
	}
	if len(p) != 1 {
		return PipelineEntry{}, fmt.Errorf("expected one pass, got %d", len(p))
	}
	return p[0], nil
}

// ---------------------------------------------------------------------------
// Pass manager

// Instrumentation configures what the pass manager reports while running.
type Instrumentation struct {
	PrintBefore      map[string]bool // pass names
	PrintAfter       map[string]bool
	PrintBeforeAll   bool
	PrintAfterAll    bool
	PrintAfterChange bool
	PrintOptions     PrintOptions
	Timing           bool
	// Out receives IR dumps and the timing report (standard error in tfc).
	Out io.Writer
}

// PassManager runs a pipeline with verification and instrumentation.
type PassManager struct {
	Pipeline   Pipeline
	VerifyEach bool
	Instr      Instrumentation
	// CrashReproducer, when set, names a file that receives the IR before a
	// pass that fails or panics, with the pipeline that reproduces it.
	CrashReproducer string
	// WriteFile writes the crash reproducer (os.WriteFile in tfc).
	WriteFile func(path string, data []byte) error

	timings []passTiming
}

type passTiming struct {
	name string
	d    time.Duration
}

// InternalError is a pass panic: a compiler bug, not bad input.
type InternalError struct {
	Pass  string
	Value any
	Stack string
	// Diags holds the verifier's findings when a pass left invalid IR.
	Diags []*Diagnostic
	// Reproducer is the crash reproducer written, if any.
	Reproducer string
}

func (e *InternalError) Error() string {
	return fmt.Sprintf("internal compiler error in pass '%s': %v", e.Pass, e.Value)
}

// Run runs every pass in order on m. A pass that reports an error (or
// leaves invalid IR with VerifyEach) stops the pipeline; the returned error
// carries its diagnostics. A panic becomes an *InternalError.
func (pm *PassManager) Run(m Module, ctx *PassContext) (err error) {
	total := time.Now()
	pm.timings = pm.timings[:0] // the report covers this run only
	for i, e := range pm.Pipeline {
		title := e.Info.Title
		if title == "" {
			title = e.Info.Name
		}
		var before string
		needBefore := pm.CrashReproducer != "" || pm.Instr.PrintAfterChange
		if needBefore {
			before = Print(m.Operation, pm.Instr.PrintOptions)
		}
		if pm.Instr.PrintBeforeAll || pm.Instr.PrintBefore[e.Info.Name] {
			pm.dump("Before", title, e.Info.Name, m)
		}
		pass, perr := e.Info.New(e.Options)
		if perr != nil {
			return perr
		}
		start := time.Now()
		runErr := pm.runOne(pass, e, m, ctx)
		pm.timings = append(pm.timings, passTiming{name: title + " (" + e.Info.Name + ")", d: time.Since(start)})
		if runErr == nil && ctx != nil && ctx.Diags.HasErrors() {
			runErr = ErrorList(errorsOf(ctx.Diags))
		}
		if runErr == nil && pm.VerifyEach {
			if verr := Verify(m.Operation); verr != nil {
				diags := AsDiagnostics(verr)
				runErr = &InternalError{Pass: e.Info.Name, Value: fmt.Sprintf("the IR is invalid after pass '%s'", e.Info.Name), Diags: diags}
			}
		}
		if runErr != nil {
			if pm.CrashReproducer != "" && pm.WriteFile != nil {
				rest := Pipeline(pm.Pipeline[i:])
				text := "// Crash reproducer: the IR before pass '" + e.Info.Name + "' failed.\n" +
					"// Reproduce with: tfc --pass-pipeline='" + rest.String() + "' " + pm.CrashReproducer + "\n" + before
				if werr := pm.WriteFile(pm.CrashReproducer, []byte(text)); werr == nil {
					if ie, ok := runErr.(*InternalError); ok {
						ie.Reproducer = pm.CrashReproducer
					}
				}
			}
			return runErr
		}
		if pm.Instr.PrintAfterAll || pm.Instr.PrintAfter[e.Info.Name] {
			pm.dump("After", title, e.Info.Name, m)
		} else if pm.Instr.PrintAfterChange {
			if after := Print(m.Operation, pm.Instr.PrintOptions); after != before {
				pm.write("// -----// IR Dump After " + title + " (" + e.Info.Name + ") //----- //\n" + after + "\n")
			}
		}
	}
	if pm.Instr.Timing {
		pm.writeTiming(time.Since(total))
	}
	return nil
}

func errorsOf(ds *Diagnostics) []*Diagnostic {
	var out []*Diagnostic
	for _, d := range ds.List {
		if d.Severity == SevError {
			out = append(out, d)
		}
	}
	return out
}

func (pm *PassManager) runOne(p Pass, e PipelineEntry, m Module, ctx *PassContext) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &InternalError{Pass: e.Info.Name, Value: r, Stack: string(debug.Stack())}
		}
	}()
	return p.Run(m, ctx)
}

func (pm *PassManager) dump(when, title, name string, m Module) {
	pm.write("// -----// IR Dump " + when + " " + title + " (" + name + ") //----- //\n" + Print(m.Operation, pm.Instr.PrintOptions) + "\n")
}

func (pm *PassManager) write(s string) {
	if pm.Instr.Out != nil {
		io.WriteString(pm.Instr.Out, s)
	}
}

func (pm *PassManager) writeTiming(total time.Duration) {
	var sb strings.Builder
	sb.WriteString("===-------------------------------------------------------------------------===\n")
	sb.WriteString("                         ... Execution time report ...\n")
	sb.WriteString("===-------------------------------------------------------------------------===\n")
	fmt.Fprintf(&sb, "  Total Execution Time: %.4f seconds\n\n", total.Seconds())
	sb.WriteString("  ----Wall Time----  ----Name----\n")
	for _, t := range pm.timings {
		pct := 0.0
		if total > 0 {
			pct = 100 * t.d.Seconds() / total.Seconds()
		}
		fmt.Fprintf(&sb, "    %.4f (%5.1f%%)  %s\n", t.d.Seconds(), pct, t.name)
	}
	fmt.Fprintf(&sb, "    %.4f (100.0%%)  Total\n", total.Seconds())
	pm.write(sb.String())
}
