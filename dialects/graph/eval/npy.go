package eval

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"strings"

	"codeberg.org/sbinet/npyio/npy"
	"codeberg.org/sbinet/npyio/npy/float16"

	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

// ReadNpy reads a NumPy .npy file. The dtype gives the element type:
// float64 f64, float32 f32, float16 f16, int8/16/32/64 i8/i16/i32/i64,
// uint8/16/32 ui8/ui16/ui32, uint64 i64 (values above 2^63-1 are an error),
// bool i1. NumPy has no bf16 or f8: such data comes as float32 or float64
// arrays, which Run rounds to the argument's element type. Fortran-order
// arrays are reordered to row-major; i64 values beyond 2^53 lose their low
// bits (Tensor holds float64).
func ReadNpy(path string) (t *Tensor, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	defer func() {
		// the npy reader panics on some malformed files
		if r := recover(); r != nil {
			t, err = nil, fmt.Errorf("%s: malformed .npy file: %v", path, r)
		}
	}()
	r, err := npy.NewReader(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var arr npy.Array
	if err := r.Read(&arr); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	shape := make([]int64, len(arr.Shape()))
	for i, d := range arr.Shape() {
		shape[i] = int64(d)
	}
	elem, data, err := npyValues(arr.Data())
	if err != nil {
		return nil, fmt.Errorf("%s: %w (dtype %s)", path, err, r.Header.Descr.Type)
	}
	n, ok := ir.NumElements(shape)
	if !ok || n != int64(len(data)) {
		return nil, fmt.Errorf("%s: %d values for shape %s", path, len(data), FormatShape(shape))
	}
	t = &Tensor{Shape: shape, Elem: elem, Data: data}
	if arr.Fortran() && t.Rank() > 1 {
		t = fromColumnMajor(t)
	}
	return t, nil
}

// npyValues converts the typed slice the npy reader returns.
func npyValues(v any) (ir.ElemKind, []float64, error) {
	conv := func(n int, at func(i int) float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = at(i)
		}
		return out
	}
	switch s := v.(type) {
	case []float64:
		return ir.F64, append([]float64(nil), s...), nil
	case []float32:
		return ir.F32, conv(len(s), func(i int) float64 { return float64(s[i]) }), nil
	case []float16.Num:
		// decode the bits here: the npy package's own float16 conversion
		// flushes subnormals
		return ir.F16, conv(len(s), func(i int) float64 { return float64(numeric.F16FromBits(s[i].Uint16())) }), nil
	case []int8:
		return ir.I8, conv(len(s), func(i int) float64 { return float64(s[i]) }), nil
	case []int16:
		return ir.I16, conv(len(s), func(i int) float64 { return float64(s[i]) }), nil
	case []int32:
		return ir.I32, conv(len(s), func(i int) float64 { return float64(s[i]) }), nil
	case []int64:
		return ir.I64, conv(len(s), func(i int) float64 { return float64(s[i]) }), nil
	case []uint8:
		return ir.UI8, conv(len(s), func(i int) float64 { return float64(s[i]) }), nil
	case []uint16:
		return ir.UI16, conv(len(s), func(i int) float64 { return float64(s[i]) }), nil
	case []uint32:
		return ir.UI32, conv(len(s), func(i int) float64 { return float64(s[i]) }), nil
	case []uint64:
		for _, x := range s {
			if x > math.MaxInt64 {
				return 0, nil, fmt.Errorf("uint64 value %d does not fit i64", x)
			}
		}
		return ir.I64, conv(len(s), func(i int) float64 { return float64(s[i]) }), nil
	case []bool:
		return ir.I1, conv(len(s), func(i int) float64 {
			if s[i] {
				return 1
			}
			return 0
		}), nil
	}
	return 0, nil, fmt.Errorf("unsupported element type %T", v)
}

// fromColumnMajor reorders Fortran-order data to row-major.
func fromColumnMajor(t *Tensor) *Tensor {
	// the column-major stride of dim i is the product of the extents before it
	strides := make([]int, t.Rank())
	s := 1
	for i, d := range t.Shape {
		strides[i] = s
		s *= int(d)
	}
	out := &Tensor{Shape: t.Shape, Elem: t.Elem, Data: make([]float64, len(t.Data))}
	idx := make([]int64, t.Rank())
	off := 0
	for o := range out.Data {
		out.Data[o] = t.Data[off]
		for d := t.Rank() - 1; d >= 0; d-- {
			idx[d]++
			off += strides[d]
			if idx[d] < t.Shape[d] {
				break
			}
			off -= strides[d] * int(t.Shape[d])
			idx[d] = 0
		}
	}
	return out
}

