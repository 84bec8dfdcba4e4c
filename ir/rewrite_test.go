package ir_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tensorforge/tensorforge/ir"
)

// negNeg folds `graph.neg (graph.neg %x)` to `%x`.
var negNeg = ir.PatternFunc("NegNeg", "graph.neg", func(op *ir.Operation, rw *ir.Rewriter) bool {
	inner := op.Operand(0).DefiningOp()
	if inner == nil || inner.Name() != "graph.neg" {
		return false
	}
	rw.ReplaceOp(op, []*ir.Value{inner.Operand(0)})
	return true
})

// materializeTestConst builds the test.const that holds a folded value.
func materializeTestConst(b *ir.Builder, value ir.Attr, t ir.Type, loc ir.Location) *ir.Operation {
	if _, ok := value.(ir.IntAttr); !ok {
		return nil
	}
	return b.Create(opConst, loc, nil, []ir.Type{t}, ir.Attrs("value", value))
}

func TestApplyPatternsGreedily(t *testing.T) {
	// stage bumps `test.pure {stage = N}` to a new op of stage N+1, up to 3.
	stage := func(from int64) ir.Pattern {
		return ir.PatternFunc("Stage", opPure, func(op *ir.Operation, rw *ir.Rewriter) bool {
			n, ok := ir.AttrAsInt(op.Attr("stage"))
			if !ok || n != from {
				return false
			}
			repl := rw.Create(opPure, op.Loc, op.Operands(), []ir.Type{op.Result(0).Type()}, ir.Attrs("stage", ir.IntAttr{Value: n + 1}))
			rw.ReplaceOp(op, repl.Results())
			return true
		})
	}
	tests := []struct {
		name     string
		src      string
		patterns []ir.Pattern
		cfg      ir.GreedyConfig
		want     string
		changed  bool
	}{
		{name: "fixpoint through a chain", patterns: []ir.Pattern{negNeg}, src: `
			func.func @f(%x: tensor<f32>) -> tensor<f32> {
			  %a = graph.neg %x : tensor<f32>
			  %b = graph.neg %a : tensor<f32>
			  %c = graph.neg %b : tensor<f32>
			  %d = graph.neg %c : tensor<f32>
			  %e = graph.neg %d : tensor<f32>
			  return %e : tensor<f32>
			}
			`, cfg: ir.GreedyConfig{EraseDead: true}, changed: true, want: `
			module {
			  func.func @f(%x: tensor<f32>) -> tensor<f32> {
			    %e = graph.neg %x : tensor<f32>
			    return %e : tensor<f32>
			  }
			}
			`},
		{name: "nothing to do", patterns: []ir.Pattern{negNeg}, src: `
			func.func @f(%x: tensor<f32>) -> tensor<f32> {
			  %a = graph.neg %x : tensor<f32>
			  return %a : tensor<f32>
			}
			`, changed: false, want: `
			module {
			  func.func @f(%x: tensor<f32>) -> tensor<f32> {
			    %a = graph.neg %x : tensor<f32>
			    return %a : tensor<f32>
			  }
			}
			`},
		{name: "without EraseDead the inner ops stay", patterns: []ir.Pattern{negNeg}, src: `
			func.func @f(%x: tensor<f32>) -> tensor<f32> {
			  %a = graph.neg %x : tensor<f32>
			  %b = graph.neg %a : tensor<f32>
			  return %b : tensor<f32>
			}
			`, changed: true, want: `
			module {
			  func.func @f(%x: tensor<f32>) -> tensor<f32> {
			    %a = graph.neg %x : tensor<f32>
			    return %x : tensor<f32>
			  }
			}
			`},
		{name: "EraseDead erases unused pure chains only", src: `
			func.func @f(%x: tensor<f32>) -> tensor<f32> {
			  %a = graph.exp %x : tensor<f32>
			  %b = graph.neg %a : tensor<f32>
			  %c = test.pure %b : tensor<f32>
			  %d = test.op %x : tensor<f32>
			  %e = graph.abs %x : tensor<f32>
			  return %e : tensor<f32>
			}
			`, cfg: ir.GreedyConfig{EraseDead: true}, changed: true, want: `
			module {
			  func.func @f(%x: tensor<f32>) -> tensor<f32> {
			    %d = test.op %x : tensor<f32>
			    %e = graph.abs %x : tensor<f32>
			    return %e : tensor<f32>
			  }
			}
			`},
		{name: "EraseDead inside nested regions", src: `
			func.func @f(%x: tensor<f32>) {
			  test.container {
			    %a = graph.exp %x : tensor<f32>
			    %b = graph.neg %a : tensor<f32>
			  }
			  return
			}
			`, cfg: ir.GreedyConfig{EraseDead: true}, changed: true, want: `
			module {
			  func.func @f(%x: tensor<f32>) {
			    test.container {
			    }
			    return
			  }
			}
			`},
		// one iteration is enough: ops a pattern creates are visited in it
		{name: "created ops are revisited", patterns: []ir.Pattern{stage(1), stage(2)}, src: `
			func.func @f(%x: f32) -> f32 {
			  %a = test.pure %x {stage = 1} : f32
			  return %a : f32
			}
			`, cfg: ir.GreedyConfig{MaxIterations: 1}, changed: true, want: `
			module {
			  func.func @f(%x: f32) -> f32 {
			    %0 = test.pure %x {stage = 3} : f32
			    return %0 : f32
			  }
			}
			`},
		{name: "folding through constants", src: `
			func.func @f() -> i64 {
			  %a = test.const {value = 1} : i64
			  %b = test.const {value = 2} : i64
			  %c = test.addi %a, %b : i64
			  %d = test.const {value = 39} : i64
			  %e = test.addi %c, %d : i64
			  return %e : i64
			}
			`, cfg: ir.GreedyConfig{Fold: true, MaterializeConstant: materializeTestConst, EraseDead: true}, changed: true, want: `
			module {
			  func.func @f() -> i64 {
			    %0 = test.const {value = 42} : i64
			    return %0 : i64
			  }
			}
			`},
		{name: "no folding without a materializer", src: `
			func.func @f() -> i64 {
			  %a = test.const {value = 1} : i64
			  %c = test.addi %a, %a : i64
			  return %c : i64
			}
			`, cfg: ir.GreedyConfig{Fold: true}, changed: false, want: `
			module {
			  func.func @f() -> i64 {
			    %a = test.const {value = 1} : i64
			    %c = test.addi %a, %a : i64
			    return %c : i64
			  }
			}
			`},
		{name: "a materializer that declines", src: `
			func.func @f() -> i64 {
			  %a = test.const {value = 1} : i64
			  %c = test.addi %a, %a : i64
			  return %c : i64
			}
			`, cfg: ir.GreedyConfig{Fold: true, MaterializeConstant: func(*ir.Builder, ir.Attr, ir.Type, ir.Location) *ir.Operation { return nil }}, changed: false, want: `
			module {
			  func.func @f() -> i64 {
			    %a = test.const {value = 1} : i64
			    %c = test.addi %a, %a : i64
			    return %c : i64
			  }
			}
			`},
		{name: "fold declines non-constant operands", src: `
			func.func @f(%x: i64) -> i64 {
			  %a = test.const {value = 1} : i64
			  %c = test.addi %a, %x : i64
			  return %c : i64
			}
			`, cfg: ir.GreedyConfig{Fold: true, MaterializeConstant: materializeTestConst}, changed: false, want: `
			module {
			  func.func @f(%x: i64) -> i64 {
			    %a = test.const {value = 1} : i64
			    %c = test.addi %a, %x : i64
			    return %c : i64
			  }
			}
			`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := parse(t, dedent(tc.src))
			changed := ir.ApplyPatternsGreedily(m.Operation, tc.patterns, tc.cfg)
			assert.Equal(t, tc.changed, changed)
			assert.Equal(t, dedent(tc.want), printIR(m))
			require.NoError(t, ir.Verify(m.Operation))
		})
	}
}

