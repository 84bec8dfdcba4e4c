package ir_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tensorforge/tensorforge/ir"
)

func TestTypeString(t *testing.T) {
	tests := []struct {
		typ  ir.Type
		want string
	}{
		{ir.F32Type, "f32"},
		{ir.ElemType{Kind: ir.F8E4M3FN}, "f8E4M3FN"},
		{ir.ElemType{Kind: ir.InvalidElem}, "<invalid>"},
		{ir.ElemType{Kind: 200}, "<elem 200>"},
		{ir.Tensor(ir.F32Type), "tensor<f32>"},
		{ir.Tensor(ir.BF16Type, 4096, 8192), "tensor<4096x8192xbf16>"},
		{ir.Tensor(ir.F16Type, ir.Dynamic, 8192), "tensor<?x8192xf16>"},
		{ir.Tensor(ir.I1Type, 0), "tensor<0xi1>"},
		{ir.MemRefType{Shape: []int64{ir.Dynamic, 8192}, Elem: ir.BF16Type, Space: ir.DRAM}, "memref<?x8192xbf16, dram>"},
		{ir.MemRefType{Shape: []int64{8192}, Elem: ir.F32Type, Space: ir.SRAM}, "memref<8192xf32, sram>"},
		{ir.MemRefType{Elem: ir.F32Type, Space: ir.Reg}, "memref<f32, reg>"},
		{ir.VectorType{Shape: []int64{8}, Elem: ir.F32Type}, "vector<8xf32>"},
		{ir.VectorType{Shape: []int64{32, 32}, Elem: ir.BF16Type}, "vector<32x32xbf16>"},
		{ir.FunctionType{}, "() -> ()"},
		{ir.FunctionType{Inputs: []ir.Type{ir.F32Type, f32x4}, Results: []ir.Type{ir.I1Type}}, "(f32, tensor<4xf32>) -> i1"},
		{ir.FunctionType{Inputs: []ir.Type{f32x4}, Results: []ir.Type{f32x4, f32x4}}, "(tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)"},
		// a function returning a function keeps its parentheses: `-> (() -> f32)`
		{ir.FunctionType{Results: []ir.Type{ir.FunctionType{Results: []ir.Type{ir.F32Type}}}}, "() -> (() -> f32)"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.typ.String())
		})
	}
}

