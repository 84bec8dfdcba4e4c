package ir

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Attr is a compile-time constant attached to an operation.
type Attr interface {
	// String returns the textual form, exactly as the parser accepts it.
	String() string
	isAttr()
}

// AttrEqual reports whether two attributes are the same.
func AttrEqual(a, b Attr) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.String() == b.String()
}

// IntAttr is `4`, `-12 : i32`. Type defaults to i64 and is then not printed.
type IntAttr struct {
	Value int64
	Type  ElemType
}

func (IntAttr) isAttr() {}
func (a IntAttr) String() string {
	s := strconv.FormatInt(a.Value, 10)
	if a.Type.Kind != I64 && a.Type.Kind != InvalidElem {
		s += " : " + a.Type.String()
	}
	return s
}

// FloatAttr is `1.0e-05`, `0.5 : f64`. Type defaults to f32 and is then not printed.
type FloatAttr struct {
	Value float64
	Type  ElemType
}

func (FloatAttr) isAttr() {}
func (a FloatAttr) String() string {
	k := a.Type.Kind
	if k == InvalidElem {
		k = F32 // printed without a type, it reads back as f32
	}
	s := FormatFloat(a.Value, k)
	if k != F32 {
		s += " : " + a.Type.String()
	}
	return s
}

// FormatFloat prints a float so that it parses back to the same value of
// kind k: the shortest decimal that round-trips, always with a '.' or an
// exponent, and `inf`, `-inf`, `nan` for the specials.
func FormatFloat(v float64, k ElemKind) string {
	bits := 64
	if k != F64 && k != InvalidElem {
		bits = 32
		// a finite double beyond the float32 range becomes an infinity
		// here, so the specials are told apart after the conversion
		v = float64(float32(v))
	}
	switch {
	case math.IsNaN(v):
		return "nan"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	if v == 0 {
		if math.Signbit(v) {
			return "-0.0"
		}
		return "0.0"
	}
	abs := math.Abs(v)
	var s string
	if abs >= 1e-4 && abs < 1e16 {
		s = strconv.FormatFloat(v, 'f', -1, bits)
		if !strings.ContainsAny(s, ".") {
			s += ".0"
		}
		return s
	}
	s = strconv.FormatFloat(v, 'e', -1, bits)
	// 1e-05 -> 1.0e-05 for readability (MLIR style)
	if i := strings.IndexByte(s, 'e'); i >= 0 && !strings.Contains(s[:i], ".") {
		s = s[:i] + ".0" + s[i:]
	}
	return s
}

// BoolAttr is `true` or `false`.
type BoolAttr bool

func (BoolAttr) isAttr() {}
func (a BoolAttr) String() string {
	if a {
		return "true"
	}
	return "false"
}

// StringAttr is `"tanh"`.
type StringAttr string

func (StringAttr) isAttr()          {}
func (a StringAttr) String() string { return Quote(string(a)) }

// Quote writes s as a .tir string literal with \" \\ \n \t escapes.
// Bytes are copied as they are, so a string that is not valid UTF-8 reads
// back unchanged.
func Quote(s string) string {
	var sb strings.Builder
	sb.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			sb.WriteString(`\"`)
		case '\\':
			sb.WriteString(`\\`)
		case '\n':
			sb.WriteString(`\n`)
		case '\t':
			sb.WriteString(`\t`)
		default:
			sb.WriteByte(c)
		}
	}
	sb.WriteByte('"')
	return sb.String()
}

// ArrayAttr is `[1, 2, 3]`.
type ArrayAttr []Attr

