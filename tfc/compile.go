package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	tritonemit "github.com/tensorforge/tensorforge/emit/triton"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
	"github.com/tensorforge/tensorforge/parser"
)

// stdinName is the file name diagnostics use for standard input.
const stdinName = "<stdin>"

// splitMarker separates independent inputs (`--split-input-file`) and
// their outputs, as in mlir-opt.
const splitMarker = "// -----"

// pipelinePiece is one pipeline-forming flag, kept in command-line order:
// `--pass-pipeline='cse,dce'`, `--cse`, `-O2`.
type pipelinePiece struct {
	flag string // as the user wrote it, for messages
	text string // pipeline text
}

// compileOptions are the compile flags. interpret, run and the other
// commands that compile first register the same flags.
type compileOptions struct {
	output            string
	emit              string
	targetName        string
	pipeline          []pipelinePiece
	printBefore       []string
	printAfter        []string
	printBeforeAll    bool
	printAfterAll     bool
	printAfterChange  bool
	timing            bool
	verifyEach        bool
	splitInputFile    bool
	verifyDiagnostics bool
	generic           bool
	debugInfo         bool
	remarks           []string
	crashReproducer   string
	exactRounding     bool
	tuneCache         string  // --tune-cache FILE
	tuneSeconds       float64 // --tune SECONDS (0: no tuning)
	// defaultLevel, set by a command rather than a flag, names the -O level
	// run when the command line names no pass, pipeline or level (`tfc run`
	// compiles with O2); "" leaves the choice to the emitter.
	defaultLevel string
}

func defaultCompileOptions() *compileOptions {
	return &compileOptions{emit: "tir", targetName: "cpu", verifyEach: true}
}

// register declares the compile flags on fs, storing into o.
func (o *compileOptions) register(fs *flagSet) {
	fs.stringVar(&o.output, "o", "FILE", "write the output to FILE (default: standard output)")
	fs.stringVar(&o.emit, "emit", "KIND", "what to produce: "+strings.Join(emitKinds, ", ")+" (default tir)")
	fs.stringVar(&o.targetName, "target", "NAME", "the machine to compile for (default cpu; see `tfc targets`)")
	fs.add(&flagDef{name: "pass-pipeline", kind: valueFlag, arg: "'P'",
		help: "passes to run in order: 'canonicalize,cse' (also 'builtin.module(func.func(...))')",
		set: func(v string, _ bool) error {
			o.pipeline = append(o.pipeline, pipelinePiece{flag: "--pass-pipeline", text: v})
			return nil
		}})
	for _, l := range optLevels {
		fs.add(&flagDef{name: l.flag, kind: optionalValueFlag, help: "the named pipeline: " + l.summary,
			set: func(_ string, hasValue bool) error {
				if hasValue {
					return fmt.Errorf("takes no value")
				}
				o.pipeline = append(o.pipeline, pipelinePiece{flag: "-" + l.flag, text: l.pipeline})
				return nil
			}})
	}
	fs.listVar(&o.printBefore, "print-ir-before", "PASS", "print the IR before each run of PASS (repeatable, comma list)")
	fs.listVar(&o.printAfter, "print-ir-after", "PASS", "print the IR after each run of PASS (repeatable, comma list)")
	fs.boolVar(&o.printBeforeAll, "print-ir-before-all", "print the IR before every pass")
	fs.boolVar(&o.printAfterAll, "print-ir-after-all", "print the IR after every pass")
	fs.boolVar(&o.printAfterChange, "print-ir-after-change", "print the IR after every pass that changed it")
	fs.boolVar(&o.timing, "timing", "report the wall time of every pass on standard error")
	fs.boolVar(&o.verifyEach, "verify-each", "verify the IR after every pass (default true)")
	fs.boolVar(&o.splitInputFile, "split-input-file", "compile each '// -----' separated part of the input on its own")
	fs.boolVar(&o.verifyDiagnostics, "verify-diagnostics", "check the diagnostics against '// expected-error {{...}}' comments")
	fs.boolVar(&o.generic, "print-op-generic", "print every op in the generic form")
	fs.boolVar(&o.debugInfo, "print-debuginfo", "print the location of every op: loc(\"file.tir\":3:5)")
	fs.boolVar(&o.exactRounding, "exact-rounding", "round every f16/bf16/f8 result inside a fused kernel to its type, matching op-by-op evaluation bit for bit (default: values stay f32 between fused ops and round where stored or cast)")
	fs.stringVar(&o.tuneCache, "tune-cache", "FILE", "matmul launch configurations measured by --tune, keyed by kernel IR hash and target (default with --tune: $TENSORFORGE_CACHE_DIR/tune.json, else ~/.cache/tensorforge/tune.json)")
	fs.add(&flagDef{name: "tune", kind: valueFlag, arg: "SECONDS",
		help: "time the matmul kernels' candidate configurations on this machine's GPU for at most SECONDS (python3 with torch and triton), record the fastest in the tuning cache and emit with them (--emit=triton)",
		set: func(v string, _ bool) error {
			var secs float64
			if _, err := fmt.Sscan(v, &secs); err != nil || secs <= 0 || secs > 86400 || fmt.Sprint(secs) == "NaN" {
				return fmt.Errorf("takes a number of seconds in (0, 86400], not '%s'", v)
			}
			o.tuneSeconds = secs
			return nil
		}})
	fs.listVar(&o.remarks, "remarks", "KINDS", "report remarks of these kinds: "+strings.Join(remarkKinds, ", "))
	fs.stringVar(&o.crashReproducer, "crash-reproducer", "FILE", "when a pass fails or crashes, write the IR before it and the pipeline to FILE")
	fs.dynamic = func(name string) *flagDef {
		if isOptLevelSpelling(name) {
			return &flagDef{name: name, kind: optionalValueFlag, set: func(string, bool) error {
				return fmt.Errorf("is not a named pipeline (known: %s)", optLevelFlags())
			}}
		}
		info := ir.LookupPass(name)
		if info == nil {
			return nil
		}
		return &flagDef{name: name, kind: optionalValueFlag, set: func(v string, hasValue bool) error {
			text := name
			if hasValue {
				if !strings.HasPrefix(v, "{") {
					v = "{" + v + "}"
				}
				text += v
			}
			o.pipeline = append(o.pipeline, pipelinePiece{flag: "--" + name, text: text})
			return nil
		}}
	}
	fs.dynamicNames = func() []string {
		var names []string
		for _, p := range ir.RegisteredPasses() {
			names = append(names, p.Name)
		}
		return names
	}
}

