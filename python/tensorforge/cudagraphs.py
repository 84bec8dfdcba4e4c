"""CUDA-graph capture and replay of a compiled graph, for decode.

The first call with a new input signature (shapes, dtypes, strides) warms
the graph up on a side stream, so that every kernel is compiled and loaded,
then captures one CUDA graph of it. Later calls copy the inputs that are not
static into the graph's own buffers and replay it. Parameters and tensors
marked static (``torch._dynamo.mark_static_address``, as transformers'
StaticCache does) are read in place: their addresses are checked on every
call, and a moved one is copied, never read stale.

Outputs are the graph's own buffers: the next replay overwrites them, as
with torch.compile's reduce-overhead mode.
"""

import torch


def _static(t):
    return isinstance(t, torch.nn.Parameter) or getattr(t, "_dynamo_static_input_type", None) is not None


class _Captured:
    def __init__(self, fn, args, pool):
        self.static = [isinstance(a, torch.Tensor) and _static(a) for a in args]
        self.inputs = [a if (not isinstance(a, torch.Tensor) or s) else a.clone()
                       for a, s in zip(args, self.static)]
        self.ptrs = [a.data_ptr() if isinstance(a, torch.Tensor) else None for a in self.inputs]
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(2):
                fn(*self.inputs)
        torch.cuda.current_stream().wait_stream(stream)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph, pool=pool):
            self.outputs = fn(*self.inputs)

    def run(self, args):
        for i, a in enumerate(args):
            if isinstance(a, torch.Tensor) and a.data_ptr() != self.ptrs[i]:
                self.inputs[i].copy_(a)
        self.graph.replay()
        return self.outputs


class CudaGraphRunner:
    def __init__(self, fn):
        self.fn = fn
        self.graphs = {}
        self.pool = None
        self.captures = 0

    def __getattr__(self, name):
        return getattr(self.__dict__["fn"], name)

    def __call__(self, *args):
        key = tuple((tuple(a.shape), a.dtype, tuple(a.stride()), a.device) if isinstance(a, torch.Tensor) else ("v", a)
                    for a in args)
        cap = self.graphs.get(key)
        if cap is None:
            if self.pool is None:
                self.pool = torch.cuda.graph_pool_handle()
            cap = self.graphs[key] = _Captured(self.fn, args, self.pool)
            self.captures += 1
        return cap.run(args)
