#!/usr/bin/env python3
"""Kernel forms the Triton matmul emitter could take, timed beside cuBLAS in one process.

    python3 bench/gpu/matmul_variants.py [--out DIR] [--only prefill,decode]

Before a form goes into emit/triton/matmul.go it is measured here, on the
shapes of bench/gpu/matmul.py (Llama-3-8B's projections, bf16, weights
[N, K] as nn.Linear stores them):

  prefill (4096 rows): the emitter's form (pointer tiles, one program per
    tile; N and K constexpr, as the emitter writes them as literals), the same with TMA descriptors (tl.make_tensor_descriptor), and a
    persistent TMA kernel (one program per SM walking the tiles, with and
    without warp specialisation);
  decode (1 and 32 rows): the emitter's tl.dot form against a GEMV of
    tl.sum over [BN, BK] weight tiles, without and with split-K (f32
    atomics here, for the measurement only).

Every output is checked against a float64 reference on sampled rows with
the bound of matmul.py; times are medians of do_bench with L2 flushed.
A form that fails to compile is reported and skipped. Figures go to
DIR/variants.json.
"""
import argparse
import json
import os
import traceback

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from triton.testing import do_bench

DEV = "cuda"
BF = torch.bfloat16
SHAPES = {"qkv": (4096, 6144), "up": (4096, 14336), "down": (14336, 4096)}


def bench(fn):
    return do_bench(fn, warmup=25, rep=100, return_mode="median")


def check(out, x, w, rows):
    K = x.shape[1]
    ref = x[rows].double() @ w.double().T
    a = x[rows].double().abs() @ w.double().abs().T
    bound = 2.0 ** -8 * ref.abs() + K * 2.0 ** -23 * a + 2.0 ** -126
    r = (out[rows].double() - ref).abs() / bound
    return float(torch.where(torch.isnan(r), torch.full_like(r, float("inf")), r).max())


