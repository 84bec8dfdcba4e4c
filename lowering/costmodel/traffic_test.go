package costmodel

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
	"github.com/tensorforge/tensorforge/parser"

	// lower-to-loops, for the kernels after lowering
	_ "github.com/tensorforge/tensorforge/lowering"
)

// compile parses src and runs pipeline on it for a target.
func compile(t *testing.T, src, pipeline, targetName string) ir.Module {
	t.Helper()
	m, err := parser.Parse("input.tir", src)
	require.NoError(t, err)
	require.NoError(t, ir.Verify(m.Operation))
	p, err := ir.ParsePipeline(pipeline)
	require.NoError(t, err)
	tg, err := target.Lookup(targetName)
	require.NoError(t, err)
	pm := &ir.PassManager{Pipeline: p, VerifyEach: true}
	require.NoError(t, pm.Run(m, &ir.PassContext{Diags: &ir.Diagnostics{}, Target: tg}))
	return m
}

// traffic is a kernel's figures in a form that compares well.
type traffic struct {
	Name          string
	Read, Written int64
}

func trafficOf(ks []Kernel) []traffic {
	out := make([]traffic, len(ks))
	for i := range ks {
		out[i] = traffic{ks[i].Name, ks[i].BytesRead(), ks[i].BytesWritten()}
	}
	return out
}

func TestGraphKernelsByHand(t *testing.T) {
	// f32 4x8 = 128 bytes, 8 = 32 bytes, 2 = 8 bytes
	m := compile(t, `func.func @f(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x4xf32>) {
  %two = graph.constant dense<2.0> : tensor<f32>
  %d = graph.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
  %t = graph.transpose %x {perm = [1, 0]} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %s = graph.add %x, %x : tensor<4x8xf32>
  %y = graph.mul %s, %two : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %z = graph.add %y, %d : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %z, %x, %z, %t : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x4xf32>
}`, "", "cpu")
	ks, err := GraphKernels(m, Options{})
	require.NoError(t, err)
	assert.Equal(t, []traffic{
		{"f_k0", 0, 32},    // the dense constant is written to a buffer
		{"f_k1", 128, 128}, // transpose
		{"f_k2", 128, 128}, // x + x reads x once
		{"f_k3", 128, 128}, // the splat constant costs nothing
		{"f_k4", 160, 128}, // reads y and the dense constant
		{"f_k5", 128, 128}, // copies the argument x into its output
		{"f_k6", 128, 128}, // copies z, returned a second time
	}, trafficOf(ks))
	assert.Equal(t, []string{"transpose"}, ks[1].Ops)
	assert.Equal(t, "generic", ks[1].Kind)
	assert.Equal(t, "elementwise", ks[2].Kind)
	assert.Equal(t, []string{"copy"}, ks[5].Ops)
	for _, k := range ks {
		assert.True(t, k.HasFLOPs)
		assert.Equal(t, GraphLevel, k.Level)
	}
	assert.Equal(t, int64(32+32+32), Sum(ks).FLOPs)
}

func TestLoopKernelsByHand(t *testing.T) {
	// Buffers with run-time extents: %x is ?x64 f32, the intermediate %t
	// is allocated with the extent of %x, the output %y is ?x32 f16; the
	// launches pass them as trailing index operands.
	src := `module {
  func.func @f(%x: memref<?x64xf32, dram>, %y: memref<?x32xf16, dram>) attributes {num_results = 1} {
    %c2 = loop.const {value = 2} : index
    %n = loop.dim %x {axis = 0} : (memref<?x64xf32, dram>) -> index
    %m = loop.muli %n, %c2 : index
    %t = loop.alloc_dram %m : (index) -> memref<?x32xf32, dram>
    loop.launch %x, %t, %n, %m {kernel = "f_k0"} : (memref<?x64xf32, dram>, memref<?x32xf32, dram>, index, index) -> ()
    loop.launch %t, %y, %m, %n {kernel = "f_k1"} : (memref<?x32xf32, dram>, memref<?x32xf16, dram>, index, index) -> ()
    return
  }
  loop.kernel {kind = "elementwise", num_inputs = 1, num_outputs = 1, sym_name = "f_k0"} {
  ^bb0(%a: memref<?x64xf32, dram>, %b: memref<?x32xf32, dram>, %n0: index, %n1: index):
    %c0 = loop.const {value = 0} : index
    %c1 = loop.const {value = 1} : index
    loop.parallel %c0, %n0, %c1 {dist = "grid"} {
    ^bb1(%r: index):
      loop.yield
    } : index
    loop.return
  }
  loop.kernel {kind = "elementwise", num_inputs = 1, num_outputs = 1, sym_name = "f_k1"} {
  ^bb0(%a: memref<?x32xf32, dram>, %b: memref<?x32xf16, dram>, %n0: index, %n1: index):
    %c0 = loop.const {value = 0} : index
    %c1 = loop.const {value = 1} : index
    loop.parallel %c0, %n1, %c1 {dist = "grid"} {
    ^bb1(%r: index):
      loop.yield
    } : index
    loop.return
  }
}`
	m, err := parser.Parse("loops.tir", src)
	require.NoError(t, err)
	require.NoError(t, ir.Verify(m.Operation))
	ks, err := LoopKernels(m, Options{DynamicExtent: 10})
	require.NoError(t, err)
	// x: 10x64 f32 = 2560 B; t: 20x32 f32 = 2560 B; y: 10x32 f16 = 640 B
	assert.Equal(t, []traffic{{"f_k0", 2560, 2560}, {"f_k1", 2560, 640}}, trafficOf(ks))
	assert.Equal(t, []int64{20, 32}, ks[1].Reads[0].Shape)
	assert.False(t, ks[0].HasFLOPs, "the loop IR does not say what a kernel computes")
	assert.Equal(t, LoopLevel, ks[0].Level)

	ks, err = LoopKernels(m, Options{})
	require.NoError(t, err)
	assert.Equal(t, []traffic{{"f_k0", 256, 256}, {"f_k1", 256, 64}}, trafficOf(ks), "a '?' counts as 1 unless told")
}

