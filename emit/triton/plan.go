package triton

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// This file decides the shape of each Triton kernel: which of the three
// forms it takes and its launch configuration (BLOCK, ROWS, num_warps).
//
//   - flat: an element-wise kernel runs on a 1-D grid over all its
//     elements, BLOCK at a time, whatever its rank: the row and column of
//     an element are offs // C and offs % C, and an operand that has the
//     shape of the result is read at offs itself.
//   - rows, one block: a row kernel whose rows fit one block keeps a whole
//     row (or ROWS rows, [ROWS, BLOCK]) in registers: every threads loop of
//     the loop IR becomes the same straight-line code over
//     cols = tl.arange(0, BLOCK), a reduction is one tl.sum / tl.reduce,
//     and the sram row buffer of a one-pass kernel is the register tensor
//     phase 1 computed.
//   - rows, cut into stretches: an element-wise kernel whose loop over the
//     row is cut into static stretches [lo, hi) (a concat along the row,
//     rotate_half) runs ROWS rows per program, each stretch as its own
//     [ROWS, W] block over columns lo + tl.arange(0, W): every lane does
//     the work of its stretch only, the row's index arithmetic is done
//     once per row, and each stretch reads contiguous runs of W columns.
//   - rows, looped: rows longer than one block (and generic kernels) run
//     each loop of the loop IR as a Python loop over chunks of BLOCK,
//     carrying [BLOCK] partial results; a row kept in sram by a one-pass
//     kernel is read from DRAM again (and recomputed) by the later loops,
//     which is the two-pass schedule.
//   - rows, resident split (schedule = "resident"): a program per split
//     of a row, numbered by a ticket; every threads loop is one block
//     (planResident), and the split is the register tensor kept across
//     the group sync (resident.go).

// Block and warp choices, measured on the H200 (bench/gpu/run.py --tune,
// docs/triton.md has the figures).
const (
	// maxOneBlock is the longest row kept in registers: 32768 elements,
	// the bound Liger-Kernel and Unsloth use (with f32 values, 128 KiB of
	// the 256 KiB register file of an SM).
	maxOneBlock = 32768
	// rowsTarget is the number of elements a program of short rows covers
	// ([ROWS, BLOCK] with ROWS * BLOCK about rowsTarget).
	rowsTarget = 4096
	// maxRows bounds ROWS.
	maxRows = 64
	// flatBlock is the elements of one program of a flat kernel: 8 per
	// thread at 4 warps, as Inductor's pointwise kernels; every choice from
	// 1024 to 8192 elements and 4 to 16 warps came within 2% of the copy
	// bandwidth on logaddexp, quantize and SwiGLU.
	flatBlock = 1024
	flatWarps = 4
	// stretchTarget is the number of elements a program of a kernel cut
	// into stretches covers (ROWS rows of the row length): RoPE on the q
	// of a Llama-3-8B prefill ran at 0.92 of the copy bandwidth with 16
	// rows of 128 at 4 warps, 0.89 with 8 (bench/gpu/rope_variants.py).
	stretchTarget = 2048
	// loopedBlock is the chunk of a looped row kernel.
	loopedBlock = 4096
	// genericBlock is the chunk of the loops of generic kernels
	// (transpose, matmul, ...), correct rather than fast.
	genericBlock = 256
	genericWarps = 4
)

// rowWarps is the number of warps of a row program of n elements (ROWS *
// BLOCK): 4 up to 4096, 8 up to 16384, 16 for 32768, so that each thread
// holds 32 to 64 elements. Liger-Kernel's rule (8 from 2048, 16 from 8192,
// 32 from 32768: 8 to 32 per thread) left the RMSNorm -> SiLU -> Mul chain
// at 0.7x of this choice on rows of 5120 and 14336, where the kernel keeps
// three rows (x in f32, the weight, z) in registers across the reduction.
func rowWarps(n int64) int64 {
	switch {
	case n >= 32768:
		return 16
	case n >= 8192:
		return 8
	}
	return 4
}

