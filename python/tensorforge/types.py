"""Element types and tensor types as .tir spells them, read off FX node metadata."""

import torch

# torch dtype -> .tir element type.
ELEM = {
    torch.float64: "f64",
    torch.float32: "f32",
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.int64: "i64",
    torch.int32: "i32",
    torch.int16: "i16",
    torch.int8: "i8",
    torch.uint8: "ui8",
    torch.bool: "i1",
}
for _name, _elem in (("float8_e4m3fn", "f8E4M3FN"), ("float8_e5m2", "f8E5M2")):
    if hasattr(torch, _name):
        ELEM[getattr(torch, _name)] = _elem

FLOATS = {torch.float64, torch.float32, torch.float16, torch.bfloat16}

DYNAMIC = None  # an extent known only at run time: `?` in .tir


class TensorInfo:
    """The shape (None for a symbolic extent) and dtype of an FX value."""

    __slots__ = ("shape", "dtype", "symbols")

    def __init__(self, shape, dtype, symbols=None):
        self.shape = tuple(shape)
        self.dtype = dtype
        # symbols[i] is a stable text of the symbolic extent of dim i (None if static)
        self.symbols = tuple(symbols) if symbols is not None else tuple(None for _ in self.shape)

    @property
    def rank(self):
        return len(self.shape)

    def tir(self):
        return tensor_type(self.shape, self.dtype)

    def with_dtype(self, dtype):
        return TensorInfo(self.shape, dtype, self.symbols)

    def __repr__(self):
        return "TensorInfo(%s)" % self.tir()


def _is_static(d):
    return isinstance(d, int) and not isinstance(d, bool)


def info_of(node):
    """TensorInfo of an FX node from its metadata, or None if it is not one tensor.

    Dynamo and AOTAutograd record a FakeTensor in meta['val'] (with SymInt
    extents for dynamic dimensions); ShapeProp records meta['tensor_meta'].
    """
    val = node.meta.get("val") if hasattr(node, "meta") else None
    if isinstance(val, torch.Tensor):
        shape, syms = [], []
        for d in val.shape:
            if _is_static(d):
                shape.append(int(d))
                syms.append(None)
            else:
                # a SymInt: static if its hint is fixed by a guard
                node_expr = getattr(d, "node", None)
                expr = getattr(node_expr, "expr", None)
                if expr is not None and getattr(expr, "is_number", False):
                    shape.append(int(expr))
                    syms.append(None)
                else:
                    shape.append(DYNAMIC)
                    syms.append(str(expr if expr is not None else d))
        return TensorInfo(shape, val.dtype, syms)
    tm = node.meta.get("tensor_meta") if hasattr(node, "meta") else None
    if tm is not None and hasattr(tm, "shape") and hasattr(tm, "dtype"):
        return TensorInfo([int(d) for d in tm.shape], tm.dtype)
    return None


def elem_type(dtype):
    try:
        return ELEM[dtype]
    except KeyError:
        raise Unsupported("dtype %s has no .tir element type" % dtype)


def tensor_type(shape, dtype):
    et = elem_type(dtype)
    if not shape:
        return "tensor<%s>" % et
    dims = "x".join("?" if d is DYNAMIC else str(d) for d in shape)
    return "tensor<%sx%s>" % (dims, et)


class Unsupported(Exception):
    """A node the op table cannot translate; the message is the reason logged."""
