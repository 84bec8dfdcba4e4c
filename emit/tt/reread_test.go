package tt

import (
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	geval "github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
	"github.com/tensorforge/tensorforge/parser"
)

// A one-pass row kernel keeps 32 rows in L1; when they do not fit, the
// backend emits the two-pass form (reread.go), which computes the kept
// values again from DRAM in each loop over the row. The tests give the
// emitter a core of smallL1 bytes, so that short rows (which the
// emulation runs quickly) take that path.

const smallL1 = 64 * 1024

// smallCore is target name with a core of smallL1 bytes of L1.
func smallCore(t *testing.T, name string) *target.Target {
	tg, err := target.Lookup(name)
	require.NoError(t, err)
	small := *tg
	small.ScratchpadBytes = smallL1
	return &small
}

func TestTwoPassWhenTheRowsDoNotFit(t *testing.T) {
	t.Parallel()
	// rows of 700 to 1000: 22 to 32 tiles, 32 rows of which need more than
	// smallL1 in f32 or bf16
	progs := map[string]string{
		"softmax": `func.func @softmax(%x: tensor<40x700xf32>) -> tensor<40x700xf32> {
  %y = graph.softmax %x {axis = -1} : tensor<40x700xf32>
  return %y : tensor<40x700xf32>
}`,
		"add_rmsnorm": `func.func @add_rmsnorm(%x: tensor<40x1000xbf16>, %r: tensor<40x1000xbf16>, %w: tensor<1000xbf16>) -> (tensor<40x1000xbf16>, tensor<40x1000xbf16>) {
  %a = graph.add %x, %r : tensor<40x1000xbf16>
  %n = graph.rmsnorm %a, %w {eps = 1.0e-05 : f32} : (tensor<40x1000xbf16>, tensor<1000xbf16>) -> tensor<40x1000xbf16>
  return %a, %n : tensor<40x1000xbf16>, tensor<40x1000xbf16>
}`,
		"logsumexp": `func.func @logsumexp(%x: tensor<40x700xf32>) -> tensor<40xf32> {
  %y = graph.logsumexp %x {axis = -1} : (tensor<40x700xf32>) -> tensor<40xf32>
  return %y : tensor<40xf32>
}`,
		"layernorm": `func.func @layernorm(%x: tensor<2x20x1000xbf16>, %g: tensor<1000xbf16>, %b: tensor<1000xbf16>) -> tensor<2x20x1000xbf16> {
  %y = graph.layernorm %x, %g, %b {eps = 1.0e-05 : f32} : (tensor<2x20x1000xbf16>, tensor<1000xbf16>, tensor<1000xbf16>) -> tensor<2x20x1000xbf16>
  return %y : tensor<2x20x1000xbf16>
}`,
		"rms_silu_mul": `func.func @rms_silu_mul(%x: tensor<40x1000xbf16>, %w: tensor<1000xbf16>, %z: tensor<40x1000xbf16>) -> tensor<40x1000xbf16> {
  %n = graph.rmsnorm %x, %w {eps = 1.0e-05 : f32} : (tensor<40x1000xbf16>, tensor<1000xbf16>) -> tensor<40x1000xbf16>
  %s = graph.silu %n : tensor<40x1000xbf16>
  %y = graph.mul %s, %z : tensor<40x1000xbf16>
  return %y : tensor<40x1000xbf16>
}`,
	}
	names := []string{"softmax", "add_rmsnorm", "logsumexp", "layernorm", "rms_silu_mul"}
	var cases []builtCase
	for i, name := range names {
		tg := "wormhole-n300"
		if i%2 == 1 {
			tg = "blackhole-p150"
		}
		orig, err := compileFor(progs[name], graphPipeline, mustTarget(t, tg))
		require.NoError(t, err)
		lowered, err := compileFor(progs[name], graphPipeline+",lower-to-loops,sram-alloc", mustTarget(t, tg))
		require.NoError(t, err)
		out, err := Emit(lowered, Options{Target: smallCore(t, tg)})
		require.NoError(t, err, name)
		twoPass := 0
		for _, k := range out.Program.Kernels {
			assert.LessOrEqual(t, k.L1Bytes, int64(smallL1), k.Name)
			if k.Schedule == "two-pass" {
				twoPass++
				for _, cb := range k.CircularBuffers {
					assert.LessOrEqual(t, cb.Pages, int64(2), "%s: %s keeps no row", k.Name, cb.Name)
				}
			}
		}
		assert.Positive(t, twoPass, "%s: a kernel reads its rows again", name)
		for _, fn := range orig.Funcs() {
			in, err := geval.RandomInputs(fn, int64(20+i), 1, 37)
			require.NoError(t, err)
			want, err := geval.Run(fn, cloneAll(in), geval.Options{})
			require.NoError(t, err)
			cases = append(cases, newBuiltCase(fmt.Sprintf("two-pass %s @%s on %s", name, fn.SymName(), tg), out, fn.SymName(), in, want))
		}
	}
	runAndCompare(t, cases)
}

func mustTarget(t *testing.T, name string) *target.Target {
	tg, err := target.Lookup(name)
	require.NoError(t, err)
	return tg
}

func TestTwoPassReadsTheRowAgain(t *testing.T) {
	src := `func.func @sm(%x: tensor<64x16384xf32>) -> tensor<64x16384xf32> {
  %y = graph.softmax %x {axis = -1} : tensor<64x16384xf32>
  return %y : tensor<64x16384xf32>
}`
	out, err := emitSrc(t, src, "wormhole-n300")
	require.NoError(t, err)
	k := out.Program.Kernels[0]
	assert.Equal(t, "two-pass", k.Schedule)
	// softmax reads x in each of its three loops over the row, and
	// computes exp in the second and the third
	reader := fileOf(out, "sm_k0/reader.cpp")
	assert.Equal(t, 3, countOf(reader, "noc_async_read_tile(rb * Ct + ct, x,"), reader)
	compute := fileOf(out, "sm_k0/compute.cpp")
	assert.Equal(t, 2, countOf(compute, "exp_tile(0);"))
	assert.NotContains(t, compute, "cb_row")
}

func countOf(s, sub string) int {
	n := 0
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			n++
		}
	}
	return n
}

// The capacity error remains when the kept value cannot be computed again:
// here the loop stores its running maximum, which it carries (the input
// is loop IR).
func TestL1CapacityIsReported(t *testing.T) {
	src, err := os.ReadFile("testdata/loop/kept_carried.tir")
	require.NoError(t, err)
	m, err := parser.Parse("kept_carried.tir", string(src))
	require.NoError(t, err)
	require.NoError(t, ir.Verify(m.Operation))
	_, err = Emit(m, Options{Target: mustTarget(t, "blackhole-p150")})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "'tt' backend: kernel 'sm_k0' needs 2086 KiB of L1 for its circular buffers, more than the 1536 KiB of a blackhole-p150 core")
	assert.Contains(t, err.Error(), "reading the row again from DRAM instead is not possible: the value it keeps depends on what the loop writing it carries")
	assert.Contains(t, err.Error(), "kept_carried.tir:9:3:", "located at the kernel")
}
