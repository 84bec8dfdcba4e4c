package cpurt_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	_ "github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/dialects/graph/eval"
	_ "github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/emit/cpurt"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
	"github.com/tensorforge/tensorforge/parser"
)

// An opCase is one element-wise loop op on operands of the given kinds,
// checked against the graph op of the same name run by the reference
// interpreter (dialects/graph/eval), within ulps of the result kind.
type opCase struct {
	op    string // "exp", "cmp"
	attrs string // `{predicate = "lt"}`
	in    []ir.ElemKind
	out   ir.ElemKind
	ulps  float64
	// graphOp, when set, is the reference op if its name differs
	graphOp string
	// skip, when set, excludes inputs where the reference itself is off
	skip func(in []float64) bool
	// narrow, when set, casts the op's f32 result to this narrow float
	// type before the store (the fast forms of the transcendentals)
	narrow ir.ElemKind
	// n is the element count (default opLen)
	n int
	// values, when set, is the input of a one-operand case (n of them)
	values []float64
}

// stored is the element type the case stores.
func (c opCase) stored() ir.ElemKind {
	if c.narrow != ir.InvalidElem {
		return c.narrow
	}
	return c.out
}

func (c opCase) length() int {
	if c.n > 0 {
		return c.n
	}
	return opLen
}

const opLen = 128

// typeOf is the loop type of w lanes of k (w = 0: a scalar).
func typeOf(k ir.ElemKind, w int) string {
	if w == 0 {
		return k.String()
	}
	return fmt.Sprintf("vector<%dx%s>", w, k)
}

// kernelText is a kernel applying c to its elements, w lanes at a time.
func kernelText(name string, c opCase, w int) string {
	var sb strings.Builder
	n := c.length()
	step := max(w, 1)
	fmt.Fprintf(&sb, "loop.kernel {kind = \"elementwise\", num_inputs = %d, num_outputs = 1, sym_name = %q} {\n^bb0(", len(c.in), name)
	for i, k := range c.in {
		fmt.Fprintf(&sb, "%%a%d: memref<%dx%s, dram>, ", i, n, k)
	}
	fmt.Fprintf(&sb, "%%y: memref<%dx%s, dram>):\n", n, c.stored())
	fmt.Fprintf(&sb, "  %%c0 = loop.const {value = 0} : index\n  %%c1 = loop.const {value = 1} : index\n")
	fmt.Fprintf(&sb, "  %%cn = loop.const {value = %d} : index\n  %%cw = loop.const {value = %d} : index\n", n/step, step)
	sb.WriteString("  loop.parallel %c0, %cn, %c1 {dist = \"grid\"} {\n  ^bb0(%i: index):\n    %o = loop.muli %i, %cw : index\n")
	var vals, types []string
	for i, k := range c.in {
		fmt.Fprintf(&sb, "    %%v%d = loop.load %%a%d, %%o : (memref<%dx%s, dram>, index) -> %s\n", i, i, n, k, typeOf(k, w))
		vals = append(vals, fmt.Sprintf("%%v%d", i))
		types = append(types, typeOf(k, w))
	}
	rt := typeOf(c.out, w)
	attrs := ""
	if c.attrs != "" {
		attrs = " " + c.attrs
	}
	fmt.Fprintf(&sb, "    %%r = loop.%s %s%s : (%s) -> %s\n", c.op, strings.Join(vals, ", "), attrs, strings.Join(types, ", "), rt)
	res := "%r"
	if c.narrow != ir.InvalidElem {
		st := typeOf(c.narrow, w)
		fmt.Fprintf(&sb, "    %%s = loop.cast %%r : (%s) -> %s\n", rt, st)
		res, rt = "%s", st
	}
	fmt.Fprintf(&sb, "    loop.store %s, %%y, %%o : (%s, memref<%dx%s, dram>, index) -> ()\n", res, rt, n, c.stored())
	sb.WriteString("    loop.yield\n  } : (index, index, index) -> ()\n  loop.return\n}\n")
	return sb.String()
}

