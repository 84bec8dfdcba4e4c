// Package triton translates a lowered module (the loop dialect) into a
// Python module of Triton kernels and the torch functions that launch
// them, what `tfc --emit=triton -o mod.py` writes:
//
//	import torch
//	import triton
//	import triton.language as tl
//
//	CONFIGS = {"rms_k0": {"BLOCK": 8192, "ROWS": 1, "num_warps": 16}}
//
//	@triton.jit
//	def rms_k0(x, w, y, x_d0, y_d0, BLOCK: tl.constexpr, ROWS: tl.constexpr):
//	    ...
//
//	def rms(x, w):
//	    ...
//	    y = torch.empty((x_d0, 8192), dtype=torch.bfloat16, device=dev)
//	    _launch(rms_k0, grid, (x, w, y, x_d0, x_d0), BLOCK=..., ROWS=..., num_warps=...)
//	    return y
//
// Every loop.kernel becomes one @triton.jit function (kernel.go, in one
// of the forms plan.go chooses), every func.func a launcher of the same
// name taking CUDA tensors in argument order and returning its results
// (launcher.go). The text is deterministic: the same module gives the
// same bytes.
package triton

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// Options adjust the header of the module.
type Options struct {
	// Source names the program the module was compiled from ("" for none).
	Source string
	// Target names the machine it was compiled for ("" for none).
	Target string
	// Tuned, if set, replaces the default configurations of the matmul
	// kernels it has an entry for (tune.go).
	Tuned *TuneCache
	// I8Bits converts an i8 or ui8 right operand of a matmul to its bf16
	// or f16 through the bits of an f32 (matmul.go: i8Bits) instead of
	// .to(): integer and f32 arithmetic, no conversion instructions. Not
	// the default until measured (tfc: TENSORFORGE_TRITON_I8=bits).
	I8Bits bool
}

