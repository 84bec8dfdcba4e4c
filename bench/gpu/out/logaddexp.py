# Triton kernels and their launchers, compiled by tfc --emit=triton from logaddexp.tir for h200.
#
# For every function of the program, NAME(*inputs) takes CUDA tensors in
# argument order and returns its result (a tuple when there are several),
# allocating outputs and intermediates with torch.empty.
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

# The launch configuration of every kernel: BLOCK (elements of a block),
# ROWS (rows per program of a row kernel), num_warps. The BLOCK of a row
# kernel that keeps its rows in one block is next_power_of_2(row length)
# and must stay at least the row length.
CONFIGS = {
    "logaddexp_k0": {"BLOCK": 1024, "num_warps": 4},
}

# Flat kernels index their elements in 64 bits from this many on.
WIDE_FROM = 2**31


@triton.jit
def _max_nan(a, b):
    # the larger, NaN if either is NaN (tl.max and tl.maximum drop NaN by default)
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def logaddexp_k0(a, b, y, a_d0, b_d0, y_d0, total, BLOCK: tl.constexpr, WIDE: tl.constexpr):
    # elementwise: a 1-D grid over every element, BLOCK elements per program
    pid = tl.program_id(0)
    if WIDE:
        pid = pid.to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    emask = offs < total
    a_1 = tl.load(a + offs, mask=emask)
    b_1 = tl.load(b + offs, mask=emask)
    t1 = a_1 == b_1
    t2 = a_1 + 0.6931471824645996
    t3 = _max_nan(a_1, b_1)
    t4 = a_1 - b_1
    t5 = tl.abs(t4)
    t6 = -t5
    t7 = tl.exp(t6)
    t8 = libdevice.log1p(t7)
    t9 = t3 + t8
    t10 = tl.where(t1, t2, t9)
    tl.store(y + offs, t10, mask=emask)


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


def logaddexp(a, b):
    """logaddexp(a: f32[?], b: f32[?]) -> f32[?]"""
    a = _tensor("logaddexp", "a", a, torch.float32, (None,))
    b = _tensor("logaddexp", "b", b, torch.float32, (None,))
    if a.shape[0] != b.shape[0]:
        raise ValueError("logaddexp: a has %d in dimension 0 but b has %d in dimension 0: two '?' extents that broadcast together must be equal" % (a.shape[0], b.shape[0]))
    dev = a.device
    a_d0 = a.shape[0]
    b_d0 = b.shape[0]
    y = torch.empty((a_d0,), dtype=torch.float32, device=dev)
    cfg = CONFIGS["logaddexp_k0"]
    total = a_d0
    grid = (triton.cdiv(total, cfg["BLOCK"]),)
    if grid[0] > 0:
        logaddexp_k0[grid](a, b, y, a_d0, b_d0, a_d0, total, BLOCK=cfg["BLOCK"], WIDE=total + cfg["BLOCK"] > WIDE_FROM, num_warps=cfg["num_warps"])
    return y
