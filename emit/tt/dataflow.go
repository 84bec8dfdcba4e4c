package tt

import (
	"fmt"
	"strings"
)

// This file writes the two dataflow kernels. The reader walks the same
// units, loops and statements as the compute kernel and reads each tile
// it will need, in the order it needs them, into the circular buffer of
// that load:
//
//	cb_reserve_back(cb_x, 1);
//	noc_async_read_tile(rb * Ct + ct, x, get_write_ptr(cb_x));
//	noc_async_read_barrier();
//	cb_push_back(cb_x, 1);
//
// and the writer drains the tiles the compute kernel pushes for each
// store with cb_wait_front / noc_async_write_tile / cb_pop_front. Buffers
// are interleaved DRAM buffers of tiles addressed through TensorAccessor.

// dataflowGen writes the reader or the writer.
type dataflowGen struct {
	g      *kgen
	reader bool
	w      cppWriter
	params []*param // the buffers it reads or writes, in parameter order
	first  map[*param]*cbuf
}

func newDataflow(g *kgen, reader bool) *dataflowGen {
	d := &dataflowGen{g: g, reader: reader, first: map[*param]*cbuf{}}
	var visit func(ss []stmt)
	visit = func(ss []stmt) {
		for _, s := range ss {
			switch s := s.(type) {
			case *loopStmt:
				visit(s.body)
			case *readStmt:
				if reader && d.first[s.p] == nil {
					d.first[s.p] = s.cb
				}
			case *writeStmt:
				if !reader && d.first[s.p] == nil {
					d.first[s.p] = s.cb
				}
			}
		}
	}
	visit(g.body)
	for _, p := range g.params {
		if d.first[p] != nil {
			d.params = append(d.params, p)
		}
	}
	return d
}

// runtimeArgs are the names of the kernel's runtime arguments (see
// KernelFile).
func (d *dataflowGen) runtimeArgs() []string {
	var out []string
	for _, p := range d.params {
		out = append(out, "addr:"+p.name)
	}
	out = append(out, "unit_start", "unit_count", "Ct")
	args, _ := d.extentArgs()
	return append(out, args...)
}

// extentArgs are the reader's runtime arguments after Ct where its row
// maps gather rows over run-time extents, and the C++ variables they are
// read into: "R", the kernel's rows, where they are `?`, then each extent
// the maps read ("extent:<buffer>:<axis>").
func (d *dataflowGen) extentArgs() (args, vars []string) {
	if !d.reader || !d.gathers() {
		return nil, nil
	}
	if d.g.rows.Const == nil {
		args, vars = append(args, "R"), append(vars, "R")
	}
	for _, e := range d.g.readerExtents {
		args = append(args, fmt.Sprintf("extent:%s:%d", e.Buffer, e.Axis))
		vars = append(vars, extentVarName(e))
	}
	return args, vars
}

// gathers reports whether the reader gathers rows of some buffer.
func (d *dataflowGen) gathers() bool {
	for _, p := range d.params {
		if p.rowMap != "" {
			return true
		}
	}
	return false
}

// compileArgs are the names of its compile-time arguments.
func (d *dataflowGen) compileArgs() []string {
	var out []string
	for _, p := range d.params {
		out = append(out, "accessor:"+p.name)
	}
	return out
}

