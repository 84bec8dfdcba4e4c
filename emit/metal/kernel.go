package metal

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
)

// This file writes one loop.kernel as a Metal kernel function:
//
//	[[kernel]] void rms_k0(
//	    const device bfloat* x [[buffer(0)]],
//	    device bfloat* y [[buffer(1)]],
//	    constant uint& rows [[buffer(2)]],
//	    uint gid [[threadgroup_position_in_grid]],
//	    uint lid [[thread_position_in_threadgroup]],
//	    uint simd_lane [[thread_index_in_simdgroup]],
//	    uint simd_id [[simdgroup_index_in_threadgroup]],
//	    uint tg_size [[threads_per_threadgroup]]) {
//	  threadgroup float partial[32];
//	  const uint r = gid;
//	  float acc[8];
//	  for (uint l = 0; l < 8; ++l) acc[l] = 0.0f;
//	  for (uint i = lid * 8; i < 4096; i += tg_size * 8) {
//	    ...
//	  }
//	  float t3 = acc[0];
//	  for (uint l = 1; l < 8; ++l) t3 += acc[l];
//	  t3 = simd_sum(t3);
//	  ...
//	}
//
// Every SSA value becomes a C variable: a scalar, or a thread array of
// its lanes (`float t5[8]`) computed one lane at a time, which is what
// an Apple GPU does with a vector anyway; constants and broadcasts stay
// scalar expressions. Loads and stores of device memory move four (or
// two) lanes at a time as bfloat4, half4 or float4 where the element
// offset is known to be a multiple of four. Code outside the threads
// loops runs in every thread alike (each computes the row's scalars);
// its stores are made by thread 0 only.

// val is how a kernel refers to an SSA value.
type val struct {
	expr  string // a scalar, or every lane of a splat vector
	array string // the thread array holding a vector's lanes
	width int64
	kind  ir.ElemKind
}

// lane is the expression of lane l ("" for a scalar).
func (v val) lane(l string) string {
	if v.array != "" {
		return v.array + "[" + l + "]"
	}
	return v.expr
}

// sramBuf is a loop.alloc: a window of the threadgroup array.
type sramBuf struct {
	array string // "sram" or "sram.f32"
	base  int64  // first element
}

// kernelEmitter writes one kernel.
type kernelEmitter struct {
	p       *kernelPlan
	t       *target.Target
	name    string
	names   *namer
	vals    map[*ir.Value]val
	sram    map[*ir.Value]sramBuf
	params  map[*ir.Value]string
	helpers helperSet
	divs    map[*ir.Value]int64

	sb     strings.Builder
	indent int
	temps  int

	// tid and nth name this thread's place among the threads working on
	// the row and their number; guard is the condition of a store made
	// once per row; work prefixes the condition of a threads loop.
	tid, nth, guard, work string
	// partialUsed: a combine has exchanged through partial[], so the next
	// waits until every thread has read it.
	partialUsed bool
	// sramWritten, sramRead: threadgroup memory touched since the last
	// barrier.
	sramWritten, sramRead bool
	// offsets are the named offsets of the enclosing C blocks.
	offsets []map[string]string
}

func newKernelEmitter(p *kernelPlan, t *target.Target, name string, hs helperSet) *kernelEmitter {
	ke := &kernelEmitter{p: p, t: t, name: name, names: newNamer(name), vals: map[*ir.Value]val{},
		sram: map[*ir.Value]sramBuf{}, params: map[*ir.Value]string{}, helpers: hs, divs: map[*ir.Value]int64{},
		offsets: []map[string]string{{}}}
	for i, a := range p.body.Args {
		base := a.Name
		if base == "" {
			base = fmt.Sprintf("arg%d", i)
		}
		ke.params[a] = ke.names.fresh(base)
		if i >= len(p.ins)+len(p.outs) {
			ke.vals[a] = val{expr: ke.params[a], kind: ir.Index}
		}
	}
	return ke
}

// fail stops the emission with an error at op.
func fail(op *ir.Operation, format string, args ...any) {
	panic(emitError{ir.OpError(op, format, args...)})
}

type emitError struct{ err error }

