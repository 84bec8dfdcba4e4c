package ptx

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	geval "github.com/tensorforge/tensorforge/dialects/graph/eval"
	leval "github.com/tensorforge/tensorforge/dialects/loop/eval"
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

// references memoizes the loop interpreter's results of the matmul tests:
// several of them run one function on the same inputs in the simulator
// under different launch settings (split-K parts, CTA orders, wide
// kernels), against one reference. The key holds the module, so a module
// is never freed while its results are kept (no other module can take
// its address).
var references = struct {
	sync.Mutex
	runs map[referenceKey][]*geval.Tensor
}{runs: map[referenceKey][]*geval.Tensor{}}

type referenceKey struct {
	module *ir.Operation
	fn     string
	inputs uint64 // FNV-1a of the inputs' shapes, kinds and values
}

// reference is leval.Run of fn on a copy of in, computed once per module,
// function and inputs; the caller gets its own copy of the results.
func reference(t *testing.T, m ir.Module, fn string, in []*geval.Tensor) []*geval.Tensor {
	t.Helper()
	h := fnv.New64a()
	var b [8]byte
	for _, x := range in {
		fmt.Fprintf(h, "%v %v;", x.Elem, x.Shape)
		for _, v := range x.Data {
			binary.LittleEndian.PutUint64(b[:], math.Float64bits(v))
			h.Write(b[:])
		}
	}
	key := referenceKey{m.Operation, fn, h.Sum64()}
	references.Lock()
	want, ok := references.runs[key]
	references.Unlock()
	if !ok {
		var err error
		want, err = leval.Run(m, fn, cloneTensors(in))
		require.NoError(t, err)
		references.Lock()
		references.runs[key] = want
		references.Unlock()
	}
	return cloneTensors(want)
}
