"""TensorForge for PyTorch: ``torch.compile(model, backend="tensorforge")``.

The Go compiler ``tfc`` compiles every memory-bound region of the ATen graph
(element-wise chains, normalisations, softmax, casts); PyTorch runs the rest
(matmul, attention, gathers, anything not in the op table). See
docs/pytorch.md in the repository.
"""

from .backend import CompiledGraph, compile_aten, compile_module, tensorforge_backend, trace
from .compiler import CompileError, Compiler, find_tfc
from .config import Options

__all__ = ["CompiledGraph", "CompileError", "Compiler", "Options", "compile_aten", "compile_module",
           "find_tfc", "tensorforge_backend", "trace", "register"]

__version__ = "0.1.0"


def register():
    """Register the backend with Dynamo (torch >= 2); a no-op where Dynamo is absent."""
    try:
        from torch._dynamo import list_backends, register_backend
    except ImportError:
        return False
    try:
        if "tensorforge" not in list_backends(exclude_tags=()):
            register_backend(name="tensorforge")(tensorforge_backend)
    except Exception:  # already registered through the entry point
        pass
    return True


register()
