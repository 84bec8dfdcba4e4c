# Triton kernels and their launchers, compiled by tfc --emit=triton from softmax_256000.tir for h200.
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
    "softmax_k0": {"BLOCK": 4096, "num_warps": 4},
    "softmax_k1": {"BLOCK": 32, "ROWS": 64, "num_warps": 4},
    "softmax_k2": {"BLOCK": 8192, "ROWS": 1, "num_warps": 8},
    "softmax_k3": {"BLOCK": 8192, "num_warps": 4},
}


@triton.jit
def _max_nan(a, b):
    # the larger, NaN if either is NaN (tl.max and tl.maximum drop NaN by default)
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def softmax_k0(s, y, split_max, split_sum, s_d0, y_d0, split_max_d0, split_sum_d0, BLOCK: tl.constexpr):
    # row, online: one program per row, loops over BLOCK-element chunks
    pid = tl.program_id(0)
    r = pid.to(tl.int64)
    split = r % 32
    t1 = r // 32
    t2 = split * 8000
    acc = tl.full((BLOCK,), (-float("inf")), tl.float32)
    i = tl.arange(0, BLOCK)
    t3 = t2 + i
    s_1 = tl.load(s + (t1 * 256000) + t3)
    t4 = s_1.to(tl.float32)
    t5 = _max_nan(acc, t4)
    t6 = tl.reduce(t5, 0, _max_nan)
    t7 = _max_nan(tl.full([], (-float("inf")), tl.float32), t6)
    t8 = tl.abs(t7)
    t9 = t8 == float("inf")
    t10 = tl.where(t9, tl.full([], 0.0, tl.float32), t7)
    acc_1 = tl.full((BLOCK,), 0.0, tl.float32)
    t11 = t4 - t10
    t12 = tl.exp(t11)
    t13 = acc_1 + t12
    t14 = tl.sum(t13, axis=0)
    t15 = tl.full([], (-float("inf")), tl.float32) == (-float("inf"))
    t16 = tl.abs(tl.full([], (-float("inf")), tl.float32))
    t17 = t16 == float("inf")
    t18 = tl.where(t17, tl.full([], 0.0, tl.float32), tl.full([], (-float("inf")), tl.float32))
    t19 = t18 - t10
    t20 = tl.exp(t19)
    t21 = tl.where(t15, tl.full([], 0.0, tl.float32), t20)
    t22 = 0.0 * t21
    t23 = t22 + t14
    t24 = t2 + 4096
    acc_2 = tl.full((BLOCK,), (-float("inf")), tl.float32)
    i_2 = tl.arange(0, BLOCK)
    cmask = i_2 < 3904
    t25 = t24 + i_2
    s_2 = tl.load(s + (t1 * 256000) + t25, mask=cmask)
    t26 = s_2.to(tl.float32)
    t27 = _max_nan(acc_2, t26)
    t28 = tl.reduce(tl.where(cmask, t27, acc_2), 0, _max_nan)
    t29 = _max_nan(t7, t28)
    t30 = tl.abs(t29)
    t31 = t30 == float("inf")
    t32 = tl.where(t31, tl.full([], 0.0, tl.float32), t29)
    acc_3 = tl.full((BLOCK,), 0.0, tl.float32)
    i_3 = tl.arange(0, BLOCK)
    cmask_1 = i_3 < 3904
    t33 = t26 - t32
    t34 = tl.exp(t33)
    t35 = acc_3 + t34
    t36 = tl.sum(tl.where(cmask_1, t35, acc_3), axis=0)
    t37 = t7 == (-float("inf"))
    t38 = tl.abs(t7)
    t39 = t38 == float("inf")
    t40 = tl.where(t39, tl.full([], 0.0, tl.float32), t7)
    t41 = t40 - t32
    t42 = tl.exp(t41)
    t43 = tl.where(t37, tl.full([], 0.0, tl.float32), t42)
    t44 = t23 * t43
    t45 = t44 + t36
    tl.store(split_max + (t1 * 32) + split, t29)
    tl.store(split_sum + (t1 * 32) + split, t45)


