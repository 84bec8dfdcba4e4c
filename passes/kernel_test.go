package passes

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
)

// kernelCase is a graph.fused written by hand and what ClassifyKernel
// must say about it.
type kernelCase struct {
	name     string
	args     string // function arguments
	results  string // function result types
	body     string // the fused op and the return
	kind     KernelKind
	shape    []int64
	rowLen   int64
	operands []Access
	outs     []Access
	buffers  int
	phases   int
	err      string
}

var kernelCases = []kernelCase{
	{
		name: "elementwise with broadcasts", args: "%x: tensor<4x8xf32>, %b: tensor<8xf32>, %c: tensor<4x1xf32>", results: "tensor<4x8xf32>",
		body: `%r = graph.fused %x, %b, %c {kind = "elementwise"} {
  ^bb0(%a: tensor<4x8xf32>, %w: tensor<8xf32>, %k: tensor<4x1xf32>):
    %s = graph.constant dense<2.0> : tensor<f32>
    %y = graph.add %a, %w : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %z = graph.mul %y, %k : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
    %t = graph.mul %z, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    graph.yield %t : tensor<4x8xf32>
  } : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>`,
		kind: KernelElementwise, shape: []int64{4, 8},
		operands: []Access{AccessFull, AccessBroadcast, AccessBroadcast}, outs: []Access{AccessFull}, phases: 1,
	},
	{
		name: "rmsnorm row kernel", args: "%x: tensor<?x8xf32>, %w: tensor<8xf32>", results: "(tensor<?x8xf32>, tensor<?x1xf32>)",
		body: `%r:2 = graph.fused %x, %w {kind = "row"} {
  ^bb0(%a: tensor<?x8xf32>, %b: tensor<8xf32>):
    %sq = graph.mul %a, %a : tensor<?x8xf32>
    %s = graph.reduce_sum %sq {axes = [-1], keepdim = true} : (tensor<?x8xf32>) -> tensor<?x1xf32>
    %r = graph.rsqrt %s : tensor<?x1xf32>
    %y = graph.mul %a, %r : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
    %z = graph.mul %y, %b : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
    graph.yield %z, %r : tensor<?x8xf32>, tensor<?x1xf32>
  } : (tensor<?x8xf32>, tensor<8xf32>) -> (tensor<?x8xf32>, tensor<?x1xf32>)
  return %r#0, %r#1 : tensor<?x8xf32>, tensor<?x1xf32>`,
		kind: KernelRow, shape: []int64{ir.Dynamic, 8}, rowLen: 8,
		operands: []Access{AccessFull, AccessRowBroadcast}, outs: []Access{AccessFull, AccessPerRow}, buffers: 1, phases: 2,
	},
	{
		name: "per-row operands and a scalar", args: "%x: tensor<2x3x8xf32>, %m: tensor<2x3x1xf32>, %n: tensor<2x3xf32>, %s: tensor<f32>",
		results: "tensor<2x3xf32>",
		body: `%r = graph.fused %x, %m, %n, %s {kind = "row"} {
  ^bb0(%a: tensor<2x3x8xf32>, %b: tensor<2x3x1xf32>, %c: tensor<2x3xf32>, %d: tensor<f32>):
    %y = graph.sub %a, %b : (tensor<2x3x8xf32>, tensor<2x3x1xf32>) -> tensor<2x3x8xf32>
    %s = graph.reduce_max %y {axes = [2]} : (tensor<2x3x8xf32>) -> tensor<2x3xf32>
    %t = graph.add %s, %c : tensor<2x3xf32>
    %u = graph.mul %t, %d : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
    graph.yield %u : tensor<2x3xf32>
  } : (tensor<2x3x8xf32>, tensor<2x3x1xf32>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>`,
		kind: KernelRow, shape: []int64{2, 3, 8}, rowLen: 8,
		operands: []Access{AccessFull, AccessPerRow, AccessPerRow, AccessScalar}, outs: []Access{AccessPerRow}, phases: 2,
	},
	{
		name: "an ambiguous [8] is a weight where it meets full rows", args: "%x: tensor<8x8xf32>, %w: tensor<8xf32>", results: "tensor<8x8xf32>",
		body: `%r = graph.fused %x, %w {kind = "row"} {
  ^bb0(%a: tensor<8x8xf32>, %b: tensor<8xf32>):
    %s = graph.reduce_sum %a {axes = [-1], keepdim = true} : (tensor<8x8xf32>) -> tensor<8x1xf32>
    %y = graph.mul %a, %s : (tensor<8x8xf32>, tensor<8x1xf32>) -> tensor<8x8xf32>
    %z = graph.add %y, %b : (tensor<8x8xf32>, tensor<8xf32>) -> tensor<8x8xf32>
    graph.yield %z : tensor<8x8xf32>
  } : (tensor<8x8xf32>, tensor<8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>`,
		kind: KernelRow, shape: []int64{8, 8}, rowLen: 8,
		operands: []Access{AccessFull, AccessRowBroadcast}, outs: []Access{AccessFull}, buffers: 1, phases: 2,
	},
	{
		name: "an ambiguous [8] is per-row where it meets per-row values", args: "%x: tensor<8x8xf32>, %p: tensor<8xf32>", results: "tensor<8xf32>",
		body: `%r = graph.fused %x, %p {kind = "row"} {
  ^bb0(%a: tensor<8x8xf32>, %b: tensor<8xf32>):
    %s = graph.reduce_sum %a {axes = [-1]} : (tensor<8x8xf32>) -> tensor<8xf32>
    %z = graph.add %s, %b : tensor<8xf32>
    graph.yield %z : tensor<8xf32>
  } : (tensor<8x8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>`,
		kind: KernelRow, shape: []int64{8, 8}, rowLen: 8,
		operands: []Access{AccessFull, AccessPerRow}, outs: []Access{AccessPerRow}, phases: 2,
	},
	{
		name: "a kernel of its own", args: "%x: tensor<4x8xf32>, %w: tensor<8x2xf32>", results: "tensor<4x2xf32>",
		body: `%r = graph.fused %x, %w {kind = "matmul"} {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>):
    %m = graph.matmul %a, %b : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
    graph.yield %m : tensor<4x2xf32>
  } : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  return %r : tensor<4x2xf32>`,
		kind: KernelMatMul, shape: []int64{4, 2}, operands: []Access{AccessWhole, AccessWhole}, outs: []Access{AccessWhole}, phases: 1,
	},
	{
		name: "a reduction over the first axis", args: "%x: tensor<4x8xf32>", results: "tensor<8xf32>",
		body: `%r = graph.fused %x {kind = "reduce"} {
  ^bb0(%a: tensor<4x8xf32>):
    %m = graph.reduce_sum %a {axes = [0]} : (tensor<4x8xf32>) -> tensor<8xf32>
    graph.yield %m : tensor<8xf32>
  } : (tensor<4x8xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>`,
		kind: KernelReduce, shape: []int64{4, 8}, operands: []Access{AccessWhole}, outs: []Access{AccessWhole}, phases: 1,
	},
	{
		name: "cross-entropy: a gather of each row at its target", args: "%x: tensor<?x8xf32>, %t: tensor<?x1xi64>", results: "tensor<?x1xf32>",
		body: `%r = graph.fused %x, %t {kind = "row"} {
  ^bb0(%a: tensor<?x8xf32>, %b: tensor<?x1xi64>):
    %m = graph.reduce_max %a {axes = [-1], keepdim = true} : (tensor<?x8xf32>) -> tensor<?x1xf32>
    %d = graph.sub %a, %m : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
    %e = graph.exp %d : tensor<?x8xf32>
    %s = graph.reduce_sum %e {axes = [-1], keepdim = true} : (tensor<?x8xf32>) -> tensor<?x1xf32>
    %l = graph.log %s : tensor<?x1xf32>
    %lse = graph.add %l, %m : tensor<?x1xf32>
    %g = graph.gather %a, %b : (tensor<?x8xf32>, tensor<?x1xi64>) -> tensor<?x1xf32>
    %loss = graph.sub %lse, %g : tensor<?x1xf32>
    graph.yield %loss : tensor<?x1xf32>
  } : (tensor<?x8xf32>, tensor<?x1xi64>) -> tensor<?x1xf32>
  return %r : tensor<?x1xf32>`,
		kind: KernelRow, shape: []int64{ir.Dynamic, 8}, rowLen: 8,
		operands: []Access{AccessFull, AccessPerRow}, outs: []Access{AccessPerRow}, buffers: 1, phases: 3,
	},
	{
		name: "a gather alone", args: "%x: tensor<4x8xf32>, %t: tensor<2x8xi32>", results: "tensor<2x8xf32>",
		body: `%r = graph.fused %x, %t {kind = "gather"} {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<2x8xi32>):
    %g = graph.gather %a, %b {axis = 0} : (tensor<4x8xf32>, tensor<2x8xi32>) -> tensor<2x8xf32>
    graph.yield %g : tensor<2x8xf32>
  } : (tensor<4x8xf32>, tensor<2x8xi32>) -> tensor<2x8xf32>
  return %r : tensor<2x8xf32>`,
		kind: KernelGather, shape: []int64{2, 8}, operands: []Access{AccessWhole, AccessWhole}, outs: []Access{AccessWhole}, phases: 1,
	},
	{
		name: "a gather in an element-wise kernel", args: "%x: tensor<4x8xf32>, %t: tensor<4x1xi64>", results: "tensor<4x1xf32>",
		body: `%r = graph.fused %x, %t {kind = "elementwise"} {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<4x1xi64>):
    %g = graph.gather %a, %b : (tensor<4x8xf32>, tensor<4x1xi64>) -> tensor<4x1xf32>
    %e = graph.exp %g : tensor<4x1xf32>
    graph.yield %e : tensor<4x1xf32>
  } : (tensor<4x8xf32>, tensor<4x1xi64>) -> tensor<4x1xf32>
  return %r : tensor<4x1xf32>`,
		err: "'graph.gather' op reads its operand at columns it loads, so it shares a kernel only with a reduction over the last axis",
	},
	{
		name: "a gather along the rows in a row kernel", args: "%x: tensor<4x8xf32>, %t: tensor<1x8xi64>", results: "(tensor<4x1xf32>, tensor<1x8xf32>)",
		body: `%r:2 = graph.fused %x, %t {kind = "row"} {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<1x8xi64>):
    %s = graph.reduce_sum %a {axes = [-1], keepdim = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
    %g = graph.gather %a, %b {axis = 0} : (tensor<4x8xf32>, tensor<1x8xi64>) -> tensor<1x8xf32>
    graph.yield %s, %g : tensor<4x1xf32>, tensor<1x8xf32>
  } : (tensor<4x8xf32>, tensor<1x8xi64>) -> (tensor<4x1xf32>, tensor<1x8xf32>)
  return %r#0, %r#1 : tensor<4x1xf32>, tensor<1x8xf32>`,
		err: "'graph.gather' op gathers along axis 0, not the last, so a row kernel cannot read it as one element per row",
	},
	{
		name: "a gather of a weight in a row kernel", args: "%x: tensor<4x8xf32>, %w: tensor<4x8xf32>, %t: tensor<4x1xi64>", results: "(tensor<4x1xf32>, tensor<4x1xf32>)",
		body: `%r:2 = graph.fused %x, %w, %t {kind = "row"} {
  ^bb0(%a: tensor<4x8xf32>, %w2: tensor<4x8xf32>, %b: tensor<4x1xi64>):
    %s = graph.reduce_sum %a {axes = [-1], keepdim = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
    %g = graph.gather %s, %b : (tensor<4x1xf32>, tensor<4x1xi64>) -> tensor<4x1xf32>
    graph.yield %s, %g : tensor<4x1xf32>, tensor<4x1xf32>
  } : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x1xi64>) -> (tensor<4x1xf32>, tensor<4x1xf32>)
  return %r#0, %r#1 : tensor<4x1xf32>, tensor<4x1xf32>`,
		err: "'graph.gather' op reads operand #0 as full rows, but in the rows [4, 8] it would be per-row [R..., 1]",
	},
	{
		name: "a composite op", args: "%x: tensor<4x8xf32>", results: "tensor<4x8xf32>",
		body: `%r = graph.fused %x {kind = "row"} {
  ^bb0(%a: tensor<4x8xf32>):
    %m = graph.softmax %a : tensor<4x8xf32>
    graph.yield %m : tensor<4x8xf32>
  } : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>`,
		err: "'graph.softmax' op is a composite op: decompose it into primitives before it becomes part of a kernel",
	},
	{
		name: "a matmul with an epilogue", args: "%x: tensor<?x8xf32>, %w: tensor<2x8xf32>, %b: tensor<2xf32>, %r: tensor<?x2xf32>", results: "tensor<?x2xf32>",
		body: `%y = graph.fused %x, %w, %b, %r {kind = "matmul"} {
  ^bb0(%a: tensor<?x8xf32>, %v: tensor<2x8xf32>, %c: tensor<2xf32>, %d: tensor<?x2xf32>):
    %m = graph.matmul %a, %v {transpose_b = true} : (tensor<?x8xf32>, tensor<2x8xf32>) -> tensor<?x2xf32>
    %e = graph.add %m, %c : (tensor<?x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
    %f = graph.add %e, %d : tensor<?x2xf32>
    graph.yield %f : tensor<?x2xf32>
  } : (tensor<?x8xf32>, tensor<2x8xf32>, tensor<2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  return %y : tensor<?x2xf32>`,
		kind: KernelMatMul, shape: []int64{ir.Dynamic, 2},
		operands: []Access{AccessWhole, AccessWhole, AccessBroadcast, AccessFull}, outs: []Access{AccessFull}, phases: 1,
	},
	{
		name: "a matmul with a dequantize prologue", args: "%x: tensor<4x8xbf16>, %q: tensor<2x8xi8>", results: "tensor<4x2xbf16>",
		body: `%r = graph.fused %x, %q {kind = "matmul"} {
  ^bb0(%a: tensor<4x8xbf16>, %b: tensor<2x8xi8>):
    %w = graph.cast %b : (tensor<2x8xi8>) -> tensor<2x8xbf16>
    %m = graph.matmul %a, %w {transpose_b = true} : (tensor<4x8xbf16>, tensor<2x8xbf16>) -> tensor<4x2xbf16>
    graph.yield %m : tensor<4x2xbf16>
  } : (tensor<4x8xbf16>, tensor<2x8xi8>) -> tensor<4x2xbf16>
  return %r : tensor<4x2xbf16>`,
		kind: KernelMatMul, shape: []int64{4, 2},
		operands: []Access{AccessWhole, AccessWhole}, outs: []Access{AccessFull}, phases: 1,
	},
	{
		name: "a matmul with a prologue", args: "%x: tensor<4x8xf32>, %w: tensor<8x2xf32>", results: "tensor<4x2xf32>",
		body: `%r = graph.fused %x, %w {kind = "matmul"} {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>):
    %e = graph.exp %a : tensor<4x8xf32>
    %m = graph.matmul %e, %b : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
    graph.yield %m : tensor<4x2xf32>
  } : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  return %r : tensor<4x2xf32>`,
		err: "'graph.matmul' op reads its operands from memory, through views of them or converting them as it loads them (a kernel input seen through views and casts that only matmuls read), but operand #0 is computed in the kernel",
	},
	{
		name: "a matmul epilogue broadcast beyond its result", args: "%x: tensor<4x8xf32>, %w: tensor<8x2xf32>, %z: tensor<3x4x2xf32>", results: "tensor<3x4x2xf32>",
		body: `%r = graph.fused %x, %w, %z {kind = "matmul"} {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>, %c: tensor<3x4x2xf32>):
    %m = graph.matmul %a, %b : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
    %e = graph.add %m, %c : (tensor<4x2xf32>, tensor<3x4x2xf32>) -> tensor<3x4x2xf32>
    graph.yield %e : tensor<3x4x2xf32>
  } : (tensor<4x8xf32>, tensor<8x2xf32>, tensor<3x4x2xf32>) -> tensor<3x4x2xf32>
  return %r : tensor<3x4x2xf32>`,
		err: "a matmul kernel writes results of its matmul's shape [4, 2], but result #0 has shape [3, 4, 2]",
	},
	{
		name: "rows of two lengths", args: "%x: tensor<4x8xf32>, %y: tensor<4x6xf32>", results: "(tensor<4xf32>, tensor<4xf32>)",
		body: `%r:2 = graph.fused %x, %y {kind = "row"} {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<4x6xf32>):
    %s = graph.reduce_sum %a {axes = [-1]} : (tensor<4x8xf32>) -> tensor<4xf32>
    %t = graph.reduce_sum %b {axes = [-1]} : (tensor<4x6xf32>) -> tensor<4xf32>
    graph.yield %s, %t : tensor<4xf32>, tensor<4xf32>
  } : (tensor<4x8xf32>, tensor<4x6xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return %r#0, %r#1 : tensor<4xf32>, tensor<4xf32>`,
		err: "'graph.reduce_sum' op reduces rows of [4, 6], but the kernel's rows are [4, 8]",
	},
	{
		name: "a row kernel cannot write a weight", args: "%x: tensor<4x8xf32>, %w: tensor<8xbf16>", results: "(tensor<4xf32>, tensor<8xf32>)",
		body: `%r:2 = graph.fused %x, %w {kind = "row"} {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<8xbf16>):
    %c = graph.cast %b : (tensor<8xbf16>) -> tensor<8xf32>
    %y = graph.mul %a, %c : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %s = graph.reduce_sum %y {axes = [-1]} : (tensor<4x8xf32>) -> tensor<4xf32>
    graph.yield %s, %c : tensor<4xf32>, tensor<8xf32>
  } : (tensor<4x8xf32>, tensor<8xbf16>) -> (tensor<4xf32>, tensor<8xf32>)
  return %r#0, %r#1 : tensor<4xf32>, tensor<8xf32>`,
		err: "a row kernel writes full rows or per-row values, but result #1 would be a row-broadcast value of shape [8]",
	},
	{
		name: "an operand that is neither rows nor a broadcast of a row", args: "%x: tensor<2x3x8xf32>, %y: tensor<2x1x1xf32>", results: "tensor<2x3xf32>",
		body: `%r = graph.fused %x, %y {kind = "row"} {
  ^bb0(%a: tensor<2x3x8xf32>, %b: tensor<2x1x1xf32>):
    %z = graph.add %a, %b : (tensor<2x3x8xf32>, tensor<2x1x1xf32>) -> tensor<2x3x8xf32>
    %s = graph.reduce_sum %z {axes = [-1]} : (tensor<2x3x8xf32>) -> tensor<2x3xf32>
    graph.yield %s : tensor<2x3xf32>
  } : (tensor<2x3x8xf32>, tensor<2x1x1xf32>) -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>`,
		err: "reads a value of shape [2, 1, 1], which is none of full rows [2, 3, 8] (or rows broadcast over leading dimensions), a row-broadcast [8], per-row [2, 3, 1] or a scalar",
	},
	{
		name: "rows broadcast over a leading dimension", args: "%x: tensor<2x3x8xf32>, %y: tensor<3x8xf32>", results: "tensor<2x3xf32>",
		body: `%r = graph.fused %x, %y {kind = "row"} {
  ^bb0(%a: tensor<2x3x8xf32>, %b: tensor<3x8xf32>):
    %z = graph.add %a, %b : (tensor<2x3x8xf32>, tensor<3x8xf32>) -> tensor<2x3x8xf32>
    %s = graph.reduce_sum %z {axes = [-1]} : (tensor<2x3x8xf32>) -> tensor<2x3xf32>
    graph.yield %s : tensor<2x3xf32>
  } : (tensor<2x3x8xf32>, tensor<3x8xf32>) -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>`,
		kind: KernelRow, shape: []int64{2, 3, 8}, rowLen: 8, operands: []Access{AccessFull, AccessBroadcast}, outs: []Access{AccessPerRow}, phases: 2,
	},
}

