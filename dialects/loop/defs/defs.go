// Package defs declares the ops of the loop dialect as data, one
// ods.OpDecl per op. odsgen turns Dialect into dialects/loop/gen_ops.go
// and docs/dialects/loop.md; the rules no declaration can state live in
// the hand-written files of package loop, under the class names below.
package defs

import (
	"github.com/tensorforge/tensorforge/dialects/ods"
	"github.com/tensorforge/tensorforge/ir"
)

// Dialect is the loop dialect.
var Dialect = ods.DialectDecl{
	Name:    "loop",
	Summary: "Kernels over buffers: launch grids, loops, loads, stores and scratchpad",
	Description: `The loop dialect is what ` + "`lower-to-loops`" + ` produces and what every emitter reads. It says
where the parallelism is and where every byte lives: a ` + "`loop.kernel`" + ` is a function over
buffers (` + "`memref<..., dram>`" + `); its outermost ` + "`loop.parallel`" + ` is the launch grid (one iteration,
one program instance); a ` + "`loop.for`" + ` with ` + "`dist = \"threads\"`" + ` spreads over the threads of an
instance and combines its carried values across them; ` + "`loop.load`" + ` and ` + "`loop.store`" + ` are the only
memory accesses, of a scalar or a ` + "`vector<W x T>`" + ` contiguous along the last dimension; scratchpad
(` + "`memref<..., sram>`" + `) is allocated explicitly with ` + "`loop.alloc`" + ` at an offset ` + "`sram-alloc`" + ` assigns.

Arithmetic on floats is in f32 or f64: f16, bf16 and f8 values are only loaded, stored, cast,
broadcast and selected. See docs/loop-dialect.md for the design and a lowered program.`,
	Classes: classes,
	Ops:     ops,
}

var classes = []ods.ClassDecl{
	{Name: "Kernel", Doc: `The parent is a module. The body is one block whose arguments are ` + "`num_inputs`" + `
input buffers and ` + "`num_outputs`" + ` output buffers (` + "`memref`" + ` in ` + "`dram`" + `), then one ` + "`index`" + ` per dynamic extent
of those buffers, in argument order and then dimension order. It ends in ` + "`loop.return`" + `.`},
	{Name: "Launch", Doc: `` + "`kernel`" + ` names a ` + "`loop.kernel`" + ` of the enclosing module; the operands match the
kernel's block arguments in number and type.`},
	{Name: "Dim", Infers: true, Doc: "`axis` is in [0, rank) of the buffer; the result is an `index`."},
	{Name: "AllocDRAM", Doc: `One ` + "`index`" + ` operand per dynamic extent of the result type. ` + "`offset`" + ` and ` + "`size`" + `,
when given, are not negative, and a static buffer's ` + "`size`" + ` holds it.`},
	{Name: "Ticket", Infers: true, Doc: `The counter is a ` + "`zeroed`" + ` ` + "`memref<1xi32, dram>`" + `; the op is in the body of the
grid's ` + "`loop.parallel`" + ` itself (not in a loop), and the result is an ` + "`index`" + `.`},
	{Name: "GroupSync", Doc: `The counters are a ` + "`zeroed`" + ` ` + "`memref<G... x 2 x i32, dram>`" + ` (group g at elements 2g and 2g + 1); the op is in
the body of the grid's ` + "`loop.parallel`" + ` itself, after a ` + "`loop.ticket`" + ` there.`},
	{Name: "Parallel", Doc: `The body is one block with one ` + "`index`" + ` argument (the induction variable) and
ends in a ` + "`loop.yield`" + ` without operands.`},
	{Name: "For", Doc: `The body is one block whose arguments are the ` + "`index`" + ` induction variable and one
value per init, of the init's type; it ends in ` + "`loop.yield`" + ` of values of those types, which are the
result types. ` + "`combine`" + `, an array of ` + "`\"add\"`" + `, ` + "`\"max\"`" + ` or ` + "`\"min\"`" + `, has one entry per result and
is given exactly when ` + "`dist = \"threads\"`" + ` and the loop has results.`},
	{Name: "Yield", Doc: "The parent is `loop.for` or `loop.parallel`, which checks the yielded types."},
	{Name: "Return", Doc: "The parent is `loop.kernel`."},
	{Name: "Alloc", Doc: `The result is a static ` + "`memref`" + ` in ` + "`sram`" + `, inside a ` + "`loop.kernel`" + `; ` + "`offset`" + `, when
given, is not negative.`},
	{Name: "Load", Doc: `One ` + "`index`" + ` per dimension of the buffer. The result is the buffer's element type, or a
1-D vector of it (the last index is the first of its elements).`},
	{Name: "Store", Doc: "As `Load`, for the stored value."},
	{Name: "Const", Doc: `The result is a scalar, a vector or an ` + "`index`" + `; ` + "`value`" + ` is integral for integer and
` + "`index`" + ` results.`},
	{Name: "Broadcast", Doc: "The result is a vector of the operand's element type."},
	{Name: "Reduce", Infers: true, Doc: "The operand is a vector; the result is its element type."},
	{Name: "IndexArith", Infers: true, Doc: "Both operands and the result are `index`."},
	{Name: "ClampIndex", Infers: true, Doc: "The operand is an integer scalar (not `i1`), the bound an `index`; the result is an `index`."},
	{Name: "Unary", Infers: true, Doc: `The result has the operand's type. Float operands are f32 or f64; integer ones
are accepted by ` + "`neg`, `abs`, `relu`, `floor`, `ceil` and `round`" + `.`},
	{Name: "Binary", Infers: true, Doc: `Both operands have the result's type. Float operands are f32 or f64; integer
ones are accepted by all but ` + "`pow`" + `.`},
	{Name: "Fma", Infers: true, Doc: "The three operands have the result's type, f32, f64 or an integer type."},
	{Name: "Compare", Infers: true, Doc: "Both operands have the same type (f32, f64 or integer); the result is `i1` of their shape."},
	{Name: "Select", Infers: true, Doc: "The condition is `i1` of the values' shape; both values have the result's type."},
	{Name: "Transpose", Infers: true, Doc: `W operands, each a ` + "`vector<W x T>`" + ` of one type, W a power of two from 2 to 64;
the W results have that type.`},
	{Name: "Cast", Doc: "The result has the operand's shape (scalar or vector width) and any element type but index."},
}

