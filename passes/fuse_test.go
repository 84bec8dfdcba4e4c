package passes

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/ir"
)

// fzO2Fusion is the -O2 pipeline up to fusion.
const fzO2Fusion = "canonicalize,cse,legalize-numerics,decompose,fuse"

// TestExamplesAreOneKernel checks what fusion is for: each of these
// programs becomes a single kernel.
func TestExamplesAreOneKernel(t *testing.T) {
	cases := []struct {
		file    string
		kind    KernelKind
		results int
		rowLen  int64
	}{
		{"add_rmsnorm.tir", KernelRow, 2, 8192},
		{"rms_silu_mul.tir", KernelRow, 1, 8192},
		{"attention_softmax.tir", KernelRow, 1, 4096},
		{"swiglu.tir", KernelElementwise, 1, 0},
		{"logsumexp.tir", KernelRow, 2, 4096},
		{"naive_logaddexp.tir", KernelElementwise, 1, 0},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			src := fzReadFile(t, "../examples/"+c.file)
			m := fzParse(t, src)
			fzPipeline(t, m, fzO2Fusion, fzCtx(t, "h100"))
			fn := m.Funcs()[0]
			ops := fzTopOps(fn)
			require.Equal(t, []string{graph.OpFused}, fzNames(ops), ir.Print(m.Operation, ir.PrintOptions{}))
			fused := ops[0]
			assert.Equal(t, c.results, fused.NumResults())
			info, err := ClassifyKernel(fused)
			require.NoError(t, err)
			assert.Equal(t, c.kind, info.Kind)
			assert.Equal(t, c.rowLen, info.RowLen)
			assert.Equal(t, ir.StringAttr(c.kind), fused.Attr("kind"))
			if c.kind == KernelRow {
				assert.Equal(t, ir.IntAttr{Value: c.rowLen, Type: ir.I64Type}, fused.Attr("row_len"))
				assert.Equal(t, ir.StringAttr(ScheduleOnePass), fused.Attr("schedule"))
			}
			// every result of the function comes out of the kernel
			for _, v := range fn.Return().Operands() {
				assert.Equal(t, fused, v.DefiningOp())
			}
		})
	}
}

// TestExamplesDifferential checks that decompose and fuse keep the
// meaning of every example, on random and extreme inputs.
func TestExamplesDifferential(t *testing.T) {
	files := []string{"add_rmsnorm.tir", "attention_softmax.tir", "logsumexp.tir", "naive_logaddexp.tir",
		"quantize_activations.tir", "rms_silu_mul.tir", "swiglu.tir"}
	for _, f := range files {
		for _, pipeline := range []string{"decompose", "decompose,fuse", "fuse", "decompose,fuse,canonicalize,cse,dce"} {
			t.Run(f+"/"+pipeline, func(t *testing.T) {
				worst := fzDiff(t, fzReadExample(t, f), pipeline, fzDiffBound)
				t.Logf("largest difference: %v ULPs", worst)
			})
		}
	}
}

