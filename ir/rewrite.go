package ir

import "sort"

// Pattern is one small rewrite, like MLIR's RewritePattern:
// `MulByOne` turns `graph.mul %x, 1.0` into `%x`.
type Pattern interface {
	// Name identifies the pattern in debug output and remarks.
	Name() string
	// Root is the op name the pattern matches, or "" for any op.
	Root() string
	// MatchAndRewrite rewrites op through rw and reports whether it did.
	MatchAndRewrite(op *Operation, rw *Rewriter) bool
}

// PatternFunc builds a Pattern from a function.
func PatternFunc(name, root string, fn func(op *Operation, rw *Rewriter) bool) Pattern {
	return funcPattern{name, root, fn}
}

type funcPattern struct {
	name, root string
	fn         func(op *Operation, rw *Rewriter) bool
}

func (p funcPattern) Name() string                                     { return p.name }
func (p funcPattern) Root() string                                     { return p.root }
func (p funcPattern) MatchAndRewrite(op *Operation, rw *Rewriter) bool { return p.fn(op, rw) }

// Rewriter changes the IR on behalf of patterns and keeps the driver's
// worklist informed. Patterns must make every change through it.
type Rewriter struct {
	*Builder
	driver *greedyDriver
}

// Create builds an op at the insertion point (before the op being rewritten).
func (rw *Rewriter) Create(name string, loc Location, operands []*Value, results []Type, attrs AttrDict) *Operation {
	op := rw.Builder.Create(name, loc, operands, results, attrs)
	rw.notifyCreated(op)
	return op
}

// InsertOp inserts an already built op at the insertion point.
func (rw *Rewriter) InsertOp(op *Operation) *Operation {
	rw.Builder.Insert(op)
	rw.notifyCreated(op)
	return op
}

func (rw *Rewriter) notifyCreated(op *Operation) {
	if rw.driver != nil {
		op.Walk(func(o *Operation) bool { rw.driver.push(o); return true })
	}
}

// ReplaceOp replaces every result of op with the given values and erases op.
func (rw *Rewriter) ReplaceOp(op *Operation, values []*Value) {
	for i, r := range op.Results() {
		if rw.driver != nil {
			for _, u := range r.Users() {
				rw.driver.push(u)
			}
		}
		r.ReplaceAllUsesWith(values[i])
	}
	rw.EraseOp(op)
}

// EraseOp erases an op whose results are unused.
func (rw *Rewriter) EraseOp(op *Operation) {
	if rw.driver != nil {
		for _, v := range op.Operands() {
			if d := v.DefiningOp(); d != nil {
				rw.driver.push(d)
			}
		}
		op.Walk(func(o *Operation) bool { rw.driver.erased[o] = true; return true })
	}
	op.Erase()
}

// ModifyInPlace runs fn, which changes op's operands or attributes, and
// revisits op and its users.
func (rw *Rewriter) ModifyInPlace(op *Operation, fn func()) {
	fn()
	if rw.driver != nil {
		rw.driver.push(op)
		for _, r := range op.Results() {
			for _, u := range r.Users() {
				rw.driver.push(u)
			}
		}
	}
}

// GreedyConfig tunes ApplyPatternsGreedily.
type GreedyConfig struct {
	// MaxIterations bounds the number of worklist rounds (default 10).
	MaxIterations int
	// Fold enables OpDef.Fold; MaterializeConstant turns a folded attribute
	// into an op (the dialect's constant op).
	Fold                bool
	MaterializeConstant func(b *Builder, value Attr, t Type, loc Location) *Operation
	// EraseDead erases Pure ops whose results are unused.
	EraseDead bool
	// OnRewrite is told each pattern that applied (for remarks).
	OnRewrite func(p Pattern, op *Operation)
}

type greedyDriver struct {
	list    []*Operation
	inList  map[*Operation]bool
	erased  map[*Operation]bool
	byRoot  map[string][]Pattern
	anyRoot []Pattern
	cfg     GreedyConfig
}

func (d *greedyDriver) push(op *Operation) {
	if !d.inList[op] && !d.erased[op] {
		d.inList[op] = true
		d.list = append(d.list, op)
	}
}

