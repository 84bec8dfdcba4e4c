package randprog

import (
	"math/rand/v2"

	"github.com/tensorforge/tensorforge/ir"
)

// adversarialValueNames are value names that are keywords or builtins of
// an emitter's target language, digits, or names emitters use for what
// they generate.
var adversarialValueNames = []string{
	"0", "1", "7", "42", "00",
	// C++ and Metal
	"int", "new", "class", "template", "float", "half", "uint", "kernel", "device", "thread",
	"constant", "this", "std", "uint32_t", "NAN", "INFINITY", "main", "auto", "xor",
	// Python, Triton and the launchers
	"lambda", "def", "None", "pass", "tl", "triton", "torch", "libdevice", "str", "len",
	"BLOCK", "CONFIGS", "_tensor", "args", "stream", "fns", "cfg", "grid",
	// names emitters generate
	"row_begin", "row_end", "ctx", "begin", "end", "pid", "offs", "mask", "gid", "lid", "tid",
	"unit", "t", "r", "i", "arg0", "result0", "v0", "tf_smem", "sram", "partial", "exp_tile",
	"cb_wait_front", "wait_front", "get_arg_val",
	// characters the IR allows
	"a-b", "$x", "x.1",
}

// derivedSuffixes make a name that an emitter might derive from another.
var derivedPatterns = []func(string) string{
	func(s string) string { return s + "_addr" },
	func(s string) string { return s + "_args" },
	func(s string) string { return "cb_" + s },
	func(s string) string { return s + "_src" },
	func(s string) string { return s + ".d0" },
	func(s string) string { return s + "_d0" },
	func(s string) string { return s + "_1" },
	func(s string) string { return "v" + s },
}

// adversarialFuncNames are function names that collide with what the
// emitters generate or link against.
var adversarialFuncNames = []string{
	"main", "f_k0", "g", "g_k0.task", "g_k0", "lambda", "int", "kernel", "expf", "tf_alloc",
	"0", "1_k0", "torch", "f0.entry", "class", "llvm.foo", "def", "_x", "malloc", "tl", "f0", "f0_k0",
}

// nameAdversarially renames the functions of m and the arguments and op
// results of their bodies, with names unique in each function.
func nameAdversarially(r *rand.Rand, m ir.Module) {
	usedFuncs := map[string]bool{}
	for _, f := range m.Funcs() {
		name := f.SymName()
		for tries := 0; tries < 8; tries++ {
			if n := adversarialFuncNames[r.IntN(len(adversarialFuncNames))]; !usedFuncs[n] {
				name = n
				break
			}
		}
		for usedFuncs[name] {
			name += "_"
		}
		usedFuncs[name] = true
		f.SetAttr("sym_name", ir.StringAttr(name))

		body := f.Body()
		var values []*ir.Value
		values = append(values, body.Args...)
		for op := body.First(); op != nil; op = op.Next() {
			values = append(values, op.Results()...)
		}
		used := map[string]bool{}
		var prev string
		for _, v := range values {
			var name string
			switch k := r.IntN(8); {
			case k == 0:
				name = "" // the printer numbers it
			case k <= 2 && prev != "":
				name = derivedPatterns[r.IntN(len(derivedPatterns))](prev)
			default:
				name = adversarialValueNames[r.IntN(len(adversarialValueNames))]
			}
			if name != "" && used[name] {
				name = ""
			}
			if name != "" {
				used[name] = true
				prev = name
			}
			v.Name = name
		}
	}
}
