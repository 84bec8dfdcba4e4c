package cpu

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"text/tabwriter"
	"time"
)

// transposeCase is a program over an N x N bf16 matrix that reads or
// stores through a transpose of the last axis, and the contiguous part of
// it (src with the transpose taken out), which a transpose of its own
// followed by that part computes as two kernels.
type transposeCase struct {
	name, key string
	// src and rest are functions for N; traffic is the bytes a single
	// kernel moves, in units of N*N elements.
	src, rest func(n int) string
	traffic   int
}

var transposeCases = []transposeCase{
	{name: "silu(transpose(x) + z)", key: "ew", traffic: 3, src: func(n int) string {
		return strings.NewReplacer("T", fmt.Sprintf("tensor<%dx%dxbf16>", n, n)).Replace(`func.func @f(%x: T, %z: T) -> T {
  %t = graph.transpose %x {perm = [1, 0]} : (T) -> T
  %s = graph.add %t, %z : T
  %y = graph.silu %s : T
  return %y : T
}
`)
	}, rest: func(n int) string {
		return strings.NewReplacer("T", fmt.Sprintf("tensor<%dx%dxbf16>", n, n)).Replace(`func.func @f(%t: T, %z: T) -> T {
  %s = graph.add %t, %z : T
  %y = graph.silu %s : T
  return %y : T
}
`)
	}},
	{name: "softmax(transpose(x))", key: "softmax", traffic: 2, src: func(n int) string {
		return strings.NewReplacer("T", fmt.Sprintf("tensor<%dx%dxbf16>", n, n)).Replace(`func.func @f(%x: T) -> T {
  %t = graph.transpose %x {perm = [1, 0]} : (T) -> T
  %y = graph.softmax %t {axis = -1} : T
  return %y : T
}
`)
	}, rest: func(n int) string {
		return strings.NewReplacer("T", fmt.Sprintf("tensor<%dx%dxbf16>", n, n)).Replace(`func.func @f(%t: T) -> T {
  %y = graph.softmax %t {axis = -1} : T
  return %y : T
}
`)
	}},
}

// transposeSrc is a transpose alone, a kernel of its own that walks tiles.
func transposeSrc(n int) string {
	return strings.NewReplacer("T", fmt.Sprintf("tensor<%dx%dxbf16>", n, n)).Replace(`func.func @f(%x: T) -> T {
  %t = graph.transpose %x {perm = [1, 0]} : (T) -> T
  return %t : T
}
`)
}

// BenchmarkTransposeViews times, on N x N bf16 (TFC_BENCH_COLS, default
// 4096), each program of transposeCases compiled at -O2 (an element-wise
// chain reads the transposed operand in tiles by strided vector
// loads; a row kernel of rows over 256 leaves the transpose a kernel of
// its own) against a transpose alone plus the contiguous rest, and a
// copy of the same bytes, in alternating rounds (best of TFC_BENCH_RUNS,
// default 10):
//
//	go test ./bench/cpu -run XXX -bench TransposeViews -benchtime 1x
func BenchmarkTransposeViews(b *testing.B) {
	n := envInt("TFC_BENCH_COLS", 4096)
	runs := envInt("TFC_BENCH_RUNS", 10)
	type result struct {
		name             string
		bytes            int64
		o2, tr, rest, cp time.Duration
	}
	var results []result
	for i := 0; i < b.N; i++ {
		results = results[:0]
		trSrc := transposeSrc(n)
		tr := compileProgram(b, trSrc, pipelineO2)
		trIn := inputsOf(b, trSrc)
		for _, c := range transposeCases {
			src, rest := c.src(n), c.rest(n)
			o2, r := compileProgram(b, src, pipelineO2), compileProgram(b, rest, pipelineO2)
			cp := compileProgram(b, copySrc(n*c.traffic/2, n, "bf16"), pipelineO2)
			in, restIn, cpIn := inputsOf(b, src), inputsOf(b, rest), inputsOf(b, copySrc(n*c.traffic/2, n, "bf16"))
			res := result{name: c.name, bytes: int64(c.traffic) * int64(n) * int64(n) * 2}
			res.o2, res.tr, res.rest, res.cp = 1<<62, 1<<62, 1<<62, 1<<62
			for range runs {
				res.o2 = min(res.o2, best(b, o2, in, 3))
				res.tr = min(res.tr, best(b, tr, trIn, 3))
				res.rest = min(res.rest, best(b, r, restIn, 3))
				res.cp = min(res.cp, best(b, cp, cpIn, 3))
			}
			o2.Close()
			r.Close()
			cp.Close()
			results = append(results, res)
			b.ReportMetric((res.tr+res.rest).Seconds()/res.o2.Seconds(), "two/one_"+c.key)
		}
		tr.Close()
	}
	threads := os.Getenv("TF_NUM_THREADS")
	if threads == "" {
		threads = "all"
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\nReads through a transpose of the last axis, %dx%d bf16, on the CPU, best of %d alternating runs, threads: %s\n", n, n, runs, threads)
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "program\t-O2 ms\ttranspose ms\trest ms\ttranspose + rest / -O2\t-O2 GB/s\tcopy GB/s\t-O2/copy\t")
	for _, r := range results {
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%.2fx\t%.1f\t%.1f\t%.0f%%\t\n", r.name, ms(r.o2), ms(r.tr), ms(r.rest),
			(r.tr+r.rest).Seconds()/r.o2.Seconds(), gbps(r.bytes, r.o2), gbps(r.bytes, r.cp), 100*r.cp.Seconds()/r.o2.Seconds())
	}
	tw.Flush()
	fmt.Print(sb.String())
}
