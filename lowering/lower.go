// Package lowering crosses from the graph dialect to the loop dialect: the
// pass `lower-to-loops` turns every graph.fused (and every op left alone,
// wrapped in a one-op graph.fused and decomposed) into a loop.kernel and a
// loop.launch, and rewrites each function to work on buffers:
//
//	func.func @f(%x: tensor<?x64xbf16>) -> tensor<?x64xbf16> { ... }
//
// becomes
//
//	func.func @f(%x: memref<?x64xbf16, dram>, %y: memref<?x64xbf16, dram>) attributes {num_results = 1} {
//	  %rows = loop.dim %x {axis = 0} : (memref<?x64xbf16, dram>) -> index
//	  loop.launch %x, %y, %rows, %rows {kernel = "f_k0"} : (...) -> ()
//	  return
//	}
//	loop.kernel {kind = "elementwise", sym_name = "f_k0", ...} { ... }
//
// Function arguments become buffers in dram, results become output
// arguments after them, and values passed between kernels become
// loop.alloc_dram buffers. Each kernel is built by the file of its kind:
// kernel_elementwise.go, kernel_row.go and kernel_generic.go, which share
// the translation of graph ops into loop ops (scope.go).
package lowering

import (
	"fmt"
	"slices"

	"github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
	"github.com/tensorforge/tensorforge/passes"
)

func init() {
	ir.RegisterPass(&ir.PassInfo{
		Name: "lower-to-loops", Title: "LowerToLoops",
		Summary: "lower graph.fused kernels (and every op left alone) to loop.kernel + loop.launch over dram buffers",
		Options: []ir.PassOption{{Name: "exact-rounding", Kind: ir.OptBool, Default: "false",
			Help: "round every op's f16/bf16/f8 result to its type, as op-by-op evaluation does (default: keep values between fused ops in f32; also set by tfc --exact-rounding)"},
			{Name: "horizontal", Kind: ir.OptBool, Default: "true",
				Help: "launch sibling element-wise kernels that read the same buffers and are independent (q's and k's rotary embeddings) as one kernel of several parts"},
			{Name: "split-rows-below", Kind: ir.OptInt, Default: "0",
				Help: "on a GPU, split long rows reduced online across programs when there are fewer rows than this (0: twice the target's SMs; 1: never); a `?` row count launches both forms, guarded"},
			{Name: "resident", Kind: ir.OptBool, Default: "false",
				Help: "on a GPU, normalise rows too long for one program's sram (softmax over a vocabulary) across a group of programs that each keep their split in sram and meet at a loop.group_sync, so that the row is read once, where there are too many rows to split (split-rows-below; default: online, the row read twice; docs/fusion.md has the measurements)"},
			{Name: "resident-bytes", Kind: ir.OptInt, Default: "0",
				Help: "with resident: the most sram bytes one program of a resident split keeps (0: 32768); smaller splits make larger groups of smaller programs"},
			{Name: "resident-min-cols", Kind: ir.OptInt, Default: "0",
				Help: "with resident: only rows of at least this many columns take a resident form (0: any; tfc --emit=ptx -O2 sets 16384)"},
			{Name: "row-copies", Kind: ir.OptBool, Default: "false",
				Help: "on a GPU, a one-pass row kernel copies the inputs its loops read more than once (add + RMSNorm's x and r) into sram as loaded, bulk copies in PTX, and computes every phase from the copies (default: keeps the rows computed from them, in f32; on an H100 the copies ran at 0.97-0.98 of copy against 0.98-1.00)"}},
		New: func(opts ir.PassOptions) (ir.Pass, error) {
			return ir.PassFunc(func(m ir.Module, ctx *ir.PassContext) error {
				var t *target.Target
				var o Options
				if ctx != nil {
					t = ctx.Target
					o.ExactRounding = ctx.ExactRounding
					o.Remarks = ctx
				}
				if opts.IsSet("exact-rounding") {
					o.ExactRounding = opts.Bool("exact-rounding")
				}
				if opts.IsSet("horizontal") {
					o.NoHorizontal = !opts.Bool("horizontal")
				}
				if opts.IsSet("resident-bytes") {
					o.ResidentBytes = opts.Int("resident-bytes")
				}
				if opts.IsSet("resident") {
					o.Resident = opts.Bool("resident")
				}
				if opts.IsSet("resident-min-cols") {
					o.ResidentMinCols = opts.Int("resident-min-cols")
				}
				if opts.IsSet("row-copies") {
					o.RowCopies = opts.Bool("row-copies")
				}
				if opts.IsSet("split-rows-below") {
					o.SplitRowsBelow = opts.Int("split-rows-below")
				}
				return LowerToLoopsWith(m, t, o)
			}), nil
		},
	})
}

