#!/usr/bin/env python3
"""Times workloads of run.py round-robin: ours, PyTorch eager and torch.compile.

    python3 bench/gpu/interleaved.py --only NAME,... [--rounds 5] [--modules DIR] [--ptx DIR]

The GPU machine is shared: one timing of a kernel can be off by 2x from
the next. This script checks each function against the float64 reference,
then times every contender once per round, in turn, for several rounds,
and reports the fastest and the median round of each, with the TB/s of
the ideal bytes at the fastest. Prefill shapes are timed with do_bench
(L2 flushed before each call), decode shapes (the names run.py marks
decode) as GPU time replayed from a CUDA graph. torch.compile runs in its
`default` and `max-autotune-no-cudagraphs` modes. --ptx DIR adds the PTX
launchers of DIR (bench/gpu/ptx_modules.py writes it) as a contender.
"""
import argparse
import importlib.util
import os
import sys

import torch
from triton.testing import do_bench, do_bench_cudagraph

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as R  # noqa: E402


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def list_kernels(wname, n, f, ins):
    from torch.profiler import ProfilerActivity, profile
    for _ in range(3):
        f(*ins)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(10):
            f(*ins)
        torch.cuda.synchronize()
    for e in prof.key_averages():
        if e.device_type.name == "CUDA" and e.count >= 10:
            print(f"  {wname} {n}: kernel {e.key[:60]:60s} x{e.count // 10} {e.device_time / 1:.2f} us each", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", required=True, help="comma list of run.py workloads")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--modules", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "out"))
    ap.add_argument("--ptx", help="directory of PTX shims (bench/gpu/ptx_modules.py)")
    ap.add_argument("--kernels", action="store_true", help="also list each contender's kernels and their GPU time (torch.profiler)")
    a = ap.parse_args()
    names = a.only.split(",")
    for w in R.WORKLOADS:
        if w.name not in names:
            continue
        torch.manual_seed(0)
        ins = w.make()
        refs = w.ref(*[x.double() for x in ins])
        fns = {"ours": getattr(load(os.path.join(a.modules, w.module + ".py"), "t_" + w.module), w.func)}
        if a.ptx:
            fns["ours ptx"] = getattr(load(os.path.join(a.ptx, w.module + ".py"), "p_" + w.module), w.func)
        fns["eager"] = w.eager
        for mode in ("default", "max-autotune-no-cudagraphs"):
            torch._dynamo.reset()
            c = torch.compile(w.eager, mode=mode)
            c(*ins)
            fns["compile " + mode] = c
        for n, f in fns.items():
            checks = R.check_outputs(R.as_tuple(f(*ins)), refs)
            worst = max(c["max_rel_to_scale"] for c in checks)
            print(f"{w.name} {n}: {'ok' if all(c['ok'] for c in checks) else 'outside the tolerance'}"
                  f" (largest error {worst:.2e} of the RMS)", flush=True)
        if a.kernels:
            for n, f in fns.items():
                list_kernels(w.name, n, f, ins)
        times = {n: [] for n in fns}
        for _ in range(a.rounds):
            for n, f in fns.items():
                if w.decode:
                    ms = do_bench_cudagraph(lambda: f(*ins), rep=30, return_mode="median")
                else:
                    ms = do_bench(lambda: f(*ins), warmup=25, rep=100, return_mode="median")
                times[n].append(ms * 1e3)
        ideal = R.nbytes(ins) + R.nbytes(R.as_tuple(fns["ours"](*ins)))
        kind = "GPU time from a CUDA graph" if w.decode else "do_bench, L2 flushed"
        print(f"{w.name}: {a.rounds} rounds, {kind}; ideal {ideal / 1e6:.1f} MB", flush=True)
        for n, v in times.items():
            v.sort()
            print(f"  {n:32s} fastest {v[0]:8.1f} us  median {v[len(v) // 2]:8.1f} us"
                  f"  {ideal / (v[0] * 1e-6) / 1e12:5.2f} TB/s", flush=True)
        del ins, refs
    return 0


if __name__ == "__main__":
    sys.exit(main())
