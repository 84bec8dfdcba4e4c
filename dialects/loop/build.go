package loop

import (
	"github.com/tensorforge/tensorforge/dialects/ods"
	"github.com/tensorforge/tensorforge/ir"
)

// This file holds the builders of the ops with regions (loop.kernel,
// loop.parallel, loop.for), which a declaration cannot describe, the
// strided forms of loop.load and loop.store, and a
// constant builder that spells `value` as the result type wants it.

// KernelArgs returns the block argument types of a kernel over the given
// input and output buffer types: the buffers, then one index per `?`.
func KernelArgs(inputs, outputs []ir.Type) []ir.Type {
	args := append(append([]ir.Type(nil), inputs...), outputs...)
	for range DynamicExtents(args) {
		args = append(args, ir.IndexType)
	}
	return args
}

// BuildKernel creates a loop.kernel called name at b's insertion point (at
// module level). body fills the entry block: it gets a builder at its end
// and the block arguments (inputs, outputs, then one index per dynamic
// extent of theirs, see KernelArgs); BuildKernel appends the loop.return.
// Further attributes (sram_bytes, schedule, ...) can be set afterwards.
// It returns an error, and leaves nothing behind, when body fails or the
// kernel would not verify.
func BuildKernel(b *ir.Builder, loc ir.Location, name, kind string, inputs, outputs []ir.Type,
	body func(bb *ir.Builder, args []*ir.Value) error) (KernelOp, error) {
	attrs := ir.Attrs(
		"sym_name", ir.StringAttr(name),
		"kind", ir.StringAttr(kind),
		"num_inputs", ir.IntAttr{Value: int64(len(inputs)), Type: ir.I64Type},
		"num_outputs", ir.IntAttr{Value: int64(len(outputs)), Type: ir.I64Type},
	)
	op := ir.NewOperation(OpKernel, loc, nil, nil, attrs, 1)
	entry := ir.NewBlock(KernelArgs(inputs, outputs)...)
	op.Region(0).AppendBlock(entry)
	bb := ir.NewBuilderAtEnd(entry)
	bb.Loc = loc
	err := body(bb, entry.Args)
	if err == nil {
		_, err = BuildReturn(bb, loc)
	}
	if err != nil {
		op.Erase()
		return KernelOp{}, err
	}
	b.Insert(op)
	if err := verifyKernelOp(op); err != nil {
		op.Erase()
		return KernelOp{}, err
	}
	return KernelOp{op}, nil
}

// BuildParallel creates the launch grid `loop.parallel %lower, %upper,
// %step {dist = "grid"}` at b's insertion point. body fills the iteration:
// it gets a builder at the end of the block and the induction variable;
// BuildParallel appends the loop.yield.
func BuildParallel(b *ir.Builder, loc ir.Location, lower, upper, step *ir.Value,
	body func(bb *ir.Builder, iv *ir.Value) error) (ParallelOp, error) {
	op := ir.NewOperation(OpParallel, loc, []*ir.Value{lower, upper, step}, nil, ir.Attrs("dist", ir.StringAttr("grid")), 1)
	entry := ir.NewBlock(ir.IndexType)
	op.Region(0).AppendBlock(entry)
	b.Insert(op) // so that ops built in the body see their kernel
	bb := ir.NewBuilderAtEnd(entry)
	bb.Loc = loc
	err := body(bb, entry.Args[0])
	if err == nil {
		_, err = BuildYield(bb, loc, nil)
	}
	if err == nil {
		err = verifyParallelOp(op)
	}
	if err != nil {
		op.Erase()
		return ParallelOp{}, err
	}
	return ParallelOp{op}, nil
}

