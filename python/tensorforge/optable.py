"""The ATen op table: one declaration per ATen op.

Each declaration names an ATen overload, the way it translates (its *kind*:
unary, binary, reduction, view, ...) and the graph-dialect op it becomes.
The same entry answers both questions the frontend asks of a node:

- ``check(node)``: can TensorForge compile it? ``None`` if so, else the reason,
  which the partitioner logs when the node stays in PyTorch;
- ``emit(fn, node)``: the .tir it becomes, inside a function being written.

Ops TensorForge leaves to PyTorch on purpose (matmul, attention, embedding
lookups, ...) are declared too, with the reason, so that the fallback log
says why rather than "unknown op".

Kinds are a handful of small functions below; the table at the end is data.
"""

import math
import operator

import torch

from .types import FLOATS, DYNAMIC, TensorInfo, Unsupported, info_of, tensor_type

aten = torch.ops.aten


# ---------------------------------------------------------------------------
# Helpers shared by the kinds


def _arg(node, i, name, default=None):
    if i < len(node.args):
        return node.args[i]
    return node.kwargs.get(name, default)


def _is_tensor_arg(a):
    return isinstance(a, torch.fx.Node) and info_of(a) is not None


def _reduce_axes(dims, rank):
    """The axes a reduction's ``dim`` argument names (None or []: all), from 0."""
    if dims is None or dims == []:
        return list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    return _norm_axes(list(dims), rank)


def _is_scalar(a):
    return isinstance(a, (int, float, bool)) and not isinstance(a, torch.fx.Node)


def _out(node):
    info = info_of(node)
    if info is None:
        raise Unsupported("its result is not a single tensor")
    return info


def _need_tensor(node, a, what):
    if not _is_tensor_arg(a):
        raise Unsupported("%s is not a tensor with known shape and dtype" % what)


def _norm_axes(axes, rank):
    return [a + rank if a < 0 else a for a in axes]


def _compute_dtype(out_dtype, operands):
    """The dtype an element-wise op computes in, as PyTorch's opmath does.

    A reduced-precision float result with a Python scalar operand is computed
    in f32 (the scalar is not rounded to bf16 first); otherwise operands are
    brought to the result dtype, which is PyTorch's promoted type.
    """
    if out_dtype in (torch.float16, torch.bfloat16) and any(_is_scalar(a) for a in operands):
        return torch.float32
    return out_dtype


def _promote(operands):
    """torch.result_type of FX operands (tensors and Python scalars)."""
    tensors = [info_of(a).dtype for a in operands if _is_tensor_arg(a)]
    scalars = [a for a in operands if _is_scalar(a)]
    if not tensors:
        raise Unsupported("no tensor operand")
    dt = tensors[0]
    for t in tensors[1:]:
        dt = torch.promote_types(dt, t)
    # a Python float makes an integer result float; ints and bools change nothing
    if any(isinstance(s, float) for s in scalars) and dt not in FLOATS:
        dt = torch.get_default_dtype()
    return dt


# ---------------------------------------------------------------------------
# Kinds: each is (check, emit). check raises Unsupported; emit returns the
# name of the value the node becomes.


class Kind:
    def check(self, decl, node):
        pass

    def emit(self, decl, fn, node):
        raise NotImplementedError


class Unary(Kind):
    """``%y = graph.OP %x : T``; the operand is cast to the result dtype first.

    ``float_only``: the op is defined on floats (exp, tanh, ...).
    """

    def check(self, decl, node):
        x = node.args[0]
        _need_tensor(node, x, "the operand")
        out = _out(node)
        if decl.params.get("float_only") and out.dtype not in FLOATS:
            raise Unsupported("%s of %s is not defined in the graph dialect" % (decl.tir, out.dtype))
        for key, allowed in decl.params.get("attrs_allowed", {}).items():
            v = _arg(node, 1, key, allowed[0])
            if v not in allowed:
                raise Unsupported("%s=%r is not supported" % (key, v))

    def emit(self, decl, fn, node):
        out = _out(node)
        x = fn.value(node.args[0], out.dtype)
        attrs = {}
        for key, allowed in decl.params.get("attrs_allowed", {}).items():
            v = _arg(node, 1, key, allowed[0])
            attrs[decl.params.get("attr_names", {}).get(key, key)] = v
        return fn.op(decl.tir, [x], out, attrs, node=node)


class Binary(Kind):
    """``%z = graph.OP %a, %b``, NumPy broadcasting, scalars as constants.

    ``alpha``: the ATen op takes alpha (add, sub): only 1 is accepted.
    ``reverse``: the operands are swapped (rsub).
    """

    def check(self, decl, node):
        a, b = node.args[0], node.args[1]
        if not (_is_tensor_arg(a) or _is_tensor_arg(b)):
            raise Unsupported("no tensor operand")
        for v, what in ((a, "the first operand"), (b, "the second operand")):
            if not (_is_tensor_arg(v) or _is_scalar(v)):
                raise Unsupported("%s is neither a tensor nor a Python number" % what)
        if decl.params.get("alpha") and _arg(node, 2, "alpha", 1) != 1:
            raise Unsupported("alpha != 1")
        if _arg(node, 2, "rounding_mode", None) is not None and decl.params.get("div"):
            raise Unsupported("rounding_mode is not supported")
        out = _out(node)
        if out.dtype == torch.bool:
            raise Unsupported("boolean arithmetic is not in the graph dialect")

    def emit(self, decl, fn, node):
        a, b = node.args[0], node.args[1]
        if decl.params.get("reverse"):
            a, b = b, a
        out = _out(node)
        cdt = _compute_dtype(out.dtype, [a, b])
        va, vb = fn.value(a, cdt), fn.value(b, cdt)
        if cdt == out.dtype:
            return fn.op(decl.tir, [va, vb], out, node=node)
        t = fn.op(decl.tir, [va, vb], out.with_dtype(cdt), node=node)
        return fn.cast(t, out.with_dtype(cdt), out)


