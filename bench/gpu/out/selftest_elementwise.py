# Triton kernels and their launchers, compiled by tfc --emit=triton from elementwise.tir for h200.
#
# For every function of the program, NAME(*inputs) takes CUDA tensors in
# argument order and returns its result (a tuple when there are several),
# allocating outputs and intermediates with torch.empty.
import os

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

# The launch configuration of every kernel: BLOCK (elements of a block),
# ROWS (rows per program of a row kernel), num_warps. The BLOCK of a row
# kernel that keeps its rows in one block is next_power_of_2(row length)
# and must stay at least the row length.
CONFIGS = {
    "dyn_bcast_k0": {"BLOCK": 1024, "num_warps": 4},
    "rank3_k0": {"BLOCK": 1024, "num_warps": 4},
    "ints_k0": {"BLOCK": 1024, "num_warps": 4},
    "f64_k0": {"BLOCK": 1024, "num_warps": 4},
    "unary_k0": {"BLOCK": 1024, "num_warps": 4},
    "rope_odd_k0": {"BLOCK": 32, "ROWS": 32, "num_warps": 4},
    "concat3_k0": {"BLOCK": 16, "ROWS": 64, "num_warps": 4},
    "rope_roll_k0": {"BLOCK": 32, "ROWS": 32, "num_warps": 4},
    "roll5_k0": {"BLOCK": 64, "ROWS": 32, "num_warps": 4},
}

# Flat kernels index their elements in 64 bits from this many on.
WIDE_FROM = 2**31


@triton.jit
def _sigmoid_f64(x):
    return 1.0 / (1.0 + libdevice.exp(-x))


@triton.jit
def _silu_f64(x):
    return tl.where(x == -float("inf"), 0.0, x * _sigmoid_f64(x))


@triton.jit
def _gelu(x):
    # x * Phi(x) = x / 2 * erfc(-x / sqrt(2))
    return tl.where(x == -float("inf"), 0.0, 0.5 * x * libdevice.erfc(-0.7071067811865476 * x))


@triton.jit
def _gelu_tanh(x):
    # x * sigmoid(2u), u = sqrt(2 / pi) * (x + 0.044715 x^3): the tanh form
    u = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    return tl.where(x == -float("inf"), 0.0, x * tl.sigmoid(2.0 * u))


@triton.jit
def dyn_bcast_k0(x, b, c, y, x_d0, x_d1, b_d0, c_d0, y_d0, y_d1, total, BLOCK: tl.constexpr, WIDE: tl.constexpr):
    # elementwise: a 1-D grid over every element, BLOCK elements per program
    pid = tl.program_id(0)
    if WIDE:
        pid = pid.to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    emask = offs < total
    r = offs // y_d1
    i = offs % y_d1
    x_1 = tl.load(x + offs, mask=emask)
    b_1 = tl.load(b + i, mask=emask)
    c_1 = tl.load(c + r, mask=emask)
    t1 = x_1 + b_1
    t2 = t1 * c_1
    tl.store(y + offs, t2, mask=emask)


@triton.jit
def rank3_k0(x, s, y, total, BLOCK: tl.constexpr, WIDE: tl.constexpr):
    # elementwise: a 1-D grid over every element, BLOCK elements per program
    pid = tl.program_id(0)
    if WIDE:
        pid = pid.to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    emask = offs < total
    r = offs // 32
    t1 = r % 6
    x_1 = tl.load(x + offs, mask=emask)
    s_1 = tl.load(s + t1, mask=emask)
    t2 = x_1 * s_1
    tl.store(y + offs, t2, mask=emask)


@triton.jit
def ints_k0(a, b, r, q, c, a_d0, b_d0, r_d0, q_d0, c_d0, total, BLOCK: tl.constexpr, WIDE: tl.constexpr):
    # elementwise: a 1-D grid over every element, BLOCK elements per program
    pid = tl.program_id(0)
    if WIDE:
        pid = pid.to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    emask = offs < total
    a_1 = tl.load(a + offs, mask=emask)
    b_1 = tl.load(b + offs, mask=emask)
    t1 = a_1 + b_1
    t2 = tl.maximum(t1, b_1)
    t3 = -t2
    t4 = tl.maximum(t3, tl.full([], 0, tl.int32))
    tl.store(r + offs, t4, mask=emask)
    t5 = t1.to(tl.int8)
    tl.store(q + offs, t5, mask=emask)
    t6 = a_1 < b_1
    tl.store(c + offs, t6, mask=emask)


