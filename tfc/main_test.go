package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runTFC runs a command line with src on standard input.
func runTFC(t *testing.T, env map[string]string, src string, args ...string) (status int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	sio := &stdio{in: strings.NewReader(src), out: &out, err: &errOut, getenv: func(k string) string { return env[k] }}
	status = run(args, sio)
	return status, out.String(), errOut.String()
}

var testEnv = map[string]string{"TFC_ENABLE_TEST_PASSES": "1"}

const twoExps = `func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = graph.exp %x : tensor<4xf32>
  %b = graph.exp %x : tensor<4xf32>
  %c = graph.add %a, %b : tensor<4xf32>
  return %c : tensor<4xf32>
}
`

func init() {
	registerCommand(&command{name: "test-crash", usage: "tfc test-crash", summary: "panics outside any pass",
		run: func([]string, *stdio) int { panic("crash outside a pass") }})
}

func TestCompileFromStandardInput(t *testing.T) {
	status, out, errOut := runTFC(t, nil, twoExps, "--cse", "-")
	require.Equal(t, exitOK, status, errOut)
	assert.Empty(t, errOut)
	assert.Equal(t, 1, strings.Count(out, "graph.exp"), out)
	assert.True(t, strings.HasPrefix(out, "module {\n"), out)
}

func TestOutputIsDeterministic(t *testing.T) {
	src := twoExps + "// -----\n" + strings.ReplaceAll(twoExps, "@f", "@g")
	args := []string{"-O2", "--split-input-file", "--print-debuginfo", "--print-ir-after-all"}
	_, out1, err1 := runTFC(t, nil, src, args...)
	for i := 0; i < 3; i++ {
		_, out2, err2 := runTFC(t, nil, src, args...)
		require.Equal(t, out1, out2)
		require.Equal(t, err1, err2)
	}
	assert.Equal(t, 1, strings.Count(out1, splitMarker+"\n"), out1)
	assert.Contains(t, out1, `loc("<stdin>":8:1)`, "the second part keeps the lines of the whole input")
}

func TestExitStatuses(t *testing.T) {
	tests := []struct {
		name       string
		env        map[string]string
		args       []string
		status     int
		stderrHas  string
		stderrNot  string
		stdoutHas  string
		stdoutNone bool
	}{
		{name: "success", args: []string{"--cse"}, status: exitOK, stdoutHas: "func.func @f"},
		{name: "unknown flag", args: []string{"--nope"}, status: exitFailure, stderrHas: "error: unknown flag '--nope'", stdoutNone: true},
		{name: "trailing comma in a pipeline", args: []string{"--pass-pipeline=cse,"}, status: exitFailure, stderrHas: "<pass-pipeline>:1:4: error: expected a pass name after ','"},
		{name: "unknown pass", args: []string{"--pass-pipeline=cse,zap"}, status: exitFailure, stderrHas: "<pass-pipeline>:1:5: error: 'zap' does not refer to a registered pass", stdoutNone: true},
		{name: "missing file", args: []string{filepath.Join(os.TempDir(), "tfc-no-such-file.tir")}, status: exitFailure, stderrHas: "no such file", stdoutNone: true},
		{name: "crashing pass", env: testEnv, args: []string{"--test-panic"}, status: exitInternal,
			stderrHas: "error: internal compiler error: pass 'test-panic' crashed: test-panic: deliberate crash", stderrNot: "goroutine", stdoutNone: true},
		{name: "crashing pass with TFC_DEBUG", env: map[string]string{"TFC_ENABLE_TEST_PASSES": "1", "TFC_DEBUG": "1"}, args: []string{"--test-panic"},
			status: exitInternal, stderrHas: "goroutine", stdoutNone: true},
		{name: "invalid IR after a pass", env: testEnv, args: []string{"--test-invalid-ir"}, status: exitInternal,
			stderrHas: "pass 'test-invalid-ir' left invalid IR\n<stdin>:5:3: error: 'func.return' op", stdoutNone: true},
		{name: "crash outside a pass", args: []string{"test-crash"}, status: exitInternal,
			stderrHas: "error: internal compiler error: crash outside a pass\nnote: please rerun with --crash-reproducer=FILE", stderrNot: "goroutine"},
		{name: "pass error", env: testEnv, args: []string{"--test-diagnose=severity=error"}, status: exitFailure,
			stderrHas: "<stdin>:2:3: error: test-diagnose: found 'graph.exp'\n  %a = graph.exp %x : tensor<4xf32>\n", stdoutNone: true},
		{name: "warnings do not fail", env: testEnv, args: []string{"--test-diagnose"}, status: exitOK,
			stderrHas: "<stdin>:3:3: warning: test-diagnose: found 'graph.exp'", stdoutHas: "func.func @f"},
		{name: "multi-file emitter without -o", args: []string{"--emit=ptx"}, status: exitFailure, stderrHas: "error: --emit=ptx writes several files: name a directory with -o DIR"},
		{name: "unknown target", args: []string{"--target=abacus"}, status: exitFailure, stderrHas: "error: unknown target 'abacus' (known: cpu, h100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, out, errOut := runTFC(t, tt.env, twoExps, tt.args...)
			assert.Equal(t, tt.status, status, errOut)
			if tt.stderrHas != "" {
				assert.Contains(t, errOut, tt.stderrHas)
			}
			if tt.stderrNot != "" {
				assert.NotContains(t, errOut, tt.stderrNot)
			}
			if tt.stdoutHas != "" {
				assert.Contains(t, out, tt.stdoutHas)
			}
			if tt.stdoutNone {
				assert.Empty(t, out)
			}
		})
	}
}

