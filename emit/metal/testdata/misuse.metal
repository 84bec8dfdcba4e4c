// Kernels that do what a Metal device punishes, for the tests of the
// emulation (emu_misuse_test.go): each must make it fail loudly. `fine`
// does nothing wrong and must run.
#include <metal_stdlib>
using namespace metal;

[[kernel]] void fine(
    const device float* x [[buffer(0)]],
    device float* y [[buffer(1)]],
    uint gid [[threadgroup_position_in_grid]],
    uint lid [[thread_position_in_threadgroup]],
    uint simd_lane [[thread_index_in_simdgroup]],
    uint simd_id [[simdgroup_index_in_threadgroup]],
    uint tg_size [[threads_per_threadgroup]]) {
  threadgroup float partial[32];
  const float s = simd_sum(x[gid * tg_size + lid]);
  if (simd_lane == 0) partial[simd_id] = s;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float t = partial[0];
  for (uint k = 1; k < (tg_size + 31) / 32; ++k) t += partial[k];
  y[gid * tg_size + lid] = t;
}

// Half of the threads skip the barrier.
[[kernel]] void barrier_skipped(
    const device float* x [[buffer(0)]],
    device float* y [[buffer(1)]],
    uint gid [[threadgroup_position_in_grid]],
    uint lid [[thread_position_in_threadgroup]],
    uint simd_lane [[thread_index_in_simdgroup]],
    uint simd_id [[simdgroup_index_in_threadgroup]],
    uint tg_size [[threads_per_threadgroup]]) {
  if (lid < tg_size / 2) threadgroup_barrier(mem_flags::mem_threadgroup);
  y[gid * tg_size + lid] = x[gid * tg_size + lid];
}

