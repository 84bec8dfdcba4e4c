#!/usr/bin/env python3
"""Checks the PTX emitter's output on a GPU: every kernel through ptxas,
then the launchers against float64 references.

    python3 gpu_check.py DIR [--only NAME,...] [--time]

DIR holds the files of the PTX emitter for this folder's .tir files, the
examples and the GPU workloads (each workload in a folder of its own):

    for f in emit/ptx/testdata/*.tir examples/*.tir; do
      tfc --emit=ptx --target=h200 -o DIR $f; done
    for f in bench/gpu/workloads/*.tir; do
      tfc --emit=ptx --target=h200 -o DIR/$(basename $f .tir) $f; done

For each function
the script prints the largest error in ULPs of the result type (or the
relative error, where noted) and the count of special values (NaN, +-inf)
that differ from the reference; a line starts with FAIL when a bound of
docs/ptx.md is exceeded.
"""
import argparse
import glob
import importlib.util
import math
import os
import subprocess
import sys
import traceback

import torch
import torch.nn.functional as F

DEV = "cuda"
torch.manual_seed(0)


def ptxas_all(out):
    ok = True
    for f in sorted(glob.glob(os.path.join(out, "**", "*.ptx"), recursive=True)):
        # (-arch=sm_90a for a module of sm_90a: a matmul on wgmma)
        arch = "sm_90a" if "\n.target sm_90a" in open(f).read() else "sm_90"
        r = subprocess.run(["ptxas", "-arch=" + arch, "-v", f, "-o", "/dev/null"], capture_output=True, text=True)
        text = r.stdout + r.stderr
        if r.returncode != 0:
            print("FAIL ptxas", os.path.basename(f))
            print(text[:4000])
            ok = False
            continue
        spills = [l for l in text.splitlines() if "spill" in l and not l.strip().endswith("0 bytes spill loads") ]
        regs = [l.split(":")[-1].strip() for l in text.splitlines() if "Used" in l]
        bad = [l for l in text.splitlines() if "bytes spill" in l and ("0 bytes spill stores, 0 bytes spill loads" not in l)]
        print("ptxas ok  ", os.path.relpath(f, out), "|", "; ".join(regs)[:300], ("SPILLS: " + " ".join(bad)) if bad else "")
    return ok


_mods = {}


