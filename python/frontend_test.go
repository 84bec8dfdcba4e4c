// Package python runs the PyTorch frontend's tests (python/tests) under
// `go test ./...`: it builds tfc from this tree and runs the tests with a
// python3 that has torch (Debian's python3-torch in CI).
package python

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// install says how to get what the tests need; a missing torch fails the
// test rather than skipping it.
const install = "the PyTorch frontend's tests need python3 with torch and numpy: apt-get install python3-torch python3-numpy"

// pythonWithTorch is the first python3 that can import torch: $TENSORFORGE_PYTHON,
// Debian's /usr/bin/python3, then python3 on PATH.
func pythonWithTorch() (string, error) {
	cands := []string{os.Getenv("TENSORFORGE_PYTHON"), "/usr/bin/python3"}
	if p, err := exec.LookPath("python3"); err == nil {
		cands = append(cands, p)
	}
	var tried []string
	for _, c := range cands {
		if c == "" {
			continue
		}
		if exec.Command(c, "-c", "import torch, numpy").Run() == nil {
			return c, nil
		}
		tried = append(tried, c)
	}
	return "", fmt.Errorf("none of %s can import torch and numpy", strings.Join(tried, ", "))
}

func TestFrontend(t *testing.T) {
	python, err := pythonWithTorch()
	require.NoError(t, err, install)
	touchSources(t)

	tmp := t.TempDir()
	tfc := filepath.Join(tmp, "tfc")
	out, err := exec.Command("go", "build", "-o", tfc, "../tfc").CombinedOutput()
	require.NoError(t, err, "go build ../tfc:\n%s", out)

	cmd := exec.Command(python, "-m", "unittest", "discover", "-s", "tests", "-v")
	cmd.Env = append(os.Environ(), "TENSORFORGE_TFC="+tfc, "TENSORFORGE_CACHE_DIR="+filepath.Join(tmp, "cache"),
		"PYTHONDONTWRITEBYTECODE=1", "TF_NUM_THREADS=2")
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "the frontend's tests failed:\n%s", out)
	ran := regexp.MustCompile(`Ran (\d+) tests?`).FindSubmatch(out)
	require.NotNil(t, ran, "unittest printed no test count:\n%s", out)
	require.NotEqual(t, "0", string(ran[1]), "no frontend test ran:\n%s", out)
	t.Logf("frontend: %s tests passed", ran[1])
}

// touchSources stats the Python sources and tfc's Go sources, so that Go's
// test cache reruns this test when one of them changes.
func touchSources(t *testing.T) {
	for _, root := range []string{".", ".."} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != root && (strings.HasPrefix(d.Name(), ".") || root == ".." && d.Name() == "python") {
					return filepath.SkipDir
				}
				return nil
			}
			switch filepath.Ext(d.Name()) {
			case ".py", ".go", ".h", ".c":
				_, err := os.Stat(path)
				return err
			}
			return nil
		})
		require.NoError(t, err)
	}
}
