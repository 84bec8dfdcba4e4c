package llvmemit

import (
	"fmt"
	"sort"
	"strings"

	lir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/metadata"
	"github.com/llir/llvm/ir/types"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// Options adjust what Emit produces.
type Options struct {
	// Entries gives every func.func @f a uniform entry point a generic
	// harness calls,
	//
	//	void @f.entry(i8** %buffers, i64* %extents)
	//
	// (buffers in argument order, then the extents of their `?`
	// dimensions), and lists them in module order in
	//
	//	@tf_entries = constant [N x void (i8**, i64*)*] [...]
	//	@tf_num_entries = constant i32 N
	Entries bool
}

// The runtime the emitted code calls (runtime.c in package cpurt):
//
//	void  tf_parallel_for(void (*task)(void *ctx, int64_t begin, int64_t end), void *ctx, int64_t n)
//	void *tf_alloc(int64_t bytes)    64-byte aligned
//	void  tf_free(void *p)
const (
	ParallelForName = "tf_parallel_for"
	AllocName       = "tf_alloc"
	FreeName        = "tf_free"
	EntriesName     = "tf_entries"
	NumEntriesName  = "tf_num_entries"
)

// Emit translates a lowered module: every loop.kernel and every func.func
// of loop ops. Problems (an op or type it cannot translate) are errors at
// the op's location.
func Emit(m ir.Module, opts Options) (out *lir.Module, err error) {
	me := &moduleEmitter{
		src:       m,
		out:       lir.NewModule(),
		decls:     map[string]*lir.Func{},
		kernels:   map[string]*kernel{},
		funcNames: map[string]string{},
		globals:   globalNames{},
	}
	me.out.SourceFilename = "tensorforge"
	defer func() {
		// A malformed module that slipped past the verifier must not crash
		// the driver; llir panics on some inconsistent input.
		if r := recover(); r != nil {
			out, err = nil, ir.Errorf(m.Loc, "internal error in the LLVM emitter: %v", r)
		}
	}()
	if m.Operation == nil {
		return nil, fmt.Errorf("no module to emit")
	}
	if err := loop.RefuseGroupSync(m, "LLVM IR"); err != nil {
		return nil, err
	}
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
		return nil, ir.OpError(op, "cannot be translated to LLVM IR: only func.func and loop.kernel may appear at module level")
	}
	// Name every function and kernel, then declare every kernel, so
	// launches can refer to any of them.
	for _, f := range funcs {
		me.funcNames[f.SymName()] = me.globals.claim(f.SymName())
	}
	for _, k := range kernels {
		if err := me.declareKernel(k); err != nil {
			return nil, err
		}
	}
	for _, k := range kernels {
		if err := me.defineKernel(k); err != nil {
			return nil, err
		}
	}
	var entries []*lir.Func
	for _, f := range funcs {
		hf, err := me.defineHostFunc(f)
		if err != nil {
			return nil, err
		}
		if opts.Entries {
			entries = append(entries, me.defineEntry(f, hf))
		}
	}
	if opts.Entries {
		me.entryTable(entries)
	}
	me.sortDeclarations()
	return me.out, nil
}

// EmitText is Emit followed by printing: the `.ll` text, deterministic
// for a given module.
func EmitText(m ir.Module, opts Options) (string, error) {
	out, err := Emit(m, opts)
	if err != nil {
		return "", err
	}
	return out.String(), nil
}

// moduleEmitter holds the state of one Emit.
type moduleEmitter struct {
	src     ir.Module
	out     *lir.Module
	decls   map[string]*lir.Func // intrinsics, libm and runtime functions
	kernels map[string]*kernel
	// funcNames maps each function's IR name to its LLVM name
	funcNames map[string]string
	globals   globalNames
	// ntNode is the !nontemporal node, once a store needs it (stream.go)
	ntNode *metadata.Tuple
}

// declare returns the external function name, declaring it on first use.
func (me *moduleEmitter) declare(name string, ret types.Type, params ...types.Type) *lir.Func {
	if f, ok := me.decls[name]; ok {
		return f
	}
	ps := make([]*lir.Param, len(params))
	for i, p := range params {
		ps[i] = lir.NewParam("", p)
	}
	f := me.out.NewFunc(name, ret, ps...)
	if strings.HasPrefix(name, "llvm.") {
		f.FuncAttrs = append(f.FuncAttrs, enum.FuncAttrNoUnwind, enum.FuncAttrReadNone)
	} else {
		f.FuncAttrs = append(f.FuncAttrs, enum.FuncAttrNoUnwind)
	}
	me.decls[name] = f
	return f
}

// intrinsic declares an overloaded LLVM intrinsic on type t:
// intrinsic("llvm.fabs", t, t) is `<8 x float> @llvm.fabs.v8f32(<8 x float>)`.
func (me *moduleEmitter) intrinsic(base string, ret types.Type, params ...types.Type) *lir.Func {
	return me.declare(base+"."+mangle(ret), ret, params...)
}

// sortDeclarations moves the declarations after the definitions, sorted
// by name, so the text reads definitions first whatever order the
// translation needed them in.
func (me *moduleEmitter) sortDeclarations() {
	var defs, decls []*lir.Func
	for _, f := range me.out.Funcs {
		if len(f.Blocks) == 0 {
			decls = append(decls, f)
		} else {
			defs = append(defs, f)
		}
	}
	sort.SliceStable(decls, func(i, j int) bool { return decls[i].Name() < decls[j].Name() })
	me.out.Funcs = append(defs, decls...)
}

// nounwind marks a defined function as throwing no exceptions, which is
// true of everything emitted here and lets the code generator skip unwind
// tables.
func nounwind(f *lir.Func) {
	f.FuncAttrs = append(f.FuncAttrs, enum.FuncAttrNoUnwind)
}
