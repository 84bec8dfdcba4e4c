package triton

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// A kernel of several parts (loop.Parts: sibling kernels launched as one)
// becomes one @triton.jit function per part, which takes its program id
// as an argument, and a kernel that picks the part from tl.program_id(0):
//
//	@triton.jit
//	def rope_k0(q, cos, sign, sin, k, qe, ke, start1, BLOCK: tl.constexpr, ROWS: tl.constexpr):
//	    # 2 parts in one launch: programs [0, start1) run rope_k0_p0, the rest rope_k0_p1
//	    pid = tl.program_id(0)
//	    if pid < start1:
//	        rope_k0_p0(q, cos, sign, sin, k, qe, ke, pid, BLOCK, ROWS)
//	    else:
//	        rope_k0_p1(q, cos, sign, sin, k, qe, ke, pid - start1, BLOCK, ROWS)
//
// Triton inlines the parts. The launcher counts each part's programs from
// its rows, as it would for the part alone, and passes where each part
// starts. The parts share one launch configuration (BLOCK, ROWS,
// num_warps), so they must have planned the same one; a kernel whose
// parts did not (or one with a flat part, which takes its element count
// as a constexpr-dependent argument) is split into kernels of one part
// before emission, each launched as before.

// partsPlan is the plan of each part of a kernel of several.
type partsPlan struct {
	kernels []loop.KernelOp // the parts as kernels of one grid (loop.PartKernel)
	plans   []*kernelPlan
	names   []string // the part functions' names
}

// planParts plans the parts of k. ok is false when they cannot share a
// launch in the Triton form.
func planParts(k loop.KernelOp) (pp *partsPlan, ok bool) {
	parts := loop.Parts(k)
	if len(parts) < 2 || k.Kind() == "matmul" {
		return nil, false
	}
	pp = &partsPlan{}
	stretched := false
	for i := range parts {
		pk := loop.PartKernel(k, i)
		if mp, err := tileMatMul(pk); err != nil || mp != nil {
			return nil, false
		}
		p, err := plan(pk)
		if err != nil {
			return nil, false
		}
		stretched = stretched || p.stretched
		pp.kernels = append(pp.kernels, pk)
		pp.plans = append(pp.plans, p)
	}
	shared := loop.SharedStores(k)
	for i, p := range pp.plans {
		if p.mode == modeFlat && (stretched || shared) {
			// a copy beside stretched parts (a v cache write beside k's
			// RoPE), or the pieces of a concat along the rows (flat
			// kernels each): rows of one stretch, their form
			p, err := planForm(pp.kernels[i], true)
			if err != nil {
				return nil, false
			}
			pp.plans[i] = p
		}
		if pp.plans[i].mode == modeFlat || i > 0 && !sameLaunch(pp.plans[i], pp.plans[0]) {
			return nil, false
		}
	}
	return pp, true
}

// sameLaunch reports whether parts planned p and q can share a launch
// configuration. Stretched parts do not read BLOCK (each stretch is a
// block of its own width): the first part's is passed to all.
func sameLaunch(p, q *kernelPlan) bool {
	if p.twoD != q.twoD || p.stretched != q.stretched {
		return false
	}
	a, b := p.configDict(), q.configDict()
	if p.stretched {
		a, b = a[1:], b[1:]
	}
	return slices.Equal(a, b)
}