// Operand and result declarations shared by many ops.
var (
	valueIn  = []ods.OperandDecl{{Name: "input", Constraint: ods.ScalarOrVector}}
	valueOut = []ods.ResultDecl{{Name: "output", Constraint: ods.ScalarOrVector}}
	indexOut = []ods.ResultDecl{{Name: "output", Constraint: ods.IndexValue}}
	bounds   = []ods.OperandDecl{
		{Name: "lower", Constraint: ods.IndexValue, Doc: "the first value of the induction variable"},
		{Name: "upper", Constraint: ods.IndexValue, Doc: "the bound it stays below"},
		{Name: "step", Constraint: ods.IndexValue, Doc: "the increment, positive"},
	}
	offset = ods.AttrDecl{Name: "offset", Kind: ods.IntKind, Optional: true,
		Doc: "byte offset in the memory it lives in, set by `sram-alloc`"}
)

// unary declares an element-wise op of one operand.
func unary(name, summary string) ods.OpDecl {
	return ods.OpDecl{
		Name: name, Summary: summary,
		Example:  "%y = loop." + name + " %x : vector<8xf32>",
		Class:    "Unary",
		Traits:   ir.Pure | ir.Elementwise,
		Operands: valueIn,
		Results:  valueOut,
	}
}

// binary declares an element-wise op of two operands of one type.
func binary(name, summary string, traits ir.Trait) ods.OpDecl {
	return ods.OpDecl{
		Name: name, Summary: summary,
		Example:  "%z = loop." + name + " %x, %y : vector<8xf32>",
		Class:    "Binary",
		Traits:   ir.Pure | ir.Elementwise | traits,
		Operands: []ods.OperandDecl{{Name: "lhs", Constraint: ods.ScalarOrVector}, {Name: "rhs", Constraint: ods.ScalarOrVector}},
		Results:  valueOut,
	}
}

// indexArith declares an op of index arithmetic.
func indexArith(name, summary string, traits ir.Trait) ods.OpDecl {
	return ods.OpDecl{
		Name: name, Summary: summary,
		Example:  "%k = loop." + name + " %i, %j : index",
		Class:    "IndexArith",
		Traits:   ir.Pure | traits,
		Operands: []ods.OperandDecl{{Name: "lhs", Constraint: ods.IndexValue}, {Name: "rhs", Constraint: ods.IndexValue}},
		Results:  indexOut,
	}
}

