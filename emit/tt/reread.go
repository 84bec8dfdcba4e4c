package tt

import (
	"fmt"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// This file turns a one-pass row kernel whose kept row block does not fit
// a core's L1 into a two-pass one: instead of reading the row block back
// from a circular buffer of Ct tiles, each later loop over the row
// computes the kept value again from DRAM. In the loop IR every
//
//	%v = loop.load %row, %i_2              // in a later loop over the row
//
// is replaced by a copy of what the last loop writing %row stored there,
//
//	loop.store %e, %row, %i_1              // %e computed from x[r, %i_1] and per-row values
//
// with %i_1 renamed %i_2, and the stores to %row and the loop.alloc go.
// softmax then reads x three times (max, sum of exp, normalise) and
// computes exp twice, in L1 of a few tiles. The kept value must be
// computable in the later loop: from loads at the column, constants and
// values of the row known before that loop, not from what the loop
// writing it carries.

// rereadKernel is a copy of kernel k (not inserted anywhere) whose kept
// rows are computed again from DRAM in every loop that reads them, with
// schedule "two-pass"; or an error saying why the rows cannot be.
func rereadKernel(k loop.KernelOp) (loop.KernelOp, error) {
	clone := k.Operation.Clone(nil)
	kc, _ := loop.AsKernel(clone)
	var grid *ir.Block
	for _, op := range kc.Body().Entry().Ops() {
		if p, ok := loop.AsParallel(op); ok {
			grid = p.Body().Entry()
		}
	}
	if grid == nil {
		return kc, fmt.Errorf("it has no loop.parallel")
	}
	for _, op := range grid.Ops() {
		if op.Name() != loop.OpAlloc {
			continue
		}
		if err := rereadRow(grid, op.Result(0)); err != nil {
			return kc, err
		}
		op.Erase()
	}
	clone.SetAttr("schedule", ir.StringAttr("two-pass"))
	return kc, nil
}

// rereadRow replaces the loads of kept row v by the values stored to it,
// loop by loop, and removes the stores.
func rereadRow(grid *ir.Block, v *ir.Value) error {
	var stored *ir.Value // what the last loop writing v stores
	var storedIV *ir.Value
	var storedBody *ir.Block
	for _, lop := range grid.Ops() {
		f, ok := loop.AsFor(lop)
		if !ok {
			continue
		}
		body := f.Body().Entry()
		iv := body.Args[0]
		var loads, stores []*ir.Operation
		lop.Walk(func(o *ir.Operation) bool {
			if l, ok := loop.AsLoad(o); ok && l.Memref() == v {
				loads = append(loads, o)
			}
			if s, ok := loop.AsStore(o); ok && s.Memref() == v {
				stores = append(stores, o)
			}
			return true
		})
		for _, ld := range loads {
			l, _ := loop.AsLoad(ld)
			if stored == nil {
				return fmt.Errorf("it reads the kept row before storing it")
			}
			if ld.Block() != body || len(l.Indices()) != 1 || l.Indices()[0] != iv {
				return fmt.Errorf("it reads the kept row other than at the column of a loop over the row")
			}
			m := ir.Mapping{storedIV: iv}
			val, err := cloneTree(stored, storedBody, m, ir.NewBuilderBefore(ld))
			if err != nil {
				return err
			}
			ld.Result(0).ReplaceAllUsesWith(val)
			ld.Erase()
		}
		for _, st := range stores {
			s, _ := loop.AsStore(st)
			if st.Block() != body || len(s.Indices()) != 1 || s.Indices()[0] != iv {
				return fmt.Errorf("it stores to the kept row other than at the column of a loop over the row")
			}
			stored, storedIV, storedBody = s.Value(), iv, body
			st.Erase()
		}
	}
	if len(v.Uses()) > 0 {
		return fmt.Errorf("it uses the kept row outside the loops over the row")
	}
	return nil
}

// cloneTree copies the ops of block body that compute v before the
// builder's insertion point, through m (the loop variable of body renamed,
// and what was copied already). Values defined outside body are used as
// they are; the values body carries (its block arguments other than the
// loop variable) cannot be computed again.
func cloneTree(v *ir.Value, body *ir.Block, m ir.Mapping, b *ir.Builder) (*ir.Value, error) {
	if w, ok := m[v]; ok {
		return w, nil
	}
	op := v.DefiningOp()
	if op == nil {
		if v.OwnerBlock() == body {
			return nil, fmt.Errorf("the value it keeps depends on what the loop writing it carries")
		}
		return v, nil
	}
	if op.Block() != body {
		return v, nil
	}
	if len(op.Regions()) > 0 {
		return nil, fmt.Errorf("the value it keeps is computed by a nested loop")
	}
	for _, a := range op.Operands() {
		if _, err := cloneTree(a, body, m, b); err != nil {
			return nil, err
		}
	}
	c := op.Clone(m)
	b.Insert(c)
	for i, r := range op.Results() {
		if r == v {
			return c.Result(i), nil
		}
	}
	return nil, fmt.Errorf("internal error: the value is not a result of its op")
}
