#!/usr/bin/env python3
"""Which form of a resident split softmax reaches the copy bandwidth (an experiment).

    python3 bench/gpu/resident_variants.py [--rows 4096] [--cols 256000] [--resident MODULE]

Softmax over bf16 rows too long for one program (256000 logits), 4096 rows,
as a group of S programs per row that exchange their splits' max and sum
(docs/fusion.md, "Resident splits"). Forms, all hand-written here but for
the first two:
  tfc           the module tfc emits by default (bench/gpu/out/softmax_256000.py)
  tfc-resident  the module of lower-to-loops{resident=true} (--resident FILE)
  S/keep/poll/w a program per split of C/S columns, num_warps w; keep: what
                the program holds across the group's sync (f32: the split
                widened, as tfc emits; bf16: the split as loaded, widened
                again after the sync; none: nothing, the split read again
                from L2 after the sync); poll: how a program waits for its
                group (atomic: an atomic add of 0 with acquire, as tfc emits;
                volatile: volatile loads, then one acquire)
  rev/w/p       persistent programs (p per SM, num_warps w), a row each at a
                time: its max and sum online in one pass, then its normalised
                columns backwards, the chunks read last (still in L2) first;
                fwd/w/p the same forwards
  cta/n/w       one program per row of one block, launched with num_ctas=n
                (a thread-block cluster) and num_warps w; cta2d/n/w the same
                over a [1, BLOCK] block
  copy          torch copy of the same bytes
Times: do_bench medians; errors against torch.softmax in f32.
"""
import argparse
import importlib.util
import os

import torch
import triton
import triton.language as tl
from triton.testing import do_bench

HERE = os.path.dirname(os.path.abspath(__file__))


@triton.jit
def resident_softmax(s, y, pmax, psum, tickets, groups, n_prog,
                     C: tl.constexpr, S: tl.constexpr, SPLIT: tl.constexpr, BLOCK: tl.constexpr,
                     KEEP: tl.constexpr, POLL: tl.constexpr):
    ticket = tl.atomic_add(tickets, 1)
    if ticket == n_prog - 1:
        tl.store(tickets, 0)
    t = ticket.to(tl.int64)
    split = t % S
    row = t // S
    i = tl.arange(0, BLOCK)
    m = i < SPLIT
    off = row * C + split * SPLIT + i
    xb = tl.load(s + off, mask=m, other=float("-inf"))
    x = xb.to(tl.float32)
    mj = tl.max(x, 0)
    sj = tl.sum(tl.exp(x - mj), 0)
    tl.store(pmax + row * S + split, mj)
    tl.store(psum + row * S + split, sj)
    tl.debug_barrier()
    sync = groups + row * 2
    tl.atomic_add(sync, 1, sem="release")
    if POLL == 0:
        while tl.atomic_add(sync, 0, sem="acquire") < S:
            pass
    else:
        while tl.load(sync, volatile=True) < S:
            pass
        tl.atomic_add(sync, 0, sem="acquire")
    tl.debug_barrier()
    j = tl.arange(0, S)
    pm = tl.load(pmax + row * S + j, cache_modifier=".cg")
    ps = tl.load(psum + row * S + j, cache_modifier=".cg")
    mx = tl.max(pm, 0)
    inv = 1.0 / tl.sum(ps * tl.exp(pm - mx), 0)
    if KEEP == 0:
        x2 = tl.load(s + off, mask=m).to(tl.float32)
    elif KEEP == 1:
        x2 = x
    else:
        # widened again from the bits (not the same expression as x, which
        # the compiler would share and so keep x live)
        x2 = (xb.to(tl.int16, bitcast=True).to(tl.int32) << 16).to(tl.float32, bitcast=True)
    out = tl.exp(x2 - mx) * inv
    tl.store(y + off, out.to(tl.bfloat16), mask=m)
    left = tl.atomic_add(sync + 1, 1)
    if left == S - 1:
        tl.store(sync, 0)
        tl.store(sync + 1, 0)


@triton.jit
def row_softmax(s, y, C: tl.constexpr, BLOCK: tl.constexpr):
    # one program per row; launched with num_ctas > 1, Triton spreads the
    # block over a thread-block cluster and reduces across it
    row = tl.program_id(0).to(tl.int64)
    i = tl.arange(0, BLOCK)
    m = i < C
    x = tl.load(s + row * C + i, mask=m, other=float("-inf")).to(tl.float32)
    mx = tl.max(x, 0)
    e = tl.exp(x - mx)
    out = e * (1.0 / tl.sum(e, 0))
    tl.store(y + row * C + i, out.to(tl.bfloat16), mask=m)


@triton.jit
def online_rows(s, y, R, C: tl.constexpr, BLOCK: tl.constexpr, REV: tl.constexpr):
    # persistent programs over rows; a row's max and sum online in one
    # pass, then its normalised columns in a second pass, backwards when REV
    # (the chunks read last, still in L2, first)
    n = tl.cdiv(C, BLOCK)
    for row in range(tl.program_id(0), R, tl.num_programs(0)):
        base = row.to(tl.int64) * C
        mx = tl.full([BLOCK], float("-inf"), tl.float32)
        sm = tl.zeros([BLOCK], tl.float32)
        for c in range(0, n):
            i = c * BLOCK + tl.arange(0, BLOCK)
            x = tl.load(s + base + i, mask=i < C, other=float("-inf")).to(tl.float32)
            nm = tl.maximum(mx, x)
            sm = sm * tl.exp(mx - nm) + tl.exp(x - nm)
            mx = nm
        M = tl.max(mx, 0)
        inv = 1.0 / tl.sum(sm * tl.exp(mx - M), 0)
        for k in range(0, n):
            if REV:
                c = n - 1 - k
            else:
                c = k
            i = c * BLOCK + tl.arange(0, BLOCK)
            x = tl.load(s + base + i, mask=i < C).to(tl.float32)
            tl.store(y + base + i, (tl.exp(x - M) * inv).to(tl.bfloat16), mask=i < C)


