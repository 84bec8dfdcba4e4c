package passes

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
)

// This file classifies the body of a graph.fused op as one kernel: what
// kind of loop nest it needs, over which iteration space, and how each
// operand is read and each result written. fuse uses the same
// classification to decide whether a group of ops may become one kernel,
// and lower-to-loops reads it instead of deriving it again:
//
//	%h, %n = graph.fused %x, %r, %w {kind = "row", row_len = 8192, schedule = "one-pass"} {
//	^bb0(%a: tensor<4096x8192xbf16>, %b: tensor<4096x8192xbf16>, %c: tensor<8192xbf16>):
//	  ...
//	} : ...
//
// is a row kernel over [4096, 8192]: %a and %b are read as full rows, %c
// as a row-broadcast weight, and both results are full rows.

// KernelKind is the shape of the loop nest a kernel needs.
type KernelKind string

const (
	// KernelElementwise has no reductions: one loop nest over the result
	// shape, every operand read at the broadcast index.
	KernelElementwise KernelKind = "elementwise"
	// KernelRow has one or more reductions over the last axis of rows of
	// length row_len, with element-wise work before them (over full rows)
	// and after them (per row, or broadcast back over the row).
	KernelRow KernelKind = "row"
	// KernelReduce is one reduction over axes other than the last alone.
	KernelReduce KernelKind = "reduce"
	// The ops that are kernels of their own, one kind each.
	KernelMatMul      KernelKind = "matmul"
	KernelTranspose   KernelKind = "transpose"
	KernelReshape     KernelKind = "reshape"
	KernelBroadcastTo KernelKind = "broadcast_to"
	KernelSlice       KernelKind = "slice"
	KernelConcat      KernelKind = "concat"
	// KernelGather is a graph.gather alone: scalar loads at the indices
	// read. A gather along the last axis with one index per row also
	// joins a row kernel, as a per-row load.
	KernelGather KernelKind = "gather"
)

// singleOpKinds maps the ops that are always a kernel of their own to
// their kind.
var singleOpKinds = map[string]KernelKind{
	graph.OpMatMul:      KernelMatMul,
	graph.OpTranspose:   KernelTranspose,
	graph.OpReshape:     KernelReshape,
	graph.OpBroadcastTo: KernelBroadcastTo,
	graph.OpSlice:       KernelSlice,
	graph.OpConcat:      KernelConcat,
}

// Access says how a kernel reads a value at a point of its iteration
// space. For a row kernel over [R..., C]:
//
//	full           [R..., C]          the element itself
//	row-broadcast  [C] or [1..., C]   a weight, indexed by the column
//	per-row        [R..., 1] or [R...] one value per row
//	scalar         [] or [1...]       one value
//
// An element-wise kernel reads full values (the iteration shape), scalars,
// and any other NumPy broadcast ("broadcast"). The operands of a kernel of
// its own (matmul, transpose, ...) are read "whole", as the op defines.
type Access string

const (
	AccessFull         Access = "full"
	AccessRowBroadcast Access = "row-broadcast"
	AccessPerRow       Access = "per-row"
	AccessScalar       Access = "scalar"
	AccessBroadcast    Access = "broadcast"
	AccessWhole        Access = "whole"
	// AccessView: read only through views, at the points their index maps
	// give (an element-wise kernel with views).
	AccessView Access = "view"
)

// Schedules of a row kernel.
const (
	// ScheduleOnePass keeps the row on chip between the reductions and the
	// element-wise work that follows them: DRAM is read once.
	ScheduleOnePass = "one-pass"
	// ScheduleTwoPass reads the row from DRAM again for every phase after
	// the first, because the rows kept would not fit the scratchpad.
	ScheduleTwoPass = "two-pass"
	// ScheduleOnline runs the first two phases of a softmax-like kernel (a
	// max m of the row, then a sum of exp(x - g(m))) as one pass over the
	// row, chunk by chunk, with the running max and the sum rescaled as
	// the max grows (Milakov and Gimelshein's online normaliser): a row
	// too long for the scratchpad is read once for both reductions, and
	// the phases after them read it again as in two-pass. See
	// KernelInfo.Online.
	ScheduleOnline = "online"
	// ScheduleCached is two-pass on a CPU whose rows fit a core's cache
	// with room to spare: each phase after the first reads the row again,
	// from the cache, instead of keeping in a buffer the values it
	// computed from it (f32 rows, twice the bytes of a bf16 input, which
	// one-pass stores and loads again). The re-reads cost no DRAM
	// traffic. On this project's 2-core CI machine, over rows of 8192,
	// RMSNorm -> SiLU -> Mul ran 1.13-1.30x as fast as one-pass in bf16
	// (median of five runs 1.18x) and 1.04x in f32; add + RMSNorm 1.06x in
	// bf16 and 1.00x in f32, medians of noisy runs; softmax, which would
	// compute exp again, 0.85x in bf16, so softmax-like kernels stay
	// one-pass (bench/results/cpu-2026-12-06-cached-rows.txt).
	ScheduleCached = "cached"
	// ScheduleResident is a row kernel lowered for a GPU whose rows, too
	// long for one program's sram, are split across a group of programs
	// that each keep their split in sram and meet at a loop.group_sync
	// (lowering/resident.go); the classification never plans it.
	ScheduleResident = "resident"
)

// RowBufferElemBytes is the least size of one element of a row buffer:
// rows are kept in f32 whatever their storage type, f64 (and 64-bit
// integer) rows in their own (KernelInfo.RowElemBytes).
const RowBufferElemBytes = 4

