package ir_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/parser"
)

// requireRoundTrip parses text printed in form opts and prints it again.
func requireRoundTrip(t *testing.T, text string, opts ir.PrintOptions) {
	t.Helper()
	m, err := parser.Parse("printed.tir", text)
	require.NoError(t, err, "printed text does not parse:\n%s", text)
	require.Equal(t, text, ir.Print(m.Operation, opts), "printed text does not round-trip")
}

// TestPrintRoundTrip prints parsed programs: the custom form gives the
// input back byte for byte, and every form parses back to itself.
func TestPrintRoundTrip(t *testing.T) {
	tests := []struct{ name, src string }{
		{"function", `
			module {
			  func.func @rms(%x: tensor<4x8xbf16>, %w: tensor<8xbf16>) -> tensor<4x8xbf16> {
			    %n = graph.rmsnorm %x, %w {eps = 1.0e-05} : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
			    %s = graph.silu %n : tensor<4x8xbf16>
			    return %s : tensor<4x8xbf16>
			  }
			}
			`},
		{"multi-result group", `
			module {
			  func.func @f(%x: tensor<4xf32>, %w: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
			    %r:2 = graph.fused %x, %w {kind = "row"} {
			    ^bb0(%p: tensor<4xf32>, %q: tensor<4xf32>):
			      %s = graph.mul %p, %q : tensor<4xf32>
			      graph.yield %s, %p : tensor<4xf32>
			    } : tensor<4xf32>
			    return %r#1, %r#0 : tensor<4xf32>
			  }
			}
			`},
		{"constants, mixed types, no results", `
			module {
			  func.func @g() {
			    %c = graph.constant dense<[1, 2]> : tensor<2xi32>
			    %d = graph.constant dense<0.5> : tensor<2xf32>
			    %e = graph.cast %c : (tensor<2xi32>) -> tensor<2xf32>
			    test.op %d, %c : (tensor<2xf32>, tensor<2xi32>) -> ()
			    test.op %d, %e : tensor<2xf32>
			    %0:2 = test.op : () -> (f32, i1)
			    return
			  }
			}
			`},
		{"module with name and attributes", `
			module @m attributes {answer = 42} {
			  func.func @f() attributes {inline = true} {
			    return
			  }
			}
			`},
		{"unregistered and region ops", `
			module {
			  other.op
			  test.op {
			  }
			  test.container {
			    %0 = test.op : f32
			  }
			  test.op {
			  ^a:
			    test.term
			  ^b(%v: f32):
			    test.term %v : f32
			  }
			}
			`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := dedent(tc.src)
			m := parse(t, src)
			assert.Equal(t, src, printIR(m))
			for _, opts := range []ir.PrintOptions{{}, {Generic: true}, {DebugInfo: true}, {Generic: true, DebugInfo: true}} {
				requireRoundTrip(t, ir.Print(m.Operation, opts), opts)
			}
		})
	}
}

func TestPrintGeneric(t *testing.T) {
	m := parse(t, dedent(`
		func.func @f(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
		  %r:2 = graph.fused %x {kind = "row"} {
		  ^bb0(%p: tensor<4xf32>):
		    %s = graph.neg %p : tensor<4xf32>
		    graph.yield %s, %p : tensor<4xf32>
		  } : tensor<4xf32>
		  test.op {
		  }
		  return %r#0, %r#1 : tensor<4xf32>
		}
		`))
	want := dedent(`
		"builtin.module"() ({
		  "func.func"() ({
		  ^bb0(%x: tensor<4xf32>):
		    %r:2 = "graph.fused"(%x) ({
		    ^bb0(%p: tensor<4xf32>):
		      %s = "graph.neg"(%p) : (tensor<4xf32>) -> tensor<4xf32>
		      "graph.yield"(%s, %p) : (tensor<4xf32>, tensor<4xf32>) -> ()
		    }) {kind = "row"} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
		    "test.op"() ({
		    }) : () -> ()
		    "func.return"(%r#0, %r#1) : (tensor<4xf32>, tensor<4xf32>) -> ()
		  }) {function_type = (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>), sym_name = "f"} : () -> ()
		}) : () -> ()
		`)
	got := ir.Print(m.Operation, ir.PrintOptions{Generic: true})
	assert.Equal(t, want, got)
	requireRoundTrip(t, got, ir.PrintOptions{Generic: true})
}

