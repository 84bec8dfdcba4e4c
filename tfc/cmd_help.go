package main

import (
	"fmt"
	"strings"
)

func init() {
	registerCommand(&command{
		name:    "help",
		usage:   "tfc help",
		summary: "print this help",
		run: func(args []string, sio *stdio) int {
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
	sb.WriteString("\nExit status: 0 success, 1 bad input (diagnostics on standard error), 2 internal compiler error.\n")
	return sb.String()
}
