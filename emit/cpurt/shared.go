package cpurt

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/dialects/loop"
	llvmemit "github.com/tensorforge/tensorforge/emit/llvm"
	"github.com/tensorforge/tensorforge/ir"
)

// The shared library (BuildShared) exports, for every func.func @NAME of
// the module,
//
//	void NAME(T0 *in0, ..., T *out0, ..., int64_t ext0, ...);
//	void tf_entry_NAME(void *const *buffers, const int64_t *extents);
//	int  tf_check_NAME(const int64_t *extents);
//
// (the host function of package llvmemit: the buffers, inputs then
// outputs, then one extent per `?` dimension of theirs in argument and
// dimension order; tf_entry_NAME takes the same in two arrays;
// tf_check_NAME returns 0 when the extents satisfy the function's
// loop.ExtentChecks, else the number, from 1, of the first they break:
// a caller checks before it calls, so that no kernel reads past a
// buffer), and
//
//	void tf_set_num_threads(int n);   // n < 1: the default
//	int  tf_num_threads(void);
//
// Every other symbol (kernels, the runtime) is local to the library, so a
// process may load several.

// ABI names of the runtime.
const (
	SetNumThreadsName = "tf_set_num_threads"
	NumThreadsName    = "tf_num_threads"
	EntryPrefix       = "tf_entry_"
	CheckPrefix       = "tf_check_"
)

