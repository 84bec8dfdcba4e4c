package ptx

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
	"github.com/tensorforge/tensorforge/parser"

	// the passes of the pipelines the tests run
	_ "github.com/tensorforge/tensorforge/lowering"
	_ "github.com/tensorforge/tensorforge/passes"
)

// fullPipeline is -O2, which --emit=ptx runs by default.
const fullPipeline = "canonicalize,cse,legalize-numerics,decompose,fuse,canonicalize,cse,dce,lower-to-loops,sram-alloc"

// lower parses src and runs pipeline on it for target tname.
func lower(t *testing.T, src, pipeline, tname string) ir.Module {
	t.Helper()
	m, err := parser.Parse("test.tir", src)
	require.NoError(t, err)
	require.NoError(t, ir.Verify(m.Operation))
	tg, err := target.Lookup(tname)
	require.NoError(t, err)
	p, err := ir.ParsePipeline(pipeline)
	require.NoError(t, err)
	diags := &ir.Diagnostics{}
	pm := &ir.PassManager{Pipeline: p, VerifyEach: true}
	require.NoError(t, pm.Run(m, &ir.PassContext{Diags: diags, Target: tg}), "%v", diags.List)
	return m
}

// emitFiles lowers src for the h200 and emits it, by file name.
func emitFiles(t *testing.T, src string) map[string]string {
	t.Helper()
	m := lower(t, src, fullPipeline, "h200")
	files, err := Emit(m)
	require.NoError(t, err)
	out := map[string]string{}
	for _, f := range files {
		out[f.Name] = f.Text
	}
	return out
}
