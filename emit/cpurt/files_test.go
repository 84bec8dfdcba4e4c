package cpurt_test

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/emit/cpurt"
)

// RunFiles hands the program file regions: mapped when their offset is a
// multiple of 64 and the call is not timed, read and written through a
// buffer otherwise (a timed call's buffers are the program's own memory).
// Every way leaves the bytes around the regions alone and gives the same
// results.
func TestRunFilesRegions(t *testing.T) {
	if _, err := cpurt.FindToolchain(); err != nil {
		t.Skip(err)
	}
	lowered, err := compile(`func.func @f(%x: tensor<?xf32>) -> tensor<?xf32> {
  %y = graph.neg %x : tensor<?xf32>
  return %y : tensor<?xf32>
}`, pipelines["O2"]+","+lowerTail())
	require.NoError(t, err)
	p, err := cpurt.Compile(lowered, "f")
	require.NoError(t, err)
	defer p.Close()
	const n = 1000
	dir := t.TempDir()
	for _, c := range []struct{ off, runs int64 }{{0, 1}, {64, 1}, {3, 1}, {130, 1}, {0, 3}, {64, 3}, {3, 3}} {
		off := c.off
		data := make([]byte, off+4*n+7)
		for i := range data {
			data[i] = 0xEE
		}
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint32(data[off+int64(4*i):], math.Float32bits(float32(i)-0.5))
		}
		in := filepath.Join(dir, "in.bin")
		require.NoError(t, os.WriteFile(in, data, 0o644))
		out := filepath.Join(dir, "out.bin")
		outOff := off + 9
		require.NoError(t, os.WriteFile(out, make([]byte, outOff), 0o644))
		times, err := p.RunFiles([]cpurt.Region{{Path: in, Offset: off, Size: 4 * n}}, [][]int64{{n}},
			[]cpurt.Region{{Path: out, Offset: outOff, Size: 4 * n}}, [][]int64{{n}}, int(c.runs))
		require.NoError(t, err, "offset %d", off)
		require.Len(t, times, int(c.runs-1), "every call after the first is timed")
		got, err := os.ReadFile(out)
		require.NoError(t, err)
		require.Len(t, got, int(outOff)+4*n)
		for i := 0; i < n; i++ {
			v := math.Float32frombits(binary.LittleEndian.Uint32(got[outOff+int64(4*i):]))
			require.Equal(t, 0.5-float32(i), v, "offset %d element %d", off, i)
		}
		after, err := os.ReadFile(in)
		require.NoError(t, err)
		require.Equal(t, data, after, "the input file is unchanged")
	}
	// a region past the end of an input file is an error
	in := filepath.Join(dir, "short.bin")
	require.NoError(t, os.WriteFile(in, make([]byte, 10), 0o644))
	_, err = p.RunFiles([]cpurt.Region{{Path: in, Size: 4 * n}}, [][]int64{{n}},
		[]cpurt.Region{{Path: filepath.Join(dir, "o2.bin"), Size: 4 * n}}, [][]int64{{n}}, 1)
	require.ErrorContains(t, err, "has 10 bytes, 4000 expected")
}

// The native runner refuses extents the kernels cannot run on before any
// buffer is touched (the function's extent_checks).
func TestOutputShapesCheckExtents(t *testing.T) {
	lowered, err := compile(`func.func @f(%x: tensor<?x4xf32>, %y: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %z = graph.add %x, %y : tensor<?x4xf32>
  return %z : tensor<?x4xf32>
}`, pipelines["O2"]+","+lowerTail())
	require.NoError(t, err)
	f, _ := lowered.Lookup("f")
	shapes, err := cpurt.OutputShapes(f, [][]int64{{3, 4}, {3, 4}})
	require.NoError(t, err)
	require.Equal(t, [][]int64{{3, 4}}, shapes)
	_, err = cpurt.OutputShapes(f, [][]int64{{3, 4}, {5, 4}})
	require.ErrorContains(t, err, "argument #0 (%x) has 3 in dimension 0 but argument #1 (%y) has 5 in dimension 0")
}
