"""The PyTorch frontend on the CPU: trace, translate, compile with tfc, run, compare with eager.

Runs on torch 1.13 (Debian's python3-torch) and later. Needs tfc: set
TENSORFORGE_TFC (the Go test that runs this file builds it) or put tfc on PATH.

    TENSORFORGE_TFC=/tmp/tfc python3 -m unittest discover -s python/tests -v
"""

import math
import re
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import tensorforge  # noqa: E402
from tensorforge import compiler as tfcompiler  # noqa: E402
from tensorforge import optable, partition, translate  # noqa: E402
from tensorforge.backend import _ensure_meta  # noqa: E402

BF = torch.bfloat16


# Modules written the way transformers writes them.
class RMSNorm(torch.nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(1 + 0.1 * torch.randn(d))
        self.eps = eps

    def forward(self, h):
        dt = h.dtype
        h = h.to(torch.float32)
        var = h.pow(2).mean(-1, keepdim=True)
        h = h * torch.rsqrt(var + self.eps)
        return self.weight * h.to(dt)


class AddNorm(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = RMSNorm(d)

    def forward(self, x, residual):
        h = x + residual
        return h, self.norm(h)


class MLPHalf(torch.nn.Module):
    """The second half of a decoder layer: residual add, norm, SwiGLU MLP, residual add."""

    def __init__(self, d, f, keep_h=False):
        super().__init__()
        self.norm = RMSNorm(d)
        self.mlp = SwiGLU(d, f)
        self.keep_h = keep_h

    def forward(self, x, attn):
        h = x + attn
        y = h + self.mlp(self.norm(h))
        return (y, h) if self.keep_h else y


class ViewReadAfter(MLPHalf):
    """h read through a view after the add: the view also feeds the MLP, so
    it is an ancestor of the down projection, but a slice of it is not."""

    def forward(self, x, attn):
        h = x + attn
        hf = h.flatten(0, 1)
        y = h + self.mlp(self.norm(hf)).view(h.shape)
        return y * hf[..., :1].exp().view(h.shape[0], h.shape[1], 1)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class Rope(torch.nn.Module):
    def forward(self, q, k, cos, sin):
        cos = cos.unsqueeze(1)
        sin = sin.unsqueeze(1)
        return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


class ProjectedRope(torch.nn.Module):
    """q as attention makes it: a projection viewed as heads and transposed, then rotated."""

    def __init__(self, heads, dim):
        super().__init__()
        self.heads, self.dim = heads, dim

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        q = x.view(b, s, self.heads, self.dim).transpose(1, 2)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        q = q * cos + rotate_half(q) * sin
        return torch.matmul(q, q.transpose(-1, -2))


class NormedRope(torch.nn.Module):
    """Qwen3's q: a projection viewed as heads, each head RMSNormed (q_norm), transposed, rotated."""

    def __init__(self, heads, dim):
        super().__init__()
        self.heads, self.dim = heads, dim
        self.norm = RMSNorm(dim)

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        q = self.norm(x.view(b, s, self.heads, self.dim)).transpose(1, 2)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        q = q * cos + rotate_half(q) * sin
        return torch.matmul(q, q.transpose(-1, -2))


class NormedHeads(torch.nn.Module):
    """Qwen3's k: a projection viewed as heads, each head RMSNormed (k_norm), and transposed to the
    attention layout, returned as a contiguous tensor."""

    def __init__(self, heads, dim):
        super().__init__()
        self.heads, self.dim = heads, dim
        self.norm = RMSNorm(dim)

    def forward(self, x):
        b, s, _ = x.shape
        return self.norm(x.view(b, s, self.heads, self.dim)).transpose(1, 2).contiguous()


class CacheUpdate(torch.nn.Module):
    """A decode step's KV-cache update as transformers' StaticCache writes it:
    q and k rotated, then k and v copied into the caches at the new positions."""

    def forward(self, kc, vc, pos, q, k, v, cos, sin):
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        kc.index_copy_(2, pos, k)
        vc.index_copy_(2, pos, v.transpose(1, 2))
        return q


class CacheUpdatePut(CacheUpdate):
    """The same update written as assignments to the cache (``index_put_``)."""

    def forward(self, kc, vc, pos, q, k, v, cos, sin):
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        q = q * cos + rotate_half(q) * sin
        kc[:, :, pos] = k * cos + rotate_half(k) * sin
        vc[:, :, pos] = v.transpose(1, 2)
        return q


class SwiGLU(torch.nn.Module):
    def __init__(self, d, f):
        super().__init__()
        self.gate_proj = torch.nn.Linear(d, f, bias=False)
        self.up_proj = torch.nn.Linear(d, f, bias=False)
        self.down_proj = torch.nn.Linear(f, d, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class SwiGLUResidual(SwiGLU):
    def forward(self, x):
        return x + super().forward(x)


class ScoresSoftmax(torch.nn.Module):
    def forward(self, q, k, mask):
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        s = s + mask
        return F.softmax(s, dim=-1, dtype=torch.float32).to(q.dtype)


class NaiveLogAddExp(torch.nn.Module):
    def forward(self, a, b):
        return torch.log(torch.exp(a) + torch.exp(b))


class GeluTanh(torch.nn.Module):
    def forward(self, x):
        return F.gelu(x, approximate="tanh") * 2.0 - 1.0


def _tfc():
    try:
        return tensorforge.find_tfc()
    except tensorforge.CompileError as e:
        raise unittest.SkipTest(str(e)) if os.environ.get("TENSORFORGE_ALLOW_NO_TFC") else AssertionError(str(e))


class GPT2Block(torch.nn.Module):
    """GPT-2's block: pre-LayerNorm attention (causal mask by masked_fill) and a
    GELU MLP, each with a residual add."""

    def __init__(self, d=64, h=4):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.fc, self.out = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (a.view(b, t, self.h, d // self.h).transpose(1, 2) for a in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.h)
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.out(torch.nn.functional.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class Router(torch.nn.Module):
    """A mixture-of-experts router (Mixtral's): softmax over the experts in
    f32, the top 2 (in PyTorch), their weights renormalised."""

    def __init__(self, d=64, e=8):
        super().__init__()
        self.gate = torch.nn.Linear(d, e, bias=False)

    def forward(self, x):
        p = torch.nn.functional.softmax(self.gate(x), dim=-1, dtype=torch.float)
        w, idx = torch.topk(p, 2, dim=-1)
        return (w / w.sum(-1, keepdim=True)).to(x.dtype), idx


class FrontendTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tfc = _tfc()
        cls.cache = tempfile.mkdtemp(prefix="tf-cache-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.cache, ignore_errors=True)

    def opts(self, **kw):
        d = dict(target="cpu", tfc=self.tfc, cache_dir=self.cache)
        d.update(kw)
        return d

    def run_case(self, mod, ins, atol, rtol, regions=None, **options):
        torch.manual_seed(0)
        with torch.no_grad():
            want = mod(*ins)
            compiled = tensorforge.compile_module(mod, *ins, options=self.opts(**options))
            got = compiled(*ins)
        if not isinstance(want, tuple):
            want, got = (want,), (got,)
        self.assertEqual(len(want), len(got))
        for w, g in zip(want, got):
            self.assertEqual(w.dtype, g.dtype)
            self.assertEqual(w.shape, g.shape)
            torch.testing.assert_close(g.float(), w.float(), atol=atol, rtol=rtol, equal_nan=True)
        if regions is not None:
            self.assertEqual(len(compiled.kernels), regions, compiled.log.format())
        return compiled

    # --- real-model patterns, compiled for the CPU and run --------------
    def test_rmsnorm_bf16(self):
        # one bf16 ULP (2^-8 relative) on the weight product, as eager rounds
        c = self.run_case(RMSNorm(64).to(BF), (torch.randn(3, 5, 64).to(BF),), atol=1e-2, rtol=8e-3, regions=1)
        self.assertIn("graph.reduce_mean", c.tir)
        self.assertIn("graph.rsqrt", c.tir)

    def test_layer_norm_is_one_kernel(self):
        # LayerNorm decomposes to var_mean, whose parts (var, mean) are row
        # reductions fused with the residual add before and the GELU after
        class AddNormGelu(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.ln = torch.nn.LayerNorm(64)
                with torch.no_grad():
                    self.ln.weight.normal_(1.0, 0.1)
                    self.ln.bias.normal_(0.0, 0.1)

            def forward(self, x, r):
                return torch.nn.functional.gelu(self.ln(x + r), approximate="tanh")

        ins = (torch.randn(3, 5, 64) * 3 + 7, torch.randn(3, 5, 64))
        c = self.run_case(AddNormGelu(), ins, atol=1e-5, rtol=1e-5, regions=1)
        self.assertIn("graph.reduce_mean", c.tir)
        self.assertNotIn("var_mean", c.log.format())

    def test_layer_norm_bf16_against_float64(self):
        # in f32 inside the kernel, rounded once to bf16: within half a bf16
        # ULP of the float64 LayerNorm (torch 1.13's CPU kernel is not, so
        # the reference is float64, not eager)
        torch.manual_seed(0)
        ln = torch.nn.LayerNorm(64).to(BF)
        with torch.no_grad():
            ln.weight.normal_(1.0, 0.1)
            ln.bias.normal_(0.0, 0.1)
        x = (torch.randn(4, 7, 64) * 4 + 10).to(BF)
        with torch.no_grad():
            c = tensorforge.compile_module(ln, x, options=self.opts())
            got = c(x).double()
            xd = x.double()
            mu = xd.mean(-1, keepdim=True)
            ref = (xd - mu) / torch.sqrt(((xd - mu) ** 2).mean(-1, keepdim=True) + 1e-5)
            ref = ref * ln.weight.double() + ln.bias.double()
        ulp = torch.exp2(torch.floor(torch.log2(ref.abs().clamp_min(1e-30))) - 7)
        self.assertLessEqual(((got - ref).abs() / ulp).max().item(), 0.5 + 1e-6)
        self.assertEqual(len(c.kernels), 1, c.log.format())

    def test_variance(self):
        # torch.var: unbiased (correction 1) and biased, keepdim or not, over
        # one axis and two; a correction that leaves no degree of freedom
        # stays in PyTorch
        class Vars(torch.nn.Module):
            def forward(self, x):
                return (torch.var(x * 2.0, dim=-1), torch.var(x, dim=-1, unbiased=False, keepdim=True) + 1.0,
                        torch.var(x.exp(), dim=(1, 2)))

        x = torch.randn(4, 7, 48) * 3 + 5
        c = self.run_case(Vars(), (x,), atol=1e-4, rtol=1e-5)
        self.assertNotIn("stays in PyTorch", c.log.format())
        self.assertEqual(c.tir.count("graph.reduce_mean"), 6, c.tir)  # a mean and a mean of squares each

        class Single(torch.nn.Module):
            def forward(self, x):
                return torch.var(x * 2.0, dim=-1, keepdim=True) + 1.0

        with torch.no_grad():
            c = tensorforge.compile_module(Single(), torch.randn(3, 1), options=self.opts())
        self.assertIn("a correction of 1 over 1 elements", c.log.format())

    def test_activations_by_decomposition(self):
        # leaky_relu, hardtanh, elu, clamp_min and clamp_max decompose into
        # declared ops: one kernel each with the op after them
        F = torch.nn.functional
        cases = [("leaky_relu", lambda x: F.leaky_relu(x, 0.1) * 2.0),
                 ("hardtanh", lambda x: F.hardtanh(x, -0.5, 0.75) * 2.0),
                 ("elu", lambda x: F.elu(x) * 2.0),
                 ("clamp_min", lambda x: torch.clamp_min(x, 0.25) * 2.0),
                 ("clamp_max", lambda x: torch.clamp_max(x, 0.25) * 2.0)]
        x = torch.randn(4, 32) * 3
        x[0, :4] = torch.tensor([float("inf"), -float("inf"), float("nan"), 0.0])
        for name, fn in cases:
            with self.subTest(name):
                with torch.no_grad():
                    c = tensorforge.compile_module(fn, x, options=self.opts())
                    torch.testing.assert_close(c(x), fn(x), atol=1e-6, rtol=1e-6, equal_nan=True)
                self.assertEqual(len(c.kernels), 1, c.log.format())
                self.assertNotIn("stays in PyTorch", c.log.format())

    def test_l2_norm(self):
        # F.normalize (a norm of order 2, clamped, divided by): one kernel; in
        # bf16 the norm is summed in f32 and rounded once
        F = torch.nn.functional
        fn = lambda x: F.normalize(x, dim=-1) * 2.0  # noqa: E731
        x = torch.randn(6, 64) * 5
        c = self.run_case(fn, (x,), atol=1e-6, rtol=1e-5, regions=1)
        self.assertIn("graph.reduce_sum", c.tir)
        xb = x.to(BF)
        with torch.no_grad():
            cb = tensorforge.compile_module(lambda t: torch.linalg.vector_norm(t, dim=-1), xb, options=self.opts())
            got = cb(xb).double()
        ref = xb.double().pow(2).sum(-1).sqrt()
        self.assertLessEqual(((got - ref).abs() / ref).max().item(), 2.0 ** -8)
        with torch.no_grad():
            c3 = tensorforge.compile_module(lambda t: torch.linalg.vector_norm(t, 3, dim=-1), x, options=self.opts())
        self.assertIn("a norm of order 3", c3.log.format())

    def test_gpt2_block(self):
        # LayerNorm 1 alone (the qkv projection follows), the masked softmax,
        # residual add + LayerNorm 2, the GELU between the MLP's matmuls, the
        # last residual add: five kernels; matmuls, the mask's factories and
        # tril stay in PyTorch
        torch.manual_seed(0)
        c = self.run_case(GPT2Block(), (torch.randn(2, 8, 64),), atol=2e-6, rtol=1e-5, regions=5)
        log = c.log.format()
        self.assertIn("stays in PyTorch: tril", log)
        self.assertNotIn("var_mean", log)

    def test_moe_router(self):
        torch.manual_seed(0)
        c = self.run_case(Router(), (torch.randn(2, 8, 64),), atol=1e-6, rtol=1e-6, regions=2)
        self.assertIn("top-k stays in PyTorch", c.log.format())

    def test_mean_pooling_over_tokens(self):
        # sentence embeddings: the masked mean over the tokens (a reduction
        # over the middle axis) fused with the product before it and the
        # division after it (a reduce kernel), the mask's count apart
        def pool(h, mask):
            m = mask.unsqueeze(-1).to(h.dtype)
            return (h * m).sum(1) / m.sum(1).clamp(min=1e-9)

        h, mask = torch.randn(3, 10, 32), (torch.rand(3, 10) > 0.3).long()
        mask[0] = 0  # a sequence with no tokens: 0 / 1e-9
        c = self.run_case(pool, (h, mask), atol=1e-6, rtol=1e-6, regions=1)
        out = subprocess.run([self.tfc, "-", "-O2", "--emit=tir"], input=c.tir, capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn('kind = "generic"', out.stdout)
        self.assertLessEqual(out.stdout.count("loop.kernel {"), 3, out.stdout)

    def test_rmsnorm_f32_extremes(self):
        x = torch.randn(4, 64)
        x[0, 0], x[1, 3], x[2, :] = 3e38, 1e-40, 0.0
        x[3, 5] = float("nan")
        with torch.no_grad():
            m = RMSNorm(64)
            want = m(x)
            got = tensorforge.compile_module(m, x, options=self.opts())(x)
        # row 0 overflows to inf in the sum of squares: eager and compiled give 0 / nan alike
        for r in range(4):
            torch.testing.assert_close(got[r], want[r], atol=1e-6, rtol=2e-6, equal_nan=True)

    def test_add_rmsnorm_two_results(self):
        # eager rounds h = x + residual to bf16 before the norm reads it and
        # again before the weight product; the kernel keeps both in f32, so
        # the two are up to two bf16 roundings (2^-6 relative) apart
        torch.manual_seed(3)
        self.run_case(AddNorm(32).to(BF), (torch.randn(4, 32).to(BF), torch.randn(4, 32).to(BF)),
                      atol=1e-2, rtol=2.0 ** -6, regions=1)

    def test_rope_rotate_half(self):
        # rotate_half's slices and concat become one roll (an index map) times a sign: one
        # region, no concat, and the values of eager bit for bit (the sign product is exact)
        for dt, tol in ((torch.float32, 1e-6), (BF, 8e-3)):
            ins = (torch.randn(1, 4, 8, 16).to(dt), torch.randn(1, 2, 8, 16).to(dt), torch.randn(1, 8, 16).to(dt),
                   torch.randn(1, 8, 16).to(dt))
            c = self.run_case(Rope(), ins, atol=tol, rtol=tol, regions=1)
            self.assertIn("graph.roll", c.tir)
            self.assertIn("shift = 8", c.tir)
            self.assertNotIn("graph.concat", c.tir)
            self.assertNotIn("graph.slice", c.tir)

    def test_rope_on_transposed_heads_reads_them_in_place(self):
        # the transpose of the projection is moved past the element-wise chain: the region
        # reads [b, s, h, d] as it lies in memory (no copy to make the transpose contiguous)
        x, cos, sin = torch.randn(2, 8, 4 * 16), torch.randn(2, 8, 16), torch.randn(2, 8, 16)
        c = self.run_case(ProjectedRope(4, 16), (x, cos, sin), atol=1e-5, rtol=1e-5, regions=1)
        self.assertIn("tensor<2x8x4x16xf32>", c.tir.split("\n")[0])
        self.assertIn("tensor<2x8x1x16xf32>", c.tir.split("\n")[0])
        self.assertNotIn("graph.transpose %view", c.tir)
        # the copies matmul makes of q and q^T to be contiguous stay in the region, which writes
        # those layouts through the transposes' index maps instead of [b, s, h, d]
        self.assertIn("-> (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>)", c.tir.split("\n")[0])

    def test_head_norm_then_rope_is_one_row_kernel(self):
        # the roll of the normalised heads sinks to rolls of x and the weight (fuse), so
        # the norm and the rotation are one row kernel, with cos and sin broadcast over heads
        torch.manual_seed(1)
        x, cos, sin = torch.randn(2, 8, 4 * 16), torch.randn(2, 8, 16), torch.randn(2, 8, 16)
        c = self.run_case(NormedRope(4, 16), (x, cos, sin), atol=1e-5, rtol=1e-5, regions=1)
        self.assertIn("graph.roll", c.tir)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "region.tir")
            with open(path, "w") as f:
                f.write(c.tir)
            lowered = subprocess.run([self.tfc, "-O2", path], capture_output=True, text=True, check=True).stdout
        self.assertEqual(lowered.count("loop.kernel {"), 1, lowered)
        self.assertIn('loop.kernel {kind = "row"', lowered)

    def test_head_norm_stored_transposed_is_one_row_kernel(self):
        # .transpose(1, 2).contiguous() of the norm stays in the region, which writes [b, h, s, d]
        # through the transpose's index map (PyTorch would copy it again); one row kernel
        torch.manual_seed(2)
        x = torch.randn(2, 8, 4 * 16)
        c = self.run_case(NormedHeads(4, 16), (x,), atol=1e-5, rtol=1e-5, regions=1)
        self.assertIn("graph.transpose", c.tir)
        self.assertIn("-> tensor<2x4x8x16xf32>", c.tir.split("\n")[0])
        self.assertNotIn("clone", [f[1].split(".")[1] for f in c.log.fallbacks])
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "region.tir")
            with open(path, "w") as f:
                f.write(c.tir)
            lowered = subprocess.run([self.tfc, "-O2", path], capture_output=True, text=True, check=True).stdout
        self.assertEqual(lowered.count("loop.kernel {"), 1, lowered)
        self.assertIn('loop.kernel {kind = "row"', lowered)

    def test_rotate_half_rewrite_keeps_eager_values(self):
        # the rewritten ATen graph, run by PyTorch itself, equals the original exactly
        from tensorforge import fxpasses

        ins = (torch.randn(2, 4, 8, 16), torch.randn(2, 2, 8, 16), torch.randn(2, 8, 16), torch.randn(2, 8, 16))
        gm = tensorforge.trace(Rope(), *ins)
        _ensure_meta(gm, ins)
        want = gm(*ins)
        self.assertEqual(fxpasses.rotate_half_as_roll(gm), 2)
        got = gm(*ins)
        for w, g in zip(want, got):
            self.assertTrue(torch.equal(w, g))
        self.assertFalse(any(n.target == torch.ops.aten.cat.default for n in gm.graph.nodes if n.op == "call_function"))

    def test_fills_become_a_cat(self):
        # DeepSeek's keys: new_empty filled slice by slice, functionalised
        # (slice_scatter of copy), k_rot broadcast over the heads by the copy
        from tensorforge import fxpasses

        aten = torch.ops.aten
        g = torch.fx.Graph()
        k_pass = g.placeholder("k_pass")
        k_rot = g.placeholder("k_rot")
        e = g.call_function(aten.new_empty.default, (k_pass, [2, 4, 3, 12]))
        s0 = g.call_function(aten.slice.Tensor, (e, 3, 0, 8))
        c0 = g.call_function(aten.copy.default, (s0, k_pass))
        e1 = g.call_function(aten.slice_scatter.default, (e, c0, 3, 0, 8))
        s1 = g.call_function(aten.slice.Tensor, (e1, 3, 8, 9223372036854775807))
        c1 = g.call_function(aten.copy.default, (s1, k_rot))
        e2 = g.call_function(aten.slice_scatter.default, (e1, c1, 3, 8, 9223372036854775807))
        y = g.call_function(aten.mul.Tensor, (e2, 2.0))
        g.output(y)
        gm = torch.fx.GraphModule(torch.nn.Module(), g)
        ins = (torch.randn(2, 4, 3, 8), torch.randn(2, 1, 3, 4))
        _ensure_meta(gm, ins)
        want = gm(*ins)
        self.assertEqual(fxpasses.fills_as_cat(gm), 1)
        got = gm(*ins)
        self.assertTrue(torch.equal(want, got))
        targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
        self.assertIn(aten.cat.default, targets)
        self.assertNotIn(aten.slice_scatter.default, targets)
        self.assertNotIn(aten.new_empty.default, targets)
        # a fill that leaves part of the tensor empty is not a cat
        g2 = torch.fx.Graph()
        a = g2.placeholder("a")
        e = g2.call_function(aten.new_empty.default, (a, [2, 12]))
        c = g2.call_function(aten.copy.default, (g2.call_function(aten.slice.Tensor, (e, 1, 0, 8)), a))
        g2.output(g2.call_function(aten.slice_scatter.default, (e, c, 1, 0, 8)))
        gm2 = torch.fx.GraphModule(torch.nn.Module(), g2)
        _ensure_meta(gm2, (torch.randn(2, 8),))
        self.assertEqual(fxpasses.fills_as_cat(gm2), 0)

    def test_split_and_cat_of_strided_views_compile(self):
        # DeepSeek's keys: the projection viewed as heads, transposed, split,
        # and one piece concatenated with a rotary part expanded over the
        # heads; the strided views stay in the region as index maps and the
        # cat is compiled
        from tensorforge import fxpasses

        class LatentKeys(torch.nn.Module):
            def forward(self, kv, k_rot):
                b, t, _ = kv.shape
                kvh = kv.view(b, t, 4, 16).transpose(1, 2)
                k_pass, v = torch.split(kvh, [8, 8], dim=-1)
                k = torch.cat((k_pass, k_rot.expand(b, 4, t, 4)), dim=-1)
                return k * 2.0, v * 3.0

        ins = (torch.randn(2, 5, 64), torch.randn(2, 1, 5, 4))
        gm = tensorforge.trace(LatentKeys(), *ins)
        _ensure_meta(gm, ins)
        want = gm(*ins)
        self.assertEqual(fxpasses.splits_as_slices(gm), 2)
        got = gm(*ins)
        for w, g in zip(want, got):
            self.assertTrue(torch.equal(w, g))
        compiled = self.run_case(LatentKeys(), ins, atol=0, rtol=0, regions=1)
        self.assertNotIn("split", compiled.log.format())
        log = partition.FallbackLog()
        fused, names = partition.partition(gm, log)
        self.assertEqual(len(names), 1, log.format())
        in_region = [n.target for n in getattr(fused, names[0]).graph.nodes if n.op == "call_function"]
        self.assertIn(torch.ops.aten.cat.default, in_region, log.format())
        self.assertIn(torch.ops.aten.slice.Tensor, in_region, log.format())

    def test_view_of_inputs_read_outside_is_no_result(self):
        # DeepSeek's latent keys and values viewed as heads and transposed: the
        # keys' part is concatenated in the region, the values' part is read by
        # attention (here top-k) outside it; the region must not write the
        # whole transposed tensor as a result for it, PyTorch views it again
        class LatentValues(torch.nn.Module):
            def forward(self, kv, k_rot):
                b, t, _ = kv.shape
                kvh = kv.view(b, t, 4, 16).transpose(1, 2)
                k_pass, v = torch.split(kvh, [8, 8], dim=-1)
                k = torch.cat((k_pass, k_rot.expand(b, 4, t, 4)), dim=-1)
                return k * 2.0, torch.topk(v, 2).values

        ins = (torch.randn(2, 5, 64), torch.randn(2, 1, 5, 4))
        compiled = self.run_case(LatentValues(), ins, atol=0, rtol=0, regions=1)
        self.assertIn(partition.VIEW_AGAIN, compiled.log.format())
        results = [ln for ln in compiled.tir.splitlines() if ln.strip().startswith("return")]
        self.assertEqual(len(results), 1, compiled.tir)
        self.assertNotIn(",", results[0], compiled.tir)  # k * 2 only, not the transposed heads
        again = self.run_case(LatentValues(), ins, atol=0, rtol=0, regions=1)
        self.assertEqual(compiled.tir, again.tir)  # the views made outside leave the order the same

    def test_view_of_an_input_written_in_place_stays_a_result(self):
        # a view of a cache the region updates in place, read outside: made
        # again outside, it would see the update
        class Update(torch.nn.Module):
            def forward(self, cache, pos, x):
                old = cache.transpose(0, 1)
                cache.index_copy_(0, pos, x * 2.0)
                return torch.topk(old, 2).values

        ins = (torch.randn(4, 6), torch.tensor([1]), torch.randn(1, 6))
        with torch.no_grad():
            want = Update()(ins[0].clone(), *ins[1:])
            c = tensorforge.compile_module(Update(), *ins, options=self.opts())
            got = c(ins[0].clone(), *ins[1:])
        torch.testing.assert_close(got, want, atol=0, rtol=0)
        self.assertNotIn(partition.VIEW_AGAIN, c.log.format())

    def test_expand_of_an_updated_cache_is_read_inside(self):
        # DeepSeek's rotary keys: a one-head cache updated in place, then
        # expanded over the heads and concatenated; the expand, kept out of the
        # update's region, is read by the next region through its index map,
        # not copied whole to be contiguous for it
        class ExpandAfterUpdate(torch.nn.Module):
            def forward(self, cache, pos, x, kp):
                cache.index_copy_(2, pos, x * 2.0)
                return torch.cat((kp, cache.expand(2, 3, 6, 4)), dim=-1) * 3.0

        ins = (torch.randn(2, 1, 6, 4), torch.tensor([1]), torch.randn(2, 1, 1, 4), torch.randn(2, 3, 6, 8))
        with torch.no_grad():
            want = ExpandAfterUpdate()(ins[0].clone(), *ins[1:])
            c = tensorforge.compile_module(ExpandAfterUpdate(), *ins, options=self.opts())
            got = c(ins[0].clone(), *ins[1:])
        torch.testing.assert_close(got, want, atol=0, rtol=0)
        self.assertEqual(len(c.kernels), 2, c.log.format())
        self.assertIn("graph.broadcast_to", c.tir)
        header = c.tir.split("func.func @region_1(")[1].split("\n")[0]
        self.assertNotIn("tensor<2x3x6x4xf32>", header)  # no argument is the expanded view

    def test_cat_skips_a_legacy_empty_operand(self):
        # transformers' DynamicCache starts each layer with torch.tensor([]) and
        # concatenates the first keys to it along the tokens: torch.cat skips a
        # 1-D empty operand whatever the rank of the others
        class FirstKeys(torch.nn.Module):
            def forward(self, k):
                empty = torch.zeros(0, dtype=k.dtype)
                return torch.cat((empty, k * 2.0), dim=-2) + 1.0

        ins = (torch.randn(1, 2, 5, 8),)
        compiled = self.run_case(FirstKeys(), ins, atol=0, rtol=0, regions=1)
        self.assertNotIn("graph.concat", compiled.tir)

    def test_interleaved_pairs_slice_with_a_step(self):
        # GPT-J's and Meta's rotary embeddings take the pairs as x[..., ::2] and x[..., 1::2]
        class EveryTwo(torch.nn.Module):
            def forward(self, x, cos, sin):
                x1, x2 = x[..., ::2], x[..., 1::2]
                return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)

        ins = (torch.randn(2, 4, 6, 16), torch.randn(6, 8), torch.randn(6, 8))
        compiled = self.run_case(EveryTwo(), ins, atol=1e-6, rtol=1e-6, regions=1)
        self.assertNotIn("step", compiled.log.format())
        self.assertIn("strides = [1, 1, 1, 2]", compiled.tir)

    def test_rounding_modes(self):
        # silu(g) * u in bf16. With --exact-rounding silu's result is rounded
        # to bf16 before the product, as op by op; by default the kernel
        # keeps it in f32 and rounds once. Each is compared with its own
        # emulation (silu in float64 rounded to f32; the CPU's exp may be an
        # f32 ULP off, which moves a bf16 result only near a tie)
        def chain(g, u):
            return torch.nn.functional.silu(g) * u
        torch.manual_seed(1)
        g, u = torch.randn(64, 256).to(BF), torch.randn(64, 256).to(BF)
        with torch.no_grad():
            exact = tensorforge.compile_module(chain, g, u, options=self.opts(flags=["--exact-rounding"]))(g, u)
            default = tensorforge.compile_module(chain, g, u, options=self.opts())(g, u)
        s32 = torch.nn.functional.silu(g.double()).float()
        want_exact = (s32.to(BF).float() * u.float()).to(BF)
        want_default = (s32 * u.float()).to(BF)
        same = lambda a, b: (a == b).float().mean().item()  # noqa: E731
        self.assertGreaterEqual(same(exact, want_exact), 0.99)
        self.assertGreaterEqual(same(default, want_default), 0.99)
        self.assertLess(same(default, exact), 0.99, "the modes should round differently")
        # the default is the better rounded: nearer float64 on average
        f64 = torch.nn.functional.silu(g.double()) * u.double()
        err = lambda y: (y.double() - f64).abs().mean().item()  # noqa: E731
        self.assertLess(err(default), err(exact))

    def test_kv_cache_update_in_place(self):
        # index_copy_ into the caches (or index_put_, as `kc[:, :, pos] = k`
        # writes it) compiles to graph.index_copy: the compiled call writes
        # the new positions into the very tensors passed in (and nothing
        # else of them), bit for bit as eager does
        torch.manual_seed(5)
        for dt in (torch.float32, BF):
            kc, vc = torch.randn(1, 2, 16, 8).to(dt), torch.randn(1, 2, 16, 8).to(dt)
            kc[0, 1, 3, 2] = float("nan")
            ins = (torch.tensor([7, 2, 15]), torch.randn(1, 4, 3, 8).to(dt), torch.randn(1, 2, 3, 8).to(dt),
                   torch.randn(1, 3, 2, 8).to(dt), torch.randn(1, 3, 8).to(dt), torch.randn(1, 3, 8).to(dt))
            for m in (CacheUpdate(), CacheUpdatePut()):
                what = "%s %s" % (type(m).__name__, dt)
                with torch.no_grad():
                    gm = tensorforge.trace(m, kc.clone(), vc.clone(), *ins)
                    c = tensorforge.compile_aten(gm, (kc.clone(), vc.clone()) + ins, self.opts())
                    ek, ev = kc.clone(), vc.clone()
                    want = m(ek, ev, *ins)
                    gk, gv = kc.clone(), vc.clone()
                    pk, pv = gk.data_ptr(), gv.data_ptr()
                    got = c(gk, gv, *ins)
                self.assertEqual(c.tir.count("graph.index_copy"), 2, what + "\n" + c.tir + c.log.format())
                # what a CUDA-graph runner copies back when it ran on copies of the caches
                self.assertEqual(c.mutated_inputs, (0, 1), what)
                self.assertEqual((gk.data_ptr(), gv.data_ptr()), (pk, pv), what)
                torch.testing.assert_close(gv, ev, atol=0, rtol=0, equal_nan=True)
                tol = 0 if dt == torch.float32 else 8e-3
                torch.testing.assert_close(gk, ek, atol=tol * 4, rtol=tol, equal_nan=True)
                torch.testing.assert_close(got, want, atol=tol * 4, rtol=tol)
                # the positions not written are untouched, NaN included
                keep = [i for i in range(16) if i not in (7, 2, 15)]
                torch.testing.assert_close(gk[:, :, keep], kc[:, :, keep], atol=0, rtol=0, equal_nan=True)
                ops = {op for _, op, _ in c.log.fallbacks}
                self.assertNotIn("aten.index_copy_.default", ops, c.log.format())
                self.assertNotIn("aten.index_put_.default", ops, c.log.format())

    def test_cache_read_after_update_stays_after_it(self):
        # a functional update (as AOTAutograd writes one) becomes index_copy_;
        # what reads the cache after it reads the update and is not in its region
        from tensorforge import fxpasses

        aten = torch.ops.aten
        g = torch.fx.Graph()
        kc, pos, k = (g.placeholder(n) for n in ("kc", "pos", "k"))
        k2 = g.call_function(aten.mul.Tensor, (k, 2.0))
        ic = g.call_function(aten.index_copy.default, (kc, 0, pos, k2))
        g.call_function(aten.copy_.default, (kc, ic))
        g.output((g.call_function(aten.mul.Tensor, (ic, 3.0)),))
        gm = torch.fx.GraphModule(torch.nn.Module(), g)
        ins = (torch.zeros(6, 4), torch.tensor([4, 1]), torch.ones(2, 4))
        _ensure_meta(gm, tuple(t.clone() for t in ins))
        self.assertTrue(fxpasses.reinplace_input_updates(gm))
        ups = [n for n in gm.graph.nodes if n.target == aten.index_copy_.default]
        self.assertEqual(len(ups), 1)
        reader = [n for n in gm.graph.nodes if n.op == "call_function" and n.args[0] is ups[0]]
        self.assertEqual(len(reader), 1, gm.code)
        self.assertIn("in-place update", optable.support_reason(reader[0]))
        c = tensorforge.compile_aten(gm, ins, self.opts())
        cache = ins[0].clone()
        got = c(cache, ins[1], ins[2])
        want = torch.zeros(6, 4)
        want[[4, 1]] = 2.0
        torch.testing.assert_close(cache, want, atol=0, rtol=0)
        torch.testing.assert_close(got[0] if isinstance(got, (tuple, list)) else got, want * 3, atol=0, rtol=0)

    def test_swiglu_matmul_stays(self):
        c = self.run_case(SwiGLU(16, 32), (torch.randn(2, 3, 16),), atol=1e-5, rtol=1e-5, regions=1)
        self.assertIn("graph.silu", c.tir)
        reasons = {op: r for _, op, r in c.log.fallbacks}
        self.assertIn("aten.mm.default", reasons)
        self.assertIn("matmul stays in PyTorch", reasons["aten.mm.default"])

    def test_cse_views_merges_repeats_but_not_views_of_updated_tensors(self):
        from tensorforge import fxpasses

        aten = torch.ops.aten
        g = torch.fx.Graph()
        x, c, i, v = (g.placeholder(n) for n in ("x", "c", "i", "v"))
        p1 = g.call_function(aten.permute.default, (x, [1, 0]))
        p2 = g.call_function(aten.permute.default, (x, [1, 0]))
        r1 = g.call_function(aten.reshape.default, (c, [8]))
        g.call_function(aten.index_copy_.default, (c, 0, i, v))
        r2 = g.call_function(aten.reshape.default, (c, [8]))
        g.output((g.call_function(aten.add.Tensor, (p1, p2)), r1, r2))
        gm = torch.fx.GraphModule(torch.nn.Module(), g)
        self.assertEqual(fxpasses.cse_views(gm), 1)
        targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
        self.assertEqual(targets.count(aten.permute.default), 1)
        self.assertEqual(targets.count(aten.reshape.default), 2)

    def test_projections_run_as_linear_calls(self):
        # the view / t / mm / view nodes linear decomposes into are one
        # aten.linear call in the graph left to PyTorch (with its bias: addmm)
        class Proj(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.norm = RMSNorm(16)
                self.q = torch.nn.Linear(16, 24, bias=True)
                self.o = torch.nn.Linear(24, 16, bias=False)

            def forward(self, x):
                return x + self.o(F.silu(self.q(self.norm(x))))

        torch.manual_seed(2)
        c = self.run_case(Proj(), (torch.randn(2, 3, 16),), atol=1e-5, rtol=1e-5)
        targets = [n.target for n in c.gm.graph.nodes if n.op == "call_function"]
        aten = torch.ops.aten
        self.assertEqual(targets.count(aten.linear.default), 2, c.gm.code)
        for t in (aten.mm.default, aten.addmm.default, aten.t.default):
            self.assertNotIn(t, targets, c.gm.code)

    def test_swiglu_matmul_option_compiles_the_mlp(self):
        # options={"matmul": True}: the MLP and its residual add are one
        # region; the SwiGLU runs on the projections' 2-D results (their
        # epilogue, no view between), the residual add on the down
        # projection's, and x is one input that both projections read
        class Block(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.mlp = SwiGLU(32, 48)

            def forward(self, x, r):
                return r + self.mlp(x)

        torch.manual_seed(1)
        mod = Block()
        x, r = torch.randn(2, 5, 32), torch.randn(2, 5, 32)
        x[0, 0, :4] = torch.tensor([1e30, -1e30, 0.0, -0.0])  # overflow in the projections: inf/nan as eager
        c = self.run_case(mod, (x, r), atol=1e-5, rtol=1e-5, regions=1, matmul=True)
        tir = c.tir
        self.assertEqual(tir.count("graph.matmul"), 3, tir)
        self.assertRegex(tir, r"graph\.silu %mm : tensor<10x48xf32>")
        self.assertRegex(tir, r"graph\.mul %silu\w*, %mm_1 : tensor<10x48xf32>")
        self.assertRegex(tir, r"graph\.add %\w+, %mm_2 : tensor<10x32xf32>")
        self.assertEqual(len(re.findall(r"%\w+: tensor<10x32xf32>", tir.splitlines()[0])), 2, tir)
        ops = [op for _, op, _ in c.log.fallbacks]
        self.assertNotIn("aten.mm.default", ops, c.log.format())
        # finite rows against float64: f32 accumulation over K = 32 then 48,
        # bounded by 2^-21 of the sum of |terms| (a few ulps per product and
        # sum through silu's derivative <= 1.1)
        with torch.no_grad():
            got = c(x, r).double()[1:]
            m = mod.mlp
            xd = x.double()[1:]
            g, u = xd @ m.gate_proj.weight.double().T, xd @ m.up_proj.weight.double().T
            h = F.silu(g) * u
            want = r.double()[1:] + h @ m.down_proj.weight.double().T
            ag = (xd.abs() @ m.gate_proj.weight.double().abs().T)
            au = (xd.abs() @ m.up_proj.weight.double().abs().T)
            scale = r.double()[1:].abs() + (h.abs() + 1.1 * ag * u.abs() + g.abs() * au) @ m.down_proj.weight.double().abs().T
        self.assertLessEqual(((got - want).abs() / scale).max().item(), 2.0 ** -21)

    def test_matmul_option_decoder_mlp_half_has_no_views(self):
        # norm -> o_proj + residual -> norm -> gate/up + SwiGLU -> down +
        # residual: the RMSNorms run on flattened rows (the linears' views
        # moved above them), so no reshape is left between kernels
        class Half(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.n1, self.n2 = RMSNorm(32), RMSNorm(32)
                self.o = torch.nn.Linear(32, 32, bias=False)
                self.mlp = SwiGLU(32, 48)

            def forward(self, x):
                h = x + self.o(self.n1(x))
                return h + self.mlp(self.n2(h))

        torch.manual_seed(2)
        c = self.run_case(Half(), (torch.randn(2, 5, 32),), atol=2e-5, rtol=2e-5, regions=1, matmul=True)
        self.assertEqual(c.tir.count("graph.matmul"), 4, c.tir)
        self.assertNotIn("graph.reshape", c.tir)
        self.assertEqual(c.tir.count("graph.reduce_mean"), 2, c.tir)
        self.assertRegex(c.tir, r"return %\w+ : tensor<10x32xf32>\n")

    def test_linear_with_bias_and_bmm(self):
        class Proj(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(24, 40)

            def forward(self, x, y):
                return torch.relu(self.lin(x)) + 1.0, torch.bmm(x, y)

        x, y = torch.randn(3, 6, 24), torch.randn(3, 24, 7)
        c = self.run_case(Proj(), (x, y), atol=1e-5, rtol=1e-5, matmul=True)
        self.assertEqual(c.tir.count("graph.matmul"), 2, c.tir)
        ops = [op for _, op, _ in c.log.fallbacks]
        for op in ("aten.addmm.default", "aten.bmm.default", "aten.mm.default"):
            self.assertNotIn(op, ops, c.log.format())

    def test_matmul_option_off_keeps_the_reason(self):
        c = self.run_case(SwiGLU(16, 32), (torch.randn(2, 3, 16),), atol=1e-5, rtol=1e-5, regions=1, matmul=False)
        reasons = {op: r for _, op, r in c.log.fallbacks}
        self.assertIn('options={"matmul": True}', reasons["aten.mm.default"])

    def test_matmul_auto_compiles_decode_graphs_only(self):
        # matmul="auto" (the default): a graph's matmuls are TensorForge's when
        # every one has at most AUTO_MATMUL_ROWS static rows and the emitter is
        # Triton; otherwise cuBLAS keeps them, and the log says why
        from tensorforge import backend, config
        from tensorforge.config import Options

        gpu = Options(target="h200", tfc=self.tfc, cache_dir=self.cache)
        self.assertEqual(gpu.matmul, "auto")
        rows = config.AUTO_MATMUL_ROWS
        decode = backend.trace(SwiGLU(16, 32), torch.randn(1, rows, 16))
        self.assertEqual(backend.decide_matmul(decode, gpu), (True, None))
        prefill = backend.trace(SwiGLU(16, 32), torch.randn(1, rows + 1, 16))
        on, why = backend.decide_matmul(prefill, gpu)
        self.assertFalse(on)
        self.assertIn("has %d rows" % (rows + 1), why)
        # explicit settings win; ptx and cpu leave matmuls to PyTorch under "auto"
        self.assertEqual(backend.decide_matmul(prefill, Options(target="h200", matmul=True)), (True, None))
        self.assertEqual(backend.decide_matmul(decode, Options(target="h200", matmul=False)), (False, None))
        on, why = backend.decide_matmul(decode, Options(target="h200", emitter="ptx"))
        self.assertFalse(on)
        self.assertIn("only with the triton emitter (this is ptx)", why)
        # rows of run-time extent (symbolic tracing) stay with cuBLAS
        dyn = backend.trace(lambda x, w: torch.mm(x, w.t()), torch.randn(5, 16), torch.randn(32, 16), dynamic=True)
        on, why = backend.decide_matmul(dyn, gpu)
        self.assertFalse(on)
        self.assertIn("has run-time rows", why)
        # a graph without matmuls has none to compile
        self.assertEqual(backend.decide_matmul(backend.trace(RMSNorm(16), torch.randn(2, 16)), gpu), (False, None))
        # on the cpu target the reason reaches the fallback log
        c = self.run_case(SwiGLU(16, 32), (torch.randn(2, 3, 16),), atol=1e-5, rtol=1e-5, regions=1)
        reasons = {op: r for _, op, r in c.log.fallbacks}
        self.assertIn('matmul="auto" compiles matmuls only with the triton emitter (this is cpu)',
                      reasons["aten.mm.default"])
        with self.assertRaisesRegex(ValueError, 'matmul must be True, False or "auto"'):
            Options(target="cpu", matmul="yes")
        with self.assertRaisesRegex(ValueError, 'matmul must be True, False or "auto"'):
            Options(target="cpu", matmul=1)
    def test_matmul_auto_dispatches_on_run_time_rows(self):
        # matmul="auto" on a graph whose matmuls' rows are known only at run
        # time (a decode batch that varies): two compilations, TensorForge's
        # matmuls for at most AUTO_MATMUL_ROWS rows and cuBLAS's beyond,
        # chosen per call from the inputs' extents
        from unittest import mock

        from tensorforge import backend, config
        from tensorforge.config import Options

        mm = lambda x, w: torch.mm(x, w.t())  # noqa: E731
        dyn = backend.trace(mm, torch.randn(5, 16), torch.randn(32, 16), dynamic=True)
        count = backend.row_counter(dyn)
        self.assertIsNotNone(count)
        self.assertEqual(count((torch.randn(7, 16), torch.randn(32, 16))), 7)
        self.assertEqual(count((torch.randn(300, 16), torch.randn(32, 16))), 300)
        # static rows need no counter
        self.assertIsNone(backend.row_counter(backend.trace(mm, torch.randn(5, 16), torch.randn(32, 16))))
        # two matmuls: the larger row count
        both = backend.trace(lambda x, y, w: (torch.mm(x, w.t()), torch.mm(y, w.t())),
                             torch.randn(5, 16), torch.randn(40, 16), torch.randn(32, 16), dynamic=True)
        self.assertEqual(backend.row_counter(both)((torch.randn(3, 16), torch.randn(9, 16), torch.randn(32, 16))), 9)
        # a static row count beyond the limit: the count could never be within it
        mm2 = [n for n in both.graph.nodes if n.op == "call_function" and "mm" in str(n.target)][1]
        mm2.meta["val"] = torch.empty(40, 32)
        self.assertIsNone(backend.row_counter(both, 32))
        self.assertEqual(backend.row_counter(both, 64)((torch.randn(3, 16), torch.randn(9, 16), torch.randn(32, 16))), 40)
        # the two compilations and the choice, on the cpu target (where "auto"
        # does not apply: forced here, the row count given by the test)
        rows = {"n": 0}
        ins = (torch.randn(1, 4, 16),)
        mod = SwiGLU(16, 32).eval()
        with torch.no_grad():
            want = mod(*ins)
        gm = backend.trace(mod, *ins)
        with mock.patch.object(Options, "auto_matmul_applies", lambda self: True), \
                mock.patch.object(backend, "row_counter", lambda gm, limit=None: lambda args: rows["n"]):
            compiled = backend.compile_aten(gm, ins, Options(**self.opts()))
        self.assertIsInstance(compiled, backend.RowDispatch)
        self.assertEqual(compiled.limit, config.AUTO_MATMUL_ROWS)
        self.assertIn("graph.matmul", compiled.small.tir)
        self.assertNotIn("graph.matmul", compiled.large.tir)
        reasons = {op: r for _, op, r in compiled.log.fallbacks}
        self.assertIn("for calls of more than %d rows" % config.AUTO_MATMUL_ROWS, reasons["aten.mm.default"])
        calls = []
        small, large = compiled.small, compiled.large
        compiled.small = lambda *a: calls.append("small") or small(*a)
        compiled.large = lambda *a: calls.append("large") or large(*a)
        for n in (1, config.AUTO_MATMUL_ROWS, config.AUTO_MATMUL_ROWS + 1):
            rows["n"] = n
            with torch.no_grad():
                got = compiled(*ins)
            torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
        self.assertEqual(calls, ["small", "small", "large"])

    def test_int_mm_compiles_w8a8_with_its_epilogue(self):
        # torch._int_mm (int8 x int8 -> int32) of int8 activations and the
        # transpose of an int8 weight, scaled per channel: with the matmul
        # option one region, a graph.matmul of both operands widened to i32
        # (the widenings its prologue, the scale its epilogue); exact sums.
        # torch 1.13 has no _int_mm: a stand-in with its table key runs the
        # same graph there.
        from tensorforge import backend

        aten = torch.ops.aten
        int_mm = getattr(aten, "_int_mm", None)
        if int_mm is not None:
            int_mm = int_mm.default
        else:
            def int_mm(a, b):
                return (a.long() @ b.long()).int()
            int_mm.__name__ = "aten._int_mm.default"

        def graph():
            g = torch.fx.Graph()
            x, w, s = (g.placeholder(n) for n in ("x", "w", "s"))
            acc = g.call_function(int_mm, (x, g.call_function(aten.t.default, (w,))))
            g.output(g.call_function(aten.mul.Tensor, (acc, s)))
            return torch.fx.GraphModule(torch.nn.Module(), g)
        gen = torch.Generator().manual_seed(3)
        ins = (torch.randint(-128, 128, (5, 64), dtype=torch.int8, generator=gen),
               torch.randint(-128, 128, (24, 64), dtype=torch.int8, generator=gen),
               torch.rand(24, generator=gen) / 1000)
        want = (ins[0].long() @ ins[1].long().t()).float() * ins[2]
        c = backend.compile_aten(graph(), ins, self.opts(matmul=True))
        self.assertEqual(len(c.kernels), 1, c.log.format())
        self.assertRegex(c.tir, r"graph.cast %\w+ : \(tensor<5x64xi8>\) -> tensor<5x64xi32>")
        self.assertIn("graph.matmul", c.tir)
        self.assertIn("-> tensor<5x24xi32>", c.tir)
        torch.testing.assert_close(c(*ins), want, atol=0, rtol=0)
        # without the option it stays in PyTorch, with the matmul's reason
        c = backend.compile_aten(graph(), ins, self.opts(matmul=False))
        reasons = {op: r for _, op, r in c.log.fallbacks}
        self.assertIn("matmul stays in PyTorch", reasons["aten._int_mm.default"])

    def test_slices_keep_run_time_dimensions_whole(self):
        # a slice along a static dimension of a tensor whose token dimension is
        # a run-time extent (Dynamo's dynamic shapes; simulated here, where
        # torch 1.13's symbolic tracing makes every extent symbolic) is a
        # graph.slice that keeps that dimension whole (a size of -1), fused:
        # one module serves every token count
        from unittest import mock

        from tensorforge import backend, fxpasses, types
        from tensorforge.config import Options
        from tensorforge.types import Unsupported

        real = types.info_of

        def tokens_dynamic(node):
            i = real(node)
            if i is not None and i.rank >= 2 and i.shape[0] == 5:
                return types.TensorInfo((types.DYNAMIC,) + i.shape[1:], i.dtype, ("s0",) + i.symbols[1:])
            return i

        def halves(q, w):
            return (q[..., :32] * w + q[..., 32:]).sum(-1)

        q, w = torch.randn(5, 4, 64), torch.randn(32)
        gm = backend.trace(halves, q, w)
        patches = [mock.patch.object(m, "info_of", tokens_dynamic)
                   for m in (optable, translate, fxpasses, backend)]
        for p in patches:
            p.start()
        try:
            c = backend.compile_aten(gm, (q, w), Options(**self.opts()))
        finally:
            for p in patches:
                p.stop()
        self.assertEqual(len(c.kernels), 1, c.log.format())
        self.assertIn("sizes = [-1, 4, 32]", c.tir)
        self.assertIn("-> tensor<?x4xf32>", c.tir)
        for n in (5, 9, 1):
            x = torch.randn(n, 4, 64)
            torch.testing.assert_close(c(x, w), halves(x, w), atol=1e-5, rtol=1e-5)
        # along the run-time dimension itself: PyTorch keeps the slice
        with mock.patch.object(optable, "info_of", tokens_dynamic):
            node = [n for n in backend.trace(halves, q, w).graph.nodes if n.op == "call_function"
                    and n.target == torch.ops.aten.slice.Tensor][0]
            node.args = (node.args[0], 0, 0, 2) + tuple(node.args[4:])
            with self.assertRaisesRegex(Unsupported, "a slice along a dimension of run-time extent"):
                optable.Slice().check(None, node)

    def test_residual_add_becomes_the_matmuls_epilogue(self):
        # h + down_proj(...) with h the graph's own value, read by nothing
        # after the add: addmm_ in place on h (cuBLAS adds it), no add kernel
        ins = (torch.randn(2, 3, 16), torch.randn(2, 3, 16))
        c = self.run_case(MLPHalf(16, 32), ins, atol=1e-5, rtol=1e-5, regions=2, matmul=False)
        targets = [n.target for n in c.gm.graph.nodes if n.op == "call_function"]
        self.assertIn(torch.ops.aten.addmm_.default, targets, c.gm.code)
        reasons = {op: r for _, op, r in c.log.fallbacks}
        self.assertIn("epilogue", reasons["aten.addmm_.default"])
        adds = [ln for ln in c.tir.splitlines() if "graph.add" in ln and ln.endswith(": tensor<2x3x16xf32>")]
        self.assertEqual(len(adds), 1, c.tir)  # the first residual add only
        # bf16: one rounding of the sum instead of two, within a bf16 ULP of eager
        m = MLPHalf(16, 32).to(BF)
        self.run_case(m, tuple(t.to(BF) for t in ins), atol=3e-2, rtol=2e-2, regions=2, matmul=False)
        # h read after the add (a result of the graph): the add stays, compiled
        c = self.run_case(MLPHalf(16, 32, keep_h=True), ins, atol=1e-5, rtol=1e-5, regions=3, matmul=False)
        self.assertNotIn("addmm_", c.gm.code)
        # a view of h read after the add: h is not the matmul's to write
        c = self.run_case(ViewReadAfter(16, 32), ins, atol=1e-5, rtol=1e-5, matmul=False)
        self.assertNotIn("addmm_", c.gm.code)
        # the residual a graph input: it is not the graph's to write
        c = self.run_case(SwiGLUResidual(16, 32), (ins[0],), atol=1e-5, rtol=1e-5, matmul=False)
        self.assertNotIn("addmm_", c.gm.code)
        # exact rounding keeps eager's two roundings
        c = self.run_case(MLPHalf(16, 32), ins, atol=1e-5, rtol=1e-5, regions=3, matmul=False,
                          flags=["--exact-rounding"])
        self.assertEqual([f for f in c.log.fallbacks if f[1] == "region"], [], c.log.format())
        self.assertNotIn("addmm_", c.gm.code)

    def test_attention_scores_softmax(self):
        q, k = torch.randn(1, 2, 8, 16).to(BF), torch.randn(1, 2, 8, 16).to(BF)
        mask = torch.triu(torch.full((8, 8), float("-inf")), 1).to(BF)
        c = self.run_case(ScoresSoftmax(), (q, k, mask), atol=1e-2, rtol=1e-2)
        self.assertIn("graph.softmax", c.tir)

    def test_naive_logaddexp_is_legalised(self):
        a = torch.tensor([0.0, 100.0, -100.0, 1000.0, float("-inf"), float("inf")])
        b = torch.tensor([0.0, 100.0, -101.0, 999.0, float("-inf"), 1.0])
        with torch.no_grad():
            got = tensorforge.compile_module(NaiveLogAddExp(), a, b, options=self.opts())(a, b)
        ref = torch.logaddexp(a.double(), b.double()).float()
        # eager overflows to inf at 100 and 1000; TensorForge's legalised form does not
        self.assertTrue(torch.isinf(NaiveLogAddExp()(a, b)[1]))
        torch.testing.assert_close(got, ref, atol=0, rtol=4e-7, equal_nan=True)

    def test_gelu_tanh(self):
        self.run_case(GeluTanh(), (torch.randn(4, 33) * 4,), atol=1e-5, rtol=1e-5, regions=1)

    def test_dynamic_dims_one_module_for_every_extent(self):
        # traced with symbolic shapes, every extent is `?`: one module serves them all
        def swiglu(g, u):
            return F.silu(g) * u

        g, u = torch.randn(3, 8), torch.randn(3, 8)
        gm = tensorforge.trace(swiglu, g, u, dynamic=True)
        tensorforge.backend._compilers.clear()
        cache = tempfile.mkdtemp(prefix="tf-dyn-")
        self.addCleanup(shutil.rmtree, cache, True)
        c = tensorforge.compile_aten(gm, (g, u), self.opts(cache_dir=cache))
        self.assertIn("tensor<?x?xf32>", c.tir)
        for shape in ((3, 8), (5, 8), (2, 16), (1, 1)):
            g, u = torch.randn(*shape), torch.randn(*shape)
            torch.testing.assert_close(c(g, u), swiglu(g, u), atol=1e-6, rtol=1e-6)
        self.assertEqual(c.compiler.tfc_calls, 1)
        # extents the kernel cannot run on are refused before it runs
        # (the library's tf_check_NAME), not read past
        with self.assertRaisesRegex(ValueError, "extents of its inputs disagree"):
            c(torch.randn(4, 8), torch.randn(2, 8))

    def test_more_patterns(self):
        # decompositions (layer norm, masked_fill) and ops whose forms vary: each compiles a
        # region and matches eager
        cases = [
            ("layernorm", torch.nn.LayerNorm(32), (torch.randn(4, 32),), 1e-5),
            ("gelu mlp", torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(approximate="tanh"),
                                             torch.nn.Linear(32, 16)), (torch.randn(3, 16),), 1e-5),
            ("masked softmax", lambda x, m: x.masked_fill(m, float("-inf")).softmax(-1),
             (torch.randn(4, 8), torch.rand(4, 8) > 0.7), 1e-6),
            ("mean of all", lambda x: (x - x.mean()) * 2, (torch.randn(4, 8),), 1e-6),
            ("sum to f32", lambda x: x.sum(-1, dtype=torch.float32) * 2, (torch.randn(4, 8).to(BF),), 1e-5),
            ("integers", lambda a, b: (a + b) * 3, (torch.randint(0, 10, (4, 8)), torch.randint(0, 10, (4, 8))), 0),
            ("logsumexp", lambda x: torch.logsumexp(x, -1), (torch.randn(4, 16) * 50,), 1e-6),
        ]
        for name, fn, ins, tol in cases:
            with self.subTest(name):
                with torch.no_grad():
                    want = fn(*ins)
                    c = tensorforge.compile_module(fn, *ins, options=self.opts())
                    got = c(*ins)
                self.assertGreaterEqual(len(c.kernels), 1, c.log.format())
                torch.testing.assert_close(got, want, atol=tol, rtol=tol, equal_nan=True)

    # --- translation ------------------------------------------------------
    def test_translation_is_deterministic(self):
        m = RMSNorm(16)
        x = torch.randn(2, 16)
        texts = []
        for _ in range(2):
            gm = tensorforge.trace(m, x)
            _ensure_meta(gm, (x,))
            fused, names = partition.partition(gm)
            texts.append(translate.translate(getattr(fused, names[0]), "region_0").text)
        self.assertEqual(texts[0], texts[1])
        self.assertIn("func.func @region_0(", texts[0])

    def test_every_declaration_names_a_real_op(self):
        for d in optable.DECLS:
            ns, name, overload = d.aten.split(".")
            packet = getattr(getattr(torch.ops, ns), name, None)
            if packet is None:
                continue  # an op of a later torch (e.g. the sdpa variants)
            self.assertIn(overload, [o for o in packet.overloads()], d.aten)

    def test_unsupported_op_is_logged(self):
        class Topk(torch.nn.Module):
            def forward(self, x):
                return torch.topk(x.exp(), 2).values * 2

        x = torch.randn(3, 8)
        with torch.no_grad():
            c = tensorforge.compile_module(Topk(), x, options=self.opts())
            torch.testing.assert_close(c(x), Topk()(x))
        reasons = [r for _, op, r in c.log.fallbacks if op == "aten.topk.default"]
        self.assertEqual(reasons, ["top-k stays in PyTorch"])
        self.assertIn("stays in PyTorch: topk", c.log.format())

    # --- cache and driver -------------------------------------------------
    def test_warm_start_calls_tfc_zero_times(self):
        cache = tempfile.mkdtemp(prefix="tf-warm-")
        try:
            m, x = RMSNorm(24), torch.randn(2, 24)
            opts = self.opts(cache_dir=cache)
            c1 = tensorforge.compile_module(m, x, options=opts)
            calls = c1.compiler.tfc_calls
            self.assertEqual(calls, 1)
            # a fresh compiler object, as in a new process
            tensorforge.backend._compilers.clear()
            c2 = tensorforge.compile_module(m, x, options=opts)
            self.assertEqual(c2.compiler.tfc_calls, 0)
            self.assertEqual(c2.compiler.cache_hits, 1)
            torch.testing.assert_close(c2(x), m(x))
        finally:
            shutil.rmtree(cache, ignore_errors=True)

    def test_missing_tfc_says_how_to_build(self):
        with self.assertRaises(tensorforge.CompileError) as cm:
            tfcompiler.find_tfc("/nonexistent/tfc")
        self.assertIn("go build -o", str(cm.exception))

    def test_bad_options(self):
        with self.assertRaises(ValueError):
            tensorforge.Options.from_dict(dict(target="tpu"))
        with self.assertRaises(ValueError):
            tensorforge.Options.from_dict(dict(target="cpu", emitter="ptx"))
        with self.assertRaises(ValueError):
            tensorforge.Options.from_dict(dict(bogus=1))

    def test_tune_cache_option(self):
        with self.assertRaisesRegex(ValueError, "is not a file"):
            tensorforge.Options.from_dict(dict(target="h200", tune_cache="/nonexistent/tune.json"))
        cache = os.path.join(self.cache, "tune.json")
        with open(cache, "w") as f:
            f.write('{"version": 1, "entries": {}}\n')
        with self.assertRaisesRegex(ValueError, "emitter 'ptx' has none"):
            tensorforge.Options.from_dict(dict(target="h200", emitter="ptx", tune_cache=cache))
        self.assertEqual(tensorforge.Options.from_dict(dict(target="h200", tune_cache=cache)).tune_cache, cache)
        # tfc gets --tune-cache, and a retuned cache changes the key
        comp = tfcompiler.Compiler(tfc=self.tfc, cache_dir=self.cache, tune_cache=cache)
        text = "func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n  return %x : tensor<4xf32>\n}\n"
        k1 = comp.key(text, "h200", "triton")
        self.assertEqual(comp._tune_flags("triton"), ["--tune-cache=" + cache])
        self.assertEqual(comp._tune_flags("cpu"), [])
        with open(cache, "w") as f:
            f.write('{"version": 1, "entries": {}, "note": 1}\n')
        self.assertNotEqual(k1, comp.key(text, "h200", "triton"))
        folder = comp.build(text, "h200", "triton")
        with open(os.path.join(folder, "DONE")) as f:
            self.assertIn("--tune-cache=" + cache, f.read())

    def test_tfc_error_is_reported(self):
        comp = tfcompiler.Compiler(tfc=self.tfc, cache_dir=self.cache)
        with self.assertRaises(tensorforge.CompileError) as cm:
            comp.build("func.func @region_0(%x: tensor<4xf32>) -> tensor<4xf32> {\n  return %y : tensor<4xf32>\n}\n",
                       "cpu", "cpu")
        self.assertIn("module.tir:2", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
