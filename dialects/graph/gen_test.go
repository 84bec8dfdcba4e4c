package graph

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/dialects/graph/defs"
	"github.com/tensorforge/tensorforge/dialects/ods"
	"github.com/tensorforge/tensorforge/dialects/ods/gen"
	"github.com/tensorforge/tensorforge/ir"
)

// The committed generated files are what odsgen makes of the declarations
// now; run `go generate ./dialects/graph` after changing them.
func TestGeneratedFilesUpToDate(t *testing.T) {
	src, err := gen.GoFile(&defs.Dialect, "graph")
	require.NoError(t, err)
	doc, err := gen.Markdown(&defs.Dialect)
	require.NoError(t, err)
	for path, want := range map[string][]byte{
		"gen_ops.go":                   src,
		"../../docs/dialects/graph.md": doc,
	} {
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		require.True(t, string(want) == string(got), "%s is stale: run `go generate ./dialects/graph`", path)
	}
}

// Every declared op is registered with its summary, traits and attributes.
func TestRegistered(t *testing.T) {
	require.Len(t, defs.Dialect.Ops, 58)
	for _, o := range defs.Dialect.Ops {
		d := ir.LookupOp(defs.Dialect.FullName(&o))
		require.NotNil(t, d, o.Name)
		require.Equal(t, o.Summary, d.Summary)
		require.Equal(t, o.Traits, d.Traits)
		require.Len(t, d.Attrs, len(o.Attrs))
		require.NotNil(t, d.Verify)
	}
	for name, traits := range map[string]ir.Trait{
		OpAdd: ir.Commutative | ir.Elementwise, OpMul: ir.Commutative, OpMax: ir.Commutative,
		OpMin: ir.Commutative, OpLogAddExp: ir.Commutative, OpLogAddExp2: ir.Commutative,
		OpReduceSum: ir.Reduction, OpReduceMean: ir.Reduction, OpConstant: ir.ConstantLike,
		OpYield: ir.Terminator, OpFused: ir.IsolatedFromAbove, OpSilu: ir.Elementwise,
		OpCmp: ir.Elementwise,
	} {
		d := ir.LookupOp(name)
		require.Equal(t, traits|ir.Pure, d.Traits&(traits|ir.Pure), name)
	}
	require.Zero(t, ir.LookupOp(OpSub).Traits&ir.Commutative)
	require.Zero(t, ir.LookupOp(OpSoftmax).Traits&ir.Elementwise)
}

// The hand-written rules of a class read the attributes of all its ops
// through one op's accessors (reduceAttrs, normAttrs, inferSoftmax), so
// the ops of those classes must declare them alike.
func TestClassesShareAttributes(t *testing.T) {
	for _, class := range []string{"Reduce", "Normalization", "Softmax"} {
		var ops []ods.OpDecl
		for _, o := range defs.Dialect.Ops {
			if o.Class == class {
				ops = append(ops, o)
			}
		}
		require.Greater(t, len(ops), 1, class)
		for _, o := range ops[1:] {
			require.Equal(t, ops[0].Attrs, o.Attrs, "%s declares other attributes than %s", o.Name, ops[0].Name)
		}
	}
}

func TestDeclarationsValid(t *testing.T) {
	require.NoError(t, defs.Dialect.Validate())
}
