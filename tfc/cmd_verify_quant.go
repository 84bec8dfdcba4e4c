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
	"github.com/tensorforge/tensorforge/parser"
)

func init() {
	registerCommand(&command{
		name:    "verify-quant",
		usage:   "tfc verify-quant",
		summary: "run quantize, requantize and unchecked casts to ui8, i8, f8E4M3FN natively with and without legalize-numerics",
		run:     verifyQuantCommand,
	})
}

// quantCase is one conversion into a narrow type, written naively
// (unchecked cast, unclamped formula) and as what it means.
type quantCase struct {
	name string
	to   ir.ElemKind
	from ir.ElemKind // f32, or i32 for requantize
	// naive and legal are function bodies on %x of %N elements; %y is the
	// result. For a cast both are the same graph.cast.
	naive, legal string
	// cast cases are judged against the saturating conversion the pass
	// gives them (float to int) or the cast's own rounding (to f8); the
	// others against the interpreter's float64 evaluation of legal.
	cast bool
}

var quantCases = []quantCase{
	{name: "cast f32 -> ui8 (unchecked)", to: ir.UI8, from: ir.F32, cast: true,
		naive: "  %y = graph.cast %x : (tensor<%Nxf32>) -> tensor<%NxT>"},
	{name: "cast f32 -> i8 (unchecked)", to: ir.I8, from: ir.F32, cast: true,
		naive: "  %y = graph.cast %x : (tensor<%Nxf32>) -> tensor<%NxT>"},
	{name: "cast f32 -> f8E4M3FN", to: ir.F8E4M3FN, from: ir.F32, cast: true,
		naive: "  %y = graph.cast %x : (tensor<%Nxf32>) -> tensor<%NxT>"},
	{name: "quantize f32 -> ui8 {scale = 0.1, zero_point = 128}", to: ir.UI8, from: ir.F32,
		naive: naiveQuantize("0.1", "128.0", true),
		legal: "  %y = graph.quantize %x {scale = 0.1 : f32, zero_point = 128} : (tensor<%Nxf32>) -> tensor<%NxT>"},
	{name: "quantize f32 -> i8 {scale = 0.05, zero_point = -3}", to: ir.I8, from: ir.F32,
		naive: naiveQuantize("0.05", "-3.0", true),
		legal: "  %y = graph.quantize %x {scale = 0.05 : f32, zero_point = -3} : (tensor<%Nxf32>) -> tensor<%NxT>"},
	{name: "quantize f32 -> f8E4M3FN {scale = 0.5}", to: ir.F8E4M3FN, from: ir.F32,
		naive: naiveQuantize("0.5", "0.0", false),
		legal: "  %y = graph.quantize %x {scale = 0.5 : f32} : (tensor<%Nxf32>) -> tensor<%NxT>"},
	{name: "requantize i32 -> ui8 {in_scale = 0.02, in_zero_point = 5, scale = 0.1, zero_point = 128}", to: ir.UI8, from: ir.I32,
		naive: naiveRequantize("0.02", "5.0", "0.1", "128.0", true),
		legal: "  %y = graph.requantize %x {in_scale = 0.02 : f32, in_zero_point = 5, scale = 0.1 : f32, zero_point = 128} : (tensor<%Nxi32>) -> tensor<%NxT>"},
	{name: "requantize i32 -> i8 {in_scale = 0.02, in_zero_point = 5, scale = 0.1, zero_point = -2}", to: ir.I8, from: ir.I32,
		naive: naiveRequantize("0.02", "5.0", "0.1", "-2.0", true),
		legal: "  %y = graph.requantize %x {in_scale = 0.02 : f32, in_zero_point = 5, scale = 0.1 : f32, zero_point = -2} : (tensor<%Nxi32>) -> tensor<%NxT>"},
	{name: "requantize i32 -> f8E4M3FN {in_scale = 0.02, scale = 0.25}", to: ir.F8E4M3FN, from: ir.I32,
		naive: naiveRequantize("0.02", "0.0", "0.25", "0.0", false),
		legal: "  %y = graph.requantize %x {in_scale = 0.02 : f32, scale = 0.25 : f32} : (tensor<%Nxi32>) -> tensor<%NxT>"},
}

