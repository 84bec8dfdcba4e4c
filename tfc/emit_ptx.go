package main

import (
	"github.com/tensorforge/tensorforge/emit/ptx"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
)

// The PTX emitter writes two files per function into the `-o` directory:
//
//	tfc --emit=ptx --target=h200 -o out/ model.tir
//	out/rms_silu_mul.ptx   the kernels, for ptxas -arch=sm_90
//	out/rms_silu_mul.py    rms_silu_mul(*args) on CUDA tensors
//
// The kernels are planned by the pipeline for the target named (vector
// width, scratchpad capacity): a target that is not a CUDA GPU gets a
// warning. A pipeline that stops at the graph level is finished here
// with the lowering the CPU backend uses (decompose, lower-to-loops,
// sram-alloc), for the target named or, for a target that is not a CUDA
// GPU, the h200.
func init() {
	registerEmitter(&emitter{
		kind:         "ptx",
		summary:      "PTX for sm_90 and a Python launcher per function, in the directory -o names",
		defaultLevel: "O2",
		outputDir:    true,
		emit: func(req *emitRequest) error {
			t := req.Target
			if t == nil || t.Family != target.CUDA {
				name := "cpu"
				if t != nil {
					name = t.Name
				}
				req.Diags.Emit(ir.SevWarning, ir.Location{}, "--emit=ptx for target '%s', which is not a CUDA GPU: kernels are planned with its vector width and scratchpad (name --target=h200 or h100)", name)
				h200, err := target.Lookup("h200")
				if err != nil {
					return err
				}
				t = h200
			}
			if err := lowerForCPU(req.Module, t, req.ExactRounding); err != nil {
				return err
			}
			_, err := ptx.WriteDir(req.Module, req.OutPath)
			return err
		},
	})
}