// Options are the choices of lower-to-loops.
type Options struct {
	// ExactRounding rounds the result of every op of a fused kernel to its
	// element type, so that the kernel matches op-by-op evaluation bit for
	// bit. By default an f16, bf16 or f8 value computed in f32 stays f32
	// until it is written to memory or cast explicitly (graph.cast).
	ExactRounding bool
	// NoHorizontal keeps every kernel a launch of its own (by default,
	// sibling kernels are launched as one, siblings.go).
	NoHorizontal bool
	// SplitRowsBelow: on a GPU, the rows of an online row kernel are split
	// across programs when there are fewer of them than this (0: twice the
	// target's SMs, split.go).
	SplitRowsBelow int64
	// Resident splits long normalised rows across a group of programs
	// that keep them in sram (resident.go), rather than online (read
	// twice).
	Resident bool
	// ResidentBytes bounds the sram one program of a resident split
	// keeps (0: residentBytes).
	ResidentBytes int64
	// ResidentMinCols: rows shorter than this take no resident form.
	ResidentMinCols int64
	// RowCopies copies the inputs a one-pass row kernel reads in several
	// loops into sram as loaded, on a GPU (rowCopies).
	RowCopies bool
	// Remarks, when set, receives lowering's remarks (fusion: the split of
	// long rows).
	Remarks *ir.PassContext
}

// LowerToLoops lowers every graph-level function of m (one whose
// arguments are tensors) for target t (the cpu target when nil), with the
// default options. Functions already on buffers are left as they are.
func LowerToLoops(m ir.Module, t *target.Target) error {
	return LowerToLoopsWith(m, t, Options{})
}

// LowerToLoopsWith is LowerToLoops with options.
func LowerToLoopsWith(m ir.Module, t *target.Target, opts Options) error {
	if t == nil {
		var err error
		if t, err = target.Lookup("cpu"); err != nil {
			return err
		}
	}
	// kernel names must not clash with the module's other symbols
	names := map[string]bool{}
	for o := m.Body().First(); o != nil; o = o.Next() {
		if s, ok := o.Attr("sym_name").(ir.StringAttr); ok {
			names[string(s)] = true
		}
	}
	for _, f := range m.Funcs() {
		if !isGraphFunc(f) {
			continue
		}
		unsupported := checkLowerable(f)
		l := &funcLowering{target: t, opts: opts, module: m, fn: f, kernelNames: names}
		if err := l.run(); err != nil {
			if unsupported != nil {
				return unsupported
			}
			return err
		}
	}
	return nil
}

// isGraphFunc reports whether f takes and returns tensors (and has a body);
// a lowered function records num_results.
func isGraphFunc(f ir.Func) bool {
	if f.Body() == nil || f.Attr("num_results") != nil {
		return false
	}
	ft := f.Type()
	for _, t := range append(slices.Clone(ft.Inputs), ft.Results...) {
		if _, ok := t.(ir.TensorType); !ok {
			return false
		}
	}
	return true
}

// lowerError carries an error out of the deep recursion of kernel
// construction; run turns it back into an error value.
type lowerError struct{ err error }

// fail stops the lowering with an error located at op.
func fail(op *ir.Operation, format string, args ...any) {
	panic(lowerError{ir.OpError(op, format, args...)})
}

// must stops the lowering when a builder reports an error.
func must[T any](v T, err error) T {
	if err != nil {
		panic(lowerError{err})
	}
	return v
}

// funcLowering holds the state of lowering one function.
type funcLowering struct {
	target      *target.Target
	opts        Options
	module      ir.Module
	fn          ir.Func
	kernelNames map[string]bool

	newFn ir.Func
	fb    *ir.Builder // the new function's body
	// buffers maps each tensor value of the old function to its buffer.
	buffers map[*ir.Value]*ir.Value
	// extents maps each buffer to its run-time extents, one per dimension
	// (nil for a static one).
	extents map[*ir.Value][]*ir.Value
	// consts caches index constants of the new function.
	consts map[int64]*ir.Value
	// checks are what the extents of the function's arguments must
	// satisfy for the kernels' indexing to stay in bounds (require).
	checks []loop.ExtentCheck
	// lastKernel is the kernel created last; the next goes after it.
	lastKernel *ir.Operation
	nkernels   int
	// scatters are the function's buffers that a kernel's output is
	// stored into at the indices of a graph.index_copy (scatterInto).
	scatters map[*ir.Value]scatterOut
	// guard, when set, guards the launches built (lowerSplit).
	guard *loop.RowGuard
}