// kernelMode is the form of a kernel.
type kernelMode uint8

const (
	modeFlat kernelMode = iota
	modeRows
)

// kernelPlan is what planning decides about a kernel.
type kernelPlan struct {
	mode kernelMode
	// mm is set for a tiled matmul kernel (matmul.go), which has no other
	// form.
	mm *matmulPlan
	// twoD: [ROWS, BLOCK] tensors, ROWS rows per program (row kernels of
	// one block).
	twoD bool
	// oneBlock: every threads loop is one block of BLOCK >= rowLen.
	oneBlock bool
	rowLen   int64
	block    int64
	rows     int64
	warps    int64

	grid loop.ParallelOp
	// cols is the extent of the rows of a flat kernel (the bound of its
	// threads loops).
	cols *ir.Value
	// tails are the scalar loops after a vector loop (dynamic rows), which
	// a flat kernel's masked block already covers.
	tails map[*ir.Operation]bool
	// spans are the threads loops of a flat kernel whose loop over the row
	// is cut into static stretches [lo, hi) (views.go in lowering: a
	// concat along the row reads one piece per loop); each runs on the
	// lanes of its stretch.
	spans map[*ir.Operation][2]int64
	// stretched is set when the spans run as [ROWS, W] blocks, one per
	// stretch, rather than under masks of a flat block.
	stretched bool
	// vectorized are the serial loops run as blocks (the loop over the
	// last output dimension of a generic kernel).
	vectorized map[*ir.Operation]bool
	// chunks are the threads loops of an online row kernel over one chunk
	// of the row ([0, n) with n <= BLOCK, in the loop over the chunks or
	// after it): each is one block, and the chunk its first loop keeps in
	// sram is the register tensor its second loop reads.
	chunks map[*ir.Operation]bool
	// online is set for an online row kernel: the loops over the row
	// after its chunks (the pass that writes the row, carrying nothing)
	// walk it backwards, so that the chunks the first pass read last,
	// still in L2, are read again first (reversedPass).
	online bool
	// resident is set for a resident split (schedule = "resident"): each
	// program takes a loop.ticket for the split of a row it computes,
	// keeps the split in one block (its chunk) across a loop.group_sync
	// with the row's other programs, and every threads loop is a chunk.
	resident bool
	// widths are the widths of the chunks of a resident split narrower
	// than BLOCK (the loops over the row's S partial results): a block of
	// next_power_of_2(n) columns rather than BLOCK.
	widths map[*ir.Operation]int64
	// persist is set for a row kernel of one block ([ROWS, BLOCK], not a
	// part of a kernel of several): its program loops over the blocks of
	// rows, tl.range(pid, blocks, programs), so that a launch of PERSIST
	// programs per multiprocessor covers every row, the loop pipelined
	// STAGES deep. PERSIST 0 launches a program per block of rows, each
	// looping once.
	persist          bool
	persistN, stages int64
}

// configDict is the CONFIGS entry of the plan: the launch parameters a
// user may change. BLOCK of a one-block kernel is fixed (the row must fit).
func (p *kernelPlan) configDict() []configEntry {
	out := []configEntry{{"BLOCK", p.block}}
	if p.twoD {
		out = append(out, configEntry{"ROWS", p.rows})
	}
	out = append(out, configEntry{"num_warps", p.warps})
	if p.persist {
		out = append(out, configEntry{"PERSIST", p.persistN}, configEntry{"STAGES", p.stages})
	}
	return out
}

type configEntry struct {
	key   string
	value int64
}

// plan classifies the loops of kernel k and chooses its form.
func plan(k loop.KernelOp) (*kernelPlan, error) { return planForm(k, false) }

