package ir_test

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tensorforge/tensorforge/ir"
)

// Passes that exist only in these tests:
//
//	test-opts    does nothing; takes one option of every kind
//	test-touch   sets {touched = true} on every test.op (changes the IR)
//	test-break   drops the operands of every return (leaves invalid IR)
//	test-panic   panics
//	test-fail    returns an error
//	test-report  reports an error into the context and returns nil
//	test-remark  emits a fusion and a numerics remark and a warning
//	test-no-new  cannot be built: its New fails
func init() {
	nop := func(ir.PassOptions) (ir.Pass, error) {
		return ir.PassFunc(func(ir.Module, *ir.PassContext) error { return nil }), nil
	}
	ir.RegisterPass(&ir.PassInfo{
		Name: "test-opts", Title: "Opts", Summary: "takes options",
		Options: []ir.PassOption{
			{Name: "count", Kind: ir.OptInt, Default: "4"},
			{Name: "flag", Kind: ir.OptBool, Default: "false"},
			{Name: "label", Kind: ir.OptString, Default: "none"},
			{Name: "cap", Kind: ir.OptBytes, Default: "64KiB"},
		},
		New: nop,
	})
	ir.RegisterPass(&ir.PassInfo{Name: "test-touch", Title: "Touch", New: func(ir.PassOptions) (ir.Pass, error) {
		return ir.PassFunc(func(m ir.Module, _ *ir.PassContext) error {
			m.Walk(func(o *ir.Operation) bool {
				if o.Name() == opTest {
					o.SetAttr("touched", ir.BoolAttr(true))
				}
				return true
			})
			return nil
		}), nil
	}})
	ir.RegisterPass(&ir.PassInfo{Name: "test-break", New: func(ir.PassOptions) (ir.Pass, error) {
		return ir.PassFunc(func(m ir.Module, _ *ir.PassContext) error {
			for _, f := range m.Funcs() {
				f.Return().DropOperands()
			}
			return nil
		}), nil
	}})
	ir.RegisterPass(&ir.PassInfo{Name: "test-panic", Title: "Panic", New: func(ir.PassOptions) (ir.Pass, error) {
		return ir.PassFunc(func(ir.Module, *ir.PassContext) error { panic("index out of reach") }), nil
	}})
	ir.RegisterPass(&ir.PassInfo{Name: "test-fail", New: func(ir.PassOptions) (ir.Pass, error) {
		return ir.PassFunc(func(ir.Module, *ir.PassContext) error {
			return ir.Errorf(ir.Location{File: "t.tir", Line: 2, Col: 3}, "cannot do this")
		}), nil
	}})
	ir.RegisterPass(&ir.PassInfo{Name: "test-report", New: func(ir.PassOptions) (ir.Pass, error) {
		return ir.PassFunc(func(m ir.Module, ctx *ir.PassContext) error {
			ctx.Warning(m.Loc, "only a warning")
			ctx.Diags.Emit(ir.SevError, m.Loc, "reported %d", 1)
			return nil
		}), nil
	}})
	ir.RegisterPass(&ir.PassInfo{Name: "test-remark", New: func(ir.PassOptions) (ir.Pass, error) {
		return ir.PassFunc(func(m ir.Module, ctx *ir.PassContext) error {
			ctx.Remark("fusion", m.Loc, "fused %d ops", 3)
			ctx.Remark("numerics", m.Loc, "kept f32")
			ctx.Warning(m.Loc, "careful")
			return nil
		}), nil
	}})
	ir.RegisterPass(&ir.PassInfo{Name: "test-no-new", New: func(ir.PassOptions) (ir.Pass, error) {
		return nil, errors.New("test-no-new cannot be built")
	}})
}

