package tt

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	geval "github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
)

// lower compiles src to the loop dialect for a target.
func lower(t *testing.T, src, targetName string) (ir.Module, *target.Target) {
	t.Helper()
	tg, err := target.Lookup(targetName)
	require.NoError(t, err)
	m, err := compileFor(src, graphPipeline+",lower-to-loops,sram-alloc", tg)
	require.NoError(t, err)
	return m, tg
}

func emitSrc(t *testing.T, src, targetName string) (*Output, error) {
	m, tg := lower(t, src, targetName)
	return Emit(m, Options{Target: tg})
}

func fileOf(out *Output, path string) string {
	for _, f := range out.Files {
		if f.Path == path {
			return string(f.Data)
		}
	}
	return ""
}

const rmsSrc = `func.func @rms(%x: tensor<?x96xbf16>, %w: tensor<96xbf16>) -> tensor<?x96xbf16> {
  %n = graph.rmsnorm %x, %w {eps = 1.0e-05 : f32} : (tensor<?x96xbf16>, tensor<96xbf16>) -> tensor<?x96xbf16>
  return %n : tensor<?x96xbf16>
}`

func TestEmitFiles(t *testing.T) {
	out, err := emitSrc(t, rmsSrc, "blackhole-p150")
	require.NoError(t, err)
	var paths []string
	for _, f := range out.Files {
		paths = append(paths, f.Path)
	}
	assert.Equal(t, []string{"program.json", "rms_k0/reader.cpp", "rms_k0/compute.cpp", "rms_k0/writer.cpp"}, paths)

	compute := fileOf(out, "rms_k0/compute.cpp")
	assert.Contains(t, compute, "void kernel_main() {")
	assert.Contains(t, compute, `#include "api/compute/reduce.h"`)
	assert.Contains(t, compute, "reduce_tile<PoolType::SUM, ReduceDim::REDUCE_ROW, true>(cb_acc, cb_scaler")
	assert.Contains(t, compute, "mul_tiles_bcast_cols(cb_row, ")
	assert.NotContains(t, compute, "namespace NAMESPACE", "the current API, not the old MAIN form")
	reader := fileOf(out, "rms_k0/reader.cpp")
	assert.Contains(t, reader, "constexpr auto x_args = TensorAccessorArgs<0>();")
	assert.Contains(t, reader, "constexpr auto w_args = TensorAccessorArgs<x_args.next_compile_time_args_offset()>();")
	assert.Contains(t, reader, "noc_async_read_tile(rb * Ct + ct, x, get_write_ptr(cb_x));")
	assert.Contains(t, reader, "noc_async_read_tile(ct, w, get_write_ptr(cb_w));")
	writer := fileOf(out, "rms_k0/writer.cpp")
	assert.Contains(t, writer, "noc_async_write_tile(rb * Ct + ct, n, get_read_ptr(cb_n));")

	var p Program
	require.NoError(t, json.Unmarshal(out.Files[0].Data, &p))
	assert.Equal(t, Grid{X: 12, Y: 10, Cores: 120}, p.Grid)
	require.Len(t, p.Kernels, 1)
	k := p.Kernels[0]
	assert.Equal(t, "row_block", k.Work.Unit)
	assert.Equal(t, "dim(n, 0)", k.Rows.String())
	assert.Equal(t, "96", k.Cols.String())
	assert.Equal(t, []string{"addr:x", "addr:w", "unit_start", "unit_count", "Ct"}, k.Reader.RuntimeArgs)
	assert.Equal(t, []string{"accessor:x", "accessor:w"}, k.Reader.CompileArgs)
	assert.True(t, k.ComputeConfig.Fp32DestAccEn)
	// streams from the reader from c_0, to the writer from c_16, the
	// compute kernel's own from c_24
	byName := map[string]CircularBuffer{}
	total := int64(0)
	for _, cb := range k.CircularBuffers {
		byName[cb.Name] = cb
		assert.Equal(t, total, cb.L1Offset, cb.Name)
		total += cb.PageBytes * cb.Pages
	}
	assert.Equal(t, total, k.L1Bytes)
	assert.Equal(t, 0, byName["cb_x"].Index)
	assert.Equal(t, 16, byName["cb_n"].Index)
	assert.Equal(t, 24, byName["cb_row"].Index)
	// the kept row: 3 column tiles of 32 rows, in bf16 (every value kept
	// is a widened bf16)
	assert.Equal(t, int64(3), byName["cb_row"].Pages)
	assert.Equal(t, "Float16_b", byName["cb_row"].DataFormat)
	require.Len(t, p.Functions, 1)
	assert.Equal(t, []Launch{{Kernel: "rms_k0", Buffers: []string{"x", "w", "n"}}}, p.Functions[0].Launches)
}

func TestEmitIsDeterministic(t *testing.T) {
	src, err := os.ReadFile("../../examples/add_rmsnorm.tir")
	require.NoError(t, err)
	a, err := emitSrc(t, string(src), "wormhole-n300")
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		b, err := emitSrc(t, string(src), "wormhole-n300")
		require.NoError(t, err)
		require.Equal(t, len(a.Files), len(b.Files))
		for j := range a.Files {
			assert.Equal(t, a.Files[j].Path, b.Files[j].Path)
			assert.True(t, bytes.Equal(a.Files[j].Data, b.Files[j].Data), a.Files[j].Path)
		}
	}
}