// Emit translates a lowered module into the text of a Python module.
// Problems (an op of the graph dialect left, a shape of loop IR the
// emitter does not know) are errors located at the op.
func Emit(m ir.Module, opts Options) (text string, err error) {
	defer func() {
		if r := recover(); r != nil {
			text, err = "", ir.Errorf(m.Loc, "internal error in the Triton emitter: %v", r)
		}
	}()
	if m.Operation == nil {
		return "", fmt.Errorf("no module to emit")
	}
	if err := loop.RefuseStridedAccesses(m, "Triton"); err != nil {
		return "", err
	}
	// kernels of several parts that cannot share a launch here become
	// kernels of one part each (horizontal.go)
	if err := loop.SplitParts(m, func(k loop.KernelOp) bool { _, ok := planParts(k); return ok }); err != nil {
		return "", err
	}
	me := &moduleEmitter{names: newNamer(append([]string{"_tensor", "_tensor_checked", "_launch", "_compiled", "_knobs", "_fast_launch", "_fit_rows", "_FILL", "_FITS", "_counters", "_COUNTERS", "_COUNTERS_OLD"}, helperNames...)...), uses: map[string]bool{},
		kernelNames: map[string]string{}, plans: map[string]*kernelPlan{}, kernelOps: map[string]loop.KernelOp{}, parts: map[string]*partsPlan{}}
	var kernels []loop.KernelOp
	var funcs []ir.Func
	for op := m.Body().First(); op != nil; op = op.Next() {
		if k, ok := loop.AsKernel(op); ok {
			kernels = append(kernels, k)
			continue
		}
		if op.Name() == ir.FuncOpName {
			funcs = append(funcs, ir.Func{Operation: op})
			continue
		}
		return "", ir.OpError(op, "cannot be translated to Triton: only func.func and loop.kernel may appear at module level")
	}
	// functions keep their names (they are the module's interface),
	// kernels take what is left
	funcNames := make([]string, len(funcs))
	for i, f := range funcs {
		funcNames[i] = me.names.fresh(f.SymName())
	}
	for _, k := range kernels {
		sym := k.SymName()
		if _, dup := me.kernelNames[sym]; dup {
			return "", ir.OpError(k.Operation, "defines kernel '%s' a second time", sym)
		}
		me.kernelNames[sym] = me.names.fresh(sym)
		me.kernelOps[sym] = k
	}
	var kernelTexts []string
	var configs, keys []string
	for _, k := range kernels {
		name := me.kernelNames[k.SymName()]
		mp, err := tileMatMul(k)
		if err != nil {
			return "", err
		}
		if mp != nil {
			mp.i8Bits = opts.I8Bits
			p := &kernelPlan{mode: modeRows, mm: mp, grid: mp.match.Grid}
			me.plans[k.SymName()] = p
			t, err := newKernelEmitter(k, name, p, me.uses).emitMatMul()
			if err != nil {
				return "", err
			}
			kernelTexts = append(kernelTexts, t)
			key := KernelKey(k, opts.Target)
			keys = append(keys, fmt.Sprintf("    %q: %q,\n", name, key))
			if e, ok := opts.Tuned.lookup(key, opts.Target); ok {
				configs = append(configs, fmt.Sprintf("    %q: %s,  # tuned\n", name, e.configText()))
				continue
			}
			configs = append(configs, fmt.Sprintf("    %q: %s,\n", name, matmulConfigText(mp)))
			continue
		}
		var p *kernelPlan
		var t string
		if pp, ok := planParts(k); ok {
			me.parts[k.SymName()] = pp
			p = pp.plans[0]
			if t, err = me.emitParts(k, name, pp); err != nil {
				return "", err
			}
		} else {
			if p, err = plan(k); err != nil {
				return "", err
			}
			planPersistent(k, p)
			if t, err = newKernelEmitter(k, name, p, me.uses).emit(); err != nil {
				return "", err
			}
		}
		me.plans[k.SymName()] = p
		kernelTexts = append(kernelTexts, t)
		var entries []string
		for _, e := range p.configDict() {
			entries = append(entries, fmt.Sprintf("%q: %d", e.key, e.value))
		}
		configs = append(configs, fmt.Sprintf("    %q: {%s},\n", name, strings.Join(entries, ", ")))
	}
	var launchers []string
	for i, f := range funcs {
		t, err := me.emitLauncher(f, funcNames[i])
		if err != nil {
			return "", err
		}
		launchers = append(launchers, t)
	}

	var sb strings.Builder
	sb.WriteString(header(opts))
	sb.WriteString("import os\n\nimport torch\nimport triton\nimport triton.language as tl\n")
	if me.usesLibdevice(kernelTexts) {
		sb.WriteString("from triton.language.extra import libdevice\n")
	}
	sb.WriteString("\n" + configsComment)
	if me.persist {
		sb.WriteString(persistComment)
	}
	sb.WriteString("CONFIGS = {\n")
	for _, c := range configs {
		sb.WriteString(c)
	}
	sb.WriteString("}\n")
	if len(keys) > 0 {
		sb.WriteString("\n# The tuning key of every matmul kernel (tfc --tune, --tune-cache).\nKEYS = {\n")
		for _, k := range keys {
			sb.WriteString(k)
		}
		sb.WriteString("}\n")
	}
	if me.hasMatMul() {
		sb.WriteString("\n\n" + matmulConfigSource)
	}
	if me.hasFlat() {
		sb.WriteString("\n# Flat kernels index their elements in 64 bits from this many on.\nWIDE_FROM = 2**31\n")
	}
	for _, h := range me.helpers() {
		sb.WriteString("\n\n" + helperSource[h])
	}
	for _, t := range kernelTexts {
		sb.WriteString("\n\n" + t)
	}
	if len(funcs) > 0 {
		sb.WriteString("\n\n" + tensorCheckSource)
		sb.WriteString("\n\n" + launchSource)
	}
	if me.fitRows {
		sb.WriteString("\n\n" + fitRowsSource)
	}
	if me.persist {
		sb.WriteString("\n\n" + persistSource)
	}
	if me.counters {
		sb.WriteString("\n\n" + countersSource)
	}
	for _, t := range launchers {
		sb.WriteString("\n\n" + t)
	}
	return sb.String(), nil
}

// moduleEmitter holds the state of one Emit.
type moduleEmitter struct {
	names       *namer
	uses        map[string]bool // helpers called by the kernels
	kernelNames map[string]string
	kernelOps   map[string]loop.KernelOp
	plans       map[string]*kernelPlan
	// parts holds the plans of the kernels of several parts.
	parts map[string]*partsPlan
	// fitRows is set when a launcher calls _fit_rows, persist when one
	// calls _persist, counters when one calls _counters.
	fitRows, persist, counters bool
}

// hasMatMul reports whether a kernel of the module is a tiled matmul.
func (me *moduleEmitter) hasMatMul() bool {
	for _, p := range me.plans {
		if p.mm != nil {
			return true
		}
	}
	return false
}

// hasFlat reports whether a kernel of the module is flat.
func (me *moduleEmitter) hasFlat() bool {
	for _, p := range me.plans {
		if p.mode == modeFlat {
			return true
		}
	}
	return false
}

