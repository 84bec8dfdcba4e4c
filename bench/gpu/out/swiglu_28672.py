# Triton kernels and their launchers, compiled by tfc --emit=triton from swiglu_28672.tir for h200.
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
    "swiglu_k0": {"BLOCK": 1024, "num_warps": 4},
}

# Flat kernels index their elements in 64 bits from this many on.
WIDE_FROM = 2**31


@triton.jit
def _silu(x):
    # x * sigmoid(x), with its limit 0 at -inf, where the product is -inf * 0
    return tl.where(x == -float("inf"), 0.0, x * tl.sigmoid(x))


@triton.jit
def swiglu_k0(g, u, y, g_d0, u_d0, y_d0, total, BLOCK: tl.constexpr, WIDE: tl.constexpr):
    # elementwise: a 1-D grid over every element, BLOCK elements per program
    pid = tl.program_id(0)
    if WIDE:
        pid = pid.to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    emask = offs < total
    g_1 = tl.load(g + offs, mask=emask)
    u_1 = tl.load(u + offs, mask=emask)
    t0 = g_1.to(tl.float32)
    t1 = _silu(t0)
    t2 = u_1.to(tl.float32)
    t3 = t1 * t2
    t4 = t3.to(tl.bfloat16)
    tl.store(y + offs, t4, mask=emask)


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


def swiglu(g, u):
    """swiglu(g: bf16[?, 28672], u: bf16[?, 28672]) -> bf16[?, 28672]"""
    g = _tensor("swiglu", "g", g, torch.bfloat16, (None, 28672))
    u = _tensor("swiglu", "u", u, torch.bfloat16, (None, 28672))
    if g.shape[0] != u.shape[0]:
        raise ValueError("swiglu: g has %d in dimension 0 but u has %d in dimension 0: two '?' extents that broadcast together must be equal" % (g.shape[0], u.shape[0]))
    dev = g.device
    g_d0 = g.shape[0]
    u_d0 = u.shape[0]
    y = torch.empty((g_d0, 28672), dtype=torch.bfloat16, device=dev)
    cfg = CONFIGS["swiglu_k0"]
    total = (g_d0 * 28672)
    grid = (triton.cdiv(total, cfg["BLOCK"]),)
    if grid[0] > 0:
        swiglu_k0[grid](g, u, y, g_d0, u_d0, g_d0, total, BLOCK=cfg["BLOCK"], WIDE=total + cfg["BLOCK"] > WIDE_FROM, num_warps=cfg["num_warps"])
    return y
