#!/usr/bin/env python3
"""Checks the Triton emitter's other kernel shapes on the GPU.

    python3 bench/gpu/selftest.py

The programs of bench/gpu/selftest/*.tir (compiled by build.sh into
bench/gpu/out/selftest_<name>.py) cover what the benchmark workloads do not:
generic kernels (transpose, matmul, a reduction over the first axis,
concat, slice, broadcast_to, reshape), rows of several per program, rows
masked in a block, rows longer than a block (with the kept row recomputed)
and rows read twice, integer and f64 arithmetic, dynamic extents with
broadcast operands, and every unary op. Each output is compared with a
PyTorch reference (float64 where the arithmetic matters) with run.py's
tolerances; each test runs in its own try/except, and twice (the launch path of a
first and of a later call). Exit status 1 if any fails.
"""
import os
import sys
import traceback

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402  (tolerances, loading, comparison)

DEV = "cuda"
f32, bf16, f64, i32 = torch.float32, torch.bfloat16, torch.float64, torch.int32


def rn(*shape, dtype=f32, scale=1.0):
    return (torch.randn(shape, device=DEV) * scale).to(dtype)


def ri(*shape):
    return torch.randint(-1000, 1000, shape, device=DEV, dtype=i32)


def softmax64(x):
    return torch.softmax(x.double(), -1)


def rms64(x, w):
    x, w = x.double(), w.double()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w


def exact(*refs):
    return refs


def unary_refs(x):
    x = x.double()
    a = x.abs()
    return (x.exp(), a.log(), a.log1p(), x.expm1(), a.sqrt(), a.rsqrt(), x.tanh(), x.sigmoid(), F.gelu(x),
            F.gelu(x, approximate="tanh"), x.sin(), torch.round(x), x.floor(), a.pow(x), a)


def ri8(*shape):
    return torch.randint(-127, 128, shape, device=DEV, dtype=torch.int8)


def norm_rope64(x, w, c, s, g):
    """RMSNorm of each head (eps 1e-6), then RoPE with rotate_half as a roll, in float64."""
    x = x.double()
    y = w.double() * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    return y * c.double() + torch.roll(y, 64, -1) * g.double() * s.double()


def ints_refs(a, b):
    s = a + b
    m = torch.maximum(s, b)
    return (torch.relu(-m), s.to(torch.int8), a < b)


