"""Rewrites of the ATen graph before partitioning.

``splits_as_slices``: the pieces of a ``split`` as ``slice`` views.

``fills_as_cat``: an empty tensor filled slice by slice (functionalised, a
chain of ``slice_scatter`` that writes the whole tensor at every link) as
one ``cat`` of the slices' values.

``reinplace_input_updates``: AOTAutograd, keeping input mutations in an
inference graph, writes a KV-cache update as a functional ``index_copy``
(or ``index_put``) of the whole cache followed by ``copy_`` back into the
cache. Run as written, that copies the whole cache twice per decode step.
Where nothing reads the old cache after the update, the pair is the
in-place update it came from: ``index_copy_`` into the cache, no copy; the
readers of the cache after it read the ``index_copy_`` node (the cache
itself, updated), so that they stay after it in any partitioning.
"""

import contextlib
import operator

import torch

from .types import DYNAMIC, info_of

aten = torch.ops.aten

_BIG = 2 ** 62  # a slice end that means "to the end"

_INPLACE = {
    aten.index_copy.default: aten.index_copy_.default,
    aten.index_put.default: aten.index_put_.default,
}


def reinplace_input_updates(gm):
    g = gm.graph
    order = {n: i for i, n in enumerate(g.nodes)}
    changed = False
    for n in list(g.nodes):
        if n.op != "call_function" or n.target not in _INPLACE:
            continue
        base = n.args[0]
        if not isinstance(base, torch.fx.Node) or base.op != "placeholder":
            continue
        copies = [u for u in n.users if u.op == "call_function" and u.target == aten.copy_.default
                  and u.args[0] is base and u.args[1] is n]
        if len(copies) != 1:
            continue
        # the old value must not be read after the update
        if any(order[u] > order[n] and u is not copies[0] for u in base.users if u is not n):
            continue
        n.target = _INPLACE[n.target]
        cp = copies[0]
        cp.replace_all_uses_with(n)
        g.erase_node(cp)
        # later readers of the cache read the update (the same tensor), so
        # that the order of the two is a data dependence partitioning keeps
        for u in list(base.users):
            if u is not n and order[u] > order[n]:
                u.replace_input_with(base, n)
        changed = True
    if changed:
        g.lint()
        gm.recompile()
    return changed


_VIEWS = (aten.view.default, aten._unsafe_view.default)


def views_to_reshapes(gm):
    """Let the ops PyTorch runs take any strides of a compiled region's results.

    A compiled region returns contiguous tensors where eager may have kept an
    input's layout (an element-wise op on a transposed tensor writes a
    transposed result), so a later ``view`` that was valid for eager's
    strides can be invalid for ours. In a functional inference graph
    ``reshape`` means the same and copies only when it must.
    """
    changed = False
    for n in gm.graph.nodes:
        if n.op == "call_function" and n.target in _VIEWS:
            n.target = aten.reshape.default
            changed = True
    if changed:
        gm.recompile()
    return changed


def _last_axis(dim, rank):
    return dim == -1 or dim == rank - 1


def _slice_of(node, rank):
    """(source, start, end) of a slice.Tensor over the last axis with step 1, else None."""
    if not (isinstance(node, torch.fx.Node) and node.op == "call_function" and node.target == aten.slice.Tensor):
        return None
    args = list(node.args) + [None] * (5 - len(node.args))
    src, dim, start, end, step = args[:5]
    dim = node.kwargs.get("dim", 0 if dim is None else dim)
    step = node.kwargs.get("step", 1 if step is None else step)
    start = node.kwargs.get("start", 0 if start is None else start)
    end = node.kwargs.get("end", _BIG if end is None else end)
    if step != 1 or not _last_axis(dim, rank) or not isinstance(start, int) or not isinstance(end, int):
        return None
    return src, start, end


def _meta(node):
    """A node's FakeTensor (Dynamo, AOT) or ShapeProp metadata: anything with .shape and .dtype."""
    v = node.meta.get("val")
    if isinstance(v, torch.Tensor):
        return v
    tm = node.meta.get("tensor_meta")
    return tm if hasattr(tm, "shape") and hasattr(tm, "dtype") else None


def _real_tensors():
    """A context in which new tensors are real even under an active fake mode."""
    try:
        from torch._subclasses.fake_tensor import unset_fake_temporarily
    except ImportError:  # torch 1.x: make_fx traces without an ambient fake mode
        return contextlib.nullcontext()
    return unset_fake_temporarily()


_EMPTY = (aten.new_empty.default, aten.empty.memory_format)


def _shape_dtype(n):
    """The static shape and dtype of node n's value; (None, None) when unknown or dynamic."""
    info = info_of(n) if isinstance(n, torch.fx.Node) else None
    if info is None or DYNAMIC in info.shape:
        return None, None
    return info.shape, info.dtype


def _meta_like(node, f):
    """The meta of f applied to node's value (a fake tensor, or one on the meta device)."""
    v = node.meta.get("val")
    if isinstance(v, torch.Tensor):
        mode = getattr(v, "fake_mode", None)
        if mode is not None:
            with mode:
                return {"val": f(v)}
        return {"val": f(v)}
    shape, dtype = _shape_dtype(node)
    return {"val": f(torch.empty(shape, dtype=dtype, device="meta"))}


