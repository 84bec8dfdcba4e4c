package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
// and runs it on every core. An input whose dtype is its argument's is
// handed to the program as the region of its file (mapped, not copied),
// and a result of a NumPy dtype is written by the program into its .npy
// file: no element is converted on the way.
func runCommand(args []string, sio *stdio) int {
	o := defaultCompileOptions()
	o.defaultLevel = "O2"
	fs := sio.newFlagSet()
	o.register(fs)
	// run compiles for the host CPU and writes DIR/result<i>.npy: the
	// emitter's flags have no meaning here
	removeFlags(fs, "emit", "target", "o")
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
	if err := lowerForCPU(m, c.target, c.opts.exactRounding); err != nil {
		return fail(err)
	}
	p, err := cpurt.CompileWith(m, x.fn.SymName(), cpurt.Options{Toolchain: tc})
	if err != nil {
		return fail(err)
	}
	defer p.Close()
	p.Threads = nthreads
	times, err := runNative(p, x, e.output, ntime)
	if err != nil {
		return fail(err)
	}
	if ntime > 0 && len(times) > 0 {
		slices.Sort(times)
		fmt.Fprintf(sio.err, "@%s: median %v over %d runs (min %v, max %v)\n", x.fn.SymName(),
			times[len(times)/2], len(times), times[0], times[len(times)-1].Round(time.Microsecond))
	}
	return exitOK
}

// removeFlags takes declared flags out of a flag set (and its help).
func removeFlags(fs *flagSet, names ...string) {
	for _, n := range names {
		delete(fs.defs, n)
	}
	fs.order = slices.DeleteFunc(fs.order, func(d *flagDef) bool { return slices.Contains(names, d.name) })
}

// runNative runs the program on the inputs and writes DIR/result<i>.npy
// (and DIR/updated-<name>.npy for each argument updated in place).
// Inputs of the arguments' own dtype are passed as their files' regions;
// others are converted once into a scratch file. Results of a NumPy dtype
// are written by the program into their .npy files (created here with
// their headers, under a temporary name renamed at the end, so that an
// input file is never overwritten while it is read); f16, bf16 and f8
// results come back raw and are written as float32.
func runNative(p *cpurt.Program, x *execution, outDir string, ntime int) ([]time.Duration, error) {
	insT, outsT := p.InputTypes(), p.OutputTypes()
	if len(insT) != len(x.values) {
		return nil, fmt.Errorf("@%s takes %d inputs after lowering, %d given", x.fn.SymName(), len(insT), len(x.values))
	}
	scratch, err := os.MkdirTemp("", "tfc-run-data-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	ins := make([]cpurt.Region, len(x.values))
	inShapes := make([][]int64, len(x.values))
	for i, v := range x.values {
		if v.elem != insT[i].Elem.Kind {
			return nil, fmt.Errorf("%s: argument #%d is %s after lowering, %s before", v.spec, i, insT[i].Elem.Kind, v.elem)
		}
		if ins[i], err = v.region(scratch, i); err != nil {
			return nil, err
		}
		inShapes[i] = v.shape
	}
	// inputs updated in place (graph.index_copy) run on a copy of their
	// data, written to DIR/updated-<name>.npy afterwards
	updated := p.UpdatedInputs()
	for i := range ins {
		if i >= len(updated) || !updated[i] {
			continue
		}
		raw, err := readRegion(ins[i])
		if err != nil {
			return nil, err
		}
		path := filepath.Join(scratch, fmt.Sprintf("upd%d.bin", i))
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			return nil, err
		}
		ins[i] = cpurt.Region{Path: path, Size: int64(len(raw)), Update: true}
	}
	outShapes, err := p.OutputShapes(inShapes)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, fmt.Errorf("cannot create '%s': %s", outDir, sysError(err, "no such directory"))
	}
	outs := make([]cpurt.Region, len(outsT))
	finals := make([]string, len(outsT))
	defer func() {
		for _, o := range outs {
			if o.Path != "" && strings.HasPrefix(filepath.Base(o.Path), ".") {
				os.Remove(o.Path)
			}
		}
	}()
	for j, t := range outsT {
		k := t.Elem.Kind
		if d := checkAlloc(ir.Location{}, fmt.Sprintf("result #%d of @%s", j, x.fn.SymName()), outShapes[j], k.ByteSize()); d != nil {
			return nil, d
		}
		n, _ := ir.NumElements(outShapes[j])
		finals[j] = filepath.Join(outDir, fmt.Sprintf("result%d.npy", j))
		if _, direct := npyDescr(k); direct {
			tmp := filepath.Join(outDir, fmt.Sprintf(".result%d.npy.%d.tmp", j, os.Getpid()))
			off, err := createNpy(tmp, k, outShapes[j])
			if err != nil {
				return nil, err
			}
			outs[j] = cpurt.Region{Path: tmp, Offset: off, Size: n * k.ByteSize()}
			continue
		}
		raw := filepath.Join(scratch, fmt.Sprintf("out%d.bin", j))
		if err := os.WriteFile(raw, nil, 0o644); err != nil {
			return nil, err
		}
		outs[j] = cpurt.Region{Path: raw, Size: n * k.ByteSize()}
	}
	times, err := p.RunFiles(ins, inShapes, outs, outShapes, ntime+1)
	if err != nil {
		return nil, err
	}
	for i, r := range ins {
		if !r.Update {
			continue
		}
		raw, err := os.ReadFile(r.Path)
		if err != nil {
			return nil, err
		}
		if err := writeUpdated(outDir, x.fn.Args()[i], raw, insT[i].Elem.Kind, inShapes[i]); err != nil {
			return nil, err
		}
	}
	for j, t := range outsT {
		if _, direct := npyDescr(t.Elem.Kind); direct {
			if err := os.Rename(outs[j].Path, finals[j]); err != nil {
				return nil, fmt.Errorf("cannot write '%s': %v", finals[j], err)
			}
			continue
		}
		raw, err := os.ReadFile(outs[j].Path)
		if err != nil {
			return nil, err
		}
		if err := writeNpyF32(finals[j], raw, t.Elem.Kind, outShapes[j]); err != nil {
			return nil, err
		}
	}
	return times, nil
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

// readRegion reads the bytes of a file region.
func readRegion(r cpurt.Region) ([]byte, error) {
	f, err := os.Open(r.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	raw := make([]byte, r.Size)
	if _, err := f.ReadAt(raw, r.Offset); err != nil {
		return nil, fmt.Errorf("cannot read '%s': %v", r.Path, err)
	}
	return raw, nil
}

// writeUpdated writes argument arg after the function updated it in place
// (raw: its bytes, of element k) as DIR/updated-<name>.npy, float32 for
// the element types NumPy lacks.
func writeUpdated(dir string, arg *ir.Value, raw []byte, k ir.ElemKind, shape []int64) error {
	path := filepath.Join(dir, updatedName(arg))
	if _, direct := npyDescr(k); !direct {
		return writeNpyF32(path, raw, k, shape)
	}
	off, err := createNpy(path, k, shape)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, werr := f.WriteAt(raw, off)
	if cerr := f.Close(); werr != nil || cerr != nil {
		return fmt.Errorf("cannot write '%s': %v", path, errors.Join(werr, cerr))
	}
	return nil
}

// updatedName is the file an argument updated in place is written to.
func updatedName(arg *ir.Value) string {
	name := arg.Name
	if name == "" {
		name = fmt.Sprintf("arg%d", arg.ResultIndex())
	}
	return "updated-" + name + ".npy"
}
