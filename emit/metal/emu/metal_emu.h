// metal_emu.h: the Metal built-ins that TensorForge's Metal kernels use,
// in C++17, so that the kernels run (slowly, exactly) on a CPU:
//
//   g++ -std=c++17 -O1 -pthread -fwrapv -Wno-attributes
//       -fsanitize=address,alignment -fno-sanitize-recover=all
//       -I emit/metal/emu harness.cpp
//
// where harness.cpp includes this header, then the .metal file (its
// `#include <metal_stdlib>` finds emu/metal_stdlib), then calls
// tf_emu::dispatch (emu/harness.h does it from a launch plan). Every
// thread of a threadgroup is a fiber with a stack of its own (the same
// ones serve every dispatch), so barriers and simdgroup reductions are
// real rendezvous: a thread runs until it waits at one, then the next
// thread runs; threadgroups run one after the other, which is what makes
// `threadgroup` arrays (static locals here) private to the threadgroup
// running.
//
// What the device would punish is an error here, reported with a
// "metal_emu: error:" line and abort():
//   - a threadgroup_barrier (or a simd_sum, a simdgroup_load,
//     simdgroup_multiply_accumulate, ...) not reached by every thread (of
//     the simdgroup), or reached at different points;
//   - a simdgroup matrix function in a partial simdgroup, or given
//     arguments that differ between the lanes, or reading a matrix never
//     filled, loaded or computed;
//   - more than 32 KB of threadgroup memory in one kernel (measured from
//     the sizes of its threadgroup arrays in the symbol table);
//   - more than 1024 threads in a threadgroup;
//   - a read or write outside a buffer (AddressSanitizer with
//     -fsanitize=address: buffers are allocated with their exact size;
//     the report names the buffer), a misaligned vector access
//     (-fsanitize=alignment: float4 is 16-byte aligned as on the device).
//
// Numbers are Metal's: half and bfloat round to nearest even when made
// from a float; float arithmetic is IEEE single precision; the
// metal::precise functions are computed in double and rounded once, as
// the reference interpreter does (the device's are within a few ULP).
#pragma once

#include "../../fiber/fiber.h"  // emit/fiber: stacks and the switch between fibers

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define TF_EMU_ASAN 1
#else
#define TF_EMU_ASAN 0
#endif

namespace tf_emu {

// fail reports a misuse and aborts.
[[noreturn]] inline void fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
inline void fail(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::fputs("metal_emu: error: ", stderr);
  std::vfprintf(stderr, fmt, ap);
  std::fputs("\n", stderr);
  va_end(ap);
  std::fflush(stderr);
  std::abort();
}

inline uint32_t float_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

inline float bits_float(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// f32 -> f16 bits, rounding to nearest even, with subnormals, overflow to
// infinity (from 65520, the midpoint of 65504 and 65536) and quiet NaN.
inline uint16_t f32_to_f16(float f) {
  const uint32_t x = float_bits(f);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
  if (ax >= 0x477ff000u) return uint16_t(sign | 0x7c00u);
  if (ax < 0x38800000u) {
    // below 2^-14: a multiple of 2^-24, exact after scaling
    return uint16_t(sign | uint16_t(std::nearbyint(bits_float(ax) * 16777216.0f)));
  }
  const uint32_t r = ax + 0xfffu + ((ax >> 13) & 1u);
  return uint16_t(sign | ((r - 0x38000000u) >> 13));
}

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 31u, m = h & 0x3ffu;
  if (e == 31u) return bits_float(sign | 0x7f800000u | (m << 13));
  if (e == 0u) return bits_float(sign | float_bits(float(m) * 5.9604644775390625e-08f));
  return bits_float(sign | ((e + 112u) << 23) | (m << 13));
}

// f32 -> bf16 bits, rounding to nearest even; NaN stays a quiet NaN.
inline uint16_t f32_to_bf16(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t(((x >> 16) & 0x8000u) | 0x7fc0u);
  return uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

inline float bf16_to_f32(uint16_t b) { return bits_float(uint32_t(b) << 16); }

}  // namespace tf_emu

// ---------------------------------------------------------------------------
// Scalar and vector types

typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;

// half: IEEE binary16, converted to and from float.
struct half {
  uint16_t bits;
  half() = default;
  half(float f) : bits(tf_emu::f32_to_f16(f)) {}
  half(double f) : bits(tf_emu::f32_to_f16(float(f))) {}
  half(int i) : bits(tf_emu::f32_to_f16(float(i))) {}
  operator float() const { return tf_emu::f16_to_f32(bits); }
};

// bfloat: the upper half of a float, rounded to nearest even.
struct bfloat {
  uint16_t bits;
  bfloat() = default;
  bfloat(float f) : bits(tf_emu::f32_to_bf16(f)) {}
  bfloat(double f) : bits(tf_emu::f32_to_bf16(float(f))) {}
  bfloat(int i) : bits(tf_emu::f32_to_bf16(float(i))) {}
  operator float() const { return tf_emu::bf16_to_f32(bits); }
};

static_assert(sizeof(half) == 2 && sizeof(bfloat) == 2, "half and bfloat are 2 bytes");

namespace tf_emu {

// vec is a Metal vector: N elements aligned to N times their size (three
// to four), as float4 is 16-byte aligned on the device.
template <class T, int N>
struct alignas(sizeof(T) * (N == 3 ? 4 : N)) vec {
  T v[N];
  vec() = default;
  template <class... A, class = typename std::enable_if<sizeof...(A) == N>::type>
  vec(A... a) : v{T(a)...} {}
  T& operator[](int i) { return v[i]; }
  const T& operator[](int i) const { return v[i]; }
};

}  // namespace tf_emu

#define TF_EMU_VEC(T)                \
  typedef tf_emu::vec<T, 2> T##2;    \
  typedef tf_emu::vec<T, 3> T##3;    \
  typedef tf_emu::vec<T, 4> T##4;
TF_EMU_VEC(float)
TF_EMU_VEC(half)
TF_EMU_VEC(bfloat)
TF_EMU_VEC(char)
TF_EMU_VEC(uchar)
TF_EMU_VEC(short)
TF_EMU_VEC(ushort)
TF_EMU_VEC(int)
TF_EMU_VEC(uint)
TF_EMU_VEC(long)
TF_EMU_VEC(ulong)
TF_EMU_VEC(bool)
#undef TF_EMU_VEC

// ---------------------------------------------------------------------------
// The threads of a threadgroup

namespace tf_emu {

// ids are the built-in positions of one thread.
struct ids {
  uint gid, lid, simd_lane, simd_id, tg_size, ngroups;
};

// What a thread is doing, for the rendezvous and their diagnostics.
enum wait_kind { running = 0, at_barrier, at_exit, at_simd };

inline void wait_until_moved(const unsigned long& g, unsigned long mine);

// group is the state of the threadgroup running: where each thread
// waits, the threadgroup-wide rendezvous (barriers and the kernel's
// end) and one rendezvous per simdgroup. Its threads are fibers of one
// system thread (see fibers below): a rendezvous needs no lock, and a
// thread waits by yielding until the rendezvous's generation moves on.
struct group {
  unsigned n = 0;
  uint gid = 0;
  std::vector<int> where, line;
  std::vector<const char*> what;
  unsigned arrived = 0;
  unsigned long gen = 0;
  struct simd {
    unsigned arrived = 0;
    unsigned long gen = 0;
    unsigned char slot[32][16];
    unsigned char result[16];
    const void* args[32];  // each lane's arguments to a simdgroup matrix function
  };
  std::vector<std::unique_ptr<simd>> simds;