func (d *dataflowGen) write() string {
	g := d.g
	body := &dataflowGen{g: g, reader: d.reader, first: d.first}
	body.w.indent = 2
	body.stmts(g.body)
	text := body.w.String()

	w := &d.w
	what := "Writer kernel"
	if d.reader {
		what = "Reader kernel"
	}
	header(w, what, g.name, g)
	includes{"api/dataflow/dataflow_api.h": true}.write(w)
	w.line("")
	if d.reader && (g.scaler != nil || g.mask != nil) {
		d.tileHelpers()
	}
	if d.reader {
		d.gatherHelpers()
	}
	w.open("void kernel_main()")
	for i, p := range d.params {
		w.line("const uint32_t %s_addr = get_arg_val<uint32_t>(%d);", p.name, i)
	}
	n := len(d.params)
	w.line("const uint32_t unit_start = get_arg_val<uint32_t>(%d);  // the first work unit of this core", n)
	w.line("const uint32_t unit_count = get_arg_val<uint32_t>(%d);  // and how many", n+1)
	w.line("const uint32_t Ct = get_arg_val<uint32_t>(%d);          // column tiles per row", n+2)
	args, vars := d.extentArgs()
	for i, v := range vars {
		w.line("const uint32_t %s = get_arg_val<uint32_t>(%d);  // %s", v, n+3+i, args[i])
	}
	usesCt := strings.Contains(text, "Ct")
	if !usesCt && !g.perTile {
		w.line("(void)Ct;")
	}
	w.line("")
	var cbs []*cbuf
	for _, cb := range g.cbs {
		if d.uses(cb) {
			cbs = append(cbs, cb)
		}
	}
	for _, cb := range cbs {
		w.line("constexpr uint32_t %s = tt::CBIndex::c_%d;", cb.name, cb.index)
	}
	prev := ""
	for _, p := range d.params {
		off := "0"
		if prev != "" {
			off = prev + "_args.next_compile_time_args_offset()"
		}
		w.line("constexpr auto %s_args = TensorAccessorArgs<%s>();", p.name, off)
		prev = p.name
	}
	for _, p := range d.params {
		w.line("const auto %s = TensorAccessor(%s_args, %s_addr, get_tile_size(%s));", p.name, p.name, p.name, d.first[p].name)
	}
	if d.reader {
		for _, p := range d.params {
			if p.scratch == nil {
				continue
			}
			w.line("// the page the rows of %s are gathered from: reserved for the whole kernel, never pushed", p.name)
			w.line("cb_reserve_back(%s, 1);", p.scratch.name)
			w.line("const uint32_t %s_src = get_write_ptr(%s);", p.name, p.scratch.name)
		}
		for _, p := range d.params {
			if p.rowCache == nil {
				continue
			}
			w.line("// the row block of %s, read once per unit for its streams: reserved for the whole kernel, never pushed", p.name)
			w.line("cb_reserve_back(%s, %d);", p.rowCache.name, p.rowTiles())
			w.line("const uint32_t %s_row = get_write_ptr(%s);", p.name, p.rowCache.name)
			w.line("const uint32_t %s_tile = get_tile_size(%s);", p.name, p.rowCache.name)
		}
	}
	if d.reader {
		if g.scaler != nil {
			w.line("")
			w.line("// the reduce_tile scaler: 1.0 in the first row of every face")
			w.line("fill_scaler_tile(%s, 0x3f80);", g.scaler.name)
		}
		if g.mask != nil {
			w.line("// the mask of the last column tile: 1.0 in its first %d columns", g.rowLen%TileCols)
			w.line("fill_column_mask_tile(%s, %d);", g.mask.name, g.rowLen%TileCols)
		}
	}
	w.line("")
	w.open("for (uint32_t unit = 0; unit < unit_count; ++unit)")
	if g.perTile {
		w.line("const uint32_t t = unit_start + unit;")
		w.line("const uint32_t rb = t / Ct, ct = t %% Ct;")
		if !strings.Contains(text, "rb") {
			w.line("(void)rb;")
		}
		if !strings.Contains(text, "ct") {
			w.line("(void)ct;")
		}
	} else if strings.Contains(text, "rb") || d.cachesRows() {
		w.line("const uint32_t rb = unit_start + unit;  // the row block")
	}
	if d.reader {
		for _, p := range d.params {
			if p.rowCache == nil {
				continue
			}
			rt := p.rowTiles()
			w.line("// %s's row block, each tile read from DRAM once", p.name)
			w.open("for (uint32_t t = 0; t < %du; ++t)", rt)
			w.line("noc_async_read_tile(rb * %du + t, %s, %s_row + t * %s_tile);", rt, p.name, p.name, p.name)
			w.close()
			w.line("noc_async_read_barrier();")
		}
	}
	w.sb.WriteString(text)
	w.close()
	w.close()
	return w.String()
}

// cachesRows reports whether the reader keeps a row block of a buffer.
func (d *dataflowGen) cachesRows() bool {
	if !d.reader {
		return false
	}
	for _, p := range d.params {
		if p.rowCache != nil {
			return true
		}
	}
	return false
}

