package ptx

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	geval "github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

// residentSrc normalises rows of 61440 bf16: on an h200 a resident split
// of S = 4 instances of 15360 per row (lowering/resident.go), which take
// tickets and meet at a group sync; and rows of 256000 (a vocabulary's
// logits, bench/gpu/workloads/softmax_256000.tir), S = 16 of 16000, whose
// partial results several threads of each CTA read after the sync.
const residentSrc = `
func.func @softmax(%x: tensor<?x61440xbf16>) -> tensor<?x61440xbf16> {
  %y = graph.softmax %x {axis = -1} : tensor<?x61440xbf16>
  return %y : tensor<?x61440xbf16>
}
func.func @log_softmax(%x: tensor<?x61440xbf16>) -> tensor<?x61440xbf16> {
  %y = graph.log_softmax %x {axis = -1} : tensor<?x61440xbf16>
  return %y : tensor<?x61440xbf16>
}
func.func @softmax_vocab(%s: tensor<?x256000xbf16>) -> tensor<?x256000xbf16> {
  %x = graph.cast %s : (tensor<?x256000xbf16>) -> tensor<?x256000xf32>
  %p = graph.softmax %x {axis = -1} : tensor<?x256000xf32>
  %y = graph.cast %p : (tensor<?x256000xf32>) -> tensor<?x256000xbf16>
  return %y : tensor<?x256000xbf16>
}
`

// residentRows writes row patterns into x (rows of cols), one per row,
// cycling through kinds: extremes in different splits of a row, so that
// the combine of the splits' partial maxima and sums matters.
func residentRows(kinds ...string) func([]*geval.Tensor) {
	return func(in []*geval.Tensor) {
		x := in[0]
		cols := int(x.Shape[1])
		rng := rand.New(rand.NewSource(7))
		for r := 0; r < int(x.Shape[0]); r++ {
			row := x.Data[r*cols : (r+1)*cols]
			switch kinds[r%len(kinds)] {
			case "random": // as randomInput made it
			case "peak": // one large value in the third split
				for j := range row {
					row[j] = -60
				}
				row[40000] = 60
			case "ramp":
				for j := range row {
					row[j] = float64(j)/float64(cols)*100 - 50
				}
			case "last": // -inf but in the last split
				for j := range row {
					row[j] = math.Inf(-1)
				}
				row[cols-1] = 1
				row[cols-5000] = 0.5
			case "ninf": // all -inf: NaN
				for j := range row {
					row[j] = math.Inf(-1)
				}
			case "huge": // near bf16's largest, +inf in the second split
				for j := range row {
					row[j] = rng.NormFloat64() * 1e38
				}
				row[20000] = math.Inf(1)
			case "nan": // one NaN in the first split
				row[123] = math.NaN()
			case "split0": // finite in the first split only
				for j := range row {
					if j >= cols/4 {
						row[j] = math.Inf(-1)
					}
				}
			}
			for j := range row {
				row[j] = numeric.RoundTo(row[j], x.Elem)
			}
		}
	}
}

