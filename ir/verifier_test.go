package ir_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tensorforge/tensorforge/ir"
)

// diagStrings renders diagnostics with their notes, one line each.
func diagStrings(err error) []string {
	var out []string
	for _, d := range ir.AsDiagnostics(err) {
		out = append(out, d.Error())
		for _, n := range d.Notes {
			out = append(out, "  "+n.Error())
		}
	}
	return out
}

func TestVerify(t *testing.T) {
	tests := []struct {
		name string
		src  string
		// edit breaks the parsed IR where text cannot say it
		edit func(t *testing.T, m ir.Module)
		want []string
	}{
		{name: "valid", src: `
			func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
			  %x = graph.neg %a : tensor<4xf32>
			  %r = graph.fused %x, %a {kind = "row"} {
			  ^bb0(%p: tensor<4xf32>, %q: tensor<4xf32>):
			    %s = graph.add %p, %q : tensor<4xf32>
			    graph.yield %s : tensor<4xf32>
			  } : tensor<4xf32>
			  test.container {
			    %y = graph.exp %r : tensor<4xf32>
			  }
			  return %r : tensor<4xf32>
			}
			`},
		{name: "unregistered op", src: `
			func.func @f() {
			  "foo.bar"() : () -> ()
			  return
			}
			`, want: []string{"t.tir:2:3: error: unregistered operation 'foo.bar'"}},
		{name: "null operand", src: `
			func.func @f(%a: tensor<4xf32>) {
			  test.op %a : tensor<4xf32>
			  return
			}
			`, edit: func(t *testing.T, m ir.Module) {
			findOp(t, m.Operation, opTest).SetOperand(0, nil)
		}, want: []string{"t.tir:2:3: error: 'test.op' op operand #0 is null"}},
		{name: "duplicate function names", src: `
			func.func @f() {
			  return
			}
			func.func @g() {
			  return
			}
			func.func @f() {
			  return
			}
			`, want: []string{
			"t.tir:7:1: error: redefinition of symbol named 'f'",
			"  t.tir:1:1: note: see existing symbol definition here",
		}},
		{name: "use before definition", src: `
			func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
			  %x = graph.neg %y : tensor<4xf32>
			  %y = graph.neg %a : tensor<4xf32>
			  return %x : tensor<4xf32>
			}
			`, want: []string{
			"t.tir:2:3: error: 'graph.neg' op operand #0 does not dominate this use",
			"  t.tir:3:3: note: operand defined here",
		}},
		{name: "use of its own result", src: `
			func.func @f() {
			  %z = test.op %z : f32
			  return
			}
			`, want: []string{
			"t.tir:2:3: error: 'test.op' op operand #0 does not dominate this use",
			"  t.tir:2:3: note: operand defined here",
		}},
		{name: "use of the enclosing op's result", src: `
			func.func @f() {
			  %r = test.container {
			    test.op %r : f32
			  } : f32
			  return
			}
			`, want: []string{"t.tir:3:5: error: 'test.op' op operand #0 is defined by its own enclosing op"}},
		{name: "use after the region that defines it", src: `
			func.func @f() {
			  test.container {
			    %v = test.op : f32
			  }
			  %w = test.op : f32
			  return
			}
			`, edit: func(t *testing.T, m ir.Module) {
			f, _ := m.Lookup("f")
			w := f.Body().First().Next()
			inner := findOp(t, f.Body().First(), opTest)
			w.Erase()
			user := ir.NewOperation(opTest, ir.Location{File: "t.tir", Line: 9, Col: 9}, []*ir.Value{inner.Result(0)}, nil, nil, 0)
			f.Body().InsertBefore(user, f.Return())
		}, want: []string{"t.tir:9:9: error: 'test.op' op operand #0 does not dominate this use"}},
		{name: "value of a detached op", src: `
			func.func @f() {
			  return
			}
			`, edit: func(t *testing.T, m ir.Module) {
			f, _ := m.Lookup("f")
			detached := ir.NewOperation(opTest, ir.Location{}, nil, []ir.Type{ir.F32Type}, nil, 0)
			f.Body().InsertBefore(ir.NewOperation(opTest, ir.Location{File: "t.tir", Line: 5, Col: 1}, detached.Results(), nil, nil, 0), f.Return())
		}, want: []string{"t.tir:5:1: error: 'test.op' op operand #0 uses a value that is not in any block"}},
		{name: "use across an IsolatedFromAbove boundary", src: `
			func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
			  %r = graph.fused %a {kind = "row"} {
			  ^bb0(%p: tensor<4xf32>):
			    %s = graph.neg %p : tensor<4xf32>
			    graph.yield %s : tensor<4xf32>
			  } : tensor<4xf32>
			  return %r : tensor<4xf32>
			}
			`, edit: func(t *testing.T, m ir.Module) {
			f, _ := m.Lookup("f")
			findOp(t, m.Operation, "graph.neg").SetOperand(0, f.Args()[0])
		}, want: []string{"t.tir:4:5: error: 'graph.neg' op using value defined outside the region of 'graph.fused', which is isolated from above"}},
		{name: "use across an isolated boundary from a nested region", src: `
			func.func @f(%a: f32) {
			  %v = test.op : f32
			  test.isolated {
			    test.container {
			      %u = test.op : f32
			    }
			    test.term
			  }
			  return
			}
			`, edit: func(t *testing.T, m ir.Module) {
			inner := findOp(t, findOp(t, m.Operation, opContainer), opTest)
			inner.SetOperands([]*ir.Value{findOp(t, m.Operation, opTest).Result(0)})
		}, want: []string{"t.tir:5:7: error: 'test.op' op using value defined outside the region of 'test.isolated', which is isolated from above"}},
		{name: "function argument used in another function", src: `
			func.func @f(%a: f32) {
			  return
			}
			func.func @g() {
			  %u = test.op : f32
			  return
			}
			`, edit: func(t *testing.T, m ir.Module) {
			f, _ := m.Lookup("f")
			findOp(t, m.Operation, opTest).SetOperands(f.Args())
		}, want: []string{"t.tir:5:3: error: 'test.op' op using value defined outside the region of 'func.func', which is isolated from above"}},
		{name: "missing terminator", src: `
			func.func @f() {
			  test.op {
			  ^bb0:
			  }
			  return
			}
			`, want: []string{"t.tir:2:3: error: 'test.op' op expects a non-empty block with a terminator"}},
		{name: "empty function body", src: `
			func.func @f() {
			}
			`, want: []string{"t.tir:1:1: error: 'func.func' op expects a non-empty block with a terminator"}},
		{name: "block not ended by a terminator", src: `
			func.func @f(%a: tensor<4xf32>) {
			  %x = graph.neg %a : tensor<4xf32>
			}
			`, want: []string{"t.tir:2:3: error: 'graph.neg' op is not a terminator, but ends a block of 'func.func'"}},
		{name: "terminator not last", src: `
			func.func @f(%a: tensor<4xf32>) {
			  return
			  %x = graph.neg %a : tensor<4xf32>
			}
			`, want: []string{
			"t.tir:3:3: error: 'graph.neg' op is not a terminator, but ends a block of 'func.func'",
			"t.tir:2:3: error: 'func.return' op must be the last operation in the parent block",
		}},
		{name: "terminator in the middle of a container", src: `
			test.container {
			  test.term
			  test.op
			}
			`, want: []string{"t.tir:2:3: error: 'test.term' op must be the last operation in the parent block"}},
		{name: "an empty region needs no terminator", src: `
			test.op {
			}
			`},
		{name: "element count overflows int64", src: `
			func.func @f() {
			  %x = test.op : tensor<4611686018427387904x4xf32>
			  return
			}
			`, want: []string{"t.tir:2:3: error: 'test.op' op result #0: type tensor<4611686018427387904x4xf32> has more elements than fit in int64"}},
		{name: "byte size overflows int64", src: `
			func.func @f() {
			  %x = test.op : tensor<2305843009213693952xf32>
			  %y = test.op : memref<1152921504606846976x4xbf16, dram>
			  %z = test.op : tensor<2305843009213693952x?xf32>
			  %w = test.op : tensor<1152921504606846976x2xbf16>
			  return
			}
			`, want: []string{
			"t.tir:2:3: error: 'test.op' op result #0: type tensor<2305843009213693952xf32> is larger than 2^63 bytes",
			"t.tir:3:3: error: 'test.op' op result #0: type memref<1152921504606846976x4xbf16, dram> is larger than 2^63 bytes",
		}},
		{name: "oversized block argument", src: `
			func.func @f(%a: f32, %b: tensor<4611686018427387904x4xi8>) {
			  return
			}
			`, want: []string{"t.tir:1:1: error: 'func.func' op block argument #1: type tensor<4611686018427387904x4xi8> has more elements than fit in int64"}},
		{name: "op's own verifier", src: `
			test.verify
			`, want: []string{"t.tir:1:1: error: 'test.verify' op test.verify rejects this"}},
		{name: "return count", src: `
			func.func @f(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
			  return %a : tensor<4xf32>
			}
			`, want: []string{"t.tir:2:3: error: 'func.return' op has 1 operands, but enclosing function (@f) returns 2"}},
		{name: "return type", src: `
			func.func @f(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf16>) {
			  return %a, %a : tensor<4xf32>
			}
			`, want: []string{"t.tir:2:3: error: 'func.return' op type of return operand 1 (tensor<4xf32>) doesn't match function result type (tensor<4xf16>) in function @f"}},
		{name: "return outside a function", src: `
			test.isolated {
			  return
			}
			`, want: []string{"t.tir:2:3: error: 'func.return' op expects parent op 'func.func'"}},
		{name: "entry argument type", src: `
			func.func @f(%a: f32) {
			  return
			}
			`, edit: func(t *testing.T, m ir.Module) {
			f, _ := m.Lookup("f")
			f.Args()[0].SetType(ir.F16Type)
		}, want: []string{"t.tir:1:1: error: 'func.func' op type of entry block argument #0 (f16) does not match the function signature (f32)"}},
		{name: "entry argument count", src: `
			func.func @f(%a: f32) {
			  return
			}
			`, edit: func(t *testing.T, m ir.Module) {
			f, _ := m.Lookup("f")
			f.Body().AddArg(ir.F32Type)
		}, want: []string{"t.tir:1:1: error: 'func.func' op entry block has 2 arguments but the function type has 1 inputs"}},
		{name: "function without sym_name", src: `
			func.func @f() {
			  return
			}
			`, edit: func(t *testing.T, m ir.Module) {
			f, _ := m.Lookup("f")
			f.Attrs.Delete("sym_name")
		}, want: []string{"t.tir:1:1: error: 'func.func' op requires a 'sym_name' string attribute"}},
		{name: "function without function_type", src: `
			func.func @f() {
			  return
			}
			`, edit: func(t *testing.T, m ir.Module) {
			f, _ := m.Lookup("f")
			f.Attrs.Delete("function_type")
		}, want: []string{
			"t.tir:1:1: error: 'func.func' op requires a 'function_type' attribute",
		}},
		{name: "function_type not a function type", src: `
			func.func @f() {
			  return
			}
			`, edit: func(t *testing.T, m ir.Module) {
			f, _ := m.Lookup("f")
			f.SetAttr("function_type", ir.TypeAttr{Type: ir.F32Type})
		}, want: []string{"t.tir:1:1: error: 'func.func' op 'function_type' must be a function type, got f32"}},
		{name: "function with two blocks", src: `
			func.func @f() {
			  return
			}
			`, edit: func(t *testing.T, m ir.Module) {
			f, _ := m.Lookup("f")
			b := ir.NewBlock()
			b.Append(ir.NewOperation(ir.ReturnOpName, ir.Location{}, nil, nil, nil, 0))
			f.Region(0).AppendBlock(b)
		}, want: []string{"t.tir:1:1: error: 'func.func' op expects a single-block body"}},
		{name: "function without a body", src: `
			func.func @f() {
			  return
			}
			`, edit: func(t *testing.T, m ir.Module) {
			f, _ := m.Lookup("f")
			f.Region(0).Blocks = nil
		}, want: []string{"t.tir:1:1: error: 'func.func' op expects a body"}},
		{name: "every op reports its first problem", src: `
			func.func @f(%a: tensor<4xf32>) -> tensor<4xf16> {
			  "foo.bar"() : () -> ()
			  test.verify
			  return %a : tensor<4xf32>
			}
			`, want: []string{
			"t.tir:2:3: error: unregistered operation 'foo.bar'",
			"t.tir:3:3: error: 'test.verify' op test.verify rejects this",
			"t.tir:4:3: error: 'func.return' op type of return operand 0 (tensor<4xf32>) doesn't match function result type (tensor<4xf16>) in function @f",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := parse(t, dedent(tc.src))
			if tc.edit != nil {
				tc.edit(t, m)
			}
			err := ir.Verify(m.Operation)
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tc.want, diagStrings(err))
		})
	}
}

