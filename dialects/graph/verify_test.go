package graph

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/ir"
)

// verifyCase is one op built from its operand and result types, verified
// as tfc verifies a file. want is the message after `'graph.x' op `, or
// empty for an op that verifies.
type verifyCase struct {
	name  string
	op    string
	in    []string
	out   []string
	attrs ir.AttrDict
	want  string
}

func (c verifyCase) message() string { return "'" + c.op + "' op " + c.want }

func ok(name, op string, in, out []string, attrs ir.AttrDict) verifyCase {
	return verifyCase{name: name, op: op, in: in, out: out, attrs: attrs}
}

func bad(name, op string, in, out []string, attrs ir.AttrDict, want string) verifyCase {
	return verifyCase{name: name, op: op, in: in, out: out, attrs: attrs, want: want}
}

func s(ts ...string) []string { return ts }

// A few types the cases share.
const (
	t4x8   = "tensor<4x8xf32>"
	t8     = "tensor<8xf32>"
	t4     = "tensor<4xf32>"
	t4x8i8 = "tensor<4x8xi8>"
	t4x8u8 = "tensor<4x8xui8>"
)

var verifyCases = []verifyCase{
	// Declarations: counts, constraints, sizes, attribute names and kinds.
	bad("operand count", "graph.add", s(t4), s(t4), nil, "expected 2 operands, but found 1"),
	bad("optional operand group", "graph.quantize", s(t4x8, t8), s(t4x8u8), ir.Attrs("axis", i64(1)), "expected 1 or 3 operands, but found 2"),
	bad("requantize optional group", "graph.requantize", s("tensor<4x8xi32>", t8, "tensor<8xi32>"), s(t4x8i8), nil, "expected 1 or 5 operands, but found 3"),
	bad("result count", "graph.exp", s(t4), s(t4, t4), nil, "expected 1 result, but found 2"),
	bad("float-only operand", "graph.exp", s("tensor<4xi32>"), s("tensor<4xi32>"), nil, "operand #0 must be tensor of floating-point values, but got 'tensor<4xi32>'"),
	bad("i1 is not numeric", "graph.add", s("tensor<4xi1>", "tensor<4xi1>"), s("tensor<4xi1>"), nil, "operand #0 must be tensor of numeric (not i1) values, but got 'tensor<4xi1>'"),
	bad("memref operand", "graph.neg", s("memref<4xf32, dram>"), s(t4), nil, "operand #0 must be tensor of numeric (not i1) values, but got 'memref<4xf32, dram>'"),
	bad("scalar operand", "graph.neg", s("f32"), s(t4), nil, "operand #0 must be tensor of numeric (not i1) values, but got 'f32'"),
	bad("float-only result", "graph.exp", s(t4), s("tensor<4xi32>"), nil, "result #0 must be tensor of floating-point values, but got 'tensor<4xi32>'"),
	bad("element count overflow", "graph.reshape", s("tensor<?xf32>"), s("tensor<?x4611686018427387904x4xf32>"), nil, "result #0: type tensor<?x4611686018427387904x4xf32> has more elements than fit in int64"),
	bad("byte size overflow", "graph.reshape", s("tensor<?xf32>"), s("tensor<?x2305843009213693952xf32>"), nil, "result #0: type tensor<?x2305843009213693952xf32> is larger than 2^63 bytes"),
	bad("static byte size overflow", "graph.exp", s("tensor<?xf32>"), s("tensor<2305843009213693952xf32>"), nil, "result #0: type tensor<2305843009213693952xf32> is larger than 2^63 bytes"),
	bad("unknown attribute", "graph.add", s(t4, t4), s(t4), ir.Attrs("foo", i64(1)), "unknown attribute 'foo'"),
	bad("missing attribute", "graph.transpose", s(t4x8), s("tensor<8x4xf32>"), nil, "requires attribute 'perm'"),
	bad("int array attribute kind", "graph.reduce_sum", s(t4x8), s(t4), ir.Attrs("axes", i64(1)), "attribute 'axes' must be an array of integers, but got 1"),
	bad("float attribute kind", "graph.rmsnorm", s(t4x8, t8), s(t4x8), ir.Attrs("eps", ir.StringAttr("x")), `attribute 'eps' must be a number, but got "x"`),
	bad("int attribute kind", "graph.softmax", s(t4x8), s(t4x8), ir.Attrs("axis", f32(1.5)), "attribute 'axis' must be an integer, but got 1.5"),
	bad("bool attribute kind", "graph.reduce_sum", s(t4x8), s(t4), ir.Attrs("axes", ir.IntArray(1), "keepdim", i64(1)), "attribute 'keepdim' must be true or false, but got 1"),
	bad("string attribute kind", "graph.cmp", s(t4, t4), s("tensor<4xi1>"), ir.Attrs("predicate", i64(1)), "attribute 'predicate' must be a string, but got 1"),
	bad("type attribute kind", "graph.cast", s(t4), s("tensor<4xf16>"), ir.Attrs("dtype", ir.StringAttr("f16")), `attribute 'dtype' must be a type, but got "f16"`),
	bad("dense attribute kind", "graph.constant", nil, s(t4), ir.Attrs("value", f32(1)), "attribute 'value' must be a dense elements attribute, but got 1.0"),
	ok("integer for a float attribute", "graph.clamp", s(t4), s(t4), ir.Attrs("min", i64(0), "max", i64(6))),

	// Unary
	ok("unary", "graph.exp", s(t4x8), s(t4x8), nil),
	ok("unary on integers", "graph.neg", s("tensor<4xi32>"), s("tensor<4xi32>"), nil),
	ok("unary, dynamic", "graph.silu", s("tensor<?x8xbf16>"), s("tensor<?x8xbf16>"), nil),
	bad("unary result type", "graph.exp", s(t4), s(t8), nil, "result type 'tensor<8xf32>' does not match the inferred type 'tensor<4xf32>'"),
	ok("gelu tanh", "graph.gelu", s(t4), s(t4), ir.Attrs("approximate", ir.StringAttr("tanh"))),
	bad("gelu approximate", "graph.gelu", s(t4), s(t4), ir.Attrs("approximate", ir.StringAttr("fast")), `attribute 'approximate' must be one of "none" or "tanh", but got "fast"`),

	// Clamp
	ok("clamp", "graph.clamp", s(t4), s(t4), ir.Attrs("min", f32(0), "max", f32(6))),
	bad("clamp order", "graph.clamp", s(t4), s(t4), ir.Attrs("min", f32(6), "max", f32(0)), "expects min <= max, but got min = 6.0 and max = 0.0"),
	bad("clamp needs max", "graph.clamp", s(t4), s(t4), ir.Attrs("min", f32(0)), "requires attribute 'max'"),

	// Binary
	ok("binary", "graph.add", s(t4x8, t4x8), s(t4x8), nil),
	ok("binary broadcast", "graph.mul", s("tensor<4x1xf32>", t8), s(t4x8), nil),
	ok("binary broadcast rank 0", "graph.mul", s(t4x8, "tensor<f32>"), s(t4x8), nil),
	ok("binary broadcast dynamic", "graph.add", s("tensor<?x8xf32>", "tensor<4x1xf32>"), s(t4x8), nil),
	ok("binary broadcast dynamic with 1", "graph.sub", s("tensor<?x8xf32>", "tensor<1x8xf32>"), s("tensor<?x8xf32>"), nil),
	ok("binary on integers", "graph.max", s("tensor<4xi32>", "tensor<4xi32>"), s("tensor<4xi32>"), nil),
	bad("binary element types", "graph.add", s(t4, "tensor<4xf16>"), s(t4), nil, "requires the same element type for all operands, but got 'f32' and 'f16'"),
	bad("binary not broadcastable", "graph.add", s(t4x8, "tensor<3x8xf32>"), s(t4x8), nil, "operands of types 'tensor<4x8xf32>' and 'tensor<3x8xf32>' are not broadcast-compatible"),
	bad("binary result shape", "graph.add", s("tensor<4x1xf32>", t8), s("tensor<4x1xf32>"), nil, "result type 'tensor<4x1xf32>' does not match the inferred type 'tensor<4x8xf32>'"),
	bad("binary result dynamic", "graph.add", s("tensor<?x8xf32>", t4x8), s("tensor<?x8xf32>"), nil, "result type 'tensor<?x8xf32>' does not match the inferred type 'tensor<4x8xf32>'"),
	bad("logaddexp is float-only", "graph.logaddexp", s("tensor<4xi32>", "tensor<4xi32>"), s("tensor<4xi32>"), nil, "operand #0 must be tensor of floating-point values, but got 'tensor<4xi32>'"),

	// Compare and select
	ok("cmp", "graph.cmp", s(t4x8, t8), s("tensor<4x8xi1>"), ir.Attrs("predicate", ir.StringAttr("le"))),
	bad("cmp result type", "graph.cmp", s(t4, t4), s(t4), ir.Attrs("predicate", ir.StringAttr("lt")), "result #0 must be tensor of i1 values, but got 'tensor<4xf32>'"),
	bad("cmp predicate", "graph.cmp", s(t4, t4), s("tensor<4xi1>"), ir.Attrs("predicate", ir.StringAttr("lte")), `attribute 'predicate' must be one of "eq", "ne", "lt", "le", "gt" or "ge", but got "lte"`),
	bad("cmp needs predicate", "graph.cmp", s(t4, t4), s("tensor<4xi1>"), nil, "requires attribute 'predicate'"),
	bad("cmp shapes", "graph.cmp", s(t4, t8), s("tensor<4xi1>"), ir.Attrs("predicate", ir.StringAttr("eq")), "operands of types 'tensor<4xf32>' and 'tensor<8xf32>' are not broadcast-compatible"),
	bad("cmp element types", "graph.cmp", s(t4, "tensor<4xi32>"), s("tensor<4xi1>"), ir.Attrs("predicate", ir.StringAttr("eq")), "requires the same element type for all operands, but got 'f32' and 'i32'"),
	ok("select", "graph.select", s("tensor<4x8xi1>", t4x8, "tensor<f32>"), s(t4x8), nil),
	ok("select broadcasts the condition", "graph.select", s("tensor<4x1xi1>", t8, t8), s(t4x8), nil),
	bad("select condition", "graph.select", s(t4, t4, t4), s(t4), nil, "operand #0 must be tensor of i1 values, but got 'tensor<4xf32>'"),
	bad("select value types", "graph.select", s("tensor<4xi1>", t4, "tensor<4xf16>"), s(t4), nil, "requires the same element type for the true and false values, but got 'f32' and 'f16'"),
	bad("select shapes", "graph.select", s("tensor<3xi1>", t4, t4), s(t4), nil, "operands of types 'tensor<3xi1>', 'tensor<4xf32>' and 'tensor<4xf32>' are not broadcast-compatible"),

	// Cast
	ok("cast", "graph.cast", s(t4x8), s("tensor<4x8xbf16>"), nil),
	ok("cast with dtype", "graph.cast", s(t4x8), s(t4x8u8), ir.Attrs("dtype", ir.TypeAttr{Type: ir.UI8Type})),
	bad("cast shape", "graph.cast", s(t8), s("tensor<4xbf16>"), nil, "requires the same shape for the operand and the result, but got 'tensor<8xf32>' and 'tensor<4xbf16>'"),
	bad("cast dtype", "graph.cast", s(t4), s("tensor<4xbf16>"), ir.Attrs("dtype", ir.TypeAttr{Type: ir.F16Type}), "attribute 'dtype' is 'f16', but the result element type is 'bf16'"),

	// Reductions
	ok("reduce", "graph.reduce_sum", s(t4x8), s(t4), ir.Attrs("axes", ir.IntArray(1))),
	ok("reduce negative axis", "graph.reduce_max", s(t4x8), s(t4), ir.Attrs("axes", ir.IntArray(-1))),
	ok("reduce keepdim", "graph.reduce_min", s(t4x8), s("tensor<4x1xf32>"), ir.Attrs("axes", ir.IntArray(1), "keepdim", ir.BoolAttr(true))),
	ok("reduce all", "graph.reduce_mean", s(t4x8), s("tensor<f32>"), ir.Attrs("axes", ir.IntArray(1, 0))),
	ok("reduce, dynamic kept dim", "graph.reduce_sum", s("tensor<?x8xf32>"), s("tensor<?xf32>"), ir.Attrs("axes", ir.IntArray(1))),
	bad("reduce no axes", "graph.reduce_sum", s(t4x8), s(t4x8), ir.Attrs("axes", ir.IntArray()), "attribute 'axes' must name at least one dimension"),
	bad("reduce axis range", "graph.reduce_sum", s(t4x8), s(t4), ir.Attrs("axes", ir.IntArray(2)), "axis 2 is out of range for rank 2"),
	bad("reduce negative axis range", "graph.reduce_sum", s(t4x8), s(t4), ir.Attrs("axes", ir.IntArray(-3)), "axis -3 is out of range for rank 2"),
	bad("reduce repeated axis", "graph.reduce_sum", s(t4x8), s(t4), ir.Attrs("axes", ir.IntArray(1, 1)), "axis 1 is repeated"),
	bad("reduce same dimension", "graph.reduce_sum", s(t4x8), s(t4), ir.Attrs("axes", ir.IntArray(1, -1)), "axes 1 and -1 refer to the same dimension"),
	bad("reduce dynamic dim", "graph.reduce_sum", s("tensor<4x?xf32>"), s(t4), ir.Attrs("axes", ir.IntArray(1)), "dimension 1 of 'tensor<4x?xf32>' is reduced, so it must be static"),
	bad("reduce keepdim result", "graph.reduce_sum", s(t4x8), s(t4), ir.Attrs("axes", ir.IntArray(1), "keepdim", ir.BoolAttr(true)), "result type 'tensor<4xf32>' does not match the inferred type 'tensor<4x1xf32>'"),
	bad("reduce_mean is float-only", "graph.reduce_mean", s("tensor<4xi32>"), s("tensor<i32>"), ir.Attrs("axes", ir.IntArray(0)), "operand #0 must be tensor of floating-point values, but got 'tensor<4xi32>'"),
	ok("logsumexp", "graph.logsumexp", s(t4x8), s(t4), nil),
	ok("logsumexp keepdim", "graph.logsumexp", s(t4x8), s("tensor<1x8xf32>"), ir.Attrs("axis", i64(0), "keepdim", ir.BoolAttr(true))),
	bad("logsumexp axis", "graph.logsumexp", s(t4x8), s(t4), ir.Attrs("axis", i64(2)), "axis 2 is out of range for rank 2"),
	bad("logsumexp dynamic", "graph.logsumexp", s("tensor<4x?xf32>"), s(t4), nil, "dimension 1 of 'tensor<4x?xf32>' is reduced, so it must be static"),

	// Normalisation
	ok("rmsnorm", "graph.rmsnorm", s("tensor<4x8xbf16>", "tensor<8xbf16>"), s("tensor<4x8xbf16>"), ir.Attrs("eps", f32(1e-5))),
	ok("rmsnorm dynamic rows", "graph.rmsnorm", s("tensor<?x8xf32>", t8), s("tensor<?x8xf32>"), nil),
	ok("rmsnorm axis 0", "graph.rmsnorm", s(t4x8, t4), s(t4x8), ir.Attrs("axis", i64(0))),
	ok("layernorm", "graph.layernorm", s(t4x8, t8, t8), s(t4x8), nil),
	bad("rmsnorm weight shape", "graph.rmsnorm", s(t4x8, t4), s(t4x8), nil, "weight must have shape [8] (dimension 1 of the input), but got 'tensor<4xf32>'"),
	bad("rmsnorm weight rank", "graph.rmsnorm", s(t4x8, t4x8), s(t4x8), nil, "weight must have shape [8] (dimension 1 of the input), but got 'tensor<4x8xf32>'"),
	bad("layernorm bias shape", "graph.layernorm", s(t4x8, t8, "tensor<1x8xf32>"), s(t4x8), nil, "bias must have shape [8] (dimension 1 of the input), but got 'tensor<1x8xf32>'"),
	bad("rmsnorm element types", "graph.rmsnorm", s(t4x8, "tensor<8xbf16>"), s(t4x8), nil, "requires the same element type for all operands, but got 'f32' and 'bf16'"),
	bad("rmsnorm eps", "graph.rmsnorm", s(t4x8, t8), s(t4x8), ir.Attrs("eps", f32(-1)), "attribute 'eps' must be finite and not negative, but got -1.0"),
	bad("rmsnorm axis", "graph.rmsnorm", s(t4x8, t8), s(t4x8), ir.Attrs("axis", i64(2)), "axis 2 is out of range for rank 2"),
	bad("rmsnorm dynamic dim", "graph.rmsnorm", s("tensor<4x?xf32>", t8), s("tensor<4x?xf32>"), nil, "dimension 1 of 'tensor<4x?xf32>' is reduced, so it must be static"),
	bad("rmsnorm integers", "graph.rmsnorm", s("tensor<4x8xi32>", t8), s(t4x8), nil, "operand #0 must be tensor of floating-point values, but got 'tensor<4x8xi32>'"),
	ok("softmax", "graph.softmax", s("tensor<?x8xf32>"), s("tensor<?x8xf32>"), nil),
	ok("log_softmax axis 0", "graph.log_softmax", s(t4x8), s(t4x8), ir.Attrs("axis", i64(0))),
	bad("softmax axis", "graph.softmax", s(t4x8), s(t4x8), ir.Attrs("axis", i64(-3)), "axis -3 is out of range for rank 2"),
	bad("softmax dynamic axis", "graph.log_softmax", s("tensor<4x?xf32>"), s("tensor<4x?xf32>"), nil, "dimension 1 of 'tensor<4x?xf32>' is reduced, so it must be static"),
	bad("softmax result", "graph.softmax", s(t4x8), s("tensor<4x8xf16>"), nil, "result type 'tensor<4x8xf16>' does not match the inferred type 'tensor<4x8xf32>'"),

	// Quantisation
	ok("quantize", "graph.quantize", s(t4x8), s(t4x8u8), ir.Attrs("scale", f32(0.5), "zero_point", i64(128))),
	ok("quantize f8", "graph.quantize", s(t4x8), s("tensor<4x8xf8E4M3FN>"), ir.Attrs("scale", f32(0.5))),
	ok("quantize dtype", "graph.quantize", s(t4x8), s(t4x8i8), ir.Attrs("dtype", ir.TypeAttr{Type: ir.I8Type})),
	ok("quantize per channel", "graph.quantize", s(t4x8, t8, "tensor<8xi32>"), s(t4x8i8), ir.Attrs("axis", i64(1))),
	ok("quantize per channel, default axis", "graph.quantize", s("tensor<4x?xf32>", t8, t8), s("tensor<4x?xi8>"), nil),
	bad("quantize result type", "graph.quantize", s(t4x8), s("tensor<4x8xi32>"), nil, "result #0 must be tensor of ui8, i8 or f8E4M3FN values, but got 'tensor<4x8xi32>'"),
	bad("quantize input type", "graph.quantize", s("tensor<4x8xi32>"), s(t4x8u8), nil, "operand #0 must be tensor of floating-point values, but got 'tensor<4x8xi32>'"),
	bad("quantize shape", "graph.quantize", s(t4x8), s("tensor<8x4xui8>"), nil, "requires the same shape for the operand and the result, but got 'tensor<4x8xf32>' and 'tensor<8x4xui8>'"),
	bad("quantize dtype", "graph.quantize", s(t4x8), s(t4x8u8), ir.Attrs("dtype", ir.TypeAttr{Type: ir.I8Type}), "attribute 'dtype' is 'i8', but the result element type is 'ui8'"),
	bad("quantize scale zero", "graph.quantize", s(t4x8), s(t4x8u8), ir.Attrs("scale", f32(0)), "attribute 'scale' must be positive and finite, but got 0.0"),
	bad("quantize scale negative", "graph.quantize", s(t4x8), s(t4x8u8), ir.Attrs("scale", f32(-0.5)), "attribute 'scale' must be positive and finite, but got -0.5"),
	bad("quantize scale inf", "graph.quantize", s(t4x8), s(t4x8u8), ir.Attrs("scale", ir.FloatAttr{Value: math.Inf(1), Type: ir.F32Type}), "attribute 'scale' must be positive and finite, but got inf"),
	bad("quantize zero point ui8", "graph.quantize", s(t4x8), s(t4x8u8), ir.Attrs("zero_point", i64(300)), "attribute 'zero_point' (300) is out of range [0, 255] of 'ui8'"),
	bad("quantize zero point i8", "graph.quantize", s(t4x8), s(t4x8i8), ir.Attrs("zero_point", i64(-129)), "attribute 'zero_point' (-129) is out of range [-128, 127] of 'i8'"),
	bad("quantize zero point f8", "graph.quantize", s(t4x8), s("tensor<4x8xf8E4M3FN>"), ir.Attrs("zero_point", i64(500)), "attribute 'zero_point' (500) is out of range [-448, 448] of 'f8E4M3FN'"),
	bad("quantize axis per tensor", "graph.quantize", s(t4x8), s(t4x8u8), ir.Attrs("axis", i64(1)), "attribute 'axis' is only valid with per-channel scales and zero points"),
	bad("quantize per channel with scale", "graph.quantize", s(t4x8, t8, t8), s(t4x8u8), ir.Attrs("scale", f32(0.5)), "attribute 'scale' cannot be combined with per-channel scales and zero points"),
	bad("quantize per channel with zero point", "graph.quantize", s(t4x8, t8, t8), s(t4x8u8), ir.Attrs("zero_point", i64(3)), "attribute 'zero_point' cannot be combined with per-channel scales and zero points"),
	bad("quantize per channel scales", "graph.quantize", s(t4x8, t4, t8), s(t4x8u8), nil, "operand 'scales' must have shape [8] (dimension 1 of the input), but got 'tensor<4xf32>'"),
	bad("quantize per channel zero points", "graph.quantize", s(t4x8, t8, t4), s(t4x8u8), nil, "operand 'zero_points' must have shape [8] (dimension 1 of the input), but got 'tensor<4xf32>'"),
	bad("quantize per channel axis", "graph.quantize", s(t4x8, t8, t8), s(t4x8u8), ir.Attrs("axis", i64(2)), "axis 2 is out of range for rank 2"),
	bad("quantize per channel scale type", "graph.quantize", s(t4x8, "tensor<8xi32>", t8), s(t4x8u8), nil, "operand #1 must be tensor of floating-point values, but got 'tensor<8xi32>'"),
	ok("dequantize", "graph.dequantize", s(t4x8u8), s(t4x8), ir.Attrs("scale", f32(0.5), "zero_point", i64(128))),
	ok("dequantize accumulators", "graph.dequantize", s("tensor<4x8xi32>"), s(t4x8), ir.Attrs("scale", f32(0.5), "zero_point", i64(-100000))),
	bad("dequantize result type", "graph.dequantize", s(t4x8u8), s("tensor<4x8xi32>"), nil, "result #0 must be tensor of floating-point values, but got 'tensor<4x8xi32>'"),
	bad("dequantize input type", "graph.dequantize", s(t4x8), s(t4x8), nil, "operand #0 must be tensor of i32, i8, ui8 or f8E4M3FN values, but got 'tensor<4x8xf32>'"),
	ok("dequantize per channel, no zero points", "graph.dequantize", s(t4x8i8, t8), s(t4x8), ir.Attrs("axis", i64(1))),
	ok("dequantize per channel", "graph.dequantize", s(t4x8i8, t8, "tensor<8xi32>"), s(t4x8), ir.Attrs("axis", i64(1))),
	bad("dequantize scales of the wrong extent", "graph.dequantize", s(t4x8i8, t4), s(t4x8), ir.Attrs("axis", i64(1)), "operand 'scales' must have shape [8] (dimension 1 of the input), but got 'tensor<4xf32>'"),
	bad("dequantize operand count", "graph.dequantize", s(t4x8i8, t8, "tensor<8xi32>", t8), s(t4x8), ir.Attrs("axis", i64(1)), "expected 1, 2 or 3 operands, but found 4"),
	bad("dequantize zero point", "graph.dequantize", s(t4x8i8), s(t4x8), ir.Attrs("zero_point", i64(128)), "attribute 'zero_point' (128) is out of range [-128, 127] of 'i8'"),
	ok("requantize", "graph.requantize", s("tensor<4x8xi32>"), s(t4x8i8), ir.Attrs("in_scale", f32(0.25), "scale", f32(0.5), "zero_point", i64(-3))),
	ok("requantize per channel", "graph.requantize", s("tensor<4x8xi32>", t8, "tensor<8xi32>", t8, t8), s(t4x8i8), nil),
	bad("requantize input type", "graph.requantize", s(t4x8), s(t4x8i8), nil, "operand #0 must be tensor of i32, i8 or ui8 values, but got 'tensor<4x8xf32>'"),
	bad("requantize in_zero_point", "graph.requantize", s(t4x8u8), s(t4x8i8), ir.Attrs("in_zero_point", i64(-1)), "attribute 'in_zero_point' (-1) is out of range [0, 255] of 'ui8'"),
	bad("requantize in_scale", "graph.requantize", s(t4x8u8), s(t4x8i8), ir.Attrs("in_scale", f32(0)), "attribute 'in_scale' must be positive and finite, but got 0.0"),
	bad("requantize per channel in_scale", "graph.requantize", s("tensor<4x8xi32>", t8, t8, t8, t8), s(t4x8i8), ir.Attrs("in_scale", f32(2)), "attribute 'in_scale' cannot be combined with per-channel scales and zero points"),
	bad("requantize per channel in_zero_points", "graph.requantize", s("tensor<4x8xi32>", t8, t4, t8, t8), s(t4x8i8), nil, "operand 'in_zero_points' must have shape [8] (dimension 1 of the input), but got 'tensor<4xf32>'"),

	// Shape
	ok("reshape", "graph.reshape", s(t4x8), s("tensor<32xf32>"), nil),
	ok("reshape dynamic", "graph.reshape", s("tensor<?x8xf32>"), s("tensor<?x2x4xf32>"), nil),
	bad("reshape count", "graph.reshape", s(t4x8), s("tensor<4x4xf32>"), nil, "operand type 'tensor<4x8xf32>' has 32 elements, but result type 'tensor<4x4xf32>' has 16"),
	bad("reshape element type", "graph.reshape", s(t4x8), s("tensor<32xf16>"), nil, "requires the same element type for the operand and the result, but got 'f32' and 'f16'"),
	ok("transpose", "graph.transpose", s("tensor<2x4x8xf32>"), s("tensor<8x2x4xf32>"), ir.Attrs("perm", ir.IntArray(2, 0, 1))),
	bad("transpose repeated", "graph.transpose", s(t4x8), s(t4x8), ir.Attrs("perm", ir.IntArray(0, 0)), "attribute 'perm' must be a permutation of [0, 2), but got [0, 0]"),
	bad("transpose length", "graph.transpose", s(t4x8), s(t4x8), ir.Attrs("perm", ir.IntArray(0)), "attribute 'perm' must be a permutation of [0, 2), but got [0]"),
	bad("transpose range", "graph.transpose", s(t4x8), s(t4x8), ir.Attrs("perm", ir.IntArray(0, 2)), "attribute 'perm' must be a permutation of [0, 2), but got [0, 2]"),
	bad("transpose result", "graph.transpose", s(t4x8), s(t4x8), ir.Attrs("perm", ir.IntArray(1, 0)), "result type 'tensor<4x8xf32>' does not match the inferred type 'tensor<8x4xf32>'"),
	ok("broadcast_to", "graph.broadcast_to", s(t8), s(t4x8), nil),
	ok("broadcast_to dynamic", "graph.broadcast_to", s("tensor<1x8xf32>"), s("tensor<?x8xf32>"), nil),
	bad("broadcast_to incompatible", "graph.broadcast_to", s("tensor<3xf32>"), s("tensor<4x4xf32>"), nil, "operand type 'tensor<3xf32>' cannot be broadcast to result type 'tensor<4x4xf32>'"),
	bad("broadcast_to rank", "graph.broadcast_to", s(t4x8), s(t8), nil, "operand type 'tensor<4x8xf32>' cannot be broadcast to result type 'tensor<8xf32>'"),
	bad("broadcast_to element type", "graph.broadcast_to", s(t8), s("tensor<4x8xf16>"), nil, "requires the same element type for the operand and the result, but got 'f32' and 'f16'"),
	ok("slice", "graph.slice", s(t4x8), s("tensor<4x4xf32>"), ir.Attrs("offsets", ir.IntArray(0, 4), "sizes", ir.IntArray(4, 4))),
	ok("slice dynamic", "graph.slice", s("tensor<?x8xf32>"), s("tensor<2x8xf32>"), ir.Attrs("offsets", ir.IntArray(1, 0), "sizes", ir.IntArray(2, 8))),
	bad("slice offsets length", "graph.slice", s(t4x8), s(t4), ir.Attrs("offsets", ir.IntArray(0), "sizes", ir.IntArray(4, 1)), "attribute 'offsets' must have one entry per dimension (2), but has 1"),
	bad("slice negative size", "graph.slice", s(t4x8), s(t4), ir.Attrs("offsets", ir.IntArray(0, 0), "sizes", ir.IntArray(-2, 1)), "attribute 'sizes' has negative entry -2 for dimension 0"),
	ok("slice whole dimensions", "graph.slice", s("tensor<?x8xf32>"), s("tensor<?x4xf32>"), ir.Attrs("offsets", ir.IntArray(0, 4), "sizes", ir.IntArray(-1, 4))),
	ok("slice whole static dimension", "graph.slice", s(t4x8), s("tensor<4x2xf32>"), ir.Attrs("offsets", ir.IntArray(0, 1), "sizes", ir.IntArray(-1, 2))),
	bad("slice whole with offset", "graph.slice", s("tensor<?x8xf32>"), s("tensor<?x4xf32>"), ir.Attrs("offsets", ir.IntArray(1, 4), "sizes", ir.IntArray(-1, 4)), "a size of -1 takes all of dimension 0 from offset 0 with stride 1, but its offset is 1 and its stride 1"),
	bad("slice whole with stride", "graph.slice", s("tensor<?x8xf32>"), s("tensor<?x4xf32>"), ir.Attrs("offsets", ir.IntArray(0, 0), "sizes", ir.IntArray(-1, 4), "strides", ir.IntArray(2, 2)), "a size of -1 takes all of dimension 0 from offset 0 with stride 1, but its offset is 0 and its stride 2"),
	bad("slice whole result", "graph.slice", s("tensor<?x8xf32>"), s("tensor<4x4xf32>"), ir.Attrs("offsets", ir.IntArray(0, 4), "sizes", ir.IntArray(-1, 4)), "result type 'tensor<4x4xf32>' does not match the inferred type 'tensor<?x4xf32>'"),
	bad("slice bounds", "graph.slice", s(t4x8), s("tensor<4x4xf32>"), ir.Attrs("offsets", ir.IntArray(0, 6), "sizes", ir.IntArray(4, 4)), "slice of dimension 1 (offset 6, size 4) exceeds its extent 8"),
	bad("slice result", "graph.slice", s(t4x8), s(t4x8), ir.Attrs("offsets", ir.IntArray(0, 0), "sizes", ir.IntArray(4, 4)), "result type 'tensor<4x8xf32>' does not match the inferred type 'tensor<4x4xf32>'"),
	ok("concat", "graph.concat", s(t4x8, "tensor<4x2xf32>"), s("tensor<4x10xf32>"), ir.Attrs("axis", i64(1))),
	ok("concat negative axis, dynamic", "graph.concat", s("tensor<?x8xf32>", t4x8, "tensor<1x8xf32>"), s("tensor<?x8xf32>"), ir.Attrs("axis", i64(-2))),
	ok("concat dynamic off the axis", "graph.concat", s("tensor<?x8xf32>", "tensor<4x2xf32>"), s("tensor<4x10xf32>"), ir.Attrs("axis", i64(1))),
	bad("concat no operands", "graph.concat", nil, s(t4), ir.Attrs("axis", i64(0)), "expects at least one operand"),
	bad("concat rank", "graph.concat", s(t4x8, t8), s(t4x8), ir.Attrs("axis", i64(0)), "requires operands of the same rank, but got 'tensor<4x8xf32>' and 'tensor<8xf32>'"),
	bad("concat element types", "graph.concat", s(t4x8, "tensor<4x8xf16>"), s("tensor<8x8xf32>"), ir.Attrs("axis", i64(0)), "requires the same element type for all operands, but got 'f32' and 'f16'"),
	bad("concat other dims", "graph.concat", s(t4x8, "tensor<3x2xf32>"), s("tensor<4x10xf32>"), ir.Attrs("axis", i64(1)), "operand #1 type 'tensor<3x2xf32>' differs from 'tensor<4x8xf32>' in dimension 0, which is not the concatenation axis"),
	bad("concat axis", "graph.concat", s(t4x8, t4x8), s(t4x8), ir.Attrs("axis", i64(2)), "axis 2 is out of range for rank 2"),
	bad("concat extent overflow", "graph.concat", s("tensor<4611686018427387904xi8>", "tensor<4611686018427387904xi8>"), s("tensor<?xi8>"), ir.Attrs("axis", i64(0)), "the concatenated extent of dimension 0 overflows int64"),
	bad("concat needs axis", "graph.concat", s(t4x8, t4x8), s(t4x8), nil, "requires attribute 'axis'"),
	bad("concat result", "graph.concat", s(t4x8, t4x8), s(t4x8), ir.Attrs("axis", i64(0)), "result type 'tensor<4x8xf32>' does not match the inferred type 'tensor<8x8xf32>'"),

	// Contraction
	ok("matmul", "graph.matmul", s(t4x8, "tensor<8x16xf32>"), s("tensor<4x16xf32>"), nil),
	ok("matmul transpose_b", "graph.matmul", s("tensor<4x16xbf16>", "tensor<8x16xbf16>"), s("tensor<4x8xbf16>"), ir.Attrs("transpose_b", ir.BoolAttr(true))),
	ok("matmul batched", "graph.matmul", s("tensor<2x4x16xf32>", "tensor<16x8xf32>"), s("tensor<2x4x8xf32>"), nil),
	ok("matmul batch broadcast", "graph.matmul", s("tensor<2x1x4x16xf32>", "tensor<3x16x8xf32>"), s("tensor<2x3x4x8xf32>"), nil),
	ok("matmul dynamic rows", "graph.matmul", s("tensor<?x16xf32>", "tensor<16x8xf32>"), s("tensor<?x8xf32>"), nil),
	bad("matmul rank", "graph.matmul", s(t4, "tensor<4x8xf32>"), s(t8), nil, "expects operands of rank 2 or more, but got 'tensor<4xf32>'"),
	bad("matmul inner dims", "graph.matmul", s(t4x8, "tensor<7x16xf32>"), s("tensor<4x16xf32>"), nil, "contraction dimensions differ: 8 in 'tensor<4x8xf32>' and 7 in 'tensor<7x16xf32>'"),
	bad("matmul transpose_b inner dims", "graph.matmul", s(t4x8, "tensor<16x7xf32>"), s("tensor<4x16xf32>"), ir.Attrs("transpose_b", ir.BoolAttr(true)), "contraction dimensions differ: 8 in 'tensor<4x8xf32>' and 7 in 'tensor<16x7xf32>'"),
	bad("matmul dynamic K", "graph.matmul", s("tensor<4x?xf32>", "tensor<8x16xf32>"), s("tensor<4x16xf32>"), nil, "dimension 1 of 'tensor<4x?xf32>' is reduced, so it must be static"),
	bad("matmul dynamic K on the right", "graph.matmul", s(t4x8, "tensor<?x16xf32>"), s("tensor<4x16xf32>"), nil, "dimension 0 of 'tensor<?x16xf32>' is reduced, so it must be static"),
	bad("matmul batch", "graph.matmul", s("tensor<2x4x8xf32>", "tensor<3x8x4xf32>"), s("tensor<2x4x4xf32>"), nil, "batch dimensions of 'tensor<2x4x8xf32>' and 'tensor<3x8x4xf32>' are not broadcast-compatible"),
	bad("matmul element types", "graph.matmul", s(t4x8, "tensor<8x4xf16>"), s("tensor<4x4xf32>"), nil, "requires the same element type for all operands, but got 'f32' and 'f16'"),
	bad("matmul result", "graph.matmul", s(t4x8, "tensor<8x16xf32>"), s("tensor<4x8xf32>"), nil, "result type 'tensor<4x8xf32>' does not match the inferred type 'tensor<4x16xf32>'"),

	// Constants
	ok("constant splat", "graph.constant", nil, s(t4), ir.Attrs("value", dense(t4, 0.5))),
	ok("constant", "graph.constant", nil, s("tensor<2xi8>"), ir.Attrs("value", dense("tensor<2xi8>", -128, 127))),
	bad("constant type", "graph.constant", nil, s("tensor<4xf16>"), ir.Attrs("value", dense(t4, 0.5)), "result type 'tensor<4xf16>' does not match the inferred type 'tensor<4xf32>'"),
	bad("constant count", "graph.constant", nil, s(t4), ir.Attrs("value", dense(t4, 1, 2, 3)), "attribute 'value' has 3 elements, but its type 'tensor<4xf32>' has 4"),
	bad("constant dynamic", "graph.constant", nil, s("tensor<?xf32>"), ir.Attrs("value", dense("tensor<?xf32>", 1)), "attribute 'value' must have a static tensor type, but got 'tensor<?xf32>'"),
	bad("constant integer range", "graph.constant", nil, s("tensor<2xi8>"), ir.Attrs("value", dense("tensor<2xi8>", 1, 300)), "attribute 'value' element 300 is out of range [-128, 127] of 'i8'"),
	bad("constant integer value", "graph.constant", nil, s("tensor<i32>"), ir.Attrs("value", dense("tensor<i32>", 1.5)), "attribute 'value' element 1.5 is not an integer, as 'i32' requires"),
	bad("constant size", "graph.constant", nil, s(t4), ir.Attrs("value", dense("tensor<4611686018427387904x4xf32>", 0)), "attribute 'value': type tensor<4611686018427387904x4xf32> has more elements than fit in int64"),
	bad("constant needs value", "graph.constant", nil, s(t4), nil, "requires attribute 'value'"),
}

