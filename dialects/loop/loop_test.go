package loop_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/dialects/loop/defs"
	"github.com/tensorforge/tensorforge/dialects/ods/gen"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/parser"
)

// The committed generated files are what odsgen makes of the declarations
// now; run `go generate ./dialects/loop` after changing them.
func TestGeneratedFilesUpToDate(t *testing.T) {
	src, err := gen.GoFile(&defs.Dialect, "loop")
	require.NoError(t, err)
	doc, err := gen.Markdown(&defs.Dialect)
	require.NoError(t, err)
	for path, want := range map[string][]byte{
		"gen_ops.go":                  src,
		"../../docs/dialects/loop.md": doc,
	} {
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		require.True(t, string(want) == string(got), "%s is stale: run `go generate ./dialects/loop`", path)
	}
}

// Every declared op is registered with its summary, traits and attributes.
func TestRegistered(t *testing.T) {
	require.NoError(t, defs.Dialect.Validate())
	for _, o := range defs.Dialect.Ops {
		d := ir.LookupOp(defs.Dialect.FullName(&o))
		require.NotNil(t, d, o.Name)
		require.Equal(t, o.Summary, d.Summary)
		require.Equal(t, o.Traits, d.Traits)
		require.NotNil(t, d.Verify)
	}
	require.True(t, ir.LookupOp(loop.OpKernel).Traits&ir.IsolatedFromAbove != 0)
	require.True(t, ir.LookupOp(loop.OpYield).Traits&ir.Terminator != 0)
	require.True(t, ir.LookupOp(loop.OpStore).Traits&ir.SideEffects != 0)
	require.Zero(t, ir.LookupOp(loop.OpAlloc).Traits&ir.Pure, "two allocations must never be merged")
	require.Zero(t, ir.LookupOp(loop.OpLoad).Traits&ir.Pure, "a load must not move across a store")
}

func parse(t *testing.T, src string) ir.Module {
	t.Helper()
	m, err := parser.Parse("test.tir", src)
	require.NoError(t, err)
	return m
}

// A program using every op verifies, prints in a form that parses back to
// the same text, and so does its generic form.
func TestRoundTrip(t *testing.T) {
	m := parse(t, program)
	require.NoError(t, ir.Verify(m.Operation))
	text := ir.Print(m.Operation, ir.PrintOptions{})
	again := parse(t, text)
	require.NoError(t, ir.Verify(again.Operation))
	require.Equal(t, text, ir.Print(again.Operation, ir.PrintOptions{}))

	generic := ir.Print(m.Operation, ir.PrintOptions{Generic: true})
	fromGeneric := parse(t, generic)
	require.NoError(t, ir.Verify(fromGeneric.Operation))
	require.Equal(t, text, ir.Print(fromGeneric.Operation, ir.PrintOptions{}))

	used := map[string]bool{}
	m.Walk(func(o *ir.Operation) bool { used[o.Name()] = true; return true })
	for _, o := range defs.Dialect.Ops {
		name := defs.Dialect.FullName(&o)
		switch name {
		case loop.OpNeg, loop.OpAbs, loop.OpExp, loop.OpExp2, loop.OpLog, loop.OpLog2, loop.OpLog1p, loop.OpExpm1,
			loop.OpSqrt, loop.OpRsqrt, loop.OpReciprocal, loop.OpTanh, loop.OpSigmoid, loop.OpRelu, loop.OpSin,
			loop.OpCos, loop.OpFloor, loop.OpCeil, loop.OpRound, loop.OpSub, loop.OpDiv, loop.OpMin, loop.OpPow:
			continue // the same classes as ops the program uses
		}
		require.True(t, used[name], "the round-trip program does not use %s", name)
	}
}

