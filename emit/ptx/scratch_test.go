package ptx

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestScratchDump(t *testing.T) {
	dir := os.Getenv("PTX_DUMP")
	if dir == "" {
		t.Skip("PTX_DUMP not set")
	}
	if os.Getenv("PTX_REGBUDGET") == "0" {
		regBudget = 0
		defer func() { regBudget = 64 }()
	}
	files, _ := filepath.Glob(os.Getenv("PTX_SRC"))
	for _, f := range files {
		src, _ := os.ReadFile(f)
		out := emitFiles(t, string(src))
		d := dir
		if os.Getenv("PTX_SUBDIR") != "" {
			d = filepath.Join(dir, strings.TrimSuffix(filepath.Base(f), ".tir"))
			os.MkdirAll(d, 0o755)
		}
		for name, text := range out {
			os.WriteFile(filepath.Join(d, name), []byte(text), 0o644)
		}
	}
}
