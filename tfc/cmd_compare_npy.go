package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

func init() {
	registerCommand(&command{
		name:    "compare-npy",
		usage:   "tfc compare-npy A B [--atol X] [--rtol X] [--ulp N] [--elem TYPE]",
		summary: "compare two .npy files (or every .npy file of two result directories) within a tolerance",
		run:     compareNpyCommand,
	})
}

// npyBound is when two elements a (from A) and b (from B) match:
// |a - b| <= atol + rtol * |b| (numpy.isclose), or they are at most ulp
// units in the last place apart in the element type measured. NaN
// matches NaN, an infinity only itself.
type npyBound struct {
	atol, rtol, ulp float64
}

// defaultTolerance is the bound when no flag names one: torch.testing's
// assert_close defaults per element type (f32: rtol 1.3e-6, atol 1e-5),
// which accept the rounding a fused kernel or another backend may differ
// by, and exact equality for integers.
func defaultTolerance(k ir.ElemKind) npyBound {
	switch k {
	case ir.F64:
		return npyBound{atol: 1e-7, rtol: 1e-7}
	case ir.F32:
		return npyBound{atol: 1e-5, rtol: 1.3e-6}
	case ir.F16:
		return npyBound{atol: 1e-5, rtol: 1e-3}
	case ir.BF16:
		return npyBound{atol: 1e-5, rtol: 1.6e-2}
	case ir.F8E4M3FN:
		return npyBound{atol: 1e-5, rtol: 0.125}
	case ir.F8E5M2:
		return npyBound{atol: 1e-5, rtol: 0.25}
	}
	return npyBound{}
}

// String words the bound for messages: "atol 1e-05, rtol 1.3e-06".
func (b npyBound) String(k ir.ElemKind) string {
	var parts []string
	if b.atol != 0 || b.rtol != 0 {
		parts = append(parts, fmt.Sprintf("atol %s, rtol %s", formatErr(b.atol), formatErr(b.rtol)))
	}
	if b.ulp != 0 || len(parts) == 0 {
		parts = append(parts, fmt.Sprintf("%s ULP of %s", formatULP(b.ulp), k))
	}
	return strings.Join(parts, " or ")
}

// compareNpyCommand is
//
//	tfc compare-npy A B [--atol X] [--rtol X] [--ulp N] [--elem TYPE]
//
// A and B are .npy files, or directories whose .npy files are compared by
// name (the results of `tfc run` and `tfc interpret`). Elements match
// within npyBound: by default the tolerance of defaultTolerance for the
// element type measured (TYPE, or the files' own: `--elem bf16` for bf16
// results, which .npy holds as float32); --atol, --rtol and --ulp replace
// it (unset ones are 0). For every file it prints the elements compared,
// the largest errors (absolute, relative, in ULPs); when some
// element is beyond the bound, the worst one with both values and the
// count beyond, and exits with status 1.
func compareNpyCommand(args []string, sio *stdio) int {
	fs := sio.newFlagSet()
	var atol, rtol, ulp, elem string
	fs.stringVar(&atol, "atol", "X", "the absolute error allowed: |a - b| <= atol + rtol * |b| (default: by element type, f32 1e-05)")
	fs.stringVar(&rtol, "rtol", "X", "the error allowed relative to B's element (default: by element type, f32 1.3e-06, f16 1e-03, bf16 1.6e-02)")
	fs.stringVar(&ulp, "ulp", "N", "also accept elements at most N units in the last place apart (default 0); --ulp alone compares in ULPs only")
	fs.stringVar(&elem, "elem", "TYPE", "measure ULPs, and pick the default tolerance, in this element type (default: the files')")
	positional, diag := fs.parse(args)
	fail := func(format string, a ...any) int {
		printDiagnostics(sio.err, nil, []*ir.Diagnostic{ir.Errorf(ir.Location{}, format, a...)})
		return exitFailure
	}
	if diag != nil {
		printDiagnostics(sio.err, nil, []*ir.Diagnostic{diag})
		return exitFailure
	}
	if len(positional) != 2 {
		return fail("`tfc compare-npy` takes two files or directories, got %d", len(positional))
	}
	var given npyBound
	for _, f := range []struct {
		name, text string
		into       *float64
	}{{"atol", atol, &given.atol}, {"rtol", rtol, &given.rtol}, {"ulp", ulp, &given.ulp}} {
		if f.text == "" {
			continue
		}
		v, err := strconv.ParseFloat(f.text, 64)
		if err != nil || v < 0 || math.IsNaN(v) {
			return fail("--%s takes a non-negative number, not '%s'", f.name, f.text)
		}
		*f.into = v
	}
	explicit := atol != "" || rtol != "" || ulp != ""
	kind := ir.InvalidElem
	if elem != "" {
		k, ok := ir.ParseElemKind(elem)
		if !ok || k == ir.Index {
			return fail("--elem: unknown element type '%s'", elem)
		}
		kind = k
	}
	pairs, err := npyPairs(positional[0], positional[1])
	if err != nil {
		return fail("%v", err)
	}
	status := exitOK
	for _, p := range pairs {
		line, diag, err := compareNpyFiles(p[0], p[1], kind, given, explicit)
		if err != nil {
			return fail("%v", err)
		}
		if diag != nil {
			printDiagnostics(sio.err, nil, []*ir.Diagnostic{diag})
			status = exitFailure
			continue
		}
		fmt.Fprintln(sio.out, line)
	}
	return status
}

