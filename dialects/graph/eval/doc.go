// Package eval is the reference interpreter of the graph dialect: it runs a
// func.func of graph ops on concrete tensors, so that every backend's output
// can be compared with what the program means.
//
//	fn := ... // func.func @f(%x: tensor<?x8xbf16>) -> tensor<?x8xbf16>
//	in, _ := eval.RandomInputs(fn, 1, 1.0, 4)
//	want, err := eval.Run(fn, in, eval.Options{F64: true})
//
// Ops are interpreted by name ("graph.add"), with attributes read from the
// op, so the interpreter needs no generated op classes. An op it does not
// know is an error at the op's location.
//
// # Precision
//
// Without Options.F64, each op computes in float32 and rounds its result to
// the result's element type when storing it (round to nearest even; f16,
// bf16 and f8 via numeric.RoundTo): this is what a device kernel computing
// in f32 produces. Ops with an f64 operand or result compute in float64.
// Inside a graph.fused body an f16, bf16 or f8 result is held in f32
// instead, and rounded to its type where the body yields it or a
// graph.cast converts it, as a fused kernel computes it by default; with
// Options.ExactRounding it is rounded at every op there too.
//
//   - +, -, *, / and sqrt-like steps are IEEE float32 operations (each
//     float64 result rounded to float32, which is exact for these).
//   - Every other unary function (exp, tanh, sigmoid, silu, gelu, ...) and
//     logaddexp/logaddexp2 is evaluated in float64 and rounded to float32
//     once, like a correctly rounded float32 math library.
//   - Reductions (reduce_*, the sums inside rmsnorm, layernorm, softmax,
//     log_softmax, logsumexp) accumulate sequentially in row-major order,
//     rounding to float32 after every addition. matmul accumulates each dot
//     product over k in order as f32(acc + a*b) with the product exact.
//   - Composite ops (rmsnorm, layernorm, softmax, ...) round every
//     intermediate step to float32 as a straightforward kernel would; the
//     order of the steps is documented on each.
//
// With Options.F64 every op computes in float64 and floating-point results
// are never rounded to their element type: the reference that ULP bounds
// are measured against. Inputs, constants and attributes keep the values
// of their types (`eps = 1.0e-05` is the f32 nearest to 1e-5 in both modes).
//
// # Special values
//
//   - max/min propagate NaN and order -0 below +0 (IEEE 754-2019 maximum,
//     minimum); relu(NaN) is NaN and relu(-0) is +0.
//   - silu and gelu take their limit -0 at -inf rather than -inf*0 = NaN.
//   - logaddexp(a, b) = ln(e^a + e^b) exactly: equal infinities give that
//     infinity, +inf and -inf give +inf, NaN gives NaN, finite inputs never
//     overflow. logaddexp2 likewise in base 2.
//   - softmax and log_softmax subtract the row maximum first and never
//     overflow; a row of all -inf or one holding +inf or NaN gives NaN.
//     logsumexp gives -inf for a row of all -inf, +inf for a row holding
//     +inf.
//   - cmp is false for every predicate with a NaN operand except "ne".
//   - pow follows C99 (pow(x, 0) = 1 for any x, pow(1, y) = 1 for any y).
//
// # Integers
//
// add, sub, mul, div, max, min, neg, abs, relu, cmp, select, clamp, cast,
// matmul and the reductions accept integer tensors and work in exact
// integer arithmetic, wrapping to the result type in two's complement
// (integer div truncates toward zero; dividing by zero is an error).
// graph.cast from float to integer is unchecked, as on the target: it is
// numeric.WrapInt, x86-64's cvttsd2si followed by truncation to the
// result width, so NaN and values beyond the int64 range become INT64_MIN
// before truncation (0 in every narrower type), and in-range values keep
// their low bits (300.7 -> 44 in i8, -1.5 -> 255 in ui8).
//
// # Quantisation
//
// quantize computes saturate(round_half_even(x / scale) + zero_point) into
// the result type's range (ui8 [0, 255], i8 [-128, 127]); NaN maps to
// zero_point. The quotient x / scale is formed exactly in float64 in both
// modes, so ties are decided on the true quotient. To f8E4M3FN (or f8E5M2)
// it computes x / scale + zero_point, saturates it to [-448, 448] (or
// [-57344, 57344]) and rounds to nearest even (not under Options.F64);
// NaN stays NaN.
// dequantize is (q - zero_point) * scale in the op's precision, and
// requantize quantizes that dequantized value. Per-channel parameters are
// 1-D tensor operands along `axis`: #1 (scales) and #2 (zero points) of
// quantize and dequantize; #1, #2 (input side) and #3, #4 (output side) of
// requantize.
//
// # Attribute defaults
//
// eps 1e-5, axis -1, keepdim false, approximate "none", transpose_b false;
// reduce_* without axes reduce every axis; transpose without perm reverses
// the dims; slice offsets default to 0 and its sizes to the result type.
package eval