// Every error the verifier words, from a valid program changed in one place.
func TestVerifierErrors(t *testing.T) {
	cases := []struct{ from, to, want string }{
		{`%t = loop.ticket %tk, %n : (memref<1xi32, dram>, index) -> index`,
			`%t = loop.ticket %gs, %n : (memref<?x2xi32, dram>, index) -> index`,
			"'loop.ticket' op counters must be 'memref<1xi32, dram>', but got 'memref<?x2xi32, dram>'"},
		{`%gs = loop.alloc_dram %n {zeroed = true}`, `%gs = loop.alloc_dram %n`,
			"with zeroed = true (they are zero when a launch begins)"},
		{`      %t = loop.ticket %tk, %n : (memref<1xi32, dram>, index) -> index
      %g = loop.divi %t, %c2 : index`, `      %g = loop.divi %r, %c2 : index`,
			"'loop.group_sync' op expects a 'loop.ticket' before it in the grid's body"},
		{`      loop.group_sync %gs, %g, %c2 : (memref<?x2xi32, dram>, index, index) -> ()
      loop.yield`, `      loop.for %c0, %c2, %c1 {dist = "threads"} {
      ^bb9(%z: index):
        loop.group_sync %gs, %g, %c2 : (memref<?x2xi32, dram>, index, index) -> ()
        loop.yield
      } : index
      loop.yield`,
			"'loop.group_sync' op must be in the body of the grid's 'loop.parallel' itself, not in a loop or a branch"},
		{`%v = loop.load %x, %r, %i : (memref<?x64xbf16, dram>, index, index) -> vector<8xbf16>`,
			`%v = loop.load %x, %i : (memref<?x64xbf16, dram>, index) -> vector<8xbf16>`,
			"'loop.load' op expects 2 indices for 'memref<?x64xbf16, dram>', but found 1"},
		{`%k = loop.cast %three : (i32) -> f32`, `%k = loop.cast %three : (i32) -> f32
      %bad = loop.load %s, %r : (memref<?xf32, dram>, index) -> bf16`,
			"'loop.load' op accesses 'bf16', but the buffer holds 'f32'"},
		{`%k = loop.cast %three : (i32) -> f32`, `%k = loop.cast %three : (i32) -> f32
      %bad = loop.load %row, %c0 : (memref<64xf32, sram>, index) -> vector<128xf32>`,
			"accesses 128 lanes, more than the 64 of the last dimension"},
		{`%sq = loop.mul %f, %f : vector<8xf32>`, `%sq = loop.mul %f, %f : vector<8xf32>
        %bad = loop.mul %v, %v : vector<8xbf16>`,
			"'loop.mul' op computes on f32 or f64 only; cast 'vector<8xbf16>' to f32 first"},
		{`%a2 = loop.add %a, %sq : vector<8xf32>`, `%a2 = loop.add %a, %sq : vector<8xf32>
        %bad = loop.add %sq, %half : (vector<8xf32>, f32) -> vector<8xf32>`,
			"'loop.add' op requires operands of one type, but got 'vector<8xf32>' and 'f32'"},
		{`{combine = ["add", "max"], dist = "threads"}`, `{combine = ["add"], dist = "threads"}`,
			"requires 'combine' with one kind per result"},
		{`{combine = ["add", "max"], dist = "threads"}`, `{combine = ["add", "mul"], dist = "threads"}`,
			`combine kind #1 must be one of "add", "max" or "min", but got "mul"`},
		{`{combine = ["add", "max"], dist = "threads"}`, `{dist = "threads"}`,
			"requires 'combine' with one kind per result"},
		{`{combine = ["add", "max"], dist = "threads"}`, `{combine = ["add", "max"]}`,
			`has 'combine', which only a loop with dist = "threads" and results takes`},
		{`loop.yield %a2, %b2 : vector<8xf32>, vector<8xf32>`, `loop.yield %a2 : vector<8xf32>`,
			"yields 1 values, but has 2 results"},
		{`%row = loop.alloc {offset = 0} : memref<64xf32, sram>`, `%row = loop.alloc {offset = 0} : memref<64xf32, sram>
      %bad = loop.alloc {offset = 0} : memref<64xf32, dram>`,
			"result #0 must be memref in sram"},
		{`%row = loop.alloc {offset = 0} : memref<64xf32, sram>`, `%row = loop.alloc {offset = -8} : memref<64xf32, sram>`,
			"expects a non-negative offset, but got -8"},
		{`%ss = loop.reduce %acc#0 {kind = "add"} : (vector<8xf32>) -> f32`, `%ss = loop.reduce %acc#0 {kind = "mul"} : (vector<8xf32>) -> f32`,
			`attribute 'kind' must be one of "add", "max" or "min", but got "mul"`},
		{`%tr:8 = loop.transpose %o, %p, %q, %e, %o, %p, %q, %e : vector<8xf32>`, `%tr:2 = loop.transpose %o, %p : vector<8xf32>`,
			"'loop.transpose' op transposes 2 vectors of 8 lanes; a square of W vectors of W lanes is transposed, W a power of two from 2 to 64"},
		{`%tr:8 = loop.transpose %o, %p, %q, %e, %o, %p, %q, %e : vector<8xf32>`,
			`%tr:8 = loop.transpose %o, %p, %q, %e, %o, %p, %q, %ob : (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xbf16>) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)`,
			"operand #7 has type 'vector<8xbf16>', unlike operand #0's 'vector<8xf32>'"},
		{`%kb = loop.broadcast %k2 : (f32) -> vector<8xf32>`, `%kb = loop.broadcast %k2 : (f32) -> vector<8xf32>
        %bad = loop.broadcast %k2 : (f32) -> vector<8xf16>`,
			"result 'vector<8xf16>' does not hold the operand's type 'f32'"},
		{`%o = loop.select %lt, %e, %wf : (vector<8xi1>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>`,
			`%o = loop.select %e, %e, %wf : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>`,
			"condition 'vector<8xf32>' does not match the values' type 'vector<8xf32>'"},
		{`%ob = loop.cast %o : (vector<8xf32>) -> vector<8xbf16>`, `%ob = loop.cast %o : (vector<8xf32>) -> vector<8xbf16>
        %bad = loop.cast %o : (vector<8xf32>) -> bf16`,
			"cannot change the shape: 'vector<8xf32>' to 'bf16'"},
		{`%j6 = loop.clamp_index %three, %c64 : (i32, index) -> index`, `%j6 = loop.clamp_index %half, %c64 : (f32, index) -> index`,
			"'loop.clamp_index' op operand #0 must be scalar of an integer type, but got 'f32'"},
		{`%three = loop.const {value = 3} : i32`, `%three = loop.const {value = 3.5} : i32`,
			"value 3.5 is not an integer, as 'i32' needs"},
		{`%n = loop.dim %x {axis = 0}`, `%n = loop.dim %x {axis = 2}`,
			"axis 2 is out of range for 'memref<?x64xbf16, dram>'"},
		{`%t = loop.alloc_dram %m {offset = 0, size = 512} : (index) -> memref<?xf32, dram>`,
			`%t = loop.alloc_dram {offset = 0, size = 512} : memref<?xf32, dram>`,
			"expects 1 extent operands (one per '?' of 'memref<?xf32, dram>'), but found 0"},
		{`%u = loop.alloc_dram {offset = 256, size = 256} : memref<8x8xf32, dram>`,
			`%u = loop.alloc_dram {offset = 256, size = 100} : memref<8x8xf32, dram>`,
			"size 100 is smaller than the 256 bytes of 'memref<8x8xf32, dram>'"},
		{`{kernel = "f_k0"}`, `{kernel = "f_k9"}`,
			"refers to kernel 'f_k9', which is not a 'loop.kernel' of the module"},
		{`loop.launch %x, %w, %y, %s, %n, %n, %n {kernel = "f_k0"} : (memref<?x64xbf16, dram>, memref<64xbf16, dram>, memref<?x64xbf16, dram>, memref<?xf32, dram>, index, index, index) -> ()`,
			`loop.launch %x, %w, %y, %s, %n, %n {kernel = "f_k0"} : (memref<?x64xbf16, dram>, memref<64xbf16, dram>, memref<?x64xbf16, dram>, memref<?xf32, dram>, index, index) -> ()`,
			"passes 6 operands, but kernel 'f_k0' takes 7 arguments"},
		{`%s: memref<?xf32, dram>, %x_d0: index, %y_d0: index, %s_d0: index):`, `%s: memref<?xf32, dram>, %x_d0: index, %y_d0: index):`,
			"expects 3 index arguments (one per dynamic extent of its buffers), but found 2"},
		{`%y_d0: index, %s_d0: index):`, `%y_d0: index, %s_d0: f32):`,
			"block argument #6 must be index (an extent), but got 'f32'"},
		{`    %three = loop.const {value = 3} : i32
    loop.parallel`, `    %three = loop.const {value = 3} : i32
    loop.store %half, %s, %c0 : (f32, memref<?xf32, dram>, index) -> ()
    loop.parallel`, "'loop.store' op must be inside a 'loop.parallel' of the kernel"},
		{`      loop.for %c0, %c64, %c8 {dist = "threads"} {`, `      loop.parallel %c0, %c64, %c8 {dist = "grid"} {`,
			"'loop.parallel' op expects parent op 'loop.kernel'"},
		{`%k = loop.cast %three : (i32) -> f32`, `%k = loop.cast %three : (i32) -> f32
      %bad = loop.exp %three : i32`, "'loop.exp' op does not take integer operands ('i32')"},
	}
	for _, c := range cases {
		require.Equal(t, 1, strings.Count(program, c.from), "the test's anchor %q must be unique", c.from)
		src := strings.Replace(program, c.from, c.to, 1)
		m, err := parser.Parse("test.tir", src)
		if err == nil {
			err = ir.Verify(m.Operation)
		}
		require.Error(t, err, "changing %q to %q", c.from, c.to)
		require.Contains(t, err.Error(), c.want)
	}
}

