package tt

import (
	"fmt"
	"math"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/loop"
)

// This file writes the compute kernel: the sections of the kernel's
// statements, each
//
//	cb_wait_front(cb_x, 1);           // the tiles it reads for the first time
//	tile_regs_acquire();
//	copy_tile_to_dst_init_short(cb_x);
//	copy_tile(cb_x, 0, 0);            // leaves into DST
//	exp_tile_init();
//	exp_tile(0);                      // every SFPU op after its init
//	tile_regs_commit();
//	cb_pop_front(cb_x, 1);            // the tiles it reads for the last time
//	cb_reserve_back(cb_y, 1);
//	tile_regs_wait();
//	pack_tile(0, cb_y);
//	tile_regs_release();
//	cb_push_back(cb_y, 1);
//
// with the unpacker and packer data formats reconfigured where the
// circular buffer's format changes.

// sfpuUnary maps an op to its SFPU init, call and header.
var sfpuUnary = map[string]struct{ init, call, header string }{
	loop.OpNeg:        {"negative_tile_init", "negative_tile", "api/compute/eltwise_unary/negative.h"},
	loop.OpAbs:        {"abs_tile_init", "abs_tile", "api/compute/compute_kernel_api.h"},
	loop.OpExp:        {"exp_tile_init", "exp_tile", "api/compute/eltwise_unary/exp.h"},
	loop.OpExp2:       {"exp2_tile_init", "exp2_tile", "api/compute/compute_kernel_api.h"},
	loop.OpLog:        {"log_tile_init", "log_tile", "api/compute/compute_kernel_api.h"},
	loop.OpLog1p:      {"log1p_tile_init", "log1p_tile", "api/compute/eltwise_unary/log1p.h"},
	loop.OpExpm1:      {"expm1_tile_init", "expm1_tile", "api/compute/compute_kernel_api.h"},
	loop.OpSqrt:       {"sqrt_tile_init", "sqrt_tile", "api/compute/eltwise_unary/sqrt.h"},
	loop.OpRsqrt:      {"rsqrt_tile_init", "rsqrt_tile", "api/compute/eltwise_unary/rsqrt.h"},
	loop.OpReciprocal: {"recip_tile_init", "recip_tile", "api/compute/eltwise_unary/recip.h"},
	loop.OpTanh:       {"tanh_tile_init", "tanh_tile", "api/compute/compute_kernel_api.h"},
	loop.OpSigmoid:    {"sigmoid_tile_init", "sigmoid_tile", "api/compute/compute_kernel_api.h"},
	loop.OpSilu:       {"silu_tile_init", "silu_tile", "api/compute/compute_kernel_api.h"},
	loop.OpRelu:       {"relu_tile_init", "relu_tile", "api/compute/eltwise_unary/relu.h"},
	loop.OpSin:        {"sin_tile_init", "sin_tile", "api/compute/eltwise_unary/trigonometry.h"},
	loop.OpCos:        {"cos_tile_init", "cos_tile", "api/compute/eltwise_unary/trigonometry.h"},
	loop.OpFloor:      {"rounding_op_tile_init", "floor_tile", "api/compute/eltwise_unary/rounding.h"},
	loop.OpCeil:       {"rounding_op_tile_init", "ceil_tile", "api/compute/eltwise_unary/rounding.h"},
	"isnan":           {"isnan_tile_init", "isnan_tile", "api/compute/eltwise_unary/isinf_isnan.h"},
}