func TestDiagnosticsAreSortedByLocation(t *testing.T) {
	src := `func.func @f(%x: tensor<4xf32>) -> tensor<4xf16> {
  return %x : tensor<4xf32>
}
func.func @g(%x: tensor<4xf32>) -> tensor<4xf16> {
  return %x : tensor<4xf32>
}
`
	status, _, errOut := runTFC(t, nil, src)
	require.Equal(t, exitFailure, status)
	first, second := strings.Index(errOut, "<stdin>:2:"), strings.Index(errOut, "<stdin>:5:")
	require.True(t, first >= 0 && second > first, errOut)
}

func TestOutputFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.tir")
	status, out, errOut := runTFC(t, nil, twoExps, "-o", path, "--cse")
	require.Equal(t, exitOK, status, errOut)
	assert.Empty(t, out)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(data), "graph.exp"))

	missing := filepath.Join(dir, "nope", "out.tir")
	status, _, errOut = runTFC(t, nil, twoExps, "-o", missing)
	assert.Equal(t, exitFailure, status)
	assert.Equal(t, "error: cannot write '"+missing+"': no such directory\n", errOut)
}

func TestCrashReproducer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "repro.tir")
	status, _, errOut := runTFC(t, testEnv, twoExps, "--cse", "--test-panic", "--dce", "--crash-reproducer="+path)
	require.Equal(t, exitInternal, status)
	assert.Contains(t, errOut, "note: a crash reproducer was written to '"+path+"'")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	text := string(data)
	assert.Contains(t, text, "// Reproduce with: tfc --pass-pipeline='test-panic,dce' "+path+"\n")
	assert.Equal(t, 1, strings.Count(text, "graph.exp"), "the IR before the crashing pass, after cse:\n%s", text)

	// the reproducer crashes the same way
	status, _, errOut = runTFC(t, testEnv, "", "--pass-pipeline=test-panic,dce", path)
	assert.Equal(t, exitInternal, status)
	assert.Contains(t, errOut, "pass 'test-panic' crashed")
}

