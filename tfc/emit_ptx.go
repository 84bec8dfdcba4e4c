package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/tensorforge/tensorforge/emit/ptx"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
)

// The PTX emitter writes two files per function into the `-o` directory:
//
//	tfc --emit=ptx --target=h200 -o out/ model.tir
//	out/rms_silu_mul.ptx   the kernels, for ptxas -arch=sm_90 (sm_90a
//	                       where a matmul takes wgmma: its .target says so)
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
		level:        ptxLevel,
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
			switch v := os.Getenv("TENSORFORGE_PTX_MMA"); v {
			case "sync":
				ptx.WGMMA = false
			case "", "wgmma":
				ptx.WGMMA = true
			default:
				return fmt.Errorf("TENSORFORGE_PTX_MMA=%q: expected \"wgmma\" (sm_90a's warpgroup MMA where a matmul can take it, the default) or \"sync\" (mma.sync everywhere)", v)
			}
			switch v := os.Getenv("TENSORFORGE_PTX_PIPELINE"); v {
			case "", "0":
				ptx.Pipeline = false
			case "1":
				ptx.Pipeline = true
			default:
				return fmt.Errorf("TENSORFORGE_PTX_PIPELINE=%q: expected 1 (issue the next chunk's loads of an online row kernel an iteration ahead) or 0 (the default)", v)
			}
			switch v := os.Getenv("TENSORFORGE_PTX_PREFETCH_SHARED"); v {
			case "", "0":
				ptx.PrefetchShared = false
			case "1":
				ptx.PrefetchShared = true
			default:
				return fmt.Errorf("TENSORFORGE_PTX_PREFETCH_SHARED=%q: expected 1 (a norm weight's loads ahead of the combine in rows of a warp or more too) or 0 (the default)", v)
			}
			switch v := os.Getenv("TENSORFORGE_PTX_DECODE"); v {
			case "", "1":
				ptx.TCDecode = true
			case "0":
				ptx.TCDecode = false
			default:
				return fmt.Errorf("TENSORFORGE_PTX_DECODE=%q: expected 1 (matmuls of at most 32 rows per matrix in 16- and 32-row tiles, the default) or 0 (the 128-row tiles everywhere)", v)
			}
			switch v := os.Getenv("TENSORFORGE_PTX_DECODE_ROWS"); v {
			case "", "32":
				ptx.TCDecodeMaxRows = ptx.DefaultDecodeMaxRows
			case "16":
				ptx.TCDecodeMaxRows = 16
			default:
				return fmt.Errorf("TENSORFORGE_PTX_DECODE_ROWS=%q: expected 32 (the default) or 16 (the most rows a matrix of a matmul may have for the decode form)", v)
			}
			switch v := os.Getenv("TENSORFORGE_PTX_DECODE_BK"); v {
			case "":
				ptx.TCDecodeBK = ptx.DefaultDecodeBK
			case "64", "128", "256":
				ptx.TCDecodeBK, _ = strconv.ParseInt(v, 10, 64)
			default:
				return fmt.Errorf("TENSORFORGE_PTX_DECODE_BK=%q: expected 64, 128 (the default) or 256 (the K of a stage of the decode form)", v)
			}
			_, err := ptx.WriteDir(req.Module, req.OutPath)
			return err
		},
	})
}

// ptxResident is the lower-to-loops of -O2 for --emit=ptx: softmax-like
// rows of 16384 columns or more are resident (each row read once, kept in
// shared memory by bulk copies: a split of one CTA up to 32768 columns of
// f32, clusters of up to 8 CTAs beyond). On an H100, 4096 rows of 256000
// bf16 ran at 0.86 of copy against 0.62 online, rows of 32000 at 0.96
// against 0.83 one-pass (bench/results/gpu-h100-2026-12-07-bulk-emitted.txt).
// Shorter rows, not measured in that form, keep the default's.
const ptxResident = "lower-to-loops{resident=true,resident-bytes=131072,resident-min-cols=16384}"

// ptxLevel rewrites the -O2 pipeline for --emit=ptx: its lower-to-loops
// takes ptxResident's options.
func ptxLevel(flag, pipeline string) string {
	if flag != "O2" {
		return pipeline
	}
	parts := strings.Split(pipeline, ",")
	for i, p := range parts {
		if p == "lower-to-loops" {
			parts[i] = ptxResident
		}
	}
	return strings.Join(parts, ",")
}