// cCheck is the C definition of tf_check_NAME: the function's
// loop.ExtentChecks over its extents array.
func (p *Program) cCheck() (string, error) {
	checks, err := loop.ExtentChecks(p.fn)
	if err != nil {
		return "", err
	}
	// the position of each `?` extent in the array
	pos := map[[2]int]int{}
	for i, a := range p.fn.Args() {
		s, _ := ir.ShapeOf(a.Type())
		for d, n := range s {
			if n == ir.Dynamic {
				pos[[2]int{i, d}] = len(pos)
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "__attribute__((visibility(\"default\"))) int %s%s(const int64_t *extents) {\n  (void)extents;\n", CheckPrefix, p.fn.SymName())
	for k, c := range checks {
		x := fmt.Sprintf("extents[%d]", pos[[2]int{c.Arg, c.Axis}])
		switch {
		case c.Other >= 0:
			fmt.Fprintf(&b, "  if (%s != extents[%d]) return %d;\n", x, pos[[2]int{c.Other, c.OtherAxis}], k+1)
		case c.OrOne:
			fmt.Fprintf(&b, "  if (%s != %d && %s != 1) return %d;\n", x, c.Static, x, k+1)
		default:
			fmt.Fprintf(&b, "  if (%s != %d) return %d;\n", x, c.Static, k+1)
		}
	}
	b.WriteString("  return 0;\n}\n\n")
	return b.String(), nil
}

var cIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// cKeywords are C's (C11 and C23) and C++'s reserved words that a
// function of the ABI cannot be called.
var cKeywords = map[string]bool{}

func init() {
	for _, k := range strings.Fields(`auto break case char const continue default do double else enum extern
		float for goto if inline int long register restrict return short signed sizeof static struct
		switch typedef union unsigned void volatile while _Alignas _Alignof _Atomic _Bool _Complex
		_Generic _Imaginary _Noreturn _Static_assert _Thread_local alignas alignof bool constexpr false
		nullptr static_assert thread_local true typeof typeof_unqual asm catch class delete friend
		mutable namespace new operator private protected public template this throw try typename
		virtual main`) {
		cKeywords[k] = true
	}
}

// checkABIName reports whether name can be the C name of an exported
// function.
func checkABIName(name string) string {
	switch {
	case !cIdent.MatchString(name):
		return "is not a valid C identifier"
	case cKeywords[name]:
		return "is a reserved word of C or C++"
	case strings.HasPrefix(name, "tf_"):
		return "starts with 'tf_', which the library's runtime reserves"
	case strings.HasPrefix(name, "__") || (len(name) > 1 && name[0] == '_' && name[1] >= 'A' && name[1] <= 'Z'):
		return "is reserved to the C implementation (a leading '__' or '_' and a capital)"
	}
	return ""
}

// abiFuncs lists the module's functions with their signatures, refusing a
// name that cannot be a C function's.
func abiFuncs(m ir.Module) ([]*Program, error) {
	var ps []*Program
	var errs []*ir.Diagnostic
	for i, f := range m.Funcs() {
		if why := checkABIName(f.SymName()); why != "" {
			errs = append(errs, ir.OpError(f.Operation, "function @%s cannot be exported from a shared library: its name %s (rename it, e.g. @%s)",
				f.SymName(), why, suggestIdent(f.SymName())))
			continue
		}
		p := &Program{index: i, fn: f}
		if err := p.readSignature(); err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	if len(errs) > 0 {
		return nil, ir.ErrorList(errs)
	}
	if len(ps) == 0 {
		return nil, ir.Errorf(m.Loc, "the module has no function to export")
	}
	return ps, nil
}

// suggestIdent turns a name into a C identifier.
func suggestIdent(name string) string {
	var b strings.Builder
	for i, c := range name {
		switch {
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9':
			b.WriteRune(c)
		default:
			b.WriteByte('_')
		}
	}
	s := strings.TrimLeft(b.String(), "_")
	if s == "" || strings.HasPrefix(s, "tf_") || cKeywords[s] || (s[0] >= '0' && s[0] <= '9') {
		s = "f_" + s
	}
	return s
}

// BuildShared builds a lowered module into a shared library at path:
//
//	opt -O2, llc -O3 -relocation-model=pic as for a program
//	cc -O2 -fPIC -shared prog.o runtime.o abi.o -o path
//	   -Wl,--version-script=exports.map -Wl,--exclude-libs,ALL -lpthread -lm
//
// with the ABI described above. A function whose name is not a C
// identifier is an error at its location.
func BuildShared(m ir.Module, path string, opts Options) error {
	ps, err := abiFuncs(m)
	if err != nil {
		return err
	}
	tc := opts.Toolchain
	if tc == nil {
		if tc, err = FindToolchain(); err != nil {
			return err
		}
	}
	text, err := llvmemit.EmitText(m, llvmemit.Options{Entries: true})
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "tfc-so-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := tc.compileLL(dir, text); err != nil {
		return err
	}
	objs, err := tc.cObjects(dir, map[string]string{"runtime": runtimeC})
	if err != nil {
		return err
	}
	var abi strings.Builder
	abi.WriteString("// The entry points of a TensorForge shared library.\n#include <stdint.h>\n\n")
	abi.WriteString("typedef void (*tf_entry_fn)(void **buffers, int64_t *extents);\nextern const tf_entry_fn tf_entries[];\n\n")
	exports := []string{SetNumThreadsName, NumThreadsName}
	for _, p := range ps {
		name := p.fn.SymName()
		fmt.Fprintf(&abi, "__attribute__((visibility(\"default\"))) void %s%s(void *const *buffers, const int64_t *extents) {\n  tf_entries[%d]((void **)buffers, (int64_t *)extents);\n}\n\n",
			EntryPrefix, name, p.index)
		check, err := p.cCheck()
		if err != nil {
			return err
		}
		abi.WriteString(check)
		exports = append(exports, name, EntryPrefix+name, CheckPrefix+name)
	}
	if err := tc.compileC(dir, "abi", abi.String()); err != nil {
		return err
	}
	script := "{\n  global:\n    " + strings.Join(exports, ";\n    ") + ";\n  local: *;\n};\n"
	if err := os.WriteFile(filepath.Join(dir, "exports.map"), []byte(script), 0o644); err != nil {
		return err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "lib.so")
	if err := run(dir, tc.CC, "-O2", "-fPIC", "-shared", "prog.o", objs["runtime"], "abi.o", "-o", tmp,
		"-Wl,--version-script=exports.map", "-Wl,--exclude-libs,ALL", "-lpthread", "-lm"); err != nil {
		return err
	}
	data, err := os.ReadFile(tmp)
	if err != nil {
		return err
	}
	if err := os.WriteFile(abs, data, 0o755); err != nil {
		return err
	}
	return nil
}

// cTypes is the C storage type of each element type in the ABI.
var cTypes = map[ir.ElemKind]string{
	ir.F64: "double", ir.F32: "float", ir.F16: "uint16_t", ir.BF16: "uint16_t",
	ir.F8E4M3FN: "uint8_t", ir.F8E5M2: "uint8_t", ir.I1: "uint8_t", ir.I8: "int8_t",
	ir.I16: "int16_t", ir.I32: "int32_t", ir.I64: "int64_t", ir.UI8: "uint8_t",
	ir.UI16: "uint16_t", ir.UI32: "uint32_t", ir.Index: "int64_t",
}

// CType is the C type of one element of kind k in the library's ABI: f16
// and bf16 are their bits (uint16_t), f8 and i1 a byte each.
func CType(k ir.ElemKind) string { return cTypes[k] }

// SharedHeader is the C header of the library BuildShared makes from m: a
// commented prototype of every function and its entry point, and the
// thread controls. guard names the include guard.
func SharedHeader(m ir.Module, libName string) (string, error) {
	ps, err := abiFuncs(m)
	if err != nil {
		return "", err
	}
	guard := "TF_" + strings.ToUpper(suggestIdent(strings.TrimSuffix(filepath.Base(libName), filepath.Ext(libName)))) + "_H"
	var b strings.Builder
	fmt.Fprintf(&b, `/* The C ABI of %s, a TensorForge shared library (tfc --emit=so).
 *
 * Each function takes its buffers, inputs then outputs, each a row-major
 * array of its element type's storage (f16 and bf16: the 16 bits of each
 * value; f8 and i1: one byte per element), then the extent of every '?'
 * dimension of those buffers, in argument and dimension order. The caller
 * allocates the outputs; nothing is retained after the call returns.
 * tf_entry_NAME(buffers, extents) is NAME with its buffers and extents in
 * two arrays, in the same order. tf_check_NAME(extents) returns 0 when the
 * extents are ones NAME's kernels can run on ('?' extents that broadcast
 * together equal, one paired with a static n equal to n or 1), else the
 * number (from 1) of the first requirement they break: call it first, as
 * the kernels do not check and would read past a buffer.
 *
 * The kernels run on a pool of threads started by the first call: every
 * online core, or $TF_NUM_THREADS, or what tf_set_num_threads last set
 * (n < 1 restores the default; it takes effect at the next call).
 * Calls from several threads are safe and run one at a time.
 */
#ifndef %s
#define %s

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

`, filepath.Base(libName), guard, guard)
	for _, p := range ps {
		b.WriteString(p.cPrototype())
		b.WriteString("\n")
	}
	b.WriteString(`void tf_set_num_threads(int n);
int tf_num_threads(void);

#ifdef __cplusplus
}
#endif

#endif
`)
	return b.String(), nil
}

// cPrototype is the commented C declaration of the function and its
// entry point.
func (p *Program) cPrototype() string {
	args := p.fn.Args()
	used := map[string]bool{}
	uniq := func(s string) string {
		if !cIdent.MatchString(s) || cKeywords[s] {
			s = "arg_" + suggestIdent(s)
		}
		base := s
		for i := 2; used[s]; i++ {
			s = fmt.Sprintf("%s_%d", base, i)
		}
		used[s] = true
		return s
	}
	var params, comments, extParams []string
	var extComments []string
	for i, a := range args {
		m := a.Type().(ir.MemRefType)
		name := a.Name
		if name == "" {
			name = fmt.Sprintf("arg%d", i)
		}
		cname := uniq(name)
		ct := CType(m.Elem.Kind)
		role := "input"
		qual := "const "
		if i >= len(p.ins) {
			role, qual = "output", ""
		}
		params = append(params, fmt.Sprintf("%s%s *%s", qual, ct, cname))
		comments = append(comments, fmt.Sprintf(" *   %-10s %s %s, %s", cname, role, eval.FormatShape(m.Shape), m.Elem.Kind))
		for d, n := range m.Shape {
			if n == ir.Dynamic {
				en := uniq(fmt.Sprintf("%s_d%d", cname, d))
				extParams = append(extParams, "int64_t "+en)
				extComments = append(extComments, fmt.Sprintf(" *   %-10s extent %d of %s", en, d, cname))
			}
		}
	}
	var b strings.Builder
	name := p.fn.SymName()
	fmt.Fprintf(&b, "/* @%s(%d inputs, %d outputs; buffers[%d], extents[%d]):\n", name, len(p.ins), len(p.outs), len(args), len(extParams))
	for _, c := range append(comments, extComments...) {
		b.WriteString(c + "\n")
	}
	b.WriteString(" */\n")
	fmt.Fprintf(&b, "void %s(%s);\n", name, strings.Join(append(params, extParams...), ", "))
	fmt.Fprintf(&b, "void %s%s(void *const *buffers, const int64_t *extents);\n", EntryPrefix, name)
	fmt.Fprintf(&b, "int %s%s(const int64_t *extents);\n", CheckPrefix, name)
	return b.String()
}
