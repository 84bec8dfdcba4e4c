package eval

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

var (
	inf    = math.Inf(1)
	nan    = math.NaN()
	negZ   = math.Copysign(0, -1)
	fnLoc  = ir.Location{File: "t.tir", Line: 1, Col: 1}
	opLoc  = ir.Location{File: "t.tir", Line: 2, Col: 3}
	exact  = 0.0 // ULP bound: bit-exact (signed zeros compared too)
	defOpt = Options{}
	refOpt = Options{F64: true}
)

func tt(k ir.ElemKind, shape ...int64) ir.TensorType {
	return ir.Tensor(ir.ElemType{Kind: k}, shape...)
}

// mk builds a tensor from literal values, rounded to k.
func mk(t *testing.T, k ir.ElemKind, shape []int64, vals ...float64) *Tensor {
	t.Helper()
	x, err := TensorOf(k, shape, vals)
	require.NoError(t, err)
	return x
}

// vec builds a 1-D tensor.
func vec(t *testing.T, k ir.ElemKind, vals ...float64) *Tensor {
	t.Helper()
	return mk(t, k, []int64{int64(len(vals))}, vals...)
}

// buildFn makes `func.func @f(ins) -> outs` whose body is built by body.
func buildFn(ins, outs []ir.Type, body func(b *ir.Builder, args []*ir.Value) []*ir.Value) ir.Func {
	fn := ir.NewFunc(fnLoc, "f", ir.FunctionType{Inputs: ins, Results: outs})
	for i, a := range fn.Args() {
		a.Name = string(rune('a' + i))
	}
	b := ir.NewBuilderAtEnd(fn.Body())
	b.Loc = opLoc
	res := body(b, fn.Args())
	b.CreateHere(ir.ReturnOpName, res, nil, nil)
	return fn
}

// evalOp runs a function made of one op applied to the inputs (arguments
// typed like the inputs) with result type res.
func evalOp(name string, attrs ir.AttrDict, res ir.Type, opts Options, ins ...*Tensor) (*Tensor, error) {
	var types []ir.Type
	for _, x := range ins {
		types = append(types, x.Type())
	}
	fn := buildFn(types, []ir.Type{res}, func(b *ir.Builder, args []*ir.Value) []*ir.Value {
		return []*ir.Value{b.CreateHere(name, args, []ir.Type{res}, attrs).Result(0)}
	})
	outs, err := Run(fn, ins, opts)
	if err != nil {
		return nil, err
	}
	return outs[0], nil
}

// mustOp is evalOp that fails the test on error.
func mustOp(t *testing.T, name string, attrs ir.AttrDict, res ir.Type, opts Options, ins ...*Tensor) *Tensor {
	t.Helper()
	out, err := evalOp(name, attrs, res, opts, ins...)
	require.NoError(t, err, name)
	return out
}

// same reports whether a and b are the same value (NaN equals NaN, and the
// sign of zero counts).
func same(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return a == b && math.Signbit(a) == math.Signbit(b)
}

// checkValues compares got with want element by element: within ulps ULPs
// of got's element type, or bit-exact (zero signs included) when ulps is 0.
func checkValues(t *testing.T, what string, want []float64, got *Tensor, ulps float64) {
	t.Helper()
	require.Len(t, got.Data, len(want), what)
	for i, w := range want {
		g := got.Data[i]
		if ulps == 0 {
			assert.True(t, same(w, g), "%s[%d]: got %v, want %v", what, i, g, w)
			continue
		}
		d := numeric.ULPDiff(w, g, got.Elem)
		assert.LessOrEqual(t, d, ulps, "%s[%d]: got %v, want %v (%v ULPs of %s)", what, i, g, w, d, got.Elem)
	}
}

func TestRunBindsDynamicDims(t *testing.T) {
	ty := tt(ir.F32, ir.Dynamic, 2)
	fn := buildFn([]ir.Type{ty, tt(ir.F32, 2)}, []ir.Type{ty}, func(b *ir.Builder, args []*ir.Value) []*ir.Value {
		return []*ir.Value{b.CreateHere("graph.add", args, []ir.Type{ty}, nil).Result(0)}
	})
	for _, rows := range []int64{1, 3} {
		x := NewTensor(ir.F32, []int64{rows, 2})
		for i := range x.Data {
			x.Data[i] = float64(i)
		}
		outs, err := Run(fn, []*Tensor{x, vec(t, ir.F32, 10, 20)}, defOpt)
		require.NoError(t, err)
		require.Len(t, outs, 1)
		assert.Equal(t, []int64{rows, 2}, outs[0].Shape)
		assert.Equal(t, ir.F32, outs[0].Elem)
		for i, v := range outs[0].Data {
			assert.Equal(t, float64(i)+[]float64{10, 20}[i%2], v)
		}
	}
}

