package ptx

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/parser"
)

// The simulator's warpgroup MMA (sm_90a): wgmma.fence, commit_group,
// wait_group and mma_async.sync.aligned.m64nNk16.f32.{bf16,f16} with both
// operands in shared memory, K-major, in the 128-byte swizzle, as the PTX
// ISA lays them out:
//
//	descriptor: start >> 4 (bits 0-13), leading byte offset >> 4 (16-29,
//	  unused here), stride byte offset >> 4 (32-45: between groups of 8
//	  rows), base offset (49-51, must be 0), swizzle (62-63, must be 1)
//	element (row r, k) of an operand at byte
//	  x = start + (r / 8) * stride + (r % 8) * 128 + 2k,
//	  swizzled: x ^ (((x >> 7) & 7) << 4)
//	D (m64nN, f32): thread i of the warpgroup, warp q = i / 32, lane l,
//	  g = l / 4, t = l % 4: register 4j + 2h + c is row 16q + g + 8h,
//	  column 8j + 2t + c
//
// Each D element is computed in float64 over its 16 products plus the
// accumulator (unless scale-d is false) and rounded once to f32. All four
// are warpgroup-collective: the scheduler runs one when the 128 threads
// of a warpgroup wait at it, and faults when they wait at different
// ones. An mma_async reads shared memory at once, but the hardware may
// read it until its group is waited for: the simulator keeps the bytes
// each group read and faults at the wait_group that retires it if any
// changed in between (a stage refilled while a wgmma may still read it).

// simWG is a warpgroup's wgmma state: the reads of the uncommitted
// mma_async instructions and of each committed group not yet waited for.
type simWG struct {
	open   []simWGRead
	groups [][]simWGRead
}

// simWGRead is 16 bytes of shared memory an mma_async read, as it read
// them.
type simWGRead struct {
	addr uint64
	data [16]byte
}

// runWarpgroups runs the wgmma instructions at which whole warpgroups
// wait; it reports whether any ran.
func (c *simCtx) runWarpgroups(threads []*simThread) bool {
	ran := false
	for w := 0; w < len(threads); w += 128 {
		grp := threads[w:min(w+128, len(threads))]
		pc, at := -1, 0
		for _, t := range grp {
			if t.blocked != 6 {
				continue
			}
			if pc >= 0 && t.pc != pc {
				panic(fmt.Sprintf("threads of warpgroup %d wait at different wgmma instructions", w/128))
			}
			pc = t.pc
			at++
		}
		if at == 0 {
			continue
		}
		if len(grp) != 128 {
			panic(fmt.Sprintf("%s in a partial warpgroup (%d threads)", c.e.code[pc].op, len(grp)))
		}
		if at != len(grp) {
			for _, t := range grp {
				if t.done {
					panic(fmt.Sprintf("warpgroup %d: %s with exited threads", w/128, c.e.code[pc].op))
				}
			}
			continue
		}
		c.wgmma(w/128, grp, &c.e.code[pc])
		for _, t := range grp {
			t.blocked = 0
			t.pc++
		}
		ran = true
	}
	return ran
}

// wgmma runs one warpgroup-collective instruction for warpgroup wg.
func (c *simCtx) wgmma(wg int, grp []*simThread, in *simInstr) {
	if c.wg == nil {
		c.wg = map[int]*simWG{}
	}
	st := c.wg[wg]
	if st == nil {
		st = &simWG{}
		c.wg[wg] = st
	}
	p := in.parts
	if p[1] != "mma_async" && (len(p) != 4 || p[2] != "sync" || p[3] != "aligned") {
		panic("unsupported wgmma form " + in.op)
	}
	switch p[1] {
	case "fence":
	case "commit_group":
		st.groups = append(st.groups, st.open)
		st.open = nil
	case "wait_group":
		n := int(c.val(grp[0], in.args[0]))
		for len(st.groups) > n {
			for _, r := range st.groups[0] {
				if !bytes.Equal(c.shared[r.addr:r.addr+16], r.data[:]) {
					panic(fmt.Sprintf("shared bytes %#x..%#x, which a wgmma of a group in flight reads, changed before the wgmma.wait_group that retires it", r.addr, r.addr+15))
				}
			}
			st.groups = st.groups[1:]
		}
	case "mma_async":
		c.wgmmaMMA(st, grp, in)
	default:
		panic("unsupported wgmma form " + in.op)
	}
}

