package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/ir"
)

func parseCompileArgs(t *testing.T, args ...string) (*compileOptions, []string, string) {
	t.Helper()
	registerTestPasses()
	o := defaultCompileOptions()
	fs := newFlagSet()
	o.register(fs)
	pos, diag := fs.parse(args)
	if diag != nil {
		return o, pos, diag.Error()
	}
	return o, pos, ""
}

func pieceTexts(o *compileOptions) []string {
	var out []string
	for _, p := range o.pipeline {
		out = append(out, p.text)
	}
	return out
}

func TestFlagSpellings(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		check func(t *testing.T, o *compileOptions, pos []string)
	}{
		{"single dash value after space", []string{"-o", "out.tir", "in.tir"}, func(t *testing.T, o *compileOptions, pos []string) {
			assert.Equal(t, "out.tir", o.output)
			assert.Equal(t, []string{"in.tir"}, pos)
		}},
		{"double dash with equals", []string{"--o=out.tir", "--target=h100"}, func(t *testing.T, o *compileOptions, pos []string) {
			assert.Equal(t, "out.tir", o.output)
			assert.Equal(t, "h100", o.targetName)
			assert.Empty(t, pos)
		}},
		{"single dash long flag with space", []string{"-emit", "ptx", "-target", "h200"}, func(t *testing.T, o *compileOptions, _ []string) {
			assert.Equal(t, "ptx", o.emit)
			assert.Equal(t, "h200", o.targetName)
		}},
		{"value may start with a dash", []string{"-o", "-"}, func(t *testing.T, o *compileOptions, pos []string) {
			assert.Equal(t, "-", o.output)
			assert.Empty(t, pos)
		}},
		{"booleans", []string{"--timing", "-split-input-file", "--verify-each=false", "--print-op-generic=true", "-print-debuginfo=1"}, func(t *testing.T, o *compileOptions, _ []string) {
			assert.True(t, o.timing)
			assert.True(t, o.splitInputFile)
			assert.False(t, o.verifyEach)
			assert.True(t, o.generic)
			assert.True(t, o.debugInfo)
		}},
		{"verify-each defaults to true", nil, func(t *testing.T, o *compileOptions, _ []string) {
			assert.True(t, o.verifyEach)
			assert.Equal(t, "tir", o.emit)
			assert.Equal(t, "cpu", o.targetName)
		}},
		{"lists repeat and split on commas", []string{"--print-ir-after=test-panic,test-invalid-ir", "--print-ir-after", "test-diagnose", "--remarks=fusion,test"}, func(t *testing.T, o *compileOptions, _ []string) {
			assert.Equal(t, []string{"test-panic", "test-invalid-ir", "test-diagnose"}, o.printAfter)
			assert.Equal(t, []string{"fusion", "test"}, o.remarks)
		}},
		{"stdin dash and double dash", []string{"--timing", "--", "--not-a-flag.tir"}, func(t *testing.T, o *compileOptions, pos []string) {
			assert.True(t, o.timing)
			assert.Equal(t, []string{"--not-a-flag.tir"}, pos)
		}},
		{"lone dash is standard input", []string{"-"}, func(t *testing.T, _ *compileOptions, pos []string) {
			assert.Equal(t, []string{"-"}, pos)
		}},
		{"pipeline pieces keep command-line order", []string{"--test-invalid-ir", "--pass-pipeline=builtin.module(test-panic)", "-O0", "--test-diagnose=op=graph.add severity=remark", "--test-panic={}"}, func(t *testing.T, o *compileOptions, _ []string) {
			o0, _ := lookupOptLevel("O0")
			assert.Equal(t, []string{"test-invalid-ir", "builtin.module(test-panic)", o0.pipeline, "test-diagnose{op=graph.add severity=remark}", "test-panic{}"}, pieceTexts(o))
			assert.Equal(t, "-O0", o.pipeline[2].flag)
		}},
		{"a pass flag does not take the next argument", []string{"--test-panic", "in.tir"}, func(t *testing.T, o *compileOptions, pos []string) {
			assert.Equal(t, []string{"test-panic"}, pieceTexts(o))
			assert.Equal(t, []string{"in.tir"}, pos)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, pos, err := parseCompileArgs(t, tt.args...)
			require.Empty(t, err)
			tt.check(t, o, pos)
		})
	}
}

func TestFlagErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--bogus-flag"}, "error: unknown flag '--bogus-flag' (see `tfc help`)"},
		{[]string{"-bogus-flag=3"}, "error: unknown flag '-bogus-flag' (see `tfc help`)"},
		{[]string{"--timng"}, "error: unknown flag '--timng'; did you mean '--timing'? (see `tfc help`)"},
		{[]string{"--print-ir-after-al"}, "error: unknown flag '--print-ir-after-al'; did you mean '--print-ir-after-all'? (see `tfc help`)"},
		{[]string{"--test-panik"}, "error: unknown flag '--test-panik'; did you mean '--test-panic'? (see `tfc help`)"},
		{[]string{"in.tir", "-o"}, "error: flag '-o' needs a value: -o=FILE"},
		{[]string{"--timing=maybe"}, "error: flag '--timing' takes true or false, not 'maybe'"},
		{[]string{"-O2=3"}, "error: flag '-O2' takes no value"},
		{[]string{"--="}, "error: unknown flag '--' (see `tfc help`)"},
	}
	for _, tt := range tests {
		t.Run(tt.args[0], func(t *testing.T) {
			_, _, err := parseCompileArgs(t, tt.args...)
			assert.Equal(t, tt.want, err)
		})
	}
}

func TestEditDistance(t *testing.T) {
	assert.Equal(t, 0, editDistance("cse", "cse"))
	assert.Equal(t, 1, editDistance("timng", "timing"))
	assert.Equal(t, 3, editDistance("", "abc"))
	assert.Equal(t, 2, editDistance("ab", "ba"))
}

func TestUsageListsEveryFlag(t *testing.T) {
	o := defaultCompileOptions()
	fs := newFlagSet()
	o.register(fs)
	u := fs.usage()
	for _, want := range []string{"-o FILE", "--emit=KIND", "--pass-pipeline='P'", "-O0", "-O2", "--print-ir-after-change", "--verify-diagnostics", "--crash-reproducer=FILE"} {
		assert.Contains(t, u, want)
	}
}

func TestOptLevelsNameRegisteredPasses(t *testing.T) {
	for _, l := range optLevels {
		_, err := ir.ParsePipeline(l.pipeline)
		assert.NoError(t, err, "-%s", l.flag)
	}
}

// A pass whose name is a driver flag could never be given as --NAME.
func TestPassNamesDoNotShadowFlags(t *testing.T) {
	fs := newFlagSet()
	defaultCompileOptions().register(fs)
	for _, p := range ir.RegisteredPasses() {
		_, clash := fs.defs[p.Name]
		assert.False(t, clash, "pass %q has the name of a tfc flag", p.Name)
	}
}
