package main

import (
	"fmt"
	"strings"

	"github.com/tensorforge/tensorforge/ir"
)

func init() {
	registerCommand(&command{
		name:    "passes",
		usage:   "tfc passes",
		summary: "list every pass with its options, and the -O0 and -O2 pipelines",
		run: func(args []string, sio *stdio) int {
			if !noArgs("passes", args, sio) {
				return exitFailure
			}
			fmt.Fprint(sio.out, passesText())
			return exitOK
		},
	})
}

var optionKindNames = map[ir.OptionKind]string{
	ir.OptInt: "int", ir.OptBool: "bool", ir.OptString: "string", ir.OptBytes: "bytes",
}

// passesText lists the registered passes by name:
//
//	fuse  group producers and consumers into kernels
//	    max-ops=<int>  default 64  the most ops in one kernel
func passesText() string {
	var sb strings.Builder
	sb.WriteString("Passes (name them in --pass-pipeline='a,b{opt=v}' or as flags --a --b):\n")
	for _, p := range ir.RegisteredPasses() {
		fmt.Fprintf(&sb, "  %-22s %s\n", p.Name, p.Summary)
		for _, o := range p.Options {
			def := o.Default
			if def == "" {
				def = `""`
			}
			fmt.Fprintf(&sb, "      %-30s default %-10s %s\n", o.Name+"=<"+optionKindNames[o.Kind]+">", def, o.Help)
		}
	}
	sb.WriteString("\nPipelines:\n")
	for _, l := range optLevels {
		text := l.pipeline
		if text == "" {
			text = "(no passes)"
		}
		fmt.Fprintf(&sb, "  -%-5s %-40s %s\n", l.flag, text, l.summary)
	}
	for _, kind := range emitKinds {
		e := emitters[kind]
		if e == nil || e.level == nil {
			continue
		}
		for _, l := range optLevels {
			if text := e.level(l.flag, l.pipeline); text != l.pipeline {
				fmt.Fprintf(&sb, "  -%s with --emit=%s: %s\n", l.flag, kind, text)
			}
		}
	}
	return sb.String()
}
