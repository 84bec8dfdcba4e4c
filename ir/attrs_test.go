package ir_test

import (
	"math"
	"math/rand"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tensorforge/tensorforge/ir"
)

func TestFormatFloat(t *testing.T) {
	tests := []struct {
		v    float64
		kind ir.ElemKind
		want string
	}{
		{0, ir.F32, "0.0"},
		{math.Copysign(0, -1), ir.F32, "-0.0"},
		{math.Copysign(0, -1), ir.F64, "-0.0"},
		{1, ir.F32, "1.0"},
		{-2, ir.F64, "-2.0"},
		{0.5, ir.F32, "0.5"},
		{0.1, ir.F32, "0.1"},
		{0.1, ir.F64, "0.1"},
		{1e-5, ir.F32, "1.0e-05"},
		{2.5e-5, ir.F32, "2.5e-05"},
		{1e-4, ir.F64, "0.0001"},
		{1e15, ir.F64, "1000000000000000.0"},
		{1e16, ir.F64, "1.0e+16"},
		{123456789, ir.F64, "123456789.0"},
		// f32 keeps only what float32 holds, in its shortest spelling
		{123456789, ir.F32, "123456790.0"},
		{math.MaxFloat32, ir.F32, "3.4028235e+38"},
		{math.SmallestNonzeroFloat32, ir.F32, "1.0e-45"},
		{math.SmallestNonzeroFloat64, ir.F64, "5.0e-324"},
		{math.MaxFloat64, ir.F64, "1.7976931348623157e+308"},
		// the default kind of an untyped float is treated as f64
		{0.1, ir.InvalidElem, "0.1"},
		// f16 and bf16 values are printed as the f32 that holds them
		{65504, ir.F16, "65504.0"},
		{math.Inf(1), ir.F32, "inf"},
		{math.Inf(-1), ir.F64, "-inf"},
		{math.NaN(), ir.F32, "nan"},
		{math.NaN(), ir.F64, "nan"},
		// finite doubles beyond the f32 range round to infinity
		{1e300, ir.F32, "inf"},
		{-1e300, ir.BF16, "-inf"},
		{1e-300, ir.F32, "0.0"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			assert.Equal(t, tc.want, ir.FormatFloat(tc.v, tc.kind))
		})
	}
}

// TestFormatFloatRoundTrip parses every printed float back with strconv
// and compares bits: f64 values at 64 bits, f32 values at 32 bits.
func TestFormatFloatRoundTrip(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	var f64s []float64
	f64s = append(f64s, 0, math.Copysign(0, -1), 1, -1, 0.1, 1.0/3, math.Pi, 1e-4, 9.999999e-5, 1e16, 1e16-2,
		math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, 2.2250738585072014e-308, 1<<53+1, math.Inf(1), math.Inf(-1))
	for range 2000 {
		f64s = append(f64s, math.Float64frombits(r.Uint64()))
	}
	for _, v := range f64s {
		if math.IsNaN(v) {
			continue
		}
		s := ir.FormatFloat(v, ir.F64)
		checkFloatSyntax(t, s)
		got, err := strconv.ParseFloat(s, 64)
		require.NoError(t, err, s)
		require.Equal(t, math.Float64bits(v), math.Float64bits(got), "f64 %v printed as %s", v, s)
	}

	var f32s []float32
	f32s = append(f32s, 0, float32(math.Copysign(0, -1)), 1, 0.1, 1e-5, math.MaxFloat32, -math.MaxFloat32,
		math.SmallestNonzeroFloat32, 1.1754944e-38, 16777217, float32(math.Inf(1)), float32(math.Inf(-1)))
	for range 2000 {
		f32s = append(f32s, math.Float32frombits(r.Uint32()))
	}
	for _, v := range f32s {
		if v != v {
			continue
		}
		for _, k := range []ir.ElemKind{ir.F32, ir.F16, ir.BF16, ir.F8E4M3FN} {
			s := ir.FormatFloat(float64(v), k)
			checkFloatSyntax(t, s)
			got, err := strconv.ParseFloat(s, 32)
			require.NoError(t, err, s)
			require.Equal(t, math.Float32bits(v), math.Float32bits(float32(got)), "%s %v printed as %s", k, v, s)
		}
	}

	for _, k := range []ir.ElemKind{ir.F32, ir.F64} {
		s := ir.FormatFloat(math.NaN(), k)
		got, err := strconv.ParseFloat(s, 64)
		require.NoError(t, err)
		assert.True(t, math.IsNaN(got))
	}
}

