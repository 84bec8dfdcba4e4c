package loop

import (
	"github.com/tensorforge/tensorforge/ir"
)

// This file gives the structure of a kernel of kind "matmul", which
// lower-to-loops builds and the emitters that tile matmuls (Triton)
// recognise:
//
//	loop.parallel %c0, %rows, %c1 {dist = "grid"} {      // one output row [batch..., m]
//	^bb0(%r: index):
//	  ... row values: the split of %r into indices ...
//	  loop.for %c0, %n, %c1 {                           // the columns
//	  ^bb1(%j: index):
//	    %dot = loop.for %c0, %cK, %c1, %zero {          // one per matmul
//	    ^bb2(%k: index, %acc: f32):
//	      %a = loop.load %lhs, ..., %m, %k              // first: the left operand
//	      %b = loop.load %rhs, ..., %k, %j              // (or %j, %k: transpose_b)
//	      ... casts ...
//	      %s = loop.fma %a', %b', %acc : f32
//	      loop.yield %s : f32
//	    }
//	    ... the epilogue on the dot products, stores at [r..., j] ...
//
// Every dot reads the same left operand over the same K. The indices of
// the right operand other than k and j depend on the row only through
// its batch (r divided by the rows of one matrix): a tile of rows of one
// matrix reads one right operand.

// MatMul is the structure of a matmul kernel.
type MatMul struct {
	Grid ParallelOp
	// Cols is the serial loop over the columns of a row.
	Cols ForOp
	Dots []Dot
}

// Dot is the loop over K of one dot product.
type Dot struct {
	Loop ForOp
	// Lhs and Rhs are the loads of the operands in the loop's body.
	Lhs, Rhs LoadOp
	// TransposeB: the right operand is indexed [..., j, k].
	TransposeB bool
	K          int64
}

// MatchMatMul returns the structure of kernel k of kind "matmul", or an
// error located at the op that breaks it. A matmul kernel with a splat
// constant operand (no load of it) does not match: it runs as scalar
// loops, as every kernel of kind "matmul" may.
func MatchMatMul(k KernelOp) (*MatMul, error) {
	body, err := singleBlock(k.Operation)
	if err != nil {
		return nil, err
	}
	mm := &MatMul{}
	for o := body.First(); o != nil; o = o.Next() {
		if p, ok := AsParallel(o); ok {
			mm.Grid = p
		}
	}
	if mm.Grid.Operation == nil {
		return nil, ir.OpError(k.Operation, "of kind 'matmul' has no launch grid")
	}
	gb, err := singleBlock(mm.Grid.Operation)
	if err != nil {
		return nil, err
	}
	for o := gb.First(); o != nil; o = o.Next() {
		if o.NumRegions() == 0 {
			continue
		}
		f, ok := AsFor(o)
		if !ok || mm.Cols.Operation != nil || len(f.Inits()) != 0 || f.Dist() == "threads" {
			return nil, ir.OpError(o, "is not the one serial loop over the columns that a kernel of kind 'matmul' has in its grid")
		}
		mm.Cols = f
	}
	if mm.Cols.Operation == nil {
		return nil, ir.OpError(mm.Grid.Operation, "holds no loop over the columns (kind 'matmul')")
	}
	cb, err := singleBlock(mm.Cols.Operation)
	if err != nil {
		return nil, err
	}
	j := cb.Args[0]
	for o := cb.First(); o != nil; o = o.Next() {
		if o.NumRegions() == 0 {
			continue
		}
		d, err := matchDot(o, j)
		if err != nil {
			return nil, err
		}
		if len(mm.Dots) > 0 {
			first := mm.Dots[0]
			if d.Lhs.Memref() != first.Lhs.Memref() || d.K != first.K {
				return nil, ir.OpError(o, "reads another left operand or K than the first dot product of the kernel (kind 'matmul')")
			}
		}
		mm.Dots = append(mm.Dots, d)
	}
	if len(mm.Dots) == 0 {
		return nil, ir.OpError(mm.Cols.Operation, "computes no dot product (kind 'matmul')")
	}
	return mm, nil
}

// matchDot matches the loop over K of one dot product at column j.
func matchDot(o *ir.Operation, j *ir.Value) (Dot, error) {
	bad := func(why string) (Dot, error) {
		return Dot{}, ir.OpError(o, "is not a dot product of a kernel of kind 'matmul': %s", why)
	}
	f, ok := AsFor(o)
	if !ok || f.Dist() == "threads" || len(f.Inits()) != 1 {
		return bad("it must be a serial loop.for carrying one value")
	}
	lo, ok1 := constIndexOf(f.Lower())
	hi, ok2 := constIndexOf(f.Upper())
	st, ok3 := constIndexOf(f.Step())
	if !ok1 || !ok2 || !ok3 || lo != 0 || st != 1 || hi < 1 {
		return bad("it must run over [0, K) by 1 with a static K")
	}
	init, ok := AsConst(f.Inits()[0].DefiningOp())
	if !ok || init.Value() != 0 {
		return bad("its sum must start at 0")
	}
	b, err := singleBlock(o)
	if err != nil {
		return Dot{}, err
	}
	kiv, acc := b.Args[0], b.Args[1]
	var loads []LoadOp
	var step *ir.Operation
	for x := b.First(); x != nil; x = x.Next() {
		switch x.Name() {
		case OpLoad:
			ld, _ := AsLoad(x)
			loads = append(loads, ld)
		case OpCast:
		case OpFma, OpMul, OpAdd:
			step = x
		case OpYield:
		case OpAddi, OpSubi, OpMuli, OpDivi, OpRemi, OpMini, OpConst:
			// the index map of an operand read through a view
		default:
			return bad("its body holds '" + x.Name() + "', where only two loads, casts, index arithmetic and a multiply-add may be")
		}
	}
	if len(loads) != 2 || step == nil {
		return bad("its body must load the two operands and multiply-add them")
	}
	y := b.Last()
	if y.NumOperands() != 1 || !y.Operand(0).DependsOn(acc) {
		return bad("it must yield the sum it carries plus a product")
	}
	d := Dot{Loop: f, Lhs: loads[0], Rhs: loads[1], K: hi}
	li, ri := d.Lhs.Indices(), d.Rhs.Indices()
	if len(li) < 2 || li[len(li)-1] != kiv {
		return bad("the left operand must be read at [..., m, k]")
	}
	n := len(ri)
	switch {
	case n >= 2 && ri[n-2] == kiv && ri[n-1] == j:
	case n >= 2 && ri[n-2] == j && ri[n-1] == kiv:
		d.TransposeB = true
	default:
		return bad("the right operand must be read at [..., k, j] or [..., j, k]")
	}
	return d, nil
}

// constIndexOf returns the value of an index constant.
func constIndexOf(v *ir.Value) (int64, bool) {
	c, ok := AsConst(v.DefiningOp())
	if !ok {
		return 0, false
	}
	return int64(c.Value()), true
}

// TiledOperands reports whether the tiled matmul kernels of the emitters
// take a dot product of a left operand of kind lhs and a right operand of
// kind rhs: the same kind, or a narrower right operand that a dequantize
// prologue converts as its tile is loaded (an int8 or f8 weight under f16
// or bf16 activations).
func TiledOperands(lhs, rhs ir.ElemKind) bool {
	switch {
	case rhs == lhs:
		return true
	case lhs != ir.BF16 && lhs != ir.F16:
		return false
	}
	switch rhs {
	case ir.I8, ir.UI8, ir.F8E4M3FN, ir.F8E5M2:
		return true
	}
	return false
}
