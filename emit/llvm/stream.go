package llvmemit

import (
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/metadata"
	"github.com/llir/llvm/ir/types"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// Streamed results. A store into memory that is not in the cache first
// reads the line it writes (read for ownership): a kernel that writes a
// result far larger than the caches moves its bytes twice. A result the
// kernel writes and never reads, of at least ntMinBytes, is written with
// non-temporal stores (`store ..., !nontemporal !0`), and the row-range
// function ends with a fence, so that the stores are done before the
// thread pool reports the rows finished. On the 2-core development
// machine, add + RMSNorm in f32 over 1024 x 8192 written that way by hand
// ran at 81-88 GB/s against 63-65 with ordinary stores (its second result;
// the first is read again by the kernel, from the cache).
//
// The stores are in a second row-range function (`<kernel>.nt`) whose
// buffer pointers are declared 64-byte aligned, so that LLVM proves the
// vector stores aligned and writes them whole (vmovntps); the task calls
// it when every buffer is aligned (the runtime's own buffers always are),
// else the ordinary one: unaligned, a non-temporal vector store is cut
// into 8-byte pieces, an instruction or two each.
//
// Kept to ordinary stores: a result of a kernel that walks tiles (it reads
// or writes a transposed operand: strided accesses, loop.transpose); a
// result the kernel reads (the cached schedule
// reads its rows back); one of run-time or smaller size, which the caller
// may still find in the cache; and every result of a kernel that computes
// a transcendental function, a root or a division on its vectors, which is
// bound by arithmetic here, not by memory (RMSNorm -> SiLU -> Mul in bf16
// ran some 5% slower streamed: median of 30 runs, three alternating pairs).
const ntMinBytes = 8 << 20

// heavyOps are the vector ops that make a kernel bound by arithmetic.
var heavyOps = map[string]bool{
	loop.OpExp: true, loop.OpExp2: true, loop.OpLog: true, loop.OpLog2: true, loop.OpLog1p: true,
	loop.OpExpm1: true, loop.OpTanh: true, loop.OpSigmoid: true, loop.OpSilu: true, loop.OpGelu: true,
	loop.OpSin: true, loop.OpCos: true, loop.OpPow: true, loop.OpDiv: true, loop.OpReciprocal: true,
	loop.OpSqrt: true, loop.OpRsqrt: true,
}

// streamedBuffers returns the results of k that it writes with
// non-temporal stores: buffers of at least ntMinBytes among its outputs
// that it only stores into (and asks the extents of), in a kernel with no
// heavy vector op.
func streamedBuffers(k loop.KernelOp) map[*ir.Value]bool {
	body := k.Body().Entry()
	nin, nbuf := int(k.NumInputs()), int(k.NumInputs()+k.NumOutputs())
	out := map[*ir.Value]bool{}
	for _, a := range body.Args[nin:min(nbuf, len(body.Args))] {
		m, ok := a.Type().(ir.MemRefType)
		if !ok {
			continue
		}
		if size, ok := ir.ByteSizeOf(m); ok && size >= ntMinBytes {
			out[a] = true
		}
	}
	if len(out) == 0 {
		return nil
	}
	heavy, tiled := false, false
	vectorStored := map[*ir.Value]bool{}
	k.Operation.Walk(func(op *ir.Operation) bool {
		if op.Name() == loop.OpTranspose || op.Name() == loop.OpLoad && op.Attr("axis") != nil || op.Name() == loop.OpStore && op.Attr("axis") != nil {
			// a tile walk (a transposed operand): its rows store a few
			// vectors each, scattered over lines that other rows of the
			// tile fill; non-temporal stores of part lines thrash the
			// write-combining buffers (a [4096, 4096] bf16 transpose took
			// 38 ms streamed)
			tiled = true
		}
		if heavyOps[op.Name()] && op.NumResults() == 1 {
			if _, vec := op.Result(0).Type().(ir.VectorType); vec {
				heavy = true
			}
		}
		if op.Name() == loop.OpStore {
			if _, vec := op.Operand(0).Type().(ir.VectorType); vec {
				vectorStored[op.Operand(1)] = true
			}
		}
		for i, v := range op.Operands() {
			if !out[v] || op.Name() == loop.OpDim || op.Name() == loop.OpStore && i == 1 {
				continue
			}
			delete(out, v)
		}
		return true
	})
	// only vector stores stream (emitStore): a result stored element by
	// element (a matmul's epilogue) has nothing to gain from a second body
	for v := range out {
		if !vectorStored[v] {
			delete(out, v)
		}
	}
	if heavy || tiled || len(out) == 0 {
		return nil
	}
	return out
}

// nontemporal is the module's `!{i32 1}`, the node of a !nontemporal
// attachment.
func (me *moduleEmitter) nontemporal() *metadata.Tuple {
	if me.ntNode == nil {
		me.ntNode = &metadata.Tuple{
			MetadataID: metadata.MetadataID(len(me.out.MetadataDefs)),
			Fields:     []metadata.Field{constant.NewInt(types.I32, 1)},
		}
		me.out.MetadataDefs = append(me.out.MetadataDefs, me.ntNode)
	}
	return me.ntNode
}