// KernelInfo describes one kernel: the classification of a graph.fused.
type KernelInfo struct {
	Kind KernelKind
	// Shape is the iteration space: the result shape of an element-wise
	// kernel, [R..., C] for a row kernel, the input shape of a reduce
	// kernel, the result shape of a kernel of its own.
	Shape []int64
	// RowLen is C, the static length of the rows of a row kernel (0 for
	// other kinds).
	RowLen int64
	// Operands and Results give the access of each operand and result of
	// the graph.fused, in order.
	Operands []Access
	Results  []Access
	// Ops are the body's ops in order, without the graph.yield.
	Ops []*ir.Operation
	// Phases[i] is the phase of Ops[i] in a row kernel: ops of phase 0 run
	// over the rows as read, and the result of a reduction of phase p is
	// known from phase p+1 on. Ops of an element-wise kernel are all of
	// phase 0.
	Phases []int
	// NumPhases is one more than the largest phase.
	NumPhases int
	// RowReductions are the reductions of a row kernel over its rows, in
	// order. A reduction in Ops that is not among them reduces a per-row
	// value [R..., 1] over its unit axis: it only drops that axis (per-row
	// work, no loop over the row), as ExpandLogSumExp does for keepdim =
	// false.
	RowReductions []*ir.Operation
	// RowElemBytes is the size of an element of the widest row a one-pass
	// schedule keeps (0: RowBufferElemBytes).
	RowElemBytes int64
	// RowBuffers is the number of full rows a one-pass schedule keeps on
	// chip at once: values (operands included) computed in one phase and
	// used in a later one.
	RowBuffers int
	// Schedule is "one-pass", "two-pass", "cached" or "online" for a row
	// kernel, as recorded
	// in the op's `schedule` attribute or planned by PlanSchedule; "" for
	// other kinds until planned.
	Schedule string
	// Op is the single op of a kernel of its own (and of a reduce kernel).
	Op *ir.Operation
	// Yields are the values the body yields, in result order.
	Yields []*ir.Value
	// Views is how an element-wise kernel reads through its views (nil
	// when it has none).
	Views *ViewPlan
	// MatMuls are the matmuls of a matmul kernel, which share their left
	// operand (Op is the first); the other ops are their element-wise
	// epilogue over the result shape (Shape).
	MatMuls []*ir.Operation
	// OutViews maps each result of a row kernel written through views of
	// one of its full rows (AccessStoredView) to the chain of views, from
	// the op reading the row to the one computing the result
	// (outviews.go).
	OutViews map[*ir.Value][]*ir.Operation

	access map[*ir.Value]Access
}

// AccessOf returns how the kernel reads or computes v, a value of its body
// (a block argument or an op result); "" for a value it does not know.
func (k *KernelInfo) AccessOf(v *ir.Value) Access { return k.access[v] }

// RowBufferBytes is what a one-pass schedule keeps on chip: RowBuffers
// rows of RowLen elements of RowElemBytes (f32, or f64 where a kept row
// is), each from a multiple of 16 bytes as sram-alloc places them; an
// upper bound where the rows differ.
func (k *KernelInfo) RowBufferBytes() int64 {
	// sram-alloc places each buffer at a multiple of 16 bytes
	row := (k.RowLen*k.rowElemBytes() + 15) / 16 * 16
	return int64(k.RowBuffers) * row
}

// rowElemBytes is RowElemBytes, at least RowBufferElemBytes.
func (k *KernelInfo) rowElemBytes() int64 { return max(k.RowElemBytes, RowBufferElemBytes) }

// RowElemName names the element of the rows a one-pass schedule keeps,
// for remarks: f32, or f64 for 8 bytes.
func (k *KernelInfo) RowElemName() string {
	if k.rowElemBytes() == 8 {
		return "f64"
	}
	return "f32"
}

// RereadSchedule is the schedule of a row kernel whose kept rows do not
// fit target t's scratchpad: online where its first phases are a max and a
// sum of exp(x - max), two-pass otherwise.
func (k *KernelInfo) RereadSchedule(t *target.Target) string {
	if _, _, online := k.Online(); online && t.Family != target.Tenstorrent {
		// (a Tensix core's L1 keeps rows of 256K f32 one-pass)
		return ScheduleOnline
	}
	return ScheduleTwoPass
}

// PlanSchedule chooses the schedule of a row kernel for target t: one-pass
// when the rows kept fit its scratchpad, two-pass otherwise. It returns the
// schedule ("" for kinds other than row) and sets k.Schedule.
func (k *KernelInfo) PlanSchedule(t *target.Target) string {
	if k.Kind != KernelRow {
		return ""
	}
	k.Schedule = ScheduleOnePass
	_, _, online := k.Online()
	switch {
	case k.RowBuffers > 0 && t != nil && k.RowBufferBytes() > t.ScratchpadBytes:
		k.Schedule = k.RereadSchedule(t)
	case k.RowBuffers > 0 && t != nil && t.Family == target.CPU && !online && len(k.MatMuls) == 0 && k.RowReadBytes() <= t.ScratchpadBytes/cachedRowShare:
		// (not softmax-like kernels, whose later phase would compute
		// exp(x - max) again where one-pass keeps it: 0.85x in bf16; nor
		// rows of dot products, which a re-read would compute again)
		k.Schedule = ScheduleCached
	case online && t != nil && t.Family == target.CUDA && k.RowLen > onlineRowGPU && k.OnlyPerRowAfterOnline():
		// the online pass is then the only read of the row, as one-pass,
		// but a program holds a chunk instead of the row: logsumexp over
		// rows of 32000 ran in 0.62-0.72x the one-pass time on an H200
		// (docs/triton.md)
		k.Schedule = ScheduleOnline
	}
	return k.Schedule
}

// cachedRowShare: a CPU row kernel re-reads its rows from the cache
// (ScheduleCached) when a row of its inputs takes at most this share of
// the scratchpad (a core's L2: 128 KiB of 1 MiB), so that the row stays
// cached between the phases beside what else the core touches.
const cachedRowShare = 8

// RowReadBytes is the bytes of one row of the operands a row kernel reads
// in full.
func (k *KernelInfo) RowReadBytes() int64 {
	var n int64
	for v, a := range k.access {
		if a != AccessFull || !v.IsBlockArg() {
			continue
		}
		if e, ok := ir.ElemOf(v.Type()); ok {
			n += k.RowLen * e.Kind.ByteSize()
		}
	}
	return n
}

// onlineRowGPU is the row length beyond which a GPU row kernel that
// reduces its row to per-row values by max and sum of exp is online even
// when the row fits a block's shared memory.
const onlineRowGPU = 8192

// OnlyPerRowAfterOnline reports whether nothing after the first two
// phases computes a full row: the kernel's results after the online pass
// are per-row values.
func (k *KernelInfo) OnlyPerRowAfterOnline() bool {
	for i, op := range k.Ops {
		if k.Phases[i] < 2 {
			continue
		}
		for _, r := range op.Results() {
			if k.AccessOf(r) == AccessFull {
				return false
			}
		}
	}
	for i, y := range k.Yields {
		if k.Results[i] == AccessFull && k.phaseOf(y) >= 1 {
			return false
		}
	}
	return true
}

