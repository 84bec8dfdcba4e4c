#!/usr/bin/env python3
"""Checks the resident splits of the Triton emitter on the GPU.

    python3 bench/gpu/resident_check.py            # everything, about a minute
    python3 bench/gpu/resident_check.py --quick    # fewer row counts, no warp sweep

A resident split (docs/triton.md) runs S programs per row that number
themselves with a ticket, keep their split of the row in registers, meet
at a group sync over DRAM counters and combine the row's S partial maxima
and sums. Its kernels need what no other kernel does: counters that are
zero at every launch (the launcher keeps them, zeroed once, in
_counters), forward progress of programs that wait for each other, and
loads that see the other programs' stores. Modules (built by
bench/gpu/build.sh, no Go here):

    out/selftest_resident.py     bench/gpu/selftest/resident.tir, compiled with
                                 lower-to-loops{resident=true} (splits of at most
                                 32 KiB of f32): softmax of 256000 bf16 (32 of
                                 8000), log_softmax of 61440 bf16 (8 of 7680),
                                 softmax of 65536 f32 (8 of 8192, no mask),
                                 softmax of 524288 bf16 (64 of 8192: the largest
                                 group)

For each function: outputs against a float64 reference (run.py's
tolerances) at several row counts and on extreme rows; three calls on the
same input give the same bits; every counter is zero after each call;
row counts that grow the counters and shrink again; two streams at once
(counters per stream); CUDA graphs captured on the stream the counters
were made for (shared counters) and on a fresh one (zeros made by the
graph), replayed with new inputs. A deadlock hangs the GPU: every test
runs under a watchdog that ends the process with status 2 and the test's
name. Then, per kernel, registers, spills and the programs an SM holds
(Triton 3.6's CompiledKernel, kept by the module's _launch), and, unless
--quick, softmax_256000 at 1024 rows timed at 4, 8 and 16 warps (each
checked). Exit status 1 if a test fails.
"""
import argparse
import os
import sys
import threading
import time
import traceback

import torch
import triton
from triton.testing import do_bench

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402  (tolerances, loading, comparison)

DEV = "cuda"
BF, F32 = torch.bfloat16, torch.float32

# module, function, kernel, row length, dtype, float64 reference
CASES = [
    ("selftest_resident", "softmax_256000", "softmax_256000_k0", 256000, BF, lambda x: torch.softmax(x, -1)),
    ("selftest_resident", "log_softmax_61440", "log_softmax_61440_k0", 61440, BF, lambda x: torch.log_softmax(x, -1)),
    ("selftest_resident", "softmax_65536", "softmax_65536_k0", 65536, F32, lambda x: torch.softmax(x, -1)),
    ("selftest_resident", "softmax_524288", "softmax_524288_k0", 524288, BF, lambda x: torch.softmax(x, -1)),
]

WATCHDOG_S = 120


class Watchdog:
    """Ends the process when a test runs longer than seconds: a group sync
    that never completes spins forever and synchronize never returns."""

    def __init__(self, name, seconds=WATCHDOG_S):
        self.name, self.seconds = name, seconds

    def __enter__(self):
        def fire():
            print(f"TIMEOUT after {self.seconds} s in {self.name}: a group sync deadlocked?", flush=True)
            os._exit(2)

        self.timer = threading.Timer(self.seconds, fire)
        self.timer.daemon = True
        self.timer.start()
        return self

    def __exit__(self, *exc):
        self.timer.cancel()
        return False


def rand(rows, d, dtype):
    return (torch.randn(rows, d, device=DEV) * 5.0).to(dtype)


def counters_zero(mod):
    """The problems with the module's kept counters: any not at zero."""
    bad = []
    for key, t in getattr(mod, "_COUNTERS", {}).items():
        nz = int(torch.count_nonzero(t).item())
        if nz:
            idx = torch.nonzero(t).flatten()[:8].tolist()
            bad.append(f"counters {key[2]} (stream {key[1]}): {nz} not zero, at {idx}: {t[idx].tolist()}")
    return bad


def compare(got, x, ref):
    c = run.compare(got, ref(x.double()))
    if c["ok"]:
        return []
    return [f"{c['violations']} of {c['elements']} outside tolerance (max error {c['max_err']:.3g}, "
            f"non-finite match {c['nonfinite_match']})"]