// scatterOut is an output stored through a graph.index_copy: the
// coordinate along axis is replaced by the entry of buffer indices there.
type scatterOut struct {
	axis    int
	indices *ir.Value
}

func (l *funcLowering) run() (err error) {
	defer func() {
		if r := recover(); r != nil {
			le, ok := r.(lowerError)
			if !ok {
				panic(r)
			}
			err = le.err
		}
	}()
	l.prepare()
	l.rewrite()
	return nil
}

// ---------------------------------------------------------------------------
// Preparation: every op into a graph.fused of primitives

// prepare leaves the function body as graph.fused ops (one per kernel),
// top-level constants and the return: every op not yet in a graph.fused is
// wrapped into one of its own; splat constants are cloned into the kernels
// that read them; dense constants inside kernels are hoisted out, so they
// become kernels (and buffers) of their own; composite ops are decomposed.
func (l *funcLowering) prepare() {
	body := l.fn.Body()
	for _, op := range body.Ops() {
		switch {
		case op.Name() == graph.OpFused:
			l.hoistDenseConstants(op)
			passes.Decompose(op)
			if _, err := passes.ClassifyKernel(op); err != nil {
				// a hand-written kernel that is several: split it as fuse would
				must(passes.SplitKernels(op, l.target))
			}
		case op.Name() == graph.OpConstant, op.Name() == ir.ReturnOpName, op.Name() == graph.OpIndexCopy:
		case op.Dialect() != "graph":
			fail(op, "cannot be lowered to loops: only graph ops are")
		default:
			must(passes.WrapKernel(op, l.target))
		}
	}
	for _, op := range body.Ops() {
		if op.Name() == graph.OpFused {
			l.absorbSplatConstants(op)
			for _, inner := range op.Region(0).Entry().Ops() {
				if passes.IsComposite(inner) {
					fail(inner, "is a composite op that could not be decomposed into primitives")
				}
			}
		}
	}
	// the constants left are read by the return or are dense: kernels of their own
	for _, op := range body.Ops() {
		if op.Name() != graph.OpConstant {
			continue
		}
		if !op.Result(0).HasUses() {
			op.Erase()
			continue
		}
		l.wrap(op)
	}
}

// wrap replaces a top-level constant by a one-op graph.fused computing it.
func (l *funcLowering) wrap(op *ir.Operation) {
	b := ir.NewBuilderBefore(op)
	fused := must(graph.BuildFused(b, op.Loc, "generic", nil, func(bb *ir.Builder, _ []*ir.Value) ([]*ir.Value, error) {
		return bb.Insert(op.Clone(ir.Mapping{})).Results(), nil
	}))
	for i, r := range op.Results() {
		r.ReplaceAllUsesWith(fused.Result(i))
		fused.Result(i).Name = r.Name
	}
	op.Erase()
}

// absorbSplatConstants clones the splat constants a graph.fused reads into
// its body, so they cost no buffer, and drops those operands.
func (l *funcLowering) absorbSplatConstants(fused *ir.Operation) {
	for i := fused.NumOperands() - 1; i >= 0; i-- {
		c, ok := graph.AsConstant(fused.Operand(i).DefiningOp())
		if !ok || !c.Value().IsSplat() {
			continue
		}
		entry := fused.Region(0).Entry() // removeOperand replaces the block
		arg := entry.Args[i]
		if arg.HasUses() {
			b := ir.NewBuilderAtEnd(entry)
			b.SetInsertionPointBefore(entry.First())
			clone := b.Insert(c.Clone(ir.Mapping{}))
			arg.ReplaceAllUsesWith(clone.Result(0))
		}
		removeOperand(fused, i)
	}
}

