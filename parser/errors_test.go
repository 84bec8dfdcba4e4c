package parser

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tensorforge/tensorforge/ir"
)

func init() {
	// An IsolatedFromAbove op that is not a function, to test SSA scoping.
	ir.RegisterOp(&ir.OpDef{Name: "test.isolated", Traits: ir.IsolatedFromAbove, AnyAttrs: true})
}

// fn wraps a body in a function with arguments %x: f32 and %t: tensor<4xf32>;
// the body starts on line 2, column 1.
func fn(body string) string {
	return "func.func @f(%x: f32, %t: tensor<4xf32>) {\n" + body + "\n  return\n}\n"
}

var errorTests = []struct {
	name      string
	src       string
	line, col int
	msg       string
}{
	// structure and punctuation
	{"missing colon after operands", fn("  %y = graph.add %x, %x"), 2, 24, "expected ':' after operand list"},
	{"missing result type", fn("  %y = graph.constant dense<1.0>"), 2, 33, "expected ':' and the result type of 'graph.constant'"},
	{"missing type after colon", fn("  %c = test.c :"), 2, 16, "expected type, found 'return'"},
	{"unclosed array", fn("  test.a {k = [1, 2}"), 2, 20, "expected ',' or ']' in array, found '}'"},
	{"unclosed function body", "func.func @f() {\n  return\n", 2, 9, "expected '}' to end the region"},
	{"unclosed module", "module {\n  func.func @f() {\n    return\n  }\n", 4, 4, "expected '}' to end the region"},
	{"missing function name", "func.func f() {\n  return\n}", 1, 11, "expected the function name such as '@f', found 'f'"},
	{"bad argument list", "func.func @f( {\n  return\n}", 1, 15, "expected an argument such as '%x: tensor<4xf32>', found '{'"},
	{"missing operation after =", "func.func @f() {\n  %a =\n}", 2, 7, "expected an operation name after '=', found '}'"},
	{"statement starting with a number", fn("  42"), 2, 3, "expected an operation, found '42'"},
	{"unexpected character", fn("  test.a &"), 2, 10, "unexpected character '&'"},
	{"unexpected control character", fn("  test.a \x01"), 2, 10, `unexpected character '\x01'`},
	{"percent without a name", "func.func @f() {\n  %", 2, 3, "expected a name after '%'"},
	{"unterminated string", fn(`  test.a {x = "abc}`), 2, 15, "unterminated string literal"},
	{"unknown escape", fn(`  test.a {x = "a\qb"}`), 2, 17, `unknown escape sequence '\q' in string (use \", \\, \n or \t)`},
	{"block label in a function body", "func.func @f(%x: f32) {\n^bb0:\n  return\n}", 2, 1, "invalid block name in region with named arguments"},
	{"block label in a module body", "module {\n^bb0:\n}", 2, 1, "a module body is a single block without a label"},
	{"duplicate block label", fn("  test.r {\n  ^bb0:\n  ^bb0:\n  }"), 4, 3, "redefinition of block '^bb0'"},
	{"module with results", "%x = module {\n}", 1, 1, "'builtin.module' does not produce results"},
	{"function with results", "%x = func.func @f() {\n  return\n}", 1, 1, "'func.func' does not produce results"},
	{"reserved function attribute", "func.func @f() attributes {sym_name = \"g\"} {\n  return\n}", 1, 27, "'sym_name' cannot be set in 'attributes': it is written as the function's name and signature"},
	{"bad location", fn(`  %a = graph.neg %x : f32 loc("a":x)`), 2, 35, "expected a line number in location"},
	{"location without column", fn(`  %a = graph.neg %x : f32 loc("a":3)`), 2, 36, "expected ':' and a column number in location"},

	// SSA values
	{"undeclared value", fn("  %y = graph.neg %q : f32"), 2, 18, "use of undeclared SSA value '%q'"},
	{"undeclared result number", fn("  %y = graph.neg %q#1 : f32"), 2, 18, "use of undeclared SSA value '%q#1'"},
	{"redefinition", fn("  %x = graph.neg %x : f32"), 2, 3, "redefinition of SSA value '%x'"},
	{"redefinition of a result", fn("  %y = graph.neg %x : f32\n  %y = graph.neg %x : f32"), 3, 3, "redefinition of SSA value '%y'"},
	{"redefinition in a nested region", fn("  test.r {\n    %x = graph.neg %x : f32\n  }"), 3, 5, "redefinition of SSA value '%x'"},
	{"duplicate argument", "func.func @f(%x: f32, %x: f32) {\n  return\n}", 1, 23, "redefinition of SSA value '%x'"},
	{"type mismatch at a use", fn("  %y = graph.neg %t : tensor<8xf32>"), 2, 18, "use of value '%t' expects different type than prior uses: 'tensor<8xf32>' vs 'tensor<4xf32>'"},
	{"type mismatch between forward uses", fn("  %a = graph.neg %z : f32\n  %b = graph.neg %z : i32\n  %z = test.make : f32"), 3, 18, "use of value '%z' expects different type than prior uses: 'i32' vs 'f32'"},
	{"definition type differs from forward use", fn("  %a = graph.neg %z : f32\n  %z = test.make : i32"), 3, 3, "definition of SSA value '%z' has type 'i32' but it was used with type 'f32'"},
	{"result number out of range", fn("  %r:2 = test.two %x : f32\n  %a = graph.add %r#2, %x : f32"), 3, 18, "'%r#2' refers to result #2, but '%r' has 2 values"},
	{"result number of an argument", fn("  %a = graph.add %x#1, %x : f32"), 2, 18, "'%x#1' refers to result #1, but '%x' has 1 value"},
	{"forward result number out of range", fn("  %a = graph.neg %r#3 : f32\n  %r:2 = test.two %x : f32"), 2, 18, "'%r#3' refers to result #3, but '%r' has 2 values"},
	{"result name with #", fn("  %a#1 = graph.neg %x : f32"), 2, 3, "a result name cannot have a '#N' suffix; write '%a:N' for N results"},
	{"zero results", fn("  %a:0 = graph.neg %x : f32"), 2, 6, "the number of results in '%a:0' must be between 1 and 65536"},
	{"too many results", fn("  %a:100000 = graph.neg %x : f32"), 2, 6, "the number of results in '%a:100000' must be between 1 and 65536"},
	{"isolated region does not see outer values", fn("  test.isolated {\n    %y = graph.neg %x : f32\n  }"), 3, 20, "use of undeclared SSA value '%x'"},
	{"nested region values end with the region", fn("  test.r {\n    %y = graph.neg %x : f32\n  }\n  %z = graph.neg %y : f32"), 5, 18, "use of undeclared SSA value '%y'"},
	{"module does not see enclosing function values", fn("  module {\n    func.func @g() {\n      %y = graph.neg %x : f32\n      return\n    }\n  }"), 4, 22, "use of undeclared SSA value '%x'"},

	// op forms
	{"result count vs names", fn("  %r:2 = graph.add %x, %x : (f32, f32) -> f32"), 2, 3, "custom op 'graph.add' has 1 result but 2 names were given"},
	{"result count without names", fn("  graph.add %x, %x : (f32, f32) -> f32"), 2, 3, "custom op 'graph.add' has 1 result but 0 names were given"},
	{"operand count vs function type", fn("  %a = graph.add %x, %x : (f32) -> f32"), 2, 27, "custom op 'graph.add' has 2 operands but its function type lists 1 input type"},
	{"type list that fits nothing", fn("  %a = graph.add %x, %x : f32, f32, f32"), 2, 27, "custom op 'graph.add' has 2 operands and 1 result, but 3 types were given after ':' (give one type for all of them, one per operand when there are no results, or a function type)"},
	{"type for an op without operands or results", fn("  test.c : f32"), 2, 12, "custom op 'test.c' has no operands and no results to give a type"},
	{"function type as a value type", "func.func @f(%x: (f32) -> f32) {\n  return\n}", 1, 18, "a function type cannot be the type of a value"},
	{"function-typed function result", "func.func @f() -> (f32) -> f32 {\n  return\n}", 1, 25, "a function type cannot be the type of a value"},
	{"generic operand count", fn(`  %a = "graph.add"(%x, %x) : (f32) -> f32`), 2, 30, "operation has 2 operands but its function type lists 1 input type"},
	{"generic result count", fn(`  %a, %b = "graph.add"(%x, %x) : (f32, f32) -> f32`), 2, 3, "operation defines 1 result but was provided 2 to bind"},
	{"generic op name", fn(`  %a = "graph add"(%x, %x) : (f32, f32) -> f32`), 2, 8, `invalid operation name "graph add": expected a name such as "graph.add"`},
	{"generic op without function type", fn(`  %a = "graph.add"(%x, %x) : f32`), 2, 30, "expected a function type such as (T1, T2) -> T3 after ':', found 'f32'"},
	{"generic op without operand list", fn(`  %a = "graph.add" : f32`), 2, 20, `expected '(' to begin the operand list of "graph.add"`},
	{"generic module with a block argument", "\"builtin.module\"() ({\n^bb0(%a: f32):\n}) : () -> ()", 1, 1, "'builtin.module' op expects one region with one block without arguments"},
	{"generic func with a bad name", "\"func.func\"() ({\n}) {sym_name = \"a b\", function_type = () -> ()} : () -> ()", 1, 1, `'func.func' op has an invalid symbol name "a b"`},
	{"generic func with operands", fn(`  "func.func"(%x) ({
  }) {sym_name = "g", function_type = () -> ()} : (f32) -> ()`), 2, 3, "'func.func' op takes no operands and no results and has one region"},
	{"generic func with a block argument of another type", "\"func.func\"() ({\n^bb0(%a: f32):\n  \"func.return\"() : () -> ()\n}) {sym_name = \"g\", function_type = (i32) -> ()} : () -> ()", 1, 1, "type of entry block argument #0 (f32) does not match the function signature (i32)"},
	{"dense literal on a multi-result op", fn("  %c:2 = graph.constant dense<1.0> : tensor<4xf32>"), 2, 25, "a dense literal after the op name takes the type of the op's single result, but 'graph.constant' has 2 results"},
	{"dense value given twice", fn("  %c = graph.constant dense<1.0> {value = 2.0} : tensor<4xf32>"), 2, 23, "'value' is given twice: as the dense literal and in the attribute dictionary"},

	// types
	{"unknown element type", "func.func @f(%x: f33) {\n  return\n}", 1, 18, "unknown element type 'f33'"},
	{"unknown element type in a tensor", "func.func @f(%x: tensor<4xf33>) {\n  return\n}", 1, 27, "unknown element type 'f33'"},
	{"not a type", "func.func @f(%x: foo) {\n  return\n}", 1, 18, "expected type, found 'foo'"},
	{"negative extent", "func.func @f(%x: tensor<-4xf32>) {\n  return\n}", 1, 25, "dimension extents must be non-negative; use '?' for an extent known only at run time"},
	{"huge extent", "func.func @f(%x: tensor<99999999999999999999xf32>) {\n  return\n}", 1, 25, "dimension extent 99999999999999999999 does not fit in 64 bits"},
	{"unranked tensor", "func.func @f(%x: tensor<*xf32>) {\n  return\n}", 1, 25, "unranked tensors are not supported; give the rank, with '?' for unknown extents"},
	{"dynamic vector", "func.func @f(%x: vector<?xf32>) {\n  return\n}", 1, 30, "vector types need static extents"},
	{"unknown memory space", "func.func @f(%x: memref<4xf32, hbm>) {\n  return\n}", 1, 32, "unknown memory space 'hbm' (expected dram, sram or reg)"},
	{"missing x", "func.func @f(%x: tensor<4x4>) {\n  return\n}", 1, 28, "expected 'x' after a dimension extent"},
	{"missing >", "func.func @f(%x: tensor<4xf32) {\n  return\n}", 1, 30, "expected '>' to end the tensor type"},
	{"missing element type", "func.func @f(%x: tensor<4x>) {\n  return\n}", 1, 27, "expected an element type in tensor type, found '>'"},

	// attributes
	{"number with a shaped type", fn("  test.a {x = 1 : tensor<f32>}"), 2, 19, "a number attribute takes an element type such as i32 or f64, not 'tensor<f32>'"},
	{"float with an integer type", fn("  test.a {x = 1.5 : i32}"), 2, 15, "expected an integer literal for i32, found '1.5'"},
	{"integer out of range", fn("  test.a {x = 256 : ui8}"), 2, 15, "integer 256 is out of range for ui8 [0, 255]"},
	{"negative unsigned", fn("  test.a {x = -1 : ui32}"), 2, 15, "integer -1 is out of range for ui32 [0, 4294967295]"},
	{"integer beyond 64 bits", fn("  test.a {x = 99999999999999999999}"), 2, 15, "integer literal 99999999999999999999 does not fit in 64 bits"},
	{"float out of range", fn("  test.a {x = 1.0e39}"), 2, 15, "float literal 1.0e39 is out of range for f32 (largest finite value 3.4028235e+38)"},
	{"f16 out of range", fn("  test.a {x = 70000.0 : f16}"), 2, 15, "float literal 70000.0 is out of range for f16 (largest finite value 65504.0)"},
	{"negated bit pattern", fn("  test.a {x = -0x7F800000 : f32}"), 2, 15, "hexadecimal float literal should not have a leading minus"},
	{"bit pattern too wide", fn("  test.a {x = 0x1FFFF : f16}"), 2, 15, "hexadecimal bit pattern 0x1FFFF does not fit in the 16 bits of f16"},
	{"duplicate key", fn("  test.a {x = 1, x = 2}"), 2, 18, "duplicate key 'x' in attribute dictionary"},
	{"unknown word", fn("  test.a {x = foo}"), 2, 15, "expected attribute value, found 'foo'"},
	{"unknown element type as a value", fn("  test.a {dtype = ui7}"), 2, 19, "unknown element type 'ui7'"},
	{"missing =", fn("  test.a {x = 1, y}"), 2, 19, "expected '=' after attribute name 'y'"},
	{"missing value", fn("  test.a {x = }"), 2, 15, "expected attribute value, found '}'"},
	{"dense attribute without type", fn("  test.a {x = dense<1.0>}"), 2, 25, "expected ':' and the tensor type of the dense literal"},
	{"bool in a float dense", fn("  %c = graph.constant dense<true> : tensor<2xf32>"), 2, 29, "expected a float literal for f32, found 'true'"},
	{"negative bool", fn("  %c = graph.constant dense<-true> : tensor<2xi1>"), 2, 30, "expected a number, found 'true'"},

	// dense literals
	{"dense shape mismatch", fn("  %c = graph.constant dense<[1.0, 2.0]> : tensor<3xf32>"), 2, 23, "dense literal has shape 2, but its type 'tensor<3xf32>' has shape 3"},
	{"dense rank mismatch", fn("  %c = graph.constant dense<[1.0]> : tensor<f32>"), 2, 23, "dense literal has shape 1, but its type 'tensor<f32>' has shape [] (a scalar)"},
	{"dense ragged", fn("  %c = graph.constant dense<[[1.0], [2.0, 3.0]]> : tensor<2x2xf32>"), 2, 37, "dense literal has lists of different lengths: 1 and 2 elements at depth 2"},
	{"dense mixed nesting", fn("  %c = graph.constant dense<[1, [2]]> : tensor<2xf32>"), 2, 34, "dense literal mixes numbers and lists at the same depth"},
	{"dense mixed nesting, list first", fn("  %c = graph.constant dense<[[2], 1]> : tensor<2xf32>"), 2, 35, "dense literal mixes numbers and lists at the same depth"},
	{"dense float in an integer tensor", fn("  %c = graph.constant dense<1.5> : tensor<2xi32>"), 2, 29, "expected an integer literal for i32, found '1.5'"},
	{"dense integer out of range", fn("  %c = graph.constant dense<300> : tensor<2xi8>"), 2, 29, "integer 300 is out of range for i8 [-128, 127]"},
	{"dense integer beyond 2^53", fn("  %c = graph.constant dense<9007199254740993> : tensor<i64>"), 2, 29, "integer 9007199254740993 in a dense literal is beyond 2^53 and cannot be stored exactly"},
	{"dense dynamic shape", fn("  %c = graph.constant dense<1.0> : tensor<?xf32>"), 2, 36, "a dense literal needs a static shape, not 'tensor<?xf32>'"},
	{"dense scalar type", fn("  %c = graph.constant dense<1.0> : f32"), 2, 36, "a dense literal needs a tensor or vector type, not 'f32'"},
	{"dense unclosed list", fn("  %c = graph.constant dense<[1.0, 2.0> : tensor<2xf32>"), 2, 38, "expected ',' or ']' in dense literal, found '>'"},
	{"dense unclosed", fn("  %c = graph.constant dense<1.0 : tensor<4xf32>"), 2, 33, "expected '>' to end the dense literal, found ':'"},
}

