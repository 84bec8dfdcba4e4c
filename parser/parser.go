// Package parser reads the textual IR (.tir) into ir operations.
//
// The grammar is the language reference's (tir.md), and MLIR's LangRef
// where that is silent:
//
//	func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
//	  %y = graph.exp %x : tensor<4xf32>
//	  %z = "graph.add"(%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("f.tir":3:5)
//	  return %z : tensor<4xf32>
//	}
//
// Tokens come from Lexer, a participle lexer.Definition whose reference
// rules are Rules. The parser itself is recursive descent over those tokens
// and builds IR directly, without an intermediate syntax tree: participle's
// reflective struct grammars cost tens of microseconds an op (52 µs for
// `%v2 = graph.add %v0, %v1 : tensor<1024x1024xf32>`, its regular
// expression lexer alone 11 µs), where a module of a million ops should
// parse in about a second. Unregistered op names parse fine; the verifier
// rejects them.
//
// Every error is an *ir.Diagnostic at the offending token, worded like
// mlir-opt's: `use of undeclared SSA value '%y'`, `expected ']'`.
package parser

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/alecthomas/participle/v2/lexer"
	"github.com/tensorforge/tensorforge/ir"
)

// Parse parses a whole .tir file into a module. A file without `module {}`
// gets an implicit module; a file whose only top-level op is a
// `module { ... }` returns that module.
func Parse(filename, src string) (ir.Module, error) {
	return ParseAt(filename, src, 1)
}

// ParseAt is Parse for a chunk of a larger file (see SplitInput): line
// numbers in locations and errors start at firstLine (1-based), so they
// point into the original file.
func ParseAt(filename, src string, firstLine int) (ir.Module, error) {
	p := newParser(filename, src, firstLine)
	return p.parse()
}

// parser holds the state of one Parse call.
type parser struct {
	lex       scanner
	file      string
	firstLine int
	tok       lexer.Token // the current token
	// tokens after tok that lookahead already scanned: peek[peekHead:]
	peek     []lexer.Token
	peekHead int

	// end of the previous token, where "expected ..." errors point when the
	// current token starts a new line
	prevLine, prevEndCol, prevEndOff int

	scope *scope
	// operand references of the ops being parsed, a stack because the
	// regions of an op hold ops of their own
	refs      []operandRef
	valueBuf  []*ir.Value
	typeBuf   []ir.Type
	typeCache map[string]ir.Type

	// defsPerFunc estimates the values a function defines (-1: not yet)
	defsPerFunc int

	// depth counts the regions and attribute lists open around the current
	// token (see MaxNestingDepth)
	depth int
}

// MaxNestingDepth bounds how deeply regions (modules, functions, op
// regions) and attribute lists (arrays, dense literals) may nest. Deeper
// input is an error at the opening bracket that goes past the limit: the
// recursive descent, the verifier and the printer would otherwise recurse
// without bound.
const MaxNestingDepth = 256

// nest enters one level of nesting at pos, what names what opens it
// ("region", "array").
func (p *parser) nest(pos lexer.Position, what string) {
	p.depth++
	if p.depth > MaxNestingDepth {
		p.failAt(pos, "%s nested too deeply: more than %d levels of regions and attribute lists", what, MaxNestingDepth)
	}
}

// unnest leaves the level nest entered.
func (p *parser) unnest() { p.depth-- }

func newParser(filename, src string, firstLine int) *parser {
	if firstLine < 1 {
		firstLine = 1
	}
	p := &parser{file: filename, firstLine: firstLine, typeCache: map[string]ir.Type{}, defsPerFunc: -1}
	p.lex.init(filename, src, firstLine)
	return p
}

// bailout carries the first error out of the recursive descent.
type bailout struct{ diag *ir.Diagnostic }

func (p *parser) parse() (m ir.Module, err error) {
	defer func() {
		if r := recover(); r != nil {
			b, ok := r.(bailout)
			if !ok {
				panic(r)
			}
			m, err = ir.Module{}, b.diag
		}
	}()
	p.advance()
	return p.parseFile(), nil
}

// ---------------------------------------------------------------------------
// Tokens

// advance moves to the next token. Lexical errors stop the parse here.
func (p *parser) advance() {
	p.prevLine = p.tok.Pos.Line
	p.prevEndCol = p.tok.Pos.Column + len(p.tok.Value)
	p.prevEndOff = p.tok.Pos.Offset + len(p.tok.Value)
	if p.peekHead < len(p.peek) {
		p.tok = p.peek[p.peekHead]
		p.peekHead++
		if p.peekHead == len(p.peek) {
			p.peek, p.peekHead = p.peek[:0], 0
		}
	} else {
		p.lex.next(&p.tok)
	}
	if p.tok.Type == tokError {
		p.failAt(p.tok.Pos, "%s", p.tok.Value)
	}
}

// lookahead returns the k-th token after the current one (k >= 1).
func (p *parser) lookahead(k int) *lexer.Token {
	for len(p.peek)-p.peekHead < k {
		p.peek = append(p.peek, lexer.Token{})
		p.lex.next(&p.peek[len(p.peek)-1])
	}
	return &p.peek[p.peekHead+k-1]
}

