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
		usage:   "tfc compare-npy A B [--ulp N] [--elem TYPE]",
		summary: "compare two .npy files (or every .npy file of two result directories) within N ULPs",
		run:     compareNpyCommand,
	})
}

// compareNpyCommand is
//
//	tfc compare-npy A B [--ulp N] [--elem TYPE]
//
// A and B are .npy files, or directories whose .npy files are compared by
// name (the results of `tfc run` and `tfc interpret`). Values match when
// they are within N units in the last place of TYPE (default: the
// files' own element type; `--elem bf16` for bf16 results, which .npy
// holds as float32), NaN matching NaN. It prints one line per file and
// exits with status 1 at the first mismatch.
func compareNpyCommand(args []string, sio *stdio) int {
	fs := sio.newFlagSet()
	var ulp, elem string
	fs.stringVar(&ulp, "ulp", "N", "the largest distance allowed, in units in the last place (default 0)")
	fs.stringVar(&elem, "elem", "TYPE", "measure ULPs in this element type (default: the files')")
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
	bound := 0.0
	if ulp != "" {
		v, err := strconv.ParseFloat(ulp, 64)
		if err != nil || v < 0 || math.IsNaN(v) {
			return fail("--ulp takes a non-negative number, not '%s'", ulp)
		}
		bound = v
	}
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
	for _, p := range pairs {
		line, err := compareNpyFiles(p[0], p[1], kind, bound)
		if err != nil {
			return fail("%v", err)
		}
		fmt.Fprintln(sio.out, line)
	}
	return exitOK
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

// compareNpyFiles compares two arrays element by element and reports the
// largest distance, or an error naming the first element beyond bound.
func compareNpyFiles(a, b string, kind ir.ElemKind, bound float64) (string, error) {
	ta, err := eval.ReadNpy(a)
	if err != nil {
		return "", fmt.Errorf("'%s': %v", a, err)
	}
	tb, err := eval.ReadNpy(b)
	if err != nil {
		return "", fmt.Errorf("'%s': %v", b, err)
	}
	if !slicesEqual(ta.Shape, tb.Shape) {
		return "", fmt.Errorf("'%s' has shape %s but '%s' has shape %s", a, eval.FormatShape(ta.Shape), b, eval.FormatShape(tb.Shape))
	}
	k := kind
	if k == ir.InvalidElem {
		k = ta.Elem
	}
	worst, at := 0.0, -1
	for i := range ta.Data {
		d := numeric.ULPDiff(ta.Data[i], tb.Data[i], k)
		if d > worst || (math.IsNaN(d) && at < 0) {
			worst, at = d, i
		}
		if d > bound {
			return "", fmt.Errorf("%s: element %s: %v vs %v differ by %s ULP of %s (allowed %v)",
				filepath.Base(a), indexString(ta.Shape, i), ta.Data[i], tb.Data[i], formatULP(d), k, bound)
		}
	}
	return fmt.Sprintf("%s: %d elements match, largest distance %s ULP of %s", filepath.Base(a), len(ta.Data), formatULP(worst), k), nil
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