func TestClassifyKernel(t *testing.T) {
	for _, c := range kernelCases {
		t.Run(c.name, func(t *testing.T) {
			src := fmt.Sprintf("func.func @f(%s) -> %s {\n  %s\n}\n", c.args, c.results, c.body)
			m := fzParse(t, src)
			fused := fzTopOps(m.Funcs()[0])[0]
			info, err := ClassifyKernel(fused)
			if c.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.kind, info.Kind)
			assert.Equal(t, c.shape, info.Shape)
			assert.Equal(t, c.rowLen, info.RowLen)
			assert.Equal(t, c.operands, info.Operands)
			assert.Equal(t, c.outs, info.Results)
			assert.Equal(t, c.buffers, info.RowBuffers)
			assert.Equal(t, c.phases, info.NumPhases)
			assert.Len(t, info.Phases, len(info.Ops))
			if c.kind == KernelRow {
				assert.NotEmpty(t, info.RowReductions)
			}
			for _, a := range fused.Region(0).Entry().Args {
				assert.NotEmpty(t, info.AccessOf(a))
			}
		})
	}
}

// TestPlanSchedule: the same row is one-pass on a large scratchpad and
// two-pass on a small one.
func TestPlanSchedule(t *testing.T) {
	info := KernelInfo{Kind: KernelRow, RowLen: 16384, RowBuffers: 1}
	h100, err := target.Lookup("h100")
	require.NoError(t, err)
	m3, err := target.Lookup("m3-max")
	require.NoError(t, err)
	assert.Equal(t, ScheduleOnePass, info.PlanSchedule(h100))
	assert.Equal(t, ScheduleTwoPass, info.PlanSchedule(m3))
	assert.Equal(t, ScheduleTwoPass, info.Schedule)
	info.RowLen = 8192 // exactly 32 KiB: fits
	assert.Equal(t, ScheduleOnePass, info.PlanSchedule(m3))
	info.RowBuffers = 0
	info.RowLen = 1 << 20
	assert.Equal(t, ScheduleOnePass, info.PlanSchedule(m3))
	ew := KernelInfo{Kind: KernelElementwise}
	assert.Equal(t, "", ew.PlanSchedule(m3))
}

