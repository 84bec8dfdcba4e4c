package main

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/ir"
)

// pipelineO2 is what -O2 runs once fusion and lowering are in it; the
// tests name it so that their figures do not move with the default.
const pipelineO2 = "canonicalize,cse,legalize-numerics,decompose,fuse,canonicalize,cse,dce,lower-to-loops,sram-alloc"

// totals reads the `total` rows of the before and after tables.
func totals(t *testing.T, out string) (before, after int64) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^total: (\d+) B before fusion, (\d+) B after`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	before, _ = strconv.ParseInt(m[1], 10, 64)
	after, _ = strconv.ParseInt(m[2], 10, 64)
	return before, after
}

func TestMemoryTrafficLlamaChain(t *testing.T) {
	for _, size := range []struct{ seq, dim int64 }{{4096, 8192}, {1, 4096}, {16384, 5120}} {
		S, D := size.seq, size.dim
		t.Run(fmt.Sprintf("%dx%d", S, D), func(t *testing.T) {
			status, out, errOut := runTFC(t, nil, "", "memory-traffic", "--seq", fmt.Sprint(S), "--dim", fmt.Sprint(D),
				"--target", "h200", "--pass-pipeline="+pipelineO2)
			require.Equal(t, exitOK, status, errOut)
			assert.Empty(t, errOut)
			before, after := totals(t, out)
			// fused: one read of x, w and z and one write of y, in bf16
			assert.Equal(t, 3*S*D*2+D*2, after)
			assert.Contains(t, out, fmt.Sprintf("ideal: one read of x, w and z and one write of y = %d B\n", 3*S*D*2+D*2))
			assert.Contains(t, out, "\nafter fusion: 1 kernel, pipeline '"+pipelineO2+"'\n")
			// op by op: the decomposed rmsnorm (12 kernels in all), each
			// through DRAM; the figure is worked out in the cost model's tests
			assert.Contains(t, out, "\nbefore fusion: 12 kernels, pipeline 'canonicalize,cse,legalize-numerics,decompose,canonicalize,cse,dce,lower-to-loops{horizontal=false},sram-alloc'\n")
			assert.Equal(t, 50*S*D+32*S+10*D, before)
		})
	}
}

func TestMemoryTrafficLlamaChainTable(t *testing.T) {
	status, out, errOut := runTFC(t, nil, "", "memory-traffic", "--seq=4096", "--dim=8192", "--pass-pipeline="+pipelineO2)
	require.Equal(t, exitOK, status, errOut)
	assert.Equal(t, `DRAM traffic of y = silu(rmsnorm(x, w)) * z on cpu, x and z: 4096x8192xbf16, w: 8192xbf16

before fusion: 12 kernels, pipeline 'canonicalize,cse,legalize-numerics,decompose,canonicalize,cse,dce,lower-to-loops{horizontal=false},sram-alloc'
kernel            kind             read B  written B     total B  ops
rms_silu_mul_k0   elementwise    67108864  134217728   201326592  cast
rms_silu_mul_k1   elementwise   134217728  134217728   268435456  mul
rms_silu_mul_k2   row one-pass  134217728      16384   134234112  reduce_sum
rms_silu_mul_k3   elementwise       16384      16384       32768  div
rms_silu_mul_k4   elementwise       16384      16384       32768  add
rms_silu_mul_k5   elementwise       16384      16384       32768  rsqrt
rms_silu_mul_k6   elementwise   134234112  134217728   268451840  mul
rms_silu_mul_k7   elementwise       16384      32768       49152  cast
rms_silu_mul_k8   elementwise   134250496  134217728   268468224  mul
rms_silu_mul_k9   elementwise   134217728   67108864   201326592  cast
rms_silu_mul_k10  elementwise    67108864   67108864   134217728  silu
rms_silu_mul_k11  elementwise   134217728   67108864   201326592  mul
total                           939638784  738295808  1677934592

