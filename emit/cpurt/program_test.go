package cpurt

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/dialects/graph/eval"
	_ "github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/parser"
)

// A function whose output extent is the product of the input's (as a
// reshape would pass it) and a second output the lowering passes through
// loop.dim of the output itself.
const shapesSrc = `module {
  func.func @f(%x: memref<?x4xf32, dram>, %y: memref<?xf32, dram>, %z: memref<?x4xf32, dram>) attributes {num_results = 2} {
    %c4 = loop.const {value = 4} : index
    %n = loop.dim %x {axis = 0} : (memref<?x4xf32, dram>) -> index
    %m = loop.muli %n, %c4 : index
    loop.launch %x, %y, %n, %m {kernel = "k"} : (memref<?x4xf32, dram>, memref<?xf32, dram>, index, index) -> ()
    %zn = loop.dim %z {axis = 0} : (memref<?x4xf32, dram>) -> index
    loop.launch %x, %z, %n, %zn {kernel = "c"} : (memref<?x4xf32, dram>, memref<?x4xf32, dram>, index, index) -> ()
    return
  }
  loop.kernel {kind = "generic", num_inputs = 1, num_outputs = 1, sym_name = "k"} {
  ^bb0(%x: memref<?x4xf32, dram>, %y: memref<?xf32, dram>, %x_d0: index, %y_d0: index):
    %c0 = loop.const {value = 0} : index
    %c1 = loop.const {value = 1} : index
    loop.parallel %c0, %c0, %c1 {dist = "grid"} {
    ^bb0(%r: index):
      loop.yield
    } : (index, index, index) -> ()
    loop.return
  }
  loop.kernel {kind = "generic", num_inputs = 1, num_outputs = 1, sym_name = "c"} {
  ^bb0(%x: memref<?x4xf32, dram>, %y: memref<?x4xf32, dram>, %x_d0: index, %y_d0: index):
    %c0 = loop.const {value = 0} : index
    %c1 = loop.const {value = 1} : index
    loop.parallel %c0, %c0, %c1 {dist = "grid"} {
    ^bb0(%r: index):
      loop.yield
    } : (index, index, index) -> ()
    loop.return
  }
}`

func TestOutputShapes(t *testing.T) {
	m, err := parser.Parse("shapes.tir", shapesSrc)
	require.NoError(t, err)
	require.NoError(t, ir.Verify(m.Operation))
	f, _ := m.Lookup("f")
	shapes, err := OutputShapes(f, [][]int64{{5, 4}})
	require.NoError(t, err)
	assert.Equal(t, [][]int64{{20}, {5, 4}}, shapes)
	_, err = OutputShapes(f, nil)
	assert.ErrorContains(t, err, "takes 1 inputs, got 0 shapes")
}

func TestEncodeDecode(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		k    ir.ElemKind
		data []float64
	}{
		{ir.F32, []float64{1.5, math.Copysign(0, -1), math.Inf(1), nan}},
		{ir.F64, []float64{0.1, -1e300}},
		{ir.BF16, []float64{1, -2.5, 3.3895313892515355e+38}},
		{ir.F16, []float64{65504, -0.5, 5.960464477539063e-08}},
		{ir.F8E4M3FN, []float64{448, -0.001953125}},
		{ir.F8E5M2, []float64{57344, -1}},
		{ir.I8, []float64{-128, 127, -1}},
		{ir.UI8, []float64{0, 255}},
		{ir.I32, []float64{math.MinInt32, math.MaxInt32}},
		{ir.UI32, []float64{math.MaxUint32}},
		{ir.I64, []float64{-(1 << 53), 1 << 53}},
		{ir.I1, []float64{0, 1}},
	}
	for _, tt := range tests {
		in := &eval.Tensor{Shape: []int64{int64(len(tt.data))}, Elem: tt.k, Data: tt.data}
		b, err := encode(in, tt.k)
		require.NoError(t, err, "%s", tt.k)
		assert.Len(t, b, len(tt.data)*int(tt.k.ByteSize()))
		out, err := decode(b, tt.k, in.Shape)
		require.NoError(t, err)
		for i, v := range tt.data {
			if math.IsNaN(v) {
				assert.True(t, math.IsNaN(out.Data[i]))
				continue
			}
			assert.Equal(t, v, out.Data[i], "%s element %d", tt.k, i)
			assert.Equal(t, math.Signbit(v), math.Signbit(out.Data[i]), "%s sign of element %d", tt.k, i)
		}
	}
	// an integer input that its type cannot hold exactly
	_, err := encode(&eval.Tensor{Shape: []int64{1}, Elem: ir.F32, Data: []float64{1.5}}, ir.I32)
	assert.ErrorContains(t, err, "not exactly representable in i32")
	_, err = decode([]byte{1, 2, 3}, ir.F32, []int64{1})
	assert.ErrorContains(t, err, "wrote 3 bytes")
}

func TestFindToolchain(t *testing.T) {
	t.Setenv("TFC_LLC", "/nonexistent/llc")
	tc, err := FindToolchain()
	require.NoError(t, err, "falls back to the standard places")
	assert.NotEmpty(t, tc.LLC)
	assert.NotEmpty(t, tc.CC)
	// no C compiler on an empty PATH
	t.Setenv("CC", "")
	t.Setenv("PATH", t.TempDir())
	_, err = FindToolchain()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot find a C compiler (cc or gcc): install a C compiler with `apt-get install gcc`")
}
