#!/usr/bin/env python3
"""TensorForge's Triton kernels on the GPU, against PyTorch, in one process.

    python3 bench/gpu/run.py --commit HASH [--quick] [--only NAME,...] [--tune] [--out DIR]

For every workload (bench/gpu/workloads/*.tir, compiled by build.sh into
bench/gpu/out/<module>.py): the same random inputs go to our kernels, to
PyTorch eager and to torch.compile (the better of its `default` and
`max-autotune-no-cudagraphs` modes, as torch_baseline.py measures it);
outputs are checked against a float64 reference of the program (and, for
logaddexp, softmax, logsumexp and quantize, on extreme inputs too: +-1e4,
+-inf, NaN); times are medians of triton.testing.do_bench. A copy of 1 GiB
measured in the same run gives the bandwidth ceiling, and a copy of each
kernel's own bytes the ceiling at its size (/cpyN); TB/s count the ideal
bytes (every input read once, every output written once). Decode shapes
(1 and 32 rows) are bound by launch latency: they are reported in
microseconds per call from Python (calls back to back, the best of five
loops of 100), with our GPU time alone from CUDA-graph replay beside.

Each workload runs in its own try/except: one failure is reported and the
others still run. A table goes to standard output, the figures to
$OUT/results.json (or --out DIR, or bench/gpu/out/results.json).

--quick skips torch.compile's max-autotune mode; --only runs the named
workloads (a comma list; a name ending in '*' is a prefix); --tune also
times every kernel under other launch configurations (ROWS, num_warps,
BLOCK) and reports the best; --modules DIR loads the modules from DIR
(another build to compare).
"""
import argparse
import datetime
import importlib.util
import json
import math
import os
import sys
import time
import traceback

import torch
import torch.nn.functional as F
import triton
from triton.testing import do_bench, do_bench_cudagraph

HERE = os.path.dirname(os.path.abspath(__file__))
MODULES = os.path.join(HERE, "out")
DEV = "cuda"
BF = torch.bfloat16


# ---------------------------------------------------------------------------
# References: the programs in float64, rounding where the program's types
# round (a bf16 tensor of the program is rounded to bf16 here too), so that
# the comparison measures our arithmetic, not the program's definition.

def rb(t):
    """t rounded to bf16, kept in float64."""
    return t.to(BF).double()


def rmsnorm64(x, w, eps=1e-5):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def ref_add_rmsnorm(x, r, w):
    h = rb(x + r)
    return h, rmsnorm64(h, w)


def ref_rms_silu_mul(x, w, z):
    n = rb(rmsnorm64(x, w))
    return (rb(F.silu(n)) * z,)


def ref_swiglu(g, u):
    return (rb(F.silu(g)) * u,)


def ref_channel_scale(x):
    return ((x.abs().amax(0) / 127.0).clamp_min(1e-5),)


def ref_softmax(s):
    return (torch.softmax(s, -1),)


def ref_logsumexp(s):
    return (torch.logsumexp(s, -1),)


def ref_cross_entropy(x, t):
    return ((torch.logsumexp(x, -1, keepdim=True) - torch.gather(x, -1, t.long())),)


def ref_logaddexp(a, b):
    return (torch.logaddexp(a, b),)


def ref_quantize(x, scale=0.5, zp=128):
    q = torch.clamp(torch.round(x / scale) + zp, 0, 255)  # round half to even
    return (torch.where(torch.isnan(x), torch.full_like(x, zp), q),)


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def rope_heads(x, heads, cos, sin):
    # transformers' apply_rotary_pos_emb on a projection viewed as heads
    b, t, _ = x.shape
    xh = x.view(b, t, heads, -1).transpose(1, 2)
    c, s = cos.unsqueeze(1), sin.unsqueeze(1)
    return xh * c + rotate_half(xh) * s


def ref_rope(q, k, cos, sin):
    return rope_heads(q, 32, cos, sin), rope_heads(k, 8, cos, sin)


# PyTorch eager forms, as torch_baseline.py writes them.

def rmsnorm_eager(x, w, eps=1e-5):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def eager_add_rmsnorm(x, r, w):
    s = x + r
    return s, rmsnorm_eager(s, w)