// The builders of the ops with regions produce verified IR.
func TestBuilders(t *testing.T) {
	m := ir.NewModule(ir.Location{})
	b := ir.NewBuilderAtEnd(m.Body())
	buf := ir.MemRefType{Shape: []int64{ir.Dynamic, 16}, Elem: ir.F32Type, Space: ir.DRAM}
	require.Equal(t, []ir.Type{buf, buf, ir.IndexType, ir.IndexType}, loop.KernelArgs([]ir.Type{buf}, []ir.Type{buf}))
	k, err := loop.BuildKernel(b, ir.Location{}, "k", "row", []ir.Type{buf}, []ir.Type{buf}, func(kb *ir.Builder, args []*ir.Value) error {
		c0, err := loop.BuildConstant(kb, ir.Location{}, ir.IndexType, 0)
		require.NoError(t, err)
		c1, _ := loop.BuildConstant(kb, ir.Location{}, ir.IndexType, 1)
		c16, _ := loop.BuildConstant(kb, ir.Location{}, ir.IndexType, 16)
		zero, err := loop.BuildConstant(kb, ir.Location{}, ir.F32Type, 0)
		require.NoError(t, err)
		_, err = loop.BuildParallel(kb, ir.Location{}, c0.Output(), args[2], c1.Output(), func(pb *ir.Builder, r *ir.Value) error {
			f, err := loop.BuildFor(pb, ir.Location{}, c0.Output(), c16.Output(), c1.Output(), []*ir.Value{zero.Output()}, "threads", []string{"max"},
				func(fb *ir.Builder, i *ir.Value, carried []*ir.Value) ([]*ir.Value, error) {
					v, err := loop.BuildLoad(fb, ir.Location{}, args[0], []*ir.Value{r, i}, ir.F32Type)
					if err != nil {
						return nil, err
					}
					mx, err := loop.BuildMax(fb, ir.Location{}, carried[0], v.Output())
					return []*ir.Value{mx.Output()}, err
				})
			if err != nil {
				return err
			}
			_, err = loop.BuildStore(pb, ir.Location{}, f.Values()[0], args[1], []*ir.Value{r, c0.Output()})
			return err
		})
		return err
	})
	require.NoError(t, err)
	require.Equal(t, "k", k.SymName())
	require.NoError(t, ir.Verify(m.Operation))
	require.Equal(t, ir.FloatAttr{Value: 0.5, Type: ir.F32Type}, loop.ConstAttr(ir.F32Type, 0.5))
	require.Equal(t, ir.FloatAttr{Value: 0.1, Type: ir.F64Type}, loop.ConstAttr(ir.F64Type, 0.1))
	require.Equal(t, ir.IntAttr{Value: 3, Type: ir.I64Type}, loop.ConstAttr(ir.IndexType, 3))

	// a body that fails leaves nothing behind
	n := m.Body().Len()
	_, err = loop.BuildKernel(b, ir.Location{}, "bad", "row", nil, nil, func(*ir.Builder, []*ir.Value) error {
		return ir.Errorf(ir.Location{}, "no")
	})
	require.Error(t, err)
	require.Equal(t, n, m.Body().Len())
	// a kernel without a grid does not verify
	_, err = loop.BuildKernel(b, ir.Location{}, "empty", "row", nil, nil, func(*ir.Builder, []*ir.Value) error { return nil })
	require.ErrorContains(t, err, "expects a 'loop.parallel' in its body (the launch grid), but found none")
}
