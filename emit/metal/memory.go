package metal

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// This file writes loads and stores. A device buffer is indexed
// row-major with 64-bit offsets (`size_t(r) * 8192 + i`), an sram buffer
// is a window of the threadgroup array. A vector of device memory moves
// as T4 (or T2) words when its first element's offset is known to be a
// multiple of 4 (or 2), so that each word is aligned as Metal requires:
//
//	bfloat x_1[8];
//	for (uint l = 0; l < 8; l += 4) {
//	  const bfloat4 q = *(const device bfloat4*)(x + at0 + l);
//	  x_1[l] = q[0]; x_1[l + 1] = q[1]; x_1[l + 2] = q[2]; x_1[l + 3] = q[3];
//	}
//
// What is known about an offset comes from the index arithmetic: loop
// induction variables start at and step by multiples of the vector width,
// and static extents are multiples of what they are (divisor).

// bufRef is a buffer as the kernel addresses it.
type bufRef struct {
	name    string // the parameter, or the sram array
	kind    ir.ElemKind
	shape   []int64
	extents []string // per dimension: the extent's C expression
	sram    bool
	base    int64 // sram: the window's first element
	output  bool
}

// buffer returns how to address memref m.
func (ke *kernelEmitter) buffer(m *ir.Value) bufRef {
	t := m.Type().(ir.MemRefType)
	b := bufRef{kind: t.Elem.Kind, shape: t.Shape}
	if s, ok := ke.sram[m]; ok {
		b.name, b.sram, b.base = s.array, true, s.base
	} else {
		name, ok := ke.params[m]
		if !ok {
			panic(emitError{fmt.Errorf("internal error in the Metal emitter: %s is not a buffer of the kernel", m)})
		}
		b.name = name
		for _, o := range ke.p.outs {
			b.output = b.output || o == m
		}
	}
	ext := ke.p.extentOf[m]
	for d, n := range t.Shape {
		switch {
		case n != ir.Dynamic:
			b.extents = append(b.extents, strconv.FormatInt(n, 10))
		case d < len(ext) && ext[d] != nil:
			b.extents = append(b.extents, ke.params[ext[d]])
		default:
			b.extents = append(b.extents, "0")
		}
	}
	return b
}

// divisor is the largest power of two index value v is known to be a
// multiple of (0: v is 0).
func (ke *kernelEmitter) divisor(v *ir.Value) int64 {
	if d, ok := ke.divs[v]; ok {
		return d
	}
	d := int64(1)
	if c, ok := loop.AsConst(v.DefiningOp()); ok {
		n := int64(c.Value())
		d = n & -n // the largest power of two dividing it
	} else if v.IsBlockArg() {
		owner := v.OwnerBlock().ParentOp()
		if (owner.Name() == loop.OpFor || owner.Name() == loop.OpParallel) && v == v.OwnerBlock().Args[0] {
			// lower + k * step, whichever thread runs iteration k
			d = gcdZ(ke.divisor(owner.Operand(0)), ke.divisor(owner.Operand(2)))
		}
	} else {
		op := v.DefiningOp()
		switch op.Name() {
		case loop.OpAddi, loop.OpSubi:
			d = gcdZ(ke.divisor(op.Operand(0)), ke.divisor(op.Operand(1)))
		case loop.OpMuli:
			d = mulZ(ke.divisor(op.Operand(0)), ke.divisor(op.Operand(1)))
		}
	}
	ke.divs[v] = d
	return d
}

