package main

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/tensorforge/tensorforge/emit/cpurt"
	"github.com/tensorforge/tensorforge/ir"
)

func init() {
	registerCommand(&command{
		name:    "run",
		usage:   "tfc run FILE.tir --input NAME=x.npy ... --output DIR",
		summary: "the contract of interpret, compiled for the CPU through LLVM IR (default -O2) and run as native code",
		run:     runCommand,
	})
}

// runCommand is
//
//	tfc run FILE.tir [compile flags] --input NAME=x.npy ... --output DIR
//	        [--func NAME] [--random-inputs SEED] [--threads N] [--time N]
//
// It compiles with the pipeline the flags give (-O2 by default), finishes
// lowering if the pipeline stopped at the graph level, emits LLVM IR,
// builds it with llc and the C compiler into a program with the runtime,
// and runs it on every core.
func runCommand(args []string, sio *stdio) int {
	o := defaultCompileOptions()
	o.defaultLevel = "O2"
	fs := sio.newFlagSet()
	o.register(fs)
	var e execOptions
	e.register(fs)
	var threads, timeRuns string
	fs.stringVar(&threads, "threads", "N", "run the kernels on N threads (default: every core)")
	fs.stringVar(&timeRuns, "time", "N", "also run the program N more times and print the median time on standard error")
	positional, diag := fs.parse(args)
	nthreads, ntime := 0, 0
	if diag == nil {
		nthreads, diag = nonNegativeIntFlag("threads", threads)
	}
	if diag == nil {
		ntime, diag = nonNegativeIntFlag("time", timeRuns)
	}
	if diag != nil {
		printDiagnostics(sio.err, nil, []*ir.Diagnostic{diag})
		return exitFailure
	}
	c := newCompiler(o, sio)
	if c == nil {
		return exitFailure
	}
	x := prepareExecution(&e, positional, sio)
	if x == nil {
		return exitFailure
	}
	tc, err := cpurt.FindToolchain()
	if err != nil {
		printDiagnostics(sio.err, nil, []*ir.Diagnostic{ir.Errorf(ir.Location{}, "tfc run: %v", err)})
		return exitFailure
	}
	m, status := c.compileText(x.file, x.src, sio)
	if status != exitOK {
		return status
	}
	sm := &ir.SourceManager{}
	sm.AddFile(x.file, x.src)
	fail := func(err error) int {
		printDiagnostics(sio.err, sm, ir.AsDiagnostics(err))
		return exitFailure
	}
	if err := lowerForCPU(m, c.target); err != nil {
		return fail(err)
	}
	p, err := cpurt.CompileWith(m, x.fn.SymName(), cpurt.Options{Toolchain: tc})
	if err != nil {
		return fail(err)
	}
	defer p.Close()
	p.Threads = nthreads
	times, results, err := p.Time(x.inputs, ntime)
	if err != nil {
		return fail(err)
	}
	if ntime > 0 && len(times) > 0 {
		slices.Sort(times)
		fmt.Fprintf(sio.err, "@%s: median %v over %d runs (min %v, max %v)\n", x.fn.SymName(),
			times[len(times)/2], len(times), times[0], times[len(times)-1].Round(time.Microsecond))
	}
	return writeResults(e.output, results, sio)
}

// nonNegativeIntFlag parses the value of --name (0 when empty).
func nonNegativeIntFlag(name, v string) (int, *ir.Diagnostic) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, ir.Errorf(ir.Location{}, "--%s takes a non-negative integer, not '%s'", name, v)
	}
	return n, nil
}
