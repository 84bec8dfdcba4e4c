package ods

import (
	"fmt"
	"strings"

	"github.com/tensorforge/tensorforge/ir"
)

// This file holds the checks that generated verifiers and builders call.
// Each returns an ir.OpError, so messages read `'graph.add' op ...` as in
// MLIR.

// CheckNumOperands checks the operand count of an op with fixed required
// operands, then either a trailing optional group of optional operands
// (all present or all absent) or, if variadic, any number of trailing
// operands.
//
//	expected 2 operands, but found 1
//	expected 1 or 3 operands, but found 2
//	expected 1 or more operands, but found 0
func CheckNumOperands(op *ir.Operation, fixed, optional int, variadic bool) error {
	n := op.NumOperands()
	switch {
	case variadic:
		if n < fixed {
			return ir.OpError(op, "expected %d or more operands, but found %d", fixed, n)
		}
	case optional > 0:
		if n != fixed && n != fixed+optional {
			return ir.OpError(op, "expected %d or %d operands, but found %d", fixed, fixed+optional, n)
		}
	default:
		if n != fixed {
			return ir.OpError(op, "expected %s, but found %d", plural(fixed, "operand"), n)
		}
	}
	return nil
}

// CheckNumOperandsOmissible checks the operand count of an op whose
// optional group of optional operands ends in omissible ones: fixed
// operands alone, or the group's first required operands and any number
// of the omissible rest.
//
//	expected 1, 2 or 3 operands, but found 4
func CheckNumOperandsOmissible(op *ir.Operation, fixed, required, optional int) error {
	n := op.NumOperands()
	if n == fixed || (n >= fixed+required && n <= fixed+optional) {
		return nil
	}
	counts := []string{fmt.Sprint(fixed)}
	for k := fixed + required; k <= fixed+optional; k++ {
		counts = append(counts, fmt.Sprint(k))
	}
	list := strings.Join(counts[:len(counts)-1], ", ") + " or " + counts[len(counts)-1]
	return ir.OpError(op, "expected %s operands, but found %d", list, n)
}

// CheckNumResults checks the result count: exactly fixed, or any number if variadic.
func CheckNumResults(op *ir.Operation, fixed int, variadic bool) error {
	if !variadic && op.NumResults() != fixed {
		return ir.OpError(op, "expected %s, but found %d", plural(fixed, "result"), op.NumResults())
	}
	return nil
}