@triton.jit
def f64_k0(x, y, x_d0, y_d0, total, BLOCK: tl.constexpr, WIDE: tl.constexpr):
    # elementwise: a 1-D grid over every element, BLOCK elements per program
    pid = tl.program_id(0)
    if WIDE:
        pid = pid.to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    emask = offs < total
    x_1 = tl.load(x + offs, mask=emask)
    t1 = libdevice.exp(x_1)
    t2 = _sigmoid_f64(t1)
    t3 = _silu_f64(t2)
    tl.store(y + offs, t3, mask=emask)


@triton.jit
def unary_k0(x, a, exp, log, l1p, em1, sq, rs, th, sg, ge, gt, sn, rd, fl, pw, x_d0, a_d0, exp_d0, log_d0, l1p_d0, em1_d0, sq_d0, rs_d0, th_d0, sg_d0, ge_d0, gt_d0, sn_d0, rd_d0, fl_d0, pw_d0, total, BLOCK: tl.constexpr, WIDE: tl.constexpr):
    # elementwise: a 1-D grid over every element, BLOCK elements per program
    pid = tl.program_id(0)
    if WIDE:
        pid = pid.to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    emask = offs < total
    x_1 = tl.load(x + offs, mask=emask)
    t1 = tl.abs(x_1)
    tl.store(a + offs, t1, mask=emask)
    t2 = tl.exp(x_1)
    tl.store(exp + offs, t2, mask=emask)
    t3 = tl.log(t1)
    tl.store(log + offs, t3, mask=emask)
    t4 = libdevice.log1p(t1)
    tl.store(l1p + offs, t4, mask=emask)
    t5 = libdevice.expm1(x_1)
    tl.store(em1 + offs, t5, mask=emask)
    t6 = tl.sqrt_rn(t1)
    tl.store(sq + offs, t6, mask=emask)
    t7 = tl.rsqrt(t1)
    tl.store(rs + offs, t7, mask=emask)
    t8 = libdevice.tanh(x_1)
    tl.store(th + offs, t8, mask=emask)
    t9 = tl.sigmoid(x_1)
    tl.store(sg + offs, t9, mask=emask)
    t10 = _gelu(x_1)
    tl.store(ge + offs, t10, mask=emask)
    t11 = _gelu_tanh(x_1)
    tl.store(gt + offs, t11, mask=emask)
    t12 = libdevice.sin(x_1)
    tl.store(sn + offs, t12, mask=emask)
    t13 = libdevice.rint(x_1)
    tl.store(rd + offs, t13, mask=emask)
    t14 = tl.floor(x_1)
    tl.store(fl + offs, t14, mask=emask)
    t15 = libdevice.pow(t1, x_1)
    tl.store(pw + offs, t15, mask=emask)


@triton.jit
def rope_odd_k0(q, cos, sin, y, BLOCK: tl.constexpr, ROWS: tl.constexpr):
    # elementwise: rows of 48 cut into stretches [0, 24), [24, 48), ROWS rows per program
    pid = tl.program_id(0)
    r = (pid * ROWS).to(tl.int64) + tl.arange(0, ROWS)[:, None]
    rmask = r < 24
    cols = tl.arange(0, 32)[None, :]
    cmask = cols < 24
    bmask = rmask & cmask
    cols_1 = 24 + tl.arange(0, 32)[None, :]
    cmask_1 = cols_1 < 48
    bmask_1 = rmask & cmask_1
    t1 = r // 4
    q_1 = tl.load(q + (r * 48) + cols, mask=bmask)
    cos_1 = tl.load(cos + (t1 * 48) + cols, mask=bmask)
    t2 = q_1.to(tl.float32)
    t3 = cos_1.to(tl.float32)
    t4 = t2 * t3
    q_2 = tl.load(q + (r * 48) + cols_1, mask=bmask)
    t5 = q_2.to(tl.float32)
    t6 = -t5
    sin_1 = tl.load(sin + (t1 * 48) + cols, mask=bmask)
    t7 = sin_1.to(tl.float32)
    t8 = t6 * t7
    t9 = t4 + t8
    t10 = t9.to(tl.bfloat16)
    tl.store(y + (r * 48) + cols, t10, mask=bmask)
    q_3 = tl.load(q + (r * 48) + cols_1, mask=bmask_1)
    cos_2 = tl.load(cos + (t1 * 48) + cols_1, mask=bmask_1)
    t11 = q_3.to(tl.float32)
    t12 = cos_2.to(tl.float32)
    t13 = t11 * t12
    q_4 = tl.load(q + (r * 48) + cols, mask=bmask_1)
    t14 = q_4.to(tl.float32)
    sin_2 = tl.load(sin + (t1 * 48) + cols_1, mask=bmask_1)
    t15 = sin_2.to(tl.float32)
    t16 = t14 * t15
    t17 = t13 + t16
    t18 = t17.to(tl.bfloat16)
    tl.store(y + (r * 48) + cols_1, t18, mask=bmask_1)


