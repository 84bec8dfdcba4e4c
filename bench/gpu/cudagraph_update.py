#!/usr/bin/env python3
"""A KV cache that is not marked static, updated in place under CUDA graphs.

    TENSORFORGE_TFC=.bin/tfc python3 bench/gpu/cudagraph_update.py

Three decode steps of a toy attention block (k rotated and written into
the cache with index_copy_, v written, attention over the cache) through
torch.compile(backend="tensorforge", options={"cudagraphs": True}), with
the caches passed as plain tensors: the runner replays on its own copies
and must copy the updates back. Compared with eager step by step; exit
status 1 on any difference.
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import tensorforge  # noqa: E402,F401


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class Step(torch.nn.Module):
    def forward(self, kc, vc, pos, q, k, v, cos, sin):
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        kc.index_copy_(2, pos, k)
        vc.index_copy_(2, pos, v)
        return F.scaled_dot_product_attention(q, kc, vc)


def main():
    torch.manual_seed(0)
    dev, bf = "cuda", torch.bfloat16
    kc0 = torch.zeros(1, 8, 16, 128, device=dev, dtype=bf)
    vc0 = torch.zeros(1, 8, 16, 128, device=dev, dtype=bf)
    m = Step()
    c = torch.compile(m, backend="tensorforge", options=dict(target="h200", cudagraphs=True))
    ek, ev, gk, gv = kc0.clone(), vc0.clone(), kc0.clone(), vc0.clone()
    bad = 0
    with torch.no_grad():
        for step in range(4):
            pos = torch.tensor([step], device=dev)
            ins = [torch.randn(1, 8, 1, 128, device=dev, dtype=bf) for _ in range(3)]
            cs = [torch.randn(1, 1, 128, device=dev, dtype=bf) for _ in range(2)]
            want = m(ek, ev, pos, *ins, *cs)
            got = c(gk, gv, pos, *ins, *cs)
            torch.cuda.synchronize()
            dk, dv = (gk.float() - ek.float()).abs().max().item(), (gv.float() - ev.float()).abs().max().item()
            do = (got.float() - want.float()).abs().max().item()
            ok = dv == 0 and dk <= 0.0625 and do <= 0.0625
            bad += not ok
            print(f"step {step}: k cache {dk:.3g}, v cache {dv:.3g}, output {do:.3g} {'ok' if ok else 'WRONG'}")
    print("ok" if not bad else f"{bad} steps wrong")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
