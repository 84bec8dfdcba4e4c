// Package costmodel says what a compiled program costs a machine: the DRAM
// bytes every kernel reads and writes, the floating-point work it does, and
// where that puts it on the machine's roofline.
//
// A kernel is what runs as one launch. After lowering it is a `loop.launch`
// of a `loop.kernel`, and its traffic is read off the compiler's own buffer
// plan: the launch reads each of its input memrefs once and writes each of
// its output memrefs once,
//
//	loop.launch %x, %w, %z, %y {kernel = "rms_silu_mul_k0"} : (memref<4096x8192xbf16, dram>, ...) -> ()
//	// reads 4096*8192*2 + 8192*2 + 4096*8192*2 bytes, writes 4096*8192*2
//
// except that a two-pass row kernel reads a full row again in each later
// phase that loads it. Before lowering (a pipeline that stops at the graph level), each
// `graph.fused` and each op left at the top level of a function is one
// kernel that reads its operands and writes its results. LoopKernels and
// GraphKernels compute the two; Pair joins them, kernel for kernel, so that
// a lowered kernel also knows the graph ops it computes and their FLOPs.
//
// FLOPs are counted per graph op (CountFLOPs): one per element of an
// element-wise op (a transcendental counts as one), one per input element
// of a reduction, 2*M*N*K for a matmul, none for casts, constants and ops
// that only move data.
//
// Machine.Place puts a kernel on a machine's roofline (MachineFor reads it
// from the target table): arithmetic intensity, ridge point, attainable
// throughput, bound regime and the shortest time the machine's DRAM
// bandwidth and peak compute allow. WritePlot draws it; WriteTraffic,
// WriteKernelRoofline and WriteRoofline print the reports of `tfc
// memory-traffic` and `tfc roofline`.
package costmodel

import (
	"fmt"

	"github.com/tensorforge/tensorforge/ir"
)

// Options are the facts the IR does not hold.
type Options struct {
	// DynamicExtent is the size of every `?` extent of the program's
	// arguments; 0 stands for 1, so that figures are per unit of the
	// extent (per row of a `tensor<?x4096xbf16>`).
	DynamicExtent int64
}

func (o Options) dynamic() int64 {
	if o.DynamicExtent <= 0 {
		return 1
	}
	return o.DynamicExtent
}

// Level is the level of the IR kernels were read from.
type Level string

const (
	// GraphLevel kernels are graph.fused ops and ops left at the top level.
	GraphLevel Level = "graph"
	// LoopLevel kernels are loop.launch ops.
	LoopLevel Level = "loop"
)

// Access is one buffer a kernel reads or writes in DRAM.
type Access struct {
	// Value is the buffer as the function knows it: an argument, a
	// result of a graph op or a loop.alloc_dram.
	Value *ir.Value
	// Type is the buffer's type (a tensor or a memref); Shape is its shape
	// with every `?` resolved.
	Type  ir.Type
	Shape []int64
	// Bytes is one pass over the buffer: elements x element size.
	Bytes int64
	// Passes is how often the kernel moves it: 1, or 2 for a row that a
	// two-pass row kernel reads again in its second phase.
	Passes int64
}

// Total returns the bytes moved: Bytes x Passes.
func (a Access) Total() int64 { return a.Bytes * a.Passes }

// Kernel is one launch of a program.
type Kernel struct {
	// Func is the function that launches it.
	Func string
	// Name is the loop.kernel's sym_name, or, at the graph level, the
	// name lower-to-loops gives it: `<func>_k<i>`.
	Name string
	// Kind is the loop.kernel's or graph.fused's kind ("row",
	// "elementwise", "generic"); an op left alone at the graph level has
	// the op's name ("matmul").
	Kind string
	// Schedule is "one-pass" or "two-pass" for a row kernel, if recorded.
	Schedule string
	// Ops names the graph ops the kernel computes, without the dialect
	// prefix ("cast", "mul", "reduce_sum"); empty when unknown.
	Ops []string
	// Loc is where the kernel comes from in the source.
	Loc ir.Location
	// Reads and Writes are the DRAM buffers it moves.
	Reads, Writes []Access
	// FLOPs is the floating-point work (see CountFLOPs); HasFLOPs says
	// whether it is known (a lowered kernel knows it through Pair).
	FLOPs    int64
	HasFLOPs bool
	// Level says which IR the kernel was read from.
	Level Level
	// Parts is the number of kernels a loop-level kernel launches as one
	// (loop.Parts: sibling kernels merged by lower-to-loops); 1 otherwise.
	Parts int
}

