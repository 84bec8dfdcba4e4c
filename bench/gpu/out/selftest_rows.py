# Triton kernels and their launchers, compiled by tfc --emit=triton from rows.tir for h200.
#
# For every function of the program, NAME(*inputs) takes CUDA tensors in
# argument order and returns its result (a tuple when there are several),
# allocating outputs and intermediates with torch.empty.
import os

import torch
import triton
import triton.language as tl

# The launch configuration of every kernel: BLOCK (elements of a block),
# ROWS (rows per program of a row kernel), num_warps. The BLOCK of a row
# kernel that keeps its rows in one block is next_power_of_2(row length)
# and must stay at least the row length.
CONFIGS = {
    "short_rows_k0": {"BLOCK": 64, "ROWS": 64, "num_warps": 4},
    "masked_rows_k0": {"BLOCK": 4096, "ROWS": 1, "num_warps": 4},
    "long_rows_k0": {"BLOCK": 4096, "num_warps": 4},
    "two_pass_k0": {"BLOCK": 4096, "num_warps": 4},
    "two_pass_k1": {"BLOCK": 16, "ROWS": 64, "num_warps": 4},
    "two_pass_k2": {"BLOCK": 4096, "ROWS": 1, "num_warps": 4},
    "two_pass_k3": {"BLOCK": 4096, "num_warps": 4},
    "row_min_k0": {"BLOCK": 128, "ROWS": 32, "num_warps": 4},
    "norm_rope_k0": {"BLOCK": 128, "ROWS": 32, "num_warps": 4},
    "stored_online_k0": {"BLOCK": 4096, "num_warps": 4},
    "stored_transposed_k0": {"BLOCK": 64, "ROWS": 64, "num_warps": 4},
}


@triton.jit
def _max_nan(a, b):
    # the larger, NaN if either is NaN (tl.max and tl.maximum drop NaN by default)
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _min_nan(a, b):
    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def short_rows_k0(x, w, y, x_d0, y_d0, BLOCK: tl.constexpr, ROWS: tl.constexpr):
    # row, one-pass: rows of 64 in one block, ROWS rows per program
    pid = tl.program_id(0)
    r = (pid * ROWS).to(tl.int64) + tl.arange(0, ROWS)[:, None]
    rmask = r < y_d0
    cols = tl.arange(0, BLOCK)[None, :]
    x_1 = tl.load(x + (r * 64) + cols, mask=rmask)
    w_1 = tl.load(w + cols)
    acc = tl.full((ROWS, BLOCK), 0.0, tl.float32)
    t0 = x_1 * x_1
    t1 = acc + t0
    acc_1 = tl.sum(t1, axis=1, keep_dims=True)
    t2 = acc_1 * 0.015625
    t3 = t2 + 9.999999747378752e-06
    t4 = tl.rsqrt(t3)
    t5 = x_1 * t4
    t6 = t5 * w_1
    tl.store(y + (r * 64) + cols, t6, mask=rmask)


@triton.jit
def masked_rows_k0(x, p, x_d0, p_d0, BLOCK: tl.constexpr, ROWS: tl.constexpr):
    # row, one-pass: rows of 3000 in one block, ROWS rows per program
    pid = tl.program_id(0)
    r = (pid * ROWS).to(tl.int64) + tl.arange(0, ROWS)[:, None]
    rmask = r < p_d0
    cols = tl.arange(0, BLOCK)[None, :]
    cmask = cols < 3000
    bmask = rmask & cmask
    x_1 = tl.load(x + (r * 3000) + cols, mask=bmask)
    acc = tl.full((ROWS, BLOCK), (-float("inf")), tl.float32)
    t0 = x_1.to(tl.float32)
    t1 = _max_nan(acc, t0)
    acc_1 = tl.reduce(tl.where(cmask, t1, acc), 1, _max_nan, keep_dims=True)
    acc_2 = tl.full((ROWS, BLOCK), 0.0, tl.float32)
    t2 = t0 - acc_1
    t3 = tl.exp(t2)
    t4 = acc_2 + t3
    acc_3 = tl.sum(tl.where(cmask, t4, acc_2), axis=1, keep_dims=True)
    t5 = 1.0 / acc_3
    t6 = t3 * t5
    t7 = t6.to(tl.bfloat16)
    tl.store(p + (r * 3000) + cols, t7, mask=bmask)


