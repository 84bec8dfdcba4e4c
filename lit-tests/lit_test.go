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
	lit := exec.Command(python, litPy, "-v", "-j2",
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
