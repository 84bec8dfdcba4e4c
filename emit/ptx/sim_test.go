package ptx

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/x448/float16"

	"github.com/tensorforge/tensorforge/ir/numeric"
)

// This file is an interpreter of the PTX subset the emitter writes, for
// tests: it parses a module, and runs an entry over a grid of CTAs with
// every thread's registers, global and shared memory, warp shuffles,
// barriers, and bulk copies completing on mbarriers (sim_bulk_test.go).
// It checks what the hardware would fault on (a misaligned or
// out-of-bounds access) and what would hang or be undefined (a shuffle
// or barrier some threads do not reach). The approximate instructions
// return the correctly rounded value, nudged by simNudge ULPs so that a
// test can put them at the edge of their documented error.

// simNudge moves the results of ex2.approx by this many ULPs (f32), those
// of rcp.approx by one ULP and those of rsqrt.approx and tanh.approx by
// their documented relative error, in the direction of its sign, to check accuracy bounds at the
// approximation errors the PTX ISA allows.
var simNudge = 0

type simKind uint8

const (
	sReg simKind = iota
	sImm
	sMem
	sVec
	sLabel
	sSpecial
)

type simOpnd struct {
	kind simKind
	reg  int    // register index
	imm  uint64 // immediate bits (integers as two's complement)
	name string // label, special register, parameter or symbol
	base *simOpnd
	off  int64
	vec  []simOpnd
}

type simInstr struct {
	pred   int // -1: none
	neg    bool
	op     string
	parts  []string
	args   []simOpnd
	text   string
	target int // branch target
	sync   int // 1: shfl, 2: bar, 3: barrier.cluster.arrive, 4: barrier.cluster.wait, 5: mbarrier.try_wait
}

type simEntry struct {
	name    string
	params  []string
	reqntid int
	cluster int // .reqnctapercluster (0: none)
	code    []simInstr
	nregs   int
}

// simModule is a parsed PTX module.
type simModule struct {
	entries map[string]*simEntry
}

// parseSim parses the emitter's PTX.
func parseSim(text string) (*simModule, error) {
	mod := &simModule{entries: map[string]*simEntry{}}
	var cur *simEntry
	var regs map[string]int
	var labels map[string]int
	var pending []int // branches, by index, resolved at the end of the entry
	inParams := false
	for n, line := range strings.Split(text, "\n") {
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, ".visible .entry "):
			name := strings.TrimSuffix(strings.TrimPrefix(line, ".visible .entry "), "(")
			cur = &simEntry{name: name}
			mod.entries[name] = cur
			regs, labels, pending = map[string]int{}, map[string]int{}, nil
			inParams = true
			continue
		case inParams && strings.HasPrefix(line, ".param "):
			f := strings.Fields(strings.TrimSuffix(line, ","))
			cur.params = append(cur.params, f[len(f)-1])
			continue
		case inParams && line == ")":
			inParams = false
			continue
		case strings.HasPrefix(line, ".reqnctapercluster"):
			f := strings.Fields(strings.ReplaceAll(strings.TrimPrefix(line, ".reqnctapercluster"), ",", " "))
			v, err := strconv.Atoi(f[0])
			if err != nil {
				return nil, err
			}
			if len(f) != 3 || f[1] != "1" || f[2] != "1" || v < 1 || v > 16 {
				return nil, fmt.Errorf("line %d: the simulator runs clusters of 1 to 16 CTAs along x: %s", n+1, line)
			}
			cur.cluster = v
			continue
		case strings.HasPrefix(line, ".reqntid"):
			f := strings.Fields(strings.ReplaceAll(strings.TrimPrefix(line, ".reqntid"), ",", " "))
			v, err := strconv.Atoi(f[0])
			if err != nil {
				return nil, err
			}
			cur.reqntid = v
			continue
		case line == "{":
			continue
		case line == "}":
			for _, i := range pending {
				in := &cur.code[i]
				t, ok := labels[in.args[0].name]
				if !ok {
					return nil, fmt.Errorf("%s: branch to undefined label %s", cur.name, in.args[0].name)
				}
				in.target = t
			}
			cur.nregs = len(regs)
			cur = nil
			continue
		case strings.HasPrefix(line, "."):
			if cur != nil && !strings.HasPrefix(line, ".reg ") {
				return nil, fmt.Errorf("line %d: unexpected directive in a body: %s", n+1, line)
			}
			continue
		case cur == nil:
			return nil, fmt.Errorf("line %d: text outside an entry: %s", n+1, line)
		case strings.HasSuffix(line, ":"):
			labels[strings.TrimSuffix(line, ":")] = len(cur.code)
			continue
		}
		if !strings.HasSuffix(line, ";") {
			return nil, fmt.Errorf("line %d: instruction without ';': %s", n+1, line)
		}
		body := strings.TrimSuffix(line, ";")
		in := simInstr{pred: -1, text: body}
		if strings.HasPrefix(body, "@") {
			sp := strings.IndexAny(body, " \t")
			p := body[1:sp]
			if strings.HasPrefix(p, "!") {
				in.neg = true
				p = p[1:]
			}
			in.pred = simRegIndex(regs, p)
			body = strings.TrimSpace(body[sp:])
		}
		sp := strings.IndexAny(body, " \t")
		opText := body
		rest := ""
		if sp >= 0 {
			opText, rest = body[:sp], strings.TrimSpace(body[sp:])
		}
		in.op = opText
		in.parts = strings.Split(opText, ".")
		for _, a := range simSplitArgs(rest) {
			o, err := simParseOpnd(a, regs)
			if err != nil {
				return nil, fmt.Errorf("line %d: %v", n+1, err)
			}
			in.args = append(in.args, o)
		}
		if err := simCheckQualifiers(in.parts); err != nil {
			return nil, fmt.Errorf("line %d: %s: %v", n+1, opText, err)
		}
		switch in.parts[0] {
		case "shfl", "ldmatrix", "mma":
			// warp-collective: every lane of the warp executes it together
			in.sync = 1
		case "wgmma":
			// warpgroup-collective: the 128 threads of a warpgroup together
			in.sync = 6
		case "bar":
			in.sync = 2
		case "barrier":
			// barrier.cluster.{arrive{.release | .relaxed} | wait{.acquire}}.aligned:
			// the CTA's threads together, then the cluster's CTAs (the
			// simulator's memory is sequentially consistent: the orders
			// are all the same to it)
			switch strings.Join(in.parts[1:], ".") {
			case "cluster.arrive.release.aligned", "cluster.arrive.relaxed.aligned":
				in.sync = 3
			case "cluster.wait.acquire.aligned", "cluster.wait.aligned":
				in.sync = 4
			default:
				return nil, fmt.Errorf("line %d: %s: the simulator runs barrier.cluster.arrive{.release, .relaxed}.aligned and barrier.cluster.wait{.acquire}.aligned", n+1, opText)
			}
		case "mbarrier":
			// a thread whose try_wait finds the phase incomplete yields to
			// the others (sim_bulk_test.go)
			if in.parts[1] == "try_wait" {
				in.sync = 5
			}
		}
		if in.parts[0] == "bra" {
			pending = append(pending, len(cur.code))
		}
		cur.code = append(cur.code, in)
	}
	return mod, nil
}