@triton.jit
def concat3_k0(a, b, c, y, a_d0, b_d0, c_d0, y_d0, BLOCK: tl.constexpr, ROWS: tl.constexpr):
    # elementwise: rows of 32 cut into stretches [0, 5), [5, 21), [21, 32), ROWS rows per program
    pid = tl.program_id(0)
    r = (pid * ROWS).to(tl.int64) + tl.arange(0, ROWS)[:, None]
    rmask = r < y_d0
    cols = tl.arange(0, 8)[None, :]
    cmask = cols < 5
    bmask = rmask & cmask
    cols_1 = 5 + tl.arange(0, 16)[None, :]
    cols_2 = 21 + tl.arange(0, 16)[None, :]
    cmask_1 = cols_2 < 32
    bmask_1 = rmask & cmask_1
    a_1 = tl.load(a + (r * 5) + cols, mask=bmask)
    t0 = tl.exp(a_1)
    tl.store(y + (r * 32) + cols, t0, mask=bmask)
    t1 = cols_1 - 5
    b_1 = tl.load(b + (r * 16) + t1, mask=rmask)
    t2 = -b_1
    tl.store(y + (r * 32) + cols_1, t2, mask=rmask)
    t3 = cols_2 - 21
    c_1 = tl.load(c + (r * 11) + t3, mask=bmask_1)
    tl.store(y + (r * 32) + cols_2, c_1, mask=bmask_1)


@triton.jit
def rope_roll_k0(q, cos, sign, sin, y, q_d0, cos_d0, sin_d0, y_d0, BLOCK: tl.constexpr, ROWS: tl.constexpr):
    # elementwise: rows of 64 cut into stretches [0, 32), [32, 64), ROWS rows per program
    t0 = y_d0 * 4
    pid = tl.program_id(0)
    r = (pid * ROWS).to(tl.int64) + tl.arange(0, ROWS)[:, None]
    rmask = r < t0
    cols = tl.arange(0, 32)[None, :]
    cols_1 = 32 + tl.arange(0, 32)[None, :]
    t2 = r // 4
    q_1 = tl.load(q + (r * 64) + cols, mask=rmask)
    cos_1 = tl.load(cos + (t2 * 64) + cols, mask=rmask)
    t3 = q_1.to(tl.float32)
    t4 = cos_1.to(tl.float32)
    t5 = t3 * t4
    rolled = tl.load(q + (r * 64) + cols_1, mask=rmask)
    sign_1 = tl.load(sign + cols)
    t6 = rolled.to(tl.float32)
    t7 = sign_1.to(tl.float32)
    t8 = t6 * t7
    sin_1 = tl.load(sin + (t2 * 64) + cols, mask=rmask)
    t9 = sin_1.to(tl.float32)
    t10 = t8 * t9
    t11 = t5 + t10
    t12 = t11.to(tl.bfloat16)
    tl.store(y + (r * 64) + cols, t12, mask=rmask)
    cos_2 = tl.load(cos + (t2 * 64) + cols_1, mask=rmask)
    t13 = rolled.to(tl.float32)
    t14 = cos_2.to(tl.float32)
    t15 = t13 * t14
    sign_2 = tl.load(sign + cols_1)
    t16 = q_1.to(tl.float32)
    t17 = sign_2.to(tl.float32)
    t18 = t16 * t17
    sin_2 = tl.load(sin + (t2 * 64) + cols_1, mask=rmask)
    t19 = sin_2.to(tl.float32)
    t20 = t18 * t19
    t21 = t15 + t20
    t22 = t21.to(tl.bfloat16)
    tl.store(y + (r * 64) + cols_1, t22, mask=rmask)