@triton.jit
def long_rows_k0(x, p, x_d0, p_d0, BLOCK: tl.constexpr):
    # row, one-pass: one program per row, loops over BLOCK-element chunks
    pid = tl.program_id(0)
    r = pid.to(tl.int64)
    acc = tl.full((BLOCK,), (-float("inf")), tl.float32)
    for c0 in range(0, 40000, BLOCK):
        i = c0 + tl.arange(0, BLOCK)
        cmask = i < 40000
        x_1 = tl.load(x + (r * 40000) + i, mask=cmask)
        t0 = _max_nan(acc, x_1)
        acc = tl.where(cmask, t0, acc)
    acc_1 = tl.reduce(acc, 0, _max_nan)
    acc_2 = tl.full((BLOCK,), 0.0, tl.float32)
    for c0_1 in range(0, 40000, BLOCK):
        i_1 = c0_1 + tl.arange(0, BLOCK)
        cmask_1 = i_1 < 40000
        x_2 = tl.load(x + (r * 40000) + i_1, mask=cmask_1)
        t1 = x_2 - acc_1
        t2 = tl.exp(t1)
        t3 = acc_2 + t2
        acc_2 = tl.where(cmask_1, t3, acc_2)
    acc_3 = tl.sum(acc_2, axis=0)
    t4 = 1.0 / acc_3
    for c0_2 in range(0, 40000, BLOCK):
        i_2 = c0_2 + tl.arange(0, BLOCK)
        cmask_2 = i_2 < 40000
        x_3 = tl.load(x + (r * 40000) + i_2, mask=cmask_2)
        t5 = x_3 - acc_1
        t6 = tl.exp(t5)
        t7 = t6 * t4
        tl.store(p + (r * 40000) + i_2, t7, mask=cmask_2)


@triton.jit
def two_pass_k0(x, p, split_max, split_sum, x_d0, p_d0, split_max_d0, split_sum_d0, BLOCK: tl.constexpr):
    # row, online: one program per row, loops over BLOCK-element chunks
    pid = tl.program_id(0)
    r = pid.to(tl.int64)
    split = r % 16
    t1 = r // 16
    t2 = split * 4096
    acc = tl.full((BLOCK,), (-float("inf")), tl.float32)
    i = tl.arange(0, BLOCK)
    t3 = t2 + i
    x_1 = tl.load(x + (t1 * 65536) + t3)
    t4 = _max_nan(acc, x_1)
    t5 = tl.reduce(t4, 0, _max_nan)
    t6 = _max_nan(tl.full([], (-float("inf")), tl.float32), t5)
    t7 = tl.abs(t6)
    t8 = t7 == float("inf")
    t9 = tl.where(t8, tl.full([], 0.0, tl.float32), t6)
    acc_1 = tl.full((BLOCK,), 0.0, tl.float32)
    t10 = x_1 - t9
    t11 = tl.exp(t10)
    t12 = acc_1 + t11
    t13 = tl.sum(t12, axis=0)
    t14 = tl.full([], (-float("inf")), tl.float32) == (-float("inf"))
    t15 = tl.abs(tl.full([], (-float("inf")), tl.float32))
    t16 = t15 == float("inf")
    t17 = tl.where(t16, tl.full([], 0.0, tl.float32), tl.full([], (-float("inf")), tl.float32))
    t18 = t17 - t9
    t19 = tl.exp(t18)
    t20 = tl.where(t14, tl.full([], 0.0, tl.float32), t19)
    t21 = 0.0 * t20
    t22 = t21 + t13
    tl.store(split_max + (t1 * 16) + split, t6)
    tl.store(split_sum + (t1 * 16) + split, t22)


