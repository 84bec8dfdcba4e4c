// Package metal translates a lowered module (the loop dialect) into Metal
// Shading Language kernels for Apple GPUs and a launch description per
// function, what `tfc --emit=metal --target=m3-max -o DIR` writes:
//
//	DIR/rms_silu_mul.metal   the kernels the function launches
//	DIR/rms_silu_mul.json    how to launch them: buffers, grid and
//	                         threadgroup sizes over the run-time extents,
//	                         and each kernel in mx.fast.metal_kernel's form
//
// Each loop.kernel becomes one `[[kernel]] void` function in the style of
// MLX's rms_norm.metal and softmax kernels: one threadgroup per iteration
// of the launch grid (a row), the threads striding along the row, row
// reductions with simd_sum / simd_max and `threadgroup float partial[32]`,
// the sram row buffer of a one-pass kernel as threadgroup memory, half and
// bfloat storage with f32 arithmetic (kernel.go; plan.go decides how a
// kernel runs). The text is deterministic: the same module gives the same
// bytes.
//
// Nothing here needs a Mac: emu/metal_emu.h runs the kernels on a CPU,
// one fiber per Metal thread, for the package's tests.
package metal

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
)

// Options adjust the output.
type Options struct {
	// Source names the program compiled, for the header ("" for none).
	Source string
	// Target is the Metal machine (its threadgroup memory); nil is m3-max.
	Target *target.Target
}

// Program is a translated module: every kernel, and a launch
// description per function.
type Program struct {
	// Name is the stem of single-file output: the program's file name
	// without .tir, or "kernels".
	Name      string
	Target    string
	source    string
	Kernels   []*KernelInfo
	byName    map[string]*KernelInfo // by the loop.kernel's sym_name
	Functions []*FunctionLaunch
	// launched lists, per function, the sym_names of the kernels it launches.
	launched map[string][]string
}

// Emit translates a lowered module. Problems (a graph op left, f64
// values, threadgroup memory beyond the target's) are errors located at
// the op.
func Emit(m ir.Module, opts Options) (prog *Program, err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(emitError); ok {
				prog, err = nil, e.err
				return
			}
			prog, err = nil, ir.Errorf(m.Loc, "internal error in the Metal emitter: %v", r)
		}
	}()
	if m.Operation == nil {
		return nil, fmt.Errorf("no module to emit")
	}
	if err := loop.RefuseGroupSync(m, "Metal"); err != nil {
		return nil, err
	}
	if err := loop.RefuseStridedAccesses(m, "Metal"); err != nil {
		return nil, err
	}
	// one dispatch grid per kernel: parts become kernels of their own
	if err := loop.SplitParts(m, nil); err != nil {
		return nil, err
	}
	t := opts.Target
	if t == nil {
		if t, err = target.Lookup("m3-max"); err != nil {
			return nil, err
		}
	}
	prog = &Program{Name: "kernels", Target: t.Name, source: opts.Source, byName: map[string]*KernelInfo{},
		launched: map[string][]string{}}
	if opts.Source != "" {
		prog.Name = strings.TrimSuffix(filepath.Base(opts.Source), filepath.Ext(opts.Source))
	}
	var graphOp *ir.Operation
	m.Walk(func(op *ir.Operation) bool {
		if op.Dialect() == "graph" && graphOp == nil {
			graphOp = op
		}
		return graphOp == nil
	})
	if graphOp != nil {
		return nil, ir.OpError(graphOp, "is a graph op; --emit=metal needs the program lowered to loops (lower-to-loops, sram-alloc)")
	}
	kernelNames := newNamer(helperOrder...)
	var funcs []ir.Func
	for op := m.Body().First(); op != nil; op = op.Next() {
		switch {
		case op.Name() == ir.FuncOpName:
			funcs = append(funcs, ir.Func{Operation: op})
		case op.Name() == loop.OpKernel:
			k, _ := loop.AsKernel(op)
			if _, dup := prog.byName[k.SymName()]; dup {
				return nil, ir.OpError(op, "defines kernel '%s' a second time", k.SymName())
			}
			info, err := emitKernel(k, t, kernelNames.fresh(k.SymName()))
			if err != nil {
				return nil, err
			}
			prog.Kernels = append(prog.Kernels, info)
			prog.byName[k.SymName()] = info
		default:
			return nil, ir.OpError(op, "cannot be translated to Metal: only func.func and loop.kernel may appear at module level")
		}
	}
	for _, fn := range funcs {
		fl, launched, err := prog.describeFunc(fn)
		if err != nil {
			return nil, err
		}
		prog.Functions = append(prog.Functions, fl)
		prog.launched[fl.Name] = launched
	}
	return prog, nil
}