class Compare(Kind):
    """``%c = graph.cmp %a, %b {predicate = P}``, computed in the promoted dtype."""

    def check(self, decl, node):
        a, b = node.args[0], node.args[1]
        if not (_is_tensor_arg(a) or _is_tensor_arg(b)):
            raise Unsupported("no tensor operand")
        _promote([a, b])

    def emit(self, decl, fn, node):
        a, b = node.args[0], node.args[1]
        dt = _promote([a, b])
        return fn.op("graph.cmp", [fn.value(a, dt), fn.value(b, dt)], _out(node),
                     {"predicate": decl.params["predicate"]}, node=node)


class Where(Kind):
    """``aten.where.self(c, a, b)`` as ``graph.select``."""

    def check(self, decl, node):
        _need_tensor(node, node.args[0], "the condition")
        if info_of(node.args[0]).dtype != torch.bool:
            raise Unsupported("the condition is not bool")

    def emit(self, decl, fn, node):
        out = _out(node)
        c = fn.value(node.args[0], torch.bool)
        return fn.op("graph.select", [c, fn.value(node.args[1], out.dtype), fn.value(node.args[2], out.dtype)],
                     out, node=node)


class Cast(Kind):
    """Dtype conversions (``_to_copy``, ``convert_element_type``, ``to.dtype``)."""

    def check(self, decl, node):
        _need_tensor(node, node.args[0], "the operand")
        if node.kwargs.get("pin_memory"):
            raise Unsupported("pin_memory= is not a dtype conversion")
        if node.kwargs.get("layout") not in (None, torch.strided):
            raise Unsupported("layout= is not a dtype conversion")
        inp, out = info_of(node.args[0]), _out(node)
        val = node.args[0].meta.get("val")
        dev = node.kwargs.get("device")
        if dev is not None and isinstance(val, torch.Tensor) and torch.device(dev) != val.device:
            raise Unsupported("moves the tensor to another device")
        if inp.shape != out.shape:
            raise Unsupported("changes the shape")

    def emit(self, decl, fn, node):
        inp, out = info_of(node.args[0]), _out(node)
        x = fn.value(node.args[0])
        if inp.dtype == out.dtype:
            return x
        return fn.cast(x, inp, out, node=node)


class Identity(Kind):
    """Copies and aliases: SSA values are immutable, so they are the operand."""

    def check(self, decl, node):
        _need_tensor(node, node.args[0], "the operand")
        if info_of(node.args[0]).shape != _out(node).shape or info_of(node.args[0]).dtype != _out(node).dtype:
            raise Unsupported("changes the shape or dtype")

    def emit(self, decl, fn, node):
        return fn.value(node.args[0])


class Reduce(Kind):
    """``sum/mean/amax/amin`` over dims, with keepdim; ``dtype=`` as a cast first."""

    def _axes(self, node, rank):
        return _reduce_axes(_arg(node, 1, "dim", None), rank)

    def check(self, decl, node):
        _need_tensor(node, node.args[0], "the operand")
        inp = info_of(node.args[0])
        axes = self._axes(node, inp.rank)
        for a in axes:
            if inp.shape[a] is DYNAMIC:
                raise Unsupported("reduces a dimension of run-time extent")
        out = _out(node)
        if decl.tir == "graph.reduce_mean" and out.dtype not in FLOATS:
            raise Unsupported("mean of integers")

    def emit(self, decl, fn, node):
        inp, out = info_of(node.args[0]), _out(node)
        axes = self._axes(node, inp.rank)
        keep = bool(_arg(node, 2, "keepdim", False))
        x = fn.value(node.args[0], out.dtype)
        return fn.op(decl.tir, [x], out, {"axes": axes, "keepdim": keep}, node=node)


class Var(Kind):
    """``var.correction`` (x, dims, correction=, keepdim=): the mean of the squared
    deviations from the mean over dims, times N / (N - correction) (1 when
    None); in f32 for bf16 and f16 operands, as PyTorch accumulates them,
    rounded once to the result's type."""

    def _axes(self, node, rank):
        return _reduce_axes(_arg(node, 1, "dim", None), rank)

    def _correction(self, node):
        c = node.kwargs.get("correction")
        return 1 if c is None else c

    def check(self, decl, node):
        _need_tensor(node, node.args[0], "the operand")
        inp = info_of(node.args[0])
        if inp.dtype not in FLOATS or _out(node).dtype not in FLOATS:
            raise Unsupported("the variance of integers")
        n = 1
        for a in self._axes(node, inp.rank):
            if inp.shape[a] is DYNAMIC:
                raise Unsupported("reduces a dimension of run-time extent")
            n *= inp.shape[a]
        c = self._correction(node)
        if not _is_scalar(c) or n - c <= 0:
            raise Unsupported("a correction of %r over %d elements" % (c, n))

    def emit(self, decl, fn, node):
        inp, out = info_of(node.args[0]), _out(node)
        axes = self._axes(node, inp.rank)
        keep = bool(_arg(node, 3, "keepdim", False))
        ct = torch.float32 if out.dtype in (torch.bfloat16, torch.float16) else out.dtype
        x = fn.value(node.args[0], ct)
        full = inp.with_dtype(ct)
        kept = TensorInfo([1 if i in axes else d for i, d in enumerate(inp.shape)], ct,
                          [None if i in axes else s for i, s in enumerate(inp.symbols)])
        mean = fn.op("graph.reduce_mean", [x], kept, {"axes": axes, "keepdim": True})
        dev = fn.op("graph.sub", [x, mean], full)
        sq = fn.op("graph.mul", [dev, dev], full)
        n = 1
        for a in axes:
            n *= inp.shape[a]
        c = self._correction(node)
        res = out.with_dtype(ct)
        steps = [("graph.reduce_mean", [sq], {"axes": axes, "keepdim": keep})]
        if c:
            steps.append(("graph.mul", [None, fn.constant(float(n) / float(n - c), ct)], None))
        v = None
        for i, (op, operands, attrs) in enumerate(steps):
            last = i == len(steps) - 1 and ct == out.dtype
            v = fn.op(op, [v if o is None else o for o in operands], res, attrs, node=node if last else None)
        if ct != out.dtype:
            v = fn.cast(v, res, out, node=node)
        return v


