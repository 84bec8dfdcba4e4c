package graph

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/ir"
)

var loc = ir.Location{File: "b.tir", Line: 1, Col: 1}

// named gives v a printer name and returns it.
func named(v *ir.Value, name string) *ir.Value {
	v.Name = name
	return v
}

// must unwraps what a builder returns; an error fails the test (as a panic
// with the builder's diagnostic).
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// The Llama MLP input chain, built with the builders, prints as users
// write it.
func TestBuildersPrint(t *testing.T) {
	tf := newTestFunc(tys("tensor<4x8xbf16>", "tensor<8xbf16>", "tensor<4x8xbf16>")...)
	args := tf.fn.Args()
	x, w, z := named(args[0], "x"), named(args[1], "w"), named(args[2], "z")
	b := tf.builder()
	n := must(BuildRMSNorm(b, loc, x, w, 1e-6, -1))
	s := must(BuildSilu(b, loc, named(n.Output(), "n")))
	y := must(BuildMul(b, loc, named(s.Output(), "s"), z))
	tf.returnValues(named(y.Output(), "y"))
	requireVerifies(t, tf)
	require.Equal(t, `module {
  func.func @f(%x: tensor<4x8xbf16>, %w: tensor<8xbf16>, %z: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
    %n = graph.rmsnorm %x, %w {eps = 1.0e-06} : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
    %s = graph.silu %n : tensor<4x8xbf16>
    %y = graph.mul %s, %z : tensor<4x8xbf16>
    return %y : tensor<4x8xbf16>
  }
}
`, ir.Print(tf.module.Operation, ir.PrintOptions{}))
}

// Every builder infers or takes its result type, writes only attributes
// that differ from their defaults, and produces an op that verifies.
func TestBuildersEachClass(t *testing.T) {
	tf := newTestFunc(tys("tensor<4x8xf32>", "tensor<8xf32>", "tensor<4x8xi1>", "tensor<4x8xui8>", "tensor<4x8xi32>")...)
	args := tf.fn.Args()
	x, v, c, q, acc := named(args[0], "x"), named(args[1], "v"), named(args[2], "c"), named(args[3], "q"), named(args[4], "acc")
	b := tf.builder()
	out := func(op interface{ Result(int) *ir.Value }, name string) *ir.Value { return named(op.Result(0), name) }

	out(must(BuildExp(b, loc, x)), "e")
	out(must(BuildGelu(b, loc, x, "none")), "g0")
	out(must(BuildGelu(b, loc, x, "tanh")), "g1")
	sum := out(must(BuildAdd(b, loc, x, v)), "sum")
	out(must(BuildCmp(b, loc, sum, v, "lt")), "lt")
	out(must(BuildSelect(b, loc, c, x, v)), "sel")
	out(must(BuildClamp(b, loc, x, 0, 6)), "cl")
	out(must(BuildCast(b, loc, x, ty("tensor<4x8xbf16>"))), "h")
	out(must(BuildReduceSum(b, loc, x, []int64{-1}, false)), "rs")
	out(must(BuildReduceMax(b, loc, x, []int64{0}, true)), "rm")
	out(must(BuildLayerNorm(b, loc, x, v, v, 1e-5, 1)), "ln")
	out(must(BuildSoftmax(b, loc, x, -1)), "sm")
	out(must(BuildLogSumExp(b, loc, x, -1, true)), "lse")
	out(must(BuildQuantize(b, loc, x, nil, nil, ty("tensor<4x8xui8>"), 0.5, 128, -1)), "qt")
	zp := out(must(BuildConstant(b, loc, dense("tensor<8xi32>", 0))), "zp")
	out(must(BuildQuantize(b, loc, x, v, zp, ty("tensor<4x8xi8>"), 1, 0, 1)), "qc")
	out(must(BuildDequantize(b, loc, q, nil, nil, ty("tensor<4x8xf32>"), 0.5, 128, -1)), "dq")
	out(must(BuildRequantize(b, loc, acc, nil, nil, nil, nil, ty("tensor<4x8xi8>"), 0.25, 0, 0.5, -3, -1)), "rq")
	out(must(BuildReshape(b, loc, x, ty("tensor<32xf32>"))), "r")
	out(must(BuildTranspose(b, loc, x, []int64{1, 0})), "tr")
	out(must(BuildBroadcastTo(b, loc, v, ty("tensor<2x8xf32>"))), "bc")
	out(must(BuildSlice(b, loc, x, []int64{1, 0}, []int64{2, 8})), "sl")
	out(must(BuildConcat(b, loc, []*ir.Value{x, x}, 0)), "cat")
	out(must(BuildMatMul(b, loc, x, x, true)), "mm")
	out(must(BuildConstant(b, loc, dense("tensor<2xf32>", 1, 2))), "k")
	requireVerifies(t, tf)
	require.Equal(t, `module {
  func.func @f(%x: tensor<4x8xf32>, %v: tensor<8xf32>, %c: tensor<4x8xi1>, %q: tensor<4x8xui8>, %acc: tensor<4x8xi32>) {
    %e = graph.exp %x : tensor<4x8xf32>
    %g0 = graph.gelu %x : tensor<4x8xf32>
    %g1 = graph.gelu %x {approximate = "tanh"} : tensor<4x8xf32>
    %sum = graph.add %x, %v : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %lt = graph.cmp %sum, %v {predicate = "lt"} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
    %sel = graph.select %c, %x, %v : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %cl = graph.clamp %x {max = 6.0, min = 0.0} : tensor<4x8xf32>
    %h = graph.cast %x : (tensor<4x8xf32>) -> tensor<4x8xbf16>
    %rs = graph.reduce_sum %x {axes = [-1]} : (tensor<4x8xf32>) -> tensor<4xf32>
    %rm = graph.reduce_max %x {axes = [0], keepdim = true} : (tensor<4x8xf32>) -> tensor<1x8xf32>
    %ln = graph.layernorm %x, %v, %v {axis = 1} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %sm = graph.softmax %x : tensor<4x8xf32>
    %lse = graph.logsumexp %x {keepdim = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
    %qt = graph.quantize %x {scale = 0.5, zero_point = 128} : (tensor<4x8xf32>) -> tensor<4x8xui8>
    %zp = graph.constant dense<0> : tensor<8xi32>
    %qc = graph.quantize %x, %v, %zp {axis = 1} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xi32>) -> tensor<4x8xi8>
    %dq = graph.dequantize %q {scale = 0.5, zero_point = 128} : (tensor<4x8xui8>) -> tensor<4x8xf32>
    %rq = graph.requantize %acc {in_scale = 0.25, scale = 0.5, zero_point = -3} : (tensor<4x8xi32>) -> tensor<4x8xi8>
    %r = graph.reshape %x : (tensor<4x8xf32>) -> tensor<32xf32>
    %tr = graph.transpose %x {perm = [1, 0]} : (tensor<4x8xf32>) -> tensor<8x4xf32>
    %bc = graph.broadcast_to %v : (tensor<8xf32>) -> tensor<2x8xf32>
    %sl = graph.slice %x {offsets = [1, 0], sizes = [2, 8]} : (tensor<4x8xf32>) -> tensor<2x8xf32>
    %cat = graph.concat %x, %x {axis = 0} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
    %mm = graph.matmul %x, %x {transpose_b = true} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
    %k = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
    return
  }
}
`, ir.Print(tf.module.Operation, ir.PrintOptions{}))
}

