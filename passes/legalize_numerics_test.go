package passes

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
	"github.com/tensorforge/tensorforge/parser"
)

// ---------------------------------------------------------------------------
// Helpers shared by the numerics tests

// numParse parses and verifies a module.
func numParse(t testing.TB, src string) ir.Module {
	t.Helper()
	m, err := parser.Parse("test.tir", src)
	require.NoError(t, err, src)
	require.NoError(t, ir.Verify(m.Operation), src)
	return m
}

// numOnlyFunc returns the single function of m.
func numOnlyFunc(t testing.TB, m ir.Module) ir.Func {
	t.Helper()
	fs := m.Funcs()
	require.Len(t, fs, 1)
	return fs[0]
}

// numCtx is a pass context that records diagnostics and has the
// numerics remarks on.
func numCtx() *ir.PassContext {
	return &ir.PassContext{Diags: &ir.Diagnostics{}, Remarks: map[string]bool{remarkCategory: true}}
}

// legalize runs legalize-numerics on m, checks that the result verifies,
// and returns the diagnostics it reported.
func numLegalize(t testing.TB, m ir.Module, opts NumericsOptions) []*ir.Diagnostic {
	t.Helper()
	ctx := numCtx()
	require.NoError(t, LegalizeNumerics(m.Operation, ctx, opts))
	require.NoError(t, ir.Verify(m.Operation), "invalid IR after legalize-numerics:\n%s", ir.Print(m.Operation, ir.PrintOptions{}))
	return ctx.Diags.List
}

// recognise runs only step 1 (the naive-formula patterns) on m.
func numRecognise(t testing.TB, m ir.Module) []*ir.Diagnostic {
	t.Helper()
	ctx := numCtx()
	ir.ApplyPatternsGreedily(m.Operation, NumericsPatterns(ctx), ir.GreedyConfig{})
	require.NoError(t, ir.Verify(m.Operation))
	return ctx.Diags.List
}

// numOpCounts counts the ops of each name nested in root.
func numOpCounts(root *ir.Operation) map[string]int {
	n := map[string]int{}
	root.Walk(func(o *ir.Operation) bool {
		n[o.Name()]++
		return true
	})
	return n
}

// messages returns "severity: message" for each diagnostic.
func numMessages(ds []*ir.Diagnostic) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Severity.String() + ": " + d.Message
	}
	return out
}

// ---------------------------------------------------------------------------
// Step 1: the patterns, positive and negative

// numPatternCase is a function body in terms of its arguments; want lists the
// ops that must be there after step 1 and gone the ops that must not.
type numPatternCase struct {
	name   string
	src    string
	remark string // the last remark's text; "" for a negative case
	// rewrites is the number of rewrites (and remarks) when it is not 1
	rewrites int
	want     []string
	gone     []string
}