class VectorNorm(Kind):
    """``linalg_vector_norm(x, ord, dim, keepdim)`` and ``norm.ScalarOpt_dim(x, p, dim,
    keepdim)`` of order 2 (F.normalize, QK L2 norms): the square root of the sum
    of squares, in f32 for bf16 and f16 operands, rounded once to the result's
    type."""

    def _parts(self, decl, node):
        if decl.params.get("legacy"):  # norm.ScalarOpt_dim(self, p, dim, keepdim)
            return _arg(node, 1, "p", 2), _arg(node, 2, "dim", None), bool(_arg(node, 3, "keepdim", False))
        return _arg(node, 1, "ord", 2), _arg(node, 2, "dim", None), bool(_arg(node, 3, "keepdim", False))

    def check(self, decl, node):
        _need_tensor(node, node.args[0], "the operand")
        inp, out = info_of(node.args[0]), _out(node)
        order, dims, _ = self._parts(decl, node)
        if order != 2:
            raise Unsupported("a norm of order %r (order 2 is compiled)" % (order,))
        if inp.dtype not in FLOATS or out.dtype not in FLOATS:
            raise Unsupported("the norm of integers")
        if node.kwargs.get("dtype") is not None:
            raise Unsupported("a dtype= argument")
        for a in _reduce_axes(dims, inp.rank):
            if inp.shape[a] is DYNAMIC:
                raise Unsupported("reduces a dimension of run-time extent")

    def emit(self, decl, fn, node):
        inp, out = info_of(node.args[0]), _out(node)
        _, dims, keep = self._parts(decl, node)
        axes = _reduce_axes(dims, inp.rank)
        ct = torch.float32 if out.dtype in (torch.bfloat16, torch.float16) else out.dtype
        x = fn.value(node.args[0], ct)
        sq = fn.op("graph.mul", [x, x], inp.with_dtype(ct))
        res = out.with_dtype(ct)
        total = fn.op("graph.reduce_sum", [sq], res, {"axes": axes, "keepdim": keep})
        if ct == out.dtype:
            return fn.op("graph.sqrt", [total], res, node=node)
        return fn.cast(fn.op("graph.sqrt", [total], res), res, out, node=node)


class Norm(Kind):
    """``_softmax``, ``_log_softmax`` (x, dim, half_to_float) and ``logsumexp``."""

    def check(self, decl, node):
        _need_tensor(node, node.args[0], "the operand")
        inp = info_of(node.args[0])
        dim = node.args[1]
        if isinstance(dim, (list, tuple)):
            if len(dim) != 1:
                raise Unsupported("reduces several dims")
            dim = dim[0]
        if inp.shape[dim] is DYNAMIC:
            raise Unsupported("normalises a dimension of run-time extent")
        if decl.tir == "graph.logsumexp" and _arg(node, 2, "keepdim", False):
            raise Unsupported("keepdim=True")
        if _out(node).dtype not in FLOATS:
            raise Unsupported("not a float tensor")

    def emit(self, decl, fn, node):
        out = _out(node)
        dim = node.args[1]
        if isinstance(dim, (list, tuple)):
            dim = dim[0]
        x = fn.value(node.args[0], out.dtype)
        return fn.op(decl.tir, [x], out, {"axis": dim}, node=node)


class PowScalar(Kind):
    """``pow.Tensor_Scalar``: x^2 is x*x (PyTorch's own kernels special-case it too)."""

    def check(self, decl, node):
        _need_tensor(node, node.args[0], "the base")
        if not _is_scalar(node.args[1]):
            raise Unsupported("the exponent is not a number")
        if _out(node).dtype not in FLOATS:
            raise Unsupported("integer power")

    def emit(self, decl, fn, node):
        out = _out(node)
        e = node.args[1]
        x = fn.value(node.args[0], out.dtype)
        if e == 2:
            return fn.op("graph.mul", [x, x], out, node=node)
        if e == 1:
            return x
        return fn.op("graph.pow", [x, fn.constant(float(e), out.dtype)], out, node=node)


class Clamp(Kind):
    """``clamp(x, min, max)`` with number bounds."""

    def check(self, decl, node):
        _need_tensor(node, node.args[0], "the operand")
        lo, hi = _arg(node, 1, "min"), _arg(node, 2, "max")
        for v in (lo, hi):
            if v is not None and not _is_scalar(v):
                raise Unsupported("a bound is not a number")
        if lo is None and hi is None:
            raise Unsupported("no bound")

    def emit(self, decl, fn, node):
        out = _out(node)
        x = fn.value(node.args[0], out.dtype)
        lo, hi = _arg(node, 1, "min"), _arg(node, 2, "max")
        lo = -math.inf if lo is None else lo
        hi = math.inf if hi is None else hi
        return fn.op("graph.clamp", [x], out, {"min": float(lo), "max": float(hi)}, node=node)


class Gelu(Kind):
    def check(self, decl, node):
        _need_tensor(node, node.args[0], "the operand")
        if _arg(node, 1, "approximate", "none") not in ("none", "tanh"):
            raise Unsupported("unknown approximation")

    def emit(self, decl, fn, node):
        out = _out(node)
        return fn.op("graph.gelu", [fn.value(node.args[0], out.dtype)], out,
                     {"approximate": _arg(node, 1, "approximate", "none")}, node=node)