func TestParsePipeline(t *testing.T) {
	tests := []struct {
		text string
		want string // Pipeline.String()
	}{
		{"", ""},
		{"   ", ""},
		{"test-opts", "test-opts"},
		{"test-opts,test-touch", "test-opts,test-touch"},
		{"  test-opts ,\n\ttest-touch  ", "test-opts,test-touch"},
		{"test-opts{count=3 flag label=x}", "test-opts{count=3 flag=true label=x}"},
		{"test-opts{count=3,flag=false, cap = 1.5MiB}", "test-opts{cap=1.5MiB count=3 flag=false}"},
		{"test-opts{ , count=1 ,, }", "test-opts{count=1}"},
		{"test-opts{}", "test-opts"},
		{"test-opts{count=0x10}", "test-opts{count=0x10}"},
		{"test-opts{label=}", "test-opts{label=}"},
		{"test-opts{count=1 count=2}", "test-opts{count=2}"},
		{"builtin.module(test-opts)", "test-opts"},
		{"builtin.module(func.func(test-opts{count=2}),test-touch)", "test-opts{count=2},test-touch"},
		{"builtin.module( func.func( test-opts ) , any(test-touch) )", "test-opts,test-touch"},
		{"builtin.module()", ""},
	}
	for _, tc := range tests {
		t.Run(tc.text, func(t *testing.T) {
			p, err := ir.ParsePipeline(tc.text)
			require.NoError(t, err)
			assert.Equal(t, tc.want, p.String())
		})
	}
}

func TestParsePipelineErrors(t *testing.T) {
	tests := []struct {
		text string
		want string
	}{
		{"test-nope", "<pass-pipeline>:1:1: error: 'test-nope' does not refer to a registered pass (see `tfc passes`)"},
		{"test-opts,", "<pass-pipeline>:1:10: error: expected a pass name after ','"},
		{"builtin.module(test-opts, )", "<pass-pipeline>:1:25: error: expected a pass name after ','"},
		{"test-opts,  test-nope", "<pass-pipeline>:1:13: error: 'test-nope' does not refer to a registered pass (see `tfc passes`)"},
		{"builtin.module", "<pass-pipeline>:1:1: error: 'builtin.module' does not refer to a registered pass (see `tfc passes`)"},
		{"test-opts{bogus=1}", "<pass-pipeline>:1:11: error: pass 'test-opts' has no option 'bogus' (options: count, flag, label, cap)"},
		{"test-touch{x=1}", "<pass-pipeline>:1:12: error: pass 'test-touch' has no option 'x' (it takes no options)"},
		{"test-opts{count=abc}", "<pass-pipeline>:1:17: error: invalid value 'abc' for option 'count' of pass 'test-opts': expected an integer"},
		{"test-opts{count=1.5}", "<pass-pipeline>:1:17: error: invalid value '1.5' for option 'count' of pass 'test-opts': expected an integer"},
		{"test-opts{count=-1}", "<pass-pipeline>:1:17: error: invalid value '-1' for option 'count' of pass 'test-opts': expected a non-negative integer"},
		{"test-opts{count=}", "<pass-pipeline>:1:17: error: invalid value '' for option 'count' of pass 'test-opts': expected an integer"},
		{"test-opts{flag=yes}", "<pass-pipeline>:1:16: error: invalid value 'yes' for option 'flag' of pass 'test-opts': expected true or false"},
		{"test-opts{cap=12XB}", "<pass-pipeline>:1:15: error: invalid value '12XB' for option 'cap' of pass 'test-opts': '12XB' is not a byte size (examples: 4096, 228KiB, 1.5MiB)"},
		{"test-opts{cap=nan}", "<pass-pipeline>:1:15: error: invalid value 'nan' for option 'cap' of pass 'test-opts': 'nan' is not a byte size (examples: 4096, 228KiB, 1.5MiB)"},
		{"test-opts{count}", "<pass-pipeline>:1:11: error: option 'count' of pass 'test-opts' needs a value: count=..."},
		{"test-opts{=1}", "<pass-pipeline>:1:11: error: expected an option name in the options of pass 'test-opts'"},
		{"test-opts{count=1", "<pass-pipeline>:1:10: error: unterminated options of pass 'test-opts': missing '}'"},
		{"test-touch,test-opts{", "<pass-pipeline>:1:21: error: unterminated options of pass 'test-opts': missing '}'"},
		{"test-opts)", "<pass-pipeline>:1:10: error: unbalanced ')' in pass pipeline"},
		{"builtin.module(test-opts))", "<pass-pipeline>:1:26: error: unbalanced ')' in pass pipeline"},
		{"builtin.module(test-opts", "<pass-pipeline>:1:25: error: expected ')' to close 'builtin.module('"},
		{"builtin.module(func.func(test-opts)", "<pass-pipeline>:1:36: error: expected ')' to close 'builtin.module('"},
		{"builtin.module(test-opts test-touch)", "<pass-pipeline>:1:26: error: expected ')' to close 'builtin.module('"},
		{"foo(test-opts)", "<pass-pipeline>:1:1: error: 'foo' is not an op that can hold a nested pipeline (use builtin.module, func.func or any)"},
		{",test-opts", "<pass-pipeline>:1:1: error: expected a pass name in pass pipeline"},
		{"test-opts,,test-touch", "<pass-pipeline>:1:11: error: expected a pass name in pass pipeline"},
		{"test-opts test-touch", "<pass-pipeline>:1:11: error: unexpected 't' in pass pipeline"},
		{"test-opts{count=1}{flag}", "<pass-pipeline>:1:19: error: unexpected '{' in pass pipeline"},
		{"test-opts é", "<pass-pipeline>:1:11: error: unexpected 'é' in pass pipeline"},
	}
	for _, tc := range tests {
		t.Run(tc.text, func(t *testing.T) {
			p, err := ir.ParsePipeline(tc.text)
			require.Error(t, err)
			assert.Nil(t, p)
			var d *ir.Diagnostic
			require.ErrorAs(t, err, &d)
			assert.Equal(t, ir.PipelineFile, d.Loc.File)
			assert.Equal(t, tc.want, err.Error())
		})
	}
}

