package triton

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeTorch stands for the torch module the launcher helpers call: a GPU
// of 132 multiprocessors.
const fakeTorch = `
class _Props:
    multi_processor_count = 132
class _Cuda:
    @staticmethod
    def current_device():
        return 0
    @staticmethod
    def get_device_properties(d):
        return _Props()
class torch:
    cuda = _Cuda
`

// TestFitRows runs _fit_rows (fitRowsSource) under python3 for a GPU of
// 132 multiprocessors: ROWS halves, num_warps with it, while a grid has
// fewer than 264 programs, never below one row or one warp, and a grid
// already large enough keeps the configuration itself.
func TestFitRows(t *testing.T) {
	script := fakeTorch + fitRowsSource + `
cfg = {"BLOCK": 64, "ROWS": 16, "num_warps": 4}
assert _fit_rows(cfg, 131072) is cfg
assert _fit_rows(cfg, 16 * 264) is cfg
got = {n: (_fit_rows(cfg, n)["ROWS"], _fit_rows(cfg, n)["num_warps"]) for n in (1, 32, 1024, 2048, 16 * 263 - 1, 16 * 263 + 1)}
want = {1: (1, 1), 32: (1, 1), 1024: (2, 1), 2048: (4, 1), 16 * 263 - 1: (8, 2), 16 * 263 + 1: (16, 4)}
assert got == want, got
assert _fit_rows(cfg, 1024) is _fit_rows(cfg, 1024)
assert cfg == {"BLOCK": 64, "ROWS": 16, "num_warps": 4}
one = {"BLOCK": 4096, "ROWS": 1, "num_warps": 8}
assert _fit_rows(one, 1) is one
print("ok")
`
	runScript(t, script)
}

// TestPersist runs _persist (persistSource) under python3 for a GPU of 132
// multiprocessors, and simulates the loop a persistent program runs,
// tl.range(pid, blocks, programs): every block of rows is taken by
// exactly one program, whatever the number of programs.
func TestPersist(t *testing.T) {
	script := fakeTorch + persistSource + `
cfg = {"BLOCK": 8192, "ROWS": 1, "num_warps": 8, "PERSIST": 0, "STAGES": 1}
for n in (1, 132, 4096, 100000):
    assert _persist(n, cfg) == n
for per, n, want in ((1, 4096, 132), (2, 4096, 264), (4, 100, 100), (2, 264, 264), (3, 1, 1)):
    assert _persist(n, dict(cfg, PERSIST=per)) == want, (per, n)
    taken = sorted(b for pid in range(want) for b in range(pid, n, want))
    assert taken == list(range(n)), (per, n)
print("ok")
`
	runScript(t, script)
}

// runScript runs a Python script under python3; it must print "ok".
func runScript(t *testing.T, script string) {
	t.Helper()
	python, err := exec.LookPath("python3")
	require.NoError(t, err, "the Triton emitter's tests need python3")
	path := filepath.Join(t.TempDir(), "script.py")
	require.NoError(t, os.WriteFile(path, []byte(script), 0o644))
	out, err := exec.Command(python, path).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, "ok\n", string(out))
}
