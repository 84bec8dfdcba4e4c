package metal_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tensorforge/tensorforge/emit/metal"
)

// TestEmulationCatchesMisuse runs the kernels of testdata/misuse.metal,
// each doing one thing a Metal device punishes, and checks that the
// emulation stops with a message saying what; `fine` must run.
func TestEmulationCatchesMisuse(t *testing.T) {
	t.Parallel()
	bin, _, _ := sharedHarness(t)
	dir := t.TempDir()

	// two threadgroups of 64 threads over 128 floats
	const groups, threads = 2, 64
	in := make([]byte, 4*groups*threads)
	inPath := filepath.Join(dir, "x.bin")
	require.NoError(t, os.WriteFile(inPath, in, 0o644))
	buffers := fmt.Sprintf("buffer x %d in %s\nbuffer y %d\n", len(in), inPath, len(in))
	launch := func(kernel string, g, n int, y string) string {
		return fmt.Sprintf("launch misuse::%s %d %d\narg buffer x\narg buffer %s\nend\n", kernel, g, n, y)
	}
	cases := []struct {
		name, plan string
		want       string // "" when the plan must run
	}{
		{"a correct kernel runs", buffers + launch("fine", groups, threads, "y"), ""},
		{"a correct kernel with a partial simdgroup runs", buffers + launch("fine", groups, 40, "y"), ""},
		{"a barrier half the threads skip", buffers + launch("barrier_skipped", groups, threads, "y"),
			"metal_emu: error: threadgroup 0: not every thread reached the same threadgroup_barrier: 32 threads at threadgroup_barrier"},
		{"two different barriers", buffers + launch("barrier_split", groups, threads, "y"),
			"not every thread reached the same threadgroup_barrier"},
		{"a simd_sum in divergent code", buffers + launch("simd_divergent", groups, threads, "y"),
			"deadlocks: 16 threads at simd_sum"},
		{"more than 32 KB of threadgroup memory", buffers + launch("threadgroup_too_big", groups, threads, "y"),
			"kernel misuse::threadgroup_too_big declares 33024 bytes of threadgroup memory; the device has 32768"},
		{"a read past the end of a buffer", buffers + launch("read_past_end", groups, threads, "y"),
			"metal_emu: error: out-of-bounds access to buffer 'x': byte 512 of a buffer of 512 bytes"},
		{"a write before the start of a buffer", buffers + launch("write_before_start", groups, threads, "y"),
			"out-of-bounds access to buffer 'y': byte -4 of a buffer of 512 bytes"},
		{"a write past a view of an arena", buffers + "buffer arena 1024\nview a arena 0 256\nview b arena 256 256\n" +
			launch("fine", groups, threads, "a"), "out-of-bounds access to buffer 'a'"},
		{"a misaligned float4", buffers + launch("misaligned_vector", groups, threads, "y"), "misaligned address"},
		{"threadgroup memory past its end", buffers + launch("threadgroup_past_end", groups, threads, "y"),
			"global-buffer-overflow"},
		{"more than 1024 threads", buffers + launch("fine", 1, 1056, "y"),
			"kernel misuse::fine dispatched with 1056 threads per threadgroup; the device runs 1 to 1024"},
		{"a threadgroup memory figure that is not the kernel's", buffers + "threadgroup-memory misuse::fine 256\n",
			"kernel misuse::fine declares 128 bytes of threadgroup memory, not 256"},
		{"simdgroup matrices used by whole simdgroups run", buffers + launch("simdgroup_matrix_fine", groups, threads, "y"), ""},
		{"a simdgroup_multiply_accumulate in divergent code", buffers + launch("simdgroup_matrix_divergent", groups, threads, "y"),
			"deadlocks: 16 threads at simdgroup_multiply_accumulate"},
		{"simdgroup matrices in a partial simdgroup", buffers + launch("simdgroup_matrix_fine", groups, 40, "y"),
			"simdgroup 1 has 8 threads: make_filled_simdgroup_matrix needs a whole simdgroup of 32"},
		{"simdgroup_load from a different address in each lane", buffers + launch("simdgroup_load_divergent", groups, threads, "y"),
			"the lanes passed different arguments to simdgroup_load (lanes 0 and 1 differ)"},
		{"an accumulator never filled", buffers + launch("simdgroup_matrix_unset", groups, threads, "y"),
			"simdgroup_multiply_accumulate reads its accumulator, a simdgroup matrix never filled, loaded or computed"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plan := filepath.Join(dir, fmt.Sprintf("plan%d.txt", i))
			require.NoError(t, os.WriteFile(plan, []byte(c.plan), 0o644))
			err := runPlan(bin, plan)
			if c.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err, "the emulation accepted it")
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

// misuseUnit is testdata/misuse.metal, its kernels in namespace misuse of
// the shared harness.
func misuseUnit(t *testing.T) unit {
	text, err := os.ReadFile("testdata/misuse.metal")
	require.NoError(t, err)
	names := []string{"fine", "barrier_skipped", "barrier_split", "simd_divergent", "threadgroup_too_big",
		"read_past_end", "write_before_start", "misaligned_vector", "threadgroup_past_end",
		"simdgroup_matrix_fine", "simdgroup_matrix_divergent", "simdgroup_load_divergent", "simdgroup_matrix_unset"}
	var kernels []*metal.KernelInfo
	for _, n := range names {
		kernels = append(kernels, misuseKernel(n))
	}
	return unit{ns: "misuse", file: "misuse.metal", text: string(text), kernels: kernels}
}

// misuseKernel describes a kernel of misuse.metal: x, y and the
// built-ins.
func misuseKernel(name string) *metal.KernelInfo {
	zero, one := 0, 1
	k := &metal.KernelInfo{Name: name, Parameters: []metal.Param{
		{Name: "x", Kind: "buffer", Type: "const device float*", Index: &zero},
		{Name: "y", Kind: "buffer", Type: "device float*", Index: &one},
	}}
	for _, b := range []string{"threadgroup_position_in_grid", "thread_position_in_threadgroup",
		"thread_index_in_simdgroup", "simdgroup_index_in_threadgroup", "threads_per_threadgroup"} {
		k.Parameters = append(k.Parameters, metal.Param{Kind: "builtin", Type: "uint", Attribute: b})
	}
	return k
}