func TestErrors(t *testing.T) {
	for _, tc := range errorTests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("e.tir", tc.src)
			require.Error(t, err)
			d, ok := err.(*ir.Diagnostic)
			require.True(t, ok, "error is a %T, not an *ir.Diagnostic", err)
			assert.Equal(t, ir.SevError, d.Severity)
			assert.Equal(t, tc.msg, d.Message)
			assert.Equal(t, ir.Location{File: "e.tir", Line: tc.line, Col: tc.col}, d.Loc, "message: %s", d.Message)
		})
	}
}

func TestErrorNotes(t *testing.T) {
	_, err := Parse("e.tir", fn("  %y = graph.neg %x : f32\n  %y = graph.neg %x : f32"))
	d := err.(*ir.Diagnostic)
	require.Len(t, d.Notes, 1)
	assert.Equal(t, "previously defined here", d.Notes[0].Message)
	assert.Equal(t, ir.Location{File: "e.tir", Line: 2, Col: 3}, d.Notes[0].Loc)

	_, err = Parse("e.tir", fn("  %a = graph.neg %z : f32\n  %z = test.make : i32"))
	d = err.(*ir.Diagnostic)
	require.Len(t, d.Notes, 1)
	assert.Equal(t, "used here", d.Notes[0].Message)
	assert.Equal(t, ir.Location{File: "e.tir", Line: 2, Col: 18}, d.Notes[0].Loc)
}

