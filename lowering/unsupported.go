package lowering

import (
	"github.com/tensorforge/tensorforge/ir"
)

// checkLowerable finds, in a graph-level function, the tensor types no
// backend's kernels are built for, with an error at each op concerned:
//
//   - tensors whose last dimension has a static extent of 0: kernels load
//     vectors along the last dimension, and the kernel plans do not
//     handle rows of no elements (a 0 in another dimension is an empty
//     grid or an empty reduction, which every backend runs);
//   - tensors of `index` elements: the loop dialect loads, stores and
//     computes on scalar types only, and `index` is its own type of
//     addresses and extents.
//
// Both evaluate in the reference interpreter (`tfc interpret`).
// LowerToLoops reports these errors when lowering the function fails,
// instead of the failure itself, which was about lanes and vectors of
// loop ops the user never wrote. A function that has such a type
// somewhere but lowers anyway (a row kernel over zero rows writing a
// tensor<0xf32>) is compiled.
func checkLowerable(f ir.Func) error {
	var errs ir.ErrorList
	// the ops decompose makes of one op share its location: one error
	// for them all
	seen := map[string]bool{}
	f.Walk(func(op *ir.Operation) bool {
		switch op.Name() {
		case ir.FuncOpName, "graph.fused", "graph.yield", "func.return":
			return true
		}
		if d := unsupportedTypes(op, valueTypes(op.Operands()), valueTypes(op.Results())); d != nil && !seen[d.Error()] {
			seen[d.Error()] = true
			errs = append(errs, d)
		}
		return true
	})
	if len(errs) == 0 {
		// nothing computes on them, but the signature still has them
		ft := f.Type()
		if d := unsupportedTypes(f.Operation, ft.Inputs, ft.Results); d != nil {
			errs = append(errs, d)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// unsupportedTypes reports, at op, the first operand or result type that
// no backend supports. The message names the type, not the op: after
// decompose the op may be one the user did not write (softmax's
// reduce_max), at the location of the one they did.
func unsupportedTypes(op *ir.Operation, operands, results []ir.Type) *ir.Diagnostic {
	for _, ts := range [][]ir.Type{operands, results} {
		for _, t := range ts {
			tt, ok := t.(ir.TensorType)
			if !ok {
				continue
			}
			if n := len(tt.Shape); n > 0 && tt.Shape[n-1] == 0 {
				return ir.Errorf(op.Loc, "'%s' has a last dimension of extent 0: tensors with zero-extent rows are not supported by the backends (tfc interpret evaluates them)", t)
			}
			if tt.Elem.Kind == ir.Index {
				return ir.Errorf(op.Loc, "'%s' has index elements: index tensors are not supported by the backends (tfc interpret evaluates them); use i64 or i32 elements", t)
			}
		}
	}
	return nil
}

func valueTypes(vs []*ir.Value) []ir.Type {
	ts := make([]ir.Type, len(vs))
	for i, v := range vs {
		ts[i] = v.Type()
	}
	return ts
}