// simCheckQualifiers checks the spelling of the memory instructions the
// simulator gives meaning to (ld, st, atom, fence, membar, mbarrier and
// the bulk copy): their qualifiers in the order the PTX ISA writes them,
//
//	ld{.volatile | .relaxed.scope | .acquire.scope}.space{.cop}{.vN}.type
//	st{.volatile | .relaxed.scope | .release.scope}.space{.cop}{.vN}.type
//	atom{.sem}{.scope}.global.op.type
//	fence{.sc | .acq_rel}.scope, membar.{cta, gl, sys}
//	fence.mbarrier_init.release.cluster, fence.proxy.async{.global | .shared::{cta, cluster}}
//	mbarrier.init.shared{::cta}.b64
//	mbarrier.arrive{.expect_tx}{.release.scope}.shared{::cta}.b64
//	mbarrier.try_wait.parity{.acquire.scope}.shared{::cta}.b64
//	cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes
//
// with a cache operator only on weak accesses, .nc only on global loads.
// The mbarrier instructions name the shared state space, whose addresses
// the simulator knows (not generic ones).
func simCheckQualifiers(parts []string) error {
	scopes := map[string]bool{"cta": true, "cluster": true, "gpu": true, "sys": true}
	types := map[string]bool{"b8": true, "b16": true, "b32": true, "b64": true, "u8": true, "u16": true, "u32": true,
		"u64": true, "s8": true, "s16": true, "s32": true, "s64": true, "f16": true, "f32": true, "f64": true}
	rest := parts[1:]
	take := func(set map[string]bool) string {
		if len(rest) > 0 && set[rest[0]] {
			x := rest[0]
			rest = rest[1:]
			return x
		}
		return ""
	}
	set := func(xs ...string) map[string]bool {
		m := map[string]bool{}
		for _, x := range xs {
			m[x] = true
		}
		return m
	}
	switch parts[0] {
	case "ld", "st":
		sem := set("volatile", "relaxed", "acquire")
		cops := set("ca", "cg", "cs", "lu", "cv", "nc")
		if parts[0] == "st" {
			sem = set("volatile", "relaxed", "release")
			cops = set("wb", "cg", "cs", "wt")
		}
		s := take(sem)
		if s != "" && s != "volatile" && take(scopes) == "" {
			return fmt.Errorf(".%s without a scope", s)
		}
		space := take(set("global", "shared", "shared::cta", "shared::cluster", "param", "local"))
		if space == "" {
			return fmt.Errorf("no state space")
		}
		if cop := take(cops); cop != "" {
			if s != "" {
				return fmt.Errorf("a cache operator on a .%s access", s)
			}
			if space != "global" && space != "local" {
				return fmt.Errorf(".%s on %s memory", cop, space)
			}
		}
		take(set("v2", "v4"))
	case "atom", "red":
		take(set("relaxed", "acquire", "release", "acq_rel"))
		take(scopes)
		take(set("global", "shared"))
		if take(set("add", "exch", "cas", "max", "min", "and", "or", "xor", "inc", "dec")) == "" {
			return fmt.Errorf("no operation")
		}
	case "fence":
		switch take(set("mbarrier_init", "proxy")) {
		case "mbarrier_init":
			if strings.Join(rest, ".") != "release.cluster" {
				return fmt.Errorf("expects fence.mbarrier_init.release.cluster")
			}
			return nil
		case "proxy":
			switch strings.Join(rest, ".") {
			case "async", "async.global", "async.shared::cta", "async.shared::cluster":
				return nil
			}
			return fmt.Errorf("expects fence.proxy.async{.global, .shared::cta, .shared::cluster}")
		}
		if take(set("sc", "acq_rel")) == "" || take(scopes) == "" {
			return fmt.Errorf("expects .sc or .acq_rel and a scope")
		}
		return simNoMore(rest)
	case "membar":
		if take(set("cta", "gl", "sys")) == "" {
			return fmt.Errorf("expects .cta, .gl or .sys")
		}
		return simNoMore(rest)
	case "mbarrier":
		switch take(set("init", "arrive", "try_wait")) {
		case "init":
		case "arrive":
			take(set("expect_tx"))
			if take(set("release")) != "" && take(set("cta", "cluster")) == "" {
				return fmt.Errorf(".release without a scope")
			}
		case "try_wait":
			if take(set("parity")) == "" {
				return fmt.Errorf("the simulator runs mbarrier.try_wait.parity only")
			}
			if take(set("acquire")) != "" && take(set("cta", "cluster")) == "" {
				return fmt.Errorf(".acquire without a scope")
			}
		default:
			return fmt.Errorf("the simulator runs mbarrier.init, mbarrier.arrive and mbarrier.try_wait")
		}
		if take(set("shared", "shared::cta")) == "" {
			return fmt.Errorf("no .shared::cta state space, or qualifiers out of order")
		}
		if take(set("b64")) == "" {
			return fmt.Errorf("no .b64 type, or qualifiers out of order")
		}
		return simNoMore(rest)
	case "cp":
		if len(rest) > 1 && rest[0] == "async" && rest[1] == "bulk" &&
			strings.Join(rest, ".") != "async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes" {
			return fmt.Errorf("the simulator runs cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes only")
		}
		return nil
	default:
		return nil
	}
	if take(types) == "" {
		return fmt.Errorf("no type, or qualifiers out of order")
	}
	return simNoMore(rest)
}

func simNoMore(rest []string) error {
	if len(rest) > 0 {
		return fmt.Errorf("unexpected qualifiers .%s", strings.Join(rest, "."))
	}
	return nil
}

// simRegIndex numbers register names.
func simRegIndex(regs map[string]int, name string) int {
	if i, ok := regs[name]; ok {
		return i
	}
	regs[name] = len(regs)
	return regs[name]
}

// simSplitArgs splits operands at the commas outside braces and brackets.
func simSplitArgs(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	if t := strings.TrimSpace(s[start:]); t != "" {
		out = append(out, t)
	}
	return out
}