def var_mean_as_parts(gm):
    """``var_mean`` with its ``getitem`` as ``var`` and ``mean`` of the same operand.

    LayerNorm decomposes to ``var_mean`` (a tuple of two tensors, which the
    op table cannot translate); its parts are row reductions that fuse with
    the normalisation around them into one kernel, and the mean ``var``
    computes is the same ``graph.reduce_mean`` as the one beside it, which
    cse merges. Returns the number of parts rewritten.
    """
    import operator

    g = gm.graph
    changed = 0
    for n in list(g.nodes):
        if n.op != "call_function" or n.target != aten.var_mean.correction:
            continue
        users = list(n.users)
        if not all(u.op == "call_function" and u.target is operator.getitem and u.args[1] in (0, 1) for u in users):
            continue
        x = n.args[0]
        dims = n.args[1] if len(n.args) > 1 else n.kwargs.get("dim")
        if dims is None:
            shape, _ = _shape_dtype(x)
            if shape is None:
                continue
            dims = list(range(len(shape)))
        keep = n.kwargs.get("keepdim", False)
        changed += _parts_of_tuple(g, n, lambda i: g.call_function(
            aten.var.correction, (x, dims), {"correction": n.kwargs.get("correction"), "keepdim": keep})
            if i == 0 else g.call_function(aten.mean.dim, (x, dims, keep)))
    if changed:
        g.lint()
        gm.recompile()
    return changed


def fills_as_cat(gm):
    """An empty tensor filled slice by slice as the ``cat`` of the slices' values.

    ``k = k_pass.new_empty(...); k[..., :128] = k_pass; k[..., 128:] = k_rot``
    (DeepSeek's multi-head latent attention writes its keys and queries this
    way) is, functionalised, a chain of ``slice_scatter`` of ``copy`` into
    ``new_empty``: each link writes the whole tensor again, where a ``cat``
    (of the values broadcast to their slices, as ``copy_`` broadcasts them)
    writes it once, and is a concat that a TensorForge kernel reads through.
    A chain is rewritten when its slices, along one dimension with step 1,
    cover the empty tensor exactly. It returns the number of chains
    rewritten.
    """
    g = gm.graph
    changed = 0
    for n in reversed(list(g.nodes)):
        if n.op != "call_function" or n.target != aten.slice_scatter.default or not n.users:
            continue
        if any(u.op == "call_function" and u.target == aten.slice_scatter.default and u.args[0] is n for u in n.users):
            continue  # not the end of its chain
        pieces, cur, dim = [], n, None
        while isinstance(cur, torch.fx.Node) and cur.op == "call_function" and cur.target == aten.slice_scatter.default:
            args = list(cur.args) + [None] * 6
            base, src = args[0], args[1]
            d = cur.kwargs.get("dim", args[2] if args[2] is not None else 0)
            start = cur.kwargs.get("start", args[3])
            end = cur.kwargs.get("end", args[4])
            step = cur.kwargs.get("step", args[5] if args[5] is not None else 1)
            if step != 1 or (dim is not None and d != dim):
                break
            dim = d
            pieces.append((start, end, src))
            cur = base
        if not (isinstance(cur, torch.fx.Node) and cur.op == "call_function" and cur.target in _EMPTY):
            continue
        shape, dtype = _shape_dtype(n)
        if shape is None or dim is None:
            continue
        d = dim % len(shape)
        size = shape[d]
        spans = []
        for start, end, src in pieces:
            lo = 0 if start is None else (start + size if start < 0 else start)
            hi = size if end is None else min(end + size if end < 0 else end, size)
            spans.append((lo, hi, src))
        spans.sort(key=lambda t: t[0])
        at = 0
        ok = True
        for lo, hi, _ in spans:
            if lo != at or hi <= lo:
                ok = False
            at = hi
        if not ok or at != size:
            continue
        vals = []
        with g.inserting_before(n):
            for lo, hi, src in spans:
                v = src
                if isinstance(src, torch.fx.Node) and src.op == "call_function" and src.target == aten.copy.default:
                    v = src.args[1]  # copy(slice, value): the value, broadcast and cast to the slice
                want = list(shape)
                want[d] = hi - lo
                vshape, vdtype = _shape_dtype(v)
                if vshape is None:
                    ok = False
                    break
                if vdtype != dtype:
                    nv = g.call_function(aten._to_copy.default, (v,), {"dtype": dtype})
                    nv.meta.update(_meta_like(v, lambda t: t.to(dtype)))
                    v = nv
                if tuple(vshape) != tuple(want):
                    nv = g.call_function(aten.expand.default, (v, want))
                    nv.meta.update(_meta_like(v, lambda t, w=want: t.expand(w)))
                    v = nv
                vals.append(v)
            if not ok:
                continue
            cat = g.call_function(aten.cat.default, (vals, d))
        cat.meta.update(n.meta)
        n.replace_all_uses_with(cat)
        changed += 1
    if changed:
        g.eliminate_dead_code()
        g.lint()
        gm.recompile()
    return changed


_SPLITS = (aten.split_with_sizes.default, aten.split.Tensor)


