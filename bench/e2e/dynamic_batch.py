#!/usr/bin/env python3
"""Decode batches of run-time size: matmul="auto"'s two compilations (a check and a timing).

    TENSORFORGE_TFC=.bin/tfc python3 bench/e2e/dynamic_batch.py [--batches 1,4,16,32,33,64]

A Llama-3-8B MLP block as transformers writes it (RMSNorm, then gate/up,
SwiGLU and down with the residual add), bf16, compiled with
torch.compile(dynamic=True, backend="tensorforge") so that the batch is a
run-time extent, under matmul="auto" (TensorForge's matmuls for at most 32
rows, cuBLAS's beyond: backend.RowDispatch) and matmul=False (cuBLAS's
always), beside torch.compile's default, each called at every batch size
in turn. Prints, per batch, the GPU time of a call replayed from a CUDA graph
(median of do_bench_cudagraph), the max error against an fp32 eager run and
the graphs TensorForge has compiled (a RowDispatch compiles two; Dynamo
specializes a batch of 1, so that it gets a graph of its own).
"""
import argparse
import os
import sys

import torch
import torch.nn.functional as F
from triton.testing import do_bench_cudagraph

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import tensorforge  # noqa: E402,F401
from tensorforge import backend as tfbackend  # noqa: E402

D, F_ = 4096, 14336


class MLPBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(D))
        self.gate_proj = torch.nn.Linear(D, F_, bias=False)
        self.up_proj = torch.nn.Linear(D, F_, bias=False)
        self.down_proj = torch.nn.Linear(F_, D, bias=False)

    def forward(self, h):
        x = h.to(torch.float32)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)
        x = self.weight * x.to(h.dtype)
        return h + self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", default="1,4,16,32,33,64")
    a = ap.parse_args()
    batches = [int(b) for b in a.batches.split(",")]
    torch.manual_seed(0)
    block = MLPBlock().cuda().to(torch.bfloat16).eval()
    ref = MLPBlock().cuda().eval()
    ref.load_state_dict({k: v.float() for k, v in block.state_dict().items()})
    forms = {
        "tensorforge auto": dict(backend="tensorforge", options=dict(target="h200")),
        "tensorforge cublas": dict(backend="tensorforge", options=dict(target="h200", matmul=False)),
        "inductor": dict(),
    }
    print(torch.cuda.get_device_name(), "MLP block, D %d, F %d, bf16, dynamic batch" % (D, F_))
    for name, kw in forms.items():
        torch._dynamo.reset()
        tfbackend.compiled_graphs.clear()
        fn = torch.compile(block, dynamic=True, **kw)
        for b in batches:
            h = torch.randn(b, 1, D, device="cuda", dtype=torch.bfloat16)
            with torch.no_grad():
                y = fn(h)
                err = (y.float() - ref(h.float())).abs().max().item()
                ms = do_bench_cudagraph(lambda: fn(h), rep=50, return_mode="median")
            print("%-20s b=%-3d %8.1f us  err %.4f  graphs %d" % (name, b, ms * 1e3, err, len(tfbackend.compiled_graphs)),
                  flush=True)


if __name__ == "__main__":
    main()
