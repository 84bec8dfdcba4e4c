package metal_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/emit/metal"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
)

// o2 is the default pipeline down to loops.
const o2 = "canonicalize,cse,legalize-numerics,decompose,fuse,canonicalize,cse,dce,lower-to-loops,sram-alloc"

// emitText compiles src at -O2 for m3-max and emits it.
func emitText(t *testing.T, name, src string) *metal.Program {
	t.Helper()
	m, err := compileFor(name, src, o2)
	require.NoError(t, err)
	prog, err := metal.Emit(m, metal.Options{Source: name})
	require.NoError(t, err)
	return prog
}

func readExample(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile("../../examples/" + name)
	require.NoError(t, err)
	return string(data)
}

// The flagship kernel at its real size: a row of 8192 bf16 kept as f32
// in all 32 KB of threadgroup memory, so one simdgroup combines, the
// rows read and written as bfloat4.
func TestRMSNormSiLUMulKernel(t *testing.T) {
	prog := emitText(t, "rms_silu_mul.tir", readExample(t, "rms_silu_mul.tir"))
	text := prog.Metal()
	for _, want := range []string{
		"#include <metal_stdlib>\nusing namespace metal;\n",
		"[[kernel]] void rms_silu_mul_k0(\n",
		"    const device bfloat* x [[buffer(0)]],\n",
		"    const device bfloat* w [[buffer(1)]],\n",
		"    device bfloat* y [[buffer(3)]],\n",
		"    uint gid [[threadgroup_position_in_grid]],\n",
		"    uint lid [[thread_position_in_threadgroup]],\n",
		"    uint simd_lane [[thread_index_in_simdgroup]],\n",
		"    uint simd_id [[simdgroup_index_in_threadgroup]],\n",
		"    uint tg_size [[threads_per_threadgroup]]) {\n",
		"  threadgroup float sram[8192];\n",
		"const bfloat4 q = *(const device bfloat4*)(x + at + l);",
		"= simd_sum(",
		"metal::precise::rsqrt(",
		"threadgroup_barrier(mem_flags::mem_threadgroup);",
		"static inline float tf_silu(float x)",
		"*(device bfloat4*)(y + at",
	} {
		assert.Contains(t, text, want)
	}
	// no room for partial[]: one simdgroup works
	assert.NotContains(t, text, "threadgroup float partial")
	assert.Contains(t, text, "const uint nthr = metal::min(tg_size, 32u);")

	require.Len(t, prog.Kernels, 1)
	k := prog.Kernels[0]
	assert.Equal(t, "simdgroup", k.Reduction)
	assert.Equal(t, int64(32768), k.ThreadgroupMemoryBytes)
	require.Len(t, prog.Functions, 1)
	l := prog.Functions[0].Launches[0]
	assert.Equal(t, "4096", l.Threadgroups)
	assert.Equal(t, "32", l.ThreadsPerThreadgroup)
}

// A row that leaves room for partial[]: threadgroup mode, 512 threads
// (4096 / 8 iterations), partial[] exchanged between the two reductions
// of softmax with a barrier before it is reused.
func TestSoftmaxKernel(t *testing.T) {
	prog := emitText(t, "attention_softmax.tir", readExample(t, "attention_softmax.tir"))
	text := prog.Metal()
	for _, want := range []string{
		"  threadgroup float partial[32];\n",
		"  threadgroup float sram[4096];\n",
		"    constant uint& scores_d0 [[buffer(2)]],\n",
		"= tf_simd_max(",
		"= simd_sum(",
		"if (simd_lane == 0) {",
		"// every thread has read partial[] of the previous reduction",
		"for (uint sg = 1; sg < (tg_size + 31) / 32; ++sg)",
		"static inline float tf_simd_max(float v)",
	} {
		assert.Contains(t, text, want)
	}
	k := prog.Kernels[0]
	assert.Equal(t, "threadgroup", k.Reduction)
	assert.Equal(t, int64(16384+128), k.ThreadgroupMemoryBytes)
	fl := prog.Functions[0]
	assert.Equal(t, []metal.Extent{{Name: "scores_d0", Argument: "scores", Axis: 0}}, fl.Extents)
	l := fl.Launches[0]
	assert.Equal(t, "scores_d0", l.Threadgroups)
	assert.Equal(t, "512", l.ThreadsPerThreadgroup)
	assert.Equal(t, metal.Binding{Index: 2, Param: "scores_d0", Value: "scores_d0"}, l.Buffers[2])
	assert.Equal(t, metal.Binding{Index: 0, Param: "scores", Buffer: "scores"}, l.Buffers[0])
}

