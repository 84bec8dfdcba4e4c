package tt

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// The emulation must stop a program on each misuse the device would
// punish (with a hang, garbage or a crash), and let the correct use
// through. Each case is a small hand-written program of three kernels on
// one core.

// misuse is a program of one core: circular buffers c_0 (Float16_b, 2
// pages, reader to compute) and c_16 (Float16_b, 2 pages, compute to
// writer) plus extra, and the three kernel bodies.
type misuse struct {
	name    string
	reader  string
	compute string
	writer  string
	extra   string // more setup of Program p
	fp32    bool   // fp32_dest_acc_en: 4 DST tiles per acquire
	want    string // "" for a program that must run
}

// defaults: the reader pushes one tile, the compute kernel copies it to
// c_16, the writer pops it.
const (
	okReader = `cb_reserve_back(0, 1);
    noc_async_read_tile(0, s, get_write_ptr(0));
    noc_async_read_barrier();
    cb_push_back(0, 1);`
	okCompute = `compute_kernel_hw_startup(0, 0, 16);
    cb_wait_front(0, 1);
    tile_regs_acquire();
    copy_tile_to_dst_init_short(0);
    copy_tile(0, 0, 0);
    exp_tile_init();
    exp_tile(0);
    tile_regs_commit();
    cb_pop_front(0, 1);
    cb_reserve_back(16, 1);
    tile_regs_wait();
    pack_tile(0, 16);
    tile_regs_release();
    cb_push_back(16, 1);`
	okWriter = `cb_wait_front(16, 1);
    noc_async_write_tile(0, d, get_read_ptr(16));
    noc_async_write_barrier();
    cb_pop_front(16, 1);`
)

func (m misuse) cpp() string {
	or := func(s, def string) string {
		if s == "" {
			return def
		}
		return s
	}
	cfg := "p.cfg.dst_tiles_per_acquire = 8;"
	if m.fp32 {
		cfg = "p.cfg.dst_tiles_per_acquire = 4;\n    p.cfg.fp32_dest_acc_en = true;"
	}
	return fmt.Sprintf(`ttemu::DramBuffer* src;
ttemu::DramBuffer* dst;
struct NoArgs {};
void reader() {
    const auto s = TensorAccessor(NoArgs{}, src->base, 2048);
    %s
}
void compute() {
    %s
}
void writer() {
    const auto d = TensorAccessor(NoArgs{}, dst->base, 2048);
    %s
}
int run(const std::string&) {
    using namespace ttemu;
    src = dram_alloc("src", 2048, 4);
    dst = dram_alloc("dst", 2048, 4);
    Program p;
    p.name = %q;
    p.cfg.l1_bytes = 1536 * 1024;
    %s
    p.add_cb(0, DataFormat::Float16_b, 2048, 2);
    p.add_cb(16, DataFormat::Float16_b, 2048, 2);
    %s
    CoreRun cr;
    cr.reader = {"reader.cpp", &reader, {}};
    cr.compute = {"compute.cpp", &compute, {}};
    cr.writer = {"writer.cpp", &writer, {}};
    p.cores.push_back(cr);
    p.run();
    return 0;
}`, or(m.reader, okReader), or(m.compute, okCompute), or(m.writer, okWriter), m.name, cfg, m.extra)
}