// wgmmaMMA runs wgmma.mma_async.sync.aligned.m64nNk16.f32.T.T d, adesc,
// bdesc, scale-d, 1, 1, 0, 0 (T bf16 or f16), and the integer form
// m64nNk32.s32.A.B d, adesc, bdesc, scale-d (A, B s8 or u8: 32 bytes of
// K a row where the half form reads 16 halves).
func (c *simCtx) wgmmaMMA(st *simWG, grp []*simThread, in *simInstr) {
	p := in.parts
	if len(p) != 8 || p[2] != "sync" || p[3] != "aligned" {
		panic("unsupported wgmma form " + in.op)
	}
	integer := p[5] == "s32"
	kSuffix, nargs := "k16", 8
	switch {
	case integer && (p[6] == "s8" || p[6] == "u8") && (p[7] == "s8" || p[7] == "u8"):
		kSuffix, nargs = "k32", 4
	case p[5] == "f32" && p[6] == p[7] && (p[6] == "bf16" || p[6] == "f16"):
	default:
		panic("unsupported wgmma form " + in.op)
	}
	shape := p[4]
	if !strings.HasPrefix(shape, "m64n") || !strings.HasSuffix(shape, kSuffix) {
		panic("unsupported wgmma shape " + shape)
	}
	N, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(shape, "m64n"), kSuffix))
	if err != nil || N < 8 || N > 256 || N%8 != 0 {
		panic("unsupported wgmma shape " + shape)
	}
	if len(in.args) != nargs {
		panic(fmt.Sprintf("%s takes %d operands, found %d", in.op, nargs, len(in.args)))
	}
	if !integer {
		for i, want := range []string{"1", "1", "0", "0"} {
			if got := strconv.FormatUint(c.val(grp[0], in.args[4+i]), 10); got != want {
				panic(fmt.Sprintf("%s: operand %d is %s; the simulator runs imm-scale 1 and K-major operands (trans 0)", in.op, 5+i, got))
			}
		}
	}
	d := in.args[0].vec
	if len(d) != N/2 {
		panic(fmt.Sprintf("%s writes %d registers, not %d", in.op, len(d), N/2))
	}
	da, db := c.val(grp[0], in.args[1]), c.val(grp[0], in.args[2])
	scale := c.val(grp[0], in.args[3]) != 0
	for _, t := range grp {
		if c.val(t, in.args[1]) != da || c.val(t, in.args[2]) != db || (c.val(t, in.args[3]) != 0) != scale {
			panic(fmt.Sprintf("threads of a warpgroup give %s different descriptors or scale-d", in.op))
		}
	}
	seen := map[uint64]bool{}
	// operand reads rows of 32 bytes of K: 16 halves, or 32 bytes of typ
	operand := func(desc uint64, rows int, typ string) [][32]float64 {
		if desc>>62 != 1 || (desc>>49)&7 != 0 {
			panic(fmt.Sprintf("descriptor %#x: the simulator runs the 128-byte swizzle with base offset 0", desc))
		}
		start := (desc & 0x3fff) << 4
		stride := ((desc >> 32) & 0x3fff) << 4
		out := make([][32]float64, rows)
		for r := 0; r < rows; r++ {
			for b := 0; b < 32; b++ {
				x := start + uint64(r/8)*stride + uint64(r%8)*128 + uint64(b)
				x ^= ((x >> 7) & 7) << 4
				if x+1 > uint64(len(c.shared)) {
					panic(fmt.Sprintf("wgmma operand byte %d past %d bytes of shared memory", x, len(c.shared)))
				}
				switch {
				case integer:
					out[r][b] = float64(byteValue(uint64(c.shared[x]), 0, typ))
				case b%2 == 0:
					out[r][b/2] = halfValue(c.half16(x), typ)
				}
				if chunk := x &^ 15; !seen[chunk] {
					seen[chunk] = true
					var rd simWGRead
					rd.addr = chunk
					copy(rd.data[:], c.shared[chunk:chunk+16])
					st.open = append(st.open, rd)
				}
			}
		}
		return out
	}
	A, B := operand(da, 64, p[6]), operand(db, N, p[7])
	kN := 16
	if integer {
		kN = 32
	}
	for i, t := range grp {
		q, l := i/32, i%32
		g, tt := l/4, l%4
		for idx := range d {
			j, h, cc := idx/4, (idx/2)%2, idx%2
			m, n := 16*q+g+8*h, 8*j+2*tt+cc
			if integer {
				// exact in float64: 32 products below 2^16 and a 32-bit sum
				s := int64(0)
				if scale {
					s = int64(int32(uint32(c.val(t, d[idx]))))
				}
				for k := 0; k < kN; k++ {
					s += int64(A[m][k] * B[n][k])
				}
				t.regs[d[idx].reg] = uint64(uint32(s))
				continue
			}
			s := 0.0
			if scale {
				s = float64(f32of(c.val(t, d[idx])))
			}
			for k := 0; k < kN; k++ {
				s += A[m][k] * B[n][k]
			}
			t.regs[d[idx].reg] = bitsF32(float32(s))
		}
	}
}

