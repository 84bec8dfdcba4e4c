package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
	"github.com/tensorforge/tensorforge/ir/target"
	"github.com/tensorforge/tensorforge/parser"
)

const rmsSiluMul = `func.func @rms_silu_mul(%x: tensor<?x64xbf16>, %w: tensor<64xbf16>, %z: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %n = graph.rmsnorm %x, %w {eps = 1.0e-05 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  %s = graph.silu %n : tensor<?x64xbf16>
  %y = graph.mul %s, %z : tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}
`

// readResults reads DIR/result<i>.npy for i < n.
func readResults(t *testing.T, dir string, n int) []*eval.Tensor {
	t.Helper()
	var out []*eval.Tensor
	for i := 0; i < n; i++ {
		r, err := eval.ReadNpy(filepath.Join(dir, "result"+string(rune('0'+i))+".npy"))
		require.NoError(t, err)
		out = append(out, r)
	}
	return out
}

// TestRunMatchesInterpret runs a fused row kernel natively (from standard
// input) and in the interpreter on the same random inputs.
func TestRunMatchesInterpret(t *testing.T) {
	dir := t.TempDir()
	native, ref := filepath.Join(dir, "native"), filepath.Join(dir, "ref")
	status, _, errOut := runTFC(t, nil, rmsSiluMul, "run", "-", "--random-inputs", "5", "--output", native)
	require.Equal(t, exitOK, status, errOut)
	status, _, errOut = runTFC(t, nil, rmsSiluMul, "interpret", "-", "--random-inputs", "5", "--output", ref)
	require.Equal(t, exitOK, status, errOut)
	got, want := readResults(t, native, 1)[0], readResults(t, ref, 1)[0]
	require.Equal(t, []int64{randomInputExtent, 64}, got.Shape, "the output takes the rows of the input")
	require.Equal(t, want.Shape, got.Shape)
	for i := range want.Data {
		assert.LessOrEqual(t, numeric.ULPDiff(want.Data[i], got.Data[i], ir.BF16), 1.0, "element %d: %v vs %v", i, got.Data[i], want.Data[i])
	}
}

// TestRunInputsAndPipelines reads .npy inputs and runs -O0 and a pipeline
// that stops at the graph level (run lowers the rest).
func TestRunInputsAndPipelines(t *testing.T) {
	dir := t.TempDir()
	x := &eval.Tensor{Shape: []int64{2, 4}, Elem: ir.F32, Data: []float64{-3, -2, -0.5, 0, 1, 2.5, 100, 1e30}}
	require.NoError(t, eval.WriteNpy(filepath.Join(dir, "x.npy"), x))
	src := `func.func @f(%x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xi8>) {
  %e = graph.exp %x : tensor<2x4xf32>
  %c = graph.cast %x : (tensor<2x4xf32>) -> tensor<2x4xi8>
  return %e, %c : tensor<2x4xf32>, tensor<2x4xi8>
}
`
	file := filepath.Join(dir, "f.tir")
	require.NoError(t, os.WriteFile(file, []byte(src), 0o644))
	for _, flags := range [][]string{{"-O0"}, {"--pass-pipeline=canonicalize"}, {"--threads", "1"}} {
		out := filepath.Join(dir, "out"+strings.Join(flags, ""))
		args := append([]string{"run", file, "--input", "x=" + filepath.Join(dir, "x.npy"), "--output", out}, flags...)
		status, _, errOut := runTFC(t, nil, "", args...)
		require.Equal(t, exitOK, status, "%v: %s", flags, errOut)
		res := readResults(t, out, 2)
		for i, v := range x.Data {
			assert.Equal(t, float64(float32(mathExp(v))), res[0].Data[i], "exp(%v) with %v", v, flags)
		}
		// -O0 legalises the cast (saturating); a bare pipeline keeps it unchecked
		want := []float64{-3, -2, 0, 0, 1, 2, 100, 127}
		if flags[0] == "--pass-pipeline=canonicalize" {
			want[7] = 0 // 1e30 wraps: INT64_MIN truncated
		}
		assert.Equal(t, want, res[1].Data, "cast with %v", flags)
	}
}

func mathExp(v float64) float64 {
	e, _ := eval.Run(mustFunc("func.func @e(%x: tensor<f32>) -> tensor<f32> {\n  %y = graph.exp %x : tensor<f32>\n  return %y : tensor<f32>\n}\n"),
		[]*eval.Tensor{eval.Scalar(ir.F32, v)}, eval.Options{})
	return e[0].Data[0]
}