func simParseOpnd(a string, regs map[string]int) (simOpnd, error) {
	switch {
	case strings.HasPrefix(a, "{"):
		var o simOpnd
		o.kind = sVec
		for _, e := range simSplitArgs(a[1 : len(a)-1]) {
			x, err := simParseOpnd(e, regs)
			if err != nil {
				return o, err
			}
			o.vec = append(o.vec, x)
		}
		return o, nil
	case strings.HasPrefix(a, "["):
		in := a[1 : len(a)-1]
		var off int64
		if i := strings.Index(in, "+"); i >= 0 {
			v, err := strconv.ParseInt(in[i+1:], 10, 64)
			if err != nil {
				return simOpnd{}, err
			}
			off, in = v, in[:i]
		}
		b, err := simParseOpnd(in, regs)
		if err != nil {
			return simOpnd{}, err
		}
		return simOpnd{kind: sMem, base: &b, off: off}, nil
	case strings.HasPrefix(a, "%") && strings.Contains(a, "."):
		return simOpnd{kind: sSpecial, name: a}, nil
	case strings.HasPrefix(a, "%"):
		return simOpnd{kind: sReg, reg: simRegIndex(regs, a)}, nil
	case strings.HasPrefix(a, "0f") && len(a) == 10:
		v, err := strconv.ParseUint(a[2:], 16, 32)
		return simOpnd{kind: sImm, imm: v}, err
	case strings.HasPrefix(a, "0d") && len(a) == 18:
		v, err := strconv.ParseUint(a[2:], 16, 64)
		return simOpnd{kind: sImm, imm: v}, err
	case strings.HasPrefix(a, "0x"):
		v, err := strconv.ParseUint(a[2:], 16, 64)
		return simOpnd{kind: sImm, imm: v}, err
	case a[0] == '-' || a[0] >= '0' && a[0] <= '9':
		v, err := strconv.ParseInt(a, 10, 64)
		return simOpnd{kind: sImm, imm: uint64(v)}, err
	}
	return simOpnd{kind: sLabel, name: a}, nil
}

// simMemory is the global memory: buffers at 256-byte aligned addresses.
type simMemory struct {
	base  uint64
	bytes []byte
	// writes counts the stores and atomics to global memory (the
	// scheduler's sign of progress)
	writes int64
	// arrivals counts, per cluster of the launch running, the CTAs'
	// arrivals at its barrier
	arrivals map[int]int
	// shared is the shared memory of each running CTA of the launch, which
	// the other CTAs of its cluster reach through mapa addresses
	shared map[int][]byte
}

// A shared::cluster address from mapa carries the CTA it is in: CTA c's
// address a is a | (c + 1) << simCTAShift; an address without it is the
// executing CTA's own (a shared::cta address is a shared::cluster one).
const simCTAShift = 40

func newSimMemory() *simMemory { return &simMemory{base: 1 << 20} }

// alloc returns the address of n fresh bytes (filled with 0xFF, NaN in
// every float format and -1 in integers, so that reading unwritten memory
// shows).
func (m *simMemory) alloc(n int) uint64 {
	for len(m.bytes)%256 != 0 {
		m.bytes = append(m.bytes, 0)
	}
	addr := m.base + uint64(len(m.bytes))
	for i := 0; i < n+256; i++ {
		m.bytes = append(m.bytes, 0xFF)
	}
	return addr
}

func (m *simMemory) slice(addr uint64, n int) []byte {
	i := addr - m.base
	if addr < m.base || i+uint64(n) > uint64(len(m.bytes)) {
		panic(fmt.Sprintf("global access of %d bytes at %#x is out of bounds", n, addr))
	}
	return m.bytes[i : i+uint64(n)]
}

type simThread struct {
	pc      int
	regs    []uint64
	done    bool
	blocked int // 0 running, else the sync kind it waits at (simInstr.sync)
	tid     int
	// timedOut: the thread's next mbarrier.try_wait returns, complete or
	// not (the others could not run while it waited)
	timedOut bool
}

// simResident bounds the CTAs of a simulated launch that run at once (0:
// all of them): the others start, in launch order, as earlier ones
// finish, as on a GPU full of CTAs.
var simResident = 0

// simReverseThreads runs the threads of a CTA last to first between
// barriers (thread 0, which takes tickets and meets the other CTAs,
// last).
var simReverseThreads = false

// simStepLimit bounds the instructions one CTA runs.
var simStepLimit = 200_000_000

// simMsg is what a CTA's goroutine tells the scheduler at the end of its
// turn: it finished (with err), or it yielded; spin: at an acquire load.
type simMsg struct {
	done bool
	err  error
	pc   int // where it yielded
}

// simAbort unwinds a CTA the scheduler gives up on.
type simAbort struct{}

// simCTA is one CTA of a launch, run by its own goroutine, one at a time:
// it runs while it holds the turn, which it gives back (yields) after
// every acquire load, and when it finishes. The scheduler lets it go on
// until it spins (yields twice at one load with no store to global
// memory in between): a CTA runs as far as it can before the others run,
// so that a sync that does not wait finds their stores missing.
type simCTA struct {
	cta    int
	resume chan bool // the turn; true: abort
	back   chan simMsg
}

// launch runs entry name over grid CTAs with the parameters given (one
// 64-bit value each) and shared bytes of dynamic shared memory. The CTAs
// are interleaved: each runs until it spins at an acquire load (where a
// CTA waits for others), round-robin over the
// live CTAs (at most simResident), in launch order (last to first with
// simReverseCTAs). A round in which every live CTA yields at an acquire
// load, none starts or finishes and no global memory changes, twice in a
// row, is a deadlock: an error, not a hang.
func (mod *simModule) launch(name string, grid int, shared int, params []uint64, mem *simMemory) error {
	e, ok := mod.entries[name]
	if !ok {
		return fmt.Errorf("no entry %s", name)
	}
	if len(params) != len(e.params) {
		return fmt.Errorf("%s takes %d parameters, got %d", name, len(e.params), len(params))
	}
	limit := simResident
	if limit <= 0 || limit > grid {
		limit = grid
	}
	if e.cluster > 0 {
		// a cluster's CTAs start together, or the launch fails
		if grid%e.cluster != 0 {
			return fmt.Errorf("%s: a grid of %d CTAs is not whole clusters of %d", name, grid, e.cluster)
		}
		limit = min(grid, (limit+e.cluster-1)/e.cluster*e.cluster)
	}
	mem.arrivals = map[int]int{}
	mem.shared = map[int][]byte{}
	start := func(cta int) *simCTA {
		r := &simCTA{cta: cta, resume: make(chan bool), back: make(chan simMsg)}
		go func() {
			if <-r.resume {
				r.back <- simMsg{done: true}
				return
			}
			yield := func(pc int) {
				r.back <- simMsg{pc: pc}
				if <-r.resume {
					panic(simAbort{})
				}
			}
			err := e.runCTA(cta, grid, shared, params, mem, yield)
			r.back <- simMsg{done: true, err: err}
		}()
		return r
	}
	var live []*simCTA
	abort := func() {
		for _, r := range live {
			r.resume <- true
			<-r.back
		}
		live = nil
	}
	next, quiet := 0, 0
	for {
		progress := false
		// CTAs start in launch order as others finish, a cluster's
		// together
		for size := max(e.cluster, 1); len(live)+size <= limit && next < grid; {
			for range size {
				cta := next
				if simReverseCTAs {
					cta = grid - 1 - next
				}
				next++
				live = append(live, start(cta))
			}
			progress = true
		}
		if len(live) == 0 {
			return nil
		}
		writes := mem.writes
		var keep []*simCTA
		for i, r := range live {
			// the CTA's turn: on until it finishes or spins
			var msg simMsg
			pc, at := -1, int64(-1)
			for {
				r.resume <- false
				msg = <-r.back
				if msg.done || msg.pc == pc && mem.writes == at {
					break
				}
				pc, at = msg.pc, mem.writes
			}
			if msg.done {
				if msg.err != nil {
					live = append(keep, live[i+1:]...)
					abort()
					return fmt.Errorf("%s, CTA %d: %v", name, r.cta, msg.err)
				}
				progress = true
				continue
			}
			keep = append(keep, r)
		}
		live = keep
		if progress || mem.writes != writes {
			quiet = 0
			continue
		}
		if quiet++; quiet >= 2 {
			var ctas []string
			for _, r := range live {
				ctas = append(ctas, strconv.Itoa(r.cta))
			}
			abort()
			return fmt.Errorf("%s: deadlock: CTAs %s spin at acquire loads and no memory changes (%d of %d CTAs started, at most %d at once)",
				name, strings.Join(ctas, ", "), next, grid, limit)
		}
	}
}