class Reshape(Kind):
    """view, reshape, unsqueeze, squeeze, flatten: ``graph.reshape``."""

    def check(self, decl, node):
        _need_tensor(node, node.args[0], "the operand")
        inp, out = info_of(node.args[0]), _out(node)
        if DYNAMIC in inp.shape or DYNAMIC in out.shape:
            # A reshape that only adds or drops unit dims keeps every `?`.
            if [d for d in inp.shape if d != 1] != [d for d in out.shape if d != 1] or \
               [s for s in inp.symbols if s] != [s for s in out.symbols if s]:
                raise Unsupported("reshapes dimensions of run-time extent")

    def emit(self, decl, fn, node):
        inp, out = info_of(node.args[0]), _out(node)
        x = fn.value(node.args[0])
        if inp.shape == out.shape:
            return x
        return fn.op("graph.reshape", [x], out, node=node)


class Transpose(Kind):
    """transpose.int, permute, t: ``graph.transpose {perm}``."""

    def _perm(self, decl, node, rank):
        if decl.params.get("t"):
            return [1, 0] if rank == 2 else list(range(rank))
        if decl.params.get("permute"):
            return _norm_axes(list(node.args[1]), rank)
        d0, d1 = _norm_axes([node.args[1], node.args[2]], rank)
        perm = list(range(rank))
        perm[d0], perm[d1] = perm[d1], perm[d0]
        return perm

    def check(self, decl, node):
        _need_tensor(node, node.args[0], "the operand")

    def emit(self, decl, fn, node):
        inp = info_of(node.args[0])
        perm = self._perm(decl, node, inp.rank)
        x = fn.value(node.args[0])
        if perm == list(range(inp.rank)):
            return x
        return fn.op("graph.transpose", [x], _out(node), {"perm": perm}, node=node)


class Expand(Kind):
    """expand: ``graph.broadcast_to``."""

    def check(self, decl, node):
        _need_tensor(node, node.args[0], "the operand")

    def emit(self, decl, fn, node):
        inp, out = info_of(node.args[0]), _out(node)
        x = fn.value(node.args[0])
        if inp.shape == out.shape:
            return x
        return fn.op("graph.broadcast_to", [x], out, node=node)


class Slice(Kind):
    """slice.Tensor(x, dim, start, end, step): ``graph.slice`` (``strides`` for a step): the sliced
    dimension static, every other kept whole (a size of -1 where it is a run-time extent)."""

    def check(self, decl, node):
        _need_tensor(node, node.args[0], "the operand")
        inp, out = info_of(node.args[0]), _out(node)
        step = _arg(node, 4, "step", 1)
        if not isinstance(step, int) or step < 1:
            raise Unsupported("a step that is not a positive constant")
        dim = _norm_axes([_arg(node, 1, "dim", 0)], inp.rank)[0]
        if inp.shape[dim] is DYNAMIC:
            raise Unsupported("a slice along a dimension of run-time extent (graph.slice keeps such a dimension whole)")
        start = _arg(node, 2, "start", 0)
        if start is not None and not isinstance(start, int):
            raise Unsupported("the start is not a constant")
        del out

    def emit(self, decl, fn, node):
        inp, out = info_of(node.args[0]), _out(node)
        dim = _norm_axes([_arg(node, 1, "dim", 0)], inp.rank)[0]
        start = _arg(node, 2, "start", 0) or 0
        if start < 0:
            start += inp.shape[dim]
        start = max(0, min(start, inp.shape[dim]))
        step = _arg(node, 4, "step", 1)
        x = fn.value(node.args[0])
        if out.shape == inp.shape and (step == 1 or inp.shape[dim] <= 1):
            return x
        offsets = [0] * inp.rank
        offsets[dim] = start
        # a run-time extent, kept whole: -1
        sizes = [-1 if n is DYNAMIC else n for n in out.shape]
        attrs = {"offsets": offsets, "sizes": sizes}
        if step != 1:
            strides = [1] * inp.rank
            strides[dim] = step
            attrs["strides"] = strides
        return fn.op("graph.slice", [x], out, attrs, node=node)


class Cat(Kind):
    """cat(tensors, dim): ``graph.concat {axis}``."""

    def check(self, decl, node):
        ts = node.args[0]
        if not isinstance(ts, (list, tuple)) or not ts:
            raise Unsupported("no tensors")
        for t in ts:
            _need_tensor(node, t, "an operand")
        out = _out(node)
        dim = _norm_axes([_arg(node, 1, "dim", 0)], out.rank)[0]
        if out.shape[dim] is DYNAMIC:
            raise Unsupported("joins along a dimension of run-time extent")
        for t in ts:
            inf = info_of(t)
            if inf.rank != out.rank and not _legacy_empty(inf):
                raise Unsupported("an operand of rank %d joined into rank %d" % (inf.rank, out.rank))
        if not _cat_parts(ts, out.rank, dim):
            raise Unsupported("every operand is empty")

    def emit(self, decl, fn, node):
        out = _out(node)
        dim = _norm_axes([_arg(node, 1, "dim", 0)], out.rank)[0]
        parts = _cat_parts(node.args[0], out.rank, dim)
        vals = [fn.value(t, out.dtype) for t in parts]
        if len(vals) == 1:
            return vals[0]
        return fn.op("graph.concat", vals, out, {"axis": dim}, node=node)


def _legacy_empty(inf):
    """A 1-D tensor of no elements, which torch.cat skips whatever the other ranks
    (transformers' DynamicCache starts its layers with one)."""
    return inf.rank == 1 and inf.shape[0] == 0


