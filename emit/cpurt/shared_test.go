package cpurt_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	geval "github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/emit/cpurt"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

// Two libraries, loaded into one process with dlopen: f32 functions with a
// `?` row dimension (one with two results) and a bf16 one. Every result
// is compared with the graph interpreter.
const soRowsSrc = `
func.func @rms(%x: tensor<?x16xf32>, %w: tensor<16xf32>) -> tensor<?x16xf32> {
  %n = graph.rmsnorm %x, %w {eps = 1.0e-05 : f32} : (tensor<?x16xf32>, tensor<16xf32>) -> tensor<?x16xf32>
  return %n : tensor<?x16xf32>
}
func.func @two(%a: tensor<?x16xf32>) -> (tensor<?x16xf32>, tensor<?x16xf32>) {
  %n = graph.neg %a : tensor<?x16xf32>
  %e = graph.mul %a, %a : tensor<?x16xf32>
  return %n, %e : tensor<?x16xf32>, tensor<?x16xf32>
}
`

const soBF16Src = `
func.func @silu_mul(%x: tensor<4x32xbf16>, %y: tensor<4x32xbf16>) -> tensor<4x32xbf16> {
  %s = graph.silu %x : tensor<4x32xbf16>
  %m = graph.mul %s, %y : tensor<4x32xbf16>
  return %m : tensor<4x32xbf16>
}
`

// soHarness loads the libraries named on its standard input and calls
// their entry points:
//
//	lib PATH                    dlopen (the libraries stay loaded)
//	threads N                   tf_set_num_threads of the last library
//	call LIB NAME NEXT E0 E1 ...
//	in SIZE PATH / out SIZE PATH, then `go`
//
// It also checks that the runtime's own symbols are not exported.
const soHarness = `#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*entry_fn)(void *const *, const int64_t *);

int main(void) {
  void *libs[8];
  int nlibs = 0;
  char line[4096], name[256], path[4096];
  void *bufs[64];
  int64_t sizes[64], exts[64];
  char *outs[64];
  int nbuf = 0, next = 0, lib = 0;
  entry_fn fn = NULL;
  while (fgets(line, sizeof line, stdin)) {
    line[strcspn(line, "\n")] = 0;
    long long v;
    int n;
    if (sscanf(line, "lib %4095s", path) == 1) {
      libs[nlibs] = dlopen(path, RTLD_NOW | RTLD_LOCAL);
      if (!libs[nlibs]) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 1; }
      if (dlsym(libs[nlibs], "tf_parallel_for") || dlsym(libs[nlibs], "tf_alloc") || dlsym(libs[nlibs], "tf_entries")) {
        fprintf(stderr, "%s exports a runtime symbol\n", path);
        return 1;
      }
      nlibs++;
    } else if (sscanf(line, "threads %lld", &v) == 1) {
      void (*set)(int) = (void (*)(int))dlsym(libs[nlibs - 1], "tf_set_num_threads");
      int (*get)(void) = (int (*)(void))dlsym(libs[nlibs - 1], "tf_num_threads");
      if (!set || !get) { fprintf(stderr, "no thread controls\n"); return 1; }
      set((int)v);
      printf("threads %d\n", get());
    } else if (sscanf(line, "call %d %255s %n", &lib, name, &n) == 2) {
      char sym[300];
      snprintf(sym, sizeof sym, "tf_entry_%s", name);
      fn = (entry_fn)dlsym(libs[lib], sym);
      if (!fn) { fprintf(stderr, "no %s\n", sym); return 1; }
      nbuf = next = 0;
      char *p = line + n;
      int k;
      while (sscanf(p, "%lld %n", &v, &k) == 1) { exts[next++] = v; p += k; }
    } else if (sscanf(line, "in %lld %4095s", &v, path) == 2) {
      bufs[nbuf] = malloc(v + 1);
      sizes[nbuf] = v;
      outs[nbuf] = NULL;
      FILE *f = fopen(path, "rb");
      if (!f || fread(bufs[nbuf], 1, v, f) != (size_t)v) { fprintf(stderr, "read %s\n", path); return 1; }
      fclose(f);
      nbuf++;
    } else if (sscanf(line, "out %lld %4095s", &v, path) == 2) {
      bufs[nbuf] = calloc(v + 1, 1);
      sizes[nbuf] = v;
      outs[nbuf] = strdup(path);
      nbuf++;
    } else if (strcmp(line, "go") == 0) {
      fn(bufs, exts);
      for (int i = 0; i < nbuf; i++) {
        if (outs[i]) {
          FILE *f = fopen(outs[i], "wb");
          if (!f || fwrite(bufs[i], 1, sizes[i], f) != (size_t)sizes[i]) { fprintf(stderr, "write\n"); return 1; }
          fclose(f);
        }
      }
    }
  }
  return 0;
}
`

