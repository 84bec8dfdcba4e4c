package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/ir"
)

// Regression tests of defects reported against the driver from outside.

// An error that is already located keeps its one location: it used to be
// wrapped again and read `<stdin>:1:1: error: <stdin>:1:1: error: ...`.
func TestLocatedErrorIsNotWrappedAgain(t *testing.T) {
	src := `func.func @f(%x: tensor<1000000000000x4xf32>) -> tensor<1000000000000x4xf32> {
  %y = graph.exp %x : tensor<1000000000000x4xf32>
  return %y : tensor<1000000000000x4xf32>
}
`
	status, _, errOut := runTFC(t, nil, src, "interpret", "-", "--random-inputs", "1", "--output", t.TempDir())
	require.Equal(t, exitFailure, status, errOut)
	assert.Contains(t, errOut, "<stdin>:1:1: error: @f: argument #0: shape 1000000000000x4 is too large")
	assert.Equal(t, 1, strings.Count(errOut, "error:"), errOut)
}

// --remarks names kinds; one that is not known is an error listing the
// known ones, instead of silently reporting nothing.
func TestUnknownRemarkKindIsAnError(t *testing.T) {
	status, out, errOut := runTFC(t, nil, twoExps, "--remarks=fusion,bogus", "-")
	assert.Equal(t, exitFailure, status)
	assert.Empty(t, out)
	assert.Equal(t, "error: --remarks: unknown remark kind 'bogus' (known: fusion, numerics, sram, all)\n", errOut)

	for _, kind := range remarkKinds {
		status, _, errOut := runTFC(t, nil, twoExps, "--remarks="+kind, "-")
		assert.Equal(t, exitOK, status, "%s: %s", kind, errOut)
	}
	status, _, errOut = runTFC(t, testEnv, twoExps, "--remarks=test", "-")
	assert.Equal(t, exitOK, status, errOut)
}

// Every category a pass reports remarks under is one --remarks accepts.
func TestRemarkKindsCoverThePasses(t *testing.T) {
	remarkCall := regexp.MustCompile(`\.Remark\("([a-z-]+)"|remarkCategory\s*=\s*"([a-z-]+)"`)
	found := map[string]bool{}
	for _, dir := range []string{"../passes", "../lowering", "../dialects", "../emit", "../ir"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range remarkCall.FindAllStringSubmatch(string(data), -1) {
				found[m[1]+m[2]] = true
			}
			return nil
		})
		require.NoError(t, err)
	}
	require.Contains(t, found, "fusion", "the scan finds the fusion remarks")
	for kind := range found {
		assert.Contains(t, remarkKinds, kind, "a pass reports remarks of kind %q, which --remarks does not accept", kind)
	}
}

// A function name too long to be a file name is refused at the function,
// before the emitter fails writing with an unlocated "file name too long".
func TestOverlongFileNamesAreRefusedWithALocation(t *testing.T) {
	name := strings.Repeat("a", 1<<20)
	src := "func.func @" + name + "(%x: tensor<4xf32>) -> tensor<4xf32> {\n" +
		"  %y = graph.exp %x : tensor<4xf32>\n  return %y : tensor<4xf32>\n}\n"
	for _, args := range [][]string{
		{"--emit=ptx", "--target=h200"},
		{"--emit=metal", "--target=m3-max"},
		{"--emit=tt", "--target=blackhole-p150"},
		{"--emit=tt", "--target=blackhole-p150", "--pass-pipeline=canonicalize"},
	} {
		dir := t.TempDir()
		status, _, errOut := runTFC(t, nil, src, append(args, "-o", dir, "-")...)
		assert.Equal(t, exitFailure, status, "%v", args)
		assert.Contains(t, errOut, "<stdin>:1:1: error: function name @aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa... is 1048576 bytes long", "%v", args)
		assert.NotContains(t, errOut, "too long", "%v", args)
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		assert.Empty(t, entries, "%v: nothing is written", args)
	}
	// a name that fits is written
	dir := t.TempDir()
	src = strings.Replace(src, name, strings.Repeat("b", maxFileSymbolBytes), 1)
	status, _, errOut := runTFC(t, nil, src, "--emit=ptx", "--target=h200", "-o", dir, "-")
	require.Equal(t, exitOK, status, errOut)
	assert.FileExists(t, filepath.Join(dir, strings.Repeat("b", maxFileSymbolBytes)+".ptx"))
}

