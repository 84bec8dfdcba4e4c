package ptx

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	geval "github.com/tensorforge/tensorforge/dialects/graph/eval"
	leval "github.com/tensorforge/tensorforge/dialects/loop/eval"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

// The differential tests run the emitted PTX in the simulator and compare
// every result with the loop interpreter's (dialects/loop/eval) on the
// same lowered module: the mapping onto CTAs, groups, unrolled copies,
// guards, combines, shared memory and addresses all have to be right for
// the results to agree, and the simulator faults on misaligned or
// out-of-bounds accesses and on shuffles or barriers not all threads
// reach.

// simCase is one function run on inputs of the shapes given.
type simCase struct {
	fn     string
	shapes [][]int64
	// ulps bounds the distance to the interpreter's results; rel, when
	// set, allows an absolute error of rel times the results' RMS too
	// (sums in another order).
	ulps float64
	rel  float64
	// ofInputs counts the ULPs of max(|y|, |x|) over the inputs x at the
	// element (element-wise functions of same-shaped inputs): logaddexp's
	// error measure in docs/numerics.md, whose max-subtracted form has
	// errors absolute in the inputs' magnitude
	ofInputs bool
	// prepare, when set, rewrites the random inputs (rows of extreme
	// values)
	prepare func(inputs []*geval.Tensor)
}

// randomInput fills a tensor of kind k: normal values of scale 3 with the
// special values sprinkled in, or integers over the kind's range.
func randomInput(rng *rand.Rand, k ir.ElemKind, shape []int64, specials bool) *geval.Tensor {
	t := geval.NewTensor(k, shape)
	sp := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), 1, -1, 88.8, -104, 1e-40, 2.5, -0.5}
	for i := range t.Data {
		var v float64
		switch {
		case k == ir.I1:
			v = float64(rng.Intn(2))
		case k == ir.I64 && i%2 == 1:
			v = float64(rng.Int63n(64) - 8) // small: indices inside and just outside a row
		case k.IsInt():
			lo, hi := k.IntRange()
			lo, hi = max(lo, -1<<40), min(hi, 1<<40) // i64's span overflows an int64
			v = float64(lo + rng.Int63n(hi-lo+1))
		case specials && i%7 == 3:
			v = sp[rng.Intn(len(sp))]
		default:
			v = rng.NormFloat64() * 3
		}
		t.Data[i] = numeric.RoundTo(v, k)
	}
	return t
}

// runSimCase lowers src, runs fn both ways and compares.
func runSimCase(t *testing.T, m ir.Module, c simCase, specials bool) {
	t.Helper()
	f, ok := m.Lookup(c.fn)
	require.True(t, ok, "no function %s", c.fn)
	rng := rand.New(rand.NewSource(1))
	var inputs []*geval.Tensor
	nres := int(f.Operation.Attr("num_results").(ir.IntAttr).Value)
	for i, a := range f.Args()[:len(f.Args())-nres] {
		k := a.Type().(ir.MemRefType).Elem.Kind
		inputs = append(inputs, randomInput(rng, k, c.shapes[i], specials))
	}
	if c.prepare != nil {
		c.prepare(inputs)
	}
	want := reference(t, m, c.fn, inputs)
	got, err := simRunFunc(m, c.fn, inputs)
	require.NoError(t, err, "%s", c.fn)
	require.Len(t, got, len(want))
	for r := range want {
		w, g := want[r], got[r]
		require.Equal(t, fmt.Sprint(w.Shape), fmt.Sprint(g.Shape), "%s result %d", c.fn, r)
		var rms float64
		for _, v := range w.Data {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				rms += v * v
			}
		}
		rms = math.Sqrt(rms / float64(max(len(w.Data), 1)))
		bad := 0
		for i := range w.Data {
			d := numeric.ULPDiff(w.Data[i], g.Data[i], w.Elem)
			if c.ofInputs && !math.IsNaN(w.Data[i]) && !math.IsInf(w.Data[i], 0) {
				scale := math.Abs(w.Data[i])
				for _, in := range inputs {
					if x := in.Data[i]; !math.IsNaN(x) && !math.IsInf(x, 0) {
						scale = math.Max(scale, math.Abs(x))
					}
				}
				d = math.Abs(w.Data[i]-g.Data[i]) / ulpAt(scale, w.Elem)
			}
			if d <= c.ulps || (c.rel > 0 && math.Abs(w.Data[i]-g.Data[i]) <= c.rel*rms) {
				continue
			}
			if bad < 5 {
				args := ""
				if len(inputs) > 0 && len(inputs[0].Data) == len(w.Data) {
					args = ir.FormatFloat(inputs[0].Data[i], ir.F64)
				}
				t.Errorf("%s result %d element %d (input %s): simulated %v, interpreted %v (%.3g ULP)",
					c.fn, r, i, args, g.Data[i], w.Data[i], d)
			}
			bad++
		}
		if bad > 0 {
			t.Errorf("%s result %d: %d of %d elements differ", c.fn, r, bad, len(w.Data))
		}
	}
}

