# Triton kernels and their launchers, compiled by tfc --emit=triton from generic.tir for h200.
#
# For every function of the program, NAME(*inputs) takes CUDA tensors in
# argument order and returns its result (a tuple when there are several),
# allocating outputs and intermediates with torch.empty.
import torch
import triton
import triton.language as tl

# The launch configuration of every kernel: BLOCK (elements of a block),
# ROWS (rows per program of a row kernel), num_warps. The BLOCK of a row
# kernel that keeps its rows in one block is next_power_of_2(row length)
# and must stay at least the row length.
CONFIGS = {
    "transpose_k0": {"BLOCK": 256, "num_warps": 4},
    "matmul_k0": {"BLOCK": 256, "num_warps": 4},
    "colsum_k0": {"BLOCK": 256, "num_warps": 4},
    "concat_k0": {"BLOCK": 256, "num_warps": 4},
    "slice_bcast_k0": {"BLOCK": 256, "num_warps": 4},
    "slice_bcast_k1": {"BLOCK": 256, "num_warps": 4},
    "reshape_k0": {"BLOCK": 256, "num_warps": 4},
    "dense_const_k0": {"BLOCK": 256, "num_warps": 4},
    "dense_const_k1": {"BLOCK": 1024, "num_warps": 4},
    "scalars_k0": {"BLOCK": 4096, "num_warps": 4},
    "twice_k0": {"BLOCK": 1024, "num_warps": 4},
    "twice_k1": {"BLOCK": 1024, "num_warps": 4},
}

# Flat kernels index their elements in 64 bits from this many on.
WIDE_FROM = 2**31


@triton.jit
def transpose_k0(x, y, x_d0, y_d1, BLOCK: tl.constexpr):
    # generic: one program per output row, BLOCK elements at a time
    pid = tl.program_id(0)
    r = pid.to(tl.int64)
    for c0 in range(0, y_d1, BLOCK):
        j = (c0 + tl.arange(0, BLOCK)).to(tl.int64)
        cmask = j < y_d1
        t0 = tl.load(x + (j * 64) + r, mask=cmask)
        tl.store(y + (r * y_d1) + j, t0, mask=cmask)


@triton.jit
def matmul_k0(a, b, c, a_d0, c_d0, BLOCK: tl.constexpr):
    # generic: one program per output row, BLOCK elements at a time
    pid = tl.program_id(0)
    r = pid.to(tl.int64)
    for c0 in range(0, 48, BLOCK):
        j = (c0 + tl.arange(0, BLOCK)).to(tl.int64)
        cmask = j < 48
        acc = tl.full((BLOCK,), 0.0, tl.float32)
        for k in range(0, 32):
            t0 = tl.load(a + (r * 32) + k)
            t1 = tl.load(b + (k * 48) + j, mask=cmask)
            t2 = t0.to(tl.float32)
            t3 = t1.to(tl.float32)
            t4 = tl.fma(t2, t3, acc)
            acc = t4
        t5 = acc.to(tl.bfloat16)
        tl.store(c + (r * 48) + j, t5, mask=cmask)


@triton.jit
def colsum_k0(x, y, x_d1, y_d0, BLOCK: tl.constexpr):
    # generic: one program per output row, BLOCK elements at a time
    for c0 in range(0, y_d0, BLOCK):
        j = (c0 + tl.arange(0, BLOCK)).to(tl.int64)
        cmask = j < y_d0
        acc = tl.full((BLOCK,), 0.0, tl.float32)
        for e in range(0, 8):
            t0 = tl.load(x + (e * x_d1) + j, mask=cmask)
            t1 = acc + t0
            acc = t1
        tl.store(y + j, acc, mask=cmask)


@triton.jit
def concat_k0(a, b, c, BLOCK: tl.constexpr):
    # generic: one program per output row, BLOCK elements at a time
    pid = tl.program_id(0)
    r = pid.to(tl.int64)
    for c0 in range(0, 8, BLOCK):
        e = (c0 + tl.arange(0, BLOCK)).to(tl.int64)
        cmask = e < 8
        t0 = tl.load(a + (r * 8) + e, mask=cmask)
        tl.store(c + (r * 11) + e, t0, mask=cmask)
    for c0_1 in range(0, 3, BLOCK):
        e_1 = (c0_1 + tl.arange(0, BLOCK)).to(tl.int64)
        cmask_1 = e_1 < 3
        t1 = e_1 + 8
        t2 = tl.load(b + (r * 3) + e_1, mask=cmask_1)
        tl.store(c + (r * 11) + t1, t2, mask=cmask_1)


@triton.jit
def slice_bcast_k0(x, s, BLOCK: tl.constexpr):
    # generic: one program per output row, BLOCK elements at a time
    pid = tl.program_id(0)
    r = pid.to(tl.int64)
    for c0 in range(0, 5, BLOCK):
        j = (c0 + tl.arange(0, BLOCK)).to(tl.int64)
        cmask = j < 5
        t0 = r + 2
        t1 = j + 1
        t2 = tl.load(x + (t0 * 8) + t1, mask=cmask)
        tl.store(s + (r * 5) + j, t2, mask=cmask)


