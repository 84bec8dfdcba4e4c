package passes

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

// ---------------------------------------------------------------------------
// Helpers

// numEvery returns every value of a 16-bit float kind, one per bit pattern
// (NaN patterns included).
func numEvery(k ir.ElemKind) []float64 {
	out := make([]float64, 1<<16)
	for b := range out {
		out[b], _ = numeric.FromBits(uint64(b), k)
	}
	return out
}

// numTensor is a 1-D tensor holding vals (already values of k).
func numTensor(k ir.ElemKind, vals []float64) *eval.Tensor {
	return &eval.Tensor{Shape: []int64{int64(len(vals))}, Elem: k, Data: vals}
}

// numLegalized parses src, legalises it and returns the legalised module
// and the untouched original.
func numLegalized(t testing.TB, src string) (orig, legal ir.Module) {
	t.Helper()
	orig, legal = numParse(t, src), numParse(t, src)
	numLegalize(t, legal, NumericsOptions{})
	return orig, legal
}

// numSame reports whether two values are the same (NaN equals NaN).
func numSame(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return a == b
}

// ---------------------------------------------------------------------------
// quantize: every f16 value

// quantizeDefinition is graph.quantize to an integer kind, straight from
// the spec: saturate(round_half_even(x / scale) + zero_point), NaN giving
// zero_point, with the exact quotient.
func quantizeDefinition(x, scale, zp float64, k ir.ElemKind) float64 {
	if math.IsNaN(x) {
		return zp
	}
	lo, hi := k.IntRange()
	v := numeric.RoundHalfEven(x/scale) + zp
	return math.Max(float64(lo), math.Min(float64(hi), v))
}

// quantConfig is one scale and zero point.
type quantConfig struct {
	scale float64
	zp    int64
}

func (q quantConfig) String() string {
	return fmt.Sprintf("scale=%s zp=%d", ir.FormatFloat(q.scale, ir.F32), q.zp)
}

var quantConfigs = map[ir.ElemKind][]quantConfig{
	ir.UI8: {{0.1, 128}, {1.0 / 3, 0}, {0.05, 17}, {2.0 / 255, 128}, {0.0173, 255}, {3.7, 100}, {1e-3, 0}, {0.5, 128}, {0.37, 3}},
	ir.I8:  {{0.1, 0}, {1.0 / 3, -3}, {0.05, 127}, {2.0 / 255, -128}, {0.0173, 0}, {3.7, 5}, {1e-3, -7}, {0.5, 0}, {0.37, 64}},
}

// naiveQuantizeSrc is the expansion without the exact rounding of the
// quotient: round_half_even of the f32 quotient, the rest as legalised.
func naiveQuantizeSrc(k ir.ElemKind, q quantConfig) string {
	lo, hi := k.IntRange()
	return strings.NewReplacer("$K", k.String(), "$S", ir.FormatFloat(q.scale, ir.F32), "$Z", fmt.Sprintf("%d.0", q.zp),
		"$LO", fmt.Sprintf("%d.0", lo), "$HI", fmt.Sprintf("%d.0", hi)).Replace(`func.func @f(%x: tensor<65536xf16>) -> tensor<65536x$K> {
  %xf = graph.cast %x : (tensor<65536xf16>) -> tensor<65536xf32>
  %s = graph.constant dense<$S> : tensor<f32>
  %q = graph.div %xf, %s : (tensor<65536xf32>, tensor<f32>) -> tensor<65536xf32>
  %r = graph.round %q : tensor<65536xf32>
  %z = graph.constant dense<$Z> : tensor<f32>
  %v = graph.add %r, %z : (tensor<65536xf32>, tensor<f32>) -> tensor<65536xf32>
  %nan = graph.cmp %q, %q {predicate = "ne"} : (tensor<65536xf32>, tensor<65536xf32>) -> tensor<65536xi1>
  %n = graph.select %nan, %z, %v : (tensor<65536xi1>, tensor<f32>, tensor<65536xf32>) -> tensor<65536xf32>
  %c = graph.clamp %n {min = $LO, max = $HI} : tensor<65536xf32>
  %y = graph.cast %c : (tensor<65536xf32>) -> tensor<65536x$K>
  return %y : tensor<65536x$K>
}`)
}

