package parser

import (
	"strconv"

	"github.com/alecthomas/participle/v2/lexer"
	"github.com/tensorforge/tensorforge/ir"
)

// Operations:
//
//	%y = graph.add %a, %b {attrs} : tensor<4xf32>                  custom form
//	%n = graph.rmsnorm %x, %w {eps = 1.0e-05} : (T1, T2) -> T1
//	%c = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
//	%f = graph.fused %a {kind = "ew"} {
//	^bb0(%x: T):
//	  ...
//	} : T
//	%r:2 = "test.pair"(%a) ({...}) {attrs} : (T) -> (T, T) loc("f.tir":3:5)   generic form
//	return %a, %b : T1, T2
//
// plus the structural ops `module @m attributes {...} { ... }` and
// `func.func @f(%x: T) -> T attributes {...} { ... }`.

// maxResults bounds `%r:N` so a typo cannot allocate a billion values.
const maxResults = 1 << 16

// resultGroup is one `%name` or `%name:N` on the left of an op.
type resultGroup struct {
	name  string
	count int
	tok   lexer.Token
}

// parseFile parses the top level: ops (usually func.func) into an implicit
// module, or a single `module { ... }` which is returned as it is.
func (p *parser) parseFile() ir.Module {
	mod := ir.NewModule(ir.Location{File: p.file, Line: p.firstLine, Col: 1})
	body := mod.Body()
	p.pushIsolatedScope()
	for !p.is(tokEOF) {
		p.parseOperation(body)
	}
	p.popIsolatedScope()
	if first := body.First(); first != nil && first == body.Last() && first.Name() == ir.ModuleOpName {
		first.Remove()
		return ir.Module{Operation: first}
	}
	return mod
}

// parseOperation parses one op, with its results, and appends it to b.
func (p *parser) parseOperation(b *ir.Block) {
	start := p.tok.Pos
	var groupBuf [1]resultGroup
	groups := groupBuf[:0]
	nres := 0
	if p.is(tokValueID) {
		groups, nres = p.parseResultGroups(groups)
	}
	var op *ir.Operation
	switch p.tok.Type {
	case tokString:
		op = p.parseGenericOp(nres, start)
	case tokIdent:
		switch p.tok.Value {
		case "module":
			op = p.parseModule(nres, start)
		case "func.func":
			// A function that is not well formed prints in the uniform
			// custom form, `func.func {attrs} {region}`.
			if p.lookahead(1).Type == tokLBrace {
				op = p.parseCustomOp(nres, start)
			} else {
				op = p.parseFunc(nres, start)
			}
		default:
			op = p.parseCustomOp(nres, start)
		}
	default:
		if nres > 0 {
			p.failExpected("expected an operation name after '=', found %s", p.describe(p.tok))
		}
		p.fail("expected an operation, found %s", p.describe(p.tok))
	}
	op.Loc = p.parseTrailingLoc(op.Loc)
	b.Append(op)
	if len(groups) > 0 && op.NumResults() > 0 {
		i := 0
		for _, g := range groups {
			v := op.Result(i)
			v.Name = g.name
			p.define(g.name, v, g.count, g.tok.Pos)
			i += g.count
		}
	}
}

// parseResultGroups parses `%a, %b:2 =`.
func (p *parser) parseResultGroups(groups []resultGroup) ([]resultGroup, int) {
	total := 0
	for {
		tok := p.expect(tokValueID, "expected a result name such as '%r'")
		name, idx := p.splitRef(tok)
		if idx != 0 || len(name)+1 != len(tok.Value) {
			p.failAt(tok.Pos, "a result name cannot have a '#N' suffix; write '%%%s:N' for N results", name)
		}
		count := 1
		if p.accept(tokColon) {
			nt := p.expect(tokInt, "expected the number of results after ':'")
			n, ok := parseUint(nt.Value)
			if !ok || n < 1 || n > maxResults {
				p.failAt(nt.Pos, "the number of results in '%s:%s' must be between 1 and %d", tok.Value, nt.Value, maxResults)
			}
			count = int(n)
		}
		total += count
		if total > maxResults {
			p.failAt(tok.Pos, "an op may have at most %d results", maxResults)
		}
		groups = append(groups, resultGroup{name: name, count: count, tok: tok})
		if !p.accept(tokComma) {
			break
		}
	}
	if !p.is(tokEqual) {
		p.failExpected("expected '=' after the result names, found %s", p.describe(p.tok))
	}
	p.advance()
	return groups, total
}