// ulpAt is the spacing of f32 (f64 for f64) above |x|.
func ulpAt(x float64, k ir.ElemKind) float64 {
	if k == ir.F64 {
		return math.Nextafter(math.Abs(x), math.Inf(1)) - math.Abs(x)
	}
	f := float32(math.Abs(x))
	return float64(math.Nextafter32(f, float32(math.Inf(1)))) - float64(f)
}

// lowerFile lowers a testdata file for the h200.
func lowerFile(t *testing.T, name string) ir.Module {
	t.Helper()
	src, err := os.ReadFile(name)
	require.NoError(t, err)
	return lower(t, string(src), fullPipeline, "h200")
}

func TestSimulatedShapes(t *testing.T) {
	m := lowerFile(t, "testdata/shapes.tir")
	cases := []simCase{
		{fn: "cast_f32_bf16", shapes: [][]int64{{1003}}},
		{fn: "cast_f32_f16", shapes: [][]int64{{1003}}},
		{fn: "cast_f16_f32", shapes: [][]int64{{1003}}},
		{fn: "cast_f32_f8e4m3", shapes: [][]int64{{1003}}},
		{fn: "cast_f8e4m3_f32", shapes: [][]int64{{259}}},
		{fn: "cast_f32_f8e5m2", shapes: [][]int64{{1003}}},
		{fn: "cast_f64_bf16", shapes: [][]int64{{1003}}},
		{fn: "cast_f32_i8", shapes: [][]int64{{1003}}},
		{fn: "cast_i32_f32", shapes: [][]int64{{1003}}},
		{fn: "cmp_select", shapes: [][]int64{{1001}, {1001}}},
		{fn: "mask", shapes: [][]int64{{37, 24}}},
		{fn: "quantize", shapes: [][]int64{{1001}}},
		{fn: "bias_2d", shapes: [][]int64{{13, 101}, {13, 1}}},
		{fn: "bias_2d", shapes: [][]int64{{3, 1030}, {3, 1}}},
		{fn: "rank3", shapes: [][]int64{{7, 5, 12}, {12}}},
		{fn: "transpose", shapes: [][]int64{{53, 96}}},
		{fn: "matmul", shapes: [][]int64{{9, 64}, {64, 48}}},
		{fn: "colsum", shapes: [][]int64{{37, 48}}},
		{fn: "softmax_100", shapes: [][]int64{{37, 100}}, ulps: 96, rel: 1e-6},
		{fn: "rmsnorm_64", shapes: [][]int64{{301, 64}, {64}}, ulps: 1, rel: 1e-3},
		{fn: "layernorm_1000", shapes: [][]int64{{5, 1000}, {1000}, {1000}}, ulps: 64, rel: 1e-5},
		{fn: "row_max_min", shapes: [][]int64{{41, 256}}},
		{fn: "row_sum_f64", shapes: [][]int64{{7, 300}}, ulps: 64, rel: 1e-14},
	}
	for _, c := range cases {
		t.Run(c.fn, func(t *testing.T) {
			runSimCase(t, m, c, !strings.HasPrefix(c.fn, "rmsnorm") && !strings.HasPrefix(c.fn, "layernorm"))
		})
	}
}

// TestSimulatedSharedSram runs the row kernels with every sram buffer in
// shared memory (no register budget), with barriers between the loops.
func TestSimulatedSharedSram(t *testing.T) {
	regBudget = 0
	defer func() { regBudget = 64 }()
	m := lowerFile(t, "testdata/shapes.tir")
	for _, c := range []simCase{
		{fn: "softmax_100", shapes: [][]int64{{37, 100}}, ulps: 96, rel: 1e-6},
		{fn: "rmsnorm_64", shapes: [][]int64{{301, 64}, {64}}, ulps: 1, rel: 1e-3},
		{fn: "layernorm_1000", shapes: [][]int64{{5, 1000}, {1000}, {1000}}, ulps: 64, rel: 1e-5},
	} {
		t.Run(c.fn, func(t *testing.T) { runSimCase(t, m, c, false) })
	}
}

