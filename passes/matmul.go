package passes

import (
	"fmt"
	"slices"

	"github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/ir"
)

// This file classifies matmul kernels: one matmul, or several that share
// their left operand, with an element-wise epilogue over their result:
//
//	%g = graph.matmul %x, %wg {transpose_b = true} : (tensor<?x4096xbf16>, tensor<14336x4096xbf16>) -> tensor<?x14336xbf16>
//	%u = graph.matmul %x, %wu {transpose_b = true} : (tensor<?x4096xbf16>, tensor<14336x4096xbf16>) -> tensor<?x14336xbf16>
//	%s = graph.silu %g : tensor<?x14336xbf16>
//	%y = graph.mul %s, %u : tensor<?x14336xbf16>
//
// is one kernel over [?, 14336] that reads x once for both dot products
// and writes y alone: the gate/up projection of a SwiGLU MLP. The dot
// products stay in f32 into the epilogue (rounded to bf16 only where a
// result is written, or at every op in exact-rounding mode). The
// epilogue may read other tensors broadcast to the result (a bias over
// the columns, a residual of the result's shape, a scale per row).
//
// An operand may be a cast of a kernel input to a float type that only
// matmuls read (the prologue of int8 or f8 weights), or an integer
// widening (int8 to int32, for W8A8 matmuls that accumulate in int32):
// the dot products convert each element as they load it, and the wide
// operand is never written. A per-channel scale belongs in the epilogue:
// (x @ cast(q)^T) * s[n] (docs/fusion.md).
//
// An operand may also be a kernel input seen through views that only the
// matmuls read (broadcast_to, transpose, reshape, slice; with casts among
// them): the loads address the input through the views' index maps, so
// grouped-query attention's keys broadcast over the query heads are read
// in place, never expanded.
//
// What a matmul kernel does not take yet, each refused with its reason:
// other operands computed in the kernel (the matmul reads its operands
// from memory, through views of them, or converts them as it loads
// them), views in its epilogue, reductions, and matmuls that differ in
// their left operand, their right operand's shape or transpose_b.

// matmul classifies a body holding matmuls: an element-wise epilogue
// over their common result shape.
func (c *classifier) matmul(matmuls, reductions []*ir.Operation) (*KernelInfo, error) {
	first := graph.MatMulOp{Operation: matmuls[0]}
	var prologue []*ir.Operation
	for _, op := range matmuls {
		mm := graph.MatMulOp{Operation: op}
		for i, v := range op.Operands() {
			if slices.Contains(c.inputs, v) || isSplatConstant(v) {
				continue
			}
			chain := c.operandPrologue(v, matmuls)
			if chain == nil {
				return nil, refuse(op, "reads its operands from memory, through views of them or converting them as it loads them (a kernel input seen through views and casts that only matmuls read), but operand #%d is computed in the kernel", i)
			}
			for _, p := range chain {
				if sh := shapeOf(p.Result(0)); slices.Contains(sh[:max(len(sh)-2, 0)], ir.Dynamic) {
					// (its batch index is taken modulo the extent, which
					// only a buffer gives at run time)
					return nil, refuse(op, "reads operand #%d through '%s' at %s, whose batch extents %s are not all static; a matmul kernel reads an operand with a run-time batch extent from memory",
						i, p.Name(), locString(p.Loc), graph.FormatShape(sh[:len(sh)-2]))
				}
			}
			for _, p := range chain {
				if !slices.Contains(prologue, p) {
					prologue = append(prologue, p)
				}
			}
		}
		if op == first.Operation {
			continue
		}
		switch {
		case mm.Lhs() != first.Lhs():
			return nil, refuse(op, "shares a kernel only with matmuls of the same left operand, and the matmul at %s reads another", locString(first.Loc))
		case mm.TransposeB() != first.TransposeB() || !ir.TypeEqual(mm.Rhs().Type(), first.Rhs().Type()):
			return nil, refuse(op, "shares a kernel only with matmuls of the same right operand type and transpose_b, unlike the matmul at %s", locString(first.Loc))
		case !ir.TypeEqual(op.Result(0).Type(), first.Result(0).Type()):
			return nil, refuse(op, "shares a kernel only with matmuls of the same result type, unlike the matmul at %s", locString(first.Loc))
		}
	}
	var epilogue []*ir.Operation
	for _, op := range c.ops {
		switch {
		case op.Name() == graph.OpMatMul || slices.Contains(prologue, op) || slices.Contains(reductions, op):
			continue
		case IsView(op) || op.Name() == graph.OpRoll || op.Name() == graph.OpGather:
			return nil, refuse(op, "is an index map, which a matmul kernel's epilogue does not read through yet (the matmul at %s)", locString(first.Loc))
		case !isConstant(op) && !isElementwisePrimitive(op):
			return nil, refuse(op, "cannot be part of a matmul kernel's epilogue, which is element-wise")
		}
		epilogue = append(epilogue, op)
	}
	// the epilogue is an element-wise kernel over the matmuls' results,
	// which it reads as it reads its inputs
	var sources []*ir.Value
	skip := append(slices.Clone(matmuls), prologue...)
	for _, v := range c.inputs {
		if usedBesides(v, c.ops, skip) || slices.Contains(c.outputs, v) {
			sources = append(sources, v)
		}
	}
	for _, op := range matmuls {
		sources = append(sources, op.Result(0))
	}
	ec := &classifier{ops: epilogue, inputs: sources, outputs: c.outputs, cands: map[*ir.Value]accessSet{}}
	if len(reductions) > 0 {
		return c.matmulRows(ec, matmuls, prologue, reductions, skip)
	}
	info, err := ec.elementwise()
	if err != nil {
		return nil, err
	}
	shape := shapeOf(first.Result(0))
	if !slices.Equal(info.Shape, shape) {
		return nil, c.errAt(c.outputs[0], "a matmul kernel writes results of its matmul's shape %s, but result #0 has shape %s",
			graph.FormatShape(shape), graph.FormatShape(info.Shape))
	}
	for i, v := range c.outputs {
		if s := shapeOf(v); !slices.Equal(s, shape) {
			return nil, c.errAt(v, "a matmul kernel writes results of its matmul's shape %s, but result #%d has shape %s",
				graph.FormatShape(shape), i, graph.FormatShape(s))
		}
	}
	info.Kind = KernelMatMul
	info.Op = first.Operation
	info.Phases = make([]int, len(c.ops))
	c.withMatMuls(info, matmuls, skip)
	return info, nil
}