after fusion: 1 kernel, pipeline 'canonicalize,cse,legalize-numerics,decompose,fuse,canonicalize,cse,dce,lower-to-loops,sram-alloc'
kernel           kind           read B  written B    total B  ops
rms_silu_mul_k0  row cached  134234112   67108864  201342976  cast, mul, reduce_sum, div, add, rsqrt, mul, cast, mul, cast, silu, mul
total                        134234112   67108864  201342976

total: 1677934592 B before fusion, 201342976 B after, before / after = 8.334
ideal: one read of x, w and z and one write of y = 201342976 B
`, out)
}

// The default pipeline is -O2, which fuses the chain into one kernel that
// moves the ideal bytes (counted on the graph IR until -O2 lowers, on the
// loop IR after).
func TestMemoryTrafficDefaultPipeline(t *testing.T) {
	status, out, errOut := runTFC(t, nil, "", "memory-traffic", "--seq", "512", "--dim", "4096")
	require.Equal(t, exitOK, status, errOut)
	o2, ok := lookupOptLevel("O2")
	require.True(t, ok)
	assert.Contains(t, out, "\nafter fusion: ")
	assert.Contains(t, out, "pipeline '"+o2.pipeline+"'\n")
	if !strings.Contains(o2.pipeline, "fuse") {
		t.Skipf("-O2 (%s) does not fuse yet", o2.pipeline)
	}
	_, after := totals(t, out)
	assert.Equal(t, int64(3*512*4096*2+4096*2), after)
}

func TestMemoryTrafficDtype(t *testing.T) {
	S, D := int64(128), int64(1024)
	for dtype, size := range map[string]int64{"f32": 4, "f16": 2, "bf16": 2} {
		status, out, errOut := runTFC(t, nil, "", "memory-traffic", "--seq", fmt.Sprint(S), "--dim", fmt.Sprint(D), "--dtype", dtype, "--pass-pipeline="+pipelineO2)
		require.Equal(t, exitOK, status, errOut)
		_, after := totals(t, out)
		assert.Equal(t, (3*S*D+D)*size, after, dtype)
		assert.Contains(t, out, fmt.Sprintf("x and z: %dx%dx%s, w: %dx%s\n", S, D, dtype, D, dtype))
	}
}

func TestMemoryTrafficTwoPass(t *testing.T) {
	// a 16384-long f32 row is 64 KiB, more than the 32 KiB of Metal
	// threadgroup memory: the fused kernel reads x again
	S, D := int64(64), int64(16384)
	status, out, errOut := runTFC(t, nil, "", "memory-traffic", "--seq", fmt.Sprint(S), "--dim", fmt.Sprint(D), "--target", "m3-max", "--pass-pipeline="+pipelineO2)
	require.Equal(t, exitOK, status, errOut)
	_, after := totals(t, out)
	assert.Equal(t, 4*S*D*2+D*2, after)
	assert.Contains(t, out, "rms_silu_mul_k0  row two-pass")
}

func TestMemoryTrafficFile(t *testing.T) {
	src := `func.func @f(%x: tensor<?x256xf32>) -> tensor<?x256xf32> {
  %e = graph.exp %x : tensor<?x256xf32>
  %y = graph.add %e, %x : tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}
`
	status, out, errOut := runTFC(t, nil, src, "memory-traffic", "-", "--dynamic-extent", "1000", "--pass-pipeline=fuse,lower-to-loops")
	require.Equal(t, exitOK, status, errOut)
	assert.Equal(t, `DRAM traffic of <stdin> on cpu
every '?' extent is taken as 1000 (--dynamic-extent=N)

before fusion: 2 kernels, pipeline 'decompose,lower-to-loops{horizontal=false}'
kernel  kind          read B  written B  total B  ops
f_k0    elementwise  1024000    1024000  2048000  exp
f_k1    elementwise  2048000    1024000  3072000  add
total                3072000    2048000  5120000