func mustFunc(src string) ir.Func {
	m, err := parser.Parse("f.tir", src)
	if err != nil {
		panic(err)
	}
	return m.Funcs()[0]
}

func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	src := "func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n  return %x : tensor<4xf32>\n}\n"
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"run", "-", "--output", dir}, "no value for argument %x of @f: give --input x=FILE.npy or --random-inputs SEED"},
		{[]string{"run", "-", "--random-inputs", "1"}, "name the directory of the results with --output DIR"},
		{[]string{"run", "-", "--random-inputs", "1", "--output", dir, "--threads", "-2"}, "--threads takes a non-negative integer, not '-2'"},
		{[]string{"run", "-", "--input", "x", "--output", dir}, "--input takes NAME=FILE.npy or FILE.npz, not 'x'"},
		{[]string{"interpret", "-", "--random-inputs", "1", "--output", dir, "--func", "@g"}, "--func: no function @g (the input has @f)"},
	}
	for _, tt := range tests {
		status, _, errOut := runTFC(t, nil, src, tt.args...)
		assert.Equal(t, exitFailure, status, "%v", tt.args)
		assert.Contains(t, errOut, tt.want, "%v", tt.args)
	}
}

func TestInterpretF64(t *testing.T) {
	dir := t.TempDir()
	src := "func.func @f(%x: tensor<2xf32>) -> tensor<2xbf16> {\n  %y = graph.cast %x : (tensor<2xf32>) -> tensor<2xbf16>\n  return %y : tensor<2xbf16>\n}\n"
	x := &eval.Tensor{Shape: []int64{2}, Elem: ir.F32, Data: []float64{1.00390625, 3}}
	require.NoError(t, eval.WriteNpy(filepath.Join(dir, "x.npy"), x))
	for f64, want := range map[bool]float64{false: 1, true: 1.00390625} {
		out := filepath.Join(dir, "out")
		args := []string{"interpret", "-", "--input", "x=" + filepath.Join(dir, "x.npy"), "--output", out}
		if f64 {
			args = append(args, "--f64")
		}
		status, _, errOut := runTFC(t, nil, src, args...)
		require.Equal(t, exitOK, status, errOut)
		assert.Equal(t, want, readResults(t, out, 1)[0].Data[0], "--f64=%v keeps float64 values", f64)
	}
}

func TestCompareNpy(t *testing.T) {
	dir := t.TempDir()
	a := &eval.Tensor{Shape: []int64{3}, Elem: ir.F32, Data: []float64{1, float64(float32(1.1)), nanValue()}}
	b := &eval.Tensor{Shape: []int64{3}, Elem: ir.F32, Data: []float64{1, float64(float32(1.1)) + 0x1p-23, nanValue()}}
	pa, pb := filepath.Join(dir, "a.npy"), filepath.Join(dir, "b.npy")
	require.NoError(t, eval.WriteNpy(pa, a))
	require.NoError(t, eval.WriteNpy(pb, b))
	status, out, errOut := runTFC(t, nil, "", "compare-npy", pa, pb, "--ulp", "1")
	require.Equal(t, exitOK, status, errOut)
	assert.True(t, strings.HasPrefix(out, "a.npy: 3 elements match, largest distance 1 ULP of f32,"), out)
	status, _, errOut = runTFC(t, nil, "", "compare-npy", pa, pb, "--ulp", "0")
	assert.Equal(t, exitFailure, status)
	assert.Contains(t, errOut, "a.npy: element [1]: 1.100000023841858 vs 1.1000001430511475 differ by 1 ULP of f32 (allowed 0)")
	status, out, errOut = runTFC(t, nil, "", "compare-npy", pa, pb, "--elem", "bf16", "--ulp", "0.001")
	assert.Equal(t, exitOK, status, errOut)
	assert.Contains(t, out, "largest distance 1.526e-05 ULP of bf16")
	status, _, errOut = runTFC(t, nil, "", "compare-npy", pa, dir)
	assert.Equal(t, exitFailure, status)
	assert.Contains(t, errOut, "compare two files or two directories")
}

func nanValue() float64 {
	v, _ := numeric.FromBits(0x7FC00000, ir.F32)
	return v
}

