package passes

import (
	"container/heap"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
)

// Fuse groups the ops of every function into graph.fused ops, each a
// future kernel, so that intermediates stay on chip instead of going
// through DRAM. The chain y = silu(rmsnorm(x, w)) * z
//
//	%n = graph.rmsnorm %x, %w : (tensor<4096x8192xbf16>, tensor<8192xbf16>) -> tensor<4096x8192xbf16>
//	%s = graph.silu %n : tensor<4096x8192xbf16>
//	%y = graph.mul %s, %z : tensor<4096x8192xbf16>
//
// becomes one row kernel that reads x, w and z once and writes y once:
//
//	%y = graph.fused %x, %w, %z {kind = "row", row_len = 8192, schedule = "one-pass"} {
//	^bb0(%x_1: tensor<4096x8192xbf16>, %w_1: tensor<8192xbf16>, %z_1: tensor<4096x8192xbf16>):
//	  ... the decomposed rmsnorm, silu and mul ...
//	  graph.yield %y : tensor<4096x8192xbf16>
//	} : (tensor<4096x8192xbf16>, tensor<8192xbf16>, tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16>
//
// Composite ops are decomposed first (fuse runs Decompose itself, so
// `--fuse` alone works). Then, in program order, every element-wise op and
// every reduction over the last axis joins the kernel of each producer
// when the union
//
//   - stays acyclic: no path from one part to the other leaves the union;
//   - has at most max-ops ops;
//   - is one kernel as ClassifyKernel defines it: element-wise over one
//     shape, or rows of one length with operands that are full rows,
//     row-broadcasts, per-row values or scalars.
//
// Kernels that read the same full tensor are then merged as well
// (logsumexp and reduce_max of the same rows become one kernel). A value
// used both inside a kernel and after it becomes one of its results.
// Splat constants are cloned into every kernel that uses them. A
// reduction over other axes than the last forms a reduce kernel with its
// element-wise producers and consumers (reduce_kernel.go; on GPUs split in
// two first where its results are few and its axis long). matmul (but for
// its epilogue), transpose, reshape, broadcast_to, slice and concat not
// read through by a kernel, and dense constants stay kernels of their own. A row kernel whose
// kept rows do not fit the target's scratchpad is planned "two-pass".
// With --remarks=fusion every decision is explained, including why a
// producer and its consumer were not fused.
func Fuse(root *ir.Operation, ctx *ir.PassContext, opts FuseOptions) error {
	if opts.MaxOps <= 0 {
		opts.MaxOps = DefaultMaxOps
	}
	Decompose(root)
	var funcs []*ir.Operation
	root.Walk(func(op *ir.Operation) bool {
		if op.Name() == ir.FuncOpName {
			funcs = append(funcs, op)
			return false
		}
		return true
	})
	// rolls of computed work become rolls of what kernels read; on GPUs,
	// reductions over a long axis with few results reduce in two steps; on
	// Tenstorrent, reductions over the second-to-last axis reduce rows of a
	// transpose
	tg := fuseTarget(ctx, opts)
	for _, fn := range funcs {
		if body := (ir.Func{Operation: fn}).Body(); body != nil {
			sinkRolls(body)
			if tg.Family == target.CUDA || tg.Family == target.Metal {
				splitReductions(ctx, body)
			}
			if tg.Family == target.Tenstorrent {
				tileReductions(ctx, body, tg.Name)
			}
		}
	}
	// A kernel exists to write results: ops nobody reads would form groups
	// without outputs, so they go first.
	DCE(root)
	for _, fn := range funcs {
		body := ir.Func{Operation: fn}.Body()
		if body == nil {
			continue
		}
		copies := shareViews(body, newFuser(ctx, opts, nil))
		var ops []*ir.Operation
		for op := body.First(); op != nil; op = op.Next() {
			if !op.HasTrait(ir.Terminator) {
				ops = append(ops, op)
			}
		}
		f := newFuser(ctx, opts, ops)
		f.copies = copies
		if _, err := f.run(false); err != nil {
			return err
		}
	}
	return nil
}

// shareViews gives each user of a view of memory its own copy of the
// view: a view whose operand kernels read from memory anyway (an argument,
// the result of a kernel of its own, or such a view) costs nothing in any
// kernel, so each kernel reading it can absorb it, as each absorbs a
// splat constant. cos and sin unsqueezed over the heads then join both
// the q and the k kernel of a rotary embedding. It returns each copy with
// its original: the fuser makes a copy that no kernel absorbed the
// original again. Views on Tenstorrent targets are kernels of their own and are
// left alone.
func shareViews(body *ir.Block, f *fuser) (copies map[*ir.Operation]*ir.Operation) {
	copies = map[*ir.Operation]*ir.Operation{}
	if f.target.Family == target.Tenstorrent {
		return copies
	}
	free := map[*ir.Operation]bool{}
	var views []*ir.Operation
	for op := body.First(); op != nil; op = op.Next() {
		if !IsView(op) {
			continue
		}
		fromMemory := true
		for _, a := range op.Operands() {
			d := a.DefiningOp()
			if d == nil || free[d] {
				continue
			}
			if r, _ := f.role(d); IsView(d) || r != roleBarrier && d.Name() != graph.OpMatMul {
				fromMemory = false
			}
		}
		if fromMemory {
			free[op] = true
			views = append(views, op)
		}
	}
	for i := len(views) - 1; i >= 0; i-- {
		v := views[i]
		uses := slices.Clone(v.Result(0).Uses())
		for _, u := range uses[min(1, len(uses)):] {
			c := v.Clone(ir.Mapping{})
			body.InsertBefore(c, v.Next())
			c.Result(0).Name = v.Result(0).Name
			u.Set(c.Result(0))
			copies[c] = v
		}
	}
	return copies
}

// FuseOptions tune Fuse.
type FuseOptions struct {
	// MaxOps bounds the number of ops of one kernel (cloned constants not
	// counted); 0 means DefaultMaxOps, 1 no fusion at all.
	MaxOps int
	// Target decides the schedule of row kernels; nil means ctx's target,
	// or the cpu target.
	Target *target.Target
}

// DefaultMaxOps is the default of the fuse pass's `max-ops` option.
const DefaultMaxOps = 64

