package metal

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// This file writes the launch description of each function: what a host
// program (or mx.fast.metal_kernel) needs to run the kernels without
// reading the IR, as JSON:
//
//	{
//	  "format": "tensorforge.metal.launch/1",
//	  "source": "rms_silu_mul.metal",
//	  "functions": [{
//	    "name": "rms_silu_mul",
//	    "arguments": [{"name": "x", "role": "input", "dtype": "bfloat16", "shape": [null, 8192]}, ...],
//	    "extents": [{"name": "x_d0", "argument": "x", "axis": 0}],
//	    "launches": [{"kernel": "rms_silu_mul_k0",
//	                  "buffers": [{"index": 0, "param": "x", "buffer": "x"}, ..., {"index": 4, "param": "rows", "value": "x_d0"}],
//	                  "threadgroups": "x_d0", "threads_per_threadgroup": "32"}]
//	  }],
//	  "kernels": [{"name": "rms_silu_mul_k0", "parameters": [...], "threadgroup_memory_bytes": 32768, "mlx": {...}}]
//	}
//
// Sizes are expressions over the extents (see expr.go); the kernels are
// the same whatever the sizes, so "threads_per_threadgroup" may be
// lowered to what a pipeline allows.

// LaunchFormat names the version of the launch description.
const LaunchFormat = "tensorforge.metal.launch/1"

// LaunchDescription is the JSON document next to a .metal file.
type LaunchDescription struct {
	Format         string            `json:"format"`
	Source         string            `json:"source"`
	Target         string            `json:"target"`
	CompileOptions CompileOptions    `json:"compile_options"`
	Functions      []*FunctionLaunch `json:"functions"`
	Kernels        []*KernelInfo     `json:"kernels"`
}

// CompileOptions are what the Metal compiler must be given: the kernels
// need IEEE infinities and NaN (fast math off) and bfloat (Metal 3.1).
type CompileOptions struct {
	LanguageVersion string `json:"language_version"`
	FastMath        bool   `json:"fast_math"`
}

// FunctionLaunch is one function: its arguments, the intermediates it
// allocates and its launches in order.
type FunctionLaunch struct {
	Name          string         `json:"name"`
	Arguments     []Argument     `json:"arguments"`
	Extents       []Extent       `json:"extents"`
	ArenaBytes    int64          `json:"arena_bytes"`
	Intermediates []Intermediate `json:"intermediates"`
	Launches      []Launch       `json:"launches"`
	// Checks are what the inputs' extents must satisfy before the first
	// launch (the function's loop.ExtentChecks), so that no kernel reads
	// past a buffer: a host refuses inputs that break one.
	Checks []loop.NamedExtentCheck `json:"extent_checks,omitempty"`
}

// Argument is a buffer argument: inputs, then the outputs the function
// writes (allocated by the caller). Dims gives every extent as an
// expression: a number, an extent of an input, or (for an output) what
// the function computes it from, which is how a caller sizes the outputs.
type Argument struct {
	Name  string   `json:"name"`
	Role  string   `json:"role"`
	DType string   `json:"dtype"`
	Shape []*int64 `json:"shape"`
	Dims  []string `json:"dims"`
}

// Extent names a run-time extent: dimension Axis of Argument.
type Extent struct {
	Name     string `json:"name"`
	Argument string `json:"argument"`
	Axis     int64  `json:"axis"`
}

// Intermediate is a buffer between launches: at ArenaOffset in one buffer
// of ArenaBytes, or (offset null) allocated with Bytes at run time.
type Intermediate struct {
	Name        string   `json:"name"`
	DType       string   `json:"dtype"`
	Shape       []*int64 `json:"shape"`
	Dims        []string `json:"dims"`
	Bytes       string   `json:"bytes"`
	ArenaOffset *int64   `json:"arena_offset"`
}

// Launch is one dispatch: threadgroups of threads_per_threadgroup
// threads, each buffer index bound to an argument or intermediate
// ("buffer") or to a uint extent ("value", an expression).
type Launch struct {
	Kernel                string    `json:"kernel"`
	Buffers               []Binding `json:"buffers"`
	Threadgroups          string    `json:"threadgroups"`
	ThreadsPerThreadgroup string    `json:"threads_per_threadgroup"`
}