// TestMaxIterations uses a pattern that reports a change every time without
// telling the rewriter: only the iteration bound stops the driver.
func TestMaxIterations(t *testing.T) {
	for _, tc := range []struct{ max, want int }{{0, 10}, {1, 1}, {3, 3}} {
		m := parse(t, "%x = test.op : f32\n")
		calls := 0
		always := ir.PatternFunc("Always", opTest, func(op *ir.Operation, rw *ir.Rewriter) bool {
			calls++
			return true
		})
		assert.True(t, ir.ApplyPatternsGreedily(m.Operation, []ir.Pattern{always}, ir.GreedyConfig{MaxIterations: tc.max}))
		assert.Equal(t, tc.want, calls, "MaxIterations %d", tc.max)
	}
}

func TestOnRewriteAndPatternOrder(t *testing.T) {
	m := parse(t, dedent(`
		func.func @f(%x: tensor<f32>) -> tensor<f32> {
		  %a = graph.neg %x : tensor<f32>
		  %b = graph.neg %a : tensor<f32>
		  %c = graph.exp %b : tensor<f32>
		  return %c : tensor<f32>
		}
		`))
	var applied []string
	// any-root patterns come after those for the op's name
	tagExp := ir.PatternFunc("TagExp", "", func(op *ir.Operation, rw *ir.Rewriter) bool {
		if op.Name() != "graph.exp" || op.Attr("seen") != nil {
			return false
		}
		rw.ModifyInPlace(op, func() { op.SetAttr("seen", ir.BoolAttr(true)) })
		return true
	})
	never := ir.PatternFunc("Never", "graph.neg", func(*ir.Operation, *ir.Rewriter) bool { return false })
	ir.ApplyPatternsGreedily(m.Operation, []ir.Pattern{tagExp, never, negNeg}, ir.GreedyConfig{
		EraseDead: true,
		OnRewrite: func(p ir.Pattern, op *ir.Operation) {
			applied = append(applied, p.Name()+" on "+op.Name())
		},
	})
	assert.Equal(t, []string{"NegNeg on graph.neg", "TagExp on graph.exp"}, applied)
	assert.Equal(t, dedent(`
		module {
		  func.func @f(%x: tensor<f32>) -> tensor<f32> {
		    %c = graph.exp %x {seen = true} : tensor<f32>
		    return %c : tensor<f32>
		  }
		}
		`), printIR(m))
	assert.Equal(t, "graph.neg", never.Root())
	assert.Equal(t, "", tagExp.Root())
}

