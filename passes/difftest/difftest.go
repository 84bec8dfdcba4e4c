// Package difftest checks that a pass pipeline keeps the meaning of a
// graph-dialect program: it runs the reference interpreter
// (dialects/graph/eval) on every function before and after the pipeline,
// on the same inputs, and compares every result element within a bound in
// ULPs of the result's element type.
//
//	m, _ := parser.Parse("f.tir", text)
//	rep, err := difftest.Check(m, "canonicalize,cse,legalize-numerics", difftest.Options{})
//	if err != nil { ... }        // the pipeline failed, crashed or left invalid IR
//	if !rep.OK() { fmt.Print(rep) } // mismatches, with the inputs that show them
//
// # Inputs
//
// Each function runs on eval.RandomInputs for every seed of Options.Seeds
// at every scale of Options.Scales (1 and 100 by default: 100 drives exp
// and friends past the f32 range), and on eval.ExtremeInputs (±0, ±inf,
// NaN, ±88.73, ±1e4, ±1e30, subnormals, the type's range ends) for every
// seed of Options.ExtremeSeeds. A `?` dimension takes Options.DynExtent
// elements in random inputs and eval.ExtremeDynExtent in extreme ones.
//
// # Comparison
//
// Both programs are evaluated with eval.Options.ExactRounding: a pass is
// judged by what it does to the program's ops, and every op rounding its
// result is the meaning op-by-op evaluation gives. What the default
// rounding of fused kernels (f32 between ops) does to a result is held to
// the float64 reference separately (lowering's precision tests).
//
// The original is evaluated in its own precision (before) and, when an
// element needs it, in float64 (ref: eval.Options{F64: true}, the exact
// value as far as float64 knows it); the transformed program is evaluated
// in its own precision (after). An element with bound b (Options.ULP,
// else DefaultULP of the pipeline) is accepted when
//
//  1. dist(after, before) <= b: the pass changed it by at most the bound
//     (NaN matches only NaN, an infinity only the same infinity, -0
//     matches +0). Passes that keep every bit (canonicalize, cse, dce:
//     ChangesRounding is false) are held to this rule alone, with b = 0
//     and dist = numeric.ULPDiff in the result type.
//
// For pipelines that may change rounding (legalize-numerics, decompose,
// fuse), dist is Distance in the kind Precision gives the result (ULPs of
// the narrowest float type the computation rounds to, absolute below
// Floor), and where rule 1 fails the element is held to the float64
// reference of the original instead:
//
//  2. before and ref (rounded to the result type) finite:
//     dist(after, ref) <= b + Slack*max(dist(before, ref), spread). The
//     original is itself off the exact value where the program is
//     ill-conditioned (cancellation, sin of a large value, pow with a
//     large exponent, a comparison of nearly equal values), and a rewrite
//     that rounds one step differently moves the result by as much
//     again: the transformed program must be about as close to the exact
//     value as the original could be. dist(before, ref) is one sample of
//     that and may be lucky; spread measures it, as the largest distance
//     from ref of the float64 evaluations of PerturbRounding's copies
//     (every rounding step moved by one ULP up, down, or alternately) and
//     PerturbElements' (a sign per element along each value's last axis,
//     in two patterns, so that the terms of a sum that cancels move apart).
//     Integer results use |after - ref| and the like.
//  3. before is inf or NaN but ref, rounded to the result type, is
//     finite: the original overflowed (or hit inf - inf) in its own
//     precision although the exact result is representable, which is what
//     legalize-numerics repairs: dist(after, ref) <= b + 0.5 +
//     Slack*spread (0.5 for rounding the exact value into the type).
//  4. ref rounded to the result type is inf or NaN: after must be exactly
//     that value.
//
// An element no reference can judge is excused instead, counted in
// Report.Excused and never dropped silently:
//
//   - both programs overflow (or underflow to 0) in their own precision on
//     the way to it (MarkOverflow): a pass is not required to remove every
//     overflow, only those it rewrites;
//   - under the legalized meaning, the original overflows or underflows on
//     the way to it even in float64 (exp(1e4), exp(-1e30)): then neither
//     the original nor its reference says anything about the exact value,
//     which legalize-numerics may compute (pow(-1, log2(2^x + 2^y)) is 1
//     when the sum overflows and NaN when the logarithm is exact);
//   - under the legalized meaning, the original is NaN from its own
//     arithmetic (still NaN with every NaN input replaced by 0: inf - inf,
//     0 / 0) where the transformed program computes a number. A NaN that
//     comes from a NaN input must still come out NaN.
//
// The legalized meaning (Options.Legalized and Options.SaturatingCasts,
// set whenever the pipeline holds legalize-numerics) also gives the
// original, before it is evaluated, the meaning legalize-numerics gives
// its casts: every unchecked float -> integer graph.cast (numeric.WrapInt,
// -1.0 to ui8 is 255) becomes the saturating conversion
// (numeric.SaturateInt: NaN to 0, out-of-range values to the range ends),
// built from cmp/select in f64 (SaturateCasts).
// legalize-numerics{keep-unchecked-casts=true} keeps the casts, and so
// does the comparison.
//
// Slack is 2. Mismatches are reported with the function, the inputs (all
// argument values), the result element and its index, before, after and
// ref, and the distance.
package difftest

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
)