func TestSimulatedWorkloads(t *testing.T) {
	src := `
func.func @rms_silu_mul(%x: tensor<?x64xbf16>, %w: tensor<64xbf16>, %z: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %n = graph.rmsnorm %x, %w {eps = 1.0e-05 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  %s = graph.silu %n : tensor<?x64xbf16>
  %y = graph.mul %s, %z : tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}
func.func @add_rmsnorm(%x: tensor<?x2048xbf16>, %r: tensor<?x2048xbf16>, %w: tensor<2048xbf16>)
    -> (tensor<?x2048xbf16>, tensor<?x2048xbf16>) {
  %h = graph.add %x, %r : tensor<?x2048xbf16>
  %n = graph.rmsnorm %h, %w {eps = 1.0e-05 : f32} : (tensor<?x2048xbf16>, tensor<2048xbf16>) -> tensor<?x2048xbf16>
  return %h, %n : tensor<?x2048xbf16>, tensor<?x2048xbf16>
}
func.func @swiglu(%g: tensor<?x40xbf16>, %u: tensor<?x40xbf16>) -> tensor<?x40xbf16> {
  %s = graph.silu %g : tensor<?x40xbf16>
  %y = graph.mul %s, %u : tensor<?x40xbf16>
  return %y : tensor<?x40xbf16>
}
func.func @softmax(%s: tensor<?x4096xbf16>) -> tensor<?x4096xbf16> {
  %x = graph.cast %s : (tensor<?x4096xbf16>) -> tensor<?x4096xf32>
  %p = graph.softmax %x {axis = -1} : tensor<?x4096xf32>
  %y = graph.cast %p : (tensor<?x4096xf32>) -> tensor<?x4096xbf16>
  return %y : tensor<?x4096xbf16>
}
func.func @lse_and_max(%s: tensor<?x96xbf16>) -> (tensor<?xf32>, tensor<?xf32>) {
  %x = graph.cast %s : (tensor<?x96xbf16>) -> tensor<?x96xf32>
  %l = graph.logsumexp %x {axis = -1} : (tensor<?x96xf32>) -> tensor<?xf32>
  %m = graph.reduce_max %x {axes = [-1]} : (tensor<?x96xf32>) -> tensor<?xf32>
  return %l, %m : tensor<?xf32>, tensor<?xf32>
}
func.func @logaddexp(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xf32> {
  %y = graph.logaddexp %a, %b : tensor<?xf32>
  return %y : tensor<?xf32>
}
func.func @two_kernels(%x: tensor<?x48xf32>, %w: tensor<48x16xf32>) -> tensor<?x16xf32> {
  %e = graph.exp %x : tensor<?x48xf32>
  %y = graph.matmul %e, %w : (tensor<?x48xf32>, tensor<48x16xf32>) -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}
`
	m := lower(t, src, fullPipeline, "h200")
	for _, c := range []simCase{
		{fn: "rms_silu_mul", shapes: [][]int64{{67, 64}, {64}, {67, 64}}, ulps: 2},
		{fn: "add_rmsnorm", shapes: [][]int64{{3, 2048}, {3, 2048}, {2048}}, ulps: 1},
		{fn: "swiglu", shapes: [][]int64{{9, 40}, {9, 40}}, ulps: 1},
		{fn: "softmax", shapes: [][]int64{{2, 4096}}, ulps: 1},
		{fn: "lse_and_max", shapes: [][]int64{{11, 96}}, ulps: 4},
		{fn: "logaddexp", shapes: [][]int64{{1003}, {1003}}, ulps: 4, ofInputs: true},
		{fn: "two_kernels", shapes: [][]int64{{5, 48}, {48, 16}}, ulps: 4, rel: 1e-6},
	} {
		t.Run(c.fn, func(t *testing.T) { runSimCase(t, m, c, c.fn == "logaddexp" || c.fn == "softmax") })
	}
}

