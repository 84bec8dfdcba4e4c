package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tensorforge/tensorforge/ir"
)

// Where the outputs of `--split-input-file` go. Each part of the input is
// compiled on its own, so each gets its own output:
//
//   - tir and dot, to standard output or -o FILE: the parts' texts joined
//     by `// -----` lines, as mlir-opt does (split tir parses back the
//     same way; DOT reads `//` lines as comments);
//   - ptx, metal and tt, which fill the directory -o DIR: one folder per
//     part, DIR/part0, DIR/part1, ... (Metal's -o FILE.metal:
//     FILE.part0.metal, FILE.part1.metal, ...), so that one part's files
//     never overwrite another's;
//   - llvm and triton, whose texts cannot be joined (modules with the same
//     names, several Python modules): one file per part in the directory
//     -o DIR names, DIR/part0.ll, DIR/part1.ll, ... or DIR/part0.py, ...
//
// N counts the parts of the input from 0, failed ones included; a part
// that fails writes nothing.

// partFileExt is the file suffix of the emitters that write one file per
// split part.
var partFileExt = map[string]string{"llvm": ".ll", "triton": ".py"}

// partFileWhat words, for the error, what the parts of partFileExt's
// emitters are.
var partFileWhat = map[string]string{"llvm": "LLVM modules", "triton": "Python modules"}

// partFiles says whether every split part is written to a file of its own
// by the driver (llvm and triton under --split-input-file).
func (c *compiler) partFiles() bool {
	return c.opts.splitInputFile && partFileExt[c.opts.emit] != ""
}

// partOutput is the output path of split part i (the -o argument when
// the input is not split).
func (c *compiler) partOutput(i int) string {
	out := c.opts.output
	if !c.opts.splitInputFile {
		return out
	}
	part := fmt.Sprintf("part%d", i)
	switch {
	case c.partFiles():
		return filepath.Join(out, part+partFileExt[c.opts.emit])
	case c.emitter.outputDir && c.emitter.kind == "metal" && strings.HasSuffix(out, ".metal"):
		return strings.TrimSuffix(out, ".metal") + "." + part + ".metal"
	case c.emitter.outputDir:
		return filepath.Join(out, part)
	}
	return out
}

// writePartFile writes the text of one split part, creating its directory.
func writePartFile(path, text string) *ir.Diagnostic {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return ir.Errorf(ir.Location{}, "cannot create '%s': %s", filepath.Dir(path), sysError(err, "no such directory"))
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return ir.Errorf(ir.Location{}, "cannot write '%s': %s", path, sysError(err, "no such directory"))
	}
	return nil
}
