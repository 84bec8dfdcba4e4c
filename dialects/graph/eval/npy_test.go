package eval

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

func TestNpyRoundTrip(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		in       *Tensor
		readElem ir.ElemKind // what the file holds
	}{
		{mk(t, ir.F64, []int64{2, 3}, 1, -2, 0.1, inf, nan, negZ), ir.F64},
		{mk(t, ir.F32, []int64{2, 2, 2}, 1, 2, 3, 4, 5, 6, 7, sub32), ir.F32},
		{mk(t, ir.BF16, []int64{3}, 1.5, -inf, 3e38), ir.F32},
		{mk(t, ir.F16, []int64{1, 3}, 65504, math.Ldexp(1, -24), -0.1), ir.F32},
		{mk(t, ir.F8E4M3FN, []int64{2}, 448, nan), ir.F32},
		{mk(t, ir.F8E5M2, []int64{2}, 57344, -inf), ir.F32},
		{mk(t, ir.I8, []int64{3}, -128, 0, 127), ir.I8},
		{mk(t, ir.I16, []int64{2}, -32768, 32767), ir.I16},
		{mk(t, ir.I32, []int64{2, 1}, -2147483648, 2147483647), ir.I32},
		{mk(t, ir.I64, []int64{2}, -1<<53, 1<<53), ir.I64},
		{mk(t, ir.Index, []int64{1}, 42), ir.I64},
		{mk(t, ir.UI8, []int64{2}, 0, 255), ir.UI8},
		{mk(t, ir.UI16, []int64{2}, 0, 65535), ir.UI16},
		{mk(t, ir.UI32, []int64{2}, 0, 4294967295), ir.UI32},
		{mk(t, ir.I1, []int64{3}, 1, 0, 1), ir.I1},
		{Scalar(ir.F32, 2.5), ir.F32},
		{NewTensor(ir.F32, []int64{2, 0}), ir.F32},
		{NewTensor(ir.I32, []int64{0}), ir.I32},
		{ramp(ir.F32, 2, 3, 4, 5), ir.F32},
	}
	for i, c := range cases {
		path := filepath.Join(dir, "t.npy")
		require.NoError(t, WriteNpy(path, c.in), "case %d", i)
		got, err := ReadNpy(path)
		require.NoError(t, err, "case %d", i)
		assert.Equal(t, c.in.Shape, got.Shape, "case %d shape", i)
		assert.Equal(t, c.readElem, got.Elem, "case %d elem", i)
		require.Len(t, got.Data, len(c.in.Data), "case %d", i)
		for j := range c.in.Data {
			assert.True(t, same(c.in.Data[j], got.Data[j]), "case %d [%d]: %v != %v", i, j, got.Data[j], c.in.Data[j])
		}
	}
}

// npyBytes writes a .npy file by hand: header dict and raw little-endian data.
func npyBytes(dict string, data any) []byte {
	var buf bytes.Buffer
	buf.WriteString("\x93NUMPY\x01\x00")
	for (10+len(dict)+1)%64 != 0 {
		dict += " "
	}
	dict += "\n"
	_ = binary.Write(&buf, binary.LittleEndian, uint16(len(dict)))
	buf.WriteString(dict)
	_ = binary.Write(&buf, binary.LittleEndian, data)
	return buf.Bytes()
}

func TestReadNpyFloat16AndFortran(t *testing.T) {
	dir := t.TempDir()
	// every f16 pattern, as NumPy writes a float16 array
	bits := make([]uint16, 1<<16)
	for i := range bits {
		bits[i] = uint16(i)
	}
	p := filepath.Join(dir, "f16.npy")
	require.NoError(t, os.WriteFile(p, npyBytes("{'descr': '<f2', 'fortran_order': False, 'shape': (65536,), }", bits), 0o644))
	got, err := ReadNpy(p)
	require.NoError(t, err)
	assert.Equal(t, ir.F16, got.Elem)
	bad := 0
	for i, v := range got.Data {
		if !same(float64(numeric.F16FromBits(uint16(i))), v) {
			bad++
		}
	}
	assert.Zero(t, bad, "f16 values decoded wrongly (subnormals included)")

	// a 2x3 array in Fortran order: columns are contiguous
	p = filepath.Join(dir, "fortran.npy")
	require.NoError(t, os.WriteFile(p, npyBytes("{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }", []int32{0, 3, 1, 4, 2, 5}), 0o644))
	got, err = ReadNpy(p)
	require.NoError(t, err)
	assert.Equal(t, []int64{2, 3}, got.Shape)
	assert.Equal(t, []float64{0, 1, 2, 3, 4, 5}, got.Data)

	// an f32 file feeds a bf16 argument: Run rounds it
	p = filepath.Join(dir, "x.npy")
	require.NoError(t, WriteNpy(p, mk(t, ir.F32, []int64{2}, 1+math.Ldexp(1, -8), 3)))
	x, err := ReadNpy(p)
	require.NoError(t, err)
	ty := tt(ir.BF16, 2)
	fn := buildFn([]ir.Type{ty}, []ir.Type{ty}, func(b *ir.Builder, args []*ir.Value) []*ir.Value { return args })
	outs, err := Run(fn, []*Tensor{x}, defOpt)
	require.NoError(t, err)
	assert.Equal(t, []float64{1, 3}, outs[0].Data)
	assert.Equal(t, ir.BF16, outs[0].Elem)
}

func TestReadNpyErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := ReadNpy(filepath.Join(dir, "missing.npy"))
	assert.Error(t, err)
	for name, content := range map[string][]byte{
		"garbage.npy":   []byte("not a numpy file at all"),
		"truncated.npy": npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", []float32{1})[:70],
		"complex.npy":   npyBytes("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", []float32{1, 2}),
	} {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, content, 0o644))
		_, err := ReadNpy(p)
		assert.Error(t, err, name)
	}
}