var ops = []ods.OpDecl{
	// ---------------------------------------------------------------------
	// Kernels and launches
	{
		Name: "kernel", Summary: "a kernel: a function over buffers, run by a launch",
		Description: `A module-level op. Its block arguments are the input buffers, the output buffers and the
run-time extents; its outermost ` + "`loop.parallel`" + ` is the launch grid. Isolated from above: a
kernel sees only its arguments.`,
		Example: `loop.kernel {kind = "elementwise", num_inputs = 1, num_outputs = 1, sym_name = "f_k0"} {
^bb0(%x: memref<?x64xf32, dram>, %y: memref<?x64xf32, dram>, %rows: index):
  ...
  loop.return
}`,
		Class:  "Kernel",
		Traits: ir.IsolatedFromAbove,
		Attrs: []ods.AttrDecl{
			{Name: "sym_name", Kind: ods.StringKind, Doc: "the kernel's name, which `loop.launch` refers to"},
			{Name: "kind", Kind: ods.StringKind, Enum: []string{"elementwise", "row", "matmul", "generic"},
				Doc: "how it was lowered: element-wise, a row reduction, matmuls with an element-wise epilogue (`loop.MatchMatMul` gives its parts), or scalar loops over output elements"},
			{Name: "num_inputs", Kind: ods.IntKind, Doc: "the number of input buffers"},
			{Name: "num_outputs", Kind: ods.IntKind, Doc: "the number of output buffers, which follow the inputs"},
			{Name: "sram_bytes", Kind: ods.IntKind, Optional: true, Doc: "scratchpad bytes of one instance, set by `sram-alloc`"},
			{Name: "schedule", Kind: ods.StringKind, Optional: true, Enum: []string{"one-pass", "two-pass", "cached", "online", "resident"},
				Doc: "of a row kernel: the row kept in sram between phases, read from DRAM again, read again from a CPU core's cache, its max and sum of exp taken in one pass, chunk by chunk, or split across instances that each keep their split in sram and meet at a `loop.group_sync`"},
			{Name: "row_len", Kind: ods.IntKind, Optional: true, Doc: "of a row kernel: the reduced extent"},
			{Name: "vector_width", Kind: ods.IntKind, Optional: true, Doc: "the elements of the widest vector access"},
		},
		Regions:       []ods.RegionDecl{{Name: "body", Doc: "the kernel's code"}},
		CustomBuilder: true,
	},
	{
		Name: "launch", Summary: "runs a kernel over its grid",
		Description: "Runs the kernel named by `kernel` on the buffers and extents given, and waits for it. " +
			"With `rows_of`, the launch is guarded: it runs only when the rows R of that buffer operand (the product " +
			"of all its extents but the last) lie in [`min_rows`, `max_rows`]. A lowering that has two forms of a " +
			"kernel whose better choice depends on a `?` row count (a long row split across programs when there " +
			"are a few rows, one program per row otherwise) launches both, guarded by complementary ranges, so that " +
			"one module serves every row count.",
		Example:  `loop.launch %x, %y, %rows {kernel = "f_k0"} : (memref<?x64xf32, dram>, memref<?x64xf32, dram>, index) -> ()`,
		Class:    "Launch",
		Traits:   ir.SideEffects,
		Operands: []ods.OperandDecl{{Name: "args", Constraint: ods.AnyType, Variadic: true, Doc: "buffers, then extents"}},
		Attrs: []ods.AttrDecl{
			{Name: "kernel", Kind: ods.StringKind, Doc: "the `sym_name` of the kernel"},
			{Name: "rows_of", Kind: ods.IntKind, Optional: true, Doc: "of a guarded launch: the buffer operand whose rows are counted"},
			{Name: "min_rows", Kind: ods.IntKind, Optional: true, Doc: "of a guarded launch: the fewest rows it runs for"},
			{Name: "max_rows", Kind: ods.IntKind, Optional: true, Doc: "of a guarded launch: the most rows it runs for"},
		},
	},
	{
		Name: "dim", Summary: "a run-time extent of a buffer",
		Example:  "%n = loop.dim %x {axis = 0} : (memref<?x64xf32, dram>) -> index",
		Class:    "Dim",
		Traits:   ir.Pure,
		Operands: []ods.OperandDecl{{Name: "memref", Constraint: ods.AnyMemRef}},
		Results:  indexOut,
		Attrs:    []ods.AttrDecl{{Name: "axis", Kind: ods.IntKind, Doc: "the dimension"}},
	},
	{
		Name: "alloc_dram", Summary: "an intermediate buffer between kernels",
		GoName: "AllocDRAM",
		Description: `A buffer in device memory that one kernel writes and later ones read. ` + "`sram-alloc`" + ` places
static ones in the function's arena (` + "`offset`" + `, ` + "`size`" + `); dynamic ones are allocated at run time.`,
		Example:  "%t = loop.alloc_dram {offset = 0, size = 2048} : memref<8x64xf32, dram>",
		Class:    "AllocDRAM",
		Operands: []ods.OperandDecl{{Name: "extents", Constraint: ods.IndexValue, Variadic: true, Doc: "one per `?` of the result type"}},
		Results:  []ods.ResultDecl{{Name: "output", Constraint: ods.DRAMMemRef}},
		Attrs: []ods.AttrDecl{
			offset,
			{Name: "size", Kind: ods.IntKind, Optional: true, Doc: "bytes reserved in the arena"},
			{Name: "zeroed", Kind: ods.BoolKind, Optional: true, Doc: "counters of `loop.ticket` and `loop.group_sync` (i32): zero when a launch begins, and left zero by every kernel that uses them, so that launchers keep them across calls (outside the arena)"},
		},
	},

	// ---------------------------------------------------------------------
	// Loops
	{
		Name: "parallel", Summary: "independent iterations: the launch grid",
		Description: `Runs its body once for every value of the induction variable from ` + "`lower`" + ` below
` + "`upper`" + ` by ` + "`step`" + `, in any order and at the same time: each iteration is one program instance
(a thread block, a Triton program, a Metal threadgroup, a Tensix core's share, a CPU task).`,
		Example: `loop.parallel %c0, %rows, %c1 {dist = "grid"} {
^bb0(%r: index):
  ...
  loop.yield
} : index`,
		Class:    "Parallel",
		Operands: bounds,
		Attrs: []ods.AttrDecl{{Name: "dist", Kind: ods.StringKind, Enum: []string{"grid"},
			Doc: "what runs the iterations: the instances of the launch grid"}},
		Regions:       []ods.RegionDecl{{Name: "body", Doc: "one iteration"}},
		CustomBuilder: true,
	},
	{
		Name: "ticket", Summary: "the grid's instances in the order they start",
		Description: `Returns the next of 0, 1, ..., ` + "`count`" + ` - 1 in the order the instances of the grid reach it
(an atomic increment of ` + "`counter[0]`" + `); the instance that takes ` + "`count`" + ` - 1 sets the counter back to
0, so that it is zero again for the next launch. Every instance of the grid evaluates it exactly once.
An instance that waits at a ` + "`loop.group_sync`" + ` for others then waits only for instances that have
started: with tickets, the instances of a group are running by the time all of its earlier groups
are, so a group never waits on instances that cannot be scheduled, however few instances the
machine holds at once (at least a group's).`,
		Example:  "%t = loop.ticket %tickets, %n : (memref<1xi32, dram>, index) -> index",
		Class:    "Ticket",
		Traits:   ir.SideEffects,
		Operands: []ods.OperandDecl{{Name: "counter", Constraint: ods.DRAMMemRef}, {Name: "count", Constraint: ods.IndexValue}},
		Results:  indexOut,
	},
	{
		Name: "group_sync", Summary: "waits for the instances of a group",
		Description: `Waits until ` + "`size`" + ` instances of the grid have reached it with the same ` + "`group`" + `; what each of
them stored before is visible to all of them after (loads after it read memory, not a stale
cache). Of the counters, flat, element 2 ` + "`group`" + ` counts arrivals and the next one departures; the last to leave sets
both back to 0. The instances take their indices from a ` + "`loop.ticket`" + `, and a group must have
exactly ` + "`size`" + ` instances: one fewer is a deadlock on a GPU, an error in the interpreter.`,
		Example:  "loop.group_sync %sync, %row, %c16 : (memref<?x2xi32, dram>, index, index) -> ()",
		Class:    "GroupSync",
		Traits:   ir.SideEffects,
		Operands: []ods.OperandDecl{{Name: "counters", Constraint: ods.DRAMMemRef}, {Name: "group", Constraint: ods.IndexValue}, {Name: "size", Constraint: ods.IndexValue}},
	},
	{
		Name: "for", Summary: "a loop with carried values",
		Description: `Runs its body for the induction variable from ` + "`lower`" + ` below ` + "`upper`" + ` by ` + "`step`" + `,
passing each iteration's yielded values to the next; the results are the last ones (the inits
when it runs no iteration). With ` + "`dist = \"serial\"`" + ` iterations run in order. With
` + "`dist = \"threads\"`" + ` they are spread over the threads of the program instance: each thread
carries its own values from the inits, and at the end each result is combined over the threads
with its ` + "`combine`" + ` kind (` + "`add`, `max`, `min`" + `, element-wise for vectors), giving every thread
the total. ` + "`combine`" + ` is an array of strings with one entry per result.`,
		Example: `%acc = loop.for %c0, %c64, %c8, %zero {dist = "threads", combine = ["add"]} {
^bb0(%i: index, %a: vector<8xf32>):
  ...
  loop.yield %a2 : vector<8xf32>
} : (index, index, index, vector<8xf32>) -> vector<8xf32>`,
		Class:      "For",
		Operands:   append(append([]ods.OperandDecl(nil), bounds...), ods.OperandDecl{Name: "inits", Constraint: ods.AnyType, Variadic: true, Doc: "the initial carried values"}),
		Results:    []ods.ResultDecl{{Name: "values", Constraint: ods.AnyType, Variadic: true, Doc: "the final carried values"}},
		Attrs:      []ods.AttrDecl{{Name: "dist", Kind: ods.StringKind, Default: "serial", Enum: []string{"serial", "threads"}, Doc: "in order, or spread over the threads of the instance"}},
		OtherAttrs: true,
		Regions:    []ods.RegionDecl{{Name: "body", Doc: "one iteration"}},

		CustomBuilder: true,
	},
	{
		Name: "yield", Summary: "ends a loop body, passing on the carried values",
		Example:  "loop.yield %a2 : vector<8xf32>",
		Class:    "Yield",
		Traits:   ir.Pure | ir.Terminator,
		Operands: []ods.OperandDecl{{Name: "values", Constraint: ods.AnyType, Variadic: true}},
	},
	{
		Name: "return", Summary: "ends a kernel",
		Example: "loop.return",
		Class:   "Return",
		Traits:  ir.Pure | ir.Terminator,
	},

	// ---------------------------------------------------------------------
	// Memory
	{
		Name: "alloc", Summary: "scratchpad of one program instance",
		Description: `A buffer in on-chip memory (CUDA shared memory, Metal threadgroup memory, Tensix L1),
live from here to the end of the enclosing block. ` + "`sram-alloc`" + ` sets its byte ` + "`offset`" + `.`,
		Example: "%buf = loop.alloc {offset = 0} : memref<8192xf32, sram>",
		Class:   "Alloc",
		Results: []ods.ResultDecl{{Name: "output", Constraint: ods.SRAMMemRef}},
		Attrs:   []ods.AttrDecl{offset},
	},
	{
		Name: "load", Summary: "reads a scalar or a vector from a buffer",
		Description: `Reads the element at the indices, or the W elements of a ` + "`vector<W x T>`" + ` starting there
along the last dimension (contiguous), or along dimension ` + "`axis`" + ` where it is given (a strided read,
one element per step of that index: what a kernel reading an operand through a transpose of its last
axis gathers, or ` + "`loop.store`" + ` scatters into a transposed result; CPU targets only).`,
		Example:  "%v = loop.load %x, %r, %i : (memref<?x64xbf16, dram>, index, index) -> vector<8xbf16>",
		Class:    "Load",
		Operands: []ods.OperandDecl{{Name: "memref", Constraint: ods.AnyMemRef}, {Name: "indices", Constraint: ods.IndexValue, Variadic: true}},
		Results:  valueOut,
		Attrs: []ods.AttrDecl{{Name: "axis", Kind: ods.IntKind, Optional: true,
			Doc: "of a vector load: the dimension its lanes run along, when not the last"}},
	},
	{
		Name: "store", Summary: "writes a scalar or a vector to a buffer",
		Description: "Writes where `loop.load` with the same indices (and `axis`) reads.",
		Example:     "loop.store %v, %y, %r, %i : (vector<8xbf16>, memref<?x64xbf16, dram>, index, index) -> ()",
		Class:       "Store",
		Traits:      ir.SideEffects,
		Operands: []ods.OperandDecl{
			{Name: "value", Constraint: ods.ScalarOrVector},
			{Name: "memref", Constraint: ods.AnyMemRef},
			{Name: "indices", Constraint: ods.IndexValue, Variadic: true},
		},
		Attrs: []ods.AttrDecl{{Name: "axis", Kind: ods.IntKind, Optional: true,
			Doc: "of a vector store: the dimension its lanes run along, when not the last"}},
	},

	// ---------------------------------------------------------------------
	// Values
	{
		Name: "const", Summary: "a scalar, index or splat-vector constant",
		Description: "`value` is rounded to the element type as a store would round it.",
		Example:     "%c = loop.const {value = 0.5} : vector<8xf32>",
		Class:       "Const",
		Traits:      ir.Pure | ir.ConstantLike,
		Results:     []ods.ResultDecl{{Name: "output", Constraint: ods.AnyType}},
		Attrs:       []ods.AttrDecl{{Name: "value", Kind: ods.FloatKind, Doc: "the value of every element"}},
	},
	{
		Name: "broadcast", Summary: "splats a scalar into a vector",
		Example:  "%v = loop.broadcast %s : (f32) -> vector<8xf32>",
		Class:    "Broadcast",
		Traits:   ir.Pure,
		Operands: []ods.OperandDecl{{Name: "input", Constraint: ods.ScalarValue}},
		Results:  []ods.ResultDecl{{Name: "output", Constraint: ods.VectorValue}},
	},
	{
		Name: "reduce", Summary: "horizontal reduction of a vector",
		Description: "Combines the lanes of a vector in lane order: a sum, or a maximum or minimum that propagates NaN.",
		Example:     `%s = loop.reduce %acc {kind = "add"} : (vector<8xf32>) -> f32`,
		Class:       "Reduce",
		Traits:      ir.Pure | ir.Reduction,
		Operands:    []ods.OperandDecl{{Name: "input", Constraint: ods.VectorValue}},
		Results:     []ods.ResultDecl{{Name: "output", Constraint: ods.ScalarValue}},
		Attrs:       []ods.AttrDecl{{Name: "kind", Kind: ods.StringKind, Enum: []string{"add", "max", "min"}, Doc: "the combining function"}},
	},

	// ---------------------------------------------------------------------
	// Index arithmetic
	indexArith("addi", "index addition", ir.Commutative),
	indexArith("subi", "index subtraction", 0),
	indexArith("muli", "index multiplication", ir.Commutative),
	indexArith("divi", "index division, rounding toward zero", 0),
	indexArith("remi", "index remainder, with the sign of the dividend", 0),
	indexArith("mini", "the smaller of two indices", ir.Commutative),
	{
		Name: "clamp_index", Summary: "an integer value as an index, clamped into [0, bound)",
		Description: `Converts a loaded integer (signed, or unsigned for ` + "`ui*`" + ` types) to an ` + "`index`" + ` and clamps
it to ` + "`max(0, min(input, bound - 1))`" + `, so that an index read from memory (` + "`graph.gather`" + `'s) can
address a buffer of extent ` + "`bound`" + ` without reading outside it.`,
		Example:  "%j = loop.clamp_index %t, %c32000 : (i64, index) -> index",
		Class:    "ClampIndex",
		Traits:   ir.Pure,
		Operands: []ods.OperandDecl{{Name: "input", Constraint: ods.IntegerScalar}, {Name: "bound", Constraint: ods.IndexValue, Doc: "the extent indexed, at least 1"}},
		Results:  indexOut,
	},

	// ---------------------------------------------------------------------
	// Element-wise arithmetic
	unary("neg", "negation"),
	unary("abs", "absolute value"),
	unary("exp", "exponential"),
	unary("exp2", "base-2 exponential"),
	unary("log", "natural logarithm"),
	unary("log2", "base-2 logarithm"),
	unary("log1p", "ln(1 + x)"),
	unary("expm1", "e^x - 1"),
	unary("sqrt", "square root"),
	unary("rsqrt", "reciprocal square root"),
	unary("reciprocal", "reciprocal"),
	unary("tanh", "hyperbolic tangent"),
	unary("sigmoid", "logistic sigmoid"),
	unary("silu", "x * sigmoid(x)"),
	func() ods.OpDecl {
		o := unary("gelu", "GELU, exact or tanh-approximated")
		o.Example = `%y = loop.gelu %x {approximate = "tanh"} : vector<8xf32>`
		o.Attrs = []ods.AttrDecl{{Name: "approximate", Kind: ods.StringKind, Default: "none",
			Enum: []string{"none", "tanh"}, Doc: "the exact form or the tanh approximation"}}
		return o
	}(),
	unary("relu", "max(x, 0)"),
	unary("sin", "sine"),
	unary("cos", "cosine"),
	unary("floor", "rounding toward -inf"),
	unary("ceil", "rounding toward +inf"),
	unary("round", "rounding half to even"),
	binary("add", "addition", ir.Commutative),
	binary("sub", "subtraction", 0),
	binary("mul", "multiplication", ir.Commutative),
	binary("div", "division; integer division truncates toward zero", 0),
	binary("max", "maximum; NaN in either gives NaN", ir.Commutative),
	binary("min", "minimum; NaN in either gives NaN", ir.Commutative),
	binary("pow", "power", 0),
	{
		Name: "fma", Summary: "fused multiply-add, rounded once",
		Description: "`r = a * b + c` with a single rounding (integer types wrap).",
		Example:     "%r = loop.fma %a, %b, %c : f32",
		Class:       "Fma",
		Traits:      ir.Pure | ir.Elementwise,
		Operands: []ods.OperandDecl{
			{Name: "lhs", Constraint: ods.ScalarOrVector},
			{Name: "rhs", Constraint: ods.ScalarOrVector},
			{Name: "addend", Constraint: ods.ScalarOrVector},
		},
		Results: valueOut,
	},
	{
		Name: "cmp", Summary: "comparison",
		Description: "Gives `i1`. Comparisons with NaN are false, except `ne`, which is true.",
		Example:     `%c = loop.cmp %x, %y {predicate = "lt"} : (vector<8xf32>, vector<8xf32>) -> vector<8xi1>`,
		Class:       "Compare",
		Traits:      ir.Pure | ir.Elementwise,
		Operands:    []ods.OperandDecl{{Name: "lhs", Constraint: ods.ScalarOrVector}, {Name: "rhs", Constraint: ods.ScalarOrVector}},
		Results:     valueOut,
		Attrs: []ods.AttrDecl{{Name: "predicate", Kind: ods.StringKind,
			Enum: []string{"eq", "ne", "lt", "le", "gt", "ge"}, Doc: "`lhs <predicate> rhs`"}},
	},
	{
		Name: "select", Summary: "choice",
		Description: "`r = c ? a : b`, lane by lane.",
		Example:     "%r = loop.select %c, %a, %b : (vector<8xi1>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>",
		Class:       "Select",
		Traits:      ir.Pure | ir.Elementwise,
		Operands: []ods.OperandDecl{
			{Name: "cond", Constraint: ods.ScalarOrVector},
			{Name: "on_true", Constraint: ods.ScalarOrVector},
			{Name: "on_false", Constraint: ods.ScalarOrVector},
		},
		Results: valueOut,
	},
	{
		Name: "transpose", Summary: "transposes a square of vectors",
		Description: `Result j's lane i is operand i's lane j: the W vectors of W lanes are the rows of a
W x W matrix, and the results are its columns. CPU lowering reads a tile of a transposed operand
as W contiguous vectors and transposes them in registers, instead of W strided loads (a load's
` + "`axis`" + `) of one element per lane.`,
		Example:  "%c0, %c1 = loop.transpose %r0, %r1 : (vector<2xbf16>, vector<2xbf16>) -> (vector<2xbf16>, vector<2xbf16>)",
		Class:    "Transpose",
		Traits:   ir.Pure,
		Operands: []ods.OperandDecl{{Name: "rows", Constraint: ods.VectorValue, Variadic: true, Doc: "the rows of the square"}},
		Results:  []ods.ResultDecl{{Name: "columns", Constraint: ods.VectorValue, Variadic: true, Doc: "its columns"}},
	},
	{
		Name: "cast", Summary: "element type conversion",
		Description: `Float to float rounds to nearest even; integer to float rounds; float to integer is
unchecked, as ` + "`graph.cast`" + ` (NaN and out-of-range values are whatever the target does; the
reference wraps as x86-64 does); integer to integer wraps.`,
		Example:  "%f = loop.cast %v : (vector<8xbf16>) -> vector<8xf32>",
		Class:    "Cast",
		Traits:   ir.Pure | ir.Elementwise,
		Operands: valueIn,
		Results:  valueOut,
	},
}
