package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	tritonemit "github.com/tensorforge/tensorforge/emit/triton"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
)

func init() {
	registerEmitter(&emitter{
		kind:         "triton",
		summary:      "a Python module of @triton.jit kernels and torch launchers, one per function (CUDA targets)",
		defaultLevel: "O2",
		emit: func(req *emitRequest) error {
			if req.Target.Family != target.CUDA {
				return ir.Errorf(ir.Location{}, "--emit=triton generates CUDA kernels; it needs a CUDA target (--target=h100 or --target=h200), not '%s'", req.Target.Name)
			}
			// a pipeline that stopped at the graph level (-O2, -O0) is
			// lowered the way the CPU backend lowers it
			if err := lowerForCPU(req.Module, req.Target, req.ExactRounding); err != nil {
				return err
			}
			source := ""
			if loc := req.Module.Loc; loc.Known() {
				source = filepath.Base(loc.File)
			}
			opts := tritonemit.Options{Source: source, Target: req.Target.Name, Tuned: req.Tuned}
			switch v := os.Getenv("TENSORFORGE_TRITON_I8"); v {
			case "", "cast":
			case "bits":
				opts.I8Bits = true
			default:
				return fmt.Errorf("TENSORFORGE_TRITON_I8=%q: expected \"cast\" (an int8 weight widened by .to(), the default) or \"bits\" (through the bits of an f32, without conversion instructions)", v)
			}
			text, err := tritonemit.Emit(req.Module, opts)
			if err != nil {
				return err
			}
			if req.TuneSeconds > 0 && strings.Contains(text, "\nKEYS = {") {
				// time the candidates on the GPU, then emit with what won
				if opts.Tuned, err = runTuner(req, text); err != nil {
					return err
				}
				if text, err = tritonemit.Emit(req.Module, opts); err != nil {
					return err
				}
			}
			_, err = io.WriteString(req.Out, text)
			return err
		},
	})
}
