"""Partitioning: which connected regions of an ATen graph TensorForge compiles.

The op table is the operator support: a node is supported exactly when its
declaration's check passes, and the reason a node stays in PyTorch is the
one that check gave. Regions are formed by torch.fx's capability-based
partitioner, then trimmed:

- views and copies at the edge of a region are handed back to PyTorch,
  where a view costs nothing (inside a region a view is an index map of
  the kernel reading it; at its edge the region reads or writes the
  tensor as it lies), except a strided view at its start, which the region
  would have to copy to be contiguous, and a copy at its end that makes a
  strided view of the region's result contiguous (`.transpose(1, 2)
  .contiguous()` of a per-head norm), which the region writes in that
  layout through the view's index map where PyTorch would copy it again;
  a cat is a copy, and stays;
- a view inside a region that only views the region's inputs (DeepSeek's
  latent keys and values viewed as heads and transposed, the keys' part
  concatenated in the region, the values' part read by attention) is made
  again by PyTorch for the readers outside the region, where it costs
  nothing, rather than written by the region as one more result;
- a strided view outside a region that the region reads, kept out by the
  rule that ends a region at an in-place update (the expand over heads of
  a KV cache just updated), is pulled into the region when it keeps the
  last axis contiguous: the kernel reads the tensor through it where the
  launcher would first copy the whole view to be contiguous;
- a region with nothing left to compute is dropped.
"""

import torch
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupport

from . import fxpasses, optable


class FallbackLog:
    """What stays in PyTorch and why, and the kernels formed: one entry per node."""

    def __init__(self):
        self.fallbacks = []  # (node name, aten op, reason)
        self.regions = []  # (region name, [node names], ops)

    def fallback(self, node, reason):
        self.fallbacks.append((node.name, optable._key(node.target) if node.op == "call_function" else node.op, reason))

    def region(self, name, nodes):
        self.regions.append((name, [n.name for n in nodes], len(nodes)))

    def format(self):
        out = []
        for name, nodes, n in self.regions:
            out.append("[tensorforge] region %s: %d ops (%s)" % (name, n, ", ".join(nodes)))
        for name, op, reason in self.fallbacks:
            out.append("[tensorforge] stays in PyTorch: %s (%s): %s" % (name, op, reason))
        return "\n".join(out)

    def summary(self):
        """Counts of fallback reasons per ATen op: {op: {reason: count}}."""
        s = {}
        for _, op, reason in self.fallbacks:
            s.setdefault(op, {}).setdefault(reason, 0)
            s[op][reason] += 1
        return s


class TableSupport(OperatorSupport):
    """torch.fx operator support backed by the op table."""

    def __init__(self, enabled=()):
        super().__init__()
        self.reasons = {}
        self.enabled = enabled

    def is_node_supported(self, submodules, node):
        if node.op != "call_function":
            return False
        reason = optable.support_reason(node, self.enabled)
        if reason is not None:
            self.reasons[node] = reason
            return False
        return True


EDGE_VIEW = "a view or copy at the edge of a region: PyTorch makes it as cheaply (a view costs nothing there, a cat one copy either way), and the region reads or writes the tensor as it is"
VIEW_AGAIN = "a view of a region's inputs read outside the region: PyTorch makes it again there, where it costs nothing, rather than the region writing it as a result"
NOTHING = "its region would compute nothing but views and copies"


def _contiguous(n):
    """Whether node n's value is laid out contiguously (unknown: yes)."""
    v = n.meta.get("val")
    if isinstance(v, torch.Tensor):
        return v.is_contiguous()
    tm = n.meta.get("tensor_meta")
    if tm is None or getattr(tm, "stride", None) is None:
        return True
    expect = 1
    for d, st in reversed(list(zip(tm.shape, tm.stride))):
        if d != 1 and st != expect:
            return False
        expect *= d
    return True


def _materializes(n, nodes):
    """Whether node n copies a strided view computed in the region (nodes)
    into a contiguous tensor: a clone or contiguous of a transpose."""
    decl = optable.lookup(n)
    if decl is None or decl.kind is not optable.IDENTITY or not n.args or not isinstance(n.args[0], torch.fx.Node):
        return False
    src = n.args[0]
    return src in nodes and _contiguous(n) and not _contiguous(src)


def _trim(nodes):
    """Peel free nodes (views, copies) off the edges of a region until none is left there.

    A view at the start of a region is peeled only when it is contiguous:
    a strided one (a transpose, a slice, an expand) would be copied to be
    contiguous where the region reads it, while inside the region it is an
    index map of the kernel that reads it. A copy at its end that makes a
    strided view of the region's work contiguous stays too (_materializes):
    the region's kernel stores through the view.
    """
    nodes = set(nodes)
    peeled = []
    changed = True
    while changed:
        changed = False
        for n in sorted(nodes, key=lambda n: n.name):
            if not optable.is_free(n):
                continue
            ins = [a for a in n.all_input_nodes]
            leading = all(a not in nodes for a in ins) and _contiguous(n)
            trailing = all(u not in nodes for u in n.users) and not _materializes(n, nodes)
            if leading or trailing:
                nodes.discard(n)
                peeled.append(n)
                changed = True
    return nodes, peeled


def _renumber(gm, order):
    """Number gm's nodes in graph order again, after nodes were inserted:
    regions list their nodes in that order, which must be the same on
    every run (no ties)."""
    order.clear()
    order.update({n: i for i, n in enumerate(gm.graph.nodes)})


