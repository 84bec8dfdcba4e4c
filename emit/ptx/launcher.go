package ptx

import (
	"fmt"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/emit/pyhost"
	"github.com/tensorforge/tensorforge/ir"
)

// This file writes <func>.py, the launcher of a function's kernels. It
// has the calling convention of the Triton emitter's module:
//
//	y = rms_silu_mul(x, w, z)        # CUDA tensors in argument order
//	h, n = add_rmsnorm(x, r, w)      # a tuple when there are several results
//
// The `?` extents come from the arguments' shapes; outputs and
// intermediates are allocated with torch.empty. The PTX file beside it is
// loaded once per device through the CUDA driver API (ctypes on
// libcuda.so.1: nothing to install besides PyTorch), and every kernel is
// launched with cuLaunchKernel on PyTorch's current stream.

// torchDtypes names the torch dtype of each element kind.
var torchDtypes = map[ir.ElemKind]string{
	ir.F64: "torch.float64", ir.F32: "torch.float32", ir.F16: "torch.float16", ir.BF16: "torch.bfloat16",
	ir.F8E4M3FN: "torch.float8_e4m3fn", ir.F8E5M2: "torch.float8_e5m2", ir.I1: "torch.bool",
	ir.I8: "torch.int8", ir.I16: "torch.int16", ir.I32: "torch.int32", ir.I64: "torch.int64",
	ir.UI8: "torch.uint8", ir.UI16: "torch.uint16", ir.UI32: "torch.uint32", ir.Index: "torch.int64",
}

// pyReserved are names a launcher's variables must not take.
var pyReserved = map[string]bool{
	"False": true, "None": true, "True": true, "and": true, "as": true, "assert": true, "async": true,
	"await": true, "break": true, "class": true, "continue": true, "def": true, "del": true, "elif": true,
	"else": true, "except": true, "finally": true, "for": true, "from": true, "global": true, "if": true,
	"import": true, "in": true, "is": true, "lambda": true, "nonlocal": true, "not": true, "or": true,
	"pass": true, "raise": true, "return": true, "try": true, "while": true, "with": true, "yield": true,
	"torch": true, "ctypes": true, "os": true, "args": true, "device": true, "stream": true, "fns": true,
	"sm": true, "min": true, "max": true, "len": true, "range": true, "print": true, "type": true,
	// builtins the runtime of the launcher calls, and other common ones
	"str": true, "list": true, "tuple": true, "dict": true, "set": true, "int": true, "float": true,
	"bool": true, "bytes": true, "object": true, "isinstance": true, "any": true, "all": true, "zip": true,
	"abs": true, "sum": true, "round": true, "map": true, "iter": true, "next": true, "id": true,
	"super": true, "open": true, "getattr": true, "setattr": true, "hasattr": true, "Exception": true,
	"TypeError": true, "ValueError": true, "RuntimeError": true, "OSError": true, "match": true,
	"case": true, "self": true, "cls": true,
}

// pyFuncName names the launcher of function sym: a Python identifier that
// is no keyword, builtin or name of the launcher's runtime (whose names
// start with '_').
func pyFuncName(sym string) string {
	n := identifier(sym)
	if strings.HasPrefix(n, "_") {
		n = "f" + n
	}
	for pyReserved[n] {
		n += "_"
	}
	return n
}

// pyNames gives IR values Python variable names.
type pyNames struct {
	used  map[string]bool
	names map[*ir.Value]string
}

func (p *pyNames) name(v *ir.Value, hint string) string {
	if n, ok := p.names[v]; ok {
		return n
	}
	base := identifier(hint)
	if strings.HasPrefix(base, "_") {
		base = "v" + base
	}
	n := base
	for i := 1; p.used[n] || pyReserved[n]; i++ {
		n = fmt.Sprintf("%s_%d", base, i)
	}
	p.used[n] = true
	p.names[v] = n
	return n
}

// pyShape spells a shape of extents as a tuple.
func pyShape(dims []string) string {
	if len(dims) == 1 {
		return "(" + dims[0] + ",)"
	}
	return "(" + strings.Join(dims, ", ") + ")"
}

