"""Where the host time of one decode step goes: TensorForge beside Inductor, without CUDA graphs.

    TENSORFORGE_TFC=.bin/tfc python3 bench/e2e/host_profile.py [MODEL] [BATCH] [--emitter triton|ptx] [--profile N]

Decode without CUDA graphs is bound by the host: the GPU waits for the
launches. For one decoder layer at one token against a static KV cache of
2048 (as run.py's decode), this prints the wall time per call of eager,
Inductor's default mode and TensorForge (calls back to back, one
synchronisation at the end, so that host time is what is measured), the
host time of each compiled region's launcher called alone, and the
functions cProfile charges the most while the TensorForge layer runs.
"""

import argparse
import cProfile
import io
import os
import pstats
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as e2e  # noqa: E402
from tensorforge import backend as tfbackend  # noqa: E402


def per_call(fn, n=200):
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model", nargs="?", default="llama3-8b")
    ap.add_argument("batch", nargs="?", type=int, default=1)
    ap.add_argument("--emitter", default="triton")
    ap.add_argument("--profile", type=int, default=100, help="calls under cProfile (0: none)")
    ap.add_argument("--pieces", action="store_true", help="profile the first region's launcher alone")
    ap.add_argument("--code", action="store_true", help="print the graph PyTorch runs around the regions")
    args = ap.parse_args()

    cfg, layer, rope = e2e.build_layer(args.model)
    b = args.batch
    x = torch.randn(b, 1, cfg.hidden_size, device="cuda", dtype=torch.bfloat16)
    pos = torch.full((b, 1), 2047, device="cuda", dtype=torch.long)
    cache_position = torch.tensor([2047], device="cuda")
    pe = rope(x, pos)
    kvh = cfg.num_key_value_heads
    hd = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    k0 = torch.randn(b, kvh, 2048, hd, device="cuda", dtype=torch.bfloat16)
    v0 = torch.randn(b, kvh, 2048, hd, device="cuda", dtype=torch.bfloat16)
    modes = [("eager", None), ("inductor default", {}),
             ("tensorforge " + args.emitter, dict(backend="tensorforge",
                                                  options=dict(target="h200", emitter=args.emitter)))]
    with torch.no_grad():
        for label, kw in modes:
            torch._dynamo.reset()
            tfbackend.compiled_graphs.clear()
            cache = e2e.StaticKV(k0.clone(), v0.clone(), cache_position)
            c = layer if kw is None else torch.compile(layer, dynamic=False, **kw)

            def fn():
                return e2e.layer_call(c, x, pe, cache, cache_position)

            y = fn()
            if kw is None:
                ref = y
            print("%-24s %8.1f us per call (host-bound: no CUDA graphs), max abs difference from eager %.3g" % (
                label, per_call(fn), (y.float() - ref.float()).abs().max().item()), flush=True)
            if kw is None or "backend" not in kw:
                continue
            for g in list(tfbackend.compiled_graphs):
                print("  %d regions, %d graph nodes" % (len(g.kernels), len(g.gm.graph.nodes)))
                if args.code:
                    print(g.gm.code)
                for tr in g.kernels:
                    kern = getattr(g.gm, tr.name.replace("region_", "fused_"), None)
                    if kern is None:
                        continue
                    if any(n is None for a in tr.arg_infos for n in a.shape):
                        continue
                    ins = [torch.zeros(a.shape, dtype=a.dtype, device="cuda") for a in tr.arg_infos]
                    print("  %-12s launcher alone %7.1f us" % (tr.name, per_call(lambda: kern.fn(*ins))))
                    if args.pieces and tr is g.kernels[0]:
                        mod = sys.modules[kern.fn.__module__]
                        print("  fast launch:", getattr(mod, "_fast_launch", None), "kept launchers:",
                              len(getattr(mod, "_compiled", {})), "launch hooks:",
                              getattr(getattr(mod, "_knobs", None), "runtime", None) and
                              (mod._knobs.runtime.launch_enter_hook, mod._knobs.runtime.launch_exit_hook))
                        pr = cProfile.Profile()
                        pr.enable()
                        for _ in range(2000):
                            kern.fn(*ins)
                        torch.cuda.synchronize()
                        pr.disable()
                        s = io.StringIO()
                        pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(15)
                        print(s.getvalue())
            if args.profile:
                pr = cProfile.Profile()
                pr.enable()
                for _ in range(args.profile):
                    fn()
                torch.cuda.synchronize()
                pr.disable()
                s = io.StringIO()
                st = pstats.Stats(pr, stream=s)
                st.sort_stats("tottime").print_stats(30)
                st.sort_stats("cumulative").print_stats(40)
                print(s.getvalue())


if __name__ == "__main__":
    main()