// sfpuBinary maps a binary op (or comparison) to its SFPU init and call.
var sfpuBinary = map[string]struct{ init, call, header string }{
	loop.OpAdd: {"add_binary_tile_init", "add_binary_tile", "api/compute/eltwise_binary_sfpu.h"},
	loop.OpSub: {"sub_binary_tile_init", "sub_binary_tile", "api/compute/eltwise_binary_sfpu.h"},
	loop.OpMul: {"mul_binary_tile_init", "mul_binary_tile", "api/compute/eltwise_binary_sfpu.h"},
	loop.OpDiv: {"div_binary_tile_init", "div_binary_tile", "api/compute/eltwise_binary_sfpu.h"},
	loop.OpPow: {"power_binary_tile_init", "power_binary_tile", "api/compute/eltwise_binary_sfpu.h"},
	loop.OpMax: {"binary_max_tile_init", "binary_max_tile", "api/compute/binary_max_min.h"},
	loop.OpMin: {"binary_min_tile_init", "binary_min_tile", "api/compute/binary_max_min.h"},
	"eq":       {"eq_binary_tile_init", "eq_binary_tile", "api/compute/eltwise_binary_sfpu.h"},
	"ne":       {"ne_binary_tile_init", "ne_binary_tile", "api/compute/eltwise_binary_sfpu.h"},
	"lt":       {"lt_binary_tile_init", "lt_binary_tile", "api/compute/eltwise_binary_sfpu.h"},
	"le":       {"le_binary_tile_init", "le_binary_tile", "api/compute/eltwise_binary_sfpu.h"},
	"gt":       {"gt_binary_tile_init", "gt_binary_tile", "api/compute/eltwise_binary_sfpu.h"},
	"ge":       {"ge_binary_tile_init", "ge_binary_tile", "api/compute/eltwise_binary_sfpu.h"},
}

// fpuBinary is the FPU call of add, sub and mul per broadcast form, and
// the short init before it.
func fpuBinary(op, form string) (call, init string) {
	name := map[string]string{loop.OpAdd: "add", loop.OpSub: "sub", loop.OpMul: "mul"}[op]
	switch form {
	case "plain":
		return name + "_tiles", name + "_tiles_init"
	case "rows":
		return name + "_tiles_bcast_rows", name + "_bcast_rows_init_short"
	case "cols":
		return name + "_tiles_bcast_cols", name + "_bcast_cols_init_short"
	}
	// scalar: tt-metal spells the inits of sub and mul differently from add
	init = name + "_tiles_bcast_scalar_init_short"
	if name == "add" {
		init = "add_bcast_scalar_init_short"
	}
	return name + "_tiles_bcast_scalar", init
}

// fmtState is what the unpacker's srcA, srcB and the packer are
// configured for (known false: unknown, after a loop or a branch), and
// whether the math engine's INT8 mode is on.
type fmtState struct {
	a, b, pack format
	knownA     bool
	knownB     bool
	knownPack  bool
	// int8 is the math engine's INT8 mode: on while srcA is configured
	// for UInt8. Only a reconfiguration with to_from_int8 = true (or
	// compute_kernel_hw_startup) switches it, so in a kernel with UInt8
	// tiles every reconfiguration passes true, and the float ops that
	// configure the unpacker themselves (unary_bcast) switch it off first.
	int8, knownInt8 bool
}

// computeGen writes the compute kernel.
type computeGen struct {
	g    *kgen
	w    cppWriter
	inc  includes
	fs   fmtState
	free [dstTiles]bool
	ocb  *cbuf // the first destination of the section being written
	// hasInt: the kernel has UInt8 circular buffers, so reconfigurations
	// switch the INT8 mode too (to_from_int8 = true).
	hasInt bool
}

func (c *computeGen) forget() { c.fs = fmtState{} }

// int8Arg is the to_from_int8 template argument of the reconfigurations.
func (c *computeGen) int8Arg() string {
	if c.hasInt {
		return "<true>"
	}
	return ""
}

// int8Stale reports whether the INT8 mode may differ from what a tile of
// format f needs.
func (c *computeGen) int8Stale(f format) bool {
	return c.hasInt && (!c.fs.knownInt8 || c.fs.int8 != f.isInt())
}

func (c *computeGen) needA(cb *cbuf) {
	if !c.fs.knownA || c.fs.a != cb.fmt || c.int8Stale(cb.fmt) {
		c.w.line("reconfig_data_format_srca%s(%s);", c.int8Arg(), cb.name)
		c.fs.a, c.fs.knownA = cb.fmt, true
		c.fs.int8, c.fs.knownInt8 = cb.fmt.isInt(), true
	}
}

