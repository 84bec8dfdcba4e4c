package tt

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	src := `func.func @f(%x: tensor<64x32xf32>) -> tensor<32x64xf32> {
  %y = graph.transpose %x {perm = [1, 0]} : (tensor<64x32xf32>) -> tensor<32x64xf32>
  return %y : tensor<32x64xf32>
}`
	_, err := emitSrc(t, src, "blackhole-p150")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "'tt' backend: kernel 'f_k0' of kind 'generic' is not supported yet")
	assert.Contains(t, err.Error(), "input.tir:2:", "located at the op")
}

func TestL1CapacityIsReported(t *testing.T) {
	// softmax over f32 rows of 16384 keeps 32 rows x 16384 f32 = 2 MiB in
	// L1: more than a Wormhole core has
	src := `func.func @big(%x: tensor<64x16384xf32>) -> tensor<64x16384xf32> {
  %y = graph.softmax %x {axis = -1} : tensor<64x16384xf32>
  return %y : tensor<64x16384xf32>
}`
	_, err := emitSrc(t, src, "wormhole-n300")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "'tt' backend: kernel 'big_k0' needs")
	assert.Contains(t, err.Error(), "KiB of L1 for its circular buffers, more than the 1464 KiB of a wormhole-n300 core")
	assert.Contains(t, err.Error(), "cb_row: 512 tiles of Float32")
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
