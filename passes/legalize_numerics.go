package passes

import (
	"github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/ir"
)

// legalize-numerics makes the graph numerically safe before anything is
// fused or lowered, in three steps (docs/numerics.md has the details):
//
//  1. Naive formulas that overflow or lose precision are recognised and
//     replaced by the op that means the same thing, each with a remark
//     under --remarks=numerics:
//
//     log(exp(a) + exp(b))       -> graph.logaddexp %a, %b
//     log2(exp2(a) + exp2(b))    -> graph.logaddexp2 %a, %b
//     log(reduce_sum(exp(x)))    -> graph.logsumexp %x
//     exp(x) / reduce_sum(exp(x)) -> graph.softmax %x
//     log(softmax(x))            -> graph.log_softmax %x
//     log(1 + x)                 -> graph.log1p %x
//     exp(x) - 1                 -> graph.expm1 %x
//
//  2. Every unchecked float -> int graph.cast becomes the saturating form
//     of ExpandSaturatingCast, with a warning, unless keep-unchecked-casts.
//
//  3. logaddexp, logaddexp2, softmax, log_softmax, logsumexp, quantize,
//     dequantize and requantize are expanded into primitive ops in their
//     overflow-safe forms (numerics_expand.go), unless expand=false.

// remarkCategory is the --remarks category of the pass.
const remarkCategory = "numerics"

// NumericsOptions are the options of legalize-numerics.
type NumericsOptions struct {
	// KeepUncheckedCasts leaves float -> int casts as they are (step 2 off).
	KeepUncheckedCasts bool
	// NoExpand leaves logaddexp, softmax, quantize, ... as ops (step 3
	// off), for a pipeline whose decompose expands them later, and for
	// seeing what step 1 recognised.
	NoExpand bool
}

// LegalizeNumerics runs the steps on root. It returns an error at the
// location of an op that cannot be expanded (one that does not verify).
func LegalizeNumerics(root *ir.Operation, ctx *ir.PassContext, opts NumericsOptions) error {
	ir.ApplyPatternsGreedily(root, NumericsPatterns(ctx), ir.GreedyConfig{})
	if !opts.KeepUncheckedCasts {
		makeCastsSaturating(root, ctx)
	}
	if opts.NoExpand {
		return nil
	}
	return expandNumericsOps(root)
}

// ---------------------------------------------------------------------------
// Step 1: naive formulas

// NumericsPatterns returns the rewrites of step 1. Each reports a remark of
// category "numerics" through ctx (which may be nil) when it applies.
func NumericsPatterns(ctx *ir.PassContext) []ir.Pattern {
	return []ir.Pattern{
		logAddExpPattern(ctx, false),
		logAddExpPattern(ctx, true),
		logSumExpPattern(ctx),
		logSoftmaxPattern(ctx),
		log1pPattern(ctx),
		softmaxPattern(ctx),
		expm1Pattern(ctx),
	}
}

// definedBy returns the op defining v if it is called name, else nil.
func definedBy(v *ir.Value, name string) *ir.Operation {
	if d := v.DefiningOp(); d != nil && d.Name() == name {
		return d
	}
	return nil
}

// builtOp is what a graph builder returns: a typed wrapper of the new op.
type builtOp interface {
	Result(int) *ir.Value
}

// replaceNaive replaces op by the op a pattern has just built (or fails if
// the builder failed or the type differs, leaving the IR as it was), reports
// the remark, and erases what only op used: the naive chain is dead now and
// must not stay behind, since its exp is what overflows.
func replaceNaive[T builtOp](ctx *ir.PassContext, rw *ir.Rewriter, op *ir.Operation, built T, err error, what string) bool {
	if err != nil {
		return false
	}
	v := built.Result(0)
	if !ir.TypeEqual(v.Type(), op.Result(0).Type()) {
		rw.EraseOp(v.DefiningOp())
		return false
	}
	ctx.Remark(remarkCategory, op.Loc, "%s", what)
	v.Name = op.Result(0).Name
	var producers []*ir.Operation
	for _, o := range op.Operands() {
		if d := o.DefiningOp(); d != nil {
			producers = append(producers, d)
		}
	}
	rw.ReplaceOp(op, []*ir.Value{v})
	// revisit the new op: log(softmax(x)) is matched at the log, but
	// the softmax it consumes may have just been built
	rw.ModifyInPlace(v.DefiningOp(), func() {})
	eraseIfDead(rw, producers)
	return true
}