def check_form(mod, module, func, kernel):
    """The module holds the resident form of the kernel (else: rebuild)."""
    path = os.path.join(run.MODULES, module + ".py")
    text = open(path).read()
    bad = []
    if not hasattr(mod, "_counters"):
        bad.append(f"{path} has no _counters: not the resident form (rebuild with bench/gpu/build.sh)")
    start = text.find(f"def {kernel}(")
    src = text[start:text.find("\n\n\n", start)] if start >= 0 else ""
    for want in ("tl.atomic_add(tickets, 1)", 'sem="acquire"', 'cache_modifier=".cg"'):
        if want not in src:
            bad.append(f"kernel {kernel} lacks {want!r}")
    if f"def {func}(" not in text:
        bad.append(f"{path} has no function {func}")
    return bad


def check_rows(mod, fn, d, dtype, ref, rows):
    """Every row count: correct, three calls the same bits, counters at zero."""
    bad = []
    for t in rows:
        x = rand(t, d, dtype)
        outs = [fn(x) for _ in range(3)]
        torch.cuda.synchronize()
        bad += [f"{t} rows: {b}" for b in compare(outs[0], x, ref)]
        if not all(torch.equal(outs[0], o) for o in outs[1:]):
            bad.append(f"{t} rows: three calls on one input differ")
        bad += [f"after {t} rows: {b}" for b in counters_zero(mod)]
        del x, outs
    return bad


def check_extremes(mod, fn, d, dtype, ref):
    (x,) = run.extreme_rows(d, dtype)
    y = fn(x)
    torch.cuda.synchronize()
    return [f"extreme rows: {b}" for b in compare(y, x, ref)] + counters_zero(mod)


def check_streams(mod, fn, d, dtype, ref):
    """Two streams launching at once, each with counters of its own."""
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    xs = [rand(13, d, dtype), rand(40, d, dtype)]
    torch.cuda.synchronize()
    ys = [[], []]
    for _ in range(10):
        for i, s in enumerate(streams):
            with torch.cuda.stream(s):
                ys[i].append(fn(xs[i]))
    torch.cuda.synchronize()
    bad = []
    for i in range(2):
        bad += [f"stream {i}: {b}" for b in compare(ys[i][0], xs[i], ref)]
        if not all(torch.equal(ys[i][0], y) for y in ys[i][1:]):
            bad.append(f"stream {i}: calls on one input differ")
    return bad + counters_zero(mod)


def check_graphs(mod, fn, d, dtype, ref):
    """CUDA graphs: captured on the stream whose counters exist (the graph
    uses the kept counters) and on a fresh stream (zeros made in the
    graph), each replayed with new inputs, eager calls in between."""
    bad = []
    for variant in ("kept counters", "counters made in the graph"):
        s = torch.cuda.Stream()
        x = rand(5, d, dtype)
        if variant == "kept counters":
            with torch.cuda.stream(s):
                fn(x)  # warm-up: the counters of stream s
            s.synchronize()
        else:
            with torch.cuda.stream(s):
                y = fn(x)  # compiles the kernel outside the capture
            s.synchronize()
            s = torch.cuda.Stream()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=s):
            y = fn(x)
        for k in range(3):
            x.copy_(rand(5, d, dtype))
            g.replay()
            torch.cuda.synchronize()
            bad += [f"{variant}, replay {k}: {b}" for b in compare(y, x, ref)]
            z = rand(3, d, dtype)
            bad += [f"{variant}, eager call after replay {k}: {b}" for b in compare(fn(z), z, ref)]
            torch.cuda.synchronize()
        bad += [f"{variant}: {b}" for b in counters_zero(mod)]
        del g
    return bad


def report(name, test):
    try:
        with Watchdog(name):
            bad = test()
    except Exception:
        bad = ["raised:\n" + traceback.format_exc()]
    print(f"{'ok  ' if not bad else 'FAIL'} {name}", flush=True)
    for b in bad:
        print("    " + b, flush=True)
    return int(bool(bad))


