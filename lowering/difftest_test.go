package lowering

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/dialects/graph"
	geval "github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/dialects/graph/randprog"
	"github.com/tensorforge/tensorforge/dialects/loop"
	leval "github.com/tensorforge/tensorforge/dialects/loop/eval"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
	"github.com/tensorforge/tensorforge/ir/target"
	"github.com/tensorforge/tensorforge/parser"
)

// The differential tests run a graph program in the graph interpreter and
// its lowering in the loop interpreter on the same inputs and compare the
// results, element by element.
//
// The graph-level passes of a case's pipeline (those before
// lower-to-loops) run first, and the graph interpreter evaluates their
// result, so that only lowering's own differences count. Every case runs
// in both rounding modes: the default (f16, bf16 and f8 values stay f32
// between the ops of a fused kernel) and exact rounding, the graph
// interpreter in the same mode as the lowering.
//
// The bound: element-wise kernels compute exactly what the graph
// interpreter computes (every op rounded, in the mode's way, in the same
// order), so they agree to the bit (0 ULP). Row reductions sum W lanes separately
// and then across lanes, so a sum differs from the sequential one by a few
// roundings: a result is accepted within sumULPs ULPs of its type (per
// 1024 elements of the longest row), or within as many ULPs of the largest
// magnitude in its tensor (a sum that cancels to nearly zero has no
// relative accuracy in either order).
//
// The heaviest of them (the lit inputs, the random programs, the split
// and resident schedules) run in parallel with each other: they share no
// state, and `go test -race` holds them to it.

// sumULPs bounds the difference of results that depend on a sum over rows
// of up to 1024 elements; longer rows scale it (8 ULPs per 1024 elements:
// the two orders' rounding errors grow with the row).
const sumULPs = 8

// longestRow is the largest static last extent of fn's arguments.
func longestRow(fn ir.Func) int64 {
	n := int64(0)
	for _, a := range fn.Args() {
		if s := shapeOf(a); len(s) > 0 {
			n = max(n, s[len(s)-1])
		}
	}
	return n
}

// diffCase is one differential test.
type diffCase struct {
	name     string
	src      string
	pipeline string // passes before the comparison; default lower-to-loops,sram-alloc
	target   string
	// exact: 0 ULP expected everywhere.
	exact bool
	// noExtreme skips the extreme-input run (integer division by zero, ...).
	noExtreme bool
	dyn       int64 // extent of `?` dims in random inputs
	// unfitOK skips input sets the graph interpreter rejects (extreme
	// inputs give every `?` 16 elements, which a program may not allow).
	unfitOK bool
	// inputs adds input sets of its own to the random and extreme ones:
	// it turns random inputs of fn into another set.
	inputs func(fn ir.Func, random []*geval.Tensor) []*geval.Tensor
}

// lowerText parses src, runs the pipeline for the target and verifies the
// result.
func lowerText(t *testing.T, src, pipeline, tgt string) ir.Module {
	t.Helper()
	m, err := parser.Parse("input.tir", src)
	require.NoError(t, err)
	require.NoError(t, ir.Verify(m.Operation))
	runPipeline(t, m, pipeline, tgt)
	return m
}

func runPipeline(t *testing.T, m ir.Module, pipeline, tgt string) {
	t.Helper()
	runPipelineMode(t, m, pipeline, tgt, false)
}

// runPipelineMode is runPipeline, with exact rounding or not.
func runPipelineMode(t *testing.T, m ir.Module, pipeline, tgt string, exact bool) {
	t.Helper()
	if pipeline == "" {
		pipeline = "lower-to-loops,sram-alloc"
	}
	if tgt == "" {
		tgt = "cpu"
	}
	tg, ok := testTargets[tgt]
	if !ok {
		var err error
		tg, err = target.Lookup(tgt)
		require.NoError(t, err)
	}
	p, err := ir.ParsePipeline(pipeline)
	require.NoError(t, err)
	ctx := &ir.PassContext{Diags: &ir.Diagnostics{}, Target: tg, ExactRounding: exact}
	pm := &ir.PassManager{Pipeline: p, VerifyEach: true}
	err = pm.Run(m, ctx)
	if ie, ok := err.(*ir.InternalError); ok {
		require.NoError(t, err, "%v\n%s", ie.Diags, ir.Print(m.Operation, ir.PrintOptions{}))
	}
	require.NoError(t, err)
}

// runDiff compares the graph and loop interpreters on every function of
// c.src, with random and extreme inputs.
func runDiff(t *testing.T, c diffCase) {
	t.Helper()
	runDiffOn(t, c, !c.noExtreme)
}

// splitAtLowering splits a pipeline into its graph-level passes (before
// lower-to-loops) and the rest.
func splitAtLowering(t *testing.T, pipeline string) (graphPart, rest string) {
	t.Helper()
	if pipeline == "" {
		pipeline = "lower-to-loops,sram-alloc"
	}
	p, err := ir.ParsePipeline(pipeline)
	require.NoError(t, err)
	var g, r []string
	for _, e := range p {
		if e.Info.Name == "lower-to-loops" || len(r) > 0 {
			r = append(r, e.Spec())
		} else {
			g = append(g, e.Spec())
		}
	}
	return strings.Join(g, ","), strings.Join(r, ",")
}

// runDiffOn is runDiff, with extreme inputs or not, in both rounding modes.
func runDiffOn(t *testing.T, c diffCase, extreme bool) {
	t.Helper()
	for _, exact := range []bool{false, true} {
		runDiffMode(t, c, extreme, exact)
	}
}

// runDiffMode is runDiffOn in one rounding mode.
func runDiffMode(t *testing.T, c diffCase, extreme, exactRounding bool) {
	t.Helper()
	graphPart, rest := splitAtLowering(t, c.pipeline)
	graphMod, err := parser.Parse("input.tir", c.src)
	require.NoError(t, err)
	require.NoError(t, ir.Verify(graphMod.Operation))
	if graphPart != "" {
		runPipelineMode(t, graphMod, graphPart, c.target, exactRounding)
	}
	lowered, err := parser.Parse("input.tir", ir.Print(graphMod.Operation, ir.PrintOptions{}))
	require.NoError(t, err)
	if rest != "" {
		runPipelineMode(t, lowered, rest, c.target, exactRounding)
	}
	mode := "default rounding"
	if exactRounding {
		mode = "exact rounding"
	}
	dyn := c.dyn
	if dyn == 0 {
		dyn = 5
	}
	for _, fn := range graphMod.Funcs() {
		if !isGraphFunc(fn) {
			continue // loop IR written by hand, lowered as it is
		}
		bound := float64(sumULPs * max(1, longestRow(fn)/1024))
		var inputSets [][]*geval.Tensor
		for seed := int64(1); seed <= 2; seed++ {
			in, err := geval.RandomInputs(fn, seed, 1.0, dyn)
			require.NoError(t, err)
			inputSets = append(inputSets, in)
		}
		if extreme {
			in, err := geval.ExtremeInputs(fn, min(dyn, 3))
			require.NoError(t, err)
			inputSets = append(inputSets, in)
		}
		if c.inputs != nil {
			inputSets = append(inputSets, c.inputs(fn, cloneTensors(inputSets[0])))
		}
		// the arguments updated in place (graph.index_copy) are compared
		// after the update, as more results
		var updated []int
		for j, u := range graph.UpdatedArgs(fn) {
			if u {
				updated = append(updated, j)
			}
		}
		for i, in := range inputSets {
			gin, lin := cloneTensors(in), cloneTensors(in)
			want, err := geval.Run(fn, gin, geval.Options{ExactRounding: exactRounding})
			if err != nil && c.unfitOK {
				continue
			}
			require.NoError(t, err, "graph interpreter, @%s input set %d", fn.SymName(), i)
			got, err := leval.Run(lowered, fn.SymName(), lin)
			for _, j := range updated {
				want, got = append(want, gin[j]), append(got, lin[j])
			}
			if err != nil {
				// the module printed only for the failure: printing it
				// for every run was a quarter of the test's time
				require.NoError(t, err, "loop interpreter, @%s input set %d\n%s", fn.SymName(), i, ir.Print(lowered.Operation, ir.PrintOptions{}))
			}
			require.Len(t, got, len(want))
			var ref []*geval.Tensor // the sums taken backwards, when a result needs them
			for r := range want {
				what := fmt.Sprintf("%s (%s): @%s result %d, input set %d", c.name, mode, fn.SymName(), r, i)
				if c.exact || len(mismatches(want[r], got[r], false, bound, nil)) == 0 || r >= len(want)-len(updated) {
					compareTensors(t, what, want[r], got[r], c.exact, bound, nil)
					continue
				}
				if ref == nil {
					ref, err = geval.Run(fn, cloneTensors(in), geval.Options{ExactRounding: exactRounding, ReverseSums: true})
					require.NoError(t, err, "graph interpreter with its sums reversed, @%s input set %d", fn.SymName(), i)
				}
				compareTensors(t, what, want[r], got[r], false, bound, ref[r])
			}
		}
	}
}