func (e *simEntry) runCTA(cta, grid, sharedBytes int, params []uint64, mem *simMemory, yield func(pc int)) (err error) {
	n := e.reqntid
	threads := make([]*simThread, n)
	for i := range threads {
		threads[i] = &simThread{regs: make([]uint64, e.nregs), tid: i}
	}
	shared := make([]byte, sharedBytes)
	for i := range shared {
		shared[i] = 0xCD
	}
	ctx := &simCtx{e: e, cta: cta, grid: grid, params: params, mem: mem, shared: shared, yield: yield}
	// the cluster's other CTAs reach the shared memory while the CTA runs
	mem.shared[cta] = shared
	defer delete(mem.shared, cta)
	var cur *simThread
	defer func() {
		if r := recover(); r != nil {
			where := ""
			if cur != nil && cur.pc < len(e.code) {
				where = fmt.Sprintf(" (thread %d at `%s`)", cur.tid, e.code[cur.pc].text)
			}
			err = fmt.Errorf("%v%s", r, where)
		}
	}()
	order := threads
	if simReverseThreads {
		order = make([]*simThread, n)
		for i, t := range threads {
			order[n-1-i] = t
		}
	}
	steps := 0
	var spun []uint64 // the threads' state when try_waits last timed out
	for {
		for _, t := range order {
			cur = t
			for !t.done && t.blocked == 0 {
				in := &e.code[t.pc]
				if in.pred >= 0 && (t.regs[in.pred] != 0) == in.neg {
					t.pc++
					continue
				}
				if in.sync == 5 {
					// mbarrier.try_wait: on at once if the phase completed
					// (or the wait timed out); else the thread yields
					if !ctx.tryWait(t, in, t.timedOut) {
						t.blocked = 5
						break
					}
					t.timedOut = false
					steps++
					continue
				}
				if in.sync != 0 {
					t.blocked = in.sync
					break
				}
				ctx.exec(t, in)
				steps++
				if steps > simStepLimit {
					panic("too many steps: a loop that does not end?")
				}
			}
		}
		cur = nil
		// shuffles: a warp whose live threads all wait at one shfl
		progress := false
		for w := 0; w < n; w += 32 {
			warp := threads[w:min(w+32, n)]
			at, live := 0, 0
			pc := -1
			for _, t := range warp {
				if t.done {
					continue
				}
				live++
				if t.blocked == 1 {
					if pc >= 0 && t.pc != pc {
						panic(fmt.Sprintf("threads of warp %d wait at different shuffles (or other warp-collective instructions: ldmatrix, mma.sync)", w/32))
					}
					pc = t.pc
					at++
				}
			}
			if at == 0 {
				continue
			}
			if at != live || live != len(warp) {
				if at > 0 && at == live && e.code[pc].parts[0] != "shfl" {
					panic(fmt.Sprintf("warp %d: %s with exited lanes", w/32, e.code[pc].op))
				}
				continue
			}
			switch in := &e.code[pc]; in.parts[0] {
			case "ldmatrix":
				ctx.ldmatrix(warp, in)
			case "mma":
				ctx.mma(warp, in)
			default:
				ctx.shuffle(warp, in)
			}
			for _, t := range warp {
				t.blocked = 0
				t.pc++
			}
			progress = true
		}
		if ctx.runWarpgroups(threads) {
			progress = true
		}
		// mbarrier waits: a thread that yielded at a try_wait goes on once
		// the phase it waits for completes (its waiting delivers the
		// copies in flight on the mbarrier)
		for _, t := range threads {
			if t.blocked == 5 {
				cur = t
				if ctx.tryWait(t, &e.code[t.pc], false) {
					t.blocked = 0
					progress = true
				}
			}
		}
		cur = nil
		if progress {
			continue
		}
		atBar, live, kind, spin := 0, 0, 0, 0
		for _, t := range threads {
			if !t.done {
				live++
				if t.blocked == 5 {
					spin++
				} else if t.blocked >= 2 && t.blocked <= 4 && (kind == 0 || t.blocked == kind) {
					kind = t.blocked
					atBar++
				}
			}
		}
		if live == 0 {
			// shared memory goes with the CTA: no copy may still write it
			ctx.bulkDone()
			return nil
		}
		if atBar == live {
			if live != n {
				panic(fmt.Sprintf("%s with exited threads", e.code[threads[0].pc].op))
			}
			switch kind {
			case 3: // the CTA arrives at its cluster's barrier
				mem.arrivals[cta/max(e.cluster, 1)]++
				mem.writes++
			case 4: // it waits for the cluster's other CTAs
				ctx.waits++
				for mem.arrivals[cta/max(e.cluster, 1)] < ctx.waits*max(e.cluster, 1) {
					ctx.yield(threads[0].pc)
				}
			}
			for _, t := range threads {
				t.blocked = 0
				t.pc++
			}
			continue
		}
		if spin > 0 {
			// nothing runs but the threads at try_waits: their waits time
			// out (return false); finding them waiting again in the same
			// state is a deadlock
			state := ctx.spinState(threads)
			if slices.Equal(state, spun) {
				panic(ctx.mbarDeadlock(threads))
			}
			spun = state
			for _, t := range threads {
				if t.blocked == 5 {
					t.blocked = 0
					t.timedOut = true
				}
			}
			continue
		}
		panic(fmt.Sprintf("deadlock: %d live threads, %d at a barrier, the rest at shuffles", live, atBar))
	}
}

