package costmodel

import (
	"fmt"

	"github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/passes"
)

// GraphKernels returns the kernels of a module at the graph level, the IR
// `fuse` leaves: each graph.fused, and each other op at the top level of a
// function, is one kernel that reads its operands (each once) and writes
// its results,
//
//	%y = graph.fused %x, %w, %z {kind = "row", ...} { ... }  // reads x, w, z; writes y
//	%t = graph.transpose %y {perm = [1, 0]} : ...           // reads y; writes t
//
// A two-pass row kernel reads a full-row operand once per phase that needs
// its elements (passes.KernelInfo.Phases): the rows are not kept on chip
// between phases.
//
// The kernels are the ones lower-to-loops makes, in its order and with its
// names (`<func>_k<i>`): a splat constant costs nothing (it is cloned into
// the kernels that read it); a dense constant, or one the function
// returns, is a kernel that writes its buffer, which its users read; and a
// returned argument, or a value returned a second time, is copied into its
// output buffer by a kernel of its own, after the others.
func GraphKernels(m ir.Module, opts Options) ([]Kernel, error) {
	var out []Kernel
	for _, f := range m.Funcs() {
		body := f.Body()
		if body == nil {
			continue
		}
		var ks []Kernel
		add := func(k Kernel) {
			k.Func = f.SymName()
			k.Name = fmt.Sprintf("%s_k%d", f.SymName(), len(ks))
			ks = append(ks, k)
		}
		for _, op := range body.Ops() {
			switch {
			case op.HasTrait(ir.Terminator):
			case op.Name() == graph.OpConstant:
				if constantIsKernel(op) {
					k, err := constantKernel(op, opts)
					if err != nil {
						return nil, err
					}
					add(k)
				}
			default:
				if op.Name() == graph.OpFused {
					// dense constants in a body are hoisted into buffers
					for _, c := range op.Region(0).Entry().Ops() {
						if isDenseConstant(c) {
							k, err := constantKernel(c, opts)
							if err != nil {
								return nil, err
							}
							add(k)
						}
					}
				}
				k, err := graphKernel(op, opts)
				if err != nil {
					return nil, err
				}
				add(k)
			}
		}
		if ret := f.Return(); ret != nil {
			first := map[*ir.Value]bool{}
			for _, v := range ret.Operands() {
				if v.DefiningOp() != nil && !first[v] {
					first[v] = true
					continue
				}
				a, err := graphAccess(ret, v, opts)
				if err != nil {
					return nil, err
				}
				add(Kernel{Kind: "elementwise", Ops: []string{"copy"}, Loc: ret.Loc, Level: GraphLevel,
					Reads: []Access{a}, Writes: []Access{a}, HasFLOPs: true})
			}
		}
		out = append(out, ks...)
	}
	return out, nil
}

// isDenseConstant reports whether op is a graph.constant of more than one
// value.
func isDenseConstant(op *ir.Operation) bool {
	c, ok := graph.AsConstant(op)
	return ok && !c.Value().IsSplat()
}

// constantIsKernel reports whether a top-level constant is written to a
// buffer by a kernel: a dense one that is used, or one the function
// returns.
func constantIsKernel(op *ir.Operation) bool {
	if isDenseConstant(op) {
		return op.Result(0).HasUses()
	}
	for _, u := range op.Result(0).Users() {
		if u.HasTrait(ir.Terminator) {
			return true
		}
	}
	return false
}

// constantKernel writes a constant's buffer.
func constantKernel(op *ir.Operation, opts Options) (Kernel, error) {
	a, err := graphAccess(op, op.Result(0), opts)
	if err != nil {
		return Kernel{}, err
	}
	return Kernel{Kind: "generic", Ops: []string{"constant"}, Loc: op.Loc, Level: GraphLevel,
		Writes: []Access{a}, HasFLOPs: true}, nil
}

// readsFromDRAM reports whether a kernel reads operand v from a buffer:
// splat constants are cloned into the kernel instead.
func readsFromDRAM(v *ir.Value) bool {
	c, ok := graph.AsConstant(v.DefiningOp())
	return !ok || !c.Value().IsSplat()
}

// graphKernel accounts one top-level op of a function.
func graphKernel(op *ir.Operation, opts Options) (Kernel, error) {
	k := Kernel{Loc: op.Loc, Level: GraphLevel, Kind: loneKind(op)}
	passesOf := func(*ir.Value) int64 { return 1 }
	var extra []*ir.Value // dense constants of the body, read from buffers
	if op.Name() == graph.OpFused {
		if kind, ok := op.Attr("kind").(ir.StringAttr); ok {
			k.Kind = string(kind)
		}
		for _, inner := range op.Region(0).Entry().Ops() {
			switch {
			case isDenseConstant(inner):
				extra = append(extra, inner.Result(0))
			case inner.Name() != graph.OpYield && inner.Name() != graph.OpConstant:
				k.Ops = append(k.Ops, shortName(inner.Name()))
			}
		}
		info, err := passes.ClassifyKernel(op)
		if err == nil {
			k.Schedule = info.Schedule
			if info.Schedule == passes.ScheduleTwoPass || info.Schedule == passes.ScheduleOnline {
				passesOf = rowPasses(op, &info)
			}
		}
	} else {
		k.Ops = []string{shortName(op.Name())}
		if k.Kind == "row" {
			// one reduction alone keeps nothing on chip between phases
			k.Schedule = passes.ScheduleOnePass
		}
	}
	seen := map[*ir.Value]bool{}
	for _, v := range append(op.Operands(), extra...) {
		if seen[v] || !readsFromDRAM(v) {
			continue
		}
		seen[v] = true
		a, err := graphAccess(op, v, opts)
		if err != nil {
			return Kernel{}, err
		}
		a.Passes = passesOf(v)
		if onlyGathered(op, v) {
			// one element of each row, at the gathered column
			a.Bytes /= max(a.Shape[len(a.Shape)-1], 1)
		}
		k.Reads = append(k.Reads, a)
	}
	for _, v := range op.Results() {
		a, err := graphAccess(op, v, opts)
		if err != nil {
			return Kernel{}, err
		}
		k.Writes = append(k.Writes, a)
	}
	n, err := CountFLOPs(op, opts)
	if err != nil {
		return Kernel{}, err
	}
	k.FLOPs, k.HasFLOPs = n, true
	return k, nil
}