// Binding binds [[buffer(Index)]], parameter Param.
type Binding struct {
	Index  int    `json:"index"`
	Param  string `json:"param"`
	Buffer string `json:"buffer,omitempty"`
	Value  string `json:"value,omitempty"`
}

// KernelInfo describes a kernel function of the .metal file.
type KernelInfo struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Parameters in declaration order: buffers and extents ([[buffer(i)]]),
	// then the built-ins.
	Parameters             []Param `json:"parameters"`
	ThreadgroupMemoryBytes int64   `json:"threadgroup_memory_bytes"`
	// Reduction is "threadgroup" (simdgroups, then partial[] across them),
	// "simdgroup" (one simdgroup works; more threads only wait) or "none".
	Reduction string `json:"reduction"`
	// RowsShareThreadgroups: a row may take several threadgroups; the
	// kernel reads threadgroups_per_grid.
	RowsShareThreadgroups bool `json:"rows_share_threadgroups"`
	MaxThreads            int  `json:"max_threads_per_threadgroup"`
	// MatMul describes the tiles of a tiled matmul kernel (absent for
	// every other kernel, a matmul run as a generic kernel included).
	MatMul          *MatMulTiling `json:"matmul,omitempty"`
	MLX             MLXKernel     `json:"mlx"`
	source          string        // the kernel function
	helpers         helperSet     // what it calls
	threads, groups *expr         // over the parameter names
	params          []*ir.Value   // the block arguments, in order
	// extentParams gives, per buffer parameter, the index of the extent
	// parameter of each dimension (-1 where static).
	extentParams [][]int
}

// Param is a kernel parameter.
type Param struct {
	Name      string `json:"name"`
	Kind      string `json:"kind"` // buffer, extent, builtin
	Type      string `json:"type"`
	Index     *int   `json:"index,omitempty"`
	Attribute string `json:"attribute,omitempty"`
	Access    string `json:"access,omitempty"`
	DType     string `json:"dtype,omitempty"`
}

// MLXKernel is the kernel as mx.fast.metal_kernel takes it: the body
// (with the built-ins bound from MLX's uint3 attributes) and the helpers
// as header. Extents are inputs too, 0-d mx.uint32 arrays; the grid is
// (threadgroups * threads_per_threadgroup, 1, 1) threads.
type MLXKernel struct {
	Name        string   `json:"name"`
	InputNames  []string `json:"input_names"`
	OutputNames []string `json:"output_names"`
	Header      string   `json:"header"`
	Source      string   `json:"source"`
}

// mlxPrologue binds the built-ins of the kernel body from MLX's.
func mlxPrologue(chunked bool) string {
	s := `  const uint gid = threadgroup_position_in_grid.x;
  const uint lid = thread_position_in_threadgroup.x;
  const uint simd_lane = thread_index_in_simdgroup;
  const uint simd_id = simdgroup_index_in_threadgroup;
  const uint tg_size = threads_per_threadgroup.x;
`
	if chunked {
		s += "  const uint ngroups = threadgroups_per_grid.x;\n"
	}
	return s
}

// paramExpr is index value v of kernel ke as an expression over the
// kernel's extent parameters, or nil when it is computed in the grid.
func (ke *kernelEmitter) paramExpr(v *ir.Value) *expr {
	if c, ok := loop.AsConst(v.DefiningOp()); ok {
		return cst(int64(c.Value()))
	}
	if v.IsBlockArg() {
		if v.OwnerBlock() == ke.p.body {
			return vr(ke.params[v])
		}
		return nil
	}
	op := v.DefiningOp()
	if op.Block() != ke.p.body || !isIndexArith(op.Name()) {
		return nil
	}
	a, b := ke.paramExpr(op.Operand(0)), ke.paramExpr(op.Operand(1))
	if a == nil || b == nil {
		return nil
	}
	return bin(arithSymbol(op.Name()), a, b)
}

// arithSymbol is the expression operator of an index op.
func arithSymbol(name string) string {
	switch name {
	case loop.OpAddi:
		return "+"
	case loop.OpSubi:
		return "-"
	case loop.OpMuli:
		return "*"
	case loop.OpDivi:
		return "/"
	case loop.OpRemi:
		return "%"
	}
	return "min"
}