// TestModifyInPlaceRevisitsUsers changes an op in place after its users
// were visited: they are looked at again, in the same iteration, and match.
func TestModifyInPlaceRevisitsUsers(t *testing.T) {
	m := parse(t, dedent(`
		func.func @f(%x: f32) -> f32 {
		  %a = test.pure %x : f32
		  %b = test.pure %a : f32
		  test.op %a {trigger = true} : f32
		  return %b : f32
		}
		`))
	// Mark marks a test.pure whose operand comes from a marked op.
	mark := ir.PatternFunc("Mark", opPure, func(op *ir.Operation, rw *ir.Rewriter) bool {
		d := op.Operand(0).DefiningOp()
		if op.Attr("mark") != nil || d == nil || d.Attr("mark") == nil {
			return false
		}
		rw.ModifyInPlace(op, func() { op.SetAttr("mark", ir.BoolAttr(true)) })
		return true
	})
	// Trigger marks the producer of its operand, after %b was visited.
	trigger := ir.PatternFunc("Trigger", opTest, func(op *ir.Operation, rw *ir.Rewriter) bool {
		d := op.Operand(0).DefiningOp()
		if d.Attr("mark") != nil {
			return false
		}
		rw.ModifyInPlace(d, func() { d.SetAttr("mark", ir.BoolAttr(true)) })
		return true
	})
	ir.ApplyPatternsGreedily(m.Operation, []ir.Pattern{mark, trigger}, ir.GreedyConfig{MaxIterations: 1})
	assert.Equal(t, dedent(`
		module {
		  func.func @f(%x: f32) -> f32 {
		    %a = test.pure %x {mark = true} : f32
		    %b = test.pure %a {mark = true} : f32
		    test.op %a {trigger = true} : f32
		    return %b : f32
		  }
		}
		`), printIR(m))
}

