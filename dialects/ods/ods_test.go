package ods

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/ir"
)

func tensor(k ir.ElemKind, shape ...int64) ir.TensorType {
	return ir.Tensor(ir.ElemType{Kind: k}, shape...)
}

func TestConstraints(t *testing.T) {
	f32, i32, i1 := tensor(ir.F32, 4), tensor(ir.I32, 4), tensor(ir.I1, 4)
	memref := ir.MemRefType{Shape: []int64{4}, Elem: ir.F32Type, Space: ir.DRAM}
	sram := ir.MemRefType{Shape: []int64{4}, Elem: ir.F32Type, Space: ir.SRAM}
	vector := ir.VectorType{Shape: []int64{8}, Elem: ir.F32Type}
	for _, c := range []struct {
		c       Constraint
		allowed []ir.Type
		refused []ir.Type
	}{
		{AnyTensor, []ir.Type{f32, i32, i1}, []ir.Type{memref, ir.F32Type, nil}},
		{NumericTensor, []ir.Type{f32, i32, tensor(ir.Index)}, []ir.Type{i1, memref}},
		{FloatTensor, []ir.Type{f32, tensor(ir.BF16), tensor(ir.F8E5M2)}, []ir.Type{i32, i1}},
		{BoolTensor, []ir.Type{i1}, []ir.Type{f32, tensor(ir.UI8)}},
		{QuantizedTensor, []ir.Type{tensor(ir.UI8), tensor(ir.I8), tensor(ir.F8E4M3FN)}, []ir.Type{i32, tensor(ir.F8E5M2)}},
		{RequantizableTensor, []ir.Type{i32, tensor(ir.I8), tensor(ir.UI8)}, []ir.Type{tensor(ir.F8E4M3FN), tensor(ir.I16)}},
		{DequantizableTensor, []ir.Type{i32, tensor(ir.F8E4M3FN)}, []ir.Type{f32}},
		{AnyType, []ir.Type{f32, memref, ir.IndexType}, nil},
		{IndexValue, []ir.Type{ir.IndexType}, []ir.Type{ir.I64Type, f32}},
		{ScalarValue, []ir.Type{ir.F32Type, ir.I1Type}, []ir.Type{ir.IndexType, f32, vector}},
		{VectorValue, []ir.Type{vector}, []ir.Type{ir.F32Type, ir.VectorType{Shape: []int64{2, 4}, Elem: ir.F32Type}}},
		{ScalarOrVector, []ir.Type{vector, ir.BF16Type}, []ir.Type{ir.IndexType, memref}},
		{AnyMemRef, []ir.Type{memref, sram}, []ir.Type{f32}},
		{DRAMMemRef, []ir.Type{memref}, []ir.Type{sram}},
		{SRAMMemRef, []ir.Type{sram}, []ir.Type{memref}},
	} {
		require.NotEqual(t, "invalid constraint", c.c.String())
		for _, ty := range c.allowed {
			require.True(t, c.c.Allows(ty), "%s allows %v", c.c, ty)
		}
		for _, ty := range c.refused {
			require.False(t, c.c.Allows(ty), "%s refuses %v", c.c, ty)
		}
	}
	require.Equal(t, "tensor of floating-point values", FloatTensor.Summary())
	require.False(t, invalidConstraint.Allows(f32))
	require.Equal(t, "invalid constraint", Constraint(200).Summary())
}

func newOp(name string, operands int, attrs ir.AttrDict) *ir.Operation {
	b := ir.NewBlock()
	vals := make([]*ir.Value, operands)
	for i := range vals {
		vals[i] = b.AddArg(tensor(ir.F32, 4))
	}
	return ir.NewOperation(name, ir.Location{}, vals, []ir.Type{tensor(ir.F32, 4)}, attrs, 0)
}

func msg(err error) string {
	if err == nil {
		return ""
	}
	return err.(*ir.Diagnostic).Message
}

