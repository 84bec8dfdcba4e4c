package metal

import (
	"fmt"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// This file writes loops and the combining of a threads loop's carried
// values. A distributed loop gives iteration k to thread k mod N of the N
// threads working on the row:
//
//	for (uint i = lid * 8; i < 8192; i += tg_size * 8) { ... }
//
// and a serial loop is a plain C loop. Carried values are variables
// declared before the loop and assigned at its end; after a threads loop
// each is combined over the threadgroup (emitCombine), so that every
// thread holds the total, as the loop dialect says.

// emitFor writes a loop.for.
func (ke *kernelEmitter) emitFor(f loop.ForOp, uniform bool) {
	distributed := ke.p.distributed[f.Operation]
	body := f.Body().Entry()
	iv := body.Args[0]
	ivName := ke.names.fresh(orDefault(iv.Name, "i"))
	ke.vals[iv] = val{expr: ivName, kind: ir.Index}

	// the carried values, named after the results (acc) or the arguments
	vars := make([]val, len(f.Inits()))
	for j, init := range f.Inits() {
		arg, res := body.Args[j+1], f.Values()[j]
		name := ke.names.fresh(orDefault(res.Name, orDefault(arg.Name, "carried")))
		k, w := elemKind(arg.Type()), width(arg.Type())
		x := ke.get(init)
		if w == 0 {
			ke.line("%s %s = %s;", metalType(k), name, x.expr)
			vars[j] = val{expr: name, kind: k}
		} else {
			ke.line("%s %s[%d];", metalType(k), name, w)
			ke.line("for (uint l = 0; l < %d; ++l) %s[l] = %s;", w, name, x.lane("l"))
			vars[j] = val{array: name, width: w, kind: k}
		}
		ke.vals[arg] = vars[j]
	}

	lb, ub, step := ke.cExpr(f.Lower()), ke.get(f.Upper()).expr, ke.cExpr(f.Step())
	if distributed {
		start := bin("+", lb, bin("*", vr(ke.tid), step))
		stride := bin("*", vr(ke.nth), step)
		cond := ke.work + ivName + " < " + ub
		ke.line("for (uint %s = %s; %s; %s += %s) {", ivName, start, cond, ivName, stride)
	} else {
		inc := ivName + " += " + step.String()
		if step.isConst() && step.val == 1 {
			inc = "++" + ivName
		}
		ke.line("for (uint %s = %s; %s < %s; %s) {", ivName, lb, ivName, ub, inc)
	}
	ke.openScope()
	if !distributed && hasThreadsLoop(body) {
		// an iteration's first reduction and sram write follow the last
		// ones of the iteration before: synchronise as after them
		ke.partialUsed, ke.sramRead, ke.sramWritten = true, true, true
	}
	for op := body.First(); op != nil; op = op.Next() {
		if op.Name() == loop.OpYield {
			ke.emitYield(op, body.Args[1:], vars)
			continue
		}
		ke.emitOp(op, uniform && !distributed)
	}
	ke.closeScope()
	ke.line("}")
	for j, res := range f.Values() {
		ke.vals[res] = vars[j]
	}
	if items := ke.p.combines[f.Operation]; len(items) > 0 {
		ke.emitCombine(items, vars)
	}
}

// hasThreadsLoop reports whether block b holds a threads loop.
func hasThreadsLoop(b *ir.Block) bool {
	for op := b.First(); op != nil; op = op.Next() {
		if f, ok := loop.AsFor(op); ok && f.Dist() == "threads" {
			return true
		}
	}
	return false
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// emitYield assigns the yielded values to the carried variables. When a
// yielded value is another carried value (a swap), the carried values
// yielded are copied first.
func (ke *kernelEmitter) emitYield(op *ir.Operation, args []*ir.Value, vars []val) {
	ys := op.Operands()
	carried := map[*ir.Value]bool{}
	for _, a := range args {
		carried[a] = true
	}
	swap := false
	for j, y := range ys {
		swap = swap || (carried[y] && y != args[j])
	}
	src := make([]val, len(ys))
	for j, y := range ys {
		src[j] = ke.get(y)
		if swap && carried[y] && y != args[j] {
			tmp := ke.names.fresh("next")
			ke.copyVal(tmp, src[j], false)
			if src[j].width > 0 {
				src[j] = val{array: tmp, width: src[j].width, kind: src[j].kind}
			} else {
				src[j] = val{expr: tmp, kind: src[j].kind}
			}
		}
	}
	for j, y := range ys {
		if y != args[j] {
			ke.assign(vars[j], src[j])
		}
	}
}

// copyVal declares name as a copy of x.
func (ke *kernelEmitter) copyVal(name string, x val, mutable bool) {
	t := metalType(x.kind)
	if x.width == 0 {
		q := "const "
		if mutable {
			q = ""
		}
		ke.line("%s%s %s = %s;", q, t, name, x.expr)
		return
	}
	ke.line("%s %s[%d];", t, name, x.width)
	ke.line("for (uint l = 0; l < %d; ++l) %s[l] = %s;", x.width, name, x.lane("l"))
}

// assign writes dst = src.
func (ke *kernelEmitter) assign(dst, src val) {
	if dst.width == 0 {
		ke.line("%s = %s;", dst.expr, src.expr)
		return
	}
	ke.line("for (uint l = 0; l < %d; ++l) %s[l] = %s;", dst.width, dst.array, src.lane("l"))
}

// simdFunc is the simdgroup reduction of kind over element k.
func (ke *kernelEmitter) simdFunc(kind string, k ir.ElemKind) string {
	switch {
	case kind == "add":
		return "simd_sum"
	case k == ir.F32:
		ke.helpers.use("tf_simd_" + kind)
		return "tf_simd_" + kind
	}
	return "simd_" + kind
}

// combineStep spells acc combined with x by kind, in one thread.
func (ke *kernelEmitter) combineStep(kind string, k ir.ElemKind, acc, x string) string {
	switch {
	case kind == "add" && k == ir.F32:
		return acc + " + " + x
	case kind == "add":
		return metalType(k) + "(" + acc + " + " + x + ")"
	case k == ir.F32:
		ke.helpers.use("tf_" + kind)
		return "tf_" + kind + "(" + acc + ", " + x + ")"
	}
	return "metal::" + kind + "(" + acc + ", " + x + ")"
}

// emitCombine combines the carried values of a threads loop over the
// threads: each thread's lanes first where a loop.reduce is folded in,
// then within each simdgroup, then (threadgroup mode) across the
// simdgroups through partial[]:
//
//	t3 = simd_sum(t3);
//	if (simd_lane == 0) { partial[simd_id] = t3; }
//	threadgroup_barrier(mem_flags::mem_threadgroup);
//	t3 = partial[0];
//	for (uint sg = 1; sg < (tg_size + 31) / 32; ++sg) t3 = t3 + partial[sg];
func (ke *kernelEmitter) emitCombine(items []combineItem, vars []val) {
	ke.line("// combine over the threadgroup: every thread gets the total")
	accs := make([]val, len(items))
	for j, it := range items {
		accs[j] = vars[j]
		if it.reduce == nil {
			continue
		}
		res := it.reduce.Result(0)
		name := ke.valueName(res)
		x := vars[j]
		ke.line("%s %s = %s;", metalType(it.elem), name, x.lane("0"))
		ke.line("for (uint l = 1; l < %d; ++l) %s = %s;", x.width, name, ke.combineStep(it.kind, it.elem, name, x.lane("l")))
		accs[j] = val{expr: name, kind: it.elem}
		ke.vals[res] = accs[j]
	}
	each := func(j int, stmt func(lv string, slot string)) {
		a := accs[j]
		if a.width == 0 {
			stmt(a.expr, "")
			return
		}
		ke.line("for (uint l = 0; l < %d; ++l) {", a.width)
		ke.indent++
		stmt(a.array+"[l]", "l")
		ke.indent--
		ke.line("}")
	}
	for j, it := range items {
		fn := ke.simdFunc(it.kind, it.elem)
		each(j, func(lv, _ string) { ke.line("%s = %s(%s);", lv, fn, lv) })
	}
	if ke.p.mode != modeThreadgroup {
		return
	}
	if ke.partialUsed {
		ke.barrier("every thread has read partial[] of the previous reduction")
	}
	// slot of each item in its kind's buffer
	slots := make([]int64, len(items))
	next := map[ir.ElemKind]int64{}
	for j, it := range items {
		slots[j] = next[it.elem]
		next[it.elem] += it.slots
	}
	cell := func(j int, l, who string) string {
		s := slots[j]
		idx := who
		switch {
		case l == "" && s == 0:
		case l == "" && who == "0":
			idx = fmt.Sprintf("%d", s*32)
		case l == "":
			idx = fmt.Sprintf("%d + %s", s*32, who)
		case s == 0:
			idx = fmt.Sprintf("%s * 32 + %s", l, who)
		default:
			idx = fmt.Sprintf("(%d + %s) * 32 + %s", s, l, who)
		}
		return partialName(items[j].elem) + "[" + idx + "]"
	}
	ke.line("if (simd_lane == 0) {")
	ke.indent++
	for j := range items {
		each(j, func(lv, l string) { ke.line("%s = %s;", cell(j, l, "simd_id"), lv) })
	}
	ke.indent--
	ke.line("}")
	ke.barrier("")
	// every thread adds the simdgroups' results up in the same order (a
	// simd_sum of them would miss some in a simdgroup with fewer lanes)
	for j, it := range items {
		each(j, func(lv, l string) {
			ke.line("%s = %s;", lv, cell(j, l, "0"))
			ke.line("for (uint sg = 1; sg < (tg_size + 31) / 32; ++sg) %s = %s;", lv, ke.combineStep(it.kind, it.elem, lv, cell(j, l, "sg")))
		})
	}
	ke.partialUsed = true
}

// emitReduce writes a loop.reduce not folded into a combine: the lanes
// in order.
func (ke *kernelEmitter) emitReduce(r loop.ReduceOp) {
	x := ke.get(r.Input())
	res := r.Output()
	k := elemKind(res.Type())
	name := ke.valueName(res)
	ke.line("%s %s = %s;", metalType(k), name, x.lane("0"))
	ke.line("for (uint l = 1; l < %d; ++l) %s = %s;", x.width, name, ke.combineStep(r.Kind(), k, name, x.lane("l")))
	ke.vals[res] = val{expr: name, kind: k}
}
