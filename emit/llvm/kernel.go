package llvmemit

import (
	"fmt"

	lir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/metadata"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// ---------------------------------------------------------------------------
// Kernels
//
// A loop.kernel
//
//	loop.kernel {sym_name = "f_k0", ...} {
//	^bb0(%x: memref<?x64xf32, dram>, %y: memref<?x64xf32, dram>, %n0: index, %n1: index):
//	  ...
//	  loop.parallel %c0, %rows, %c1 {dist = "grid"} { ^bb0(%r: index): ... }
//	  loop.return
//	}
//
// becomes three LLVM functions:
//
//	void @f_k0(float* %x, float* %y, i64 %n0, i64 %n1, i64 %row_begin, i64 %row_end)
//	i64  @f_k0.grid(float* %x, float* %y, i64 %n0, i64 %n1)
//	void @f_k0.task(i8* %ctx, i64 %begin, i64 %end)
//
// @f_k0 runs the iterations [row_begin, row_end) of the grid, the k-th
// iteration with %r = lower + k * step, so the host can hand each thread a
// range of rows. @f_k0.grid returns the number of iterations. @f_k0.task
// unpacks an argument record `%f_k0.args = type { float*, float*, i64, i64 }`
// and calls @f_k0: it is what the runtime's tf_parallel_for runs on every
// thread. `loop.for` loops become loops of phi nodes; with dist =
// "threads" they run on the vector lanes of the one CPU thread that runs
// the iteration, so combining over threads is the identity.

// kernel is the LLVM side of one loop.kernel.
type kernel struct {
	op loop.KernelOp
	fn *lir.Func // the row-range body
	// fnNT is the row-range body with the results of streamed written by
	// non-temporal stores, its buffer pointers declared 64-byte aligned:
	// the task calls it when they are (stream.go); nil when none streams
	fnNT     *lir.Func
	streamed map[*ir.Value]bool
	grid     *lir.Func // the iteration count
	task     *lir.Func // the tf_parallel_for callback
	args     types.Type
	argTypes []types.Type
}

// kernelParams maps the block arguments of a kernel (or func) to LLVM
// parameter types: buffers become pointers to their element type, index
// arguments i64.
func kernelParams(args []*ir.Value) ([]*lir.Param, error) {
	ps := make([]*lir.Param, len(args))
	// the row range parameters of a kernel come after these
	names := paramNames{"row_begin": true, "row_end": true}
	for i, a := range args {
		var t types.Type
		switch at := a.Type().(type) {
		case ir.MemRefType:
			pt, err := pointerTo(at.Elem.Kind)
			if err != nil {
				return nil, err
			}
			t = pt
		default:
			vt, err := valueType(at)
			if err != nil {
				return nil, err
			}
			t = vt
		}
		ps[i] = lir.NewParam(names.unique(a.Name, i), t)
	}
	return ps, nil
}

// paramNames hands out distinct parameter names: the IR's value names
// where they are free (made names LLVM reads, see llvmIdent), `arg<i>`
// otherwise.
type paramNames map[string]bool

func (pn paramNames) unique(name string, i int) string {
	if name != "" {
		name = llvmIdent(name)
	}
	if name == "" || pn[name] {
		name = fmt.Sprintf("arg%d", i)
	}
	for pn[name] {
		name += "_"
	}
	pn[name] = true
	return name
}

func (me *moduleEmitter) declareKernel(k loop.KernelOp) error {
	name := k.SymName()
	if _, dup := me.kernels[name]; dup {
		return ir.OpError(k.Operation, "kernel '%s' is defined twice", name)
	}
	body := k.Body().Entry()
	if body == nil {
		return ir.OpError(k.Operation, "kernel '%s' has no body", name)
	}
	params, err := kernelParams(body.Args)
	if err != nil {
		return ir.OpError(k.Operation, "%v", err)
	}
	kn := &kernel{op: k}
	irName := name
	name = me.globals.claim(name, ".grid", ".args", ".task", ".nt")
	for _, p := range params {
		kn.argTypes = append(kn.argTypes, p.Typ)
	}
	all := append(append([]*lir.Param(nil), params...),
		lir.NewParam("row_begin", types.I64), lir.NewParam("row_end", types.I64))
	kn.fn = me.out.NewFunc(name, types.Void, all...)
	nounwind(kn.fn)
	if kn.streamed = streamedBuffers(k); kn.streamed != nil {
		ntParams, _ := kernelParams(body.Args)
		for _, p := range ntParams {
			if _, ok := p.Typ.(*types.PointerType); ok {
				p.Attrs = append(p.Attrs, lir.Align(64))
			}
		}
		ntParams = append(ntParams, lir.NewParam("row_begin", types.I64), lir.NewParam("row_end", types.I64))
		kn.fnNT = me.out.NewFunc(name+".nt", types.Void, ntParams...)
		nounwind(kn.fnNT)
	}

	gparams, _ := kernelParams(body.Args)
	kn.grid = me.out.NewFunc(name+".grid", types.I64, gparams...)
	nounwind(kn.grid)

	kn.args = me.out.NewTypeDef(name+".args", types.NewStruct(kn.argTypes...))
	kn.task = me.out.NewFunc(name+".task", types.Void,
		lir.NewParam("ctx", types.I8Ptr), lir.NewParam("begin", types.I64), lir.NewParam("end", types.I64))
	nounwind(kn.task)
	me.kernels[irName] = kn
	return nil
}

func (me *moduleEmitter) defineKernel(k loop.KernelOp) error {
	kn := me.kernels[k.SymName()]
	body := k.Body().Entry()
	parts := loop.Parts(k)
	if len(parts) == 0 {
		return ir.OpError(k.Operation, "has no 'loop.parallel' launch grid")
	}

	// The row-range body. A kernel of several parts runs the iterations
	// [row_begin, row_end) of their grids one after the other: part p
	// those of [row_begin - off_p, row_end - off_p) within its own count
	// n_p, off_p the counts of the parts before it.
	nbuf := int(k.NumInputs() + k.NumOutputs())
	if err := me.defineRowRange(k, kn.fn, nil); err != nil {
		return err
	}
	if kn.fnNT != nil {
		if err := me.defineRowRange(k, kn.fnNT, kn.streamed); err != nil {
			return err
		}
	}

	// The iteration count: the sum over the parts of ceil((upper - lower) / step), at least 0.
	ge := newFnEmitter(me, kn.grid)
	if err := ge.bindArgs(body.Args, kn.grid.Params, nbuf); err != nil {
		return ir.OpError(k.Operation, "%v", err)
	}
	if err := ge.prologue(body); err != nil {
		return err
	}
	var total value.Value
	for _, p := range parts {
		n, err := ge.gridCount(p)
		if err != nil {
			return err
		}
		if total == nil {
			total = n
		} else {
			total = ge.cur.NewAdd(total, n)
		}
	}
	ge.cur.NewRet(total)
	ge.finish()

	// The task: unpack the record, call the body (the streaming one when
	// every buffer is 64-byte aligned).
	tb := kn.task.NewBlock("entry")
	rec := tb.NewBitCast(kn.task.Params[0], types.NewPointer(kn.args))
	var args []value.Value
	var bits value.Value = constant.NewInt(types.I64, 0)
	for i, t := range kn.argTypes {
		p := tb.NewGetElementPtr(kn.args, rec, constant.NewInt(types.I32, 0), constant.NewInt(types.I32, int64(i)))
		a := tb.NewLoad(t, p)
		args = append(args, a)
		if _, ok := t.(*types.PointerType); ok && kn.fnNT != nil {
			bits = tb.NewOr(bits, tb.NewPtrToInt(a, types.I64))
		}
	}
	args = append(args, kn.task.Params[1], kn.task.Params[2])
	if kn.fnNT == nil {
		tb.NewCall(kn.fn, args...)
		tb.NewRet(nil)
		return nil
	}
	aligned := tb.NewICmp(enum.IPredEQ, tb.NewAnd(bits, constant.NewInt(types.I64, 63)), constant.NewInt(types.I64, 0))
	nt, plain := kn.task.NewBlock("streamed"), kn.task.NewBlock("plain")
	tb.NewCondBr(aligned, nt, plain)
	nt.NewCall(kn.fnNT, args...)
	nt.NewRet(nil)
	plain.NewCall(kn.fn, args...)
	plain.NewRet(nil)
	return nil
}

// defineRowRange emits the row-range body of kernel k into fn: its grids
// over the rows [row_begin, row_end) (the last two parameters), the
// results of streamed written with non-temporal stores.
func (me *moduleEmitter) defineRowRange(k loop.KernelOp, fn *lir.Func, streamed map[*ir.Value]bool) error {
	body := k.Body().Entry()
	parts := loop.Parts(k)
	nbuf := int(k.NumInputs() + k.NumOutputs())
	fe := newFnEmitter(me, fn)
	if s, ok := k.SramBytes(); ok {
		fe.scratchBytes = s
	}
	fe.streamed = streamed
	if err := fe.bindArgs(body.Args, fn.Params, nbuf); err != nil {
		return ir.OpError(k.Operation, "%v", err)
	}
	if err := fe.prologue(body); err != nil {
		return err
	}
	begin, end := fn.Params[len(fn.Params)-2], fn.Params[len(fn.Params)-1]
	if p := planMatMul(k); p != nil {
		if err := fe.emitMatMulGrid(p, begin, end); err != nil {
			return err
		}
	} else if len(parts) == 1 {
		if err := fe.emitGrid(parts[0], begin, end); err != nil {
			return err
		}
	} else {
		var off value.Value = constant.NewInt(types.I64, 0)
		for _, p := range parts {
			n, err := fe.gridCount(p)
			if err != nil {
				return err
			}
			lo := fe.clampRange(fe.cur.NewSub(begin, off), n)
			hi := fe.clampRange(fe.cur.NewSub(end, off), n)
			if err := fe.emitGrid(p, lo, hi); err != nil {
				return err
			}
			off = fe.cur.NewAdd(off, n)
		}
	}
	if fe.ntStores {
		// non-temporal stores are weakly ordered: done before the rows
		// are reported finished
		fe.cur.NewFence(enum.AtomicOrderingSequentiallyConsistent)
	}
	fe.cur.NewRet(nil)
	fe.finish()
	return nil
}

// prologue emits the ops of a kernel body outside its grids: constants
// and index arithmetic (the verifier allows only pure ops there).
func (fe *fnEmitter) prologue(body *ir.Block) error {
	for op := body.First(); op != nil; op = op.Next() {
		if op.Name() == loop.OpParallel || op.Name() == loop.OpReturn {
			continue
		}
		if err := fe.emitOp(op); err != nil {
			return err
		}
	}
	return nil
}

// gridCount returns the iterations of grid p: ceil((upper - lower) /
// step), at least 0.
func (fe *fnEmitter) gridCount(p loop.ParallelOp) (value.Value, error) {
	lb, ub, step, err := fe.bounds(p.Operation)
	if err != nil {
		return nil, err
	}
	b := fe.cur
	n := ub
	if !isConstInt(lb, 0) {
		n = b.NewSub(ub, lb)
	}
	if !isConstInt(step, 1) {
		n = b.NewSDiv(b.NewAdd(n, b.NewSub(step, constant.NewInt(types.I64, 1))), step)
	}
	pos := b.NewICmp(enum.IPredSGT, n, constant.NewInt(types.I64, 0))
	return b.NewSelect(pos, n, constant.NewInt(types.I64, 0)), nil
}

// clampRange returns x clamped to [0, n].
func (fe *fnEmitter) clampRange(x, n value.Value) value.Value {
	b := fe.cur
	zero := constant.NewInt(types.I64, 0)
	x = b.NewSelect(b.NewICmp(enum.IPredSLT, x, zero), zero, x)
	return b.NewSelect(b.NewICmp(enum.IPredSGT, x, n), n, x)
}

// bounds returns the lower bound, upper bound and step of a loop.
func (fe *fnEmitter) bounds(op *ir.Operation) (lb, ub, step value.Value, err error) {
	vs := make([]value.Value, 3)
	for i := range vs {
		if vs[i], err = fe.val(op.Operand(i)); err != nil {
			return nil, nil, nil, err
		}
	}
	return vs[0], vs[1], vs[2], nil
}

// emitGrid emits the iterations [begin, end) of the launch grid:
//
//	grid.header: %k = phi [begin], [%k.next]; br (%k < end) ...
//	grid.body:   %r = lower + %k * step; ...; %k.next = %k + 1
func (fe *fnEmitter) emitGrid(p loop.ParallelOp, begin, end value.Value) error {
	lb, _, step, err := fe.bounds(p.Operation)
	if err != nil {
		return err
	}
	body := p.Body().Entry()
	if body == nil || len(body.Args) != 1 {
		return ir.OpError(p.Operation, "expects a body with one induction variable")
	}
	header := fe.newBlock("grid", "header")
	bodyB := fe.newBlock("grid", "body")
	pre := fe.cur
	pre.NewBr(header)

	k := header.NewPhi(lir.NewIncoming(begin, pre))
	more := header.NewICmp(enum.IPredSLT, k, end)

	fe.cur = bodyB
	iv := value.Value(k)
	if !isConstInt(step, 1) {
		iv = bodyB.NewMul(k, step)
	}
	if !isConstInt(lb, 0) {
		iv = bodyB.NewAdd(lb, iv)
	}
	fe.vals[body.Args[0]] = iv
	if err := fe.emitBody(body); err != nil {
		return err
	}
	next := fe.cur.NewAdd(k, constant.NewInt(types.I64, 1))
	k.Incs = append(k.Incs, lir.NewIncoming(next, fe.cur))
	fe.cur.NewBr(header)
	// the exit block comes after the body's blocks in the text
	exit := fe.newBlock("grid", "exit")
	header.NewCondBr(more, bodyB, exit)
	fe.cur = exit
	return nil
}

// emitBody emits the ops of a loop body up to its loop.yield, whose
// operands it leaves in fe.yielded for the loop to wire into its phis.
func (fe *fnEmitter) emitBody(b *ir.Block) error {
	for op := b.First(); op != nil; op = op.Next() {
		if op.Name() == loop.OpYield {
			vs := make([]value.Value, op.NumOperands())
			for i := range vs {
				v, err := fe.val(op.Operand(i))
				if err != nil {
					return err
				}
				vs[i] = v
			}
			fe.yielded = vs
			return nil
		}
		if err := fe.emitOp(op); err != nil {
			return err
		}
	}
	return ir.OpError(b.ParentOp(), "expects its body to end in 'loop.yield'")
}

// emitFor emits a loop.for as a loop of phi nodes:
//
//	for.header: %i = phi [lower], [%i.next]; %acc = phi [init], [yielded]
//	            br (%i < upper) for.body, for.exit
//	for.body:   ...; %i.next = %i + step
//	for.exit:   the results are the phis
//
// With dist = "threads" the loop runs on one CPU thread, the instance's
// only one, so `combine` leaves its results as they are.
func (fe *fnEmitter) emitFor(op *ir.Operation) error {
	lb, ub, step, err := fe.bounds(op)
	if err != nil {
		return err
	}
	body := op.Region(0).Entry()
	if body == nil || len(body.Args) != op.NumOperands()-2 {
		return ir.OpError(op, "expects a body with the induction variable and one argument per init")
	}
	header := fe.newBlock("for", "header")
	bodyB := fe.newBlock("for", "body")
	pre := fe.cur
	pre.NewBr(header)

	iv := header.NewPhi(lir.NewIncoming(lb, pre))
	fe.vals[body.Args[0]] = iv
	accs := make([]*lir.InstPhi, op.NumOperands()-3)
	for i := range accs {
		init, err := fe.val(op.Operand(3 + i))
		if err != nil {
			return err
		}
		accs[i] = header.NewPhi(lir.NewIncoming(init, pre))
		fe.vals[body.Args[1+i]] = accs[i]
	}
	more := header.NewICmp(enum.IPredSLT, iv, ub)

	fe.cur = bodyB
	if err := fe.emitBody(body); err != nil {
		return err
	}
	if len(fe.yielded) != len(accs) {
		return ir.OpError(op, "yields %d values for %d carried values", len(fe.yielded), len(accs))
	}
	latch := fe.cur
	for i, a := range accs {
		a.Incs = append(a.Incs, lir.NewIncoming(fe.yielded[i], latch))
	}
	iv.Incs = append(iv.Incs, lir.NewIncoming(latch.NewAdd(iv, step), latch))
	latch.NewBr(header)
	exit := fe.newBlock("for", "exit")
	header.NewCondBr(more, bodyB, exit)
	fe.cur = exit
	for i, a := range accs {
		fe.vals[op.Result(i)] = a
	}
	return nil
}

// ---------------------------------------------------------------------------
// Memory

// bindArgs maps the block arguments of a kernel or func to the LLVM
// parameters and records every buffer's extents: static ones as
// constants, each `?` as the next parameter from params[extStart] on (the
// index arguments after a kernel's buffers, the extent parameters after a
// host function's arguments).
func (fe *fnEmitter) bindArgs(args []*ir.Value, params []*lir.Param, extStart int) error {
	var bufs []*ir.Value
	for i, a := range args {
		fe.vals[a] = params[i]
		if _, ok := a.Type().(ir.MemRefType); ok {
			bufs = append(bufs, a)
		}
	}
	next := extStart
	for _, b := range bufs {
		m := b.Type().(ir.MemRefType)
		dims := make([]value.Value, len(m.Shape))
		for d, n := range m.Shape {
			if n != ir.Dynamic {
				dims[d] = constant.NewInt(types.I64, n)
				continue
			}
			if next >= len(params) {
				return fmt.Errorf("too few extent arguments for the dynamic dimensions of its buffers")
			}
			dims[d] = params[next]
			next++
		}
		fe.dims[b] = dims
	}
	return nil
}

// address returns a pointer to the element a load or store at indices
// reaches, as a pointer to the accessed type (a vector for vector access).
func (fe *fnEmitter) address(op *ir.Operation, mem *ir.Value, indices []*ir.Value, access types.Type) (value.Value, error) {
	base, err := fe.val(mem)
	if err != nil {
		return nil, err
	}
	m, ok := mem.Type().(ir.MemRefType)
	if !ok {
		return nil, ir.OpError(op, "accesses %s, which is not a buffer", mem.Type())
	}
	dims, ok := fe.dims[mem]
	if !ok || len(dims) != len(indices) {
		return nil, ir.OpError(op, "has %d indices for a buffer of rank %d", len(indices), len(m.Shape))
	}
	b := fe.cur
	var lin value.Value = constant.NewInt(types.I64, 0)
	for d, ix := range indices {
		iv, err := fe.val(ix)
		if err != nil {
			return nil, err
		}
		if d == 0 {
			lin = iv
			continue
		}
		lin = b.NewAdd(b.NewMul(lin, dims[d]), iv)
	}
	mt, _ := memType(m.Elem.Kind)
	var p value.Value = base
	if !isConstInt(lin, 0) {
		p = b.NewGetElementPtr(mt, base, lin)
	}
	if _, isVec := access.(*types.VectorType); isVec {
		p = b.NewBitCast(p, types.NewPointer(access))
	}
	return p, nil
}

// emitLoad: `%v = loop.load %x, %r, %i : (memref<?x64xbf16, dram>, index, index) -> vector<8xbf16>`
// is `load <8 x i16>, <8 x i16>* %p, align 2`. i1 is a byte in memory.
func (fe *fnEmitter) emitLoad(op *ir.Operation) error {
	l := loop.LoadOp{Operation: op}
	rt := l.Output().Type()
	k := elemKind(rt)
	mt, _ := memType(k)
	access := shaped(lanes(rt), mt)
	var v value.Value
	if _, strided := l.Axis(); strided {
		var err error
		if v, err = fe.stridedLoad(l, mt, access); err != nil {
			return err
		}
	} else {
		p, err := fe.address(op, l.Memref(), l.Indices(), access)
		if err != nil {
			return err
		}
		ld := fe.cur.NewLoad(access, p)
		ld.Align = lir.Align(k.ByteSize())
		v = ld
	}
	if k == ir.I1 {
		v = fe.cur.NewICmp(enum.IPredNE, v, iconst(access, 0))
	}
	fe.vals[op.Result(0)] = v
	return nil
}

// stridedLoad is a vector load l whose lanes run along dimension `axis`
// of its buffer, not the last: a scalar load per lane, a row of the buffer
// apart, put together with insertelement (LLVM keeps them apart: x86 has
// no gather of 16-bit elements, and the lanes of a transposed read lie in
// different cache lines anyway).
//
//	%p1 = getelementptr i16, i16* %p, i64 %stride
//	%e1 = load i16, i16* %p1, align 2
//	%v1 = insertelement <16 x i16> %v0, i16 %e1, i64 1
func (fe *fnEmitter) stridedLoad(l loop.LoadOp, mt types.Type, access types.Type) (value.Value, error) {
	axis, err := loop.LoadAxis(l)
	if err != nil {
		return nil, err
	}
	lane, err := fe.laneAddresses(l.Operation, l.Memref(), l.Indices(), axis, mt)
	if err != nil {
		return nil, err
	}
	b := fe.cur
	align := lir.Align(elemKind(l.Output().Type()).ByteSize())
	var v value.Value = constant.NewUndef(access.(*types.VectorType))
	for i := range lanes(l.Output().Type()) {
		e := b.NewLoad(mt, lane(i))
		e.Align = align
		v = b.NewInsertElement(v, e, constant.NewInt(types.I64, int64(i)))
	}
	return v, nil
}

// stridedStore is stridedLoad's store: each lane of v (in memory's
// type mt) extracted and stored at its own address.
func (fe *fnEmitter) stridedStore(s loop.StoreOp, v value.Value, mt types.Type) error {
	axis, err := loop.StoreAxis(s)
	if err != nil {
		return err
	}
	lane, err := fe.laneAddresses(s.Operation, s.Memref(), s.Indices(), axis, mt)
	if err != nil {
		return err
	}
	b := fe.cur
	align := lir.Align(elemKind(s.Value().Type()).ByteSize())
	for i := range lanes(s.Value().Type()) {
		e := b.NewExtractElement(v, constant.NewInt(types.I64, int64(i)))
		st := b.NewStore(e, lane(i))
		st.Align = align
	}
	return nil
}

// laneAddresses gives the address of each lane of an access to mem at
// indices whose lanes run along dimension axis: the first lane's, then
// one step of that index apart (the address of lane i built where it is
// asked for).
func (fe *fnEmitter) laneAddresses(op *ir.Operation, mem *ir.Value, indices []*ir.Value, axis int, mt types.Type) (func(i int) value.Value, error) {
	p, err := fe.address(op, mem, indices, mt)
	if err != nil {
		return nil, err
	}
	b := fe.cur
	var stride value.Value = constant.NewInt(types.I64, 1)
	for _, e := range fe.dims[mem][axis+1:] {
		if isConstInt(stride, 1) {
			stride = e
		} else {
			stride = b.NewMul(stride, e)
		}
	}
	return func(i int) value.Value {
		if i == 0 {
			return p
		}
		var at value.Value
		if c, ok := stride.(*constant.Int); ok {
			at = constant.NewInt(types.I64, c.X.Int64()*int64(i))
		} else {
			at = b.NewMul(stride, constant.NewInt(types.I64, int64(i)))
		}
		return b.NewGetElementPtr(mt, p, at)
	}, nil
}

// emitStore: `loop.store %v, %y, %r, %i` is `store <8 x i16> %v, <8 x i16>* %p, align 2`.
func (fe *fnEmitter) emitStore(op *ir.Operation) error {
	s := loop.StoreOp{Operation: op}
	vt := s.Value().Type()
	k := elemKind(vt)
	mt, _ := memType(k)
	access := shaped(lanes(vt), mt)
	p, err := fe.address(op, s.Memref(), s.Indices(), access)
	if err != nil {
		return err
	}
	v, err := fe.val(s.Value())
	if err != nil {
		return err
	}
	if k == ir.I1 {
		v = fe.cur.NewZExt(v, access)
	}
	if _, strided := s.Axis(); strided {
		return fe.stridedStore(s, v, mt)
	}
	st := fe.cur.NewStore(v, p)
	st.Align = lir.Align(k.ByteSize())
	if fe.streamed[s.Memref()] && lanes(vt) > 1 {
		st.Metadata = append(st.Metadata, &metadata.Attachment{Name: "nontemporal", Node: fe.me.nontemporal()})
		fe.ntStores = true
	}
	return nil
}

// emitAlloc: `%buf = loop.alloc {offset = 0} : memref<64xf32, sram>` is a
// slice of the instance's scratchpad, a stack array of the kernel's
// sram_bytes allocated once per thread in the entry block. An alloc
// without an offset (sram-alloc has not run) gets an array of its own.
func (fe *fnEmitter) emitAlloc(op *ir.Operation) error {
	a := loop.AllocOp{Operation: op}
	m, ok := a.Output().Type().(ir.MemRefType)
	if !ok {
		return ir.OpError(op, "allocates %s, which is not a buffer", a.Output().Type())
	}
	size, ok := ir.ByteSizeOf(m)
	if !ok {
		return ir.OpError(op, "allocates %s, which has no static size", m)
	}
	mt, ok := memType(m.Elem.Kind)
	if !ok {
		return ir.OpError(op, "cannot store elements of type '%s'", m.Elem)
	}
	var p value.Value
	if off, hasOff := a.Offset(); hasOff && fe.scratchBytes > 0 && off+size <= fe.scratchBytes {
		raw := fe.scratch(fe.scratchBytes)
		b := fe.cur
		q := b.NewGetElementPtr(types.I8, raw, constant.NewInt(types.I64, off))
		p = b.NewBitCast(q, types.NewPointer(mt))
	} else {
		arr := fe.newAlloca(types.NewArray(uint64(max(size, 1)), types.I8))
		p = fe.cur.NewBitCast(arr, types.NewPointer(mt))
	}
	fe.vals[op.Result(0)] = p
	dims := make([]value.Value, len(m.Shape))
	for i, n := range m.Shape {
		dims[i] = constant.NewInt(types.I64, n)
	}
	fe.dims[op.Result(0)] = dims
	return nil
}

// emitDim: `%n = loop.dim %x {axis = 0}` is the extent recorded for %x.
func (fe *fnEmitter) emitDim(op *ir.Operation) error {
	d := loop.DimOp{Operation: op}
	dims, ok := fe.dims[d.Memref()]
	if !ok {
		return ir.OpError(op, "takes the extent of a value that is not a buffer")
	}
	ax := d.Axis()
	if ax < 0 || ax >= int64(len(dims)) {
		return ir.OpError(op, "axis %d is out of range for %s", ax, d.Memref().Type())
	}
	fe.vals[op.Result(0)] = dims[ax]
	return nil
}
