package loop

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/tensorforge/tensorforge/ir"
)

// A kernel's body may run several launch grids, its parts:
//
//	loop.kernel {kind = "elementwise", num_inputs = 3, num_outputs = 2, sym_name = "rope_k0"} {
//	^bb0(%q: ..., %k: ..., %cos: ..., %qe: ..., %ke: ...):
//	  loop.parallel %c0, %c131072, %c1 {dist = "grid"} { ... q's rows ... }
//	  loop.parallel %c0, %c32768, %c1 {dist = "grid"} { ... k's rows ... }
//	  loop.return
//	}
//
// One launch runs them all: its grid is the iterations of the first part,
// then those of the second, and so on (a GPU program picks its part by
// its program id). Parts are independent: a buffer one part writes is
// neither read nor written by another, so they may run in any order or
// at once. This is horizontal fusion: two kernels that read the same
// tables (q's and k's rotary embeddings, which share cos and sin) cost
// one launch instead of two. MergeLaunches builds such a kernel from the
// launches of single-part kernels; SplitParts undoes it for an emitter
// that launches one grid per kernel.

// Parts returns the launch grids of k's body in order.
func Parts(k KernelOp) []ParallelOp {
	var parts []ParallelOp
	body := k.Body().Entry()
	if body == nil {
		return nil
	}
	for op := body.First(); op != nil; op = op.Next() {
		if p, ok := AsParallel(op); ok {
			parts = append(parts, p)
		}
	}
	return parts
}

// PartKernel returns a detached copy of k whose body keeps only its i-th
// part (and every op outside the parts): a kernel of one grid, with k's
// arguments and attributes, for an emitter to translate as it would any
// other. The copy is not inserted in a module.
func PartKernel(k KernelOp, i int) KernelOp {
	c := k.Operation.Clone(nil)
	n := 0
	var kept *ir.Operation
	body := c.Region(0).Entry()
	for op := body.First(); op != nil; {
		next := op.Next()
		switch {
		case op.Name() == OpParallel:
			if n != i {
				op.Erase()
			} else {
				kept = op
			}
			n++
		case op.Name() != OpReturn && kept != nil:
			// the ops outside the grids come before the kept one
			body.InsertBefore(op, kept)
		}
		op = next
	}
	return KernelOp{c}
}

// verifyParts checks that the parts of a kernel of several are
// independent: a buffer argument that a part stores is accessed by no
// other part, or only at other indices: there is a dimension that each
// part indexes within a static range of its own (disjointAccesses; the
// rows of a concat along a row, each part its piece's).
//
//	its parts #0 and #1 both access '%y', which part #0 writes; parts must be independent
func verifyParts(k *ir.Operation, parts []*ir.Operation) error {
	if len(parts) < 2 {
		return nil
	}
	body := k.Region(0).Entry()
	nin, _ := ir.AttrAsInt(k.Attr("num_inputs"))
	nout, _ := ir.AttrAsInt(k.Attr("num_outputs"))
	nbuf := min(max(int(nin+nout), 0), len(body.Args))
	for _, buf := range body.Args[:nbuf] {
		var users []int
		writer := -1
		for pi, p := range parts {
			used := false
			p.Walk(func(o *ir.Operation) bool {
				switch {
				case o.Name() == OpLoad && o.NumOperands() > 0 && o.Operand(0) == buf:
					used = true
				case o.Name() == OpStore && o.NumOperands() > 1 && o.Operand(1) == buf:
					used = true
					if writer < 0 {
						writer = pi
					}
				}
				return true
			})
			if used {
				users = append(users, pi)
			}
		}
		if writer >= 0 && len(users) > 1 && !disjointAccesses(buf, parts, users) {
			return ir.OpError(k, "its parts #%d and #%d both access '%%%s', which part #%d writes; parts must be independent", users[0], users[1], buf.Name, writer)
		}
	}
	return nil
}

// SharedStores reports whether two parts of k store into one buffer (at
// indices of their own: the pieces of a concat along the rows, each part
// storing its rows of the result).
func SharedStores(k KernelOp) bool {
	writer := map[*ir.Value]int{}
	shared := false
	for i, part := range Parts(k) {
		part.Walk(func(o *ir.Operation) bool {
			if o.Name() == OpStore && o.NumOperands() > 1 && o.Operand(1).IsBlockArg() {
				if w, ok := writer[o.Operand(1)]; ok && w != i {
					shared = true
				}
				writer[o.Operand(1)] = i
			}
			return !shared
		})
	}
	return shared
}