// naiveQuantize is round(x / scale) + zp cast without a clamp (to f8:
// x / scale + zp, the cast rounding).
func naiveQuantize(scale, zp string, round bool) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "  %%s = graph.constant dense<%s> : tensor<f32>\n", scale)
	sb.WriteString("  %q = graph.div %x, %s : (tensor<%Nxf32>, tensor<f32>) -> tensor<%Nxf32>\n")
	v := "%q"
	if round {
		sb.WriteString("  %r = graph.round %q : tensor<%Nxf32>\n")
		v = "%r"
	}
	fmt.Fprintf(&sb, "  %%z = graph.constant dense<%s> : tensor<f32>\n", zp)
	fmt.Fprintf(&sb, "  %%t = graph.add %s, %%z : (tensor<%%Nxf32>, tensor<f32>) -> tensor<%%Nxf32>\n", v)
	sb.WriteString("  %y = graph.cast %t : (tensor<%Nxf32>) -> tensor<%NxT>")
	return sb.String()
}

// naiveRequantize dequantizes and quantizes again without a clamp.
func naiveRequantize(inScale, inZP, scale, zp string, round bool) string {
	var sb strings.Builder
	sb.WriteString("  %f = graph.cast %x : (tensor<%Nxi32>) -> tensor<%Nxf32>\n")
	fmt.Fprintf(&sb, "  %%iz = graph.constant dense<%s> : tensor<f32>\n", inZP)
	sb.WriteString("  %d = graph.sub %f, %iz : (tensor<%Nxf32>, tensor<f32>) -> tensor<%Nxf32>\n")
	fmt.Fprintf(&sb, "  %%is = graph.constant dense<%s> : tensor<f32>\n", inScale)
	sb.WriteString("  %v = graph.mul %d, %is : (tensor<%Nxf32>, tensor<f32>) -> tensor<%Nxf32>\n")
	fmt.Fprintf(&sb, "  %%os = graph.constant dense<%s> : tensor<f32>\n", scale)
	sb.WriteString("  %q = graph.div %v, %os : (tensor<%Nxf32>, tensor<f32>) -> tensor<%Nxf32>\n")
	v := "%q"
	if round {
		sb.WriteString("  %r = graph.round %q : tensor<%Nxf32>\n")
		v = "%r"
	}
	fmt.Fprintf(&sb, "  %%z = graph.constant dense<%s> : tensor<f32>\n", zp)
	fmt.Fprintf(&sb, "  %%t = graph.add %s, %%z : (tensor<%%Nxf32>, tensor<f32>) -> tensor<%%Nxf32>\n", v)
	sb.WriteString("  %y = graph.cast %t : (tensor<%Nxf32>) -> tensor<%NxT>")
	return sb.String()
}

// quantInputs are the shown values, then the sweep of the summary row:
// every f16 bit pattern for float inputs, every i16 value for i32 ones.
func quantInputs(from ir.ElemKind) (shown []float64, sweep []float64, sweepName string) {
	if from == ir.I32 {
		shown = []float64{0, 1, -1, 5, 6, 100, 1000, 6000, 6400, 6500, 7000, 20000, -20000, -6000,
			math.MaxInt32, math.MinInt32, 1 << 20, -(1 << 20)}
		for v := math.MinInt16; v <= math.MaxInt16; v++ {
			sweep = append(sweep, float64(v))
		}
		return shown, sweep, "every i16 value"
	}
	shown = []float64{0, math.Copysign(0, -1), 1, -1, -1.5, 0.49, 12.7, 12.75, 25.45, 25.55, 127.5, 255.4, 255.5, 256,
		300.7, -129, 448, 464, 480, 1000, 1e4, 1e30, -1e30, 3e9, math.Inf(1), math.Inf(-1), math.NaN()}
	for b := 0; b < 1<<16; b++ {
		v, _ := numeric.FromBits(uint64(b), ir.F16)
		sweep = append(sweep, v)
	}
	return shown, sweep, "every f16 bit pattern"
}

// quantFuncText is the function of a body.
func quantFuncText(name, body string, c quantCase, n int) string {
	in := fmt.Sprintf("tensor<%dx%s>", n, c.from)
	out := fmt.Sprintf("tensor<%dx%s>", n, c.to)
	body = strings.NewReplacer("%Nxf32", fmt.Sprintf("%dxf32", n), "%Nxi32", fmt.Sprintf("%dxi32", n),
		"%NxT", fmt.Sprintf("%dx%s", n, c.to)).Replace(body)
	return fmt.Sprintf("func.func @%s(%%x: %s) -> %s {\n%s\n  return %%y : %s\n}\n", name, in, out, body, out)
}