// TestSimulatedResident runs the resident splits of softmax and
// log_softmax in the simulator against the loop interpreter: 1 to 3 rows
// of extreme values, the CTAs started first to last and last to first
// (and their threads), all at once or at most S or S+1 at a time (the
// tickets keep that from deadlocking; a cluster's CTAs start together);
// every launch must leave its ticket and group counters at zero
// (simRunFunc checks). The simulator runs a CTA until it spins at the
// sync, so that one that did not wait would read the partial results of
// instances that have not stored them. Groups of S = 4 run as
// thread-block clusters exchanging their partials in distributed shared
// memory (the default), as clusters exchanging them through global memory
// and with the counters.
func TestSimulatedResident(t *testing.T) {
	m := lower(t, residentSrc, residentPipeline, "h200")
	text := ir.Print(m.Operation, ir.PrintOptions{})
	require.Equal(t, 3, strings.Count(text, `schedule = "resident"`))
	require.Equal(t, 3, strings.Count(text, "loop.group_sync"))
	require.Contains(t, text, "memref<?x4xf32, dram>")  // S = 4
	require.Contains(t, text, "memref<?x16xf32, dram>") // S = 16
	files, err := emitted(m)
	require.NoError(t, err)
	var ptx strings.Builder
	for _, f := range files {
		ptx.WriteString(f.Text)
	}
	// the two groups of 4 are clusters; the group of 16 meets on counters
	require.Equal(t, 2, strings.Count(ptx.String(), ".reqnctapercluster 4, 1, 1"))
	require.Equal(t, 2, strings.Count(ptx.String(), "barrier.cluster.wait.acquire.aligned"))
	require.Equal(t, 1, strings.Count(ptx.String(), "red.release.gpu.global.add.u32"))
	// the clusters exchange their partials in distributed shared memory:
	// two buffers of 4 slots, each stored into the 4 CTAs
	require.Equal(t, 2, strings.Count(ptx.String(), "barrier.cluster.arrive.relaxed.aligned"))
	require.Equal(t, 2*2*4, strings.Count(ptx.String(), "mapa.shared::cluster.u64"))
	require.Equal(t, 2*2*4, strings.Count(ptx.String(), "st.shared::cluster.f32"))
	counters := lower(t, residentSrc, residentPipeline, "h200")
	l2 := lower(t, residentSrc, residentPipeline, "h200")
	defer func() {
		simResident, simReverseCTAs, simReverseThreads, clusterGroups, clusterExchange = 0, false, false, true, true
	}()
	rows := []struct {
		n     int64
		kinds []string
	}{
		{1, []string{"peak"}},
		{2, []string{"last", "huge"}},
		{3, []string{"random", "ramp", "ninf"}},
		{3, []string{"nan", "split0", "peak"}},
	}
	for _, r := range []struct {
		kinds   []string
		reverse bool
	}{{[]string{"peak"}, true}, {[]string{"random", "last"}, false}} {
		t.Run(fmt.Sprintf("softmax_vocab/%s/reverse=%v", strings.Join(r.kinds, "_"), r.reverse), func(t *testing.T) {
			simReverseCTAs, simReverseThreads = r.reverse, r.reverse
			defer func() { simReverseCTAs, simReverseThreads = false, false }()
			c := simCase{fn: "softmax_vocab", shapes: [][]int64{{int64(len(r.kinds)), 256000}}, ulps: 1, prepare: residentRows(r.kinds...)}
			runSimCase(t, m, c, r.kinds[0] == "random")
		})
	}
	for _, form := range []struct {
		name string
		m    ir.Module
	}{{"clusters", m}, {"counters", counters}, {"clusters-l2", l2}} {
		for _, fn := range []string{"softmax", "log_softmax"} {
			for ri, r := range rows {
				for _, sched := range []struct {
					resident int
					reverse  bool
				}{{0, false}, {0, true}, {4, false}, {5, true}} {
					name := fmt.Sprintf("%s/%s/rows%d_%s/resident=%d/reverse=%v", form.name, fn, r.n, strings.Join(r.kinds, "_"), sched.resident, sched.reverse)
					if testing.Short() && (ri > 1 || sched.resident > 0) {
						continue
					}
					t.Run(name, func(t *testing.T) {
						simResident, simReverseCTAs, simReverseThreads = sched.resident, sched.reverse, sched.reverse
						clusterGroups = form.name != "counters"
						clusterExchange = form.name == "clusters"
						defer func() {
							simResident, simReverseCTAs, simReverseThreads, clusterGroups, clusterExchange = 0, false, false, true, true
						}()
						c := simCase{fn: fn, shapes: [][]int64{{r.n, 61440}}, ulps: 1, prepare: residentRows(r.kinds...)}
						runSimCase(t, form.m, c, r.kinds[0] == "random")
					})
				}
			}
		}
	}
}

// With fewer CTAs at once than a group's instances meeting on counters,
// the first group never completes: the simulator reports the deadlock
// rather than hanging. (A cluster's CTAs start together.)
func TestSimulatedResidentDeadlock(t *testing.T) {
	clusterGroups = false
	m := lower(t, residentSrc, residentPipeline, "h200")
	simResident = 3
	defer func() { simResident, clusterGroups = 0, true }()
	x := geval.NewTensor(ir.BF16, []int64{2, 61440})
	_, err := simRunFunc(m, "softmax", []*geval.Tensor{x})
	require.Error(t, err)
	require.Contains(t, err.Error(), "deadlock")
}

// residentPipeline is fullPipeline with resident splits of at most 64 KiB
// (counted as f32)
// (lower-to-loops{resident=true}, not the default).
const residentPipeline = "canonicalize,cse,legalize-numerics,decompose,fuse,canonicalize,cse,dce,lower-to-loops{resident=true,resident-bytes=65536,split-rows-below=1},sram-alloc"