type simCtx struct {
	yield  func(pc int) // gives the turn back to the scheduler
	waits  int          // the cluster barriers the CTA has waited at
	e      *simEntry
	cta    int
	grid   int
	params []uint64
	mem    *simMemory
	shared []byte
	// mbars are the CTA's initialised mbarriers by shared address, bulk
	// its bulk copies in flight (sim_bulk_test.go); events counts the
	// changes of its mbarriers and shared memory
	mbars  map[uint64]*simMbar
	bulk   []simBulk
	events int64
	// wgmma: each warpgroup's wgmma groups in flight (sim_wgmma_test.go)
	wg map[int]*simWG
}

func (c *simCtx) shuffle(warp []*simThread, in *simInstr) {
	vals := make([]uint64, len(warp))
	for i, t := range warp {
		vals[i] = c.val(t, in.args[1])
	}
	mask := int(c.val(warp[0], in.args[2]))
	for i, t := range warp {
		src := i ^ mask
		if src >= len(warp) {
			src = i
		}
		t.regs[in.args[0].reg] = vals[src] & 0xffffffff
	}
}

// val reads an operand as bits.
func (c *simCtx) val(t *simThread, o simOpnd) uint64 {
	switch o.kind {
	case sReg:
		return t.regs[o.reg]
	case sImm:
		return o.imm
	case sSpecial:
		switch o.name {
		case "%tid.x":
			return uint64(t.tid)
		case "%ctaid.x":
			return uint64(c.cta)
		case "%nctaid.x":
			return uint64(c.grid)
		case "%ntid.x":
			return uint64(c.e.reqntid)
		}
	case sLabel:
		if o.name == SharedName {
			return 0
		}
	}
	panic(fmt.Sprintf("cannot read operand %+v", o))
}

func f32of(b uint64) float32 { return math.Float32frombits(uint32(b)) }
func f64of(b uint64) float64 { return math.Float64frombits(b) }
func bitsF32(f float32) uint64 {
	return uint64(math.Float32bits(f))
}
func bitsF64(f float64) uint64 { return math.Float64bits(f) }

// nudge moves an f32 by simNudge ULPs (not NaN, inf or zero).
func nudge(f float32) float32 { return nudgeULPs(f, simNudge) }

// sign is -1, 0 or 1.
func sign(k int) int {
	switch {
	case k < 0:
		return -1
	case k > 0:
		return 1
	}
	return 0
}

// nudgeULPs moves an f32 by k ULPs (not NaN, inf or zero).
func nudgeULPs(f float32, k int) float32 {
	if k == 0 || f == 0 || math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return f
	}
	dir := float32(math.Inf(1))
	if k < 0 {
		dir, k = float32(math.Inf(-1)), -k
	}
	for i := 0; i < k; i++ {
		f = math.Nextafter32(f, dir)
	}
	return f
}

// nudgeRel is v rounded to f32 after a relative error of 2^e in the
// direction of simNudge's sign (the documented bound of rsqrt.approx
// and tanh.approx).
func nudgeRel(v float64, e float64) float32 {
	switch {
	case simNudge > 0:
		v *= 1 + math.Pow(2, e)
	case simNudge < 0:
		v *= 1 - math.Pow(2, e)
	}
	return float32(v)
}

// width is the bit width of a PTX type name.
func width(t string) int {
	switch t {
	case "f64", "b64", "u64", "s64":
		return 64
	case "f32", "b32", "u32", "s32":
		return 32
	case "b16", "u16", "s16", "f16", "bf16":
		return 16
	case "u8", "s8", "b8":
		return 8
	case "pred":
		return 1
	}
	panic("unknown type " + t)
}

func mask(v uint64, w int) uint64 {
	if w >= 64 {
		return v
	}
	return v & (1<<w - 1)
}

func sext(v uint64, w int) int64 {
	if w >= 64 {
		return int64(v)
	}
	s := 64 - w
	return int64(v<<s) >> s
}

// rz32 rounds an f64 to f32 toward zero.
func rz32(x float64) float32 {
	r := float32(x)
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return r
	}
	if math.Abs(float64(r)) > math.Abs(x) {
		r = math.Nextafter32(r, 0)
	}
	return r
}

// satInt truncates f to an integer of w bits with PTX's saturation (NaN: 0).
func satInt(f float64, w int) uint64 {
	if math.IsNaN(f) {
		return 0
	}
	t := math.Trunc(f)
	lo, hi := -math.Ldexp(1, w-1), math.Ldexp(1, w-1)
	switch {
	case t <= lo:
		return mask(uint64(int64(lo)), w)
	case t >= hi:
		if w == 64 {
			return uint64(math.MaxInt64)
		}
		return mask(uint64(int64(hi)-1), w)
	}
	return mask(uint64(int64(t)), w)
}

func maxNum(a, b float64, nanProp bool) float64 {
	switch {
	case math.IsNaN(a) && math.IsNaN(b):
		return math.NaN()
	case math.IsNaN(a) || math.IsNaN(b):
		if nanProp {
			return math.NaN()
		}
		if math.IsNaN(a) {
			return b
		}
		return a
	case a > b:
		return a
	case b > a:
		return b
	case math.Signbit(a):
		return b
	}
	return a
}

func minNum(a, b float64, nanProp bool) float64 {
	switch {
	case math.IsNaN(a) && math.IsNaN(b):
		return math.NaN()
	case math.IsNaN(a) || math.IsNaN(b):
		if nanProp {
			return math.NaN()
		}
		if math.IsNaN(a) {
			return b
		}
		return a
	case a < b:
		return a
	case b < a:
		return b
	case math.Signbit(a):
		return a
	}
	return b
}

func hasPart(parts []string, p string) bool {
	for _, x := range parts {
		if x == p {
			return true
		}
	}
	return false
}

// f8Encode is PTX's cvt.rn.satfinite to an f8 format: finite values past
// the range saturate, NaN stays NaN.
func f8Encode(f float32, e5m2 bool) uint64 {
	if e5m2 {
		if math.IsNaN(float64(f)) {
			return 0x7f
		}
		if a := math.Abs(float64(f)); a > 57344 {
			f = float32(math.Copysign(57344, float64(f)))
		}
		return uint64(numeric.F8E5M2Bits(f))
	}
	if math.IsNaN(float64(f)) {
		return 0x7f
	}
	if a := math.Abs(float64(f)); a > 448 {
		f = float32(math.Copysign(448, float64(f)))
	}
	return uint64(numeric.F8E4M3FNBits(f))
}