func TestSimulatedMore(t *testing.T) {
	src := `
func.func @concat(%a: tensor<?x3xf32>, %b: tensor<?x5xf32>) -> tensor<?x8xf32> {
  %y = graph.concat %a, %b {axis = 1} : (tensor<?x3xf32>, tensor<?x5xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}
func.func @slice(%a: tensor<9x12xf32>) -> tensor<4x5xf32> {
  %y = graph.slice %a {offsets = [2, 3], sizes = [4, 5]} : (tensor<9x12xf32>) -> tensor<4x5xf32>
  return %y : tensor<4x5xf32>
}
func.func @reshape(%a: tensor<?x6xf32>) -> tensor<?x2x3xf32> {
  %y = graph.reshape %a : (tensor<?x6xf32>) -> tensor<?x2x3xf32>
  return %y : tensor<?x2x3xf32>
}
func.func @bcast(%a: tensor<1x5xbf16>) -> tensor<7x5xbf16> {
  %y = graph.broadcast_to %a : (tensor<1x5xbf16>) -> tensor<7x5xbf16>
  return %y : tensor<7x5xbf16>
}
func.func @dense() -> tensor<2x3xf32> {
  %c = graph.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  return %c : tensor<2x3xf32>
}
func.func @total(%a: tensor<13x7xf32>) -> tensor<f32> {
  %y = graph.reduce_sum %a {axes = [0, 1]} : (tensor<13x7xf32>) -> tensor<f32>
  return %y : tensor<f32>
}
func.func @ints(%a: tensor<?xi32>, %b: tensor<?xi32>) -> (tensor<?xi32>, tensor<?xi8>) {
  %s = graph.mul %a, %b : tensor<?xi32>
  %t = graph.add %s, %a : tensor<?xi32>
  %n = graph.cast %t : (tensor<?xi32>) -> tensor<?xi8>
  return %t, %n : tensor<?xi32>, tensor<?xi8>
}
func.func @half_math(%a: tensor<?x16xf16>) -> tensor<?x16xf16> {
  %e = graph.exp %a : tensor<?x16xf16>
  %m = graph.reduce_max %a {axes = [-1], keepdim = true} : (tensor<?x16xf16>) -> tensor<?x1xf16>
  %y = graph.sub %e, %m : (tensor<?x16xf16>, tensor<?x1xf16>) -> tensor<?x16xf16>
  return %y : tensor<?x16xf16>
}
func.func @pick(%c: tensor<?xi1>, %a: tensor<?xbf16>, %b: tensor<?xbf16>) -> tensor<?xbf16> {
  %y = graph.select %c, %a, %b : (tensor<?xi1>, tensor<?xbf16>, tensor<?xbf16>) -> tensor<?xbf16>
  return %y : tensor<?xbf16>
}
func.func @rope(%q: tensor<2x4x8x16xbf16>, %cos: tensor<2x1x8x16xbf16>, %sin: tensor<2x1x8x16xbf16>, %sign: tensor<16xbf16>) -> tensor<2x4x8x16xbf16> {
  %a = graph.mul %q, %cos : (tensor<2x4x8x16xbf16>, tensor<2x1x8x16xbf16>) -> tensor<2x4x8x16xbf16>
  %r = graph.roll %q {shift = 8} : tensor<2x4x8x16xbf16>
  %rs = graph.mul %r, %sign : (tensor<2x4x8x16xbf16>, tensor<16xbf16>) -> tensor<2x4x8x16xbf16>
  %b = graph.mul %rs, %sin : (tensor<2x4x8x16xbf16>, tensor<2x1x8x16xbf16>) -> tensor<2x4x8x16xbf16>
  %y = graph.add %a, %b : tensor<2x4x8x16xbf16>
  return %y : tensor<2x4x8x16xbf16>
}
func.func @roll_rows(%x: tensor<?x12xf32>) -> tensor<?x12xf32> {
  %y = graph.roll %x {shift = -3} : tensor<?x12xf32>
  return %y : tensor<?x12xf32>
}
func.func @roll_bcast(%a: tensor<3x2x8xf32>, %b: tensor<2x8xf32>, %c: tensor<3x1x8xf32>) -> tensor<3x2x8xf32> {
  %r = graph.roll %b {shift = -2} : tensor<2x8xf32>
  %s = graph.roll %c {shift = 3} : tensor<3x1x8xf32>
  %m = graph.min %a, %r : (tensor<3x2x8xf32>, tensor<2x8xf32>) -> tensor<3x2x8xf32>
  %y = graph.add %m, %s : (tensor<3x2x8xf32>, tensor<3x1x8xf32>) -> tensor<3x2x8xf32>
  return %y : tensor<3x2x8xf32>
}
func.func @cross_entropy(%x: tensor<?x40xbf16>, %t: tensor<?x1xi64>) -> tensor<?x1xf32> {
  %f = graph.cast %x : (tensor<?x40xbf16>) -> tensor<?x40xf32>
  %l = graph.logsumexp %f {axis = -1, keepdim = true} : (tensor<?x40xf32>) -> tensor<?x1xf32>
  %g = graph.gather %f, %t {axis = -1} : (tensor<?x40xf32>, tensor<?x1xi64>) -> tensor<?x1xf32>
  %y = graph.sub %l, %g : tensor<?x1xf32>
  return %y : tensor<?x1xf32>
}
func.func @gather_cols(%x: tensor<6x9xf32>, %t: tensor<3x9xi32>) -> tensor<3x9xf32> {
  %g = graph.gather %x, %t {axis = 0} : (tensor<6x9xf32>, tensor<3x9xi32>) -> tensor<3x9xf32>
  return %g : tensor<3x9xf32>
}
func.func @passthrough(%a: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>) {
  return %a, %a : tensor<?x4xf32>, tensor<?x4xf32>
}
`
	m := lower(t, src, fullPipeline, "h200")
	for _, c := range []simCase{
		{fn: "concat", shapes: [][]int64{{5, 3}, {5, 5}}},
		{fn: "rope", shapes: [][]int64{{2, 4, 8, 16}, {2, 1, 8, 16}, {2, 1, 8, 16}, {16}}},
		{fn: "roll_rows", shapes: [][]int64{{7, 12}}},
		{fn: "roll_bcast", shapes: [][]int64{{3, 2, 8}, {2, 8}, {3, 1, 8}}},
		{fn: "slice", shapes: [][]int64{{9, 12}}},
		{fn: "reshape", shapes: [][]int64{{7, 6}}},
		{fn: "bcast", shapes: [][]int64{{1, 5}}},
		{fn: "dense", shapes: nil},
		{fn: "total", shapes: [][]int64{{13, 7}}, ulps: 4, rel: 1e-6},
		{fn: "ints", shapes: [][]int64{{37}, {37}}},
		{fn: "half_math", shapes: [][]int64{{9, 16}}, ulps: 1},
		{fn: "pick", shapes: [][]int64{{101}, {101}, {101}}},
		{fn: "passthrough", shapes: [][]int64{{3, 4}}},
		// random integers of the whole i64 / i32 range: indices are clamped alike
		{fn: "cross_entropy", shapes: [][]int64{{11, 40}, {11, 1}}, ulps: 4, rel: 1e-6},
		{fn: "gather_cols", shapes: [][]int64{{6, 9}, {3, 9}}},
	} {
		t.Run(c.fn, func(t *testing.T) { runSimCase(t, m, c, false) })
	}
}