// rowSrc normalises rows of 8192 bf16, short enough for one CTA: with
// resident splits a split of S = 1, the row copied whole into shared
// memory as loaded (lowering/resident.go's residentRow) by bulk copies.
const rowSrc = `
func.func @softmax(%s: tensor<?x8192xbf16>) -> tensor<?x8192xbf16> {
  %x = graph.cast %s : (tensor<?x8192xbf16>) -> tensor<?x8192xf32>
  %p = graph.softmax %x {axis = -1} : tensor<?x8192xf32>
  %y = graph.cast %p : (tensor<?x8192xf32>) -> tensor<?x8192xbf16>
  return %y : tensor<?x8192xbf16>
}
func.func @log_softmax(%x: tensor<?x8192xbf16>) -> tensor<?x8192xbf16> {
  %y = graph.log_softmax %x {axis = -1} : tensor<?x8192xbf16>
  return %y : tensor<?x8192xbf16>
}
`

// TestSimulatedResidentRow runs a split of one (a row per CTA, copied into
// shared memory by bulk copies, no group) in the simulator against the
// loop interpreter, as bulk copies and as the plain loop (bulkCopies off),
// on rows of extreme values, threads first to last and last to first: the
// simulator lands the copies only when a thread waits, so a thread that
// read the row before the mbarrier's phase completed would read stale
// shared memory.
func TestSimulatedResidentRow(t *testing.T) {
	m := lower(t, rowSrc, residentPipeline, "h200")
	text := ir.Print(m.Operation, ir.PrintOptions{})
	require.Equal(t, 2, strings.Count(text, `schedule = "resident"`))
	require.NotContains(t, text, "loop.group_sync")
	require.Equal(t, 2, strings.Count(text, "loop.alloc {offset = 0} : memref<8192xbf16, sram>"))
	files, err := emitted(m)
	require.NoError(t, err)
	var ptx strings.Builder
	for _, f := range files {
		ptx.WriteString(f.Text)
	}
	require.Equal(t, 2, strings.Count(ptx.String(), "mbarrier.try_wait.parity.shared::cta.b64"))
	require.Regexp(t, `(?s)(mov.b32 \t%r\d+, 16384;\n\t@%p\d+ mbarrier.arrive.expect_tx.shared::cta.b64 \t%rd\d+, \[%rd\d+\+\d+\], %r\d+;.*){2}`, ptx.String())
	require.Equal(t, 2, strings.Count(ptx.String(), ".global.mbarrier::complete_tx::bytes"))
	// the loop form from a module of its own (the emitted PTX is cached
	// per module)
	loops := lower(t, rowSrc, residentPipeline, "h200")
	defer func() { bulkCopies, simReverseThreads = true, false }()
	for _, bulk := range []bool{true, false} {
		mod := m
		if !bulk {
			mod = loops
		}
		for _, fn := range []string{"softmax", "log_softmax"} {
			for _, rev := range []bool{false, true} {
				kinds := []string{"random", "ninf", "nan", "ramp", "last", "split0"}
				t.Run(fmt.Sprintf("%s/bulk=%v/reverse=%v", fn, bulk, rev), func(t *testing.T) {
					bulkCopies, simReverseThreads = bulk, rev
					c := simCase{fn: fn, shapes: [][]int64{{int64(len(kinds)), 8192}}, ulps: 1, prepare: residentRows(kinds...)}
					runSimCase(t, mod, c, true)
				})
			}
		}
	}
}

// copiesPipeline is fullPipeline with row copies (not the default).
const copiesPipeline = "canonicalize,cse,legalize-numerics,decompose,fuse,canonicalize,cse,dce,lower-to-loops{row-copies=true},sram-alloc"