func f8Decode(b uint64, e5m2 bool) float32 {
	if e5m2 {
		return numeric.F8E5M2FromBits(uint8(b))
	}
	return numeric.F8E4M3FNFromBits(uint8(b))
}

func f16Bits(f float32) uint64 { return uint64(float16.Fromfloat32(f).Bits()) }

// exec runs one instruction (not a shuffle or barrier) of thread t.
func (c *simCtx) exec(t *simThread, in *simInstr) {
	p := in.parts
	op := p[0]
	a := in.args
	set := func(i int, v uint64) { t.regs[a[i].reg] = v }
	get := func(i int) uint64 { return c.val(t, a[i]) }
	typ := p[len(p)-1]
	switch op {
	case "ret":
		t.done = true
		return
	case "bra":
		t.pc = in.target
		return
	case "cp":
		if len(p) > 2 && p[2] == "bulk" {
			c.cpBulk(t, in)
		} else {
			c.cpAsync(t, in)
		}
	case "mbarrier":
		c.mbarrier(t, in)
	case "ld":
		c.load(t, in)
		if hasPart(p, "acquire") {
			// where a CTA waits for others: they run
			t.pc++
			c.yield(t.pc - 1)
			return
		}
	case "st":
		c.store(t, in)
	case "atom":
		c.atom(t, in)
	case "red":
		c.red(t, in)
	case "fence", "membar":
		// the simulator runs one thread at a time: its memory is
		// sequentially consistent, every fence a no-op
	case "cvta":
		set(0, get(1))
	case "mapa":
		c.mapa(t, in)
	case "mov":
		c.mov(t, in)
	case "add", "sub", "mul", "mad", "fma", "div", "rem", "min", "max", "neg", "abs":
		c.arith(t, in)
	case "and", "or", "xor", "not":
		w := width(typ)
		x := get(1)
		var r uint64
		switch op {
		case "and":
			r = x & get(2)
		case "or":
			r = x | get(2)
		case "xor":
			r = x ^ get(2)
		default:
			r = ^x
		}
		if typ == "pred" {
			r &= 1
		}
		set(0, mask(r, w))
	case "shl", "shr":
		w := width(typ)
		x, s := get(1), get(2)&0xff
		var r uint64
		switch {
		case op == "shl":
			r = mask(x<<s, w)
		case typ[0] == 's':
			r = mask(uint64(sext(x, w)>>s), w)
		default:
			r = mask(x, w) >> s
		}
		set(0, r)
	case "bfe":
		x, pos, ln := get(1), get(2), get(3)
		v := (uint32(x) >> pos) & (1<<ln - 1)
		if typ == "s32" && v&(1<<(ln-1)) != 0 {
			v |= ^uint32(0) << ln
		}
		set(0, uint64(v))
	case "bfi":
		x, y, pos, ln := uint32(get(1)), uint32(get(2)), get(3), get(4)
		m := uint32(1<<ln-1) << pos
		set(0, uint64(y&^m|(x<<pos)&m))
	case "selp":
		if get(3) != 0 {
			set(0, get(1))
		} else {
			set(0, get(2))
		}
	case "setp":
		set(0, c.setp(p[1], typ, get(1), get(2)))
	case "cvt":
		c.cvt(t, in)
	case "ex2":
		x := f32of(get(1))
		if hasPart(p, "ftz") && math.Abs(float64(x)) < 0x1p-126 {
			x = 0
		}
		y := nudge(float32(math.Exp2(float64(x))))
		if hasPart(p, "ftz") && math.Abs(float64(y)) < 0x1p-126 {
			y = 0 // subnormal results flushed
		}
		set(0, bitsF32(y))
	case "rsqrt":
		x := float64(f32of(get(1)))
		set(0, bitsF32(nudgeRel(1/math.Sqrt(x), -22.9)))
	case "tanh":
		set(0, bitsF32(nudgeRel(math.Tanh(float64(f32of(get(1)))), -10.987)))
	case "sqrt":
		if typ == "f64" {
			set(0, bitsF64(math.Sqrt(f64of(get(1)))))
		} else {
			set(0, bitsF32(float32(math.Sqrt(float64(f32of(get(1)))))))
		}
	case "rcp":
		switch {
		case typ == "f64":
			set(0, bitsF64(1/f64of(get(1))))
		case hasPart(p, "approx"):
			// 1 ULP across the full range (PTX ISA); .ftz flushes
			// subnormal operands and results
			x := f32of(get(1))
			if hasPart(p, "ftz") && math.Abs(float64(x)) < 0x1p-126 {
				x = float32(math.Copysign(0, float64(x)))
			}
			y := nudgeULPs(float32(1/float64(x)), sign(simNudge))
			if hasPart(p, "ftz") && math.Abs(float64(y)) < 0x1p-126 {
				y = float32(math.Copysign(0, float64(y)))
			}
			set(0, bitsF32(y))
		default:
			set(0, bitsF32(float32(1/float64(f32of(get(1))))))
		}
	default:
		panic("the simulator does not know " + in.op)
	}
	t.pc++
}

func (c *simCtx) setp(cmp, typ string, x, y uint64) uint64 {
	var r bool
	switch typ {
	case "f32", "f64":
		var a, b float64
		if typ == "f32" {
			a, b = float64(f32of(x)), float64(f32of(y))
		} else {
			a, b = f64of(x), f64of(y)
		}
		nan := math.IsNaN(a) || math.IsNaN(b)
		switch cmp {
		case "eq":
			r = a == b
		case "ne":
			r = !nan && a != b
		case "neu":
			r = nan || a != b
		case "lt":
			r = a < b
		case "le":
			r = a <= b
		case "gt":
			r = a > b
		case "ge":
			r = a >= b
		case "nan":
			r = nan
		case "num":
			r = !nan
		default:
			panic("setp." + cmp)
		}
	default:
		w := width(typ)
		signed := typ[0] == 's'
		var a, b int64
		var ua, ub uint64
		if signed {
			a, b = sext(x, w), sext(y, w)
		} else {
			ua, ub = mask(x, w), mask(y, w)
		}
		lt := (signed && a < b) || (!signed && ua < ub)
		eq := (signed && a == b) || (!signed && ua == ub)
		switch cmp {
		case "eq":
			r = eq
		case "ne":
			r = !eq
		case "lt":
			r = lt
		case "le":
			r = lt || eq
		case "gt":
			r = !lt && !eq
		case "ge":
			r = !lt
		default:
			panic("setp." + cmp)
		}
	}
	if r {
		return 1
	}
	return 0
}

