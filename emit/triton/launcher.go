package triton

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/emit/pyhost"
	"github.com/tensorforge/tensorforge/ir"
)

// ---------------------------------------------------------------------------
// Launchers
//
// A lowered function
//
//	func.func @f(%x: memref<?x64xf32, dram>, %y: memref<?x64xf32, dram>) attributes {num_results = 1} {
//	  %x_d0 = loop.dim %x {axis = 0} : (memref<?x64xf32, dram>) -> index
//	  loop.launch %x, %y, %x_d0, %x_d0 {kernel = "f_k0"} : (...) -> ()
//	  return
//	}
//
// becomes the Python function
//
//	def f(x):
//	    x = _tensor("f", "x", x, torch.float32, (None, 64))
//	    dev = x.device
//	    x_d0 = x.shape[0]
//	    y = torch.empty((x_d0, 64), dtype=torch.float32, device=dev)
//	    cfg = CONFIGS["f_k0"]
//	    grid = (_cdiv(x_d0, cfg["ROWS"]),)
//	    if grid[0] > 0:
//	        _launch(f_k0, grid, (x, y, x_d0, x_d0), BLOCK=cfg["BLOCK"], ROWS=cfg["ROWS"], num_warps=cfg["num_warps"])
//	    return y
//
// taking the inputs, allocating each output with the extents its first
// launch passes (and each intermediate where loop.alloc_dram says), and
// computing every kernel's grid from the extents it is launched with.

// launcher holds the state of one launcher.
type launcher struct {
	me    *moduleEmitter
	fn    ir.Func
	name  string
	w     *pyWriter
	names *namer
	env   map[*ir.Value]string
	// allocated marks the buffers that exist (inputs, allocated outputs and
	// intermediates).
	allocated map[*ir.Value]bool
	dev       string
	// deferred are intermediates that only guarded launches use, alike
	// (loop.GuardedOnly): allocated inside the first one's `if`, so that
	// a call taking the other form allocates nothing for them.
	deferred map[*ir.Value]func() error
}

func (me *moduleEmitter) emitLauncher(f ir.Func, name string) (string, error) {
	body := f.Body()
	if body == nil {
		return "", ir.OpError(f.Operation, "has no body to translate")
	}
	nres, ok := f.Attr("num_results").(ir.IntAttr)
	args := body.Args
	if !ok || nres.Value < 0 || int(nres.Value) > len(args) {
		return "", ir.OpError(f.Operation, "cannot be translated to Triton: it is not lowered to loops (no num_results attribute)")
	}
	reserved := []string{"_tensor", "dev", "cfg", "grid", "total"}
	for _, n := range me.kernelNames {
		reserved = append(reserved, n)
	}
	sort.Strings(reserved)
	l := &launcher{me: me, fn: f, name: name, w: &pyWriter{}, names: newNamer(append(reserved, helperNames...)...),
		env: map[*ir.Value]string{}, allocated: map[*ir.Value]bool{}}
	nin := len(args) - int(nres.Value)
	var params, sigIn, sigOut []string
	for i, a := range args {
		m, ok := a.Type().(ir.MemRefType)
		if !ok {
			return "", ir.OpError(f.Operation, "cannot be translated to Triton: argument %d is %s, not a buffer", i, a.Type())
		}
		want := a.Name
		if want == "" {
			want = fmt.Sprintf("arg%d", i)
			if i >= nin {
				want = fmt.Sprintf("result%d", i-nin)
			}
		}
		n := l.names.fresh(want)
		l.env[a] = n
		spec := describeBuffer(m)
		if i < nin {
			params = append(params, n)
			sigIn = append(sigIn, n+": "+spec)
		} else {
			sigOut = append(sigOut, spec)
		}
	}
	out := strings.Join(sigOut, ", ")
	if len(sigOut) != 1 {
		out = "(" + out + ")"
	}
	w := l.w
	w.line(fmt.Sprintf(`"""%s(%s) -> %s"""`, name, strings.Join(sigIn, ", "), out))
	written := loop.WrittenInputs(f, me.kernelOps)
	for i, a := range args[:nin] {
		m := a.Type().(ir.MemRefType)
		dt, err := torchType(m.Elem.Kind)
		if err != nil {
			return "", ir.OpError(f.Operation, "cannot be translated to Triton: %v", err)
		}
		if written[i] {
			// updated in place: a contiguous copy would take the update
			w.open(fmt.Sprintf("if isinstance(%s, torch.Tensor) and not %s.is_contiguous():", l.env[a], l.env[a]))
			w.line(fmt.Sprintf("raise ValueError(%q)", fmt.Sprintf("%s: %s is updated in place (graph.index_copy) and must be contiguous", name, l.env[a])))
			w.close()
		}
		w.line(fmt.Sprintf("%s = _tensor(%q, %q, %s, %s, %s)", l.env[a], name, l.env[a], l.env[a], dt, shapeTuple(m.Shape, nil)))
		l.allocated[a] = true
	}
	// the `?` extents the kernels assume agree (no kernel reads past a buffer)
	checks, err := loop.ExtentChecks(f)
	if err != nil {
		return "", err
	}
	inNames := make([]string, nin)
	for i, a := range args[:nin] {
		inNames[i] = l.env[a]
	}
	for _, c := range pyhost.ExtentChecks(name, checks, inNames, nin) {
		w.open("if " + c.Cond + ":")
		w.line(c.Raise)
		w.close()
	}
	l.dev = "dev"
	if nin > 0 {
		w.assign(l.dev, l.env[args[0]]+".device")
	} else {
		w.assign(l.dev, `torch.device("cuda")`)
	}

	for op := body.First(); op != nil; op = op.Next() {
		if err := l.emitOp(op); err != nil {
			return "", err
		}
	}
	for _, a := range args[nin:] {
		if !l.allocated[a] {
			return "", ir.OpError(f.Operation, "cannot be translated to Triton: result buffer %%%s is never written by a launch", a.Name)
		}
	}
	results := make([]string, 0, len(args)-nin)
	for _, a := range args[nin:] {
		results = append(results, l.env[a])
	}
	switch len(results) {
	case 0:
		w.line("return None")
	case 1:
		w.line("return " + results[0])
	default:
		w.line("return (" + strings.Join(results, ", ") + ")")
	}
	w.prune()
	return fmt.Sprintf("def %s(%s):\n%s", name, strings.Join(params, ", "), w.render(1)), nil
}