// Options configure Check. The zero value gives the defaults.
type Options struct {
	// Seeds are the seeds of eval.RandomInputs; default 1, 2, 3.
	Seeds []int64
	// Scales multiply the random inputs; default 1 and 100.
	Scales []float64
	// ExtremeSeeds are the seeds of eval.ExtremeInputs; default 1, 2.
	ExtremeSeeds []int64
	// NoExtreme leaves out the extreme inputs.
	NoExtreme bool
	// DynExtent is the extent of `?` dimensions in random inputs; default
	// eval.ExtremeDynExtent (16), the extent of extreme inputs.
	DynExtent int64
	// ULP overrides the bound of results measured in an element type (the
	// kind Precision gives a result), in ULPs of that type (|a - b| for
	// integers).
	ULP map[ir.ElemKind]float64
	// Legalized compares against the legalized meaning of the original:
	// elements that depend on an overflow even in float64, and NaNs the
	// original makes of its own, are excused. Check sets it when the
	// pipeline holds legalize-numerics.
	Legalized bool
	// SaturatingCasts gives the original's unchecked float -> integer
	// casts the saturating meaning first (SaturateCasts). Check sets it
	// when the pipeline holds legalize-numerics without
	// keep-unchecked-casts.
	SaturatingCasts bool
	// MaxElements skips a function whose inputs hold more elements in
	// all; default 1 << 16.
	MaxElements int64
	// MaxMismatches is how many mismatches a report keeps in full
	// (Report.NumMismatches counts them all); default 8.
	MaxMismatches int
	// Target is the machine passes compile for; default "cpu".
	Target string
	// KnownIssue, when set, names the known deviation a mismatch of the
	// original function f belongs to, or returns "". Known mismatches are
	// counted in Report.Known instead of failing the check; a test lists
	// there what is reported but not fixed yet, as narrowly as it can.
	KnownIssue func(f ir.Func, m *Mismatch) string
}

// Slack is the factor of the original's own error (rule 2 of the package
// documentation) by which a transformed program may be further off the
// float64 reference.
const Slack = 2

func (o Options) withDefaults(p ir.Pipeline) Options {
	if o.Seeds == nil {
		o.Seeds = []int64{1, 2, 3}
	}
	if o.Scales == nil {
		o.Scales = []float64{1, 100}
	}
	if o.ExtremeSeeds == nil {
		o.ExtremeSeeds = []int64{1, 2}
	}
	if o.DynExtent <= 0 {
		o.DynExtent = eval.ExtremeDynExtent
	}
	if o.MaxElements <= 0 {
		o.MaxElements = 1 << 16
	}
	if o.MaxMismatches <= 0 {
		o.MaxMismatches = 8
	}
	if o.Target == "" {
		o.Target = "cpu"
	}
	for _, e := range p {
		if e.Info.Name == LegalizeNumerics {
			o.Legalized = true
			if !e.Options.Bool("keep-unchecked-casts") {
				o.SaturatingCasts = true
			}
		}
	}
	return o
}

// Report is the outcome of a Check.
type Report struct {
	// Pipeline is the pipeline as parsed.
	Pipeline string
	// Before and After are the printed modules.
	Before, After string
	// Runs counts the evaluations compared (one function on one input set).
	Runs int
	// Elements counts the result elements compared.
	Elements int
	// Reference counts elements accepted against the float64 reference
	// (rules 2 to 4) rather than the original's own result.
	Reference int
	// Excused counts elements whose original overflowed even in float64,
	// accepted because the transformed result is plausible.
	Excused int
	// NumMismatches counts every mismatch; Mismatches keeps the first ones.
	NumMismatches int
	Mismatches    []Mismatch
	// Known counts the mismatches Options.KnownIssue recognised, by issue.
	Known map[string]int
	// Skipped says which functions or input sets were not compared, and why
	// (the original fails in the interpreter on them, or is too large).
	Skipped []string
}

