package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
	"github.com/tensorforge/tensorforge/lowering/costmodel"
)

func init() {
	registerCommand(&command{
		name:    "roofline",
		usage:   "tfc roofline --hw NAME --flops F --bytes B | FILE.tir",
		summary: "one kernel, or every kernel of FILE.tir, on a machine's roofline: intensity, ridge point, attainable throughput, bound, minimal time",
		run:     rooflineCommand,
	})
}

// rooflineOptions are the flags of `tfc roofline` besides the compile flags.
type rooflineOptions struct {
	hw            string
	flops, bytes  string
	precision     string
	plot          string
	bandwidth     string
	peak          string
	dynamicExtent string
	targetGiven   bool
}

// rooflineCommand is
//
//	tfc roofline --hw NAME --flops F --bytes B [--precision P] [--plot out.svg]
//	tfc roofline FILE.tir [--target NAME] [--precision P] [--plot out.svg] [compile flags]
//
// The first places F FLOPs over B bytes of DRAM traffic on the machine's
// roofline; the second does so for every kernel the pipeline (default
// -O2) makes of the program, with the FLOPs counted from its graph ops and
// the bytes from its buffers, and draws them with --plot.
func rooflineCommand(args []string, sio *stdio) int {
	o := defaultCompileOptions()
	o.defaultLevel = "O2"
	fs := sio.newFlagSet()
	o.register(fs)
	var r rooflineOptions
	// remember whether --target was given: it may name the machine of the
	// one-kernel form, as --hw does
	td := fs.defs["target"]
	setTarget := td.set
	td.set = func(v string, has bool) error { r.targetGiven = true; return setTarget(v, has) }
	fs.stringVar(&r.hw, "hw", "NAME", "the machine (a name or alias of `tfc targets`)")
	fs.stringVar(&r.flops, "flops", "F", "the floating-point work of one kernel, in FLOP")
	fs.stringVar(&r.bytes, "bytes", "B", "the DRAM traffic of one kernel, in bytes")
	fs.stringVar(&r.precision, "precision", "P", "the compute precision of the peak (default bf16, f32 on cpu)")
	fs.stringVar(&r.plot, "plot", "FILE", "draw the roofline with the kernels into FILE (.svg or .png)")
	fs.stringVar(&r.bandwidth, "bw", "B/S", "use this DRAM bandwidth (bytes/s) instead of the target's")
	fs.stringVar(&r.peak, "peak", "FLOP/S", "use this peak compute rate (FLOP/s) instead of the target's")
	fs.stringVar(&r.dynamicExtent, "dynamic-extent", "N", "the size of every '?' extent of the program's arguments (default 1)")
	positional, diag := fs.parse(args)
	if diag == nil {
		diag = checkCostFlags("roofline", o)
	}
	oneKernel := r.flops != "" || r.bytes != ""
	if diag == nil {
		switch {
		case oneKernel && len(positional) > 0:
			diag = ir.Errorf(ir.Location{}, "--flops and --bytes describe one kernel; with FILE.tir the kernels come from the program")
		case !oneKernel && len(positional) == 0:
			diag = ir.Errorf(ir.Location{}, "`tfc roofline` needs --hw NAME --flops F --bytes B, or FILE.tir ('-' for standard input)")
		case len(positional) > 1:
			diag = ir.Errorf(ir.Location{}, "`tfc roofline` takes one file, got %d: '%s'", len(positional), strings.Join(positional, "', '"))
		}
	}
	var format string
	if diag == nil && r.plot != "" {
		format, diag = plotFormat(r.plot)
	}
	var m costmodel.Machine
	if diag == nil {
		m, diag = r.machine(o, oneKernel)
	}
	if diag != nil {
		printDiagnostics(sio.err, nil, []*ir.Diagnostic{diag})
		return exitFailure
	}
	if oneKernel {
		return rooflineOneKernel(o, &r, m, format, sio)
	}
	return rooflineProgram(o, &r, m, positional, format, sio)
}

// machine resolves the machine and its figures from --hw / --target,
// --precision, --bw and --peak.
func (r *rooflineOptions) machine(o *compileOptions, oneKernel bool) (costmodel.Machine, *ir.Diagnostic) {
	name := r.hw
	switch {
	case name == "" && oneKernel && !r.targetGiven:
		return costmodel.Machine{}, ir.Errorf(ir.Location{}, "`tfc roofline --flops F --bytes B` needs --hw NAME (see `tfc targets`)")
	case name == "":
		name = o.targetName
	case r.targetGiven:
		a, errA := target.Lookup(name)
		b, errB := target.Lookup(o.targetName)
		if errA == nil && errB == nil && a != b {
			return costmodel.Machine{}, ir.Errorf(ir.Location{}, "--hw %s and --target %s name different machines", name, o.targetName)
		}
	}
	t, err := target.Lookup(name)
	if err != nil {
		return costmodel.Machine{}, ir.Errorf(ir.Location{}, "%v", err)
	}
	o.targetName = t.Name
	m, err := costmodel.MachineFor(t, r.precision)
	if err != nil {
		return costmodel.Machine{}, ir.Errorf(ir.Location{}, "%v", err)
	}
	if r.bandwidth != "" {
		v, d := positiveNumberFlag("bw", r.bandwidth)
		if d != nil {
			return costmodel.Machine{}, d
		}
		m.Bandwidth, m.Source = v, "--bw and the target's table"
	}
	if r.peak != "" {
		v, d := positiveNumberFlag("peak", r.peak)
		if d != nil {
			return costmodel.Machine{}, d
		}
		m.PeakFLOPS, m.Source = v, "--peak and the target's table"
	}
	if r.bandwidth != "" && r.peak != "" {
		m.Source = "--bw and --peak"
	}
	return m, nil
}