func header(opts Options) string {
	from := ""
	if opts.Source != "" {
		from = " from " + opts.Source
	}
	on := ""
	if opts.Target != "" {
		on = " for " + opts.Target
	}
	return fmt.Sprintf(`# Triton kernels and their launchers, compiled by tfc --emit=triton%s%s.
#
# For every function of the program, NAME(*inputs) takes CUDA tensors in
# argument order and returns its result (a tuple when there are several),
# allocating outputs and intermediates with torch.empty.
`, from, on)
}

const configsComment = `# The launch configuration of every kernel: BLOCK (elements of a block),
# ROWS (rows per program of a row kernel), num_warps. The BLOCK of a row
# kernel that keeps its rows in one block is next_power_of_2(row length)
# and must stay at least the row length.
`

// persistComment follows configsComment when a row kernel is persistent.
const persistComment = `# A persistent row kernel also has PERSIST (0: a program per ROWS rows;
# n: at most n programs per multiprocessor, each looping over blocks of
# rows) and STAGES (the depth the loop is pipelined to).
`

func (me *moduleEmitter) usesLibdevice(kernelTexts []string) bool {
	for _, t := range kernelTexts {
		if strings.Contains(t, "libdevice.") {
			return true
		}
	}
	for _, h := range me.helpers() {
		if strings.Contains(helperSource[h], "libdevice.") {
			return true
		}
	}
	return false
}

// helpers lists the helpers the kernels call and those they call, in
// helperNames order.
func (me *moduleEmitter) helpers() []string {
	used := map[string]bool{}
	var add func(h string)
	add = func(h string) {
		if used[h] {
			return
		}
		used[h] = true
		for _, d := range helperDeps[h] {
			add(d)
		}
	}
	var keys []string
	for h := range me.uses {
		keys = append(keys, h)
	}
	sort.Strings(keys)
	for _, h := range keys {
		add(h)
	}
	var out []string
	for _, h := range helperNames {
		if used[h] {
			out = append(out, h)
		}
	}
	return out
}

// helperNames are the @triton.jit helpers the kernels may call.
var helperNames = []string{"_max_nan", "_min_nan", "_relu", "_silu", "_sigmoid_f64", "_silu_f64", "_gelu", "_gelu_tanh", "_gelu_tanh_f64"}

var helperDeps = map[string][]string{
	"_silu_f64":      {"_sigmoid_f64"},
	"_gelu_tanh_f64": {"_sigmoid_f64"},
}

var helperSource = map[string]string{
	"_max_nan": `@triton.jit
def _max_nan(a, b):
    # the larger, NaN if either is NaN (tl.max and tl.maximum drop NaN by default)
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)
`,
	"_min_nan": `@triton.jit
def _min_nan(a, b):
    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)
`,
	"_relu": `@triton.jit
def _relu(x):
    return tl.maximum(x, tl.zeros_like(x), propagate_nan=tl.PropagateNan.ALL)
`,
	"_silu": `@triton.jit
def _silu(x):
    # x * sigmoid(x), with its limit 0 at -inf, where the product is -inf * 0
    return tl.where(x == -float("inf"), 0.0, x * tl.sigmoid(x))
`,
	"_sigmoid_f64": `@triton.jit
def _sigmoid_f64(x):
    return 1.0 / (1.0 + libdevice.exp(-x))
`,
	"_silu_f64": `@triton.jit
def _silu_f64(x):
    return tl.where(x == -float("inf"), 0.0, x * _sigmoid_f64(x))
`,
	"_gelu": `@triton.jit
def _gelu(x):
    # x * Phi(x) = x / 2 * erfc(-x / sqrt(2))
    return tl.where(x == -float("inf"), 0.0, 0.5 * x * libdevice.erfc(-0.7071067811865476 * x))
`,
	"_gelu_tanh": `@triton.jit
def _gelu_tanh(x):
    # x * sigmoid(2u), u = sqrt(2 / pi) * (x + 0.044715 x^3): the tanh form
    u = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    return tl.where(x == -float("inf"), 0.0, x * tl.sigmoid(2.0 * u))
`,
	"_gelu_tanh_f64": `@triton.jit
def _gelu_tanh_f64(x):
    u = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    return tl.where(x == -float("inf"), 0.0, x * _sigmoid_f64(2.0 * u))
`,
}