// OK reports whether no mismatch was found.
func (r *Report) OK() bool { return r.NumMismatches == 0 }

// String summarises the report and lists the mismatches it keeps.
func (r *Report) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "pipeline %q: %d runs, %d elements, %d against the float64 reference, %d excused, %d mismatches\n",
		r.Pipeline, r.Runs, r.Elements, r.Reference, r.Excused, r.NumMismatches)
	issues := make([]string, 0, len(r.Known))
	for issue := range r.Known {
		issues = append(issues, issue)
	}
	sort.Strings(issues)
	for _, issue := range issues {
		fmt.Fprintf(&sb, "known issue %s: %d mismatches\n", issue, r.Known[issue])
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(&sb, "skipped: %s\n", s)
	}
	for _, m := range r.Mismatches {
		sb.WriteString(m.String())
	}
	if r.NumMismatches > len(r.Mismatches) {
		fmt.Fprintf(&sb, "... and %d more mismatches\n", r.NumMismatches-len(r.Mismatches))
	}
	if r.NumMismatches > 0 {
		sb.WriteString("--- before:\n" + r.Before + "--- after:\n" + r.After)
	}
	return sb.String()
}

// Mismatch is one result element (or one function) the pipeline changed
// beyond its bound.
type Mismatch struct {
	Func string
	// Inputs names the input set: "random seed 2 scale 100", "extreme seed 1".
	Inputs string
	// Args are the input values, one line per argument; Values the inputs.
	Args   []string
	Values []*eval.Tensor
	// Result is the result number and Index the element's index in it;
	// Result is -1 for a mismatch of the whole function.
	Result int
	Index  []int64
	Elem   ir.ElemKind
	// Before and After are the element before and after the pipeline, Ref
	// the float64 reference of the original (NaN when not computed).
	Before, After, Ref float64
	// ULP is the distance between Before and After in ULPs of Elem.
	ULP   float64
	Bound float64
	// Reason says what is wrong.
	Reason string
}

func (m Mismatch) String() string {
	var sb strings.Builder
	if m.Result < 0 {
		fmt.Fprintf(&sb, "@%s (%s): %s\n", m.Func, m.Inputs, m.Reason)
	} else {
		fmt.Fprintf(&sb, "@%s (%s): result #%d%v (%s): before %s, after %s, float64 reference %s: %s\n",
			m.Func, m.Inputs, m.Result, m.Index, m.Elem, fmtVal(m.Before), fmtVal(m.After), fmtVal(m.Ref), m.Reason)
	}
	for _, a := range m.Args {
		sb.WriteString("    " + a + "\n")
	}
	return sb.String()
}

func fmtVal(v float64) string { return fmt.Sprintf("%g", v) }

// PipelineError is a pipeline that failed on a valid program: a pass
// reported an error, panicked or left IR that does not verify.
type PipelineError struct {
	Pipeline string
	// Input is the printed program the pipeline failed on.
	Input string
	Err   error
}

func (e *PipelineError) Error() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "pipeline %q failed: %v", e.Pipeline, e.Err)
	var ie *ir.InternalError
	if errors.As(e.Err, &ie) {
		for _, d := range ie.Diags {
			sb.WriteString("\n  " + d.Error())
		}
		if ie.Stack != "" {
			sb.WriteString("\n" + firstLines(ie.Stack, 24))
		}
	}
	sb.WriteString("\n--- input:\n" + e.Input)
	return sb.String()
}

func (e *PipelineError) Unwrap() error { return e.Err }

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// CloneModule returns a deep copy of m.
func CloneModule(m ir.Module) ir.Module { return ir.Module{Operation: m.Operation.Clone(ir.Mapping{})} }

// RunPipeline runs a pipeline on m in place, with the verifier after every
// pass, as tfc does. A failure is a *PipelineError.
func RunPipeline(m ir.Module, pipeline string, targetName string) error {
	p, err := ir.ParsePipeline(pipeline)
	if err != nil {
		return err
	}
	return runPipeline(m, p, targetName)
}

