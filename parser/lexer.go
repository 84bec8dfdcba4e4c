package parser

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/alecthomas/participle/v2/lexer"
)

// Token kinds of the .tir language. They are participle token types, so the
// scanner below plugs into participle (see Lexer) and its tokens carry a
// lexer.Position.
const (
	tokEOF                        = lexer.EOF
	tokIdent      lexer.TokenType = -1 - iota // graph.add  f32  true  module
	tokInt                                    // 12  0x1F
	tokFloat                                  // 1.5  2.0e-05  1e5
	tokString                                 // "tanh"
	tokValueID                                // %x  %0  %r#1
	tokBlockID                                // ^bb0
	tokSymbolRef                              // @name
	tokShapedOpen                             // tensor<  memref<  vector<
	tokDim                                    // 4, an extent inside a shape
	tokX                                      // the `x` between extents of a shape
	tokQuestion                               // ?
	tokStar                                   // *
	tokArrow                                  // ->
	tokMinus                                  // -
	tokEqual                                  // =
	tokComma                                  // ,
	tokColon                                  // :
	tokLParen                                 // (
	tokRParen                                 // )
	tokLBrace                                 // {
	tokRBrace                                 // }
	tokLBracket                               // [
	tokRBracket                               // ]
	tokLess                                   // <
	tokGreater                                // >
	tokError                                  // a lexical error; Value holds the message
)

var tokNames = map[lexer.TokenType]string{
	tokEOF: "EOF", tokIdent: "Ident", tokInt: "Int", tokFloat: "Float", tokString: "String",
	tokValueID: "ValueID", tokBlockID: "BlockID", tokSymbolRef: "SymbolRef",
	tokShapedOpen: "ShapedOpen", tokDim: "Dim", tokX: "X", tokQuestion: "Question", tokStar: "Star",
	tokArrow: "Arrow", tokMinus: "Minus", tokEqual: "Equal", tokComma: "Comma", tokColon: "Colon",
	tokLParen: "LParen", tokRParen: "RParen", tokLBrace: "LBrace", tokRBrace: "RBrace",
	tokLBracket: "LBracket", tokRBracket: "RBracket", tokLess: "Less", tokGreater: "Greater",
}

// Rules is the lexical grammar of .tir as participle stateful-lexer rules.
// It is the reference definition: the hand-written scanner behind Lexer
// produces exactly these tokens (a test lexes a corpus with both), an order
// of magnitude faster than matching the regular expressions.
//
// After `tensor<`, `memref<` or `vector<` the lexer is in the Shape state,
// where `4x?x8xf32` splits into extents, `x` separators and the element
// type (so `0x8xf32` is not a hexadecimal number); any other character
// returns to the Root state.
var Rules = lexer.MustStateful(lexer.Rules{
	"Root": {
		{Name: "whitespace", Pattern: `[ \t\r\n]+`},
		{Name: "comment", Pattern: `//[^\n]*`},
		{Name: "ShapedOpen", Pattern: `(?:tensor|memref|vector)<`, Action: lexer.Push("Shape")},
		{Name: "Ident", Pattern: `[A-Za-z_][A-Za-z0-9_$.]*`},
		{Name: "Float", Pattern: `[0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?|[0-9]+[eE][-+]?[0-9]+`},
		{Name: "Int", Pattern: `0x[0-9a-fA-F]+|[0-9]+`},
		{Name: "String", Pattern: `"(?:\\.|[^"\\\n])*"`},
		{Name: "ValueID", Pattern: `%[A-Za-z0-9_$.\-]+(?:#[0-9]+)?`},
		{Name: "BlockID", Pattern: `\^[A-Za-z0-9_$.\-]+`},
		{Name: "SymbolRef", Pattern: `@[A-Za-z0-9_$.\-]+`},
		{Name: "Arrow", Pattern: `->`},
		{Name: "Minus", Pattern: `-`},
		{Name: "Equal", Pattern: `=`},
		{Name: "Comma", Pattern: `,`},
		{Name: "Colon", Pattern: `:`},
		{Name: "LParen", Pattern: `\(`},
		{Name: "RParen", Pattern: `\)`},
		{Name: "LBrace", Pattern: `\{`},
		{Name: "RBrace", Pattern: `\}`},
		{Name: "LBracket", Pattern: `\[`},
		{Name: "RBracket", Pattern: `\]`},
		{Name: "Less", Pattern: `<`},
		{Name: "Greater", Pattern: `>`},
	},
	"Shape": {
		{Name: "whitespace", Pattern: `[ \t\r\n]+`},
		{Name: "X", Pattern: `x`},
		{Name: "Dim", Pattern: `[0-9]+`},
		{Name: "Question", Pattern: `\?`},
		{Name: "Star", Pattern: `\*`},
		{Name: "Minus", Pattern: `-`},
		{Name: "Comma", Pattern: `,`},
		{Name: "Ident", Pattern: `[A-Za-z_][A-Za-z0-9_$.]*`},
		{Name: "Greater", Pattern: `>`, Action: lexer.Pop()},
		lexer.Return(),
	},
})