// launchSizes sets the threads and threadgroups of a launch of the
// kernel, over its parameters: as many threads as the longest
// distributed loop has iterations, rounded to simdgroups, at most 1024
// (256 when rows share threadgroups, which then cover a row together).
func (ke *kernelEmitter) launchSizes(info *KernelInfo) {
	p := ke.p
	if p.mm != nil {
		// a threadgroup per tile of the result, a simdgroup per quarter
		info.threads, info.groups = cst(mmThreads), p.mm.groups()
		return
	}
	g := p.grid
	instances := ceilDiv(bin("-", ke.paramExpr(g.Upper()), ke.paramExpr(g.Lower())), ke.paramExpr(g.Step()))
	var trip *expr
	for op := p.gridBody.First(); op != nil; op = op.Next() {
		if !p.distributed[op] {
			continue
		}
		f, _ := loop.AsFor(op)
		lb, ub, step := ke.paramExpr(f.Lower()), ke.paramExpr(f.Upper()), ke.paramExpr(f.Step())
		if lb == nil || ub == nil || step == nil || !(lb.isConst() && lb.val == 0) {
			// a loop from elsewhere than 0 is a tail, shorter than a vector
			continue
		}
		n := ceilDiv(bin("-", ub, lb), step)
		if trip == nil {
			trip = n
		} else {
			trip = bin("max", trip, n)
		}
	}
	limit := int64(maxThreads)
	if p.chunked {
		limit = chunkThreads
	}
	threads := cst(limit)
	if trip != nil {
		threads = bin("min", cst(limit), bin("max", cst(32), roundUp(trip, cst(32))))
	}
	if p.mode == modeSimdgroup {
		threads = cst(32)
	}
	groups := instances
	if p.chunked && trip != nil {
		// as many threadgroups per row as it takes threads of `limit`
		groups = bin("*", instances, bin("max", cst(1), ceilDiv(trip, cst(limit))))
	}
	info.threads, info.groups = threads, groups
}

// ---------------------------------------------------------------------------
// Functions

// funcDescriber describes one func.func.
type funcDescriber struct {
	prog    *Program
	fn      ir.Func
	names   *namer
	exprs   map[*ir.Value]*expr
	bufs    map[*ir.Value]string
	extents map[string]string // "arg axis" -> extent name
	out     *FunctionLaunch
	kernels []string // launched, in first-launch order
	// argIndex numbers the buffer arguments; dims holds the expression of
	// each of their extents, as far as known.
	argIndex map[*ir.Value]int
	dims     [][]*expr
}

// describeFunc walks the body of a lowered function.
func (prog *Program) describeFunc(fn ir.Func) (*FunctionLaunch, []string, error) {
	d := &funcDescriber{prog: prog, fn: fn, names: newNamer(), exprs: map[*ir.Value]*expr{}, bufs: map[*ir.Value]string{},
		argIndex: map[*ir.Value]int{},
		extents:  map[string]string{}, out: &FunctionLaunch{Name: fn.SymName(), Arguments: []Argument{}, Extents: []Extent{},
			Intermediates: []Intermediate{}, Launches: []Launch{}}}
	if fn.Region(0) == nil || len(fn.Region(0).Blocks) != 1 {
		return nil, nil, ir.OpError(fn.Operation, "has no body of one block")
	}
	nres := int64(0)
	if a, ok := fn.Attr("num_results").(ir.IntAttr); ok {
		nres = a.Value
	}
	args := fn.Args()
	if nres < 0 || nres > int64(len(args)) {
		return nil, nil, ir.OpError(fn.Operation, "has num_results = %d for %d arguments", nres, len(args))
	}
	if a, ok := fn.Attr("dram_arena_bytes").(ir.IntAttr); ok {
		d.out.ArenaBytes = a.Value
	}
	for i, a := range args {
		m, ok := a.Type().(ir.MemRefType)
		if !ok {
			return nil, nil, ir.OpError(fn.Operation, "takes %s; a lowered function takes buffers", a.Type())
		}
		name := d.names.fresh(orDefault(a.Name, fmt.Sprintf("arg%d", i)))
		d.bufs[a] = name
		role := "input"
		if int64(i) >= int64(len(args))-nres {
			role = "output"
		}
		d.out.Arguments = append(d.out.Arguments, Argument{Name: name, Role: role, DType: dtypeName(m.Elem.Kind), Shape: shapeJSON(m.Shape)})
		d.argIndex[a] = i
		dims := make([]*expr, len(m.Shape))
		for k, n := range m.Shape {
			if n != ir.Dynamic {
				dims[k] = cst(n)
			}
		}
		d.dims = append(d.dims, dims)
	}
	for op := fn.Body().First(); op != nil; op = op.Next() {
		if err := d.op(op); err != nil {
			return nil, nil, err
		}
	}
	checks, err := loop.ExtentChecks(fn)
	if err != nil {
		return nil, nil, err
	}
	names := make([]string, len(d.out.Arguments))
	for i, a := range d.out.Arguments {
		names[i] = a.Name
	}
	for _, c := range checks {
		d.out.Checks = append(d.out.Checks, c.Named(names))
	}
	// an input's run-time extents are its own
	for key, ext := range d.extents {
		var name string
		var axis int
		fmt.Sscanf(key, "%s %d", &name, &axis)
		for i, a := range d.out.Arguments {
			if a.Name == name && a.Role == "input" {
				d.dims[i][axis] = vr(ext)
			}
		}
	}
	for i := range d.out.Arguments {
		dims := []string{}
		for k, e := range d.dims[i] {
			if e == nil {
				// not given to any kernel: the caller names it
				e = vr(fmt.Sprintf("%s_d%d", d.out.Arguments[i].Name, k))
			}
			dims = append(dims, e.String())
		}
		d.out.Arguments[i].Dims = dims
	}
	return d.out, d.kernels, nil
}