// ApplyPatternsGreedily applies patterns (and folding and dead-code removal
// when configured) to every op nested in root until nothing changes, like
// MLIR's greedy pattern rewrite driver. Patterns are tried in the order
// given. It reports whether anything changed.
func ApplyPatternsGreedily(root *Operation, patterns []Pattern, cfg GreedyConfig) bool {
	if cfg.MaxIterations == 0 {
		cfg.MaxIterations = 10
	}
	d := &greedyDriver{byRoot: map[string][]Pattern{}, cfg: cfg}
	for _, p := range patterns {
		if p.Root() == "" {
			d.anyRoot = append(d.anyRoot, p)
		} else {
			d.byRoot[p.Root()] = append(d.byRoot[p.Root()], p)
		}
	}
	changedAny := false
	for iter := 0; iter < cfg.MaxIterations; iter++ {
		d.inList = map[*Operation]bool{}
		d.erased = map[*Operation]bool{}
		d.list = d.list[:0]
		// post-order so producers are simplified before consumers
		root.WalkPost(func(o *Operation) {
			if o != root {
				d.push(o)
			}
		})
		// process in program order: reverse the stack-like pops
		for i, j := 0, len(d.list)-1; i < j; i, j = i+1, j-1 {
			d.list[i], d.list[j] = d.list[j], d.list[i]
		}
		changed := false
		for len(d.list) > 0 {
			op := d.list[len(d.list)-1]
			d.list = d.list[:len(d.list)-1]
			delete(d.inList, op)
			if d.erased[op] || op.Block() == nil {
				continue
			}
			if d.process(op) {
				changed = true
			}
		}
		if !changed {
			break
		}
		changedAny = true
	}
	return changedAny
}

func (d *greedyDriver) process(op *Operation) bool {
	rw := &Rewriter{Builder: NewBuilderBefore(op), driver: d}
	if d.cfg.EraseDead && isTriviallyDead(op) {
		rw.EraseOp(op)
		return true
	}
	if d.cfg.Fold && d.tryFold(op, rw) {
		return true
	}
	for _, ps := range [][]Pattern{d.byRoot[op.Name()], d.anyRoot} {
		for _, p := range ps {
			if p.MatchAndRewrite(op, rw) {
				if d.cfg.OnRewrite != nil {
					d.cfg.OnRewrite(p, op)
				}
				return true
			}
		}
	}
	return false
}

func (d *greedyDriver) tryFold(op *Operation, rw *Rewriter) bool {
	def := op.Def()
	if def == nil || def.Fold == nil || op.HasTrait(ConstantLike) || d.cfg.MaterializeConstant == nil {
		return false
	}
	consts := make([]Attr, op.NumOperands())
	for i, v := range op.Operands() {
		if c := v.DefiningOp(); c != nil && c.HasTrait(ConstantLike) {
			consts[i] = c.Attr("value")
		}
	}
	folded := def.Fold(op, consts)
	if folded == nil || len(folded) != op.NumResults() {
		return false
	}
	repl := make([]*Value, len(folded))
	var created []*Operation
	for i, a := range folded {
		c := d.cfg.MaterializeConstant(rw.Builder, a, op.Result(i).Type(), op.Loc)
		if c == nil {
			for _, o := range created {
				o.Erase()
			}
			return false
		}
		created = append(created, c)
		repl[i] = c.Result(0)
	}
	for _, c := range created {
		rw.notifyCreated(c)
	}
	rw.ReplaceOp(op, repl)
	return true
}

// isTriviallyDead reports whether op is Pure, has no regions with effects
// and none of its results is used.
func isTriviallyDead(op *Operation) bool {
	if !op.HasTrait(Pure) || op.HasTrait(Terminator) {
		return false
	}
	for _, r := range op.Results() {
		if r.HasUses() {
			return false
		}
	}
	return true
}

// IsTriviallyDead is exported for the dce pass.
func IsTriviallyDead(op *Operation) bool { return isTriviallyDead(op) }

// SortPatterns orders patterns by name, for deterministic application
// when a set is assembled from a map.
func SortPatterns(ps []Pattern) {
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Name() < ps[j].Name() })
}