def run_online(x, rev, warps, per_sm):
    R, C = x.shape
    y = torch.empty_like(x)
    programs = min(R, per_sm * torch.cuda.get_device_properties(x.device).multi_processor_count)

    def fn():
        online_rows[(programs,)](x, y, R, C=C, BLOCK=4096, REV=rev, num_warps=warps)
        return y
    return fn


@triton.jit
def row_softmax2d(s, y, C: tl.constexpr, BLOCK: tl.constexpr):
    # row_softmax over a [1, BLOCK] block, reduced along axis 1
    row = tl.program_id(0).to(tl.int64)
    i = tl.arange(0, BLOCK)[None, :]
    m = i < C
    x = tl.load(s + row * C + i, mask=m, other=float("-inf")).to(tl.float32)
    mx = tl.max(x, 1, keep_dims=True)
    e = tl.exp(x - mx)
    out = e * (1.0 / tl.sum(e, 1, keep_dims=True))
    tl.store(y + row * C + i, out.to(tl.bfloat16), mask=m)


def run_cluster(x, ctas, warps, two_d):
    R, C = x.shape
    y = torch.empty_like(x)
    kern = row_softmax2d if two_d else row_softmax

    def fn():
        kern[(R,)](x, y, C=C, BLOCK=triton.next_power_of_2(C), num_ctas=ctas, num_warps=warps)
        return y
    return fn


KEEPS = {"none": 0, "f32": 1, "bf16": 2}
POLLS = {"atomic": 0, "volatile": 1}


def run_variant(x, S, keep, poll, warps):
    R, C = x.shape
    split = C // S
    y = torch.empty_like(x)
    pmax = torch.empty((R, S), dtype=torch.float32, device=x.device)
    psum = torch.empty_like(pmax)
    tickets = torch.zeros((1,), dtype=torch.int32, device=x.device)
    groups = torch.zeros((2 * R,), dtype=torch.int32, device=x.device)
    n = R * S

    def fn():
        resident_softmax[(n,)](x, y, pmax, psum, tickets, groups, n, C=C, S=S, SPLIT=split,
                               BLOCK=triton.next_power_of_2(split), KEEP=KEEPS[keep], POLL=POLLS[poll],
                               num_warps=warps)
        return y
    return fn


def load(path):
    spec = importlib.util.spec_from_file_location("mod_" + os.path.basename(path).replace(".", "_"), path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def time_forms(rows, cols, make_forms, width=28):
    """Times softmax forms over rows x cols bf16 logits beside a copy of the
    same bytes: make_forms(x) gives (name, fn) pairs, fn() the softmax of x.
    Prints each form's median time, bandwidth, ratio to the copy and max
    error against torch.softmax in f32; a form that fails is reported."""
    torch.manual_seed(0)
    x = (torch.randn(rows, cols, device="cuda") * 3).to(torch.bfloat16)
    ref = torch.softmax(x.float(), -1)
    moved = 2 * x.numel() * x.element_size()
    out = torch.empty_like(x)
    ms_copy = do_bench(lambda: out.copy_(x), warmup=25, rep=200, return_mode="median")
    print(f"{torch.cuda.get_device_name()}: softmax over {rows} x {cols} bf16, {moved / 1e9:.2f} GB moved")
    print(f"{'form':{width}s} {'ms':>8s} {'TB/s':>6s} {'/copy':>6s} {'max err':>9s}")
    print(f"{'copy':{width}s} {ms_copy:8.3f} {moved / ms_copy / 1e9:6.2f} {1.0:6.2f}")
    for name, fn in make_forms(x):
        try:
            got = fn()
            torch.cuda.synchronize()
            err = (got.float() - ref).abs().max().item()
            ms = do_bench(fn, warmup=25, rep=200, return_mode="median")
            print(f"{name:{width}s} {ms:8.3f} {moved / ms / 1e9:6.2f} {ms_copy / ms:6.2f} {err:9.2e}", flush=True)
        except Exception as e:  # a form that fails is a finding, not a stop
            print(f"{name:{width}s} failed: {type(e).__name__}: {str(e)[:400]}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--cols", type=int, default=256000)
    ap.add_argument("--resident", default="")
    ap.add_argument("--variants", default="32/f32/atomic/4,32/f32/volatile/4,32/bf16/atomic/4,32/bf16/volatile/4,"
                    "32/bf16/volatile/8,32/none/volatile/4,32/none/volatile/8,16/bf16/volatile/8,"
                    "16/none/volatile/8,64/bf16/volatile/4,64/none/volatile/4,rev/16/1,fwd/16/1,rev/8/2,rev/8/1,rev/4/4,cta/8/32,cta/16/16")
    a = ap.parse_args()

    def forms(x):
        tfc = load(os.path.join(HERE, "out", "softmax_256000.py")).softmax
        out = [("tfc", lambda: tfc(x))]
        if a.resident:
            res = load(a.resident).softmax
            out.append(("tfc-resident", lambda: res(x)))
        for v in a.variants.split(","):
            f = v.split("/")
            if f[0] in ("rev", "fwd"):
                out.append((v, run_online(x, f[0] == "rev", int(f[1]), int(f[2]))))
            elif f[0] in ("cta", "cta2d"):
                out.append((v, run_cluster(x, int(f[1]), int(f[2]), f[0] == "cta2d")))
            else:
                S, keep, poll, warps = f
                out.append((v, run_variant(x, int(S), keep, poll, int(warps))))
        return out
    time_forms(a.rows, a.cols, forms)


if __name__ == "__main__":
    main()