// uses reports whether the kernel touches cb.
func (d *dataflowGen) uses(cb *cbuf) bool {
	if d.reader && (cb == d.g.scaler || cb == d.g.mask) {
		return true
	}
	for _, p := range d.g.params {
		if d.reader && (cb == p.scratch || cb == p.rowCache) {
			return true
		}
	}
	found := false
	var visit func(ss []stmt)
	visit = func(ss []stmt) {
		for _, s := range ss {
			switch s := s.(type) {
			case *loopStmt:
				visit(s.body)
			case *readStmt:
				found = found || (d.reader && s.cb == cb)
			case *writeStmt:
				found = found || (!d.reader && s.cb == cb)
			}
		}
	}
	visit(d.g.body)
	return found
}

// has reports whether stmts (or their loops) hold a read (or a write).
func (d *dataflowGen) has(ss []stmt) bool {
	for _, s := range ss {
		switch s := s.(type) {
		case *loopStmt:
			if d.has(s.body) {
				return true
			}
		case *readStmt:
			if d.reader {
				return true
			}
		case *writeStmt:
			if !d.reader {
				return true
			}
		}
	}
	return false
}

// stmts writes the reads (or writes) of a statement list, one batch per
// run of consecutive ones: reserve (wait) all, transfer all, one barrier,
// push (pop) all.
func (d *dataflowGen) stmts(ss []stmt) {
	w := &d.w
	type xfer struct {
		p      *param
		cb     *cbuf
		off    int64
		rowMap string
		tile   string
	}
	var batch []xfer
	flush := func() {
		if len(batch) == 0 {
			return
		}
		if d.reader {
			var whole, gathered []xfer
			for _, x := range batch {
				if x.rowMap != "" {
					gathered = append(gathered, x)
				} else {
					whole = append(whole, x)
				}
			}
			for _, x := range whole {
				w.line("cb_reserve_back(%s, 1);", x.cb.name)
			}
			for _, x := range whole {
				if x.off != 0 {
					w.line("// %s read %d column tiles %s: the tile a graph.roll or a concat of slices puts here", x.p.name, max(x.off, -x.off), map[bool]string{true: "to the right", false: "to the left"}[x.off > 0])
				}
				if x.tile != "" {
					w.line("// %s read through a view that moves whole tiles: tile row map(rb * %d) / %d", x.p.name, TileRows, TileRows)
					w.line("noc_async_read_tile(%s, %s, get_write_ptr(%s));", x.tile, x.p.name, x.cb.name)
					continue
				}
				if x.p.rowCache != nil {
					// from the row block in L1, a local NoC read
					w.line("noc_async_read(get_noc_addr(%s_row + (%s) * %s_tile), get_write_ptr(%s), %s_tile);",
						x.p.name, colTileExpr(x.off), x.p.name, x.cb.name, x.p.name)
					continue
				}
				w.line("noc_async_read_tile(%s, %s, get_write_ptr(%s));", x.p.tileExprAt(x.off), x.p.name, x.cb.name)
			}
			if len(whole) > 0 {
				w.line("noc_async_read_barrier();")
			}
			for _, x := range whole {
				w.line("cb_push_back(%s, 1);", x.cb.name)
			}
			for _, x := range gathered {
				d.gather(x.p, x.rowMap, x.cb, x.off)
			}
		} else {
			for _, x := range batch {
				w.line("cb_wait_front(%s, 1);", x.cb.name)
			}
			for _, x := range batch {
				w.line("noc_async_write_tile(%s, %s, get_read_ptr(%s));", x.p.tileExpr(), x.p.name, x.cb.name)
			}
			w.line("noc_async_write_barrier();")
			for _, x := range batch {
				w.line("cb_pop_front(%s, 1);", x.cb.name)
			}
		}
		batch = nil
	}
	for _, s := range ss {
		switch s := s.(type) {
		case *loopStmt:
			flush()
			if d.has(s.body) && s.kt > 0 {
				w.open("for (uint32_t kt = 0; kt < %d; ++kt)", s.kt)
				d.stmts(s.body)
				w.close()
			} else if d.has(s.body) {
				w.open("%s", s.header())
				d.stmts(s.body)
				w.close()
			}
		case *readStmt:
			if d.reader {
				batch = append(batch, xfer{s.p, s.cb, s.off, s.rowMap, s.tile})
			}
		case *writeStmt:
			if !d.reader {
				batch = append(batch, xfer{s.p, s.cb, 0, "", ""})
			}
		case *sectionStmt:
			// the writer waits for what a section pushes: a write after
			// it cannot join a batch written before it
			if !d.reader {
				flush()
			}
		}
	}
	flush()
}

