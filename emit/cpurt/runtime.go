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

/* The functions of the shared library's ABI; everything else is hidden. */
#define TF_API __attribute__((visibility("default")))

typedef void (*tf_task)(void *ctx, int64_t begin, int64_t end);

/* The pool: workers plus the calling thread. A job is published under
 * tf_mu with a new generation and the number of threads that take part;
 * every one of them claims chunks of iterations with an atomic counter,
 * and the caller waits until they have all finished before returning.
 * Jobs run one at a time (tf_call_mu), so the functions of a library may
 * be called from several threads. The pool grows on demand to the number
 * of threads asked for (tf_set_num_threads, else $TF_NUM_THREADS, else
 * every online core); idle workers beyond it sleep. */
#define TF_MAX_THREADS 1024
static pthread_mutex_t tf_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t tf_call_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tf_start = PTHREAD_COND_INITIALIZER;
static pthread_cond_t tf_done = PTHREAD_COND_INITIALIZER;
static int tf_started = 1; /* threads of the pool, the caller included */
static _Atomic int tf_want; /* threads for the next calls; 0: the default */
static uint64_t tf_generation;
static int tf_pending;
static int tf_job_threads;
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

struct tf_worker_start {
  int id;
  uint64_t generation;
};

static void *tf_worker(void *arg) {
  struct tf_worker_start *st = arg;
  int id = st->id;
  uint64_t seen = st->generation;
  free(st);
  for (;;) {
    pthread_mutex_lock(&tf_mu);
    while (tf_generation == seen) pthread_cond_wait(&tf_start, &tf_mu);
    seen = tf_generation;
    int join = id < tf_job_threads;
    pthread_mutex_unlock(&tf_mu);
    if (!join) continue;
    tf_run_chunks();
    pthread_mutex_lock(&tf_mu);
    if (--tf_pending == 0) pthread_cond_signal(&tf_done);
    pthread_mutex_unlock(&tf_mu);
  }
  return NULL;
}

static int tf_default_threads(void) {
  const char *env = getenv("TF_NUM_THREADS");
  long n = env && *env ? atol(env) : sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) n = 1;
  if (n > TF_MAX_THREADS) n = TF_MAX_THREADS;
  return (int)n;
}

/* tf_grow starts workers until the pool has n threads (fewer if the
 * system refuses); called with tf_mu held. */
static void tf_grow(int n) {
  if (n <= tf_started) return;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  /* kernels keep their scratchpad on the stack */
  pthread_attr_setstacksize(&attr, (size_t)64 << 20);
  while (tf_started < n) {
    struct tf_worker_start *st = malloc(sizeof *st);
    if (!st) break;
    st->id = tf_started;
    st->generation = tf_generation;
    pthread_t t;
    if (pthread_create(&t, &attr, tf_worker, st) != 0) {
      free(st);
      break;
    }
    pthread_detach(t);
    tf_started++;
  }
  pthread_attr_destroy(&attr);
}

/* tf_set_num_threads sets the number of threads later calls use; n < 1
 * restores the default. */
TF_API void tf_set_num_threads(int n) {
  if (n > TF_MAX_THREADS) n = TF_MAX_THREADS;
  atomic_store(&tf_want, n < 1 ? 0 : n);
}

/* tf_num_threads is the number of threads the next call uses. */
TF_API int tf_num_threads(void) {
  static _Atomic int fallback;
  int n = atomic_load(&tf_want);
  if (n > 0) return n;
  n = atomic_load(&fallback);
  if (n == 0) {
    n = tf_default_threads();
    atomic_store(&fallback, n);
  }
  return n;
}

