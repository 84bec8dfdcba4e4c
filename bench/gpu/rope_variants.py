#!/usr/bin/env python3
"""Which Triton form of rotate_half RoPE reaches the copy bandwidth (an experiment).

    python3 bench/gpu/rope_variants.py [--tokens 4096,32]

The q of a Llama-3-8B layer as the projection writes it ([T, 32 * 128]
bf16), rotated into [32, T, 128] with cos and sin [T, 128]. Forms:
  tfc      the q kernel tfc emits (bench/gpu/out/rope_4096.py, rope_k0)
  tfc-flat the q kernel of an older tfc (--flat FILE), one flat block
           whose lanes evaluate both stretches under masks
  where    flat, q read once in place and its partner half gathered, one store
  masked   flat, the partner half as two masked loads (Inductor's form), one store
  halves   2-D [R, 64] blocks: each row's two halves loaded once, two stores
  copy     torch copy of the same bytes (the bandwidth to reach)
Times: do_bench with L2 flushed (prefill) or CUDA-graph replay (decode),
the fastest of 5 rounds, and the error against a float64 reference.
"""
import argparse
import importlib.util
import os

import torch
import triton
import triton.language as tl
from triton.testing import do_bench, do_bench_cudagraph

HERE = os.path.dirname(os.path.abspath(__file__))


@triton.jit
def rope_where(q, cos, sin, out, total, T: tl.constexpr, H: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < total
    i = offs % 128
    r = offs // 128
    t = r % T
    h = r // T
    base = t * (H * 128) + h * 128
    lo = i < 64
    x = tl.load(q + base + i, mask=m).to(tl.float32)
    p = tl.load(q + base + tl.where(lo, i + 64, i - 64), mask=m).to(tl.float32)
    c = tl.load(cos + t * 128 + i, mask=m).to(tl.float32)
    s = tl.load(sin + t * 128 + i, mask=m).to(tl.float32)
    o = x * c + tl.where(lo, -p, p) * s
    tl.store(out + offs, o.to(tl.bfloat16), mask=m)


@triton.jit
def rope_masked(q, cos, sin, out, total, T: tl.constexpr, H: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < total
    i = offs % 128
    r = offs // 128
    t = r % T
    h = r // T
    base = t * (H * 128) + h * 128
    lo = i < 64
    x = tl.load(q + base + i, mask=m).to(tl.float32)
    p1 = tl.load(q + base + 64 + i, mask=m & lo, other=0.0).to(tl.float32)
    p2 = tl.load(q + base + (i - 64), mask=m & (i >= 64), other=0.0).to(tl.float32)
    c = tl.load(cos + t * 128 + i, mask=m).to(tl.float32)
    s = tl.load(sin + t * 128 + i, mask=m).to(tl.float32)
    o = x * c + tl.where(lo, -p1, p2) * s
    tl.store(out + offs, o.to(tl.bfloat16), mask=m)


@triton.jit
def rope_halves(q, cos, sin, out, nrows, T: tl.constexpr, H: tl.constexpr, R: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * R + tl.arange(0, R)[:, None]
    j = tl.arange(0, 64)[None, :]
    m = rows < nrows
    t = rows % T
    h = rows // T
    base = t * (H * 128) + h * 128
    x1 = tl.load(q + base + j, mask=m).to(tl.float32)
    x2 = tl.load(q + base + 64 + j, mask=m).to(tl.float32)
    cb = t * 128 + j
    c1 = tl.load(cos + cb, mask=m).to(tl.float32)
    c2 = tl.load(cos + cb + 64, mask=m).to(tl.float32)
    s1 = tl.load(sin + cb, mask=m).to(tl.float32)
    s2 = tl.load(sin + cb + 64, mask=m).to(tl.float32)
    ob = rows * 128 + j
    tl.store(out + ob, (x1 * c1 - x2 * s1).to(tl.bfloat16), mask=m)
    tl.store(out + ob + 64, (x2 * c2 + x1 * s2).to(tl.bfloat16), mask=m)


def load_tfc(path):
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", default="4096,32")
    ap.add_argument("--flat", help="an older tfc's rope_4096.py, whose rope_k0 is one flat block")
    a = ap.parse_args()
    tfc = load_tfc(os.path.join(HERE, "out", "rope_4096.py"))
    flat = load_tfc(a.flat) if a.flat else None
    H = 32
    for T in [int(s) for s in a.tokens.split(",")]:
        torch.manual_seed(0)
        q = torch.randn(T, H * 128, device="cuda", dtype=torch.bfloat16)
        ang = torch.rand(T, 64, device="cuda") * 100
        emb = torch.cat([ang, ang], -1)
        cos, sin = emb.cos().bfloat16(), emb.sin().bfloat16()
        qd = q.double().view(T, H, 128).transpose(0, 1)
        rot = torch.cat([-qd[..., 64:], qd[..., :64]], -1)
        ref = qd * cos.double() + rot * sin.double()
        out = torch.empty(H, T, 128, device="cuda", dtype=torch.bfloat16)
        total = out.numel()
        nbytes = 2 * q.numel() * 2 + 2 * cos.numel() * 2
        forms = {}
        if T == 4096:
            cfg = dict(tfc.CONFIGS["rope_k0"])
            grid = (triton.cdiv(H * T, cfg.get("ROWS", 1)),)
            forms["tfc"] = lambda: tfc.rope_k0[grid](cos, sin, q, out, **cfg)
            if flat is not None:
                forms["tfc-flat"] = lambda: flat.rope_k0[(triton.cdiv(total, 1024),)](
                    cos, sin, q, out, total, BLOCK=1024, WIDE=False)
        for blk, w in ((512, 4), (1024, 4), (2048, 8)):
            forms["where B%d w%d" % (blk, w)] = (lambda blk=blk, w=w: rope_where[(triton.cdiv(total, blk),)](
                q, cos, sin, out, total, T=T, H=H, BLOCK=blk, num_warps=w))
            forms["masked B%d w%d" % (blk, w)] = (lambda blk=blk, w=w: rope_masked[(triton.cdiv(total, blk),)](
                q, cos, sin, out, total, T=T, H=H, BLOCK=blk, num_warps=w))
        for r, w in ((4, 1), (8, 2), (16, 4), (32, 4), (64, 8)):
            forms["halves R%d w%d" % (r, w)] = (lambda r=r, w=w: rope_halves[(triton.cdiv(H * T, r),)](
                q, cos, sin, out, H * T, T=T, H=H, R=r, num_warps=w))
        qc = torch.empty_like(q)
        forms["copy"] = lambda: qc.copy_(q)
        best = {}
        for n, f in forms.items():
            f()
            torch.cuda.synchronize()
            if n != "copy":
                err = ((out.double() - ref).abs().max() / ref.abs().max()).item()
                assert err < 1e-2, (n, err)
        for _ in range(5):
            for n, f in forms.items():
                if T >= 1024:
                    ms = do_bench(f, warmup=10, rep=50)
                else:
                    ms = do_bench_cudagraph(f, rep=50)
                best[n] = min(best.get(n, 1e9), ms)
        cp = best.pop("copy")
        cbw = 2 * q.numel() * 2 / cp / 1e9
        print("T=%d, %.1f MB ideal; copy of q %.2f us (%.2f TB/s)" % (T, nbytes / 1e6, cp * 1e3, cbw))
        for n, ms in sorted(best.items(), key=lambda kv: kv[1]):
            bw = nbytes / ms / 1e9
            print("  %-18s %8.2f us  %.2f TB/s  %.2f of copy" % (n, ms * 1e3, bw, bw / cbw), flush=True)


if __name__ == "__main__":
    main()
