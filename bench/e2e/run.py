"""End-to-end: transformers decoder layers through torch.compile(backend="tensorforge") on the GPU.

    python3 bench/e2e/run.py OUTDIR [--models llama3-8b,qwen3-8b,mistral-7b,gemma2-9b,deepseek-v3] [--quick] [--rounds N]

Builds each decoder layer from transformers' own classes at its real
configuration, random bf16 weights, and times in one process, on the same
inputs: eager, torch.compile (default, max-autotune-no-cudagraphs,
reduce-overhead) and TensorForge (Triton and PTX, with and without CUDA
graphs), for prefill (1 x 4096 and 8 x 512 tokens) and decode (batch 1 and
32, one token against a static KV cache of 2048). It reports ms per layer,
ratios to Inductor, kernels launched per layer and their summed GPU time
("busy": steadier than the wall time between modes on a shared machine),
compile time cold and warm,
the max error of each against an fp32 eager run, and writes the .tir of
every compiled graph and its fallback log into OUTDIR. With --rounds N the
whole sequence of modes is timed N times, round after round (each mode
compiled again), and each mode's time is the median of its N: on a shared
machine, where medians move 5-10% between runs, a slow spell then falls on
every mode alike.

tfc must be built beforehand (CGO_ENABLED=0 go build -o .bin/tfc ./tfc) and
found through TENSORFORGE_TFC.
"""

import argparse
import copy
import json
import os
import shutil
import sys
import time
import traceback

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import tensorforge  # noqa: E402
from tensorforge import backend as tfbackend  # noqa: E402

from triton.testing import do_bench  # noqa: E402

DEV = "cuda"
BF = torch.bfloat16
# the cache folder and file-name suffix of each matmul option
_MM_TAG = {True: "-mm", False: "-cublas", "auto": ""}


def configs():
    import transformers as tr

    return {
        "llama3-8b": (tr.LlamaConfig, dict(hidden_size=4096, intermediate_size=14336, num_attention_heads=32,
                                           num_key_value_heads=8, head_dim=128, rms_norm_eps=1e-5,
                                           rope_theta=500000.0, max_position_embeddings=8192, vocab_size=128256),
                      "llama"),
        "qwen3-8b": (tr.Qwen3Config, dict(hidden_size=4096, intermediate_size=12288, num_attention_heads=32,
                                          num_key_value_heads=8, head_dim=128, rms_norm_eps=1e-6,
                                          rope_theta=1000000.0, max_position_embeddings=40960, vocab_size=151936),
                     "qwen3"),
        "mistral-7b": (tr.MistralConfig, dict(hidden_size=4096, intermediate_size=14336, num_attention_heads=32,
                                              num_key_value_heads=8, head_dim=128, rms_norm_eps=1e-5,
                                              rope_theta=1000000.0, max_position_embeddings=32768,
                                              sliding_window=None, vocab_size=32768),
                       "mistral"),
        "gemma2-9b": (tr.Gemma2Config, dict(hidden_size=3584, intermediate_size=14336, num_attention_heads=16,
                                            num_key_value_heads=8, head_dim=256, rms_norm_eps=1e-6,
                                            query_pre_attn_scalar=256, sliding_window=4096,
                                            hidden_activation="gelu_pytorch_tanh", vocab_size=256000,
                                            max_position_embeddings=8192),
                      "gemma2"),
        # DeepSeek-V3's first layer (dense MLP; the MoE layers after it
        # route tokens with top-k, which stays in PyTorch): multi-head latent
        # attention, q and kv through low-rank projections with RMSNorms,
        # rotary embeddings on 64 of each head's 192 dims, interleaved
        "deepseek-v3": (tr.DeepseekV3Config, dict(hidden_size=7168, intermediate_size=18432, num_attention_heads=128,
                                                  num_key_value_heads=128, q_lora_rank=1536, kv_lora_rank=512,
                                                  qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128,
                                                  rms_norm_eps=1e-6, rope_theta=10000.0, first_k_dense_replace=3,
                                                  max_position_embeddings=163840, vocab_size=129280),
                        "deepseek_v3"),
    }