// isolated reports whether the op called name starts a fresh SSA scope.
func isolated(name string) bool {
	d := ir.LookupOp(name)
	return d != nil && d.Traits&ir.IsolatedFromAbove != 0
}

// operandFollows decides whether the `%x` after an op name is its first
// operand or the start of the next op (`%x = ...`, `%r:2 = ...`,
// `%a, %b = ...`) after an op without operands.
func (p *parser) operandFollows() bool {
	k := 1
	for {
		t := p.lookahead(k)
		if t.Type == tokColon && p.lookahead(k+1).Type == tokInt {
			k += 2
			t = p.lookahead(k)
		}
		switch t.Type {
		case tokEqual:
			return false
		case tokComma:
			if p.lookahead(k+1).Type == tokValueID {
				k += 2
				continue
			}
		}
		return true
	}
}

// attrDictFollows tells an attribute dictionary (`{}` or `{key = ...`) from a
// region at a '{'. An empty region prints as `{` and `}` on two lines, so
// `{}` on one line is the dictionary and across lines the region.
func (p *parser) attrDictFollows() bool {
	next := p.lookahead(1)
	switch next.Type {
	case tokRBrace:
		return next.Pos.Line == p.tok.Pos.Line
	case tokIdent, tokString:
		return p.lookahead(2).Type == tokEqual
	}
	return false
}

// parseOperandList parses `%a, %b#1, ...` onto p.refs.
func (p *parser) parseOperandList() {
	for {
		tok := p.tok
		name, idx := p.splitRef(tok)
		p.refs = append(p.refs, operandRef{name: name, index: idx, tok: tok})
		p.advance()
		if !p.is(tokComma) {
			return
		}
		p.advance()
		if !p.is(tokValueID) {
			p.failExpected("expected an SSA operand after ',', found %s", p.describe(p.tok))
		}
	}
}