// llamaChain is examples/rms_silu_mul.tir at other sizes.
func llamaChain(seq, dim int64) string {
	rows, w := fmt.Sprintf("tensor<%dx%dxbf16>", seq, dim), fmt.Sprintf("tensor<%dxbf16>", dim)
	return "func.func @rms_silu_mul(%x: " + rows + ", %w: " + w + ", %z: " + rows + ") -> " + rows + " {\n" +
		"  %n = graph.rmsnorm %x, %w {eps = 1.0e-05 : f32} : (" + rows + ", " + w + ") -> " + rows + "\n" +
		"  %s = graph.silu %n : " + rows + "\n" +
		"  %y = graph.mul %s, %z : " + rows + "\n" +
		"  return %y : " + rows + "\n}\n"
}

// opByOpBytes is what executing the ops of a function one by one moves
// through DRAM, counted independently of the cost model: each op reads
// its operands (each once; splat constants are immediates) and writes its
// result.
func opByOpBytes(t *testing.T, m ir.Module) int64 {
	t.Helper()
	size := func(v *ir.Value) int64 {
		n, ok := ir.ByteSizeOf(v.Type().(ir.TensorType))
		require.True(t, ok)
		return n
	}
	var total int64
	for _, op := range m.Funcs()[0].Body().Ops() {
		if op.Name() == ir.ReturnOpName || op.Name() == graph.OpConstant {
			continue
		}
		seen := map[*ir.Value]bool{}
		for _, v := range op.Operands() {
			if c, ok := graph.AsConstant(v.DefiningOp()); (ok && c.Value().IsSplat()) || seen[v] {
				continue
			}
			seen[v] = true
			total += size(v)
		}
		for _, r := range op.Results() {
			total += size(r)
		}
	}
	return total
}

// The Llama chain: fused, one read of x, w and z and one write of y,
// 3*S*D*2 + D*2 bytes in bf16; unfused, what the decomposed ops move one
// by one.
func TestLlamaChainTraffic(t *testing.T) {
	for _, size := range []struct{ seq, dim int64 }{{4096, 8192}, {1, 64}, {37, 5120}} {
		t.Run(fmt.Sprintf("%dx%d", size.seq, size.dim), func(t *testing.T) {
			S, D := size.seq, size.dim
			src := llamaChain(S, D)

			fused, err := LoopKernels(compile(t, src, "canonicalize,cse,legalize-numerics,fuse,canonicalize,cse,dce,lower-to-loops,sram-alloc", "h100"), Options{})
			require.NoError(t, err)
			require.Len(t, fused, 1)
			assert.Equal(t, 3*S*D*2+D*2, Sum(fused).Bytes())
			assert.Equal(t, 2*S*D*2+D*2, fused[0].BytesRead())
			assert.Equal(t, S*D*2, fused[0].BytesWritten())

			decomposed := compile(t, src, "canonicalize,cse,legalize-numerics,decompose,canonicalize,cse,dce", "h100")
			unfused, err := LoopKernels(compile(t, src, "canonicalize,cse,legalize-numerics,decompose,canonicalize,cse,dce,lower-to-loops,sram-alloc", "h100"), Options{})
			require.NoError(t, err)
			assert.Equal(t, opByOpBytes(t, decomposed), Sum(unfused).Bytes())
			assert.Greater(t, Sum(unfused).Bytes(), Sum(fused).Bytes())
		})
	}
}

