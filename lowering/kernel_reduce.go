package lowering

import (
	"slices"

	"github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
	"github.com/tensorforge/tensorforge/passes"
)

// reduceFused builds a reduce kernel with the element-wise work around its
// reduction (passes/reduce_kernel.go): one program instance per row of the
// result and a serial loop over the row, as a reduction alone has
// (generic), and for each element of the result a serial loop over the
// reduced elements that computes the producers at each from the kernel's
// inputs and combines them; then the consumers, and the stores:
//
//	loop.parallel %c0, %c1, %c1 {dist = "grid"} {
//	^bb0(%r: index):
//	  loop.for %c0, %c128, %c1 {
//	  ^bb0(%j: index):
//	    %acc = loop.for %c0, %c64, %c1, %zero {
//	    ^bb0(%e: index, %a: f32):
//	      %x = loop.load %in, %e, %j : (memref<64x128xf32, dram>, index, index) -> f32
//	      %ex = loop.exp %x : f32
//	      %s = loop.add %a, %ex : f32
//	      loop.yield %s : f32
//	    } : (index, index, index, f32) -> f32
//	    %b = loop.load %bias, %j : (memref<128xf32, dram>, index) -> f32
//	    %y = loop.mul %acc, %b : f32
//	    loop.store %y, %out, %j : (f32, memref<128xf32, dram>, index) -> ()
//	    loop.yield
//	  } : index
//	  loop.yield
//	} : index
//
// Values between the ops are held as in element-wise kernels (f32 for
// narrow floats by default, each op's type with exact rounding).
func (k *kernelBuilder) reduceFused(fused *ir.Operation, info *passes.KernelInfo) error {
	red := info.Op
	entry := fused.Region(0).Entry()
	bufs := map[*ir.Value]*ir.Value{}
	for i, a := range entry.Args {
		bufs[a] = k.ins[i]
	}
	x := red.Operand(0)
	in, out := shapeOf(x), shapeOf(red.Result(0))
	axes := reduceAxes(red, len(in))
	keep, _ := red.Attr("keepdim").(ir.BoolAttr)
	kind := reduceKind(red)
	res := elemOf(red.Result(0))
	ce := computeElem(elemOf(x), res)
	count := int64(1)
	var redExt []*ir.Value
	for _, a := range axes {
		count *= in[a]
		redExt = append(redExt, k.index(in[a]))
	}
	ev := &evaluator{k: k, info: info}
	outs := yielded(fused)
	width := k.reduceWidth(fused, info, axes, in)
	k.setAttr("vector_width", intAttr(width))
	lanes := width
	if width == 1 {
		lanes = 0
	}
	newScope := func(b *ir.Builder) *scope {
		return &scope{ev: ev, b: b, width: lanes, vals: map[*ir.Value]*ir.Value{}, comp: map[*ir.Value]*ir.Value{},
			splat: map[*ir.Value]*ir.Value{}, recip: map[*ir.Value]*ir.Value{}}
	}
	g := &genericKernel{k: k, buffers: bufs}
	k.eachIndexChunked(k.outs[0], reduceChunk, width, func(b *ir.Builder, idxs [][]*ir.Value) {
		// one accumulator per vector of the chunk, all advanced by each
		// reduced element: a vector kernel walks the rows of its columns
		// once, reading the chunk's contiguous stretch of each
		inits := make([]*ir.Value, len(idxs))
		for i := range inits {
			inits[i] = k.constant(loop.Vector(lanes, ce), identity(kind, ce))
		}
		accs := must(loop.BuildFor(b, k.loc, k.index(0), k.index(count), k.index(1), inits, "serial", nil,
			func(bb *ir.Builder, l *ir.Value, carried []*ir.Value) ([]*ir.Value, error) {
				l.Name = "e"
				rix := g.split(bb, l, redExt)
				next := make([]*ir.Value, len(idxs))
				for i, idx := range idxs {
					full := make([]*ir.Value, len(in))
					o, ri := 0, 0
					for d := range in {
						if ri < len(axes) && axes[ri] == int64(d) {
							full[d] = rix[ri]
							ri++
							if bool(keep) {
								o++
							}
							continue
						}
						full[d] = idx[o]
						o++
					}
					s := newScope(bb)
					v := s.compute(k.valueAt(s, bufs, x, full, in, true), ce)
					op := bb.Insert(ir.NewOperation(combineOp(kind), k.loc, []*ir.Value{carried[i], v}, []ir.Type{loop.Vector(lanes, ce)}, nil, 0))
					if err := op.Def().Verify(op); err != nil {
						return nil, err
					}
					next[i] = op.Result(0)
				}
				return next, nil
			})).Values()
		for i, idx := range idxs {
			acc := accs[i]
			acc.Name = "acc"
			s := newScope(b)
			s.vals[red.Result(0)] = s.cast(acc, ev.hold(res, ce))
			for j, y := range outs {
				v := s.cast(k.valueAt(s, bufs, y, idx, out, true), elemOf(y))
				must(loop.BuildStore(b, k.loc, v, k.outs[j], idx))
			}
		}
	})
	return nil
}