func TestCheckCounts(t *testing.T) {
	op := newOp("toy.op", 2, nil)
	require.NoError(t, CheckNumOperands(op, 2, 0, false))
	require.Equal(t, "'toy.op' op expected 1 operand, but found 2", msg(CheckNumOperands(op, 1, 0, false)))
	require.Equal(t, "'toy.op' op expected 3 operands, but found 2", msg(CheckNumOperands(op, 3, 0, false)))
	require.NoError(t, CheckNumOperands(op, 1, 0, true))
	require.Equal(t, "'toy.op' op expected 3 or more operands, but found 2", msg(CheckNumOperands(op, 3, 0, true)))
	require.NoError(t, CheckNumOperands(op, 0, 2, false))
	require.Equal(t, "'toy.op' op expected 1 or 3 operands, but found 2", msg(CheckNumOperands(op, 1, 2, false)))
	require.NoError(t, CheckNumResults(op, 1, false))
	require.NoError(t, CheckNumResults(op, 0, true))
	require.Equal(t, "'toy.op' op expected 0 results, but found 1", msg(CheckNumResults(op, 0, false)))
	require.Equal(t, "'toy.op' op expected 2 regions, but found 0", msg(CheckNumRegions(op, 2)))
}

func TestCheckTypes(t *testing.T) {
	op := newOp("toy.op", 1, nil)
	require.NoError(t, CheckOperand(op, 0, FloatTensor))
	require.Equal(t, "'toy.op' op operand #0 must be tensor of i1 values, but got 'tensor<4xf32>'", msg(CheckOperand(op, 0, BoolTensor)))
	require.NoError(t, CheckResult(op, 0, AnyTensor))
	require.Equal(t, "'toy.op' op result #0 must be tensor of ui8, i8 or f8E4M3FN values, but got 'tensor<4xf32>'", msg(CheckResult(op, 0, QuantizedTensor)))
	op.SetOperand(0, nil)
	require.Equal(t, "'toy.op' op operand #0 is null", msg(CheckOperand(op, 0, AnyTensor)))
}

func TestCheckTypeSize(t *testing.T) {
	require.NoError(t, CheckTypeSize(tensor(ir.F32, ir.Dynamic, 1<<40)))
	require.NoError(t, CheckTypeSize(ir.F32Type))
	require.EqualError(t, CheckTypeSize(tensor(ir.F32, ir.Dynamic, 1<<62, 4)), "type tensor<?x4611686018427387904x4xf32> has more elements than fit in int64")
	require.EqualError(t, CheckTypeSize(tensor(ir.F64, 1<<60)), "type tensor<1152921504606846976xf64> is larger than 2^63 bytes")
	require.EqualError(t, CheckTypeSize(tensor(ir.F32, 4, -5)), "type tensor<4x-5xf32> has invalid extent -5 in dimension 1")
	memref := ir.MemRefType{Shape: []int64{1 << 62, 8}, Elem: ir.F32Type, Space: ir.SRAM}
	require.Error(t, CheckTypeSize(memref))
}

func TestCheckAttrs(t *testing.T) {
	op := newOp("toy.unregistered", 0, ir.Attrs(
		"n", ir.IntAttr{Value: 3, Type: ir.I64Type},
		"f", ir.FloatAttr{Value: 0.5, Type: ir.F32Type},
		"b", ir.BoolAttr(true),
		"s", ir.StringAttr("tanh"),
		"t", ir.TypeAttr{Type: ir.UI8Type},
		"a", ir.IntArray(1, -1),
		"d", ir.DenseAttr{Type: tensor(ir.F32, 2), Values: []float64{1, 2}},
		"nulltype", ir.TypeAttr{},
		"nulldense", ir.DenseAttr{},
	))
	for name, kind := range map[string]AttrKind{"n": IntKind, "f": FloatKind, "b": BoolKind, "s": StringKind, "t": TypeKind, "a": IntArrayKind, "d": DenseKind} {
		require.NoError(t, CheckAttr(op, name, kind, true), name)
	}
	require.NoError(t, CheckAttr(op, "n", FloatKind, true), "an integer is a number")
	require.NoError(t, CheckAttr(op, "missing", IntKind, false))
	require.Equal(t, "'toy.unregistered' op requires attribute 'missing'", msg(CheckAttr(op, "missing", IntKind, true)))
	require.Equal(t, "'toy.unregistered' op attribute 'f' must be an integer, but got 0.5", msg(CheckAttr(op, "f", IntKind, true)))
	require.Equal(t, "'toy.unregistered' op attribute 'a' must be a string, but got [1, -1]", msg(CheckAttr(op, "a", StringKind, true)))
	require.Equal(t, "'toy.unregistered' op attribute 'nulltype' must be a type, but got a type attribute without a type", msg(CheckAttr(op, "nulltype", TypeKind, true)))
	require.Equal(t, "'toy.unregistered' op attribute 'nulldense' must be a dense elements attribute, but got a dense attribute without a type", msg(CheckAttr(op, "nulldense", DenseKind, true)))
	require.Equal(t, "'toy.unregistered' op attribute 'n' has no declared kind", msg(CheckAttr(op, "n", 0, true)))
	require.Equal(t, "'toy.x' op attribute 'a' must be an array of integers, but got [1.5]",
		msg(CheckAttr(newOp("toy.x", 0, ir.Attrs("a", ir.ArrayAttr{ir.FloatAttr{Value: 1.5, Type: ir.F32Type}})), "a", IntArrayKind, true)))

	require.NoError(t, CheckEnumAttr(op, "s", "none", "tanh"))
	require.NoError(t, CheckEnumAttr(op, "missing", "none", "tanh"))
	require.Equal(t, `'toy.unregistered' op attribute 's' must be one of "eq", "ne" or "lt", but got "tanh"`, msg(CheckEnumAttr(op, "s", "eq", "ne", "lt")))

	// Unregistered ops are the generic verifier's business.
	require.NoError(t, CheckAttrNames(op))

	v, ok := GetInt(op, "n")
	require.True(t, ok)
	require.Equal(t, int64(3), v)
	f, ok := GetFloat(op, "n")
	require.True(t, ok)
	require.Equal(t, 3.0, f)
	_, ok = GetInt(op, "f")
	require.False(t, ok)
	bv, ok := GetBool(op, "b")
	require.True(t, ok && bv)
	sv, ok := GetString(op, "s")
	require.True(t, ok)
	require.Equal(t, "tanh", sv)
	tv, ok := GetType(op, "t")
	require.True(t, ok)
	require.Equal(t, ir.UI8Type, tv)
	_, ok = GetType(op, "nulltype")
	require.False(t, ok)
	av, ok := GetIntArray(op, "a")
	require.True(t, ok)
	require.Equal(t, []int64{1, -1}, av)
	dv, ok := GetDense(op, "d")
	require.True(t, ok)
	require.Equal(t, []float64{1, 2}, dv.Values)
	_, ok = GetDense(op, "nulldense")
	require.False(t, ok)
}