// For 4096x8192 the figures are exact numbers worth stating.
func TestLlamaChainFigures(t *testing.T) {
	src := llamaChain(4096, 8192)
	fused, err := LoopKernels(compile(t, src, "fuse,lower-to-loops", "h100"), Options{})
	require.NoError(t, err)
	assert.Equal(t, int64(201342976), Sum(fused).Bytes()) // 3*4096*8192*2 + 8192*2
	unfused, err := LoopKernels(compile(t, src, "decompose,lower-to-loops", "h100"), Options{})
	require.NoError(t, err)
	// x (bf16) -> f32 (S*D*(2+4)), x*x (2*4*S*D), reduce (4*S*D + 4*S),
	// three per-row ops (3 * 8*S), * r (4*S*D + 4*S + 4*S*D), w -> f32
	// (2*D + 4*D), * w (4*S*D + 4*D + 4*S*D), -> bf16 (4*S*D + 2*S*D),
	// silu (2*2*S*D), * z (3*2*S*D)
	S, D := int64(4096), int64(8192)
	want := 6*S*D + 8*S*D + 4*S*D + 4*S + 3*8*S + 8*S*D + 4*S + 6*D + 8*S*D + 4*D + 6*S*D + 4*S*D + 6*S*D
	assert.Equal(t, want, Sum(unfused).Bytes())
	assert.Equal(t, int64(1677934592), want)
	assert.Len(t, unfused, 12)
}

// agreementPrograms are compiled with and without fusion, for targets
// where row kernels are one-pass and two-pass.
func agreementPrograms(t *testing.T) map[string]string {
	progs := map[string]string{
		"two-pass chain": llamaChain(64, 16384),
		"softmax rows": `func.func @softmax(%x: tensor<64x4096xf32>) -> tensor<64x4096xf32> {
  %y = graph.softmax %x {axis = -1} : tensor<64x4096xf32>
  return %y : tensor<64x4096xf32>
}`,
		"softmax rows too long to keep": `func.func @softmax(%x: tensor<?x32768xbf16>) -> tensor<?x32768xbf16> {
  %y = graph.softmax %x {axis = -1} : tensor<?x32768xbf16>
  return %y : tensor<?x32768xbf16>
}`,
		"matmul and transpose": `func.func @mm(%a: tensor<16x32xf32>, %b: tensor<32x8xf32>) -> (tensor<8x16xf32>, tensor<16x32xf32>) {
  %c = graph.matmul %a, %b : (tensor<16x32xf32>, tensor<32x8xf32>) -> tensor<16x8xf32>
  %e = graph.exp %c : tensor<16x8xf32>
  %t = graph.transpose %e {perm = [1, 0]} : (tensor<16x8xf32>) -> tensor<8x16xf32>
  return %t, %a : tensor<8x16xf32>, tensor<16x32xf32>
}`,
		"reduce over rows and a dense constant": `func.func @cols(%x: tensor<8x16xf32>) -> tensor<16xf32> {
  %d = graph.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0]> : tensor<16xf32>
  %s = graph.reduce_sum %x {axes = [0]} : (tensor<8x16xf32>) -> tensor<16xf32>
  %y = graph.mul %s, %d : tensor<16xf32>
  return %y : tensor<16xf32>
}`,
	}
	examples, err := filepath.Glob("../../examples/*.tir")
	require.NoError(t, err)
	require.NotEmpty(t, examples)
	for _, path := range examples {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		progs[filepath.Base(path)] = string(data)
	}
	return progs
}

