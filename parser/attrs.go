package parser

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/alecthomas/participle/v2/lexer"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/x448/float16"
)

// Attributes:
//
//	{eps = 1.0e-05 : f32, axes = [1], keepdim = true, dtype = ui8, approximate = "tanh"}
//	{"quoted key" = 4, callee = @f, value = dense<[1.0, 2.0]> : tensor<2xf32>, n = 3 : i32}
//
// Integers without `: type` are i64, floats f32. A hexadecimal integer where
// a float is expected is the bit pattern of that float type:
// `0x7F800000 : f32` is +inf, `0x7C00 : f16` too.

// parseAttrDict parses `{key = value, ...}`; keys are identifiers or strings.
func (p *parser) parseAttrDict() ir.AttrDict {
	var d ir.AttrDict
	p.parseAttrDictInto(&d)
	return d
}

// parseAttrDictInto parses an attribute dictionary into d, which may
// already hold entries (several dictionaries after a custom op merge).
func (p *parser) parseAttrDictInto(d *ir.AttrDict) {
	p.expect(tokLBrace, "expected '{' to begin an attribute dictionary")
	if p.accept(tokRBrace) {
		return
	}
	for {
		keyTok := p.tok
		var key string
		switch p.tok.Type {
		case tokIdent:
			key = p.tok.Value
		case tokString:
			key = p.unquote(p.tok)
		default:
			p.failExpected("expected attribute name, found %s", p.describe(p.tok))
		}
		p.advance()
		if !p.is(tokEqual) {
			p.failExpected("expected '=' after attribute name '%s'", key)
		}
		p.advance()
		v := p.parseAttrValue()
		if d.Get(key) != nil {
			p.failAt(keyTok.Pos, "duplicate key '%s' in attribute dictionary", key)
		}
		d.Set(key, v)
		if p.accept(tokRBrace) {
			return
		}
		if !p.accept(tokComma) {
			p.failExpected("expected ',' or '}' in attribute dictionary, found %s", p.describe(p.tok))
		}
	}
}

// parseAttrValue parses one attribute value.
func (p *parser) parseAttrValue() ir.Attr {
	switch p.tok.Type {
	case tokInt, tokFloat, tokMinus:
		return p.parseNumberAttr()
	case tokString:
		s := p.unquote(p.tok)
		p.advance()
		return ir.StringAttr(s)
	case tokLBracket:
		p.nest(p.tok.Pos, "array")
		defer p.unnest()
		p.advance()
		arr := ir.ArrayAttr{}
		if p.accept(tokRBracket) {
			return arr
		}
		for {
			arr = append(arr, p.parseAttrValue())
			if p.accept(tokRBracket) {
				return arr
			}
			if !p.accept(tokComma) {
				p.failExpected("expected ',' or ']' in array, found %s", p.describe(p.tok))
			}
		}
	case tokShapedOpen:
		return ir.TypeAttr{Type: p.parseShapedType()}
	case tokLParen:
		return ir.TypeAttr{Type: p.parseFunctionType()}
	case tokSymbolRef:
		s := p.tok.Value[1:]
		p.advance()
		return ir.SymbolRefAttr(s)
	case tokIdent:
		switch w := p.tok.Value; w {
		case "true", "false":
			p.advance()
			return ir.BoolAttr(w == "true")
		case "inf", "nan":
			return p.parseNumberAttr()
		case "dense":
			if p.lookahead(1).Type == tokLess {
				lit := p.parseDenseLiteral()
				if !p.is(tokColon) {
					p.failExpected("expected ':' and the tensor type of the dense literal")
				}
				p.advance()
				tpos := p.tok.Pos
				return p.buildDense(lit, p.parseValueType(), tpos)
			}
		default:
			if k, ok := elemKinds[w]; ok {
				p.advance()
				return ir.TypeAttr{Type: ir.ElemType{Kind: k}}
			}
			if looksLikeElemType(w) {
				p.fail("unknown element type '%s'", w)
			}
		}
	}
	p.failExpected("expected attribute value, found %s", p.describe(p.tok))
	return nil
}