func TestPassOptions(t *testing.T) {
	p, err := ir.ParsePipeline("test-opts{count=0x10 flag=1 cap=1.5MiB},test-opts")
	require.NoError(t, err)
	set, defaults := p[0].Options, p[1].Options
	assert.Equal(t, int64(16), set.Int("count"))
	assert.True(t, set.Bool("flag"))
	assert.Equal(t, int64(1572864), set.Bytes("cap"))
	assert.Equal(t, "none", set.String("label"))
	assert.True(t, set.IsSet("count"))
	assert.False(t, set.IsSet("label"))
	assert.Equal(t, "{cap=1.5MiB count=0x10 flag=1}", set.Spec())

	assert.Equal(t, int64(4), defaults.Int("count"))
	assert.False(t, defaults.Bool("flag"))
	assert.Equal(t, int64(65536), defaults.Bytes("cap"))
	assert.Equal(t, "", defaults.String("unknown"))
	assert.Equal(t, "", defaults.Spec())
	assert.Equal(t, "test-opts", p[1].Spec())

	var zero ir.PassOptions
	assert.Equal(t, "", zero.String("count"))
	assert.Equal(t, int64(0), zero.Int("count"))

	e, err := ir.NewPipelineEntry("test-opts", "{count=2}")
	require.NoError(t, err)
	assert.Equal(t, "test-opts{count=2}", e.Spec())
	_, err = ir.NewPipelineEntry("test-opts,test-touch", "")
	assert.EqualError(t, err, "expected one pass, got 2")
	_, err = ir.NewPipelineEntry("builtin.module()", "")
	assert.EqualError(t, err, "expected one pass, got 0")
	_, err = ir.NewPipelineEntry("test-opts", "{bad=1}")
	assert.EqualError(t, err, "<pass-pipeline>:1:11: error: pass 'test-opts' has no option 'bad' (options: count, flag, label, cap)")
}

func TestParseByteSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"4096", 4096},
		{"0", 0},
		{"228KiB", 228 << 10},
		{"1.5MiB", 3 << 19},
		{"2GiB", 2 << 30},
		{"64KB", 64000},
		{"3MB", 3000000},
		{"1GB", 1000000000},
		{"512B", 512},
		{" 16 KiB ", 16 << 10},
		{"1e3", 1000},
		{"0.5KiB", 512},
		{"4611686018427387904", 1 << 62},
	}
	for _, tc := range tests {
		got, err := ir.ParseByteSize(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
	for _, bad := range []string{"", "KiB", "-1", "-1KiB", "12XB", "1 2", "nan", "NaNKiB", "inf", "4GiBB", "8EiB", "4611686018427387905000"} {
		_, err := ir.ParseByteSize(bad)
		assert.EqualError(t, err, fmt.Sprintf("'%s' is not a byte size (examples: 4096, 228KiB, 1.5MiB)", bad), bad)
	}
}

func TestPassRegistry(t *testing.T) {
	assert.NotNil(t, ir.LookupPass("test-opts"))
	assert.Nil(t, ir.LookupPass("test-none"))
	ps := ir.RegisteredPasses()
	for i := 1; i < len(ps); i++ {
		require.Less(t, ps[i-1].Name, ps[i].Name)
	}
	assert.Panics(t, func() { ir.RegisterPass(&ir.PassInfo{Name: "test-opts"}) })
}

// runPipeline runs text on the module parsed from src.
func runPipeline(t *testing.T, pm *ir.PassManager, text, src string, ctx *ir.PassContext) (ir.Module, error) {
	t.Helper()
	p, err := ir.ParsePipeline(text)
	require.NoError(t, err)
	pm.Pipeline = p
	m := parse(t, src)
	return m, pm.Run(m, ctx)
}

const passIR = "func.func @f(%x: f32) {\n  test.op %x : f32\n  return\n}\n"

const passIRPrinted = `module {
  func.func @f(%x: f32) {
    test.op %x : f32
    return
  }
}
`

const passIRTouched = `module {
  func.func @f(%x: f32) {
    test.op %x {touched = true} : f32
    return
  }
}
`

func dumpHeader(when, title, name string) string {
	return "// -----// IR Dump " + when + " " + title + " (" + name + ") //----- //\n"
}

func TestPassManagerPrinting(t *testing.T) {
	tests := []struct {
		name  string
		instr ir.Instrumentation
		want  string
	}{
		{"nothing", ir.Instrumentation{}, ""},
		{"print-before one pass", ir.Instrumentation{PrintBefore: map[string]bool{"test-touch": true}},
			dumpHeader("Before", "Touch", "test-touch") + passIRPrinted + "\n"},
		{"print-after one pass", ir.Instrumentation{PrintAfter: map[string]bool{"test-touch": true}},
			dumpHeader("After", "Touch", "test-touch") + passIRTouched + "\n"},
		{"print-before-all", ir.Instrumentation{PrintBeforeAll: true},
			dumpHeader("Before", "Opts", "test-opts") + passIRPrinted + "\n" +
				dumpHeader("Before", "Touch", "test-touch") + passIRPrinted + "\n" +
				// a pass without a title shows its name
				dumpHeader("Before", "test-remark", "test-remark") + passIRTouched + "\n"},
		{"print-after-all", ir.Instrumentation{PrintAfterAll: true},
			dumpHeader("After", "Opts", "test-opts") + passIRPrinted + "\n" +
				dumpHeader("After", "Touch", "test-touch") + passIRTouched + "\n" +
				dumpHeader("After", "test-remark", "test-remark") + passIRTouched + "\n"},
		{"print-after-change", ir.Instrumentation{PrintAfterChange: true},
			dumpHeader("After", "Touch", "test-touch") + passIRTouched + "\n"},
		{"print-after-change in the generic form", ir.Instrumentation{PrintAfterChange: true, PrintOptions: ir.PrintOptions{Generic: true}},
			dumpHeader("After", "Touch", "test-touch") + ir.Print(parse(t, strings.Replace(passIR, "test.op %x", "test.op %x {touched = true}", 1)).Operation, ir.PrintOptions{Generic: true}) + "\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			tc.instr.Out = &out
			pm := &ir.PassManager{Instr: tc.instr, VerifyEach: true}
			_, err := runPipeline(t, pm, "test-opts,test-touch,test-remark", passIR, nil)
			require.NoError(t, err)
			assert.Equal(t, tc.want, out.String())
		})
	}
	// without Out nothing is written, and nothing fails
	pm := &ir.PassManager{Instr: ir.Instrumentation{PrintAfterAll: true, Timing: true}}
	_, err := runPipeline(t, pm, "test-touch", passIR, nil)
	require.NoError(t, err)
}