// emitLauncher writes the launcher of f.
func emitLauncher(f ir.Func, file string, kernels map[string]loop.KernelOp, infos map[string]*kernelInfo) (string, error) {
	fname := pyFuncName(f.SymName())
	args := f.Args()
	nres := 0
	if a, ok := f.Operation.Attr("num_results").(ir.IntAttr); ok {
		nres = int(a.Value)
	}
	if nres < 0 || nres > len(args) {
		return "", ir.OpError(f.Operation, "has num_results = %d for %d arguments", nres, len(args))
	}
	nin := len(args) - nres
	names := &pyNames{used: map[string]bool{}, names: map[*ir.Value]string{}}
	var body []string
	// indent is the depth of the next line: one more level under a guard
	indent := ""
	line := func(format string, a ...any) { body = append(body, "    "+indent+fmt.Sprintf(format, a...)) }

	inNames := make([]string, nin)
	for i, a := range args[:nin] {
		inNames[i] = names.name(a, argName(a, i))
	}
	outNames := make([]string, nres)
	for i, a := range args[nin:] {
		outNames[i] = names.name(a, argName(a, nin+i))
	}

	// extents: the expressions of index values of the function
	ext := map[*ir.Value]string{}
	allocated := map[*ir.Value]bool{}
	shapeOf := func(op *ir.Operation, buf *ir.Value, dyn []string) ([]string, error) {
		m := buf.Type().(ir.MemRefType)
		var dims []string
		next := 0
		for _, n := range m.Shape {
			if n != ir.Dynamic {
				dims = append(dims, itoa(n))
				continue
			}
			if next >= len(dyn) {
				return nil, ir.OpError(op, "gives too few extents for %s", m)
			}
			dims = append(dims, dyn[next])
			next++
		}
		return dims, nil
	}
	dtypeOf := func(op *ir.Operation, t ir.Type) (string, error) {
		m, ok := t.(ir.MemRefType)
		if !ok {
			return "", ir.OpError(op, "passes %s where the launcher expects a buffer", t)
		}
		d, ok := torchDtypes[m.Elem.Kind]
		if !ok {
			return "", ir.OpError(op, "has buffers of %s, which has no torch dtype", m.Elem)
		}
		return d, nil
	}

	line("if len(args) != %d:", nin)
	line("    raise TypeError(\"%s() takes %d tensor(s) (%s), got %%d\" %% len(args))", fname, nin, strings.Join(inNames, ", "))
	written := loop.WrittenInputs(f, kernels)
	for i, a := range args[:nin] {
		m, ok := a.Type().(ir.MemRefType)
		if !ok {
			return "", ir.OpError(f.Operation, "has argument #%d of type %s; the PTX launcher expects buffers", i, a.Type())
		}
		dt, err := dtypeOf(f.Operation, m)
		if err != nil {
			return "", err
		}
		dims := make([]string, len(m.Shape))
		for d, n := range m.Shape {
			dims[d] = "None"
			if n != ir.Dynamic {
				dims[d] = itoa(n)
			}
		}
		line("%s = _arg(args[%d], %q, %s, %s)", inNames[i], i, inNames[i], dt, pyShape(dims))
		if written[i] {
			// updated in place: a contiguous or aligned copy would take the update
			line("if %s is not args[%d]:", inNames[i], i)
			line("    raise ValueError(%q)", fmt.Sprintf("%s: %s is updated in place (graph.index_copy) and must be contiguous and 16-byte aligned", fname, inNames[i]))
		}
		allocated[a] = true
	}
	// the `?` extents the kernels assume agree (no kernel reads past a buffer)
	checks, err := loop.ExtentChecks(f)
	if err != nil {
		return "", err
	}
	for _, c := range pyhost.ExtentChecks(fname, checks, inNames, nin) {
		line("if %s:", c.Cond)
		line("    %s", c.Raise)
	}
	if nin > 0 {
		line("device = %s.device", inNames[0])
		for _, n := range inNames[1:] {
			line("_same_device(device, %s, %q)", n, n)
		}
	} else {
		line("device = torch.device(\"cuda\", torch.cuda.current_device())")
	}
	line("fns = _functions(device)")
	line("stream = torch.cuda.current_stream(device).cuda_stream")
	line("sm = _sm_count(device)")
	for i, a := range args[nin:] {
		m := a.Type().(ir.MemRefType)
		if ir.HasDynamicDim(m.Shape) {
			continue // allocated at its first launch, with the extents given there
		}
		dt, err := dtypeOf(f.Operation, m)
		if err != nil {
			return "", err
		}
		dims, _ := shapeOf(f.Operation, a, nil)
		line("%s = torch.empty(%s, dtype=%s, device=device)", outNames[i], pyShape(dims), dt)
		allocated[a] = true
	}

	var helpers []string
	helperSeen := map[string]bool{}
	// deferred holds the allocations of intermediates that only launches
	// under one guard use (loop.GuardedOnly)
	deferred := map[*ir.Value]string{}
	hasMM, hasZeroed := false, false
	for op := f.Body().First(); op != nil; op = op.Next() {
		switch op.Name() {
		case loop.OpDim:
			d := loop.DimOp{Operation: op}
			if !allocated[d.Memref()] {
				return "", ir.OpError(op, "reads an extent of an output before any launch writes it")
			}
			buf := names.names[d.Memref()]
			ext[op.Result(0)] = names.name(op.Result(0), op.Result(0).Name)
			line("%s = %s.shape[%d]", ext[op.Result(0)], buf, d.Axis())
		case loop.OpConst:
			c := loop.ConstOp{Operation: op}
			if elemKindOf(op.Result(0).Type()) != ir.Index {
				return "", ir.OpError(op, "is a non-index constant in a function; the launcher expects index arithmetic only")
			}
			ext[op.Result(0)] = itoa(int64(c.Value()))
		case loop.OpAddi, loop.OpSubi, loop.OpMuli, loop.OpDivi, loop.OpRemi, loop.OpMini:
			x, ok1 := ext[op.Operand(0)]
			y, ok2 := ext[op.Operand(1)]
			if !ok1 || !ok2 {
				return "", ir.OpError(op, "reads an index the launcher has not computed")
			}
			n := names.name(op.Result(0), pyTemp(op))
			ext[op.Result(0)] = n
			line("%s = %s", n, pyIndexOp(op.Name(), x, y))
		case loop.OpAllocDRAM:
			al := loop.AllocDRAMOp{Operation: op}
			var dyn []string
			for _, e := range al.Extents() {
				x, ok := ext[e]
				if !ok {
					return "", ir.OpError(op, "reads an index the launcher has not computed")
				}
				dyn = append(dyn, x)
			}
			dims, err := shapeOf(op, al.Output(), dyn)
			if err != nil {
				return "", err
			}
			dt, err := dtypeOf(op, al.Output().Type())
			if err != nil {
				return "", err
			}
			n := names.name(al.Output(), al.Output().Name)
			allocated[al.Output()] = true
			alloc := fmt.Sprintf("%s = torch.empty(%s, dtype=%s, device=device)", n, pyShape(dims), dt)
			if z, _ := al.Zeroed(); z {
				// counters of loop.ticket and loop.group_sync: zero, kept
				// across calls (every kernel leaves them at zero)
				alloc = fmt.Sprintf("%s = _zeroed(device, stream, %q, %s, %s)", n, f.SymName()+"."+n, pyShape(dims), dt)
				hasZeroed = true
			}
			if loop.GuardedOnly(al.Output()) {
				// only launches under one guard use it: allocated inside
				// the first one's `if`
				deferred[al.Output()] = alloc
				continue
			}
			line("%s", alloc)
		case loop.OpLaunch:
			l := loop.LaunchOp{Operation: op}
			k := kernels[l.Kernel()]
			info := infos[l.Kernel()]
			nbuf := int(k.NumInputs() + k.NumOutputs())
			operands := l.Args()
			if len(operands) != info.nargs || nbuf > len(operands) {
				return "", ir.OpError(op, "passes %d operands to kernel '%s', which takes %d", len(operands), l.Kernel(), info.nargs)
			}
			var extents []string
			for _, e := range operands[nbuf:] {
				x, ok := ext[e]
				if !ok {
					return "", ir.OpError(op, "passes an extent the launcher has not computed")
				}
				extents = append(extents, x)
			}
			// outputs first written here get the extents passed here
			next := 0
			for _, b := range operands[:nbuf] {
				m, ok := b.Type().(ir.MemRefType)
				if !ok {
					return "", ir.OpError(op, "passes %s where kernel '%s' takes a buffer", b.Type(), l.Kernel())
				}
				ndyn := 0
				for _, n := range m.Shape {
					if n == ir.Dynamic {
						ndyn++
					}
				}
				if !allocated[b] {
					dims, err := shapeOf(op, b, extents[next:next+ndyn])
					if err != nil {
						return "", err
					}
					dt, err := dtypeOf(op, m)
					if err != nil {
						return "", err
					}
					line("%s = torch.empty(%s, dtype=%s, device=device)", names.names[b], pyShape(dims), dt)
					allocated[b] = true
				}
				next += ndyn
			}
			var bufNames []string
			for _, b := range operands[:nbuf] {
				n, ok := names.names[b]
				if !ok {
					return "", ir.OpError(op, "passes a buffer the launcher does not know")
				}
				bufNames = append(bufNames, n)
			}
			if !helperSeen[info.entry] {
				helperSeen[info.entry] = true
				helpers = append(helpers, info.gridPy)
				for _, twin := range append([]*kernelInfo{info.narrow}, info.decode...) {
					if twin != nil {
						helpers = append(helpers, twin.gridPy)
					}
				}
			}
			all := append(append([]string(nil), bufNames...), extents...)
			if g, ok := l.Guard(); ok {
				// a guarded launch runs for the rows its guard admits
				static, dyn, err := l.GuardRows(g)
				if err != nil {
					return "", err
				}
				var factors []string
				for _, e := range dyn {
					factors = append(factors, ext[e])
				}
				line("if %s:", g.Condition(static, factors, "and"))
				indent += "    "
				for _, b := range operands[:nbuf] {
					if alloc, ok := deferred[b]; ok {
						line("%s", alloc)
						delete(deferred, b)
					}
				}
			}
			if mm := info.mm; mm != nil {
				// a matmul on tensor cores: split-K chosen here from the tiles (M)
				launchMM := func(in *kernelInfo) {
					line("_launch_mm(fns, %q, _grid_%s(sm%s), %d, %d, stream, (%s), device, sm, %d, %d)", in.entry, in.entry,
						prefixAll(", ", extents), in.block, in.shared, strings.Join(all, ", ")+trailingComma(len(all)), in.mm.steps, in.mm.wsTile)
				}
				outer := indent
				branch := func(cond string, in *kernelInfo) {
					line("%s", cond)
					indent = outer + "    "
					launchMM(in)
					indent = outer
				}
				// `?` rows: the decode twins' tiles of 16 (and 32) rows for
				// few rows, then the wide tiles where they fill the SMs,
				// else the 128-column twin
				kw := "if"
				for _, d := range info.decode {
					branch(fmt.Sprintf("%s _rows_%s(sm%s) <= %d:", kw, info.entry, prefixAll(", ", extents), d.mm.bm), d)
					kw = "elif"
				}
				switch {
				case info.narrow != nil:
					branch(fmt.Sprintf("%s _grid_%s(sm%s) >= sm:", kw, info.entry, prefixAll(", ", extents)), info)
					branch("else:", info.narrow)
				case len(info.decode) > 0:
					branch("else:", info)
				default:
					launchMM(info)
				}
				hasMM = true
			} else if info.parts > 1 {
				// the parts' CTAs end to end, and where each starts
				line("grid, starts = _parts_%s(sm%s)", info.entry, prefixAll(", ", extents))
				line("_launch(fns, %q, grid, %d, %d, stream, (%s) + starts)", info.entry,
					info.block, info.shared, strings.Join(all, ", ")+trailingComma(len(all)))
			} else {
				line("_launch(fns, %q, _grid_%s(sm%s), %d, %d, stream, (%s))", info.entry, info.entry,
					prefixAll(", ", extents), info.block, info.shared, strings.Join(all, ", ")+trailingComma(len(all)))
			}
			indent = ""
		case ir.ReturnOpName:
		default:
			return "", ir.OpError(op, "cannot be translated by the PTX launcher: a lowered function holds loop.dim, index arithmetic, loop.alloc_dram and loop.launch")
		}
	}
	for i, a := range args[nin:] {
		if !allocated[a] {
			return "", ir.OpError(f.Operation, "never writes its result #%d", i)
		}
	}
	switch nres {
	case 0:
		line("return None")
	case 1:
		line("return %s", outNames[0])
	default:
		line("return (%s)", strings.Join(outNames, ", "))
	}

	var sb strings.Builder
	fmt.Fprintf(&sb, "\"\"\"Launcher of the PTX kernels of @%s (%s.ptx), generated by tfc --emit=ptx.\n\n", f.SymName(), file)
	fmt.Fprintf(&sb, "    %s = %s(%s)\n\n", resultSpelling(outNames), fname, strings.Join(inNames, ", "))
	sb.WriteString("takes CUDA tensors in argument order (copied when not contiguous or not\n")
	sb.WriteString("16-byte aligned) and returns the result tensor, a tuple when there are\n")
	sb.WriteString("several. The kernels run on PyTorch's current stream.\n\"\"\"\n\n")
	sb.WriteString(launcherRuntime)
	fmt.Fprintf(&sb, "\n_PTX = os.path.join(os.path.dirname(os.path.abspath(__file__)), %q)\n", file+".ptx")
	sb.WriteString("\n# (entry, threads per CTA, dynamic shared memory bytes)\n_KERNELS = (\n")
	for _, h := range sortedKeys(infos) {
		in := infos[h]
		fmt.Fprintf(&sb, "    (%q, %d, %d),\n", in.entry, in.block, in.shared)
		for _, n := range append([]*kernelInfo{in.narrow}, in.decode...) {
			if n != nil {
				fmt.Fprintf(&sb, "    (%q, %d, %d),\n", n.entry, n.block, n.shared)
			}
		}
	}
	sb.WriteString(")\n")
	sb.WriteString(functionsRuntime)
	if hasMM {
		sb.WriteString(mmRuntime())
	}
	if hasZeroed {
		sb.WriteString(zeroedRuntime)
	}
	for _, h := range helpers {
		sb.WriteString("\n\n")
		sb.WriteString(h)
	}
	fmt.Fprintf(&sb, "\n\ndef %s(*args):\n", fname)
	fmt.Fprintf(&sb, "    \"\"\"%s = %s(%s)\"\"\"\n", resultSpelling(outNames), fname, strings.Join(inNames, ", "))
	for _, l := range body {
		sb.WriteString(l + "\n")
	}
	return sb.String(), nil
}