var numPatternCases = []numPatternCase{
	{
		name: "logaddexp",
		src: `func.func @f(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %ea = graph.exp %a : tensor<8xf32>
  %eb = graph.exp %b : tensor<8xf32>
  %s = graph.add %ea, %eb : tensor<8xf32>
  %y = graph.log %s : tensor<8xf32>
  return %y : tensor<8xf32>
}`,
		remark: "rewrote log(exp(a) + exp(b)) as graph.logaddexp, which does not overflow",
		want:   []string{"graph.logaddexp"},
		gone:   []string{"graph.exp", "graph.add", "graph.log"},
	},
	{
		name: "logaddexp broadcast",
		src: `func.func @f(%a: tensor<4x8xbf16>, %b: tensor<8xbf16>) -> tensor<4x8xbf16> {
  %ea = graph.exp %a : tensor<4x8xbf16>
  %eb = graph.exp %b : tensor<8xbf16>
  %s = graph.add %ea, %eb : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
  %y = graph.log %s : tensor<4x8xbf16>
  return %y : tensor<4x8xbf16>
}`,
		remark: "rewrote log(exp(a) + exp(b)) as graph.logaddexp",
		want:   []string{"graph.logaddexp"},
		gone:   []string{"graph.exp", "graph.add"},
	},
	{
		name: "logaddexp2",
		src: `func.func @f(%a: tensor<8xf16>, %b: tensor<8xf16>) -> tensor<8xf16> {
  %ea = graph.exp2 %a : tensor<8xf16>
  %eb = graph.exp2 %b : tensor<8xf16>
  %s = graph.add %ea, %eb : tensor<8xf16>
  %y = graph.log2 %s : tensor<8xf16>
  return %y : tensor<8xf16>
}`,
		remark: "rewrote log2(exp2(a) + exp2(b)) as graph.logaddexp2, which does not overflow",
		want:   []string{"graph.logaddexp2"},
		gone:   []string{"graph.exp2", "graph.log2"},
	},
	{
		name: "logsumexp",
		src: `func.func @f(%x: tensor<?x16xf32>) -> tensor<?xf32> {
  %e = graph.exp %x : tensor<?x16xf32>
  %s = graph.reduce_sum %e {axes = [1]} : (tensor<?x16xf32>) -> tensor<?xf32>
  %y = graph.log %s : tensor<?xf32>
  return %y : tensor<?xf32>
}`,
		remark: "rewrote log(reduce_sum(exp(x))) as graph.logsumexp, which does not overflow",
		want:   []string{"graph.logsumexp"},
		gone:   []string{"graph.exp", "graph.reduce_sum", "graph.log"},
	},
	{
		name: "softmax keepdim",
		src: `func.func @f(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %e = graph.exp %x : tensor<4x16xf32>
  %s = graph.reduce_sum %e {axes = [-1], keepdim = true} : (tensor<4x16xf32>) -> tensor<4x1xf32>
  %y = graph.div %e, %s : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}`,
		remark: "rewrote exp(x) / reduce_sum(exp(x)) as graph.softmax, which does not overflow",
		want:   []string{"graph.softmax"},
		gone:   []string{"graph.exp", "graph.reduce_sum", "graph.div"},
	},
	{
		name: "softmax two exps and broadcast_to",
		src: `func.func @f(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %e = graph.exp %x : tensor<4x16xf32>
  %e2 = graph.exp %x : tensor<4x16xf32>
  %s = graph.reduce_sum %e2 {axes = [1], keepdim = true} : (tensor<4x16xf32>) -> tensor<4x1xf32>
  %b = graph.broadcast_to %s : (tensor<4x1xf32>) -> tensor<4x16xf32>
  %y = graph.div %e, %b : tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}`,
		remark: "rewrote exp(x) / reduce_sum(exp(x)) as graph.softmax",
		want:   []string{"graph.softmax"},
		gone:   []string{"graph.exp", "graph.reduce_sum", "graph.broadcast_to", "graph.div"},
	},
	{
		name: "softmax over the first axis without keepdim",
		src: `func.func @f(%x: tensor<16x4xf32>) -> tensor<16x4xf32> {
  %e = graph.exp %x : tensor<16x4xf32>
  %s = graph.reduce_sum %e {axes = [0]} : (tensor<16x4xf32>) -> tensor<4xf32>
  %y = graph.div %e, %s : (tensor<16x4xf32>, tensor<4xf32>) -> tensor<16x4xf32>
  return %y : tensor<16x4xf32>
}`,
		remark: "rewrote exp(x) / reduce_sum(exp(x)) as graph.softmax",
		want:   []string{"graph.softmax"},
		gone:   []string{"graph.div"},
	},
	{
		name: "log_softmax",
		src: `func.func @f(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %p = graph.softmax %x : tensor<4x16xf32>
  %y = graph.log %p : tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}`,
		remark: "rewrote log(softmax(x)) as graph.log_softmax, which does not underflow to log(0)",
		want:   []string{"graph.log_softmax"},
		gone:   []string{"graph.softmax", "graph.log"},
	},
	{
		name: "log of the naive softmax",
		src: `func.func @f(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %e = graph.exp %x : tensor<4x16xf32>
  %s = graph.reduce_sum %e {axes = [-1], keepdim = true} : (tensor<4x16xf32>) -> tensor<4x1xf32>
  %p = graph.div %e, %s : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  %y = graph.log %p : tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}`,
		remark:   "rewrote log(softmax(x)) as graph.log_softmax",
		rewrites: 2, // softmax first, then log_softmax
		want:     []string{"graph.log_softmax"},
		gone:     []string{"graph.softmax", "graph.exp", "graph.div", "graph.log"},
	},
	{
		name: "log1p",
		src: `func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  %one = graph.constant dense<1.0> : tensor<f32>
  %s = graph.add %one, %x : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %y = graph.log %s : tensor<8xf32>
  return %y : tensor<8xf32>
}`,
		remark: "rewrote log(1 + x) as graph.log1p, which keeps the precision of small x",
		want:   []string{"graph.log1p"},
		gone:   []string{"graph.add", "graph.log", "graph.constant"},
	},
	{
		name: "log1p, constant second",
		src: `func.func @f(%x: tensor<8xf16>) -> tensor<8xf16> {
  %one = graph.constant dense<1.0> : tensor<8xf16>
  %s = graph.add %x, %one : tensor<8xf16>
  %y = graph.log %s : tensor<8xf16>
  return %y : tensor<8xf16>
}`,
		remark: "rewrote log(1 + x) as graph.log1p",
		want:   []string{"graph.log1p"},
		gone:   []string{"graph.add"},
	},
	{
		name: "expm1",
		src: `func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  %e = graph.exp %x : tensor<8xf32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %y = graph.sub %e, %one : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}`,
		remark: "rewrote exp(x) - 1 as graph.expm1, which keeps the precision of small x",
		want:   []string{"graph.expm1"},
		gone:   []string{"graph.exp", "graph.sub"},
	},
	{
		name: "exp kept for its other user",
		src: `func.func @f(%a: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %ea = graph.exp %a : tensor<8xf32>
  %eb = graph.exp %b : tensor<8xf32>
  %s = graph.add %ea, %eb : tensor<8xf32>
  %y = graph.log %s : tensor<8xf32>
  return %y, %ea : tensor<8xf32>, tensor<8xf32>
}`,
		remark: "rewrote log(exp(a) + exp(b)) as graph.logaddexp",
		want:   []string{"graph.logaddexp", "graph.exp"},
		gone:   []string{"graph.add", "graph.log"},
	},
	// Look-alikes that compute something else.
	{
		name: "different x in numerator and denominator",
		src: `func.func @f(%x: tensor<4x16xf32>, %z: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %e = graph.exp %x : tensor<4x16xf32>
  %ez = graph.exp %z : tensor<4x16xf32>
  %s = graph.reduce_sum %ez {axes = [-1], keepdim = true} : (tensor<4x16xf32>) -> tensor<4x1xf32>
  %y = graph.div %e, %s : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}`,
	},
	{
		name: "sum without keepdim over the last axis broadcasts against the wrong axis",
		src: `func.func @f(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %e = graph.exp %x : tensor<16x16xf32>
  %s = graph.reduce_sum %e {axes = [1]} : (tensor<16x16xf32>) -> tensor<16xf32>
  %y = graph.div %e, %s : (tensor<16x16xf32>, tensor<16xf32>) -> tensor<16x16xf32>
  return %y : tensor<16x16xf32>
}`,
	},
	{
		name: "softmax over several axes",
		src: `func.func @f(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %e = graph.exp %x : tensor<4x16xf32>
  %s = graph.reduce_sum %e {axes = [0, 1], keepdim = true} : (tensor<4x16xf32>) -> tensor<1x1xf32>
  %y = graph.div %e, %s : (tensor<4x16xf32>, tensor<1x1xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}`,
	},
	{
		name: "log of a sum over several axes",
		src: `func.func @f(%x: tensor<4x16xf32>) -> tensor<f32> {
  %e = graph.exp %x : tensor<4x16xf32>
  %s = graph.reduce_sum %e {axes = [0, 1]} : (tensor<4x16xf32>) -> tensor<f32>
  %y = graph.log %s : tensor<f32>
  return %y : tensor<f32>
}`,
	},
	{
		name: "log of a max of exps",
		src: `func.func @f(%x: tensor<4x16xf32>) -> tensor<4xf32> {
  %e = graph.exp %x : tensor<4x16xf32>
  %s = graph.reduce_max %e {axes = [1]} : (tensor<4x16xf32>) -> tensor<4xf32>
  %y = graph.log %s : tensor<4xf32>
  return %y : tensor<4xf32>
}`,
	},
	{
		name: "log(exp(a) * exp(b))",
		src: `func.func @f(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %ea = graph.exp %a : tensor<8xf32>
  %eb = graph.exp %b : tensor<8xf32>
  %s = graph.mul %ea, %eb : tensor<8xf32>
  %y = graph.log %s : tensor<8xf32>
  return %y : tensor<8xf32>
}`,
	},
	{
		name: "log(exp(a) + b)",
		src: `func.func @f(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %ea = graph.exp %a : tensor<8xf32>
  %s = graph.add %ea, %b : tensor<8xf32>
  %y = graph.log %s : tensor<8xf32>
  return %y : tensor<8xf32>
}`,
	},
	{
		name: "log2(exp(a) + exp(b)) mixes bases",
		src: `func.func @f(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %ea = graph.exp %a : tensor<8xf32>
  %eb = graph.exp %b : tensor<8xf32>
  %s = graph.add %ea, %eb : tensor<8xf32>
  %y = graph.log2 %s : tensor<8xf32>
  return %y : tensor<8xf32>
}`,
	},
	{
		name: "log(2 + x)",
		src: `func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  %two = graph.constant dense<2.0> : tensor<f32>
  %s = graph.add %two, %x : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %y = graph.log %s : tensor<8xf32>
  return %y : tensor<8xf32>
}`,
	},
	{
		name: "log(1 + x) with a constant that is not a splat",
		src: `func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %s = graph.add %c, %x : tensor<2xf32>
  %y = graph.log %s : tensor<2xf32>
  return %y : tensor<2xf32>
}`,
	},
	{
		name: "log(1 + x) where the constant broadcasts x",
		src: `func.func @f(%x: tensor<f32>) -> tensor<4xf32> {
  %one = graph.constant dense<1.0> : tensor<4xf32>
  %s = graph.add %one, %x : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %y = graph.log %s : tensor<4xf32>
  return %y : tensor<4xf32>
}`,
	},
	{
		name: "exp(x) - 2",
		src: `func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  %e = graph.exp %x : tensor<8xf32>
  %two = graph.constant dense<2.0> : tensor<f32>
  %y = graph.sub %e, %two : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}`,
	},
	{
		name: "1 - exp(x)",
		src: `func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  %e = graph.exp %x : tensor<8xf32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %y = graph.sub %one, %e : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}`,
	},
	{
		name: "the stable form already",
		src: `func.func @f(%x: tensor<4x16xf32>) -> (tensor<4x1xf32>, tensor<4x16xf32>) {
  %m = graph.reduce_max %x {axes = [-1], keepdim = true} : (tensor<4x16xf32>) -> tensor<4x1xf32>
  %d = graph.sub %x, %m : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  %e = graph.exp %d : tensor<4x16xf32>
  %s = graph.reduce_sum %e {axes = [-1], keepdim = true} : (tensor<4x16xf32>) -> tensor<4x1xf32>
  %l = graph.log %s : tensor<4x1xf32>
  %y = graph.add %m, %l : tensor<4x1xf32>
  %p = graph.div %e, %s : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  return %y, %p : tensor<4x1xf32>, tensor<4x16xf32>
}`,
	},
	{
		name: "exp2(x) - 1 is not expm1",
		src: `func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  %e = graph.exp2 %x : tensor<8xf32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %y = graph.sub %e, %one : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}`,
	},
}