@triton.jit
def softmax_k1(s, split_max, split_sum, y, row_max, row_sum, s_d0, split_max_d0, split_sum_d0, y_d0, row_max_d0, row_sum_d0, BLOCK: tl.constexpr, ROWS: tl.constexpr):
    # row, one-pass: rows of 32 in one block, ROWS rows per program
    pid = tl.program_id(0)
    r = (pid * ROWS).to(tl.int64) + tl.arange(0, ROWS)[:, None]
    rmask = r < split_max_d0
    cols = tl.arange(0, BLOCK)[None, :]
    t0 = tl.load(split_max + (r * 32) + cols, mask=rmask)
    t1 = tl.load(split_sum + (r * 32) + cols, mask=rmask)
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
def softmax_k2(s, row_max, row_sum, y, s_d0, row_max_d0, row_sum_d0, y_d0, BLOCK: tl.constexpr, ROWS: tl.constexpr):
    # row, two-pass: rows of 8000 in one block, ROWS rows per program
    t0 = row_max_d0 * 32
    pid = tl.program_id(0)
    r = (pid * ROWS).to(tl.int64) + tl.arange(0, ROWS)[:, None]
    rmask = r < t0
    cols = tl.arange(0, BLOCK)[None, :]
    cmask = cols < 8000
    bmask = rmask & cmask
    t1 = r // 32
    split = r % 32
    t2 = split * 8000
    t3 = t2 + cols
    s_1 = tl.load(s + (t1 * 256000) + t3, mask=bmask)
    t4 = tl.load(row_max + t1, mask=rmask)
    t5 = tl.load(row_sum + t1, mask=rmask)
    t6 = 1.0 / t5
    t7 = s_1.to(tl.float32)
    t8 = t7 - t4
    t9 = tl.exp(t8)
    t10 = t9 * t6
    t11 = t10.to(tl.bfloat16)
    tl.store(y + (t1 * 256000) + t3, t11, mask=bmask)


@triton.jit
def softmax_k3(s, y, split_max, split_sum, tickets, groups, s_d0, y_d0, split_max_d0, split_sum_d0, groups_d0, BLOCK: tl.constexpr):
    # row, resident: a program per split of a row, numbered by a ticket, its split kept in one block across the sync with the row's other splits
    t0 = split_max_d0 * 32
    ticket = tl.atomic_add(tickets, 1)
    if ticket == t0 - 1:
        tl.store(tickets, 0)
    t = ticket.to(tl.int64)
    split = t % 32
    t1 = t // 32
    t2 = split * 8000
    i = tl.arange(0, BLOCK)
    cmask = i < 8000
    t3 = t2 + i
    s_1 = tl.load(s + (t1 * 256000) + t3, mask=cmask)
    acc = tl.full((BLOCK,), (-float("inf")), tl.float32)
    i_1 = tl.arange(0, BLOCK)
    cmask_1 = i_1 < 8000
    t4 = s_1.to(tl.float32)
    t5 = _max_nan(acc, t4)
    t6 = tl.reduce(tl.where(cmask_1, t5, acc), 0, _max_nan)
    t7 = _max_nan(tl.full([], (-float("inf")), tl.float32), t6)
    t8 = tl.abs(t7)
    t9 = t8 == float("inf")
    t10 = tl.where(t9, tl.full([], 0.0, tl.float32), t7)
    acc_1 = tl.full((BLOCK,), 0.0, tl.float32)
    i_2 = tl.arange(0, BLOCK)
    cmask_2 = i_2 < 8000
    t11 = s_1.to(tl.float32)
    t12 = t11 - t10
    t13 = tl.exp(t12)
    t14 = acc_1 + t13
    t15 = tl.sum(tl.where(cmask_2, t14, acc_1), axis=0)
    t16 = tl.full([], (-float("inf")), tl.float32) == (-float("inf"))
    t17 = tl.abs(tl.full([], (-float("inf")), tl.float32))
    t18 = t17 == float("inf")
    t19 = tl.where(t18, tl.full([], 0.0, tl.float32), tl.full([], (-float("inf")), tl.float32))
    t20 = t19 - t10
    t21 = tl.exp(t20)
    t22 = tl.where(t16, tl.full([], 0.0, tl.float32), t21)
    t23 = 0.0 * t22
    t24 = t23 + t15
    tl.store(split_max + (t1 * 32) + split, t7)
    tl.store(split_sum + (t1 * 32) + split, t24)
    tl.debug_barrier()
    sync = groups + (t1 * 2)
    tl.atomic_add(sync, 1, sem="release")
    while tl.atomic_add(sync, 0, sem="acquire") < 32:
        pass
    tl.debug_barrier()
    acc_2 = tl.full((32,), (-float("inf")), tl.float32)
    i_3 = tl.arange(0, 32)
    t25 = tl.load(split_max + (t1 * 32) + i_3, cache_modifier=".cg")
    t26 = _max_nan(acc_2, t25)
    t27 = tl.reduce(t26, 0, _max_nan)
    t28 = tl.abs(t27)
    t29 = t28 == float("inf")
    t30 = tl.where(t29, tl.full([], 0.0, tl.float32), t27)
    acc_3 = tl.full((32,), 0.0, tl.float32)
    i_4 = tl.arange(0, 32)
    t31 = tl.load(split_max + (t1 * 32) + i_4, cache_modifier=".cg")
    t32 = tl.abs(t31)
    t33 = t32 == float("inf")
    t34 = tl.where(t33, tl.full([], 0.0, tl.float32), t31)
    t35 = t34 - t30
    t36 = tl.exp(t35)
    t37 = t31 == (-float("inf"))
    t38 = tl.where(t37, tl.full([], 0.0, tl.float32), t36)
    t39 = tl.load(split_sum + (t1 * 32) + i_4, cache_modifier=".cg")
    t40 = t39 * t38
    t41 = acc_3 + t40
    t42 = tl.sum(t41, axis=0)
    t43 = tl.abs(t27)
    t44 = t43 == float("inf")
    t45 = tl.where(t44, tl.full([], 0.0, tl.float32), t27)
    t46 = t45 - t27
    t47 = tl.exp(t46)
    t48 = t42 * t47
    t49 = 1.0 / t48
    i_5 = tl.arange(0, BLOCK)
    cmask_3 = i_5 < 8000
    t50 = s_1.to(tl.float32)
    t51 = t50 - t27
    t52 = tl.exp(t51)
    t53 = t52 * t49
    t54 = t53.to(tl.bfloat16)
    t55 = t2 + i_5
    tl.store(y + (t1 * 256000) + t55, t54, mask=cmask_3)
    left = tl.atomic_add(sync + 1, 1)
    if left == 31:
        tl.store(sync, 0)
        tl.store(sync + 1, 0)


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


