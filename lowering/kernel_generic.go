package lowering

import (
	"slices"

	"github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/passes"
)

// This file builds the kernels of the ops that are kernels of their own:
// transpose, slice, concat, broadcast_to, reshape, gather and dense
// constants (reductions over other axes than the last alone, with or
// without element-wise work around them: kernel_reduce.go). They are
// scalar loops over the output elements, one program instance per output
// row, with the index arithmetic of the op:
//
//	loop.parallel %c0, %rows, %c1 {dist = "grid"} {
//	^bb0(%r: index):
//	  loop.for %c0, %n, %c1 {
//	  ^bb0(%j: index):
//	    %v = loop.load %x, %j, %r : (memref<8x4xf32, dram>, index, index) -> f32
//	    loop.store %v, %y, %r, %j : (f32, memref<4x8xf32, dram>, index, index) -> ()
//	    loop.yield
//	  } : index
//	  loop.yield
//	} : index

// generic builds the kernel of a graph.fused holding one such op.
func (k *kernelBuilder) generic(fused *ir.Operation, info *passes.KernelInfo) error {
	if info.Kind == passes.KernelReduce {
		return k.reduceFused(fused, info) // alone, or with producers and consumers
	}
	k.setAttr("vector_width", intAttr(1))
	g := &genericKernel{k: k, buffers: map[*ir.Value]*ir.Value{}}
	for i, a := range fused.Region(0).Entry().Args {
		g.buffers[a] = k.ins[i]
	}
	op := info.Op
	if op == nil || op.NumResults() != 1 || len(yielded(fused)) != 1 || yielded(fused)[0] != op.Result(0) {
		fail(fused, "is a kernel of its own but does not yield exactly its op's result")
	}
	out := k.outs[0]
	switch op.Name() {
	case graph.OpConcat:
		g.concat(op, out)
		return nil
	}
	if d, ok := g.tiledTranspose(op, out); ok {
		if in, ok := g.buffers[op.Operand(0)]; ok {
			g.transposeTiles(op, in, out, d)
			return nil
		}
		g.eachOutputTiled(out, d, func(b *ir.Builder, idx []*ir.Value) *ir.Value { return g.transpose(b, op, idx) })
		return nil
	}
	g.eachOutput(out, func(b *ir.Builder, idx []*ir.Value) *ir.Value {
		switch op.Name() {
		case graph.OpTranspose:
			return g.transpose(b, op, idx)
		case graph.OpSlice:
			return g.slice(b, op, idx)
		case graph.OpBroadcastTo:
			return g.read(b, op.Operand(0), g.broadcastIndex(b, op.Operand(0), idx))
		case graph.OpReshape:
			return g.reshape(b, op, out, idx)
		case graph.OpGather:
			return g.gather(b, op, idx)
		}
		fail(op, "cannot be lowered to a kernel of its own")
		return nil
	})
	return nil
}

// genericKernel holds the state of one generic kernel.
type genericKernel struct {
	k       *kernelBuilder
	buffers map[*ir.Value]*ir.Value
}

// eachOutput builds the grid over the rows of buffer out and a serial
// loop over each row; value computes the element at the output index
// (scalar, in the output's element type), which is stored.
func (g *genericKernel) eachOutput(out *ir.Value, value func(b *ir.Builder, idx []*ir.Value) *ir.Value) {
	g.k.eachIndex(out, func(b *ir.Builder, idx []*ir.Value) {
		must(loop.BuildStore(b, g.k.loc, value(b, idx), out, g.k.scatterIndex(b, out, idx)))
	})
}