// TestQuantizeEveryF16 puts every f16 bit pattern through the legalised
// graph.quantize to ui8 and i8 and compares with the definition and with
// the interpreter's float64 evaluation of the op: no mismatch at all. It
// also counts the mismatches of the same expansion without the exact
// rounding of the quotient, which shows what that rounding is for.
func TestQuantizeEveryF16(t *testing.T) {
	xs := numEvery(ir.F16)
	in := []*eval.Tensor{numTensor(ir.F16, xs)}
	for _, k := range []ir.ElemKind{ir.UI8, ir.I8} {
		for _, q := range quantConfigs[k] {
			src := fmt.Sprintf(`func.func @f(%%x: tensor<65536xf16>) -> tensor<65536x%s> {
  %%y = graph.quantize %%x {scale = %s, zero_point = %d} : (tensor<65536xf16>) -> tensor<65536x%s>
  return %%y : tensor<65536x%s>
}`, k, ir.FormatFloat(q.scale, ir.F32), q.zp, k, k)
			orig, legal := numLegalized(t, src)
			got := numRun(t, legal, in, eval.Options{})
			ref := numRun(t, orig, in, eval.Options{F64: true})
			naive := numRun(t, numParse(t, naiveQuantizeSrc(k, q)), in, eval.Options{})
			scale := float64(float32(q.scale))
			mismatches, naiveMismatches := 0, 0
			for i, x := range xs {
				want := quantizeDefinition(x, scale, float64(q.zp), k)
				require.Equal(t, want, ref.Data[i], "the interpreter disagrees with the definition at %v", x)
				if got.Data[i] != want {
					mismatches++
					if mismatches <= 5 {
						t.Errorf("%s %s: quantize(%v) = %v, want %v", k, q, x, got.Data[i], want)
					}
				}
				if naive.Data[i] != want {
					naiveMismatches++
				}
			}
			assert.Zero(t, mismatches, "%s %s", k, q)
			t.Logf("f16 -> %-3s %-24s: %d of 65536 mismatches (f32 quotient rounded as is: %d)", k, q, mismatches, naiveMismatches)
		}
	}
}

// TestQuantizeEveryF16ToF8 does the same for f8E4M3FN, whose result is
// x / scale + zero_point saturated to +-448 and rounded to nearest even;
// NaN stays NaN. The expansion rounds twice (the quotient to f32, then to
// f8), so where the f32 value lands exactly on a midpoint of two f8 values
// that the exact one is not, it can be 1 ULP off: the stated bound.
func TestQuantizeEveryF16ToF8(t *testing.T) {
	xs := numEvery(ir.F16)
	in := []*eval.Tensor{numTensor(ir.F16, xs)}
	for _, q := range []quantConfig{{1, 0}, {0.25, 0}, {0.1, 0}, {1.0 / 3, 3}, {17.5, -2}} {
		src := fmt.Sprintf(`func.func @f(%%x: tensor<65536xf16>) -> tensor<65536xf8E4M3FN> {
  %%y = graph.quantize %%x {scale = %s, zero_point = %d} : (tensor<65536xf16>) -> tensor<65536xf8E4M3FN>
  return %%y : tensor<65536xf8E4M3FN>
}`, ir.FormatFloat(q.scale, ir.F32), q.zp)
		orig, legal := numLegalized(t, src)
		got := numRun(t, legal, in, eval.Options{})
		ref := numRun(t, orig, in, eval.Options{})
		mismatches := 0
		for i, x := range xs {
			if !numSame(got.Data[i], ref.Data[i]) {
				mismatches++
				assert.LessOrEqual(t, numeric.ULPDiff(got.Data[i], ref.Data[i], ir.F8E4M3FN), 1.0, "quantize(%v)", x)
			}
		}
		t.Logf("f16 -> f8E4M3FN %-24s: %d of 65536 are 1 ULP from the correctly rounded result, none further", q, mismatches)
	}
}

