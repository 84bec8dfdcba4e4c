"""FX partitions to graph-dialect .tir text.

One pass over a partition's graph, in order: placeholders become function
arguments, each call node is translated by its op-table declaration, the
output node becomes ``return``. Nothing here knows about particular ops.
"""

import keyword
import math
import re

import torch

from . import optable
from .types import FLOATS, TensorInfo, Unsupported, info_of, tensor_type

# Names a generated Python launcher or kernel must not shadow.
_RESERVED = set(keyword.kwlist) | {
    "abs", "all", "any", "bool", "float", "int", "len", "list", "max", "min", "pow", "range",
    "round", "sum", "tuple", "type", "math", "tl", "triton", "torch", "cfg", "dev", "grid",
    "self", "main", "print", "id", "input", "object", "str", "dict", "set", "slice", "map",
}


def format_float(v):
    """A float as .tir writes it: 1.0e-05, 2.0, inf, -inf, nan."""
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    s = repr(v)
    if "e" in s or "E" in s:
        mant, exp = s.lower().split("e")
        if "." not in mant:
            mant += ".0"
        return "%se%s" % (mant, exp)
    if "." not in s:
        s += ".0"
    return s


def format_attr(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return format_float(v) + " : f32"
    if isinstance(v, str):
        return '"%s"' % v.replace("\\", "\\\\").replace('"', '\\"')
    if isinstance(v, (list, tuple)):
        return "[%s]" % ", ".join(format_attr(x) for x in v)
    raise TypeError("attribute value %r" % (v,))


class FunctionWriter:
    """Writes one func.func: values are named, typed and emitted in order."""

    def __init__(self, name):
        self.name = name
        self.lines = []
        self.args = []  # (name, TensorInfo)
        self.types = {}  # value name -> TensorInfo
        self.names = {}  # fx node -> value name
        self.taken = set()
        self.consts = {}
        self.updated = set()  # arguments updated in place (graph.index_copy)

    # names --------------------------------------------------------------
    def fresh(self, base):
        base = re.sub(r"[^A-Za-z0-9_]", "_", base) or "v"
        if not (base[0].isalpha() or base[0] == "_"):
            base = "v" + base
        if base in _RESERVED:
            base += "_v"
        name, k = base, 1
        while name in self.taken:
            name = "%s_%d" % (base, k)
            k += 1
        self.taken.add(name)
        return name

    # values -------------------------------------------------------------
    def add_arg(self, node, info):
        name = self.fresh(node.name)
        self.args.append((name, info))
        self.types[name] = info
        self.names[node] = name
        return name

    def constant(self, v, dtype):
        key = (repr(v), dtype)
        if key in self.consts:
            return self.consts[key]
        info = TensorInfo((), dtype)
        name = self.fresh("cst")
        if dtype in FLOATS:
            text = format_float(v)
        elif dtype == torch.bool:
            text = "true" if v else "false"
        else:
            if isinstance(v, float) and not v.is_integer():
                raise Unsupported("the number %r is not an integer of %s" % (v, dtype))
            text = str(int(v))
        self.lines.append("  %%%s = graph.constant dense<%s> : %s" % (name, text, tensor_type((), dtype)))
        self.types[name] = info
        self.consts[key] = name
        return name

    def value(self, a, dtype=None):
        """The value name of an operand (an FX node or a Python number), cast to dtype if given."""
        if isinstance(a, torch.fx.Node):
            if a not in self.names:
                raise Unsupported("operand %s is not a tensor of this partition" % a.name)
            name = self.names[a]
            info = self.types[name]
            if dtype is not None and info.dtype != dtype:
                return self.cast(name, info, info.with_dtype(dtype))
            return name
        if isinstance(a, (bool, int, float)):
            if dtype is None:
                raise Unsupported("a number with no dtype to take")
            return self.constant(a, dtype)
        raise Unsupported("operand %r is neither a tensor nor a number" % (a,))

    def op(self, opname, operands, out, attrs=None, node=None, full_sig=False):
        name = self.fresh(node.name if node is not None else opname.split(".")[-1])
        in_types = [self.types[o].tir() for o in operands]
        out_type = out.tir()
        if all(t == out_type for t in in_types) and not full_sig:
            sig = out_type
        else:
            sig = "(%s) -> %s" % (", ".join(in_types), out_type)
        attr = ""
        if attrs:
            attr = " {%s}" % ", ".join("%s = %s" % (k, format_attr(attrs[k])) for k in sorted(attrs))
        self.lines.append("  %%%s = %s %s%s : %s" % (name, opname, ", ".join("%" + o for o in operands), attr, sig))
        self.types[name] = out
        return name

    def update(self, opname, operands, attrs):
        """An op with no result that writes its first operand, an argument, in place.

        Returns that argument's name: the value of the node after the update."""
        attr = " {%s}" % ", ".join("%s = %s" % (k, format_attr(attrs[k])) for k in sorted(attrs))
        sig = "(%s) -> ()" % ", ".join(self.types[o].tir() for o in operands)
        self.lines.append("  %s %s%s : %s" % (opname, ", ".join("%" + o for o in operands), attr, sig))
        self.updated.add(operands[0])
        return operands[0]

    def cast(self, x, inp, out, node=None):
        name = self.fresh((node.name if node is not None else x) + ("" if node is not None else "_cast"))
        self.lines.append("  %%%s = graph.cast %%%s : (%s) -> %s" % (name, x, inp.tir(), out.tir()))
        self.types[name] = out
        return name

    # the function -------------------------------------------------------
    def finish(self, results):
        args = ", ".join("%%%s: %s" % (n, i.tir()) for n, i in self.args)
        rtypes = [self.types[r].tir() for r in results]
        rsig = rtypes[0] if len(rtypes) == 1 else "(%s)" % ", ".join(rtypes)
        head = "func.func @%s(%s) -> %s {" % (self.name, args, rsig)
        ret = "  return %s : %s" % (", ".join("%" + r for r in results), ", ".join(rtypes))
        if not results:
            ret = "  return"
        return "\n".join([head] + self.lines + [ret, "}"]) + "\n"


class Translation:
    """The .tir of one partition and how to call it.

    ``inputs``: for each .tir argument, the index of the partition input it is;
    ``outputs``: for each partition output, the index of the .tir result (or
    ('input', i) when the output is an input passed through, ('updated', i)
    when it is input i after an in-place update, the very tensor passed in).
    """

    def __init__(self, name, text, inputs, outputs, arg_infos, result_infos):
        self.name = name
        self.text = text
        self.inputs = inputs
        self.outputs = outputs
        self.arg_infos = arg_infos
        self.result_infos = result_infos


def translate(gm, name, enabled=()):
    """Translate a partition GraphModule (placeholders in, one output node) into a func.func.

    enabled: the options that turn on optional declarations (as for partition)."""
    fn = FunctionWriter(name)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    inputs = []
    for i, ph in enumerate(placeholders):
        info = info_of(ph)
        if info is None:
            continue  # a SymInt or other non-tensor input: extents come from tensors
        if not any(True for _ in ph.users):
            continue
        fn.add_arg(ph, info)
        inputs.append(i)
    out_node = None
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            continue
        if node.op == "output":
            out_node = node
            break
        decl = optable.lookup(node)
        if decl is None:
            raise Unsupported("%s: no declaration in the op table" % node.name)
        reason = decl.check(node, enabled)
        if reason is not None:
            raise Unsupported("%s: %s" % (node.name, reason))
        fn.names[node] = decl.emit(fn, node)
    outs = out_node.args[0]
    if not isinstance(outs, (list, tuple)):
        outs = [outs]
    results, outputs, ph_index = [], [], {ph: i for i, ph in enumerate(placeholders)}
    arg_names = {n for n, _ in fn.args}
    for o in outs:
        v = fn.names.get(o)
        if v in fn.updated:
            # the argument itself, after the update: passed through, not copied
            src = next(ph for ph, nm in fn.names.items() if nm == v and ph.op == "placeholder")
            outputs.append(("updated", ph_index[src]))
            continue
        if v is None or v in arg_names:
            src = o if v is None else next(ph for ph, nm in fn.names.items() if nm == v and ph.op == "placeholder")
            outputs.append(("input", ph_index[src]))
            continue
        if v not in results:
            results.append(v)
        outputs.append(results.index(v))
    if not results and not fn.updated:
        raise Unsupported("the partition computes nothing")
    text = fn.finish(results)
    return Translation(name, text, inputs, outputs, [i for _, i in fn.args], [fn.types[r] for r in results])