// wgmmaSrc adds to matmulSrc matmuls whose K runs through the stages
// several times (10 and 8 steps of 64).
const wgmmaSrc = matmulSrc + `
func.func @long_tb(%x: tensor<?x640xbf16>, %w: tensor<136x640xbf16>) -> tensor<?x136xbf16> {
  %y = graph.matmul %x, %w {transpose_b = true} : (tensor<?x640xbf16>, tensor<136x640xbf16>) -> tensor<?x136xbf16>
  return %y : tensor<?x136xbf16>
}
func.func @wide(%x: tensor<?x256xbf16>, %w: tensor<320x256xbf16>, %b: tensor<320xbf16>) -> tensor<?x320xbf16> {
  %m = graph.matmul %x, %w {transpose_b = true} : (tensor<?x256xbf16>, tensor<320x256xbf16>) -> tensor<?x320xbf16>
  %y = graph.add %m, %b : (tensor<?x320xbf16>, tensor<320xbf16>) -> tensor<?x320xbf16>
  return %y : tensor<?x320xbf16>
}
func.func @rows1(%x: tensor<1x64xbf16>, %w: tensor<8192x64xbf16>) -> tensor<1x8192xbf16> {
  %y = graph.matmul %x, %w {transpose_b = true} : (tensor<1x64xbf16>, tensor<8192x64xbf16>) -> tensor<1x8192xbf16>
  return %y : tensor<1x8192xbf16>
}
func.func @rows4096(%x: tensor<4096x64xbf16>, %w: tensor<8192x64xbf16>) -> tensor<4096x8192xbf16> {
  %y = graph.matmul %x, %w {transpose_b = true} : (tensor<4096x64xbf16>, tensor<8192x64xbf16>) -> tensor<4096x8192xbf16>
  return %y : tensor<4096x8192xbf16>
}
func.func @narrow(%x: tensor<67x640xbf16>, %w: tensor<136x640xbf16>) -> tensor<67x136xbf16> {
  %y = graph.matmul %x, %w {transpose_b = true} : (tensor<67x640xbf16>, tensor<136x640xbf16>) -> tensor<67x136xbf16>
  return %y : tensor<67x136xbf16>
}
func.func @long_swiglu(%x: tensor<?x512xf16>, %wg: tensor<136x512xf16>, %wu: tensor<136x512xf16>) -> tensor<?x136xf16> {
  %g = graph.matmul %x, %wg {transpose_b = true} : (tensor<?x512xf16>, tensor<136x512xf16>) -> tensor<?x136xf16>
  %u = graph.matmul %x, %wu {transpose_b = true} : (tensor<?x512xf16>, tensor<136x512xf16>) -> tensor<?x136xf16>
  %s = graph.silu %g : tensor<?x136xf16>
  %y = graph.mul %s, %u : tensor<?x136xf16>
  return %y : tensor<?x136xf16>
}
`

// withWGMMA runs f with the wgmma form on.
func withWGMMA(f func()) { withForm(true, f) }

// mmaSync turns the wgmma form off for the rest of test t.
// (The decode form of few rows is off too: TestDecodeForm and
// TestSimulatedDecode check it.)
func mmaSync(t *testing.T) {
	old, oldDecode := WGMMA, TCDecode
	WGMMA, TCDecode = false, false
	t.Cleanup(func() { WGMMA, TCDecode = old, oldDecode })
}

