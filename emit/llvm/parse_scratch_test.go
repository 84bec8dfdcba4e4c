package llvmemit

import (
	"os"
	"testing"

	_ "github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/parser"
)

func TestScratchParse(t *testing.T) {
	src, _ := os.ReadFile("testdata/rms.tir")
	m, err := parser.Parse("rms.tir", string(src))
	if err != nil {
		t.Fatal(err)
	}
	if err := ir.Verify(m.Operation); err != nil {
		t.Fatal(err)
	}
	s, err := EmitText(m, Options{Entries: true})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile("/tmp/rms.ll", []byte(s), 0o644)
}
