package cpurt_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	geval "github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/dialects/loop"
	leval "github.com/tensorforge/tensorforge/dialects/loop/eval"
	"github.com/tensorforge/tensorforge/emit/cpurt"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
	"github.com/tensorforge/tensorforge/parser"
)

// guardedForms launches two kernels on the same buffers, guarded by
// complementary row ranges: negation for at most 2 rows, absolute value
// for 3 and more. Which one ran shows in the result's signs.
var guardedForms = `func.func @g(%x: memref<?x64xf32, dram>, %y: memref<?x64xf32, dram>) attributes {num_results = 1} {
  %x_d0 = loop.dim %x {axis = 0} : (memref<?x64xf32, dram>) -> index
  loop.launch %x, %y, %x_d0, %x_d0 {kernel = "neg", max_rows = 2, rows_of = 0} : (memref<?x64xf32, dram>, memref<?x64xf32, dram>, index, index) -> ()
  loop.launch %x, %y, %x_d0, %x_d0 {kernel = "abs", min_rows = 3, rows_of = 1} : (memref<?x64xf32, dram>, memref<?x64xf32, dram>, index, index) -> ()
  return
}
` + unaryKernel("neg") + unaryKernel("abs")

// unaryKernel is an element-wise kernel named op applying loop.<op> to the
// rows of 64 of x, storing into y.
func unaryKernel(op string) string {
	return fmt.Sprintf(`loop.kernel {kind = "elementwise", num_inputs = 1, num_outputs = 1, sym_name = "%[1]s", vector_width = 32} {
^bb0(%%x: memref<?x64xf32, dram>, %%y: memref<?x64xf32, dram>, %%x_d0: index, %%y_d0: index):
  %%c64 = loop.const {value = 64} : index
  %%c0 = loop.const {value = 0} : index
  %%c32 = loop.const {value = 32} : index
  %%c1 = loop.const {value = 1} : index
  loop.parallel %%c0, %%y_d0, %%c1 {dist = "grid"} {
  ^bb1(%%r: index):
    loop.for %%c0, %%c64, %%c32 {dist = "threads"} {
    ^bb2(%%i: index):
      %%v = loop.load %%x, %%r, %%i : (memref<?x64xf32, dram>, index, index) -> vector<32xf32>
      %%n = loop.%[1]s %%v : vector<32xf32>
      loop.store %%n, %%y, %%r, %%i : (vector<32xf32>, memref<?x64xf32, dram>, index, index) -> ()
      loop.yield
    } : index
    loop.yield
  } : index
  loop.return
}
`, op)
}

// TestGuardedFormsNative runs guardedForms natively and in the loop
// interpreter for 1 to 5 rows: exactly the admitted kernel runs.
func TestGuardedFormsNative(t *testing.T) {
	m, err := parser.Parse("input.tir", guardedForms)
	require.NoError(t, err)
	require.NoError(t, ir.Verify(m.Operation))
	prog, err := cpurt.Compile(m, "g")
	require.NoError(t, err)
	t.Cleanup(func() { prog.Close() })
	for rows := int64(1); rows <= 5; rows++ {
		x := geval.NewTensor(ir.F32, []int64{rows, 64})
		for i := range x.Data {
			x.Data[i] = float64(i%9) - 4.5
		}
		for name, run := range map[string]func() ([]*geval.Tensor, error){
			"native":      func() ([]*geval.Tensor, error) { return prog.Run([]*geval.Tensor{x}) },
			"interpreter": func() ([]*geval.Tensor, error) { return leval.Run(m, "g", []*geval.Tensor{x}) },
		} {
			got, err := run()
			require.NoError(t, err, name)
			for i, v := range x.Data {
				want := -v
				if rows >= 3 {
					want = math.Abs(v)
				}
				require.Equal(t, want, got[0].Data[i], "%s, %d rows, element %d", name, rows, i)
			}
		}
	}
}

// Guarded launches run natively: a logsumexp over a `?` count of rows of
// 16384, lowered for an h200 with splitting below 3 rows, holds the split
// kernels (guarded by rows <= 2) and the kernel of one instance per row
// (rows >= 3). The LLVM host's branches must run exactly one form: 2 rows
// and 3 rows each give the float64 logsumexp of every row, within the
// f32 bound of a sum of 16384 terms, and the loop interpreter's results.
func TestGuardedLaunchesNative(t *testing.T) {
	src := `func.func @lse(%x: tensor<?x16384xf32>) -> tensor<?xf32> {
  %y = graph.logsumexp %x {axis = -1} : (tensor<?x16384xf32>) -> tensor<?xf32>
  return %y : tensor<?xf32>
}`
	m, err := parser.Parse("input.tir", src)
	require.NoError(t, err)
	tg, err := target.Lookup("h200")
	require.NoError(t, err)
	p, err := ir.ParsePipeline("legalize-numerics,decompose,fuse,lower-to-loops{split-rows-below=3},sram-alloc")
	require.NoError(t, err)
	require.NoError(t, (&ir.PassManager{Pipeline: p, VerifyEach: true}).Run(m, &ir.PassContext{Diags: &ir.Diagnostics{}, Target: tg}))
	guarded := 0
	m.Operation.Walk(func(op *ir.Operation) bool {
		if l, ok := loop.AsLaunch(op); ok {
			if _, g := l.Guard(); g {
				guarded++
			}
		}
		return true
	})
	require.Equal(t, 3, guarded, "two split kernels and the whole-row kernel, each guarded")
	prog, err := cpurt.Compile(m, "lse")
	require.NoError(t, err)
	t.Cleanup(func() { prog.Close() })
	for _, rows := range []int64{2, 3} {
		x := geval.NewTensor(ir.F32, []int64{rows, 16384})
		for i := range x.Data {
			x.Data[i] = float64(float32(math.Sin(float64(i)*0.37)*20 + float64(i%7)))
		}
		got, err := prog.Run([]*geval.Tensor{x})
		require.NoError(t, err)
		for r := range rows {
			row := x.Data[r*16384 : (r+1)*16384]
			mx := math.Inf(-1)
			for _, v := range row {
				mx = math.Max(mx, v)
			}
			var s float64
			for _, v := range row {
				s += math.Exp(v - mx)
			}
			want := mx + math.Log(s)
			// f32 sums of 16384 terms in [0, 1] and a log: well within 1e-5
			require.InEpsilon(t, want, got[0].Data[r], 1e-5, "row %d of %d", r, rows)
		}
	}
}