// valueAt computes body value v of a reduce kernel at point idx of space
// (the reduction's operand shape, or its result's): a splat constant, a
// load of a kernel input at the broadcast index, an input read through
// views (their index maps), or an element-wise op of such values. Values
// at the scope's own point are kept in the scope (direct); a view's
// operand is read at another point each time.
func (k *kernelBuilder) valueAt(s *scope, bufs map[*ir.Value]*ir.Value, v *ir.Value, idx []*ir.Value, space []int64, direct bool) *ir.Value {
	if x, ok := s.vals[v]; ok && direct {
		return x
	}
	// the point of v's own shape: NumPy broadcasting from the right
	sh := shapeOf(v)
	at := make([]*ir.Value, len(sh))
	off := len(space) - len(sh)
	for j, e := range sh {
		if e == 1 && space[off+j] != 1 {
			at[j] = k.index(0)
		} else {
			at[j] = idx[off+j]
		}
	}
	var r *ir.Value
	op := v.DefiningOp()
	switch c, isConst := graph.AsConstant(op); {
	case isConst && c.Value().IsSplat():
		r = k.constant(s.typeOf(elemOf(v)), c.Value().At(0))
	case bufs[v] != nil && s.width > 0 && len(sh) > 0 && sh[len(sh)-1] != 1:
		// contiguous along the result's last dimension (reduceWidth)
		r = must(loop.BuildLoad(s.b, k.loc, bufs[v], at, s.typeOf(elemOf(v)))).Output()
	case bufs[v] != nil:
		r = s.broadcast(must(loop.BuildLoad(s.b, k.loc, bufs[v], at, elemOf(v))).Output())
	case passes.IsView(op):
		x := op.Operand(0)
		r = s.cast(k.valueAt(s, bufs, x, s.mapPointAt(s.b, op, 0, at), shapeOf(x), false), s.ev.heldElem(v))
	case op != nil:
		args := make([]*ir.Value, op.NumOperands())
		for i, a := range op.Operands() {
			args[i] = k.valueAt(s, bufs, a, at, sh, direct)
		}
		r = s.emit(op, args)
	default:
		panic(lowerError{ir.Errorf(k.loc, "a reduce kernel reads a value it has no buffer for")})
	}
	if direct {
		s.vals[v] = r
	}
	return r
}

// reduceChunk is the most elements of the last dimension of a reduce
// kernel's result that one program instance takes: a result of one long
// row (a column sum of [T, V]) is spread over V / chunk instances instead
// of one, the chunk the largest divisor of V from reduceChunk down to
// reduceChunk/8 (a static loop over the chunk, which every emitter
// spreads over threads as it does a row's).
const reduceChunk = 256

