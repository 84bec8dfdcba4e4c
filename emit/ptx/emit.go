// Package ptx translates a lowered module (the loop dialect, after
// lower-to-loops and sram-alloc) into PTX for sm_90 and a Python launcher
// for each function:
//
//	tfc --emit=ptx --target=h200 -o out/ model.tir
//
// writes out/<func>.ptx, every kernel the function launches,
//
//	.version 8.0
//	.target sm_90
//	.address_size 64
//
//	.extern .shared .align 16 .b8 tf_smem[];
//
//	.visible .entry rms_silu_mul_k0(
//		.param .u64 rms_silu_mul_k0_param_0,
//		...
//	)
//	.reqntid 256, 1, 1
//	{
//		.reg .pred 	%p<9>;
//		...
//		ld.global.nc.v4.b32 	{%r9, %r10, %r11, %r12}, [%rd21];
//		...
//		shfl.sync.bfly.b32 	%r40, %r39, 16, 31, -1;
//		...
//	}
//
// and out/<func>.py, which defines `<func>(*args)`: CUDA tensors in
// argument order in, the result tensor (a tuple of them when there are
// several) out, with the calling convention of the Triton emitter's
// module, so that either can be swapped for the other.
//
// How the loop dialect maps onto the GPU (docs/ptx.md has the whole
// story):
//
//   - the grid, `loop.parallel`, is a grid-stride loop over groups of
//     threads of a CTA: one group per instance (a row), several groups per
//     CTA for short rows;
//   - a `loop.for {dist = "threads"}` is spread over the threads of the
//     group, unrolled when its trip count is static and small; its
//     carried values are combined with `shfl.sync.bfly.b32` within warps
//     and through shared memory across warps;
//   - an sram buffer (`loop.alloc`) lives in registers when every access
//     is by the thread that wrote it, else in dynamic shared memory at its
//     `sram-alloc` offset;
//   - a resident split (rows split over instances that meet at a
//     `loop.group_sync`) has one instance per CTA and a CTA per instance:
//     tickets and group syncs are atomics of thread 0 on zeroed counters,
//     which the launcher keeps across calls (sync.go);
//   - element-wise and generic kernels whose loops carry nothing are
//     flattened: a grid-stride loop over tiles of (instance, iterations),
//     so that one long row, or many short ones, still fill the GPU.
package ptx

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// File is one emitted file: its name inside the output directory and its
// text.
type File struct {
	Name string
	Text string
}

// Header is the first lines of every PTX module: PTX ISA 8.0 (which CUDA
// 12 and 13's ptxas accept for sm_90), Hopper, 64-bit addresses.
const Header = ".version 8.0\n.target sm_90\n.address_size 64\n"

// HeaderArch is Header for modules with sm_90a's architecture-specific
// instructions (wgmma), which run on sm_90 devices only.
const HeaderArch = ".version 8.0\n.target sm_90a\n.address_size 64\n"

// SharedName is the dynamic shared memory every kernel of a module shares;
// a launch gives its size.
const SharedName = "tf_smem"

// maxSharedBytes is the dynamic shared memory one CTA may use on sm_90:
// 227 KB (targets.md: 228 KB per SM, 227 KB per block).
const maxSharedBytes = 227 * 1024

// Emit translates m, which must be lowered (func.func on buffers and
// loop.kernel ops only), into two files per function, in the order of
// the functions: <func>.ptx and <func>.py. Problems (an op the emitter
// cannot translate) are errors at the op's location.
func Emit(m ir.Module) (files []File, err error) {
	if m.Operation == nil {
		return nil, fmt.Errorf("no module to emit")
	}
	if err := loop.RefuseStridedAccesses(m, "PTX"); err != nil {
		return nil, err
	}
	var graphOp *ir.Operation
	m.Walk(func(op *ir.Operation) bool {
		if graphOp == nil && op.Dialect() == "graph" {
			graphOp = op
		}
		return graphOp == nil
	})
	if graphOp != nil {
		return nil, ir.OpError(graphOp, "cannot be translated to PTX: the module is not lowered (run lower-to-loops)")
	}
	// a kernel's parts are one launch when they plan alike (parts.go), else
	// kernels of their own
	if err := loop.SplitParts(m, sharesLaunch); err != nil {
		return nil, err
	}
	kernels := map[string]loop.KernelOp{}
	var funcs []ir.Func
	for op := m.Body().First(); op != nil; op = op.Next() {
		if k, ok := loop.AsKernel(op); ok {
			if _, dup := kernels[k.SymName()]; dup {
				return nil, ir.OpError(op, "defines kernel '%s' twice", k.SymName())
			}
			kernels[k.SymName()] = k
			continue
		}
		if op.Name() == ir.FuncOpName {
			funcs = append(funcs, ir.Func{Operation: op})
			continue
		}
		return nil, ir.OpError(op, "cannot be translated to PTX: only func.func and loop.kernel may appear at module level")
	}
	names := newNamer()
	for _, f := range funcs {
		fn, err := emitFunc(f, kernels, names)
		if err != nil {
			return nil, err
		}
		files = append(files, File{Name: fn.file + ".ptx", Text: fn.ptx}, File{Name: fn.file + ".py", Text: fn.py})
	}
	return files, nil
}