func TestCheckAttrNames(t *testing.T) {
	ir.RegisterOp(&ir.OpDef{Name: "odstest.known", Attrs: []string{"axis"}})
	ir.RegisterOp(&ir.OpDef{Name: "odstest.open", Attrs: []string{"kind"}, AnyAttrs: true})
	require.NoError(t, CheckAttrNames(newOp("odstest.known", 0, ir.Attrs("axis", ir.IntAttr{Value: 1}))))
	require.Equal(t, "'odstest.known' op unknown attribute 'foo'", msg(CheckAttrNames(newOp("odstest.known", 0, ir.Attrs("foo", ir.IntAttr{Value: 1})))))
	require.NoError(t, CheckAttrNames(newOp("odstest.open", 0, ir.Attrs("foo", ir.IntAttr{Value: 1}))))
}

func TestCheckInferred(t *testing.T) {
	op := newOp("toy.op", 1, nil)
	same := func(op *ir.Operation) ([]ir.Type, error) { return []ir.Type{op.Operand(0).Type()}, nil }
	require.NoError(t, CheckInferred(op, same))
	wider := func(*ir.Operation) ([]ir.Type, error) { return []ir.Type{tensor(ir.F32, 8)}, nil }
	require.Equal(t, "'toy.op' op result type 'tensor<4xf32>' does not match the inferred type 'tensor<8xf32>'", msg(CheckInferred(op, wider)))
	two := func(*ir.Operation) ([]ir.Type, error) { return []ir.Type{tensor(ir.F32, 4), tensor(ir.F32, 4)}, nil }
	require.Equal(t, "'toy.op' op expected 2 results, but found 1", msg(CheckInferred(op, two)))
}

func TestEnumList(t *testing.T) {
	require.Equal(t, `"a"`, EnumList([]string{"a"}))
	require.Equal(t, `"a" or "b"`, EnumList([]string{"a", "b"}))
	require.Equal(t, `"a", "b" or "c"`, EnumList([]string{"a", "b", "c"}))
}

func TestCamelCase(t *testing.T) {
	for in, want := range map[string]string{"add": "Add", "reduce_sum": "ReduceSum", "zero_point": "ZeroPoint", "log1p": "Log1p", "transpose_b": "TransposeB"} {
		require.Equal(t, want, CamelCase(in))
	}
	o := OpDecl{Name: "rmsnorm", GoName: "RMSNorm"}
	require.Equal(t, "RMSNorm", o.Ident())
	o.GoName = ""
	require.Equal(t, "Rmsnorm", o.Ident())
}

