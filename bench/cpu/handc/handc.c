/* The chains of bench/cpu written by hand in C, fused as a programmer would
 * write them: one pass (two for softmax's normalisation) over each row,
 * values in f32 between the steps, bf16 rounded (to nearest even) only
 * where stored, rows spread over the cores with OpenMP. Built by the
 * benchmark with
 *
 *     gcc -O3 -march=native -ffast-math -fopenmp handc.c -o handc -lm
 *
 * and run as `handc CHAIN DTYPE ROWS COLS RUNS`: it fills the inputs,
 * runs the chain RUNS times and prints the best time in seconds. CHAIN is
 * rmsnorm->silu->mul, add+rmsnorm or softmax; DTYPE bf16 or f32. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline float from_bf16(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static inline uint16_t to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffff) > 0x7f800000) return (uint16_t)((u >> 16) | 0x40); /* NaN stays NaN */
  return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

/* One element type's storage: bf16 as bits, f32 as itself. */
#define LOAD(p, i) (bf ? from_bf16(((const uint16_t *)(p))[i]) : ((const float *)(p))[i])
#define STORE(p, i, v)                                  \
  do {                                                  \
    if (bf)                                             \
      ((uint16_t *)(p))[i] = to_bf16(v);                \
    else                                                \
      ((float *)(p))[i] = (v);                          \
  } while (0)

static void rms_silu_mul(int bf, long rows, long cols, const void *x, const void *w, const void *z, void *y) {
#pragma omp parallel for schedule(static)
  for (long r = 0; r < rows; r++) {
    long o = r * cols;
    float ss = 0;
    for (long c = 0; c < cols; c++) {
      float v = LOAD(x, o + c);
      ss += v * v;
    }
    float inv = 1.0f / sqrtf(ss / (float)cols + 1e-5f);
    for (long c = 0; c < cols; c++) {
      float n = LOAD(x, o + c) * inv * LOAD(w, c);
      if (bf) n = from_bf16(to_bf16(n)); /* rmsnorm returns its type */
      float s = n / (1.0f + expf(-n));
      STORE(y, o + c, s * LOAD(z, o + c));
    }
  }
}

static void add_rmsnorm(int bf, long rows, long cols, const void *x, const void *res, const void *w, void *h, void *n) {
#pragma omp parallel for schedule(static)
  for (long r = 0; r < rows; r++) {
    long o = r * cols;
    float ss = 0;
    for (long c = 0; c < cols; c++) {
      float v = LOAD(x, o + c) + LOAD(res, o + c);
      STORE(h, o + c, v);
      if (bf) v = from_bf16(to_bf16(v)); /* the norm reads the stored sum */
      ss += v * v;
    }
    float inv = 1.0f / sqrtf(ss / (float)cols + 1e-5f);
    for (long c = 0; c < cols; c++) STORE(n, o + c, LOAD(h, o + c) * inv * LOAD(w, c));
  }
}

static void softmax(int bf, long rows, long cols, const void *x, void *y) {
#pragma omp parallel for schedule(static)
  for (long r = 0; r < rows; r++) {
    long o = r * cols;
    float m = -INFINITY;
    for (long c = 0; c < cols; c++) m = fmaxf(m, LOAD(x, o + c));
    float s = 0;
    for (long c = 0; c < cols; c++) s += expf(LOAD(x, o + c) - m);
    float inv = 1.0f / s;
    for (long c = 0; c < cols; c++) STORE(y, o + c, expf(LOAD(x, o + c) - m) * inv);
  }
}

static void *filled(long n, int bf, unsigned seed) {
  size_t size = bf ? 2 : 4;
  void *p = aligned_alloc(64, ((size_t)n * size + 63) / 64 * 64);
  if (!p) {
    fprintf(stderr, "handc: cannot allocate %ld elements\n", n);
    exit(1);
  }
  uint32_t s = seed * 2654435761u + 1;
  for (long i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    float v = ((float)(s >> 8) / 16777216.0f) * 4.0f - 2.0f;
    STORE(p, i, v);
  }
  return p;
}

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: handc CHAIN DTYPE ROWS COLS RUNS\n");
    return 1;
  }
  const char *chain = argv[1];
  int bf = strcmp(argv[2], "bf16") == 0;
  if (!bf && strcmp(argv[2], "f32") != 0) {
    fprintf(stderr, "handc: unknown dtype %s (bf16 or f32)\n", argv[2]);
    return 1;
  }
  long rows = atol(argv[3]), cols = atol(argv[4]);
  int runs = atoi(argv[5]);
  if (rows < 1 || cols < 1 || runs < 1) {
    fprintf(stderr, "handc: rows, cols and runs must be positive\n");
    return 1;
  }
  long n = rows * cols;
  void *a = filled(n, bf, 1), *b = filled(n, bf, 2), *w = filled(cols, bf, 3);
  void *o1 = filled(n, bf, 4), *o2 = filled(n, bf, 5);
  int which = strcmp(chain, "rmsnorm->silu->mul") == 0 ? 0 : strcmp(chain, "add+rmsnorm") == 0 ? 1 : strcmp(chain, "softmax") == 0 ? 2 : -1;
  if (which < 0) {
    fprintf(stderr, "handc: unknown chain %s\n", chain);
    return 1;
  }
  double best = 1e30;
  for (int i = 0; i <= runs; i++) { /* the first run warms the pages and the threads */
    double t0 = omp_get_wtime();
    switch (which) {
      case 0: rms_silu_mul(bf, rows, cols, a, w, b, o1); break;
      case 1: add_rmsnorm(bf, rows, cols, a, b, w, o1, o2); break;
      default: softmax(bf, rows, cols, a, o1); break;
    }
    double t = omp_get_wtime() - t0;
    if (i > 0 && t < best) best = t;
  }
  /* a checksum, so that no run can be dropped as dead */
  double sum = 0;
  for (long i = 0; i < n; i += 997) sum += LOAD(o1, i);
  printf("%.9f %g\n", best, sum);
  return 0;
}