// everyOp is one function per op of the graph dialect (one op each, the
// constant aside), as lowering meets them when fuse left them alone.
var everyOp = func() []string {
	var out []string
	f := func(args, results, body string) {
		out = append(out, fmt.Sprintf("func.func @f(%s) -> %s {\n  %s\n}\n", args, results, body))
	}
	for _, u := range []string{"neg", "abs", "exp", "exp2", "log", "log2", "log1p", "expm1", "sqrt", "rsqrt", "reciprocal",
		"tanh", "sigmoid", "silu", "gelu", "relu", "sin", "cos", "floor", "ceil", "round"} {
		f("%x: tensor<4x8xbf16>", "tensor<4x8xbf16>", fmt.Sprintf("%%y = graph.%s %%x : tensor<4x8xbf16>\n  return %%y : tensor<4x8xbf16>", u))
	}
	for _, b := range []string{"add", "sub", "mul", "div", "max", "min", "pow", "logaddexp", "logaddexp2"} {
		f("%x: tensor<4x8xf16>, %w: tensor<8xf16>", "tensor<4x8xf16>",
			fmt.Sprintf("%%y = graph.%s %%x, %%w : (tensor<4x8xf16>, tensor<8xf16>) -> tensor<4x8xf16>\n  return %%y : tensor<4x8xf16>", b))
	}
	f("%x: tensor<4x8xf32>, %w: tensor<4x1xf32>", "tensor<4x8xi1>",
		`%y = graph.cmp %x, %w {predicate = "lt"} : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xi1>
  return %y : tensor<4x8xi1>`)
	f("%c: tensor<4x8xi1>, %x: tensor<4x8xi32>, %w: tensor<i32>", "tensor<4x8xi32>",
		`%y = graph.select %c, %x, %w : (tensor<4x8xi1>, tensor<4x8xi32>, tensor<i32>) -> tensor<4x8xi32>
  return %y : tensor<4x8xi32>`)
	f("%x: tensor<4x8xf32>", "tensor<4x8xf32>", "%y = graph.clamp %x {min = -1.0 : f32, max = 1.0 : f32} : tensor<4x8xf32>\n  return %y : tensor<4x8xf32>")
	f("%x: tensor<4x8xf32>", "tensor<4x8xbf16>", "%y = graph.cast %x : (tensor<4x8xf32>) -> tensor<4x8xbf16>\n  return %y : tensor<4x8xbf16>")
	for _, r := range []string{"reduce_sum", "reduce_max", "reduce_min", "reduce_mean"} {
		f("%x: tensor<4x8xbf16>", "tensor<4x1xbf16>", fmt.Sprintf(
			"%%y = graph.%s %%x {axes = [-1], keepdim = true} : (tensor<4x8xbf16>) -> tensor<4x1xbf16>\n  return %%y : tensor<4x1xbf16>", r))
		f("%x: tensor<3x4x8xf32>", "tensor<1x1x8xf32>", fmt.Sprintf(
			"%%y = graph.%s %%x {axes = [0, 1], keepdim = true} : (tensor<3x4x8xf32>) -> tensor<1x1x8xf32>\n  return %%y : tensor<1x1x8xf32>", r))
		f("%x: tensor<4x8xf32>", "tensor<8xf32>", fmt.Sprintf("%%y = graph.%s %%x {axes = [0]} : (tensor<4x8xf32>) -> tensor<8xf32>\n  return %%y : tensor<8xf32>", r))
	}
	for _, axis := range []string{"-1", "0"} {
		f("%x: tensor<4x8xbf16>, %w: tensor<8xbf16>", "tensor<4x8xbf16>", fmt.Sprintf(
			"%%y = graph.rmsnorm %%x, %%w {axis = %s} : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>\n  return %%y : tensor<4x8xbf16>",
			map[string]string{"-1": "-1", "0": "1"}[axis]))
		f("%x: tensor<4x8xf32>, %w: tensor<4xf32>, %b: tensor<4xf32>", "tensor<4x8xf32>", fmt.Sprintf(
			"%%y = graph.layernorm %%x, %%w, %%b {axis = %s} : (tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4x8xf32>\n  return %%y : tensor<4x8xf32>",
			map[string]string{"-1": "0", "0": "-2"}[axis]))
		for _, s := range []string{"softmax", "log_softmax"} {
			f("%x: tensor<?x8xf16>", "tensor<?x8xf16>", fmt.Sprintf("%%y = graph.%s %%x {axis = %s} : tensor<?x8xf16>\n  return %%y : tensor<?x8xf16>", s,
				map[string]string{"-1": "-1", "0": "1"}[axis]))
		}
		f("%x: tensor<4x8xf32>", "tensor<4xf32>", fmt.Sprintf("%%y = graph.logsumexp %%x {axis = %s} : (tensor<4x8xf32>) -> tensor<4xf32>\n  return %%y : tensor<4xf32>",
			map[string]string{"-1": "-1", "0": "1"}[axis]))
	}
	f("%x: tensor<4x8xf32>", "tensor<1x8xf32>", "%y = graph.logsumexp %x {axis = 0, keepdim = true} : (tensor<4x8xf32>) -> tensor<1x8xf32>\n  return %y : tensor<1x8xf32>")
	f("%x: tensor<4x8xf32>", "tensor<4x8xui8>", "%y = graph.quantize %x {scale = 0.5 : f32, zero_point = 128} : (tensor<4x8xf32>) -> tensor<4x8xui8>\n  return %y : tensor<4x8xui8>")
	f("%x: tensor<4x8xf32>, %s: tensor<8xf32>, %z: tensor<8xi32>", "tensor<4x8xi8>",
		"%y = graph.quantize %x, %s, %z : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xi32>) -> tensor<4x8xi8>\n  return %y : tensor<4x8xi8>")
	f("%x: tensor<4x8xf32>, %s: tensor<4xf32>, %z: tensor<4xi32>", "tensor<4x8xi8>",
		"%y = graph.quantize %x, %s, %z {axis = 0} : (tensor<4x8xf32>, tensor<4xf32>, tensor<4xi32>) -> tensor<4x8xi8>\n  return %y : tensor<4x8xi8>")
	f("%x: tensor<4x8xui8>", "tensor<4x8xf32>", "%y = graph.dequantize %x {scale = 0.5 : f32, zero_point = 128} : (tensor<4x8xui8>) -> tensor<4x8xf32>\n  return %y : tensor<4x8xf32>")
	f("%x: tensor<4x8xi32>", "tensor<4x8xi8>", "%y = graph.requantize %x {in_scale = 0.25 : f32, scale = 0.5 : f32, zero_point = -3} : (tensor<4x8xi32>) -> tensor<4x8xi8>\n  return %y : tensor<4x8xi8>")
	f("%x: tensor<4x8xf32>", "tensor<32xf32>", "%y = graph.reshape %x : (tensor<4x8xf32>) -> tensor<32xf32>\n  return %y : tensor<32xf32>")
	f("%x: tensor<4x8xf32>", "tensor<8x4xf32>", "%y = graph.transpose %x {perm = [1, 0]} : (tensor<4x8xf32>) -> tensor<8x4xf32>\n  return %y : tensor<8x4xf32>")
	f("%x: tensor<8xf32>", "tensor<4x8xf32>", "%y = graph.broadcast_to %x : (tensor<8xf32>) -> tensor<4x8xf32>\n  return %y : tensor<4x8xf32>")
	f("%x: tensor<4x8xf32>", "tensor<2x4xf32>", "%y = graph.slice %x {offsets = [1, 2], sizes = [2, 4]} : (tensor<4x8xf32>) -> tensor<2x4xf32>\n  return %y : tensor<2x4xf32>")
	f("%x: tensor<4x8xbf16>", "tensor<4x8xbf16>", "%y = graph.roll %x {shift = 3} : tensor<4x8xbf16>\n  return %y : tensor<4x8xbf16>")
	f("%x: tensor<4x8xbf16>, %t: tensor<4x3xi64>", "tensor<4x3xbf16>",
		"%y = graph.gather %x, %t : (tensor<4x8xbf16>, tensor<4x3xi64>) -> tensor<4x3xbf16>\n  return %y : tensor<4x3xbf16>")
	f("%x: tensor<4x8xf32>, %z: tensor<4x2xf32>", "tensor<4x10xf32>",
		"%y = graph.concat %x, %z {axis = 1} : (tensor<4x8xf32>, tensor<4x2xf32>) -> tensor<4x10xf32>\n  return %y : tensor<4x10xf32>")
	f("%x: tensor<4x8xbf16>, %z: tensor<2x8xbf16>", "tensor<4x2xbf16>",
		"%y = graph.matmul %x, %z {transpose_b = true} : (tensor<4x8xbf16>, tensor<2x8xbf16>) -> tensor<4x2xbf16>\n  return %y : tensor<4x2xbf16>")
	return out
}()

