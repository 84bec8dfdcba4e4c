package lowering

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// viewCases are element-wise chains that read through views: each fuses
// into one kernel (kernels says how many the function lowers to) whose
// loads follow the views' index maps, and each is run against the graph
// interpreter on random and extreme inputs.
var viewCases = []struct {
	name    string
	kernels int
	width   int64 // the kernel's vector width on h200, its widest loop's (0: not checked)
	// sums: a row kernel, whose sums run in another order (the bound of
	// difftest_test.go instead of 0 ULP)
	sums bool
	src  string
}{
	{name: "transpose-keeping-the-last-axis", kernels: 1, width: 4, src: `
func.func @f(%x: tensor<4x6x8xf32>, %y: tensor<6x4x8xf32>, %w: tensor<8xf32>) -> tensor<6x4x8xf32> {
  %t = graph.transpose %x {perm = [1, 0, 2]} : (tensor<4x6x8xf32>) -> tensor<6x4x8xf32>
  %e = graph.exp %t : tensor<6x4x8xf32>
  %a = graph.add %e, %y : tensor<6x4x8xf32>
  %m = graph.mul %a, %w : (tensor<6x4x8xf32>, tensor<8xf32>) -> tensor<6x4x8xf32>
  return %m : tensor<6x4x8xf32>
}`},
	{name: "transpose-moving-the-last-axis", kernels: 1, width: 1, src: `
func.func @f(%x: tensor<8x6xbf16>) -> tensor<6x8xbf16> {
  %t = graph.transpose %x {perm = [1, 0]} : (tensor<8x6xbf16>) -> tensor<6x8xbf16>
  %e = graph.tanh %t : tensor<6x8xbf16>
  return %e : tensor<6x8xbf16>
}`},
	{name: "transpose-of-a-computed-value", kernels: 1, src: `
func.func @f(%x: tensor<?x8x16xf16>, %b: tensor<16xf16>) -> tensor<8x?x16xf16> {
  %a = graph.add %x, %b : (tensor<?x8x16xf16>, tensor<16xf16>) -> tensor<?x8x16xf16>
  %s = graph.silu %a : tensor<?x8x16xf16>
  %t = graph.transpose %s {perm = [1, 0, 2]} : (tensor<?x8x16xf16>) -> tensor<8x?x16xf16>
  %n = graph.neg %t : tensor<8x?x16xf16>
  return %n : tensor<8x?x16xf16>
}`},
	{name: "broadcast-to", kernels: 1, width: 4, src: `
func.func @f(%x: tensor<3x4x8xf32>, %c: tensor<4x1xf32>, %r: tensor<8xf32>) -> tensor<3x4x8xf32> {
  %bc = graph.broadcast_to %c : (tensor<4x1xf32>) -> tensor<3x4x8xf32>
  %br = graph.broadcast_to %r : (tensor<8xf32>) -> tensor<3x4x8xf32>
  %e = graph.exp %bc : tensor<3x4x8xf32>
  %a = graph.mul %x, %e : tensor<3x4x8xf32>
  %s = graph.sub %a, %br : tensor<3x4x8xf32>
  return %s : tensor<3x4x8xf32>
}`},
	{name: "slice", kernels: 1, width: 4, src: `
func.func @f(%x: tensor<6x16xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s = graph.slice %x {offsets = [1, 4], sizes = [4, 8]} : (tensor<6x16xf32>) -> tensor<4x8xf32>
  %a = graph.add %s, %y : tensor<4x8xf32>
  return %a : tensor<4x8xf32>
}`},
	// transformers' rotate_half: concat(-x[..., h:], x[..., :h]); the row's
	// loop is cut at the pieces' edge
	{name: "rotate-half", kernels: 1, width: 8, src: `
func.func @f(%q: tensor<2x4x16xbf16>, %cos: tensor<4x16xbf16>, %sin: tensor<4x16xbf16>) -> tensor<2x4x16xbf16> {
  %x1 = graph.slice %q {offsets = [0, 0, 0], sizes = [2, 4, 8]} : (tensor<2x4x16xbf16>) -> tensor<2x4x8xbf16>
  %x2 = graph.slice %q {offsets = [0, 0, 8], sizes = [2, 4, 8]} : (tensor<2x4x16xbf16>) -> tensor<2x4x8xbf16>
  %n = graph.neg %x2 : tensor<2x4x8xbf16>
  %r = graph.concat %n, %x1 {axis = -1} : (tensor<2x4x8xbf16>, tensor<2x4x8xbf16>) -> tensor<2x4x16xbf16>
  %a = graph.mul %q, %cos : (tensor<2x4x16xbf16>, tensor<4x16xbf16>) -> tensor<2x4x16xbf16>
  %b = graph.mul %r, %sin : (tensor<2x4x16xbf16>, tensor<4x16xbf16>) -> tensor<2x4x16xbf16>
  %y = graph.add %a, %b : tensor<2x4x16xbf16>
  return %y : tensor<2x4x16xbf16>
}`},
	{name: "concat-of-three-uneven-pieces", kernels: 1, width: 4, src: `
func.func @f(%a: tensor<3x2xf32>, %b: tensor<3x6xf32>, %c: tensor<3x4xf32>) -> tensor<3x12xf32> {
  %e = graph.exp %b : tensor<3x6xf32>
  %k = graph.concat %a, %e, %c {axis = 1} : (tensor<3x2xf32>, tensor<3x6xf32>, tensor<3x4xf32>) -> tensor<3x12xf32>
  %s = graph.sqrt %k : tensor<3x12xf32>
  return %s : tensor<3x12xf32>
}`},
	{name: "reshape-splitting-the-last-axis", kernels: 1, width: 8, src: `
func.func @f(%x: tensor<?x32xbf16>, %w: tensor<8xbf16>) -> tensor<?x4x8xbf16> {
  %r = graph.reshape %x : (tensor<?x32xbf16>) -> tensor<?x4x8xbf16>
  %m = graph.mul %r, %w : (tensor<?x4x8xbf16>, tensor<8xbf16>) -> tensor<?x4x8xbf16>
  return %m : tensor<?x4x8xbf16>
}`},
	{name: "reshape-merging-into-the-last-axis", kernels: 1, width: 4, src: `
func.func @f(%x: tensor<?x4x8xf32>, %y: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %e = graph.exp %x : tensor<?x4x8xf32>
  %r = graph.reshape %e : (tensor<?x4x8xf32>) -> tensor<?x32xf32>
  %a = graph.add %r, %y : tensor<?x32xf32>
  return %a : tensor<?x32xf32>
}`},
	// GQA's repeat_kv: [B, Hkv, T, D] -> [B, Hkv, 1, T, D] -> expand to
	// [B, Hkv, n, T, D] -> [B, Hkv * n, T, D]
	{name: "repeat-kv", kernels: 1, width: 8, src: `
func.func @f(%k: tensor<2x2x?x8xbf16>, %q: tensor<2x6x?x8xbf16>) -> tensor<2x6x?x8xbf16> {
  %u = graph.reshape %k : (tensor<2x2x?x8xbf16>) -> tensor<2x2x1x?x8xbf16>
  %e = graph.broadcast_to %u : (tensor<2x2x1x?x8xbf16>) -> tensor<2x2x3x?x8xbf16>
  %r = graph.reshape %e : (tensor<2x2x3x?x8xbf16>) -> tensor<2x6x?x8xbf16>
  %m = graph.mul %q, %r : tensor<2x6x?x8xbf16>
  return %m : tensor<2x6x?x8xbf16>
}`},
	// q as the projection writes it, [T, H * D], viewed as [1, T, H, D]
	// and transposed to [1, H, T, D] before the rotation
	{name: "projection-to-heads", kernels: 1, width: 8, src: `
func.func @f(%x: tensor<?x64xbf16>, %cos: tensor<1x1x?x16xbf16>) -> tensor<1x4x?x16xbf16> {
  %v = graph.reshape %x : (tensor<?x64xbf16>) -> tensor<1x?x4x16xbf16>
  %t = graph.transpose %v {perm = [0, 2, 1, 3]} : (tensor<1x?x4x16xbf16>) -> tensor<1x4x?x16xbf16>
  %m = graph.mul %t, %cos : (tensor<1x4x?x16xbf16>, tensor<1x1x?x16xbf16>) -> tensor<1x4x?x16xbf16>
  return %m : tensor<1x4x?x16xbf16>
}`},
	// row kernels read through views too: q of a projection viewed as
	// heads and normalised over each head (Qwen3's q_norm; the transpose
	// after it is a kernel of its own: views on results are not fused)
	// read through the reshape, stored through the transpose
	{name: "rmsnorm-of-heads", sums: true, kernels: 1, width: 8, src: `
func.func @f(%x: tensor<?x64xbf16>, %w: tensor<16xbf16>) -> tensor<1x4x?x16xbf16> {
  %v = graph.reshape %x : (tensor<?x64xbf16>) -> tensor<1x?x4x16xbf16>
  %n = graph.rmsnorm %v, %w {eps = 1.0e-06 : f32} : (tensor<1x?x4x16xbf16>, tensor<16xbf16>) -> tensor<1x?x4x16xbf16>
  %t = graph.transpose %n {perm = [0, 2, 1, 3]} : (tensor<1x?x4x16xbf16>) -> tensor<1x4x?x16xbf16>
  return %t : tensor<1x4x?x16xbf16>
}`},
	{name: "softmax-of-a-transpose", sums: true, kernels: 1, width: 4, src: `
func.func @f(%x: tensor<8x4x16xf32>, %b: tensor<16xf32>) -> tensor<4x8x16xf32> {
  %t = graph.transpose %x {perm = [1, 0, 2]} : (tensor<8x4x16xf32>) -> tensor<4x8x16xf32>
  %a = graph.add %t, %b : (tensor<4x8x16xf32>, tensor<16xf32>) -> tensor<4x8x16xf32>
  %s = graph.softmax %a : (tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  return %s : tensor<4x8x16xf32>
}`},
	{name: "layernorm-of-a-transposed-axis", sums: true, kernels: 1, width: 1, src: `
func.func @f(%x: tensor<2x3x10xf32>, %w: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<2x3x10xf32> {
  %n = graph.layernorm %x, %w, %b {axis = 1} : (tensor<2x3x10xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x10xf32>
  return %n : tensor<2x3x10xf32>
}`},
	// interleaved pairs, as Meta's and GPT-J's rotary embeddings take them:
	// x[..., ::2] and x[..., 1::2]
	{name: "strided-slices-every-two", kernels: 1, width: 1, src: `
func.func @f(%x: tensor<2x3x16xbf16>, %cos: tensor<3x8xbf16>, %sin: tensor<3x8xbf16>) -> tensor<2x3x8xbf16> {
  %x1 = graph.slice %x {offsets = [0, 0, 0], sizes = [2, 3, 8], strides = [1, 1, 2]} : (tensor<2x3x16xbf16>) -> tensor<2x3x8xbf16>
  %x2 = graph.slice %x {offsets = [0, 0, 1], sizes = [2, 3, 8], strides = [1, 1, 2]} : (tensor<2x3x16xbf16>) -> tensor<2x3x8xbf16>
  %a = graph.mul %x1, %cos : (tensor<2x3x8xbf16>, tensor<3x8xbf16>) -> tensor<2x3x8xbf16>
  %b = graph.mul %x2, %sin : (tensor<2x3x8xbf16>, tensor<3x8xbf16>) -> tensor<2x3x8xbf16>
  %y = graph.sub %a, %b : tensor<2x3x8xbf16>
  return %y : tensor<2x3x8xbf16>
}`},
	{name: "strided-slice-of-rows", kernels: 1, width: 4, src: `
func.func @f(%x: tensor<7x4xf32>) -> tensor<3x4xf32> {
  %s = graph.slice %x {offsets = [1, 0], sizes = [3, 4], strides = [2, 1]} : (tensor<7x4xf32>) -> tensor<3x4xf32>
  %e = graph.exp %s : tensor<3x4xf32>
  return %e : tensor<3x4xf32>
}`},
	{name: "strided-slice-alone", kernels: 1, src: `
func.func @f(%x: tensor<7x5xf32>) -> tensor<3x2xf32> {
  %s = graph.slice %x {offsets = [1, 1], sizes = [3, 2], strides = [2, 3]} : (tensor<7x5xf32>) -> tensor<3x2xf32>
  return %s : tensor<3x2xf32>
}`},
	// RoPE's rotate_half of a projection reshaped into heads: the roll's
	// index map composed with the reshape's (and a transpose's)
	{name: "roll-of-a-reshape", kernels: 1, src: `
func.func @f(%x: tensor<?x64xbf16>, %cos: tensor<?x1x1x16xbf16>, %sign: tensor<16xbf16>) -> tensor<?x1x4x16xbf16> {
  %v = graph.reshape %x : (tensor<?x64xbf16>) -> tensor<?x1x4x16xbf16>
  %a = graph.mul %v, %cos : (tensor<?x1x4x16xbf16>, tensor<?x1x1x16xbf16>) -> tensor<?x1x4x16xbf16>
  %r = graph.roll %v {shift = 8} : tensor<?x1x4x16xbf16>
  %b = graph.mul %r, %sign : (tensor<?x1x4x16xbf16>, tensor<16xbf16>) -> tensor<?x1x4x16xbf16>
  %y = graph.add %a, %b : tensor<?x1x4x16xbf16>
  return %y : tensor<?x1x4x16xbf16>
}`},
	{name: "roll-of-a-transposed-reshape", kernels: 1, src: `
func.func @f(%x: tensor<6x64xf32>, %c: tensor<6x16xf32>) -> tensor<4x6x16xf32> {
  %v = graph.reshape %x : (tensor<6x64xf32>) -> tensor<6x4x16xf32>
  %t = graph.transpose %v {perm = [1, 0, 2]} : (tensor<6x4x16xf32>) -> tensor<4x6x16xf32>
  %r = graph.roll %t {shift = -3} : tensor<4x6x16xf32>
  %y = graph.mul %r, %c : (tensor<4x6x16xf32>, tensor<6x16xf32>) -> tensor<4x6x16xf32>
  return %y : tensor<4x6x16xf32>
}`},
	// Qwen3's per-head RMSNorm before RoPE on a projection reshaped into
	// heads: one row kernel reading the projection at each column and at
	// the rotated one
	{name: "roll-of-a-norm-of-a-reshape", kernels: 1, sums: true, src: `
func.func @f(%x: tensor<?x64xbf16>, %w: tensor<16xbf16>, %cos: tensor<?x1x1x16xbf16>, %sign: tensor<16xbf16>) -> tensor<?x1x4x16xbf16> {
  %v = graph.reshape %x : (tensor<?x64xbf16>) -> tensor<?x1x4x16xbf16>
  %n = graph.rmsnorm %v, %w {eps = 1.0e-06 : f32} : (tensor<?x1x4x16xbf16>, tensor<16xbf16>) -> tensor<?x1x4x16xbf16>
  %a = graph.mul %n, %cos : (tensor<?x1x4x16xbf16>, tensor<?x1x1x16xbf16>) -> tensor<?x1x4x16xbf16>
  %r = graph.roll %n {shift = 8} : tensor<?x1x4x16xbf16>
  %b = graph.mul %r, %sign : (tensor<?x1x4x16xbf16>, tensor<16xbf16>) -> tensor<?x1x4x16xbf16>
  %y = graph.add %a, %b : tensor<?x1x4x16xbf16>
  return %y : tensor<?x1x4x16xbf16>
}`},
	// a concat along a leading axis, a kernel of its own: its elements
	// from the axis on (9 * 64 + 140 * 64 > 8192) copied in two chunks per
	// row, each instance one chunk of every operand
	{name: "concat-along-a-leading-axis-in-chunks", kernels: 1, src: `
func.func @f(%a: tensor<2x?x64xbf16>, %b: tensor<2x140x64xbf16>) -> tensor<2x?x64xbf16> {
  %c = graph.concat %a, %b {axis = 1} : (tensor<2x?x64xbf16>, tensor<2x140x64xbf16>) -> tensor<2x?x64xbf16>
  return %c : tensor<2x?x64xbf16>
}`},
	{name: "concat-along-a-leading-axis-static", kernels: 1, src: `
func.func @f(%a: tensor<3x100x40xf32>, %b: tensor<3x150x40xf32>) -> tensor<3x250x40xf32> {
  %c = graph.concat %a, %b {axis = 1} : (tensor<3x100x40xf32>, tensor<3x150x40xf32>) -> tensor<3x250x40xf32>
  return %c : tensor<3x250x40xf32>
}`},
	{name: "roll-under-a-transpose", kernels: 1, src: `
func.func @f(%x: tensor<4x3x8xf32>) -> tensor<3x4x8xf32> {
  %r = graph.roll %x {shift = 4} : tensor<4x3x8xf32>
  %t = graph.transpose %r {perm = [1, 0, 2]} : (tensor<4x3x8xf32>) -> tensor<3x4x8xf32>
  %n = graph.abs %t : tensor<3x4x8xf32>
  return %n : tensor<3x4x8xf32>
}`},
}