// copiesSrc is add + RMSNorm and RMSNorm -> SiLU -> Mul over rows of 2048
// bf16: with row copies asked for, one-pass kernels that copy the
// inputs they read twice (x and r; x) into shared memory as loaded
// (lowering's rowCopies) and compute both phases from the copies.
const copiesSrc = `
func.func @add_rmsnorm(%x: tensor<?x2048xbf16>, %r: tensor<?x2048xbf16>, %w: tensor<2048xbf16>)
    -> (tensor<?x2048xbf16>, tensor<?x2048xbf16>) {
  %h = graph.add %x, %r : tensor<?x2048xbf16>
  %n = graph.rmsnorm %h, %w {eps = 1.0e-05 : f32} : (tensor<?x2048xbf16>, tensor<2048xbf16>) -> tensor<?x2048xbf16>
  return %h, %n : tensor<?x2048xbf16>, tensor<?x2048xbf16>
}
func.func @rms_silu_mul(%x: tensor<?x2048xbf16>, %w: tensor<2048xbf16>, %z: tensor<?x2048xbf16>) -> tensor<?x2048xbf16> {
  %n = graph.rmsnorm %x, %w {eps = 1.0e-05 : f32} : (tensor<?x2048xbf16>, tensor<2048xbf16>) -> tensor<?x2048xbf16>
  %s = graph.silu %n : tensor<?x2048xbf16>
  %y = graph.mul %s, %z : tensor<?x2048xbf16>
  return %y : tensor<?x2048xbf16>
}
`

// TestSimulatedRowCopies runs the one-pass kernels whose inputs are
// copied into shared memory, by bulk copies and as the plain loop, threads
// first to last and last to first, against the loop interpreter on random
// rows with the special values (±inf, NaN, subnormals) in; the sums of
// squares are taken in another order than the interpreter's, so the
// bound is an ULP or 1e-3 of the results' RMS.
func TestSimulatedRowCopies(t *testing.T) {
	m := lower(t, copiesSrc, copiesPipeline, "h200")
	text := ir.Print(m.Operation, ir.PrintOptions{})
	require.Equal(t, 2, strings.Count(text, `schedule = "one-pass"`))
	require.Equal(t, 3, strings.Count(text, ": memref<2048xbf16, sram>"), "x and r copied, then x")
	files, err := emitted(m)
	require.NoError(t, err)
	var ptx strings.Builder
	for _, f := range files {
		ptx.WriteString(f.Text)
	}
	require.Equal(t, 3, strings.Count(ptx.String(), ".global.mbarrier::complete_tx::bytes"))
	// add + RMSNorm's two copies share one phase of the mbarrier: armed
	// with both rows' bytes, waited for once
	require.Equal(t, 2, strings.Count(ptx.String(), "mbarrier.try_wait.parity.shared::cta.b64"))
	require.Regexp(t, `mov.b32 \t%r\d+, 8192;\n\t@%p\d+ mbarrier.arrive.expect_tx`, ptx.String())
	loops := lower(t, copiesSrc, copiesPipeline, "h200")
	defer func() { bulkCopies, simReverseThreads = true, false }()
	for _, bulk := range []bool{true, false} {
		mod := m
		if !bulk {
			mod = loops
		}
		for _, c := range []simCase{
			{fn: "add_rmsnorm", shapes: [][]int64{{5, 2048}, {5, 2048}, {2048}}, ulps: 1, rel: 1e-3},
			{fn: "rms_silu_mul", shapes: [][]int64{{5, 2048}, {2048}, {5, 2048}}, ulps: 1, rel: 1e-3},
		} {
			for _, rev := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/bulk=%v/reverse=%v", c.fn, bulk, rev), func(t *testing.T) {
					bulkCopies, simReverseThreads = bulk, rev
					runSimCase(t, mod, c, true)
				})
			}
		}
	}
}

// The resident splits (clusters, counters, rows copied whole) and the row
// copies use only instructions ptxas has assembled (verifiedOpcodes), and
// their registers are declared.
func TestResidentTextVerified(t *testing.T) {
	for _, c := range []struct{ name, src, pipeline string }{
		{"resident", residentSrc, residentPipeline},
		{"row", rowSrc, residentPipeline},
		{"copies", copiesSrc, copiesPipeline},
	} {
		files, err := emitted(lower(t, c.src, c.pipeline, "h200"))
		require.NoError(t, err)
		n := 0
		for _, f := range files {
			if strings.HasSuffix(f.Name, ".ptx") {
				checkText(t, c.name+":"+f.Name, f.Text)
				n++
			}
		}
		require.Positive(t, n, c.name)
	}
	clusterGroups = false
	defer func() { clusterGroups = true }()
	files, err := emitted(lower(t, residentSrc, residentPipeline, "h200"))
	require.NoError(t, err)
	for _, f := range files {
		if strings.HasSuffix(f.Name, ".ptx") {
			checkText(t, "counters:"+f.Name, f.Text)
		}
	}
}