// TestVerifyDetachedOps verifies ops built by hand, outside any module.
func TestVerifyDetachedOps(t *testing.T) {
	mod := ir.NewOperation(ir.ModuleOpName, ir.Location{File: "m", Line: 1, Col: 1}, nil, nil, nil, 0)
	assert.Equal(t, []string{"m:1:1: error: 'builtin.module' op expects one region with one block"}, diagStrings(ir.Verify(mod)))

	// an op whose definition was registered after it was built
	const late = "test.late"
	op := ir.NewOperation(late, ir.Location{}, nil, nil, nil, 0)
	if ir.LookupOp(late) == nil {
		assert.Nil(t, op.Def())
		assert.Equal(t, []string{"error: unregistered operation 'test.late'"}, diagStrings(ir.Verify(op)))
		ir.RegisterOp(&ir.OpDef{Name: late})
	}
	require.NoError(t, ir.Verify(op))
	assert.NotNil(t, op.Def())

	// a huge tensor of no element type does not crash the verifier
	blob := ir.NewOperation(opTest, ir.Location{}, nil, []ir.Type{ir.Tensor(ir.ElemType{}, 1<<62)}, nil, 0)
	require.NoError(t, ir.Verify(blob))
}

func TestErrorList(t *testing.T) {
	a := ir.Errorf(ir.Location{File: "a.tir", Line: 1, Col: 2}, "first %d", 1)
	b := &ir.Diagnostic{Severity: ir.SevWarning, Message: "second"}
	list := ir.ErrorList{a, b}
	assert.Equal(t, "a.tir:1:2: error: first 1\nwarning: second", list.Error())

	assert.Nil(t, ir.AsDiagnostics(nil))
	assert.Equal(t, []*ir.Diagnostic{a}, ir.AsDiagnostics(a))
	assert.Equal(t, []*ir.Diagnostic{a, b}, ir.AsDiagnostics(list))
	plain := ir.AsDiagnostics(errors.New("disk full"))
	require.Len(t, plain, 1)
	assert.Equal(t, "error: disk full", plain[0].Error())
	assert.False(t, plain[0].Loc.Known())

	var asList ir.ErrorList
	err := ir.Verify(parse(t, "test.verify\n").Operation)
	require.ErrorAs(t, err, &asList)
	assert.Len(t, asList, 1)
}