// looksLikeElemType reports whether an unknown word was probably meant as
// an element type (f33, i7, bf8), for a better message.
func looksLikeElemType(w string) bool {
	for _, prefix := range []string{"bf", "ui", "si", "f", "i"} {
		if strings.HasPrefix(w, prefix) && len(w) > len(prefix) && isDigit(w[len(prefix)]) {
			return true
		}
	}
	return false
}

// numLit is a number as written, converted once its type is known.
type numLit struct {
	tok lexer.Token    // Int, Float, or the words inf, nan, true, false
	neg bool           // a '-' came first
	pos lexer.Position // of the '-' if any, else of tok
}

func (n numLit) String() string {
	if n.neg {
		return "-" + n.tok.Value
	}
	return n.tok.Value
}

func (n numLit) isHex() bool { return n.tok.Type == tokInt && strings.HasPrefix(n.tok.Value, "0x") }

func (n numLit) isInt() bool { return n.tok.Type == tokInt }

func (n numLit) isBool() bool {
	return n.tok.Type == tokIdent && (n.tok.Value == "true" || n.tok.Value == "false")
}

// parseNumLit parses `-`? followed by an integer, a float, inf or nan (and
// true or false when bools is set).
func (p *parser) parseNumLit(bools bool) numLit {
	n := numLit{pos: p.tok.Pos}
	if p.accept(tokMinus) {
		n.neg = true
	}
	switch p.tok.Type {
	case tokInt, tokFloat:
	case tokIdent:
		switch p.tok.Value {
		case "inf", "nan":
		case "true", "false":
			if bools && !n.neg {
				break
			}
			fallthrough
		default:
			p.fail("expected a number, found %s", p.describe(p.tok))
		}
	default:
		p.failExpected("expected a number, found %s", p.describe(p.tok))
	}
	n.tok = p.tok
	p.advance()
	return n
}

// parseNumberAttr parses `4`, `-1.5`, `0.5 : f64`, `7 : i32`, `0x7F800000 : f32`.
func (p *parser) parseNumberAttr() ir.Attr {
	n := p.parseNumLit(false)
	if !p.accept(tokColon) {
		if n.isInt() {
			return ir.IntAttr{Value: p.intValue(n, ir.I64), Type: ir.I64Type}
		}
		return ir.FloatAttr{Value: p.floatValue(n, ir.F32), Type: ir.F32Type}
	}
	tpos := p.tok.Pos
	t := p.parseValueType()
	et, ok := t.(ir.ElemType)
	if !ok {
		p.failAt(tpos, "a number attribute takes an element type such as i32 or f64, not '%s'", t)
	}
	if et.Kind.IsFloat() {
		return ir.FloatAttr{Value: p.floatValue(n, et.Kind), Type: et}
	}
	return ir.IntAttr{Value: p.intValue(n, et.Kind), Type: et}
}

// intValue converts a literal to a value of integer kind k, checking its range.
func (p *parser) intValue(n numLit, k ir.ElemKind) int64 {
	if n.isBool() {
		if k != ir.I1 {
			p.failAt(n.pos, "expected an integer literal for %s, found '%s'", k, n)
		}
		if n.tok.Value == "true" {
			return 1
		}
		return 0
	}
	if !n.isInt() {
		p.failAt(n.pos, "expected an integer literal for %s, found '%s'", k, n)
	}
	u, ok := parseUint(n.tok.Value)
	var v int64
	switch {
	case !ok || u > 1<<63 || (u == 1<<63 && !n.neg):
		p.failAt(n.pos, "integer literal %s does not fit in 64 bits", n)
	case n.neg:
		v = -int64(u)
	default:
		v = int64(u)
	}
	if lo, hi := k.IntRange(); v < lo || v > hi {
		p.failAt(n.pos, "integer %s is out of range for %s [%d, %d]", n, k, lo, hi)
	}
	return v
}

// parseUint reads a decimal or 0x-hexadecimal integer token.
func parseUint(s string) (uint64, bool) {
	var u uint64
	var err error
	if strings.HasPrefix(s, "0x") {
		u, err = strconv.ParseUint(s[2:], 16, 64)
	} else {
		u, err = strconv.ParseUint(s, 10, 64)
	}
	return u, err == nil
}