func TestNumericsPatterns(t *testing.T) {
	for _, c := range numPatternCases {
		t.Run(c.name, func(t *testing.T) {
			m := numParse(t, c.src)
			before := ir.Print(m.Operation, ir.PrintOptions{})
			diags := numRecognise(t, m)
			after := ir.Print(m.Operation, ir.PrintOptions{})
			if c.remark == "" {
				assert.Empty(t, diags, "a look-alike must not be rewritten")
				assert.Equal(t, before, after, "a look-alike must be left as it was")
				return
			}
			rewrites := max(c.rewrites, 1)
			require.Len(t, diags, rewrites, "one remark per rewrite: %v", numMessages(diags))
			for _, d := range diags {
				assert.Equal(t, ir.SevRemark, d.Severity)
			}
			assert.Contains(t, diags[rewrites-1].Message, "[numerics] "+c.remark)
			n := numOpCounts(m.Operation)
			for _, w := range c.want {
				assert.Positive(t, n[w], "%s missing after the rewrite:\n%s", w, after)
			}
			for _, g := range c.gone {
				assert.Zero(t, n[g], "%s left behind:\n%s", g, after)
			}
			// the rewritten op keeps the name of the value it replaces
			assert.Contains(t, after, "%y = graph.")
		})
	}
}

