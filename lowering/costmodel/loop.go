package costmodel

import (
	"fmt"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// LoopKernels returns the kernels of a lowered module, one per loop.launch
// in the order the functions run them. A launch reads each of its input
// buffers and writes each of its output buffers once,
//
//	loop.launch %x, %w, %z, %y {kernel = "f_k0"} : (memref<4096x8192xbf16, dram>, memref<8192xbf16, dram>, ...) -> ()
//
// with the kernel's `num_inputs` and `num_outputs` saying which operands
// are which, and the bytes of each buffer its elements times its element
// size. A `?` extent is the value the launch passes for it (the trailing
// index operands), evaluated from the function: a `loop.const`, index
// arithmetic, or a `loop.dim` of a buffer whose extent is static, comes
// from a `loop.alloc_dram`, or is a `?` of the function's arguments, which
// is opts.DynamicExtent.
//
// A two-pass row kernel (`schedule = "two-pass"`) reads a full row again in
// every phase that loads it: such a buffer counts once per loop nest of
// the kernel's grid that loads it. Rows of a one-pass kernel stay on chip,
// and smaller operands (weights, per-row values) are read once whatever the
// schedule, as caches keep them.
func LoopKernels(m ir.Module, opts Options) ([]Kernel, error) {
	var out []Kernel
	for _, f := range m.Funcs() {
		ev := &extentEval{opts: opts, memo: map[*ir.Value]int64{}}
		var err error
		f.Walk(func(op *ir.Operation) bool {
			if err != nil {
				return false
			}
			l, ok := loop.AsLaunch(op)
			if !ok {
				return true
			}
			var runs bool
			if runs, err = guardAdmits(l, ev); err != nil || !runs {
				return false // the other form of the kernel runs for these rows
			}
			var k Kernel
			if k, err = launchKernel(l, ev); err == nil {
				k.Func = f.SymName()
				out = append(out, k)
			}
			return false
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// guardAdmits reports whether launch l runs for the extents ev gives.
func guardAdmits(l loop.LaunchOp, ev *extentEval) (bool, error) {
	g, ok := l.Guard()
	if !ok {
		return true, nil
	}
	rows, dyn, err := l.GuardRows(g)
	if err != nil {
		return false, err
	}
	for _, e := range dyn {
		n, err := ev.eval(e)
		if err != nil {
			return false, ir.OpError(l.Operation, "%v", err)
		}
		rows *= n
	}
	return g.Admits(rows), nil
}

// launchKernel accounts one launch.
func launchKernel(l loop.LaunchOp, ev *extentEval) (Kernel, error) {
	kop, ok := loop.LookupKernel(l.Operation, l.Kernel())
	if !ok {
		return Kernel{}, ir.OpError(l.Operation, "refers to kernel '%s', which is not a '%s' of the module", l.Kernel(), loop.OpKernel)
	}
	k := Kernel{Name: kop.SymName(), Kind: kop.Kind(), Loc: kop.Loc, Level: LoopLevel, Parts: max(len(loop.Parts(kop)), 1)}
	if s, ok := kop.Schedule(); ok {
		k.Schedule = s
	}
	nin, nout := int(kop.NumInputs()), int(kop.NumOutputs())
	args := l.Args()
	if nin+nout > len(args) {
		return Kernel{}, ir.OpError(l.Operation, "passes %d operands, but kernel '%s' has %d buffers", len(args), k.Name, nin+nout)
	}
	// The extents follow the buffers, one per `?` in argument order and
	// then dimension order.
	extents := args[nin+nout:]
	next := 0
	accesses := make([]Access, nin+nout)
	for i, v := range args[:nin+nout] {
		shape, bytes, err := shapeBytes(v.Type(), func(int) (int64, error) {
			if next >= len(extents) {
				return 0, fmt.Errorf("passes too few extents for the '?' of its buffers")
			}
			e := extents[next]
			next++
			return ev.eval(e)
		})
		if err != nil {
			return Kernel{}, ir.OpError(l.Operation, "%v", err)
		}
		accesses[i] = Access{Value: v, Type: v.Type(), Shape: shape, Bytes: bytes, Passes: 1}
	}
	if k.Schedule == "two-pass" || k.Schedule == "online" {
		rereads(kop, accesses[:nin])
	}
	untouched(kop, accesses)
	k.Reads, k.Writes = accesses[:nin], accesses[nin:]
	return k, nil
}

// rereads sets the passes of the full-row inputs of a two-pass or online
// kernel: the number of loop nests in its grid that load the buffer,
// where the nests over the chunks of an online kernel (the loop over them
// and the last chunk's loops, which keep the chunk in sram) are one pass.
func rereads(kop loop.KernelOp, inputs []Access) {
	entry := kop.Body().Entry()
	if entry == nil {
		return
	}
	var largest int64
	for _, a := range inputs {
		largest = max(largest, a.Bytes/max(1, a.Type.(ir.MemRefType).Elem.Kind.ByteSize()))
	}
	for i := range inputs {
		a := &inputs[i]
		if a.Bytes/max(1, a.Type.(ir.MemRefType).Elem.Kind.ByteSize()) != largest {
			continue
		}
		arg := entry.Args[i]
		nests := map[*ir.Operation]bool{}
		chunked := false
		for _, u := range arg.Users() {
			if _, ok := loop.AsLoad(u); ok {
				if n := outermostFor(u); n != nil {
					if keepsSram(n) {
						chunked = true
						continue
					}
					nests[n] = true
				}
			}
		}
		a.Passes = int64(len(nests))
		if chunked {
			a.Passes++
		}
		a.Passes = max(1, a.Passes)
	}
}

// untouched sets the passes of a buffer the kernel never loads or stores
// to 0 (the two kernels of a split row both take every buffer of the row
// kernel, and each moves some of them), unless the kernel accesses no
// buffer at all: a body that is only a grid (written by hand) counts its
// buffers once each.
func untouched(kop loop.KernelOp, accesses []Access) {
	entry := kop.Body().Entry()
	if entry == nil {
		return
	}
	used := make([]bool, len(accesses))
	gathered := make([]bool, len(accesses))
	touches := false
	for i := range accesses {
		gathered[i] = true
		for _, u := range entry.Args[i].Users() {
			ld, isLoad := loop.AsLoad(u)
			_, isStore := loop.AsStore(u)
			if isLoad || isStore {
				used[i], touches = true, true
			}
			if !isLoad || !gatherLoad(ld) {
				gathered[i] = false
			}
		}
	}
	for i := range accesses {
		a := &accesses[i]
		switch {
		case touches && !used[i]:
			a.Passes = 0
		case used[i] && gathered[i] && len(a.Shape) > 0:
			// one element of each row, at a gathered column
			a.Bytes /= max(a.Shape[len(a.Shape)-1], 1)
		}
	}
	// a buffer written only at positions loaded from memory (graph.index_copy
	// into a cache) receives one slice per index, not the whole buffer
	for i := range accesses {
		if axis, idx := scattered(entry.Args[i]); axis >= 0 && idx < len(accesses) && axis < len(accesses[i].Shape) {
			a, ix := &accesses[i], accesses[idx]
			n := ix.Bytes / max(1, ix.Type.(ir.MemRefType).Elem.Kind.ByteSize())
			a.Bytes = a.Bytes / max(1, a.Shape[axis]) * min(n, a.Shape[axis])
		}
	}
}

// scattered returns the axis along which every store to buffer arg takes
// its position from a loop.clamp_index of an index loaded from argument
// idx (a graph.index_copy's destination), or -1.
func scattered(arg *ir.Value) (axis, idx int) {
	axis, idx = -1, -1
	for _, u := range arg.Users() {
		st, ok := loop.AsStore(u)
		if !ok {
			return -1, -1
		}
		found := false
		for d, x := range st.Indices() {
			c, ok := loop.AsClampIndex(x.DefiningOp())
			if !ok {
				continue
			}
			ld, ok := loop.AsLoad(c.Operation.Operand(0).DefiningOp())
			if !ok || !ld.Memref().IsBlockArg() || axis >= 0 && (d != axis || ld.Memref().ResultIndex() != idx) {
				return -1, -1
			}
			axis, idx, found = d, ld.Memref().ResultIndex(), true
		}
		if !found {
			return -1, -1
		}
	}
	return axis, idx
}

// gatherLoad reports whether ld reads one element at a column that
// loop.clamp_index computes from an index buffer of one index per row
// (graph.gather's per-row load).
func gatherLoad(ld loop.LoadOp) bool {
	idx := ld.Indices()
	if len(idx) == 0 {
		return false
	}
	c, ok := loop.AsClampIndex(idx[len(idx)-1].DefiningOp())
	if !ok {
		return false
	}
	if _, vec := ld.Output().Type().(ir.VectorType); vec {
		return false
	}
	// the index read is of a buffer with one index per row
	t, isLoad := loop.AsLoad(c.Operation.Operand(0).DefiningOp())
	if !isLoad {
		return false
	}
	m, _ := t.Memref().Type().(ir.MemRefType)
	return len(m.Shape) > 0 && m.Shape[len(m.Shape)-1] == 1
}

// keepsSram reports whether loop nest n stores to an sram buffer.
func keepsSram(n *ir.Operation) bool {
	found := false
	n.Walk(func(op *ir.Operation) bool {
		if st, ok := loop.AsStore(op); ok {
			if m, ok := st.Memref().Type().(ir.MemRefType); ok && m.Space == ir.SRAM {
				found = true
			}
		}
		return !found
	})
	return found
}

// outermostFor returns the outermost loop.for around op inside the
// kernel's grid, or nil.
func outermostFor(op *ir.Operation) *ir.Operation {
	var out *ir.Operation
	for p := op.ParentOp(); p != nil && p.Name() != loop.OpKernel; p = p.ParentOp() {
		if p.Name() == loop.OpFor {
			out = p
		}
	}
	return out
}

// extentEval evaluates index values of a function.
type extentEval struct {
	opts Options
	memo map[*ir.Value]int64
}

func (e *extentEval) eval(v *ir.Value) (int64, error) {
	if n, ok := e.memo[v]; ok {
		return n, nil
	}
	n, err := e.compute(v)
	if err != nil {
		return 0, err
	}
	e.memo[v] = n
	return n, nil
}

func (e *extentEval) compute(v *ir.Value) (int64, error) {
	op := v.DefiningOp()
	if op == nil {
		// an index argument of the function: a run-time size
		return e.opts.dynamic(), nil
	}
	switch op.Name() {
	case loop.OpConst:
		c, _ := loop.AsConst(op)
		return int64(c.Value()), nil
	case loop.OpDim:
		d, _ := loop.AsDim(op)
		return e.dim(d.Memref(), int(d.Axis()))
	case loop.OpAddi, loop.OpSubi, loop.OpMuli, loop.OpDivi, loop.OpRemi, loop.OpMini:
		a, err := e.eval(op.Operand(0))
		if err != nil {
			return 0, err
		}
		b, err := e.eval(op.Operand(1))
		if err != nil {
			return 0, err
		}
		switch op.Name() {
		case loop.OpAddi:
			return a + b, nil
		case loop.OpSubi:
			return a - b, nil
		case loop.OpMuli:
			return a * b, nil
		case loop.OpMini:
			return min(a, b), nil
		}
		if b == 0 {
			return 0, ir.OpError(op, "divides an extent by zero")
		}
		if op.Name() == loop.OpDivi {
			return a / b, nil
		}
		return a % b, nil
	}
	return 0, ir.OpError(op, "computes an extent the cost model cannot evaluate")
}

// dim returns extent axis of buffer m.
func (e *extentEval) dim(m *ir.Value, axis int) (int64, error) {
	t, ok := m.Type().(ir.MemRefType)
	if !ok || axis < 0 || axis >= len(t.Shape) {
		return 0, fmt.Errorf("no extent %d in %s", axis, m.Type())
	}
	if t.Shape[axis] != ir.Dynamic {
		return t.Shape[axis], nil
	}
	op := m.DefiningOp()
	if op == nil {
		return e.opts.dynamic(), nil // a `?` of the function's arguments
	}
	if a, ok := loop.AsAllocDRAM(op); ok {
		k := 0 // the position of this `?` among the buffer's
		for i := 0; i < axis; i++ {
			if t.Shape[i] == ir.Dynamic {
				k++
			}
		}
		if ext := a.Extents(); k < len(ext) {
			return e.eval(ext[k])
		}
	}
	return 0, ir.OpError(op, "defines a buffer whose extents the cost model cannot evaluate")
}