// hoistDenseConstants moves the dense (not splat) constants of a fused body
// out in front of it, as new operands: a kernel reads them from a buffer.
func (l *funcLowering) hoistDenseConstants(fused *ir.Operation) {
	entry := fused.Region(0).Entry()
	for _, op := range entry.Ops() {
		c, ok := graph.AsConstant(op)
		if !ok || c.Value().IsSplat() {
			continue
		}
		op.MoveBefore(fused)
		arg := entry.AddArg(op.Result(0).Type())
		arg.Name = op.Result(0).Name
		op.Result(0).ReplaceAllUsesWith(arg) // every use is in the body
		fused.SetOperands(append(fused.Operands(), op.Result(0)))
	}
}

// removeOperand drops operand i of a graph.fused and its block argument,
// which must be unused.
func removeOperand(fused *ir.Operation, i int) {
	ops := fused.Operands()
	fused.SetOperands(append(ops[:i:i], ops[i+1:]...))
	entry := fused.Region(0).Entry()
	args := entry.Args
	// rebuild the block with the remaining arguments, moving uses over
	nb := ir.NewBlock()
	for j, a := range args {
		if j == i {
			continue
		}
		na := nb.AddArg(a.Type())
		na.Name = a.Name
		a.ReplaceAllUsesWith(na)
	}
	for _, op := range entry.Ops() {
		nb.Append(op)
	}
	r := fused.Region(0)
	r.Blocks = nil
	r.AppendBlock(nb)
}

// ---------------------------------------------------------------------------
// Rewriting the function on buffers

// memrefOf is the dram buffer type of a tensor type.
func memrefOf(t ir.Type) ir.MemRefType {
	tt, _ := t.(ir.TensorType)
	return ir.MemRefType{Shape: slices.Clone(tt.Shape), Elem: tt.Elem, Space: ir.DRAM}
}

// rewrite builds the buffer form of the function next to the old one,
// with a kernel and a launch per graph.fused, and replaces the old one.
func (l *funcLowering) rewrite() {
	old := l.fn
	ft := old.Type()
	ret := old.Return()
	if ret == nil {
		fail(old.Operation, "has no return to lower")
	}
	var argTypes []ir.Type
	for _, t := range ft.Inputs {
		argTypes = append(argTypes, memrefOf(t))
	}
	for _, t := range ft.Results {
		argTypes = append(argTypes, memrefOf(t))
	}
	nf := ir.NewFunc(old.Loc, old.SymName(), ir.FunctionType{Inputs: argTypes})
	for _, na := range old.Attrs {
		if na.Name != "sym_name" && na.Name != "function_type" {
			nf.SetAttr(na.Name, na.Value)
		}
	}
	nf.SetAttr("num_results", ir.IntAttr{Value: int64(len(ft.Results)), Type: ir.I64Type})
	l.newFn = nf
	// in the module from the start, so launches find their kernels
	ir.NewBuilderBefore(old.Operation).Insert(nf.Operation)
	l.fb = ir.NewBuilderAtEnd(nf.Body())
	l.fb.Loc = old.Loc
	l.buffers = map[*ir.Value]*ir.Value{}
	l.scatters = map[*ir.Value]scatterOut{}
	l.extents = map[*ir.Value][]*ir.Value{}
	l.consts = map[int64]*ir.Value{}

	args := nf.Args()
	for i, a := range old.Args() {
		args[i].Name = a.Name
		l.buffers[a] = args[i]
	}
	outs := args[len(ft.Inputs):]
	// outputOf[v] is the output buffer a returned value is written to
	// directly: its first return position, unless it is an argument.
	outputOf := map[*ir.Value]*ir.Value{}
	for i, v := range ret.Operands() {
		_, seen := outputOf[v]
		outs[i].Name = fmt.Sprintf("result%d", i)
		if !seen && v.DefiningOp() != nil {
			outputOf[v] = outs[i]
			if v.Name != "" {
				outs[i].Name = v.Name
			}
		}
	}
	// an output's extents are derived from the inputs when its kernel is
	// launched: a caller allocates outputs with the extents passed then
	for _, a := range args[:len(ft.Inputs)] {
		l.argExtents(a)
	}

	// the index_copy ops whose source's kernel stores into the destination
	done := map[*ir.Operation]bool{}
	for _, op := range old.Body().Ops() {
		if ic, ok := graph.AsIndexCopy(op); ok {
			if !done[op] {
				l.indexCopy(ic)
			}
			continue
		}
		if op.Name() != graph.OpFused {
			continue
		}
		var results, extra []*ir.Value
		resExt := l.resultExtents(op)
		for i, r := range op.Results() {
			if ic, ok := l.scatterInto(op, r); ok {
				// r is only the source of ic: its kernel writes it into ic's
				// destination at ic's indices, and r has no buffer of its own
				buf, indices := l.buffer(op, ic.Dst()), l.buffer(op, ic.Indices())
				l.checkIndexCopy(ic, indices, resExt[i])
				l.scatters[buf] = scatterOut{axis: must(graph.IndexCopyAxis(ic.Operation)), indices: indices}
				done[ic.Operation] = true
				if !slices.Contains(extra, indices) {
					extra = append(extra, indices)
				}
				l.buffers[r] = buf
				results = append(results, buf)
				continue
			}
			buf, ok := outputOf[r]
			if ok {
				l.extents[buf] = resExt[i]
			} else {
				buf = l.allocIntermediate(op, r, resExt[i])
			}
			l.buffers[r] = buf
			results = append(results, buf)
		}
		var inputs []*ir.Value
		for _, v := range op.Operands() {
			inputs = append(inputs, l.buffer(op, v))
		}
		l.lowerKernel(op, append(inputs, extra...), results)
	}
	// results that are arguments, or returned more than once, are copies
	for i, v := range ret.Operands() {
		if outputOf[v] == outs[i] {
			continue
		}
		src := l.buffer(ret, v)
		l.extents[outs[i]] = l.extents[src]
		l.copyKernel(ret, src, outs[i])
	}
	l.fb.Insert(ir.NewOperation(ir.ReturnOpName, old.Loc, nil, nil, nil, 0))
	l.mergeSiblings()
	if len(l.checks) > 0 {
		nf.SetAttr(loop.ExtentChecksAttr, loop.ExtentChecksValue(l.checks))
	}
	old.Erase()
}

