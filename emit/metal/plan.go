package metal

import (
	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
)

// This file decides, before any text is written, how a loop.kernel runs
// as a Metal kernel:
//
//   - the launch grid is one threadgroup per iteration of its
//     loop.parallel (a row); an element-wise or generic kernel, which
//     needs no communication between its threads, may also spread one
//     row over several threadgroups ("chunked");
//   - the threads loops, and the serial loops of a generic kernel whose
//     iterations write distinct elements, are spread over the threads;
//   - every carried value of a threads loop is combined over the
//     threadgroup: simd_sum (or simd_max, simd_min) within a simdgroup,
//     then through `threadgroup float partial[32]` across simdgroups. A
//     carried vector read only by one loop.reduce of the same kind is
//     reduced over its lanes in each thread first, so one value per
//     thread is combined, as MLX's kernels do;
//   - the sram buffers are one threadgroup array laid out as sram-alloc
//     planned. When the plan leaves no room for the partial results
//     (32 KB of threadgroup memory on m3-max, a row of 8192 f32), one
//     simdgroup does the work and simd_sum alone combines.

// Reduction modes.
const (
	modeNone        = ""            // no carried values to combine
	modeThreadgroup = "threadgroup" // simdgroups, then partial[] across them
	modeSimdgroup   = "simdgroup"   // one simdgroup works; simd_sum alone
)

// maxThreads is the largest threadgroup a Metal device runs.
const maxThreads = 1024

// chunkThreads is the threadgroup size of a chunked kernel.
const chunkThreads = 256

// combineItem is one carried value of a threads loop to combine.
type combineItem struct {
	result *ir.Value
	kind   string // add, max, min
	elem   ir.ElemKind
	// reduce is the loop.reduce folded into the combine, or nil.
	reduce *ir.Operation
	// slots is the number of scalars combined: 1 when reduced first,
	// else the lanes of the value.
	slots int64
}

// kernelPlan is what planning decides about one kernel.
type kernelPlan struct {
	k        loop.KernelOp
	body     *ir.Block
	ins      []*ir.Value
	outs     []*ir.Value
	extents  []*ir.Value
	extentOf map[*ir.Value][]*ir.Value // per buffer argument, the index argument of each `?`

	grid     loop.ParallelOp
	gridBody *ir.Block
	// distributed are the loops spread over the threads: the threads
	// loops and the serial loops run as one.
	distributed map[*ir.Operation]bool
	combines    map[*ir.Operation][]combineItem
	// reducedBy maps a loop.reduce folded into a combine to its item.
	folded map[*ir.Operation]bool

	allocs    []loop.AllocOp
	sramBytes int64
	sramKinds []ir.ElemKind
	// partialSlots is, per element kind, the scalars the largest combine
	// exchanges; partialKinds orders them.
	partialSlots map[ir.ElemKind]int64
	partialKinds []ir.ElemKind

	mode    string
	chunked bool
	tgBytes int64

	// mm is the tiling of a matmul kernel (matmul.go), nil when it runs
	// as a generic kernel; untiled then says why (for its comment).
	mm      *matmulPlan
	untiled string
}