// TestRequantizeEveryI8 puts every i8 and ui8 value, and i32 values across
// the range, through the legalised graph.requantize: bit for bit what the
// interpreter computes.
func TestRequantizeEveryI8(t *testing.T) {
	i32s := []float64{math.MinInt32, math.MaxInt32, -1 << 24, 1<<24 + 1, 0, 1, -1}
	for v := -100000.0; v <= 100000; v += 37 {
		i32s = append(i32s, v)
	}
	inputs := map[ir.ElemKind][]float64{ir.I32: i32s}
	for _, k := range []ir.ElemKind{ir.I8, ir.UI8} {
		lo, hi := k.IntRange()
		for v := lo; v <= hi; v++ {
			inputs[k] = append(inputs[k], float64(v))
		}
	}
	for _, ink := range []ir.ElemKind{ir.I8, ir.UI8, ir.I32} {
		for _, outk := range []ir.ElemKind{ir.I8, ir.UI8, ir.F8E4M3FN} {
			xs := inputs[ink]
			n := len(xs)
			src := fmt.Sprintf(`func.func @f(%%x: tensor<%dx%s>) -> tensor<%dx%s> {
  %%y = graph.requantize %%x {in_scale = 0.0131, in_zero_point = %d, scale = 0.07, zero_point = %d} : (tensor<%dx%s>) -> tensor<%dx%s>
  return %%y : tensor<%dx%s>
}`, n, ink, n, outk, map[ir.ElemKind]int{ir.I8: -3, ir.UI8: 128, ir.I32: 12345}[ink], map[ir.ElemKind]int{ir.I8: 4, ir.UI8: 120, ir.F8E4M3FN: 0}[outk], n, ink, n, outk, n, outk)
			orig, legal := numLegalized(t, src)
			in := []*eval.Tensor{numTensor(ink, xs)}
			got := numRun(t, legal, in, eval.Options{})
			ref := numRun(t, orig, in, eval.Options{})
			for i, x := range xs {
				require.True(t, numSame(ref.Data[i], got.Data[i]), "%s -> %s: requantize(%v) = %v, want %v", ink, outk, x, got.Data[i], ref.Data[i])
			}
		}
	}
}

// TestQuantizePerChannel checks per-channel quantize, dequantize and
// requantize, with the channel axis first, in the middle and last, against
// the interpreter.
func TestQuantizePerChannel(t *testing.T) {
	for _, axis := range []int{0, 1, 2} {
		shape := []int64{3, 5, 7}
		c := shape[axis]
		x, qs := "tensor<3x5x7xf16>", "tensor<3x5x7xi8>"
		src := strings.NewReplacer("$X", x, "$Q", qs, "$C", fmt.Sprint(c), "$A", fmt.Sprint(axis)).Replace(`func.func @f(%x: $X, %s: tensor<$Cxf32>, %z: tensor<$Cxi32>, %s2: tensor<$Cxf16>, %z2: tensor<$Cxf32>) -> ($Q, tensor<3x5x7xbf16>, tensor<3x5x7xui8>) {
  %q = graph.quantize %x, %s, %z {axis = $A} : ($X, tensor<$Cxf32>, tensor<$Cxi32>) -> $Q
  %d = graph.dequantize %q, %s, %z {axis = $A} : ($Q, tensor<$Cxf32>, tensor<$Cxi32>) -> tensor<3x5x7xbf16>
  %r = graph.requantize %q, %s, %z, %s2, %z2 {axis = $A} : ($Q, tensor<$Cxf32>, tensor<$Cxi32>, tensor<$Cxf16>, tensor<$Cxf32>) -> tensor<3x5x7xui8>
  return %q, %d, %r : $Q, tensor<3x5x7xbf16>, tensor<3x5x7xui8>
}`)
		orig, legal := numLegalized(t, src)
		fn := numOnlyFunc(t, orig)
		for seed := int64(1); seed <= 3; seed++ {
			in, err := eval.RandomInputs(fn, seed, 3, 0)
			require.NoError(t, err)
			// realistic parameters: positive scales, zero points in range
			for _, p := range []*eval.Tensor{in[1], in[3]} {
				for i := range p.Data {
					p.Data[i] = numeric.RoundTo(0.01+math.Abs(p.Data[i])/10, p.Elem)
				}
			}
			for i := range in[2].Data {
				in[2].Data[i] = float64(int(in[2].Data[i]) % 100)
			}
			for i := range in[4].Data {
				in[4].Data[i] = math.Round(math.Abs(in[4].Data[i]) * 30)
			}
			want, err := eval.Run(fn, in, eval.Options{})
			require.NoError(t, err)
			got, err := eval.Run(numOnlyFunc(t, legal), in, eval.Options{})
			require.NoError(t, err)
			for r := range want {
				for i := range want[r].Data {
					require.True(t, numSame(want[r].Data[i], got[r].Data[i]), "axis %d result %d element %d: got %v, want %v", axis, r, i, got[r].Data[i], want[r].Data[i])
				}
			}
		}
	}
}