func TestSubcommands(t *testing.T) {
	status, out, _ := runTFC(t, nil, "", "version")
	assert.Equal(t, exitOK, status)
	assert.Equal(t, "tfc version "+toolVersion+" (LLVM IR 14, PTX 8.0 sm_90)\n", out)

	status, out, _ = runTFC(t, nil, "", "passes")
	assert.Equal(t, exitOK, status)
	for _, want := range []string{"  cse ", "  dce ", "  canonicalize ", "-O2", "canonicalize,cse,dce"} {
		assert.Contains(t, out, want)
	}

	status, out, _ = runTFC(t, nil, "", "targets")
	assert.Equal(t, exitOK, status)
	for _, want := range []string{"blackhole-p150", "tenstorrent_blackhole", "3.35 TB/s", "232448 B (227 KiB)"} {
		assert.Contains(t, out, want)
	}

	status, out, _ = runTFC(t, nil, "", "--help")
	assert.Equal(t, exitOK, status)
	assert.Contains(t, out, "tfc targets")
	assert.Contains(t, out, "--split-input-file")
}

func TestFormatHelpers(t *testing.T) {
	assert.Equal(t, "3.35 TB/s", formatBandwidth(3.35e12))
	assert.Equal(t, "409.6 GB/s", formatBandwidth(409.6e9))
	assert.Equal(t, "1572864 B (1536 KiB)", formatBytes(1536*1024))
	assert.Equal(t, "1048576 B (1 MiB)", formatBytes(1<<20))
	assert.Equal(t, "1000 B", formatBytes(1000))
}

func TestCompileInputForOtherCommands(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.tir")
	require.NoError(t, os.WriteFile(path, []byte(twoExps), 0o644))
	var errOut bytes.Buffer
	sio := &stdio{in: strings.NewReader(""), out: &bytes.Buffer{}, err: &errOut, getenv: func(string) string { return "" }}

	o := defaultCompileOptions()
	o.defaultLevel = "O2" // as `tfc run` compiles
	c := newCompiler(o, sio)
	require.NotNil(t, c)
	m, status := c.compileInput([]string{path}, sio)
	require.Equal(t, exitOK, status, errOut.String())
	require.NotNil(t, m.Operation)
	// -O2 merged the two identical exps (cse) and lowered the result to one kernel
	assert.Equal(t, 1, strings.Count(m.String(), "loop.exp"), "O2 ran cse and lowering")
	assert.Equal(t, 1, strings.Count(m.String(), "loop.kernel"), "O2 fused into one kernel")

	m, status = c.compileInput([]string{path + ".missing"}, sio)
	assert.Equal(t, exitFailure, status)
	assert.Nil(t, m.Operation)
	assert.Contains(t, errOut.String(), "no such file")
}

// Every command describes its own flags: `tfc help COMMAND` and
// `tfc COMMAND --help` print its synopsis and the flags it declares.
func TestCommandHelp(t *testing.T) {
	for _, args := range [][]string{{"help", "run"}, {"run", "--help"}, {"run", "x.tir", "-h"}} {
		status, out, _ := runTFC(t, nil, "", args...)
		require.Equal(t, exitOK, status, args)
		require.Contains(t, out, "Usage: tfc run FILE.tir", args)
		require.Contains(t, out, "--threads=N", args)
		require.NotContains(t, out, "--emit=KIND", args) // run compiles for the CPU and writes --output
	}
	status, out, _ := runTFC(t, nil, "", "help", "verify-quant")
	require.Equal(t, exitOK, status)
	require.Contains(t, out, "It takes no flags.")
	status, out, _ = runTFC(t, nil, "", "compare-npy", "--help")
	require.Equal(t, exitOK, status)
	require.Contains(t, out, "--ulp=N")
	status, _, errOut := runTFC(t, nil, "", "help", "nope")
	require.Equal(t, exitFailure, status)
	require.Contains(t, errOut, "no command 'nope'")
	// after `--` a -h is an argument, not a request for help
	status, _, _ = runTFC(t, nil, "", "compare-npy", "--", "-h")
	require.Equal(t, exitFailure, status)
}
