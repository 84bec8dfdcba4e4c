# Triton kernels and their launchers, compiled by tfc --emit=triton from rope_4096.tir for h200.
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
    "rope_k0": {"BLOCK": 64, "ROWS": 16, "num_warps": 4},
}


@triton.jit
def rope_k0_p0(cos, sin, q, k, qe, ke, pid, BLOCK: tl.constexpr, ROWS: tl.constexpr):
    # elementwise: rows of 128 cut into stretches [0, 64), [64, 128), ROWS rows per program
    r = (pid * ROWS).to(tl.int64) + tl.arange(0, ROWS)[:, None]
    rmask = r < 131072
    cols = tl.arange(0, 64)[None, :]
    cols_1 = 64 + tl.arange(0, 64)[None, :]
    t0 = r % 4096
    t1 = r // 4096
    t2 = t1 * 128
    t3 = t2 + cols
    q_1 = tl.load(q + (t0 * 4096) + t3, mask=rmask)
    cos_1 = tl.load(cos + (t0 * 128) + cols, mask=rmask)
    t4 = q_1.to(tl.float32)
    t5 = cos_1.to(tl.float32)
    t6 = t4 * t5
    t7 = t2 + cols_1
    q_2 = tl.load(q + (t0 * 4096) + t7, mask=rmask)
    t8 = q_2.to(tl.float32)
    t9 = -t8
    sin_1 = tl.load(sin + (t0 * 128) + cols, mask=rmask)
    t10 = sin_1.to(tl.float32)
    t11 = t9 * t10
    t12 = t6 + t11
    t13 = t12.to(tl.bfloat16)
    tl.store(qe + (((t1 * 4096) + t0) * 128) + cols, t13, mask=rmask)
    cos_2 = tl.load(cos + (t0 * 128) + cols_1, mask=rmask)
    t14 = q_2.to(tl.float32)
    t15 = cos_2.to(tl.float32)
    t16 = t14 * t15
    t17 = q_1.to(tl.float32)
    sin_2 = tl.load(sin + (t0 * 128) + cols_1, mask=rmask)
    t18 = sin_2.to(tl.float32)
    t19 = t17 * t18
    t20 = t16 + t19
    t21 = t20.to(tl.bfloat16)
    tl.store(qe + (((t1 * 4096) + t0) * 128) + cols_1, t21, mask=rmask)


@triton.jit
def rope_k0_p1(cos, sin, q, k, qe, ke, pid, BLOCK: tl.constexpr, ROWS: tl.constexpr):
    # elementwise: rows of 128 cut into stretches [0, 64), [64, 128), ROWS rows per program
    r = (pid * ROWS).to(tl.int64) + tl.arange(0, ROWS)[:, None]
    rmask = r < 32768
    cols = tl.arange(0, 64)[None, :]
    cols_1 = 64 + tl.arange(0, 64)[None, :]
    t0 = r % 4096
    t1 = r // 4096
    t2 = t1 * 128
    t3 = t2 + cols
    k_1 = tl.load(k + (t0 * 1024) + t3, mask=rmask)
    cos_1 = tl.load(cos + (t0 * 128) + cols, mask=rmask)
    t4 = k_1.to(tl.float32)
    t5 = cos_1.to(tl.float32)
    t6 = t4 * t5
    t7 = t2 + cols_1
    k_2 = tl.load(k + (t0 * 1024) + t7, mask=rmask)
    t8 = k_2.to(tl.float32)
    t9 = -t8
    sin_1 = tl.load(sin + (t0 * 128) + cols, mask=rmask)
    t10 = sin_1.to(tl.float32)
    t11 = t9 * t10
    t12 = t6 + t11
    t13 = t12.to(tl.bfloat16)
    tl.store(ke + (((t1 * 4096) + t0) * 128) + cols, t13, mask=rmask)
    cos_2 = tl.load(cos + (t0 * 128) + cols_1, mask=rmask)
    t14 = k_2.to(tl.float32)
    t15 = cos_2.to(tl.float32)
    t16 = t14 * t15
    t17 = k_1.to(tl.float32)
    sin_2 = tl.load(sin + (t0 * 128) + cols_1, mask=rmask)
    t18 = sin_2.to(tl.float32)
    t19 = t17 * t18
    t20 = t16 + t19
    t21 = t20.to(tl.bfloat16)
    tl.store(ke + (((t1 * 4096) + t0) * 128) + cols_1, t21, mask=rmask)


@triton.jit
def rope_k0(cos, sin, q, k, qe, ke, start1, BLOCK: tl.constexpr, ROWS: tl.constexpr):
    # 2 parts in one launch: programs [0, start1) run rope_k0_p0, the rest rope_k0_p1
    pid = tl.program_id(0)
    if pid < start1:
        rope_k0_p0(cos, sin, q, k, qe, ke, pid, BLOCK, ROWS)
    else:
        rope_k0_p1(cos, sin, q, k, qe, ke, pid - start1, BLOCK, ROWS)


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


def rope(q, k, cos, sin):
    """rope(q: bf16[1, 4096, 4096], k: bf16[1, 4096, 1024], cos: bf16[1, 4096, 128], sin: bf16[1, 4096, 128]) -> (bf16[1, 32, 4096, 128], bf16[1, 8, 4096, 128])"""
    q = _tensor("rope", "q", q, torch.bfloat16, (1, 4096, 4096))
    k = _tensor("rope", "k", k, torch.bfloat16, (1, 4096, 1024))
    cos = _tensor("rope", "cos", cos, torch.bfloat16, (1, 4096, 128))
    sin = _tensor("rope", "sin", sin, torch.bfloat16, (1, 4096, 128))
    dev = q.device
    qe = torch.empty((1, 32, 4096, 128), dtype=torch.bfloat16, device=dev)
    ke = torch.empty((1, 8, 4096, 128), dtype=torch.bfloat16, device=dev)
    cfg = CONFIGS["rope_k0"]
    programs0 = _cdiv(131072, cfg["ROWS"])
    programs1 = _cdiv(32768, cfg["ROWS"])
    grid = (programs0 + programs1,)
    if grid[0] > 0:
        _launch(rope_k0, grid, (cos, sin, q, k, qe, ke, programs0), BLOCK=cfg["BLOCK"], ROWS=cfg["ROWS"], num_warps=cfg["num_warps"])
    return (qe, ke)
