"""Where the time of one decoder layer goes: CUDA kernel times per kernel, TensorForge beside Inductor.

    TENSORFORGE_TFC=.bin/tfc python3 bench/e2e/kernel_profile.py [MODEL] [BATCH] [TOKENS]

$MODES (a comma list of the labels below) runs some of the modes only. After
each table one line sets the layer's wall time beside its kernels' busy time:
the sum of CUDA kernel times per call, triton's do_bench median (L2 flushed
before each call) and the mean of 20 calls queued back to back. Wall time
well above busy time means the GPU waited between kernels.
"""
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as e2e  # noqa: E402

name = sys.argv[1] if len(sys.argv) > 1 else "llama3-8b"
b = int(sys.argv[2]) if len(sys.argv) > 2 else 1
s = int(sys.argv[3]) if len(sys.argv) > 3 else 4096
cfg, layer, rope = e2e.build_layer(name)
x = torch.randn(b, s, cfg.hidden_size, device="cuda", dtype=torch.bfloat16)
pos = torch.arange(s, device="cuda").unsqueeze(0).expand(b, s)
pe = rope(x, pos)
with torch.no_grad():
    modes = [("inductor", {}), ("tensorforge triton", dict(backend="tensorforge", options=dict(target="h200"))),
             ("tensorforge ptx", dict(backend="tensorforge", options=dict(target="h200", emitter="ptx"))),
             # op-by-op rounding keeps the residual add after the down projection a kernel of its own
             # (fxpasses.residual_adds_into_matmuls is off): the control for that rewrite
             ("tensorforge triton --exact-rounding", dict(backend="tensorforge",
                                                          options=dict(target="h200", flags=["--exact-rounding"])))]
    only = os.environ.get("MODES")
    for label, kw in [m for m in modes if not only or m[0] in only.split(",")]:
        torch._dynamo.reset()
        c = torch.compile(layer, dynamic=False, **kw)
        for _ in range(3):
            e2e.layer_call(c, x, pe)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(5):
                e2e.layer_call(c, x, pe)
            torch.cuda.synchronize()
        print("=== %s, %s %dx%d, 5 calls" % (label, name, b, s))
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=25, max_name_column_width=70))
        fn = lambda: e2e.layer_call(c, x, pe)  # noqa: E731
        _, busy = e2e.profile_kernels(fn, calls=5)
        med = e2e.do_bench(fn, warmup=10, rep=100, return_mode="median")
        t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0.record()
        for _ in range(20):
            fn()
        t1.record()
        torch.cuda.synchronize()
        print("=== %s, %s %dx%d: kernels busy %.3f ms/call, do_bench median %.3f ms, 20 queued calls %.3f ms/call" % (
            label, name, b, s, busy, med, t0.elapsed_time(t1) / 20))