// eraseIfDead erases the ops of list that are side-effect free and unused,
// and then their producers that became unused in turn.
func eraseIfDead(rw *ir.Rewriter, list []*ir.Operation) {
	for len(list) > 0 {
		o := list[len(list)-1]
		list = list[:len(list)-1]
		if o.Block() == nil || !ir.IsTriviallyDead(o) {
			continue
		}
		for _, v := range o.Operands() {
			if d := v.DefiningOp(); d != nil {
				list = append(list, d)
			}
		}
		rw.EraseOp(o)
	}
}

// logAddExpPattern: `log(exp(a) + exp(b))` -> `graph.logaddexp %a, %b`,
// or with base2 `log2(exp2(a) + exp2(b))` -> `graph.logaddexp2 %a, %b`.
// exp overflows f32 for arguments above 88.7 (f16: 11.1) although the
// result is then close to max(a, b).
func logAddExpPattern(ctx *ir.PassContext, base2 bool) ir.Pattern {
	name, root, exp := "LogAddExp", graph.OpLog, graph.OpExp
	if base2 {
		name, root, exp = "LogAddExp2", graph.OpLog2, graph.OpExp2
	}
	return ir.PatternFunc(name, root, func(op *ir.Operation, rw *ir.Rewriter) bool {
		add := definedBy(op.Operand(0), graph.OpAdd)
		if add == nil {
			return false
		}
		ea, eb := definedBy(add.Operand(0), exp), definedBy(add.Operand(1), exp)
		if ea == nil || eb == nil {
			return false
		}
		a, b := ea.Operand(0), eb.Operand(0)
		if base2 {
			built, err := graph.BuildLogAddExp2(rw.Builder, op.Loc, a, b)
			return replaceNaive(ctx, rw, op, built, err, "rewrote log2(exp2(a) + exp2(b)) as graph.logaddexp2, which does not overflow")
		}
		built, err := graph.BuildLogAddExp(rw.Builder, op.Loc, a, b)
		return replaceNaive(ctx, rw, op, built, err, "rewrote log(exp(a) + exp(b)) as graph.logaddexp, which does not overflow")
	})
}

// isMaxShifted reports whether v is x - max(x) already, the stable form the
// expansions build (with the max possibly behind the select of
// ExpandLogSumExp): the exponential of it cannot overflow, and rewriting
// it again would only make legalize-numerics change its own output.
//
//	%m = graph.reduce_max %x {axes = [-1], keepdim = true}
//	%v = graph.sub %x, %m
func isMaxShifted(v *ir.Value) bool {
	d := definedBy(v, graph.OpSub)
	if d == nil {
		return false
	}
	shift := d.Operand(1)
	if sel := definedBy(shift, graph.OpSelect); sel != nil {
		shift = sel.Operand(2)
	}
	m := definedBy(shift, graph.OpReduceMax)
	return m != nil && m.Operand(0) == d.Operand(0)
}

// singleAxis returns the one axis of a reduction, or false if it reduces
// several.
func singleAxis(reduce *ir.Operation) (int64, bool) {
	axes := graph.ReduceSumOp{Operation: reduce}.Axes()
	if len(axes) != 1 {
		return 0, false
	}
	return axes[0], true
}

// logSumExpPattern: `log(reduce_sum(exp(x)))` over one axis ->
// `graph.logsumexp %x {axis, keepdim}`. The sum of exponentials overflows
// as soon as one element exceeds 88.7.
func logSumExpPattern(ctx *ir.PassContext) ir.Pattern {
	return ir.PatternFunc("LogSumExp", graph.OpLog, func(op *ir.Operation, rw *ir.Rewriter) bool {
		sum := definedBy(op.Operand(0), graph.OpReduceSum)
		if sum == nil {
			return false
		}
		ex := definedBy(sum.Operand(0), graph.OpExp)
		axis, ok := singleAxis(sum)
		if ex == nil || !ok || isMaxShifted(ex.Operand(0)) {
			return false
		}
		built, err := graph.BuildLogSumExp(rw.Builder, op.Loc, ex.Operand(0), axis, graph.ReduceSumOp{Operation: sum}.Keepdim())
		return replaceNaive(ctx, rw, op, built, err, "rewrote log(reduce_sum(exp(x))) as graph.logsumexp, which does not overflow")
	})
}