def _parts_of_tuple(g, n, part):
    """Replace each ``getitem`` of tuple node n by part(index), built where the
    getitem was and given its meta, then drop n. Returns the parts made."""
    count = 0
    for u in list(n.users):
        with g.inserting_before(u):
            p = part(u.args[1])
        p.meta.update(u.meta)
        u.replace_all_uses_with(p)
        g.erase_node(u)
        count += 1
    g.erase_node(n)
    return count


def splits_as_slices(gm):
    """``split`` and ``split_with_sizes`` with their ``getitem`` as ``slice`` views.

    A split is a tuple of views, which the op table cannot translate; each
    piece is a slice along the split dimension, which a kernel reads
    through as an index map (DeepSeek's latent attention splits its
    projections into the parts with and without rotary embedding). It
    returns the number of pieces rewritten.
    """
    import operator

    g = gm.graph
    changed = 0
    for n in list(g.nodes):
        if n.op != "call_function" or n.target not in _SPLITS:
            continue
        x = n.args[0]
        shape, _ = _shape_dtype(x)
        if shape is None:
            continue
        dim = n.kwargs.get("dim", n.args[2] if len(n.args) > 2 else 0) % len(shape)
        size = shape[dim]
        if n.target == aten.split.Tensor:
            step = n.args[1]
            sizes = [min(step, size - s) for s in range(0, size, step)]
        else:
            sizes = list(n.args[1])
        starts = [sum(sizes[:i]) for i in range(len(sizes))]
        users = list(n.users)
        if not all(u.op == "call_function" and u.target is operator.getitem and isinstance(u.args[1], int) for u in users):
            continue
        changed += _parts_of_tuple(g, n, lambda i: g.call_function(
            aten.slice.Tensor, (x, dim, starts[i], starts[i] + sizes[i])))
    if changed:
        g.lint()
        gm.recompile()
    return changed


def rotate_half_as_roll(gm):
    """``cat(-x[..., h:], x[..., :h])`` (transformers' rotate_half) as ``roll(x, h) * sign``.

    The graph dialect's roll is an index map that an element-wise kernel
    reads through, so rotary embeddings become one kernel reading q (and k)
    once, where the slices and the concat would each be a copy. The sign is
    a constant of -1 over the first half and +1 over the second: the product
    is exact, so the values are rotate_half's bit for bit, and PyTorch runs
    the rewritten nodes just as well where the region is not compiled.
    """
    g = gm.graph
    changed = 0
    signs = {}
    for cat in list(g.nodes):
        if cat.op != "call_function" or cat.target != aten.cat.default:
            continue
        parts = cat.args[0]
        dim = cat.args[1] if len(cat.args) > 1 else cat.kwargs.get("dim", 0)
        val = _meta(cat)
        if not isinstance(parts, (list, tuple)) or len(parts) != 2 or val is None:
            continue
        rank = len(val.shape)
        n = val.shape[-1]
        if not _last_axis(dim, rank) or not isinstance(n, int) or n % 2:
            continue
        h = n // 2
        neg, second = parts
        if not (isinstance(neg, torch.fx.Node) and neg.op == "call_function" and neg.target == aten.neg.default):
            continue
        hi, lo = _slice_of(neg.args[0], rank), _slice_of(second, rank)
        if hi is None or lo is None or hi[0] is not lo[0]:
            continue
        x = hi[0]
        xval = _meta(x) if isinstance(x, torch.fx.Node) else None
        if xval is None or xval.shape[-1] != n or xval.dtype != val.dtype:
            continue
        if (hi[1], min(hi[2], n)) != (h, n) or (lo[1], min(lo[2], n)) != (0, h):
            continue
        name = "_tf_rotate_half_sign_%d_%s" % (n, str(val.dtype).replace("torch.", ""))
        if not hasattr(gm, name):
            # AOTAutograd calls the compiler with its fake mode active: a
            # tensor made here would be fake, and the buffer must be real.
            with _real_tensors():
                sign = torch.cat([-torch.ones(h, dtype=val.dtype), torch.ones(h, dtype=val.dtype)])
                sign = sign.to(getattr(xval, "device", None) or "cpu")
            gm.register_buffer(name, sign)
        sign_node = signs.get(name)
        if sign_node is None:
            first = next(n for n in g.nodes if n.op != "placeholder")
            with g.inserting_before(first):
                sign_node = signs[name] = g.get_attr(name)
            sign_node.meta["val"] = getattr(gm, name)
        with g.inserting_before(cat):
            roll = g.call_function(aten.roll.default, (x, [h], [-1]))
            roll.meta.update({k: v for k, v in x.meta.items() if k in ("val", "tensor_meta")})
            rot = g.call_function(aten.mul.Tensor, (roll, sign_node))
            rot.meta.update({k: v for k, v in cat.meta.items() if k in ("val", "tensor_meta")})
        cat.replace_all_uses_with(rot)
        for dead in (cat, neg, neg.args[0], second):
            if not dead.users:
                g.erase_node(dead)
        changed += 1
    if changed:
        g.lint()
        gm.recompile()
    return changed


# Ops that compute element by element with NumPy broadcasting, whose result
# layout is free: a chain of them can run on the untransposed tensor.
_POINTWISE = {
    aten.add.Tensor, aten.sub.Tensor, aten.mul.Tensor, aten.div.Tensor, aten.neg.default,
    aten.exp.default, aten.silu.default, aten.sigmoid.default, aten.tanh.default, aten.rsqrt.default,
    aten.maximum.default, aten.minimum.default, aten._to_copy.default,
}