func runPipeline(m ir.Module, p ir.Pipeline, targetName string) error {
	if targetName == "" {
		targetName = "cpu"
	}
	tgt, err := target.Lookup(targetName)
	if err != nil {
		return err
	}
	input := ir.Print(m.Operation, ir.PrintOptions{})
	ctx := &ir.PassContext{Diags: &ir.Diagnostics{}, Target: tgt}
	pm := &ir.PassManager{Pipeline: p, VerifyEach: true}
	if err := pm.Run(m, ctx); err != nil {
		return &PipelineError{Pipeline: p.String(), Input: input, Err: err}
	}
	return nil
}

// Check runs pipeline on a copy of m (which is left alone) and compares
// the interpreter's results before and after, as the package
// documentation describes. The error is non-nil when the pipeline does
// not parse, m does not verify, or the pipeline fails on it
// (*PipelineError); the differences it finds are in the report.
func Check(m ir.Module, pipeline string, opts Options) (*Report, error) {
	p, err := ir.ParsePipeline(pipeline)
	if err != nil {
		return nil, err
	}
	if err := ir.Verify(m.Operation); err != nil {
		return nil, fmt.Errorf("the program does not verify: %w", err)
	}
	opts = opts.withDefaults(p)
	after := CloneModule(m)
	if err := runPipeline(after, p, opts.Target); err != nil {
		return nil, err
	}
	before := CloneModule(m)
	if opts.SaturatingCasts {
		if err := SaturateCasts(before); err != nil {
			return nil, err
		}
	}
	c := &checker{
		opts: opts,
		rep: &Report{
			Pipeline: p.String(),
			Before:   ir.Print(m.Operation, ir.PrintOptions{}),
			After:    ir.Print(after.Operation, ir.PrintOptions{}),
		},
	}
	for _, e := range p {
		c.passes = append(c.passes, e.Info.Name)
		c.rounding = c.rounding || ChangesRounding(e.Info.Name)
	}
	for _, f := range before.Funcs() {
		g, ok := after.Lookup(f.SymName())
		if !ok {
			c.mismatchFunc(f, "", nil, "the function is gone after the pipeline")
			continue
		}
		c.checkFunc(f, g)
	}
	return c.rep, nil
}

// checker compares one module before and after a pipeline.
type checker struct {
	opts     Options
	passes   []string
	rounding bool // some pass may change rounding: rules 2 to 4 apply
	rep      *Report
	// markedFuncs caches the marked copies of the functions.
	markedFuncs map[markedKey]ir.Func
}

type markedKey struct {
	f      *ir.Operation
	marker uint64 // bits of the marker value, NaN included
	poison bool
	mark   markKind
}

// markKind says which fragile values a marked copy replaces.
type markKind uint8

const (
	markOverflows markKind = iota
	markDiscontinuities
	perturbUp   // PerturbRounding, every step up
	perturbDown // every step down
	perturbAlt  // alternately up and down
	// perturbElems, perturbElems2: up or down element by element along
	// each value's last axis (PerturbElements' patterns 0 and 1)
	perturbElems
	perturbElems2
)

// The markers that stand for a fragile value in the marked copies: an
// element depends on a fragile value if it differs between the copies with
// markers A and B, or between the two NaN copies (whose comparisons and
// integer conversions of a marked NaN give true and false), or is NaN in
// them where it is not NaN unmarked or with marker A (a dominating term hides a finite
// marker: log(e^3 + e^40) and log(e^-5 + e^40) are equal in float64; a
// ratio hides a constant one: 3/(3+3) and -5/(-5-5)).
const markerA, markerB = 3.0, -5.0

func (c *checker) marked(f ir.Func, marker Marker, kind markKind) (ir.Func, error) {
	key := markedKey{f.Operation, math.Float64bits(marker.Value), marker.Poison, kind}
	if mf, ok := c.markedFuncs[key]; ok {
		return mf, nil
	}
	var mf ir.Func
	var err error
	switch kind {
	case markOverflows:
		mf, err = MarkOverflow(f, marker)
	case markDiscontinuities:
		mf, err = MarkDiscontinuities(f, marker)
	case perturbElems, perturbElems2:
		mf, err = PerturbElements(f, int(kind-perturbElems))
	default:
		mf, err = PerturbRounding(f, func(i int) float64 {
			if kind == perturbDown || kind == perturbAlt && i%2 == 1 {
				return -1
			}
			return 1
		})
	}
	if err != nil {
		return ir.Func{}, err
	}
	if c.markedFuncs == nil {
		c.markedFuncs = map[markedKey]ir.Func{}
	}
	c.markedFuncs[key] = mf
	return mf, nil
}

