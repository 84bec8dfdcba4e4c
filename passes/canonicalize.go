package passes

import (
	"math"

	"github.com/tensorforge/tensorforge/dialects/graph"

	"github.com/tensorforge/tensorforge/ir"
)

// Canonicalization patterns of the graph dialect. Each is one small named
// rewrite with its printed form; lit-tests/passes/canonicalize*.tir tests
// each of them, and the differential tests check that the interpreter gives
// the same results before and after.

// splatValue returns the value of a splat constant operand.
func splatValue(v *ir.Value) (float64, bool) {
	d := v.DefiningOp()
	if d == nil || !d.HasTrait(ir.ConstantLike) {
		return 0, false
	}
	da, ok := d.Attr("value").(ir.DenseAttr)
	if !ok || len(da.Values) == 0 {
		return 0, false
	}
	first := da.Values[0]
	for _, x := range da.Values[1:] {
		if x != first {
			return 0, false
		}
	}
	return first, true
}

// isSplat reports whether v is a constant whose every element equals want.
// A zero must also match in sign for floats: x + (+0.0) is not x when x is
// -0.0 (it is +0.0), so only -0.0 is the identity of float addition and
// only +0.0 that of float subtraction.
func isSplat(v *ir.Value, want float64) bool {
	x, ok := splatValue(v)
	if !ok || x != want {
		return false
	}
	if want == 0 {
		if e, ok := ir.ElemOf(v.Type()); ok && e.Kind.IsFloat() {
			return math.Signbit(x) == math.Signbit(want)
		}
	}
	return true
}

// forwardIfSameType replaces op by x when x already has op's result type.
func forwardIfSameType(op *ir.Operation, x *ir.Value, rw *ir.Rewriter) bool {
	if !ir.TypeEqual(op.Result(0).Type(), x.Type()) {
		return false
	}
	rw.ReplaceOp(op, []*ir.Value{x})
	return true
}

// identityOperand builds a pattern for `op %x, %c` -> `%x` when %c is a
// splat of the identity element. With commutative set, `op %c, %x` too.
func identityOperand(name, root string, identity float64, commutative bool) ir.Pattern {
	return ir.PatternFunc(name, root, func(op *ir.Operation, rw *ir.Rewriter) bool {
		if op.NumOperands() != 2 {
			return false
		}
		if isSplat(op.Operand(1), identity) && forwardIfSameType(op, op.Operand(0), rw) {
			return true
		}
		return commutative && isSplat(op.Operand(0), identity) && forwardIfSameType(op, op.Operand(1), rw)
	})
}

// involution builds `op(op(%x))` -> `%x`.
func involution(name, root string) ir.Pattern {
	return ir.PatternFunc(name, root, func(op *ir.Operation, rw *ir.Rewriter) bool {
		inner := op.Operand(0).DefiningOp()
		if inner == nil || inner.Name() != root {
			return false
		}
		return forwardIfSameType(op, inner.Operand(0), rw)
	})
}

// noOpIfSameType builds `op %x : T -> T` -> `%x` (cast, reshape, broadcast_to).
func noOpIfSameType(name, root string) ir.Pattern {
	return ir.PatternFunc(name, root, func(op *ir.Operation, rw *ir.Rewriter) bool {
		return op.NumOperands() == 1 && forwardIfSameType(op, op.Operand(0), rw)
	})
}

// reshapeOfReshape: `reshape(reshape %x)` -> `reshape %x`.
var reshapeOfReshape = ir.PatternFunc("ReshapeReshape", "graph.reshape", func(op *ir.Operation, rw *ir.Rewriter) bool {
	inner := op.Operand(0).DefiningOp()
	if inner == nil || inner.Name() != "graph.reshape" {
		return false
	}
	rw.ModifyInPlace(op, func() { op.SetOperand(0, inner.Operand(0)) })
	return true
})

// transposeOfTranspose: `transpose(transpose %x, p), q` -> `transpose %x, p∘q`,
// or `%x` when the composition is the identity.
var transposeOfTranspose = ir.PatternFunc("TransposeTranspose", "graph.transpose", func(op *ir.Operation, rw *ir.Rewriter) bool {
	inner := op.Operand(0).DefiningOp()
	if inner == nil || inner.Name() != "graph.transpose" {
		return false
	}
	outerPerm, ok1 := permOf(op)
	innerPerm, ok2 := permOf(inner)
	if !ok1 || !ok2 || len(outerPerm) != len(innerPerm) {
		return false
	}
	// result[i] = inner[outer[i]] = x[innerPerm[outerPerm[i]]]
	composed := make([]int64, len(outerPerm))
	for i, p := range outerPerm {
		if p < 0 || int(p) >= len(innerPerm) {
			return false
		}
		composed[i] = innerPerm[p]
	}
	if isIdentityPerm(composed) {
		return forwardIfSameType(op, inner.Operand(0), rw)
	}
	rw.ModifyInPlace(op, func() {
		op.SetOperand(0, inner.Operand(0))
		op.SetAttr("perm", ir.IntArray(composed...))
	})
	return true
})