func TestPrintDebugInfo(t *testing.T) {
	m := parse(t, dedent(`
		func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
		  %y = graph.neg %x : tensor<4xf32>
		  return %y : tensor<4xf32>
		}
		`))
	// a location made by a pass that knows none
	findOp(t, m.Operation, "func.return").Loc = ir.Location{}
	custom := dedent(`
		module {
		  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
		    %y = graph.neg %x : tensor<4xf32> loc("t.tir":2:3)
		    return %y : tensor<4xf32> loc(unknown)
		  } loc("t.tir":1:1)
		} loc("t.tir":1:1)
		`)
	got := ir.Print(m.Operation, ir.PrintOptions{DebugInfo: true})
	assert.Equal(t, custom, got)
	requireRoundTrip(t, got, ir.PrintOptions{DebugInfo: true})
	m2, err := parser.Parse("other.tir", got)
	require.NoError(t, err)
	assert.Equal(t, ir.Location{File: "t.tir", Line: 2, Col: 3}, findOp(t, m2.Operation, "graph.neg").Loc,
		"a printed location is kept when parsed")
	assert.False(t, findOp(t, m2.Operation, "func.return").Loc.Known())

	generic := ir.Print(m.Operation, ir.PrintOptions{DebugInfo: true, Generic: true})
	assert.Contains(t, generic, `"graph.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32> loc("t.tir":2:3)`)
	assert.Contains(t, generic, `"func.return"(%y) : (tensor<4xf32>) -> () loc(unknown)`)
	assert.Contains(t, generic, `sym_name = "f"} : () -> () loc("t.tir":1:1)`)

	assert.NotContains(t, ir.Print(m.Operation, ir.PrintOptions{}), "loc(")
}

// newValuesFunc builds a function whose ops define values with the given
// name hints, each op using the previous value, and returns it printed.
func newValuesFunc(hints ...string) string {
	m := ir.NewModule(ir.Location{})
	f := ir.NewFunc(ir.Location{}, "f", ir.FunctionType{Inputs: []ir.Type{ir.F32Type}})
	m.Body().Append(f.Operation)
	b := ir.NewBuilderAtEnd(f.Body())
	prev := f.Args()[0]
	prev.Name = "arg"
	for _, h := range hints {
		op := b.Create(opTest, ir.Location{}, []*ir.Value{prev}, []ir.Type{ir.F32Type}, nil)
		op.Result(0).Name = h
		prev = op.Result(0)
	}
	b.Create(ir.ReturnOpName, ir.Location{}, nil, nil, nil)
	return ir.Print(m.Operation, ir.PrintOptions{})
}

func TestPrintValueNames(t *testing.T) {
	tests := []struct {
		name  string
		hints []string
		want  []string // names of the values in order
	}{
		{"hints kept", []string{"x", "y"}, []string{"x", "y"}},
		{"collision gets a suffix", []string{"x", "x", "x"}, []string{"x", "x_1", "x_2"}},
		{"suffix itself taken", []string{"x", "x_1", "x"}, []string{"x", "x_1", "x_2"}},
		{"hint equal to a made suffix", []string{"x", "x", "x_1"}, []string{"x", "x_1", "x_1_1"}},
		{"argument name taken", []string{"arg"}, []string{"arg_1"}},
		{"no hint numbers", []string{"", "", ""}, []string{"0", "1", "2"}},
		{"numbers skip numeric hints", []string{"1", "", ""}, []string{"1", "0", "2"}},
		{"numeric hint taken falls back to a number", []string{"", "0"}, []string{"0", "1"}},
		{"hint that is not a name", []string{"a b", "x#1", "é"}, []string{"0", "1", "2"}},
		{"names with dots and dashes", []string{"a.b", "c-d", "$e"}, []string{"a.b", "c-d", "$e"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			text := newValuesFunc(tc.hints...)
			prev := "arg"
			for _, n := range tc.want {
				assert.Contains(t, text, "%"+n+" = test.op %"+prev+" : f32\n")
				prev = n
			}
			requireRoundTrip(t, text, ir.PrintOptions{})
		})
	}
}

