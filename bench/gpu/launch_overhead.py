"""Host cost of launching one small Triton kernel, by each path Triton offers.

    python3 bench/gpu/launch_overhead.py

Prints microseconds per launch (calls back to back, one synchronisation at
the end) of: kernel[grid](...) (JITFunction.run: binding, specialisation,
cache lookup), the CompiledKernel it returned called through its
__getitem__ runner, the CompiledKernel's run() called directly with a
stream looked up once, and for scale a torch.add with out= and an empty
Python call. Each launch path's result is checked.
"""

import inspect
import time

import torch
import triton
import triton.language as tl


@triton.jit
def add_k(x, y, out, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(out + i, tl.load(x + i, mask=m) + tl.load(y + i, mask=m), mask=m)


def per_call(fn, n=2000):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e6


def main():
    n = 4096
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    grid = (triton.cdiv(n, 1024),)
    ck = add_k[grid](x, y, out, n, BLOCK=1024)
    print("triton", triton.__version__, "torch", torch.__version__)
    print("CompiledKernel:", type(ck).__module__, type(ck).__name__)
    for attr in ("__getitem__", "run", "launch_metadata"):
        f = getattr(type(ck), attr, None)
        if f is not None and callable(f):
            try:
                print("---", attr, "\n" + inspect.getsource(f))
            except (OSError, TypeError) as e:
                print("---", attr, "source not available:", e)
    print("--- kernel.run is", type(getattr(ck, "run", None)))
    print("--- constants", getattr(ck, "constants", None), "src.signature", getattr(getattr(ck, "src", None), "signature", None))
    print("--- metadata", {k: getattr(ck.metadata, k) for k in ("num_warps", "num_ctas", "shared") if hasattr(ck.metadata, k)})

    def check(label, fn):
        out.zero_()
        try:
            fn()
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001
            print("%-46s FAILED %s: %s" % (label, type(e).__name__, e))
            return
        ok = torch.equal(out, x + y)
        print("%-46s %7.2f us  %s" % (label, per_call(fn), "ok" if ok else "WRONG RESULT"))

    check("kernel[grid](...)", lambda: add_k[grid](x, y, out, n, BLOCK=1024))
    check("compiled[grid](x, y, out, n)", lambda: ck[grid](x, y, out, n))
    check("compiled[grid](x, y, out, n, 1024)", lambda: ck[grid](x, y, out, n, 1024))
    runner = ck[grid]
    check("runner = compiled[grid]; runner(x, y, out, n)", lambda: runner(x, y, out, n))
    check("runner(x, y, out, n, 1024)", lambda: runner(x, y, out, n, 1024))
    dev = torch.cuda.current_device()
    stream = torch.cuda.current_stream(dev).cuda_stream
    try:
        from triton.runtime import driver

        tstream = driver.active.get_current_stream(dev)
        print("--- stream from triton", tstream, "from torch", stream)
    except Exception as e:  # noqa: BLE001
        print("--- triton stream lookup failed", e)
    hooks = (None, None)
    try:
        from triton import knobs

        hooks = (knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook)
    except Exception:  # noqa: BLE001
        hooks = (getattr(type(ck), "launch_enter_hook", None), getattr(type(ck), "launch_exit_hook", None))
    ck._init_handles() if hasattr(ck, "_init_handles") else None
    for label, extra in (("run(..., x, y, out, n)", (x, y, out, n)), ("run(..., x, y, out, n, 1024)", (x, y, out, n, 1024))):
        check("direct " + label, lambda extra=extra: ck.run(grid[0], 1, 1, stream, ck.function, ck.packed_metadata,
                                                             None, hooks[0], hooks[1], *extra))
    check("torch.add(x, y, out=out)", lambda: torch.add(x, y, out=out))
    check("torch.empty(n) + nothing", lambda: (torch.empty(n, device="cuda"), torch.add(x, y, out=out)))

    def nothing():
        pass

    t = torch.empty((32, 1, 4096), dtype=torch.bfloat16, device="cuda")
    d = t.device
    pieces = [
        ("torch.empty(shape, dtype, device=dev)", lambda: torch.empty((32, 1, 4096), dtype=torch.bfloat16, device=d)),
        ("torch.empty_strided(...)", lambda: torch.empty_strided((32, 1, 4096), (4096, 4096, 1),
                                                                dtype=torch.bfloat16, device=d)),
        ("torch.cuda.current_device()", torch.cuda.current_device),
        ("torch._C._cuda_getCurrentRawStream(0)", lambda: torch._C._cuda_getCurrentRawStream(0)),
        ("t.shape == (32, 1, 4096)", lambda: t.shape == (32, 1, 4096)),
        ("t.is_contiguous()", t.is_contiguous),
        ("t.data_ptr() % 16 == 0", lambda: t.data_ptr() % 16 == 0),
        ("isinstance + dtype + is_cuda", lambda: isinstance(t, torch.Tensor) and t.dtype == torch.bfloat16 and t.is_cuda),
    ]
    try:
        from torch._C._dynamo.guards import _empty_strided_cuda

        pieces.append(("_empty_strided_cuda(...)", lambda: _empty_strided_cuda((32, 1, 4096), (4096, 4096, 1),
                                                                               torch.bfloat16)))
    except ImportError as e:
        print("no _empty_strided_cuda:", e)
    try:
        from triton import knobs

        pieces.append(("knobs.runtime.launch_enter_hook", lambda: knobs.runtime.launch_enter_hook))
    except ImportError:
        pass
    for label, f in pieces:
        print("%-46s %7.2f us" % (label, per_call(f, 20000)))

    print("%-46s %7.2f us" % ("empty python call", per_call(nothing)))


if __name__ == "__main__":
    main()