def softmax(s):
    """softmax(s: bf16[?, 256000]) -> bf16[?, 256000]"""
    s = _tensor("softmax", "s", s, torch.bfloat16, (None, 256000))
    dev = s.device
    s_d0 = s.shape[0]
    y = torch.empty((s_d0, 256000), dtype=torch.bfloat16, device=dev)
    if s_d0 <= 263:
        split_max = torch.empty((s_d0, 32), dtype=torch.float32, device=dev)
        split_sum = torch.empty((s_d0, 32), dtype=torch.float32, device=dev)
        cfg = CONFIGS["softmax_k0"]
        grid = ((s_d0 * 32),)
        if grid[0] > 0:
            _launch(softmax_k0, grid, (s, y, split_max, split_sum, s_d0, s_d0, s_d0, s_d0), BLOCK=cfg["BLOCK"], num_warps=cfg["num_warps"])
    if s_d0 <= 263:
        row_max = torch.empty((s_d0, 1), dtype=torch.float32, device=dev)
        row_sum = torch.empty((s_d0, 1), dtype=torch.float32, device=dev)
        cfg = _fit_rows(CONFIGS["softmax_k1"], s_d0)
        grid = (_cdiv(s_d0, cfg["ROWS"]),)
        if grid[0] > 0:
            _launch(softmax_k1, grid, (s, split_max, split_sum, y, row_max, row_sum, s_d0, s_d0, s_d0, s_d0, s_d0, s_d0), BLOCK=cfg["BLOCK"], ROWS=cfg["ROWS"], num_warps=cfg["num_warps"])
    if s_d0 <= 263:
        cfg = CONFIGS["softmax_k2"]
        grid = (_cdiv((s_d0 * 32), cfg["ROWS"]),)
        if grid[0] > 0:
            _launch(softmax_k2, grid, (s, row_max, row_sum, y, s_d0, s_d0, s_d0, s_d0), BLOCK=cfg["BLOCK"], ROWS=cfg["ROWS"], num_warps=cfg["num_warps"])
    if s_d0 >= 264:
        split_max_1 = torch.empty((s_d0, 32), dtype=torch.float32, device=dev)
        split_sum_1 = torch.empty((s_d0, 32), dtype=torch.float32, device=dev)
        tickets = _counters(dev, "softmax.tickets", 1)
        groups = _counters(dev, "softmax.groups", (s_d0 * 2))
        cfg = CONFIGS["softmax_k3"]
        grid = ((s_d0 * 32),)
        if grid[0] > 0:
            _launch(softmax_k3, grid, (s, y, split_max_1, split_sum_1, tickets, groups, s_d0, s_d0, s_d0, s_d0, s_d0), BLOCK=cfg["BLOCK"], num_warps=cfg["num_warps"])
    return y