// compiler holds the checked options: the target, the pipeline, the
// emitter. It compiles one input (or one split part) at a time.
type compiler struct {
	opts     *compileOptions
	target   *target.Target
	pipeline ir.Pipeline
	emitter  *emitter
	remarks  map[string]bool
	dumps    io.Writer // IR dumps and the timing report
	tuned    *tritonemit.TuneCache
}

// newCompiler checks the options. Problems are printed on sio.err and
// reported by a nil compiler.
func newCompiler(o *compileOptions, sio *stdio) *compiler {
	c := &compiler{opts: o, dumps: sio.err}
	fail := func(d *ir.Diagnostic) *compiler {
		printDiagnostics(sio.err, nil, []*ir.Diagnostic{d})
		return nil
	}
	t, err := target.Lookup(o.targetName)
	if err != nil {
		return fail(ir.Errorf(ir.Location{}, "%v", err))
	}
	c.target = t

	c.emitter = emitters[o.emit]
	if c.emitter == nil {
		for _, k := range emitKinds {
			if k == o.emit {
				return fail(ir.Errorf(ir.Location{}, "--emit=%s is not available yet (available: %s)", o.emit, strings.Join(availableEmitKinds(), ", ")))
			}
		}
		return fail(ir.Errorf(ir.Location{}, "unknown --emit kind '%s' (known: %s)", o.emit, strings.Join(emitKinds, ", ")))
	}
	if c.emitter.outputDir && o.output == "" {
		return fail(ir.Errorf(ir.Location{}, "--emit=%s writes several files: name a directory with -o DIR", o.emit))
	}
	if c.partFiles() && (o.output == "" || o.output == "-") {
		return fail(ir.Errorf(ir.Location{}, "--split-input-file with --emit=%s writes one file per part (DIR/part0%s, DIR/part1%s, ...), since the parts' %s do not make one valid file: name a directory with -o DIR",
			o.emit, partFileExt[o.emit], partFileExt[o.emit], partFileWhat[o.emit]))
	}

	pieces := o.pipeline
	level := o.defaultLevel
	if level == "" {
		level = c.emitter.defaultLevel
	}
	if len(pieces) == 0 && level != "" {
		l, ok := lookupOptLevel(level)
		if !ok {
			panic("tfc: unknown default level " + level)
		}
		pieces = []pipelinePiece{{flag: "-" + l.flag, text: l.pipeline}}
	}
	for i, piece := range pieces {
		if l, ok := lookupOptLevel(strings.TrimPrefix(piece.flag, "-")); ok && c.emitter.level != nil {
			piece.text = c.emitter.level(l.flag, piece.text)
			pieces[i] = piece
		}
		p, err := ir.ParsePipeline(piece.text)
		if err != nil {
			// quote the pipeline text under the message, caret at the column
			sm := &ir.SourceManager{}
			sm.AddFile(ir.PipelineFile, piece.text)
			diags := ir.AsDiagnostics(err)
			if piece.flag != "--pass-pipeline" {
				// the text was built from another flag; say which
				diags[0].AddNote(ir.Location{}, "in the pipeline of %s: '%s'", piece.flag, piece.text)
			}
			printDiagnostics(sio.err, sm, diags)
			return nil
		}
		c.pipeline = append(c.pipeline, p...)
	}

	for _, list := range []struct {
		flag  string
		names []string
	}{{"--print-ir-before", o.printBefore}, {"--print-ir-after", o.printAfter}} {
		for _, name := range list.names {
			if ir.LookupPass(name) == nil {
				return fail(ir.Errorf(ir.Location{}, "%s: '%s' does not refer to a registered pass (see `tfc passes`)", list.flag, name))
			}
		}
	}
	if d := checkRemarks(o.remarks); d != nil {
		return fail(d)
	}
	if (o.tuneSeconds > 0 || o.tuneCache != "") && o.emit != "triton" {
		return fail(ir.Errorf(ir.Location{}, "--tune and --tune-cache choose the launch configurations of Triton matmul kernels: they need --emit=triton, not --emit=%s", o.emit))
	}
	if o.tuneSeconds > 0 && o.tuneCache == "" {
		o.tuneCache = defaultTuneCache()
	}
	if o.tuneCache != "" {
		tc, d := loadTuneCache(o.tuneCache, o.tuneSeconds > 0)
		if d != nil {
			return fail(d)
		}
		c.tuned = tc
	}
	if len(o.remarks) > 0 {
		c.remarks = map[string]bool{}
		for _, r := range o.remarks {
			c.remarks[r] = true
		}
	}
	return c
}