// BuildFor creates a loop.for at b's insertion point, carrying inits.
// dist is "serial" or "threads"; combine gives one kind per carried value
// of a threads loop (nil otherwise). body gets a builder at the end of the
// block, the induction variable and the carried values, and returns the
// values to yield, which BuildFor yields.
func BuildFor(b *ir.Builder, loc ir.Location, lower, upper, step *ir.Value, inits []*ir.Value, dist string, combine []string,
	body func(bb *ir.Builder, iv *ir.Value, carried []*ir.Value) ([]*ir.Value, error)) (ForOp, error) {
	var attrs ir.AttrDict
	if dist != "" && dist != "serial" {
		attrs.Set("dist", ir.StringAttr(dist))
	}
	if len(combine) > 0 {
		arr := make(ir.ArrayAttr, len(combine))
		for i, c := range combine {
			arr[i] = ir.StringAttr(c)
		}
		attrs.Set("combine", arr)
	}
	types := make([]ir.Type, len(inits))
	for i, v := range inits {
		types[i] = v.Type()
	}
	operands := append([]*ir.Value{lower, upper, step}, inits...)
	op := ir.NewOperation(OpFor, loc, operands, types, attrs, 1)
	entry := ir.NewBlock(append([]ir.Type{ir.IndexType}, types...)...)
	op.Region(0).AppendBlock(entry)
	b.Insert(op)
	bb := ir.NewBuilderAtEnd(entry)
	bb.Loc = loc
	yielded, err := body(bb, entry.Args[0], entry.Args[1:])
	if err == nil {
		_, err = BuildYield(bb, loc, yielded)
	}
	if err == nil {
		err = verifyForOp(op)
	}
	if err != nil {
		op.Erase()
		return ForOp{}, err
	}
	return ForOp{op}, nil
}

// ConstAttr spells v as a `value` attribute for a constant of type t: an
// integer for integer and index types, `: f64` for f64, f32 otherwise.
func ConstAttr(t ir.Type, v float64) ir.Attr {
	switch k := elemKind(t); {
	case k.IsInt():
		return ir.IntAttr{Value: int64(v), Type: ir.I64Type}
	case k == ir.F64:
		return ir.FloatAttr{Value: v, Type: ir.F64Type}
	}
	return ir.FloatAttr{Value: v, Type: ir.F32Type}
}

// BuildConstant creates `%c = loop.const {value = v} : t` with v spelled
// for t (see ConstAttr).
func BuildConstant(b *ir.Builder, loc ir.Location, t ir.Type, v float64) (ConstOp, error) {
	op := ir.NewOperation(OpConst, loc, nil, []ir.Type{t}, ir.Attrs("value", ConstAttr(t, v)), 0)
	b.Insert(op)
	if err := verifyConstOp(op); err != nil {
		op.Erase()
		return ConstOp{}, err
	}
	return ConstOp{op}, nil
}

// BuildStridedLoad creates a vector loop.load whose lanes run along
// dimension axis of memref (`axis`), one element per step of that index.
// It returns an error, and leaves nothing behind, when the op would not
// verify.
func BuildStridedLoad(b *ir.Builder, loc ir.Location, memref *ir.Value, indices []*ir.Value, outputType ir.Type, axis int) (LoadOp, error) {
	var attrs ir.AttrDict
	attrs.Set("axis", ir.IntAttr{Value: int64(axis), Type: ir.I64Type})
	op := ir.NewOperation(OpLoad, loc, append([]*ir.Value{memref}, indices...), []ir.Type{outputType}, attrs, 0)
	if err := ods.Build(b, op, checkLoadInputs, verifyLoadOp, nil); err != nil {
		return LoadOp{}, err
	}
	return LoadOp{op}, nil
}

// BuildStridedStore creates a vector loop.store whose lanes run along
// dimension axis of memref (`axis`), one element per step of that index.
// It returns an error, and leaves nothing behind, when the op would not
// verify.
func BuildStridedStore(b *ir.Builder, loc ir.Location, value, memref *ir.Value, indices []*ir.Value, axis int) (StoreOp, error) {
	var attrs ir.AttrDict
	attrs.Set("axis", ir.IntAttr{Value: int64(axis), Type: ir.I64Type})
	op := ir.NewOperation(OpStore, loc, append([]*ir.Value{value, memref}, indices...), nil, attrs, 0)
	if err := ods.Build(b, op, checkStoreInputs, verifyStoreOp, nil); err != nil {
		return StoreOp{}, err
	}
	return StoreOp{op}, nil
}
