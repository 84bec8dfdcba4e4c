package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/lowering/costmodel"
	"github.com/tensorforge/tensorforge/parser"

	// lower-to-loops registers itself: the traffic of a program is read
	// off the loop IR it produces.
	_ "github.com/tensorforge/tensorforge/lowering"
)

func init() {
	registerCommand(&command{
		name:    "memory-traffic",
		usage:   "tfc memory-traffic FILE.tir | --seq S --dim D",
		summary: "DRAM bytes each kernel reads and writes, before and after fusion",
		run:     memoryTrafficCommand,
	})
}

// trafficOptions are the flags of `tfc memory-traffic` besides the compile
// flags.
type trafficOptions struct {
	seq, dim      string
	dtype         string
	dynamicExtent string
}

// memoryTrafficCommand is
//
//	tfc memory-traffic --seq S --dim D [--dtype bf16] [--target NAME]
//	tfc memory-traffic FILE.tir [--target NAME] [compile flags]
//
// Both compile the program twice, with the pipeline the flags give
// (default -O2) and with the same pipeline without fusion (withoutFusion:
// every primitive op a kernel of its own, as -O0 runs it), and print the
// DRAM traffic of every kernel of both, read off the loop IR's buffers (or
// the graph IR when the pipeline does not lower).
func memoryTrafficCommand(args []string, sio *stdio) int {
	o := defaultCompileOptions()
	o.defaultLevel = "O2"
	fs := sio.newFlagSet()
	o.register(fs)
	var t trafficOptions
	fs.stringVar(&t.seq, "seq", "S", "the sequence length (rows of x and z) of the Llama chain")
	fs.stringVar(&t.dim, "dim", "D", "the model dimension (columns of x and z, length of w) of the Llama chain")
	fs.stringVar(&t.dtype, "dtype", "TYPE", "the element type of the Llama chain (default bf16)")
	fs.stringVar(&t.dynamicExtent, "dynamic-extent", "N", "the size of every '?' extent of the program's arguments (default 1)")
	positional, diag := fs.parse(args)
	if diag == nil {
		diag = checkCostFlags("memory-traffic", o)
	}
	llama := t.seq != "" || t.dim != "" || t.dtype != ""
	if diag == nil {
		switch {
		case llama && len(positional) > 0:
			diag = ir.Errorf(ir.Location{}, "`tfc memory-traffic` takes FILE.tir or --seq and --dim, not both")
		case !llama && len(positional) == 0:
			diag = ir.Errorf(ir.Location{}, "`tfc memory-traffic` needs FILE.tir ('-' for standard input), or --seq S and --dim D for the Llama chain")
		case len(positional) > 1:
			diag = ir.Errorf(ir.Location{}, "`tfc memory-traffic` takes one file, got %d: '%s'", len(positional), strings.Join(positional, "', '"))
		}
	}
	var cm costmodel.Options
	if diag == nil {
		cm.DynamicExtent, diag = positiveIntFlag("dynamic-extent", t.dynamicExtent, 1)
	}
	var chain llamaChain
	if diag == nil && llama {
		chain, diag = parseLlamaChain(t)
	}
	if diag != nil {
		printDiagnostics(sio.err, nil, []*ir.Diagnostic{diag})
		return exitFailure
	}
	c := newCompiler(o, sio)
	if c == nil {
		return exitFailure
	}

	var file, src string
	if llama {
		file, src = chain.fileName(), chain.source()
	} else {
		var d *ir.Diagnostic
		if file, src, d = readInput(positional, sio); d != nil {
			printDiagnostics(sio.err, nil, []*ir.Diagnostic{d})
			return exitFailure
		}
	}
	after := c.pipeline
	before := withoutFusion(after)
	beforeKs, status := c.kernelsOf(file, src, before, cm, false, sio)
	if status != exitOK {
		return status
	}
	afterKs, status := c.kernelsOf(file, src, after, cm, false, sio)
	if status != exitOK {
		return status
	}

	var out strings.Builder
	if llama {
		fmt.Fprintf(&out, "DRAM traffic of y = silu(rmsnorm(x, w)) * z on %s, x and z: %s, w: %s\n",
			c.target.Name, chain.rowsType(), chain.weightType())
	} else {
		fmt.Fprintf(&out, "DRAM traffic of %s on %s\n", file, c.target.Name)
	}
	if hasDynamic(beforeKs) || hasDynamic(afterKs) {
		fmt.Fprintf(&out, "every '?' extent is taken as %d (--dynamic-extent=N)\n", cm.DynamicExtent)
	}
	writeTrafficSection(&out, "before fusion", before, beforeKs)
	writeTrafficSection(&out, "after fusion", after, afterKs)
	b, a := costmodel.Sum(beforeKs).Bytes(), costmodel.Sum(afterKs).Bytes()
	fmt.Fprintf(&out, "\ntotal: %d B before fusion, %d B after", b, a)
	if a > 0 {
		fmt.Fprintf(&out, ", before / after = %.3f", float64(b)/float64(a))
	}
	out.WriteString("\n")
	if llama {
		fmt.Fprintf(&out, "ideal: one read of x, w and z and one write of y = %d B\n", chain.idealBytes())
	}
	return writeReport(o, out.String(), sio)
}

