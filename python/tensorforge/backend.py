"""The torch.compile backend: capture, partition, translate, compile, launch.

``torch.compile(m, backend="tensorforge")`` hands Dynamo's graph to
``tensorforge_backend``, which lowers it to ATen with AOTAutograd and passes
the inference graph to ``compile_aten``. ``compile_aten`` is also what the
tests call on graphs traced with ``make_fx`` (``trace``), where Dynamo is
not available.
"""

import collections
import sys

import torch
import torch.fx

from . import config, cudagraphs, fxpasses, optable, partition, runtime, translate
from .compiler import Compiler
from .config import Options
from .types import Unsupported, info_of

_compilers = {}

# The graphs compiled most recently in this process, for inspection (their
# .tir, their fallback logs); bounded, so that a long-running JIT keeps no
# more than these alive.
compiled_graphs = collections.deque(maxlen=256)


def _compiler(opts):
    key = (opts.tfc, opts.cache_dir, opts.flags, opts.tune_cache)
    c = _compilers.get(key)
    if c is None:
        c = _compilers[key] = Compiler(tfc=opts.tfc, cache_dir=opts.cache_dir, extra_flags=opts.flags,
                                       tune_cache=opts.tune_cache)
    return c


def _ensure_meta(gm, example_inputs):
    """Shapes and dtypes on every node: Dynamo/AOT record them; make_fx in torch 1.x may not."""
    need = any("val" not in n.meta and "tensor_meta" not in n.meta
               for n in gm.graph.nodes if n.op not in ("output",))
    if need:
        from torch.fx.passes.shape_prop import ShapeProp

        ShapeProp(gm).propagate(*example_inputs)


def mutated_inputs(gm):
    """The indices of gm's placeholders that some node writes in place (a KV-cache
    ``index_copy_``, compiled or left to PyTorch): ops whose schema marks the
    argument written."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    index = {ph: i for i, ph in enumerate(placeholders)}
    out = set()
    for n in gm.graph.nodes:
        for v in fxpasses.written_operands(n):
            # through views of an input (kc[:, :] in torch 1.x traces): ops
            # whose result aliases their first argument
            while isinstance(v, torch.fx.Node) and fxpasses.aliases_first(v):
                v = v.args[0]
            if isinstance(v, torch.fx.Node) and v in index:
                out.add(index[v])
    return sorted(out)


class CompiledGraph:
    """The partitioned graph: PyTorch runs its nodes, compiled kernels sit in it as modules.

    ``mutated_inputs``: the inputs the graph updates in place (see
    ``mutated_inputs``), which a CUDA-graph runner must copy back when it
    ran the graph on copies of them."""

    def __init__(self, gm, log, kernels, compiler, mutated=()):
        self.gm = gm
        self.log = log
        self.kernels = kernels  # [Translation]
        self.compiler = compiler
        self.mutated_inputs = tuple(mutated)

    def __call__(self, *args):
        return self.gm(*args)

    @property
    def tir(self):
        return "".join(k.text + "\n" for k in self.kernels)


_MATMULS = ("aten.mm.default", "aten.addmm.default", "aten.bmm.default")


def decide_matmul(gm, opts):
    """Whether this graph's matmuls are compiled, and, where matmul="auto" leaves
    them to cuBLAS, the reason the fallback log gives (else None).

    "auto" compiles them when the emitter is Triton and every mm, addmm and bmm
    of the graph has at most AUTO_MATMUL_ROWS rows of static extent: decode
    steps, where the skinny kernels (split-K GEMVs with their epilogues) are
    measured at or above cuBLAS. One rule for the whole graph, so that a
    layer's projections are either all TensorForge's or all cuBLAS's."""
    if opts.matmul is not None and opts.matmul != "auto":
        return bool(opts.matmul), None
    base = "matmul stays in PyTorch (cuBLAS): matmul=\"auto\" compiles matmuls "
    if not opts.auto_matmul_applies():
        return False, base + "only with the triton emitter (this is %s); options={\"matmul\": True} forces it" \
            % opts.emitter
    rows = []
    for n in gm.graph.nodes:
        if n.op != "call_function" or optable._key(n.target) not in _MATMULS:
            continue
        info = info_of(n)
        m = None if info is None or info.rank < 2 else info.shape[-2]
        if not isinstance(m, int) or m > config.AUTO_MATMUL_ROWS:
            return False, base + ("in graphs whose matmuls all have at most %d rows of static extent (decode), "
                                  "where its kernels are at or above cuBLAS; %s has %s rows"
                                  % (config.AUTO_MATMUL_ROWS, n.name, "run-time" if m is None or
                                     not isinstance(m, int) else m))
        rows.append(m)
    return bool(rows), None


