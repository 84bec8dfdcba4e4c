package ir

import "fmt"

// ---------------------------------------------------------------------------
// Locations

// Location is a source position, printed as `loc("file.tir":3:5)`.
// The zero Location is unknown.
type Location struct {
	File string
	Line int
	Col  int
}

// Known reports whether the location points into a source file.
func (l Location) Known() bool { return l.Line > 0 }

func (l Location) String() string {
	if !l.Known() {
		return "loc(unknown)"
	}
	return fmt.Sprintf("loc(%s:%d:%d)", Quote(l.File), l.Line, l.Col)
}

// ---------------------------------------------------------------------------
// Values

// Value is an SSA value: an operation result or a block argument.
type Value struct {
	typ   Type
	def   *Operation // defining op, nil for a block argument
	block *Block     // owning block, for a block argument
	index int        // result number or argument number
	uses  []*Operand
	// Name is the printer's preferred name (without '%'); the printer falls
	// back to a number if it is empty or already taken.
	Name string
}

// Type returns the value's type.
func (v *Value) Type() Type { return v.typ }

// SetType changes the value's type (used by type inference and lowering).
func (v *Value) SetType(t Type) { v.typ = t }

// DefiningOp returns the op that produces v, or nil for a block argument.
func (v *Value) DefiningOp() *Operation { return v.def }

// OwnerBlock returns the block that owns a block argument, or nil.
func (v *Value) OwnerBlock() *Block { return v.block }

// ResultIndex returns the result or argument number of v.
func (v *Value) ResultIndex() int { return v.index }

// IsBlockArg reports whether v is a block argument.
func (v *Value) IsBlockArg() bool { return v.def == nil }

// Uses returns the operands that use v. Do not modify the slice.
func (v *Value) Uses() []*Operand { return v.uses }

// HasUses reports whether any operand uses v.
func (v *Value) HasUses() bool { return len(v.uses) > 0 }

// DependsOn reports whether v is w or computed from it: w reached from v
// through the operands of the ops defining them.
func (v *Value) DependsOn(w *Value) bool {
	if v == w {
		return true
	}
	if v.def == nil {
		return false
	}
	for _, a := range v.def.Operands() {
		if a.DependsOn(w) {
			return true
		}
	}
	return false
}

// Users returns the distinct ops using v, in use order.
func (v *Value) Users() []*Operation {
	var out []*Operation
	if len(v.uses) <= 8 {
		for _, u := range v.uses {
			dup := false
			for _, o := range out {
				if o == u.Owner {
					dup = true
					break
				}
			}
			if !dup {
				out = append(out, u.Owner)
			}
		}
		return out
	}
	seen := make(map[*Operation]bool, len(v.uses))
	for _, u := range v.uses {
		if !seen[u.Owner] {
			seen[u.Owner] = true
			out = append(out, u.Owner)
		}
	}
	return out
}

// ReplaceAllUsesWith makes every user of v use w instead.
// The uses keep their order, after those w already has; moving them all
// at once keeps this linear in the number of uses.
func (v *Value) ReplaceAllUsesWith(w *Value) {
	if v == w {
		return
	}
	uses := v.uses
	v.uses = nil
	for _, o := range uses {
		o.value = w
		if w != nil {
			o.useIdx = len(w.uses)
			w.uses = append(w.uses, o)
		}
	}
}

// removeUse drops o from v's use list in O(1): the last use takes its
// place.
func (v *Value) removeUse(o *Operand) {
	i := o.useIdx
	if i < 0 || i >= len(v.uses) || v.uses[i] != o {
		return
	}
	last := len(v.uses) - 1
	v.uses[i] = v.uses[last]
	v.uses[i].useIdx = i
	v.uses[last] = nil
	v.uses = v.uses[:last]
}

// Operand is one use of a value by an operation.
type Operand struct {
	value *Value
	Owner *Operation
	Index int
	// useIdx is the operand's place in its value's use list.
	useIdx int
}

// Value returns the used value.
func (o *Operand) Value() *Value { return o.value }

// Set redirects the operand to another value, keeping use lists right.
func (o *Operand) Set(v *Value) {
	if o.value != nil {
		o.value.removeUse(o)
	}
	o.value = v
	if v != nil {
		o.useIdx = len(v.uses)
		v.uses = append(v.uses, o)
	}
}

// ---------------------------------------------------------------------------
// Operations

