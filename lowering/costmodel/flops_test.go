package costmodel

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/parser"
)

// opsOfFunc parses a function and returns the ops of its body, without
// the return.
func opsOfFunc(t *testing.T, src string) []*ir.Operation {
	t.Helper()
	m, err := parser.Parse("flops.tir", src)
	require.NoError(t, err)
	require.NoError(t, ir.Verify(m.Operation))
	var ops []*ir.Operation
	for _, op := range m.Funcs()[0].Body().Ops() {
		if op.Name() != ir.ReturnOpName {
			ops = append(ops, op)
		}
	}
	return ops
}

func TestCountFLOPsByHand(t *testing.T) {
	tests := []struct {
		name  string
		body  string // one op over %a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<2x4x8xf32>, %h: tensor<4x8xbf16>
		flops int64
	}{
		{"add: one per element", "graph.add %a, %a : tensor<4x8xf32>", 32},
		{"broadcast add: one per result element", "graph.add %a, %v : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>", 32},
		{"exp, a transcendental, counts one", "graph.exp %a : tensor<4x8xf32>", 32},
		{"silu counts one", "graph.silu %a : tensor<4x8xf32>", 32},
		{"cmp", `graph.cmp %a, %a {predicate = "lt"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>`, 32},
		{"reduce_sum: one per input element", "graph.reduce_sum %a {axes = [1]} : (tensor<4x8xf32>) -> tensor<4xf32>", 32},
		{"reduce_max over the rows", "graph.reduce_max %a {axes = [0]} : (tensor<4x8xf32>) -> tensor<8xf32>", 32},
		// 2 * M * N * K = 2 * 4 * 16 * 8
		{"matmul", "graph.matmul %a, %b : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>", 1024},
		// a batch of 2 of the same
		{"batched matmul", "graph.matmul %c, %b : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>", 2048},
		{"cast is a conversion", "graph.cast %a : (tensor<4x8xf32>) -> tensor<4x8xbf16>", 0},
		{"transpose moves data", "graph.transpose %a {perm = [1, 0]} : (tensor<4x8xf32>) -> tensor<8x4xf32>", 0},
		{"constant", "graph.constant dense<1.0> : tensor<4x8xf32>", 0},
		// as decompose expands it: x*x (32), reduce_sum (32), / C per row (4),
		// + eps (4), rsqrt (4), x * r (32), * w (32): 4N + 3R
		{"rmsnorm in f32", "graph.rmsnorm %a, %v {eps = 1.0e-05 : f32} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>", 140},
		// the same with its casts, which count nothing
		{"rmsnorm in bf16", "graph.rmsnorm %h, %hv {eps = 1.0e-05 : f32} : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>", 140},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := `func.func @f(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<2x4x8xf32>, %v: tensor<8xf32>,
                %h: tensor<4x8xbf16>, %hv: tensor<8xbf16>) {
  %r = ` + tc.body + `
  return
}`
			ops := opsOfFunc(t, src)
			require.Len(t, ops, 1)
			n, err := CountFLOPs(ops[0], Options{})
			require.NoError(t, err)
			assert.Equal(t, tc.flops, n)
		})
	}
}

func TestCountFLOPsDynamicExtent(t *testing.T) {
	ops := opsOfFunc(t, `func.func @f(%a: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %y = graph.exp %a : tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}`)
	n, err := CountFLOPs(ops[0], Options{DynamicExtent: 5})
	require.NoError(t, err)
	assert.Equal(t, int64(40), n)
	n, err = CountFLOPs(ops[0], Options{})
	require.NoError(t, err)
	assert.Equal(t, int64(8), n, "a '?' counts as 1 unless told")
}

func TestCountFLOPsOfFused(t *testing.T) {
	ops := opsOfFunc(t, `func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = graph.fused %x {kind = "elementwise"} {
  ^bb0(%a: tensor<4x8xf32>):
    %one = graph.constant dense<1.0> : tensor<f32>
    %e = graph.exp %a : tensor<4x8xf32>
    %s = graph.add %e, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    graph.yield %s : tensor<4x8xf32>
  } : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}`)
	n, err := CountFLOPs(ops[0], Options{})
	require.NoError(t, err)
	assert.Equal(t, int64(64), n)
}

func TestCountFLOPsOverflow(t *testing.T) {
	ops := opsOfFunc(t, `func.func @f(%a: tensor<4194304x4194304xf32>, %b: tensor<4194304x4194304xf32>) -> tensor<4194304x4194304xf32> {
  %c = graph.matmul %a, %b : (tensor<4194304x4194304xf32>, tensor<4194304x4194304xf32>) -> tensor<4194304x4194304xf32>
  return %c : tensor<4194304x4194304xf32>
}`)
	_, err := CountFLOPs(ops[0], Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "flops.tir:2:3: error: 'graph.matmul' op the FLOP count overflows")
}
