package ir

import (
	"strconv"
	"strings"
)

// PrintOptions select the printed form.
type PrintOptions struct {
	// Generic prints every op as `"dialect.op"(%a) ({...}) {attrs} : (T) -> T`.
	Generic bool
	// DebugInfo appends `loc("file":line:col)` to every op.
	DebugInfo bool
}

// Printer writes IR text. The output parses back to the same IR, and the
// same IR always prints the same bytes: names come from the values' name
// hints in program order, falling back to numbers, never from map order.
type Printer struct {
	opts   PrintOptions
	sb     strings.Builder
	indent int
	scopes []*nameScope
}

type nameScope struct {
	values map[*Value]string
	blocks map[*Block]string
	labels map[string]bool // block labels in use
	used   map[string]bool
	next   int
	nextBB int
}

// NewPrinter creates a printer.
func NewPrinter(opts PrintOptions) *Printer { return &Printer{opts: opts} }

// String returns what was printed so far.
func (p *Printer) String() string { return p.sb.String() }

// Print formats a whole module or op and returns the text.
func Print(op *Operation, opts PrintOptions) string {
	p := NewPrinter(opts)
	p.PrintOp(op)
	return p.String()
}

// PrintOp prints op and a newline at the current indentation.
func (p *Printer) PrintOp(op *Operation) {
	if len(p.scopes) == 0 {
		p.pushScope()
		defer p.popScope()
	}
	p.writeIndent()
	p.printOp(op)
	p.sb.WriteByte('\n')
}

func (p *Printer) writeIndent() {
	for i := 0; i < p.indent; i++ {
		p.sb.WriteString("  ")
	}
}

func (p *Printer) pushScope() {
	p.scopes = append(p.scopes, &nameScope{values: map[*Value]string{}, blocks: map[*Block]string{}, labels: map[string]bool{}, used: map[string]bool{}})
}

func (p *Printer) popScope() { p.scopes = p.scopes[:len(p.scopes)-1] }

// scope returns the innermost naming scope; a printer used through
// ValueRef before any PrintOp gets its outermost scope here.
func (p *Printer) scope() *nameScope {
	if len(p.scopes) == 0 {
		p.pushScope()
	}
	return p.scopes[len(p.scopes)-1]
}

// nameOf names a value on first sight (definitions come before uses in a
// valid program; an invalid one still prints).
func (p *Printer) nameOf(v *Value) string {
	for i := len(p.scopes) - 1; i >= 0; i-- {
		if n, ok := p.scopes[i].values[v]; ok {
			return n
		}
	}
	return p.define(v)
}

func (p *Printer) define(v *Value) string {
	s := p.scope()
	var name string
	if v.Name != "" && isValueName(v.Name) && !p.taken(v.Name) {
		name = v.Name
	} else if v.Name != "" && isValueName(v.Name) && !isNumber(v.Name) {
		for i := 1; ; i++ {
			cand := v.Name + "_" + strconv.Itoa(i)
			if !p.taken(cand) {
				name = cand
				break
			}
		}
	} else {
		for {
			cand := strconv.Itoa(s.next)
			s.next++
			if !p.taken(cand) {
				name = cand
				break
			}
		}
	}
	s.used[name] = true
	s.values[v] = name
	return name
}

func (p *Printer) taken(name string) bool {
	for _, s := range p.scopes {
		if s.used[name] {
			return true
		}
	}
	return false
}

func isNumber(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

func isValueName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '$' || r == '.' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')) {
			return false
		}
	}
	return true
}

// ValueRef returns how a use of v is spelled: `%x`, or `%r#1` for a result
// of a multi-result op.
func (p *Printer) ValueRef(v *Value) string {
	if d := v.DefiningOp(); d != nil && d.NumResults() > 1 {
		return "%" + p.nameOf(d.Result(0)) + "#" + strconv.Itoa(v.index)
	}
	return "%" + p.nameOf(v)
}

func (p *Printer) blockLabel(b *Block) string {
	s := p.scope()
	if l, ok := s.blocks[b]; ok {
		return l
	}
	l := "bb" + strconv.Itoa(s.nextBB)
	s.nextBB++
	if b.Label != "" && isValueName(b.Label) && !s.labels[b.Label] {
		l = b.Label
	}
	// a generated label may already be a block's own: ^bb1, then ^bb1 again
	for s.labels[l] {
		l = "bb" + strconv.Itoa(s.nextBB)
		s.nextBB++
	}
	s.labels[l] = true
	s.blocks[b] = l
	return l
}