  explicit group(unsigned threads) : n(threads), where(threads, running), line(threads, 0), what(threads, "") {
    for (unsigned s = 0; s < (threads + 31) / 32; ++s) simds.emplace_back(new simd);
  }

  // describe says where the threads wait: "31 at threadgroup_barrier
  // (line 40), 1 returned from the kernel".
  std::string describe() {
    std::vector<std::pair<std::string, int>> counts;
    for (unsigned t = 0; t < n; ++t) {
      std::string s;
      switch (where[t]) {
        case running: s = "still running"; break;
        case at_exit: s = "returned from the kernel"; break;
        default: s = std::string("at ") + what[t] + " (line " + std::to_string(line[t]) + ")";
      }
      auto it = std::find_if(counts.begin(), counts.end(), [&](const std::pair<std::string, int>& c) { return c.first == s; });
      if (it == counts.end()) counts.push_back({s, 1});
      else it->second++;
    }
    std::string out;
    for (auto& c : counts) {
      if (!out.empty()) out += ", ";
      out += std::to_string(c.second) + (c.second == 1 ? " thread " : " threads ") + c.first;
    }
    return out;
  }

  // stuck fails when every thread waits and none of the rendezvous can
  // complete: some thread is waiting for a rendezvous others skipped.
  void check_stuck() {
    for (unsigned t = 0; t < n; ++t)
      if (where[t] == running) return;
    fail("threadgroup %u deadlocks: %s; a barrier or simdgroup function must be reached by every thread", gid,
         describe().c_str());
  }

  // wait yields until generation g is no longer mine.
  static void wait(const unsigned long& g, unsigned long mine) { wait_until_moved(g, mine); }

  // arrive is a threadgroup-wide rendezvous: a barrier, or the kernel's end.
  void arrive(uint lid, wait_kind kind, const char* name, int ln) {
    where[lid] = kind;
    line[lid] = ln;
    what[lid] = name;
    if (++arrived == n) {
      for (unsigned t = 0; t < n; ++t) {
        if (where[t] != kind || line[t] != ln)
          fail("threadgroup %u: not every thread reached the same threadgroup_barrier: %s", gid, describe().c_str());
      }
      arrived = 0;
      ++gen;
      std::fill(where.begin(), where.end(), int(running));
      return;
    }
    check_stuck();
    wait(gen, gen);
  }

