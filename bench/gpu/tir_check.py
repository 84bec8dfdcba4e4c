#!/usr/bin/env python3
"""Runs the GPU modules of a .tir file against the reference interpreter.

    python3 bench/gpu/tir_check.py prep FILE.tir DIR [--tfc TFC]   (where tfc is)
    python3 bench/gpu/tir_check.py check DIR MODULE.py ...           (on the GPU)

prep draws random inputs for every function of FILE.tir (normal values,
rounded to each argument's type by tfc; `?` extents are 16), and writes
DIR/<func>/inputs.npz with the interpreter's results of the program at -O2
(`tfc interpret -O2`: the fused program, values f32 between fused ops) as
DIR/<func>/result<i>.npy. check calls each function of each MODULE.py (a
Triton module, `tfc --emit=triton`, or a PTX launcher, `tfc --emit=ptx`)
on those inputs and compares its results with the interpreter's: the
largest distance in ULPs of the result type (of the results' RMS where
an element is smaller), and NaN and infinity where the reference has them. A function fails beyond MAX_ULPS (the GPU's exp,
tanh and division are approximations within a few ULPs of f32; a bf16
result computed from them rounds the same or one ULP away).
"""
import argparse
import glob
import importlib.util
import os
import re
import subprocess
import sys

import numpy as np

MAX_ULPS = {"bf16": 1, "f16": 1, "f32": 8, "f64": 0}
SIG = re.compile(r"func\.func @(\w+)\(([^)]*)\)")
ARG = re.compile(r"%(\w+): tensor<([^>]*)>")


def parse_type(t):
    parts = t.split("x")
    elem = parts[-1]
    shape = [16 if d == "?" else int(d) for d in parts[:-1]]
    return shape, elem


def prep(args):
    src = open(args.tir).read()
    rng = np.random.default_rng(1)
    for m in SIG.finditer(src):
        fn = m.group(1)
        d = os.path.join(args.dir, fn)
        os.makedirs(d, exist_ok=True)
        arrays = {}
        for name, t in ARG.findall(m.group(2)):
            shape, _ = parse_type(t)
            arrays[name] = (rng.standard_normal(shape) * 2).astype(np.float32)
        np.savez(os.path.join(d, "inputs.npz"), **arrays)
        subprocess.run([args.tfc, "interpret", args.tir, "-O2", "--func", fn, "--cast-inputs",
                        "--inputs", os.path.join(d, "inputs.npz"), "--output", d], check=True)
        print(d)


def ulps(got, want, elem):
    import torch
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32, "f64": torch.float64}[elem]
    g = got.to(torch.float64)
    w = torch.from_numpy(want).to(torch.float64).to(g.device)
    special = torch.isnan(w) | torch.isinf(w)
    bad_special = int(((torch.isnan(g) != torch.isnan(w)) | (torch.isinf(w) & (g != w))).sum())
    fin = ~special
    # ULPs of the element, or of the result's RMS where it is smaller (a
    # sum that cancels has no relative accuracy: exp(x) - y near 0)
    rms = w[fin].pow(2).mean().sqrt() if fin.any() else torch.tensor(0.0, dtype=torch.float64)
    spacing = torch.finfo(dtype).eps * torch.clamp(torch.maximum(w.abs(), rms), min=torch.finfo(dtype).tiny)
    worst = ((g - w).abs()[fin] / spacing[fin]).max().item() if fin.any() else 0.0
    return worst, bad_special


def check(args):
    import torch
    failed = 0
    for path in args.modules:
        spec = importlib.util.spec_from_file_location("m" + str(abs(hash(path))), path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        src = open(args.tir).read() if args.tir else None
        for d in sorted(glob.glob(os.path.join(args.dir, "*", "inputs.npz"))):
            fn = os.path.basename(os.path.dirname(d))
            if not hasattr(mod, fn):
                continue
            sig = next(m for m in SIG.finditer(src) if m.group(1) == fn)
            types = [parse_type(t) for _, t in ARG.findall(sig.group(2))]
            res = re.search(r"@" + fn + r"\([^)]*\)\s*->\s*\(?([^{]*)\)?\s*{", src).group(1)
            out_elems = [parse_type(t)[1] for t in re.findall(r"tensor<([^>]*)>", res)]
            npz = np.load(d)
            dt = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32, "f64": torch.float64}
            ins = [torch.from_numpy(npz[k]).to("cuda").to(dt[e]) for k, (_, e) in zip(npz.files, types)]
            outs = getattr(mod, fn)(*ins)
            torch.cuda.synchronize()
            outs = outs if isinstance(outs, (tuple, list)) else (outs,)
            for i, (o, e) in enumerate(zip(outs, out_elems)):
                want = np.load(os.path.join(os.path.dirname(d), f"result{i}.npy"))
                worst, bad = ulps(o, want, e)
                ok = worst <= MAX_ULPS[e] and bad == 0
                failed += not ok
                print(f"{'ok  ' if ok else 'FAIL'} {os.path.basename(path)} {fn} result{i} {e}: "
                      f"{worst:.2f} ULP, {bad} special values differ", flush=True)
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prep")
    p.add_argument("tir")
    p.add_argument("dir")
    p.add_argument("--tfc", default="tfc")
    c = sub.add_parser("check")
    c.add_argument("dir")
    c.add_argument("modules", nargs="+")
    c.add_argument("--tir", required=True)
    a = ap.parse_args()
    if a.cmd == "prep":
        prep(a)
        return 0
    return check(a)


if __name__ == "__main__":
    sys.exit(main())
