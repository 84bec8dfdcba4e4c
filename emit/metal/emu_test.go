package metal_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	geval "github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/dialects/loop"
	leval "github.com/tensorforge/tensorforge/dialects/loop/eval"
	"github.com/tensorforge/tensorforge/emit/metal"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
	"github.com/tensorforge/tensorforge/ir/target"
	_ "github.com/tensorforge/tensorforge/lowering"
	"github.com/tensorforge/tensorforge/parser"
	_ "github.com/tensorforge/tensorforge/passes"
	"github.com/tensorforge/tensorforge/passes/difftest"
)

// The differential tests compile programs for m3-max down to Metal, run
// the kernels on the emulation (emu/metal_emu.h) as a host program would
// run them from the launch description, and compare what they compute
// with two references, on random inputs and on extreme ones (±0, ±inf,
// NaN, ±88.73, ±1e30, subnormals, the range ends):
//
//   - the loop interpreter on the same lowered module: the kernels must
//     agree within emuULPs of the value or of the largest value of the
//     tensor. They compute every op as it does but sum a row in another
//     order (each thread's elements, then a tree over the threads) and
//     build sigmoid, silu, log1p and expm1 from several f32 steps;
//   - the graph interpreter on the program as written (after the
//     graph-level passes, which may change its meaning), within sumULPs.
//
// On extreme inputs, where a sum in another order may overflow or cancel
// differently, only the class of each value (NaN, +inf, -inf, finite) is
// compared, where the reference gives the same class in float32 and in
// float64.
//
// The examples are compiled at -O2 and -O0 (no fusion: many kernels and
// intermediates in the arena), shrunk so that a row has a few hundred
// elements; testdata/*.tir hold the other flagship workloads at -O2,
// among them rows that fill the 32 KB of threadgroup memory and rows too
// long for it (two-pass).

const (
	emuULPs = 4
	sumULPs = 8
	// maxTestThreads bounds the threads of a threadgroup in these tests.
	maxTestThreads = 128
)

// graphLevels are the graph-level parts of -O2 and -O0.
var graphLevels = map[string]string{
	"O2": "canonicalize,cse,legalize-numerics,decompose,fuse,canonicalize,cse,dce",
	"O0": "legalize-numerics,decompose",
}

// compileFor runs pipeline on src for m3-max.
func compileFor(name, src, pipeline string) (ir.Module, error) {
	m, err := parser.Parse(name, src)
	if err != nil {
		return ir.Module{}, err
	}
	if err := ir.Verify(m.Operation); err != nil {
		return ir.Module{}, err
	}
	tg, err := target.Lookup("m3-max")
	if err != nil {
		return ir.Module{}, err
	}
	p, err := ir.ParsePipeline(pipeline)
	if err != nil {
		return ir.Module{}, err
	}
	diags := &ir.Diagnostics{}
	pm := &ir.PassManager{Pipeline: p, VerifyEach: true}
	if err := pm.Run(m, &ir.PassContext{Diags: diags, Target: tg}); err != nil {
		return ir.Module{}, fmt.Errorf("%v %v", err, diags.List)
	}
	return m, nil
}

// shrinkExample makes an example's tensors small: rows of a few hundred
// elements and a few dozen rows. A vocabulary of 32000 becomes 9000, a row
// still beyond the 32 KiB of threadgroup memory (planned online).
func shrinkExample(src string) string {
	sizes := map[string]string{"67108864": "4000", "32768": "12", "32000": "9000", "28672": "200", "8192": "264", "4096": "24", "2048": "40"}
	return regexp.MustCompile(`[0-9]+`).ReplaceAllStringFunc(src, func(s string) string {
		if small, ok := sizes[s]; ok {
			return small
		}
		return s
	})
}

// emuProgram is one program at one level, translated.
type emuProgram struct {
	name    string // rms_silu_mul/O2
	src     string // the program, shrunk
	ns      string
	graph   ir.Module // the reference: after the graph-level passes
	lowered ir.Module
	prog    *metal.Program
}

