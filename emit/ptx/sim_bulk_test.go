package ptx

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The simulator's asynchronous bulk copies of sm_90 and the mbarriers they
// complete on (PTX ISA 8.x):
//
//	mbarrier.init.shared::cta.b64 	[mbar], count;
//	mbarrier.arrive.expect_tx.shared::cta.b64 	state, [mbar], bytes;
//	cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes 	[dst], [src], bytes, [mbar];
//	mbarrier.try_wait.parity.shared::cta.b64 	p, [mbar], parity;
//
// An mbarrier is an 8-byte object in shared memory: the parity of its
// current phase (0 after init), the arrivals the phase still waits for
// (init's count at the start of each phase) and its pending transaction
// bytes. An arrive.expect_tx adds its bytes to those, then arrives; a bulk
// copy takes its bytes off when it completes; the phase completes when no
// arrival and no byte is pending: the parity flips and the arrivals start
// again at init's count. A try_wait.parity sets p to whether the phase of
// that parity completed, that is whether the current parity differs.
//
// A copy is in flight from its issue until a thread waits on its mbarrier
// for a phase that has not completed: only then do its bytes land in
// shared memory (read from global memory at issue) and complete on the
// mbarrier, as late as the hardware could deliver them, so that a thread
// that reads the destination before it waits sees the old contents. A CTA
// that exits with a copy in flight is an error (its shared memory would
// be written after it is gone), and so are the misuses the hardware
// faults on or leaves undefined: an address out of shared memory or not
// aligned (8 bytes for an mbarrier, 16 for a copy), a copy of a size not
// a positive multiple of 16, an mbarrier used before its init, written by
// a store or a copy, or arrived at more often than its count in a phase.
//
// A thread at a try_wait that would return false yields: the others run
// to their sync points, and it goes on when its phase completes (the
// scheduler in runCTA checks after every pass over the threads). Only when
// nothing else can run do the waiting threads' try_waits return false
// (time out), so that a wait that is not a spin loop goes on; threads that
// come back to wait in the same state twice are a deadlock, an error
// rather than a hang.

// simMbar is an initialised mbarrier: the parity of its current phase, the
// arrivals a phase expects and those it still waits for, and its pending
// transaction bytes (negative while copies completed bytes no expect_tx
// has announced yet).
type simMbar struct {
	expected, pending int64
	tx                int64
	phase             uint64
}

// simBulk is a bulk copy in flight: the bytes it read from global memory
// at its issue, their destination in shared memory, and the mbarrier it
// completes on.
type simBulk struct {
	dst  uint64
	data []byte
	mbar uint64
}

// simMaxTx bounds an mbarrier's transaction count either way (2^20 - 1).
const simMaxTx = 1<<20 - 1

// sharedAddr is the address of memory operand o of an mbarrier
// instruction or bulk copy: n bytes of shared memory at a multiple of
// align.
func (c *simCtx) sharedAddr(t *simThread, o simOpnd, n, align uint64, what string) uint64 {
	if o.kind != sMem || o.base.kind == sLabel && o.base.name != SharedName {
		panic(fmt.Sprintf("%s: expects a shared address [reg+offset]", what))
	}
	addr := c.val(t, *o.base) + uint64(o.off)
	if size := uint64(len(c.shared)); addr > size || n > size-addr {
		panic(fmt.Sprintf("%s: %d bytes at shared %d, past the %d bytes of shared memory", what, n, int64(addr), size))
	}
	if addr%align != 0 {
		panic(fmt.Sprintf("%s: shared address %d is not a multiple of %d", what, addr, align))
	}
	return addr
}

// mbarAt is the mbarrier at shared address addr, which must be initialised.
func (c *simCtx) mbarAt(addr uint64, what string) *simMbar {
	m, ok := c.mbars[addr]
	if !ok {
		panic(fmt.Sprintf("%s: no mbarrier.init initialised the mbarrier at shared %d", what, addr))
	}
	return m
}