after fusion: 1 kernel, pipeline 'fuse,lower-to-loops'
kernel  kind          read B  written B  total B  ops
f_k0    elementwise  1024000    1024000  2048000  exp, add
total                1024000    1024000  2048000

total: 5120000 B before fusion, 2048000 B after, before / after = 2.500
`, out)

	// a pipeline without fuse: before and after are the same program
	status, out, errOut = runTFC(t, nil, src, "memory-traffic", "-", "--pass-pipeline=decompose,lower-to-loops")
	require.Equal(t, exitOK, status, errOut)
	before, after := totals(t, out)
	assert.Equal(t, before, after)
	assert.Contains(t, out, "every '?' extent is taken as 1 (--dynamic-extent=N)\n")
}

// Without lower-to-loops in the pipeline the traffic is read off the graph
// IR: each graph.fused and each op left alone is one kernel.
func TestMemoryTrafficGraphLevel(t *testing.T) {
	status, out, errOut := runTFC(t, nil, "", "memory-traffic", "--seq", "4096", "--dim", "8192", "--fuse")
	require.Equal(t, exitOK, status, errOut)
	before, after := totals(t, out)
	assert.Equal(t, int64(201342976), after)
	assert.Equal(t, int64(1677934592), before, "the same kernels as lowering makes")
}

func TestMemoryTrafficErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no dim", []string{"--seq", "8"}, "error: the Llama chain needs both --seq S and --dim D\n"},
		{"zero rows", []string{"--seq", "0", "--dim", "8"}, "error: --seq takes a positive integer, not '0'\n"},
		{"negative dim", []string{"--seq", "8", "--dim=-8"}, "error: --dim takes a positive integer, not '-8'\n"},
		{"integer dtype", []string{"--seq", "8", "--dim", "8", "--dtype", "i32"}, "error: --dtype takes a floating-point element type (f64, f32, f16, bf16, f8E4M3FN, f8E5M2), not 'i32'\n"},
		{"too large", []string{"--seq", "4611686018427387904", "--dim", "4611686018427387904"}, "is too large to count its bytes\n"},
		{"both forms", []string{"x.tir", "--seq", "8", "--dim", "8"}, "error: `tfc memory-traffic` takes FILE.tir or --seq and --dim, not both\n"},
		{"neither", nil, "error: `tfc memory-traffic` needs FILE.tir ('-' for standard input), or --seq S and --dim D for the Llama chain\n"},
		{"two files", []string{"a.tir", "b.tir"}, "error: `tfc memory-traffic` takes one file, got 2: 'a.tir', 'b.tir'\n"},
		{"unknown target", []string{"--seq", "8", "--dim", "8", "--target", "tpu"}, "error: unknown target 'tpu'"},
		{"split input", []string{"--split-input-file", "x.tir"}, "error: --split-input-file has no meaning for `tfc memory-traffic`\n"},
		{"bad extent", []string{"x.tir", "--dynamic-extent", "many"}, "error: --dynamic-extent takes a positive integer, not 'many'\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, out, errOut := runTFC(t, nil, "", append([]string{"memory-traffic"}, tc.args...)...)
			assert.Equal(t, exitFailure, status)
			assert.Empty(t, out)
			assert.Contains(t, errOut, tc.want)
		})
	}

	status, _, errOut := runTFC(t, nil, "func.func @f(%x: tensor<4xf32>) {\n  %y = graph.nope %x : tensor<4xf32>\n  return\n}\n", "memory-traffic", "-")
	assert.Equal(t, exitFailure, status)
	assert.Contains(t, errOut, "<stdin>:2:")
}

func TestLlamaChainSourceParses(t *testing.T) {
	c, d := parseLlamaChain(trafficOptions{seq: "3", dim: "5", dtype: "f16"})
	require.Nil(t, d)
	m, err := c.parse()
	require.NoError(t, err)
	require.NoError(t, ir.Verify(m.Operation))
	assert.Equal(t, int64((3*3*5+5)*2), c.idealBytes())
	f, ok := m.Lookup("rms_silu_mul")
	require.True(t, ok)
	assert.Equal(t, "(tensor<3x5xf16>, tensor<5xf16>, tensor<3x5xf16>) -> tensor<3x5xf16>", f.Type().String())
}

func TestMemoryTrafficReportFile(t *testing.T) {
	path := t.TempDir() + "/traffic.txt"
	status, out, errOut := runTFC(t, nil, "", "memory-traffic", "--seq", "2", "--dim", "64", "-o", path)
	require.Equal(t, exitOK, status, errOut)
	assert.Empty(t, out)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(data), "DRAM traffic of y = silu(rmsnorm(x, w)) * z on cpu"), string(data))
}

func TestWithoutFusion(t *testing.T) {
	for in, want := range map[string]string{
		"canonicalize,fuse,lower-to-loops":                    "canonicalize,decompose,lower-to-loops{horizontal=false}",
		"legalize-numerics,decompose,fuse,cse,lower-to-loops": "legalize-numerics,decompose,cse,lower-to-loops{horizontal=false}",
		"fuse,lower-to-loops{exact-rounding=true}":            "decompose,lower-to-loops{exact-rounding=true horizontal=false}",
		"fuse,lower-to-loops{horizontal=true}":                "decompose,lower-to-loops{horizontal=true}",
		"fuse{max-ops=8},fuse":                                "decompose",
		"cse":                                                 "cse",
	} {
		p, err := ir.ParsePipeline(in)
		require.NoError(t, err)
		assert.Equal(t, want, withoutFusion(p).String(), in)
	}
}

// "Before fusion" is what -O0 runs: every primitive op a kernel of its own,
// a composite rmsnorm as the primitives decompose makes of it.
func TestBeforeFusionIsWhatO0Runs(t *testing.T) {
	o0, ok := lookupOptLevel("O0")
	require.True(t, ok)
	if !strings.Contains(o0.pipeline, "lower-to-loops") {
		t.Skipf("-O0 (%s) does not lower yet", o0.pipeline)
	}
	status, out, errOut := runTFC(t, nil, "", "memory-traffic", "--seq", "64", "--dim", "1024", "--pass-pipeline="+pipelineO2)
	require.Equal(t, exitOK, status, errOut)
	before, _ := totals(t, out)
	status, out, errOut = runTFC(t, nil, "", "memory-traffic", "--seq", "64", "--dim", "1024", "-O0")
	require.Equal(t, exitOK, status, errOut)
	o0Before, o0After := totals(t, out)
	assert.Equal(t, o0Before, o0After, "-O0 does not fuse")
	assert.Equal(t, before, o0After)
	assert.Contains(t, out, "before fusion: 12 kernels")
}

// A program given as loop IR has its traffic, but no FLOP count.
func TestCostOfLoopIR(t *testing.T) {
	src := "func.func @f(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {\n" +
		"  %y = graph.exp %x : tensor<8x64xf32>\n  return %y : tensor<8x64xf32>\n}\n"
	status, lowered, errOut := runTFC(t, nil, src, "--pass-pipeline=fuse,lower-to-loops", "-")
	require.Equal(t, exitOK, status, errOut)
	require.Contains(t, lowered, "loop.launch")

	status, out, errOut := runTFC(t, nil, lowered, "memory-traffic", "-", "--pass-pipeline=cse")
	require.Equal(t, exitOK, status, errOut)
	assert.Contains(t, out, "f_k0    elementwise    2048       2048     4096  -\n")

	status, out, errOut = runTFC(t, nil, lowered, "roofline", "-", "--pass-pipeline=cse")
	assert.Equal(t, exitFailure, status)
	assert.Empty(t, out)
	assert.Equal(t, "<stdin>:1:1: error: the kernels of a program given as loop IR have no FLOP count: give its graph-level form\nmodule {\n^\n", errOut)
}