// refText is the graph function computing c.
func refText(c opCase) string {
	n := c.length()
	var args, ins, vals []string
	for i, k := range c.in {
		t := fmt.Sprintf("tensor<%dx%s>", n, k)
		args = append(args, fmt.Sprintf("%%a%d: %s", i, t))
		ins = append(ins, t)
		vals = append(vals, fmt.Sprintf("%%a%d", i))
	}
	rt := fmt.Sprintf("tensor<%dx%s>", n, c.out)
	name := c.op
	if c.graphOp != "" {
		name = c.graphOp
	}
	attrs := ""
	if c.attrs != "" {
		attrs = " " + c.attrs
	}
	body := fmt.Sprintf("  %%r = graph.%s %s%s : (%s) -> %s\n", name, strings.Join(vals, ", "), attrs, strings.Join(ins, ", "), rt)
	res, st := "%r", rt
	if c.narrow != ir.InvalidElem {
		st = fmt.Sprintf("tensor<%dx%s>", n, c.narrow)
		body += fmt.Sprintf("  %%s = graph.cast %%r : (%s) -> %s\n", rt, st)
		res = "%s"
	}
	return fmt.Sprintf("func.func @ref(%s) -> %s {\n%s  return %s : %s\n}\n",
		strings.Join(args, ", "), st, body, res, st)
}

// checkOps compiles every case, scalar and 8 lanes wide, into one program
// and compares its results with the interpreter's on extreme and random
// inputs.
func checkOps(t *testing.T, cases []opCase) {
	t.Helper()
	var mod, fargs, launches strings.Builder
	type job struct {
		c      opCase
		w      int
		inputs []*eval.Tensor
		want   *eval.Tensor
	}
	var jobs []job
	var outs []string
	for ci, c := range cases {
		refMod, err := parser.Parse("ref.tir", refText(c))
		require.NoError(t, err, refText(c))
		fn := refMod.Funcs()[0]
		for wi, w := range []int{0, 8} {
			var inputs []*eval.Tensor
			switch {
			case c.values != nil:
				inputs = []*eval.Tensor{{Shape: []int64{int64(c.length())}, Elem: c.in[0], Data: append([]float64(nil), c.values...)}}
			case wi == 0:
				inputs, err = eval.ExtremeInputs(fn, int64(ci))
			default:
				inputs, err = eval.RandomInputs(fn, int64(ci), 4, 1)
			}
			require.NoError(t, err)
			sanitize(inputs)
			want, err := eval.Run(fn, inputs, eval.Options{})
			require.NoError(t, err, "%s", refText(c))
			name := fmt.Sprintf("k%d_%d", ci, w)
			mod.WriteString(kernelText(name, c, w))
			var ops, tys []string
			for i, k := range c.in {
				a := fmt.Sprintf("%%%s_a%d", name, i)
				ty := fmt.Sprintf("memref<%dx%s, dram>", c.length(), k)
				fmt.Fprintf(&fargs, "%s: %s, ", a, ty)
				ops = append(ops, a)
				tys = append(tys, ty)
			}
			y := fmt.Sprintf("%%%s_y", name)
			yt := fmt.Sprintf("memref<%dx%s, dram>", c.length(), c.stored())
			outs = append(outs, fmt.Sprintf("%s: %s", y, yt))
			fmt.Fprintf(&launches, "  loop.launch %s, %s {kernel = %q} : (%s, %s) -> ()\n", strings.Join(ops, ", "), y, name, strings.Join(tys, ", "), yt)
			jobs = append(jobs, job{c: c, w: w, inputs: inputs, want: want[0]})
		}
	}
	text := fmt.Sprintf("func.func @all(%s%s) attributes {num_results = %d} {\n%s  return\n}\n%s",
		fargs.String(), strings.Join(outs, ", "), len(outs), launches.String(), mod.String())
	m, err := parser.Parse("ops.tir", text)
	require.NoError(t, err)
	require.NoError(t, ir.Verify(m.Operation))
	p, err := cpurt.Compile(m, "all")
	require.NoError(t, err)
	defer p.Close()
	var inputs []*eval.Tensor
	for _, j := range jobs {
		inputs = append(inputs, j.inputs...)
	}
	got, err := p.Run(inputs)
	require.NoError(t, err)
	require.Len(t, got, len(jobs))
	failures := 0
	for i, j := range jobs {
		off, worst := 0, 0.0
		for e := range j.want.Data {
			w, g := j.want.Data[e], got[i].Data[e]
			var in []float64
			for _, x := range j.inputs {
				in = append(in, x.Data[e])
			}
			if j.c.skip != nil && j.c.skip(in) {
				continue
			}
			d := numeric.ULPDiff(w, g, j.c.stored())
			if d > 0 {
				off++
			}
			worst = max(worst, d)
			if d > j.c.ulps {
				t.Errorf("%s %v -> %s (width %d): f%v = %v, want %v (%v ULP)", j.c.op, j.c.in, j.c.out, j.w, in, g, w, d)
				if failures++; failures > 40 {
					t.FailNow()
				}
			}
		}
		if off > 0 && j.c.values != nil {
			t.Logf("%s %v -> %s, width %d: %d of %d results not bit-identical to the interpreter's, at most %v ULP off", j.c.op, j.c.in, j.c.stored(), j.w, off, len(j.want.Data), worst)
		}
	}
}