var misuses = []misuse{
	{name: "correct use"},
	{name: "correct matmul", fp32: true, compute: `compute_kernel_hw_startup(0, 0, 16);
    mm_init(0, 0, 16, 0);
    cb_wait_front(0, 1);
    tile_regs_acquire();
    matmul_tiles(0, 0, 0, 0, 0, 0);
    tile_regs_commit();
    cb_pop_front(0, 1);
    cb_reserve_back(16, 1);
    tile_regs_wait();
    pack_tile(0, 16);
    tile_regs_release();
    cb_push_back(16, 1);`},
	{name: "matmul_tiles without mm_init", compute: `compute_kernel_hw_startup(0, 0, 16);
    cb_wait_front(0, 1);
    tile_regs_acquire();
    matmul_tiles(0, 0, 0, 0, 0, 0);`, want: "matmul_tiles needs its init (matmul (transpose = 0)) since the last other init (the unpacker and FPU are configured for 'nothing')"},
	{name: "matmul_tiles after copy_tile's init", compute: `compute_kernel_hw_startup(0, 0, 16);
    mm_init(0, 0, 16, 0);
    cb_wait_front(0, 1);
    tile_regs_acquire();
    copy_tile_to_dst_init_short(0);
    copy_tile(0, 0, 1);
    matmul_tiles(0, 0, 0, 0, 0, 0);`, want: "matmul_tiles needs its init (matmul (transpose = 0)) since the last other init (the unpacker and FPU are configured for 'copy')"},
	{name: "matmul_tiles with another transpose than mm_init's", compute: `compute_kernel_hw_startup(0, 0, 16);
    mm_init(0, 0, 16, 0);
    cb_wait_front(0, 1);
    tile_regs_acquire();
    matmul_tiles(0, 0, 0, 0, 0, 1);`, want: "matmul_tiles needs its init (matmul (transpose = 1))"},
	{name: "matmul_tiles outside an acquire", compute: `compute_kernel_hw_startup(0, 0, 16);
    mm_init(0, 0, 16, 0);
    cb_wait_front(0, 1);
    matmul_tiles(0, 0, 0, 0, 0, 0);`, want: "matmul_tiles writes DST while it is released"},
	{name: "matmul_tiles past the acquired half", fp32: true, compute: `compute_kernel_hw_startup(0, 0, 16);
    mm_init(0, 0, 16, 0);
    cb_wait_front(0, 1);
    tile_regs_acquire();
    matmul_tiles(0, 0, 0, 0, 4, 0);`, want: "matmul_tiles uses DST tile 4, but an acquire holds 4 tiles"},
	{name: "matmul_tiles of a buffer of another data format", compute: `compute_kernel_hw_startup(0, 0, 16);
    mm_init(0, 0, 16, 0);
    cb_wait_front(2, 1);
    tile_regs_acquire();
    matmul_tiles(0, 2, 0, 0, 0, 0);`, reader: `cb_reserve_back(2, 1);
    noc_async_read_tile(0, s, get_write_ptr(2));
    noc_async_read_barrier();
    cb_push_back(2, 1);`, writer: " ", extra: "p.add_cb(2, DataFormat::Float32, 4096, 2);",
		want: "matmul_tiles: c_2 holds Float32 tiles but the unpacker's B operand is configured for Float16_b"},
	{name: "pop without wait", compute: `compute_kernel_hw_startup(0, 0, 16);
    cb_pop_front(0, 1);`, writer: " ", want: "cb_pop_front(c_0, 1) without a matching cb_wait_front"},
	{name: "read a page not waited for", compute: `compute_kernel_hw_startup(0, 0, 16);
    cb_wait_front(0, 1);
    tile_regs_acquire();
    copy_tile_to_dst_init_short(0);
    copy_tile(0, 1, 0);`, want: "reads page 1 of c_0, but only 1 page(s) were waited for"},
	{name: "push beyond the reservation", reader: `cb_reserve_back(0, 1);
    cb_push_back(0, 2);`, want: "pushes more pages than cb_reserve_back reserved (1)"},
	{name: "push without reserve", reader: `cb_push_back(0, 1);`, want: "pushes more pages than cb_reserve_back reserved (0)"},
	{name: "DST index past the half of an acquire", compute: `compute_kernel_hw_startup(0, 0, 16);
    cb_wait_front(0, 1);
    tile_regs_acquire();
    copy_tile_to_dst_init_short(0);
    copy_tile(0, 0, 8);`, want: "uses DST tile 8, but an acquire holds 8 tiles"},
	{name: "DST index past 4 with fp32 DST", fp32: true, compute: `compute_kernel_hw_startup(0, 0, 16);
    cb_wait_front(0, 1);
    tile_regs_acquire();
    copy_tile_to_dst_init_short(0);
    copy_tile(0, 0, 4);`, want: "uses DST tile 4, but an acquire holds 4 tiles"},
	{name: "pack without commit and wait", compute: `compute_kernel_hw_startup(0, 0, 16);
    cb_wait_front(0, 1);
    tile_regs_acquire();
    copy_tile_to_dst_init_short(0);
    copy_tile(0, 0, 0);
    cb_reserve_back(16, 1);
    pack_tile(0, 16);`, want: "pack after tile_regs_commit and tile_regs_wait"},
	{name: "math after commit", compute: `compute_kernel_hw_startup(0, 0, 16);
    cb_wait_front(0, 1);
    tile_regs_acquire();
    tile_regs_commit();
    copy_tile_to_dst_init_short(0);
    copy_tile(0, 0, 0);`, want: "writes DST while it is committed"},
	{name: "L1 overflow", extra: `p.add_cb(24, DataFormat::Float32, 4096, 400);`, want: "more than the 1572864 of a core"},
	{name: "SFPU op without its init", compute: `compute_kernel_hw_startup(0, 0, 16);
    cb_wait_front(0, 1);
    tile_regs_acquire();
    copy_tile_to_dst_init_short(0);
    copy_tile(0, 0, 0);
    recip_tile_init();
    exp_tile(0);`, want: "exp_tile without exp_tile_init()"},
	{name: "FPU op after another op's init", compute: `compute_kernel_hw_startup(0, 0, 16);
    cb_wait_front(0, 1);
    tile_regs_acquire();
    mul_tiles_init(0, 0);
    add_tiles(0, 0, 0, 0, 0);`, want: "add_tiles needs its init (binary + NONE)"},
	{name: "data format not reconfigured", extra: `p.add_cb(24, DataFormat::Float32, 4096, 1);`, compute: `compute_kernel_hw_startup(0, 0, 16);
    cb_reserve_back(24, 1);
    tile_regs_acquire();
    fill_tile_init();
    fill_tile(0, 1.0f);
    tile_regs_commit();
    tile_regs_wait();
    pack_tile(0, 24);`, want: "c_24 holds Float32 tiles but the packer is configured for Float16_b"},
	{name: "push before the read barrier", reader: `cb_reserve_back(0, 1);
    noc_async_read_tile(0, s, get_write_ptr(0));
    cb_push_back(0, 1);`, want: "call noc_async_read_barrier first"},
	{name: "pop before the write barrier", writer: `cb_wait_front(16, 1);
    noc_async_write_tile(0, d, get_read_ptr(16));
    cb_pop_front(16, 1);`, want: "call noc_async_write_barrier first"},
	{name: "read into a page not reserved", reader: `noc_async_read_tile(0, s, get_write_ptr(0));`, want: "get_write_ptr(c_0) without cb_reserve_back"},
	{name: "wait for more pages than the buffer has", compute: `compute_kernel_hw_startup(0, 0, 16);
    cb_wait_front(0, 3);`, want: "cb_wait_front(c_0, 3): the buffer has 2 pages, so this never returns"},
	{name: "deadlock", compute: `compute_kernel_hw_startup(0, 0, 16);
    cb_wait_front(0, 2);`, want: "deadlock"},
	{name: "read past the end of a DRAM buffer", reader: `cb_reserve_back(0, 1);
    noc_async_read_tile(4, s, get_write_ptr(0));`, want: "page 4 is past the end of buffer src (4 pages)"},
	{name: "reduce scaler not in the first row of each face", extra: `p.add_cb(1, DataFormat::Float16_b, 2048, 1);`, reader: `cb_reserve_back(0, 1);
    noc_async_read_tile(0, s, get_write_ptr(0));
    noc_async_read_barrier();
    cb_push_back(0, 1);
    cb_reserve_back(1, 1);
    volatile tt_l1_ptr uint16_t* q = reinterpret_cast<volatile tt_l1_ptr uint16_t*>(get_write_ptr(1));
    for (int i = 0; i < 1024; i++) q[i] = 0;
    q[0] = 0x3f80;
    cb_push_back(1, 1);`, compute: `compute_kernel_hw_startup(0, 1, 16);
    cb_wait_front(0, 1);
    cb_wait_front(1, 1);
    tile_regs_acquire();
    reduce_init<PoolType::SUM, ReduceDim::REDUCE_ROW>(0, 1, 16);
    reduce_tile<PoolType::SUM, ReduceDim::REDUCE_ROW>(0, 1, 0, 0, 0);`, want: "must hold one value in the first row of every face"},
}

