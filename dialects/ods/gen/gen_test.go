package gen

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/dialects/ods"
	"github.com/tensorforge/tensorforge/ir"
)

// toy declares one op of every shape the generator handles.
var toy = ods.DialectDecl{
	Name:    "toy",
	Summary: "a dialect for testing the generator",
	Classes: []ods.ClassDecl{
		{Name: "Same", Infers: true, Doc: "The result has the operand's type."},
		{Name: "Free", Doc: "Anything goes."},
	},
	Ops: []ods.OpDecl{
		{
			Name: "scale", Summary: "scales", Example: "%y = toy.scale %x : tensor<4xf32>", Class: "Same",
			Traits:   ir.Pure | ir.Elementwise,
			Operands: []ods.OperandDecl{{Name: "input", Constraint: ods.FloatTensor, Doc: "what to scale"}},
			Results:  []ods.ResultDecl{{Name: "output", Constraint: ods.FloatTensor}},
			Attrs: []ods.AttrDecl{
				{Name: "factor", Kind: ods.FloatKind, Default: 2.0, Doc: "the | factor"},
				{Name: "mode", Kind: ods.StringKind, Default: "fast", Enum: []string{"fast", "exact"}},
				{Name: "axes", Kind: ods.IntArrayKind},
				{Name: "count", Kind: ods.IntKind, Default: int64(-1)},
				{Name: "flag", Kind: ods.BoolKind, Default: false},
				{Name: "dtype", Kind: ods.TypeKind, Optional: true},
			},
		},
		{
			Name: "pack", Summary: "packs", Example: "%y = toy.pack %a, %b : tensor<4xf32>", Class: "Free",
			Operands: []ods.OperandDecl{
				{Name: "first", Constraint: ods.AnyTensor},
				{Name: "rest", Constraint: ods.AnyTensor, Variadic: true},
			},
			Results: []ods.ResultDecl{{Name: "packed", Constraint: ods.AnyTensor}},
			Attrs:   []ods.AttrDecl{{Name: "kind", Kind: ods.TypeKind}, {Name: "init", Kind: ods.DenseKind}},
		},
		{
			Name: "maybe", Summary: "optional operands", Example: "%y = toy.maybe %a : tensor<4xf32>", Class: "Free",
			Operands: []ods.OperandDecl{
				{Name: "input", Constraint: ods.AnyTensor},
				{Name: "lo", Constraint: ods.AnyTensor, Optional: true},
				{Name: "hi", Constraint: ods.AnyTensor, Optional: true},
			},
			Results: []ods.ResultDecl{{Name: "outs", Constraint: ods.AnyTensor, Variadic: true}},
		},
		{
			Name: "region", Summary: "has a body", Example: "toy.region {\n  toy.end\n}", Class: "Free",
			Regions: []ods.RegionDecl{{Name: "body", Doc: "one block"}}, CustomBuilder: true, OtherAttrs: true,
		},
		{
			Name: "end", Summary: "ends a body", Example: "toy.end", Class: "Free", Traits: ir.Terminator,
			Operands: []ods.OperandDecl{{Name: "values", Constraint: ods.AnyTensor, Variadic: true}},
		},
	},
}

// stubs are the hand-written functions the toy classes name.
const stubs = `package toy

import "github.com/tensorforge/tensorforge/ir"

func inferSame(op *ir.Operation) ([]ir.Type, error) { return []ir.Type{op.Operand(0).Type()}, nil }
func verifyFree(op *ir.Operation) error             { return nil }
`