// Operation is one op: `%r = dialect.name %a, %b {attrs} : type`.
// It is generic: registered ops add meaning through their OpDef.
type Operation struct {
	name     string
	def      *OpDef
	operands []*Operand
	results  []*Value
	Attrs    AttrDict
	regions  []*Region
	Loc      Location

	block      *Block
	prev, next *Operation
	order      int // position in block; valid while block.orderValid
}

// NewOperation creates a detached op. Result values get the given types.
// def is looked up in the registry; unregistered names are allowed here and
// rejected by the verifier.
func NewOperation(name string, loc Location, operands []*Value, resultTypes []Type, attrs AttrDict, numRegions int) *Operation {
	op := &Operation{name: name, def: LookupOp(name), Loc: loc, Attrs: attrs.clone()}
	// One allocation for all operand records and one for all results: ops
	// are created by the million when parsing large programs.
	op.operands = make([]*Operand, len(operands))
	records := make([]Operand, len(operands))
	for i, v := range operands {
		o := &records[i]
		o.Owner, o.Index = op, i
		o.Set(v)
		op.operands[i] = o
	}
	op.results = make([]*Value, len(resultTypes))
	values := make([]Value, len(resultTypes))
	for i, t := range resultTypes {
		values[i] = Value{typ: t, def: op, index: i}
		op.results[i] = &values[i]
	}
	for i := 0; i < numRegions; i++ {
		op.regions = append(op.regions, &Region{parent: op})
	}
	return op
}

// Name returns the full op name, such as "graph.add".
func (op *Operation) Name() string { return op.name }

// Def returns the registered definition, or nil for an unknown op.
func (op *Operation) Def() *OpDef { return op.def }

// Dialect returns the part of the name before the first '.'.
func (op *Operation) Dialect() string {
	for i := 0; i < len(op.name); i++ {
		if op.name[i] == '.' {
			return op.name[:i]
		}
	}
	return ""
}

// NumOperands returns the operand count.
func (op *Operation) NumOperands() int { return len(op.operands) }

// Operand returns the value of operand i.
func (op *Operation) Operand(i int) *Value { return op.operands[i].value }

// OpOperand returns the use record of operand i.
func (op *Operation) OpOperand(i int) *Operand { return op.operands[i] }

// Operands returns the operand values (a fresh slice).
func (op *Operation) Operands() []*Value {
	vs := make([]*Value, len(op.operands))
	for i, o := range op.operands {
		vs[i] = o.value
	}
	return vs
}

// SetOperand redirects operand i to v.
func (op *Operation) SetOperand(i int, v *Value) { op.operands[i].Set(v) }

// SetOperands replaces all operands.
func (op *Operation) SetOperands(vs []*Value) {
	op.DropOperands()
	op.operands = make([]*Operand, len(vs))
	for i, v := range vs {
		o := &Operand{Owner: op, Index: i}
		o.Set(v)
		op.operands[i] = o
	}
}

// DropOperands removes every operand (and its use).
func (op *Operation) DropOperands() {
	for _, o := range op.operands {
		o.Set(nil)
	}
	op.operands = nil
}

// NumResults returns the result count.
func (op *Operation) NumResults() int { return len(op.results) }

// Result returns result i.
func (op *Operation) Result(i int) *Value { return op.results[i] }

// Results returns the results. Do not modify the slice.
func (op *Operation) Results() []*Value { return op.results }

// AddResult appends a result of type t and returns it.
func (op *Operation) AddResult(t Type) *Value {
	v := &Value{typ: t, def: op, index: len(op.results)}
	op.results = append(op.results, v)
	return v
}

// NumRegions returns the region count.
func (op *Operation) NumRegions() int { return len(op.regions) }

// Region returns region i.
func (op *Operation) Region(i int) *Region { return op.regions[i] }

// Regions returns the regions. Do not modify the slice.
func (op *Operation) Regions() []*Region { return op.regions }

// AddRegion appends an empty region.
func (op *Operation) AddRegion() *Region {
	r := &Region{parent: op}
	op.regions = append(op.regions, r)
	return r
}

// Attr returns the attribute called name, or nil.
func (op *Operation) Attr(name string) Attr { return op.Attrs.Get(name) }

// SetAttr sets an attribute.
func (op *Operation) SetAttr(name string, a Attr) { op.Attrs.Set(name, a) }

// Block returns the block containing op, or nil if detached.
func (op *Operation) Block() *Block { return op.block }

