package metal_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	geval "github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/emit/metal"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

// This file builds and runs the C++ programs that execute emitted
// kernels on the emulation (emu/metal_emu.h): a harness includes .metal
// files, each in a namespace of its own, and a trampoline per kernel; a
// plan (emu/harness.h) says which buffers to allocate and which kernels
// to launch, as a host program following a launch description would.

// cxxFlags compile a harness: C++17 with threads, wrapping integer
// arithmetic (as the GPU does), AddressSanitizer for the bounds of every
// buffer and UBSan for misaligned vector accesses. -O0: optimising the
// kernels took longer than the tests spend running them unoptimised.
var cxxFlags = []string{"-std=c++17", "-O0", "-pthread", "-fwrapv", "-Wall", "-Wno-attributes",
	"-Wno-unused-variable", "-Wno-unused-but-set-variable", "-Wno-unused-function",
	"-fsanitize=address,alignment", "-fno-sanitize-recover=all"}

// requireCompiler returns g++, or fails the test with how to install it.
func requireCompiler(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("g++")
	if err != nil {
		t.Fatalf("the Metal emulation tests compile the kernels as C++17 with g++, which is missing: apt-get install g++")
	}
	return p
}

// unit is one .metal text of a harness, its kernels in namespace ns.
type unit struct {
	ns      string
	file    string // the .metal file's name in the build directory
	text    string
	kernels []*metal.KernelInfo
}

// builtinField maps the attribute of a built-in parameter to the field
// of tf_emu::ids holding it.
var builtinField = map[string]string{
	"threadgroup_position_in_grid":   "t.gid",
	"thread_position_in_threadgroup": "t.lid",
	"thread_index_in_simdgroup":      "t.simd_lane",
	"simdgroup_index_in_threadgroup": "t.simd_id",
	"threads_per_threadgroup":        "t.tg_size",
	"threadgroups_per_grid":          "t.ngroups",
}

// staticPrefix is the mangled prefix of the static locals of function
// ns::name: _ZZN2ns4nameE.
func staticPrefix(ns, name string) string {
	return fmt.Sprintf("_ZZN%d%s%d%sE", len(ns), ns, len(name), name)
}

// translationUnit writes the C++ text including units.
func translationUnit(units []unit, table string) string {
	var sb strings.Builder
	sb.WriteString("#include \"harness.h\"\n\n")
	for _, u := range units {
		fmt.Fprintf(&sb, "namespace %s {\n#include \"%s\"\n}  // namespace %s\n\n", u.ns, u.file, u.ns)
	}
	var entries []string
	for _, u := range units {
		for _, k := range u.kernels {
			var args []string
			for i, p := range k.Parameters {
				switch p.Kind {
				case "buffer":
					args = append(args, fmt.Sprintf("(%s)a.ptr(%d)", p.Type, i))
				case "extent":
					args = append(args, fmt.Sprintf("a.u32(%d)", i))
				default:
					args = append(args, builtinField[p.Attribute])
				}
			}
			fn := "call_" + u.ns + "_" + k.Name
			fmt.Fprintf(&sb, "static void %s(const tf_emu::args& a, const tf_emu::ids& t) {\n  %s::%s(%s);\n}\n",
				fn, u.ns, k.Name, strings.Join(args, ", "))
			entries = append(entries, fmt.Sprintf("  {\"%s::%s\", \"%s\", %s},\n", u.ns, k.Name, staticPrefix(u.ns, k.Name), fn))
		}
	}
	fmt.Fprintf(&sb, "\nextern const tf_emu::kernel_entry %s[] = {\n%s  {nullptr, nullptr, nullptr}};\n", table, strings.Join(entries, ""))
	return sb.String()
}

