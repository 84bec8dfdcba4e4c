package main

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tensorforge/tensorforge/dialects/graph/randprog"
	"github.com/tensorforge/tensorforge/passes/difftest"
)

// tfcFuzzPipelines are the graph-level pipelines FuzzTfc runs: each pass
// alone, the -O2 graph pipeline and a few pairs.
var tfcFuzzPipelines = []string{
	"canonicalize", "cse", "dce", "legalize-numerics", "decompose", "fuse",
	difftest.O2GraphPipeline,
	"legalize-numerics,decompose,fuse",
	"fuse,canonicalize,cse,dce",
	"legalize-numerics{keep-unchecked-casts=true},cse",
}

// tfcFuzzPipeline picks a pipeline with choice and keeps its registered
// passes.
func tfcFuzzPipeline(choice uint8) string {
	p, _ := difftest.Registered(tfcFuzzPipelines[int(choice&0x7f)%len(tfcFuzzPipelines)])
	return p
}

// tfcSeeds returns every .tir file below dir.
func tfcSeeds(f *testing.F, dir string) []string {
	var out []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".tir") {
			return err
		}
		src, err := os.ReadFile(path)
		out = append(out, string(src))
		return err
	})
	if err != nil {
		f.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// FuzzTfc runs the driver on arbitrary text with a pipeline of graph-level
// passes chosen by choice (its top bit adds --split-input-file). Bad input
// must end in diagnostics and exit status 1, never an internal error (2)
// or a panic; what compiles must print as IR that tfc reads back as
// itself. The seeds are the examples, the lit tests, random programs and
// the corpus in testdata/fuzz/FuzzTfc.
func FuzzTfc(f *testing.F) {
	var seeds []string
	seeds = append(seeds, tfcSeeds(f, "../examples")...)
	seeds = append(seeds, tfcSeeds(f, "../lit-tests")...)
	for seed := int64(1); seed <= 20; seed++ {
		seeds = append(seeds, randprog.GenerateText(seed, randprog.Config{}))
	}
	for i, src := range seeds {
		f.Add(uint8(i*5), src)
	}
	f.Fuzz(func(t *testing.T, choice uint8, src string) {
		pipeline := tfcFuzzPipeline(choice)
		args := []string{"--pass-pipeline=" + pipeline}
		if choice&0x80 != 0 {
			args = append(args, "--split-input-file")
		}
		args = append(args, "-")
		status, out, errOut := runTFC(t, nil, src, args...)
		require.Contains(t, []int{exitOK, exitFailure}, status,
			"tfc %s exited with %d:\n%s\n--- input:\n%s", strings.Join(args, " "), status, errOut, src)
		if status == exitFailure {
			require.Contains(t, errOut, "error: ")
			return
		}
		// What tfc prints, it reads back as the same IR.
		again, out2, errOut2 := runTFC(t, nil, out, args[1:]...)
		require.Equal(t, exitOK, again, "tfc cannot read its own output:\n%s\n--- output:\n%s", errOut2, out)
		require.Equal(t, out, out2, "the output does not print as itself")
	})
}