// reduceWidth is the vector width of a reduce kernel's loop over the
// last dimension of its result: a vector of the target's width when the
// last axis is kept, every value of the kernel is either contiguous or
// constant along it (views only of the other axes or splitting the last
// innermost, no other reductions), and the result's last extent is static
// and a multiple of the width; 1 elsewhere. On a CPU, a reduction over
// leading axes (a column sum, a per-channel max over the tokens) read one
// element at a time walks down columns; on a CUDA GPU, whose emitters
// spread the loop over threads, each thread of a warp read one bf16 of
// each row (64 bytes a warp), a fraction of a DRAM sector's worth per
// request. Metal and Tenstorrent kernels keep one element.
func (k *kernelBuilder) reduceWidth(fused *ir.Operation, info *passes.KernelInfo, axes []int64, in []int64) int64 {
	n := len(in)
	if (k.target.Family != target.CPU && k.target.Family != target.CUDA) || n < 2 || in[n-1] == ir.Dynamic || slices.Contains(axes, int64(n-1)) {
		return 1
	}
	// an argument whose last axis a reshape splits, [T, H * D] viewed as
	// [T, H, D], is read in contiguous vectors of D's columns too
	split := map[*ir.Value]bool{}
	for _, op := range info.Ops {
		if op.Name() == graph.OpReshape && op.Operand(0).IsBlockArg() && keepsLastAxis(op) {
			split[op.Operand(0)] = true
		}
	}
	var vecs []*ir.Value
	for i, a := range fused.Region(0).Entry().Args {
		if sh := shapeOf(a); len(sh) > 0 && sh[len(sh)-1] != 1 {
			if last := sh[len(sh)-1]; last != in[n-1] && !(split[a] && last%in[n-1] == 0) {
				return 1
			}
			vecs = append(vecs, k.ins[i])
		}
	}
	for _, op := range info.Ops {
		if op != info.Op && (passes.IsView(op) && !keepsLastAxis(op) || op.Name() == graph.OpRoll || op.Name() == graph.OpGather || isRowReduction(op) || op.NumResults() != 1) {
			return 1
		}
		if sh := shapeOf(op.Result(0)); len(sh) > 0 && sh[len(sh)-1] != 1 && sh[len(sh)-1] != in[n-1] {
			return 1
		}
	}
	vecs = append(vecs, k.outs...)
	w := k.vectorWidth(in[n-1], vecs)
	for w > 1 && in[n-1]%w != 0 {
		w /= 2
	}
	return w
}

// keepsLastAxis reports whether view op leaves the last axis where it is,
// or splits it with the result's last dimension innermost: a value read
// through it at column j reads its operand at column j (plus a multiple of
// the last extent), so a vector along the last axis stays a contiguous
// vector. Transposes of the other axes, reshapes regrouping the other axes
// or splitting the last, slices and broadcasts of the other axes do.
func keepsLastAxis(op *ir.Operation) bool {
	in, out := shapeOf(op.Operand(0)), shapeOf(op.Result(0))
	if len(in) == 0 || len(out) == 0 || in[len(in)-1] == ir.Dynamic || out[len(out)-1] == ir.Dynamic {
		return false
	}
	if op.Name() == graph.OpReshape {
		// the last axis kept, or split with the result's last dimension
		// innermost: [T, H * D] as [T, H, D]
		groups, ok := passes.ReshapeGroups(graph.ReshapeOp{Operation: op})
		if !ok || len(groups) == 0 {
			return false
		}
		g := groups[len(groups)-1]
		return len(g.In) == 1 && g.In[0] == len(in)-1 && g.Out[len(g.Out)-1] == len(out)-1
	}
	if in[len(in)-1] != out[len(out)-1] {
		return false
	}
	switch op.Name() {
	case graph.OpTranspose:
		return !passes.MovesLastAxis(graph.TransposeOp{Operation: op})
	case graph.OpSlice:
		sl := graph.SliceOp{Operation: op}
		last := len(in) - 1
		return sl.Offsets()[last] == 0 && graph.SliceStrides(sl)[last] == 1
	case graph.OpBroadcastTo:
		return true
	}
	return false
}