// The graph-level accounting (the graph.fused ops, before lowering) and
// the loop-level one (the launches after it) must agree kernel for kernel.
func TestGraphAndLoopLevelsAgree(t *testing.T) {
	for name, src := range agreementPrograms(t) {
		for _, pre := range []string{"legalize-numerics,fuse", "legalize-numerics,decompose"} {
			for _, tg := range []string{"cpu", "m3-max", "blackhole-p150"} {
				t.Run(name+"/"+pre+"/"+tg, func(t *testing.T) {
					opts := Options{DynamicExtent: 3}
					graphKs, err := GraphKernels(compile(t, src, pre, tg), opts)
					require.NoError(t, err)
					// kernel for kernel: each launched on its own
					loopKs, err := LoopKernels(compile(t, src, pre+",lower-to-loops{horizontal=false}", tg), opts)
					require.NoError(t, err)
					assert.Equal(t, trafficOf(graphKs), trafficOf(loopKs))
					for i := range graphKs {
						if i < len(loopKs) {
							assert.Equal(t, graphKs[i].Schedule, loopKs[i].Schedule, graphKs[i].Name)
						}
					}
					paired, err := Pair(graphKs, loopKs)
					require.NoError(t, err)
					for i := range paired {
						assert.Equal(t, graphKs[i].FLOPs, paired[i].FLOPs)
						assert.Equal(t, graphKs[i].Ops, paired[i].Ops)
						assert.Equal(t, loopKs[i].Kind, paired[i].Kind)
					}
					// siblings launched as one: each of their parts' graph
					// kernels paired with it, the work the same, and no more
					// bytes (a buffer two siblings read counts once)
					merged, err := LoopKernels(compile(t, src, pre+",lower-to-loops", tg), opts)
					require.NoError(t, err)
					paired, err = Pair(graphKs, merged)
					require.NoError(t, err)
					var gf, mf, gb, mb int64
					for i := range graphKs {
						gf, gb = gf+graphKs[i].FLOPs, gb+graphKs[i].Bytes()
					}
					for i := range paired {
						mf, mb = mf+paired[i].FLOPs, mb+paired[i].Bytes()
					}
					assert.Equal(t, gf, mf)
					assert.LessOrEqual(t, mb, gb)
				})
			}
		}
	}
}

// On a target whose scratchpad cannot keep a row, the fused chain is
// two-pass: x is read again in the second phase, z and w are not.
func TestTwoPassRereadsFullRows(t *testing.T) {
	S, D := int64(64), int64(16384)
	ks, err := LoopKernels(compile(t, llamaChain(S, D), "fuse,lower-to-loops", "m3-max"), Options{})
	require.NoError(t, err)
	require.Len(t, ks, 1)
	assert.Equal(t, "two-pass", ks[0].Schedule)
	var passes []int64
	for _, a := range ks[0].Reads {
		passes = append(passes, a.Passes)
	}
	assert.Equal(t, []int64{2, 1, 1}, passes, "x, w, z")
	assert.Equal(t, 3*S*D*2+D*2, ks[0].BytesRead())
}

func TestPairRejectsMismatch(t *testing.T) {
	_, err := Pair([]Kernel{{Func: "f"}}, nil)
	require.Error(t, err)
	assert.Equal(t, "the lowered program has 0 kernels, but the graph-level program 1", err.Error())
	_, err = Pair([]Kernel{{Func: "f"}}, []Kernel{{Func: "g"}})
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "in @g after lowering, but in @f before"), err.Error())
}

// Softmax has three phases (max, sum of exponentials, normalise): with rows
// too long for the scratchpad, each phase reads the row again.
func TestTwoPassSoftmaxReadsEachPhase(t *testing.T) {
	src := `func.func @softmax(%x: tensor<8x32768xbf16>) -> tensor<8x32768xbf16> {
  %y = graph.softmax %x {axis = -1} : tensor<8x32768xbf16>
  return %y : tensor<8x32768xbf16>
}`
	ks, err := LoopKernels(compile(t, src, "legalize-numerics,fuse,lower-to-loops{exact-rounding=true}", "m3-max"), Options{})
	require.NoError(t, err)
	require.Len(t, ks, 1)
	assert.Equal(t, "two-pass", ks[0].Schedule)
	require.Len(t, ks[0].Reads, 1)
	assert.Equal(t, int64(3), ks[0].Reads[0].Passes)
	assert.Equal(t, int64(3*8*32768*2), ks[0].BytesRead())
	assert.Equal(t, int64(8*32768*2), ks[0].BytesWritten())
}

// Online, the max and the sum of exp take one pass (the loop over the
// chunks and the last chunk's loops), the normalisation another.
func TestOnlineSoftmaxReadsTwice(t *testing.T) {
	src := `func.func @softmax(%x: tensor<8x33000xbf16>) -> tensor<8x33000xbf16> {
  %y = graph.softmax %x {axis = -1} : tensor<8x33000xbf16>
  return %y : tensor<8x33000xbf16>
}`
	m := compile(t, src, "legalize-numerics,fuse,lower-to-loops", "m3-max")
	ks, err := LoopKernels(m, Options{})
	require.NoError(t, err)
	require.Len(t, ks, 1)
	assert.Equal(t, "online", ks[0].Schedule)
	require.Len(t, ks[0].Reads, 1)
	assert.Equal(t, int64(2), ks[0].Reads[0].Passes)
	gk, err := GraphKernels(compile(t, src, "legalize-numerics,fuse", "m3-max"), Options{})
	require.NoError(t, err)
	require.Len(t, gk, 1)
	assert.Equal(t, ks[0].BytesRead(), gk[0].BytesRead(), "the graph-level prediction")
}