def load(out, name):
    path = os.path.join(out, name + ".py")
    if path not in _mods:
        spec = importlib.util.spec_from_file_location("ptxcheck_%d" % len(_mods), path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        _mods[path] = mod
    return _mods[path]


def ulp(r, dtype):
    """Spacing of dtype at |r| (r float64)."""
    a = r.abs().to(dtype)
    a = torch.where(torch.isfinite(a), a, torch.zeros_like(a))
    up = torch.nextafter(a.float() if dtype != torch.float64 else a, torch.tensor(float("inf"), device=r.device, dtype=torch.float32 if dtype != torch.float64 else torch.float64)).double()
    if dtype in (torch.bfloat16, torch.float16):
        # spacing of the narrow type: from its bits
        info = torch.finfo(dtype)
        e = torch.floor(torch.log2(r.abs().clamp(min=info.smallest_normal)))
        mant = {torch.bfloat16: 7, torch.float16: 10}[dtype]
        return torch.pow(2.0, e - mant)
    return (up - a.double()).abs()


def compare_ulp(name, got, ref, bound, dtype=None, x=None):
    dtype = dtype or got.dtype
    g = got.double()
    r = ref.double()
    rq = r.to(dtype).double()  # the reference rounded to the type (overflow to inf)
    nan_g, nan_r = torch.isnan(g), torch.isnan(r)
    special = torch.isinf(rq) | nan_r
    mism = int((nan_g != nan_r).sum()) + int(((torch.isinf(rq)) & (g != rq)).sum())
    fin = ~special & ~nan_g
    mism += int((torch.isinf(g) & ~special).sum())
    fin = fin & torch.isfinite(g)
    err = ((g - r).abs() / ulp(r, dtype))[fin]
    worst = err.max().item() if err.numel() else 0.0
    where = ""
    if err.numel() and x is not None:
        i = torch.nonzero(fin).flatten()[err.argmax()]
        xs = [t.flatten()[i].item() for t in (x if isinstance(x, tuple) else (x,))]
        where = " at x=%s got %r ref %r" % (xs, g.flatten()[i].item(), r.flatten()[i].item())
    status = "ok  " if worst <= bound and mism == 0 else "FAIL"
    print("%s %-22s max %8.3f ULP (bound %g), %d special mismatches%s" % (status, name, worst, bound, mism, where))
    return status == "ok  "


def compare_rel(name, got, ref, bound):
    g, r = got.double(), ref.double()
    nan_ok = torch.equal(torch.isnan(g), torch.isnan(r))
    fin = torch.isfinite(r) & torch.isfinite(g)
    inf_ok = torch.equal(g[torch.isinf(r)], r[torch.isinf(r)])
    scale = r[fin].abs().max().item() if fin.any() else 1.0
    err = ((g - r).abs()[fin] / max(scale, 1e-300)).max().item() if fin.any() else 0.0
    status = "ok  " if err <= bound and nan_ok and inf_ok else "FAIL"
    print("%s %-22s max rel err %.3g (bound %g)%s" % (status, name, err, bound, "" if nan_ok and inf_ok else " SPECIALS DIFFER"))
    return status == "ok  "


def compare_exact(name, got, ref):
    g, r = got, ref
    if g.dtype.is_floating_point:
        same = (g == r) | (torch.isnan(g.float()) & torch.isnan(r.float()))
    else:
        same = g == r
    bad = int((~same).sum())
    status = "ok  " if bad == 0 else "FAIL"
    extra = ""
    if bad:
        i = torch.nonzero(~same.flatten())[0].item()
        extra = " first at %d: got %r want %r" % (i, g.flatten()[i].item(), r.flatten()[i].item())
    print("%s %-22s %d of %d differ%s" % (status, name, bad, g.numel(), extra))
    return bad == 0


def sample(n, lo=-100.0, hi=100.0, positive=False):
    """Values spread over magnitudes, plus the special ones."""
    parts = [torch.randn(n, device=DEV) * s for s in (1e-3, 0.1, 1.0, 4.0, 30.0)]
    parts.append(torch.rand(n, device=DEV) * (hi - lo) + lo)
    mags = torch.pow(10.0, torch.rand(n, device=DEV) * 76 - 38)
    parts.append(mags * torch.sign(torch.randn(n, device=DEV)))
    sp = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan"), 1.0, -1.0, 1e-40, -1e-40, 3.4e38, -3.4e38,
                       88.72, -88.72, 89.0, -104.0, 0.5, 2.0, 10.0, -10.0, 1e-7, -1e-7, 0.2554, 0.5493, 9.0, 11.0],
                      device=DEV)
    x = torch.cat(parts + [sp]).float()
    if positive:
        x = x.abs()
    return x[: x.numel() - 3]  # a length that is not a multiple of the vector width


def _neg_inf_to_neg_zero(f):
    """The reference's value at -inf for silu and gelu: -0 (the limit),
    where PyTorch's formulas give NaN (-inf * 0)."""
    return lambda x: torch.where(x == -float("inf"), torch.full_like(x, -0.0), f(x))


def _gelu_erf(x):
    # 0.5 x erfc(-x/sqrt 2): accurate in the tail, where 1 + erf cancels
    return 0.5 * x * torch.special.erfc(-x / math.sqrt(2))


def _gelu_tanh(x):
    u = math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)
    return x * torch.sigmoid(2 * u)


