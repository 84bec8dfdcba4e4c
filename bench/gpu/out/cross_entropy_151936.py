# Triton kernels and their launchers, compiled by tfc --emit=triton from cross_entropy_151936.tir for h200.
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
    "cross_entropy_k0": {"BLOCK": 4096, "num_warps": 4},
    "cross_entropy_k1": {"BLOCK": 16, "ROWS": 64, "num_warps": 4},
    "cross_entropy_k2": {"BLOCK": 4096, "num_warps": 4},
}


@triton.jit
def _max_nan(a, b):
    # the larger, NaN if either is NaN (tl.max and tl.maximum drop NaN by default)
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def cross_entropy_k0(logits, target, loss, split_max, split_sum, logits_d0, target_d0, loss_d0, split_max_d0, split_sum_d0, BLOCK: tl.constexpr):
    # row, online: one program per row, loops over BLOCK-element chunks
    pid = tl.program_id(0)
    r = pid.to(tl.int64)
    split = r % 16
    t1 = r // 16
    t2 = split * 9496
    acc = tl.full([], (-float("inf")), tl.float32)
    acc_1 = tl.full([], 0.0, tl.float32)
    for c in range(0, 8192, 4096):
        t3 = t2 + c
        acc_2 = tl.full((BLOCK,), (-float("inf")), tl.float32)
        i = tl.arange(0, BLOCK)
        t4 = t3 + i
        logits_1 = tl.load(logits + (t1 * 151936) + t4)
        t5 = logits_1.to(tl.float32)
        t6 = _max_nan(acc_2, t5)
        t7 = tl.reduce(t6, 0, _max_nan)
        t8 = _max_nan(acc, t7)
        t9 = tl.abs(t8)
        t10 = t9 == float("inf")
        t11 = tl.where(t10, tl.full([], 0.0, tl.float32), t8)
        acc_3 = tl.full((BLOCK,), 0.0, tl.float32)
        t12 = t5 - t11
        t13 = tl.exp(t12)
        t14 = acc_3 + t13
        t15 = tl.sum(t14, axis=0)
        t16 = acc == (-float("inf"))
        t17 = tl.abs(acc)
        t18 = t17 == float("inf")
        t19 = tl.where(t18, tl.full([], 0.0, tl.float32), acc)
        t20 = t19 - t11
        t21 = tl.exp(t20)
        t22 = tl.where(t16, tl.full([], 0.0, tl.float32), t21)
        t23 = acc_1 * t22
        t24 = t23 + t15
        acc, acc_1 = t8, t24
    t25 = t2 + 8192
    acc_4 = tl.full((BLOCK,), (-float("inf")), tl.float32)
    i_2 = tl.arange(0, BLOCK)
    cmask = i_2 < 1304
    t26 = t25 + i_2
    logits_2 = tl.load(logits + (t1 * 151936) + t26, mask=cmask)
    t27 = logits_2.to(tl.float32)
    t28 = _max_nan(acc_4, t27)
    t29 = tl.reduce(tl.where(cmask, t28, acc_4), 0, _max_nan)
    t30 = _max_nan(acc, t29)
    t31 = tl.abs(t30)
    t32 = t31 == float("inf")
    t33 = tl.where(t32, tl.full([], 0.0, tl.float32), t30)
    acc_5 = tl.full((BLOCK,), 0.0, tl.float32)
    i_3 = tl.arange(0, BLOCK)
    cmask_1 = i_3 < 1304
    t34 = t27 - t33
    t35 = tl.exp(t34)
    t36 = acc_5 + t35
    t37 = tl.sum(tl.where(cmask_1, t36, acc_5), axis=0)
    t38 = acc == (-float("inf"))
    t39 = tl.abs(acc)
    t40 = t39 == float("inf")
    t41 = tl.where(t40, tl.full([], 0.0, tl.float32), acc)
    t42 = t41 - t33
    t43 = tl.exp(t42)
    t44 = tl.where(t38, tl.full([], 0.0, tl.float32), t43)
    t45 = acc_1 * t44
    t46 = t45 + t37
    tl.store(split_max + (t1 * 16) + split, t30)
    tl.store(split_sum + (t1 * 16) + split, t46)