// mbarOverlap faults when n bytes at shared address addr, which what
// writes, overlap an initialised mbarrier.
func (c *simCtx) mbarOverlap(addr uint64, n int, what string) {
	for a := range c.mbars {
		if a < addr+uint64(n) && addr < a+8 {
			panic(fmt.Sprintf("%s of %d bytes at shared %d overwrites the mbarrier at shared %d", what, n, addr, a))
		}
	}
}

// txAdd adds d to m's transaction bytes, within the range the PTX ISA
// gives them.
func (m *simMbar) txAdd(d int64, what string) {
	m.tx += d
	if m.tx > simMaxTx || m.tx < -simMaxTx {
		panic(fmt.Sprintf("%s: the mbarrier's pending transaction bytes reach %d, past 2^20 - 1", what, m.tx))
	}
}

// complete ends m's phase if no arrival and no byte is pending.
func (m *simMbar) complete() {
	if m.pending == 0 && m.tx == 0 {
		m.phase ^= 1
		m.pending = m.expected
	}
}

// mbarrier runs mbarrier.init and mbarrier.arrive{.expect_tx} (try_wait
// is tryWait's).
func (c *simCtx) mbarrier(t *simThread, in *simInstr) {
	a := in.args
	switch in.parts[1] {
	case "init":
		if len(a) != 2 {
			panic("mbarrier.init expects [mbar], count")
		}
		addr := c.sharedAddr(t, a[0], 8, 8, in.op)
		n := int64(c.val(t, a[1]))
		if n < 1 || n > simMaxTx {
			panic(fmt.Sprintf("%s: an expected count of %d, not 1 to 2^20 - 1", in.op, n))
		}
		for _, b := range c.bulk {
			if b.mbar == addr {
				panic(fmt.Sprintf("%s: bulk copies in flight complete on the mbarrier at shared %d", in.op, addr))
			}
			if b.dst < addr+8 && addr < b.dst+uint64(len(b.data)) {
				panic(fmt.Sprintf("%s: a bulk copy in flight writes the mbarrier at shared %d", in.op, addr))
			}
		}
		if c.mbars == nil {
			c.mbars = map[uint64]*simMbar{}
		}
		c.mbars[addr] = &simMbar{expected: n, pending: n}
	case "arrive":
		tx := hasPart(in.parts, "expect_tx")
		if len(a) != 2+btoi(tx) {
			panic(in.op + ": expects state, [mbar] and (with .expect_tx) bytes")
		}
		m := c.mbarAt(c.sharedAddr(t, a[1], 8, 8, in.op), in.op)
		if a[0].kind == sReg {
			// the opaque state: the phase arrived at
			t.regs[a[0].reg] = m.phase
		}
		if tx {
			n := int64(uint32(c.val(t, a[2])))
			if n > simMaxTx {
				panic(fmt.Sprintf("%s: %d transaction bytes, past 2^20 - 1", in.op, n))
			}
			m.txAdd(n, in.op)
		}
		if m.pending--; m.pending < 0 {
			panic(fmt.Sprintf("%s: more arrivals in a phase than mbarrier.init's count %d", in.op, m.expected))
		}
		m.complete()
	default:
		panic("the simulator does not know " + in.op)
	}
	c.events++
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// cpBulk issues `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes
// [dst], [src], bytes, [mbar]`: it reads the source now and puts the copy
// in flight.
func (c *simCtx) cpBulk(t *simThread, in *simInstr) {
	a := in.args
	if len(a) != 4 || a[1].kind != sMem || a[1].base.kind != sReg {
		panic(in.op + ": expects [dst], [src], bytes, [mbar]")
	}
	n := uint64(uint32(c.val(t, a[2])))
	if n == 0 || n%16 != 0 {
		panic(fmt.Sprintf("cp.async.bulk of %d bytes: the size must be a positive multiple of 16", n))
	}
	dst := c.sharedAddr(t, a[0], n, 16, "cp.async.bulk destination")
	src := c.val(t, *a[1].base) + uint64(a[1].off)
	if src%16 != 0 {
		panic(fmt.Sprintf("cp.async.bulk source: global address %#x is not a multiple of 16", src))
	}
	if src < c.mem.base || src-c.mem.base > uint64(len(c.mem.bytes)) || n > uint64(len(c.mem.bytes))-(src-c.mem.base) {
		panic(fmt.Sprintf("cp.async.bulk source: %d bytes at %#x, out of global memory", n, src))
	}
	mbar := c.sharedAddr(t, a[3], 8, 8, "cp.async.bulk mbarrier")
	c.mbarAt(mbar, in.op)
	c.mbarOverlap(dst, int(n), "cp.async.bulk")
	data := append([]byte(nil), c.mem.slice(src, int(n))...)
	c.bulk = append(c.bulk, simBulk{dst: dst, data: data, mbar: mbar})
	c.events++
}

// deliver lands the copies in flight on the mbarrier at mbar, in the order
// of their issue, each completing its bytes on the mbarrier.
func (c *simCtx) deliver(mbar uint64) {
	rest := c.bulk[:0]
	for _, b := range c.bulk {
		if b.mbar != mbar {
			rest = append(rest, b)
			continue
		}
		copy(c.shared[b.dst:], b.data)
		m := c.mbars[mbar]
		m.txAdd(-int64(len(b.data)), "cp.async.bulk")
		m.complete()
		c.events++
	}
	clear(c.bulk[len(rest):])
	c.bulk = rest
}

// tryWait runs `mbarrier.try_wait.parity.shared::cta.b64 p, [mbar], parity`
// for thread t when the phase of that parity completed, or when force (the
// wait timed out): p is whether it completed. It reports whether it ran.
// A phase not yet complete takes the copies in flight on the mbarrier
// first.
func (c *simCtx) tryWait(t *simThread, in *simInstr, force bool) bool {
	a := in.args
	if len(a) < 3 || len(a) > 4 || a[0].kind != sReg {
		panic(in.op + ": expects p, [mbar], parity")
	}
	addr := c.sharedAddr(t, a[1], 8, 8, in.op)
	m := c.mbarAt(addr, in.op)
	parity := c.val(t, a[2]) & 1
	if m.phase == parity {
		c.deliver(addr)
	}
	done := m.phase != parity
	if !done && !force {
		return false
	}
	t.regs[a[0].reg] = uint64(btoi(done))
	t.pc++
	return true
}

// bulkDone faults when copies are in flight as the CTA exits.
func (c *simCtx) bulkDone() {
	if len(c.bulk) > 0 {
		b := c.bulk[0]
		panic(fmt.Sprintf("the CTA exits with %d bulk copies in flight (the first of %d bytes to shared %d, on the mbarrier at shared %d): no thread waited for them",
			len(c.bulk), len(b.data), b.dst, b.mbar))
	}
}

// spinState is what can change while threads wait at try_waits: the
// CTA's mbarriers and shared memory (by its count of events), global
// memory (by its count of writes), every thread's position and registers.
func (c *simCtx) spinState(threads []*simThread) []uint64 {
	s := []uint64{uint64(c.events), uint64(c.mem.writes)}
	for _, t := range threads {
		s = append(s, uint64(t.pc), uint64(t.blocked), uint64(btoi(t.done)))
		s = append(s, t.regs...)
	}
	return s
}

// mbarDeadlock describes threads that wait at try_waits for phases that
// never complete.
func (c *simCtx) mbarDeadlock(threads []*simThread) string {
	var ids []string
	var first *simThread
	n := 0
	for _, t := range threads {
		if t.blocked == 5 {
			if first == nil {
				first = t
			}
			if n++; n <= 8 {
				ids = append(ids, strconv.Itoa(t.tid))
			}
		}
	}
	if n > 8 {
		ids = append(ids, "...")
	}
	in := &c.e.code[first.pc]
	addr := c.val(first, *in.args[1].base) + uint64(in.args[1].off)
	m := c.mbars[addr]
	return fmt.Sprintf("deadlock: %d threads (%s) wait at `%s` for a phase of the mbarrier at shared %d that never completes "+
		"(parity %d, %d of %d arrivals and %d transaction bytes pending, no copy in flight on it); the other threads have exited or wait at barriers",
		n, strings.Join(ids, ", "), in.text, addr, m.phase, m.pending, m.expected, m.tx)
}

// bulkSpanPTX copies spans of 3072 bytes from global memory (parameter 0)
// into shared memory by three bulk copies of thread 0 (the second's size
// in a register) completing on an mbarrier after the span, waits for them
// with every thread, and copies them back out (to parameter 1) by words
// of each thread: ROUNDS spans per CTA, one after the other in the same
// shared memory, the parity register following the mbarrier's phases.
const bulkSpanPTX = `
.version 8.0
.target sm_90
.address_size 64

// Dynamic shared memory: each launch gives its size.
.extern .shared .align 16 .b8 tf_smem[];

.visible .entry bulk_span(
	.param .u64 bulk_span_param_0,
	.param .u64 bulk_span_param_1
)
.reqntid 64, 1, 1
{
	.reg .pred 	%p<8>;
	.reg .b32 	%r<24>;
	.reg .b64 	%rd<24>;

	ld.param.u64 	%rd1, [bulk_span_param_0];
	ld.param.u64 	%rd2, [bulk_span_param_1];
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, %ctaid.x;
	mov.u64 	%rd9, tf_smem;
	setp.eq.u32 	%p5, %r1, 0;
	@%p5 mbarrier.init.shared::cta.b64 	[%rd9+3072], 1;
	@%p5 fence.mbarrier_init.release.cluster;
	mov.b32 	%r12, 0;
	mov.b32 	%r5, 1024;
	mov.u32 	%r20, 0;
$L_round:
	// the span: (ctaid * ROUNDS + round) * 3072 bytes in
	mul.lo.u32 	%r3, %r2, ROUNDS;
	add.u32 	%r3, %r3, %r20;
	cvt.u64.u32 	%rd3, %r3;
	mul.lo.u64 	%rd4, %rd3, 3072;
	add.u64 	%rd17, %rd1, %rd4;
	add.u64 	%rd18, %rd2, %rd4;
	bar.sync 	0;
	@%p5 fence.proxy.async.shared::cta;
	@%p5 mbarrier.arrive.expect_tx.shared::cta.b64 	%rd20, [%rd9+3072], 3072;
	@%p5 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes 	[%rd9+0], [%rd17+0], 1024, [%rd9+3072];
	@%p5 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes 	[%rd9+1024], [%rd17+1024], %r5, [%rd9+3072];
	@%p5 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes 	[%rd9+2048], [%rd17+2048], 1024, [%rd9+3072];
$L_wait:
	mbarrier.try_wait.parity.shared::cta.b64 	%p7, [%rd9+3072], %r12;
	@!%p7 bra 	$L_wait;
	xor.b32 	%r12, %r12, 1;
	// words tid, tid + 64, ... of the span back out
	mul.lo.u32 	%r6, %r1, 4;
$L_out:
	setp.ge.u32 	%p2, %r6, 3072;
	@%p2 bra 	$L_next;
	cvt.u64.u32 	%rd5, %r6;
	add.u64 	%rd6, %rd9, %rd5;
	ld.shared.u32 	%r7, [%rd6+0];
	add.u64 	%rd7, %rd18, %rd5;
	st.global.u32 	[%rd7+0], %r7;
	add.u32 	%r6, %r6, 256;
	bra 	$L_out;
$L_next:
	add.u32 	%r20, %r20, 1;
	setp.lt.u32 	%p3, %r20, ROUNDS;
	@%p3 bra 	$L_round;
	ret;
}
`

// bulkWait is the spin loop of bulkSpanPTX's wait, bulkFlip the flip of
// its parity register after it.
const (
	bulkWait = `$L_wait:
	mbarrier.try_wait.parity.shared::cta.b64 	%p7, [%rd9+3072], %r12;
	@!%p7 bra 	$L_wait;
`
	bulkFlip = "	xor.b32 	%r12, %r12, 1;\n"
)

// bulkSpan is bulkSpanPTX with its rounds per CTA and the edits given
// (pairs of old and new text, each old text once in the kernel).
func bulkSpan(t *testing.T, rounds int, edits ...string) string {
	t.Helper()
	text := strings.ReplaceAll(bulkSpanPTX, "ROUNDS", strconv.Itoa(rounds))
	for i := 0; i+1 < len(edits); i += 2 {
		require.Equal(t, 1, strings.Count(text, edits[i]), "edit %q", edits[i])
		text = strings.Replace(text, edits[i], edits[i+1], 1)
	}
	return text
}

// runBulkSpan runs bulk_span of text over grid CTAs of rounds spans, with
// the threads of each CTA run first to last or last to first between sync
// points, and returns its input and output words.
func runBulkSpan(t *testing.T, text string, grid, rounds int, reverse bool) (in, out []uint32, err error) {
	t.Helper()
	mod, err := parseSim(text)
	require.NoError(t, err)
	defer func(r bool) { simReverseThreads = r }(simReverseThreads)
	simReverseThreads = reverse
	words := grid * rounds * 3072 / 4
	mem := newSimMemory()
	src, dst := mem.alloc(4*words), mem.alloc(4*words)
	in = make([]uint32, words)
	for i := range in {
		in[i] = uint32(i)*2654435761 + 12345
		b := mem.slice(src+uint64(4*i), 4)
		b[0], b[1], b[2], b[3] = byte(in[i]), byte(in[i]>>8), byte(in[i]>>16), byte(in[i]>>24)
	}
	err = mod.launch("bulk_span", grid, 3072+16, []uint64{src, dst}, mem)
	out = make([]uint32, words)
	for i := range out {
		b := mem.slice(dst+uint64(4*i), 4)
		out[i] = uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
	}
	return in, out, err
}

// TestSimBulkCopy copies spans by bulk copies into shared memory and back
// out: the output is the input, with the threads of a CTA run first to
// last (thread 0 issues the copies before the others wait) and last to
// first (the others wait, yielding, before thread 0 issues them).
func TestSimBulkCopy(t *testing.T) {
	for _, grid := range []int{1, 3} {
		for _, reverse := range []bool{false, true} {
			t.Run(fmt.Sprintf("grid%d_reverse%v", grid, reverse), func(t *testing.T) {
				in, out, err := runBulkSpan(t, bulkSpan(t, 1), grid, 1, reverse)
				require.NoError(t, err)
				assert.Equal(t, in, out)
			})
		}
	}
}

// TestSimBulkNoWait checks that the copies are asynchronous: without the
// wait, the CTA exits with its copies in flight (an error); with the wait
// after the threads read the span, a thread that reads before any thread
// waited sees shared memory's old contents.
func TestSimBulkNoWait(t *testing.T) {
	for _, reverse := range []bool{false, true} {
		_, _, err := runBulkSpan(t, bulkSpan(t, 1, bulkWait, ""), 2, 1, reverse)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "bulk copies in flight")
		late := bulkSpan(t, 1, bulkWait+bulkFlip, "", "$L_next:\n", "$L_next:\n"+bulkWait+bulkFlip)
		in, out, err := runBulkSpan(t, late, 2, 1, reverse)
		require.NoError(t, err)
		assert.NotEqual(t, in, out)
		// thread 0 reads its words (0, 64, ...) before any thread waits
		assert.Equal(t, uint32(0xCDCDCDCD), out[0])
		assert.Equal(t, uint32(0xCDCDCDCD), out[64])
	}
}