// buffer returns the buffer holding the tensor v.
func (l *funcLowering) buffer(user *ir.Operation, v *ir.Value) *ir.Value {
	b, ok := l.buffers[v]
	if !ok {
		fail(user, "reads a value that is not a buffer of the lowered function")
	}
	return b
}

// indexConst returns an index constant of the new function.
func (l *funcLowering) indexConst(v int64) *ir.Value {
	if c, ok := l.consts[v]; ok {
		return c
	}
	b := ir.NewBuilderAtEnd(l.newFn.Body())
	if first := l.newFn.Body().First(); first != nil {
		b.SetInsertionPointBefore(first)
	}
	c := must(loop.BuildConstant(b, l.fn.Loc, ir.IndexType, float64(v))).Output()
	c.Name = fmt.Sprintf("c%d", v)
	l.consts[v] = c
	return c
}

// require records that extent a must equal extent b or, with b nil, the
// static extent n (orOne: or 1). Only extents of the function's arguments
// (their loop.dim) are checked: the others are derived from them.
func (l *funcLowering) require(a, b *ir.Value, n int64, orOne bool) {
	arg, axis, ok := l.argDim(a)
	if !ok || a == b {
		return
	}
	c := loop.ExtentCheck{Arg: arg, Axis: axis, Other: -1, Static: n, OrOne: orOne}
	if b != nil {
		if c.Other, c.OtherAxis, ok = l.argDim(b); !ok {
			return
		}
		if c.Other < c.Arg || c.Other == c.Arg && c.OtherAxis < c.Axis {
			c.Arg, c.Axis, c.Other, c.OtherAxis = c.Other, c.OtherAxis, c.Arg, c.Axis
		}
	}
	if !slices.Contains(l.checks, c) {
		l.checks = append(l.checks, c)
	}
}

// argDim finds the argument and axis whose loop.dim x is.
func (l *funcLowering) argDim(x *ir.Value) (arg, axis int, ok bool) {
	d, isDim := loop.AsDim(x.DefiningOp())
	if !isDim || !d.Memref().IsBlockArg() || d.Memref().OwnerBlock() != l.newFn.Body() {
		return 0, 0, false
	}
	for i, a := range l.newFn.Args() {
		if a == d.Memref() {
			return i, int(d.Axis()), true
		}
	}
	return 0, 0, false
}

