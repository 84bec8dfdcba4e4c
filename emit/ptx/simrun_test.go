package ptx

import (
	"encoding/binary"
	"fmt"
	"sync"

	geval "github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

// This file runs a lowered function the way its launcher does, with the
// simulator standing in for the GPU.

// simGrid is the number of CTAs every simulated launch gets: few, so that
// the grid-stride loops take several rounds.
var simGrid = 3

// Split-K in simulated launches of matmuls on tensor cores: the parts are
// tcSplit's for simSMs multiprocessors, or simSplitK when it is positive;
// simSplits records each launch's.
var (
	simSMs    int64 = 132
	simSplitK int64
	// simTwins, when set, records the entry of each launch
	simTwins  *[]string
	simSplits []int64
)

// encode writes value v of kind k at b.
func encode(b []byte, v float64, k ir.ElemKind) {
	switch {
	case k == ir.I1:
		b[0] = 0
		if v != 0 {
			b[0] = 1
		}
	case k.IsInt():
		x := uint64(int64(numeric.WrapInt(v, k)))
		for i := range b {
			b[i] = byte(x >> (8 * i))
		}
	default:
		bits, _ := numeric.ToBits(v, k)
		for i := range b {
			b[i] = byte(bits >> (8 * i))
		}
	}
}

// decode reads a value of kind k from b.
func decode(b []byte, k ir.ElemKind) float64 {
	var x uint64
	for i := range b {
		x |= uint64(b[i]) << (8 * i)
	}
	switch {
	case k == ir.I1:
		return float64(x & 1)
	case k.IsUnsigned():
		return float64(x)
	case k.IsInt():
		return float64(sext(x, 8*len(b)))
	}
	v, _ := numeric.FromBits(x, k)
	return v
}

// simBuffer is a buffer of the simulated function.
type simBuffer struct {
	addr  uint64
	shape []int64
	elem  ir.ElemKind
}

func (b *simBuffer) count() int64 {
	n := int64(1)
	for _, d := range b.shape {
		n *= d
	}
	return n
}

// emittedPTX holds what Emit gave for each module the tests ran: they
// run a lowered module many times (input sets, nudges) and never change
// it, and emitting was half of their time. The map keeps the modules
// alive, so that no other module is ever found at the same address.
var emittedPTX struct {
	sync.Mutex
	files map[*ir.Operation][]File
}

// emitted is Emit(m), once per module.
func emitted(m ir.Module) ([]File, error) {
	emittedPTX.Lock()
	defer emittedPTX.Unlock()
	if files, ok := emittedPTX.files[m.Operation]; ok {
		return files, nil
	}
	files, err := Emit(m)
	if err != nil {
		return nil, err
	}
	if emittedPTX.files == nil {
		emittedPTX.files = map[*ir.Operation][]File{}
	}
	emittedPTX.files[m.Operation] = files
	return files, nil
}

// simInstances is the trip count of kernel k's grid for the extents ext
// of its launch: the kernel's index arithmetic before the grid, on its
// extent arguments.
func simInstances(k loop.KernelOp, ext []int64) (int64, error) {
	body := k.Body().Entry()
	nbuf := int(k.NumInputs() + k.NumOutputs())
	vals := map[*ir.Value]int64{}
	for i, a := range body.Args[nbuf:] {
		vals[a] = ext[i]
	}
	for op := body.First(); op != nil; op = op.Next() {
		if p, ok := loop.AsParallel(op); ok {
			lb, ok1 := vals[p.Lower()]
			ub, ok2 := vals[p.Upper()]
			st, ok3 := vals[p.Step()]
			if !ok1 || !ok2 || !ok3 || st <= 0 {
				return 0, fmt.Errorf("%s: grid bounds not computed before the grid", k.SymName())
			}
			return max(0, (ub-lb+st-1)/st), nil
		}
		if c, ok := loop.AsConst(op); ok && op.Result(0).Type().String() == "index" {
			vals[op.Result(0)] = int64(c.Value())
			continue
		}
		if op.NumOperands() != 2 {
			continue
		}
		x, ok1 := vals[op.Operand(0)]
		y, ok2 := vals[op.Operand(1)]
		if !ok1 || !ok2 || (y == 0 && (op.Name() == loop.OpDivi || op.Name() == loop.OpRemi)) {
			continue
		}
		switch op.Name() {
		case loop.OpAddi:
			vals[op.Result(0)] = x + y
		case loop.OpSubi:
			vals[op.Result(0)] = x - y
		case loop.OpMuli:
			vals[op.Result(0)] = x * y
		case loop.OpDivi:
			vals[op.Result(0)] = x / y
		case loop.OpRemi:
			vals[op.Result(0)] = x % y
		case loop.OpMini:
			vals[op.Result(0)] = min(x, y)
		}
	}
	return 0, fmt.Errorf("%s: no grid", k.SymName())
}

// simRunFunc runs function fn of the lowered module m on inputs with the
// simulator, and returns its results.
func simRunFunc(m ir.Module, fn string, inputs []*geval.Tensor) ([]*geval.Tensor, error) {
	f, ok := m.Lookup(fn)
	if !ok {
		return nil, fmt.Errorf("no function %s", fn)
	}
	// (Emit splits kernels of several parts in m: the kernels are its)
	files, err := emitted(m)
	if err != nil {
		return nil, err
	}
	kernels := loop.KernelsOf(m)
	var text string
	for _, fl := range files {
		if fl.Name == identifier(fn)+".ptx" {
			text = fl.Text
		}
	}
	mod, err := parseSim(text)
	if err != nil {
		return nil, err
	}
	mem := newSimMemory()
	args := f.Args()
	nres := int(f.Operation.Attr("num_results").(ir.IntAttr).Value)
	nin := len(args) - nres
	bufs := map[*ir.Value]*simBuffer{}
	idx := map[*ir.Value]int64{}
	for i, a := range args[:nin] {
		mt := a.Type().(ir.MemRefType)
		in := inputs[i]
		b := &simBuffer{shape: in.Shape, elem: mt.Elem.Kind}
		es := int(max(mt.Elem.Kind.ByteSize(), 1))
		b.addr = mem.alloc(int(b.count()) * es)
		for j, v := range in.Data {
			encode(mem.slice(b.addr+uint64(j*es), es), v, b.elem)
		}
		bufs[a] = b
	}
	alloc := func(v *ir.Value, dyn []int64) *simBuffer {
		mt := v.Type().(ir.MemRefType)
		b := &simBuffer{elem: mt.Elem.Kind}
		next := 0
		for _, d := range mt.Shape {
			if d == ir.Dynamic {
				d = dyn[next]
				next++
			}
			b.shape = append(b.shape, d)
		}
		b.addr = mem.alloc(int(b.count()) * int(max(mt.Elem.Kind.ByteSize(), 1)))
		bufs[v] = b
		return b
	}
	var zeroed []*simBuffer
	for op := f.Body().First(); op != nil; op = op.Next() {
		switch op.Name() {
		case loop.OpDim:
			d := loop.DimOp{Operation: op}
			idx[op.Result(0)] = bufs[d.Memref()].shape[d.Axis()]
		case loop.OpConst:
			idx[op.Result(0)] = int64(loop.ConstOp{Operation: op}.Value())
		case loop.OpAddi, loop.OpSubi, loop.OpMuli, loop.OpDivi, loop.OpRemi, loop.OpMini:
			x, y := idx[op.Operand(0)], idx[op.Operand(1)]
			var r int64
			switch op.Name() {
			case loop.OpAddi:
				r = x + y
			case loop.OpSubi:
				r = x - y
			case loop.OpMuli:
				r = x * y
			case loop.OpDivi:
				r = x / y
			case loop.OpRemi:
				r = x % y
			default:
				r = min(x, y)
			}
			idx[op.Result(0)] = r
		case loop.OpAllocDRAM:
			al := loop.AllocDRAMOp{Operation: op}
			var dyn []int64
			for _, e := range al.Extents() {
				dyn = append(dyn, idx[e])
			}
			b := alloc(al.Output(), dyn)
			if z, _ := al.Zeroed(); z {
				// the launcher's counters at zero (_zeroed)
				clear(mem.slice(b.addr, int(b.count())*4))
				zeroed = append(zeroed, b)
			}
		case loop.OpLaunch:
			l := loop.LaunchOp{Operation: op}
			k := kernels[l.Kernel()]
			info, _, err := emitKernel(k, identifier(l.Kernel()))
			if err != nil {
				return nil, err
			}
			nbuf := int(k.NumInputs() + k.NumOutputs())
			var ext []int64
			for _, e := range l.Args()[nbuf:] {
				ext = append(ext, idx[e])
			}
			var params []uint64
			next := 0
			for _, b := range l.Args()[:nbuf] {
				mt := b.Type().(ir.MemRefType)
				n := 0
				for _, d := range mt.Shape {
					if d == ir.Dynamic {
						n++
					}
				}
				sb, ok := bufs[b]
				if !ok {
					sb = alloc(b, ext[next:next+n])
				}
				next += n
				params = append(params, sb.addr)
			}
			for _, e := range ext {
				params = append(params, uint64(e))
			}
			var cnt uint64
			var tiles int64
			mmTiles := func(in *kernelInfo) int64 {
				ob := bufs[l.Args()[in.mm.out]]
				nd := len(ob.shape)
				n := (ob.shape[nd-2] + in.mm.bm - 1) / in.mm.bm * ((ob.shape[nd-1] + in.mm.bn - 1) / in.mm.bn)
				for _, d := range ob.shape[:nd-2] {
					n *= d
				}
				return n
			}
			for _, d := range info.decode {
				// `?` rows: the decode twins for few rows (_rows_<entry>)
				ob := bufs[l.Args()[d.mm.out]]
				if ob.shape[len(ob.shape)-2] <= d.mm.bm {
					info = d
					break
				}
			}
			if info.narrow != nil && mmTiles(info) < simSMs {
				// `?` rows whose wide tiles leave SMs idle: the twin
				info = info.narrow
			}
			if simTwins != nil {
				*simTwins = append(*simTwins, info.entry)
			}
			if mm := info.mm; mm != nil {
				// split-K, as _launch_mm chooses it (or simSplitK)
				tiles = mmTiles(info)
				split := tcSplit(tiles, simSMs, mm.steps)
				if simSplitK > 0 {
					split = simSplitK
				}
				simSplits = append(simSplits, split)
				var ws uint64
				if split > 1 {
					ws = mem.alloc(int(split * tiles * mm.wsTile * 4))
					cnt = mem.alloc(int(tiles * 4))
					clear(mem.slice(cnt, int(tiles*4)))
				}
				params = append(params, uint64(split), ws, cnt)
			}
			grid := simGrid
			if info.parts > 1 {
				// simGrid CTAs per part, end to end (_parts_<entry>)
				for i := 1; i < info.parts; i++ {
					params = append(params, uint64(i*simGrid))
				}
				grid = simGrid * info.parts
			}
			if info.perInstance {
				// a CTA per instance, as _grid_<entry> gives
				n, err := simInstances(k, ext)
				if err != nil {
					return nil, err
				}
				grid = int(n)
			}
			if err := mod.launch(info.entry, grid, int(info.shared), params, mem); err != nil {
				return nil, err
			}
			for _, z := range zeroed {
				for i, b := range mem.slice(z.addr, int(z.count())*4) {
					if b != 0 {
						return nil, fmt.Errorf("%s: zeroed counter %d of %v left at %d", info.entry, i/4, z.shape,
							int32(binary.LittleEndian.Uint32(mem.slice(z.addr+uint64(i/4*4), 4))))
					}
				}
			}
			if cnt != 0 {
				for i, b := range mem.slice(cnt, int(tiles*4)) {
					if b != 0 {
						return nil, fmt.Errorf("%s: split-K counter of tile %d not reset to 0", info.entry, i/4)
					}
				}
			}
		}
	}
	// the inputs kernels wrote into (graph.index_copy's destination) are
	// updated in place, as on the device
	for i, a := range args[:nin] {
		b := bufs[a]
		es := int(max(b.elem.ByteSize(), 1))
		if inputs[i].Elem == b.elem {
			for j := range inputs[i].Data {
				inputs[i].Data[j] = decode(mem.slice(b.addr+uint64(j*es), es), b.elem)
			}
		}
	}
	var out []*geval.Tensor
	for _, a := range args[nin:] {
		b := bufs[a]
		if b == nil {
			return nil, fmt.Errorf("output never written")
		}
		es := int(max(b.elem.ByteSize(), 1))
		t := &geval.Tensor{Shape: b.shape, Elem: b.elem, Data: make([]float64, b.count())}
		for j := range t.Data {
			t.Data[j] = decode(mem.slice(b.addr+uint64(j*es), es), b.elem)
		}
		out = append(out, t)
	}
	return out, nil
}
