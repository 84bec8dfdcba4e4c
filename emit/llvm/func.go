package llvmemit

import (
	"fmt"

	lir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// fnEmitter translates the ops of one LLVM function's worth of loop IR:
// a kernel body, a kernel's iteration count or a host function.
type fnEmitter struct {
	me    *moduleEmitter
	fn    *lir.Func
	entry *lir.Block
	cur   *lir.Block // where the next instruction goes
	// allocas are hoisted into the entry block: an alloca inside a loop
	// would grow the stack every iteration.
	allocas []lir.Instruction
	vals    map[*ir.Value]value.Value
	// dims holds the extents (i64) of every buffer value.
	dims map[*ir.Value][]value.Value
	// yielded are the operands of the loop.yield that ended the last body.
	yielded []value.Value
	// scratchBytes is the kernel's sram_bytes; scratchArr its stack array.
	scratchBytes int64
	scratchArr   value.Value
	blockIDs     map[string]int
	// streamed: the results this kernel writes with non-temporal stores
	// (stream.go); ntStores: whether it wrote one
	streamed map[*ir.Value]bool
	ntStores bool
}

func newFnEmitter(me *moduleEmitter, fn *lir.Func) *fnEmitter {
	fe := &fnEmitter{
		me:       me,
		fn:       fn,
		vals:     map[*ir.Value]value.Value{},
		dims:     map[*ir.Value][]value.Value{},
		blockIDs: map[string]int{},
	}
	fe.entry = fn.NewBlock("entry")
	fe.cur = fe.entry
	return fe
}

// newBlock appends a block named like `for2.header`: kind numbered per
// function, then its part.
func (fe *fnEmitter) newBlock(kind, part string) *lir.Block {
	key := kind + "/" + part
	fe.blockIDs[key]++
	return fe.fn.NewBlock(fmt.Sprintf("%s%d.%s", kind, fe.blockIDs[key], part))
}

// newAlloca allocates t in the entry block, 64-byte aligned.
func (fe *fnEmitter) newAlloca(t types.Type) value.Value {
	a := lir.NewAlloca(t)
	a.Align = 64
	fe.allocas = append(fe.allocas, a)
	return a
}

// scratch returns the kernel's scratchpad array as an i8*.
func (fe *fnEmitter) scratch(bytes int64) value.Value {
	if fe.scratchArr == nil {
		arr := fe.newAlloca(types.NewArray(uint64(bytes), types.I8))
		cast := lir.NewBitCast(arr, types.I8Ptr)
		fe.allocas = append(fe.allocas, cast)
		fe.scratchArr = cast
	}
	return fe.scratchArr
}

// finish puts the hoisted allocas at the top of the entry block.
func (fe *fnEmitter) finish() {
	if len(fe.allocas) > 0 {
		fe.entry.Insts = append(append([]lir.Instruction(nil), fe.allocas...), fe.entry.Insts...)
	}
}

// val returns the LLVM value of an IR value already translated.
func (fe *fnEmitter) val(v *ir.Value) (value.Value, error) {
	if lv, ok := fe.vals[v]; ok {
		return lv, nil
	}
	if def := v.DefiningOp(); def != nil {
		return nil, ir.OpError(def, "result used before it is translated")
	}
	return nil, fmt.Errorf("value %s is not defined in this function", v)
}

// emitOp translates one op at the current block.
func (fe *fnEmitter) emitOp(op *ir.Operation) error {
	switch op.Name() {
	case loop.OpConst:
		return fe.emitConst(op)
	case loop.OpBroadcast:
		return fe.emitBroadcast(op)
	case loop.OpReduce:
		return fe.emitReduce(op)
	case loop.OpTranspose:
		return fe.emitTranspose(op)
	case loop.OpAddi, loop.OpSubi, loop.OpMuli, loop.OpDivi, loop.OpRemi, loop.OpMini:
		return fe.emitIndexArith(op)
	case loop.OpClampIndex:
		return fe.emitClampIndex(op)
	case loop.OpDim:
		return fe.emitDim(op)
	case loop.OpLoad:
		return fe.emitLoad(op)
	case loop.OpStore:
		return fe.emitStore(op)
	case loop.OpAlloc:
		return fe.emitAlloc(op)
	case loop.OpFor:
		return fe.emitFor(op)
	case loop.OpCmp:
		return fe.emitCmp(op)
	case loop.OpSelect:
		return fe.emitSelect(op)
	case loop.OpCast:
		return fe.emitCast(op)
	case loop.OpFma:
		return fe.emitFma(op)
	}
	if unaryOps[op.Name()] {
		return fe.emitUnary(op)
	}
	if binaryOps[op.Name()] {
		return fe.emitBinary(op)
	}
	return ir.OpError(op, "cannot be translated to LLVM IR here")
}