@triton.jit
def two_pass_k1(x, split_max, split_sum, p, row_max, row_sum, x_d0, split_max_d0, split_sum_d0, p_d0, row_max_d0, row_sum_d0, BLOCK: tl.constexpr, ROWS: tl.constexpr):
    # row, one-pass: rows of 16 in one block, ROWS rows per program
    pid = tl.program_id(0)
    r = (pid * ROWS).to(tl.int64) + tl.arange(0, ROWS)[:, None]
    rmask = r < split_max_d0
    cols = tl.arange(0, BLOCK)[None, :]
    t0 = tl.load(split_max + (r * 16) + cols, mask=rmask)
    t1 = tl.load(split_sum + (r * 16) + cols, mask=rmask)
    acc = tl.full((ROWS, BLOCK), (-float("inf")), tl.float32)
    t2 = _max_nan(acc, t0)
    t3 = tl.reduce(t2, 1, _max_nan, keep_dims=True)
    t4 = tl.abs(t3)
    t5 = t4 == float("inf")
    t6 = tl.where(t5, tl.full([], 0.0, tl.float32), t3)
    acc_1 = tl.full((ROWS, BLOCK), 0.0, tl.float32)
    t7 = tl.abs(t0)
    t8 = t7 == float("inf")
    t9 = tl.where(t8, tl.full([], 0.0, tl.float32), t0)
    t10 = t9 - t6
    t11 = tl.exp(t10)
    t12 = t0 == (-float("inf"))
    t13 = tl.where(t12, tl.full([], 0.0, tl.float32), t11)
    t14 = t1 * t13
    t15 = acc_1 + t14
    t16 = tl.sum(t15, axis=1, keep_dims=True)
    t17 = tl.abs(t3)
    t18 = t17 == float("inf")
    t19 = tl.where(t18, tl.full([], 0.0, tl.float32), t3)
    t20 = t19 - t3
    t21 = tl.exp(t20)
    t22 = t16 * t21
    tl.store(row_max + r, t3, mask=rmask)
    tl.store(row_sum + r, t22, mask=rmask)


@triton.jit
def two_pass_k2(x, row_max, row_sum, p, x_d0, row_max_d0, row_sum_d0, p_d0, BLOCK: tl.constexpr, ROWS: tl.constexpr):
    # row, two-pass: rows of 4096 in one block, ROWS rows per program
    t0 = row_max_d0 * 16
    pid = tl.program_id(0)
    r = (pid * ROWS).to(tl.int64) + tl.arange(0, ROWS)[:, None]
    rmask = r < t0
    cols = tl.arange(0, BLOCK)[None, :]
    t1 = r // 16
    split = r % 16
    t2 = split * 4096
    t3 = t2 + cols
    x_1 = tl.load(x + (t1 * 65536) + t3, mask=rmask)
    t4 = tl.load(row_max + t1, mask=rmask)
    t5 = tl.load(row_sum + t1, mask=rmask)
    t6 = 1.0 / t5
    t7 = x_1 - t4
    t8 = tl.exp(t7)
    t9 = t8 * t6
    tl.store(p + (t1 * 65536) + t3, t9, mask=rmask)


@triton.jit
def two_pass_k3(x, p, x_d0, p_d0, BLOCK: tl.constexpr):
    # row, online: one program per row, loops over BLOCK-element chunks
    pid = tl.program_id(0)
    r = pid.to(tl.int64)
    acc = tl.full([], (-float("inf")), tl.float32)
    acc_1 = tl.full([], 0.0, tl.float32)
    for c in range(0, 65536, 4096):
        acc_2 = tl.full((BLOCK,), (-float("inf")), tl.float32)
        i = tl.arange(0, BLOCK)
        t0 = c + i
        x_1 = tl.load(x + (r * 65536) + t0)
        t1 = _max_nan(acc_2, x_1)
        t2 = tl.reduce(t1, 0, _max_nan)
        t3 = _max_nan(acc, t2)
        t4 = tl.abs(t3)
        t5 = t4 == float("inf")
        t6 = tl.where(t5, tl.full([], 0.0, tl.float32), t3)
        acc_3 = tl.full((BLOCK,), 0.0, tl.float32)
        t7 = x_1 - t6
        t8 = tl.exp(t7)
        t9 = acc_3 + t8
        t10 = tl.sum(t9, axis=0)
        t11 = acc == (-float("inf"))
        t12 = tl.abs(acc)
        t13 = t12 == float("inf")
        t14 = tl.where(t13, tl.full([], 0.0, tl.float32), acc)
        t15 = t14 - t6
        t16 = tl.exp(t15)
        t17 = tl.where(t11, tl.full([], 0.0, tl.float32), t16)
        t18 = acc_1 * t17
        t19 = t18 + t10
        acc, acc_1 = t3, t19
    t20 = tl.abs(acc)
    t21 = t20 == float("inf")
    t22 = tl.where(t21, tl.full([], 0.0, tl.float32), acc)
    t23 = t22 - acc
    t24 = tl.exp(t23)
    t25 = acc_1 * t24
    t26 = 1.0 / t25
    for c0 in range(0, 65536, BLOCK):
        i_2 = c0 + tl.arange(0, BLOCK)
        cmask = i_2 < 65536
        x_2 = tl.load(x + (r * 65536) + i_2, mask=cmask)
        t27 = x_2 - acc
        t28 = tl.exp(t27)
        t29 = t28 * t26
        tl.store(p + (r * 65536) + i_2, t29, mask=cmask)