// writeTrafficSection prints the kernels of one compilation, headed by the
// pipeline that made them.
func writeTrafficSection(w io.Writer, title string, p ir.Pipeline, ks []costmodel.Kernel) {
	text := p.String()
	if text == "" {
		text = "(no passes)"
	}
	noun := "kernels"
	if len(ks) == 1 {
		noun = "kernel"
	}
	fmt.Fprintf(w, "\n%s: %d %s, pipeline '%s'\n", title, len(ks), noun, text)
	costmodel.WriteTraffic(w, ks)
}

// withoutFusion is p without `fuse`: the same program with every primitive
// op a kernel of its own. fuse decomposes composite ops before it groups
// them, and lower-to-loops needs them decomposed, so a `decompose` takes
// the place of the first fuse unless one runs before it; lower-to-loops
// launches each kernel on its own (horizontal=false).
func withoutFusion(p ir.Pipeline) ir.Pipeline {
	var out ir.Pipeline
	decomposed := false
	for _, e := range p {
		switch e.Info.Name {
		case "lower-to-loops":
			if !e.Options.IsSet("horizontal") {
				opts := strings.TrimSuffix(e.Options.Spec(), "}")
				if opts == "" {
					opts = "{horizontal=false}"
				} else {
					opts += " horizontal=false}"
				}
				if apart, err := ir.NewPipelineEntry(e.Info.Name, opts); err == nil {
					e = apart
				}
			}
		case "decompose":
			decomposed = true
		case "fuse":
			if decomposed {
				continue
			}
			d, err := ir.NewPipelineEntry("decompose", "")
			if err != nil {
				panic("tfc: the decompose pass is not registered")
			}
			e, decomposed = d, true
		}
		out = append(out, e)
	}
	return out
}