func TestTypeEqual(t *testing.T) {
	fn := func(in, out []ir.Type) ir.FunctionType { return ir.FunctionType{Inputs: in, Results: out} }
	tests := []struct {
		name string
		a, b ir.Type
		want bool
	}{
		{"nil nil", nil, nil, true},
		{"nil type", nil, ir.F32Type, false},
		{"type nil", ir.F32Type, nil, false},
		{"same elem", ir.F32Type, ir.ElemType{Kind: ir.F32}, true},
		{"different elem", ir.F32Type, ir.F16Type, false},
		{"elem vs tensor", ir.F32Type, ir.Tensor(ir.F32Type), false},
		{"same tensor, different slices", ir.Tensor(ir.F32Type, 4, 8), ir.TensorType{Shape: []int64{4, 8}, Elem: ir.F32Type}, true},
		{"rank 0 nil vs empty shape", ir.TensorType{Elem: ir.F32Type}, ir.TensorType{Shape: []int64{}, Elem: ir.F32Type}, true},
		{"tensor shape", ir.Tensor(ir.F32Type, 4, 8), ir.Tensor(ir.F32Type, 8, 4), false},
		{"tensor rank", ir.Tensor(ir.F32Type, 4), ir.Tensor(ir.F32Type, 4, 1), false},
		{"tensor dynamic", ir.Tensor(ir.F32Type, ir.Dynamic), ir.Tensor(ir.F32Type, 4), false},
		{"tensor elem", ir.Tensor(ir.F32Type, 4), ir.Tensor(ir.F16Type, 4), false},
		{"tensor vs vector", ir.Tensor(ir.F32Type, 4), ir.VectorType{Shape: []int64{4}, Elem: ir.F32Type}, false},
		{"tensor vs memref", ir.Tensor(ir.F32Type, 4), ir.MemRefType{Shape: []int64{4}, Elem: ir.F32Type}, false},
		{"same memref", ir.MemRefType{Shape: []int64{4}, Elem: ir.F32Type, Space: ir.SRAM}, ir.MemRefType{Shape: []int64{4}, Elem: ir.F32Type, Space: ir.SRAM}, true},
		{"memref space", ir.MemRefType{Shape: []int64{4}, Elem: ir.F32Type, Space: ir.SRAM}, ir.MemRefType{Shape: []int64{4}, Elem: ir.F32Type, Space: ir.DRAM}, false},
		{"memref shape", ir.MemRefType{Shape: []int64{4}, Elem: ir.F32Type}, ir.MemRefType{Shape: []int64{5}, Elem: ir.F32Type}, false},
		{"memref elem", ir.MemRefType{Shape: []int64{4}, Elem: ir.F32Type}, ir.MemRefType{Shape: []int64{4}, Elem: ir.I32Type}, false},
		{"same vector", ir.VectorType{Shape: []int64{8}, Elem: ir.F32Type}, ir.VectorType{Shape: []int64{8}, Elem: ir.F32Type}, true},
		{"vector shape", ir.VectorType{Shape: []int64{8}, Elem: ir.F32Type}, ir.VectorType{Shape: []int64{4}, Elem: ir.F32Type}, false},
		{"vector elem", ir.VectorType{Shape: []int64{8}, Elem: ir.F32Type}, ir.VectorType{Shape: []int64{8}, Elem: ir.F16Type}, false},
		{"same function", fn([]ir.Type{f32x4, ir.I1Type}, []ir.Type{f32x4}), fn([]ir.Type{ir.Tensor(ir.F32Type, 4), ir.I1Type}, []ir.Type{ir.Tensor(ir.F32Type, 4)}), true},
		{"empty functions", fn(nil, nil), fn([]ir.Type{}, []ir.Type{}), true},
		{"function input", fn([]ir.Type{f32x4}, nil), fn([]ir.Type{ir.F32Type}, nil), false},
		{"function input count", fn([]ir.Type{f32x4}, nil), fn([]ir.Type{f32x4, f32x4}, nil), false},
		{"function result", fn(nil, []ir.Type{f32x4}), fn(nil, []ir.Type{ir.Tensor(ir.F32Type, 5)}), false},
		{"function inputs vs results", fn([]ir.Type{f32x4}, nil), fn(nil, []ir.Type{f32x4}), false},
		{"nested function", fn(nil, []ir.Type{fn([]ir.Type{ir.F32Type}, nil)}), fn(nil, []ir.Type{fn([]ir.Type{ir.F32Type}, nil)}), true},
		{"nested function differs", fn(nil, []ir.Type{fn([]ir.Type{ir.F32Type}, nil)}), fn(nil, []ir.Type{fn([]ir.Type{ir.F16Type}, nil)}), false},
		{"function vs tensor", fn(nil, nil), ir.Tensor(ir.F32Type), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ir.TypeEqual(tc.a, tc.b))
			assert.Equal(t, tc.want, ir.TypeEqual(tc.b, tc.a), "TypeEqual must be symmetric")
			if tc.a != nil && tc.b != nil {
				// structural equality agrees with the printed form
				assert.Equal(t, tc.want, tc.a.String() == tc.b.String())
			}
		})
	}
}

func TestElemKinds(t *testing.T) {
	want := []string{"f64", "f32", "f16", "bf16", "f8E4M3FN", "f8E5M2", "i1", "i8", "i16", "i32", "i64", "ui8", "ui16", "ui32", "index"}
	kinds := ir.ElemKinds()
	require.Len(t, kinds, len(want))
	for i, k := range kinds {
		assert.Equal(t, want[i], k.String())
	}
}