def _cat_parts(ts, rank, dim):
    """The operands of a cat that contribute elements."""
    return [t for t in ts if not _legacy_empty(info_of(t)) and info_of(t).shape[dim] != 0]


class Roll(Kind):
    """roll(x, [shift], [-1]): ``graph.roll {shift}``, an index map of element-wise kernels."""

    def check(self, decl, node):
        _need_tensor(node, node.args[0], "the operand")
        inp = info_of(node.args[0])
        shifts, dims = _arg(node, 1, "shifts"), _arg(node, 2, "dims", [])
        shifts = [shifts] if isinstance(shifts, int) else list(shifts)
        dims = [dims] if isinstance(dims, int) else list(dims)
        if len(shifts) != 1 or len(dims) != 1 or dims[0] not in (-1, inp.rank - 1):
            raise Unsupported("rolls other than one shift along the last axis")
        if not isinstance(shifts[0], int):
            raise Unsupported("the shift is not a constant")
        if inp.rank == 0 or inp.shape[-1] is DYNAMIC:
            raise Unsupported("rolls a dimension of run-time extent")

    def emit(self, decl, fn, node):
        shifts = _arg(node, 1, "shifts")
        shift = shifts if isinstance(shifts, int) else shifts[0]
        return fn.op("graph.roll", [fn.value(node.args[0])], _out(node), {"shift": shift}, node=node)


class MatMul(Kind):
    """``mm``, ``bmm`` and ``addmm`` as ``graph.matmul`` (an addmm's bias as
    a ``graph.add`` after it, which the compiler fuses as the epilogue).

    Both operands take the result's float dtype; the compiler accumulates in
    f32. A transposed right operand (``t(w)`` of a weight, as linear
    decomposes) is a ``graph.transpose`` the compiler folds into
    ``transpose_b``. Declared with ``option="matmul"``: these nodes stay in
    PyTorch unless that option is on.
    """

    def _operands(self, decl, node):
        if decl.params.get("bias"):
            return node.args[1], node.args[2]
        return node.args[0], node.args[1]

    def check(self, decl, node):
        a, b = self._operands(decl, node)
        _need_tensor(node, a, "the left operand")
        _need_tensor(node, b, "the right operand")
        out = _out(node)
        if out.dtype not in FLOATS:
            raise Unsupported("integer matmul (graph.matmul of %s)" % out.dtype)
        ia, ib = info_of(a), info_of(b)
        if ia.dtype != out.dtype or ib.dtype != out.dtype:
            raise Unsupported("operands of another dtype than the result")
        if ia.shape[-1] is DYNAMIC or ib.rank > 2 and ib.shape[-2] is DYNAMIC or ib.rank == 2 and ib.shape[0] is DYNAMIC:
            raise Unsupported("a contraction over a dimension of run-time extent")
        if ib.shape[-1] is DYNAMIC:
            raise Unsupported("a right operand with a run-time number of columns")
        if decl.params.get("bias"):
            _need_tensor(node, node.args[0], "the bias")
            if _arg(node, 3, "beta", 1) != 1 or _arg(node, 4, "alpha", 1) != 1:
                raise Unsupported("beta or alpha != 1")

    def emit(self, decl, fn, node):
        out = _out(node)
        a, b = self._operands(decl, node)
        va, vb = fn.value(a, out.dtype), fn.value(b, out.dtype)
        y = fn.op("graph.matmul", [va, vb], out, node=node, full_sig=True)
        if decl.params.get("bias"):
            return fn.op("graph.add", [y, fn.value(node.args[0], out.dtype)], out)
        return y


class IntMatMul(Kind):
    """``_int_mm`` (int8 x int8 -> int32, the W8A8 matmul torchao and
    quantized layers call) as ``graph.matmul`` of both operands widened to
    i32 by ``graph.cast``: the compiler reads them as int8 and sums in
    int32 (the widenings are its prologue, the scale and requantize after it
    its epilogue). Declared with ``option="matmul"`` like mm.
    """

    def check(self, decl, node):
        a, b = node.args[0], node.args[1]
        _need_tensor(node, a, "the left operand")
        _need_tensor(node, b, "the right operand")
        out = _out(node)
        ia, ib = info_of(a), info_of(b)
        if ia.dtype != torch.int8 or ib.dtype != torch.int8 or out.dtype != torch.int32:
            raise Unsupported("_int_mm of %s x %s -> %s (int8 x int8 -> int32 is compiled)" % (ia.dtype, ib.dtype, out.dtype))
        if ia.rank != 2 or ib.rank != 2:
            raise Unsupported("_int_mm of operands that are not matrices")
        if ia.shape[1] is DYNAMIC or ib.shape[0] is DYNAMIC or ib.shape[1] is DYNAMIC:
            raise Unsupported("a contraction over a dimension of run-time extent, or a run-time number of columns")

    def emit(self, decl, fn, node):
        out = _out(node)
        va, vb = fn.value(node.args[0], out.dtype), fn.value(node.args[1], out.dtype)
        return fn.op("graph.matmul", [va, vb], out, node=node, full_sig=True)


def _view_chain(node):
    """The nodes from node down to the tensor it views: full slices (``kc[:, :]``, as
    ``kc[:, :, pos] = k`` traces in torch 1.x) and aliases; [node] for no view."""
    chain = [node]
    while isinstance(node, torch.fx.Node) and node.op == "call_function":
        if node.target == torch.ops.aten.alias.default:
            node = node.args[0]
        elif node.target == torch.ops.aten.slice.Tensor:
            src = node.args[0]
            a, b = info_of(src), info_of(node)
            step = _arg(node, 4, "step", 1)
            if a is None or b is None or a.shape != b.shape or step != 1 or (_arg(node, 2, "start", 0) or 0) != 0:
                break
            node = src
        else:
            break
        chain.append(node)
    return chain