// parseCustomOp parses the uniform custom form
//
//	name %a, %b [dense<...>] [{attrs}] [{region}...] [: T | : T1, T2 | : (T1, T2) -> T3]
//
// One type after ':' types every operand and result; k types for k operands
// and no results type each operand (return's form); a function type gives
// them all. The number of results is the number of names on the left.
func (p *parser) parseCustomOp(nres int, start lexer.Position) *ir.Operation {
	name := p.tok.Value
	if name == "return" {
		name = ir.ReturnOpName
	}
	p.advance()
	base := len(p.refs)
	if p.is(tokValueID) && p.operandFollows() {
		p.parseOperandList()
	}
	nops := len(p.refs) - base

	var dense *denseLit
	if p.isKeyword("dense") && p.lookahead(1).Type == tokLess {
		dense = p.parseDenseLiteral()
	}
	var attrs ir.AttrDict
	var regions []*ir.Region
	for p.is(tokLBrace) {
		if p.attrDictFollows() {
			p.parseAttrDictInto(&attrs)
			continue
		}
		regions = append(regions, p.parseOpRegion(isolated(name)))
	}

	ins, outs := p.typeBuf[:0], []ir.Type(nil)
	tpos := p.tok.Pos
	switch {
	case p.is(tokColon):
		p.advance()
		tpos = p.tok.Pos
		if p.is(tokLParen) {
			ft := p.parseFunctionType()
			if len(ft.Inputs) != nops {
				p.failAt(tpos, "custom op '%s' has %s but its function type lists %s", name, plural(nops, "operand"), plural(len(ft.Inputs), "input type"))
			}
			if len(ft.Results) != nres {
				p.failAt(start, "custom op '%s' has %s but %s given", name, plural(len(ft.Results), "result"), wereGiven(nres))
			}
			ins, outs = ft.Inputs, ft.Results
			break
		}
		ts := p.parseValueTypeList()
		switch {
		case len(ts) == 1 && nops+nres > 0:
			for range nops + nres {
				ins = append(ins, ts[0])
			}
			ins, outs = ins[:nops], ins[nops:]
		case len(ts) == nops && nres == 0:
			ins = ts
		case nops+nres == 0:
			p.failAt(tpos, "custom op '%s' has no operands and no results to give a type", name)
		default:
			p.failAt(tpos, "custom op '%s' has %s and %s, but %s given after ':' (give one type for all of them, one per operand when there are no results, or a function type)",
				name, plural(nops, "operand"), plural(nres, "result"), wereGivenTypes(len(ts)))
		}
	case nops > 0:
		p.failExpected("expected ':' after operand list")
	case nres > 0:
		p.failExpected("expected ':' and the result type of '%s'", name)
	}

	if dense != nil {
		if len(outs) != 1 {
			p.failAt(dense.pos, "a dense literal after the op name takes the type of the op's single result, but '%s' has %s", name, plural(len(outs), "result"))
		}
		if attrs.Get("value") != nil {
			p.failAt(dense.pos, "'value' is given twice: as the dense literal and in the attribute dictionary")
		}
		attrs.Set("value", p.buildDense(dense, outs[0], tpos))
	}
	op := p.newOp(name, start, base, ins, outs, attrs, regions)
	p.typeBuf = ins[:0]
	return op
}

// parseValueTypeList parses `T (, T)*`.
func (p *parser) parseValueTypeList() []ir.Type {
	t := p.parseValueType()
	if !p.is(tokComma) {
		return []ir.Type{t}
	}
	ts := []ir.Type{t}
	for p.accept(tokComma) {
		ts = append(ts, p.parseValueType())
	}
	return ts
}

func wereGiven(n int) string {
	if n == 1 {
		return "1 name was"
	}
	return strconv.Itoa(n) + " names were"
}

func wereGivenTypes(n int) string {
	if n == 1 {
		return "1 type was"
	}
	return strconv.Itoa(n) + " types were"
}

// newOp resolves the operands on p.refs from base (typed by ins) and builds
// the op.
func (p *parser) newOp(name string, start lexer.Position, base int, ins, outs []ir.Type, attrs ir.AttrDict, regions []*ir.Region) *ir.Operation {
	vals := p.valueBuf[:0]
	for i, r := range p.refs[base:] {
		vals = append(vals, p.use(r, ins[i]))
	}
	p.refs = p.refs[:base]
	op := ir.NewOperation(name, p.loc(start), vals, outs, attrs, 0)
	clear(vals)
	p.valueBuf = vals[:0]
	for _, r := range regions {
		op.AddRegion().TakeBody(r)
	}
	if name == ir.ModuleOpName || name == ir.FuncOpName {
		p.checkStructural(op, start)
	}
	return op
}

// parseOpRegion parses a region of an op, in a fresh SSA scope if the op
// is IsolatedFromAbove.
func (p *parser) parseOpRegion(isolated bool) *ir.Region {
	r := &ir.Region{}
	if isolated {
		p.pushIsolatedScope()
		p.parseRegion(r, nil, "")
		p.popIsolatedScope()
	} else {
		mark := p.enterNestedRegion()
		p.parseRegion(r, nil, "")
		p.exitNestedRegion(mark)
	}
	return r
}

