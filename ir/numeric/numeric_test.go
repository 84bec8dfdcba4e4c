package numeric

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/ir"
)

var narrowKinds = []ir.ElemKind{ir.F16, ir.BF16, ir.F8E4M3FN, ir.F8E5M2}

// patterns returns every bit pattern of a narrow float kind.
func patterns(k ir.ElemKind) int { return 1 << k.BitWidth() }

func TestRoundTripEveryPattern(t *testing.T) {
	type codec struct {
		to   func(float32) uint64
		from func(uint64) float32
	}
	codecs := map[ir.ElemKind]codec{
		ir.F16:      {func(v float32) uint64 { return uint64(F16Bits(v)) }, func(b uint64) float32 { return F16FromBits(uint16(b)) }},
		ir.BF16:     {func(v float32) uint64 { return uint64(BF16Bits(v)) }, func(b uint64) float32 { return BF16FromBits(uint16(b)) }},
		ir.F8E4M3FN: {func(v float32) uint64 { return uint64(F8E4M3FNBits(v)) }, func(b uint64) float32 { return F8E4M3FNFromBits(uint8(b)) }},
		ir.F8E5M2:   {func(v float32) uint64 { return uint64(F8E5M2Bits(v)) }, func(b uint64) float32 { return F8E5M2FromBits(uint8(b)) }},
	}
	for _, k := range narrowKinds {
		c := codecs[k]
		nans, bad := 0, 0
		for b := 0; b < patterns(k); b++ {
			v := c.from(uint64(b))
			if math.IsNaN(float64(v)) {
				nans++
				// any NaN pattern is fine, but it must decode to NaN again
				if !math.IsNaN(float64(c.from(c.to(v)))) {
					bad++
				}
				continue
			}
			if c.to(v) != uint64(b) {
				bad++
			}
			// the generic decoder agrees with the typed one
			g, ok := FromBits(uint64(b), k)
			require.True(t, ok)
			if g != float64(v) || math.Signbit(g) != math.Signbit(float64(v)) {
				bad++
			}
			// a representable value is a fixed point of RoundTo
			if r := RoundTo(float64(v), k); r != float64(v) || math.Signbit(r) != math.Signbit(float64(v)) {
				bad++
			}
			gb, _ := ToBits(float64(v), k)
			if gb != uint64(b) {
				bad++
			}
		}
		assert.Zero(t, bad, "%s: round-trip mismatches", k)
		wantNaNs := map[ir.ElemKind]int{ir.F16: 2 * 1023, ir.BF16: 2 * 127, ir.F8E4M3FN: 2, ir.F8E5M2: 2 * 3}[k]
		assert.Equal(t, wantNaNs, nans, "%s: NaN patterns", k)
	}
}

func TestFormatConstants(t *testing.T) {
	assert.Equal(t, 448.0, MaxFinite(ir.F8E4M3FN))
	assert.Equal(t, 57344.0, MaxFinite(ir.F8E5M2))
	assert.Equal(t, 65504.0, MaxFinite(ir.F16))
	assert.Equal(t, float64(math.Float32frombits(0x7f7f0000)), MaxFinite(ir.BF16))
	assert.Equal(t, float64(math.MaxFloat32), MaxFinite(ir.F32))
	assert.Equal(t, math.MaxFloat64, MaxFinite(ir.F64))
	assert.Equal(t, 255.0, MaxFinite(ir.UI8))
	assert.Equal(t, 127.0, MaxFinite(ir.I8))
	assert.Equal(t, math.Ldexp(1, -24), SmallestSubnormal(ir.F16))
	assert.Equal(t, math.Ldexp(1, -14), SmallestNormal(ir.F16))
	assert.Equal(t, math.Ldexp(1, -9), SmallestSubnormal(ir.F8E4M3FN))
	assert.Equal(t, math.Ldexp(1, -6), SmallestNormal(ir.F8E4M3FN))
	assert.Equal(t, math.Ldexp(1, -16), SmallestSubnormal(ir.F8E5M2))
	assert.Equal(t, math.Ldexp(1, -133), SmallestSubnormal(ir.BF16))
	assert.Equal(t, math.Ldexp(1, -149), SmallestSubnormal(ir.F32))

	// spot patterns from the format definitions
	assert.Equal(t, uint8(0x7e), F8E4M3FNBits(448))
	assert.Equal(t, uint8(0x7f), F8E4M3FNBits(float32(math.NaN())))
	assert.Equal(t, uint8(0xff), F8E4M3FNBits(float32(math.Copysign(math.NaN(), -1))))
	assert.Equal(t, uint8(0x01), F8E4M3FNBits(float32(math.Ldexp(1, -9))))
	assert.Equal(t, uint8(0x38), F8E4M3FNBits(1))
	assert.Equal(t, uint8(0x7b), F8E5M2Bits(57344))
	assert.Equal(t, uint8(0x7c), F8E5M2Bits(float32(math.Inf(1))))
	assert.Equal(t, uint8(0x3c), F8E5M2Bits(1))
	assert.Equal(t, uint16(0x3f80), BF16Bits(1))
	assert.Equal(t, uint16(0x7c00), F16Bits(65520)) // the tie above 65504 goes to inf
	assert.Equal(t, uint16(0x7bff), F16Bits(65519))
}