// An element-wise kernel over rows of run-time length: rows share
// threadgroups, the sizes are expressions of the extents.
func TestDynamicElementwiseLaunch(t *testing.T) {
	prog := emitText(t, "gelu.tir", `func.func @gelu(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %y = graph.gelu %x : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}`)
	k := prog.Kernels[0]
	assert.True(t, k.RowsShareThreadgroups)
	assert.Contains(t, prog.Metal(), "uint ngroups [[threadgroups_per_grid]]")
	assert.Contains(t, prog.Metal(), "static inline float tf_erfc(float x)")
	l := prog.Functions[0].Launches[0]
	assert.Equal(t, "min(256, max(32, ((x_d1 - x_d1 % 4 + 3) / 4 + 31) / 32 * 32))", l.ThreadsPerThreadgroup)
	assert.Equal(t, "x_d0 * max(1, ((x_d1 - x_d1 % 4 + 3) / 4 + 255) / 256)", l.Threadgroups)
	for _, c := range []struct{ rows, cols, groups, threads int64 }{{3, 10, 3, 32}, {5, 4096, 20, 256}, {2, 0, 2, 32}} {
		env := map[string]int64{"x_d0": c.rows, "x_d1": c.cols}
		g, err := metal.EvalExpr(l.Threadgroups, env)
		require.NoError(t, err)
		n, err := metal.EvalExpr(l.ThreadsPerThreadgroup, env)
		require.NoError(t, err)
		assert.Equal(t, []int64{c.groups, c.threads}, []int64{g, n}, "%+v", c)
	}
}

// -O0 leaves intermediates between kernels: in the function's arena.
func TestArenaIntermediates(t *testing.T) {
	m, err := compileFor("swiglu.tir", readExample(t, "swiglu.tir"), "legalize-numerics,decompose,lower-to-loops,sram-alloc")
	require.NoError(t, err)
	prog, err := metal.Emit(m, metal.Options{})
	require.NoError(t, err)
	fl := prog.Functions[0]
	require.NotEmpty(t, fl.Intermediates)
	assert.Greater(t, fl.ArenaBytes, int64(0))
	for _, im := range fl.Intermediates {
		require.NotNil(t, im.ArenaOffset, im.Name)
		bytes, err := metal.EvalExpr(im.Bytes, nil)
		require.NoError(t, err)
		assert.LessOrEqual(t, *im.ArenaOffset+bytes, fl.ArenaBytes, im.Name)
	}
	assert.Greater(t, len(fl.Launches), 3)
}

// The same module gives the same bytes.
func TestDeterministic(t *testing.T) {
	src := readExample(t, "add_rmsnorm.tir") + "\n" + readExample(t, "logsumexp.tir")
	a := emitText(t, "x.tir", src)
	b := emitText(t, "x.tir", src)
	fa, err := a.Files()
	require.NoError(t, err)
	fb, err := b.Files()
	require.NoError(t, err)
	assert.Equal(t, fa, fb)
	var names []string
	for _, f := range fa {
		names = append(names, f.Name)
	}
	assert.Equal(t, []string{"add_rmsnorm.metal", "add_rmsnorm.json", "lse_and_max.metal", "lse_and_max.json"}, names)
	// each file holds its function's kernels only
	assert.Contains(t, string(fa[0].Data), "add_rmsnorm_k0")
	assert.NotContains(t, string(fa[0].Data), "lse_and_max_k0")
	var desc metal.LaunchDescription
	require.NoError(t, json.Unmarshal(fa[3].Data, &desc))
	assert.Equal(t, metal.LaunchFormat, desc.Format)
	assert.Equal(t, "lse_and_max.metal", desc.Source)
	assert.False(t, desc.CompileOptions.FastMath)
	require.Len(t, desc.Kernels, 1)
	assert.Equal(t, []string{"s"}, desc.Kernels[0].MLX.InputNames)
	assert.Equal(t, []string{"l_1", "m"}, desc.Kernels[0].MLX.OutputNames)
	assert.True(t, strings.HasPrefix(desc.Kernels[0].MLX.Source, "  const uint gid = threadgroup_position_in_grid.x;\n"))
}

func TestWriteFileAndDir(t *testing.T) {
	m, err := compileFor("softmax.tir", readExample(t, "attention_softmax.tir"), o2)
	require.NoError(t, err)
	dir := t.TempDir()
	paths, err := metal.WriteFile(m, filepath.Join(dir, "out.metal"), metal.Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(dir, "out.metal"), filepath.Join(dir, "out.json")}, paths)
	data, err := os.ReadFile(filepath.Join(dir, "out.json"))
	require.NoError(t, err)
	assert.Contains(t, string(data), `"source": "out.metal"`)

	paths, err = metal.WriteDir(m, filepath.Join(dir, "sub"), metal.Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(dir, "sub", "attention_softmax.metal"), filepath.Join(dir, "sub", "attention_softmax.json")}, paths)
}