@triton.jit
def row_min_k0(x, m, x_d0, m_d0, BLOCK: tl.constexpr, ROWS: tl.constexpr):
    # row, one-pass: rows of 100 in one block, ROWS rows per program
    pid = tl.program_id(0)
    r = (pid * ROWS).to(tl.int64) + tl.arange(0, ROWS)[:, None]
    rmask = r < m_d0
    cols = tl.arange(0, BLOCK)[None, :]
    cmask = cols < 100
    bmask = rmask & cmask
    x_1 = tl.load(x + (r * 100) + cols, mask=bmask)
    acc = tl.full((ROWS, BLOCK), 2147483647, tl.int32)
    t0 = tl.minimum(acc, x_1)
    acc_1 = tl.reduce(tl.where(cmask, t0, acc), 1, _min_nan, keep_dims=True)
    tl.store(m + r, acc_1, mask=rmask)


@triton.jit
def norm_rope_k0(x, w, sign, cos, sin, o, x_d1, cos_d1, sin_d1, o_d1, BLOCK: tl.constexpr, ROWS: tl.constexpr):
    # row, one-pass: rows of 128 in one block, ROWS rows per program
    t0 = o_d1 * 4
    pid = tl.program_id(0)
    r = (pid * ROWS).to(tl.int64) + tl.arange(0, ROWS)[:, None]
    rmask = r < t0
    cols = tl.arange(0, BLOCK)[None, :]
    t1 = r // 4
    t2 = r % 4
    x_1 = tl.load(x + (((t1 * 4) + t2) * 128) + cols, mask=rmask)
    w_1 = tl.load(w + cols)
    cos_1 = tl.load(cos + (t1 * 128) + cols, mask=rmask)
    t3 = cols + 64
    t4 = t3 % 128
    rolled = tl.load(w + t4)
    t5 = cols + 64
    t6 = t5 % 128
    rolled_1 = tl.load(x + (((t1 * 4) + t2) * 128) + t6, mask=rmask)
    sign_1 = tl.load(sign + cols)
    sin_1 = tl.load(sin + (t1 * 128) + cols, mask=rmask)
    acc = tl.full((ROWS, BLOCK), 0.0, tl.float32)
    t7 = x_1.to(tl.float32)
    t8 = t7 * t7
    t9 = acc + t8
    acc_1 = tl.sum(t9, axis=1, keep_dims=True)
    t10 = acc_1 * 0.0078125
    t11 = t10 + 9.999999974752427e-07
    t12 = tl.rsqrt(t11)
    t13 = t7 * t12
    t14 = t13.to(tl.bfloat16)
    t15 = w_1.to(tl.float32)
    t16 = t14.to(tl.float32)
    t17 = t15 * t16
    t18 = cos_1.to(tl.float32)
    t19 = t17 * t18
    t20 = rolled_1.to(tl.float32)
    t21 = t20 * t12
    t22 = t21.to(tl.bfloat16)
    t23 = rolled.to(tl.float32)
    t24 = t22.to(tl.float32)
    t25 = t23 * t24
    t26 = sign_1.to(tl.float32)
    t27 = t25 * t26
    t28 = sin_1.to(tl.float32)
    t29 = t27 * t28
    t30 = t19 + t29
    t31 = t30.to(tl.bfloat16)
    tl.store(o + (((t1 * 4) + t2) * 128) + cols, t31, mask=rmask)


