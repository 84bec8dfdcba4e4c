package triton

import (
	"fmt"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// ---------------------------------------------------------------------------
// Rows of dot products
//
// A row kernel over the results of a matmul with one row per matrix (a
// decode step's attention scores, passes.matmulRows) computes each element
// of its row as a serial loop over K inside the loop over the row:
//
//	loop.for %c0, %c2048, %c1 {dist = "threads"} {
//	^bb0(%j: index):
//	  %dot = loop.for %c0, %c128, %c1, %zero {
//	  ^bb1(%k: index, %acc: f32):
//	    %a = loop.load %q, %r, %k ...
//	    %b = loop.load %keys, %h, %j, %k ...
//	    %s = loop.fma %a', %b', %acc : f32
//	    loop.yield %s : f32
//	  }
//
// Run as it is, each step of the loop over K would load one element of
// every column, a gather across the rows of the right operand, each 32-byte
// sector fetched again for each of its elements. Instead, the loop takes
// BK values of k at a time as a leading axis of the block, so that each
// column reads a whole sector per step, and sums over it:
//
//	for k0 in range(0, 128, 16):
//	    kk = (k0 + tl.arange(0, 16))[:, None, None]
//	    a = tl.load(q + r * 128 + kk, ...)                       # [16, ROWS, 1]
//	    b = tl.load(keys + (h * 2048 + cols) * 128 + kk, ...)     # [16, ROWS, BLOCK]
//	    acc = acc + tl.sum(a.to(tl.float32) * b.to(tl.float32), axis=0)
//
// The blocks' other axes broadcast from the right, so the loads' index
// arithmetic is the loop IR's as it is. The sum runs in another order
// than the loop's (BK products at a time), as a tiled matmul's does.

// dotSectorBytes is what one column reads per step: a 32-byte sector.
const dotSectorBytes = 32

// planDot returns BK for serial loop o nested in threads loop t when o is
// the loop of a dot product at t's column, or 0: the largest power of two
// of at most a sector of the right operand's elements that divides K.
func planDot(o *ir.Operation, t loop.ForOp) int64 {
	d, err := loop.MatchDot(o, t.Body().Entry().Args[0])
	if err != nil {
		return 0
	}
	fma := dotStep(d.Loop)
	if fma == nil {
		return 0
	}
	e := d.Rhs.Operation.Result(0).Type()
	el, ok := ir.ElemOf(e)
	if !ok || el.Kind.ByteSize() == 0 {
		return 0
	}
	bk := int64(dotSectorBytes) / el.Kind.ByteSize()
	for bk > 1 && d.K%bk != 0 {
		bk /= 2
	}
	if bk < 2 {
		return 0
	}
	return bk
}

// dotStep returns the loop.fma of a dot product's loop that adds a
// product to the sum it carries, or nil.
func dotStep(f loop.ForOp) *ir.Operation {
	body := f.Body().Entry()
	acc := body.Args[1]
	y := body.Last()
	if y.NumOperands() != 1 {
		return nil
	}
	step := y.Operand(0).DefiningOp()
	if step == nil || step.Name() != loop.OpFma || step.Operand(2) != acc {
		return nil
	}
	return step
}

// emitDot translates the loop of a dot product in a row, BK values of k
// at a time (see above).
func (k *kernelEmitter) emitDot(f loop.ForOp, bk int64) error {
	accs, err := k.initBlocks(f)
	if err != nil {
		return err
	}
	entry := f.Body().Entry()
	step := dotStep(f)
	k0 := k.names.fresh(ivName(entry.Args[0], "k") + "0")
	kk := k.names.fresh("kk")
	axes := "[:, None]"
	if k.plan.twoD {
		axes = "[:, None, None]"
	}
	k.w.open(fmt.Sprintf("for %s in range(%s, %s, %d):", k0, k.ref(f.Lower()), k.ref(f.Upper()), bk))
	savedLoads := k.loads
	k.loads = map[string]string{}
	k.w.assign(kk, fmt.Sprintf("(%s + tl.arange(0, %d))%s", k0, bk, axes))
	k.bind(entry.Args[0], kk)
	k.emitted[step] = true
	k.emitted[entry.Last()] = true
	if err := k.emitBlock(entry); err != nil {
		return err
	}
	k.w.assign(accs[0], fmt.Sprintf("%s + tl.sum(%s * %s, axis=0)", accs[0], k.ref(step.Operand(0)), k.ref(step.Operand(1))))
	k.w.close()
	k.loads = savedLoads
	k.bind(f.Values()[0], accs[0])
	return nil
}
