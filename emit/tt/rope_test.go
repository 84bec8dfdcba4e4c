package tt

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	geval "github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
	"github.com/tensorforge/tensorforge/passes/difftest"
)

// Rotary embeddings read the row's other half: rotate_half(q) at column c
// is -q[c + 64] or q[c - 64]. The loop IR cuts the row of 128 into two
// loops, [0, 64) and [64, 128), each loading q at the loop's column
// shifted by 64: two whole tiles, so the reader reads q's tile ct + 2 (or
// ct - 2) of the same row block into a stream of its own (colOff). These
// tests run such kernels on the emulation and hold them to the graph
// interpreter (compareTT's bounds) and to float64 (ttBound), and check
// what is not whole tiles is reported.

// ropeRoll is examples/rope.tir's form, rotate_half as roll(q, 64) * sign.
func ropeRoll(elem string, rows int) string {
	return fmt.Sprintf(`func.func @rope(%%q: tensor<1x2x%[2]dx128x%[1]s>, %%cos: tensor<1x1x%[2]dx128x%[1]s>, %%sin: tensor<1x1x%[2]dx128x%[1]s>, %%sign: tensor<128x%[1]s>) -> tensor<1x2x%[2]dx128x%[1]s> {
  %%qc = graph.mul %%q, %%cos : (tensor<1x2x%[2]dx128x%[1]s>, tensor<1x1x%[2]dx128x%[1]s>) -> tensor<1x2x%[2]dx128x%[1]s>
  %%qr = graph.roll %%q {shift = 64} : tensor<1x2x%[2]dx128x%[1]s>
  %%qh = graph.mul %%qr, %%sign : (tensor<1x2x%[2]dx128x%[1]s>, tensor<128x%[1]s>) -> tensor<1x2x%[2]dx128x%[1]s>
  %%qs = graph.mul %%qh, %%sin : (tensor<1x2x%[2]dx128x%[1]s>, tensor<1x1x%[2]dx128x%[1]s>) -> tensor<1x2x%[2]dx128x%[1]s>
  %%qe = graph.add %%qc, %%qs : tensor<1x2x%[2]dx128x%[1]s>
  return %%qe : tensor<1x2x%[2]dx128x%[1]s>
}`, elem, rows)
}

// ropeConcat is bench/gpu/workloads/rope_4096.tir's form,
// rotate_half(q) = concat(-q[..., 64:], q[..., :64]).
func ropeConcat(elem string, rows int) string {
	return fmt.Sprintf(`func.func @rope(%%q: tensor<1x2x%[2]dx128x%[1]s>, %%cos: tensor<1x1x%[2]dx128x%[1]s>, %%sin: tensor<1x1x%[2]dx128x%[1]s>) -> tensor<1x2x%[2]dx128x%[1]s> {
  %%q1 = graph.slice %%q {offsets = [0, 0, 0, 0], sizes = [1, 2, %[2]d, 64]} : (tensor<1x2x%[2]dx128x%[1]s>) -> tensor<1x2x%[2]dx64x%[1]s>
  %%q2 = graph.slice %%q {offsets = [0, 0, 0, 64], sizes = [1, 2, %[2]d, 64]} : (tensor<1x2x%[2]dx128x%[1]s>) -> tensor<1x2x%[2]dx64x%[1]s>
  %%qn = graph.neg %%q2 : tensor<1x2x%[2]dx64x%[1]s>
  %%qr = graph.concat %%qn, %%q1 {axis = 3} : (tensor<1x2x%[2]dx64x%[1]s>, tensor<1x2x%[2]dx64x%[1]s>) -> tensor<1x2x%[2]dx128x%[1]s>
  %%qa = graph.mul %%q, %%cos : (tensor<1x2x%[2]dx128x%[1]s>, tensor<1x1x%[2]dx128x%[1]s>) -> tensor<1x2x%[2]dx128x%[1]s>
  %%qb = graph.mul %%qr, %%sin : (tensor<1x2x%[2]dx128x%[1]s>, tensor<1x1x%[2]dx128x%[1]s>) -> tensor<1x2x%[2]dx128x%[1]s>
  %%qe = graph.add %%qa, %%qb : tensor<1x2x%[2]dx128x%[1]s>
  return %%qe : tensor<1x2x%[2]dx128x%[1]s>
}`, elem, rows)
}

// rotateHalf is the concat alone, over rows that are not whole row blocks.
const rotateHalf = `func.func @rh(%x: tensor<3x40x128xf32>) -> tensor<3x40x128xf32> {
  %a = graph.slice %x {offsets = [0, 0, 0], sizes = [3, 40, 64]} : (tensor<3x40x128xf32>) -> tensor<3x40x64xf32>
  %b = graph.slice %x {offsets = [0, 0, 64], sizes = [3, 40, 64]} : (tensor<3x40x128xf32>) -> tensor<3x40x64xf32>
  %n = graph.neg %b : tensor<3x40x64xf32>
  %r = graph.concat %n, %a {axis = 2} : (tensor<3x40x64xf32>, tensor<3x40x64xf32>) -> tensor<3x40x128xf32>
  %y = graph.mul %r, %x : (tensor<3x40x128xf32>, tensor<3x40x128xf32>) -> tensor<3x40x128xf32>
  return %y : tensor<3x40x128xf32>
}`