def eager_rms_silu_mul(x, w, z):
    return F.silu(rmsnorm_eager(x, w)) * z


def eager_swiglu(g, u):
    return F.silu(g) * u


def eager_channel_scale(x):
    return (x.float().abs().amax(0) / 127.0).clamp_min(1e-5)


def eager_softmax(s):
    return torch.softmax(s.float(), -1).to(BF)


def eager_logsumexp(s):
    return torch.logsumexp(s.float(), -1)


def eager_cross_entropy(x, t):
    return F.cross_entropy(x.float(), t[:, 0], reduction="none")[:, None]


def eager_rope(q, k, cos, sin):
    return rope_heads(q, 32, cos, sin), rope_heads(k, 8, cos, sin)


def make_rope(t):
    def make():
        ang = torch.rand(1, t, 64, device=DEV, dtype=torch.float32) * 1000.0
        ang = torch.cat((ang, ang), dim=-1)
        return randn(1, t, 4096), randn(1, t, 1024), ang.cos().to(BF), ang.sin().to(BF)
    return make


def eager_kv_append_rope(past, k, cos, sin):
    # DynamicCache's update at a decode step: the rotated key of the new
    # token concatenated to the cache along the tokens
    return torch.cat([past, rope_heads(k, 8, cos, sin)], dim=-2)


def ref_kv_append_rope(past, k, cos, sin):
    return (torch.cat([past, rope_heads(k, 8, cos, sin)], dim=-2),)


def make_kv_append_rope():
    ang = torch.rand(1, 1, 64, device=DEV, dtype=torch.float32) * 1000.0
    ang = torch.cat((ang, ang), dim=-1)
    return randn(1, 8, 2048, 128), randn(1, 1, 1024), ang.cos().to(BF), ang.sin().to(BF)


def eager_k_norm(k, w):
    # Qwen3's k_norm as transformers writes it, then the attention layout
    x = k.view(1, -1, 8, 128).float()
    x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    return (w * x.to(k.dtype)).transpose(1, 2).contiguous()


def ref_k_norm(k, w):
    return (rmsnorm64(k.view(1, -1, 8, 128), w, 1e-6).transpose(1, 2),)


def gqa_keys(k):
    # the 8 key heads broadcast over the 4 query heads of each, as repeat_kv
    return k.expand(8, 4, 2048, 128).reshape(32, 2048, 128)


def eager_gqa_scores(q, k, m):
    s = torch.matmul(q, gqa_keys(k).transpose(-1, -2)) + m
    return torch.softmax(s.float(), -1).to(BF)


def ref_gqa_scores(q, k, m):
    s = torch.matmul(q, gqa_keys(k).transpose(-1, -2)) + m
    return (torch.softmax(s, -1),)


def make_gqa_scores():
    m = torch.zeros(1, 2048, device=DEV)
    m[:, 2000:] = -float("inf")  # a cache not yet full
    return randn(32, 1, 128, scale=128**-0.5), randn(8, 1, 2048, 128), m.to(BF)


def eager_logaddexp(a, b):
    return torch.logaddexp(a, b)


def eager_quantize(x, scale: float = 0.5, zp: int = 128):
    return torch.clamp(torch.round(x / scale) + zp, 0, 255).to(torch.uint8)


# ---------------------------------------------------------------------------
# Tolerances, per output dtype. bf16 keeps 8 significant bits: a correctly
# rounded result is within 2^-8 of the exact one, relatively; the chains
# round up to three times (2^-6 leaves room for that and for f32 arithmetic
# in between), and silu amplifies a rounding of its input where its output
# is small (x << 0), which the absolute floor of 2^-8 of the output's RMS
# covers. f32 results of a few dozen f32 operations (with the GPU's
# approximate exp and log, a few ulp each) are held to 2^-17 relatively;
# ui8 results must be exact.

TOLERANCE = {
    torch.bfloat16: (2.0**-6, 2.0**-8),
    torch.float32: (2.0**-17, 2.0**-17),
    torch.uint8: (0.0, 0.0),
    torch.float64: (2.0**-40, 2.0**-40),
}