// CheckNumRegions checks the region count.
func CheckNumRegions(op *ir.Operation, n int) error {
	if op.NumRegions() != n {
		return ir.OpError(op, "expected %s, but found %d", plural(n, "region"), op.NumRegions())
	}
	return nil
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// CheckOperand checks that operand i satisfies c:
//
//	operand #0 must be tensor of floating-point values, but got 'tensor<4xi32>'
func CheckOperand(op *ir.Operation, i int, c Constraint) error {
	v := op.Operand(i)
	if v == nil {
		return ir.OpError(op, "operand #%d is null", i)
	}
	if !c.Allows(v.Type()) {
		return ir.OpError(op, "operand #%d must be %s, but got %s", i, c.Summary(), QuoteType(v.Type()))
	}
	return nil
}

// CheckResult checks that result i satisfies c and that its size, counting
// the static extents, fits in int64:
//
//	result #0 must be tensor of i1 values, but got 'tensor<4xf32>'
//	result #0: type tensor<4611686018427387904x4xf32> is larger than 2^63 bytes
func CheckResult(op *ir.Operation, i int, c Constraint) error {
	t := op.Result(i).Type()
	if !c.Allows(t) {
		return ir.OpError(op, "result #%d must be %s, but got %s", i, c.Summary(), QuoteType(t))
	}
	if err := CheckTypeSize(t); err != nil {
		return ir.OpError(op, "result #%d: %s", i, err)
	}
	return nil
}

// CheckTypeSize reports a shaped type whose extents are invalid or whose
// element count or byte size overflows int64. Dynamic extents (`?`) count
// as 1, so a type is rejected when its static part alone is too large.
func CheckTypeSize(t ir.Type) error {
	st, ok := t.(ir.ShapedType)
	if !ok {
		return nil
	}
	static := make([]int64, len(st.GetShape()))
	for i, d := range st.GetShape() {
		switch {
		case d == ir.Dynamic:
			static[i] = 1
		case d < 0:
			return fmt.Errorf("type %s has invalid extent %d in dimension %d", t, d, i)
		default:
			static[i] = d
		}
	}
	if _, ok := ir.NumElements(static); !ok {
		return fmt.Errorf("type %s has more elements than fit in int64", t)
	}
	if _, ok := ir.ByteSizeOf(ir.TensorType{Shape: static, Elem: st.GetElem()}); !ok {
		return fmt.Errorf("type %s is larger than 2^63 bytes", t)
	}
	return nil
}

// CheckAttrNames rejects attributes the op does not declare, unless its
// definition allows any:
//
//	unknown attribute 'foo'
func CheckAttrNames(op *ir.Operation) error {
	def := op.Def()
	if def == nil {
		def = ir.LookupOp(op.Name())
	}
	if def == nil {
		return nil // the generic verifier reports unregistered ops
	}
	for _, na := range op.Attrs {
		if !def.HasAttr(na.Name) {
			return ir.OpError(op, "unknown attribute '%s'", na.Name)
		}
	}
	return nil
}

// CheckAttr checks that attribute name, if present, has the given kind,
// and that it is present if required:
//
//	requires attribute 'perm'
//	attribute 'axes' must be an array of integers, but got 1
func CheckAttr(op *ir.Operation, name string, kind AttrKind, required bool) error {
	a := op.Attr(name)
	if a == nil {
		if required {
			return ir.OpError(op, "requires attribute '%s'", name)
		}
		return nil
	}
	if !kind.valid() {
		return ir.OpError(op, "attribute '%s' has no declared kind", name)
	}
	if !kindMatches(a, kind) {
		return ir.OpError(op, "attribute '%s' must be %s, but got %s", name, attrKindInfo[kind].noun, attrText(a))
	}
	return nil
}

// attrText prints an attribute for a diagnostic; type and dense attributes
// built without a type (in Go, never by the parser) print as such.
func attrText(a ir.Attr) string {
	switch a := a.(type) {
	case ir.TypeAttr:
		if a.Type == nil {
			return "a type attribute without a type"
		}
	case ir.DenseAttr:
		if a.Type == nil {
			return "a dense attribute without a type"
		}
	}
	return a.String()
}

func kindMatches(a ir.Attr, kind AttrKind) bool {
	switch a := a.(type) {
	case ir.IntAttr:
		return kind == IntKind || kind == FloatKind
	case ir.FloatAttr:
		return kind == FloatKind
	case ir.BoolAttr:
		return kind == BoolKind
	case ir.StringAttr:
		return kind == StringKind
	case ir.TypeAttr:
		return kind == TypeKind && a.Type != nil
	case ir.ArrayAttr:
		_, ok := a.Int64s()
		return kind == IntArrayKind && ok
	case ir.DenseAttr:
		return kind == DenseKind && a.Type != nil
	}
	return false
}

// CheckEnumAttr checks that a string attribute, if present, is one of allowed:
//
//	attribute 'approximate' must be one of "none" or "tanh", but got "fast"
func CheckEnumAttr(op *ir.Operation, name string, allowed ...string) error {
	s, ok := op.Attr(name).(ir.StringAttr)
	if !ok {
		return nil
	}
	for _, a := range allowed {
		if string(s) == a {
			return nil
		}
	}
	return ir.OpError(op, "attribute '%s' must be one of %s, but got %s", name, EnumList(allowed), s)
}

// EnumList spells allowed string values as `"a", "b" or "c"`.
func EnumList(values []string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = ir.Quote(v)
	}
	if len(quoted) < 2 {
		return strings.Join(quoted, "")
	}
	return strings.Join(quoted[:len(quoted)-1], ", ") + " or " + quoted[len(quoted)-1]
}