// Lexer is the .tir lexer as a participle lexer.Definition: the fast
// equivalent of Rules, with byte columns (what SourceManager.Render counts).
// Lexical errors come back as *lexer.Error.
var Lexer lexer.Definition = tirLexerDef{}

type tirLexerDef struct{}

func (tirLexerDef) Symbols() map[string]lexer.TokenType {
	m := make(map[string]lexer.TokenType, len(tokNames))
	for t, n := range tokNames {
		m[n] = t
	}
	return m
}

func (d tirLexerDef) Lex(filename string, r io.Reader) (lexer.Lexer, error) {
	var sb strings.Builder
	if _, err := io.Copy(&sb, r); err != nil {
		return nil, err
	}
	return d.LexString(filename, sb.String())
}

func (tirLexerDef) LexString(filename, src string) (lexer.Lexer, error) {
	s := &scanner{}
	s.init(filename, src, 1)
	return participleLexer{s}, nil
}

type participleLexer struct{ s *scanner }

func (l participleLexer) Next() (lexer.Token, error) {
	var t lexer.Token
	l.s.next(&t)
	if t.Type == tokError {
		return lexer.Token{}, &lexer.Error{Msg: t.Value, Pos: t.Pos}
	}
	return t, nil
}

// scanner turns source text into tokens one at a time. Token values are
// slices of the source, so scanning allocates nothing.
type scanner struct {
	src       string
	file      string
	pos       int  // byte offset of the next unread character
	line      int  // line number of pos
	lineStart int  // byte offset where the current line begins
	shape     bool // in the Shape state of Rules
	// out is where the token being scanned goes: tokens are written in
	// place rather than returned, which copies less.
	out *lexer.Token
}

func (s *scanner) init(file, src string, firstLine int) {
	*s = scanner{src: src, file: file, line: firstLine}
}

func (s *scanner) position(off int) lexer.Position {
	return lexer.Position{Filename: s.file, Offset: off, Line: s.line, Column: off - s.lineStart + 1}
}

func isIdentStart(c byte) bool {
	return c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z')
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHexDigit(c byte) bool {
	return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'f')
}

func isIdentChar(c byte) bool {
	return isIdentStart(c) || isDigit(c) || c == '$' || c == '.'
}

// isSuffixChar matches the characters of `%name`, `^name` and `@name`.
func isSuffixChar(c byte) bool {
	return isIdentChar(c) || c == '-'
}