// TestNumericsPatternsRemarkOnlyWhenAsked checks that the rewrites happen
// whether or not the remarks are enabled, and report only when they are.
func TestNumericsPatternsRemarkOnlyWhenAsked(t *testing.T) {
	m := numParse(t, numPatternCases[0].src)
	ctx := &ir.PassContext{Diags: &ir.Diagnostics{}}
	ir.ApplyPatternsGreedily(m.Operation, NumericsPatterns(ctx), ir.GreedyConfig{})
	assert.Empty(t, ctx.Diags.List)
	assert.Equal(t, 1, numOpCounts(m.Operation)["graph.logaddexp"])
	// and without any context at all
	m = numParse(t, numPatternCases[0].src)
	ir.ApplyPatternsGreedily(m.Operation, NumericsPatterns(nil), ir.GreedyConfig{})
	assert.Equal(t, 1, numOpCounts(m.Operation)["graph.logaddexp"])
}

// ---------------------------------------------------------------------------
// Differential tests: the interpreter before and after the pass against the
// float64 reference of the op the formula means.

// numULPAt returns the spacing of kind k's values at magnitude a (clamped to
// the finite range).
func numULPAt(a float64, k ir.ElemKind) float64 {
	lim := numeric.MaxFinite(k)
	r := math.Min(numeric.RoundTo(math.Min(math.Abs(a), lim), k), lim)
	b, _ := numeric.ToBits(r, k)
	next, _ := numeric.FromBits(b+1, k)
	if math.IsNaN(next) || math.IsInf(next, 0) {
		prev, _ := numeric.FromBits(b-1, k)
		return r - prev
	}
	return next - r
}

// numElemError is the error of got against the float64 reference ref in ULPs
// of kind k: ULPs of the result when scale is 0, otherwise ULPs of
// max(|ref|, scale) — the error of a max-subtracted form is absolute in
// the magnitude of its inputs. A NaN or an infinity that the reference
// does not have is an infinite error; a reference beyond k's range is
// matched by the infinity it rounds to.
func numElemError(got, ref float64, k ir.ElemKind, scale float64) float64 {
	gn, rn := math.IsNaN(got), math.IsNaN(ref)
	switch {
	case gn && rn:
		return 0
	case gn || rn:
		return math.Inf(1)
	case got == ref || math.IsInf(got, 0) && got == numeric.RoundTo(ref, k):
		return 0
	case math.IsInf(got, 0) || math.IsInf(ref, 0):
		return math.Inf(1)
	}
	if scale == 0 {
		return numeric.ULPDiff(ref, got, k)
	}
	return math.Abs(got-ref) / numULPAt(math.Max(math.Abs(ref), scale), k)
}

// numErrScale gives the magnitude errors of result element i are measured
// against (0: the result's own ULPs).
type numErrScale func(ins []*eval.Tensor, ref *eval.Tensor, i int) float64

// numOperandScale is max |operand| at the element: for element-wise ops whose
// operands all have the result's shape.
func numOperandScale(ins []*eval.Tensor, _ *eval.Tensor, i int) float64 {
	s := 0.0
	for _, x := range ins {
		s = math.Max(s, math.Abs(x.Data[i]))
	}
	return s
}

// numRowScale is the magnitude of a row op's inputs at result element i of
// a 2-D input x reduced or normalised along its last axis: |max(row)| for
// logsumexp (one result per row), max(|x_i|, |max(row)|) for log_softmax
// (one result per element). Infinite and NaN elements give infinite or
// NaN results, which are compared exactly, and are skipped here.
func numRowScale(ins []*eval.Tensor, ref *eval.Tensor, i int) float64 {
	x := ins[0]
	rows, cols := int(x.Shape[0]), int(x.Shape[1])
	row := i / (len(ref.Data) / rows)
	m := math.Inf(-1)
	for _, v := range x.Data[row*cols : (row+1)*cols] {
		if !math.IsInf(v, 0) && !math.IsNaN(v) {
			m = math.Max(m, v)
		}
	}
	s := 0.0
	if !math.IsInf(m, 0) {
		s = math.Abs(m)
	}
	if len(ref.Data) == len(x.Data) && !math.IsInf(x.Data[i], 0) && !math.IsNaN(x.Data[i]) {
		s = math.Max(s, math.Abs(x.Data[i]))
	}
	return s
}