// withMatMuls makes info, the classification of the ops of c other than
// matmuls and their prologue (skip), that of all of c's ops: the
// matmuls' results are full values of the iteration space, and what only
// the matmuls and their prologue read is read whole, as they address it.
func (c *classifier) withMatMuls(info *KernelInfo, matmuls, skip []*ir.Operation) {
	info.MatMuls = matmuls
	info.Ops = c.ops
	for _, op := range skip {
		if op.Name() == graph.OpMatMul {
			info.access[op.Result(0)] = AccessFull
		}
		for _, v := range op.Operands() {
			if !usedBesides(v, c.ops, skip) {
				info.access[v] = AccessWhole
			}
		}
	}
	info.Operands = info.Operands[:0]
	for _, v := range c.inputs {
		a := info.access[v]
		if a == "" {
			a = AccessWhole // an input nothing reads
		}
		info.Operands = append(info.Operands, a)
	}
}

// matmulRows classifies matmuls whose results are reduced over their last
// axis (the columns n) as a row kernel: ec, the ops after the matmuls,
// classified as a row kernel over the matmuls' results, each row
// computed as its dot products in the loop over the row. Each matmul
// must have one row per matrix ([..., 1, K] x [..., K, N]: the scores of
// one query against the keys of a decode step), so that a program reads
// its right operand once; with more rows per matrix every row would read
// the whole right operand again, where a tiled matmul reads it once per
// tile. The row kernel keeps the row of results on chip (fuse accepts it
// only when its schedule does not read the row again), so each dot
// product is computed once.
// maxRowDotMACs bounds the multiply-adds of one row of dot products in a
// row kernel (the keys of a decode step over a cache of 8192 positions of
// head dimension 128), where one program computes the row.
const maxRowDotMACs = 1 << 20

func (c *classifier) matmulRows(ec *classifier, matmuls, prologue, reductions, skip []*ir.Operation) (*KernelInfo, error) {
	first := matmuls[0]
	for _, op := range matmuls {
		if m := shapeOf(op.Operand(0)); len(m) < 2 || m[len(m)-2] != 1 {
			rows := "a run-time number of"
			if len(m) >= 2 && m[len(m)-2] != ir.Dynamic {
				rows = fmt.Sprint(m[len(m)-2])
			}
			return nil, refuse(reductions[0], "reduces the rows of the matmul at %s, which has %s rows per matrix; a matmul joins a row kernel only with one row per matrix (a decode step's scores), where a program reads the right operand once instead of once per row",
				locString(op.Loc), rows)
		}
	}
	for _, op := range matmuls {
		rs := shapeOf(op.Operand(1))
		n := len(rs)
		batches := int64(1)
		for _, e := range rs[:n-2] {
			batches *= e // (a run-time extent is -1: not 1)
		}
		switch {
		case batches == 1:
			return nil, refuse(reductions[0], "reduces the rows of the matmul at %s, whose right operand is one matrix for every row; a row kernel would compute a row's dot products in one program reading the whole matrix, where a matmul kernel spreads them over many",
				locString(op.Loc))
		case rs[n-1]*rs[n-2] > maxRowDotMACs || rs[n-1] < 0 || rs[n-2] < 0:
			return nil, refuse(reductions[0], "reduces the rows of the matmul at %s, whose rows are dot products over a %s matrix each; a program of a row kernel computes at most %d multiply-adds per row",
				locString(op.Loc), graph.FormatShape(rs[n-2:]), maxRowDotMACs)
		}
	}
	ec.ops = append(ec.ops, reductions...)
	slices.SortStableFunc(ec.ops, func(a, b *ir.Operation) int {
		return slices.Index(c.ops, a) - slices.Index(c.ops, b)
	})
	info, err := ec.row(reductions)
	if err != nil {
		return nil, err
	}
	shape := shapeOf(first.Result(0))
	if !slices.Equal(info.Shape, shape) {
		return nil, refuse(reductions[0], "reduces rows of %s, but the matmul at %s computes %s; a matmul joins a row kernel over its own result's rows",
			graph.FormatShape(info.Shape), locString(first.Loc), graph.FormatShape(shape))
	}
	for _, op := range matmuls {
		if info.AccessOf(op.Result(0)) != AccessFull {
			return nil, refuse(op, "is read as %s in the row kernel; its result joins a row kernel as full rows", info.AccessOf(op.Result(0)))
		}
	}
	phase := map[*ir.Operation]int{}
	for i, op := range info.Ops {
		phase[op] = info.Phases[i]
	}
	info.Phases = make([]int, len(c.ops))
	for i, op := range c.ops {
		info.Phases[i] = phase[op] // the matmuls and their prologue: 0
	}
	c.withMatMuls(info, matmuls, skip)
	return info, nil
}

