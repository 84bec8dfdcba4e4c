package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const tuneProgram = `func.func @proj(%x: tensor<?x256xbf16>, %w: tensor<512x256xbf16>) -> tensor<?x512xbf16> {
  %y = graph.matmul %x, %w {transpose_b = true} : (tensor<?x256xbf16>, tensor<512x256xbf16>) -> tensor<?x512xbf16>
  return %y : tensor<?x512xbf16>
}
`

var keyLine = regexp.MustCompile(`"proj_k0": "([0-9a-f]{32})"`)

// kernelKey emits tuneProgram and returns its matmul kernel's key.
func kernelKey(t *testing.T, targetName string) string {
	t.Helper()
	status, out, errOut := runTFC(t, nil, tuneProgram, "--emit=triton", "--target="+targetName, "-")
	require.Equal(t, exitOK, status, errOut)
	m := keyLine.FindStringSubmatch(out)
	require.NotNil(t, m, "no KEYS entry in\n%s", out)
	return m[1]
}

func writeCache(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tune.json")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

const tunedConfigs = `[{"max_m": 16, "BM": 16, "BN": 64, "BK": 256, "GROUP_M": 1, "num_warps": 4, "num_stages": 3, "SPLIT_K": 2},
  {"max_m": 0, "BM": 64, "BN": 128, "BK": 64, "GROUP_M": 4, "num_warps": 4, "num_stages": 5}]`

func TestTuneCacheChoosesTheConfigurations(t *testing.T) {
	key := kernelKey(t, "h200")
	assert.NotEqual(t, key, kernelKey(t, "h100"), "the key includes the target")
	cache := writeCache(t, `{"version": 1, "entries": {"`+key+`": {"target": "h200", "kernel": "proj_k0", "configs": `+tunedConfigs+`}}}`)
	status, out, errOut := runTFC(t, nil, tuneProgram, "--emit=triton", "--target=h200", "--tune-cache="+cache, "-")
	require.Equal(t, exitOK, status, errOut)
	assert.Contains(t, out, `"proj_k0": [{"max_m": 16, "BM": 16, "BN": 64, "BK": 256, "GROUP_M": 1, "num_warps": 4, "num_stages": 3, "SPLIT_K": 2}, {"max_m": 0, "BM": 64, "BN": 128, "BK": 64, "GROUP_M": 4, "num_warps": 4, "num_stages": 5}],  # tuned`)
	// the same program and cache give the same bytes
	_, again, _ := runTFC(t, nil, tuneProgram, "--emit=triton", "--target=h200", "--tune-cache="+cache, "-")
	assert.Equal(t, out, again)

	// an entry of another target, or another kernel, leaves the defaults
	_, def, _ := runTFC(t, nil, tuneProgram, "--emit=triton", "--target=h200", "-")
	_, h100, _ := runTFC(t, nil, tuneProgram, "--emit=triton", "--target=h100", "--tune-cache="+cache, "-")
	assert.NotContains(t, h100, "# tuned")
	other := writeCache(t, `{"version": 1, "entries": {"00000000000000000000000000000000": {"target": "h200", "configs": `+tunedConfigs+`}}}`)
	_, out2, _ := runTFC(t, nil, tuneProgram, "--emit=triton", "--target=h200", "--tune-cache="+other, "-")
	assert.Equal(t, def, out2)

	// another kernel (a different K) has another key
	_, out3, _ := runTFC(t, nil, strings.ReplaceAll(tuneProgram, "256", "128"), "--emit=triton", "--target=h200", "--tune-cache="+cache, "-")
	assert.NotContains(t, out3, "# tuned")
}

func TestTuneCacheErrors(t *testing.T) {
	for _, tc := range []struct{ name, cache, want string }{
		{"json", `{"version": 1, "entries": `, "not a tuning cache"},
		{"version", `{"version": 2, "entries": {}}`, "tuning cache version 2, expected 1"},
		{"empty", `{"version": 1, "entries": {"k": {"target": "h200", "configs": []}}}`, "entry k has no configurations"},
		{"key", `{"version": 1, "entries": {"k": {"target": "h200", "configs": [{"max_m": 0, "BM": 64, "BN": 64, "BK": 64, "GROUP_M": 1, "num_warps": 4, "num_stages": 3, "BLOCK": 2}]}}}`, `unknown key "BLOCK"`},
		{"tile", `{"version": 1, "entries": {"k": {"target": "h200", "configs": [{"max_m": 0, "BM": 48, "BN": 64, "BK": 64, "GROUP_M": 1, "num_warps": 4, "num_stages": 3}]}}}`, "BM = 48 is not a power of two"},
		{"order", `{"version": 1, "entries": {"k": {"target": "h200", "configs": [{"max_m": 0, "BM": 64, "BN": 64, "BK": 64, "GROUP_M": 1, "num_warps": 4, "num_stages": 3}, {"max_m": 16, "BM": 64, "BN": 64, "BK": 64, "GROUP_M": 1, "num_warps": 4, "num_stages": 3}]}}}`, "max_m 0 (any rows) must come last"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeCache(t, tc.cache)
			status, _, errOut := runTFC(t, nil, tuneProgram, "--emit=triton", "--target=h200", "--tune-cache="+path, "-")
			assert.Equal(t, exitFailure, status)
			assert.Contains(t, errOut, "--tune-cache: "+path)
			assert.Contains(t, errOut, tc.want)
		})
	}
	status, _, errOut := runTFC(t, nil, tuneProgram, "--emit=triton", "--target=h200", "--tune-cache="+filepath.Join(t.TempDir(), "none.json"), "-")
	assert.Equal(t, exitFailure, status)
	assert.Contains(t, errOut, "no such file")
}

func TestTuneFlags(t *testing.T) {
	status, _, errOut := runTFC(t, nil, tuneProgram, "--emit=ptx", "--target=h200", "--tune=10", "-o", t.TempDir(), "-")
	assert.Equal(t, exitFailure, status)
	assert.Contains(t, errOut, "they need --emit=triton, not --emit=ptx")
	for _, bad := range []string{"0", "-3", "abc", "1e9"} {
		status, _, errOut = runTFC(t, nil, tuneProgram, "--emit=triton", "--target=h200", "--tune="+bad, "-")
		assert.Equal(t, exitFailure, status, bad)
		assert.Contains(t, errOut, "takes a number of seconds", bad)
	}
	// without a Python that can time kernels, tuning fails and says why
	t.Setenv("TENSORFORGE_PYTHON", filepath.Join(t.TempDir(), "no-python"))
	cache := filepath.Join(t.TempDir(), "tune.json")
	status, _, errOut = runTFC(t, nil, tuneProgram, "--emit=triton", "--target=h200", "--tune=5", "--tune-cache="+cache, "-")
	assert.Equal(t, exitFailure, status)
	assert.Contains(t, errOut, "--tune needs python3 with torch, triton and a CUDA GPU")
	assert.NoFileExists(t, cache)
}