// sanitize keeps i64 inputs within the range a float64 holds exactly
// enough to round-trip through an int64 (2^63 - 1 is 2^63 as a float64).
func sanitize(ts []*eval.Tensor) {
	for _, t := range ts {
		if t.Elem != ir.I64 {
			continue
		}
		for i, v := range t.Data {
			if math.Abs(v) >= 1<<62 {
				t.Data[i] = math.Copysign(1<<62, v)
			}
		}
	}
}

func floatKinds() []ir.ElemKind { return []ir.ElemKind{ir.F32, ir.F64} }

func TestUnaryOps(t *testing.T) {
	var cases []opCase
	for _, k := range floatKinds() {
		exact := []string{"neg", "abs", "sqrt", "reciprocal", "relu", "floor", "ceil", "round"}
		for _, op := range exact {
			cases = append(cases, opCase{op: op, in: []ir.ElemKind{k}, out: k})
		}
		near := []string{"exp", "exp2", "log", "log2", "log1p", "expm1", "rsqrt", "tanh", "sigmoid", "silu", "sin", "cos"}
		for _, op := range near {
			c := opCase{op: op, in: []ir.ElemKind{k}, out: k, ulps: 1}
			if b, ok := f32Bounds[op]; ok && k == ir.F32 {
				c.ulps = b
			}
			if k == ir.F64 {
				// Go's math library, the f64 reference, is itself a few
				// ULPs off in places (log2, sin of huge arguments) and
				// wrong for logarithms of subnormals; the native side
				// calls the C library.
				c.ulps = 64
				c.skip = func(in []float64) bool { return in[0] != 0 && math.Abs(in[0]) < 0x1p-1022 }
			}
			cases = append(cases, c)
		}
		cases = append(cases,
			opCase{op: "gelu", in: []ir.ElemKind{k}, out: k, ulps: 2},
			opCase{op: "gelu", attrs: `{approximate = "tanh"}`, in: []ir.ElemKind{k}, out: k, ulps: 2})
	}
	for _, k := range []ir.ElemKind{ir.I8, ir.I32, ir.I64, ir.UI8, ir.UI32} {
		for _, op := range []string{"neg", "abs", "relu", "floor", "ceil", "round"} {
			cases = append(cases, opCase{op: op, in: []ir.ElemKind{k}, out: k})
		}
	}
	checkOps(t, cases)
}

func TestBinaryOps(t *testing.T) {
	var cases []opCase
	for _, k := range floatKinds() {
		for _, op := range []string{"add", "sub", "mul", "div", "max", "min"} {
			cases = append(cases, opCase{op: op, in: []ir.ElemKind{k, k}, out: k})
		}
		pow := opCase{op: "pow", in: []ir.ElemKind{k, k}, out: k, ulps: 1}
		if k == ir.F64 {
			// as for the unary functions: Go's math.Pow is the reference
			pow.ulps = 64
			pow.skip = func(in []float64) bool { return in[0] != 0 && math.Abs(in[0]) < 0x1p-1022 }
		}
		cases = append(cases, pow)
		for _, p := range []string{"eq", "ne", "lt", "le", "gt", "ge"} {
			cases = append(cases, opCase{op: "cmp", attrs: fmt.Sprintf("{predicate = %q}", p), in: []ir.ElemKind{k, k}, out: ir.I1})
		}
		cases = append(cases, opCase{op: "select", in: []ir.ElemKind{ir.I1, k, k}, out: k})
	}
	for _, k := range []ir.ElemKind{ir.I8, ir.I16, ir.I32, ir.I64, ir.UI8, ir.UI16, ir.UI32} {
		for _, op := range []string{"add", "sub", "mul", "max", "min"} {
			cases = append(cases, opCase{op: op, in: []ir.ElemKind{k, k}, out: k})
		}
		for _, p := range []string{"eq", "lt", "ge"} {
			cases = append(cases, opCase{op: "cmp", attrs: fmt.Sprintf("{predicate = %q}", p), in: []ir.ElemKind{k, k}, out: ir.I1})
		}
	}
	for _, k := range []ir.ElemKind{ir.BF16, ir.F16, ir.F8E4M3FN, ir.UI8} {
		cases = append(cases, opCase{op: "select", in: []ir.ElemKind{ir.I1, k, k}, out: k})
	}
	checkOps(t, cases)
}

