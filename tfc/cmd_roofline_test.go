package main

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRooflineOneKernel(t *testing.T) {
	status, out, errOut := runTFC(t, nil, "", "roofline", "--hw", "tenstorrent_blackhole", "--flops", "50000000", "--bytes", "1000000")
	require.Equal(t, exitOK, status, errOut)
	assert.Empty(t, errOut)
	// 332e12 / 512e9 = 648.4375; 50 * 512 GB/s = 25.6 TFLOP/s; 1e6 B / 512e9 B/s = 1.953 us
	for _, line := range []string{
		"machine               blackhole-p150 (Tenstorrent Blackhole p150)\n",
		"precision             bf16\n",
		"peak compute          332.000 TFLOP/s\n",
		"DRAM bandwidth        512.0 GB/s\n",
		"ridge point           648.438 FLOP/B\n",
		"arithmetic intensity  50.000 FLOP/B\n",
		"attainable            25.600 TFLOP/s\n",
		"bound                 memory (intensity below the ridge point)\n",
		"minimal time          1.953 us\n",
	} {
		assert.Contains(t, out, line)
	}
}

func TestRooflineOneKernelVariants(t *testing.T) {
	tests := []struct {
		name string
		args []string
		has  []string
	}{
		{"cpu defaults to f32", []string{"--hw=cpu", "--flops=1e9", "--bytes=1e9"},
			[]string{"precision             f32\n", "ridge point           5.000 FLOP/B\n", "attainable            0.020 TFLOP/s\n", "minimal time          50000.000 us\n"}},
		{"compute bound", []string{"--hw", "h100_sxm", "--flops", "1e12", "--bytes", "1e9"},
			[]string{"machine               h100 (NVIDIA H100 SXM5)\n", "bound                 compute (intensity at or above the ridge point)\n", "minimal time          1011.122 us\n"}},
		{"precision", []string{"--hw", "h200", "--precision", "f8", "--flops", "1", "--bytes", "1"},
			[]string{"peak compute          1979.000 TFLOP/s\n", "DRAM bandwidth        4800.0 GB/s\n"}},
		{"measured figures", []string{"--hw", "cpu", "--bw", "40e9", "--peak", "1e12", "--flops", "25", "--bytes", "1"},
			[]string{"ridge point           25.000 FLOP/B\n", "bound                 compute", "figures from          --bw and --peak\n"}},
		{"--target names the machine too", []string{"--target", "m3_max", "--flops", "0", "--bytes", "409600"},
			[]string{"machine               m3-max", "arithmetic intensity  0.000 FLOP/B\n", "minimal time          1.000 us\n"}},
		{"no bytes", []string{"--hw", "wormhole-n300", "--flops", "131e6", "--bytes", "0"},
			[]string{"arithmetic intensity  inf FLOP/B\n", "minimal time          1.000 us\n"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, out, errOut := runTFC(t, nil, "", append([]string{"roofline"}, tc.args...)...)
			require.Equal(t, exitOK, status, errOut)
			for _, h := range tc.has {
				assert.Contains(t, out, h)
			}
		})
	}
}

func TestRooflineErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown machine", []string{"--hw", "tpu", "--flops", "1", "--bytes", "1"},
			"error: unknown target 'tpu' (known: cpu, h100, h200, m3-max, wormhole-n300, blackhole-p150)\n"},
		{"no machine", []string{"--flops", "1", "--bytes", "1"}, "error: `tfc roofline --flops F --bytes B` needs --hw NAME (see `tfc targets`)\n"},
		{"no bytes", []string{"--hw", "h100", "--flops", "1"}, "error: `tfc roofline` needs both --flops F and --bytes B\n"},
		{"nothing", []string{"--hw", "h100"}, "error: `tfc roofline` needs --hw NAME --flops F --bytes B, or FILE.tir ('-' for standard input)\n"},
		{"negative FLOPs", []string{"--hw", "h100", "--flops", "-5", "--bytes", "1"}, "error: --flops must not be negative, got -5\n"},
		{"negative bytes", []string{"--hw", "h100", "--flops", "5", "--bytes=-1e3"}, "error: --bytes must not be negative, got -1e3\n"},
		{"not a number", []string{"--hw", "h100", "--flops", "lots", "--bytes", "1"}, "error: --flops takes a number, not 'lots'\n"},
		{"infinite", []string{"--hw", "h100", "--flops", "inf", "--bytes", "1"}, "error: --flops takes a number, not 'inf'\n"},
		{"zero bandwidth", []string{"--hw", "h100", "--bw", "0", "--flops", "1", "--bytes", "1"}, "error: --bw must be above zero, got 0\n"},
		{"unknown precision", []string{"--hw", "m3-max", "--precision", "f8", "--flops", "1", "--bytes", "1"},
			"error: target 'm3-max' has no peak compute figure for precision 'f8' (known: bf16, f16, f32)\n"},
		{"two machines", []string{"--hw", "h100", "--target", "h200", "--flops", "1", "--bytes", "1"}, "error: --hw h100 and --target h200 name different machines\n"},
		{"both forms", []string{"x.tir", "--flops", "1", "--bytes", "1", "--hw", "h100"},
			"error: --flops and --bytes describe one kernel; with FILE.tir the kernels come from the program\n"},
		{"plot format", []string{"--hw", "h100", "--flops", "1", "--bytes", "1", "--plot", "r.pdf"}, "error: --plot writes .svg or .png files, not 'r.pdf'\n"},
		{"emit", []string{"--emit=ptx", "--hw", "h100", "--flops", "1", "--bytes", "1"}, "error: --emit has no meaning for `tfc roofline`, which prints a report\n"},
		{"missing file", []string{filepath.Join(t.TempDir(), "none.tir")}, "no such file"},
		{"unknown flag", []string{"--flop", "1"}, "error: unknown flag '--flop'; did you mean '--flops'?"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, out, errOut := runTFC(t, nil, "", append([]string{"roofline"}, tc.args...)...)
			assert.Equal(t, exitFailure, status)
			assert.Empty(t, out)
			assert.Contains(t, errOut, tc.want)
			assert.NotContains(t, errOut, "goroutine")
		})
	}
}

const expAdd = `func.func @f(%x: tensor<1024x256xf32>) -> tensor<1024x256xf32> {
  %e = graph.exp %x : tensor<1024x256xf32>
  %y = graph.add %e, %x : tensor<1024x256xf32>
  %m = graph.reduce_max %y {axes = [-1], keepdim = true} : (tensor<1024x256xf32>) -> tensor<1024x1xf32>
  %s = graph.sub %y, %m : (tensor<1024x256xf32>, tensor<1024x1xf32>) -> tensor<1024x256xf32>
  return %s : tensor<1024x256xf32>
}
`

func TestRooflineProgram(t *testing.T) {
	dir := t.TempDir()
	svg, pngPath := filepath.Join(dir, "r.svg"), filepath.Join(dir, "r.png")
	args := []string{"roofline", "-", "--target", "h100", "--pass-pipeline=fuse,lower-to-loops", "--plot", svg}
	status, out, errOut := runTFC(t, nil, expAdd, args...)
	require.Equal(t, exitOK, status, errOut)
	// one row kernel: exp, add (N each), reduce_max (N), sub (N) = 4N FLOPs
	// with N = 262144; reads x and writes s: 2 * 4 * N bytes
	assert.Equal(t, `roofline of <stdin> on h100 (NVIDIA H100 SXM5), bf16: peak 989.000 TFLOP/s, DRAM 3350.0 GB/s, ridge 295.224 FLOP/B

kernel  kind             FLOP   DRAM B  FLOP/B  TFLOP/s  bound   time us  ops
f_k0    row one-pass  1048576  2097152   0.500    1.675  memory    0.626  exp, add, reduce_max, sub
total                 1048576  2097152   0.500                     0.626
`, out)
	data, err := os.ReadFile(svg)
	require.NoError(t, err)
	assert.Contains(t, string(data), "f_k0")
	assert.Contains(t, string(data), "Roofline of h100 (NVIDIA H100 SXM5), bf16")

	args[len(args)-1] = pngPath
	status, out2, errOut := runTFC(t, nil, expAdd, args...)
	require.Equal(t, exitOK, status, errOut)
	assert.Equal(t, out, out2)
	data, err = os.ReadFile(pngPath)
	require.NoError(t, err)
	_, err = png.Decode(bytes.NewReader(data))
	require.NoError(t, err)
}