// argExtents records the extents of an argument buffer: a loop.dim per `?`.
func (l *funcLowering) argExtents(buf *ir.Value) {
	m := buf.Type().(ir.MemRefType)
	ext := make([]*ir.Value, len(m.Shape))
	for d, n := range m.Shape {
		if n == ir.Dynamic {
			ext[d] = must(loop.BuildDim(l.fb, l.fn.Loc, buf, int64(d))).Output()
			ext[d].Name = fmt.Sprintf("%s_d%d", buf.Name, d)
		}
	}
	l.extents[buf] = ext
}

// allocIntermediate allocates the dram buffer of result r of a kernel,
// with its run-time extents ext (derived from the kernel's operands).
func (l *funcLowering) allocIntermediate(fused *ir.Operation, r *ir.Value, ext []*ir.Value) *ir.Value {
	m := memrefOf(r.Type())
	var operands []*ir.Value
	for d, n := range m.Shape {
		if n == ir.Dynamic {
			operands = append(operands, ext[d])
		}
	}
	buf := must(loop.BuildAllocDRAM(l.fb, fused.Loc, operands, m)).Output()
	buf.Name = r.Name
	l.extents[buf] = ext
	return buf
}

// kernelName returns a fresh kernel name for the function.
func (l *funcLowering) kernelName() string {
	for {
		name := fmt.Sprintf("%s_k%d", l.fn.SymName(), l.nkernels)
		l.nkernels++
		if !l.kernelNames[name] {
			l.kernelNames[name] = true
			return name
		}
	}
}

// launch builds a kernel (with build) after the function or the previous
// kernel, and launches it on inputs and outputs with their extents.
func (l *funcLowering) launch(loc ir.Location, kind string, inputs, outputs []*ir.Value,
	build func(k *kernelBuilder) error) *ir.Operation {
	name := l.kernelName()
	var inTypes, outTypes []ir.Type
	for _, v := range inputs {
		inTypes = append(inTypes, v.Type())
	}
	for _, v := range outputs {
		outTypes = append(outTypes, v.Type())
	}
	mb := ir.NewBuilderAtEnd(l.module.Body())
	if l.lastKernel != nil {
		mb.SetInsertionPointAfter(l.lastKernel)
	} else {
		mb.SetInsertionPointAfter(l.fn.Operation)
	}
	k := must(loop.BuildKernel(mb, loc, name, kind, inTypes, outTypes, func(bb *ir.Builder, args []*ir.Value) error {
		kb := newKernelBuilder(l.target, loc, bb, args, len(inputs), len(outputs))
		kb.exact = l.opts.ExactRounding
		kb.copyRows = l.opts.RowCopies && l.target.Family == target.CUDA
		kb.remarks = l.opts.Remarks
		for j, buf := range outputs {
			if sc, ok := l.scatters[buf]; ok {
				kb.scatters[args[len(inputs)+j]] = scatterOut{axis: sc.axis, indices: args[slices.Index(inputs, sc.indices)]}
			}
		}
		nameArgs(args, append(slices.Clone(inputs), outputs...))
		if err := build(kb); err != nil {
			return err
		}
		if kb.stridedAccesses() {
			kb.registerTransposes()
		}
		return nil
	}))
	l.lastKernel = k.Operation
	operands := append(slices.Clone(inputs), outputs...)
	for _, buf := range operands {
		for _, e := range l.extents[buf] {
			if e != nil {
				operands = append(operands, e)
			}
		}
	}
	lo := must(loop.BuildLaunch(l.fb, loc, operands, name))
	if l.guard != nil {
		lo.SetGuard(*l.guard)
	}
	return k.Operation
}

// nameArgs names a kernel's buffer arguments after the function's buffers
// and its extents after their buffer and dimension: `%x_d0`.
func nameArgs(args, buffers []*ir.Value) {
	next := len(buffers)
	for i, b := range buffers {
		args[i].Name = b.Name
		for d, n := range b.Type().(ir.MemRefType).Shape {
			if n == ir.Dynamic {
				args[next].Name = fmt.Sprintf("%s_d%d", b.Name, d)
				next++
			}
		}
	}
}

// copyKernel copies buffer src to dst: a result that is an argument or
// returned twice.
func (l *funcLowering) copyKernel(at *ir.Operation, src, dst *ir.Value) {
	l.launch(at.Loc, "elementwise", []*ir.Value{src}, []*ir.Value{dst}, func(k *kernelBuilder) error {
		return k.copyBuffer()
	})
}