// planKernel checks that k has the shape lower-to-loops gives kernels and
// decides how it runs; capacity is the target's threadgroup memory.
func planKernel(k loop.KernelOp, t *target.Target) (*kernelPlan, error) {
	p := &kernelPlan{k: k, extentOf: map[*ir.Value][]*ir.Value{}, distributed: map[*ir.Operation]bool{},
		combines: map[*ir.Operation][]combineItem{}, folded: map[*ir.Operation]bool{}, partialSlots: map[ir.ElemKind]int64{}}
	if len(k.Body().Blocks) != 1 {
		return nil, ir.OpError(k.Operation, "has %d blocks; a kernel has one", len(k.Body().Blocks))
	}
	p.body = k.Body().Entry()
	if err := p.splitArgs(); err != nil {
		return nil, err
	}
	if err := noF64(k.Operation); err != nil {
		return nil, err
	}

	// the body: constants and index arithmetic, the grid, loop.return
	for op := p.body.First(); op != nil; op = op.Next() {
		switch {
		case op.Name() == loop.OpParallel:
			if p.grid.Operation != nil {
				return nil, ir.OpError(op, "is a second launch grid; a kernel has one loop.parallel")
			}
			p.grid, _ = loop.AsParallel(op)
		case op.Name() == loop.OpReturn:
		case op.Name() == loop.OpConst || isIndexArith(op.Name()):
			if p.grid.Operation != nil {
				return nil, ir.OpError(op, "follows the launch grid; only loop.return may")
			}
		default:
			return nil, ir.OpError(op, "cannot be translated to Metal outside the launch grid")
		}
	}
	if p.grid.Operation == nil {
		return nil, ir.OpError(k.Operation, "has no loop.parallel; the Metal emitter needs the launch grid")
	}
	p.gridBody = p.grid.Body().Entry()
	for _, v := range []*ir.Value{p.grid.Lower(), p.grid.Upper(), p.grid.Step()} {
		if !p.kernelLevel(v) {
			return nil, ir.OpError(p.grid.Operation, "has bounds computed inside the grid")
		}
	}
	if err := p.walkGrid(); err != nil {
		return nil, err
	}
	if err := p.planMemory(t); err != nil {
		return nil, err
	}
	p.chunked = len(p.combines) == 0 && len(p.allocs) == 0
	return p, nil
}

// splitArgs sorts the block arguments into inputs, outputs and extents.
func (p *kernelPlan) splitArgs() error {
	args := p.body.Args
	nin, nout := int(p.k.NumInputs()), int(p.k.NumOutputs())
	if nin < 0 || nout < 0 || nin+nout > len(args) {
		return ir.OpError(p.k.Operation, "has %d block arguments for %d inputs and %d outputs", len(args), nin, nout)
	}
	p.ins, p.outs = args[:nin], args[nin:nin+nout]
	p.extents = args[nin+nout:]
	next := 0
	for _, buf := range args[:nin+nout] {
		m, ok := buf.Type().(ir.MemRefType)
		if !ok || m.Space != ir.DRAM {
			return ir.OpError(p.k.Operation, "takes %s where a buffer in dram belongs", buf.Type())
		}
		ext := make([]*ir.Value, len(m.Shape))
		for d, n := range m.Shape {
			if n == ir.Dynamic {
				if next >= len(p.extents) {
					return ir.OpError(p.k.Operation, "has fewer index arguments than its buffers have '?' extents")
				}
				ext[d] = p.extents[next]
				next++
			}
		}
		p.extentOf[buf] = ext
	}
	if next != len(p.extents) {
		return ir.OpError(p.k.Operation, "has %d index arguments for %d '?' extents", len(p.extents), next)
	}
	return nil
}

// noF64 rejects a kernel with a 64-bit float anywhere: Metal has none.
func noF64(kernel *ir.Operation) error {
	var err error
	check := func(op *ir.Operation, t ir.Type) {
		if e, ok := ir.ElemOf(t); ok && e.Kind == ir.F64 && err == nil {
			err = ir.OpError(op, "computes in f64, which Metal does not have (no 64-bit floating point on Apple GPUs)")
		}
	}
	for _, a := range kernel.Region(0).Entry().Args {
		check(kernel, a.Type())
	}
	kernel.Walk(func(op *ir.Operation) bool {
		for _, r := range op.Results() {
			check(op, r.Type())
		}
		for _, reg := range op.Regions() {
			for _, b := range reg.Blocks {
				for _, a := range b.Args {
					check(op, a.Type())
				}
			}
		}
		return err == nil
	})
	return err
}

func isIndexArith(name string) bool {
	switch name {
	case loop.OpAddi, loop.OpSubi, loop.OpMuli, loop.OpDivi, loop.OpRemi, loop.OpMini:
		return true
	}
	return false
}