// TestSimBulkReuse copies three spans per CTA through the same shared
// memory and mbarrier, waiting for phases of parity 0, 1 and 0; without
// the xor that follows the phases, the second wait finds the first
// phase complete (before the second span lands): wrong output or an
// error.
func TestSimBulkReuse(t *testing.T) {
	text := bulkSpan(t, 3)
	require.Contains(t, text, bulkFlip)
	for _, reverse := range []bool{false, true} {
		in, out, err := runBulkSpan(t, text, 2, 3, reverse)
		require.NoError(t, err)
		assert.Equal(t, in, out)
		in, out, err = runBulkSpan(t, bulkSpan(t, 3, bulkFlip, ""), 2, 3, reverse)
		assert.True(t, err != nil || !slices.Equal(in, out), "a wait on a stale parity must show")
	}
	// two spans: the second wait returns at once, the second copies are
	// still in flight at the exit
	_, _, err := runBulkSpan(t, bulkSpan(t, 2, bulkFlip, ""), 1, 2, false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "in flight")
}

// TestSimBulkMisuse checks the faults of bulk copies and mbarriers used
// wrong.
func TestSimBulkMisuse(t *testing.T) {
	for _, c := range []struct {
		name  string
		edits []string
		want  string
	}{
		{"size", []string{"[%rd17+0], 1024,", "[%rd17+0], 1000,"}, "cp.async.bulk of 1000 bytes: the size must be a positive multiple of 16"},
		{"register size", []string{"mov.b32 	%r5, 1024;", "mov.b32 	%r5, 1032;"}, "cp.async.bulk of 1032 bytes"},
		{"no init", []string{"@%p5 mbarrier.init.shared::cta.b64 	[%rd9+3072], 1;\n", ""}, "no mbarrier.init initialised the mbarrier at shared 3072"},
		{"wait on no mbarrier", []string{"%p7, [%rd9+3072]", "%p7, [%rd9+3080]"}, "mbarrier.try_wait.parity.shared::cta.b64: no mbarrier.init initialised the mbarrier at shared 3080"},
		{"misaligned mbarrier", []string{"init.shared::cta.b64 	[%rd9+3072]", "init.shared::cta.b64 	[%rd9+3076]"}, "shared address 3076 is not a multiple of 8"},
		{"misaligned destination", []string{"[%rd9+0], [%rd17+0]", "[%rd9+8], [%rd17+0]"}, "cp.async.bulk destination: shared address 8 is not a multiple of 16"},
		{"misaligned source", []string{"[%rd9+0], [%rd17+0]", "[%rd9+0], [%rd17+8]"}, "is not a multiple of 16"},
		{"past shared memory", []string{"[%rd9+2048], [%rd17+2048]", "[%rd9+4096], [%rd17+2048]"}, "1024 bytes at shared 4096, past the 3088 bytes of shared memory"},
		{"onto the mbarrier", []string{"[%rd9+2048], [%rd17+2048]", "[%rd9+2064], [%rd17+2048]"}, "overwrites the mbarrier at shared 3072"},
		{"bytes never copied", []string{"[%rd9+3072], 3072;", "[%rd9+3072], 4096;"}, "deadlock: 64 threads (0, 1, 2, 3, 4, 5, 6, 7, ...) wait at `mbarrier.try_wait"},
		{"wait before the copies", []string{bulkWait, "", "	bar.sync 	0;\n", "	bar.sync 	0;\n" + bulkWait}, "1 of 1 arrivals and 0 transaction bytes pending"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, reverse := range []bool{false, true} {
				_, _, err := runBulkSpan(t, bulkSpan(t, 1, c.edits...), 2, 1, reverse)
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.want)
			}
		})
	}
	// the forms the simulator runs, and no others
	for _, bad := range []string{
		"mbarrier.try_wait.shared::cta.b64 	%p7, [%rd9+3072], %r12;",
		"mbarrier.init.b64 	[%rd9+3072], 1;",
		"cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes 	[%rd9+0], [%rd17+0], 1024, [%rd9+3072];",
		"fence.proxy.async.local;",
		"fence.mbarrier_init.cluster;",
	} {
		_, err := parseSim(bulkSpan(t, 1, "	ret;\n", "	"+bad+"\n	ret;\n"))
		assert.Error(t, err, bad)
	}
}
