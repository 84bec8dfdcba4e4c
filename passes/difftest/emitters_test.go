package difftest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/dialects/graph/randprog"
	llvmemit "github.com/tensorforge/tensorforge/emit/llvm"
	"github.com/tensorforge/tensorforge/emit/metal"
	"github.com/tensorforge/tensorforge/emit/ptx"
	"github.com/tensorforge/tensorforge/emit/triton"
	"github.com/tensorforge/tensorforge/emit/tt"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
	_ "github.com/tensorforge/tensorforge/lowering" // lower-to-loops
)

// emitterPrograms is how many random programs each emitter translates.
const emitterPrograms = 12

// pipelineO2 is tfc's -O2, through lowering.
const pipelineO2 = O2GraphPipeline + ",lower-to-loops,sram-alloc"

// emitterCase is one emitter: the target its programs are lowered for,
// how it writes a program's files into a folder (returning the files the
// next tool reads), and that tool run on all of them.
type emitterCase struct {
	name   string
	target string
	// pipeline lowers the programs (pipelineO2 when empty)
	pipeline string
	emit     func(m ir.Module, t *target.Target, dir string) ([]string, error)
	check    func(t *testing.T, dir string, files []string)
}

// pipelineOf is the pipeline of case c.
func (c emitterCase) pipelineOf() string {
	if c.pipeline != "" {
		return c.pipeline
	}
	return pipelineO2
}

// residentPipeline is -O2 with resident splits of 64 bytes at every row
// count: the small rows of random programs take the resident forms (a
// normalised row copied whole into sram, bulk copies in PTX).
const residentPipeline = O2GraphPipeline + ",lower-to-loops{resident=true,resident-bytes=64,split-rows-below=1},sram-alloc"

// TestEmittedTextPassesNextTool lowers random programs with adversarial
// value and function names (digits, keywords, %x beside %x_addr, @main,
// @f_k0) for each emitter and hands what it writes to the tool that reads
// it next: opt -verify and llc for LLVM IR, Python's compiler for Triton
// modules and the PTX launchers, ptxas for PTX when it is installed, and
// g++ (C++17, with the emulation headers of emit/metal and emit/tt) for
// Metal and tt-metal kernels. A program an emitter refuses with a
// diagnostic is skipped for it; every emitter must translate some.
func TestEmittedTextPassesNextTool(t *testing.T) {
	for _, c := range emitterCases {
		t.Run(c.name, func(t *testing.T) {
			tgt, err := target.Lookup(c.target)
			require.NoError(t, err)
			root := t.TempDir()
			var files []string
			emitted := 0
			for seed := int64(1); seed <= emitterPrograms; seed++ {
				m, err := randprog.Generate(randprog.NewRand(seed), randprog.Config{AdversarialNames: true, MaxOps: 8})
				require.NoError(t, err, "seed %d", seed)
				text := ir.Print(m.Operation, ir.PrintOptions{})
				require.NoError(t, RunPipeline(m, c.pipelineOf(), c.target), "seed %d:\n%s", seed, text)
				dir := filepath.Join(root, fmt.Sprintf("p%d", seed))
				require.NoError(t, os.MkdirAll(dir, 0o755))
				fs, err := c.emit(m, tgt, dir)
				if err != nil {
					_, located := err.(*ir.Diagnostic)
					_, list := err.(ir.ErrorList)
					require.True(t, located || list, "seed %d: not a diagnostic: %v", seed, err)
					t.Logf("seed %d: the %s emitter refuses the program: %v", seed, c.name, firstLine(err.Error()))
					continue
				}
				emitted++
				files = append(files, fs...)
				require.NoError(t, os.WriteFile(filepath.Join(dir, "input.tir"), []byte(text), 0o644))
			}
			require.Greater(t, emitted, 0, "the %s emitter translated none of the programs", c.name)
			t.Logf("%d of %d programs emitted, %d files", emitted, emitterPrograms, len(files))
			c.check(t, root, files)
		})
	}
}

// emitterCases are the emitters and the tools that read their output.
var emitterCases = []emitterCase{
	{name: "llvm", target: "cpu", emit: emitLLVM, check: checkLLVM},
	{name: "triton", target: "h200", emit: emitTriton, check: checkPython},
	{name: "ptx", target: "h200", emit: emitPTX, check: checkPTX},
	{name: "ptx-resident", target: "h200", pipeline: residentPipeline, emit: emitPTX, check: checkPTX},
	{name: "triton-resident", target: "h200", pipeline: residentPipeline, emit: emitTriton, check: checkPython},
	{name: "metal", target: "m3-max", emit: emitMetal, check: checkMetal},
	{name: "tt", target: "blackhole-p150", emit: emitTT, check: checkTT},
}