// loadPrograms compiles the examples (at -O2 and -O0) and testdata.
func loadPrograms(t *testing.T) []*emuProgram {
	type source struct {
		name, text string
		levels     []string
	}
	var sources []source
	examples, err := filepath.Glob("../../examples/*.tir")
	require.NoError(t, err)
	require.NotEmpty(t, examples)
	for _, f := range examples {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		sources = append(sources, source{strings.TrimSuffix(filepath.Base(f), ".tir"), shrinkExample(string(data)), []string{"O2", "O0"}})
	}
	extra, err := filepath.Glob("testdata/*.tir")
	require.NoError(t, err)
	for _, f := range extra {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		sources = append(sources, source{strings.TrimSuffix(filepath.Base(f), ".tir"), string(data), []string{"O2"}})
	}
	var out []*emuProgram
	for _, s := range sources {
		for _, level := range s.levels {
			name := s.name + "/" + level
			graph, err := compileFor(s.name+".tir", s.text, graphLevels[level])
			require.NoError(t, err, name)
			lowered, err := compileFor(s.name+".tir", s.text, graphLevels[level]+",lower-to-loops,sram-alloc")
			require.NoError(t, err, name)
			prog, err := metal.Emit(lowered, metal.Options{Source: s.name + ".tir"})
			require.NoError(t, err, name)
			out = append(out, &emuProgram{name: name, src: s.text, ns: fmt.Sprintf("p%d_%s_%s", len(out), s.name, level),
				graph: graph, lowered: lowered, prog: prog})
		}
	}
	return out
}

// harness is the program running every kernel of the tests, built once.
var harness struct {
	once  sync.Once
	bin   string
	dir   string
	progs []*emuProgram
	conv  *emuProgram
	// rounding holds the rounding chains, each in both modes
	rounding [][2]*emuProgram
	err      error
}

// sharedHarness compiles the examples, testdata, the conversions program
// and the rounding chains, and builds one harness running all their
// kernels and those of testdata/misuse.metal.
func sharedHarness(t *testing.T) (string, []*emuProgram, *emuProgram) {
	t.Helper()
	requireCompiler(t)
	harness.once.Do(func() {
		var ok bool
		defer func() {
			if !ok && harness.err == nil {
				harness.err = fmt.Errorf("building the harness failed (see the first test that built it)")
			}
		}()
		progs := loadPrograms(t)
		conv := conversionsProgram(t)
		rounding := roundingPrograms(t)
		all := append(progs, conv)
		for _, r := range rounding {
			all = append(all, r[0], r[1])
		}
		units := []unit{misuseUnit(t)}
		for _, p := range all {
			units = append(units, unit{ns: p.ns, file: p.ns + ".metal", text: p.prog.Metal(), kernels: p.prog.Kernels})
		}
		dir, err := os.MkdirTemp("", "tfc-metal-emu-")
		require.NoError(t, err)
		harness.dir = dir
		harness.bin = buildHarness(t, dir, units, 3)
		harness.progs, harness.conv, harness.rounding = progs, conv, rounding
		ok = true
	})
	require.NoError(t, harness.err)
	return harness.bin, harness.progs, harness.conv
}

// roundingModes are the lowerings of the two rounding modes: the default
// (f32 between fused ops) and exact rounding.
var roundingModes = [2]string{"lower-to-loops", "lower-to-loops{exact-rounding=true}"}

// roundingPrograms compiles every rounding chain (difftest.RoundingChains)
// at -O2 in both modes.
func roundingPrograms(t *testing.T) [][2]*emuProgram {
	chains, err := difftest.RoundingChains("../../examples")
	require.NoError(t, err)
	var out [][2]*emuProgram
	for i, c := range chains {
		var modes [2]*emuProgram
		for mode, lower := range roundingModes {
			name := fmt.Sprintf("%s %s mode %d", c.Name, c.Dtype, mode)
			lowered, err := compileFor(c.Name+".tir", c.Src, graphLevels["O2"]+","+lower+",sram-alloc")
			require.NoError(t, err, name)
			prog, err := metal.Emit(lowered, metal.Options{Source: c.Name + ".tir"})
			require.NoError(t, err, name)
			modes[mode] = &emuProgram{name: name, src: c.Src, ns: fmt.Sprintf("r%d_%s_%s_m%d", i, c.Name, c.Dtype, mode),
				lowered: lowered, prog: prog}
		}
		out = append(out, modes)
	}
	return out
}

