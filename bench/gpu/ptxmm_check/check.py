#!/usr/bin/env python3
"""The PTX tensor-core matmul forms the benchmark shapes do not reach, run on the GPU.

    python3 bench/gpu/ptxmm_check/check.py DIR

DIR holds tfc's PTX output of each program here (f16 operands and B as
[K, N], which take `mma.sync ... .f16` and `ldmatrix ... .trans`; rows of
K = 100 and N = 72, which are not 16-byte aligned and take predicated
2-byte copies; a batch with a residual):

    for f in bench/gpu/ptxmm_check/*.tir; do
      tfc --emit=ptx --target=h200 "$f" -o DIR/$(basename "$f" .tir)
    done

Each is loaded (ptxas compiles it when the module loads), run on random
inputs, and compared with a float64 evaluation of the program under the
bound |got - ref| <= u |ref| + K 2^-23 sum_k |a_k b_k| + tiny, u the unit
roundoff of the output type (doubled where an epilogue follows); then
again with an inf and a NaN in A, which must give the reference's
non-finite pattern. Prints one line per case and exits 1 on a failure.
"""
import glob
import importlib.util
import os
import sys

import torch
import torch.nn.functional as F

DEV = "cuda"


def load(d):
    py = glob.glob(os.path.join(d, "*.py"))[0]
    spec = importlib.util.spec_from_file_location(os.path.basename(d), py)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def check(name, got, ref, mag, k, u):
    got, ref = got.double(), ref.double()
    fin = torch.isfinite(ref)
    same_nonfinite = bool(torch.equal(torch.isnan(got), torch.isnan(ref))) and bool(
        torch.equal(got[torch.isinf(ref)], ref[torch.isinf(ref)]))
    bound = u * ref.abs() + k * 2.0 ** -23 * mag + 2.0 ** -100
    worst = float(((got - ref).abs()[fin] / bound[fin]).max()) if fin.any() else 0.0
    ok = worst <= 1 and same_nonfinite
    print(f"{name:44s} {'ok ' if ok else 'BAD'} worst {worst:.3f} of the bound, non-finite pattern {'same' if same_nonfinite else 'DIFFERENT'}", flush=True)
    return ok


def main(d):
    torch.manual_seed(0)
    good = True
    mods = {n: load(os.path.join(d, n)) for n in ("f16_kn", "bf16_unaligned", "batched_f16")}
    for m in (1, 67, 300):
        for special in (False, True):
            a = torch.randn(m, 200, device=DEV).half()
            b = (torch.randn(200, 136, device=DEV) / 14).half()
            if special:
                a[0, 3], a[m - 1, 7] = float("inf"), float("nan")
            got = mods["f16_kn"].f16_kn(a, b)
            ref = a.double() @ b.double()
            good &= check(f"f16, B [K, N], {m} rows{' inf/NaN' if special else ''}", got, ref,
                          a.double().abs() @ b.double().abs(), 200, 2.0 ** -11)
            a = torch.randn(m, 100, device=DEV).bfloat16()
            w = (torch.randn(72, 100, device=DEV) / 10).bfloat16()
            bias = torch.randn(72, device=DEV).bfloat16()
            if special:
                a[0, 3], a[m - 1, 7] = float("inf"), float("nan")
            got = mods["bf16_unaligned"].bf16_unaligned(a, w, bias)
            h = a.double() @ w.double().t() + bias.double()
            # silu(-inf) is its limit, -0 (torch computes -inf * 0 = NaN)
            ref = torch.where(h == float("-inf"), torch.zeros_like(h), F.silu(h))
            mag = (a.double().abs() @ w.double().abs().t()) * 1.1 + bias.double().abs()
            good &= check(f"bf16, K 100, N 72, bias + silu, {m} rows{' inf/NaN' if special else ''}", got, ref, mag, 100, 2.0 ** -7)
    a = torch.randn(3, 130, 64, device=DEV).half()
    b = (torch.randn(3, 64, 96, device=DEV) / 8).half()
    r = torch.randn(3, 130, 96, device=DEV).half()
    got = mods["batched_f16"].batched_f16(a, b, r)
    ref = a.double() @ b.double() + r.double()
    good &= check("f16, batch of 3, B [K, N], residual", got, ref,
                  a.double().abs() @ b.double().abs() + r.double().abs(), 64, 2.0 ** -10)
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
