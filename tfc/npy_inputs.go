package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/emit/cpurt"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

// inputValue is the value of one argument of the function run: an array
// of a .npy or .npz file, or a tensor --random-inputs made.
type inputValue struct {
	spec   string // the flag that gave it, for messages: "--input x=a.npy"
	arr    *npyArray
	tensor *eval.Tensor
	shape  []int64
	elem   ir.ElemKind // the argument's
	// direct: the file's bytes are the argument's storage, row-major, so
	// `tfc run` hands the program the file region itself.
	direct bool
}

// checkDtype decides whether the array can be the value of an argument of
// kind k: its dtype must hold k's values exactly (index takes int64),
// bf16 and f8 arguments take float32 arrays (rounded to nearest even: the
// form tfc writes them, NumPy having no such dtypes); anything else needs
// --cast-inputs.
func checkDtype(a *npyArray, k ir.ElemKind, cast bool, what string) (direct bool, err error) {
	nat, ok := a.natural()
	switch {
	case ok && (nat == k || (k == ir.Index && nat == ir.I64)):
		return !a.big && !(a.fortran && len(a.shape) > 1), nil
	case a.kind == 'f' && a.size == 4 && (k == ir.BF16 || k == ir.F8E4M3FN || k == ir.F8E5M2):
		return false, nil
	case cast:
		return false, nil
	}
	hint := fmt.Sprintf("give a %s array or pass --cast-inputs to convert the values", npyDtypeOf(k))
	if k == ir.BF16 || k == ir.F8E4M3FN || k == ir.F8E5M2 {
		hint = fmt.Sprintf("NumPy has no %s dtype: give the values as a float32 array (rounded to %s), or pass --cast-inputs to convert other dtypes", k, k)
	}
	return false, fmt.Errorf("%s is %s, but %s holds %s (%s)", what, k, a.source, a.dtypeName(), hint)
}

// npyDtypeOf is the NumPy dtype that holds kind k.
func npyDtypeOf(k ir.ElemKind) string {
	switch k {
	case ir.F64:
		return "float64"
	case ir.F32:
		return "float32"
	case ir.F16:
		return "float16"
	case ir.I1:
		return "bool"
	case ir.I8:
		return "int8"
	case ir.I16:
		return "int16"
	case ir.I32:
		return "int32"
	case ir.I64, ir.Index:
		return "int64"
	case ir.UI8:
		return "uint8"
	case ir.UI16:
		return "uint16"
	case ir.UI32:
		return "uint32"
	}
	return "float32"
}

// tensorOf returns the value as a tensor of the argument's type: the
// array's values rounded to a float kind, or checked to be exact for an
// integer one.
func (v *inputValue) tensorOf() (*eval.Tensor, error) {
	if v.tensor != nil {
		return v.tensor, nil
	}
	// the values are held as float64s
	if d := checkAlloc(ir.Location{}, fmt.Sprintf("%s: the value", v.spec), v.shape, 8); d != nil {
		return nil, errors.New(d.Message)
	}
	vals, err := v.arr.values()
	if err != nil {
		return nil, err
	}
	k := v.elem
	for i, x := range vals {
		if k.IsFloat() {
			vals[i] = numeric.RoundTo(x, k)
			continue
		}
		r := numeric.RoundTo(x, k)
		if r != x || math.IsNaN(x) {
			return nil, fmt.Errorf("%s: element %d (%v) is not a value of %s", v.spec, i, x, k)
		}
	}
	return &eval.Tensor{Shape: append([]int64(nil), v.shape...), Elem: k, Data: vals}, nil
}

