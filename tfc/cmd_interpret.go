package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/dialects/loop"
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
	inputs     []inputFlag // in flag order
	output     string
	funcName   string
	seed       string
	castInputs bool
}

// inputFlag is one --input or --inputs.
type inputFlag struct{ flag, value string }

// register declares the execution flags on fs.
func (e *execOptions) register(fs *flagSet) {
	fs.add(&flagDef{name: "input", kind: valueFlag, arg: "NAME=FILE.npy",
		help: "the value of argument %NAME, from a NumPy file; or FILE.npz, whose arrays are named after the arguments (repeatable)",
		set: func(v string, _ bool) error {
			e.inputs = append(e.inputs, inputFlag{"input", v})
			return nil
		}})
	fs.add(&flagDef{name: "inputs", kind: valueFlag, arg: "FILE.npz",
		help: "the values of the arguments named by the arrays of a NumPy .npz file",
		set: func(v string, _ bool) error {
			e.inputs = append(e.inputs, inputFlag{"inputs", v})
			return nil
		}})
	fs.boolVar(&e.castInputs, "cast-inputs", "convert inputs of another dtype to the argument's element type (otherwise an error)")
	fs.stringVar(&e.output, "output", "DIR", "write the results as DIR/result0.npy, DIR/result1.npy, ... (and each argument updated in place as DIR/updated-NAME.npy)")
	fs.stringVar(&e.funcName, "func", "NAME", "the function to run (default: the only or first one)")
	fs.stringVar(&e.seed, "random-inputs", "SEED", "fill the inputs not given with --input from this seed (normal values, '?' extents 16)")
}

// execution is what an execution command has read before it runs the
// program: the source, the function's graph-level signature and its
// inputs.
type execution struct {
	file, src string
	fn        ir.Func // as written, before any pass
	values    []*inputValue
}

// tensors returns the inputs as tensors of the arguments' types.
func (x *execution) tensors() ([]*eval.Tensor, *ir.Diagnostic) {
	out := make([]*eval.Tensor, len(x.values))
	for i, v := range x.values {
		t, err := v.tensorOf()
		if err != nil {
			return nil, ir.Errorf(ir.Location{}, "%v", err)
		}
		out[i] = t
	}
	return out, nil
}

// prepareExecution reads the input file, picks the function and builds its
// inputs from the --input files and --random-inputs: their dtypes must be
// the arguments' (or --cast-inputs given), their shapes fit the types, and
// their `?` extents agree where the function's element-wise ops pair them.
// Problems are printed; a nil execution means failure.
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
	sm := &ir.SourceManager{}
	sm.AddFile(file, src)
	m, err := parser.ParseAt(file, src, 1)
	if err != nil {
		printDiagnostics(sio.err, sm, ir.AsDiagnostics(err))
		return nil
	}
	fn, d := pickFunc(m, e.funcName)
	if d != nil {
		return fail(d)
	}
	values, d := readInputs(fn, e)
	if d == nil {
		d = fillRandom(fn, values, e)
	}
	if d != nil {
		printDiagnostics(sio.err, sm, []*ir.Diagnostic{d})
		return nil
	}
	if d := checkExtents(fn, values); d != nil {
		printDiagnostics(sio.err, sm, []*ir.Diagnostic{d})
		return nil
	}
	return &execution{file: file, src: src, fn: fn, values: values}
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

