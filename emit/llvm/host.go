package llvmemit

import (
	"fmt"

	lir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// ---------------------------------------------------------------------------
// Host functions
//
// A lowered func.func
//
//	func.func @f(%x: memref<?x64xf32, dram>, %y: memref<?x64xf32, dram>) attributes {num_results = 1} {
//	  %n = loop.dim %x {axis = 0} : (memref<?x64xf32, dram>) -> index
//	  loop.launch %x, %y, %n, %n {kernel = "f_k0"} : (...) -> ()
//	  return
//	}
//
// becomes `void @f(float* %x, float* %y, i64 %x.d0, i64 %y.d0)`: the
// buffers, inputs then outputs, and then the extent of every `?`
// dimension of theirs in argument and dimension order. A launch stores
// its operands in the kernel's argument record and calls
//
//	tf_parallel_for(@f_k0.task, record, @f_k0.grid(operands...))
//
// loop.alloc_dram places static intermediates in one arena allocated on
// entry (its offsets are those sram-alloc planned) and allocates the
// others on their own; everything is freed before the function returns.

// hostParams are the parameters of a host function: its arguments, then
// one i64 per `?` extent of its buffer arguments.
func hostParams(args []*ir.Value) ([]*lir.Param, error) {
	params, err := kernelParams(args)
	if err != nil {
		return nil, err
	}
	names := paramNames{}
	for _, p := range params {
		names[p.Name()] = true
	}
	for i, a := range args {
		m, ok := a.Type().(ir.MemRefType)
		if !ok {
			continue
		}
		for d, n := range m.Shape {
			if n == ir.Dynamic {
				name := names.unique(fmt.Sprintf("%s.d%d", params[i].Name(), d), len(params))
				params = append(params, lir.NewParam(name, types.I64))
			}
		}
	}
	return params, nil
}

func (me *moduleEmitter) defineHostFunc(f ir.Func) (*lir.Func, error) {
	body := f.Body()
	if body == nil {
		return nil, ir.OpError(f.Operation, "has no body")
	}
	for i, a := range body.Args {
		if _, isTensor := a.Type().(ir.TensorType); isTensor {
			return nil, ir.OpError(f.Operation, "@%s is not lowered to the loop dialect: argument #%d is '%s' (run lower-to-loops first)", f.SymName(), i, a.Type())
		}
	}
	params, err := hostParams(body.Args)
	if err != nil {
		return nil, ir.OpError(f.Operation, "%v", err)
	}
	fn := me.out.NewFunc(me.funcNames[f.SymName()], types.Void, params...)
	nounwind(fn)
	fe := newFnEmitter(me, fn)
	if err := fe.bindArgs(body.Args, params, len(body.Args)); err != nil {
		return nil, ir.OpError(f.Operation, "%v", err)
	}

	// The arena of the static intermediates: sram-alloc records its size;
	// without it, the end of the furthest buffer.
	arenaBytes, _ := ir.AttrAsInt(f.Attr("dram_arena_bytes"))
	for op := body.First(); op != nil; op = op.Next() {
		if a, ok := loop.AsAllocDRAM(op); ok {
			off, hasOff := a.Offset()
			size, hasSize := a.Size()
			if hasOff && hasSize {
				arenaBytes = max(arenaBytes, off+size)
			}
		}
	}
	var frees []value.Value
	var arena value.Value
	if arenaBytes > 0 {
		arena = fe.cur.NewCall(me.allocFunc(), constant.NewInt(types.I64, arenaBytes))
		frees = append(frees, arena)
	}

	for op := body.First(); op != nil; op = op.Next() {
		switch op.Name() {
		case loop.OpLaunch:
			if err := fe.emitLaunch(op); err != nil {
				return nil, err
			}
		case loop.OpAllocDRAM:
			p, owned, err := fe.emitAllocDRAM(op, arena)
			if err != nil {
				return nil, err
			}
			if owned {
				frees = append(frees, p)
			}
		case ir.ReturnOpName, "return":
			if op.NumOperands() > 0 {
				return nil, ir.OpError(op, "returns values; a lowered function writes its results to its output buffers (run lower-to-loops first)")
			}
			for i := len(frees) - 1; i >= 0; i-- {
				fe.cur.NewCall(me.freeFunc(), frees[i])
			}
			fe.cur.NewRet(nil)
		default:
			if op.Dialect() != "loop" {
				return nil, ir.OpError(op, "cannot be translated to LLVM IR: the function is not lowered to the loop dialect (run lower-to-loops first)")
			}
			if err := fe.emitOp(op); err != nil {
				return nil, err
			}
		}
	}
	if fe.cur.Term == nil {
		fe.cur.NewRet(nil)
	}
	fe.finish()
	return fn, nil
}

func (me *moduleEmitter) allocFunc() *lir.Func {
	return me.declare(AllocName, types.I8Ptr, types.I64)
}

func (me *moduleEmitter) freeFunc() *lir.Func {
	return me.declare(FreeName, types.Void, types.I8Ptr)
}

// emitLaunch: `loop.launch %x, %y, %n {kernel = "f_k0"}`.
func (fe *fnEmitter) emitLaunch(op *ir.Operation) error {
	l := loop.LaunchOp{Operation: op}
	kn, ok := fe.me.kernels[l.Kernel()]
	if !ok {
		return ir.OpError(op, "refers to kernel '%s', which is not a 'loop.kernel' of the module", l.Kernel())
	}
	args, err := fe.operands(op)
	if err != nil {
		return err
	}
	if len(args) != len(kn.argTypes) {
		return ir.OpError(op, "passes %d operands, but kernel '%s' takes %d arguments", len(args), l.Kernel(), len(kn.argTypes))
	}
	if g, ok := l.Guard(); ok {
		// a guarded launch runs for the rows its guard admits
		static, dyn, err := l.GuardRows(g)
		if err != nil {
			return err
		}
		var rows value.Value = constant.NewInt(types.I64, static)
		for _, e := range dyn {
			v, err := fe.val(e)
			if err != nil {
				return err
			}
			rows = fe.cur.NewMul(rows, v)
		}
		var cond value.Value = constant.True
		if g.Min > 0 {
			cond = fe.cur.NewICmp(enum.IPredSGE, rows, constant.NewInt(types.I64, g.Min))
		}
		if g.Max >= 0 {
			cond = fe.cur.NewAnd(cond, fe.cur.NewICmp(enum.IPredSLE, rows, constant.NewInt(types.I64, g.Max)))
		}
		then, cont := fe.newBlock("guard", "then"), fe.newBlock("guard", "exit")
		fe.cur.NewCondBr(cond, then, cont)
		fe.cur = then
		defer func() {
			fe.cur.NewBr(cont)
			fe.cur = cont
		}()
	}
	b := fe.cur
	rec := fe.newAlloca(kn.args)
	for i, a := range args {
		if !a.Type().Equal(kn.argTypes[i]) {
			return ir.OpError(op, "operand #%d has type %s, but kernel '%s' takes %s", i, a.Type(), l.Kernel(), kn.argTypes[i])
		}
		p := b.NewGetElementPtr(kn.args, rec, constant.NewInt(types.I32, 0), constant.NewInt(types.I32, int64(i)))
		b.NewStore(a, p)
	}
	n := b.NewCall(kn.grid, args...)
	pf := fe.me.declare(ParallelForName, types.Void, kn.task.Type(), types.I8Ptr, types.I64)
	b.NewCall(pf, kn.task, b.NewBitCast(rec, types.I8Ptr), n)
	return nil
}

// emitAllocDRAM: `%t = loop.alloc_dram {offset = 0, size = 2048} : memref<8x64xf32, dram>`
// is a pointer into the arena; without an offset, or with `?` extents,
// the buffer is allocated (and later freed) on its own.
func (fe *fnEmitter) emitAllocDRAM(op *ir.Operation, arena value.Value) (value.Value, bool, error) {
	a := loop.AllocDRAMOp{Operation: op}
	m, ok := a.Output().Type().(ir.MemRefType)
	if !ok {
		return nil, false, ir.OpError(op, "allocates %s, which is not a buffer", a.Output().Type())
	}
	pt, err := pointerTo(m.Elem.Kind)
	if err != nil {
		return nil, false, ir.OpError(op, "%v", err)
	}
	exts, err := fe.operands(op)
	if err != nil {
		return nil, false, err
	}
	dims := make([]value.Value, len(m.Shape))
	next := 0
	for i, n := range m.Shape {
		if n != ir.Dynamic {
			dims[i] = constant.NewInt(types.I64, n)
			continue
		}
		if next >= len(exts) {
			return nil, false, ir.OpError(op, "has too few extent operands for %s", m)
		}
		dims[i] = exts[next]
		next++
	}
	fe.dims[op.Result(0)] = dims
	b := fe.cur
	off, hasOff := a.Offset()
	_, hasSize := a.Size()
	if hasOff && hasSize && arena != nil && next == 0 {
		p := b.NewBitCast(b.NewGetElementPtr(types.I8, arena, constant.NewInt(types.I64, off)), pt)
		fe.vals[op.Result(0)] = p
		return p, false, nil
	}
	var bytes value.Value = constant.NewInt(types.I64, m.Elem.Kind.ByteSize())
	for _, d := range dims {
		bytes = b.NewMul(bytes, d)
	}
	raw := b.NewCall(fe.me.allocFunc(), bytes)
	fe.vals[op.Result(0)] = b.NewBitCast(raw, pt)
	return raw, true, nil
}

// entryType is the type of an entry point: void (i8**, i64*).
var entryType = types.NewFunc(types.Void, types.NewPointer(types.I8Ptr), types.NewPointer(types.I64))

// defineEntry emits `void @f.entry(i8** %buffers, i64* %extents)`, which
// unpacks the two arrays and calls the host function hf.
func (me *moduleEmitter) defineEntry(f ir.Func, hf *lir.Func) *lir.Func {
	fn := me.out.NewFunc(me.globals.claim(me.funcNames[f.SymName()]+".entry"), types.Void,
		lir.NewParam("buffers", types.NewPointer(types.I8Ptr)), lir.NewParam("extents", types.NewPointer(types.I64)))
	nounwind(fn)
	b := fn.NewBlock("entry")
	nargs := len(f.Body().Args)
	var args []value.Value
	for i, p := range hf.Params {
		if i < nargs {
			slot := b.NewGetElementPtr(types.I8Ptr, fn.Params[0], constant.NewInt(types.I64, int64(i)))
			raw := b.NewLoad(types.I8Ptr, slot)
			if p.Typ.Equal(types.I8Ptr) {
				args = append(args, raw)
			} else if _, isPtr := p.Typ.(*types.PointerType); isPtr {
				args = append(args, b.NewBitCast(raw, p.Typ))
			} else {
				// a scalar argument travels as a pointer to it
				args = append(args, b.NewLoad(p.Typ, b.NewBitCast(raw, types.NewPointer(p.Typ))))
			}
			continue
		}
		slot := b.NewGetElementPtr(types.I64, fn.Params[1], constant.NewInt(types.I64, int64(i-nargs)))
		args = append(args, b.NewLoad(types.I64, slot))
	}
	b.NewCall(hf, args...)
	b.NewRet(nil)
	return fn
}

// entryTable emits the table of entry points and its length.
func (me *moduleEmitter) entryTable(entries []*lir.Func) {
	pt := types.NewPointer(entryType)
	elems := make([]constant.Constant, len(entries))
	for i, e := range entries {
		elems[i] = e
	}
	table := me.out.NewGlobalDef(EntriesName, constant.NewArray(types.NewArray(uint64(len(entries)), pt), elems...))
	table.Immutable = true
	n := me.out.NewGlobalDef(NumEntriesName, constant.NewInt(types.I32, int64(len(entries))))
	n.Immutable = true
}