// rooflineOneKernel is `tfc roofline --hw NAME --flops F --bytes B`.
func rooflineOneKernel(o *compileOptions, r *rooflineOptions, m costmodel.Machine, format string, sio *stdio) int {
	if r.flops == "" || r.bytes == "" {
		printDiagnostics(sio.err, nil, []*ir.Diagnostic{ir.Errorf(ir.Location{}, "`tfc roofline` needs both --flops F and --bytes B")})
		return exitFailure
	}
	flops, diag := countFlag("flops", r.flops)
	if diag == nil {
		var b float64
		b, diag = countFlag("bytes", r.bytes)
		if diag == nil {
			var out strings.Builder
			p := m.Place(flops, b)
			costmodel.WriteRoofline(&out, m, p)
			if format != "" {
				pts := []costmodel.PlotPoint{{Label: "kernel", Point: p}}
				if p.Intensity <= 0 || math.IsInf(p.Intensity, 0) {
					pts = nil
					out.WriteString("not plotted: an intensity of 0 or infinity has no place on log axes\n")
				}
				if status := writePlot(r.plot, format, m, pts, sio); status != exitOK {
					return status
				}
			}
			return writeReport(o, out.String(), sio)
		}
	}
	printDiagnostics(sio.err, nil, []*ir.Diagnostic{diag})
	return exitFailure
}

// rooflineProgram is `tfc roofline FILE.tir`.
func rooflineProgram(o *compileOptions, r *rooflineOptions, m costmodel.Machine, positional []string, format string, sio *stdio) int {
	var cm costmodel.Options
	var diag *ir.Diagnostic
	if cm.DynamicExtent, diag = positiveIntFlag("dynamic-extent", r.dynamicExtent, 1); diag != nil {
		printDiagnostics(sio.err, nil, []*ir.Diagnostic{diag})
		return exitFailure
	}
	c := newCompiler(o, sio)
	if c == nil {
		return exitFailure
	}
	file, src, diag := readInput(positional, sio)
	if diag != nil {
		printDiagnostics(sio.err, nil, []*ir.Diagnostic{diag})
		return exitFailure
	}
	ks, status := c.kernelsOf(file, src, c.pipeline, cm, true, sio)
	if status != exitOK {
		return status
	}
	var out strings.Builder
	fmt.Fprintf(&out, "roofline of %s on %s\n", file, costmodel.MachineLine(m))
	if hasDynamic(ks) {
		fmt.Fprintf(&out, "every '?' extent is taken as %d (--dynamic-extent=N)\n", cm.DynamicExtent)
	}
	out.WriteString("\n")
	costmodel.WriteKernelRoofline(&out, m, ks)
	if format != "" {
		pts, skipped := costmodel.KernelPoints(m, ks)
		if len(skipped) > 0 {
			fmt.Fprintf(&out, "not plotted (no FLOPs or no bytes, which log axes cannot show): %s\n", strings.Join(skipped, ", "))
		}
		if status := writePlot(r.plot, format, m, pts, sio); status != exitOK {
			return status
		}
	}
	return writeReport(o, out.String(), sio)
}

// plotFormat is the image format a --plot file name asks for.
func plotFormat(path string) (string, *ir.Diagnostic) {
	ext := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	for _, f := range costmodel.PlotFormats {
		if ext == f {
			return f, nil
		}
	}
	return "", ir.Errorf(ir.Location{}, "--plot writes .%s files, not '%s'", strings.Join(costmodel.PlotFormats, " or ."), path)
}

// writePlot draws the roofline into path.
func writePlot(path, format string, m costmodel.Machine, pts []costmodel.PlotPoint, sio *stdio) int {
	var buf bytes.Buffer
	title := fmt.Sprintf("Roofline of %s (%s), %s", m.Name, m.Description, m.Precision)
	if err := costmodel.WritePlot(&buf, m, title, pts, format); err != nil {
		return reportInternalError(sio, fmt.Sprintf("cannot draw the roofline: %v", err), "", "", "")
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		printDiagnostics(sio.err, nil, []*ir.Diagnostic{ir.Errorf(ir.Location{}, "cannot write '%s': %s", path, sysError(err, "no such directory"))})
		return exitFailure
	}
	return exitOK
}

// countFlag parses --flops or --bytes: a finite number, not negative
// ("50000000", "5e7").
func countFlag(name, v string) (float64, *ir.Diagnostic) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, ir.Errorf(ir.Location{}, "--%s takes a number, not '%s'", name, v)
	}
	if f < 0 {
		return 0, ir.Errorf(ir.Location{}, "--%s must not be negative, got %s", name, v)
	}
	return f, nil
}

// positiveNumberFlag parses a rate: a finite number above zero.
func positiveNumberFlag(name, v string) (float64, *ir.Diagnostic) {
	f, d := countFlag(name, v)
	if d == nil && f == 0 {
		d = ir.Errorf(ir.Location{}, "--%s must be above zero, got %s", name, v)
	}
	return f, d
}