// Online recognises the first two phases of a row kernel that the online
// schedule runs as one pass: phase 0 reduces one row x by max to m, and
// phase 1 reduces by sum exp(x - g) alone, with g a per-row value computed
// from m (m itself, or legalize-numerics' guard of m at +-inf), and stores
// no full row. It returns the max and the sum. Softmax, log_softmax,
// logsumexp and cross-entropy after legalize-numerics have this form.
//
// The sum is accumulated against the running max instead of g: chunk by
// chunk, s = s * exp(h(m_old) - h(m_new)) + sum(exp(x - h(m_new))), with
// h(m) = m where finite and 0 at +-inf, and multiplied by exp(h(m) - g) at
// the end (1 when g is h(m)). Each rescale rounds once in f32, so the sum
// is within a few f32 ULPs of the two-pass one; at +-inf and NaN it gives
// the same value.
func (k *KernelInfo) Online() (maxOp, sumOp *ir.Operation, ok bool) {
	if k.Kind != KernelRow || k.NumPhases < 2 {
		return nil, nil, false
	}
	var byPhase [2][]*ir.Operation
	for i, op := range k.Ops {
		if k.Phases[i] < 2 && slices.Contains(k.RowReductions, op) {
			byPhase[k.Phases[i]] = append(byPhase[k.Phases[i]], op)
		}
	}
	if len(byPhase[0]) != 1 || len(byPhase[1]) != 1 {
		return nil, nil, false
	}
	maxOp, sumOp = byPhase[0][0], byPhase[1][0]
	if maxOp.Name() != graph.OpReduceMax || sumOp.Name() != graph.OpReduceSum {
		return nil, nil, false
	}
	x := maxOp.Operand(0)
	if !onlineElem(x) || !onlineElem(sumOp.Result(0)) || k.AccessOf(x) != AccessFull {
		return nil, nil, false
	}
	e := sumOp.Operand(0).DefiningOp()
	if e == nil || e.Name() != graph.OpExp {
		return nil, nil, false
	}
	sub := e.Operand(0).DefiningOp()
	if sub == nil || sub.Name() != graph.OpSub || sub.Operand(0) != x {
		return nil, nil, false
	}
	g := sub.Operand(1)
	if k.AccessOf(g) != AccessPerRow || !g.DependsOn(maxOp.Result(0)) {
		return nil, nil, false
	}
	// phase 1 computes only the sum: a full row it stored would need g
	for i, y := range k.Yields {
		if k.Results[i] == AccessFull && k.phaseOf(y) == 1 {
			return nil, nil, false
		}
	}
	return maxOp, sumOp, true
}

// onlineElem reports whether v's elements are computed in f32: f32 and
// the narrower floats.
func onlineElem(v *ir.Value) bool {
	e, _ := ir.ElemOf(v.Type())
	return e.Kind.IsFloat() && e.Kind != ir.F64
}

// phaseOf is the phase of the op defining v (0 for arguments).
func (k *KernelInfo) phaseOf(v *ir.Value) int {
	if op := v.DefiningOp(); op != nil {
		if i := slices.Index(k.Ops, op); i >= 0 {
			return k.Phases[i]
		}
	}
	return 0
}

// ClassifyKernel classifies the body of a graph.fused op as one kernel. The
// body must hold primitive ops only (run Decompose first): element-wise
// ops, splat or dense constants and reductions over the last axis form an
// element-wise or row kernel; one matmul, transpose, reshape, broadcast_to,
// slice, concat or other reduction (with constants at most) is a kernel of
// its own. Anything else is an error located at the op that breaks the
// kernel.
func ClassifyKernel(fused *ir.Operation) (KernelInfo, error) {
	f, ok := graph.AsFused(fused)
	if !ok || fused.NumRegions() != 1 || len(fused.Region(0).Blocks) != 1 {
		return KernelInfo{}, ir.OpError(fused, "is not a graph.fused with a one-block body")
	}
	entry := f.Body().Entry()
	y, ok := graph.AsYield(entry.Last())
	if !ok {
		return KernelInfo{}, ir.OpError(fused, "expects the body to end with 'graph.yield'")
	}
	var ops []*ir.Operation
	for op := entry.First(); op != nil && op != y.Operation; op = op.Next() {
		ops = append(ops, op)
	}
	info, err := classifyBody(ops, entry.Args, y.Values())
	if r, ok := err.(*kernelRefusal); ok {
		err = r.err // the located diagnostic itself
	}
	if err != nil {
		return KernelInfo{}, err
	}
	info.Yields = y.Values()
	if s, ok := fused.Attr("schedule").(ir.StringAttr); ok && info.Kind == KernelRow {
		info.Schedule = string(s)
	}
	return *info, nil
}

// AnnotateKernel classifies fused and records the classification in its
// attributes: `kind`, and for a row kernel `row_len` and the `schedule`
// planned for t.
func AnnotateKernel(fused *ir.Operation, t *target.Target) (KernelInfo, error) {
	fused.Attrs.Delete("schedule")
	info, err := ClassifyKernel(fused)
	if err != nil {
		return info, err
	}
	fused.SetAttr("kind", ir.StringAttr(string(info.Kind)))
	fused.Attrs.Delete("row_len")
	if info.Kind == KernelRow {
		fused.SetAttr("row_len", ir.IntAttr{Value: info.RowLen, Type: ir.I64Type})
		fused.SetAttr("schedule", ir.StringAttr(info.PlanSchedule(t)))
	}
	return info, nil
}

// ---------------------------------------------------------------------------
// Op classes

// IsComposite reports whether op is a graph op that Decompose expands into
// primitives (rmsnorm, layernorm, softmax, log_softmax, logsumexp,
// reduce_mean, logaddexp, logaddexp2, quantize, dequantize, requantize).
func IsComposite(op *ir.Operation) bool { return compositeOps[op.Name()] }

var compositeOps = map[string]bool{
	graph.OpRMSNorm: true, graph.OpLayerNorm: true, graph.OpSoftmax: true, graph.OpLogSoftmax: true,
	graph.OpLogSumExp: true, graph.OpReduceMean: true, graph.OpLogAddExp: true, graph.OpLogAddExp2: true,
	graph.OpQuantize: true, graph.OpDequantize: true, graph.OpRequantize: true,
}

// isElementwisePrimitive reports whether op computes each result element
// from the operand elements at the same broadcast index and may stand in a
// kernel body as it is.
func isElementwisePrimitive(op *ir.Operation) bool {
	return op.HasTrait(ir.Elementwise) && !IsComposite(op) && op.NumResults() == 1
}

// isRowReduction reports whether op is a reduce_sum, reduce_max or
// reduce_min over the last axis alone.
func isRowReduction(op *ir.Operation) bool {
	switch op.Name() {
	case graph.OpReduceSum, graph.OpReduceMax, graph.OpReduceMin:
	default:
		return false
	}
	t, ok := op.Operand(0).Type().(ir.TensorType)
	if !ok || t.Rank() == 0 {
		return false
	}
	axes, ok := reductionAxes(op)
	return ok && len(axes) == 1 && axes[0] == int64(t.Rank()-1)
}

// reductionAxes returns the normalised axes of a reduce op.
func reductionAxes(op *ir.Operation) ([]int64, bool) {
	t, ok := op.Operand(0).Type().(ir.TensorType)
	arr, ok2 := op.Attr("axes").(ir.ArrayAttr)
	if !ok || !ok2 {
		return nil, false
	}
	raw, ok := arr.Int64s()
	if !ok {
		return nil, false
	}
	axes, err := graph.NormalizeAxes(raw, t.Rank())
	return axes, err == nil
}