func TestGenericKernelIsReported(t *testing.T) {
	// a matmul whose N is not a multiple of 32: matmul_tiles takes whole tiles
	src := `func.func @f(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>) -> tensor<64x16xf32> {
  %y = graph.matmul %a, %b : (tensor<64x32xf32>, tensor<32x16xf32>) -> tensor<64x16xf32>
  return %y : tensor<64x16xf32>
}`
	_, err := emitSrc(t, src, "blackhole-p150")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "'tt' backend: kernel 'f_k0' multiplies 64x32 by 32x16 matrices; matmul_tiles takes whole 32x32 tiles, so M, N and K must be multiples of 32")
	assert.Contains(t, err.Error(), "input.tir:2:", "located at the op")

	// a transpose of several matrices that are not whole tiles
	src = `func.func @g(%x: tensor<3x64x40xf32>) -> tensor<3x40x64xf32> {
  %y = graph.transpose %x {perm = [0, 2, 1]} : (tensor<3x64x40xf32>) -> tensor<3x40x64xf32>
  return %y : tensor<3x40x64xf32>
}`
	_, err = emitSrc(t, src, "wormhole-n300")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "'tt' backend: kernel 'g_k0' transposes 3 matrices of 64x40, which are not whole tiles")
}

func TestTransposeReadsTheTransposedTile(t *testing.T) {
	src := `func.func @t(%x: tensor<3x64x96xf32>) -> tensor<3x96x64xf32> {
  %y = graph.transpose %x {perm = [0, 2, 1]} : (tensor<3x64x96xf32>) -> tensor<3x96x64xf32>
  return %y : tensor<3x96x64xf32>
}`
	out, err := emitSrc(t, src, "blackhole-p150")
	require.NoError(t, err)
	k := out.Program.Kernels[0]
	assert.Equal(t, "transpose", k.Kind)
	assert.Equal(t, "tile", k.Work.Unit)
	assert.Equal(t, "288", k.Rows.String())
	assert.Equal(t, "64", k.Cols.String())
	// the Float32 input reaches DST with all 32 bits
	assert.Equal(t, []int{0}, k.ComputeConfig.UnpackToDestFp32)
	// result tile (rb, ct): batch rb / 3, row tile rb % 3 of the result;
	// the input's tile of that batch at row tile ct, column tile rb % 3
	reader := fileOf(out, "t_k0/reader.cpp")
	assert.Contains(t, reader, "noc_async_read_tile((rb / 3 * 2 + ct) * 3 + rb % 3, x, get_write_ptr(cb_x));")
	compute := fileOf(out, "t_k0/compute.cpp")
	assert.Contains(t, compute, "transpose_init(cb_x);\n        transpose_tile(cb_x, 0, 0);")
	writer := fileOf(out, "t_k0/writer.cpp")
	assert.Contains(t, writer, "noc_async_write_tile(rb * Ct + ct, y, get_read_ptr(cb_y));")
}

func TestLeadingBroadcastIsGathered(t *testing.T) {
	src, err := os.ReadFile("testdata/lead_bcast.tir")
	require.NoError(t, err)
	out, err := emitSrc(t, string(src), "wormhole-n300")
	require.NoError(t, err)
	maps := map[string]string{}
	for _, k := range out.Program.Kernels {
		for _, p := range k.Params {
			if p.RowMap != "" {
				maps[k.Name+"/"+p.Name] = p.Access + " " + p.RowMap
			}
		}
	}
	assert.Equal(t, map[string]string{
		"bias3d_k0/b":        "full (r / 10u)",
		"scale3d_k0/s":       "col (r / 10u)",
		"pos3d_k0/t_":        "full (r % 10u)",
		"gather_r_k0/r_":     "full (r / 10u)",
		"rmsnorm_scale_k1/s": "col (r / 25u)",
		"rmsnorm_scale_k1/b": "full (r / 25u)",
	}, maps)
	reader := fileOf(out, "bias3d_k0/reader.cpp")
	assert.Contains(t, reader, "const uint32_t src = (r / 10u);")
	assert.Contains(t, reader, "const uint32_t tile = src / 32 * Ct + ct;")
	assert.Contains(t, reader, "copy_tile_row(b_src, src % 32, dst, i, 4);")
	assert.Contains(t, reader, "if (r >= 40u) {")

	// a run-time number of rows, and row maps over run-time extents: the
	// reader's runtime arguments "R" and "extent:<buffer>:<axis>"
	// (testdata/dynamic_row_maps.tir runs such kernels in the emulation)
	dyn := `func.func @d(%x: tensor<?x10x96xf32>, %b: tensor<?x1x96xf32>) -> tensor<?x10x96xf32> {
  %y = graph.add %x, %b : (tensor<?x10x96xf32>, tensor<?x1x96xf32>) -> tensor<?x10x96xf32>
  return %y : tensor<?x10x96xf32>
}
func.func @e(%x: tensor<2x?x4x64xf32>, %s: tensor<2x?x1x64xf32>) -> tensor<2x?x4x64xf32> {
  %y = graph.mul %x, %s : (tensor<2x?x4x64xf32>, tensor<2x?x1x64xf32>) -> tensor<2x?x4x64xf32>
  return %y : tensor<2x?x4x64xf32>
}`
	out, err = emitSrc(t, dyn, "wormhole-n300")
	require.NoError(t, err)
	for _, k := range out.Program.Kernels {
		switch k.Name {
		case "d_k0":
			assert.Equal(t, []string{"addr:x", "addr:b", "unit_start", "unit_count", "Ct", "R"}, k.Reader.RuntimeArgs)
			assert.Equal(t, []string{"addr:y", "unit_start", "unit_count", "Ct"}, k.Writer.RuntimeArgs)
			reader := fileOf(out, "d_k0/reader.cpp")
			assert.Contains(t, reader, "const uint32_t R = get_arg_val<uint32_t>(5);  // R")
			assert.Contains(t, reader, "if (r >= R) {")
			assert.Contains(t, reader, "const uint32_t src = (r / 10u);")
		case "e_k0":
			assert.Equal(t, []string{"addr:x", "addr:s", "unit_start", "unit_count", "Ct", "R", "extent:y:1", "extent:s:1"}, k.Reader.RuntimeArgs)
			assert.Contains(t, fileOf(out, "e_k0/reader.cpp"), "const uint32_t src = ((r / 4u) / extent_y_1) * extent_s_1 + ((r / 4u) % extent_y_1);")
		default:
			t.Errorf("kernel %s", k.Name)
		}
	}
}

