package cpurt

import (
	"os"
	"testing"

	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/lowering"
	"github.com/tensorforge/tensorforge/parser"
	_ "github.com/tensorforge/tensorforge/passes"
)

func TestScratchLower(t *testing.T) {
	src, _ := os.ReadFile(os.Getenv("TIR"))
	m, err := parser.Parse("x.tir", string(src))
	if err != nil {
		t.Fatal(err)
	}
	if err := lowering.LowerToLoops(m, nil); err != nil {
		t.Fatal(err)
	}
	if err := ir.Verify(m.Operation); err != nil {
		t.Fatal(err)
	}
	t.Log(ir.Print(m.Operation, ir.PrintOptions{}))
}