// gcdZ is the gcd, where 0 (the value 0) is a multiple of anything.
func gcdZ(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// mulZ multiplies divisors (powers of two), keeping them below 2^20.
func mulZ(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	return min(a*b, 1<<20)
}

// offset is the element offset of idx in b, and what it is known to be
// a multiple of.
func (ke *kernelEmitter) offset(b bufRef, idx []*ir.Value) (string, int64) {
	off := ""
	div := int64(0)
	for d, iv := range idx {
		x := ke.get(iv).expr
		xd := ke.divisor(iv)
		if d > 0 {
			ext := b.extents[d]
			extDiv := int64(1)
			if b.shape[d] != ir.Dynamic {
				extDiv = b.shape[d] & -b.shape[d]
			}
			if off != "" {
				switch {
				case b.sram:
					off = off + " * " + ext
				case strings.ContainsAny(off, " "):
					off = "(" + off + ") * " + ext
				default:
					off = "size_t(" + off + ") * " + ext
				}
			}
			div = mulZ(div, extDiv)
		}
		div = gcdZ(div, xd)
		switch {
		case x == "0":
		case off == "":
			off = x
		default:
			off = off + " + " + x
		}
	}
	if b.sram && b.base != 0 {
		div = gcdZ(div, b.base&-b.base)
		if off == "" {
			off = strconv.FormatInt(b.base, 10)
		} else {
			off = strconv.FormatInt(b.base, 10) + " + " + off
		}
	}
	if off == "" {
		off = "0"
	}
	return off, div
}

// chunk is the lanes of the words a vector of w lanes at an offset known
// to be a multiple of div moves in: 4, 2 or 1.
func chunk(b bufRef, w, div int64) int64 {
	if b.sram || !vecLoadable(b.kind) {
		return 1
	}
	for _, c := range []int64{4, 2} {
		if w%c == 0 && div%c == 0 {
			return c
		}
	}
	return 1
}

// at names an offset used by several lanes: `const size_t at3 = ...;`,
// once per scope.
func (ke *kernelEmitter) at(b bufRef, off string) string {
	if !strings.ContainsAny(off, " (") {
		return off
	}
	t := "size_t"
	if b.sram {
		t = "uint"
	}
	key := t + " " + off
	for i := len(ke.offsets) - 1; i >= 0; i-- {
		if name, ok := ke.offsets[i][key]; ok {
			return name
		}
	}
	name := ke.names.fresh("at")
	ke.line("const %s %s = %s;", t, name, off)
	ke.offsets[len(ke.offsets)-1][key] = name
	return name
}

// openScope and closeScope bracket a C block: offsets named inside are
// not seen after it.
func (ke *kernelEmitter) openScope() {
	ke.offsets = append(ke.offsets, map[string]string{})
	ke.indent++
}

func (ke *kernelEmitter) closeScope() {
	ke.offsets = ke.offsets[:len(ke.offsets)-1]
	ke.indent--
}

// plus is base + l, leaving out a zero base.
func plus(base, l string) string {
	if base == "0" {
		return l
	}
	return base + " + " + l
}

// emitLoad writes a loop.load.
func (ke *kernelEmitter) emitLoad(op loop.LoadOp) {
	b := ke.buffer(op.Memref())
	res := op.Output()
	off, div := ke.offset(b, op.Indices())
	w := width(res.Type())
	if w == 0 {
		ke.define(res, func(string) string { return b.name + "[" + off + "]" })
		return
	}
	at := ke.at(b, off)
	name := ke.valueName(res)
	t := metalType(b.kind)
	ke.line("%s %s[%d];", t, name, w)
	ke.vals[res] = val{array: name, width: w, kind: b.kind}
	c := chunk(b, w, div)
	if c == 1 {
		ke.line("for (uint l = 0; l < %d; ++l) %s[l] = %s[%s];", w, name, b.name, plus(at, "l"))
		return
	}
	vt := t + strconv.FormatInt(c, 10)
	ke.line("for (uint l = 0; l < %d; l += %d) {", w, c)
	ke.line("  const %s q = *(const device %s*)(%s + %s);", vt, vt, b.name, plus(at, "l"))
	var parts []string
	for j := int64(0); j < c; j++ {
		parts = append(parts, fmt.Sprintf("%s[%s] = q[%d];", name, laneAt(j), j))
	}
	ke.line("  %s", strings.Join(parts, " "))
	ke.line("}")
}

// laneAt spells lane l + j.
func laneAt(j int64) string {
	if j == 0 {
		return "l"
	}
	return "l + " + strconv.FormatInt(j, 10)
}

// emitStore writes a loop.store; in uniform code only one thread stores.
func (ke *kernelEmitter) emitStore(op loop.StoreOp, uniform bool) {
	b := ke.buffer(op.Memref())
	if !b.sram && !b.output {
		fail(op.Operation, "writes to an input buffer of the kernel")
	}
	v := ke.get(op.Value())
	off, div := ke.offset(b, op.Indices())
	if uniform {
		ke.line("if (%s) {", ke.guard)
		ke.openScope()
		defer func() {
			ke.closeScope()
			ke.line("}")
		}()
	}
	w := width(op.Value().Type())
	if w == 0 {
		ke.line("%s[%s] = %s;", b.name, off, v.expr)
		return
	}
	at := ke.at(b, off)
	c := chunk(b, w, div)
	if c == 1 {
		ke.line("for (uint l = 0; l < %d; ++l) %s[%s] = %s;", w, b.name, plus(at, "l"), v.lane("l"))
		return
	}
	vt := metalType(b.kind) + strconv.FormatInt(c, 10)
	var parts []string
	for j := int64(0); j < c; j++ {
		parts = append(parts, v.lane(laneAt(j)))
	}
	ke.line("for (uint l = 0; l < %d; l += %d) {", w, c)
	ke.line("  *(device %s*)(%s + %s) = %s(%s);", vt, b.name, plus(at, "l"), vt, strings.Join(parts, ", "))
	ke.line("}")
}