// tensorCheckSource checks and prepares one argument of a launcher. The
// first test is the common case (a contiguous CUDA tensor of the static
// shape), a few attribute reads; anything else takes the full check.
const tensorCheckSource = `def _tensor(fn, name, t, dtype, shape):
    # t as a contiguous CUDA tensor of dtype and shape (None: any extent)
    if isinstance(t, torch.Tensor) and t.dtype == dtype and t.shape == shape and t.is_cuda:
        return t if t.is_contiguous() else t.contiguous()
    return _tensor_checked(fn, name, t, dtype, shape)


def _tensor_checked(fn, name, t, dtype, shape):
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{fn}: {name} must be a torch.Tensor, not {type(t).__name__}")
    if t.dtype != dtype:
        raise TypeError(f"{fn}: {name} is {t.dtype}, expected {dtype}")
    if t.dim() != len(shape) or any(n is not None and n != m for n, m in zip(shape, t.shape)):
        want = ", ".join("?" if n is None else str(n) for n in shape)
        raise ValueError(f"{fn}: {name} has shape {list(t.shape)}, expected [{want}]")
    if not t.is_cuda:
        raise ValueError(f"{fn}: {name} must be a CUDA tensor, not on {t.device}")
    return t.contiguous()
`

// launchSource launches a kernel. kernel[grid](...) binds and specialises
// every argument on every call (JITFunction.run: some 15 us of host time
// per launch on the H200's host, most of a decode step's budget); _launch
// keeps the CompiledKernel of each specialisation and calls its launcher
// directly (some 5 us). The key holds what Triton 3.6 specialises on.
const launchSource = `# kernel[grid](*args, **meta), with the CompiledKernel of each specialisation
# kept and its launcher called directly: the key holds what Triton
# specialises on (a pointer's 16-byte alignment; an integer's being 1, a
# multiple of 16, 32-bit; the constexprs and launch options; the device).
# Launch hooks (a profiler's) are called as kernel[grid] calls them, and
# skipped (with their metadata) where none is set. The
# full path runs when TENSORFORGE_TRITON_LAUNCH=jit and on Triton versions
# other than the one whose launcher this was checked against (3.6).
try:
    from triton import knobs as _knobs

    _fast_launch = (tuple(int(p) for p in triton.__version__.split(".")[:2]) == (3, 6)
                    and os.environ.get("TENSORFORGE_TRITON_LAUNCH", "") != "jit")
except (ImportError, ValueError):
    _knobs, _fast_launch = None, False
_compiled = {}


def _cdiv(a, b):
    # (triton.cdiv is a constexpr function in Triton 3.6: a call through
    # its wrapper costs several times this one)
    return -(-a // b)


def _launch(kern, grid, args, **meta):
    global _fast_launch
    if not _fast_launch:
        kern[grid](*args, **meta)
        return
    # the device of the first buffer (a kernel's buffers come first); the
    # kernel by identity (it lives as long as the module; JITFunction's own
    # hash is computed in Python at every call)
    dev = args[0].get_device()
    key = [id(kern), dev, *meta.values()]
    for a in args:
        if a.__class__ is int:
            key.append((a == 1, a % 16 == 0, -2**31 <= a < 2**31))
        else:
            key.append(a.data_ptr() % 16 == 0)
    key = tuple(key)
    hit = _compiled.get(key)
    if hit is not None:
        ck, consts = hit
        g = (grid[0], grid[1] if len(grid) > 1 else 1, grid[2] if len(grid) > 2 else 1)
        stream = torch._C._cuda_getCurrentRawStream(dev)
        # the launch hooks (a profiler's) see what kernel[grid] shows them;
        # with none (Triton keeps an empty HookChain) there is neither
        # metadata to build nor a chain for the launcher to call
        rt = _knobs.runtime
        enter, leave = rt.launch_enter_hook, rt.launch_exit_hook
        if getattr(enter, "calls", enter) or getattr(leave, "calls", leave):
            md = ck.launch_metadata(g, stream, *args, *consts)
        else:
            enter = leave = md = None
        try:
            ck.run(g[0], g[1], g[2], stream, ck.function, ck.packed_metadata, md, enter, leave, *args, *consts)
            return
        except TypeError:
            _fast_launch = False  # a launcher of another calling convention: launch as Triton does
            kern[grid](*args, **meta)
            return
    with torch.cuda.device(dev):
        ck = kern[grid](*args, **meta)
    try:
        _compiled[key] = (ck, tuple(meta[n] for n in kern.arg_names if n in meta))
        ck.run, ck.function, ck.packed_metadata, ck.launch_metadata
    except (AttributeError, TypeError):
        _compiled.pop(key, None)
        _fast_launch = False
`