func resultSpelling(outs []string) string {
	if len(outs) == 0 {
		return "None"
	}
	return strings.Join(outs, ", ")
}

func prefixAll(sep string, xs []string) string {
	var sb strings.Builder
	for _, x := range xs {
		sb.WriteString(sep + x)
	}
	return sb.String()
}

func trailingComma(n int) string {
	if n == 1 {
		return ","
	}
	return ""
}

// pyTemp is a name for the result of index arithmetic.
func pyTemp(op *ir.Operation) string {
	if n := op.Result(0).Name; n != "" {
		return n
	}
	return "n"
}

// pyIndexOp spells index arithmetic in Python, with the dialect's
// division rounding toward zero.
func pyIndexOp(name, x, y string) string {
	switch name {
	case loop.OpAddi:
		return "(" + x + " + " + y + ")"
	case loop.OpSubi:
		return "(" + x + " - " + y + ")"
	case loop.OpMuli:
		return "(" + x + " * " + y + ")"
	case loop.OpDivi:
		return "_divi(" + x + ", " + y + ")"
	case loop.OpRemi:
		return "_remi(" + x + ", " + y + ")"
	}
	return "min(" + x + ", " + y + ")"
}

// gridPython writes `_grid_<entry>(sm, e0, ...)`: the number of CTAs for
// the extents given. Any number works (every loop over instances is a
// grid-stride loop); this one gives each CTA one round, or fills the GPU
// a few times over for flat kernels.
func (ke *kernelEmitter) gridPython() string {
	nbuf := int(ke.k.NumInputs() + ke.k.NumOutputs())
	var params []string
	for i := range ke.body.Args[nbuf:] {
		params = append(params, fmt.Sprintf("e%d", i))
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "def _grid_%s(sm%s):\n", ke.gridName, prefixAll(", ", params))
	g := ke.grid
	fmt.Fprintf(&sb, "    n = _trip(%s, %s, %s)\n", ke.pyExpr(g.Lower()), ke.pyExpr(g.Upper()), ke.pyExpr(g.Step()))
	pl := ke.plan
	if pl.tc != nil {
		fmt.Fprintf(&sb, "    return min(%s, 2147483647)\n", pl.tc.tilesPy)
		if pl.tc.decodeDyn {
			fmt.Fprintf(&sb, "\n\ndef _rows_%s(sm%s):\n    return %s\n", ke.gridName, prefixAll(", ", params), pl.tc.rowsPy)
		}
		return sb.String()
	}
	if len(pl.syncs) > 0 {
		// instances that wait for each other (sync.go): a CTA each, as a
		// CTA's second instance in a grid-stride loop could be the one
		// its first waits for
		fmt.Fprintf(&sb, "    if n > 2147483647:\n        raise ValueError(\"%s: %%d instances, one CTA each, exceed the grid\" %% n)\n", ke.entry)
		sb.WriteString("    return n\n")
		return sb.String()
	}
	if !pl.flat {
		fmt.Fprintf(&sb, "    return min(_cdiv(n, %d), 2147483647)\n", pl.rows)
		return sb.String()
	}
	var tiles []string
	for _, ph := range pl.phases {
		f := loop.ForOp{Operation: ph.loop}
		nd := fmt.Sprintf("_trip(%s, %s, %s)", ke.pyExpr(f.Lower()), ke.pyExpr(f.Upper()), ke.pyExpr(f.Step()))
		if ph.rows > 1 {
			tiles = append(tiles, fmt.Sprintf("_cdiv(n, %d) * min(%s, 1)", ph.rows, nd))
		} else {
			tiles = append(tiles, fmt.Sprintf("n * _cdiv(%s, %d)", nd, ph.group*ph.unroll))
		}
	}
	if pl.rowWork {
		tiles = append(tiles, fmt.Sprintf("_cdiv(n, %d)", pl.block))
	}
	if len(tiles) == 0 {
		tiles = []string{"0"}
	}
	work := tiles[0]
	if len(tiles) > 1 {
		work = "max(" + strings.Join(tiles, ", ") + ")"
	}
	// a grid-stride loop over at most 16 rounds of a full SM (2048
	// threads) per SM: 64 CTAs of 256 threads measured 1 to 2% faster than
	// 32 on the H200's element-wise workloads, and no cap (one tile per
	// CTA) up to 20% slower on quantize
	fmt.Fprintf(&sb, "    return min(%s, sm * %d)\n", work, 8*2048/pl.block)
	return sb.String()
}