// eachIndex builds the grid over the rows of buffer buf and a serial loop
// over each row, calling body at every index of buf.
func (k *kernelBuilder) eachIndex(buf *ir.Value, body func(b *ir.Builder, idx []*ir.Value)) {
	n := len(buf.Type().(ir.MemRefType).Shape)
	ext := make([]*ir.Value, n)
	for d := range ext {
		ext[d] = k.dim(buf, d)
	}
	if n == 0 {
		k.grid(k.index(1), func(b *ir.Builder, _ *ir.Value) { body(b, nil) })
		return
	}
	rows := k.product(k.kb, ext[:n-1])
	k.grid(rows, func(b *ir.Builder, r *ir.Value) {
		lead := k.splitRow(b, r, ext[:n-1])
		must(loop.BuildFor(b, k.loc, k.index(0), ext[n-1], k.index(1), nil, "serial", nil,
			func(bb *ir.Builder, j *ir.Value, _ []*ir.Value) ([]*ir.Value, error) {
				j.Name = "j"
				body(bb, append(slices.Clone(lead), j))
				return nil, nil
			}))
	})
}

// indexCopy is the body of graph.index_copy's kernel: a loop over the
// source's elements, each stored into the destination at its own index
// with the axis coordinate replaced by the index tensor's entry there,
// clamped into the axis (loop.clamp_index), so that a bad index writes
// the nearest end of the destination, never another buffer. The kernel
// reads the index tensor and the source and writes only the slices the
// indices name:
//
//	%t = loop.load %pos, %j : (memref<?xi64, dram>, index) -> i64
//	%at = loop.clamp_index %t, %c2048 : (i64, index) -> index
//	%v = loop.load %k, %c0, %h, %j, %i : ... -> bf16
//	loop.store %v, %cache, %c0, %h, %at, %i : ...
func (k *kernelBuilder) indexCopy(axis int) error {
	k.setAttr("vector_width", intAttr(1))
	indices, src, dst := k.ins[0], k.ins[1], k.outs[0]
	k.eachIndex(src, func(b *ir.Builder, idx []*ir.Value) {
		t := must(loop.BuildLoad(b, k.loc, indices, []*ir.Value{idx[axis]}, indices.Type().(ir.MemRefType).Elem)).Output()
		at := slices.Clone(idx)
		at[axis] = must(loop.BuildClampIndex(b, k.loc, t, k.dim(dst, axis))).Output()
		at[axis].Name = "at"
		v := must(loop.BuildLoad(b, k.loc, src, idx, src.Type().(ir.MemRefType).Elem)).Output()
		must(loop.BuildStore(b, k.loc, v, dst, at))
	})
	return nil
}

// read loads operand v (a block argument) at idx, or gives the splat
// constant it is.
func (g *genericKernel) read(b *ir.Builder, v *ir.Value, idx []*ir.Value) *ir.Value {
	if c, ok := graph.AsConstant(v.DefiningOp()); ok && c.Value().IsSplat() {
		return g.k.constant(elemOf(v), c.Value().At(0))
	}
	buf, ok := g.buffers[v]
	if !ok {
		if d := v.DefiningOp(); d != nil {
			fail(d, "is read by a kernel of its own but is neither an operand nor a splat constant")
		}
		panic(lowerError{ir.Errorf(g.k.loc, "a kernel reads a value it has no buffer for")})
	}
	return must(loop.BuildLoad(b, g.k.loc, buf, idx, elemOf(v))).Output()
}

// extent returns dimension d of operand v: its buffer's, or the static one.
func (g *genericKernel) extent(v *ir.Value, d int) *ir.Value {
	if buf, ok := g.buffers[v]; ok {
		return g.k.dim(buf, d)
	}
	return g.k.index(shapeOf(v)[d])
}

func (g *genericKernel) addi(b *ir.Builder, x, y *ir.Value) *ir.Value {
	switch {
	case isIndexConst(y, 0):
		return x
	case isIndexConst(x, 0):
		return y
	}
	return must(loop.BuildAddi(b, g.k.loc, x, y)).Output()
}

func (g *genericKernel) muli(b *ir.Builder, x, y *ir.Value) *ir.Value {
	switch {
	case isIndexConst(x, 0) || isIndexConst(y, 0):
		return g.k.index(0)
	case isIndexConst(y, 1):
		return x
	case isIndexConst(x, 1):
		return y
	}
	return must(loop.BuildMuli(b, g.k.loc, x, y)).Output()
}

