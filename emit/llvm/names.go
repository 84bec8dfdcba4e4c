package llvmemit

import (
	"fmt"
	"strings"
)

// Names in the emitted module. LLVM reads `@name` and `%name` unquoted
// when the name is [-a-zA-Z$._][-a-zA-Z$._0-9]* and takes a name of
// digits alone for a number, so a name that the IR allows but LLVM does
// not (`%0`, `%0.d0`, `@1_k0`) gets a leading '_'. Ordinary names are
// kept as they are.
//
// Global names are handed out once per module, in this order: the
// functions (a name the module links against, such as main, tf_alloc or
// expf, gets a suffix), then each kernel with the names derived from it
// (k, k.grid, k.args, k.task: the kernel's name gets a suffix until all
// four are free), then the entry points (f.entry).

// llvmIdent turns an IR name into a name LLVM reads unquoted: other
// characters than [-a-zA-Z$._0-9] become '_'.
func llvmIdent(s string) string {
	if s == "" {
		return "_"
	}
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '$' || c == '.' || c == '_') {
			b[i] = '_'
		}
	}
	if c := b[0]; c >= '0' && c <= '9' {
		return "_" + string(b)
	}
	return string(b)
}

// reservedGlobals are the names the emitted module declares or links
// against: the runtime, the C library functions the code calls and the
// C library and program entry points of the programs it is linked into.
var reservedGlobals = map[string]bool{}

func init() {
	for _, n := range []string{
		"main", ParallelForName, AllocName, FreeName, EntriesName, NumEntriesName,
		// the C math library (called as double functions, and their float forms)
		"exp", "exp2", "expm1", "log", "log2", "log1p", "pow", "erfc", "erf", "tanh", "sin", "cos", "sqrt", "fabs",
		"floor", "ceil", "round", "trunc", "fmod", "fma", "fmin", "fmax", "tan", "atan", "atan2", "asin", "acos",
		"sinh", "cosh", "cbrt", "hypot", "exp10", "logb", "ldexp", "frexp", "nearbyint", "rint", "lround",
		// the C library the runtime and the run driver call
		"malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign", "memcpy", "memmove", "memset",
		"memcmp", "strlen", "strcmp", "strncmp", "strcpy", "strerror", "strtol", "strtoll", "strtoul", "strtod",
		"atoi", "atol", "abort", "exit", "_exit", "atexit", "getenv", "printf", "fprintf", "snprintf", "sprintf",
		"puts", "fputs", "fputc", "putchar", "fopen", "fclose", "fread", "fwrite", "fflush", "perror", "open",
		"close", "read", "write", "lseek", "mmap", "munmap", "fstat", "stat", "clock_gettime", "time",
		"nanosleep", "sysconf", "errno", "stdin", "stdout", "stderr",
	} {
		reservedGlobals[n] = true
		if strings.ContainsAny(n[:1], "abcdefghijklmnopqrstuvwxyz") && !strings.HasPrefix(n, "tf_") {
			reservedGlobals[n+"f"] = true // expf, logf, ...
		}
	}
}

// reservedPrefix reports whether a global name belongs to LLVM, the
// runtime or the C implementation: llvm.*, tf_*, pthread_*, __*.
func reservedPrefix(s string) bool {
	for _, p := range []string{"llvm.", "tf_", "pthread_", "__"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// globalNames hands out the module's global names.
type globalNames map[string]bool

// claim returns base, or base with the first free suffix `_1`, `_2`, ...,
// such that base+s is free for every s of suffixes (the derived names),
// and takes them all. A base with a reserved prefix gets a 'u' in front.
func (g globalNames) claim(base string, suffixes ...string) string {
	base = llvmIdent(base)
	if reservedPrefix(base) {
		base = "u" + base // no suffix frees such a name
	}
	free := func(name string) bool {
		for _, s := range append([]string{""}, suffixes...) {
			n := name + s
			if g[n] || reservedGlobals[n] || reservedPrefix(n) {
				return false
			}
		}
		return true
	}
	name := base
	for i := 1; !free(name); i++ {
		name = fmt.Sprintf("%s_%d", base, i)
	}
	for _, s := range append([]string{""}, suffixes...) {
		g[name+s] = true
	}
	return name
}