@triton.jit
def slice_bcast_k1(v, b, BLOCK: tl.constexpr):
    # generic: one program per output row, BLOCK elements at a time
    pid = tl.program_id(0)
    r = pid.to(tl.int64)
    for c0 in range(0, 5, BLOCK):
        j = (c0 + tl.arange(0, BLOCK)).to(tl.int64)
        cmask = j < 5
        t0 = tl.load(v + j, mask=cmask)
        tl.store(b + (r * 5) + j, t0, mask=cmask)


@triton.jit
def reshape_k0(x, y, BLOCK: tl.constexpr):
    # generic: one program per output row, BLOCK elements at a time
    pid = tl.program_id(0)
    r = pid.to(tl.int64)
    for c0 in range(0, 12, BLOCK):
        j = (c0 + tl.arange(0, BLOCK)).to(tl.int64)
        cmask = j < 12
        t0 = r * 12
        t1 = t0 + j
        t2 = t1 % 8
        t3 = t1 // 8
        t4 = tl.load(x + (t3 * 8) + t2, mask=cmask)
        tl.store(y + (r * 12) + j, t4, mask=cmask)


@triton.jit
def dense_const_k0(c, BLOCK: tl.constexpr):
    # generic: one program per grid iteration, scalar code
    tl.store(c, 1.0)
    tl.store(c + 1, 2.0)
    tl.store(c + 2, 3.0)
    tl.store(c + 3, 4.0)


@triton.jit
def dense_const_k1(x, c, y, x_d0, y_d0, total, BLOCK: tl.constexpr, WIDE: tl.constexpr):
    # elementwise: a 1-D grid over every element, BLOCK elements per program
    pid = tl.program_id(0)
    if WIDE:
        pid = pid.to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    emask = offs < total
    i = offs % 4
    x_1 = tl.load(x + offs, mask=emask)
    c_1 = tl.load(c + i, mask=emask)
    t0 = x_1 + c_1
    tl.store(y + offs, t0, mask=emask)


@triton.jit
def scalars_k0(x, y, z, BLOCK: tl.constexpr):
    # elementwise: one program per grid iteration, scalar code
    x_1 = tl.load(x)
    y_1 = tl.load(y)
    t0 = x_1 * y_1
    tl.store(z, t0)


@triton.jit
def twice_k0(x, result0, total, BLOCK: tl.constexpr, WIDE: tl.constexpr):
    # elementwise: a 1-D grid over every element, BLOCK elements per program
    pid = tl.program_id(0)
    if WIDE:
        pid = pid.to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    emask = offs < total
    t0 = tl.load(x + offs, mask=emask)
    tl.store(result0 + offs, t0, mask=emask)


@triton.jit
def twice_k1(x, result1, total, BLOCK: tl.constexpr, WIDE: tl.constexpr):
    # elementwise: a 1-D grid over every element, BLOCK elements per program
    pid = tl.program_id(0)
    if WIDE:
        pid = pid.to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    emask = offs < total
    t0 = tl.load(x + offs, mask=emask)
    tl.store(result1 + offs, t0, mask=emask)


def _tensor(fn, name, t, dtype, shape):
    # t as a contiguous CUDA tensor of dtype and shape (None: any extent)
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{fn}: {name} must be a torch.Tensor, not {type(t).__name__}")
    if t.dtype != dtype:
        raise TypeError(f"{fn}: {name} is {t.dtype}, expected {dtype}")
    if t.dim() != len(shape) or any(n is not None and n != m for n, m in zip(shape, t.shape)):
        want = ", ".join("?" if n is None else str(n) for n in shape)
        raise ValueError(f"{fn}: {name} has shape {list(t.shape)}, expected [{want}]")
    if not t.is_cuda:
        raise ValueError(f"{fn}: {name} must be a CUDA tensor, not on {t.device}")
    return t.contiguous()


def transpose(x):
    """transpose(x: f32[?, 64]) -> f32[64, ?]"""
    x = _tensor("transpose", "x", x, torch.float32, (None, 64))
    dev = x.device
    x_d0 = x.shape[0]
    y = torch.empty((64, x_d0), dtype=torch.float32, device=dev)
    cfg = CONFIGS["transpose_k0"]
    grid = (64,)
    transpose_k0[grid](x, y, x_d0, x_d0, BLOCK=cfg["BLOCK"], num_warps=cfg["num_warps"])
    return y


def matmul(a, b):
    """matmul(a: bf16[?, 32], b: bf16[32, 48]) -> bf16[?, 48]"""
    a = _tensor("matmul", "a", a, torch.bfloat16, (None, 32))
    b = _tensor("matmul", "b", b, torch.bfloat16, (32, 48))
    dev = a.device
    a_d0 = a.shape[0]
    c = torch.empty((a_d0, 48), dtype=torch.bfloat16, device=dev)
    cfg = CONFIGS["matmul_k0"]
    grid = (a_d0,)
    if grid[0] > 0:
        matmul_k0[grid](a, b, c, a_d0, a_d0, BLOCK=cfg["BLOCK"], num_warps=cfg["num_warps"])
    return c