// withForm runs f with the wgmma form on or off and the decode form off.
func withForm(wg bool, f func()) {
	old, oldDecode := WGMMA, TCDecode
	WGMMA, TCDecode = wg, false
	defer func() { WGMMA, TCDecode = old, oldDecode }()
	f()
}

// TestWGMMAForm checks which kernels take the wgmma form when it is on:
// those with every B [n, k], rows 16-byte aligned and K a multiple of 64;
// the others keep mma.sync, and a module with wgmma targets sm_90a.
func TestWGMMAForm(t *testing.T) {
	var files map[string]string
	withWGMMA(func() { files = emitFiles(t, wgmmaSrc) })
	for _, fn := range []string{"tb", "kv", "deep_tb", "deep_swiglu", "long_tb", "long_swiglu", "wide"} {
		text := files[fn+".ptx"]
		checkText(t, fn, text)
		assert.Contains(t, text, ".target sm_90a\n", fn)
		assert.NotContains(t, text, "mma.sync", fn)
		assert.NotContains(t, text, "ldmatrix", fn)
		assert.Contains(t, text, "fence.proxy.async.shared::cta", fn)
		assert.Contains(t, text, "wgmma.wait_group.sync.aligned \t1;", fn)
	}
	// one dot product of more than 128 columns: tiles of 128 x 256, where
	// the rows are `?` or fill the SMs with them (32 x 32 tiles), not
	// where they leave them idle (one row: 32 tiles)
	for _, fn := range []string{"tb", "deep_tb", "long_tb", "wide", "rows4096"} {
		assert.Contains(t, files[fn+".ptx"], "// Matmul on tensor cores: CTA tile 128 x 256 x 64, 256 threads (2 warpgroups of 64 x 256)", fn)
	}
	// `?` rows: the wide kernel and its 128-column twin, the launcher
	// choosing by the SM count; static rows: one kernel
	for _, fn := range []string{"tb", "deep_tb", "long_tb", "wide"} {
		assert.Contains(t, files[fn+".ptx"], ".visible .entry "+fn+"_k0"+wgTwinSuffix+"(", fn)
		assert.Contains(t, files[fn+".py"], fmt.Sprintf("    if _grid_%s_k0(sm, ", fn), fn)
		assert.Contains(t, files[fn+".py"], fmt.Sprintf(`_launch_mm(fns, "%s_k0%s", _grid_%s_k0%s(sm, `, fn, wgTwinSuffix, fn, wgTwinSuffix), fn)
		assert.Equal(t, 1, strings.Count(files[fn+".ptx"], "CTA tile 128 x 128 x 64"), fn)
		assert.Contains(t, files[fn+".ptx"], "// The 128-column twin of the kernel above", fn)
	}
	for _, fn := range []string{"rows4096", "rows1", "narrow", "kv"} {
		assert.NotContains(t, files[fn+".ptx"], wgTwinSuffix, fn)
	}
	for _, fn := range []string{"kv", "deep_swiglu", "long_swiglu", "rows1", "narrow"} {
		assert.Contains(t, files[fn+".ptx"], "// Matmul on tensor cores: CTA tile 128 x 128 x 64, 256 threads (2 warpgroups of 64 x 128)", fn)
	}
	assert.Equal(t, 4, strings.Count(files["long_tb.ptx"], "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"))
	assert.Equal(t, 8, strings.Count(files["long_swiglu.ptx"], "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"))
	assert.Contains(t, files["long_tb.py"], `("long_tb_k0", 256, 197632)`, "4 stages of 48 KiB and 1 KiB to align them")
	assert.Contains(t, files["long_swiglu.py"], `("long_swiglu_k0", 256, 197632)`, "4 stages of 48 KiB and 1 KiB")
	for _, fn := range []string{"mm_bf16", "mm_f16", "bmm_bias", "silu_res", "swiglu", "deep_kn"} {
		text := files[fn+".ptx"]
		assert.Contains(t, text, ".target sm_90\n", fn)
		assert.Contains(t, text, "mma.sync.aligned.m16n8k16", fn)
		assert.NotContains(t, text, "wgmma", fn)
	}
}

