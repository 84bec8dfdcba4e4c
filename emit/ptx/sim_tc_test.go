package ptx

import (
	"fmt"
	"math"

	"github.com/x448/float16"
)

// The simulator's tensor-core instructions: cp.async (the copy runs at
// once, so commit_group and wait_group have nothing to wait for),
// ldmatrix (.x1/.x2/.x4, .trans) and mma.sync.m16n8k16 with bf16 or f16
// inputs and f32 accumulators, in the fragment layouts of the PTX ISA
// (groupID = lane >> 2, t = lane % 4):
//
//	A 16x16: a0,a1 (g, 2t..2t+1)  a2,a3 (g+8, 2t..)  a4,a5 (g, 2t+8..)  a6,a7 (g+8, 2t+8..)
//	B 16x8:  b0,b1 (k 2t..2t+1, n g)  b2,b3 (k 2t+8.., n g)
//	C/D:     c0,c1 (g, 2t..2t+1)  c2,c3 (g+8, 2t..)
//
// Each mma element is computed in float64 over its 16 products (exact:
// bf16 and f16 products fit a float64) plus the accumulator, rounded once
// to f32. ldmatrix and mma.sync are warp-collective: the scheduler runs
// them when all 32 lanes wait at the same one, and faults otherwise.

// cpAsync runs `cp.async.cg.shared.global [dst], [src], 16{, src-size}`
// (and commit_group / wait_group, which have nothing to do).
func (c *simCtx) cpAsync(t *simThread, in *simInstr) {
	if hasPart(in.parts, "commit_group") || hasPart(in.parts, "wait_group") {
		return
	}
	if !hasPart(in.parts, "shared") || !hasPart(in.parts, "global") || len(in.args) < 3 {
		panic("unsupported cp form " + in.op)
	}
	size := int(c.val(t, in.args[2]))
	if size != 4 && size != 8 && size != 16 {
		panic(fmt.Sprintf("cp.async of %d bytes", size))
	}
	n := size
	if len(in.args) > 3 {
		n = int(uint32(c.val(t, in.args[3])))
		if n > size {
			panic(fmt.Sprintf("cp.async src-size %d > cp-size %d", n, size))
		}
	}
	dst := c.val(t, *in.args[0].base) + uint64(in.args[0].off)
	src := c.val(t, *in.args[1].base) + uint64(in.args[1].off)
	if dst%uint64(size) != 0 || src%uint64(size) != 0 {
		panic(fmt.Sprintf("misaligned cp.async of %d bytes: shared %#x, global %#x", size, dst, src))
	}
	if dst+uint64(size) > uint64(len(c.shared)) {
		panic(fmt.Sprintf("cp.async to shared %d past %d bytes", dst, len(c.shared)))
	}
	d := c.shared[dst : dst+uint64(size)]
	for i := range d {
		d[i] = 0
	}
	if n > 0 {
		copy(d, c.mem.slice(src, n))
	}
}

// half16 reads 2 bytes of shared memory.
func (c *simCtx) half16(addr uint64) uint64 {
	return uint64(c.shared[addr]) | uint64(c.shared[addr+1])<<8
}

// ldmatrix runs `ldmatrix.sync.aligned.m8n8.xN{.trans}.shared.b16` for
// the 32 lanes of warp.
func (c *simCtx) ldmatrix(warp []*simThread, in *simInstr) {
	if len(warp) != 32 {
		panic("ldmatrix in a partial warp")
	}
	num := 0
	for _, p := range in.parts {
		switch p {
		case "x1":
			num = 1
		case "x2":
			num = 2
		case "x4":
			num = 4
		}
	}
	if num == 0 || !hasPart(in.parts, "m8n8") || !hasPart(in.parts, "shared") || !hasPart(in.parts, "b16") {
		panic("unsupported ldmatrix form " + in.op)
	}
	trans := hasPart(in.parts, "trans")
	dst := in.args[0].vec
	if len(dst) != num {
		dst = []simOpnd{in.args[0]}
		if num != 1 {
			panic(fmt.Sprintf("%s writes %d registers", in.op, len(in.args[0].vec)))
		}
	}
	var mat [4][8][8]uint64
	for i := 0; i < num; i++ {
		for r := 0; r < 8; r++ {
			l := warp[8*i+r]
			addr := c.val(l, *in.args[1].base) + uint64(in.args[1].off)
			if addr%16 != 0 {
				panic(fmt.Sprintf("ldmatrix row address %#x (lane %d) is not 16-byte aligned", addr, 8*i+r))
			}
			if addr+16 > uint64(len(c.shared)) {
				panic(fmt.Sprintf("ldmatrix row at %d past %d bytes of shared memory", addr, len(c.shared)))
			}
			for col := 0; col < 8; col++ {
				mat[i][r][col] = c.half16(addr + uint64(2*col))
			}
		}
	}
	for lane, t := range warp {
		for i := 0; i < num; i++ {
			var lo, hi uint64
			if trans {
				lo, hi = mat[i][2*(lane%4)][lane/4], mat[i][2*(lane%4)+1][lane/4]
			} else {
				lo, hi = mat[i][lane/4][2*(lane%4)], mat[i][lane/4][2*(lane%4)+1]
			}
			t.regs[dst[i].reg] = lo | hi<<16
		}
	}
}

