package ir_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tensorforge/tensorforge/ir"
)

func TestLocation(t *testing.T) {
	assert.Equal(t, "loc(unknown)", ir.Location{}.String())
	assert.Equal(t, "loc(unknown)", ir.Location{File: "a.tir"}.String())
	assert.False(t, ir.Location{File: "a.tir"}.Known())
	l := ir.Location{File: `dir "x"/a.tir`, Line: 3, Col: 5}
	assert.True(t, l.Known())
	assert.Equal(t, `loc("dir \"x\"/a.tir":3:5)`, l.String())
}

const useListIR = `
func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %x = graph.add %a, %a : tensor<4xf32>
  %y = graph.mul %x, %b : tensor<4xf32>
  %z = graph.sub %x, %y : tensor<4xf32>
  return %z : tensor<4xf32>
}
`

func TestUseLists(t *testing.T) {
	m := parse(t, useListIR)
	f, ok := m.Lookup("f")
	require.True(t, ok)
	a, b := f.Args()[0], f.Args()[1]
	add := findOp(t, m.Operation, "graph.add")
	mul := findOp(t, m.Operation, "graph.mul")
	sub := findOp(t, m.Operation, "graph.sub")
	x := add.Result(0)

	assert.True(t, a.IsBlockArg())
	assert.Equal(t, f.Body(), a.OwnerBlock())
	assert.Nil(t, a.DefiningOp())
	assert.Equal(t, 1, b.ResultIndex())
	assert.False(t, x.IsBlockArg())
	assert.Equal(t, add, x.DefiningOp())
	assert.Nil(t, x.OwnerBlock())

	// %a is used twice by one op
	assert.Len(t, a.Uses(), 2)
	assert.Equal(t, names([]*ir.Operation{add}), names(a.Users()))
	assert.Equal(t, names([]*ir.Operation{mul, sub}), names(x.Users()))
	for _, u := range x.Uses() {
		assert.Equal(t, x, u.Value())
		assert.Equal(t, x, u.Owner.Operand(u.Index))
	}

	// Set moves one use
	add.OpOperand(1).Set(b)
	assert.Len(t, a.Uses(), 1)
	assert.Equal(t, 0, a.Uses()[0].Index)
	assert.Equal(t, []string{"graph.mul", "graph.add"}, names(b.Users()), "a new use goes last")

	// SetOperand is Set through the op
	mul.SetOperand(1, a)
	assert.Equal(t, names([]*ir.Operation{add}), names(b.Users()))
	assert.Equal(t, names([]*ir.Operation{add, mul}), names(a.Users()))

	// RAUW moves every use, keeping their order
	x.ReplaceAllUsesWith(b)
	assert.False(t, x.HasUses())
	assert.Equal(t, names([]*ir.Operation{add, mul, sub}), names(b.Users()))
	assert.Equal(t, b, sub.Operand(0))
	x.ReplaceAllUsesWith(x) // a no-op
	b.ReplaceAllUsesWith(b)
	assert.Len(t, b.Uses(), 3)

	assert.Equal(t, dedent(`
		module {
		  func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
		    %x = graph.add %a, %b : tensor<4xf32>
		    %y = graph.mul %b, %a : tensor<4xf32>
		    %z = graph.sub %b, %y : tensor<4xf32>
		    return %z : tensor<4xf32>
		  }
		}
		`), printIR(m))

	// SetOperands and DropOperands keep the use lists right
	sub.SetOperands([]*ir.Value{a, a, b})
	assert.Equal(t, 3, sub.NumOperands())
	assert.False(t, mul.Result(0).HasUses())
	assert.Equal(t, []*ir.Value{a, a, b}, sub.Operands())
	assert.Equal(t, 2, sub.OpOperand(2).Index)
	sub.DropOperands()
	assert.Equal(t, 0, sub.NumOperands())
	assert.Equal(t, names([]*ir.Operation{add, mul}), names(a.Users()))
	assert.Equal(t, names([]*ir.Operation{add, mul}), names(b.Users()))
}