  // same_point fails unless every lane of simdgroup s waits at function
  // name on line ln.
  void same_point(unsigned s, unsigned first, unsigned lanes, const char* name, int ln) {
    for (unsigned t = first; t < first + lanes; ++t) {
      if (where[t] != at_simd || line[t] != ln || std::strcmp(what[t], name) != 0)
        fail("threadgroup %u, simdgroup %u: not every lane reached the same %s: %s", gid, s, name, describe().c_str());
    }
  }

  // matrix_rendezvous is the rendezvous of a simdgroup matrix function:
  // every lane of a whole simdgroup (32 lanes) arrives with a pointer to
  // its arguments; the last to arrive runs done(args, s), args[i] being
  // lane i's, which does the work for all of them (it writes each lane's
  // result through that lane's arguments); then every lane goes on.
  template <class F>
  void matrix_rendezvous(uint lid, const void* arg, const char* name, int ln, F done) {
    const unsigned s = lid / 32, first = s * 32, lanes = std::min(32u, n - first);
    if (lanes != 32)
      fail("threadgroup %u, simdgroup %u has %u threads: %s needs a whole simdgroup of 32 (threads per threadgroup a multiple "
           "of 32, or the partial simdgroup kept out of the simdgroup matrix code)",
           gid, s, lanes, name);
    simd& sg = *simds[s];
    where[lid] = at_simd;
    line[lid] = ln;
    what[lid] = name;
    sg.args[lid - first] = arg;
    if (++sg.arrived == lanes) {
      same_point(s, first, lanes, name, ln);
      done(sg.args, s);
      sg.arrived = 0;
      ++sg.gen;
      for (unsigned t = first; t < first + lanes; ++t) where[t] = running;
      return;
    }
    check_stuck();
    wait(sg.gen, sg.gen);
  }

  // collective is a simdgroup-wide rendezvous: each lane gives a value,
  // the last to arrive computes the result all lanes get.
  template <class T, class F>
  T collective(uint lid, T v, const char* name, int ln, F reduce) {
    static_assert(sizeof(T) <= 16, "simdgroup values are at most 16 bytes");
    const unsigned s = lid / 32, first = s * 32, lanes = std::min(32u, n - first);
    simd& sg = *simds[s];
    where[lid] = at_simd;
    line[lid] = ln;
    what[lid] = name;
    std::memcpy(sg.slot[lid - first], &v, sizeof(T));
    if (++sg.arrived == lanes) {
      same_point(s, first, lanes, name, ln);
      T vals[32];
      for (unsigned t = 0; t < lanes; ++t) std::memcpy(&vals[t], sg.slot[t], sizeof(T));
      T r = reduce(vals, lanes);
      std::memcpy(sg.result, &r, sizeof(T));
      sg.arrived = 0;
      ++sg.gen;
      for (unsigned t = first; t < first + lanes; ++t) where[t] = running;
      return r;
    }
    check_stuck();
    wait(sg.gen, sg.gen);
    T r;
    std::memcpy(&r, sg.result, sizeof(T));
    return r;
  }
};

// The threadgroup running and the position of the thread running, set
// while a kernel runs (by dispatch and at every switch of fibers).
struct worker {
  group* g = nullptr;
  uint lid = 0;
};
inline worker self;

inline worker& current(const char* what) {
  if (self.g == nullptr) fail("%s called outside a kernel dispatched by tf_emu::dispatch", what);
  return self;
}

// butterfly reduces the lanes as a shuffle-xor tree over 32 lanes does,
// the missing lanes holding the identity: every lane gets the same value.
template <class T, class F>
T butterfly(const T* vals, unsigned lanes, T identity, F op) {
  T x[32];
  for (unsigned i = 0; i < 32; ++i) x[i] = i < lanes ? vals[i] : identity;
  for (unsigned o = 16; o >= 1; o >>= 1) {
    T y[32];
    for (unsigned i = 0; i < 32; ++i) y[i] = op(x[i], x[i ^ o]);
    std::memcpy(x, y, sizeof(x));
  }
  return x[0];
}

// ---------------------------------------------------------------------------
// Threadgroup memory: the threadgroup arrays of a kernel are its static
// locals, whose sizes the symbol table of the running program holds.

struct symbol {
  std::string name;
  uint64_t size;
};

inline std::vector<symbol> load_symbols() {
  std::vector<symbol> out;
  // mapped, not read: only the pages of the headers and the symbol table
  // are touched (reading the whole program into the heap was most of the
  // time of a short run)
  const int fd = open("/proc/self/exe", O_RDONLY);
  if (fd < 0) fail("cannot read /proc/self/exe to measure threadgroup memory");
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size < off_t(sizeof(Elf64_Ehdr))) fail("/proc/self/exe is not an ELF file");
  void* map = mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) fail("cannot map /proc/self/exe to measure threadgroup memory");
  const unsigned char* data = static_cast<const unsigned char*>(map);
  Elf64_Ehdr eh;
  std::memcpy(&eh, data, sizeof(eh));
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64)
    fail("/proc/self/exe is not a 64-bit ELF file");
  auto section = [&](unsigned i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, data + eh.e_shoff + size_t(i) * eh.e_shentsize, sizeof(sh));
    return sh;
  };
  for (unsigned i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh = section(i);
    if (sh.sh_type != SHT_SYMTAB) continue;
    Elf64_Shdr strtab = section(sh.sh_link);
    for (size_t off = 0; off + sizeof(Elf64_Sym) <= sh.sh_size; off += sizeof(Elf64_Sym)) {
      Elf64_Sym sym;
      std::memcpy(&sym, data + sh.sh_offset + off, sizeof(sym));
      if (ELF64_ST_TYPE(sym.st_info) != STT_OBJECT) continue;
      out.push_back({reinterpret_cast<const char*>(data + strtab.sh_offset + sym.st_name), sym.st_size});
    }
  }
  munmap(map, size_t(st.st_size));
  if (out.empty()) fail("the program has no symbol table (stripped?): cannot measure threadgroup memory");
  return out;
}