// softmaxPattern: `exp(x) / reduce_sum(exp(x))` over one axis ->
// `graph.softmax %x {axis}`. Both exps may be one op or two on the same x.
// The sum must line up with x along the other axes: kept with keepdim
// (possibly through graph.broadcast_to), or dropped when it is the first
// axis, where NumPy broadcasting puts it back in the same place. A sum
// without keepdim over a later axis broadcasts against the wrong
// dimensions and is a different computation, left alone.
func softmaxPattern(ctx *ir.PassContext) ir.Pattern {
	return ir.PatternFunc("Softmax", graph.OpDiv, func(op *ir.Operation, rw *ir.Rewriter) bool {
		num := definedBy(op.Operand(0), graph.OpExp)
		if num == nil {
			return false
		}
		den := op.Operand(1)
		if bc := definedBy(den, graph.OpBroadcastTo); bc != nil {
			den = bc.Operand(0)
		}
		sum := definedBy(den, graph.OpReduceSum)
		if sum == nil {
			return false
		}
		dex := definedBy(sum.Operand(0), graph.OpExp)
		axis, ok := singleAxis(sum)
		if dex == nil || !ok || dex.Operand(0) != num.Operand(0) || isMaxShifted(num.Operand(0)) {
			return false
		}
		x := num.Operand(0)
		xt, isTensor := x.Type().(ir.TensorType)
		if !isTensor {
			return false
		}
		norm, err := graph.NormalizeAxes([]int64{axis}, xt.Rank())
		if err != nil || !(graph.ReduceSumOp{Operation: sum}.Keepdim() || norm[0] == 0) {
			return false
		}
		built, err := graph.BuildSoftmax(rw.Builder, op.Loc, x, axis)
		return replaceNaive(ctx, rw, op, built, err, "rewrote exp(x) / reduce_sum(exp(x)) as graph.softmax, which does not overflow")
	})
}

// logSoftmaxPattern: `log(softmax(x))` -> `graph.log_softmax %x`. Small
// probabilities underflow to 0 in softmax and their log is then -inf,
// while log_softmax = x - logsumexp(x) stays finite.
func logSoftmaxPattern(ctx *ir.PassContext) ir.Pattern {
	return ir.PatternFunc("LogSoftmax", graph.OpLog, func(op *ir.Operation, rw *ir.Rewriter) bool {
		sm, ok := graph.AsSoftmax(op.Operand(0).DefiningOp())
		if !ok {
			return false
		}
		built, err := graph.BuildLogSoftmax(rw.Builder, op.Loc, sm.Input(), sm.Axis())
		return replaceNaive(ctx, rw, op, built, err, "rewrote log(softmax(x)) as graph.log_softmax, which does not underflow to log(0)")
	})
}

// log1pPattern: `log(1 + x)` (either operand order) -> `graph.log1p %x`.
// 1 + x rounds away the digits of a small x before the log sees them.
func log1pPattern(ctx *ir.PassContext) ir.Pattern {
	return ir.PatternFunc("Log1p", graph.OpLog, func(op *ir.Operation, rw *ir.Rewriter) bool {
		add := definedBy(op.Operand(0), graph.OpAdd)
		if add == nil {
			return false
		}
		var x *ir.Value
		switch {
		case isSplat(add.Operand(0), 1):
			x = add.Operand(1)
		case isSplat(add.Operand(1), 1):
			x = add.Operand(0)
		default:
			return false
		}
		built, err := graph.BuildLog1p(rw.Builder, op.Loc, x)
		return replaceNaive(ctx, rw, op, built, err, "rewrote log(1 + x) as graph.log1p, which keeps the precision of small x")
	})
}

