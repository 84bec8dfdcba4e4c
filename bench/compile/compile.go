// Package compile measures how compile time grows with program size: the
// -O2 pipeline, through lower-to-loops and sram-alloc, on generated
// programs of 10k, 100k and 1M ops in three shapes:
//
//   - chain: each element-wise op reads the two values before it;
//
//   - fanout: one value read by n/3 ops, whose results are summed;
//
//   - results: a chain whose every value is a result of the function.
//
//     go test ./bench/compile -run XXX -bench . -benchtime 1x
//
// bench/compile/run.sh prints ops/s as a table.
package compile

import (
	"fmt"
	"strings"

	_ "github.com/tensorforge/tensorforge/dialects/graph" // the graph dialect
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
	_ "github.com/tensorforge/tensorforge/lowering" // lower-to-loops
	"github.com/tensorforge/tensorforge/parser"
	_ "github.com/tensorforge/tensorforge/passes" // the graph passes
)

// PipelineO2 is tfc's -O2 pipeline (tfc/pipelines.go).
const PipelineO2 = "canonicalize,cse,legalize-numerics,decompose,fuse,canonicalize,cse,dce,lower-to-loops,sram-alloc"

// Shapes names the generated program shapes.
var Shapes = []string{"chain", "fanout", "results"}

const ty = "tensor<16xf32>"

// Program writes a function of about n graph ops of the given shape.
func Program(shape string, n int) string {
	var sb strings.Builder
	sb.Grow(n * 64)
	switch shape {
	case "chain", "results":
		var results []string
		sb.WriteString("func.func @f(%a: " + ty + ", %b: " + ty + ") -> ")
		if shape == "results" {
			sb.WriteString("(")
			for i := 0; i < n; i++ {
				if i > 0 {
					sb.WriteString(", ")
				}
				sb.WriteString(ty)
			}
			sb.WriteString(")")
		} else {
			sb.WriteString(ty)
		}
		sb.WriteString(" {\n")
		prev, prev2 := "%a", "%b"
		for i := 0; i < n; i++ {
			switch i % 3 {
			case 0:
				fmt.Fprintf(&sb, "  %%v%d = graph.add %s, %s : %s\n", i, prev, prev2, ty)
			case 1:
				fmt.Fprintf(&sb, "  %%v%d = graph.mul %s, %s : %s\n", i, prev, prev2, ty)
			case 2:
				fmt.Fprintf(&sb, "  %%v%d = graph.exp %s : %s\n", i, prev, ty)
			}
			prev2, prev = prev, fmt.Sprintf("%%v%d", i)
			results = append(results, prev)
		}
		if shape == "results" {
			sb.WriteString("  return " + strings.Join(results, ", ") + " : ")
			for i := range results {
				if i > 0 {
					sb.WriteString(", ")
				}
				sb.WriteString(ty)
			}
			sb.WriteString("\n}\n")
		} else {
			fmt.Fprintf(&sb, "  return %s : %s\n}\n", prev, ty)
		}
	case "fanout":
		// %t is read by every mul; the products are summed in a chain.
		sb.WriteString("func.func @f(%a: " + ty + ") -> " + ty + " {\n")
		sb.WriteString("  %t = graph.exp %a : " + ty + "\n")
		sum := "%t"
		for i := 0; i < n/3; i++ {
			fmt.Fprintf(&sb, "  %%c%d = graph.constant dense<%d.5> : tensor<f32>\n", i, i+1)
			fmt.Fprintf(&sb, "  %%u%d = graph.mul %%t, %%c%d : (%s, tensor<f32>) -> %s\n", i, i, ty, ty)
			fmt.Fprintf(&sb, "  %%s%d = graph.add %s, %%u%d : %s\n", i, sum, i, ty)
			sum = fmt.Sprintf("%%s%d", i)
		}
		fmt.Fprintf(&sb, "  return %s : %s\n}\n", sum, ty)
	default:
		panic("compile: unknown shape " + shape)
	}
	return sb.String()
}

// Compile parses, verifies and runs the -O2 pipeline on src for the cpu
// target, verifying after each pass as tfc does.
func Compile(src string) (ir.Module, error) {
	m, err := parser.Parse("bench.tir", src)
	if err != nil {
		return ir.Module{}, err
	}
	if err := ir.Verify(m.Operation); err != nil {
		return ir.Module{}, err
	}
	p, err := ir.ParsePipeline(PipelineO2)
	if err != nil {
		return ir.Module{}, err
	}
	t, err := target.Lookup("cpu")
	if err != nil {
		return ir.Module{}, err
	}
	diags := &ir.Diagnostics{}
	pm := &ir.PassManager{Pipeline: p, VerifyEach: true}
	if err := pm.Run(m, &ir.PassContext{Diags: diags, Target: t}); err != nil {
		return ir.Module{}, err
	}
	return m, nil
}

// CompileAndPrint compiles src and prints the result, as `tfc -O2` does.
func CompileAndPrint(src string) (string, error) {
	m, err := Compile(src)
	if err != nil {
		return "", err
	}
	return ir.Print(m.Operation, ir.PrintOptions{}), nil
}
