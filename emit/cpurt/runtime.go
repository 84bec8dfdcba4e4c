package cpurt

// runtimeC is the small C runtime every compiled program links: a
// persistent pool of pthreads behind tf_parallel_for, the allocator of
// intermediates, and the half-precision conversions LLVM 14 calls on
// CPUs without F16C.
const runtimeC = `// TensorForge CPU runtime.
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef void (*tf_task)(void *ctx, int64_t begin, int64_t end);

/* The pool: tf_nthreads - 1 workers plus the calling thread. A job is
 * published under tf_mu with a new generation; every thread claims chunks
 * of iterations with an atomic counter, and the caller waits until every
 * worker has finished before returning. */
static int tf_nthreads = 1;
static pthread_mutex_t tf_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tf_start = PTHREAD_COND_INITIALIZER;
static pthread_cond_t tf_done = PTHREAD_COND_INITIALIZER;
static pthread_once_t tf_once = PTHREAD_ONCE_INIT;
static uint64_t tf_generation;
static int tf_pending;
static tf_task tf_job_fn;
static void *tf_job_ctx;
static int64_t tf_job_n, tf_job_chunk;
static _Atomic int64_t tf_job_next;

static void tf_run_chunks(void) {
  for (;;) {
    int64_t b = atomic_fetch_add(&tf_job_next, tf_job_chunk);
    if (b >= tf_job_n) return;
    int64_t e = b + tf_job_chunk;
    if (e > tf_job_n) e = tf_job_n;
    tf_job_fn(tf_job_ctx, b, e);
  }
}

static void *tf_worker(void *arg) {
  uint64_t seen = 0;
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&tf_mu);
    while (tf_generation == seen) pthread_cond_wait(&tf_start, &tf_mu);
    seen = tf_generation;
    pthread_mutex_unlock(&tf_mu);
    tf_run_chunks();
    pthread_mutex_lock(&tf_mu);
    if (--tf_pending == 0) pthread_cond_signal(&tf_done);
    pthread_mutex_unlock(&tf_mu);
  }
  return NULL;
}

static void tf_init(void) {
  const char *env = getenv("TF_NUM_THREADS");
  long n = env ? atol(env) : sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) n = 1;
  if (n > 1024) n = 1024;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  /* kernels keep their scratchpad on the stack */
  pthread_attr_setstacksize(&attr, (size_t)64 << 20);
  int started = 1;
  for (long i = 1; i < n; i++) {
    pthread_t t;
    if (pthread_create(&t, &attr, tf_worker, NULL) != 0) break;
    pthread_detach(t);
    started++;
  }
  pthread_attr_destroy(&attr);
  tf_nthreads = started;
}

int tf_num_threads(void) {
  pthread_once(&tf_once, tf_init);
  return tf_nthreads;
}

void tf_parallel_for(tf_task fn, void *ctx, int64_t n) {
  if (n <= 0) return;
  pthread_once(&tf_once, tf_init);
  if (tf_nthreads == 1 || n == 1) {
    fn(ctx, 0, n);
    return;
  }
  int64_t chunk = n / ((int64_t)tf_nthreads * 8);
  if (chunk < 1) chunk = 1;
  pthread_mutex_lock(&tf_mu);
  tf_job_fn = fn;
  tf_job_ctx = ctx;
  tf_job_n = n;
  tf_job_chunk = chunk;
  atomic_store(&tf_job_next, 0);
  tf_pending = tf_nthreads - 1;
  tf_generation++;
  pthread_cond_broadcast(&tf_start);
  pthread_mutex_unlock(&tf_mu);
  tf_run_chunks();
  pthread_mutex_lock(&tf_mu);
  while (tf_pending > 0) pthread_cond_wait(&tf_done, &tf_mu);
  pthread_mutex_unlock(&tf_mu);
}

/* Buffers are 64-byte aligned, with their size in a 64-byte header. Freed
 * buffers are kept for reuse by an allocation of the same size, as a
 * caching allocator does: a function called again finds its intermediates
 * ready instead of faulting in fresh pages. */
#define TF_CACHE 64
static struct {
  char *block;
  size_t size;
} tf_cache[TF_CACHE];
static pthread_mutex_t tf_cache_mu = PTHREAD_MUTEX_INITIALIZER;

void *tf_alloc(int64_t bytes) {
  size_t n = bytes < 64 ? 64 : (size_t)(bytes + 63) / 64 * 64;
  char *block = NULL;
  pthread_mutex_lock(&tf_cache_mu);
  for (int i = 0; i < TF_CACHE; i++) {
    if (tf_cache[i].block && tf_cache[i].size == n) {
      block = tf_cache[i].block;
      tf_cache[i].block = NULL;
      break;
    }
  }
  pthread_mutex_unlock(&tf_cache_mu);
  if (!block) {
    block = aligned_alloc(64, n + 64);
    if (!block) {
      fprintf(stderr, "error: out of memory allocating %lld bytes\n", (long long)bytes);
      exit(3);
    }
    memcpy(block, &n, sizeof n);
  }
  return block + 64;
}

void tf_free(void *p) {
  if (!p) return;
  char *block = (char *)p - 64;
  size_t n;
  memcpy(&n, block, sizeof n);
  pthread_mutex_lock(&tf_cache_mu);
  for (int i = 0; i < TF_CACHE; i++) {
    if (!tf_cache[i].block) {
      tf_cache[i].block = block;
      tf_cache[i].size = n;
      block = NULL;
      break;
    }
  }
  pthread_mutex_unlock(&tf_cache_mu);
  free(block);
}

/* IEEE half conversions, called by LLVM 14's x86 code on CPUs without
 * F16C; weak, so a library that has them wins. */
__attribute__((weak)) float __gnu_h2f_ieee(uint16_t h) {
  uint32_t s = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, u;
  if (e == 0x1f) {
    u = s | 0x7f800000 | (m << 13);
  } else if (e == 0) {
    float f = (float)m * (1.0f / 16777216.0f);
    memcpy(&u, &f, 4);
    u |= s;
  } else {
    u = s | ((e + 112) << 23) | (m << 13);
  }
  float f;
  memcpy(&f, &u, 4);
  return f;
}

__attribute__((weak)) uint16_t __gnu_f2h_ieee(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  uint32_t s = (u >> 16) & 0x8000, a = u & 0x7fffffff;
  if (a > 0x7f800000) return (uint16_t)(s | 0x7e00);
  if (a >= 0x477ff000) return (uint16_t)(s | 0x7c00); /* rounds past 65504 */
  if (a < 0x38800000) { /* below 2^-14: 0.5 has the subnormal quantum 2^-24 as its ulp */
    float v, q;
    uint32_t qb;
    memcpy(&v, &a, 4);
    q = v + 0.5f;
    memcpy(&qb, &q, 4);
    return (uint16_t)(s | (qb - 0x3f000000));
  }
  uint32_t r = (a + 0xfff + ((a >> 13) & 1)) >> 13;
  return (uint16_t)(s | (r - (112 << 10)));
}
`

