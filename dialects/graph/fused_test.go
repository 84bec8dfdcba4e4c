package graph

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/ir"
)

// fusedCase builds `graph.fused` over the function's arguments with the
// given block argument types and result types, and a body that yields
// the values yield picks from the block arguments.
type fusedCase struct {
	name    string
	in      []string
	args    []string
	results []string
	attrs   ir.AttrDict
	yield   func(args []*ir.Value) []*ir.Value // nil: no graph.yield at all
	blocks  int                                // extra blocks
	want    []string
}

func yieldArgs(idx ...int) func([]*ir.Value) []*ir.Value {
	return func(args []*ir.Value) []*ir.Value {
		out := make([]*ir.Value, len(idx))
		for i, j := range idx {
			out[i] = args[j]
		}
		return out
	}
}

var kind = ir.Attrs("kind", ir.StringAttr("elementwise"))

var fusedCases = []fusedCase{
	{name: "valid", in: s(t4, t8), args: s(t4, t8), results: s(t8, t4), attrs: kind, yield: yieldArgs(1, 0)},
	{name: "other attributes", in: s(t4), args: s(t4), results: s(t4),
		attrs: ir.Attrs("kind", ir.StringAttr("elementwise"), "max_ops", i64(3)), yield: yieldArgs(0)},
	{name: "no kind", in: s(t4), args: s(t4), results: s(t4), yield: yieldArgs(0),
		want: []string{"'graph.fused' op requires attribute 'kind'"}},
	{name: "kind kind", in: s(t4), args: s(t4), results: s(t4), attrs: ir.Attrs("kind", i64(1)), yield: yieldArgs(0),
		want: []string{"'graph.fused' op attribute 'kind' must be a string, but got 1"}},
	{name: "argument count", in: s(t4, t8), args: s(t4), results: s(t4), attrs: kind, yield: yieldArgs(0),
		want: []string{"'graph.fused' op expects 2 body arguments (one per operand), but found 1"}},
	{name: "argument type", in: s(t4), args: s("tensor<4xf16>"), results: s("tensor<4xf16>"), attrs: kind, yield: yieldArgs(0),
		want: []string{"'graph.fused' op type of body argument #0 ('tensor<4xf16>') does not match operand #0 ('tensor<4xf32>')"}},
	{name: "yield count", in: s(t4), args: s(t4), results: s(t4, t4), attrs: kind, yield: yieldArgs(0),
		want: []string{"'graph.fused' op yields 1 values, but has 2 results"}},
	{name: "yield type", in: s(t4), args: s(t4), results: s("tensor<4xf16>"), attrs: kind, yield: yieldArgs(0),
		want: []string{"'graph.fused' op type of yielded value #0 ('tensor<4xf32>') does not match result #0 ('tensor<4xf16>')"}},
	{name: "no yield", in: s(t4), args: s(t4), results: s(t4), attrs: kind,
		want: []string{"'graph.fused' op expects the body to end with 'graph.yield'", "'func.return' op expects parent op 'func.func'"}},
	{name: "two blocks", in: s(t4), args: s(t4), results: s(t4), attrs: kind, yield: yieldArgs(0), blocks: 1,
		want: []string{"'graph.fused' op expects a body of one block, but found 2"}},
}

func TestVerifyFused(t *testing.T) {
	for _, c := range fusedCases {
		t.Run(c.name, func(t *testing.T) {
			tf := newTestFunc(tys(c.in...)...)
			op := tf.add(ir.NewOperation(OpFused, ir.Location{}, tf.fn.Args(), tys(c.results...), c.attrs, 1))
			entry := ir.NewBlock(tys(c.args...)...)
			op.Region(0).AppendBlock(entry)
			if c.yield != nil {
				entry.Append(ir.NewOperation(OpYield, ir.Location{}, c.yield(entry.Args), nil, nil, 0))
			} else {
				// a body that ends in another terminator
				entry.Append(ir.NewOperation(ir.ReturnOpName, ir.Location{}, nil, nil, nil, 0))
			}
			for range c.blocks {
				extra := ir.NewBlock()
				extra.Append(ir.NewOperation(OpYield, ir.Location{}, nil, nil, nil, 0))
				op.Region(0).AppendBlock(extra)
			}
			msgs := tf.verify()
			require.Equal(t, c.want, msgs)
		})
	}
}

// A body may only use its own arguments: the generic verifier enforces
// IsolatedFromAbove, which graph.fused declares.
func TestFusedIsolatedFromAbove(t *testing.T) {
	tf := newTestFunc(ty(t4))
	x := tf.fn.Args()[0]
	op := tf.add(ir.NewOperation(OpFused, ir.Location{}, nil, tys(t4), kind, 1))
	entry := ir.NewBlock()
	op.Region(0).AppendBlock(entry)
	entry.Append(ir.NewOperation(OpYield, ir.Location{}, []*ir.Value{x}, nil, nil, 0))
	require.True(t, op.HasTrait(ir.IsolatedFromAbove))
	require.Equal(t, []string{"'graph.yield' op using value defined outside the region of 'graph.fused', which is isolated from above"}, tf.verify())
}

var yieldOutsideFused = "'graph.yield' op expects parent op 'graph.fused'"

func TestVerifyYieldParent(t *testing.T) {
	tf := newTestFunc(ty(t4))
	tf.ret.Erase()
	tf.fn.Body().Append(ir.NewOperation(OpYield, ir.Location{}, tf.fn.Args(), nil, nil, 0))
	require.Equal(t, []string{yieldOutsideFused}, tf.verify())
}