def colsum(x):
    """colsum(x: f32[8, ?]) -> f32[?]"""
    x = _tensor("colsum", "x", x, torch.float32, (8, None))
    dev = x.device
    x_d1 = x.shape[1]
    y = torch.empty((x_d1,), dtype=torch.float32, device=dev)
    cfg = CONFIGS["colsum_k0"]
    grid = (1,)
    colsum_k0[grid](x, y, x_d1, x_d1, BLOCK=cfg["BLOCK"], num_warps=cfg["num_warps"])
    return y


def concat(a, b):
    """concat(a: f32[16, 8], b: f32[16, 3]) -> f32[16, 11]"""
    a = _tensor("concat", "a", a, torch.float32, (16, 8))
    b = _tensor("concat", "b", b, torch.float32, (16, 3))
    dev = a.device
    c = torch.empty((16, 11), dtype=torch.float32, device=dev)
    cfg = CONFIGS["concat_k0"]
    grid = (16,)
    concat_k0[grid](a, b, c, BLOCK=cfg["BLOCK"], num_warps=cfg["num_warps"])
    return c


def slice_bcast(x, v):
    """slice_bcast(x: f32[16, 8], v: f32[1, 5]) -> (f32[4, 5], f32[3, 5])"""
    x = _tensor("slice_bcast", "x", x, torch.float32, (16, 8))
    v = _tensor("slice_bcast", "v", v, torch.float32, (1, 5))
    dev = x.device
    s = torch.empty((4, 5), dtype=torch.float32, device=dev)
    cfg = CONFIGS["slice_bcast_k0"]
    grid = (4,)
    slice_bcast_k0[grid](x, s, BLOCK=cfg["BLOCK"], num_warps=cfg["num_warps"])
    b = torch.empty((3, 5), dtype=torch.float32, device=dev)
    cfg = CONFIGS["slice_bcast_k1"]
    grid = (3,)
    slice_bcast_k1[grid](v, b, BLOCK=cfg["BLOCK"], num_warps=cfg["num_warps"])
    return (s, b)


def reshape(x):
    """reshape(x: f32[6, 8]) -> f32[4, 12]"""
    x = _tensor("reshape", "x", x, torch.float32, (6, 8))
    dev = x.device
    y = torch.empty((4, 12), dtype=torch.float32, device=dev)
    cfg = CONFIGS["reshape_k0"]
    grid = (4,)
    reshape_k0[grid](x, y, BLOCK=cfg["BLOCK"], num_warps=cfg["num_warps"])
    return y


def dense_const(x):
    """dense_const(x: f32[?, 4]) -> f32[?, 4]"""
    x = _tensor("dense_const", "x", x, torch.float32, (None, 4))
    dev = x.device
    x_d0 = x.shape[0]
    c = torch.empty((4,), dtype=torch.float32, device=dev)
    cfg = CONFIGS["dense_const_k0"]
    grid = (1,)
    dense_const_k0[grid](c, BLOCK=cfg["BLOCK"], num_warps=cfg["num_warps"])
    y = torch.empty((x_d0, 4), dtype=torch.float32, device=dev)
    cfg = CONFIGS["dense_const_k1"]
    total = (x_d0 * 4)
    grid = (triton.cdiv(total, cfg["BLOCK"]),)
    if grid[0] > 0:
        dense_const_k1[grid](x, c, y, x_d0, x_d0, total, BLOCK=cfg["BLOCK"], WIDE=total + cfg["BLOCK"] > WIDE_FROM, num_warps=cfg["num_warps"])
    return y


def scalars(x, y):
    """scalars(x: f32[], y: f32[]) -> f32[]"""
    x = _tensor("scalars", "x", x, torch.float32, ())
    y = _tensor("scalars", "y", y, torch.float32, ())
    dev = x.device
    z = torch.empty((), dtype=torch.float32, device=dev)
    cfg = CONFIGS["scalars_k0"]
    grid = (1,)
    scalars_k0[grid](x, y, z, BLOCK=cfg["BLOCK"], num_warps=cfg["num_warps"])
    return z


def twice(x):
    """twice(x: f32[8]) -> (f32[8], f32[8])"""
    x = _tensor("twice", "x", x, torch.float32, (8,))
    dev = x.device
    result0 = torch.empty((8,), dtype=torch.float32, device=dev)
    cfg = CONFIGS["twice_k0"]
    total = 8
    grid = (triton.cdiv(total, cfg["BLOCK"]),)
    twice_k0[grid](x, result0, total, BLOCK=cfg["BLOCK"], WIDE=total + cfg["BLOCK"] > WIDE_FROM, num_warps=cfg["num_warps"])
    result1 = torch.empty((8,), dtype=torch.float32, device=dev)
    cfg = CONFIGS["twice_k1"]
    total = 8
    grid = (triton.cdiv(total, cfg["BLOCK"]),)
    twice_k1[grid](x, result1, total, BLOCK=cfg["BLOCK"], WIDE=total + cfg["BLOCK"] > WIDE_FROM, num_warps=cfg["num_warps"])
    return (result0, result1)