// WriteNpy writes t as a NumPy .npy file in row-major order. f64 is written
// as float64; f32, bf16, f16 and the f8 types as float32 (exact: NumPy has
// no bf16 or f8, and the npy writer cannot encode float16); i1 as bool,
// i8/i16/i32 and ui8/ui16/ui32 as the same NumPy integer types, i64 and
// index as int64.
func WriteNpy(path string, t *Tensor) (err error) {
	n, ok := ir.NumElements(t.Shape)
	if !ok || n != int64(len(t.Data)) {
		return fmt.Errorf("%s: tensor has shape %s but %d values", path, FormatShape(t.Shape), len(t.Data))
	}
	flat, descr, err := npySlice(t)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	w := bufio.NewWriter(f)
	if n == 0 {
		// The npy writer derives the shape from nested slices, which
		// cannot express an empty dimension; an empty array is only a
		// header, written here directly.
		err = writeNpyHeader(w, descr, t.Shape)
	} else {
		err = writeNpyData(w, flat, t.Shape)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return w.Flush()
}

// npySlice converts t's values to the Go slice the npy writer takes, and
// returns its NumPy dtype descriptor.
func npySlice(t *Tensor) (any, string, error) {
	d := t.Data
	switch t.Elem {
	case ir.F64:
		return append([]float64(nil), d...), "<f8", nil
	case ir.F32, ir.F16, ir.BF16, ir.F8E4M3FN, ir.F8E5M2:
		return convSlice(d, func(v float64) float32 { return float32(v) }), "<f4", nil
	case ir.I8:
		return convSlice(d, func(v float64) int8 { return int8(v) }), "|i1", nil
	case ir.I16:
		return convSlice(d, func(v float64) int16 { return int16(v) }), "<i2", nil
	case ir.I32:
		return convSlice(d, func(v float64) int32 { return int32(v) }), "<i4", nil
	case ir.I64, ir.Index:
		return convSlice(d, numeric.FloatToInt64), "<i8", nil
	case ir.UI8:
		return convSlice(d, func(v float64) uint8 { return uint8(v) }), "|u1", nil
	case ir.UI16:
		return convSlice(d, func(v float64) uint16 { return uint16(v) }), "<u2", nil
	case ir.UI32:
		return convSlice(d, func(v float64) uint32 { return uint32(v) }), "<u4", nil
	case ir.I1:
		return convSlice(d, func(v float64) bool { return v != 0 }), "|b1", nil
	}
	return nil, "", fmt.Errorf("cannot write element type %s", t.Elem)
}

func convSlice[T any](d []float64, f func(float64) T) []T {
	out := make([]T, len(d))
	for i, v := range d {
		out[i] = f(v)
	}
	return out
}

// writeNpyData writes a non-empty flat slice with the given shape through
// the npy writer, which takes the shape from nesting: rank 0 is a scalar,
// rank r a slice nested r deep whose innermost slices alias flat.
func writeNpyData(w io.Writer, flat any, shape []int64) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("npy writer: %v", r)
		}
	}()
	v := reflect.ValueOf(flat)
	if len(shape) == 0 {
		return npy.Write(w, v.Index(0).Interface())
	}
	var nest func(v reflect.Value, shape []int64) reflect.Value
	nest = func(v reflect.Value, shape []int64) reflect.Value {
		if len(shape) == 1 {
			return v
		}
		inner := v.Len() / int(shape[0])
		var parts []reflect.Value
		for i := 0; i < int(shape[0]); i++ {
			parts = append(parts, nest(v.Slice(i*inner, (i+1)*inner), shape[1:]))
		}
		out := reflect.MakeSlice(reflect.SliceOf(parts[0].Type()), len(parts), len(parts))
		for i, p := range parts {
			out.Index(i).Set(p)
		}
		return out
	}
	return npy.Write(w, nest(v, shape).Interface())
}

// writeNpyHeader writes a version 1.0 header (which is the whole file for
// an empty array): magic, version, header length, then the dict padded
// with spaces and a newline to a multiple of 64 bytes.
func writeNpyHeader(w io.Writer, descr string, shape []int64) error {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = fmt.Sprint(d)
	}
	tuple := "(" + strings.Join(dims, ", ")
	if len(shape) == 1 {
		tuple += ","
	}
	tuple += ")"
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, tuple)
	const prefix = 10 // magic (6), version (2), header length (2)
	pad := 64 - (prefix+len(dict)+1)%64
	if pad == 64 {
		pad = 0
	}
	dict += strings.Repeat(" ", pad) + "\n"
	if _, err := w.Write([]byte("\x93NUMPY\x01\x00")); err != nil {
		return err
	}
	if err := binary.Write(w, binary.LittleEndian, uint16(len(dict))); err != nil {
		return err
	}
	_, err := io.WriteString(w, dict)
	return err
}