UNARY = {
    "exp": torch.exp, "exp2": torch.exp2, "log": torch.log, "log2": torch.log2, "log1p": torch.log1p,
    "expm1": torch.expm1, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "reciprocal": lambda x: 1 / x,
    "tanh": torch.tanh, "sigmoid": torch.sigmoid, "silu": _neg_inf_to_neg_zero(F.silu),
    "gelu": _neg_inf_to_neg_zero(_gelu_erf), "gelu_tanh": _neg_inf_to_neg_zero(_gelu_tanh), "relu": torch.relu, "sin": torch.sin, "cos": torch.cos,
    "floor": torch.floor, "ceil": torch.ceil, "round": torch.round, "neg": torch.neg, "abs": torch.abs,
}
BOUND_F32 = {"exp": 3, "exp2": 2.5, "log": 2, "log2": 2, "log1p": 4, "expm1": 4, "sqrt": 0.5, "rsqrt": 1.5,
             "reciprocal": 0.5, "tanh": 4, "sigmoid": 4, "silu": 6, "gelu": 6, "gelu_tanh": 6, "relu": 0,
             "sin": 1, "cos": 1, "floor": 0, "ceil": 0, "round": 0, "neg": 0, "abs": 0}


def run_ops(out, only):
    ok = True
    for op, ref in UNARY.items():
        name = op + "_f32"
        if only and name not in only:
            continue
        try:
            x = sample(1 << 14)
            if op in ("sin", "cos"):
                x = x[x.abs() < 1e5]
            y = call(out, name, x)
            ok &= compare_ulp(name, y, ref(x.double()), BOUND_F32[op], x=x)
        except Exception:
            print("FAIL", name)
            traceback.print_exc()
            ok = False
    for op in ("exp", "tanh", "sigmoid", "silu"):
        for t, dt in (("bf16", torch.bfloat16), ("f16", torch.float16)):
            name = op + "_" + t
            if only and name not in only:
                continue
            try:
                x = sample(1 << 14)
                y = call(out, name, x)
                ok &= compare_ulp(name, y, UNARY[op](x.double()), 1.0, x=x)
            except Exception:
                print("FAIL", name)
                traceback.print_exc()
                ok = False
    for name, f in (("gelu_tanh_bf16", UNARY["gelu_tanh"]),):
        if only and name not in only:
            continue
        x = sample(1 << 14)
        ok &= compare_ulp(name, call(out, name, x), f(x.double()), 1.0, x=x)
    if not only or "div_bf16" in only:
        a, b = sample(1 << 12), sample(1 << 12)
        ok &= compare_ulp("div_bf16", call(out, "div_bf16", a, b), a.double() / b.double(), 1.0, x=(a, b))
    for op, f in (("add", torch.add), ("sub", torch.sub), ("mul", torch.mul), ("div", torch.div),
                  ("max", torch.maximum), ("min", torch.minimum)):
        name = op + "_f32"
        if only and name not in only:
            continue
        a, b = sample(1 << 12), sample(1 << 12)
        ok &= compare_exact(name, call(out, name, a, b), f(a, b))
    if not only or "pow_f32" in only:
        a = sample(1 << 12)
        b = torch.cat([torch.randn(a.numel() // 2, device=DEV) * 3,
                       torch.randint(-5, 6, (a.numel() - a.numel() // 2,), device=DEV).float()])
        a = a[torch.randperm(a.numel(), device=DEV)]
        ok &= compare_ulp("pow_f32", call(out, "pow_f32", a, b), torch.pow(a.double(), b.double()), 1, x=(a, b))
    for op in ("exp", "exp2", "log", "log2", "log1p", "expm1", "tanh", "sigmoid", "silu", "sqrt", "rsqrt"):
        name = op + "_f64"
        if only and name not in only:
            continue
        x = sample(1 << 12).double() * (1 + torch.rand(1, device=DEV).double() * 1e-9)
        if op in ("sigmoid", "silu"):
            x = x[~(x.abs() > 700) | ~torch.isfinite(x)]  # the float64 reference underflows past 700
        ok &= compare_ulp(name, call(out, name, x), UNARY[op](x), 8, x=x)
    if not only or "pow_f64" in only:
        a, b = sample(1 << 12).double().abs(), (torch.randn((1 << 12) * 7 + 22, device=DEV) * 3).double()
        b = b[: a.numel()]
        ok &= compare_rel("pow_f64", call(out, "pow_f64", a, b), torch.pow(a, b), 1e-12)
    return ok


def call(out, name, *args):
    """Calls function name of the launcher out/name.py."""
    return getattr(load(out, name), name)(*args)


def workload(out, name, func):
    """Function func of the workload compiled into out/name/."""
    return getattr(load(os.path.join(out, name), func), func)


def bf(t):
    return t.to(torch.bfloat16)


def run_shapes(out, only):
    ok = True

    def want(n):
        return not only or n in only

    x = sample(1 << 12)
    if want("cast_f32_bf16"):
        ok &= compare_exact("cast_f32_bf16", call(out, "cast_f32_bf16", x), x.to(torch.bfloat16))
    if want("cast_f32_f16"):
        ok &= compare_exact("cast_f32_f16", call(out, "cast_f32_f16", x), x.to(torch.float16))
    if want("cast_f16_f32"):
        h = x.to(torch.float16)
        ok &= compare_exact("cast_f16_f32", call(out, "cast_f16_f32", h), h.float())
    if want("cast_f32_f8e4m3"):
        small = x[x.abs() < 440]
        ok &= compare_exact("cast_f32_f8e4m3", call(out, "cast_f32_f8e4m3", small).view(torch.uint8),
                            small.to(torch.float8_e4m3fn).view(torch.uint8))
        big = torch.tensor([448.0, 463.9, 464.0, 464.1, 500.0, 1e9, float("inf"), -1e9, -float("inf")], device=DEV)
        got = call(out, "cast_f32_f8e4m3", big).float()
        print("     cast_f32_f8e4m3 extremes", big.tolist(), "->", got.tolist())
    if want("cast_f8e4m3_f32"):
        all8 = torch.arange(256, device=DEV, dtype=torch.uint8).view(torch.float8_e4m3fn)
        ok &= compare_exact("cast_f8e4m3_f32", call(out, "cast_f8e4m3_f32", all8), all8.float())
    if want("cast_f32_f8e5m2"):
        small = x[x.abs() < 57000]
        ok &= compare_exact("cast_f32_f8e5m2", call(out, "cast_f32_f8e5m2", small).view(torch.uint8),
                            small.to(torch.float8_e5m2).view(torch.uint8))
    if want("cast_f64_bf16"):
        d = x.double() * (1 + torch.rand(x.numel(), device=DEV).double() * 2**-20)
        ok &= compare_exact("cast_f64_bf16", call(out, "cast_f64_bf16", d), d.to(torch.bfloat16))
    if want("cast_f32_i8"):
        want8 = torch.where(torch.isnan(x), torch.zeros_like(x), x).clamp(-128, 127).trunc().to(torch.int8)
        ok &= compare_exact("cast_f32_i8", call(out, "cast_f32_i8", x), want8)
    if want("cast_i32_f32"):
        i = torch.randint(-2**31, 2**31 - 1, (4099,), device=DEV, dtype=torch.int32)
        ok &= compare_exact("cast_i32_f32", call(out, "cast_i32_f32", i), i.float())
    if want("cmp_select"):
        a, b = sample(1 << 10), sample(1 << 10)
        ok &= compare_exact("cmp_select", call(out, "cmp_select", a, b), torch.where(a != b, a, b))
    if want("mask"):
        a = torch.randn(37, 24, device=DEV)
        ok &= compare_exact("mask", call(out, "mask", a), a > 0)
    if want("quantize"):
        q = torch.clamp(torch.round(x / 0.5) + 128, 0, 255)
        q = torch.where(torch.isnan(x), torch.full_like(x, 128), q).to(torch.uint8)
        ok &= compare_exact("quantize", call(out, "quantize", x), q)
    if want("bias_2d"):
        a, b = torch.randn(37, 101, device=DEV), torch.randn(37, 1, device=DEV)
        ok &= compare_exact("bias_2d", call(out, "bias_2d", a, b), a + b)
        a, b = torch.randn(5, 1000, device=DEV), torch.randn(5, 1, device=DEV)
        ok &= compare_exact("bias_2d (5x1000)", call(out, "bias_2d", a, b), a + b)
    if want("rank3"):
        a, w = bf(torch.randn(7, 5, 12, device=DEV)), bf(torch.randn(12, device=DEV))
        ok &= compare_exact("rank3", call(out, "rank3", a, w), bf(a.float() * w.float()))
    if want("transpose"):
        a = torch.randn(53, 96, device=DEV)
        ok &= compare_exact("transpose", call(out, "transpose", a), a.t().contiguous())
    if want("matmul"):
        a, b = torch.randn(77, 64, device=DEV), torch.randn(64, 48, device=DEV)
        ok &= compare_rel("matmul", call(out, "matmul", a, b), a.double() @ b.double(), 1e-6)
    if want("colsum"):
        a = torch.randn(37, 48, device=DEV)
        ok &= compare_rel("colsum", call(out, "colsum", a), a.double().sum(0), 1e-6)
    if want("softmax_100"):
        a = torch.randn(129, 100, device=DEV) * 10
        ok &= compare_ulp("softmax_100", call(out, "softmax_100", a), torch.softmax(a.double(), -1), 96, x=a)
    if want("rmsnorm_64"):
        a, w = bf(torch.randn(301, 64, device=DEV)), bf(torch.randn(64, device=DEV))
        af = a.double()
        r = af * torch.rsqrt(af.pow(2).mean(-1, keepdim=True) + 1e-5) * w.double()
        ok &= compare_ulp("rmsnorm_64", call(out, "rmsnorm_64", a, w), r, 2, x=a)
    if want("layernorm_1000"):
        a, w, b = torch.randn(33, 1000, device=DEV) * 3 + 1, torch.randn(1000, device=DEV), torch.randn(1000, device=DEV)
        r = F.layer_norm(a.double(), (1000,), w.double(), b.double(), 1e-5)
        ok &= compare_rel("layernorm_1000", call(out, "layernorm_1000", a, w, b), r, 1e-5)
    if want("softmax_32768"):
        a = torch.randn(9, 32768, device=DEV) * 10
        ok &= compare_ulp("softmax_32768", call(out, "softmax_32768", a), torch.softmax(a.double(), -1), 2000, x=a)
    if want("softmax_65536"):
        a = bf(torch.randn(5, 65536, device=DEV) * 10)
        ok &= compare_ulp("softmax_65536", call(out, "softmax_65536", a), torch.softmax(a.double(), -1), 1, x=a)
    if want("row_max_min"):
        a = torch.randn(41, 256, device=DEV)
        a[3, 7] = float("nan")
        a[5, 0] = float("inf")
        mx, mn = call(out, "row_max_min", a)
        ok &= compare_exact("row_max_min max", mx, a.amax(-1))
        ok &= compare_exact("row_max_min min", mn, a.amin(-1))
    if want("row_sum_f64"):
        a = torch.randn(19, 300, device=DEV, dtype=torch.float64)
        ok &= compare_rel("row_sum_f64", call(out, "row_sum_f64", a), a.sum(-1), 1e-14)
    return ok


def compare_chain(name, got, ref):
    """The harness's tolerance for bf16 chains that round several times:
    2^-6 relative plus 2^-8 of the reference's RMS."""
    g, r = got.double(), ref.double()
    fin = torch.isfinite(r)
    scale = r[fin].pow(2).mean().sqrt().item()
    err = (g - r).abs()[fin]
    bad = int((err > 2.0**-6 * r[fin].abs() + 2.0**-8 * scale).sum())
    nan_ok = torch.equal(torch.isnan(g), torch.isnan(r))
    status = "ok  " if bad == 0 and nan_ok else "FAIL"
    print("%s %-22s %d beyond 2^-6 rel + 2^-8 RMS, max err %.3g (RMS %.3g)" % (status, name, bad, err.max().item(), scale))
    return status == "ok  "


def rmsnorm64(x, w, eps=1e-5):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def run_workloads(out, only, timing):
    ok = True
    rb = lambda t: t.to(torch.bfloat16).double()

    def want(n):
        return not only or n in only

    def timeit(name, fn, nbytes):
        if not timing:
            return
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(20):
            fn()
        e.record()
        torch.cuda.synchronize()
        ms = s.elapsed_time(e) / 20
        print("     time %-24s %8.1f us  %6.2f TB/s" % (name, ms * 1e3, nbytes / (ms * 1e-3) / 1e12))

    T, D = 4096, 8192
    if want("rms_silu_mul"):
        x, w, z = bf(torch.randn(T, D, device=DEV)), bf(torch.randn(D, device=DEV)), bf(torch.randn(T, D, device=DEV))
        f = workload(out, "rms_silu_mul_8192", "rms_silu_mul")
        y = f(x, w, z)
        ref = rb(F.silu(rb(rmsnorm64(x.double(), w.double())))) * z.double()
        ok &= compare_chain("rms_silu_mul", y, ref)
        eager = F.silu((x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5)).to(torch.bfloat16) * w) * z
        print("     rms_silu_mul: %.4f of elements equal to PyTorch eager" % (y == eager).float().mean().item())
        timeit("rms_silu_mul 4096x8192", lambda: f(x, w, z), 3 * T * D * 2 + D * 2)
        for rows in (1, 32, 4097):
            xs, zs = bf(torch.randn(rows, D, device=DEV)), bf(torch.randn(rows, D, device=DEV))
            ok &= compare_chain("rms_silu_mul %d rows" % rows, f(xs, w, zs),
                                rb(F.silu(rb(rmsnorm64(xs.double(), w.double())))) * zs.double())
    if want("add_rmsnorm"):
        x, r, w = bf(torch.randn(T, D, device=DEV)), bf(torch.randn(T, D, device=DEV)), bf(torch.randn(D, device=DEV))
        f = workload(out, "add_rmsnorm_8192", "add_rmsnorm")
        h, n = f(x, r, w)
        hr = rb(x.double() + r.double())
        ok &= compare_exact("add_rmsnorm h", h, bf(x.float() + r.float()))
        ok &= compare_ulp("add_rmsnorm n", n, rmsnorm64(hr, w.double()), 2)
        timeit("add_rmsnorm 4096x8192", lambda: f(x, r, w), 4 * T * D * 2 + D * 2)
    if want("swiglu"):
        g, u = bf(torch.randn(T, 28672, device=DEV)), bf(torch.randn(T, 28672, device=DEV))
        f = workload(out, "swiglu_28672", "swiglu")
        y = f(g, u)
        # silu is within 1 bf16 ULP (the fast form), a relative error of up to
        # 2^-7 in the product: 2 ULP where the product lands just below a power
        # of two, plus the final rounding
        ok &= compare_ulp("swiglu", y, rb(F.silu(g.double())) * u.double(), 2.5)
        print("     swiglu: %.4f of elements equal to PyTorch eager" % (y == F.silu(g) * u).float().mean().item())
        timeit("swiglu 4096x28672", lambda: f(g, u), 3 * T * 28672 * 2)
    if want("softmax"):
        s = bf(torch.randn(32768, 4096, device=DEV) * 50)
        f = workload(out, "softmax_4096", "softmax")
        y = f(s)
        ok &= compare_ulp("softmax", y, torch.softmax(s.double(), -1), 1)
        print("     softmax: %.4f of elements equal to PyTorch eager" % (y == torch.softmax(s.float(), -1).to(torch.bfloat16)).float().mean().item())
        timeit("softmax 32768x4096", lambda: f(s), 2 * 32768 * 4096 * 2)
        ext = torch.randn(8, 4096, device=DEV) * 50
        ext[0] = -1e4
        ext[0, 7] = 1e4
        ext[1] = -float("inf")
        ext[2, 3] = float("inf")
        ext[3, 5] = float("nan")
        ext[4] = 1e4
        ext[5, ::2] = -float("inf")
        e = bf(ext)
        ok &= compare_ulp("softmax extremes", f(e), torch.softmax(e.double(), -1), 1)
    if want("logsumexp"):
        s = bf(torch.randn(32768, 4096, device=DEV) * 50)
        f = workload(out, "logsumexp_4096", "logsumexp")
        y = f(s)
        ok &= compare_ulp("logsumexp", y, torch.logsumexp(s.double(), -1), 4)
        timeit("logsumexp 32768x4096", lambda: f(s), 32768 * 4096 * 2 + 32768 * 4)
        ext = torch.randn(8, 4096, device=DEV) * 50
        ext[1] = -float("inf")
        ext[2, 3] = float("inf")
        ext[3, 5] = float("nan")
        e = bf(ext)
        ok &= compare_ulp("logsumexp extremes", f(e), torch.logsumexp(e.double(), -1), 4)
    if want("logaddexp"):
        n = 1 << 26
        a, b = torch.randn(n, device=DEV) * 100, torch.randn(n, device=DEV) * 100
        f = workload(out, "logaddexp", "logaddexp")
        y = f(a, b)
        r = torch.logaddexp(a.double(), b.double())
        scale = torch.maximum(torch.maximum(a.abs(), b.abs()), r.abs()).double()
        err = ((y.double() - r).abs() / ulp(scale, torch.float32)).max().item()
        print("%s logaddexp              max %.3f ULP of max(|y|,|a|,|b|) (bound 4)" % ("ok  " if err <= 4 else "FAIL", err))
        ok &= err <= 4
        timeit("logaddexp 64M", lambda: f(a, b), 3 * n * 4)
        inf, nan = float("inf"), float("nan")
        pairs = [(1e4, 1e4), (1e4, -1e4), (inf, inf), (-inf, -inf), (inf, -inf), (-inf, inf), (nan, 1.0),
                 (1.0, nan), (-inf, 5.0), (5.0, -inf), (88.8, 88.8), (89.0, 88.0), (3e38, 3e38), (0.0, -0.0)]
        pa = torch.tensor([p[0] for p in pairs], device=DEV)
        pb = torch.tensor([p[1] for p in pairs], device=DEV)
        print("     logaddexp extremes", f(pa, pb).tolist(), "torch", torch.logaddexp(pa, pb).tolist())
    if want("quantize_w"):
        n = 1 << 26
        x = torch.randn(n, device=DEV) * 100
        f = workload(out, "quantize", "quantize")
        q = torch.clamp(torch.round(x / 0.5) + 128, 0, 255).to(torch.uint8)
        ok &= compare_exact("quantize 64M", f(x), q)
        timeit("quantize 64M", lambda: f(x), n * 5)
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--only", default="")
    ap.add_argument("--time", action="store_true")
    ap.add_argument("--skip-ptxas", action="store_true")
    a = ap.parse_args()
    only = set(a.only.split(",")) if a.only else set()
    ok = True
    if not a.skip_ptxas:
        ok &= ptxas_all(a.dir)
    for part in (run_ops, run_shapes):
        try:
            ok &= part(a.dir, only)
        except Exception:
            traceback.print_exc()
            ok = False
    try:
        ok &= run_workloads(a.dir, only, a.time)
    except Exception:
        traceback.print_exc()
        ok = False
    print("ALL OK" if ok else "SOME FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
