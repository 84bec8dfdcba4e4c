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
    "two_pass_k0": {"BLOCK": 16384, "num_warps": 8},
    "row_min_k0": {"BLOCK": 128, "ROWS": 32, "num_warps": 4},
    "norm_rope_k0": {"BLOCK": 128, "ROWS": 32, "num_warps": 4},
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
def two_pass_k0(x, p, split_max, split_sum, tickets, groups, x_d0, p_d0, split_max_d0, split_sum_d0, groups_d0, BLOCK: tl.constexpr):
    # row, resident: a program per split of a row, numbered by a ticket, its split kept in one block across the sync with the row's other splits
    t0 = split_max_d0 * 4
    ticket = tl.atomic_add(tickets, 1)
    if ticket == t0 - 1:
        tl.store(tickets, 0)
    t = ticket.to(tl.int64)
    split = t % 4
    t1 = t // 4
    t2 = split * 16384
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
    tl.store(split_max + (t1 * 4) + split, t6)
    tl.store(split_sum + (t1 * 4) + split, t22)
    tl.debug_barrier()
    sync = groups + (t1 * 2)
    tl.atomic_add(sync, 1, sem="release")
    while tl.atomic_add(sync, 0, sem="acquire") < 4:
        pass
    left = tl.atomic_add(sync + 1, 1)
    if left == 3:
        tl.store(sync, 0)
        tl.store(sync + 1, 0)
    tl.debug_barrier()
    acc_2 = tl.full((4,), (-float("inf")), tl.float32)
    i_2 = tl.arange(0, 4)
    t23 = tl.load(split_max + (t1 * 4) + i_2, cache_modifier=".cg")
    t24 = _max_nan(acc_2, t23)
    t25 = tl.reduce(t24, 0, _max_nan)
    t26 = tl.abs(t25)
    t27 = t26 == float("inf")
    t28 = tl.where(t27, tl.full([], 0.0, tl.float32), t25)
    acc_3 = tl.full((4,), 0.0, tl.float32)
    i_3 = tl.arange(0, 4)
    t29 = tl.load(split_max + (t1 * 4) + i_3, cache_modifier=".cg")
    t30 = tl.abs(t29)
    t31 = t30 == float("inf")
    t32 = tl.where(t31, tl.full([], 0.0, tl.float32), t29)
    t33 = t32 - t28
    t34 = tl.exp(t33)
    t35 = t29 == (-float("inf"))
    t36 = tl.where(t35, tl.full([], 0.0, tl.float32), t34)
    t37 = tl.load(split_sum + (t1 * 4) + i_3, cache_modifier=".cg")
    t38 = t37 * t36
    t39 = acc_3 + t38
    t40 = tl.sum(t39, axis=0)
    t41 = tl.abs(t25)
    t42 = t41 == float("inf")
    t43 = tl.where(t42, tl.full([], 0.0, tl.float32), t25)
    t44 = t43 - t25
    t45 = tl.exp(t44)
    t46 = t40 * t45
    t47 = 1.0 / t46
    i_4 = tl.arange(0, BLOCK)
    t48 = x_1 - t25
    t49 = tl.exp(t48)
    t50 = t49 * t47
    t51 = t2 + i_4
    tl.store(p + (t1 * 65536) + t51, t50)


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
    t2 = t1 % o_d1
    t3 = r % 4
    x_1 = tl.load(x + (((t2 * 4) + t3) * 128) + cols, mask=rmask)
    w_1 = tl.load(w + cols)
    cos_1 = tl.load(cos + (t2 * 128) + cols, mask=rmask)
    t4 = cols + 64
    t5 = t4 % 128
    rolled = tl.load(w + t5)
    t6 = cols + 64
    t7 = t6 % 128
    rolled_1 = tl.load(x + (((t2 * 4) + t3) * 128) + t7, mask=rmask)
    sign_1 = tl.load(sign + cols)
    sin_1 = tl.load(sin + (t2 * 128) + cols, mask=rmask)
    acc = tl.full((ROWS, BLOCK), 0.0, tl.float32)
    t9 = x_1.to(tl.float32)
    t10 = t9 * t9
    t11 = acc + t10
    acc_1 = tl.sum(t11, axis=1, keep_dims=True)
    t12 = acc_1 * 0.0078125
    t13 = t12 + 9.999999974752427e-07
    t14 = tl.rsqrt(t13)
    t15 = t9 * t14
    t16 = t15.to(tl.bfloat16)
    t17 = w_1.to(tl.float32)
    t18 = t16.to(tl.float32)
    t19 = t17 * t18
    t20 = cos_1.to(tl.float32)
    t21 = t19 * t20
    t22 = rolled_1.to(tl.float32)
    t23 = t22 * t14
    t24 = t23.to(tl.bfloat16)
    t25 = rolled.to(tl.float32)
    t26 = t24.to(tl.float32)
    t27 = t25 * t26
    t28 = sign_1.to(tl.float32)
    t29 = t27 * t28
    t30 = sin_1.to(tl.float32)
    t31 = t29 * t30
    t32 = t21 + t31
    t33 = t32.to(tl.bfloat16)
    tl.store(o + (((t2 * 4) + t3) * 128) + cols, t33, mask=rmask)


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
# Launch hooks (a profiler's) are called as kernel[grid] calls them. The
# full path runs when TENSORFORGE_TRITON_LAUNCH=jit and on Triton versions
# other than the one whose launcher this was checked against (3.6).
try:
    from triton import knobs as _knobs

    _fast_launch = (tuple(int(p) for p in triton.__version__.split(".")[:2]) == (3, 6)
                    and os.environ.get("TENSORFORGE_TRITON_LAUNCH", "") != "jit")
