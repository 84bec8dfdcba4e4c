package lowering

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	geval "github.com/tensorforge/tensorforge/dialects/graph/eval"
	leval "github.com/tensorforge/tensorforge/dialects/loop/eval"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
	"github.com/tensorforge/tensorforge/parser"
)

// indexCopySrc is a KV-cache update as a decode step writes it: the new
// keys (a product, standing for the rotary embedding) written into a
// cache of 8 positions at the positions %pos names, along axis 2; and
// the same along the last axis.
func indexCopySrc(elem string) string {
	return fmt.Sprintf(`
func.func @f(%%cache: tensor<2x3x8x4x%[1]s>, %%pos: tensor<?xi64>, %%k: tensor<2x3x?x4x%[1]s>, %%s: tensor<2x3x?x4x%[1]s>) -> tensor<2x3x?x4x%[1]s> {
  %%r = graph.mul %%k, %%s : tensor<2x3x?x4x%[1]s>
  graph.index_copy %%cache, %%pos, %%r {axis = 2} : (tensor<2x3x8x4x%[1]s>, tensor<?xi64>, tensor<2x3x?x4x%[1]s>) -> ()
  return %%r : tensor<2x3x?x4x%[1]s>
}

func.func @last(%%cache: tensor<3x8x%[1]s>, %%pos: tensor<2xi32>, %%v: tensor<3x2x%[1]s>) -> tensor<3x2x%[1]s> {
  %%n = graph.neg %%v : tensor<3x2x%[1]s>
  graph.index_copy %%cache, %%pos, %%n {axis = -1} : (tensor<3x8x%[1]s>, tensor<2xi32>, tensor<3x2x%[1]s>) -> ()
  return %%n : tensor<3x2x%[1]s>
}
`, elem)
}

// indexCopyRef writes src (rows of outer x along x inner) into a copy of
// dst (outer x n x inner) at positions pos, with f applied to each source
// element and the result rounded to k.
func indexCopyRef(dst, src, pos []float64, outer, n, along, inner int, k ir.ElemKind, f func(i int) float64) []float64 {
	out := append([]float64(nil), dst...)
	for o := range outer {
		for j := range along {
			p := int(math.Min(math.Max(pos[j], 0), float64(n-1)))
			for i := range inner {
				s := (o*along+j)*inner + i
				out[(o*n+p)*inner+i] = numeric.RoundTo(f(s), k)
			}
		}
	}
	return out
}

// TestIndexCopyInPlace: the compiled update writes exactly the slices the
// indices name into the caller's buffer, leaves every other element as it
// was (NaN and inf included, bit for bit), agrees with the reference
// interpreter's in-place update, and clamps out-of-range indices (which
// the interpreter reports) into the axis.
func TestIndexCopyInPlace(t *testing.T) {
	for _, elem := range []ir.ElemKind{ir.F32, ir.BF16} {
		for _, pipeline := range []string{"canonicalize,cse,legalize-numerics,decompose,fuse,canonicalize,cse,dce,lower-to-loops,sram-alloc", "lower-to-loops,sram-alloc"} {
			what := fmt.Sprintf("%s, %s", elem, pipeline)
			src := indexCopySrc(elem.String())
			m, err := parser.Parse("ic.tir", src)
			require.NoError(t, err)
			ref, err := parser.Parse("ic.tir", src)
			require.NoError(t, err)
			runPipeline(t, m, pipeline, "h200")

			// axis 2, two new positions (and a pair past both ends)
			for _, pos := range [][]float64{{5, 2}, {0, 7}, {-3, 11}} {
				cache := make([]float64, 2*3*8*4)
				for i := range cache {
					cache[i] = float64(i%17) - 8
				}
				cache[3], cache[100], cache[190] = math.NaN(), math.Inf(1), math.Inf(-1)
				k := make([]float64, 2*3*2*4)
				s := make([]float64, len(k))
				for i := range k {
					k[i] = float64(i)*0.37 - 3
					s[i] = 1.5 - float64(i%5)*0.3
				}
				k[0], s[1] = math.Inf(1), math.NaN()
				mk := func(shape []int64, data []float64, e ir.ElemKind) *geval.Tensor {
					x, err := geval.TensorOf(e, shape, append([]float64(nil), data...))
					require.NoError(t, err)
					return x
				}
				ct := mk([]int64{2, 3, 8, 4}, cache, elem)
				in := []*geval.Tensor{ct, mk([]int64{2}, pos, ir.I64), mk([]int64{2, 3, 2, 4}, k, elem), mk([]int64{2, 3, 2, 4}, s, elem)}
				rk, rs := in[2].Data, in[3].Data
				want := indexCopyRef(ct.Data, nil, pos, 6, 8, 2, 4, elem, func(i int) float64 {
					return float64(float32(rk[i]) * float32(rs[i]))
				})
				got, err := leval.Run(m, "f", in)
				require.NoError(t, err, what)
				require.Len(t, got, 1)
				for i := range want {
					if !(want[i] == ct.Data[i] || math.IsNaN(want[i]) && math.IsNaN(ct.Data[i])) {
						t.Errorf("%s, pos %v: cache element %d is %v, want %v", what, pos, i, ct.Data[i], want[i])
						break
					}
				}
				// the reference interpreter: the same update, or an error for a bad index
				ri := []*geval.Tensor{mk([]int64{2, 3, 8, 4}, cache, elem), in[1], in[2], in[3]}
				fn, _ := ref.Lookup("f")
				_, err = geval.Run(fn, ri, geval.Options{})
				if pos[0] < 0 {
					require.Error(t, err, what)
					assert.Contains(t, err.Error(), "outside [0, 8)")
					continue
				}
				require.NoError(t, err, what)
				for i := range want {
					if !(ri[0].Data[i] == ct.Data[i] || math.IsNaN(ri[0].Data[i]) && math.IsNaN(ct.Data[i])) {
						t.Errorf("%s, pos %v: interpreter and kernel differ at cache element %d: %v and %v", what, pos, i, ri[0].Data[i], ct.Data[i])
						break
					}
				}
			}

			// the last axis, i32 indices
			cache := make([]float64, 3*8)
			for i := range cache {
				cache[i] = float64(i)
			}
			ct, err := geval.TensorOf(elem, []int64{3, 8}, cache)
			require.NoError(t, err)
			pt, err := geval.TensorOf(ir.I32, []int64{2}, []float64{6, 1})
			require.NoError(t, err)
			vt, err := geval.TensorOf(elem, []int64{3, 2}, []float64{1, 2, 3, 4, 5, 6})
			require.NoError(t, err)
			_, err = leval.Run(m, "last", []*geval.Tensor{ct, pt, vt})
			require.NoError(t, err, what)
			assert.Equal(t, []float64{0, -2, 2, 3, 4, 5, -1, 7, 8, -4, 10, 11, 12, 13, -3, 15, 16, -6, 18, 19, 20, 21, -5, 23}, ct.Data, what)
		}
	}
}