// threadgroup_bytes sums the static locals of the function whose local
// symbols start with prefix (`_ZZN2ns6rms_k0E` for ns::rms_k0), each
// rounded up to 16 bytes as the device allocates threadgroup memory.
inline uint64_t threadgroup_bytes(const char* prefix) {
  static const std::vector<symbol> syms = load_symbols();
  uint64_t total = 0;
  const size_t n = std::strlen(prefix);
  for (const symbol& s : syms)
    if (s.name.compare(0, n, prefix) == 0) total += (s.size + 15) / 16 * 16;
  return total;
}

// The device's limits (Apple M3 Max).
constexpr unsigned max_threads_per_threadgroup = 1024;
constexpr uint64_t max_threadgroup_memory = 32768;

// ---------------------------------------------------------------------------
// Buffers: allocated with their exact size, so that AddressSanitizer
// reports the first byte outside; the registry names the buffer.

struct buffer_record {
  std::string name;
  const unsigned char* data;
  size_t bytes;
  bool arena;  // holds views, which an access is reported against
  bool bound;  // given to the launch running
};

inline std::vector<buffer_record>& buffers() {
  static std::vector<buffer_record> all;
  return all;
}

// name_buffer registers a buffer for the reports; it returns its number.
inline size_t name_buffer(const char* name, const void* p, size_t bytes) {
  buffers().push_back({name, static_cast<const unsigned char*>(p), bytes, false, true});
  return buffers().size() - 1;
}

// name_view names a window of a named buffer, which becomes an arena.
inline size_t name_view(const char* name, const void* p, size_t bytes) {
  const unsigned char* v = static_cast<const unsigned char*>(p);
  for (buffer_record& b : buffers())
    if (v >= b.data && v < b.data + b.bytes) b.arena = true;
  return name_buffer(name, p, bytes);
}

// bind_buffers says which registered buffers the next launch is given:
// an access is reported against the nearest of them.
inline void bind_buffers(const std::vector<size_t>& given) {
  for (buffer_record& b : buffers()) b.bound = false;
  for (size_t i : given) buffers()[i].bound = true;
}

#if TF_EMU_ASAN
inline void asan_report(const char*) {
  const unsigned char* a = static_cast<const unsigned char*>(__asan_get_report_address());
  const buffer_record* best = nullptr;
  long dist = 0;
  for (const buffer_record& b : buffers()) {
    if (b.arena || !b.bound) continue;
    long d = a < b.data ? long(b.data - a) : a >= b.data + b.bytes ? long(a - (b.data + b.bytes)) + 1 : 0;
    if (!best || d < dist) best = &b, dist = d;
  }
  if (best && dist < 4096) {
    long off = long(a - best->data);
    std::fprintf(stderr, "metal_emu: error: out-of-bounds access to buffer '%s': byte %ld of a buffer of %zu bytes\n",
                 best->name.c_str(), off, best->bytes);
  } else {
    std::fprintf(stderr, "metal_emu: error: invalid memory access (see AddressSanitizer's report)\n");
  }
}

struct asan_hook {
  asan_hook() { __asan_set_error_report_callback(asan_report); }
};
inline asan_hook install_asan_hook;

// poison marks bytes a kernel must not touch (an arena's other views).
inline void poison(const void* p, size_t n) { ASAN_POISON_MEMORY_REGION(p, n); }
inline void unpoison(const void* p, size_t n) { ASAN_UNPOISON_MEMORY_REGION(p, n); }
#else
#warning "metal_emu: compile with -fsanitize=address to check buffer bounds"
inline void poison(const void*, size_t) {}
inline void unpoison(const void*, size_t) {}
#endif

// fibers runs the threads of a threadgroup as fibers of the calling
// system thread, fiber i being Metal thread lid = i: each runs until it
// waits at a rendezvous (group::wait yields), then the next runs, round
// robin; a fiber waiting for a rendezvous that has not completed is
// skipped, not entered. A barrier is then a few switches in user space,
// where a system thread per Metal thread made it hundreds of switches of
// the kernel's scheduler. Stacks are kept between dispatches, each with a guard page
// below it; AddressSanitizer is told of every switch.
class fibers {
 public:
  static fibers& get() {
    static fibers f;
    return f;
  }

