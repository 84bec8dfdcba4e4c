package main

import (
	"github.com/tensorforge/tensorforge/emit/tt"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
)

// The tt emitter writes tt-metal kernels into the `-o` directory:
//
//	tfc --emit=tt --target=blackhole-p150 -o out/ model.tir
//	out/program.json              circular buffers, core grid, work split, arguments
//	out/<kernel>/reader.cpp       dataflow kernel: DRAM tiles into circular buffers
//	out/<kernel>/compute.cpp      compute kernel: the tiles through DST
//	out/<kernel>/writer.cpp       dataflow kernel: circular buffers to DRAM tiles
//
// A pipeline that stops at the graph level is finished here with the
// lowering every backend uses (decompose, lower-to-loops, sram-alloc), for
// the Tenstorrent target named.
func init() {
	registerEmitter(&emitter{
		kind:         "tt",
		summary:      "tt-metal reader, compute and writer kernels per kernel and a program.json, in the directory -o names (Tenstorrent targets)",
		defaultLevel: "O2",
		outputDir:    true,
		emit: func(req *emitRequest) error {
			if req.Target == nil || req.Target.Family != target.Tenstorrent {
				name := "cpu"
				if req.Target != nil {
					name = req.Target.Name
				}
				return ir.Errorf(ir.Location{}, "--emit=tt generates tt-metal kernels; it needs a Tenstorrent target (--target=blackhole-p150 or --target=wormhole-n300), not '%s'", name)
			}
			if err := lowerForCPU(req.Module, req.Target, req.ExactRounding); err != nil {
				return err
			}
			_, err := tt.WriteDir(req.Module, req.OutPath, tt.Options{Target: req.Target})
			return err
		},
	})
}