// checkExtents follows the concrete shapes of the inputs through the
// function's element-wise ops, and refuses inputs whose `?` extents the
// ops pair but which differ: two `?` extents that broadcast together must
// be equal at run time (the lowering assumes it; docs/loop-dialect.md),
// and a `?` paired with a static extent n must be n, or 1 in a leading
// dimension. Shapes are followed through element-wise ops and ops whose
// result has the type of their first operand.
func checkExtents(fn ir.Func, values []*inputValue) *ir.Diagnostic {
	shapes := map[*ir.Value][]int64{}
	what := map[*ir.Value]string{}
	for i, a := range fn.Args() {
		shapes[a] = values[i].shape
		what[a] = "%" + a.Name
	}
	name := func(v *ir.Value) string {
		if w, ok := what[v]; ok {
			return w
		}
		if v.Name != "" {
			return "%" + v.Name
		}
		return "a value"
	}
	for op := fn.Body().First(); op != nil; op = op.Next() {
		if op.NumResults() != 1 {
			continue
		}
		rt, ok := op.Result(0).Type().(ir.TensorType)
		if !ok {
			continue
		}
		if !op.HasTrait(ir.Elementwise) {
			if op.NumOperands() > 0 {
				if ot, ok := op.Operand(0).Type().(ir.TensorType); ok && slices.Equal(ot.Shape, rt.Shape) && shapes[op.Operand(0)] != nil {
					shapes[op.Result(0)] = shapes[op.Operand(0)]
				}
			}
			continue
		}
		rank := len(rt.Shape)
		out := make([]int64, rank)
		from := make([]int, rank)
		for d := range out {
			out[d] = rt.Shape[d]
			from[d] = -1
		}
		known := true
		for oi := 0; oi < op.NumOperands(); oi++ {
			o := op.Operand(oi)
			ot, ok := o.Type().(ir.TensorType)
			s := shapes[o]
			if !ok || s == nil || len(s) != len(ot.Shape) || len(s) > rank {
				known = known && ok && len(ot.Shape) == 0
				continue
			}
			for j, ext := range s {
				d := rank - len(s) + j
				if ot.Shape[j] != ir.Dynamic {
					continue
				}
				if rt.Shape[d] != ir.Dynamic {
					if ext != rt.Shape[d] && !(ext == 1 && d != rank-1) {
						return ir.OpError(op, "operand #%d (%s) has extent %d in dimension %d, where the result has %d: a '?' extent paired with a static one must be equal to it (or 1, except in the last dimension)",
							oi, name(o), ext, j, rt.Shape[d])
					}
					continue
				}
				if from[d] < 0 {
					out[d], from[d] = ext, oi
					continue
				}
				if out[d] != ext {
					prev := op.Operand(from[d])
					return ir.OpError(op, "the '?' extents of its operands disagree: %s has %d in dimension %d, %s has %d (two '?' extents that broadcast together must be equal)",
						name(prev), out[d], len(shapes[prev])-rank+d, name(o), ext)
				}
			}
		}
		for d := range out {
			known = known && out[d] != ir.Dynamic
		}
		if known {
			shapes[op.Result(0)] = out
		}
	}
	return nil
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
	if d := checkValueSizes(fn); d != nil {
		sm := &ir.SourceManager{}
		sm.AddFile(x.file, x.src)
		printDiagnostics(sio.err, sm, []*ir.Diagnostic{d})
		return exitFailure
	}
	inputs, d := x.tensors()
	if d != nil {
		printDiagnostics(sio.err, nil, []*ir.Diagnostic{d})
		return exitFailure
	}
	results, err := interpretFunc(m, fn, inputs, f64, o.exactRounding)
	if err != nil {
		sm := &ir.SourceManager{}
		sm.AddFile(x.file, x.src)
		printDiagnostics(sio.err, sm, ir.AsDiagnostics(err))
		return exitFailure
	}
	if status := writeResults(e.output, results, sio); status != exitOK {
		return status
	}
	// the arguments updated in place (graph.index_copy), as DIR/updated-<name>.npy
	for i, a := range updatedArgs(m, fn) {
		if !a {
			continue
		}
		path := filepath.Join(e.output, updatedName(fn.Args()[i]))
		if elem, _ := ir.ElemOf(fn.Args()[i].Type()); elem.Kind != inputs[i].Elem {
			// the interpreter updated a converted copy
			printDiagnostics(sio.err, nil, []*ir.Diagnostic{ir.Errorf(ir.Location{}, "cannot write '%s': argument %%%s is %s and was given as %s, so its update is in a converted copy; pass it as %s",
				path, fn.Args()[i].Name, elem.Kind, inputs[i].Elem, elem.Kind)})
			return exitFailure
		}
		if err := eval.WriteNpy(path, inputs[i]); err != nil {
			printDiagnostics(sio.err, nil, []*ir.Diagnostic{ir.Errorf(ir.Location{}, "cannot write '%s': %v", path, err)})
			return exitFailure
		}
	}
	return exitOK
}

// updatedArgs reports, per argument of fn, whether fn updates it in place:
// the destination of a graph.index_copy, or a buffer a kernel writes once
// lowered.
func updatedArgs(m ir.Module, fn ir.Func) []bool {
	if _, lowered := fn.Attr("num_results").(ir.IntAttr); lowered {
		return loop.WrittenInputs(fn, loop.KernelsOf(m))
	}
	return graph.UpdatedArgs(fn)
}