// describeBuffer spells a buffer type for the docstring: bf16[?, 8192].
func describeBuffer(m ir.MemRefType) string {
	dims := make([]string, len(m.Shape))
	for i, n := range m.Shape {
		if n == ir.Dynamic {
			dims[i] = "?"
		} else {
			dims[i] = strconv.FormatInt(n, 10)
		}
	}
	return m.Elem.Kind.String() + "[" + strings.Join(dims, ", ") + "]"
}

// shapeTuple spells a shape as a Python tuple: static extents as numbers,
// dynamic ones from ext (None where ext is nil).
func shapeTuple(shape []int64, ext []string) string {
	parts := make([]string, len(shape))
	next := 0
	for i, n := range shape {
		switch {
		case n != ir.Dynamic:
			parts[i] = strconv.FormatInt(n, 10)
		case ext == nil:
			parts[i] = "None"
		default:
			parts[i] = ext[next]
			next++
		}
	}
	if len(parts) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func (l *launcher) ref(v *ir.Value) string {
	if s, ok := l.env[v]; ok {
		return s
	}
	if c, kind, ok := constOf(v); ok {
		return pyLiteral(c, kind)
	}
	return "undefined_" + sanitize(v.Name)
}

func (l *launcher) emitOp(op *ir.Operation) error {
	w := l.w
	bad := func(format string, args ...any) error {
		return ir.OpError(op, "cannot be translated to Triton: "+format, args...)
	}
	switch op.Name() {
	case loop.OpConst, ir.ReturnOpName:
		return nil
	case loop.OpDim:
		d, _ := loop.AsDim(op)
		if !l.allocated[d.Memref()] {
			return bad("asks for an extent of a result before any launch writes it")
		}
		name := l.names.fresh(d.Output().Name)
		w.assign(name, fmt.Sprintf("%s.shape[%d]", l.ref(d.Memref()), d.Axis()))
		l.env[d.Output()] = name
		return nil
	case loop.OpAddi, loop.OpSubi, loop.OpMuli, loop.OpDivi, loop.OpRemi, loop.OpMini:
		name := l.names.fresh(op.Result(0).Name)
		w.assign(name, hostIndexExpr(op.Name(), l.ref(op.Operand(0)), l.ref(op.Operand(1))))
		l.env[op.Result(0)] = name
		return nil
	case loop.OpAllocDRAM:
		a, _ := loop.AsAllocDRAM(op)
		m := a.Output().Type().(ir.MemRefType)
		var ext []string
		for _, e := range a.Extents() {
			ext = append(ext, l.ref(e))
		}
		name := l.names.fresh(a.Output().Name)
		l.env[a.Output()] = name
		l.allocated[a.Output()] = true
		if loop.GuardedOnly(a.Output()) {
			if l.deferred == nil {
				l.deferred = map[*ir.Value]func() error{}
			}
			l.deferred[a.Output()] = func() error { return l.allocate(op, name, m, ext) }
			return nil
		}
		return l.allocate(op, name, m, ext)
	case loop.OpLaunch:
		return l.emitLaunch(op)
	}
	return bad("is not an op a lowered function holds")
}

// allocate writes `name = torch.empty(shape, dtype=..., device=dev)`, or,
// for counters (loop.alloc_dram {zeroed = true}), takes them from the
// zeroed ones _counters keeps.
func (l *launcher) allocate(op *ir.Operation, name string, m ir.MemRefType, ext []string) error {
	dt, err := torchType(m.Elem.Kind)
	if err != nil {
		return ir.OpError(op, "cannot be translated to Triton: %v", err)
	}
	if a, ok := loop.AsAllocDRAM(op); ok {
		if z, _ := a.Zeroed(); z {
			return l.counters(op, name, m, ext)
		}
	}
	l.w.assign(name, fmt.Sprintf("torch.empty(%s, dtype=%s, device=%s)", shapeTuple(m.Shape, ext), dt, l.dev))
	return nil
}

// counters writes `name = _counters(dev, "fn.name", n)`: n int32 counters
// at zero, kept per device, stream, function and buffer across calls,
// since every kernel that uses them leaves them at zero. The kernel takes
// the flat tensor's pointer (its extents are arguments of their own), so
// the tensor is not reshaped.
func (l *launcher) counters(op *ir.Operation, name string, m ir.MemRefType, ext []string) error {
	if m.Elem.Kind != ir.I32 {
		return ir.OpError(op, "cannot be translated to Triton: zeroed buffers are i32 counters, not %s", m.Elem.Kind)
	}
	n := "1"
	next := 0
	for _, d := range m.Shape {
		e := strconv.FormatInt(d, 10)
		if d == ir.Dynamic {
			e = ext[next]
			next++
		}
		n = mulExpr(n, e)
	}
	l.me.counters = true
	l.w.assign(name, fmt.Sprintf("_counters(%s, %q, %s)", l.dev, l.name+"."+name, n))
	return nil
}

// countersSource keeps the counters of the launchers (loop.alloc_dram
// {zeroed = true}): the tickets and group syncs of resident splits.
const countersSource = `# Counters (tickets, group syncs) at zero, kept per (device, stream,
# function, buffer): every kernel that uses them leaves them at zero, so
# they are zeroed once, when allocated, and a launch that needs more
# replaces them with a larger zeroed tensor. The tensors replaced are kept
# alive, since a CUDA graph captured with them may still use them.
_COUNTERS = {}
_COUNTERS_OLD = []


def _counters(dev, name, n):
    """At least n int32 counters at zero on dev, for buffer name."""
    cur = torch.cuda.current_device()
    key = (dev, torch._C._cuda_getCurrentRawStream(cur), name)
    t = _COUNTERS.get(key)
    if t is not None and t.numel() >= n:
        return t
    if torch.cuda.is_current_stream_capturing():
        # zeroed by the graph at every replay; not kept, since it holds
        # zeros only once the graph runs
        return torch.zeros((max(n, 1),), dtype=torch.int32, device=dev)
    if t is not None:
        _COUNTERS_OLD.append(t)
    size = max(n, 64 if t is None else 2 * t.numel())
    t = _COUNTERS[key] = torch.zeros((size,), dtype=torch.int32, device=dev)
    return t
`

// hostIndexExpr spells index arithmetic in Python (on extents, which are
// not negative, so // and % agree with the loop dialect's truncation).
func hostIndexExpr(name, a, b string) string {
	switch name {
	case loop.OpAddi:
		return a + " + " + b
	case loop.OpSubi:
		return a + " - " + b
	case loop.OpMuli:
		return a + " * " + b
	case loop.OpDivi:
		return a + " // " + b
	case loop.OpRemi:
		return a + " % " + b
	}
	return "min(" + a + ", " + b + ")"
}

// emitLaunch writes one kernel launch, allocating the function's outputs
// it writes first.
func (l *launcher) emitLaunch(op *ir.Operation) error {
	lo, _ := loop.AsLaunch(op)
	sym := lo.Kernel()
	kname, ok := l.me.kernelNames[sym]
	if !ok {
		return ir.OpError(op, "launches '%s', which is not a kernel of the module", sym)
	}
	k := l.me.kernelOps[sym]
	p := l.me.plans[sym]
	kargs := k.Body().Entry().Args
	operands := lo.Args()
	if len(operands) != len(kargs) {
		return ir.OpError(op, "passes %d operands to kernel '%s', which takes %d", len(operands), sym, len(kargs))
	}
	nbuf := int(k.NumInputs() + k.NumOutputs())
	// outputs of the function this launch writes first
	next := nbuf
	for _, buf := range operands[:nbuf] {
		m, ok := buf.Type().(ir.MemRefType)
		if !ok {
			return ir.OpError(op, "passes %s where kernel '%s' takes a buffer", buf.Type(), sym)
		}
		var ext []string
		for _, n := range m.Shape {
			if n == ir.Dynamic {
				ext = append(ext, l.ref(operands[next]))
				next++
			}
		}
		if l.allocated[buf] {
			continue
		}
		if !buf.IsBlockArg() || buf.OwnerBlock() != l.fn.Body() {
			return ir.OpError(op, "passes a buffer that is neither an argument nor allocated before")
		}
		if err := l.allocate(op, l.env[buf], m, ext); err != nil {
			return err
		}
		l.allocated[buf] = true
	}
	// a guarded launch runs for the rows its guard admits; its outputs are
	// allocated above, whichever form runs
	if g, ok := lo.Guard(); ok {
		static, dyn, err := lo.GuardRows(g)
		if err != nil {
			return err
		}
		var factors []string
		for _, e := range dyn {
			factors = append(factors, l.ref(e))
		}
		l.w.open("if " + g.Condition(static, factors, "and") + ":")
		defer l.w.close()
		// the intermediates only launches under this guard use
		for _, v := range operands[:nbuf] {
			if alloc := l.deferred[v]; alloc != nil {
				if err := alloc(); err != nil {
					return err
				}
				delete(l.deferred, v)
			}
		}
	}

	// the grid, from the extents the kernel is launched with
	hostArgs := map[*ir.Value]string{}
	var call []string
	for i, a := range kargs {
		hostArgs[a] = l.ref(operands[i])
		call = append(call, l.ref(operands[i]))
	}
	if p.mm != nil {
		return l.emitMatMulLaunch(kname, k, p.mm, call)
	}
	if pp := l.me.parts[sym]; pp != nil {
		return l.emitPartsLaunch(kname, pp, operands, call)
	}
	g := p.grid
	host := func(v *ir.Value) (string, error) { return hostExpr(v, hostArgs, k) }
	ub, err := host(g.Upper())
	if err != nil {
		return err
	}
	var programs string
	// the number of rows (elements of a flat kernel): a literal when static
	count := ub
	w := l.w
	cfg := fmt.Sprintf("CONFIGS[%q]", kname)
	if p.mode != modeFlat && p.twoD && fitsRows(p, ub) {
		// few rows (a decode step's): fewer rows per program, more programs
		cfg = fmt.Sprintf("_fit_rows(%s, %s)", cfg, ub)
		l.me.fitRows = true
	}
	w.assign("cfg", cfg)
	consts := []string{`BLOCK=cfg["BLOCK"]`}
	switch {
	case p.mode == modeFlat:
		call = append(call, "total")
		cols, err := host(p.cols)
		if err != nil {
			return err
		}
		total := cols
		if !(isIndexConst(g.Upper(), 1) && isIndexConst(g.Lower(), 0)) {
			total = mulExpr(ub, cols)
		}
		w.assign("total", total)
		count = total
		programs = `_cdiv(total, cfg["BLOCK"])`
		consts = append(consts, `WIDE=total + cfg["BLOCK"] > WIDE_FROM`)
	case p.twoD:
		programs = fmt.Sprintf(`_cdiv(%s, cfg["ROWS"])`, ub)
		consts = append(consts, `ROWS=cfg["ROWS"]`)
		if p.persist {
			programs = fmt.Sprintf("_persist(%s, cfg)", programs)
			consts = append(consts, `STAGES=cfg["STAGES"]`)
			l.me.persist = true
		}
	default:
		if programs, err = iterations(g, ub, host); err != nil {
			return err
		}
	}
	consts = append(consts, `num_warps=cfg["num_warps"]`)
	w.assign("grid", "("+programs+",)")
	launch := fmt.Sprintf("_launch(%s, grid, (%s), %s)", kname, strings.Join(call, ", ")+trailingComma(len(call)), strings.Join(consts, ", "))
	if n, err := strconv.ParseInt(count, 10, 64); err == nil && n > 0 {
		w.line(launch)
		return nil
	}
	// an empty grid is not a launch CUDA accepts
	w.open("if grid[0] > 0:")
	w.line(launch)
	w.close()
	return nil
}

// iterations spells the iterations of grid g, whose upper bound the
// launcher spells ub: ceil((upper - lower) / step).
func iterations(g loop.ParallelOp, ub string, host func(*ir.Value) (string, error)) (string, error) {
	lb, err := host(g.Lower())
	if err != nil {
		return "", err
	}
	step, err := host(g.Step())
	if err != nil {
		return "", err
	}
	n := ub
	if lb != "0" {
		n = "(" + ub + " - " + lb + ")"
	}
	if step != "1" {
		n = "_cdiv(" + n + ", " + step + ")"
	}
	return n, nil
}

// hostExpr spells index value v of kernel k, computed before its grid, in
// terms of the launch's operands.
func hostExpr(v *ir.Value, args map[*ir.Value]string, k loop.KernelOp) (string, error) {
	if s, ok := args[v]; ok {
		return s, nil
	}
	if c, kind, ok := constOf(v); ok {
		return pyLiteral(c, kind), nil
	}
	op := v.DefiningOp()
	if op == nil {
		return "", ir.OpError(k.Operation, "cannot be translated to Triton: its grid depends on a value of the grid")
	}
	switch op.Name() {
	case loop.OpAddi, loop.OpSubi, loop.OpMuli, loop.OpDivi, loop.OpRemi, loop.OpMini:
		a, err := hostExpr(op.Operand(0), args, k)
		if err != nil {
			return "", err
		}
		b, err := hostExpr(op.Operand(1), args, k)
		if err != nil {
			return "", err
		}
		if op.Name() == loop.OpMuli {
			return mulExpr(a, b), nil
		}
		return "(" + hostIndexExpr(op.Name(), a, b) + ")", nil
	}
	return "", ir.OpError(op, "cannot be translated to Triton: the kernel's grid depends on it, and the launcher computes only index arithmetic")
}

// trailingComma makes a Python tuple of one element: (x,).
func trailingComma(n int) string {
	if n == 1 {
		return ","
	}
	return ""
}

// maxFill bounds the programs _fit_rows asks a grid for (two per
// multiprocessor: 264 on an H200), so that a launch of more static rows
// than ROWS * maxFill needs no call.
const maxFill = 1024

// fitsRows reports whether the launch of a kernel of ROWS rows per
// program over ub rows calls _fit_rows: ROWS above 1, and ub dynamic or
// too few rows to fill any GPU.
func fitsRows(p *kernelPlan, ub string) bool {
	if p.rows <= 1 {
		return false
	}
	n, err := strconv.ParseInt(ub, 10, 64)
	return err != nil || n < p.rows*maxFill
}

// fitRowsSource narrows ROWS at launch when the grid is small.
const fitRowsSource = `# The fewest programs a grid of rows is given: two per multiprocessor.
_FILL = []
_FITS = {}


def _fit_rows(cfg, n):
    """cfg for a launch over n rows: ROWS (and num_warps with it) halved
    while the grid would give the GPU fewer than _FILL programs, so that a
    decode step's few rows (32 heads of one token) spread over the
    multiprocessors instead of running in one or two programs. The choice
    is kept per (configuration, n)."""
    if not _FILL:
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        _FILL.append(2 * props.multi_processor_count)
    rows = cfg["ROWS"]
    if rows == 1 or n >= rows * _FILL[0]:
        return cfg
    hit = _FITS.get((id(cfg), n))
    if hit is None:
        warps = cfg["num_warps"]
        while rows > 1 and (n + rows - 1) // rows < _FILL[0]:
            rows //= 2
            warps = max(1, warps // 2)
        # (holding cfg keeps its id from being reused by another dict)
        hit = _FITS[(id(cfg), n)] = (cfg, dict(cfg, ROWS=rows, num_warps=warps))
    return hit[1]
`

// persistSource bounds the programs of a persistent row kernel.
const persistSource = `# Multiprocessors per device, for persistent row kernels.
_SMS = {}


def _persist(n, cfg):
    """The programs of a launch over n blocks of rows: n, or, when cfg has
    PERSIST programs per multiprocessor, at most that many, each looping
    over every PERSIST * SMs-th block."""
    per = cfg["PERSIST"]
    if per <= 0:
        return n
    dev = torch.cuda.current_device()
    sms = _SMS.get(dev)
    if sms is None:
        sms = _SMS[dev] = torch.cuda.get_device_properties(dev).multi_processor_count
    return min(n, per * sms)
`