func TestPassManagerTiming(t *testing.T) {
	var out bytes.Buffer
	pm := &ir.PassManager{Instr: ir.Instrumentation{Timing: true, Out: &out}}
	_, err := runPipeline(t, pm, "test-opts,test-touch", passIR, nil)
	require.NoError(t, err)
	report := regexp.MustCompile(`^` +
		`===-+===\n` +
		` +\.\.\. Execution time report \.\.\.\n` +
		`===-+===\n` +
		`  Total Execution Time: \d+\.\d{4} seconds\n\n` +
		`  ----Wall Time----  ----Name----\n` +
		`    \d+\.\d{4} \( *\d+\.\d%\)  Opts \(test-opts\)\n` +
		`    \d+\.\d{4} \( *\d+\.\d%\)  Touch \(test-touch\)\n` +
		`    \d+\.\d{4} \(100\.0%\)  Total\n$`)
	assert.Regexp(t, report, out.String())

	// a second run reports its own passes only
	out.Reset()
	require.NoError(t, pm.Run(parse(t, passIR), nil))
	assert.Regexp(t, report, out.String())
}

func TestPassManagerVerifyEach(t *testing.T) {
	pm := &ir.PassManager{VerifyEach: true}
	_, err := runPipeline(t, pm, "test-touch,test-break,test-opts", "func.func @f(%x: f32) -> f32 {\n  return %x : f32\n}\n", nil)
	var ie *ir.InternalError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "test-break", ie.Pass)
	assert.Equal(t, "internal compiler error in pass 'test-break': the IR is invalid after pass 'test-break'", ie.Error())
	assert.Empty(t, ie.Stack)
	assert.Equal(t, []string{"t.tir:2:3: error: 'func.return' op has 0 operands, but enclosing function (@f) returns 1"}, diagStrings(ir.ErrorList(ie.Diags)))

	// without VerifyEach the broken IR goes on
	pm = &ir.PassManager{}
	m, err := runPipeline(t, pm, "test-break", "func.func @f(%x: f32) -> f32 {\n  return %x : f32\n}\n", nil)
	require.NoError(t, err)
	assert.Error(t, ir.Verify(m.Operation))
}

func TestPassManagerPanic(t *testing.T) {
	var out bytes.Buffer
	pm := &ir.PassManager{Instr: ir.Instrumentation{PrintAfterAll: true, Timing: true, Out: &out}}
	_, err := runPipeline(t, pm, "test-touch,test-panic,test-opts", passIR, nil)
	var ie *ir.InternalError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "test-panic", ie.Pass)
	assert.Equal(t, "index out of reach", ie.Value)
	assert.Equal(t, "internal compiler error in pass 'test-panic': index out of reach", ie.Error())
	assert.Contains(t, ie.Stack, "goroutine")
	assert.Contains(t, ie.Stack, "pass_test.go", "the stack shows where the pass panicked")
	assert.Empty(t, ie.Reproducer)
	assert.Equal(t, dumpHeader("After", "Touch", "test-touch")+passIRTouched+"\n", out.String(),
		"no dump after the failing pass and no timing report")
}