func TestErrorRendering(t *testing.T) {
	src := "func.func @f(%x: tensor<4xf32>) {\n\t%y = graph.add %x, %q : tensor<4xf32>\n  return\n}\n"
	_, err := Parse("r.tir", src)
	var sm ir.SourceManager
	sm.AddFile("r.tir", src)
	assert.Equal(t, "r.tir:2:21: error: use of undeclared SSA value '%q'\n"+
		"\t%y = graph.add %x, %q : tensor<4xf32>\n"+
		"\t                   ^\n", sm.Render(err.(*ir.Diagnostic)))
}

func TestParseAtOffsetsLines(t *testing.T) {
	_, err := ParseAt("big.tir", fn("  %y = graph.neg %q : f32"), 41)
	d := err.(*ir.Diagnostic)
	assert.Equal(t, ir.Location{File: "big.tir", Line: 42, Col: 18}, d.Loc)

	m, err := ParseAt("big.tir", "\n"+fn("  %y = graph.neg %x : f32"), 10)
	require.NoError(t, err)
	assert.Equal(t, ir.Location{File: "big.tir", Line: 10, Col: 1}, m.Loc)
	f := m.Funcs()[0]
	assert.Equal(t, ir.Location{File: "big.tir", Line: 11, Col: 1}, f.Loc)
	assert.Equal(t, ir.Location{File: "big.tir", Line: 12, Col: 3}, f.Body().First().Loc)
}