// ---------------------------------------------------------------------------
// logaddexp and logaddexp2 on a grid of special values

// numGridValues are the operands every pair of which goes through
// logaddexp: signed zeros, infinities, NaN, the f32 overflow threshold of
// exp, huge and tiny values, subnormals of k, and ordinary numbers.
func numGridValues(k ir.ElemKind) []float64 {
	base := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(),
		88.73, -88.73, 88.72, -88.72, 1e30, -1e30, 1e4, -1e4, 11.09, -11.09, 128, -128,
		1, -1, 0.5, -0.5, 0.6931, -0.6931, 2, -2, 10, -10, 30, -30, 1e-3, -1e-3, 1e-10,
		numeric.SmallestSubnormal(k), -numeric.SmallestSubnormal(k),
		numeric.SmallestNormal(k) - numeric.SmallestSubnormal(k), numeric.SmallestNormal(k),
		numeric.MaxFinite(k), -numeric.MaxFinite(k)}
	seen := map[uint64]bool{}
	var out []float64
	for _, v := range base {
		r := numeric.RoundTo(v, k)
		b, _ := numeric.ToBits(r, k)
		if !seen[b] {
			seen[b] = true
			out = append(out, r)
		}
	}
	return out
}

func TestLogAddExpGrid(t *testing.T) {
	for _, base2 := range []bool{false, true} {
		op := "graph.logaddexp"
		if base2 {
			op = "graph.logaddexp2"
		}
		for _, k := range numFloatKinds {
			vals := numGridValues(k)
			var as, bs []float64
			for _, a := range vals {
				for _, b := range vals {
					as, bs = append(as, a), append(bs, b)
				}
			}
			n := len(as)
			ty := fmt.Sprintf("tensor<%dx%s>", n, k)
			src := fmt.Sprintf("func.func @f(%%a: %s, %%b: %s) -> %s {\n  %%y = %s %%a, %%b : %s\n  return %%y : %s\n}", ty, ty, ty, op, ty, ty)
			orig, legal := numLegalized(t, src)
			in := []*eval.Tensor{numTensor(k, as), numTensor(k, bs)}
			got := numRun(t, legal, in, eval.Options{})
			ref := numRun(t, orig, in, eval.Options{F64: true})
			worst := 0.0
			for i := range as {
				e := numElemError(got.Data[i], ref.Data[i], k, math.Max(math.Abs(as[i]), math.Abs(bs[i])))
				assert.LessOrEqual(t, e, numElementwiseBound[k], "%s(%v, %v) in %s = %v, want %v", op, as[i], bs[i], k, got.Data[i], ref.Data[i])
				if !math.IsInf(e, 0) {
					worst = math.Max(worst, e)
				}
			}
			t.Logf("%-16s %-4s: %4d pairs, max error %.3f ULP (bound %g)", op, k, n, worst, numElementwiseBound[k])
		}
	}
}

