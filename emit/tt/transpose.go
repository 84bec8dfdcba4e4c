package tt

import (
	"fmt"

	"github.com/tensorforge/tensorforge/ir"
)

// This file maps the generic kernel of a transpose of the last two
// dimensions onto tiles. lower-to-loops writes it as a copy in a serial
// loop over the result's row:
//
//	loop.parallel %c0, %cR, %c1 {dist = "grid"} {     // R = B*W rows of the result
//	^bb1(%r: index):
//	  loop.for %c0, %cH, %c1 {                        // its H columns
//	  ^bb2(%j: index):
//	    %0 = loop.load %x, %b, %j, %w                 // x: [B, H, W]
//	    loop.store %0, %y, %b, %w, %j                 // y: [B, W, H]
//
// Tile (ob, oc) of a result matrix is the transposed tile (oc, ob) of the
// same batch of the input: the reader reads that tile and the compute
// kernel transposes it with transpose_tile, which moves every element
// exactly (32-bit tiles are unpacked straight to DST, so program.json asks
// for UnpackToDestFp32 on a Float32 input). A batch's rows start a new
// tile row only when H and W are multiples of 32, so a transpose of
// several batches needs them to be.

// planTranspose recognises a transpose of the last two dimensions and
// builds its statements; false when the kernel is something else.
func (g *kgen) planTranspose() bool {
	cl, ok := g.matchCopyLoop()
	if !ok {
		return false
	}
	f, j, ld, st, in, out := cl.f, cl.j, cl.ld, cl.st, cl.in, cl.out
	body := f.Operation
	li, si := ld.Indices(), st.Indices()
	n := len(li)
	if n < 2 || len(si) != n || li[n-2] != j || si[n-1] != j || li[n-1] != si[n-2] {
		return false
	}
	for d := 0; d < n-2; d++ {
		if li[d] != si[d] {
			return false
		}
	}
	// the shapes: x [..., H, W], y [..., W, H], every extent static
	batch := int64(1)
	for d := 0; d < n-2; d++ {
		if in.shape[d] == ir.Dynamic {
			g.fail(body, "transposes '%s', whose dimension %d has a run-time extent; the backend transposes static shapes", in.name, d)
		}
		batch *= in.shape[d]
	}
	h, w := in.shape[n-2], in.shape[n-1]
	if h == ir.Dynamic || w == ir.Dynamic {
		g.fail(body, "transposes '%s', whose last two dimensions have a run-time extent; the backend transposes static shapes", in.name)
	}
	if batch > 1 && (h%TileRows != 0 || w%TileRows != 0) {
		g.fail(body, "transposes %d matrices of %dx%d, which are not whole tiles: a tile of the result would hold rows of two of them (the backend transposes several matrices when both extents are multiples of 32)", batch, h, w)
	}
	if h != 0 {
		if up, ok := constIndex(f.Upper()); !ok || up != h {
			return false
		}
	}

	// the work: every tile of the result, B*W rows of H columns
	g.kind = "transpose"
	g.perTile = true
	g.rows, g.cols, g.rowLen = constExpr(batch*w), constExpr(h), h
	ht, wt := (h+TileCols-1)/TileCols, (w+TileRows-1)/TileRows
	in.seen, in.access = true, clsFull
	out.seen, out.access = true, clsFull
	// tile (rb, ct) of the result: batch rb / Wt, its row tile rb % Wt;
	// the input's tile of that batch at row tile ct, column tile rb % Wt
	in.tileIndex = fmt.Sprintf("(rb / %d * %d + ct) * %d + rb %% %d", wt, ht, wt, wt)
	if batch == 1 {
		in.tileIndex = fmt.Sprintf("ct * %d + rb", wt)
	}
	cbIn := g.newCB("cb_"+in.name, in.fmt, 2, fmt.Sprintf("tiles of %s, from the reader, to transpose", in.name))
	cbOut := g.newCB("cb_"+out.name, out.fmt, 2, fmt.Sprintf("tiles of %s, to the writer", out.name))
	if in.fmt == float32Format {
		g.unpackToDest = append(g.unpackToDest, cbIn)
	}
	leaf := &cbValue{cb: cbIn, index: "0", cls: clsFull}
	sec := &sectionStmt{comment: "transpose " + cbIn.name, dests: []*cbuf{cbOut},
		tree:  &node{kind: nOp, cls: clsFull, op: "transpose", args: []*node{{kind: nLeaf, cls: clsFull, leaf: leaf}}},
		waits: []cbOp{{cb: cbIn, n: "1"}}, pops: []cbOp{{cb: cbIn, n: "1", pop: true}}}
	g.body = []stmt{&readStmt{p: in, cb: cbIn}, sec, &writeStmt{p: out, cb: cbOut}}
	return true
}