def _written(gm):
    """The nodes some op writes in place (through views of them): a view of
    one read after the write must not be made again outside its region,
    where it would see the write."""
    out = set()
    for n in gm.graph.nodes:
        for v in fxpasses.written_operands(n):
            while isinstance(v, torch.fx.Node):
                out.add(v)
                v = v.args[0] if fxpasses.aliases_first(v) else None
    return out


def _views_outside(gm, nodes, order, written):
    """Give the readers outside a region of a view of the region's inputs a
    copy of that view made outside the region (see the module comment).

    A node of the region is a pure view when it is free (optable.is_free)
    and each of its inputs is outside the region, and not written in
    place, or is a pure view itself. Returns the views made outside."""
    pure, made = set(), {}
    for n in sorted(nodes, key=order.get):
        if optable.is_free(n) and all(a in pure if a in nodes else a not in written for a in n.all_input_nodes):
            pure.add(n)

    def outside(n):
        if n not in nodes:
            return n
        if n not in made:
            args = [outside(a) for a in n.all_input_nodes]
            at = max(args, key=order.get)
            if at.op == "placeholder":  # after every placeholder, where the code starts
                at = [p for p in gm.graph.nodes if p.op == "placeholder"][-1]
            with gm.graph.inserting_after(at):
                c = gm.graph.node_copy(n, lambda a: outside(a))
            c.meta = dict(n.meta)
            _renumber(gm, order)
            made[n] = c
        return made[n]

    for n in sorted(pure, key=order.get):
        readers = [u for u in n.users if u not in nodes]
        if not readers:
            continue
        c = outside(n)
        for u in readers:
            u.replace_input_with(n, c)
    # views of the region now read by nothing
    for n in sorted(pure, key=order.get, reverse=True):
        if not n.users:
            nodes.discard(n)
            gm.graph.erase_node(n)
    return sorted(made.values(), key=order.get)


def _inner_contiguous(n):
    """Whether node n's value has a last axis of stride 1 (or of extent 1).
    A symbolic extent or stride there counts as no: asking would add a
    guard on it."""
    v = n.meta.get("val")
    if isinstance(v, torch.Tensor):
        shape, stride = tuple(v.shape), tuple(v.stride())
    else:
        tm = n.meta.get("tensor_meta")
        if tm is None or getattr(tm, "stride", None) is None:
            return False
        shape, stride = tuple(tm.shape), tuple(tm.stride)
    if not shape:
        return True
    return any(type(x) is int and x == 1 for x in (shape[-1], stride[-1]))


def _views_inside(gm, nodes, order, enabled, written, claimed):
    """Pull into a region (nodes) copies of the strided views outside it that
    it reads (see the module comment): not of a view another region may hold
    (claimed), nor of one that reads or is a tensor written in place."""
    changed = True
    while changed:
        changed = False
        for n in sorted(nodes, key=order.get):
            for v in n.all_input_nodes:
                if v in nodes or v in claimed or v in written or not optable.is_free(v) or _contiguous(v) or not _inner_contiguous(v):
                    continue
                if any(a in written for a in v.all_input_nodes) or optable.lookup(v).check(v, enabled) is not None:
                    continue
                with gm.graph.inserting_before(n):
                    c = gm.graph.node_copy(v)
                c.meta = dict(v.meta)
                _renumber(gm, order)
                for u in [u for u in v.users if u in nodes]:
                    u.replace_input_with(v, c)
                nodes.add(c)
                if not v.users:
                    gm.graph.erase_node(v)
                changed = True


def partition(gm, log=None, enabled=()):
    """Fuse the supported regions of gm into submodules fused_0, fused_1, ...

    enabled: the options that turn on optional declarations ("matmul").
    Returns (gm, [submodule names]) and fills log.
    """
    log = log if log is not None else FallbackLog()
    support = TableSupport(enabled)
    order = {n: i for i, n in enumerate(gm.graph.nodes)}
    partitioner = CapabilityBasedPartitioner(gm, support, allows_single_node_partition=True)
    proposed = partitioner.propose_partitions()
    kept, in_region = [], set()
    written = _written(gm)
    claimed = {n for p in proposed for n in p.nodes}  # nodes another region may hold
    for p in proposed:
        nodes, peeled = _trim(p.nodes)
        for n in peeled:
            log.fallback(n, EDGE_VIEW)
        for n in _views_outside(gm, nodes, order, written):
            log.fallback(n, VIEW_AGAIN)
        if not any(not optable.is_free(n) for n in nodes):
            for n in nodes:
                log.fallback(n, NOTHING)
            continue
        _views_inside(gm, nodes, order, enabled, written, claimed)
        # an ordered set, so that the fused submodule (and its .tir) is the same on every run
        p.nodes = {n: None for n in sorted(nodes, key=order.get)}
        kept.append(p)
        in_region.update(nodes)
    for n in gm.graph.nodes:
        if n.op == "call_function" and n not in in_region and n in support.reasons:
            log.fallback(n, support.reasons[n])
    kept.sort(key=lambda p: min(order[n] for n in p.nodes))
    for i, p in enumerate(kept):
        log.region("fused_%d" % i, sorted(p.nodes, key=order.get))
    if not kept:
        return gm, []
    fused = partitioner.fuse_partitions(kept)
    names = [name for name, _ in fused.named_children() if name.startswith("fused_")]
    names.sort(key=lambda s: int(s.split("_")[1]))
    return fused, names
