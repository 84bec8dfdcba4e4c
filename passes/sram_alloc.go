package passes

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// SRAMAlloc plans the memory of lowered programs (pass `sram-alloc`).
//
// Per loop.kernel, every scratchpad buffer gets a byte offset:
//
//	%row = loop.alloc : memref<8192xf32, sram>
//
// becomes `%row = loop.alloc {offset = 0} : memref<8192xf32, sram>`, and
// the kernel records the bytes one program instance uses in `sram_bytes`.
// Two buffers whose live ranges (from the loop.alloc to the op holding its
// last use) do not overlap may share bytes. A kernel that needs more than
// capacity bytes is an error that names its buffers:
//
//	kernel 'f_k0' needs 65536 bytes of sram but the target 'm3-max' has 32768 (buffers: ...)
//
// Per function, the static loop.alloc_dram intermediates get offsets and
// sizes in one arena, planned the same way over launch order; the
// function records its size in `dram_arena_bytes`. Intermediates of
// dynamic shape are allocated at run time and stay without an offset.
//
// With --remarks=sram each kernel's plan and each function's arena are
// reported. The plan is deterministic: buffers are placed largest first,
// then in program order, each at the lowest aligned offset free during
// its live range.
type SRAMAlloc struct {
	// Capacity is the scratchpad bytes of one program instance.
	Capacity int64
	// CapacityFrom names where Capacity comes from, for the error: "the
	// target 'm3-max'" or "sram-alloc{capacity=1KiB}".
	CapacityFrom string
	// Align is the alignment of sram offsets (the target's vector width,
	// at least 16 bytes).
	Align int64
}

// dramAlign aligns arena offsets: a GPU allocation's granularity, so every
// buffer starts as aligned as one allocated by itself would.
const dramAlign = 256

func init() {
	ir.RegisterPass(&ir.PassInfo{
		Name: "sram-alloc", Title: "SRAMAlloc",
		Summary: "assign loop.alloc offsets per kernel with liveness-based reuse, check them against the scratchpad, and plan the DRAM arena of intermediates",
		Options: []ir.PassOption{{Name: "capacity", Kind: ir.OptBytes, Default: "target",
			Help: "scratchpad bytes of one program instance, such as 228KiB (default: the target's scratchpad)"}},
		New: func(opts ir.PassOptions) (ir.Pass, error) {
			return ir.PassFunc(func(m ir.Module, ctx *ir.PassContext) error {
				a := SRAMAlloc{Align: 16, Capacity: 1 << 62, CapacityFrom: "no target"}
				if ctx != nil && ctx.Target != nil {
					a.Capacity = ctx.Target.ScratchpadBytes
					a.CapacityFrom = "the target '" + ctx.Target.Name + "'"
					a.Align = max(a.Align, int64(ctx.Target.VectorBytes))
				}
				if opts.IsSet("capacity") {
					a.Capacity = opts.Bytes("capacity")
					a.CapacityFrom = "sram-alloc{capacity=" + opts.String("capacity") + "}"
				}
				return a.Run(m, ctx)
			}), nil
		},
	})
}

