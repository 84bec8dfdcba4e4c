package parser

import (
	"strconv"
	"strings"

	"github.com/alecthomas/participle/v2/lexer"
	"github.com/tensorforge/tensorforge/ir"
)

// SSA names are scoped like MLIR's: the regions of an IsolatedFromAbove op
// (func.func, builtin.module, ...) start a fresh scope that sees nothing
// outside; the regions of any other op see the values of the enclosing
// regions, and the names they define go out of scope when they end.
//
// A use may come before its definition (MLIR allows it syntactically; the
// verifier rejects dominance errors): it gets a placeholder value, replaced
// when the definition appears. A name still undefined when its isolated
// scope ends is an error at its first use.

// scope is the SSA name table of one isolated region tree.
type scope struct {
	names map[string]definition
	// forward holds placeholders for uses before definition, by name.
	forward map[string][]*forwardRef
	// nested counts the open non-isolated regions; the names they define
	// are recorded in defs so they can be dropped when the region ends.
	nested int
	defs   []string
	parent *scope
	// recent holds the last definitions: most operands name a value
	// defined a few ops before, and a look here is cheaper than a probe
	// of a map of a million names.
	recent     [8]recentDef
	recentNext int
}

type recentDef struct {
	name string
	def  definition
}

// definition is a named group of values: one result, the results of a
// `%r:2` group, or a block argument.
type definition struct {
	first *ir.Value // the group's first value
	count int       // values in the group
}

// forwardRef is a value used before its definition.
type forwardRef struct {
	index int // `%r#1` -> 1
	value *ir.Value
	pos   lexer.Position
}

// operandRef is an operand as written, resolved once its type is known.
type operandRef struct {
	name  string // without '%' and '#N'
	index int
	tok   lexer.Token
}

func (p *parser) pushIsolatedScope() {
	p.scope = &scope{names: make(map[string]definition), parent: p.scope}
}

// pushFunctionScope starts the scope of a function body, sized for the
// values an average function of this file defines: growing a map of a
// hundred thousand names step by step costs a tenth of the parse.
func (p *parser) pushFunctionScope() {
	if p.defsPerFunc < 0 {
		src := p.lex.src
		// Every definition has an '=' and takes at least 16 bytes of
		// text, which bounds the guess for inputs of nothing but '='.
		defs := min(strings.Count(src, "="), len(src)/16)
		p.defsPerFunc = defs / max(1, strings.Count(src, "func.func"))
	}
	p.scope = &scope{names: make(map[string]definition, p.defsPerFunc), parent: p.scope}
}

// popIsolatedScope ends an isolated scope; uses of names it never defined
// are reported at the first of them.
func (p *parser) popIsolatedScope() {
	s := p.scope
	if len(s.forward) > 0 {
		var first *forwardRef
		var firstName string
		for name, refs := range s.forward {
			for _, r := range refs {
				if first == nil || r.pos.Offset < first.pos.Offset {
					first, firstName = r, name
				}
			}
		}
		p.failAt(first.pos, "use of undeclared SSA value '%s'", spellRef(firstName, first.index))
	}
	p.scope = s.parent
}

// enterNestedRegion opens a non-isolated region; it returns the mark that
// exitNestedRegion takes.
func (p *parser) enterNestedRegion() int {
	p.scope.nested++
	return len(p.scope.defs)
}

func (p *parser) exitNestedRegion(mark int) {
	s := p.scope
	for _, name := range s.defs[mark:] {
		delete(s.names, name)
	}
	s.defs = s.defs[:mark]
	s.nested--
	s.recent = [len(s.recent)]recentDef{} // it may hold names just dropped
}

func spellRef(name string, index int) string {
	if index == 0 {
		return "%" + name
	}
	return "%" + name + "#" + strconv.Itoa(index)
}

