package main

import (
	"os"
	"strings"

	"github.com/tensorforge/tensorforge/ir"
)

// mistypedCommand reports a first argument that is no command and no
// file but is close to a command's name (`tfc runn x.tir`): without it
// the word was taken for the input file, and the user read "cannot open
// 'runn'" or "tfc compiles one file at a time, got 2". A word that looks
// like a path (it has a '.' or a '/') or names an existing file is left
// to the compiler.
func mistypedCommand(word string) *ir.Diagnostic {
	if word == "" || strings.HasPrefix(word, "-") || strings.ContainsAny(word, "./\\") {
		return nil
	}
	if _, err := os.Stat(word); err == nil {
		return nil
	}
	best, bestDist := "", 3
	limit := 1
	if len(word) >= 4 {
		limit = 2
	}
	for _, c := range sortedCommands() { // ties go to the first name alphabetically
		if strings.HasPrefix(c.name, "test-") {
			continue
		}
		if d := editDistance(word, c.name); d <= limit && d < bestDist {
			best, bestDist = c.name, d
		}
	}
	if best == "" {
		return nil
	}
	return ir.Errorf(ir.Location{}, "unknown command '%s'; did you mean `tfc %s`? (see `tfc help`)", word, best)
}
