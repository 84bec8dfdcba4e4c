# Triton kernels and their launchers, compiled by tfc --emit=triton from gqa_scores.tir for h200.
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
    "gqa_scores_k0": [{"max_m": 16, "BM": 16, "BN": 64, "BK": 256, "GROUP_M": 1, "num_warps": 4, "num_stages": 3}, {"max_m": 64, "BM": 32, "BN": 32, "BK": 256, "GROUP_M": 1, "num_warps": 4, "num_stages": 4}, {"max_m": 512, "BM": 128, "BN": 128, "BK": 64, "GROUP_M": 8, "num_warps": 4, "num_stages": 4}, {"max_m": 0, "BM": 128, "BN": 256, "BK": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 4}],
    "gqa_scores_k1": {"BLOCK": 2048, "ROWS": 2, "num_warps": 4},
}

# The tuning key of every matmul kernel (tfc --tune, --tune-cache).
KEYS = {
    "gqa_scores_k0": "5e99aadc3a3c13d38f56e29d22df64b0",
}


def _mm_config(configs, m):
    """The first configuration of a matmul kernel for m rows (CONFIGS)."""
    for c in configs:
        if c["max_m"] == 0 or m <= c["max_m"]:
            return c
    return configs[-1]


_MM_SMS = {}

# The fewest steps of BK a part of split-K keeps (TENSORFORGE_MM_MIN_STEPS
# overrides it, for measurements). 2 measured faster than 24 on every decode
# GEMV of a Llama-3-8B layer on the H200 (bench/results/
# e2e-h200-2026-12-03-min-steps.txt): the q and o projections (K = 4096 over
# 32 tiles) 16.2 -> 12.2 and 16.4 -> 13.1 us, k and v (8 tiles) 15.2 -> 9.4 us.
_MM_MIN_STEPS = int(os.environ.get("TENSORFORGE_MM_MIN_STEPS", "2"))


# Split-K runs serially by default: one launch, whose last part to finish
# on each tile adds the parts and runs the epilogue. TENSORFORGE_MM_SERIAL=0
# launches the kernel a second time for that instead (EPI), for measurements.
_MM_SERIAL = os.environ.get("TENSORFORGE_MM_SERIAL", "1") != "0"
_MM_LOCKS = {}


def _mm_locks(dev, n):
    """At least n int32 counters at zero, one per tile of a serial split-K
    launch, kept per device and stream: each part of a tile adds 1 to its
    counter when its sums are stored, and the last one resets it to 0 for
    the next launch."""
    key = (dev, torch._C._cuda_getCurrentRawStream(dev.index if dev.index is not None else torch.cuda.current_device()))
    t = _MM_LOCKS.get(key)
    if t is None or t.numel() < n:
        t = _MM_LOCKS[key] = torch.zeros((max(n, 1024),), dtype=torch.int32, device=dev)
    return t


_MM_WS = {}


def _mm_ws(dev, n, dtype):
    """A workspace of at least n elements of dtype for the parts of a
    split-K launch, kept per device, stream and dtype: every part writes its
    sums before any reads them within the launch, and the launches of a
    stream run in order, so one buffer serves them all (no allocation per
    call). A miss while a CUDA graph is being captured is allocated for that
    graph alone, not kept."""
    key = (dev, torch._C._cuda_getCurrentRawStream(dev.index if dev.index is not None else torch.cuda.current_device()), dtype)
    t = _MM_WS.get(key)
    if t is None or t.numel() < n:
        if torch.cuda.is_current_stream_capturing():
            return torch.empty((n,), dtype=dtype, device=dev)
        t = _MM_WS[key] = torch.empty((n,), dtype=dtype, device=dev)
    return t