// WrapKernel puts op, a top-level op left alone by fuse, into graph.fused
// ops that ClassifyKernel accepts, and returns them in order. A primitive
// op becomes one one-op kernel; a composite op is decomposed inside its
// kernel, and when its expansion is not one kernel (a normalisation along
// another axis than the last), the expansion is split into as few kernels
// as fuse would form. The kernels get the attributes AnnotateKernel
// records, with schedules planned for t. Constants are not wrapped: a
// splat one is cloned into its users' kernels by fuse, and lowering reads
// a dense one as it is.
func WrapKernel(op *ir.Operation, t *target.Target) ([]*ir.Operation, error) {
	if op.Block() == nil {
		return nil, ir.OpError(op, "is not in a block")
	}
	if op.Name() == graph.OpIndexCopy {
		// it writes a function argument, which a graph.fused (whose body
		// sees its operands as values) cannot express: lower-to-loops
		// launches its kernel directly
		return nil, ir.OpError(op, "writes its destination in place and is not wrapped into a kernel: lower-to-loops launches its own")
	}
	var inputs []*ir.Value
	for _, v := range op.Operands() {
		if !slices.Contains(inputs, v) {
			inputs = append(inputs, v)
		}
	}
	fused := ir.NewOperation(graph.OpFused, op.Loc, inputs, nil, ir.Attrs("kind", ir.StringAttr(KernelElementwise)), 1)
	entry := ir.NewBlock()
	fused.Region(0).AppendBlock(entry)
	m := ir.Mapping{}
	for _, v := range inputs {
		a := entry.AddArg(v.Type())
		a.Name = v.Name
		m[v] = a
	}
	inner := op.Clone(m)
	entry.Append(inner)
	entry.Append(ir.NewOperation(graph.OpYield, op.Loc, inner.Results(), nil, nil, 0))
	for _, r := range op.Results() {
		res := fused.AddResult(r.Type())
		res.Name = r.Name
	}
	op.Block().InsertBefore(fused, op)
	for i, r := range op.Results() {
		r.ReplaceAllUsesWith(fused.Result(i))
	}
	op.Erase()
	if _, err := decompose(fused); err != nil {
		return nil, err
	}
	if _, err := AnnotateKernel(fused, t); err == nil {
		return []*ir.Operation{fused}, nil
	}
	return SplitKernels(fused, t)
}

// SplitKernels replaces fused, whose body is not one kernel, by the
// kernels fuse forms from its body, every op of the body in one of them
// (a matmul or a transpose alone in its own). It returns the new
// graph.fused ops in order.
func SplitKernels(fused *ir.Operation, t *target.Target) ([]*ir.Operation, error) {
	entry := fused.Region(0).Entry()
	y, ok := graph.AsYield(entry.Last())
	if !ok || fused.Block() == nil {
		return nil, ir.OpError(fused, "expects a body that ends with 'graph.yield', in a block")
	}
	m := ir.Mapping{}
	for i, a := range entry.Args {
		m[a] = fused.Operand(i)
	}
	var ops []*ir.Operation
	b := ir.NewBuilderBefore(fused)
	for op := entry.First(); op != y.Operation; op = op.Next() {
		ops = append(ops, b.Insert(op.Clone(m)))
	}
	for i, r := range fused.Results() {
		r.ReplaceAllUsesWith(m.Lookup(y.Operand(i)))
	}
	fused.Erase()
	f := newFuser(nil, FuseOptions{MaxOps: 1 << 30, Target: t}, ops)
	return f.run(true)
}

// ---------------------------------------------------------------------------
// The fuser

// opRole is what fuse may do with an op.
type opRole uint8

const (
	roleFusible opRole = iota // joins kernels
	roleClone                 // a splat constant, cloned into each kernel using it
	roleBarrier               // a kernel of its own
)

// fusionGroup is a set of ops that will become one kernel.
type fusionGroup struct {
	ops  []*ir.Operation // in program order
	info *KernelInfo     // the classification of ops, once known
	// shape, when set, is the one shape (extent for extent, `?` for `?`)
	// of every result and every operand but scalars of every op, all
	// element-wise primitives (see uniformShape)
	shape []int64
}

// uniformShortcut lets canMerge skip the classification of uniform
// unions; the tests turn it off to check that it changes nothing.
var uniformShortcut = true

// uniformShape returns the shape of op's results when op is an
// element-wise primitive whose results all have it and whose operands
// have it or are scalars, and nil otherwise. A union of such ops of one
// shape is an element-wise kernel over it, every value read and written
// in full or as a scalar: ClassifyKernel accepts it, so fuse need not ask
// (a chain of n ops would cost n x max-ops).
func uniformShape(op *ir.Operation) []int64 {
	if !isElementwisePrimitive(op) || op.NumResults() == 0 {
		return nil
	}
	shape := shapeOf(op.Result(0))
	if shape == nil {
		return nil
	}
	for _, v := range op.Results() {
		if !slices.Equal(shapeOf(v), shape) {
			return nil
		}
	}
	for _, v := range op.Operands() {
		// a scalar operand ([], [1, 1]) is read as one
		if s := shapeOf(v); !slices.Equal(s, shape) && !allOnes(s) {
			return nil
		}
	}
	return shape
}

// fuser groups the ops of one range of a block.
type fuser struct {
	ctx    *ir.PassContext
	maxOps int
	target *target.Target
	nodes  []*ir.Operation // the ops of the range, in program order
	pos    map[*ir.Operation]int
	group  map[*ir.Operation]*fusionGroup
	// cycleVia is the op outside the union through which the last
	// canMerge found a cycle (nil if none)
	cycleVia *ir.Operation
	end      *ir.Operation // the op after the range (nil: the block's end)
	block    *ir.Block
	// horizon bounds the cycle checks: every op of a group of two ops or
	// more is at a position <= horizon, so a path that reaches an op
	// after it only meets ungrouped ops, later and later, and cannot come
	// back. While the producers of an op are decided it is that op's
	// position; afterwards, the end of the range.
	horizon int
	// visits counts the ops the cycle checks visited (for tests).
	visits int
	// seen marks the ops a cycle check visited with its number, search.
	seen   map[*ir.Operation]int
	search int
	// copies maps the copies of views shareViews made to their originals.
	copies map[*ir.Operation]*ir.Operation
}

// fuseTarget is the machine fuse plans for: the option's, the pass
// context's, or the CPU.
func fuseTarget(ctx *ir.PassContext, opts FuseOptions) *target.Target {
	t := opts.Target
	if t == nil && ctx != nil {
		t = ctx.Target
	}
	if t == nil {
		t, _ = target.Lookup("cpu")
	}
	return t
}

func newFuser(ctx *ir.PassContext, opts FuseOptions, ops []*ir.Operation) *fuser {
	f := &fuser{ctx: ctx, maxOps: opts.MaxOps, target: fuseTarget(ctx, opts), nodes: ops,
		pos: map[*ir.Operation]int{}, group: map[*ir.Operation]*fusionGroup{}}
	for i, op := range ops {
		f.pos[op] = i
	}
	if len(ops) > 0 {
		f.block = ops[0].Block()
		f.end = ops[len(ops)-1].Next()
	}
	return f
}

// remark reports a fusion decision when --remarks=fusion asks for it.
func (f *fuser) remark(loc ir.Location, format string, args ...any) {
	f.ctx.Remark("fusion", loc, format, args...)
}

