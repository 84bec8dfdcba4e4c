package main

import (
	"path/filepath"
	"strings"

	"github.com/tensorforge/tensorforge/emit/metal"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
)

// The Metal emitter writes the kernels and a launch description per
// function into the `-o` directory, or everything into one file when -o
// names a .metal file:
//
//	tfc --emit=metal --target=m3-max -o out/ model.tir
//	out/rms_silu_mul.metal   the kernels the function launches
//	out/rms_silu_mul.json    buffers, grid and threadgroup sizes, MLX form
//
//	tfc --emit=metal --target=m3-max -o model.metal model.tir
//	model.metal, model.json  every kernel, every function
//
// A target that is not a Metal one is refused, as --emit=triton and
// --emit=tt refuse theirs. A pipeline that stops at the graph level is
// finished with the lowering the CPU backend uses (decompose,
// lower-to-loops, sram-alloc) for the Metal target named.
// Kernels lowered without sram-alloc get their sram planned here, so that
// a plan beyond the threadgroup memory is reported either way.
func init() {
	registerEmitter(&emitter{
		kind:         "metal",
		summary:      "Metal kernels and a JSON launch description per function, in the directory -o names (or -o FILE.metal)",
		defaultLevel: "O2",
		outputDir:    true,
		emit: func(req *emitRequest) error {
			t := req.Target
			if t == nil || t.Family != target.Metal {
				name := "cpu"
				if t != nil {
					name = t.Name
				}
				return ir.Errorf(ir.Location{}, "--emit=metal generates Metal kernels; it needs a Metal target (--target=m3-max), not '%s'", name)
			}
			if err := lowerForCPU(req.Module, t, req.ExactRounding); err != nil {
				return err
			}
			if err := planSRAM(req.Module, t); err != nil {
				return err
			}
			opts := metal.Options{Target: t}
			if loc := req.Module.Loc; loc.Known() {
				opts.Source = filepath.Base(loc.File)
			}
			var err error
			if strings.HasSuffix(req.OutPath, ".metal") {
				_, err = metal.WriteFile(req.Module, req.OutPath, opts)
			} else {
				_, err = metal.WriteDir(req.Module, req.OutPath, opts)
			}
			return err
		},
	})
}

// planSRAM runs sram-alloc for target t when a kernel of m has no sram
// plan yet (a pipeline that lowered without it).
func planSRAM(m ir.Module, t *target.Target) error {
	planned := true
	for op := m.Body().First(); op != nil; op = op.Next() {
		if op.Name() == "loop.kernel" {
			if _, ok := op.Attr("sram_bytes").(ir.IntAttr); !ok {
				planned = false
			}
		}
	}
	if planned || ir.LookupPass("sram-alloc") == nil {
		return nil
	}
	p, err := ir.ParsePipeline("sram-alloc")
	if err != nil {
		return err
	}
	diags := &ir.Diagnostics{}
	pm := &ir.PassManager{Pipeline: p, VerifyEach: true}
	if err := pm.Run(m, &ir.PassContext{Diags: diags, Target: t}); err != nil {
		if errs := errorDiags(diags.List); len(errs) > 0 {
			return ir.ErrorList(errs)
		}
		return err
	}
	return nil
}