// scatterPairs are programs whose index_copy source is computed by an
// element-wise or row kernel and read by nothing else (the kernel stores
// its rows into the cache at their positions: one kernel), each with the
// same program returning the source too (a kernel writing it, then the
// index_copy kernel).
func scatterSrc(elem string) string {
	return fmt.Sprintf(`
func.func @rope(%%cache: tensor<2x3x8x4x%[1]s>, %%pos: tensor<?xi64>, %%k: tensor<2x3x?x4x%[1]s>, %%c: tensor<2x1x?x4x%[1]s>, %%s: tensor<2x1x?x4x%[1]s>) {
  %%a = graph.mul %%k, %%c : (tensor<2x3x?x4x%[1]s>, tensor<2x1x?x4x%[1]s>) -> tensor<2x3x?x4x%[1]s>
  %%rk = graph.roll %%k {shift = 2} : tensor<2x3x?x4x%[1]s>
  %%b = graph.mul %%rk, %%s : (tensor<2x3x?x4x%[1]s>, tensor<2x1x?x4x%[1]s>) -> tensor<2x3x?x4x%[1]s>
  %%r = graph.add %%a, %%b : tensor<2x3x?x4x%[1]s>
  graph.index_copy %%cache, %%pos, %%r {axis = 2} : (tensor<2x3x8x4x%[1]s>, tensor<?xi64>, tensor<2x3x?x4x%[1]s>) -> ()
  return
}

func.func @rope_ref(%%cache: tensor<2x3x8x4x%[1]s>, %%pos: tensor<?xi64>, %%k: tensor<2x3x?x4x%[1]s>, %%c: tensor<2x1x?x4x%[1]s>, %%s: tensor<2x1x?x4x%[1]s>) -> tensor<2x3x?x4x%[1]s> {
  %%a = graph.mul %%k, %%c : (tensor<2x3x?x4x%[1]s>, tensor<2x1x?x4x%[1]s>) -> tensor<2x3x?x4x%[1]s>
  %%rk = graph.roll %%k {shift = 2} : tensor<2x3x?x4x%[1]s>
  %%b = graph.mul %%rk, %%s : (tensor<2x3x?x4x%[1]s>, tensor<2x1x?x4x%[1]s>) -> tensor<2x3x?x4x%[1]s>
  %%r = graph.add %%a, %%b : tensor<2x3x?x4x%[1]s>
  graph.index_copy %%cache, %%pos, %%r {axis = 2} : (tensor<2x3x8x4x%[1]s>, tensor<?xi64>, tensor<2x3x?x4x%[1]s>) -> ()
  return %%r : tensor<2x3x?x4x%[1]s>
}

func.func @norm(%%cache: tensor<2x8x64x%[1]s>, %%pos: tensor<?xi32>, %%x: tensor<2x?x64x%[1]s>, %%w: tensor<64x%[1]s>) {
  %%n = graph.rmsnorm %%x, %%w {eps = 1.0e-06 : f32} : (tensor<2x?x64x%[1]s>, tensor<64x%[1]s>) -> tensor<2x?x64x%[1]s>
  graph.index_copy %%cache, %%pos, %%n {axis = 1} : (tensor<2x8x64x%[1]s>, tensor<?xi32>, tensor<2x?x64x%[1]s>) -> ()
  return
}

func.func @norm_ref(%%cache: tensor<2x8x64x%[1]s>, %%pos: tensor<?xi32>, %%x: tensor<2x?x64x%[1]s>, %%w: tensor<64x%[1]s>) -> tensor<2x?x64x%[1]s> {
  %%n = graph.rmsnorm %%x, %%w {eps = 1.0e-06 : f32} : (tensor<2x?x64x%[1]s>, tensor<64x%[1]s>) -> tensor<2x?x64x%[1]s>
  graph.index_copy %%cache, %%pos, %%n {axis = 1} : (tensor<2x8x64x%[1]s>, tensor<?xi32>, tensor<2x?x64x%[1]s>) -> ()
  return %%n : tensor<2x?x64x%[1]s>
}
`, elem)
}

