// Command tfc is the TensorForge compiler driver.
//
//	tfc [flags] FILE.tir          compile (parse, verify, run the pipeline, emit)
//	tfc passes | targets | version | help
//
// The driver is thin: the parser makes IR from text, the pass manager in
// package ir runs the pipeline the flags describe, and an emitter writes the
// result. Everything the user can see (flags, diagnostics, exit statuses) is
// fixed by the tfc page of the specification:
//
//   - 0: success;
//   - 1: bad input of any kind, reported as `file:line:col: error: ...`;
//   - 2: an internal compiler error, with a hint to rerun with
//     `--crash-reproducer=FILE`.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/tensorforge/tensorforge/ir"

	// The dialects and passes register their ops and passes from init.
	_ "github.com/tensorforge/tensorforge/dialects/graph"
	_ "github.com/tensorforge/tensorforge/dialects/loop"
	_ "github.com/tensorforge/tensorforge/lowering"
	_ "github.com/tensorforge/tensorforge/passes"
)

// Exit statuses.
const (
	exitOK       = 0
	exitFailure  = 1 // bad input, diagnostics printed
	exitInternal = 2 // a compiler bug
)

// toolVersion is printed by `tfc version`.
const toolVersion = "0.1.0"

// stdio is what one invocation reads and writes; tests substitute buffers.
type stdio struct {
	in     io.Reader
	out    io.Writer
	err    io.Writer
	getenv func(string) string
	// flags is the flag set the running command declared last
	// (newFlagSet), for `tfc help COMMAND`.
	flags *flagSet
}

// newFlagSet is the flag set of a command, remembered for its help.
func (s *stdio) newFlagSet() *flagSet {
	s.flags = newFlagSet()
	return s.flags
}

func main() {
	os.Exit(run(os.Args[1:], &stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr, getenv: os.Getenv}))
}

// run executes one command line and returns the exit status. A panic
// anywhere below is a compiler bug: it is reported as an internal error,
// never as a Go stack trace (unless TFC_DEBUG=1 asks for one).
func run(args []string, sio *stdio) (status int) {
	defer func() {
		if r := recover(); r != nil {
			status = reportInternalError(sio, fmt.Sprint(r), "", string(debug.Stack()), "")
		}
	}()
	if sio.getenv("TFC_ENABLE_TEST_PASSES") == "1" {
		registerTestPasses()
	}
	if len(args) > 0 {
		name := args[0]
		if alias, ok := commandAliases[name]; ok {
			name = alias
		}
		if c, ok := commands[name]; ok {
			if c.name != "help" && wantsHelp(args[1:]) {
				return commandHelp(c, sio)
			}
			return c.run(args[1:], sio)
		}
		if d := mistypedCommand(name); d != nil {
			printDiagnostics(sio.err, nil, []*ir.Diagnostic{d})
			return exitFailure
		}
	}
	return compileCommand(args, sio)
}

// reportInternalError prints `error: internal compiler error: ...`, the
// details (rendered diagnostics, may be empty) and a hint about the crash
// reproducer, and returns exitInternal.
func reportInternalError(sio *stdio, msg, details, stack, reproducer string) int {
	fmt.Fprintf(sio.err, "error: internal compiler error: %s\n", msg)
	io.WriteString(sio.err, details)
	if reproducer != "" {
		fmt.Fprintf(sio.err, "note: a crash reproducer was written to '%s'\n", reproducer)
	} else {
		fmt.Fprintln(sio.err, "note: please rerun with --crash-reproducer=FILE to save the IR and the pipeline that reproduce the failure")
	}
	if sio.getenv("TFC_DEBUG") == "1" && stack != "" {
		fmt.Fprintf(sio.err, "%s", stack)
	}
	return exitInternal
}

// printDiagnostics renders diagnostics sorted by location, with the source
// line and a caret, and reports whether any of them is an error.
func printDiagnostics(w io.Writer, sm *ir.SourceManager, diags []*ir.Diagnostic) bool {
	ir.SortDiagnostics(diags)
	hasError := false
	for _, d := range diags {
		io.WriteString(w, sm.Render(d))
		if d.Severity == ir.SevError {
			hasError = true
		}
	}
	return hasError
}

// ---------------------------------------------------------------------------
// Subcommands

// command is a subcommand: `tfc passes`. Each lives in its own cmd_*.go
// file and registers itself from init.
type command struct {
	name    string
	usage   string // the synopsis in `tfc help`: "tfc passes"
	summary string
	run     func(args []string, sio *stdio) int
}

var commands = map[string]*command{}

// registerCommand adds a subcommand; a name is taken once.
func registerCommand(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("tfc: command registered twice: " + c.name)
	}
	commands[c.name] = c
}

// sortedCommands returns the subcommands by name.
func sortedCommands() []*command {
	out := make([]*command, 0, len(commands))
	for _, c := range commands {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// noArgs rejects arguments of a command that takes none.
func noArgs(name string, args []string, sio *stdio) bool {
	if len(args) == 0 {
		return true
	}
	fmt.Fprintf(sio.err, "error: `tfc %s` takes no arguments, got '%s'\n", name, strings.Join(args, " "))
	return false
}
