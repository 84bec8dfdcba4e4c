"""The tuner behind `tfc --tune`: times the candidate launch configurations
of a Triton module's matmul kernels on this machine's GPU and records the
fastest in the tuning cache.

    python3 tune.py MODULE.py --budget SECONDS --cache FILE --target NAME

tfc writes MODULE.py with its default configurations, runs this, then
emits again with the cache. For every matmul kernel (the module's KEYS) it
takes a function that launches it and calls it on random inputs of the
function's signature (its docstring: `f(x: bf16[?, 4096], ...) -> ...`),
every `?` set to 1, 32 and 4096 rows for the configurations of up to 16
rows, up to 64 and any (a program of static shapes: its own rows once).
The emitted configuration is timed first, then the candidates while the
kernel's share of the budget lasts; a candidate that fails to compile or
whose results differ from the emitted configuration's by more than two
bf16 roundings is skipped. Times are medians of triton.testing.do_bench
(L2 flushed between calls). Exit status 1, with the reason on standard
error, when there is no GPU, torch or triton.
"""
import argparse
import importlib.util
import inspect
import json
import os
import re
import sys
import time

DECODE = [
    # BM, BN, BK, GROUP_M, num_warps, num_stages[, SPLIT_K]
    (16, 128, 128, 1, 4, 4),
    (16, 64, 128, 1, 4, 4),
    (16, 64, 256, 1, 4, 3),
    (16, 32, 256, 1, 4, 4),
    (32, 64, 128, 1, 4, 4),
    (32, 32, 256, 1, 4, 4),
    (16, 128, 128, 1, 4, 4, 1),
    (16, 128, 128, 1, 4, 4, 2),
    (16, 128, 128, 1, 4, 4, 4),
    (16, 64, 128, 1, 4, 4, 2),
    (16, 64, 128, 1, 4, 4, 4),
    (32, 64, 128, 1, 4, 4, 2),
]
PREFILL = [
    (128, 256, 64, 8, 8, 3),
    (128, 256, 64, 8, 8, 4),
    (128, 128, 64, 8, 8, 4),
    (128, 128, 64, 8, 4, 4),
    (256, 128, 64, 8, 8, 3),
    (128, 128, 128, 8, 8, 3),
    (64, 256, 64, 8, 4, 4),
    (128, 64, 64, 8, 4, 4),
    (128, 256, 64, 16, 8, 3),
]
BUCKETS = [(1, 16), (32, 64), (4096, 0)]  # (rows timed, max_m of the configuration)

DTYPES = {"bf16": "bfloat16", "f16": "float16", "f32": "float32", "f64": "float64", "i8": "int8", "ui8": "uint8",
          "i16": "int16", "i32": "int32", "i64": "int64", "i1": "bool", "f8E4M3FN": "float8_e4m3fn",
          "f8E5M2": "float8_e5m2"}
SIG = re.compile(r"^(\w+)\((.*)\) -> ")
ARG = re.compile(r"(\w+): (\w+)\[([^\]]*)\]")


def die(msg):
    sys.stderr.write("tfc --tune: %s\n" % msg)
    sys.exit(1)


def config_dict(c, max_m):
    d = {"max_m": max_m, "BM": c[0], "BN": c[1], "BK": c[2], "GROUP_M": c[3], "num_warps": c[4], "num_stages": c[5]}
    if len(c) > 6:
        d["SPLIT_K"] = c[6]
    return d


def signature(fn):
    m = SIG.match((fn.__doc__ or "").strip())
    if not m:
        return None
    args = []
    for name, dt, dims in ARG.findall(m.group(2)):
        if dt not in DTYPES:
            return None
        args.append((name, dt, [d.strip() for d in dims.split(",") if d.strip()]))
    return args


def make_inputs(torch, sig, rows):
    g = torch.Generator(device="cuda").manual_seed(0)
    out = []
    for _, dt, dims in sig:
        shape = [rows if d == "?" else int(d) for d in dims]
        dtype = getattr(torch, DTYPES[dt])
        if dtype.is_floating_point:
            scale = 1.0 / max(shape[-1], 1) ** 0.5 if len(shape) >= 2 else 1.0
            t = torch.randn(shape, device="cuda", generator=g) * scale
            out.append(t.to(dtype))
        elif dtype == torch.bool:
            out.append(torch.rand(shape, device="cuda", generator=g) < 0.5)
        else:
            out.append(torch.randint(-8, 8, shape, device="cuda", generator=g).to(dtype))
    return out