def _permuted_meta(node, perm):
    """The meta of node's value with its dimensions permuted (result dim i = dim perm[i])."""
    return _meta_like(node, lambda t: t.permute(perm))


def _perm_of(node):
    """The permutation of a transpose.int / permute node that keeps the last axis, else None."""
    if node.op != "call_function":
        return None
    m = _meta(node)
    if m is None:
        return None
    n = len(m.shape)
    if node.target == aten.transpose.int:
        d0, d1 = [d + n if d < 0 else d for d in node.args[1:3]]
        perm = list(range(n))
        perm[d0], perm[d1] = perm[d1], perm[d0]
    elif node.target == aten.permute.default:
        perm = [d + n if d < 0 else d for d in node.args[1]]
    else:
        return None
    if perm == list(range(n)) or perm[-1] != n - 1:
        return None
    return perm


def _rebuild_chain(g, body, inside, new, order, n, operand, meta, back):
    """Rebuild the nodes of body, in graph order, on other operands: one in
    new (a node moved already, or a start) reads its replacement, another
    of rank n reads operand(a) = (target, args, meta) inserted before its
    reader, the rest (broadcast operands, numbers) stay. Each rebuilt node
    takes meta(node). Where a node outside inside reads a node of body, it
    reads back(rebuilt) = (target, args, kwargs) instead, a view to the old
    shape."""
    for node in sorted(body, key=order.get):
        args = []
        for a in node.args:
            if isinstance(a, torch.fx.Node) and a in new:
                args.append(new[a])
            elif isinstance(a, torch.fx.Node) and _meta(a) is not None and len(_meta(a).shape) == n:
                target, targs, m = operand(a)
                with g.inserting_before(node):
                    p = g.call_function(target, targs)
                p.meta.update(m)
                args.append(p)
            else:
                args.append(a)
        with g.inserting_before(node):
            nn = g.call_function(node.target, tuple(args), dict(node.kwargs))
        nn.meta.update(meta(node))
        new[node] = nn
    for node in body:
        outside = [u for u in node.users if u not in inside]
        if not outside:
            continue
        target, bargs, bkw = back(new[node])
        with g.inserting_after(new[node]):
            b = g.call_function(target, bargs, bkw)
        b.meta.update({k: x for k, x in node.meta.items() if k in ("val", "tensor_meta")})
        for u in outside:
            u.replace_input_with(node, b)


def sink_transposes(gm):
    """Run element-wise chains that start at a transpose on the untransposed tensor.

    ``q = x.transpose(1, 2); y = q * cos + rotate_half(q) * sin`` reads a
    transposed (strided) q, which a compiled region would first copy to be
    contiguous. When the transpose keeps the last axis, the chain computes
    the same on x (its other operands permuted back, as free views) and
    its results are transposed afterwards (views again): the region reads x
    as it lies in memory and nothing is copied. Only chains whose values all
    have the transpose's shape are moved.
    """
    g = gm.graph
    changed = 0
    for t in list(g.nodes):
        perm = _perm_of(t)
        if perm is None:
            continue
        shape = tuple(_meta(t).shape)
        n = len(shape)
        inv = [perm.index(i) for i in range(n)]
        order = {x: i for i, x in enumerate(g.nodes)}
        moved = [t]
        inside = {t}

        def side_ok(a):
            # a broadcast operand: fine when it lacks every permuted dim or has full rank
            if not isinstance(a, torch.fx.Node):
                return isinstance(a, (int, float, bool))
            m = _meta(a)
            if m is None:
                return False
            r = len(m.shape)
            if r == n:
                return True
            moved_dims = [i for i in range(n) if perm[i] != i]
            return all(d < n - r for d in moved_dims)

        grew = True
        while grew:
            grew = False
            for node in sorted({u for m in moved for u in m.users}, key=order.get):
                if node in inside or node.op != "call_function":
                    continue
                if node.target == aten.roll.default:
                    dims = node.args[2] if len(node.args) > 2 else []
                    ok = list(dims) in ([-1], [n - 1]) and node.args[0] in inside and len(node.args[1]) == 1
                elif node.target in _POINTWISE:
                    ok = all((isinstance(a, torch.fx.Node) and a in inside) or side_ok(a) for a in node.args) and \
                        all(not isinstance(v, torch.fx.Node) for v in node.kwargs.values())
                else:
                    ok = False
                m = _meta(node)
                if ok and m is not None and tuple(m.shape) == shape:
                    inside.add(node)
                    moved.append(node)
                    grew = True
        body = [x for x in moved if x is not t]
        if not body:
            continue
        _rebuild_chain(g, body, inside, {t: t.args[0]}, order, n,
                       lambda a: (aten.permute.default, (a, inv), _permuted_meta(a, inv)),
                       lambda node: _permuted_meta(node, inv),
                       lambda x: (aten.permute.default, (x, perm), {}))
        for node in sorted(body, key=order.get, reverse=True):
            if not node.users:
                g.erase_node(node)
        if not t.users:
            g.erase_node(t)
        changed += 1
    if changed:
        g.lint()
        gm.recompile()
    return changed


