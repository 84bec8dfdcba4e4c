package lowering

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/dialects/graph/randprog"
	"github.com/tensorforge/tensorforge/ir"
)

// reduceKernelCases are reductions over other axes than the last alone
// with element-wise producers and consumers: each one kernel.
var reduceKernelCases = []struct {
	name, src string
}{
	{"column-sum-of-exp-times-bias", `
func.func @f(%x: tensor<6x16xf32>, %b: tensor<16xf32>) -> tensor<16xf32> {
  %e = graph.exp %x : tensor<6x16xf32>
  %s = graph.reduce_sum %e {axes = [0]} : (tensor<6x16xf32>) -> tensor<16xf32>
  %y = graph.mul %s, %b : tensor<16xf32>
  return %y : tensor<16xf32>
}`},
	{"middle-axis-mean-of-squares-sqrt", `
func.func @f(%x: tensor<3x5x8xf32>) -> tensor<3x8xf32> {
  %q = graph.mul %x, %x : tensor<3x5x8xf32>
  %s = graph.reduce_mean %q {axes = [1]} : (tensor<3x5x8xf32>) -> tensor<3x8xf32>
  %r = graph.sqrt %s : tensor<3x8xf32>
  return %r : tensor<3x8xf32>
}`},
	{"bf16-max-over-tokens-keepdim-and-the-max-itself", `
func.func @f(%x: tensor<2x7x8xbf16>, %w: tensor<1x1x8xbf16>) -> (tensor<2x1x8xbf16>, tensor<2x1x8xbf16>) {
  %a = graph.abs %x : tensor<2x7x8xbf16>
  %m = graph.reduce_max %a {axes = [1], keepdim = true} : (tensor<2x7x8xbf16>) -> tensor<2x1x8xbf16>
  %s = graph.mul %m, %w : (tensor<2x1x8xbf16>, tensor<1x1x8xbf16>) -> tensor<2x1x8xbf16>
  return %m, %s : tensor<2x1x8xbf16>, tensor<2x1x8xbf16>
}`},
	{"sum-over-two-leading-axes-of-a-broadcast-product", `
func.func @f(%x: tensor<4x3x8xf32>, %g: tensor<3x1xf32>) -> tensor<8xf32> {
  %p = graph.mul %x, %g : (tensor<4x3x8xf32>, tensor<3x1xf32>) -> tensor<4x3x8xf32>
  %s = graph.reduce_sum %p {axes = [0, 1]} : (tensor<4x3x8xf32>) -> tensor<8xf32>
  %n = graph.neg %s : tensor<8xf32>
  return %n : tensor<8xf32>
}`},
	{"sum-over-a-transposed-input", `
func.func @f(%x: tensor<6x4x8xf32>) -> tensor<4x8xf32> {
  %t = graph.transpose %x {perm = [1, 0, 2]} : (tensor<6x4x8xf32>) -> tensor<4x6x8xf32>
  %e = graph.exp %t : tensor<4x6x8xf32>
  %s = graph.reduce_sum %e {axes = [1]} : (tensor<4x6x8xf32>) -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}`},
	{"mean-over-tokens-of-heads-viewed-from-a-projection", `
func.func @f(%x: tensor<5x32xbf16>, %b: tensor<4x1xbf16>) -> tensor<4x8xbf16> {
  %h = graph.reshape %x : (tensor<5x32xbf16>) -> tensor<5x4x8xbf16>
  %q = graph.mul %h, %h : tensor<5x4x8xbf16>
  %m = graph.reduce_mean %q {axes = [0]} : (tensor<5x4x8xbf16>) -> tensor<4x8xbf16>
  %y = graph.add %m, %b : (tensor<4x8xbf16>, tensor<4x1xbf16>) -> tensor<4x8xbf16>
  return %y : tensor<4x8xbf16>
}`},
	{"max-over-a-strided-slice-with-a-broadcast-weight", `
func.func @f(%x: tensor<10x16xf32>, %w: tensor<16xf32>) -> tensor<16xf32> {
  %s = graph.slice %x {offsets = [1, 0], sizes = [4, 16], strides = [2, 1]} : (tensor<10x16xf32>) -> tensor<4x16xf32>
  %wb = graph.broadcast_to %w : (tensor<16xf32>) -> tensor<4x16xf32>
  %p = graph.mul %s, %wb : tensor<4x16xf32>
  %m = graph.reduce_max %p {axes = [0]} : (tensor<4x16xf32>) -> tensor<16xf32>
  return %m : tensor<16xf32>
}`},
	{"an-input-and-its-transpose", `
func.func @f(%x: tensor<8x8xf32>) -> tensor<8xf32> {
  %t = graph.transpose %x {perm = [1, 0]} : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %a = graph.sub %x, %t : tensor<8x8xf32>
  %s = graph.reduce_sum %a {axes = [0]} : (tensor<8x8xf32>) -> tensor<8xf32>
  return %s : tensor<8xf32>
}`},
	{"column-sum-of-a-transposed-exp", `
func.func @f(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %e = graph.exp %x : tensor<4x8xf32>
  %t = graph.transpose %e {perm = [1, 0]} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %s = graph.reduce_sum %t {axes = [0]} : (tensor<8x4xf32>) -> tensor<4xf32>
  return %s : tensor<4xf32>
}`},
	{"run-time-rows-kept", `
func.func @f(%x: tensor<?x4x8xf32>) -> tensor<?x8xf32> {
  %t = graph.tanh %x : tensor<?x4x8xf32>
  %s = graph.reduce_sum %t {axes = [1]} : (tensor<?x4x8xf32>) -> tensor<?x8xf32>
  return %s : tensor<?x8xf32>
}`},
}