// numDiffCase is one row group of the legalization table: a naive formula (or
// an op the pass expands), the op it means, and how close the legalised
// form must come to that op's float64 value.
type numDiffCase struct {
	name     string
	params   string // argument list, $T standing for the element type
	result   string // result type
	naive    string // body defining %y: what the user wrote
	semantic string // body defining %y: what it means (the reference)
	kinds    []ir.ElemKind
	scale    numErrScale
	rowOp    bool                    // scale is numRowScale
	bound    map[ir.ElemKind]float64 // ULPs (of scale, see numElemError)
	small    bool                    // also inputs of magnitude 1e-3, where precision is lost
	// reference, when set, defines the result element-wise from the
	// first input instead of semantic (which then only gives the types)
	reference func(x float64, k ir.ElemKind) float64
}

const (
	numVecT = "tensor<2048x$T>"
	numRowT = "tensor<512x32x$T>"
)

var numFloatKinds = []ir.ElemKind{ir.F32, ir.F16, ir.BF16}

// The ULP bounds of docs/numerics.md. f16 and bf16 results are computed in
// f32 and rounded once, so they are within 1 ULP (0.5 for the rounding, and
// the f32 error is a small fraction of an f16 or bf16 ULP).
var (
	numElementwiseBound = map[ir.ElemKind]float64{ir.F32: 4, ir.F16: 1, ir.BF16: 1}
	numRowBound         = map[ir.ElemKind]float64{ir.F32: 4, ir.F16: 1, ir.BF16: 1}
	numSoftmaxBound     = map[ir.ElemKind]float64{ir.F32: 96, ir.F16: 1, ir.BF16: 1}
	numExactBound       = map[ir.ElemKind]float64{ir.F32: 0, ir.F16: 0, ir.BF16: 0, ir.UI8: 0, ir.I8: 0, ir.I32: 0, ir.F8E4M3FN: 1}
)

