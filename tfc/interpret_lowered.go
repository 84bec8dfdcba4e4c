package main

import (
	"github.com/tensorforge/tensorforge/dialects/graph/eval"
	loopeval "github.com/tensorforge/tensorforge/dialects/loop/eval"
	"github.com/tensorforge/tensorforge/ir"
)

// interpretFunc evaluates fn of m on inputs, one per argument of the
// function as written. A function the pipeline left at the graph level
// runs in the graph interpreter; one it lowered (-O2, -O0, any pipeline
// with lower-to-loops) takes its outputs as extra buffer arguments after
// the inputs, so it runs in the loop dialect's interpreter
// (dialects/loop/eval), which allocates those outputs and returns them as
// the results: `tfc interpret -O2` evaluates the kernels the backends are
// given.
func interpretFunc(m ir.Module, fn ir.Func, inputs []*eval.Tensor, f64, exactRounding bool) ([]*eval.Tensor, error) {
	if fn.Attr("num_results") == nil {
		return eval.Run(fn, inputs, eval.Options{F64: f64, ExactRounding: exactRounding})
	}
	if f64 {
		return nil, ir.Errorf(fn.Loc, "--f64 evaluates graph-level functions only, and the pipeline lowered @%s to loops: drop --f64 or the lowering", fn.SymName())
	}
	return loopeval.Run(m, fn.SymName(), inputs)
}
