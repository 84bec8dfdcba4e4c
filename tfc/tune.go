package main

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	tritonemit "github.com/tensorforge/tensorforge/emit/triton"
	"github.com/tensorforge/tensorforge/ir"
)

// The tuner `tfc --tune` runs: a Python script that times the candidate
// configurations of the module's matmul kernels on the GPU and records
// the fastest in the tuning cache (emit/triton/tune.go has the format).
//
//go:embed tune.py
var tunerSource string

// defaultTuneCache is the cache --tune uses when --tune-cache names none:
// tune.json in $TENSORFORGE_CACHE_DIR, else ~/.cache/tensorforge (the
// PyTorch frontend's cache folder).
func defaultTuneCache() string {
	if d := os.Getenv("TENSORFORGE_CACHE_DIR"); d != "" {
		return filepath.Join(d, "tune.json")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "tune.json"
	}
	return filepath.Join(home, ".cache", "tensorforge", "tune.json")
}

// loadTuneCache reads the cache at path. A missing file is an empty
// cache when tuning will create it, an error otherwise.
func loadTuneCache(path string, tuning bool) (*tritonemit.TuneCache, *ir.Diagnostic) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && tuning {
		return nil, nil
	}
	if err != nil {
		return nil, ir.Errorf(ir.Location{}, "--tune-cache: %v", err)
	}
	tc, err := tritonemit.ParseTuneCache(path, data)
	if err != nil {
		return nil, ir.Errorf(ir.Location{}, "--tune-cache: %v", err)
	}
	return tc, nil
}

// tunerPython is the interpreter that runs the tuner: $TENSORFORGE_PYTHON,
// else python3 on PATH.
func tunerPython() string {
	if p := os.Getenv("TENSORFORGE_PYTHON"); p != "" {
		return p
	}
	return "python3"
}

// runTuner times the matmul kernels of module text (a Triton module as
// emitted) for at most req.TuneSeconds and returns the cache it updated.
func runTuner(req *emitRequest, text string) (*tritonemit.TuneCache, error) {
	dir, err := os.MkdirTemp("", "tfc-tune-")
	if err != nil {
		return nil, ir.Errorf(ir.Location{}, "--tune: %v", err)
	}
	defer os.RemoveAll(dir)
	modPath := filepath.Join(dir, "module.py")
	script := filepath.Join(dir, "tune.py")
	if err := os.WriteFile(modPath, []byte(text), 0o644); err != nil {
		return nil, ir.Errorf(ir.Location{}, "--tune: %v", err)
	}
	if err := os.WriteFile(script, []byte(tunerSource), 0o644); err != nil {
		return nil, ir.Errorf(ir.Location{}, "--tune: %v", err)
	}
	cmd := exec.Command(tunerPython(), script, modPath, "--budget", fmt.Sprint(req.TuneSeconds),
		"--cache", req.TuneCache, "--target", req.Target.Name)
	// one writer for both streams (exec then copies them in one goroutine)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(lastLines(stderr.String(), 12))
		if msg == "" {
			msg = err.Error()
		}
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			// it did not start
			msg = fmt.Sprintf("cannot run %s (%v): --tune needs python3 with torch, triton and a CUDA GPU; set TENSORFORGE_PYTHON to one", tunerPython(), err)
		}
		return nil, ir.Errorf(ir.Location{}, "--tune failed: %s", strings.TrimPrefix(msg, "tfc --tune: "))
	}
	if req.Log != nil {
		// the tuner's report: what it timed and chose
		_, _ = req.Log.Write(stderr.Bytes())
	}
	tc, d := loadTuneCache(req.TuneCache, false)
	if d != nil {
		return nil, d
	}
	return tc, nil
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