// npyPairs pairs the files to compare: a and b themselves, or the .npy
// files of two directories by name (each must be in both).
func npyPairs(a, b string) ([][2]string, error) {
	sa, err := os.Stat(a)
	if err != nil {
		return nil, fmt.Errorf("cannot open '%s': %s", a, sysError(err, "no such file or directory"))
	}
	sb, err := os.Stat(b)
	if err != nil {
		return nil, fmt.Errorf("cannot open '%s': %s", b, sysError(err, "no such file or directory"))
	}
	if !sa.IsDir() && !sb.IsDir() {
		return [][2]string{{a, b}}, nil
	}
	if !sa.IsDir() || !sb.IsDir() {
		return nil, fmt.Errorf("compare two files or two directories, not a file and a directory")
	}
	names := func(dir string) (map[string]bool, error) {
		ms, err := filepath.Glob(filepath.Join(dir, "*.npy"))
		out := map[string]bool{}
		for _, m := range ms {
			out[filepath.Base(m)] = true
		}
		return out, err
	}
	na, err := names(a)
	if err != nil {
		return nil, err
	}
	nb, err := names(b)
	if err != nil {
		return nil, err
	}
	var all []string
	for n := range na {
		all = append(all, n)
	}
	for n := range nb {
		if !na[n] {
			all = append(all, n)
		}
	}
	sort.Strings(all)
	if len(all) == 0 {
		return nil, fmt.Errorf("no .npy files in '%s' or '%s'", a, b)
	}
	var out [][2]string
	for _, n := range all {
		if !na[n] {
			return nil, fmt.Errorf("'%s' is in '%s' but not in '%s'", n, b, a)
		}
		if !nb[n] {
			return nil, fmt.Errorf("'%s' is in '%s' but not in '%s'", n, a, b)
		}
		out = append(out, [2]string{filepath.Join(a, n), filepath.Join(b, n)})
	}
	return out, nil
}