// TestRewriterInsertOp inserts a prebuilt op (with a region) through the
// rewriter: the op and what it holds are visited.
func TestRewriterInsertOp(t *testing.T) {
	m := parse(t, dedent(`
		func.func @f(%x: f32) {
		  test.op %x {wrap = true} : f32
		  return
		}
		`))
	var visited []string
	wrap := ir.PatternFunc("Wrap", opTest, func(op *ir.Operation, rw *ir.Rewriter) bool {
		if op.Attr("wrap") == nil {
			return false
		}
		c := ir.NewOperation(opContainer, op.Loc, nil, nil, nil, 1)
		body := ir.NewBlock()
		c.Region(0).AppendBlock(body)
		body.Append(ir.NewOperation(opPure, op.Loc, op.Operands(), []ir.Type{ir.F32Type}, nil, 0))
		rw.InsertOp(c)
		rw.EraseOp(op)
		return true
	})
	spy := ir.PatternFunc("Spy", "", func(op *ir.Operation, rw *ir.Rewriter) bool {
		visited = append(visited, op.Name())
		return false
	})
	ir.ApplyPatternsGreedily(m.Operation, []ir.Pattern{wrap, spy}, ir.GreedyConfig{MaxIterations: 1})
	// the worklist is a stack: the new ops come first, the nested one before its parent
	assert.Equal(t, []string{opPure, opContainer, "func.return", "func.func"}, visited)
	assert.Equal(t, dedent(`
		module {
		  func.func @f(%x: f32) {
		    test.container {
		      %0 = test.pure %x : f32
		    }
		    return
		  }
		}
		`), printIR(m))
}

func TestSortPatternsAndDeadness(t *testing.T) {
	ps := []ir.Pattern{
		ir.PatternFunc("b", "", nil),
		ir.PatternFunc("a", "x", nil),
		ir.PatternFunc("c", "", nil),
	}
	ir.SortPatterns(ps)
	assert.Equal(t, []string{"a", "b", "c"}, []string{ps[0].Name(), ps[1].Name(), ps[2].Name()})

	m := parse(t, dedent(`
		func.func @f(%x: f32) -> f32 {
		  %a = test.pure %x : f32
		  %b = test.op %x : f32
		  %c = test.pure %x : f32
		  return %c : f32
		}
		`))
	f, _ := m.Lookup("f")
	ops := f.Body().Ops()
	assert.True(t, ir.IsTriviallyDead(ops[0]), "unused pure op")
	assert.False(t, ir.IsTriviallyDead(ops[1]), "not pure")
	assert.False(t, ir.IsTriviallyDead(ops[2]), "used")
	assert.False(t, ir.IsTriviallyDead(ops[3]), "terminator")
}

// TestErasedOpsAreNotVisited erases an op that is still on the worklist:
// the driver must not hand it to a pattern.
func TestErasedOpsAreNotVisited(t *testing.T) {
	m := parse(t, dedent(`
		func.func @f(%x: f32) {
		  test.op %x {killer = true} : f32
		  %v = test.op %x {victim = true} : f32
		  test.container {
		    test.op %x {victim = true} : f32
		  }
		  return
		}
		`))
	var visited []string
	killer := ir.PatternFunc("Killer", opTest, func(op *ir.Operation, rw *ir.Rewriter) bool {
		if op.Attr("killer") == nil {
			return false
		}
		for o := op.Next(); o != nil; o = o.Next() {
			if o.Attr("victim") != nil || o.Name() == opContainer {
				defer rw.EraseOp(o)
			}
		}
		rw.ModifyInPlace(op, func() { op.Attrs.Delete("killer") })
		return true
	})
	spy := ir.PatternFunc("Spy", "", func(op *ir.Operation, rw *ir.Rewriter) bool {
		if op.Attr("victim") != nil {
			visited = append(visited, op.Name())
		}
		return false
	})
	ir.ApplyPatternsGreedily(m.Operation, []ir.Pattern{killer, spy}, ir.GreedyConfig{})
	assert.Empty(t, visited)
	assert.Equal(t, dedent(`
		module {
		  func.func @f(%x: f32) {
		    test.op %x : f32
		    return
		  }
		}
		`), printIR(m))
}
