package loop

import (
	"fmt"

	"github.com/tensorforge/tensorforge/ir"
)

// ExtentChecksAttr names the attribute of a lowered function that lists
// what the `?` extents of its arguments must satisfy at run time:
//
//	func.func @f(%x: memref<?x3xf32, dram>, %y: memref<?x3xf32, dram>, ...)
//	    attributes {extent_checks = [[0, 0, 1, 0]], num_results = 1}
//
// says that dimension 0 of argument 0 and dimension 0 of argument 1 must
// be equal. Lowering writes it where its kernels assume so (two `?`
// extents that broadcast together are equal, a `?` that broadcasts
// against a static n is n or 1); every runner and launcher checks it
// before the first kernel runs, so that no kernel indexes past a buffer.
// An entry [a, i, b, j] with b >= 0 asks extent i of argument a to equal
// extent j of argument b; [a, i, -1, n] asks for exactly n, [a, i, -2, n]
// for n or 1.
const ExtentChecksAttr = "extent_checks"

// ExtentCheck is one entry of ExtentChecksAttr.
type ExtentCheck struct {
	Arg, Axis int
	// Other and OtherAxis name the extent Arg's must equal; Other is -1
	// when it must equal Static instead (or 1, with OrOne).
	Other, OtherAxis int
	Static           int64
	OrOne            bool
}

// ExtentChecksValue is the attribute value recording checks.
func ExtentChecksValue(checks []ExtentCheck) ir.Attr {
	out := make(ir.ArrayAttr, len(checks))
	for i, c := range checks {
		switch {
		case c.Other >= 0:
			out[i] = ir.IntArray(int64(c.Arg), int64(c.Axis), int64(c.Other), int64(c.OtherAxis))
		case c.OrOne:
			out[i] = ir.IntArray(int64(c.Arg), int64(c.Axis), -2, c.Static)
		default:
			out[i] = ir.IntArray(int64(c.Arg), int64(c.Axis), -1, c.Static)
		}
	}
	return out
}

// ExtentChecks reads the checks of a lowered function (none when it has
// no ExtentChecksAttr). A malformed entry, or one naming an argument or
// a dimension the function does not have or that is not `?`, is an error
// located at the function.
func ExtentChecks(f ir.Func) ([]ExtentCheck, error) {
	a := f.Attr(ExtentChecksAttr)
	if a == nil {
		return nil, nil
	}
	arr, ok := a.(ir.ArrayAttr)
	if !ok {
		return nil, ir.OpError(f.Operation, "has %s = %s; expected a list of [argument, dimension, argument or -1 or -2, dimension or extent]", ExtentChecksAttr, a.String())
	}
	args := f.Args()
	dynamic := func(arg, axis int) bool {
		if arg < 0 || arg >= len(args) {
			return false
		}
		s, ok := ir.ShapeOf(args[arg].Type())
		return ok && axis >= 0 && axis < len(s) && s[axis] == ir.Dynamic
	}
	var out []ExtentCheck
	for i, e := range arr {
		v, ok := e.(ir.ArrayAttr)
		var n []int64
		if ok {
			n, ok = v.Int64s()
		}
		if !ok || len(n) != 4 {
			return nil, ir.OpError(f.Operation, "has a malformed %s entry #%d (%s); expected [argument, dimension, argument or -1 or -2, dimension or extent]", ExtentChecksAttr, i, e.String())
		}
		c := ExtentCheck{Arg: int(n[0]), Axis: int(n[1]), Other: int(n[2]), OtherAxis: int(n[3])}
		switch {
		case c.Other == -1 || c.Other == -2:
			c.Static, c.OrOne, c.Other, c.OtherAxis = n[3], c.Other == -2, -1, 0
			if c.Static < 1 {
				return nil, ir.OpError(f.Operation, "%s entry #%d asks for extent %d", ExtentChecksAttr, i, c.Static)
			}
		case !dynamic(c.Other, c.OtherAxis):
			return nil, ir.OpError(f.Operation, "%s entry #%d names dimension %d of argument #%d, which is not a '?' dimension of the function", ExtentChecksAttr, i, c.OtherAxis, c.Other)
		}
		if !dynamic(c.Arg, c.Axis) {
			return nil, ir.OpError(f.Operation, "%s entry #%d names dimension %d of argument #%d, which is not a '?' dimension of the function", ExtentChecksAttr, i, c.Axis, c.Arg)
		}
		out = append(out, c)
	}
	return out, nil
}