def build_layer(name):
    import transformers as tr

    cls_cfg, kw, prefix = configs()[name]
    cfg = cls_cfg(**kw)
    cfg._attn_implementation = "sdpa"
    mod = getattr(tr.models, prefix)
    modeling = getattr(mod, "modeling_" + prefix)
    layer_cls = [getattr(modeling, n) for n in dir(modeling) if n.endswith("DecoderLayer")][0]
    rope_cls = [getattr(modeling, n) for n in dir(modeling) if n.endswith("RotaryEmbedding")][0]
    torch.manual_seed(0)
    layer = layer_cls(cfg, layer_idx=0)
    with torch.no_grad():
        for n, p in layer.named_parameters():
            if p.dim() == 1:
                p.normal_(1.0 if "norm" in n else 0.0, 0.1)
            else:
                p.normal_(0.0, 0.02)
    layer = layer.to(DEV, BF).eval()
    rope = rope_cls(config=cfg).to(DEV)
    return cfg, layer, rope


def layer_call(layer, x, pos_emb, cache=None, cache_position=None):
    kw = dict(position_embeddings=pos_emb)
    if cache is not None:
        kw.update(past_key_values=cache, use_cache=True, cache_position=cache_position)
    out = layer(x, **kw)
    return out[0] if isinstance(out, tuple) else out


