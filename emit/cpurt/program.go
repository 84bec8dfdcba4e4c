// Package cpurt compiles lowered TensorForge modules to native programs
// for the host CPU and runs them: the LLVM IR of package llvmemit goes
// through LLVM 14's opt and llc, is linked with a small pthread runtime
// and a generic harness (both C, compiled by the system's C compiler),
// and is then executed on tensors of dialects/graph/eval.
//
//	p, err := cpurt.Compile(lowered, "rms_silu_mul")
//	defer p.Close()
//	outs, err := p.Run([]*eval.Tensor{x, w, z})
//
// Each kernel's grid is split across every core (tf_parallel_for; set
// TF_NUM_THREADS to use fewer).
package cpurt

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/dialects/loop"
	llvmemit "github.com/tensorforge/tensorforge/emit/llvm"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

// Module is a compiled module: a native program that can run any of the
// module's functions. It lives in a temporary directory until Close.
type Module struct {
	dir   string
	exe   string
	funcs []*Program
}

// Program is one function of a compiled module, ready to run.
type Program struct {
	mod   *Module
	owns  bool // Close closes the module too (Compile)
	index int  // in the harness's table of entry points
	fn    ir.Func
	ins   []ir.MemRefType
	outs  []ir.MemRefType
	// updated marks the inputs the function's kernels write in place
	// (graph.index_copy's destination).
	updated []bool
	// Threads, when positive, sets TF_NUM_THREADS for the runs.
	Threads int
}

// Options adjust Compile.
type Options struct {
	// Toolchain to use; nil finds one (FindToolchain).
	Toolchain *Toolchain
}

// Compile builds function fn of a lowered module (loop kernels and host
// functions, as lower-to-loops produces) into a native program.
func Compile(m ir.Module, fn string) (*Program, error) {
	return CompileWith(m, fn, Options{})
}

// CompileWith is Compile with options.
func CompileWith(m ir.Module, fn string, opts Options) (*Program, error) {
	if _, ok := m.Lookup(fn); !ok {
		return nil, fmt.Errorf("no function @%s in the module", fn)
	}
	mod, err := CompileModule(m, opts)
	if err != nil {
		return nil, err
	}
	p, err := mod.Func(fn)
	if err != nil {
		mod.Close()
		return nil, err
	}
	p.owns = true
	return p, nil
}

// CompileModule builds every function of a lowered module into one native
// program; Func picks the one to run.
func CompileModule(m ir.Module, opts Options) (*Module, error) {
	mod := &Module{}
	kernels := loop.KernelsOf(m)
	for i, f := range m.Funcs() {
		p := &Program{mod: mod, index: i, fn: f}
		if err := p.readSignature(); err != nil {
			return nil, err
		}
		p.updated = loop.WrittenInputs(f, kernels)
		mod.funcs = append(mod.funcs, p)
	}
	tc := opts.Toolchain
	if tc == nil {
		var err error
		if tc, err = FindToolchain(); err != nil {
			return nil, err
		}
	}
	text, err := llvmemit.EmitText(m, llvmemit.Options{Entries: true})
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "tfc-run-")
	if err != nil {
		return nil, err
	}
	mod.dir = dir
	exe, err := tc.build(dir, text)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	mod.exe = exe
	return mod, nil
}