// A builder given invalid operands returns the verifier's diagnostic,
// located where the op would have been, and leaves nothing behind.
func TestBuilderErrors(t *testing.T) {
	tf := newTestFunc(tys("tensor<4x8xf32>", "tensor<3x8xf32>", "tensor<4xi32>")...)
	args := tf.fn.Args()
	b := tf.builder()
	for _, c := range []struct {
		build func() error
		want  string
	}{
		{func() error { _, err := BuildAdd(b, loc, args[0], args[1]); return err },
			"b.tir:1:1: error: 'graph.add' op operands of types 'tensor<4x8xf32>' and 'tensor<3x8xf32>' are not broadcast-compatible"},
		{func() error { _, err := BuildExp(b, loc, args[2]); return err },
			"b.tir:1:1: error: 'graph.exp' op operand #0 must be tensor of floating-point values, but got 'tensor<4xi32>'"},
		{func() error { _, err := BuildReduceSum(b, loc, args[0], []int64{1, -1}, false); return err },
			"b.tir:1:1: error: 'graph.reduce_sum' op axes 1 and -1 refer to the same dimension"},
		{func() error { _, err := BuildGelu(b, loc, args[0], "fast"); return err },
			`b.tir:1:1: error: 'graph.gelu' op attribute 'approximate' must be one of "none" or "tanh", but got "fast"`},
		// a result type the builder takes is checked after insertion
		{func() error { _, err := BuildCast(b, loc, args[0], ty("tensor<8x4xf16>")); return err },
			"b.tir:1:1: error: 'graph.cast' op requires the same shape for the operand and the result, but got 'tensor<4x8xf32>' and 'tensor<8x4xf16>'"},
		{func() error { _, err := BuildCast(b, loc, args[0], nil); return err },
			"b.tir:1:1: error: 'graph.cast' op result #0 must be tensor of any type values, but got '<null>'"},
		{func() error {
			_, err := BuildQuantize(b, loc, args[0], args[1], nil, ty("tensor<4x8xui8>"), 1, 0, -1)
			return err
		},
			"b.tir:1:1: error: 'graph.quantize' op operand #2 is null"},
		{func() error { _, err := BuildConstant(b, loc, ir.DenseAttr{}); return err },
			"b.tir:1:1: error: 'graph.constant' op requires attribute 'value'"},
	} {
		err := c.build()
		require.EqualError(t, err, c.want)
		var d *ir.Diagnostic
		require.True(t, errors.As(err, &d))
		require.Equal(t, loc, d.Loc)
	}
	require.Equal(t, 1, tf.fn.Body().Len(), "only the return is left")
	for _, a := range args {
		require.False(t, a.HasUses(), "failed builders drop their operand uses")
	}
}