var numDiffCases = []numDiffCase{
	{
		name: "log(exp(a) + exp(b))", params: "%a: " + numVecT + ", %b: " + numVecT, result: numVecT,
		naive: `%ea = graph.exp %a : ` + numVecT + `
  %eb = graph.exp %b : ` + numVecT + `
  %s = graph.add %ea, %eb : ` + numVecT + `
  %y = graph.log %s : ` + numVecT,
		semantic: `%y = graph.logaddexp %a, %b : ` + numVecT,
		kinds:    numFloatKinds, scale: numOperandScale, bound: numElementwiseBound,
	},
	{
		name: "log2(exp2(a) + exp2(b))", params: "%a: " + numVecT + ", %b: " + numVecT, result: numVecT,
		naive: `%ea = graph.exp2 %a : ` + numVecT + `
  %eb = graph.exp2 %b : ` + numVecT + `
  %s = graph.add %ea, %eb : ` + numVecT + `
  %y = graph.log2 %s : ` + numVecT,
		semantic: `%y = graph.logaddexp2 %a, %b : ` + numVecT,
		kinds:    numFloatKinds, scale: numOperandScale, bound: numElementwiseBound,
	},
	{
		name: "log(reduce_sum(exp(x)))", params: "%x: " + numRowT, result: "tensor<512x$T>",
		naive: `%e = graph.exp %x : ` + numRowT + `
  %s = graph.reduce_sum %e {axes = [-1]} : (` + numRowT + `) -> tensor<512x$T>
  %y = graph.log %s : tensor<512x$T>`,
		semantic: `%y = graph.logsumexp %x : (` + numRowT + `) -> tensor<512x$T>`,
		kinds:    numFloatKinds, scale: numRowScale, rowOp: true, bound: numRowBound,
	},
	{
		name: "exp(x) / reduce_sum(exp(x))", params: "%x: " + numRowT, result: numRowT,
		naive: `%e = graph.exp %x : ` + numRowT + `
  %s = graph.reduce_sum %e {axes = [-1], keepdim = true} : (` + numRowT + `) -> tensor<512x1x$T>
  %y = graph.div %e, %s : (` + numRowT + `, tensor<512x1x$T>) -> ` + numRowT,
		semantic: `%y = graph.softmax %x : ` + numRowT,
		kinds:    numFloatKinds, bound: numSoftmaxBound,
	},
	{
		name: "log(softmax(x))", params: "%x: " + numRowT, result: numRowT,
		naive: `%p = graph.softmax %x : ` + numRowT + `
  %y = graph.log %p : ` + numRowT,
		semantic: `%y = graph.log_softmax %x : ` + numRowT,
		kinds:    numFloatKinds, scale: numRowScale, rowOp: true, bound: numRowBound,
	},
	{
		name: "log(exp(x) / reduce_sum(exp(x)))", params: "%x: " + numRowT, result: numRowT,
		naive: `%e = graph.exp %x : ` + numRowT + `
  %s = graph.reduce_sum %e {axes = [-1], keepdim = true} : (` + numRowT + `) -> tensor<512x1x$T>
  %p = graph.div %e, %s : (` + numRowT + `, tensor<512x1x$T>) -> ` + numRowT + `
  %y = graph.log %p : ` + numRowT,
		semantic: `%y = graph.log_softmax %x : ` + numRowT,
		kinds:    numFloatKinds, scale: numRowScale, rowOp: true, bound: numRowBound,
	},
	{
		name: "log(1 + x)", params: "%x: " + numVecT, result: numVecT,
		naive: `%one = graph.constant dense<1.0> : tensor<$T>
  %s = graph.add %one, %x : (tensor<$T>, ` + numVecT + `) -> ` + numVecT + `
  %y = graph.log %s : ` + numVecT,
		semantic: `%y = graph.log1p %x : ` + numVecT,
		kinds:    numFloatKinds, bound: numElementwiseBound, small: true,
	},
	{
		name: "exp(x) - 1", params: "%x: " + numVecT, result: numVecT,
		naive: `%e = graph.exp %x : ` + numVecT + `
  %one = graph.constant dense<1.0> : tensor<$T>
  %y = graph.sub %e, %one : (` + numVecT + `, tensor<$T>) -> ` + numVecT,
		semantic: `%y = graph.expm1 %x : ` + numVecT,
		kinds:    numFloatKinds, bound: numElementwiseBound, small: true,
	},
	// The composite ops themselves: before is the interpreter's own
	// evaluation of the op, after is the expansion.
	{
		name: "graph.logaddexp", params: "%a: " + numVecT + ", %b: " + numVecT, result: numVecT,
		naive: `%y = graph.logaddexp %a, %b : ` + numVecT, semantic: `%y = graph.logaddexp %a, %b : ` + numVecT,
		kinds: numFloatKinds, scale: numOperandScale, bound: numElementwiseBound,
	},
	{
		name: "graph.logsumexp {keepdim}", params: "%x: " + numRowT, result: "tensor<512x1x$T>",
		naive:    `%y = graph.logsumexp %x {keepdim = true} : (` + numRowT + `) -> tensor<512x1x$T>`,
		semantic: `%y = graph.logsumexp %x {keepdim = true} : (` + numRowT + `) -> tensor<512x1x$T>`,
		kinds:    numFloatKinds, scale: numRowScale, rowOp: true, bound: numRowBound,
	},
	{
		name: "graph.softmax", params: "%x: " + numRowT, result: numRowT,
		naive: `%y = graph.softmax %x : ` + numRowT, semantic: `%y = graph.softmax %x : ` + numRowT,
		kinds: numFloatKinds, bound: numSoftmaxBound,
	},
	{
		name: "graph.quantize -> ui8", params: "%x: " + numVecT, result: "tensor<2048xui8>",
		naive:    `%y = graph.quantize %x {scale = 0.1, zero_point = 128} : (` + numVecT + `) -> tensor<2048xui8>`,
		semantic: `%y = graph.quantize %x {scale = 0.1, zero_point = 128} : (` + numVecT + `) -> tensor<2048xui8>`,
		kinds:    numFloatKinds, bound: numExactBound,
	},
	{
		name: "graph.quantize -> i8 per channel", params: "%x: tensor<64x32x$T>, %s: tensor<32xf32>, %z: tensor<32xi32>", result: "tensor<64x32xi8>",
		naive:    `%y = graph.quantize %x, %s, %z {axis = 1} : (tensor<64x32x$T>, tensor<32xf32>, tensor<32xi32>) -> tensor<64x32xi8>`,
		semantic: `%y = graph.quantize %x, %s, %z {axis = 1} : (tensor<64x32x$T>, tensor<32xf32>, tensor<32xi32>) -> tensor<64x32xi8>`,
		kinds:    numFloatKinds, bound: numExactBound,
	},
	{
		name: "graph.quantize -> f8E4M3FN", params: "%x: " + numVecT, result: "tensor<2048xf8E4M3FN>",
		naive:    `%y = graph.quantize %x {scale = 0.25} : (` + numVecT + `) -> tensor<2048xf8E4M3FN>`,
		semantic: `%y = graph.quantize %x {scale = 0.25} : (` + numVecT + `) -> tensor<2048xf8E4M3FN>`,
		kinds:    numFloatKinds, bound: numExactBound,
	},
	{
		name: "graph.dequantize i8 -> $T", params: "%q: tensor<2048xi8>", result: numVecT,
		naive:    `%y = graph.dequantize %q {scale = 0.1, zero_point = -3} : (tensor<2048xi8>) -> ` + numVecT,
		semantic: `%y = graph.dequantize %q {scale = 0.1, zero_point = -3} : (tensor<2048xi8>) -> ` + numVecT,
		kinds:    numFloatKinds, bound: numElementwiseBound,
	},
	{
		name: "graph.cast (unchecked) -> ui8", params: "%x: " + numVecT, result: "tensor<2048xui8>",
		naive:    `%y = graph.cast %x : (` + numVecT + `) -> tensor<2048xui8>`,
		semantic: `%y = graph.cast %x : (` + numVecT + `) -> tensor<2048xui8>`,
		kinds:    numFloatKinds, bound: numExactBound, reference: numeric.SaturateInt,
	},
	{
		name: "graph.cast (unchecked) -> i8", params: "%x: " + numVecT, result: "tensor<2048xi8>",
		naive:    `%y = graph.cast %x : (` + numVecT + `) -> tensor<2048xi8>`,
		semantic: `%y = graph.cast %x : (` + numVecT + `) -> tensor<2048xi8>`,
		kinds:    numFloatKinds, bound: numExactBound, reference: numeric.SaturateInt,
	},
	{
		name: "graph.cast (unchecked) -> i32", params: "%x: " + numVecT, result: "tensor<2048xi32>",
		naive:    `%y = graph.cast %x : (` + numVecT + `) -> tensor<2048xi32>`,
		semantic: `%y = graph.cast %x : (` + numVecT + `) -> tensor<2048xi32>`,
		kinds:    numFloatKinds, bound: numExactBound, reference: numeric.SaturateInt,
	},
	{
		name: "graph.requantize i32 -> i8", params: "%q: tensor<2048xi32>", result: "tensor<2048xi8>",
		naive:    `%y = graph.requantize %q {in_scale = 0.013, in_zero_point = 7, scale = 0.1, zero_point = -5} : (tensor<2048xi32>) -> tensor<2048xi8>`,
		semantic: `%y = graph.requantize %q {in_scale = 0.013, in_zero_point = 7, scale = 0.1, zero_point = -5} : (tensor<2048xi32>) -> tensor<2048xi8>`,
		kinds:    []ir.ElemKind{ir.I32}, bound: numExactBound,
	},
}

