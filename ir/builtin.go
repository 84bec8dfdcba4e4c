package ir

import "fmt"

// Names of the builtin structural ops.
const (
	ModuleOpName = "builtin.module"
	FuncOpName   = "func.func"
	ReturnOpName = "func.return"
)

func init() {
	RegisterOp(&OpDef{
		Name:    ModuleOpName,
		Summary: "a top-level container of functions: `module { ... }`",
		Traits:  IsolatedFromAbove | NoTerminator | SymbolTable,
		Attrs:   []string{"sym_name"},
		Verify: func(op *Operation) error {
			if op.NumRegions() != 1 || len(op.Region(0).Blocks) != 1 {
				return OpError(op, "expects one region with one block")
			}
			return nil
		},
	})
	RegisterOp(&OpDef{
		Name:     FuncOpName,
		Summary:  "a function: `func.func @name(%x: T) -> T { ... }`",
		Traits:   IsolatedFromAbove,
		AnyAttrs: true,
		Verify:   verifyFunc,
	})
	RegisterOp(&OpDef{
		Name:    ReturnOpName,
		Summary: "returns from a function: `return %y : T`",
		Traits:  Terminator | Pure,
		Verify:  verifyReturn,
	})
}

// Module is a `builtin.module` op holding functions.
type Module struct{ *Operation }

// NewModule creates an empty module.
func NewModule(loc Location) Module {
	op := NewOperation(ModuleOpName, loc, nil, nil, nil, 1)
	op.Region(0).AppendBlock(NewBlock())
	return Module{op}
}

// Body returns the module's single block.
func (m Module) Body() *Block { return m.Region(0).Blocks[0] }

// Funcs returns the functions of the module in order.
func (m Module) Funcs() []Func {
	var fs []Func
	for o := m.Body().First(); o != nil; o = o.Next() {
		if o.Name() == FuncOpName {
			fs = append(fs, Func{o})
		}
	}
	return fs
}

// Lookup returns the function called name.
func (m Module) Lookup(name string) (Func, bool) {
	for _, f := range m.Funcs() {
		if f.SymName() == name {
			return f, true
		}
	}
	return Func{}, false
}

// Func is a `func.func` op.
type Func struct{ *Operation }

// NewFunc creates a function with an entry block whose arguments match the
// inputs of ft. The caller appends it to a module.
func NewFunc(loc Location, name string, ft FunctionType) Func {
	var attrs AttrDict
	attrs.Set("sym_name", StringAttr(name))
	attrs.Set("function_type", TypeAttr{ft})
	op := NewOperation(FuncOpName, loc, nil, nil, attrs, 1)
	op.Region(0).AppendBlock(NewBlock(ft.Inputs...))
	return Func{op}
}

// SymName returns the function's name (without '@').
func (f Func) SymName() string {
	s, _ := f.Attr("sym_name").(StringAttr)
	return string(s)
}

// Type returns the function type.
func (f Func) Type() FunctionType {
	if ta, ok := f.Attr("function_type").(TypeAttr); ok {
		if ft, ok := ta.Type.(FunctionType); ok {
			return ft
		}
	}
	return FunctionType{}
}

// SetType replaces the function type attribute.
func (f Func) SetType(ft FunctionType) { f.SetAttr("function_type", TypeAttr{ft}) }

// Body returns the entry block.
func (f Func) Body() *Block { return f.Region(0).Entry() }

// Args returns the entry block arguments.
func (f Func) Args() []*Value { return f.Body().Args }

// Return returns the function's terminator, or nil.
func (f Func) Return() *Operation {
	if b := f.Body(); b != nil && b.Last() != nil && b.Last().Name() == ReturnOpName {
		return b.Last()
	}
	return nil
}

func verifyFunc(op *Operation) error {
	f := Func{op}
	if _, ok := op.Attr("sym_name").(StringAttr); !ok {
		return OpError(op, "requires a 'sym_name' string attribute")
	}
	ta, ok := op.Attr("function_type").(TypeAttr)
	if !ok {
		return OpError(op, "requires a 'function_type' attribute")
	}
	ft, ok := ta.Type.(FunctionType)
	if !ok {
		return OpError(op, "'function_type' must be a function type, got %s", ta.Type)
	}
	if op.NumRegions() != 1 || len(op.Region(0).Blocks) == 0 {
		return OpError(op, "expects a body")
	}
	if len(op.Region(0).Blocks) != 1 {
		return OpError(op, "expects a single-block body")
	}
	args := f.Args()
	if len(args) != len(ft.Inputs) {
		return OpError(op, "entry block has %d arguments but the function type has %d inputs", len(args), len(ft.Inputs))
	}
	for i, a := range args {
		if !TypeEqual(a.Type(), ft.Inputs[i]) {
			return OpError(op, "type of entry block argument #%d (%s) does not match the function signature (%s)", i, a.Type(), ft.Inputs[i])
		}
	}
	return nil
}

func verifyReturn(op *Operation) error {
	parent := op.ParentOp()
	if parent == nil || parent.Name() != FuncOpName {
		return OpError(op, "expects parent op 'func.func'")
	}
	ft := Func{parent}.Type()
	if op.NumOperands() != len(ft.Results) {
		return OpError(op, "has %d operands, but enclosing function (@%s) returns %d", op.NumOperands(), Func{parent}.SymName(), len(ft.Results))
	}
	for i, v := range op.Operands() {
		if !TypeEqual(v.Type(), ft.Results[i]) {
			return OpError(op, "type of return operand %d (%s) doesn't match function result type (%s) in function @%s", i, v.Type(), ft.Results[i], Func{parent}.SymName())
		}
	}
	return nil
}

// String prints an op with the default printer options (debugging aid).
func (op *Operation) String() string {
	p := NewPrinter(PrintOptions{})
	p.PrintOp(op)
	return p.String()
}

// ValueString prints a value reference for debugging (`%name` or `<type>`).
func (v *Value) String() string {
	if v.Name != "" {
		return "%" + v.Name
	}
	return fmt.Sprintf("<%s value>", v.typ)
}