func dense(t string, values ...float64) ir.DenseAttr {
	return ir.DenseAttr{Type: ty(t).(ir.ShapedType), Values: values}
}

func TestVerify(t *testing.T) {
	for _, c := range verifyCases {
		t.Run(c.name, func(t *testing.T) {
			tf := newTestFunc(tys(c.in...)...)
			tf.add(ir.NewOperation(c.op, ir.Location{}, tf.fn.Args(), tys(c.out...), c.attrs, 0))
			msgs := tf.verify()
			if c.want == "" {
				require.Empty(t, msgs)
				return
			}
			require.Equal(t, []string{c.message()}, msgs)
		})
	}
}

// Ops with regions where the declaration says none, and the reverse.
func TestVerifyRegionCount(t *testing.T) {
	tf := newTestFunc(ty(t4))
	tf.add(ir.NewOperation(OpExp, ir.Location{}, tf.fn.Args(), tys(t4), nil, 1))
	require.Equal(t, []string{"'graph.exp' op expected 0 regions, but found 1"}, tf.verify())

	tf = newTestFunc(ty(t4))
	tf.add(ir.NewOperation(OpFused, ir.Location{}, tf.fn.Args(), tys(t4), ir.Attrs("kind", ir.StringAttr("x")), 0))
	require.Equal(t, []string{"'graph.fused' op expected 1 region, but found 0"}, tf.verify())
}

// The declaration checks run on their own too: a builder or a pass calls
// OpDef.Verify without the generic verifier, and then an operand may be
// null.
func TestVerifyDetached(t *testing.T) {
	op := ir.NewOperation(OpExp, ir.Location{}, []*ir.Value{nil}, tys(t4), nil, 0)
	require.EqualError(t, op.Def().Verify(op), "error: 'graph.exp' op operand #0 is null")

	x := ir.NewBlock(ty(t4)).Args[0]
	op = ir.NewOperation(OpYield, ir.Location{}, []*ir.Value{x}, tys(t4), nil, 0)
	require.EqualError(t, op.Def().Verify(op), "error: 'graph.yield' op expected 0 results, but found 1")
}