func (c *compiler) printOptions() ir.PrintOptions {
	return ir.PrintOptions{Generic: c.opts.generic, DebugInfo: c.opts.debugInfo}
}

// compileResult is the outcome of compiling one input.
type compileResult struct {
	// Module is the IR after the pipeline; its Operation is nil when
	// parsing, verification or a pass failed.
	Module ir.Module
	// Diags are every diagnostic reported, unsorted: errors, warnings,
	// remarks.
	Diags []*ir.Diagnostic
	// Internal is set when a pass crashed or left invalid IR.
	Internal *ir.InternalError
}

// compile parses one input (`firstLine` places a split part in its file),
// verifies it, and runs the pipeline on it.
func (c *compiler) compile(file, text string, firstLine int) compileResult {
	m, err := parser.ParseAt(file, text, firstLine)
	if err != nil {
		return compileResult{Diags: ir.AsDiagnostics(err)}
	}
	if err := ir.Verify(m.Operation); err != nil {
		return compileResult{Diags: ir.AsDiagnostics(err)}
	}
	diags := &ir.Diagnostics{}
	ctx := &ir.PassContext{Diags: diags, Target: c.target, Remarks: c.remarks, ExactRounding: c.opts.exactRounding}
	before, after := passSet(c.opts.printBefore), passSet(c.opts.printAfter)
	pipeline, timer := c.pipeline, (*passTimer)(nil)
	if c.opts.timing {
		pipeline, timer = timePipeline(c.pipeline)
	}
	pm := &ir.PassManager{
		Pipeline:   pipeline,
		VerifyEach: c.opts.verifyEach,
		Instr: ir.Instrumentation{
			PrintBefore:      before,
			PrintAfter:       after,
			PrintBeforeAll:   c.opts.printBeforeAll,
			PrintAfterAll:    c.opts.printAfterAll,
			PrintAfterChange: c.opts.printAfterChange,
			PrintOptions:     c.printOptions(),
			Out:              c.dumps,
		},
		CrashReproducer: c.opts.crashReproducer,
		WriteFile: func(path string, data []byte) error {
			return os.WriteFile(path, data, 0o644)
		},
	}
	start := time.Now()
	err = pm.Run(m, ctx)
	all := diags.List
	if err == nil {
		if timer != nil {
			timer.report(c.dumps, time.Since(start))
		}
		return compileResult{Module: m, Diags: all}
	}
	var ie *ir.InternalError
	if errors.As(err, &ie) {
		return compileResult{Module: m, Diags: all, Internal: ie}
	}
	// A failing pass has usually reported its errors into the context
	// already; add only those it returned without reporting.
	seen := map[*ir.Diagnostic]bool{}
	for _, d := range all {
		seen[d] = true
	}
	for _, d := range ir.AsDiagnostics(err) {
		if !seen[d] {
			all = append(all, d)
		}
	}
	return compileResult{Diags: all}
}