// maxFinite is the largest finite value of each float kind.
var maxFinite = map[ir.ElemKind]float64{
	ir.F32: math.MaxFloat32, ir.F16: 65504, ir.BF16: 3.3895313892515355e38,
	ir.F8E4M3FN: 448, ir.F8E5M2: 57344,
}

// floatValue converts a literal to a value of float kind k. Values of kinds
// narrower than f64 are rounded to f32, the precision they print with.
func (p *parser) floatValue(n numLit, k ir.ElemKind) float64 {
	var v float64
	switch {
	case n.isBool():
		p.failAt(n.pos, "expected a float literal for %s, found '%s'", k, n)
	case n.isHex():
		if n.neg {
			p.failAt(n.pos, "hexadecimal float literal should not have a leading minus")
		}
		return p.floatFromBits(n, k)
	case n.tok.Value == "inf":
		v = math.Inf(1)
	case n.tok.Value == "nan":
		v = math.NaN()
	default:
		// The token is well formed, so the only error is a range error:
		// overflow gives an infinity, underflow a zero or a subnormal.
		f, _ := strconv.ParseFloat(n.tok.Value, 64)
		if math.IsInf(f, 0) {
			p.failAt(n.pos, "float literal %s is out of range for %s", n, k)
		}
		v = f
	}
	if n.neg {
		v = -v
	}
	if k == ir.F64 || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	r := float64(float32(v))
	if math.IsInf(r, 0) || math.Abs(r) > maxFinite[k] {
		p.failAt(n.pos, "float literal %s is out of range for %s (largest finite value %s)", n, k, ir.FormatFloat(maxFinite[k], k))
	}
	return r
}

// floatFromBits reads a hexadecimal integer as the bit pattern of kind k.
func (p *parser) floatFromBits(n numLit, k ir.ElemKind) float64 {
	u, ok := parseUint(n.tok.Value)
	bits := k.BitWidth()
	if !ok || (bits < 64 && u>>bits != 0) {
		p.failAt(n.pos, "hexadecimal bit pattern %s does not fit in the %d bits of %s", n, bits, k)
	}
	switch k {
	case ir.F64:
		return math.Float64frombits(u)
	case ir.F32:
		return float64(math.Float32frombits(uint32(u)))
	case ir.F16:
		return float64(float16.Frombits(uint16(u)).Float32())
	case ir.BF16:
		return float64(math.Float32frombits(uint32(u) << 16))
	case ir.F8E4M3FN:
		return decodeF8(uint8(u), 3, 7, false)
	case ir.F8E5M2:
		return decodeF8(uint8(u), 2, 15, true)
	}
	panic(fmt.Sprintf("parser: bit pattern for non-float kind %s", k))
}

// decodeF8 decodes an 8-bit float with the given mantissa width and
// exponent bias. With ieee, the top exponent holds infinities and NaNs
// (f8E5M2); otherwise only S.1111.111 is NaN and there are no infinities
// (f8E4M3FN).
func decodeF8(b uint8, mant, bias int, ieee bool) float64 {
	sign := 1.0
	if b&0x80 != 0 {
		sign = -1
	}
	expBits := 7 - mant
	e := int(b>>mant) & (1<<expBits - 1)
	m := int(b) & (1<<mant - 1)
	maxE := 1<<expBits - 1
	switch {
	case ieee && e == maxE && m == 0:
		return math.Inf(int(sign))
	case ieee && e == maxE, !ieee && e == maxE && m == 1<<mant-1:
		return math.NaN()
	case e == 0:
		return sign * math.Ldexp(float64(m), 1-bias-mant)
	}
	return sign * math.Ldexp(float64(m|1<<mant), e-bias-mant)
}

// ---------------------------------------------------------------------------
// Dense literals

// denseLit is a `dense<...>` literal as written; its values are converted
// when the type is known (after the op's `:` for `graph.constant dense<..>`).
type denseLit struct {
	pos   lexer.Position // of `dense`
	splat bool
	elems []numLit
	// dims is the shape the nested lists spell; leafDepth is the nesting
	// depth of the numbers (-1 when the lists hold none).
	dims      []int64
	leafDepth int
}

