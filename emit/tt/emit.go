// Package tt emits tt-metal kernels for Tenstorrent Tensix cores from the
// loop dialect: per loop.kernel a compute kernel and two dataflow kernels
// (reader and writer), in the current tt-metal API (`void kernel_main()`,
// api/compute/*.h, TensorAccessor), and a program description,
// program.json, that a host program turns into circular buffers, kernels
// and runtime arguments:
//
//	tfc --emit=tt --target=blackhole-p150 -o out/ rms_silu_mul.tir
//	out/program.json
//	out/rms_silu_mul_k0/reader.cpp
//	out/rms_silu_mul_k0/compute.cpp
//	out/rms_silu_mul_k0/writer.cpp
//
// A kernel's rows are split into row blocks of 32 rows (one tile row),
// spread over the cores of the chip; a row of C elements is Ct = ceil(C/32)
// column tiles. Element-wise kernels, transposes (the one generic kernel
// mapped) and matmul kernels (matmul_tiles, matmul.go) are split tile by
// tile of the result. docs/backend-tt.md describes the mapping,
// and emu/ holds a host emulation of the API the tests run the kernels
// with.
package tt

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
)

// Options configure Emit.
type Options struct {
	// Target is the Tenstorrent target the kernels are for.
	Target *target.Target
}

// File is one output file, its path relative to the output directory.
type File struct {
	Path string
	Data []byte
}

// Output is what Emit produces: the files and the program description
// they include (program.json).
type Output struct {
	Files   []File
	Program *Program
}

