package tt

import (
	"fmt"

	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
)

// This file holds the Tenstorrent facts the backend needs: the core grid
// of each target, the L1 of a core, the tile and its data formats.

// TileRows and TileCols are the native tile of the Tensix FPU and SFPU.
const (
	TileRows = 32
	TileCols = 32
)

// maxCBs is the number of circular buffers a Tensix core has
// (tt::CBIndex::c_0 .. c_31).
const maxCBs = 32

// dstTiles is how many tiles one tile_regs_acquire gives the math engine:
// DST holds 16 tiles of 16 bits, 8 per acquire (half sync); the kernels run
// with fp32_dest_acc_en, which halves that to 4 tiles of 32 bits.
const dstTiles = 4

// format is a tile data format.
type format uint8

const (
	float32Format format = iota
	float16bFormat
	float16Format
	// uint8Format holds ui8 and i8 tiles, one byte per element. tt-metal
	// has an Int8 format too, but its unpacker and packer read Int8 as
	// sign-magnitude; i8 tiles are declared UInt8 (the raw two's complement
	// byte, zero-extended into DST) and converted with
	// typecast_tile<Int8, ...>, as tt-metal's typecast.h prescribes.
	uint8Format
)

// String is the tt-metal spelling: DataFormat::Float16_b.
func (f format) String() string {
	switch f {
	case float16bFormat:
		return "Float16_b"
	case float16Format:
		return "Float16"
	case uint8Format:
		return "UInt8"
	}
	return "Float32"
}

// tileBytes is the size of one 32x32 tile: 4096 bytes in Float32, 2048 in
// Float16_b and Float16, 1024 in UInt8 (targets.md).
func (f format) tileBytes() int64 {
	switch f {
	case float32Format:
		return 4096
	case uint8Format:
		return 1024
	}
	return 2048
}

// exact16 reports whether the format holds 16-bit floats, which the FPU's
// source registers (19 bits, TF32) take without losing a bit.
func (f format) exact16() bool { return f == float16bFormat || f == float16Format }

// isInt reports whether the format holds integers: they reach DST as
// integers and become floats only through typecast_tile.
func (f format) isInt() bool { return f == uint8Format }

// formatOf maps an element type to the tile format holding it.
func formatOf(k ir.ElemKind) (format, bool) {
	switch k {
	case ir.F32:
		return float32Format, true
	case ir.BF16:
		return float16bFormat, true
	case ir.F16:
		return float16Format, true
	case ir.UI8, ir.I8:
		return uint8Format, true
	}
	return 0, false
}

// typecastFormat is the DataFormat a typecast_tile template argument names
// for element kind k: Int8 for i8 (whose tiles are declared UInt8), UInt8
// for ui8, Float32 for a float in the 32-bit DST.
func typecastFormat(k ir.ElemKind) string {
	switch k {
	case ir.I8:
		return "Int8"
	case ir.UI8:
		return "UInt8"
	}
	return "Float32"
}

// unsupportedElem says why buffers of element kind k have no tile format.
func unsupportedElem(k ir.ElemKind) string {
	switch k {
	case ir.F8E4M3FN:
		return "f8E4M3FN has no tt-metal data format that matches it: a Wormhole core has no E4M3 format, and " +
			"Blackhole's Fp8_e4m3 is packed from Float16 through the packer gasket (a second rounding of the f32 " +
			"value, where f8E4M3FN rounds once) with no documented saturation to +-448 or E4M3FN NaN encoding"
	case ir.F64:
		return "the Tensix unpacker, FPU and SFPU have no 64-bit float format"
	}
	return "the backend supports f32, bf16, f16, ui8 and i8 buffers (Float32, Float16_b, Float16, UInt8)"
}

// arch is the part of a target the kernels are laid out for.
type arch struct {
	target string
	// gridX, gridY is the compute grid of one chip; work is split over
	// its cores in row-major order.
	gridX, gridY int
	// l1 is the L1 of one core, which holds every circular buffer.
	l1 int64
}

func (a *arch) cores() int { return a.gridX * a.gridY }

// archOf gives the grid of a Tenstorrent target: Blackhole p150 has 120
// Tensix cores in use (target.Cores), laid out 12x10; a Wormhole n300 is
// two chips of 8x8 (64 worker cores each) and a program runs on one chip.
func archOf(t *target.Target) (*arch, error) {
	if t == nil || t.Family != target.Tenstorrent {
		name := "<none>"
		if t != nil {
			name = t.Name
		}
		return nil, fmt.Errorf("--emit=tt generates tt-metal kernels; it needs a Tenstorrent target (--target=blackhole-p150 or --target=wormhole-n300), not '%s'", name)
	}
	a := &arch{target: t.Name, l1: t.ScratchpadBytes}
	switch t.Name {
	case "wormhole-n300":
		a.gridX, a.gridY = 8, 8
	case "blackhole-p150":
		a.gridX, a.gridY = 12, 10
	default:
		// another Tenstorrent part: the widest grid of 10 rows its cores fill
		a.gridY = 10
		a.gridX = max(t.Cores/10, 1)
	}
	return a, nil
}
