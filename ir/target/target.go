// Package target describes the machines TensorForge compiles for: memory
// bandwidth, compute rates, on-chip scratchpad capacity and the shape of
// their parallelism. Fusion, SRAM planning, the memory-traffic and roofline
// tools and the emitters all read these figures from here.
package target

import (
	"fmt"
	"sort"
	"strings"
)

// Family is the kind of machine, which picks the default emitter.
type Family string

const (
	CPU         Family = "cpu"
	CUDA        Family = "cuda"
	Metal       Family = "metal"
	Tenstorrent Family = "tenstorrent"
)

// Target is one machine description.
type Target struct {
	Name        string
	Description string
	Family      Family
	// DRAMBandwidth is bytes per second.
	DRAMBandwidth float64
	// PeakFLOPS maps a compute precision ("bf16", "f16", "f32", "f8", "tf32",
	// "bfp8") to dense FLOP/s.
	PeakFLOPS map[string]float64
	// ScratchpadBytes is the on-chip scratchpad one kernel instance may use:
	// shared memory per block (CUDA), threadgroup memory (Metal), L1 per
	// Tensix core (Tenstorrent), or the L2 share of one core (CPU).
	ScratchpadBytes int64
	// Cores is SMs, GPU cores, Tensix cores or CPU threads.
	Cores int
	// VectorBytes is the bytes one vector op of the lowered loops covers:
	// the natural width of one load on a GPU or Tensix, several registers
	// on a CPU (four of 32 bytes), where LLVM splits the op into
	// independent ones, so that a reduction keeps four accumulators and
	// its loop is not bound by the latency of one add or max chain.
	VectorBytes int
	// SIMDWidth is the warp / simdgroup width (1 on a CPU).
	SIMDWidth int
	// TileRows, TileCols give the native tile (32x32 on Tenstorrent, 1x1 elsewhere).
	TileRows, TileCols int
	// DefaultEmit is the `--emit` a backend compile uses by default.
	DefaultEmit string
	// Source cites where the figures come from.
	Source string
}

// PeakFor returns the dense compute rate for a precision, falling back to f32.
func (t *Target) PeakFor(precision string) float64 {
	if v, ok := t.PeakFLOPS[precision]; ok {
		return v
	}
	return t.PeakFLOPS["f32"]
}

const (
	kib = 1024
	tb  = 1e12
	gb  = 1e9
)

