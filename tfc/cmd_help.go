package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/tensorforge/tensorforge/ir"
)

func init() {
	registerCommand(&command{
		name:    "help",
		usage:   "tfc help [COMMAND]",
		summary: "print this help, or a command's synopsis and flags",
		run: func(args []string, sio *stdio) int {
			if len(args) == 1 {
				if c, ok := commands[args[0]]; ok {
					return commandHelp(c, sio)
				}
				printDiagnostics(sio.err, nil, []*ir.Diagnostic{ir.Errorf(ir.Location{}, "no command '%s' (see `tfc help`)", args[0])})
				return exitFailure
			}
			if len(args) > 1 {
				printDiagnostics(sio.err, nil, []*ir.Diagnostic{ir.Errorf(ir.Location{}, "`tfc help` takes at most one command, got %d arguments", len(args))})
				return exitFailure
			}
			fmt.Fprint(sio.out, helpText())
			return exitOK
		},
	})
	registerCommand(&command{
		name:    "version",
		usage:   "tfc version",
		summary: "print the version and the formats the backends produce",
		run: func(args []string, sio *stdio) int {
			if !noArgs("version", args, sio) {
				return exitFailure
			}
			fmt.Fprintln(sio.out, versionLine())
			return exitOK
		},
	})
}

// commandAliases are the flag spellings of commands: `tfc --help`.
var commandAliases = map[string]string{
	"-h": "help", "-help": "help", "--help": "help",
	"-version": "version", "--version": "version",
}

// versionLine is `tfc version 0.1.0 (LLVM IR 14, PTX 8.0 sm_90)`: the
// driver's version and the formats its backends write.
func versionLine() string {
	return "tfc version " + toolVersion + " (LLVM IR 14, PTX 8.0 sm_90)"
}

// wantsHelp reports whether a command's arguments ask for its help
// (-h, -help or --help before any `--`).
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// commandHelp prints a command's synopsis, summary and flags. The flags
// are the ones the command declares when it runs: it is run once with
// its output discarded and an argument no command accepts, which every
// command rejects right after declaring its flags.
func commandHelp(c *command, sio *stdio) int {
	if c.name == "help" {
		fmt.Fprint(sio.out, helpText())
		return exitOK
	}
	probe := &stdio{in: strings.NewReader(""), out: io.Discard, err: io.Discard, getenv: func(string) string { return "" }}
	c.run([]string{"--tfc-describe-flags"}, probe)
	fmt.Fprintf(sio.out, "Usage: %s\n\n%s.\n", c.usage, strings.ToUpper(c.summary[:1])+c.summary[1:])
	if probe.flags != nil && len(probe.flags.order) > 0 {
		fmt.Fprint(sio.out, "\nFlags (-flag and --flag alike; -flag=value or -flag value):\n")
		fmt.Fprint(sio.out, probe.flags.usage())
	} else {
		fmt.Fprint(sio.out, "\nIt takes no flags.\n")
	}
	return exitOK
}

func helpText() string {
	var sb strings.Builder
	sb.WriteString("tfc, the TensorForge compiler driver\n\n")
	sb.WriteString("Usage:\n")
	sb.WriteString("  tfc [flags] FILE.tir    compile FILE.tir ('-' or no FILE: standard input)\n")
	sb.WriteString("  tfc COMMAND [args]\n\n")
	sb.WriteString("Commands:\n")
	for _, c := range sortedCommands() {
		fmt.Fprintf(&sb, "  %-30s %s\n", c.usage, c.summary)
	}
	sb.WriteString("\nCompile flags (-flag and --flag alike; -flag=value or -flag value):\n")
	fs := newFlagSet()
	defaultCompileOptions().register(fs)
	sb.WriteString(fs.usage())
	fmt.Fprintf(&sb, "  %-30s %s\n", "--PASS[=OPTIONS]", "run one registered pass, in flag order with --pass-pipeline (see `tfc passes`)")
	sb.WriteString("mlir-opt's spellings are accepted too: --mlir-print-ir-after-all is --print-ir-after-all, --mlir-timing\nis --timing, --mlir-pass-pipeline-crash-reproducer is --crash-reproducer, and so on.\n")
	sb.WriteString("\nExit status: 0 success, 1 bad input (diagnostics on standard error), 2 internal compiler error.\n")
	return sb.String()
}