_ROW_VIEWS = (aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten._reshape_alias.default)
_MATMULS = (aten.mm.default, aten.addmm.default)


def _hashable(x):
    """x with its lists as tuples, or None when something in it cannot be hashed."""
    if isinstance(x, (list, tuple)):
        items = [_hashable(i) for i in x]
        return None if any(i is None for i in items) else tuple(items)
    try:
        hash(x)
    except TypeError:
        return None
    return x


_CSE_VIEWS = frozenset(_ROW_VIEWS + (aten.flatten.using_ints, aten.permute.default, aten.transpose.int,
                                      aten.unsqueeze.default, aten.squeeze.dim, aten.expand.default,
                                      aten.slice.Tensor, aten.t.default))


def cse_views(gm):
    """One node for each distinct view of a tensor.

    ``linear`` decomposes to a ``view`` of its input per call, so the gate and
    up projections of an MLP read two views of x; as one they are one input
    of the compiled region, which the compiler sees the two matmuls share.
    The rewrites before it repeat views too (a transposed cos table per use
    that ``sink_transposes`` moved): each repeat would be one more call
    PyTorch makes and one more input a region checks. Views of a tensor the
    graph updates in place are left alone (a reshape may be a copy, taken
    before or after the update).
    """
    g = gm.graph
    mutated = {n.args[0] for n in g.nodes if n.op == "call_function" and n.args and
               getattr(n.target, "_schema", None) is not None and n.target._schema.is_mutable}

    def root(n):
        while isinstance(n, torch.fx.Node) and n.op == "call_function" and n.target in _CSE_VIEWS:
            n = n.args[0]
        return n

    seen, changed = {}, 0
    for n in list(g.nodes):
        if n.op != "call_function" or n.target not in _CSE_VIEWS or root(n) in mutated:
            continue
        key = _hashable((n.target, n.args, tuple(sorted(n.kwargs.items()))))
        if key is None:
            continue
        first = seen.setdefault(key, n)
        if first is not n:
            n.replace_all_uses_with(first)
            g.erase_node(n)
            changed += 1
    if changed:
        g.lint()
        gm.recompile()
    return changed


def _rows_view_of_matmul(v):
    """Whether v views a 2-D matmul result [M, N] as [..., N]: a split of its rows."""
    if v.op != "call_function" or v.target not in _ROW_VIEWS:
        return False
    src = v.args[0]
    if not isinstance(src, torch.fx.Node) or src.op != "call_function" or src.target not in _MATMULS:
        return False
    a, b = _meta(src), _meta(v)
    if a is None or b is None or len(a.shape) != 2 or len(b.shape) < 2:
        return False
    n, m = a.shape[-1], b.shape[-1]
    return isinstance(n, int) and isinstance(m, int) and n == m


def sink_matmul_views(gm):
    """Run the element-wise work after a matmul on its 2-D result.

    ``linear`` on [B, S, K] is ``mm`` on [B*S, K] and a view back to
    [B, S, N]; the SwiGLU, residual add or cast that follows is then
    element-wise on the view. Computed on the 2-D result instead (its other
    operands flattened to [B*S, N], free views; the result viewed back to
    [B, S, N] where something else reads it), the chain is the matmul's
    epilogue, which the compiler fuses into the matmul kernel. Only chains
    whose values all have the view's shape are moved; a broadcast operand
    must lack the row dims or have them all 1.
    """
    g = gm.graph
    changed = 0
    for v in list(g.nodes):
        if v not in g.nodes or not _rows_view_of_matmul(v):
            continue
        shape = tuple(_meta(v).shape)
        n = len(shape)
        order = {x: i for i, x in enumerate(g.nodes)}
        inside = {v}

        def side_ok(a):
            if not isinstance(a, torch.fx.Node):
                return isinstance(a, (int, float, bool))
            if a in inside or (_rows_view_of_matmul(a) and tuple(_meta(a).shape) == shape):
                return True
            m = _meta(a)
            if m is None:
                return False
            r = len(m.shape)
            if r <= 1:
                return True
            return r == n and (tuple(m.shape[:-1]) == shape[:-1] or all(isinstance(d, int) and d == 1 for d in m.shape[:-1]))

        grew = True
        while grew:
            grew = False
            for node in sorted({u for m in inside for u in m.users}, key=order.get):
                if node in inside or node.op != "call_function" or node.target not in _POINTWISE:
                    continue
                m = _meta(node)
                if m is None or tuple(m.shape) != shape:
                    continue
                if all(side_ok(a) for a in node.args) and all(not isinstance(x, torch.fx.Node) for x in node.kwargs.values()):
                    inside.add(node)
                    grew = True
        # views of other matmuls read by the chain join it (gate and up)
        views = {a for node in inside for a in node.args
                 if isinstance(a, torch.fx.Node) and _rows_view_of_matmul(a) and tuple(_meta(a).shape) == shape}
        inside |= views
        body = [x for x in inside if x.target in _POINTWISE]
        if not body:
            continue
        flat = lambda t: t.flatten(0, n - 2)  # noqa: E731
        _rebuild_chain(g, body, inside, {w: w.args[0] for w in inside if w not in body}, order, n,
                       lambda a: (aten.flatten.using_ints, (a, 0, n - 2), _meta_like(a, flat)),
                       lambda node: _meta_like(node, flat),
                       lambda x, v=v: (v.target, (x,) + tuple(v.args[1:]), dict(v.kwargs)))
        for node in sorted(inside, key=order.get, reverse=True):
            if not node.users:
                g.erase_node(node)
        changed += 1
    if changed:
        g.lint()
        gm.recompile()
    return changed