// f32Bounds are the bounds of the f32 functions on float lanes
// (docs/cpu-backend.md); exp and exp2 are within 1 ULP like the others.
var f32Bounds = map[string]float64{"sigmoid": 3, "silu": 4}

// TestF32TranscendentalsSweep runs exp, exp2, sigmoid and silu of f32 on
// float lanes over 2^18 inputs spread evenly over the bit patterns of
// [-160, 160] (subnormal results, the overflow and underflow thresholds
// included) and the special values, within their bounds.
func TestF32TranscendentalsSweep(t *testing.T) {
	const n = 1 << 18
	values := make([]float64, 0, n)
	// f32 values (the interpreter reads the inputs as given)
	for _, v := range []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(),
		88.72283, 88.72284, -87.33654, -103.97208, -103.97209, 128, -126, -149, -150, 0x1p-149, -0x1p-149} {
		values = append(values, float64(float32(v)))
	}
	// half the inputs positive, half negative, evenly spaced in their bits
	top := uint32(math.Float32bits(160))
	for len(values) < n {
		i := uint32(len(values))
		b := uint64(top) * uint64(i/2) / uint64(n/2)
		v := float64(math.Float32frombits(uint32(b)))
		if i%2 == 1 {
			v = -v
		}
		values = append(values, v)
	}
	var cases []opCase
	for _, op := range []string{"exp", "exp2", "sigmoid", "silu"} {
		b, ok := f32Bounds[op]
		if !ok {
			b = 1
		}
		cases = append(cases, opCase{op: op, in: []ir.ElemKind{ir.F32}, out: ir.F32, ulps: b, n: n, values: values})
	}
	checkOps(t, cases)
}

// TestFastTranscendentals checks the f32 forms used for results that are
// only stored in a narrow float type, within 1 ULP of that type.
func TestFastTranscendentals(t *testing.T) {
	var cases []opCase
	for _, nk := range []ir.ElemKind{ir.BF16, ir.F16} {
		for _, op := range []string{"exp", "exp2", "sigmoid", "silu"} {
			cases = append(cases, opCase{op: op, in: []ir.ElemKind{ir.F32}, out: ir.F32, narrow: nk, ulps: 1})
		}
		cases = append(cases, opCase{op: "gelu", attrs: `{approximate = "tanh"}`, in: []ir.ElemKind{ir.F32}, out: ir.F32, narrow: nk, ulps: 1})
	}
	checkOps(t, cases)
}

// TestFastTranscendentalsEveryValue runs the fast forms on every bf16 and
// every f16 value and counts the results one ULP off.
func TestFastTranscendentalsEveryValue(t *testing.T) {
	if testing.Short() {
		t.Skip("every 16-bit value")
	}
	var cases []opCase
	for _, nk := range []ir.ElemKind{ir.BF16, ir.F16} {
		values := make([]float64, 1<<16)
		for b := range values {
			values[b], _ = numeric.FromBits(uint64(b), nk)
		}
		for _, op := range []string{"exp", "sigmoid", "silu"} {
			cases = append(cases, opCase{op: op, in: []ir.ElemKind{ir.F32}, out: ir.F32, narrow: nk, ulps: 1, n: 1 << 16, values: values})
		}
	}
	checkOps(t, cases)
}

func TestCasts(t *testing.T) {
	kinds := []ir.ElemKind{ir.F64, ir.F32, ir.F16, ir.BF16, ir.F8E4M3FN, ir.F8E5M2,
		ir.I1, ir.I8, ir.I16, ir.I32, ir.I64, ir.UI8, ir.UI16, ir.UI32}
	var cases []opCase
	for _, a := range kinds {
		for _, b := range kinds {
			if a != b {
				cases = append(cases, opCase{op: "cast", in: []ir.ElemKind{a}, out: b})
			}
		}
	}
	checkOps(t, cases)
}