func init() {
	registerEmitter(&emitter{kind: "test-internal", summary: "breaks an invariant of its own, to test how the driver reports it",
		emit: func(req *emitRequest) error {
			op := req.Module.Funcs()[0].Operation
			return &ir.InternalError{Pass: "--emit=test-internal", Value: "broken",
				Diags: []*ir.Diagnostic{ir.Errorf(op.Loc, "'test' backend: kernel 'k' broke its own check")}}
		}})
}

// An emitter's broken invariant is an internal compiler error (exit
// status 2, the crash reproducer hint), not a user error: the tt
// backend's "overwrites its kept row" check used to read as a problem of
// the program.
func TestEmitterInternalErrorIsInternal(t *testing.T) {
	status, out, errOut := runTFC(t, nil, twoExps, "--emit=test-internal", "-")
	assert.Equal(t, exitInternal, status)
	assert.Empty(t, out)
	assert.Equal(t, "error: internal compiler error: --emit=test-internal broke an invariant of its own\n"+
		"<stdin>:1:1: error: 'test' backend: kernel 'k' broke its own check\n"+
		"func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n^\n"+
		"note: please rerun with --crash-reproducer=FILE to save the IR and the pipeline that reproduce the failure\n", errOut)

	repro := filepath.Join(t.TempDir(), "repro.tir")
	status, _, errOut = runTFC(t, nil, twoExps, "--emit=test-internal", "--cse", "--crash-reproducer="+repro, "-")
	assert.Equal(t, exitInternal, status)
	assert.Contains(t, errOut, "note: a crash reproducer was written to '"+repro+"'")
	data, err := os.ReadFile(repro)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(data), "// Crash reproducer: the IR the --emit=test-internal backend failed on.\n// Reproduce with: tfc --emit=test-internal --target=cpu "+repro+"\nmodule {\n"), string(data))
	assert.Equal(t, 1, strings.Count(string(data), "graph.exp"), "the IR after the pipeline (cse)")
}

// interpret after a lowering pipeline runs the lowered function in the
// loop interpreter, its output buffers allocated for it; it used to fail
// with "@f takes 2 arguments but 1 inputs were given".
func TestInterpretLoweredProgram(t *testing.T) {
	src := `func.func @f(%x: tensor<3x40xf32>, %w: tensor<40xf32>) -> (tensor<3x40xf32>, tensor<3x40xf32>) {
  %e = graph.exp %x : tensor<3x40xf32>
  %s = graph.softmax %x : tensor<3x40xf32>
  %m = graph.mul %s, %w : (tensor<3x40xf32>, tensor<40xf32>) -> tensor<3x40xf32>
  return %e, %m : tensor<3x40xf32>, tensor<3x40xf32>
}
`
	ref := t.TempDir()
	status, _, errOut := runTFC(t, nil, src, "interpret", "-", "--random-inputs", "3", "--output", ref)
	require.Equal(t, exitOK, status, errOut)
	for _, pipeline := range [][]string{{"-O2"}, {"-O0"}, {"--pass-pipeline=decompose,fuse,lower-to-loops"}, {"-O2", "--target=h200"}} {
		dir := t.TempDir()
		args := append([]string{"interpret", "-"}, pipeline...)
		status, _, errOut := runTFC(t, nil, src, append(args, "--random-inputs", "3", "--output", dir)...)
		require.Equal(t, exitOK, status, "%v: %s", pipeline, errOut)
		for _, r := range []string{"result0.npy", "result1.npy"} {
			want, err := eval.ReadNpy(filepath.Join(ref, r))
			require.NoError(t, err)
			got, err := eval.ReadNpy(filepath.Join(dir, r))
			require.NoError(t, err, "%v", pipeline)
			require.Equal(t, want.Shape, got.Shape, "%v %s", pipeline, r)
			for i := range want.Data {
				assert.InDelta(t, want.Data[i], got.Data[i], 1e-6, "%v %s element %d", pipeline, r, i)
			}
		}
	}
	status, _, errOut = runTFC(t, nil, src, "interpret", "-", "-O2", "--f64", "--random-inputs", "3", "--output", t.TempDir())
	assert.Equal(t, exitFailure, status)
	assert.Contains(t, errOut, "<stdin>:1:1: error: --f64 evaluates graph-level functions only, and the pipeline lowered @f to loops")
}