// ParentOp returns the op whose region contains op, or nil.
func (op *Operation) ParentOp() *Operation {
	if op.block == nil || op.block.parent == nil {
		return nil
	}
	return op.block.parent.parent
}

// Next returns the following op in the block, or nil.
func (op *Operation) Next() *Operation { return op.next }

// Prev returns the preceding op in the block, or nil.
func (op *Operation) Prev() *Operation { return op.prev }

// HasTrait reports whether the op's definition carries trait t.
func (op *Operation) HasTrait(t Trait) bool { return op.def != nil && op.def.Traits&t != 0 }

// IsAncestor reports whether op contains other (or is other).
func (op *Operation) IsAncestor(other *Operation) bool {
	for o := other; o != nil; o = o.ParentOp() {
		if o == op {
			return true
		}
	}
	return false
}

// Remove unlinks op from its block without destroying it.
func (op *Operation) Remove() {
	b := op.block
	if b == nil {
		return
	}
	if op.prev != nil {
		op.prev.next = op.next
	} else {
		b.first = op.next
	}
	if op.next != nil {
		op.next.prev = op.prev
	} else {
		b.last = op.prev
	}
	op.prev, op.next, op.block = nil, nil, nil
	b.count--
	// the ops left keep their relative order: positions stay valid
	if b.symbols != nil {
		b.forgetSymbol(op)
	}
}

// Erase unlinks op and drops every operand use inside it (recursively).
// Its results must have no uses left.
func (op *Operation) Erase() {
	op.Remove()
	op.dropAllReferences()
}

func (op *Operation) dropAllReferences() {
	op.DropOperands()
	for _, r := range op.regions {
		for _, b := range r.Blocks {
			for o := b.first; o != nil; o = o.next {
				o.dropAllReferences()
			}
		}
	}
}

// MoveBefore moves op (detaching it if needed) right before other.
func (op *Operation) MoveBefore(other *Operation) {
	if op == other {
		return
	}
	op.Remove()
	other.block.insertBefore(op, other)
}

// MoveAfter moves op right after other.
func (op *Operation) MoveAfter(other *Operation) {
	if op == other {
		return
	}
	op.Remove()
	other.block.insertAfter(op, other)
}

// Walk visits op and every op nested in its regions, pre-order. Returning
// false from fn skips the op's regions.
func (op *Operation) Walk(fn func(*Operation) bool) {
	if !fn(op) {
		return
	}
	for _, r := range op.regions {
		for _, b := range r.Blocks {
			for o := b.first; o != nil; {
				next := o.next // o may be erased by fn
				o.Walk(fn)
				o = next
			}
		}
	}
}

// WalkPost visits nested ops before op itself (post-order).
func (op *Operation) WalkPost(fn func(*Operation)) {
	for _, r := range op.regions {
		for _, b := range r.Blocks {
			for o := b.first; o != nil; {
				next := o.next
				o.WalkPost(fn)
				o = next
			}
		}
	}
	fn(op)
}

// ---------------------------------------------------------------------------
// Blocks and regions

// Block is a list of ops with arguments: `^bb0(%a: T): ...`.
type Block struct {
	Args        []*Value
	first, last *Operation
	count       int
	orderValid  bool
	parent      *Region
	// Label is the printer's preferred label (without '^').
	Label string
	// symbols indexes the ops with a sym_name once LookupSymbol was asked
	// (nil before); see symbols.go.
	symbols map[string]*Operation
}

// NewBlock creates a detached block with arguments of the given types.
func NewBlock(argTypes ...Type) *Block {
	b := &Block{}
	for _, t := range argTypes {
		b.AddArg(t)
	}
	return b
}

// AddArg appends an argument of type t.
func (b *Block) AddArg(t Type) *Value {
	v := &Value{typ: t, block: b, index: len(b.Args)}
	b.Args = append(b.Args, v)
	return v
}

// Parent returns the region holding b.
func (b *Block) Parent() *Region { return b.parent }

// ParentOp returns the op whose region holds b.
func (b *Block) ParentOp() *Operation {
	if b.parent == nil {
		return nil
	}
	return b.parent.parent
}

// First returns the first op, or nil.
func (b *Block) First() *Operation { return b.first }

// Last returns the last op (the terminator of a complete block), or nil.
func (b *Block) Last() *Operation { return b.last }

// Len returns the number of ops.
func (b *Block) Len() int { return b.count }