func (c *computeGen) needAB(a, b *cbuf) {
	if !c.fs.knownA || c.fs.a != a.fmt || !c.fs.knownB || c.fs.b != b.fmt || c.int8Stale(a.fmt) {
		c.w.line("reconfig_data_format%s(%s, %s);", c.int8Arg(), a.name, b.name)
		c.fs.a, c.fs.b, c.fs.knownA, c.fs.knownB = a.fmt, b.fmt, true, true
		c.fs.int8, c.fs.knownInt8 = a.fmt.isInt(), true
	}
}

func (c *computeGen) needPack(cb *cbuf) {
	if !c.fs.knownPack || c.fs.pack != cb.fmt {
		c.w.line("pack_reconfig_data_format(%s);", cb.name)
		c.fs.pack, c.fs.knownPack = cb.fmt, true
	}
}

// alloc takes the lowest free DST tile.
func (c *computeGen) alloc() int {
	for i, used := range c.free {
		if !used {
			c.free[i] = true
			return i
		}
	}
	panic(internalBail{c.g.errorf(nil, "ran out of DST tiles")})
}

func (c *computeGen) release(i int) { c.free[i] = false }

// writeCompute writes the compute kernel of g.
func writeCompute(g *kgen) string {
	c := &computeGen{g: g, inc: includes{
		"api/compute/common.h": true, "api/compute/compute_kernel_hw_startup.h": true, "api/compute/cb_api.h": true,
		"api/compute/reg_api.h": true, "api/compute/pack.h": true, "api/compute/reconfig_data_format.h": true,
	}}
	for _, cb := range g.cbs {
		c.hasInt = c.hasInt || cb.fmt.isInt()
	}
	if g.mm != nil {
		c.inc["api/compute/matmul.h"] = true
	}
	body := &computeGen{g: g, inc: c.inc, hasInt: c.hasInt}
	body.w.indent = 2
	for _, s := range g.body {
		body.stmt(s)
	}

	w := &c.w
	header(w, "Compute kernel", g.name, g)
	c.inc.write(w)
	w.line("")
	w.open("void kernel_main()")
	w.line("const uint32_t num_units = get_arg_val<uint32_t>(0);  // the work units of this core")
	w.line("const uint32_t Ct = get_arg_val<uint32_t>(1);         // column tiles per row")
	if !usesCt(g.body) {
		w.line("(void)Ct;")
	}
	w.line("")
	for _, cb := range g.cbs {
		w.line("constexpr uint32_t %s = tt::CBIndex::c_%d;  // %s", cb.name, cb.index, cb.purpose)
	}
	w.line("")
	first, last := g.cbs[0], g.cbs[len(g.cbs)-1]
	w.line("compute_kernel_hw_startup(%s, %s, %s);", first.name, first.name, last.name)
	if g.mm != nil {
		d := g.mm.dots[0]
		w.line("mm_init(%s, %s, %s, %d);  // srcA and srcB for A and B, the packer for the result; B %s", g.mm.cbA.name, d.cbB.name, last.name, transposeArg(g.mm), transposeWord(g.mm))
	}
	if g.scaler != nil {
		w.line("cb_wait_front(%s, 1);  // from the reader, for the whole kernel", g.scaler.name)
	}
	if g.mask != nil {
		w.line("cb_wait_front(%s, 1);  // from the reader, for the whole kernel", g.mask.name)
	}
	w.open("for (uint32_t unit = 0; unit < num_units; ++unit)")
	w.sb.WriteString(body.w.String())
	w.close()
	if g.scaler != nil {
		w.line("cb_pop_front(%s, 1);", g.scaler.name)
	}
	if g.mask != nil {
		w.line("cb_pop_front(%s, 1);", g.mask.name)
	}
	w.close()
	return w.String()
}

// usesCt reports whether the compute kernel loops over column tiles or
// masks the last one.
func usesCt(stmts []stmt) bool {
	for _, s := range stmts {
		switch s := s.(type) {
		case *loopStmt:
			if strings.Contains(s.header(), "Ct") {
				return true
			}
		case *sectionStmt:
			if hasMask(s.tree) {
				return true
			}
		case *cbStmt:
			for _, op := range s.ops {
				if op.n == "Ct" {
					return true
				}
			}
		}
	}
	return false
}

