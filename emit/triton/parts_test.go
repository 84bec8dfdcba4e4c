package triton

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tensorforge/tensorforge/ir"
)

func TestPyLiteral(t *testing.T) {
	for _, c := range []struct {
		v    float64
		k    ir.ElemKind
		want string
	}{
		{0.5, ir.F32, "0.5"},
		{8192, ir.F32, "8192.0"},
		{-2, ir.F32, "(-2.0)"},
		{float64(float32(1e-5)), ir.F32, "9.999999747378752e-06"},
		{1e300, ir.F64, "1e+300"},
		{math.Inf(1), ir.F32, `float("inf")`},
		{math.Inf(-1), ir.BF16, `(-float("inf"))`},
		{math.NaN(), ir.F32, `float("nan")`},
		{128, ir.UI8, "128"},
		{-3, ir.Index, "-3"},
		{1, ir.I1, "True"},
		{0, ir.I1, "False"},
	} {
		assert.Equal(t, c.want, pyLiteral(c.v, c.k), "%v %s", c.v, c.k)
	}
}

func TestNamer(t *testing.T) {
	n := newNamer("_silu")
	assert.Equal(t, "x", n.fresh("x"))
	assert.Equal(t, "x_1", n.fresh("x"))
	assert.Equal(t, "x_2", n.fresh("x"))
	assert.Equal(t, "t0", n.fresh(""))
	assert.Equal(t, "t1", n.fresh("7"), "unnamed SSA values are temporaries")
	assert.Equal(t, "lambda_1", n.fresh("lambda"), "a keyword")
	assert.Equal(t, "tl_1", n.fresh("tl"), "the Triton module")
	assert.Equal(t, "mask_1", n.fresh("mask"), "a keyword argument the code passes")
	assert.Equal(t, "_silu_1", n.fresh("_silu"), "a helper")
	assert.Equal(t, "rms_k0", n.fresh("rms.k0"))
	assert.Equal(t, "v0x", n.fresh("0x"))
	assert.Equal(t, "t2", n.fresh("$"))
}

func TestIdentifiers(t *testing.T) {
	assert.Equal(t, []string{"tl", "x", "r", "cols", "bmask"},
		identifiers(`tl.load(x + (r * 8192) + cols, mask=bmask, eviction_policy="evict_first")`))
	assert.Equal(t, []string{"a", "b"}, identifiers("a == b"), "== is no keyword argument")
	assert.Equal(t, []string{"x", "y"}, identifiers("x * 1e-05 + 2.5e+3 * y"))
	assert.Equal(t, []string{"tl", "x"}, identifiers(`tl.where(x == -float("inf"), 0.0, x)`)[:2])
}

func TestPyWriterPrunes(t *testing.T) {
	w := &pyWriter{}
	w.assign("a", "tl.load(p)")
	w.assign("b", "a * 2")   // read by nothing kept
	w.assign("c", "b + 1")   // read only by b's chain: dropped too
	w.assign("acc", "a + 0") // carried
	w.open("for k in range(0, n):")
	w.assign("d", "k * 4")     // unused in the loop
	w.assign("acc", "acc + a") // reads itself: kept because the store reads acc
	w.close()
	w.open("if WIDE:")
	w.assign("e", "a") // the body empties
	w.close()
	w.line("tl.store(q, acc)")
	w.prune()
	assert.Equal(t, `    a = tl.load(p)
    acc = a + 0
    for k in range(0, n):
        acc = acc + a
    if WIDE:
        pass
    tl.store(q, acc)
`, w.render(1))

	// a value read only by its own update is dropped with it
	w = &pyWriter{}
	w.assign("s", "0")
	w.assign("s", "s + 1")
	w.line("return None")
	w.prune()
	assert.Equal(t, "return None\n", w.render(0))
}

func TestExpressions(t *testing.T) {
	assert.Equal(t, "(r * 8192)", mulExpr("r", "8192"))
	assert.Equal(t, "r", mulExpr("r", "1"))
	assert.Equal(t, "0", mulExpr("0", "x_d1"))
	assert.Equal(t, "33554432", mulExpr("4096", "8192"))
	assert.Equal(t, "x + (r * 64) + i", join("+", "x", "(r * 64)", "i"))
	assert.Equal(t, "x + i", join("+", "x", "0", "i"))
	assert.Equal(t, "0", join("+", "0", ""))
}

func TestHeuristics(t *testing.T) {
	assert.Equal(t, int64(1), nextPow2(0))
	assert.Equal(t, int64(8192), nextPow2(5120))
	assert.Equal(t, int64(16384), nextPow2(14336))
	assert.Equal(t, int64(4096), nextPow2(4096))
	// 32 to 64 elements per thread
	for _, c := range []struct{ n, warps int64 }{{64, 4}, {4096, 4}, {8192, 8}, {16384, 8}, {32768, 16}} {
		assert.Equal(t, c.warps, rowWarps(c.n), "%d elements", c.n)
	}
}

func TestTypes(t *testing.T) {
	for k, want := range map[ir.ElemKind][2]string{
		ir.BF16:     {"tl.bfloat16", "torch.bfloat16"},
		ir.F16:      {"tl.float16", "torch.float16"},
		ir.UI8:      {"tl.uint8", "torch.uint8"},
		ir.I1:       {"tl.int1", "torch.bool"},
		ir.F8E4M3FN: {"tl.float8e4nv", "torch.float8_e4m3fn"},
	} {
		tl, err := tlType(k)
		assert.NoError(t, err)
		th, err := torchType(k)
		assert.NoError(t, err)
		assert.Equal(t, want, [2]string{tl, th})
	}
	_, err := tlType(ir.InvalidElem)
	assert.Error(t, err)
}
