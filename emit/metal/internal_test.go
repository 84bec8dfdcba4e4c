package metal

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tensorforge/tensorforge/ir"
)

func TestExprFoldsAndPrints(t *testing.T) {
	n, m := vr("n"), vr("m")
	cases := []struct {
		e    *expr
		want string
	}{
		{bin("+", cst(2), cst(3)), "5"},
		{bin("*", n, cst(1)), "n"},
		{bin("+", cst(0), n), "n"},
		{bin("-", n, n), "0"},
		{bin("-", n, bin("-", n, m)), "m"},
		{bin("-", n, bin("+", m, cst(1))), "n - (m + 1)"},
		{bin("/", n, bin("*", m, cst(2))), "n / (m * 2)"},
		{bin("*", bin("+", n, m), cst(4)), "(n + m) * 4"},
		{bin("+", n, bin("+", m, cst(1))), "n + m + 1"},
		{ceilDiv(n, cst(8)), "(n + 7) / 8"},
		{ceilDiv(n, cst(1)), "n"},
		{roundUp(cst(33), cst(32)), "64"},
		{bin("min", cst(1024), bin("max", cst(32), n)), "min(1024, max(32, n))"},
		{bin("min", cst(1024), cst(40)), "40"},
		{bin("/", n, cst(0)), "n / 0"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, c.e.String())
	}
	assert.Equal(t, "(m + 2) * 3", bin("*", bin("+", n, cst(2)), cst(3)).subst(map[string]*expr{"n": m}).String())
}

func TestNamer(t *testing.T) {
	n := newNamer()
	assert.Equal(t, "x", n.fresh("x"))
	assert.Equal(t, "x_1", n.fresh("x"))
	assert.Equal(t, "x_2", n.fresh("x"))
	assert.Equal(t, "float_1", n.fresh("float"))
	assert.Equal(t, "lid_1", n.fresh("lid"))
	assert.Equal(t, "v0abc", n.fresh("0abc"))
	assert.Equal(t, "a_b", n.fresh("a.b"))
	assert.Equal(t, "v_tf_max", n.fresh("tf_max"))
	assert.Equal(t, "v_partial", n.fresh("partial"))
}

func TestLiterals(t *testing.T) {
	cases := []struct {
		k    ir.ElemKind
		v    float64
		want string
	}{
		{ir.F32, 0.5, "0.5f"},
		{ir.F32, 8192, "8192.0f"},
		{ir.F32, 1e-5, "1e-05f"},
		{ir.F32, math.Inf(-1), "-INFINITY"},
		{ir.F32, math.NaN(), "NAN"},
		{ir.F32, math.Copysign(0, -1), "-0.0f"},
		{ir.BF16, 0.5, "bfloat(0.5f)"},
		{ir.F16, 2, "half(2.0f)"},
		{ir.F8E4M3FN, 1, "uchar(56)"},
		{ir.I1, 1, "true"},
		{ir.I8, -3, "char(-3)"},
		{ir.I32, math.MinInt32, "int(-2147483647 - 1)"},
		{ir.I32, 7, "7"},
		{ir.UI32, 7, "7u"},
		{ir.I64, math.MinInt64, "long(-9223372036854775807 - 1)"},
		{ir.Index, 64, "64"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, literal(c.k, c.v), "%s %v", c.k, c.v)
	}
}