def compare(got, ref):
    """Checks got against the float64 reference: the non-finite values
    must match exactly, the finite ones within the tolerance of got's
    dtype. Returns a dict of findings."""
    rtol, afrac = TOLERANCE[got.dtype]
    g = got.double()
    r = ref.double()
    finite = torch.isfinite(r)
    inf = torch.isinf(r)
    nonfinite_ok = bool(torch.equal(torch.isnan(g), torch.isnan(r)) and torch.equal(g[inf], r[inf]))
    rf = r[finite]
    gf = g[finite]
    scale = rf.pow(2).mean().sqrt().item() if rf.numel() else 0.0
    atol = afrac * scale
    err = (gf - rf).abs()
    bound = rtol * rf.abs() + atol
    bad = int((err > bound).sum().item()) + int((~torch.isfinite(gf)).sum().item())
    rel = (err / (rf.abs() + scale)).max().item() if rf.numel() else 0.0
    return {"ok": bad == 0 and nonfinite_ok, "violations": bad, "nonfinite_match": nonfinite_ok,
            "max_err": err.max().item() if err.numel() else 0.0, "max_rel_to_scale": rel,
            "rtol": rtol, "atol": atol, "elements": r.numel()}


def check_outputs(outs, refs):
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    if len(outs) != len(refs):
        raise RuntimeError(f"{len(outs)} outputs, the reference has {len(refs)}")
    return [compare(o, r) for o, r in zip(outs, refs)]


# ---------------------------------------------------------------------------
# Workloads

class Workload:
    def __init__(self, name, module, func, make, eager, ref, extremes=None, decode=False):
        self.name, self.module, self.func = name, module, func
        self.make, self.eager, self.ref = make, eager, ref
        self.extremes, self.decode = extremes, decode


def randn(*shape, dtype=BF, scale=1.0):
    return (torch.randn(*shape, device=DEV, dtype=torch.float32) * scale).to(dtype)


def make_add_rmsnorm(t, d):
    return lambda: (randn(t, d), randn(t, d), randn(d))


def make_rms_chain(t, d):
    return lambda: (randn(t, d), randn(d), randn(t, d))


def extreme_rows(d, dtype=BF):
    """Rows of the extreme cases for softmax and logsumexp."""
    rows = torch.randn(8, d, device=DEV) * 50
    rows[0] = -1e4
    rows[0, 7] = 1e4                   # one spike, the rest 2e4 below
    rows[1] = -float("inf")            # all -inf
    rows[2, 3] = float("inf")          # one +inf
    rows[3, 5] = float("nan")          # one NaN
    rows[4] = 1e4                      # all equal and large
    rows[5, ::2] = -float("inf")       # half -inf
    rows[6] = -1e4
    rows[6, 1] = 0.0
    return (rows.to(dtype),)


def extreme_pairs():
    inf, nan = float("inf"), float("nan")
    pairs = [(1e4, 1e4), (1e4, -1e4), (inf, inf), (-inf, -inf), (inf, -inf), (-inf, inf), (nan, 1.0),
             (1.0, nan), (-inf, 5.0), (5.0, -inf), (88.8, 88.8), (89.0, 88.0), (-1e4, -1e4 + 1),
             (3e38, 3e38), (-3e38, 3e38), (0.0, -0.0), (1e-40, 1e-40), (-100.0, 100.0)]
    a = torch.tensor([p[0] for p in pairs], device=DEV, dtype=torch.float32)
    b = torch.tensor([p[1] for p in pairs], device=DEV, dtype=torch.float32)
    return (a, b)


def extreme_quant():
    inf, nan = float("inf"), float("nan")
    vals = [-1e4, 1e4, inf, -inf, nan, 63.75, 63.25, -64.25, 0.25, 0.75, -0.25, -0.75, 127.5, -65.0,
            1e30, -1e30, 1e-40, -0.0, 63.5, -64.0, 2.5, 3.5, 1.25]
    return (torch.tensor(vals, device=DEV, dtype=torch.float32),)


N64 = 2**26