func TestRunRejectsBadInputs(t *testing.T) {
	ty := tt(ir.F32, ir.Dynamic, 2)
	fn := buildFn([]ir.Type{ty, tt(ir.I8, 3)}, []ir.Type{ty}, func(b *ir.Builder, args []*ir.Value) []*ir.Value {
		return args[:1]
	})
	good := NewTensor(ir.F32, []int64{4, 2})
	small := vec(t, ir.I8, 1, 2, 3)
	for _, c := range []struct {
		ins  []*Tensor
		want string
	}{
		{[]*Tensor{good}, "takes 2 arguments but 1 inputs"},
		{[]*Tensor{NewTensor(ir.F32, []int64{4, 3}), small}, "argument #0 (%a): input of shape 4x3 does not match type tensor<?x2xf32>"},
		{[]*Tensor{NewTensor(ir.F32, []int64{8}), small}, "argument #0 (%a): input of shape 8"},
		{[]*Tensor{good, vec(t, ir.I8, 1, 2)}, "argument #1 (%b): input of shape 2 does not match type tensor<3xi8>"},
		{[]*Tensor{good, nil}, "argument #1 (%b): no input tensor"},
		{[]*Tensor{good, {Shape: []int64{3}, Elem: ir.I8, Data: []float64{1}}}, "argument #1 (%b): input has shape 3 but 1 values"},
		{[]*Tensor{good, vec(t, ir.I32, 1, 2, 300)}, "argument #1 (%b): input element 2 (300) of type i32 is not exactly representable in i8"},
		{[]*Tensor{good, vec(t, ir.F32, 1, 2, 3.5)}, "not exactly representable in i8"},
	} {
		_, err := Run(fn, c.ins, defOpt)
		require.Error(t, err, c.want)
		assert.Contains(t, err.Error(), c.want)
		assert.True(t, strings.HasPrefix(err.Error(), "t.tir:1:1: error: @f: ") || strings.Contains(err.Error(), "takes"), err.Error())
	}
	// exact conversions are accepted: f64 data into an f32 argument rounds,
	// integral floats into an i8 argument are exact
	outs, err := Run(fn, []*Tensor{{Shape: []int64{1, 2}, Elem: ir.F64, Data: []float64{0.1, 1}}, vec(t, ir.F32, 1, 2, -3)}, defOpt)
	require.NoError(t, err)
	assert.Equal(t, []float64{float64(float32(0.1)), 1}, outs[0].Data)
	assert.Equal(t, ir.F32, outs[0].Elem)
}

func TestRunResultDoesNotAliasInput(t *testing.T) {
	ty := tt(ir.F32, 2)
	fn := buildFn([]ir.Type{ty}, []ir.Type{ty}, func(b *ir.Builder, args []*ir.Value) []*ir.Value { return args })
	x := vec(t, ir.F32, 1, 2)
	outs, err := Run(fn, []*Tensor{x}, defOpt)
	require.NoError(t, err)
	outs[0].Data[0] = 7
	assert.Equal(t, 1.0, x.Data[0])
}

func TestUnknownOpIsLocatedError(t *testing.T) {
	ty := tt(ir.F32, 2)
	fn := buildFn([]ir.Type{ty}, []ir.Type{ty}, func(b *ir.Builder, args []*ir.Value) []*ir.Value {
		return []*ir.Value{b.CreateHere("graph.frobnicate", args, []ir.Type{ty}, nil).Result(0)}
	})
	_, err := Run(fn, []*Tensor{vec(t, ir.F32, 1, 2)}, defOpt)
	require.Error(t, err)
	assert.Equal(t, "t.tir:2:3: error: 'graph.frobnicate' op is not supported by the reference interpreter", err.Error())
	var d *ir.Diagnostic
	assert.ErrorAs(t, err, &d)
}