// emitKernel plans and writes one kernel.
func emitKernel(k loop.KernelOp, t *target.Target, name string) (*KernelInfo, error) {
	p, err := planKernel(k, t)
	if err != nil {
		return nil, err
	}
	hs := helperSet{}
	ke := newKernelEmitter(p, t, name, hs)
	if mp, why := ke.planMatMul(); mp != nil {
		// a tiled matmul: its threadgroup is one tile, with no rows to share
		p.mm, p.chunked, p.mode, p.tgBytes = mp, false, modeNone, mp.tgBytes()
	} else {
		p.untiled = why
	}
	fn, body := ke.emit()
	info := &KernelInfo{Name: name, Kind: k.Kind(), Parameters: ke.paramInfo(), ThreadgroupMemoryBytes: p.tgBytes,
		Reduction: orDefault(p.mode, "none"), RowsShareThreadgroups: p.chunked, MaxThreads: maxThreads,
		source: fn, helpers: hs, params: p.body.Args}
	if p.mm != nil {
		info.MatMul = &MatMulTiling{TileM: mmTile, TileN: mmTile, TileK: mmTile, Simdgroups: mmSlots, Dots: len(p.mm.rhs), MinThreads: 32}
	}
	ke.launchSizes(info)
	for _, buf := range append(append([]*ir.Value(nil), p.ins...), p.outs...) {
		var dims []int
		for _, e := range p.extentOf[buf] {
			j := -1
			for i, a := range p.body.Args {
				if a == e {
					j = i
				}
			}
			dims = append(dims, j)
		}
		info.extentParams = append(info.extentParams, dims)
	}
	info.MLX = MLXKernel{Name: name, Header: hs.text(), Source: mlxPrologue(p.chunked) + body}
	for _, prm := range info.Parameters {
		switch {
		case prm.Kind == "buffer" && prm.Access == "write":
			info.MLX.OutputNames = append(info.MLX.OutputNames, prm.Name)
		case prm.Kind != "builtin":
			info.MLX.InputNames = append(info.MLX.InputNames, prm.Name)
		}
	}
	return info, nil
}

// header opens every .metal file.
func (prog *Program) header() string {
	from := ""
	if prog.source != "" {
		from = " of " + filepath.Base(prog.source)
	}
	return fmt.Sprintf(`// Metal kernels%s for %s, compiled by tfc --emit=metal.
//
// The .json file beside this one says how to launch them: the buffers of
// each [[buffer(i)]], the threadgroups and threads as functions of the
// run-time extents. Compile with fast math off (MTLMathModeSafe): the
// kernels rely on IEEE infinities and NaN.
#include <metal_stdlib>
using namespace metal;
`, from, prog.Target)
}

// selected returns the kernels the named functions launch (every kernel
// when none is named), in module order.
func (prog *Program) selected(funcs []string) []*KernelInfo {
	if len(funcs) == 0 {
		return prog.Kernels
	}
	want := map[*KernelInfo]bool{}
	for _, f := range funcs {
		for _, k := range prog.launched[f] {
			want[prog.byName[k]] = true
		}
	}
	var out []*KernelInfo
	for _, k := range prog.Kernels {
		if want[k] {
			out = append(out, k)
		}
	}
	return out
}

// Metal returns the text of a .metal file with the kernels the named
// functions launch (all kernels when none is named).
func (prog *Program) Metal(funcs ...string) string {
	kernels := prog.selected(funcs)
	hs := helperSet{}
	for _, k := range kernels {
		for h := range k.helpers {
			hs.use(h)
		}
	}
	var sb strings.Builder
	sb.WriteString(prog.header())
	sb.WriteString(hs.text())
	for _, k := range kernels {
		sb.WriteString(k.source)
	}
	return sb.String()
}

// Description returns the launch description of the named functions (all
// when none is named) for the .metal file source.
func (prog *Program) Description(source string, funcs ...string) *LaunchDescription {
	d := &LaunchDescription{Format: LaunchFormat, Source: source, Target: prog.Target,
		CompileOptions: CompileOptions{LanguageVersion: "3.1", FastMath: false},
		Functions:      []*FunctionLaunch{}, Kernels: prog.selected(funcs)}
	for _, f := range prog.Functions {
		if len(funcs) == 0 || contains(funcs, f.Name) {
			d.Functions = append(d.Functions, f)
		}
	}
	return d
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// File is one output file.
type File struct {
	Name string
	Data []byte
}

// Files lays the program out as `-o DIR` has it: per function
// NAME.metal and NAME.json; a module without functions gives one pair
// named after the program.
func (prog *Program) Files() ([]File, error) {
	groups := [][]string{}
	stems := []string{}
	for _, f := range prog.Functions {
		groups = append(groups, []string{f.Name})
		stems = append(stems, f.Name)
	}
	if len(groups) == 0 {
		groups, stems = [][]string{nil}, []string{prog.Name}
	}
	var out []File
	for i, g := range groups {
		js, err := marshal(prog.Description(stems[i]+".metal", g...))
		if err != nil {
			return nil, err
		}
		out = append(out, File{stems[i] + ".metal", []byte(prog.Metal(g...))}, File{stems[i] + ".json", js})
	}
	return out, nil
}

// WriteDir translates m and writes its files into dir (created if
// needed), returning their paths.
func WriteDir(m ir.Module, dir string, opts Options) ([]string, error) {
	prog, err := Emit(m, opts)
	if err != nil {
		return nil, err
	}
	files, err := prog.Files()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, ir.Errorf(ir.Location{}, "cannot create directory '%s': %v", dir, err)
	}
	var paths []string
	for _, f := range files {
		p := filepath.Join(dir, f.Name)
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return nil, ir.Errorf(ir.Location{}, "cannot write '%s': %v", p, err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// WriteFile translates m into one .metal file with every kernel and,
// beside it, one .json with every function (FILE.metal and FILE.json).
func WriteFile(m ir.Module, path string, opts Options) ([]string, error) {
	prog, err := Emit(m, opts)
	if err != nil {
		return nil, err
	}
	jsonPath := strings.TrimSuffix(path, filepath.Ext(path)) + ".json"
	js, err := marshal(prog.Description(filepath.Base(path)))
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, []byte(prog.Metal()), 0o644); err != nil {
		return nil, ir.Errorf(ir.Location{}, "cannot write '%s': %v", path, err)
	}
	if err := os.WriteFile(jsonPath, js, 0o644); err != nil {
		return nil, ir.Errorf(ir.Location{}, "cannot write '%s': %v", jsonPath, err)
	}
	return []string{path, jsonPath}, nil
}