except (ImportError, ValueError):
    _knobs, _fast_launch = None, False
_compiled = {}


def _launch(kern, grid, args, **meta):
    global _fast_launch
    if not _fast_launch:
        kern[grid](*args, **meta)
        return
    dev = torch.cuda.current_device()
    key = [kern, dev, *meta.values()]
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
        # the launch hooks (a profiler's) see what kernel[grid] shows them
        enter, leave = _knobs.runtime.launch_enter_hook, _knobs.runtime.launch_exit_hook
        md = None if enter is None else ck.launch_metadata(g, stream, *args, *consts)
        try:
            ck.run(g[0], g[1], g[2], stream, ck.function, ck.packed_metadata, md, enter, leave, *args, *consts)
            return
        except TypeError:
            _fast_launch = False  # a launcher of another calling convention: launch as Triton does
            kern[grid](*args, **meta)
            return
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


# Counters (tickets, group syncs) at zero, kept per (device, stream,
# function, buffer): every kernel that uses them leaves them at zero, so
# they are zeroed once, when allocated, and a launch that needs more
# replaces them with a larger zeroed tensor. The tensors replaced are kept
# alive, since a CUDA graph captured with them may still use them.
_COUNTERS = {}
_COUNTERS_OLD = []


def _counters(dev, name, n):
    """At least n int32 counters at zero on dev, for buffer name."""
    cur = torch.cuda.current_device()
    key = (dev, torch._C._cuda_getCurrentRawStream(cur), name)
    t = _COUNTERS.get(key)
    if t is not None and t.numel() >= n:
        return t
    if torch.cuda.is_current_stream_capturing():
        # zeroed by the graph at every replay; not kept, since it holds
        # zeros only once the graph runs
        return torch.zeros((max(n, 1),), dtype=torch.int32, device=dev)
    if t is not None:
        _COUNTERS_OLD.append(t)
    size = max(n, 64 if t is None else 2 * t.numel())
    t = _COUNTERS[key] = torch.zeros((size,), dtype=torch.int32, device=dev)
    return t


def short_rows(x, w):
    """short_rows(x: f32[?, 64], w: f32[64]) -> f32[?, 64]"""
    x = _tensor("short_rows", "x", x, torch.float32, (None, 64))
    w = _tensor("short_rows", "w", w, torch.float32, (64,))
    dev = x.device
    x_d0 = x.shape[0]
    y = torch.empty((x_d0, 64), dtype=torch.float32, device=dev)
    cfg = _fit_rows(CONFIGS["short_rows_k0"], x_d0)
    grid = (triton.cdiv(x_d0, cfg["ROWS"]),)
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
    grid = (triton.cdiv(x_d0, cfg["ROWS"]),)
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
    split_max = torch.empty((x_d0, 4), dtype=torch.float32, device=dev)
    split_sum = torch.empty((x_d0, 4), dtype=torch.float32, device=dev)
    tickets = _counters(dev, "two_pass.tickets", 1)
    groups = _counters(dev, "two_pass.groups", (x_d0 * 2))
    p = torch.empty((x_d0, 65536), dtype=torch.float32, device=dev)
    cfg = CONFIGS["two_pass_k0"]
    grid = ((x_d0 * 4),)
    if grid[0] > 0:
        _launch(two_pass_k0, grid, (x, p, split_max, split_sum, tickets, groups, x_d0, x_d0, x_d0, x_d0, x_d0), BLOCK=cfg["BLOCK"], num_warps=cfg["num_warps"])
    return p


def row_min(x):
    """row_min(x: i32[?, 100]) -> i32[?]"""
    x = _tensor("row_min", "x", x, torch.int32, (None, 100))
    dev = x.device
    x_d0 = x.shape[0]
    m = torch.empty((x_d0,), dtype=torch.int32, device=dev)
    cfg = _fit_rows(CONFIGS["row_min_k0"], x_d0)
    grid = (triton.cdiv(x_d0, cfg["ROWS"]),)
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
    grid = (triton.cdiv((x_d1 * 4), cfg["ROWS"]),)
    if grid[0] > 0:
        _launch(norm_rope_k0, grid, (x, w, sign, cos, sin, o, x_d1, cos_d1, sin_d1, x_d1), BLOCK=cfg["BLOCK"], ROWS=cfg["ROWS"], num_warps=cfg["num_warps"])
    return o