// buildHarness compiles a program running the kernels of units, spread
// over `parts` translation units compiled at the same time.
func buildHarness(t testing.TB, dir string, units []unit, parts int) string {
	t.Helper()
	gxx := requireCompiler(t)
	emu, err := filepath.Abs("emu")
	require.NoError(t, err)
	for _, u := range units {
		require.NoError(t, os.WriteFile(filepath.Join(dir, u.file), []byte(u.text), 0o644))
	}
	parts = max(1, min(parts, len(units)))
	var tables []string
	var objects []string
	var sources []string
	for p := 0; p < parts; p++ {
		var mine []unit
		for i, u := range units {
			if i%parts == p {
				mine = append(mine, u)
			}
		}
		table := fmt.Sprintf("tf_kernels_%d", p)
		tables = append(tables, table)
		src := filepath.Join(dir, fmt.Sprintf("part%d.cpp", p))
		require.NoError(t, os.WriteFile(src, []byte(translationUnit(mine, table)), 0o644))
		sources = append(sources, src)
		objects = append(objects, strings.TrimSuffix(src, ".cpp")+".o")
	}
	var main strings.Builder
	main.WriteString("#include \"harness.h\"\n\n")
	for _, tb := range tables {
		fmt.Fprintf(&main, "extern const tf_emu::kernel_entry %s[];\n", tb)
	}
	main.WriteString("\nint main(int argc, char** argv) {\n  std::vector<tf_emu::kernel_entry> all;\n")
	for _, tb := range tables {
		fmt.Fprintf(&main, "  for (const tf_emu::kernel_entry* k = %s; k->name; ++k) all.push_back(*k);\n", tb)
	}
	main.WriteString("  all.push_back({nullptr, nullptr, nullptr});\n  return tf_emu::run_plan(argc, argv, all.data());\n}\n")
	mainSrc := filepath.Join(dir, "main.cpp")
	require.NoError(t, os.WriteFile(mainSrc, []byte(main.String()), 0o644))
	sources = append(sources, mainSrc)
	objects = append(objects, filepath.Join(dir, "main.o"))

	// the emulation's headers once, precompiled (g++ finds
	// dir/harness.h.gch before emu/harness.h), then the parts two at a time
	pch := append(append([]string{}, cxxFlags...), "-x", "c++-header", filepath.Join(emu, "harness.h"), "-o", filepath.Join(dir, "harness.h.gch"))
	if out, err := exec.Command(gxx, pch...).CombinedOutput(); err != nil {
		t.Fatalf("g++ harness.h: %v\n%s", err, out)
	}
	errs := make([]error, len(sources))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i := range sources {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			args := append(append([]string{}, cxxFlags...), "-I", dir, "-I", emu, "-c", sources[i], "-o", objects[i])
			if out, err := exec.Command(gxx, args...).CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("g++ %s: %v\n%s", filepath.Base(sources[i]), err, out)
			}
		}(i)
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	bin := filepath.Join(dir, "harness")
	args := append(append([]string{}, cxxFlags...), "-o", bin)
	args = append(args, objects...)
	out, err := exec.Command(gxx, args...).CombinedOutput()
	require.NoError(t, err, "linking the harness:\n%s", out)
	return bin
}

// ---------------------------------------------------------------------------
// Raw buffers

// encode writes a tensor's elements as the device holds them, little
// endian.
func encode(x *geval.Tensor) []byte {
	size := int(x.Elem.ByteSize())
	out := make([]byte, len(x.Data)*size)
	for i, v := range x.Data {
		var bits uint64
		switch {
		case x.Elem.IsFloat():
			bits, _ = numeric.ToBits(v, x.Elem)
		default:
			bits = uint64(int64(v))
		}
		for b := 0; b < size; b++ {
			out[i*size+b] = byte(bits >> (8 * b))
		}
	}
	return out
}

// decode reads elements of kind k written by a kernel.
func decode(data []byte, k ir.ElemKind, shape []int64) *geval.Tensor {
	x := geval.NewTensor(k, shape)
	size := int(k.ByteSize())
	for i := range x.Data {
		var bits uint64
		for b := 0; b < size; b++ {
			bits |= uint64(data[i*size+b]) << (8 * b)
		}
		switch {
		case k.IsFloat():
			x.Data[i], _ = numeric.FromBits(bits, k)
		case k == ir.I1:
			x.Data[i] = float64(bits & 1)
		case k.IsUnsigned():
			x.Data[i] = float64(bits)
		default:
			shift := 64 - 8*size
			x.Data[i] = float64(int64(bits<<shift) >> shift)
		}
	}
	return x
}

// ---------------------------------------------------------------------------
// Plans

// runOptions adjust a run of a function.
type runOptions struct {
	// threads, when set, replaces each launch's threads per threadgroup.
	threads func(described int64) int64
	// updated marks the inputs the function updates in place
	// (graph.index_copy's destination): passed as inout buffers and read
	// back into the input tensors.
	updated []bool
}

