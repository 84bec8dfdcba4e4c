package loop

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tensorforge/tensorforge/ir"
)

// RowGuard is the condition of a guarded launch: it runs only when the
// rows R of buffer operand Operand (the product of all its extents but the
// last) lie in [Min, Max]. The lowering guards the launches of two forms
// of one row kernel with complementary ranges when the better form depends
// on a `?` row count, so that one module serves a decode step and a
// prefill alike.
type RowGuard struct {
	Operand int
	// Min and Max bound R; Max < 0 leaves it unbounded above.
	Min, Max int64
}

// Guard returns the row guard of launch l, if it has one.
func (l LaunchOp) Guard() (RowGuard, bool) {
	of, ok := l.RowsOf()
	if !ok {
		return RowGuard{}, false
	}
	g := RowGuard{Operand: int(of), Max: -1}
	if v, ok := l.MinRows(); ok {
		g.Min = v
	}
	if v, ok := l.MaxRows(); ok {
		g.Max = v
	}
	return g, true
}

// SetGuard makes launch l run only where g admits its rows.
func (l LaunchOp) SetGuard(g RowGuard) {
	l.SetAttr("rows_of", ir.IntAttr{Value: int64(g.Operand), Type: ir.I64Type})
	if g.Min > 0 {
		l.SetAttr("min_rows", ir.IntAttr{Value: g.Min, Type: ir.I64Type})
	}
	if g.Max >= 0 {
		l.SetAttr("max_rows", ir.IntAttr{Value: g.Max, Type: ir.I64Type})
	}
}

// CopyGuard gives launch to the guard of launch from, if it has one: a
// launch rebuilt from another (the parts of a split kernel) keeps it.
func CopyGuard(from, to LaunchOp) {
	if g, ok := from.Guard(); ok {
		to.SetGuard(g)
	}
}

// Admits reports whether the guard lets a launch run on rows rows.
func (g RowGuard) Admits(rows int64) bool {
	return rows >= g.Min && (g.Max < 0 || rows <= g.Max)
}

// String spells the guard's condition, for remarks and comments.
func (g RowGuard) String() string {
	switch {
	case g.Max < 0:
		return fmt.Sprintf("rows >= %d", g.Min)
	case g.Min <= 0:
		return fmt.Sprintf("rows <= %d", g.Max)
	}
	return fmt.Sprintf("%d <= rows <= %d", g.Min, g.Max)
}

// GuardRows spells the rows R of the guarded buffer of launch l as a
// static factor times the launch's extent operands listed (those of the
// buffer's leading `?` dimensions): every host evaluates R from what the
// launch passes. The launch's buffers are its leading memref operands.
func (l LaunchOp) GuardRows(g RowGuard) (int64, []*ir.Value, error) {
	args := l.Args()
	nbuf := 0
	for nbuf < len(args) {
		if _, ok := args[nbuf].Type().(ir.MemRefType); !ok {
			break
		}
		nbuf++
	}
	if g.Operand < 0 || g.Operand >= nbuf {
		return 0, nil, ir.OpError(l.Operation, "guards on the rows of operand #%d, which is not a buffer operand", g.Operand)
	}
	next := nbuf
	for _, a := range args[:g.Operand] {
		next += DynamicExtents([]ir.Type{a.Type()})
	}
	m := args[g.Operand].Type().(ir.MemRefType)
	if len(m.Shape) == 0 {
		return 0, nil, ir.OpError(l.Operation, "guards on the rows of operand #%d, a scalar buffer", g.Operand)
	}
	static := int64(1)
	var dyn []*ir.Value
	for d, n := range m.Shape {
		if n != ir.Dynamic {
			if d < len(m.Shape)-1 {
				static *= n
			}
			continue
		}
		if next >= len(args) {
			return 0, nil, ir.OpError(l.Operation, "passes too few extents for the '?' of its buffers")
		}
		if d < len(m.Shape)-1 {
			dyn = append(dyn, args[next])
		}
		next++
	}
	return static, dyn, nil
}

