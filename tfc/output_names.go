package main

import (
	"fmt"
	"strings"

	"github.com/tensorforge/tensorforge/ir"
)

// maxFileSymbolBytes bounds the symbols an emitter turns into file or
// directory names (`DIR/<func>.ptx`, `DIR/<func>.metal`,
// `DIR/<kernel>/reader.cpp`). File systems allow 255 bytes in one path
// component (NAME_MAX on Linux and macOS); 200 leaves room for the suffixes
// the emitters add (".metal", "_k12", ...).
const maxFileSymbolBytes = 200

// fileSymbolOps names the ops whose symbols the emitter of c turns into
// file or directory names: functions for PTX (`<func>.ptx`, `<func>.py`)
// and Metal (`<func>.metal`, `<func>.json`, except when everything goes to
// one `-o FILE.metal`), kernels for tt-metal (`<kernel>/reader.cpp`,
// named `<func>_k0`, ... when the emitter lowers the module itself, so
// the functions' names are checked too).
func (c *compiler) fileSymbolOps() []string {
	switch c.emitter.kind {
	case "ptx":
		return []string{ir.FuncOpName}
	case "metal":
		if strings.HasSuffix(c.opts.output, ".metal") {
			return nil
		}
		return []string{ir.FuncOpName}
	case "tt":
		return []string{ir.FuncOpName, "loop.kernel"}
	}
	return nil
}

// checkFileSymbols reports, at their ops, the module-level ops named in
// opNames whose names are too long to become file names. Without the
// check the emitter failed writing with an unlocated "file name too long".
func checkFileSymbols(m ir.Module, opNames []string, emit string) []*ir.Diagnostic {
	var diags []*ir.Diagnostic
	for op := m.Body().First(); op != nil; op = op.Next() {
		what := ""
		for _, n := range opNames {
			if op.Name() == n {
				what = map[string]string{ir.FuncOpName: "function", "loop.kernel": "kernel"}[n]
			}
		}
		if what == "" {
			continue
		}
		name, _ := op.Attr("sym_name").(ir.StringAttr)
		if len(name) <= maxFileSymbolBytes {
			continue
		}
		diags = append(diags, ir.Errorf(op.Loc, "%s name @%s is %d bytes long: --emit=%s makes file names from it, and refuses names of more than %d bytes (file systems allow 255 in a file name)",
			what, shortSymbol(string(name)), len(name), emit, maxFileSymbolBytes))
	}
	return diags
}

// shortSymbol abbreviates a long symbol for a message: its first 32 bytes
// and "...".
func shortSymbol(s string) string {
	const keep = 32
	if len(s) <= keep {
		return s
	}
	cut := keep
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s...", s[:cut])
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
