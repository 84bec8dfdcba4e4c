// Package defs declares the ops of the graph dialect as data, one
// ods.OpDecl per op. odsgen turns Dialect into dialects/graph/gen_ops.go
// and docs/dialects/graph.md; the rules no declaration can state live in
// the hand-written files of package graph, under the class names below.
//
// The few helper functions (unary, binary, ...) play the part of ODS base
// classes: they fill in what every op of a group shares.
package defs

import (
	"github.com/tensorforge/tensorforge/dialects/ods"
	"github.com/tensorforge/tensorforge/ir"
)

// Dialect is the graph dialect.
var Dialect = ods.DialectDecl{
	Name:    "graph",
	Summary: "Tensor-level ops of a model graph, as users write them",
	Description: `The graph dialect is what users write: whole-tensor ops on ` + "`tensor<...>`" + ` values,
with NumPy broadcasting for element-wise binary ops and a function type that states the
result. Extents may be dynamic (` + "`?`" + `) in any dimension that is not reduced.

f16, bf16 and f8 values are computed in f32 and rounded to nearest even when stored.
Passes lower the dialect to the loop dialect; the fusion pass groups ops into
` + "`graph.fused`" + ` regions first.`,
	Classes: classes,
	Ops:     ops,
}

var classes = []ods.ClassDecl{
	{Name: "Unary", Infers: true, Doc: "The result has the operand's type."},
	{Name: "Clamp", Infers: true, Doc: "The result has the operand's type; `min` must not be greater than `max`."},
	{Name: "BinaryBroadcast", Infers: true, Doc: `Both operands have the same element type. Their shapes broadcast as NumPy's do:
aligned from the last dimension, each pair of extents must be equal or one of them 1, and a
missing leading dimension counts as 1. A ` + "`?`" + ` broadcasts with anything: with a static extent n > 1
it gives n, otherwise ` + "`?`" + `. The result has the broadcast shape and the operands' element type.`},
	{Name: "Compare", Infers: true, Doc: "As `BinaryBroadcast`, but the result element type is `i1`."},
	{Name: "Select", Infers: true, Doc: `The condition is ` + "`i1`" + `; both values have the same element type. The three
shapes broadcast together; the result has the broadcast shape and the values' element type.`},
	{Name: "Cast", Doc: "The result has the operand's shape. `dtype`, when given, equals the result element type."},
	{Name: "Reduce", Infers: true, Doc: `` + "`axes`" + ` names at least one dimension; each axis is in [-rank, rank), negative
axes count from the end, and no dimension is named twice. The reduced dimensions must be static.
The result drops the reduced dimensions, or keeps them with extent 1 when ` + "`keepdim`" + ` is true.`},
	{Name: "LogSumExp", Infers: true, Doc: "As `Reduce`, for the single dimension `axis`."},
	{Name: "Normalization", Infers: true, Doc: `` + "`axis`" + ` is in [-rank, rank) and names a static dimension of the input.
The weight (and bias) are 1-D tensors of that dimension's extent, with the input's element type.
` + "`eps`" + ` is finite and not negative. The result has the input's type.`},
	{Name: "Softmax", Infers: true, Doc: "`axis` is in [-rank, rank) and names a static dimension. The result has the input's type."},
	{Name: "Quantize", Doc: quantDoc},
	{Name: "Dequantize", Doc: "As `Quantize`, with the quantised type on the operand and a float result; per channel, the zero points may be left out (all 0)."},
	{Name: "Requantize", Doc: `As ` + "`Quantize`" + `, for both the input parameters (` + "`in_scale`, `in_zero_point`" + `, or the
` + "`in_scales`, `in_zero_points`" + ` operands) and the output ones.`},
	{Name: "Reshape", Doc: "The result has the operand's element type and, when both shapes are static, the same element count."},
	{Name: "Transpose", Infers: true, Doc: "`perm` is a permutation of [0, rank); result dimension i is operand dimension `perm[i]`."},
	{Name: "BroadcastTo", Doc: `The result has the operand's element type, and the operand's shape broadcasts
to the result shape (as ` + "`BinaryBroadcast`" + ` combines them, giving the result shape).`},
	{Name: "Slice", Infers: true, Doc: `` + "`offsets`" + ` and ` + "`sizes`" + ` (and ` + "`strides`" + `, when given) have one entry per
dimension, none negative (strides positive) but a size of -1, which takes the whole dimension (offset 0,
stride 1; the one way to keep a ` + "`?`" + ` dimension), and each slice lies inside its static dimension: its
last index, ` + "`offsets[d] + (sizes[d] - 1) * strides[d]`" + `, is below the extent. The result shape is
` + "`sizes`" + `, with the operand's extent where a size is -1.`},
	{Name: "Roll", Infers: true, Doc: `The operand has rank 1 or more and a static last dimension n. The result has the
operand's type.`},
	{Name: "IndexCopy", Doc: `The destination is an argument of the enclosing function (or of the ` + "`graph.fused`" + ` body it is in)
with no other use, so that writing it in place is the only way the function observes it. ` + "`axis`" + ` is in
[-rank, rank). The index tensor is 1-D with the source's extent along the axis; the source has the
destination's rank and element type and its extents in every other dimension.`},
	{Name: "Gather", Infers: true, Doc: `The data has rank 1 or more and ` + "`axis`" + ` is in [-rank, rank). The index
tensor (i32 or i64) has the data's rank; its extents equal the data's in every dimension but
` + "`axis`" + `, where it may have any extent (commonly 1); ` + "`?`" + ` agrees with any extent. The result has the
index tensor's shape and the data's element type.`},
	{Name: "Concat", Infers: true, Doc: `At least one operand; all have the same element type and rank. ` + "`axis`" + ` is in
[-rank, rank). Extents agree except along ` + "`axis`" + ` (` + "`?`" + ` agrees with anything); the result extent
along ` + "`axis`" + ` is their sum, ` + "`?`" + ` if any is ` + "`?`" + `.`},
	{Name: "MatMul", Infers: true, Doc: `Both operands have rank 2 or more and the same element type. The last dimension
of ` + "`lhs`" + ` (K) equals the second-to-last of ` + "`rhs`" + `, or its last when ` + "`transpose_b`" + ` is set; K is reduced,
so it must be static. Leading (batch) dimensions broadcast. The result is ` + "`batch x M x N`" + `.`},
	{Name: "Constant", Infers: true, Doc: `` + "`value`" + ` has a static tensor type, which is the result type, and holds one
element (a splat) or one per element of that type; integer elements are integral and in range.`},
	{Name: "Fused", Doc: `The body is one block whose arguments have the operands' types, ending in
` + "`graph.yield`" + ` whose operand types are the result types. The op is isolated from above: the body
uses only its arguments and values it defines.`},
	{Name: "Yield", Doc: "The parent op is `graph.fused`, which checks the yielded types."},
}