// parseRegion parses `{ blocks }` into r:
//
//	{
//	  ops of an entry block without arguments
//	^bb1(%a: T):
//	  ...
//	}
//
// With entry set (a function or module body, whose entry block already is
// in r) the first block has no label and noLabel is the error for one.
func (p *parser) parseRegion(r *ir.Region, entry *ir.Block, noLabel string) {
	if !p.is(tokLBrace) {
		p.failExpected("expected '{' to begin a region, found %s", p.describe(p.tok))
	}
	p.nest(p.tok.Pos, "region")
	defer p.unnest()
	p.advance()
	cur := entry
	if entry != nil {
		if p.is(tokBlockID) {
			p.fail("%s", noLabel)
		}
	} else {
		if p.is(tokRBrace) {
			p.advance() // an empty region has no blocks
			return
		}
		if !p.is(tokBlockID) {
			cur = ir.NewBlock()
			r.AppendBlock(cur)
		}
	}
	for {
		switch p.tok.Type {
		case tokRBrace:
			p.advance()
			return
		case tokBlockID:
			cur = p.parseBlockHeader(r)
		case tokEOF:
			p.failExpected("expected '}' to end the region")
		default:
			p.parseOperation(cur)
		}
	}
}

// parseBlockHeader parses `^label(%a: T, ...):` and appends the new block to r.
func (p *parser) parseBlockHeader(r *ir.Region) *ir.Block {
	tok := p.tok
	label := tok.Value[1:]
	for _, b := range r.Blocks {
		if b.Label == label {
			p.fail("redefinition of block '%s'", tok.Value)
		}
	}
	p.advance()
	b := ir.NewBlock()
	b.Label = label
	r.AppendBlock(b)
	if p.accept(tokLParen) && !p.accept(tokRParen) {
		for {
			vt := p.expect(tokValueID, "expected a block argument such as '%a'")
			name := p.argName(vt)
			if !p.is(tokColon) {
				p.failExpected("expected ':' and a type after block argument '%s'", vt.Value)
			}
			p.advance()
			a := b.AddArg(p.parseValueType())
			p.parseTrailingLoc(ir.Location{}) // argument locations are not kept
			a.Name = name
			p.define(name, a, 1, vt.Pos)
			if p.accept(tokRParen) {
				break
			}
			if !p.accept(tokComma) {
				p.failExpected("expected ',' or ')' in block argument list, found %s", p.describe(p.tok))
			}
		}
	}
	if !p.is(tokColon) {
		p.failExpected("expected ':' after block label '%s'", tok.Value)
	}
	p.advance()
	return b
}

// argName returns the name of an argument token, which may not use `#N`.
func (p *parser) argName(tok lexer.Token) string {
	name, idx := p.splitRef(tok)
	if idx != 0 || len(name)+1 != len(tok.Value) {
		p.failAt(tok.Pos, "an argument name cannot have a '#N' suffix")
	}
	return name
}