// checkFloatSyntax checks that s is a float literal: it has a '.' or an
// exponent (or is a special), so it never reads as an integer.
func checkFloatSyntax(t *testing.T, s string) {
	t.Helper()
	switch s {
	case "inf", "-inf", "nan":
		return
	}
	require.True(t, strings.ContainsAny(s, ".e"), "%q reads as an integer", s)
	require.NotContains(t, s, "Inf")
	if i := strings.IndexByte(s, 'e'); i >= 0 {
		require.Contains(t, s[:i], ".", "mantissa of %q has no '.'", s)
	}
}

func TestScalarAttrStrings(t *testing.T) {
	tests := []struct {
		attr ir.Attr
		want string
	}{
		{ir.IntAttr{Value: 4}, "4"},
		{ir.IntAttr{Value: 4, Type: ir.I64Type}, "4"},
		{ir.IntAttr{Value: -12, Type: ir.I32Type}, "-12 : i32"},
		{ir.IntAttr{Value: 255, Type: ir.UI8Type}, "255 : ui8"},
		{ir.FloatAttr{Value: 1e-5}, "1.0e-05"},
		// an untyped float is an f32: it prints what f32 holds
		{ir.FloatAttr{Value: 1.0000000001}, "1.0"},
		{ir.FloatAttr{Value: 1.0000000001, Type: ir.F64Type}, "1.0000000001 : f64"},
		{ir.FloatAttr{Value: 1e-5, Type: ir.F32Type}, "1.0e-05"},
		{ir.FloatAttr{Value: 0.5, Type: ir.F64Type}, "0.5 : f64"},
		{ir.FloatAttr{Value: 0.1, Type: ir.F64Type}, "0.1 : f64"},
		{ir.FloatAttr{Value: math.Inf(-1), Type: ir.F16Type}, "-inf : f16"},
		{ir.BoolAttr(true), "true"},
		{ir.BoolAttr(false), "false"},
		{ir.StringAttr("tanh"), `"tanh"`},
		{ir.StringAttr("a\"b\\c\nd\te"), `"a\"b\\c\nd\te"`},
		{ir.ArrayAttr{}, "[]"},
		{ir.IntArray(1, -2, 3), "[1, -2, 3]"},
		{ir.ArrayAttr{ir.StringAttr("x"), ir.IntArray(1), ir.BoolAttr(true)}, `["x", [1], true]`},
		{ir.TypeAttr{Type: ir.UI8Type}, "ui8"},
		{ir.TypeAttr{Type: ir.FunctionType{Inputs: []ir.Type{f32x4}}}, "(tensor<4xf32>) -> ()"},
		{ir.SymbolRefAttr("main"), "@main"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.attr.String())
		})
	}
}

// TestAttrTextRoundTrip parses attribute text and prints it back unchanged.
func TestAttrTextRoundTrip(t *testing.T) {
	for _, text := range []string{
		`{a = 4}`,
		`{a = -12 : i32}`,
		`{eps = 1.0e-05}`,
		`{eps = 0.5 : f64}`,
		`{x = inf, y = -inf : f64, z = nan}`,
		`{neg = -0.0}`,
		`{b = true, s = "a\"b\\c\nd\te"}`,
		`{axes = [1, -1], nested = [[1], []]}`,
		`{dtype = ui8, fn = (tensor<4xf32>) -> (tensor<4xf32>, i1)}`,
		`{callee = @main}`,
		`{v = dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>}`,
		`{a.b$c = 3, "has space" = 1, "x-y" = 2}`,
	} {
		t.Run(text, func(t *testing.T) {
			m := parse(t, "test.op "+text+"\n")
			op := m.Body().First()
			require.NotNil(t, op)
			assert.Equal(t, text, op.Attrs.String())
		})
	}
}