func hasMask(n *node) bool {
	if n.kind == nMask {
		return true
	}
	for _, a := range n.args {
		if hasMask(a) {
			return true
		}
	}
	return false
}

func (c *computeGen) cbOps(ops []cbOp) {
	for _, op := range ops {
		if op.pop {
			c.w.line("cb_pop_front(%s, %s);", op.cb.name, op.n)
		} else {
			c.w.line("cb_wait_front(%s, %s);", op.cb.name, op.n)
		}
	}
}

func (c *computeGen) stmt(s stmt) {
	w := &c.w
	switch s := s.(type) {
	case *loopStmt:
		if s.kt > 0 {
			return // the loop over K is written in the matmul's section
		}
		c.cbOps(s.before)
		w.open("%s", s.header())
		c.forget()
		for _, t := range s.body {
			c.stmt(t)
		}
		w.close()
		c.forget()
		c.cbOps(s.after)
	case *cbStmt:
		w.line("// %s", s.comment)
		c.cbOps(s.ops)
	case *sectionStmt:
		c.section(s)
	}
}

// section writes one acquire ... release.
func (c *computeGen) section(s *sectionStmt) {
	w := &c.w
	w.line("// %s -> %s", s.comment, destNames(s.dests))
	c.cbOps(s.waits)
	w.line("tile_regs_acquire();")
	c.ocb = s.dests[0]
	if s.mm != nil {
		c.matmul(s)
	}
	slot := c.eval(s.tree, s.tree.cls)
	w.line("tile_regs_commit();")
	c.cbOps(s.pops)
	for _, d := range s.dests {
		w.line("cb_reserve_back(%s, 1);", d.name)
	}
	w.line("tile_regs_wait();")
	for _, d := range s.dests {
		c.needPack(d)
		w.line("pack_tile(%d, %s);", slot, d.name)
	}
	w.line("tile_regs_release();")
	for _, d := range s.dests {
		w.line("cb_push_back(%s, 1);", d.name)
	}
	c.release(slot)
}

func destNames(ds []*cbuf) string {
	s := ""
	for i, d := range ds {
		if i > 0 {
			s += ", "
		}
		s += d.name
	}
	return s
}

// bcastFor is the broadcast that makes a tile of class from fill one of
// class to.
func bcastFor(from, to class) string {
	if from == to || from == clsConst || from == clsFull {
		return ""
	}
	switch from {
	case clsScalar:
		return "SCALAR"
	case clsRow:
		return "ROW"
	}
	return "COL"
}