// parseGenericOp parses
//
//	"dialect.op"(%a, %b) ({region}, ...) {attrs} : (T1, T2) -> T3
//
// (attributes are also accepted before the regions).
func (p *parser) parseGenericOp(nres int, start lexer.Position) *ir.Operation {
	nameTok := p.tok
	name := p.unquote(nameTok)
	if !ir.IsIdentifier(name) {
		p.fail("invalid operation name %s: expected a name such as \"graph.add\"", nameTok.Value)
	}
	switch name {
	case "return":
		name = ir.ReturnOpName
	case "module":
		name = ir.ModuleOpName
	}
	p.advance()
	if !p.is(tokLParen) {
		p.failExpected("expected '(' to begin the operand list of %s", nameTok.Value)
	}
	p.advance()
	base := len(p.refs)
	if !p.accept(tokRParen) {
		if !p.is(tokValueID) {
			p.failExpected("expected an SSA operand or ')', found %s", p.describe(p.tok))
		}
		p.parseOperandList()
		if !p.is(tokRParen) {
			p.failExpected("expected ',' or ')' in operand list, found %s", p.describe(p.tok))
		}
		p.advance()
	}
	nops := len(p.refs) - base

	var attrs ir.AttrDict
	sawAttrs := false
	if p.is(tokLBrace) {
		attrs = p.parseAttrDict()
		sawAttrs = true
	}
	var regions []*ir.Region
	if p.is(tokLParen) {
		p.advance()
		iso := isolated(name)
		for {
			regions = append(regions, p.parseOpRegion(iso))
			if p.accept(tokRParen) {
				break
			}
			if !p.accept(tokComma) {
				p.failExpected("expected ',' or ')' after region, found %s", p.describe(p.tok))
			}
		}
	}
	if !sawAttrs && p.is(tokLBrace) {
		attrs = p.parseAttrDict()
	}
	if !p.is(tokColon) {
		p.failExpected("expected ':' and the function type of the operation")
	}
	p.advance()
	tpos := p.tok.Pos
	if !p.is(tokLParen) {
		p.failExpected("expected a function type such as (T1, T2) -> T3 after ':', found %s", p.describe(p.tok))
	}
	ft := p.parseFunctionType()
	if len(ft.Inputs) != nops {
		p.failAt(tpos, "operation has %s but its function type lists %s", plural(nops, "operand"), plural(len(ft.Inputs), "input type"))
	}
	if nres > 0 && len(ft.Results) != nres {
		p.failAt(start, "operation defines %s but was provided %d to bind", plural(len(ft.Results), "result"), nres)
	}
	if len(ft.Results) > maxResults {
		p.failAt(tpos, "an op may have at most %d results", maxResults)
	}
	return p.newOp(name, start, base, ft.Inputs, ft.Results, attrs, regions)
}

// checkStructural holds module and func ops written in the generic or the
// uniform custom form to the shape their own syntax prints.
func (p *parser) checkStructural(op *ir.Operation, start lexer.Position) {
	if op.NumOperands() != 0 || op.NumResults() != 0 || op.NumRegions() != 1 {
		p.failAt(start, "'%s' op takes no operands and no results and has one region", op.Name())
	}
	if op.Name() == ir.ModuleOpName {
		r := op.Region(0)
		if len(r.Blocks) == 0 {
			r.AppendBlock(ir.NewBlock())
		}
		if len(r.Blocks) != 1 || len(r.Blocks[0].Args) != 0 {
			p.failAt(start, "'builtin.module' op expects one region with one block without arguments")
		}
	}
	if s, ok := op.Attr("sym_name").(ir.StringAttr); ok && !isSymbolName(string(s)) {
		p.failAt(start, "'%s' op has an invalid symbol name %s", op.Name(), s)
	}
	// The custom form of a function writes its argument types from the
	// entry block, so they must be the ones of its function type.
	if ta, ok := op.Attr("function_type").(ir.TypeAttr); ok && op.Name() == ir.FuncOpName && len(op.Region(0).Blocks) == 1 {
		if ft, ok := ta.Type.(ir.FunctionType); ok && len(ft.Inputs) == len(op.Region(0).Blocks[0].Args) {
			for i, a := range op.Region(0).Blocks[0].Args {
				if !typesEqual(a.Type(), ft.Inputs[i]) {
					p.failAt(start, "type of entry block argument #%d (%s) does not match the function signature (%s)", i, a.Type(), ft.Inputs[i])
				}
			}
		}
	}
}

// isSymbolName reports whether s can be written after '@'.
func isSymbolName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isSuffixChar(s[i]) {
			return false
		}
	}
	return true
}

