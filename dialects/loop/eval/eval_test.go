package eval_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	geval "github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/dialects/loop/eval"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
	"github.com/tensorforge/tensorforge/parser"
)

// rowSums sums rows of 8 bf16 values (two vectors of 4 lanes) into f32,
// and writes each row scaled by its sum, through an sram copy.
const rowSums = `
func.func @f(%x: memref<?x8xbf16, dram>, %y: memref<?x8xbf16, dram>, %s: memref<?xf32, dram>) attributes {num_results = 2} {
  %n = loop.dim %x {axis = 0} : (memref<?x8xbf16, dram>) -> index
  loop.launch %x, %y, %s, %n, %n, %n {kernel = "k"} : (memref<?x8xbf16, dram>, memref<?x8xbf16, dram>, memref<?xf32, dram>, index, index, index) -> ()
  return
}
loop.kernel {kind = "row", num_inputs = 1, num_outputs = 2, sym_name = "k"} {
^bb0(%x: memref<?x8xbf16, dram>, %y: memref<?x8xbf16, dram>, %s: memref<?xf32, dram>, %xn: index, %yn: index, %sn: index):
  %c0 = loop.const {value = 0} : index
  %c1 = loop.const {value = 1} : index
  %c4 = loop.const {value = 4} : index
  %c8 = loop.const {value = 8} : index
  %zero = loop.const {value = 0.0} : vector<4xf32>
  loop.parallel %c0, %xn, %c1 {dist = "grid"} {
  ^bb0(%r: index):
    %buf = loop.alloc {offset = 0} : memref<8xf32, sram>
    %acc = loop.for %c0, %c8, %c4, %zero {combine = ["add"], dist = "threads"} {
    ^bb0(%i: index, %a: vector<4xf32>):
      %v = loop.load %x, %r, %i : (memref<?x8xbf16, dram>, index, index) -> vector<4xbf16>
      %f = loop.cast %v : (vector<4xbf16>) -> vector<4xf32>
      loop.store %f, %buf, %i : (vector<4xf32>, memref<8xf32, sram>, index) -> ()
      %a2 = loop.add %a, %f : vector<4xf32>
      loop.yield %a2 : vector<4xf32>
    } : (index, index, index, vector<4xf32>) -> vector<4xf32>
    %sum = loop.reduce %acc {kind = "add"} : (vector<4xf32>) -> f32
    loop.store %sum, %s, %r : (f32, memref<?xf32, dram>, index) -> ()
    loop.for %c0, %c8, %c1 {dist = "threads"} {
    ^bb0(%i: index):
      %v = loop.load %buf, %i : (memref<8xf32, sram>, index) -> f32
      %p = loop.mul %v, %sum : f32
      %b = loop.cast %p : (f32) -> bf16
      loop.store %b, %y, %r, %i : (bf16, memref<?x8xbf16, dram>, index, index) -> ()
      loop.yield
    } : index
    loop.yield
  } : index
  loop.return
}
`

func parse(t *testing.T, src string) ir.Module {
	t.Helper()
	m, err := parser.Parse("test.tir", src)
	require.NoError(t, err)
	require.NoError(t, ir.Verify(m.Operation))
	return m
}

func TestRowKernel(t *testing.T) {
	m := parse(t, rowSums)
	x, err := geval.TensorOf(ir.BF16, []int64{3, 8}, []float64{
		1, 2, 3, 4, 5, 6, 7, 8,
		0.5, 0.25, 0, 0, 0, 0, 0, -1,
		1e30, 1, 1, 1, 1, 1, 1, 1,
	})
	require.NoError(t, err)
	out, err := eval.Run(m, "f", []*geval.Tensor{x})
	require.NoError(t, err)
	require.Len(t, out, 2)
	y, s := out[0], out[1]
	require.Equal(t, []int64{3, 8}, y.Shape)
	require.Equal(t, ir.BF16, y.Elem)
	require.Equal(t, []int64{3}, s.Shape)
	// lanes: (1+5)+(2+6)+(3+7)+(4+8) in lane order
	require.Equal(t, 36.0, s.Data[0])
	require.Equal(t, -0.25, s.Data[1])
	big := numeric.RoundTo(1e30, ir.BF16)
	require.Equal(t, big, s.Data[2]) // 7 is lost next to 1e30 in f32
	require.Equal(t, []float64{36, 72, 108, 144, 180, 216, 252, 288}, y.Data[:8])
	require.Equal(t, -0.125, y.Data[8])
}