// region returns the value as a file region of the argument's storage,
// writing a file in dir when the value is not one already.
func (v *inputValue) region(dir string, i int) (cpurt.Region, error) {
	if v.direct && v.arr.path != "" {
		return cpurt.Region{Path: v.arr.path, Offset: v.arr.offset, Size: v.arr.nbytes()}, nil
	}
	var data []byte
	if v.direct {
		data = v.arr.data
	} else {
		t, err := v.tensorOf()
		if err != nil {
			return cpurt.Region{}, err
		}
		if data, err = cpurt.Encode(t, v.elem); err != nil {
			return cpurt.Region{}, fmt.Errorf("%s: %v", v.spec, err)
		}
	}
	path := fmt.Sprintf("%s/in%d.bin", dir, i)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return cpurt.Region{}, err
	}
	return cpurt.Region{Path: path, Size: int64(len(data))}, nil
}

// readInputs reads the --input and --inputs flags of fn's arguments
// (named without '%'): NAME=FILE.npy, or FILE.npz whose arrays are named
// after the arguments. An argument given twice is an error.
func readInputs(fn ir.Func, e *execOptions) ([]*inputValue, *ir.Diagnostic) {
	args := fn.Args()
	index := map[string]int{}
	var names []string
	for i, a := range args {
		index[a.Name] = i
		names = append(names, a.Name)
	}
	values := make([]*inputValue, len(args))
	bind := func(spec, name string, a *npyArray) *ir.Diagnostic {
		i, known := index[name]
		if !known {
			return ir.Errorf(ir.Location{}, "%s: @%s has no argument %%%s (its arguments: %s)", spec, fn.SymName(), name, "%"+strings.Join(names, ", %"))
		}
		if prev := values[i]; prev != nil {
			return ir.Errorf(ir.Location{}, "argument %%%s of @%s is given twice: by %s and by %s", name, fn.SymName(), prev.spec, spec)
		}
		tt, ok := args[i].Type().(ir.TensorType)
		if !ok {
			return ir.Errorf(ir.Location{}, "%s: argument %%%s has type %s, not a tensor", spec, name, args[i].Type())
		}
		what := fmt.Sprintf("argument %%%s of @%s", name, fn.SymName())
		direct, err := checkDtype(a, tt.Elem.Kind, e.castInputs, what)
		if err != nil {
			return ir.Errorf(ir.Location{}, "%s: %v", spec, err)
		}
		if !shapeFits(a.shape, tt.Shape) {
			return ir.Errorf(ir.Location{}, "%s: %s has shape %s, which does not match its type %s", spec, a.source, formatNpyShape(a.shape), tt)
		}
		values[i] = &inputValue{spec: spec, arr: a, shape: a.shape, elem: tt.Elem.Kind, direct: direct}
		return nil
	}
	for _, in := range e.inputs {
		spec := "--" + in.flag + " " + in.value
		name, path, ok := strings.Cut(in.value, "=")
		if !ok && strings.HasSuffix(in.value, ".npz") {
			order, arrays, err := readNpz(in.value)
			if err != nil {
				return nil, ir.Errorf(ir.Location{}, "%s: %v", spec, err)
			}
			for _, n := range order {
				if d := bind(fmt.Sprintf("%s (array '%s')", spec, n), n, arrays[n]); d != nil {
					return nil, d
				}
			}
			continue
		}
		name = strings.TrimPrefix(name, "%")
		if !ok || name == "" || path == "" || in.flag == "inputs" {
			return nil, ir.Errorf(ir.Location{}, "--%s takes NAME=FILE.npy or FILE.npz, not '%s'", in.flag, in.value)
		}
		if _, known := index[name]; !known {
			return nil, ir.Errorf(ir.Location{}, "%s: @%s has no argument %%%s (its arguments: %s)", spec, fn.SymName(), name, "%"+strings.Join(names, ", %"))
		}
		a, err := readNpyFile(path)
		if err != nil {
			return nil, ir.Errorf(ir.Location{}, "%s: %v", spec, err)
		}
		if d := bind(spec, name, a); d != nil {
			return nil, d
		}
	}
	return values, nil
}

// shapeFits reports whether a concrete shape fits a type's, `?` matching
// any extent.
func shapeFits(shape, typ []int64) bool {
	if len(shape) != len(typ) {
		return false
	}
	for i, d := range typ {
		if d != ir.Dynamic && d != shape[i] {
			return false
		}
	}
	return true
}