void tf_parallel_for(tf_task fn, void *ctx, int64_t n) {
  if (n <= 0) return;
  int want = n == 1 ? 1 : tf_num_threads();
  if (want == 1) {
    fn(ctx, 0, n);
    return;
  }
  pthread_mutex_lock(&tf_call_mu);
  pthread_mutex_lock(&tf_mu);
  tf_grow(want);
  int threads = want < tf_started ? want : tf_started;
  if (threads == 1) {
    pthread_mutex_unlock(&tf_mu);
    fn(ctx, 0, n);
    pthread_mutex_unlock(&tf_call_mu);
    return;
  }
  int64_t chunk = n / ((int64_t)threads * 8);
  if (chunk < 1) chunk = 1;
  tf_job_fn = fn;
  tf_job_ctx = ctx;
  tf_job_n = n;
  tf_job_chunk = chunk;
  tf_job_threads = threads;
  atomic_store(&tf_job_next, 0);
  tf_pending = threads - 1;
  tf_generation++;
  pthread_cond_broadcast(&tf_start);
  pthread_mutex_unlock(&tf_mu);
  tf_run_chunks();
  pthread_mutex_lock(&tf_mu);
  while (tf_pending > 0) pthread_cond_wait(&tf_done, &tf_mu);
  pthread_mutex_unlock(&tf_mu);
  pthread_mutex_unlock(&tf_call_mu);
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
// extents and one file region per buffer (inputs, then outputs: the size
// in bytes, the offset in the file, the path), calls the function, and
// leaves the outputs in their files:
//
//	entry 0
//	runs 3
//	ext 8
//	in 2048 128 /tmp/x/x.npy
//	out 2048 128 /tmp/x/result0.npy
//
// An input the function updates in place (graph.index_copy's
// destination) is an `inout` line: read, and written back like an output.
// A region whose offset is a multiple of 64 is mapped (inputs privately,
// outputs and inouts shared, the output file extended to its end), so the kernels
// read and write the files' pages with no copy; other regions are read
// into, and written from, an allocated buffer. The first call produces
// the results; each further one is timed and reported as `time_ns N` on
// standard output. A manifest that asks for timed runs (runs > 1, written
// before the regions) has every region read into and written from an
// allocated buffer: the timed calls then see memory as a program's own
// buffers are, not the pages of a shared file mapping, whose stores fault
// again whenever the kernel writes the dirty pages back.
const harnessC = `// TensorForge program harness.
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef void (*tf_entry_fn)(void **buffers, int64_t *extents);
extern const tf_entry_fn tf_entries[];
extern const int32_t tf_num_entries;
extern void *tf_alloc(int64_t bytes);

static void die(const char *what, const char *path) {
  fprintf(stderr, "error: %s '%s': %s\n", what, path, strerror(errno));
  exit(2);
}

struct region {
  char *path;
  int64_t size, offset;
  int fd, out, in, mapped; /* an "inout" region is both */
  void *map;
  size_t mapLen;
};

/* open_region makes the buffer of one manifest line; map: whether a
 * region at a 64-byte offset may be mapped. */
static void *open_region(struct region *r, int map) {
  r->fd = r->out ? open(r->path, O_RDWR | O_CREAT, 0644) : open(r->path, O_RDONLY);
  if (r->fd < 0) die("cannot open", r->path);
  struct stat st;
  if (fstat(r->fd, &st) != 0) die("cannot stat", r->path);
  int64_t end = r->offset + r->size;
  if (r->out && !r->in && st.st_size < end && ftruncate(r->fd, (off_t)end) != 0) die("cannot extend", r->path);
  if (r->in && st.st_size < end) {
    fprintf(stderr, "error: '%s' has %lld bytes, %lld expected\n", r->path, (long long)st.st_size, (long long)end);
    exit(2);
  }
  /* no descriptor stays open (a program may have thousands of results):
   * a mapping outlives its descriptor, and an unmapped output is opened
   * again when it is written */
  if (map && r->size > 0 && r->offset % 64 == 0) {
    r->mapLen = (size_t)end;
    r->map = mmap(NULL, r->mapLen, PROT_READ | PROT_WRITE, r->out ? MAP_SHARED : MAP_PRIVATE, r->fd, 0);
    if (r->map != MAP_FAILED) {
      r->mapped = 1;
      if (close(r->fd) != 0) die("cannot close", r->path);
      return (char *)r->map + r->offset;
    }
  }
  void *buf = tf_alloc(r->size);
  if (!r->in) {
    memset(buf, 0, (size_t)r->size);
  } else {
    int64_t done = 0;
    while (done < r->size) {
      ssize_t k = pread(r->fd, (char *)buf + done, (size_t)(r->size - done), (off_t)(r->offset + done));
      if (k <= 0) die("short read of", r->path);
      done += k;
    }
  }
  if (close(r->fd) != 0) die("cannot close", r->path);
  return buf;
}

/* close_region writes an output that was not mapped. */
static void close_region(struct region *r, void *buf) {
  if (r->mapped) {
    if (munmap(r->map, r->mapLen) != 0) die("cannot unmap", r->path);
  } else if (r->out) {
    int fd = open(r->path, O_RDWR);
    if (fd < 0) die("cannot open", r->path);
    int64_t done = 0;
    while (done < r->size) {
      ssize_t k = pwrite(fd, (char *)buf + done, (size_t)(r->size - done), (off_t)(r->offset + done));
      if (k <= 0) die("cannot write", r->path);
      done += k;
    }
    if (close(fd) != 0) die("cannot write", r->path);
  }
}

/* grow doubles the capacity of an array of n elements of size each. */
static void *grow(void *p, int *cap, size_t size) {
  *cap = *cap ? *cap * 2 : 64;
  void *q = realloc(p, (size_t)*cap * size);
  if (!q) {
    fprintf(stderr, "error: out of memory for the manifest's %d entries\n", *cap);
    exit(2);
  }
  return q;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MANIFEST\n", argv[0]);
    return 2;
  }
  FILE *m = fopen(argv[1], "r");
  if (!m) die("cannot open", argv[1]);
  void **bufs = NULL;
  int64_t *exts = NULL;
  struct region *regions = NULL;
  int nbuf = 0, next = 0, capBuf = 0, capExt = 0, capReg = 0;
  long runs = 1, entry = 0;
  char line[8192];
  while (fgets(line, sizeof line, m)) {
    line[strcspn(line, "\n")] = 0;
    long long v, o;
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
      if (next >= capExt) exts = grow(exts, &capExt, sizeof *exts);
      exts[next++] = v;
      continue;
    }
    int isIn = strncmp(line, "in ", 3) == 0, isOut = strncmp(line, "out ", 4) == 0;
    int isInOut = strncmp(line, "inout ", 6) == 0;
    if (!isIn && !isOut && !isInOut) continue;
    if (nbuf >= capBuf) bufs = grow(bufs, &capBuf, sizeof *bufs);
    if (nbuf >= capReg) regions = grow(regions, &capReg, sizeof *regions);
    const char *rest = line + (isIn ? 3 : isOut ? 4 : 6);
    if (sscanf(rest, "%lld %lld %n", &v, &o, &off) != 2 || v < 0 || o < 0) {
      fprintf(stderr, "error: bad manifest line '%s'\n", line);
      return 2;
    }
    struct region *r = &regions[nbuf];
    r->path = strdup(rest + off);
    r->size = v;
    r->offset = o;
    r->out = isOut || isInOut;
    r->in = isIn || isInOut;
    /* timed calls run on buffers of the program's own (anonymous memory),
     * as a program's intermediates are: stores into a shared mapping of a
     * file fault again each time the kernel writes back its dirty pages */
    bufs[nbuf] = open_region(r, runs <= 1);
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
  for (int i = 0; i < nbuf; i++) close_region(&regions[i], bufs[i]);
  return 0;
}
`