// TestDiffReduceKernels: each case is one reduce kernel (the producers
// computed in the loop over the reduced elements, the consumers after it),
// and its results are the graph interpreter's in both rounding modes.
func TestDiffReduceKernels(t *testing.T) {
	pipeline := "decompose,fuse,lower-to-loops,sram-alloc"
	for _, c := range reduceKernelCases {
		t.Run(c.name, func(t *testing.T) {
			runDiff(t, diffCase{name: c.name, src: c.src, pipeline: pipeline, target: "h200", dyn: 3})
			m := lowerText(t, c.src, pipeline, "h200")
			text := ir.Print(m.Operation, ir.PrintOptions{})
			require.Equal(t, 1, strings.Count(text, "loop.kernel {"), text)
			require.Contains(t, text, `kind = "generic"`, text)               // a reduce kernel
			require.Equal(t, 0, strings.Count(text, "loop.alloc_dram"), text) // nothing between kernels
		})
	}
}

// TestReduceKernelChunks: a reduction's long result row is spread over
// instances of equal chunks, and still computes the graph interpreter's
// values. On a GPU each thread of a chunk reads a vector of the target's
// 16 bytes of every row (1000 = 5 x 200, by vectors of 4 f32); with a
// result row that is no multiple of a vector, one element (1001 = 7 x
// 143).
func TestReduceKernelChunks(t *testing.T) {
	src := `
func.func @f(%x: tensor<8x1000xf32>) -> tensor<1000xf32> {
  %e = graph.exp %x : tensor<8x1000xf32>
  %s = graph.reduce_sum %e {axes = [0]} : (tensor<8x1000xf32>) -> tensor<1000xf32>
  return %s : tensor<1000xf32>
}
func.func @odd(%x: tensor<8x1001xbf16>) -> tensor<1001xf32> {
  %c = graph.cast %x : (tensor<8x1001xbf16>) -> tensor<8x1001xf32>
  %s = graph.reduce_max %c {axes = [0]} : (tensor<8x1001xf32>) -> tensor<1001xf32>
  return %s : tensor<1001xf32>
}`
	pipeline := "decompose,fuse,lower-to-loops,sram-alloc"
	runDiff(t, diffCase{name: "chunks", src: src, pipeline: pipeline, target: "h200"})
	text := ir.Print(lowerText(t, src, pipeline, "h200").Operation, ir.PrintOptions{})
	require.Contains(t, text, "loop.parallel %c0, %c5, %c1 {dist = \"grid\"}", text)
	require.Contains(t, text, "loop.for %c0, %c200, %c4 {", text)
	require.Contains(t, text, "-> vector<4xf32>", text)
	require.Contains(t, text, "loop.parallel %c0, %c7, %c1 {dist = \"grid\"}", text)
	require.Contains(t, text, "loop.for %c0, %c143, %c1 {", text)
}

// TestDiffSplitReductions: on a GPU target a reduction over a long axis
// with few results is reduced in two kernels (2048 = 64 x 32 here: the
// first reduces chunks of 32 with the producers, the second the 64 partial
// results with the consumers), within the sums' bound of the graph
// interpreter in both rounding modes; on the CPU it stays one kernel.
func TestDiffSplitReductions(t *testing.T) {
	src := `
func.func @sum(%x: tensor<2048x8xbf16>) -> tensor<8xf32> {
  %c = graph.cast %x : (tensor<2048x8xbf16>) -> tensor<2048x8xf32>
  %e = graph.exp %c : tensor<2048x8xf32>
  %s = graph.reduce_sum %e {axes = [0]} : (tensor<2048x8xf32>) -> tensor<8xf32>
  %l = graph.log %s : tensor<8xf32>
  return %l : tensor<8xf32>
}
func.func @max(%x: tensor<3x1024x4xf32>) -> tensor<3x1x4xf32> {
  %a = graph.abs %x : tensor<3x1024x4xf32>
  %m = graph.reduce_max %a {axes = [1], keepdim = true} : (tensor<3x1024x4xf32>) -> tensor<3x1x4xf32>
  return %m : tensor<3x1x4xf32>
}`
	pipeline := "decompose,fuse,lower-to-loops,sram-alloc"
	runDiff(t, diffCase{name: "split", src: src, pipeline: pipeline, target: "h200"})
	gpu := ir.Print(lowerText(t, src, pipeline, "h200").Operation, ir.PrintOptions{})
	require.Equal(t, 4, strings.Count(gpu, "loop.kernel {"), gpu)
	require.Contains(t, gpu, "memref<64x8xf32, dram>", gpu) // the partial sums
	cpu := ir.Print(lowerText(t, src, pipeline, "cpu").Operation, ir.PrintOptions{})
	require.Equal(t, 2, strings.Count(cpu, "loop.kernel {"), cpu)
}

