package difftest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tensorforge/tensorforge/dialects/graph/randprog"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/parser"
)

// fuzzPipelines are the pipelines FuzzPipeline chooses from: every
// graph-level pass alone, the -O2 graph pipeline, and pairs that run a
// pass on another's output (or on its own, which must change nothing that
// matters).
var fuzzPipelines = []string{
	Canonicalize, CSE, DCE, LegalizeNumerics, Decompose, Fuse,
	O2GraphPipeline,
	"legalize-numerics,legalize-numerics",
	"decompose,decompose",
	"legalize-numerics,decompose",
	"decompose,fuse",
	"fuse,canonicalize,cse",
	"canonicalize,legalize-numerics,canonicalize",
	"cse,dce,fuse,dce",
	"legalize-numerics{expand=false},fuse",
	"fuse{max-ops=2},decompose",
	"legalize-numerics{keep-unchecked-casts=true},cse",
}

// fuzzPipeline picks a pipeline and keeps its registered passes.
func fuzzPipeline(choice uint8) string {
	p, _ := Registered(fuzzPipelines[int(choice)%len(fuzzPipelines)])
	if _, err := ir.ParsePipeline(p); err != nil {
		// an option a pass does not (yet) declare: run the plain passes
		var names []string
		for _, part := range strings.Split(p, ",") {
			names = append(names, strings.SplitN(part, "{", 2)[0])
		}
		p = strings.Join(names, ",")
	}
	return p
}

// fuzzConfig varies the size and make-up of programs with the seed.
func fuzzConfig(seed int64, choice uint8) randprog.Config {
	u := uint64(seed)
	return randprog.Config{
		Funcs:          1 + int(u%3),
		MaxOps:         4 + int(u>>2%24),
		MaxRank:        1 + int(u>>7%4),
		MaxExtent:      2 + int64(u>>9%7),
		DynamicPercent: []int{25, -1, 100}[choice>>6%3],
		// one choice in two names values and functions adversarially
		AdversarialNames: choice&0x20 != 0,
	}
}

// fuzzOptions evaluate fewer input sets than the tests, for speed.
var fuzzOptions = Options{Seeds: []int64{1}, Scales: []float64{1, 100}, ExtremeSeeds: []int64{1}}

// FuzzPipeline generates a program from a seed (randprog), runs a pipeline
// chosen by choice on it with the verifier after every pass, and checks
// that nothing panics, the result verifies, prints and parses back to the
// same text, and computes what the original does (Check). Its corpus is
// testdata/fuzz/FuzzPipeline.
func FuzzPipeline(f *testing.F) {
	for i := range fuzzPipelines {
		f.Add(int64(i+1), uint8(i))
		f.Add(int64(1000+i*37), uint8(i|0x40))
	}
	f.Fuzz(func(t *testing.T, seed int64, choice uint8) {
		pipeline := fuzzPipeline(choice)
		if pipeline == "" {
			t.Skip("no pass of the pipeline is registered")
		}
		m, err := randprog.Generate(randprog.NewRand(seed), fuzzConfig(seed, choice))
		require.NoError(t, err)
		require.NoError(t, ir.Verify(m.Operation))
		text := ir.Print(m.Operation, ir.PrintOptions{})
		requireRoundTrip(t, text)

		after := CloneModule(m)
		err = RunPipeline(after, pipeline, "")
		require.NoError(t, err)
		requireRoundTrip(t, ir.Print(after.Operation, ir.PrintOptions{}))

		opts := fuzzOptions
		opts.KnownIssue = knownIssue(pipeline)
		rep, err := Check(m, pipeline, opts)
		require.NoError(t, err)
		require.True(t, rep.OK(), "%s", rep)
	})
}

// requireRoundTrip checks that text parses, verifies and prints as itself.
func requireRoundTrip(t *testing.T, text string) {
	t.Helper()
	m, err := parser.Parse("fuzz.tir", text)
	require.NoError(t, err, text)
	require.NoError(t, ir.Verify(m.Operation), text)
	require.Equal(t, text, ir.Print(m.Operation, ir.PrintOptions{}))
}