func TestErrors(t *testing.T) {
	x3, _ := geval.TensorOf(ir.BF16, []int64{3, 8}, make([]float64, 24))
	cases := []struct {
		from, to string
		inputs   []*geval.Tensor
		want     string
	}{
		{"", "", []*geval.Tensor{}, "@f takes 1 inputs but 0 were given"},
		{"", "", []*geval.Tensor{geval.NewTensor(ir.BF16, []int64{3, 7})}, "does not match type memref<?x8xbf16, dram>"},
		{"%v = loop.load %buf, %i : (memref<8xf32, sram>, index) -> f32",
			"%c9 = loop.addi %i, %c8 : index\n      %v = loop.load %buf, %c9 : (memref<8xf32, sram>, index) -> f32",
			[]*geval.Tensor{x3}, "test.tir:30:7: error: 'loop.load' op accesses index 8 (1 lanes) of dimension 0, whose extent is 8"},
		{"%p = loop.mul %v, %sum : f32", "%z = loop.subi %i, %i : index\n      %d = loop.divi %i, %z : index\n      %p = loop.mul %v, %sum : f32",
			[]*geval.Tensor{x3}, "'loop.divi' op divides an index by zero"},
		{`loop.launch %x, %y, %s, %n, %n, %n {kernel = "k"}`, `%c1 = loop.const {value = 1} : index
  loop.launch %x, %y, %s, %n, %n, %c1 {kernel = "k"}`, []*geval.Tensor{x3}, "accesses index 1 (1 lanes) of dimension 0, whose extent is 1"},
		{`  loop.launch %x, %y, %s, %n, %n, %n {kernel = "k"} : (memref<?x8xbf16, dram>, memref<?x8xbf16, dram>, memref<?xf32, dram>, index, index, index) -> ()
`, "", []*geval.Tensor{x3}, "@f: output #0 is never written by a launch"},
	}
	for _, c := range cases {
		src := strings.Replace(rowSums, c.from, c.to, 1)
		m := parse(t, src)
		_, err := eval.Run(m, "f", c.inputs)
		require.Error(t, err, c.want)
		require.Contains(t, err.Error(), c.want)
	}
}

// Scratchpad never written reads as NaN, so a kernel that forgets a store
// shows it.
func TestUninitialisedSRAM(t *testing.T) {
	src := strings.Replace(rowSums, "      loop.store %f, %buf, %i : (vector<4xf32>, memref<8xf32, sram>, index) -> ()\n", "", 1)
	m := parse(t, src)
	x, _ := geval.TensorOf(ir.BF16, []int64{1, 8}, make([]float64, 8))
	out, err := eval.Run(m, "", []*geval.Tensor{x})
	require.NoError(t, err)
	require.True(t, math.IsNaN(out[0].Data[0]))
}