const quantDoc = `The result has the operand's shape; ` + "`dtype`" + `, when given, equals the quantised
element type. Per tensor (one operand), ` + "`scale`" + ` is positive and finite, ` + "`zero_point`" + ` lies in the
quantised type's range (ui8 [0, 255], i8 [-128, 127], f8E4M3FN [-448, 448], i32 its own), and ` + "`axis`" + `
is absent. Per channel (` + "`scales`" + ` and ` + "`zero_points`" + ` operands), those attributes are absent, ` + "`axis`" + ` is
in [-rank, rank), and both operands are 1-D with the extent of that dimension.`

func input(c ods.Constraint) []ods.OperandDecl {
	return []ods.OperandDecl{{Name: "input", Constraint: c}}
}

func output(c ods.Constraint) []ods.ResultDecl {
	return []ods.ResultDecl{{Name: "output", Constraint: c}}
}

// unary declares an element-wise op of one operand.
func unary(name, summary, description string, c ods.Constraint) ods.OpDecl {
	return ods.OpDecl{
		Name: name, Summary: summary, Description: description,
		Example:  "%y = graph." + name + " %x : tensor<4x8xf32>",
		Class:    "Unary",
		Traits:   ir.Pure | ir.Elementwise,
		Operands: input(c),
		Results:  output(c),
	}
}

// binary declares a NumPy-broadcasting element-wise op of two operands.
func binary(name, summary, description string, c ods.Constraint, traits ir.Trait) ods.OpDecl {
	return ods.OpDecl{
		Name: name, Summary: summary, Description: description,
		Example:  "%z = graph." + name + " %x, %y : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>",
		Class:    "BinaryBroadcast",
		Traits:   ir.Pure | ir.Elementwise | traits,
		Operands: []ods.OperandDecl{{Name: "lhs", Constraint: c}, {Name: "rhs", Constraint: c}},
		Results:  output(c),
	}
}