// TestReplaceAllUsesWithManyUses replaces a value used by many ops; the
// uses keep their order and the new value's earlier uses stay first.
func TestReplaceAllUsesWithManyUses(t *testing.T) {
	src := ir.NewOperation(opTest, ir.Location{}, nil, []ir.Type{f32x4, f32x4}, nil, 0)
	v, w := src.Result(0), src.Result(1)
	first := ir.NewOperation(opTest, ir.Location{}, []*ir.Value{w}, nil, nil, 0)
	var users []*ir.Operation
	for range 1000 {
		users = append(users, ir.NewOperation(opTest, ir.Location{}, []*ir.Value{v, v}, nil, nil, 0))
	}
	v.ReplaceAllUsesWith(w)
	assert.False(t, v.HasUses())
	require.Len(t, w.Uses(), 2001)
	assert.Equal(t, append([]*ir.Operation{first}, users...), w.Users())
	for _, u := range w.Uses() {
		assert.Equal(t, w, u.Value())
	}
	// replacing by nil drops the uses
	w.ReplaceAllUsesWith(nil)
	assert.False(t, w.HasUses())
	assert.Nil(t, first.Operand(0))
}

// TestEraseDropsUsesRecursively erases an op whose region uses values of
// the enclosing function: those uses go with it.
func TestEraseDropsUsesRecursively(t *testing.T) {
	m := parse(t, `
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %x = graph.neg %a : tensor<4xf32>
  test.op %x {
    %y = graph.add %a, %x : tensor<4xf32>
    test.op {
      test.op %y, %a : tensor<4xf32>
    }
  } : tensor<4xf32>
  return %x : tensor<4xf32>
}
`)
	f, _ := m.Lookup("f")
	a := f.Args()[0]
	x := findOp(t, m.Operation, "graph.neg").Result(0)
	assert.Len(t, a.Uses(), 3)
	assert.Len(t, x.Uses(), 3)

	outer := findOp(t, m.Operation, opTest)
	inner := findOp(t, outer, "graph.add")
	assert.True(t, outer.IsAncestor(inner))
	assert.False(t, inner.IsAncestor(outer))
	assert.Equal(t, outer, inner.ParentOp())

	outer.Erase()
	assert.Nil(t, outer.Block())
	assert.Equal(t, []string{"graph.neg", "func.return"}, opNames(f.Body()))
	assert.Len(t, a.Uses(), 1, "only graph.neg still uses %%a")
	assert.Len(t, x.Uses(), 1, "only return still uses %%x")
	require.NoError(t, ir.Verify(m.Operation))
}

// names lists the names of ops, for readable failures.
func names(ops []*ir.Operation) []string {
	out := make([]string, len(ops))
	for i, o := range ops {
		out[i] = o.Name()
	}
	return out
}

// newOps returns n detached test ops named by their "id" attribute.
func newOps(n int) []*ir.Operation {
	ops := make([]*ir.Operation, n)
	for i := range ops {
		ops[i] = ir.NewOperation(opTest, ir.Location{}, nil, nil, ir.Attrs("id", ir.IntAttr{Value: int64(i)}), 0)
	}
	return ops
}

// ids lists the "id" attributes of the ops of b, checking the links both ways.
func ids(t *testing.T, b *ir.Block) []int64 {
	t.Helper()
	var out []int64
	var prev *ir.Operation
	for o := b.First(); o != nil; o = o.Next() {
		require.Equal(t, prev, o.Prev())
		require.Equal(t, b, o.Block())
		n, _ := ir.AttrAsInt(o.Attr("id"))
		out = append(out, n)
		prev = o
	}
	require.Equal(t, prev, b.Last())
	require.Equal(t, len(out), b.Len())
	require.Len(t, b.Ops(), len(out))
	return out
}

// checkOrder checks IsBeforeInBlock for every pair against list order.
func checkOrder(t *testing.T, b *ir.Block) {
	t.Helper()
	ops := b.Ops()
	for i, x := range ops {
		for j, y := range ops {
			require.Equal(t, i < j, x.IsBeforeInBlock(y), "IsBeforeInBlock(#%d, #%d)", i, j)
		}
	}
}