  // run has fibers 0 .. n-1 call job(lid) and returns when all have.
  void run(unsigned n, const std::function<void(uint)>& job) {
    if (job_ != nullptr) fail("a kernel dispatched from inside a kernel");
    while (stacks_.size() < n) {
      void* p = emu_fiber_stack(stack_bytes);
      if (p == nullptr) fail("cannot map a stack for thread %zu of a threadgroup", stacks_.size());
      stacks_.push_back(p);
    }
    fib_.resize(n);
    job_ = &job;
    for (unsigned i = 0; i < n; ++i) {
      unpoison(stacks_[i], stack_bytes);  // frames a fiber left when it last ended
      fib_[i] = fiber{};
#if EMU_FIBER_FAST_SWITCH
      fib_[i].sp = emu_fiber_start(stacks_[i], stack_bytes, trampoline);
#else
      if (getcontext(&fib_[i].ctx) != 0) fail("getcontext failed");
      fib_[i].ctx.uc_stack.ss_sp = stacks_[i];
      fib_[i].ctx.uc_stack.ss_size = stack_bytes;
      fib_[i].ctx.uc_link = nullptr;
      makecontext(&fib_[i].ctx, trampoline, 0);
#endif
    }
    for (unsigned left = n; left > 0;) {
      bool ran = false;
      for (unsigned i = 0; i < n; ++i) {
        fiber& f = fib_[i];
        // a fiber waiting for a rendezvous that has not completed would
        // only yield again: it is not entered
        if (f.done || (f.gen != nullptr && *f.gen == f.mine)) continue;
        f.gen = nullptr;
        cur_ = i;
        self.lid = i;
        ran = true;
        enter(i);
        if (f.done) --left;
      }
      if (!ran) fail("every thread of the threadgroup waits for a rendezvous that cannot complete");
    }
    job_ = nullptr;
  }

  // wait goes back to run's loop from the running fiber until generation
  // g is no longer mine.
  void wait(const unsigned long& g, unsigned long mine) {
    while (g == mine) {
      fib_[cur_].gen = &g;
      fib_[cur_].mine = mine;
      leave(false);
    }
  }

 private:
  static constexpr size_t stack_bytes = 1 << 16;

  struct fiber {
    void* sp = nullptr;
#if !EMU_FIBER_FAST_SWITCH
    ucontext_t ctx;
#endif
    bool done = false;
    // gen and mine: the fiber waits until *gen != mine (gen null: it runs)
    const unsigned long* gen = nullptr;
    unsigned long mine = 0;
  };

  static void trampoline() {
    fibers& f = get();
    f.entered();
    (*f.job_)(f.cur_);
    f.fib_[f.cur_].done = true;
    f.leave(true);
    fail("a finished fiber was resumed");
  }

  // enter switches from run's loop to fiber i, and returns when it yields
  // or ends.
  void enter(unsigned i) {
#if TF_EMU_ASAN
    void* fake = nullptr;
    __sanitizer_start_switch_fiber(&fake, stacks_[i], stack_bytes);
#endif
#if EMU_FIBER_FAST_SWITCH
    emu_fiber_switch(&main_sp_, fib_[i].sp);
#else
    if (swapcontext(&main_, &fib_[i].ctx) != 0) fail("swapcontext failed");
#endif
#if TF_EMU_ASAN
    __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
  }

  // entered runs first in a fiber after each switch into it.
  void entered() {
#if TF_EMU_ASAN
    __sanitizer_finish_switch_fiber(fake_, &main_bottom_, &main_size_);
#endif
  }

  // leave switches from the running fiber back to run's loop; ending
  // tells AddressSanitizer the fiber's stack is done with.
  void leave(bool ending) {
    const unsigned i = cur_;
#if TF_EMU_ASAN
    __sanitizer_start_switch_fiber(ending ? nullptr : &fake_, main_bottom_, main_size_);
#else
    (void)ending;
#endif
#if EMU_FIBER_FAST_SWITCH
    emu_fiber_switch(&fib_[i].sp, main_sp_);
#else
    if (swapcontext(&fib_[i].ctx, &main_) != 0) fail("swapcontext failed");
#endif
    entered();
  }

  std::vector<void*> stacks_;
  std::vector<fiber> fib_;
#if EMU_FIBER_FAST_SWITCH
  void* main_sp_ = nullptr;
#else
  ucontext_t main_;
#endif
  const std::function<void(uint)>* job_ = nullptr;
  unsigned cur_ = 0;
  void* fake_ = nullptr;
  const void* main_bottom_ = nullptr;
  size_t main_size_ = 0;
};

inline void wait_until_moved(const unsigned long& g, unsigned long mine) { fibers::get().wait(g, mine); }