// TestEmulatedRoundingModes holds the Metal kernels, run on the
// emulation, to the float64 bounds of both rounding modes
// (difftest.RoundingError), as lowering's TestRoundingModes holds the
// loop interpreter and the PTX simulator and the tt emulation are held:
// every rounding chain in bf16 and f16, compiled with -O2 in the default
// mode and with exact rounding, on the chains' random and extreme inputs
// (RoundingChain.Cases). The default mode is within
// difftest.DefaultRoundingBound, exact rounding within the chain's
// ExactBound.
func TestEmulatedRoundingModes(t *testing.T) {
	bin, _, _ := sharedHarness(t)
	chains, err := difftest.RoundingChains("../../examples")
	require.NoError(t, err)
	require.Len(t, harness.rounding, len(chains))
	worst := make([][2]float64, len(chains))
	t.Run("chains", func(t *testing.T) {
		for ci, c := range chains {
			t.Run(c.Name+"/"+c.Dtype, func(t *testing.T) {
				t.Parallel()
				cases, err := c.Cases()
				require.NoError(t, err)
				for mode, p := range harness.rounding[ci] {
					for _, k := range cases {
						what := fmt.Sprintf("%s @%s, input set %d", p.name, k.Func, k.Set)
						desc := p.prog.Description(k.Func+".metal", k.Func)
						require.Len(t, desc.Functions, 1, what)
						var shapes [][]int64
						for _, r := range k.Ref {
							shapes = append(shapes, r.Shape)
						}
						got, err := runFunction(bin, t.TempDir(), p.ns, desc, desc.Functions[0], clone(k.Inputs), shapes,
							runOptions{threads: func(n int64) int64 { return min(n, maxTestThreads) }})
						require.NoError(t, err, what)
						require.Len(t, got, len(k.Ref), what)
						for r := range k.Ref {
							e, _, bad := difftest.RoundingError(k.Ref[r], got[r])
							require.Empty(t, bad, "%s, result %d", what, r)
							worst[ci][mode] = max(worst[ci][mode], e)
						}
					}
				}
				assert.LessOrEqual(t, worst[ci][0], difftest.DefaultRoundingBound, "%s %s, default rounding", c.Name, c.Dtype)
				assert.LessOrEqual(t, worst[ci][1], c.ExactBound, "%s %s, exact rounding", c.Name, c.Dtype)
			})
		}
	})
	var table []string
	for ci, c := range chains {
		table = append(table, fmt.Sprintf("| %-17s | %-4s | %6.3f | %6.3f |", c.Name, c.Dtype, worst[ci][0], worst[ci][1]))
	}
	t.Logf("Metal (emulated) against float64, ULPs of the result type\n| chain | type | default | exact |\n%s", strings.Join(table, "\n"))
}

// TestMain removes the shared harness after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if harness.dir != "" {
		os.RemoveAll(harness.dir)
	}
	os.Exit(code)
}

// TestEmulatedKernels runs every example and flagship workload on the
// emulation and compares with the interpreters.
func TestEmulatedKernels(t *testing.T) {
	bin, progs, _ := sharedHarness(t)
	for _, p := range progs {
		if p.name == "matmul/O2" {
			continue // TestEmulatedMatMul runs it, with more checks
		}
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			for _, fn := range p.graph.Funcs() {
				diffFunction(t, bin, p, fn)
			}
		})
	}
}

// diffFunction checks one function on three input sets: two random ones
// (the second with fewer threads than described, which the kernels
// must accept) and an extreme one.
func diffFunction(t *testing.T, bin string, p *emuProgram, fn ir.Func) {
	desc := p.prog.Description(fn.SymName()+".metal", fn.SymName())
	require.Len(t, desc.Functions, 1)
	fl := desc.Functions[0]
	for set := 0; set < 3; set++ {
		if set == 1 && strings.HasSuffix(p.name, "/O0") {
			// -O0 launches many small kernels of kinds -O2 runs too
			continue
		}
		what := fmt.Sprintf("%s @%s, input set %d", p.name, fn.SymName(), set)
		extreme := set == 2
		var in []*geval.Tensor
		var err error
		if extreme {
			in, err = geval.ExtremeInputs(fn, 7)
		} else {
			in, err = geval.RandomInputs(fn, int64(set+1), 1, 5)
		}
		require.NoError(t, err, what)
		loopIn := clone(in)
		loopWant, err := leval.Run(p.lowered, fn.SymName(), loopIn)
		require.NoError(t, err, what)
		var shapes [][]int64
		for _, w := range loopWant {
			shapes = append(shapes, w.Shape)
		}
		// the threads the description gives, at most maxTestThreads (a
		// kernel takes any number; a thousand threads are slow to run
		// here), and in set 1 about half of them: whole and partial
		// simdgroups
		opts := runOptions{threads: func(n int64) int64 { return min(n, maxTestThreads) }}
		if set == 1 {
			opts.threads = func(n int64) int64 { return min(n, maxTestThreads)/2 + 1 }
		}
		lf, ok := p.lowered.Lookup(fn.SymName())
		require.True(t, ok, what)
		opts.updated = loop.WrittenInputs(lf, loop.KernelsOf(p.lowered))
		metalIn := clone(in)
		got, err := runFunction(bin, t.TempDir(), p.ns, desc, fl, metalIn, shapes, opts)
		require.NoError(t, err, what)
		require.Len(t, got, len(loopWant), what)
		// the inputs updated in place (graph.index_copy), as the loop interpreter updates them
		for i, u := range opts.updated {
			if u {
				compare(t, fmt.Sprintf("%s, input %d updated in place vs the loop interpreter", what, i), loopIn[i], loopIn[i], metalIn[i], emuULPs, extreme)
			}
		}

		want, err := geval.Run(fn, clone(in), geval.Options{})
		require.NoError(t, err, what)
		want64, err := geval.Run(fn, clone(in), geval.Options{F64: true})
		require.NoError(t, err, what)
		for r := range got {
			compare(t, fmt.Sprintf("%s, result %d vs the loop interpreter", what, r), loopWant[r], want64[r], got[r], emuULPs, extreme)
			compare(t, fmt.Sprintf("%s, result %d vs the graph interpreter", what, r), want[r], want64[r], got[r], sumULPs, extreme)
		}
		if roundingChain(p.name) {
			// the default rounding's float64 bound (docs/numerics.md), as
			// the loop interpreter, the PTX simulator and the tt emulation
			// are held to it: the program after decompose, only inputs,
			// outputs and explicit casts rounded
			ref, err := compileFor(p.name, p.src, "decompose")
			require.NoError(t, err, what)
			rf, ok := ref.Lookup(fn.SymName())
			require.True(t, ok, what)
			exact, err := geval.Run(rf, clone(in), geval.Options{F64: true, RoundCasts: true})
			require.NoError(t, err, what)
			for r := range got {
				e, _, bad := difftest.RoundingError(exact[r], got[r])
				require.Empty(t, bad, "%s, result %d", what, r)
				require.LessOrEqual(t, e, difftest.DefaultRoundingBound, "%s, result %d against float64", what, r)
			}
		}
	}
}