// TestPrintNamesPerFunction numbers the values of each function from 0:
// functions are isolated from above.
func TestPrintNamesPerFunction(t *testing.T) {
	src := dedent(`
		module {
		  func.func @a(%x: f32) {
		    %0 = test.op %x : f32
		    %1 = test.op %0 : f32
		    return
		  }
		  func.func @b(%x: f32) {
		    %0 = test.op %x : f32
		    return
		  }
		}
		`)
	m := parse(t, src)
	m.Walk(func(o *ir.Operation) bool {
		for _, r := range o.Results() {
			r.Name = ""
		}
		return true
	})
	assert.Equal(t, src, printIR(m))
}

func TestPrintMultiResultNames(t *testing.T) {
	m := ir.NewModule(ir.Location{})
	b := ir.NewBuilderAtEnd(m.Body())
	grp := b.Create(opTest, ir.Location{}, nil, []ir.Type{ir.F32Type, ir.I1Type, ir.F32Type}, nil)
	grp.Result(0).Name = "r"
	grp.Result(1).Name = "ignored" // a group takes the name of its first result
	b.Create(opTest, ir.Location{}, []*ir.Value{grp.Result(2), grp.Result(1), grp.Result(0)}, nil, nil)
	anon := b.Create(opTest, ir.Location{}, nil, []ir.Type{ir.F32Type, ir.F32Type}, nil)
	b.Create(opTest, ir.Location{}, []*ir.Value{anon.Result(1)}, nil, nil)
	want := dedent(`
		module {
		  %r:3 = test.op : () -> (f32, i1, f32)
		  test.op %r#2, %r#1, %r#0 : (f32, i1, f32) -> ()
		  %0:2 = test.op : f32
		  test.op %0#1 : f32
		}
		`)
	got := printIR(m)
	assert.Equal(t, want, got)
	requireRoundTrip(t, got, ir.PrintOptions{})

	p := ir.NewPrinter(ir.PrintOptions{})
	p.PrintOp(m.Operation)
	assert.Equal(t, want, p.String())
}