// TestSimulatedWGMMA runs the wgmma kernels in the simulator against the
// loop interpreter within TestSimulatedMatMul's bound: rows past a tile
// and a single row, one and two dot products, K of 1 to 10 steps (5
// stages for 128 x 128 tiles, 4 for 128 x 256 or two dot products),
// split-K off and on, and both kernels of a `?`-row matmul: the
// 128-column twin where the wide tiles would leave the 132 SMs idle (all
// these sizes), the wide kernel where they fill them (the SMs set to 1).
func TestSimulatedWGMMA(t *testing.T) {
	withWGMMA(func() {
		m := lower(t, wgmmaSrc, fullPipeline, "h200")
		g, err := parser.Parse("test.tir", wgmmaSrc)
		require.NoError(t, err)
		var ran []string
		simTwins = &ran
		defer func() { simTwins = nil }()
		cases := []mmCase{
			{"tb", 130, 64, true}, {"tb", 1, 64, true},
			{"kv", 130, 64, true},
			{"deep_tb", 130, 192, true},
			{"deep_swiglu", 5, 320, false},
			{"long_tb", 67, 640, true}, {"long_tb", 3, 640, true},
			{"wide", 67, 256, true},
			{"long_swiglu", 5, 512, false},
		}
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/%d", c.fn, c.rows), func(t *testing.T) {
				checkMatMul(t, m, g, c)
			})
		}
		assert.Contains(t, ran, "tb_k0"+wgTwinSuffix)
		assert.Contains(t, ran, "long_tb_k0"+wgTwinSuffix)
		assert.NotContains(t, ran, "long_tb_k0")
		// the parts forced: whole (every slot refilled while the wgmma of
		// the step before reads another), and 3 uneven parts
		defer func(old int64) { simSplitK = old }(simSplitK)
		for _, split := range []int64{1, 3} {
			simSplitK = split
			cs := []mmCase{{"long_swiglu", 5, 512, false}}
			if split == 1 {
				cs = append(cs, mmCase{"long_tb", 67, 640, true})
			}
			for _, c := range cs {
				t.Run(fmt.Sprintf("%s/%d/split%d", c.fn, c.rows, split), func(t *testing.T) {
					checkMatMul(t, m, g, c)
				})
			}
		}
		// the wide kernels of `?` rows
		simSplitK = 0
		defer func(old int64) { simSMs = old }(simSMs)
		simSMs = 1
		ran = nil
		for _, c := range []mmCase{{"tb", 130, 64, true}, {"long_tb", 67, 640, true}, {"wide", 67, 256, true}} {
			t.Run(fmt.Sprintf("%s/%d/wide", c.fn, c.rows), func(t *testing.T) {
				checkMatMul(t, m, g, c)
			})
		}
		assert.Equal(t, []string{"tb_k0", "long_tb_k0", "wide_k0"}, ran)
	})
}

// TestSimulatedWGMMARace checks the simulator's check on stages read by
// a wgmma in flight: with two steps' wgmma in flight instead of one, the
// copy of step kt refills the slot step kt-2 may still read, and the
// simulator faults.
func TestSimulatedWGMMARace(t *testing.T) {
	withWGMMA(func() {
		m := lower(t, wgmmaSrc, fullPipeline, "h200")
		g, err := parser.Parse("test.tir", wgmmaSrc)
		require.NoError(t, err)
		files, err := emitted(m)
		require.NoError(t, err)
		bad := make([]File, len(files))
		copy(bad, files)
		found := false
		for i, f := range bad {
			if f.Name == "long_tb.ptx" {
				require.Contains(t, f.Text, "wgmma.wait_group.sync.aligned \t1;")
				bad[i].Text = strings.ReplaceAll(f.Text, "wgmma.wait_group.sync.aligned \t1;", "wgmma.wait_group.sync.aligned \t2;")
				found = true
			}
		}
		require.True(t, found)
		emittedPTX.Lock()
		emittedPTX.files[m.Operation] = bad
		emittedPTX.Unlock()
		gf, _ := g.Lookup("long_tb")
		defer func(old int64) { simSplitK = old }(simSplitK)
		simSplitK = 1
		_, err = simRunFunc(m, "long_tb", matmulInputs(gf, 130, 7))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "changed before the wgmma.wait_group that retires it")
	})
}