// transposeTile is the columns of the tiles of a CPU transpose that moves
// the last axis (and the fewest rows: tileRows): 16 elements, a cache line
// of f32 and half one of bf16. The lines a tile reads, one per column, lie
// a row of the operand apart, which for rows of a power of two bytes maps
// them all to one set of the L1 cache: 16 of them fit its ways where 32
// thrashed (a [4096, 4096] bf16 transpose took 24-27 ms in square tiles of
// 32 and 14-16 ms in tiles of 16 on the 2-core development machine; other
// shapes 0-15% faster). Rows of a whole line of bf16 (32 x 16 tiles) then
// took 10.5-10.8 against 11.2-11.4.
const transposeTile = 16

// tiledTranspose reports whether op, a kernel of its own writing out, is a
// transpose that moves the last axis on a CPU, and which dimension of the
// result reads the operand's last (the other side of its tiles): walking
// each result row in turn read one element per line and per page of the
// operand (a [4096, 4096] bf16 transpose ran 50 times slower than a copy
// of its bytes). Both tiled dimensions must be longer than a tile, or
// `?`.
func (g *genericKernel) tiledTranspose(op *ir.Operation, out *ir.Value) (int, bool) {
	t, ok := graph.AsTranspose(op)
	if !g.k.stridedAccesses() || !ok || !passes.MovesLastAxis(t) {
		return 0, false
	}
	perm := passes.TransposePerm(t)
	shape := out.Type().(ir.MemRefType).Shape
	n := len(perm)
	if n < 2 || len(shape) != n {
		return 0, false
	}
	d := slices.Index(perm, int64(n-1))
	if d < 0 || shortAxis(shape[d]) || shortAxis(shape[n-1]) {
		return 0, false
	}
	return d, true
}

// shortAxis reports whether a dimension of extent e is too short to tile
// for a transpose: static and a tile or less. A `?` is tiled (its tiles
// counted at launch).
func shortAxis(e int64) bool {
	return e != ir.Dynamic && e <= transposeTile
}

// eachOutputTiled is eachOutput in square tiles of the result's
// dimensions d and the last (tileGrid), each walked row by row.
func (g *genericKernel) eachOutputTiled(out *ir.Value, d int, value func(b *ir.Builder, idx []*ir.Value) *ir.Value) {
	k := g.k
	shape := out.Type().(ir.MemRefType).Shape
	n := len(shape)
	lead := make([]*ir.Value, n-1)
	for i := range lead {
		lead[i] = k.dim(out, i)
	}
	k.tileGrid(lead, k.dim(out, n-1), shape, d, tileRows(out.Type().(ir.MemRefType).Elem.Kind.ByteSize()), func(b *ir.Builder, idx []*ir.Value, colLo, cols *ir.Value) {
		must(loop.BuildFor(b, k.loc, k.index(0), cols, k.index(1), nil, "serial", nil,
			func(bj *ir.Builder, j *ir.Value, _ []*ir.Value) ([]*ir.Value, error) {
				at := append(slices.Clone(idx), must(loop.BuildAddi(bj, k.loc, colLo, j)).Output())
				at[n-1].Name = "j"
				must(loop.BuildStore(bj, k.loc, value(bj, at), out, k.scatterIndex(bj, out, at)))
				return nil, nil
			}))
	})
}