// dispatch runs a kernel over `groups` threadgroups of `threads`
// threads: run(ids) calls the kernel function for one thread. name is
// the kernel's name for messages; tg_prefix the symbol prefix of its
// static locals (see threadgroup_bytes), or nullptr not to measure.
inline void dispatch(const char* name, const char* tg_prefix, uint groups, uint threads,
                     const std::function<void(const ids&)>& run) {
  if (threads == 0 || threads > max_threads_per_threadgroup)
    fail("kernel %s dispatched with %u threads per threadgroup; the device runs 1 to %u", name, threads,
         max_threads_per_threadgroup);
  if (tg_prefix) {
    const uint64_t tg = threadgroup_bytes(tg_prefix);
    if (tg > max_threadgroup_memory)
      fail("kernel %s declares %llu bytes of threadgroup memory; the device has %llu", name, (unsigned long long)tg,
           (unsigned long long)max_threadgroup_memory);
  }
  if (groups == 0) return;
  group g(threads);
  self.g = &g;
  fibers::get().run(threads, [&](uint lid) {
    for (uint gid = 0; gid < groups; ++gid) {
      if (lid == 0) g.gid = gid;
      run(ids{gid, lid, lid % 32, lid / 32, threads, groups});
      // the kernel's end: every thread, before the next threadgroup
      // reuses the threadgroup arrays
      g.arrive(lid, at_exit, "the end of the kernel", 0);
    }
  });
  self.g = nullptr;
}

}  // namespace tf_emu

// ---------------------------------------------------------------------------
// namespace metal

namespace metal {

enum class mem_flags { mem_none = 0, mem_device = 1, mem_threadgroup = 2, mem_texture = 4 };

// threadgroup_barrier waits for every thread of the threadgroup.
inline void threadgroup_barrier(mem_flags, int line = __builtin_LINE()) {
  tf_emu::worker& w = tf_emu::current("threadgroup_barrier");
  w.g->arrive(w.lid, tf_emu::at_barrier, "threadgroup_barrier", line);
}

template <class T>
T simd_sum(T v, int line = __builtin_LINE()) {
  tf_emu::worker& w = tf_emu::current("simd_sum");
  return w.g->collective(w.lid, v, "simd_sum", line, [](const T* vals, unsigned n) {
    return tf_emu::butterfly(vals, n, T(0), [](T a, T b) { return T(a + b); });
  });
}

// simd_max and simd_min return the non-NaN operand of a NaN, as fmax.
template <class T>
T simd_max(T v, int line = __builtin_LINE()) {
  tf_emu::worker& w = tf_emu::current("simd_max");
  return w.g->collective(w.lid, v, "simd_max", line, [](const T* vals, unsigned n) {
    T r = vals[0];
    for (unsigned i = 1; i < n; ++i) r = (vals[i] > r || r != r) ? vals[i] : r;
    return r;
  });
}

template <class T>
T simd_min(T v, int line = __builtin_LINE()) {
  tf_emu::worker& w = tf_emu::current("simd_min");
  return w.g->collective(w.lid, v, "simd_min", line, [](const T* vals, unsigned n) {
    T r = vals[0];
    for (unsigned i = 1; i < n; ++i) r = (vals[i] < r || r != r) ? vals[i] : r;
    return r;
  });
}

inline bool simd_any(bool v, int line = __builtin_LINE()) {
  tf_emu::worker& w = tf_emu::current("simd_any");
  return w.g->collective(w.lid, v, "simd_any", line, [](const bool* vals, unsigned n) {
    bool r = false;
    for (unsigned i = 0; i < n; ++i) r = r || vals[i];
    return r;
  });
}

template <class T, class U>
T as_type(U u) {
  static_assert(sizeof(T) == sizeof(U), "as_type keeps the size");
  T t;
  std::memcpy(&t, &u, sizeof(T));
  return t;
}

template <class T>
T min(T a, T b) {
  return b < a ? b : a;
}

template <class T>
T max(T a, T b) {
  return a < b ? b : a;
}

inline float fabs(float x) { return std::fabs(x); }
inline float floor(float x) { return std::floor(x); }
inline float ceil(float x) { return std::ceil(x); }
inline float rint(float x) { return std::nearbyint(x); }
inline float fma(float a, float b, float c) { return std::fma(a, b, c); }
inline bool isnan(float x) { return std::isnan(x); }
inline bool isinf(float x) { return std::isinf(x); }
inline bool signbit(float x) { return std::signbit(x); }

// The precise functions, correctly rounded: computed in double, rounded once.
namespace precise {
inline float exp(float x) { return float(std::exp(double(x))); }
inline float exp2(float x) { return float(std::exp2(double(x))); }
inline float log(float x) { return float(std::log(double(x))); }
inline float log2(float x) { return float(std::log2(double(x))); }
inline float sqrt(float x) { return std::sqrt(x); }
inline float rsqrt(float x) { return float(1.0 / std::sqrt(double(x))); }
inline float tanh(float x) { return float(std::tanh(double(x))); }
inline float sin(float x) { return float(std::sin(double(x))); }
inline float cos(float x) { return float(std::cos(double(x))); }
inline float pow(float x, float y) { return float(std::pow(double(x), double(y))); }
}  // namespace precise

// ---------------------------------------------------------------------------
// Simdgroup matrices (<metal_simdgroup_matrix>): 8 x 8 matrices shared by
// the 32 lanes of a simdgroup. On the device each lane holds two of the
// 64 elements; here every lane holds a copy of the whole matrix, and the
// functions are collective: every lane of a whole simdgroup must reach
// the same call (the rendezvous reports a divergent or partial
// simdgroup as it does a divergent simd_sum), with the same arguments.
// The last lane to arrive does the work for all and writes each lane's
// copy of the result.
//
// Arithmetic: simdgroup_multiply_accumulate computes each element as
// f32 fused multiply-adds in a fixed order, acc = c(i, j), then
// acc = fma(a(i, k), b(k, j), acc) for k = 0 .. 7, rounded once to T.
// A sum over K in 8 x 8 blocks taken in order is therefore the serial sum
// of the loop IR, fma by fma; the device's order within a block is not
// specified (docs/backend-metal.md states the bound the tests allow).

template <class T, int Cols, int Rows>
struct simdgroup_matrix {
  static_assert(Cols == 8 && Rows == 8, "the emulation has 8 x 8 simdgroup matrices");
  T e[Rows][Cols];   // e[row][column]
  bool set = false;  // made by make_filled_simdgroup_matrix, loaded or computed
};

typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<bfloat, 8, 8> simdgroup_bfloat8x8;

}  // namespace metal