// eval writes the evaluation of n into a DST tile, for an op of class ctx,
// and returns the tile.
func (c *computeGen) eval(n *node, ctx class) int {
	w := &c.w
	switch n.kind {
	case nLeaf:
		s := c.alloc()
		if b := bcastFor(n.cls, ctx); b != "" {
			c.inc["api/compute/bcast.h"] = true
			if c.int8Stale(n.leaf.cb.fmt) {
				// unary_bcast_init configures the unpacker's formats but
				// not the INT8 mode a UInt8 tile left on
				c.needA(n.leaf.cb)
			}
			w.line("unary_bcast_init<BroadcastType::%s>(%s, %s);", b, n.leaf.cb.name, c.ocb.name)
			c.fs.a, c.fs.b, c.fs.knownA, c.fs.knownB = n.leaf.cb.fmt, n.leaf.cb.fmt, true, true
			c.fs.pack, c.fs.knownPack = c.ocb.fmt, true
			w.line("unary_bcast<BroadcastType::%s>(%s, %s, %d);", b, n.leaf.cb.name, n.leaf.index, s)
			return s
		}
		c.inc["api/compute/tile_move_copy.h"] = true
		c.needA(n.leaf.cb)
		w.line("copy_tile_to_dst_init_short(%s);", n.leaf.cb.name)
		w.line("copy_tile(%s, %s, %d);", n.leaf.cb.name, n.leaf.index, s)
		return s
	case nConst:
		s := c.alloc()
		c.fill(s, n.c)
		return s
	case nReduce:
		return c.reduce(n)
	case nDot:
		return n.dot.slot
	case nMask:
		s := c.eval(n.args[0], ctx)
		m, id := c.alloc(), c.alloc()
		mask := c.g.mask
		c.inc["api/compute/tile_move_copy.h"] = true
		c.inc["api/compute/eltwise_unary/where.h"] = true
		w.open("if (ct + 1 == Ct)")
		w.line("// the last column tile: columns past the row's end hold %s", floatComment(n.c))
		saved := c.fs
		c.needA(mask)
		w.line("copy_tile_to_dst_init_short(%s);", mask.name)
		w.line("copy_tile(%s, 0, %d);", mask.name, m)
		c.fill(id, n.c)
		w.line("where_tile_init();")
		w.line("where_tile<DataFormat::Float32>(%d, %d, %d, %d);", m, s, id, s)
		w.close()
		c.fs = saved
		c.fs.knownA, c.fs.knownB, c.fs.knownInt8 = false, false, false
		c.release(m)
		c.release(id)
		return s
	}
	if n.op == "transpose" {
		// the unpacker transposes the faces and within them (a 32-bit tile
		// goes to DST unpacked, and DST transposes it)
		leaf := n.args[0].leaf
		s := c.alloc()
		c.inc["api/compute/transpose.h"] = true
		c.needA(leaf.cb)
		w.line("transpose_init(%s);", leaf.cb.name)
		w.line("transpose_tile(%s, %s, %d);", leaf.cb.name, leaf.index, s)
		return s
	}
	// element-wise ops
	if n.fpu != "" {
		s := c.alloc()
		a, b := n.args[0].leaf, n.args[1].leaf
		call, init := fpuBinary(n.op, n.fpu)
		if n.fpu == "plain" {
			c.inc["api/compute/eltwise_binary.h"] = true
		} else {
			c.inc["api/compute/bcast.h"] = true
		}
		c.needAB(a.cb, b.cb)
		w.line("%s(%s, %s);", init, a.cb.name, b.cb.name)
		w.line("%s(%s, %s, %s, %s, %d);", call, a.cb.name, b.cb.name, a.index, b.index, s)
		return s
	}
	if other, k, ok := scalarOperand(n); ok {
		s := c.eval(other, n.cls)
		bits, comment := floatBits(k), floatComment(k)
		if n.op == loop.OpPow {
			c.inc["api/compute/compute_kernel_api.h"] = true
			w.line("power_tile_init();")
			w.line("power_tile(%d, %s);  // ** %s", s, bits, comment)
			return s
		}
		fn := map[string]string{loop.OpAdd: "add_unary_tile", loop.OpSub: "sub_unary_tile", loop.OpMul: "mul_unary_tile", loop.OpDiv: "div_unary_tile"}[n.op]
		if n.op == loop.OpSub && n.args[0].kind == nConst {
			fn = "rsub_unary_tile" // c - x
		}
		c.inc["api/compute/eltwise_unary/binop_with_scalar.h"] = true
		w.line("binop_with_scalar_tile_init();")
		if n.op == loop.OpDiv {
			// div_unary_tile multiplies by its parameter, the reciprocal the
			// host computes; scalarOperand takes only divisors whose
			// reciprocal is exact, so the product is the quotient
			w.line("%s(%d, %s);  // / %s (times %s)", fn, s, floatBits(1/k), comment, floatComment(1/k))
			return s
		}
		w.line("%s(%d, %s);  // %s", fn, s, bits, comment)
		return s
	}
	switch n.op {
	case "typecast":
		s := c.eval(n.args[0], n.cls)
		c.inc["api/compute/eltwise_unary/typecast.h"] = true
		targs := fmt.Sprintf("(uint32_t)DataFormat::%s, (uint32_t)DataFormat::%s", n.castFrom, n.castTo)
		w.line("typecast_tile_init<%s>();", targs)
		w.line("typecast_tile<%s>(%d);", targs, s)
		return s
	case "isnan", "notnan":
		s := c.eval(n.args[0], n.cls)
		c.unary(sfpuUnary["isnan"], s)
		if n.op == "notnan" {
			c.inc["api/compute/eltwise_unary/binop_with_scalar.h"] = true
			w.line("binop_with_scalar_tile_init();")
			w.line("rsub_unary_tile(%d, %s);  // 1 - isnan", s, floatBits(1))
		}
		return s
	case loop.OpLog2:
		s := c.eval(n.args[0], n.cls)
		c.inc["api/compute/compute_kernel_api.h"] = true
		w.line("log_with_base_tile_init();")
		w.line("log_with_base_tile(%d, 0x3fb8aa3bu);  // 1/ln(2): log2", s)
		return s
	case loop.OpGelu:
		s := c.eval(n.args[0], n.cls)
		c.inc["api/compute/eltwise_unary/gelu.h"] = true
		w.line("gelu_tile_init<%t>();", n.approx)
		w.line("gelu_tile<%t>(%d);", n.approx, s)
		return s
	case loop.OpRound:
		s := c.eval(n.args[0], n.cls)
		c.inc["api/compute/eltwise_unary/rounding.h"] = true
		w.line("rounding_op_tile_init();")
		w.line("round_tile(%d, 0);", s)
		return s
	case loop.OpSelect:
		order := evalOrder(n.args)
		slots := make([]int, 3)
		for _, i := range order {
			slots[i] = c.eval(n.args[i], n.cls)
		}
		c.inc["api/compute/eltwise_unary/where.h"] = true
		w.line("where_tile_init();")
		w.line("where_tile<DataFormat::Float32>(%d, %d, %d, %d);", slots[0], slots[1], slots[2], slots[0])
		c.release(slots[1])
		c.release(slots[2])
		return slots[0]
	}
	if u, ok := sfpuUnary[n.op]; ok && len(n.args) == 1 {
		s := c.eval(n.args[0], n.cls)
		c.unary(u, s)
		return s
	}
	key := n.op
	if n.op == loop.OpCmp {
		key = n.pred
	}
	bin, ok := sfpuBinary[key]
	if !ok || len(n.args) != 2 {
		panic(internalBail{c.g.errorf(nil, "has an op the SFPU has no form for: %s", n.describe())})
	}
	order := evalOrder(n.args)
	slots := make([]int, 2)
	for _, i := range order {
		slots[i] = c.eval(n.args[i], n.cls)
	}
	c.inc[bin.header] = true
	w.line("%s();", bin.init)
	w.line("%s(%d, %d, %d);", bin.call, slots[0], slots[1], slots[0])
	c.release(slots[1])
	return slots[0]
}