// TestLitInputsDifferential runs the same check on the inputs of the
// fusion and decompose lit tests.
func TestLitInputsDifferential(t *testing.T) {
	for _, dir := range []string{"fusion", "decompose"} {
		inputs := fzLitInputs(t, dir)
		names := make([]string, 0, len(inputs))
		for n := range inputs {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, name := range names {
			src := inputs[name]
			if !fzHasFuncs(src) || strings.Contains(src, "expected-error") {
				continue
			}
			t.Run(dir+"/"+name, func(t *testing.T) {
				fzDiff(t, fzSmallShapes.Replace(src), "decompose,fuse", fzDiffBound)
			})
		}
	}
}

// TestFuseIsDeterministic compiles the same input twice.
func TestFuseIsDeterministic(t *testing.T) {
	src := fzReadFile(t, "../examples/quantize_activations.tir") + fzReadFile(t, "../examples/add_rmsnorm.tir")
	var outs []string
	for range 3 {
		m := fzParse(t, src)
		ctx := fzCtx(t, "cpu")
		fzPipeline(t, m, fzO2Fusion, ctx)
		outs = append(outs, ir.Print(m.Operation, ir.PrintOptions{DebugInfo: true})+strings.Join(fzMessages(ctx.Diags.List), "\n"))
	}
	assert.Equal(t, outs[0], outs[1])
	assert.Equal(t, outs[0], outs[2])
}

// fuseCase is one fuse test: the IR in, the kernels out (the names of the
// top-level ops after fuse), and remarks that must be among those emitted.
type fuseCase struct {
	name    string
	src     string
	opts    string // pass options, "{max-ops=3}"
	target  string
	top     []string
	remarks []string
}

var fuseCases = []fuseCase{
	{
		name: "elementwise chain with a broadcast and a splat constant",
		src: `func.func @f(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %c = graph.constant dense<2.0> : tensor<f32>
  %y = graph.add %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %z = graph.mul %y, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %r = graph.relu %z : tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}`,
		top: []string{"graph.fused"},
		remarks: []string{"fused 'graph.mul' with its producer 'graph.add' at 3:3", "cloned splat constant into 1 kernel",
			"formed an elementwise kernel of 3 ops over [4, 8]: reads 2 tensors, writes 1 tensor"},
	},
	{
		name: "matmul takes an epilogue, not a prologue",
		src: `func.func @f(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %a = graph.exp %x : tensor<4x8xf32>
  %m = graph.matmul %a, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %b = graph.relu %m : tensor<4x8xf32>
  %c = graph.neg %b : tensor<4x8xf32>
  return %c : tensor<4x8xf32>
}`,
		top: []string{"graph.exp", "graph.fused"},
		remarks: []string{
			"did not fuse 'graph.matmul' with its producer 'graph.exp' at 2:3: 'graph.matmul' op reads its operands from memory, through views of them or converting them as it loads them (a kernel input seen through views and casts that only matmuls read), but operand #0 is computed in the kernel (at 3:3)",
			"fused 'graph.relu' with its producer 'graph.matmul' at 3:3",
			"fused 'graph.neg' with its producer 'graph.relu' at 4:3",
			"formed a matmul kernel of 3 ops over [4, 8]: reads 2 tensors, writes 1 tensor",
		},
	},
	{
		name: "a matmul takes the epilogue Tenstorrent applies in DST",
		src: `func.func @f(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %m = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %b = graph.relu %m : tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}`,
		target: "wormhole-n300",
		top:    []string{"graph.fused"},
		remarks: []string{
			"fused 'graph.relu' with its producer 'graph.matmul' at 2:3",
		},
	},
	{
		name: "a matmul on Tenstorrent refuses an epilogue using a value twice",
		src: `func.func @f(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %m = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %s = graph.sigmoid %m : tensor<4x8xf32>
  %b = graph.mul %m, %s : tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}`,
		target: "wormhole-n300",
		top:    []string{"graph.matmul", "graph.fused"},
		remarks: []string{
			"did not fuse 'graph.sigmoid' with its producer 'graph.matmul' at 2:3: the kernel would store 2 results; a matmul kernel on wormhole-n300 stores one",
		},
	},
	{
		name: "gate and up projections share a kernel",
		src: `func.func @f(%x: tensor<?x8xbf16>, %wg: tensor<16x8xbf16>, %wu: tensor<16x8xbf16>) -> tensor<?x16xbf16> {
  %g = graph.matmul %x, %wg {transpose_b = true} : (tensor<?x8xbf16>, tensor<16x8xbf16>) -> tensor<?x16xbf16>
  %u = graph.matmul %x, %wu {transpose_b = true} : (tensor<?x8xbf16>, tensor<16x8xbf16>) -> tensor<?x16xbf16>
  %s = graph.silu %g : tensor<?x16xbf16>
  %y = graph.mul %s, %u : tensor<?x16xbf16>
  return %y : tensor<?x16xbf16>
}`,
		top: []string{"graph.fused"},
		remarks: []string{
			"fused 'graph.silu' with its producer 'graph.matmul' at 2:3",
			"fused 'graph.mul' with its producer 'graph.silu' at 4:3",
			"fused 'graph.mul' with its producer 'graph.matmul' at 3:3",
			"formed a matmul kernel of 4 ops over [?, 16]: reads 3 tensors, writes 1 tensor",
		},
	},
	{
		name: "matmuls of different left operands stay apart",
		src: `func.func @f(%x: tensor<4x8xf32>, %z: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %a = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %b = graph.matmul %z, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %c = graph.add %a, %b : tensor<4x8xf32>
  return %c : tensor<4x8xf32>
}`,
		top: []string{"graph.matmul", "graph.fused"},
		remarks: []string{
			"fused 'graph.add' with its producer 'graph.matmul' at 2:3",
			"did not fuse 'graph.add' with its producer 'graph.matmul' at 3:3: 'graph.matmul' op shares a kernel only with matmuls of the same left operand, and the matmul at 2:3 reads another (at 3:3)",
		},
	},
	{
		name: "a matmul of several rows per matrix does not join a row kernel",
		src: `func.func @f(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4xf32> {
  %a = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %s = graph.reduce_sum %a {axes = [1]} : (tensor<4x8xf32>) -> tensor<4xf32>
  return %s : tensor<4xf32>
}`,
		top: []string{"graph.matmul", "graph.reduce_sum"},
		remarks: []string{
			"did not fuse 'graph.reduce_sum' with its producer 'graph.matmul' at 2:3: 'graph.reduce_sum' op reduces the rows of the matmul at 2:3, which has 4 rows per matrix; a matmul joins a row kernel only with one row per matrix (a decode step's scores), where a program reads the right operand once instead of once per row (at 3:3)",
		},
	},
	{
		name: "a decode step's scores join the row kernel that reduces them",
		src: `func.func @f(%q: tensor<4x1x8xf32>, %k: tensor<4x16x8xf32>) -> tensor<4x1x16xf32> {
  %s = graph.matmul %q, %k {transpose_b = true} : (tensor<4x1x8xf32>, tensor<4x16x8xf32>) -> tensor<4x1x16xf32>
  %e = graph.exp %s : tensor<4x1x16xf32>
  %t = graph.reduce_sum %e {axes = [2], keepdim = true} : (tensor<4x1x16xf32>) -> tensor<4x1x1xf32>
  %p = graph.div %e, %t : (tensor<4x1x16xf32>, tensor<4x1x1xf32>) -> tensor<4x1x16xf32>
  return %p : tensor<4x1x16xf32>
}`,
		top: []string{"graph.fused"},
		remarks: []string{
			"fused 'graph.exp' with its producer 'graph.matmul' at 2:3",
			"formed a row kernel of 4 ops over [4, 1, 16]: reads 2 tensors, writes 1 tensor",
		},
	},
	{
		name: "a row of dot products too long to keep on chip is not read twice",
		src: `func.func @f(%q: tensor<2x1x2xf32>, %k: tensor<2x524288x2xf32>) -> tensor<2x1x524288xf32> {
  %s = graph.matmul %q, %k {transpose_b = true} : (tensor<2x1x2xf32>, tensor<2x524288x2xf32>) -> tensor<2x1x524288xf32>
  %e = graph.exp %s : tensor<2x1x524288xf32>
  %t = graph.reduce_sum %e {axes = [2], keepdim = true} : (tensor<2x1x524288xf32>) -> tensor<2x1x1xf32>
  %p = graph.div %e, %t : (tensor<2x1x524288xf32>, tensor<2x1x1xf32>) -> tensor<2x1x524288xf32>
  return %p : tensor<2x1x524288xf32>
}`,
		target: "cpu",
		top:    []string{"graph.fused", "graph.div"},
		remarks: []string{
			"formed a row kernel of 3 ops over [2, 1, 524288]: reads 2 tensors, writes 2 tensors",
			"did not fuse 'graph.div' with its producer 'graph.reduce_sum' at 4:3: a row kernel over the matmul's rows would be two-pass on cpu (1 row buffer of 524288 f32, 2097152 bytes, against a scratchpad of 1048576), computing each dot product again for each read of the row",
		},
	},
	{
		name: "a matmul of one weight for every row does not join a row kernel",
		src: `func.func @f(%x: tensor<1x64xf32>, %w: tensor<32x64xf32>) -> tensor<1xf32> {
  %a = graph.matmul %x, %w {transpose_b = true} : (tensor<1x64xf32>, tensor<32x64xf32>) -> tensor<1x32xf32>
  %s = graph.reduce_sum %a {axes = [1]} : (tensor<1x32xf32>) -> tensor<1xf32>
  return %s : tensor<1xf32>
}`,
		top: []string{"graph.matmul", "graph.reduce_sum"},
		remarks: []string{
			"did not fuse 'graph.reduce_sum' with its producer 'graph.matmul' at 2:3: 'graph.reduce_sum' op reduces the rows of the matmul at 2:3, whose right operand is one matrix for every row; a row kernel would compute a row's dot products in one program reading the whole matrix, where a matmul kernel spreads them over many (at 3:3)",
		},
	},
	{
		name: "a matmul reads an operand of run-time batch extent from memory",
		src: `func.func @f(%x: tensor<?x4x2xf32>, %w: tensor<2x2xf32>) -> tensor<?x1x2xf32> {
  %s = graph.slice %x {offsets = [0, 1, 0], sizes = [-1, 1, 2]} : (tensor<?x4x2xf32>) -> tensor<?x1x2xf32>
  %m = graph.matmul %s, %w : (tensor<?x1x2xf32>, tensor<2x2xf32>) -> tensor<?x1x2xf32>
  return %m : tensor<?x1x2xf32>
}`,
		top: []string{"graph.slice", "graph.matmul"},
		remarks: []string{
			"did not fuse 'graph.matmul' with its producer 'graph.slice' at 2:3: 'graph.matmul' op reads operand #0 through 'graph.slice' at 2:3, whose batch extents [?] are not all static; a matmul kernel reads an operand with a run-time batch extent from memory (at 3:3)",
		},
	},
	{
		name: "on a GPU a decode step's scores stay a matmul kernel",
		src: `func.func @f(%q: tensor<4x1x8xf32>, %k: tensor<4x16x8xf32>) -> tensor<4x1xf32> {
  %s = graph.matmul %q, %k {transpose_b = true} : (tensor<4x1x8xf32>, tensor<4x16x8xf32>) -> tensor<4x1x16xf32>
  %t = graph.reduce_sum %s {axes = [2]} : (tensor<4x1x16xf32>) -> tensor<4x1xf32>
  return %t : tensor<4x1xf32>
}`,
		target: "h200",
		top:    []string{"graph.matmul", "graph.reduce_sum"},
		remarks: []string{
			"did not fuse 'graph.reduce_sum' with its producer 'graph.matmul' at 2:3: a matmul joins the row kernel over its rows on CPU targets only: on h200 a program would compute a row's dot products alone, which ran slower than a matmul kernel and a row kernel (docs/fusion.md)",
		},
	},
	{
		name: "a cycle through a barrier",
		src: `func.func @f(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %a = graph.exp %x : tensor<8x8xf32>
  %t = graph.matmul %a, %a : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %b = graph.add %a, %t : tensor<8x8xf32>
  return %b : tensor<8x8xf32>
}`,
		top: []string{"graph.exp", "graph.fused"},
		remarks: []string{
			"did not fuse 'graph.add' with its producer 'graph.exp' at 2:3: fusing them would create a cycle through 'graph.matmul' at 3:3",
			"fused 'graph.add' with its producer 'graph.matmul' at 3:3",
		},
	},
	{
		name: "max-ops",
		src: `func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  %a = graph.exp %x : tensor<8xf32>
  %b = graph.neg %a : tensor<8xf32>
  %c = graph.abs %b : tensor<8xf32>
  %d = graph.sqrt %c : tensor<8xf32>
  %e = graph.log %d : tensor<8xf32>
  return %e : tensor<8xf32>
}`,
		opts: "{max-ops=3}",
		top:  []string{"graph.fused", "graph.fused"},
		remarks: []string{
			"did not fuse 'graph.sqrt' with its producer 'graph.abs' at 4:3: the kernel would have 4 ops, more than max-ops = 3",
			"fused 'graph.log' with its producer 'graph.sqrt' at 5:3",
		},
	},
	{
		name: "a reduction over another axis takes its producers and consumers",
		src: `func.func @f(%x: tensor<4x8xf32>) -> tensor<8xf32> {
  %a = graph.exp %x : tensor<4x8xf32>
  %s = graph.reduce_sum %a {axes = [0]} : (tensor<4x8xf32>) -> tensor<8xf32>
  %l = graph.log %s : tensor<8xf32>
  return %l : tensor<8xf32>
}`,
		top: []string{"graph.fused"},
		remarks: []string{
			"formed a reduce kernel of 3 ops over [4, 8]: reads 1 tensor, writes 1 tensor",
		},
	},
	{
		name: "a producer read after a reduction over another axis stays apart",
		src: `func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = graph.exp %x : tensor<4x8xf32>
  %s = graph.reduce_sum %a {axes = [0], keepdim = true} : (tensor<4x8xf32>) -> tensor<1x8xf32>
  %y = graph.div %a, %s : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}`,
		top: []string{"graph.exp", "graph.reduce_sum", "graph.div"},
		remarks: []string{
			"did not fuse 'graph.reduce_sum' with its producer 'graph.exp' at 2:3: incompatible iteration space: 'graph.exp' op is a result of the kernel over [4, 8], the reduction's operand shape: a reduce kernel writes results over [1, 8] only (at 2:3)",
		},
	},
	{
		name: "a reduce kernel reads through views of what its reduction reads",
		src: `func.func @f(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %e = graph.exp %x : tensor<4x8xf32>
  %t = graph.transpose %e {perm = [1, 0]} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %s = graph.reduce_sum %t {axes = [0]} : (tensor<8x4xf32>) -> tensor<4xf32>
  return %s : tensor<4xf32>
}`,
		top: []string{"graph.fused"},
		remarks: []string{
			"formed a reduce kernel of 3 ops over [8, 4]: reads 1 tensor, writes 1 tensor",
		},
	},
	{
		name: "two reductions over other axes are two kernels",
		src: `func.func @f(%x: tensor<4x6x8xf32>) -> tensor<8xf32> {
  %a = graph.reduce_sum %x {axes = [0]} : (tensor<4x6x8xf32>) -> tensor<6x8xf32>
  %b = graph.reduce_max %a {axes = [0]} : (tensor<6x8xf32>) -> tensor<8xf32>
  return %b : tensor<8xf32>
}`,
		top: []string{"graph.reduce_sum", "graph.reduce_max"},
		remarks: []string{
			"did not fuse 'graph.reduce_max' with its producer 'graph.reduce_sum' at 2:3: incompatible iteration space: 'graph.reduce_max' op is a second reduction over axes other than the last alone beside the one at 2:3: a reduce kernel has one (at 3:3)",
		},
	},
	{
		name: "a per-row value read along the row is not fused",
		src: `func.func @f(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %s = graph.reduce_sum %x {axes = [-1]} : (tensor<8x8xf32>) -> tensor<8xf32>
  %y = graph.mul %x, %s : (tensor<8x8xf32>, tensor<8xf32>) -> tensor<8x8xf32>
  return %y : tensor<8x8xf32>
}`,
		top: []string{"graph.reduce_sum", "graph.mul"},
		remarks: []string{"did not fuse 'graph.mul' with its producer 'graph.reduce_sum' at 2:3: incompatible iteration space: " +
			"'graph.mul' op cannot be computed over the rows [8, 8] as broadcasting defines it"},
	},
	{
		name: "a per-row value broadcast back over its rows is fused",
		src: `func.func @f(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %s = graph.reduce_sum %x {axes = [-1], keepdim = true} : (tensor<8x8xf32>) -> tensor<8x1xf32>
  %y = graph.mul %x, %s : (tensor<8x8xf32>, tensor<8x1xf32>) -> tensor<8x8xf32>
  return %y : tensor<8x8xf32>
}`,
		top:     []string{"graph.fused"},
		remarks: []string{"formed a row kernel of 2 ops over [8, 8]: reads 1 tensor, writes 1 tensor"},
	},
	{
		name: "reductions of the same rows share a kernel",
		src: `func.func @f(%x: tensor<6x16xf32>) -> (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) {
  %a = graph.reduce_max %x {axes = [-1]} : (tensor<6x16xf32>) -> tensor<6xf32>
  %b = graph.reduce_min %x {axes = [1]} : (tensor<6x16xf32>) -> tensor<6xf32>
  %c = graph.reduce_sum %x {axes = [-1]} : (tensor<6x16xf32>) -> tensor<6xf32>
  return %a, %b, %c : tensor<6xf32>, tensor<6xf32>, tensor<6xf32>
}`,
		top: []string{"graph.fused"},
		remarks: []string{"fused 'graph.reduce_min' with 'graph.reduce_max' at 2:3, which reads the same %x",
			"fused 'graph.reduce_sum' with 'graph.reduce_max' at 2:3, which reads the same %x",
			"planned one-pass: no row is kept between the 2 phases of the row kernel"},
	},
	{
		name: "a weight cast used by two kernels stays a kernel of its own",
		src: `func.func @f(%x: tensor<4x8xf32>, %y: tensor<2x8xf32>, %w: tensor<8xbf16>) -> (tensor<4x8xf32>, tensor<2x8xf32>) {
  %wf = graph.cast %w : (tensor<8xbf16>) -> tensor<8xf32>
  %a = graph.mul %x, %wf : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %b = graph.mul %y, %wf : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %a, %b : tensor<4x8xf32>, tensor<2x8xf32>
}`,
		top: []string{"graph.cast", "graph.mul", "graph.mul"},
		remarks: []string{"did not fuse 'graph.mul' with its producer 'graph.cast' at 2:3: incompatible iteration space: " +
			"an element-wise kernel writes results of one shape, but result #1 has shape [4, 8] and result #0 [8]"},
	},
	{
		name: "a long row on m3-max is planned two-pass",
		src: `func.func @f(%x: tensor<4x16384xf32>, %w: tensor<16384xf32>) -> tensor<4x16384xf32> {
  %p = graph.rmsnorm %x, %w {eps = 1.0e-05 : f32} : (tensor<4x16384xf32>, tensor<16384xf32>) -> tensor<4x16384xf32>
  return %p : tensor<4x16384xf32>
}`,
		target: "m3-max",
		top:    []string{"graph.fused"},
		remarks: []string{"planned two-pass: 1 row buffer of 16384 f32 (65536 bytes) does not fit the 32768-byte scratchpad " +
			"of m3-max, so the row is read from DRAM again after each reduction"},
	},
	{
		name: "a long softmax row on m3-max is planned online",
		src: `func.func @f(%x: tensor<4x16384xf32>) -> tensor<4x16384xf32> {
  %p = graph.softmax %x : tensor<4x16384xf32>
  return %p : tensor<4x16384xf32>
}`,
		target: "m3-max",
		top:    []string{"graph.fused"},
		remarks: []string{"planned online: 1 row buffer of 16384 f32 (65536 bytes) does not fit the 32768-byte scratchpad " +
			"of m3-max, so the max and the sum of exp are taken in one pass over the row, chunk by chunk, and each phase after them reads the row from DRAM again"},
	},
	{
		name: "a dense constant is read from memory",
		src: `func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %y = graph.add %x, %c : tensor<2xf32>
  return %y : tensor<2xf32>
}`,
		top: []string{"graph.constant", "graph.add"},
		remarks: []string{"did not fuse 'graph.add' with its producer 'graph.constant' at 2:3: " +
			"'graph.constant' holds a dense tensor, which kernels read from memory"},
	},
}

func TestFuseCases(t *testing.T) {
	for _, c := range fuseCases {
		t.Run(c.name, func(t *testing.T) {
			m := fzParse(t, c.src)
			tg := c.target
			if tg == "" {
				tg = "cpu"
			}
			ctx := fzCtx(t, tg)
			fzPipeline(t, m, "fuse"+c.opts, ctx)
			text := ir.Print(m.Operation, ir.PrintOptions{})
			assert.Equal(t, c.top, fzNames(fzTopOps(m.Funcs()[0])), text)
			msgs := fzMessages(ctx.Diags.List)
			for _, want := range c.remarks {
				found := false
				for _, got := range msgs {
					if strings.Contains(got, want) {
						found = true
					}
				}
				assert.True(t, found, "no remark %q among\n%s", want, strings.Join(msgs, "\n"))
			}
			for _, op := range fzTopOps(m.Funcs()[0]) {
				if op.Name() == graph.OpFused {
					_, err := ClassifyKernel(op)
					assert.NoError(t, err)
				}
			}
			fzDiff(t, c.src, "fuse"+c.opts, fzDiffBound)
		})
	}
}

// TestFuseReordersUsersOfAnEarlyResult: %u uses %a between the two ops of
// a kernel; the kernel goes where both its inputs are ready and %u after.
func TestFuseReordersUsersOfAnEarlyResult(t *testing.T) {
	src := `func.func @f(%x: tensor<8x8xf32>, %y: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %a = graph.exp %x : tensor<8x8xf32>
  %u = graph.matmul %a, %y : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %t = graph.reduce_sum %y {axes = [0], keepdim = true} : (tensor<8x8xf32>) -> tensor<1x8xf32>
  %b = graph.add %a, %t : (tensor<8x8xf32>, tensor<1x8xf32>) -> tensor<8x8xf32>
  return %u, %b : tensor<8x8xf32>, tensor<8x8xf32>
}`
	m := fzParse(t, src)
	fzPipeline(t, m, "fuse", fzCtx(t, "cpu"))
	assert.Equal(t, []string{"graph.reduce_sum", "graph.fused", "graph.matmul"}, fzNames(fzTopOps(m.Funcs()[0])),
		ir.Print(m.Operation, ir.PrintOptions{}))
	fzDiff(t, src, "fuse", 0)
}

// TestFuseRemarksOnlyWhenAsked: without --remarks=fusion fuse is silent.
func TestFuseRemarksOnlyWhenAsked(t *testing.T) {
	m := fzParse(t, fzReadFile(t, "../examples/rms_silu_mul.tir"))
	ctx := fzCtx(t, "cpu")
	ctx.Remarks = nil
	fzPipeline(t, m, "fuse", ctx)
	assert.Empty(t, ctx.Diags.List)
}

// TestFuseExplainsEveryAdjacentPair: every producer -> consumer pair of the
// input gets exactly one remark.
func TestFuseExplainsEveryAdjacentPair(t *testing.T) {
	src := `func.func @f(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>) {
  %a = graph.exp %x : tensor<4x8xf32>
  %m = graph.matmul %a, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %b = graph.add %a, %m : tensor<4x8xf32>
  %s = graph.reduce_sum %b {axes = [-1]} : (tensor<4x8xf32>) -> tensor<4xf32>
  %t = graph.transpose %m {perm = [1, 0]} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %u = graph.transpose %t {perm = [1, 0]} : (tensor<8x4xf32>) -> tensor<4x8xf32>
  return %u, %s : tensor<4x8xf32>, tensor<4xf32>
}`
	m := fzParse(t, src)
	ctx := fzCtx(t, "cpu")
	fzPipeline(t, m, "fuse", ctx)
	var pairs []string
	for _, msg := range fzMessages(ctx.Diags.List) {
		if strings.Contains(msg, "with its producer") {
			pairs = append(pairs, msg)
		}
	}
	// a->m, a->b, m->b, b->s, m->t, t->u
	assert.Len(t, pairs, 6, strings.Join(pairs, "\n"))
}

// TestFuseInsideExistingKernels: ops already in a graph.fused are left
// alone, and the graph.fused is a barrier.
func TestFuseLeavesExistingKernels(t *testing.T) {
	src := `func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %k = graph.fused %x {kind = "elementwise"} {
  ^bb0(%a: tensor<4xf32>):
    %e = graph.exp %a : tensor<4xf32>
    %n = graph.neg %e : tensor<4xf32>
    graph.yield %n : tensor<4xf32>
  } : (tensor<4xf32>) -> tensor<4xf32>
  %y = graph.abs %k : tensor<4xf32>
  return %y : tensor<4xf32>
}`
	m := fzParse(t, src)
	ctx := fzCtx(t, "cpu")
	fzPipeline(t, m, "fuse", ctx)
	assert.Equal(t, []string{"graph.fused", "graph.abs"}, fzNames(fzTopOps(m.Funcs()[0])))
	assert.Contains(t, fzMessages(ctx.Diags.List), "[fusion] did not fuse 'graph.abs' with its producer 'graph.fused' at 2:3: 'graph.fused' is a kernel already")
}

// TestFuseRowBuffers counts the rows a one-pass kernel keeps.
func TestFuseRowBuffers(t *testing.T) {
	cases := []struct {
		op      string
		buffers int
		phases  int
	}{
		{"graph.rmsnorm %x, %w", 1, 2},
		{"graph.layernorm %x, %w, %w", 1, 3},
	}
	for _, c := range cases {
		src := fmt.Sprintf(`func.func @f(%%x: tensor<4x8xbf16>, %%w: tensor<8xbf16>, %%z: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  %%n = %s : (tensor<4x8xbf16>, tensor<8xbf16>%s) -> tensor<4x8xbf16>
  %%y = graph.mul %%n, %%z : tensor<4x8xbf16>
  return %%y : tensor<4x8xbf16>
}`, c.op, strings.Repeat(", tensor<8xbf16>", strings.Count(c.op, ",")-1))
		m := fzParse(t, src)
		fzPipeline(t, m, "fuse", fzCtx(t, "cpu"))
		ops := fzTopOps(m.Funcs()[0])
		require.Len(t, ops, 1)
		info, err := ClassifyKernel(ops[0])
		require.NoError(t, err)
		assert.Equal(t, c.buffers, info.RowBuffers, c.op)
		assert.Equal(t, c.phases, info.NumPhases, c.op)
		assert.Equal(t, int64(c.buffers*8*4), info.RowBufferBytes())
	}
}
