"""Options of the backend: ``torch.compile(m, backend="tensorforge", options={...})``."""

import os

TARGETS = ("cpu", "h100", "h200")

# matmul="auto": the most rows (static) a graph's matmuls may have for TensorForge to
# compile them. Measured: 1 and 32 rows (decode) at or above cuBLAS on the Llama, Qwen,
# Mistral and Gemma-2 projections; 4096 rows (prefill) at 0.84-0.97x (docs/pytorch.md).
AUTO_MATMUL_ROWS = 32
MATMUL_MODES = (True, False, "auto")
EMITTERS_FOR = {"cpu": ("cpu",), "h100": ("triton", "ptx"), "h200": ("triton", "ptx")}


class Options:
    """
    target:      "h200" (default when CUDA is available), "h100" or "cpu"
    emitter:     "triton" (default on GPUs) or "ptx"; "cpu" on the cpu target
    cudagraphs:  capture the compiled graph in CUDA graphs and replay it (default False)
    cache_dir:   where compiled modules are kept ($TENSORFORGE_CACHE_DIR, else ~/.cache/tensorforge)
    tfc:         the compiler binary ($TENSORFORGE_TFC, else tfc on PATH)
    log:         print the regions formed and every op left to PyTorch with its reason
                 (also TENSORFORGE_LOG=1)
    flags:       extra tfc flags, e.g. ["-O2"]
    matmul:      compile mm / bmm / addmm too, with the element-wise work around them fused
                 as prologues and epilogues (gate/up + SwiGLU in one kernel, a residual add
                 in the down projection's): True, False (matmuls stay in PyTorch, cuBLAS), or
                 "auto" (the default): compiled in a graph whose matmuls all have at most
                 AUTO_MATMUL_ROWS rows of static extent (decode), with the triton emitter,
                 where TensorForge's skinny kernels are measured at or above cuBLAS; left to
                 cuBLAS elsewhere (prefill, ptx, cpu); a graph whose rows are known only at
                 run time is compiled both ways, each call taking one by its row count
    tune_cache:  a tuning cache written by `tfc --tune` (matmul launch configurations measured
                 on the GPU), passed to tfc as --tune-cache; emitter triton only
    """

    KEYS = ("target", "emitter", "cudagraphs", "cache_dir", "tfc", "log", "flags", "matmul", "tune_cache")

    def __init__(self, target=None, emitter=None, cudagraphs=False, cache_dir=None, tfc=None, log=None, flags=(),
                 matmul="auto", tune_cache=None):
        if target is None:
            import torch

            target = "h200" if torch.cuda.is_available() else "cpu"
        target = {"h100_sxm": "h100"}.get(target, target)
        if target not in TARGETS:
            raise ValueError("tensorforge: unknown target %r (known: %s)" % (target, ", ".join(TARGETS)))
        if emitter is None:
            emitter = EMITTERS_FOR[target][0]
        if emitter not in EMITTERS_FOR[target]:
            raise ValueError("tensorforge: emitter %r does not serve target %r (it takes: %s)" % (
                emitter, target, ", ".join(EMITTERS_FOR[target])))
        if cudagraphs and target == "cpu":
            raise ValueError("tensorforge: cudagraphs needs a GPU target")
        self.target = target
        self.emitter = emitter
        self.cudagraphs = bool(cudagraphs)
        self.cache_dir = cache_dir
        self.tfc = tfc
        self.log = bool(log) if log is not None else os.environ.get("TENSORFORGE_LOG", "") not in ("", "0")
        self.flags = tuple(flags)
        if matmul not in MATMUL_MODES or isinstance(matmul, int) and not isinstance(matmul, bool):
            raise ValueError("tensorforge: matmul must be True, False or \"auto\", not %r" % (matmul,))
        self.matmul = matmul
        if tune_cache is not None:
            if emitter != "triton":
                raise ValueError("tensorforge: tune_cache chooses Triton matmul configurations; emitter %r has none"
                                 % emitter)
            if not os.path.isfile(tune_cache):
                raise ValueError("tensorforge: tune_cache %r is not a file (write one with tfc --emit=triton "
                                 "--target=%s --tune=SECONDS --tune-cache=FILE PROGRAM.tir)" % (tune_cache, target))
            tune_cache = os.path.abspath(tune_cache)
        self.tune_cache = tune_cache

    def enabled(self, matmul=None):
        """The options that turn on optional declarations of the op table.

        matmul: whether this graph's matmuls are compiled (what "auto" decided for
        it); by default, whether the option is True."""
        if matmul is None:
            matmul = self.matmul is True
        return ("matmul",) if matmul else ()

    def auto_matmul_applies(self):
        """Whether matmul="auto" may compile matmuls for this target and emitter."""
        return self.matmul == "auto" and self.emitter == "triton"

    @classmethod
    def from_dict(cls, d):
        d = dict(d or {})
        unknown = sorted(set(d) - set(cls.KEYS))
        if unknown:
            raise ValueError("tensorforge: unknown option(s) %s (known: %s)" % (", ".join(unknown), ", ".join(cls.KEYS)))
        return cls(**d)

    def __repr__(self):
        return "Options(%s)" % ", ".join("%s=%r" % (k, getattr(self, k)) for k in self.KEYS)