// skipSpace skips whitespace, and comments unless in the Shape state.
func (s *scanner) skipSpace() {
	for s.pos < len(s.src) {
		switch c := s.src[s.pos]; c {
		case ' ', '\t', '\r':
			s.pos++
		case '\n':
			s.pos++
			s.line++
			s.lineStart = s.pos
		case '/':
			if s.shape || s.pos+1 >= len(s.src) || s.src[s.pos+1] != '/' {
				return
			}
			for s.pos < len(s.src) && s.src[s.pos] != '\n' {
				s.pos++
			}
		default:
			return
		}
	}
}

// tok fills in the token from start to the current position.
func (s *scanner) tok(t lexer.TokenType, start int) {
	*s.out = lexer.Token{Type: t, Value: s.src[start:s.pos], Pos: s.position(start)}
}

func (s *scanner) errorf(start int, format string, args ...any) {
	*s.out = lexer.Token{Type: tokError, Value: fmt.Sprintf(format, args...), Pos: s.position(start)}
}

// punct maps the one-character tokens of the Root state to their types.
var punct = [256]lexer.TokenType{
	'=': tokEqual, ',': tokComma, ':': tokColon, '(': tokLParen, ')': tokRParen,
	'{': tokLBrace, '}': tokRBrace, '[': tokLBracket, ']': tokRBracket, '<': tokLess, '>': tokGreater,
}

// next scans the next token into t; at the end it gives EOF tokens forever.
func (s *scanner) next(t *lexer.Token) {
	s.out = t
	s.skipSpace()
	if s.shape {
		if s.nextInShape() {
			return
		}
		s.shape = false // Return() to Root
		s.skipSpace()
	}
	start := s.pos
	if start >= len(s.src) {
		*t = lexer.Token{Type: tokEOF, Pos: s.position(start)}
		return
	}
	switch c := s.src[start]; {
	case isIdentStart(c):
		s.ident(start)
	case isDigit(c):
		s.number(start)
	case c == '%':
		s.suffixID(tokValueID, start, true)
	case c == '^':
		s.suffixID(tokBlockID, start, false)
	case c == '@':
		s.suffixID(tokSymbolRef, start, false)
	case c == '"':
		s.stringLit(start)
	case c == '-' && start+1 < len(s.src) && s.src[start+1] == '>':
		s.pos += 2
		s.tok(tokArrow, start)
	case c == '-':
		s.pos++
		s.tok(tokMinus, start)
	case punct[c] != 0:
		s.pos++
		s.tok(punct[c], start)
	default:
		s.errorf(start, "unexpected character %s", quoteChar(s.src[start:]))
	}
}

// ident scans an identifier; `tensor<`, `memref<` and `vector<` open a shape.
func (s *scanner) ident(start int) {
	s.pos++
	for s.pos < len(s.src) && isIdentChar(s.src[s.pos]) {
		s.pos++
	}
	if s.pos < len(s.src) && s.src[s.pos] == '<' {
		switch s.src[start:s.pos] {
		case "tensor", "memref", "vector":
			s.pos++
			s.shape = true
			s.tok(tokShapedOpen, start)
			return
		}
	}
	s.tok(tokIdent, start)
}

// nextInShape scans one token of the Shape state; it reports false when
// the next character starts no Shape token.
func (s *scanner) nextInShape() bool {
	start := s.pos
	if start >= len(s.src) {
		return false
	}
	c := s.src[start]
	switch {
	case c == 'x':
		s.pos++
		s.tok(tokX, start)
		return true
	case isDigit(c):
		for s.pos < len(s.src) && isDigit(s.src[s.pos]) {
			s.pos++
		}
		s.tok(tokDim, start)
		return true
	case isIdentStart(c):
		s.pos++
		for s.pos < len(s.src) && isIdentChar(s.src[s.pos]) {
			s.pos++
		}
		s.tok(tokIdent, start)
		return true
	}
	var t lexer.TokenType
	switch c {
	case '?':
		t = tokQuestion
	case '*':
		t = tokStar
	case '-':
		t = tokMinus
	case ',':
		t = tokComma
	case '>':
		t = tokGreater
		s.shape = false
	default:
		return false
	}
	s.pos++
	s.tok(t, start)
	return true
}