// TestWrapKernelEveryOp wraps every op as lowering does with an op fuse
// left alone, and checks that each kernel classifies and that the program
// still computes the same.
func TestWrapKernelEveryOp(t *testing.T) {
	tg, err := target.Lookup("h100")
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, src := range everyOp {
		m := fzParse(t, src)
		fn := m.Funcs()[0]
		op := fzTopOps(fn)[0]
		name := op.Name()
		seen[name] = true
		t.Run(strings.TrimPrefix(name, "graph.")+"/"+strings.Split(src, "\n")[1], func(t *testing.T) {
			kernels, err := WrapKernel(op, tg)
			require.NoError(t, err)
			require.NotEmpty(t, kernels)
			require.NoError(t, ir.Verify(m.Operation), ir.Print(m.Operation, ir.PrintOptions{}))
			for _, top := range fzTopOps(fn) {
				require.Equal(t, graph.OpFused, top.Name(), "every op is in a kernel:\n%s", ir.Print(m.Operation, ir.PrintOptions{}))
				info, err := ClassifyKernel(top)
				require.NoError(t, err, ir.Print(m.Operation, ir.PrintOptions{}))
				assert.Equal(t, ir.StringAttr(info.Kind), top.Attr("kind"))
				for _, inner := range info.Ops {
					assert.False(t, IsComposite(inner), "composite %s left in a kernel", inner.Name())
				}
			}
			// the wrapped program computes what the op computes
			before := fzParse(t, src)
			fzSameResults(t, before.Funcs()[0], fn)
		})
	}
	for _, d := range ir.RegisteredOps() {
		// graph.index_copy writes an argument in place: lowering launches
		// its kernel directly (lowering/index_copy_test.go)
		if strings.HasPrefix(d.Name, "graph.") && d.Name != graph.OpFused && d.Name != graph.OpYield && d.Name != graph.OpConstant && d.Name != graph.OpIndexCopy {
			assert.True(t, seen[d.Name], "no WrapKernel case for %s", d.Name)
		}
	}
}

