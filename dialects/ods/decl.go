// Package ods declares ops as data, in the manner of MLIR's Operation
// Definition Specification. A dialect lists one OpDecl per op in its own
// defs package:
//
//	{Name: "add", Summary: "element-wise addition", Class: "BinaryBroadcast",
//	 Traits: ir.Pure | ir.Commutative | ir.Elementwise,
//	 Operands: []ods.OperandDecl{{Name: "lhs", Constraint: ods.NumericTensor}, ...},
//	 Example: "%z = graph.add %x, %y : tensor<4x8xf32>"}
//
// and odsgen turns the list into Go (op-name constants, typed wrappers,
// accessors, builders and registration with a verifier) and into Markdown
// reference docs. Whatever a declaration cannot say, such as how a
// broadcast shape is computed, lives in a hand-written function of the
// dialect package that the declaration names through its Class.
//
// The package also holds the run-time checks the generated verifiers call
// (check.go), so every dialect words its diagnostics the same way.
package ods

import "github.com/tensorforge/tensorforge/ir"

// DialectDecl is a dialect: a name prefix, docs, op classes and ops.
type DialectDecl struct {
	// Name is the prefix of every op name: "graph" for `graph.add`.
	Name string
	// Summary is one line; Description is Markdown for the docs page.
	Summary     string
	Description string
	// Classes are the hand-written rule sets the ops refer to.
	Classes []ClassDecl
	// Ops in documentation order.
	Ops []OpDecl
}

// ClassDecl names a hand-written rule set shared by several ops, such as
// "BinaryBroadcast" for every NumPy-broadcasting binary op.
//
// When Infers is set, the dialect package defines
//
//	func infer<Name>(op *ir.Operation) ([]ir.Type, error)
//
// which derives the result types from the operands and attributes (and
// reports what is wrong with them); builders use it and the verifier checks
// the results against it. Otherwise the package defines
//
//	func verify<Name>(op *ir.Operation) error
//
// and builders take the result types as parameters.
type ClassDecl struct {
	Name   string
	Infers bool
	// Doc states the rules, for the reference docs.
	Doc string
}

// OpDecl declares one op.
type OpDecl struct {
	// Name without the dialect prefix: "add", "reduce_sum".
	Name string
	// GoName overrides the Go identifier derived from Name ("RMSNorm"
	// rather than "Rmsnorm"); the wrapper type is GoName+"Op".
	GoName string
	// Summary is one line (no final period); Description is Markdown.
	Summary     string
	Description string
	// Example is the op's textual form, shown in docs and doc comments.
	Example string
	// Class names a ClassDecl of the dialect.
	Class    string
	Traits   ir.Trait
	Operands []OperandDecl
	Results  []ResultDecl
	Attrs    []AttrDecl
	Regions  []RegionDecl
	// OtherAttrs allows attributes beyond the declared ones (graph.fused
	// records its decisions in them).
	OtherAttrs bool
	// CustomBuilder means the dialect package writes the op's builder by
	// hand (ops with regions, whose bodies a declaration cannot describe).
	CustomBuilder bool
}

// OperandDecl is one operand or operand group.
//
// At most one operand may be Variadic (zero or more values) and it must be
// the last. Optional operands form one trailing group that is either
// entirely present or entirely absent, so no segment sizes are needed;
// the group's last operands may be Omissible as well: present or not when
// the ones before them are (graph.dequantize's per-channel zero points,
// which default to 0).
type OperandDecl struct {
	Name       string
	Constraint Constraint
	Variadic   bool
	Optional   bool
	// Omissible marks an Optional operand that may be left out while the
	// earlier operands of the optional group are given. Every later
	// operand must be Omissible too, so the operands present are still a
	// prefix of the declared ones.
	Omissible bool
	Doc       string
}

// ResultDecl is one result or, if Variadic (then the only one), all of them.
type ResultDecl struct {
	Name       string
	Constraint Constraint
	Variadic   bool
	Doc        string
}

// RegionDecl is one region.
type RegionDecl struct {
	Name string
	Doc  string
}

// AttrKind is the kind of value an attribute holds.
type AttrKind uint8

const (
	// IntKind is an integer: `axis = -1` (ir.IntAttr), Go type int64.
	IntKind AttrKind = iota + 1
	// FloatKind is a number: `eps = 1.0e-05 : f32` (ir.FloatAttr, or an
	// ir.IntAttr such as `min = 0`), Go type float64.
	FloatKind
	// BoolKind is `true` or `false` (ir.BoolAttr), Go type bool.
	BoolKind
	// StringKind is `"tanh"` (ir.StringAttr), Go type string.
	StringKind
	// TypeKind is a type: `dtype = ui8` (ir.TypeAttr), Go type ir.Type.
	TypeKind
	// IntArrayKind is `[1, 0]` (ir.ArrayAttr of ir.IntAttr), Go type []int64.
	IntArrayKind
	// DenseKind is `dense<[1.0, 2.0]> : tensor<2xf32>` (ir.DenseAttr).
	DenseKind
)

var attrKindInfo = [...]struct {
	name   string // in docs
	noun   string // in diagnostics: "must be <noun>"
	goType string
}{
	IntKind:      {"integer", "an integer", "int64"},
	FloatKind:    {"float", "a number", "float64"},
	BoolKind:     {"bool", "true or false", "bool"},
	StringKind:   {"string", "a string", "string"},
	TypeKind:     {"type", "a type", "ir.Type"},
	IntArrayKind: {"integer array", "an array of integers", "[]int64"},
	DenseKind:    {"dense elements", "a dense elements attribute", "ir.DenseAttr"},
}

func (k AttrKind) valid() bool { return k >= IntKind && k <= DenseKind }

// String names the kind as the docs do: "integer array".
func (k AttrKind) String() string {
	if !k.valid() {
		return "invalid attribute kind"
	}
	return attrKindInfo[k].name
}

// GoType is the Go type accessors return: "[]int64".
func (k AttrKind) GoType() string {
	if !k.valid() {
		return ""
	}
	return attrKindInfo[k].goType
}

// AttrDecl declares one attribute.
//
// An attribute with a Default may be omitted and then reads as Default,
// which must have the kind's Go type (int64, float64, bool, string).
// An Optional attribute without a default may be omitted: its accessor
// returns nil when absent for a type or an integer array, and otherwise
// also says whether it is present. Any other attribute is required.
//
// Builders take required attributes and those with a default as
// parameters; Optional ones are set on the built op by those who need them.
type AttrDecl struct {
	Name     string
	Kind     AttrKind
	Default  any
	Optional bool
	// Enum lists the allowed values of a StringKind attribute.
	Enum []string
	Doc  string
}

// Required reports whether the attribute must be present.
func (a AttrDecl) Required() bool { return a.Default == nil && !a.Optional }