// scanInt returns the end of `0x[0-9a-fA-F]+|[0-9]+` starting at start.
func (s *scanner) scanInt(start int) int {
	p := start
	if s.src[p] == '0' && p+2 < len(s.src) && s.src[p+1] == 'x' && isHexDigit(s.src[p+2]) {
		p += 2
		for p < len(s.src) && isHexDigit(s.src[p]) {
			p++
		}
		return p
	}
	for p < len(s.src) && isDigit(s.src[p]) {
		p++
	}
	return p
}

// number scans a Float or an Int, trying the alternatives in the order of
// Rules (leftmost-first, as Go's regexp does).
func (s *scanner) number(start int) {
	p := start
	for p < len(s.src) && isDigit(s.src[p]) {
		p++
	}
	digitsEnd := p
	// [0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?
	if p < len(s.src) && s.src[p] == '.' {
		p++
		for p < len(s.src) && isDigit(s.src[p]) {
			p++
		}
		s.pos = s.exponent(p)
		s.tok(tokFloat, start)
		return
	}
	// [0-9]+[eE][-+]?[0-9]+
	if e := s.exponent(digitsEnd); e > digitsEnd {
		s.pos = e
		s.tok(tokFloat, start)
		return
	}
	s.pos = s.scanInt(start)
	s.tok(tokInt, start)
}

// exponent returns the end of an optional `[eE][-+]?[0-9]+` at p.
func (s *scanner) exponent(p int) int {
	q := p
	if q >= len(s.src) || s.src[q]|0x20 != 'e' {
		return p
	}
	q++
	if q < len(s.src) && (s.src[q] == '+' || s.src[q] == '-') {
		q++
	}
	if q >= len(s.src) || !isDigit(s.src[q]) {
		return p
	}
	for q < len(s.src) && isDigit(s.src[q]) {
		q++
	}
	return q
}

// suffixID scans the name after `%`, `^` or `@`; `%r#1` includes the result number.
func (s *scanner) suffixID(t lexer.TokenType, start int, hash bool) {
	s.pos = start + 1
	for s.pos < len(s.src) && isSuffixChar(s.src[s.pos]) {
		s.pos++
	}
	if s.pos == start+1 {
		s.pos = start
		s.errorf(start, "expected a name after '%c'", s.src[start])
		return
	}
	if hash && s.pos+1 < len(s.src) && s.src[s.pos] == '#' && isDigit(s.src[s.pos+1]) {
		s.pos++
		for s.pos < len(s.src) && isDigit(s.src[s.pos]) {
			s.pos++
		}
	}
	s.tok(t, start)
}

// stringLit scans `"..."`. Escapes are checked when the parser unquotes.
func (s *scanner) stringLit(start int) {
	s.pos = start + 1
	for s.pos < len(s.src) {
		switch s.src[s.pos] {
		case '"':
			s.pos++
			s.tok(tokString, start)
			return
		case '\\':
			if s.pos+1 < len(s.src) && s.src[s.pos+1] != '\n' {
				s.pos += 2
				continue
			}
			s.pos = len(s.src)
		case '\n':
			s.pos = len(s.src)
		default:
			s.pos++
		}
	}
	s.pos = start
	s.errorf(start, "unterminated string literal")
}

// quoteChar spells the first character of s for a message: '&', '\x00'.
func quoteChar(s string) string {
	c, size := utf8.DecodeRuneInString(s)
	switch {
	case size == 0:
		return "''"
	case c == utf8.RuneError && size == 1:
		return fmt.Sprintf("'\\x%02x'", s[0])
	case c >= 0x20 && c < 0x7f:
		return "'" + string(c) + "'"
	}
	q := strconv.QuoteRune(c)
	return "'" + q[1:len(q)-1] + "'"
}
