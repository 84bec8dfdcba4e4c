# Triton kernels and their launchers, compiled by tfc --emit=triton from logsumexp_32000.tir for h200.
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
    "logsumexp_k0": {"BLOCK": 4096, "num_warps": 4},
}


@triton.jit
def _max_nan(a, b):
    # the larger, NaN if either is NaN (tl.max and tl.maximum drop NaN by default)
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def logsumexp_k0(s, l, s_d0, l_d0, BLOCK: tl.constexpr):
    # row, online: one program per row, loops over BLOCK-element chunks
    pid = tl.program_id(0)
    r = pid.to(tl.int64)
    acc = tl.full([], (-float("inf")), tl.float32)
    acc_1 = tl.full([], 0.0, tl.float32)
    for c in range(0, 28672, 4096):
        acc_2 = tl.full((BLOCK,), (-float("inf")), tl.float32)
        i = tl.arange(0, BLOCK)
        t0 = c + i
        s_1 = tl.load(s + (r * 32000) + t0)
        t1 = s_1.to(tl.float32)
        t2 = _max_nan(acc_2, t1)
        t3 = tl.reduce(t2, 0, _max_nan)
        t4 = _max_nan(acc, t3)
        t5 = tl.abs(t4)
        t6 = t5 == float("inf")
        t7 = tl.where(t6, tl.full([], 0.0, tl.float32), t4)
        acc_3 = tl.full((BLOCK,), 0.0, tl.float32)
        t8 = t1 - t7
        t9 = tl.exp(t8)
        t10 = acc_3 + t9
        t11 = tl.sum(t10, axis=0)
        t12 = acc == (-float("inf"))
        t13 = tl.abs(acc)
        t14 = t13 == float("inf")
        t15 = tl.where(t14, tl.full([], 0.0, tl.float32), acc)
        t16 = t15 - t7
        t17 = tl.exp(t16)
        t18 = tl.where(t12, tl.full([], 0.0, tl.float32), t17)
        t19 = acc_1 * t18
        t20 = t19 + t11
        acc, acc_1 = t4, t20
    acc_4 = tl.full((BLOCK,), (-float("inf")), tl.float32)
    i_2 = tl.arange(0, BLOCK)
    cmask = i_2 < 3328
    t21 = 28672 + i_2
    s_2 = tl.load(s + (r * 32000) + t21, mask=cmask)
    t22 = s_2.to(tl.float32)
    t23 = _max_nan(acc_4, t22)
    t24 = tl.reduce(tl.where(cmask, t23, acc_4), 0, _max_nan)
    t25 = _max_nan(acc, t24)
    t26 = tl.abs(t25)
    t27 = t26 == float("inf")
    t28 = tl.where(t27, tl.full([], 0.0, tl.float32), t25)
    acc_5 = tl.full((BLOCK,), 0.0, tl.float32)
    i_3 = tl.arange(0, BLOCK)
    cmask_1 = i_3 < 3328
    t29 = t22 - t28
    t30 = tl.exp(t29)
    t31 = acc_5 + t30
    t32 = tl.sum(tl.where(cmask_1, t31, acc_5), axis=0)
    t33 = acc == (-float("inf"))
    t34 = tl.abs(acc)
    t35 = t34 == float("inf")
    t36 = tl.where(t35, tl.full([], 0.0, tl.float32), acc)
    t37 = t36 - t28
    t38 = tl.exp(t37)
    t39 = tl.where(t33, tl.full([], 0.0, tl.float32), t38)
    t40 = acc_1 * t39
    t41 = t40 + t32
    t42 = tl.abs(t25)
    t43 = t42 == float("inf")
    t44 = tl.where(t43, tl.full([], 0.0, tl.float32), t25)
    t45 = tl.abs(t25)
    t46 = t45 == float("inf")
    t47 = tl.where(t46, tl.full([], 0.0, tl.float32), t25)
    t48 = t47 - t44
    t49 = tl.exp(t48)
    t50 = t41 * t49
    t51 = tl.log(t50)
    t52 = t44 + t51
    t53 = _max_nan(tl.full([], (-float("inf")), tl.float32), t52)
    tl.store(l + r, t53)


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


def logsumexp(s):
    """logsumexp(s: bf16[?, 32000]) -> f32[?]"""
    s = _tensor("logsumexp", "s", s, torch.bfloat16, (None, 32000))
    dev = s.device
    s_d0 = s.shape[0]
    l = torch.empty((s_d0,), dtype=torch.float32, device=dev)
    cfg = CONFIGS["logsumexp_k0"]
    grid = (s_d0,)
    if grid[0] > 0:
        logsumexp_k0[grid](s, l, s_d0, s_d0, BLOCK=cfg["BLOCK"], num_warps=cfg["num_warps"])
    return l