WORKLOADS = []
for T, D in [(4096, 8192), (16384, 8192), (4096, 5120), (4096, 14336)]:
    WORKLOADS.append(Workload(f"add_rmsnorm_{T}x{D}", f"add_rmsnorm_{D}", "add_rmsnorm",
                              make_add_rmsnorm(T, D), eager_add_rmsnorm, ref_add_rmsnorm))
    WORKLOADS.append(Workload(f"rms_silu_mul_{T}x{D}", f"rms_silu_mul_{D}", "rms_silu_mul",
                              make_rms_chain(T, D), eager_rms_silu_mul, ref_rms_silu_mul))
WORKLOADS += [
    Workload("swiglu_4096x28672", "swiglu_28672", "swiglu",
             lambda: (randn(4096, 28672), randn(4096, 28672)), eager_swiglu, ref_swiglu),
    Workload("softmax_32768x4096", "softmax_4096", "softmax",
             lambda: (randn(32768, 4096, scale=50.0),), eager_softmax, ref_softmax,
             extremes=lambda: extreme_rows(4096)),
    Workload("logsumexp_32768x4096", "logsumexp_4096", "logsumexp",
             lambda: (randn(32768, 4096, scale=50.0),), eager_logsumexp, ref_logsumexp,
             extremes=lambda: extreme_rows(4096)),
    Workload("logaddexp_64M", "logaddexp", "logaddexp",
             lambda: (randn(N64, dtype=torch.float32, scale=100.0), randn(N64, dtype=torch.float32, scale=100.0)),
             eager_logaddexp, ref_logaddexp, extremes=extreme_pairs),
    Workload("quantize_64M", "quantize", "quantize",
             lambda: (randn(N64, dtype=torch.float32, scale=100.0),), eager_quantize, ref_quantize,
             extremes=extreme_quant),
]
# long rows (vocabularies of logits): 4096 rows, and 1, 4 and 16 rows
for D in (32000, 256000):
    for op, eager, ref in (("softmax", eager_softmax, ref_softmax), ("logsumexp", eager_logsumexp, ref_logsumexp)):
        WORKLOADS.append(Workload(f"{op}_4096x{D}", f"{op}_{D}", op, (lambda D=D: (randn(4096, D, scale=50.0),)),
                                  eager, ref, extremes=(lambda D=D: extreme_rows(D))))
        for T in (1, 4, 16):
            WORKLOADS.append(Workload(f"decode_{op}_{T}x{D}", f"{op}_{D}", op, (lambda T=T, D=D: (randn(T, D, scale=50.0),)),
                                      eager, ref, decode=True))
# the same softmax as a resident split (not the default; build.sh): a row of
# 256000 across a group of programs that each keep their split on chip
WORKLOADS.append(Workload("softmax_resident_4096x256000", "softmax_256000_resident", "softmax",
                          lambda: (randn(4096, 256000, scale=50.0),), eager_softmax, ref_softmax,
                          extremes=lambda: extreme_rows(256000)))
# cross-entropy over Qwen's vocabulary: per-row losses
for T in (4096, 1, 16):
    WORKLOADS.append(Workload(("decode_" if T < 4096 else "") + f"cross_entropy_{T}x151936", "cross_entropy_151936",
                              "cross_entropy",
                              (lambda T=T: (randn(T, 151936, scale=5.0),
                                            torch.randint(0, 151936, (T, 1), device=DEV, dtype=torch.int64))),
                              eager_cross_entropy, ref_cross_entropy, decode=T < 4096))
# rotary embeddings on the q and k of Llama-3-8B (32 and 8 heads of 128):
# prefill and a decode step of 32 sequences
for T in (4096, 32):
    WORKLOADS.append(Workload(("decode_" if T < 4096 else "") + f"rope_{T}", f"rope_{T}", "rope", make_rope(T),
                              eager_rope, ref_rope, decode=T < 4096))
# Qwen3's per-head key norm, stored transposed to [1, heads, T, 128]: a
# prefill and a decode step of 32 sequences
for T in (4096, 32):
    WORKLOADS.append(Workload(("decode_" if T < 4096 else "") + f"k_norm_{T}", "k_norm", "k_norm",
                              (lambda T=T: (randn(1, T, 1024), randn(128))), eager_k_norm, ref_k_norm,
                              decode=T < 4096))
