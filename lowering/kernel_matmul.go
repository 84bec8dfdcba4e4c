package lowering

import (
	"slices"

	"github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/passes"
)

// This file builds matmul kernels (passes/matmul.go): one program
// instance per output row [batch..., m], a serial loop over the columns
// n, and at each element the dot product of each matmul, a serial loop
// over K in order, followed by the element-wise epilogue:
//
//	loop.kernel {kind = "matmul", ...} {
//	^bb0(%x: memref<?x64xbf16, dram>, %w: memref<32x64xbf16, dram>, %b: memref<32xbf16, dram>, %y: memref<?x32xbf16, dram>, ...):
//	  loop.parallel %c0, %rows, %c1 {dist = "grid"} {
//	  ^bb1(%r: index):
//	    loop.for %c0, %c32, %c1 {
//	    ^bb2(%j: index):
//	      %dot = loop.for %c0, %c64, %c1, %zero {
//	      ^bb3(%k: index, %acc: f32):
//	        %a = loop.load %x, %r, %k : (memref<?x64xbf16, dram>, index, index) -> bf16
//	        %w = loop.load %w, %j, %k : (memref<32x64xbf16, dram>, index, index) -> bf16
//	        ... casts to f32 ...
//	        %acc2 = loop.fma %a32, %w32, %acc : f32
//	        loop.yield %acc2 : f32
//	      } : (index, index, index, f32) -> f32
//	      ... the epilogue on %dot ...
//	      loop.store %y16, %y, %r, %j : (bf16, memref<?x32xbf16, dram>, index, index) -> ()
//
// This is the form every emitter runs as it is (the CPU, the PTX
// simulator, Metal), and the one the Triton emitter recognises
// (loop.MatchMatMul) and tiles over tensor cores. The dot products are
// f32 (f64 for f64 operands, the integer type for integers) into the
// epilogue: a bf16 product is rounded only where it is written, or right
// away in exact-rounding mode.

// matmul builds the kernel of a graph.fused classified KernelMatMul.
func (k *kernelBuilder) matmul(fused *ir.Operation, info *passes.KernelInfo) error {
	k.setAttr("vector_width", intAttr(1))
	ev := newEvaluator(k, fused, info)
	n := len(info.Shape)
	out0 := k.outs[0]
	ext := make([]*ir.Value, n)
	for d := range ext {
		ext[d] = k.dim(out0, d)
	}
	leadExt, cols := ext[:n-1], ext[n-1]
	outs := yielded(fused)
	k.grid(k.product(k.kb, leadExt), func(b *ir.Builder, r *ir.Value) {
		ev.rowIdx = k.splitRow(b, r, leadExt)
		row := ev.rowScope(b)
		row.loopDist(k.index(0), cols, k.index(1), 0, nil, nil, "serial", func(s *scope, _ []*ir.Value) []*ir.Value {
			s.col.Name = "j"
			for i, y := range outs {
				s.store(s.get(y), k.outs[i])
			}
			return nil
		})
	})
	return nil
}