func validDialect() DialectDecl {
	return DialectDecl{
		Name:    "toy",
		Classes: []ClassDecl{{Name: "Same", Infers: true}},
		Ops: []OpDecl{{
			Name: "scale", Summary: "scales", Example: "%y = toy.scale %x : tensor<4xf32>", Class: "Same",
			Operands: []OperandDecl{{Name: "input", Constraint: FloatTensor}},
			Results:  []ResultDecl{{Name: "output", Constraint: FloatTensor}},
			Attrs:    []AttrDecl{{Name: "factor", Kind: FloatKind, Default: 2.0}},
		}},
	}
}

func TestValidate(t *testing.T) {
	d := validDialect()
	require.NoError(t, d.Validate())
	for _, c := range []struct {
		edit func(*DialectDecl)
		want string
	}{
		{func(d *DialectDecl) { d.Ops = append(d.Ops, d.Ops[0]) }, "toy.scale declared twice"},
		{func(d *DialectDecl) { d.Classes = append(d.Classes, d.Classes[0]) }, "class Same declared twice"},
		{func(d *DialectDecl) { d.Ops[0].Class = "Other" }, `toy.scale refers to undeclared class "Other"`},
		{func(d *DialectDecl) { d.Ops[0].Summary = "" }, "toy.scale needs a summary and an example"},
		{func(d *DialectDecl) { d.Ops[0].Example = "%y = toy.other %x" }, "toy.scale: the example does not use the op"},
		{func(d *DialectDecl) { d.Ops[0].Operands[0].Constraint = 0 }, "toy.scale: operand input has no constraint"},
		{func(d *DialectDecl) { d.Ops[0].Results[0].Constraint = 0 }, "toy.scale: result output has no constraint"},
		{func(d *DialectDecl) { d.Ops[0].Attrs[0].Default = int64(2) }, "toy.scale: default of attribute factor is a int64, not float64"},
		{func(d *DialectDecl) { d.Ops[0].Attrs[0].Optional = true }, "toy.scale: attribute factor has a default, so it is optional already"},
		{func(d *DialectDecl) { d.Ops[0].Attrs[0].Kind = 0 }, "toy.scale: attribute factor has no kind"},
		{func(d *DialectDecl) { d.Ops[0].Attrs[0].Enum = []string{"a"} }, "toy.scale: attribute factor has values listed but is not a string"},
		{func(d *DialectDecl) {
			d.Ops[0].Attrs[0] = AttrDecl{Name: "mode", Kind: StringKind, Default: "c", Enum: []string{"a", "b"}}
		}, `toy.scale: default "c" of attribute mode is not one of its values`},
		{func(d *DialectDecl) { d.Ops[0].Attrs[0].Name = "name" }, `toy.scale: attribute "name" would hide ir.Operation.Name`},
		{func(d *DialectDecl) { d.Ops[0].Attrs[0].Name = "input" }, `toy.scale: attribute "input" and operand input share the accessor name Input`},
		{func(d *DialectDecl) { d.Ops[0].Attrs[0].Name = "Bad-name" }, `toy.scale: attribute name "Bad-name" is not a snake_case identifier`},
		{func(d *DialectDecl) {
			d.Ops[0].Operands = append([]OperandDecl{{Name: "rest", Constraint: AnyTensor, Variadic: true}}, d.Ops[0].Operands...)
		}, "toy.scale: only the last operand may be variadic"},
		{func(d *DialectDecl) {
			d.Ops[0].Operands = append([]OperandDecl{{Name: "opt", Constraint: AnyTensor, Optional: true}}, d.Ops[0].Operands...)
		}, "toy.scale: optional operands must come last"},
		{func(d *DialectDecl) {
			d.Ops[0].Results = append(d.Ops[0].Results, ResultDecl{Name: "rest", Constraint: AnyTensor, Variadic: true})
		}, "toy.scale: a variadic result must be the only result"},
		{func(d *DialectDecl) { d.Ops[0].Regions = []RegionDecl{{Name: "body"}} }, "toy.scale: ops with regions need a hand-written builder (CustomBuilder)"},
		{func(d *DialectDecl) { d.Name = "not a name" }, `dialect name "not a name" is not an identifier`},
	} {
		d := validDialect()
		c.edit(&d)
		err := d.Validate()
		require.Error(t, err)
		require.Contains(t, err.Error(), c.want)
	}
}