// TestPrintTypeRule checks the type after ':' of the custom form: one type
// when every operand and result shares it, a list of operand types for a
// terminator, a function type otherwise.
func TestPrintTypeRule(t *testing.T) {
	i1x4 := ir.Tensor(ir.I1Type, 4)
	tests := []struct {
		name     string
		op       string
		operands []ir.Type
		results  []ir.Type
		want     string
	}{
		{"no operands, no results", opTest, nil, nil, "test.op"},
		{"one shared type", opTest, []ir.Type{f32x4, f32x4}, []ir.Type{f32x4}, "%0 = test.op %arg0, %arg1 : tensor<4xf32>"},
		{"result only", opTest, nil, []ir.Type{f32x4}, "%0 = test.op : tensor<4xf32>"},
		{"operand only", opTest, []ir.Type{f32x4}, nil, "test.op %arg0 : tensor<4xf32>"},
		{"result type differs", opTest, []ir.Type{f32x4}, []ir.Type{i1x4}, "%0 = test.op %arg0 : (tensor<4xf32>) -> tensor<4xi1>"},
		{"operand types differ", opTest, []ir.Type{f32x4, i1x4}, []ir.Type{f32x4}, "%0 = test.op %arg0, %arg1 : (tensor<4xf32>, tensor<4xi1>) -> tensor<4xf32>"},
		{"results differ", opTest, nil, []ir.Type{f32x4, i1x4}, "%0:2 = test.op : () -> (tensor<4xf32>, tensor<4xi1>)"},
		{"no results, mixed, not a terminator", opTest, []ir.Type{f32x4, i1x4}, nil, "test.op %arg0, %arg1 : (tensor<4xf32>, tensor<4xi1>) -> ()"},
		{"terminator, mixed", opTerm, []ir.Type{f32x4, i1x4}, nil, "test.term %arg0, %arg1 : tensor<4xf32>, tensor<4xi1>"},
		{"terminator, shared", opTerm, []ir.Type{f32x4, f32x4}, nil, "test.term %arg0, %arg1 : tensor<4xf32>"},
		{"return drops its dialect", ir.ReturnOpName, []ir.Type{f32x4, i1x4}, nil, "return %arg0, %arg1 : tensor<4xf32>, tensor<4xi1>"},
		{"return nothing", ir.ReturnOpName, nil, nil, "return"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			blk := ir.NewBlock(tc.operands...)
			op := ir.NewOperation(tc.op, ir.Location{}, blk.Args, tc.results, nil, 0)
			blk.Append(op)
			for i, a := range blk.Args {
				a.Name = "arg" + string(rune('0'+i))
			}
			p := ir.NewPrinter(ir.PrintOptions{})
			for _, a := range blk.Args {
				p.ValueRef(a) // name the arguments first, as a block header does
			}
			p.PrintOp(op)
			assert.Equal(t, tc.want+"\n", p.String())
		})
	}
}

func TestPrintDenseLiteral(t *testing.T) {
	m := ir.NewModule(ir.Location{})
	b := ir.NewBuilderAtEnd(m.Body())
	d := ir.DenseAttr{Type: ir.Tensor(ir.F32Type, 2), Values: []float64{1, 2}}
	b.Create(opConst, ir.Location{}, nil, []ir.Type{d.Type}, ir.Attrs("value", d))
	// a dense value of another type than the result stays in the dictionary
	b.Create(opConst, ir.Location{}, nil, []ir.Type{ir.Tensor(ir.F32Type, 3)}, ir.Attrs("value", d))
	want := dedent(`
		module {
		  %0 = test.const dense<[1.0, 2.0]> : tensor<2xf32>
		  %1 = test.const {value = dense<[1.0, 2.0]> : tensor<2xf32>} : tensor<3xf32>
		}
		`)
	got := printIR(m)
	assert.Equal(t, want, got)
	requireRoundTrip(t, got, ir.PrintOptions{})
}

func TestPrintBlockLabels(t *testing.T) {
	op := ir.NewOperation(opTest, ir.Location{}, nil, nil, nil, 1)
	r := op.Region(0)
	labels := []string{"bb1", "", "", "bb1", "loop"}
	for _, l := range labels {
		blk := ir.NewBlock()
		blk.Label = l
		blk.Append(ir.NewOperation(opTerm, ir.Location{}, nil, nil, nil, 0))
		r.AppendBlock(blk)
	}
	want := dedent(`
		test.op {
		^bb1:
		  test.term
		^bb2:
		  test.term
		^bb3:
		  test.term
		^bb4:
		  test.term
		^loop:
		  test.term
		}
		`)
	got := op.String()
	assert.Equal(t, want, got)

	// a single block without arguments needs no label
	single := ir.NewOperation(opTest, ir.Location{}, nil, nil, nil, 1)
	blk := ir.NewBlock()
	blk.Label = "entry"
	blk.Append(ir.NewOperation(opTerm, ir.Location{}, nil, nil, nil, 0))
	single.Region(0).AppendBlock(blk)
	assert.Equal(t, "test.op {\n  test.term\n}\n", single.String())
	blk.AddArg(ir.F32Type)
	assert.Equal(t, "test.op {\n^entry(%0: f32):\n  test.term\n}\n", single.String())
}

