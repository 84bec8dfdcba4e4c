package cpurt_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// tiledSrc holds kernels that read an operand, or store a result,
// through a transpose of its last axis, which a CPU kernel does with
// strided vector accesses (loop.load's and loop.store's `axis`), and an
// element-wise one walks in tiles (lowering's tiledWalk): tiles
// cut short at both edges, 3-D and 4-D permutations, a transposed value
// computed in the kernel, several transposed operands, broadcast operands
// beside them, integers and f16; kernels that keep their rows (the
// transposed reads disagree on the tiled dimension; a tiled dimension of
// a tile or less) but their vectors; a tiled dimension of run-time extent,
// its tiles counted at launch; and softmaxes of a
// transposed operand and stored transposed: row kernels with strided
// vectors over rows of 40, a row kernel beside a transpose over rows of
// 300 (fuse's rowAcrossLines).
const tiledSrc = `
func.func @edges(%x: tensor<100x40xbf16>, %z: tensor<40x100xbf16>, %bias: tensor<100xbf16>, %c: tensor<40x1xf32>) -> tensor<40x100xbf16> {
  %t = graph.transpose %x {perm = [1, 0]} : (tensor<100x40xbf16>) -> tensor<40x100xbf16>
  %s = graph.add %t, %z : tensor<40x100xbf16>
  %b = graph.mul %s, %bias : (tensor<40x100xbf16>, tensor<100xbf16>) -> tensor<40x100xbf16>
  %w = graph.cast %b : (tensor<40x100xbf16>) -> tensor<40x100xf32>
  %m = graph.mul %w, %c : (tensor<40x100xf32>, tensor<40x1xf32>) -> tensor<40x100xf32>
  %y = graph.cast %m : (tensor<40x100xf32>) -> tensor<40x100xbf16>
  return %y : tensor<40x100xbf16>
}
func.func @heads(%k: tensor<2x33x3x20xf16>, %s: tensor<2x3x20x33xf16>) -> tensor<2x3x20x33xf16> {
  %t = graph.transpose %k {perm = [0, 2, 3, 1]} : (tensor<2x33x3x20xf16>) -> tensor<2x3x20x33xf16>
  %y = graph.mul %t, %s : tensor<2x3x20x33xf16>
  return %y : tensor<2x3x20x33xf16>
}
func.func @computed(%a: tensor<24x36xf32>, %b: tensor<24x36xf32>, %z: tensor<36x24xf32>) -> tensor<36x24xf32> {
  %s = graph.sub %a, %b : tensor<24x36xf32>
  %m = graph.max %s, %b : tensor<24x36xf32>
  %t = graph.transpose %m {perm = [1, 0]} : (tensor<24x36xf32>) -> tensor<36x24xf32>
  %y = graph.add %t, %z : tensor<36x24xf32>
  return %y : tensor<36x24xf32>
}
func.func @ints(%x: tensor<48x17xi32>, %y: tensor<17x48xi32>) -> tensor<17x48xi32> {
  %t = graph.transpose %x {perm = [1, 0]} : (tensor<48x17xi32>) -> tensor<17x48xi32>
  %s = graph.sub %t, %y : tensor<17x48xi32>
  return %s : tensor<17x48xi32>
}
func.func @disagree(%x: tensor<24x18x20xf32>, %y: tensor<20x18x24xf32>) -> tensor<20x24x18xf32> {
  %a = graph.transpose %x {perm = [2, 0, 1]} : (tensor<24x18x20xf32>) -> tensor<20x24x18xf32>
  %b = graph.transpose %y {perm = [0, 2, 1]} : (tensor<20x18x24xf32>) -> tensor<20x24x18xf32>
  %s = graph.add %a, %b : tensor<20x24x18xf32>
  return %s : tensor<20x24x18xf32>
}
func.func @narrow(%x: tensor<64x16xf32>) -> tensor<16x64xf32> {
  %t = graph.transpose %x {perm = [1, 0]} : (tensor<64x16xf32>) -> tensor<16x64xf32>
  %e = graph.neg %t : tensor<16x64xf32>
  return %e : tensor<16x64xf32>
}
func.func @dyn(%x: tensor<32x?xf32>, %y: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %t = graph.transpose %x {perm = [1, 0]} : (tensor<32x?xf32>) -> tensor<?x32xf32>
  %s = graph.mul %t, %y : tensor<?x32xf32>
  return %s : tensor<?x32xf32>
}
func.func @smt(%x: tensor<40x24xf32>) -> tensor<24x40xf32> {
  %t = graph.transpose %x {perm = [1, 0]} : (tensor<40x24xf32>) -> tensor<24x40xf32>
  %s = graph.softmax %t {axis = -1} : tensor<24x40xf32>
  return %s : tensor<24x40xf32>
}
func.func @sto(%x: tensor<24x40xbf16>) -> tensor<40x24xbf16> {
  %s = graph.softmax %x {axis = -1} : tensor<24x40xbf16>
  %t = graph.transpose %s {perm = [1, 0]} : (tensor<24x40xbf16>) -> tensor<40x24xbf16>
  return %t : tensor<40x24xbf16>
}
func.func @smt_long(%x: tensor<300x24xf32>) -> tensor<24x300xf32> {
  %t = graph.transpose %x {perm = [1, 0]} : (tensor<300x24xf32>) -> tensor<24x300xf32>
  %s = graph.softmax %t {axis = -1} : tensor<24x300xf32>
  return %s : tensor<24x300xf32>
}
func.func @sto_long(%x: tensor<24x300xbf16>) -> tensor<300x24xbf16> {
  %s = graph.softmax %x {axis = -1} : tensor<24x300xbf16>
  %t = graph.transpose %s {perm = [1, 0]} : (tensor<24x300xbf16>) -> tensor<300x24xbf16>
  return %t : tensor<300x24xbf16>
}
`