// transposeTiles is the kernel of transpose op, from buffer in to out, on
// a CPU (tiledTranspose): tiles of the result's dimensions d and the last
// (tileGrid), each row of a tile copied in vectors, each read by a
// strided load down a column of the operand (loop.load's `axis`: the
// lanes of a row of the tile lie in 16 lines of the operand, which the
// tile's 16 rows share) and stored whole. The last tile of a row, cut
// short, ends in scalars.
//
//	loop.for %c0, %c16, %c1 {
//	^bb2(%4: index):
//	  %5 = loop.addi %2, %4 : index
//	  loop.for %3, %6, %c16 {
//	  ^bb3(%j: index):
//	    %7 = loop.load %x, %j, %5 {axis = 0} : (memref<4096x4096xbf16, dram>, index, index) -> vector<16xbf16>
//	    loop.store %7, %y, %5, %j : (vector<16xbf16>, memref<4096x4096xbf16, dram>, index, index) -> ()
func (g *genericKernel) transposeTiles(op *ir.Operation, in, out *ir.Value, d int) {
	k := g.k
	mt := out.Type().(ir.MemRefType)
	n := len(mt.Shape)
	perm := passes.TransposePerm(graph.TransposeOp{Operation: op})
	w := min(k.vectorWidth(transposeTile, []*ir.Value{out}), transposeTile)
	k.setAttr("vector_width", intAttr(w))
	lead := make([]*ir.Value, n-1)
	for i := range lead {
		lead[i] = k.dim(out, i)
	}
	k.tileGrid(lead, k.dim(out, n-1), mt.Shape, d, tileRows(mt.Elem.Kind.ByteSize()), func(b *ir.Builder, idx []*ir.Value, colLo, cols *ir.Value) {
		copyCols := func(lo, hi *ir.Value, lanes int64) {
			must(loop.BuildFor(b, k.loc, lo, hi, k.index(max(lanes, 1)), nil, "serial", nil,
				func(bj *ir.Builder, j *ir.Value, _ []*ir.Value) ([]*ir.Value, error) {
					j.Name = "j"
					at := append(slices.Clone(idx), j)
					src := make([]*ir.Value, n)
					for r, o := range perm {
						src[o] = at[r]
					}
					var v *ir.Value
					if lanes > 1 {
						v = must(loop.BuildStridedLoad(bj, k.loc, in, src, loop.Vector(lanes, mt.Elem), int(perm[n-1]))).Output()
					} else {
						v = must(loop.BuildLoad(bj, k.loc, in, src, mt.Elem)).Output()
					}
					must(loop.BuildStore(bj, k.loc, v, out, k.scatterIndex(bj, out, at)))
					return nil, nil
				}))
		}
		hi := must(loop.BuildAddi(b, k.loc, colLo, cols)).Output()
		if c, ok := loop.EvalIndex(cols, nil); ok && c%w == 0 || w == 1 {
			copyCols(colLo, hi, w)
			return
		}
		rem := must(loop.BuildRemi(b, k.loc, cols, k.index(w))).Output()
		main := must(loop.BuildSubi(b, k.loc, hi, rem)).Output()
		copyCols(colLo, main, w)
		copyCols(main, hi, 1)
	})
}

// tileRows is the rows of dimension d a tile of tileGrid spans for a
// transposed operand of elemBytes-byte elements: a cache line of them
// (32 of bf16), so that each of the transposeTile lines a tile reads is
// used whole before it is evicted; at least two squares of
// transposeTile (32 rows of f32 too: [4096, 4096] f32, 3 alternating
// runs each, silu(transpose(x) + z) 18.6-19.8 ms against 21.5-24.8 in
// tiles of 16 rows, the transpose alone 7.0-9.0 against 8.1-9.8).
func tileRows(elemBytes int64) int64 {
	return max(2*transposeTile, 64/max(elemBytes, 1))
}