// evalOrder evaluates the operands needing the most DST tiles first.
func evalOrder(args []*node) []int {
	order := make([]int, len(args))
	for i := range order {
		order[i] = i
	}
	for i := 0; i < len(order); i++ {
		for j := i + 1; j < len(order); j++ {
			if need(args[order[j]]) > need(args[order[i]]) {
				order[i], order[j] = order[j], order[i]
			}
		}
	}
	return order
}

func (c *computeGen) unary(u struct{ init, call, header string }, s int) {
	c.inc[u.header] = true
	c.w.line("%s();", u.init)
	c.w.line("%s(%d);", u.call, s)
}

// fill sets DST tile s to v (its f32 bits: exact for any value, infinities
// included).
func (c *computeGen) fill(s int, v float64) {
	c.inc["api/compute/eltwise_unary/fill.h"] = true
	c.w.line("fill_tile_init();")
	c.w.line("fill_tile_bitcast(%d, %s);  // %s", s, floatBits(v), floatComment(v))
}

// reduce writes reduce_tile of an accumulator tile over its row: the sum
// or the max of each row lands in column 0 (REDUCE_ROW), accumulated in
// f32; a min is -max of the negated values the accumulator holds.
func (c *computeGen) reduce(n *node) int {
	w := &c.w
	g := c.g
	s := c.alloc()
	pool := "SUM"
	if n.red != "add" {
		pool = "MAX"
		// the reduction accumulates into DST: start it at -inf
		c.fill(s, math.Inf(-1))
	}
	c.inc["api/compute/reduce.h"] = true
	c.needAB(n.leaf.cb, g.scaler)
	w.line("reduce_init<PoolType::%s, ReduceDim::REDUCE_ROW, true>(%s, %s, %s);", pool, n.leaf.cb.name, g.scaler.name, c.ocb.name)
	w.line("reduce_tile<PoolType::%s, ReduceDim::REDUCE_ROW, true>(%s, %s, %s, 0, %d);", pool, n.leaf.cb.name, g.scaler.name, n.leaf.index, s)
	w.line("reduce_uninit<true>(%s);", n.leaf.cb.name)
	if n.red == "min" {
		c.unary(sfpuUnary[loop.OpNeg], s)
	}
	return s
}

