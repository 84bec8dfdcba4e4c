package passes

import "github.com/tensorforge/tensorforge/ir"

// DCE erases ops that have no side effects and whose results are unused,
// repeating until none is left (a dead chain disappears in one run).
//
//	%a = graph.exp %x : tensor<4xf32>   // unused: erased
func DCE(root *ir.Operation) bool {
	changed := false
	for {
		var dead []*ir.Operation
		root.WalkPost(func(o *ir.Operation) {
			if o != root && ir.IsTriviallyDead(o) {
				dead = append(dead, o)
			}
		})
		if len(dead) == 0 {
			return changed
		}
		// erase users before producers: walk order is post-order, so go backwards
		progress := false
		for i := len(dead) - 1; i >= 0; i-- {
			o := dead[i]
			if ir.IsTriviallyDead(o) {
				o.Erase()
				progress = true
			}
		}
		if !progress {
			return changed
		}
		changed = true
	}
}

func init() {
	ir.RegisterPass(&ir.PassInfo{
		Name: "dce", Title: "DeadCodeElimination",
		Summary: "erase side-effect-free ops whose results are unused",
		New: func(ir.PassOptions) (ir.Pass, error) {
			return ir.PassFunc(func(m ir.Module, _ *ir.PassContext) error {
				DCE(m.Operation)
				return nil
			}), nil
		},
	})
}