// eachIndexChunked is eachIndex with the last dimension of buf, when
// static and longer than chunk, cut into equal chunks of at most chunk
// elements, one program instance each. With width lanes (a vector
// kernel: the whole last dimension static and a multiple of width), each
// instance takes chunk columns at once, body getting the index of each of
// its vectors.
func (k *kernelBuilder) eachIndexChunked(buf *ir.Value, chunk, width int64, body func(b *ir.Builder, idxs [][]*ir.Value)) {
	shape := buf.Type().(ir.MemRefType).Shape
	n := len(shape)
	one := func(b *ir.Builder, idx []*ir.Value) { body(b, [][]*ir.Value{idx}) }
	size := int64(0)
	gpu := k.target.Family != target.CPU
	switch {
	case width > 1 && gpu:
		// a loop over the chunk by vectors, which the emitters spread over
		// threads: each thread reads width contiguous columns of each row
		for c := chunk; c >= chunk/8; c-- {
			if shape[n-1]%c == 0 && c%width == 0 {
				size = c
				break
			}
		}
		if size == 0 {
			size = width * max(1, min(shape[n-1]/width, chunk/width))
			for shape[n-1]%size != 0 {
				size -= width
			}
		}
	case width > 1:
		// vectors of width columns, at most reduceVectors of them at once
		size = width
		for v := int64(reduceVectors); v > 1; v-- {
			if shape[n-1]%(v*width) == 0 {
				size = v * width
				break
			}
		}
	case n > 0 && shape[n-1] != ir.Dynamic && shape[n-1] > chunk:
		for c := chunk; c >= chunk/8; c-- {
			if shape[n-1]%c == 0 {
				size = c
				break
			}
		}
	}
	if size == 0 {
		k.eachIndex(buf, one)
		return
	}
	ext := make([]*ir.Value, n)
	for d := range ext {
		ext[d] = k.dim(buf, d)
	}
	chunks := k.index(shape[n-1] / size)
	rows := k.product(k.kb, append(append([]*ir.Value(nil), ext[:n-1]...), chunks))
	k.grid(rows, func(b *ir.Builder, r *ir.Value) {
		c := r
		var lead []*ir.Value
		if n > 1 {
			c = must(loop.BuildRemi(b, k.loc, r, chunks)).Output()
			lead = k.splitRow(b, must(loop.BuildDivi(b, k.loc, r, chunks)).Output(), ext[:n-1])
		}
		lo := must(loop.BuildMuli(b, k.loc, c, k.index(size))).Output()
		if width > 1 && !gpu {
			var idxs [][]*ir.Value
			for off := int64(0); off < size; off += width {
				j := lo
				if off > 0 {
					j = must(loop.BuildAddi(b, k.loc, lo, k.index(off))).Output()
				}
				j.Name = "j"
				idxs = append(idxs, append(append([]*ir.Value(nil), lead...), j))
			}
			body(b, idxs)
			return
		}
		must(loop.BuildFor(b, k.loc, k.index(0), k.index(size), k.index(max(width, 1)), nil, "serial", nil,
			func(bb *ir.Builder, i *ir.Value, _ []*ir.Value) ([]*ir.Value, error) {
				j := must(loop.BuildAddi(bb, k.loc, lo, i)).Output()
				j.Name = "j"
				one(bb, append(append([]*ir.Value(nil), lead...), j))
				return nil, nil
			}))
	})
}

// reduceVectors is the most vectors of a CPU reduce kernel's result that
// one instance accumulates at once (in registers, each reduced element
// read as that many contiguous vectors).
const reduceVectors = 8
