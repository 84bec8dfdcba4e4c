// Package cpu measures the CPU backend on the memory-bound chains fusion is
// for: RMSNorm -> SiLU -> Mul, residual add + RMSNorm, and softmax, in bf16
// and f32. In one run it compiles each program through tfc's pipeline and
// LLVM to native code three ways and times them on every core:
//
//   - fused: -O2, one row kernel per chain, in the default rounding (f32
//     between the fused ops) and with exact rounding (every op rounded to
//     its type, as op by op), and, in the default rounding, with the rows
//     that -O2 plans "cached" (re-read from the core's cache) kept
//     one-pass instead (column "fused one-pass"; "one-pass/fused time"
//     above 1 means cached is faster);
//   - unfused: -O0, one kernel per op, intermediates through memory;
//   - copy: a STREAM-style copy moving the same bytes (read + written) as
//     the fused kernel, compiled the same way (-O2, one copy kernel);
//   - hand C: the chain fused by hand in C (handc/handc.c: f32 between steps,
//     rows over the cores with OpenMP), built with gcc -O3 -march=native
//     -ffast-math -fopenmp and timed on inputs of the same shape.
//
// It prints the effective bandwidth of each (the bytes the chain must move
// at least, over the best time of the runs, as STREAM reports it: on a
// shared machine the best run is the one least disturbed) and the ratios
// fused / copy and -O0 time / -O2 time.
//
//	go test ./bench/cpu -run XXX -bench . -benchtime 1x -timeout 60m
//
// TFC_BENCH_ROWS and TFC_BENCH_COLS set the shape (default 4096x8192),
// TFC_BENCH_RUNS the timed runs of the fused and copy programs (default
// 10; the -O0 ones, which are far slower, get a third of them, at least
// 3), taken in alternating rounds of two so that each sees the same load
// of a shared machine, TF_NUM_THREADS the threads, TFC_BENCH_ONLY a comma list of the
// chains to run (default all). bench/cpu/run.sh runs it and keeps the
// table.
package cpu

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/emit/cpurt"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
	_ "github.com/tensorforge/tensorforge/lowering"
	"github.com/tensorforge/tensorforge/parser"
	"github.com/tensorforge/tensorforge/passes"
)

// The pipelines of -O2 and -O0 (tfc's pipelines.go).
const (
	pipelineO2 = "canonicalize,cse,legalize-numerics,decompose,fuse,canonicalize,cse,dce,lower-to-loops,sram-alloc"
	pipelineO0 = "legalize-numerics,decompose,lower-to-loops{horizontal=false},sram-alloc"
)

// chain is one benchmarked program.
type chain struct {
	name string
	// src is the function for R rows of C elements of type T.
	src func(r, c int, t string) string
	// traffic is the bytes a fused kernel moves, in units of R*C
	// elements (rms_silu_mul reads x and z and writes y: 3); the weight
	// (C elements) is added.
	traffic int
	weight  bool
}

var chains = []chain{
	{name: "rmsnorm->silu->mul", traffic: 3, weight: true, src: func(r, c int, t string) string {
		return fmt.Sprintf(`func.func @f(%%x: tensor<%[1]dx%[2]dx%[3]s>, %%w: tensor<%[2]dx%[3]s>, %%z: tensor<%[1]dx%[2]dx%[3]s>) -> tensor<%[1]dx%[2]dx%[3]s> {
  %%n = graph.rmsnorm %%x, %%w {eps = 1.0e-05 : f32} : (tensor<%[1]dx%[2]dx%[3]s>, tensor<%[2]dx%[3]s>) -> tensor<%[1]dx%[2]dx%[3]s>
  %%s = graph.silu %%n : tensor<%[1]dx%[2]dx%[3]s>
  %%y = graph.mul %%s, %%z : tensor<%[1]dx%[2]dx%[3]s>
  return %%y : tensor<%[1]dx%[2]dx%[3]s>
}
`, r, c, t)
	}},
	{name: "add+rmsnorm", traffic: 4, weight: true, src: func(r, c int, t string) string {
		return fmt.Sprintf(`func.func @f(%%x: tensor<%[1]dx%[2]dx%[3]s>, %%r: tensor<%[1]dx%[2]dx%[3]s>, %%w: tensor<%[2]dx%[3]s>) -> (tensor<%[1]dx%[2]dx%[3]s>, tensor<%[1]dx%[2]dx%[3]s>) {
  %%h = graph.add %%x, %%r : tensor<%[1]dx%[2]dx%[3]s>
  %%n = graph.rmsnorm %%h, %%w {eps = 1.0e-05 : f32} : (tensor<%[1]dx%[2]dx%[3]s>, tensor<%[2]dx%[3]s>) -> tensor<%[1]dx%[2]dx%[3]s>
  return %%h, %%n : tensor<%[1]dx%[2]dx%[3]s>, tensor<%[1]dx%[2]dx%[3]s>
}
`, r, c, t)
	}},
	{name: "softmax", traffic: 2, src: func(r, c int, t string) string {
		return fmt.Sprintf(`func.func @f(%%x: tensor<%[1]dx%[2]dx%[3]s>) -> tensor<%[1]dx%[2]dx%[3]s> {
  %%y = graph.softmax %%x {axis = -1} : tensor<%[1]dx%[2]dx%[3]s>
  return %%y : tensor<%[1]dx%[2]dx%[3]s>
}
`, r, c, t)
	}},
}