func TestRoundHalfEvenTies(t *testing.T) {
	for in, want := range map[float64]float64{
		0.5: 0, 1.5: 2, 2.5: 2, 3.5: 4, -0.5: 0, -1.5: -2, -2.5: -2, 2.4999999999999996: 2, 2.5000000000000004: 3,
	} {
		assert.Equal(t, want, RoundHalfEven(in), "RoundHalfEven(%v)", in)
	}
	assert.True(t, math.Signbit(RoundHalfEven(-0.5)))
	assert.True(t, math.IsNaN(RoundHalfEven(math.NaN())))
	assert.True(t, math.IsInf(RoundHalfEven(math.Inf(-1)), -1))
}

func TestRoundToTies(t *testing.T) {
	type tc struct {
		k        ir.ElemKind
		in, want float64
	}
	ulp := math.Ldexp
	cases := []tc{
		// f16: ulp of [1,2) is 2^-10; ties go to the even mantissa
		{ir.F16, 1 + ulp(1, -11), 1},
		{ir.F16, 1 + 3*ulp(1, -11), 1 + 2*ulp(1, -10)},
		{ir.F16, 1 + ulp(1, -11) + ulp(1, -40), 1 + ulp(1, -10)},
		{ir.F16, -(1 + ulp(1, -11)), -1},
		{ir.F16, 65504 + 16, math.Inf(1)}, // tie between 65504 (odd) and 65536
		{ir.F16, 65504 + 15.99, 65504},
		{ir.F16, ulp(1, -25), 0},                             // half the smallest subnormal ties to 0
		{ir.F16, ulp(1, -25) + ulp(1, -60), ulp(1, -24)},     // just above rounds up
		{ir.F16, 3 * ulp(1, -25), 2 * ulp(1, -24)},           // subnormal tie to even
		{ir.F16, -ulp(1, -26), math.Copysign(0, -1)},         // underflow keeps the sign
		{ir.BF16, 1 + ulp(1, -8), 1},                         // tie, even
		{ir.BF16, 1 + 3*ulp(1, -8), 1 + ulp(1, -6)},          // tie, odd -> up
		{ir.BF16, float64(math.MaxFloat32), math.Inf(1)},     // rounds past the top
		{ir.F8E4M3FN, 464, 448},                              // tie between 448 (even) and 480
		{ir.F8E4M3FN, 465, math.NaN()},                       // past the top: NaN, no inf
		{ir.F8E4M3FN, math.Inf(-1), math.NaN()},              // no infinities
		{ir.F8E4M3FN, 1.0625, 1},                             // 1 + 2^-4 ties to 1
		{ir.F8E4M3FN, 1.1875, 1.25},                          // 1 + 3*2^-4 ties to 1.25
		{ir.F8E4M3FN, ulp(1, -10), 0},                        // half the smallest subnormal
		{ir.F8E4M3FN, 3 * ulp(1, -10), ulp(1, -8)},           // subnormal tie to even
		{ir.F8E5M2, 61440, math.Inf(1)},                      // tie between 57344 (odd) and 65536
		{ir.F8E5M2, 61439, 57344},                            //
		{ir.F8E5M2, 1.125, 1},                                // tie, even
		{ir.F8E5M2, 1.375, 1.5},                              // tie, odd -> up
		{ir.F32, 1 + ulp(1, -24), 1},                         // f32 tie
		{ir.F32, 1 + 3*ulp(1, -24), 1 + ulp(1, -22)},         //
		{ir.F64, 1 + ulp(1, -60), 1 + ulp(1, -60)},           // f64 is exact
		{ir.I8, 300.7, 44},                                   // ints wrap
		{ir.UI8, -1.5, 255},                                  //
		{ir.I32, math.NaN(), 0},                              //
		{ir.I1, 3, 1},                                        //
		{ir.I64, math.Inf(1), math.MinInt64},                 //
		{ir.UI32, 3e9, 3e9},                                  //
		{ir.I32, 3e9, -1294967296},                           //
		{ir.I16, -40000.9, 25536},                            // -40000 + 65536
		{ir.UI16, 70000, 4464},                               // 70000 - 65536
		{ir.I64, 9.223372036854775e18, 9.223372036854775e18}, // below 2^63 stays
	}
	for _, c := range cases {
		got := RoundTo(c.in, c.k)
		if math.IsNaN(c.want) {
			assert.True(t, math.IsNaN(got), "RoundTo(%v, %s) = %v, want NaN", c.in, c.k, got)
			continue
		}
		assert.Equal(t, c.want, got, "RoundTo(%v, %s)", c.in, c.k)
		assert.Equal(t, math.Signbit(c.want), math.Signbit(got), "sign of RoundTo(%v, %s)", c.in, c.k)
	}
}