// kernelLevel reports whether index value v is computed before the grid
// (from constants and extents), the same for every threadgroup.
func (p *kernelPlan) kernelLevel(v *ir.Value) bool {
	if v.IsBlockArg() {
		return v.OwnerBlock() == p.body
	}
	op := v.DefiningOp()
	if op.Name() == loop.OpConst {
		return true
	}
	return op.Block() == p.body
}

// walkGrid classifies the loops and buffers of the grid.
func (p *kernelPlan) walkGrid() error {
	var ops []*ir.Operation
	for op := p.gridBody.First(); op != nil; op = op.Next() {
		ops = append(ops, op)
		// the threads loops over the chunks of an online row kernel
		if f, ok := loop.AsFor(op); ok && f.Dist() != "threads" && !storesFollow(f) {
			for in := f.Body().Entry().First(); in != nil; in = in.Next() {
				if g, ok := loop.AsFor(in); ok && g.Dist() == "threads" {
					ops = append(ops, in)
				}
			}
		}
	}
	for _, op := range ops {
		switch op.Name() {
		case loop.OpAlloc:
			a, _ := loop.AsAlloc(op)
			p.allocs = append(p.allocs, a)
		case loop.OpFor:
			f, _ := loop.AsFor(op)
			if f.Dist() == "threads" {
				p.distributed[op] = true
				if err := p.planCombine(f); err != nil {
					return err
				}
			} else if len(f.Inits()) == 0 && storesFollow(f) {
				p.distributed[op] = true
			}
		}
	}
	var err error
	p.grid.Walk(func(op *ir.Operation) bool {
		switch op.Name() {
		case loop.OpParallel:
			if op != p.grid.Operation {
				err = ir.OpError(op, "is a launch grid nested in the launch grid")
			}
		case loop.OpAlloc:
			if op.Block() != p.gridBody {
				err = ir.OpError(op, "allocates threadgroup memory inside a loop; the Metal emitter needs it at the top of the grid")
			}
		case loop.OpFor:
			f, _ := loop.AsFor(op)
			if f.Dist() == "threads" && op.Block() != p.gridBody && !p.distributed[op] {
				err = ir.OpError(op, "is a threads loop inside another loop; the Metal emitter needs threads loops directly in the grid")
			}
		}
		return err == nil
	})
	return err
}

// storesFollow reports whether every store in the serial loop f writes
// at an index that depends on f's induction variable, so that its
// iterations write distinct elements and may run on different threads.
func storesFollow(f loop.ForOp) bool {
	iv := f.Body().Entry().Args[0]
	stores := 0
	ok := true
	f.Walk(func(op *ir.Operation) bool {
		if st, is := loop.AsStore(op); is {
			stores++
			dep := false
			for _, idx := range st.Indices() {
				if dependsOn(idx, iv) {
					dep = true
				}
			}
			ok = ok && dep
		}
		return ok
	})
	return ok && stores > 0
}

// dependsOn reports whether index value v is computed from iv.
func dependsOn(v, iv *ir.Value) bool {
	if v == iv {
		return true
	}
	op := v.DefiningOp()
	if op == nil || !isIndexArith(op.Name()) {
		return false
	}
	for _, a := range op.Operands() {
		if dependsOn(a, iv) {
			return true
		}
	}
	return false
}