// tileGrid launches a program instance per tile of dimensions d and the
// last of a space of shape shape, whose leading extents are lead, and per
// index of its other leading dimensions: rows of d (tileRows) by
// transposeTile columns. Each walks its tile's rows in a serial loop, so
// that the lines of a transposed operand a tile reads (one per column)
// are read together. body is built once, in that loop, with the leading
// indices of the row (d's the row's) and the tile's first column and
// number of columns. Tiles at the far edges are cut short (loop.mini).
// Dimension d and the last (of extent colExt) may be `?`: their tiles
// are counted at launch.
func (k *kernelBuilder) tileGrid(lead []*ir.Value, colExt *ir.Value, shape []int64, d int, rowsPerTile int64, body func(b *ir.Builder, idx []*ir.Value, colLo, cols *ir.Value)) {
	n := len(shape)
	const t = transposeTile
	tiles := func(e int64, ext *ir.Value, t int64) *ir.Value {
		if e != ir.Dynamic {
			return k.index((e + t - 1) / t)
		}
		up := must(loop.BuildAddi(k.kb, k.loc, ext, k.index(t-1))).Output()
		return must(loop.BuildDivi(k.kb, k.loc, up, k.index(t))).Output()
	}
	var grid []*ir.Value // the other dimensions first
	var dims []int
	for i := range n - 1 {
		if i != d {
			grid = append(grid, lead[i])
			dims = append(dims, i)
		}
	}
	grid = append(grid, tiles(shape[d], lead[d], rowsPerTile), tiles(shape[n-1], colExt, t))
	k.grid(k.product(k.kb, grid), func(b *ir.Builder, r *ir.Value) {
		at := k.splitRow(b, r, grid)
		idx := make([]*ir.Value, n-1)
		for i, dim := range dims {
			idx[dim] = at[i]
		}
		mul := func(x *ir.Value, t int64) *ir.Value {
			if isIndexConst(x, 0) {
				return x
			}
			return must(loop.BuildMuli(b, k.loc, x, k.index(t))).Output()
		}
		rowLo, colLo := mul(at[len(at)-2], rowsPerTile), mul(at[len(at)-1], t)
		bound := func(lo *ir.Value, e int64, ext *ir.Value, t int64) *ir.Value {
			if e != ir.Dynamic && e%t == 0 {
				return k.index(t)
			}
			if e != ir.Dynamic {
				ext = k.index(e)
			}
			left := must(loop.BuildSubi(b, k.loc, ext, lo)).Output()
			return must(loop.BuildMini(b, k.loc, left, k.index(t))).Output()
		}
		rows, cols := bound(rowLo, shape[d], lead[d], rowsPerTile), bound(colLo, shape[n-1], colExt, t)
		must(loop.BuildFor(b, k.loc, k.index(0), rows, k.index(1), nil, "serial", nil,
			func(bi *ir.Builder, i *ir.Value, _ []*ir.Value) ([]*ir.Value, error) {
				row := slices.Clone(idx)
				row[d] = must(loop.BuildAddi(bi, k.loc, rowLo, i)).Output()
				body(bi, row, colLo, cols)
				return nil, nil
			}))
	})
}

// transpose: result dimension i is operand dimension perm[i].
func (g *genericKernel) transpose(b *ir.Builder, op *ir.Operation, idx []*ir.Value) *ir.Value {
	perm := graph.TransposeOp{Operation: op}.Perm()
	n := len(idx)
	in := make([]*ir.Value, n)
	for i := range idx {
		src := n - 1 - i
		if len(perm) == n {
			src = int(perm[i])
		}
		in[src] = idx[i]
	}
	return g.read(b, op.Operand(0), in)
}

// gather: the data index is the output index with the axis replaced by
// the index read there, clamped into the axis (loop.clamp_index), so that
// an index out of range reads the nearest end instead of another buffer.
func (g *genericKernel) gather(b *ir.Builder, op *ir.Operation, idx []*ir.Value) *ir.Value {
	gt := graph.GatherOp{Operation: op}
	axis := int(normAxis(gt.Axis(), len(idx)))
	t := g.read(b, gt.Indices(), idx)
	in := slices.Clone(idx)
	in[axis] = must(loop.BuildClampIndex(b, op.Loc, t, g.extent(gt.Input(), axis))).Output()
	in[axis].Name = "gathered"
	return g.read(b, gt.Input(), in)
}

// slice: the operand index is the output index times the stride, plus the
// offset.
func (g *genericKernel) slice(b *ir.Builder, op *ir.Operation, idx []*ir.Value) *ir.Value {
	s := graph.SliceOp{Operation: op}
	offsets, strides := s.Offsets(), graph.SliceStrides(s)
	in := make([]*ir.Value, len(idx))
	for i, x := range idx {
		in[i] = x
		if i < len(strides) && strides[i] != 1 {
			in[i] = must(loop.BuildMuli(b, op.Loc, in[i], g.k.index(strides[i]))).Output()
		}
		if i < len(offsets) && offsets[i] != 0 {
			in[i] = g.addi(b, in[i], g.k.index(offsets[i]))
		}
	}
	return g.read(b, op.Operand(0), in)
}