// role classifies op, with the reason a barrier stands alone.
func (f *fuser) role(op *ir.Operation) (opRole, string) {
	switch {
	case isConstant(op):
		if d, ok := op.Attr("value").(ir.DenseAttr); ok && d.IsSplat() {
			return roleClone, ""
		}
		return roleBarrier, fmt.Sprintf("'%s' holds a dense tensor, which kernels read from memory", op.Name())
	case isElementwisePrimitive(op) || isRowReduction(op) || op.Name() == graph.OpRoll || op.Name() == graph.OpGather:
		return roleFusible, ""
	case isReduceOp(op) && f.target.Family != target.Tenstorrent:
		// a reduce kernel with its element-wise producers and consumers
		// (reduce_kernel.go)
		return roleFusible, ""
	case IsView(op) && f.target.Family == target.Tenstorrent && tileAligned(op):
		// the reader reads other tiles of the same row block
		return roleFusible, ""
	case IsView(op) && f.target.Family == target.Tenstorrent && f.readRows(op):
		// the reader gathers the rows of a row block from other rows
		return roleFusible, ""
	case IsView(op) && f.target.Family == target.Tenstorrent:
		return roleBarrier, fmt.Sprintf("'%s' is a kernel of its own on %s: its reader and writer move whole 32x32 tiles, which follow only slices and concats of whole tiles along the last axis, and views that keep a static last axis: reshapes, and the others where they only feed reads (the reader gathers their rows)", op.Name(), f.target.Name)
	case IsView(op):
		return roleFusible, ""
	case op.Name() == graph.OpMatMul:
		// it takes an element-wise epilogue (matmul.go; on Tenstorrent
		// targets the epilogues tileEpilogue accepts)
		return roleFusible, ""
	case singleOpKinds[op.Name()] != "":
		return roleBarrier, fmt.Sprintf("'%s' is a kernel of its own", op.Name())
	case isReduceOp(op):
		axes, _ := reductionAxes(op)
		return roleBarrier, fmt.Sprintf("'%s' reduces axes %s, not the last axis alone, so it is a kernel of its own",
			op.Name(), graph.FormatShape(axes))
	case op.Name() == graph.OpFused:
		return roleBarrier, fmt.Sprintf("'%s' is a kernel already", op.Name())
	case IsComposite(op):
		return roleBarrier, fmt.Sprintf("'%s' is a composite op without an expansion into primitives", op.Name())
	}
	return roleBarrier, fmt.Sprintf("'%s' cannot be part of a kernel", op.Name())
}