func (c *simCtx) mov(t *simThread, in *simInstr) {
	a := in.args
	typ := in.parts[len(in.parts)-1]
	switch {
	case a[0].kind == sVec: // unpack
		x := c.val(t, a[1])
		n := len(a[0].vec)
		w := width(typ) / n
		for i, d := range a[0].vec {
			t.regs[d.reg] = mask(x>>(uint(i*w)), w)
		}
	case a[1].kind == sVec: // pack
		n := len(a[1].vec)
		w := width(typ) / n
		var x uint64
		for i, s := range a[1].vec {
			x |= mask(c.val(t, s), w) << uint(i*w)
		}
		t.regs[a[0].reg] = x
	default:
		t.regs[a[0].reg] = mask(c.val(t, a[1]), width(typ))
	}
}

func (c *simCtx) arith(t *simThread, in *simInstr) {
	p := in.parts
	op := p[0]
	typ := p[len(p)-1]
	a := in.args
	get := func(i int) uint64 { return c.val(t, a[i]) }
	nanProp := hasPart(p, "NaN")
	switch typ {
	case "f32", "f64":
		f := func(b uint64) float64 {
			if typ == "f32" {
				return float64(f32of(b))
			}
			return f64of(b)
		}
		var r float64
		switch op {
		case "add":
			r = f(get(1)) + f(get(2))
		case "sub":
			r = f(get(1)) - f(get(2))
		case "mul":
			r = f(get(1)) * f(get(2))
		case "div":
			r = f(get(1)) / f(get(2))
		case "fma":
			r = math.FMA(f(get(1)), f(get(2)), f(get(3)))
		case "min":
			r = minNum(f(get(1)), f(get(2)), nanProp)
		case "max":
			r = maxNum(f(get(1)), f(get(2)), nanProp)
		case "neg":
			if typ == "f32" {
				t.regs[a[0].reg] = get(1) ^ 0x80000000
			} else {
				t.regs[a[0].reg] = get(1) ^ (1 << 63)
			}
			return
		case "abs":
			if typ == "f32" {
				t.regs[a[0].reg] = get(1) &^ 0x80000000
			} else {
				t.regs[a[0].reg] = get(1) &^ (1 << 63)
			}
			return
		default:
			panic("the simulator does not know " + in.op)
		}
		if typ == "f32" {
			t.regs[a[0].reg] = bitsF32(float32(r))
		} else {
			t.regs[a[0].reg] = bitsF64(r)
		}
		return
	}
	w := width(typ)
	signed := typ[0] == 's'
	x := get(1)
	var y uint64
	if len(a) > 2 {
		y = get(2)
	}
	var r uint64
	switch op {
	case "add":
		r = x + y
	case "sub":
		r = x - y
	case "mul":
		r = x * y
	case "mad":
		r = x*y + get(3)
	case "div", "rem":
		if mask(y, w) == 0 {
			r = mask(^uint64(0), w)
			break
		}
		if signed {
			sx, sy := sext(x, w), sext(y, w)
			if op == "div" {
				r = uint64(sx / sy)
			} else {
				r = uint64(sx % sy)
			}
		} else if op == "div" {
			r = mask(x, w) / mask(y, w)
		} else {
			r = mask(x, w) % mask(y, w)
		}
	case "min", "max":
		less := mask(x, w) < mask(y, w)
		if signed {
			less = sext(x, w) < sext(y, w)
		}
		if (op == "min") == less {
			r = x
		} else {
			r = y
		}
	case "neg":
		r = -x
	case "abs":
		v := sext(x, w)
		if v < 0 {
			v = -v
		}
		r = uint64(v)
	default:
		panic("the simulator does not know " + in.op)
	}
	t.regs[a[0].reg] = mask(r, w)
}

func (c *simCtx) cvt(t *simThread, in *simInstr) {
	p := in.parts
	a := in.args
	dst, src := p[len(p)-2], p[len(p)-1]
	x := c.val(t, a[1])
	set := func(v uint64) { t.regs[a[0].reg] = v }
	rnd := ""
	for _, q := range p[1 : len(p)-2] {
		if q != "satfinite" && q != "ftz" {
			rnd = q
		}
	}
	switch {
	case dst == "bf16x2" || dst == "f16x2" && src == "f32":
		hi, lo := f32of(x), f32of(c.val(t, a[2]))
		enc := func(f float32) uint64 {
			if dst == "bf16x2" {
				return uint64(numeric.BF16Bits(f))
			}
			return f16Bits(f)
		}
		set(enc(hi)<<16 | enc(lo))
	case dst == "e4m3x2" || dst == "e5m2x2":
		hi, lo := f32of(x), f32of(c.val(t, a[2]))
		e5 := dst == "e5m2x2"
		set(f8Encode(hi, e5)<<8 | f8Encode(lo, e5))
	case dst == "f16x2" && (src == "e4m3x2" || src == "e5m2x2"):
		e5 := src == "e5m2x2"
		lo, hi := f8Decode(x&0xff, e5), f8Decode(x>>8&0xff, e5)
		set(f16Bits(hi)<<16 | f16Bits(lo))
	case dst == "bf16":
		set(uint64(numeric.BF16Bits(f32of(x))))
	case dst == "f16" && src == "f32":
		set(f16Bits(f32of(x)))
	case dst == "f32" && src == "bf16":
		set(bitsF32(numeric.BF16FromBits(uint16(x))))
	case dst == "f32" && src == "f16":
		set(bitsF32(float16.Frombits(uint16(x)).Float32()))
	case dst == "f32" && src == "f32":
		set(bitsF32(float32(roundInt(float64(f32of(x)), rnd))))
	case dst == "f64" && src == "f64":
		set(bitsF64(roundInt(f64of(x), rnd)))
	case dst == "f64" && src == "f32":
		set(bitsF64(float64(f32of(x))))
	case dst == "f32" && src == "f64":
		if rnd == "rz" {
			set(bitsF32(rz32(f64of(x))))
		} else {
			set(bitsF32(float32(f64of(x))))
		}
	case (dst == "s32" || dst == "s64") && (src == "f32" || src == "f64"):
		f := f64of(x)
		if src == "f32" {
			f = float64(f32of(x))
		}
		set(satInt(f, width(dst)))
	case (dst == "f32" || dst == "f64") && (src[0] == 's' || src[0] == 'u'):
		var v float64
		if src[0] == 's' {
			v = float64(sext(x, width(src)))
		} else {
			v = float64(mask(x, width(src)))
		}
		if dst == "f32" {
			set(bitsF32(float32(v)))
		} else {
			set(bitsF64(v))
		}
	case (dst[0] == 'u' || dst[0] == 's') && (src[0] == 'u' || src[0] == 's'):
		w := width(src)
		var v uint64
		if src[0] == 's' {
			v = uint64(sext(x, w))
		} else {
			v = mask(x, w)
		}
		set(mask(v, width(dst)))
	default:
		panic("the simulator does not know " + in.op)
	}
}