namespace tf_emu {

// uniform fails unless the lanes' arguments (args[i] points at lane i's
// A) agree in the bytes [0, bytes) that eq compares.
template <class A, class Eq>
void uniform(const void* const* args, unsigned s, const char* name, Eq eq) {
  const A& first = *static_cast<const A*>(args[0]);
  for (unsigned t = 1; t < 32; ++t)
    if (!eq(first, *static_cast<const A*>(args[t])))
      fail("threadgroup %u, simdgroup %u: the lanes passed different arguments to %s (lanes 0 and %u differ); its "
           "arguments must be uniform across the simdgroup",
           self.g->gid, s, name, t);
}

// same_matrix compares two lanes' copies of a matrix.
template <class M>
bool same_matrix(const M& a, const M& b) {
  return a.set == b.set && std::memcmp(a.e, b.e, sizeof(a.e)) == 0;
}

template <class M>
void require_set(const M& m, const char* what, const char* name) {
  if (!m.set) fail("%s reads %s, a simdgroup matrix never filled, loaded or computed", name, what);
}

}  // namespace tf_emu

namespace metal {

// make_filled_simdgroup_matrix<T, 8, 8>(v): every element v.
template <class T, int Cols, int Rows>
simdgroup_matrix<T, Cols, Rows> make_filled_simdgroup_matrix(const T value, int line = __builtin_LINE()) {
  static const char* name = "make_filled_simdgroup_matrix";
  tf_emu::worker& w = tf_emu::current(name);
  struct args_t {
    T v;
  } a{value};
  w.g->matrix_rendezvous(w.lid, &a, name, line, [&](const void* const* args, unsigned s) {
    tf_emu::uniform<args_t>(args, s, name,
                            [](const args_t& x, const args_t& y) { return std::memcmp(&x.v, &y.v, sizeof(T)) == 0; });
  });
  simdgroup_matrix<T, Cols, Rows> m;
  for (int i = 0; i < Rows; ++i)
    for (int j = 0; j < Cols; ++j) m.e[i][j] = value;
  m.set = true;
  return m;
}

namespace detail {

template <class T, int Cols, int Rows>
struct load_args {
  simdgroup_matrix<T, Cols, Rows>* d;
  const T* src;
  ulong stride, ox, oy;
  bool transpose;
};

template <class A>
bool same_access(const A& x, const A& y) {
  return x.src == y.src && x.stride == y.stride && x.ox == y.ox && x.oy == y.oy && x.transpose == y.transpose;
}

// element is the address of element (i, j) of the matrix at src:
// src[(oy + i) * stride + ox + j], or (transposed) the matrix stored as
// its transpose, src[(oy + j) * stride + ox + i].
template <class A>
size_t element(const A& a, int i, int j) {
  return a.transpose ? size_t(a.oy + j) * a.stride + a.ox + i : size_t(a.oy + i) * a.stride + a.ox + j;
}

template <class T>
void simdgroup_load_impl(simdgroup_matrix<T, 8, 8>& d, const T* src, ulong elements_per_row, ulong2 origin, bool transpose,
                         int line) {
  static const char* name = "simdgroup_load";
  tf_emu::worker& w = tf_emu::current(name);
  load_args<T, 8, 8> a{&d, src, elements_per_row, origin[0], origin[1], transpose};
  w.g->matrix_rendezvous(w.lid, &a, name, line, [&](const void* const* args, unsigned s) {
    tf_emu::uniform<load_args<T, 8, 8>>(args, s, name, same_access<load_args<T, 8, 8>>);
    simdgroup_matrix<T, 8, 8> m;
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 8; ++j) m.e[i][j] = src[element(a, i, j)];
    m.set = true;
    for (unsigned t = 0; t < 32; ++t) *static_cast<const load_args<T, 8, 8>*>(args[t])->d = m;
  });
}

}  // namespace detail