// TestIndexCopyStoredByItsSourceKernel: a source read only by the update
// is stored into the cache by the kernel computing it (one kernel instead
// of two), with the same bits in the cache as the two kernels give, an
// out-of-range position clamped alike, and the rest of the cache untouched.
func TestIndexCopyStoredByItsSourceKernel(t *testing.T) {
	pipeline := "canonicalize,cse,legalize-numerics,decompose,fuse,canonicalize,cse,dce,lower-to-loops,sram-alloc"
	for _, elem := range []ir.ElemKind{ir.F32, ir.BF16} {
		m, err := parser.Parse("scatter.tir", scatterSrc(elem.String()))
		require.NoError(t, err)
		runPipeline(t, m, pipeline, "h200")
		assert.Equal(t, 1, countKernels(m, "rope"), "the rope kernel stores into the cache")
		assert.Equal(t, 2, countKernels(m, "rope_ref"))
		assert.Equal(t, 1, countKernels(m, "norm"), "the norm kernel stores into the cache")
		assert.Equal(t, 2, countKernels(m, "norm_ref"))
		mk := func(shape []int64, data []float64, e ir.ElemKind) *geval.Tensor {
			x, err := geval.TensorOf(e, shape, append([]float64(nil), data...))
			require.NoError(t, err)
			return x
		}
		seq := func(n int, f func(i int) float64) []float64 {
			out := make([]float64, n)
			for i := range out {
				out[i] = f(i)
			}
			return out
		}
		for _, pos := range [][]float64{{6, 1}, {0, 9}} {
			what := fmt.Sprintf("%s, positions %v", elem, pos)
			cache := seq(2*3*8*4, func(i int) float64 { return float64(i%13) - 6 })
			cache[5] = math.NaN()
			ins := func() []*geval.Tensor {
				return []*geval.Tensor{mk([]int64{2, 3, 8, 4}, cache, elem), mk([]int64{2}, pos, ir.I64),
					mk([]int64{2, 3, 2, 4}, seq(48, func(i int) float64 { return float64(i)*0.31 - 7 }), elem),
					mk([]int64{2, 1, 2, 4}, seq(16, func(i int) float64 { return math.Cos(float64(i)) }), elem),
					mk([]int64{2, 1, 2, 4}, seq(16, func(i int) float64 { return math.Sin(float64(i)) }), elem)}
			}
			a, b := ins(), ins()
			_, err := leval.Run(m, "rope", a)
			require.NoError(t, err, what)
			_, err = leval.Run(m, "rope_ref", b)
			require.NoError(t, err, what)
			assert.Equal(t, fmt.Sprint(b[0].Data), fmt.Sprint(a[0].Data), "%s: rope", what)
			assert.NotEqual(t, fmt.Sprint(cache), fmt.Sprint(numericRound(a[0].Data, elem)), "%s: the cache was written", what)

			nc := seq(2*8*64, func(i int) float64 { return float64(i % 7) })
			nin := func() []*geval.Tensor {
				return []*geval.Tensor{mk([]int64{2, 8, 64}, nc, elem), mk([]int64{2}, pos, ir.I32),
					mk([]int64{2, 2, 64}, seq(256, func(i int) float64 { return math.Sin(float64(i)) * 3 }), elem),
					mk([]int64{64}, seq(64, func(i int) float64 { return 1 + float64(i)/64 }), elem)}
			}
			a, b = nin(), nin()
			_, err = leval.Run(m, "norm", a)
			require.NoError(t, err, what)
			_, err = leval.Run(m, "norm_ref", b)
			require.NoError(t, err, what)
			assert.Equal(t, fmt.Sprint(b[0].Data), fmt.Sprint(a[0].Data), "%s: norm", what)
		}
	}
}

// numericRound rounds values to k, for comparing with a cache of type k.
func numericRound(xs []float64, k ir.ElemKind) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = numeric.RoundTo(x, k)
	}
	return out
}
