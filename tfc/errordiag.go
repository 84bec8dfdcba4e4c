package main

import (
	"errors"

	"github.com/tensorforge/tensorforge/ir"
)

// errorDiagAt returns err as one diagnostic. An error that already is a
// diagnostic keeps its own location and text: wrapping it in another
// diagnostic would print its location twice
// (`x.tir:1:1: error: x.tir:1:1: error: ...`). Any other error becomes an
// error at loc with err's text.
func errorDiagAt(loc ir.Location, err error) *ir.Diagnostic {
	var d *ir.Diagnostic
	if errors.As(err, &d) {
		return d
	}
	return ir.Errorf(loc, "%v", err)
}