// TestPrintInvalidIR prints IR the verifier rejects: it must print, not
// panic, so that broken IR can be shown in diagnostics and dumps.
func TestPrintInvalidIR(t *testing.T) {
	t.Run("null operand", func(t *testing.T) {
		blk := ir.NewBlock(ir.F32Type)
		op := ir.NewOperation(opTest, ir.Location{}, []*ir.Value{blk.Args[0], nil}, []ir.Type{ir.F32Type}, nil, 0)
		blk.Append(op)
		assert.Equal(t, "%0 = test.op %1, %<null> : (f32, <<NULL TYPE>>) -> f32\n", op.String())
		term := ir.NewOperation(opTerm, ir.Location{}, []*ir.Value{nil}, nil, nil, 0)
		assert.Equal(t, "test.term %<null> : <<NULL TYPE>>\n", term.String())
		assert.Equal(t, `"test.term"(%<null>) : (<<NULL TYPE>>) -> ()`+"\n", ir.Print(term, ir.PrintOptions{Generic: true}))
	})
	t.Run("use before definition", func(t *testing.T) {
		blk := ir.NewBlock()
		def := ir.NewOperation(opTest, ir.Location{}, nil, []ir.Type{ir.F32Type}, nil, 0)
		use := ir.NewOperation(opTest, ir.Location{}, []*ir.Value{def.Result(0)}, nil, nil, 0)
		def.Result(0).Name = "v"
		blk.Append(use)
		blk.Append(def)
		op := ir.NewOperation(opContainer, ir.Location{}, nil, nil, nil, 1)
		op.Region(0).AppendBlock(blk)
		assert.Equal(t, "test.container {\n  test.op %v : f32\n  %v = test.op : f32\n}\n", op.String())
	})
	t.Run("module without a body", func(t *testing.T) {
		op := ir.NewOperation(ir.ModuleOpName, ir.Location{}, nil, nil, nil, 0)
		assert.Equal(t, "\"builtin.module\"() : () -> ()\n", op.String())
		op.AddRegion()
		assert.Equal(t, "\"builtin.module\"() ({\n}) : () -> ()\n", op.String())
	})
	t.Run("malformed function", func(t *testing.T) {
		f := ir.NewFunc(ir.Location{}, "f", ir.FunctionType{Inputs: []ir.Type{ir.F32Type}})
		f.Body().Args = nil // no longer matches its type
		f.Body().Append(ir.NewOperation(ir.ReturnOpName, ir.Location{}, nil, nil, nil, 0))
		assert.Equal(t, dedent(`
			"func.func"() ({
			  return
			}) {function_type = (f32) -> (), sym_name = "f"} : () -> ()
			`), f.String())
		f.SetAttr("function_type", ir.StringAttr("x"))
		assert.Contains(t, f.String(), `"func.func"() ({`)
	})
	t.Run("nil result type", func(t *testing.T) {
		op := ir.NewOperation(opTest, ir.Location{}, nil, []ir.Type{nil}, nil, 0)
		assert.Equal(t, "%0 = test.op : () -> <<NULL TYPE>>\n", op.String())
	})
}

// TestPrintDeterministic prints the same IR many times, from fresh parses
// too: the bytes never change.
func TestPrintDeterministic(t *testing.T) {
	src := dedent(`
		module {
		  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
		    %0 = graph.neg %x : tensor<4xf32>
		    %1:2 = test.op %0 {b = 1, a = "s", c = [1, 2]} : (tensor<4xf32>) -> (f32, f32)
		    test.op {
		    ^x:
		      test.term
		    ^y:
		      test.term
		    ^z:
		      test.term
		    }
		    return %0 : tensor<4xf32>
		  }
		}
		`)
	m := parse(t, src)
	first := ir.Print(m.Operation, ir.PrintOptions{Generic: true, DebugInfo: true})
	for range 20 {
		require.Equal(t, first, ir.Print(m.Operation, ir.PrintOptions{Generic: true, DebugInfo: true}))
		require.Equal(t, first, ir.Print(parse(t, src).Operation, ir.PrintOptions{Generic: true, DebugInfo: true}))
	}
}