func passSet(names []string) map[string]bool {
	if len(names) == 0 {
		return nil
	}
	s := map[string]bool{}
	for _, n := range names {
		s[n] = true
	}
	return s
}

// emit runs the emitter on a compiled module, part number part of the
// input; single-file output is returned as text. A broken invariant of
// the emitter comes back as an internal error.
func (c *compiler) emit(m ir.Module, part int) (string, []*ir.Diagnostic, *emitInternalError) {
	var buf bytes.Buffer
	diags := &ir.Diagnostics{}
	if ops := c.fileSymbolOps(); len(ops) > 0 {
		if long := checkFileSymbols(m, ops, c.opts.emit); len(long) > 0 {
			return "", long, nil
		}
	}
	before := ""
	if c.opts.crashReproducer != "" {
		before = ir.Print(m.Operation, ir.PrintOptions{})
	}
	req := &emitRequest{Module: m, Target: c.target, Print: c.printOptions(), Out: &buf, OutPath: c.partOutput(part), Diags: diags,
		ExactRounding: c.opts.exactRounding, Tuned: c.tuned, TuneCache: c.opts.tuneCache, TuneSeconds: c.opts.tuneSeconds, Log: c.dumps}
	if err := c.emitter.emit(req); err != nil {
		if ie := (*ir.InternalError)(nil); errors.As(err, &ie) {
			return "", nil, &emitInternalError{ie: ie, before: before}
		}
		seen := map[*ir.Diagnostic]bool{}
		for _, d := range diags.List {
			seen[d] = true
		}
		for _, d := range ir.AsDiagnostics(err) {
			if !seen[d] {
				diags.Report(d)
			}
		}
	}
	return buf.String(), diags.List, nil
}

// reportInternal prints an internal compiler error of a pass. When the
// pass left invalid IR (rather than panicking), the verifier's findings
// are quoted with their source lines.
func (c *compiler) reportInternal(sio *stdio, sm *ir.SourceManager, m ir.Module, ie *ir.InternalError) int {
	if len(ie.Diags) > 0 {
		var details strings.Builder
		printDiagnostics(&details, sm, ie.Diags)
		return reportInternalError(sio, fmt.Sprintf("pass '%s' left invalid IR", ie.Pass), details.String(), "", ie.Reproducer)
	}
	return reportInternalError(sio, fmt.Sprintf("pass '%s' crashed: %v", ie.Pass, ie.Value), "", ie.Stack, ie.Reproducer)
}

// compileInput reads the one input named by positional, compiles it and
// prints its diagnostics: the front half of the commands that compile and
// then do something else with the module (interpret, run, roofline ...).
// On failure the module is nil and status is the exit status to return.
func (c *compiler) compileInput(positional []string, sio *stdio) (m ir.Module, status int) {
	file, src, diag := readInput(positional, sio)
	if diag != nil {
		printDiagnostics(sio.err, nil, []*ir.Diagnostic{diag})
		return ir.Module{}, exitFailure
	}
	sm := &ir.SourceManager{}
	sm.AddFile(file, src)
	res := c.compile(file, src, 1)
	if res.Internal != nil {
		return ir.Module{}, c.reportInternal(sio, sm, res.Module, res.Internal)
	}
	if printDiagnostics(sio.err, sm, res.Diags) || res.Module.Operation == nil {
		return ir.Module{}, exitFailure
	}
	return res.Module, exitOK
}