func TestBlockListOps(t *testing.T) {
	ops := newOps(6)
	b := ir.NewBlock()
	assert.Nil(t, b.First())
	assert.Nil(t, b.Last())
	assert.Equal(t, 0, b.Len())

	steps := []struct {
		name string
		do   func()
		want []int64
	}{
		{"append", func() { b.Append(ops[0]); b.Append(ops[1]); b.Append(ops[2]) }, []int64{0, 1, 2}},
		{"insert before first", func() { b.InsertBefore(ops[3], ops[0]) }, []int64{3, 0, 1, 2}},
		{"insert before middle", func() { b.InsertBefore(ops[4], ops[1]) }, []int64{3, 0, 4, 1, 2}},
		{"insert before nil appends", func() { b.InsertBefore(ops[5], nil) }, []int64{3, 0, 4, 1, 2, 5}},
		{"remove first", func() { ops[3].Remove() }, []int64{0, 4, 1, 2, 5}},
		{"remove last", func() { ops[5].Remove() }, []int64{0, 4, 1, 2}},
		{"remove middle", func() { ops[1].Remove() }, []int64{0, 4, 2}},
		{"remove detached is a no-op", func() { ops[1].Remove() }, []int64{0, 4, 2}},
		{"append after removals", func() { b.Append(ops[1]) }, []int64{0, 4, 2, 1}},
		{"move before first", func() { ops[2].MoveBefore(ops[0]) }, []int64{2, 0, 4, 1}},
		{"move after last", func() { ops[2].MoveAfter(ops[1]) }, []int64{0, 4, 1, 2}},
		{"move after middle", func() { ops[0].MoveAfter(ops[4]) }, []int64{4, 0, 1, 2}},
		{"move detached op in", func() { ops[3].MoveBefore(ops[1]) }, []int64{4, 0, 3, 1, 2}},
		{"move before itself", func() { ops[3].MoveBefore(ops[3]) }, []int64{4, 0, 3, 1, 2}},
		{"move after itself", func() { ops[3].MoveAfter(ops[3]) }, []int64{4, 0, 3, 1, 2}},
		{"insert before itself", func() { b.InsertBefore(ops[3], ops[3]) }, []int64{4, 0, 3, 1, 2}},
		{"append what is already last", func() { b.Append(ops[2]) }, []int64{4, 0, 3, 1, 2}},
		{"append moves to the end", func() { b.Append(ops[4]) }, []int64{0, 3, 1, 2, 4}},
		{"erase", func() { ops[1].Erase() }, []int64{0, 3, 2, 4}},
	}
	for _, s := range steps {
		s.do()
		require.Equal(t, s.want, ids(t, b), s.name)
		checkOrder(t, b)
		// query again after a query: the lazily renumbered order must hold
		checkOrder(t, b)
	}

	// an op appended to another block leaves the first one
	other := ir.NewBlock()
	other.Append(ops[0])
	assert.Equal(t, []int64{3, 2, 4}, ids(t, b))
	assert.Equal(t, []int64{0}, ids(t, other))
	other.InsertBefore(ops[2], ops[0])
	assert.Equal(t, []int64{3, 4}, ids(t, b))
	assert.Equal(t, []int64{2, 0}, ids(t, other))
	checkOrder(t, b)
	checkOrder(t, other)
	ops[4].MoveAfter(ops[2])
	assert.Equal(t, []int64{3}, ids(t, b))
	assert.Equal(t, []int64{2, 4, 0}, ids(t, other))
	checkOrder(t, other)
}

// TestIsBeforeInBlockAppendKeepsOrder appends after the order was
// computed: appended ops are numbered on the fly.
func TestIsBeforeInBlockAppendKeepsOrder(t *testing.T) {
	ops := newOps(5)
	b := ir.NewBlock()
	b.Append(ops[0])
	b.Append(ops[1])
	assert.True(t, ops[0].IsBeforeInBlock(ops[1]))
	b.Append(ops[2])
	b.Append(ops[3])
	assert.True(t, ops[1].IsBeforeInBlock(ops[3]))
	assert.False(t, ops[3].IsBeforeInBlock(ops[2]))
	b.InsertBefore(ops[4], ops[0])
	assert.True(t, ops[4].IsBeforeInBlock(ops[0]))
	checkOrder(t, b)
}

func TestBlockAndRegion(t *testing.T) {
	op := ir.NewOperation(opTest, ir.Location{}, nil, nil, nil, 1)
	r := op.Region(0)
	assert.Equal(t, op, r.ParentOp())
	assert.Nil(t, r.Entry())
	b := ir.NewBlock(ir.F32Type, f32x4)
	assert.Nil(t, b.Parent())
	assert.Nil(t, b.ParentOp())
	r.AppendBlock(b)
	assert.Equal(t, b, r.Entry())
	assert.Equal(t, r, b.Parent())
	assert.Equal(t, op, b.ParentOp())
	require.Len(t, b.Args, 2)
	assert.Equal(t, 1, b.Args[1].ResultIndex())
	c := b.AddArg(ir.I1Type)
	assert.Equal(t, 2, c.ResultIndex())
	assert.Equal(t, b, c.OwnerBlock())

	other := op.AddRegion()
	assert.Equal(t, 2, op.NumRegions())
	assert.Equal(t, []*ir.Region{r, other}, op.Regions())
	other.TakeBody(r)
	assert.Empty(t, r.Blocks)
	assert.Equal(t, []*ir.Block{b}, other.Blocks)
	assert.Equal(t, other, b.Parent())

	inner := ir.NewOperation(opTest, ir.Location{}, nil, nil, nil, 0)
	b.Append(inner)
	assert.Equal(t, op, inner.ParentOp())
	assert.Nil(t, op.ParentOp())
}