// copySrc copies R rows of K elements: a kernel that reads and writes 2*R*K.
func copySrc(r, k int, t string) string {
	return fmt.Sprintf("func.func @f(%%x: tensor<%[1]dx%[2]dx%[3]s>) -> tensor<%[1]dx%[2]dx%[3]s> {\n  return %%x : tensor<%[1]dx%[2]dx%[3]s>\n}\n", r, k, t)
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// compileProgram compiles src with pipeline to a native program of @f.
func compileProgram(b *testing.B, src, pipeline string) *cpurt.Program {
	b.Helper()
	return compileProgramMode(b, src, pipeline, false)
}

// compileOnePass compiles src at -O2 with every row kernel that fuse
// plans "cached" kept "one-pass" (the schedule before cached rows): fuse,
// then the schedule attribute rewritten, then the rest of the pipeline.
func compileOnePass(b *testing.B, src string) *cpurt.Program {
	b.Helper()
	m, err := parser.Parse("bench.tir", src)
	if err != nil {
		b.Fatal(err)
	}
	t, _ := target.Lookup("cpu")
	run := func(pipeline string) {
		p, err := ir.ParsePipeline(pipeline)
		if err != nil {
			b.Fatal(err)
		}
		pm := &ir.PassManager{Pipeline: p, VerifyEach: true}
		if err := pm.Run(m, &ir.PassContext{Diags: &ir.Diagnostics{}, Target: t}); err != nil {
			b.Fatal(err)
		}
	}
	run("canonicalize,cse,legalize-numerics,decompose,fuse,canonicalize,cse,dce")
	m.Walk(func(op *ir.Operation) bool {
		if s, ok := op.Attr("schedule").(ir.StringAttr); ok && s == passes.ScheduleCached {
			op.SetAttr("schedule", ir.StringAttr(passes.ScheduleOnePass))
		}
		return true
	})
	run("lower-to-loops,sram-alloc")
	prog, err := cpurt.Compile(m, "f")
	if err != nil {
		b.Fatal(err)
	}
	return prog
}

// compileProgramMode is compileProgram, with exact rounding or not.
func compileProgramMode(b *testing.B, src, pipeline string, exact bool) *cpurt.Program {
	b.Helper()
	m, err := parser.Parse("bench.tir", src)
	if err != nil {
		b.Fatal(err)
	}
	if err := ir.Verify(m.Operation); err != nil {
		b.Fatal(err)
	}
	t, _ := target.Lookup("cpu")
	p, err := ir.ParsePipeline(pipeline)
	if err != nil {
		b.Fatal(err)
	}
	pm := &ir.PassManager{Pipeline: p, VerifyEach: true}
	if err := pm.Run(m, &ir.PassContext{Diags: &ir.Diagnostics{}, Target: t, ExactRounding: exact}); err != nil {
		b.Fatal(err)
	}
	prog, err := cpurt.Compile(m, "f")
	if err != nil {
		b.Fatal(err)
	}
	return prog
}

// best times prog on inputs and returns its fastest run.
func best(b *testing.B, prog *cpurt.Program, inputs []*eval.Tensor, runs int) time.Duration {
	b.Helper()
	times, _, err := prog.Time(inputs, runs)
	if err != nil {
		b.Fatal(err)
	}
	if len(times) == 0 {
		b.Fatal("no timings")
	}
	return slices.Min(times)
}

// inputsOf makes random inputs for @f of src.
func inputsOf(b *testing.B, src string) []*eval.Tensor {
	b.Helper()
	m, err := parser.Parse("bench.tir", src)
	if err != nil {
		b.Fatal(err)
	}
	in, err := eval.RandomInputs(m.Funcs()[0], 1, 1, 1)
	if err != nil {
		b.Fatal(err)
	}
	return in
}

type row struct {
	chain, dtype                          string
	bytes, copyBytes                      int64
	fused, exact, unfused, copyDur, handC time.Duration
	// onePass is the fused kernel with its rows kept in a buffer, where
	// -O2 plans them cached (re-read from the core's cache)
	onePass time.Duration
}

// buildHandC compiles handc/handc.c into dir.
func buildHandC(b *testing.B, dir string) string {
	b.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		b.Fatal("gcc is needed for the hand-written C of each chain: apt-get install gcc")
	}
	bin := filepath.Join(dir, "handc")
	out, err := exec.Command(gcc, "-O3", "-march=native", "-ffast-math", "-fopenmp", filepath.Join("handc", "handc.c"), "-o", bin, "-lm").CombinedOutput()
	if err != nil {
		b.Fatalf("building handc.c: %v\n%s", err, out)
	}
	return bin
}