@triton.jit
def cross_entropy_k1(logits, target, split_max, split_sum, loss, logits_d0, target_d0, split_max_d0, split_sum_d0, loss_d0, BLOCK: tl.constexpr, ROWS: tl.constexpr):
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
    t20 = tl.abs(t3)
    t21 = t20 == float("inf")
    t22 = tl.where(t21, tl.full([], 0.0, tl.float32), t3)
    t23 = t22 - t19
    t24 = tl.exp(t23)
    t25 = t16 * t24
    t26 = tl.log(t25)
    t27 = t19 + t26
    target_1 = tl.load(target + r, mask=rmask)
    gathered = tl.maximum(tl.minimum(target_1.to(tl.int64), 151936 - 1), 0)
    logits_1 = tl.load(logits + (r * 151936) + gathered, mask=rmask)
    t28 = logits_1.to(tl.float32)
    t29 = t27 - t28
    tl.store(loss + r, t29, mask=rmask)


@triton.jit
def cross_entropy_k2(logits, target, loss, logits_d0, target_d0, loss_d0, BLOCK: tl.constexpr):
    # row, online: one program per row, loops over BLOCK-element chunks
    pid = tl.program_id(0)
    r = pid.to(tl.int64)
    acc = tl.full([], (-float("inf")), tl.float32)
    acc_1 = tl.full([], 0.0, tl.float32)
    for c in range(0, 151552, 4096):
        acc_2 = tl.full((BLOCK,), (-float("inf")), tl.float32)
        i = tl.arange(0, BLOCK)
        t0 = c + i
        logits_1 = tl.load(logits + (r * 151936) + t0)
        t1 = logits_1.to(tl.float32)
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
    cmask = i_2 < 384
    t21 = 151552 + i_2
    logits_2 = tl.load(logits + (r * 151936) + t21, mask=cmask)
    t22 = logits_2.to(tl.float32)
    t23 = _max_nan(acc_4, t22)
    t24 = tl.reduce(tl.where(cmask, t23, acc_4), 0, _max_nan)
    t25 = _max_nan(acc, t24)
    t26 = tl.abs(t25)
    t27 = t26 == float("inf")
    t28 = tl.where(t27, tl.full([], 0.0, tl.float32), t25)
    acc_5 = tl.full((BLOCK,), 0.0, tl.float32)
    i_3 = tl.arange(0, BLOCK)
    cmask_1 = i_3 < 384
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
    target_1 = tl.load(target + r)
    gathered = tl.maximum(tl.minimum(target_1.to(tl.int64), 151936 - 1), 0)
    logits_3 = tl.load(logits + (r * 151936) + gathered)
    t53 = logits_3.to(tl.float32)
    t54 = t52 - t53
    tl.store(loss + r, t54)


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


def cross_entropy(logits, target):
    """cross_entropy(logits: bf16[?, 151936], target: i64[?, 1]) -> f32[?, 1]"""
    logits = _tensor("cross_entropy", "logits", logits, torch.bfloat16, (None, 151936))
    target = _tensor("cross_entropy", "target", target, torch.int64, (None, 1))
    if logits.shape[0] != target.shape[0]:
        raise ValueError("cross_entropy: logits has %d in dimension 0 but target has %d in dimension 0: two '?' extents that broadcast together must be equal" % (logits.shape[0], target.shape[0]))
    dev = logits.device
    logits_d0 = logits.shape[0]
    target_d0 = target.shape[0]
    loss = torch.empty((logits_d0, 1), dtype=torch.float32, device=dev)
    if logits_d0 <= 263:
        split_max = torch.empty((logits_d0, 16), dtype=torch.float32, device=dev)
        split_sum = torch.empty((logits_d0, 16), dtype=torch.float32, device=dev)
        cfg = CONFIGS["cross_entropy_k0"]
        grid = ((logits_d0 * 16),)
        if grid[0] > 0:
            _launch(cross_entropy_k0, grid, (logits, target, loss, split_max, split_sum, logits_d0, target_d0, logits_d0, logits_d0, logits_d0), BLOCK=cfg["BLOCK"], num_warps=cfg["num_warps"])
    if logits_d0 <= 263:
        cfg = _fit_rows(CONFIGS["cross_entropy_k1"], logits_d0)
        grid = (_cdiv(logits_d0, cfg["ROWS"]),)
        if grid[0] > 0:
            _launch(cross_entropy_k1, grid, (logits, target, split_max, split_sum, loss, logits_d0, target_d0, logits_d0, logits_d0, logits_d0), BLOCK=cfg["BLOCK"], ROWS=cfg["ROWS"], num_warps=cfg["num_warps"])
    if logits_d0 >= 264:
        cfg = CONFIGS["cross_entropy_k2"]
        grid = (logits_d0,)
        if grid[0] > 0:
            _launch(cross_entropy_k2, grid, (logits, target, loss, logits_d0, target_d0, logits_d0), BLOCK=cfg["BLOCK"], num_warps=cfg["num_warps"])
    return loss