func TestOperationAccessors(t *testing.T) {
	op := ir.NewOperation("graph.add", ir.Location{File: "a", Line: 1, Col: 2}, nil, []ir.Type{f32x4}, nil, 0)
	assert.Equal(t, "graph.add", op.Name())
	assert.Equal(t, "graph", op.Dialect())
	require.NotNil(t, op.Def())
	assert.True(t, op.HasTrait(ir.Pure))
	assert.True(t, op.HasTrait(ir.Commutative))
	assert.False(t, op.HasTrait(ir.Terminator))

	unknown := ir.NewOperation("nodialect", ir.Location{}, nil, nil, nil, 0)
	assert.Equal(t, "", unknown.Dialect())
	assert.Nil(t, unknown.Def())
	assert.False(t, unknown.HasTrait(ir.Pure))

	r := op.AddResult(ir.I1Type)
	assert.Equal(t, 2, op.NumResults())
	assert.Equal(t, 1, r.ResultIndex())
	assert.Equal(t, op, r.DefiningOp())
	assert.Equal(t, []*ir.Value{op.Result(0), r}, op.Results())
	r.SetType(ir.I8Type)
	assert.Equal(t, ir.I8Type, r.Type())

	op.SetAttr("b", ir.IntAttr{Value: 1})
	op.SetAttr("a", ir.IntAttr{Value: 2})
	assert.Equal(t, ir.IntAttr{Value: 2}, op.Attr("a"))
	assert.Nil(t, op.Attr("c"))
	assert.Equal(t, "{a = 2, b = 1}", op.Attrs.String())

	r.Name = "flag"
	assert.Equal(t, "%flag", r.String())
	assert.Equal(t, "<tensor<4xf32> value>", op.Result(0).String())
}

const walkIR = `
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %x = graph.neg %a : tensor<4xf32>
  test.op {
    %y = graph.exp %x : tensor<4xf32>
    test.container {
      %z = graph.abs %y : tensor<4xf32>
    }
  }
  %w = graph.tanh %x : tensor<4xf32>
  return %w : tensor<4xf32>
}
`

func TestWalk(t *testing.T) {
	m := parse(t, walkIR)
	var pre, post []string
	m.Walk(func(o *ir.Operation) bool { pre = append(pre, o.Name()); return true })
	m.WalkPost(func(o *ir.Operation) { post = append(post, o.Name()) })
	assert.Equal(t, []string{"builtin.module", "func.func", "graph.neg", "test.op", "graph.exp", "test.container", "graph.abs", "graph.tanh", "func.return"}, pre)
	assert.Equal(t, []string{"graph.neg", "graph.exp", "graph.abs", "test.container", "test.op", "graph.tanh", "func.return", "func.func", "builtin.module"}, post)

	// returning false skips the regions of that op only
	var skipped []string
	m.Walk(func(o *ir.Operation) bool {
		skipped = append(skipped, o.Name())
		return o.Name() != opTest
	})
	assert.Equal(t, []string{"builtin.module", "func.func", "graph.neg", "test.op", "graph.tanh", "func.return"}, skipped)
}

// TestWalkErase erases the visited op during a walk: the walk goes on with
// the op that followed it.
func TestWalkErase(t *testing.T) {
	t.Run("pre-order", func(t *testing.T) {
		m := parse(t, walkIR)
		var seen []string
		m.Walk(func(o *ir.Operation) bool {
			seen = append(seen, o.Name())
			if o.Name() == opTest {
				o.Erase()
				return false
			}
			return true
		})
		assert.Equal(t, []string{"builtin.module", "func.func", "graph.neg", "test.op", "graph.tanh", "func.return"}, seen)
		f, _ := m.Lookup("f")
		assert.Equal(t, []string{"graph.neg", "graph.tanh", "func.return"}, opNames(f.Body()))
		require.NoError(t, ir.Verify(m.Operation))
	})
	t.Run("post-order erases everything unused", func(t *testing.T) {
		m := parse(t, walkIR)
		var seen []string
		m.WalkPost(func(o *ir.Operation) {
			seen = append(seen, o.Name())
			if o.NumResults() == 1 && !o.Result(0).HasUses() || o.Name() == opTest || o.Name() == opContainer {
				o.Erase()
			}
		})
		assert.Equal(t, []string{"graph.neg", "graph.exp", "graph.abs", "test.container", "test.op", "graph.tanh", "func.return", "func.func", "builtin.module"}, seen)
		f, _ := m.Lookup("f")
		assert.Equal(t, []string{"graph.neg", "graph.tanh", "func.return"}, opNames(f.Body()))
		assert.Len(t, findOp(t, m.Operation, "graph.neg").Result(0).Uses(), 1)
		require.NoError(t, ir.Verify(m.Operation))
	})
}

