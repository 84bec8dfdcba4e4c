package parser

import (
	"slices"
	"strings"

	"github.com/alecthomas/participle/v2/lexer"
	"github.com/tensorforge/tensorforge/ir"
)

// Types:
//
//	f32  bf16  ui8  index                      element types
//	tensor<4096x?x8xbf16>  tensor<f32>         tensors (`?`: extent known at run time)
//	memref<?x8192xbf16, dram>                  buffers in dram, sram or reg
//	vector<8xf32>                              fixed-size register values
//	(T1, T2) -> T3   (T) -> (T, T)   () -> ()  function types

var elemKinds = func() map[string]ir.ElemKind {
	m := map[string]ir.ElemKind{}
	for _, k := range ir.ElemKinds() {
		m[k.String()] = k
	}
	return m
}()

// parseValueType parses a type a value can have: anything but a function
// type. (Keeping function types out of values keeps `: (T) -> T` after a
// custom op unambiguous.)
func (p *parser) parseValueType() ir.Type {
	switch p.tok.Type {
	case tokIdent:
		k, ok := elemKinds[p.tok.Value]
		if !ok {
			if !looksLikeElemType(p.tok.Value) {
				p.failExpected("expected type, found %s", p.describe(p.tok))
			}
			p.fail("unknown element type '%s'", p.tok.Value)
		}
		p.advance()
		return ir.ElemType{Kind: k}
	case tokShapedOpen:
		return p.parseShapedType()
	case tokLParen:
		p.fail("a function type cannot be the type of a value")
	}
	p.failExpected("expected type, found %s", p.describe(p.tok))
	return nil
}

// parseShapedType parses `tensor<...>`, `memref<...>` or `vector<...>`.
// The same spelling recurs on almost every op, so types are cached by
// their text.
func (p *parser) parseShapedType() ir.Type {
	start := p.tok.Pos.Offset
	if len(p.peek) == p.peekHead {
		// The scanner sits right after `tensor<`: look the text up to the
		// first '>' up in the cache and, on a hit, skip over it.
		rest := p.lex.src[p.lex.pos:]
		if end := strings.IndexByte(rest, '>'); end >= 0 {
			key := p.lex.src[start : p.lex.pos+end+1]
			if t, ok := p.typeCache[key]; ok {
				p.lex.pos += end + 1
				p.lex.shape = false
				p.tok.Value = key // so the previous token ends after '>'
				p.advance()
				return t
			}
		}
	}
	kind := p.tok.Value[:len(p.tok.Value)-1]
	p.advance()
	var shape []int64
	for {
		switch p.tok.Type {
		case tokDim:
			shape = append(shape, p.parseInt64(p.tok, "dimension extent"))
		case tokQuestion:
			shape = append(shape, ir.Dynamic)
		case tokMinus:
			p.fail("dimension extents must be non-negative; use '?' for an extent known only at run time")
		case tokStar:
			p.fail("unranked %ss are not supported; give the rank, with '?' for unknown extents", kind)
		default:
			goto elem
		}
		p.advance()
		p.expect(tokX, "expected 'x' after a dimension extent")
	}
elem:
	var elem ir.ElemType
	if p.is(tokIdent) {
		k, ok := elemKinds[p.tok.Value]
		if !ok {
			p.fail("unknown element type '%s'", p.tok.Value)
		}
		elem = ir.ElemType{Kind: k}
		p.advance()
	} else {
		p.failExpected("expected an element type in %s type, found %s", kind, p.describe(p.tok))
	}
	var t ir.Type
	switch kind {
	case "tensor":
		t = ir.TensorType{Shape: shape, Elem: elem}
	case "vector":
		if ir.HasDynamicDim(shape) {
			p.failAt(p.prevPos(), "vector types need static extents")
		}
		t = ir.VectorType{Shape: shape, Elem: elem}
	case "memref":
		space := ir.DRAM
		if p.accept(tokComma) {
			if !p.is(tokIdent) {
				p.failExpected("expected a memory space (dram, sram or reg)")
			}
			s, ok := ir.ParseMemSpace(p.tok.Value)
			if !ok {
				p.fail("unknown memory space '%s' (expected dram, sram or reg)", p.tok.Value)
			}
			space = s
			p.advance()
		}
		t = ir.MemRefType{Shape: shape, Elem: elem, Space: space}
	}
	if !p.is(tokGreater) {
		p.failExpected("expected '>' to end the %s type", kind)
	}
	end := p.tok.Pos.Offset + 1
	p.advance()
	if key := p.lex.src[start:end]; strings.IndexByte(key, '\n') < 0 {
		p.typeCache[key] = t
	}
	return t
}

// prevPos is the position just past the previous token.
func (p *parser) prevPos() lexer.Position {
	return lexer.Position{Filename: p.file, Offset: p.prevEndOff, Line: p.prevLine, Column: p.prevEndCol}
}

// parseFunctionType parses `(T1, T2) -> T3`, `(T) -> (T, T)`, `() -> ()`.
func (p *parser) parseFunctionType() ir.FunctionType {
	p.expect(tokLParen, "expected '(' to begin a function type")
	ins := p.parseValueTypeListUntil(tokRParen)
	p.expect(tokArrow, "expected '->' and the result types of the function type")
	return ir.FunctionType{Inputs: ins, Results: p.parseResultTypes()}
}

// parseResultTypes parses what follows `->`: one type, or a parenthesized
// list.
func (p *parser) parseResultTypes() []ir.Type {
	if p.accept(tokLParen) {
		return p.parseValueTypeListUntil(tokRParen)
	}
	return []ir.Type{p.parseValueType()}
}

// parseValueTypeListUntil parses `T, T, ...` up to and including the closing
// token (which the list may be empty before).
func (p *parser) parseValueTypeListUntil(close lexer.TokenType) []ir.Type {
	ts := []ir.Type{}
	if p.accept(close) {
		return ts
	}
	for {
		ts = append(ts, p.parseValueType())
		if p.accept(close) {
			return ts
		}
		if !p.accept(tokComma) {
			p.failExpected("expected ',' or ')' in type list")
		}
	}
}

// typesEqual is ir.TypeEqual without building strings for the common cases.
func typesEqual(a, b ir.Type) bool {
	switch a := a.(type) {
	case ir.TensorType:
		b, ok := b.(ir.TensorType)
		return ok && a.Elem == b.Elem && slices.Equal(a.Shape, b.Shape)
	case ir.ElemType:
		b, ok := b.(ir.ElemType)
		return ok && a == b
	case ir.MemRefType:
		b, ok := b.(ir.MemRefType)
		return ok && a.Elem == b.Elem && a.Space == b.Space && slices.Equal(a.Shape, b.Shape)
	case ir.VectorType:
		b, ok := b.(ir.VectorType)
		return ok && a.Elem == b.Elem && slices.Equal(a.Shape, b.Shape)
	}
	return ir.TypeEqual(a, b)
}