// indexCopy launches the kernel of a graph.index_copy: it writes the
// source's slices into the destination argument's own buffer, in place.
// The verifier has made the destination an argument nothing else reads.
func (l *funcLowering) indexCopy(ic graph.IndexCopyOp) {
	axis, err := graph.IndexCopyAxis(ic.Operation)
	if err != nil {
		panic(lowerError{err})
	}
	indices, src, dst := l.buffer(ic.Operation, ic.Indices()), l.buffer(ic.Operation, ic.Source()), l.buffer(ic.Operation, ic.Dst())
	l.checkIndexCopy(ic, indices, l.extents[src])
	if axis < len(shapeOf(ic.Source()))-1 {
		// slices along a leading axis (a decode step's v written into its
		// cache): a copy of the source whose stores go through the
		// indices, an element-wise kernel like any other, which can join
		// its siblings (the k RoPE reading the same positions)
		l.scatters[dst] = scatterOut{axis: axis, indices: indices}
		l.launch(ic.Loc, "elementwise", []*ir.Value{src, indices}, []*ir.Value{dst}, func(k *kernelBuilder) error {
			return k.copyBuffer()
		})
		return
	}
	l.launch(ic.Loc, "generic", []*ir.Value{indices, src}, []*ir.Value{dst}, func(k *kernelBuilder) error {
		return k.indexCopy(axis)
	})
}

// checkIndexCopy records what the extents of a graph.index_copy must
// satisfy for its stores to stay inside the destination: as many indices
// as source slices along the axis, and the destination's extents in every
// other dimension (srcExt: the source's run-time extents, nil where
// static).
func (l *funcLowering) checkIndexCopy(ic graph.IndexCopyOp, indices *ir.Value, srcExt []*ir.Value) {
	axis := must(graph.IndexCopyAxis(ic.Operation))
	src, dst := shapeOf(ic.Source()), shapeOf(ic.Dst())
	dstExt := l.extents[l.buffer(ic.Operation, ic.Dst())]
	ext := func(e []*ir.Value, d int) *ir.Value {
		if d < len(e) {
			return e[d]
		}
		return nil
	}
	same := func(a, b *ir.Value, na, nb int64) {
		switch {
		case a != nil && b != nil:
			l.require(a, b, 0, false)
		case a != nil:
			l.require(a, nil, nb, false)
		case b != nil:
			l.require(b, nil, na, false)
		}
	}
	same(l.extents[indices][0], ext(srcExt, axis), shapeOf(ic.Indices())[0], src[axis])
	for d := range dst {
		if d != axis {
			same(ext(srcExt, d), ext(dstExt, d), src[d], dst[d])
		}
	}
}

// scatterInto reports whether result r of kernel fused can be stored
// straight into the destination of the graph.index_copy that is its only
// use: an element-wise or row kernel, or a view that is a kernel of its
// own, whose result is copied along a leading axis (rows, as a KV-cache
// update copies positions), with the indices already in a buffer. The kernel then stores each row at its
// index instead of writing r for a kernel of its own to copy.
func (l *funcLowering) scatterInto(fused *ir.Operation, r *ir.Value) (graph.IndexCopyOp, bool) {
	uses := r.Uses()
	if len(uses) != 1 {
		return graph.IndexCopyOp{}, false
	}
	ic, ok := graph.AsIndexCopy(uses[0].Owner)
	if !ok || uses[0].Index != 2 {
		return graph.IndexCopyOp{}, false
	}
	axis, err := graph.IndexCopyAxis(ic.Operation)
	if err != nil || axis == len(shapeOf(r))-1 {
		return graph.IndexCopyOp{}, false
	}
	if _, ok := l.buffers[ic.Indices()]; !ok {
		return graph.IndexCopyOp{}, false
	}
	if _, ok := l.buffers[ic.Dst()]; !ok {
		return graph.IndexCopyOp{}, false
	}
	info, err := passes.ClassifyKernel(fused)
	if err != nil {
		return graph.IndexCopyOp{}, false
	}
	switch info.Kind {
	case passes.KernelElementwise, passes.KernelRow,
		// a view of its own (a projection's heads transposed into the
		// cache's layout): its loop over the output stores through the
		// indices too
		passes.KernelTranspose, passes.KernelReshape, passes.KernelBroadcastTo, passes.KernelSlice:
		return ic, true
	}
	return graph.IndexCopyOp{}, false
}