const cloneIR = `
func.func @f(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
  %c = graph.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %a = graph.add %x, %c : tensor<4xf32>
  %r:2 = graph.fused %a, %w {kind = "row"} {
  ^bb0(%p: tensor<4xf32>, %q: tensor<4xf32>):
    %s = graph.mul %p, %q : tensor<4xf32>
    graph.yield %s, %p : tensor<4xf32>
  } : tensor<4xf32>
  test.container %r#1 {
  ^body(%e: tensor<4xf32>):
    %t = graph.add %e, %r#0 : tensor<4xf32>
  } : tensor<4xf32>
  return %r#1 : tensor<4xf32>
}
`

// owners collects every op and block argument of the tree rooted at op.
func owners(op *ir.Operation) (map[*ir.Operation]bool, map[*ir.Value]bool) {
	ops, args := map[*ir.Operation]bool{}, map[*ir.Value]bool{}
	op.Walk(func(o *ir.Operation) bool {
		ops[o] = true
		for _, r := range o.Regions() {
			for _, b := range r.Blocks {
				for _, a := range b.Args {
					args[a] = true
				}
			}
		}
		return true
	})
	return ops, args
}

func TestClone(t *testing.T) {
	m := parse(t, cloneIR)
	f, _ := m.Lookup("f")
	mapping := ir.Mapping{}
	c := f.Clone(mapping)

	assert.Nil(t, c.Block(), "a clone is detached")
	assert.Equal(t, f.Operation.String(), c.String(), "the clone prints like the original")
	assert.Equal(t, f.Loc, c.Loc)

	// every operand of the clone refers to a value of the clone
	ops, args := owners(c)
	origOps, _ := owners(f.Operation)
	c.Walk(func(o *ir.Operation) bool {
		assert.False(t, origOps[o], "%s of the clone is an original op", o.Name())
		for i, v := range o.Operands() {
			if v.IsBlockArg() {
				assert.True(t, args[v], "%s operand #%d is an original block argument", o.Name(), i)
			} else {
				assert.True(t, ops[v.DefiningOp()], "%s operand #%d is an original result", o.Name(), i)
			}
		}
		return true
	})

	// the mapping takes original values to the clone's
	fused := findOp(t, f.Operation, "graph.fused")
	cfused := findOp(t, c, "graph.fused")
	assert.Equal(t, cfused.Result(1), mapping.Lookup(fused.Result(1)))
	origArg := fused.Region(0).Entry().Args[1]
	assert.Equal(t, cfused.Region(0).Entry().Args[1], mapping[origArg])
	assert.Equal(t, "q", mapping[origArg].Name)
	other := ir.NewBlock(ir.F32Type).Args[0]
	assert.Equal(t, other, mapping.Lookup(other), "unmapped values map to themselves")

	// block labels and attributes are copied, not shared
	body := findOp(t, c, opContainer).Region(0).Entry()
	assert.Equal(t, "body", body.Label)
	cfused.SetAttr("kind", ir.StringAttr("changed"))
	assert.Equal(t, ir.StringAttr("row"), fused.Attr("kind"))

	// the clone stands on its own: it verifies inside a module of its own
	m2 := ir.NewModule(ir.Location{})
	m2.Body().Append(c)
	require.NoError(t, ir.Verify(m2.Operation))
	require.NoError(t, ir.Verify(m.Operation))
}