func (ArrayAttr) isAttr() {}
func (a ArrayAttr) String() string {
	parts := make([]string, len(a))
	for i, e := range a {
		parts[i] = e.String()
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// Int64s returns the elements as integers; ok is false if any is not an IntAttr.
func (a ArrayAttr) Int64s() ([]int64, bool) {
	out := make([]int64, len(a))
	for i, e := range a {
		ia, ok := e.(IntAttr)
		if !ok {
			return nil, false
		}
		out[i] = ia.Value
	}
	return out, true
}

// IntArray builds an ArrayAttr of i64 integers.
func IntArray(vs ...int64) ArrayAttr {
	a := make(ArrayAttr, len(vs))
	for i, v := range vs {
		a[i] = IntAttr{Value: v, Type: I64Type}
	}
	return a
}

// TypeAttr is a type used as an attribute value, e.g. `dtype = ui8`.
type TypeAttr struct{ Type Type }

func (TypeAttr) isAttr()          {}
func (a TypeAttr) String() string { return a.Type.String() }

// SymbolRefAttr is `@name`.
type SymbolRefAttr string

func (SymbolRefAttr) isAttr()          {}
func (a SymbolRefAttr) String() string { return "@" + string(a) }

// DenseAttr is `dense<0.5> : tensor<f32>` or `dense<[1.0, 2.0]> : tensor<2xf32>`.
// Values holds every element in row-major order, or a single element for a
// splat. Integers are stored exactly as float64 values (the range of i32
// and below is exact; i64 constants beyond 2^53 are rejected by the parser).
type DenseAttr struct {
	Type   ShapedType
	Values []float64
}

func (DenseAttr) isAttr() {}

// IsSplat reports whether one value fills the whole tensor.
func (a DenseAttr) IsSplat() bool { return len(a.Values) == 1 }

// At returns element i (row-major), honouring splats.
func (a DenseAttr) At(i int64) float64 {
	if len(a.Values) == 1 {
		return a.Values[0]
	}
	return a.Values[i]
}

// String prints `dense<...> : T`. Nested brackets follow the shape.
func (a DenseAttr) String() string {
	return "dense<" + a.Literal() + "> : " + a.Type.String()
}

// Literal prints only the part between `dense<` and `>`.
func (a DenseAttr) Literal() string {
	k := a.Type.GetElem().Kind
	format := func(v float64) string {
		if k.IsFloat() {
			return FormatFloat(v, k)
		}
		if k == I1 {
			if v != 0 {
				return "true"
			}
			return "false"
		}
		return strconv.FormatInt(int64(v), 10)
	}
	if a.IsSplat() {
		return format(a.Values[0])
	}
	shape := a.Type.GetShape()
	var sb strings.Builder
	var rec func(dim int, off int64) int64
	rec = func(dim int, off int64) int64 {
		if dim == len(shape) {
			sb.WriteString(format(a.Values[off]))
			return off + 1
		}
		sb.WriteByte('[')
		for i := int64(0); i < shape[dim]; i++ {
			if i > 0 {
				sb.WriteString(", ")
			}
			off = rec(dim+1, off)
		}
		sb.WriteByte(']')
		return off
	}
	rec(0, 0)
	return sb.String()
}

// NamedAttr is one `name = value` entry of an attribute dictionary.
type NamedAttr struct {
	Name  string
	Value Attr
}

// AttrDict is an attribute dictionary kept sorted by name, so printing is
// deterministic and lookups are binary searches.
type AttrDict []NamedAttr

// Get returns the attribute called name, or nil.
func (d AttrDict) Get(name string) Attr {
	i := sort.Search(len(d), func(i int) bool { return d[i].Name >= name })
	if i < len(d) && d[i].Name == name {
		return d[i].Value
	}
	return nil
}

// Set inserts or replaces an attribute, keeping the dictionary sorted.
func (d *AttrDict) Set(name string, v Attr) {
	s := *d
	i := sort.Search(len(s), func(i int) bool { return s[i].Name >= name })
	if i < len(s) && s[i].Name == name {
		s[i].Value = v
		return
	}
	s = append(s, NamedAttr{})
	copy(s[i+1:], s[i:])
	s[i] = NamedAttr{Name: name, Value: v}
	*d = s
}

// Delete removes an attribute if present.
func (d *AttrDict) Delete(name string) {
	s := *d
	i := sort.Search(len(s), func(i int) bool { return s[i].Name >= name })
	if i < len(s) && s[i].Name == name {
		*d = append(s[:i], s[i+1:]...)
	}
}

// String prints `{a = 1, b = "x"}`, or "" when empty.
func (d AttrDict) String() string {
	if len(d) == 0 {
		return ""
	}
	parts := make([]string, len(d))
	for i, na := range d {
		parts[i] = attrKey(na.Name) + " = " + na.Value.String()
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func attrKey(name string) string {
	if IsIdentifier(name) {
		return name
	}
	return Quote(name)
}

// IsIdentifier reports whether s matches [A-Za-z_][A-Za-z0-9_$.]*.
func IsIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'):
		case i > 0 && ((r >= '0' && r <= '9') || r == '$' || r == '.'):
		default:
			return false
		}
	}
	return true
}

// AttrAsFloat returns the numeric value of an IntAttr or FloatAttr.
func AttrAsFloat(a Attr) (float64, bool) {
	switch a := a.(type) {
	case FloatAttr:
		return a.Value, true
	case IntAttr:
		return float64(a.Value), true
	}
	return 0, false
}

// AttrAsInt returns the value of an IntAttr (or an integral FloatAttr).
func AttrAsInt(a Attr) (int64, bool) {
	switch a := a.(type) {
	case IntAttr:
		return a.Value, true
	case FloatAttr:
		if a.Value == math.Trunc(a.Value) && math.Abs(a.Value) < 1<<53 {
			return int64(a.Value), true
		}
	}
	return 0, false
}

func (d AttrDict) clone() AttrDict { return append(AttrDict(nil), d...) }

// GoString helps debugging.
func (d AttrDict) GoString() string { return fmt.Sprintf("AttrDict%s", d.String()) }