// Problems are errors at the op, never panics.
func TestErrors(t *testing.T) {
	m3, err := target.Lookup("m3-max")
	require.NoError(t, err)
	cases := []struct {
		name, src, pipeline, want string
	}{
		{"f64", `func.func @f(%x: tensor<4x8xf64>) -> tensor<4x8xf64> {
  %y = graph.exp %x : tensor<4x8xf64>
  return %y : tensor<4x8xf64>
}`, o2, "computes in f64, which Metal does not have"},
		{"graph ops left", `func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.exp %x : tensor<4xf32>
  return %y : tensor<4xf32>
}`, "canonicalize", "is a graph op; --emit=metal needs the program lowered to loops"},
		{"no sram plan", `func.func @f(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %y = graph.softmax %x : tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}`, "decompose,fuse,lower-to-loops", "has sram buffers but no sram plan; run sram-alloc before --emit=metal"},
		{"threadgroup memory beyond 32 KB", `func.func @f(%x: tensor<?x16384xf32>) -> tensor<?x16384xf32> {
  %y = graph.fused %x {kind = "row", row_len = 16384, schedule = "one-pass"} {
  ^bb0(%a: tensor<?x16384xf32>):
    %m = graph.reduce_max %a {axes = [-1], keepdim = true} : (tensor<?x16384xf32>) -> tensor<?x1xf32>
    %d = graph.sub %a, %m : (tensor<?x16384xf32>, tensor<?x1xf32>) -> tensor<?x16384xf32>
    graph.yield %d : tensor<?x16384xf32>
  } : tensor<?x16384xf32>
  return %y : tensor<?x16384xf32>
}`, "lower-to-loops,sram-alloc{capacity=64KiB}", "kernel 'f_k0' needs 65536 bytes of threadgroup memory but the target 'm3-max' has 32768"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := compileFor("e.tir", c.src, c.pipeline)
			require.NoError(t, err)
			_, err = metal.Emit(m, metal.Options{Target: m3})
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			d, ok := err.(*ir.Diagnostic)
			require.True(t, ok, "%T", err)
			assert.True(t, d.Loc.Known(), "the error has a location")
		})
	}
}

func TestEvalExpr(t *testing.T) {
	env := map[string]int64{"n": 100, "rows": 7}
	for text, want := range map[string]int64{
		"42":                            42,
		"n":                             100,
		"(n + 31) / 32 * 32":            128,
		"min(1024, max(32, n * 2))":     200,
		"rows * ((n + 7) / 8)":          91,
		"n - n % 8":                     96,
		"max(1, (n - 100 + 255) / 256)": 1,
	} {
		got, err := metal.EvalExpr(text, env)
		require.NoError(t, err, text)
		assert.Equal(t, want, got, text)
	}
	for text, want := range map[string]string{
		"m + 1":      "unknown extent 'm'",
		"n / 0":      "division by zero",
		"min(n, 3":   "expected ')'",
		"n +":        "unexpected end",
		"n n":        "unexpected 'n'",
		"(n * 2))":   "unexpected ')'",
		"max(1 2)":   "expected ','",
		"n $ 2":      "unexpected '$'",
		"1 + (2 * n": "expected ')'",
	} {
		_, err := metal.EvalExpr(text, env)
		require.Error(t, err, text)
		assert.Contains(t, err.Error(), want, text)
	}
}

// The launch description carries the function's extent checks, and a host
// (the test harness's) refuses inputs that break them.
func TestLaunchExtentChecks(t *testing.T) {
	p := emitText(t, "checks", `func.func @add(%x: tensor<?x3xf32>, %y: tensor<?x3xf32>) -> tensor<?x3xf32> {
  %z = graph.add %x, %y : tensor<?x3xf32>
  return %z : tensor<?x3xf32>
}`)
	desc := p.Description("add.metal", "add")
	require.Len(t, desc.Functions, 1)
	checks := desc.Functions[0].Checks
	require.Len(t, checks, 1)
	require.Equal(t, "x", checks[0].Argument)
	require.Equal(t, "y", checks[0].Other)
	require.NotNil(t, checks[0].OtherAxis)
	require.Equal(t, 0, *checks[0].OtherAxis)
	require.Nil(t, checks[0].Extent)
}
