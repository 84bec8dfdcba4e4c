package randprog

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/parser"
)

// TestAdversarialNames: the programs verify and print as they parse, are
// the programs without the option with other names, and do use the
// names they are for.
func TestAdversarialNames(t *testing.T) {
	var all strings.Builder
	for seed := int64(0); seed < 300; seed++ {
		m, err := Generate(NewRand(seed), Config{AdversarialNames: true})
		require.NoError(t, err, "seed %d", seed)
		text := ir.Print(m.Operation, ir.PrintOptions{})
		require.NoError(t, ir.Verify(m.Operation), "seed %d:\n%s", seed, text)
		p, err := parser.Parse("randprog.tir", text)
		require.NoError(t, err, "seed %d:\n%s", seed, text)
		require.NoError(t, ir.Verify(p.Operation))
		require.Equal(t, text, ir.Print(p.Operation, ir.PrintOptions{}), "seed %d", seed)

		plain, err := Generate(NewRand(seed), Config{})
		require.NoError(t, err)
		require.Equal(t, len(plain.Funcs()), len(m.Funcs()), "seed %d", seed)
		for i, f := range m.Funcs() {
			g := plain.Funcs()[i]
			var ops, plainOps []string
			for op := f.Body().First(); op != nil; op = op.Next() {
				ops = append(ops, op.Name())
			}
			for op := g.Body().First(); op != nil; op = op.Next() {
				plainOps = append(plainOps, op.Name())
			}
			require.Equal(t, plainOps, ops, "seed %d", seed)
			require.Equal(t, g.Type().String(), f.Type().String(), "seed %d", seed)
		}
		all.WriteString(text)
	}
	text := all.String()
	for _, want := range []string{"%0:", "%int", "%lambda", "%tl", "_addr", "%cb_", "@main", "@f_k0", "@g_k0.task", "@0("} {
		assert.Contains(t, text, want)
	}
}