@triton.jit
def roll5_k0(x, y, x_d0, y_d0, BLOCK: tl.constexpr, ROWS: tl.constexpr):
    # elementwise: rows of 48 cut into stretches [0, 5), [5, 48), ROWS rows per program
    pid = tl.program_id(0)
    r = (pid * ROWS).to(tl.int64) + tl.arange(0, ROWS)[:, None]
    rmask = r < y_d0
    cols = tl.arange(0, 8)[None, :]
    cmask = cols < 5
    bmask = rmask & cmask
    cols_1 = 5 + tl.arange(0, 64)[None, :]
    cmask_1 = cols_1 < 48
    bmask_1 = rmask & cmask_1
    t0 = cols + 43
    rolled = tl.load(x + (r * 48) + t0, mask=bmask)
    x_1 = tl.load(x + (r * 48) + cols, mask=bmask)
    t1 = rolled * x_1
    tl.store(y + (r * 48) + cols, t1, mask=bmask)
    t2 = cols_1 - 5
    rolled_1 = tl.load(x + (r * 48) + t2, mask=bmask_1)
    x_2 = tl.load(x + (r * 48) + cols_1, mask=bmask_1)
    t3 = rolled_1 * x_2
    tl.store(y + (r * 48) + cols_1, t3, mask=bmask_1)


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


def dyn_bcast(x, b, c):
    """dyn_bcast(x: f32[?, ?], b: f32[?], c: f32[?, 1]) -> f32[?, ?]"""
    x = _tensor("dyn_bcast", "x", x, torch.float32, (None, None))
    b = _tensor("dyn_bcast", "b", b, torch.float32, (None,))
    c = _tensor("dyn_bcast", "c", c, torch.float32, (None, 1))
    if x.shape[1] != b.shape[0]:
        raise ValueError("dyn_bcast: x has %d in dimension 1 but b has %d in dimension 0: two '?' extents that broadcast together must be equal" % (x.shape[1], b.shape[0]))
    if x.shape[0] != c.shape[0]:
        raise ValueError("dyn_bcast: x has %d in dimension 0 but c has %d in dimension 0: two '?' extents that broadcast together must be equal" % (x.shape[0], c.shape[0]))
    dev = x.device
    x_d0 = x.shape[0]
    x_d1 = x.shape[1]
    b_d0 = b.shape[0]
    c_d0 = c.shape[0]
    y = torch.empty((x_d0, x_d1), dtype=torch.float32, device=dev)
    cfg = CONFIGS["dyn_bcast_k0"]
    total = (x_d0 * x_d1)
    grid = (_cdiv(total, cfg["BLOCK"]),)
    if grid[0] > 0:
        _launch(dyn_bcast_k0, grid, (x, b, c, y, x_d0, x_d1, b_d0, c_d0, x_d0, x_d1, total), BLOCK=cfg["BLOCK"], WIDE=total + cfg["BLOCK"] > WIDE_FROM, num_warps=cfg["num_warps"])
    return y


def rank3(x, s):
    """rank3(x: f32[4, 6, 32], s: f32[6, 1]) -> f32[4, 6, 32]"""
    x = _tensor("rank3", "x", x, torch.float32, (4, 6, 32))
    s = _tensor("rank3", "s", s, torch.float32, (6, 1))
    dev = x.device
    y = torch.empty((4, 6, 32), dtype=torch.float32, device=dev)
    cfg = CONFIGS["rank3_k0"]
    total = 768
    grid = (_cdiv(total, cfg["BLOCK"]),)
    _launch(rank3_k0, grid, (x, s, y, total), BLOCK=cfg["BLOCK"], WIDE=total + cfg["BLOCK"] > WIDE_FROM, num_warps=cfg["num_warps"])
    return y