// halfValue decodes a bf16 or f16 lane.
func halfValue(b uint64, typ string) float64 {
	switch typ {
	case "bf16":
		return float64(math.Float32frombits(uint32(b&0xffff) << 16))
	case "f16":
		return float64(float16.Frombits(uint16(b)).Float32())
	}
	panic("mma input type " + typ)
}

// mma runs `mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32`
// for the 32 lanes of warp.
func (c *simCtx) mma(warp []*simThread, in *simInstr) {
	p := in.parts
	if len(warp) != 32 {
		panic("mma.sync in a partial warp")
	}
	if len(p) == 10 && p[3] == "m16n8k32" {
		c.mmaInt8(warp, in)
		return
	}
	if len(p) != 10 || p[1] != "sync" || p[2] != "aligned" || p[3] != "m16n8k16" || p[4] != "row" || p[5] != "col" ||
		p[6] != "f32" || p[7] != p[8] || (p[7] != "bf16" && p[7] != "f16") || p[9] != "f32" {
		panic("unsupported mma form " + in.op)
	}
	typ := p[7]
	d, av, bv, cv := in.args[0].vec, in.args[1].vec, in.args[2].vec, in.args[3].vec
	if len(d) != 4 || len(av) != 4 || len(bv) != 2 || len(cv) != 4 {
		panic("mma.sync m16n8k16 takes {4 f32}, {4 b32}, {2 b32}, {4 f32}")
	}
	var A [16][16]float64
	var B [16][8]float64
	var C [16][8]float64
	for lane, th := range warp {
		g, t := lane>>2, lane%4
		for r := 0; r < 4; r++ {
			w := c.val(th, av[r])
			row, col := g+8*(r%2), 2*t+8*(r/2)
			A[row][col] = halfValue(w, typ)
			A[row][col+1] = halfValue(w>>16, typ)
		}
		for r := 0; r < 2; r++ {
			w := c.val(th, bv[r])
			B[2*t+8*r][g] = halfValue(w, typ)
			B[2*t+8*r+1][g] = halfValue(w>>16, typ)
		}
		for r := 0; r < 4; r++ {
			C[g+8*(r/2)][2*t+r%2] = float64(f32of(c.val(th, cv[r])))
		}
	}
	var D [16][8]float32
	for i := 0; i < 16; i++ {
		for j := 0; j < 8; j++ {
			s := C[i][j]
			for k := 0; k < 16; k++ {
				s += A[i][k] * B[k][j]
			}
			D[i][j] = float32(s)
		}
	}
	for lane, th := range warp {
		g, t := lane>>2, lane%4
		for r := 0; r < 4; r++ {
			th.regs[d[r].reg] = bitsF32(D[g+8*(r/2)][2*t+r%2])
		}
	}
}

// byteValue decodes byte i of w as s8 or u8.
func byteValue(w uint64, i int, typ string) int64 {
	b := uint8(w >> (8 * i))
	switch typ {
	case "s8":
		return int64(int8(b))
	case "u8":
		return int64(b)
	}
	panic("mma input type " + typ)
}

// mmaInt8 runs `mma.sync.aligned.m16n8k32.row.col.s32.{s8,u8}.{s8,u8}.s32`
// for the 32 lanes of warp: A 16x32 in registers a0..a3 (row g + 8*(r%2),
// bytes 4t..4t+3 + 16*(r/2)), B 32x8 in b0, b1 (k 4t..4t+3 + 16*r, column
// g), C and D as the f32 form's, sums in int64 wrapped to 32 bits.
func (c *simCtx) mmaInt8(warp []*simThread, in *simInstr) {
	p := in.parts
	if p[1] != "sync" || p[2] != "aligned" || p[4] != "row" || p[5] != "col" || p[6] != "s32" || p[9] != "s32" {
		panic("unsupported mma form " + in.op)
	}
	d, av, bv, cv := in.args[0].vec, in.args[1].vec, in.args[2].vec, in.args[3].vec
	if len(d) != 4 || len(av) != 4 || len(bv) != 2 || len(cv) != 4 {
		panic("mma.sync m16n8k32 takes {4 s32}, {4 b32}, {2 b32}, {4 s32}")
	}
	var A [16][32]int64
	var B [32][8]int64
	var C [16][8]int64
	for lane, th := range warp {
		g, t := lane>>2, lane%4
		for r := 0; r < 4; r++ {
			w := c.val(th, av[r])
			for i := 0; i < 4; i++ {
				A[g+8*(r%2)][4*t+16*(r/2)+i] = byteValue(w, i, p[7])
			}
		}
		for r := 0; r < 2; r++ {
			w := c.val(th, bv[r])
			for i := 0; i < 4; i++ {
				B[4*t+16*r+i][g] = byteValue(w, i, p[8])
			}
		}
		for r := 0; r < 4; r++ {
			C[g+8*(r/2)][2*t+r%2] = int64(int32(uint32(c.val(th, cv[r]))))
		}
	}
	var D [16][8]uint32
	for i := 0; i < 16; i++ {
		for j := 0; j < 8; j++ {
			s := C[i][j]
			for k := 0; k < 32; k++ {
				s += A[i][k] * B[k][j]
			}
			D[i][j] = uint32(s)
		}
	}
	for lane, th := range warp {
		g, t := lane>>2, lane%4
		for r := 0; r < 4; r++ {
			th.regs[d[r].reg] = uint64(D[g+8*(r/2)][2*t+r%2])
		}
	}
}
