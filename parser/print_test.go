package parser

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tensorforge/tensorforge/ir"
)

// printTests are inputs and how they print (custom form). Every input is
// also run through the round-trip checks of roundtrip_test.go.
var printTests = []struct {
	name, src, want string
}{
	{
		name: "spec example",
		src: `// optional wrapper: module { ... } ; several func.func per file
func.func @rms_silu_mul(%x: tensor<4096x8192xbf16>, %w: tensor<8192xbf16>,
                        %z: tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16> {
  %n = graph.rmsnorm %x, %w {eps = 1.0e-05 : f32} : (tensor<4096x8192xbf16>, tensor<8192xbf16>) -> tensor<4096x8192xbf16>
  %s = graph.silu %n : tensor<4096x8192xbf16>
  %y = graph.mul %s, %z : tensor<4096x8192xbf16>
  return %y : tensor<4096x8192xbf16>
}
`,
		want: `module {
  func.func @rms_silu_mul(%x: tensor<4096x8192xbf16>, %w: tensor<8192xbf16>, %z: tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16> {
    %n = graph.rmsnorm %x, %w {eps = 1.0e-05} : (tensor<4096x8192xbf16>, tensor<8192xbf16>) -> tensor<4096x8192xbf16>
    %s = graph.silu %n : tensor<4096x8192xbf16>
    %y = graph.mul %s, %z : tensor<4096x8192xbf16>
    return %y : tensor<4096x8192xbf16>
  }
}
`,
	},
	{
		name: "explicit module is returned as is",
		src:  "module {\n  func.func @f() {\n    return\n  }\n}\n",
		want: "module {\n  func.func @f() {\n    return\n  }\n}\n",
	},
	{
		name: "named module with attributes",
		src:  `module @m attributes {target = "cpu"} { func.func @f() { return } }`,
		want: "module @m attributes {target = \"cpu\"} {\n  func.func @f() {\n    return\n  }\n}\n",
	},
	{
		name: "module followed by a function is wrapped",
		src:  "module {}\nfunc.func @f() { return }",
		want: "module {\n  module {\n  }\n  func.func @f() {\n    return\n  }\n}\n",
	},
	{
		name: "empty file",
		src:  "// nothing here\n",
		want: "module {\n}\n",
	},
	{
		name: "several functions, multiple results, func.return",
		src: `func.func @a(%x: f32) -> (f32, f32) {
  func.return %x, %x : f32, f32
}
func.func @b(%x: f32, %y: i32) -> (f32, i32) { return %x, %y : f32, i32 }`,
		want: `module {
  func.func @a(%x: f32) -> (f32, f32) {
    return %x, %x : f32
  }
  func.func @b(%x: f32, %y: i32) -> (f32, i32) {
    return %x, %y : f32, i32
  }
}
`,
	},
	{
		name: "types",
		src: `func.func @types(%a: tensor<4x?x8xf32>, %b: tensor<f32>, %c: memref<?x8192xbf16, dram>,
    %d: memref<8192xf32, sram>, %e: memref<4xi8, reg>, %f: vector<8xf32>, %g: tensor<0x4xf16>,
    %h: tensor<2xf8E4M3FN>, %i: tensor<2xf8E5M2>, %j: tensor<3xi1>, %k: tensor<3xui8>, %l: ui16,
    %m: ui32, %n: i16, %o: index, %p: f64, %q: memref<4xf32>) {
  return
}`,
		want: `module {
  func.func @types(%a: tensor<4x?x8xf32>, %b: tensor<f32>, %c: memref<?x8192xbf16, dram>, %d: memref<8192xf32, sram>, %e: memref<4xi8, reg>, %f: vector<8xf32>, %g: tensor<0x4xf16>, %h: tensor<2xf8E4M3FN>, %i: tensor<2xf8E5M2>, %j: tensor<3xi1>, %k: tensor<3xui8>, %l: ui16, %m: ui32, %n: i16, %o: index, %p: f64, %q: memref<4xf32, dram>) {
    return
  }
}
`,
	},
	{
		name: "type spelled with spaces",
		src:  "func.func @f(%a: tensor< 4 x ? x f32 >) { return }",
		want: "module {\n  func.func @f(%a: tensor<4x?xf32>) {\n    return\n  }\n}\n",
	},
	{
		name: "attribute values",
		src: `func.func @f() {
  test.attrs {i = 4, n = -12, h = 0x1F, t = 7 : i32, u = 255 : ui8, b = true, c = false,
    fl = 1.5, e = -2.0e-05, d = 0.5 : f64, inf = inf, ninf = -inf, nan = nan, bits = 0x7F800000 : f32,
    half = 0x7C00 : f16, bf = 0x3F80 : bf16, s = "tanh", esc = "a\"b\\c\nd\te", arr = [1, 2], nest = [[1], [2, 3], []],
    dtype = ui8, ty = tensor<4xf32>, fn = (f32, f32) -> f32, fn2 = () -> (), sym = @callee,
    cst = dense<[1, 2]> : tensor<2xi32>, "quoted key" = 1, idx = 3 : index, one = 1 : i1, fi = 2 : f32, e5 = 1e5}
  return
}`,
		want: `module {
  func.func @f() {
    test.attrs {arr = [1, 2], b = true, bf = 1.0 : bf16, bits = inf, c = false, cst = dense<[1, 2]> : tensor<2xi32>, d = 0.5 : f64, dtype = ui8, e = -2.0e-05, e5 = 100000.0, esc = "a\"b\\c\nd\te", fi = 2.0, fl = 1.5, fn = (f32, f32) -> f32, fn2 = () -> (), h = 31, half = inf : f16, i = 4, idx = 3 : index, inf = inf, n = -12, nan = nan, nest = [[1], [2, 3], []], ninf = -inf, one = 1 : i1, "quoted key" = 1, s = "tanh", sym = @callee, t = 7 : i32, ty = tensor<4xf32>, u = 255 : ui8}
    return
  }
}
`,
	},
	{
		name: "float bit patterns of every float type",
		src: `func.func @f() {
  test.bits {a = 0x3FF0000000000000 : f64, b = 0x40490FDB : f32, c = 0x3C00 : f16, d = 0x3F80 : bf16,
    e = 0x38 : f8E4M3FN, f = 0x7F : f8E4M3FN, g = 0x3C : f8E5M2, h = 0x7C : f8E5M2, i = 0x01 : f8E4M3FN}
  return
}`,
		want: `module {
  func.func @f() {
    test.bits {a = 1.0 : f64, b = 3.1415927, c = 1.0 : f16, d = 1.0 : bf16, e = 1.0 : f8E4M3FN, f = nan : f8E4M3FN, g = 1.0 : f8E5M2, h = inf : f8E5M2, i = 0.001953125 : f8E4M3FN}
    return
  }
}
`,
	},
	{
		name: "constants",
		src: `func.func @c() -> (tensor<f32>, tensor<2x2xf32>, tensor<3xi32>, tensor<2xi1>, tensor<4xf32>, tensor<2xf32>) {
  %a = graph.constant dense<0.5> : tensor<f32>
  %b = graph.constant dense<[[1.0, 2.0],[3.0, 4.0]]> : tensor<2x2xf32>
  %c = graph.constant dense<[1, -2, 0x10]> : tensor<3xi32>
  %d = graph.constant dense<[true, false]> : tensor<2xi1>
  %e = graph.constant dense<-1.0> : tensor<4xf32>
  %f = graph.constant dense<[inf, 0x7FC00000]> : tensor<2xf32>
  return %a, %b, %c, %d, %e, %f : tensor<f32>, tensor<2x2xf32>, tensor<3xi32>, tensor<2xi1>, tensor<4xf32>, tensor<2xf32>
}`,
		want: `module {
  func.func @c() -> (tensor<f32>, tensor<2x2xf32>, tensor<3xi32>, tensor<2xi1>, tensor<4xf32>, tensor<2xf32>) {
    %a = graph.constant dense<0.5> : tensor<f32>
    %b = graph.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
    %c = graph.constant dense<[1, -2, 16]> : tensor<3xi32>
    %d = graph.constant dense<[true, false]> : tensor<2xi1>
    %e = graph.constant dense<-1.0> : tensor<4xf32>
    %f = graph.constant dense<[inf, nan]> : tensor<2xf32>
    return %a, %b, %c, %d, %e, %f : tensor<f32>, tensor<2x2xf32>, tensor<3xi32>, tensor<2xi1>, tensor<4xf32>, tensor<2xf32>
  }
}
`,
	},
	{
		name: "dense attribute in a dictionary and empty dense lists",
		src: `func.func @f() {
  %a = test.cst {value = dense<[[1.0], [2.0]]> : tensor<2x1xf64>} : tensor<2x1xf64>
  %b = test.cst {value = dense<[]> : tensor<0x3xf32>} : tensor<0x3xf32>
  %c = test.cst {value = dense<[[], []]> : tensor<2x0xf32>} : tensor<2x0xf32>
  %d = test.cst {value = dense<[1.5, 2.5]> : vector<2xf32>} : vector<2xf32>
  return
}`,
		want: `module {
  func.func @f() {
    %a = test.cst dense<[[1.0], [2.0]]> : tensor<2x1xf64>
    %b = test.cst dense<[]> : tensor<0x3xf32>
    %c = test.cst dense<[[], []]> : tensor<2x0xf32>
    %d = test.cst dense<[1.5, 2.5]> : vector<2xf32>
    return
  }
}
`,
	},
	{
		name: "function types after a custom op",
		src: `func.func @f(%x: tensor<4x8xf32>, %c: tensor<4x8xi1>) -> tensor<4xf32> {
  %r = graph.reduce_sum %x {axes = [1], keepdim = false} : (tensor<4x8xf32>) -> tensor<4xf32>
  %m = graph.cmp %x, %x {predicate = "lt"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
  %s = graph.select %c, %x, %x : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %r : tensor<4xf32>
}`,
		want: `module {
  func.func @f(%x: tensor<4x8xf32>, %c: tensor<4x8xi1>) -> tensor<4xf32> {
    %r = graph.reduce_sum %x {axes = [1], keepdim = false} : (tensor<4x8xf32>) -> tensor<4xf32>
    %m = graph.cmp %x, %x {predicate = "lt"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
    %s = graph.select %c, %x, %x : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    return %r : tensor<4xf32>
  }
}
`,
	},
	{
		name: "multi-result ops",
		src: `func.func @f(%x: f32) -> f32 {
  %r:2 = test.split %x : (f32) -> (f32, i32)
  %a, %b:2 = "test.three"(%r#0) : (f32) -> (f32, f32, f32)
  %s = graph.add %r#0, %b#1 : f32
  %t = graph.add %r, %a : f32
  %u:2 = test.same %x : f32
  return %s : f32
}`,
		want: `module {
  func.func @f(%x: f32) -> f32 {
    %r:2 = test.split %x : (f32) -> (f32, i32)
    %a:3 = test.three %r#0 : f32
    %s = graph.add %r#0, %a#2 : f32
    %t = graph.add %r#0, %a#0 : f32
    %u:2 = test.same %x : f32
    return %s : f32
  }
}
`,
	},
	{
		name: "numbered names and names with punctuation",
		src: `func.func @f(%0: f32) -> f32 {
  %1 = graph.neg %0 : f32
  %a.b$c-d_e = graph.neg %1 : f32
  return %a.b$c-d_e : f32
}`,
		want: `module {
  func.func @f(%0: f32) -> f32 {
    %1 = graph.neg %0 : f32
    %a.b$c-d_e = graph.neg %1 : f32
    return %a.b$c-d_e : f32
  }
}
`,
	},
	{
		name: "regions in the custom form",
		src: `func.func @f(%x: tensor<8xf32>, %w: tensor<8xf32>) -> tensor<8xf32> {
  %y = graph.fused %x, %w {kind = "elementwise"} {
  ^bb0(%a: tensor<8xf32>, %b: tensor<8xf32>):
    %m = graph.mul %a, %b : tensor<8xf32>
    %e = graph.exp %m : tensor<8xf32>
    graph.yield %e : tensor<8xf32>
  } : tensor<8xf32>
  return %y : tensor<8xf32>
}`,
		want: `module {
  func.func @f(%x: tensor<8xf32>, %w: tensor<8xf32>) -> tensor<8xf32> {
    %y = graph.fused %x, %w {kind = "elementwise"} {
    ^bb0(%a: tensor<8xf32>, %b: tensor<8xf32>):
      %m = graph.mul %a, %b : tensor<8xf32>
      %e = graph.exp %m : tensor<8xf32>
      graph.yield %e : tensor<8xf32>
    } : tensor<8xf32>
    return %y : tensor<8xf32>
  }
}
`,
	},
	{
		name: "nested regions see enclosing values; several regions and blocks",
		src: `func.func @f(%x: f32) {
  test.loop {
    %a = graph.neg %x : f32
    test.inner {
      %b = graph.add %a, %x : f32
    }
  } {
  ^entry:
    test.br
  ^next(%y: f32):
    test.use %y, %x : f32
  }
  return
}`,
		want: `module {
  func.func @f(%x: f32) {
    test.loop {
      %a = graph.neg %x : f32
      test.inner {
        %b = graph.add %a, %x : f32
      }
    } {
    ^entry:
      test.br
    ^next(%y: f32):
      test.use %y, %x : f32
    }
    return
  }
}
`,
	},
	{
		name: "attribute dictionaries after regions merge; empty dictionary; empty region",
		src: `func.func @f() {
  test.a {} {
    test.b
  } {x = 1} {y = 2}
  test.c {
  }
  return
}`,
		want: `module {
  func.func @f() {
    test.a {x = 1, y = 2} {
      test.b
    }
    test.c {
    }
    return
  }
}
`,
	},
	{
		name: "ops without operands before ops with results",
		src: `func.func @f() {
  test.barrier
  %a = test.make : f32
  test.barrier
  %b:2 = test.make2 : () -> (f32, i8)
  test.barrier
  %c, %d = test.make2 : () -> (f32, i8)
  return
}`,
		want: `module {
  func.func @f() {
    test.barrier
    %a = test.make : f32
    test.barrier
    %b:2 = test.make2 : () -> (f32, i8)
    test.barrier
    %c:2 = test.make2 : () -> (f32, i8)
    return
  }
}
`,
	},
	{
		name: "generic form",
		src: `"func.func"() ({
^bb0(%x: tensor<4xf32>):
  %y = "graph.add"(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %z = "test.region"(%y) {a = 1} ({
    "test.yield"() : () -> ()
  }, {
  ^bb0(%q: f32):
    "test.yield"(%q) : (f32) -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  %w = "test.region"() ({
  }) {b = 2} : () -> tensor<4xf32>
  "func.return"(%z) : (tensor<4xf32>) -> ()
}) {function_type = (tensor<4xf32>) -> tensor<4xf32>, sym_name = "g"} : () -> ()`,
		want: `module {
  func.func @g(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = graph.add %x, %x : tensor<4xf32>
    %z = test.region %y {a = 1} {
      test.yield
    } {
    ^bb0(%q: f32):
      test.yield %q : f32
    } : tensor<4xf32>
    %w = test.region {b = 2} {
    } : tensor<4xf32>
    return %z : tensor<4xf32>
  }
}
`,
	},
	{
		name: "generic module and return aliases",
		src: `"builtin.module"() ({
  "func.func"() ({
    "return"() : () -> ()
  }) {function_type = () -> (), sym_name = "f"} : () -> ()
}) {sym_name = "m"} : () -> ()`,
		want: "module @m {\n  func.func @f() {\n    return\n  }\n}\n",
	},
	{
		name: "generic op results need not be named",
		src:  `func.func @f() { "test.make"() : () -> f32  return }`,
		want: "module {\n  func.func @f() {\n    %0 = test.make : f32\n    return\n  }\n}\n",
	},
	{
		name: "function attributes and visibility",
		src:  `func.func private @f(%x: f32 loc("a.tir":1:2)) -> () attributes {inline = true} { return } loc("a.tir":1:1)`,
		want: "module {\n  func.func @f(%x: f32) attributes {inline = true, sym_visibility = \"private\"} {\n    return\n  }\n}\n",
	},
	{
		name: "isolated regions start a fresh scope",
		src: `func.func @a(%x: f32) { return }
func.func @b(%x: i32) { return }`,
		want: "module {\n  func.func @a(%x: f32) {\n    return\n  }\n  func.func @b(%x: i32) {\n    return\n  }\n}\n",
	},
	{
		name: "comments and odd spacing",
		src: `func.func@f(%x:f32)->f32{// c
%y=graph.neg%x:f32 // trailing
return%y:f32}`,
		want: "module {\n  func.func @f(%x: f32) -> f32 {\n    %y = graph.neg %x : f32\n    return %y : f32\n  }\n}\n",
	},
	{
		name: "function type results",
		src:  `func.func @f() -> () { return }`,
		want: "module {\n  func.func @f() {\n    return\n  }\n}\n",
	},
}

func TestPrint(t *testing.T) {
	for _, tc := range printTests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Parse("test.tir", tc.src)
			require.NoError(t, err)
			require.Equal(t, tc.want, ir.Print(m.Operation, ir.PrintOptions{}))
		})
	}
}
