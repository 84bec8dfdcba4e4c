"""CUDA-graph capture and replay of a compiled graph, for decode.

The first call with a new input signature (shapes, dtypes, strides) warms
the graph up on a side stream, so that every kernel is compiled and loaded,
then captures one CUDA graph of it. Later calls copy the inputs that are not
static into the graph's own buffers and replay it. Parameters and tensors
marked static (``torch._dynamo.mark_static_address``, as transformers'
StaticCache does) are read in place: their addresses are checked on every
call, and inputs at new addresses get a graph of their own, never a stale
read.

Outputs are the graph's own buffers: the next replay overwrites them, as
with torch.compile's reduce-overhead mode. An input the graph updates in
place (a KV cache not marked static) is updated in the graph's copy, and
copied back into the caller's tensor after each replay.
"""

import warnings

import torch


def _static(t):
    return isinstance(t, torch.nn.Parameter) or getattr(t, "_dynamo_static_input_type", None) is not None


class _Captured:
    def __init__(self, fn, args, pool):
        self.static = [isinstance(a, torch.Tensor) and _static(a) for a in args]
        mutated = getattr(fn, "mutated_inputs", ())
        # the copied inputs the graph writes: copied back after each replay
        self.written = [i for i in mutated if i < len(args) and isinstance(args[i], torch.Tensor) and not self.static[i]]
        self.inputs = [a if (not isinstance(a, torch.Tensor) or s) else a.clone()
                       for a, s in zip(args, self.static)]
        self.ptrs = [a.data_ptr() if isinstance(a, torch.Tensor) else None for a in self.inputs]
        # what is checked on every call: the shapes of the copied inputs
        # (static ones keep theirs) and the values of the other arguments
        self.copied = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and not self.static[i]]
        self.shapes = [args[i].shape for i in self.copied]
        self.others = [(i, a) for i, a in enumerate(args) if not isinstance(a, torch.Tensor)]
        self.statics = [i for i, s in enumerate(self.static) if s]
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(2):
                fn(*self.inputs)
        torch.cuda.current_stream().wait_stream(stream)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph, pool=pool):
            self.outputs = fn(*self.inputs)

    def matches(self, args):
        if len(args) != len(self.inputs):
            return False
        for i, shape in zip(self.copied, self.shapes):
            if args[i].shape != shape:
                return False
        ptrs = self.ptrs
        for i in self.statics:
            if args[i].data_ptr() != ptrs[i]:
                return False  # a static input moved (a new cache, say): another graph
        return all(args[i] == v for i, v in self.others)

    def run(self, args):
        inputs = self.inputs
        for i in self.copied:
            inputs[i].copy_(args[i])
        self.graph.replay()
        for i in self.written:
            args[i].copy_(inputs[i])
        return self.outputs


class CudaGraphRunner:
    """Captures and replays the compiled graph; one CUDA graph per input signature.

    At most ``max_graphs`` are captured: inputs whose shapes keep changing (a
    KV cache that grows every step) would otherwise record a graph per call.
    Past the limit the compiled graph runs as it is, and a warning says so once.
    """

    max_graphs = 32

    def __init__(self, fn):
        self.fn = fn
        self.graphs = []
        self.last = None
        self.pool = None
        self.captures = 0
        self.warned = False

    def __getattr__(self, name):
        return getattr(self.__dict__["fn"], name)

    def __call__(self, *args):
        cap = self.last
        if cap is None or not cap.matches(args):
            cap = next((c for c in self.graphs if c.matches(args)), None)
            if cap is None and len(self.graphs) >= self.max_graphs:
                if not self.warned:
                    warnings.warn("tensorforge: %d CUDA graphs captured for as many input shapes; running "
                                  "without CUDA graphs for new shapes (mark the changing dimensions dynamic, or "
                                  "use a static cache)" % len(self.graphs))
                    self.warned = True
                return self.fn(*args)
            if cap is None:
                if self.pool is None:
                    self.pool = torch.cuda.graph_pool_handle()
                cap = _Captured(self.fn, args, self.pool)
                self.graphs.append(cap)
                self.captures += 1
            self.last = cap
        return cap.run(args)
