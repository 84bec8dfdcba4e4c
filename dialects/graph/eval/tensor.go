package eval

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

// Tensor is a dense row-major value: Shape (static, resolved at run time),
// Elem kind, and the data. Every element is held as a float64 holding a
// value of Elem exactly: integers as whole numbers (i1 as 0 or 1; i64 and
// index beyond 2^53 lose their low bits), f16/bf16/f8 as the values of
// their formats. With Options.F64, floating-point results hold unrounded
// float64 values whatever their Elem.
type Tensor struct {
	Shape []int64
	Elem  ir.ElemKind
	Data  []float64
}

// NewTensor returns a zero-filled tensor. Negative extents count as 0.
func NewTensor(elem ir.ElemKind, shape []int64) *Tensor {
	s := make([]int64, len(shape))
	for i, d := range shape {
		s[i] = max(d, 0)
	}
	n, ok := ir.NumElements(s)
	if !ok {
		n = 0
	}
	return &Tensor{Shape: s, Elem: elem, Data: make([]float64, n)}
}

// TensorOf returns a tensor holding data (not copied), each value rounded
// to elem as a store would (numeric.RoundTo). The data length must match
// the shape.
func TensorOf(elem ir.ElemKind, shape []int64, data []float64) (*Tensor, error) {
	n, ok := ir.NumElements(shape)
	if !ok || n != int64(len(data)) {
		return nil, fmt.Errorf("%d values do not fill shape %s", len(data), FormatShape(shape))
	}
	for i, v := range data {
		data[i] = numeric.RoundTo(v, elem)
	}
	return &Tensor{Shape: append([]int64(nil), shape...), Elem: elem, Data: data}, nil
}

// Scalar returns a rank-0 tensor holding v rounded to elem.
func Scalar(elem ir.ElemKind, v float64) *Tensor {
	return &Tensor{Shape: []int64{}, Elem: elem, Data: []float64{numeric.RoundTo(v, elem)}}
}

// NumElements returns the element count.
func (t *Tensor) NumElements() int { return len(t.Data) }

// Rank returns the number of dimensions.
func (t *Tensor) Rank() int { return len(t.Shape) }

// Clone returns a deep copy.
func (t *Tensor) Clone() *Tensor {
	return &Tensor{Shape: append([]int64(nil), t.Shape...), Elem: t.Elem, Data: append([]float64(nil), t.Data...)}
}

// Type returns the tensor type of t, such as `tensor<2x3xf32>`.
func (t *Tensor) Type() ir.TensorType { return ir.Tensor(ir.ElemType{Kind: t.Elem}, t.Shape...) }

// String prints the type and up to 16 values: `tensor<3xf32> [1 2 nan]`.
func (t *Tensor) String() string {
	var sb strings.Builder
	sb.WriteString(t.Type().String())
	sb.WriteString(" [")
	for i, v := range t.Data {
		if i == 16 {
			sb.WriteString(" ...")
			break
		}
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
	}
	sb.WriteByte(']')
	return sb.String()
}

// FormatShape prints a shape as it appears in a type: `4x?x8`, or `scalar`
// for rank 0.
func FormatShape(shape []int64) string {
	if len(shape) == 0 {
		return "scalar"
	}
	parts := make([]string, len(shape))
	for i, d := range shape {
		if d == ir.Dynamic {
			parts[i] = "?"
		} else {
			parts[i] = strconv.FormatInt(d, 10)
		}
	}
	return strings.Join(parts, "x")
}

// rowMajorStrides returns the element strides of a row-major shape.
func rowMajorStrides(shape []int64) []int {
	st := make([]int, len(shape))
	s := 1
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = s
		s *= int(shape[i])
	}
	return st
}

// maxElements bounds the size of one tensor (16 GiB of float64s), so a
// malformed shape gives an error rather than an allocation failure.
const maxElements = 1 << 31

// numElems is the element count of a resolved shape, or an error when it
// overflows or a dimension is negative.
func numElems(shape []int64) (int, error) {
	n, ok := ir.NumElements(shape)
	if !ok || n > maxElements {
		return 0, fmt.Errorf("shape %s is too large or invalid", FormatShape(shape))
	}
	return int(n), nil
}

// matchesType reports whether a resolved shape fits a type's shape, where
// `?` matches any extent.
func matchesType(shape, typ []int64) bool {
	if len(shape) != len(typ) {
		return false
	}
	for i, d := range typ {
		if d != ir.Dynamic && d != shape[i] {
			return false
		}
	}
	return true
}
