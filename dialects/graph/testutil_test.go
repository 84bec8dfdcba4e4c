package graph

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/ir"
)

// ty reads a type as the tests spell it: `f32`, `tensor<4x?xf32>`,
// `memref<4xf32, dram>`. (The dialect does not depend on the parser.)
func ty(s string) ir.Type {
	if k, ok := ir.ParseElemKind(s); ok {
		return ir.ElemType{Kind: k}
	}
	kind, body, ok := strings.Cut(strings.TrimSuffix(s, ">"), "<")
	if !ok {
		panic("bad test type " + s)
	}
	space := ""
	body, space, _ = strings.Cut(body, ", ")
	parts := strings.Split(body, "x")
	elem, ok := ir.ParseElemKind(parts[len(parts)-1])
	if !ok {
		panic("bad element type in " + s)
	}
	shape := make([]int64, len(parts)-1)
	for i, p := range parts[:len(parts)-1] {
		if p == "?" {
			shape[i] = ir.Dynamic
			continue
		}
		d, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			panic(fmt.Sprintf("bad extent %q in %s", p, s))
		}
		shape[i] = d
	}
	switch kind {
	case "tensor":
		return ir.TensorType{Shape: shape, Elem: ir.ElemType{Kind: elem}}
	case "memref":
		ms, _ := ir.ParseMemSpace(space)
		return ir.MemRefType{Shape: shape, Elem: ir.ElemType{Kind: elem}, Space: ms}
	}
	panic("bad test type " + s)
}

func tys(ss ...string) []ir.Type {
	out := make([]ir.Type, len(ss))
	for i, s := range ss {
		out[i] = ty(s)
	}
	return out
}

func f32(v float64) ir.FloatAttr { return ir.FloatAttr{Value: v, Type: ir.F32Type} }
func i64(v int64) ir.IntAttr     { return ir.IntAttr{Value: v, Type: ir.I64Type} }

// testFunc is a module holding `func.func @f(args)` whose body ends in
// `return`; ops are added before the return.
type testFunc struct {
	module ir.Module
	fn     ir.Func
	ret    *ir.Operation
}

func newTestFunc(args ...ir.Type) *testFunc {
	m := ir.NewModule(ir.Location{})
	f := ir.NewFunc(ir.Location{}, "f", ir.FunctionType{Inputs: args})
	m.Body().Append(f.Operation)
	ret := ir.NewOperation(ir.ReturnOpName, ir.Location{}, nil, nil, nil, 0)
	f.Body().Append(ret)
	return &testFunc{module: m, fn: f, ret: ret}
}

// builder inserts before the return.
func (tf *testFunc) builder() *ir.Builder { return ir.NewBuilderBefore(tf.ret) }

// add inserts op before the return.
func (tf *testFunc) add(op *ir.Operation) *ir.Operation {
	tf.fn.Body().InsertBefore(op, tf.ret)
	return op
}

// verify runs the whole verifier, as tfc does, and returns its messages.
func (tf *testFunc) verify() []string {
	var msgs []string
	for _, d := range ir.AsDiagnostics(ir.Verify(tf.module.Operation)) {
		msgs = append(msgs, d.Message)
	}
	return msgs
}

// returnValues makes the function return vs (and fixes its type).
func (tf *testFunc) returnValues(vs ...*ir.Value) {
	tf.ret.SetOperands(vs)
	ft := tf.fn.Type()
	ft.Results = nil
	for _, v := range vs {
		ft.Results = append(ft.Results, v.Type())
	}
	tf.fn.SetType(ft)
}

func requireVerifies(t *testing.T, tf *testFunc) {
	t.Helper()
	require.Empty(t, tf.verify())
}