func TestParseElemKind(t *testing.T) {
	for _, k := range ir.ElemKinds() {
		t.Run(k.String(), func(t *testing.T) {
			got, ok := ir.ParseElemKind(k.String())
			require.True(t, ok)
			assert.Equal(t, k, got)
		})
	}
	for _, bad := range []string{"", "<invalid>", "F32", "f8", "u8", "i128", "tensor", "f32 "} {
		t.Run("reject "+bad, func(t *testing.T) {
			got, ok := ir.ParseElemKind(bad)
			assert.False(t, ok)
			assert.Equal(t, ir.InvalidElem, got)
		})
	}
}

func TestElemKindProperties(t *testing.T) {
	tests := []struct {
		kind                     ir.ElemKind
		bits                     int
		bytes                    int64
		isFloat, isInt, unsigned bool
	}{
		{ir.F64, 64, 8, true, false, false},
		{ir.F32, 32, 4, true, false, false},
		{ir.F16, 16, 2, true, false, false},
		{ir.BF16, 16, 2, true, false, false},
		{ir.F8E4M3FN, 8, 1, true, false, false},
		{ir.F8E5M2, 8, 1, true, false, false},
		{ir.I1, 1, 1, false, true, false},
		{ir.I8, 8, 1, false, true, false},
		{ir.I16, 16, 2, false, true, false},
		{ir.I32, 32, 4, false, true, false},
		{ir.I64, 64, 8, false, true, false},
		{ir.UI8, 8, 1, false, true, true},
		{ir.UI16, 16, 2, false, true, true},
		{ir.UI32, 32, 4, false, true, true},
		{ir.Index, 64, 8, false, true, false},
		{ir.InvalidElem, 0, 0, false, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.kind.String(), func(t *testing.T) {
			assert.Equal(t, tc.bits, tc.kind.BitWidth())
			assert.Equal(t, tc.bytes, tc.kind.ByteSize())
			assert.Equal(t, tc.isFloat, tc.kind.IsFloat())
			assert.Equal(t, tc.isInt, tc.kind.IsInt())
			assert.Equal(t, tc.unsigned, tc.kind.IsUnsigned())
		})
	}
}

func TestIntRange(t *testing.T) {
	tests := []struct {
		kind   ir.ElemKind
		lo, hi int64
	}{
		{ir.I1, 0, 1},
		{ir.I8, -128, 127},
		{ir.I16, -32768, 32767},
		{ir.I32, math.MinInt32, math.MaxInt32},
		{ir.I64, math.MinInt64, math.MaxInt64},
		{ir.Index, math.MinInt64, math.MaxInt64},
		{ir.UI8, 0, 255},
		{ir.UI16, 0, 65535},
		{ir.UI32, 0, 4294967295},
		{ir.F32, 0, 0},
		{ir.InvalidElem, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.kind.String(), func(t *testing.T) {
			lo, hi := tc.kind.IntRange()
			assert.Equal(t, tc.lo, lo)
			assert.Equal(t, tc.hi, hi)
		})
	}
}

func TestMemSpace(t *testing.T) {
	for _, s := range []ir.MemSpace{ir.DRAM, ir.SRAM, ir.Reg} {
		got, ok := ir.ParseMemSpace(s.String())
		require.True(t, ok, s.String())
		assert.Equal(t, s, got)
	}
	_, ok := ir.ParseMemSpace("l1")
	assert.False(t, ok)
	assert.Equal(t, "<space 7>", ir.MemSpace(7).String())
}