// taint tells which result elements of one evaluation depend on a
// fragile value: the runs of the marked copies with the four markers,
// and the unmarked results, each evaluated on first use.
type taint struct {
	a, b, nanT, nanF, plain *lazy
}

// taint prepares the taint of f on args, evaluated with opts; plain holds
// the unmarked results of the same evaluation.
func (c *checker) taint(f ir.Func, args []*eval.Tensor, opts eval.Options, plain *lazy, kind markKind) *taint {
	marked := func(marker Marker) *lazy {
		return &lazy{run: func() ([]*eval.Tensor, error) {
			mf, err := c.marked(f, marker, kind)
			if err != nil {
				return nil, err
			}
			return evalWithUpdates(mf, args, opts)
		}}
	}
	return &taint{
		a: marked(Marker{Value: markerA}), b: marked(Marker{Value: markerB}),
		nanT: marked(Marker{Value: math.NaN(), Poison: true}), nanF: marked(Marker{Value: math.NaN()}),
		plain: plain,
	}
}

// at reports whether element i of result r depends on a fragile value.
func (t *taint) at(r, i int) bool {
	differ := func(x, y *lazy) bool {
		a, ok1 := x.at(r, i)
		b, ok2 := y.at(r, i)
		return ok1 && ok2 && ulpDiff(a, b, ir.F64) != 0
	}
	if n, ok := t.nanT.at(r, i); ok && math.IsNaN(n) {
		for _, other := range []*lazy{t.plain, t.a} {
			if v, ok := other.at(r, i); ok && !math.IsNaN(v) {
				return true
			}
		}
	}
	return differ(t.nanT, t.nanF) || differ(t.a, t.b)
}

// bound returns the ULP bound of results of kind k.
func (c *checker) bound(k ir.ElemKind) float64 {
	if b, ok := c.opts.ULP[k]; ok {
		return b
	}
	b := 0.0
	for _, p := range c.passes {
		b = math.Max(b, DefaultULP(p, k))
	}
	return b
}

func (c *checker) mismatchFunc(f ir.Func, inputs string, args []*eval.Tensor, reason string) {
	c.report(f, Mismatch{Func: f.SymName(), Inputs: inputs, Values: args, Result: -1, Reason: reason})
}

// report files a mismatch: as a known issue, or kept in full while there
// is room.
func (c *checker) report(f ir.Func, m Mismatch) {
	if c.opts.KnownIssue != nil {
		if issue := c.opts.KnownIssue(f, &m); issue != "" {
			if c.rep.Known == nil {
				c.rep.Known = map[string]int{}
			}
			c.rep.Known[issue]++
			return
		}
	}
	c.rep.NumMismatches++
	if len(c.rep.Mismatches) < c.opts.MaxMismatches {
		m.Args = formatArgs(f, m.Values)
		c.rep.Mismatches = append(c.rep.Mismatches, m)
	}
}

func (c *checker) skip(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	for _, old := range c.rep.Skipped {
		if old == s {
			return
		}
	}
	c.rep.Skipped = append(c.rep.Skipped, s)
}

// inputSet is one set of inputs of a function.
type inputSet struct {
	name string
	args []*eval.Tensor
}

// pendingSet is an input set not made yet: elements is how many its
// tensors will hold, known from the function's type.
type pendingSet struct {
	name     string
	elements int64
	make     func() ([]*eval.Tensor, error)
}

// inputSets lists the input sets of f, in the order they are checked,
// without making them.
func (c *checker) inputSets(f ir.Func) []pendingSet {
	var sets []pendingSet
	for _, seed := range c.opts.Seeds {
		for _, scale := range c.opts.Scales {
			name := fmt.Sprintf("random seed %d scale %g", seed, scale)
			n, err := eval.InputElements(f, c.opts.DynExtent)
			if err != nil {
				c.skip("@%s: %s: %v", f.SymName(), name, err)
				continue
			}
			sets = append(sets, pendingSet{name, n, func() ([]*eval.Tensor, error) {
				return eval.RandomInputs(f, seed, scale, c.opts.DynExtent)
			}})
		}
	}
	if !c.opts.NoExtreme {
		for _, seed := range c.opts.ExtremeSeeds {
			name := fmt.Sprintf("extreme seed %d", seed)
			n, err := eval.InputElements(f, eval.ExtremeDynExtent)
			if err != nil {
				c.skip("@%s: %s: %v", f.SymName(), name, err)
				continue
			}
			sets = append(sets, pendingSet{name, n, func() ([]*eval.Tensor, error) {
				return eval.ExtremeInputs(f, seed)
			}})
		}
	}
	return sets
}

