package ptx

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/loop"
)

// A kernel of several parts (loop.Parts: independent grids over the same
// buffers, as horizontal fusion in lower-to-loops forms them: q's and k's
// RoPE) is one entry, launched once, when its parts plan to CTAs of the
// same size with no CTA per instance and no tensor cores. The launch's
// CTAs are the parts' end to end: the launcher passes, after the kernel's
// arguments, the CTA at which each part after the first starts, and a CTA
// runs the part its number falls in, which sees its own range of CTAs as
// %ctaid.x and %nctaid.x (kernelEmitter.cta). Two launches were two
// ramps and tails: a decode step's RoPE on q and k took 4.9 us of GPU time
// as two kernels on an H100, against Triton's 1.7 as one. Parts that do
// not fit one entry are split into kernels of their own (Emit).

// ctaRange is a part's CTAs within the launch: its first CTA as CTA 0,
// and its count.
type ctaRange struct{ ctaid, nctaid opnd }

// errSeparateParts reports that a kernel's parts do not share a launch.
var errSeparateParts = errors.New("the parts do not share a launch")

// emitPartsKernel translates the kernel of several parts k into one
// entry; errSeparateParts when its parts plan differently.
func emitPartsKernel(k loop.KernelOp, entry string) (info *kernelInfo, text string, err error) {
	defer catchEmit(k, &err)
	n := len(loop.Parts(k))
	a := newAsm("$L_" + entry)
	nargs := len(k.Body().Entry().Args)
	param := func(i int) string { return fmt.Sprintf("%s_param_%d", entry, i) }

	a.comment("the part this CTA runs: the launch's CTAs are the parts', end to end")
	c32, n32 := a.reg(rB32), a.reg(rB32)
	a.raw(nil, false, "mov.u32", c32.s, "%ctaid.x")
	a.raw(nil, false, "mov.u32", n32.s, "%nctaid.x")
	ctaid, nctaid := a.reg(rB64), a.reg(rB64)
	a.ins("cvt.u64.u32", ctaid, c32)
	a.ins("cvt.u64.u32", nctaid, n32)
	starts := make([]opnd, n+1)
	starts[0], starts[n] = intImm(0, rB64), nctaid
	for i := 1; i < n; i++ {
		starts[i] = a.reg(rB64)
		a.raw(nil, false, "ld.param.u64", starts[i].s, "["+param(nargs+i-1)+"]")
	}
	labels := make([]string, n)
	for i := n - 1; i >= 1; i-- {
		labels[i] = a.newLabel()
		p := a.reg(rPred)
		a.ins("setp.ge.s64", p, ctaid, starts[i])
		a.bra(&p, false, labels[i])
	}

	var comments []string
	var grids strings.Builder
	block, shared := 0, int64(0)
	for i := range n {
		pk := loop.PartKernel(k, i)
		ke := newKernelEmitter(pk, entry, a)
		ke.gridName = fmt.Sprintf("%s_p%d", entry, i)
		ke.plan = makePlan(ke)
		pl := ke.plan
		if pl.tc != nil || len(pl.syncs)+len(pl.tickets) > 0 || i > 0 && pl.block != block {
			return nil, "", errSeparateParts
		}
		block, shared = pl.block, max(shared, pl.shared)
		if i > 0 {
			a.label(labels[i])
		}
		a.comment("part %d", i)
		ke.cta = &ctaRange{ctaid: ctaid, nctaid: starts[1]}
		if i > 0 {
			ke.cta = &ctaRange{ctaid: a.reg(rB64), nctaid: a.reg(rB64)}
			a.ins("sub.s64", ke.cta.ctaid, ctaid, starts[i])
			a.ins("sub.s64", ke.cta.nctaid, starts[i+1], starts[i])
		}
		ke.emit()
		from := "0"
		if i > 0 {
			from = param(nargs + i - 1)
		}
		comments = append(comments, fmt.Sprintf("Part %d, the CTAs from %s on:", i, from))
		comments = append(comments, pl.describe()...)
		grids.WriteString(ke.gridPython() + "\n\n")
	}

	// the launcher's grid: the parts' grids end to end, and the starts
	var es []string
	for i := range nargs - int(k.NumInputs()+k.NumOutputs()) {
		es = append(es, fmt.Sprintf("e%d", i))
	}
	fmt.Fprintf(&grids, "def _parts_%s(sm%s):\n", entry, prefixAll(", ", es))
	var sum []string
	for i := range n {
		fmt.Fprintf(&grids, "    g%d = _grid_%s_p%d(sm%s)\n", i, entry, i, prefixAll(", ", es))
		sum = append(sum, fmt.Sprintf("g%d", i))
	}
	var st []string
	for i := 1; i < n; i++ {
		st = append(st, strings.Join(sum[:i], " + "))
	}
	fmt.Fprintf(&grids, "    return %s, (%s,)\n", strings.Join(sum, " + "), strings.Join(st, ", "))

	var sb strings.Builder
	fmt.Fprintf(&sb, "// %s: %s kernel of %d parts in one launch.\n", k.SymName(), k.Kind(), n)
	for _, l := range comments {
		sb.WriteString("// " + l + "\n")
	}
	var startParams []string
	for i := 1; i < n; i++ {
		startParams = append(startParams, fmt.Sprintf("the first CTA of part %d", i))
	}
	writeEntry(&sb, entry, k.Body().Entry().Args, startParams, block, 0, a)
	nbuf := int(k.NumInputs() + k.NumOutputs())
	return &kernelInfo{
		entry: entry, block: block, shared: shared, nargs: nargs, nextents: nargs - nbuf,
		gridPy: strings.TrimRight(grids.String(), "\n"), parts: n,
	}, sb.String(), nil
}

// sharesLaunch reports whether the parts of k become one entry.
func sharesLaunch(k loop.KernelOp) bool {
	_, _, err := emitPartsKernel(k, k.SymName())
	return err == nil
}