func TestDiffViews(t *testing.T) {
	for _, c := range viewCases {
		t.Run(c.name, func(t *testing.T) {
			pipeline := "decompose,fuse,lower-to-loops,sram-alloc"
			runDiff(t, diffCase{name: c.name, src: c.src, pipeline: pipeline, target: "h200", exact: !c.sums, dyn: 4, unfitOK: true})
			m := lowerText(t, c.src, pipeline, "h200")
			var kernels []loop.KernelOp
			for _, op := range m.Body().Ops() {
				if k, ok := loop.AsKernel(op); ok {
					kernels = append(kernels, k)
				}
			}
			require.Len(t, kernels, c.kernels, ir.Print(m.Operation, ir.PrintOptions{}))
			if c.width > 0 {
				assert.Equal(t, ir.IntAttr{Value: c.width, Type: ir.I64Type}, kernels[0].Operation.Attr("vector_width"))
			}
		})
	}
}

// TestSpanWidths: the loops of an element-wise kernel between the edges of
// concat pieces take each the widest vectors the reads of its pieces allow:
// DeepSeek's query heads, 128 columns copied and 64 of rotary embedding of
// interleaved pairs (read every second element, one lane at a time).
func TestSpanWidths(t *testing.T) {
	src := `
func.func @f(%q: tensor<4x192xbf16>, %c: tensor<4x32xbf16>) -> tensor<4x192xbf16> {
  %nope = graph.slice %q {offsets = [0, 0], sizes = [4, 128]} : (tensor<4x192xbf16>) -> tensor<4x128xbf16>
  %ev = graph.slice %q {offsets = [0, 128], sizes = [4, 32], strides = [1, 2]} : (tensor<4x192xbf16>) -> tensor<4x32xbf16>
  %od = graph.slice %q {offsets = [0, 129], sizes = [4, 32], strides = [1, 2]} : (tensor<4x192xbf16>) -> tensor<4x32xbf16>
  %a = graph.mul %ev, %c : tensor<4x32xbf16>
  %b = graph.mul %od, %c : tensor<4x32xbf16>
  %k = graph.concat %nope, %a, %b {axis = 1} : (tensor<4x128xbf16>, tensor<4x32xbf16>, tensor<4x32xbf16>) -> tensor<4x192xbf16>
  return %k : tensor<4x192xbf16>
}`
	pipeline := "decompose,fuse,lower-to-loops,sram-alloc"
	runDiff(t, diffCase{name: "span-widths", src: src, pipeline: pipeline, target: "h200", exact: true, dyn: 4, unfitOK: true})
	m := lowerText(t, src, pipeline, "h200")
	text := ir.Print(m.Operation, ir.PrintOptions{})
	var steps []string
	for _, line := range strings.Split(text, "\n") {
		if f := strings.Fields(line); len(f) > 3 && f[0] == "loop.for" && strings.Contains(line, `dist = "threads"`) {
			steps = append(steps, strings.TrimSuffix(f[3], ","))
		}
	}
	// the 128 copied columns by 8 lanes (16 bytes), the two rotary pieces by 1
	assert.Equal(t, []string{"%c8", "%c1", "%c1"}, steps, text)
	assert.Contains(t, text, "-> vector<8xbf16>")
}