func TestOpErrorsAreLocated(t *testing.T) {
	x := vec(t, ir.F32, 1, 2)
	for _, c := range []struct {
		name  string
		attrs ir.AttrDict
		res   ir.Type
		ins   []*Tensor
		want  string
	}{
		{"graph.cmp", nil, tt(ir.I1, 2), []*Tensor{x, x}, `'graph.cmp' op attribute 'predicate' must be one of`},
		{"graph.add", nil, tt(ir.F32, 2), []*Tensor{x, vec(t, ir.F32, 1, 2, 3)}, "shapes 2, 3 do not broadcast"},
		{"graph.add", nil, tt(ir.F32, 3), []*Tensor{x, x}, "result #0 has shape 2 at run time, which does not match its type tensor<3xf32>"},
		{"graph.exp", nil, tt(ir.I32, 2), []*Tensor{vec(t, ir.I32, 1, 2)}, "'graph.exp' op does not accept integer element types (i32)"},
		{"graph.div", nil, tt(ir.I32, 2), []*Tensor{vec(t, ir.I32, 1, 2), vec(t, ir.I32, 1, 0)}, "integer division by zero"},
		{"graph.gelu", ir.Attrs("approximate", ir.StringAttr("fast")), tt(ir.F32, 2), []*Tensor{x}, `'approximate' must be "none" or "tanh"`},
		{"graph.reduce_sum", ir.Attrs("axes", ir.IntArray(0, -1)), tt(ir.F32), []*Tensor{x}, "axis -1 is reduced twice"},
		{"graph.reduce_sum", ir.Attrs("axes", ir.IntArray(1)), tt(ir.F32), []*Tensor{x}, "axis 1 is out of range for rank 1"},
		{"graph.softmax", ir.Attrs("axis", ir.StringAttr("x")), tt(ir.F32, 2), []*Tensor{x}, "attribute 'axis' must be an integer"},
		{"graph.quantize", nil, tt(ir.UI8, 2), []*Tensor{x}, "requires a 'scale' attribute"},
		{"graph.quantize", ir.Attrs("scale", ir.FloatAttr{Value: 1}), tt(ir.F32, 2), []*Tensor{x}, "result element type must be an integer or f8 type"},
		{"graph.matmul", nil, tt(ir.F32, 2, 2), []*Tensor{mk(t, ir.F32, []int64{2, 3}, 1, 2, 3, 4, 5, 6), mk(t, ir.F32, []int64{2, 2}, 1, 2, 3, 4)}, "contracted extents differ"},
		{"graph.transpose", ir.Attrs("perm", ir.IntArray(0, 0)), tt(ir.F32, 2, 2), []*Tensor{mk(t, ir.F32, []int64{2, 2}, 1, 2, 3, 4)}, "is not a permutation"},
		{"graph.slice", ir.Attrs("offsets", ir.IntArray(1), "sizes", ir.IntArray(2)), tt(ir.F32, 2), []*Tensor{x}, "exceeds dimension 0 of extent 2"},
		{"graph.reshape", nil, tt(ir.F32, 3), []*Tensor{x}, "cannot reshape 2 (2 elements) into tensor<3xf32>"},
		{"graph.constant", nil, tt(ir.F32, 2), nil, "requires a dense attribute 'value'"},
		{"graph.requantize", ir.Attrs("scale", ir.FloatAttr{Value: 1}), tt(ir.I8, 2), []*Tensor{vec(t, ir.I32, 1, 2)}, "requires a 'in_scale' attribute"},
	} {
		_, err := evalOp(c.name, c.attrs, c.res, defOpt, c.ins...)
		require.Error(t, err, c.want)
		assert.Contains(t, err.Error(), c.want)
		assert.True(t, strings.HasPrefix(err.Error(), "t.tir:2:3: error: '"+c.name+"' op "), err.Error())
	}
}

func TestFusedRegion(t *testing.T) {
	ty := tt(ir.F32, 3)
	fn := buildFn([]ir.Type{ty, ty}, []ir.Type{ty, ty}, func(b *ir.Builder, args []*ir.Value) []*ir.Value {
		fused := ir.NewOperation("graph.fused", opLoc, args, []ir.Type{ty, ty}, ir.Attrs("kind", ir.StringAttr("elementwise")), 1)
		body := ir.NewBlock(ty, ty)
		fused.Region(0).AppendBlock(body)
		in := ir.NewBuilderAtEnd(body)
		s := in.Create("graph.add", opLoc, body.Args, []ir.Type{ty}, nil).Result(0)
		e := in.Create("graph.exp", opLoc, []*ir.Value{s}, []ir.Type{ty}, nil).Result(0)
		in.Create("graph.yield", opLoc, []*ir.Value{e, body.Args[0]}, nil, nil)
		b.Insert(fused)
		return fused.Results()
	})
	a, c := vec(t, ir.F32, 0, 1, 2), vec(t, ir.F32, 0, 0, -2)
	outs, err := Run(fn, []*Tensor{a, c}, defOpt)
	require.NoError(t, err)
	require.Len(t, outs, 2)
	checkValues(t, "exp(a+b)", []float64{1, float64(float32(math.E)), 1}, outs[0], exact)
	checkValues(t, "a", []float64{0, 1, 2}, outs[1], exact)
	outs[1].Data[0] = 9
	assert.Equal(t, 0.0, a.Data[0], "a yielded block argument is copied")
}

