// Package passes holds the transformations that stay within one level of
// the IR: canonicalize, cse, dce, legalize-numerics, decompose, fuse. Each
// pass is one file and registers itself with ir.RegisterPass, so that
// pipelines (`--pass-pipeline=...`) and per-pass flags (`--cse`) find it.
package passes