func TestCrashReproducer(t *testing.T) {
	written := map[string]string{}
	writeFile := func(path string, data []byte) error {
		written[path] = string(data)
		return nil
	}
	pm := &ir.PassManager{CrashReproducer: "repro.tir", WriteFile: writeFile}
	_, err := runPipeline(t, pm, "test-touch,test-panic,test-opts{count=2}", passIR, nil)
	var ie *ir.InternalError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "repro.tir", ie.Reproducer)
	assert.Equal(t, "// Crash reproducer: the IR before pass 'test-panic' failed.\n"+
		"// Reproduce with: tfc --pass-pipeline='test-panic,test-opts{count=2}' repro.tir\n"+
		passIRTouched, written["repro.tir"])

	// a pass that returns an error gets a reproducer too
	written = map[string]string{}
	pm = &ir.PassManager{CrashReproducer: "fail.tir", WriteFile: writeFile, Instr: ir.Instrumentation{PrintOptions: ir.PrintOptions{DebugInfo: true}}}
	_, err = runPipeline(t, pm, "test-fail", passIR, nil)
	assert.EqualError(t, err, "t.tir:2:3: error: cannot do this")
	assert.Equal(t, "// Crash reproducer: the IR before pass 'test-fail' failed.\n"+
		"// Reproduce with: tfc --pass-pipeline='test-fail' fail.tir\n"+
		ir.Print(parse(t, passIR).Operation, ir.PrintOptions{DebugInfo: true}), written["fail.tir"])

	// a reproducer that cannot be written is not claimed
	pm = &ir.PassManager{CrashReproducer: "ro.tir", WriteFile: func(string, []byte) error { return errors.New("read-only") }}
	_, err = runPipeline(t, pm, "test-panic", passIR, nil)
	require.ErrorAs(t, err, &ie)
	assert.Empty(t, ie.Reproducer)
}

func TestPassManagerErrors(t *testing.T) {
	t.Run("returned error", func(t *testing.T) {
		pm := &ir.PassManager{}
		_, err := runPipeline(t, pm, "test-fail,test-panic", passIR, &ir.PassContext{Diags: &ir.Diagnostics{}})
		assert.EqualError(t, err, "t.tir:2:3: error: cannot do this")
	})
	t.Run("reported error", func(t *testing.T) {
		diags := &ir.Diagnostics{}
		pm := &ir.PassManager{}
		_, err := runPipeline(t, pm, "test-report,test-panic", passIR, &ir.PassContext{Diags: diags})
		var list ir.ErrorList
		require.ErrorAs(t, err, &list)
		assert.Equal(t, []string{"t.tir:1:1: error: reported 1"}, diagStrings(list))
		assert.Len(t, diags.List, 2, "the warning stays in the context")
	})
	t.Run("pass cannot be built", func(t *testing.T) {
		pm := &ir.PassManager{}
		_, err := runPipeline(t, pm, "test-no-new", passIR, nil)
		assert.EqualError(t, err, "test-no-new cannot be built")
	})
}

func TestRemarks(t *testing.T) {
	tests := []struct {
		name    string
		remarks map[string]bool
		want    []string
	}{
		{"none enabled", nil, []string{"t.tir:1:1: warning: careful"}},
		{"fusion only", map[string]bool{"fusion": true}, []string{"t.tir:1:1: remark: [fusion] fused 3 ops", "t.tir:1:1: warning: careful"}},
		{"numerics only", map[string]bool{"numerics": true, "fusion": false}, []string{"t.tir:1:1: remark: [numerics] kept f32", "t.tir:1:1: warning: careful"}},
		{"all", map[string]bool{"all": true}, []string{"t.tir:1:1: remark: [fusion] fused 3 ops", "t.tir:1:1: remark: [numerics] kept f32", "t.tir:1:1: warning: careful"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var seen []string
			diags := &ir.Diagnostics{Handler: func(d *ir.Diagnostic) { seen = append(seen, d.Error()) }}
			pm := &ir.PassManager{}
			_, err := runPipeline(t, pm, "test-remark", passIR, &ir.PassContext{Diags: diags, Remarks: tc.remarks})
			require.NoError(t, err)
			assert.Equal(t, tc.want, seen)
			assert.Equal(t, tc.want, diagStrings(ir.ErrorList(diags.List)))
			assert.False(t, diags.HasErrors())
		})
	}
	// a pass run without a context may still call Remark and Warning
	var ctx *ir.PassContext
	ctx.Remark("fusion", ir.Location{}, "x")
	ctx.Warning(ir.Location{}, "x")
	(&ir.PassContext{Remarks: map[string]bool{"all": true}}).Remark("fusion", ir.Location{}, "no Diagnostics")
}