// onlyGathered reports whether the kernel of op reads operand v only
// through graph.gather along its last axis with one index per row: op is
// such a gather of v, or a graph.fused whose body uses v only so. The
// loop level sees the same: loads at a loop.clamp_index column.
func onlyGathered(op *ir.Operation, v *ir.Value) bool {
	gathers := func(u *ir.Operation, x *ir.Value) bool {
		g, ok := graph.AsGather(u)
		if !ok || u.Operand(0) != x || u.Operand(1) == x {
			return false
		}
		xs, _ := ir.ShapeOf(x.Type())
		is, _ := ir.ShapeOf(u.Operand(1).Type())
		return len(xs) > 0 && len(is) == len(xs) && is[len(is)-1] == 1 && (g.Axis() == -1 || g.Axis() == int64(len(xs)-1))
	}
	if op.Name() != graph.OpFused {
		return gathers(op, v)
	}
	entry := op.Region(0).Entry()
	for i, a := range entry.Args {
		if op.Operand(i) != v {
			continue
		}
		if len(a.Uses()) == 0 {
			return false
		}
		for _, u := range a.Users() {
			if !gathers(u, a) {
				return false
			}
		}
	}
	return true
}

// loneKind is the kind of kernel an op left alone becomes: element-wise, a
// row reduction, a matmul, or generic loops (transpose, reductions over
// other axes, ...).
func loneKind(op *ir.Operation) string {
	switch {
	case op.Name() == graph.OpMatMul:
		return "matmul"
	case op.HasTrait(ir.Elementwise) && !passes.IsComposite(op):
		return "elementwise"
	case reductionOps[op.Name()]:
		if t, ok := op.Operand(0).Type().(ir.TensorType); ok && t.Rank() > 0 {
			if axes, ok := op.Attr("axes").(ir.ArrayAttr); ok {
				if a, ok := axes.Int64s(); ok && len(a) == 1 && (a[0] == -1 || a[0] == int64(t.Rank()-1)) {
					return "row"
				}
			}
		}
	}
	return "generic"
}

// graphAccess is one pass over a tensor value.
func graphAccess(op *ir.Operation, v *ir.Value, opts Options) (Access, error) {
	shape, bytes, err := shapeBytes(v.Type(), func(int) (int64, error) { return opts.dynamic(), nil })
	if err != nil {
		return Access{}, ir.OpError(op, "%v", err)
	}
	return Access{Value: v, Type: v.Type(), Shape: shape, Bytes: bytes, Passes: 1}, nil
}

// rowPasses returns, for the operands of a two-pass row kernel, how many
// phases read each one from DRAM. A full-row operand is needed in the
// phase of every op that uses it and, since full-row intermediates are
// not kept between phases either, in every phase that needs a value
// computed from it, up to the reductions (whose per-row results are kept).
// Weights, per-row values and scalars are read once; a graph.gather of a
// row reads one element of it, which is no pass over the row.
func rowPasses(fused *ir.Operation, info *passes.KernelInfo) func(*ir.Value) int64 {
	phase := map[*ir.Operation]int{}
	for i, op := range info.Ops {
		phase[op] = info.Phases[i]
	}
	memo := map[*ir.Value]map[int]bool{}
	var need func(v *ir.Value) map[int]bool
	need = func(v *ir.Value) map[int]bool {
		if s, ok := memo[v]; ok {
			return s
		}
		s := map[int]bool{}
		memo[v] = s
		for _, u := range v.Users() {
			p, ok := phase[u]
			if !ok || u.Name() == graph.OpGather {
				// the graph.yield; a gather reads one element of the row, not the row
				continue
			}
			if p == 1 && info.Schedule == passes.ScheduleOnline {
				p = 0 // the online pass takes phases 0 and 1 together
			}
			s[p] = true
			if reductionOps[u.Name()] {
				continue
			}
			for _, r := range u.Results() {
				for q := range need(r) {
					s[q] = true
				}
			}
		}
		return s
	}
	args := fused.Region(0).Entry().Args
	return func(v *ir.Value) int64 {
		for i, a := range args {
			if fused.Operand(i) != v || info.AccessOf(a) != passes.AccessFull {
				continue
			}
			if n := int64(len(need(a))); n > 1 {
				return n
			}
		}
		return 1
	}
}
