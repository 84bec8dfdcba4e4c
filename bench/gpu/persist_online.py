#!/usr/bin/env python3
"""Online row kernels (one program per row, looping over chunks) against
persistent forms of themselves, in one process.

    python3 bench/gpu/persist_online.py [--programs 66,132,264,528]

An online kernel that computes full rows (softmax over 256000 logits)
reads its row twice: the max and sum pass, then the normalisation. With
one program per row, thousands of rows of 512 KB are in flight and the
second read comes from DRAM. With P programs looping over the rows
(`for r in range(pid, rows, P)`), P rows are in flight: when P x 512 KB
fits in L2 the second read may come from there. This script writes that
persistent form of the emitted kernels (the same body, the row loop
around it) into a temporary module, checks that it gives the emitted
kernel's bits, and times both with do_bench (L2 flushed between calls)
beside a 1 GiB copy. It measures; the emitter is changed only if it pays.
"""
import argparse
import importlib.util
import os
import re
import sys
import tempfile

import torch
import triton
from triton.testing import do_bench

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "out")
BF = torch.bfloat16

# module file, kernel, columns, inputs -> args (buffers then extents), bytes moved ideally
CASES = [
    ("softmax_256000.py", "softmax_k3", 256000, "softmax"),
    ("logsumexp_256000.py", "logsumexp_k2", 256000, "lse"),
    ("logsumexp_32000.py", "logsumexp_k2", 32000, "lse"),
    ("cross_entropy_151936.py", None, 151936, "skip"),
]


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def kernel_source(text, kname):
    """The text of @triton.jit function kname in a module's text."""
    start = text.index("def %s(" % kname)
    end = text.find("\n\n\n", start)
    return text[start:end if end >= 0 else len(text)]


def persistent_source(text, kname):
    """The source of kernel kname made persistent: NPROG programs, each
    looping over rows pid, pid + NPROG, ... below the first extent."""
    src = kernel_source(text, kname)
    params = re.search(r"def \w+\(([^)]*)\)", src).group(1).split(", ")
    rows = [a for a in params if re.match(r"\w+_d0$", a)][0]
    out = []
    body = False
    for ln in src.split("\n"):
        if ln.startswith("def "):
            out.append(ln.replace(kname + "(", kname + "_p(").replace(
                "BLOCK: tl.constexpr)", "BLOCK: tl.constexpr, NPROG: tl.constexpr)"))
            continue
        if re.match(r"\s+pid = tl.program_id\(0\)", ln):
            continue
        m = re.match(r"(\s+)r = pid.to\(tl.int64\)", ln)
        if m:
            out.append(f"{m.group(1)}for rr in range(tl.program_id(0), {rows}, NPROG):")
            out.append(f"{m.group(1)}    r = rr.to(tl.int64)")
            body = True
            continue
        out.append(("    " + ln) if body and ln.strip() else ln)
    return "\n".join(out)


def persistent_module(text, kname):
    """The module's imports and helpers (the @triton.jit functions whose
    names start with _) and the persistent kernel."""
    head = text.split("@triton.jit")[0]
    helpers = "".join("@triton.jit" + part.split("\n\n\n")[0] + "\n\n\n"
                      for part in text.split("@triton.jit")[1:] if part.startswith("\ndef _"))
    return head + helpers + "@triton.jit\n" + persistent_source(text, kname) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--programs", default="66,132,264,528")
    ap.add_argument("--rows", type=int, default=4096)
    args = ap.parse_args()
    progs = [int(p) for p in args.programs.split(",")]
    a = torch.empty(2**30, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    copy_ms = do_bench(lambda: b.copy_(a), warmup=25, rep=100, return_mode="median")
    del a, b
    copy_tbs = 2 * 2**30 / copy_ms / 1e9
    print(f"copy 1 GiB: {copy_tbs:.2f} TB/s; {torch.cuda.get_device_name()}")
    tmp = tempfile.mkdtemp()
    for fname, kname, cols, kind in CASES:
        if kind == "skip":
            continue
        path = os.path.join(OUT, fname)
        mod = load(path, "m_" + fname[:-3])
        pfile = os.path.join(tmp, "p_" + fname)
        with open(pfile, "w") as f:
            f.write(persistent_module(open(path).read(), kname))
        pmod = load(pfile, "p_" + fname[:-3])
        kern = getattr(mod, kname)
        pkern = getattr(pmod, kname + "_p")
        cfg = mod.CONFIGS[kname]
        R = args.rows
        torch.manual_seed(0)
        x = (torch.randn(R, cols, device="cuda") * 4).to(BF)
        if kind == "softmax":
            y0 = torch.empty(R, cols, device="cuda", dtype=BF)
            y1 = torch.empty_like(y0)
            ideal = 2 * x.numel() * 2
        else:
            y0 = torch.empty(R, device="cuda", dtype=torch.float32)
            y1 = torch.empty_like(y0)
            ideal = x.numel() * 2 + R * 4

        def base():
            kern[(R,)](x, y0, R, R, BLOCK=cfg["BLOCK"], num_warps=cfg["num_warps"])

        base()
        t0 = do_bench(base, warmup=25, rep=100, return_mode="median")
        print(f"{fname[:-3]:18s} {R}x{cols}: one program per row  {t0 * 1e3:8.1f} us  {ideal / t0 / 1e9 / copy_tbs:5.2f} of copy")
        for P in progs:
            def pers():
                pkern[(min(P, R),)](x, y1, R, R, BLOCK=cfg["BLOCK"], NPROG=min(P, R), num_warps=cfg["num_warps"])
            pers()
            torch.cuda.synchronize()
            same = torch.equal(y0.view(torch.int16) if y0.dtype == BF else y0.view(torch.int32),
                               y1.view(torch.int16) if y1.dtype == BF else y1.view(torch.int32))
            t = do_bench(pers, warmup=25, rep=100, return_mode="median")
            print(f"{'':18s} {'':>{len(str(R)) + len(str(cols)) + 1}s}  persistent, {P:4d} programs {t * 1e3:8.1f} us  "
                  f"{ideal / t / 1e9 / copy_tbs:5.2f} of copy  same bits: {same}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
