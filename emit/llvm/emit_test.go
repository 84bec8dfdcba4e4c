package llvmemit

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llir/llvm/ir/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	_ "github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/parser"
)

// parseFile parses and verifies a loop-dialect module of testdata.
func parseFile(t *testing.T, name string) ir.Module {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return parseText(t, name, string(src))
}

func parseText(t *testing.T, name, src string) ir.Module {
	t.Helper()
	m, err := parser.Parse(name, src)
	require.NoError(t, err)
	require.NoError(t, ir.Verify(m.Operation))
	return m
}

func TestRowKernel(t *testing.T) {
	text, err := EmitText(parseFile(t, "row_kernel.tir"), Options{Entries: true})
	require.NoError(t, err)
	for _, want := range []string{
		"%rms_k0.args = type { float*, float*, float*, i64, i64 }",
		"define void @rms_k0(float* %x, float* %w, float* %y, i64 %rows, i64 %rows2, i64 %row_begin, i64 %row_end)",
		"alloca [256 x i8], align 64",
		"phi <8 x float> [ <float 0.0, float 0.0, float 0.0, float 0.0, float 0.0, float 0.0, float 0.0, float 0.0>, %grid1.body ]",
		"call float @llvm.vector.reduce.fadd.v8f32(float -0.0, <8 x float>",
		"define i64 @rms_k0.grid(float* %x, float* %w, float* %y, i64 %rows, i64 %rows2)",
		"define void @rms_k0.task(i8* %ctx, i64 %begin, i64 %end)",
		"define void @rms(float* %x, float* %w, float* %y, i64 %x.d0, i64 %y.d0)",
		"call void @tf_parallel_for(void (i8*, i64, i64)* @rms_k0.task",
		"define void @rms.entry(i8** %buffers, i64* %extents)",
		"@tf_entries = constant [1 x void (i8**, i64*)*] [void (i8**, i64*)* @rms.entry]",
		"@tf_num_entries = constant i32 1",
	} {
		assert.Contains(t, text, want)
	}
	// declarations come last, sorted
	assert.Less(t, strings.Index(text, "declare double @llvm.sqrt.f64"), strings.Index(text, "declare void @tf_parallel_for"))
	assert.Less(t, strings.LastIndex(text, "define "), strings.Index(text, "declare "))
}

func TestDeterministic(t *testing.T) {
	first, err := EmitText(parseFile(t, "row_kernel.tir"), Options{})
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		again, err := EmitText(parseFile(t, "row_kernel.tir"), Options{})
		require.NoError(t, err)
		require.Equal(t, first, again)
	}
}

// TestOptVerify runs LLVM's verifier on every test module.
func TestOptVerify(t *testing.T) {
	opt := "/usr/lib/llvm-14/bin/opt"
	_, err := os.Stat(opt)
	require.NoError(t, err, "LLVM 14's opt is needed: apt-get install llvm-14")
	files, err := filepath.Glob("testdata/*.tir")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		text, err := EmitText(parseFile(t, filepath.Base(f)), Options{Entries: true})
		require.NoError(t, err, f)
		cmd := exec.Command(opt, "-verify", "-S", "-o", "/dev/null")
		cmd.Stdin = strings.NewReader(text)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s:\n%s\n%s", f, out, text)
	}
}

func TestErrors(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"graph-level", `func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.exp %x : tensor<4xf32>
  return %y : tensor<4xf32>
}`, "1:1: error: 'func.func' op @f is not lowered to the loop dialect: argument #0 is 'tensor<4xf32>' (run lower-to-loops first)"},
		{"graph-op", `func.func @f(%x: memref<4xf32, dram>) attributes {num_results = 0} {
  %c = graph.constant dense<1.0> : tensor<f32>
  return
}`, "2:3: error: 'graph.constant' op cannot be translated to LLVM IR: the function is not lowered to the loop dialect (run lower-to-loops first)"},
		{"returns-values", `func.func @f(%x: memref<4xf32, dram>) -> index {
  %n = loop.dim %x {axis = 0} : (memref<4xf32, dram>) -> index
  return %n : index
}`, "3:3: error: 'func.return' op returns values"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := parser.Parse("bad.tir", tt.src)
			require.NoError(t, err)
			_, err = EmitText(m, Options{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestConstants(t *testing.T) {
	tests := []struct {
		k    ir.ElemKind
		v    float64
		want string
	}{
		{ir.F32, 0.1, "0x3FB99999A0000000"},
		{ir.F32, math.Copysign(0, -1), "-0.0"},
		{ir.BF16, 1, "16256"},   // 0x3F80
		{ir.BF16, -2, "-16384"}, // 0xC000
		{ir.F16, 1, "15360"},    // 0x3C00
		{ir.F8E4M3FN, 448, "126"},
		{ir.F8E4M3FN, 1000, "127"}, // NaN: the format has no inf
		{ir.UI8, 255, "-1"},
		{ir.I1, 1, "true"},
		{ir.Index, 64, "64"},
	}
	for _, tt := range tests {
		c, err := elemConst(tt.k, tt.v)
		require.NoError(t, err)
		assert.Equal(t, tt.want, c.Ident(), "%s %v", tt.k, tt.v)
	}
	_, err := elemConst(ir.I32, 0.5)
	assert.ErrorContains(t, err, "is not an integer")
}

func TestParamNames(t *testing.T) {
	pn := paramNames{}
	assert.Equal(t, "x", pn.unique("x", 0))
	assert.Equal(t, "arg1", pn.unique("x", 1))
	assert.Equal(t, "arg2", pn.unique("", 2))
	pn["arg3"] = true
	assert.Equal(t, "arg3_", pn.unique("", 3))
}

func TestMangle(t *testing.T) {
	assert.Equal(t, "v8f32", mangle(types.NewVector(8, types.Float)))
	assert.Equal(t, "f64", mangle(types.Double))
	assert.Equal(t, "v16i16", mangle(types.NewVector(16, types.I16)))
}
