package metal_test

import (
	"fmt"
	"math"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	geval "github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/emit/metal"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

// The conversions between f32 and the narrow float formats are where
// the emulation (half, bfloat) and the emitter (the f8 helpers) could
// round differently from ir/numeric: these tests convert every bit
// pattern of each format to f32, and every value of each format, the
// midpoints between neighbours and the floats just beside them back,
// and require the exact results of numeric.RoundTo.

// conversionFormats are the narrow formats, by their names in .tir.
var conversionFormats = []struct {
	name string
	kind ir.ElemKind
}{{"f16", ir.F16}, {"bf16", ir.BF16}, {"f8E4M3FN", ir.F8E4M3FN}, {"f8E5M2", ir.F8E5M2}}

// conversionsProgram compiles one function per direction and format,
// lowered without graph-level passes so that each is one cast.
func conversionsProgram(t *testing.T) *emuProgram {
	var src string
	for _, f := range conversionFormats {
		n := 1 << f.kind.BitWidth()
		src += fmt.Sprintf(`func.func @%[1]s_to_f32(%%x: tensor<%[2]dx%[1]s>) -> tensor<%[2]dxf32> {
  %%y = graph.cast %%x : (tensor<%[2]dx%[1]s>) -> tensor<%[2]dxf32>
  return %%y : tensor<%[2]dxf32>
}
func.func @f32_to_%[1]s(%%x: tensor<?xf32>) -> tensor<?x%[1]s> {
  %%y = graph.cast %%x : (tensor<?xf32>) -> tensor<?x%[1]s>
  return %%y : tensor<?x%[1]s>
}
`, f.name, n)
	}
	lowered, err := compileFor("conversions.tir", src, "lower-to-loops,sram-alloc")
	require.NoError(t, err)
	graph, err := compileFor("conversions.tir", src, "canonicalize")
	require.NoError(t, err)
	prog, err := metal.Emit(lowered, metal.Options{Source: "conversions.tir"})
	require.NoError(t, err)
	return &emuProgram{name: "conversions", ns: "conversions", graph: graph, lowered: lowered, prog: prog}
}

// sameValue reports whether a and b are both NaN or equal with the same sign.
func sameValue(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return a == b && math.Signbit(a) == math.Signbit(b)
}

// patterns returns every value of kind k, in bit pattern order.
func patterns(k ir.ElemKind) []float64 {
	n := 1 << k.BitWidth()
	out := make([]float64, n)
	for b := range out {
		out[b], _ = numeric.FromBits(uint64(b), k)
	}
	return out
}

// roundingCases are floats whose rounding to k is decided at the edges:
// every finite value of k, the midpoints of neighbours (ties, rounded to
// even; the one past the largest value decides overflow) and the floats
// just below and above them, infinities, NaN, the f32 subnormals and
// values past the largest of k.
func roundingCases(k ir.ElemKind) []float64 {
	var vals []float64
	for _, v := range patterns(k) {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			vals = append(vals, v)
		}
	}
	out := append([]float64{}, vals...)
	sort.Float64s(vals)
	// the midpoint past the largest value, where the format overflows
	top, prev := vals[len(vals)-1], vals[len(vals)-2]
	vals = append(vals, top+(top-prev))
	vals = append([]float64{-top - (top - prev)}, vals...)
	for i := 0; i+1 < len(vals); i++ {
		mid := float32((vals[i] + vals[i+1]) / 2)
		out = append(out, float64(mid), float64(math.Nextafter32(mid, float32(math.Inf(-1)))),
			float64(math.Nextafter32(mid, float32(math.Inf(1)))))
	}
	out = append(out, math.Inf(1), math.Inf(-1), math.NaN(), 1e-45, -1e-45, 1.1754942e-38, top*1.5, -top*1.5, 3.4e38, -3.4e38)
	return out
}

// TestConversionsExhaustive runs the conversions on the emulation.
func TestConversionsExhaustive(t *testing.T) {
	bin, _, p := sharedHarness(t)
	for _, f := range conversionFormats {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			check := func(fn string, in *geval.Tensor, outKind ir.ElemKind) {
				desc := p.prog.Description(fn+".metal", fn)
				require.Len(t, desc.Functions, 1)
				got, err := runFunction(bin, t.TempDir(), p.ns, desc, desc.Functions[0], []*geval.Tensor{in},
					[][]int64{in.Shape}, runOptions{threads: func(n int64) int64 { return min(n, maxTestThreads) }})
				require.NoError(t, err, fn)
				var bad []string
				for i, v := range in.Data {
					want := numeric.RoundTo(v, outKind)
					if !sameValue(want, got[0].Data[i]) && len(bad) < 8 {
						bad = append(bad, fmt.Sprintf("%v -> %v, want %v", v, got[0].Data[i], want))
					}
				}
				require.Empty(t, bad, "@%s", fn)
			}
			vals := patterns(f.kind)
			in, err := geval.TensorOf(f.kind, []int64{int64(len(vals))}, vals)
			require.NoError(t, err)
			check(f.name+"_to_f32", in, ir.F32)
			cases := roundingCases(f.kind)
			in32 := geval.NewTensor(ir.F32, []int64{int64(len(cases))})
			for i, v := range cases {
				in32.Data[i] = float64(float32(v))
			}
			check("f32_to_"+f.name, in32, f.kind)
		})
	}
}
