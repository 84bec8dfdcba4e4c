package triton

import (
	"fmt"
	"strconv"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// ---------------------------------------------------------------------------
// Resident splits
//
// A kernel of schedule "resident" (lowering/resident.go) splits each row
// across S programs that keep their split in one block of registers,
// publish its max and sum, wait for the row's other programs and combine
// the S pairs:
//
//	%t = loop.ticket %tickets, %n : (memref<1xi32, dram>, index) -> index
//	...
//	loop.group_sync %groups, %row, %c16 : (memref<?x2xi32, dram>, index, index) -> ()
//
// becomes
//
//	ticket = tl.atomic_add(tickets, 1)
//	if ticket == t0 - 1:
//	    tl.store(tickets, 0)
//	t = ticket.to(tl.int64)
//	...
//	tl.debug_barrier()
//	sync = groups + (t1 * 2)
//	tl.atomic_add(sync, 1, sem="release")
//	while tl.atomic_add(sync, 0, sem="acquire") < 16:
//	    pass
//	left = tl.atomic_add(sync + 1, 1)
//	if left == 15:
//	    tl.store(sync, 0)
//	    tl.store(sync + 1, 0)
//	tl.debug_barrier()
//
// A scalar atomic is performed once per program (by one thread, its
// result broadcast to the others). The ticket, not tl.program_id, numbers
// the instance: programs take tickets in the order they start, so the
// programs of a group are all running once its first one waits (a GPU
// holding S programs at once cannot deadlock). The last instance to take a
// ticket, and the last of a group to leave the sync, store the counters
// back to zero: the launcher keeps them, zeroed once, across calls. The
// barriers order every thread's stores before the release and every
// thread's later loads after the acquire; those loads of buffers the
// kernel stores (the partial results of the group) are emitted with
// cache_modifier=".cg", through L2, which the group's stores reach, not
// L1, which is not coherent across multiprocessors.

// markCG records, when the kernel holds a loop.group_sync, the DRAM
// buffers it stores.
func (k *kernelEmitter) markCG() {
	sync := false
	stored := map[*ir.Value]bool{}
	k.op.Operation.Walk(func(op *ir.Operation) bool {
		switch op.Name() {
		case loop.OpGroupSync:
			sync = true
		case loop.OpStore:
			st, _ := loop.AsStore(op)
			if m, ok := st.Memref().Type().(ir.MemRefType); ok && m.Space == ir.DRAM {
				stored[st.Memref()] = true
			}
		}
		return true
	})
	if sync {
		k.cg = stored
	}
}

// residentOp checks that a ticket or group sync is one the emitter
// translates: in a resident split, directly in the launch grid.
func (k *kernelEmitter) residentOp(op *ir.Operation) error {
	if !k.plan.resident {
		return kernelError(op, "is in a kernel that is not a resident split (schedule = \"resident\")")
	}
	if op.ParentOp() != k.plan.grid.Operation {
		return kernelError(op, "is not directly in the launch grid")
	}
	return nil
}

// counterPtr is the pointer to the first counter of buffer m, a kernel
// argument.
func (k *kernelEmitter) counterPtr(op *ir.Operation, m *ir.Value) (string, error) {
	if _, ok := k.extents[m]; !ok {
		return "", kernelError(op, "takes counters that are not a buffer argument of the kernel")
	}
	if mt, ok := m.Type().(ir.MemRefType); !ok || mt.Elem.Kind != ir.I32 {
		return "", kernelError(op, "takes counters of type %s; i32 are expected", m.Type())
	}
	return k.ref(m), nil
}

// emitTicket translates loop.ticket: the program's number in the order
// programs reach it, the counter left at zero by the last one.
func (k *kernelEmitter) emitTicket(op *ir.Operation) error {
	if err := k.residentOp(op); err != nil {
		return err
	}
	tk, _ := loop.AsTicket(op)
	ptr, err := k.counterPtr(op, tk.Counter())
	if err != nil {
		return err
	}
	w := k.w
	raw := k.names.fresh("ticket")
	w.effect(raw, "tl.atomic_add("+ptr+", 1)")
	w.open(fmt.Sprintf("if %s == %s:", raw, minusOne(k.ref(tk.Count()))))
	w.line("tl.store(" + ptr + ", 0)")
	w.close()
	// rows are 64-bit, as the grid's are (pid.to(tl.int64))
	name := k.fresh(tk.Output())
	w.assign(name, raw+".to(tl.int64)")
	k.bind(tk.Output(), name)
	return nil
}

// emitGroupSync translates loop.group_sync: arrivals counted at 2 g,
// departures at 2 g + 1, both stored back to zero by the last to leave.
func (k *kernelEmitter) emitGroupSync(op *ir.Operation) error {
	if err := k.residentOp(op); err != nil {
		return err
	}
	gs, _ := loop.AsGroupSync(op)
	base, err := k.counterPtr(op, gs.Counters())
	if err != nil {
		return err
	}
	w := k.w
	size := k.ref(gs.Size())
	sync := k.names.fresh("sync")
	w.line("tl.debug_barrier()")
	w.assign(sync, join("+", base, mulExpr(k.ref(gs.Group()), "2")))
	w.line("tl.atomic_add(" + sync + ", 1, sem=\"release\")")
	w.open(fmt.Sprintf("while tl.atomic_add(%s, 0, sem=\"acquire\") < %s:", sync, size))
	w.close()
	w.line("tl.debug_barrier()")
	// the departure, which only resets the counters for the next launch,
	// waits for its atomic at the end of the program, after the stores,
	// not before the loads the sync was for (on an H100 a decode step's
	// softmax over 256000 logits was ... us faster)
	k.atEnd = append(k.atEnd, func() {
		left := k.names.fresh("left")
		w.effect(left, "tl.atomic_add("+sync+" + 1, 1)")
		w.open(fmt.Sprintf("if %s == %s:", left, minusOne(size)))
		w.line("tl.store(" + sync + ", 0)")
		w.line("tl.store(" + sync + " + 1, 0)")
		w.close()
	})
	// what was loaded before the sync may have changed
	k.loads = map[string]string{}
	return nil
}

// minusOne is `x - 1`, folded when x is a literal.
func minusOne(x string) string {
	if n, err := strconv.ParseInt(x, 10, 64); err == nil {
		return strconv.FormatInt(n-1, 10)
	}
	return atom(x) + " - 1"
}