// The generated Go type-checks against package ir and the stubs.
func TestGoFileCompiles(t *testing.T) {
	src, err := GoFile(&toy, "toy")
	require.NoError(t, err)
	text := string(src)
	require.True(t, strings.HasPrefix(text, "// "+Header+"\n"), "the header comes first")

	fset := token.NewFileSet()
	gen, err := parser.ParseFile(fset, "gen_ops.go", src, parser.ParseComments)
	require.NoError(t, err)
	stub, err := parser.ParseFile(fset, "stubs.go", stubs, 0)
	require.NoError(t, err)
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	pkg, err := conf.Check("toy", fset, []*ast.File{gen, stub}, nil)
	require.NoError(t, err)

	sig := func(name string) string {
		return types.ObjectString(pkg.Scope().Lookup(name), types.RelativeTo(pkg))
	}
	require.Equal(t, `const OpScale untyped string`, sig("OpScale"))
	require.Equal(t, "func BuildScale(b *github.com/tensorforge/tensorforge/ir.Builder, loc github.com/tensorforge/tensorforge/ir.Location, input *github.com/tensorforge/tensorforge/ir.Value, factor float64, mode string, axes []int64, count int64, flag bool) (ScaleOp, error)", sig("BuildScale"))
	require.Equal(t, "func BuildPack(b *github.com/tensorforge/tensorforge/ir.Builder, loc github.com/tensorforge/tensorforge/ir.Location, first *github.com/tensorforge/tensorforge/ir.Value, rest []*github.com/tensorforge/tensorforge/ir.Value, packedType github.com/tensorforge/tensorforge/ir.Type, kind github.com/tensorforge/tensorforge/ir.Type, init github.com/tensorforge/tensorforge/ir.DenseAttr) (PackOp, error)", sig("BuildPack"))
	require.Equal(t, "func BuildMaybe(b *github.com/tensorforge/tensorforge/ir.Builder, loc github.com/tensorforge/tensorforge/ir.Location, input *github.com/tensorforge/tensorforge/ir.Value, lo *github.com/tensorforge/tensorforge/ir.Value, hi *github.com/tensorforge/tensorforge/ir.Value, outsTypes []github.com/tensorforge/tensorforge/ir.Type) (MaybeOp, error)", sig("BuildMaybe"))
	require.Nil(t, pkg.Scope().Lookup("BuildRegion"), "ops with regions have hand-written builders")

	methods := func(typ string) []string {
		var names []string
		mset := types.NewMethodSet(pkg.Scope().Lookup(typ).Type())
		for i := 0; i < mset.Len(); i++ {
			if f := mset.At(i).Obj(); f.Pkg() == pkg {
				names = append(names, types.ObjectString(f, types.RelativeTo(pkg)))
			}
		}
		return names
	}
	require.ElementsMatch(t, []string{
		"func (ScaleOp).Axes() []int64", "func (ScaleOp).Count() int64", "func (ScaleOp).Dtype() github.com/tensorforge/tensorforge/ir.Type",
		"func (ScaleOp).Factor() float64", "func (ScaleOp).Flag() bool", "func (ScaleOp).Input() *github.com/tensorforge/tensorforge/ir.Value",
		"func (ScaleOp).Mode() string", "func (ScaleOp).Output() *github.com/tensorforge/tensorforge/ir.Value",
	}, methods("ScaleOp"))
	require.ElementsMatch(t, []string{
		"func (MaybeOp).Hi() *github.com/tensorforge/tensorforge/ir.Value", "func (MaybeOp).Input() *github.com/tensorforge/tensorforge/ir.Value",
		"func (MaybeOp).Lo() *github.com/tensorforge/tensorforge/ir.Value", "func (MaybeOp).Outs() []*github.com/tensorforge/tensorforge/ir.Value",
	}, methods("MaybeOp"))
	require.Contains(t, text, "\tif factor != 2 {\n")
	require.Contains(t, text, `if err := ods.CheckEnumAttr(op, "mode", "fast", "exact"); err != nil {`)
	require.Contains(t, text, "AnyAttrs: true,")
	require.Contains(t, text, "Traits:  ir.Pure | ir.Elementwise,")
}

func TestGeneratorIsDeterministic(t *testing.T) {
	a, err := GoFile(&toy, "toy")
	require.NoError(t, err)
	b, err := GoFile(&toy, "toy")
	require.NoError(t, err)
	require.Equal(t, string(a), string(b))
	c, err := Markdown(&toy)
	require.NoError(t, err)
	d, err := Markdown(&toy)
	require.NoError(t, err)
	require.Equal(t, string(c), string(d))
}

func TestMarkdown(t *testing.T) {
	doc, err := Markdown(&toy)
	require.NoError(t, err)
	text := string(doc)
	require.True(t, strings.HasPrefix(text, "<!-- "+Header+" -->\n\n# 'toy' Dialect\n"))
	for _, want := range []string{
		"### `toy.scale` (toy.ScaleOp)\n\n_scales_\n\nSyntax:\n\n```\n%y = toy.scale %x : tensor<4xf32>\n```\n",
		"Traits: `Pure`, `Elementwise`\n",
		"Verification: class [`Same`](#same), which infers the result type.\n",
		"| `factor` | float | `2.0` | the \\| factor |\n",
		"| `mode` | string: `\"fast\"`, `\"exact\"` | `\"fast\"` |  |\n",
		"| `axes` | integer array | required |  |\n",
		"| `dtype` | type | optional |  |\n",
		"| `input` | tensor of floating-point values: what to scale |\n",
		"| `rest` | variadic of tensor of any type values |\n",
		"| `lo` | optional tensor of any type values |\n",
		"| `outs` | variadic of tensor of any type values |\n",
		"| `body` | one block |\n",
		"Other attributes are allowed and kept.\n",
		"### `Same`\n\nThe result has the operand's type.\n",
	} {
		require.Contains(t, text, want)
	}
	require.True(t, strings.HasSuffix(text, "Anything goes.\n"))
}

func TestInvalidDeclarations(t *testing.T) {
	bad := toy
	bad.Ops = append([]ods.OpDecl(nil), toy.Ops...)
	bad.Ops[0].Class = "Missing"
	_, err := GoFile(&bad, "toy")
	require.ErrorContains(t, err, `refers to undeclared class "Missing"`)
	_, err = Markdown(&bad)
	require.Error(t, err)

	kw := toy
	kw.Ops = append([]ods.OpDecl(nil), toy.Ops...)
	kw.Ops[1].Operands = []ods.OperandDecl{{Name: "type", Constraint: ods.AnyTensor}}
	_, err = GoFile(&kw, "toy")
	require.ErrorContains(t, err, `builder parameter "type" is a Go keyword or used by the builder`)
}