// runFunction runs the launches of fl, whose kernels are in namespace ns
// of the harness bin, on inputs; outShapes are the shapes of its outputs.
// The plan is derived from the launch description alone, as a host
// program would: extents from the arguments, sizes from the expressions.
func runFunction(bin, dir, ns string, desc *metal.LaunchDescription, fl *metal.FunctionLaunch,
	inputs []*geval.Tensor, outShapes [][]int64, opts runOptions) ([]*geval.Tensor, error) {
	shapes := map[string][]int64{}
	var ins, outs []metal.Argument
	for _, a := range fl.Arguments {
		if a.Role == "input" {
			if len(ins) >= len(inputs) {
				return nil, fmt.Errorf("more inputs than given")
			}
			shapes[a.Name] = inputs[len(ins)].Shape
			ins = append(ins, a)
		} else {
			shapes[a.Name] = outShapes[len(outs)]
			outs = append(outs, a)
		}
	}
	// the extents the kernels assume agree, as a host must check them
	for _, c := range fl.Checks {
		if err := c.Check(shapes); err != nil {
			return nil, err
		}
	}
	env := map[string]int64{}
	for _, e := range fl.Extents {
		s, ok := shapes[e.Argument]
		if !ok || e.Axis >= int64(len(s)) {
			return nil, fmt.Errorf("extent %s of unknown argument %s", e.Name, e.Argument)
		}
		env[e.Name] = s[e.Axis]
	}
	// the outputs' shapes as the description gives them
	for _, a := range outs {
		for d, text := range a.Dims {
			n, err := metal.EvalExpr(text, env)
			if err != nil {
				return nil, fmt.Errorf("output %s: %v", a.Name, err)
			}
			if n != shapes[a.Name][d] {
				return nil, fmt.Errorf("output %s: dimension %d is %s = %d, the reference has %d", a.Name, d, text, n, shapes[a.Name][d])
			}
		}
	}
	var plan strings.Builder
	for i, a := range ins {
		path := filepath.Join(dir, "in_"+a.Name+".bin")
		data := encode(inputs[i])
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return nil, err
		}
		mode := "in"
		if i < len(opts.updated) && opts.updated[i] {
			mode = "inout"
		}
		fmt.Fprintf(&plan, "buffer %s %d %s %s\n", a.Name, len(data), mode, path)
	}
	kinds := map[string]ir.ElemKind{}
	for _, a := range outs {
		k := elemKindOf(a.DType)
		kinds[a.Name] = k
		n := int64(1)
		for _, d := range shapes[a.Name] {
			n *= d
		}
		fmt.Fprintf(&plan, "buffer %s %d out %s\n", a.Name, n*k.ByteSize(), filepath.Join(dir, "out_"+a.Name+".bin"))
	}
	if fl.ArenaBytes > 0 {
		fmt.Fprintf(&plan, "buffer @arena %d\n", fl.ArenaBytes)
	}
	for _, im := range fl.Intermediates {
		bytes, err := metal.EvalExpr(im.Bytes, env)
		if err != nil {
			return nil, err
		}
		if im.ArenaOffset != nil {
			fmt.Fprintf(&plan, "view %s @arena %d %d\n", im.Name, *im.ArenaOffset, bytes)
		} else {
			fmt.Fprintf(&plan, "buffer %s %d\n", im.Name, bytes)
		}
	}
	for _, k := range desc.Kernels {
		fmt.Fprintf(&plan, "threadgroup-memory %s::%s %d\n", ns, k.Name, k.ThreadgroupMemoryBytes)
	}
	for _, l := range fl.Launches {
		groups, err := metal.EvalExpr(l.Threadgroups, env)
		if err != nil {
			return nil, err
		}
		threads, err := metal.EvalExpr(l.ThreadsPerThreadgroup, env)
		if err != nil {
			return nil, err
		}
		if opts.threads != nil {
			threads = opts.threads(threads)
		}
		fmt.Fprintf(&plan, "launch %s::%s %d %d\n", ns, l.Kernel, groups, threads)
		bs := append([]metal.Binding(nil), l.Buffers...)
		sort.Slice(bs, func(i, j int) bool { return bs[i].Index < bs[j].Index })
		for _, b := range bs {
			if b.Buffer != "" {
				fmt.Fprintf(&plan, "arg buffer %s\n", b.Buffer)
				continue
			}
			v, err := metal.EvalExpr(b.Value, env)
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(&plan, "arg uint %d\n", v)
		}
		plan.WriteString("end\n")
	}
	planPath := filepath.Join(dir, "plan.txt")
	if err := os.WriteFile(planPath, []byte(plan.String()), 0o644); err != nil {
		return nil, err
	}
	if err := runPlan(bin, planPath); err != nil {
		return nil, err
	}
	for i, a := range ins {
		if i < len(opts.updated) && opts.updated[i] {
			data, err := os.ReadFile(filepath.Join(dir, "in_"+a.Name+".bin"))
			if err != nil {
				return nil, err
			}
			inputs[i].Data = decode(data, inputs[i].Elem, inputs[i].Shape).Data
		}
	}
	var results []*geval.Tensor
	for _, a := range outs {
		data, err := os.ReadFile(filepath.Join(dir, "out_"+a.Name+".bin"))
		if err != nil {
			return nil, err
		}
		results = append(results, decode(data, kinds[a.Name], shapes[a.Name]))
	}
	return results, nil
}

// runPlan runs the harness on a plan; a failure carries its output.
func runPlan(bin, plan string) error {
	cmd := exec.Command(bin, plan)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// leak checking is beside the point (and slow) for a test harness
	cmd.Env = append(os.Environ(), "ASAN_OPTIONS=detect_leaks=0")
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%v:\n%s", err, out.String())
	}
	return nil
}

// elemKindOf maps a launch description's dtype back to an element kind.
func elemKindOf(dtype string) ir.ElemKind {
	for _, k := range ir.ElemKinds() {
		if dtypeOf(k) == dtype {
			return k
		}
	}
	return ir.InvalidElem
}

// dtypeOf spells kind k as launch descriptions do (see types.go).
func dtypeOf(k ir.ElemKind) string {
	switch k {
	case ir.F32, ir.F16:
		return "float" + strconv.Itoa(k.BitWidth())
	case ir.BF16:
		return "bfloat16"
	case ir.F8E4M3FN:
		return "float8_e4m3fn"
	case ir.F8E5M2:
		return "float8_e5m2"
	case ir.I1:
		return "bool"
	case ir.I8, ir.I16, ir.I32, ir.I64:
		return "int" + strconv.Itoa(k.BitWidth())
	case ir.UI8, ir.UI16, ir.UI32:
		return "uint" + strconv.Itoa(k.BitWidth())
	}
	return k.String()
}