// parseDenseLiteral parses `dense<0.5>`, `dense<[[1, 2], [3, 4]]>`.
func (p *parser) parseDenseLiteral() *denseLit {
	d := &denseLit{pos: p.tok.Pos, leafDepth: -1}
	p.advance() // dense
	p.advance() // <
	if p.is(tokLBracket) {
		p.parseDenseList(d, 0)
	} else {
		d.splat = true
		d.elems = append(d.elems, p.parseNumLit(true))
	}
	if !p.is(tokGreater) {
		p.failExpected("expected '>' to end the dense literal, found %s", p.describe(p.tok))
	}
	p.advance()
	return d
}

func (p *parser) parseDenseList(d *denseLit, depth int) {
	open := p.tok.Pos
	p.nest(open, "dense literal list")
	defer p.unnest()
	p.advance() // [
	var n int64
	if !p.is(tokRBracket) {
		for {
			if p.is(tokLBracket) {
				p.parseDenseList(d, depth+1)
			} else {
				if d.leafDepth < 0 {
					d.leafDepth = depth + 1
				} else if d.leafDepth != depth+1 {
					p.fail("dense literal mixes numbers and lists at the same depth")
				}
				d.elems = append(d.elems, p.parseNumLit(true))
			}
			n++
			if p.is(tokRBracket) {
				break
			}
			if !p.accept(tokComma) {
				p.failExpected("expected ',' or ']' in dense literal, found %s", p.describe(p.tok))
			}
		}
	}
	p.advance() // ]
	if d.leafDepth >= 0 && depth >= d.leafDepth {
		p.failAt(open, "dense literal mixes numbers and lists at the same depth")
	}
	// Inner lists close first, so dims fills in from the inside out.
	for len(d.dims) <= depth {
		d.dims = append(d.dims, -1)
	}
	if d.dims[depth] < 0 {
		d.dims[depth] = n
	} else if d.dims[depth] != n {
		p.failAt(open, "dense literal has lists of different lengths: %d and %d elements at depth %d", d.dims[depth], n, depth+1)
	}
}

// buildDense converts a literal to a DenseAttr of type t (written at tpos).
func (p *parser) buildDense(d *denseLit, t ir.Type, tpos lexer.Position) ir.DenseAttr {
	var st ir.ShapedType
	switch t := t.(type) {
	case ir.TensorType:
		st = t
	case ir.VectorType:
		st = t
	default:
		p.failAt(tpos, "a dense literal needs a tensor or vector type, not '%s'", t)
	}
	shape := st.GetShape()
	if ir.HasDynamicDim(shape) {
		p.failAt(tpos, "a dense literal needs a static shape, not '%s'", t)
	}
	if !d.splat {
		if !denseShapeMatches(d, shape) {
			p.failAt(d.pos, "dense literal has shape %s, but its type '%s' has shape %s", spellShape(d.dims), t, spellShape(shape))
		}
	}
	k := st.GetElem().Kind
	vals := make([]float64, len(d.elems))
	for i, n := range d.elems {
		if k.IsFloat() {
			vals[i] = p.floatValue(n, k)
		} else {
			v := p.intValue(n, k)
			if v > 1<<53 || v < -(1<<53) {
				p.failAt(n.pos, "integer %s in a dense literal is beyond 2^53 and cannot be stored exactly", n)
			}
			vals[i] = float64(v)
		}
	}
	return ir.DenseAttr{Type: st, Values: vals}
}

// denseShapeMatches reports whether the nesting of a non-splat literal fits
// shape. Lists without numbers fit any shape of zero elements they spell a
// prefix of (`[]` for tensor<0x4xf32>).
func denseShapeMatches(d *denseLit, shape []int64) bool {
	if d.leafDepth >= 0 {
		if len(d.dims) != len(shape) {
			return false
		}
		for i := range shape {
			if d.dims[i] != shape[i] {
				return false
			}
		}
		return true
	}
	if n, ok := ir.NumElements(shape); !ok || n != 0 || len(d.dims) > len(shape) {
		return false
	}
	for i := range d.dims {
		if d.dims[i] != shape[i] {
			return false
		}
	}
	return true
}

// spellShape writes a shape as `2x3`, or `[]` for rank 0.
func spellShape(shape []int64) string {
	if len(shape) == 0 {
		return "[] (a scalar)"
	}
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = strconv.FormatInt(d, 10)
	}
	return strings.Join(parts, "x")
}
