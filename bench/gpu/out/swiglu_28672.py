# Triton kernels and their launchers, compiled by tfc --emit=triton from swiglu_28672.tir for h200.
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
    grid = (_cdiv(total, cfg["BLOCK"]),)
    if grid[0] > 0:
        _launch(swiglu_k0, grid, (g, u, y, g_d0, u_d0, g_d0, total), BLOCK=cfg["BLOCK"], WIDE=total + cfg["BLOCK"] > WIDE_FROM, num_warps=cfg["num_warps"])
    return y