// verifyQuantCommand is `tfc verify-quant`.
func verifyQuantCommand(args []string, sio *stdio) int {
	if !noArgs("verify-quant", args, sio) {
		return exitFailure
	}
	tc, err := cpurt.FindToolchain()
	if err != nil {
		printDiagnostics(sio.err, nil, []*ir.Diagnostic{ir.Errorf(ir.Location{}, "tfc verify-quant: %v", err)})
		return exitFailure
	}
	fail := func(err error) int {
		printDiagnostics(sio.err, nil, ir.AsDiagnostics(err))
		return exitFailure
	}
	var naiveSrc, legalSrc strings.Builder
	for i, c := range quantCases {
		shown, sweep, _ := quantInputs(c.from)
		n := len(shown) + len(sweep)
		legal := c.legal
		if c.cast {
			legal = c.naive
		}
		naiveSrc.WriteString(quantFuncText(fmt.Sprintf("q%d", i), c.naive, c, n))
		legalSrc.WriteString(quantFuncText(fmt.Sprintf("q%d", i), legal, c, n))
	}
	build := func(src, pipeline string) (*cpurt.Module, error) {
		return buildNative(tc, "verify-quant.tir", src, pipeline)
	}
	naiveBin, err := build(naiveSrc.String(), naivePipeline)
	if err != nil {
		return fail(err)
	}
	defer naiveBin.Close()
	legalBin, err := build(legalSrc.String(), legalizedPipeline)
	if err != nil {
		return fail(err)
	}
	defer legalBin.Close()
	ref, err := parser.Parse("verify-quant-ref.tir", legalSrc.String())
	if err != nil {
		return fail(err)
	}

	fmt.Fprintln(sio.out, "Conversions to narrow types compiled for the CPU and run natively:")
	fmt.Fprintln(sio.out, "  naive     the unchecked cast or unclamped formula, compiled without legalize-numerics")
	fmt.Fprintln(sio.out, "  legalized the cast compiled with legalize-numerics (saturating), or graph.quantize / graph.requantize at -O2")
	fmt.Fprintln(sio.out, "  reference the saturating conversion (casts to integers), the cast's own rounding (to f8E4M3FN),")
	fmt.Fprintln(sio.out, "            or the op in float64 by the reference interpreter; ok: legalized exact (within 1 ULP for f8)")
	wrong := 0
	for i, c := range quantCases {
		name := fmt.Sprintf("q%d", i)
		shown, sweep, sweepName := quantInputs(c.from)
		x := eval.NewTensor(c.from, []int64{int64(len(shown) + len(sweep))})
		copy(x.Data, shown)
		copy(x.Data[len(shown):], sweep)
		var got []*eval.Tensor
		for _, bin := range []*cpurt.Module{naiveBin, legalBin} {
			p, err := bin.Func(name)
			if err != nil {
				return fail(err)
			}
			out, err := p.Run([]*eval.Tensor{x})
			if err != nil {
				return fail(err)
			}
			got = append(got, out[0])
		}
		want := make([]float64, len(x.Data))
		if c.cast {
			for j, v := range x.Data {
				if c.to.IsInt() {
					want[j] = numeric.SaturateInt(v, c.to)
				} else {
					want[j] = numeric.RoundTo(v, c.to)
				}
			}
		} else {
			fn, _ := ref.Lookup(name)
			out, err := eval.Run(fn, []*eval.Tensor{x}, eval.Options{F64: true})
			if err != nil {
				return fail(err)
			}
			want = out[0].Data
		}
		match := func(g, w float64) bool {
			if c.to.IsInt() {
				return g == w
			}
			return withinBound(g, w, math.Abs(w), 1, c.to)
		}
		naiveWrong, legalWrong, sweepNaive, sweepLegal := 0, 0, 0, 0
		fmt.Fprintf(sio.out, "\n%s\n", c.name)
		tw := tabwriter.NewWriter(sio.out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "input\tnaive\tlegalized\treference\tok")
		for j := range x.Data {
			nOK := match(got[0].Data[j], want[j])
			lOK := match(got[1].Data[j], want[j])
			if j < len(shown) {
				if !nOK {
					naiveWrong++
				}
				if !lOK {
					legalWrong++
				}
				ok := "ok"
				if !lOK {
					ok = "WRONG"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", formatValue(x.Data[j]), formatValue(got[0].Data[j]),
					formatValue(got[1].Data[j]), formatValue(want[j]), ok)
				continue
			}
			if !nOK {
				sweepNaive++
			}
			if !lOK {
				sweepLegal++
			}
		}
		ok := "ok"
		if sweepLegal > 0 {
			ok = "WRONG"
		}
		fmt.Fprintf(tw, "%s (%d)\tnaive wrong on %d\tlegalized wrong on %d\t\t%s\n", sweepName, len(sweep), sweepNaive, sweepLegal, ok)
		tw.Flush()
		wrong += legalWrong + sweepLegal
	}
	if wrong > 0 {
		fmt.Fprintf(sio.out, "\n%d legalized results are wrong\n", wrong)
		return exitFailure
	}
	fmt.Fprintln(sio.out, "\nevery legalized result is exact (within 1 ULP for f8E4M3FN)")
	return exitOK
}
