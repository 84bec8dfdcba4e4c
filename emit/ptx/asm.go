package ptx

import (
	"fmt"
	"math"
	"strings"
)

// This file is the instruction buffer of one kernel: typed virtual
// registers, instructions, labels and the register declarations that
// head the body once it is complete,
//
//	.reg .pred 	%p<3>;
//	.reg .b32 	%r<12>;
//	.reg .f32 	%f<40>;
//	...
//	mul.rn.f32 	%f7, %f6, 0f3FB8AA3B;
//	@%p1 bra 	$L_k0_2;
//
// Registers are never reused: every value gets its own, and ptxas
// allocates the hardware registers. A register's class is its declared
// PTX type; instructions only ever see registers of the class their type
// asks for (f32 arithmetic on %f, s32/u32/b32 on %r, s64/u64/b64 on %rd),
// and reinterpretations are explicit `mov.b32`/`mov.b64`.

// regClass is the declared type of a virtual register.
type regClass uint8

const (
	rPred regClass = iota // .pred  %p
	rB16                  // .b16   %h: f16, bf16 and f8 lanes
	rB32                  // .b32   %r: integers of 8 to 32 bits
	rB64                  // .b64   %rd: i64, index, addresses
	rF32                  // .f32   %f
	rF64                  // .f64   %fd
	numClasses
)

var (
	regPrefix = [numClasses]string{"%p", "%h", "%r", "%rd", "%f", "%fd"}
	regDecl   = [numClasses]string{".pred", ".b16", ".b32", ".b64", ".f32", ".f64"}
)

// opnd is an instruction operand: a register of a class, or an
// immediate written for an instruction of that class.
type opnd struct {
	s   string
	cls regClass
	imm bool
}

func (o opnd) String() string { return o.s }

// f32Imm is the exact PTX spelling of an f32 immediate: 0f3F800000.
func f32Imm(v float32) opnd {
	return opnd{s: fmt.Sprintf("0f%08X", math.Float32bits(v)), cls: rF32, imm: true}
}

// f64Imm is the exact PTX spelling of an f64 immediate: 0d3FF0000000000000.
func f64Imm(v float64) opnd {
	return opnd{s: fmt.Sprintf("0d%016X", math.Float64bits(v)), cls: rF64, imm: true}
}

// intImm is an integer immediate for an instruction on class c.
func intImm(v int64, c regClass) opnd {
	return opnd{s: fmt.Sprintf("%d", v), cls: c, imm: true}
}

// asm accumulates the body of one kernel.
type asm struct {
	prefix string // label prefix, unique per kernel: "$L_k0"
	lines  []string
	count  [numClasses]int
	labels int
}

func newAsm(labelPrefix string) *asm { return &asm{prefix: labelPrefix} }

// reg returns a fresh register of class c.
func (a *asm) reg(c regClass) opnd {
	n := a.count[c]
	a.count[c]++
	return opnd{s: fmt.Sprintf("%s%d", regPrefix[c], n), cls: c}
}

// ins appends one instruction: ins("add.s64", d, x, y) writes
// `add.s64 	%rd3, %rd1, %rd2;`.
func (a *asm) ins(op string, args ...opnd) {
	a.insp(nil, false, op, args...)
}

// insp appends an instruction guarded by predicate p (negated when neg):
// `@%p1 st.global.f32 	[%rd4], %f2;`.
func (a *asm) insp(p *opnd, neg bool, op string, args ...opnd) {
	strs := make([]string, len(args))
	for i, x := range args {
		strs[i] = x.s
	}
	a.raw(p, neg, op, strs...)
}

// raw appends an instruction whose operands are already spelled (memory
// operands `[%rd1+16]`, vectors `{%f1, %f2}`, labels).
func (a *asm) raw(p *opnd, neg bool, op string, args ...string) {
	var sb strings.Builder
	sb.WriteByte('\t')
	if p != nil {
		sb.WriteByte('@')
		if neg {
			sb.WriteByte('!')
		}
		sb.WriteString(p.s)
		sb.WriteByte(' ')
	}
	sb.WriteString(op)
	if len(args) > 0 {
		sb.WriteString(" \t")
		sb.WriteString(strings.Join(args, ", "))
	}
	sb.WriteByte(';')
	a.lines = append(a.lines, sb.String())
}

// comment appends a comment line.
func (a *asm) comment(format string, args ...any) {
	a.lines = append(a.lines, "\t// "+fmt.Sprintf(format, args...))
}

// newLabel returns a fresh label name.
func (a *asm) newLabel() string {
	l := fmt.Sprintf("%s_%d", a.prefix, a.labels)
	a.labels++
	return l
}

// label places a label.
func (a *asm) label(l string) { a.lines = append(a.lines, l+":") }

// bra jumps to l, when p holds (p nil: always).
func (a *asm) bra(p *opnd, neg bool, l string) { a.raw(p, neg, "bra", l) }

// decls are the register declarations of the body.
func (a *asm) decls() []string {
	var out []string
	for c := regClass(0); c < numClasses; c++ {
		if a.count[c] > 0 {
			out = append(out, fmt.Sprintf("\t.reg %s \t%s<%d>;", regDecl[c], regPrefix[c], a.count[c]))
		}
	}
	return out
}

// memRef spells an address operand: `[%rd4]` or `[%rd4+16]`.
func memRef(base opnd, off int64) string {
	if off == 0 {
		return "[" + base.s + "]"
	}
	// a negative offset is spelled [%rd4+-16], as ptxas prints it
	return fmt.Sprintf("[%s+%d]", base.s, off)
}

// vecRef spells a vector operand `{%f1, %f2, %f3, %f4}`, or the one
// register of a scalar access.
func vecRef(rs []opnd) string {
	if len(rs) == 1 {
		return rs[0].s
	}
	strs := make([]string, len(rs))
	for i, r := range rs {
		strs[i] = r.s
	}
	return "{" + strings.Join(strs, ", ") + "}"
}