// line writes one line of code at the current indentation.
func (ke *kernelEmitter) line(format string, args ...any) {
	ke.sb.WriteString(strings.Repeat("  ", ke.indent))
	fmt.Fprintf(&ke.sb, format, args...)
	ke.sb.WriteByte('\n')
}

// valueName is a fresh C name for SSA value v: its IR name, or t<N>.
func (ke *kernelEmitter) valueName(v *ir.Value) string {
	if v.Name != "" {
		return ke.names.fresh(v.Name)
	}
	ke.temps++
	return ke.names.fresh("t" + strconv.Itoa(ke.temps-1))
}

// get returns how to refer to v; constants are spelled where used.
func (ke *kernelEmitter) get(v *ir.Value) val {
	if x, ok := ke.vals[v]; ok {
		return x
	}
	if c, ok := loop.AsConst(v.DefiningOp()); ok {
		k := elemKind(v.Type())
		x := val{expr: literal(k, c.Value()), width: width(v.Type()), kind: k}
		ke.vals[v] = x
		return x
	}
	panic(emitError{fmt.Errorf("internal error in the Metal emitter: %s is used before it is computed", v)})
}

// define computes result res lane by lane: `const float t4 = ...;` or
// `float t4[8]; for (...) t4[l] = ...;`.
func (ke *kernelEmitter) define(res *ir.Value, lane func(l string) string) val {
	k, w := elemKind(res.Type()), width(res.Type())
	name := ke.valueName(res)
	v := val{width: w, kind: k}
	if w == 0 {
		ke.line("const %s %s = %s;", metalType(k), name, lane(""))
		v.expr = name
	} else {
		ke.line("%s %s[%d];", metalType(k), name, w)
		ke.line("for (uint l = 0; l < %d; ++l) %s[l] = %s;", w, name, lane("l"))
		v.array = name
	}
	ke.vals[res] = v
	return v
}

// emit writes the kernel function; body is its code without the
// signature, which the MLX form of the kernel reuses.
func (ke *kernelEmitter) emit() (fn, body string) {
	p := ke.p
	ke.indent = 1
	ke.declareThreadgroupMemory()
	for op := p.body.First(); op != p.grid.Operation; op = op.Next() {
		if isIndexArith(op.Name()) {
			ke.emitIndexArith(op)
		}
	}
	if p.mm != nil {
		ke.emitMatMul()
	} else {
		ke.emitGridPrologue()
		ke.emitGridBody()
	}
	body = ke.sb.String()

	var sb strings.Builder
	sb.WriteString(ke.comment())
	fmt.Fprintf(&sb, "[[kernel]] void %s(\n", ke.name)
	params := ke.signature()
	for i, prm := range params {
		sep := ","
		if i == len(params)-1 {
			sep = ") {"
		}
		fmt.Fprintf(&sb, "    %s%s\n", prm, sep)
	}
	sb.WriteString(body)
	sb.WriteString("}\n")
	return sb.String(), body
}

// signature lists the parameters: buffers, extents, built-ins.
func (ke *kernelEmitter) signature() []string {
	var out []string
	for i, prm := range ke.paramInfo() {
		switch prm.Kind {
		case "builtin":
			out = append(out, fmt.Sprintf("%s %s [[%s]]", prm.Type, prm.Name, prm.Attribute))
		default:
			out = append(out, fmt.Sprintf("%s %s [[buffer(%d)]]", prm.Type, prm.Name, i))
		}
	}
	return out
}