func TestShapeHelpers(t *testing.T) {
	tensor := ir.Tensor(ir.F16Type, 2, ir.Dynamic)
	e, ok := ir.ElemOf(tensor)
	require.True(t, ok)
	assert.Equal(t, ir.F16Type, e)
	e, ok = ir.ElemOf(ir.I8Type)
	require.True(t, ok)
	assert.Equal(t, ir.I8Type, e)
	_, ok = ir.ElemOf(ir.FunctionType{})
	assert.False(t, ok)

	s, ok := ir.ShapeOf(tensor)
	require.True(t, ok)
	assert.Equal(t, []int64{2, ir.Dynamic}, s)
	s, ok = ir.ShapeOf(ir.F32Type)
	assert.True(t, ok)
	assert.Nil(t, s)
	_, ok = ir.ShapeOf(ir.FunctionType{})
	assert.False(t, ok)

	assert.True(t, ir.HasDynamicDim(tensor.Shape))
	assert.False(t, ir.HasDynamicDim([]int64{1, 2}))
	assert.False(t, ir.HasDynamicDim(nil))

	assert.Equal(t, 2, tensor.Rank())
	assert.Equal(t, "tensor<2x?xi32>", tensor.WithElem(ir.I32Type).String())
	mr := ir.MemRefType{Shape: []int64{3}, Elem: ir.UI8Type}
	assert.Equal(t, []int64{3}, mr.GetShape())
	assert.Equal(t, ir.UI8Type, mr.GetElem())
	vec := ir.VectorType{Shape: []int64{8}, Elem: ir.F32Type}
	assert.Equal(t, []int64{8}, vec.GetShape())
	assert.Equal(t, ir.F32Type, vec.GetElem())

	// Tensor copies its shape: the caller's slice may be reused
	dims := []int64{4, 8}
	tt := ir.Tensor(ir.F32Type, dims...)
	dims[0] = 99
	assert.Equal(t, "tensor<4x8xf32>", tt.String())
}

func TestNumElements(t *testing.T) {
	big := int64(1) << 32
	tests := []struct {
		name  string
		shape []int64
		n     int64
		ok    bool
	}{
		{"rank 0", nil, 1, true},
		{"static", []int64{4096, 8192}, 4096 * 8192, true},
		{"zero extent", []int64{4, 0, 8}, 0, true},
		{"dynamic", []int64{4, ir.Dynamic}, 0, false},
		{"dynamic after zero", []int64{0, ir.Dynamic}, 0, false},
		{"max int64", []int64{math.MaxInt64}, math.MaxInt64, true},
		{"exactly 2^62", []int64{big, big / 4}, 1 << 62, true},
		{"overflow", []int64{big, big}, 0, false},
		{"overflow by one", []int64{math.MaxInt64/2 + 1, 2}, 0, false},
		{"product wraps to a positive number", []int64{3, math.MaxInt64/2 + 1}, 0, false},
		// the product is 0 whatever the other extents are
		{"zero after a huge prefix", []int64{big, big, 0}, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, ok := ir.NumElements(tc.shape)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.n, n)
		})
	}
}

func TestByteSizeOf(t *testing.T) {
	tests := []struct {
		name string
		typ  ir.ShapedType
		n    int64
		ok   bool
	}{
		{"f32", ir.Tensor(ir.F32Type, 4, 8), 128, true},
		{"bf16 rank 0", ir.Tensor(ir.BF16Type), 2, true},
		{"i1 takes a byte", ir.Tensor(ir.I1Type, 10), 10, true},
		{"memref f64", ir.MemRefType{Shape: []int64{3}, Elem: ir.F64Type}, 24, true},
		{"vector f8", ir.VectorType{Shape: []int64{32}, Elem: ir.ElemType{Kind: ir.F8E5M2}}, 32, true},
		{"zero elements", ir.Tensor(ir.F64Type, 0, 1<<62), 0, true},
		{"dynamic", ir.Tensor(ir.F32Type, ir.Dynamic), 0, false},
		{"elements fit, bytes do not", ir.Tensor(ir.F32Type, 1<<62), 0, false},
		{"bytes exactly max", ir.Tensor(ir.UI8Type, math.MaxInt64), math.MaxInt64, true},
		{"i16 just over", ir.Tensor(ir.ElemType{Kind: ir.I16}, 1<<62), 0, false},
		{"element count overflows", ir.Tensor(ir.I8Type, 1<<32, 1<<32), 0, false},
		// an element type without a size must not divide by zero
		{"invalid element", ir.Tensor(ir.ElemType{}, 4), 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, ok := ir.ByteSizeOf(tc.typ)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.n, n)
		})
	}
}