@triton.jit
def stored_online_k0(x, r, t, l, x_d0, r_d0, t_d1, l_d0, BLOCK: tl.constexpr):
    # row, online: one program per row, loops over BLOCK-element chunks
    pid = tl.program_id(0)
    r_1 = pid.to(tl.int64)
    acc = tl.full([], (-float("inf")), tl.float32)
    acc_1 = tl.full([], 0.0, tl.float32)
    for c in range(0, 8192, 4096):
        acc_2 = tl.full((BLOCK,), (-float("inf")), tl.float32)
        i = tl.arange(0, BLOCK)
        t0 = c + i
        x_1 = tl.load(x + (r_1 * 9000) + t0)
        r_2 = tl.load(r + (r_1 * 9000) + t0)
        t1 = x_1 + r_2
        tl.store(t + (t0 * t_d1) + r_1, t1)
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
    cmask = i_2 < 808
    t21 = 8192 + i_2
    x_2 = tl.load(x + (r_1 * 9000) + t21, mask=cmask)
    r_3 = tl.load(r + (r_1 * 9000) + t21, mask=cmask)
    t22 = x_2 + r_3
    tl.store(t + (t21 * t_d1) + r_1, t22, mask=cmask)
    t23 = _max_nan(acc_4, t22)
    t24 = tl.reduce(tl.where(cmask, t23, acc_4), 0, _max_nan)
    t25 = _max_nan(acc, t24)
    t26 = tl.abs(t25)
    t27 = t26 == float("inf")
    t28 = tl.where(t27, tl.full([], 0.0, tl.float32), t25)
    acc_5 = tl.full((BLOCK,), 0.0, tl.float32)
    i_3 = tl.arange(0, BLOCK)
    cmask_1 = i_3 < 808
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
    tl.store(l + r_1, t53)


@triton.jit
def stored_transposed_k0(x, t, x_d0, t_d1, BLOCK: tl.constexpr, ROWS: tl.constexpr):
    # row, one-pass: rows of 64 in one block, ROWS rows per program
    pid = tl.program_id(0)
    r = (pid * ROWS).to(tl.int64) + tl.arange(0, ROWS)[:, None]
    rmask = r < x_d0
    cols = tl.arange(0, BLOCK)[None, :]
    x_1 = tl.load(x + (r * 64) + cols, mask=rmask)
    acc = tl.full((ROWS, BLOCK), (-float("inf")), tl.float32)
    t0 = _max_nan(acc, x_1)
    acc_1 = tl.reduce(t0, 1, _max_nan, keep_dims=True)
    acc_2 = tl.full((ROWS, BLOCK), 0.0, tl.float32)
    t1 = x_1 - acc_1
    t2 = tl.exp(t1)
    t3 = acc_2 + t2
    acc_3 = tl.sum(t3, axis=1, keep_dims=True)
    t4 = 1.0 / acc_3
    t5 = t2 * t4
    tl.store(t + (cols * t_d1) + r, t5, mask=rmask)


def _tensor(fn, name, t, dtype, shape):
    # t as a contiguous CUDA tensor of dtype and shape (None: any extent)
    if isinstance(t, torch.Tensor) and t.dtype == dtype and t.shape == shape and t.is_cuda:
        return t if t.is_contiguous() else t.contiguous()
    return _tensor_checked(fn, name, t, dtype, shape)


def _tensor_checked(fn, name, t, dtype, shape):
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


# kernel[grid](*args, **meta), with the CompiledKernel of each specialisation
# kept and its launcher called directly: the key holds what Triton
# specialises on (a pointer's 16-byte alignment; an integer's being 1, a
# multiple of 16, 32-bit; the constexprs and launch options; the device).
# Launch hooks (a profiler's) are called as kernel[grid] calls them, and
# skipped (with their metadata) where none is set. The
# full path runs when TENSORFORGE_TRITON_LAUNCH=jit and on Triton versions
# other than the one whose launcher this was checked against (3.6).
try:
    from triton import knobs as _knobs

    _fast_launch = (tuple(int(p) for p in triton.__version__.split(".")[:2]) == (3, 6)
                    and os.environ.get("TENSORFORGE_TRITON_LAUNCH", "") != "jit")