// The table of targets/ ../shared/spec/targets.md carries the sources.
var targets = []*Target{
	{
		Name: "cpu", Description: "the host CPU (figures measured at start-up or set by flag)", Family: CPU,
		// A conservative desktop-class default; `tfc roofline --bw/--flops` and
		// the benchmarks override it with measured figures.
		DRAMBandwidth: 20 * gb, PeakFLOPS: map[string]float64{"f32": 100e9, "bf16": 100e9, "f16": 100e9},
		ScratchpadBytes: 1024 * kib, Cores: 2, VectorBytes: 128, SIMDWidth: 1, TileRows: 1, TileCols: 1,
		DefaultEmit: "llvm", Source: "host; L2 per core as scratchpad",
	},
	{
		Name: "h100", Description: "NVIDIA H100 SXM5", Family: CUDA,
		DRAMBandwidth: 3.35 * tb,
		PeakFLOPS:     map[string]float64{"bf16": 989e12, "f16": 989e12, "f8": 1979e12, "tf32": 495e12, "f32": 67e12},
		// 228 KB shared memory per SM, 227 KB usable by one block.
		ScratchpadBytes: 227 * kib, Cores: 132, VectorBytes: 16, SIMDWidth: 32, TileRows: 1, TileCols: 1,
		DefaultEmit: "ptx", Source: "NVIDIA H100 datasheet; Hopper tuning guide",
	},
	{
		Name: "h200", Description: "NVIDIA H200 SXM (141 GB HBM3e)", Family: CUDA,
		// 4.8 TB/s datasheet; 4.25 TB/s measured device-to-device copy.
		DRAMBandwidth:   4.8 * tb,
		PeakFLOPS:       map[string]float64{"bf16": 989e12, "f16": 989e12, "f8": 1979e12, "tf32": 495e12, "f32": 67e12},
		ScratchpadBytes: 227 * kib, Cores: 132, VectorBytes: 16, SIMDWidth: 32, TileRows: 1, TileCols: 1,
		DefaultEmit: "ptx", Source: "NVIDIA H200 datasheet; measured copy bandwidth 4.25 TB/s",
	},
	{
		Name: "m3-max", Description: "Apple M3 Max, 40-core GPU", Family: Metal,
		DRAMBandwidth: 409.6 * gb,
		// FP32 about 14.3 to 16.4 TFLOP/s (third-party estimates); FP16 the same rate.
		PeakFLOPS:       map[string]float64{"f32": 14.3e12, "f16": 14.3e12, "bf16": 14.3e12},
		ScratchpadBytes: 32 * kib, Cores: 40, VectorBytes: 16, SIMDWidth: 32, TileRows: 1, TileCols: 1,
		DefaultEmit: "metal", Source: "Apple (LPDDR5-6400, 400 GB/s); third-party measurements",
	},
	{
		Name: "wormhole-n300", Description: "Tenstorrent Wormhole n300", Family: Tenstorrent,
		DRAMBandwidth: 576 * gb,
		PeakFLOPS:     map[string]float64{"f8": 466e12, "f16": 131e12, "bf16": 131e12, "bfp8": 262e12, "f32": 131e12 / 4},
		// MEM_L1_SIZE: 1464 KiB usable per Tensix core.
		ScratchpadBytes: 1464 * kib, Cores: 128, VectorBytes: 64, SIMDWidth: 32, TileRows: 32, TileCols: 32,
		DefaultEmit: "tt", Source: "docs.tenstorrent.com Wormhole specifications; tt-metal dev_mem_map.h",
	},
	{
		Name: "blackhole-p150", Description: "Tenstorrent Blackhole p150", Family: Tenstorrent,
		DRAMBandwidth: 512 * gb,
		PeakFLOPS:     map[string]float64{"bfp8": 664e12, "f8": 664e12, "bf16": 332e12, "f16": 332e12, "f32": 332e12 / 4},
		// MEM_L1_SIZE: 1536 KiB per Tensix core; 120 cores after a 2026 firmware change.
		ScratchpadBytes: 1536 * kib, Cores: 120, VectorBytes: 64, SIMDWidth: 32, TileRows: 32, TileCols: 32,
		DefaultEmit: "tt", Source: "docs.tenstorrent.com Blackhole specifications; tt-metal dev_mem_map.h",
	},
}

// aliases are the spellings users already know.
var aliases = map[string]string{
	"tenstorrent_blackhole": "blackhole-p150",
	"tenstorrent_wormhole":  "wormhole-n300",
	"m3_max":                "m3-max",
	"apple_m3_max":          "m3-max",
	"h100_sxm":              "h100",
}

// Lookup finds a target by name or alias.
func Lookup(name string) (*Target, error) {
	n := strings.ToLower(name)
	if a, ok := aliases[n]; ok {
		n = a
	}
	for _, t := range targets {
		if t.Name == n {
			return t, nil
		}
	}
	return nil, fmt.Errorf("unknown target '%s' (known: %s)", name, strings.Join(Names(), ", "))
}

// All returns every target in table order.
func All() []*Target { return append([]*Target(nil), targets...) }

// Names returns the canonical names in table order.
func Names() []string {
	out := make([]string, len(targets))
	for i, t := range targets {
		out[i] = t.Name
	}
	return out
}

// Aliases returns the aliases of a canonical name, sorted.
func Aliases(name string) []string {
	var out []string
	for a, n := range aliases {
		if n == name {
			out = append(out, a)
		}
	}
	sort.Strings(out)
	return out
}
