// Package parse measures the front end: parse, verify and print generated
// programs of 10k, 100k and 1M ops, beside mlir-opt on the same program
// written with MLIR's arith and math dialects, in the same run.
//
//	go test ./bench/parse -run XXX -bench . -benchtime 3x
//
// bench/parse/run.sh prints the comparison as a table.
package parse

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/tensorforge/tensorforge/dialects/graph"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/parser"
)

var sizes = []int{10_000, 100_000, 1_000_000}

// program writes a function of n element-wise ops over tensor<16xf32>,
// each using the two previous values, in .tir (graph dialect) or MLIR
// (arith/math dialects) spelling.
func program(n int, mlir bool) string {
	var sb strings.Builder
	sb.Grow(n * 48)
	sb.WriteString("func.func @f(%a: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<16xf32> {\n")
	prev, prev2 := "%a", "%b"
	for i := 0; i < n; i++ {
		var op string
		switch i % 3 {
		case 0:
			op = map[bool]string{false: "graph.add", true: "arith.addf"}[mlir]
		case 1:
			op = map[bool]string{false: "graph.mul", true: "arith.mulf"}[mlir]
		case 2:
			op = map[bool]string{false: "graph.exp", true: "math.exp"}[mlir]
		}
		if i%3 == 2 {
			fmt.Fprintf(&sb, "  %%v%d = %s %s : tensor<16xf32>\n", i, op, prev)
		} else {
			fmt.Fprintf(&sb, "  %%v%d = %s %s, %s : tensor<16xf32>\n", i, op, prev, prev2)
		}
		prev2, prev = prev, fmt.Sprintf("%%v%d", i)
	}
	fmt.Fprintf(&sb, "  return %s : tensor<16xf32>\n}\n", prev)
	return sb.String()
}

func label(n int) string {
	if n >= 1_000_000 {
		return fmt.Sprintf("%dM", n/1_000_000)
	}
	return fmt.Sprintf("%dk", n/1000)
}

// BenchmarkTensorForge parses, verifies and prints n ops.
func BenchmarkTensorForge(b *testing.B) {
	for _, n := range sizes {
		src := program(n, false)
		b.Run(label(n), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for i := 0; i < b.N; i++ {
				m, err := parser.Parse("bench.tir", src)
				if err != nil {
					b.Fatal(err)
				}
				if err := ir.Verify(m.Operation); err != nil {
					b.Fatal(err)
				}
				out := ir.Print(m.Operation, ir.PrintOptions{})
				if len(out) < len(src)/2 {
					b.Fatal("printed output too short")
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
	}
}

// BenchmarkMLIROpt runs `mlir-opt-16 file.mlir -o /dev/null` (parse, verify,
// print) on the same program in MLIR's spelling.
func BenchmarkMLIROpt(b *testing.B) {
	tool, err := exec.LookPath("mlir-opt-16")
	if err != nil {
		b.Fatal("mlir-opt-16 not found: install Debian's mlir-16-tools (apt-get install mlir-16-tools)")
	}
	dir := b.TempDir()
	for _, n := range sizes {
		path := filepath.Join(dir, label(n)+".mlir")
		if err := os.WriteFile(path, []byte(program(n, true)), 0o644); err != nil {
			b.Fatal(err)
		}
		b.Run(label(n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				out, err := exec.Command(tool, path, "-o", os.DevNull).CombinedOutput()
				if err != nil {
					b.Fatalf("mlir-opt failed: %v\n%s", err, out)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
	}
}

// TestProgramsAreValid keeps the generated .tir program honest.
func TestProgramsAreValid(t *testing.T) {
	m, err := parser.Parse("bench.tir", program(300, false))
	if err != nil {
		t.Fatal(err)
	}
	if err := ir.Verify(m.Operation); err != nil {
		t.Fatal(err)
	}
}