// tileHelpers writes the functions filling the scaler and mask tiles, in
// the device's tile layout (four 16x16 faces, each row-major, Float16_b).
func (d *dataflowGen) tileHelpers() {
	w := &d.w
	if d.g.scaler != nil {
		w.line("// fill_scaler_tile writes a Float16_b tile holding bits in the first row of")
		w.line("// every face and 0 elsewhere: the scaler reduce_tile multiplies by.")
		w.open("static void fill_scaler_tile(uint32_t cb, uint16_t bits)")
		w.line("cb_reserve_back(cb, 1);")
		w.line("volatile tt_l1_ptr uint16_t* p = reinterpret_cast<volatile tt_l1_ptr uint16_t*>(get_write_ptr(cb));")
		w.open("for (uint32_t i = 0; i < %d; ++i)", TileRows*TileCols)
		w.line("p[i] = 0;")
		w.close()
		w.open("for (uint32_t face = 0; face < 4; ++face)")
		w.open("for (uint32_t c = 0; c < 16; ++c)")
		w.line("p[face * 256 + c] = bits;")
		w.close()
		w.close()
		w.line("cb_push_back(cb, 1);")
		w.close()
		w.line("")
	}
	if d.g.mask != nil {
		w.line("// fill_column_mask_tile writes a Float16_b tile of 1.0 in columns below cols")
		w.line("// and 0 elsewhere: the valid columns of a row's last, partial tile.")
		w.open("static void fill_column_mask_tile(uint32_t cb, uint32_t cols)")
		w.line("cb_reserve_back(cb, 1);")
		w.line("volatile tt_l1_ptr uint16_t* p = reinterpret_cast<volatile tt_l1_ptr uint16_t*>(get_write_ptr(cb));")
		w.open("for (uint32_t r = 0; r < %d; ++r)", TileRows)
		w.open("for (uint32_t c = 0; c < %d; ++c)", TileCols)
		w.line("p[((r / 16) * 2 + c / 16) * 256 + (r %% 16) * 16 + c %% 16] = c < cols ? 0x3f80 : 0;")
		w.close()
		w.close()
		w.line("cb_push_back(cb, 1);")
		w.close()
		w.line("")
	}
}

// elemBytes is the size of one element of a tile of format f.
func elemBytes(f format) int64 { return f.tileBytes() / (TileRows * TileCols) }

// gather writes the reading of one tile of p whose rows come from other
// rows of the buffer (p.rowMap): row i of the tile is row rb*32 + i of the
// kernel, which reads row p.rowMap of p; the tile holding that row is
// read into p's scratch page when it is not there already, and the row
// (or, for one value per row, its value in column 0) copied across. Rows
// past the kernel's last are zero, as the padding of a buffer is.
func (d *dataflowGen) gather(p *param, rowMap string, cb *cbuf, off int64) {
	w := &d.w
	eb := elemBytes(p.fmt)
	w.line("// %s tile of %s gathered row by row: row r of the kernel reads row %s of %s", p.access, p.name, rowMap, p.name)
	if off != 0 {
		w.line("// at column tile %s", colTileExpr(off))
	}
	w.line("cb_reserve_back(%s, 1);", cb.name)
	w.line("{")
	w.indent++
	w.line("const uint32_t dst = get_write_ptr(%s);", cb.name)
	if p.access == clsCol {
		w.line("zero_tile(dst, %d);", eb)
	}
	w.line("uint32_t loaded = 0xffffffffu;  // the tile of %s in %s_src", p.name, p.name)
	w.open("for (uint32_t i = 0; i < %d; ++i)", TileRows)
	w.line("const uint32_t r = rb * %d + i;", TileRows)
	if d.g.rows.Const != nil {
		w.open("if (r >= %du)", *d.g.rows.Const)
	} else {
		w.open("if (r >= R)") // the kernel's rows, a runtime argument
	}
	if p.access == clsFull {
		w.line("zero_tile_row(dst, i, %d);", eb)
	}
	w.line("continue;")
	w.close()
	w.line("const uint32_t src = %s;", rowMap)
	if p.access == clsFull && off != 0 {
		// shifted by whole tiles: p's row is static (columnShift)
		w.line("const uint32_t tile = src / %d * %du + %s;", TileRows, p.rowTiles(), colTileExpr(off))
	} else if p.access == clsFull {
		w.line("const uint32_t tile = src / %d * Ct + ct;", TileRows)
	} else {
		w.line("const uint32_t tile = src / %d;", TileRows)
	}
	w.open("if (tile != loaded)")
	w.line("noc_async_read_tile(tile, %s, %s_src);", p.name, p.name)
	w.line("noc_async_read_barrier();")
	w.line("loaded = tile;")
	w.close()
	if p.access == clsFull {
		w.line("copy_tile_row(%s_src, src %% %d, dst, i, %d);", p.name, TileRows, eb)
	} else {
		w.line("copy_tile_value(%s_src, src %% %d, dst, i, %d);", p.name, TileRows, eb)
	}
	w.close()
	w.close()
	w.line("cb_push_back(%s, 1);", cb.name)
}