// metricName says in the table what the errors are ULPs of: the result,
// or the largest magnitude among the result and the named inputs.
func (c numDiffCase) metricName() string {
	switch {
	case c.scale == nil:
		return "y"
	case c.rowOp && c.result == "tensor<512x$T>" || strings.Contains(c.result, "x1x"):
		return "y, row max"
	case c.rowOp:
		return "y, x, row max"
	}
	return "y, a, b"
}

// instantiate builds the text of @f for element type k.
func (c numDiffCase) instantiate(body string, k ir.ElemKind) string {
	src := "func.func @f(" + c.params + ") -> " + c.result + " {\n  " + body + "\n  return %y : " + c.result + "\n}\n"
	return strings.ReplaceAll(src, "$T", k.String())
}

// numTally counts the outputs that are non-finite where the reference is
// finite, and those further from it than the bound.
type numTally struct {
	n, nonFinite, wrong int
	maxErr              float64 // largest finite error
}

func (s *numTally) add(got, ref *eval.Tensor, ins []*eval.Tensor, scale numErrScale, bound float64) {
	k := got.Elem
	for i, r := range ref.Data {
		g := got.Data[i]
		sc := 0.0
		if scale != nil {
			sc = scale(ins, ref, i)
		}
		if bound == 0 || k.IsInt() {
			// exact ops: the reference rounded once to the result type
			r = numeric.RoundTo(r, k)
		}
		e := numElemError(g, r, k, sc)
		s.n++
		if rk := numeric.RoundTo(r, k); !math.IsNaN(rk) && !math.IsInf(rk, 0) && (math.IsNaN(g) || math.IsInf(g, 0)) {
			s.nonFinite++
		}
		if e > bound {
			s.wrong++
		}
		if !math.IsInf(e, 0) {
			s.maxErr = math.Max(s.maxErr, e)
		}
	}
}

func numPct(n, of int) string {
	if of == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(of))
}

// numTableRow is one line of the legalization table.
type numTableRow struct {
	name, kind, inputs, metric string
	before, after              numTally
	bound                      float64
}

func (r numTableRow) String() string {
	return fmt.Sprintf("| %-34s | %-5s | %-11s | %5d | %6s | %6s | %6s | %6s | %8.3g | %-13s | %4g |",
		r.name, r.kind, r.inputs, r.after.n,
		numPct(r.before.nonFinite, r.before.n), numPct(r.before.wrong, r.before.n),
		numPct(r.after.nonFinite, r.after.n), numPct(r.after.wrong, r.after.n), r.after.maxErr, r.metric, r.bound)
}

const numTableHeader = `| pattern / op (dtype: input)        | dtype | inputs      |     n | before non-finite | before wrong | after non-finite | after wrong | max err after | ULPs of       | bound |
|---|---|---|---|---|---|---|---|---|---|---|`

// numRun evaluates the only function of the module src on ins.
func numRun(t testing.TB, m ir.Module, ins []*eval.Tensor, opts eval.Options) *eval.Tensor {
	t.Helper()
	outs, err := eval.Run(numOnlyFunc(t, m), ins, opts)
	require.NoError(t, err)
	return outs[0]
}

// numDiffRows evaluates one case for element type k on every input set.
func numDiffRows(t testing.TB, c numDiffCase, k ir.ElemKind) []numTableRow {
	naiveSrc, semSrc := c.instantiate(c.naive, k), c.instantiate(c.semantic, k)
	naive, sem, legal := numParse(t, naiveSrc), numParse(t, semSrc), numParse(t, naiveSrc)
	numLegalize(t, legal, NumericsOptions{})
	legal.Walk(func(o *ir.Operation) bool {
		assert.False(t, IsNumericsComposite(o), "%s left after legalize-numerics", o.Name())
		return true
	})
	fn := numOnlyFunc(t, sem)
	type inputSet struct {
		name string
		ins  []*eval.Tensor
	}
	var sets []inputSet
	for seed := int64(1); seed <= 2; seed++ {
		r, err := eval.RandomInputs(fn, seed, 100, 16)
		require.NoError(t, err)
		x, err := eval.ExtremeInputs(fn, seed)
		require.NoError(t, err)
		sets = append(sets, inputSet{"random x100", r}, inputSet{"extreme", x})
		if c.small {
			s, err := eval.RandomInputs(fn, seed, 1e-3, 16)
			require.NoError(t, err)
			sets = append(sets, inputSet{"random 1e-3", s})
		}
	}
	outKind := k
	if ek, ok := ir.ElemOf(fn.Type().Results[0]); ok {
		outKind = ek.Kind
	}
	bound := c.bound[outKind]
	var rows []numTableRow
	byName := map[string]int{}
	for _, s := range sets {
		ref := numRun(t, sem, s.ins, eval.Options{F64: true})
		if c.reference != nil {
			for i, x := range s.ins[0].Data {
				ref.Data[i] = c.reference(x, ref.Elem)
			}
		}
		before := numRun(t, naive, s.ins, eval.Options{})
		after := numRun(t, legal, s.ins, eval.Options{})
		i, seen := byName[s.name]
		if !seen {
			i = len(rows)
			byName[s.name] = i
			rows = append(rows, numTableRow{name: strings.ReplaceAll(c.name, "$T", k.String()), kind: k.String(), inputs: s.name, metric: c.metricName(), bound: bound})
		}
		rows[i].before.add(before, ref, s.ins, c.scale, bound)
		rows[i].after.add(after, ref, s.ins, c.scale, bound)
	}
	return rows
}