// String describes a cbOp for debugging.
func (o cbOp) String() string {
	if o.pop {
		return fmt.Sprintf("pop(%s, %s)", o.cb.name, o.n)
	}
	return fmt.Sprintf("wait(%s, %s)", o.cb.name, o.n)
}

// transposeArg is the transpose argument of mm_init and matmul_tiles: 1
// when B is read [..., N, K] (transpose_b), each of its tiles transposed.
func transposeArg(p *mmPlan) int {
	if p.transpose {
		return 1
	}
	return 0
}

func transposeWord(p *mmPlan) string {
	if p.transpose {
		return "tiles transposed (transpose_b)"
	}
	return "tiles as read"
}

// matmul writes the loop over K of a section's dot products: each
// accumulates in a DST tile of its own (zero after tile_regs_acquire),
// A's tile read once per step for all of them.
func (c *computeGen) matmul(s *sectionStmt) {
	w := &c.w
	p := s.mm
	for _, d := range p.dots {
		d.slot = c.alloc()
	}
	t := transposeArg(p)
	if hasLeafOrFPU(s.tree) {
		// the epilogue's copy_tile / unary_bcast of the last unit
		// configured the unpacker and the FPU for themselves
		w.line("mm_init_short(%s, %s, %d);", p.cbA.name, p.dots[0].cbB.name, t)
	}
	same := allSameFormat(p)
	if same {
		c.needAB(p.cbA, p.dots[0].cbB)
	} else {
		c.forget()
	}
	bTile := "(kt, ct)"
	if p.transpose {
		bTile = "(ct, kt)^T"
	}
	w.open("for (uint32_t kt = 0; kt < %d; ++kt)", p.kt)
	w.line("cb_wait_front(%s, 1);", p.cbA.name)
	for _, d := range p.dots {
		w.line("cb_wait_front(%s, 1);", d.cbB.name)
	}
	for _, d := range p.dots {
		if !same {
			c.needAB(p.cbA, d.cbB)
		}
		w.line("matmul_tiles(%s, %s, 0, 0, %d, %d);  // DST[%d] += A(rb, kt) * B%s", p.cbA.name, d.cbB.name, d.slot, t, d.slot, bTile)
	}
	for _, d := range p.dots {
		w.line("cb_pop_front(%s, 1);", d.cbB.name)
	}
	w.line("cb_pop_front(%s, 1);", p.cbA.name)
	w.close()
}

// hasLeafOrFPU reports whether evaluating n configures the unpacker for
// another op than matmul_tiles (copy_tile, unary_bcast).
func hasLeafOrFPU(n *node) bool {
	if n.kind == nLeaf || n.kind == nReduce || n.fpu != "" {
		return true
	}
	for _, a := range n.args {
		if hasLeafOrFPU(a) {
			return true
		}
	}
	return false
}

func allSameFormat(p *mmPlan) bool {
	for _, d := range p.dots {
		if d.cbB.fmt != p.dots[0].cbB.fmt {
			return false
		}
	}
	return true
}