func cloneTensors(ts []*geval.Tensor) []*geval.Tensor {
	out := make([]*geval.Tensor, len(ts))
	for i, t := range ts {
		out[i] = t.Clone()
	}
	return out
}

// compareTensors checks got against want within the bound of the file
// comment; with ref, the program evaluated with its sums reversed, also
// within their dependence on order (see mismatches).
func compareTensors(t *testing.T, what string, want, got *geval.Tensor, exact bool, bound float64, ref *geval.Tensor) {
	t.Helper()
	require.Equal(t, fmt.Sprint(want.Shape), fmt.Sprint(got.Shape), what)
	require.Equal(t, want.Elem, got.Elem, what)
	bad := mismatches(want, got, exact, bound, ref)
	require.Empty(t, bad, "%s: %s", what, strings.Join(bad, "; "))
}

// illConditioned is how many times the difference between two orders of
// the sums (forwards and backwards) a third order (lanes) may differ from
// the first.
const illConditioned = 4

// mismatches lists (up to 8 of) the elements of got beyond the bound of the
// file comment. With ref, an element is also accepted within
// illConditioned times the distance between want and ref, the program's
// sums taken forwards and backwards: a sum of extreme inputs that cancels
// (1e30 + 5.9 + 3.7 - 1e30 + ...) keeps different small terms in each order,
// which no bound in ULPs of the result covers. (float64 would not show
// it: it absorbs the same terms.)
func mismatches(want, got *geval.Tensor, exact bool, bound float64, ref *geval.Tensor) []string {
	scale := 0.0
	for _, v := range want.Data {
		if !math.IsInf(v, 0) && !math.IsNaN(v) {
			scale = max(scale, math.Abs(v))
		}
	}
	var bad []string
	for i := range want.Data {
		w, g := want.Data[i], got.Data[i]
		d := numeric.ULPDiff(w, g, want.Elem)
		if d == 0 {
			continue
		}
		if !exact && (d <= bound || math.Abs(w-g) <= bound*ulpAt(scale, want.Elem)) {
			continue
		}
		if !exact && ref != nil && len(ref.Data) == len(want.Data) && math.Abs(w-g) <= illConditioned*math.Abs(w-ref.Data[i]) {
			continue
		}
		if len(bad) < 8 {
			bad = append(bad, fmt.Sprintf("[%d] want %v got %v (%v ULP)", i, w, g, d))
		}
	}
	return bad
}

// ulpAt is one ULP of kind k at magnitude x.
func ulpAt(x float64, k ir.ElemKind) float64 {
	if k.IsInt() {
		return 1
	}
	up := math.Nextafter(x, math.Inf(1))
	if k == ir.F64 {
		return up - x
	}
	for s := max(x*1e-9, math.SmallestNonzeroFloat64); ; s *= 2 {
		if r := numeric.RoundTo(x+s, k); r != numeric.RoundTo(x, k) {
			return r - numeric.RoundTo(x, k)
		}
		if s > 1e300 {
			return math.Inf(1)
		}
	}
}

func TestDiffElementwise(t *testing.T) {
	runDiff(t, diffCase{name: "add-exp", exact: true, src: `
func.func @f(%x: tensor<?x64xbf16>, %w: tensor<64xbf16>) -> tensor<?x64xbf16> {
  %a = graph.add %x, %w : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  %b = graph.exp %a : tensor<?x64xbf16>
  return %b : tensor<?x64xbf16>
}`})
	// a value computed from a rank-0 input, broadcast as a view into a
	// vectorised kernel: the view scope takes it from the row scope, not
	// from its parent (the vector column scope), and splats it once
	runDiff(t, diffCase{name: "broadcast-computed-scalar", pipeline: "fuse,lower-to-loops,sram-alloc", src: `
func.func @f(%x: tensor<bf16>) -> tensor<2xbf16> {
  %s = graph.sin %x : tensor<bf16>
  %b = graph.broadcast_to %s : (tensor<bf16>) -> tensor<2xbf16>
  return %b : tensor<2xbf16>
}
func.func @g(%x: tensor<f32>, %y: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %e = graph.exp %x : tensor<f32>
  %d = graph.broadcast_to %e : (tensor<f32>) -> tensor<4x2xf32>
  %z = graph.add %d, %y : tensor<4x2xf32>
  return %z : tensor<4x2xf32>
}`})
}

func TestDiffKernels(t *testing.T) {
	cases := []diffCase{
		{name: "reduce-last", src: `
func.func @f(%x: tensor<?x40xf32>) -> (tensor<?xf32>, tensor<?x1xf32>, tensor<?xf32>) {
  %s = graph.reduce_sum %x {axes = [-1]} : (tensor<?x40xf32>) -> tensor<?xf32>
  %m = graph.reduce_max %x {axes = [1], keepdim = true} : (tensor<?x40xf32>) -> tensor<?x1xf32>
  %n = graph.reduce_min %x {axes = [1]} : (tensor<?x40xf32>) -> tensor<?xf32>
  return %s, %m, %n : tensor<?xf32>, tensor<?x1xf32>, tensor<?xf32>
}`},
		{name: "dynamic-last", exact: true, src: `
func.func @f(%x: tensor<3x?xf32>, %y: tensor<3x?xf32>, %c: tensor<3x1xf32>) -> tensor<3x?xf32> {
  %a = graph.mul %x, %y : tensor<3x?xf32>
  %b = graph.add %a, %c : (tensor<3x?xf32>, tensor<3x1xf32>) -> tensor<3x?xf32>
  %z = graph.tanh %b : tensor<3x?xf32>
  return %z : tensor<3x?xf32>
}`, dyn: 21},
		{name: "broadcast-mix", exact: true, src: `
func.func @f(%x: tensor<2x3x8xf16>, %s: tensor<f16>, %r: tensor<3x1xf16>) -> tensor<2x3x8xf16> {
  %a = graph.sub %x, %s : (tensor<2x3x8xf16>, tensor<f16>) -> tensor<2x3x8xf16>
  %b = graph.max %a, %r : (tensor<2x3x8xf16>, tensor<3x1xf16>) -> tensor<2x3x8xf16>
  %c = graph.constant dense<0.5> : tensor<f16>
  %d = graph.mul %b, %c : (tensor<2x3x8xf16>, tensor<f16>) -> tensor<2x3x8xf16>
  return %d : tensor<2x3x8xf16>
}`},
		{name: "cmp-select-cast", exact: true, src: `
func.func @f(%x: tensor<4x16xbf16>, %y: tensor<4x16xbf16>) -> (tensor<4x16xbf16>, tensor<4x16xi32>, tensor<4x16xi1>) {
  %c = graph.cmp %x, %y {predicate = "lt"} : (tensor<4x16xbf16>, tensor<4x16xbf16>) -> tensor<4x16xi1>
  %s = graph.select %c, %x, %y : (tensor<4x16xi1>, tensor<4x16xbf16>, tensor<4x16xbf16>) -> tensor<4x16xbf16>
  %i = graph.cast %s : (tensor<4x16xbf16>) -> tensor<4x16xi32>
  %k = graph.clamp %s {min = -0.5, max = 0.5} : tensor<4x16xbf16>
  return %k, %i, %c : tensor<4x16xbf16>, tensor<4x16xi32>, tensor<4x16xi1>
}`},
		{name: "ints", exact: true, noExtreme: true, src: `
func.func @f(%x: tensor<5x8xi32>, %y: tensor<8xi32>) -> (tensor<5x8xi32>, tensor<5xi32>) {
  %a = graph.add %x, %y : (tensor<5x8xi32>, tensor<8xi32>) -> tensor<5x8xi32>
  %b = graph.mul %a, %a : tensor<5x8xi32>
  %n = graph.neg %b : tensor<5x8xi32>
  %s = graph.reduce_sum %n {axes = [1]} : (tensor<5x8xi32>) -> tensor<5xi32>
  return %n, %s : tensor<5x8xi32>, tensor<5xi32>
}`},
		{name: "unary-all", exact: true, src: `
func.func @f(%x: tensor<6x8xf32>) -> tensor<6x8xf32> {
  %a = graph.sigmoid %x : tensor<6x8xf32>
  %b = graph.silu %a : tensor<6x8xf32>
  %c = graph.gelu %b : tensor<6x8xf32>
  %d = graph.gelu %c {approximate = "tanh"} : tensor<6x8xf32>
  %e = graph.log1p %d : tensor<6x8xf32>
  %f = graph.expm1 %e : tensor<6x8xf32>
  %g = graph.rsqrt %f : tensor<6x8xf32>
  %h = graph.round %g : tensor<6x8xf32>
  %i = graph.relu %h : tensor<6x8xf32>
  %j = graph.pow %i, %x : tensor<6x8xf32>
  return %j : tensor<6x8xf32>
}`},
		{name: "scalar", exact: true, src: `
func.func @f(%x: tensor<f32>, %y: tensor<f32>) -> tensor<f32> {
  %a = graph.div %x, %y : tensor<f32>
  return %a : tensor<f32>
}`},
		{name: "passthrough", exact: true, src: `
func.func @f(%x: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) {
  %a = graph.abs %x : tensor<?x8xf32>
  return %x, %a, %a : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runDiff(t, c) })
	}
}

func TestDiffGeneric(t *testing.T) {
	cases := []diffCase{
		{name: "transpose", exact: true, src: `
func.func @f(%x: tensor<?x3x4xf32>) -> tensor<4x?x3xf32> {
  %t = graph.transpose %x {perm = [2, 0, 1]} : (tensor<?x3x4xf32>) -> tensor<4x?x3xf32>
  return %t : tensor<4x?x3xf32>
}`},
		{name: "slice-concat", exact: true, src: `
func.func @f(%x: tensor<6x8xbf16>, %y: tensor<6x3xbf16>) -> (tensor<2x5xbf16>, tensor<6x11xbf16>, tensor<12x8xbf16>) {
  %s = graph.slice %x {offsets = [1, 2], sizes = [2, 5]} : (tensor<6x8xbf16>) -> tensor<2x5xbf16>
  %c = graph.concat %x, %y {axis = 1} : (tensor<6x8xbf16>, tensor<6x3xbf16>) -> tensor<6x11xbf16>
  %d = graph.concat %x, %x {axis = 0} : (tensor<6x8xbf16>, tensor<6x8xbf16>) -> tensor<12x8xbf16>
  return %s, %c, %d : tensor<2x5xbf16>, tensor<6x11xbf16>, tensor<12x8xbf16>
}`},
		{name: "broadcast-reshape", exact: true, src: `
func.func @f(%x: tensor<3x1xf32>, %y: tensor<?x6xf32>) -> (tensor<2x3x4xf32>, tensor<?x3x2xf32>) {
  %b = graph.broadcast_to %x : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
  %r = graph.reshape %y : (tensor<?x6xf32>) -> tensor<?x3x2xf32>
  return %b, %r : tensor<2x3x4xf32>, tensor<?x3x2xf32>
}`},
		{name: "matmul", exact: true, src: `
func.func @f(%a: tensor<2x?x8xbf16>, %b: tensor<8x5xbf16>, %c: tensor<5x8xbf16>) -> (tensor<2x?x5xbf16>, tensor<2x?x5xf32>) {
  %m = graph.matmul %a, %b : (tensor<2x?x8xbf16>, tensor<8x5xbf16>) -> tensor<2x?x5xbf16>
  %af = graph.cast %a : (tensor<2x?x8xbf16>) -> tensor<2x?x8xf32>
  %cf = graph.cast %c : (tensor<5x8xbf16>) -> tensor<5x8xf32>
  %n = graph.matmul %af, %cf {transpose_b = true} : (tensor<2x?x8xf32>, tensor<5x8xf32>) -> tensor<2x?x5xf32>
  return %m, %n : tensor<2x?x5xbf16>, tensor<2x?x5xf32>
}`},
		{name: "reduce-other-axes", exact: true, src: `
func.func @f(%x: tensor<4x?x6xf32>, %y: tensor<3x5xf32>) -> (tensor<?x6xf32>, tensor<1x?x1xf32>, tensor<f32>) {
  %a = graph.reduce_sum %x {axes = [0]} : (tensor<4x?x6xf32>) -> tensor<?x6xf32>
  %b = graph.reduce_max %x {axes = [0, 2], keepdim = true} : (tensor<4x?x6xf32>) -> tensor<1x?x1xf32>
  %c = graph.reduce_min %y {axes = [0, 1]} : (tensor<3x5xf32>) -> tensor<f32>
  return %a, %b, %c : tensor<?x6xf32>, tensor<1x?x1xf32>, tensor<f32>
}`},
		{name: "constants", exact: true, src: `
func.func @f(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<2x3xf32>) {
  %c = graph.constant dense<[1.5, -2.0, 3.25]> : tensor<3xf32>
  %s = graph.constant dense<2.0> : tensor<2x3xf32>
  %a = graph.mul %x, %c : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %a, %c, %s : tensor<2x3xf32>, tensor<3xf32>, tensor<2x3xf32>
}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runDiff(t, c) })
	}
}