// CheckInferred checks the results against what infer derives from the
// operands and attributes:
//
//	result type 'tensor<4x4xf32>' does not match the inferred type 'tensor<4x8xf32>'
func CheckInferred(op *ir.Operation, infer func(*ir.Operation) ([]ir.Type, error)) error {
	want, err := infer(op)
	if err != nil {
		return err
	}
	if len(want) != op.NumResults() {
		return ir.OpError(op, "expected %s, but found %d", plural(len(want), "result"), op.NumResults())
	}
	for i, t := range want {
		if got := op.Result(i).Type(); !ir.TypeEqual(got, t) {
			if len(want) == 1 {
				return ir.OpError(op, "result type %s does not match the inferred type %s", QuoteType(got), QuoteType(t))
			}
			return ir.OpError(op, "result #%d type %s does not match the inferred type %s", i, QuoteType(got), QuoteType(t))
		}
	}
	return nil
}

// Build finishes a generated builder: it gives op the inferred result
// types (when infer is not nil and op has no results yet), inserts it at
// b's insertion point and verifies it there, so rules that look at the
// op's parent apply. An op that fails is erased again and its error
// returned.
func Build(b *ir.Builder, op *ir.Operation, checkInputs, verify func(*ir.Operation) error, infer func(*ir.Operation) ([]ir.Type, error)) error {
	if err := checkInputs(op); err != nil {
		op.DropOperands()
		return err
	}
	if infer != nil && op.NumResults() == 0 {
		types, err := infer(op)
		if err != nil {
			op.DropOperands()
			return err
		}
		for _, t := range types {
			op.AddResult(t)
		}
	}
	b.Insert(op)
	if err := verify(op); err != nil {
		op.Erase()
		return err
	}
	return nil
}

// QuoteType spells a type as MLIR's diagnostics do: 'tensor<4xf32>'.
func QuoteType(t ir.Type) string {
	if t == nil {
		return "'<null>'"
	}
	return "'" + t.String() + "'"
}

// GetInt returns attribute name of op as an integer, and whether it is
// present with that kind.
func GetInt(op *ir.Operation, name string) (int64, bool) {
	v, ok := op.Attr(name).(ir.IntAttr)
	return v.Value, ok
}

// GetFloat returns attribute name of op as a float (an integer attribute
// converts), and whether it is present with a numeric kind.
func GetFloat(op *ir.Operation, name string) (float64, bool) {
	return ir.AttrAsFloat(op.Attr(name))
}

// GetBool returns attribute name of op, and whether it is a present boolean.
func GetBool(op *ir.Operation, name string) (bool, bool) {
	v, ok := op.Attr(name).(ir.BoolAttr)
	return bool(v), ok
}

// GetString returns attribute name of op, and whether it is a present string.
func GetString(op *ir.Operation, name string) (string, bool) {
	v, ok := op.Attr(name).(ir.StringAttr)
	return string(v), ok
}

// GetIntArray returns attribute name of op as integers, and whether it is
// a present integer array.
func GetIntArray(op *ir.Operation, name string) ([]int64, bool) {
	if v, ok := op.Attr(name).(ir.ArrayAttr); ok {
		return v.Int64s()
	}
	return nil, false
}

// GetType returns attribute name of op as a type, and whether it is present.
func GetType(op *ir.Operation, name string) (ir.Type, bool) {
	v, ok := op.Attr(name).(ir.TypeAttr)
	return v.Type, ok && v.Type != nil
}

// GetDense returns attribute name of op, and whether it is present.
func GetDense(op *ir.Operation, name string) (ir.DenseAttr, bool) {
	v, ok := op.Attr(name).(ir.DenseAttr)
	return v, ok && v.Type != nil
}