// FuzzEmitters is TestEmittedTextPassesNextTool over random programs of
// any seed and size: every program that verifies is lowered for each
// emitter, and what the emitter writes (or its located refusal) must pass
// the next tool.
//
//	go test ./passes/difftest -run '^$' -fuzz FuzzEmitters -fuzztime 2m
func FuzzEmitters(f *testing.F) {
	f.Add(int64(1), uint8(8)) // one seed: go test runs it with the others above
	f.Fuzz(func(t *testing.T, seed int64, size uint8) {
		cfg := randprog.Config{AdversarialNames: true, MaxOps: 2 + int(size%24)}
		for _, c := range emitterCases {
			m, err := randprog.Generate(randprog.NewRand(seed), cfg)
			require.NoError(t, err)
			text := ir.Print(m.Operation, ir.PrintOptions{})
			require.NoError(t, RunPipeline(m, c.pipelineOf(), c.target), "%s", text)
			tgt, err := target.Lookup(c.target)
			require.NoError(t, err)
			dir := t.TempDir()
			fs, err := c.emit(m, tgt, dir)
			if err != nil {
				_, located := err.(*ir.Diagnostic)
				_, list := err.(ir.ErrorList)
				require.True(t, located || list, "%s: not a diagnostic: %v\n%s", c.name, err, text)
				continue
			}
			c.check(t, dir, fs)
		}
	})
}

func firstLine(s string) string { return strings.SplitN(s, "\n", 2)[0] }

// toolTimeout bounds one run of a tool: a tool that hangs on an emitted
// program fails the test with that program, where the fuzzer would only
// see its worker stop answering.
const toolTimeout = 5 * time.Minute

// run runs a tool and fails the test with its output (and the input
// programs under dir) when it fails or runs past toolTimeout.
func run(t *testing.T, dir string, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("no result after %v: %w", toolTimeout, ctx.Err())
	}
	if err != nil {
		var inputs strings.Builder
		ps, _ := filepath.Glob(filepath.Join(dir, "*", "input.tir"))
		for _, p := range ps {
			b, _ := os.ReadFile(p)
			fmt.Fprintf(&inputs, "// %s\n%s\n", p, b)
		}
		t.Fatalf("%s %s: %v\n%s\nthe programs:\n%s", name, strings.Join(args, " "), err, firstLines(string(out), 40), inputs.String())
	}
}

// requireTool returns the path of a tool, failing the test without it.
func requireTool(t *testing.T, path, install string) string {
	t.Helper()
	p, err := exec.LookPath(path)
	require.NoError(t, err, "%s is needed: %s", path, install)
	return p
}

const llvmBin = "/usr/lib/llvm-14/bin"

func emitLLVM(m ir.Module, _ *target.Target, dir string) ([]string, error) {
	text, err := llvmemit.EmitText(m, llvmemit.Options{Entries: true})
	if err != nil {
		return nil, err
	}
	p := filepath.Join(dir, "module.ll")
	return []string{p}, os.WriteFile(p, []byte(text), 0o644)
}

func checkLLVM(t *testing.T, dir string, files []string) {
	opt := requireTool(t, filepath.Join(llvmBin, "opt"), "apt-get install llvm-14")
	llc := requireTool(t, filepath.Join(llvmBin, "llc"), "apt-get install llvm-14")
	for _, f := range files {
		run(t, dir, opt, "-verify", f, "-o", os.DevNull)
		run(t, dir, llc, "-O0", "-filetype=obj", f, "-o", os.DevNull)
	}
}

func emitTriton(m ir.Module, tgt *target.Target, dir string) ([]string, error) {
	text, err := triton.Emit(m, triton.Options{Target: tgt.Name})
	if err != nil {
		return nil, err
	}
	p := filepath.Join(dir, "module.py")
	return []string{p}, os.WriteFile(p, []byte(text), 0o644)
}