// Func returns the compiled function called name.
func (mod *Module) Func(name string) (*Program, error) {
	for _, p := range mod.funcs {
		if p.fn.SymName() == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("no function @%s in the compiled module", name)
}

// Close removes the program's files.
func (mod *Module) Close() error {
	if mod.dir == "" {
		return nil
	}
	err := os.RemoveAll(mod.dir)
	mod.dir = ""
	return err
}

// Close releases a program made by Compile (its whole module); for a
// function of CompileModule it does nothing.
func (p *Program) Close() error {
	if p.owns {
		return p.mod.Close()
	}
	return nil
}

// readSignature splits the function's buffer arguments into inputs and
// outputs by its `num_results` attribute.
func (p *Program) readSignature() error {
	f := p.fn
	nres, ok := ir.AttrAsInt(f.Attr("num_results"))
	if !ok {
		return ir.OpError(f.Operation, "@%s has no 'num_results' attribute: it is not lowered (run lower-to-loops first)", f.SymName())
	}
	args := f.Args()
	if nres < 0 || int(nres) > len(args) {
		return ir.OpError(f.Operation, "@%s has num_results = %d but %d arguments", f.SymName(), nres, len(args))
	}
	for i, a := range args {
		m, ok := a.Type().(ir.MemRefType)
		if !ok {
			return ir.OpError(f.Operation, "@%s: argument #%d has type %s, not a buffer", f.SymName(), i, a.Type())
		}
		if i < len(args)-int(nres) {
			p.ins = append(p.ins, m)
		} else {
			p.outs = append(p.outs, m)
		}
	}
	return nil
}

// NumInputs and NumOutputs give the arity of the compiled function.
func (p *Program) NumInputs() int  { return len(p.ins) }
func (p *Program) NumOutputs() int { return len(p.outs) }

// Run executes the program once on inputs (one per input argument, in
// order) and returns its results.
func (p *Program) Run(inputs []*eval.Tensor) ([]*eval.Tensor, error) {
	outs, _, err := p.run(inputs, 1)
	return outs, err
}

// Time executes the program runs+1 times on inputs: the first run gives
// the results, the others are timed one by one (the buffers stay in
// memory, so only the kernels are measured).
func (p *Program) Time(inputs []*eval.Tensor, runs int) ([]time.Duration, []*eval.Tensor, error) {
	outs, times, err := p.run(inputs, runs+1)
	return times, outs, err
}

func (p *Program) run(inputs []*eval.Tensor, runs int) ([]*eval.Tensor, []time.Duration, error) {
	dir := p.mod.dir
	if dir == "" {
		return nil, nil, fmt.Errorf("the program is closed")
	}
	if len(inputs) != len(p.ins) {
		return nil, nil, fmt.Errorf("@%s takes %d inputs, got %d", p.fn.SymName(), len(p.ins), len(inputs))
	}
	inShapes := make([][]int64, len(inputs))
	var files []string
	defer func() {
		for _, f := range files {
			os.Remove(f)
		}
	}()
	ins := make([]Region, len(inputs))
	for i, t := range inputs {
		if t == nil {
			return nil, nil, fmt.Errorf("input #%d is missing", i)
		}
		if !matchShape(t.Shape, p.ins[i].Shape) {
			return nil, nil, fmt.Errorf("input #%d (%s) has shape %s, which does not match %s", i, argName(p.fn, i), eval.FormatShape(t.Shape), p.ins[i])
		}
		inShapes[i] = t.Shape
		data, err := encode(t, p.ins[i].Elem.Kind)
		if err != nil {
			return nil, nil, fmt.Errorf("input #%d (%s): %v", i, argName(p.fn, i), err)
		}
		path := filepath.Join(dir, fmt.Sprintf("in%d.bin", i))
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return nil, nil, err
		}
		files = append(files, path)
		ins[i] = Region{Path: path, Size: int64(len(data))}
	}
	outShapes, err := OutputShapes(p.fn, inShapes)
	if err != nil {
		return nil, nil, err
	}
	outs := make([]Region, len(p.outs))
	for i, m := range p.outs {
		n, _ := ir.NumElements(outShapes[i])
		path := filepath.Join(dir, fmt.Sprintf("out%d.bin", i))
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			return nil, nil, err
		}
		files = append(files, path)
		outs[i] = Region{Path: path, Size: n * m.Elem.Kind.ByteSize()}
	}
	times, err := p.RunFiles(ins, inShapes, outs, outShapes, runs)
	if err != nil {
		return nil, nil, err
	}
	results := make([]*eval.Tensor, len(p.outs))
	for i, m := range p.outs {
		data, err := os.ReadFile(outs[i].Path)
		if err != nil {
			return nil, nil, err
		}
		if results[i], err = decode(data, m.Elem.Kind, outShapes[i]); err != nil {
			return nil, nil, err
		}
	}
	return results, times, nil
}

// Region is a buffer held in a file: Size bytes at Offset of Path (the
// data of a .npy file, say).
type Region struct {
	Path         string
	Offset, Size int64
	// Update marks an input the program writes in place (UpdatedInputs):
	// the file region is read and written back, not read alone.
	Update bool
}

// UpdatedInputs reports, per input, whether the function's kernels write
// it in place (graph.index_copy's destination); RunFiles writes such an
// input's region back when it is marked Update.
func (p *Program) UpdatedInputs() []bool { return p.updated }