// verifyGuard: a guard names a buffer operand of rank 1 or more and a
// range that is not empty.
//
//	'min_rows' and 'max_rows' need 'rows_of', the buffer operand whose rows they bound
//	guards on the rows of operand #3, which is not a buffer operand
//	guards on rows in [8, 4], which is empty
func verifyGuard(l LaunchOp) error {
	_, hasMin := l.MinRows()
	_, hasMax := l.MaxRows()
	g, ok := l.Guard()
	if !ok {
		if hasMin || hasMax {
			return ir.OpError(l.Operation, "'min_rows' and 'max_rows' need 'rows_of', the buffer operand whose rows they bound")
		}
		return nil
	}
	if g.Min < 0 {
		return ir.OpError(l.Operation, "guards on at least %d rows; expected a count that is not negative", g.Min)
	}
	if g.Max >= 0 && g.Max < g.Min || hasMax && g.Max < 0 {
		return ir.OpError(l.Operation, "guards on rows in [%d, %d], which is empty", g.Min, g.Max)
	}
	_, _, err := l.GuardRows(g)
	return err
}

// Condition spells the guard's test in a host language whose conjunction
// is and ("and" in Python, "&&" in C), on the rows spelled as the product
// of static and the factors given.
func (g RowGuard) Condition(static int64, factors []string, and string) string {
	var terms []string
	if static != 1 || len(factors) == 0 {
		terms = append(terms, fmt.Sprint(static))
	}
	rows := strings.Join(append(terms, factors...), " * ")
	var parts []string
	if g.Min > 0 {
		parts = append(parts, fmt.Sprintf("%s >= %d", rows, g.Min))
	}
	if g.Max >= 0 {
		parts = append(parts, fmt.Sprintf("%s <= %d", rows, g.Max))
	}
	if len(parts) == 0 {
		return "1"
	}
	return strings.Join(parts, " "+and+" ")
}

// GuardedOnly reports whether every user of buffer v is a launch guarded
// alike (the same range of the same rows): the partial buffers of split
// rows, which a host need not allocate when the other form runs.
func GuardedOnly(v *ir.Value) bool {
	users := v.Users()
	if len(users) == 0 {
		return false
	}
	var first RowGuard
	var firstStatic int64
	var firstDyn []*ir.Value
	for i, u := range users {
		l, isLaunch := AsLaunch(u)
		if !isLaunch {
			return false
		}
		g, guarded := l.Guard()
		if !guarded {
			return false
		}
		static, dyn, err := l.GuardRows(g)
		if err != nil {
			return false
		}
		if i == 0 {
			first, firstStatic, firstDyn = g, static, dyn
			continue
		}
		// the same range of the same rows: the same extent values
		if g.Min != first.Min || g.Max != first.Max || static != firstStatic || !slices.Equal(dyn, firstDyn) {
			return false
		}
	}
	return true
}

// RefuseGroupSync returns a located error at the first loop.ticket,
// loop.group_sync or zeroed loop.alloc_dram of m, for a backend whose
// program instances cannot wait for each other or that keeps no counters
// across calls (nil when there is none). Only CUDA targets lower to them.
func RefuseGroupSync(m ir.Module, backend string) error {
	var bad *ir.Operation
	m.Walk(func(op *ir.Operation) bool {
		if bad != nil {
			return false
		}
		switch op.Name() {
		case OpTicket, OpGroupSync:
			bad = op
		case OpAllocDRAM:
			if isZeroed(op.Result(0)) {
				bad = op
			}
		}
		return bad == nil
	})
	if bad == nil {
		return nil
	}
	return ir.OpError(bad, "cannot be translated to %s: its instances cannot wait for each other at a loop.group_sync (a resident split, which lower-to-loops builds for CUDA targets only)", backend)
}

// RefuseStridedAccesses returns a located error at the first vector load
// or store of module m whose lanes run along another dimension than the
// last (`axis`), or at the first loop.transpose: what lower-to-loops
// builds for CPU targets only, which backend, a GPU or accelerator
// emitter, does not translate.
func RefuseStridedAccesses(m ir.Module, backend string) error {
	var bad *ir.Operation
	var axis int64
	m.Walk(func(op *ir.Operation) bool {
		if bad != nil {
			return false
		}
		var ok bool
		switch op.Name() {
		case OpLoad:
			axis, ok = LoadOp{op}.Axis()
		case OpStore:
			axis, ok = StoreOp{op}.Axis()
		case OpTranspose:
			ok = true
		}
		if ok {
			bad = op
		}
		return bad == nil
	})
	if bad == nil {
		return nil
	}
	if bad.Name() == OpTranspose {
		return ir.OpError(bad, "cannot be translated to %s: a transpose of vectors in registers, which lower-to-loops builds for CPU targets only", backend)
	}
	return ir.OpError(bad, "cannot be translated to %s: its lanes run along dimension %d of its buffer (a strided access, which lower-to-loops builds for CPU targets only)", backend, axis)
}