// producers returns the distinct ops of the range that define op's
// operands, in operand order, without the constants cloned into kernels.
func (f *fuser) producers(op *ir.Operation) []*ir.Operation {
	var out []*ir.Operation
	for _, v := range op.Operands() {
		p := v.DefiningOp()
		if _, inRange := f.pos[p]; !inRange || slices.Contains(out, p) {
			continue
		}
		if r, _ := f.role(p); r == roleClone {
			continue
		}
		out = append(out, p)
	}
	// views last: a view joins the kernel its consumer forms with its
	// other producers, instead of taking the consumer into an element-wise
	// kernel that a row kernel could not then join (row kernels do not
	// read through views)
	slices.SortStableFunc(out, func(a, b *ir.Operation) int {
		return btoi(IsView(a)) - btoi(IsView(b))
	})
	return out
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// run forms the kernels and rewrites the range. With wrapAll (used by
// SplitKernels) every op that can be a kernel becomes a graph.fused, even
// alone; otherwise a lone op is left for lowering to wrap. It returns the
// graph.fused ops created.
func (f *fuser) run(wrapAll bool) ([]*ir.Operation, error) {
	for i, op := range f.nodes {
		role, _ := f.role(op)
		if role == roleClone {
			continue
		}
		f.horizon = i
		if role == roleFusible {
			f.group[op] = &fusionGroup{ops: []*ir.Operation{op}, shape: uniformShape(op)}
		}
		for _, p := range f.producers(op) {
			f.decide(p, op)
		}
	}
	f.horizon = len(f.nodes)
	f.narrowBoundaries()
	f.fuseSiblings()
	f.fuseSharedProducers()
	// a copy of a view that no kernel absorbed, beside an original that
	// none absorbed either, is the original again
	for _, op := range f.nodes {
		if orig := f.copies[op]; orig != nil && f.alone(op) && f.alone(orig) {
			op.Result(0).ReplaceAllUsesWith(orig.Result(0))
			op.Erase()
			delete(f.group, op)
		}
	}
	return f.materialize(wrapAll)
}

// narrowBoundaries moves a widening cast that ends a kernel into the one
// kernel that reads its result, where both stay kernels, so that the
// tensor between them is written and read in the narrower type: on CPU
// targets, a transpose of the last axis that a row kernel of long rows
// refused (rowAcrossLines) otherwise kept the cast of softmax's
// decomposition and wrote f32 where bf16 suffices (a softmax of a
// transposed [4096, 4096] bf16 operand: 15.7 ms, against 13.0 as a bf16
// transpose and a softmax).
func (f *fuser) narrowBoundaries() {
	if f.target.Family != target.CPU {
		return
	}
	for _, op := range f.nodes {
		g := f.group[op]
		if op.Name() != graph.OpCast || g == nil || len(g.ops) < 2 || op.NumOperands() != 1 {
			continue
		}
		from, _ := ir.ElemOf(op.Operand(0).Type())
		to, _ := ir.ElemOf(op.Result(0).Type())
		if to.Kind.ByteSize() <= from.Kind.ByteSize() {
			continue
		}
		// every user of the cast in one other group
		var h *fusionGroup
		for _, u := range op.Result(0).Users() {
			hu := f.group[u]
			if hu == nil || hu == g || h != nil && hu != h {
				h = nil
				break
			}
			h = hu
		}
		if h == nil {
			continue
		}
		rest := slices.DeleteFunc(slices.Clone(g.ops), func(o *ir.Operation) bool { return o == op })
		restInfo, err := f.classify(rest)
		if err != nil {
			continue
		}
		alone := &fusionGroup{ops: []*ir.Operation{op}}
		f.group[op] = alone
		info, reason := f.canMerge(h, alone, true)
		if reason != "" || info == nil {
			f.group[op] = g
			continue
		}
		g.ops, g.info, g.shape = rest, restInfo, nil
		f.merge(h, alone, info)
		f.remark(op.Loc, "moved '%s' into the kernel that reads it: the tensor between the two kernels is %s, not %s", op.Name(), from, to)
	}
}

// alone reports whether op is in no group of two ops or more.
func (f *fuser) alone(op *ir.Operation) bool {
	g := f.group[op]
	return g == nil || len(g.ops) == 1
}

// decide fuses consumer c with its producer p if it may, and explains the
// decision.
func (f *fuser) decide(p, c *ir.Operation) {
	pr, preason := f.role(p)
	cr, creason := f.role(c)
	switch {
	case cr == roleBarrier:
		f.remark(c.Loc, "did not fuse '%s' with its producer '%s' at %s: %s", c.Name(), p.Name(), locString(p.Loc), creason)
		return
	case pr == roleBarrier:
		f.remark(c.Loc, "did not fuse '%s' with its producer '%s' at %s: %s", c.Name(), p.Name(), locString(p.Loc), preason)
		return
	}
	gp, gc := f.group[p], f.group[c]
	if gp == gc {
		f.remark(c.Loc, "fused '%s' with its producer '%s' at %s", c.Name(), p.Name(), locString(p.Loc))
		return
	}
	info, reason := f.canMerge(gp, gc, false)
	if reason != "" && f.mergeCycleBreaker(gp, gc, c) {
		info, reason = f.canMerge(gp, gc, false)
	}
	if reason != "" {
		f.remark(c.Loc, "did not fuse '%s' with its producer '%s' at %s: %s", c.Name(), p.Name(), locString(p.Loc), reason)
		return
	}
	f.merge(gp, gc, info)
	f.remark(c.Loc, "fused '%s' with its producer '%s' at %s", c.Name(), p.Name(), locString(p.Loc))
}

// mergeCycleBreaker handles a union of producer group gp and consumer
// group gc that would be a cycle through one other group, which reads gp
// and feeds gc: cross-entropy written as `gather(x, t)` before
// `logsumexp(x)`, where the gather (refused alone with the cast of x: a
// gather needs a row kernel) stands between the cast and the final
// subtraction. If that group may join gp, it does, and the caller tries
// gp and gc again. It reports whether it merged. Only a gather breaks a
// cycle this way: other ops that cannot join their producer have a reason
// that holds in the larger union too.
func (f *fuser) mergeCycleBreaker(gp, gc *fusionGroup, c *ir.Operation) bool {
	via := f.cycleVia
	if via == nil || via.Name() != graph.OpGather {
		return false
	}
	gv := f.group[via]
	if gv == nil || gv == gp || gv == gc || len(gv.ops) == 0 {
		return false
	}
	info, reason := f.canMerge(gp, gv, false)
	if reason != "" {
		return false
	}
	first := gp.ops[0]
	f.merge(gp, gv, info)
	f.remark(via.Loc, "fused '%s' into the kernel of '%s' at %s, so that '%s' at %s joins it without a cycle",
		via.Name(), first.Name(), locString(first.Loc), c.Name(), locString(c.Loc))
	return true
}

// fuseSharedProducers tries again, after sibling fusion, the producers
// left alone whose users have since come to share one kernel: a cast of
// the activations that two matmuls read (W8A8 gate and up widening x to
// i32) was refused by each matmul's kernel while the other read it too,
// and is a prologue of the kernel that now holds both.
func (f *fuser) fuseSharedProducers() {
	for _, p := range f.nodes {
		if r, _ := f.role(p); r != roleFusible || !f.alone(p) || p.NumResults() != 1 {
			continue
		}
		var gc *fusionGroup
		var c *ir.Operation
		shared := len(p.Result(0).Users()) > 1
		for _, u := range p.Result(0).Users() {
			g := f.group[u]
			if g == nil || (gc != nil && g != gc) {
				shared = false
				break
			}
			gc, c = g, u
		}
		gp := f.group[p]
		if !shared || gp == nil || gc == gp {
			continue
		}
		// (refused again, it has been explained already)
		if info, reason := f.canMerge(gp, gc, false); reason == "" {
			f.merge(gp, gc, info)
			f.remark(c.Loc, "fused '%s' with its producer '%s' at %s, whose users now share its kernel", c.Name(), p.Name(), locString(p.Loc))
		}
	}
}

// fuseSiblings merges kernels that read the same full tensor: each of its
// rows is then read from DRAM once for all of them.
func (f *fuser) fuseSiblings() {
	var values []*ir.Value
	if f.block != nil {
		values = append(values, f.block.Args...)
	}
	for _, op := range f.nodes {
		if r, _ := f.role(op); r != roleClone {
			values = append(values, op.Results()...)
		}
	}
	for _, v := range values {
		// the first user of each kernel reading v, in program order
		all := slices.Clone(v.Users())
		slices.SortFunc(all, func(a, b *ir.Operation) int { return f.pos[a] - f.pos[b] })
		var users []*ir.Operation
		var groups map[*fusionGroup]bool // the groups of users, once there are many
		for _, u := range all {
			g := f.group[u]
			if g == nil {
				continue
			}
			if groups == nil && len(users) >= 8 {
				groups = make(map[*fusionGroup]bool, len(all))
				for _, o := range users {
					groups[f.group[o]] = true
				}
			}
			if groups != nil {
				if !groups[g] {
					groups[g] = true
					users = append(users, u)
				}
			} else if !slices.ContainsFunc(users, func(o *ir.Operation) bool { return f.group[o] == g }) {
				users = append(users, u)
			}
		}
		if len(users) < 2 {
			continue
		}
		for i, u := range users[1:] {
			// the kernel of the first earlier user that can take u's: the
			// q, k and v projections of a decode step read the same x, and
			// k's and v's matmuls (of one shape) join where q's cannot
			earlier := users[:i+1]
			if len(earlier) > maxSiblingTries {
				earlier = earlier[:1]
			}
			for _, e := range earlier {
				base, g := f.group[e], f.group[u]
				if base == g {
					break
				}
				info, reason := f.canMerge(base, g, true)
				if reason != "" || !sharedRead(info, v) {
					continue
				}
				f.merge(base, g, info)
				f.remark(u.Loc, "fused '%s' with '%s' at %s, which reads the same %s", u.Name(),
					e.Name(), locString(e.Loc), describeValue(v))
				break
			}
		}
	}
}

// sharedRead reports whether the kernel classified info reads v so that
// its parts share the read: in full (each element once), or whole as the
// left operand of all its matmuls (one launch whose tiles read x for every
// dot product: k's and v's projections).
func sharedRead(info *KernelInfo, v *ir.Value) bool {
	switch info.AccessOf(v) {
	case AccessFull:
		return true
	case AccessWhole:
		if info.Kind != KernelMatMul || len(info.MatMuls) < 2 || len(info.MatMuls) > maxSiblingDots {
			return false
		}
		for _, m := range info.MatMuls {
			if m.Operand(0) != v {
				return false
			}
		}
		return true
	}
	return false
}

// maxSiblingDots bounds the matmuls that sibling fusion puts in one
// kernel: the accumulators of two dot products fit the registers of a
// tensor-core tile (the PTX emitter's form takes two; a third would send
// the kernel to scalar loops), so an attention layer whose q, k and v
// have one shape gets q and k in one kernel and v in another.
const maxSiblingDots = 2

// maxSiblingTries bounds the earlier readers of a value whose kernels a
// later reader's kernel tries to join (each try classifies a union); past
// it, only the first reader's.
const maxSiblingTries = 4

// describeValue names a value for a remark: "%x", or its type.
func describeValue(v *ir.Value) string {
	if v.Name != "" {
		return "%" + v.Name
	}
	return v.Type().String()
}

// canMerge checks whether the union of a and b may be one kernel and
// returns its classification (when needInfo asks for it), or the reason
// it may not.
func (f *fuser) canMerge(a, b *fusionGroup, needInfo bool) (*KernelInfo, string) {
	if n := len(a.ops) + len(b.ops); n > f.maxOps {
		return nil, fmt.Sprintf("the kernel would have %d ops, more than max-ops = %d", n, f.maxOps)
	}
	via, usedOutside := f.pathOutside(a, b)
	f.cycleVia = via
	if via != nil {
		return nil, fmt.Sprintf("fusing them would create a cycle through '%s' at %s", via.Name(), locString(via.Loc))
	}
	if f.target.Family == target.Tenstorrent {
		if why := f.tileEpilogue(mergeOrdered(a.ops, b.ops, f.pos)); why != "" {
			return nil, why
		}
	}
	if !needInfo && usedOutside && uniformShortcut && a.shape != nil && b.shape != nil && slices.Equal(a.shape, b.shape) {
		// element-wise primitives whose every operand and result has one
		// shape, writing a result: the classification cannot fail (see
		// uniformShape)
		return nil, ""
	}
	info, err := f.classify(mergeOrdered(a.ops, b.ops, f.pos))
	if err != nil {
		var r *kernelRefusal
		if errors.As(err, &r) {
			return nil, describeError(r.err)
		}
		return nil, "incompatible iteration space: " + describeError(err)
	}
	if info.Kind == KernelRow && len(info.MatMuls) > 0 {
		if f.target.Family != target.CPU {
			return nil, fmt.Sprintf("a matmul joins the row kernel over its rows on CPU targets only: on %s a program would compute a row's dot products alone, which ran slower than a matmul kernel and a row kernel (docs/fusion.md)", f.target.Name)
		}
		// a row of dot products is computed once only when the row kernel
		// does not read its row again
		// (with exact rounding, lower-to-loops runs an online schedule as
		// two-pass)
		exact := f.ctx != nil && f.ctx.ExactRounding
		if sched := info.PlanSchedule(f.target); sched != ScheduleOnePass && (sched != ScheduleOnline || !info.OnlyPerRowAfterOnline() || exact) {
			return nil, fmt.Sprintf("a row kernel over the matmul's rows would be %s on %s (%s of %d %s, %d bytes, against a scratchpad of %d), computing each dot product again for each read of the row",
				sched, f.target.Name, countOf(info.RowBuffers, "row buffer"), info.RowLen, info.RowElemName(), info.RowBufferBytes(), f.target.ScratchpadBytes)
		}
	}
	if info.Kind == KernelRow && f.target.Family == target.CPU {
		if why := rowAcrossLines(info); why != "" {
			return nil, why
		}
	}
	return info, ""
}

// rowAcrossLines says why row kernel info should not be one kernel on a
// CPU: it reads a value, or stores a result, with its row along another
// axis than the value's last (through a transpose of the last axis), so
// each of its passes over a row touches a cache line per element, and a
// row longer than acrossLinesRow finds those lines evicted when the next
// row, which shares them, comes. A transpose of its own walks tiles and
// the row kernel then reads its rows whole: a softmax of a transposed
// [4096, 4096] bf16 operand took 73-77 ms as one kernel with strided
// vectors, 17.8 as a transpose and a softmax; stored transposed, 57-58
// against 15.7-16.6 (docs/cpu-backend.md). Short rows (a LayerNorm over
// a middle axis of a few channels) stay one kernel.
func rowAcrossLines(info *KernelInfo) string {
	if info.RowLen != ir.Dynamic && info.RowLen <= acrossLinesRow {
		return ""
	}
	if v := info.Views; v != nil && v.Strided {
		return "a row kernel would read a value along another axis than its last (through a transpose of the last axis): on a CPU each pass over a row would read a cache line per element, where a transpose of its own walks tiles"
	}
	for _, chain := range info.OutViews {
		for _, op := range chain {
			if t, ok := graph.AsTranspose(op); ok && MovesLastAxis(t) {
				return "a row kernel would store its row along another axis than the result's last (through a transpose of the last axis): on a CPU each row would write a cache line per element, where a transpose of its own walks tiles"
			}
		}
	}
	return ""
}

// acrossLinesRow is the longest row that a row kernel reads or stores
// across cache lines on a CPU (rowAcrossLines): 256 lines of 64 bytes,
// half of a core's L1 data cache of 32 KiB.
const acrossLinesRow = 256

// describeError words a classification error for a remark.
func describeError(err error) string {
	if d, ok := err.(*ir.Diagnostic); ok {
		if d.Loc.Known() {
			return fmt.Sprintf("%s (at %s)", d.Message, locString(d.Loc))
		}
		return d.Message
	}
	return err.Error()
}

// mergeOrdered merges two op lists sorted by position.
func mergeOrdered(a, b []*ir.Operation, pos map[*ir.Operation]int) []*ir.Operation {
	out := make([]*ir.Operation, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		if j == len(b) || (i < len(a) && pos[a[i]] < pos[b[j]]) {
			out = append(out, a[i])
			i++
		} else {
			out = append(out, b[j])
			j++
		}
	}
	return out
}

// merge makes b part of a.
func (f *fuser) merge(a, b *fusionGroup, info *KernelInfo) {
	a.ops = mergeOrdered(a.ops, b.ops, f.pos)
	a.info = info
	if a.shape == nil || b.shape == nil || !slices.Equal(a.shape, b.shape) {
		a.shape = nil
	}
	for _, op := range b.ops {
		f.group[op] = a
	}
	b.ops = nil
}

// pathOutside returns an op outside the union of groups a and b on a path
// that leaves the union and comes back into it, or nil: fusing such a
// union would make the kernel depend on itself. Groups already formed
// count as one node each (they become one kernel), so a path through any
// member of a group continues from all of its members: two groups that
// feed each other are a cycle too. Ops after f.horizon are not searched:
// no path from them leads back. The union is walked in program order, so
// the op reported is the first such user of its first member. usedOutside
// reports whether an op outside the union uses a value of it.
func (f *fuser) pathOutside(a, b *fusionGroup) (via *ir.Operation, usedOutside bool) {
	in := func(op *ir.Operation) bool {
		g := f.group[op]
		return g != nil && (g == a || g == b)
	}
	// ops seen by this search are marked with its number
	f.search++
	if f.seen == nil {
		f.seen = map[*ir.Operation]int{}
	}
	// reaches reports whether a path from op leads back into the union.
	var reaches func(op *ir.Operation) bool
	reaches = func(op *ir.Operation) bool {
		if in(op) {
			return true
		}
		f.visits++
		if p, inRange := f.pos[op]; !inRange || p > f.horizon || f.seen[op] == f.search {
			return false
		}
		members := []*ir.Operation{op}
		if g := f.group[op]; g != nil && len(g.ops) > 0 {
			members = g.ops
		}
		for _, m := range members {
			f.seen[m] = f.search
		}
		for _, m := range members {
			for _, r := range m.Results() {
				for _, u := range r.Uses() {
					if reaches(u.Owner) {
						return true
					}
				}
			}
		}
		return false
	}
	i, j := 0, 0
	for i < len(a.ops) || j < len(b.ops) {
		var op *ir.Operation
		if j == len(b.ops) || (i < len(a.ops) && f.pos[a.ops[i]] < f.pos[b.ops[j]]) {
			op = a.ops[i]
			i++
		} else {
			op = b.ops[j]
			j++
		}
		for _, r := range op.Results() {
			for _, u := range r.Uses() {
				if in(u.Owner) {
					continue
				}
				usedOutside = true
				if reaches(u.Owner) {
					return u.Owner, true
				}
			}
		}
	}
	return nil, usedOutside
}

// kernelIO returns the values a set of top-level ops reads from outside
// (constants to be cloned left out) and the results it must write: those
// used by any op outside the set.
func (f *fuser) kernelIO(ops []*ir.Operation) (inputs, outputs []*ir.Value, clones []*ir.Operation) {
	in := make(map[*ir.Operation]bool, len(ops))
	for _, op := range ops {
		in[op] = true
	}
	for _, op := range ops {
		for _, v := range op.Operands() {
			d := v.DefiningOp()
			if in[d] {
				continue
			}
			if f.isClone(d) {
				if !slices.Contains(clones, d) {
					clones = append(clones, d)
				}
				continue
			}
			if !slices.Contains(inputs, v) {
				inputs = append(inputs, v)
			}
		}
	}
	for _, op := range ops {
		for _, r := range op.Results() {
			for _, u := range r.Uses() {
				if !in[u.Owner] {
					outputs = append(outputs, r)
					break
				}
			}
		}
	}
	return inputs, outputs, clones
}

// isClone reports whether op is a constant of the range that kernels clone.
func (f *fuser) isClone(op *ir.Operation) bool {
	if _, inRange := f.pos[op]; !inRange {
		return false
	}
	r, _ := f.role(op)
	return r == roleClone
}

// classify classifies a set of top-level ops as one kernel, with the
// constants it would clone.
func (f *fuser) classify(ops []*ir.Operation) (*KernelInfo, error) {
	inputs, outputs, clones := f.kernelIO(ops)
	body := append(slices.Clone(clones), ops...)
	return classifyBody(body, inputs, outputs)
}

// ---------------------------------------------------------------------------
// Rewriting

// materialize turns each group into a graph.fused op, puts the ops of the
// range in an order where every kernel follows what it reads, and erases
// the ops that moved into kernels.
func (f *fuser) materialize(wrapAll bool) ([]*ir.Operation, error) {
	type kernel struct {
		fused *ir.Operation
		first int // position of its first op
		ops   []*ir.Operation
	}
	var kernels []kernel
	cloned := map[*ir.Operation]int{} // constant -> kernels it was cloned into
	done := map[*fusionGroup]bool{}
	for _, op := range f.nodes {
		g := f.group[op]
		role, _ := f.role(op)
		if g == nil && wrapAll && role == roleBarrier && f.wrappable(op) {
			g = &fusionGroup{ops: []*ir.Operation{op}}
			f.group[op] = g
		}
		if g == nil || done[g] {
			continue
		}
		done[g] = true
		_, _, clones := f.kernelIO(g.ops)
		if len(g.ops) == 1 && len(clones) == 0 && !wrapAll {
			continue // lowering wraps a lone op itself
		}
		if len(g.ops) > max(f.maxOps, 1) {
			continue
		}
		fused, err := f.buildKernel(g)
		if err != nil {
			return nil, err
		}
		for _, c := range clones {
			cloned[c]++
		}
		kernels = append(kernels, kernel{fused: fused, first: f.pos[g.ops[0]], ops: g.ops})
	}
	// erase the grouped ops, users first; they are used only inside their
	// kernels now
	for _, k := range kernels {
		for i := len(k.ops) - 1; i >= 0; i-- {
			k.ops[i].Erase()
		}
	}
	var live []*ir.Operation
	var keys []int
	for _, op := range f.nodes {
		if op.Block() == nil {
			continue
		}
		if n := cloned[op]; n > 0 {
			f.remark(op.Loc, "cloned splat constant into %s", countOf(n, "kernel"))
			if !op.Result(0).HasUses() {
				op.Erase()
				continue
			}
		}
		live = append(live, op)
		keys = append(keys, f.pos[op])
	}
	var out []*ir.Operation
	for _, k := range kernels {
		live = append(live, k.fused)
		keys = append(keys, k.first)
		out = append(out, k.fused)
	}
	f.reorder(live, keys)
	return out, nil
}

// wrappable reports whether a barrier can be a kernel of its own.
func (f *fuser) wrappable(op *ir.Operation) bool {
	return singleOpKinds[op.Name()] != "" || isReduceOp(op)
}

// buildKernel creates the graph.fused of a group, detached, and makes the
// users outside the group use its results.
func (f *fuser) buildKernel(g *fusionGroup) (*ir.Operation, error) {
	inputs, outputs, clones := f.kernelIO(g.ops)
	loc := g.ops[0].Loc
	fused := ir.NewOperation(graph.OpFused, loc, inputs, nil, ir.Attrs("kind", ir.StringAttr(KernelElementwise)), 1)
	entry := ir.NewBlock()
	fused.Region(0).AppendBlock(entry)
	m := ir.Mapping{}
	for _, v := range inputs {
		a := entry.AddArg(v.Type())
		a.Name = v.Name
		m[v] = a
	}
	for _, c := range clones {
		entry.Append(c.Clone(m))
	}
	for _, op := range g.ops {
		entry.Append(op.Clone(m))
	}
	yielded := make([]*ir.Value, len(outputs))
	for i, v := range outputs {
		yielded[i] = m.Lookup(v)
		r := fused.AddResult(v.Type())
		r.Name = v.Name
	}
	entry.Append(ir.NewOperation(graph.OpYield, loc, yielded, nil, nil, 0))
	info, err := AnnotateKernel(fused, f.target)
	if err != nil {
		fused.Erase()
		return nil, ir.OpError(g.ops[0], "fuse formed a group that is not one kernel: %s", describeError(err))
	}
	in := map[*ir.Operation]bool{}
	for _, op := range g.ops {
		in[op] = true
	}
	for i, v := range outputs {
		for _, u := range slices.Clone(v.Uses()) {
			if !in[u.Owner] {
				u.Set(fused.Result(i))
			}
		}
	}
	f.remarkKernel(fused, &info, len(g.ops))
	return fused, nil
}

// remarkKernel explains a kernel formed and, for a row kernel, its
// schedule.
func (f *fuser) remarkKernel(fused *ir.Operation, info *KernelInfo, n int) {
	f.remark(fused.Loc, "formed %s kernel of %d %s over %s: reads %s, writes %s",
		kindArticle(info.Kind), n, plural(n, "op"), graph.FormatShape(info.Shape),
		countOf(fused.NumOperands(), "tensor"), countOf(fused.NumResults(), "tensor"))
	if v := info.Views; v != nil && len(v.RowCuts) > 0 {
		cuts := make([]string, len(v.RowCuts))
		for i, c := range v.RowCuts {
			cuts[i] = fmt.Sprint(c)
		}
		f.remark(fused.Loc, "a concat along dimension %d of the kernel's rows cuts them at %s: the kernel runs %d parts in one launch, each reading its piece",
			v.RowDim, strings.Join(cuts, ", "), len(v.RowCuts)+1)
	}
	if info.Kind != KernelRow {
		return
	}
	where := fmt.Sprintf("the %d-byte scratchpad of %s", f.target.ScratchpadBytes, f.target.Name)
	rows := fmt.Sprintf("%s of %d %s (%d bytes)", countOf(info.RowBuffers, "row buffer"), info.RowLen, info.RowElemName(), info.RowBufferBytes())
	switch {
	case info.RowBuffers == 0:
		f.remark(fused.Loc, "planned one-pass: no row is kept between the %d phases of the row kernel", info.NumPhases)
	case info.Schedule == ScheduleOnline && info.RowBufferBytes() <= f.target.ScratchpadBytes:
		f.remark(fused.Loc, "planned online: the row is reduced to per-row values by a max and a sum of exp, which one pass over the row takes chunk by chunk, holding a chunk instead of %s", rows)
	case info.Schedule == ScheduleOnline:
		f.remark(fused.Loc, "planned online: %s %s %s, so the max and the sum of exp are taken in one pass over the row, chunk by chunk, and each phase after them reads the row from DRAM again",
			rows, verb(info.RowBuffers, "does not fit", "do not fit"), where)
	case info.Schedule == ScheduleOnePass:
		f.remark(fused.Loc, "planned one-pass: %s %s %s, so each row is read from DRAM once", rows, verb(info.RowBuffers, "fits", "fit"), where)
	case info.Schedule == ScheduleCached:
		f.remark(fused.Loc, "planned cached: a row of the inputs (%d bytes) stays in the cache of %s between the %d phases, so each phase reads it again from there rather than keeping %s; DRAM reads it once",
			info.RowReadBytes(), f.target.Name, info.NumPhases, rows)
	default:
		f.remark(fused.Loc, "planned two-pass: %s %s %s, so the row is read from DRAM again after each reduction",
			rows, verb(info.RowBuffers, "does not fit", "do not fit"), where)
	}
}

func kindArticle(k KernelKind) string {
	if strings.ContainsRune("aeiou", rune(k[0])) {
		return "an " + string(k)
	}
	return "a " + string(k)
}

func plural(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}

// verb picks the singular or plural form for a count.
func verb(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func countOf(n int, noun string) string { return fmt.Sprintf("%d %s", n, plural(n, noun)) }

// reorder puts ops (the live ops of the range and the new kernels, with
// their sort keys) before f.end in an order where each follows the ops of
// the range it reads, staying as close to program order as it can.
func (f *fuser) reorder(ops []*ir.Operation, keys []int) {
	index := map[*ir.Operation]int{}
	for i, op := range ops {
		index[op] = i
	}
	indeg := make([]int, len(ops))
	users := make([][]int, len(ops))
	for i, op := range ops {
		var deps []int
		for _, v := range op.Operands() {
			if j, ok := index[v.DefiningOp()]; ok && !slices.Contains(deps, j) {
				deps = append(deps, j)
			}
		}
		for _, j := range deps {
			users[j] = append(users[j], i)
			indeg[i]++
		}
	}
	h := &orderHeap{keys: keys}
	for i := range ops {
		if indeg[i] == 0 {
			heap.Push(h, i)
		}
	}
	for h.Len() > 0 {
		i := heap.Pop(h).(int)
		f.block.InsertBefore(ops[i], f.end)
		for _, u := range users[i] {
			if indeg[u]--; indeg[u] == 0 {
				heap.Push(h, u)
			}
		}
	}
}

// orderHeap pops indices by key, then index.
type orderHeap struct {
	items []int
	keys  []int
}

func (h *orderHeap) Len() int { return len(h.items) }
func (h *orderHeap) Less(a, b int) bool {
	x, y := h.items[a], h.items[b]
	if h.keys[x] != h.keys[y] {
		return h.keys[x] < h.keys[y]
	}
	return x < y
}
func (h *orderHeap) Swap(a, b int) { h.items[a], h.items[b] = h.items[b], h.items[a] }
func (h *orderHeap) Push(x any)    { h.items = append(h.items, x.(int)) }
func (h *orderHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}

// ---------------------------------------------------------------------------
// The pass

func init() {
	ir.RegisterPass(&ir.PassInfo{
		Name: "fuse", Title: "Fuse",
		Summary: "group element-wise chains and row reductions into graph.fused kernels (decomposing composite ops first)",
		Options: []ir.PassOption{
			{Name: "max-ops", Kind: ir.OptInt, Default: fmt.Sprint(DefaultMaxOps), Help: "the largest number of ops in one kernel (0: the default)"},
		},
		New: func(opts ir.PassOptions) (ir.Pass, error) {
			maxOps := int(opts.Int("max-ops"))
			return ir.PassFunc(func(m ir.Module, ctx *ir.PassContext) error {
				return Fuse(m.Operation, ctx, FuseOptions{MaxOps: maxOps})
			}), nil
		},
	})
}

// tileColumns is the width of a Tenstorrent tile.
const tileColumns = 32

// tileAligned reports whether view op only cuts or joins its operands
// along the last axis, at whole tiles of static rows (rotate_half's slices
// at column 64 and its concat of two halves of 64): the Tenstorrent reader
// follows such a view by reading other tiles of the same row block
// (emit/tt: shifted streams), so it fuses there.
func tileAligned(op *ir.Operation) bool {
	whole := func(n int64) bool { return n != ir.Dynamic && n%tileColumns == 0 }
	switch op.Name() {
	case graph.OpSlice:
		s, _ := graph.AsSlice(op)
		in := shapeOf(s.Input())
		off, sizes, strides := s.Offsets(), s.Sizes(), s.Strides()
		n := len(in)
		if n == 0 || len(off) != n || len(sizes) != n {
			return false
		}
		for d := range n {
			if len(strides) == n && strides[d] != 1 {
				return false
			}
			if d < n-1 && (off[d] != 0 || (sizes[d] != in[d] && sizes[d] != -1)) {
				return false
			}
		}
		last := sizes[n-1]
		if last == -1 { // the whole last dimension
			last = in[n-1]
		}
		return whole(in[n-1]) && off[n-1]%tileColumns == 0 && whole(last)
	case graph.OpConcat:
		c, _ := graph.AsConcat(op)
		out := shapeOf(c.Output())
		if len(out) == 0 || c.Axis() != int64(len(out)-1) && c.Axis() != -1 {
			return false
		}
		for _, v := range c.Inputs() {
			if sh := shapeOf(v); len(sh) != len(out) || !whole(sh[len(sh)-1]) {
				return false
			}
		}
		return true
	}
	return false
}

// readRows reports whether view op, on a Tenstorrent target, only moves
// whole rows of an operand that kernels read (not one they compute): a
// slice, transpose or broadcast_to of static shapes keeping the last axis
// whole and in place, of a function argument, of a barrier's result or of
// such a view; and a reshape keeping the last axis of any operand, which
// leaves the rows where they are in the tiles' layout (every dimension
// but the last flattened into rows). A kernel reading through it addresses each of
// its rows as a row of the operand, which the reader gathers (emit/tt:
// rows mapped to other rows); a view of a value the kernel computes would
// map its stores instead, which the writer does not do.
func (f *fuser) readRows(op *ir.Operation) bool {
	in, out := shapeOf(op.Operand(0)), shapeOf(op.Result(0))
	// the last axis static and kept; the leading extents may be `?` (the
	// reader's row maps take them as runtime arguments)
	if len(in) == 0 || len(out) == 0 || in[len(in)-1] == ir.Dynamic || in[len(in)-1] != out[len(out)-1] {
		return false
	}
	switch op.Name() {
	case graph.OpSlice:
		s, _ := graph.AsSlice(op)
		off, strides := s.Offsets(), s.Strides()
		n := len(in)
		if len(off) != n || off[n-1] != 0 || len(strides) == n && strides[n-1] != 1 {
			return false
		}
	case graph.OpTranspose:
		if t, _ := graph.AsTranspose(op); MovesLastAxis(t) {
			return false
		}
	case graph.OpReshape:
		// rows regrouped, the last axis kept: the same rows in the same
		// order in the tiles' layout (every dimension but the last
		// flattened into rows), whatever computes the operand
		return true
	case graph.OpBroadcastTo:
	default:
		return false
	}
	d := op.Operand(0).DefiningOp()
	if d == nil || d.Block() != op.Block() {
		return true
	}
	if IsView(d) {
		return f.readRows(d)
	}
	r, _ := f.role(d)
	return r == roleBarrier
}

// tileEpilogueOps are the element-wise ops a Tenstorrent matmul kernel
// applies to its result tiles in DST (emit/tt: the SFPU forms of its
// epilogue).
var tileEpilogueOps = map[string]bool{
	graph.OpAdd: true, graph.OpSub: true, graph.OpMul: true,
	graph.OpSilu: true, graph.OpSigmoid: true, graph.OpRelu: true, graph.OpNeg: true,
	graph.OpExp: true, graph.OpTanh: true,
}

// tileEpilogue says why ops (a would-be kernel holding a matmul) cannot
// be one matmul kernel on a Tenstorrent target, or "" when they can, or
// when they hold no matmul. The backend streams the matmul's operands
// from memory as they are (no prologue), keeps each dot product in a DST
// tile and evaluates the epilogue as one expression tree of SFPU ops on
// f32 tiles before the packer rounds the one result it stores: each value
// is used once, and the epilogue reads inputs of static shapes at the
// result's element ([M, N]), column ([N]) or row ([M, 1]).
func (f *fuser) tileEpilogue(ops []*ir.Operation) string {
	var mm *ir.Operation
	for _, op := range ops {
		if op.Name() == graph.OpMatMul {
			mm = op
			break
		}
	}
	if mm == nil {
		return ""
	}
	on := f.target.Name
	if f.ctx != nil && f.ctx.ExactRounding {
		return fmt.Sprintf("a matmul kernel on %s rounds only the result it stores, and exact rounding rounds every op of its epilogue", on)
	}
	in := map[*ir.Operation]bool{}
	for _, op := range ops {
		in[op] = true
	}
	res := shapeOf(mm.Result(0))
	stored, dots, reads := 0, 0, 0
	for _, op := range ops {
		isMM := op.Name() == graph.OpMatMul
		switch {
		case isMM:
			dots++
			for i, v := range op.Operands() {
				if d := v.DefiningOp(); d != nil && in[d] {
					return fmt.Sprintf("a matmul kernel on %s reads its operands from memory as they are, but operand #%d of '%s' at %s is computed in the kernel ('%s')",
						on, i, op.Name(), locString(op.Loc), d.Name())
				}
			}
		case isSplatConstant(op.Result(0)):
		case !tileEpilogueOps[op.Name()]:
			return fmt.Sprintf("'%s' is not in the epilogue a matmul kernel on %s applies (add, sub, mul, silu, sigmoid, relu, neg, exp, tanh on f32 tiles)", op.Name(), on)
		default:
			if e, _ := ir.ElemOf(op.Result(0).Type()); !e.Kind.IsFloat() {
				return fmt.Sprintf("'%s' computes on %s; a matmul kernel on %s computes its epilogue on float tiles", op.Name(), e, on)
			}
			if sh := shapeOf(op.Result(0)); !slices.Equal(sh, res) {
				return fmt.Sprintf("'%s' computes a %s value; a matmul kernel on %s computes its epilogue per element of its %s result",
					op.Name(), graph.FormatShape(sh), on, graph.FormatShape(res))
			}
			for _, v := range op.Operands() {
				if d := v.DefiningOp(); d != nil && in[d] || isSplatConstant(v) {
					continue
				}
				sh := shapeOf(v)
				n := len(res)
				switch {
				case slices.Contains(sh, ir.Dynamic):
					return fmt.Sprintf("'%s' reads a tensor of run-time shape %s in the epilogue of a matmul kernel on %s, which reads static tiles", op.Name(), graph.FormatShape(sh), on)
				case slices.Equal(sh, res), len(sh) == 1 && sh[0] == res[n-1]:
				case len(sh) == n && sh[n-1] == 1 && slices.Equal(sh[:n-1], res[:n-1]):
				default:
					return fmt.Sprintf("'%s' reads a %s tensor in the epilogue of a matmul kernel on %s, which reads operands at the result's element, column ([N]) or row ([M, 1]) of %s",
						op.Name(), graph.FormatShape(sh), on, graph.FormatShape(res))
				}
				reads++
				if uses := len(v.Users()); uses > 1 {
					for _, u := range v.Users() {
						if u != op && in[u] {
							return fmt.Sprintf("'%s' reads a tensor that the kernel reads again; a matmul kernel on %s streams each operand once", op.Name(), on)
						}
					}
				}
			}
		}
		inside, outside := 0, false
		for _, u := range op.Result(0).Users() {
			if in[u] {
				inside++
			} else {
				outside = true
			}
		}
		if inside > 1 {
			return fmt.Sprintf("the result of '%s' at %s is used %d times in the kernel; a matmul kernel on %s evaluates its epilogue as one expression tree, each value used once",
				op.Name(), locString(op.Loc), inside, on)
		}
		if outside || inside == 0 {
			stored++
		}
	}
	if stored > 1 {
		return fmt.Sprintf("the kernel would store %d results; a matmul kernel on %s stores one", stored, on)
	}
	// each dot product holds a DST tile, and the tree's leaves at most one
	// each: within the 4 tiles of an acquire (fp32_dest_acc_en)
	if tiles := 2*dots + reads - 1; tiles > 4 {
		return fmt.Sprintf("the epilogue of %d dot products reading %d tensors may need %d DST tiles; a matmul kernel on %s has 4", dots, reads, tiles, on)
	}
	return ""
}
