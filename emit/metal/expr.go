package metal

import (
	"fmt"
	"strconv"
	"strings"
)

// This file holds the integer expressions of the launch descriptions: the
// number of threadgroups, the threads of one, the extents a kernel takes
// and the bytes of a dynamic intermediate, each a function of the run-time
// extents of the function's arguments:
//
//	"threadgroups": "x_d0",
//	"threads_per_threadgroup": "min(1024, max(32, (C + 7) / 8 + 31) / 32 * 32)"
//
// The syntax is the common part of C and Python: integer literals, extent
// names, + - * / % on non-negative integers (/ truncates, which is floor
// division here) and the functions min and max. A host evaluates it with
// a ten-line parser, or in Python with eval(e.replace("/", "//"), ...).

// expr is an integer expression.
type expr struct {
	op   string // "const", "var", "+", "-", "*", "/", "%", "min", "max"
	val  int64
	name string
	args []*expr
}

func cst(v int64) *expr       { return &expr{op: "const", val: v} }
func vr(name string) *expr    { return &expr{op: "var", name: name} }
func (e *expr) isConst() bool { return e != nil && e.op == "const" }

// bin builds a op b, folding constants and the identities of + and *.
func bin(op string, a, b *expr) *expr {
	if a.isConst() && b.isConst() {
		if v, ok := fold(op, a.val, b.val); ok {
			return cst(v)
		}
	}
	switch op {
	case "+":
		if a.isConst() && a.val == 0 {
			return b
		}
		if b.isConst() && b.val == 0 {
			return a
		}
	case "-":
		if b.isConst() && b.val == 0 {
			return a
		}
		if a.String() == b.String() {
			return cst(0)
		}
		// x - (x - y) = y
		if b.op == "-" && b.args[0].String() == a.String() {
			return b.args[1]
		}
	case "*":
		if a.isConst() && a.val == 1 {
			return b
		}
		if b.isConst() && b.val == 1 {
			return a
		}
		if (a.isConst() && a.val == 0) || (b.isConst() && b.val == 0) {
			return cst(0)
		}
	case "/":
		if b.isConst() && b.val == 1 {
			return a
		}
	case "%":
		if b.isConst() && b.val == 1 {
			return cst(0)
		}
	case "min", "max":
		if a.String() == b.String() {
			return a
		}
	}
	return &expr{op: op, args: []*expr{a, b}}
}

// fold computes a op b; division by zero does not fold.
func fold(op string, a, b int64) (int64, bool) {
	switch op {
	case "+":
		return a + b, true
	case "-":
		return a - b, true
	case "*":
		return a * b, true
	case "/":
		if b != 0 {
			return a / b, true
		}
	case "%":
		if b != 0 {
			return a % b, true
		}
	case "min":
		return min(a, b), true
	case "max":
		return max(a, b), true
	}
	return 0, false
}

// ceilDiv is (a + b - 1) / b.
func ceilDiv(a, b *expr) *expr {
	if b.isConst() && b.val == 1 {
		return a
	}
	return bin("/", bin("+", a, bin("-", b, cst(1))), b)
}

// roundUp rounds a up to a multiple of b.
func roundUp(a, b *expr) *expr { return bin("*", ceilDiv(a, b), b) }

// prec is the binding strength of an operator.
func prec(op string) int {
	switch op {
	case "+", "-":
		return 1
	case "*", "/", "%":
		return 2
	}
	return 3
}

// String spells e in the launch description's syntax.
func (e *expr) String() string {
	if e == nil {
		return ""
	}
	switch e.op {
	case "const":
		return strconv.FormatInt(e.val, 10)
	case "var":
		return e.name
	case "min", "max":
		return e.op + "(" + e.args[0].String() + ", " + e.args[1].String() + ")"
	}
	l, r := e.args[0].String(), e.args[1].String()
	p := prec(e.op)
	if prec(e.args[0].op) < p {
		l = "(" + l + ")"
	}
	// a - (b + c), a / (b * c): the right operand binds first unless the
	// operation is associative with it
	rp := prec(e.args[1].op)
	if rp < p || (rp == p && !(e.op == e.args[1].op && (e.op == "+" || e.op == "*"))) {
		r = "(" + r + ")"
	}
	return l + " " + e.op + " " + r
}