def ints(a, b):
    """ints(a: i32[?], b: i32[?]) -> (i32[?], i8[?], i1[?])"""
    a = _tensor("ints", "a", a, torch.int32, (None,))
    b = _tensor("ints", "b", b, torch.int32, (None,))
    if a.shape[0] != b.shape[0]:
        raise ValueError("ints: a has %d in dimension 0 but b has %d in dimension 0: two '?' extents that broadcast together must be equal" % (a.shape[0], b.shape[0]))
    dev = a.device
    a_d0 = a.shape[0]
    b_d0 = b.shape[0]
    r = torch.empty((a_d0,), dtype=torch.int32, device=dev)
    q = torch.empty((a_d0,), dtype=torch.int8, device=dev)
    c = torch.empty((a_d0,), dtype=torch.bool, device=dev)
    cfg = CONFIGS["ints_k0"]
    total = a_d0
    grid = (_cdiv(total, cfg["BLOCK"]),)
    if grid[0] > 0:
        _launch(ints_k0, grid, (a, b, r, q, c, a_d0, b_d0, a_d0, a_d0, a_d0, total), BLOCK=cfg["BLOCK"], WIDE=total + cfg["BLOCK"] > WIDE_FROM, num_warps=cfg["num_warps"])
    return (r, q, c)


def f64(x):
    """f64(x: f64[?]) -> f64[?]"""
    x = _tensor("f64", "x", x, torch.float64, (None,))
    dev = x.device
    x_d0 = x.shape[0]
    y = torch.empty((x_d0,), dtype=torch.float64, device=dev)
    cfg = CONFIGS["f64_k0"]
    total = x_d0
    grid = (_cdiv(total, cfg["BLOCK"]),)
    if grid[0] > 0:
        _launch(f64_k0, grid, (x, y, x_d0, x_d0, total), BLOCK=cfg["BLOCK"], WIDE=total + cfg["BLOCK"] > WIDE_FROM, num_warps=cfg["num_warps"])
    return y


def unary(x):
    """unary(x: f32[?]) -> (f32[?], f32[?], f32[?], f32[?], f32[?], f32[?], f32[?], f32[?], f32[?], f32[?], f32[?], f32[?], f32[?], f32[?], f32[?])"""
    x = _tensor("unary", "x", x, torch.float32, (None,))
    dev = x.device
    x_d0 = x.shape[0]
    a = torch.empty((x_d0,), dtype=torch.float32, device=dev)
    exp = torch.empty((x_d0,), dtype=torch.float32, device=dev)
    log = torch.empty((x_d0,), dtype=torch.float32, device=dev)
    l1p = torch.empty((x_d0,), dtype=torch.float32, device=dev)
    em1 = torch.empty((x_d0,), dtype=torch.float32, device=dev)
    sq = torch.empty((x_d0,), dtype=torch.float32, device=dev)
    rs = torch.empty((x_d0,), dtype=torch.float32, device=dev)
    th = torch.empty((x_d0,), dtype=torch.float32, device=dev)
    sg = torch.empty((x_d0,), dtype=torch.float32, device=dev)
    ge = torch.empty((x_d0,), dtype=torch.float32, device=dev)
    gt = torch.empty((x_d0,), dtype=torch.float32, device=dev)
    sn = torch.empty((x_d0,), dtype=torch.float32, device=dev)
    rd = torch.empty((x_d0,), dtype=torch.float32, device=dev)
    fl = torch.empty((x_d0,), dtype=torch.float32, device=dev)
    pw = torch.empty((x_d0,), dtype=torch.float32, device=dev)
    cfg = CONFIGS["unary_k0"]
    total = x_d0
    grid = (_cdiv(total, cfg["BLOCK"]),)
    if grid[0] > 0:
        _launch(unary_k0, grid, (x, a, exp, log, l1p, em1, sq, rs, th, sg, ge, gt, sn, rd, fl, pw, x_d0, x_d0, x_d0, x_d0, x_d0, x_d0, x_d0, x_d0, x_d0, x_d0, x_d0, x_d0, x_d0, x_d0, x_d0, x_d0, total), BLOCK=cfg["BLOCK"], WIDE=total + cfg["BLOCK"] > WIDE_FROM, num_warps=cfg["num_warps"])
    return (exp, log, l1p, em1, sq, rs, th, sg, ge, gt, sn, rd, fl, pw, a)