// TestWrapKernelSplitsANormalisationAlongTheFirstAxis: rmsnorm along axis
// 0 is a transpose, a row kernel and a transpose, and the transposes are
// the index maps of the row kernel's loads and stores.
func TestWrapKernelSplitsANormalisationAlongTheFirstAxis(t *testing.T) {
	src := `func.func @f(%x: tensor<4x8xbf16>, %w: tensor<4xbf16>) -> tensor<4x8xbf16> {
  %y = graph.rmsnorm %x, %w {axis = 0} : (tensor<4x8xbf16>, tensor<4xbf16>) -> tensor<4x8xbf16>
  return %y : tensor<4x8xbf16>
}`
	m := fzParse(t, src)
	fn := m.Funcs()[0]
	kernels, err := WrapKernel(fzTopOps(fn)[0], nil)
	require.NoError(t, err)
	var kinds []string
	for _, k := range kernels {
		kinds = append(kinds, string(k.Attr("kind").(ir.StringAttr)))
	}
	// the row kernel reads x through the first transpose and stores its
	// result through the second (passes/outviews.go)
	assert.Equal(t, []string{"row"}, kinds, ir.Print(m.Operation, ir.PrintOptions{}))
	fzSameResults(t, fzParse(t, src).Funcs()[0], fn)
}