// emitParts returns the text of the part functions and of kernel k (the
// dispatcher), called name.
func (me *moduleEmitter) emitParts(k loop.KernelOp, name string, pp *partsPlan) (string, error) {
	var texts []string
	var params []string
	for i, pk := range pp.kernels {
		pname := me.names.fresh(fmt.Sprintf("%s_p%d", name, i))
		pp.names = append(pp.names, pname)
		ke := newKernelEmitter(pk, pname, pp.plans[i], me.uses)
		ke.part = true
		t, err := ke.emit()
		if err != nil {
			return "", err
		}
		texts = append(texts, t)
		if i == 0 {
			params = slices.Clone(ke.params)
		}
	}
	names := newNamer(append(slices.Clone(params), helperNames...)...)
	starts := make([]string, len(pp.kernels))
	for i := 1; i < len(starts); i++ {
		starts[i] = names.fresh(fmt.Sprintf("start%d", i))
	}
	pid := names.fresh("pid")
	consts := []string{"BLOCK"}
	if pp.plans[0].twoD {
		consts = append(consts, "ROWS")
	}
	var decl []string
	for _, c := range consts {
		decl = append(decl, c+": tl.constexpr")
	}
	w := &pyWriter{}
	w.assign(pid, "tl.program_id(0)")
	for i, pname := range pp.names {
		arg := pid
		if i > 0 {
			arg = pid + " - " + starts[i]
		}
		switch {
		case i == len(pp.names)-1:
			w.open("else:")
		case i == 0:
			w.open(fmt.Sprintf("if %s < %s:", pid, starts[1]))
		default:
			w.open(fmt.Sprintf("elif %s < %s:", pid, starts[i+1]))
		}
		w.line(fmt.Sprintf("%s(%s)", pname, strings.Join(append(append(slices.Clone(params), arg), consts...), ", ")))
		w.close()
	}
	var sb strings.Builder
	for _, t := range texts {
		sb.WriteString(t + "\n\n")
	}
	sb.WriteString("@triton.jit\n")
	fmt.Fprintf(&sb, "def %s(%s):\n", name, strings.Join(append(append(params, starts[1:]...), decl...), ", "))
	var runs []string
	for i, pname := range pp.names {
		switch {
		case i == 0:
			runs = append(runs, fmt.Sprintf("programs [0, %s) run %s", starts[1], pname))
		case i == len(pp.names)-1:
			runs = append(runs, "the rest "+pname)
		default:
			runs = append(runs, fmt.Sprintf("[%s, %s) %s", starts[i], starts[i+1], pname))
		}
	}
	fmt.Fprintf(&sb, "    # %d parts in one launch: %s\n", len(pp.names), strings.Join(runs, ", "))
	sb.WriteString(w.render(1))
	return sb.String(), nil
}

// emitPartsLaunch launches kernel k of parts pp: each part's programs
// counted from its rows as for a kernel of its own, the grid their sum.
func (l *launcher) emitPartsLaunch(kname string, pp *partsPlan, operands []*ir.Value, call []string) error {
	w := l.w
	p := pp.plans[0]
	var rows []string
	for _, pk := range pp.kernels {
		hostArgs := map[*ir.Value]string{}
		for i, a := range pk.Body().Entry().Args {
			hostArgs[a] = l.ref(operands[i])
		}
		g := loop.Parts(pk)[0]
		host := func(v *ir.Value) (string, error) { return hostExpr(v, hostArgs, pk) }
		ub, err := host(g.Upper())
		if err != nil {
			return err
		}
		if !p.twoD {
			if ub, err = iterations(g, ub, host); err != nil {
				return err
			}
		}
		rows = append(rows, ub)
	}
	cfg := fmt.Sprintf("CONFIGS[%q]", kname)
	consts := []string{`BLOCK=cfg["BLOCK"]`}
	if p.twoD {
		all, sum := strings.Join(rows, " + "), int64(0)
		for _, r := range rows {
			n, err := strconv.ParseInt(r, 10, 64)
			if err != nil {
				sum = -1
				break
			}
			sum += n
		}
		if sum >= 0 {
			all = strconv.FormatInt(sum, 10)
		}
		if fitsRows(p, all) {
			cfg = fmt.Sprintf("_fit_rows(%s, %s)", cfg, all)
			l.me.fitRows = true
		}
		consts = append(consts, `ROWS=cfg["ROWS"]`)
	}
	consts = append(consts, `num_warps=cfg["num_warps"]`)
	w.assign("cfg", cfg)
	var counts []string
	for i, r := range rows {
		n := l.names.fresh(fmt.Sprintf("programs%d", i))
		if p.twoD {
			r = fmt.Sprintf(`_cdiv(%s, cfg["ROWS"])`, r)
		}
		w.assign(n, r)
		counts = append(counts, n)
	}
	for i := 1; i < len(counts); i++ {
		call = append(call, strings.Join(counts[:i], " + "))
	}
	w.assign("grid", "("+strings.Join(counts, " + ")+",)")
	w.open("if grid[0] > 0:")
	w.line(fmt.Sprintf("_launch(%s, grid, (%s), %s)", kname, strings.Join(call, ", ")+trailingComma(len(call)), strings.Join(consts, ", ")))
	w.close()
	return nil
}