// Integer arithmetic wraps; casts follow graph.cast.
func TestIntegersAndCasts(t *testing.T) {
	src := `
func.func @f(%x: memref<4xi8, dram>, %y: memref<4xi8, dram>, %z: memref<4xui8, dram>) attributes {num_results = 2} {
  loop.launch %x, %y, %z {kernel = "k"} : (memref<4xi8, dram>, memref<4xi8, dram>, memref<4xui8, dram>) -> ()
  return
}
loop.kernel {kind = "elementwise", num_inputs = 1, num_outputs = 2, sym_name = "k"} {
^bb0(%x: memref<4xi8, dram>, %y: memref<4xi8, dram>, %z: memref<4xui8, dram>):
  %c0 = loop.const {value = 0} : index
  %c1 = loop.const {value = 1} : index
  %k = loop.const {value = 100} : vector<4xi8>
  %h = loop.const {value = 300.7} : vector<4xf32>
  loop.parallel %c0, %c1, %c1 {dist = "grid"} {
  ^bb0(%r: index):
    %v = loop.load %x, %c0 : (memref<4xi8, dram>, index) -> vector<4xi8>
    %a = loop.add %v, %k : vector<4xi8>
    %m = loop.fma %a, %a, %k : vector<4xi8>
    loop.store %m, %y, %c0 : (vector<4xi8>, memref<4xi8, dram>, index) -> ()
    %f = loop.cast %v : (vector<4xi8>) -> vector<4xf32>
    %g = loop.sub %f, %h : vector<4xf32>
    %u = loop.cast %g : (vector<4xf32>) -> vector<4xui8>
    loop.store %u, %z, %c0 : (vector<4xui8>, memref<4xui8, dram>, index) -> ()
    loop.yield
  } : index
  loop.return
}
`
	m := parse(t, src)
	x, _ := geval.TensorOf(ir.I8, []int64{4}, []float64{0, 27, 28, -128})
	out, err := eval.Run(m, "f", []*geval.Tensor{x})
	require.NoError(t, err)
	wrap := func(v int) float64 { return float64(int8(v)) }
	require.Equal(t, []float64{wrap(100*100 + 100), wrap(127*127 + 100), wrap(-128*-128 + 100), wrap(-28*-28 + 100)}, out[0].Data)
	// 0 - 300.7 = -300.7 -> -300 -> 212 in ui8 (unchecked, wrapping)
	require.Equal(t, 212.0, out[1].Data[0])
}

// transposeSquare reads a 4 x 4 f32 matrix as four rows, transposes them
// with loop.transpose and stores the columns as the rows of the result.
const transposeSquare = `
func.func @f(%x: memref<4x4xf32, dram>, %y: memref<4x4xf32, dram>) attributes {num_results = 1} {
  loop.launch %x, %y {kernel = "k"} : (memref<4x4xf32, dram>, memref<4x4xf32, dram>) -> ()
  return
}
loop.kernel {kind = "generic", num_inputs = 1, num_outputs = 1, sym_name = "k"} {
^bb0(%x: memref<4x4xf32, dram>, %y: memref<4x4xf32, dram>):
  %c0 = loop.const {value = 0} : index
  %c1 = loop.const {value = 1} : index
  %c2 = loop.const {value = 2} : index
  %c3 = loop.const {value = 3} : index
  loop.parallel %c0, %c1, %c1 {dist = "grid"} {
  ^bb0(%r: index):
    %a = loop.load %x, %c0, %c0 : (memref<4x4xf32, dram>, index, index) -> vector<4xf32>
    %b = loop.load %x, %c1, %c0 : (memref<4x4xf32, dram>, index, index) -> vector<4xf32>
    %c = loop.load %x, %c2, %c0 : (memref<4x4xf32, dram>, index, index) -> vector<4xf32>
    %d = loop.load %x, %c3, %c0 : (memref<4x4xf32, dram>, index, index) -> vector<4xf32>
    %t:4 = loop.transpose %a, %b, %c, %d : vector<4xf32>
    loop.store %t#0, %y, %c0, %c0 : (vector<4xf32>, memref<4x4xf32, dram>, index, index) -> ()
    loop.store %t#1, %y, %c1, %c0 : (vector<4xf32>, memref<4x4xf32, dram>, index, index) -> ()
    loop.store %t#2, %y, %c2, %c0 : (vector<4xf32>, memref<4x4xf32, dram>, index, index) -> ()
    loop.store %t#3, %y, %c3, %c0 : (vector<4xf32>, memref<4x4xf32, dram>, index, index) -> ()
    loop.yield
  } : index
  loop.return
}
`

// Result j of loop.transpose is lane j of every operand: the columns.
func TestTranspose(t *testing.T) {
	m := parse(t, transposeSquare)
	data := make([]float64, 16)
	for i := range data {
		data[i] = float64(i)
	}
	data[5] = math.Inf(-1)
	data[6] = math.NaN()
	x, err := geval.TensorOf(ir.F32, []int64{4, 4}, data)
	require.NoError(t, err)
	out, err := eval.Run(m, "f", []*geval.Tensor{x})
	require.NoError(t, err)
	for i := range 4 {
		for j := range 4 {
			want, got := data[j*4+i], out[0].Data[i*4+j]
			if math.IsNaN(want) {
				require.True(t, math.IsNaN(got))
				continue
			}
			require.Equal(t, want, got, "y[%d][%d]", i, j)
		}
	}
}