// TestCloneRemapsOperands clones one op out of a function with its
// operands mapped to other values; a nil mapping is allowed.
func TestCloneRemapsOperands(t *testing.T) {
	m := parse(t, useListIR)
	f, _ := m.Lookup("f")
	a, b := f.Args()[0], f.Args()[1]
	mul := findOp(t, m.Operation, "graph.mul")

	mapping := ir.Mapping{mul.Operand(0): a}
	c := mul.Clone(mapping)
	assert.Equal(t, []*ir.Value{a, b}, c.Operands())
	assert.Equal(t, c.Result(0), mapping[mul.Result(0)])
	assert.Equal(t, "y", c.Result(0).Name)
	assert.Len(t, b.Uses(), 2, "the clone's operands are uses")

	c2 := mul.Clone(nil)
	assert.Equal(t, mul.Operands(), c2.Operands())
	c.DropOperands()
	c2.DropOperands()
	assert.Len(t, b.Uses(), 1)
}

func TestModuleAndFunc(t *testing.T) {
	m := ir.NewModule(ir.Location{})
	ft := ir.FunctionType{Inputs: []ir.Type{f32x4}, Results: []ir.Type{f32x4}}
	f := ir.NewFunc(ir.Location{}, "id", ft)
	m.Body().Append(f.Operation)
	assert.Nil(t, f.Return())
	ret := ir.NewOperation(ir.ReturnOpName, ir.Location{}, f.Args(), nil, nil, 0)
	f.Body().Append(ret)
	assert.Equal(t, ret, f.Return())
	assert.Equal(t, "id", f.SymName())
	assert.True(t, ir.TypeEqual(ft, f.Type()))
	require.Len(t, m.Funcs(), 1)
	_, ok := m.Lookup("nope")
	assert.False(t, ok)
	got, ok := m.Lookup("id")
	require.True(t, ok)
	assert.Equal(t, f.Operation, got.Operation)
	require.NoError(t, ir.Verify(m.Operation))

	f.SetType(ir.FunctionType{Inputs: []ir.Type{f32x4}})
	assert.Empty(t, f.Type().Results)
	f.SetAttr("function_type", ir.StringAttr("bad"))
	assert.Equal(t, ir.FunctionType{}, f.Type())
}

func TestBuilder(t *testing.T) {
	b := ir.NewBlock(f32x4)
	x := b.Args[0]
	bl := ir.NewBuilderAtEnd(b)
	assert.Equal(t, b, bl.InsertionBlock())
	first := bl.Create(opTest, ir.Location{}, []*ir.Value{x}, []ir.Type{f32x4}, ir.Attrs("id", ir.IntAttr{Value: 0}))
	last := bl.Create(opTest, ir.Location{}, nil, nil, ir.Attrs("id", ir.IntAttr{Value: 3}))
	bl.SetInsertionPointAfter(first)
	bl.Loc = ir.Location{File: "b", Line: 7, Col: 1}
	mid := bl.CreateHere(opTest, nil, nil, ir.Attrs("id", ir.IntAttr{Value: 1}))
	assert.Equal(t, bl.Loc, mid.Loc)
	bl.SetInsertionPointBefore(last)
	bl.Insert(ir.NewOperation(opTest, ir.Location{}, nil, nil, ir.Attrs("id", ir.IntAttr{Value: 2}), 0))
	bl.SetInsertionPointToEnd(b)
	bl.Create(opTest, ir.Location{}, nil, nil, ir.Attrs("id", ir.IntAttr{Value: 4}))
	before := ir.NewBuilderBefore(first)
	assert.Equal(t, first.Loc, before.Loc)
	before.Create(opTest, ir.Location{}, nil, nil, ir.Attrs("id", ir.IntAttr{Value: -1}))
	assert.Equal(t, []int64{-1, 0, 1, 2, 3, 4}, ids(t, b))

	// a builder without a block creates detached ops
	detached := (&ir.Builder{}).Create(opTest, ir.Location{}, nil, nil, nil)
	assert.Nil(t, detached.Block())
}

func TestRegistry(t *testing.T) {
	defs := ir.RegisteredOps()
	for i := 1; i < len(defs); i++ {
		require.Less(t, defs[i-1].Name, defs[i].Name)
	}
	assert.NotNil(t, ir.LookupOp(ir.FuncOpName))
	assert.Nil(t, ir.LookupOp("test.nope"))
	assert.Panics(t, func() { ir.RegisterOp(&ir.OpDef{Name: opTest}) })

	d := ir.LookupOp(opConst)
	assert.True(t, d.HasAttr("value"))
	assert.False(t, d.HasAttr("other"))
	assert.True(t, ir.LookupOp(opTest).HasAttr("anything"))
	assert.Len(t, ir.TraitNames, 10)
}
