package eval_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	geval "github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/dialects/loop/eval"
	"github.com/tensorforge/tensorforge/ir"
)

// groupSums normalises rows of 8 f32 by their sum, two instances per row:
// instance t (a ticket) sums half t mod 2 of row t / 2 into p, meets the
// other half's instance at a loop.group_sync, adds the two partials in
// order and writes its half divided by the total.
const groupSums = `
func.func @f(%x: memref<?x8xf32, dram>, %y: memref<?x8xf32, dram>) attributes {num_results = 1} {
  %n = loop.dim %x {axis = 0} : (memref<?x8xf32, dram>) -> index
  %p = loop.alloc_dram %n : (index) -> memref<?x2xf32, dram>
  %tk = loop.alloc_dram {zeroed = true} : memref<1xi32, dram>
  %gs = loop.alloc_dram %n {zeroed = true} : (index) -> memref<?x2xi32, dram>
  loop.launch %x, %y, %p, %tk, %gs, %n, %n, %n, %n {kernel = "k"} : (memref<?x8xf32, dram>, memref<?x8xf32, dram>, memref<?x2xf32, dram>, memref<1xi32, dram>, memref<?x2xi32, dram>, index, index, index, index) -> ()
  return
}
loop.kernel {kind = "row", num_inputs = 1, num_outputs = 4, schedule = "resident", sym_name = "k"} {
^bb0(%x: memref<?x8xf32, dram>, %y: memref<?x8xf32, dram>, %p: memref<?x2xf32, dram>, %tk: memref<1xi32, dram>, %gs: memref<?x2xi32, dram>, %xn: index, %yn: index, %pn: index, %gn: index):
  %c0 = loop.const {value = 0} : index
  %c1 = loop.const {value = 1} : index
  %c2 = loop.const {value = 2} : index
  %c4 = loop.const {value = 4} : index
  %zero = loop.const {value = 0.0} : f32
  %n = loop.muli %xn, %c2 : index
  loop.parallel %c0, %n, %c1 {dist = "grid"} {
  ^bb0(%r: index):
    %t = loop.ticket %tk, %n : (memref<1xi32, dram>, index) -> index
    %row = loop.divi %t, %c2 : index
    %half = loop.remi %t, %c2 : index
    %base = loop.muli %half, %c4 : index
    %acc = loop.for %c0, %c4, %c1, %zero {combine = ["add"], dist = "threads"} {
    ^bb0(%i: index, %a: f32):
      %col = loop.addi %base, %i : index
      %v = loop.load %x, %row, %col : (memref<?x8xf32, dram>, index, index) -> f32
      %a2 = loop.add %a, %v : f32
      loop.yield %a2 : f32
    } : (index, index, index, f32) -> f32
    loop.store %acc, %p, %row, %half : (f32, memref<?x2xf32, dram>, index, index) -> ()
    loop.group_sync %gs, %row, %c2 : (memref<?x2xi32, dram>, index, index) -> ()
    %p0 = loop.load %p, %row, %c0 : (memref<?x2xf32, dram>, index, index) -> f32
    %p1 = loop.load %p, %row, %c1 : (memref<?x2xf32, dram>, index, index) -> f32
    %sum = loop.add %p0, %p1 : f32
    loop.for %c0, %c4, %c1 {dist = "threads"} {
    ^bb0(%i: index):
      %col = loop.addi %base, %i : index
      %v = loop.load %x, %row, %col : (memref<?x8xf32, dram>, index, index) -> f32
      %q = loop.div %v, %sum : f32
      loop.store %q, %y, %row, %col : (f32, memref<?x8xf32, dram>, index, index) -> ()
      loop.yield
    } : index
    loop.yield
  } : index
  loop.return
}
`

// The instances of a row meet at the sync: each half divides by the sum
// of both, which needs the other instance's partial stored before it.
func TestGroupSync(t *testing.T) {
	m := parse(t, groupSums)
	x, err := geval.TensorOf(ir.F32, []int64{3, 8}, []float64{
		1, 1, 1, 1, 1, 1, 1, 1,
		1, 2, 3, 4, 0, 0, 0, 0,
		0, 0, 0, 0, -1, -1, -1, 7,
	})
	require.NoError(t, err)
	out, err := eval.Run(m, "f", []*geval.Tensor{x})
	require.NoError(t, err)
	require.Equal(t, []float64{
		0.125, 0.125, 0.125, 0.125, 0.125, 0.125, 0.125, 0.125,
		f32(0.1), f32(0.2), f32(0.3), f32(0.4), 0, 0, 0, 0,
		0, 0, 0, 0, -0.25, -0.25, -0.25, 1.75,
	}, out[0].Data)
}

// A group short of an instance would wait forever on a GPU, and counters
// left non-zero would start the next launch wrong: both are located
// errors.
func TestGroupSyncErrors(t *testing.T) {
	x, _ := geval.TensorOf(ir.F32, []int64{2, 8}, make([]float64, 16))
	cases := []struct{ from, to, want string }{
		{"loop.parallel %c0, %n, %c1", "%n1 = loop.subi %n, %c1 : index\n  loop.parallel %c0, %n1, %c1",
			"test.tir:33:5: error: 'loop.group_sync' op group 1 has 1 instances at this sync, but its size is 2 (on a GPU they would wait forever)"},
		{"%t = loop.ticket %tk, %n :", "%n2 = loop.addi %n, %c1 : index\n    %t = loop.ticket %tk, %n2 :",
			"'loop.alloc_dram' op holds counters that the kernels using them did not leave at zero"},
		{"loop.group_sync %gs, %row, %c2", "loop.group_sync %gs, %row, %c4",
			"'loop.group_sync' op group 0 has 2 instances at this sync, but its size is 4"},
	}
	for _, c := range cases {
		src := strings.Replace(groupSums, c.from, c.to, 1)
		require.NotEqual(t, groupSums, src)
		_, err := eval.Run(parse(t, src), "f", []*geval.Tensor{x})
		require.Error(t, err, c.want)
		require.Contains(t, err.Error(), c.want)
	}
}

// f32 is x rounded to float32, as the interpreter rounds f32 arithmetic.
func f32(x float64) float64 { return float64(float32(x)) }