// A mistyped command is answered with the command it is close to, not
// taken for the name of the input file.
func TestMistypedCommandSuggestsOne(t *testing.T) {
	for typo, want := range map[string]string{"runn": "run", "interpet": "interpret", "pases": "passes", "verison": "version", "rofline": "roofline"} {
		status, out, errOut := runTFC(t, nil, "", typo, "x.tir")
		assert.Equal(t, exitFailure, status, typo)
		assert.Empty(t, out)
		assert.Equal(t, "error: unknown command '"+typo+"'; did you mean `tfc "+want+"`? (see `tfc help`)\n", errOut)
	}
	// a word far from every command, or that looks like a path, is still
	// the input file
	for _, word := range []string{"xyzzy", "runn.tir", "dir/runn"} {
		status, _, errOut := runTFC(t, nil, "", word)
		assert.Equal(t, exitFailure, status, word)
		assert.Contains(t, errOut, "error: cannot open '"+word+"'", word)
	}
	// an existing file of that name compiles
	dir := t.TempDir()
	path := filepath.Join(dir, "runn")
	require.NoError(t, os.WriteFile(path, []byte(twoExps), 0o644))
	t.Chdir(dir)
	status, out, errOut := runTFC(t, nil, "", "runn")
	assert.Equal(t, exitOK, status, errOut)
	assert.Contains(t, out, "func.func @f")
}

// mlir-opt's spellings of the flags are aliases of the flags without the
// `mlir-` prefix.
func TestMLIRFlagSpellings(t *testing.T) {
	for mlirFlag, flag := range map[string]string{
		"--mlir-print-ir-after-all":    "--print-ir-after-all",
		"--mlir-print-ir-before-all":   "--print-ir-before-all",
		"--mlir-print-ir-after-change": "--print-ir-after-change",
		"--mlir-print-ir-after=cse":    "--print-ir-after=cse",
		"--mlir-print-debuginfo":       "--print-debuginfo",
		"--mlir-print-op-generic":      "--print-op-generic",
		"-mlir-print-op-generic=false": "-print-op-generic=false",
	} {
		s1, out1, err1 := runTFC(t, nil, twoExps, "--cse", mlirFlag, "-")
		s2, out2, err2 := runTFC(t, nil, twoExps, "--cse", flag, "-")
		require.Equal(t, exitOK, s1, "%s: %s", mlirFlag, err1)
		assert.Equal(t, s2, s1, mlirFlag)
		assert.Equal(t, out2, out1, mlirFlag)
		assert.Equal(t, err2, err1, mlirFlag)
	}
	status, _, errOut := runTFC(t, nil, twoExps, "--cse", "--mlir-timing", "-")
	require.Equal(t, exitOK, status, errOut)
	assert.Contains(t, errOut, "Execution time report")
	repro := filepath.Join(t.TempDir(), "r.tir")
	status, _, errOut = runTFC(t, testEnv, twoExps, "--test-panic", "--mlir-pass-pipeline-crash-reproducer="+repro, "-")
	assert.Equal(t, exitInternal, status)
	assert.Contains(t, errOut, "a crash reproducer was written to '"+repro+"'")
	status, _, errOut = runTFC(t, nil, twoExps, "--mlir-bogus", "-")
	assert.Equal(t, exitFailure, status)
	assert.Equal(t, "error: unknown flag '--mlir-bogus' (see `tfc help`)\n", errOut)
}