func TestDenseAttrLiteral(t *testing.T) {
	seq := func(n int) []float64 {
		vs := make([]float64, n)
		for i := range vs {
			vs[i] = float64(i + 1)
		}
		return vs
	}
	tests := []struct {
		name   string
		typ    ir.ShapedType
		values []float64
		want   string
	}{
		{"splat f32", ir.Tensor(ir.F32Type, 4, 8), []float64{0.5}, "0.5"},
		{"rank 0", ir.Tensor(ir.F32Type), []float64{-2}, "-2.0"},
		{"vector", ir.Tensor(ir.F32Type, 3), []float64{1, 2.5, math.Copysign(0, -1)}, "[1.0, 2.5, -0.0]"},
		{"matrix", ir.Tensor(ir.F32Type, 2, 3), seq(6), "[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]"},
		{"rank 3", ir.Tensor(ir.I32Type, 2, 2, 2), seq(8), "[[[1, 2], [3, 4]], [[5, 6], [7, 8]]]"},
		{"size-1 dims", ir.Tensor(ir.I64Type, 1, 2, 1), seq(2), "[[[1], [2]]]"},
		{"ints", ir.Tensor(ir.I8Type, 3), []float64{-128, 0, 127}, "[-128, 0, 127]"},
		{"unsigned", ir.Tensor(ir.ElemType{Kind: ir.UI32}, 2), []float64{0, 4294967295}, "[0, 4294967295]"},
		{"bools", ir.Tensor(ir.I1Type, 3), []float64{1, 0, 1}, "[true, false, true]"},
		{"bool splat", ir.Tensor(ir.I1Type, 3), []float64{0}, "false"},
		{"specials", ir.Tensor(ir.F64Type, 3), []float64{math.Inf(1), math.NaN(), 1e-5}, "[inf, nan, 1.0e-05]"},
		{"empty", ir.Tensor(ir.F32Type, 0), nil, "[]"},
		{"empty inner", ir.Tensor(ir.F32Type, 2, 0), nil, "[[], []]"},
		{"memref", ir.MemRefType{Shape: []int64{2}, Elem: ir.F16Type}, []float64{1, 2}, "[1.0, 2.0]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := ir.DenseAttr{Type: tc.typ, Values: tc.values}
			assert.Equal(t, tc.want, d.Literal())
			assert.Equal(t, "dense<"+tc.want+"> : "+tc.typ.String(), d.String())
		})
	}
}

func TestDenseAttrAt(t *testing.T) {
	splat := ir.DenseAttr{Type: ir.Tensor(ir.F32Type, 2, 2), Values: []float64{7}}
	assert.True(t, splat.IsSplat())
	for i := int64(0); i < 4; i++ {
		assert.Equal(t, 7.0, splat.At(i))
	}
	full := ir.DenseAttr{Type: ir.Tensor(ir.F32Type, 3), Values: []float64{1, 2, 3}}
	assert.False(t, full.IsSplat())
	assert.Equal(t, 3.0, full.At(2))
}

// TestDenseAttrParsed checks the literal of dense attributes the parser
// builds, splats included.
func TestDenseAttrParsed(t *testing.T) {
	for _, text := range []string{
		`dense<0.5> : tensor<4x8xf32>`,
		`dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>`,
		`dense<[true, false]> : tensor<2xi1>`,
		`dense<[]> : tensor<0xf32>`,
	} {
		t.Run(text, func(t *testing.T) {
			m := parse(t, "test.op {v = "+text+"}\n")
			d, ok := m.Body().First().Attr("v").(ir.DenseAttr)
			require.True(t, ok)
			assert.Equal(t, text, d.String())
		})
	}
}

func TestAttrDict(t *testing.T) {
	var d ir.AttrDict
	assert.Equal(t, "", d.String())
	assert.Nil(t, d.Get("a"))
	d.Delete("a") // deleting from an empty dictionary is a no-op
	assert.Empty(t, d)

	for _, name := range []string{"m", "c", "x", "a", "k"} {
		d.Set(name, ir.StringAttr(name))
	}
	names := func() []string {
		var ns []string
		for _, na := range d {
			ns = append(ns, na.Name)
		}
		return ns
	}
	assert.Equal(t, []string{"a", "c", "k", "m", "x"}, names())
	for _, name := range []string{"a", "c", "k", "m", "x"} {
		assert.Equal(t, ir.StringAttr(name), d.Get(name))
	}
	assert.Nil(t, d.Get("b"))
	assert.Nil(t, d.Get("z"))
	assert.Nil(t, d.Get(""))

	d.Set("k", ir.IntAttr{Value: 1})
	assert.Len(t, d, 5, "Set replaces an existing entry")
	assert.Equal(t, ir.IntAttr{Value: 1}, d.Get("k"))

	d.Delete("a") // first
	d.Delete("x") // last
	d.Delete("q") // absent
	assert.Equal(t, []string{"c", "k", "m"}, names())
	d.Delete("k") // middle
	assert.Equal(t, []string{"c", "m"}, names())
	assert.Equal(t, `{c = "c", m = "m"}`, d.String())
	assert.Equal(t, `AttrDict{c = "c", m = "m"}`, d.GoString())

	// keys that are not identifiers are quoted
	var q ir.AttrDict
	q.Set("with space", ir.BoolAttr(true))
	q.Set("ok_name", ir.BoolAttr(false))
	assert.Equal(t, `{ok_name = false, "with space" = true}`, q.String())

	built := ir.Attrs("b", ir.IntAttr{Value: 2}, "a", ir.IntAttr{Value: 1})
	assert.Equal(t, "{a = 1, b = 2}", built.String())
}

func TestQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", `""`},
		{"tanh", `"tanh"`},
		{`say "hi"`, `"say \"hi\""`},
		{`C:\dir`, `"C:\\dir"`},
		{"two\nlines", `"two\nlines"`},
		{"a\tb", `"a\tb"`},
		{"ünï ☃", `"ünï ☃"`},
		{`\"`, `"\\\""`},
		{"bad \xff byte", "\"bad \xff byte\""},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, ir.Quote(tc.in), "Quote(%q)", tc.in)
	}
	// every quoted string parses back to itself
	for _, tc := range tests {
		m := parse(t, "test.op {s = "+ir.Quote(tc.in)+"}\n")
		assert.Equal(t, ir.StringAttr(tc.in), m.Body().First().Attr("s"), "Quote(%q)", tc.in)
	}
}

func TestIsIdentifier(t *testing.T) {
	tests := []struct {
		s    string
		want bool
	}{
		{"a", true},
		{"_", true},
		{"Z9", true},
		{"sym_name", true},
		{"a.b", true},
		{"a$b", true},
		{"a1_$.", true},
		{"", false},
		{"1a", false},
		{".a", false},
		{"$a", false},
		{"a-b", false},
		{"a b", false},
		{"é", false},
		{"a\"", false},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, ir.IsIdentifier(tc.s), "IsIdentifier(%q)", tc.s)
	}
}

func TestAttrEqualAndConversions(t *testing.T) {
	assert.True(t, ir.AttrEqual(nil, nil))
	assert.False(t, ir.AttrEqual(nil, ir.BoolAttr(true)))
	assert.False(t, ir.AttrEqual(ir.BoolAttr(true), nil))
	assert.True(t, ir.AttrEqual(ir.IntAttr{Value: 3}, ir.IntAttr{Value: 3, Type: ir.I64Type}))
	assert.False(t, ir.AttrEqual(ir.IntAttr{Value: 3}, ir.IntAttr{Value: 3, Type: ir.I32Type}))
	assert.True(t, ir.AttrEqual(ir.IntArray(1, 2), ir.ArrayAttr{ir.IntAttr{Value: 1}, ir.IntAttr{Value: 2}}))

	f, ok := ir.AttrAsFloat(ir.IntAttr{Value: 3})
	assert.True(t, ok)
	assert.Equal(t, 3.0, f)
	f, ok = ir.AttrAsFloat(ir.FloatAttr{Value: 2.5})
	assert.True(t, ok)
	assert.Equal(t, 2.5, f)
	_, ok = ir.AttrAsFloat(ir.StringAttr("3"))
	assert.False(t, ok)

	tests := []struct {
		attr ir.Attr
		n    int64
		ok   bool
	}{
		{ir.IntAttr{Value: -7}, -7, true},
		{ir.FloatAttr{Value: 4}, 4, true},
		{ir.FloatAttr{Value: 4.5}, 0, false},
		{ir.FloatAttr{Value: 1 << 53}, 0, false},
		{ir.FloatAttr{Value: math.NaN()}, 0, false},
		{ir.FloatAttr{Value: math.Inf(1)}, 0, false},
		{ir.BoolAttr(true), 0, false},
	}
	for _, tc := range tests {
		n, ok := ir.AttrAsInt(tc.attr)
		assert.Equal(t, tc.ok, ok, tc.attr.String())
		assert.Equal(t, tc.n, n, tc.attr.String())
	}

	ints, ok := ir.IntArray(4, 5).Int64s()
	assert.True(t, ok)
	assert.Equal(t, []int64{4, 5}, ints)
	_, ok = ir.ArrayAttr{ir.IntAttr{Value: 1}, ir.FloatAttr{Value: 1}}.Int64s()
	assert.False(t, ok)
	ints, ok = ir.ArrayAttr{}.Int64s()
	assert.True(t, ok)
	assert.Empty(t, ints)
}