// Integer tiles: the reader fills c_1 (UInt8, declared by uint8CB) with
// the bytes 0, 1, 2, ... besides the tile of c_0.
const (
	uint8CB     = `p.add_cb(1, DataFormat::UInt8, 1024, 2);`
	uint8Reader = okReader + `
    cb_reserve_back(1, 1);
    volatile tt_l1_ptr uint8_t* q = reinterpret_cast<volatile tt_l1_ptr uint8_t*>(get_write_ptr(1));
    for (int i = 0; i < 1024; i++) q[i] = uint8_t(i);
    cb_push_back(1, 1);`
	// uint8Copy copies the UInt8 tile into DST tile 0 with the INT8 mode
	// on (the hardware startup configures srcA for c_1)
	uint8Copy = `compute_kernel_hw_startup(1, 1, 16);
    cb_wait_front(0, 1);
    cb_wait_front(1, 1);
    tile_regs_acquire();
    copy_tile_to_dst_init_short(1);
    copy_tile(1, 0, 0);`
	// packTo16 packs DST tile 0 into c_16 and lets the writer have it
	packTo16 = `
    tile_regs_commit();
    cb_pop_front(0, 1);
    cb_pop_front(1, 1);
    cb_reserve_back(16, 1);
    tile_regs_wait();
    pack_reconfig_data_format(16);
    pack_tile(0, 16);
    tile_regs_release();
    cb_push_back(16, 1);`
)