// The threads wait at two different barriers.
[[kernel]] void barrier_split(
    const device float* x [[buffer(0)]],
    device float* y [[buffer(1)]],
    uint gid [[threadgroup_position_in_grid]],
    uint lid [[thread_position_in_threadgroup]],
    uint simd_lane [[thread_index_in_simdgroup]],
    uint simd_id [[simdgroup_index_in_threadgroup]],
    uint tg_size [[threads_per_threadgroup]]) {
  if (lid % 2 == 0) {
    threadgroup_barrier(mem_flags::mem_threadgroup);
  } else {
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  y[gid * tg_size + lid] = x[gid * tg_size + lid];
}

// A simdgroup reduction in divergent code.
[[kernel]] void simd_divergent(
    const device float* x [[buffer(0)]],
    device float* y [[buffer(1)]],
    uint gid [[threadgroup_position_in_grid]],
    uint lid [[thread_position_in_threadgroup]],
    uint simd_lane [[thread_index_in_simdgroup]],
    uint simd_id [[simdgroup_index_in_threadgroup]],
    uint tg_size [[threads_per_threadgroup]]) {
  float v = x[gid * tg_size + lid];
  if (simd_lane < 8) v = simd_sum(v);
  y[gid * tg_size + lid] = v;
}

// 33 KB of threadgroup memory.
[[kernel]] void threadgroup_too_big(
    const device float* x [[buffer(0)]],
    device float* y [[buffer(1)]],
    uint gid [[threadgroup_position_in_grid]],
    uint lid [[thread_position_in_threadgroup]],
    uint simd_lane [[thread_index_in_simdgroup]],
    uint simd_id [[simdgroup_index_in_threadgroup]],
    uint tg_size [[threads_per_threadgroup]]) {
  threadgroup float partial[32];
  threadgroup float rows[8224];
  rows[lid] = x[gid * tg_size + lid];
  partial[lid % 32] = 1.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  y[gid * tg_size + lid] = rows[tg_size - 1 - lid] + partial[0];
}

// Each thread reads the element after its own: the last one is past the end.
[[kernel]] void read_past_end(
    const device float* x [[buffer(0)]],
    device float* y [[buffer(1)]],
    uint gid [[threadgroup_position_in_grid]],
    uint lid [[thread_position_in_threadgroup]],
    uint simd_lane [[thread_index_in_simdgroup]],
    uint simd_id [[simdgroup_index_in_threadgroup]],
    uint tg_size [[threads_per_threadgroup]]) {
  y[gid * tg_size + lid] = x[gid * tg_size + lid + 1];
}

// Each thread writes the element before its own: the first one is before the start.
[[kernel]] void write_before_start(
    const device float* x [[buffer(0)]],
    device float* y [[buffer(1)]],
    uint gid [[threadgroup_position_in_grid]],
    uint lid [[thread_position_in_threadgroup]],
    uint simd_lane [[thread_index_in_simdgroup]],
    uint simd_id [[simdgroup_index_in_threadgroup]],
    uint tg_size [[threads_per_threadgroup]]) {
  y[int(gid * tg_size + lid) - 1] = x[gid * tg_size + lid];
}

// A float4 read at an offset of one float.
[[kernel]] void misaligned_vector(
    const device float* x [[buffer(0)]],
    device float* y [[buffer(1)]],
    uint gid [[threadgroup_position_in_grid]],
    uint lid [[thread_position_in_threadgroup]],
    uint simd_lane [[thread_index_in_simdgroup]],
    uint simd_id [[simdgroup_index_in_threadgroup]],
    uint tg_size [[threads_per_threadgroup]]) {
  if (lid == 0) {
    const float4 q = *(const device float4*)(x + 1);
    y[0] = q[0] + q[1] + q[2] + q[3];
  }
}

// Threadgroup memory indexed past its end.
[[kernel]] void threadgroup_past_end(
    const device float* x [[buffer(0)]],
    device float* y [[buffer(1)]],
    uint gid [[threadgroup_position_in_grid]],
    uint lid [[thread_position_in_threadgroup]],
    uint simd_lane [[thread_index_in_simdgroup]],
    uint simd_id [[simdgroup_index_in_threadgroup]],
    uint tg_size [[threads_per_threadgroup]]) {
  threadgroup float partial[32];
  partial[lid + 1] = x[gid * tg_size + lid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  y[gid * tg_size + lid] = partial[lid];
}

// Simdgroup matrices used correctly: each simdgroup squares the 8 x 8
// matrix of its 64 elements. Launched with a partial simdgroup (40
// threads), the second simdgroup's 8 lanes cannot use them.
[[kernel]] void simdgroup_matrix_fine(
    const device float* x [[buffer(0)]],
    device float* y [[buffer(1)]],
    uint gid [[threadgroup_position_in_grid]],
    uint lid [[thread_position_in_threadgroup]],
    uint simd_lane [[thread_index_in_simdgroup]],
    uint simd_id [[simdgroup_index_in_threadgroup]],
    uint tg_size [[threads_per_threadgroup]]) {
  threadgroup float tile[128];
  for (uint i = lid; i < 128; i += tg_size) tile[i] = x[i] + 1.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  simdgroup_float8x8 a;
  simdgroup_float8x8 c = make_filled_simdgroup_matrix<float, 8, 8>(0.5f);
  simdgroup_load(a, tile + simd_id % 2 * 64, 8);
  simdgroup_multiply_accumulate(c, a, a, c);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  simdgroup_store(c, tile + simd_id % 2 * 64, 8, ulong2(0, 0), true);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  y[gid * tg_size + lid] = tile[lid % 128];
}

// A simdgroup_multiply_accumulate in divergent code.
[[kernel]] void simdgroup_matrix_divergent(
    const device float* x [[buffer(0)]],
    device float* y [[buffer(1)]],
    uint gid [[threadgroup_position_in_grid]],
    uint lid [[thread_position_in_threadgroup]],
    uint simd_lane [[thread_index_in_simdgroup]],
    uint simd_id [[simdgroup_index_in_threadgroup]],
    uint tg_size [[threads_per_threadgroup]]) {
  simdgroup_float8x8 a, c = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  simdgroup_load(a, x, 8);
  if (simd_lane < 8) simdgroup_multiply_accumulate(c, a, a, c);
  y[gid * tg_size + lid] = x[gid * tg_size + lid];
}

// Each lane loads from its own address: simdgroup_load's arguments must
// be uniform.
[[kernel]] void simdgroup_load_divergent(
    const device float* x [[buffer(0)]],
    device float* y [[buffer(1)]],
    uint gid [[threadgroup_position_in_grid]],
    uint lid [[thread_position_in_threadgroup]],
    uint simd_lane [[thread_index_in_simdgroup]],
    uint simd_id [[simdgroup_index_in_threadgroup]],
    uint tg_size [[threads_per_threadgroup]]) {
  simdgroup_float8x8 a;
  simdgroup_load(a, x + simd_lane, 8);
  y[gid * tg_size + lid] = x[gid * tg_size + lid];
}

// An accumulator never filled: the product is added to whatever it holds.
[[kernel]] void simdgroup_matrix_unset(
    const device float* x [[buffer(0)]],
    device float* y [[buffer(1)]],
    uint gid [[threadgroup_position_in_grid]],
    uint lid [[thread_position_in_threadgroup]],
    uint simd_lane [[thread_index_in_simdgroup]],
    uint simd_id [[simdgroup_index_in_threadgroup]],
    uint tg_size [[threads_per_threadgroup]]) {
  simdgroup_float8x8 a, c;
  simdgroup_load(a, x, 8);
  simdgroup_multiply_accumulate(c, a, a, c);
  y[gid * tg_size + lid] = x[gid * tg_size + lid];
}
