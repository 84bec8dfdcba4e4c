package ir

// Symbol lookup in a block (a module body): LookupSymbol finds the op
// named by its sym_name attribute in O(1), so that a module of many
// kernels, each launched by name, verifies and lowers in linear time.
// The index is built on the first lookup and kept up to date as ops are
// inserted and removed; an op renamed since (its sym_name set again) is
// found by rebuilding the index, which a lookup that misses does too.

// symbolName returns op's sym_name, or "".
func symbolName(op *Operation) string {
	s, _ := op.Attrs.Get("sym_name").(StringAttr)
	return string(s)
}

// LookupSymbol returns the op of b whose sym_name is name (the first, if
// there are several), or nil.
func (b *Block) LookupSymbol(name string) *Operation {
	if b.symbols != nil {
		if op := b.symbols[name]; op != nil && op.block == b && symbolName(op) == name {
			return op
		}
	}
	b.rebuildSymbols()
	return b.symbols[name]
}

// rebuildSymbols indexes the ops of b by name, the first of each name.
func (b *Block) rebuildSymbols() {
	b.symbols = map[string]*Operation{}
	for o := b.first; o != nil; o = o.next {
		b.noteSymbol(o)
	}
}

// noteSymbol adds op, just linked into b, to the index. A name already
// indexed keeps its op while that op is still in b under that name (a
// second definition of a name is the verifier's error).
func (b *Block) noteSymbol(op *Operation) {
	name := symbolName(op)
	if name == "" {
		return
	}
	if prev := b.symbols[name]; prev != nil && prev.block == b && symbolName(prev) == name {
		return
	}
	b.symbols[name] = op
}

// forgetSymbol drops op, just unlinked from b, from the index.
func (b *Block) forgetSymbol(op *Operation) {
	if name := symbolName(op); name != "" && b.symbols[name] == op {
		delete(b.symbols, name)
	}
}