// broadcastIndex maps an index of a broadcast result to operand v aligned
// from the right: extent-1 dimensions read index 0, a `?` paired with a
// static extent reads modulo its run-time extent.
func (g *genericKernel) broadcastIndex(b *ir.Builder, v *ir.Value, idx []*ir.Value) []*ir.Value {
	return g.broadcastIndexOf(b, v, shapeOf(v), idx)
}

// broadcastIndexOf is broadcastIndex for the leading dimensions s of v
// (matmul's batch dimensions).
func (g *genericKernel) broadcastIndexOf(b *ir.Builder, v *ir.Value, s []int64, idx []*ir.Value) []*ir.Value {
	off := len(idx) - len(s)
	in := make([]*ir.Value, len(s))
	for j, e := range s {
		switch {
		case e == 1:
			in[j] = g.k.index(0)
		case e == ir.Dynamic:
			in[j] = must(loop.BuildRemi(b, g.k.loc, idx[j+off], g.extent(v, j))).Output()
		default:
			in[j] = idx[j+off]
		}
	}
	return in
}

// linear returns the row-major offset of idx in extents ext.
func (g *genericKernel) linear(b *ir.Builder, idx, ext []*ir.Value) *ir.Value {
	if len(idx) == 0 {
		return g.k.index(0)
	}
	l := idx[0]
	for d := 1; d < len(idx); d++ {
		l = g.addi(b, g.muli(b, l, ext[d]), idx[d])
	}
	return l
}

// split turns a row-major offset into the index of extents ext.
func (g *genericKernel) split(b *ir.Builder, l *ir.Value, ext []*ir.Value) []*ir.Value {
	idx := make([]*ir.Value, len(ext))
	for d := len(ext) - 1; d >= 0; d-- {
		if d == 0 {
			idx[d] = l
			break
		}
		idx[d] = must(loop.BuildRemi(b, g.k.loc, l, ext[d])).Output()
		l = must(loop.BuildDivi(b, g.k.loc, l, ext[d])).Output()
	}
	return idx
}

// reshape: the element at the same row-major offset.
func (g *genericKernel) reshape(b *ir.Builder, op *ir.Operation, out *ir.Value, idx []*ir.Value) *ir.Value {
	outExt := make([]*ir.Value, len(idx))
	for d := range idx {
		outExt[d] = g.k.dim(out, d)
	}
	in := op.Operand(0)
	inExt := make([]*ir.Value, len(shapeOf(in)))
	for d := range inExt {
		inExt[d] = g.extent(in, d)
	}
	return g.read(b, in, g.split(b, g.linear(b, idx, outExt), inExt))
}

// concatChunk is the elements from the axis on of each operand that one
// program instance of a concat copies at most: a long concat (a KV cache
// of a few heads and the new token along the tokens) spreads over
// instances enough to fill a GPU, a short one keeps one per row.
const concatChunk = 8192