// kernelsOf compiles src with pipeline p and returns its kernels. When p
// lowers to loops, the traffic is the loop IR's and each kernel also gets
// the graph ops and FLOPs of the graph.fused it was lowered from (the
// program is compiled a second time, quietly, up to lower-to-loops);
// needFLOPs makes a failure to pair them an internal error. Diagnostics
// are printed; status is the exit status to return on failure.
func (c *compiler) kernelsOf(file, src string, p ir.Pipeline, opts costmodel.Options, needFLOPs bool, sio *stdio) ([]costmodel.Kernel, int) {
	full := *c
	full.pipeline = p
	m, status := full.compileText(file, src, sio)
	if status != exitOK {
		return nil, status
	}
	lowerAt := -1
	for i, e := range p {
		if e.Info.Name == "lower-to-loops" {
			lowerAt = i
			break
		}
	}
	if lowerAt < 0 && !hasLaunches(m) {
		ks, err := costmodel.GraphKernels(m, opts)
		return ks, reportCostError(err, file, src, sio)
	}
	loopKs, err := costmodel.LoopKernels(m, opts)
	if err != nil {
		return nil, reportCostError(err, file, src, sio)
	}
	if lowerAt < 0 {
		// the input was loop IR already: what its kernels compute is gone
		if needFLOPs {
			return nil, reportCostError(ir.Errorf(ir.Location{File: file, Line: 1, Col: 1},
				"the kernels of a program given as loop IR have no FLOP count: give its graph-level form"), file, src, sio)
		}
		return loopKs, exitOK
	}
	// the same program before lower-to-loops, without dumps or remarks:
	// they were printed by the full compilation
	quietOpts := *c.opts
	quietOpts.printBefore, quietOpts.printAfter = nil, nil
	quietOpts.printBeforeAll, quietOpts.printAfterAll, quietOpts.printAfterChange = false, false, false
	quietOpts.timing, quietOpts.crashReproducer = false, ""
	quiet := compiler{opts: &quietOpts, target: c.target, pipeline: p[:lowerAt], emitter: c.emitter, dumps: io.Discard}
	res := quiet.compile(file, src, 1)
	if res.Module.Operation == nil || res.Internal != nil {
		return nil, reportInternalError(sio, "the program compiles with the whole pipeline but not up to lower-to-loops", "", "", "")
	}
	graphKs, err := costmodel.GraphKernels(res.Module, opts)
	if err == nil {
		var paired []costmodel.Kernel
		if paired, err = costmodel.Pair(graphKs, loopKs); err == nil {
			return paired, exitOK
		}
	}
	if needFLOPs {
		return nil, reportInternalError(sio, fmt.Sprintf("the cost model cannot match the lowered kernels with the graph ones: %v", err), "", "", "")
	}
	return loopKs, exitOK
}

// hasLaunches reports whether m holds lowered functions.
func hasLaunches(m ir.Module) bool {
	found := false
	m.Walk(func(op *ir.Operation) bool {
		found = found || op.Name() == loop.OpLaunch
		return !found
	})
	return found
}

// reportCostError prints an error of the cost model (an op it cannot
// count, a buffer too large) and returns the exit status.
func reportCostError(err error, file, src string, sio *stdio) int {
	if err == nil {
		return exitOK
	}
	sm := &ir.SourceManager{}
	sm.AddFile(file, src)
	printDiagnostics(sio.err, sm, ir.AsDiagnostics(err))
	return exitFailure
}

// checkCostFlags rejects the compile flags that mean nothing to a command
// that prints a report instead of the compiled program.
func checkCostFlags(cmd string, o *compileOptions) *ir.Diagnostic {
	switch {
	case o.emit != "tir":
		return ir.Errorf(ir.Location{}, "--emit has no meaning for `tfc %s`, which prints a report", cmd)
	case o.splitInputFile:
		return ir.Errorf(ir.Location{}, "--split-input-file has no meaning for `tfc %s`", cmd)
	case o.verifyDiagnostics:
		return ir.Errorf(ir.Location{}, "--verify-diagnostics has no meaning for `tfc %s`", cmd)
	}
	return nil
}

// writeReport prints a report on standard output, or into the file -o names.
func writeReport(o *compileOptions, text string, sio *stdio) int {
	if o.output == "" || o.output == "-" {
		io.WriteString(sio.out, text)
		return exitOK
	}
	if err := os.WriteFile(o.output, []byte(text), 0o644); err != nil {
		printDiagnostics(sio.err, nil, []*ir.Diagnostic{ir.Errorf(ir.Location{}, "cannot write '%s': %s", o.output, sysError(err, "no such directory"))})
		return exitFailure
	}
	return exitOK
}