// TestTiledReads runs the kernels of tiledSrc natively against both
// interpreters and checks which of them access memory through strided
// loads and stores, and which walk tiles.
func TestTiledReads(t *testing.T) {
	m, err := compile(tiledSrc, pipelines["O2"]+","+lowerTail())
	require.NoError(t, err)
	strided, tiled := map[string]int{}, map[string]bool{}
	for _, op := range m.Body().Ops() {
		k, ok := loop.AsKernel(op)
		if !ok {
			continue
		}
		fn := k.SymName()
		strided[fn] += 0
		k.Operation.Walk(func(o *ir.Operation) bool {
			_, l := loop.LoadOp{Operation: o}.Axis()
			_, s := loop.StoreOp{Operation: o}.Axis()
			if o.Name() == loop.OpLoad && l || o.Name() == loop.OpStore && s {
				strided[fn]++
			}
			// a tile's serial loop over its rows, inside the grid
			if f, ok := loop.AsFor(o); ok && o.ParentOp() != nil && o.ParentOp().Name() == loop.OpParallel && f.Dist() == "serial" {
				tiled[fn] = true
			}
			return true
		})
	}
	assert.Equal(t, map[string]int{"edges_k0": 1, "heads_k0": 1, "computed_k0": 2, "ints_k0": 1, "disagree_k0": 2,
		"narrow_k0": 1, "dyn_k0": 1, "smt_k0": 3, "sto_k0": 1,
		"smt_long_k0": 1, "smt_long_k1": 0, "sto_long_k0": 0, "sto_long_k1": 1}, strided)
	assert.Equal(t, map[string]bool{"edges_k0": true, "heads_k0": true, "computed_k0": true, "ints_k0": true,
		"dyn_k0": true, "smt_long_k0": true, "sto_long_k1": true}, tiled)
	diffProgram(t, "tiled", tiledSrc, "O2")
}