// compileCommand is `tfc [flags] FILE.tir`.
func compileCommand(args []string, sio *stdio) int {
	o := defaultCompileOptions()
	fs := newFlagSet()
	o.register(fs)
	positional, diag := fs.parse(args)
	if diag != nil {
		printDiagnostics(sio.err, nil, []*ir.Diagnostic{diag})
		return exitFailure
	}
	c := newCompiler(o, sio)
	if c == nil {
		return exitFailure
	}
	file, src, diag := readInput(positional, sio)
	if diag != nil {
		printDiagnostics(sio.err, nil, []*ir.Diagnostic{diag})
		return exitFailure
	}
	sm := &ir.SourceManager{}
	sm.AddFile(file, src)

	chunks := []parser.Chunk{{Text: src, FirstLine: 1}}
	if o.splitInputFile {
		chunks = parser.SplitInput(src)
	}
	outputs := make([]string, len(chunks))
	failed := false
	for i, ch := range chunks {
		res := c.compile(file, ch.Text, ch.FirstLine)
		if res.Internal != nil {
			return c.reportInternal(sio, sm, res.Module, res.Internal)
		}
		diags := res.Diags
		if res.Module.Operation != nil {
			out, emitDiags, ie := c.emit(res.Module, i)
			if ie != nil {
				return c.reportEmitInternal(sio, sm, ie)
			}
			if !hasErrors(emitDiags) {
				outputs[i] = out
				if c.partFiles() {
					if d := writePartFile(c.partOutput(i), out); d != nil {
						emitDiags = append(emitDiags, d)
					}
				}
			}
			diags = append(diags, emitDiags...)
		}
		if o.verifyDiagnostics {
			diags = verifyDiagnostics(file, ch.Text, ch.FirstLine, diags)
		}
		if printDiagnostics(sio.err, sm, diags) {
			failed = true
		}
	}
	text := strings.Join(outputs, splitMarker+"\n")
	if c.emitter.outputDir || c.partFiles() {
		return statusOf(failed)
	}
	if o.output == "" || o.output == "-" {
		io.WriteString(sio.out, text)
		return statusOf(failed)
	}
	if failed {
		return exitFailure
	}
	if err := os.WriteFile(o.output, []byte(text), 0o644); err != nil {
		printDiagnostics(sio.err, nil, []*ir.Diagnostic{ir.Errorf(ir.Location{}, "cannot write '%s': %s", o.output, sysError(err, "no such directory"))})
		return exitFailure
	}
	return exitOK
}

func statusOf(failed bool) int {
	if failed {
		return exitFailure
	}
	return exitOK
}

func hasErrors(diags []*ir.Diagnostic) bool {
	for _, d := range diags {
		if d.Severity == ir.SevError {
			return true
		}
	}
	return false
}

// readInput reads the one input file ('-' or none: standard input).
func readInput(positional []string, sio *stdio) (name, text string, diag *ir.Diagnostic) {
	if len(positional) > 1 {
		return "", "", ir.Errorf(ir.Location{}, "tfc compiles one file at a time, got %d: '%s'", len(positional), strings.Join(positional, "', '"))
	}
	if len(positional) == 0 || positional[0] == "-" {
		data, err := io.ReadAll(sio.in)
		if err != nil {
			return "", "", ir.Errorf(ir.Location{}, "cannot read standard input: %v", err)
		}
		return stdinName, string(data), nil
	}
	name = positional[0]
	data, err := os.ReadFile(name)
	if err != nil {
		return "", "", ir.Errorf(ir.Location{}, "cannot open '%s': %s", name, sysError(err, "no such file"))
	}
	return name, string(data), nil
}

// sysError words a file system error without repeating the path;
// notExist words a missing file or directory.
func sysError(err error, notExist string) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return notExist
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// compileText compiles one input given as text and prints its
// diagnostics, as compileInput does for a file.
func (c *compiler) compileText(file, src string, sio *stdio) (ir.Module, int) {
	sm := &ir.SourceManager{}
	sm.AddFile(file, src)
	res := c.compile(file, src, 1)
	if res.Internal != nil {
		return ir.Module{}, c.reportInternal(sio, sm, res.Module, res.Internal)
	}
	if printDiagnostics(sio.err, sm, res.Diags) || res.Module.Operation == nil {
		return ir.Module{}, exitFailure
	}
	return res.Module, exitOK
}
