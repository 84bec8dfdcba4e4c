package ptx

import (
	"os"
	"path/filepath"
	"testing"
)

func TestScratchDump(t *testing.T) {
	dir := os.Getenv("PTX_DUMP")
	if dir == "" {
		t.Skip("PTX_DUMP not set")
	}
	files, _ := filepath.Glob(os.Getenv("PTX_SRC"))
	for _, f := range files {
		src, _ := os.ReadFile(f)
		out := emitFiles(t, string(src))
		for name, text := range out {
			os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644)
		}
	}
}