// WriteDir runs Emit and writes its files into dir, which it creates if
// needed. It returns the paths written.
func WriteDir(m ir.Module, dir string) ([]string, error) {
	files, err := Emit(m)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	for _, f := range files {
		p := filepath.Join(dir, f.Name)
		if err := os.WriteFile(p, []byte(f.Text), 0o644); err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// emittedFunc is the output for one function.
type emittedFunc struct {
	file string // base name of both files
	ptx  string
	py   string
}

// emitFunc translates the kernels one function launches, in the order of
// their first launch, and writes its launcher.
func emitFunc(f ir.Func, kernels map[string]loop.KernelOp, names *namer) (*emittedFunc, error) {
	if f.Body() == nil {
		return nil, ir.OpError(f.Operation, "has no body to translate")
	}
	var order []string
	seen := map[string]bool{}
	for op := f.Body().First(); op != nil; op = op.Next() {
		if l, ok := loop.AsLaunch(op); ok {
			name := l.Kernel()
			if _, ok := kernels[name]; !ok {
				return nil, ir.OpError(op, "launches kernel '%s', which the module does not define", name)
			}
			if !seen[name] {
				seen[name] = true
				order = append(order, name)
			}
		}
	}
	var sb strings.Builder
	sb.WriteString("//\n// Kernels of @" + f.SymName() + ", generated by tfc --emit=ptx.\n//\n\n")
	infos := map[string]*kernelInfo{}
	var bodies []string
	usesShared, arch := false, false
	for _, name := range order {
		info, text, err := emitKernel(kernels[name], names.entry(name))
		if err != nil {
			return nil, err
		}
		infos[name] = info
		bodies = append(bodies, text)
		if info.shared > 0 {
			usesShared = true
		}
		arch = arch || info.wgmma
	}
	if arch {
		sb.WriteString(HeaderArch)
	} else {
		sb.WriteString(Header)
	}
	if usesShared {
		fmt.Fprintf(&sb, "\n// Dynamic shared memory: each launch gives its size.\n.extern .shared .align 16 .b8 %s[];\n", SharedName)
	}
	for _, b := range bodies {
		sb.WriteString("\n")
		sb.WriteString(b)
	}
	file := names.file(f.SymName())
	py, err := emitLauncher(f, file, kernels, infos)
	if err != nil {
		return nil, err
	}
	return &emittedFunc{file: file, ptx: sb.String(), py: py}, nil
}

// namer gives PTX entries and files names that are valid identifiers and
// unique in the module.
type namer struct {
	entries map[string]string
	used    map[string]bool
	files   map[string]bool
}

func newNamer() *namer {
	// the shared memory symbol is a module-level name beside the entries
	return &namer{entries: map[string]string{}, used: map[string]bool{SharedName: true}, files: map[string]bool{}}
}

// identifier maps a symbol to [A-Za-z_][A-Za-z0-9_]*.
func identifier(s string) string {
	var sb strings.Builder
	for i, c := range s {
		ok := c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9'
		if ok {
			sb.WriteRune(c)
		} else {
			sb.WriteByte('_')
		}
	}
	if sb.Len() == 0 {
		return "_"
	}
	return sb.String()
}

// entry names the PTX entry of kernel sym.
func (n *namer) entry(sym string) string {
	if e, ok := n.entries[sym]; ok {
		return e
	}
	base := identifier(sym)
	e := base
	for i := 1; n.used[e]; i++ {
		e = fmt.Sprintf("%s_%d", base, i)
	}
	n.used[e] = true
	n.entries[sym] = e
	return e
}

// file names the files of function sym.
func (n *namer) file(sym string) string {
	base := identifier(sym)
	f := base
	for i := 1; n.files[f]; i++ {
		f = fmt.Sprintf("%s_%d", base, i)
	}
	n.files[f] = true
	return f
}

// sortedKeys returns the keys of a map in order, for deterministic output.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