// dot computes the matmul op at the point of scalar scope s: the sum over
// k of lhs[..., m, k] * rhs[..., k, n] (rhs[..., n, k] with transpose_b),
// in order, with loop.fma in f32 (the product of two f32 values is exact,
// the sum rounds, as the graph interpreter's matmul does) and in integer
// types, with a rounded product and a rounded sum in f64.
func (s *scope) dot(op *ir.Operation) *ir.Value {
	ev := s.ev
	k := ev.k
	if s.width != 0 {
		fail(op, "is computed in a vector loop (internal error in lower-to-loops: a matmul kernel's loop is scalar)")
	}
	mm := graph.MatMulOp{Operation: op}
	lhs, rhs := mm.Lhs(), mm.Rhs()
	res := elemOf(op.Result(0))
	ce := computeElem(elemOf(lhs), elemOf(rhs), res)
	point := append(slices.Clone(ev.rowIdx), s.col)
	n := len(point)
	batch := point[:n-2]
	ls, rs := shapeOf(lhs), shapeOf(rhs)
	li := s.batchIndex(lhs, ls[:len(ls)-2], batch)
	ri := s.batchIndex(rhs, rs[:len(rs)-2], batch)
	kdim := ls[len(ls)-1]
	acc := must(loop.BuildFor(s.b, k.loc, k.index(0), k.index(kdim), k.index(1), []*ir.Value{k.constant(ce, 0)}, "serial", nil,
		func(bb *ir.Builder, kk *ir.Value, carried []*ir.Value) ([]*ir.Value, error) {
			kk.Name = "k"
			a := s.operandAt(bb, op, lhs, append(slices.Clone(li), point[n-2], kk))
			rIdx := append(slices.Clone(ri), kk, point[n-1])
			if mm.TransposeB() {
				rIdx = append(slices.Clone(ri), point[n-1], kk)
			}
			r := s.operandAt(bb, op, rhs, rIdx)
			a, r = castTo(bb, k, a, ce), castTo(bb, k, r, ce)
			if ce.Kind == ir.F64 {
				// f64 products round before the sum, as the graph interpreter's
				p := must(loop.BuildMul(bb, k.loc, a, r)).Output()
				return []*ir.Value{must(loop.BuildAdd(bb, k.loc, carried[0], p)).Output()}, nil
			}
			return []*ir.Value{must(loop.BuildFma(bb, k.loc, a, r, carried[0])).Output()}, nil
		})).Values()[0]
	acc.Name = "dot"
	return s.cast(acc, ev.hold(res, ce))
}

// operandAt reads operand v of matmul op at idx: a load from its buffer,
// the splat constant it is, or the cast of a kernel input it is (a
// dequantize prologue: the element converted as it is loaded).
func (s *scope) operandAt(b *ir.Builder, op *ir.Operation, v *ir.Value, idx []*ir.Value) *ir.Value {
	if c, ok := graph.AsConstant(v.DefiningOp()); ok && c.Value().IsSplat() {
		return s.ev.k.constant(elemOf(v), c.Value().At(0))
	}
	if d := v.DefiningOp(); d != nil && d.Name() == graph.OpCast {
		return castTo(b, s.ev.k, s.operandAt(b, op, d.Operand(0), idx), elemOf(v))
	}
	if d := v.DefiningOp(); passes.IsView(d) && d.NumOperands() == 1 {
		// a view of a kernel input: its index map, then the input
		return s.operandAt(b, op, d.Operand(0), s.mapPointAt(b, d, 0, idx))
	}
	buf := s.ev.buffers[v]
	if buf == nil {
		fail(op, "reads an operand the kernel has no buffer for (internal error in lower-to-loops)")
	}
	return must(loop.BuildLoad(b, s.ev.k.loc, buf, idx, elemOf(v))).Output()
}

// batchIndex maps the batch part of an output point to operand v, whose
// leading (batch) extents are bs, aligned from the right: extent-1
// dimensions read index 0, a `?` reads modulo its run-time extent (which
// may be 1).
func (s *scope) batchIndex(v *ir.Value, bs []int64, batch []*ir.Value) []*ir.Value {
	k := s.ev.k
	buf := s.ev.buffers[v]
	// a cast prologue (operandAt) has its input's extents
	for u := v; buf == nil && u.DefiningOp() != nil && u.DefiningOp().Name() == graph.OpCast; {
		u = u.DefiningOp().Operand(0)
		buf = s.ev.buffers[u]
	}
	off := len(batch) - len(bs)
	in := make([]*ir.Value, len(bs))
	for j, e := range bs {
		switch {
		case e == 1:
			in[j] = k.index(0)
		case e == ir.Dynamic:
			if buf == nil {
				panic(lowerError{ir.Errorf(k.loc, "a matmul operand with a run-time batch extent that is computed in the kernel, not read from a buffer, is not supported yet")})
			}
			in[j] = must(loop.BuildRemi(s.b, k.loc, batch[j+off], k.dim(buf, j))).Output()
		default:
			in[j] = batch[j+off]
		}
	}
	return in
}

// castTo converts scalar x to element e.
func castTo(b *ir.Builder, k *kernelBuilder, x *ir.Value, e ir.ElemType) *ir.Value {
	if elemOf(x) == e {
		return x
	}
	return must(loop.BuildCast(b, k.loc, x, e)).Output()
}