# a decode step's key-cache append (torch.cat along the tokens) of the
# rotated key: one kernel of two parts, the cache's rows and the new one
WORKLOADS.append(Workload("decode_kv_append_rope_2048", "kv_append_rope", "kv_append_rope", make_kv_append_rope,
                          eager_kv_append_rope, ref_kv_append_rope, decode=True))
# per-channel int8 scales over the tokens (a reduce kernel over the first axis)
WORKLOADS.append(Workload("channel_scale_4096x4096", "channel_scale", "channel_scale",
                          lambda: (randn(4096, 4096, scale=3.0),), eager_channel_scale, ref_channel_scale))
# the scores of grouped-query attention at a decode step: q.k^T over keys
# broadcast to the query heads, masked, softmax (one row kernel)
WORKLOADS.append(Workload("decode_gqa_scores_32x2048", "gqa_scores", "gqa_scores", make_gqa_scores,
                          eager_gqa_scores, ref_gqa_scores, decode=True))
for T in (1, 32):
    for D in (8192, 5120, 14336):
        WORKLOADS.append(Workload(f"decode_add_rmsnorm_{T}x{D}", f"add_rmsnorm_{D}", "add_rmsnorm",
                                  make_add_rmsnorm(T, D), eager_add_rmsnorm, ref_add_rmsnorm, decode=True))
        WORKLOADS.append(Workload(f"decode_rms_silu_mul_{T}x{D}", f"rms_silu_mul_{D}", "rms_silu_mul",
                                  make_rms_chain(T, D), eager_rms_silu_mul, ref_rms_silu_mul, decode=True))


# ---------------------------------------------------------------------------
# Measuring

_modules = {}


def load(module):
    if module not in _modules:
        path = os.path.join(MODULES, module + ".py")
        spec = importlib.util.spec_from_file_location("tensorforge_" + module, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        _modules[module] = mod
    return _modules[module]


def bench(fn, decode):
    """Milliseconds of one call. Large shapes: the median of do_bench (L2
    flushed before each call). Decode shapes, bound by launch latency: the
    wall-clock time of a call from Python, calls back to back (the best of
    five loops of 100), which is what a decode step pays."""
    if not decode:
        return do_bench(fn, warmup=25, rep=200, return_mode="median")
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(100):
            fn()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t0) * 1e3 / 100)
    return best


def bench_graph(fn):
    """Milliseconds of GPU time of one call, replayed from a CUDA graph (no
    launch overhead); None when the call cannot be captured."""
    try:
        return do_bench_cudagraph(fn, rep=50, return_mode="median")
    except Exception as e:
        print(f"  CUDA graph: {type(e).__name__}: {e}", flush=True)
        torch.cuda.synchronize()
        return None


def tb_per_s(nbytes, ms):
    return nbytes / (ms * 1e-3) / 1e12


def nbytes(ts):
    return sum(t.numel() * t.element_size() for t in ts)


def as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def time_compile(fn, args, modes, decode):
    out = {}
    for mode in modes:
        try:
            torch._dynamo.reset()
            cfn = torch.compile(fn, mode=mode)
            cfn(*args)
            torch.cuda.synchronize()
            out[mode] = bench(lambda: cfn(*args), decode)
            if decode:
                # its GPU time alone, replayed from a CUDA graph
                out[mode + " (CUDA graph)"] = bench_graph(lambda: cfn(*args))
        except Exception as e:  # a compile failure is a finding, not a stop
            out[mode] = None
            print(f"  torch.compile {mode}: {type(e).__name__}: {e}", flush=True)
    torch._dynamo.reset()
    return out