func TestRooflineProgramUnfused(t *testing.T) {
	status, out, errOut := runTFC(t, nil, expAdd, "roofline", "-", "--target=cpu", "--pass-pipeline=decompose,lower-to-loops", "-o", filepath.Join(t.TempDir(), "unused"))
	require.Equal(t, exitOK, status, errOut)
	assert.Empty(t, out, "-o takes the report")

	report := filepath.Join(t.TempDir(), "report.txt")
	status, _, errOut = runTFC(t, nil, expAdd, "roofline", "-", "--pass-pipeline=decompose,lower-to-loops", "-o", report)
	require.Equal(t, exitOK, status, errOut)
	data, err := os.ReadFile(report)
	require.NoError(t, err)
	text := string(data)
	assert.Contains(t, text, "on cpu (the host CPU (figures measured at start-up or set by flag)), f32: peak 0.100 TFLOP/s, DRAM 20.0 GB/s, ridge 5.000 FLOP/B")
	for _, k := range []string{"f_k0", "f_k1", "f_k2", "f_k3"} {
		assert.Contains(t, text, "\n"+k+" ")
	}
	// every op alone reads and writes through DRAM: 4 + 4 + 4 + 4 bytes per
	// element of x, and a few per row
	assert.Contains(t, text, "total ")
}

func TestRooflineProgramPlotsSkipZeroWork(t *testing.T) {
	// a transpose returned as it is: a kernel of its own, which computes
	// nothing
	src := `func.func @t(%x: tensor<64x32xf32>) -> (tensor<32x64xf32>, tensor<64x32xf32>) {
  %t = graph.transpose %x {perm = [1, 0]} : (tensor<64x32xf32>) -> tensor<32x64xf32>
  %e = graph.exp %x : tensor<64x32xf32>
  return %t, %e : tensor<32x64xf32>, tensor<64x32xf32>
}
`
	plot := filepath.Join(t.TempDir(), "t.svg")
	status, out, errOut := runTFC(t, nil, src, "roofline", "-", "--pass-pipeline=fuse,lower-to-loops", "--plot", plot)
	require.Equal(t, exitOK, status, errOut)
	assert.Contains(t, out, "not plotted (no FLOPs or no bytes, which log axes cannot show): t_k0\n")
	data, err := os.ReadFile(plot)
	require.NoError(t, err)
	assert.Contains(t, string(data), "t_k1")
	assert.False(t, strings.Contains(string(data), "t_k0"))
}

func TestRooflineProgramErrors(t *testing.T) {
	status, out, errOut := runTFC(t, nil, "func.func @f(", "roofline", "-")
	assert.Equal(t, exitFailure, status)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "<stdin>:1:")

	status, _, errOut = runTFC(t, nil, expAdd, "roofline", "-", "--dynamic-extent", "0")
	assert.Equal(t, exitFailure, status)
	assert.Equal(t, "error: --dynamic-extent takes a positive integer, not '0'\n", errOut)

	status, _, errOut = runTFC(t, nil, expAdd, "roofline", "-", "--plot", filepath.Join(t.TempDir(), "no", "dir", "r.svg"))
	assert.Equal(t, exitFailure, status)
	assert.Contains(t, errOut, "error: cannot write")
	assert.Contains(t, errOut, "no such directory")
}