// TestLogAddExpSpecialValues spells out the contract's special cases.
func TestLogAddExpSpecialValues(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	cases := []struct{ a, b, e, e2 float64 }{
		{inf, inf, inf, inf},
		{-inf, -inf, -inf, -inf},
		{inf, -inf, inf, inf},
		{-inf, 3, 3, 3},
		{nan, 1, nan, nan},
		{1, nan, nan, nan},
		{nan, inf, nan, nan},
		{1000, 1000, 1000 + math.Ln2, 1001},
		{1e30, 1e30, 1e30, 1e30},
		{-1e30, -1e30, -1e30, -1e30},
		{100, 0, 100, 100},
		{0, 0, math.Ln2, 1},
	}
	var as, bs []float64
	for _, c := range cases {
		as, bs = append(as, c.a), append(bs, c.b)
	}
	for _, base2 := range []bool{false, true} {
		op := "logaddexp"
		if base2 {
			op = "logaddexp2"
		}
		src := fmt.Sprintf(`func.func @f(%%a: tensor<%dxf32>, %%b: tensor<%dxf32>) -> tensor<%dxf32> {
  %%y = graph.%s %%a, %%b : tensor<%dxf32>
  return %%y : tensor<%dxf32>
}`, len(as), len(as), len(as), op, len(as), len(as))
		_, legal := numLegalized(t, src)
		got := numRun(t, legal, []*eval.Tensor{numTensor(ir.F32, as), numTensor(ir.F32, bs)}, eval.Options{})
		for i, c := range cases {
			want := c.e
			if base2 {
				want = c.e2
			}
			want = numeric.RoundTo(want, ir.F32)
			assert.True(t, numSame(want, got.Data[i]), "%s(%v, %v) = %v, want %v", op, c.a, c.b, got.Data[i], want)
		}
	}
}

// ---------------------------------------------------------------------------
// softmax, log_softmax, logsumexp on rows with infinities

func TestLogSumExpInfiniteRows(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	rows := [][]float64{
		{-inf, -inf, -inf, -inf},
		{inf, 1, 2, 3},
		{inf, -inf, 0, 0},
		{nan, 1, 2, 3},
		{1000, 1000, 1000, 1000},
		{-1000, -1000, -1000, -1000},
		{-inf, 0, -inf, -inf},
		{88.73, 100, -3, 89},
	}
	var data []float64
	for _, r := range rows {
		data = append(data, r...)
	}
	n := len(rows)
	for _, k := range numFloatKinds {
		src := fmt.Sprintf(`func.func @f(%%x: tensor<?x4x%[1]s>) -> (tensor<?x%[1]s>, tensor<?x1x%[1]s>, tensor<?x4x%[1]s>, tensor<?x4x%[1]s>) {
  %%l = graph.logsumexp %%x : (tensor<?x4x%[1]s>) -> tensor<?x%[1]s>
  %%lk = graph.logsumexp %%x {axis = 1, keepdim = true} : (tensor<?x4x%[1]s>) -> tensor<?x1x%[1]s>
  %%s = graph.softmax %%x : tensor<?x4x%[1]s>
  %%ls = graph.log_softmax %%x : tensor<?x4x%[1]s>
  return %%l, %%lk, %%s, %%ls : tensor<?x%[1]s>, tensor<?x1x%[1]s>, tensor<?x4x%[1]s>, tensor<?x4x%[1]s>
}`, k)
		orig, legal := numLegalized(t, src)
		x, err := eval.TensorOf(k, []int64{int64(n), 4}, append([]float64(nil), data...))
		require.NoError(t, err)
		in := []*eval.Tensor{x}
		ref, err := eval.Run(numOnlyFunc(t, orig), in, eval.Options{F64: true})
		require.NoError(t, err)
		got, err := eval.Run(numOnlyFunc(t, legal), in, eval.Options{})
		require.NoError(t, err)
		// the contract: all -inf gives -inf, +inf gives +inf, NaN gives NaN
		assert.Equal(t, math.Inf(-1), got[0].Data[0], "%s: logsumexp of a row of -inf", k)
		assert.Equal(t, inf, got[0].Data[1], "%s: logsumexp of a row holding +inf", k)
		assert.True(t, math.IsNaN(got[0].Data[3]), "%s: logsumexp of a row holding NaN", k)
		for r := range ref {
			scale := numRowScale
			if r == 2 {
				scale = nil // softmax: ULPs of the result
			}
			for i := range ref[r].Data {
				sc := 0.0
				if scale != nil {
					sc = scale(in, ref[r], i)
				}
				e := numElemError(got[r].Data[i], ref[r].Data[i], k, sc)
				assert.LessOrEqual(t, e, numSoftmaxBound[k], "%s result %d element %d: got %v, want %v", k, r, i, got[r].Data[i], ref[r].Data[i])
			}
		}
	}
}

// ---------------------------------------------------------------------------
// Saturating casts