// paramInfo describes the parameters in declaration order.
func (ke *kernelEmitter) paramInfo() []Param {
	p := ke.p
	var out []Param
	for i, a := range p.body.Args {
		idx := i
		switch {
		case i < len(p.ins):
			k := elemKind(a.Type())
			out = append(out, Param{Name: ke.params[a], Kind: "buffer", Type: "const device " + metalType(k) + "*",
				Index: &idx, Access: "read", DType: dtypeName(k)})
		case i < len(p.ins)+len(p.outs):
			k := elemKind(a.Type())
			out = append(out, Param{Name: ke.params[a], Kind: "buffer", Type: "device " + metalType(k) + "*",
				Index: &idx, Access: "write", DType: dtypeName(k)})
		default:
			out = append(out, Param{Name: ke.params[a], Kind: "extent", Type: "constant uint&", Index: &idx})
		}
	}
	builtins := [][2]string{
		{"gid", "threadgroup_position_in_grid"},
		{"lid", "thread_position_in_threadgroup"},
		{"simd_lane", "thread_index_in_simdgroup"},
		{"simd_id", "simdgroup_index_in_threadgroup"},
		{"tg_size", "threads_per_threadgroup"},
	}
	if p.chunked {
		builtins = append(builtins, [2]string{"ngroups", "threadgroups_per_grid"})
	}
	for _, b := range builtins {
		out = append(out, Param{Name: b[0], Kind: "builtin", Type: "uint", Attribute: b[1]})
	}
	return out
}

// comment describes the kernel above its function.
func (ke *kernelEmitter) comment() string {
	p := ke.p
	var lines []string
	kind := p.k.Kind()
	switch kind {
	case "row":
		s := "a row reduction: one threadgroup per row"
		if n, ok := p.k.RowLen(); ok {
			s += fmt.Sprintf(" of %d", n)
		}
		sched, _ := p.k.Schedule()
		switch {
		case sched == "one-pass" && len(p.allocs) > 0:
			s += ", kept in threadgroup memory between its loops (one-pass)"
		case sched == "two-pass":
			s += ", read from device memory again by its second loop (two-pass)"
		}
		lines = append(lines, s+".")
	case "elementwise":
		lines = append(lines, "element-wise: the threads of a row's threadgroups stride along it.")
	case "matmul":
		if mp := p.mm; mp != nil {
			lines = append(lines, fmt.Sprintf("a tiled matmul of %d dot product(s) over K = %d: a %d x %d tile of the result per threadgroup,", len(mp.rhs), mp.K, mmTile, mmTile),
				fmt.Sprintf("a %d x %d quarter of it per simdgroup in simdgroup_float8x8 blocks (f32 multiply-accumulate),", mmQuarter, mmQuarter),
				"A and B staged in threadgroup memory as float; then the epilogue on each element of the tile.")
			break
		}
		lines = append(lines, "one threadgroup per output row; the threads share the elements of a row.",
			"A matmul in the generic form: "+p.untiled+".")
	default:
		lines = append(lines, "one threadgroup per output row; the threads share the elements of a row.")
	}
	switch p.mode {
	case modeThreadgroup:
		lines = append(lines, "Reductions: simd_sum (simd_max) in each simdgroup, then across them through partial[].")
	case modeSimdgroup:
		lines = append(lines, fmt.Sprintf("Its %d bytes of sram leave no threadgroup memory to combine simdgroups:", p.sramBytes),
			"one simdgroup (32 threads) works, the others only pass the barriers.")
	}
	if p.chunked {
		lines = append(lines, "A row may take several threadgroups: ngroups is a multiple of the rows.")
	}
	if p.tgBytes > 0 {
		lines = append(lines, fmt.Sprintf("Threadgroup memory: %d bytes.", p.tgBytes))
	}
	var sb strings.Builder
	sb.WriteString("\n// " + ke.name + ": " + lines[0] + "\n")
	for _, l := range lines[1:] {
		sb.WriteString("// " + l + "\n")
	}
	return sb.String()
}

// declareThreadgroupMemory declares the combine buffers and the sram
// array at the kernel's outermost scope, as Metal requires.
func (ke *kernelEmitter) declareThreadgroupMemory() {
	p := ke.p
	if p.mode == modeThreadgroup {
		for _, k := range p.partialKinds {
			n := p.partialSlots[k] * 32
			ke.line("threadgroup %s %s[%d];", metalType(k), partialName(k), n)
		}
	}
	if len(p.allocs) == 0 {
		return
	}
	switch len(p.sramKinds) {
	case 1:
		k := p.sramKinds[0]
		ke.line("threadgroup %s sram[%d];", metalType(k), p.sramBytes/k.ByteSize())
	default:
		// buffers of several types share the bytes sram-alloc planned
		ke.line("threadgroup union {")
		done := map[string]bool{}
		for _, k := range p.sramKinds {
			m := unionMember(k)
			if !done[m] {
				done[m] = true
				ke.line("  %s %s[%d];", metalType(k), m, p.sramBytes/k.ByteSize())
			}
		}
		ke.line("} sram;")
	}
	for _, a := range p.allocs {
		m := a.Output().Type().(ir.MemRefType)
		off, _ := a.Offset()
		arr := "sram"
		if len(p.sramKinds) > 1 {
			arr = "sram." + unionMember(m.Elem.Kind)
		}
		ke.sram[a.Output()] = sramBuf{array: arr, base: off / m.Elem.Kind.ByteSize()}
	}
}

