package parser

import (
	"fmt"
	"strings"
	"testing"

	"github.com/alecthomas/participle/v2/lexer"
)

// elementwiseProgram generates a function of n element-wise graph ops on
// tensors, each using the two previous values, as a large model's
// unfused graph does.
func elementwiseProgram(n int) string {
	var sb strings.Builder
	const t = "tensor<1024x1024xf32>"
	fmt.Fprintf(&sb, "func.func @big(%%a: %s, %%b: %s) -> %s {\n", t, t, t)
	ops := []string{"graph.add", "graph.mul", "graph.sub", "graph.max"}
	unary := []string{"graph.exp", "graph.tanh", "graph.neg"}
	prev, cur := "a", "b"
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("v%d", i)
		if i%3 == 2 {
			fmt.Fprintf(&sb, "  %%%s = %s %%%s : %s\n", name, unary[i%len(unary)], cur, t)
		} else {
			fmt.Fprintf(&sb, "  %%%s = %s %%%s, %%%s : %s\n", name, ops[i%len(ops)], prev, cur, t)
		}
		prev, cur = cur, name
	}
	fmt.Fprintf(&sb, "  return %%%s : %s\n}\n", cur, t)
	return sb.String()
}

func benchmarkParse(b *testing.B, n int) {
	src := elementwiseProgram(n)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Parse("bench.tir", src); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

func BenchmarkParse(b *testing.B) {
	b.Run("10k", func(b *testing.B) { benchmarkParse(b, 10_000) })
	b.Run("100k", func(b *testing.B) { benchmarkParse(b, 100_000) })
}

// BenchmarkLex measures the scanner alone on the 100k-op program.
func BenchmarkLex(b *testing.B) {
	const n = 100_000
	src := elementwiseProgram(n)
	b.SetBytes(int64(len(src)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var s scanner
		s.init("bench.tir", src, 1)
		var t lexer.Token
		for s.next(&t); t.Type != tokEOF; s.next(&t) {
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}