@triton.jit
def _swizzle(tile, npm, npn, GROUP_M: tl.constexpr):
    gw = GROUP_M * npn
    first_m = (tile // gw) * GROUP_M
    gsize = tl.minimum(npm - first_m, GROUP_M)
    return first_m + (tile % gw) % gsize, (tile % gw) // gsize


@triton.jit
def mm_pointers(x, w, y, M, N: tl.constexpr, K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr):
    pid_m, pid_n = _swizzle(tl.program_id(0), tl.cdiv(M, BM), tl.cdiv(N, BN), GROUP_M)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    rows = tl.minimum(offs_m, M - 1)[:, None]
    cols = tl.minimum(offs_n, N - 1)[None, :]
    a_ptrs = x + rows * K + offs_k[None, :]
    b_ptrs = w + cols * K + offs_k[:, None]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kk in range(0, tl.cdiv(K, BK)):
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
        a_ptrs += BK
        b_ptrs += BK
    tl.store(y + offs_m[:, None] * N + offs_n[None, :], acc.to(tl.bfloat16),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def mm_tma(x, w, y, M, N: tl.constexpr, K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(x, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(w, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    c_desc = tl.make_tensor_descriptor(y, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    pid_m, pid_n = _swizzle(tl.program_id(0), tl.cdiv(M, BM), tl.cdiv(N, BN), GROUP_M)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kk in range(0, tl.cdiv(K, BK)):
        a = a_desc.load([pid_m * BM, kk * BK])
        b = b_desc.load([pid_n * BN, kk * BK])
        acc = tl.dot(a, b.T, acc)
    c_desc.store([pid_m * BM, pid_n * BN], acc.to(tl.bfloat16))


@triton.jit
def mm_tma_persistent(x, w, y, M, N: tl.constexpr, K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                      GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr, WS: tl.constexpr, TMA_STORE: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(x, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(w, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    c_desc = tl.make_tensor_descriptor(y, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    npm = tl.cdiv(M, BM)
    npn = tl.cdiv(N, BN)
    k_tiles = tl.cdiv(K, BK)
    for tile in tl.range(tl.program_id(0), npm * npn, NUM_SMS, flatten=True, warp_specialize=WS):
        pid_m, pid_n = _swizzle(tile, npm, npn, GROUP_M)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for kk in range(k_tiles):
            a = a_desc.load([pid_m * BM, kk * BK])
            b = b_desc.load([pid_n * BN, kk * BK])
            acc = tl.dot(a, b.T, acc)
        if TMA_STORE:
            c_desc.store([pid_m * BM, pid_n * BN], acc.to(tl.bfloat16))
        else:
            # the emitter's epilogue form: a masked store of the tile
            offs_m = pid_m * BM + tl.arange(0, BM)
            offs_n = pid_n * BN + tl.arange(0, BN)
            tl.store(y + offs_m[:, None] * N + offs_n[None, :], acc.to(tl.bfloat16),
                     mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def gemv_sum(x, w, y, M, N, K, BN: tl.constexpr, BK: tl.constexpr, SPLIT: tl.constexpr):
    # one program per (row, BN columns, part of K): acc[BN] += sum(w[BN, BK] * x[BK])
    row = tl.program_id(1)
    pid_k = tl.program_id(2)
    offs_n = tl.program_id(0) * BN + tl.arange(0, BN)
    cols = tl.minimum(offs_n, N - 1)
    offs_k = tl.arange(0, BK)
    per = tl.cdiv(tl.cdiv(K, BK), SPLIT)
    acc = tl.zeros((BN,), dtype=tl.float32)
    for kk in range(pid_k * per, tl.minimum(pid_k * per + per, tl.cdiv(K, BK))):
        k = kk * BK + offs_k
        xv = tl.load(x + row * K + k).to(tl.float32)
        wt = tl.load(w + cols[:, None] * K + k[None, :]).to(tl.float32)
        acc += tl.sum(wt * xv[None, :], axis=1)
    if SPLIT == 1:
        tl.store(y + row * N + offs_n, acc.to(tl.bfloat16), mask=offs_n < N)
    else:
        tl.atomic_add(y + row * N + offs_n, acc, mask=offs_n < N)


PREFILL = [(128, 256, 64, 8, 8, 3), (128, 256, 64, 8, 8, 4), (128, 256, 64, 4, 8, 3), (128, 256, 64, 16, 8, 3),
           (128, 128, 64, 8, 4, 4), (256, 128, 64, 8, 8, 3)]
# BN, BK, num_warps, num_stages, SPLIT
GEMV = [(bn, bk, wp, 3, 1) for bn in (32, 64, 128) for bk in (256, 512) for wp in (4, 8)] + \
    [(64, 256, 4, 3, 2), (64, 256, 4, 3, 4), (32, 256, 4, 3, 2), (128, 256, 8, 3, 2), (64, 512, 8, 3, 2),
     (32, 512, 4, 3, 4)]


def run_prefill(rec, sms):
    for name, (K, N) in SHAPES.items():
        torch.manual_seed(0)
        M = 4096
        x = torch.randn(M, K, device=DEV, dtype=BF)
        w = (torch.randn(N, K, device=DEV) / K ** 0.5).to(BF)
        y = torch.empty(M, N, device=DEV, dtype=BF)
        rows = torch.randperm(M, device=DEV)[:256]
        r = {"cublas_ms": bench(lambda: F.linear(x, w))}
        for form in ("pointers", "tma", "persistent", "persistent_ws", "persistent_ws_ptrstore"):
            for c in PREFILL:
                bm, bn, bk, g, wp, st = c
                tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn)
                try:
                    if form == "pointers":
                        fn = lambda: mm_pointers[(tiles,)](x, w, y, M, N, K, BM=bm, BN=bn, BK=bk, GROUP_M=g,  # noqa: E731
                                                           num_warps=wp, num_stages=st)
                    elif form == "tma":
                        fn = lambda: mm_tma[(tiles,)](x, w, y, M, N, K, BM=bm, BN=bn, BK=bk, GROUP_M=g,  # noqa: E731
                                                      num_warps=wp, num_stages=st)
                    else:
                        ws = form.startswith("persistent_ws")
                        fn = lambda: mm_tma_persistent[(min(sms, tiles),)](  # noqa: E731
                            x, w, y, M, N, K, BM=bm, BN=bn, BK=bk, GROUP_M=g, NUM_SMS=sms, WS=ws,
                            TMA_STORE=not form.endswith("ptrstore"), num_warps=wp, num_stages=st)
                    y.zero_()
                    fn()
                    torch.cuda.synchronize()
                    err = check(y, x, w, rows)
                    t = bench(fn)
                    r["%s %s" % (form, c)] = {"ms": t, "err": err}
                    print("%-5s %-14s %-24s %.4f ms (cuBLAS %.4f, %.2fx) err %.2f" % (
                        name, form, c, t, r["cublas_ms"], r["cublas_ms"] / t, err), flush=True)
                except Exception as e:  # noqa: BLE001
                    r["%s %s" % (form, c)] = {"error": repr(e)[:300]}
                    print("%-5s %-14s %-24s FAILED %s" % (name, form, c, repr(e)[:200]), flush=True)
        rec[name + " 4096"] = r


def run_decode(rec):
    for name, (K, N) in SHAPES.items():
        for M in (1, 32):
            torch.manual_seed(0)
            x = torch.randn(M, K, device=DEV, dtype=BF)
            w = (torch.randn(N, K, device=DEV) / K ** 0.5).to(BF)
            rows = torch.arange(M, device=DEV)
            r = {"cublas_ms": bench(lambda: F.linear(x, w))}
            best = None
            for c in GEMV:
                bn, bk, wp, st, sp = c
                out = torch.empty(M, N, device=DEV, dtype=BF if sp == 1 else torch.float32)
                grid = (triton.cdiv(N, bn), M, sp)
                try:
                    def fn():
                        if sp > 1:
                            out.zero_()
                        gemv_sum[grid](x, w, out, M, N, K, BN=bn, BK=bk, SPLIT=sp, num_warps=wp, num_stages=st)
                    fn()
                    torch.cuda.synchronize()
                    err = check(out.to(BF), x, w, rows)
                    t = bench(fn)
                    r[str(c)] = {"ms": t, "err": err}
                    if err <= 1 and (best is None or t < best[1]):
                        best = (c, t)
                except Exception as e:  # noqa: BLE001
                    r[str(c)] = {"error": repr(e)[:300]}
            if best:
                r["best"] = {"config": best[0], "ms": best[1]}
                print("%-5s %4d gemv best %-22s %.4f ms (cuBLAS %.4f, %.2fx)" % (
                    name, M, best[0], best[1], r["cublas_ms"], r["cublas_ms"] / best[1]), flush=True)
            rec["%s %d" % (name, M)] = r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "out"))
    ap.add_argument("--only", default="prefill,decode")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    # device-side tensor descriptors take their scratch from this allocator
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device=DEV))
    sms = torch.cuda.get_device_properties(DEV).multi_processor_count
    rec = {"device": torch.cuda.get_device_name(), "triton": triton.__version__}
    try:
        if "decode" in args.only:
            run_decode(rec)
        if "prefill" in args.only:
            run_prefill(rec, sms)
    except Exception:  # noqa: BLE001
        traceback.print_exc()
    with open(os.path.join(args.out, "variants.json"), "w") as f:
        json.dump(rec, f, indent=1)


if __name__ == "__main__":
    main()
