// harness.h: a main() for emulated Metal kernels that runs a launch plan,
// the way a host program runs a launch description:
//
//   buffer x 4096 in x.bin             allocate 4096 bytes, read them from x.bin
//   buffer y 2048 out y.bin            allocate, write them to y.bin at the end
//   buffer arena 8192                  an arena of intermediates
//   view t0 arena 256 1024             bytes [256, 1280) of the arena, named t0
//   launch ns::f_k0 64 32              64 threadgroups of 32 threads
//   arg buffer x                       [[buffer(0)]]
//   arg uint 16                        [[buffer(1)]]: an extent
//   end
//   threadgroup-memory ns::f_k0 16512  check what the kernel declares
//
// A harness defines the kernels it can launch and calls run_plan:
//
//   static void call_f_k0(const tf_emu::args& a, const tf_emu::ids& t) {
//     ns::f_k0((const device float*)a.ptr(0), a.u32(1), t.gid, t.lid, t.simd_lane, t.simd_id, t.tg_size);
//   }
//   static const tf_emu::kernel_entry kernels[] = {{"ns::f_k0", "_ZZN2ns4f_k0E", call_f_k0}, {}};
//   int main(int argc, char** argv) { return tf_emu::run_plan(argc, argv, kernels); }
//
// Output buffers start filled with 0xff bytes (NaN in every float
// format), so that an element no kernel writes shows.
#pragma once

#include "metal_emu.h"

