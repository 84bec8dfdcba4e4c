package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/ir"
)

// compare-npy used to compare at 0 ULP unless told otherwise; it now
// takes --atol and --rtol, defaults to a tolerance per element type, and
// reports the worst element and a summary.
func TestCompareNpyTolerances(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data ...float64) string {
		p := filepath.Join(dir, name)
		require.NoError(t, eval.WriteNpy(p, &eval.Tensor{Shape: []int64{2, 2}, Elem: ir.F32, Data: data}))
		return p
	}
	f := func(x float64) float64 { return float64(float32(x)) }
	a := write("a.npy", 1, 2, nanValue(), 4)
	near := write("near.npy", 1, f(2.000001), nanValue(), 4)
	far := write("far.npy", 1, 2.5, nanValue(), 4.25)
	nan := write("nan.npy", 1, 2, 3, 4)

	cases := []struct {
		name   string
		args   []string
		status int
		out    string // stdout, exactly
		err    string // stderr, exactly
	}{
		{"the default f32 tolerance accepts a few ULPs", []string{a, near}, exitOK,
			"a.npy: 4 elements match, largest distance 4 ULP of f32, max abs error 9.537e-07, max rel error 4.768e-07 (bound: atol 1e-05, rtol 1.3e-06)\n", ""},
		{"but not a real difference", []string{a, far}, exitFailure, "",
			"error: a.npy: element [0, 1]: 2 vs 2.5 differ by 0.5 (abs), 0.2 (rel), 2.097e+06 ULP of f32 (allowed: atol 1e-05, rtol 1.3e-06)\n" +
				"note: 2 of 4 elements are beyond the bound; largest distance 2.097e+06 ULP of f32, max abs error 0.5, max rel error 0.2\n"},
		{"--rtol", []string{a, far, "--rtol", "0.25"}, exitOK,
			"a.npy: 4 elements match, largest distance 2.097e+06 ULP of f32, max abs error 0.5, max rel error 0.2 (bound: atol 0, rtol 0.25)\n", ""},
		{"--atol: the worst element is the one furthest past the bound", []string{a, far, "--atol", "0.1"}, exitFailure, "",
			"error: a.npy: element [0, 1]: 2 vs 2.5 differ by 0.5 (abs), 0.2 (rel), 2.097e+06 ULP of f32 (allowed: atol 0.1, rtol 0)\n" +
				"note: 2 of 4 elements are beyond the bound; largest distance 2.097e+06 ULP of f32, max abs error 0.5, max rel error 0.2\n"},
		{"--ulp alone compares in ULPs", []string{a, near, "--ulp", "3"}, exitFailure, "",
			"error: a.npy: element [0, 1]: 2 vs 2.0000009536743164 differ by 4 ULP of f32 (allowed 3)\n" +
				"note: 1 of 4 elements are beyond the bound; largest distance 4 ULP of f32, max abs error 9.537e-07, max rel error 4.768e-07\n"},
		{"--ulp or --rtol", []string{a, near, "--ulp", "3", "--rtol", "1e-6"}, exitOK,
			"a.npy: 4 elements match, largest distance 4 ULP of f32, max abs error 9.537e-07, max rel error 4.768e-07 (bound: atol 0, rtol 1e-06 or 3 ULP of f32)\n", ""},
		{"bf16 defaults", []string{a, far, "--elem", "bf16"}, exitFailure, "",
			"error: a.npy: element [0, 1]: 2 vs 2.5 differ by 0.5 (abs), 0.2 (rel), 32 ULP of bf16 (allowed: atol 1e-05, rtol 0.016)\n" +
				"note: 2 of 4 elements are beyond the bound; largest distance 32 ULP of bf16, max abs error 0.5, max rel error 0.2\n"},
		{"NaN matches only NaN", []string{a, nan}, exitFailure, "",
			"error: a.npy: element [1, 0]: NaN vs 3 differ by inf (abs), inf (rel), inf ULP of f32 (allowed: atol 1e-05, rtol 1.3e-06)\n" +
				"note: 1 of 4 elements are beyond the bound; largest distance inf ULP of f32, max abs error inf, max rel error inf\n"},
		{"a bad tolerance", []string{a, near, "--atol", "-1"}, exitFailure, "", "error: --atol takes a non-negative number, not '-1'\n"},
	}
	for _, c := range cases {
		status, out, errOut := runTFC(t, nil, "", append([]string{"compare-npy"}, c.args...)...)
		assert.Equal(t, c.status, status, "%s: %s", c.name, errOut)
		assert.Equal(t, c.out, out, c.name)
		assert.Equal(t, c.err, errOut, c.name)
	}
}
