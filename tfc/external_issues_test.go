package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Regression tests of defects reported against the driver from outside.

// An error that is already located keeps its one location: it used to be
// wrapped again and read `<stdin>:1:1: error: <stdin>:1:1: error: ...`.
func TestLocatedErrorIsNotWrappedAgain(t *testing.T) {
	src := `func.func @f(%x: tensor<1000000000000x4xf32>) -> tensor<1000000000000x4xf32> {
  %y = graph.exp %x : tensor<1000000000000x4xf32>
  return %y : tensor<1000000000000x4xf32>
}
`
	status, _, errOut := runTFC(t, nil, src, "interpret", "-", "--random-inputs", "1", "--output", t.TempDir())
	require.Equal(t, exitFailure, status, errOut)
	assert.Contains(t, errOut, "<stdin>:1:1: error: @f: argument #0: shape 1000000000000x4 is too large")
	assert.Equal(t, 1, strings.Count(errOut, "error:"), errOut)
}

// --remarks names kinds; one that is not known is an error listing the
// known ones, instead of silently reporting nothing.
func TestUnknownRemarkKindIsAnError(t *testing.T) {
	status, out, errOut := runTFC(t, nil, twoExps, "--remarks=fusion,bogus", "-")
	assert.Equal(t, exitFailure, status)
	assert.Empty(t, out)
	assert.Equal(t, "error: --remarks: unknown remark kind 'bogus' (known: fusion, numerics, sram, all)\n", errOut)

	for _, kind := range remarkKinds {
		status, _, errOut := runTFC(t, nil, twoExps, "--remarks="+kind, "-")
		assert.Equal(t, exitOK, status, "%s: %s", kind, errOut)
	}
	status, _, errOut = runTFC(t, testEnv, twoExps, "--remarks=test", "-")
	assert.Equal(t, exitOK, status, errOut)
}

// Every category a pass reports remarks under is one --remarks accepts.
func TestRemarkKindsCoverThePasses(t *testing.T) {
	remarkCall := regexp.MustCompile(`\.Remark\("([a-z-]+)"|remarkCategory\s*=\s*"([a-z-]+)"`)
	found := map[string]bool{}
	for _, dir := range []string{"../passes", "../lowering", "../dialects", "../emit", "../ir"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range remarkCall.FindAllStringSubmatch(string(data), -1) {
				found[m[1]+m[2]] = true
			}
			return nil
		})
		require.NoError(t, err)
	}
	require.Contains(t, found, "fusion", "the scan finds the fusion remarks")
	for kind := range found {
		assert.Contains(t, remarkKinds, kind, "a pass reports remarks of kind %q, which --remarks does not accept", kind)
	}
}

// A function name too long to be a file name is refused at the function,
// before the emitter fails writing with an unlocated "file name too long".
func TestOverlongFileNamesAreRefusedWithALocation(t *testing.T) {
	name := strings.Repeat("a", 1<<20)
	src := "func.func @" + name + "(%x: tensor<4xf32>) -> tensor<4xf32> {\n" +
		"  %y = graph.exp %x : tensor<4xf32>\n  return %y : tensor<4xf32>\n}\n"
	for _, args := range [][]string{
		{"--emit=ptx", "--target=h200"},
		{"--emit=metal", "--target=m3-max"},
		{"--emit=tt", "--target=blackhole-p150"},
		{"--emit=tt", "--target=blackhole-p150", "--pass-pipeline=canonicalize"},
	} {
		dir := t.TempDir()
		status, _, errOut := runTFC(t, nil, src, append(args, "-o", dir, "-")...)
		assert.Equal(t, exitFailure, status, "%v", args)
		assert.Contains(t, errOut, "<stdin>:1:1: error: function name @aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa... is 1048576 bytes long", "%v", args)
		assert.NotContains(t, errOut, "too long", "%v", args)
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		assert.Empty(t, entries, "%v: nothing is written", args)
	}
	// a name that fits is written
	dir := t.TempDir()
	src = strings.Replace(src, name, strings.Repeat("b", maxFileSymbolBytes), 1)
	status, _, errOut := runTFC(t, nil, src, "--emit=ptx", "--target=h200", "-o", dir, "-")
	require.Equal(t, exitOK, status, errOut)
	assert.FileExists(t, filepath.Join(dir, strings.Repeat("b", maxFileSymbolBytes)+".ptx"))
}
