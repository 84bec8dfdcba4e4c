package eval

import "fmt"

// broadcastShapes returns the NumPy broadcast of shapes: they are aligned
// at their last dimension, and each pair of extents must be equal or one
// of them 1.
func broadcastShapes(shapes ...[]int64) ([]int64, error) {
	rank := 0
	for _, s := range shapes {
		rank = max(rank, len(s))
	}
	out := make([]int64, rank)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		off := rank - len(s)
		for i, d := range s {
			switch o := out[off+i]; {
			case o == d || d == 1:
			case o == 1:
				out[off+i] = d
			default:
				return nil, fmt.Errorf("shapes %s do not broadcast", formatShapes(shapes))
			}
		}
	}
	return out, nil
}

func formatShapes(shapes [][]int64) string {
	s := ""
	for i, sh := range shapes {
		if i > 0 {
			s += ", "
		}
		s += FormatShape(sh)
	}
	return s
}

// broadcaster walks the elements of an output shape in row-major order and
// tracks, for each input broadcast to it, the offset of the element read.
type broadcaster struct {
	out     []int64
	n       int
	strides [][]int // per input, aligned to out; 0 along broadcast dims
}

// newBroadcaster prepares a walk of out reading inputs of shapes ins, each
// of which must broadcast to out (see broadcastShapes).
func newBroadcaster(out []int64, ins ...[]int64) (*broadcaster, error) {
	n, err := numElems(out)
	if err != nil {
		return nil, err
	}
	b := &broadcaster{out: out, n: n}
	for _, in := range ins {
		if len(in) > len(out) {
			return nil, fmt.Errorf("shape %s does not broadcast to %s", FormatShape(in), FormatShape(out))
		}
		st := make([]int, len(out))
		rs := rowMajorStrides(in)
		off := len(out) - len(in)
		for i, d := range in {
			switch {
			case d == out[off+i]:
				st[off+i] = rs[i]
			case d == 1:
				st[off+i] = 0
			default:
				return nil, fmt.Errorf("shape %s does not broadcast to %s", FormatShape(in), FormatShape(out))
			}
		}
		b.strides = append(b.strides, st)
	}
	return b, nil
}

// each calls fn for every output element with its row-major index o and
// the offsets of the matching input elements (offs is reused between calls).
func (b *broadcaster) each(fn func(o int, offs []int)) {
	rank := len(b.out)
	idx := make([]int64, rank)
	offs := make([]int, len(b.strides))
	for o := 0; o < b.n; o++ {
		fn(o, offs)
		for d := rank - 1; d >= 0; d-- {
			idx[d]++
			for k, st := range b.strides {
				offs[k] += st[d]
			}
			if idx[d] < b.out[d] {
				break
			}
			for k, st := range b.strides {
				offs[k] -= st[d] * int(b.out[d])
			}
			idx[d] = 0
		}
	}
}