// disjointAccesses reports whether the parts users of parts access buf at
// disjoint indices: in some dimension, every index of every access by one
// part lies in a static range (indexRange) that no other part's overlaps.
func disjointAccesses(buf *ir.Value, parts []*ir.Operation, users []int) bool {
	rank := len(buf.Type().(ir.MemRefType).Shape)
	for d := 0; d < rank; d++ {
		var spans [][2]int64
		ok := true
		for _, pi := range users {
			lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
			parts[pi].Walk(func(o *ir.Operation) bool {
				var idx []*ir.Value
				switch {
				case o.Name() == OpLoad && o.NumOperands() > 0 && o.Operand(0) == buf:
					idx = o.Operands()[1:]
				case o.Name() == OpStore && o.NumOperands() > 1 && o.Operand(1) == buf:
					idx = o.Operands()[2:]
				default:
					return true
				}
				if d >= len(idx) {
					ok = false
					return false
				}
				l, h, known := indexRange(idx[d], 0)
				if !known {
					ok = false
					return false
				}
				lo, hi = min(lo, l), max(hi, h)
				return true
			})
			if !ok {
				break
			}
			spans = append(spans, [2]int64{lo, hi})
		}
		if !ok {
			continue
		}
		slices.SortFunc(spans, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
		apart := true
		for i := 1; i < len(spans); i++ {
			apart = apart && spans[i][0] >= spans[i-1][1]
		}
		if apart {
			return true
		}
	}
	return false
}

// indexRange bounds index value v: lo <= v < hi, from the constants and
// the ranges of the loops' variables it is computed from with addi, subi,
// muli by a non-negative constant, divi and remi by a positive constant
// and mini; hi is unbounded where a loop's extent is read at launch.
// known is false for anything else.
func indexRange(v *ir.Value, depth int) (lo, hi int64, known bool) {
	if depth > 32 {
		return 0, 0, false
	}
	op := v.DefiningOp()
	if c, ok := AsConst(op); ok {
		return int64(c.Value()), int64(c.Value()) + 1, true
	}
	if op == nil {
		// a loop's variable: [lower, upper) of its loop
		owner := v.OwnerBlock()
		if owner == nil || owner.ParentOp() == nil {
			return 0, 0, false
		}
		l := owner.ParentOp()
		if (l.Name() != OpParallel && l.Name() != OpFor) || len(owner.Args) == 0 || owner.Args[0] != v || l.NumOperands() < 2 {
			return 0, 0, false
		}
		a, _, ok := indexRange(l.Operand(0), depth+1)
		if !ok {
			return 0, 0, false
		}
		if ul, uh, ok := indexRange(l.Operand(1), depth+1); ok && uh == ul+1 {
			return a, max(ul, a+1), true // a constant upper bound
		}
		return a, unbounded, true
	}
	if op.NumOperands() != 2 {
		return 0, 0, false
	}
	xl, xh, ok := indexRange(op.Operand(0), depth+1)
	if !ok {
		return 0, 0, false
	}
	yl, yh, ok := indexRange(op.Operand(1), depth+1)
	if !ok {
		return 0, 0, false
	}
	upper := func(h int64) int64 { return min(h, unbounded) }
	switch op.Name() {
	case OpAddi:
		if xh >= unbounded || yh >= unbounded {
			return xl + yl, unbounded, true
		}
		return xl + yl, upper(xh + yh - 1), true
	case OpSubi:
		if yh >= unbounded {
			return 0, 0, false
		}
		if xh >= unbounded {
			return xl - (yh - 1), unbounded, true
		}
		return xl - (yh - 1), xh - yl, true
	case OpMini:
		return min(xl, yl), min(xh, yh), true
	}
	if yh != yl+1 || xl < 0 {
		return 0, 0, false // by a constant, of a non-negative value
	}
	c := yl
	switch {
	case op.Name() == OpMuli && c >= 0:
		if xh >= unbounded {
			return xl * c, unbounded, true
		}
		return xl * c, upper((xh-1)*c + 1), true
	case op.Name() == OpDivi && c > 0:
		if xh >= unbounded {
			return xl / c, unbounded, true
		}
		return xl / c, (xh-1)/c + 1, true
	case op.Name() == OpRemi && c > 0:
		if xh < unbounded && xh-xl <= c && xl%c <= (xh-1)%c {
			return xl % c, (xh-1)%c + 1, true
		}
		return 0, c, true
	}
	return 0, 0, false
}

// unbounded is indexRange's upper bound of a value with none known.
const unbounded = int64(1) << 60

// SplitParts replaces every kernel of m with several parts by one kernel
// per part, named after it (`f_k0_p0`, `f_k0_p1`, ...), and each launch of
// it by the launches of its parts in order, with the same operands: the
// form for an emitter that launches one grid per kernel. A kernel for
// which keep (when not nil) returns true stays as it is.
func SplitParts(m ir.Module, keep func(KernelOp) bool) error {
	if m.Operation == nil {
		return nil
	}
	names := map[string]bool{}
	var multi []KernelOp
	for op := m.Body().First(); op != nil; op = op.Next() {
		if s, ok := op.Attr("sym_name").(ir.StringAttr); ok {
			names[string(s)] = true
		}
		if k, ok := AsKernel(op); ok && len(Parts(k)) > 1 && (keep == nil || !keep(k)) {
			multi = append(multi, k)
		}
	}
	if len(multi) == 0 {
		return nil
	}
	split := map[string][]string{}
	for _, k := range multi {
		at := k.Operation
		var partNames []string
		for i := range Parts(k) {
			pk := PartKernel(k, i)
			name := fmt.Sprintf("%s_p%d", k.SymName(), i)
			for names[name] {
				name += "_"
			}
			names[name] = true
			pk.SetAttr("sym_name", ir.StringAttr(name))
			m.Body().InsertBefore(pk.Operation, at.Next())
			at = pk.Operation
			partNames = append(partNames, name)
		}
		split[k.SymName()] = partNames
	}
	for _, f := range m.Funcs() {
		if f.Body() == nil {
			continue
		}
		for _, op := range f.Body().Ops() {
			l, ok := AsLaunch(op)
			if !ok {
				continue
			}
			parts, ok := split[l.Kernel()]
			if !ok {
				continue
			}
			b := ir.NewBuilderAtEnd(op.Block())
			b.SetInsertionPointBefore(op)
			for _, name := range parts {
				part, err := BuildLaunch(b, op.Loc, l.Args(), name)
				if err != nil {
					return err
				}
				CopyGuard(l, part)
			}
			op.Erase()
		}
	}
	for _, k := range multi {
		k.Operation.Erase()
	}
	return nil
}

// MergeLaunches replaces launches, of single-use kernels of one kind
// each launched once, by one launch of a new kernel called name whose
// parts are theirs in order: its inputs are their inputs, each buffer
// once, its outputs all of their outputs. The new launch takes the place
// of the last one, the new kernel that of the last kernel; the old ones
// are erased. The caller guarantees that the launches are independent
// (none writes a buffer another reads or writes) and that nothing
// between them reads what the earlier ones write.
func MergeLaunches(launches []LaunchOp, name string) (LaunchOp, error) {
	if len(launches) < 2 {
		return LaunchOp{}, fmt.Errorf("merging %d launches", len(launches))
	}
	var kernels []KernelOp
	for _, l := range launches {
		k, ok := LookupKernel(l.Operation, l.Kernel())
		if !ok {
			return LaunchOp{}, ir.OpError(l.Operation, "launches '%s', which is not a kernel of the module", l.Kernel())
		}
		kernels = append(kernels, k)
	}
	// the new kernel's buffers: inputs (distinct), then outputs; each
	// kernel argument is a buffer or the d-th extent of one
	type slot struct {
		buf *ir.Value
		d   int // -1: the buffer itself
	}
	var inputs, outputs []*ir.Value
	extents := map[*ir.Value][]*ir.Value{}
	argName := map[slot]string{}
	slotsOf := make([][]slot, len(launches))
	for i, l := range launches {
		k := kernels[i]
		args := l.Args()
		kargs := k.Body().Entry().Args
		nin, nbuf := int(k.NumInputs()), int(k.NumInputs()+k.NumOutputs())
		if len(args) != len(kargs) || len(args) < nbuf {
			return LaunchOp{}, ir.OpError(l.Operation, "passes %d operands, but kernel '%s' takes %d arguments", len(args), l.Kernel(), len(kargs))
		}
		slots := make([]slot, len(args))
		next := nbuf
		for j, buf := range args[:nbuf] {
			slots[j] = slot{buf, -1}
			mt, _ := buf.Type().(ir.MemRefType)
			var ext []*ir.Value
			for d, n := range mt.Shape {
				if n == ir.Dynamic && next < len(args) {
					ext = append(ext, args[next])
					slots[next] = slot{buf, d}
					next++
				}
			}
			if _, seen := extents[buf]; !seen {
				extents[buf] = ext
			}
			switch {
			case j >= nin:
				outputs = append(outputs, buf)
			case !slices.Contains(inputs, buf):
				inputs = append(inputs, buf)
			}
		}
		// each argument of the new kernel is named as the first kernel that
		// takes it names it
		for j, sl := range slots {
			if _, named := argName[sl]; !named && sl.buf != nil {
				argName[sl] = kargs[j].Name
			}
		}
		slotsOf[i] = slots
	}
	buffers := append(slices.Clone(inputs), outputs...)
	var types []ir.Type
	operands := slices.Clone(buffers)
	var slots []slot
	for _, b := range buffers {
		types = append(types, b.Type())
		slots = append(slots, slot{b, -1})
	}
	for _, b := range buffers {
		operands = append(operands, extents[b]...)
		mt, _ := b.Type().(ir.MemRefType)
		for d, n := range mt.Shape {
			if n == ir.Dynamic {
				slots = append(slots, slot{b, d})
			}
		}
	}
	first := kernels[0]
	last := kernels[len(kernels)-1].Operation
	merged := ir.NewOperation(OpKernel, first.Operation.Loc, nil, nil, append(ir.AttrDict(nil), first.Operation.Attrs...), 1)
	merged.SetAttr("sym_name", ir.StringAttr(name))
	merged.SetAttr("num_inputs", ir.IntAttr{Value: int64(len(inputs)), Type: ir.I64Type})
	merged.SetAttr("num_outputs", ir.IntAttr{Value: int64(len(outputs)), Type: ir.I64Type})
	entry := ir.NewBlock(KernelArgs(types[:len(inputs)], types[len(inputs):])...)
	merged.Region(0).AppendBlock(entry)
	argOf := map[slot]*ir.Value{}
	for i, s := range slots {
		argOf[s] = entry.Args[i]
		entry.Args[i].Name = argName[s]
	}
	// the ops outside the grids first (one constant of each value), then
	// the grids in order
	maps := make([]ir.Mapping, len(launches))
	consts := map[string]*ir.Value{}
	for i := range launches {
		kb := kernels[i].Body().Entry()
		m := ir.Mapping{}
		maps[i] = m
		for j, a := range kb.Args {
			m[a] = argOf[slotsOf[i][j]]
		}
		for op := kb.First(); op != nil; op = op.Next() {
			if op.Name() == OpReturn || op.Name() == OpParallel {
				continue
			}
			if op.Name() == OpConst {
				key := op.Attrs.String() + " : " + op.Result(0).Type().String()
				if c, ok := consts[key]; ok {
					m[op.Result(0)] = c
					continue
				}
				c := op.Clone(m)
				consts[key] = c.Result(0)
				entry.Append(c)
				continue
			}
			entry.Append(op.Clone(m))
		}
	}
	for i := range launches {
		for _, p := range Parts(kernels[i]) {
			entry.Append(p.Operation.Clone(maps[i]))
		}
	}
	ret := ir.NewOperation(OpReturn, first.Operation.Loc, nil, nil, nil, 0)
	entry.Append(ret)
	if err := verifyKernelOp(merged); err != nil {
		return LaunchOp{}, err
	}
	// the old kernels and launches go first: the new kernel may take the
	// name of one of them
	module := last.Block()
	kernelAt := last.Next()
	lastLaunch := launches[len(launches)-1].Operation
	b := ir.NewBuilderAtEnd(lastLaunch.Block())
	if lastLaunch.Next() != nil {
		b.SetInsertionPointBefore(lastLaunch.Next())
	}
	loc := lastLaunch.Loc
	for i, l := range launches {
		l.Operation.Erase()
		kernels[i].Operation.Erase()
	}
	module.InsertBefore(merged, kernelAt)
	return BuildLaunch(b, loc, operands, name)
}