def as_list(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


def close(torch, got, want):
    """Whether got matches want within two bf16 roundings of the scale."""
    for g, w in zip(as_list(got), as_list(want)):
        if not g.dtype.is_floating_point:
            if not torch.equal(g, w):
                return False
            continue
        g, w = g.double(), w.double()
        fin = torch.isfinite(w)
        if not torch.equal(fin, torch.isfinite(g)):
            return False
        scale = w[fin].abs().mean().item() if fin.any() else 0.0
        if not torch.all((g[fin] - w[fin]).abs() <= 2.0 ** -6 * (w[fin].abs() + scale) + 1e-30):
            return False
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("module")
    ap.add_argument("--budget", type=float, required=True)
    ap.add_argument("--cache", required=True)
    ap.add_argument("--target", required=True)
    args = ap.parse_args()
    try:
        import torch
        import triton  # noqa: F401
        from triton.testing import do_bench
    except ImportError as e:
        die("needs python3 with torch and triton (%s); set TENSORFORGE_PYTHON to one that has them" % e)
    if not torch.cuda.is_available():
        die("times kernels on a CUDA GPU, and torch sees none on this machine")
    spec = importlib.util.spec_from_file_location("tuned_module", args.module)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    keys = getattr(mod, "KEYS", {})
    if not keys:
        sys.stderr.write("tfc --tune: the program has no matmul kernel to tune\n")
        return
    # the function that launches each kernel
    launchers = {}
    for name, fn in inspect.getmembers(mod, inspect.isfunction):
        sig = signature(fn)
        if sig is None or name.startswith("_"):
            continue
        src = inspect.getsource(fn)
        for k in keys:
            if k not in launchers and re.search(r"\b%s\[" % re.escape(k), src):
                launchers[k] = (fn, sig)
    start = time.time()
    share = args.budget / max(1, len(keys))
    entries = {}
    for k in sorted(keys):
        if k not in launchers:
            continue
        fn, sig = launchers[k]
        dynamic = any("?" in dims for _, _, dims in sig)
        buckets = BUCKETS if dynamic else [(None, 0)]
        emitted = list(mod.CONFIGS[k])
        chosen, measured = [], {}
        k_start = time.time()
        for bi, (rows, max_m) in enumerate(buckets):
            until = k_start + share * (bi + 1) / len(buckets)
            inputs = make_inputs(torch, sig, rows)
            mod.CONFIGS[k] = emitted
            want = fn(*inputs)
            torch.cuda.synchronize()
            base = do_bench(lambda: fn(*inputs), warmup=10, rep=50, return_mode="median")
            default = mod._mm_config(emitted, rows if rows is not None else 1 << 30)
            best, best_ms, tried = dict(default, max_m=max_m), base, []
            cands = DECODE if rows is not None and rows <= 64 else PREFILL
            for c in cands:
                if time.time() > until:
                    break
                cfg = config_dict(c, max_m)
                mod.CONFIGS[k] = [dict(cfg, max_m=0)]
                try:
                    got = fn(*inputs)
                    torch.cuda.synchronize()
                    if not close(torch, got, want):
                        tried.append({"config": list(c), "error": "results differ"})
                        continue
                    t = do_bench(lambda: fn(*inputs), warmup=10, rep=50, return_mode="median")
                except Exception as e:  # noqa: BLE001 - a candidate that does not compile is skipped
                    tried.append({"config": list(c), "error": type(e).__name__})
                    continue
                tried.append({"config": list(c), "ms": t})
                if t < best_ms:
                    best, best_ms = cfg, t
            mod.CONFIGS[k] = emitted
            chosen.append(best)
            measured[str(rows) if rows is not None else "static"] = {"emitted_ms": base, "best_ms": best_ms,
                                                                      "tried": tried}
            sys.stderr.write("tfc --tune: %s at %s rows: %.4f ms as emitted, %.4f ms with %s (%d tried)\n" % (
                k, rows if rows is not None else "its", base, best_ms,
                {x: y for x, y in best.items() if x != "max_m"}, len(tried)))
        entries[keys[k]] = {"target": args.target, "kernel": k, "configs": chosen, "measured": measured}
    cache = {"version": 1, "entries": {}}
    if os.path.exists(args.cache):
        with open(args.cache) as f:
            cache = json.load(f)
    cache.setdefault("entries", {}).update(entries)
    d = os.path.dirname(os.path.abspath(args.cache))
    os.makedirs(d, exist_ok=True)
    tmp = args.cache + ".tmp%d" % os.getpid()
    with open(tmp, "w") as f:
        json.dump(cache, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, args.cache)
    sys.stderr.write("tfc --tune: %d kernel(s) in %.0f s, recorded in %s\n" % (len(entries), time.time() - start, args.cache))


if __name__ == "__main__":
    main()