// TestRoundToMatchesFloat32Path checks the direct float64 rounding against
// the float16 library's (independently written) float32 path on inputs
// that are float32 values, where both must give the same single rounding,
// and checks bf16 against rounding done on the float32 bits.
func TestRoundToMatchesFloat32Path(t *testing.T) {
	bad16, badBF := 0, 0
	check := func(bits uint32) {
		v := math.Float32frombits(bits)
		if math.IsNaN(float64(v)) {
			return
		}
		want := float64(F16FromBits(F16Bits(v)))
		if got := RoundTo(float64(v), ir.F16); got != want || math.Signbit(got) != math.Signbit(want) {
			bad16++
		}
		// bf16 by integer rounding of the float32 bits (exact for non-NaN)
		lsb := (bits >> 16) & 1
		rb := (bits + 0x7fff + lsb) >> 16
		wantBF := float64(math.Float32frombits(rb << 16))
		if got := RoundTo(float64(v), ir.BF16); got != wantBF {
			badBF++
		}
	}
	// a stride through all patterns plus every pattern of the f16 range's
	// rounding-critical low bits around a few binades
	for b := uint64(0); b < 1<<32; b += 4099 {
		check(uint32(b))
	}
	for _, hi := range []uint32{0x33000000, 0x38800000, 0x3f800000, 0x477fe000, 0xb3800000} {
		for lo := uint32(0); lo < 1<<15; lo++ {
			check(hi + lo)
		}
	}
	assert.Zero(t, bad16, "f16 mismatches against the float32 path")
	assert.Zero(t, badBF, "bf16 mismatches against bit rounding")
}

// TestRoundToIsNearest checks on random doubles that the result is a
// representable value no farther than half a ULP, with ties to even.
func TestRoundToIsNearest(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, k := range narrowKinds {
		bad := 0
		for i := 0; i < 20000; i++ {
			v := math.Ldexp(r.Float64()*2-1, r.IntN(40)-30)
			got := RoundTo(v, k)
			if math.IsNaN(got) || math.IsInf(got, 0) {
				if math.Abs(v) <= MaxFinite(k) {
					bad++
				}
				continue
			}
			d := ULPDiff(v, got, k)
			if d > 0.5 {
				bad++
			}
			if b, _ := ToBits(got, k); d == 0.5 && b&1 != 0 {
				bad++ // a tie went to the odd neighbour
			}
		}
		assert.Zero(t, bad, "%s: not nearest-even", k)
	}
}