// TestSimulatedOnline runs online row kernels (rows beyond the shared
// memory of a block: the max and the sum of exp in one pass, chunk by
// chunk, then the row read again) against the loop interpreter, with
// +-inf and NaN among the inputs too.
// onlineSrc holds rows too long for a block's shared memory (the online
// schedule), of f32 and bf16, with a shorter last chunk (70000).
const onlineSrc = `
func.func @lse(%x: tensor<?x70000xf32>) -> tensor<?xf32> {
  %y = graph.logsumexp %x {axis = -1} : (tensor<?x70000xf32>) -> tensor<?xf32>
  return %y : tensor<?xf32>
}
func.func @softmax(%x: tensor<?x70000xbf16>) -> tensor<?x70000xbf16> {
  %y = graph.softmax %x {axis = -1} : tensor<?x70000xbf16>
  return %y : tensor<?x70000xbf16>
}
func.func @lse_split(%x: tensor<?x65536xbf16>) -> tensor<?xbf16> {
  %y = graph.logsumexp %x {axis = -1} : (tensor<?x65536xbf16>) -> tensor<?xbf16>
  return %y : tensor<?xbf16>
}
`

func TestSimulatedOnline(t *testing.T) {
	src := onlineSrc
	m := lower(t, src, fullPipeline, "h200")
	text := ir.Print(m.Operation, ir.PrintOptions{})
	// logsumexp splits its rows: 70000 f32 in 4 of 17500 (a split of
	// 8750 would not be a multiple of the vector), 65536 in 16 of 4096;
	// softmax's bf16 rows of 70000 in 2 of 35000, with a third kernel
	// normalising the splits; the rows are `?`, so each has its kernel of
	// one instance per row too, launched for 264 rows and more
	require.Equal(t, 6, strings.Count(text, `schedule = "online"`))
	require.Equal(t, 3, strings.Count(text, `min_rows = 264`))
	require.Contains(t, text, "memref<?x2xf32, dram>")
	require.Contains(t, text, "row_max")
	require.Contains(t, text, "memref<?x4xf32, dram>")
	require.Contains(t, text, "memref<?x16xf32, dram>")
	// the chunk each thread stores and reads back lives in its registers,
	// the row's shorter last chunk (70000 = 17 x 4096 + 368) in a prefix of them
	files, err := emitted(m)
	require.NoError(t, err)
	for _, fl := range files {
		if fl.Name == "lse.ptx" || fl.Name == "softmax.ptx" {
			require.Contains(t, fl.Text, "Sram in registers: %chunk", fl.Name)
		}
	}
	for _, c := range []simCase{
		{fn: "lse", shapes: [][]int64{{2, 70000}}, ulps: 8, rel: 1e-6},
		{fn: "lse_split", shapes: [][]int64{{3, 65536}}, ulps: 1},
		{fn: "softmax", shapes: [][]int64{{2, 70000}}, ulps: 1},
	} {
		for _, specials := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/specials=%v", c.fn, specials), func(t *testing.T) { runSimCase(t, m, c, specials) })
		}
	}
	// the kernels of one instance per row, which a few rows run when no
	// row count is split (split-rows-below=1): unguarded
	whole := lower(t, src, strings.Replace(fullPipeline, "lower-to-loops", "lower-to-loops{split-rows-below=1}", 1), "h200")
	wholeText := ir.Print(whole.Operation, ir.PrintOptions{})
	require.Equal(t, 3, strings.Count(wholeText, `schedule = "online"`))
	require.NotContains(t, wholeText, "rows_of")
	for _, c := range []simCase{
		{fn: "lse", shapes: [][]int64{{2, 70000}}, ulps: 8, rel: 1e-6},
		{fn: "lse_split", shapes: [][]int64{{3, 65536}}, ulps: 1},
		{fn: "softmax", shapes: [][]int64{{2, 70000}}, ulps: 1},
	} {
		for _, specials := range []bool{false, true} {
			t.Run(fmt.Sprintf("whole/%s/specials=%v", c.fn, specials), func(t *testing.T) { runSimCase(t, whole, c, specials) })
		}
	}
}

