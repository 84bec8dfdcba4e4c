package passes

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/dialects/graph/randprog"
	"github.com/tensorforge/tensorforge/ir"
)

// scaleProgram writes a function of about n element-wise ops: "chain"
// (each op reads the two values before it), "fanout" (one value read by
// n/3 products, which are summed) or "results" (a chain whose every value
// is returned).
func scaleProgram(shape string, n int) string {
	const ty = "tensor<16xf32>"
	var sb strings.Builder
	switch shape {
	case "chain", "results":
		var vals, types []string
		prev, prev2 := "%a", "%b"
		var body strings.Builder
		for i := 0; i < n; i++ {
			switch i % 3 {
			case 0:
				fmt.Fprintf(&body, "  %%v%d = graph.add %s, %s : %s\n", i, prev, prev2, ty)
			case 1:
				fmt.Fprintf(&body, "  %%v%d = graph.mul %s, %s : %s\n", i, prev, prev2, ty)
			case 2:
				fmt.Fprintf(&body, "  %%v%d = graph.exp %s : %s\n", i, prev, ty)
			}
			prev2, prev = prev, fmt.Sprintf("%%v%d", i)
			vals, types = append(vals, prev), append(types, ty)
		}
		if shape == "chain" {
			vals, types = vals[len(vals)-1:], types[:1]
		}
		fmt.Fprintf(&sb, "func.func @f(%%a: %s, %%b: %s) -> (%s) {\n%s", ty, ty, strings.Join(types, ", "), body.String())
		fmt.Fprintf(&sb, "  return %s : %s\n}\n", strings.Join(vals, ", "), strings.Join(types, ", "))
	case "fanout":
		fmt.Fprintf(&sb, "func.func @f(%%a: %s) -> %s {\n  %%t = graph.exp %%a : %s\n", ty, ty, ty)
		sum := "%t"
		for i := 0; i < n/3; i++ {
			fmt.Fprintf(&sb, "  %%c%d = graph.constant dense<%d.5> : tensor<f32>\n", i, i+1)
			fmt.Fprintf(&sb, "  %%u%d = graph.mul %%t, %%c%d : (%s, tensor<f32>) -> %s\n", i, i, ty, ty)
			fmt.Fprintf(&sb, "  %%s%d = graph.add %s, %%u%d : %s\n", i, sum, i, ty)
			sum = fmt.Sprintf("%%s%d", i)
		}
		fmt.Fprintf(&sb, "  return %s : %s\n}\n", sum, ty)
	}
	return sb.String()
}

// cycleCheckVisits fuses the function of src and returns the number of
// ops its cycle checks visited.
func cycleCheckVisits(t *testing.T, src string) int {
	m := fzParse(t, src)
	fn := m.Funcs()[0]
	var ops []*ir.Operation
	for op := fn.Body().First(); op != nil; op = op.Next() {
		if !op.HasTrait(ir.Terminator) {
			ops = append(ops, op)
		}
	}
	f := newFuser(fzCtx(t, "cpu"), FuseOptions{MaxOps: DefaultMaxOps}, ops)
	_, err := f.run(false)
	require.NoError(t, err)
	require.NoError(t, ir.Verify(m.Operation))
	return f.visits
}

// TestCycleChecksAreLinear checks that the cycle checks of fusion visit
// O(n) ops in all, at most max-ops per op (each check looks at the users
// of the ops of the union): a search that ran to the end of the function
// from every merge would visit O(n^2), and 16 times as many ops for 4
// times as many.
func TestCycleChecksAreLinear(t *testing.T) {
	for _, shape := range []string{"chain", "fanout", "results"} {
		t.Run(shape, func(t *testing.T) {
			small := cycleCheckVisits(t, scaleProgram(shape, 1000))
			large := cycleCheckVisits(t, scaleProgram(shape, 4000))
			assert.LessOrEqual(t, float64(large), 4.5*float64(small), "visits grow faster than the program: %d for 1000 ops, %d for 4000", small, large)
			assert.LessOrEqual(t, large, DefaultMaxOps*4000, "visits for 4000 ops")
		})
	}
}

// TestUniformShortcutChangesNothing: fusing with and without the shortcut
// for uniform unions gives the same IR and the same remarks, on random
// programs and on chains, fan-outs and many results.
func TestUniformShortcutChangesNothing(t *testing.T) {
	var srcs []string
	for _, shape := range []string{"chain", "fanout", "results"} {
		srcs = append(srcs, scaleProgram(shape, 500))
	}
	for seed := int64(1); seed <= 150; seed++ {
		srcs = append(srcs, randprog.GenerateText(seed, randprog.Config{MaxOps: 30}))
	}
	fuse := func(src string) string {
		m := fzParse(t, src)
		ctx := fzCtx(t, "cpu")
		ctx.Remarks = map[string]bool{"fusion": true}
		fzPipeline(t, m, "canonicalize,cse,legalize-numerics,decompose,fuse", ctx)
		return ir.Print(m.Operation, ir.PrintOptions{}) + strings.Join(fzMessages(ctx.Diags.List), "\n")
	}
	defer func() { uniformShortcut = true }()
	for i, src := range srcs {
		uniformShortcut = true
		with := fuse(src)
		uniformShortcut = false
		without := fuse(src)
		require.Equal(t, without, with, "program %d:\n%s", i, src)
	}
}