func TestULPDiff(t *testing.T) {
	inf := math.Inf(1)
	nan := math.NaN()
	sub16 := SmallestSubnormal(ir.F16)
	for _, c := range []struct {
		a, b float64
		k    ir.ElemKind
		want float64
	}{
		{1, 1 + math.Ldexp(1, -10), ir.F16, 1},
		{1, 1 - math.Ldexp(1, -11), ir.F16, 1}, // across a binade boundary
		{1, 2, ir.F16, 1024},
		{0, math.Copysign(0, -1), ir.F16, 0},
		{sub16, -sub16, ir.F16, 2}, // across zero
		{sub16, 0, ir.F16, 1},      // subnormal neighbours
		{SmallestNormal(ir.F16), SmallestNormal(ir.F16) - sub16, ir.F16, 1},
		{65504, 65504 - 32, ir.F16, 1},
		{1, 1 + math.Ldexp(1, -12), ir.F16, 0.25}, // not representable: fractional
		{inf, inf, ir.F16, 0},
		{-inf, -inf, ir.F32, 0},
		{inf, -inf, ir.F32, inf},
		{inf, 65504, ir.F16, inf},
		{nan, nan, ir.F32, 0},
		{nan, 1, ir.F32, inf},
		{1, nan, ir.BF16, inf},
		{1, 1 + math.Ldexp(1, -23), ir.F32, 1},
		{math.Ldexp(1, -149), -math.Ldexp(1, -149), ir.F32, 2},
		{math.MaxFloat32, float64(math.Nextafter32(math.MaxFloat32, 0)), ir.F32, 1},
		{1, 1.0078125, ir.BF16, 1},
		{448, 416, ir.F8E4M3FN, 1},
		{448, -448, ir.F8E4M3FN, 252},
		{0, math.Ldexp(1, -9), ir.F8E4M3FN, 1},
		{57344, 49152, ir.F8E5M2, 1},
		{1, math.Nextafter(1, 2), ir.F64, 1},
		{math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64, ir.F64, 2},
		{-1, math.Nextafter(-1, -2), ir.F64, 1},
		{5, -3, ir.I32, 8},
	} {
		assert.Equal(t, c.want, ULPDiff(c.a, c.b, c.k), "ULPDiff(%v, %v, %s)", c.a, c.b, c.k)
		assert.Equal(t, c.want, ULPDiff(c.b, c.a, c.k), "ULPDiff(%v, %v, %s)", c.b, c.a, c.k)
	}
	// every pair of neighbouring f16 patterns is one ULP apart
	bad := 0
	for b := uint16(0); b < 0x7bff; b++ {
		lo, hi := float64(F16FromBits(b)), float64(F16FromBits(b+1))
		if ULPDiff(lo, hi, ir.F16) != 1 || ULPDiff(-lo, -hi, ir.F16) != 1 {
			bad++
		}
	}
	assert.Zero(t, bad)
	// and so are f8 neighbours
	for _, k := range []ir.ElemKind{ir.F8E4M3FN, ir.F8E5M2} {
		bad := 0
		for b := uint64(0); b < 0x7e; b++ {
			lo, _ := FromBits(b, k)
			hi, _ := FromBits(b+1, k)
			if math.IsNaN(hi) || math.IsInf(hi, 0) {
				continue
			}
			if ULPDiff(lo, hi, k) != 1 {
				bad++
			}
		}
		assert.Zero(t, bad, "%s neighbours", k)
	}
}

func TestIntConversions(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		v         float64
		k         ir.ElemKind
		sat, wrap float64
	}{
		{300.7, ir.I8, 127, 44},
		{-300.7, ir.I8, -128, -44},
		{-2.5, ir.I8, -2, -2},
		{-1.5, ir.UI8, 0, 255},
		{255.9, ir.UI8, 255, 255},
		{256, ir.UI8, 255, 0},
		{nan, ir.I32, 0, 0},
		{nan, ir.UI8, 0, 0},
		{nan, ir.I64, 0, math.MinInt64},
		{math.Inf(1), ir.I32, math.MaxInt32, 0},
		{math.Inf(-1), ir.I16, math.MinInt16, 0},
		{1e30, ir.I64, math.MaxInt64, math.MinInt64},
		{-two63, ir.I64, math.MinInt64, math.MinInt64},
		{3e9, ir.I32, math.MaxInt32, -1294967296},
		{3e9, ir.UI32, 3e9, 3e9},
		{5e9, ir.UI32, math.MaxUint32, 5e9 - 4294967296},
		{-1, ir.UI32, 0, math.MaxUint32},
		{2.9, ir.I1, 1, 0},
		{1.2, ir.I1, 1, 1},
		{-0.9, ir.I32, 0, 0},
	} {
		assert.Equal(t, c.sat, SaturateInt(c.v, c.k), "SaturateInt(%v, %s)", c.v, c.k)
		assert.Equal(t, c.wrap, WrapInt(c.v, c.k), "WrapInt(%v, %s)", c.v, c.k)
	}
	assert.Equal(t, int64(math.MinInt64), FloatToInt64(two63))
	assert.Equal(t, int64(math.MaxInt64-1023), FloatToInt64(math.Nextafter(two63, 0)))
	assert.Equal(t, 1.5, WrapInt(1.5, ir.F32), "non-integer kinds pass through")
	assert.Equal(t, int64(-1), WrapInt64(0xffff, ir.I16))
	assert.Equal(t, int64(0xffff), WrapInt64(-1, ir.UI16))
}