// checkPython compiles Python files (syntax only: neither torch nor
// triton needs to be installed).
func checkPython(t *testing.T, dir string, files []string) {
	python := requireTool(t, "python3", "apt-get install python3")
	var py []string
	for _, f := range files {
		if strings.HasSuffix(f, ".py") {
			py = append(py, f)
		}
	}
	require.NotEmpty(t, py)
	run(t, dir, python, append([]string{"-c", "import sys\nfor f in sys.argv[1:]:\n    compile(open(f).read(), f, 'exec')\n"}, py...)...)
}

func emitPTX(m ir.Module, _ *target.Target, dir string) ([]string, error) {
	files, err := ptx.Emit(m)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, f := range files {
		p := filepath.Join(dir, f.Name)
		if err := os.WriteFile(p, []byte(f.Text), 0o644); err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

func checkPTX(t *testing.T, dir string, files []string) {
	checkPython(t, dir, files)
	ptxas, err := exec.LookPath("ptxas")
	if err != nil {
		t.Log("ptxas is not installed: the PTX text itself is not assembled")
		return
	}
	for _, f := range files {
		if strings.HasSuffix(f, ".ptx") {
			run(t, dir, ptxas, "-arch=sm_90", f, "-o", os.DevNull)
		}
	}
}

func emitMetal(m ir.Module, tgt *target.Target, dir string) ([]string, error) {
	prog, err := metal.Emit(m, metal.Options{Target: tgt})
	if err != nil {
		return nil, err
	}
	files, err := prog.Files()
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, f := range files {
		p := filepath.Join(dir, f.Name)
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return nil, err
		}
		if strings.HasSuffix(f.Name, ".metal") {
			paths = append(paths, p)
		}
	}
	return paths, nil
}

// checkMetal compiles the kernels as C++17 against the Metal emulation,
// as emit/metal's tests do: each .metal file in a namespace of its own.
func checkMetal(t *testing.T, dir string, files []string) {
	gxx := requireTool(t, "g++", "apt-get install g++")
	emu, err := filepath.Abs("../../emit/metal/emu")
	require.NoError(t, err)
	var src strings.Builder
	src.WriteString("#include \"harness.h\"\n\n")
	for i, f := range files {
		fmt.Fprintf(&src, "namespace unit%d {\n#include %q\n}\n\n", i, f)
	}
	tu := filepath.Join(dir, "metal_units.cpp")
	require.NoError(t, os.WriteFile(tu, []byte(src.String()), 0o644))
	run(t, dir, gxx, "-std=c++17", "-fsyntax-only", "-w", "-I", emu, tu)
}

func emitTT(m ir.Module, tgt *target.Target, dir string) ([]string, error) {
	out, err := tt.Emit(m, tt.Options{Target: tgt})
	if err != nil {
		return nil, err
	}
	for _, f := range out.Files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return nil, err
		}
	}
	var paths []string
	for _, k := range out.Program.Kernels {
		for _, kf := range []tt.KernelFile{k.Reader, k.Compute, k.Writer} {
			// a kernel file with its compile-time arguments, as NAME:N
			paths = append(paths, fmt.Sprintf("%s:%d", filepath.Join(dir, filepath.FromSlash(kf.Path)), len(kf.CompileArgs)))
		}
	}
	return paths, nil
}

// checkTT compiles the reader, compute and writer kernels as C++17
// against the tt-metal emulation, as emit/tt's tests do: each in a
// namespace with its compile-time arguments.
func checkTT(t *testing.T, dir string, files []string) {
	gxx := requireTool(t, "g++", "apt-get install g++")
	emu, err := filepath.Abs("../../emit/tt/emu")
	require.NoError(t, err)
	var src strings.Builder
	src.WriteString("#include \"tt_emu.h\"\n\n")
	for i, f := range files {
		k := strings.LastIndexByte(f, ':')
		path, nargs := f[:k], f[k+1:]
		args := "0"
		var n int
		fmt.Sscan(nargs, &n)
		for j := 0; j < n; j++ {
			args += ", 0"
		}
		fmt.Fprintf(&src, "namespace unit%d {\nconstexpr uint32_t kernel_compile_time_args[] = {%s};\n#include %q\n}\n\n", i, args, path)
	}
	tu := filepath.Join(dir, "tt_units.cpp")
	require.NoError(t, os.WriteFile(tu, []byte(src.String()), 0o644))
	run(t, dir, gxx, "-std=c++17", "-fsyntax-only", "-w", "-pthread", "-I", emu, tu)
}