func roundInt(f float64, rnd string) float64 {
	switch rnd {
	case "rni":
		return math.RoundToEven(f)
	case "rmi":
		return math.Floor(f)
	case "rpi":
		return math.Ceil(f)
	case "rzi":
		return math.Trunc(f)
	}
	panic("cvt rounding " + rnd)
}

// access returns the bytes an ld or st touches.
func (c *simCtx) access(t *simThread, in *simInstr, m simOpnd, n int) []byte {
	if m.base.kind == sLabel && !strings.HasPrefix(m.base.name, SharedName) {
		panic("memory operand " + m.base.name)
	}
	addr := c.val(t, *m.base) + uint64(m.off)
	if addr%uint64(n) != 0 {
		panic(fmt.Sprintf("misaligned access of %d bytes at %#x", n, addr))
	}
	if hasPart(in.parts, "shared::cluster") {
		shared := c.shared
		if owner := addr >> simCTAShift; owner != 0 {
			cta := int(owner - 1)
			size := max(c.e.cluster, 1)
			if cta/size != c.cta/size {
				panic(fmt.Sprintf("shared::cluster access to CTA %d, outside the cluster of CTA %d", cta, c.cta))
			}
			var ok bool
			if shared, ok = c.mem.shared[cta]; !ok {
				panic(fmt.Sprintf("shared::cluster access to CTA %d, which is not running (not started, or exited)", cta))
			}
			addr &= 1<<simCTAShift - 1
		}
		if addr+uint64(n) > uint64(len(shared)) {
			panic(fmt.Sprintf("shared::cluster access of %d bytes at %d past %d bytes", n, addr, len(shared)))
		}
		return shared[addr : addr+uint64(n)]
	}
	if hasPart(in.parts, "shared") || hasPart(in.parts, "shared::cta") {
		if addr+uint64(n) > uint64(len(c.shared)) {
			panic(fmt.Sprintf("shared access of %d bytes at %d past %d bytes", n, addr, len(c.shared)))
		}
		return c.shared[addr : addr+uint64(n)]
	}
	return c.mem.slice(addr, n)
}

// mapa runs mapa.shared::cluster.u64 d, a, r: a, a shared address of the
// executing CTA, as the same address in CTA r of its cluster.
func (c *simCtx) mapa(t *simThread, in *simInstr) {
	if strings.Join(in.parts[1:], ".") != "shared::cluster.u64" {
		panic("the simulator runs mapa.shared::cluster.u64 only: " + in.op)
	}
	size := max(c.e.cluster, 1)
	r := int(c.val(t, in.args[2]))
	if r < 0 || r >= size {
		panic(fmt.Sprintf("mapa to rank %d of a cluster of %d", r, size))
	}
	a := c.val(t, in.args[1])
	if a>>simCTAShift != 0 {
		panic(fmt.Sprintf("mapa of %#x, not an address of the executing CTA", a))
	}
	t.regs[in.args[0].reg] = a | uint64(c.cta/size*size+r+1)<<simCTAShift
}

func (c *simCtx) load(t *simThread, in *simInstr) {
	p := in.parts
	typ := p[len(p)-1]
	if p[1] == "param" {
		name := in.args[1].base.name
		for i, n := range c.e.params {
			if n == name {
				t.regs[in.args[0].reg] = c.params[i]
				return
			}
		}
		panic("no parameter " + name)
	}
	dsts := []simOpnd{in.args[0]}
	if in.args[0].kind == sVec {
		dsts = in.args[0].vec
	}
	w := width(typ) / 8
	b := c.access(t, in, in.args[1], w*len(dsts))
	for i, d := range dsts {
		var v uint64
		for k := 0; k < w; k++ {
			v |= uint64(b[i*w+k]) << (8 * k)
		}
		if typ[0] == 's' {
			v = uint64(sext(v, w*8))
		}
		t.regs[d.reg] = v
	}
}

func (c *simCtx) store(t *simThread, in *simInstr) {
	p := in.parts
	typ := p[len(p)-1]
	srcs := []simOpnd{in.args[1]}
	if in.args[1].kind == sVec {
		srcs = in.args[1].vec
	}
	w := width(typ) / 8
	b := c.access(t, in, in.args[0], w*len(srcs))
	if hasPart(p, "shared::cluster") {
		c.mem.writes++ // possibly another CTA's: progress for the scheduler
	} else if !hasPart(p, "shared") {
		c.mem.writes++
	} else {
		c.events++
		c.mbarOverlap(c.val(t, *in.args[0].base)+uint64(in.args[0].off), w*len(srcs), "st.shared")
	}
	for i, s := range srcs {
		v := c.val(t, s)
		for k := 0; k < w; k++ {
			b[i*w+k] = byte(v >> (8 * k))
		}
	}
}

// simReverseCTAs runs the CTAs of a launch last to first (the order in
// which split-K's parts of a tile finish then differs).
var simReverseCTAs = false

// red runs red{.sem}{.scope}.global.add.{u32,s32,u64}: memory = old + b,
// nothing returned.
func (c *simCtx) red(t *simThread, in *simInstr) {
	p := in.parts
	if !hasPart(p, "add") {
		panic("red " + in.op)
	}
	w := width(p[len(p)-1]) / 8
	b := c.access(t, in, in.args[0], w)
	var old uint64
	for k := 0; k < w; k++ {
		old |= uint64(b[k]) << (8 * k)
	}
	v := old + c.val(t, in.args[1])
	for k := 0; k < w; k++ {
		b[k] = byte(v >> (8 * k))
	}
	c.mem.writes++
}

// atom runs atom{.sem}{.scope}.global.add.{u32,s32,u64} and
// atom.global.exch.b32/b64: d = old value, memory = old op b, at once (the
// threads run one at a time).
func (c *simCtx) atom(t *simThread, in *simInstr) {
	p := in.parts
	typ := p[len(p)-1]
	w := width(typ) / 8
	b := c.access(t, in, in.args[1], w)
	var old uint64
	for k := 0; k < w; k++ {
		old |= uint64(b[k]) << (8 * k)
	}
	x := c.val(t, in.args[2])
	var v uint64
	switch {
	case hasPart(p, "add"):
		v = old + x
	case hasPart(p, "exch"):
		v = x
	default:
		panic("atom " + in.op)
	}
	for k := 0; k < w; k++ {
		b[k] = byte(v >> (8 * k))
	}
	c.mem.writes++
	t.regs[in.args[0].reg] = mask(old, w*8)
}
