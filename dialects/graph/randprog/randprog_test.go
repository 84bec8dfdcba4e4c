package randprog

import (
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/parser"
)

// seeds is how many programs the tests generate.
const seeds = 1000

func TestProgramsVerifyAndRoundTrip(t *testing.T) {
	for seed := int64(0); seed < seeds; seed++ {
		m, err := Generate(NewRand(seed), Config{})
		require.NoError(t, err, "seed %d", seed)
		require.NoError(t, ir.Verify(m.Operation), "seed %d:\n%s", seed, ir.Print(m.Operation, ir.PrintOptions{}))
		text := ir.Print(m.Operation, ir.PrintOptions{})
		p, err := parser.Parse("randprog.tir", text)
		require.NoError(t, err, "seed %d:\n%s", seed, text)
		require.NoError(t, ir.Verify(p.Operation))
		require.Equal(t, text, ir.Print(p.Operation, ir.PrintOptions{}), "seed %d", seed)
	}
}

func TestDeterministic(t *testing.T) {
	for seed := int64(0); seed < 20; seed++ {
		a := GenerateText(seed, Config{})
		assert.Equal(t, a, GenerateText(seed, Config{}))
		assert.NotEqual(t, a, GenerateText(seed+1000, Config{}))
	}
}

// Every program runs in the reference interpreter on the inputs the
// differential tests use, `?` dimensions included.
func TestProgramsRunInTheInterpreter(t *testing.T) {
	for seed := int64(0); seed < 200; seed++ {
		m, err := Generate(NewRand(seed), Config{})
		require.NoError(t, err)
		for _, f := range m.Funcs() {
			random, err := eval.RandomInputs(f, seed, 100, DynExtent)
			require.NoError(t, err)
			extreme, err := eval.ExtremeInputs(f, seed)
			require.NoError(t, err)
			for _, in := range [][]*eval.Tensor{random, extreme} {
				_, err := eval.Run(f, in, eval.Options{})
				require.NoError(t, err, "seed %d:\n%s", seed, ir.Print(f.Operation, ir.PrintOptions{}))
			}
		}
	}
}

func TestConfigBounds(t *testing.T) {
	cfg := Config{Funcs: 3, MaxOps: 5, MaxRank: 2, MaxExtent: 3, MaxElements: 64, MaxArgs: 2, MaxResults: 1, DynamicPercent: -1}
	funcs := map[int]bool{}
	for seed := int64(0); seed < 300; seed++ {
		m, err := Generate(NewRand(seed), cfg)
		require.NoError(t, err)
		fs := m.Funcs()
		funcs[len(fs)] = true
		for _, f := range fs {
			ft := f.Type()
			assert.LessOrEqual(t, len(ft.Inputs), 2)
			assert.Len(t, ft.Results, 1)
			for _, a := range ft.Inputs {
				s, _ := ir.ShapeOf(a)
				assert.LessOrEqual(t, len(s), 3, "a partner may add one leading dimension")
				assert.False(t, ir.HasDynamicDim(s), "no `?` when DynamicPercent < 0")
			}
			f.Walk(func(op *ir.Operation) bool {
				for _, r := range op.Results() {
					s, _ := ir.ShapeOf(r.Type())
					assert.LessOrEqual(t, count(s), int64(64), "%s", op)
				}
				return true
			})
		}
	}
	assert.Equal(t, map[int]bool{1: true, 2: true, 3: true}, funcs)
}

// The generator reaches every graph op the passes handle, `?` dimensions
// and the written-out forms legalize-numerics recognises.
func TestCoverage(t *testing.T) {
	seen := map[string]bool{}
	dynamic, naiveLogAddExp := false, false
	for seed := int64(0); seed < 300; seed++ {
		text := GenerateText(seed, Config{})
		dynamic = dynamic || strings.Contains(text, "tensor<?x")
		m, err := Generate(NewRand(seed), Config{})
		require.NoError(t, err)
		m.Walk(func(op *ir.Operation) bool {
			seen[op.Name()] = true
			if op.Name() == "graph.log" {
				if d := op.Operand(0).DefiningOp(); d != nil && d.Name() == "graph.add" {
					naiveLogAddExp = true
				}
			}
			return true
		})
	}
	var missing []string
	for _, op := range ir.RegisteredOps() {
		if strings.HasPrefix(op.Name, "graph.") && !seen[op.Name] {
			missing = append(missing, op.Name)
		}
	}
	sort.Strings(missing)
	// graph.fused and graph.yield are what the fuse pass makes.
	assert.Equal(t, []string{"graph.fused", "graph.yield"}, missing)
	assert.True(t, dynamic)
	assert.True(t, naiveLogAddExp)
}

func TestConfigDefaults(t *testing.T) {
	c := Config{}.withDefaults()
	assert.Equal(t, Config{Funcs: 2, MaxOps: 12, MaxRank: 3, MaxExtent: 6, MaxElements: 1024, MaxArgs: 5, MaxResults: 3, DynamicPercent: 25}, c)
	assert.Equal(t, int64(eval.ExtremeDynExtent), int64(DynExtent))
}