# (module, function, inputs, reference of the inputs)
TESTS = [
    ("generic", "transpose", lambda: (rn(37, 64),), lambda x: (x.t(),)),
    ("generic", "matmul", lambda: (rn(19, 32, dtype=bf16), rn(32, 48, dtype=bf16)),
     lambda a, b: (a.double() @ b.double(),)),
    ("generic", "mm_split", lambda: (rn(3, 12300, dtype=bf16), rn(40, 12300, dtype=bf16, scale=0.01), rn(40, dtype=bf16)),
     lambda a, w, b: (F.silu(a.double() @ w.double().T + b.double()),)),
    ("generic", "bmm_split", lambda: (rn(3, 5, 7000, dtype=bf16), rn(3, 7000, 24, dtype=bf16, scale=0.01)),
     lambda a, b: (a.double() @ b.double(),)),
    ("generic", "gateup_split", lambda: (rn(2, 6500, dtype=bf16), rn(96, 6500, dtype=bf16, scale=0.01),
                                         rn(96, 6500, dtype=bf16, scale=0.01)),
     lambda x, g, u: (F.silu(x.double() @ g.double().T) * (x.double() @ u.double().T),)),
    ("generic", "w8a8_split", lambda: (ri8(2, 8000), ri8(40, 8000), torch.rand(40, device=DEV) / 2e5),
     lambda x, q, s: ((x.double() @ q.double().T) * s.double(),)),
    ("generic", "one_row", lambda: (rn(1, 4096, dtype=bf16), rn(512, 4096, dtype=bf16, scale=0.02), rn(1, 512, dtype=bf16)),
     lambda x, w, r: (x.double() @ w.double().T + r.double(),)),
    ("generic", "colsum", lambda: (rn(8, 300),), lambda x: (x.double().sum(0),)),
    ("generic", "concat", lambda: (rn(16, 8), rn(16, 3)), lambda a, b: (torch.cat([a, b], 1),)),
    ("generic", "slice_bcast", lambda: (rn(16, 8), rn(1, 5)), lambda x, v: (x[2:6, 1:6], v.expand(3, 5))),
    ("generic", "reshape", lambda: (rn(6, 8),), lambda x: (x.reshape(4, 12),)),
    ("generic", "dense_const", lambda: (rn(9, 4),),
     lambda x: (x + torch.tensor([1.0, 2.0, 3.0, 4.0], device=DEV),)),
    ("generic", "scalars", lambda: (rn(), rn()), lambda x, y: (x.double() * y.double(),)),
    ("generic", "twice", lambda: (rn(8),), lambda x: (x, x)),
    ("rows", "short_rows", lambda: (rn(1000, 64), rn(64)), lambda x, w: (rms64(x, w),)),
    ("rows", "masked_rows", lambda: (rn(37, 3000, dtype=bf16, scale=5.0),), lambda x: (softmax64(x),)),
    ("rows", "long_rows", lambda: (rn(5, 40000, scale=5.0),), lambda x: (softmax64(x),)),
    ("rows", "two_pass", lambda: (rn(3, 65536, scale=5.0),), lambda x: (softmax64(x),)),
    ("rows", "row_min", lambda: (ri(50, 100),), lambda x: (x.min(-1).values,)),
    ("rows", "norm_rope", lambda: (rn(1, 7, 4, 128, dtype=bf16), rn(128, dtype=bf16), rn(1, 7, 1, 128, dtype=bf16),
                                   rn(1, 7, 1, 128, dtype=bf16), torch.cat([-torch.ones(64), torch.ones(64)]).to(DEV, bf16)),
     lambda x, w, c, s, g: (norm_rope64(x, w, c, s, g),)),
    ("rows", "stored_online", lambda: (rn(5, 9000, scale=5.0), rn(5, 9000, scale=5.0)),
     lambda x, r: ((x.double() + r.double()).T, torch.logsumexp(x.double() + r.double(), -1))),
    ("rows", "stored_transposed", lambda: (rn(300, 64, scale=5.0),), lambda x: (softmax64(x).T,)),
    ("elementwise", "dyn_bcast", lambda: (rn(33, 1000), rn(1000), rn(33, 1)),
     lambda x, b, c: ((x.double() + b.double()) * c.double(),)),
    ("elementwise", "rope_odd", lambda: (rn(6, 4, 48, dtype=bf16), rn(6, 1, 48, dtype=bf16), rn(6, 1, 48, dtype=bf16)),
     lambda q, c, s: (q.double() * c.double() + torch.cat([-q.double()[..., 24:], q.double()[..., :24]], -1) * s.double(),)),
    ("elementwise", "concat3", lambda: (rn(37, 5), rn(37, 16), rn(37, 11)),
     lambda a, b, c: (torch.cat([torch.exp(a.double()), -b.double(), c.double()], 1),)),
    ("elementwise", "rope_roll", lambda: (rn(5, 4, 64, dtype=bf16), rn(5, 1, 64, dtype=bf16), rn(5, 1, 64, dtype=bf16),
                                      torch.cat([-torch.ones(32), torch.ones(32)]).to(DEV, bf16)),
     lambda q, c, s, g: (q.double() * c.double() + torch.roll(q.double(), 32, -1) * g.double() * s.double(),)),
    ("elementwise", "roll5", lambda: (rn(29, 48),), lambda x: (torch.roll(x.double(), 5, -1) * x.double(),)),
    ("elementwise", "rank3", lambda: (rn(4, 6, 32), rn(6, 1)), lambda x, s: (x.double() * s.double(),)),
    ("elementwise", "ints", lambda: (ri(1000), ri(1000)), ints_refs),
    ("elementwise", "f64", lambda: (rn(1000, dtype=f64),), lambda x: (F.silu(torch.sigmoid(torch.exp(x))),)),
    ("elementwise", "unary", lambda: (rn(4096, scale=3.0),), unary_refs),
]


