#!/usr/bin/env python3
"""RMSNorm rows whose inputs are copied into shared memory, beside the other forms (an experiment).

    python3 bench/gpu/rows_copies.py --forms NAME=DIR,... [--rows 4096] [--cols 5120,8192]

With lower-to-loops{resident=true}, a one-pass row kernel copies the inputs
its loops read more than once into shared memory as loaded (bf16 stays
bf16) and computes every phase from the copies; the PTX emitter issues the
copies as bulk copies (emit/ptx/bulk.go). bench/gpu/build_bulk.sh builds
those modules and the default ones. Each DIR holds, per workload
add_rmsnorm_<cols> and rms_silu_mul_<cols>, a PTX launcher
(<workload>.ptx/<func>.py) or a Triton module (<workload>.py).

Every form is checked against float64 (random rows: max error relative to
the result's largest magnitude, at most 2^-7, a bf16 rounding; rows with
±inf, NaN and 1e30: NaN where eager has NaN) and timed with do_bench (L2
flushed, median) beside a copy that moves the same bytes, eager and
torch.compile, in one run. The table gives milliseconds and the fraction
of the copy's bandwidth.
"""
import argparse
import importlib.util
import os
import sys

import torch
from triton.testing import do_bench

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402  (the references and eager forms of the workloads)

BF = torch.bfloat16


def load(path):
    spec = importlib.util.spec_from_file_location("form_" + os.path.basename(path).replace(".", "_"), path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def module_fn(d, workload, func):
    """The callable of workload in DIR d: its PTX launcher, else its Triton module."""
    pdir = os.path.join(d, workload + ".ptx")
    if os.path.isdir(pdir):
        return getattr(load(os.path.join(pdir, func + ".py")), func)
    return getattr(load(os.path.join(d, workload + ".py")), func)


def as_tuple(r):
    return r if isinstance(r, tuple) else (r,)


def check(fn, ref, eager, inputs, special):
    """The max error of fn against ref in float64, relative to the largest
    magnitude of each result; with special rows, whether NaNs fall where
    eager's do."""
    got = as_tuple(fn(*inputs))
    if special:
        want = as_tuple(eager(*inputs))
        ok = all(torch.equal(torch.isnan(g), torch.isnan(w)) for g, w in zip(got, want))
        return 0.0 if ok else float("inf")
    want = ref(*[x.double() for x in inputs])
    err = 0.0
    for g, w in zip(got, want):
        scale = w.abs().max().item() or 1.0
        err = max(err, ((g.double() - w).abs().max().item()) / scale)
    return err


def special_rows(inputs):
    out = [x.clone() for x in inputs]
    x = out[0]
    x[0, 5] = float("inf")
    x[1, 7] = float("nan")
    x[2, :] = 1e30
    x[3, 9] = -float("inf")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--forms", required=True, help="NAME=DIR,... (PTX launchers or Triton modules per workload)")
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--cols", default="5120,8192")
    args = ap.parse_args()
    forms = [f.split("=", 1) for f in args.forms.split(",") if f]
    print(torch.cuda.get_device_name(), "rows", args.rows)
    for cols in [int(c) for c in args.cols.split(",")]:
        for name, func, make, ref, eager, units in [
            ("add_rmsnorm", "add_rmsnorm", run.make_add_rmsnorm, run.ref_add_rmsnorm, run.eager_add_rmsnorm, 4),
            ("rms_silu_mul", "rms_silu_mul", run.make_rms_chain, run.ref_rms_silu_mul, run.eager_rms_silu_mul, 3),
        ]:
            workload = f"{name}_{cols}"
            inputs = make(args.rows, cols)()
            # a copy of the bytes the workload moves (units rows of T x D
            # bf16 read or written; the weight row aside)
            n = units * args.rows * cols // 2
            src, dst = torch.empty(n, dtype=BF, device="cuda"), torch.empty(n, dtype=BF, device="cuda")
            t_copy = do_bench(lambda: dst.copy_(src), warmup=25, rep=200, return_mode="median")
            rows = [("copy", t_copy, "")]
            fns = [("eager", eager), ("torch.compile", torch.compile(eager))]
            for fname, d in forms:
                try:
                    fns.append((fname, module_fn(d, workload, func)))
                except Exception as e:  # a module that does not load is reported, not fatal
                    rows.append((fname, float("nan"), f"load failed: {e}"))
            for fname, fn in fns:
                try:
                    err = check(fn, ref, eager, inputs, False)
                    serr = check(fn, ref, eager, special_rows(inputs), True)
                    t = do_bench(lambda: fn(*inputs), warmup=25, rep=200, return_mode="median")
                    note = f"err {err:.2e}" + ("" if err <= 2 ** -7 else " WRONG") + ("" if serr == 0 else " NaN-MISMATCH")
                    rows.append((fname, t, note))
                except Exception as e:
                    rows.append((fname, float("nan"), f"failed: {str(e).splitlines()[0][:120]}"))
            print(f"## {workload} {args.rows}x{cols}")
            for fname, t, note in rows:
                frac = t_copy / t if t == t and t > 0 else float("nan")
                print(f"{fname:24s} {t * 1e3:9.1f} us  {frac:5.2f} of copy  {note}")


if __name__ == "__main__":
    main()