var (
	numTableOnce sync.Once
	numTableRows []numTableRow
)

// numLegalizationTable evaluates every case once per test binary.
func numLegalizationTable(t testing.TB) []numTableRow {
	numTableOnce.Do(func() {
		for _, c := range numDiffCases {
			for _, k := range c.kinds {
				numTableRows = append(numTableRows, numDiffRows(t, c, k)...)
			}
		}
	})
	require.NotEmpty(t, numTableRows)
	return numTableRows
}

// TestLegalizationDifferential holds every legalised result to its bound
// on random inputs of magnitude 100 and on extreme inputs: no output is
// non-finite where the reference is finite, none is further away than the
// bound.
func TestLegalizationDifferential(t *testing.T) {
	for _, r := range numLegalizationTable(t) {
		assert.Zero(t, r.after.wrong, "%s (%s, %s): %d of %d outputs beyond %g ULP (max %g)", r.name, r.kind, r.inputs, r.after.wrong, r.after.n, r.bound, r.after.maxErr)
		assert.Zero(t, r.after.nonFinite, "%s (%s, %s): non-finite outputs", r.name, r.kind, r.inputs)
	}
}

// TestPrintLegalizationTable prints the table of docs/numerics.md:
//
//	go test ./passes -run TestPrintLegalizationTable -v
func TestPrintLegalizationTable(t *testing.T) {
	rows := numLegalizationTable(t)
	var sb strings.Builder
	sb.WriteString("\n" + numTableHeader + "\n")
	for _, r := range rows {
		sb.WriteString(r.String() + "\n")
	}
	t.Log(sb.String())
}

// TestLegalizeNumericsIdempotent runs the pass on its own output: nothing
// changes and nothing is reported, whatever the first run expanded.
func TestLegalizeNumericsIdempotent(t *testing.T) {
	var srcs []string
	for _, c := range numPatternCases {
		srcs = append(srcs, c.src)
	}
	for _, c := range numDiffCases {
		srcs = append(srcs, c.instantiate(c.naive, ir.BF16), c.instantiate(c.semantic, ir.F32))
	}
	for _, src := range srcs {
		m := numParse(t, src)
		numLegalize(t, m, NumericsOptions{})
		once := ir.Print(m.Operation, ir.PrintOptions{})
		diags := numLegalize(t, m, NumericsOptions{})
		assert.Empty(t, numMessages(diags), "second run of:\n%s", src)
		assert.Equal(t, once, ir.Print(m.Operation, ir.PrintOptions{}), "second run of:\n%s", src)
	}
}

// TestLegalizeNumericsCasts checks the warnings of step 2 and
// keep-unchecked-casts.
func TestLegalizeNumericsCasts(t *testing.T) {
	src := `func.func @f(%x: tensor<8xf32>, %h: tensor<8xf16>) -> (tensor<8xui8>, tensor<8xi32>, tensor<8xf16>) {
  %a = graph.cast %x : (tensor<8xf32>) -> tensor<8xui8>
  %b = graph.cast %h : (tensor<8xf16>) -> tensor<8xi32>
  %c = graph.cast %x : (tensor<8xf32>) -> tensor<8xf16>
  return %a, %b, %c : tensor<8xui8>, tensor<8xi32>, tensor<8xf16>
}`
	m := numParse(t, src)
	diags := numLegalize(t, m, NumericsOptions{})
	assert.Equal(t, []string{
		"warning: unchecked cast from f32 to ui8 made saturating: NaN gives 0 and values outside [0, 255] clamp to the range (keep-unchecked-casts keeps it)",
		"warning: unchecked cast from f16 to i32 made saturating: NaN gives 0 and values outside [-2147483648, 2147483647] clamp to the range (keep-unchecked-casts keeps it)",
	}, numMessages(diags))
	assert.Equal(t, 2, diags[0].Loc.Line)
	assert.Equal(t, 3, diags[1].Loc.Line)
	n := numOpCounts(m.Operation)
	assert.Equal(t, 2, n["graph.clamp"])
	assert.Equal(t, 4, n["graph.cast"], "f16 -> f32, the two in-range casts, and the float one")
	m.Walk(func(o *ir.Operation) bool {
		if isUncheckedCast(o) {
			t.Errorf("unchecked cast left: %s", o)
		}
		return true
	})

	kept := numParse(t, src)
	assert.Empty(t, numLegalize(t, kept, NumericsOptions{KeepUncheckedCasts: true}))
	assert.Equal(t, ir.Print(numParse(t, src).Operation, ir.PrintOptions{}), ir.Print(kept.Operation, ir.PrintOptions{}), "keep-unchecked-casts changes nothing here")
}