// Run plans every kernel and function of m. Errors of all kernels are
// reported together.
func (a SRAMAlloc) Run(m ir.Module, ctx *ir.PassContext) error {
	var errs ir.ErrorList
	for o := m.Body().First(); o != nil; o = o.Next() {
		switch o.Name() {
		case loop.OpKernel:
			if err := a.planKernel(loop.KernelOp{Operation: o}, ctx); err != nil {
				errs = append(errs, ir.AsDiagnostics(err)...)
			}
		case ir.FuncOpName:
			planArena(ir.Func{Operation: o}, ctx)
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// buffer is one allocation to place: its size and live range in the
// pre-order numbering of the ops of the kernel or function.
type buffer struct {
	op          *ir.Operation
	size        int64
	first, last int
	offset      int64
}

// placeBuffers gives each buffer the lowest offset (a multiple of align)
// at which it overlaps no buffer placed before it whose live range meets
// its own; buffers are placed largest first, then in program order. It
// returns the bytes used.
func placeBuffers(bufs []*buffer, align int64) int64 {
	order := slices.Clone(bufs)
	sort.SliceStable(order, func(i, j int) bool {
		if order[i].size != order[j].size {
			return order[i].size > order[j].size
		}
		return order[i].first < order[j].first
	})
	var placed []*buffer
	peak := int64(0)
	for _, b := range order {
		var busy []*buffer
		for _, p := range placed {
			if p.first <= b.last && b.first <= p.last {
				busy = append(busy, p)
			}
		}
		sort.Slice(busy, func(i, j int) bool { return busy[i].offset < busy[j].offset })
		off := int64(0)
		for _, p := range busy {
			if off+b.size <= p.offset {
				break
			}
			off = max(off, alignUp(p.offset+p.size, align))
		}
		b.offset = off
		placed = append(placed, b)
		peak = max(peak, off+b.size)
	}
	return peak
}

func alignUp(n, a int64) int64 { return (n + a - 1) / a * a }

// numbering numbers the ops nested in root in pre-order and records, for
// each op, the number of the last op inside it.
type numbering struct {
	pos, end map[*ir.Operation]int
}

func number(root *ir.Operation) numbering {
	n := numbering{pos: map[*ir.Operation]int{}, end: map[*ir.Operation]int{}}
	next := 0
	var walk func(op *ir.Operation)
	walk = func(op *ir.Operation) {
		n.pos[op] = next
		next++
		for _, r := range op.Regions() {
			for _, b := range r.Blocks {
				for o := b.First(); o != nil; o = o.Next() {
					walk(o)
				}
			}
		}
		n.end[op] = next - 1
	}
	walk(root)
	return n
}

// liveRange is the range of a value defined by def: from def to the end of
// the last op of def's block that holds a use (a use nested in a loop
// keeps the value live through the whole loop).
func (n numbering) liveRange(def *ir.Operation) (first, last int) {
	first, last = n.pos[def], n.pos[def]
	for _, u := range def.Result(0).Uses() {
		o := u.Owner
		for o != nil && o.Block() != def.Block() {
			o = o.ParentOp()
		}
		if o == nil {
			o = u.Owner
		}
		last = max(last, n.end[o])
	}
	return first, last
}

// planKernel places the kernel's sram buffers and checks the capacity.
func (a SRAMAlloc) planKernel(k loop.KernelOp, ctx *ir.PassContext) error {
	num := number(k.Operation)
	var bufs []*buffer
	k.Walk(func(o *ir.Operation) bool {
		if o.Name() == loop.OpAlloc {
			mt, _ := o.Result(0).Type().(ir.MemRefType)
			size, _ := ir.ByteSizeOf(mt)
			first, last := num.liveRange(o)
			bufs = append(bufs, &buffer{op: o, size: size, first: first, last: last})
		}
		return true
	})
	peak := placeBuffers(bufs, a.Align)
	for _, b := range bufs {
		b.op.SetAttr("offset", ir.IntAttr{Value: b.offset, Type: ir.I64Type})
	}
	k.SetAttr("sram_bytes", ir.IntAttr{Value: peak, Type: ir.I64Type})
	list := describe(bufs)
	if peak > a.Capacity {
		return ir.Errorf(k.Loc, "kernel '%s' needs %d bytes of sram but %s has %d (buffers: %s)",
			k.SymName(), peak, a.CapacityFrom, a.Capacity, list)
	}
	if ctx != nil {
		if len(bufs) == 0 {
			ctx.Remark("sram", k.Loc, "kernel '%s' uses no sram", k.SymName())
		} else {
			ctx.Remark("sram", k.Loc, "kernel '%s' uses %d of %d bytes of sram: %s", k.SymName(), peak, a.Capacity, list)
		}
	}
	return nil
}

// describe lists buffers in program order: `%row: 32768 bytes at 0`.
func describe(bufs []*buffer) string {
	sorted := slices.Clone(bufs)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].first < sorted[j].first })
	parts := make([]string, len(sorted))
	for i, b := range sorted {
		name := b.op.Result(0).Name
		if name == "" {
			name = fmt.Sprintf("#%d", i)
		}
		parts[i] = fmt.Sprintf("%%%s %s, %d bytes at %d", name, b.op.Result(0).Type(), b.size, b.offset)
	}
	return strings.Join(parts, "; ")
}

// planArena places a function's static intermediates in its DRAM arena.
func planArena(f ir.Func, ctx *ir.PassContext) {
	if f.Body() == nil {
		return
	}
	num := number(f.Operation)
	var bufs []*buffer
	dynamic := 0
	for o := f.Body().First(); o != nil; o = o.Next() {
		if o.Name() != loop.OpAllocDRAM {
			continue
		}
		mt, _ := o.Result(0).Type().(ir.MemRefType)
		size, static := ir.ByteSizeOf(mt)
		if z, _ := (loop.AllocDRAMOp{Operation: o}).Zeroed(); z {
			// counters kept by the launcher across calls, not in the arena
			o.Attrs.Delete("offset")
			o.Attrs.Delete("size")
			continue
		}
		if !static {
			dynamic++
			o.Attrs.Delete("offset")
			o.Attrs.Delete("size")
			continue
		}
		first, last := num.liveRange(o)
		bufs = append(bufs, &buffer{op: o, size: size, first: first, last: last})
	}
	if len(bufs) == 0 && dynamic == 0 && f.Attr("num_results") == nil {
		return // not a lowered function
	}
	peak := placeBuffers(bufs, dramAlign)
	for _, b := range bufs {
		b.op.SetAttr("offset", ir.IntAttr{Value: b.offset, Type: ir.I64Type})
		b.op.SetAttr("size", ir.IntAttr{Value: b.size, Type: ir.I64Type})
	}
	f.SetAttr("dram_arena_bytes", ir.IntAttr{Value: peak, Type: ir.I64Type})
	if ctx != nil && len(bufs)+dynamic > 0 {
		total := int64(0)
		for _, b := range bufs {
			total += b.size
		}
		noun := "intermediates"
		if len(bufs) == 1 {
			noun = "intermediate"
		}
		msg := fmt.Sprintf("function '%s' keeps %d %s in a DRAM arena of %d bytes (%d bytes without reuse)",
			f.SymName(), len(bufs), noun, peak, total)
		if len(bufs) > 0 {
			msg += ": " + describe(bufs)
		}
		if dynamic > 0 {
			msg += fmt.Sprintf("; %d of dynamic shape allocated at run time", dynamic)
		}
		ctx.Remark("sram", f.Loc, "%s", msg)
	}
}