def check(module, func, make, ref):
    """Runs one test twice (the first launch goes through kernel[grid], the
    second through the launcher _launch kept); returns its problems (none
    when it passes)."""
    fn = getattr(run.load("selftest_" + module), func)
    inputs = make()
    refs = ref(*inputs)
    bad = []
    for call in ("first call", "second call"):
        outs = run.as_tuple(fn(*inputs))
        if len(outs) != len(refs):
            bad.append(f"{call}: {len(outs)} outputs, expected {len(refs)}")
        for i, (o, r) in enumerate(zip(outs, refs)):
            if o.dtype in run.TOLERANCE:
                c = run.compare(o, r)
                if not c["ok"]:
                    bad.append(f"{call}: output {i}: {c['violations']} of {c['elements']} beyond tolerance, "
                               f"max error {c['max_err']:.3g}, non-finite match {c['nonfinite_match']}")
            elif not torch.equal(o.cpu(), r.to(o.dtype).cpu()):
                bad.append(f"{call}: output {i} ({o.dtype}) differs from the reference")
    return bad


def check_kv_update():
    """graph.index_copy: the caches passed in get the new positions (k times
    c, and v transposed) and keep every other element, bit for bit; also
    where the product's kernel stores it into the cache itself."""
    fn = run.load("selftest_generic").kv_update
    kc, vc = rn(1, 8, 64, 128, dtype=bf16), rn(1, 8, 64, 128, dtype=bf16)
    pos = torch.tensor([9, 0, 63], device=DEV)
    k, c, v = rn(1, 8, 3, 128, dtype=bf16), rn(1, 1, 3, 128, dtype=bf16), rn(1, 3, 8, 128, dtype=bf16)
    want_k, want_v = kc.clone(), vc.clone()
    r = (k.float() * c.float()).to(bf16)
    want_k[:, :, pos] = r
    want_v[:, :, pos] = v.transpose(1, 2)
    bad = []
    for call in ("first call", "second call"):
        ptrs = (kc.data_ptr(), vc.data_ptr())
        got = fn(kc, vc, pos, k, c, v)
        if (kc.data_ptr(), vc.data_ptr()) != ptrs:
            bad.append(f"{call}: the caches moved")
        for name, g, w in (("result", got, r), ("k cache", kc, want_k), ("v cache", vc, want_v)):
            if not torch.equal(g, w):
                bad.append(f"{call}: {name}: {(g != w).sum().item()} elements differ")
    # the product stored by its own kernel (kv_fused: one launch)
    fused = run.load("selftest_generic").kv_fused
    kc2 = rn(1, 8, 64, 128, dtype=bf16)
    want2 = kc2.clone()
    want2[:, :, pos] = r
    for call in ("first call", "second call"):
        fused(kc2, pos, k, c)
        if not torch.equal(kc2, want2):
            bad.append(f"{call}: fused k cache: {(kc2 != want2).sum().item()} elements differ")
    return bad


def report(name, test):
    """Runs test() (its problems, none when it passes) and prints the verdict; 1 if it failed."""
    try:
        bad = test()
    except Exception:
        print(f"{name:32s} FAILED\n{traceback.format_exc()}", flush=True)
        return 1
    print(f"{name:32s} {'ok' if not bad else 'WRONG'}", flush=True)
    for b in bad:
        print("    " + b)
    return int(bool(bad))


def main():
    # every test as emitted, then the element-wise ones again with the
    # 64-bit indexing of flat kernels forced on (WIDE_FROM = 0), then the
    # in-place updates
    runs = [(t, "") for t in TESTS] + [(t, " (64-bit)") for t in TESTS if t[0] == "elementwise"]
    failed = 0
    torch.manual_seed(0)
    for (module, func, make, ref), variant in runs:
        mod = run.load("selftest_" + module)
        if hasattr(mod, "WIDE_FROM"):
            mod.WIDE_FROM = 0 if variant else 2**31
        failed += report(f"{module}.{func}{variant}", lambda: check(module, func, make, ref))
    failed += report("generic.kv_update", check_kv_update)
    total = len(runs) + 1
    print(f"{total - failed} of {total} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
