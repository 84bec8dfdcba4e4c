package ir

import (
	"fmt"
	"strings"
)

// ErrorList is several diagnostics returned as one error.
type ErrorList []*Diagnostic

func (l ErrorList) Error() string {
	parts := make([]string, len(l))
	for i, d := range l {
		parts[i] = d.Error()
	}
	return strings.Join(parts, "\n")
}

// AsDiagnostics unpacks an error into diagnostics: a *Diagnostic, an
// ErrorList, or any other error as one error diagnostic without location.
func AsDiagnostics(err error) []*Diagnostic {
	switch e := err.(type) {
	case nil:
		return nil
	case *Diagnostic:
		return []*Diagnostic{e}
	case ErrorList:
		return e
	}
	return []*Diagnostic{{Severity: SevError, Message: err.Error()}}
}

// Verify checks the structural invariants of op and everything nested in
// it, then each registered op's own rules. It reports the first problem of
// every op that has one, as MLIR's verifier words them:
//
//   - the op is registered (`unregistered operation 'foo.bar'`);
//   - every operand is defined, and dominates its use
//     (`operand #0 does not dominate this use`);
//   - values do not cross the boundary of an IsolatedFromAbove op;
//   - blocks of regions end in a terminator, and terminators end blocks;
//   - shaped types have sizes that fit in int64 bytes;
//   - OpDef.Verify.
func Verify(op *Operation) error {
	v := &verifier{}
	v.verifyOp(op)
	if len(v.errs) == 0 {
		return nil
	}
	return v.errs
}

type verifier struct {
	errs ErrorList
}

func (v *verifier) verifyOp(op *Operation) {
	if err := v.verifyOne(op); err != nil {
		v.errs = append(v.errs, AsDiagnostics(err)...)
	}
	if op.name == ModuleOpName {
		v.verifySymbols(op)
	}
	for _, r := range op.regions {
		for _, b := range r.Blocks {
			for o := b.first; o != nil; o = o.next {
				v.verifyOp(o)
			}
		}
	}
}

// verifySymbols checks that the ops of a module body (functions,
// kernels, nested modules) have distinct symbol names: a second
// definition is an error at it, with a note at the first.
func (v *verifier) verifySymbols(module *Operation) {
	var first map[string]*Operation
	for _, r := range module.regions {
		for _, b := range r.Blocks {
			for o := b.first; o != nil; o = o.next {
				name, ok := o.Attrs.Get("sym_name").(StringAttr)
				if !ok {
					continue
				}
				if first == nil {
					first = map[string]*Operation{}
				}
				if prev := first[string(name)]; prev != nil {
					v.errs = append(v.errs, Errorf(o.Loc, "redefinition of symbol named '%s'", string(name)).
						AddNote(prev.Loc, "see existing symbol definition here"))
					continue
				}
				first[string(name)] = o
			}
		}
	}
}

func (v *verifier) verifyOne(op *Operation) error {
	if op.def == nil {
		// the registry may have gained the op after the op was built
		op.def = LookupOp(op.name)
		if op.def == nil {
			return Errorf(op.Loc, "unregistered operation '%s'", op.name)
		}
	}
	for i, o := range op.operands {
		if o.value == nil {
			return OpError(op, "operand #%d is null", i)
		}
		if err := checkDominance(op, i, o.value); err != nil {
			return err
		}
	}
	for _, r := range op.results {
		if err := checkTypeSize(r.typ); err != nil {
			return OpError(op, "result #%d: %s", r.index, err)
		}
	}
	for _, r := range op.regions {
		for _, b := range r.Blocks {
			for _, a := range b.Args {
				if err := checkTypeSize(a.typ); err != nil {
					return OpError(op, "block argument #%d: %s", a.index, err)
				}
			}
			if err := checkTerminator(op, b); err != nil {
				return err
			}
		}
	}
	if op.HasTrait(Terminator) && op.block != nil && op.next != nil {
		return OpError(op, "must be the last operation in the parent block")
	}
	if op.def.Verify != nil {
		return op.def.Verify(op)
	}
	return nil
}

func checkTerminator(parent *Operation, b *Block) error {
	if parent.HasTrait(NoTerminator) {
		return nil
	}
	last := b.last
	if last == nil {
		return OpError(parent, "expects a non-empty block with a terminator")
	}
	if last.def != nil && !last.HasTrait(Terminator) {
		return OpError(last, "is not a terminator, but ends a block of '%s'", parent.name)
	}
	return nil
}

func checkTypeSize(t Type) error {
	st, ok := t.(ShapedType)
	if !ok || HasDynamicDim(st.GetShape()) {
		return nil
	}
	if _, ok := NumElements(st.GetShape()); !ok {
		return fmt.Errorf("type %s has more elements than fit in int64", t)
	}
	if _, ok := ByteSizeOf(st); !ok {
		return fmt.Errorf("type %s is larger than 2^63 bytes", t)
	}
	return nil
}

// checkDominance verifies that val is visible at use: defined earlier in
// the same block, or in a block that encloses the use, without crossing
// an IsolatedFromAbove op.
func checkDominance(user *Operation, idx int, val *Value) error {
	var defBlock *Block
	if val.def != nil {
		defBlock = val.def.block
	} else {
		defBlock = val.block
	}
	if defBlock == nil {
		return OpError(user, "operand #%d uses a value that is not in any block", idx)
	}
	for anc := user; anc != nil; anc = anc.ParentOp() {
		if anc.block == defBlock {
			if val.def == nil {
				return nil
			}
			if val.def == anc && anc != user {
				return OpError(user, "operand #%d is defined by its own enclosing op", idx)
			}
			// an op that uses its own result falls through: it is not
			// before itself
			if val.def.IsBeforeInBlock(anc) {
				return nil
			}
			return OpError(user, "operand #%d does not dominate this use", idx).
				AddNote(val.def.Loc, "operand defined here")
		}
		if anc != user && anc.HasTrait(IsolatedFromAbove) {
			break
		}
		if p := anc.ParentOp(); p != nil && p.HasTrait(IsolatedFromAbove) && p.block != nil && !p.IsAncestor(defOwner(val)) {
			return OpError(user, "using value defined outside the region of '%s', which is isolated from above", p.name)
		}
	}
	return OpError(user, "operand #%d does not dominate this use", idx)
}

func defOwner(v *Value) *Operation {
	if v.def != nil {
		return v.def
	}
	return v.block.ParentOp()
}
