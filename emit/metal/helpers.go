package metal

// The helpers are the functions a kernel calls for what Metal's library
// lacks or does differently from the graph dialect: NaN-propagating
// maximum and minimum (metal::fmax drops a NaN), log1p, expm1 and erfc
// (not in metal_stdlib), the limits of silu and gelu at -inf, and the
// 8-bit float formats. A file carries the helpers its kernels call, in
// this order.

// helperOrder lists every helper; one appears after those it calls.
var helperOrder = []string{
	"tf_max", "tf_min", "tf_simd_max", "tf_simd_min",
	"tf_sigmoid", "tf_silu", "tf_relu", "tf_log1p", "tf_expm1", "tf_erfc", "tf_gelu", "tf_gelu_tanh",
	"tf_to_f8e4m3", "tf_from_f8e4m3", "tf_to_f8e5m2", "tf_from_f8e5m2",
}

// helperDeps names the helpers a helper calls.
var helperDeps = map[string][]string{
	"tf_silu":      {"tf_sigmoid"},
	"tf_gelu":      {"tf_erfc"},
	"tf_gelu_tanh": {"tf_sigmoid"},
}

var helperSource = map[string]string{
	"tf_max": `// IEEE 754-2019 maximum: NaN if either is NaN, +0 above -0 (metal::fmax
// returns the other operand of a NaN).
static inline float tf_max(float a, float b) {
  if (metal::isnan(a) || metal::isnan(b)) return a + b;
  if (a == b) return metal::signbit(a) ? b : a;
  return a > b ? a : b;
}
`,
	"tf_min": `// IEEE 754-2019 minimum: NaN if either is NaN, -0 below +0.
static inline float tf_min(float a, float b) {
  if (metal::isnan(a) || metal::isnan(b)) return a + b;
  if (a == b) return metal::signbit(a) ? a : b;
  return a < b ? a : b;
}
`,
	"tf_simd_max": `// The maximum over the simdgroup, NaN if a lane holds NaN.
static inline float tf_simd_max(float v) {
  return simd_any(metal::isnan(v)) ? NAN : simd_max(v);
}
`,
	"tf_simd_min": `// The minimum over the simdgroup, NaN if a lane holds NaN.
static inline float tf_simd_min(float v) {
  return simd_any(metal::isnan(v)) ? NAN : simd_min(v);
}
`,
	"tf_sigmoid": `// 1 / (1 + e^-x) without overflow for either sign.
static inline float tf_sigmoid(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + metal::precise::exp(-x));
  const float e = metal::precise::exp(x);
  return e / (1.0f + e);
}
`,
	"tf_silu": `// x * sigmoid(x), with its limit -0 at -inf (not -inf * 0).
static inline float tf_silu(float x) {
  return x == -INFINITY ? -0.0f : x * tf_sigmoid(x);
}
`,
	"tf_relu": `// max(x, 0) that keeps NaN and gives +0 for -0.
static inline float tf_relu(float x) {
  return metal::isnan(x) ? x : (x > 0.0f ? x : 0.0f);
}
`,
	"tf_log1p": `// ln(1 + x), accurate near 0: log(u) * x / (u - 1) with u = 1 + x rounded.
static inline float tf_log1p(float x) {
  const float u = 1.0f + x;
  if (u == 1.0f) return x;
  if (u == INFINITY) return u;
  return metal::precise::log(u) * (x / (u - 1.0f));
}
`,
	"tf_expm1": `// e^x - 1, accurate near 0: (u - 1) * x / log(u) with u = e^x rounded.
static inline float tf_expm1(float x) {
  const float u = metal::precise::exp(x);
  if (u == 1.0f) return x;
  const float um1 = u - 1.0f;
  if (um1 == -1.0f) return -1.0f;
  if (u == INFINITY) return u;
  return um1 * (x / metal::precise::log(u));
}
`,
	"tf_erfc": `// The complementary error function, relative error below 1.2e-7
// (a Chebyshev fit, Numerical Recipes' erfcc).
static inline float tf_erfc(float x) {
  const float z = metal::fabs(x);
  const float t = 1.0f / (1.0f + 0.5f * z);
  const float p = -z * z - 1.26551223f + t * (1.00002368f + t * (0.37409196f + t * (0.09678418f +
      t * (-0.18628806f + t * (0.27886807f + t * (-1.13520398f + t * (1.48851587f +
      t * (-0.82215223f + t * 0.17087277f))))))));
  const float r = t * metal::precise::exp(p);
  return x >= 0.0f ? r : 2.0f - r;
}
`,
	"tf_gelu": `// GELU: x * Phi(x) = x / 2 * erfc(-x / sqrt(2)), -0 at -inf.
static inline float tf_gelu(float x) {
  return x == -INFINITY ? -0.0f : 0.5f * x * tf_erfc(-0.70710678f * x);
}
`,
	"tf_gelu_tanh": `// GELU's tanh approximation as x * sigmoid(2u), u = sqrt(2 / pi) (x + 0.044715 x^3).
static inline float tf_gelu_tanh(float x) {
  const float u = 0.79788456f * (x + 0.044715f * x * x * x);
  return x == -INFINITY ? -0.0f : x * tf_sigmoid(2.0f * u);
}
`,
	"tf_to_f8e4m3": `// float -> f8E4M3FN bits, rounding to nearest even; beyond 464 (the
// midpoint of 448 and the NaN pattern), inf and NaN give NaN (no infinity).
static inline uchar tf_to_f8e4m3(float x) {
  const uint b = as_type<uint>(x);
  const uint s = (b >> 24) & 0x80u;
  const float a = metal::fabs(x);
  if (!(a <= 464.0f)) return uchar(s | 0x7f);
  if (a < 0.015625f) return uchar(s | uint(metal::rint(a * 512.0f)));
  const uint ab = b & 0x7fffffffu;
  const uint r = ab + 0x7ffffu + ((ab >> 20) & 1u);
  return uchar(s | (((r >> 23) - 120u) << 3) | ((r >> 20) & 7u));
}
`,
	"tf_from_f8e4m3": `// f8E4M3FN bits -> float (S.1111.111 is NaN).
static inline float tf_from_f8e4m3(uchar v) {
  const uint s = uint(v & 0x80) << 24;
  const uint e = (v >> 3) & 15u, m = v & 7u;
  if (e == 15u && m == 7u) return NAN;
  if (e == 0u) return as_type<float>(s | as_type<uint>(float(m) * 0.001953125f));
  return as_type<float>(s | ((e + 120u) << 23) | (m << 20));
}
`,
	"tf_to_f8e5m2": `// float -> f8E5M2 bits, rounding to nearest even; from 61440 (the
// midpoint of 57344 and 65536) on, infinity.
static inline uchar tf_to_f8e5m2(float x) {
  const uint b = as_type<uint>(x);
  const uint s = (b >> 24) & 0x80u;
  const float a = metal::fabs(x);
  if (metal::isnan(x)) return uchar(s | 0x7f);
  if (a >= 61440.0f) return uchar(s | 0x7c);
  if (a < 0.00006103515625f) return uchar(s | uint(metal::rint(a * 65536.0f)));
  const uint ab = b & 0x7fffffffu;
  const uint r = ab + 0xfffffu + ((ab >> 21) & 1u);
  return uchar(s | (((r >> 23) - 112u) << 2) | ((r >> 21) & 3u));
}
`,
	"tf_from_f8e5m2": `// f8E5M2 bits -> float.
static inline float tf_from_f8e5m2(uchar v) {
  const uint s = uint(v & 0x80) << 24;
  const uint e = (v >> 2) & 31u, m = v & 3u;
  if (e == 31u) return m == 0u ? as_type<float>(s | 0x7f800000u) : NAN;
  if (e == 0u) return as_type<float>(s | as_type<uint>(float(m) * 0.0000152587890625f));
  return as_type<float>(s | ((e + 112u) << 23) | (m << 21));
}
`,
}

// helperSet collects the helpers a file needs.
type helperSet map[string]bool

// use records helper h and those it calls.
func (hs helperSet) use(h string) {
	if hs[h] {
		return
	}
	hs[h] = true
	for _, d := range helperDeps[h] {
		hs.use(d)
	}
}

// text is the source of the helpers in the set, in helperOrder.
func (hs helperSet) text() string {
	var out string
	for _, h := range helperOrder {
		if hs[h] {
			out += "\n" + helperSource[h]
		}
	}
	return out
}