// TestSimulatedPipeline runs the online kernels with their chunk loops
// pipelined (Pipeline: the next chunk's loads issued at the top of each
// iteration, the last one's predicated off), f32 and bf16 rows with a
// shorter last chunk, split rows and whole, specials among the inputs.
func TestSimulatedPipeline(t *testing.T) {
	defer func(on bool) { Pipeline = on }(Pipeline)
	Pipeline = true
	src := onlineSrc + `
func.func @lse_bf16(%x: tensor<?x20000xbf16>) -> tensor<?xf32> {
  %c = graph.cast %x : (tensor<?x20000xbf16>) -> tensor<?x20000xf32>
  %y = graph.logsumexp %c {axis = -1} : (tensor<?x20000xf32>) -> tensor<?xf32>
  return %y : tensor<?xf32>
}
`
	for _, pipeline := range []string{fullPipeline, strings.Replace(fullPipeline, "lower-to-loops", "lower-to-loops{split-rows-below=1}", 1)} {
		m := lower(t, src, pipeline, "h200")
		files, err := emitted(m)
		require.NoError(t, err)
		for _, fl := range files {
			if strings.HasSuffix(fl.Name, ".ptx") {
				require.Contains(t, fl.Text, "the next chunk's loads, in flight while this one is combined", fl.Name)
			}
		}
		for _, c := range []simCase{
			{fn: "lse", shapes: [][]int64{{2, 70000}}, ulps: 8, rel: 1e-6},
			{fn: "softmax", shapes: [][]int64{{2, 70000}}, ulps: 1},
			{fn: "lse_split", shapes: [][]int64{{3, 65536}}, ulps: 1},
			{fn: "lse_bf16", shapes: [][]int64{{3, 20000}}, ulps: 8, rel: 1e-6},
		} {
			for _, specials := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/split=%v/specials=%v", c.fn, pipeline == fullPipeline, specials), func(t *testing.T) {
					runSimCase(t, m, c, specials)
				})
			}
		}
	}
}

// TestSimulatedReduceKernels runs reduce kernels with their producers and
// consumers (testdata/reduce_kernels.tir): one kernel each, against the
// loop interpreter, specials among the inputs.
func TestSimulatedReduceKernels(t *testing.T) {
	m := lowerFile(t, "testdata/reduce_kernels.tir")
	text := ir.Print(m.Operation, ir.PrintOptions{})
	require.Equal(t, 6, strings.Count(text, "loop.kernel {"))
	// every kernel reads vectors along the channels (16 bytes a thread)
	require.Equal(t, 0, strings.Count(text, "vector_width = 1}"), text)
	for _, c := range []simCase{
		{fn: "chanmax", shapes: [][]int64{{2048, 24}}},
		{fn: "colsum", shapes: [][]int64{{6, 40}, {40}}, ulps: 4, rel: 1e-6},
		{fn: "heads_mean", shapes: [][]int64{{5, 32}, {4, 1}}, ulps: 1},
		{fn: "tokmax", shapes: [][]int64{{2, 7, 24}, {1, 1, 24}}},
		{fn: "rms_over_tokens", shapes: [][]int64{{3, 5, 16}}, ulps: 2},
	} {
		for _, specials := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/specials=%v", c.fn, specials), func(t *testing.T) { runSimCase(t, m, c, specials) })
		}
	}
}

// TestSimulatedViews runs element-wise kernels that read through views
// (testdata/views.tir): the loads follow the views' index maps, vectors
// where the column stays contiguous, one lane at a time where a transpose
// moves it, and the loop over the row cut at the edges of concat pieces.
func TestSimulatedViews(t *testing.T) {
	m := lowerFile(t, "testdata/views.tir")
	for _, c := range []simCase{
		{fn: "transpose_heads", shapes: [][]int64{{4, 6, 8}, {6, 4, 8}, {8}}, ulps: 2},
		{fn: "transpose_last", shapes: [][]int64{{8, 6}}, ulps: 1},
		{fn: "broadcasts", shapes: [][]int64{{3, 4, 8}, {4, 1}, {8}}, ulps: 2},
		{fn: "slice_add", shapes: [][]int64{{6, 16}, {4, 8}}},
		{fn: "rotate_half", shapes: [][]int64{{2, 4, 16}, {4, 16}, {4, 16}}},
		{fn: "concat3", shapes: [][]int64{{3, 2}, {3, 6}, {3, 4}}, ulps: 2},
		{fn: "split_last", shapes: [][]int64{{5, 32}, {8}}},
		{fn: "merge_last", shapes: [][]int64{{5, 4, 8}, {5, 32}}, ulps: 2},
		{fn: "repeat_kv", shapes: [][]int64{{2, 2, 3, 8}, {2, 6, 3, 8}}},
		{fn: "to_heads", shapes: [][]int64{{7, 64}, {1, 1, 7, 16}}},
		{fn: "qnorm", shapes: [][]int64{{6, 64}, {16}}, ulps: 1, rel: 1e-3},
		{fn: "softmax_t", shapes: [][]int64{{8, 4, 16}, {16}}, ulps: 96, rel: 1e-6},
		{fn: "every_two", shapes: [][]int64{{2, 3, 16}, {3, 8}, {3, 8}}},
		// rolls of views: RoPE's rotate_half of a projection reshaped
		// into heads (and transposed), one kernel
		{fn: "rope_heads", shapes: [][]int64{{5, 64}, {5, 1, 1, 16}, {5, 1, 1, 16}, {16}}},
		{fn: "rope_heads_t", shapes: [][]int64{{6, 64}, {6, 16}}},
		{fn: "norm_rope_heads", shapes: [][]int64{{5, 64}, {16}, {5, 1, 1, 16}, {16}}, ulps: 2, rel: 1e-3},
		// a concat along the tokens in chunks of 8192 elements (two per row)
		{fn: "cat_tokens", shapes: [][]int64{{2, 9, 64}, {2, 140, 64}}},
		// concats along a row: a part of the kernel per piece
		{fn: "rows2", shapes: [][]int64{{4, 64}, {2, 64}, {6, 64}}},
		{fn: "kv_append", shapes: [][]int64{{2, 3, 5, 16}, {2, 3, 1, 16}, {16}}},
		{fn: "computed_piece", shapes: [][]int64{{3, 8}, {5, 8}}, ulps: 2, rel: 1e-3},
		{fn: "softmax_rows", shapes: [][]int64{{2, 40}, {3, 40}}, ulps: 96, rel: 1e-6},
		{fn: "nested_slice", shapes: [][]int64{{2, 8}, {3, 8}, {4, 8}}},
		{fn: "transposed", shapes: [][]int64{{4, 2, 8}, {4, 1, 8}}, ulps: 1},
	} {
		t.Run(c.fn, func(t *testing.T) { runSimCase(t, m, c, true) })
	}
}

