// tt_emu.h: a host emulation of the tt-metal kernel API that `tfc --emit=tt`
// kernels use, for testing them without Tenstorrent hardware.
//
// It implements exactly the compute and dataflow calls the emitter writes,
// with the device's rules enforced:
//
//   - tiles are 32x32 in the device's face order (four 16x16 faces, each
//     row-major), Float32 (4096 bytes), Float16_b (2048), Float16 (2048) or
//     UInt8 (1024: ui8, and i8 as its two's complement byte), in each
//     core's L1 (a byte array of the target's size);
//   - circular buffers have pages and real FIFO semantics: cb_reserve_back /
//     cb_push_back on the producer side, cb_wait_front / cb_pop_front on the
//     consumer side, blocking across the reader, compute and writer kernels
//     of a core (three fibers, as the three RISC-V kernels of a Tensix run
//     side by side);
//   - the DST register holds 16 tiles, used 8 (4 with fp32_dest_acc_en) at a
//     time under the tile_regs_acquire / commit / wait / release protocol;
//   - FPU ops read srcA/srcB, which hold 19 bits (TF32) of a Float32 operand;
//     matmul_tiles accumulates its exact products into DST in f32, k in order;
//     SFPU ops compute in f32 (unary functions in double, rounded once);
//     packing to Float16_b / Float16 rounds to nearest even;
//   - a UInt8 tile reaches DST as integers (the byte zero-extended, with the
//     math engine in INT8 mode), which only typecast_tile turns into floats
//     and only a UInt8 pack takes (its low byte); typecast_tile from Float32
//     to UInt8 / Int8 truncates toward zero and keeps the low byte, as the
//     SFPU's conversion does;
//   - reads and writes go to emulated DRAM buffers of tiles through
//     TensorAccessor and noc_async_read_tile / noc_async_write_tile.
//
// Misuse the device would punish stops the program with a message naming
// the core, the kernel and the call: a pop without a matching wait, reading
// a page not waited for, a push beyond what was reserved, a DST index past
// the acquired half, math outside acquire or a pack before tile_regs_wait,
// an op without its init (or after another op's init: matmul_tiles without
// mm_init or mm_init_short, or with another transpose), an operand whose data
// format the unpacker is not configured for, integers in DST where an op
// takes floats (or the reverse), the INT8 mode of the math engine left on
// (or off) by a reconfiguration without to_from_int8, a circular buffer
// declared Int8 (sign-magnitude), pushing a page whose NoC read
// has not been waited for by a barrier, L1 overflow, and deadlock (every
// live kernel of a core blocked).
//
// The harness includes this header first, then each kernel source inside a
// namespace of its own; the api/... headers the kernels include are empty
// shims that name this file.
#pragma once

#include "../../fiber/fiber.h"  // emit/fiber: stacks and the switch between fibers

#include <atomic>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <sys/mman.h>
#include <ucontext.h>

#define ALWI inline
// an attribute of L1 pointers on the device (rvtt_l1_ptr); nothing on the host
#define tt_l1_ptr

namespace tt {
enum CBIndex : std::uint8_t {
    c_0 = 0, c_1, c_2, c_3, c_4, c_5, c_6, c_7, c_8, c_9, c_10, c_11, c_12, c_13, c_14, c_15,
    c_16, c_17, c_18, c_19, c_20, c_21, c_22, c_23, c_24, c_25, c_26, c_27, c_28, c_29, c_30, c_31,
};
}  // namespace tt

enum class DataFormat : std::uint8_t { Float32 = 0, Float16 = 1, Float16_b = 5, Int8 = 14, UInt8 = 30, Invalid = 0xff };
enum class PoolType { SUM, AVG, MAX };
enum class ReduceDim { REDUCE_ROW, REDUCE_COL, REDUCE_SCALAR };
enum class BroadcastType { NONE, COL, ROW, SCALAR };
enum class VectorMode { None, R, C, RC };