def _whole_view_of_input(node):
    """The graph input node is, or a view of all of it (``_view_chain``), else None."""
    root = _view_chain(node)[-1]
    return root if isinstance(root, torch.fx.Node) and root.op == "placeholder" else None


class IndexCopy(Kind):
    """``index_copy_(cache, dim, index, source)``, and ``index_put_(cache,
    [None, ..., index], source)`` with one index tensor (``cache[:, :, pos] =
    k``), as ``reinplace_input_updates`` leaves a KV-cache update:
    ``graph.index_copy``, which writes the source's slices into the cache
    argument in place (only those slices: a decode step writes one position,
    not the whole cache). The cache must be an input of the compiled graph
    (or a view of all of one), contiguous, and read by nothing else (later
    readers read this node, which is the cache after the update)."""

    def _parts(self, decl, node):
        """(destination, dim, index, source) of the node."""
        if decl.params.get("put"):
            # index_put_(cache, [None, ..., pos], values): one index tensor, at dim
            idx = _arg(node, 1, "indices")
            if not isinstance(idx, (list, tuple)) or sum(i is not None for i in idx) != 1:
                raise Unsupported("index_put with other than one index tensor")
            dim = next(d for d, i in enumerate(idx) if i is not None)
            if _arg(node, 3, "accumulate", False):
                raise Unsupported("index_put with accumulate=True (a scatter-add)")
            return node.args[0], dim, idx[dim], _arg(node, 2, "values")
        return node.args[0], _arg(node, 1, "dim"), _arg(node, 2, "index"), _arg(node, 3, "source")

    def check(self, decl, node):
        base, dim, index, src = self._parts(decl, node)
        for a, what in ((base, "the destination"), (index, "the index"), (src, "the source")):
            _need_tensor(node, a, what)
        root = _whole_view_of_input(base)
        if root is None:
            raise Unsupported("the destination is not an input of the graph, or a view of all of one "
                              "(only inputs are updated in place)")
        if len(base.users) != 1 or any(len(n.users) != 1 for n in _view_chain(base)):
            raise Unsupported("the destination is read by other nodes than this update")
        bi, ii, si = info_of(base), info_of(index), info_of(src)
        if ii.rank != 1 or ii.dtype not in (torch.int32, torch.int64):
            raise Unsupported("the index is not a 1-D tensor of int32 or int64")
        if si.dtype != bi.dtype or si.rank > bi.rank:
            raise Unsupported("the source has another dtype, or a higher rank, than the destination")
        if not isinstance(dim, int):
            raise Unsupported("the dimension is not a constant")
        if tuple(self._full(bi, dim, ii)) != (1,) * (bi.rank - si.rank) + tuple(si.shape):
            raise Unsupported("the source's shape is not the destination's with the index's extent along the "
                              "dimension (leading extents of 1 may be left out)")
        v = base.meta.get("val")
        if isinstance(v, torch.Tensor) and not v.is_contiguous():
            raise Unsupported("the destination is not contiguous")

    @staticmethod
    def _full(bi, dim, ii):
        """The source's shape the update writes: the destination's, with the index's extent at dim."""
        full = list(bi.shape)
        full[dim + bi.rank if dim < 0 else dim] = ii.shape[0]
        return full

    def emit(self, decl, fn, node):
        base, dim, index, src = self._parts(decl, node)
        bi, si = info_of(base), info_of(src)
        full = TensorInfo(self._full(bi, dim, info_of(index)), bi.dtype)
        dim = _norm_axes([dim], bi.rank)[0]
        value = fn.value(src, bi.dtype)
        if si.rank < bi.rank:
            # index_put's values broadcast from the right: the leading 1s put back
            value = fn.op("graph.reshape", [value], full, full_sig=True)
        return fn.update("graph.index_copy", [fn.value(base), fn.value(index), value], {"axis": dim})


class Stays(Kind):
    """An op left to PyTorch on purpose; ``reason`` says why."""

    def check(self, decl, node):
        raise Unsupported(decl.params["reason"])


# ---------------------------------------------------------------------------
# The table


class OpDecl:
    __slots__ = ("aten", "kind", "tir", "params")

    def __init__(self, aten_name, kind, tir=None, **params):
        self.aten = aten_name
        self.kind = kind
        self.tir = tir
        self.params = params

    def check(self, node, enabled=()):
        """None if the node translates, else the reason it stays in PyTorch.

        enabled: the options that are on; a declaration with option= needs
        its option among them."""
        opt = self.params.get("option")
        if opt is not None and opt not in enabled:
            return self.params["reason"]
        try:
            self.kind.check(self, node)
            _out(node)
        except Unsupported as e:
            return str(e)
        return None

    def emit(self, fn, node):
        return self.kind.emit(self, fn, node)


UNARY, BINARY, COMPARE = Unary(), Binary(), Compare()
CAST, IDENTITY, REDUCE, NORM = Cast(), Identity(), Reduce(), Norm()
RESHAPE, TRANSPOSE, EXPAND, SLICE, CAT = Reshape(), Transpose(), Expand(), Slice(), Cat()
STAYS = Stays()

MATMUL = ("matmul stays in PyTorch (cuBLAS) with matmul=False; options={\"matmul\": True} compiles mm, bmm, "
          "addmm and _int_mm with the element-wise work around them, and \"auto\" (the default) does so in decode graphs "
          "on the triton emitter")
ATTENTION = "attention (scaled_dot_product_attention) stays in PyTorch"

