package passes

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
	"github.com/tensorforge/tensorforge/parser"
)

// Placement: live ranges that overlap get disjoint aligned bytes, the
// others share; the largest buffer goes first.
func TestPlaceBuffers(t *testing.T) {
	a := &buffer{size: 100, first: 0, last: 5}
	b := &buffer{size: 300, first: 3, last: 8}
	c := &buffer{size: 50, first: 6, last: 9}
	d := &buffer{size: 10, first: 10, last: 12}
	peak := placeBuffers([]*buffer{a, b, c, d}, 16)
	require.Equal(t, int64(0), b.offset)   // largest first
	require.Equal(t, int64(304), a.offset) // after b, aligned
	require.Equal(t, int64(304), c.offset) // a is dead by then: same bytes
	require.Equal(t, int64(0), d.offset)   // nothing else is live
	require.Equal(t, int64(404), peak)

	// a buffer fits in a gap between two others
	x := &buffer{size: 64, first: 0, last: 10}
	y := &buffer{size: 64, first: 0, last: 2}
	z := &buffer{size: 64, first: 0, last: 10}
	w := &buffer{size: 64, first: 5, last: 10}
	require.Equal(t, int64(192), placeBuffers([]*buffer{x, y, z, w}, 16))
	require.Equal(t, []int64{0, 64, 128, 64}, []int64{x.offset, y.offset, z.offset, w.offset})
}

const twoKernels = `
loop.kernel {kind = "row", num_inputs = 0, num_outputs = 0, sym_name = "big"} {
  %c0 = loop.const {value = 0} : index
  %c1 = loop.const {value = 1} : index
  loop.parallel %c0, %c1, %c1 {dist = "grid"} {
  ^bb0(%r: index):
    %a = loop.alloc : memref<1024xf32, sram>
    %b = loop.alloc : memref<1024xf32, sram>
    %v = loop.load %a, %c0 : (memref<1024xf32, sram>, index) -> f32
    loop.store %v, %b, %c0 : (f32, memref<1024xf32, sram>, index) -> ()
    loop.yield
  } : index
  loop.return
}
loop.kernel {kind = "row", num_inputs = 0, num_outputs = 0, sym_name = "bigger"} {
  %c0 = loop.const {value = 0} : index
  %c1 = loop.const {value = 1} : index
  loop.parallel %c0, %c1, %c1 {dist = "grid"} {
  ^bb0(%r: index):
    %a = loop.alloc : memref<4096xf32, sram>
    loop.yield
  } : index
  loop.return
}
`

func runSRAMAlloc(t *testing.T, src string, a SRAMAlloc, remarks bool) (ir.Module, *ir.PassContext, error) {
	t.Helper()
	m, err := parser.Parse("test.tir", src)
	require.NoError(t, err)
	require.NoError(t, ir.Verify(m.Operation))
	ctx := &ir.PassContext{Diags: &ir.Diagnostics{}, Remarks: map[string]bool{"sram": remarks}}
	return m, ctx, a.Run(m, ctx)
}

// Every kernel over capacity is reported, with the numbers and buffers;
// the plan is still recorded.
func TestCapacityErrors(t *testing.T) {
	m, _, err := runSRAMAlloc(t, twoKernels, SRAMAlloc{Capacity: 4096, CapacityFrom: "the target 'm3-max'", Align: 16}, false)
	require.Error(t, err)
	diags := ir.AsDiagnostics(err)
	require.Len(t, diags, 2)
	require.Equal(t, "kernel 'big' needs 8192 bytes of sram but the target 'm3-max' has 4096 "+
		"(buffers: %a memref<1024xf32, sram>, 4096 bytes at 0; %b memref<1024xf32, sram>, 4096 bytes at 4096)", diags[0].Message)
	require.Contains(t, diags[1].Message, "kernel 'bigger' needs 16384 bytes")
	k, ok := loop.LookupKernel(m.Operation, "big")
	require.True(t, ok)
	n, _ := k.SramBytes()
	require.Equal(t, int64(8192), n)
}

// The plan is deterministic and the same when run again; remarks describe it.
func TestPlanStableAndRemarked(t *testing.T) {
	a := SRAMAlloc{Capacity: 1 << 20, CapacityFrom: "the target 'h100'", Align: 16}
	m1, ctx, err := runSRAMAlloc(t, twoKernels, a, true)
	require.NoError(t, err)
	first := ir.Print(m1.Operation, ir.PrintOptions{})
	require.NoError(t, a.Run(m1, ctx))
	require.Equal(t, first, ir.Print(m1.Operation, ir.PrintOptions{}))
	m2, _, err := runSRAMAlloc(t, twoKernels, a, false)
	require.NoError(t, err)
	require.Equal(t, first, ir.Print(m2.Operation, ir.PrintOptions{}))
	require.Contains(t, first, "%b = loop.alloc {offset = 4096} : memref<1024xf32, sram>")

	var remarks []string
	for _, d := range ctx.Diags.List {
		remarks = append(remarks, d.Message)
	}
	require.Contains(t, strings.Join(remarks, "\n"), "[sram] kernel 'big' uses 8192 of 1048576 bytes of sram")
}

// The pass takes its capacity and alignment from the target unless the
// option sets the capacity.
func TestPassOptions(t *testing.T) {
	info := ir.LookupPass("sram-alloc")
	require.NotNil(t, info)
	m3, err := target.Lookup("m3-max")
	require.NoError(t, err)
	for _, c := range []struct {
		pipeline string
		want     string
	}{
		{"sram-alloc", ""}, // 8192 and 16384 bytes fit the 32 KiB of an m3-max
		{"sram-alloc{capacity=1KiB}", "but sram-alloc{capacity=1KiB} has 1024"},
	} {
		m, err := parser.Parse("test.tir", twoKernels)
		require.NoError(t, err)
		p, err := ir.ParsePipeline(c.pipeline)
		require.NoError(t, err)
		ctx := &ir.PassContext{Diags: &ir.Diagnostics{}, Target: m3}
		err = (&ir.PassManager{Pipeline: p}).Run(m, ctx)
		if c.want == "" {
			require.NoError(t, err)
			continue
		}
		require.ErrorContains(t, err, c.want)
	}
}
