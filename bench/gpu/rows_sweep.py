#!/usr/bin/env python3
"""Rows per program and warps of a kernel cut into stretches, at decode and prefill sizes.

    tfc --emit=triton --target=h200 bench/gpu/rows/rope_dyn.tir -o .bin/rope_dyn.py
    python3 bench/gpu/rows_sweep.py .bin/rope_dyn.py [--tokens 1,32,4096]

RoPE on the q and k of a Llama-3-8B layer (bench/gpu/rows/rope_dyn.tir: two
kernels of ROWS rows of 128 per program), for each token count, under every
(ROWS, num_warps) of GRID set in the module's CONFIGS with _fit_rows turned
off, and under the emitter's own choice (CONFIGS with _fit_rows, "auto").
Times are GPU time per call from the replay of a CUDA graph (run.py's
bench_graph, the median of triton's do_bench_cudagraph), as a decode step
runs; every configuration's result is checked against a float64 reference
first.
"""
import argparse
import importlib.util
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402

GRID = [(1, 1), (1, 2), (1, 4), (2, 1), (2, 2), (2, 4), (4, 1), (4, 2), (4, 4), (8, 2), (8, 4), (16, 4), (32, 4), (32, 8)]


def graph_us(fn):
    """Microseconds of GPU time of one call, replayed from a CUDA graph (run.bench_graph)."""
    ms = run.bench_graph(fn)
    return None if ms is None else ms * 1000


def reference(q, k, cos, sin, sign):
    def rot(x):
        x = x.double()
        return x * cos.double() + torch.roll(x, 64, -1) * sign.double() * sin.double()
    return rot(q), rot(k)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("module")
    ap.add_argument("--tokens", default="1,32,4096")
    args = ap.parse_args()
    spec = importlib.util.spec_from_file_location("rope_dyn", args.module)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    fit = m._fit_rows
    names = [n for n, c in m.CONFIGS.items() if "ROWS" in c]
    own = {n: dict(m.CONFIGS[n]) for n in names}
    dev = "cuda"
    torch.manual_seed(0)
    for t in [int(x) for x in args.tokens.split(",")]:
        q = torch.randn(1, t, 32, 128, device=dev).bfloat16()
        k = torch.randn(1, t, 8, 128, device=dev).bfloat16()
        cos = torch.randn(1, t, 1, 128, device=dev).bfloat16()
        sin = torch.randn(1, t, 1, 128, device=dev).bfloat16()
        sign = torch.cat([-torch.ones(64), torch.ones(64)]).to(dev).bfloat16()
        rq, rk = reference(q, k, cos, sin, sign)
        rows = []
        for label, cfgs, f in [("auto", own, fit)] + [("R%d w%d" % rc, {n: dict(own[n], ROWS=rc[0], num_warps=rc[1]) for n in names},
                                                       lambda cfg, n: cfg) for rc in GRID]:
            m._fit_rows = f
            for n in names:
                m.CONFIGS[n] = cfgs[n]
            yq, yk = m.rope(q, k, cos, sin, sign)
            torch.cuda.synchronize()
            err = max(((yq.double() - rq).abs().max() / rq.abs().max()).item(),
                      ((yk.double() - rk).abs().max() / rk.abs().max()).item())
            if err > 2e-2:
                rows.append((label, None, err))
                continue
            us = graph_us(lambda: m.rope(q, k, cos, sin, sign))
            rows.append((label, us, err) if us is not None else (label, None, float("nan")))
        m._fit_rows = fit
        for n in names:
            m.CONFIGS[n] = own[n]
        best = min(r[1] for r in rows if r[1] is not None)
        print(f"tokens {t}: q {32 * t} rows, k {8 * t} rows of 128; GPU us per call (both kernels), CUDA-graph replay")
        for label, us, err in rows:
            if us is None:
                print(f"  {label:8s}  WRONG or not capturable (error {err:.2e} of the largest)")
            else:
                print(f"  {label:8s}  {us:8.2f} us  {us / best:5.2f}x best  (error {err:.1e})")


if __name__ == "__main__":
    main()