def rope_odd(q, cos, sin):
    """rope_odd(q: bf16[6, 4, 48], cos: bf16[6, 1, 48], sin: bf16[6, 1, 48]) -> bf16[6, 4, 48]"""
    q = _tensor("rope_odd", "q", q, torch.bfloat16, (6, 4, 48))
    cos = _tensor("rope_odd", "cos", cos, torch.bfloat16, (6, 1, 48))
    sin = _tensor("rope_odd", "sin", sin, torch.bfloat16, (6, 1, 48))
    dev = q.device
    y = torch.empty((6, 4, 48), dtype=torch.bfloat16, device=dev)
    cfg = _fit_rows(CONFIGS["rope_odd_k0"], 24)
    grid = (_cdiv(24, cfg["ROWS"]),)
    _launch(rope_odd_k0, grid, (q, cos, sin, y), BLOCK=cfg["BLOCK"], ROWS=cfg["ROWS"], num_warps=cfg["num_warps"])
    return y


def concat3(a, b, c):
    """concat3(a: f32[?, 5], b: f32[?, 16], c: f32[?, 11]) -> f32[?, 32]"""
    a = _tensor("concat3", "a", a, torch.float32, (None, 5))
    b = _tensor("concat3", "b", b, torch.float32, (None, 16))
    c = _tensor("concat3", "c", c, torch.float32, (None, 11))
    dev = a.device
    a_d0 = a.shape[0]
    b_d0 = b.shape[0]
    c_d0 = c.shape[0]
    y = torch.empty((a_d0, 32), dtype=torch.float32, device=dev)
    cfg = _fit_rows(CONFIGS["concat3_k0"], a_d0)
    grid = (_cdiv(a_d0, cfg["ROWS"]),)
    if grid[0] > 0:
        _launch(concat3_k0, grid, (a, b, c, y, a_d0, b_d0, c_d0, a_d0), BLOCK=cfg["BLOCK"], ROWS=cfg["ROWS"], num_warps=cfg["num_warps"])
    return y


def rope_roll(q, cos, sin, sign):
    """rope_roll(q: bf16[?, 4, 64], cos: bf16[?, 1, 64], sin: bf16[?, 1, 64], sign: bf16[64]) -> bf16[?, 4, 64]"""
    q = _tensor("rope_roll", "q", q, torch.bfloat16, (None, 4, 64))
    cos = _tensor("rope_roll", "cos", cos, torch.bfloat16, (None, 1, 64))
    sin = _tensor("rope_roll", "sin", sin, torch.bfloat16, (None, 1, 64))
    sign = _tensor("rope_roll", "sign", sign, torch.bfloat16, (64,))
    if q.shape[0] != cos.shape[0]:
        raise ValueError("rope_roll: q has %d in dimension 0 but cos has %d in dimension 0: two '?' extents that broadcast together must be equal" % (q.shape[0], cos.shape[0]))
    if q.shape[0] != sin.shape[0]:
        raise ValueError("rope_roll: q has %d in dimension 0 but sin has %d in dimension 0: two '?' extents that broadcast together must be equal" % (q.shape[0], sin.shape[0]))
    dev = q.device
    q_d0 = q.shape[0]
    cos_d0 = cos.shape[0]
    sin_d0 = sin.shape[0]
    y = torch.empty((q_d0, 4, 64), dtype=torch.bfloat16, device=dev)
    cfg = _fit_rows(CONFIGS["rope_roll_k0"], (q_d0 * 4))
    grid = (_cdiv((q_d0 * 4), cfg["ROWS"]),)
    if grid[0] > 0:
        _launch(rope_roll_k0, grid, (q, cos, sign, sin, y, q_d0, cos_d0, sin_d0, q_d0), BLOCK=cfg["BLOCK"], ROWS=cfg["ROWS"], num_warps=cfg["num_warps"])
    return y


def roll5(x):
    """roll5(x: f32[?, 48]) -> f32[?, 48]"""
    x = _tensor("roll5", "x", x, torch.float32, (None, 48))
    dev = x.device
    x_d0 = x.shape[0]
    y = torch.empty((x_d0, 48), dtype=torch.float32, device=dev)
    cfg = _fit_rows(CONFIGS["roll5_k0"], x_d0)
    grid = (_cdiv(x_d0, cfg["ROWS"]),)
    if grid[0] > 0:
        _launch(roll5_k0, grid, (x, y, x_d0, x_d0), BLOCK=cfg["BLOCK"], ROWS=cfg["ROWS"], num_warps=cfg["num_warps"])
    return y