// identityTranspose: `transpose %x {perm = [0, 1, ...]}` -> `%x`.
var identityTranspose = ir.PatternFunc("TransposeIdentity", "graph.transpose", func(op *ir.Operation, rw *ir.Rewriter) bool {
	p, ok := permOf(op)
	return ok && isIdentityPerm(p) && forwardIfSameType(op, op.Operand(0), rw)
})

// identitySlice: `slice %x` that takes every dimension whole (offsets 0,
// strides 1, each size -1 or the static extent) -> `%x`.
var identitySlice = ir.PatternFunc("SliceIdentity", "graph.slice", func(op *ir.Operation, rw *ir.Rewriter) bool {
	sl := graph.SliceOp{Operation: op}
	in, ok := op.Operand(0).Type().(ir.TensorType)
	if !ok {
		return false
	}
	offsets, sizes, strides := sl.Offsets(), sl.Sizes(), graph.SliceStrides(sl)
	if len(offsets) != len(in.Shape) || len(sizes) != len(in.Shape) || len(strides) != len(in.Shape) {
		return false
	}
	for d, n := range in.Shape {
		if offsets[d] != 0 || strides[d] != 1 || (sizes[d] != -1 && sizes[d] != n) {
			return false
		}
	}
	return forwardIfSameType(op, op.Operand(0), rw)
})

// matmulOfTranspose: `matmul %a, (transpose %b, [..., n-1, n-2])` ->
// `matmul %a, %b` with transpose_b flipped: the matmul reads %b in the
// other order instead of a copy being made (`x @ w.T` of a linear layer).
var matmulOfTranspose = ir.PatternFunc("MatMulTranspose", "graph.matmul", func(op *ir.Operation, rw *ir.Rewriter) bool {
	tr := op.Operand(1).DefiningOp()
	if tr == nil || tr.Name() != "graph.transpose" {
		return false
	}
	p, ok := permOf(tr)
	n := len(p)
	if !ok || n < 2 || p[n-1] != int64(n-2) || p[n-2] != int64(n-1) || !isIdentityPerm(p[:n-2]) {
		return false
	}
	tb := graph.MatMulOp{Operation: op}.TransposeB()
	rw.ModifyInPlace(op, func() {
		op.SetOperand(1, tr.Operand(0))
		if tb {
			op.Attrs.Delete("transpose_b") // false, the default
		} else {
			op.SetAttr("transpose_b", ir.BoolAttr(true))
		}
	})
	return true
})

func permOf(op *ir.Operation) ([]int64, bool) {
	a, ok := op.Attr("perm").(ir.ArrayAttr)
	if !ok {
		return nil, false
	}
	return a.Int64s()
}

func isIdentityPerm(p []int64) bool {
	for i, x := range p {
		if x != int64(i) {
			return false
		}
	}
	return true
}

// CanonicalizationPatterns returns the graph dialect's rewrite patterns in
// the order the canonicalizer tries them.
func CanonicalizationPatterns() []ir.Pattern {
	return []ir.Pattern{
		identityOperand("MulByOne", "graph.mul", 1, true),
		identityOperand("AddZero", "graph.add", math.Copysign(0, -1), true),
		identityOperand("SubZero", "graph.sub", 0, false),
		identityOperand("DivByOne", "graph.div", 1, false),
		identityOperand("PowOne", "graph.pow", 1, false),
		involution("NegNeg", "graph.neg"),
		noOpIfSameType("CastSameType", "graph.cast"),
		noOpIfSameType("ReshapeSameType", "graph.reshape"),
		noOpIfSameType("BroadcastSameType", "graph.broadcast_to"),
		reshapeOfReshape,
		identityTranspose,
		transposeOfTranspose,
		identitySlice,
		matmulOfTranspose,
		constantFold,
	}
}

// Canonicalize applies the canonicalization patterns, constant folding and
// dead-code removal until nothing changes.
func Canonicalize(root *ir.Operation) bool {
	return ir.ApplyPatternsGreedily(root, CanonicalizationPatterns(), ir.GreedyConfig{EraseDead: true})
}

func init() {
	ir.RegisterPass(&ir.PassInfo{
		Name: "canonicalize", Title: "Canonicalizer",
		Summary: "fold constants and apply algebraic identities (x*1, x+0, neg(neg x), cast to the same type, reshape/transpose chains, a matmul of a transpose)",
		New: func(ir.PassOptions) (ir.Pass, error) {
			return ir.PassFunc(func(m ir.Module, _ *ir.PassContext) error {
				Canonicalize(m.Operation)
				return nil
			}), nil
		},
	})
}