func (p *Printer) printResults(op *Operation) {
	if op.NumResults() == 0 {
		return
	}
	// nameOf, not define: a use printed before this definition (invalid IR
	// still prints) has already named the value.
	name := p.nameOf(op.Result(0))
	p.sb.WriteString("%" + name)
	if op.NumResults() > 1 {
		p.sb.WriteString(":" + strconv.Itoa(op.NumResults()))
		// later results share the group name; record them for #N uses
		for _, r := range op.Results()[1:] {
			p.scope().values[r] = name + "#" + strconv.Itoa(r.index)
		}
	}
	p.sb.WriteString(" = ")
}

func (p *Printer) printOp(op *Operation) {
	generic := p.opts.Generic
	if !generic {
		switch op.Name() {
		case ModuleOpName:
			if p.printModule(op) {
				return
			}
			generic = true // the parser reads `module` only in its own form
		case FuncOpName:
			if p.printFunc(op) {
				return
			}
			generic = true
		}
	}
	p.printResults(op)
	if generic {
		p.printGeneric(op)
	} else {
		p.printCustom(op)
	}
	p.printLoc(op.Loc)
}

func (p *Printer) printLoc(l Location) {
	if p.opts.DebugInfo {
		p.sb.WriteString(" " + l.String())
	}
}

// printModule prints `module @m attributes {...} {...}`; it returns false
// for a malformed module, which then prints generically.
func (p *Printer) printModule(op *Operation) bool {
	if op.NumRegions() != 1 || len(op.Region(0).Blocks) != 1 {
		return false
	}
	p.sb.WriteString("module")
	if name, ok := op.Attr("sym_name").(StringAttr); ok {
		p.sb.WriteString(" @" + string(name))
	}
	rest := op.Attrs.clone()
	rest.Delete("sym_name")
	if len(rest) > 0 {
		p.sb.WriteString(" attributes " + rest.String())
	}
	p.sb.WriteString(" {\n")
	p.indent++
	for o := op.Region(0).Blocks[0].First(); o != nil; o = o.Next() {
		p.PrintOp(o)
	}
	p.indent--
	p.writeIndent()
	p.sb.WriteString("}")
	p.printLoc(op.Loc)
	return true
}

// printFunc prints `func.func @f(%a: T) -> T {...}`; it returns false for a
// malformed function, which then prints generically.
func (p *Printer) printFunc(op *Operation) bool {
	f := Func{op}
	name, ok1 := op.Attr("sym_name").(StringAttr)
	ta, ok2 := op.Attr("function_type").(TypeAttr)
	if !ok1 || !ok2 || op.NumRegions() != 1 || len(op.Region(0).Blocks) != 1 {
		return false
	}
	ft, ok := ta.Type.(FunctionType)
	if !ok || len(f.Args()) != len(ft.Inputs) {
		return false
	}
	p.pushScope()
	defer p.popScope()
	p.sb.WriteString("func.func @" + string(name) + "(")
	for i, a := range f.Args() {
		if i > 0 {
			p.sb.WriteString(", ")
		}
		p.sb.WriteString("%" + p.define(a) + ": " + typeString(a.Type()))
	}
	p.sb.WriteString(")")
	switch len(ft.Results) {
	case 0:
	case 1:
		p.sb.WriteString(" -> " + typeString(ft.Results[0]))
	default:
		p.sb.WriteString(" -> (")
		writeTypeListTo(&p.sb, ft.Results)
		p.sb.WriteString(")")
	}
	rest := op.Attrs.clone()
	rest.Delete("sym_name")
	rest.Delete("function_type")
	if len(rest) > 0 {
		p.sb.WriteString(" attributes " + rest.String())
	}
	p.sb.WriteString(" {\n")
	p.indent++
	for o := f.Body().First(); o != nil; o = o.Next() {
		p.PrintOp(o)
	}
	p.indent--
	p.writeIndent()
	p.sb.WriteString("}")
	p.printLoc(op.Loc)
	return true
}

func writeTypeListTo(sb *strings.Builder, ts []Type) { writeTypeList(sb, ts) }

func (p *Printer) printOperandList(op *Operation) {
	for i := 0; i < op.NumOperands(); i++ {
		if i > 0 {
			p.sb.WriteString(", ")
		}
		if v := op.Operand(i); v != nil {
			p.sb.WriteString(p.ValueRef(v))
		} else {
			p.sb.WriteString("%<null>")
		}
	}
}

