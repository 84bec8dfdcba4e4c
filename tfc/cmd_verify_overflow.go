package main

import (
	"fmt"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/emit/cpurt"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
	"github.com/tensorforge/tensorforge/ir/target"
	"github.com/tensorforge/tensorforge/parser"
)

func init() {
	registerCommand(&command{
		name:    "verify-overflow",
		usage:   "tfc verify-overflow [--dtype f32,f16,bf16]",
		summary: "run logaddexp, logaddexp2, softmax and logsumexp natively with and without legalize-numerics at extreme inputs",
		run:     verifyOverflowCommand,
	})
}

// The graph pipelines the verify commands compare, before the lowering:
// -O2 with legalize-numerics and the same without it.
const (
	legalizedPipeline = "canonicalize,cse,legalize-numerics,decompose,fuse,canonicalize,cse,dce"
	naivePipeline     = "canonicalize,cse,decompose,fuse,canonicalize,cse,dce"
)

// buildNative compiles src through pipeline (compileForCPU) into a native
// module built with toolchain tc.
func buildNative(tc *cpurt.Toolchain, file, src, pipeline string) (*cpurt.Module, error) {
	m, err := compileForCPU(file, src, pipeline)
	if err != nil {
		return nil, err
	}
	return cpurt.CompileModule(m, cpurt.Options{Toolchain: tc})
}

// compileForCPU parses src and runs pipeline and the CPU lowering on it,
// with exact rounding: the verify commands show what a formula does in its
// element type, op by op, as eager evaluation computes it (the default
// rounding keeps a fused f16 intermediate in f32, where exp(13) does not
// overflow, and would hide the hazard the naive column shows).
func compileForCPU(file, src, pipeline string) (ir.Module, error) {
	m, err := parser.ParseAt(file, src, 1)
	if err != nil {
		return ir.Module{}, err
	}
	if err := ir.Verify(m.Operation); err != nil {
		return ir.Module{}, err
	}
	t, err := target.Lookup("cpu")
	if err != nil {
		return ir.Module{}, err
	}
	p, err := ir.ParsePipeline(pipeline)
	if err != nil {
		return ir.Module{}, err
	}
	diags := &ir.Diagnostics{}
	pm := &ir.PassManager{Pipeline: p, VerifyEach: true}
	if err := pm.Run(m, &ir.PassContext{Diags: diags, Target: t, ExactRounding: true}); err != nil {
		if errs := errorDiags(diags.List); len(errs) > 0 {
			return ir.Module{}, ir.ErrorList(errs)
		}
		return ir.Module{}, err
	}
	if err := lowerForCPU(m, t, true); err != nil {
		return ir.Module{}, err
	}
	return m, nil
}

// overflowCase is one overflow-prone computation: the formula as it is
// often written, and the graph op that means it.
type overflowCase struct {
	name string // the naive formula
	op   string // the graph op
	row  bool   // over rows of rowLen (softmax, logsumexp) or element-wise
	// naive and opForm are function bodies; %T is the element type, %N the
	// row count.
	naive, opForm string
	// scaleOf is the magnitude errors are counted in ULPs of, after
	// docs/numerics.md; bound the ULPs allowed for f32 and for f16/bf16.
	scale             func(y float64, in []float64) float64
	boundF32, bound16 float64
}

const rowLen = 8