// planCombine records how the carried values of threads loop f combine.
func (p *kernelPlan) planCombine(f loop.ForOp) error {
	if len(f.Values()) == 0 {
		return nil
	}
	kinds, _ := f.Attr("combine").(ir.ArrayAttr)
	if len(kinds) != len(f.Values()) {
		return ir.OpError(f.Operation, "has %d carried values but %d combine kinds", len(f.Values()), len(kinds))
	}
	var items []combineItem
	slots := map[ir.ElemKind]int64{}
	for j, res := range f.Values() {
		kind, _ := kinds[j].(ir.StringAttr)
		e, _ := ir.ElemOf(res.Type())
		it := combineItem{result: res, kind: string(kind), elem: e.Kind, slots: max(width(res.Type()), 1)}
		if !simdReducible(e.Kind) {
			return ir.OpError(f.Operation, "combines %s values, which Metal's simdgroup reductions do not take", e)
		}
		if users := res.Users(); len(res.Uses()) == 1 && users[0].Name() == loop.OpReduce && users[0].Block() == p.gridBody {
			if r, _ := loop.AsReduce(users[0]); r.Kind() == it.kind {
				it.reduce = users[0]
				it.slots = 1
				p.folded[users[0]] = true
			}
		}
		slots[e.Kind] += it.slots
		items = append(items, it)
	}
	p.combines[f.Operation] = items
	for _, k := range orderedKinds(items) {
		if _, seen := p.partialSlots[k]; !seen {
			p.partialKinds = append(p.partialKinds, k)
		}
		p.partialSlots[k] = max(p.partialSlots[k], slots[k])
	}
	return nil
}

// orderedKinds lists the element kinds of items in first-use order.
func orderedKinds(items []combineItem) []ir.ElemKind {
	var out []ir.ElemKind
	seen := map[ir.ElemKind]bool{}
	for _, it := range items {
		if !seen[it.elem] {
			seen[it.elem] = true
			out = append(out, it.elem)
		}
	}
	return out
}

// simdReducible reports whether simd_sum, simd_max and simd_min take k.
func simdReducible(k ir.ElemKind) bool {
	switch k {
	case ir.F32, ir.I8, ir.I16, ir.I32, ir.UI8, ir.UI16, ir.UI32:
		return true
	}
	return false
}

// planMemory checks the threadgroup memory against the target and picks
// the reduction mode.
func (p *kernelPlan) planMemory(t *target.Target) error {
	capacity := t.ScratchpadBytes
	if len(p.allocs) > 0 {
		bytes, ok := p.k.SramBytes()
		if !ok {
			return ir.OpError(p.k.Operation, "has sram buffers but no sram plan; run sram-alloc before --emit=metal")
		}
		p.sramBytes = bytes
		seen := map[ir.ElemKind]bool{}
		for _, a := range p.allocs {
			off, ok := a.Offset()
			if !ok {
				return ir.OpError(a.Operation, "has no offset; run sram-alloc before --emit=metal")
			}
			m := a.Output().Type().(ir.MemRefType)
			n, _ := ir.NumElements(m.Shape)
			size := n * m.Elem.Kind.ByteSize()
			if off%m.Elem.Kind.ByteSize() != 0 || off+size > bytes {
				return ir.OpError(a.Operation, "lies at bytes [%d, %d), outside the kernel's %d bytes of sram or misaligned", off, off+size, bytes)
			}
			if !seen[m.Elem.Kind] {
				seen[m.Elem.Kind] = true
				p.sramKinds = append(p.sramKinds, m.Elem.Kind)
			}
		}
	}
	sram := roundUp16(p.sramBytes)
	if sram > capacity {
		return ir.OpError(p.k.Operation, "kernel '%s' needs %d bytes of threadgroup memory but the target '%s' has %d",
			p.k.SymName(), p.sramBytes, t.Name, capacity)
	}
	p.tgBytes = sram
	if len(p.combines) == 0 {
		return nil
	}
	partial := int64(0)
	for _, k := range p.partialKinds {
		partial += roundUp16(p.partialSlots[k] * 32 * k.ByteSize())
	}
	if sram+partial <= capacity {
		p.mode = modeThreadgroup
		p.tgBytes += partial
	} else {
		p.mode = modeSimdgroup
	}
	return nil
}

func roundUp16(n int64) int64 { return (n + 15) / 16 * 16 }

// width is the lanes of a vector type, 0 for a scalar.
func width(t ir.Type) int64 {
	if v, ok := t.(ir.VectorType); ok && len(v.Shape) == 1 {
		return v.Shape[0]
	}
	return 0
}

// elemKind is the element kind of a scalar, vector or memref type.
func elemKind(t ir.Type) ir.ElemKind {
	e, _ := ir.ElemOf(t)
	return e.Kind
}
