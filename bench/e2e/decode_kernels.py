"""Where the GPU time of one decode step goes: every kernel, TensorForge beside Inductor.

    TENSORFORGE_TFC=.bin/tfc python3 bench/e2e/decode_kernels.py [MODEL] [BATCH] [--matmul]

One decoder layer at one token against a static KV cache of 2048 (as
run.py's decode). With CUDA graphs a decode step costs the sum of its
kernels' GPU times plus about a microsecond between kernels, so this lists
the kernels of one step, in launch order, with their GPU times (averaged
over 20 steps under torch.profiler), for Inductor and TensorForge (Triton),
and the sums.
"""

import argparse
import os
import sys
from collections import OrderedDict

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as e2e  # noqa: E402
from tensorforge import backend as tfbackend  # noqa: E402


def kernels(fn, steps=20):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            fn()
        torch.cuda.synchronize()
    evs = [e for e in prof.events() if getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA]
    evs.sort(key=lambda e: e.time_range.start)
    per = OrderedDict()
    for e in evs:
        per.setdefault(e.name, []).append(e.time_range.end - e.time_range.start)
    rows = [(n, len(ts) / steps, sum(ts) / steps) for n, ts in per.items()]
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model", nargs="?", default="llama3-8b")
    ap.add_argument("batch", nargs="?", type=int, default=1)
    ap.add_argument("--matmul", action="store_true", help="also TensorForge with the matmul option")
    ap.add_argument("--only-matmul", action="store_true", help="TensorForge with the matmul option alone")
    ap.add_argument("--ptx", action="store_true", help="also TensorForge with the PTX emitter")
    ap.add_argument("--only", default="", help="a comma list of the modes' labels to run alone")
    args = ap.parse_args()
    cfg, layer, rope = e2e.build_layer(args.model)
    b = args.batch
    x = torch.randn(b, 1, cfg.hidden_size, device="cuda", dtype=torch.bfloat16)
    pos = torch.full((b, 1), 2047, device="cuda", dtype=torch.long)
    cache_position = torch.tensor([2047], device="cuda")
    pe = rope(x, pos)
    kvh = cfg.num_key_value_heads
    hd = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    hdk, hdv = hd, hd
    if hasattr(cfg, "kv_lora_rank"):
        # multi-head latent attention caches a latent and its rotary part (as run.py)
        kvh, hdk, hdv = 1, cfg.kv_lora_rank, cfg.qk_rope_head_dim
    k0 = torch.randn(b, kvh, 2048, hdk, device="cuda", dtype=torch.bfloat16)
    v0 = torch.randn(b, kvh, 2048, hdv, device="cuda", dtype=torch.bfloat16)
    modes = [("inductor default", {}),
             ("tensorforge triton cublas", dict(backend="tensorforge", options=dict(target="h200", matmul=False))),
             ("tensorforge triton", dict(backend="tensorforge", options=dict(target="h200")))]
    if args.ptx:
        modes.append(("tensorforge ptx", dict(backend="tensorforge", options=dict(target="h200", emitter="ptx"))))
    if args.only_matmul:
        modes = []
    if args.matmul or args.only_matmul:
        modes.append(("tensorforge triton matmul", dict(backend="tensorforge",
                                                        options=dict(target="h200", matmul=True))))
    if args.only:
        modes = [m for m in modes if m[0] in args.only.split(",")]
    with torch.no_grad():
        for label, kw in modes:
            torch._dynamo.reset()
            tfbackend.compiled_graphs.clear()
            cache = e2e.StaticKV(k0.clone(), v0.clone(), cache_position)
            c = torch.compile(layer, dynamic=False, **kw)
            rows = kernels(lambda: e2e.layer_call(c, x, pe, cache, cache_position))
            print("=== %s, %s decode b%d kv2048: per step" % (label, args.model, b))
            tot = 0.0
            for n, cnt, us in rows:
                tot += us
                print("  %8.2f us  x%-4g %s" % (us, cnt, n[:110]))
            print("  %8.2f us  total over %d kernels" % (tot, round(sum(r[1] for r in rows))), flush=True)


if __name__ == "__main__":
    main()
