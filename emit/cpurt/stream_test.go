package cpurt_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/emit/cpurt"
	llvmemit "github.com/tensorforge/tensorforge/emit/llvm"
	"github.com/tensorforge/tensorforge/parser"
)

// A result of 8 MiB or more that a kernel writes and never reads goes
// out with non-temporal stores and a fence (emit/llvm/stream.go), in a
// second body for aligned buffers; the residual sum of add + RMSNorm,
// which the kernel reads back, keeps ordinary stores, as do results of
// run-time or smaller size and those of a kernel bound by arithmetic. The
// streamed results are exact, on every thread count.
func TestStreamedResults(t *testing.T) {
	const src = `func.func @f(%x: tensor<1024x2048xf32>, %r: tensor<1024x2048xf32>, %w: tensor<2048xf32>) -> (tensor<1024x2048xf32>, tensor<1024x2048xf32>) {
  %h = graph.add %x, %r : tensor<1024x2048xf32>
  %n = graph.rmsnorm %h, %w {eps = 1.0e-05 : f32} : (tensor<1024x2048xf32>, tensor<2048xf32>) -> tensor<1024x2048xf32>
  return %h, %n : tensor<1024x2048xf32>, tensor<1024x2048xf32>
}
func.func @small(%x: tensor<64x2048xf32>) -> tensor<64x2048xf32> {
  %y = graph.neg %x : tensor<64x2048xf32>
  return %y : tensor<64x2048xf32>
}
func.func @dyn(%x: tensor<?x2048xf32>) -> tensor<?x2048xf32> {
  %y = graph.neg %x : tensor<?x2048xf32>
  return %y : tensor<?x2048xf32>
}
func.func @heavy(%x: tensor<1024x2048xf32>) -> tensor<1024x2048xf32> {
  %y = graph.exp %x : tensor<1024x2048xf32>
  return %y : tensor<1024x2048xf32>
}`
	m, err := compile(src, pipelines["O2"]+","+lowerTail())
	require.NoError(t, err)
	text, err := llvmemit.EmitText(m, llvmemit.Options{})
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(text, "!nontemporal"), "only n, of @f's kernel:\n%s", text)
	require.Equal(t, 1, strings.Count(text, "fence seq_cst"))
	require.Contains(t, text, "!0 = !{i32 1}")
	// in a second body whose buffers are 64-byte aligned, called when they are
	body := func(name string) string {
		f := text[strings.Index(text, "define void @"+name+"("):]
		return f[:strings.Index(f, "\n}\n")]
	}
	nt := body("f_k0.nt")
	require.Contains(t, nt, "float* align 64 %n")
	require.Contains(t, nt, "!nontemporal", "the store of n")
	require.Contains(t, nt, "fence seq_cst")
	require.NotContains(t, body("f_k0"), "!nontemporal")
	task := body("f_k0.task")
	require.Contains(t, task, "and i64")
	require.Contains(t, task, "call void @f_k0.nt(")
	require.Contains(t, task, "call void @f_k0(")
	require.NotContains(t, text, "@heavy_k0.nt", "exp on every element: bound by arithmetic")

	if _, err := cpurt.FindToolchain(); err != nil {
		t.Skip(err)
	}
	p, err := cpurt.Compile(m, "f")
	require.NoError(t, err)
	defer p.Close()
	g, err := parser.Parse("input.tir", src)
	require.NoError(t, err)
	fn, _ := g.Lookup("f")
	in, err := eval.RandomInputs(fn, 3, 1, 1)
	require.NoError(t, err)
	for _, threads := range []int{1, 2, 3} {
		p.Threads = threads
		outs, err := p.Run(in)
		require.NoError(t, err)
		x, r, w := in[0].Data, in[1].Data, in[2].Data
		for row := 0; row < 1024; row++ {
			ss := 0.0
			for c := 0; c < 2048; c++ {
				h := float64(float32(x[row*2048+c] + r[row*2048+c]))
				require.Equal(t, h, outs[0].Data[row*2048+c], "h[%d, %d]", row, c)
				ss += h * h
			}
			inv := 1 / math.Sqrt(ss/2048+1e-5)
			for c := 0; c < 2048; c += 97 {
				want := outs[0].Data[row*2048+c] * inv * w[c]
				require.InDelta(t, want, outs[1].Data[row*2048+c], 1e-5*math.Max(1, math.Abs(want)), "n[%d, %d], %d threads", row, c, threads)
			}
		}
	}
}
