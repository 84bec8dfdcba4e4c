package lowering

import (
	"slices"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// Horizontal fusion: sibling kernels launched as one.
//
// After vertical fusion, q's and k's rotary embeddings are two element-wise
// kernels of the same form that read the same cos and sin tables (Qwen3's
// per-head norm and RoPE of q and of k, two row kernels); in a decode step,
// v's write into the cache reads the same positions as k's, and joins them
// when it is an element-wise kernel too. Each is small, and each launch
// costs a few microseconds of a step that moves a few hundred kilobytes.
// mergeSiblings launches such kernels as one kernel of several parts
// (loop.MergeLaunches, dialects/loop/parts.go): one grid whose programs run
// q's rows, then k's. Nothing is recomputed and no bytes change: each part
// is the kernel it was.
//
// Launches are merged in runs of at most maxParts consecutive launches
// (the ops between them only allocate buffers), when each kernel
//   - is an element-wise or row kernel of the same form as the run's
//     first: kind, vector width, row length and schedule (a part is then
//     translated exactly as the kernel alone);
//   - reads a buffer that a kernel of the run reads (siblings share their
//     tables or indices; unrelated kernels stay apart);
//   - is independent of the run: it reads nothing the run writes, and
//     writes nothing the run reads or writes.
func (l *funcLowering) mergeSiblings() {
	if l.opts.NoHorizontal {
		return
	}
	var run []loop.LaunchOp
	var reads, writes []*ir.Value
	flush := func() {
		if len(run) > 1 {
			var names []string
			for _, r := range run {
				names = append(names, r.Kernel())
			}
			loc := run[0].Operation.Loc
			merged, err := loop.MergeLaunches(run, names[0])
			if err != nil {
				fail(run[len(run)-1].Operation, "cannot launch kernels %s as one: %v", strings.Join(names, ", "), err)
			}
			l.opts.Remarks.Remark("fusion", loc, "kernels %s are launched as one kernel of %d parts '%s': they read the same buffers and are independent",
				strings.Join(names, ", "), len(run), merged.Kernel())
		}
		run, reads, writes = nil, nil, nil
	}
	for _, op := range l.newFn.Body().Ops() {
		lo, ok := loop.AsLaunch(op)
		if !ok {
			if op.Name() != loop.OpAllocDRAM && !op.HasTrait(ir.Pure) {
				flush()
			}
			continue
		}
		k, ok := loop.LookupKernel(op, lo.Kernel())
		if !ok {
			flush()
			continue
		}
		if _, guarded := lo.Guard(); guarded || !mergeable(k) {
			flush()
			continue
		}
		in, out := launchBuffers(lo, k)
		if len(run) >= maxParts || len(run) > 0 && !sibling(run, k, in, out, reads, writes) {
			flush()
		}
		run = append(run, lo)
		reads = append(reads, in...)
		writes = append(writes, out...)
	}
	flush()
}

// maxParts bounds the parts of a merged kernel: a launch saved matters
// for a few siblings (q, k and v of a layer); a function that copies one
// argument into thousands of results gains nothing from one kernel of
// thousands of grids, which every emitter would translate as one function.
const maxParts = 8

// mergeable reports whether kernel k may be a part of a merged kernel:
// an element-wise or row kernel of one grid.
func mergeable(k loop.KernelOp) bool {
	return (k.Kind() == "elementwise" || k.Kind() == "row") && len(loop.Parts(k)) == 1
}

// sameForm reports whether kernels a and b have the attributes that
// decide how a kernel is translated: kind, vector width, row length and
// schedule. A part is then translated exactly as the kernel alone.
func sameForm(a, b loop.KernelOp) bool {
	wa, _ := a.VectorWidth()
	wb, _ := b.VectorWidth()
	ra, _ := a.RowLen()
	rb, _ := b.RowLen()
	sa, _ := a.Schedule()
	sb, _ := b.Schedule()
	return a.Kind() == b.Kind() && wa == wb && ra == rb && sa == sb
}

// sibling reports whether kernel k (mergeable), launched on buffers in and
// out, joins the run of launches whose kernels read reads and write writes.
func sibling(run []loop.LaunchOp, k loop.KernelOp, in, out, reads, writes []*ir.Value) bool {
	first, _ := loop.LookupKernel(run[0].Operation, run[0].Kernel())
	if !sameForm(first, k) {
		return false
	}
	shares := false
	for _, b := range in {
		if slices.Contains(writes, b) {
			return false
		}
		shares = shares || slices.Contains(reads, b)
	}
	for _, b := range out {
		if slices.Contains(reads, b) || slices.Contains(writes, b) {
			return false
		}
	}
	return shares
}

// launchBuffers returns the input and output buffers of launch lo of k.
func launchBuffers(lo loop.LaunchOp, k loop.KernelOp) (in, out []*ir.Value) {
	args := lo.Args()
	nin, nout := int(k.NumInputs()), int(k.NumOutputs())
	return args[:nin], args[nin : nin+nout]
}