func isReduceOp(op *ir.Operation) bool {
	switch op.Name() {
	case graph.OpReduceSum, graph.OpReduceMax, graph.OpReduceMin:
		return true
	}
	return false
}

func isConstant(op *ir.Operation) bool { return op != nil && op.Name() == graph.OpConstant }

// ---------------------------------------------------------------------------
// Classification

// classifyBody classifies ops (in a topological order) that read inputs and
// write outputs. Values used by ops but defined neither by ops nor listed
// in inputs count as inputs too (fuse classifies a group of top-level ops
// this way, with the constants it will clone inside).
func classifyBody(ops []*ir.Operation, inputs, outputs []*ir.Value) (*KernelInfo, error) {
	var body []*ir.Operation // without constants
	var reductions []*ir.Operation
	for _, op := range ops {
		switch {
		case isConstant(op):
			continue
		case IsComposite(op):
			return nil, ir.OpError(op, "is a composite op: decompose it into primitives before it becomes part of a kernel")
		case isRowReduction(op):
			reductions = append(reductions, op)
		case isElementwisePrimitive(op):
		case op.Name() == graph.OpRoll:
			if err := checkRollOperand(op, inputs); err != nil {
				return nil, err
			}
		case op.Name() == graph.OpGather:
		case IsView(op):
		case isReduceOp(op) || singleOpKinds[op.Name()] != "":
		default:
			return nil, ir.OpError(op, "cannot be part of a kernel")
		}
		body = append(body, op)
	}
	if len(body) == 1 && (singleOpKinds[body[0].Name()] != "" || body[0].Name() == graph.OpGather ||
		(isReduceOp(body[0]) && !isRowReduction(body[0]))) {
		return classifySingle(ops, body[0], inputs, outputs)
	}
	c := &classifier{ops: ops, inputs: inputs, outputs: outputs, cands: make(map[*ir.Value]accessSet, len(ops)+len(inputs))}
	var matmuls []*ir.Operation
	for _, op := range body {
		if op.Name() == graph.OpMatMul {
			matmuls = append(matmuls, op)
		}
	}
	if len(matmuls) > 0 {
		return c.matmul(matmuls, reductions)
	}
	var others []*ir.Operation // reductions over other axes than the last alone
	for _, op := range body {
		if IsView(op) {
			continue
		}
		if k := singleOpKinds[op.Name()]; k != "" {
			return nil, ir.OpError(op, "is a kernel of its own (%s), so it cannot share a kernel with other ops", k)
		}
		if isReduceOp(op) && !isRowReduction(op) {
			others = append(others, op)
		}
	}
	if len(others) > 0 {
		red := others[0]
		axes, _ := reductionAxes(red)
		switch {
		case len(others) > 1:
			return nil, ir.OpError(others[1], "is a second reduction over axes other than the last alone beside the one at %s: a reduce kernel has one", locString(red.Loc))
		case len(reductions) > 0:
			return nil, ir.OpError(red, "reduces axes %s, not the last axis alone, so it cannot share a row kernel with the reduction at %s", graph.FormatShape(axes), locString(reductions[0].Loc))
		}
		for _, op := range body {
			if op.Name() == graph.OpRoll || op.Name() == graph.OpGather {
				return nil, ir.OpError(op, "is a roll or a gather, which a reduce kernel (the reduction at %s over axes %s) does not read through", locString(red.Loc), graph.FormatShape(axes))
			}
		}
		return reduceKernel(ops, body, red, inputs, outputs)
	}
	if len(reductions) == 0 {
		for _, op := range body {
			if op.Name() == graph.OpGather {
				return nil, ir.OpError(op, "reads its operand at columns it loads, so it shares a kernel only with a reduction over the last axis (a row kernel, where it is a load per row) and is a kernel of its own otherwise")
			}
		}
		// a roll reads its operand as the operand's own access says (a
		// broadcast too), at rotated columns; a rotated extent of 1 is itself
		return c.elementwiseWithOutViews()
	}
	for _, op := range body {
		if err := checkRowGather(op); err != nil {
			return nil, err
		}
	}
	return c.rowWithOutViews(reductions)
}

// checkRollOperand: a graph.roll in a kernel is an index map on a load, so
// its operand is one the kernel reads from memory, directly or through
// views (RoPE's rotate_half of a projection reshaped into heads), not a
// value it computes.
func checkRollOperand(op *ir.Operation, inputs []*ir.Value) error {
	x := op.Operand(0)
	if d := x.DefiningOp(); d != nil && isConstant(d) {
		if c, ok := d.Attr("value").(ir.DenseAttr); ok && c.IsSplat() {
			return nil // a rotated splat is the splat
		}
	}
	if !slices.Contains(inputs, RollSource(x)) {
		return ir.OpError(op, "reads its operand at rotated columns, so the operand must be one the kernel reads from memory (directly or through views), not one it computes")
	}
	return nil
}

// RollSource is the value a roll's operand x views: x itself, or the
// operand at the end of the chain of views (each of one operand) that
// defines x.
func RollSource(x *ir.Value) *ir.Value {
	for {
		d := x.DefiningOp()
		if d == nil || !IsView(d) || d.NumOperands() != 1 {
			return x
		}
		x = d.Operand(0)
	}
}

// checkRowGather: a graph.gather in a row kernel reads one element of each
// row, along the last axis, at the index of that row.
func checkRowGather(op *ir.Operation) error {
	g, ok := graph.AsGather(op)
	if !ok {
		return nil
	}
	rank := len(shapeOf(g.Input()))
	if axis, err := graph.GatherAxis(op); err != nil || axis != rank-1 {
		return ir.OpError(op, "gathers along axis %d, not the last, so a row kernel cannot read it as one element per row", g.Axis())
	}
	if idx := shapeOf(g.Indices()); idx[rank-1] != 1 {
		return ir.OpError(op, "reads %d indices per row, so a row kernel cannot read it as one element per row", idx[rank-1])
	}
	return nil
}