// TestSaturatingCastEveryF16 converts every f16 (and bf16) value to each
// integer type through the legalised cast: exactly numeric.SaturateInt.
func TestSaturatingCastEveryF16(t *testing.T) {
	for _, from := range []ir.ElemKind{ir.F16, ir.BF16} {
		xs := numEvery(from)
		in := []*eval.Tensor{numTensor(from, xs)}
		for _, to := range []ir.ElemKind{ir.I1, ir.I8, ir.UI8, ir.I16, ir.UI16, ir.I32, ir.UI32} {
			src := fmt.Sprintf(`func.func @f(%%x: tensor<65536x%s>) -> tensor<65536x%s> {
  %%y = graph.cast %%x : (tensor<65536x%s>) -> tensor<65536x%s>
  return %%y : tensor<65536x%s>
}`, from, to, from, to, to)
			orig, legal := numLegalized(t, src)
			got := numRun(t, legal, in, eval.Options{})
			unchecked := numRun(t, orig, in, eval.Options{})
			mismatches, before := 0, 0
			for i, x := range xs {
				want := numeric.SaturateInt(x, to)
				if got.Data[i] != want {
					mismatches++
					if mismatches < 5 {
						t.Errorf("%s -> %s: cast(%v) = %v, want %v", from, to, x, got.Data[i], want)
					}
				}
				if unchecked.Data[i] != want {
					before++
				}
			}
			t.Logf("%-4s -> %-4s: %d of 65536 mismatches (unchecked cast: %d)", from, to, mismatches, before)
		}
	}
}

// TestSaturatingCastF32Ends checks the ends of the wide types, where f32
// cannot hold the largest integer.
func TestSaturatingCastF32Ends(t *testing.T) {
	inf := math.Inf(1)
	xs := []float64{0, math.Copysign(0, -1), 0.9, -0.9, 1.5, -1.5, 127.5, -128.5, 255.9, 256, -1, math.NaN(), inf, -inf,
		2147483520, 2147483648, -2147483648, -2147483904, 4294967040, 4294967296, 1e10, -1e10,
		9223371487098961920, 9223372036854775808, -9223372036854775808, 3e38, -3e38}
	for i := range xs {
		xs[i] = numeric.RoundTo(xs[i], ir.F32)
	}
	for _, from := range []ir.ElemKind{ir.F32, ir.F64} {
		for _, to := range []ir.ElemKind{ir.I8, ir.UI8, ir.I32, ir.UI32, ir.I64} {
			src := fmt.Sprintf(`func.func @f(%%x: tensor<%dx%s>) -> tensor<%dx%s> {
  %%y = graph.cast %%x : (tensor<%dx%s>) -> tensor<%dx%s>
  return %%y : tensor<%dx%s>
}`, len(xs), from, len(xs), to, len(xs), from, len(xs), to, len(xs), to)
			_, legal := numLegalized(t, src)
			got := numRun(t, legal, []*eval.Tensor{numTensor(from, xs)}, eval.Options{})
			for i, x := range xs {
				want := numeric.SaturateInt(x, to)
				if to == ir.I64 {
					// 2^63 - 1 is no float: the top saturates to the
					// largest float below 2^63
					_, top, _ := saturationBounds(to, computeKind(from))
					want = math.Min(want, top)
				}
				assert.Equal(t, want, got.Data[i], "%s -> %s: cast(%v)", from, to, x)
			}
		}
	}
}

// ---------------------------------------------------------------------------
// The interpreter's element-wise functions on every f16 and bf16 value