def tune_configs(mod, kname, cfg):
    """Launch configurations to try for one kernel."""
    out = []
    if "PERSIST" in cfg:
        # a row kernel of one block: persistent programs (PERSIST per
        # multiprocessor) pipelined STAGES deep, then other warps
        w0 = cfg["num_warps"]
        for persist, stages in ((0, 1), (1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (2, 3), (4, 2)):
            out.append(dict(cfg, PERSIST=persist, STAGES=stages))
        for warps in sorted({max(1, w0 // 2), min(32, w0 * 2)} - {w0}):
            out.append(dict(cfg, num_warps=warps, PERSIST=0, STAGES=1))
            out.append(dict(cfg, num_warps=warps, PERSIST=2, STAGES=2))
        if cfg["ROWS"] * cfg["BLOCK"] * 2 <= 32768:
            out.append(dict(cfg, ROWS=cfg["ROWS"] * 2, PERSIST=2, STAGES=2))
        return out
    if "ROWS" in cfg:
        for rows in (1, 2, 4, 8, 16):
            if rows * cfg["BLOCK"] > 32768:
                continue
            for warps in (4, 8, 16, 32):
                out.append(dict(cfg, ROWS=rows, num_warps=warps))
    else:
        for block in (1024, 2048, 4096, 8192):
            for warps in (4, 8, 16):
                out.append(dict(cfg, BLOCK=block, num_warps=warps))
    return out


def tune(w, mod, args, decode):
    """Times the workload's function under every configuration of each of
    its kernels (one kernel at a time), restoring the emitted one."""
    results = {}
    fn = getattr(mod, w.func)
    want = as_tuple(fn(*args))  # every configuration must give these bits
    for kname, cfg in list(mod.CONFIGS.items()):
        best = None
        trials = []
        for c in tune_configs(mod, kname, cfg):
            mod.CONFIGS[kname] = c
            same = None
            try:
                got = as_tuple(fn(*args))
                torch.cuda.synchronize()
                same = all(torch.equal(a, b) for a, b in zip(got, want))
                if not same:
                    print(f"  tune {kname} {c}: results differ from the emitted configuration's", flush=True)
                ms = bench(lambda: fn(*args), decode)
            except Exception as e:
                ms = None
                print(f"  tune {kname} {c}: {type(e).__name__}: {e}", flush=True)
            trials.append({"config": c, "ms": ms, "same": same})
            if ms is not None and same and (best is None or ms < best["ms"]):
                best = {"config": c, "ms": ms}
        mod.CONFIGS[kname] = cfg
        results[kname] = {"emitted": cfg, "best": best, "trials": trials}
        if best:
            print(f"  tune {kname}: best {best['config']} {best['ms'] * 1e3:.1f} us", flush=True)
    return results


def run_workload(w, args, predicted, copy_tbs):
    rec = {"name": w.name, "decode": w.decode}
    torch.manual_seed(0)
    mod = load(w.module)
    fn = getattr(mod, w.func)
    inputs = w.make()
    ideal_in = nbytes(inputs)

    # correctness on random inputs, ours and eager against the reference
    ours = as_tuple(fn(*inputs))
    torch.cuda.synchronize()
    refs = w.ref(*[x.double() for x in inputs])
    rec["check"] = check_outputs(ours, refs)
    rec["check_eager"] = check_outputs(as_tuple(w.eager(*inputs)), refs)
    ideal = ideal_in + nbytes(ours)
    rec["ideal_bytes"] = ideal
    if w.name in predicted:
        rec["predicted_bytes"] = predicted[w.name]
    del refs
    if w.extremes is not None:
        ext = w.extremes()
        rec["check_extremes"] = check_outputs(as_tuple(fn(*ext)), w.ref(*[x.double() for x in ext]))
        rec["check_extremes_eager"] = check_outputs(as_tuple(w.eager(*ext)), w.ref(*[x.double() for x in ext]))
    rec["ok"] = all(c["ok"] for c in rec["check"] + rec.get("check_extremes", []))

    # times
    rec["ours_ms"] = bench(lambda: fn(*inputs), w.decode)
    rec["eager_ms"] = bench(lambda: w.eager(*inputs), w.decode)
    modes = ["default"] if (args.quick or w.decode) else ["default", "max-autotune-no-cudagraphs"]
    rec["compile_modes_ms"] = time_compile(w.eager, inputs, modes, w.decode)
    if w.decode:
        rec["ours_graph_ms"] = bench_graph(lambda: fn(*inputs))
        rec["eager_graph_ms"] = bench_graph(lambda: w.eager(*inputs))
    times = [t for m, t in rec["compile_modes_ms"].items() if t is not None and "graph" not in m]
    if w.decode:
        g = [t for m, t in rec["compile_modes_ms"].items() if t is not None and "graph" in m]
        rec["compile_graph_ms"] = min(g) if g else None
        if rec["compile_graph_ms"] and rec.get("ours_graph_ms"):
            rec["ours_graph_over_compile_graph"] = rec["compile_graph_ms"] / rec["ours_graph_ms"]
    rec["compile_ms"] = min(times) if times else None
    for k in ("ours", "eager", "compile"):
        ms = rec[k + "_ms"]
        rec[k + "_TBs"] = tb_per_s(ideal, ms) if ms else None
    rec["ours_over_compile"] = rec["compile_ms"] / rec["ours_ms"] if rec["compile_ms"] else None
    rec["ours_over_eager"] = rec["eager_ms"] / rec["ours_ms"]
    rec["ours_over_copy"] = rec["ours_TBs"] / copy_tbs if copy_tbs else None
    if not w.decode:
        # a copy that moves the kernel's ideal bytes: small transfers do not
        # reach the 1 GiB copy's rate (a launch's ramp and tail are a larger
        # share of them), so this is the ceiling at the kernel's size
        rec["copy_same_ms"] = measure_copy(ideal // 2)["ms"]
        rec["ours_over_copy_same"] = rec["copy_same_ms"] / rec["ours_ms"]
    if args.tune:
        rec["tune"] = tune(w, mod, inputs, w.decode)
    del inputs, ours
    return rec


def measure_copy(n=2**30):
    """A device-to-device copy of n bytes (read n, write n)."""
    a = torch.empty(n, dtype=torch.uint8, device=DEV)
    b = torch.empty_like(a)
    ms = do_bench(lambda: b.copy_(a), warmup=25, rep=200, return_mode="median")
    del a, b
    return {"ms": ms, "TBs": tb_per_s(2 * n, ms)}


def selected(args):
    if not args.only:
        return WORKLOADS
    pats = [p.strip() for p in args.only.split(",") if p.strip()]
    out = []
    for w in WORKLOADS:
        for p in pats:
            if w.name == p or (p.endswith("*") and w.name.startswith(p[:-1])):
                out.append(w)
                break
    if not out:
        sys.exit("run.py: --only matches no workload; known: " + ", ".join(w.name for w in WORKLOADS))
    return out


def fmt(x, spec):
    return format(x, spec) if isinstance(x, (int, float)) else "-"


def print_table(records, copy):
    print()
    print(f"copy 1 GiB: {copy['TBs']:.2f} TB/s (read + write)")
    head = f"{'workload':30s} {'ok':4s} {'ours':>9s} {'eager':>9s} {'compile':>9s} {'ours':>6s} {'eager':>6s} {'comp.':>6s} {'/comp':>6s} {'/eager':>6s} {'/copy':>6s}"
    head += f" {'/cpyN':>6s}"
    print(head + "   (ms, then TB/s, then ratios: > 1 means ours is faster; /copy is ours over the 1 GiB copy's rate, "
          "/cpyN over a copy of the kernel's own bytes)")
    print(f"{'':35s}(decode: microseconds per call from Python, calls back to back; the first two TB/s columns hold our and torch.compile's GPU time from a CUDA graph)")
    for r in records:
        if "error" in r:
            print(f"{r['name']:30s} FAIL {r['error'].splitlines()[-1][:100]}")
            continue
        ok = "ok" if r["ok"] else "BAD"
        if r["decode"]:
            g, cg = r.get("ours_graph_ms"), r.get("compile_graph_ms")
            print(f"{r['name']:30s} {ok:4s} {fmt(r['ours_ms'] * 1e3, '8.1f')}u {fmt(r['eager_ms'] * 1e3, '8.1f')}u "
                  f"{fmt(r['compile_ms'] and r['compile_ms'] * 1e3, '8.1f')}u {fmt(g and g * 1e3, '5.1f')}u {fmt(cg and cg * 1e3, '5.1f')}u {'':>6s} "
                  f"{fmt(r['ours_over_compile'], '6.2f')} {fmt(r['ours_over_eager'], '6.2f')}  GPU time ours/compile: "
                  f"{fmt(r.get('ours_graph_over_compile_graph'), '6.2f')}")
            continue
        print(f"{r['name']:30s} {ok:4s} {fmt(r['ours_ms'], '9.3f')} {fmt(r['eager_ms'], '9.3f')} {fmt(r['compile_ms'], '9.3f')} "
              f"{fmt(r['ours_TBs'], '6.2f')} {fmt(r['eager_TBs'], '6.2f')} {fmt(r['compile_TBs'], '6.2f')} "
              f"{fmt(r['ours_over_compile'], '6.2f')} {fmt(r['ours_over_eager'], '6.2f')} {fmt(r['ours_over_copy'], '6.2f')} "
              f"{fmt(r.get('ours_over_copy_same'), '6.2f')}")
    bad = [r for r in records if "error" in r or not r.get("ok")]
    for r in bad:
        if "error" in r:
            continue
        for key in ("check", "check_extremes"):
            for i, c in enumerate(r.get(key, [])):
                if not c["ok"]:
                    print(f"  {r['name']} {key} output {i}: {c['violations']} of {c['elements']} beyond tolerance, "
                          f"non-finite match {c['nonfinite_match']}, max error {c['max_err']:.3g}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commit", default="unknown", help="the commit the modules were built from")
    ap.add_argument("--quick", action="store_true", help="skip torch.compile's max-autotune-no-cudagraphs mode")
    ap.add_argument("--only", help="comma list of workloads (NAME or PREFIX*)")
    ap.add_argument("--tune", action="store_true", help="also time other launch configurations of our kernels")
    ap.add_argument("--out", help="directory for results.json (default $OUT, else bench/gpu/out)")
    ap.add_argument("--modules", help="directory of the compiled modules (default bench/gpu/out)")
    args = ap.parse_args()
    global MODULES
    if args.modules:
        MODULES = os.path.abspath(args.modules)

    start = time.time()
    torch.manual_seed(0)
    predicted = {}
    ppath = os.path.join(MODULES, "predicted.json")
    if os.path.exists(ppath):
        with open(ppath) as f:
            predicted = json.load(f)
    copy = measure_copy()
    print(f"{torch.cuda.get_device_name()}: torch {torch.__version__}, triton {triton.__version__}; "
          f"copy 1 GiB {copy['TBs']:.2f} TB/s", flush=True)
    out = args.out or os.environ.get("OUT") or MODULES
    os.makedirs(out, exist_ok=True)
    result = {
        "commit": args.commit,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "copy_1GiB": copy,
        "quick": args.quick,
        "workloads": [],
    }
    records = result["workloads"]
    for w in selected(args):
        t0 = time.time()
        try:
            rec = run_workload(w, args, predicted, copy["TBs"])
        except Exception:
            rec = {"name": w.name, "decode": w.decode, "error": traceback.format_exc()}
            print(f"{w.name}: FAILED\n{rec['error']}", flush=True)
        rec["seconds"] = time.time() - t0
        records.append(rec)
        if "error" not in rec:
            c = rec["compile_ms"]
            print(f"{w.name}: {'ok' if rec['ok'] else 'WRONG'}; ours {rec['ours_ms'] * 1e3:.1f} us, eager "
                  f"{rec['eager_ms'] * 1e3:.1f} us, compile {c * 1e3 if c else float('nan'):.1f} us "
                  f"({rec['seconds']:.0f} s)", flush=True)
        torch.cuda.empty_cache()
        # written after every workload, so that a run cut short keeps what it measured
        result["seconds"] = time.time() - start
        with open(os.path.join(out, "results.json"), "w") as f:
            json.dump(result, f, indent=1)

    print_table(records, copy)
    print(f"\n{len(records)} workloads in {result['seconds']:.0f} s; results in {os.path.join(out, 'results.json')}")
    return 0 if all("error" not in r and r.get("ok") for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
