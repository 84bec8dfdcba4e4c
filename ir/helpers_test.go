package ir_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	_ "github.com/tensorforge/tensorforge/dialects/graph" // registers the graph ops the IR texts use
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/parser"
)

// Ops that exist only in these tests, for the structural rules of the
// core that no real dialect op exercises on its own:
//
//	test.op        any operands, results, attributes and regions
//	test.pure      Pure: dead ones are erased
//	test.term      a Terminator
//	test.isolated  IsolatedFromAbove, with regions
//	test.container NoTerminator, with regions
//	test.const     ConstantLike and Pure, with a `value` attribute
//	test.addi      Pure, folds two test.const integer operands
//	test.verify    fails its own Verify with "test.verify rejects this"
const (
	opTest      = "test.op"
	opPure      = "test.pure"
	opTerm      = "test.term"
	opIsolated  = "test.isolated"
	opContainer = "test.container"
	opConst     = "test.const"
	opAddI      = "test.addi"
	opVerify    = "test.verify"
)

func init() {
	ir.RegisterOp(&ir.OpDef{Name: opTest, AnyAttrs: true})
	ir.RegisterOp(&ir.OpDef{Name: opPure, Traits: ir.Pure, AnyAttrs: true})
	ir.RegisterOp(&ir.OpDef{Name: opTerm, Traits: ir.Terminator})
	ir.RegisterOp(&ir.OpDef{Name: opIsolated, Traits: ir.IsolatedFromAbove, AnyAttrs: true})
	ir.RegisterOp(&ir.OpDef{Name: opContainer, Traits: ir.NoTerminator})
	ir.RegisterOp(&ir.OpDef{Name: opConst, Traits: ir.ConstantLike | ir.Pure, Attrs: []string{"value"}})
	ir.RegisterOp(&ir.OpDef{Name: opAddI, Traits: ir.Pure, Fold: func(op *ir.Operation, consts []ir.Attr) []ir.Attr {
		a, ok1 := consts[0].(ir.IntAttr)
		b, ok2 := consts[1].(ir.IntAttr)
		if !ok1 || !ok2 {
			return nil
		}
		return []ir.Attr{ir.IntAttr{Value: a.Value + b.Value, Type: a.Type}}
	}})
	ir.RegisterOp(&ir.OpDef{Name: opVerify, Verify: func(op *ir.Operation) error {
		return ir.OpError(op, "test.verify rejects this")
	}})
}

// parse parses IR text that must be valid syntax.
func parse(t testing.TB, src string) ir.Module {
	t.Helper()
	m, err := parser.Parse("t.tir", src)
	require.NoError(t, err, "parsing:\n%s", src)
	return m
}

// printIR prints m in the custom form.
func printIR(m ir.Module) string { return ir.Print(m.Operation, ir.PrintOptions{}) }

// dedent removes the common leading tabs of a raw string literal written
// inside a Go function, and its first newline, so IR text in tables can be
// indented like the code around it.
func dedent(s string) string {
	s = strings.TrimPrefix(s, "\n")
	lines := strings.Split(s, "\n")
	min := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, "\t"))
		if min < 0 || n < min {
			min = n
		}
	}
	for i, l := range lines {
		if len(l) >= min && min > 0 {
			lines[i] = l[min:]
		} else {
			lines[i] = strings.TrimLeft(l, "\t")
		}
	}
	return strings.Join(lines, "\n")
}

// findOp returns the first op called name nested in root.
func findOp(t testing.TB, root *ir.Operation, name string) *ir.Operation {
	t.Helper()
	var found *ir.Operation
	root.Walk(func(o *ir.Operation) bool {
		if found == nil && o.Name() == name {
			found = o
		}
		return found == nil
	})
	require.NotNil(t, found, "no %s op", name)
	return found
}

// opNames lists the names of the ops of b in order.
func opNames(b *ir.Block) []string {
	var names []string
	for o := b.First(); o != nil; o = o.Next() {
		names = append(names, o.Name())
	}
	return names
}

// f32x4 is the type most tests use.
var f32x4 = ir.Tensor(ir.F32Type, 4)