def profile_kernels(fn, calls=3):
    """Kernels launched per call of fn (memcpy and memset left out) and
    their summed GPU time per call in ms: the busy time, which does not
    move with launch gaps or with how the machine's clocks drift between
    modes as the wall time does."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    n, us = 0, 0.0
    for e in prof.events():
        if getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA:
            us += e.time_range.end - e.time_range.start
            if "memcpy" not in e.name.lower() and "memset" not in e.name.lower():
                n += 1
    return n // calls, us / calls / 1000


def max_err(out, ref):
    d = (out.float() - ref.float()).abs()
    return dict(max_abs=d.max().item(), rel=(d.max() / ref.float().abs().max().clamp_min(1e-30)).item())


class StaticKV:
    """A static KV cache of one layer, kept as transformers' StaticCache keeps it.

    [batch, kv_heads, 2048, head_dim] buffers at fixed addresses
    (mark_static_address), updated in place at the decode position with
    index_copy_, the whole buffer returned to attention. The layer calls only
    update(); the bench owns the position.
    """

    is_compileable = True

    def __init__(self, keys, values, pos):
        self.keys, self.values, self.pos = keys, values, pos
        torch._dynamo.mark_static_address(self.keys)
        torch._dynamo.mark_static_address(self.values)

    def update(self, key_states, value_states, layer_idx=0, cache_kwargs=None):
        self.keys.index_copy_(2, self.pos, key_states)
        self.values.index_copy_(2, self.pos, value_states)
        return self.keys, self.values

    def get_seq_length(self, layer_idx=0):
        return self.keys.shape[2]


HEADLINE = ("prefill 1x4096", "decode b32 kv2048")


def run_model(name, args, out, results):
    cfg, layer, rope = build_layer(name)
    layer32 = copy.deepcopy(layer).float()
    shapes = [("prefill 1x4096", 1, 4096, False), ("prefill 8x512", 8, 512, False),
              ("decode b1 kv2048", 1, 1, True), ("decode b32 kv2048", 32, 1, True)]
    if args.quick:
        shapes = [shapes[0], shapes[3]]
    if args.shapes:
        shapes = [sh for sh in shapes if sh[0] in args.shapes.split(",")]
    for sname, b, s, decode in shapes:
        key = "%s | %s" % (name, sname)
        row = results.setdefault(key, {})
        torch.manual_seed(1)
        x = torch.randn(b, s, cfg.hidden_size, device=DEV, dtype=BF)
        if decode:
            pos = torch.full((b, s), 2047, device=DEV, dtype=torch.long)
            cache_position = torch.tensor([2047], device=DEV)
        else:
            pos = torch.arange(s, device=DEV).unsqueeze(0).expand(b, s)
            cache_position = None
        cos, sin = rope(x, pos)
        pos_emb = (cos, sin)
        pos_emb32 = (cos.float(), sin.float())

        kvh = cfg.num_key_value_heads
        hd = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        hdk, hdv = hd, hd
        if hasattr(cfg, "kv_lora_rank"):
            # multi-head latent attention caches one latent per token (the
            # cache's keys) and its rotary part (its values)
            kvh, hdk, hdv = 1, cfg.kv_lora_rank, cfg.qk_rope_head_dim
        g = torch.Generator(device=DEV).manual_seed(2)
        k0 = torch.randn(b, kvh, 2048, hdk, device=DEV, dtype=BF, generator=g) if decode else None
        v0 = torch.randn(b, kvh, 2048, hdv, device=DEV, dtype=BF, generator=g) if decode else None

        def mk_cache(dtype=BF):
            # the first 2047 positions filled, the token decoded at 2047
            if not decode:
                return None
            return StaticKV(k0.to(dtype).clone(), v0.to(dtype).clone(), cache_position)

        with torch.no_grad():
            ref = layer_call(layer32, x.float(), pos_emb32, mk_cache(torch.float32), cache_position)
            torch.cuda.synchronize()

            modes = [("eager", None)]
            modes += [("inductor default", dict(mode=None)), ("inductor max-autotune-no-cudagraphs",
                                                              dict(mode="max-autotune-no-cudagraphs")),
                      ("inductor reduce-overhead", dict(mode="reduce-overhead"))]
            for emitter in ("triton", "ptx"):
                for cg in (False, True):
                    modes.append(("tensorforge %s%s" % (emitter, " +cudagraphs" if cg else ""),
                                  dict(backend="tensorforge", options=dict(emitter=emitter, cudagraphs=cg,
                                                                           target="h200"))))
            # matmuls always compiled (with their prologues and epilogues), and never (cuBLAS);
            # the modes above take the default, matmul="auto" (compiled in decode graphs)
            for tag, mm in (("matmul", True), ("cublas", False)):
                for cg in (False, True):
                    modes.append(("tensorforge triton %s%s" % (tag, " +cudagraphs" if cg else ""),
                                  dict(backend="tensorforge", options=dict(emitter="triton", cudagraphs=cg,
                                                                           target="h200", matmul=mm))))
            if args.quick or args.autotune == "none" or (args.autotune == "headline" and sname not in HEADLINE):
                modes = [m for m in modes if "max-autotune" not in m[0]]
            if args.modes:
                want = args.modes.split(",")
                modes = [m for m in modes if m[0] in want]
            for rnd, (mname, spec) in [(r, m) for r in range(args.rounds) for m in modes]:
                cache = mk_cache()
                if rnd > 0 and "error" in row.get(mname, {}):
                    continue
                try:
                    torch._dynamo.reset()
                    tfbackend.compiled_graphs.clear()
                    if spec is None:
                        fn = lambda: layer_call(layer, x, pos_emb, cache, cache_position)  # noqa: E731
                        t_cold = 0.0
                    else:
                        kw = dict(spec)
                        if kw.get("backend") == "tensorforge":
                            cdir = os.path.join(out, "cache", "%s-%s%s" % (name, kw["options"]["emitter"],
                                                                             _MM_TAG[kw["options"].get("matmul", "auto")]))
                            shutil.rmtree(cdir, ignore_errors=True)
                            kw["options"] = dict(kw["options"], cache_dir=cdir)
                        elif kw.get("mode") is None:
                            kw.pop("mode")
                        clayer = torch.compile(layer, dynamic=False, **kw)
                        fn = lambda: layer_call(clayer, x, pos_emb, cache, cache_position)  # noqa: E731
                        t0 = time.perf_counter()
                        fn()
                        torch.cuda.synchronize()
                        t_cold = time.perf_counter() - t0
                    y = fn()
                    torch.cuda.synchronize()
                    err = max_err(y, ref)
                    ms = do_bench(fn, warmup=10, rep=50 if args.quick else 100, return_mode="median")
                    if rnd > 0:
                        # a later round: one more time of the mode, taken after
                        # every other mode's of the round before (slow drifts
                        # of a shared machine fall on every mode alike)
                        row[mname]["ms_rounds"].append(ms)
                        row[mname]["ms"] = sorted(row[mname]["ms_rounds"])[len(row[mname]["ms_rounds"]) // 2]
                        print("%-40s %-42s %8.3f ms  (round %d; median of %d: %.3f ms)" % (
                            key, mname, ms, rnd + 1, len(row[mname]["ms_rounds"]), row[mname]["ms"]), flush=True)
                        continue
                    nk, busy = profile_kernels(fn)
                    if "cudagraphs" in mname or "reduce-overhead" in mname:
                        nk = None  # a graph replay: the kernels of the modes without graphs
                    entry = dict(ms=ms, ms_rounds=[ms], err=err, kernels=nk, busy_ms=busy, compile_cold_s=t_cold)
                    if spec is not None and spec.get("backend") == "tensorforge":
                        graphs = list(tfbackend.compiled_graphs)
                        entry["tfc_calls_cold"] = sum(g.compiler.tfc_calls for g in graphs[:1])
                        # warm start: a fresh Dynamo, the same cache folder
                        torch._dynamo.reset()
                        calls_before = graphs[0].compiler.tfc_calls if graphs else 0
                        tfbackend.compiled_graphs.clear()
                        clayer = torch.compile(layer, dynamic=False, **kw)
                        t0 = time.perf_counter()
                        layer_call(clayer, x, pos_emb, mk_cache(), cache_position)
                        torch.cuda.synchronize()
                        entry["compile_warm_s"] = time.perf_counter() - t0
                        g2 = list(tfbackend.compiled_graphs)
                        entry["tfc_calls_warm"] = (g2[0].compiler.tfc_calls - calls_before) if g2 else None
                        tag = "%s-%s-%s%s" % (name, sname.replace(" ", "_"), kw["options"]["emitter"],
                                              _MM_TAG[kw["options"].get("matmul", "auto")])
                        if graphs and "cudagraphs" not in mname:
                            with open(os.path.join(out, tag + ".tir"), "w") as f:
                                f.write("".join(g.tir for g in graphs))
                            with open(os.path.join(out, tag + ".log"), "w") as f:
                                f.write("\n".join(g.log.format() for g in graphs) + "\n")
                            entry["regions"] = sum(len(g.kernels) for g in graphs)
                            entry["fallback_ops"] = {op: sum(v.values()) for g in graphs
                                                     for op, v in g.log.summary().items()}
                    row[mname] = entry
                    print("%-40s %-42s %8.3f ms  busy %.3f  err %.3g  kernels %s  compile %.1fs" % (
                        key, mname, ms, busy, err["rel"], nk, t_cold), flush=True)
                except Exception as e:  # noqa: BLE001
                    if rnd > 0:
                        row[mname]["error_round_%d" % (rnd + 1)] = "%s: %s" % (type(e).__name__, e)
                    else:
                        row[mname] = dict(error="%s: %s" % (type(e).__name__, e))
                    print("%-40s %-42s FAILED %s" % (key, mname, e), flush=True)
                    traceback.print_exc()
        json.dump(results, open(os.path.join(out, "e2e.json"), "w"), indent=1)
    del layer, layer32
    torch.cuda.empty_cache()


def greedy_decode(args, out, results):
    """A 2-layer LlamaForCausalLM, greedy decoding of 64 tokens against eager, recompiles counted.

    In f32 the claim is the same tokens as eager. In bf16, where a near tie
    of two logits flips with any change of rounding, the agreement of
    Inductor with eager is measured beside TensorForge's for scale.
    """
    import transformers as tr

    cls_cfg, kw, _ = configs()["llama3-8b"]
    cfg = cls_cfg(**dict(kw, num_hidden_layers=2))
    cfg._attn_implementation = "sdpa"
    ids = None

    def new_cache(kind):
        if kind == "dynamic":
            return tr.DynamicCache()
        # transformers' StaticCache: buffers of max_cache_len tokens at fixed
        # addresses, updated in place with index_copy_ at cache_position
        try:
            return tr.StaticCache(config=cfg, max_cache_len=96)
        except TypeError:
            return tr.StaticCache(config=cfg, max_batch_size=1, max_cache_len=96, device=DEV, dtype=dtype)

    def generate(fwd, kind, n=64):
        cache = new_cache(kind)
        toks, cur = [], ids
        pos = 0
        for _ in range(n):
            cp = torch.arange(pos, pos + cur.shape[1], device=DEV)
            logits = fwd(input_ids=cur, past_key_values=cache, use_cache=True, cache_position=cp).logits
            pos += cur.shape[1]
            cur = logits[:, -1:].argmax(-1)
            toks.append(cur.item())
        return toks

    for kind, dtype in (("dynamic", torch.float32), ("dynamic", BF), ("static", torch.float32), ("static", BF)):
        torch.manual_seed(0)
        model = tr.LlamaForCausalLM(cfg).to(DEV, dtype).eval()
        ids = torch.randint(0, cfg.vocab_size, (1, 16), device=DEV, generator=torch.Generator(device=DEV).manual_seed(3))
        row = {}
        with torch.no_grad():
            want = generate(model.forward, kind)
            backends = [("tensorforge", dict(backend="tensorforge", options=dict(target="h200")))]
            if dtype == BF:
                backends.append(("inductor", dict()))
            for bname, kw in backends:
                torch._dynamo.reset()
                tfbackend.compiled_graphs.clear()
                try:
                    got = generate(torch.compile(model.forward, **kw), kind)
                except Exception as e:  # noqa: BLE001
                    row[bname] = dict(error="%s: %s" % (type(e).__name__, e))
                    traceback.print_exc()
                    continue
                same = sum(a == b for a, b in zip(want, got))
                row[bname] = dict(tokens=len(want), same_tokens=same, first_diff=next(
                    (i for i, (a, b) in enumerate(zip(want, got)) if a != b), None))
                if bname == "tensorforge":
                    row[bname]["graphs_compiled"] = len(tfbackend.compiled_graphs)
                    row[bname]["tfc_calls"] = sum(g.compiler.tfc_calls for g in list(tfbackend.compiled_graphs)[:1])
                print("greedy decode %s cache %s %s: %d/%d tokens equal to eager, first difference at %s, %s" % (
                    kind, str(dtype), bname, same, len(want), row[bname]["first_diff"],
                    "%d graphs compiled" % len(tfbackend.compiled_graphs) if bname == "tensorforge" else ""),
                    flush=True)
        results["greedy 2-layer llama %s %s cache" % (str(dtype).replace("torch.", ""), kind)] = row
        del model
        torch.cuda.empty_cache()


def dynamic_rows(args, out, results):
    """One compiled graph for every token count: the layer compiled with dynamic=True, run at three shapes."""
    cfg, layer, rope = build_layer("llama3-8b")
    layer32 = copy.deepcopy(layer).float()
    row = {}
    torch._dynamo.reset()
    tfbackend.compiled_graphs.clear()
    clayer = torch.compile(layer, backend="tensorforge", dynamic=True, options=dict(target="h200"))
    with torch.no_grad():
        for b, s in ((1, 1000), (8, 512), (1, 4096)):
            x = torch.randn(b, s, cfg.hidden_size, device=DEV, dtype=BF)
            pos = torch.arange(s, device=DEV).unsqueeze(0).expand(b, s)
            cos, sin = rope(x, pos)
            try:
                y = layer_call(clayer, x, (cos, sin))
                ref = layer_call(layer32, x.float(), (cos.float(), sin.float()))
                row["%dx%d" % (b, s)] = dict(err=max_err(y, ref), graphs=len(tfbackend.compiled_graphs),
                                             tfc_calls=sum(g.compiler.tfc_calls for g in list(tfbackend.compiled_graphs)[:1]))
            except Exception as e:  # noqa: BLE001
                row["%dx%d" % (b, s)] = dict(error="%s: %s" % (type(e).__name__, e))
                traceback.print_exc()
            print("dynamic rows %dx%d:" % (b, s), row["%dx%d" % (b, s)], flush=True)
    if tfbackend.compiled_graphs:
        g = tfbackend.compiled_graphs[-1]
        with open(os.path.join(out, "llama3-8b-dynamic-triton.tir"), "w") as f:
            f.write(g.tir)
        with open(os.path.join(out, "llama3-8b-dynamic-triton.log"), "w") as f:
            f.write(g.log.format() + "\n")
    results["dynamic rows llama3-8b"] = row


def summary(results):
    """Lines of ratios per model and shape: TensorForge's best mode against
    Inductor's best (each without and with CUDA graphs), by wall time and by
    busy time. Below 1.00 TensorForge is faster."""
    lines = []
    for key, row in results.items():
        if " | " not in key:
            continue
        ok = {m: e for m, e in row.items() if isinstance(e, dict) and "ms" in e}
        for graphs in (False, True):
            def pick(prefix):
                c = [(e["ms"], m) for m, e in ok.items() if m.startswith(prefix)
                     and (("cudagraphs" in m or "reduce-overhead" in m) == graphs)]
                return min(c) if c else None
            ind, tf = pick("inductor"), pick("tensorforge")
            if not ind or not tf:
                continue
            bi, bt = ok[ind[1]].get("busy_ms"), ok[tf[1]].get("busy_ms")
            busy = "busy %.3f / %.3f = %.2f" % (bt, bi, bt / bi) if bi and bt else ""
            lines.append("%-40s %-10s %-32s %7.3f ms / %-26s %7.3f ms = %.2f  %s" % (
                key, "graphs" if graphs else "no graphs", tf[1], tf[0], ind[1], ind[0], tf[0] / ind[0], busy))
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--models", default="llama3-8b,qwen3-8b,mistral-7b,gemma2-9b", help="comma-separated; '' for none")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=1,
                    help="time every mode this many times, round after round, and report the median")
    ap.add_argument("--no-greedy", action="store_true")
    ap.add_argument("--autotune", default="all", choices=["all", "headline", "none"],
                    help="the shapes measured with max-autotune-no-cudagraphs (it tunes for minutes)")
    ap.add_argument("--dynamic", action="store_true", help="also the dynamic-shape check")
    ap.add_argument("--modes", default="", help="comma-separated mode names to run (default: all), e.g. "
                    "'eager,inductor default,tensorforge triton,tensorforge triton matmul'")
    ap.add_argument("--shapes", default="", help="comma-separated shape names (default: all), e.g. 'decode b1 kv2048'")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    results = {}
    import transformers

    results["versions"] = dict(torch=torch.__version__, transformers=transformers.__version__,
                               gpu=torch.cuda.get_device_name())
    for name in [m for m in args.models.split(",") if m]:
        try:
            run_model(name, args, args.out, results)
        except Exception as e:  # noqa: BLE001
            results[name] = dict(error="%s: %s" % (type(e).__name__, e))
            traceback.print_exc()
        json.dump(results, open(os.path.join(args.out, "e2e.json"), "w"), indent=1)
    if args.dynamic:
        try:
            dynamic_rows(args, args.out, results)
        except Exception as e:  # noqa: BLE001
            results["dynamic rows llama3-8b"] = dict(error="%s: %s" % (type(e).__name__, e))
            traceback.print_exc()
    if not args.no_greedy:
        try:
            greedy_decode(args, args.out, results)
        except Exception as e:  # noqa: BLE001
            results["greedy 2-layer llama"] = dict(error="%s: %s" % (type(e).__name__, e))
            traceback.print_exc()
    json.dump(results, open(os.path.join(args.out, "e2e.json"), "w"), indent=1)
    print("\n".join(["", "# TensorForge's best mode / Inductor's best, wall time, then busy time"] + summary(results)))


if __name__ == "__main__":
    main()
