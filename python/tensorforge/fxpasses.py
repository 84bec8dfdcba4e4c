"""Rewrites of the ATen graph before partitioning.

``reinplace_input_updates``: AOTAutograd, keeping input mutations in an
inference graph, writes a KV-cache update as a functional ``index_copy``
(or ``index_put``) of the whole cache followed by ``copy_`` back into the
cache. Run as written, that copies the whole cache twice per decode step.
Where nothing reads the old cache after the update, the pair is the
in-place update it came from: ``index_copy_`` into the cache, no copy.
"""

import torch

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
        cp.replace_all_uses_with(base)
        g.erase_node(cp)
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
    return node.meta.get("tensor_meta")


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
