package tt

import (
	"fmt"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// This file maps the generic kernel of a view that keeps the last axis
// and moves whole rows (a transpose of leading dimensions: a per-head
// norm's result from [tokens, heads, d] to the attention layout [heads,
// tokens, d]) onto tiles. lower-to-loops writes it as a copy in a serial
// loop over the result's row:
//
//	loop.parallel %c0, %cR, %c1 {dist = "grid"} {     // R rows of the result
//	^bb1(%r: index):
//	  %0 = loop.remi %r, %c40 ...                     // the result's leading indices
//	  loop.for %c0, %cC, %c1 {                        // its C columns
//	  ^bb2(%j: index):
//	    %v = loop.load %x, %c0, %0, %1, %j            // another row of x
//	    loop.store %v, %y, %c0, %1, %0, %j            // row r of y
//
// Row r of the result is row rowMap(r) of the input, so the reader
// gathers each tile of the result row by row from the input's tiles (or
// reads a whole tile where the map moves whole tiles), the compute kernel
// copies it, and the writer writes it as an element-wise kernel writes
// its result. Rows of run-time extent are gathered with the extents as
// runtime arguments of the reader.

// planRowCopy recognises such a copy and builds its statements; false
// when the kernel is something else.
func (g *kgen) planRowCopy() bool {
	cl, ok := g.matchCopyLoop()
	if !ok {
		return false
	}
	f, j, ld, st, in, out := cl.f, cl.j, cl.ld, cl.st, cl.in, cl.out
	li, si := ld.Indices(), st.Indices()
	n, m := len(li), len(si)
	if n < 2 || m < 2 || li[n-1] != j || si[m-1] != j {
		return false
	}
	c := in.shape[n-1]
	if c == ir.Dynamic || out.shape[m-1] != c {
		return false
	}
	if up, ok := constIndex(f.Upper()); !ok || up != c {
		return false
	}
	if !g.storesRowR(out, si[:m-1]) {
		return false
	}

	// the work: every tile of the result, R rows of C columns
	g.kind = "elementwise"
	g.perTile = true
	g.rows, g.cols, g.rowLen = g.extentOf(g.grid.Upper()), constExpr(c), c
	g.threadsIV[j] = true // the column, for the maps below
	rowMap := g.rowMapOf(ld.Operation, in, li, true)
	in.seen, in.access, in.rowMap = true, clsFull, rowMap
	out.seen, out.access = true, clsFull
	tile := g.mappedTile(in, li, rowMap, 0)
	if tile != "" {
		rowMap = "" // whole tiles of the input: no gather
		in.rowMap = ""
	}
	cbIn := g.newCB("cb_"+in.name, in.fmt, 2, fmt.Sprintf("%s tiles of %s, from the reader", describeAccess(clsFull, rowMap), in.name))
	if rowMap != "" {
		in.scratch = g.newCB("cb_"+in.name+"_src", in.fmt, 1, fmt.Sprintf("the reader's copy of a tile of %s, whose rows it gathers", in.name))
	}
	cbOut := g.newCB("cb_"+out.name, out.fmt, 2, fmt.Sprintf("tiles of %s, to the writer", out.name))
	if in.fmt == float32Format {
		g.unpackToDest = append(g.unpackToDest, cbIn) // copied with all 32 bits
	}
	leaf := &cbValue{cb: cbIn, index: "0", cls: clsFull}
	sec := &sectionStmt{comment: "copy " + cbIn.name, dests: []*cbuf{cbOut},
		tree:  &node{kind: nLeaf, cls: clsFull, leaf: leaf},
		waits: []cbOp{{cb: cbIn, n: "1"}}, pops: []cbOp{{cb: cbIn, n: "1", pop: true}}}
	g.body = []stmt{&readStmt{p: in, cb: cbIn, rowMap: rowMap, tile: tile}, sec, &writeStmt{p: out, cb: cbOut}}
	return true
}

// storesRowR reports whether the store's leading indices si address row
// r of out at every row r of the kernel: checked at every row where the
// rows are static, and at every row of two choices of the run-time
// extents (5 and 37) otherwise.
func (g *kgen) storesRowR(out *param, si []*ir.Value) bool {
	row := g.grid.Body().Entry().Args[0]
	check := func(ext int64) bool {
		bind := func(x *ir.Value) (int64, bool) {
			if _, ok := g.extent[x]; ok {
				return ext, true
			}
			return 0, false
		}
		shape := make([]int64, len(si))
		rows := int64(1)
		for d := range si {
			shape[d] = out.shape[d]
			if shape[d] == ir.Dynamic {
				shape[d] = ext
			}
			rows *= shape[d]
		}
		if up, ok := loop.EvalIndex(g.grid.Upper(), bind); !ok || up != rows || rows > 1<<20 {
			return false
		}
		for r := int64(0); r < rows; r++ {
			at := func(x *ir.Value) (int64, bool) {
				if x == row {
					return r, true
				}
				return bind(x)
			}
			flat := int64(0)
			for d, v := range si {
				x, ok := loop.EvalIndex(v, at)
				if !ok || x < 0 || x >= shape[d] {
					return false
				}
				flat = flat*shape[d] + x
			}
			if flat != r {
				return false
			}
		}
		return true
	}
	for _, ext := range []int64{5, 37} {
		if !check(ext) {
			return false
		}
	}
	return true
}

// copyLoop is the generic kernel of a copy: in the grid body (beside
// index arithmetic) one serial loop f from 0 by 1 over variable j, whose
// body is index arithmetic that does not depend on j, a load of the input
// parameter in and a store of the loaded value to the output parameter
// out of the same element type (the kernel's only two parameters).
type copyLoop struct {
	f       loop.ForOp
	j       *ir.Value
	ld      loop.LoadOp
	st      loop.StoreOp
	in, out *param
}

// matchCopyLoop recognises a copyLoop.
func (g *kgen) matchCopyLoop() (copyLoop, bool) {
	var cl copyLoop
	var body *ir.Operation
	for _, op := range g.grid.Body().Entry().Ops() {
		switch {
		case op.Name() == loop.OpFor:
			if body != nil {
				return cl, false
			}
			body = op
		case op.Name() == loop.OpConst, indexOps[op.Name()], op.Name() == loop.OpYield:
		default:
			return cl, false
		}
	}
	if body == nil || len(g.params) != 2 || g.params[0].output || !g.params[1].output {
		return cl, false
	}
	f, _ := loop.AsFor(body)
	if lo, ok := constIndex(f.Lower()); !ok || lo != 0 || len(f.Inits()) > 0 {
		return cl, false
	}
	if st, ok := constIndex(f.Step()); !ok || st != 1 {
		return cl, false
	}
	j := f.Body().Entry().Args[0]
	// index arithmetic of the row (a slice's offset), then the copy
	var ops []*ir.Operation
	for _, op := range f.Body().Entry().Ops() {
		if indexOps[op.Name()] || op.Name() == loop.OpConst {
			for _, x := range op.Operands() {
				if x.DependsOn(j) {
					return cl, false
				}
			}
			continue
		}
		ops = append(ops, op)
	}
	if len(ops) != 3 || ops[2].Name() != loop.OpYield {
		return cl, false
	}
	ld, ok := loop.AsLoad(ops[0])
	if !ok {
		return cl, false
	}
	st, ok := loop.AsStore(ops[1])
	if !ok || st.Value() != ld.Result(0) {
		return cl, false
	}
	in, out := g.byArg[ld.Memref()], g.byArg[st.Memref()]
	if in == nil || out == nil || in.output || !out.output || in.elem != out.elem {
		return cl, false
	}
	return copyLoop{f: f, j: j, ld: ld, st: st, in: in, out: out}, true
}
