package passes

import (
	"slices"

	"github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/ir"
)

// This file classifies the views on the results of a row kernel: a
// transpose or a reshape of a full row value that the kernel writes in
// place of the value itself,
//
//	%n = ... RMSNorm of %x [8, 64] ...
//	%h = graph.reshape %n : (tensor<8x64xf32>) -> tensor<8x4x16xf32>
//
// is one row kernel over [8, 64] whose stores address %h's buffer through
// the inverse of the reshape's index map, instead of a row kernel writing
// %n and a copy kernel writing %h. A result seen through such views is
// AccessStoredView; KernelInfo.OutViews holds its chain of views.

// AccessStoredView is a result of a row kernel written through views of
// one of its full rows (KernelInfo.OutViews).
const AccessStoredView Access = "stored-view"

// outputViewChains returns, for each result of c that is a chain of
// transposes and reshapes (reshapes of MLIR's reassociation form, see
// ReshapeGroups) of a value the kernel computes, the chain from that
// value to the result: views that nothing else of the kernel reads.
func (c *classifier) outputViewChains() map[*ir.Value][]*ir.Operation {
	in := map[*ir.Operation]bool{}
	for _, op := range c.ops {
		in[op] = true
	}
	var chains map[*ir.Value][]*ir.Operation
	for _, y := range c.outputs {
		var chain []*ir.Operation
		v := y
		for {
			op := v.DefiningOp()
			if op == nil || !in[op] || !storedView(op) {
				break
			}
			// nothing but the next view reads a value inside the chain
			// (the result's own readers are checked below)
			if v != y && (len(v.Users()) != 1 || slices.Contains(c.outputs, v)) {
				break
			}
			chain = append(chain, op)
			v = op.Operand(0)
		}
		if len(chain) == 0 || slices.Contains(c.inputs, v) || v.DefiningOp() == nil || !in[v.DefiningOp()] ||
			IsView(v.DefiningOp()) || isConstant(v.DefiningOp()) {
			continue
		}
		if users := y.Users(); slices.ContainsFunc(users, func(u *ir.Operation) bool { return in[u] }) {
			continue // read in the kernel too: an input view, not only a store
		}
		slices.Reverse(chain)
		if chains == nil {
			chains = map[*ir.Value][]*ir.Operation{}
		}
		chains[y] = chain
	}
	return chains
}

// storedView reports whether op is a view a row kernel stores through: a
// transpose, or a reshape that regroups static dimensions (a `?` alone).
func storedView(op *ir.Operation) bool {
	switch op.Name() {
	case graph.OpTranspose:
		return true
	case graph.OpReshape:
		_, ok := ReshapeGroups(graph.ReshapeOp{Operation: op})
		return ok
	}
	return false
}

// rowWithOutViews classifies a row kernel whose results may be views of
// its full rows (outputViewChains): the kernel without those views, its
// results the values viewed, then the views as stores.
func (c *classifier) rowWithOutViews(reductions []*ir.Operation) (*KernelInfo, error) {
	chains := c.outputViewChains()
	if len(chains) == 0 {
		return c.row(reductions)
	}
	info, err := c.peelOutViews(chains).row(reductions)
	if err != nil {
		return nil, err
	}
	err = c.storeThroughViews(info, chains, func(i int, ch []*ir.Operation) error {
		if info.Results[i] != AccessFull {
			return refuse(ch[0], "is a view of %s, where a row kernel stores only its full rows through views", article(info.Results[i]))
		}
		return nil
	})
	return info, err
}

// elementwiseWithOutViews classifies an element-wise kernel whose results
// have different shapes because some are views of others (a value and its
// transpose): the kernel without those views, over the shape of the
// values viewed, the views as stores. A kernel whose results share a
// shape iterates over them, reading through every view, as it is.
func (c *classifier) elementwiseWithOutViews() (*KernelInfo, error) {
	info, err := c.elementwise()
	if err == nil {
		return info, nil
	}
	chains := c.outputViewChains()
	if len(chains) == 0 {
		return nil, err
	}
	pinfo, perr := c.peelOutViews(chains).elementwise()
	if perr != nil || pinfo.Views != nil {
		// (the views of the kernel's operands and of its results are
		// not planned together yet)
		return nil, err
	}
	if c.storeThroughViews(pinfo, chains, func(_ int, ch []*ir.Operation) error {
		if !slices.Equal(shapeOf(ch[0].Operand(0)), pinfo.Shape) {
			return err
		}
		return nil
	}) != nil {
		return nil, err
	}
	return pinfo, nil
}

// peelOutViews returns c without the views of chains, its results the
// values they view.
func (c *classifier) peelOutViews(chains map[*ir.Value][]*ir.Operation) *classifier {
	peeled := map[*ir.Operation]bool{}
	outs := slices.Clone(c.outputs)
	for i, y := range c.outputs {
		if ch := chains[y]; ch != nil {
			outs[i] = ch[0].Operand(0)
			for _, op := range ch {
				peeled[op] = true
			}
		}
	}
	var ops []*ir.Operation
	for _, op := range c.ops {
		if !peeled[op] {
			ops = append(ops, op)
		}
	}
	return &classifier{ops: ops, inputs: c.inputs, outputs: outs, cands: map[*ir.Value]accessSet{}}
}

// storeThroughViews makes info, the classification of c without the views
// of chains (peelOutViews), that of c: each result in chains, once check
// accepts it, is AccessStoredView, and each view runs in the phase of the
// value it reads.
func (c *classifier) storeThroughViews(info *KernelInfo, chains map[*ir.Value][]*ir.Operation, check func(i int, chain []*ir.Operation) error) error {
	for i, y := range c.outputs {
		ch := chains[y]
		if ch == nil {
			continue
		}
		if err := check(i, ch); err != nil {
			return err
		}
		info.Results[i] = AccessStoredView
		for _, op := range ch {
			info.access[op.Result(0)] = AccessStoredView
		}
	}
	phase := map[*ir.Operation]int{}
	for i, op := range info.Ops {
		phase[op] = info.Phases[i]
	}
	info.Phases = make([]int, len(c.ops))
	for i, op := range c.ops {
		p, ok := phase[op]
		if !ok { // a view: the phase of the op computing what it reads
			for d := op.Operand(0).DefiningOp(); d != nil; d = d.Operand(0).DefiningOp() {
				if q, ok := phase[d]; ok {
					p = q
					break
				}
			}
		}
		info.Phases[i] = p
	}
	info.Ops = c.ops
	info.OutViews = chains
	return nil
}
