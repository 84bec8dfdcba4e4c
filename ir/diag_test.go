package ir_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/tensorforge/tensorforge/ir"
)

const diagSource = "func.func @f(%x: tensor<4xf32>) {\n" +
	"  %y = graph.add %x : tensor<4xf32>\n" +
	"\t\t%z = graph.neg %q : tensor<4xf32>\n" +
	"  %s = test.op \"ünï\" %x\r\n" +
	"}"

func TestRender(t *testing.T) {
	sm := &ir.SourceManager{}
	sm.AddFile("a.tir", diagSource)
	at := func(line, col int) ir.Location { return ir.Location{File: "a.tir", Line: line, Col: col} }
	tests := []struct {
		name string
		diag *ir.Diagnostic
		want string
	}{
		{"caret under the column", ir.Errorf(at(2, 8), "bad add"),
			"a.tir:2:8: error: bad add\n" +
				"  %y = graph.add %x : tensor<4xf32>\n" +
				"       ^\n"},
		{"first column", ir.Errorf(at(1, 1), "here"),
			"a.tir:1:1: error: here\n" +
				"func.func @f(%x: tensor<4xf32>) {\n" +
				"^\n"},
		{"tabs are kept", ir.Errorf(at(3, 18), "use of undeclared SSA value '%%q'"),
			"a.tir:3:18: error: use of undeclared SSA value '%q'\n" +
				"\t\t%z = graph.neg %q : tensor<4xf32>\n" +
				"\t\t               ^\n"},
		// columns count bytes; the caret lines up under the character
		{"after multi-byte characters", ir.Errorf(at(4, 24), "here"),
			"a.tir:4:24: error: here\n" +
				"  %s = test.op \"ünï\" %x\n" +
				"                     ^\n"},
		{"column past the end of the line", ir.Errorf(at(5, 4), "expected more"),
			"a.tir:5:4: error: expected more\n" +
				"}\n" +
				"   ^\n"},
		{"column 0", ir.Errorf(at(5, 0), "x"),
			"a.tir:5:0: error: x\n" +
				"}\n" +
				"^\n"},
		{"with notes", ir.Errorf(at(2, 3), "'graph.add' op expects 2 operands").AddNote(at(1, 14), "%s defined here", "%x"),
			"a.tir:2:3: error: 'graph.add' op expects 2 operands\n" +
				"  %y = graph.add %x : tensor<4xf32>\n" +
				"  ^\n" +
				"a.tir:1:14: note: %x defined here\n" +
				"func.func @f(%x: tensor<4xf32>) {\n" +
				"             ^\n"},
		{"unknown location", &ir.Diagnostic{Severity: ir.SevWarning, Message: "no place"},
			"warning: no place\n"},
		{"unknown file", ir.Errorf(ir.Location{File: "b.tir", Line: 1, Col: 1}, "elsewhere"),
			"b.tir:1:1: error: elsewhere\n"},
		{"line out of range", ir.Errorf(at(9, 1), "too far"),
			"a.tir:9:1: error: too far\n"},
		{"remark", &ir.Diagnostic{Severity: ir.SevRemark, Loc: at(2, 3), Message: "[fusion] fused"},
			"a.tir:2:3: remark: [fusion] fused\n" +
				"  %y = graph.add %x : tensor<4xf32>\n" +
				"  ^\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, sm.Render(tc.diag))
		})
	}

	// a source manager without files, or none at all, renders the message only
	assert.Equal(t, "a.tir:2:3: error: x\n", (&ir.SourceManager{}).Render(ir.Errorf(at(2, 3), "x")))
	var nilSM *ir.SourceManager
	assert.Equal(t, "a.tir:2:3: error: x\n", nilSM.Render(ir.Errorf(at(2, 3), "x")))
	line, ok := sm.Line("a.tir", 4)
	assert.True(t, ok)
	assert.Equal(t, "  %s = test.op \"ünï\" %x", line, "a trailing CR is dropped")
	_, ok = sm.Line("a.tir", 0)
	assert.False(t, ok)
}

func TestSortDiagnostics(t *testing.T) {
	d := func(file string, line, col int, msg string) *ir.Diagnostic {
		return ir.Errorf(ir.Location{File: file, Line: line, Col: col}, "%s", msg)
	}
	ds := []*ir.Diagnostic{
		d("b.tir", 1, 1, "b1"),
		d("a.tir", 3, 1, "a3"),
		d("a.tir", 2, 9, "a2:9"),
		d("a.tir", 2, 5, "a2:5 first"),
		d("a.tir", 10, 1, "a10"),
		d("a.tir", 2, 5, "a2:5 second"),
		{Message: "nowhere"},
	}
	ir.SortDiagnostics(ds)
	var got []string
	for _, x := range ds {
		got = append(got, x.Message)
	}
	assert.Equal(t, []string{"nowhere", "a2:5 first", "a2:5 second", "a2:9", "a3", "a10", "b1"}, got)
}

func TestDiagnostics(t *testing.T) {
	assert.Equal(t, "error", ir.SevError.String())
	assert.Equal(t, "warning", ir.SevWarning.String())
	assert.Equal(t, "note", ir.SevNote.String())
	assert.Equal(t, "remark", ir.SevRemark.String())
	assert.Equal(t, "severity(9)", ir.Severity(9).String())

	var none *ir.Diagnostics
	none.Report(ir.Errorf(ir.Location{}, "dropped"))
	assert.False(t, none.HasErrors())

	ds := &ir.Diagnostics{}
	ds.Emit(ir.SevWarning, ir.Location{}, "w")
	assert.False(t, ds.HasErrors())
	e := ds.Emit(ir.SevError, ir.Location{File: "f", Line: 1, Col: 1}, "e %d", 2)
	assert.True(t, ds.HasErrors())
	assert.Equal(t, "f:1:1: error: e 2", e.Error())
	assert.Len(t, ds.List, 2)

	op := ir.NewOperation("graph.add", ir.Location{File: "f", Line: 3, Col: 4}, nil, nil, nil, 0)
	assert.Equal(t, "f:3:4: error: 'graph.add' op expects 2 operands", ir.OpError(op, "expects %d operands", 2).Error())
}