def kernel_resources(mods):
    """Registers, spills and programs per SM of every compiled kernel the
    modules' _launch kept."""
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    regs_per_sm = getattr(props, "regs_per_multiprocessor", 65536)
    seen = set()
    for mod in mods:
        for key, (ck, _) in getattr(mod, "_compiled", {}).items():
            try:
                name = ck.name
                if (mod.__name__, name, key[2:]) in seen:
                    continue
                seen.add((mod.__name__, name, key[2:]))
                warps = ck.metadata.num_warps
                threads = 32 * warps
                per_sm = min(regs_per_sm // max(1, ck.n_regs * threads),
                             getattr(props, "max_threads_per_multi_processor", 2048) // threads)
                flag = "  SPILLS" if ck.n_spills else ""
                print(f"  {name}: {warps} warps, {ck.n_regs} registers, {ck.n_spills} spilled, "
                      f"shared {ck.metadata.shared} B, {per_sm} programs per SM "
                      f"({per_sm * props.multi_processor_count} at once){flag}", flush=True)
            except AttributeError as e:
                print(f"  (no resources for a kernel of {mod.__name__}: {e})", flush=True)
    if not seen:
        print("  no compiled kernels kept (TENSORFORGE_TRITON_LAUNCH=jit, or Triton other than 3.6)", flush=True)


def sweep_warps(mod, fn, kernel, d, dtype, ref, rows=1024):
    """The kernel at 4, 8 and 16 warps: checked, timed (do_bench, median)."""
    cfg = dict(mod.CONFIGS[kernel])
    x = rand(rows, d, dtype)
    gb = 2 * x.numel() * x.element_size() / 1e9
    for w in (4, 8, 16):
        mod.CONFIGS[kernel] = dict(cfg, num_warps=w)
        with Watchdog(f"{kernel} at {w} warps"):
            y = fn(x)
            torch.cuda.synchronize()
            ok = not compare(y, x, ref) and not counters_zero(mod)
            ms = do_bench(lambda: fn(x), warmup=25, rep=100, return_mode="median")
        mark = " (emitted)" if w == cfg["num_warps"] else ""
        print(f"  {kernel} {rows}x{d}, {w} warps{mark}: {ms * 1e3:.1f} us, {gb / ms:.2f} TB/s, "
              f"{'ok' if ok else 'WRONG'}", flush=True)
    mod.CONFIGS[kernel] = cfg


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer row counts, no warp sweep")
    args = ap.parse_args()
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}", flush=True)
    torch.manual_seed(0)
    failed = total = 0
    mods = []
    for module, func, kernel, d, dtype, ref in CASES:
        try:
            mod = run.load(module)
        except Exception as e:
            print(f"FAIL {module}: cannot load: {type(e).__name__}: {e} (run bench/gpu/build.sh)", flush=True)
            failed, total = failed + 1, total + 1
            continue
        if mod not in mods:
            mods.append(mod)
        fn = getattr(mod, func)
        # few rows (a decode step's), groups past the SMs, many waves
        rows = [1, 3, 16] if args.quick else [1, 2, 3, 16, 133, 1024]
        if d > 300000:
            rows = [1, 3, 16] if args.quick else [1, 3, 16, 133]
        tests = [
            ("form", lambda: check_form(mod, module, func, kernel)),
            ("rows " + ",".join(map(str, rows)), lambda: check_rows(mod, fn, d, dtype, ref, rows)),
            # the counters grow (many rows after few) and stay (few after many)
            ("rows 1, 2048, 1", lambda: check_rows(mod, fn, d, dtype, ref, [1, 2048 if d <= 65536 else 512, 1])),
            ("extreme rows", lambda: check_extremes(mod, fn, d, dtype, ref)),
            ("two streams", lambda: check_streams(mod, fn, d, dtype, ref)),
            ("CUDA graphs", lambda: check_graphs(mod, fn, d, dtype, ref)),
        ]
        for name, test in tests:
            failed += report(f"{module}.{func}: {name}", test)
            total += 1
    print("kernels:", flush=True)
    kernel_resources(mods)
    if not args.quick and mods:
        module, func, kernel, d, dtype, ref = CASES[0]
        try:
            mod = run.load(module)
            sweep_warps(mod, getattr(mod, func), kernel, d, dtype, ref)
        except Exception:
            print("  warp sweep raised:\n" + traceback.format_exc(), flush=True)
    print(f"{total - failed} of {total} passed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    t0 = time.time()
    status = main()
    print(f"{time.time() - t0:.0f} s", flush=True)
    sys.exit(status)
