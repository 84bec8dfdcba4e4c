package loop

import "github.com/tensorforge/tensorforge/ir"

// WrittenInputs reports, for each input argument of f (whose kernels
// kernels holds by name) (the arguments
// before its num_results output buffers), whether a kernel f launches
// writes it: graph.index_copy's destination, which is updated in place in
// the caller's buffer. Hosts must pass such an input as it lies (never a
// converted or contiguous copy), or the update is lost.
func WrittenInputs(f ir.Func, kernels map[string]KernelOp) []bool {
	args := f.Args()
	nres, _ := ir.AttrAsInt(f.Attr("num_results"))
	nin := max(len(args)-int(nres), 0)
	written := make([]bool, nin)
	index := map[*ir.Value]int{}
	for i, a := range args[:nin] {
		index[a] = i
	}
	for _, op := range f.Body().Ops() {
		l, ok := AsLaunch(op)
		if !ok {
			continue
		}
		k, ok := kernels[l.Kernel()]
		if !ok {
			continue
		}
		lo, hi := int(k.NumInputs()), int(k.NumInputs()+k.NumOutputs())
		for i, v := range l.Args() {
			if j, isIn := index[v]; isIn && i >= lo && i < hi {
				written[j] = true
			}
		}
	}
	return written
}

// KernelsOf maps the kernels of module m by name, as WrittenInputs takes them.
func KernelsOf(m ir.Module) map[string]KernelOp {
	kernels := map[string]KernelOp{}
	for o := m.Body().First(); o != nil; o = o.Next() {
		if k, ok := AsKernel(o); ok {
			kernels[k.SymName()] = k
		}
	}
	return kernels
}
