// Package passes holds the transformations that stay within one level of
// the IR: canonicalize, cse, dce, legalize-numerics, decompose, fuse. Each
// pass is one file and registers itself with ir.RegisterPass, so that
// pipelines (`--pass-pipeline=...`) and per-pass flags (`--cse`) find it.
package passes

import "github.com/tensorforge/tensorforge/ir"

// funcs calls fn for every function of the module.
func funcs(m ir.Module, fn func(f ir.Func) error) error {
	for _, f := range m.Funcs() {
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}