var overflowCases = []overflowCase{
	{
		name: "log(exp(a) + exp(b))", op: "logaddexp",
		naive: `  %ea = graph.exp %a : tensor<%NxT>
  %eb = graph.exp %b : tensor<%NxT>
  %s = graph.add %ea, %eb : tensor<%NxT>
  %y = graph.log %s : tensor<%NxT>`,
		opForm: `  %y = graph.logaddexp %a, %b : tensor<%NxT>`,
		scale:  maxMagnitude, boundF32: 4, bound16: 1,
	},
	{
		name: "log2(exp2(a) + exp2(b))", op: "logaddexp2",
		naive: `  %ea = graph.exp2 %a : tensor<%NxT>
  %eb = graph.exp2 %b : tensor<%NxT>
  %s = graph.add %ea, %eb : tensor<%NxT>
  %y = graph.log2 %s : tensor<%NxT>`,
		opForm: `  %y = graph.logaddexp2 %a, %b : tensor<%NxT>`,
		scale:  maxMagnitude, boundF32: 4, bound16: 1,
	},
	{
		name: "exp(x) / sum(exp(x))", op: "softmax", row: true,
		naive: `  %e = graph.exp %x : tensor<%Nx8xT>
  %s = graph.reduce_sum %e {axes = [-1], keepdim = true} : (tensor<%Nx8xT>) -> tensor<%Nx1xT>
  %y = graph.div %e, %s : (tensor<%Nx8xT>, tensor<%Nx1xT>) -> tensor<%Nx8xT>`,
		opForm: `  %y = graph.softmax %x {axis = -1} : tensor<%Nx8xT>`,
		scale:  func(y float64, _ []float64) float64 { return math.Abs(y) }, boundF32: 96, bound16: 1,
	},
	{
		name: "log(sum(exp(x)))", op: "logsumexp", row: true,
		naive: `  %e = graph.exp %x : tensor<%Nx8xT>
  %s = graph.reduce_sum %e {axes = [-1]} : (tensor<%Nx8xT>) -> tensor<%NxT>
  %y = graph.log %s : tensor<%NxT>`,
		opForm: `  %y = graph.logsumexp %x {axis = -1} : (tensor<%Nx8xT>) -> tensor<%NxT>`,
		scale: func(y float64, row []float64) float64 {
			m := math.Abs(y)
			if rm := rowMax(row); !math.IsInf(rm, 0) && !math.IsNaN(rm) {
				m = math.Max(m, math.Abs(rm))
			}
			return m
		},
		boundF32: 4, bound16: 1,
	},
}

// maxMagnitude is max(|y|, |a|, |b|) over the finite ones.
func maxMagnitude(y float64, in []float64) float64 {
	m := 0.0
	for _, v := range append([]float64{y}, in...) {
		if !math.IsInf(v, 0) && !math.IsNaN(v) {
			m = math.Max(m, math.Abs(v))
		}
	}
	return m
}

func rowMax(row []float64) float64 {
	m := math.Inf(-1)
	for _, v := range row {
		if math.IsNaN(v) {
			return v
		}
		m = math.Max(m, v)
	}
	return m
}

// funcText is the function of a case body for element type t and n rows.
func (c overflowCase) funcText(name, body, t string, n int) string {
	in := fmt.Sprintf("%%a: tensor<%dx%s>, %%b: tensor<%dx%s>", n, t, n, t)
	out := fmt.Sprintf("tensor<%dx%s>", n, t)
	if c.row {
		in = fmt.Sprintf("%%x: tensor<%dx%dx%s>", n, rowLen, t)
		if c.op == "softmax" {
			out = fmt.Sprintf("tensor<%dx%dx%s>", n, rowLen, t)
		}
	}
	body = strings.NewReplacer("%NxT", fmt.Sprintf("%dx%s", n, t), "%Nx8xT", fmt.Sprintf("%dx%dx%s", n, rowLen, t),
		"%Nx1xT", fmt.Sprintf("%dx1x%s", n, t)).Replace(body)
	return fmt.Sprintf("func.func @%s(%s) -> %s {\n%s\n  return %%y : %s\n}\n", name, in, out, body, out)
}

// overflowThreshold is where exp overflows in t: 88.72 in f32 and bf16,
// 11.09 in f16.
func overflowThreshold(k ir.ElemKind) float64 {
	if k == ir.F16 {
		return 11.09
	}
	return 88.72
}