// expm1Pattern: `exp(x) - 1` -> `graph.expm1 %x`. For small x, exp(x) is
// close to 1 and the subtraction cancels most of its digits.
func expm1Pattern(ctx *ir.PassContext) ir.Pattern {
	return ir.PatternFunc("Expm1", graph.OpSub, func(op *ir.Operation, rw *ir.Rewriter) bool {
		ex := definedBy(op.Operand(0), graph.OpExp)
		if ex == nil || !isSplat(op.Operand(1), 1) {
			return false
		}
		built, err := graph.BuildExpm1(rw.Builder, op.Loc, ex.Operand(0))
		return replaceNaive(ctx, rw, op, built, err, "rewrote exp(x) - 1 as graph.expm1, which keeps the precision of small x")
	})
}

// ---------------------------------------------------------------------------
// Step 2: saturating casts

// isUncheckedCast reports whether op is a float -> int graph.cast that is
// not already in the saturating form.
func isUncheckedCast(op *ir.Operation) bool {
	if op.Name() != graph.OpCast || op.NumOperands() != 1 || op.NumResults() != 1 {
		return false
	}
	_, inTensor := op.Operand(0).Type().(ir.TensorType)
	_, outTensor := op.Result(0).Type().(ir.TensorType)
	return inTensor && outTensor && elemKindOf(op.Operand(0)).IsFloat() && elemKindOf(op.Result(0)).IsInt() && !IsSaturatingCast(op)
}

// makeCastsSaturating replaces every unchecked float -> int cast nested in
// root by its saturating form, warning about each.
func makeCastsSaturating(root *ir.Operation, ctx *ir.PassContext) {
	var casts []*ir.Operation
	root.Walk(func(o *ir.Operation) bool {
		if isUncheckedCast(o) {
			casts = append(casts, o)
		}
		return true
	})
	for _, c := range casts {
		from, to := elemKindOf(c.Operand(0)), elemKindOf(c.Result(0))
		lo, hi := to.IntRange()
		ctx.Warning(c.Loc, "unchecked cast from %s to %s made saturating: NaN gives 0 and values outside [%d, %d] clamp to the range (keep-unchecked-casts keeps it)", from, to, lo, hi)
		v := ExpandSaturatingCast(ir.NewBuilderBefore(c), c.Loc, c.Operand(0), c.Result(0).Type())
		replaceAndErase(c, v)
	}
}

// replaceAndErase makes the users of op's single result use v instead,
// hands v the result's name, and erases op.
func replaceAndErase(op *ir.Operation, v *ir.Value) {
	v.Name = op.Result(0).Name
	op.Result(0).ReplaceAllUsesWith(v)
	op.Erase()
}

// ---------------------------------------------------------------------------
// Step 3: expansions

// expandNumericsOps replaces every op nested in root that has an overflow-safe
// expansion by that expansion.
func expandNumericsOps(root *ir.Operation) error {
	var ops []*ir.Operation
	root.Walk(func(o *ir.Operation) bool {
		if IsNumericsComposite(o) {
			ops = append(ops, o)
		}
		return true
	})
	for _, op := range ops {
		v, err := ExpandNumericsOp(ir.NewBuilderBefore(op), op)
		if err != nil {
			return err
		}
		replaceAndErase(op, v)
	}
	return nil
}

func init() {
	ir.RegisterPass(&ir.PassInfo{
		Name: "legalize-numerics", Title: "LegalizeNumerics",
		Summary: "rewrite overflow-prone formulas (log(exp(a) + exp(b)), exp(x) / sum(exp(x)), ...), make float -> int casts saturating, expand logaddexp/softmax/logsumexp/quantize into overflow-safe primitive ops",
		Options: []ir.PassOption{
			{Name: "keep-unchecked-casts", Kind: ir.OptBool, Default: "false",
				Help: "leave float -> int graph.cast unchecked (out-of-range values and NaN give whatever the target gives) instead of making it saturating"},
			{Name: "expand", Kind: ir.OptBool, Default: "true",
				Help: "expand logaddexp, logaddexp2, softmax, log_softmax, logsumexp, quantize, dequantize and requantize into primitive ops; false keeps them for decompose"},
		},
		New: func(opts ir.PassOptions) (ir.Pass, error) {
			o := NumericsOptions{KeepUncheckedCasts: opts.Bool("keep-unchecked-casts"), NoExpand: !opts.Bool("expand")}
			return ir.PassFunc(func(m ir.Module, ctx *ir.PassContext) error {
				return LegalizeNumerics(m.Operation, ctx, o)
			}), nil
		},
	})
}