func TestGenericBits(t *testing.T) {
	b, ok := ToBits(1, ir.F32)
	assert.True(t, ok)
	assert.Equal(t, uint64(0x3f800000), b)
	b, _ = ToBits(-2, ir.F64)
	assert.Equal(t, math.Float64bits(-2), b)
	b, _ = ToBits(1, ir.BF16)
	assert.Equal(t, uint64(0x3f80), b)
	v, ok := FromBits(0x7f800000, ir.F32)
	assert.True(t, ok)
	assert.True(t, math.IsInf(v, 1))
	v, _ = FromBits(math.Float64bits(0.1), ir.F64)
	assert.Equal(t, 0.1, v)
	v, _ = FromBits(0xffff3c00, ir.F16) // high bits beyond the width are ignored
	assert.Equal(t, 1.0, v)
	_, ok = ToBits(1, ir.I8)
	assert.False(t, ok)
	_, ok = FromBits(1, ir.UI8)
	assert.False(t, ok)
	assert.Equal(t, 1.0, SmallestNormal(ir.I32))
	assert.Equal(t, 1.0, SmallestSubnormal(ir.I32))
	assert.Equal(t, 0.0, MaxFinite(ir.InvalidElem))
	assert.Equal(t, 1.5, RoundTo(1.5, ir.InvalidElem))
}

func TestULP(t *testing.T) {
	for _, c := range []struct {
		x    float64
		k    ir.ElemKind
		want float64
	}{
		{1, ir.BF16, 0x1p-7}, {-1.5, ir.BF16, 0x1p-7}, {2, ir.BF16, 0x1p-6}, {1, ir.F16, 0x1p-10},
		{1, ir.F32, 0x1p-23}, {1, ir.F64, 0x1p-52}, {0, ir.F16, 0x1p-24}, {1e-7, ir.F16, 0x1p-24},
		{65504, ir.F16, 32}, {1e6, ir.F16, math.Inf(1)}, {math.Inf(-1), ir.F32, math.Inf(1)},
		{1, ir.F8E4M3FN, 0x1p-3}, {3, ir.I32, 1},
		// |x| rounding up into the next binade takes that binade's spacing
		{1.999, ir.BF16, 0x1p-6},
	} {
		assert.Equal(t, c.want, ULP(c.x, c.k), "ULP(%v, %s)", c.x, c.k)
	}
}

// TestRoundFastPathMatchesScaled holds round's bit-rounding of normal
// values to the scaling it takes for the rest: random doubles of every
// binade a format has and near it, every tie and near-tie of a few
// significands, and the top of each range (the carry into overflow).
func TestRoundFastPathMatchesScaled(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, k := range []ir.ElemKind{ir.F16, ir.BF16, ir.F8E5M2, ir.F32} {
		f, _ := formatOf(k)
		bad := 0
		check := func(v float64) {
			got, want := f.round(v), f.roundScaled(v, math.Abs(v))
			if got != want || math.Signbit(got) != math.Signbit(want) {
				if bad < 5 {
					t.Errorf("%s: round(%v) = %v, scaled %v", k, v, got, want)
				}
				bad++
			}
		}
		for i := 0; i < 200000; i++ {
			e := f.emin() - 3 + r.IntN(f.emax()-f.emin()+6)
			v := math.Ldexp(1+r.Float64(), e)
			if i%2 == 1 {
				v = -v
			}
			check(v)
			// the tie above v's rounded value and its neighbours
			q := f.quantum(math.Abs(v))
			tie := math.Abs(f.roundScaled(v, math.Abs(v))) + math.Ldexp(1, q-1)
			check(tie)
			check(math.Nextafter(tie, 0))
			check(math.Nextafter(tie, math.Inf(1)))
		}
		top := f.maxFinite()
		for _, v := range []float64{top, top + math.Ldexp(1, f.emax()-f.man-1), math.Nextafter(top+math.Ldexp(1, f.emax()-f.man-1), 0),
			math.Ldexp(1, f.emin()), math.Nextafter(math.Ldexp(1, f.emin()), 0)} {
			check(v)
			check(-v)
		}
		assert.Zero(t, bad, "%s: fast path and scaled rounding disagree", k)
	}
}