// soCall is one call of the harness: a function of a library on inputs.
type soCall struct {
	lib    int
	fn     ir.Func // graph level
	lowFn  ir.Func
	inputs []*geval.Tensor
	outs   []string
	shapes [][]int64
}

func buildSO(t *testing.T, dir, name, src string) (graph, lowered ir.Module, path string) {
	t.Helper()
	graph, err := compile(src, pipelines["O2"])
	require.NoError(t, err)
	lowered, err = compile(src, pipelines["O2"]+","+lowerTail())
	require.NoError(t, err)
	path = filepath.Join(dir, name+".so")
	require.NoError(t, cpurt.BuildShared(lowered, path, cpurt.Options{}))
	return graph, lowered, path
}

func TestSharedLibrary(t *testing.T) {
	tc, err := cpurt.FindToolchain()
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	rowsG, rowsL, rowsSO := buildSO(t, dir, "rows", soRowsSrc)
	bfG, bfL, bfSO := buildSO(t, dir, "bf", soBF16Src)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "h.c"), []byte(soHarness), 0o644))
	out, err := exec.Command(tc.CC, "-O1", "-o", filepath.Join(dir, "h"), filepath.Join(dir, "h.c"), "-ldl").CombinedOutput()
	require.NoError(t, err, string(out))

	var calls []*soCall
	var script strings.Builder
	fmt.Fprintf(&script, "lib %s\nlib %s\nthreads 2\n", rowsSO, bfSO)
	add := func(lib int, g, l ir.Module, name string, seed int64, rows int64) {
		fn, _ := g.Lookup(name)
		low, _ := l.Lookup(name)
		in, err := geval.RandomInputs(fn, seed, 1, rows)
		require.NoError(t, err)
		c := &soCall{lib: lib, fn: fn, lowFn: low, inputs: in}
		var inShapes [][]int64
		for _, x := range in {
			inShapes = append(inShapes, x.Shape)
		}
		outShapes, err := cpurt.OutputShapes(low, inShapes)
		require.NoError(t, err)
		c.shapes = outShapes
		var exts []string
		args := low.Args()
		all := append(append([][]int64(nil), inShapes...), outShapes...)
		for i, a := range args {
			for d, n := range a.Type().(ir.MemRefType).Shape {
				if n == ir.Dynamic {
					exts = append(exts, fmt.Sprint(all[i][d]))
				}
			}
		}
		fmt.Fprintf(&script, "call %d %s %s\n", lib, name, strings.Join(exts, " "))
		for i, x := range in {
			data, err := cpurt.Encode(x, args[i].Type().(ir.MemRefType).Elem.Kind)
			require.NoError(t, err)
			p := filepath.Join(dir, fmt.Sprintf("c%d-in%d.bin", len(calls), i))
			require.NoError(t, os.WriteFile(p, data, 0o644))
			fmt.Fprintf(&script, "in %d %s\n", len(data), p)
		}
		for j, s := range outShapes {
			n, _ := ir.NumElements(s)
			k := args[len(in)+j].Type().(ir.MemRefType).Elem.Kind
			p := filepath.Join(dir, fmt.Sprintf("c%d-out%d.bin", len(calls), j))
			c.outs = append(c.outs, p)
			fmt.Fprintf(&script, "out %d %s\n", n*k.ByteSize(), p)
		}
		script.WriteString("go\n")
		calls = append(calls, c)
	}
	add(0, rowsG, rowsL, "rms", 1, 7)
	add(0, rowsG, rowsL, "two", 2, 300)
	add(1, bfG, bfL, "silu_mul", 3, 0)
	add(0, rowsG, rowsL, "two", 4, 1) // a second call, other extents

	cmd := exec.Command(filepath.Join(dir, "h"))
	cmd.Stdin = strings.NewReader(script.String())
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Equal(t, "threads 2\n", string(out))

	for ci, c := range calls {
		want, err := geval.Run(c.fn, c.inputs, geval.Options{})
		require.NoError(t, err)
		args := c.lowFn.Args()
		for j, p := range c.outs {
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			k := args[len(c.inputs)+j].Type().(ir.MemRefType).Elem.Kind
			got, err := cpurt.Decode(data, k, c.shapes[j])
			require.NoError(t, err)
			require.Equal(t, want[j].Shape, got.Shape)
			for i := range got.Data {
				d := numeric.ULPDiff(got.Data[i], want[j].Data[i], k)
				require.LessOrEqualf(t, d, 8.0, "call %d @%s result %d element %d: %v, interpreter %v", ci, c.fn.SymName(), j, i, got.Data[i], want[j].Data[i])
			}
		}
	}
}