// parseModule parses `module [@name] [attributes {...}] { ops }`.
func (p *parser) parseModule(nres int, start lexer.Position) *ir.Operation {
	if nres > 0 {
		p.failAt(start, "'builtin.module' does not produce results")
	}
	p.advance()
	mod := ir.NewModule(p.loc(start))
	named := false
	if p.is(tokSymbolRef) {
		mod.SetAttr("sym_name", ir.StringAttr(p.tok.Value[1:]))
		named = true
		p.advance()
	}
	if p.isKeyword("attributes") {
		p.advance()
		dictPos := p.tok.Pos
		for _, a := range p.parseAttrDict() {
			if a.Name == "sym_name" && named {
				p.failAt(dictPos, "'sym_name' is given twice: as '@name' and in 'attributes'")
			}
			mod.SetAttr(a.Name, a.Value)
		}
	}
	if !p.is(tokLBrace) {
		p.failExpected("expected '{' to begin the module body, found %s", p.describe(p.tok))
	}
	p.pushIsolatedScope()
	p.parseRegion(mod.Region(0), mod.Body(), "a module body is a single block without a label")
	p.popIsolatedScope()
	if len(mod.Region(0).Blocks) != 1 {
		p.failAt(start, "'builtin.module' op expects one region with one block")
	}
	p.checkStructural(mod.Operation, start)
	return mod.Operation
}

// funcArg is a function argument as written.
type funcArg struct {
	tok  lexer.Token
	name string
}

// parseFunc parses
//
//	func.func [private] @name(%x: T, ...) [-> T | -> (T, ...)] [attributes {...}] { body }
func (p *parser) parseFunc(nres int, start lexer.Position) *ir.Operation {
	if nres > 0 {
		p.failAt(start, "'func.func' does not produce results")
	}
	p.advance()
	visibility := ""
	if p.isKeyword("private") || p.isKeyword("public") || p.isKeyword("nested") {
		visibility = p.tok.Value
		p.advance()
	}
	if !p.is(tokSymbolRef) {
		p.failExpected("expected the function name such as '@f', found %s", p.describe(p.tok))
	}
	name := p.tok.Value[1:]
	p.advance()
	if !p.is(tokLParen) {
		p.failExpected("expected '(' to begin the argument list of '@%s'", name)
	}
	p.advance()
	var args []funcArg
	var ins []ir.Type
	if !p.accept(tokRParen) {
		for {
			if !p.is(tokValueID) {
				p.failExpected("expected an argument such as '%%x: tensor<4xf32>', found %s", p.describe(p.tok))
			}
			tok := p.tok
			argName := p.argName(tok)
			p.advance()
			if !p.is(tokColon) {
				p.failExpected("expected ':' and a type after argument '%s'", tok.Value)
			}
			p.advance()
			ins = append(ins, p.parseValueType())
			p.parseTrailingLoc(ir.Location{}) // argument locations are not kept
			args = append(args, funcArg{tok: tok, name: argName})
			if p.accept(tokRParen) {
				break
			}
			if !p.accept(tokComma) {
				p.failExpected("expected ',' or ')' after an argument, found %s", p.describe(p.tok))
			}
		}
	}
	var outs []ir.Type
	if p.accept(tokArrow) {
		outs = p.parseResultTypes()
		if p.is(tokArrow) {
			p.fail("a function type cannot be the type of a value")
		}
	}
	var extra ir.AttrDict
	if p.isKeyword("attributes") {
		p.advance()
		dictPos := p.tok.Pos
		extra = p.parseAttrDict()
		for _, a := range extra {
			if a.Name == "sym_name" || a.Name == "function_type" {
				p.failAt(dictPos, "'%s' cannot be set in 'attributes': it is written as the function's name and signature", a.Name)
			}
		}
	}
	if !p.is(tokLBrace) {
		p.failExpected("expected '{' to begin the body of '@%s', found %s", name, p.describe(p.tok))
	}
	f := ir.NewFunc(p.loc(start), name, ir.FunctionType{Inputs: ins, Results: outs})
	if visibility != "" {
		f.SetAttr("sym_visibility", ir.StringAttr(visibility))
	}
	for _, a := range extra {
		f.SetAttr(a.Name, a.Value)
	}
	p.pushFunctionScope()
	for i, a := range args {
		v := f.Args()[i]
		v.Name = a.name
		p.define(a.name, v, 1, a.tok.Pos)
	}
	p.parseRegion(f.Region(0), f.Body(), "invalid block name in region with named arguments")
	p.popIsolatedScope()
	return f.Operation
}