// Ops returns a snapshot of the ops, safe to iterate while mutating.
func (b *Block) Ops() []*Operation {
	ops := make([]*Operation, 0, b.count)
	for o := b.first; o != nil; o = o.next {
		ops = append(ops, o)
	}
	return ops
}

// Append adds op at the end of b.
func (b *Block) Append(op *Operation) {
	if op.block != nil {
		op.Remove()
	}
	op.block = b
	op.prev = b.last
	op.next = nil
	if b.last != nil {
		b.last.next = op
	} else {
		b.first = op
	}
	b.last = op
	b.count++
	if b.symbols != nil {
		b.noteSymbol(op)
	}
	if b.orderValid {
		if op.prev != nil {
			op.order = op.prev.order + 1
		} else {
			op.order = 0
		}
	}
}

// InsertBefore inserts op before pos (which must be in b); a nil pos appends.
func (b *Block) InsertBefore(op, pos *Operation) {
	if op == pos {
		return
	}
	if op.block != nil {
		op.Remove()
	}
	if pos == nil {
		b.Append(op)
		return
	}
	b.insertBefore(op, pos)
}

func (b *Block) insertBefore(op, pos *Operation) {
	op.block = b
	op.next = pos
	op.prev = pos.prev
	if pos.prev != nil {
		pos.prev.next = op
	} else {
		b.first = op
	}
	pos.prev = op
	b.count++
	b.orderValid = false
	if b.symbols != nil {
		b.noteSymbol(op)
	}
}

func (b *Block) insertAfter(op, pos *Operation) {
	if pos.next == nil {
		b.Append(op)
		return
	}
	b.insertBefore(op, pos.next)
}

// IsBeforeInBlock reports whether op comes before other; both must be in
// the same block. Amortised O(1): positions are renumbered lazily.
func (op *Operation) IsBeforeInBlock(other *Operation) bool {
	b := op.block
	if !b.orderValid {
		i := 0
		for o := b.first; o != nil; o = o.next {
			o.order = i
			i++
		}
		b.orderValid = true
	}
	return op.order < other.order
}

// Region is a list of blocks owned by an op.
type Region struct {
	Blocks []*Block
	parent *Operation
}

// ParentOp returns the op that owns r.
func (r *Region) ParentOp() *Operation { return r.parent }

// AppendBlock adds b at the end of r.
func (r *Region) AppendBlock(b *Block) {
	b.parent = r
	r.Blocks = append(r.Blocks, b)
}

// Entry returns the first block, or nil if the region is empty.
func (r *Region) Entry() *Block {
	if len(r.Blocks) == 0 {
		return nil
	}
	return r.Blocks[0]
}

// TakeBody moves all blocks of other into r (r must be empty).
func (r *Region) TakeBody(other *Region) {
	for _, b := range other.Blocks {
		b.parent = r
	}
	r.Blocks = append(r.Blocks, other.Blocks...)
	other.Blocks = nil
}

// ---------------------------------------------------------------------------
// Cloning

// Mapping maps values of an original to values of a clone.
type Mapping map[*Value]*Value

// Lookup returns the mapped value, or v itself.
func (m Mapping) Lookup(v *Value) *Value {
	if w, ok := m[v]; ok {
		return w
	}
	return v
}

// Clone deep-copies op (and its regions), remapping operands through m and
// recording the clone's results in m. A nil m maps nothing.
func (op *Operation) Clone(m Mapping) *Operation {
	if m == nil {
		m = Mapping{}
	}
	operands := make([]*Value, len(op.operands))
	for i, o := range op.operands {
		operands[i] = m.Lookup(o.value)
	}
	types := make([]Type, len(op.results))
	for i, r := range op.results {
		types[i] = r.typ
	}
	c := NewOperation(op.name, op.Loc, operands, types, op.Attrs.clone(), 0)
	for i, r := range op.results {
		c.results[i].Name = r.Name
		m[r] = c.results[i]
	}
	for _, r := range op.regions {
		nr := c.AddRegion()
		// map block args first so forward references inside are found
		blocks := make([]*Block, len(r.Blocks))
		for i, b := range r.Blocks {
			nb := &Block{Label: b.Label}
			for _, a := range b.Args {
				na := nb.AddArg(a.typ)
				na.Name = a.Name
				m[a] = na
			}
			nr.AppendBlock(nb)
			blocks[i] = nb
		}
		for i, b := range r.Blocks {
			for o := b.first; o != nil; o = o.next {
				blocks[i].Append(o.Clone(m))
			}
		}
	}
	return c
}