// shapeJSON spells a shape with null for `?`.
func shapeJSON(shape []int64) []*int64 {
	out := make([]*int64, len(shape))
	for i, n := range shape {
		if n != ir.Dynamic {
			v := n
			out[i] = &v
		}
	}
	return out
}

func (d *funcDescriber) value(op *ir.Operation, v *ir.Value) (*expr, error) {
	if e, ok := d.exprs[v]; ok {
		return e, nil
	}
	if c, ok := loop.AsConst(v.DefiningOp()); ok {
		return cst(int64(c.Value())), nil
	}
	return nil, ir.OpError(op, "uses an index value the launch description cannot express")
}

// op describes one op of the function body.
func (d *funcDescriber) op(op *ir.Operation) error {
	switch op.Name() {
	case loop.OpConst, ir.ReturnOpName:
		return nil
	case loop.OpDim:
		dim, _ := loop.AsDim(op)
		m := dim.Memref()
		if e, ok := d.exprs[m]; ok && e == nil {
			return ir.OpError(op, "reads an extent of a buffer the description cannot name")
		}
		if op, ok := loop.AsAllocDRAM(m.DefiningOp()); ok {
			// an extent of an intermediate is one of its operands
			t := m.Type().(ir.MemRefType)
			k := 0
			for ax, n := range t.Shape {
				if n == ir.Dynamic {
					if int64(ax) == dim.Axis() {
						e, err := d.value(op.Operation, op.Extents()[k])
						d.exprs[dim.Output()] = e
						return err
					}
					k++
				} else if int64(ax) == dim.Axis() {
					d.exprs[dim.Output()] = cst(n)
					return nil
				}
			}
			return ir.OpError(dim.Operation, "reads axis %d of a buffer of rank %d", dim.Axis(), len(t.Shape))
		}
		name, ok := d.bufs[m]
		if !ok {
			return ir.OpError(op, "reads an extent of a buffer that is not an argument")
		}
		t := m.Type().(ir.MemRefType)
		if dim.Axis() < 0 || dim.Axis() >= int64(len(t.Shape)) {
			return ir.OpError(op, "reads axis %d of a buffer of rank %d", dim.Axis(), len(t.Shape))
		}
		if n := t.Shape[dim.Axis()]; n != ir.Dynamic {
			d.exprs[dim.Output()] = cst(n)
			return nil
		}
		key := fmt.Sprintf("%s %d", name, dim.Axis())
		ext, ok := d.extents[key]
		if !ok {
			ext = d.names.fresh(orDefault(dim.Output().Name, fmt.Sprintf("%s_d%d", name, dim.Axis())))
			d.extents[key] = ext
			d.out.Extents = append(d.out.Extents, Extent{Name: ext, Argument: name, Axis: dim.Axis()})
		}
		d.exprs[dim.Output()] = vr(ext)
		return nil
	case loop.OpAddi, loop.OpSubi, loop.OpMuli, loop.OpDivi, loop.OpRemi, loop.OpMini:
		a, err := d.value(op, op.Operand(0))
		if err != nil {
			return err
		}
		b, err := d.value(op, op.Operand(1))
		if err != nil {
			return err
		}
		d.exprs[op.Result(0)] = bin(arithSymbol(op.Name()), a, b)
		return nil
	case loop.OpAllocDRAM:
		a, _ := loop.AsAllocDRAM(op)
		t := a.Output().Type().(ir.MemRefType)
		bytes := cst(t.Elem.Kind.ByteSize())
		dims := []string{}
		k := 0
		for _, n := range t.Shape {
			e := cst(n)
			if n == ir.Dynamic {
				if k >= len(a.Extents()) {
					return ir.OpError(op, "has fewer extents than its type has '?'")
				}
				var err error
				if e, err = d.value(op, a.Extents()[k]); err != nil {
					return err
				}
				k++
			}
			bytes = bin("*", bytes, e)
			dims = append(dims, e.String())
		}
		name := d.names.fresh(orDefault(a.Output().Name, fmt.Sprintf("tmp%d", len(d.out.Intermediates))))
		d.bufs[a.Output()] = name
		im := Intermediate{Name: name, DType: dtypeName(t.Elem.Kind), Shape: shapeJSON(t.Shape), Dims: dims, Bytes: bytes.String()}
		if off, ok := a.Offset(); ok && k == 0 {
			o := off
			im.ArenaOffset = &o
		}
		d.out.Intermediates = append(d.out.Intermediates, im)
		return nil
	case loop.OpLaunch:
		return d.launch(op)
	}
	return ir.OpError(op, "cannot be described for a Metal host program")
}