// binaryInputs are the (a, b) pairs of the element-wise cases: ordinary
// values, values past the overflow threshold, the largest finite value,
// infinities and NaN.
func binaryInputs(k ir.ElemKind) [][2]float64 {
	th := overflowThreshold(k)
	big := math.Ceil(th * 1.1)
	huge := numeric.MaxFinite(k)
	inf, nan := math.Inf(1), math.NaN()
	pairs := [][2]float64{
		{0, 0}, {1, 2}, {-2.5, 3}, {th - 0.5, th - 1}, {big, big}, {big, big - 1}, {big, -big},
		{-big * 8, -big * 8}, {huge, huge}, {huge, 0}, {-huge, -huge},
		{inf, inf}, {inf, -inf}, {-inf, -inf}, {-inf, 1}, {nan, 1},
	}
	for i := range pairs {
		pairs[i][0] = numeric.RoundTo(pairs[i][0], k)
		pairs[i][1] = numeric.RoundTo(pairs[i][1], k)
	}
	return pairs
}

// rowInputs are the rows of the row cases.
func rowInputs(k ir.ElemKind) [][]float64 {
	th := overflowThreshold(k)
	big := math.Ceil(th * 1.1)
	huge := numeric.MaxFinite(k)
	inf, nan := math.Inf(1), math.NaN()
	ramp := func(from, step float64) []float64 {
		r := make([]float64, rowLen)
		for i := range r {
			r[i] = from + step*float64(i)
		}
		return r
	}
	rows := [][]float64{
		ramp(0, 1),
		ramp(big, 1),
		ramp(th-0.5, 0),
		ramp(-big*8, -1),
		{huge, 0, -huge, 1, 2, 3, 4, 5},
		ramp(-inf, 0),
		{inf, 0, 1, 2, 3, 4, 5, 6},
		{nan, 0, 1, 2, 3, 4, 5, 6},
	}
	for _, r := range rows {
		for i := range r {
			r[i] = numeric.RoundTo(r[i], k)
		}
	}
	return rows
}

// overflowResult is one row of the table.
type overflowResult struct {
	input                 string
	naive, legal, op, ref string
	ok                    bool
	naiveWrong            bool
}