// gatherHelpers writes the functions gather calls: copies of a row, or of
// a value in column 0, between tiles in the device's layout (four 16x16
// faces, each row-major), and zeroing.
func (d *dataflowGen) gatherHelpers() {
	full, col := false, false
	for _, p := range d.params {
		if p.rowMap != "" {
			full = full || p.access == clsFull
			col = col || p.access == clsCol
		}
	}
	w := &d.w
	bytes := func(name string) {
		w.line("volatile tt_l1_ptr uint8_t* %s = reinterpret_cast<volatile tt_l1_ptr uint8_t*>(%s_addr);", name, name)
	}
	if full {
		w.line("// copy_tile_row copies row srow of the tile at s into row drow of the tile at d:")
		w.line("// the row's 16 elements in the left face and 16 in the right one.")
		w.open("static void copy_tile_row(uint32_t s_addr, uint32_t srow, uint32_t d_addr, uint32_t drow, uint32_t eb)")
		bytes("s")
		bytes("d")
		w.open("for (uint32_t half = 0; half < 2; ++half)")
		w.line("const uint32_t so = (((srow / 16) * 2 + half) * 256 + (srow %% 16) * 16) * eb;")
		w.line("const uint32_t dof = (((drow / 16) * 2 + half) * 256 + (drow %% 16) * 16) * eb;")
		w.open("for (uint32_t b = 0; b < 16 * eb; ++b)")
		w.line("d[dof + b] = s[so + b];")
		w.close()
		w.close()
		w.close()
		w.line("")
		w.line("// zero_tile_row zeroes row drow of the tile at d.")
		w.open("static void zero_tile_row(uint32_t d_addr, uint32_t drow, uint32_t eb)")
		bytes("d")
		w.open("for (uint32_t half = 0; half < 2; ++half)")
		w.line("const uint32_t dof = (((drow / 16) * 2 + half) * 256 + (drow %% 16) * 16) * eb;")
		w.open("for (uint32_t b = 0; b < 16 * eb; ++b)")
		w.line("d[dof + b] = 0;")
		w.close()
		w.close()
		w.close()
		w.line("")
	}
	if col {
		w.line("// copy_tile_value copies the value in column 0 of row srow of the tile at s")
		w.line("// into column 0 of row drow of the tile at d.")
		w.open("static void copy_tile_value(uint32_t s_addr, uint32_t srow, uint32_t d_addr, uint32_t drow, uint32_t eb)")
		bytes("s")
		bytes("d")
		w.line("const uint32_t so = ((srow / 16) * 2 * 256 + (srow %% 16) * 16) * eb;")
		w.line("const uint32_t dof = ((drow / 16) * 2 * 256 + (drow %% 16) * 16) * eb;")
		w.open("for (uint32_t b = 0; b < eb; ++b)")
		w.line("d[dof + b] = s[so + b];")
		w.close()
		w.close()
		w.line("")
		w.line("// zero_tile zeroes the tile at d.")
		w.open("static void zero_tile(uint32_t d_addr, uint32_t eb)")
		bytes("d")
		w.open("for (uint32_t b = 0; b < %d * eb; ++b)", TileRows*TileCols)
		w.line("d[b] = 0;")
		w.close()
		w.close()
		w.line("")
	}
}

// processor is where a kernel runs: the reader on RISCV_0 (NoC 0), the
// writer on RISCV_1 (NoC 1), the compute kernel on the three TRISCs.
func processor(kind string) string {
	return map[string]string{"reader": "RISCV_0", "writer": "RISCV_1", "compute": "TRISC"}[kind]
}