// harnessC is the generic main of a compiled program. It reads a
// manifest naming the function (an index into tf_entries), the runs, the
// extents and one raw binary file per buffer (inputs, then outputs), calls
// the function, and writes the outputs:
//
//	entry 0
//	runs 3
//	ext 8
//	in 2048 /tmp/x/in0.bin
//	out 2048 /tmp/x/out0.bin
//
// The first call produces the results; each further one is timed and
// reported as `time_ns N` on standard output.
const harnessC = `// TensorForge program harness.
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void (*tf_entry_fn)(void **buffers, int64_t *extents);
extern const tf_entry_fn tf_entries[];
extern const int32_t tf_num_entries;
extern void *tf_alloc(int64_t bytes);

#define TF_MAX 4096

static void die(const char *what, const char *path) {
  fprintf(stderr, "error: %s '%s': %s\n", what, path, strerror(errno));
  exit(2);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MANIFEST\n", argv[0]);
    return 2;
  }
  FILE *m = fopen(argv[1], "r");
  if (!m) die("cannot open", argv[1]);
  static void *bufs[TF_MAX];
  static int64_t exts[TF_MAX], sizes[TF_MAX];
  static char *outPaths[TF_MAX];
  static int outIndex[TF_MAX];
  int nbuf = 0, next = 0, nout = 0;
  long runs = 1, entry = 0;
  char line[8192];
  while (fgets(line, sizeof line, m)) {
    line[strcspn(line, "\n")] = 0;
    long long v;
    int off = 0;
    if (sscanf(line, "runs %ld", &runs) == 1) continue;
    if (sscanf(line, "entry %ld", &entry) == 1) {
      if (entry < 0 || entry >= tf_num_entries) {
        fprintf(stderr, "error: no entry point %ld (the program has %d)\n", entry, (int)tf_num_entries);
        return 2;
      }
      continue;
    }
    if (sscanf(line, "ext %lld", &v) == 1) {
      if (next >= TF_MAX) return 2;
      exts[next++] = v;
      continue;
    }
    int isIn = strncmp(line, "in ", 3) == 0, isOut = strncmp(line, "out ", 4) == 0;
    if (!isIn && !isOut) continue;
    if (nbuf >= TF_MAX) return 2;
    const char *rest = line + (isIn ? 3 : 4);
    if (sscanf(rest, "%lld %n", &v, &off) != 1) {
      fprintf(stderr, "error: bad manifest line '%s'\n", line);
      return 2;
    }
    const char *path = rest + off;
    sizes[nbuf] = v;
    bufs[nbuf] = tf_alloc(v);
    if (isIn) {
      FILE *f = fopen(path, "rb");
      if (!f) die("cannot open", path);
      if (v > 0 && fread(bufs[nbuf], 1, (size_t)v, f) != (size_t)v) die("short read of", path);
      fclose(f);
    } else {
      memset(bufs[nbuf], 0, (size_t)v);
      outPaths[nout] = strdup(path);
      outIndex[nout++] = nbuf;
    }
    nbuf++;
  }
  fclose(m);
  tf_entries[entry](bufs, exts);
  for (long r = 1; r < runs; r++) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    tf_entries[entry](bufs, exts);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long long ns = (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec);
    printf("time_ns %lld\n", ns);
  }
  for (int i = 0; i < nout; i++) {
    FILE *f = fopen(outPaths[i], "wb");
    if (!f) die("cannot create", outPaths[i]);
    int64_t n = sizes[outIndex[i]];
    if (n > 0 && fwrite(bufs[outIndex[i]], 1, (size_t)n, f) != (size_t)n) die("cannot write", outPaths[i]);
    if (fclose(f) != 0) die("cannot write", outPaths[i]);
  }
  return 0;
}
`
