package costmodel

import (
	"bytes"
	"image/png"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteTraffic(t *testing.T) {
	ks, err := LoopKernels(compile(t, llamaChain(4096, 8192), "fuse,lower-to-loops", "h100"), Options{})
	require.NoError(t, err)
	var sb strings.Builder
	WriteTraffic(&sb, ks)
	assert.Equal(t, `kernel           kind             read B  written B    total B  ops
rms_silu_mul_k0  row one-pass  134234112   67108864  201342976  -
total                          134234112   67108864  201342976
`, sb.String())
}

func TestWriteKernelRoofline(t *testing.T) {
	ks := []Kernel{
		{Name: "f_k0", Kind: "elementwise", Ops: []string{"exp", "add"},
			Reads: []Access{{Bytes: 1000, Passes: 1}}, Writes: []Access{{Bytes: 1000, Passes: 1}}, FLOPs: 500, HasFLOPs: true},
		{Name: "f_k1", Kind: "generic", Ops: []string{"matmul"},
			Reads: []Access{{Bytes: 2e6, Passes: 1}}, Writes: []Access{{Bytes: 1e6, Passes: 1}}, FLOPs: 2e12, HasFLOPs: true},
	}
	var sb strings.Builder
	WriteKernelRoofline(&sb, machine(t, "h100", ""), ks)
	// f_k0: 500 / 2000 = 0.25 FLOP/B, 0.25 * 3.35e12 = 0.8375 TFLOP/s,
	// 2000 B / 3.35e12 B/s = 0.000597 us; f_k1: 2e12 / 3e6, compute bound,
	// 2e12 / 989e12 s = 2022.245 us; in all
	// 2000000000500 / 3002000 = 666222.518 FLOP/B
	assert.Equal(t, `kernel  kind                  FLOP   DRAM B      FLOP/B  TFLOP/s  bound     time us  ops
f_k0    elementwise            500     2000       0.250    0.838  memory      0.001  exp, add
f_k1    generic      2000000000000  3000000  666666.667  989.000  compute  2022.245  matmul
total                2000000000500  3002000  666222.518                    2022.245
`, sb.String())
}

func TestKernelPointsSkipsWhatLogAxesCannotShow(t *testing.T) {
	ks := []Kernel{
		{Name: "copy", Reads: []Access{{Bytes: 8, Passes: 1}}, Writes: []Access{{Bytes: 8, Passes: 1}}, HasFLOPs: true},
		{Name: "work", Reads: []Access{{Bytes: 8, Passes: 1}}, FLOPs: 16, HasFLOPs: true},
		{Name: "nothing to move", FLOPs: 16, HasFLOPs: true},
	}
	pts, skipped := KernelPoints(machine(t, "cpu", ""), ks)
	require.Len(t, pts, 1)
	assert.Equal(t, "work", pts[0].Label)
	assert.Equal(t, 2.0, pts[0].Point.Intensity)
	assert.Equal(t, []string{"copy", "nothing to move"}, skipped)
}

func TestGroupPoints(t *testing.T) {
	m := machine(t, "h100", "")
	pts := []PlotPoint{
		{"a", m.Place(10, 10)}, {"b", m.Place(1000, 10)}, {"c", m.Place(10.2, 10)},
		{"d", m.Place(10.1, 10)}, {"e", m.Place(10.3, 10)},
	}
	gs := groupPoints(pts)
	require.Len(t, gs, 2)
	assert.Equal(t, "a, c and 2 more", gs[0].label(), "labels in the order of the kernels")
	assert.Equal(t, []string{"a", "c", "d", "e"}, gs[0].labels)
	assert.Equal(t, "b", gs[1].label())
	assert.Equal(t, 100.0, gs[1].x)
}

func TestWritePlot(t *testing.T) {
	m := machine(t, "blackhole-p150", "")
	pts := []PlotPoint{{"rms_silu_mul_k0", m.Place(2e8, 2e8)}, {"mm_k0", m.Place(1e13, 1e9)}}
	draw := func(format string) []byte {
		var buf bytes.Buffer
		require.NoError(t, WritePlot(&buf, m, "Roofline of blackhole-p150", pts, format))
		return buf.Bytes()
	}
	svg := draw("svg")
	assert.Equal(t, svg, draw("svg"), "the same input draws the same SVG")
	text := string(svg)
	assert.True(t, strings.HasPrefix(text, "<?xml"), text[:40])
	for _, want := range []string{"Roofline of blackhole-p150", "rms_silu_mul_k0", "mm_k0", "ridge 648.438 FLOP/B",
		"memory roof, 512.0 GB/s", "compute roof, 332.000 TFLOP/s (bf16)", "arithmetic intensity (FLOP/B)", "attainable throughput (TFLOP/s)"} {
		assert.Contains(t, text, want)
	}
	img, err := png.Decode(bytes.NewReader(draw("png")))
	require.NoError(t, err)
	assert.Greater(t, img.Bounds().Dx(), 600)

	err = WritePlot(&bytes.Buffer{}, m, "", pts, "pdf")
	require.Error(t, err)
	assert.Equal(t, "cannot draw a plot as 'pdf' (formats: svg, png)", err.Error())
}

func TestDecadeTicks(t *testing.T) {
	var labels []string
	minor := 0
	for _, tk := range (decadeTicks{}).Ticks(-2, 1) {
		if tk.Label == "" {
			minor++
			continue
		}
		labels = append(labels, tk.Label)
		assert.Equal(t, math.Round(tk.Value), tk.Value)
	}
	assert.Equal(t, []string{"0.01", "0.1", "1", "10"}, labels)
	assert.Equal(t, 3*8, minor)
}