// hasDynamic reports whether a kernel moves a buffer with a `?` extent.
func hasDynamic(ks []costmodel.Kernel) bool {
	for _, k := range ks {
		for _, a := range append(append([]costmodel.Access(nil), k.Reads...), k.Writes...) {
			if s, ok := ir.ShapeOf(a.Type); ok && ir.HasDynamicDim(s) {
				return true
			}
		}
	}
	return false
}

// positiveIntFlag parses the value of --name, a positive integer; "" gives
// def.
func positiveIntFlag(name, v string, def int64) (int64, *ir.Diagnostic) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, ir.Errorf(ir.Location{}, "--%s takes a positive integer, not '%s'", name, v)
	}
	return n, nil
}

// ---------------------------------------------------------------------------
// The Llama chain

// llamaChain is y = silu(rmsnorm(x, w)) * z with x, z: seq x dim, w: dim.
type llamaChain struct {
	seq, dim int64
	elem     ir.ElemType
}

func parseLlamaChain(t trafficOptions) (llamaChain, *ir.Diagnostic) {
	if t.seq == "" || t.dim == "" {
		return llamaChain{}, ir.Errorf(ir.Location{}, "the Llama chain needs both --seq S and --dim D")
	}
	seq, d := positiveIntFlag("seq", t.seq, 0)
	if d != nil {
		return llamaChain{}, d
	}
	dim, d := positiveIntFlag("dim", t.dim, 0)
	if d != nil {
		return llamaChain{}, d
	}
	dtype := t.dtype
	if dtype == "" {
		dtype = "bf16"
	}
	k, ok := ir.ParseElemKind(dtype)
	if !ok || !k.IsFloat() {
		return llamaChain{}, ir.Errorf(ir.Location{}, "--dtype takes a floating-point element type (f64, f32, f16, bf16, f8E4M3FN, f8E5M2), not '%s'", dtype)
	}
	c := llamaChain{seq: seq, dim: dim, elem: ir.ElemType{Kind: k}}
	if _, ok := ir.ByteSizeOf(ir.Tensor(c.elem, seq, dim)); !ok || seq > 1<<40 || dim > 1<<40 {
		return llamaChain{}, ir.Errorf(ir.Location{}, "--seq %d --dim %d is too large to count its bytes", seq, dim)
	}
	return c, nil
}

func (c llamaChain) rowsType() string   { return fmt.Sprintf("%dx%dx%s", c.seq, c.dim, c.elem) }
func (c llamaChain) weightType() string { return fmt.Sprintf("%dx%s", c.dim, c.elem) }

// fileName names the generated source in diagnostics.
func (c llamaChain) fileName() string { return "<llama-chain>" }

// source is the chain as .tir text, as examples/rms_silu_mul.tir writes it.
func (c llamaChain) source() string {
	rows, w := "tensor<"+c.rowsType()+">", "tensor<"+c.weightType()+">"
	return "func.func @rms_silu_mul(%x: " + rows + ", %w: " + w + ", %z: " + rows + ") -> " + rows + " {\n" +
		"  %n = graph.rmsnorm %x, %w {eps = 1.0e-05 : f32} : (" + rows + ", " + w + ") -> " + rows + "\n" +
		"  %s = graph.silu %n : " + rows + "\n" +
		"  %y = graph.mul %s, %z : " + rows + "\n" +
		"  return %y : " + rows + "\n" +
		"}\n"
}

// idealBytes is one read of x, w and z and one write of y: 3*S*D + D
// elements.
func (c llamaChain) idealBytes() int64 {
	return (3*c.seq*c.dim + c.dim) * c.elem.Kind.ByteSize()
}

// parse checks that the chain's source is valid .tir (used by tests).
func (c llamaChain) parse() (ir.Module, error) { return parser.Parse(c.fileName(), c.source()) }