// upperHalf reads the upper half of a row of 128 as a kernel of 64
// columns: its tiles per row (2) are not the buffer's (4).
const upperHalf = `func.func @uh(%x: tensor<40x128xbf16>) -> tensor<40x64xbf16> {
  %b = graph.slice %x {offsets = [0, 64], sizes = [40, 64]} : (tensor<40x128xbf16>) -> tensor<40x64xbf16>
  %n = graph.neg %b : tensor<40x64xbf16>
  return %n : tensor<40x64xbf16>
}`

// rollWeight rolls a weight [C] read once per column tile (row tiles).
const rollWeight = `func.func @rw(%x: tensor<40x128xf32>, %w: tensor<128xf32>) -> tensor<40x128xf32> {
  %r = graph.roll %w {shift = 64} : tensor<128xf32>
  %y = graph.mul %x, %r : (tensor<40x128xf32>, tensor<128xf32>) -> tensor<40x128xf32>
  return %y : tensor<40x128xf32>
}`

// rollGathered rolls an operand broadcast over the heads, whose rows the
// reader gathers: each row from the tile two column tiles away.
const rollGathered = `func.func @rg(%x: tensor<1x2x40x128xf32>, %c: tensor<1x1x40x128xf32>) -> tensor<1x2x40x128xf32> {
  %r = graph.roll %c {shift = 64} : tensor<1x1x40x128xf32>
  %y = graph.mul %x, %r : (tensor<1x2x40x128xf32>, tensor<1x1x40x128xf32>) -> tensor<1x2x40x128xf32>
  return %y : tensor<1x2x40x128xf32>
}`

// roll32 rolls rows of three tiles, a run-time number of them, by one
// tile: stretches [0, 32) and [32, 96).
const roll32 = `func.func @r32(%x: tensor<?x96xbf16>) -> tensor<?x96xbf16> {
  %r = graph.roll %x {shift = 32} : tensor<?x96xbf16>
  %y = graph.add %r, %x : (tensor<?x96xbf16>, tensor<?x96xbf16>) -> tensor<?x96xbf16>
  return %y : tensor<?x96xbf16>
}`

// roll16 rolls by half a tile.
const roll16 = `func.func @r16(%x: tensor<64x128xf32>) -> tensor<64x128xf32> {
  %r = graph.roll %x {shift = 16} : tensor<64x128xf32>
  return %r : tensor<64x128xf32>
}`

// emitRope compiles src for tgName: its graph passes (which fuse slices
// and concats of whole tiles along the last axis on Tenstorrent targets,
// the rest of the views staying kernels of their own), then the lowering.
func emitRope(t *testing.T, src, tgName string) (orig ir.Module, out *Output, err error) {
	tg, err := target.Lookup(tgName)
	require.NoError(t, err)
	orig, err = compileFor(src, graphPipeline, tg)
	require.NoError(t, err)
	m, err := compileFor(src, graphPipeline, tg)
	require.NoError(t, err)
	p, err := ir.ParsePipeline("lower-to-loops,sram-alloc")
	require.NoError(t, err)
	pm := &ir.PassManager{Pipeline: p, VerifyEach: true}
	require.NoError(t, pm.Run(m, &ir.PassContext{Diags: &ir.Diagnostics{}, Target: tg}))
	out, err = Emit(m, Options{Target: tg})
	return orig, out, err
}

