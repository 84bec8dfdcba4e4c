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

#include <fstream>
#include <map>
#include <sstream>

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
  unsigned char* data = nullptr;
  size_t bytes = 0;
  std::string parent;  // a view's arena
  std::string out;     // where to write it at the end
};

inline std::vector<unsigned char> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail("cannot read %s", path.c_str());
  return std::vector<unsigned char>(std::istreambuf_iterator<char>(f), {});
}

inline int run_plan(int argc, char** argv, const kernel_entry* kernels) {
  if (argc != 2) fail("usage: %s PLAN", argv[0]);
  std::ifstream in(argv[1]);
  if (!in) fail("cannot read the plan %s", argv[1]);
  std::map<std::string, plan_buffer> bufs;
  std::vector<std::string> order;
  std::string line;
  const kernel_entry* kernel = nullptr;
  uint groups = 0, threads = 0;
  args a;
  std::vector<std::string> bound;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string cmd;
    if (!(ls >> cmd) || cmd[0] == '#') continue;
    if (cmd == "buffer") {
      std::string name, key, path;
      size_t bytes = 0;
      ls >> name >> bytes;
      plan_buffer b;
      b.bytes = bytes;
      b.data = static_cast<unsigned char*>(std::malloc(bytes));
      std::memset(b.data, 0xff, bytes);
      while (ls >> key >> path) {
        if (key == "in") {
          std::vector<unsigned char> d = read_file(path);
          if (d.size() != bytes) fail("%s holds %zu bytes, buffer %s has %zu", path.c_str(), d.size(), name.c_str(), bytes);
          std::memcpy(b.data, d.data(), bytes);
        } else if (key == "out") {
          b.out = path;
        }
      }
      name_buffer(name.c_str(), b.data, bytes);
      bufs[name] = b;
      order.push_back(name);
    } else if (cmd == "view") {
      std::string name, parent;
      size_t off = 0, bytes = 0;
      ls >> name >> parent >> off >> bytes;
      auto it = bufs.find(parent);
      if (it == bufs.end() || off + bytes > it->second.bytes) fail("view %s lies outside %s", name.c_str(), parent.c_str());
      plan_buffer b;
      b.data = it->second.data + off;
      b.bytes = bytes;
      b.parent = parent;
      name_buffer(name.c_str(), b.data, bytes);
      bufs[name] = b;
    } else if (cmd == "launch") {
      std::string name;
      ls >> name >> groups >> threads;
      kernel = nullptr;
      for (const kernel_entry* k = kernels; k->name; ++k)
        if (name == k->name) kernel = k;
      if (!kernel) fail("no kernel %s in this harness", name.c_str());
      a = args{};
      bound.clear();
    } else if (cmd == "arg") {
      std::string kind, v;
      ls >> kind >> v;
      if (kind == "buffer") {
        auto it = bufs.find(v);
        if (it == bufs.end()) fail("no buffer %s", v.c_str());
        a.ptrs.push_back(it->second.data);
        a.uints.push_back(0);
        bound.push_back(v);
      } else {
        a.ptrs.push_back(nullptr);
        a.uints.push_back(uint(std::stoul(v)));
      }
    } else if (cmd == "threadgroup-memory") {
      std::string name;
      unsigned long long want = 0;
      ls >> name >> want;
      const kernel_entry* k = nullptr;
      for (const kernel_entry* e = kernels; e->name; ++e)
        if (name == e->name) k = e;
      if (!k) fail("no kernel %s in this harness", name.c_str());
      const unsigned long long got = threadgroup_bytes(k->tg_prefix);
      if (got != want) fail("kernel %s declares %llu bytes of threadgroup memory, not %llu", name.c_str(), got, want);
    } else if (cmd == "end") {
      if (!kernel) fail("end without launch");
      // a launch may touch the views of an arena it is given, nothing
      // else of the arena
      for (auto& kv : bufs)
        if (!kv.second.parent.empty()) {
          const plan_buffer& p = bufs[kv.second.parent];
          poison(p.data, p.bytes);
        }
      for (const std::string& v : bound) unpoison(bufs[v].data, bufs[v].bytes);
      const kernel_entry* k = kernel;
      const args launch_args = a;
      dispatch(k->name, k->tg_prefix, groups, threads, [&](const ids& t) { k->call(launch_args, t); });
      for (auto& kv : bufs)
        if (kv.second.parent.empty()) unpoison(kv.second.data, kv.second.bytes);
      kernel = nullptr;
    } else {
      fail("unknown plan line: %s", line.c_str());
    }
  }
  for (const std::string& name : order) {
    const plan_buffer& b = bufs[name];
    if (b.out.empty()) continue;
    std::ofstream f(b.out, std::ios::binary);
    f.write(reinterpret_cast<const char*>(b.data), std::streamsize(b.bytes));
    if (!f) fail("cannot write %s", b.out.c_str());
  }
  return 0;
}

}  // namespace tf_emu