func TestConstant(t *testing.T) {
	splat := ir.DenseAttr{Type: tt(ir.BF16, 2, 2), Values: []float64{0.1}}
	got := mustOp(t, "graph.constant", ir.Attrs("value", splat), tt(ir.BF16, 2, 2), refOpt)
	b := numeric.RoundTo(0.1, ir.BF16)
	checkValues(t, "splat", []float64{b, b, b, b}, got, exact)
	assert.Equal(t, []int64{2, 2}, got.Shape)

	full := ir.DenseAttr{Type: tt(ir.I8, 3), Values: []float64{1, -2, 3}}
	got = mustOp(t, "graph.constant", ir.Attrs("value", full), tt(ir.I8, 3), defOpt)
	checkValues(t, "full", []float64{1, -2, 3}, got, exact)

	scalar := ir.DenseAttr{Type: tt(ir.F32), Values: []float64{0.08838834764831845}}
	got = mustOp(t, "graph.constant", ir.Attrs("value", scalar), tt(ir.F32), defOpt)
	assert.Equal(t, []int64{}, got.Shape)
	checkValues(t, "scalar", []float64{float64(float32(0.08838834764831845))}, got, exact)

	_, err := evalOp("graph.constant", ir.Attrs("value", full), tt(ir.I8, 4), defOpt)
	assert.ErrorContains(t, err, "does not match result type")
}

// TestPipelineMatchesHandComputation runs rms_silu_mul from the examples on
// small shapes and checks it against a float64 computation by hand.
func TestPipelineMatchesHandComputation(t *testing.T) {
	xt, wt := tt(ir.BF16, ir.Dynamic, 4), tt(ir.BF16, 4)
	fn := buildFn([]ir.Type{xt, wt, xt}, []ir.Type{xt}, func(b *ir.Builder, args []*ir.Value) []*ir.Value {
		n := b.CreateHere("graph.rmsnorm", args[:2], []ir.Type{xt}, ir.Attrs("eps", ir.FloatAttr{Value: 1e-5})).Result(0)
		s := b.CreateHere("graph.silu", []*ir.Value{n}, []ir.Type{xt}, nil).Result(0)
		y := b.CreateHere("graph.mul", []*ir.Value{s, args[2]}, []ir.Type{xt}, nil).Result(0)
		return []*ir.Value{y}
	})
	ins, err := RandomInputs(fn, 7, 2, 3)
	require.NoError(t, err)
	assert.Equal(t, []int64{3, 4}, ins[0].Shape)
	x, w, z := ins[0].Data, ins[1].Data, ins[2].Data
	eps := float64(float32(1e-5))
	want := make([]float64, len(x))
	for r := 0; r < 3; r++ {
		ss := 0.0
		for j := 0; j < 4; j++ {
			ss += x[r*4+j] * x[r*4+j]
		}
		inv := 1 / math.Sqrt(ss/4+eps)
		for j := 0; j < 4; j++ {
			n := x[r*4+j] * inv * w[j]
			want[r*4+j] = n / (1 + math.Exp(-n)) * z[r*4+j]
		}
	}
	ref, err := Run(fn, ins, refOpt)
	require.NoError(t, err)
	for i := range want {
		assert.InDelta(t, want[i], ref[0].Data[i], 1e-12*math.Max(1, math.Abs(want[i])))
	}
	// the f32 run stores bf16 after every op: within a few bf16 ULPs
	got, err := Run(fn, ins, defOpt)
	require.NoError(t, err)
	for i := range want {
		assert.LessOrEqual(t, numeric.ULPDiff(want[i], got[0].Data[i], ir.BF16), 3.0, "element %d", i)
		assert.Equal(t, got[0].Data[i], numeric.RoundTo(got[0].Data[i], ir.BF16), "stored as bf16")
	}
}

func TestTensorHelpers(t *testing.T) {
	x := mk(t, ir.BF16, []int64{2, 3}, 1, 0.1, nan, -inf, 0, 2.5)
	assert.Equal(t, "tensor<2x3xbf16> [1 0.10009765625 NaN -Inf 0 2.5]", x.String())
	assert.Equal(t, 6, x.NumElements())
	assert.Equal(t, 2, x.Rank())
	assert.Equal(t, "4x?x8", FormatShape([]int64{4, ir.Dynamic, 8}))
	assert.Equal(t, "scalar", FormatShape(nil))
	_, err := TensorOf(ir.F32, []int64{2, 2}, []float64{1})
	assert.ErrorContains(t, err, "1 values do not fill shape 2x2")
	assert.Equal(t, []int64{0, 3}, NewTensor(ir.F32, []int64{-1, 3}).Shape)
	c := x.Clone()
	c.Data[0] = 5
	assert.Equal(t, 1.0, x.Data[0])
}
