package main

import (
	"fmt"
	"sync"

	"github.com/tensorforge/tensorforge/ir"
)

// Test passes exercise the driver's failure paths: a crash, invalid IR, and
// diagnostics of every severity. They exist only when the environment sets
// TFC_ENABLE_TEST_PASSES=1, so they never show up in `tfc passes` or in a
// user's pipeline.

var testPassesOnce sync.Once

func registerTestPasses() {
	testPassesOnce.Do(func() {
		ir.RegisterPass(&ir.PassInfo{
			Name:    "test-panic",
			Title:   "TestPanic",
			Summary: "panics, to test how the driver reports a crashing pass",
			New: func(ir.PassOptions) (ir.Pass, error) {
				return ir.PassFunc(func(ir.Module, *ir.PassContext) error {
					panic("test-panic: deliberate crash")
				}), nil
			},
		})
		ir.RegisterPass(&ir.PassInfo{
			Name:    "test-invalid-ir",
			Title:   "TestInvalidIR",
			Summary: "puts a copy of each function's terminator first in its body, leaving invalid IR",
			New: func(ir.PassOptions) (ir.Pass, error) {
				return ir.PassFunc(func(m ir.Module, _ *ir.PassContext) error {
					for _, f := range m.Funcs() {
						if ret := f.Return(); ret != nil {
							f.Body().InsertBefore(ret.Clone(ir.Mapping{}), f.Body().First())
						}
					}
					return nil
				}), nil
			},
		})
		ir.RegisterPass(&ir.PassInfo{
			Name:    "test-diagnose",
			Title:   "TestDiagnose",
			Summary: "reports a diagnostic at every op of a kind",
			Options: []ir.PassOption{
				{Name: "op", Kind: ir.OptString, Default: "graph.exp", Help: "the op to report at"},
				{Name: "severity", Kind: ir.OptString, Default: "warning", Help: "error, warning or remark (category 'test')"},
				{Name: "note", Kind: ir.OptBool, Default: "false", Help: "attach a note at the enclosing function"},
			},
			New: newTestDiagnose,
		})
	})
}

func newTestDiagnose(opts ir.PassOptions) (ir.Pass, error) {
	opName, severity, withNote := opts.String("op"), opts.String("severity"), opts.Bool("note")
	switch severity {
	case "error", "warning", "remark":
	default:
		return nil, fmt.Errorf("test-diagnose: severity must be error, warning or remark, not '%s'", severity)
	}
	return ir.PassFunc(func(m ir.Module, ctx *ir.PassContext) error {
		m.Walk(func(op *ir.Operation) bool {
			if op.Name() != opName {
				return true
			}
			var d *ir.Diagnostic
			switch severity {
			case "error":
				d = ctx.Diags.Emit(ir.SevError, op.Loc, "test-diagnose: found '%s'", opName)
			case "warning":
				d = ctx.Diags.Emit(ir.SevWarning, op.Loc, "test-diagnose: found '%s'", opName)
			case "remark":
				n := len(ctx.Diags.List)
				ctx.Remark("test", op.Loc, "test-diagnose: found '%s'", opName)
				if len(ctx.Diags.List) > n { // the category is enabled
					d = ctx.Diags.List[n]
				}
			}
			if d != nil && withNote {
				for p := op.ParentOp(); p != nil; p = p.ParentOp() {
					if p.Name() == ir.FuncOpName {
						d.AddNote(p.Loc, "in function @%s", ir.Func{Operation: p}.SymName())
						break
					}
				}
			}
			return true
		})
		return nil
	}), nil
}