// fillRandom gives the arguments without a value the tensors of
// --random-inputs, after checking that they fit in memory.
func fillRandom(fn ir.Func, values []*inputValue, e *execOptions) *ir.Diagnostic {
	args := fn.Args()
	missing := false
	for _, v := range values {
		missing = missing || v == nil
	}
	if !missing {
		return nil
	}
	if e.seed == "" {
		for i, v := range values {
			if v == nil {
				return ir.Errorf(ir.Location{}, "no value for argument %%%s of @%s: give --input %s=FILE.npy or --random-inputs SEED", args[i].Name, fn.SymName(), args[i].Name)
			}
		}
	}
	seed, err := strconv.ParseInt(e.seed, 0, 64)
	if err != nil {
		return ir.Errorf(ir.Location{}, "--random-inputs takes an integer seed, not '%s'", e.seed)
	}
	for i, a := range args {
		tt, ok := a.Type().(ir.TensorType)
		if !ok || values[i] != nil {
			continue
		}
		shape := make([]int64, len(tt.Shape))
		for j, d := range tt.Shape {
			if d == ir.Dynamic {
				d = randomInputExtent
			}
			shape[j] = d
		}
		if n, ok := ir.NumElements(shape); ok && n > 1<<31 {
			continue // the interpreter refuses it below
		}
		if d := checkAlloc(fn.Loc, fmt.Sprintf("the random value of argument %%%s", a.Name), shape, 8); d != nil {
			return d
		}
	}
	random, err := eval.RandomInputs(fn, seed, 1, randomInputExtent)
	if err != nil {
		return errorDiagAt(fn.Loc, err)
	}
	for i, v := range values {
		if v == nil {
			values[i] = &inputValue{spec: "--random-inputs " + e.seed, tensor: random[i], shape: random[i].Shape, elem: random[i].Elem}
		}
	}
	return nil
}

// memoryLimit is what one buffer may take: the memory available to the
// process (MemAvailable of /proc/meminfo), or 0 when unknown.
func memoryLimit() int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemAvailable:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					return kb * 1024
				}
			}
		}
	}
	return 0
}

// checkAlloc refuses a buffer of the given shape and element size that
// cannot be allocated: more bytes than int64 holds, or than the memory
// available.
func checkAlloc(loc ir.Location, what string, shape []int64, elemBytes int64) *ir.Diagnostic {
	n, ok := ir.NumElements(shape)
	if !ok || n > math.MaxInt64/elemBytes {
		return ir.Errorf(loc, "%s of shape %s is too large: its size in bytes does not fit in 64 bits", what, eval.FormatShape(shape))
	}
	if limit := memoryLimit(); limit > 0 && n*elemBytes > limit {
		return ir.Errorf(loc, "%s of shape %s needs %s (%d elements of %d bytes), more than the %s of memory available", what,
			eval.FormatShape(shape), humanBytes(n*elemBytes), n, elemBytes, humanBytes(limit))
	}
	return nil
}

func humanBytes(b int64) string {
	switch {
	case b >= 1<<40:
		return fmt.Sprintf("%.1f TiB", float64(b)/(1<<40))
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", b)
}

// checkValueSizes refuses a function (after the pipeline) of which a value
// with a static shape cannot be allocated by the interpreter, which holds
// every element as a float64.
func checkValueSizes(fn ir.Func) *ir.Diagnostic {
	var d *ir.Diagnostic
	fn.Walk(func(op *ir.Operation) bool {
		for _, r := range op.Results() {
			tt, ok := r.Type().(ir.TensorType)
			if !ok || !staticShape(tt.Shape) {
				continue
			}
			if d = checkAlloc(op.Loc, fmt.Sprintf("'%s' op: its result", op.Name()), tt.Shape, 8); d != nil {
				return false
			}
		}
		return true
	})
	return d
}

func staticShape(s []int64) bool {
	for _, d := range s {
		if d == ir.Dynamic {
			return false
		}
	}
	return true
}