// TestUnitReductionIsPerRowWork: logsumexp drops its axis by reducing the
// per-row result over its unit axis; that reduction is per-row work, not a
// third pass over the rows.
func TestUnitReductionIsPerRowWork(t *testing.T) {
	m := fzParse(t, `func.func @f(%x: tensor<4x16xf32>) -> tensor<4xf32> {
  %l = graph.logsumexp %x : (tensor<4x16xf32>) -> tensor<4xf32>
  return %l : tensor<4xf32>
}`)
	fzPipeline(t, m, "fuse", fzCtx(t, "cpu"))
	ops := fzTopOps(m.Funcs()[0])
	require.Len(t, ops, 1)
	info, err := ClassifyKernel(ops[0])
	require.NoError(t, err)
	require.Len(t, info.RowReductions, 2)
	assert.Equal(t, graph.OpReduceMax, info.RowReductions[0].Name())
	assert.Equal(t, graph.OpReduceSum, info.RowReductions[1].Name())
	last := info.Ops[len(info.Ops)-1]
	assert.Equal(t, graph.OpReduceMax, last.Name())
	assert.NotContains(t, info.RowReductions, last)
	assert.Equal(t, AccessPerRow, info.AccessOf(last.Operand(0)))
	assert.Equal(t, []Access{AccessPerRow}, info.Results)
	assert.Equal(t, 3, info.NumPhases)
	assert.Equal(t, 1, info.RowBuffers)
}
