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