def _mm_split(cfg, dev, programs, k, size):
    """The number of parts split-K cuts K into: 1, unless the grid's
    programs would keep fewer than half the GPU's multiprocessors busy
    over a long K. Each halving of the parts keeps the grid within the
    multiprocessors, at least _MM_MIN_STEPS steps of BK in each part and the f32
    workspace (size elements per part) indexable in 32 bits: a decode
    GEMV is bound by its weight bytes, and a grid of a few dozen tiles
    reads them at a fraction of the bandwidth. A configuration's own
    SPLIT_K entry wins."""
    if "SPLIT_K" in cfg:
        return cfg["SPLIT_K"]
    if dev not in _MM_SMS:
        _MM_SMS[dev] = torch.cuda.get_device_properties(dev).multi_processor_count
    steps = -(-k // cfg["BK"])
    split = 1
    while 2 * programs * split <= _MM_SMS[dev] and steps // (2 * split) >= _MM_MIN_STEPS and 2 * split * size < 2**31:
        split *= 2
    return split


@triton.jit
def _max_nan(a, b):
    # the larger, NaN if either is NaN (tl.max and tl.maximum drop NaN by default)
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def gqa_scores_k0(k, q, mask_1, arg3, mm_ws, mm_lock, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr, SPLIT_K: tl.constexpr, EPI: tl.constexpr, SERIAL: tl.constexpr):
    # matmul: 1 dot product(s) over K = 128 with tl.dot, BM x BN tiles, then the epilogue on each tile
    pid = tl.program_id(0)
    pid_b = tl.program_id(1)
    npm = tl.cdiv(1, BM)
    npn = tl.cdiv(2048, BN)
    gw = GROUP_M * npn
    first_m = (pid // gw) * GROUP_M
    gsize = tl.minimum(npm - first_m, GROUP_M)
    pid_m = first_m + (pid % gw) % gsize
    pid_n = (pid % gw) // gsize
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    rows = pid_b * 1 + tl.minimum(offs_m, 1 - 1)[:, None]
    cols = offs_n[None, :]
    omask = (offs_m[:, None] < 1) & (offs_n[None, :] < 2048)
    a_ptrs = q + (rows * 128) + offs_k[None, :]
    b0_ptrs = k + ((((pid_b * 1 // 4) * 2048) + cols) * 128) + offs_k[:, None]
    acc0 = tl.zeros((BM, BN), dtype=tl.float32)
    pid_k = tl.program_id(2)
    nb = tl.num_programs(1)
    ws_off = (pid_b * 1 + offs_m[:, None]) * 2048 + offs_n[None, :]
    if EPI:
        for s_k in range(SPLIT_K):
            acc0 += tl.load(mm_ws + s_k * nb * 2048 + ws_off, mask=omask, other=0.0)
    else:
        if SPLIT_K == 1:
            k_lo = 0
            k_hi = tl.cdiv(128, BK)
        else:
            k_per = tl.cdiv(tl.cdiv(128, BK), SPLIT_K)
            k_lo = pid_k * k_per
            k_hi = tl.minimum(k_lo + k_per, tl.cdiv(128, BK))
            a_ptrs += k_lo * BK
            b0_ptrs += k_lo * BK
        for kk in range(k_lo, k_hi):
            krem = 128 - kk * BK
            a_t = tl.load(a_ptrs, mask=offs_k[None, :] < krem, other=0.0)
            acc0 = tl.dot(a_t, tl.load(b0_ptrs, mask=offs_k[:, None] < krem, other=0.0), acc0)
            a_ptrs += BK
            b0_ptrs += BK
    if SPLIT_K > 1 and not EPI:
        tl.store(mm_ws + pid_k * nb * 2048 + ws_off, acc0, mask=omask)
    if SPLIT_K > 1 and SERIAL:
        tl.debug_barrier()
        lock = mm_lock + pid_b * tl.num_programs(0) + pid
        last = tl.atomic_add(lock, 1) == SPLIT_K - 1
        acc0 = tl.zeros((BM, BN), dtype=tl.float32)
        for s_k in range(SPLIT_K):
            acc0 += tl.load(mm_ws + s_k * nb * 2048 + ws_off, mask=omask & last, other=0.0, cache_modifier=".cg")
        tl.atomic_xchg(lock, 0, mask=last)
        omask = omask & last
    if SPLIT_K == 1 or EPI or SERIAL:
        mask_2 = tl.load(mask_1 + cols)
        t0 = mask_2.to(tl.float32)
        t1 = acc0 + t0
        tl.store(arg3 + (rows * 2048) + cols, t1, mask=omask)


@triton.jit
def gqa_scores_k1(arg0, p, BLOCK: tl.constexpr, ROWS: tl.constexpr):
    # row, one-pass: rows of 2048 in one block, ROWS rows per program
    pid = tl.program_id(0)
    r = (pid * ROWS).to(tl.int64) + tl.arange(0, ROWS)[:, None]
    rmask = r < 32
    cols = tl.arange(0, BLOCK)[None, :]
    t0 = tl.load(arg0 + (r * 2048) + cols, mask=rmask)
    acc = tl.full((ROWS, BLOCK), (-float("inf")), tl.float32)
    t1 = _max_nan(acc, t0)
    acc_1 = tl.reduce(t1, 1, _max_nan, keep_dims=True)
    acc_2 = tl.full((ROWS, BLOCK), 0.0, tl.float32)
    t2 = t0 - acc_1
    t3 = tl.exp(t2)
    t4 = acc_2 + t3
    acc_3 = tl.sum(t4, axis=1, keep_dims=True)
    t5 = 1.0 / acc_3
    t6 = t3 * t5
    t7 = t6.to(tl.bfloat16)
    tl.store(p + (r * 2048) + cols, t7, mask=rmask)


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


def gqa_scores(q, k, mask_1):
    """gqa_scores(q: bf16[32, 1, 128], k: bf16[8, 1, 2048, 128], mask_1: bf16[1, 2048]) -> bf16[32, 1, 2048]"""
    q = _tensor("gqa_scores", "q", q, torch.bfloat16, (32, 1, 128))
    k = _tensor("gqa_scores", "k", k, torch.bfloat16, (8, 1, 2048, 128))
    mask_1 = _tensor("gqa_scores", "mask_1", mask_1, torch.bfloat16, (1, 2048))
    dev = q.device
    t0 = torch.empty((32, 1, 2048), dtype=torch.float32, device=dev)
    cfg = _mm_config(CONFIGS["gqa_scores_k0"], 1)
    tiles = _cdiv(1, cfg["BM"]) * _cdiv(2048, cfg["BN"])
    split = _mm_split(cfg, dev, tiles * 32, 128, 65536)
    if tiles > 0:
        if split > 1:
            mm_ws = _mm_ws(dev, split * 65536, torch.float32)
            if _MM_SERIAL:
                _launch(gqa_scores_k0, (tiles, 32, split), (k, q, mask_1, t0, mm_ws, _mm_locks(dev, tiles * 32)), BM=cfg["BM"], BN=cfg["BN"], BK=cfg["BK"], GROUP_M=cfg["GROUP_M"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"], SPLIT_K=split, EPI=False, SERIAL=True)
            else:
                _launch(gqa_scores_k0, (tiles, 32, split), (k, q, mask_1, t0, mm_ws, mm_ws), BM=cfg["BM"], BN=cfg["BN"], BK=cfg["BK"], GROUP_M=cfg["GROUP_M"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"], SPLIT_K=split, EPI=False, SERIAL=False)
                _launch(gqa_scores_k0, (tiles, 32, 1), (k, q, mask_1, t0, mm_ws, mm_ws), BM=cfg["BM"], BN=cfg["BN"], BK=cfg["BK"], GROUP_M=cfg["GROUP_M"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"], SPLIT_K=split, EPI=True, SERIAL=False)
        else:
            _launch(gqa_scores_k0, (tiles, 32, 1), (k, q, mask_1, t0, t0, t0), BM=cfg["BM"], BN=cfg["BN"], BK=cfg["BK"], GROUP_M=cfg["GROUP_M"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"], SPLIT_K=1, EPI=False, SERIAL=False)
    p = torch.empty((32, 1, 2048), dtype=torch.bfloat16, device=dev)
    cfg = _fit_rows(CONFIGS["gqa_scores_k1"], 32)
    grid = (_cdiv(32, cfg["ROWS"]),)
    _launch(gqa_scores_k1, grid, (t0, p), BLOCK=cfg["BLOCK"], ROWS=cfg["ROWS"], num_warps=cfg["num_warps"])
    return p