// partialName is the combine buffer of element kind k.
func partialName(k ir.ElemKind) string {
	if k == ir.F32 {
		return "partial"
	}
	return "partial_" + metalType(k)
}

// unionMember names the view of the sram array for element kind k.
func unionMember(k ir.ElemKind) string {
	switch metalType(k) {
	case "float":
		return "f32"
	case "half":
		return "f16"
	case "bfloat":
		return "bf16"
	case "uchar":
		return "u8"
	case "char":
		return "i8"
	case "short":
		return "i16"
	case "ushort":
		return "u16"
	case "int":
		return "i32"
	case "uint":
		return "u32"
	case "long":
		return "i64"
	}
	return "b1"
}

// emitIndexArith writes index arithmetic: `const uint t2 = r % rows;`.
func (ke *kernelEmitter) emitIndexArith(op *ir.Operation) {
	a, b := ke.get(op.Operand(0)).expr, ke.get(op.Operand(1)).expr
	var e string
	switch op.Name() {
	case loop.OpAddi:
		e = a + " + " + b
	case loop.OpSubi:
		e = a + " - " + b
	case loop.OpMuli:
		e = a + " * " + b
	case loop.OpDivi:
		e = a + " / " + b
	case loop.OpRemi:
		e = a + " % " + b
	case loop.OpMini:
		// (both uint: an integer literal beside a uint matches no overload)
		e = "metal::min(uint(" + a + "), uint(" + b + "))"
	}
	name := ke.valueName(op.Result(0))
	ke.line("const uint %s = %s;", name, e)
	ke.vals[op.Result(0)] = val{expr: name, kind: ir.Index}
}

// emitClampIndex writes `loop.clamp_index %t, %n` in 64 bits, so that no
// index wraps before it is clamped: `const uint j = uint(metal::max(metal::min(long(t), long(n) - 1), long(0)));`.
func (ke *kernelEmitter) emitClampIndex(op *ir.Operation) {
	t, n := ke.get(op.Operand(0)).expr, ke.get(op.Operand(1)).expr
	name := ke.valueName(op.Result(0))
	ke.line("const uint %s = uint(metal::max(metal::min(long(%s), long(%s) - 1), long(0)));", name, t, n)
	ke.vals[op.Result(0)] = val{expr: name, kind: ir.Index}
}

// cExpr is index value v as an expression over the kernel's C names.
func (ke *kernelEmitter) cExpr(v *ir.Value) *expr {
	if c, ok := loop.AsConst(v.DefiningOp()); ok {
		return cst(int64(c.Value()))
	}
	return vr(ke.get(v).expr)
}

// emitGridPrologue binds the row of this threadgroup and the threads
// that work on it.
func (ke *kernelEmitter) emitGridPrologue() {
	p := ke.p
	g := p.grid
	lb, step := ke.cExpr(g.Lower()), ke.cExpr(g.Step())
	iv := g.Body().Entry().Args[0]
	r := ke.valueName(iv)
	ke.vals[iv] = val{expr: r, kind: ir.Index}
	ke.tid, ke.nth, ke.guard = "lid", "tg_size", "lid == 0"
	switch {
	case p.chunked:
		instances := ceilDiv(bin("-", ke.cExpr(g.Upper()), lb), step)
		ke.line("// the threadgroups of the grid share the rows: ngroups / %s each", parenthesize(instances))
		ke.line("const uint chunks = %s;", bin("/", vr("ngroups"), instances))
		ke.line("const uint %s = %s;", r, bin("+", lb, bin("*", vr("gid / chunks"), step)))
		ke.line("const uint tid = gid %% chunks * tg_size + lid;")
		ke.line("const uint nthreads = chunks * tg_size;")
		ke.tid, ke.nth, ke.guard = "tid", "nthreads", "tid == 0"
	default:
		ke.line("const uint %s = %s;", r, bin("+", lb, bin("*", vr("gid"), step)))
	}
	if p.mode == modeSimdgroup {
		ke.line("// one simdgroup works on the row")
		ke.line("const uint nthr = metal::min(tg_size, 32u);")
		ke.line("const bool worker = simd_id == 0;")
		ke.nth, ke.work = "nthr", "worker && "
	}
}

