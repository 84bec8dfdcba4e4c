#!/usr/bin/env python3
"""TensorForge's PTX matmul kernels on the GPU, against cuBLAS and its Triton kernels, in one process.

    python3 bench/gpu/matmul_ptx.py PTXDIR [--triton DIR] [--rows 4096,32,1] [--only qkv,up,...] [--out DIR]

PTXDIR holds one folder per program of bench/gpu/matmul, as tfc writes it:

    for f in bench/gpu/matmul/*.tir; do
      tfc --emit=ptx --target=h200 "$f" -o PTXDIR/$(basename "$f" .tir).ptx
    done

Each launcher is loaded and called like the Triton module of the same
program (the same calling convention), on the inputs of bench/gpu/matmul.py,
checked on sampled rows against its float64 reference and bound, and timed
with its bench() (do_bench medians, L2 flushed) beside cuBLAS
(torch.nn.functional.linear; for gateup two calls and the faster SwiGLU)
and, with --triton DIR (default bench/gpu/out), the Triton module
DIR/mm_<name>.py. The PTX file's own comment says which form each kernel
took (tensor cores or scalar loops). Figures go to OUT/matmul_ptx.json.
"""
import argparse
import glob
import json
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import matmul as mm  # noqa: E402


def launcher(ptxdir, name):
    d = os.path.join(ptxdir, name + ".ptx")
    pys = sorted(glob.glob(os.path.join(d, "*.py")))
    if len(pys) != 1:
        return None, None
    ptx = sorted(glob.glob(os.path.join(d, "*.ptx")))
    form = "?"
    if ptx:
        text = open(ptx[0]).read()
        form = "mma.sync" if "mma.sync" in text else ("wgmma" if "wgmma" in text else "scalar")
    return mm.load(pys[0]), form


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ptxdir")
    ap.add_argument("--triton", default=os.path.join(HERE, "out"))
    ap.add_argument("--only", default="qkv,up,down,gateup")
    ap.add_argument("--rows", default="4096,32,1")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    names = [n for n in mm.SHAPES if n in args.only.split(",")]
    rows = [int(r) for r in args.rows.split(",")]
    out = args.out or os.environ.get("OUT") or os.path.join(HERE, "out")
    os.makedirs(out, exist_ok=True)
    print(f"{'kernel':8s} {'rows':>5s} {'form':>8s} {'err':>6s} {'ptx ms':>8s} {'triton':>8s} {'cuBLAS':>8s} "
          f"{'ptx/cuBLAS':>10s} {'TFLOP/s':>8s} {'wTB/s':>6s}")
    recs = []
    for name in names:
        mod, form = launcher(args.ptxdir, name)
        if mod is None:
            print(f"{name}: no PTX launcher in {args.ptxdir}")
            continue
        tmod = None
        tpath = os.path.join(args.triton, f"mm_{name}.py")
        if os.path.exists(tpath):
            tmod = mm.load(tpath)
        K, N, nw = mm.SHAPES[name]
        for m in rows:
            rec = {"name": name, "rows": m, "form": form}
            try:
                torch.manual_seed(0)
                x, ws = mm.inputs(name, m)
                sample = torch.randperm(m, device=mm.DEV)[: min(m, 256)]
                fn = getattr(mod, name)
                o = fn(x, *ws)
                torch.cuda.synchronize()
                rec["err_ptx"] = mm.check(name, o, x, ws, sample)
                rec["ptx_ms"] = mm.bench(lambda: fn(x, *ws))
                if tmod is not None:
                    tfn = getattr(tmod, name)
                    rec["err_triton"] = mm.check(name, tfn(x, *ws), x, ws, sample)
                    rec["triton_ms"] = mm.bench(lambda: tfn(x, *ws))
                eager = mm.eager_fn(name)
                if name == "gateup":
                    g, u = F.linear(x, ws[0]), F.linear(x, ws[1])
                    t_mm = mm.bench(lambda: (F.linear(x, ws[0]), F.linear(x, ws[1])))
                    sw = lambda a, b: F.silu(a) * b  # noqa: E731
                    swc = torch.compile(sw, dynamic=False)
                    swc(g, u)
                    rec["cublas_ms"] = t_mm + min(mm.bench(lambda: sw(g, u)), mm.bench(lambda: swc(g, u)))
                else:
                    rec["cublas_ms"] = mm.bench(lambda: eager(x, *ws))
                flops = 2.0 * m * K * N * nw
                rec["ptx_tflops"] = flops / rec["ptx_ms"] / 1e9
                rec["ptx_over_cublas"] = rec["cublas_ms"] / rec["ptx_ms"]
                # the weights' bytes over the time: what bounds a decode step
                wbytes = 1.0 if name in ("w8up", "w8a8") else 2.0  # int8 weights: a byte each
                rec["ptx_weight_TBs"] = wbytes * K * N * nw / rec["ptx_ms"] / 1e9
                print(f"{name:8s} {m:5d} {form:>8s} {rec['err_ptx']:6.2f} {rec['ptx_ms']:8.4f} "
                      f"{rec.get('triton_ms', float('nan')):8.4f} {rec['cublas_ms']:8.4f} "
                      f"{rec['ptx_over_cublas']:10.2f} {rec['ptx_tflops']:8.1f} {rec['ptx_weight_TBs']:6.2f}", flush=True)
            except Exception as e:  # noqa: BLE001 - reported, the rest still runs
                rec["error"] = repr(e)[:300]
                print(f"{name:8s} {m:5d} FAILED {e}", flush=True)
            recs.append(rec)
            with open(os.path.join(out, "matmul_ptx.json"), "w") as f:
                json.dump({"device": torch.cuda.get_device_name(), "results": recs}, f, indent=1)


if __name__ == "__main__":
    main()
