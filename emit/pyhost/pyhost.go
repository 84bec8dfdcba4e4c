// Package pyhost holds what the Python host code of the GPU emitters (the
// Triton module's launchers and the PTX launcher) write alike.
package pyhost

import (
	"fmt"
	"strconv"

	"github.com/tensorforge/tensorforge/dialects/loop"
)

// Check is one run-time check of a launcher: `if Cond: Raise`.
type Check struct{ Cond, Raise string }

// ExtentChecks translates a lowered function's loop.ExtentChecks into
// Python, for the launcher of function fn whose first nin arguments are
// the tensors names (Python expressions) given by the caller. A check that
// names an output (whose extents the launcher derives) is left out.
func ExtentChecks(fn string, checks []loop.ExtentCheck, names []string, nin int) []Check {
	var out []Check
	ext := func(arg, axis int) string { return fmt.Sprintf("%s.shape[%d]", names[arg], axis) }
	for _, c := range checks {
		if c.Arg >= nin || c.Other >= nin {
			continue
		}
		x := ext(c.Arg, c.Axis)
		switch {
		case c.Other >= 0:
			y := ext(c.Other, c.OtherAxis)
			msg := fmt.Sprintf("%s: %s has %%d in dimension %d but %s has %%d in dimension %d: two '?' extents that broadcast together must be equal",
				fn, names[c.Arg], c.Axis, names[c.Other], c.OtherAxis)
			out = append(out, Check{Cond: x + " != " + y, Raise: fmt.Sprintf("raise ValueError(%s %% (%s, %s))", strconv.Quote(msg), x, y)})
		case c.OrOne:
			msg := fmt.Sprintf("%s: %s has %%d in dimension %d, where %d (or 1, to broadcast) is needed", fn, names[c.Arg], c.Axis, c.Static)
			out = append(out, Check{Cond: fmt.Sprintf("%s not in (1, %d)", x, c.Static), Raise: fmt.Sprintf("raise ValueError(%s %% %s)", strconv.Quote(msg), x)})
		default:
			msg := fmt.Sprintf("%s: %s has %%d in dimension %d, where %d is needed", fn, names[c.Arg], c.Axis, c.Static)
			out = append(out, Check{Cond: fmt.Sprintf("%s != %d", x, c.Static), Raise: fmt.Sprintf("raise ValueError(%s %% %s)", strconv.Quote(msg), x)})
		}
	}
	return out
}