// simdgroup_load(d, src, elements_per_row = 8, origin = (0, 0), transpose
// = false) loads an 8 x 8 matrix from device or threadgroup memory: row i
// at src + (origin.y + i) * elements_per_row + origin.x; transposed, the
// memory holds the matrix's transpose (element (i, j) at row j, column i).
template <class T>
void simdgroup_load(simdgroup_matrix<T, 8, 8>& d, const T* src, ulong elements_per_row = 8, ulong2 origin = ulong2(0, 0),
                    bool transpose = false, int line = __builtin_LINE()) {
  detail::simdgroup_load_impl(d, src, elements_per_row, origin, transpose, line);
}

// simdgroup_store writes an 8 x 8 matrix as simdgroup_load reads one.
template <class T>
void simdgroup_store(const simdgroup_matrix<T, 8, 8>& m, T* dst, ulong elements_per_row = 8, ulong2 origin = ulong2(0, 0),
                     bool transpose = false, int line = __builtin_LINE()) {
  static const char* name = "simdgroup_store";
  tf_emu::worker& w = tf_emu::current(name);
  struct args_t {
    const simdgroup_matrix<T, 8, 8>* m;
    const T* src;
    ulong stride, ox, oy;
    bool transpose;
  } a{&m, dst, elements_per_row, origin[0], origin[1], transpose};
  w.g->matrix_rendezvous(w.lid, &a, name, line, [&](const void* const* args, unsigned s) {
    for (unsigned t = 0; t < 32; ++t) tf_emu::require_set(*static_cast<const args_t*>(args[t])->m, "the matrix stored", name);
    tf_emu::uniform<args_t>(args, s, name, [](const args_t& x, const args_t& y) {
      return detail::same_access(x, y) && tf_emu::same_matrix(*x.m, *y.m);
    });
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 8; ++j) dst[detail::element(a, i, j)] = m.e[i][j];
  });
}

// simdgroup_multiply_accumulate(d, a, b, c): d = a * b + c, each element
// by f32 fused multiply-adds over k = 0 .. 7 in order (see above).
template <class T>
void simdgroup_multiply_accumulate(simdgroup_matrix<T, 8, 8>& d, const simdgroup_matrix<T, 8, 8>& a,
                                   const simdgroup_matrix<T, 8, 8>& b, const simdgroup_matrix<T, 8, 8>& c,
                                   int line = __builtin_LINE()) {
  static const char* name = "simdgroup_multiply_accumulate";
  tf_emu::worker& w = tf_emu::current(name);
  typedef simdgroup_matrix<T, 8, 8> M;
  struct args_t {
    M* d;
    const M *a, *b, *c;
  } x{&d, &a, &b, &c};
  w.g->matrix_rendezvous(w.lid, &x, name, line, [&](const void* const* args, unsigned s) {
    for (unsigned t = 0; t < 32; ++t) {
      const args_t& l = *static_cast<const args_t*>(args[t]);
      tf_emu::require_set(*l.a, "its left operand", name);
      tf_emu::require_set(*l.b, "its right operand", name);
      tf_emu::require_set(*l.c, "its accumulator", name);
    }
    tf_emu::uniform<args_t>(args, s, name, [](const args_t& p, const args_t& q) {
      return tf_emu::same_matrix(*p.a, *q.a) && tf_emu::same_matrix(*p.b, *q.b) && tf_emu::same_matrix(*p.c, *q.c);
    });
    M r;
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 8; ++j) {
        float acc = float(c.e[i][j]);
        for (int k = 0; k < 8; ++k) acc = std::fma(float(a.e[i][k]), float(b.e[k][j]), acc);
        r.e[i][j] = T(acc);
      }
    r.set = true;
    for (unsigned t = 0; t < 32; ++t) *static_cast<const args_t*>(args[t])->d = r;
  });
}

// simdgroup_multiply(d, a, b): d = a * b, as simdgroup_multiply_accumulate
// with a zero accumulator.
template <class T>
void simdgroup_multiply(simdgroup_matrix<T, 8, 8>& d, const simdgroup_matrix<T, 8, 8>& a,
                        const simdgroup_matrix<T, 8, 8>& b, int line = __builtin_LINE()) {
  simdgroup_matrix<T, 8, 8> zero;
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) zero.e[i][j] = T(0.0f);
  zero.set = true;
  simdgroup_multiply_accumulate(d, a, b, zero, line);
}

}  // namespace metal

// ---------------------------------------------------------------------------
// Address spaces and attributes, last so that the code above is as
// written: device and thread memory are ordinary memory, constant is
// read-only, and a threadgroup array is shared by the threads of the
// threadgroup running (a static local; threadgroups run in turn).

#define device
#define thread
#define constant const
#define threadgroup static
