#!/usr/bin/env python3
"""Decode GEMV configurations by GPU time, as a decode step replays them.

    bash bench/gpu/build_matmul.sh .bin/mm
    python3 bench/gpu/gemv_sweep.py --modules .bin/mm [--only kv,qo,down] [--rows 1,32] [--default-only]

matmul.py's --sweep times each configuration with do_bench, which at a
decode GEMV's 5 to 30 us measures mostly the host's launch. This times
the same configurations (matmul.py's DECODE, SPLIT_K chosen by _mm_split
or set) by the replay of a CUDA graph (run.py's bench_graph), the way a
decode step with CUDA graphs runs them, beside cuBLAS
(torch.nn.functional.linear) in the same graph form. Every configuration
is checked against float64 first (matmul.py's check).

A decode step reads each weight once, from DRAM: the other layers'
weights have pushed it out of L2 since. Replaying one call over the same
weights would read the smaller ones (up to ~50 MB) from L2, so the
replayed calls take turns over copies of the weights, enough copies to
pass --cold-mb (256 MB by default; 0 replays one set). An int8 weight's
cuBLAS baseline is the bf16 GEMV of its shape (the weight converted once,
outside the timing). --default-only times the emitted configuration and
cuBLAS alone; otherwise matmul.py's DECODE and the lists below are swept.
"""
import argparse
import itertools
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import matmul as mm  # noqa: E402
import run  # noqa: E402


# Wider and deeper tiles than matmul.py's DECODE, for rows of 1 to 4:
# more bytes in flight per program where the grid is a few hundred.
EXTRA = [
    (16, 32, 512, 1, 4, 3),
    (16, 64, 512, 1, 4, 3),
    (16, 64, 256, 1, 8, 4),
    (16, 128, 256, 1, 8, 3),
    (16, 256, 128, 1, 8, 3),
    (16, 32, 256, 1, 2, 6),
    (16, 16, 512, 1, 2, 4),
    (16, 32, 512, 1, 4, 3, 2),
    (16, 64, 256, 1, 8, 4, 2),
]

# For an int8 weight converted as it loads (w8up): a tile of int8 holds
# half the bytes of a bf16 one, so wider tiles and more warps.
EXTRA_INT8 = [
    (16, 256, 128, 1, 8, 3),
    (16, 256, 128, 1, 8, 4),
    (16, 256, 256, 1, 8, 3),
    (16, 128, 256, 1, 8, 4),
    (16, 128, 512, 1, 8, 3),
    (16, 512, 128, 1, 8, 3),
    (16, 256, 256, 1, 8, 2),
    (16, 128, 256, 1, 4, 4),
]


def taking_turns(ws, cold_mb):
    """The number of sets of weights (ws and copies of it) whose matrices
    pass cold_mb MB in all, and a function returning the next set in turn."""
    wbytes = sum(w.numel() * w.element_size() for w in ws if w.dim() == 2)
    n = max(1, -(-int(cold_mb * 1e6) // wbytes))
    sets = [ws] + [[w.clone() for w in ws] for _ in range(n - 1)]
    return n, itertools.cycle(sets).__next__


def graph_us(fn):
    """Microseconds of GPU time of one call, replayed from a CUDA graph (run.bench_graph)."""
    ms = run.bench_graph(fn)
    return None if ms is None else ms * 1000


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--modules", default=".bin/mm")
    ap.add_argument("--only", default="kv,qo,down")
    ap.add_argument("--rows", default="1,32")
    ap.add_argument("--cold-mb", type=float, default=256,
                    help="weight copies the replayed calls take turns over, at least this many MB in all")
    ap.add_argument("--default-only", action="store_true",
                    help="time the emitted configuration and cuBLAS only")
    args = ap.parse_args()
    for name in args.only.split(","):
        mod = mm.load(os.path.join(args.modules, "mm_%s.py" % name))
        kname = next(iter(mod.CONFIGS))
        own = list(mod.CONFIGS[kname])
        fn = getattr(mod, name)
        K, N, _ = mm.SHAPES[name]
        for m in [int(r) for r in args.rows.split(",")]:
            torch.manual_seed(0)
            x, ws = mm.inputs(name, m)
            rows = torch.arange(m, device=mm.DEV)
            mats = [w for w in ws if w.dim() == 2]
            wbytes = sum(w.numel() * w.element_size() for w in mats)
            ncopies, nxt = taking_turns(ws, args.cold_mb)
            # cuBLAS: one linear per weight (gate and up: two); an int8
            # weight's baseline is the bf16 GEMV of its shape, cold too
            blas, nxt_blas = "cuBLAS" + ("" if len(mats) == 1 else " x%d" % len(mats)), nxt
            if not all(w.is_floating_point() for w in mats):
                blas += " (bf16 weights)"
                _, nxt_blas = taking_turns([w.to(x.dtype) for w in mats], args.cold_mb)
            res = [(blas, graph_us(lambda: [F.linear(x, t) for t in nxt_blas() if t.dim() == 2]), 0.0)]
            sweep = [] if args.default_only else mm.DECODE + EXTRA + (EXTRA_INT8 if name.startswith("w8") else [])
            for label, cfgs in [("default", own)] + [(str(c), [mm.config_dict(c)]) for c in sweep]:
                mod.CONFIGS[kname] = cfgs
                try:
                    o = fn(x, *ws)
                    torch.cuda.synchronize()
                    e = mm.check(name, o, x, ws, rows)
                    res.append((label, graph_us(lambda: fn(x, *nxt())) if e <= 1 else None, e))
                except Exception as ex:  # noqa: BLE001
                    res.append((label + " " + repr(ex)[:80], None, float("nan")))
            mod.CONFIGS[kname] = own
            del nxt, nxt_blas
            print(f"{name} {m} rows (K {K}, N {N}, weights {wbytes / 1e6:.1f} MB, {ncopies} copies taking turns): "
                  "GPU us per call, CUDA-graph replay")
            for label, us, e in sorted(res, key=lambda r: (r[1] is None, r[1] or 0)):
                if us is None:
                    print(f"  {label:40s}  FAILED (error {e:.3g})")
                else:
                    print(f"  {label:40s}  {us:7.2f} us  {wbytes / us / 1e6:5.2f} TB/s  (error {e:.2f})")


if __name__ == "__main__":
    main()
