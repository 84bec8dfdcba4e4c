package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/parser"
)

func init() {
	registerCommand(&command{
		name:    "interpret",
		usage:   "tfc interpret FILE.tir --input NAME=x.npy ... --output DIR",
		summary: "run the pipeline the flags give (none by default), then evaluate with the reference interpreter",
		run:     interpretCommand,
	})
}

// randomInputExtent is the extent --random-inputs gives every `?`
// dimension, in interpret and run alike, so that both see the same inputs.
const randomInputExtent = eval.ExtremeDynExtent

// execOptions are the flags of the commands that compile a program and
// then execute it (interpret, run), besides the compile flags.
type execOptions struct {
	inputs   []string // NAME=FILE, in flag order
	output   string
	funcName string
	seed     string
}

// register declares the execution flags on fs.
func (e *execOptions) register(fs *flagSet) {
	fs.add(&flagDef{name: "input", kind: valueFlag, arg: "NAME=FILE.npy",
		help: "the value of argument %NAME, from a NumPy file (repeatable)",
		set: func(v string, _ bool) error {
			e.inputs = append(e.inputs, v)
			return nil
		}})
	fs.stringVar(&e.output, "output", "DIR", "write the results as DIR/result0.npy, DIR/result1.npy, ...")
	fs.stringVar(&e.funcName, "func", "NAME", "the function to run (default: the only or first one)")
	fs.stringVar(&e.seed, "random-inputs", "SEED", "fill the inputs not given with --input from this seed (normal values, '?' extents 16)")
}

// execution is what an execution command has read before it runs the
// program: the source, the function's graph-level signature and its
// inputs.
type execution struct {
	file, src string
	fn        ir.Func // as written, before any pass
	inputs    []*eval.Tensor
}

// prepareExecution reads the input file, picks the function and builds its
// inputs from the --input files and --random-inputs. Problems are printed;
// a nil execution means failure.
func prepareExecution(e *execOptions, positional []string, sio *stdio) *execution {
	fail := func(d *ir.Diagnostic) *execution {
		printDiagnostics(sio.err, nil, []*ir.Diagnostic{d})
		return nil
	}
	if e.output == "" {
		return fail(ir.Errorf(ir.Location{}, "name the directory of the results with --output DIR"))
	}
	file, src, d := readInput(positional, sio)
	if d != nil {
		return fail(d)
	}
	m, err := parser.ParseAt(file, src, 1)
	if err != nil {
		sm := &ir.SourceManager{}
		sm.AddFile(file, src)
		printDiagnostics(sio.err, sm, ir.AsDiagnostics(err))
		return nil
	}
	fn, d := pickFunc(m, e.funcName)
	if d != nil {
		return fail(d)
	}
	inputs, d := buildInputs(fn, e)
	if d != nil {
		return fail(d)
	}
	return &execution{file: file, src: src, fn: fn, inputs: inputs}
}

// pickFunc returns the function called name, or the only or first one.
func pickFunc(m ir.Module, name string) (ir.Func, *ir.Diagnostic) {
	fs := m.Funcs()
	if len(fs) == 0 {
		return ir.Func{}, ir.Errorf(m.Loc, "the input has no function to run")
	}
	if name == "" {
		return fs[0], nil
	}
	name = strings.TrimPrefix(name, "@")
	if f, ok := m.Lookup(name); ok {
		return f, nil
	}
	var names []string
	for _, f := range fs {
		names = append(names, "@"+f.SymName())
	}
	return ir.Func{}, ir.Errorf(ir.Location{}, "--func: no function @%s (the input has %s)", name, strings.Join(names, ", "))
}

// buildInputs reads the --input files of fn's arguments (named without
// '%') and fills the rest from --random-inputs.
func buildInputs(fn ir.Func, e *execOptions) ([]*eval.Tensor, *ir.Diagnostic) {
	args := fn.Args()
	index := map[string]int{}
	var names []string
	for i, a := range args {
		index[a.Name] = i
		names = append(names, a.Name)
	}
	inputs := make([]*eval.Tensor, len(args))
	for _, spec := range e.inputs {
		name, path, ok := strings.Cut(spec, "=")
		name = strings.TrimPrefix(name, "%")
		if !ok || name == "" || path == "" {
			return nil, ir.Errorf(ir.Location{}, "--input takes NAME=FILE.npy, not '%s'", spec)
		}
		i, known := index[name]
		if !known {
			return nil, ir.Errorf(ir.Location{}, "--input %s: @%s has no argument %%%s (its arguments: %s)", spec, fn.SymName(), name, "%"+strings.Join(names, ", %"))
		}
		t, err := eval.ReadNpy(path)
		if err != nil {
			return nil, ir.Errorf(ir.Location{}, "--input %s: %v", spec, err)
		}
		inputs[i] = t
	}
	var random []*eval.Tensor
	if e.seed != "" {
		seed, err := strconv.ParseInt(e.seed, 0, 64)
		if err != nil {
			return nil, ir.Errorf(ir.Location{}, "--random-inputs takes an integer seed, not '%s'", e.seed)
		}
		if random, err = eval.RandomInputs(fn, seed, 1, randomInputExtent); err != nil {
			return nil, errorDiagAt(fn.Loc, err)
		}
	}
	for i, t := range inputs {
		if t != nil {
			continue
		}
		if random == nil {
			return nil, ir.Errorf(ir.Location{}, "no value for argument %%%s of @%s: give --input %s=FILE.npy or --random-inputs SEED", args[i].Name, fn.SymName(), args[i].Name)
		}
		inputs[i] = random[i]
	}
	return inputs, nil
}

// writeResults writes DIR/result<i>.npy.
func writeResults(dir string, results []*eval.Tensor, sio *stdio) int {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		printDiagnostics(sio.err, nil, []*ir.Diagnostic{ir.Errorf(ir.Location{}, "cannot create '%s': %s", dir, sysError(err, "no such directory"))})
		return exitFailure
	}
	for i, t := range results {
		path := filepath.Join(dir, fmt.Sprintf("result%d.npy", i))
		if err := eval.WriteNpy(path, t); err != nil {
			printDiagnostics(sio.err, nil, []*ir.Diagnostic{ir.Errorf(ir.Location{}, "cannot write '%s': %v", path, err)})
			return exitFailure
		}
	}
	return exitOK
}

// interpretCommand is
//
//	tfc interpret FILE.tir [compile flags] --input NAME=x.npy ... --output DIR [--func NAME] [--random-inputs SEED] [--f64]
func interpretCommand(args []string, sio *stdio) int {
	o := defaultCompileOptions()
	fs := sio.newFlagSet()
	o.register(fs)
	var e execOptions
	e.register(fs)
	var f64 bool
	fs.boolVar(&f64, "f64", "evaluate every op in float64, never rounding to the element types (the reference of error bounds)")
	positional, diag := fs.parse(args)
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
	m, status := c.compileText(x.file, x.src, sio)
	if status != exitOK {
		return status
	}
	fn, ok := m.Lookup(x.fn.SymName())
	if !ok {
		printDiagnostics(sio.err, nil, []*ir.Diagnostic{ir.Errorf(ir.Location{}, "the pipeline removed function @%s", x.fn.SymName())})
		return exitFailure
	}
	results, err := eval.Run(fn, x.inputs, eval.Options{F64: f64})
	if err != nil {
		sm := &ir.SourceManager{}
		sm.AddFile(x.file, x.src)
		printDiagnostics(sio.err, sm, ir.AsDiagnostics(err))
		return exitFailure
	}
	return writeResults(e.output, results, sio)
}