// handC runs the hand-written chain and returns its best time of runs.
func handC(b *testing.B, bin, chain, dtype string, rows, cols, runs int) time.Duration {
	b.Helper()
	cmd := exec.Command(bin, chain, dtype, strconv.Itoa(rows), strconv.Itoa(cols), strconv.Itoa(runs))
	if th := os.Getenv("TF_NUM_THREADS"); th != "" {
		cmd.Env = append(os.Environ(), "OMP_NUM_THREADS="+th)
	}
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("handc %s %s: %v", chain, dtype, err)
	}
	var sec, sum float64
	if _, err := fmt.Sscan(string(out), &sec, &sum); err != nil {
		b.Fatalf("handc %s %s printed %q", chain, dtype, out)
	}
	return time.Duration(sec * float64(time.Second))
}

func gbps(bytes int64, d time.Duration) float64 { return float64(bytes) / d.Seconds() / 1e9 }

// BenchmarkFusedKernels prints the table of the package comment.
func BenchmarkFusedKernels(b *testing.B) {
	rows, cols := envInt("TFC_BENCH_ROWS", 4096), envInt("TFC_BENCH_COLS", 8192)
	runs := envInt("TFC_BENCH_RUNS", 10)
	var results []row
	hand := buildHandC(b, b.TempDir())
	for i := 0; i < b.N; i++ {
		results = results[:0]
		for _, c := range chains {
			if only := os.Getenv("TFC_BENCH_ONLY"); only != "" && !strings.Contains(only, c.name) {
				continue
			}
			for _, dtype := range []string{"bf16", "f32"} {
				size := int64(2)
				if dtype == "f32" {
					size = 4
				}
				src := c.src(rows, cols, dtype)
				in := inputsOf(b, src)
				r := row{chain: c.name, dtype: dtype, bytes: int64(c.traffic) * int64(rows) * int64(cols) * size}
				if c.weight {
					r.bytes += int64(cols) * size
				}
				// the copy moves traffic/2 elements per row each way
				k := c.traffic * cols / 2
				csrc := copySrc(rows, k, dtype)
				cin := inputsOf(b, csrc)
				fused := compileProgram(b, src, pipelineO2)
				exact := compileProgramMode(b, src, pipelineO2, true)
				onePass := compileOnePass(b, src)
				unfused := compileProgram(b, src, pipelineO0)
				cp := compileProgram(b, csrc, pipelineO2)
				// rounds of two runs each, alternating, so that the three
				// see the same load of a shared machine
				r.fused, r.exact, r.unfused, r.copyDur, r.handC = time.Duration(1<<62), time.Duration(1<<62), time.Duration(1<<62), time.Duration(1<<62), time.Duration(1<<62)
				r.onePass = time.Duration(1 << 62)
				for round := 0; round < (runs+1)/2; round++ {
					r.fused = min(r.fused, best(b, fused, in, 2))
					r.exact = min(r.exact, best(b, exact, in, 2))
					r.onePass = min(r.onePass, best(b, onePass, in, 2))
					r.handC = min(r.handC, handC(b, hand, c.name, dtype, rows, cols, 2))
					r.copyDur = min(r.copyDur, best(b, cp, cin, 2))
					if round < max(3, runs/3) {
						r.unfused = min(r.unfused, best(b, unfused, in, 1))
					}
				}
				fused.Close()
				exact.Close()
				onePass.Close()
				unfused.Close()
				cp.Close()
				r.copyBytes = 2 * int64(rows) * int64(k) * size
				results = append(results, r)
				b.ReportMetric(gbps(r.bytes, r.fused), strings.ReplaceAll(c.name, ">", "")+"_"+dtype+"_GB/s")
			}
		}
	}
	threads := os.Getenv("TF_NUM_THREADS")
	if threads == "" {
		threads = "all"
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\nCPU backend, %dx%d, best of %d runs (-O0: %d), threads: %s\n", rows, cols, runs, max(3, runs/3), threads)
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "chain\tdtype\tMB moved\tfused -O2 GB/s\tfused exact-rounding GB/s\tfused one-pass GB/s\thand C GB/s\tunfused -O0 GB/s\tcopy GB/s\tfused/copy\texact/copy\thand C/fused time\tone-pass/fused time\t-O0/-O2 time\t")
	for _, r := range results {
		fused, copied := gbps(r.bytes, r.fused), gbps(r.copyBytes, r.copyDur)
		exact := gbps(r.bytes, r.exact)
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.0f%%\t%.0f%%\t%.2fx\t%.2fx\t%.2fx\t\n", r.chain, r.dtype, float64(r.bytes)/1e6,
			fused, exact, gbps(r.bytes, r.onePass), gbps(r.bytes, r.handC), gbps(r.bytes, r.unfused), copied, 100*fused/copied, 100*exact/copied,
			r.handC.Seconds()/r.fused.Seconds(), r.onePass.Seconds()/r.fused.Seconds(), r.unfused.Seconds()/r.fused.Seconds())
	}
	tw.Flush()
	fmt.Print(sb.String())
}