DECLS = [
    # element-wise unary
    OpDecl("aten.neg.default", UNARY, "graph.neg"),
    OpDecl("aten.abs.default", UNARY, "graph.abs"),
    OpDecl("aten.exp.default", UNARY, "graph.exp", float_only=True),
    OpDecl("aten.exp2.default", UNARY, "graph.exp2", float_only=True),
    OpDecl("aten.log.default", UNARY, "graph.log", float_only=True),
    OpDecl("aten.log2.default", UNARY, "graph.log2", float_only=True),
    OpDecl("aten.log1p.default", UNARY, "graph.log1p", float_only=True),
    OpDecl("aten.expm1.default", UNARY, "graph.expm1", float_only=True),
    OpDecl("aten.sqrt.default", UNARY, "graph.sqrt", float_only=True),
    OpDecl("aten.rsqrt.default", UNARY, "graph.rsqrt", float_only=True),
    OpDecl("aten.reciprocal.default", UNARY, "graph.reciprocal", float_only=True),
    OpDecl("aten.tanh.default", UNARY, "graph.tanh", float_only=True),
    OpDecl("aten.sigmoid.default", UNARY, "graph.sigmoid", float_only=True),
    OpDecl("aten.silu.default", UNARY, "graph.silu", float_only=True),
    OpDecl("aten.relu.default", UNARY, "graph.relu"),
    OpDecl("aten.sin.default", UNARY, "graph.sin", float_only=True),
    OpDecl("aten.cos.default", UNARY, "graph.cos", float_only=True),
    OpDecl("aten.floor.default", UNARY, "graph.floor", float_only=True),
    OpDecl("aten.ceil.default", UNARY, "graph.ceil", float_only=True),
    OpDecl("aten.round.default", UNARY, "graph.round", float_only=True),
    OpDecl("aten.gelu.default", Gelu()),
    # element-wise binary
    OpDecl("aten.add.Tensor", BINARY, "graph.add", alpha=True),
    OpDecl("aten.sub.Tensor", BINARY, "graph.sub", alpha=True),
    OpDecl("aten.rsub.Scalar", BINARY, "graph.sub", alpha=True, reverse=True),
    OpDecl("aten.mul.Tensor", BINARY, "graph.mul"),
    OpDecl("aten.div.Tensor", BINARY, "graph.div", div=True),
    OpDecl("aten.maximum.default", BINARY, "graph.max"),
    OpDecl("aten.minimum.default", BINARY, "graph.min"),
    OpDecl("aten.pow.Tensor_Tensor", BINARY, "graph.pow"),
    OpDecl("aten.logaddexp.default", BINARY, "graph.logaddexp"),
    OpDecl("aten.logaddexp2.default", BINARY, "graph.logaddexp2"),
    OpDecl("aten.pow.Tensor_Scalar", PowScalar()),
    OpDecl("aten.clamp.default", Clamp()),
    # comparisons and select
    OpDecl("aten.eq.Tensor", COMPARE, predicate="eq"),
    OpDecl("aten.eq.Scalar", COMPARE, predicate="eq"),
    OpDecl("aten.ne.Tensor", COMPARE, predicate="ne"),
    OpDecl("aten.ne.Scalar", COMPARE, predicate="ne"),
    OpDecl("aten.lt.Tensor", COMPARE, predicate="lt"),
    OpDecl("aten.lt.Scalar", COMPARE, predicate="lt"),
    OpDecl("aten.le.Tensor", COMPARE, predicate="le"),
    OpDecl("aten.le.Scalar", COMPARE, predicate="le"),
    OpDecl("aten.gt.Tensor", COMPARE, predicate="gt"),
    OpDecl("aten.gt.Scalar", COMPARE, predicate="gt"),
    OpDecl("aten.ge.Tensor", COMPARE, predicate="ge"),
    OpDecl("aten.ge.Scalar", COMPARE, predicate="ge"),
    OpDecl("aten.where.self", Where()),
    # conversions and copies
    OpDecl("aten._to_copy.default", CAST),
    OpDecl("prims.convert_element_type.default", CAST),
    OpDecl("aten.to.dtype", CAST),
    OpDecl("aten.clone.default", IDENTITY),
    OpDecl("aten.alias.default", IDENTITY),
    OpDecl("aten.detach.default", IDENTITY),
    OpDecl("aten.contiguous.default", IDENTITY),
    # reductions and normalisations
    OpDecl("aten.sum.dim_IntList", REDUCE, "graph.reduce_sum"),
    OpDecl("aten.mean.dim", REDUCE, "graph.reduce_mean"),
    OpDecl("aten.mean.default", REDUCE, "graph.reduce_mean"),
    OpDecl("aten.sum.default", REDUCE, "graph.reduce_sum"),
    OpDecl("aten.var.correction", Var()),
    OpDecl("aten.linalg_vector_norm.default", VectorNorm()),
    OpDecl("aten.norm.ScalarOpt_dim", VectorNorm(), legacy=True),
    OpDecl("aten.amax.default", REDUCE, "graph.reduce_max"),
    OpDecl("aten.amin.default", REDUCE, "graph.reduce_min"),
    OpDecl("aten._softmax.default", NORM, "graph.softmax"),
    OpDecl("aten._log_softmax.default", NORM, "graph.log_softmax"),
    OpDecl("aten.logsumexp.default", NORM, "graph.logsumexp"),
    # views (each a kernel of its own in TensorForge today; see partition.py)
    OpDecl("aten.view.default", RESHAPE, view=True),
    OpDecl("aten._unsafe_view.default", RESHAPE, view=True),
    OpDecl("aten.reshape.default", RESHAPE, view=True),
    OpDecl("aten._reshape_alias.default", RESHAPE, view=True),
    OpDecl("aten.unsqueeze.default", RESHAPE, view=True),
    OpDecl("aten.squeeze.dim", RESHAPE, view=True),
    OpDecl("aten.squeeze.default", RESHAPE, view=True),
    OpDecl("aten.flatten.using_ints", RESHAPE, view=True),
    OpDecl("aten.transpose.int", TRANSPOSE, view=True),
    OpDecl("aten.permute.default", TRANSPOSE, view=True, permute=True),
    OpDecl("aten.t.default", TRANSPOSE, view=True, t=True),
    OpDecl("aten.expand.default", EXPAND, view=True),
    OpDecl("aten.slice.Tensor", SLICE, view=True),
    OpDecl("aten.cat.default", CAT, view=True),
    OpDecl("aten.roll.default", Roll()),
    # left to PyTorch on purpose
    # matmul: compiled with options={"matmul": True} (or "auto" where it applies), else left to PyTorch
    OpDecl("aten.mm.default", MatMul(), option="matmul", reason=MATMUL),
    OpDecl("aten.addmm.default", MatMul(), option="matmul", reason=MATMUL, bias=True),
    OpDecl("aten.bmm.default", MatMul(), option="matmul", reason=MATMUL),
    OpDecl("aten._int_mm.default", IntMatMul(), option="matmul", reason=MATMUL),
    OpDecl("aten.baddbmm.default", STAYS, reason=MATMUL),
    OpDecl("aten.matmul.default", STAYS, reason=MATMUL),
    OpDecl("aten.linear.default", STAYS, reason=MATMUL),
    OpDecl("aten.addmm_.default", STAYS, reason="a residual add the cuBLAS matmul before it does as its epilogue "
           "(addmm_, in place on the residual: fxpasses.residual_adds_into_matmuls)"),
    OpDecl("aten.scaled_dot_product_attention.default", STAYS, reason=ATTENTION),
    OpDecl("aten._scaled_dot_product_flash_attention.default", STAYS, reason=ATTENTION),
    OpDecl("aten._scaled_dot_product_efficient_attention.default", STAYS, reason=ATTENTION),
    OpDecl("aten._scaled_dot_product_cudnn_attention.default", STAYS, reason=ATTENTION),
    OpDecl("aten.embedding.default", STAYS, reason="embedding lookups (gathers) stay in PyTorch"),
    OpDecl("aten.index.Tensor", STAYS, reason="indexing by tensors (gathers) stays in PyTorch"),
    OpDecl("aten.index_select.default", STAYS, reason="gathers stay in PyTorch"),
    OpDecl("aten.topk.default", STAYS, reason="top-k stays in PyTorch"),
    OpDecl("aten.sort.default", STAYS, reason="sorting stays in PyTorch"),
    OpDecl("aten.index_copy_.default", IndexCopy()),
    OpDecl("aten.index_copy.default", STAYS, reason="functional scatters stay in PyTorch (an update of a graph input is compiled once reinplace_input_updates has made it index_copy_)"),
    OpDecl("aten.index_put_.default", IndexCopy(), put=True),
    OpDecl("aten.index_put.default", STAYS, reason="functional scatters stay in PyTorch (an update of a graph input is compiled once reinplace_input_updates has made it index_put_)"),
    OpDecl("aten.copy_.default", STAYS, reason="in-place copies stay in PyTorch"),
    OpDecl("aten.copy.default", STAYS, reason="copies into existing storage stay in PyTorch"),
    OpDecl("aten.arange.start", STAYS, reason="factory ops stay in PyTorch"),
    OpDecl("aten.arange.default", STAYS, reason="factory ops stay in PyTorch"),
    OpDecl("aten.full.default", STAYS, reason="factory ops stay in PyTorch"),
    OpDecl("aten.zeros.default", STAYS, reason="factory ops stay in PyTorch"),
    OpDecl("aten.empty.memory_format", STAYS, reason="factory ops stay in PyTorch"),
]


