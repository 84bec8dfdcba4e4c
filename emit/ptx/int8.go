package ptx

import (
	"fmt"

	"github.com/tensorforge/tensorforge/ir"
)

// This file is the int8 form of the tensor-core matmul: both operands
// stored as 8-bit integers (i8 or ui8, each widened to i32 by a cast
// before the matmul), summed in i32, as W8A8 quantized layers compute
// before they requantize.
//
// An m16n8k32 integer mma.sync takes its fragments in the layout of the
// m16n8k16 half one with each 32-bit register holding four bytes where
// it held two halves: A's register r is row g + 8*(r%2), bytes
// 4t..4t+3 + 16*(r/2); B's register r is k 4t..4t+3 + 16*r of column g.
// Read as halves, a 16 x 32 byte tile of A and a 32 x 8 one of B are the
// 16 x 16 and 16 x 8 tiles ldmatrix loads for bf16. So the int8 form is
// the half form with K counted in pairs of bytes: the same stages (a
// stage of 64 "halves" holds 128 values of K), the same cp.async copies
// and zero fill past K (zero bytes add nothing), the same ldmatrix
// addresses, and mma.sync.m16n8k32.s32.{s8,u8}.{s8,u8} where the half
// form has m16n8k16.f32; the wgmma form likewise (m64nNk32 reads 32 bytes
// of K a row, as m64nNk16 reads 16 halves, both K-major, which 8-bit
// wgmma requires). The accumulators are s32 registers; split-K adds its
// parts in s32, so every sum is exact (wrapping modulo 2^32, as the
// interpreter's i32 arithmetic does). The epilogue reads them as the
// loop IR's i32 dot products.
//
// It needs B as [n, k] (transpose_b: ldmatrix.trans moves halves, not
// bytes) and K even (a pair of bytes never spans two rows).

// byteInt reports whether k is an 8-bit integer kind.
func byteInt(k ir.ElemKind) bool { return k == ir.I8 || k == ir.UI8 }

// intName is the PTX name of an 8-bit integer kind in mma.
func intName(k ir.ElemKind) string {
	if k == ir.UI8 {
		return "u8"
	}
	return "s8"
}

// int8Why says why an int8 matmul keeps the scalar loops ("" when it
// can take the int8 form). tp.K still counts bytes.
func (tp *tcPlan) int8Why() string {
	for d, t := range tp.transB {
		if !t {
			return fmt.Sprintf("its right operand is %s as [k, n]; the int8 form reads [n, k] (transpose_b)", tp.bKind[d])
		}
	}
	if tp.K%2 != 0 {
		return fmt.Sprintf("it multiplies 8-bit integers over K = %d, which is odd; the int8 form reads pairs of bytes", tp.K)
	}
	return ""
}

// accName is the PTX type of the accumulators.
func (tp *tcPlan) accName() string {
	if tp.int8 {
		return "s32"
	}
	return "f32"
}

// mmaSync is the mma.sync instruction of dot product d.
func (tp *tcPlan) mmaSync(d int) string {
	if tp.int8 {
		return "mma.sync.aligned.m16n8k32.row.col.s32." + intName(tp.half) + "." + intName(tp.bKind[d]) + ".s32"
	}
	typ := halfName(tp.half)
	return "mma.sync.aligned.m16n8k16.row.col.f32." + typ + "." + typ + ".f32"
}

// wgmmaOp is the wgmma instruction of dot product d and the operands that
// follow its accumulators and descriptors: scale-d, then (halves only)
// imm-scale-a, imm-scale-b, tnspA, tnspB.
func (tp *tcPlan) wgmmaOp(d int) (string, []string) {
	if tp.int8 {
		return fmt.Sprintf("wgmma.mma_async.sync.aligned.m64n%dk32.s32.%s.%s", tp.bn, intName(tp.half), intName(tp.bKind[d])), nil
	}
	typ := halfName(tp.half)
	return fmt.Sprintf("wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s", tp.bn, typ, typ), []string{"1", "1", "0", "0"}
}

// inputs names what the tensor cores multiply, for the kernel's comment:
// "bf16", or "s8 x u8".
func (tp *tcPlan) inputs() string {
	if !tp.int8 {
		return halfName(tp.half)
	}
	b := intName(tp.bKind[0])
	for _, k := range tp.bKind[1:] {
		if intName(k) != b {
			b += "/" + intName(k)
		}
	}
	return intName(tp.half) + " x " + b
}

// mmaK is the K of one mma.sync or wgmma: 16 halves, or 32 bytes.
func (tp *tcPlan) mmaK() int {
	if tp.int8 {
		return 32
	}
	return 16
}

// mmaShape is the mma.sync shape the plan issues.
func (tp *tcPlan) mmaShape() string { return fmt.Sprintf("m16n8k%d", tp.mmaK()) }