// compareNpyFiles compares two arrays element by element. It returns the
// summary line of a match, or a diagnostic naming the worst element
// beyond the bound, with notes giving the count beyond it and the largest
// errors; err is a problem reading the files.
func compareNpyFiles(a, b string, kind ir.ElemKind, given npyBound, explicit bool) (string, *ir.Diagnostic, error) {
	ta, err := eval.ReadNpy(a)
	if err != nil {
		return "", nil, fmt.Errorf("'%s': %v", a, err)
	}
	tb, err := eval.ReadNpy(b)
	if err != nil {
		return "", nil, fmt.Errorf("'%s': %v", b, err)
	}
	if !slicesEqual(ta.Shape, tb.Shape) {
		return "", nil, fmt.Errorf("'%s' has shape %s but '%s' has shape %s", a, eval.FormatShape(ta.Shape), b, eval.FormatShape(tb.Shape))
	}
	k := kind
	if k == ir.InvalidElem {
		k = ta.Elem
	}
	bound := given
	if !explicit {
		bound = defaultTolerance(k)
	}
	var (
		maxAbs, maxRel, maxULP float64
		worst, worstExcess     = -1, -1.0
		beyond                 int
	)
	for i := range ta.Data {
		x, y := ta.Data[i], tb.Data[i]
		d := numeric.ULPDiff(x, y, k)
		abs, rel := elemErrors(x, y)
		maxAbs, maxRel, maxULP = nanMax(maxAbs, abs), nanMax(maxRel, rel), nanMax(maxULP, d)
		allowed := bound.atol + bound.rtol*math.Abs(y)
		if d <= bound.ulp || abs <= allowed {
			continue
		}
		beyond++
		// the worst element is the one furthest past the bound
		excess := math.Inf(1)
		if allowed > 0 && !math.IsNaN(abs) {
			excess = abs / allowed
		} else if !math.IsNaN(d) {
			excess = d
		}
		if worst < 0 || excess > worstExcess {
			worst, worstExcess = i, excess
		}
	}
	name := filepath.Base(a)
	largest := fmt.Sprintf("largest distance %s ULP of %s, max abs error %s, max rel error %s", formatULP(maxULP), k, formatErr(maxAbs), formatErr(maxRel))
	if worst < 0 {
		return fmt.Sprintf("%s: %d elements match, %s (bound: %s)", name, len(ta.Data), largest, bound.String(k)), nil, nil
	}
	x, y := ta.Data[worst], tb.Data[worst]
	abs, rel := elemErrors(x, y)
	msg := fmt.Sprintf("%s: element %s: %v vs %v differ by %s ULP of %s (allowed %v)", name, indexString(ta.Shape, worst), x, y, formatULP(numeric.ULPDiff(x, y, k)), k, bound.ulp)
	if bound.atol != 0 || bound.rtol != 0 {
		msg = fmt.Sprintf("%s: element %s: %v vs %v differ by %s (abs), %s (rel), %s ULP of %s (allowed: %s)", name, indexString(ta.Shape, worst), x, y,
			formatErr(abs), formatErr(rel), formatULP(numeric.ULPDiff(x, y, k)), k, bound.String(k))
	}
	d := ir.Errorf(ir.Location{}, "%s", msg)
	d.AddNote(ir.Location{}, "%d of %d elements are beyond the bound; %s", beyond, len(ta.Data), largest)
	return "", d, nil
}

// elemErrors are the absolute error |a - b| and the error relative to b
// (|a - b| / |b|; 0 when both are 0, inf when only b is). Equal values,
// NaN and NaN or an infinity and itself, have no error; other pairs with
// a NaN or an infinity have an infinite one.
func elemErrors(a, b float64) (abs, rel float64) {
	if a == b || (math.IsNaN(a) && math.IsNaN(b)) {
		return 0, 0
	}
	abs = math.Abs(a - b)
	if math.IsNaN(abs) {
		abs = math.Inf(1)
	}
	if b == 0 {
		return abs, math.Inf(1)
	}
	return abs, abs / math.Abs(b)
}

// nanMax is the larger of m and v, a NaN counting as +inf.
func nanMax(m, v float64) float64 {
	if math.IsNaN(v) {
		v = math.Inf(1)
	}
	return math.Max(m, v)
}

// formatErr prints an error or a tolerance with 4 significant digits.
func formatErr(v float64) string {
	if math.IsInf(v, 1) {
		return "inf"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

func formatULP(d float64) string {
	if math.IsInf(d, 1) {
		return "inf"
	}
	return strconv.FormatFloat(d, 'g', 4, 64)
}

// indexString prints the multi-index of flat element i: `[3, 7]`.
func indexString(shape []int64, i int) string {
	idx := make([]string, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		n := int(shape[d])
		if n == 0 {
			n = 1
		}
		idx[d] = strconv.Itoa(i % n)
		i /= n
	}
	return "[" + strings.Join(idx, ", ") + "]"
}

func slicesEqual(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
