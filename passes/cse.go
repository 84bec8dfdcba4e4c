package passes

import (
	"strconv"
	"strings"

	"github.com/tensorforge/tensorforge/ir"
)

// CSE merges side-effect-free ops that compute the same thing: same op
// name, operands, attributes and result types. An op in a nested region may
// reuse an equivalent op of an enclosing block (it dominates), except across
// an op that is isolated from above.
//
//	%a = graph.exp %x : tensor<4xf32>
//	%b = graph.exp %x : tensor<4xf32>   // replaced by %a
func CSE(root *ir.Operation) bool {
	c := &cse{ids: map[*ir.Value]int{}}
	c.op(root, nil)
	return c.changed
}

type cse struct {
	ids     map[*ir.Value]int
	nextID  int
	changed bool
}

type cseScope struct {
	known  map[string]*ir.Operation
	parent *cseScope
}

func (s *cseScope) lookup(k string) *ir.Operation {
	for ; s != nil; s = s.parent {
		if o, ok := s.known[k]; ok {
			return o
		}
	}
	return nil
}

func (c *cse) id(v *ir.Value) int {
	if n, ok := c.ids[v]; ok {
		return n
	}
	c.nextID++
	c.ids[v] = c.nextID
	return c.nextID
}

func (c *cse) op(op *ir.Operation, scope *cseScope) {
	for _, r := range op.Regions() {
		parent := scope
		if op.HasTrait(ir.IsolatedFromAbove) {
			parent = nil
		}
		for _, b := range r.Blocks {
			s := &cseScope{known: map[string]*ir.Operation{}, parent: parent}
			for o := b.First(); o != nil; {
				next := o.Next()
				if k, ok := c.key(o); ok {
					if prev := s.lookup(k); prev != nil {
						for i, res := range o.Results() {
							res.ReplaceAllUsesWith(prev.Result(i))
						}
						o.Erase()
						c.changed = true
						o = next
						continue
					}
					s.known[k] = o
				}
				c.op(o, s)
				o = next
			}
		}
	}
}

// key identifies what a pure, region-free op computes.
func (c *cse) key(o *ir.Operation) (string, bool) {
	if !o.HasTrait(ir.Pure) || o.HasTrait(ir.Terminator) || o.NumRegions() > 0 || o.NumResults() == 0 {
		return "", false
	}
	var sb strings.Builder
	sb.WriteString(o.Name())
	sb.WriteByte('(')
	for _, v := range o.Operands() {
		sb.WriteString(strconv.Itoa(c.id(v)))
		sb.WriteByte(',')
	}
	sb.WriteByte(')')
	sb.WriteString(o.Attrs.String())
	for _, r := range o.Results() {
		sb.WriteString(r.Type().String())
		sb.WriteByte(';')
	}
	return sb.String(), true
}

func init() {
	ir.RegisterPass(&ir.PassInfo{
		Name: "cse", Title: "CSE",
		Summary: "merge side-effect-free ops that compute the same value",
		New: func(ir.PassOptions) (ir.Pass, error) {
			return ir.PassFunc(func(m ir.Module, _ *ir.PassContext) error {
				CSE(m.Operation)
				return nil
			}), nil
		},
	})
}
