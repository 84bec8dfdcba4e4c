package costmodel

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/ir/target"
)

func machine(t *testing.T, name, precision string) Machine {
	t.Helper()
	tg, err := target.Lookup(name)
	require.NoError(t, err)
	m, err := MachineFor(tg, precision)
	require.NoError(t, err)
	return m
}

// The expectations are worked out by hand from the target table.
func TestPlaceByHand(t *testing.T) {
	tests := []struct {
		name         string
		hw, prec     string
		flops, bytes float64
		ridge        float64 // FLOP/B
		intensity    float64
		attainable   float64 // FLOP/s
		bound        Bound
		time         float64 // s
	}{
		{
			// 332e12 / 512e9 = 648.4375; 5e7 / 1e6 = 50 < ridge;
			// 50 * 512e9 = 25.6e12; max(5e7/332e12, 1e6/512e9) = 1.953125e-6
			name: "spec example, blackhole memory bound", hw: "tenstorrent_blackhole",
			flops: 5e7, bytes: 1e6, ridge: 648.4375, intensity: 50, attainable: 25.6e12,
			bound: MemoryBound, time: 1.953125e-6,
		},
		{
			// 989e12 / 3.35e12 = 295.2239; 1e12 / 1e9 = 1000 >= ridge;
			// min(989e12, 1000 * 3.35e12) = 989e12; max(1e12/989e12, 1e9/3.35e12) = 1.011122e-3
			name: "h100 compute bound", hw: "h100",
			flops: 1e12, bytes: 1e9, ridge: 989e12 / 3.35e12, intensity: 1000, attainable: 989e12,
			bound: ComputeBound, time: 1e12 / 989e12,
		},
		{
			// f32 on h100: 67e12 / 3.35e12 = 20 exactly; intensity 20 is at
			// the ridge, which counts as compute bound; both times are 1 us
			name: "at the ridge", hw: "h100", prec: "f32",
			flops: 67e6, bytes: 3.35e6, ridge: 20, intensity: 20, attainable: 67e12,
			bound: ComputeBound, time: 1e-6,
		},
		{
			// the cpu defaults to f32: 100e9 / 20e9 = 5; 2 < 5: 2 * 20e9 = 40e9
			name: "cpu", hw: "cpu",
			flops: 2e9, bytes: 1e9, ridge: 5, intensity: 2, attainable: 40e9,
			bound: MemoryBound, time: 0.05,
		},
		{
			name: "no FLOPs", hw: "m3-max",
			flops: 0, bytes: 409.6e9, ridge: 14.3e12 / 409.6e9, intensity: 0, attainable: 0,
			bound: MemoryBound, time: 1,
		},
		{
			name: "no bytes", hw: "wormhole-n300",
			flops: 131e12, bytes: 0, ridge: 131e12 / 576e9, intensity: math.Inf(1), attainable: 131e12,
			bound: ComputeBound, time: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := machine(t, tc.hw, tc.prec)
			assert.InEpsilon(t, tc.ridge, m.Ridge(), 1e-12)
			p := m.Place(tc.flops, tc.bytes)
			if math.IsInf(tc.intensity, 1) {
				assert.True(t, math.IsInf(p.Intensity, 1), "intensity %v", p.Intensity)
			} else {
				assert.InDelta(t, tc.intensity, p.Intensity, 1e-9*math.Max(1, tc.intensity))
			}
			assert.InDelta(t, tc.attainable, p.Attainable, 1e-9*math.Max(1, tc.attainable))
			assert.Equal(t, tc.bound, p.Bound)
			assert.InEpsilon(t, tc.time, p.Time, 1e-12)
		})
	}
}

func TestMachineFor(t *testing.T) {
	assert.Equal(t, "f32", machine(t, "cpu", "").Precision)
	for _, name := range []string{"h100", "h200", "m3-max", "wormhole-n300", "blackhole-p150"} {
		assert.Equal(t, "bf16", machine(t, name, "").Precision, name)
	}
	m := machine(t, "h200", "f8")
	assert.Equal(t, 1979e12, m.PeakFLOPS)
	assert.Equal(t, 4.8e12, m.Bandwidth)

	tg, err := target.Lookup("m3-max")
	require.NoError(t, err)
	_, err = MachineFor(tg, "f8")
	require.Error(t, err)
	assert.Equal(t, "target 'm3-max' has no peak compute figure for precision 'f8' (known: bf16, f16, f32)", err.Error())
}

func TestWriteRoofline(t *testing.T) {
	m := machine(t, "blackhole-p150", "")
	var sb strings.Builder
	WriteRoofline(&sb, m, m.Place(5e7, 1e6))
	assert.Equal(t, `machine               blackhole-p150 (Tenstorrent Blackhole p150)
precision             bf16
peak compute          332.000 TFLOP/s
DRAM bandwidth        512.0 GB/s
ridge point           648.438 FLOP/B
work                  50000000 FLOP
DRAM traffic          1000000 B
arithmetic intensity  50.000 FLOP/B
attainable            25.600 TFLOP/s
bound                 memory (intensity below the ridge point)
minimal time          1.953 us
figures from          docs.tenstorrent.com Blackhole specifications; tt-metal dev_mem_map.h
`, sb.String())
}

func TestFormats(t *testing.T) {
	assert.Equal(t, "3350.0 GB/s", FormatBandwidth(3.35e12))
	assert.Equal(t, "409.6 GB/s", FormatBandwidth(409.6e9))
	assert.Equal(t, "989.000 TFLOP/s", FormatCompute(989e12))
	assert.Equal(t, "0.100 TFLOP/s", FormatCompute(100e9))
	assert.Equal(t, "inf FLOP/B", FormatIntensity(math.Inf(1)))
	assert.Equal(t, "0.250 FLOP/B", FormatIntensity(0.25))
	assert.Equal(t, "1.953 us", FormatTime(1.953125e-6))
	assert.Equal(t, "50000000", FormatCount(5e7))
	assert.Equal(t, "2.500", FormatCount(2.5))
	assert.Equal(t, "h100 (NVIDIA H100 SXM5), bf16: peak 989.000 TFLOP/s, DRAM 3350.0 GB/s, ridge 295.224 FLOP/B",
		MachineLine(machine(t, "h100", "")))
}
