// Package littests runs the lit suite: every .tir file below this
// directory, with its RUN lines executed by LLVM 14's lit and checked by
// FileCheck against the tfc binary built from this tree.
package littests

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	llvmBin = "/usr/lib/llvm-14/bin"
	litPy   = "/usr/lib/llvm-14/build/utils/lit/lit.py"
)

// install says how to get what the suite needs; a missing tool fails the
// suite rather than skipping it, so a broken setup is never mistaken for a
// passing one.
const install = "the lit suite needs python3 and LLVM 14's lit and FileCheck: apt-get install llvm-14-tools python3"

// slowTests are lit's test times (seconds, path) for the tests that take
// far longer than the others: lit starts the slowest first, so that they
// do not run alone at the end (run/many-results.tir compiles 4100
// kernels; the rest of the suite takes about as long on the other job).
const slowTests = `4.0e+01 run/many-results.tir
3.0e+00 run/inputs.tir
2.0e+00 run/verify-overflow.tir
2.0e+00 fusion/roll.tir
1.5e+00 run/verify-quant.tir
1.0e+00 run/row-kernels.tir
1.0e+00 run/dynamic.tir
`

func TestLit(t *testing.T) {
	python, err := exec.LookPath("python3")
	require.NoError(t, err, install)
	for _, tool := range []string{litPy, filepath.Join(llvmBin, "FileCheck"), filepath.Join(llvmBin, "not")} {
		_, err := os.Stat(tool)
		require.NoError(t, err, install)
	}

	touchInputs(t)
	tmp := t.TempDir()
	tfc := filepath.Join(tmp, "tfc")
	build := exec.Command("go", "build", "-o", tfc, "../tfc")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build ../tfc:\n%s", out)

	execRoot := filepath.Join(tmp, "lit")
	require.NoError(t, os.Mkdir(execRoot, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(execRoot, ".lit_test_times.txt"), []byte(slowTests), 0o644))
	// twice as many jobs as cores: a test spends much of its time in
	// pipes between tfc, FileCheck and lit's own shell
	lit := exec.Command(python, litPy, "-v", "-j"+strconv.Itoa(2*runtime.NumCPU()),
		"--param", "tfc="+tfc, "--param", "exec_root="+execRoot, ".")
	lit.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err = lit.CombinedOutput()
	require.NoError(t, err, "lit failed:\n%s", out)

	passed := regexp.MustCompile(`Passed\s*:\s*(\d+)`).FindSubmatch(out)
	require.NotNil(t, passed, "lit printed no pass count:\n%s", out)
	t.Logf("lit: %s tests passed", passed[1])
}

// touchInputs opens every file the suite depends on through a subprocess
// (the test files, tfc's Go sources, the emitters' headers), so that Go's
// test cache sees them as inputs and reruns the suite when one changes.
func touchInputs(t *testing.T) {
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != ".." && (strings.HasPrefix(name, ".") || name == "testdata" && strings.Contains(path, "fuzz")) {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(name) {
		case ".go", ".tir", ".py", ".h", ".mod", ".sum":
			_, err := os.Stat(path)
			return err
		}
		return nil
	})
	require.NoError(t, err)
}
