package ir

import (
	"sort"
	"sync"
)

// Trait is a property of an op kind that passes may rely on.
type Trait uint32

const (
	// Pure ops have no side effects: unused ones may be erased (dce) and
	// identical ones merged (cse).
	Pure Trait = 1 << iota
	// Commutative binary ops may have their operands swapped.
	Commutative
	// Terminator ops end a block.
	Terminator
	// IsolatedFromAbove ops do not use values defined outside their regions.
	IsolatedFromAbove
	// Elementwise ops compute each result element from the operand elements
	// at the same (broadcast) index.
	Elementwise
	// ConstantLike ops produce a value known at compile time (attr `value`).
	ConstantLike
	// Reduction ops reduce along `axes` or `axis`.
	Reduction
	// SideEffects ops write memory (stores, launches).
	SideEffects
	// NoTerminator ops have a single-block region without a terminator.
	NoTerminator
	// SymbolTable ops hold symbol definitions (module).
	SymbolTable
)

// TraitNames gives each trait's spelling in generated docs.
var TraitNames = []struct {
	Trait Trait
	Name  string
}{
	{Pure, "Pure"}, {Commutative, "Commutative"}, {Terminator, "Terminator"},
	{IsolatedFromAbove, "IsolatedFromAbove"}, {Elementwise, "Elementwise"},
	{ConstantLike, "ConstantLike"}, {Reduction, "Reduction"}, {SideEffects, "SideEffects"},
	{NoTerminator, "NoTerminator"}, {SymbolTable, "SymbolTable"},
}

// OpDef describes a registered op kind. Dialects declare one per op
// (mostly generated from declarative tables) and register it at init.
type OpDef struct {
	Name    string // full name, "graph.add"
	Summary string // one line, for docs and `tfc` listings
	Traits  Trait
	// Attrs lists the attribute names the op understands; the verifier
	// rejects others unless AnyAttrs is set.
	Attrs    []string
	AnyAttrs bool
	// Verify checks per-op rules (operand counts, types, shapes, attributes).
	// It returns a message-carrying error; the verifier attaches the op's location.
	Verify func(op *Operation) error
	// Fold returns constant results for constant operands (nil entries in
	// consts are non-constant operands), or nil when it cannot fold.
	Fold func(op *Operation, consts []Attr) []Attr
}

var (
	registryMu sync.RWMutex
	registry   = map[string]*OpDef{}
)

// RegisterOp adds an op definition. Registering a name twice panics: it is
// a programming error found at init.
func RegisterOp(d *OpDef) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[d.Name]; dup {
		panic("ir: op registered twice: " + d.Name)
	}
	registry[d.Name] = d
}

// LookupOp returns the definition of a registered op, or nil.
func LookupOp(name string) *OpDef {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return registry[name]
}

// RegisteredOps returns every registered definition sorted by name.
func RegisteredOps() []*OpDef {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := make([]*OpDef, 0, len(registry))
	for _, d := range registry {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// HasAttr reports whether name is one of the op's declared attributes.
func (d *OpDef) HasAttr(name string) bool {
	if d.AnyAttrs {
		return true
	}
	for _, a := range d.Attrs {
		if a == name {
			return true
		}
	}
	return false
}