// pyExpr spells a kernel-level index value in Python over the extents
// e0, e1, ... of the kernel's arguments.
func (ke *kernelEmitter) pyExpr(v *ir.Value) string {
	if c, ok := staticIndex(v); ok {
		return itoa(c)
	}
	nbuf := int(ke.k.NumInputs() + ke.k.NumOutputs())
	if v.IsBlockArg() && v.OwnerBlock() == ke.body {
		for i, a := range ke.body.Args[nbuf:] {
			if a == v {
				return fmt.Sprintf("e%d", i)
			}
		}
	}
	op := v.DefiningOp()
	if op == nil || op.Block() != ke.body {
		ke.fail(ke.k.Operation, "has loop bounds computed inside the grid; the launcher cannot size the grid")
	}
	switch op.Name() {
	case loop.OpAddi, loop.OpSubi, loop.OpMuli, loop.OpDivi, loop.OpRemi, loop.OpMini:
		return pyIndexOp(op.Name(), ke.pyExpr(op.Operand(0)), ke.pyExpr(op.Operand(1)))
	}
	ke.fail(op, "computes a loop bound the launcher cannot evaluate")
	return ""
}

// launcherRuntime is the fixed part of every launcher before the kernel
// table: imports, the driver API and argument checks.
const launcherRuntime = `import ctypes
import os

import torch

_lib = None


def _libcuda():
    """The CUDA driver API, with the signatures of the calls made here."""
    global _lib
    if _lib is None:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError:
            lib = ctypes.CDLL("libcuda.so")
        p, i, u = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint
        pp = ctypes.POINTER(ctypes.c_void_p)
        lib.cuGetErrorName.argtypes = [i, ctypes.POINTER(ctypes.c_char_p)]
        lib.cuCtxGetCurrent.argtypes = [pp]
        lib.cuCtxSetCurrent.argtypes = [p]
        lib.cuDeviceGet.argtypes = [ctypes.POINTER(i), i]
        lib.cuDevicePrimaryCtxRetain.argtypes = [pp, i]
        lib.cuModuleLoadDataEx.argtypes = [pp, ctypes.c_char_p, u, ctypes.POINTER(i), pp]
        lib.cuModuleGetFunction.argtypes = [pp, p, ctypes.c_char_p]
        lib.cuFuncSetAttribute.argtypes = [p, i, i]
        lib.cuLaunchKernel.argtypes = [p, u, u, u, u, u, u, u, p, pp, pp]
        _lib = lib
    return _lib


def _check(res, what):
    if res != 0:
        name = ctypes.c_char_p()
        _libcuda().cuGetErrorName(res, ctypes.byref(name))
        raise RuntimeError("%s failed: %s (%d)" % (what, (name.value or b"?").decode(), res))


def _cdiv(a, b):
    return -(-a // b)


def _trip(lower, upper, step):
    return max(0, _cdiv(upper - lower, step))


def _divi(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _remi(a, b):
    return a - _divi(a, b) * b


def _arg(t, name, dtype, shape):
    """Checks one argument; returns it contiguous and 16-byte aligned."""
    if not isinstance(t, torch.Tensor):
        raise TypeError("%s: expected a torch.Tensor, got %s" % (name, type(t).__name__))
    if not t.is_cuda:
        raise ValueError("%s: expected a CUDA tensor, got one on %s" % (name, t.device))
    if t.dtype != dtype:
        raise TypeError("%s: expected dtype %s, got %s" % (name, dtype, t.dtype))
    if t.dim() != len(shape) or any(n is not None and n != m for n, m in zip(shape, t.shape)):
        want = "[" + ", ".join("?" if n is None else str(n) for n in shape) + "]"
        raise ValueError("%s: expected shape %s, got %s" % (name, want, list(t.shape)))
    if not t.is_contiguous():
        t = t.contiguous()
    if t.data_ptr() % 16 != 0:
        t = t.clone()
    return t


def _same_device(device, t, name):
    if t.device != device:
        raise ValueError("%s: on %s, but the first argument is on %s" % (name, t.device, device))


_sm = {}


def _sm_count(device):
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _sm:
        _sm[index] = torch.cuda.get_device_properties(index).multi_processor_count
    return _sm[index]
`