// TestReductions checks loop.reduce of 8 lanes against reduce_* over the
// last axis: a float sum adds the lanes in order, as the interpreter does.
func TestReductions(t *testing.T) {
	type red struct {
		kind, graphOp string
		elem          ir.ElemKind
	}
	var cases []red
	for _, k := range []ir.ElemKind{ir.F32, ir.F64, ir.I32, ir.UI8, ir.I64} {
		for _, kind := range []string{"add", "max", "min"} {
			cases = append(cases, red{kind, map[string]string{"add": "reduce_sum", "max": "reduce_max", "min": "reduce_min"}[kind], k})
		}
	}
	var mod, fargs, launches strings.Builder
	var outs []string
	var inputs, wants []*eval.Tensor
	for i, c := range cases {
		in := fmt.Sprintf("memref<16x8x%s, dram>", c.elem)
		out := fmt.Sprintf("memref<16x%s, dram>", c.elem)
		fmt.Fprintf(&mod, `loop.kernel {kind = "row", num_inputs = 1, num_outputs = 1, sym_name = "r%d"} {
^bb0(%%x: %s, %%y: %s):
  %%c0 = loop.const {value = 0} : index
  %%c1 = loop.const {value = 1} : index
  %%c16 = loop.const {value = 16} : index
  loop.parallel %%c0, %%c16, %%c1 {dist = "grid"} {
  ^bb0(%%r: index):
    %%v = loop.load %%x, %%r, %%c0 : (%s, index, index) -> vector<8x%s>
    %%s = loop.reduce %%v {kind = %q} : (vector<8x%s>) -> %s
    loop.store %%s, %%y, %%r : (%s, %s, index) -> ()
    loop.yield
  } : (index, index, index) -> ()
  loop.return
}
`, i, in, out, in, c.elem, c.kind, c.elem, c.elem, c.elem, out)
		fmt.Fprintf(&fargs, "%%x%d: %s, ", i, in)
		outs = append(outs, fmt.Sprintf("%%y%d: %s", i, out))
		fmt.Fprintf(&launches, "  loop.launch %%x%d, %%y%d {kernel = \"r%d\"} : (%s, %s) -> ()\n", i, i, i, in, out)

		ref := fmt.Sprintf("func.func @ref(%%x: tensor<16x8x%s>) -> tensor<16x%s> {\n  %%r = graph.%s %%x {axes = [-1]} : (tensor<16x8x%s>) -> tensor<16x%s>\n  return %%r : tensor<16x%s>\n}\n",
			c.elem, c.elem, c.graphOp, c.elem, c.elem, c.elem)
		rm, err := parser.Parse("ref.tir", ref)
		require.NoError(t, err, ref)
		x, err := eval.ExtremeInputs(rm.Funcs()[0], int64(i))
		require.NoError(t, err)
		sanitize(x)
		if c.elem.IsInt() && c.kind == "add" {
			// keep integer sums exact in the float64 the tensors hold
			for j, v := range x[0].Data {
				x[0].Data[j] = math.Mod(v, 1<<40)
			}
		}
		want, err := eval.Run(rm.Funcs()[0], x, eval.Options{})
		require.NoError(t, err)
		inputs = append(inputs, x[0])
		wants = append(wants, want[0])
	}
	text := fmt.Sprintf("func.func @all(%s%s) attributes {num_results = %d} {\n%s  return\n}\n%s",
		fargs.String(), strings.Join(outs, ", "), len(outs), launches.String(), mod.String())
	m, err := parser.Parse("red.tir", text)
	require.NoError(t, err)
	require.NoError(t, ir.Verify(m.Operation))
	p, err := cpurt.Compile(m, "all")
	require.NoError(t, err)
	defer p.Close()
	got, err := p.Run(inputs)
	require.NoError(t, err)
	for i, c := range cases {
		for r := range wants[i].Data {
			w, g := wants[i].Data[r], got[i].Data[r]
			require.Zero(t, numeric.ULPDiff(w, g, c.elem), "%s %s row %d %v: got %v want %v", c.kind, c.elem, r, inputs[i].Data[r*8:r*8+8], g, w)
		}
	}
}

// TestNarrowingManyFloats rounds a million f32 bit patterns of every
// exponent, and the special ones, to bf16, f16 and the f8 formats.
func TestNarrowingManyFloats(t *testing.T) {
	const n = 1 << 20
	values := make([]float64, n)
	s := uint32(12345)
	for i := range values {
		// xorshift: every sign, exponent and mantissa
		s ^= s << 13
		s ^= s >> 17
		s ^= s << 5
		values[i] = float64(math.Float32frombits(s))
	}
	specials := []uint32{0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFF800001, 0x7F7FFFFF,
		0x7F7F8000, 0x7F7F7FFF, 0x00000001, 0x007FFFFF, 0x00800000, 0x3F808000, 0x3F818000, 0x477FF000, 0x477FEFFF}
	for i, b := range specials {
		values[i] = float64(math.Float32frombits(b))
	}
	var cases []opCase
	for _, k := range []ir.ElemKind{ir.BF16, ir.F16, ir.F8E4M3FN, ir.F8E5M2} {
		cases = append(cases, opCase{op: "cast", in: []ir.ElemKind{ir.F32}, out: k, n: n, values: values})
	}
	checkOps(t, cases)
}