namespace ttemu {

constexpr int kTileRows = 32, kTileCols = 32, kTileElems = 1024;
constexpr int kNumCBs = 32;

// ---------------------------------------------------------------------------
// Numbers

inline float bits_to_f32(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
inline uint32_t f32_to_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

// bf16 with round to nearest even; NaN stays a quiet NaN.
inline uint16_t f32_to_bf16(float f) {
    uint32_t u = f32_to_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return uint16_t(u >> 16);
}
inline float bf16_to_f32(uint16_t h) { return bits_to_f32(uint32_t(h) << 16); }

// IEEE half with round to nearest even (through double, exact for f32).
inline uint16_t f32_to_f16(float f) {
    uint32_t u = f32_to_bits(f);
    uint16_t sign = uint16_t((u >> 16) & 0x8000u);
    float a = std::fabs(f);
    if (std::isnan(f)) return uint16_t(sign | 0x7e00);
    if (a >= 65520.0f) return uint16_t(sign | 0x7c00);  // rounds to infinity
    if (a < 6.103515625e-05f) {                          // subnormal: multiples of 2^-24
        double q = std::nearbyint(double(a) * 16777216.0);
        return uint16_t(sign | uint16_t(q));
    }
    int e;
    double m = std::frexp(double(a), &e);  // a = m * 2^e, m in [0.5, 1)
    double q = std::nearbyint(m * 2048.0);  // 11 significant bits
    if (q == 2048.0) { q = 1024.0; e++; }
    uint32_t exp = uint32_t(e - 1 + 15);
    if (exp >= 31) return uint16_t(sign | 0x7c00);
    return uint16_t(sign | (exp << 10) | (uint32_t(q) - 1024u));
}
inline float f16_to_f32(uint16_t h) {
    uint32_t sign = (h & 0x8000u) ? 1u : 0u, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    double v;
    if (exp == 0) v = std::ldexp(double(man), -24);
    else if (exp == 31) v = man ? NAN : INFINITY;
    else v = std::ldexp(double(man + 1024u), int(exp) - 25);
    return float(sign ? -v : v);
}

// srcA / srcB hold 19 bits of a Float32 operand: sign, 8 exponent bits and
// 10 mantissa bits (TF32); the rest are dropped.
inline float to_tf32(float f) {
    if (std::isnan(f)) return f;
    return bits_to_f32(f32_to_bits(f) & 0xffffe000u);
}

inline uint32_t format_bytes(DataFormat f) {
    switch (f) {
        case DataFormat::Float32: return 4096;
        case DataFormat::Float16_b:
        case DataFormat::Float16: return 2048;
        case DataFormat::UInt8:
        case DataFormat::Int8: return 1024;
        default: return 0;
    }
}
inline const char* format_name(DataFormat f) {
    switch (f) {
        case DataFormat::Float32: return "Float32";
        case DataFormat::Float16_b: return "Float16_b";
        case DataFormat::Float16: return "Float16";
        case DataFormat::UInt8: return "UInt8";
        case DataFormat::Int8: return "Int8";
        default: return "Invalid";
    }
}

// The position of element (r, c) of a tile in face order.
inline int face_index(int r, int c) {
    int face = (r / 16) * 2 + (c / 16);
    return face * 256 + (r % 16) * 16 + (c % 16);
}

// DST holds 32-bit words: a float, or an integer in the same bits.
inline uint32_t word_of(const float* p, int i) {
    uint32_t u;
    std::memcpy(&u, p + i, 4);
    return u;
}
inline void set_word(float* p, int i, uint32_t u) { std::memcpy(p + i, &u, 4); }

// A UInt8 tile (face order) <-> 1024 integers in row-major order, as DST
// words: the unpacker zero-extends each byte, the packer keeps the low one.
inline void unpack_int_tile(const uint8_t* src, float* out) {
    for (int r = 0; r < kTileRows; r++)
        for (int c = 0; c < kTileCols; c++) set_word(out, r * kTileCols + c, src[face_index(r, c)]);
}
inline void pack_int_tile(const float* in, uint8_t* dst) {
    for (int r = 0; r < kTileRows; r++)
        for (int c = 0; c < kTileCols; c++) dst[face_index(r, c)] = uint8_t(word_of(in, r * kTileCols + c) & 0xffu);
}

// Tile bytes (face order, format f) <-> 1024 floats in row-major order.
inline void unpack_tile(const uint8_t* src, DataFormat f, float* out) {
    for (int r = 0; r < kTileRows; r++)
        for (int c = 0; c < kTileCols; c++) {
            int i = face_index(r, c);
            float v;
            if (f == DataFormat::Float32) {
                uint32_t u;
                std::memcpy(&u, src + 4 * i, 4);
                v = bits_to_f32(u);
            } else {
                uint16_t h;
                std::memcpy(&h, src + 2 * i, 2);
                v = f == DataFormat::Float16_b ? bf16_to_f32(h) : f16_to_f32(h);
            }
            out[r * kTileCols + c] = v;
        }
}
inline void pack_tile_bytes(const float* in, DataFormat f, uint8_t* dst) {
    for (int r = 0; r < kTileRows; r++)
        for (int c = 0; c < kTileCols; c++) {
            int i = face_index(r, c);
            float v = in[r * kTileCols + c];
            if (f == DataFormat::Float32) {
                uint32_t u = f32_to_bits(v);
                std::memcpy(dst + 4 * i, &u, 4);
            } else {
                uint16_t h = f == DataFormat::Float16_b ? f32_to_bf16(v) : f32_to_f16(v);
                std::memcpy(dst + 2 * i, &h, 2);
            }
        }
}

// ---------------------------------------------------------------------------
// Failure

inline std::mutex& print_mutex() {
    static std::mutex m;
    return m;
}

struct Core;
struct ThreadCtx {
    Core* core = nullptr;
    const char* risc = "host";       // "reader", "compute", "writer"
    const char* kernel = "";         // kernel file
    std::vector<uint32_t> args;      // runtime args
    int outstanding_reads = 0, outstanding_writes = 0;
};
// The context of the kernel running: each kernel of each core is a fiber
// (see fibers below) with a context of its own; the host's outside them.
inline ThreadCtx host_ctx;
inline ThreadCtx* cur_ctx = &host_ctx;
inline ThreadCtx& tctx() { return *cur_ctx; }

inline std::string where_am_i();

[[noreturn]] inline void fail(const char* fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    {
        std::lock_guard<std::mutex> g(print_mutex());
        std::fprintf(stderr, "tt-emu: %s: error: %s\n", where_am_i().c_str(), msg);
        std::fflush(stderr);
    }
    std::_Exit(3);
}

// ---------------------------------------------------------------------------
// DRAM: buffers of pages, found by address.

struct DramBuffer {
    std::string name;
    uint32_t base = 0;
    uint32_t page_size = 0;
    std::vector<uint8_t> bytes;
};

inline std::map<uint32_t, DramBuffer*>& dram() {
    static std::map<uint32_t, DramBuffer*> m;
    return m;
}

inline DramBuffer* dram_alloc(const std::string& name, uint32_t page_size, uint32_t pages) {
    static uint32_t next = 0x10000000u;
    auto* b = new DramBuffer;
    b->name = name;
    b->base = next;
    b->page_size = page_size;
    b->bytes.assign(size_t(page_size) * pages, 0);
    uint64_t end = uint64_t(next) + b->bytes.size();
    next = uint32_t((end + 0xffff) & ~uint64_t(0xffff)) + 0x10000u;
    dram()[b->base] = b;
    return b;
}

inline DramBuffer* dram_find(uint32_t addr) {
    auto& m = dram();
    auto it = m.upper_bound(addr);
    if (it == m.begin()) return nullptr;
    --it;
    DramBuffer* b = it->second;
    if (addr < b->base + b->bytes.size() || (b->bytes.empty() && addr == b->base)) return b;
    return nullptr;
}

// ---------------------------------------------------------------------------
// Cores and circular buffers

struct CBConfig {
    uint32_t index = 0;
    DataFormat format = DataFormat::Invalid;
    uint32_t page_size = 0, num_pages = 0, l1_addr = 0;
    bool unpack_to_dest = false;  // UnpackToDestMode::UnpackToDestFp32 in the ComputeConfig
};

struct CB {
    CBConfig cfg;
    bool configured = false;
    uint32_t count = 0;     // pages pushed and not popped
    uint32_t rd = 0, wr = 0;  // page index of the front and of the back
    uint32_t reserved = 0;  // pages the producer has reserved (not pushed)
    uint32_t waited = 0;    // pages the consumer has waited for (not popped)
    uint32_t packed = 0;    // pages of the reservation packed by the compute kernel
};

struct Config {
    uint32_t l1_bytes = 1536 * 1024;
    uint32_t dst_tiles_per_acquire = 8;  // 4 with fp32_dest_acc_en
    bool fp32_dest_acc_en = false;
};

struct Core {
    int x = 0, y = 0;
    Config cfg;
    // L1 lives below 4 GiB, so that an L1 address (a uint32_t, as kernels
    // get from get_write_ptr) is also a host pointer kernels may cast
    uint8_t* l1 = nullptr;
    uint32_t l1_base = 0;
    CB cbs[kNumCBs];
    int live = 0, blocked = 0;
    std::string waiting[3];
    std::function<bool()> ready[3];  // what each blocked kernel waits for
};

// stuck reports whether no blocked kernel of the core can go on: each
// one's condition is false (a kernel woken but not yet run is not stuck).
inline bool stuck(Core* c) {
    if (c->blocked < c->live) return false;
    for (int i = 0; i < 3; i++)
        if (c->ready[i] && c->ready[i]()) return false;
    return true;
}

inline std::string waits_of(Core* c) {
    std::string all;
    const char* names[3] = {"reader", "compute", "writer"};
    for (int i = 0; i < 3; i++)
        if (!c->waiting[i].empty()) all += std::string(" ") + names[i] + " waits in " + c->waiting[i] + ";";
    return all;
}

inline std::string where_am_i() {
    if (!tctx().core) return "host";
    char buf[256];
    std::snprintf(buf, sizeof buf, "core (%d,%d) %s kernel %s", tctx().core->x, tctx().core->y, tctx().risc, tctx().kernel);
    return buf;
}

inline int risc_slot() {
    if (std::strcmp(tctx().risc, "reader") == 0) return 0;
    if (std::strcmp(tctx().risc, "compute") == 0) return 1;
    return 2;
}

inline CB& cb_of(uint32_t id, const char* call) {
    Core* c = tctx().core;
    if (!c) fail("%s called outside a kernel", call);
    if (id >= kNumCBs || !c->cbs[id].configured) fail("%s: circular buffer c_%u is not configured on this core", call, id);
    return c->cbs[id];
}

inline void yield();

// block yields to the other kernels until ready() holds, failing on
// deadlock: when every live kernel of the core is blocked, none can wake.
template <class F>
inline void block(const std::string& what, F ready) {
    Core* c = tctx().core;
    if (ready()) return;
    int slot = risc_slot();
    c->waiting[slot] = what;
    c->ready[slot] = ready;
    c->blocked++;
    if (stuck(c)) fail("deadlock: every running kernel of the core is blocked:%s", waits_of(c).c_str());
    while (!ready()) yield();
    c->blocked--;
    c->waiting[slot].clear();
    c->ready[slot] = nullptr;
}

inline void cb_reserve_back(uint32_t id, uint32_t n) {
    CB& b = cb_of(id, "cb_reserve_back");
    if (n == 0 || n > b.cfg.num_pages)
        fail("cb_reserve_back(c_%u, %u): the buffer has %u pages, so this never returns", id, n, b.cfg.num_pages);
    char what[64];
    std::snprintf(what, sizeof what, "cb_reserve_back(c_%u, %u)", id, n);
    block(what, [&] { return b.cfg.num_pages - b.count >= n; });
    if (n > b.reserved) b.reserved = n;
}

inline void cb_push_back(uint32_t id, uint32_t n) {
    CB& b = cb_of(id, "cb_push_back");
    if (tctx().outstanding_reads > 0)
        fail("cb_push_back(c_%u, %u) while %d noc_async_read(s) are in flight: call noc_async_read_barrier first", id, n,
             tctx().outstanding_reads);
    if (n > b.reserved)
        fail("cb_push_back(c_%u, %u) pushes more pages than cb_reserve_back reserved (%u)", id, n, b.reserved);
    if (std::strcmp(tctx().risc, "compute") == 0 && b.packed < n)
        fail("cb_push_back(c_%u, %u) pushes pages no pack_tile wrote (%u packed)", id, n, b.packed);
    b.count += n;
    b.reserved -= n;
    b.packed = b.packed > n ? b.packed - n : 0;
    b.wr = (b.wr + n) % b.cfg.num_pages;
}

inline void cb_wait_front(uint32_t id, uint32_t n) {
    CB& b = cb_of(id, "cb_wait_front");
    if (n == 0 || n > b.cfg.num_pages)
        fail("cb_wait_front(c_%u, %u): the buffer has %u pages, so this never returns", id, n, b.cfg.num_pages);
    char what[64];
    std::snprintf(what, sizeof what, "cb_wait_front(c_%u, %u)", id, n);
    block(what, [&] { return b.count >= n; });
    if (n > b.waited) b.waited = n;
}

inline void cb_pop_front(uint32_t id, uint32_t n) {
    CB& b = cb_of(id, "cb_pop_front");
    if (tctx().outstanding_writes > 0)
        fail("cb_pop_front(c_%u, %u) while %d noc_async_write(s) from it may be in flight: call noc_async_write_barrier first",
             id, n, tctx().outstanding_writes);
    if (n > b.waited)
        fail("cb_pop_front(c_%u, %u) without a matching cb_wait_front (%u pages waited for)", id, n, b.waited);
    b.count -= n;
    b.waited -= n;
    b.rd = (b.rd + n) % b.cfg.num_pages;
}

// The L1 address of page i from the front / of the reservation.
inline uint32_t front_page_addr(CB& b, uint32_t i) { return b.cfg.l1_addr + ((b.rd + i) % b.cfg.num_pages) * b.cfg.page_size; }
inline uint32_t back_page_addr(CB& b, uint32_t i) { return b.cfg.l1_addr + ((b.wr + i) % b.cfg.num_pages) * b.cfg.page_size; }

inline uint8_t* l1_ptr(uint32_t addr, uint32_t len, const char* call) {
    Core* c = tctx().core;
    if (addr < c->l1_base || uint64_t(addr) + len > uint64_t(c->l1_base) + c->cfg.l1_bytes)
        fail("%s: address 0x%x + %u is outside L1 (%u bytes)", call, addr, len, c->cfg.l1_bytes);
    return reinterpret_cast<uint8_t*>(uintptr_t(addr));
}

// The page of a tile the compute kernel reads: it must have been waited for.
inline const uint8_t* read_tile(uint32_t id, uint32_t itile, const char* call, DataFormat* fmt) {
    CB& b = cb_of(id, call);
    if (itile >= b.waited)
        fail("%s reads page %u of c_%u, but only %u page(s) were waited for with cb_wait_front", call, itile, id, b.waited);
    *fmt = b.cfg.format;
    return l1_ptr(front_page_addr(b, itile), b.cfg.page_size, call);
}

// ---------------------------------------------------------------------------
// The compute engine: DST, formats, inits

struct Engine {
    float dst[16][kTileElems];
    bool dst_int[16] = {};  // the tile holds integers (a UInt8 unpack, typecast_tile to UInt8 / Int8)
    enum State { Released, Acquired, Committed, Waited } state = Released;
    int half = 0;
    bool started = false;
    int unpack_a = -1, unpack_b = -1, pack = -1;  // configured data formats
    bool int8_math = false;                       // the math engine's INT8 mode (ALU_ACC_CTRL_INT8_math_enabled)
    bool srca_unsigned = false;                   // srcA integers are unsigned (ALU_FORMAT_SPEC_REG0_SrcAUnsigned)
    std::string math_init;                        // the FPU / unpack op the last init configured
    std::string sfpu_init;                        // the SFPU op the last *_init configured
    bool reduce_active = false;
};
// The engine of the compute kernel running (the host's outside one).
inline Engine host_eng;
inline Engine* cur_eng = &host_eng;
inline Engine& eng() { return *cur_eng; }

inline const char* state_name(Engine::State s) {
    switch (s) {
        case Engine::Released: return "released";
        case Engine::Acquired: return "acquired";
        case Engine::Committed: return "committed";
        default: return "waited";
    }
}

// dst_any is DST tile i of the acquired half, whatever it holds.
inline float* dst_any(uint32_t i, const char* call) {
    if (eng().state != Engine::Acquired)
        fail("%s writes DST while it is %s: math runs between tile_regs_acquire and tile_regs_commit", call, state_name(eng().state));
    if (i >= tctx().core->cfg.dst_tiles_per_acquire)
        fail("%s uses DST tile %u, but an acquire holds %u tiles", call, i, tctx().core->cfg.dst_tiles_per_acquire);
    return eng().dst[eng().half * 8 + i];
}
// dst_tile is DST tile i for an op on floats.
inline float* dst_tile(uint32_t i, const char* call) {
    float* d = dst_any(i, call);
    if (eng().dst_int[eng().half * 8 + i])
        fail("%s reads DST tile %u, which holds integers (a UInt8 tile or a typecast_tile result): convert it with "
             "typecast_tile<UInt8 or Int8, Float32> first",
             call, i);
    return d;
}
// dst_out is DST tile i, which op call overwrites with floats or integers.
inline float* dst_out(uint32_t i, const char* call, bool is_int) {
    float* d = dst_any(i, call);
    eng().dst_int[eng().half * 8 + i] = is_int;
    return d;
}

inline void need_started(const char* call) {
    if (!eng().started) fail("%s before compute_kernel_hw_startup", call);
}
inline void need_math(const char* call, const std::string& init) {
    need_started(call);
    if (eng().math_init != init)
        fail("%s needs its init (%s) since the last other init (the unpacker and FPU are configured for '%s')", call,
             init.c_str(), eng().math_init.empty() ? "nothing" : eng().math_init.c_str());
}
inline void need_sfpu(const char* call, const char* init) {
    need_started(call);
    if (eng().sfpu_init != init)
        fail("%s without %s() since the last SFPU init (the SFPU is configured for '%s')", call, init,
             eng().sfpu_init.empty() ? "nothing" : eng().sfpu_init.c_str());
}
inline void set_math(const std::string& init) {
    if (eng().reduce_active) fail("%s while a reduce is configured: call reduce_uninit first", init.c_str());
    eng().math_init = init;
}
inline void need_format(int configured, uint32_t cb, DataFormat f, const char* call, const char* unit) {
    if (configured != int(f))
        fail("%s: c_%u holds %s tiles but %s is configured for %s (reconfig_data_format missing)", call, cb, format_name(f), unit,
             configured < 0 ? "nothing" : format_name(DataFormat(configured)));
}

inline DataFormat cb_format(uint32_t id, const char* call) {
    return cb_of(id, call).cfg.format;
}

// The math engine's INT8 mode must match the tiles an op unpacks.
inline bool int_format(DataFormat f) { return f == DataFormat::UInt8 || f == DataFormat::Int8; }
inline void need_int8_mode(bool want, uint32_t cb, DataFormat f, const char* call) {
    if (eng().int8_math != want)
        fail("%s: c_%u holds %s tiles, but the math engine's INT8 mode is %s (reconfigure with to_from_int8 = true, "
             "reconfig_data_format_srca<true>, when switching between integer and float tiles)",
             call, cb, format_name(f), eng().int8_math ? "on" : "off");
}

// An operand read through srcA/srcB: 19 bits of a Float32 tile.
inline void load_src(uint32_t cb, uint32_t itile, const char* call, float* out, bool tf32) {
    DataFormat f;
    const uint8_t* p = read_tile(cb, itile, call, &f);
    if (int_format(f))
        fail("%s: c_%u holds %s tiles; the emulated FPU, unary_bcast and reduce take float tiles (copy_tile an integer "
             "tile and typecast_tile it in DST)",
             call, cb, format_name(f));
    need_int8_mode(false, cb, f, call);
    unpack_tile(p, f, out);
    if (tf32 && f == DataFormat::Float32)
        for (int i = 0; i < kTileElems; i++) out[i] = to_tf32(out[i]);
}

}  // namespace ttemu

// ---------------------------------------------------------------------------
// The compute kernel API (api/compute/*.h)

inline void compute_kernel_hw_startup(uint32_t icb0, uint32_t icb1, uint32_t ocb) {
    using namespace ttemu;
    eng().unpack_a = int(cb_format(icb0, "compute_kernel_hw_startup"));
    eng().unpack_b = int(cb_format(icb1, "compute_kernel_hw_startup"));
    eng().pack = int(cb_format(ocb, "compute_kernel_hw_startup"));
    // the hardware configuration sets the INT8 mode and srcA's signedness
    // from srcA's format
    eng().int8_math = int_format(DataFormat(eng().unpack_a));
    eng().srca_unsigned = DataFormat(eng().unpack_a) == DataFormat::UInt8;
    eng().started = true;
}
inline void compute_kernel_hw_startup(uint32_t icb0, uint32_t ocb) { compute_kernel_hw_startup(icb0, icb0, ocb); }

namespace ttemu {
// reconfig_int8 is what to_from_int8 = true adds to a reconfiguration of
// srcA: the INT8 mode and srcA's signedness follow the new format.
inline void reconfig_int8(const char* call) {
    if (!tctx().core->cfg.fp32_dest_acc_en)
        fail("%s with to_from_int8 = true needs fp32_dest_acc_en (Dest in 32-bit mode)", call);
    eng().int8_math = int_format(DataFormat(eng().unpack_a));
    eng().srca_unsigned = DataFormat(eng().unpack_a) == DataFormat::UInt8;
}
}  // namespace ttemu

template <bool to_from_int8 = false>
inline void reconfig_data_format(uint32_t srca, uint32_t srcb) {
    ttemu::eng().unpack_a = int(ttemu::cb_format(srca, "reconfig_data_format"));
    ttemu::eng().unpack_b = int(ttemu::cb_format(srcb, "reconfig_data_format"));
    if (to_from_int8) ttemu::reconfig_int8("reconfig_data_format");
}
template <bool to_from_int8 = false>
inline void reconfig_data_format_srca(uint32_t srca) {
    ttemu::eng().unpack_a = int(ttemu::cb_format(srca, "reconfig_data_format_srca"));
    if (to_from_int8) ttemu::reconfig_int8("reconfig_data_format_srca");
}
template <bool to_from_int8 = false>
inline void reconfig_data_format_srcb(uint32_t srcb) { ttemu::eng().unpack_b = int(ttemu::cb_format(srcb, "reconfig_data_format_srcb")); }
inline void pack_reconfig_data_format(uint32_t ocb) { ttemu::eng().pack = int(ttemu::cb_format(ocb, "pack_reconfig_data_format")); }

inline void tile_regs_acquire() {
    using namespace ttemu;
    need_started("tile_regs_acquire");
    if (eng().state != Engine::Released) fail("tile_regs_acquire while DST is %s (missing tile_regs_release)", state_name(eng().state));
    eng().state = Engine::Acquired;
    // the packer clears what it has packed, so an acquired half starts at zero
    std::memset(eng().dst[eng().half * 8], 0, sizeof(float) * 8 * kTileElems);
    for (int i = 0; i < 8; i++) eng().dst_int[eng().half * 8 + i] = false;
}
inline void tile_regs_commit() {
    using namespace ttemu;
    if (eng().state != Engine::Acquired) fail("tile_regs_commit while DST is %s", state_name(eng().state));
    eng().state = Engine::Committed;
}
inline void tile_regs_wait() {
    using namespace ttemu;
    if (eng().state != Engine::Committed) fail("tile_regs_wait while DST is %s (missing tile_regs_commit)", state_name(eng().state));
    eng().state = Engine::Waited;
}
inline void tile_regs_release() {
    using namespace ttemu;
    if (eng().state != Engine::Waited) fail("tile_regs_release while DST is %s", state_name(eng().state));
    eng().state = Engine::Released;
    eng().half ^= 1;
}

inline void cb_wait_front(uint32_t cb, uint32_t n) { ttemu::cb_wait_front(cb, n); }
inline void cb_pop_front(uint32_t cb, uint32_t n) { ttemu::cb_pop_front(cb, n); }
inline void cb_reserve_back(uint32_t cb, uint32_t n) {
    ttemu::cb_reserve_back(cb, n);
}
inline void cb_push_back(uint32_t cb, uint32_t n) { ttemu::cb_push_back(cb, n); }

template <bool out_of_order_output = false>
inline void pack_tile(uint32_t idst, uint32_t ocb, uint32_t output_tile_index = 0) {
    using namespace ttemu;
    need_started("pack_tile");
    if (eng().state != Engine::Waited)
        fail("pack_tile(%u, c_%u) while DST is %s: pack after tile_regs_commit and tile_regs_wait", idst, ocb, state_name(eng().state));
    if (idst >= tctx().core->cfg.dst_tiles_per_acquire)
        fail("pack_tile uses DST tile %u, but an acquire holds %u tiles", idst, tctx().core->cfg.dst_tiles_per_acquire);
    CB& b = cb_of(ocb, "pack_tile");
    need_format(eng().pack, ocb, b.cfg.format, "pack_tile", "the packer");
    uint32_t page = out_of_order_output ? output_tile_index : b.packed;
    if (page >= b.reserved)
        fail("pack_tile(%u, c_%u) writes page %u of the reservation, but cb_reserve_back reserved %u", idst, ocb, page, b.reserved);
    bool is_int = eng().dst_int[eng().half * 8 + idst];
    uint8_t* dst = l1_ptr(back_page_addr(b, page), b.cfg.page_size, "pack_tile");
    if (int_format(b.cfg.format)) {
        if (!is_int)
            fail("pack_tile(%u, c_%u): DST tile %u holds floats, but c_%u is a UInt8 buffer: convert them with "
                 "typecast_tile<Float32, UInt8 or Int8> first",
                 idst, ocb, idst, ocb);
        pack_int_tile(eng().dst[eng().half * 8 + idst], dst);
    } else {
        if (is_int)
            fail("pack_tile(%u, c_%u): DST tile %u holds integers, but c_%u holds %s tiles: convert them with "
                 "typecast_tile<UInt8 or Int8, Float32> first",
                 idst, ocb, idst, ocb, format_name(b.cfg.format));
        pack_tile_bytes(eng().dst[eng().half * 8 + idst], b.cfg.format, dst);
    }
    if (!out_of_order_output || page + 1 > b.packed) b.packed = page + 1;
}

// tile_move_copy.h
inline void copy_tile_to_dst_init_short(uint32_t cb, uint32_t transpose = 0) {
    ttemu::need_started("copy_tile_to_dst_init_short");
    if (transpose) ttemu::fail("copy_tile_to_dst_init_short with transpose is not emulated");
    ttemu::set_math("copy");
}
inline void copy_tile_init(uint32_t cb) { copy_tile_to_dst_init_short(cb); }
inline void copy_tile(uint32_t cb, uint32_t itile, uint32_t idst) {
    using namespace ttemu;
    need_math("copy_tile", "copy");
    DataFormat f = cb_format(cb, "copy_tile");
    need_format(eng().unpack_a, cb, f, "copy_tile", "srcA");
    if (int_format(f)) {
        // integers reach DST with the INT8 mode on and srcA unsigned: the
        // byte zero-extended (an i8 tile is declared UInt8)
        need_int8_mode(true, cb, f, "copy_tile");
        if (!eng().srca_unsigned)
            fail("copy_tile: c_%u holds UInt8 tiles, but srcA is configured as signed (reconfig_data_format_srca<true>)", cb);
        DataFormat rf;
        const uint8_t* p = read_tile(cb, itile, "copy_tile", &rf);
        unpack_int_tile(p, dst_out(idst, "copy_tile", true));
        return;
    }
    float* d = dst_out(idst, "copy_tile", false);
    load_src(cb, itile, "copy_tile", d, false);  // copies unpack to DST in full precision
}

// eltwise_binary.h and bcast.h: the FPU
namespace ttemu {
inline const char* bcast_name(BroadcastType b) {
    switch (b) {
        case BroadcastType::COL: return "COL";
        case BroadcastType::ROW: return "ROW";
        case BroadcastType::SCALAR: return "SCALAR";
        default: return "NONE";
    }
}
inline std::string binary_init_name(char op, BroadcastType b) { return std::string("binary ") + op + " " + bcast_name(b); }

inline void fpu_binary(char op, BroadcastType bc, uint32_t icb0, uint32_t icb1, uint32_t itile0, uint32_t itile1, uint32_t idst,
                       const char* call) {
    need_math(call, binary_init_name(op, bc));
    need_format(eng().unpack_a, icb0, cb_format(icb0, call), call, "srcA");
    need_format(eng().unpack_b, icb1, cb_format(icb1, call), call, "srcB");
    static float a[kTileElems], b[kTileElems];
    load_src(icb0, itile0, call, a, true);
    load_src(icb1, itile1, call, b, true);
    float* d = dst_out(idst, call, false);
    for (int r = 0; r < kTileRows; r++)
        for (int c = 0; c < kTileCols; c++) {
            float y;
            switch (bc) {
                case BroadcastType::COL: y = b[r * kTileCols]; break;
                case BroadcastType::ROW: y = b[c]; break;
                case BroadcastType::SCALAR: y = b[0]; break;
                default: y = b[r * kTileCols + c];
            }
            float x = a[r * kTileCols + c];
            d[r * kTileCols + c] = op == '+' ? x + y : op == '-' ? x - y : x * y;
        }
}
inline void binary_configure(uint32_t icb0, uint32_t icb1, uint32_t ocb, const char* call) {
    need_started(call);
    eng().unpack_a = int(cb_format(icb0, call));
    eng().unpack_b = int(cb_format(icb1, call));
    eng().pack = int(cb_format(ocb, call));
}
}  // namespace ttemu

inline void binary_op_init_common(uint32_t icb0, uint32_t icb1, uint32_t ocb) { ttemu::binary_configure(icb0, icb1, ocb, "binary_op_init_common"); }
inline void add_tiles_init(uint32_t, uint32_t, bool = false) { ttemu::need_started("add_tiles_init"); ttemu::set_math(ttemu::binary_init_name('+', BroadcastType::NONE)); }
inline void sub_tiles_init(uint32_t, uint32_t, bool = false) { ttemu::need_started("sub_tiles_init"); ttemu::set_math(ttemu::binary_init_name('-', BroadcastType::NONE)); }
inline void mul_tiles_init(uint32_t, uint32_t) { ttemu::need_started("mul_tiles_init"); ttemu::set_math(ttemu::binary_init_name('*', BroadcastType::NONE)); }
inline void add_tiles(uint32_t a, uint32_t b, uint32_t ia, uint32_t ib, uint32_t d) { ttemu::fpu_binary('+', BroadcastType::NONE, a, b, ia, ib, d, "add_tiles"); }
inline void sub_tiles(uint32_t a, uint32_t b, uint32_t ia, uint32_t ib, uint32_t d) { ttemu::fpu_binary('-', BroadcastType::NONE, a, b, ia, ib, d, "sub_tiles"); }
inline void mul_tiles(uint32_t a, uint32_t b, uint32_t ia, uint32_t ib, uint32_t d) { ttemu::fpu_binary('*', BroadcastType::NONE, a, b, ia, ib, d, "mul_tiles"); }

#define TTEMU_BCAST(op, sym, dim, DIM, initname)                                                                           \
    inline void initname(uint32_t, uint32_t) {                                                                              \
        ttemu::need_started(#initname);                                                                                     \
        ttemu::set_math(ttemu::binary_init_name(sym, BroadcastType::DIM));                                                   \
    }                                                                                                                       \
    inline void op##_tiles_bcast_##dim(uint32_t a, uint32_t b, uint32_t ia, uint32_t ib, uint32_t d) {                      \
        ttemu::fpu_binary(sym, BroadcastType::DIM, a, b, ia, ib, d, #op "_tiles_bcast_" #dim);                              \
    }
TTEMU_BCAST(add, '+', cols, COL, add_bcast_cols_init_short)
TTEMU_BCAST(sub, '-', cols, COL, sub_bcast_cols_init_short)
TTEMU_BCAST(mul, '*', cols, COL, mul_bcast_cols_init_short)
TTEMU_BCAST(add, '+', rows, ROW, add_bcast_rows_init_short)
TTEMU_BCAST(sub, '-', rows, ROW, sub_bcast_rows_init_short)
TTEMU_BCAST(mul, '*', rows, ROW, mul_bcast_rows_init_short)
TTEMU_BCAST(add, '+', scalar, SCALAR, add_bcast_scalar_init_short)
TTEMU_BCAST(sub, '-', scalar, SCALAR, sub_tiles_bcast_scalar_init_short)
TTEMU_BCAST(mul, '*', scalar, SCALAR, mul_tiles_bcast_scalar_init_short)
#undef TTEMU_BCAST

// unary_bcast: a broadcast operand unpacked into DST (32-bit formats go
// straight to DST, so they keep full precision).
template <BroadcastType B>
inline void unary_bcast_init(uint32_t icb, uint32_t ocb) {
    using namespace ttemu;
    need_started("unary_bcast_init");
    set_math(std::string("unary_bcast ") + bcast_name(B));
    // the unpacker is configured for icb on both sources, as on the device
    eng().unpack_a = int(cb_format(icb, "unary_bcast_init"));
    eng().unpack_b = eng().unpack_a;
    eng().pack = int(cb_format(ocb, "unary_bcast_init"));
}
template <BroadcastType B>
inline void unary_bcast(uint32_t icb, uint32_t itile, uint32_t idst) {
    using namespace ttemu;
    need_math("unary_bcast", std::string("unary_bcast ") + bcast_name(B));
    need_format(eng().unpack_a, icb, cb_format(icb, "unary_bcast"), "unary_bcast", "the unpacker");
    static float a[kTileElems];
    load_src(icb, itile, "unary_bcast", a, false);
    float* d = dst_out(idst, "unary_bcast", false);
    for (int r = 0; r < kTileRows; r++)
        for (int c = 0; c < kTileCols; c++)
            d[r * kTileCols + c] = B == BroadcastType::COL ? a[r * kTileCols] : B == BroadcastType::ROW ? a[c]
                                   : B == BroadcastType::SCALAR                  ? a[0]
                                                                                : a[r * kTileCols + c];
}

// reduce.h
template <PoolType P, ReduceDim D, bool enforce_fp32_accumulation = false>
inline void reduce_init(uint32_t icb, uint32_t icb_scaler, uint32_t ocb) {
    using namespace ttemu;
    need_started("reduce_init");
    if (D != ReduceDim::REDUCE_ROW) fail("reduce_init: only REDUCE_ROW is emulated");
    set_math(std::string("reduce ") + (P == PoolType::MAX ? "MAX" : P == PoolType::SUM ? "SUM" : "AVG"));
    eng().reduce_active = true;
}
template <bool enforce_fp32_accumulation = false>
inline void reduce_uninit(uint32_t icb = 0) {
    ttemu::eng().reduce_active = false;
}
template <PoolType P, ReduceDim D, bool enforce_fp32_accumulation = false>
inline void reduce_tile(uint32_t icb, uint32_t icb_scaler, uint32_t itile, uint32_t itile_scaler, uint32_t idst) {
    using namespace ttemu;
    const char* call = "reduce_tile";
    need_math(call, std::string("reduce ") + (P == PoolType::MAX ? "MAX" : P == PoolType::SUM ? "SUM" : "AVG"));
    if (!eng().reduce_active) fail("reduce_tile after reduce_uninit");
    need_format(eng().unpack_a, icb, cb_format(icb, call), call, "srcA");
    need_format(eng().unpack_b, icb_scaler, cb_format(icb_scaler, call), call, "srcB");
    if (enforce_fp32_accumulation && !tctx().core->cfg.fp32_dest_acc_en)
        fail("reduce_tile with enforce_fp32_accumulation needs fp32_dest_acc_en");
    static float a[kTileElems], s[kTileElems];
    load_src(icb, itile, call, a, !enforce_fp32_accumulation);
    load_src(icb_scaler, itile_scaler, call, s, true);
    // the scaler is the first row of every face
    float scaler = s[0];
    for (int f = 0; f < 4; f++)
        for (int c = 0; c < 16; c++) {
            float v = s[(f / 2) * 16 * kTileCols + (f % 2) * 16 + c];
            if (!(v == scaler || (std::isnan(v) && std::isnan(scaler))))
                fail("reduce_tile: the scaler tile c_%u must hold one value in the first row of every face", icb_scaler);
        }
    float* d = dst_tile(idst, call);
    for (int r = 0; r < kTileRows; r++) {
        float acc = P == PoolType::MAX ? -INFINITY : 0.0f;
        for (int c = 0; c < kTileCols; c++) {
            float x = a[r * kTileCols + c];
            if (P == PoolType::MAX) {
                float y = x * scaler;
                acc = (std::isnan(acc) || std::isnan(y)) ? NAN : (y > acc ? y : acc);
            } else {
                acc += x;
            }
        }
        if (P != PoolType::MAX) acc *= scaler;
        float& o = d[r * kTileCols];
        if (P == PoolType::MAX) o = (std::isnan(o) || std::isnan(acc)) ? NAN : (acc > o ? acc : o);
        else o += acc;
    }
}

// SFPU ops: f32 in DST; unary functions evaluated in double and rounded once.
namespace ttemu {
template <class F>
inline void sfpu_unary(uint32_t idst, const char* call, const char* init, F f) {
    need_sfpu(call, init);
    float* d = dst_tile(idst, call);
    for (int i = 0; i < kTileElems; i++) d[i] = float(f(double(d[i])));
}
template <class F>
inline void sfpu_binary(uint32_t a, uint32_t b, uint32_t o, const char* call, const char* init, F f) {
    need_sfpu(call, init);
    float* x = dst_tile(a, call);
    float* y = dst_tile(b, call);
    float* z = dst_out(o, call, false);
    for (int i = 0; i < kTileElems; i++) z[i] = float(f(double(x[i]), double(y[i])));
}
inline void sfpu_init(const char* name) {
    need_started(name);
    eng().sfpu_init = name;
}
inline double sigmoid(double x) {
    if (x >= 0) return 1 / (1 + std::exp(-x));
    double e = std::exp(x);
    return e / (1 + e);
}
inline double maximum(double a, double b) {
    if (std::isnan(a) || std::isnan(b)) return NAN;
    if (a == b) return std::signbit(a) ? b : a;
    return a > b ? a : b;
}
inline double minimum(double a, double b) {
    if (std::isnan(a) || std::isnan(b)) return NAN;
    if (a == b) return std::signbit(a) ? a : b;
    return a < b ? a : b;
}
// f32 arithmetic: the double result of +,-,*,/ of two floats rounds to the
// f32 result exactly.
inline float f32op(char op, float a, float b) {
    switch (op) {
        case '+': return a + b;
        case '-': return a - b;
        case '*': return a * b;
        default: return a / b;
    }
}
}  // namespace ttemu

#define TTEMU_UNARY(name, init, expr)                                                                               \
    template <bool approx = false>                                                                                  \
    inline void init() { ttemu::sfpu_init(#init); }                                                                 \
    inline void name(uint32_t idst) { ttemu::sfpu_unary(idst, #name, #init, [](double x) { return (expr); }); }
TTEMU_UNARY(exp_tile, exp_tile_init, std::exp(x))
TTEMU_UNARY(exp2_tile, exp2_tile_init, std::exp2(x))
TTEMU_UNARY(expm1_tile, expm1_tile_init, std::expm1(x))
TTEMU_UNARY(log_tile, log_tile_init, std::log(x))
TTEMU_UNARY(log1p_tile, log1p_tile_init, std::log1p(x))
TTEMU_UNARY(sqrt_tile, sqrt_tile_init, std::sqrt(x))
TTEMU_UNARY(rsqrt_tile, rsqrt_tile_init, 1.0 / std::sqrt(x))
TTEMU_UNARY(recip_tile, recip_tile_init, 1.0 / x)
TTEMU_UNARY(tanh_tile, tanh_tile_init, std::tanh(x))
TTEMU_UNARY(sigmoid_tile, sigmoid_tile_init, ttemu::sigmoid(x))
TTEMU_UNARY(silu_tile, silu_tile_init, std::isinf(x) && x < 0 ? -0.0 : x * ttemu::sigmoid(x))
TTEMU_UNARY(abs_tile, abs_tile_init, std::fabs(x))
TTEMU_UNARY(negative_tile, negative_tile_init, -x)
TTEMU_UNARY(relu_tile, relu_tile_init, std::isnan(x) ? x : (x > 0 ? x : 0.0))
TTEMU_UNARY(sin_tile, sin_tile_init, std::sin(x))
TTEMU_UNARY(cos_tile, cos_tile_init, std::cos(x))
TTEMU_UNARY(isnan_tile, isnan_tile_init, std::isnan(x) ? 1.0 : 0.0)
#undef TTEMU_UNARY

// rounding.h: floor, ceil and round share one init
inline void rounding_op_tile_init() { ttemu::sfpu_init("rounding_op_tile_init"); }
inline void floor_tile(uint32_t idst) { ttemu::sfpu_unary(idst, "floor_tile", "rounding_op_tile_init", [](double x) { return std::floor(x); }); }
inline void ceil_tile(uint32_t idst) { ttemu::sfpu_unary(idst, "ceil_tile", "rounding_op_tile_init", [](double x) { return std::ceil(x); }); }
inline void round_tile(uint32_t idst, int32_t decimals) {
    if (decimals != 0) ttemu::fail("round_tile with %d decimals is not emulated", decimals);
    ttemu::sfpu_unary(idst, "round_tile", "rounding_op_tile_init", [](double x) { return std::nearbyint(x); });
}

// gelu.h: the exact (erf) form, or the tanh approximation
template <bool fast_and_approx = false>
inline void gelu_tile_init() { ttemu::sfpu_init(fast_and_approx ? "gelu_tile_init<true>" : "gelu_tile_init<false>"); }
template <bool fast_and_approx = false>
inline void gelu_tile(uint32_t idst) {
    ttemu::sfpu_unary(idst, "gelu_tile", fast_and_approx ? "gelu_tile_init<true>" : "gelu_tile_init<false>", [](double x) {
        if (std::isinf(x) && x < 0) return -0.0;
        if (fast_and_approx) {
            double u = std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x);
            return x * ttemu::sigmoid(2 * u);
        }
        return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
    });
}

// log_with_base_tile: log(x) times the bits of 1/ln(base)
template <bool fast_and_approx = false>
inline void log_with_base_tile_init() { ttemu::sfpu_init("log_with_base_tile_init"); }
template <bool fast_and_approx = false>
inline void log_with_base_tile(uint32_t idst, uint32_t base_scale) {
    double s = ttemu::bits_to_f32(base_scale);
    // 1/ln(2) as the base scale is log2, which the reference computes exactly
    if (base_scale == 0x3fb8aa3bu)
        ttemu::sfpu_unary(idst, "log_with_base_tile", "log_with_base_tile_init", [](double x) { return std::log2(x); });
    else
        ttemu::sfpu_unary(idst, "log_with_base_tile", "log_with_base_tile_init", [s](double x) { return std::log(x) * s; });
}

// power_tile: x raised to a constant (the exponent's float bits)
inline void power_tile_init() { ttemu::sfpu_init("power_tile_init"); }
inline void power_tile(uint32_t idst, uint32_t param0) {
    double p = ttemu::bits_to_f32(param0);
    ttemu::sfpu_unary(idst, "power_tile", "power_tile_init", [p](double x) { return std::pow(x, p); });
}

// binop_with_scalar.h: one init for the five ops with a float constant
inline void binop_with_scalar_tile_init() { ttemu::sfpu_init("binop_with_scalar_tile_init"); }
#define TTEMU_SCALAR(name, expr)                                                                                              \
    inline void name(uint32_t idst, uint32_t param1) {                                                                        \
        float c = ttemu::bits_to_f32(param1);                                                                                 \
        ttemu::need_sfpu(#name, "binop_with_scalar_tile_init");                                                              \
        float* d = ttemu::dst_tile(idst, #name);                                                                              \
        for (int i = 0; i < ttemu::kTileElems; i++) {                                                                         \
            float x = d[i];                                                                                                   \
            d[i] = (expr);                                                                                                    \
        }                                                                                                                     \
    }
TTEMU_SCALAR(add_unary_tile, ttemu::f32op('+', x, c))
TTEMU_SCALAR(sub_unary_tile, ttemu::f32op('-', x, c))
TTEMU_SCALAR(mul_unary_tile, ttemu::f32op('*', x, c))
// the host passes div_unary_tile the divisor's reciprocal (tt-metal's
// "inversion is carried out on host side"): it multiplies
TTEMU_SCALAR(div_unary_tile, ttemu::f32op('*', x, c))
TTEMU_SCALAR(rsub_unary_tile, ttemu::f32op('-', c, x))
#undef TTEMU_SCALAR

// fill.h
inline void fill_tile_init() { ttemu::sfpu_init("fill_tile_init"); }
inline void fill_tile(uint32_t idst, float v) {
    ttemu::need_sfpu("fill_tile", "fill_tile_init");
    float* d = ttemu::dst_out(idst, "fill_tile", false);
    for (int i = 0; i < ttemu::kTileElems; i++) d[i] = v;
}
inline void fill_tile_bitcast(uint32_t idst, uint32_t bits) {
    ttemu::need_sfpu("fill_tile_bitcast", "fill_tile_init");
    float* d = ttemu::dst_out(idst, "fill_tile_bitcast", false);
    for (int i = 0; i < ttemu::kTileElems; i++) d[i] = ttemu::bits_to_f32(bits);
}

// eltwise_binary_sfpu.h and binary_max_min.h: two DST tiles in, one out
#define TTEMU_BINARY(name, init, expr)                                                                     \
    inline void init() { ttemu::sfpu_init(#init); }                                                        \
    template <class... T>                                                                                  \
    inline void name(uint32_t a, uint32_t b, uint32_t o, T...) {                                           \
        ttemu::sfpu_binary(a, b, o, #name, #init, [](double x, double y) { return (expr); });              \
    }
TTEMU_BINARY(add_binary_tile, add_binary_tile_init, double(ttemu::f32op('+', float(x), float(y))))
TTEMU_BINARY(sub_binary_tile, sub_binary_tile_init, double(ttemu::f32op('-', float(x), float(y))))
TTEMU_BINARY(mul_binary_tile, mul_binary_tile_init, double(ttemu::f32op('*', float(x), float(y))))
TTEMU_BINARY(div_binary_tile, div_binary_tile_init, double(ttemu::f32op('/', float(x), float(y))))
TTEMU_BINARY(rsub_binary_tile, rsub_binary_tile_init, double(ttemu::f32op('-', float(y), float(x))))
TTEMU_BINARY(power_binary_tile, power_binary_tile_init, std::pow(x, y))
TTEMU_BINARY(binary_max_tile, binary_max_tile_init, ttemu::maximum(x, y))
TTEMU_BINARY(binary_min_tile, binary_min_tile_init, ttemu::minimum(x, y))
TTEMU_BINARY(eq_binary_tile, eq_binary_tile_init, x == y ? 1.0 : 0.0)
TTEMU_BINARY(ne_binary_tile, ne_binary_tile_init, x != y ? 1.0 : 0.0)
TTEMU_BINARY(lt_binary_tile, lt_binary_tile_init, x < y ? 1.0 : 0.0)
TTEMU_BINARY(le_binary_tile, le_binary_tile_init, x <= y ? 1.0 : 0.0)
TTEMU_BINARY(gt_binary_tile, gt_binary_tile_init, x > y ? 1.0 : 0.0)
TTEMU_BINARY(ge_binary_tile, ge_binary_tile_init, x >= y ? 1.0 : 0.0)
#undef TTEMU_BINARY

// where.h: out = cond != 0 ? t : f
inline void where_tile_init() { ttemu::sfpu_init("where_tile_init"); }
template <DataFormat F>
inline void where_tile(uint32_t c, uint32_t t, uint32_t f, uint32_t o) {
    using namespace ttemu;
    need_sfpu("where_tile", "where_tile_init");
    float* pc = dst_tile(c, "where_tile");
    float* pt = dst_tile(t, "where_tile");
    float* pf = dst_tile(f, "where_tile");
    float* po = dst_out(o, "where_tile", false);
    for (int i = 0; i < kTileElems; i++) po[i] = pc[i] != 0.0f ? pt[i] : pf[i];
}

// typecast.h: conversions in DST between the f32 the SFPU computes on and the
// 8-bit integers of UInt8 tiles (tt-metal's typecast_tile<IN_DTYPE, OUT_DTYPE>).
namespace ttemu {
inline std::string typecast_name(const char* what, uint32_t in, uint32_t out) {
    return std::string(what) + "<" + format_name(DataFormat(in)) + ", " + format_name(DataFormat(out)) + ">";
}
inline bool float_format(DataFormat f) { return f == DataFormat::Float32 || f == DataFormat::Float16_b; }
}  // namespace ttemu

template <uint32_t IN_DTYPE, uint32_t OUT_DTYPE>
inline void typecast_tile_init() {
    ttemu::sfpu_init(ttemu::typecast_name("typecast_tile_init", IN_DTYPE, OUT_DTYPE).c_str());
}
template <uint32_t IN_DTYPE, uint32_t OUT_DTYPE, bool is_fp32_dest_acc_en = true>
inline void typecast_tile(uint32_t idst) {
    using namespace ttemu;
    const DataFormat in = DataFormat(IN_DTYPE), out = DataFormat(OUT_DTYPE);
    std::string call = typecast_name("typecast_tile", IN_DTYPE, OUT_DTYPE);
    need_sfpu(call.c_str(), typecast_name("typecast_tile_init", IN_DTYPE, OUT_DTYPE).c_str());
    if ((in == DataFormat::Int8 || out == DataFormat::Int8) && !tctx().core->cfg.fp32_dest_acc_en)
        fail("%s: Int8 conversions need Dest in 32-bit mode (fp32_dest_acc_en)", call.c_str());
    if (float_format(in) && int_format(out)) {
        // the SFPU shifts the mantissa right by (23 - exponent), negates
        // negative values and keeps the low byte: truncation toward zero,
        // modulo 256; NaN and |x| >= 2^31 give architecture-specific bytes
        float* d = dst_tile(idst, call.c_str());
        for (int i = 0; i < kTileElems; i++) {
            float x = d[i];
            if (std::isnan(x) || std::fabs(x) >= 2147483648.0f)
                fail("%s: DST tile %u holds %g at (%d, %d), where the SFPU conversion is not defined (NaN or |x| >= 2^31): "
                     "saturate first",
                     call.c_str(), idst, double(x), i / kTileCols, i % kTileCols);
            int64_t t = int64_t(std::trunc(double(x)));
            set_word(d, i, uint32_t(t) & 0xffu);
        }
        eng().dst_int[eng().half * 8 + idst] = true;
        return;
    }
    if (int_format(in) && float_format(out)) {
        float* d = dst_any(idst, call.c_str());
        if (!eng().dst_int[eng().half * 8 + idst])
            fail("%s: DST tile %u holds floats, not the integers of a UInt8 tile", call.c_str(), idst);
        for (int i = 0; i < kTileElems; i++) {
            uint32_t byte = word_of(d, i) & 0xffu;
            d[i] = in == DataFormat::Int8 ? float(int8_t(uint8_t(byte))) : float(byte);
        }
        eng().dst_int[eng().half * 8 + idst] = false;
        return;
    }
    fail("%s is not emulated (only Float32 <-> UInt8 and Int8)", call.c_str());
}

// transpose.h: a tile transposed (element (r, c) to (c, r)) on its way to
// DST. A 32-bit tile must be unpacked straight to DST for that (its
// circular buffer's unpack_to_dest_mode UnpackToDestFp32); through srcA it
// would keep 19 bits.
inline void transpose_init(uint32_t icb) {
    ttemu::need_started("transpose_init");
    ttemu::set_math("transpose");
}
inline void transpose_tile(uint32_t icb, uint32_t itile, uint32_t idst) {
    using namespace ttemu;
    need_math("transpose_tile", "transpose");
    DataFormat f = cb_format(icb, "transpose_tile");
    need_format(eng().unpack_a, icb, f, "transpose_tile", "srcA");
    bool u2d;
    {
        u2d = cb_of(icb, "transpose_tile").cfg.unpack_to_dest;
    }
    if (f == DataFormat::Float32 && !u2d)
        fail("transpose_tile: c_%u holds Float32 tiles, but its unpack_to_dest_mode is Default: through srcA the transpose "
             "keeps 19 bits (set UnpackToDestMode::UnpackToDestFp32 for it)",
             icb);
    static float a[kTileElems];
    bool is_int = int_format(f);
    if (is_int) {
        need_int8_mode(true, icb, f, "transpose_tile");
        DataFormat rf;
        unpack_int_tile(read_tile(icb, itile, "transpose_tile", &rf), a);
    } else {
        load_src(icb, itile, "transpose_tile", a, false);
    }
    float* d = dst_out(idst, "transpose_tile", is_int);
    for (int r = 0; r < kTileRows; r++)
        for (int c = 0; c < kTileCols; c++) d[c * kTileCols + r] = a[r * kTileCols + c];
}

// matmul.h: C(dst) += A(in0 tile) * B(in1 tile), 32x32x32, B transposed
// first when transpose is 1 (A @ B^T from tiles of B stored [N, K]). The
// unpacker reads A and B through srcB / srcA: 19 bits (TF32) of a Float32
// tile, bf16 and f16 exactly. Products of those (11-bit significands)
// are exact in f32; DST accumulates them one k at a time, k = 0..31, each
// sum rounded to f32 (fp32_dest_acc_en). mm_init configures the unpacker
// and packer for the three buffers and the FPU for matmul; mm_init_short
// only the FPU and the unpacker's mode (after another op's init), so the
// data formats must already match (reconfig_data_format).
namespace ttemu {
inline std::string mm_init_name(uint32_t transpose) { return transpose ? "matmul (transpose = 1)" : "matmul (transpose = 0)"; }
}  // namespace ttemu
inline void mm_init(uint32_t in0_cb_id = 0, uint32_t in1_cb_id = 1, uint32_t out_cb_id = 16, const uint32_t transpose = 0) {
    using namespace ttemu;
    need_started("mm_init");
    set_math(mm_init_name(transpose));
    eng().unpack_a = int(cb_format(in0_cb_id, "mm_init"));
    eng().unpack_b = int(cb_format(in1_cb_id, "mm_init"));
    eng().pack = int(cb_format(out_cb_id, "mm_init"));
}
inline void mm_init_short(uint32_t in0_cb_id = 0, uint32_t in1_cb_id = 1, const uint32_t transpose = 0) {
    using namespace ttemu;
    need_started("mm_init_short");
    set_math(mm_init_name(transpose));
}
inline void mm_init_short_with_dt(uint32_t in0_cb_id, uint32_t in1_cb_id, uint32_t c_in_old_srca, const uint32_t transpose = 0) {
    using namespace ttemu;
    need_started("mm_init_short_with_dt");
    eng().unpack_a = int(cb_format(in0_cb_id, "mm_init_short_with_dt"));
    eng().unpack_b = int(cb_format(in1_cb_id, "mm_init_short_with_dt"));
    set_math(mm_init_name(transpose));
}
inline void matmul_tiles(uint32_t in0_cb_id, uint32_t in1_cb_id, uint32_t in0_tile_index, uint32_t in1_tile_index, uint32_t idst,
                         const uint32_t transpose) {
    using namespace ttemu;
    const char* call = "matmul_tiles";
    need_math(call, mm_init_name(transpose));
    need_format(eng().unpack_a, in0_cb_id, cb_format(in0_cb_id, call), call, "the unpacker's A operand");
    need_format(eng().unpack_b, in1_cb_id, cb_format(in1_cb_id, call), call, "the unpacker's B operand");
    static float a[kTileElems], b[kTileElems];
    load_src(in0_cb_id, in0_tile_index, call, a, true);
    load_src(in1_cb_id, in1_tile_index, call, b, true);
    float* d = dst_tile(idst, call);
    for (int r = 0; r < kTileRows; r++)
        for (int c = 0; c < kTileCols; c++) {
            float acc = d[r * kTileCols + c];
            for (int k = 0; k < kTileCols; k++) {
                float y = transpose ? b[c * kTileCols + k] : b[k * kTileCols + c];
                float p = a[r * kTileCols + k] * y;  // exact: 11-bit significands
                acc = acc + p;
            }
            d[r * kTileCols + c] = acc;
        }
}

// ---------------------------------------------------------------------------
// The dataflow API (api/dataflow/dataflow_api.h)

template <typename T>
inline T get_arg_val(int i) {
    using namespace ttemu;
    if (i < 0 || size_t(i) >= tctx().args.size()) fail("get_arg_val(%d): the host set %zu runtime args", i, tctx().args.size());
    return T(tctx().args[size_t(i)]);
}

// get_compile_time_arg_val reads the kernel's own array (the harness
// defines kernel_compile_time_args in the namespace of each kernel).
#define get_compile_time_arg_val(i) (kernel_compile_time_args[i])

inline uint32_t get_write_ptr(uint32_t cb) {
    using namespace ttemu;
    CB& b = cb_of(cb, "get_write_ptr");
    if (b.reserved == 0) fail("get_write_ptr(c_%u) without cb_reserve_back", cb);
    return back_page_addr(b, 0);
}
inline uint32_t get_read_ptr(uint32_t cb) {
    using namespace ttemu;
    CB& b = cb_of(cb, "get_read_ptr");
    if (b.waited == 0) fail("get_read_ptr(c_%u) without cb_wait_front", cb);
    return front_page_addr(b, 0);
}
inline uint32_t get_tile_size(uint32_t cb) {
    using namespace ttemu;
    return cb_of(cb, "get_tile_size").cfg.page_size;
}

// TensorAccessorArgs<offset>: interleaved DRAM buffers take one compile-time
// argument each in the emulation; the offsets chain as on the device.
template <uint32_t CTA_OFFSET>
struct TensorAccessorArgs {
    constexpr uint32_t next_compile_time_args_offset() const { return CTA_OFFSET + 1; }
};

template <typename Args>
struct TensorAccessor {
    uint32_t addr, page_size;
    TensorAccessor(const Args&, uint32_t address, uint32_t page) : addr(address), page_size(page) {}
};

namespace ttemu {
// The L1 range [addr, addr+len) must lie in pages a kernel may touch: the
// reservation of a producer, or the waited-for front of a consumer.
inline void check_l1_range(uint32_t addr, uint32_t len, bool reserved, const char* call) {
    Core* c = tctx().core;
    for (auto& b : c->cbs) {
        if (!b.configured) continue;
        uint32_t lo = b.cfg.l1_addr, hi = lo + b.cfg.page_size * b.cfg.num_pages;
        if (addr < lo || addr >= hi) continue;
        if (addr + len > hi) fail("%s: L1 range 0x%x+%u crosses the end of c_%u", call, addr, len, b.cfg.index);
        uint32_t page = (addr - lo) / b.cfg.page_size;
        uint32_t first = reserved ? b.wr : b.rd, n = reserved ? b.reserved : b.waited;
        uint32_t k = (page + b.cfg.num_pages - first) % b.cfg.num_pages;
        if (k >= n)
            fail("%s: L1 page %u of c_%u is not %s", call, page, b.cfg.index,
                 reserved ? "reserved (cb_reserve_back)" : "waited for (cb_wait_front)");
        return;
    }
    fail("%s: L1 address 0x%x is in no circular buffer", call, addr);
}
inline DramBuffer* dram_page(uint32_t base, uint32_t id, uint32_t page_size, const char* call, uint8_t** p) {
    DramBuffer* d = dram_find(base);
    if (!d || d->base != base) fail("%s: 0x%x is not the address of a DRAM buffer", call, base);
    if (page_size != d->page_size) fail("%s: page size %u, but buffer %s has pages of %u bytes", call, page_size, d->name.c_str(), d->page_size);
    if (uint64_t(id + 1) * page_size > d->bytes.size())
        fail("%s: page %u is past the end of buffer %s (%zu pages)", call, id, d->name.c_str(), d->bytes.size() / page_size);
    *p = d->bytes.data() + size_t(id) * page_size;
    return d;
}
}  // namespace ttemu

template <typename A>
inline void noc_async_read_tile(uint32_t id, const TensorAccessor<A>& s, uint32_t l1_addr) {
    using namespace ttemu;
    uint8_t* src;
    dram_page(s.addr, id, s.page_size, "noc_async_read_tile", &src);
    {
        check_l1_range(l1_addr, s.page_size, true, "noc_async_read_tile");
    }
    std::memcpy(l1_ptr(l1_addr, s.page_size, "noc_async_read_tile"), src, s.page_size);
    tctx().outstanding_reads++;
}
inline void noc_async_read_barrier() { ttemu::tctx().outstanding_reads = 0; }

// get_noc_addr(addr) is the NoC address of this core's own L1 at addr (a
// local read); only noc_async_read takes it here, so it carries a tag.
inline uint64_t get_noc_addr(uint32_t l1_addr) { return (uint64_t(1) << 63) | l1_addr; }

// noc_async_read copies size bytes from this core's L1 (a get_noc_addr of
// a page the kernel has reserved) into a page it has reserved.
inline void noc_async_read(uint64_t src_noc_addr, uint32_t dst_l1_addr, uint32_t size) {
    using namespace ttemu;
    if ((src_noc_addr >> 63) != 1)
        fail("noc_async_read: 0x%llx is not a NoC address of this core's L1 (get_noc_addr)", (unsigned long long)src_noc_addr);
    uint32_t src = uint32_t(src_noc_addr);
    check_l1_range(src, size, true, "noc_async_read (source)");
    check_l1_range(dst_l1_addr, size, true, "noc_async_read");
    std::memmove(l1_ptr(dst_l1_addr, size, "noc_async_read"), l1_ptr(src, size, "noc_async_read (source)"), size);
    tctx().outstanding_reads++;
}

template <typename A>
inline void noc_async_write_tile(uint32_t id, const TensorAccessor<A>& s, uint32_t l1_addr) {
    using namespace ttemu;
    uint8_t* dst;
    dram_page(s.addr, id, s.page_size, "noc_async_write_tile", &dst);
    {
        check_l1_range(l1_addr, s.page_size, false, "noc_async_write_tile");
    }
    std::memcpy(dst, l1_ptr(l1_addr, s.page_size, "noc_async_write_tile"), s.page_size);
    tctx().outstanding_writes++;
}
inline void noc_async_write_barrier() { ttemu::tctx().outstanding_writes = 0; }

// ---------------------------------------------------------------------------
// Kernels as fibers
//
// The reader, compute and writer kernels of every core are fibers of one
// system thread, each with its own stack, context (tctx) and engine
// (eng): a kernel runs until it blocks on a circular buffer, then the next
// one runs, round robin over every kernel of every core. Three system
// threads per core (360 on a Blackhole grid) spent most of their time in
// the kernel's scheduler. The stacks and the switch are emit/fiber's
// (fiber.h, shared with the Metal emulation).

namespace ttemu {

class fibers {
public:
    // add makes a fiber that runs body with context ctx.
    void add(const ThreadCtx& ctx, std::function<void()> body) {
        auto f = std::make_unique<fiber>();
        f->ctx = ctx;
        f->body = std::move(body);
        f->stack = static_cast<char*>(emu_fiber_stack(stack_bytes));
        if (f->stack == nullptr) fail("cannot map a kernel's stack");
        all_.push_back(std::move(f));
    }

    // run runs every fiber to its end.
    void run() {
        for (auto& f : all_) start(*f);
        running_ = this;
        for (size_t left = all_.size(); left > 0;) {
            for (auto& f : all_) {
                if (f->done) continue;
                cur_ = f.get();
                cur_ctx = &f->ctx;
                cur_eng = &f->eng;
                enter(*f);
                if (f->done) --left;
            }
        }
        cur_ctx = &host_ctx;
        cur_eng = &host_eng;
        running_ = nullptr;
    }

    ~fibers() {
        for (auto& f : all_) emu_fiber_unmap(f->stack, stack_bytes);
    }

    // yield goes back to run's loop from the kernel running.
    static void yield() {
        fibers* fs = running_;
        if (!fs) fail("a kernel blocked outside a program's run");
        fs->leave();
    }

private:
    static constexpr size_t stack_bytes = 1 << 18;

    struct fiber {
        ThreadCtx ctx;
        Engine eng;
        std::function<void()> body;
        char* stack = nullptr;
        bool done = false;
#if EMU_FIBER_FAST_SWITCH
        void* sp = nullptr;
#else
        ucontext_t uc;
#endif
    };

    void start(fiber& f) {
#if EMU_FIBER_FAST_SWITCH
        f.sp = emu_fiber_start(f.stack, stack_bytes, trampoline);
#else
        if (getcontext(&f.uc) != 0) fail("getcontext failed");
        f.uc.uc_stack.ss_sp = f.stack;
        f.uc.uc_stack.ss_size = stack_bytes;
        f.uc.uc_link = nullptr;
        makecontext(&f.uc, trampoline, 0);
#endif
    }

    static void trampoline() {
        fibers* fs = running_;
        fs->cur_->body();
        fs->cur_->done = true;
        fs->leave();
        fail("a finished kernel was resumed");
    }

    void enter(fiber& f) {
#if EMU_FIBER_FAST_SWITCH
        emu_fiber_switch(&main_sp_, f.sp);
#else
        if (swapcontext(&main_uc_, &f.uc) != 0) fail("swapcontext failed");
#endif
    }

    void leave() {
        fiber& f = *cur_;
#if EMU_FIBER_FAST_SWITCH
        emu_fiber_switch(&f.sp, main_sp_);
#else
        if (swapcontext(&f.uc, &main_uc_) != 0) fail("swapcontext failed");
#endif
    }

    std::vector<std::unique_ptr<fiber>> all_;
    fiber* cur_ = nullptr;
#if EMU_FIBER_FAST_SWITCH
    void* main_sp_ = nullptr;
#else
    ucontext_t main_uc_;
#endif
    static inline fibers* running_ = nullptr;
};

inline void yield() { fibers::yield(); }

}  // namespace ttemu

// ---------------------------------------------------------------------------
// The host side: a program on a set of cores

namespace ttemu {

struct KernelRun {
    const char* file = "";
    void (*entry)() = nullptr;
    std::vector<uint32_t> args;
};

struct CoreRun {
    int x = 0, y = 0;
    KernelRun reader, compute, writer;
};

struct Program {
    std::string name;
    Config cfg;
    std::vector<CBConfig> cbs;
    std::vector<CoreRun> cores;

    void add_cb(uint32_t index, DataFormat f, uint32_t page_size, uint32_t num_pages) {
        CBConfig c;
        c.index = index;
        c.format = f;
        c.page_size = page_size;
        c.num_pages = num_pages;
        cbs.push_back(c);
    }
    // set_unpack_to_dest is ComputeConfig's unpack_to_dest_mode[index] =
    // UnpackToDestMode::UnpackToDestFp32.
    void set_unpack_to_dest(uint32_t index) {
        for (auto& c : cbs)
            if (c.index == index) {
                c.unpack_to_dest = true;
                return;
            }
        fail("program %s: unpack_to_dest_mode for c_%u, which is not configured", name.c_str(), index);
    }

    // run places the circular buffers in each core's L1 and runs the three
    // kernels of every core, as fibers, to their ends.
    void run() {
        uint32_t addr = 0;
        for (auto& c : cbs) {
            if (c.index >= kNumCBs) fail("program %s: circular buffer index %u out of range", name.c_str(), c.index);
            if (c.format == DataFormat::Int8)
                fail("program %s: c_%u is declared Int8, which the unpacker and packer read as sign-magnitude: declare i8 "
                     "tiles UInt8 and convert them with typecast_tile<Int8, ...>",
                     name.c_str(), c.index);
            if (c.page_size != format_bytes(c.format))
                fail("program %s: c_%u has pages of %u bytes, but a %s tile is %u", name.c_str(), c.index, c.page_size,
                     format_name(c.format), format_bytes(c.format));
            c.l1_addr = addr;
            addr += c.page_size * c.num_pages;
        }
        if (addr > cfg.l1_bytes)
            fail("program %s: its circular buffers take %u bytes of L1, more than the %u of a core", name.c_str(), addr,
                 cfg.l1_bytes);
        std::vector<Core*> cs;
        fibers fs;
        for (auto& cr : cores) {
            Core* core = new Core;
            core->x = cr.x;
            core->y = cr.y;
            core->cfg = cfg;
            void* mem = mmap(nullptr, cfg.l1_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
            if (mem == MAP_FAILED) fail("cannot map %u bytes of L1 below 4 GiB (the emulation needs Linux x86-64)", cfg.l1_bytes);
            core->l1 = static_cast<uint8_t*>(mem);
            core->l1_base = uint32_t(uintptr_t(mem));
            std::memset(core->l1, 0xa5, cfg.l1_bytes);  // L1 is not zeroed on the device either
            for (auto& c : cbs) {
                if (core->cbs[c.index].configured) fail("program %s: c_%u configured twice", name.c_str(), c.index);
                core->cbs[c.index].cfg = c;
                core->cbs[c.index].cfg.l1_addr = core->l1_base + c.l1_addr;
                core->cbs[c.index].configured = true;
            }
            core->live = 3;
            cs.push_back(core);
            KernelRun* ks[3] = {&cr.reader, &cr.compute, &cr.writer};
            const char* riscs[3] = {"reader", "compute", "writer"};
            for (int k = 0; k < 3; k++) {
                KernelRun kr = *ks[k];
                const char* risc = riscs[k];
                ThreadCtx ctx;
                ctx.core = core;
                ctx.risc = risc;
                ctx.kernel = kr.file;
                ctx.args = kr.args;
                fs.add(ctx, [core, kr, risc] {
                    kr.entry();
                    if (tctx().outstanding_reads || tctx().outstanding_writes)
                        fail("the kernel returned with NoC transfers in flight (missing barrier)");
                    if (std::strcmp(risc, "compute") == 0 && eng().state != Engine::Released)
                        fail("the kernel returned with DST %s", state_name(eng().state));
                    core->live--;
                    if (core->live > 0 && stuck(core))
                        fail("deadlock: the %s kernel returned and the others are blocked:%s", risc, waits_of(core).c_str());
                });
            }
        }
        fs.run();
        for (auto* c : cs) {
            munmap(c->l1, c->cfg.l1_bytes);
            delete c;
        }
    }
};

// Host I/O of whole DRAM buffers.
inline void read_file_into(DramBuffer* b, const char* path) {
    FILE* f = std::fopen(path, "rb");
    if (!f) fail("cannot open %s", path);
    size_t n = std::fread(b->bytes.data(), 1, b->bytes.size(), f);
    std::fclose(f);
    if (n != b->bytes.size()) fail("%s holds %zu bytes, buffer %s needs %zu", path, n, b->name.c_str(), b->bytes.size());
}
inline void write_file_from(DramBuffer* b, const char* path) {
    FILE* f = std::fopen(path, "wb");
    if (!f) fail("cannot create %s", path);
    std::fwrite(b->bytes.data(), 1, b->bytes.size(), f);
    std::fclose(f);
}

}  // namespace ttemu