// InputTypes and OutputTypes are the buffer types of the function's
// arguments.
func (p *Program) InputTypes() []ir.MemRefType  { return p.ins }
func (p *Program) OutputTypes() []ir.MemRefType { return p.outs }

// OutputShapes resolves the shapes of the outputs from the inputs' shapes
// (see the function OutputShapes).
func (p *Program) OutputShapes(inShapes [][]int64) ([][]int64, error) {
	return OutputShapes(p.fn, inShapes)
}

// RunFiles executes the program runs times (at least once) on buffers held
// in files, with no conversion: each input region holds the elements of
// its argument's type, row-major, and each output region receives them.
// The program maps the regions whose offset is a multiple of 64 into
// memory (an output file is extended to the end of its region), so the
// kernels read and write the files' pages directly; it reads and writes
// the others. inShapes and outShapes give the extents of every buffer (an
// output's from OutputShapes). The second and later runs are timed.
func (p *Program) RunFiles(ins []Region, inShapes [][]int64, outs []Region, outShapes [][]int64, runs int) ([]time.Duration, error) {
	if p.mod.dir == "" {
		return nil, fmt.Errorf("the program is closed")
	}
	if len(ins) != len(p.ins) || len(inShapes) != len(p.ins) {
		return nil, fmt.Errorf("@%s takes %d inputs, got %d", p.fn.SymName(), len(p.ins), len(ins))
	}
	if len(outs) != len(p.outs) || len(outShapes) != len(p.outs) {
		return nil, fmt.Errorf("@%s has %d outputs, got %d", p.fn.SymName(), len(p.outs), len(outs))
	}
	runs = max(runs, 1)
	var manifest strings.Builder
	fmt.Fprintf(&manifest, "entry %d\nruns %d\n", p.index, runs)
	// the extents of every `?`, inputs then outputs, in dimension order
	all := append(append([]ir.MemRefType(nil), p.ins...), p.outs...)
	shapes := append(append([][]int64(nil), inShapes...), outShapes...)
	regions := append(append([]Region(nil), ins...), outs...)
	for i, m := range all {
		if !matchShape(shapes[i], m.Shape) {
			return nil, fmt.Errorf("buffer #%d has shape %s, which does not match %s", i, eval.FormatShape(shapes[i]), m)
		}
		n, ok := ir.NumElements(shapes[i])
		if !ok || regions[i].Size != n*m.Elem.Kind.ByteSize() {
			return nil, fmt.Errorf("buffer #%d of shape %s takes %d bytes, not %d", i, eval.FormatShape(shapes[i]), n*m.Elem.Kind.ByteSize(), regions[i].Size)
		}
		if strings.ContainsAny(regions[i].Path, "\n\r") || regions[i].Offset < 0 {
			return nil, fmt.Errorf("buffer #%d: bad file region %q at %d", i, regions[i].Path, regions[i].Offset)
		}
		for d, n := range m.Shape {
			if n == ir.Dynamic {
				fmt.Fprintf(&manifest, "ext %d\n", shapes[i][d])
			}
		}
	}
	for i, r := range regions {
		kind := "in"
		switch {
		case i >= len(ins):
			kind = "out"
		case r.Update:
			kind = "inout"
		}
		path, err := filepath.Abs(r.Path)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&manifest, "%s %d %d %s\n", kind, r.Size, r.Offset, path)
	}
	mf, err := os.CreateTemp(p.mod.dir, "manifest-*.txt")
	if err != nil {
		return nil, err
	}
	defer os.Remove(mf.Name())
	_, werr := mf.WriteString(manifest.String())
	if cerr := mf.Close(); werr != nil || cerr != nil {
		return nil, fmt.Errorf("cannot write the manifest: %v", errors.Join(werr, cerr))
	}

	cmd := exec.Command(p.mod.exe, mf.Name())
	cmd.Env = os.Environ()
	if p.Threads > 0 {
		cmd.Env = append(cmd.Env, "TF_NUM_THREADS="+strconv.Itoa(p.Threads))
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("the compiled program failed (%v): %s", err, strings.TrimSpace(stderr.String()))
	}
	var times []time.Duration
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "time_ns "); ok {
			if ns, err := strconv.ParseInt(rest, 10, 64); err == nil {
				times = append(times, time.Duration(ns))
			}
		}
	}
	return times, nil
}

func argName(f ir.Func, i int) string {
	if n := f.Args()[i].Name; n != "" {
		return "%" + n
	}
	return fmt.Sprintf("argument #%d", i)
}