func (c *checker) checkFunc(f, g ir.Func) {
	if !ir.TypeEqual(f.Type(), g.Type()) {
		c.mismatchFunc(f, "", nil, fmt.Sprintf("the function type changed from %s to %s", f.Type(), g.Type()))
		return
	}
	prec := Precision(f)
	for _, set := range c.inputSets(f) {
		// a function too large to interpret is skipped before its
		// inputs are made
		if set.elements > c.opts.MaxElements {
			c.skip("@%s: its inputs hold %d elements, more than %d", f.SymName(), set.elements, c.opts.MaxElements)
			return
		}
		args, err := set.make()
		if err != nil {
			c.skip("@%s: %s: %v", f.SymName(), set.name, err)
			continue
		}
		c.checkRun(f, g, inputSet{set.name, args}, prec)
	}
}

// evalWithUpdates evaluates f on copies of args and returns its results followed by
// the arguments it updates in place (the destinations of its
// graph.index_copy ops) after the update, so that a pass that changes
// the update is a mismatch like one that changes a result.
func evalWithUpdates(f ir.Func, args []*eval.Tensor, opts eval.Options) ([]*eval.Tensor, error) {
	in := cloneAll(args)
	outs, err := eval.Run(f, in, opts)
	if err != nil {
		return nil, err
	}
	for i, u := range graph.UpdatedArgs(f) {
		if u && i < len(in) {
			outs = append(outs, in[i])
		}
	}
	return outs, nil
}

// cloneAll copies input tensors, so that no evaluation can disturb the next.
func cloneAll(ts []*eval.Tensor) []*eval.Tensor {
	out := make([]*eval.Tensor, len(ts))
	for i, t := range ts {
		out[i] = t.Clone()
	}
	return out
}

// lazy evaluates f once, on first use.
type lazy struct {
	run  func() ([]*eval.Tensor, error)
	done bool
	outs []*eval.Tensor
	err  error
}

func (l *lazy) get() ([]*eval.Tensor, error) {
	if !l.done {
		l.outs, l.err = l.run()
		l.done = true
	}
	return l.outs, l.err
}

// at returns element i of result r, or false if the evaluation failed.
func (l *lazy) at(r, i int) (float64, bool) {
	outs, err := l.get()
	if err != nil || r >= len(outs) || i >= len(outs[r].Data) {
		return math.NaN(), false
	}
	return outs[r].Data[i], true
}