_ROW_POINTWISE = _POINTWISE | {aten.pow.Tensor_Scalar, aten.sqrt.default, aten.reciprocal.default,
                               aten.gelu.default, aten.relu.default, aten.where.self}
_ROW_REDUCTIONS = (aten.mean.dim, aten.sum.dim_IntList, aten.amax.default)
try:
    _ROW_POINTWISE.add(torch.ops.prims.convert_element_type.default)
except AttributeError:  # torch 1.x without prims
    pass


def _is_rows_flatten(f):
    """Whether f merges every dim but the last of a tensor of rank >= 3 into one: [..., N] -> [M, N]."""
    if f.op != "call_function" or not isinstance(f.args[0], torch.fx.Node):
        return False
    a, b = _meta(f.args[0]), _meta(f)
    if a is None or b is None or len(a.shape) < 3 or len(b.shape) != 2:
        return False
    if f.target == aten.flatten.using_ints:
        return tuple(f.args[1:3]) in ((0, len(a.shape) - 2), (0, -2))
    return f.target in _ROW_VIEWS and isinstance(a.shape[-1], int) and a.shape[-1] == b.shape[-1]


def _rows_unflatten_source(a, shape):
    """z when a is a view of a 2-D z as [..., N] of the given shape, else None."""
    if not isinstance(a, torch.fx.Node) or a.op != "call_function" or a.target not in _ROW_VIEWS:
        return None
    z = a.args[0]
    mz, ma = _meta(z) if isinstance(z, torch.fx.Node) else None, _meta(a)
    if mz is None or ma is None or len(mz.shape) != 2 or tuple(ma.shape[:-1]) != tuple(shape[:-1]):
        return None
    return z if isinstance(ma.shape[-1], int) and ma.shape[-1] == mz.shape[-1] else None


def _row_reduction_ok(y, n):
    """A reduction over the last dim with keepdim: the same on the flattened rows."""
    dims = y.args[1] if len(y.args) > 1 else y.kwargs.get("dim")
    keep = y.args[2] if len(y.args) > 2 else y.kwargs.get("keepdim", False)
    if isinstance(dims, int):
        dims = [dims]
    return keep is True and dims is not None and list(dims) in ([-1], [n - 1]) and \
        all(k == "dtype" for k in y.kwargs if k not in ("dim", "keepdim"))


def hoist_matmul_views(gm):
    """Compute on flattened rows what is computed only to be flattened.

    ``linear`` flattens its input's rows ([B, S, K] -> [B*S, K]) before
    ``mm``; when that input is an RMSNorm (element-wise work and a mean over
    the last dim), the view sits between a row kernel and the matmul, and
    the compiler writes it as a copy. Moved above the op that makes it (its
    operands flattened instead: free views at the region's edge, or views
    of 2-D results that are those results), nothing is copied. An op moves
    when everything that reads it reads the same flattening; repeated until
    nothing moves. Returns the number of ops moved.
    """
    g = gm.graph
    moved = 0
    for _ in range(200):
        done = True
        for f in list(g.nodes):
            if f not in g.nodes or not _is_rows_flatten(f):
                continue
            y = f.args[0]
            if y.op != "call_function":
                continue
            shape = tuple(_meta(y).shape)
            n = len(shape)
            z = _rows_unflatten_source(y, shape)
            if z is not None and tuple(_meta(z).shape) == tuple(_meta(f).shape):
                # the flattening of a view of a 2-D result: that result
                f.replace_all_uses_with(z)
                g.erase_node(f)
                done = False
                continue
            if y.target in _ROW_REDUCTIONS:
                if not _row_reduction_ok(y, n):
                    continue
            elif y.target not in _ROW_POINTWISE:
                continue
            if any(isinstance(v, torch.fx.Node) for v in y.kwargs.values()):
                continue
            users = list(y.users)
            if not all(_is_rows_flatten(u) and tuple(_meta(u).shape) == tuple(_meta(f).shape) for u in users):
                continue
            args, ok = [], True
            for i, a in enumerate(y.args):
                if y.target in _ROW_REDUCTIONS and i == 1:
                    args.append([-1])
                    continue
                if not isinstance(a, torch.fx.Node):
                    args.append(a)
                    continue
                m = _meta(a)
                if m is None:
                    ok = False
                    break
                r = len(m.shape)
                if r <= 1:
                    args.append(a)
                elif r == n and (tuple(m.shape[:-1]) == shape[:-1] or all(isinstance(d, int) and d == 1 for d in m.shape[:-1])):
                    with g.inserting_before(y):
                        fa = g.call_function(aten.flatten.using_ints, (a, 0, n - 2))
                    fa.meta.update(_meta_like(a, lambda t: t.flatten(0, n - 2)))
                    args.append(fa)
                else:
                    ok = False
                    break
            if not ok:
                for a in args:
                    if isinstance(a, torch.fx.Node) and a.target == aten.flatten.using_ints and not a.users:
                        g.erase_node(a)
                continue
            with g.inserting_before(y):
                y2 = g.call_function(y.target, tuple(args), dict(y.kwargs))
            y2.meta.update(_meta_like(y, lambda t: t.flatten(0, n - 2)))
            for u in users:
                u.replace_all_uses_with(y2)
                g.erase_node(u)
            g.erase_node(y)
            moved += 1
            done = False
        if done:
            break
        cse_views(gm)
    _erase_unread_views(g)
    if moved:
        g.lint()
        gm.recompile()
    return moved