except (ImportError, ValueError):
    _knobs, _fast_launch = None, False
_compiled = {}


def _cdiv(a, b):
    # (triton.cdiv is a constexpr function in Triton 3.6: a call through
    # its wrapper costs several times this one)
    return -(-a // b)


def _launch(kern, grid, args, **meta):
    global _fast_launch
    if not _fast_launch:
        kern[grid](*args, **meta)
        return
    # the device of the first buffer (a kernel's buffers come first); the
    # kernel by identity (it lives as long as the module; JITFunction's own
    # hash is computed in Python at every call)
    dev = args[0].get_device()
    key = [id(kern), dev, *meta.values()]
    for a in args:
        if a.__class__ is int:
            key.append((a == 1, a % 16 == 0, -2**31 <= a < 2**31))
        else:
            key.append(a.data_ptr() % 16 == 0)
    key = tuple(key)
    hit = _compiled.get(key)
    if hit is not None:
        ck, consts = hit
        g = (grid[0], grid[1] if len(grid) > 1 else 1, grid[2] if len(grid) > 2 else 1)
        stream = torch._C._cuda_getCurrentRawStream(dev)
        # the launch hooks (a profiler's) see what kernel[grid] shows them;
        # with none (Triton keeps an empty HookChain) there is neither
        # metadata to build nor a chain for the launcher to call
        rt = _knobs.runtime
        enter, leave = rt.launch_enter_hook, rt.launch_exit_hook
        if getattr(enter, "calls", enter) or getattr(leave, "calls", leave):
            md = ck.launch_metadata(g, stream, *args, *consts)
        else:
            enter = leave = md = None
        try:
            ck.run(g[0], g[1], g[2], stream, ck.function, ck.packed_metadata, md, enter, leave, *args, *consts)
            return
        except TypeError:
            _fast_launch = False  # a launcher of another calling convention: launch as Triton does
            kern[grid](*args, **meta)
            return
    with torch.cuda.device(dev):
        ck = kern[grid](*args, **meta)
    try:
        _compiled[key] = (ck, tuple(meta[n] for n in kern.arg_names if n in meta))
        ck.run, ck.function, ck.packed_metadata, ck.launch_metadata
    except (AttributeError, TypeError):
        _compiled.pop(key, None)
        _fast_launch = False


# The fewest programs a grid of rows is given: two per multiprocessor.
_FILL = []
_FITS = {}


def _fit_rows(cfg, n):
    """cfg for a launch over n rows: ROWS (and num_warps with it) halved
    while the grid would give the GPU fewer than _FILL programs, so that a
    decode step's few rows (32 heads of one token) spread over the
    multiprocessors instead of running in one or two programs. The choice
    is kept per (configuration, n)."""
    if not _FILL:
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        _FILL.append(2 * props.multi_processor_count)
    rows = cfg["ROWS"]
    if rows == 1 or n >= rows * _FILL[0]:
        return cfg
    hit = _FITS.get((id(cfg), n))
    if hit is None:
        warps = cfg["num_warps"]
        while rows > 1 and (n + rows - 1) // rows < _FILL[0]:
            rows //= 2
            warps = max(1, warps // 2)
        # (holding cfg keeps its id from being reused by another dict)
        hit = _FITS[(id(cfg), n)] = (cfg, dict(cfg, ROWS=rows, num_warps=warps))
    return hit[1]


def short_rows(x, w):
    """short_rows(x: f32[?, 64], w: f32[64]) -> f32[?, 64]"""
    x = _tensor("short_rows", "x", x, torch.float32, (None, 64))
    w = _tensor("short_rows", "w", w, torch.float32, (64,))
    dev = x.device
    x_d0 = x.shape[0]
    y = torch.empty((x_d0, 64), dtype=torch.float32, device=dev)
    cfg = _fit_rows(CONFIGS["short_rows_k0"], x_d0)
    grid = (_cdiv(x_d0, cfg["ROWS"]),)
    if grid[0] > 0:
        _launch(short_rows_k0, grid, (x, w, y, x_d0, x_d0), BLOCK=cfg["BLOCK"], ROWS=cfg["ROWS"], num_warps=cfg["num_warps"])
    return y


def masked_rows(x):
    """masked_rows(x: bf16[?, 3000]) -> bf16[?, 3000]"""
    x = _tensor("masked_rows", "x", x, torch.bfloat16, (None, 3000))
    dev = x.device
    x_d0 = x.shape[0]
    p = torch.empty((x_d0, 3000), dtype=torch.bfloat16, device=dev)
    cfg = CONFIGS["masked_rows_k0"]
    grid = (_cdiv(x_d0, cfg["ROWS"]),)
    if grid[0] > 0:
        _launch(masked_rows_k0, grid, (x, p, x_d0, x_d0), BLOCK=cfg["BLOCK"], ROWS=cfg["ROWS"], num_warps=cfg["num_warps"])
    return p


def long_rows(x):
    """long_rows(x: f32[?, 40000]) -> f32[?, 40000]"""
    x = _tensor("long_rows", "x", x, torch.float32, (None, 40000))
    dev = x.device
    x_d0 = x.shape[0]
    p = torch.empty((x_d0, 40000), dtype=torch.float32, device=dev)
    cfg = CONFIGS["long_rows_k0"]
    grid = (x_d0,)
    if grid[0] > 0:
        _launch(long_rows_k0, grid, (x, p, x_d0, x_d0), BLOCK=cfg["BLOCK"], num_warps=cfg["num_warps"])
    return p


def two_pass(x):
    """two_pass(x: f32[?, 65536]) -> f32[?, 65536]"""
    x = _tensor("two_pass", "x", x, torch.float32, (None, 65536))
    dev = x.device
    x_d0 = x.shape[0]
    p = torch.empty((x_d0, 65536), dtype=torch.float32, device=dev)
    if x_d0 <= 263:
        split_max = torch.empty((x_d0, 16), dtype=torch.float32, device=dev)
        split_sum = torch.empty((x_d0, 16), dtype=torch.float32, device=dev)
        cfg = CONFIGS["two_pass_k0"]
        grid = ((x_d0 * 16),)
        if grid[0] > 0:
            _launch(two_pass_k0, grid, (x, p, split_max, split_sum, x_d0, x_d0, x_d0, x_d0), BLOCK=cfg["BLOCK"], num_warps=cfg["num_warps"])
    if x_d0 <= 263:
        row_max = torch.empty((x_d0, 1), dtype=torch.float32, device=dev)
        row_sum = torch.empty((x_d0, 1), dtype=torch.float32, device=dev)
        cfg = _fit_rows(CONFIGS["two_pass_k1"], x_d0)
        grid = (_cdiv(x_d0, cfg["ROWS"]),)
        if grid[0] > 0:
            _launch(two_pass_k1, grid, (x, split_max, split_sum, p, row_max, row_sum, x_d0, x_d0, x_d0, x_d0, x_d0, x_d0), BLOCK=cfg["BLOCK"], ROWS=cfg["ROWS"], num_warps=cfg["num_warps"])
    if x_d0 <= 263:
        cfg = CONFIGS["two_pass_k2"]
        grid = (_cdiv((x_d0 * 16), cfg["ROWS"]),)
        if grid[0] > 0:
            _launch(two_pass_k2, grid, (x, row_max, row_sum, p, x_d0, x_d0, x_d0, x_d0), BLOCK=cfg["BLOCK"], ROWS=cfg["ROWS"], num_warps=cfg["num_warps"])
    if x_d0 >= 264:
        cfg = CONFIGS["two_pass_k3"]
        grid = (x_d0,)
        if grid[0] > 0:
            _launch(two_pass_k3, grid, (x, p, x_d0, x_d0), BLOCK=cfg["BLOCK"], num_warps=cfg["num_warps"])
    return p


def row_min(x):
    """row_min(x: i32[?, 100]) -> i32[?]"""
    x = _tensor("row_min", "x", x, torch.int32, (None, 100))
    dev = x.device
    x_d0 = x.shape[0]
    m = torch.empty((x_d0,), dtype=torch.int32, device=dev)
    cfg = _fit_rows(CONFIGS["row_min_k0"], x_d0)
    grid = (_cdiv(x_d0, cfg["ROWS"]),)
    if grid[0] > 0:
        _launch(row_min_k0, grid, (x, m, x_d0, x_d0), BLOCK=cfg["BLOCK"], ROWS=cfg["ROWS"], num_warps=cfg["num_warps"])
    return m


def norm_rope(x, w, cos, sin, sign):
    """norm_rope(x: bf16[1, ?, 4, 128], w: bf16[128], cos: bf16[1, ?, 1, 128], sin: bf16[1, ?, 1, 128], sign: bf16[128]) -> bf16[1, ?, 4, 128]"""
    x = _tensor("norm_rope", "x", x, torch.bfloat16, (1, None, 4, 128))
    w = _tensor("norm_rope", "w", w, torch.bfloat16, (128,))
    cos = _tensor("norm_rope", "cos", cos, torch.bfloat16, (1, None, 1, 128))
    sin = _tensor("norm_rope", "sin", sin, torch.bfloat16, (1, None, 1, 128))
    sign = _tensor("norm_rope", "sign", sign, torch.bfloat16, (128,))
    if x.shape[1] != cos.shape[1]:
        raise ValueError("norm_rope: x has %d in dimension 1 but cos has %d in dimension 1: two '?' extents that broadcast together must be equal" % (x.shape[1], cos.shape[1]))
    if x.shape[1] != sin.shape[1]:
        raise ValueError("norm_rope: x has %d in dimension 1 but sin has %d in dimension 1: two '?' extents that broadcast together must be equal" % (x.shape[1], sin.shape[1]))
    dev = x.device
    x_d1 = x.shape[1]
    cos_d1 = cos.shape[1]
    sin_d1 = sin.shape[1]
    o = torch.empty((1, x_d1, 4, 128), dtype=torch.bfloat16, device=dev)
    cfg = _fit_rows(CONFIGS["norm_rope_k0"], (x_d1 * 4))
    grid = (_cdiv((x_d1 * 4), cfg["ROWS"]),)
    if grid[0] > 0:
        _launch(norm_rope_k0, grid, (x, w, sign, cos, sin, o, x_d1, cos_d1, sin_d1, x_d1), BLOCK=cfg["BLOCK"], ROWS=cfg["ROWS"], num_warps=cfg["num_warps"])
    return o


def stored_online(x, r):
    """stored_online(x: f32[?, 9000], r: f32[?, 9000]) -> (f32[9000, ?], f32[?])"""
    x = _tensor("stored_online", "x", x, torch.float32, (None, 9000))
    r = _tensor("stored_online", "r", r, torch.float32, (None, 9000))
    if x.shape[0] != r.shape[0]:
        raise ValueError("stored_online: x has %d in dimension 0 but r has %d in dimension 0: two '?' extents that broadcast together must be equal" % (x.shape[0], r.shape[0]))
    dev = x.device
    x_d0 = x.shape[0]
    r_d0 = r.shape[0]
    t = torch.empty((9000, x_d0), dtype=torch.float32, device=dev)
    l = torch.empty((x_d0,), dtype=torch.float32, device=dev)
    cfg = CONFIGS["stored_online_k0"]
    grid = (x_d0,)
    if grid[0] > 0:
        _launch(stored_online_k0, grid, (x, r, t, l, x_d0, r_d0, x_d0, x_d0), BLOCK=cfg["BLOCK"], num_warps=cfg["num_warps"])
    return (t, l)


def stored_transposed(x):
    """stored_transposed(x: f32[?, 64]) -> f32[64, ?]"""
    x = _tensor("stored_transposed", "x", x, torch.float32, (None, 64))
    dev = x.device
    x_d0 = x.shape[0]
    t = torch.empty((64, x_d0), dtype=torch.float32, device=dev)
    cfg = _fit_rows(CONFIGS["stored_transposed_k0"], x_d0)
    grid = (_cdiv(x_d0, cfg["ROWS"]),)
    if grid[0] > 0:
        _launch(stored_transposed_k0, grid, (x, t, x_d0, x_d0), BLOCK=cfg["BLOCK"], ROWS=cfg["ROWS"], num_warps=cfg["num_warps"])
    return t