// TestDiffRandomRegressions runs random programs (beyond the first 300
// seeds of TestDiffRandomPrograms) that found bugs: an element-wise kernel
// whose result #0 is broadcast over the space (1089, 1381: the grid took
// its extent), rows of static length beside values of run-time length
// along them (593), rows reduced from a constant broadcast over a result's
// rows (463), a per-row divisor whose reciprocal overflows (531, 1259: a
// sum of subnormal exponentials), per-row results led by the rows (399).
func TestDiffRandomRegressions(t *testing.T) {
	for _, seed := range []int64{399, 463, 531, 593, 1089, 1259, 1381} {
		m, err := randprog.Generate(randprog.NewRand(seed), randprog.Config{})
		require.NoError(t, err)
		runPipeline(t, m, "dce,decompose,dce,fuse", "h200")
		text := ir.Print(m.Operation, ir.PrintOptions{})
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			runDiffOn(t, diffCase{name: fmt.Sprintf("seed %d", seed), src: text, target: "h200", dyn: randprog.DynExtent}, true)
		})
	}
}

// TestDiffRandomProgramsTargets runs random programs fused for the CPU,
// for Metal and for Tenstorrent, whose fusion differs from the GPU's
// (reductions are not split, the scratchpads differ; on Tenstorrent views
// are kernels of their own and reductions over the second-to-last axis
// transposes and row reductions), as TestDiffRandomPrograms does for the
// h200.
func TestDiffRandomProgramsTargets(t *testing.T) {
	t.Parallel()
	n := int64(600)
	if testing.Short() {
		n = 60
	}
	for _, tgt := range []string{"cpu", "m3-max", "wormhole-n300"} {
		for seed := int64(1); seed <= n; seed++ {
			m, err := randprog.Generate(randprog.NewRand(seed), randprog.Config{})
			require.NoError(t, err)
			runPipeline(t, m, "dce,decompose,dce,fuse", tgt)
			text := ir.Print(m.Operation, ir.PrintOptions{})
			t.Run(fmt.Sprintf("%s/seed%d", tgt, seed), func(t *testing.T) {
				runDiffOn(t, diffCase{name: fmt.Sprintf("seed %d", seed), src: text, target: tgt, dyn: randprog.DynExtent}, true)
			})
		}
	}
}

// TestDiffTileReductions checks fuse's rewrite for Tenstorrent targets: a
// reduction over the second-to-last axis alone becomes a transpose of the
// last two dimensions and a reduction of its rows, with keepdim a
// transpose back (the same values, inf and NaN included, before and after
// lowering); other axes are left as they are, and other targets keep
// their reductions.
func TestDiffTileReductions(t *testing.T) {
	src := `
func.func @colsum(%x: tensor<40x24xf32>) -> tensor<24xf32> {
  %e = graph.exp %x : tensor<40x24xf32>
  %s = graph.reduce_sum %e {axes = [0]} : (tensor<40x24xf32>) -> tensor<24xf32>
  %l = graph.log %s : tensor<24xf32>
  return %l : tensor<24xf32>
}
func.func @mid_max(%x: tensor<3x40x8xbf16>) -> tensor<3x8xbf16> {
  %m = graph.reduce_max %x {axes = [1]} : (tensor<3x40x8xbf16>) -> tensor<3x8xbf16>
  return %m : tensor<3x8xbf16>
}
func.func @mid_min(%x: tensor<3x40x8xf32>) -> tensor<3x8xf32> {
  %m = graph.reduce_min %x {axes = [-2]} : (tensor<3x40x8xf32>) -> tensor<3x8xf32>
  return %m : tensor<3x8xf32>
}
func.func @kept(%x: tensor<40x8xf32>) -> tensor<1x8xf32> {
  %m = graph.reduce_sum %x {axes = [0], keepdim = true} : (tensor<40x8xf32>) -> tensor<1x8xf32>
  return %m : tensor<1x8xf32>
}
func.func @first_of_three(%x: tensor<5x4x8xf32>) -> tensor<4x8xf32> {
  %m = graph.reduce_sum %x {axes = [0]} : (tensor<5x4x8xf32>) -> tensor<4x8xf32>
  return %m : tensor<4x8xf32>
}`
	pipeline := "decompose,fuse,lower-to-loops,sram-alloc"
	runDiff(t, diffCase{name: "tile reductions", src: src, pipeline: pipeline, target: "wormhole-n300"})
	fused := ir.Print(lowerText(t, src, "decompose,fuse", "wormhole-n300").Operation, ir.PrintOptions{})
	require.Equal(t, 5, strings.Count(fused, "graph.transpose"), fused) // keepdim: one back
	other := ir.Print(lowerText(t, src, "decompose,fuse", "cpu").Operation, ir.PrintOptions{})
	require.Zero(t, strings.Count(other, "graph.transpose"), other)
}