func (p *Printer) operandTypes(op *Operation) []Type {
	ts := make([]Type, op.NumOperands())
	for i := range ts {
		if v := op.Operand(i); v != nil {
			ts[i] = v.Type()
		}
	}
	return ts
}

func resultTypes(op *Operation) []Type {
	ts := make([]Type, op.NumResults())
	for i, r := range op.Results() {
		ts[i] = r.Type()
	}
	return ts
}

// printCustom prints the uniform custom form:
//
//	name %a, %b [dense<...>] {attrs} [{region}...] : T
//	name %a, %b {attrs} : (T1, T2) -> T3
//
// `return` drops the dialect prefix; terminators list operand types (`: T1, T2`).
func (p *Printer) printCustom(op *Operation) {
	name := op.Name()
	if name == ReturnOpName {
		name = "return"
	}
	p.sb.WriteString(name)
	if op.NumOperands() > 0 {
		p.sb.WriteByte(' ')
		p.printOperandList(op)
	}
	attrs := op.Attrs
	if d, ok := op.Attr("value").(DenseAttr); ok && op.NumOperands() == 0 && op.NumResults() == 1 && TypeEqual(d.Type, op.Result(0).Type()) {
		p.sb.WriteString(" dense<" + d.Literal() + ">")
		attrs = attrs.clone()
		attrs.Delete("value")
	}
	if len(attrs) > 0 {
		p.sb.WriteString(" " + attrs.String())
	}
	for _, r := range op.Regions() {
		p.sb.WriteByte(' ')
		p.printRegion(r)
	}
	ins, outs := p.operandTypes(op), resultTypes(op)
	if len(ins)+len(outs) == 0 {
		return
	}
	p.sb.WriteString(" : ")
	if t := uniformType(ins, outs); t != nil {
		p.sb.WriteString(t.String())
		return
	}
	if len(outs) == 0 && op.HasTrait(Terminator) {
		writeTypeList(&p.sb, ins)
		return
	}
	p.sb.WriteString(FunctionType{Inputs: ins, Results: outs}.String())
}

// uniformType returns the one type shared by every operand and result, or nil.
func uniformType(ins, outs []Type) Type {
	var t Type
	for _, ts := range [][]Type{ins, outs} {
		for _, x := range ts {
			if x == nil {
				return nil
			}
			if t == nil {
				t = x
			} else if !TypeEqual(t, x) {
				return nil
			}
		}
	}
	return t
}

// printGeneric prints `"name"(%a, %b) ({region}) {attrs} : (T, T) -> T`.
func (p *Printer) printGeneric(op *Operation) {
	p.sb.WriteString(Quote(op.Name()) + "(")
	p.printOperandList(op)
	p.sb.WriteString(")")
	if op.NumRegions() > 0 {
		p.sb.WriteString(" (")
		for i, r := range op.Regions() {
			if i > 0 {
				p.sb.WriteString(", ")
			}
			p.printRegion(r)
		}
		p.sb.WriteString(")")
	}
	if len(op.Attrs) > 0 {
		p.sb.WriteString(" " + op.Attrs.String())
	}
	p.sb.WriteString(" : " + FunctionType{Inputs: p.operandTypes(op), Results: resultTypes(op)}.String())
}

// printRegion prints `{\n ^bb0(%a: T):\n ops\n}`. Block labels are printed
// when a block has arguments or the region has several blocks. Regions of
// IsolatedFromAbove ops get a fresh naming scope.
func (p *Printer) printRegion(r *Region) {
	isolated := r.ParentOp() != nil && r.ParentOp().HasTrait(IsolatedFromAbove)
	if isolated {
		p.pushScope()
		defer p.popScope()
	}
	p.sb.WriteString("{\n")
	for _, b := range r.Blocks {
		if len(b.Args) > 0 || len(r.Blocks) > 1 {
			p.writeIndent()
			p.sb.WriteString("^" + p.blockLabel(b))
			if len(b.Args) > 0 {
				p.sb.WriteString("(")
				for i, a := range b.Args {
					if i > 0 {
						p.sb.WriteString(", ")
					}
					p.sb.WriteString("%" + p.define(a) + ": " + typeString(a.Type()))
				}
				p.sb.WriteString(")")
			}
			p.sb.WriteString(":\n")
		}
		p.indent++
		for o := b.First(); o != nil; o = o.Next() {
			p.PrintOp(o)
		}
		p.indent--
	}
	p.writeIndent()
	p.sb.WriteString("}")
}