func reduce(name, summary, description string, c ods.Constraint) ods.OpDecl {
	return ods.OpDecl{
		Name: name, Summary: summary, Description: description,
		Example:  "%s = graph." + name + " %x {axes = [1]} : (tensor<4x8xf32>) -> tensor<4xf32>",
		Class:    "Reduce",
		Traits:   ir.Pure | ir.Reduction,
		Operands: input(c),
		Results:  output(c),
		Attrs: []ods.AttrDecl{
			{Name: "axes", Kind: ods.IntArrayKind, Doc: "the dimensions to reduce; negative ones count from the end"},
			keepdim,
		},
	}
}

var keepdim = ods.AttrDecl{Name: "keepdim", Kind: ods.BoolKind, Default: false,
	Doc: "keep reduced dimensions with extent 1"}

var axisLast = ods.AttrDecl{Name: "axis", Kind: ods.IntKind, Default: int64(-1),
	Doc: "the normalised dimension; negative counts from the end"}

var eps = ods.AttrDecl{Name: "eps", Kind: ods.FloatKind, Default: 1e-05,
	Doc: "added to the variance (mean square) before the square root"}

var dtype = ods.AttrDecl{Name: "dtype", Kind: ods.TypeKind, Optional: true,
	Doc: "the result element type, stated again"}

// quantAttrs are the parameters of one side of a quantisation.
func quantAttrs(prefix, side string) []ods.AttrDecl {
	return []ods.AttrDecl{
		{Name: prefix + "scale", Kind: ods.FloatKind, Default: 1.0, Doc: "the " + side + " scale (per tensor)"},
		{Name: prefix + "zero_point", Kind: ods.IntKind, Default: int64(0), Doc: "the " + side + " zero point (per tensor)"},
	}
}

var quantAxis = ods.AttrDecl{Name: "axis", Kind: ods.IntKind, Default: int64(-1),
	Doc: "the channel dimension (per channel only)"}

// omissibleZeroPoints lets the zero points of a side's per-channel
// operands be left out (all 0).
func omissibleZeroPoints(ds []ods.OperandDecl) []ods.OperandDecl {
	ds[len(ds)-1].Omissible = true
	ds[len(ds)-1].Doc += " (0 when left out)"
	return ds
}

func channelOperands(prefix, side string) []ods.OperandDecl {
	return []ods.OperandDecl{
		{Name: prefix + "scales", Constraint: ods.FloatTensor, Optional: true, Doc: "per-channel " + side + " scales"},
		{Name: prefix + "zero_points", Constraint: ods.NumericTensor, Optional: true, Doc: "per-channel " + side + " zero points"},
	}
}