// functionsRuntime loads the module and launches kernels.
const functionsRuntime = `
_modules = {}


def _functions(device):
    """The kernels of the PTX file, loaded once per device."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    fns = _modules.get(index)
    if fns is not None:
        return fns
    lib = _libcuda()
    with torch.cuda.device(index):
        ctx = ctypes.c_void_p()
        _check(lib.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
        if not ctx.value:
            dev = ctypes.c_int()
            _check(lib.cuDeviceGet(ctypes.byref(dev), index), "cuDeviceGet")
            _check(lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
            _check(lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
        with open(_PTX, "rb") as f:
            image = f.read() + b"\0"
        module = ctypes.c_void_p()
        log = ctypes.create_string_buffer(16384)
        opts = (ctypes.c_int * 2)(5, 6)  # CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
        vals = (ctypes.c_void_p * 2)(ctypes.cast(log, ctypes.c_void_p), ctypes.c_void_p(len(log)))
        res = lib.cuModuleLoadDataEx(ctypes.byref(module), image, 2, opts, vals)
        if res != 0:
            _check(res, "cuModuleLoadDataEx(%s): %s" % (_PTX, log.value.decode(errors="replace")))
        fns = {}
        for name, _, shared in _KERNELS:
            fn = ctypes.c_void_p()
            _check(lib.cuModuleGetFunction(ctypes.byref(fn), module, name.encode()), "cuModuleGetFunction(%s)" % name)
            if shared > 48 * 1024:
                # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
                _check(lib.cuFuncSetAttribute(fn, 8, shared), "cuFuncSetAttribute(%s)" % name)
            fns[name] = fn
    _modules[index] = fns
    return fns


def _launch(fns, name, grid, block, shared, stream, args):
    """Launches kernel name on grid CTAs of block threads: tensors are
    passed by address, extents as 64-bit integers."""
    if grid <= 0:
        return
    values = [ctypes.c_uint64(a.data_ptr()) if isinstance(a, torch.Tensor) else ctypes.c_int64(a) for a in args]
    params = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
    _check(_libcuda().cuLaunchKernel(fns[name], grid, 1, 1, block, 1, 1, shared, stream, params, None),
           "cuLaunchKernel(%s)" % name)
`