namespace tf_emu {

// args are the values of a launch's [[buffer(i)]] parameters.
struct args {
  std::vector<void*> ptrs;
  std::vector<uint> uints;
  void* ptr(size_t i) const {
    if (i >= ptrs.size() || ptrs[i] == nullptr) fail("parameter %zu of the launch is not a buffer", i);
    return ptrs[i];
  }
  const uint& u32(size_t i) const {
    if (i >= uints.size() || ptrs[i] != nullptr) fail("parameter %zu of the launch is not a uint", i);
    return uints[i];
  }
};

struct kernel_entry {
  const char* name;
  const char* tg_prefix;
  void (*call)(const args&, const ids&);
};

struct plan_buffer {
  std::string name;
  unsigned char* data = nullptr;
  size_t bytes = 0;
  int parent = -1;  // a view's arena
  std::string out;  // where to write it at the end
  size_t reg = 0;   // its number in the emulation's registry
};

inline const kernel_entry* find_kernel(const kernel_entry* kernels, const char* name) {
  for (const kernel_entry* k = kernels; k->name; ++k)
    if (std::strcmp(name, k->name) == 0) return k;
  fail("no kernel %s in this harness", name);
}

inline int find_buffer(const std::vector<plan_buffer>& bufs, const char* name) {
  for (size_t i = 0; i < bufs.size(); ++i)
    if (bufs[i].name == name) return int(i);
  fail("no buffer %s in the plan", name);
}

inline int run_plan(int argc, char** argv, const kernel_entry* kernels) {
  if (argc != 2) fail("usage: %s PLAN", argv[0]);
  FILE* in = std::fopen(argv[1], "r");
  if (!in) fail("cannot read the plan %s", argv[1]);
  std::vector<plan_buffer> bufs;
  const kernel_entry* kernel = nullptr;
  uint groups = 0, threads = 0;
  args a;
  std::vector<int> bound;
  char line[4096], w[5][1024];
  while (std::fgets(line, sizeof(line), in)) {
    const int n = std::sscanf(line, "%1023s %1023s %1023s %1023s %1023s", w[0], w[1], w[2], w[3], w[4]);
    if (n <= 0 || w[0][0] == '#') continue;
    const std::string cmd = w[0];
    if (cmd == "buffer" && n >= 3) {
      plan_buffer b;
      b.name = w[1];
      b.bytes = std::strtoull(w[2], nullptr, 10);
      b.data = static_cast<unsigned char*>(std::malloc(b.bytes));
      std::memset(b.data, 0xff, b.bytes);
      /* inout: an input the kernels update in place, written back at the end */
      const bool inout = n == 5 && std::strcmp(w[3], "inout") == 0;
      if (n == 5 && (std::strcmp(w[3], "in") == 0 || inout)) {
        FILE* f = std::fopen(w[4], "rb");
        if (!f) fail("cannot read %s", w[4]);
        const size_t got = std::fread(b.data, 1, b.bytes, f);
        const bool more = std::fgetc(f) != EOF;
        std::fclose(f);
        if (got != b.bytes || more) fail("%s does not hold the %zu bytes of buffer %s", w[4], b.bytes, w[1]);
        if (inout) b.out = w[4];
      } else if (n == 5 && std::strcmp(w[3], "out") == 0) {
        b.out = w[4];
      }
      b.reg = name_buffer(w[1], b.data, b.bytes);
      bufs.push_back(b);
    } else if (cmd == "view" && n == 5) {
      const int p = find_buffer(bufs, w[2]);
      const size_t off = std::strtoull(w[3], nullptr, 10), bytes = std::strtoull(w[4], nullptr, 10);
      if (off + bytes > bufs[p].bytes) fail("view %s lies outside %s", w[1], w[2]);
      plan_buffer b;
      b.name = w[1];
      b.data = bufs[p].data + off;
      b.bytes = bytes;
      b.parent = p;
      b.reg = name_view(w[1], b.data, bytes);
      bufs.push_back(b);
    } else if (cmd == "threadgroup-memory" && n == 3) {
      const kernel_entry* k = find_kernel(kernels, w[1]);
      const unsigned long long want = std::strtoull(w[2], nullptr, 10), got = threadgroup_bytes(k->tg_prefix);
      if (got != want) fail("kernel %s declares %llu bytes of threadgroup memory, not %llu", w[1], got, want);
    } else if (cmd == "launch" && n == 4) {
      kernel = find_kernel(kernels, w[1]);
      groups = uint(std::strtoul(w[2], nullptr, 10));
      threads = uint(std::strtoul(w[3], nullptr, 10));
      a = args{};
      bound.clear();
    } else if (cmd == "arg" && n == 3) {
      if (std::strcmp(w[1], "buffer") == 0) {
        const int b = find_buffer(bufs, w[2]);
        a.ptrs.push_back(bufs[b].data);
        a.uints.push_back(0);
        bound.push_back(b);
      } else {
        a.ptrs.push_back(nullptr);
        a.uints.push_back(uint(std::strtoul(w[2], nullptr, 10)));
      }
    } else if (cmd == "end") {
      if (!kernel) fail("end without launch");
      // a launch may touch the views of an arena it is given, nothing
      // else of the arena
      for (const plan_buffer& b : bufs)
        if (b.parent >= 0) poison(bufs[b.parent].data, bufs[b.parent].bytes);
      std::vector<size_t> given;
      for (int b : bound) {
        unpoison(bufs[b].data, bufs[b].bytes);
        given.push_back(bufs[b].reg);
      }
      bind_buffers(given);
      const kernel_entry* k = kernel;
      dispatch(k->name, k->tg_prefix, groups, threads, [&](const ids& t) { k->call(a, t); });
      for (const plan_buffer& b : bufs)
        if (b.parent < 0) unpoison(b.data, b.bytes);
      kernel = nullptr;
    } else {
      fail("bad plan line: %s", line);
    }
  }
  std::fclose(in);
  for (const plan_buffer& b : bufs) {
    if (b.out.empty()) continue;
    FILE* f = std::fopen(b.out.c_str(), "wb");
    if (!f || std::fwrite(b.data, 1, b.bytes, f) != b.bytes) fail("cannot write %s", b.out.c_str());
    std::fclose(f);
  }
  return 0;
}

}  // namespace tf_emu