// BytesRead returns the DRAM bytes the kernel reads.
func (k *Kernel) BytesRead() int64 { return sumTotal(k.Reads) }

// BytesWritten returns the DRAM bytes the kernel writes.
func (k *Kernel) BytesWritten() int64 { return sumTotal(k.Writes) }

// Bytes returns the DRAM bytes the kernel moves.
func (k *Kernel) Bytes() int64 { return k.BytesRead() + k.BytesWritten() }

func sumTotal(as []Access) int64 {
	var n int64
	for _, a := range as {
		n += a.Total()
	}
	return n
}

// Totals sums a list of kernels.
type Totals struct {
	Kernels       int
	Read, Written int64
	FLOPs         int64
	HasFLOPs      bool // every kernel's FLOPs are known
}

// Bytes returns Read + Written.
func (t Totals) Bytes() int64 { return t.Read + t.Written }

// Sum adds up the kernels.
func Sum(ks []Kernel) Totals {
	t := Totals{Kernels: len(ks), HasFLOPs: true}
	for i := range ks {
		k := &ks[i]
		t.Read += k.BytesRead()
		t.Written += k.BytesWritten()
		t.FLOPs += k.FLOPs
		t.HasFLOPs = t.HasFLOPs && k.HasFLOPs
	}
	return t
}

// shapeBytes resolves the `?` extents of a shaped type with dyn and
// returns the shape and its storage bytes.
func shapeBytes(t ir.Type, dyn func(axis int) (int64, error)) ([]int64, int64, error) {
	st, ok := t.(ir.ShapedType)
	if !ok {
		return nil, 0, fmt.Errorf("%s is not a buffer", t)
	}
	shape := append([]int64(nil), st.GetShape()...)
	for i, d := range shape {
		if d == ir.Dynamic {
			v, err := dyn(i)
			if err != nil {
				return nil, 0, err
			}
			if v < 0 {
				return nil, 0, fmt.Errorf("%s has a negative extent (%d) at dimension %d", t, v, i)
			}
			shape[i] = v
		}
	}
	n, ok := ir.NumElements(shape)
	if !ok {
		return nil, 0, fmt.Errorf("%s is too large to count its bytes", t)
	}
	size := st.GetElem().Kind.ByteSize()
	if n != 0 && n > (1<<62)/size {
		return nil, 0, fmt.Errorf("%s is too large to count its bytes", t)
	}
	return shape, n * size, nil
}

// shortName drops the dialect prefix: "graph.reduce_sum" -> "reduce_sum".
func shortName(name string) string {
	for i := 0; i < len(name); i++ {
		if name[i] == '.' {
			return name[i+1:]
		}
	}
	return name
}

// Pair joins the kernels of one program read at the graph level (before
// lower-to-loops) and at the loop level (after it), which come in the same
// order: each lowered kernel gets the graph ops it computes and their
// FLOPs. It fails when the two do not correspond one to one, function by
// function.
func Pair(graphKs, loopKs []Kernel) ([]Kernel, error) {
	want := 0
	for _, l := range loopKs {
		want += max(l.Parts, 1)
	}
	if len(graphKs) != want {
		if want != len(loopKs) {
			return nil, fmt.Errorf("the lowered program has %d kernels (of %d parts), but the graph-level program %d", len(loopKs), want, len(graphKs))
		}
		return nil, fmt.Errorf("the lowered program has %d kernels, but the graph-level program %d", len(loopKs), len(graphKs))
	}
	out := make([]Kernel, len(loopKs))
	next := 0
	for i, l := range loopKs {
		// a kernel of several parts computes what its parts' graph kernels do
		l.Ops, l.FLOPs, l.HasFLOPs = nil, 0, true
		for range max(l.Parts, 1) {
			g := &graphKs[next]
			next++
			if g.Func != l.Func {
				return nil, fmt.Errorf("kernel %d is in @%s after lowering, but in @%s before", i, l.Func, g.Func)
			}
			l.Ops = append(l.Ops, g.Ops...)
			l.FLOPs += g.FLOPs
			l.HasFLOPs = l.HasFLOPs && g.HasFLOPs
		}
		out[i] = l
	}
	return out, nil
}