// planForm is plan; with asRows, an element-wise kernel whose rows are one
// static threads loop runs them as one stretch, [ROWS, next_power_of_2(C)]
// blocks, rather than as a flat 1-D grid: the form of the stretched
// sibling parts it shares a launch with.
func planForm(k loop.KernelOp, asRows bool) (*kernelPlan, error) {
	body := k.Body().Entry()
	p := &kernelPlan{tails: map[*ir.Operation]bool{}, spans: map[*ir.Operation][2]int64{}, vectorized: map[*ir.Operation]bool{}, chunks: map[*ir.Operation]bool{}}
	sched, _ := k.Schedule()
	online := sched == "online"
	p.resident = sched == "resident"
	p.online = online && reversedPass
	if p.resident {
		return planResident(k, p)
	}
	g, err := theGrid(k, body)
	if err != nil {
		return nil, err
	}
	p.grid = g
	gridBody := g.Body().Entry()

	// the loops of the grid
	var threads []loop.ForOp
	serialInGrid := false
	var check func(b *ir.Block, inThreads bool) error
	check = func(b *ir.Block, inThreads bool) error {
		for op := b.First(); op != nil; op = op.Next() {
			switch op.Name() {
			case loop.OpParallel:
				return ir.OpError(op, "is nested in the launch grid; a kernel has one grid")
			case loop.OpFor:
				f, _ := loop.AsFor(op)
				if f.Dist() == "threads" {
					if inThreads {
						return ir.OpError(op, "is a threads loop nested in a threads loop")
					}
					chunk := online && touchesSram(f)
					if b != gridBody && !(chunk && b.ParentOp().ParentOp() == g.Operation) {
						return ir.OpError(op, "is a threads loop that is not directly in the launch grid")
					}
					if chunk {
						n, ok := indexConst(f.Upper())
						if !ok || !isIndexConst(f.Lower(), 0) {
							return ir.OpError(op, "is a loop over a chunk of an online row kernel without static bounds [0, n)")
						}
						p.chunks[op] = true
						p.block = max(p.block, nextPow2(n))
					}
					threads = append(threads, f)
					if err := check(f.Body().Entry(), true); err != nil {
						return err
					}
					continue
				}
				if b == gridBody && len(f.Inits()) == 0 && storesFollow(f) {
					p.vectorized[op] = true
				}
				serialInGrid = true
				if err := check(f.Body().Entry(), inThreads); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := check(gridBody, false); err != nil {
		return nil, err
	}

	if k.Kind() == "elementwise" && !serialInGrid && isIndexConst(g.Lower(), 0) && isIndexConst(g.Step(), 1) &&
		planSpans(p, threads, asRows) && planStretched(p) {
		return p, nil
	}
	if k.Kind() == "elementwise" && !serialInGrid && planFlat(p, threads) {
		p.mode = modeFlat
		p.block, p.warps = flatBlock, flatWarps
		return p, nil
	}
	p.mode = modeRows
	if len(p.vectorized) > 0 || k.Kind() == "generic" || k.Kind() == "matmul" {
		p.block, p.warps = genericBlock, genericWarps
		return p, nil
	}
	if online {
		// the chunks are blocks; the loops after them run over the row
		// BLOCK at a time
		p.block = max(p.block, 1)
		p.warps = rowWarps(p.block)
		return p, nil
	}
	if c, ok := oneBlockRow(threads); ok {
		p.oneBlock = true
		p.rowLen = c
		p.block = nextPow2(c)
		p.twoD = k.Kind() == "row" && isIndexConst(g.Lower(), 0) && isIndexConst(g.Step(), 1)
		p.rows = 1
		if p.twoD && p.block < rowsTarget {
			p.rows = min(rowsTarget/p.block, maxRows)
		}
		p.warps = rowWarps(p.rows * p.block)
		return p, nil
	}
	p.block = loopedBlock
	if c, ok := staticRow(threads); ok && nextPow2(c) < loopedBlock {
		p.block = nextPow2(c)
	}
	p.warps = rowWarps(p.block)
	return p, nil
}

// planResident plans a resident split (lowering/resident.go): a program
// per instance of the grid, whose threads loops, directly in the grid,
// are each one block over a static [0, n). The loops over the split of
// the row, which keep it in sram, are blocks of BLOCK =
// next_power_of_2(split) columns, the register tensor that holds the
// split from its load to the store of its normalised columns across the
// group sync; the loops over the S partial results of the row are
// blocks of next_power_of_2(S) columns.
func planResident(k loop.KernelOp, p *kernelPlan) (*kernelPlan, error) {
	if k.Kind() != "row" {
		return nil, ir.OpError(k.Operation, "cannot be translated to Triton: a resident split of a kernel of kind '%s'", k.Kind())
	}
	g, err := theGrid(k, k.Body().Entry())
	if err != nil {
		return nil, err
	}
	p.grid = g
	p.mode = modeRows
	p.widths = map[*ir.Operation]int64{}
	narrow := map[*ir.Operation]int64{}
	g.Operation.Walk(func(op *ir.Operation) bool {
		if err != nil {
			return false
		}
		switch op.Name() {
		case loop.OpParallel:
			if op != g.Operation {
				err = ir.OpError(op, "is nested in the launch grid; a kernel has one grid")
			}
		case loop.OpTicket, loop.OpGroupSync:
			if op.ParentOp() != g.Operation {
				err = kernelError(op, "is not directly in the launch grid")
			}
		case loop.OpFor:
			f, _ := loop.AsFor(op)
			if f.Dist() != "threads" {
				err = kernelError(op, "is a serial loop in a resident split")
				return false
			}
			if op.ParentOp() != g.Operation {
				err = kernelError(op, "is a threads loop that is not directly in the launch grid")
				return false
			}
			n, ok := indexConst(f.Upper())
			if !ok || n < 1 || !isIndexConst(f.Lower(), 0) || nextPow2(n) > maxOneBlock {
				err = kernelError(op, "is a loop of a resident split without static bounds [0, n), n <= %d", maxOneBlock)
				return false
			}
			p.chunks[op] = true
			if touchesSram(f) {
				p.block = max(p.block, nextPow2(n))
			} else {
				narrow[op] = nextPow2(n)
			}
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	if p.block == 0 {
		return nil, ir.OpError(k.Operation, "cannot be translated to Triton: a resident split that keeps no split in sram")
	}
	for op, w := range narrow {
		if w < p.block {
			p.widths[op] = w
		}
	}
	p.warps = residentWarps(p.block)
	return p, nil
}

// theGrid is the one loop.parallel of kernel k's body.
func theGrid(k loop.KernelOp, body *ir.Block) (loop.ParallelOp, error) {
	var grids []*ir.Operation
	for op := body.First(); op != nil; op = op.Next() {
		if op.Name() == loop.OpParallel {
			grids = append(grids, op)
		}
	}
	if len(grids) != 1 {
		return loop.ParallelOp{}, ir.OpError(k.Operation, "has %d loop.parallel in its body; the Triton emitter needs exactly one, the launch grid", len(grids))
	}
	g, _ := loop.AsParallel(grids[0])
	return g, nil
}

// residentWarps is the number of warps of a resident split's program
// holding a block of n elements: one per 2048 elements, at least 4. On an
// H100, softmax over 4096 rows of 256000 bf16 in splits of 8000 ran at
// 0.73 of the copy bandwidth with 4 warps and 0.71 with 8
// (bench/results/gpu-h100-2026-12-06-resident.txt): each program waits at
// the group sync, and smaller programs let more of them share an SM.
func residentWarps(n int64) int64 {
	return max(4, n/2048)
}

// Persistent row kernels (kernelPlan.persist): the default programs per
// multiprocessor (0: a program per block of rows) and pipeline depth.
const (
	persistPrograms = 0
	persistStages   = 1
)

// reversedPass turns on the backward second pass of online row kernels
// (kernelPlan.online): with TENSORFORGE_TRITON_ONLINE=backward in tfc's
// environment. It stays off by default until it is measured on the GPU
// (bench/session.sh vocab times it beside the forward pass).
var reversedPass = os.Getenv("TENSORFORGE_TRITON_ONLINE") == "backward"

// persistentRows turns the persistent form of row kernels on: with
// TENSORFORGE_PERSISTENT_ROWS=1 in tfc's environment. It is off by
// default: on an H100 it was no faster than a program per block of rows
// (bench/results/gpu-h100-2026-12-06-persistent-rows.md).
var persistentRows = os.Getenv("TENSORFORGE_PERSISTENT_ROWS") == "1"

// planPersistent makes a row kernel of one block (not cut into stretches)
// a loop over its blocks of rows, when persistentRows is on. A part of a
// kernel of several is not planned here: it takes its program id from the
// dispatcher.
func planPersistent(k loop.KernelOp, p *kernelPlan) {
	if !persistentRows || p.mode != modeRows || !p.oneBlock || !p.twoD || p.stretched || k.Kind() != "row" {
		return
	}
	p.persist = true
	p.persistN, p.stages = persistPrograms, persistStages
}

// storesFollow reports whether every store in the serial loop f writes
// at an address that depends on f's induction variable, so iterations
// write different elements and may run at the same time.
func storesFollow(f loop.ForOp) bool {
	iv := f.Body().Entry().Args[0]
	ok := true
	f.Operation.Walk(func(op *ir.Operation) bool {
		if s, isStore := loop.AsStore(op); isStore {
			dep := false
			for _, x := range s.Indices() {
				if dependsOn(x, iv) {
					dep = true
				}
			}
			if !dep {
				ok = false
			}
		}
		return ok
	})
	return ok
}

// dependsOn reports whether index value x is computed from v.
func dependsOn(x, v *ir.Value) bool {
	if x == v {
		return true
	}
	op := x.DefiningOp()
	if op == nil || op.NumRegions() > 0 {
		return false
	}
	for _, a := range op.Operands() {
		if dependsOn(a, v) {
			return true
		}
	}
	return false
}

// planFlat checks that an element-wise kernel's threads loops all walk
// the same row [0, C), C defined outside the grid, either in one loop or
// as a vector loop over [0, C - C mod W) and its scalar tail over
// [C - C mod W, C), and records C and the tails.
func planFlat(p *kernelPlan, threads []loop.ForOp) bool {
	if len(threads) == 0 {
		return false
	}
	if planSpans(p, threads, false) {
		return true
	}
	var c *ir.Value
	for i, f := range threads {
		if len(f.Inits()) > 0 {
			return false
		}
		ub := f.Upper()
		if i > 0 && f.Lower() == threads[i-1].Upper() && isVectorEnd(threads[i-1].Upper(), ub) {
			p.tails[f.Operation] = true
			continue
		}
		if !isIndexConst(f.Lower(), 0) {
			return false
		}
		if isVectorEnd(ub, nil) {
			ub = ub.DefiningOp().Operand(0)
		}
		if c == nil {
			c = ub
		}
		if ub != c && !sameConst(ub, c) {
			return false
		}
	}
	if c.DefiningOp() != nil && p.grid.Operation.IsAncestor(c.DefiningOp()) {
		return false
	}
	p.cols = c
	return true
}

// planSpans checks that an element-wise kernel's threads loops cut the row
// [0, C) into consecutive static stretches, and records them.
func planSpans(p *kernelPlan, threads []loop.ForOp, one bool) bool {
	if len(threads) < 2 && !(one && len(threads) == 1) {
		return false
	}
	prev := int64(0)
	for _, f := range threads {
		lo, ok1 := indexConst(f.Lower())
		hi, ok2 := indexConst(f.Upper())
		if len(f.Inits()) > 0 || !ok1 || !ok2 || lo != prev || hi <= lo {
			return false
		}
		prev = hi
	}
	for _, f := range threads {
		lo, _ := indexConst(f.Lower())
		hi, _ := indexConst(f.Upper())
		p.spans[f.Operation] = [2]int64{lo, hi}
	}
	p.cols = threads[len(threads)-1].Upper()
	return true
}

// planStretched makes the kernel whose spans planSpans recorded run ROWS
// rows per program, each stretch a [ROWS, next_power_of_2(hi - lo)] block.
func planStretched(p *kernelPlan) bool {
	c, ok := indexConst(p.cols)
	if !ok || c < 1 || nextPow2(c) > maxOneBlock {
		return false
	}
	p.mode = modeRows
	p.stretched = true
	p.oneBlock = true
	p.twoD = true
	p.rowLen = c
	for _, sp := range p.spans {
		p.block = max(p.block, nextPow2(sp[1]-sp[0]))
	}
	p.rows = max(1, min(stretchTarget/nextPow2(c), maxRows))
	p.warps = rowWarps(p.rows * nextPow2(c))
	return true
}

// spanList spells the stretches in row order: [0, 64), [64, 128).
func (p *kernelPlan) spanList() string {
	var spans [][2]int64
	for _, sp := range p.spans {
		spans = append(spans, sp)
	}
	slices.SortFunc(spans, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	parts := make([]string, len(spans))
	for i, sp := range spans {
		parts[i] = fmt.Sprintf("[%d, %d)", sp[0], sp[1])
	}
	return strings.Join(parts, ", ")
}

// isVectorEnd reports whether end is `C - C mod W`, the end of the vector
// part of a row of dynamic length C (of c when c is not nil).
func isVectorEnd(end, c *ir.Value) bool {
	sub, ok := loop.AsSubi(end.DefiningOp())
	if !ok {
		return false
	}
	rem, ok := loop.AsRemi(sub.Rhs().DefiningOp())
	if !ok || rem.Lhs() != sub.Lhs() {
		return false
	}
	return c == nil || sub.Lhs() == c
}

// oneBlockRow returns the row length when every threads loop walks
// [0, C) for the same static C and a block of next_power_of_2(C) fits.
func oneBlockRow(threads []loop.ForOp) (int64, bool) {
	c, ok := staticRow(threads)
	if !ok || c < 1 || nextPow2(c) > maxOneBlock {
		return 0, false
	}
	return c, true
}

// staticRow returns C when every threads loop walks [0, C) for the same
// static C.
func staticRow(threads []loop.ForOp) (int64, bool) {
	if len(threads) == 0 {
		return 0, false
	}
	var c int64 = -1
	for _, f := range threads {
		ub, ok := indexConst(f.Upper())
		if !ok || !isIndexConst(f.Lower(), 0) || (c >= 0 && ub != c) {
			return 0, false
		}
		c = ub
	}
	return c, true
}

// indexConst returns the value of an integer or index constant.
func indexConst(v *ir.Value) (int64, bool) {
	c, ok := loop.AsConst(v.DefiningOp())
	if !ok || !elemKind(v.Type()).IsInt() {
		return 0, false
	}
	return int64(c.Value()), true
}

func isIndexConst(v *ir.Value, n int64) bool {
	c, ok := indexConst(v)
	return ok && c == n
}

func sameConst(a, b *ir.Value) bool {
	x, ok1 := indexConst(a)
	y, ok2 := indexConst(b)
	return ok1 && ok2 && x == y
}

// touchesSram reports whether loop f loads or stores an sram buffer.
func touchesSram(f loop.ForOp) bool {
	found := false
	f.Operation.Walk(func(op *ir.Operation) bool {
		var m *ir.Value
		if ld, ok := loop.AsLoad(op); ok {
			m = ld.Memref()
		} else if st, ok := loop.AsStore(op); ok {
			m = st.Memref()
		}
		if m != nil {
			if mt, ok := m.Type().(ir.MemRefType); ok && mt.Space == ir.SRAM {
				found = true
			}
		}
		return !found
	})
	return found
}