// CheckExtents applies the checks of lowered function f to the shapes of
// its first len(inShapes) arguments (its inputs; checks naming others are
// skipped). The error names the function and the arguments.
func CheckExtents(f ir.Func, inShapes [][]int64) error {
	checks, err := ExtentChecks(f)
	if err != nil || len(checks) == 0 {
		return err
	}
	args := f.Args()
	names := make([]string, len(args))
	for i, a := range args {
		names[i] = fmt.Sprintf("argument #%d", i)
		if a.Name != "" {
			names[i] += " (%" + a.Name + ")"
		}
	}
	shapes := map[string][]int64{}
	for i, sh := range inShapes {
		shapes[names[i]] = sh
	}
	for _, c := range checks {
		if c.Arg >= len(inShapes) || c.Other >= len(inShapes) {
			continue
		}
		if err := c.Named(names).Check(shapes); err != nil {
			return ir.Errorf(f.Loc, "@%s: %v", f.SymName(), err)
		}
	}
	return nil
}

// NamedExtentCheck is an ExtentCheck with its arguments named, as the
// launch descriptions of the Metal and tt-metal emitters write it for a
// host to check: extent Axis of input Argument must equal extent
// OtherAxis of input Other or, without Other, be Extent (or 1 with OrOne).
type NamedExtentCheck struct {
	Argument  string `json:"argument"`
	Axis      int    `json:"axis"`
	Other     string `json:"equals_argument,omitempty"`
	OtherAxis *int   `json:"equals_axis,omitempty"`
	Extent    *int64 `json:"extent,omitempty"`
	OrOne     bool   `json:"or_one,omitempty"`
}

// Named is c with the arguments named by names (indexed by argument).
func (c ExtentCheck) Named(names []string) NamedExtentCheck {
	nc := NamedExtentCheck{Argument: names[c.Arg], Axis: c.Axis}
	if c.Other >= 0 {
		axis := c.OtherAxis
		nc.Other, nc.OtherAxis = names[c.Other], &axis
	} else {
		n := c.Static
		nc.Extent, nc.OrOne = &n, c.OrOne
	}
	return nc
}

// Check applies c to the shapes of the named arguments, as a host does
// before the first launch; the error names both extents.
func (c NamedExtentCheck) Check(shapes map[string][]int64) error {
	s := shapes[c.Argument]
	if c.Axis < 0 || c.Axis >= len(s) {
		return fmt.Errorf("%s has no dimension %d", c.Argument, c.Axis)
	}
	x := s[c.Axis]
	switch {
	case c.OtherAxis != nil:
		o := shapes[c.Other]
		if *c.OtherAxis < 0 || *c.OtherAxis >= len(o) {
			return fmt.Errorf("%s has no dimension %d", c.Other, *c.OtherAxis)
		}
		if x != o[*c.OtherAxis] {
			return fmt.Errorf("%s has %d in dimension %d but %s has %d in dimension %d: two '?' extents that broadcast together must be equal",
				c.Argument, x, c.Axis, c.Other, o[*c.OtherAxis], *c.OtherAxis)
		}
	case c.Extent == nil || x == *c.Extent:
	case c.OrOne && x == 1:
	case c.OrOne:
		return fmt.Errorf("%s has %d in dimension %d, where %d (or 1, to broadcast) is needed", c.Argument, x, c.Axis, *c.Extent)
	default:
		return fmt.Errorf("%s has %d in dimension %d, where %d is needed", c.Argument, x, c.Axis, *c.Extent)
	}
	return nil
}