func TestNeedsTenstorrentTarget(t *testing.T) {
	m, _ := lower(t, rmsSrc, "cpu")
	cpu, _ := target.Lookup("cpu")
	_, err := Emit(m, Options{Target: cpu})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "needs a Tenstorrent target")
}

func TestExprEvalAndJSON(t *testing.T) {
	e := Expr{Op: "mul", Args: []Expr{{Buffer: "x", Axis: 0}, constExpr(3)}}
	v, err := e.Eval(func(b string, axis int) (int64, error) {
		require.Equal(t, "x", b)
		return 7, nil
	})
	require.NoError(t, err)
	assert.Equal(t, int64(21), v)
	assert.Equal(t, "mul(dim(x, 0), 3)", e.String())
	data, err := json.Marshal(e)
	require.NoError(t, err)
	var back Expr
	require.NoError(t, json.Unmarshal(data, &back))
	assert.Equal(t, e.String(), back.String())
	_, err = Expr{Op: "div", Args: []Expr{constExpr(1), constExpr(0)}}.Eval(nil)
	assert.Error(t, err)
}

func TestElementwiseSplitsByTile(t *testing.T) {
	src := `func.func @sw(%g: tensor<40x100xbf16>, %u: tensor<40x100xbf16>) -> tensor<40x100xbf16> {
  %s = graph.silu %g : tensor<40x100xbf16>
  %y = graph.mul %s, %u : tensor<40x100xbf16>
  return %y : tensor<40x100xbf16>
}`
	out, err := emitSrc(t, src, "wormhole-n300")
	require.NoError(t, err)
	var p Program
	require.NoError(t, json.Unmarshal(out.Files[0].Data, &p))
	assert.Equal(t, "tile", p.Kernels[0].Work.Unit)
	reader := fileOf(out, "sw_k0/reader.cpp")
	assert.Contains(t, reader, "const uint32_t rb = t / Ct, ct = t % Ct;")
	compute := fileOf(out, "sw_k0/compute.cpp")
	assert.Equal(t, 1, strings.Count(compute, "silu_tile_init();"))
	assert.NotContains(t, compute, "for (uint32_t ct")
}

// program.json carries the function's extent checks for the host, and
// the test host refuses inputs that break them before any kernel runs.
func TestProgramExtentChecks(t *testing.T) {
	out, err := emitSrc(t, `func.func @add(%x: tensor<?x64xf32>, %y: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %z = graph.add %x, %y : tensor<?x64xf32>
  return %z : tensor<?x64xf32>
}`, "wormhole-n300")
	require.NoError(t, err)
	fn := out.Program.Functions[0]
	require.Len(t, fn.Checks, 1)
	require.Equal(t, "x", fn.Checks[0].Argument)
	require.Equal(t, "y", fn.Checks[0].Other)
	require.Contains(t, fileOf(out, "program.json"), `"extent_checks"`)
	c := &emuCase{name: "add", out: out, fn: "add", in: []*geval.Tensor{geval.NewTensor(ir.F32, []int64{3, 64}), geval.NewTensor(ir.F32, []int64{5, 64})},
		outShapes: [][]int64{{3, 64}}, outElems: []ir.ElemKind{ir.F32}}
	_, err = planHost(c)
	require.ErrorContains(t, err, "x has 3 in dimension 0 but y has 5 in dimension 0")
}
