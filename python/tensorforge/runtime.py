"""Loading compiled modules and calling their functions on torch tensors.

Triton and PTX modules are Python files tfc wrote (a launcher per function
with one calling convention: tensors in, the result or a tuple out); they
are imported once per folder. CPU modules are shared libraries with the C
ABI of docs/cpu-backend.md, called through ctypes. Loaded modules are kept
for the life of the process.
"""

import ctypes
import importlib.util
import os
import sys
import threading

import torch

from .types import DYNAMIC

_loaded = {}
_lock = threading.Lock()


def _import(path):
    with _lock:
        mod = _loaded.get(path)
        if mod is None:
            name = "tensorforge_compiled_%d" % len(_loaded)
            spec = importlib.util.spec_from_file_location(name, path)
            mod = importlib.util.module_from_spec(spec)
            sys.modules[name] = mod
            spec.loader.exec_module(mod)
            _loaded[path] = mod
        return mod


def _cdll(path):
    with _lock:
        lib = _loaded.get(path)
        if lib is None:
            lib = ctypes.CDLL(path)
            _loaded[path] = lib
        return lib


def python_function(folder, emitter, name):
    """The launcher of func @name in a Triton or PTX build folder."""
    if emitter == "triton":
        return getattr(_import(os.path.join(folder, "module.py")), name)
    return getattr(_import(os.path.join(folder, name + ".py")), name)


class CpuFunction:
    """A function of a CPU shared library: allocates the outputs, passes pointers and extents."""

    def __init__(self, folder, tr):
        lib = _cdll(os.path.join(folder, "kernels.so"))
        self.fn = getattr(lib, "tf_entry_" + tr.name)
        self.fn.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_int64)]
        self.fn.restype = None
        self.check = getattr(lib, "tf_check_" + tr.name)
        self.check.argtypes = [ctypes.POINTER(ctypes.c_int64)]
        self.check.restype = ctypes.c_int
        self.name = tr.name
        self.arg_infos = tr.arg_infos
        self.result_infos = tr.result_infos
        # where each `?` extent of a result comes from: (argument, dim)
        self.sources = []
        for r in tr.result_infos:
            src = []
            for d, (n, sym) in enumerate(zip(r.shape, r.symbols)):
                if n is DYNAMIC:
                    src.append(_find_symbol(tr.arg_infos, sym, r, d))
                else:
                    src.append(None)
            self.sources.append(src)

    def __call__(self, *args):
        ins = [a.contiguous() for a in args]
        outs = []
        for r, src in zip(self.result_infos, self.sources):
            shape = [n if s is None else ins[s[0]].shape[s[1]] for n, s in zip(r.shape, src)]
            outs.append(torch.empty(shape, dtype=r.dtype))
        bufs = (ctypes.c_void_p * (len(ins) + len(outs)))(*[t.data_ptr() for t in ins + outs])
        ext = []
        for t, info in zip(ins + outs, list(self.arg_infos) + list(self.result_infos)):
            ext.extend(int(t.shape[d]) for d, n in enumerate(info.shape) if n is DYNAMIC)
        exts = (ctypes.c_int64 * max(1, len(ext)))(*ext)
        bad = self.check(exts)
        if bad:
            raise ValueError("tensorforge: %s: the '?' extents of its inputs disagree (requirement %d of its "
                             "extent_checks): shapes %s" % (self.name, bad, [list(t.shape) for t in ins]))
        self.fn(bufs, exts)
        return outs[0] if len(outs) == 1 else tuple(outs)


def _find_symbol(arg_infos, sym, r, d):
    for i, a in enumerate(arg_infos):
        for j, s in enumerate(a.symbols):
            if s is not None and s == sym:
                return (i, j)
    raise ValueError("the run-time extent %s of dim %d of a result is no argument's extent" % (sym, d))


class Kernel(torch.nn.Module):
    """A compiled partition in the outer FX graph: picks its tensor inputs, calls, maps outputs.

    Its forward runs on every call of the compiled graph, so what can be
    decided once is decided here: which inputs are 0-d (a Python number
    Dynamo passes as a 0-d CPU tensor, moved to the device of the others),
    and whether the results are passed through as the function returns them.
    """

    def __init__(self, fn, tr, single_output):
        super().__init__()
        self.fn = fn
        self.inputs = tuple(tr.inputs)
        self.outputs = tr.outputs
        self.single = single_output
        self.name = tr.name
        infos = list(tr.arg_infos)
        self.scalars = tuple(j for j, a in enumerate(infos) if a.rank == 0)
        # an input whose device the 0-d ones follow
        self.anchor = next((j for j, a in enumerate(infos) if a.rank > 0), None)
        n = len(tr.result_infos)
        # the function's results are the partition's outputs, in order
        self.direct = list(tr.outputs) == list(range(n)) and single_output == (n == 1)

    def forward(self, *args):
        ins = [args[i] for i in self.inputs]
        if self.scalars:
            self._move_scalars(ins)
        res = self.fn(*ins)
        if self.direct:
            return res
        if not isinstance(res, tuple):
            res = (res,)
        outs = []
        for o in self.outputs:
            if isinstance(o, tuple) and o[0] == "updated":
                outs.append(args[o[1]])  # updated in place by the call
            elif isinstance(o, tuple):
                outs.append(args[o[1]].clone())
            else:
                outs.append(res[o])
        return outs[0] if self.single else tuple(outs)

    def _move_scalars(self, ins):
        if self.anchor is not None:
            dev = ins[self.anchor].device
        else:
            dev = next((t.device for t in ins if t.device.type != "cpu"), None)
        if dev is None or dev.type == "cpu":
            return
        for j in self.scalars:
            t = ins[j]
            if t.device.type == "cpu":
                ins[j] = t.to(dev, non_blocking=True)