// Emit translates a lowered module (after lower-to-loops and sram-alloc)
// into tt-metal kernels. Kernels it cannot map onto tiles are reported as
// located diagnostics ("'tt' backend: kernel 'f_k2' of kind 'generic' is
// not supported yet"), all of them, in an ir.ErrorList.
func Emit(m ir.Module, opts Options) (*Output, error) {
	if err := loop.RefuseGroupSync(m, "tt-metal"); err != nil {
		return nil, err
	}
	if err := loop.RefuseStridedAccesses(m, "tt-metal"); err != nil {
		return nil, err
	}
	// parts that store one buffer at rows of their own (a concat along the
	// rows read in the kernel; fuse keeps such concats apart on these
	// targets) would each write whole tiles from their first row
	var shared ir.ErrorList
	for op := m.Body().First(); op != nil; op = op.Next() {
		if k, ok := loop.AsKernel(op); ok && len(loop.Parts(k)) > 1 && loop.SharedStores(k) {
			shared = append(shared, ir.Errorf(op.Loc, "'tt' backend: kernel '%s' has parts that store one buffer at rows of their own (a concat along the rows read in the kernel), which the tt backend does not map onto tiles yet", k.SymName()))
		}
	}
	if len(shared) > 0 {
		return nil, shared
	}
	// one launch grid per kernel: parts become kernels of their own
	if err := loop.SplitParts(m, nil); err != nil {
		return nil, err
	}
	a, err := archOf(opts.Target)
	if err != nil {
		return nil, ir.Errorf(ir.Location{}, "%v", err)
	}
	prog := &Program{Target: a.target, Grid: Grid{X: a.gridX, Y: a.gridY, Cores: a.cores()}, L1BytesPerCore: a.l1,
		Tile: TileShape{Rows: TileRows, Cols: TileCols, Faces: "4 faces of 16x16 (top left, top right, bottom left, bottom right), each row-major"}}
	out := &Output{Program: prog}
	var errs ir.ErrorList
	kernels := map[string]*kgen{}
	for _, op := range m.Body().Ops() {
		switch op.Name() {
		case loop.OpKernel:
			k, _ := loop.AsKernel(op)
			g, err := buildKernel(a, k)
			if ie := (*ir.InternalError)(nil); errors.As(err, &ie) {
				return nil, ie
			}
			if err != nil {
				errs = append(errs, ir.AsDiagnostics(err)...)
				continue
			}
			g.assignCBIndices(func(cb *cbuf) int { return cbRole(g, cb) })
			if d := g.checkL1(); d != nil {
				if err := catchInternal(func() { g, d = rereadIfTooBig(a, k, d) }); err != nil {
					return nil, err
				}
				if d != nil {
					errs = append(errs, d)
					continue
				}
			}
			kernels[g.name] = g
			var kj Kernel
			var files []File
			if err := catchInternal(func() { kj, files = g.files() }); err != nil {
				return nil, err
			}
			prog.Kernels = append(prog.Kernels, kj)
			out.Files = append(out.Files, files...)
		case "func.func", loop.OpReturn:
		default:
			errs = append(errs, ir.OpError(op, "cannot be translated by the 'tt' backend: only func.func and loop.kernel may appear at module level"))
		}
	}
	if len(errs) > 0 {
		// a function launching a kernel reported above says nothing new
		return nil, errs
	}
	for _, f := range m.Funcs() {
		fj, err := function(f, kernels)
		if err != nil {
			errs = append(errs, ir.AsDiagnostics(err)...)
			continue
		}
		prog.Functions = append(prog.Functions, fj)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	data, err := json.MarshalIndent(prog, "", "  ")
	if err != nil {
		return nil, err
	}
	out.Files = append([]File{{Path: "program.json", Data: append(data, '\n')}}, out.Files...)
	return out, nil
}

// WriteDir emits m into directory dir (created if needed) and returns the
// paths written.
func WriteDir(m ir.Module, dir string, opts Options) ([]string, error) {
	out, err := Emit(m, opts)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, f := range out.Files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// cbRole is who fills a circular buffer: 0 the reader, 1 the compute
// kernel for the writer, 2 the compute kernel for itself.
func cbRole(g *kgen, cb *cbuf) int {
	if cb == g.scaler || cb == g.mask {
		return 0
	}
	for _, p := range g.params {
		if cb == p.scratch || cb == p.rowCache {
			return 0
		}
	}
	role := 2
	var visit func(ss []stmt)
	visit = func(ss []stmt) {
		for _, s := range ss {
			switch s := s.(type) {
			case *loopStmt:
				visit(s.body)
			case *readStmt:
				if s.cb == cb {
					role = 0
				}
			case *writeStmt:
				if s.cb == cb {
					role = 1
				}
			}
		}
	}
	visit(g.body)
	return role
}

// checkL1 places the circular buffers and checks they fit a core's L1.
func (g *kgen) checkL1() *ir.Diagnostic {
	total := int64(0)
	for _, cb := range g.cbs {
		total += cb.pages * cb.fmt.tileBytes()
	}
	if total <= g.a.l1 {
		return nil
	}
	byBytes := append([]*cbuf(nil), g.cbs...)
	sort.SliceStable(byBytes, func(i, j int) bool {
		return byBytes[i].pages*byBytes[i].fmt.tileBytes() > byBytes[j].pages*byBytes[j].fmt.tileBytes()
	})
	big := byBytes[0]
	return g.errorf(nil, "needs %d KiB of L1 for its circular buffers, more than the %d KiB of a %s core (the largest, %s: %d tiles of %s, %s)",
		(total+1023)/1024, g.a.l1/1024, g.a.target, big.name, big.pages, big.fmt, big.purpose)
}

// rereadIfTooBig is the two-pass form of kernel k, whose kept rows do not
// fit L1 (the diagnostic tooBig says so): each loop over the row computes
// the kept value again from DRAM (see reread.go). When that cannot be done
// or does not fit either, the diagnostic says so.
func rereadIfTooBig(a *arch, k loop.KernelOp, tooBig *ir.Diagnostic) (*kgen, *ir.Diagnostic) {
	if len(sramAllocs(k)) == 0 {
		return nil, tooBig
	}
	two, err := rereadKernel(k)
	if err != nil {
		tooBig.Message += fmt.Sprintf("; reading the row again from DRAM instead is not possible: %v", err)
		return nil, tooBig
	}
	g, err := buildKernel(a, two)
	if ie := (*ir.InternalError)(nil); errors.As(err, &ie) {
		panic(internalBail{ie.Diags[0]})
	}
	if err != nil {
		tooBig.Message += fmt.Sprintf("; reading the row again from DRAM instead is not possible: %v", ir.AsDiagnostics(err)[0].Message)
		return nil, tooBig
	}
	g.assignCBIndices(func(cb *cbuf) int { return cbRole(g, cb) })
	if d := g.checkL1(); d != nil {
		d.Message += " (reading its rows again from DRAM in every loop over the row)"
		return nil, d
	}
	return g, nil
}

// sramAllocs are the kept rows of kernel k.
func sramAllocs(k loop.KernelOp) []*ir.Operation {
	var out []*ir.Operation
	k.Operation.Walk(func(op *ir.Operation) bool {
		if op.Name() == loop.OpAlloc {
			out = append(out, op)
		}
		return true
	})
	return out
}

// files writes the three kernels and describes them.
func (g *kgen) files() (Kernel, []File) {
	reader, writer := newDataflow(g, true), newDataflow(g, false)
	dir := g.name + "/"
	files := []File{
		{Path: dir + "reader.cpp", Data: []byte(reader.write())},
		{Path: dir + "compute.cpp", Data: []byte(writeCompute(g))},
		{Path: dir + "writer.cpp", Data: []byte(writer.write())},
	}
	k := Kernel{Name: g.name, Kind: g.kind, Rows: g.rows, Cols: g.cols,
		ComputeConfig: ComputeConfig{MathFidelity: "HiFi4", Fp32DestAccEn: true}}
	if s, ok := g.k.Schedule(); ok {
		k.Schedule = s
	}
	for _, p := range g.params {
		role := "input"
		if p.output {
			role = "output"
		}
		k.Params = append(k.Params, Param{Name: p.name, Role: role, DType: p.elem.String(), Access: p.access.String(), Layout: p.layout(), RowMap: p.rowMap})
	}
	if g.perTile {
		k.Work = Work{Unit: "tile", Count: "ceil(R/32) * ceil(C/32)"}
	} else {
		k.Work = Work{Unit: "row_block", Count: "ceil(R/32)"}
	}
	k.Work.Split = fmt.Sprintf("over at most %d cores in row-major order; each gets Count / cores units, the first Count %% cores one more", g.a.cores())
	off := int64(0)
	for _, cb := range g.cbs {
		k.CircularBuffers = append(k.CircularBuffers, CircularBuffer{Index: cb.index, Name: cb.name, DataFormat: cb.fmt.String(),
			PageBytes: cb.fmt.tileBytes(), Pages: cb.pages, L1Offset: off, Purpose: cb.purpose})
		off += cb.pages * cb.fmt.tileBytes()
	}
	k.L1Bytes = off
	for _, cb := range g.unpackToDest {
		k.ComputeConfig.UnpackToDestFp32 = append(k.ComputeConfig.UnpackToDestFp32, cb.index)
	}
	k.Reader = KernelFile{Path: dir + "reader.cpp", Processor: processor("reader"), CompileArgs: nonNil(reader.compileArgs()), RuntimeArgs: reader.runtimeArgs()}
	k.Compute = KernelFile{Path: dir + "compute.cpp", Processor: processor("compute"), CompileArgs: []string{}, RuntimeArgs: []string{"unit_count", "Ct"}}
	k.Writer = KernelFile{Path: dir + "writer.cpp", Processor: processor("writer"), CompileArgs: nonNil(writer.compileArgs()), RuntimeArgs: writer.runtimeArgs()}
	return k, files
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// function describes a lowered func.func: its buffers (arguments, then
// the intermediates it allocates) and its launches.
func function(f ir.Func, kernels map[string]*kgen) (Function, error) {
	fj := Function{Name: f.SymName()}
	nres := 0
	if a, ok := f.Attr("num_results").(ir.IntAttr); ok {
		nres = int(a.Value)
	}
	names := map[*ir.Value]string{}
	layouts := map[string]string{}
	used := map[string]bool{}
	name := func(v *ir.Value, def string) string {
		n := cIdent(v.Name, def)
		for used[n] {
			n += "_"
		}
		used[n] = true
		names[v] = n
		return n
	}
	exprs := map[*ir.Value]Expr{}
	var bufIndex = map[string]int{}
	addBuffer := func(v *ir.Value, role string, shape []Expr) error {
		m, ok := v.Type().(ir.MemRefType)
		if !ok {
			return ir.Errorf(f.Loc, "'tt' backend: function '%s' has a non-buffer argument", f.SymName())
		}
		fm, ok := formatOf(m.Elem.Kind)
		if !ok {
			return ir.Errorf(f.Loc, "'tt' backend: function '%s' has a buffer of %s; %s", f.SymName(), m.Elem, unsupportedElem(m.Elem.Kind))
		}
		n := names[v]
		bufIndex[n] = len(fj.Buffers)
		fj.Buffers = append(fj.Buffers, Buffer{Name: n, Role: role, DType: m.Elem.String(), Shape: shape, Layout: "rows",
			DataFormat: fm.String(), PageBytes: fm.tileBytes()})
		return nil
	}
	args := f.Args()
	for i, a := range args {
		n := name(a, fmt.Sprintf("arg%d", i))
		role := "input"
		if i >= len(args)-nres {
			role = "output"
		}
		m, ok := a.Type().(ir.MemRefType)
		var shape []Expr
		if ok {
			for d, e := range m.Shape {
				if e == ir.Dynamic {
					shape = append(shape, Expr{Buffer: n, Axis: d})
				} else {
					shape = append(shape, constExpr(e))
				}
			}
		}
		if err := addBuffer(a, role, shape); err != nil {
			return fj, err
		}
	}
	exprOf := func(v *ir.Value) (Expr, error) {
		if e, ok := exprs[v]; ok {
			return e, nil
		}
		return Expr{}, ir.Errorf(f.Loc, "'tt' backend: function '%s' computes an extent the backend cannot follow", f.SymName())
	}
	binops := map[string]string{loop.OpMuli: "mul", loop.OpAddi: "add", loop.OpSubi: "sub", loop.OpDivi: "div", loop.OpRemi: "rem", loop.OpMini: "min"}
	tmp := 0
	for _, op := range f.Body().Ops() {
		switch op.Name() {
		case loop.OpDim:
			d, _ := loop.AsDim(op)
			exprs[op.Result(0)] = Expr{Buffer: names[d.Memref()], Axis: int(d.Axis())}
		case loop.OpConst:
			c, _ := constIndex(op.Result(0))
			exprs[op.Result(0)] = constExpr(c)
		case loop.OpAllocDRAM:
			v := op.Result(0)
			name(v, fmt.Sprintf("tmp%d", tmp))
			tmp++
			m := v.Type().(ir.MemRefType)
			var shape []Expr
			k := 0
			for _, e := range m.Shape {
				if e != ir.Dynamic {
					shape = append(shape, constExpr(e))
					continue
				}
				if k >= op.NumOperands() {
					return fj, ir.OpError(op, "has fewer extents than '?' dimensions")
				}
				x, err := exprOf(op.Operand(k))
				if err != nil {
					return fj, err
				}
				shape = append(shape, x)
				k++
			}
			if err := addBuffer(v, "intermediate", shape); err != nil {
				return fj, err
			}
		case loop.OpLaunch:
			l, _ := loop.AsLaunch(op)
			if rg, ok := l.Guard(); ok {
				return fj, ir.OpError(op, "is guarded (%s); the 'tt' host program has no conditional launches (row splitting is a CUDA lowering)", rg)
			}
			g := kernels[l.Kernel()]
			if g == nil {
				return fj, ir.OpError(op, "launches kernel '%s', which the 'tt' backend did not translate", l.Kernel())
			}
			lj := Launch{Kernel: l.Kernel()}
			for i, a := range l.Args() {
				if _, ok := a.Type().(ir.MemRefType); !ok {
					continue
				}
				n := names[a]
				lj.Buffers = append(lj.Buffers, n)
				if i >= len(g.params) {
					continue
				}
				p := g.params[i]
				lay := p.layout()
				if prev, ok := layouts[n]; ok && prev != lay {
					return fj, ir.OpError(op, "'tt' backend: buffer '%s' is laid out in %s by one kernel and in %s by kernel '%s' (a per-row result read as a row); not supported yet", n, prev, lay, g.name)
				}
				layouts[n] = lay
				fj.Buffers[bufIndex[n]].Layout = lay
			}
			fj.Launches = append(fj.Launches, lj)
		case "func.return":
		default:
			if e, ok := binops[op.Name()]; ok {
				x, err := exprOf(op.Operand(0))
				if err != nil {
					return fj, err
				}
				y, err := exprOf(op.Operand(1))
				if err != nil {
					return fj, err
				}
				exprs[op.Result(0)] = Expr{Op: e, Args: []Expr{x, y}}
				continue
			}
			return fj, ir.OpError(op, "cannot be translated by the 'tt' backend")
		}
	}
	checks, err := loop.ExtentChecks(f)
	if err != nil {
		return Function{}, err
	}
	argNames := make([]string, len(args))
	for i, a := range args {
		argNames[i] = names[a]
	}
	for _, c := range checks {
		fj.Checks = append(fj.Checks, c.Named(argNames))
	}
	return fj, nil
}

// Describe is a one-line summary of a program, for messages.
func (p *Program) Describe() string {
	var ks []string
	for _, k := range p.Kernels {
		ks = append(ks, k.Name)
	}
	return fmt.Sprintf("%s: %d function(s), kernels %s", p.Target, len(p.Functions), strings.Join(ks, ", "))
}
