package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An input too large for memory is refused with its size, by interpret
// (which would hold it as float64s) and by run (whose result would not
// fit), instead of dying out of memory. The file is sparse: only its
// header is written.
func TestInputTooLargeToAllocate(t *testing.T) {
	if memoryLimit() == 0 {
		t.Skip("the available memory is unknown here")
	}
	dir := t.TempDir()
	const n = 1 << 34
	path := filepath.Join(dir, "x.npy")
	h := npyHeader("<f4", []int64{n})
	require.NoError(t, os.WriteFile(path, h, 0o644))
	if err := os.Truncate(path, int64(len(h))+4*n); err != nil {
		t.Skipf("no sparse file here: %v", err)
	}
	src := "func.func @neg(%x: tensor<?xf32>) -> tensor<?xf32> {\n  %y = graph.neg %x : tensor<?xf32>\n  return %y : tensor<?xf32>\n}\n"
	status, _, errOut := runTFC(t, nil, src, "interpret", "-", "--input", "x="+path, "--output", filepath.Join(dir, "o"))
	assert.Equal(t, exitFailure, status)
	assert.Contains(t, errOut, "error: --input x="+path+": the value of shape 17179869184 needs 128.0 GiB (17179869184 elements of 8 bytes), more than the ")
	if _, err := os.Stat("/usr/lib/llvm-14/bin/llc"); err != nil {
		return
	}
	status, _, errOut = runTFC(t, nil, src, "run", "-", "--input", "x="+path, "--output", filepath.Join(dir, "o"))
	assert.Equal(t, exitFailure, status)
	assert.Contains(t, errOut, "error: result #0 of @neg of shape 17179869184 needs 64.0 GiB (17179869184 elements of 4 bytes)")
	_, err := os.Stat(filepath.Join(dir, "o", "result0.npy"))
	assert.True(t, os.IsNotExist(err), "no result is written")
}