// classifySingle classifies a kernel of its own: one op, with constants
// at most beside it, writing its own results.
func classifySingle(ops []*ir.Operation, op *ir.Operation, inputs, outputs []*ir.Value) (*KernelInfo, error) {
	kind := singleOpKinds[op.Name()]
	if op.Name() == graph.OpGather {
		kind = KernelGather
	}
	shape, _ := ir.ShapeOf(op.Result(0).Type())
	if kind == "" {
		kind = KernelReduce
		shape, _ = ir.ShapeOf(op.Operand(0).Type())
	}
	info := &KernelInfo{Kind: kind, Shape: slices.Clone(shape), Op: op, Ops: ops, Phases: make([]int, len(ops)),
		NumPhases: 1, access: map[*ir.Value]Access{}}
	if kind == KernelMatMul {
		info.MatMuls = []*ir.Operation{op}
	}
	for _, v := range inputs {
		info.access[v] = AccessWhole
		info.Operands = append(info.Operands, AccessWhole)
	}
	for _, v := range op.Operands() {
		info.access[v] = AccessWhole
	}
	for i, v := range outputs {
		if v.DefiningOp() != op {
			return nil, ir.OpError(op, "is a kernel of its own, but the kernel also writes result #%d, which this op does not compute", i)
		}
		info.access[v] = AccessWhole
		info.Results = append(info.Results, AccessWhole)
	}
	return info, nil
}

// accessSet is a set of Access classes of a row kernel, as a bit mask.
type accessSet uint8

const (
	setFull accessSet = 1 << iota
	setRowBroadcast
	setPerRowKeep // [R..., 1]
	setPerRowDrop // [R...]
	setScalar
	// setRowsBroadcast: full rows broadcast over some of the leading
	// dimensions ([1, T, 1, C] in a kernel over [1, T, H, C]: RoPE's cos
	// and sin over the heads)
	setRowsBroadcast
)

// allowedOperands gives, for each class of an element-wise op's result in
// a row kernel, the classes its operands may have. Broadcasting aligns
// shapes from the right, so a per-row value without its unit dimension
// ([R...]) lines up with the columns of a full row: it cannot take part in
// an op over full rows.
var allowedOperands = map[accessSet]accessSet{
	setFull:          setFull | setRowsBroadcast | setRowBroadcast | setPerRowKeep | setScalar,
	setRowsBroadcast: setRowsBroadcast | setRowBroadcast | setScalar,
	setRowBroadcast:  setRowBroadcast | setScalar,
	setPerRowKeep:    setPerRowKeep | setScalar,
	setPerRowDrop:    setPerRowDrop | setScalar,
	setScalar:        setScalar,
}

// unitReductionOperands is allowedOperands for a reduction over a last
// axis of extent 1: per-row values [R..., 1] lose their unit axis (or keep
// it), scalars stay scalars.
var unitReductionOperands = map[accessSet]accessSet{
	setPerRowKeep: setPerRowKeep,
	setPerRowDrop: setPerRowKeep,
	setScalar:     setScalar,
}

var accessSetOrder = []accessSet{setFull, setRowsBroadcast, setRowBroadcast, setPerRowKeep, setPerRowDrop, setScalar}

func (s accessSet) access() Access {
	switch s {
	case setFull:
		return AccessFull
	case setRowBroadcast:
		return AccessRowBroadcast
	case setRowsBroadcast:
		return AccessBroadcast
	case setPerRowKeep, setPerRowDrop:
		return AccessPerRow
	case setScalar:
		return AccessScalar
	}
	return ""
}

func (s accessSet) String() string {
	var parts []string
	for _, b := range accessSetOrder {
		if s&b != 0 {
			parts = append(parts, map[accessSet]string{setFull: "full rows", setRowsBroadcast: "rows broadcast over leading dimensions", setRowBroadcast: "a row-broadcast",
				setPerRowKeep: "per-row [R..., 1]", setPerRowDrop: "per-row [R...]", setScalar: "a scalar"}[b])
		}
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, " or ")
}

// classifier holds the state of one classification.
type classifier struct {
	ops     []*ir.Operation
	inputs  []*ir.Value
	outputs []*ir.Value
	// defined marks the values computed by a non-constant op of ops.
	defined map[*ir.Value]bool
	// row kernels: the iteration shape, the reductions over its rows and
	// each value's candidate classes
	shape         []int64
	rowReductions map[*ir.Operation]bool
	cands         map[*ir.Value]accessSet
	// underView marks the values of a row kernel computed only where a
	// view reads them
	underView map[*ir.Value]bool
}

func (c *classifier) markDefined() {
	c.defined = make(map[*ir.Value]bool, len(c.ops))
	for _, op := range c.ops {
		if isConstant(op) {
			continue
		}
		for _, r := range op.Results() {
			c.defined[r] = true
		}
	}
}