// roundingChain reports whether program name (chain/level) is one of the
// chains the rounding modes are measured on, at -O2 (the default rounding).
func roundingChain(name string) bool {
	base, level, _ := strings.Cut(name, "/")
	switch base {
	case "add_rmsnorm", "rms_silu_mul", "swiglu", "attention_softmax", "rope":
		return level == "O2"
	}
	return false
}

func clone(ts []*geval.Tensor) []*geval.Tensor {
	out := make([]*geval.Tensor, len(ts))
	for i, x := range ts {
		out[i] = x.Clone()
	}
	return out
}

// class is NaN, +inf, -inf or finite.
func class(v float64) int {
	switch {
	case math.IsNaN(v):
		return 0
	case math.IsInf(v, 1):
		return 1
	case math.IsInf(v, -1):
		return 2
	}
	return 3
}

// compare holds got to want, or to the float64 reference want64 rounded
// to the type, within bound ULPs of the value or of the tensor's largest
// finite value; on extreme inputs it compares classes where want has the
// class of want64.
func compare(t *testing.T, what string, want, want64, got *geval.Tensor, bound float64, extreme bool) {
	t.Helper()
	require.Equal(t, want.Shape, got.Shape, what)
	scale := 0.0
	for _, v := range want.Data {
		if class(v) == 3 {
			scale = max(scale, math.Abs(v))
		}
	}
	var bad []string
	for i := range want.Data {
		w, g := want.Data[i], got.Data[i]
		if extreme {
			if class(w) == class(want64.Data[i]) && class(g) != class(w) && len(bad) < 6 {
				bad = append(bad, fmt.Sprintf("[%d] want %v got %v", i, w, g))
			}
			continue
		}
		d := numeric.ULPDiff(w, g, want.Elem)
		if d <= bound || math.Abs(w-g) <= bound*ulpAt(scale, want.Elem) {
			continue
		}
		// a sum in another order than the reference's may be closer to
		// the exact value than the reference is
		if r := numeric.RoundTo(want64.Data[i], want.Elem); numeric.ULPDiff(r, g, want.Elem) <= bound ||
			math.Abs(r-g) <= bound*ulpAt(scale, want.Elem) {
			continue
		}
		if len(bad) < 6 {
			bad = append(bad, fmt.Sprintf("[%d] want %v got %v (%v ULP)", i, w, g, d))
		}
	}
	require.Empty(t, bad, "%s: %s", what, strings.Join(bad, "; "))
}

// ulpAt is one ULP of kind k at magnitude x.
func ulpAt(x float64, k ir.ElemKind) float64 {
	if k.IsInt() {
		return 1
	}
	r := numeric.RoundTo(x, k)
	for s := math.Max(r, 1e-45) * 1e-9; s < 1e300; s *= 2 {
		if u := numeric.RoundTo(r+s, k); u != r {
			return u - r
		}
	}
	return math.Inf(1)
}