var intMisuses = []misuse{
	{name: "integer tiles through typecast_tile", extra: uint8CB, reader: uint8Reader, fp32: true,
		compute: uint8Copy + `
    typecast_tile_init<(uint32_t)DataFormat::Int8, (uint32_t)DataFormat::Float32>();
    typecast_tile<(uint32_t)DataFormat::Int8, (uint32_t)DataFormat::Float32>(0);
    typecast_tile_init<(uint32_t)DataFormat::Float32, (uint32_t)DataFormat::UInt8>();
    typecast_tile<(uint32_t)DataFormat::Float32, (uint32_t)DataFormat::UInt8>(0);
    typecast_tile_init<(uint32_t)DataFormat::UInt8, (uint32_t)DataFormat::Float32>();
    typecast_tile<(uint32_t)DataFormat::UInt8, (uint32_t)DataFormat::Float32>(0);` + packTo16},
	{name: "typecast_tile after the init of another pair", extra: uint8CB, reader: uint8Reader,
		compute: uint8Copy + `
    typecast_tile_init<(uint32_t)DataFormat::Float32, (uint32_t)DataFormat::UInt8>();
    typecast_tile<(uint32_t)DataFormat::UInt8, (uint32_t)DataFormat::Float32>(0);`,
		want: "typecast_tile<UInt8, Float32> without typecast_tile_init<UInt8, Float32>()"},
	{name: "a float op on integers", extra: uint8CB, reader: uint8Reader,
		compute: uint8Copy + `
    exp_tile_init();
    exp_tile(0);`, want: "exp_tile reads DST tile 0, which holds integers"},
	{name: "integers packed into a float buffer", extra: uint8CB, reader: uint8Reader, compute: uint8Copy + packTo16,
		want: "DST tile 0 holds integers, but c_16 holds Float16_b tiles"},
	{name: "floats packed into a UInt8 buffer", extra: uint8CB + `p.add_cb(17, DataFormat::UInt8, 1024, 1);`, reader: uint8Reader,
		compute: uint8Copy + `
    typecast_tile_init<(uint32_t)DataFormat::UInt8, (uint32_t)DataFormat::Float32>();
    typecast_tile<(uint32_t)DataFormat::UInt8, (uint32_t)DataFormat::Float32>(0);
    tile_regs_commit();
    cb_reserve_back(17, 1);
    tile_regs_wait();
    pack_reconfig_data_format(17);
    pack_tile(0, 17);`, want: "DST tile 0 holds floats, but c_17 is a UInt8 buffer"},
	{name: "a UInt8 tile without the INT8 mode", extra: uint8CB, reader: uint8Reader, compute: `compute_kernel_hw_startup(0, 0, 16);
    cb_wait_front(1, 1);
    tile_regs_acquire();
    reconfig_data_format_srca(1);
    copy_tile_to_dst_init_short(1);
    copy_tile(1, 0, 0);`, want: "c_1 holds UInt8 tiles, but the math engine's INT8 mode is off"},
	{name: "a float tile with the INT8 mode left on", extra: uint8CB, reader: uint8Reader, compute: `compute_kernel_hw_startup(1, 1, 16);
    cb_wait_front(0, 1);
    tile_regs_acquire();
    reconfig_data_format_srca(0);
    copy_tile_to_dst_init_short(0);
    copy_tile(0, 0, 0);`, want: "c_0 holds Float16_b tiles, but the math engine's INT8 mode is on"},
	{name: "switching with to_from_int8", extra: uint8CB, reader: uint8Reader, fp32: true, compute: `compute_kernel_hw_startup(1, 1, 16);
    cb_wait_front(0, 1);
    cb_wait_front(1, 1);
    tile_regs_acquire();
    reconfig_data_format_srca<true>(0);
    copy_tile_to_dst_init_short(0);
    copy_tile(0, 0, 0);` + packTo16},
	{name: "to_from_int8 without fp32 DST", extra: uint8CB, reader: uint8Reader, compute: `compute_kernel_hw_startup(1, 1, 16);
    reconfig_data_format_srca<true>(0);`, want: "to_from_int8 = true needs fp32_dest_acc_en"},
	{name: "typecast of a NaN", fp32: true, compute: `compute_kernel_hw_startup(0, 0, 16);
    tile_regs_acquire();
    fill_tile_init();
    fill_tile_bitcast(0, 0x7fc00000u);
    typecast_tile_init<(uint32_t)DataFormat::Float32, (uint32_t)DataFormat::Int8>();
    typecast_tile<(uint32_t)DataFormat::Float32, (uint32_t)DataFormat::Int8>(0);`, want: "where the SFPU conversion is not defined (NaN or |x| >= 2^31): saturate first"},
	{name: "a circular buffer declared Int8", extra: `p.add_cb(1, DataFormat::Int8, 1024, 2);`,
		want: "c_1 is declared Int8, which the unpacker and packer read as sign-magnitude"},
	{name: "FPU op on a UInt8 tile", extra: uint8CB, reader: uint8Reader, compute: `compute_kernel_hw_startup(1, 1, 16);
    cb_wait_front(1, 1);
    tile_regs_acquire();
    add_tiles_init(1, 1);
    add_tiles(1, 1, 0, 0, 0);`, want: "c_1 holds UInt8 tiles; the emulated FPU, unary_bcast and reduce take float tiles"},
}

func TestEmulationCatchesMisuse(t *testing.T) {
	t.Parallel()
	all := append(append([]misuse{}, misuses...), intMisuses...)
	cases := make([]*emuCase, len(all))
	for i, m := range all {
		cases[i] = &emuCase{name: m.name, cpp: m.cpp()}
	}
	results := runEmu(t, cases)
	for i, m := range all {
		r := results[i]
		if m.want == "" {
			require.Zero(t, r.code, "%s: %s", m.name, r.stderr)
			continue
		}
		require.Equal(t, 3, r.code, "%s must stop the program (stderr: %s)", m.name, r.stderr)
		require.Contains(t, r.stderr, m.want, m.name)
		require.Contains(t, r.stderr, "tt-emu: ", m.name)
	}
}