// TestSimulatedShortUnroll runs flat kernels with short loops
// (testdata/short_unroll.tir) with every such loop unrolled, ShortUnroll
// copies per thread with the loads of the copies first, as kernels of
// many tiles take them: guards (48 of 64 iterations), concat pieces, views.
func TestSimulatedShortUnroll(t *testing.T) {
	defer func(n int64, u int) { shortUnrollTiles, ShortUnroll = n, u }(shortUnrollTiles, ShortUnroll)
	for _, u := range []int{2, 4} {
		shortUnrollTiles, ShortUnroll = 0, u
		m := lowerFile(t, "testdata/short_unroll.tir")
		files, err := emitted(m)
		require.NoError(t, err)
		for _, c := range []simCase{
			{fn: "heads_t", shapes: [][]int64{{3, 5, 4, 64}, {64}}, ulps: 1},
			{fn: "rope_half", shapes: [][]int64{{5, 4, 128}, {4, 128}, {4, 128}}, ulps: 1},
			{fn: "latent_keys", shapes: [][]int64{{2, 6, 3, 32}, {2, 1, 6, 16}}},
			{fn: "pairs", shapes: [][]int64{{7, 3, 96}, {3, 48}}, ulps: 1},
		} {
			t.Run(fmt.Sprintf("%s/unroll=%d", c.fn, u), func(t *testing.T) {
				unrolled := false
				for _, fl := range files {
					if fl.Name == identifier(c.fn)+".ptx" {
						unrolled = strings.Contains(fl.Text, fmt.Sprintf(", %d per thread.", u))
					}
				}
				require.True(t, unrolled, "%s: no loop of %d copies per thread", c.fn, u)
				runSimCase(t, m, c, true)
			})
		}
	}
}

// TestSimulatedIndexCopy: the caches the PTX kernels update in place hold
// what the loop interpreter's do (the new positions, one past the end
// clamped, every other element untouched, NaN and inf included).
func TestSimulatedIndexCopy(t *testing.T) {
	m := lowerFile(t, "testdata/index_copy.tir")
	for _, c := range []struct {
		fn     string
		shapes [][]int64
		pos    []float64
		ulps   float64
	}{
		{"rope", [][]int64{{2, 3, 8, 16}, {2}, {2, 3, 2, 16}, {2, 1, 2, 16}, {2, 1, 2, 16}}, []float64{5, 0}, 1},
		{"norm", [][]int64{{2, 8, 64}, {3}, {2, 3, 64}, {64}}, []float64{7, 2, 9}, 2},
		{"heads", [][]int64{{1, 4, 8, 16}, {2}, {1, 2, 4, 16}}, []float64{3, 6}, 0},
		{"alone", [][]int64{{3, 8, 4}, {2}, {3, 2, 4}}, []float64{1, 4}, 2},
		{"last", [][]int64{{3, 8}, {2}, {3, 2}}, []float64{6, 0}, 0},
	} {
		t.Run(c.fn, func(t *testing.T) {
			f, ok := m.Lookup(c.fn)
			require.True(t, ok)
			rng := rand.New(rand.NewSource(3))
			var want []*geval.Tensor
			for i, a := range f.Args()[:len(c.shapes)] {
				k := a.Type().(ir.MemRefType).Elem.Kind
				x := randomInput(rng, k, c.shapes[i], true)
				if i == 1 {
					x = &geval.Tensor{Shape: c.shapes[1], Elem: k, Data: append([]float64(nil), c.pos...)}
				}
				want = append(want, x)
			}
			got := make([]*geval.Tensor, len(want))
			for i, x := range want {
				got[i] = x.Clone()
			}
			before := want[0].Clone()
			_, err := leval.Run(m, c.fn, want)
			require.NoError(t, err)
			_, err = simRunFunc(m, c.fn, got)
			require.NoError(t, err)
			w, g := want[0], got[0]
			changed := 0
			for i := range w.Data {
				if d := numeric.ULPDiff(w.Data[i], g.Data[i], w.Elem); d > c.ulps {
					t.Errorf("%s: cache element %d: simulated %v, interpreted %v (%.3g ULP)", c.fn, i, g.Data[i], w.Data[i], d)
				}
				if numeric.ULPDiff(w.Data[i], before.Data[i], w.Elem) != 0 {
					changed++
				}
			}
			assert.Positive(t, changed, "the interpreter wrote the cache")
		})
	}
}