// parenthesize wraps a compound expression in parentheses.
func parenthesize(e *expr) string {
	if e.op == "const" || e.op == "var" || e.op == "min" || e.op == "max" {
		return e.String()
	}
	return "(" + e.String() + ")"
}

// emitGridBody writes the iteration of the grid, with the barriers its
// uses of threadgroup memory need between the loops.
func (ke *kernelEmitter) emitGridBody() {
	for op := ke.p.gridBody.First(); op != nil; op = op.Next() {
		if op.Name() == loop.OpYield {
			continue
		}
		if len(ke.p.allocs) > 0 {
			reads, writes := ke.sramAccess(op)
			switch {
			case reads && ke.sramWritten:
				ke.barrier("wait for the other threads' writes to threadgroup memory")
			case writes && (ke.sramWritten || ke.sramRead):
				ke.barrier("wait until every thread is done with threadgroup memory before it is overwritten")
			}
			ke.sramRead = ke.sramRead || reads
			ke.sramWritten = ke.sramWritten || writes
		}
		ke.emitOp(op, true)
	}
}

// barrier writes a threadgroup barrier, which also orders every access
// to threadgroup memory before it.
func (ke *kernelEmitter) barrier(why string) {
	if why != "" {
		ke.line("// %s", why)
	}
	ke.line("threadgroup_barrier(mem_flags::mem_threadgroup);")
	ke.sramWritten, ke.sramRead = false, false
}

// sramAccess reports whether op reads or writes threadgroup memory.
func (ke *kernelEmitter) sramAccess(op *ir.Operation) (reads, writes bool) {
	op.Walk(func(o *ir.Operation) bool {
		switch o.Name() {
		case loop.OpLoad:
			if _, ok := ke.sram[o.Operand(0)]; ok {
				reads = true
			}
		case loop.OpStore:
			if _, ok := ke.sram[o.Operand(1)]; ok {
				writes = true
			}
		}
		return true
	})
	return reads, writes
}

// emitOp writes one op of the grid; uniform is set where every thread
// runs the code alike (outside the distributed loops).
func (ke *kernelEmitter) emitOp(op *ir.Operation, uniform bool) {
	switch name := op.Name(); {
	case name == loop.OpConst, name == loop.OpAlloc:
		// spelled where used; declared with the threadgroup memory
	case name == loop.OpBroadcast:
		x := ke.get(op.Operand(0))
		ke.vals[op.Result(0)] = val{expr: x.expr, width: width(op.Result(0).Type()), kind: x.kind}
	case isIndexArith(name):
		ke.emitIndexArith(op)
	case name == loop.OpClampIndex:
		ke.emitClampIndex(op)
	case name == loop.OpLoad:
		l, _ := loop.AsLoad(op)
		ke.emitLoad(l)
	case name == loop.OpStore:
		s, _ := loop.AsStore(op)
		ke.emitStore(s, uniform)
	case name == loop.OpFor:
		f, _ := loop.AsFor(op)
		ke.emitFor(f, uniform)
	case name == loop.OpReduce:
		if !ke.p.folded[op] {
			r, _ := loop.AsReduce(op)
			ke.emitReduce(r)
		}
	case name == loop.OpYield:
	default:
		if op.Dialect() == "loop" && op.NumResults() == 1 && op.NumRegions() == 0 {
			ke.emitCompute(op)
			return
		}
		fail(op, "cannot be translated to Metal")
	}
}