// matchShape reports whether a concrete shape fits a type's, `?` matching
// any extent.
func matchShape(shape, typ []int64) bool {
	if len(shape) != len(typ) {
		return false
	}
	for i, d := range typ {
		if d != ir.Dynamic && d != shape[i] {
			return false
		}
	}
	return true
}

// ---------------------------------------------------------------------------
// Output shapes

// OutputShapes resolves the shapes of a lowered function's output
// buffers from its input shapes. Static extents are in the types; a `?`
// of an output takes the value the function passes for it to a kernel,
// evaluated from the inputs' extents (loop.dim, constants and index
// arithmetic). An extent that cannot be traced so takes the inputs' one
// dynamic extent when they all agree, and is an error otherwise.
func OutputShapes(f ir.Func, inShapes [][]int64) ([][]int64, error) {
	args := f.Args()
	nres, _ := ir.AttrAsInt(f.Attr("num_results"))
	nin := len(args) - int(nres)
	if len(inShapes) != nin {
		return nil, fmt.Errorf("@%s takes %d inputs, got %d shapes", f.SymName(), nin, len(inShapes))
	}
	// the extents the kernels assume agree, so that none reads past a buffer
	if err := loop.CheckExtents(f, inShapes); err != nil {
		return nil, err
	}
	shapes := map[*ir.Value][]int64{}
	for i := 0; i < nin; i++ {
		shapes[args[i]] = inShapes[i]
	}
	outShapes := make([][]int64, int(nres))
	for j := range outShapes {
		m := args[nin+j].Type().(ir.MemRefType)
		outShapes[j] = append([]int64(nil), m.Shape...)
		shapes[args[nin+j]] = outShapes[j]
	}
	env := map[*ir.Value]int64{}
	known := func(v *ir.Value) (int64, bool) { x, ok := env[v]; return x, ok }
	// Two sweeps: the second sees extents the first resolved.
	for sweep := 0; sweep < 2; sweep++ {
		for op := f.Body().First(); op != nil; op = op.Next() {
			evalIndexOp(op, env, shapes)
			l, ok := loop.AsLaunch(op)
			if !ok {
				continue
			}
			k, ok := loop.LookupKernel(op, l.Kernel())
			if !ok {
				continue
			}
			nbuf := int(k.NumInputs() + k.NumOutputs())
			ops := l.Args()
			if len(ops) < nbuf {
				continue
			}
			next := nbuf
			for b := 0; b < nbuf; b++ {
				m, ok := ops[b].Type().(ir.MemRefType)
				if !ok {
					continue
				}
				for d, n := range m.Shape {
					if n != ir.Dynamic {
						continue
					}
					if next >= len(ops) {
						break
					}
					ext := ops[next]
					next++
					s := shapes[ops[b]]
					if s == nil || s[d] != ir.Dynamic {
						continue
					}
					if v, ok := known(ext); ok {
						s[d] = v
					}
				}
			}
		}
	}
	// Fallback: the one dynamic extent of the inputs.
	var dyn []int64
	for i := 0; i < nin; i++ {
		m := args[i].Type().(ir.MemRefType)
		for d, n := range m.Shape {
			if n == ir.Dynamic {
				dyn = append(dyn, inShapes[i][d])
			}
		}
	}
	for j, s := range outShapes {
		for d, n := range s {
			if n != ir.Dynamic {
				continue
			}
			if len(dyn) > 0 && allEqual(dyn) {
				s[d] = dyn[0]
				continue
			}
			return nil, fmt.Errorf("cannot tell the extent of dimension %d of result #%d of @%s from its inputs", d, j, f.SymName())
		}
	}
	return outShapes, nil
}

func allEqual(xs []int64) bool {
	for _, x := range xs {
		if x != xs[0] {
			return false
		}
	}
	return true
}

