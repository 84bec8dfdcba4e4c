package main

import (
	"io"

	llvmemit "github.com/tensorforge/tensorforge/emit/llvm"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"

	// lower-to-loops registers itself; the CPU backend finishes lowering
	// with it when a pipeline stops at the graph level.
	_ "github.com/tensorforge/tensorforge/lowering"
)

func init() {
	registerEmitter(&emitter{
		kind:         "llvm",
		summary:      "LLVM 14 IR for the host CPU: a function per kernel (row range), per kernel grid and per function",
		defaultLevel: "O2",
		emit: func(req *emitRequest) error {
			if err := lowerForCPU(req.Module, req.Target, req.ExactRounding); err != nil {
				return err
			}
			text, err := llvmemit.EmitText(req.Module, llvmemit.Options{})
			if err != nil {
				return err
			}
			_, err = io.WriteString(req.Out, text)
			return err
		},
	})
}

// cpuLoweringTail is what the CPU backend runs after a pipeline that left
// graph ops: decomposition of the composite ops, then lower-to-loops (and
// sram-alloc once it is registered).
func cpuLoweringTail() string {
	tail := "decompose,lower-to-loops"
	if ir.LookupPass("sram-alloc") != nil {
		tail += ",sram-alloc"
	}
	return tail
}

// isLowered reports whether m holds no graph op: every function is on
// buffers and every kernel a loop.kernel.
func isLowered(m ir.Module) bool {
	lowered := true
	m.Walk(func(op *ir.Operation) bool {
		if op.Dialect() == "graph" {
			lowered = false
		}
		return lowered
	})
	return lowered
}

// lowerForCPU lowers m to the loop dialect with cpuLoweringTail when the
// pipeline has not: `tfc --emit=llvm` and `tfc run` then work with any
// pipeline, -O0 and plain `--pass-pipeline=canonicalize` included.
func lowerForCPU(m ir.Module, t *target.Target, exactRounding bool) error {
	if isLowered(m) {
		return nil
	}
	p, err := ir.ParsePipeline(cpuLoweringTail())
	if err != nil {
		return err
	}
	diags := &ir.Diagnostics{}
	pm := &ir.PassManager{Pipeline: p, VerifyEach: true}
	if err := pm.Run(m, &ir.PassContext{Diags: diags, Target: t, ExactRounding: exactRounding}); err != nil {
		if errs := errorDiags(diags.List); len(errs) > 0 {
			return ir.ErrorList(errs)
		}
		return err
	}
	return nil
}

// errorDiags keeps the errors of a diagnostic list.
func errorDiags(ds []*ir.Diagnostic) []*ir.Diagnostic {
	var out []*ir.Diagnostic
	for _, d := range ds {
		if d.Severity == ir.SevError {
			out = append(out, d)
		}
	}
	return out
}