// zeroedRuntime keeps the counters of loop.ticket and loop.group_sync
// (loop.alloc_dram {zeroed = true}): zero when a launch begins, and left
// zero by every kernel that uses them, so that one tensor per device,
// stream, function and buffer serves every call, as _mm_counters does
// split-K's. A call that needs more gets a bigger one, zeroed.
const zeroedRuntime = `

_ZEROED = {}


def _zeroed(device, stream, key, shape, dtype):
    """Counters at zero of the shape given, kept per device, stream and
    buffer across calls: the kernels that use them leave them at zero."""
    n = 1
    for d in shape:
        n *= d
    k = (device, stream, key)
    t = _ZEROED.get(k)
    if t is None or t.numel() < n or t.dtype != dtype:
        size = max(n, 64) if t is None else max(n, 2 * t.numel())
        t = _ZEROED[k] = torch.zeros((size,), dtype=dtype, device=device)
    return t[:n].view(shape)
`

// mmRuntime chooses and sets up split-K for the matmuls on tensor cores
// (tc.go): _mm_split is tcSplit.
func mmRuntime() string {
	on := "True"
	if !tcSplitK {
		on = "False"
	}
	return fmt.Sprintf(`

# Split-K of the matmuls on tensor cores: a decode shape of a few rows has
# ceil(M/BM) * ceil(N/BN) tiles (BM 128, or 16 in the decode form), too few
# for the GPU, so K is cut into parts;
# the last part of each tile to finish adds them up in order and runs the
# epilogue.
_MM_SPLIT_K = %s
_MM_MIN_STEPS = %d
# TENSORFORGE_PTX_SPLIT_K=n launches n parts (1: none), for measurements
_MM_FORCE_SPLIT = int(os.environ.get("TENSORFORGE_PTX_SPLIT_K", "0") or 0)
_MM_COUNTERS = {}


def _mm_split(tiles, sm, steps):
    """The parts of K: 1, unless the tiles fill at most half the
    multiprocessors; each doubling keeps the CTAs within one per
    multiprocessor and at least _MM_MIN_STEPS steps of K in a part."""
    if _MM_FORCE_SPLIT > 0:
        return min(_MM_FORCE_SPLIT, max(steps, 1))
    split = 1
    while _MM_SPLIT_K and tiles > 0 and 2 * tiles * split <= sm and steps // (2 * split) >= _MM_MIN_STEPS:
        split *= 2
    return split


def _mm_counters(device, stream, n):
    """At least n int32 counters at zero, one per tile, kept per device and
    stream: each part of a tile adds 1, the last one resets it to 0."""
    key = (device, stream)
    t = _MM_COUNTERS.get(key)
    if t is None or t.numel() < n:
        t = _MM_COUNTERS[key] = torch.zeros((max(n, 1024),), dtype=torch.int32, device=device)
    return t


def _launch_mm(fns, name, tiles, block, shared, stream, args, device, sm, steps, ws_tile):
    """Launches a matmul on tensor cores over tiles tiles, split-K chosen
    from them: (tile, part) pairs, a workspace of ws_tile f32 per pair."""
    if tiles <= 0:
        return
    split = _mm_split(tiles, sm, steps)
    extra = (1, 0, 0)
    if split > 1:
        ws = torch.empty((split * tiles * ws_tile,), dtype=torch.float32, device=device)
        extra = (split, ws, _mm_counters(device, stream, tiles))
    _launch(fns, name, min(tiles * split, 2147483647), block, shared, stream, tuple(args) + extra)
`, on, tcMinSteps)
}