// shrinkShapes makes a model-sized program small by text substitution:
// every integer of 1024 or more that is a multiple of 512 (4096, 8192,
// 28672, 67108864...) becomes a small extent, the same one wherever it
// appears, so shapes that agree still agree. Float literals (a digit run
// next to a '.') are left alone.
func shrinkShapes(text string) string {
	var sb strings.Builder
	for i := 0; i < len(text); {
		j := i
		for j < len(text) && text[j] >= '0' && text[j] <= '9' {
			j++
		}
		if j == i {
			sb.WriteByte(text[i])
			i++
			continue
		}
		num := text[i:j]
		n, err := strconv.ParseInt(num, 10, 64)
		float := (i > 0 && text[i-1] == '.') || (j < len(text) && (text[j] == '.' || text[j] == 'e'))
		if err == nil && !float && n >= 1024 && n%512 == 0 {
			small := n / 512
			for small > 64 {
				small /= 8
			}
			num = strconv.FormatInt(small+2, 10) // 4096 -> 10, 8192 -> 18: distinct, not powers of two
		}
		sb.WriteString(num)
		i = j
	}
	return sb.String()
}

// The examples of the repository, shrunk, with and without fusion.
func TestDiffExamples(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../examples/*.tir")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		text := shrinkShapes(string(src))
		for _, pipeline := range []string{"lower-to-loops,sram-alloc", "fuse,lower-to-loops,sram-alloc", "decompose,fuse,lower-to-loops,sram-alloc"} {
			t.Run(filepath.Base(f)+"/"+pipeline, func(t *testing.T) {
				runDiff(t, diffCase{name: filepath.Base(f), src: text, pipeline: pipeline})
			})
		}
	}
}

// Row kernels as fuse writes them, with each schedule.
func TestDiffRowKernels(t *testing.T) {
	body := `
func.func @f(%x: tensor<?x24xbf16>, %b: tensor<?xf32>, %w: tensor<24xbf16>) -> (tensor<?x24xbf16>, tensor<?xf32>, tensor<?x1xf32>) {
  %y, %s, %m = graph.fused %x, %b, %w {kind = "row", row_len = 24, schedule = "SCHEDULE"} {
  ^bb0(%a: tensor<?x24xbf16>, %c: tensor<?xf32>, %v: tensor<24xbf16>):
    %f = graph.cast %a : (tensor<?x24xbf16>) -> tensor<?x24xf32>
    %sum = graph.reduce_sum %f {axes = [-1]} : (tensor<?x24xf32>) -> tensor<?xf32>
    %mx = graph.reduce_max %f {axes = [-1], keepdim = true} : (tensor<?x24xf32>) -> tensor<?x1xf32>
    %t = graph.add %sum, %c : tensor<?xf32>
    %d = graph.sub %f, %mx : (tensor<?x24xf32>, tensor<?x1xf32>) -> tensor<?x24xf32>
    %e = graph.exp %d : tensor<?x24xf32>
    %z = graph.reduce_sum %e {axes = [-1], keepdim = true} : (tensor<?x24xf32>) -> tensor<?x1xf32>
    %g = graph.div %e, %z : (tensor<?x24xf32>, tensor<?x1xf32>) -> tensor<?x24xf32>
    %vf = graph.cast %v : (tensor<24xbf16>) -> tensor<24xf32>
    %h = graph.mul %g, %vf : (tensor<?x24xf32>, tensor<24xf32>) -> tensor<?x24xf32>
    %o = graph.cast %h : (tensor<?x24xf32>) -> tensor<?x24xbf16>
    graph.yield %o, %t, %mx : tensor<?x24xbf16>, tensor<?xf32>, tensor<?x1xf32>
  } : (tensor<?x24xbf16>, tensor<?xf32>, tensor<24xbf16>) -> (tensor<?x24xbf16>, tensor<?xf32>, tensor<?x1xf32>)
  return %y, %s, %m : tensor<?x24xbf16>, tensor<?xf32>, tensor<?x1xf32>
}`
	for _, sched := range []string{"one-pass", "two-pass"} {
		t.Run(sched, func(t *testing.T) {
			runDiff(t, diffCase{name: sched, src: strings.ReplaceAll(body, "SCHEDULE", sched)})
		})
	}
	t.Run("online-schedule-not-online", func(t *testing.T) {
		m, err := parser.Parse("input.tir", strings.ReplaceAll(body, "SCHEDULE", "online"))
		require.NoError(t, err)
		p, err := ir.ParsePipeline("lower-to-loops")
		require.NoError(t, err)
		tg, _ := target.Lookup("cpu")
		err = (&ir.PassManager{Pipeline: p}).Run(m, &ir.PassContext{Diags: &ir.Diagnostics{}, Target: tg})
		require.ErrorContains(t, err, "input.tir:3:3:")
		require.ErrorContains(t, err, "has schedule 'online', but its first two phases are not a max of a row")

		m, err = parser.Parse("input.tir", strings.ReplaceAll(body, "SCHEDULE", "three-pass"))
		require.NoError(t, err)
		err = (&ir.PassManager{Pipeline: p}).Run(m, &ir.PassContext{Diags: &ir.Diagnostics{}, Target: tg})
		require.ErrorContains(t, err, "input.tir:3:3:")
		require.ErrorContains(t, err, "has schedule 'three-pass'; expected 'one-pass', 'two-pass', 'cached' or 'online'")
	})
	t.Run("odd-rows", func(t *testing.T) {
		// a row of 7 takes no vector: scalar loops and scalar accumulators
		runDiff(t, diffCase{name: "odd", src: `
func.func @f(%x: tensor<3x7xf16>) -> tensor<3x7xf16> {
  %p = graph.softmax %x : tensor<3x7xf16>
  return %p : tensor<3x7xf16>
}`, pipeline: "fuse,lower-to-loops,sram-alloc"})
	})
	t.Run("int-rows", func(t *testing.T) {
		runDiff(t, diffCase{name: "int", exact: true, noExtreme: true, src: `
func.func @f(%x: tensor<4x16xi16>) -> (tensor<4xi16>, tensor<4x16xi16>) {
  %m = graph.reduce_min %x {axes = [-1], keepdim = true} : (tensor<4x16xi16>) -> tensor<4x1xi16>
  %d = graph.sub %x, %m : (tensor<4x16xi16>, tensor<4x1xi16>) -> tensor<4x16xi16>
  %s = graph.reduce_sum %d {axes = [-1]} : (tensor<4x16xi16>) -> tensor<4xi16>
  return %s, %d : tensor<4xi16>, tensor<4x16xi16>
}`, pipeline: "fuse,lower-to-loops,sram-alloc"})
	})
	t.Run("layernorm-f64", func(t *testing.T) {
		runDiff(t, diffCase{name: "ln", src: `
func.func @f(%x: tensor<5x32xf64>, %w: tensor<32xf64>, %b: tensor<32xf64>) -> tensor<5x32xf64> {
  %y = graph.layernorm %x, %w, %b {eps = 1.0e-05 : f32} : (tensor<5x32xf64>, tensor<32xf64>, tensor<32xf64>) -> tensor<5x32xf64>
  return %y : tensor<5x32xf64>
}`, pipeline: "fuse,lower-to-loops,sram-alloc"})
	})
}

// The online schedule: rows too long for an m3-max's 32 KiB of
// threadgroup memory (9000 f32 is 4 chunks of 2048 and a tail of 808;
// 12288 is 6 whole chunks), the max and the sum of exp taken in one pass.
// Extreme inputs put +-inf and NaN in chunks after finite ones and
// before them.
func TestDiffOnline(t *testing.T) {
	src := `
func.func @softmax(%x: tensor<?x9000xbf16>) -> tensor<?x9000xbf16> {
  %y = graph.softmax %x {axis = -1} : tensor<?x9000xbf16>
  return %y : tensor<?x9000xbf16>
}
func.func @lse(%x: tensor<?x9000xf32>) -> tensor<?xf32> {
  %y = graph.logsumexp %x {axis = -1} : (tensor<?x9000xf32>) -> tensor<?xf32>
  return %y : tensor<?xf32>
}
func.func @logsoftmax(%x: tensor<?x12288xf16>) -> tensor<?x12288xf16> {
  %y = graph.log_softmax %x {axis = -1} : tensor<?x12288xf16>
  return %y : tensor<?x12288xf16>
}
func.func @add_lse(%x: tensor<?x9000xbf16>, %r: tensor<?x9000xbf16>) -> (tensor<?x9000xbf16>, tensor<?x1xbf16>) {
  %h = graph.add %x, %r : tensor<?x9000xbf16>
  %y = graph.logsumexp %h {axis = -1, keepdim = true} : (tensor<?x9000xbf16>) -> tensor<?x1xbf16>
  return %h, %y : tensor<?x9000xbf16>, tensor<?x1xbf16>
}`
	m := lowerText(t, src, "legalize-numerics,decompose,fuse,lower-to-loops,sram-alloc", "m3-max")
	n := 0
	m.Operation.Walk(func(op *ir.Operation) bool {
		if k, ok := loop.AsKernel(op); ok {
			s, _ := k.Schedule()
			require.Equal(t, "online", s, "kernel %s", k.SymName())
			n++
		}
		return true
	})
	require.Equal(t, 4, n)
	runDiff(t, diffCase{name: "online", src: src, target: "m3-max", dyn: 3, inputs: peakRows,
		pipeline: "legalize-numerics,decompose,fuse,lower-to-loops,sram-alloc"})
}

// Split rows: on a GPU, a row of 16384 or more reduced to per-row values
// online runs as S instances per row (here 4 of 4096 for 16384 f32 and
// 4 of 5000 bf16) and a kernel combining them per row; the row's full
// results of phase 0 (the residual sum here) are stored by the first.
// Softmax and log_softmax take a third kernel, which computes their rows
// over the splits again from the row's max and sum (log_softmax here: a
// row of 61440 bf16 is online on an h200, then 8 splits of 7680).
func TestDiffSplitRows(t *testing.T) {
	t.Parallel()
	src := `
func.func @lse(%x: tensor<?x16384xf32>) -> tensor<?xf32> {
  %y = graph.logsumexp %x {axis = -1} : (tensor<?x16384xf32>) -> tensor<?xf32>
  return %y : tensor<?xf32>
}
func.func @add_lse(%x: tensor<?x20000xbf16>, %r: tensor<?x20000xbf16>) -> (tensor<?x20000xbf16>, tensor<?x1xbf16>) {
  %h = graph.add %x, %r : tensor<?x20000xbf16>
  %y = graph.logsumexp %h {axis = -1, keepdim = true} : (tensor<?x20000xbf16>) -> tensor<?x1xbf16>
  return %h, %y : tensor<?x20000xbf16>, tensor<?x1xbf16>
}
func.func @log_softmax(%x: tensor<?x61440xbf16>) -> tensor<?x61440xbf16> {
  %y = graph.log_softmax %x {axis = -1} : tensor<?x61440xbf16>
  return %y : tensor<?x61440xbf16>
}`
	pipeline := "legalize-numerics,decompose,fuse,lower-to-loops,sram-alloc"
	m := lowerText(t, src, pipeline, "h200")
	rows := map[string]int64{}
	m.Operation.Walk(func(op *ir.Operation) bool {
		if k, ok := loop.AsKernel(op); ok {
			n, _ := k.RowLen()
			rows[k.SymName()] = n
		}
		return true
	})
	// the rows are `?`: the kernel of one instance per row is there too
	require.Equal(t, map[string]int64{"lse_k0": 4096, "lse_k1": 4, "lse_k2": 16384,
		"add_lse_k0": 5000, "add_lse_k1": 4, "add_lse_k2": 20000,
		"log_softmax_k0": 7680, "log_softmax_k1": 8, "log_softmax_k2": 7680, "log_softmax_k3": 61440}, rows)
	// 3 rows: the split kernels run (fewer than 264); with the bound at 3,
	// the other form
	runDiff(t, diffCase{name: "split", src: src, target: "h200", dyn: 3, inputs: peakRows, pipeline: pipeline})
	runDiff(t, diffCase{name: "split, low", src: src, target: "h200", dyn: 3, inputs: lowSplitRows, pipeline: pipeline})
	runDiff(t, diffCase{name: "unsplit", src: src, target: "h200", dyn: 3, inputs: peakRows,
		pipeline: "legalize-numerics,decompose,fuse,lower-to-loops{split-rows-below=3},sram-alloc"})
}

// Resident splits (resident.go, lower-to-loops{resident=true}): softmax
// and a cast chain's log_softmax over rows too long for sram, each row
// across a group of instances that meet at a loop.group_sync, against the
// graph interpreter on random,
// extreme and peaked rows, and on a row whose splits are -inf but one,
// whose values are far below 0 (h = -200: the -inf splits' sums must add
// 0, not 0 x exp(200) = NaN).
func TestDiffResident(t *testing.T) {
	t.Parallel()
	src := `
func.func @softmax(%x: tensor<?x65536xf32>) -> tensor<?x65536xf32> {
  %y = graph.softmax %x {axis = -1} : tensor<?x65536xf32>
  return %y : tensor<?x65536xf32>
}
func.func @log_softmax(%x: tensor<?x61440xbf16>) -> tensor<?x61440xbf16> {
  %f = graph.cast %x : (tensor<?x61440xbf16>) -> tensor<?x61440xf32>
  %y = graph.log_softmax %f {axis = -1} : tensor<?x61440xf32>
  %b = graph.cast %y : (tensor<?x61440xf32>) -> tensor<?x61440xbf16>
  return %b : tensor<?x61440xbf16>
}`
	pipeline := "legalize-numerics,decompose,fuse,lower-to-loops{resident=true,split-rows-below=1},sram-alloc"
	m := lowerText(t, src, pipeline, "h200")
	var schedules []string
	m.Operation.Walk(func(op *ir.Operation) bool {
		if k, ok := loop.AsKernel(op); ok {
			s, _ := k.Schedule()
			schedules = append(schedules, k.SymName()+" "+s)
		}
		return true
	})
	require.Equal(t, []string{"softmax_k0 resident", "log_softmax_k0 resident"}, schedules)
	// splits of one: rows of 8192 copied whole as loaded (bf16, f16), or
	// kept in f32 (an f32 row computed from the input)
	one := `
func.func @bf16(%x: tensor<?x8192xbf16>) -> tensor<?x8192xbf16> {
  %f = graph.cast %x : (tensor<?x8192xbf16>) -> tensor<?x8192xf32>
  %y = graph.softmax %f {axis = -1} : tensor<?x8192xf32>
  %b = graph.cast %y : (tensor<?x8192xf32>) -> tensor<?x8192xbf16>
  return %b : tensor<?x8192xbf16>
}
func.func @f16(%x: tensor<?x8192xf16>) -> tensor<?x8192xf16> {
  %y = graph.log_softmax %x {axis = -1} : tensor<?x8192xf16>
  return %y : tensor<?x8192xf16>
}`
	onePipeline := "legalize-numerics,decompose,fuse,lower-to-loops{resident=true,resident-bytes=32768,split-rows-below=1},sram-alloc"
	require.Contains(t, ir.Print(lowerText(t, one, onePipeline, "h200").Operation, ir.PrintOptions{}), "memref<8192xf16, sram>")
	for _, rows := range []int64{1, 3} {
		runDiff(t, diffCase{name: fmt.Sprintf("split of one %d", rows), src: one, target: "h200", dyn: rows, pipeline: onePipeline})
	}
	// with row-copies, one-pass rows of RMSNorm chains copy the inputs
	// their two loops read into sram as loaded and compute both from the
	// copies
	copies := `
func.func @add_rmsnorm(%x: tensor<?x1024xbf16>, %r: tensor<?x1024xbf16>, %w: tensor<1024xbf16>) -> (tensor<?x1024xbf16>, tensor<?x1024xbf16>) {
  %h = graph.add %x, %r : tensor<?x1024xbf16>
  %n = graph.rmsnorm %h, %w {eps = 1.0e-05 : f32} : (tensor<?x1024xbf16>, tensor<1024xbf16>) -> tensor<?x1024xbf16>
  return %h, %n : tensor<?x1024xbf16>, tensor<?x1024xbf16>
}
func.func @rms_silu_mul(%x: tensor<?x1024xf16>, %w: tensor<1024xf16>, %z: tensor<?x1024xf16>) -> tensor<?x1024xf16> {
  %n = graph.rmsnorm %x, %w {eps = 1.0e-05 : f32} : (tensor<?x1024xf16>, tensor<1024xf16>) -> tensor<?x1024xf16>
  %s = graph.silu %n : tensor<?x1024xf16>
  %y = graph.mul %s, %z : tensor<?x1024xf16>
  return %y : tensor<?x1024xf16>
}`
	copiesPipeline := "legalize-numerics,decompose,fuse,lower-to-loops{row-copies=true},sram-alloc"
	copied := ir.Print(lowerText(t, copies, copiesPipeline, "h200").Operation, ir.PrintOptions{})
	require.Equal(t, 2, strings.Count(copied, ": memref<1024xbf16, sram>\n"), "x and r copied:\n%s", copied)
	require.Equal(t, 1, strings.Count(copied, ": memref<1024xf16, sram>\n"), "x copied:\n%s", copied)
	for _, rows := range []int64{1, 3} {
		runDiff(t, diffCase{name: fmt.Sprintf("row copies %d", rows), src: copies, target: "h200", dyn: rows, pipeline: copiesPipeline})
	}
	for _, rows := range []int64{1, 3} {
		runDiff(t, diffCase{name: fmt.Sprintf("resident %d", rows), src: src, target: "h200", dyn: rows, inputs: peakRows, pipeline: pipeline})
		runDiff(t, diffCase{name: fmt.Sprintf("low split %d", rows), src: src, target: "h200", dyn: rows, inputs: lowSplitRows, pipeline: pipeline})
	}
}

// The cached schedule (CPU): add + RMSNorm and RMSNorm -> SiLU -> Mul in
// f32 and bf16 re-read their rows in the later phase, and read h back
// from the output where it is stored as it is held (f32; bf16 with exact
// rounding), against the graph interpreter in both rounding modes.
func TestDiffCachedRows(t *testing.T) {
	var src strings.Builder
	for _, e := range []string{"f32", "bf16"} {
		fmt.Fprintf(&src, `
func.func @add_%[1]s(%%x: tensor<?x512x%[1]s>, %%r: tensor<?x512x%[1]s>, %%w: tensor<512x%[1]s>) -> (tensor<?x512x%[1]s>, tensor<?x512x%[1]s>) {
  %%h = graph.add %%x, %%r : tensor<?x512x%[1]s>
  %%n = graph.rmsnorm %%h, %%w {eps = 1.0e-05 : f32} : (tensor<?x512x%[1]s>, tensor<512x%[1]s>) -> tensor<?x512x%[1]s>
  return %%h, %%n : tensor<?x512x%[1]s>, tensor<?x512x%[1]s>
}
func.func @chain_%[1]s(%%x: tensor<?x512x%[1]s>, %%w: tensor<512x%[1]s>, %%z: tensor<?x512x%[1]s>) -> tensor<?x512x%[1]s> {
  %%n = graph.rmsnorm %%x, %%w {eps = 1.0e-05 : f32} : (tensor<?x512x%[1]s>, tensor<512x%[1]s>) -> tensor<?x512x%[1]s>
  %%s = graph.silu %%n : tensor<?x512x%[1]s>
  %%y = graph.mul %%s, %%z : tensor<?x512x%[1]s>
  return %%y : tensor<?x512x%[1]s>
}`, e)
	}
	pipeline := "legalize-numerics,decompose,fuse,lower-to-loops,sram-alloc"
	m := lowerText(t, src.String(), pipeline, "cpu")
	n := 0
	m.Operation.Walk(func(op *ir.Operation) bool {
		if k, ok := loop.AsKernel(op); ok {
			s, _ := k.Schedule()
			require.Equal(t, "cached", s, k.SymName())
			n++
		}
		return true
	})
	require.Equal(t, 4, n)
	runDiff(t, diffCase{name: "cached", src: src.String(), target: "cpu", dyn: 3, pipeline: pipeline})
}

// lowSplitRows makes every row of the matrix inputs -inf but for its
// third quarter, whose values are near -200: splits of -inf alone next to
// a max far below 0, whose h(m) makes exp(0 - h) overflow.
func lowSplitRows(_ ir.Func, in []*geval.Tensor) []*geval.Tensor {
	for _, x := range in {
		if len(x.Shape) != 2 {
			continue
		}
		cols := int(x.Shape[1])
		for r := range int(x.Shape[0]) {
			for j := range cols {
				v := math.Inf(-1)
				if j >= cols/2 && j < cols*3/4 {
					v = numeric.RoundTo(-200-float64(j%7), x.Elem)
				}
				x.Data[r*cols+j] = v
			}
		}
	}
	return in
}

// A guarded launch runs only where its guard admits the rows: the loop
// interpreter runs the split form of a logsumexp for 2 rows and the other
// for 3 (split-rows-below=3), each writing every result.
func TestGuardedLaunches(t *testing.T) {
	src := `
func.func @lse(%x: tensor<?x16384xf32>) -> tensor<?xf32> {
  %y = graph.logsumexp %x {axis = -1} : (tensor<?x16384xf32>) -> tensor<?xf32>
  return %y : tensor<?xf32>
}`
	m := lowerText(t, src, "legalize-numerics,decompose,fuse,lower-to-loops{split-rows-below=3},sram-alloc", "h200")
	ran := map[string][]int64{}
	m.Operation.Walk(func(op *ir.Operation) bool {
		if l, ok := loop.AsLaunch(op); ok {
			g, guarded := l.Guard()
			require.True(t, guarded, "launch of %s", l.Kernel())
			for _, rows := range []int64{2, 3} {
				if g.Admits(rows) {
					ran[l.Kernel()] = append(ran[l.Kernel()], rows)
				}
			}
		}
		return true
	})
	require.Equal(t, map[string][]int64{"lse_k0": {2}, "lse_k1": {2}, "lse_k2": {3}}, ran)
	for _, rows := range []int64{2, 3} {
		x := geval.NewTensor(ir.F32, []int64{rows, 16384})
		for i := range x.Data {
			x.Data[i] = float64(i%97) / 8
		}
		out, err := leval.Run(m, "lse", []*geval.Tensor{x})
		require.NoError(t, err)
		for r := range rows {
			var want float64
			for j := range 16384 {
				want += math.Exp(x.Data[int(r)*16384+j])
			}
			require.InEpsilon(t, math.Log(want), out[0].Data[r], 1e-5, "row %d of %d", r, rows)
		}
	}
}

// peakRows sets the first three rows of every matrix input: row 0 with
// its max in its first chunk (or split), far above the rest, so that a
// kernel that lost the running max overflows exp; row 1 rising column by
// column, so that every chunk rescales the sum; row 2 -inf but for its
// last element and one 5000 columns before the end, so that whole chunks
// are -inf before a finite one.
func peakRows(_ ir.Func, in []*geval.Tensor) []*geval.Tensor {
	for _, x := range in {
		if len(x.Shape) != 2 || x.Shape[0] < 3 {
			continue
		}
		cols := int(x.Shape[1])
		for j := range cols {
			x.Data[j] = -60
			x.Data[cols+j] = float64(j)/float64(cols)*100 - 50
			x.Data[2*cols+j] = math.Inf(-1)
		}
		x.Data[3] = 60
		x.Data[3*cols-1] = 1
		if cols > 5000 {
			x.Data[3*cols-5000] = 0.5
		}
		for i := range x.Data {
			x.Data[i] = numeric.RoundTo(x.Data[i], x.Elem)
		}
	}
	return in
}

// Random programs: the graph interpreter on the program after the
// graph-level passes against the loop interpreter on its lowering, so
// that only lowering's own differences count (the order of row sums).
// 1500 seeds (a dozen seconds): seeds past the first 300 found kernels
// that computed wrong results (TestDiffRandomRegressions).
func TestDiffRandomPrograms(t *testing.T) {
	t.Parallel()
	n := int64(1500)
	if testing.Short() {
		n = 30
	}
	for seed := int64(1); seed <= n; seed++ {
		// dead ops go first: they are no kernel's business (and fuse
		// groups a dead op into a kernel without results)
		for _, before := range []string{"decompose", "dce,decompose,dce,fuse"} {
			m, err := randprog.Generate(randprog.NewRand(seed), randprog.Config{})
			require.NoError(t, err)
			runPipeline(t, m, before, "h200")
			text := ir.Print(m.Operation, ir.PrintOptions{})
			t.Run(fmt.Sprintf("seed%d/%s", seed, before), func(t *testing.T) {
				runDiffOn(t, diffCase{name: fmt.Sprintf("seed %d", seed), src: text, target: "h200", dyn: randprog.DynExtent}, true)
			})
		}
	}
}

// TestDiffRandomProgramsCPU is TestDiffRandomPrograms lowered for the
// CPU, whose kernels read and store through transposes of the last axis
// with strided vector accesses and walk tiles (tiledWalk) where the GPU's
// run a lane at a time.
func TestDiffRandomProgramsCPU(t *testing.T) {
	t.Parallel()
	n := int64(400)
	if testing.Short() {
		n = 20
	}
	for seed := int64(1); seed <= n; seed++ {
		m, err := randprog.Generate(randprog.NewRand(seed), randprog.Config{})
		require.NoError(t, err)
		runPipeline(t, m, "dce,decompose,dce,fuse", "cpu")
		text := ir.Print(m.Operation, ir.PrintOptions{})
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			runDiffOn(t, diffCase{name: fmt.Sprintf("seed %d", seed), src: text, target: "cpu", dyn: randprog.DynExtent}, true)
		})
	}
}

// A row kernel whose first loop stores a full row (exp2(x) + exp2(-1.25))
// needing a per-row value (exp2 of the constant, left uncomputed without
// canonicalize): in the online chunks and the resident split the value is
// computed before the loop that needs it, not after it (an internal
// compiler error, once), and both agree with the graph interpreter.
func TestDiffPerRowValueInChunk(t *testing.T) {
	t.Parallel()
	src := `
func.func @f(%x: tensor<?x262144xf32>) -> (tensor<?x262144xf32>, tensor<?x262144xf32>) {
  %m = graph.reduce_max %x {axes = [-1], keepdim = true} : (tensor<?x262144xf32>) -> tensor<?x1xf32>
  %d = graph.sub %x, %m : (tensor<?x262144xf32>, tensor<?x1xf32>) -> tensor<?x262144xf32>
  %e = graph.exp %d : tensor<?x262144xf32>
  %s = graph.reduce_sum %e {axes = [-1], keepdim = true} : (tensor<?x262144xf32>) -> tensor<?x1xf32>
  %p = graph.div %e, %s : (tensor<?x262144xf32>, tensor<?x1xf32>) -> tensor<?x262144xf32>
  %c = graph.constant dense<-1.25> : tensor<f32>
  %x2 = graph.exp2 %x : tensor<?x262144xf32>
  %c2 = graph.exp2 %c : tensor<f32>
  %y = graph.add %x2, %c2 : (tensor<?x262144xf32>, tensor<f32>) -> tensor<?x262144xf32>
  return %p, %y : tensor<?x262144xf32>, tensor<?x262144xf32>
}`
	for _, pipeline := range []string{
		"decompose,fuse,lower-to-loops{split-rows-below=1},sram-alloc",
		"decompose,fuse,lower-to-loops{resident=true,split-rows-below=1},sram-alloc",
		"decompose,fuse,lower-to-loops{split-rows-below=1000},sram-alloc",
	} {
		runDiff(t, diffCase{name: pipeline, src: src, target: "h200", dyn: 2, pipeline: pipeline, noExtreme: true})
	}
}

// testTargets are targets only the tests know, by name: "h200-16b", an
// h200 whose programs have 16 bytes of scratchpad, so that the rows of
// random programs (a few elements) are too long for one program and take
// the GPU's online and split forms.
var testTargets = func() map[string]*target.Target {
	h, err := target.Lookup("h200")
	if err != nil {
		panic(err)
	}
	small := *h
	small.Name = "h200-16b"
	small.ScratchpadBytes = 16
	return map[string]*target.Target{small.Name: &small}
}()

// Random programs lowered for a GPU whose scratchpad holds 16 bytes, with
// and without canonicalize before lowering: their row kernels take the
// online schedule (a row read in chunks, its max and sum of exp carried
// online), for few rows the split forms, and with resident=true groups of
// resident splits, which no rows of their small extents take on a real
// target; against the graph interpreter on random and extreme inputs.
func TestDiffRandomOnline(t *testing.T) {
	t.Parallel()
	n := int64(1000)
	if testing.Short() {
		n = 20
	}
	schedules := map[string]int{}
	for seed := int64(1); seed <= n; seed++ {
		for pi, pipeline := range []string{
			"decompose,fuse,lower-to-loops{split-rows-below=1},sram-alloc",
			"canonicalize,cse,decompose,fuse,canonicalize,lower-to-loops{split-rows-below=64},sram-alloc",
			"decompose,fuse,lower-to-loops{resident=true,resident-bytes=8,split-rows-below=1},sram-alloc",
		} {
			text, lowered, err := lowerRandom(t, seed, pipeline, testTargets["h200-16b"])
			require.NoError(t, err, "seed %d:\n%s", seed, text)
			online := false
			for _, k := range kernelsOf(lowered) {
				if s, _ := k.Schedule(); s != "" {
					schedules[s]++
					online = online || s == "online" || s == "resident"
				}
			}
			if !online {
				continue
			}
			t.Run(fmt.Sprintf("seed%d/%d", seed, pi), func(t *testing.T) {
				runDiffOn(t, diffCase{name: fmt.Sprintf("seed %d", seed), src: text, target: "h200-16b", dyn: randprog.DynExtent, pipeline: pipeline}, true)
			})
		}
	}
	t.Logf("schedules: %v", schedules)
	require.Positive(t, schedules["online"], "no program took the online schedule")
	require.Positive(t, schedules["resident"], "no program took a resident split")
}

// lowerRandom generates randprog's program of seed, with its dead ops
// removed first (they are no kernel's business), and runs pipeline on it
// for target tg: the program's text and the lowered module, or the
// pipeline's error.
func lowerRandom(t *testing.T, seed int64, pipeline string, tg *target.Target) (string, ir.Module, error) {
	t.Helper()
	m, err := randprog.Generate(randprog.NewRand(seed), randprog.Config{})
	require.NoError(t, err)
	runPipeline(t, m, "dce,decompose,dce", "h200")
	text := ir.Print(m.Operation, ir.PrintOptions{})
	lowered, err := parser.Parse("input.tir", text)
	require.NoError(t, err)
	p, err := ir.ParsePipeline(pipeline)
	require.NoError(t, err)
	ctx := &ir.PassContext{Diags: &ir.Diagnostics{}, Target: tg}
	return text, lowered, (&ir.PassManager{Pipeline: p, VerifyEach: true}).Run(lowered, ctx)
}

// kernelsOf lists the loop.kernel ops of m.
func kernelsOf(m ir.Module) []loop.KernelOp {
	var out []loop.KernelOp
	m.Operation.Walk(func(op *ir.Operation) bool {
		if k, ok := loop.AsKernel(op); ok {
			out = append(out, k)
		}
		return true
	})
	return out
}

// Random programs lowered with resident splits of a few bytes, so that
// their normalised rows (softmax, log_softmax) take the resident forms at
// the small extents randprog makes: splits of one (a row copied whole
// where it is an input's), against the graph interpreter on random and
// extreme inputs. The test fails if no program took the form.
func TestDiffRandomResident(t *testing.T) {
	n := int64(200)
	if testing.Short() {
		n = 30
	}
	h200, err := target.Lookup("h200")
	require.NoError(t, err)
	forms := map[string]int{}
	for seed := int64(1); seed <= n; seed++ {
		for _, budget := range []int{16, 64} {
			pipeline := fmt.Sprintf("decompose,fuse,lower-to-loops{resident=true,resident-bytes=%d,split-rows-below=1,row-copies=true},sram-alloc", budget)
			text, lowered, err := lowerRandom(t, seed, pipeline, h200)
			require.NoError(t, err, "seed %d:\n%s", seed, text)
			resident := false
			for _, k := range kernelsOf(lowered) {
				if s, _ := k.Schedule(); s == "resident" {
					resident = true
					sync := false
					k.Operation.Walk(func(o *ir.Operation) bool {
						sync = sync || o.Name() == loop.OpGroupSync
						return true
					})
					forms[map[bool]string{true: "groups", false: "rows"}[sync]]++
				}
			}
			if !resident {
				continue
			}
			t.Run(fmt.Sprintf("seed%d/bytes%d", seed, budget), func(t *testing.T) {
				runDiffOn(t, diffCase{name: fmt.Sprintf("seed %d", seed), src: text, target: "h200", dyn: randprog.DynExtent, pipeline: pipeline}, true)
			})
		}
	}
	// (randprog's rows fit one program: the groups are TestDiffResident's)
	t.Logf("resident kernels: %v", forms)
	require.Positive(t, forms["rows"], "no program took a split of one")
}

// The lit inputs of lowering and sram-alloc, with and without fusion
// (inputs that expect lowering to fail are skipped).
func TestDiffLitInputs(t *testing.T) {
	t.Parallel()
	var files []string
	for _, dir := range []string{"../lit-tests/lowering", "../lit-tests/sram"} {
		fs, err := filepath.Glob(dir + "/*.tir")
		require.NoError(t, err)
		files = append(files, fs...)
	}
	require.NotEmpty(t, files)
	ran := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		for i, chunk := range strings.Split(string(src), "// -----") {
			if strings.Contains(chunk, "graph.index_copy") {
				// a whole KV cache of 2048 positions for an update of one: the
				// same program on a cache of a few positions checks the same
				// indexing at a thousandth of the cost
				chunk = shrinkShapes(chunk)
			}
			m, err := parser.Parse("input.tir", chunk)
			if err != nil || ir.Verify(m.Operation) != nil {
				continue
			}
			graphFuncs := 0
			// 3 rows: a `?` that broadcasts against a static 3 may be 3;
			// rows of 16384 and more (the online and split-row schedules)
			// take one, the decode shape they are split for: three rows of
			// 100000 were half the test's time
			dyn := int64(3)
			for _, fn := range m.Funcs() {
				if isGraphFunc(fn) {
					graphFuncs++
				}
				if longestRow(fn) >= 16384 {
					dyn = 1
				}
			}
			if graphFuncs == 0 {
				continue // loop IR written by hand
			}
			for _, pipeline := range []string{"lower-to-loops", "decompose,fuse,lower-to-loops"} {
				probe, _ := parser.Parse("input.tir", chunk)
				// (an input that expects an error, or a known bug lit
				// expects to fail)
				if expectsFailure(probe, pipeline) && (strings.Contains(chunk, "expected-error") || strings.Contains(chunk, "XFAIL:")) {
					continue
				}
				ran++
				t.Run(fmt.Sprintf("%s#%d/%s", filepath.Base(f), i, pipeline), func(t *testing.T) {
					runDiff(t, diffCase{name: filepath.Base(f), src: chunk, pipeline: pipeline, target: "h200", dyn: dyn, unfitOK: true})
				})
			}
		}
	}
	require.Greater(t, ran, 10)
}

// expectsFailure reports whether the pipeline fails on m.
func expectsFailure(m ir.Module, pipeline string) bool {
	tg, _ := target.Lookup("h200")
	p, err := ir.ParsePipeline(pipeline)
	if err != nil {
		return true
	}
	return (&ir.PassManager{Pipeline: p, VerifyEach: true}).Run(m, &ir.PassContext{Diags: &ir.Diagnostics{}, Target: tg}) != nil
}

// Results stored through views of a row kernel's rows (passes/outviews.go):
// a transpose that keeps the last axis (vectors), one that moves it (one
// lane at a time), reshapes that split and merge the row, a chain of both,
// a run-time number of rows taken from a viewed result, a softmax kept
// one-pass on the GPU target, and a row stored both as it is and viewed.
func TestDiffStoredViews(t *testing.T) {
	cases := map[string]string{
		"transpose-rows": `
func.func @f(%x: tensor<6x4x16xbf16>, %w: tensor<16xbf16>) -> tensor<4x6x16xbf16> {
  %n = graph.rmsnorm %x, %w {eps = 1.0e-05} : (tensor<6x4x16xbf16>, tensor<16xbf16>) -> tensor<6x4x16xbf16>
  %t = graph.transpose %n {perm = [1, 0, 2]} : (tensor<6x4x16xbf16>) -> tensor<4x6x16xbf16>
  return %t : tensor<4x6x16xbf16>
}`,
		"transpose-last-axis": `
func.func @f(%x: tensor<5x12xf32>) -> tensor<12x5xf32> {
  %p = graph.softmax %x : tensor<5x12xf32>
  %t = graph.transpose %p {perm = [1, 0]} : (tensor<5x12xf32>) -> tensor<12x5xf32>
  return %t : tensor<12x5xf32>
}`,
		"reshape-split": `
func.func @f(%x: tensor<?x64xf16>, %w: tensor<64xf16>) -> tensor<?x4x16xf16> {
  %n = graph.rmsnorm %x, %w {eps = 1.0e-05} : (tensor<?x64xf16>, tensor<64xf16>) -> tensor<?x64xf16>
  %t = graph.reshape %n : (tensor<?x64xf16>) -> tensor<?x4x16xf16>
  return %t : tensor<?x4x16xf16>
}`,
		"reshape-merge-then-transpose": `
func.func @f(%x: tensor<2x3x4x8xf32>) -> (tensor<3x2x32xf32>, tensor<2x3x4xf32>) {
  %s = graph.reduce_max %x {axes = [-1]} : (tensor<2x3x4x8xf32>) -> tensor<2x3x4xf32>
  %e = graph.exp %x : tensor<2x3x4x8xf32>
  %z = graph.reduce_sum %e {axes = [-1], keepdim = true} : (tensor<2x3x4x8xf32>) -> tensor<2x3x4x1xf32>
  %p = graph.div %e, %z : (tensor<2x3x4x8xf32>, tensor<2x3x4x1xf32>) -> tensor<2x3x4x8xf32>
  %r = graph.reshape %p : (tensor<2x3x4x8xf32>) -> tensor<2x3x32xf32>
  %t = graph.transpose %r {perm = [1, 0, 2]} : (tensor<2x3x32xf32>) -> tensor<3x2x32xf32>
  return %t, %s : tensor<3x2x32xf32>, tensor<2x3x4xf32>
}`,
		"heads-dynamic": `
func.func @f(%k: tensor<1x?x32xbf16>, %w: tensor<8xbf16>) -> tensor<1x4x?x8xbf16> {
  %kh = graph.reshape %k : (tensor<1x?x32xbf16>) -> tensor<1x?x4x8xbf16>
  %n = graph.rmsnorm %kh, %w {eps = 1.0e-06} : (tensor<1x?x4x8xbf16>, tensor<8xbf16>) -> tensor<1x?x4x8xbf16>
  %t = graph.transpose %n {perm = [0, 2, 1, 3]} : (tensor<1x?x4x8xbf16>) -> tensor<1x4x?x8xbf16>
  return %t : tensor<1x4x?x8xbf16>
}`,
		// online on the GPU (rows longer than 8192): h is stored,
		// transposed, in the pass that takes the max and the sum
		"online-phase-0": `
func.func @f(%x: tensor<2x9000xf32>, %r: tensor<2x9000xf32>) -> (tensor<9000x2xf32>, tensor<2xf32>) {
  %h = graph.add %x, %r : tensor<2x9000xf32>
  %t = graph.transpose %h {perm = [1, 0]} : (tensor<2x9000xf32>) -> tensor<9000x2xf32>
  %l = graph.logsumexp %h {axis = -1} : (tensor<2x9000xf32>) -> tensor<2xf32>
  return %t, %l : tensor<9000x2xf32>, tensor<2xf32>
}`,
		// few long rows, which the GPU would split across programs: one
		// program per row instead
		"few-rows": `
func.func @f(%x: tensor<2x4096xbf16>) -> tensor<2x64x64xbf16> {
  %p = graph.softmax %x : tensor<2x4096xbf16>
  %t = graph.reshape %p : (tensor<2x4096xbf16>) -> tensor<2x64x64xbf16>
  return %t : tensor<2x64x64xbf16>
}`,
		// an element-wise kernel writing a value and its transpose: over
		// the value's shape, the transpose stored through its view
		"elementwise-and-transpose": `
func.func @f(%x: tensor<3x5x8xf32>) -> (tensor<3x5x8xf32>, tensor<5x3x8xf32>) {
  %e = graph.exp %x : tensor<3x5x8xf32>
  %t = graph.transpose %e {perm = [1, 0, 2]} : (tensor<3x5x8xf32>) -> tensor<5x3x8xf32>
  return %e, %t : tensor<3x5x8xf32>, tensor<5x3x8xf32>
}`,
		// q rotated, then the two layouts matmul copies it to: [b, h, s, d]
		// and [b, h, d, s], both from one kernel
		"elementwise-two-layouts": `
func.func @f(%v: tensor<2x?x4x16xbf16>, %c: tensor<2x?x1x16xbf16>) -> (tensor<2x4x?x16xbf16>, tensor<2x4x16x?xbf16>) {
  %m = graph.mul %v, %c : (tensor<2x?x4x16xbf16>, tensor<2x?x1x16xbf16>) -> tensor<2x?x4x16xbf16>
  %p = graph.transpose %m {perm = [0, 2, 1, 3]} : (tensor<2x?x4x16xbf16>) -> tensor<2x4x?x16xbf16>
  %t = graph.transpose %p {perm = [0, 1, 3, 2]} : (tensor<2x4x?x16xbf16>) -> tensor<2x4x16x?xbf16>
  return %p, %t : tensor<2x4x?x16xbf16>, tensor<2x4x16x?xbf16>
}`,
		"stored-twice": `
func.func @f(%x: tensor<4x3x16xf32>) -> (tensor<4x3x16xf32>, tensor<3x4x16xf32>) {
  %p = graph.log_softmax %x : tensor<4x3x16xf32>
  %t = graph.transpose %p {perm = [1, 0, 2]} : (tensor<4x3x16xf32>) -> tensor<3x4x16xf32>
  return %p, %t : tensor<4x3x16xf32>, tensor<3x4x16xf32>
}`,
	}
	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		for _, tg := range []string{"cpu", "h200"} {
			t.Run(name+"/"+tg, func(t *testing.T) {
				m, err := parser.Parse("input.tir", cases[name])
				require.NoError(t, err)
				runPipeline(t, m, "canonicalize,cse,legalize-numerics,decompose,fuse,canonicalize,cse,dce", tg)
				text := ir.Print(m.Operation, ir.PrintOptions{})
				kernels := 1
				if name == "online-phase-0" && tg == "cpu" {
					// rows of 9000 stored across cache lines: the
					// transpose stays apart on a CPU (rowAcrossLines)
					kernels = 2
				}
				require.Equal(t, kernels, strings.Count(text, "graph.fused"), "kernels:\n%s", text)
				runDiff(t, diffCase{name: name, src: text, target: tg})
			})
		}
	}
}

// tiledProgram is a random element-wise chain over a space of rank 2 to
// 4 that reads an operand through a transpose moving its last axis, as a
// CPU kernel walks in tiles with strided loads (tiledWalk): the
// tiled dimension and the row of 17 to 40 (tiles cut short), the others
// of 1 to 3 (the tiled one `?` in a third of them), an element type of
// f32, bf16, f16 or i32, and beside the
// transposed operand one read contiguously, one broadcast along the rows
// and, now and then, a second transposed operand; a third of the float
// chains end in a softmax (a row kernel), a quarter of all are stored
// through a transpose of the last axis.
func tiledProgram(r *rand.Rand) string {
	n := 2 + r.IntN(3)
	shape := make([]int64, n)
	for i := range shape {
		shape[i] = 1 + r.Int64N(3)
	}
	d := r.IntN(n - 1)
	shape[d], shape[n-1] = 17+r.Int64N(24), 17+r.Int64N(24)
	if r.IntN(3) == 0 {
		shape[d] = ir.Dynamic // tiles counted at launch (tiledDyn elements)
	}
	// perm: result dimension i reads operand dimension perm[i]; the
	// operand's last is read at d
	perm := r.Perm(n)
	j := slices.Index(perm, n-1)
	perm[j], perm[d] = perm[d], perm[j]
	opd := make([]int64, n)
	for i, p := range perm {
		opd[p] = shape[i]
	}
	elem := []string{"f32", "bf16", "f16", "i32"}[r.IntN(4)]
	ty := func(s []int64) string {
		var b strings.Builder
		b.WriteString("tensor<")
		for _, e := range s {
			if e == ir.Dynamic {
				b.WriteString("?x")
			} else {
				fmt.Fprintf(&b, "%dx", e)
			}
		}
		return b.String() + elem + ">"
	}
	permText := strings.Trim(strings.Join(strings.Fields(fmt.Sprint(perm)), ", "), "[]")
	res, row := ty(shape), ty(shape[n-1:])
	var b strings.Builder
	fmt.Fprintf(&b, "func.func @f(%%x: %s, %%y: %s, %%w: %s, %%x2: %s) -> %s {\n", ty(opd), res, row, ty(opd), res)
	fmt.Fprintf(&b, "  %%t = graph.transpose %%x {perm = [%s]} : (%s) -> %s\n", permText, ty(opd), res)
	fmt.Fprintf(&b, "  %%t2 = graph.transpose %%x2 {perm = [%s]} : (%s) -> %s\n", permText, ty(opd), res)
	ops := []string{"add", "sub", "mul", "max", "min"}
	unary := []string{"neg", "abs"}
	if elem != "i32" {
		unary = append(unary, "exp", "silu", "tanh")
	}
	cur, vals := "%t", []string{"%y", "%t2"}
	for i := range 2 + r.IntN(4) {
		next := fmt.Sprintf("%%v%d", i)
		switch k := r.IntN(4); {
		case k == 0:
			fmt.Fprintf(&b, "  %s = graph.%s %s : %s\n", next, unary[r.IntN(len(unary))], cur, res)
		case k == 1:
			fmt.Fprintf(&b, "  %s = graph.%s %s, %%w : (%s, %s) -> %s\n", next, ops[r.IntN(len(ops))], cur, res, row, res)
		default:
			fmt.Fprintf(&b, "  %s = graph.%s %s, %s : %s\n", next, ops[r.IntN(len(ops))], cur, vals[r.IntN(len(vals))], res)
		}
		cur = next
	}
	if elem != "i32" && r.IntN(3) == 0 && shape[d] != ir.Dynamic {
		// a row kernel: its row read through the transposes (a row
		// kernel does not read a `?` extent along its rows through them)
		fmt.Fprintf(&b, "  %%sm = graph.softmax %s {axis = -1} : %s\n", cur, res)
		cur = "%sm"
	}
	out := res
	if r.IntN(4) == 0 {
		// the result stored through a transpose of its last axis
		p := make([]int, n)
		for i := range p {
			p[i] = i
		}
		p[d], p[n-1] = n-1, d
		sh := slices.Clone(shape)
		sh[d], sh[n-1] = shape[n-1], shape[d]
		out = ty(sh)
		fmt.Fprintf(&b, "  %%out = graph.transpose %s {perm = [%s]} : (%s) -> %s\n", cur,
			strings.Trim(strings.Join(strings.Fields(fmt.Sprint(p)), ", "), "[]"), res, out)
		cur = "%out"
	}
	fmt.Fprintf(&b, "  return %s : %s\n}\n", cur, out)
	src := b.String()
	return strings.Replace(src, ") -> "+res+" {", ") -> "+out+" {", 1)
}

// tiledDyn is the run-time extent of tiledProgram's `?` dimensions: past
// a tile of 32 rows, the last one cut short.
const tiledDyn = 37

// TestDiffRandomTiled runs tiledProgram's programs through the CPU
// lowering against the graph interpreter, as TestDiffRandomPrograms, and
// checks that each is one kernel, most of them accessing memory through
// strided loads or stores.
func TestDiffRandomTiled(t *testing.T) {
	t.Parallel()
	n := int64(120)
	if testing.Short() {
		n = 20
	}
	const pipeline = "decompose,fuse,lower-to-loops,sram-alloc"
	// kernels of a row of odd length run one lane at a time, and a result
	// transposed back reads its operands as they are: most, not all,
	// programs access memory through strided vectors
	var withStrided atomic.Int64
	defer func() {
		if !t.Failed() {
			require.GreaterOrEqual(t, withStrided.Load(), n/2, "programs with strided accesses")
		}
	}()
	for seed := int64(1); seed <= n; seed++ {
		src := tiledProgram(rand.New(rand.NewPCG(uint64(seed), 7)))
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			m := lowerText(t, src, pipeline, "cpu")
			kernels, strided := 0, 0
			m.Walk(func(op *ir.Operation) bool {
				if _, ok := loop.AsKernel(op); ok {
					kernels++
				}
				_, l := loop.LoadOp{Operation: op}.Axis()
				_, s := loop.StoreOp{Operation: op}.Axis()
				if op.Name() == loop.OpLoad && l || op.Name() == loop.OpStore && s {
					strided++
				}
				return true
			})
			require.Equal(t, 1, kernels, src)
			if strided > 0 {
				withStrided.Add(1)
			}
			runDiffOn(t, diffCase{name: fmt.Sprintf("seed %d", seed), src: src, pipeline: pipeline, target: "cpu", unfitOK: true, dyn: tiledDyn}, true)
		})
	}
}