// evalIndexOp evaluates a host op that computes an index, if its operands
// are known.
func evalIndexOp(op *ir.Operation, env map[*ir.Value]int64, shapes map[*ir.Value][]int64) {
	if op.NumResults() != 1 {
		return
	}
	r := op.Result(0)
	switch op.Name() {
	case loop.OpDim:
		d := loop.DimOp{Operation: op}
		s := shapes[d.Memref()]
		if ax := d.Axis(); s != nil && ax >= 0 && int(ax) < len(s) && s[ax] != ir.Dynamic {
			env[r] = s[ax]
		}
		return
	case loop.OpConst:
		if e, ok := r.Type().(ir.ElemType); ok && e.Kind == ir.Index {
			env[r] = int64(loop.ConstOp{Operation: op}.Value())
		}
		return
	}
	if op.NumOperands() != 2 {
		return
	}
	a, okA := env[op.Operand(0)]
	b, okB := env[op.Operand(1)]
	if !okA || !okB {
		return
	}
	switch op.Name() {
	case loop.OpAddi:
		env[r] = a + b
	case loop.OpSubi:
		env[r] = a - b
	case loop.OpMuli:
		env[r] = a * b
	case loop.OpDivi:
		if b != 0 {
			env[r] = a / b
		}
	case loop.OpRemi:
		if b != 0 {
			env[r] = a % b
		}
	case loop.OpMini:
		env[r] = min(a, b)
	}
}

// ---------------------------------------------------------------------------
// Tensors in memory

// Encode writes t's values as elements of kind k, little-endian, the
// storage of the library's ABI (f16 and bf16 as their bits, i1 a byte).
// Floats are rounded to k; integers must be exact.
func Encode(t *eval.Tensor, k ir.ElemKind) ([]byte, error) { return encode(t, k) }

// Decode reads elements of kind k (as Encode writes them) into a tensor of
// the given shape.
func Decode(data []byte, k ir.ElemKind, shape []int64) (*eval.Tensor, error) {
	return decode(data, k, shape)
}

// encode is Encode.
func encode(t *eval.Tensor, k ir.ElemKind) ([]byte, error) {
	size := int(k.ByteSize())
	out := make([]byte, len(t.Data)*size)
	for i, v := range t.Data {
		if k.IsInt() && t.Elem != k {
			if r := numeric.RoundTo(v, k); r != v && !(math.IsNaN(r) && math.IsNaN(v)) {
				return nil, fmt.Errorf("element %d (%v) of type %s is not exactly representable in %s", i, v, t.Elem, k)
			}
		}
		var bits uint64
		switch {
		case k == ir.F32:
			bits = uint64(math.Float32bits(float32(v)))
		case k == ir.F64:
			bits = math.Float64bits(v)
		case k.IsFloat():
			bits, _ = numeric.ToBits(v, k)
		case k == ir.I1:
			if v != 0 {
				bits = 1
			}
		default:
			bits = uint64(int64(v))
		}
		b := out[i*size : (i+1)*size]
		switch size {
		case 1:
			b[0] = byte(bits)
		case 2:
			binary.LittleEndian.PutUint16(b, uint16(bits))
		case 4:
			binary.LittleEndian.PutUint32(b, uint32(bits))
		case 8:
			binary.LittleEndian.PutUint64(b, bits)
		}
	}
	return out, nil
}

// decode reads elements of kind k into a tensor of the given shape.
func decode(data []byte, k ir.ElemKind, shape []int64) (*eval.Tensor, error) {
	size := int(k.ByteSize())
	n, _ := ir.NumElements(shape)
	if int64(len(data)) != n*int64(size) {
		return nil, fmt.Errorf("the program wrote %d bytes for a result of shape %s (%d expected)", len(data), eval.FormatShape(shape), n*int64(size))
	}
	t := &eval.Tensor{Shape: append([]int64{}, shape...), Elem: k, Data: make([]float64, n)}
	bitsOf := k.BitWidth()
	for i := range t.Data {
		b := data[i*size : (i+1)*size]
		var bits uint64
		switch size {
		case 1:
			bits = uint64(b[0])
		case 2:
			bits = uint64(binary.LittleEndian.Uint16(b))
		case 4:
			bits = uint64(binary.LittleEndian.Uint32(b))
		case 8:
			bits = binary.LittleEndian.Uint64(b)
		}
		switch {
		case k == ir.F32:
			t.Data[i] = float64(math.Float32frombits(uint32(bits)))
		case k == ir.F64:
			t.Data[i] = math.Float64frombits(bits)
		case k.IsFloat():
			t.Data[i], _ = numeric.FromBits(bits, k)
		case k == ir.I1:
			if bits&1 == 1 {
				t.Data[i] = 1
			}
		case k.IsUnsigned():
			t.Data[i] = float64(bits)
		default:
			shift := 64 - bitsOf
			t.Data[i] = float64(int64(bits<<shift) >> shift)
		}
	}
	return t, nil
}