func TestEmitLLVM(t *testing.T) {
	status, out, errOut := runTFC(t, nil, rmsSiluMul, "--emit=llvm", "-")
	require.Equal(t, exitOK, status, errOut)
	assert.Contains(t, out, "define void @rms_silu_mul_k0(i16* %x, i16* %w, i16* %z, i16* %y, i64 %x_d0, i64 %z_d0, i64 %y_d0, i64 %row_begin, i64 %row_end)")
	assert.Contains(t, out, "define void @rms_silu_mul(i16* %x, i16* %w, i16* %z, i16* %y, i64 %x.d0, i64 %z.d0, i64 %y.d0)")
	assert.NotContains(t, out, "@rms_silu_mul_k1", "one fused kernel at -O2")
}

// TestLowerForCPU finishes the lowering of a graph-level module and leaves
// a lowered one alone.
func TestLowerForCPU(t *testing.T) {
	m, err := parser.Parse("f.tir", rmsSiluMul)
	require.NoError(t, err)
	require.False(t, isLowered(m))
	tg, err := target.Lookup("cpu")
	require.NoError(t, err)
	require.NoError(t, lowerForCPU(m, tg, false))
	require.True(t, isLowered(m))
	before := ir.Print(m.Operation, ir.PrintOptions{})
	require.NoError(t, lowerForCPU(m, tg, false))
	assert.Equal(t, before, ir.Print(m.Operation, ir.PrintOptions{}))
}

func TestVerifyOverflow(t *testing.T) {
	status, out, errOut := runTFC(t, nil, "", "verify-overflow", "--dtype", "f32,bf16")
	require.Equal(t, exitOK, status, errOut+out)
	for _, k := range []string{"f32", "bf16"} {
		for _, c := range overflowCases {
			line := c.name + " = " + c.op + ", " + k + ": naive wrong on "
			require.Contains(t, out, line)
			rest := out[strings.Index(out, line)+len(line):]
			rest = rest[:strings.IndexByte(rest, '\n')]
			assert.True(t, strings.HasSuffix(rest, "legalized wrong on 0"), "%s%s", line, rest)
			assert.False(t, strings.HasPrefix(rest, "0 "), "the naive %s must overflow somewhere in %s: %s", c.name, k, rest)
		}
	}
	assert.NotContains(t, out, "WRONG")
	status, _, errOut = runTFC(t, nil, "", "verify-overflow", "x.tir")
	assert.Equal(t, exitFailure, status)
	assert.Contains(t, errOut, "takes no files")
}

func TestVerifyQuant(t *testing.T) {
	status, out, errOut := runTFC(t, nil, "", "verify-quant")
	require.Equal(t, exitOK, status, errOut+out)
	assert.Equal(t, len(quantCases), strings.Count(out, "legalized wrong on 0"), out)
	assert.NotContains(t, out, "WRONG")
	// the unchecked cast wraps -1 to 255; the legalized one saturates to 0
	assert.Regexp(t, `(?m)^-1 +255 +0 +0 +ok$`, out)
}

// TestVerifyJudgement checks the bound of the verify commands.
func TestVerifyJudgement(t *testing.T) {
	assert.True(t, withinBound(98.69314575195312, 98.69314718055995, 98.7, 4, ir.F32))
	assert.False(t, withinBound(98.7, 98.69314718055995, 98.7, 4, ir.F32))
	assert.True(t, withinBound(nanValue(), nanValue(), 0, 1, ir.F16))
	assert.False(t, withinBound(1, nanValue(), 0, 1, ir.F16))
	// a reference past the range is matched by the infinity it rounds to
	assert.True(t, withinBound(posInf(), 70000, 70000, 1, ir.F16))
	assert.Equal(t, 0x1p-23, ulpOf(1, ir.F32))
	assert.Equal(t, 0x1p-10, ulpOf(1.5, ir.F16))
	assert.Equal(t, 0x1p-24, ulpOf(0, ir.F16))
	assert.Equal(t, "[1 2 ... 8]", formatRow([]float64{1, 2, 3, 4, 5, 6, 7, 8}))
	assert.Equal(t, "-inf", formatValue(negInf()))
}

func posInf() float64 { v, _ := numeric.FromBits(0x7F800000, ir.F32); return v }
func negInf() float64 { v, _ := numeric.FromBits(0xFF800000, ir.F32); return v }
