package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/tensorforge/tensorforge/ir"
)

// emitInternalError is a broken invariant of an emitter (the emitter
// returned an *ir.InternalError): a compiler bug, reported as one, never
// as a problem of the input.
type emitInternalError struct {
	ie *ir.InternalError
	// before is the IR the emitter was given, printed when a crash
	// reproducer was asked for.
	before string
}

// reportEmitInternal prints an emitter's internal error with its located
// findings and the crash reproducer hint, writes the reproducer when
// --crash-reproducer names a file, and returns exitInternal.
func (c *compiler) reportEmitInternal(sio *stdio, sm *ir.SourceManager, e *emitInternalError) int {
	var details strings.Builder
	printDiagnostics(&details, sm, e.ie.Diags)
	reproducer := ""
	if path := c.opts.crashReproducer; path != "" && e.before != "" {
		cmd := fmt.Sprintf("tfc --emit=%s --target=%s", c.opts.emit, c.target.Name)
		if c.emitter.outputDir {
			cmd += " -o DIR"
		}
		text := fmt.Sprintf("// Crash reproducer: the IR the --emit=%s backend failed on.\n// Reproduce with: %s %s\n%s", c.opts.emit, cmd, path, e.before)
		if err := os.WriteFile(path, []byte(text), 0o644); err == nil {
			reproducer = path
		}
	}
	return reportInternalError(sio, fmt.Sprintf("%s broke an invariant of its own", e.ie.Pass), details.String(), "", reproducer)
}