// concat copies each operand into its place along the axis: program
// instances over the indices of the dimensions before the axis, times S
// chunks where the operands' elements from the axis on (sum N) exceed
// concatChunk (S = ceil(N / concatChunk)); instance (row, s) copies
// elements [s * concatChunk, (s + 1) * concatChunk) of every operand, in
// a serial loop per operand (empty where the operand is shorter).
func (g *genericKernel) concat(op *ir.Operation, out *ir.Value) {
	k := g.k
	c := graph.ConcatOp{Operation: op}
	n := len(shapeOf(op.Result(0)))
	axis := int(normAxis(c.Axis(), n))
	outExt := make([]*ir.Value, n)
	for d := range outExt {
		outExt[d] = k.dim(out, d)
	}
	// offsets along the axis, from the operands' extents; each operand's
	// extents from the axis on and their product
	offsets := make([]*ir.Value, op.NumOperands())
	exts := make([][]*ir.Value, op.NumOperands())
	counts := make([]*ir.Value, op.NumOperands())
	off := k.index(0)
	total := k.index(0)
	for i, v := range op.Operands() {
		offsets[i] = off
		if i+1 < op.NumOperands() {
			off = g.addi(k.kb, off, g.extent(v, axis))
		}
		exts[i] = make([]*ir.Value, n-axis)
		for d := range exts[i] {
			exts[i][d] = g.extent(v, axis+d)
		}
		counts[i] = k.product(k.kb, exts[i])
		if constIndex(total) >= 0 && constIndex(counts[i]) >= 0 {
			total = k.index(constIndex(total) + constIndex(counts[i]))
		} else {
			total = g.addi(k.kb, total, counts[i])
		}
	}
	var chunks *ir.Value
	if t := constIndex(total); t >= 0 {
		chunks = k.index(max(1, (t+concatChunk-1)/concatChunk))
	} else {
		sum := must(loop.BuildAddi(k.kb, k.loc, total, k.index(concatChunk-1))).Output()
		chunks = must(loop.BuildDivi(k.kb, k.loc, sum, k.index(concatChunk))).Output()
	}
	rows := k.product(k.kb, outExt[:axis])
	k.grid(k.product(k.kb, []*ir.Value{rows, chunks}), func(b *ir.Builder, r *ir.Value) {
		row, start := r, k.index(0)
		if !isIndexConst(chunks, 1) {
			row = must(loop.BuildDivi(b, k.loc, r, chunks)).Output()
			s := must(loop.BuildRemi(b, k.loc, r, chunks)).Output()
			start = must(loop.BuildMuli(b, k.loc, s, k.index(concatChunk))).Output()
		}
		lead := k.splitRow(b, row, outExt[:axis])
		for i, v := range op.Operands() {
			lo, hi := k.index(0), counts[i]
			if !isIndexConst(chunks, 1) {
				end := must(loop.BuildAddi(b, k.loc, start, k.index(concatChunk))).Output()
				lo = must(loop.BuildMini(b, k.loc, start, counts[i])).Output()
				hi = must(loop.BuildMini(b, k.loc, end, counts[i])).Output()
			}
			ext := exts[i]
			must(loop.BuildFor(b, k.loc, lo, hi, k.index(1), nil, "serial", nil,
				func(bb *ir.Builder, l *ir.Value, _ []*ir.Value) ([]*ir.Value, error) {
					l.Name = "e"
					rest := g.split(bb, l, ext)
					src := append(slices.Clone(lead), rest...)
					dst := slices.Clone(src)
					dst[axis] = g.addi(bb, dst[axis], offsets[i])
					must(loop.BuildStore(bb, k.loc, g.read(bb, v, src), out, dst))
					return nil, nil
				}))
		}
	})
}

// maxDenseElements bounds the dense constants lowered to explicit stores.
const maxDenseElements = 4096

// denseConstant builds a kernel writing a dense constant to its output: one
// store per element, in a single program instance.
func (k *kernelBuilder) denseConstant(c graph.ConstantOp) error {
	v := c.Value()
	shape := v.Type.GetShape()
	count, _ := ir.NumElements(shape)
	if count > maxDenseElements {
		return ir.OpError(c.Operation, "is a dense constant of %d elements; lowering writes at most %d element by element", count, maxDenseElements)
	}
	k.setAttr("vector_width", intAttr(1))
	out := k.outs[0]
	e := elemOf(c.Output())
	k.grid(k.index(1), func(b *ir.Builder, _ *ir.Value) {
		idx := make([]int64, len(shape))
		for i := int64(0); i < count; i++ {
			at := make([]*ir.Value, len(shape))
			for d := range idx {
				at[d] = k.index(idx[d])
			}
			must(loop.BuildStore(b, k.loc, k.constant(e, v.At(i)), out, at))
			for d := len(idx) - 1; d >= 0; d-- {
				idx[d]++
				if idx[d] < shape[d] {
					break
				}
				idx[d] = 0
			}
		}
	})
	return nil
}
