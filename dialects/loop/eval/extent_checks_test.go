package eval_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	geval "github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/dialects/loop/eval"
	"github.com/tensorforge/tensorforge/ir"
)

// addRows is x + y over rows whose `?` extents the kernel takes to be
// equal (it indexes y with x's rows), as lower-to-loops records it.
const addRows = `
func.func @f(%x: memref<?x2xf32, dram>, %y: memref<?x2xf32, dram>, %z: memref<?x2xf32, dram>) attributes {CHECKS, num_results = 1} {
  %n = loop.dim %x {axis = 0} : (memref<?x2xf32, dram>) -> index
  %m = loop.dim %y {axis = 0} : (memref<?x2xf32, dram>) -> index
  loop.launch %x, %y, %z, %n, %m, %n {kernel = "k"} : (memref<?x2xf32, dram>, memref<?x2xf32, dram>, memref<?x2xf32, dram>, index, index, index) -> ()
  return
}
loop.kernel {kind = "elementwise", num_inputs = 2, num_outputs = 1, sym_name = "k"} {
^bb0(%x: memref<?x2xf32, dram>, %y: memref<?x2xf32, dram>, %z: memref<?x2xf32, dram>, %xn: index, %yn: index, %zn: index):
  %c0 = loop.const {value = 0} : index
  %c1 = loop.const {value = 1} : index
  %c2 = loop.const {value = 2} : index
  loop.parallel %c0, %xn, %c1 {dist = "grid"} {
  ^bb0(%r: index):
    loop.for %c0, %c2, %c1 {dist = "threads"} {
    ^bb0(%i: index):
      %a = loop.load %x, %r, %i : (memref<?x2xf32, dram>, index, index) -> f32
      %b = loop.load %y, %r, %i : (memref<?x2xf32, dram>, index, index) -> f32
      %s = loop.add %a, %b : f32
      loop.store %s, %z, %r, %i : (f32, memref<?x2xf32, dram>, index, index) -> ()
      loop.yield
    } : index
    loop.yield
  } : index
  loop.return
}
`

func rows(n int64) *geval.Tensor {
	t := geval.NewTensor(ir.F32, []int64{n, 2})
	for i := range t.Data {
		t.Data[i] = float64(i)
	}
	return t
}

func TestExtentChecks(t *testing.T) {
	m := parse(t, strings.Replace(addRows, "CHECKS", "extent_checks = [[0, 0, 1, 0]]", 1))
	out, err := eval.Run(m, "f", []*geval.Tensor{rows(3), rows(3)})
	require.NoError(t, err)
	require.Equal(t, []float64{0, 2, 4, 6, 8, 10}, out[0].Data)
	// y of 2 rows: the kernel would read past it; refused, both named
	_, err = eval.Run(m, "f", []*geval.Tensor{rows(3), rows(2)})
	require.Error(t, err)
	require.Contains(t, err.Error(), "@f: argument #0 (%x) has 3 in dimension 0 but argument #1 (%y) has 2 in dimension 0")
	// y of 4 rows: in bounds, but not what broadcasting means
	_, err = eval.Run(m, "f", []*geval.Tensor{rows(3), rows(4)})
	require.Error(t, err)

	m = parse(t, strings.Replace(addRows, "CHECKS", "extent_checks = [[1, 0, -2, 3]]", 1))
	_, err = eval.Run(m, "f", []*geval.Tensor{rows(3), rows(2)})
	require.ErrorContains(t, err, "argument #1 (%y) has 2 in dimension 0, where 3 (or 1, to broadcast) is needed")
	m = parse(t, strings.Replace(addRows, "CHECKS", "extent_checks = [[1, 0, -1, 3]]", 1))
	_, err = eval.Run(m, "f", []*geval.Tensor{rows(3), rows(1)})
	require.ErrorContains(t, err, "argument #1 (%y) has 1 in dimension 0, where 3 is needed")

	// malformed lists are located errors, not crashes
	for attr, want := range map[string]string{
		`extent_checks = 3`:               "expected a list",
		`extent_checks = [[0, 0, 1]]`:     "malformed extent_checks entry #0",
		`extent_checks = [[0, 1, 1, 0]]`:  "dimension 1 of argument #0, which is not a '?' dimension",
		`extent_checks = [[0, 0, 7, 0]]`:  "dimension 0 of argument #7",
		`extent_checks = [[0, 0, -1, 0]]`: "asks for extent 0",
	} {
		m := parse(t, strings.Replace(addRows, "CHECKS", attr, 1))
		_, err := eval.Run(m, "f", []*geval.Tensor{rows(3), rows(3)})
		require.ErrorContains(t, err, want, attr)
		require.Contains(t, err.Error(), "test.tir:2:", attr)
	}
}

// The named form the launch descriptions carry, as a host checks it.
func TestNamedExtentChecks(t *testing.T) {
	m := parse(t, strings.Replace(addRows, "CHECKS", "extent_checks = [[0, 0, 1, 0]]", 1))
	f, _ := m.Lookup("f")
	checks, err := loop.ExtentChecks(f)
	require.NoError(t, err)
	require.Len(t, checks, 1)
	named := checks[0].Named([]string{"x", "y", "z"})
	require.NoError(t, named.Check(map[string][]int64{"x": {3, 2}, "y": {3, 2}}))
	require.ErrorContains(t, named.Check(map[string][]int64{"x": {3, 2}, "y": {4, 2}}), "x has 3 in dimension 0 but y has 4 in dimension 0")
	static := loop.ExtentCheck{Arg: 1, Axis: 0, Other: -1, Static: 3, OrOne: true}.Named([]string{"x", "y"})
	require.NoError(t, static.Check(map[string][]int64{"y": {1, 2}}))
	require.NoError(t, static.Check(map[string][]int64{"y": {3, 2}}))
	require.ErrorContains(t, static.Check(map[string][]int64{"y": {2, 2}}), "y has 2 in dimension 0, where 3 (or 1, to broadcast) is needed")
	require.ErrorContains(t, static.Check(map[string][]int64{"y": {}}), "y has no dimension 0")
}