def _erase_unread_views(g):
    """Drop the views and flattenings nothing reads any more (only those: an
    in-place update reads as unused too)."""
    for n in reversed(list(g.nodes)):
        if n.op == "call_function" and not n.users and (n.target in _ROW_VIEWS or n.target == aten.flatten.using_ints):
            g.erase_node(n)


_TRANSPOSES = (aten.t.default, aten.permute.default, aten.transpose.int)


def _transposed_weight(n):
    """w when n is w transposed (w 2-D), else None."""
    if not isinstance(n, torch.fx.Node) or n.op != "call_function" or n.target not in _TRANSPOSES:
        return None
    w = n.args[0]
    m = _meta(w) if isinstance(w, torch.fx.Node) else None
    if m is None or len(m.shape) != 2:
        return None
    if n.target == aten.permute.default and list(n.args[1]) != [1, 0]:
        return None
    return w


def _outer_meta(gm, n):
    """_meta of n, also where n is a compiled region's result (the result of
    a fused submodule, or an item of its results)."""
    if not isinstance(n, torch.fx.Node):
        return None
    m = _meta(n)
    if m is not None:
        return m
    index = None
    if n.op == "call_function" and n.target is operator.getitem and isinstance(n.args[0], torch.fx.Node):
        n, index = n.args[0], n.args[1]
    if n.op != "call_module":
        return None
    sub = gm.get_submodule(n.target)
    outs = [o for o in sub.graph.nodes if o.op == "output"][0].args[0]
    if isinstance(outs, (list, tuple)) != (index is not None):
        return None
    o = outs if index is None else outs[index]
    return _meta(o) if isinstance(o, torch.fx.Node) else None


def region_input_meta(gm, names):
    """Shapes and dtypes on the inputs of the fused submodules names whose
    placeholders have none: torch 1.x's partitioner leaves them off where the
    input is an item of another region's results (a residual that an add +
    RMSNorm region returns, read by a later region), which would then not
    be translated. They come from the outer graph (``_outer_meta``)."""
    for call in gm.graph.nodes:
        if call.op != "call_module" or call.target not in names:
            continue
        sub = gm.get_submodule(call.target)
        phs = [n for n in sub.graph.nodes if n.op == "placeholder"]
        for ph, a in zip(phs, call.args):
            if _meta(ph) is None:
                m = _outer_meta(gm, a)
                if m is not None:
                    ph.meta["val" if isinstance(m, torch.Tensor) else "tensor_meta"] = m


def _dims(shape):
    # extents compared by name, so that a symbolic one adds no guard
    return [str(d) for d in shape]


def linears_as_calls(gm):
    """Run what ``linear`` decomposed into as one ``linear`` again.

    ``linear`` on [..., K] reaches the ATen graph as four nodes: a view of x
    as rows [M, K], ``t`` of the weight, ``mm`` (``addmm`` with a bias) and a
    view of the result back to [..., N]. In the graph PyTorch runs around the
    compiled regions each node is a Python-level call, a few microseconds of
    host time each, and decode steps are bound by the host; ``aten.linear``
    does the same views and the same cuBLAS call in C++. Run on the graph
    left to PyTorch (after partitioning), so it changes no region.
    """
    g = gm.graph
    changed = False
    for mm in list(g.nodes):
        if mm.op != "call_function" or mm.target not in _MATMULS or len(mm.users) != 1:
            continue
        if mm.target == aten.addmm.default:
            if len(mm.args) != 3 or mm.kwargs.get("beta", 1) != 1 or mm.kwargs.get("alpha", 1) != 1:
                continue
            bias, rows, wt = mm.args
        else:
            bias, (rows, wt) = None, mm.args
        w = _transposed_weight(wt)
        back = next(iter(mm.users))
        if w is None or not _rows_view_of_matmul(back) or not isinstance(rows, torch.fx.Node) or \
                rows.op != "call_function" or rows.target not in _ROW_VIEWS:
            continue
        x = rows.args[0]
        mx, mb, mbias = _outer_meta(gm, x), _meta(back), None
        if bias is not None:
            mbias = _meta(bias) if isinstance(bias, torch.fx.Node) else None
            if mbias is None or len(mbias.shape) != 1:
                continue
        mr = _meta(rows)
        if mx is None or mr is None or len(mx.shape) < 2 or len(mr.shape) != 2 or \
                _dims(mx.shape[:-1]) != _dims(mb.shape[:-1]) or _dims(mx.shape[-1:]) != _dims(mr.shape[-1:]):
            continue
        with g.inserting_before(back):
            args = (x, w) if bias is None else (x, w, bias)
            lin = g.call_function(aten.linear.default, args)
        lin.meta = dict(back.meta)
        back.replace_all_uses_with(lin)
        for n in (back, mm, rows, wt):
            if not n.users:
                g.erase_node(n)
        changed = True
    if changed:
        g.lint()
        gm.recompile()
    return changed