// verifyOverflowCommand is `tfc verify-overflow [--dtype f32,f16,bf16]`.
func verifyOverflowCommand(args []string, sio *stdio) int {
	fs := sio.newFlagSet()
	var dtypes []string
	fs.listVar(&dtypes, "dtype", "TYPES", "the element types to check (default f32,f16,bf16)")
	positional, diag := fs.parse(args)
	if diag == nil && len(positional) > 0 {
		diag = ir.Errorf(ir.Location{}, "`tfc verify-overflow` takes no files, got '%s'", strings.Join(positional, " "))
	}
	kinds, d := parseDtypes(dtypes, []ir.ElemKind{ir.F32, ir.F16, ir.BF16}, []ir.ElemKind{ir.F32, ir.F16, ir.BF16})
	if diag == nil {
		diag = d
	}
	if diag != nil {
		printDiagnostics(sio.err, nil, []*ir.Diagnostic{diag})
		return exitFailure
	}
	tc, err := cpurt.FindToolchain()
	if err != nil {
		printDiagnostics(sio.err, nil, []*ir.Diagnostic{ir.Errorf(ir.Location{}, "tfc verify-overflow: %v", err)})
		return exitFailure
	}

	// One source with every naive formula, one with every op.
	var naiveSrc, opSrc strings.Builder
	for _, k := range kinds {
		for _, c := range overflowCases {
			n := len(binaryInputs(k))
			if c.row {
				n = len(rowInputs(k))
			}
			naiveSrc.WriteString(c.funcText(c.op+"_"+k.String(), c.naive, k.String(), n))
			opSrc.WriteString(c.funcText(c.op+"_"+k.String(), c.opForm, k.String(), n))
		}
	}
	fail := func(err error) int {
		printDiagnostics(sio.err, nil, ir.AsDiagnostics(err))
		return exitFailure
	}
	build := func(src, pipeline string) (*cpurt.Module, error) {
		return buildNative(tc, "verify-overflow.tir", src, pipeline)
	}
	naiveBin, err := build(naiveSrc.String(), naivePipeline)
	if err != nil {
		return fail(err)
	}
	defer naiveBin.Close()
	legalBin, err := build(naiveSrc.String(), legalizedPipeline)
	if err != nil {
		return fail(err)
	}
	defer legalBin.Close()
	opBin, err := build(opSrc.String(), legalizedPipeline)
	if err != nil {
		return fail(err)
	}
	defer opBin.Close()
	ref, err := parser.Parse("verify-overflow-ref.tir", opSrc.String())
	if err != nil {
		return fail(err)
	}

	fmt.Fprintln(sio.out, "Overflow-prone formulas compiled for the CPU and run natively:")
	fmt.Fprintln(sio.out, "  naive     the formula as written, compiled without legalize-numerics (-O2 minus legalize-numerics)")
	fmt.Fprintln(sio.out, "  legalized the same formula compiled with legalize-numerics (-O2)")
	fmt.Fprintln(sio.out, "  op        the graph op that means it, compiled at -O2")
	fmt.Fprintln(sio.out, "  reference the op evaluated in float64 by the reference interpreter")
	fmt.Fprintln(sio.out, "  ok        legalized and op within the bound of docs/numerics.md")
	wrong := 0
	for _, k := range kinds {
		for _, c := range overflowCases {
			fname := c.op + "_" + k.String()
			inputs := overflowInputs(c, k)
			var results [][]*eval.Tensor
			for _, bin := range []*cpurt.Module{naiveBin, legalBin, opBin} {
				p, err := bin.Func(fname)
				if err != nil {
					return fail(err)
				}
				out, err := p.Run(inputs)
				if err != nil {
					return fail(err)
				}
				results = append(results, out)
			}
			fn, _ := ref.Lookup(fname)
			want, err := eval.Run(fn, inputs, eval.Options{F64: true})
			if err != nil {
				return fail(err)
			}
			rows := judgeOverflow(c, k, inputs, results[0][0], results[1][0], results[2][0], want[0])
			nw, lw := 0, 0
			for _, r := range rows {
				if r.naiveWrong {
					nw++
				}
				if !r.ok {
					lw++
				}
			}
			wrong += lw
			fmt.Fprintf(sio.out, "\n%s = %s, %s: naive wrong on %d of %d inputs, legalized wrong on %d\n", c.name, c.op, k, nw, len(rows), lw)
			tw := tabwriter.NewWriter(sio.out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "input\tnaive\tlegalized\top\treference\tok")
			for _, r := range rows {
				ok := "ok"
				if !r.ok {
					ok = "WRONG"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.input, r.naive, r.legal, r.op, r.ref, ok)
			}
			tw.Flush()
		}
	}
	if wrong > 0 {
		fmt.Fprintf(sio.out, "\n%d legalized results are wrong\n", wrong)
		return exitFailure
	}
	fmt.Fprintln(sio.out, "\nevery legalized result is within its bound")
	return exitOK
}

// parseDtypes reads a --dtype list.
func parseDtypes(names []string, def, allowed []ir.ElemKind) ([]ir.ElemKind, *ir.Diagnostic) {
	if len(names) == 0 {
		return def, nil
	}
	var out []ir.ElemKind
	for _, n := range names {
		k, ok := ir.ParseElemKind(n)
		found := false
		for _, a := range allowed {
			found = found || (ok && a == k)
		}
		if !found {
			var as []string
			for _, a := range allowed {
				as = append(as, a.String())
			}
			return nil, ir.Errorf(ir.Location{}, "--dtype: '%s' is not one of %s", n, strings.Join(as, ", "))
		}
		out = append(out, k)
	}
	return out, nil
}

// overflowInputs are the input tensors of a case.
func overflowInputs(c overflowCase, k ir.ElemKind) []*eval.Tensor {
	if c.row {
		rows := rowInputs(k)
		x := eval.NewTensor(k, []int64{int64(len(rows)), rowLen})
		for i, r := range rows {
			copy(x.Data[i*rowLen:], r)
		}
		return []*eval.Tensor{x}
	}
	pairs := binaryInputs(k)
	a := eval.NewTensor(k, []int64{int64(len(pairs))})
	b := eval.NewTensor(k, []int64{int64(len(pairs))})
	for i, p := range pairs {
		a.Data[i], b.Data[i] = p[0], p[1]
	}
	return []*eval.Tensor{a, b}
}