func TestRotaryEmulated(t *testing.T) {
	t.Parallel()
	type rc struct {
		name string
		src  string
		// reads are the shifted streams the reader must read
		reads []string
	}
	// a buffer read straight and shifted: its row block read once, each
	// stream copied from it
	shifted := []string{"noc_async_read_tile(rb * 4u + t, q, q_row + t * q_tile);",
		"noc_async_read(get_noc_addr(q_row + (ct + 2u) * q_tile), get_write_ptr(cb_q_plus2), q_tile);",
		"noc_async_read(get_noc_addr(q_row + (ct - 2u) * q_tile), get_write_ptr(cb_q_minus2), q_tile);"}
	cases := []rc{
		{"rope roll bf16", ropeRoll("bf16", 64), shifted},
		{"rope roll f32", ropeRoll("f32", 64), shifted},
		{"rope roll bf16, 40 rows", ropeRoll("bf16", 40), shifted},
		{"rope concat bf16", ropeConcat("bf16", 64), shifted},
		{"rope concat f32", ropeConcat("f32", 64), shifted},
		{"rotate_half f32", rotateHalf, []string{"noc_async_read_tile(rb * 4u + t, x, x_row + t * x_tile);",
			"noc_async_read(get_noc_addr(x_row + (ct + 2u) * x_tile), get_write_ptr(cb_x_plus2), x_tile);",
			"noc_async_read(get_noc_addr(x_row + (ct - 2u) * x_tile), get_write_ptr(cb_x_minus2), x_tile);"}},
		{"upper half bf16", upperHalf, []string{"noc_async_read_tile(rb * 4u + ct + 2u, x, get_write_ptr(cb_x_plus2));"}},
		{"rolled weight f32", rollWeight, []string{"noc_async_read_tile(ct + 2u, w, get_write_ptr(cb_w_plus2));",
			"noc_async_read_tile(ct - 2u, w, get_write_ptr(cb_w_minus2));"}},
		{"rolled gathered operand f32", rollGathered, []string{"const uint32_t tile = src / 32 * 4u + ct + 2u;",
			"const uint32_t tile = src / 32 * 4u + ct - 2u;"}},
		{"roll by a tile bf16, run-time rows", roll32, []string{"noc_async_read_tile(rb * 3u + t, x, x_row + t * x_tile);",
			"noc_async_read(get_noc_addr(x_row + (ct + 2u) * x_tile), get_write_ptr(cb_x_plus2), x_tile);",
			"noc_async_read(get_noc_addr(x_row + (ct - 1u) * x_tile), get_write_ptr(cb_x_minus1), x_tile);"}},
	}
	var built []builtCase
	var refs [][]*geval.Tensor
	for _, c := range cases {
		tgName := "wormhole-n300"
		orig, out, err := emitRope(t, c.src, tgName)
		require.NoError(t, err, c.name)
		require.Len(t, out.Program.Kernels, 1, "%s: one kernel", c.name)
		var reader string
		for _, f := range out.Files {
			if strings.HasSuffix(f.Path, "/reader.cpp") {
				reader = string(f.Data)
			}
		}
		for _, want := range c.reads {
			assert.Contains(t, reader, want, c.name)
		}
		if c.src != roll32 && c.src != upperHalf {
			// the two stretches of the row, one loop each
			assert.Contains(t, reader, "for (uint32_t ct = 0; ct < 2; ++ct)", c.name)
			assert.Contains(t, reader, "for (uint32_t ct = 2; ct < 4; ++ct)", c.name)
		}
		fn := orig.Funcs()[0]
		for seed := int64(0); seed <= 1; seed++ {
			in, err := geval.RandomInputs(fn, 11+seed, 1, 37)
			if seed == 1 {
				in, err = geval.ExtremeInputs(fn, 1)
			}
			require.NoError(t, err)
			want, err := geval.Run(fn, cloneAll(in), geval.Options{})
			require.NoError(t, err)
			ref, err := geval.Run(fn, cloneAll(in), geval.Options{F64: true, RoundCasts: true})
			require.NoError(t, err)
			built = append(built, newBuiltCase(fmt.Sprintf("%s seed %d on %s", c.name, seed, tgName), out, fn.SymName(), in, want))
			refs = append(refs, ref)
		}
	}
	// one harness: each result against the interpreter (compareTT's
	// bounds) and against float64 (inputs, outputs and explicit casts
	// rounded; ttBound)
	emuCases := make([]*emuCase, len(built))
	for i, b := range built {
		emuCases[i] = b.c
	}
	results := runEmu(t, emuCases)
	for i, r := range results {
		b := built[i]
		require.Zero(t, r.code, "%s: the emulation failed:\n%s", b.c.name, r.stderr)
		require.Len(t, r.outs, len(b.want), b.c.name)
		for j := range b.want {
			compareTT(t, fmt.Sprintf("%s, result %d", b.c.name, j), b.want[j], r.outs[j])
			e, _, bad := difftest.RoundingError(refs[i][j], r.outs[j])
			require.Empty(t, bad, "%s result %d", b.c.name, j)
			bound := ttBound
			if b.want[j].Elem == ir.F32 {
				// q * cos + rotate_half(q) * sin cancels: the f32 roundings of
				// the products are ULPs of the products, not of the sum (the
				// interpreter's too: compareTT holds the two together); the
				// bound difftest.RoundingChains gives rope
				bound = 64
			}
			assert.LessOrEqual(t, e, bound, "%s result %d: ULPs from float64", b.c.name, j)
		}
	}
}

// TestRotaryReported checks that columns shifted within a tile are
// reported at the op, on both targets.
func TestRotaryReported(t *testing.T) {
	for _, tg := range []string{"blackhole-p150", "wormhole-n300"} {
		_, _, err := emitRope(t, roll16, tg)
		require.Error(t, err, tg)
		assert.Contains(t, err.Error(), "input.tir:2:3: error: 'tt' backend: kernel 'r16_k0' reads 'x' at columns shifted by 112 from the loop's (a graph.roll, or a concat of slices), not a whole number of 32-column tiles", tg)
	}
}