func (p *parser) is(t lexer.TokenType) bool { return p.tok.Type == t }

func (p *parser) isKeyword(kw string) bool {
	return p.tok.Type == tokIdent && p.tok.Value == kw
}

// accept consumes the current token if it has type t.
func (p *parser) accept(t lexer.TokenType) bool {
	if p.tok.Type == t {
		p.advance()
		return true
	}
	return false
}

// expect consumes a token of type t or fails with `expected 'x'` (or the
// given message).
func (p *parser) expect(t lexer.TokenType, msg string) lexer.Token {
	if p.tok.Type != t {
		p.failExpected("%s", msg)
	}
	tok := p.tok
	p.advance()
	return tok
}

// describe spells a token for a message; a shaped type is spelled whole.
func (p *parser) describe(t lexer.Token) string {
	switch t.Type {
	case tokEOF:
		return "end of file"
	case tokShapedOpen:
		rest := p.lex.src[t.Pos.Offset:]
		if end := strings.IndexAny(rest, ">\n"); end >= 0 && rest[end] == '>' && end < 60 {
			return "'" + rest[:end+1] + "'"
		}
	case tokString:
		if len(t.Value) > 40 {
			return "string " + t.Value[:37] + "...\""
		}
		return "string " + t.Value
	}
	v := t.Value
	if len(v) > 40 {
		v = v[:40] + "..."
	}
	return "'" + v + "'"
}

// ---------------------------------------------------------------------------
// Errors

func (p *parser) loc(pos lexer.Position) ir.Location {
	return ir.Location{File: p.file, Line: pos.Line, Col: pos.Column}
}

func (p *parser) failAt(pos lexer.Position, format string, args ...any) {
	panic(bailout{ir.Errorf(p.loc(pos), format, args...)})
}

func (p *parser) failDiag(d *ir.Diagnostic) { panic(bailout{d}) }

// fail reports an error at the current token.
func (p *parser) fail(format string, args ...any) { p.failAt(p.tok.Pos, format, args...) }

// failExpected reports a missing token. Like mlir-opt, when the current
// token starts a new line the error points just past the previous token,
// at the end of the line that is missing something.
func (p *parser) failExpected(format string, args ...any) {
	pos := p.tok.Pos
	if p.prevLine > 0 && pos.Line > p.prevLine {
		pos = lexer.Position{Filename: pos.Filename, Offset: p.prevEndOff, Line: p.prevLine, Column: p.prevEndCol}
	}
	p.failAt(pos, format, args...)
}

// ---------------------------------------------------------------------------
// Literals shared by several productions

// unquote decodes a string token: `\"`, `\\`, `\n` and `\t` are the escapes.
func (p *parser) unquote(tok lexer.Token) string {
	body := tok.Value[1 : len(tok.Value)-1]
	if strings.IndexByte(body, '\\') < 0 {
		return body
	}
	var sb strings.Builder
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' {
			sb.WriteByte(c)
			continue
		}
		i++
		switch body[i] {
		case '"':
			sb.WriteByte('"')
		case '\\':
			sb.WriteByte('\\')
		case 'n':
			sb.WriteByte('\n')
		case 't':
			sb.WriteByte('\t')
		default:
			// point at the backslash, which is body[i-1], one past the quote
			pos := tok.Pos
			pos.Column += i
			pos.Offset += i
			c := quoteChar(body[i:])
			p.failAt(pos, "unknown escape sequence '\\%s' in string (use \\\", \\\\, \\n or \\t)", c[1:len(c)-1])
		}
	}
	return sb.String()
}

// parseInt64 converts a decimal token such as an extent or a line number.
func (p *parser) parseInt64(tok lexer.Token, what string) int64 {
	v, err := strconv.ParseInt(tok.Value, 10, 64)
	if err != nil {
		p.failAt(tok.Pos, "%s %s does not fit in 64 bits", what, tok.Value)
	}
	return v
}

// parseTrailingLoc parses an optional `loc("file":line:col)` or
// `loc(unknown)` and returns it, or def when there is none.
func (p *parser) parseTrailingLoc(def ir.Location) ir.Location {
	if !p.isKeyword("loc") || p.lookahead(1).Type != tokLParen {
		return def
	}
	p.advance()
	p.advance()
	var l ir.Location
	switch {
	case p.isKeyword("unknown"):
		p.advance()
	case p.is(tokString):
		l.File = p.unquote(p.tok)
		p.advance()
		p.expect(tokColon, "expected ':' and a line number in location")
		l.Line = p.locNumber("line")
		p.expect(tokColon, "expected ':' and a column number in location")
		l.Col = p.locNumber("column")
	default:
		p.failExpected("expected \"file\":line:col or 'unknown' in location")
	}
	p.expect(tokRParen, "expected ')' to end the location")
	return l
}

func (p *parser) locNumber(what string) int {
	tok := p.expect(tokInt, "expected a "+what+" number in location")
	v, err := strconv.ParseInt(tok.Value, 10, 32)
	if err != nil || v < 0 {
		p.failAt(tok.Pos, "%s number %s in location is out of range", what, tok.Value)
	}
	return int(v)
}

// plural returns "1 result", "2 results".
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