// judgeOverflow builds the table rows of a case: one per pair or row.
func judgeOverflow(c overflowCase, k ir.ElemKind, inputs []*eval.Tensor, naive, legal, op, ref *eval.Tensor) []overflowResult {
	bound := c.boundF32
	if k != ir.F32 {
		bound = c.bound16
	}
	per := 1
	if c.op == "softmax" {
		per = rowLen
	}
	var out []overflowResult
	for i := 0; i*per < len(ref.Data); i++ {
		var in []float64
		var input string
		if c.row {
			in = inputs[0].Data[i*rowLen : (i+1)*rowLen]
			input = formatRow(in)
		} else {
			in = []float64{inputs[0].Data[i], inputs[1].Data[i]}
			input = fmt.Sprintf("(%s, %s)", formatValue(in[0]), formatValue(in[1]))
		}
		r := overflowResult{input: input, ok: true}
		sl := func(t *eval.Tensor) []float64 { return t.Data[i*per : (i+1)*per] }
		for j := 0; j < per; j++ {
			y := ref.Data[i*per+j]
			s := c.scale(y, in)
			if !withinBound(legal.Data[i*per+j], y, s, bound, k) || !withinBound(op.Data[i*per+j], y, s, bound, k) {
				r.ok = false
			}
			if !withinBound(naive.Data[i*per+j], y, s, bound, k) {
				r.naiveWrong = true
			}
		}
		r.naive, r.legal, r.op, r.ref = formatRow(sl(naive)), formatRow(sl(legal)), formatRow(sl(op)), formatRow(sl(ref))
		out = append(out, r)
	}
	return out
}

// withinBound reports whether got matches the float64 reference ref of a
// result of kind k: NaN for NaN, the infinity a reference beyond the range
// rounds to, otherwise within bound ULPs of k at magnitude scale.
func withinBound(got, ref, scale, bound float64, k ir.ElemKind) bool {
	r := numeric.RoundTo(ref, k)
	switch {
	case math.IsNaN(r) || math.IsNaN(got):
		return math.IsNaN(r) && math.IsNaN(got)
	case math.IsInf(r, 0) || math.IsInf(got, 0):
		return r == got
	}
	return math.Abs(got-ref) <= bound*ulpOf(math.Max(scale, math.Abs(ref)), k)
}

// ulpOf is the spacing of the values of float kind k at magnitude x.
func ulpOf(x float64, k ir.ElemKind) float64 {
	man, emin := 23, -126
	switch k {
	case ir.F64:
		man, emin = 52, -1022
	case ir.F16:
		man, emin = 10, -14
	case ir.BF16:
		man, emin = 7, -126
	case ir.F8E4M3FN:
		man, emin = 3, -6
	case ir.F8E5M2:
		man, emin = 2, -14
	}
	e := emin
	if x != 0 && !math.IsInf(x, 0) && !math.IsNaN(x) {
		_, fe := math.Frexp(x) // x = f * 2^fe, f in [0.5, 1)
		e = max(fe-1, emin)
	}
	return math.Ldexp(1, e-man)
}

// formatValue prints a value compactly: 6 significant digits.
func formatValue(v float64) string {
	switch {
	case math.IsNaN(v):
		return "nan"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	return fmt.Sprintf("%.6g", v)
}

// formatRow prints one value, or a row as `[a b c ... z]`.
func formatRow(vs []float64) string {
	if len(vs) == 1 {
		return formatValue(vs[0])
	}
	var parts []string
	for i, v := range vs {
		if len(vs) > 4 && i == 2 {
			parts = append(parts, "...")
			continue
		}
		if len(vs) > 4 && i > 2 && i < len(vs)-1 {
			continue
		}
		parts = append(parts, formatValue(v))
	}
	return "[" + strings.Join(parts, " ") + "]"
}
