// Package loop is the loop dialect: kernels over buffers, with the launch
// grid, the loops over tiles, every load and store and every scratchpad
// buffer explicit,
//
//	loop.kernel {kind = "row", num_inputs = 1, num_outputs = 1, sym_name = "f_k0"} {
//	^bb0(%x: memref<?x64xf32, dram>, %y: memref<?xf32, dram>, %rows: index):
//	  loop.parallel %c0, %rows, %c1 {dist = "grid"} {
//	  ^bb0(%r: index):
//	    %acc = loop.for %c0, %c64, %c8, %zero {combine = ["add"], dist = "threads"} { ... }
//	    %s = loop.reduce %acc {kind = "add"} : (vector<8xf32>) -> f32
//	    loop.store %s, %y, %r : (f32, memref<?xf32, dram>, index) -> ()
//	    loop.yield
//	  } : index
//	  loop.return
//	}
//
// so that one IR serves a CPU, a GPU and a Tensix grid (docs/loop-dialect.md).
//
// Every op is declared once, in package defs; gen_ops.go is generated from
// those declarations and holds, per op, the name constant (OpLoad), a
// typed wrapper (LoadOp, AsLoad) with accessors, a builder (BuildLoad) and
// the registered verifier. This package adds the rules of each op class
// (verify.go), the builders of the ops with regions and small helpers for
// constants (build.go).
//
// The reference docs, docs/dialects/loop.md, are generated too.
package loop

//go:generate go run ../odsgen -dialect loop