func (c *checker) checkRun(f, g ir.Func, set inputSet, prec []ir.ElemKind) {
	before, err := evalWithUpdates(f, set.args, eval.Options{ExactRounding: true})
	if err != nil {
		c.skip("@%s: %s: the original fails in the interpreter: %v", f.SymName(), set.name, err)
		return
	}
	after, err := evalWithUpdates(g, set.args, eval.Options{ExactRounding: true})
	if err != nil {
		c.mismatchFunc(f, set.name, set.args, "the original runs but the transformed function fails: "+err.Error())
		return
	}
	if len(after) != len(before) {
		c.mismatchFunc(f, set.name, set.args, fmt.Sprintf("%d results before, %d after", len(before), len(after)))
		return
	}
	c.rep.Runs++
	ref := &lazy{run: func() ([]*eval.Tensor, error) { return evalWithUpdates(f, set.args, eval.Options{F64: true}) }}
	scrubbed := &lazy{run: func() ([]*eval.Tensor, error) {
		return evalWithUpdates(f, scrubNaN(set.args), eval.Options{F64: true})
	}}
	// where the original overflows in float64, where both programs
	// overflow in their own precision, and where the original takes a
	// step next to a discontinuity
	base := func(ts []*eval.Tensor) *lazy { return &lazy{run: func() ([]*eval.Tensor, error) { return ts, nil }} }
	overflow64 := c.taint(f, set.args, eval.Options{F64: true}, ref, markOverflows)
	overflowBefore := c.taint(f, set.args, eval.Options{ExactRounding: true}, base(before), markOverflows)
	overflowAfter := c.taint(g, set.args, eval.Options{ExactRounding: true}, base(after), markOverflows)
	discontinuous := c.taint(f, set.args, eval.Options{ExactRounding: true}, base(before), markDiscontinuities)
	var perturbed []*lazy
	for _, kind := range []markKind{perturbUp, perturbDown, perturbAlt, perturbElems, perturbElems2} {
		perturbed = append(perturbed, &lazy{run: func() ([]*eval.Tensor, error) {
			pf, err := c.marked(f, Marker{}, kind)
			if err != nil {
				return nil, err
			}
			return evalWithUpdates(pf, set.args, eval.Options{F64: true})
		}})
	}
	for r := range before {
		b, a := before[r], after[r]
		if b.Elem != a.Elem || !sameShape(b.Shape, a.Shape) {
			c.mismatchFunc(f, set.name, set.args, fmt.Sprintf("result #%d is %s before and %s after", r, b.Type(), a.Type()))
			continue
		}
		k := b.Elem
		if r < len(prec) {
			k = prec[r]
		}
		j := judge{elem: b.Elem, k: k, bound: c.bound(k), rounding: c.rounding, legalized: c.opts.Legalized}
		for i := range b.Data {
			c.rep.Elements++
			v, reason := j.element(b.Data[i], a.Data[i], evidence{
				ref:           func() (float64, bool) { return ref.at(r, i) },
				scrubbed:      func() (float64, bool) { return scrubbed.at(r, i) },
				tainted:       func() bool { return overflow64.at(r, i) },
				overflows:     func() bool { return overflowBefore.at(r, i) && overflowAfter.at(r, i) },
				discontinuous: func() bool { return discontinuous.at(r, i) },
				perturbed: func() []float64 {
					var vs []float64
					for _, p := range perturbed {
						if v, ok := p.at(r, i); ok {
							vs = append(vs, v)
						}
					}
					return vs
				},
			})
			switch v {
			case viaReference:
				c.rep.Reference++
			case excused:
				c.rep.Excused++
			case mismatch:
				if len(c.rep.Mismatches) >= c.opts.MaxMismatches && c.opts.KnownIssue == nil {
					c.rep.NumMismatches++ // not kept: spare the reference
					continue
				}
				rv, _ := ref.at(r, i)
				c.report(f, Mismatch{
					Func: f.SymName(), Inputs: set.name, Values: set.args,
					Result: r, Index: unflatten(i, b.Shape), Elem: b.Elem,
					Before: b.Data[i], After: a.Data[i], Ref: rv,
					ULP: ulpDiff(b.Data[i], a.Data[i], b.Elem), Bound: j.bound, Reason: reason,
				})
			}
		}
	}
}

func sameShape(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// scrubNaN copies inputs with every NaN replaced by 0.
func scrubNaN(ts []*eval.Tensor) []*eval.Tensor {
	out := cloneAll(ts)
	for _, t := range out {
		for i, v := range t.Data {
			if math.IsNaN(v) {
				t.Data[i] = 0
			}
		}
	}
	return out
}

// unflatten turns a row-major offset into an index.
func unflatten(off int, shape []int64) []int64 {
	idx := make([]int64, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 0 {
			idx[d] = int64(off) % shape[d]
			off /= int(shape[d])
		}
	}
	return idx
}

// maxArgValues is how many values of each argument a mismatch lists.
const maxArgValues = 256

// formatArgs prints input tensors one per line: `%x0: tensor<2xf32> = [1 nan]`.
func formatArgs(f ir.Func, args []*eval.Tensor) []string {
	out := make([]string, len(args))
	for i, t := range args {
		name := fmt.Sprintf("#%d", i)
		if i < len(f.Args()) && f.Args()[i].Name != "" {
			name = "%" + f.Args()[i].Name
		}
		var sb strings.Builder
		fmt.Fprintf(&sb, "%s: %s = [", name, t.Type())
		for j, v := range t.Data {
			if j == maxArgValues {
				fmt.Fprintf(&sb, " ... (%d values)", len(t.Data))
				break
			}
			if j > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(fmtVal(v))
		}
		sb.WriteByte(']')
		out[i] = sb.String()
	}
	return out
}