// splitRef splits a value token `%r#1` into its name and result number.
func (p *parser) splitRef(tok lexer.Token) (string, int) {
	name := tok.Value[1:]
	i := strings.IndexByte(name, '#')
	if i < 0 {
		return name, 0
	}
	n, err := strconv.Atoi(name[i+1:])
	if err != nil || n > 1<<30 {
		p.failAt(tok.Pos, "result number in '%s' is out of range", tok.Value)
	}
	return name[:i], n
}

// define binds name to count values starting at first (results of one op
// or a block argument). pos is where the name is written.
func (p *parser) define(name string, first *ir.Value, count int, pos lexer.Position) {
	s := p.scope
	if prev, dup := s.names[name]; dup {
		d := ir.Errorf(p.loc(pos), "redefinition of SSA value '%%%s'", name)
		if op := prev.first.DefiningOp(); op != nil && op.Loc.Known() {
			d.AddNote(op.Loc, "previously defined here")
		}
		p.failDiag(d)
	}
	d := definition{first: first, count: count}
	s.names[name] = d
	s.recent[s.recentNext] = recentDef{name, d}
	s.recentNext = (s.recentNext + 1) % len(s.recent)
	if s.nested > 0 {
		s.defs = append(s.defs, name)
	}
	if refs, ok := s.forward[name]; ok {
		p.resolveForward(name, first, count, refs, pos)
		delete(s.forward, name)
	}
}

// resolveForward replaces the placeholders of earlier uses with the values
// now defined.
func (p *parser) resolveForward(name string, first *ir.Value, count int, refs []*forwardRef, pos lexer.Position) {
	for _, r := range refs {
		if r.index >= count {
			p.failAt(r.pos, "'%s' refers to result #%d, but '%%%s' has %s", spellRef(name, r.index), r.index, name, plural(count, "value"))
		}
		v := groupValue(first, r.index)
		if !typesEqual(v.Type(), r.value.Type()) {
			d := ir.Errorf(p.loc(pos), "definition of SSA value '%s' has type '%s' but it was used with type '%s'",
				spellRef(name, r.index), v.Type(), r.value.Type())
			d.AddNote(p.loc(r.pos), "used here")
			p.failDiag(d)
		}
		r.value.ReplaceAllUsesWith(v)
	}
}

// groupValue returns value i of a group that starts at first.
func groupValue(first *ir.Value, i int) *ir.Value {
	if i == 0 {
		return first
	}
	return first.DefiningOp().Result(first.ResultIndex() + i)
}

// lookup finds the definition of name.
func (s *scope) lookup(name string) (definition, bool) {
	for i := range s.recent {
		if s.recent[i].name == name {
			return s.recent[i].def, true
		}
	}
	d, ok := s.names[name]
	return d, ok
}

// use resolves an operand reference whose type is t.
func (p *parser) use(ref operandRef, t ir.Type) *ir.Value {
	s := p.scope
	d, ok := s.lookup(ref.name)
	if ok {
		if ref.index >= d.count {
			p.failAt(ref.tok.Pos, "'%s' refers to result #%d, but '%%%s' has %s", ref.tok.Value, ref.index, ref.name, plural(d.count, "value"))
		}
		v := groupValue(d.first, ref.index)
		if !typesEqual(v.Type(), t) {
			p.failAt(ref.tok.Pos, "use of value '%s' expects different type than prior uses: '%s' vs '%s'", ref.tok.Value, t, v.Type())
		}
		return v
	}
	for _, r := range s.forward[ref.name] {
		if r.index == ref.index {
			if !typesEqual(r.value.Type(), t) {
				p.failAt(ref.tok.Pos, "use of value '%s' expects different type than prior uses: '%s' vs '%s'", ref.tok.Value, t, r.value.Type())
			}
			return r.value
		}
	}
	// A placeholder: the result of a detached op that is never inserted.
	ph := ir.NewOperation("forward_ref", p.loc(ref.tok.Pos), nil, []ir.Type{t}, nil, 0).Result(0)
	if s.forward == nil {
		s.forward = make(map[string][]*forwardRef)
	}
	s.forward[ref.name] = append(s.forward[ref.name], &forwardRef{index: ref.index, value: ph, pos: ref.tok.Pos})
	return ph
}