// TestElementwiseEveryF16BF16 runs every f16 and bf16 value through exp,
// log, sigmoid, silu and tanh in the interpreter (f32 compute, one rounding
// to the storage type) and compares with the float64 functions: within
// 0.5 ULP plus what the second rounding (f64 -> f32 -> f16) adds, stated
// as 0.51 ULP.
func TestElementwiseEveryF16BF16(t *testing.T) {
	const bound = 0.51
	for _, k := range []ir.ElemKind{ir.F16, ir.BF16} {
		xs := numEvery(k)
		in := []*eval.Tensor{numTensor(k, xs)}
		for _, op := range []string{"exp", "log", "sigmoid", "silu", "tanh"} {
			src := fmt.Sprintf(`func.func @f(%%x: tensor<65536x%s>) -> tensor<65536x%s> {
  %%y = graph.%s %%x : tensor<65536x%s>
  return %%y : tensor<65536x%s>
}`, k, k, op, k, k)
			m := numParse(t, src)
			got := numRun(t, m, in, eval.Options{})
			ref := numRun(t, m, in, eval.Options{F64: true})
			worst, over := 0.0, 0
			for i := range xs {
				e := numeric.ULPDiff(ref.Data[i], got.Data[i], k)
				if math.IsInf(e, 0) && math.IsInf(got.Data[i], 0) && got.Data[i] == numeric.RoundTo(ref.Data[i], k) {
					e = 0 // the reference overflows the type
				}
				if e > bound {
					over++
					if over < 5 {
						t.Errorf("%s(%v) in %s = %v, want %v (%v ULP)", op, xs[i], k, got.Data[i], ref.Data[i], e)
					}
				}
				if !math.IsInf(e, 0) {
					worst = math.Max(worst, e)
				}
			}
			t.Logf("%-7s %-4s: max %.4f ULP over 65536 values", op, k, worst)
		}
	}
}

// ---------------------------------------------------------------------------
// What the expansions build, and their errors

// numPrimitives are the ops an expansion may build: the primitive graph
// ops of the kernel contract, and reshape for per-channel parameters.
var numPrimitives = map[string]bool{
	"graph.neg": true, "graph.abs": true, "graph.exp": true, "graph.exp2": true, "graph.log": true,
	"graph.log1p": true, "graph.expm1": true, "graph.round": true, "graph.floor": true, "graph.add": true, "graph.sub": true,
	"graph.mul": true, "graph.div": true, "graph.max": true, "graph.cmp": true, "graph.select": true,
	"graph.clamp": true, "graph.cast": true, "graph.constant": true, "graph.reduce_sum": true,
	"graph.reduce_max": true, "graph.reshape": true,
	ir.ModuleOpName: true, ir.FuncOpName: true, ir.ReturnOpName: true,
}

func TestExpansionsBuildPrimitives(t *testing.T) {
	for _, c := range numDiffCases {
		for _, k := range c.kinds {
			m := numParse(t, c.instantiate(c.semantic, k))
			numLegalize(t, m, NumericsOptions{})
			m.Walk(func(o *ir.Operation) bool {
				assert.True(t, numPrimitives[o.Name()], "%s (%s): the expansion built %s", c.name, k, o.Name())
				if o.Name() == "graph.reduce_sum" || o.Name() == "graph.reduce_max" {
					axes, _ := o.Attr("axes").(ir.ArrayAttr).Int64s()
					assert.Len(t, axes, 1, "%s: reductions are over one axis", c.name)
				}
				return true
			})
		}
	}
}

// TestExpandNumericsOpErrors checks that a malformed op gives an error at
// its location, not a panic, and that the pass reports it.
func TestExpandNumericsOpErrors(t *testing.T) {
	loc := ir.Location{File: "bad.tir", Line: 3, Col: 5}
	ty := ir.Tensor(ir.F32Type, 4, 8)
	fn := ir.NewFunc(ir.Location{File: "bad.tir", Line: 1, Col: 1}, "f", ir.FunctionType{Inputs: []ir.Type{ty}, Results: []ir.Type{ty}})
	b := ir.NewBuilderAtEnd(fn.Body())
	bad := b.Create("graph.softmax", loc, fn.Args(), []ir.Type{ty}, ir.Attrs("axis", ir.IntAttr{Value: 5, Type: ir.I64Type}))
	b.Create(ir.ReturnOpName, loc, bad.Results(), nil, nil)
	m := ir.NewModule(ir.Location{})
	m.Body().Append(fn.Operation)

	_, err := ExpandNumericsOp(ir.NewBuilderBefore(bad), bad)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bad.tir:3:5")
	assert.Contains(t, err.Error(), "axis 5 is out of range for rank 2")

	exp := ir.NewOperation("graph.exp", loc, fn.Args(), []ir.Type{ty}, nil, 0)
	_, err = ExpandNumericsOp(b, exp)
	assert.ErrorContains(t, err, "'graph.exp' op has no numerics expansion")
	assert.False(t, IsNumericsComposite(exp))

	err = LegalizeNumerics(m.Operation, numCtx(), NumericsOptions{})
	assert.ErrorContains(t, err, "axis 5 is out of range")
}