// TestViewOfAReductionStaysApart: a view of a row kernel's reduction is a
// kernel of its own (a view reads element-wise work only).
func TestViewOfAReductionStaysApart(t *testing.T) {
	m := lowerText(t, `
func.func @f(%x: tensor<4x8xf32>) -> tensor<2x2xf32> {
  %s = graph.reduce_sum %x {axes = [1]} : (tensor<4x8xf32>) -> tensor<4xf32>
  %r = graph.reshape %s : (tensor<4xf32>) -> tensor<2x2xf32>
  %e = graph.exp %r : tensor<2x2xf32>
  return %e : tensor<2x2xf32>
}`, "fuse,lower-to-loops", "h200")
	text := ir.Print(m.Operation, ir.PrintOptions{})
	assert.Equal(t, 2, strings.Count(text, "loop.kernel "), text)
}

// TestConcatChunks: a concat along a leading axis, a kernel of its own,
// runs instances over its rows times chunks of 8192 elements from the
// axis on (3 rows of 100 * 40 + 150 * 40 = 10000 elements: 6 instances),
// each copying its chunk of every operand between clamped bounds; a short
// one keeps an instance per row and whole loops.
func TestConcatChunks(t *testing.T) {
	long := viewCase(t, "concat-along-a-leading-axis-static")
	text := ir.Print(lowerText(t, long, "decompose,fuse,lower-to-loops,sram-alloc", "h200").Operation, ir.PrintOptions{})
	assert.Contains(t, text, "loop.parallel %c0, %c6, %c1 {dist = \"grid\"}", text)
	assert.Equal(t, 4, strings.Count(text, "loop.mini"), text)
	short := `
func.func @f(%a: tensor<3x10x40xf32>, %b: tensor<3x15x40xf32>) -> tensor<3x25x40xf32> {
  %c = graph.concat %a, %b {axis = 1} : (tensor<3x10x40xf32>, tensor<3x15x40xf32>) -> tensor<3x25x40xf32>
  return %c : tensor<3x25x40xf32>
}`
	text = ir.Print(lowerText(t, short, "decompose,fuse,lower-to-loops,sram-alloc", "h200").Operation, ir.PrintOptions{})
	assert.Contains(t, text, "loop.parallel %c0, %c3, %c1 {dist = \"grid\"}", text)
	assert.NotContains(t, text, "loop.mini", text)
}

// viewCase is the source of viewCases' case name.
func viewCase(t *testing.T, name string) string {
	for _, c := range viewCases {
		if c.name == name {
			return c.src
		}
	}
	t.Fatalf("no view case %s", name)
	return ""
}