// subst replaces the variables of e by expressions (those not in m stay).
func (e *expr) subst(m map[string]*expr) *expr {
	switch e.op {
	case "const":
		return e
	case "var":
		if s, ok := m[e.name]; ok {
			return s
		}
		return e
	}
	return bin(e.op, e.args[0].subst(m), e.args[1].subst(m))
}

// ---------------------------------------------------------------------------
// Evaluation of the text form

// EvalExpr evaluates an expression of a launch description for the given
// extents:
//
//	EvalExpr("min(1024, (n + 31) / 32 * 32)", map[string]int64{"n": 100}) == 128
//
// It is what a host program does with "threadgroups" and the other
// expressions; the syntax is described in docs/backend-metal.md.
func EvalExpr(text string, extents map[string]int64) (int64, error) {
	p := &exprParser{text: text, env: extents}
	p.next()
	v, err := p.sum()
	if err != nil {
		return 0, err
	}
	if p.tok != "" {
		return 0, fmt.Errorf("unexpected '%s' in '%s'", p.tok, text)
	}
	return v, nil
}

type exprParser struct {
	text string
	pos  int
	tok  string
	env  map[string]int64
}

// next reads the next token: a number, a name or one punctuation byte.
func (p *exprParser) next() {
	for p.pos < len(p.text) && p.text[p.pos] == ' ' {
		p.pos++
	}
	if p.pos >= len(p.text) {
		p.tok = ""
		return
	}
	start := p.pos
	c := p.text[p.pos]
	if isIdentByte(c) {
		for p.pos < len(p.text) && isIdentByte(p.text[p.pos]) {
			p.pos++
		}
	} else {
		p.pos++
	}
	p.tok = p.text[start:p.pos]
}

func isIdentByte(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

func (p *exprParser) sum() (int64, error) {
	v, err := p.product()
	for err == nil && (p.tok == "+" || p.tok == "-") {
		op := p.tok
		p.next()
		var w int64
		if w, err = p.product(); err == nil {
			v, _ = fold(op, v, w)
		}
	}
	return v, err
}

func (p *exprParser) product() (int64, error) {
	v, err := p.atom()
	for err == nil && (p.tok == "*" || p.tok == "/" || p.tok == "%") {
		op := p.tok
		p.next()
		var w int64
		if w, err = p.atom(); err == nil {
			var ok bool
			if v, ok = fold(op, v, w); !ok {
				err = fmt.Errorf("division by zero in '%s'", p.text)
			}
		}
	}
	return v, err
}

func (p *exprParser) atom() (int64, error) {
	tok := p.tok
	switch {
	case tok == "":
		return 0, fmt.Errorf("unexpected end of '%s'", p.text)
	case tok == "(":
		p.next()
		v, err := p.sum()
		if err == nil {
			err = p.expect(")")
		}
		return v, err
	case tok == "min" || tok == "max":
		p.next()
		if err := p.expect("("); err != nil {
			return 0, err
		}
		a, err := p.sum()
		if err == nil {
			err = p.expect(",")
		}
		var b int64
		if err == nil {
			b, err = p.sum()
		}
		if err == nil {
			err = p.expect(")")
		}
		v, _ := fold(tok, a, b)
		return v, err
	case tok[0] >= '0' && tok[0] <= '9':
		p.next()
		return strconv.ParseInt(tok, 10, 64)
	case isIdentByte(tok[0]):
		p.next()
		v, ok := p.env[tok]
		if !ok {
			return 0, fmt.Errorf("unknown extent '%s' in '%s'", tok, p.text)
		}
		return v, nil
	}
	return 0, fmt.Errorf("unexpected '%s' in '%s'", tok, p.text)
}

func (p *exprParser) expect(tok string) error {
	if p.tok != tok {
		return fmt.Errorf("expected '%s' in '%s'", tok, strings.TrimSpace(p.text))
	}
	p.next()
	return nil
}