var ops = []ods.OpDecl{
	// ---------------------------------------------------------------------
	// Unary
	unary("neg", "element-wise negation", "`y = -x`.", ods.NumericTensor),
	unary("abs", "element-wise absolute value", "`y = |x|`.", ods.NumericTensor),
	unary("exp", "element-wise exponential", "`y = e^x`.", ods.FloatTensor),
	unary("exp2", "element-wise base-2 exponential", "`y = 2^x`.", ods.FloatTensor),
	unary("log", "element-wise natural logarithm", "`y = ln(x)`; negative x gives NaN, 0 gives -inf.", ods.FloatTensor),
	unary("log2", "element-wise base-2 logarithm", "`y = log2(x)`.", ods.FloatTensor),
	unary("log1p", "element-wise ln(1 + x)", "`y = ln(1 + x)`, accurate for x near 0.", ods.FloatTensor),
	unary("expm1", "element-wise e^x - 1", "`y = e^x - 1`, accurate for x near 0.", ods.FloatTensor),
	unary("sqrt", "element-wise square root", "`y = sqrt(x)`.", ods.FloatTensor),
	unary("rsqrt", "element-wise reciprocal square root", "`y = 1 / sqrt(x)`.", ods.FloatTensor),
	unary("reciprocal", "element-wise reciprocal", "`y = 1 / x`.", ods.FloatTensor),
	unary("tanh", "element-wise hyperbolic tangent", "`y = tanh(x)`.", ods.FloatTensor),
	unary("sigmoid", "element-wise logistic sigmoid", "`y = 1 / (1 + e^-x)`.", ods.FloatTensor),
	unary("silu", "element-wise SiLU (swish)", "`y = x * sigmoid(x)`.", ods.FloatTensor),
	func() ods.OpDecl {
		o := unary("gelu", "element-wise GELU",
			"`y = x * Phi(x)` with the normal CDF Phi (`approximate = \"none\"`), or its tanh approximation "+
				"`0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))` (`approximate = \"tanh\"`).",
			ods.FloatTensor)
		o.Example = `%y = graph.gelu %x {approximate = "tanh"} : tensor<4x8xf32>`
		o.Attrs = []ods.AttrDecl{{Name: "approximate", Kind: ods.StringKind, Default: "none",
			Enum: []string{"none", "tanh"}, Doc: "the exact form or the tanh approximation"}}
		return o
	}(),
	unary("relu", "element-wise rectified linear unit", "`y = max(x, 0)`.", ods.NumericTensor),
	unary("sin", "element-wise sine", "`y = sin(x)`.", ods.FloatTensor),
	unary("cos", "element-wise cosine", "`y = cos(x)`.", ods.FloatTensor),
	unary("floor", "element-wise floor", "Rounds toward -inf.", ods.FloatTensor),
	unary("ceil", "element-wise ceiling", "Rounds toward +inf.", ods.FloatTensor),
	unary("round", "element-wise rounding, half to even", "Rounds to the nearest integer; ties go to the even one (`round(2.5) = 2`).", ods.FloatTensor),

	// ---------------------------------------------------------------------
	// Binary
	binary("add", "element-wise addition", "`z = x + y`.", ods.NumericTensor, ir.Commutative),
	binary("sub", "element-wise subtraction", "`z = x - y`.", ods.NumericTensor, 0),
	binary("mul", "element-wise multiplication", "`z = x * y`.", ods.NumericTensor, ir.Commutative),
	binary("div", "element-wise division", "`z = x / y`; integer division truncates toward zero.", ods.NumericTensor, 0),
	binary("max", "element-wise maximum", "`z = max(x, y)`; NaN in either gives NaN.", ods.NumericTensor, ir.Commutative),
	binary("min", "element-wise minimum", "`z = min(x, y)`; NaN in either gives NaN.", ods.NumericTensor, ir.Commutative),
	binary("pow", "element-wise power", "`z = x^y`.", ods.NumericTensor, 0),
	func() ods.OpDecl {
		o := binary("logaddexp", "element-wise ln(e^x + e^y)",
			"`z = ln(e^x + e^y)` for all inputs: equal infinities give that infinity, NaN in gives NaN, "+
				"and finite inputs never overflow.", ods.FloatTensor, ir.Commutative)
		o.GoName = "LogAddExp"
		return o
	}(),
	func() ods.OpDecl {
		o := binary("logaddexp2", "element-wise log2(2^x + 2^y)",
			"`z = log2(2^x + 2^y)`, with the guarantees of `graph.logaddexp`.", ods.FloatTensor, ir.Commutative)
		o.GoName = "LogAddExp2"
		return o
	}(),

	// ---------------------------------------------------------------------
	// Compare and select
	{
		Name: "cmp", Summary: "element-wise comparison",
		Description: "Compares with NumPy broadcasting and gives `i1`. Comparisons with NaN are false, except `ne`, which is true.",
		Example:     `%c = graph.cmp %x, %y {predicate = "lt"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>`,
		Class:       "Compare",
		Traits:      ir.Pure | ir.Elementwise,
		Operands:    []ods.OperandDecl{{Name: "lhs", Constraint: ods.NumericTensor}, {Name: "rhs", Constraint: ods.NumericTensor}},
		Results:     output(ods.BoolTensor),
		Attrs: []ods.AttrDecl{{Name: "predicate", Kind: ods.StringKind,
			Enum: []string{"eq", "ne", "lt", "le", "gt", "ge"}, Doc: "`lhs <predicate> rhs`"}},
	},
	{
		Name: "select", Summary: "element-wise choice",
		Description: "`z = c ? a : b`, with the three operands broadcast together.",
		Example:     "%z = graph.select %c, %a, %b : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>",
		Class:       "Select",
		Traits:      ir.Pure | ir.Elementwise,
		Operands: []ods.OperandDecl{
			{Name: "condition", Constraint: ods.BoolTensor},
			{Name: "true_value", Constraint: ods.AnyTensor},
			{Name: "false_value", Constraint: ods.AnyTensor},
		},
		Results: output(ods.AnyTensor),
	},
	{
		Name: "clamp", Summary: "element-wise clamp to [min, max]",
		Description: "`y = min(max(x, min), max)`; NaN stays NaN.",
		Example:     "%y = graph.clamp %x {max = 6.0 : f32, min = 0.0 : f32} : tensor<4x8xf32>",
		Class:       "Clamp",
		Traits:      ir.Pure | ir.Elementwise,
		Operands:    input(ods.NumericTensor),
		Results:     output(ods.NumericTensor),
		Attrs: []ods.AttrDecl{
			{Name: "min", Kind: ods.FloatKind, Doc: "the lower bound"},
			{Name: "max", Kind: ods.FloatKind, Doc: "the upper bound"},
		},
	},

	// ---------------------------------------------------------------------
	// Conversion
	{
		Name: "cast", Summary: "element type conversion",
		Description: "Converts every element to the result element type. Float to float rounds to nearest even. " +
			"Float to integer is *unchecked*: out-of-range values and NaN give whatever the target gives, " +
			"wrapping included; `legalize-numerics` makes it saturating.",
		Example:  "%y = graph.cast %x : (tensor<4x8xf32>) -> tensor<4x8xbf16>",
		Class:    "Cast",
		Traits:   ir.Pure | ir.Elementwise,
		Operands: input(ods.AnyTensor),
		Results:  output(ods.AnyTensor),
		Attrs:    []ods.AttrDecl{dtype},
	},

	// ---------------------------------------------------------------------
	// Reductions
	reduce("reduce_sum", "sum along axes", "Adds the elements along `axes`.", ods.NumericTensor),
	reduce("reduce_max", "maximum along axes", "The largest element along `axes`; NaN if any is NaN.", ods.NumericTensor),
	reduce("reduce_min", "minimum along axes", "The smallest element along `axes`; NaN if any is NaN.", ods.NumericTensor),
	reduce("reduce_mean", "mean along axes", "The arithmetic mean along `axes`.", ods.FloatTensor),

	// ---------------------------------------------------------------------
	// Normalisation
	{
		Name: "rmsnorm", GoName: "RMSNorm", Summary: "root-mean-square normalisation",
		Description: "`y = x / sqrt(mean(x^2, axis) + eps) * w`, with `w` applied along `axis`.",
		Example:     "%n = graph.rmsnorm %x, %w {eps = 1.0e-05 : f32} : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>",
		Class:       "Normalization",
		Traits:      ir.Pure,
		Operands:    []ods.OperandDecl{{Name: "input", Constraint: ods.FloatTensor}, {Name: "weight", Constraint: ods.FloatTensor}},
		Results:     output(ods.FloatTensor),
		Attrs:       []ods.AttrDecl{eps, axisLast},
	},
	{
		Name: "layernorm", GoName: "LayerNorm", Summary: "layer normalisation",
		Description: "`y = (x - mean(x, axis)) / sqrt(var(x, axis) + eps) * w + b`, with `w` and `b` applied along `axis`.",
		Example:     "%n = graph.layernorm %x, %w, %b : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>",
		Class:       "Normalization",
		Traits:      ir.Pure,
		Operands: []ods.OperandDecl{
			{Name: "input", Constraint: ods.FloatTensor},
			{Name: "weight", Constraint: ods.FloatTensor},
			{Name: "bias", Constraint: ods.FloatTensor},
		},
		Results: output(ods.FloatTensor),
		Attrs:   []ods.AttrDecl{eps, axisLast},
	},
	{
		Name: "softmax", Summary: "softmax along an axis",
		Description: "`y = e^x / sum(e^x, axis)`, computed so that it never overflows (the row maximum is subtracted first).",
		Example:     "%p = graph.softmax %x {axis = -1} : tensor<4x8xf32>",
		Class:       "Softmax",
		Traits:      ir.Pure,
		Operands:    input(ods.FloatTensor),
		Results:     output(ods.FloatTensor),
		Attrs:       []ods.AttrDecl{axisLast},
	},
	{
		Name: "log_softmax", Summary: "logarithm of softmax along an axis",
		Description: "`y = x - logsumexp(x, axis)`; it never overflows.",
		Example:     "%p = graph.log_softmax %x : tensor<4x8xf32>",
		Class:       "Softmax",
		Traits:      ir.Pure,
		Operands:    input(ods.FloatTensor),
		Results:     output(ods.FloatTensor),
		Attrs:       []ods.AttrDecl{axisLast},
	},
	{
		Name: "logsumexp", GoName: "LogSumExp", Summary: "ln(sum(e^x)) along an axis",
		Description: "`y = ln(sum(e^x, axis))`; it never overflows, and a row of all -inf gives -inf.",
		Example:     "%l = graph.logsumexp %x {axis = -1} : (tensor<4x8xf32>) -> tensor<4xf32>",
		Class:       "LogSumExp",
		Traits:      ir.Pure | ir.Reduction,
		Operands:    input(ods.FloatTensor),
		Results:     output(ods.FloatTensor),
		Attrs: []ods.AttrDecl{
			{Name: "axis", Kind: ods.IntKind, Default: int64(-1), Doc: "the reduced dimension; negative counts from the end"},
			keepdim,
		},
	},

	// ---------------------------------------------------------------------
	// Quantisation
	{
		Name: "quantize", Summary: "float to quantised values",
		Description: "`q = saturate(round_half_even(x / scale) + zero_point)` to the result type's range " +
			"(ui8 [0, 255], i8 [-128, 127], f8E4M3FN [-448, 448]); NaN maps to `zero_point` (to NaN for f8). " +
			"Per channel, `scales` and `zero_points` give the parameters of each index along `axis`.",
		Example:  "%q = graph.quantize %x {scale = 0.5 : f32, zero_point = 128} : (tensor<4x8xf32>) -> tensor<4x8xui8>",
		Class:    "Quantize",
		Traits:   ir.Pure,
		Operands: append(input(ods.FloatTensor), channelOperands("", "output")...),
		Results:  output(ods.QuantizedTensor),
		Attrs:    append(quantAttrs("", "output"), quantAxis, dtype),
	},
	{
		Name: "dequantize", Summary: "quantised values to float",
		Description: "`x = (q - zero_point) * scale`. Per channel, `scales` and `zero_points` give the " +
			"parameters of each index along `axis`; without `zero_points` (`graph.dequantize %q, %scales " +
			"{axis = 1}`) every zero point is 0, as for symmetric quantisation.",
		Example:  "%x = graph.dequantize %q {scale = 0.5 : f32, zero_point = 128} : (tensor<4x8xui8>) -> tensor<4x8xf32>",
		Class:    "Dequantize",
		Traits:   ir.Pure,
		Operands: append(input(ods.DequantizableTensor), omissibleZeroPoints(channelOperands("", "input"))...),
		Results:  output(ods.FloatTensor),
		Attrs:    append(quantAttrs("", "input"), quantAxis, dtype),
	},
	{
		Name: "requantize", Summary: "quantised values to other quantisation parameters",
		Description: "`quantize(dequantize(q))` with the same saturation as `graph.quantize`: the input " +
			"parameters are `in_scale` and `in_zero_point`, the output ones `scale` and `zero_point` (per " +
			"channel, the four tensor operands). It reads i32 accumulators as well as i8 and ui8 values.",
		Example: "%r = graph.requantize %q {in_scale = 0.25 : f32, scale = 0.5 : f32, zero_point = -3} : " +
			"(tensor<4x8xi32>) -> tensor<4x8xi8>",
		Class:  "Requantize",
		Traits: ir.Pure,
		Operands: append(append(input(ods.RequantizableTensor),
			channelOperands("in_", "input")...), channelOperands("", "output")...),
		Results: output(ods.QuantizedTensor),
		Attrs:   append(append(quantAttrs("in_", "input"), quantAttrs("", "output")...), quantAxis, dtype),
	},

	// ---------------------------------------------------------------------
	// Shape
	{
		Name: "reshape", Summary: "the same elements in another shape",
		Description: "Reinterprets the elements, in row-major order, with the result shape.",
		Example:     "%y = graph.reshape %x : (tensor<4x8xf32>) -> tensor<32xf32>",
		Class:       "Reshape",
		Traits:      ir.Pure,
		Operands:    input(ods.AnyTensor),
		Results:     output(ods.AnyTensor),
	},
	{
		Name: "transpose", Summary: "permutation of dimensions",
		Description: "Result dimension i is operand dimension `perm[i]`.",
		Example:     "%y = graph.transpose %x {perm = [1, 0]} : (tensor<4x8xf32>) -> tensor<8x4xf32>",
		Class:       "Transpose",
		Traits:      ir.Pure,
		Operands:    input(ods.AnyTensor),
		Results:     output(ods.AnyTensor),
		Attrs:       []ods.AttrDecl{{Name: "perm", Kind: ods.IntArrayKind, Doc: "a permutation of the dimensions"}},
	},
	{
		Name: "broadcast_to", Summary: "NumPy broadcast to the result shape",
		Description: "Repeats the operand along the dimensions where it has extent 1 or that it lacks.",
		Example:     "%y = graph.broadcast_to %x : (tensor<8xf32>) -> tensor<4x8xf32>",
		Class:       "BroadcastTo",
		Traits:      ir.Pure,
		Operands:    input(ods.AnyTensor),
		Results:     output(ods.AnyTensor),
	},
	{
		Name: "slice", Summary: "a rectangular part of a tensor",
		Description: "Takes `sizes[i]` elements from `offsets[i]` on in every dimension i; a size of -1 takes all of dimension i (static or `?`).",
		Example:     "%y = graph.slice %x {offsets = [0, 2], sizes = [4, 4]} : (tensor<4x8xf32>) -> tensor<4x4xf32>",
		Class:       "Slice",
		Traits:      ir.Pure,
		Operands:    input(ods.AnyTensor),
		Results:     output(ods.AnyTensor),
		Attrs: []ods.AttrDecl{
			{Name: "offsets", Kind: ods.IntArrayKind, Doc: "the first index in each dimension"},
			{Name: "sizes", Kind: ods.IntArrayKind, Doc: "the extent in each dimension; -1: the whole dimension (offset 0, stride 1), static or `?`"},
			{Name: "strides", Kind: ods.IntArrayKind, Optional: true,
				Doc: "the step between taken indices in each dimension (default 1): element i of dimension d is `offsets[d] + i * strides[d]`, as `x[..., o::s]`"},
		},
	},
	{
		Name: "roll", Summary: "rotation along the last axis",
		Description: "`y[..., j] = x[..., (j - shift) mod n]` for the last extent n, as `numpy.roll(x, shift, axis=-1)`. " +
			"Inside a kernel it is an index map: an element-wise kernel reads its operand at the rotated column, " +
			"so rotary embeddings' `rotate_half` (`concat(-x2, x1)` is `roll(x, n/2)` times a sign) costs no copy.",
		Example:  "%y = graph.roll %x {shift = 4} : tensor<2x8xf32>",
		Class:    "Roll",
		Traits:   ir.Pure,
		Operands: input(ods.AnyTensor),
		Results:  output(ods.AnyTensor),
		Attrs: []ods.AttrDecl{{Name: "shift", Kind: ods.IntKind,
			Doc: "the rotation: element j of the result is element (j - shift) mod n of the operand"}},
	},
	{
		Name: "index_copy", Summary: "writes slices of a source into an argument in place, at the positions an index tensor gives",
		Description: "`dst[i_0, ..., idx[j], ..., i_n] = src[i_0, ..., j, ..., i_n]` for every `j` along `axis`, as " +
			"`torch.Tensor.index_copy_(axis, idx, src)`: a KV-cache update. The op has no result: it updates the " +
			"function argument `dst` in place, so a caller sees the new slices in the buffer it passed, and the " +
			"rest of `dst` is neither read nor written (a decode step writes one position of the cache, not the " +
			"whole cache). Because nothing else may read `dst`, the write has no order to keep with other ops. " +
			"Which of two equal indices wins is unspecified (as in PyTorch). The reference interpreter reports an " +
			"index outside [0, n) for the extent n of `axis` as an error; compiled kernels clamp it into [0, n - 1], " +
			"so they never write outside `dst`.",
		Example: "graph.index_copy %cache, %pos, %k {axis = 2} : (tensor<1x8x2048x128xbf16>, tensor<?xi64>, tensor<1x8x?x128xbf16>) -> ()",
		Class:   "IndexCopy",
		Operands: []ods.OperandDecl{{Name: "dst", Constraint: ods.AnyTensor}, {Name: "indices", Constraint: ods.IndexTensor},
			{Name: "source", Constraint: ods.AnyTensor}},
		Attrs: []ods.AttrDecl{{Name: "axis", Kind: ods.IntKind,
			Doc: "the dimension indexed; negative counts from the end"}},
	},
	{
		Name: "gather", Summary: "takes elements along an axis at the positions an index tensor gives",
		Description: "`y[i_0, ..., i_a, ..., i_n] = x[i_0, ..., idx[i_0, ..., i_a, ..., i_n], ..., i_n]` for `a = axis`, " +
			"as `torch.gather(x, axis, idx)` and `numpy.take_along_axis(x, idx, axis)`: the result has the index " +
			"tensor's shape and the data's element type. Indices lie in [0, n) for the extent n of `axis`; negative " +
			"indices do not count from the end. The reference interpreter reports an index outside [0, n) as an error " +
			"at the op; compiled kernels clamp it into [0, n - 1], so they never read outside `x` (an index past the " +
			"end reads the last element, a negative one the first). In a row kernel a gather along the last axis with " +
			"an index of extent 1 (cross-entropy's `x[row, target[row]]`) is one scalar load per row at the index read.",
		Example:  "%g = graph.gather %x, %t {axis = -1} : (tensor<4x32000xf32>, tensor<4x1xi64>) -> tensor<4x1xf32>",
		Class:    "Gather",
		Traits:   ir.Pure,
		Operands: []ods.OperandDecl{{Name: "input", Constraint: ods.AnyTensor}, {Name: "indices", Constraint: ods.IndexTensor}},
		Results:  output(ods.AnyTensor),
		Attrs: []ods.AttrDecl{{Name: "axis", Kind: ods.IntKind, Default: int64(-1),
			Doc: "the dimension indexed; negative counts from the end"}},
	},
	{
		Name: "concat", Summary: "joins tensors along an axis",
		Description: "Places the operands one after the other along `axis`.",
		Example:     "%y = graph.concat %a, %b {axis = 1} : (tensor<4x8xf32>, tensor<4x2xf32>) -> tensor<4x10xf32>",
		Class:       "Concat",
		Traits:      ir.Pure,
		Operands:    []ods.OperandDecl{{Name: "inputs", Constraint: ods.AnyTensor, Variadic: true}},
		Results:     output(ods.AnyTensor),
		Attrs: []ods.AttrDecl{{Name: "axis", Kind: ods.IntKind,
			Doc: "the dimension to join along; negative counts from the end"}},
	},

	// ---------------------------------------------------------------------
	// Contraction
	{
		Name: "matmul", GoName: "MatMul", Summary: "matrix multiplication",
		Description: "`C[..., m, n] = sum_k A[..., m, k] * B[..., k, n]` (`B[..., n, k]` with `transpose_b`). " +
			"Batch dimensions broadcast as in `graph.add`.",
		Example: "%c = graph.matmul %a, %b {transpose_b = true} : (tensor<4x16xbf16>, tensor<8x16xbf16>) -> tensor<4x8xbf16>",
		Class:   "MatMul",
		Traits:  ir.Pure,
		Operands: []ods.OperandDecl{
			{Name: "lhs", Constraint: ods.NumericTensor},
			{Name: "rhs", Constraint: ods.NumericTensor},
		},
		Results: output(ods.NumericTensor),
		Attrs: []ods.AttrDecl{{Name: "transpose_b", Kind: ods.BoolKind, Default: false,
			Doc: "`rhs` is stored as N x K"}},
	},

	// ---------------------------------------------------------------------
	// Constants
	{
		Name: "constant", Summary: "a tensor known at compile time",
		Description: "The result is `value`. The custom form writes the value's literal after the op name.",
		Example:     "%c = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>",
		Class:       "Constant",
		Traits:      ir.Pure | ir.ConstantLike,
		Results:     output(ods.AnyTensor),
		Attrs:       []ods.AttrDecl{{Name: "value", Kind: ods.DenseKind, Doc: "the elements"}},
	},

	// ---------------------------------------------------------------------
	// Produced by passes
	{
		Name: "fused", Summary: "ops grouped into one kernel",
		Description: "Made by the fusion pass: its body computes the results from the block arguments, " +
			"which stand for the operands, and yields them. `kind` says what the fusion built " +
			"(for example `\"elementwise\"` or `\"row\"`); the pass may record more attributes.",
		Example: `%r = graph.fused %x, %w {kind = "row"} {
^bb0(%a: tensor<4x8xf32>, %b: tensor<8xf32>):
  %n = graph.rmsnorm %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %s = graph.silu %n : tensor<4x8xf32>
  graph.yield %s : tensor<4x8xf32>
} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>`,
		Class:         "Fused",
		Traits:        ir.Pure | ir.IsolatedFromAbove,
		Operands:      []ods.OperandDecl{{Name: "inputs", Constraint: ods.AnyTensor, Variadic: true}},
		Results:       []ods.ResultDecl{{Name: "outputs", Constraint: ods.AnyTensor, Variadic: true}},
		Regions:       []ods.RegionDecl{{Name: "body", Doc: "one block; its arguments stand for the operands"}},
		Attrs:         []ods.AttrDecl{{Name: "kind", Kind: ods.StringKind, Doc: "what the fusion built"}},
		OtherAttrs:    true,
		CustomBuilder: true,
	},
	{
		Name: "yield", Summary: "ends a graph.fused body",
		Description: "Its operands become the results of the enclosing `graph.fused`.",
		Example:     "graph.yield %s : tensor<4x8xf32>",
		Class:       "Yield",
		Traits:      ir.Pure | ir.Terminator,
		Operands:    []ods.OperandDecl{{Name: "values", Constraint: ods.AnyTensor, Variadic: true}},
	},
}