// launch describes a loop.launch.
func (d *funcDescriber) launch(op *ir.Operation) error {
	l, _ := loop.AsLaunch(op)
	if g, ok := l.Guard(); ok {
		return ir.OpError(op, "is guarded (%s); the Metal launch description has no conditional launches (row splitting is a CUDA lowering)", g)
	}
	info, ok := d.prog.byName[l.Kernel()]
	if !ok {
		return ir.OpError(op, "launches '%s', which is not a kernel of the module", l.Kernel())
	}
	if len(l.Args()) != len(info.params) {
		return ir.OpError(op, "passes %d operands to kernel '%s' of %d arguments", len(l.Args()), l.Kernel(), len(info.params))
	}
	out := Launch{Kernel: info.Name}
	bind := map[string]*expr{}
	for i, a := range l.Args() {
		prm := info.Parameters[i]
		b := Binding{Index: i, Param: prm.Name}
		if prm.Kind == "buffer" {
			name, ok := d.bufs[a]
			if !ok {
				return ir.OpError(op, "passes operand #%d, which is not a buffer of the function", i)
			}
			b.Buffer = name
		} else {
			e, err := d.value(op, a)
			if err != nil {
				return err
			}
			bind[prm.Name] = e
			b.Value = e.String()
		}
		out.Buffers = append(out.Buffers, b)
	}
	// the extents the launch gives an output of the function are its dims
	for i, a := range l.Args() {
		if i >= len(info.extentParams) {
			break
		}
		arg, ok := d.argIndex[a]
		if !ok {
			continue
		}
		for dim, j := range info.extentParams[i] {
			if j >= 0 && d.dims[arg][dim] == nil {
				d.dims[arg][dim] = bind[info.Parameters[j].Name]
			}
		}
	}
	out.Threadgroups = info.groups.subst(bind).String()
	out.ThreadsPerThreadgroup = info.threads.subst(bind).String()
	d.out.Launches = append(d.out.Launches, out)
	for _, k := range d.kernels {
		if k == l.Kernel() {
			return nil
		}
	}
	d.kernels = append(d.kernels, l.Kernel())
	return nil
}

// marshal writes a description as indented JSON, with <, > and & as they
// are (the MLX sources hold them).
func marshal(desc *LaunchDescription) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(desc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
