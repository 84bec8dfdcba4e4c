"""Quick GPU check of the frontend through Dynamo: small modules, both emitters, static and dynamic shapes.

    TENSORFORGE_TFC=.bin/tfc python3 bench/e2e/smoke.py
"""
import os
import sys
import traceback

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python", "tests"))
import tensorforge  # noqa: E402
from tensorforge import backend as tfbackend  # noqa: E402
from test_frontend import AddNorm, GeluTanh, NaiveLogAddExp, RMSNorm, Rope, ScoresSoftmax, SwiGLU  # noqa: E402

BF = torch.bfloat16
dev = "cuda"
fails = 0


def check(name, mod, ins, atol, rtol, dynamic=False, ref=None, **opts):
    global fails
    try:
        torch._dynamo.reset()
        tfbackend.compiled_graphs.clear()
        with torch.no_grad():
            want = ref(*ins) if ref is not None else mod(*ins)
            c = torch.compile(mod, backend="tensorforge", dynamic=dynamic, options=dict(target="h200", **opts))
            got = c(*ins)
        if not isinstance(want, tuple):
            want, got = (want,), (got,)
        for w, g in zip(want, got):
            torch.testing.assert_close(g.float(), w.float(), atol=atol, rtol=rtol, equal_nan=True)
        regions = sum(len(g.kernels) for g in tfbackend.compiled_graphs)
        print("OK   %-40s %s regions=%d graphs=%d" % (name, opts, regions, len(tfbackend.compiled_graphs)), flush=True)
        if os.environ.get("SMOKE_TIR"):
            for g in tfbackend.compiled_graphs:
                print(g.tir)
                print(g.log.format())
    except Exception as e:  # noqa: BLE001
        fails += 1
        print("FAIL %-40s %s: %s" % (name, opts, e), flush=True)
        traceback.print_exc()


# bf16 results are compared at torch's bf16 tolerance (rtol 1.6e-2): the
# kernels keep f32 between fused ops where eager rounds every op, so an
# element may differ from eager by a rounding or two.
torch.manual_seed(0)
for emitter in ("triton", "ptx"):
    for cg in (False, True):
        o = dict(emitter=emitter, cudagraphs=cg)
        check("rmsnorm bf16", RMSNorm(256).to(dev, BF), (torch.randn(4, 7, 256, device=dev).to(BF),), 1e-2, 1.6e-2, **o)
        check("add+rmsnorm", AddNorm(128).to(dev, BF), (torch.randn(5, 128, device=dev).to(BF),
                                                       torch.randn(5, 128, device=dev).to(BF)), 1e-2, 1.6e-2, **o)
        check("rope", Rope().to(dev), (torch.randn(1, 4, 8, 16, device=dev), torch.randn(1, 2, 8, 16, device=dev),
                                       torch.randn(1, 8, 16, device=dev), torch.randn(1, 8, 16, device=dev)),
              1e-5, 1e-5, **o)
        check("swiglu", SwiGLU(64, 128).to(dev, BF), (torch.randn(2, 3, 64, device=dev).to(BF),), 2e-2, 2e-2, **o)
        q, k = torch.randn(1, 2, 8, 16, device=dev).to(BF), torch.randn(1, 2, 8, 16, device=dev).to(BF)
        mask = torch.triu(torch.full((8, 8), float("-inf"), device=dev), 1).to(BF)
        check("scores softmax", ScoresSoftmax(), (q, k, mask), 1e-2, 1e-2, **o)
        a = torch.tensor([0.0, 100.0, -100.0, 1000.0], device=dev)
        check("naive logaddexp", NaiveLogAddExp(), (a, a * 0.5), 0, 4e-7,
              ref=lambda p, q: torch.logaddexp(p.double(), q.double()).float(), **o)
        check("gelu tanh", GeluTanh(), (torch.randn(4, 33, device=dev),), 1e-5, 1e-5, **o)
# dynamic: one compiled kernel for two row counts
m = RMSNorm(256).to(dev, BF)
for n in (5, 9, 17):
    check("rmsnorm dynamic rows=%d" % n, m, (torch.randn(n, 256, device=dev).to(BF),), 1e-2, 1.6e-2, dynamic=True)

# the launchers refuse '?' extents their kernels cannot run on (extent_checks)
def launcher_checks():
    global fails
    import subprocess
    import tempfile
    from tensorforge import runtime
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lit-tests", "run", "extent-checks.tir")
    tfc = os.environ["TENSORFORGE_TFC"]
    d = tempfile.mkdtemp(prefix="tf-checks-")
    for emitter in ("triton", "ptx"):
        out = os.path.join(d, emitter)
        os.makedirs(out, exist_ok=True)
        dest = os.path.join(out, "module.py") if emitter == "triton" else out
        subprocess.run([tfc, "--emit=" + emitter, "--target=h200", src, "-o", dest], check=True)
        add = runtime.python_function(out, emitter, "add")
        x, y = torch.randn(5, 3, device=dev), torch.randn(5, 3, device=dev)
        try:
            torch.testing.assert_close(add(x, y), x + y)
            add(x, torch.randn(7, 3, device=dev))
            print("FAIL launcher checks %s: 5 and 7 rows were not refused" % emitter)
            fails += 1
        except ValueError as e:
            print("OK   launcher checks %-28s refused: %s" % (emitter, e))
        except Exception as e:  # noqa: BLE001
            print("FAIL launcher checks %s: %s" % (emitter, e))
            fails += 1


launcher_checks()
print("smoke: %d failures" % fails)