def _symbolic(d):
    """The sympy expression of a symbolic extent, else None: a SymInt's
    (torch 2), a SymIntNode's Python object's (torch 1.13)."""
    expr = getattr(getattr(d, "node", None), "expr", None)
    if expr is None and hasattr(d, "get_pyobj"):
        expr = getattr(d.get_pyobj(), "expr", None)
    return expr


def row_counter(gm, limit=None):
    """Where the graph's mm, addmm and bmm have rows of run-time extent: a
    function of the graph's inputs (in placeholder order) that gives the
    largest row count of its matmuls, or None where some row count is not a
    function of the inputs' extents (a symbol no input's size or SymInt
    argument binds) or, with limit, where a static row count exceeds it (the
    count could never be within it).

    Dynamo records a SymInt for a dynamic extent, whose expression (sympy)
    is in symbols that the placeholders bind: a SymInt argument, or an
    extent of an input tensor."""
    rows, dynamic = [], False
    for n in gm.graph.nodes:
        if n.op != "call_function" or optable._key(n.target) not in _MATMULS:
            continue
        val = n.meta.get("val")
        shape = getattr(val, "shape", None)
        if shape is None or len(shape) < 2:
            return None
        m = shape[-2]
        expr = _symbolic(m)
        if expr is not None and getattr(expr, "is_number", False):
            m = int(expr)  # an extent a guard fixed
        if isinstance(m, int):
            if limit is not None and m > limit:
                return None
            rows.append(int(m))
            continue
        if expr is None:
            return None
        rows.append(expr)
        dynamic = True
    if not dynamic:
        return None
    binds = {}  # symbol -> (placeholder index, dim or None for a SymInt argument)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for i, p in enumerate(placeholders):
        val = p.meta.get("val")
        expr = _symbolic(val)
        if expr is not None:
            if getattr(expr, "is_Symbol", False):
                binds.setdefault(expr, (i, None))
            continue
        for d, ext in enumerate(getattr(val, "shape", ())):
            e = _symbolic(ext)
            if e is not None and getattr(e, "is_Symbol", False):
                binds.setdefault(e, (i, d))
    for r in rows:
        if not isinstance(r, int) and not set(r.free_symbols) <= set(binds):
            return None

    def count(args):
        env = {}
        for sym, (i, d) in binds.items():
            env[sym] = int(args[i]) if d is None else int(args[i].shape[d])
        return max(r if isinstance(r, int) else int(r.xreplace(env)) for r in rows)
    return count


class RowDispatch:
    """Two compilations of one graph whose matmuls' row count is known only at
    run time (matmul="auto"): ``small`` with TensorForge's matmuls, for at
    most ``limit`` rows (decode batches), ``large`` with cuBLAS's. Both
    compute the same function; the choice, made per call from the inputs'
    extents (``rows``), only decides which is faster."""

    def __init__(self, rows, limit, small, large):
        self.rows, self.limit = rows, limit
        self.small, self.large = small, large

    def __call__(self, *args):
        try:
            small = self.rows(args) <= self.limit
        except (TypeError, ValueError, IndexError, AttributeError):
            small = False  # inputs the counter cannot read: the graph that suits any size
        return self.small(*args) if small else self.large(*args)

    @property
    def log(self):
        return self.large.log

    @property
    def tir(self):
        return self.large.tir


def _copy_graph(gm):
    """A GraphModule of a copy of gm's graph (node metadata shared), owned by gm's root."""
    g = torch.fx.Graph()
    out = g.graph_copy(gm.graph, {})
    g.output(out)
    return torch.fx.GraphModule(gm, g)


def compile_aten(gm, example_inputs, options=None):
    """Compile the supported regions of an ATen-level inference graph: once, or,
    under matmul="auto" where the matmuls' rows are known only at run time,
    twice (with and without TensorForge's matmuls, RowDispatch)."""
    opts = options if isinstance(options, Options) else Options.from_dict(options)
    _ensure_meta(gm, example_inputs)
    limit = config.AUTO_MATMUL_ROWS
    rows = row_counter(gm, limit) if opts.auto_matmul_applies() else None
    if rows is not None:
        small = _compile_aten(_copy_graph(gm), example_inputs, opts, matmul=(True, None))
        why = ("matmul stays in PyTorch (cuBLAS) for calls of more than %d rows: the matmuls' rows are known "
               "only at run time, so matmul=\"auto\" compiles the graph twice, with TensorForge's matmuls for "
               "at most %d rows (decode) and without them beyond" % (limit, limit))
        large = _compile_aten(gm, example_inputs, opts, matmul=(False, why))
        return RowDispatch(rows, limit, small, large)
    return _compile_aten(gm, example_inputs, opts)


