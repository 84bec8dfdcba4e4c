package ir

// Builder creates ops at an insertion point, like MLIR's OpBuilder.
//
//	b := ir.NewBuilderAtEnd(fn.Body())
//	sum := b.Create("graph.add", loc, []*ir.Value{x, y}, []ir.Type{t}, nil).Result(0)
type Builder struct {
	block  *Block
	before *Operation // insert before this op; nil means at the end
	// Loc is used by CreateHere.
	Loc Location
}

// NewBuilderAtEnd inserts at the end of b.
func NewBuilderAtEnd(b *Block) *Builder { return &Builder{block: b} }

// NewBuilderBefore inserts right before op.
func NewBuilderBefore(op *Operation) *Builder {
	return &Builder{block: op.Block(), before: op, Loc: op.Loc}
}

// SetInsertionPointToEnd moves the insertion point to the end of b.
func (bl *Builder) SetInsertionPointToEnd(b *Block) { bl.block, bl.before = b, nil }

// SetInsertionPointBefore moves the insertion point before op.
func (bl *Builder) SetInsertionPointBefore(op *Operation) { bl.block, bl.before = op.Block(), op }

// SetInsertionPointAfter moves the insertion point after op.
func (bl *Builder) SetInsertionPointAfter(op *Operation) {
	bl.block, bl.before = op.Block(), op.Next()
}

// InsertionBlock returns the block ops are inserted into.
func (bl *Builder) InsertionBlock() *Block { return bl.block }

// Insert places an already created op at the insertion point.
func (bl *Builder) Insert(op *Operation) *Operation {
	if bl.block != nil {
		bl.block.InsertBefore(op, bl.before)
	}
	return op
}

// Create builds an op and inserts it.
func (bl *Builder) Create(name string, loc Location, operands []*Value, results []Type, attrs AttrDict) *Operation {
	return bl.Insert(NewOperation(name, loc, operands, results, attrs, 0))
}

// CreateHere builds an op at the builder's current Loc.
func (bl *Builder) CreateHere(name string, operands []*Value, results []Type, attrs AttrDict) *Operation {
	return bl.Create(name, bl.Loc, operands, results, attrs)
}

// Attrs builds an AttrDict from name/value pairs.
func Attrs(kv ...any) AttrDict {
	var d AttrDict
	for i := 0; i+1 < len(kv); i += 2 {
		d.Set(kv[i].(string), kv[i+1].(Attr))
	}
	return d
}