// BuildFused makes the region with block arguments for the inputs and a
// graph.yield of what the body returns; the fused op prints and verifies.
func TestBuildFused(t *testing.T) {
	tf := newTestFunc(tys("tensor<4x8xf32>", "tensor<8xf32>")...)
	args := tf.fn.Args()
	x, w := named(args[0], "x"), named(args[1], "w")
	f, err := BuildFused(tf.builder(), loc, "row", []*ir.Value{x, w},
		func(bb *ir.Builder, in []*ir.Value) ([]*ir.Value, error) {
			n, err := BuildRMSNorm(bb, loc, named(in[0], "a"), named(in[1], "b"), 1e-5, -1)
			if err != nil {
				return nil, err
			}
			s, err := BuildSilu(bb, loc, named(n.Output(), "n"))
			if err != nil {
				return nil, err
			}
			m, err := BuildReduceMax(bb, loc, n.Output(), []int64{1}, false)
			if err != nil {
				return nil, err
			}
			return []*ir.Value{named(s.Output(), "s"), named(m.Output(), "m")}, nil
		})
	require.NoError(t, err)
	f.SetAttr("max_ops", i64(64))
	require.Equal(t, "row", f.Kind())
	require.Len(t, f.Outputs(), 2)
	require.Equal(t, []*ir.Value{x, w}, f.Inputs())
	named(f.Result(0), "r")
	tf.returnValues(f.Outputs()...)
	requireVerifies(t, tf)
	require.Equal(t, `module {
  func.func @f(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>) {
    %r:2 = graph.fused %x, %w {kind = "row", max_ops = 64} {
    ^bb0(%a: tensor<4x8xf32>, %b: tensor<8xf32>):
      %n = graph.rmsnorm %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
      %s = graph.silu %n : tensor<4x8xf32>
      %m = graph.reduce_max %n {axes = [1]} : (tensor<4x8xf32>) -> tensor<4xf32>
      graph.yield %s, %m : tensor<4x8xf32>, tensor<4xf32>
    } : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>)
    return %r#0, %r#1 : tensor<4x8xf32>, tensor<4xf32>
  }
}
`, ir.Print(tf.module.Operation, ir.PrintOptions{}))

	// a failing body leaves nothing behind
	boom := errors.New("boom")
	_, err = BuildFused(tf.builder(), loc, "elementwise", []*ir.Value{x},
		func(bb *ir.Builder, in []*ir.Value) ([]*ir.Value, error) {
			if _, err := BuildExp(bb, loc, in[0]); err != nil {
				return nil, err
			}
			return nil, boom
		})
	require.ErrorIs(t, err, boom)
	require.Equal(t, 2, tf.fn.Body().Len())
	require.Len(t, x.Uses(), 1)

	// and inputs that are not tensors
	_, err = BuildFused(tf.builder(), loc, "elementwise", []*ir.Value{nil},
		func(bb *ir.Builder, in []*ir.Value) ([]*ir.Value, error) { return in, nil })
	require.EqualError(t, err, "b.tir:1:1: error: 'graph.fused' op operand #0 is null")

	// so does a body that captures a value from outside
	_, err = BuildFused(tf.builder(), loc, "elementwise", nil,
		func(bb *ir.Builder, in []*ir.Value) ([]*ir.Value, error) {
			e, err := BuildExp(bb, loc, x)
			return []*ir.Value{e.Output()}, err
		})
	require.EqualError(t, err, "b.tir:1:1: error: 'graph.exp' op using value defined outside the region of 'graph.fused', which is isolated from above")
	require.Equal(t, 2, tf.fn.Body().Len())
	require.Len(t, x.Uses(), 1)
}