def _compile_aten(gm, example_inputs, opts, matmul=None):
    """compile_aten of one graph; matmul, when given, is decide_matmul's answer."""
    fxpasses.reinplace_input_updates(gm)
    fxpasses.splits_as_slices(gm)
    fxpasses.var_mean_as_parts(gm)
    fxpasses.fills_as_cat(gm)
    fxpasses.rotate_half_as_roll(gm)
    fxpasses.sink_transposes(gm)
    fxpasses.cse_views(gm)
    matmul, why_not = matmul if matmul is not None else decide_matmul(gm, opts)
    if matmul:
        fxpasses.sink_matmul_views(gm)
        fxpasses.hoist_matmul_views(gm)
    elif "--exact-rounding" not in opts.flags:
        fxpasses.residual_adds_into_matmuls(gm)
    mutated = mutated_inputs(gm)  # before partitioning hides the updates in regions
    log = partition.FallbackLog()
    fused, names = partition.partition(gm, log, opts.enabled(matmul))
    if why_not:
        log.fallbacks = [(n, op, why_not if r == optable.MATMUL else r) for n, op, r in log.fallbacks]
    fxpasses.linears_as_calls(fused)
    fxpasses.region_input_meta(fused, names)
    translations, single = [], {}
    for name in names:
        sub = getattr(fused, name)
        try:
            tr = translate.translate(sub, name.replace("fused_", "region_"), opts.enabled(matmul))
        except Unsupported as e:
            log.fallbacks.append((name, "region", "not translated, runs in PyTorch: %s" % e))
            continue
        out = [n for n in sub.graph.nodes if n.op == "output"][0]
        single[name] = not isinstance(out.args[0], (list, tuple))
        translations.append((name, tr))
    compiler = _compiler(opts)
    if translations:
        text = "".join(tr.text + "\n" for _, tr in translations)
        folder = compiler.build(text, opts.target, opts.emitter)
        for name, tr in translations:
            if opts.emitter == "cpu":
                fn = runtime.CpuFunction(folder, tr)
            else:
                fn = runtime.python_function(folder, opts.emitter, tr.name)
            setattr(fused, name, runtime.Kernel(fn, tr, single[name]))
    fxpasses.views_to_reshapes(fused)
    fused.recompile()
    if opts.log:
        print(log.format(), file=sys.stderr)
    compiled = CompiledGraph(fused, log, [tr for _, tr in translations], compiler, mutated)
    compiled_graphs.append(compiled)
    if opts.cudagraphs:
        return cudagraphs.CudaGraphRunner(compiled)
    return compiled


def trace(fn, *example_inputs, dynamic=False):
    """An ATen-level inference graph of fn (a module or function) with make_fx."""
    from torch.fx.experimental.proxy_tensor import make_fx

    if isinstance(fn, torch.nn.Module):
        fn.eval()
    with torch.no_grad():
        return make_fx(fn, decomposition_table=_decompositions(),
                       tracing_mode="symbolic" if dynamic else "real")(*example_inputs)


def compile_module(fn, *example_inputs, options=None):
    """trace + compile_aten: what a user of torch 1.x (no Dynamo) calls."""
    gm = trace(fn, *example_inputs)
    return compile_aten(gm, example_inputs, options)


# Decompositions applied while AOTAutograd lowers to ATen: composite ops the
# op table does not declare but whose parts it does.
def _decompositions():
    from torch._decomp import get_decompositions

    aten = torch.ops.aten
    wanted = [getattr(aten, n) for n in ("native_layer_norm", "addcmul", "lerp", "hardswish", "masked_fill",
                                         "rsub", "silu_backward", "softplus", "hardsigmoid", "mish",
                                         "leaky_relu", "hardtanh", "elu", "clamp_min", "clamp_max")
              if hasattr(aten, n)]
    return get_decompositions(wanted)


def tensorforge_backend(gm, example_inputs, options=None, **kwargs):
    """The Dynamo backend (torch >= 2): AOTAutograd to ATen, then compile_aten."""
    from torch._functorch.aot_autograd import aot_module_simplified, make_boxed_func

    opts = Options.from_dict(options)

    def fw(g, ex):
        return make_boxed_func(compile_aten(g, ex, opts))

    def bw(g, ex):
        return make_boxed_func(g.forward)

    return aot_module_simplified(gm, example_inputs, fw_compiler=fw, bw_compiler=bw,
                                 decompositions=_decompositions(), keep_inference_input_mutations=True)