def written_operands(n):
    """The arguments node n writes in place, as its op's schema marks them
    (index_copy_'s cache, copy_'s destination): fx Nodes or other values."""
    schema = getattr(n.target, "_schema", None) if n.op == "call_function" else None
    if schema is None:
        return []
    out = []
    for j, a in enumerate(schema.arguments):
        if a.alias_info is not None and a.alias_info.is_write:
            out.append(n.args[j] if j < len(n.args) else n.kwargs.get(a.name))
    return out


def aliases_first(n):
    """Whether node n's result may share storage with its first argument: its
    schema says so (view, reshape, slice, permute, expand, ...), or it is
    ``_unsafe_view``, a view whose schema does not say so."""
    if n.op != "call_function" or not n.args:
        return False
    if n.target == aten._unsafe_view.default:
        return True
    schema = getattr(n.target, "_schema", None)
    if schema is None or not schema.returns or not schema.arguments:
        return False
    ret, first = schema.returns[0].alias_info, schema.arguments[0].alias_info
    return ret is not None and first is not None and not ret.is_write and bool(set(ret.before_set) & set(first.before_set))


def _ancestors(nodes):
    """Every node some node of nodes depends on, and those nodes."""
    seen, stack = set(), [n for n in nodes if isinstance(n, torch.fx.Node)]
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        stack.extend(n.all_input_nodes)
    return seen


def _residual_of(add, mm_view):
    """For add(h, view(mm)) (either order), h when the matmul can add it in place:
    h is computed in the graph (its own storage: not an input, not a view), has
    the add's shape and dtype and is contiguous, and is read by nothing after
    the add: every other reader of h, or of a view of h, is an ancestor of the
    matmul, so that any order of the graph runs it before the matmul writes h."""
    h = add.args[1] if add.args[0] is mm_view else add.args[0]
    if not isinstance(h, torch.fx.Node) or h is mm_view or h.op != "call_function" or aliases_first(h):
        return None
    mh, ma, mv = _meta(h), _meta(add), _meta(mm_view)
    if mh is None or ma is None or mv is None or mh.dtype != ma.dtype or mv.dtype != ma.dtype:
        return None
    if _dims(mh.shape) != _dims(ma.shape) or _dims(mv.shape) != _dims(ma.shape) or DYNAMIC in info_of(h).shape:
        return None
    if isinstance(mh, torch.Tensor) and not mh.is_contiguous():
        return None
    mm = mm_view.args[0]
    before = _ancestors(mm.all_input_nodes)
    aliases, stack = set(), [h]
    while stack:
        n = stack.pop()
        if n in aliases:
            continue
        aliases.add(n)
        for u in n.users:
            if u is add:
                continue
            if u.op == "output":
                return None
            if aliases_first(u) and u.args[0] is n:
                stack.append(u)
            elif u not in before:
                return None
    return h


def residual_adds_into_matmuls(gm):
    """A residual add after a matmul PyTorch runs becomes the matmul's own
    epilogue: ``h + view(mm(x, w_t))`` as ``addmm_(view(h), x, w_t)``, cuBLAS
    adding h (beta = 1) as it writes its result, in place, into h's storage.

    The add would otherwise be a kernel of its own that reads the matmul's
    result and h and writes their sum (Inductor's and ours, as they keep
    cuBLAS): a Llama layer's last residual add in prefill, 30 us of an H200's
    2.4 ms. Taken only where h is the graph's own value, of the add's shape,
    read by nothing after it (``_residual_of``); a residual that is a graph
    input (the layer's first residual add) stays an add. The sum is rounded
    once, from f32 (eager rounds the matmul's result first).
    """
    g = gm.graph
    changed = False
    for add in list(g.nodes):
        if add.op != "call_function" or add.target != aten.add.Tensor or len(add.args) != 2 or \
                add.kwargs.get("alpha", 1) != 1:
            continue
        for mm_view in add.args:
            if not isinstance(mm_view, torch.fx.Node) or not _rows_view_of_matmul(mm_view) or \
                    mm_view.args[0].target != aten.mm.default or len(mm_view.users) != 1 or \
                    len(mm_view.args[0].users) != 1 or add.args[0] is add.args[1]:
                continue
            h = _residual_of(add, mm_view)
            if h is None:
                continue
            mm = mm_view.args[0]
            rows, wt = mm.args
            m2 = _meta(mm)
            with g.inserting_before(add):
                h2 = g.call_function(aten.view.default, (h, list(m2.shape)))
                h2.meta = dict(mm.meta)
                r = g.call_function(aten.addmm_.default, (h2, rows, wt))
                r.meta = dict(mm.meta)
                out = g.call_function(aten.view.default, (r, list(_meta(add).shape)))
                out.meta = dict(add.meta)
            add.replace_all_uses_with(out)
            for n in (add, mm_view, mm):
                g.erase_node(n)
            changed = True
            break
    if changed:
        g.lint()
        gm.recompile()
    return changed