// TestSimulatedFewRows runs row kernels of several instances per CTA
// (short rows: groups of a few threads) on grids of 3 to 130 CTAs over 36
// to 700 rows, in rounds and with CTAs to spare, against the loop
// interpreter; their weights' loads are issued with the row's, ahead of
// the combine.
func TestSimulatedFewRows(t *testing.T) {
	m := lowerFile(t, "testdata/few_rows.tir")
	files, err := emitted(m)
	require.NoError(t, err)
	for _, fl := range files {
		if fl.Name == "k_norm.ptx" {
			require.Contains(t, fl.Text, "instance(s) per CTA of 256 threads.")
			// the weight's 4 vectors go with the row's, before the shuffles
			head := fl.Text[:strings.Index(fl.Text, "shfl.sync")]
			require.Equal(t, 8, strings.Count(head, "ld.global.nc.v4.b32"), "the row's and the weight's loads ahead of the combine")
		}
	}
	defer func(g int) { simGrid = g }(simGrid)
	for _, grid := range []int{3, 7, 40, 130} {
		simGrid = grid
		for _, c := range []simCase{
			{fn: "k_norm", shapes: [][]int64{{1, 9, 256}, {64}}, ulps: 2},
			{fn: "k_norm", shapes: [][]int64{{1, 33, 256}, {64}}, ulps: 2},
			{fn: "softmax_short", shapes: [][]int64{{37, 48}}, ulps: 4},
			{fn: "softmax_short", shapes: [][]int64{{700, 48}}, ulps: 4},
		} {
			t.Run(fmt.Sprintf("%s/%v/grid%d", c.fn, c.shapes[0], grid), func(t *testing.T) {
				runSimCase(t, m, c, true)
			})
		}
	}
}

// TestSimulatedPrefetchShared runs norm chains with the weight's loads
// issued ahead of the combine (PrefetchShared), rows of 1 and 3 and of
// 5120 and 8192 columns, specials among the inputs.
func TestSimulatedPrefetchShared(t *testing.T) {
	defer func(on bool) { PrefetchShared = on }(PrefetchShared)
	PrefetchShared = true
	src := `
func.func @rms_silu_mul(%x: tensor<?x5120xbf16>, %w: tensor<5120xbf16>, %z: tensor<?x5120xbf16>) -> tensor<?x5120xbf16> {
  %n = graph.rmsnorm %x, %w {eps = 1.0e-05 : f32} : (tensor<?x5120xbf16>, tensor<5120xbf16>) -> tensor<?x5120xbf16>
  %s = graph.silu %n : tensor<?x5120xbf16>
  %y = graph.mul %s, %z : tensor<?x5120xbf16>
  return %y : tensor<?x5120xbf16>
}
func.func @add_rmsnorm(%x: tensor<?x8192xbf16>, %r: tensor<?x8192xbf16>, %w: tensor<8192xbf16>) -> (tensor<?x8192xbf16>, tensor<?x8192xbf16>) {
  %h = graph.add %x, %r : tensor<?x8192xbf16>
  %n = graph.rmsnorm %h, %w {eps = 1.0e-05 : f32} : (tensor<?x8192xbf16>, tensor<8192xbf16>) -> tensor<?x8192xbf16>
  return %h, %n : tensor<?x8192xbf16>, tensor<?x8192xbf16>
}
`
	m := lower(t, src, fullPipeline, "h200")
	for _, c := range []simCase{
		{fn: "rms_silu_mul", shapes: [][]int64{{1, 5120}, {5120}, {1, 5120}}, ulps: 1},
		{fn: "rms_silu_mul", shapes: [][]int64{{3, 5120}, {5120}, {3, 5120}}, ulps: 1},
		{fn: "add_rmsnorm", shapes: [][]int64{{2, 8192}, {2, 8192}, {8192}}, ulps: 1},
	} {
		for _, specials := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/%v/specials=%v", c.fn, c.shapes[0], specials), func(t *testing.T) {
				runSimCase(t, m, c, specials)
			})
		}
	}
}
