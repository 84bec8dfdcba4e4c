package ods

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// An optional group may end in omissible operands (graph.dequantize's
// zero points): the counts allowed are the fixed operands alone, or with
// the group's required part and any of the omissible rest.
func TestOmissibleOperands(t *testing.T) {
	for n, want := range map[int]string{
		1: "", 2: "", 3: "",
		0: "'toy.op' op expected 1, 2 or 3 operands, but found 0",
		4: "'toy.op' op expected 1, 2 or 3 operands, but found 4",
	} {
		require.Equal(t, want, msg(CheckNumOperandsOmissible(newOp("toy.op", n, nil), 1, 1, 2)), "%d operands", n)
	}
	require.Equal(t, "'toy.op' op expected 1, 3 or 4 operands, but found 2", msg(CheckNumOperandsOmissible(newOp("toy.op", 2, nil), 1, 2, 3)))

	withGroup := func(ops ...OperandDecl) func(*DialectDecl) {
		return func(d *DialectDecl) { d.Ops[0].Operands = append(d.Ops[0].Operands, ops...) }
	}
	opt := OperandDecl{Name: "scales", Constraint: AnyTensor, Optional: true}
	omit := OperandDecl{Name: "zero_points", Constraint: AnyTensor, Optional: true, Omissible: true}
	d := validDialect()
	withGroup(opt, omit)(&d)
	require.NoError(t, d.Validate())
	for _, c := range []struct {
		edit func(*DialectDecl)
		want string
	}{
		{withGroup(opt, OperandDecl{Name: "zero_points", Constraint: AnyTensor, Omissible: true}), "operand zero_points is omissible but not optional"},
		{withGroup(opt, omit, OperandDecl{Name: "more", Constraint: AnyTensor, Optional: true}), "operand more follows an omissible operand, so it must be omissible too"},
		{withGroup(omit), "operand zero_points is omissible, but no optional operand comes before it"},
	} {
		d := validDialect()
		c.edit(&d)
		err := d.Validate()
		require.Error(t, err)
		require.Contains(t, err.Error(), c.want)
	}
}
