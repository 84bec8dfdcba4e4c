package ir_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tensorforge/tensorforge/ir"
)

// TestLookupSymbol: the index follows insertions, removals and renames.
func TestLookupSymbol(t *testing.T) {
	m := ir.NewModule(ir.Location{})
	b := m.Body()
	f := ir.NewFunc(ir.Location{}, "f", ir.FunctionType{})
	g := ir.NewFunc(ir.Location{}, "g", ir.FunctionType{})
	b.Append(f.Operation)
	assert.Equal(t, f.Operation, b.LookupSymbol("f"))
	assert.Nil(t, b.LookupSymbol("g"))
	b.InsertBefore(g.Operation, f.Operation)
	assert.Equal(t, g.Operation, b.LookupSymbol("g"))
	f.Operation.Remove()
	assert.Nil(t, b.LookupSymbol("f"))
	g.SetAttr("sym_name", ir.StringAttr("h"))
	assert.Nil(t, b.LookupSymbol("g"))
	assert.Equal(t, g.Operation, b.LookupSymbol("h"))
	b.Append(f.Operation)
	assert.Equal(t, f.Operation, b.LookupSymbol("f"))
	// positions stay valid across a removal
	h := ir.NewFunc(ir.Location{}, "k", ir.FunctionType{})
	b.Append(h.Operation)
	assert.True(t, g.Operation.IsBeforeInBlock(h.Operation))
	f.Operation.Remove()
	assert.True(t, g.Operation.IsBeforeInBlock(h.Operation))
	assert.False(t, h.Operation.IsBeforeInBlock(g.Operation))
}
