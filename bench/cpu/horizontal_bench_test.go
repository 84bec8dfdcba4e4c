package cpu

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"text/tabwriter"
	"time"
)

// ropeSrc is q's and k's rotary embeddings of a Llama-3-8B layer for t
// tokens (32 and 8 heads of 128, bf16), as examples/rope.tir writes them.
func ropeSrc(t int) string {
	r := strings.NewReplacer("T", fmt.Sprint(t))
	return r.Replace(`func.func @f(%q: tensor<1x32xTx128xbf16>, %k: tensor<1x8xTx128xbf16>, %cos: tensor<1x1xTx128xbf16>, %sin: tensor<1x1xTx128xbf16>, %sign: tensor<128xbf16>) -> (tensor<1x32xTx128xbf16>, tensor<1x8xTx128xbf16>) {
  %qc = graph.mul %q, %cos : (tensor<1x32xTx128xbf16>, tensor<1x1xTx128xbf16>) -> tensor<1x32xTx128xbf16>
  %qr = graph.roll %q {shift = 64} : tensor<1x32xTx128xbf16>
  %qh = graph.mul %qr, %sign : (tensor<1x32xTx128xbf16>, tensor<128xbf16>) -> tensor<1x32xTx128xbf16>
  %qs = graph.mul %qh, %sin : (tensor<1x32xTx128xbf16>, tensor<1x1xTx128xbf16>) -> tensor<1x32xTx128xbf16>
  %qe = graph.add %qc, %qs : tensor<1x32xTx128xbf16>
  %kc = graph.mul %k, %cos : (tensor<1x8xTx128xbf16>, tensor<1x1xTx128xbf16>) -> tensor<1x8xTx128xbf16>
  %kr = graph.roll %k {shift = 64} : tensor<1x8xTx128xbf16>
  %kh = graph.mul %kr, %sign : (tensor<1x8xTx128xbf16>, tensor<128xbf16>) -> tensor<1x8xTx128xbf16>
  %ks = graph.mul %kh, %sin : (tensor<1x8xTx128xbf16>, tensor<1x1xTx128xbf16>) -> tensor<1x8xTx128xbf16>
  %ke = graph.add %kc, %ks : tensor<1x8xTx128xbf16>
  return %qe, %ke : tensor<1x32xTx128xbf16>, tensor<1x8xTx128xbf16>
}
`)
}

// BenchmarkHorizontal times q's and k's RoPE launched as one kernel of two
// parts (-O2) against the same two kernels launched one after the other
// (-O2 with lower-to-loops{horizontal=false}), in alternating rounds of
// one run each, for a decode step (1 and 32 tokens) and a prefill (4096):
//
//	go test ./bench/cpu -run XXX -bench Horizontal -benchtime 1x
//
// TFC_BENCH_RUNS sets the rounds (default 10; the time is the best).
func BenchmarkHorizontal(b *testing.B) {
	runs := envInt("TFC_BENCH_RUNS", 10)
	apartPipeline := strings.Replace(pipelineO2, "lower-to-loops", "lower-to-loops{horizontal=false}", 1)
	type result struct {
		tokens        int
		merged, apart time.Duration
	}
	var results []result
	for i := 0; i < b.N; i++ {
		results = results[:0]
		for _, t := range []int{1, 32, 4096} {
			src := ropeSrc(t)
			in := inputsOf(b, src)
			merged := compileProgram(b, src, pipelineO2)
			apart := compileProgram(b, src, apartPipeline)
			r := result{tokens: t, merged: time.Duration(1 << 62), apart: time.Duration(1 << 62)}
			for range runs {
				r.merged = min(r.merged, best(b, merged, in, 1))
				r.apart = min(r.apart, best(b, apart, in, 1))
			}
			merged.Close()
			apart.Close()
			results = append(results, r)
			b.ReportMetric(r.apart.Seconds()/r.merged.Seconds(), fmt.Sprintf("apart/merged_%dtok", t))
		}
	}
	threads := os.Getenv("TF_NUM_THREADS")
	if threads == "" {
		threads = "all"
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\nq's and k's RoPE (32 + 8 heads of 128, bf16) on the CPU, best of %d alternating runs, threads: %s\n", runs, threads)
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "tokens\tone kernel of two parts us\ttwo kernels us\ttwo / one\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%d\t%.1f\t%.1f\t%.2fx\t\n", r.tokens, float64(r.merged.Nanoseconds())/1e3, float64(r.apart.Nanoseconds())/1e3, r.apart.Seconds()/r.merged.Seconds())
	}
	tw.Flush()
	fmt.Print(sb.String())
}