def _key(target):
    """The table key of an FX call_function target: 'aten.add.Tensor'."""
    if isinstance(target, torch._ops.OpOverload):
        ns = target.namespace
        return "%s.%s.%s" % (ns, target._schema.name.split("::")[-1], target._overloadname)
    if target is operator.getitem:
        return "getitem"
    return getattr(target, "__name__", str(target))


TABLE = {d.aten: d for d in DECLS}
if len(TABLE) != len(DECLS):
    raise RuntimeError("an ATen op is declared twice in the op table")


def lookup(node):
    """The declaration of a call_function node, or None."""
    if node.op != "call_function":
        return None
    return TABLE.get(_key(node.target))


def support_reason(node, enabled=()):
    """None if TensorForge compiles this node, else why it stays in PyTorch.

    enabled: the options that are on (``"matmul"``)."""
    if node.op != "call_function":
        return "not an op call (%s)" % node.op
    decl = lookup(node)
    if decl is None:
        return "no declaration in the op table for %s" % _key(node.target)
    for a in node.all_input_nodes:
        if a.op == "call_function" and a.target in (torch.ops.aten.index_copy_.default, torch.ops.aten.index_put_.default):
            return ("reads a tensor right after its in-place update: the update's region ends there, "
                    "and what reads the updated tensor runs after it")
    return decl.check(node, enabled)


def is_view(node):
    decl = lookup(node)
    return decl is not None and decl.params.get("view", False)


def is_free(node):
    """Views, identities and casts to the same dtype: nodes that compute nothing.

    A cat is no view: PyTorch copies its operands too, and a region that
    holds one (with the views it reads) writes it in one pass.
    """
    decl = lookup(node)
    if decl is None or decl.kind is CAT:
        return False
    if decl.kind is CAST and node.args and isinstance(node.args[0], torch.fx.Node):
        a, b = info_of(node.args[0]), info_of(node)
        return a is not None and b is not None and a.dtype == b.dtype
    return decl.params.get("view", False) or decl.kind in (IDENTITY,)


def type_of(node):
    return tensor_type(_out(node).shape, _out(node).dtype)