// prologueViews are the views a matmul reads its operands through, as
// index maps of their loads: a batch broadcast (the keys of grouped-query
// attention expanded over the heads), a transpose, a reshape, a slice.
var prologueViews = map[string]bool{graph.OpBroadcastTo: true, graph.OpTranspose: true, graph.OpReshape: true, graph.OpSlice: true}

// operandPrologue returns the ops between a kernel input and operand v
// of the matmuls, when v is the input seen through views and casts
// (castPrologue) that nothing else reads, and nil otherwise.
func (c *classifier) operandPrologue(v *ir.Value, matmuls []*ir.Operation) []*ir.Operation {
	var chain []*ir.Operation
	readers := matmuls
	for !slices.Contains(c.inputs, v) {
		op := v.DefiningOp()
		if op == nil || slices.Contains(c.outputs, v) || !slices.Contains(c.ops, op) {
			return nil
		}
		for _, u := range v.Users() {
			if !slices.Contains(readers, u) {
				return nil
			}
		}
		switch {
		case op.Name() == graph.OpCast:
			if !c.castPrologue(op, readers) {
				return nil
			}
		case prologueViews[op.Name()] && op.NumOperands() == 1:
		default:
			return nil
		}
		chain = append(chain, op)
		readers = []*ir.Operation{op}
		v = op.Operand(0)
	}
	return chain
}

// castPrologue reports whether op converts a kernel input to a float
// type, or widens an integer one, for the matmuls alone: a dequantize of
// int8 or f8 weights, or int8 to int32, which the matmul then converts
// as it loads them (the wide operand is never written).
func (c *classifier) castPrologue(op *ir.Operation, matmuls []*ir.Operation) bool {
	if op == nil || op.Name() != graph.OpCast {
		return false
	}
	e, ok := ir.ElemOf(op.Result(0).Type())
	if !ok || slices.Contains(c.outputs, op.Result(0)) {
		return false
	}
	if !e.Kind.IsFloat() {
		// an integer widening (int8 to int32 for an int32-accumulating
		// matmul) converts exactly as well
		from, ok := ir.ElemOf(op.Operand(0).Type())
		if !ok || !from.Kind.IsInt() || !e.Kind.IsInt() || from.Kind == ir.I1 || from.Kind.BitWidth() >= e.Kind.BitWidth() {
			return false
		}
	}
	for _, u := range op.Result(0).Users() {
		if !slices.Contains(matmuls, u) {
			return false
		}
	}
	return true
}

// usedBesides reports whether an op of ops other than those of skip
// reads v.
func usedBesides(v *ir.Value, ops, skip []*ir.Operation) bool {
	for _, op := range ops {
		if !slices.Contains(skip, op) && slices.Contains(op.Operands(), v) {
			return true
		}
	}
	return false
}

// isSplatConstant reports whether v is a splat constant, which a kernel computes
// wherever it reads it.
func isSplatConstant(v *ir.Value) bool {
	c, ok := graph.AsConstant(v.DefiningOp())
	return ok && c.Value().IsSplat()
}

// kernelRefusal is a classification error that is not about the
// iteration space: fuse's remark gives it as it is.
type kernelRefusal struct{ err error }

func (r *kernelRefusal) Error() string { return r.err.Error() }
func (r *kernelRefusal) Unwrap() error { return r.err }

// refuse is ir.OpError as a kernelRefusal.
func refuse(op *ir.Operation, format string, args ...any) error {
	return &kernelRefusal{ir.OpError(op, format, args...)}
}