// sources returns the values the body reads without computing them, in
// first-use order: the inputs, then constants and other values used.
func (c *classifier) sources() []*ir.Value {
	var out []*ir.Value
	seen := make(map[*ir.Value]bool, len(c.inputs)+len(c.outputs))
	add := func(v *ir.Value) {
		if !seen[v] && !c.defined[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	for _, v := range c.inputs {
		add(v)
	}
	for _, op := range c.ops {
		if isConstant(op) {
			add(op.Result(0))
			continue
		}
		for _, v := range op.Operands() {
			add(v)
		}
	}
	for _, v := range c.outputs {
		add(v)
	}
	return out
}

func shapeOf(v *ir.Value) []int64 {
	s, _ := ir.ShapeOf(v.Type())
	return s
}

// sameExtent compares extents; `?` agrees with any extent, since the
// program's broadcasting has already required the extents to agree.
func sameExtent(a, b int64) bool { return a == b || a == ir.Dynamic || b == ir.Dynamic }

func sameShape(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameExtent(a[i], b[i]) {
			return false
		}
	}
	return true
}

// broadcastsTo reports whether shape s broadcasts to the iteration shape.
func broadcastsTo(s, shape []int64) bool {
	if len(s) > len(shape) {
		return false
	}
	off := len(shape) - len(s)
	for i, d := range s {
		if d != 1 && !sameExtent(d, shape[off+i]) {
			return false
		}
	}
	return true
}

func allOnes(s []int64) bool {
	for _, d := range s {
		if d != 1 {
			return false
		}
	}
	return true
}

// widen makes the first n extents of space (agreeing with s, sameShape)
// the larger of the two: a static extent over `?`, `?` over 1, where a
// value of extent 1 is broadcast over the space.
func widen(space, s []int64, n int) {
	for d := 0; d < n; d++ {
		if space[d] == 1 || (space[d] == ir.Dynamic && s[d] != 1) {
			space[d] = s[d]
		}
	}
}

// elementwise classifies a body without reductions: the iteration space is
// the shape of the outputs, which must agree.
func (c *classifier) elementwise() (*KernelInfo, error) {
	c.markDefined()
	if len(c.outputs) == 0 {
		return nil, fmt.Errorf("a kernel must write at least one result")
	}
	shape := slices.Clone(shapeOf(c.outputs[0]))
	for i, v := range c.outputs[1:] {
		s := shapeOf(v)
		if !sameShape(s, shape) {
			return nil, c.errAt(v, "an element-wise kernel writes results of one shape, but result #%d has shape %s and result #0 %s",
				i+1, graph.FormatShape(s), graph.FormatShape(shape))
		}
		widen(shape, s, len(s))
	}
	info := &KernelInfo{Kind: KernelElementwise, Shape: slices.Clone(shape), Ops: c.ops, Phases: make([]int, len(c.ops)),
		NumPhases: 1, access: make(map[*ir.Value]Access, len(c.ops)+len(c.inputs))}
	classOf := func(v *ir.Value) (Access, error) {
		s := shapeOf(v)
		switch {
		case sameShape(s, shape):
			return AccessFull, nil
		case allOnes(s):
			return AccessScalar, nil
		case broadcastsTo(s, shape):
			return AccessBroadcast, nil
		}
		return "", c.errAt(v, "a value of shape %s does not broadcast to the iteration space %s", graph.FormatShape(s), graph.FormatShape(shape))
	}
	base, err := c.viewSpaces(shape, true)
	if err != nil {
		return nil, err
	}
	if base != nil {
		// `?` agrees with any extent, but a view can make a [?, 64] and a
		// [64, ?] of one tensor: the results of a kernel with views have
		// the same shape extent for extent
		for i, v := range c.outputs[1:] {
			if s := shapeOf(v); !slices.Equal(s, shape) {
				return nil, c.errAt(v, "an element-wise kernel writes results of one shape, but result #%d has shape %s and result #0 %s",
					i+1, graph.FormatShape(s), graph.FormatShape(shape))
			}
		}
		if info.Views, err = planViews(c.ops, c.outputs, shape); err != nil {
			return nil, err
		}
	} else if slices.ContainsFunc(c.ops, func(op *ir.Operation) bool { return op.Name() == graph.OpRoll }) {
		// a roll along the row cuts the loop where it wraps around
		if info.Views, err = planViews(c.ops, c.outputs, shape); err != nil {
			return nil, err
		}
	}
	access := func(v *ir.Value) error {
		if base != nil && !base[v] {
			info.access[v] = AccessView
			return nil
		}
		a, err := classOf(v)
		info.access[v] = a
		return err
	}
	for _, v := range c.sources() {
		if err := access(v); err != nil {
			return nil, err
		}
	}
	for _, op := range c.ops {
		for _, r := range op.Results() {
			if err := access(r); err != nil {
				return nil, err
			}
		}
	}
	for _, v := range c.inputs {
		info.Operands = append(info.Operands, info.access[v])
	}
	for _, v := range c.outputs {
		info.Results = append(info.Results, info.access[v])
	}
	return info, nil
}

// viewSpaces checks the values of an element-wise body with views: each
// value is computed at the points of one or more spaces, the iteration
// shape for what the results read directly and a view's operand shape for
// what the view reads, and must broadcast to each (a row kernel checks the
// classes of its own space itself: checkBase is false). It returns the values
// read in the iteration space (nil when the body has no views).
func (c *classifier) viewSpaces(shape []int64, checkBase bool) (map[*ir.Value]bool, error) {
	if !slices.ContainsFunc(c.ops, IsView) {
		return nil, nil
	}
	inBody := map[*ir.Operation]bool{}
	for _, op := range c.ops {
		inBody[op] = true
	}
	base := map[*ir.Value]bool{}
	seen := map[string]bool{}
	// via is the innermost view whose operand is being visited
	var visit func(v *ir.Value, space []int64, inBase bool, via *ir.Operation) error
	visit = func(v *ir.Value, space []int64, inBase bool, via *ir.Operation) error {
		key := fmt.Sprintf("%p%v%v", v, space, inBase)
		if seen[key] {
			return nil
		}
		seen[key] = true
		if s := shapeOf(v); (checkBase || !inBase) && !broadcastsTo(s, space) {
			return c.errAt(v, "a value of shape %s does not broadcast to the shape %s it is read in", graph.FormatShape(s), graph.FormatShape(space))
		}
		if inBase {
			base[v] = true
		}
		op := v.DefiningOp()
		if op == nil || !inBody[op] || isConstant(op) {
			return nil
		}
		if !inBase && isRowReduction(op) {
			return ir.OpError(via, "is a view of a value computed from the row reduction '%s' at %s: a row kernel reads through views only the element-wise work on its operands, and a view of its results is a kernel of its own",
				op.Name(), locString(op.Loc))
		}
		if !inBase && (op.Name() == graph.OpGather || (!checkBase && op.Name() == graph.OpRoll)) {
			return ir.OpError(op, "is read through a view, which a row kernel computes at the view's points: only element-wise work on the kernel's operands can be")
		}
		for _, a := range op.Operands() {
			var err error
			if IsView(op) {
				err = visit(a, shapeOf(a), false, op)
			} else {
				err = visit(a, space, inBase, via)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	for _, y := range c.outputs {
		if err := visit(y, shape, true, nil); err != nil {
			return nil, err
		}
	}
	return base, nil
}

// rowViews marks what the views of a row kernel read (viewSpaces has
// checked it is element-wise work on the kernel's operands) and plans
// them: no concat may cut the rows, whose loops each phase runs whole.
func (c *classifier) rowViews(reductions []*ir.Operation) (*ViewPlan, error) {
	inBody := map[*ir.Operation]bool{}
	for _, op := range c.ops {
		inBody[op] = true
	}
	c.underView = map[*ir.Value]bool{}
	var mark func(v *ir.Value)
	mark = func(v *ir.Value) {
		if c.underView[v] {
			return
		}
		c.underView[v] = true
		if op := v.DefiningOp(); op != nil && inBody[op] && !isConstant(op) {
			for _, a := range op.Operands() {
				mark(a)
			}
		}
	}
	for _, op := range c.ops {
		if IsView(op) {
			for _, a := range op.Operands() {
				mark(a)
			}
		}
	}
	var starts []*ir.Value
	for _, r := range reductions {
		starts = append(starts, r.Operand(0))
	}
	for _, y := range c.outputs {
		if sameShape(shapeOf(y), c.shape) {
			starts = append(starts, y)
		}
	}
	plan, err := planViews(c.ops, starts, c.shape)
	if err != nil {
		return nil, err
	}
	if len(plan.Cuts) > 0 && len(plan.columnConcats) > 0 {
		return nil, ir.OpError(plan.columnConcats[0], "concatenates along the last axis of a row kernel, whose loops run over whole rows: a concat along the row is read by element-wise kernels only")
	}
	return plan, nil
}

// errAt builds an error located at the op defining v, or at the first op
// using it.
func (c *classifier) errAt(v *ir.Value, format string, args ...any) error {
	if d := v.DefiningOp(); d != nil && slices.Contains(c.ops, d) {
		return ir.Errorf(d.Loc, format, args...)
	}
	for _, op := range c.ops {
		if slices.Contains(op.Operands(), v) {
			return ir.Errorf(op.Loc, format, args...)
		}
	}
	return fmt.Errorf(format, args...)
}

// shapeCandidates returns the classes a value of shape s may have in a row
// kernel over c.shape = [R..., C].
func (c *classifier) shapeCandidates(s []int64) accessSet {
	n := len(c.shape)
	rows, cols := c.shape[:n-1], c.shape[n-1]
	var set accessSet
	if sameShape(s, c.shape) {
		set |= setFull
	}
	if len(s) >= 1 && len(s) <= n && sameExtent(s[len(s)-1], cols) && allOnes(s[:len(s)-1]) {
		set |= setRowBroadcast
	} else if len(s) >= 2 && len(s) <= n && sameExtent(s[len(s)-1], cols) && !sameShape(s, c.shape) && broadcastsTo(s, c.shape) {
		set |= setRowsBroadcast
	}
	if len(s) == n && s[n-1] == 1 && sameShape(s[:n-1], rows) {
		set |= setPerRowKeep
	}
	if len(s) == n-1 && sameShape(s, rows) {
		set |= setPerRowDrop
	}
	if len(s) <= n && allOnes(s) {
		set |= setScalar
	}
	return set
}

// row classifies a body with reductions over the last axis. A reduction
// of a last axis of extent 1 in a kernel over longer rows reduces a
// per-row value [R..., 1]: it only drops that axis, and is per-row work
// (ExpandLogSumExp drops the axis of its keepdim result this way).
func (c *classifier) row(all []*ir.Operation) (*KernelInfo, error) {
	c.markDefined()
	var reductions []*ir.Operation
	for _, r := range all {
		if s := shapeOf(r.Operand(0)); s[len(s)-1] != 1 {
			reductions = append(reductions, r)
		}
	}
	if len(reductions) == 0 {
		reductions = all // rows of length 1
	}
	c.rowReductions = map[*ir.Operation]bool{}
	for _, r := range reductions {
		c.rowReductions[r] = true
	}
	first := reductions[0]
	c.shape = slices.Clone(shapeOf(first.Operand(0)))
	for _, r := range reductions[1:] {
		if s := shapeOf(r.Operand(0)); !sameShape(s, c.shape) {
			return nil, ir.OpError(r, "reduces rows of %s, but the kernel's rows are %s (reduced by '%s' at %s)",
				graph.FormatShape(s), graph.FormatShape(c.shape), first.Name(), locString(first.Loc))
		}
	}
	// the rows are the largest of the reduced rows and the results over
	// the whole space: a static extent over `?`, `?` over 1 (a reduction
	// of a constant broadcast over the rows of a result)
	for _, r := range reductions[1:] {
		widen(c.shape, shapeOf(r.Operand(0)), len(c.shape)-1)
	}
	for _, v := range c.outputs {
		if s := shapeOf(v); len(s) == len(c.shape) && sameShape(s, c.shape) {
			widen(c.shape, s, len(s)-1)
		}
	}
	rowLen := c.shape[len(c.shape)-1]
	if rowLen == ir.Dynamic {
		return nil, ir.OpError(first, "reduces rows of dynamic length; a row kernel needs a static row length")
	}
	// a value over the whole space of run-time extent along the rows may
	// be longer than them
	for _, op := range c.ops {
		for _, v := range append(op.Operands(), op.Results()...) {
			if s, ok := ir.ShapeOf(v.Type()); ok && len(s) == len(c.shape) && s[len(s)-1] == ir.Dynamic {
				return nil, ir.OpError(op, "reads or computes a value of run-time extent along the rows, which are %d long (reduced by '%s' at %s)",
					rowLen, first.Name(), locString(first.Loc))
			}
		}
	}
	// views: what only a view reads is computed at the points it maps to,
	// outside the classes of the rows
	base, err := c.viewSpaces(c.shape, false)
	if err != nil {
		return nil, err
	}
	var views *ViewPlan
	if base != nil {
		if views, err = c.rowViews(reductions); err != nil {
			return nil, err
		}
	}
	inBase := func(v *ir.Value) bool { return base == nil || base[v] }
	for _, v := range c.sources() {
		if !inBase(v) {
			continue
		}
		set := c.shapeCandidates(shapeOf(v))
		if set == 0 {
			return nil, c.errAt(v, "reads a value of shape %s, which is none of full rows %s (or rows broadcast over leading dimensions), a row-broadcast %s, per-row %s or a scalar",
				graph.FormatShape(shapeOf(v)), graph.FormatShape(c.shape), graph.FormatShape(c.shape[len(c.shape)-1:]),
				graph.FormatShape(append(slices.Clone(c.shape[:len(c.shape)-1]), 1)))
		}
		c.cands[v] = set
	}
	for _, op := range c.ops {
		if isConstant(op) || !inBase(op.Result(0)) {
			continue
		}
		if c.rowReductions[op] {
			if op.Result(0).Type().(ir.TensorType).Rank() == len(c.shape) {
				c.cands[op.Result(0)] = setPerRowKeep
			} else {
				c.cands[op.Result(0)] = setPerRowDrop
			}
			continue
		}
		c.cands[op.Result(0)] = c.shapeCandidates(shapeOf(op.Result(0)))
	}
	if err := c.solve(); err != nil {
		return nil, err
	}
	info := &KernelInfo{Kind: KernelRow, Shape: slices.Clone(c.shape), RowLen: rowLen, Ops: c.ops,
		RowReductions: reductions, access: map[*ir.Value]Access{}, Views: views}
	for v, set := range c.cands {
		info.access[v] = set.access()
	}
	for _, v := range c.orderedValues() {
		if !inBase(v) {
			info.access[v] = AccessView
		}
	}
	for _, v := range c.inputs {
		info.Operands = append(info.Operands, info.access[v])
	}
	for i, v := range c.outputs {
		a := info.access[v]
		if rows := c.shape[:len(c.shape)-1]; views != nil && a == AccessPerRow && !slices.Equal(shapeOf(v)[:len(rows)], rows) {
			return nil, c.errAt(v, "a row kernel with views writes per-row values of rows %s extent for extent, but result #%d has shape %s",
				graph.FormatShape(rows), i, graph.FormatShape(shapeOf(v)))
		}
		if views != nil && a == AccessFull && !slices.Equal(shapeOf(v), c.shape) {
			// `?` agrees with any extent, but a view can make a [64, ?] of
			// a [?, 64]
			return nil, c.errAt(v, "a row kernel with views writes full rows of shape %s extent for extent, but result #%d has shape %s",
				graph.FormatShape(c.shape), i, graph.FormatShape(shapeOf(v)))
		}
		if a != AccessFull && a != AccessPerRow {
			return nil, c.errAt(v, "a row kernel writes full rows or per-row values, but result #%d would be %s of shape %s",
				i, article(a), graph.FormatShape(shapeOf(v)))
		}
		info.Results = append(info.Results, a)
	}
	c.phases(info)
	return info, nil
}

func article(a Access) string {
	switch a {
	case AccessRowBroadcast:
		return "a row-broadcast value"
	case AccessScalar:
		return "a scalar"
	}
	return "a " + string(a) + " value"
}

func locString(l ir.Location) string {
	if !l.Known() {
		return "an unknown location"
	}
	return fmt.Sprintf("%d:%d", l.Line, l.Col)
}

// solve narrows the candidate classes of every value until each op's
// operands fit its result, then fixes the classes left ambiguous (a shape
// such as [8] in a kernel over [8, 8] may be a weight or per-row values) in
// order, preferring the first of full, row-broadcast, per-row, scalar.
func (c *classifier) solve() error {
	for {
		if err := c.propagate(); err != nil {
			return err
		}
		var open *ir.Value
		for _, v := range c.orderedValues() {
			if s := c.cands[v]; s&(s-1) != 0 {
				open = v
				break
			}
		}
		if open == nil {
			return nil
		}
		for _, b := range accessSetOrder {
			if c.cands[open]&b != 0 {
				c.cands[open] = b
				break
			}
		}
	}
}

// orderedValues lists the values of the body deterministically: sources,
// then results in op order.
func (c *classifier) orderedValues() []*ir.Value {
	vs := c.sources()
	for _, op := range c.ops {
		if !isConstant(op) {
			vs = append(vs, op.Results()...)
		}
	}
	return vs
}

// propagate applies the rules of allowedOperands forwards and backwards
// until nothing changes. An op whose result can take no class is the
// place where the kernel breaks.
func (c *classifier) propagate() error {
	for changed := true; changed; {
		changed = false
		narrow := func(v *ir.Value, to accessSet) {
			if n := c.cands[v] & to; n != c.cands[v] {
				c.cands[v] = n
				changed = true
			}
		}
		for _, op := range c.ops {
			switch {
			case isConstant(op) || c.cands[op.Result(0)] == 0 && c.underView[op.Result(0)]:
				continue
			case IsView(op):
				// its operand is read at the points the view maps to
			case c.rowReductions[op]:
				if c.cands[op.Operand(0)]&setFull == 0 {
					return ir.OpError(op, "reduces %s, not the full rows %s of the kernel",
						c.cands[op.Operand(0)], graph.FormatShape(c.shape))
				}
				narrow(op.Operand(0), setFull)
			case op.Name() == graph.OpGather:
				// x[row, t[row]]: full rows in, an index per row, a value per row out
				for i, want := range []accessSet{setFull, setPerRowKeep} {
					if c.cands[op.Operand(i)]&want == 0 {
						return ir.OpError(op, "reads operand #%d as %s, but in the rows %s it would be %s", i, want,
							graph.FormatShape(c.shape), c.cands[op.Operand(i)])
					}
					narrow(op.Operand(i), want)
				}
				narrow(op.Result(0), setPerRowKeep)
			default:
				table := allowedOperands
				if isRowReduction(op) {
					table = unitReductionOperands
				}
				res := op.Result(0)
				var ok accessSet
				for _, r := range accessSetOrder {
					if c.cands[res]&r == 0 {
						continue
					}
					fits := true
					for _, a := range op.Operands() {
						if c.cands[a]&table[r] == 0 {
							fits = false
						}
					}
					if fits {
						ok |= r
					}
				}
				if ok == 0 {
					return c.mismatch(op)
				}
				narrow(res, ok)
				var allowed accessSet
				for _, r := range accessSetOrder {
					if c.cands[res]&r != 0 {
						allowed |= table[r]
					}
				}
				for _, a := range op.Operands() {
					narrow(a, allowed)
				}
			}
			for _, r := range op.Results() {
				if c.cands[r] == 0 {
					return c.mismatch(op)
				}
			}
		}
	}
	return nil
}

// mismatch explains why an element-wise op cannot be computed over the
// rows of the kernel.
func (c *classifier) mismatch(op *ir.Operation) error {
	res := op.Result(0)
	if c.cands[res] == 0 {
		return ir.OpError(op, "computes a value of shape %s, which is none of full rows %s, a row-broadcast, per-row values or a scalar",
			graph.FormatShape(shapeOf(res)), graph.FormatShape(c.shape))
	}
	var parts []string
	for i, a := range op.Operands() {
		parts = append(parts, fmt.Sprintf("operand #%d is %s (shape %s)", i, c.cands[a], graph.FormatShape(shapeOf(a))))
	}
	return ir.OpError(op, "cannot be computed over the rows %s as broadcasting defines it: its result would be %s, but %s",
		graph.FormatShape(c.shape), c.cands[res], strings.Join(parts, ", "))
}

// phases numbers the phases of a row kernel and counts the rows a
// one-pass schedule keeps: a value computed in phase p and used in a later
// phase is kept across the boundaries between them.
func (c *classifier) phases(info *KernelInfo) {
	valPhase := map[*ir.Value]int{}
	info.Phases = make([]int, len(c.ops))
	for i, op := range c.ops {
		p := 0
		for _, a := range op.Operands() {
			p = max(p, valPhase[a])
		}
		info.Phases[i] = p
		for _, r := range op.Results() {
			valPhase[r] = p
			if c.rowReductions[op] {
				valPhase[r] = p + 1
			}
		}
		info.NumPhases = max(info.NumPhases, valPhase[op.Result(0)]+1)
	}
	// lastUse[v] is the latest phase of an op reading v; a value read
	// from memory is read when first needed, so it lives from its first use
	lastUse := map[*ir.Value]int{}
	firstUse := map[*ir.Value]int{}
	for i, op := range c.ops {
		for _, a := range op.Operands() {
			lastUse[a] = max(lastUse[a], info.Phases[i])
			if f, ok := firstUse[a]; !ok || info.Phases[i] < f {
				firstUse[a] = info.Phases[i]
			}
		}
	}
	for _, v := range c.sources() {
		valPhase[v] = firstUse[v]
	}
	live := make([]int, info.NumPhases) // live[b]: rows kept across the boundary after phase b
	for _, v := range c.orderedValues() {
		if c.cands[v] != setFull {
			continue
		}
		for b := valPhase[v]; b < lastUse[v]; b++ {
			live[b]++
		}
		if e, ok := ir.ElemOf(v.Type()); ok && valPhase[v] < lastUse[v] {
			info.RowElemBytes = max(info.RowElemBytes, e.Kind.ByteSize())
		}
	}
	for _, n := range live {
		info.RowBuffers = max(info.RowBuffers, n)
	}
}