// The header's prototypes are the functions: a C program that includes it
// and calls the direct function links against the library and gets the
// interpreter's values.
func TestSharedHeaderDirectCall(t *testing.T) {
	tc, err := cpurt.FindToolchain()
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	_, lowered, so := buildSO(t, dir, "librows", soRowsSrc)
	h, err := cpurt.SharedHeader(lowered, "librows.so")
	require.NoError(t, err)
	assert.Contains(t, h, "void two(const float *a, float *n, float *e, int64_t a_d0, int64_t n_d0, int64_t e_d0);")
	assert.Contains(t, h, "void tf_entry_rms(void *const *buffers, const int64_t *extents);")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "librows.h"), []byte(h), 0o644))
	prog := `#include "librows.h"
#include <stdio.h>
int main(void) {
  float a[3 * 16], n[3 * 16], e[3 * 16];
  for (int i = 0; i < 3 * 16; i++) a[i] = (float)i / 4 - 3;
  tf_set_num_threads(1);
  if (tf_num_threads() != 1) return 1;
  two(a, n, e, 3, 3, 3);
  for (int i = 0; i < 3 * 16; i += 7) printf("%g %g\n", n[i], e[i]);
  return 0;
}
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.c"), []byte(prog), 0o644))
	out, err := exec.Command(tc.CC, "-Wall", "-Werror", "-o", filepath.Join(dir, "main"), filepath.Join(dir, "main.c"), so,
		"-Wl,-rpath,"+dir).CombinedOutput()
	require.NoError(t, err, string(out))
	out, err = exec.Command(filepath.Join(dir, "main")).CombinedOutput()
	require.NoError(t, err, string(out))
	var want strings.Builder
	for i := 0; i < 48; i += 7 {
		a := float32(i)/4 - 3
		fmt.Fprintf(&want, "%s %s\n", cfmt(-a), cfmt(a*a))
	}
	assert.Equal(t, want.String(), string(out))
}

// cfmt prints like C's %g for the small values of the test.
func cfmt(x float32) string {
	s := fmt.Sprintf("%g", x)
	if s == "-0" {
		return "-0"
	}
	return s
}

// A function name that is not a C identifier is refused at its location.
func TestSharedLibraryRefusesNames(t *testing.T) {
	for _, c := range []struct{ name, why string }{
		{"my.f", "is not a valid C identifier (rename it, e.g. @my_f)"},
		{"tf_entry_x", "starts with 'tf_'"},
		{"int", "is a reserved word of C or C++"},
	} {
		src := fmt.Sprintf("func.func @%s(%%x: tensor<4xf32>) -> tensor<4xf32> {\n  %%y = graph.neg %%x : tensor<4xf32>\n  return %%y : tensor<4xf32>\n}\n", c.name)
		lowered, err := compile(src, pipelines["O2"]+","+lowerTail())
		require.NoError(t, err, c.name)
		err = cpurt.BuildShared(lowered, filepath.Join(t.TempDir(), "x.so"), cpurt.Options{Toolchain: &cpurt.Toolchain{}})
		require.Error(t, err)
		ds := ir.AsDiagnostics(err)
		require.Len(t, ds, 1)
		assert.Equal(t, 1, ds[0].Loc.Line, c.name)
		assert.Contains(t, ds[0].Message, "function @"+c.name+" cannot be exported from a shared library: its name "+c.why)
		_, err = cpurt.SharedHeader(lowered, "x.so")
		require.Error(t, err)
	}
}
