package tt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/x448/float16"

	geval "github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/ir"
)

// The harness runs emitted programs on the emulation in emu/: it writes the
// kernels of several cases into one C++ file (each distinct kernel file
// once, inside a namespace of its own), compiles it once with g++ -O0
// -std=c++17 -pthread, and runs one process per case. -O0: the cases are
// small, and optimising the kernels and the host code of every core took
// four times as long as running every case unoptimised, and unoptimised
// code contracts no a*b+c into an FMA on any host. The host side a tt-metal host
// program would do (DRAM buffers, tile layout, circular buffers, the work
// split and the runtime arguments) is done here from program.json, so the
// description is tested along with the kernels.

const gxxHint = "the tt backend tests run the emitted kernels on a C++ emulation and need g++ with C++17 and pthreads: apt-get install g++"

// emuCase is one function of an emitted program run on inputs.
type emuCase struct {
	name string
	out  *Output
	fn   string
	in   []*geval.Tensor
	// outShapes are the shapes of the function's results (the reference's).
	outShapes [][]int64
	outElems  []ir.ElemKind
	// cpp, when set, replaces the generated host code of the case (the
	// misuse tests): main calls it with the case's data directory.
	cpp string
}

// emuResult is what a case gave: its results, or the failure.
type emuResult struct {
	outs   []*geval.Tensor
	stderr string
	code   int
}

// emuDir is the folder of the emulation headers.
func emuDir(t *testing.T) string {
	dir, err := filepath.Abs("emu")
	require.NoError(t, err)
	return dir
}

// runEmu builds the harness for the cases and runs each.
func runEmu(t *testing.T, cases []*emuCase) []emuResult {
	t.Helper()
	gxx, err := exec.LookPath("g++")
	require.NoError(t, err, gxxHint)
	dir := t.TempDir()
	if keep := os.Getenv("TT_EMU_KEEP"); keep != "" {
		// keep the harness and the kernels for a look
		dir = keep
		require.NoError(t, os.MkdirAll(dir, 0o755))
	}
	var src strings.Builder
	src.WriteString("#include \"tt_emu.h\"\n\n")
	// a kernel file is compiled once however many cases run it (the same
	// program on several input sets): one namespace per distinct text
	kernelNS := map[string]string{}
	kernel := func(cdir string, data map[string][]byte, f KernelFile) string {
		text := data[f.Path]
		key := fmt.Sprintf("%d\x00%s", len(f.CompileArgs), text)
		if ns, ok := kernelNS[key]; ok {
			return ns
		}
		ns := fmt.Sprintf("kernel%d", len(kernelNS))
		kernelNS[key] = ns
		args := "0"
		for range f.CompileArgs {
			args += ", 0"
		}
		fmt.Fprintf(&src, "namespace %s {\nconstexpr uint32_t kernel_compile_time_args[] = {%s};\n", ns, args)
		fmt.Fprintf(&src, "#include \"%s\"\n}  // namespace %s\n\n", filepath.Join(cdir, filepath.FromSlash(f.Path)), ns)
		return ns
	}
	plans := make([]*hostPlan, len(cases))
	for i, c := range cases {
		cdir := filepath.Join(dir, fmt.Sprintf("case%d", i))
		require.NoError(t, os.MkdirAll(cdir, 0o755))
		if c.cpp != "" {
			fmt.Fprintf(&src, "namespace case%d {\n%s\n}  // namespace case%d\n\n", i, c.cpp, i)
			continue
		}
		data := map[string][]byte{}
		for _, f := range c.out.Files {
			p := filepath.Join(cdir, filepath.FromSlash(f.Path))
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, f.Data, 0o644))
			data[f.Path] = f.Data
		}
		hp, err := planHost(c)
		require.NoError(t, err, c.name)
		plans[i] = hp
		require.NoError(t, hp.writeInputs(cdir, c.in), c.name)
		src.WriteString(hp.cpp(i, func(f KernelFile) string { return kernel(cdir, data, f) }))
	}
	src.WriteString("int main(int argc, char** argv) {\n")
	src.WriteString("    if (argc != 3) { std::fprintf(stderr, \"usage: harness CASE DIR\\n\"); return 2; }\n")
	src.WriteString("    int which = std::atoi(argv[1]);\n    std::string dir = argv[2];\n")
	for i := range cases {
		fmt.Fprintf(&src, "    if (which == %d) return case%d::run(dir);\n", i, i)
	}
	src.WriteString("    return 2;\n}\n")
	cpp := filepath.Join(dir, "harness.cpp")
	require.NoError(t, os.WriteFile(cpp, []byte(src.String()), 0o644))
	bin := filepath.Join(dir, "harness")
	cmd := exec.Command(gxx, "-O0", "-std=c++17", "-pthread", "-w", "-I", emuDir(t), cpp, "-o", bin)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "g++ failed (%s):\n%s", gxxHint, firstLines(string(out), 40))

	// two cases at a time: each runs three threads per core
	results := make([]emuResult, len(cases))
	errs := make([]error, len(cases))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i := range cases {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			cdir := filepath.Join(dir, fmt.Sprintf("case%d", i))
			var stderr bytes.Buffer
			run := exec.Command(bin, fmt.Sprint(i), cdir)
			run.Stderr = &stderr
			err := run.Run()
			results[i].stderr = stderr.String()
			if ee, ok := err.(*exec.ExitError); ok {
				results[i].code = ee.ExitCode()
				return
			}
			if err == nil && plans[i] != nil {
				results[i].outs, err = plans[i].readOutputs(cdir)
			}
			errs[i] = err
		}(i)
	}
	wg.Wait()
	for i, c := range cases {
		require.NoError(t, errs[i], c.name)
	}
	return results
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// hostPlan is the host side of one case: buffers and launches with every
// extent known.
type hostPlan struct {
	c        *emuCase
	prog     *Program
	fn       *Function
	shapes   map[string][]int64
	buffers  []Buffer
	launches []hostLaunch
}

type hostLaunch struct {
	k         *Kernel
	buffers   []string
	r, cols   int64
	ct, units int64
	cores     []hostCore
	// extent gives a runtime argument "extent:<buffer>:<axis>"
	extent func(buffer string, axis int) (int64, error)
}

type hostCore struct {
	x, y         int
	start, count int64
}

// planHost resolves a case's extents from its inputs and results, as a
// host program would.
func planHost(c *emuCase) (*hostPlan, error) {
	hp := &hostPlan{c: c, prog: c.out.Program, shapes: map[string][]int64{}}
	for i := range hp.prog.Functions {
		if hp.prog.Functions[i].Name == c.fn {
			hp.fn = &hp.prog.Functions[i]
		}
	}
	if hp.fn == nil {
		return nil, fmt.Errorf("no function %s in program.json", c.fn)
	}
	nin, nout := 0, 0
	for _, b := range hp.fn.Buffers {
		switch b.Role {
		case "input":
			if nin >= len(c.in) {
				return nil, fmt.Errorf("more inputs than given")
			}
			hp.shapes[b.Name] = c.in[nin].Shape
			nin++
		case "output":
			hp.shapes[b.Name] = c.outShapes[nout]
			nout++
		}
	}
	// the extents the kernels assume agree, as a host must check them
	for _, ck := range hp.fn.Checks {
		if err := ck.Check(hp.shapes); err != nil {
			return nil, err
		}
	}
	lookup := func(buffer string, axis int) (int64, error) {
		s, ok := hp.shapes[buffer]
		if !ok || axis >= len(s) {
			return 0, fmt.Errorf("no extent %s[%d]", buffer, axis)
		}
		return s[axis], nil
	}
	for _, b := range hp.fn.Buffers {
		if b.Role != "intermediate" {
			continue
		}
		var s []int64
		for _, e := range b.Shape {
			v, err := e.Eval(lookup)
			if err != nil {
				return nil, err
			}
			s = append(s, v)
		}
		hp.shapes[b.Name] = s
	}
	hp.buffers = hp.fn.Buffers
	for _, l := range hp.fn.Launches {
		var k *Kernel
		for i := range hp.prog.Kernels {
			if hp.prog.Kernels[i].Name == l.Kernel {
				k = &hp.prog.Kernels[i]
			}
		}
		if k == nil {
			return nil, fmt.Errorf("no kernel %s", l.Kernel)
		}
		params := map[string][]int64{}
		for i, p := range k.Params {
			params[p.Name] = hp.shapes[l.Buffers[i]]
		}
		plookup := func(buffer string, axis int) (int64, error) {
			s, ok := params[buffer]
			if !ok || axis >= len(s) {
				return 0, fmt.Errorf("no extent %s[%d]", buffer, axis)
			}
			return s[axis], nil
		}
		r, err := k.Rows.Eval(plookup)
		if err != nil {
			return nil, err
		}
		cols, err := k.Cols.Eval(plookup)
		if err != nil {
			return nil, err
		}
		hl := hostLaunch{k: k, buffers: l.Buffers, r: r, cols: cols, ct: ceilDiv(cols, TileCols), extent: plookup}
		hl.units = ceilDiv(r, TileRows)
		if k.Work.Unit == "tile" {
			hl.units *= hl.ct
		}
		// split_work_to_cores: the first units % cores cores take one more
		n := min(hl.units, int64(hp.prog.Grid.Cores))
		start := int64(0)
		for i := int64(0); i < n; i++ {
			count := hl.units / n
			if i < hl.units%n {
				count++
			}
			hl.cores = append(hl.cores, hostCore{x: int(i) % hp.prog.Grid.X, y: int(i) / hp.prog.Grid.X, start: start, count: count})
			start += count
		}
		hp.launches = append(hp.launches, hl)
	}
	return hp, nil
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// matrixOf is the [M, N] matrix a buffer's layout views its shape as.
func matrixOf(shape []int64, layout string) (m, n int64) {
	total := int64(1)
	for _, d := range shape {
		total *= d
	}
	if layout == "column" {
		return total, 1
	}
	if len(shape) == 0 {
		return 1, 1
	}
	n = shape[len(shape)-1]
	if n == 0 {
		return 0, 0
	}
	return total / n, n
}

// tileCount is the number of tiles of a buffer.
func tileCount(shape []int64, layout string) int64 {
	m, n := matrixOf(shape, layout)
	return ceilDiv(m, TileRows) * ceilDiv(n, TileCols)
}

// faceIndex is the position of element (r, c) in a tile: four 16x16
// faces, each row-major.
func faceIndex(r, c int) int { return ((r/16)*2+c/16)*256 + (r%16)*16 + c%16 }

// tilize lays a tensor out in tiles of format f.
func tilize(t *geval.Tensor, layout, f string) []byte {
	m, n := matrixOf(t.Shape, layout)
	nt := ceilDiv(n, TileCols)
	size := elemSize(f)
	buf := make([]byte, tileCount(t.Shape, layout)*1024*size)
	for i := int64(0); i < m; i++ {
		for j := int64(0); j < n; j++ {
			tile := (i/TileRows)*nt + j/TileCols
			off := (tile*1024 + int64(faceIndex(int(i%TileRows), int(j%TileCols)))) * size
			putElem(buf[off:], f, t.Elem, t.Data[i*n+j])
		}
	}
	return buf
}

// untilize reads a tensor of shape back from tiles.
func untilize(data []byte, shape []int64, elem ir.ElemKind, layout, f string) *geval.Tensor {
	t := geval.NewTensor(elem, shape)
	m, n := matrixOf(shape, layout)
	nt := ceilDiv(n, TileCols)
	size := elemSize(f)
	for i := int64(0); i < m; i++ {
		for j := int64(0); j < n; j++ {
			tile := (i/TileRows)*nt + j/TileCols
			off := (tile*1024 + int64(faceIndex(int(i%TileRows), int(j%TileCols)))) * size
			t.Data[i*n+j] = getElem(data[off:], f, elem)
		}
	}
	return t
}

func elemSize(f string) int64 {
	switch f {
	case "Float32":
		return 4
	case "UInt8":
		return 1
	}
	return 2
}

// putElem writes v in format f; a UInt8 element is the byte of a ui8, or
// the two's complement byte of an i8.
func putElem(b []byte, f string, elem ir.ElemKind, v float64) {
	switch f {
	case "Float32":
		binary.LittleEndian.PutUint32(b, math.Float32bits(float32(v)))
	case "Float16_b":
		binary.LittleEndian.PutUint16(b, uint16(math.Float32bits(float32(v))>>16))
	case "UInt8":
		b[0] = byte(int64(v))
	default:
		binary.LittleEndian.PutUint16(b, float16.Fromfloat32(float32(v)).Bits())
	}
}

func getElem(b []byte, f string, elem ir.ElemKind) float64 {
	switch f {
	case "Float32":
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
	case "Float16_b":
		return float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16))
	case "UInt8":
		if elem == ir.I8 {
			return float64(int8(b[0]))
		}
		return float64(b[0])
	}
	return float64(float16.Frombits(binary.LittleEndian.Uint16(b)).Float32())
}

// writeInputs writes the input buffers in tile layout.
func (hp *hostPlan) writeInputs(dir string, in []*geval.Tensor) error {
	i := 0
	for _, b := range hp.buffers {
		if b.Role != "input" {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, b.Name+".in"), tilize(in[i], b.Layout, b.DataFormat), 0o644); err != nil {
			return err
		}
		i++
	}
	return nil
}

// readOutputs reads the results back.
func (hp *hostPlan) readOutputs(dir string) ([]*geval.Tensor, error) {
	var outs []*geval.Tensor
	k := 0
	for _, b := range hp.buffers {
		if b.Role != "output" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, b.Name+".out"))
		if err != nil {
			return nil, err
		}
		elem, _ := ir.ParseElemKind(b.DType)
		if want := tileCount(hp.shapes[b.Name], b.Layout) * 1024 * elemSize(b.DataFormat); int64(len(data)) != want {
			return nil, fmt.Errorf("%s: %d bytes, want %d", b.Name, len(data), want)
		}
		outs = append(outs, untilize(data, hp.shapes[b.Name], elem, b.Layout, b.DataFormat))
		k++
	}
	return outs, nil
}

// cpp writes the case's kernels (each in a namespace) and its run(dir).
// cpp writes the host code of case i; kernelNS names the namespace
// holding a kernel file's kernel_main (and writes it out the first time).
func (hp *hostPlan) cpp(i int, kernelNS func(KernelFile) string) string {
	ns := map[string]string{}
	for _, k := range hp.prog.Kernels {
		for _, f := range []KernelFile{k.Reader, k.Compute, k.Writer} {
			ns[f.Path] = kernelNS(f)
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "namespace case%d {\n", i)
	sb.WriteString("int run(const std::string& dir) {\n    using namespace ttemu;\n")
	for _, b := range hp.buffers {
		tiles := tileCount(hp.shapes[b.Name], b.Layout)
		fmt.Fprintf(&sb, "    DramBuffer* b_%s = dram_alloc(%q, %d, %d);\n", b.Name, b.Name, b.PageBytes, tiles)
		if b.Role == "input" {
			fmt.Fprintf(&sb, "    read_file_into(b_%s, (dir + \"/%s.in\").c_str());\n", b.Name, b.Name)
		}
	}
	for li, l := range hp.launches {
		k := l.k
		fmt.Fprintf(&sb, "    {\n        Program p;\n        p.name = %q;\n", k.Name)
		fmt.Fprintf(&sb, "        p.cfg.l1_bytes = %d;\n", hp.prog.L1BytesPerCore)
		if k.ComputeConfig.Fp32DestAccEn {
			sb.WriteString("        p.cfg.fp32_dest_acc_en = true;\n        p.cfg.dst_tiles_per_acquire = 4;\n")
		}
		for _, cb := range k.CircularBuffers {
			fmt.Fprintf(&sb, "        p.add_cb(%d, DataFormat::%s, %d, %d);\n", cb.Index, cb.DataFormat, cb.PageBytes, cb.Pages)
		}
		for _, i := range k.ComputeConfig.UnpackToDestFp32 {
			fmt.Fprintf(&sb, "        p.set_unpack_to_dest(%d);\n", i)
		}
		bufOf := map[string]string{}
		for pi, p := range k.Params {
			bufOf[p.Name] = l.buffers[pi]
		}
		argList := func(names []string, c hostCore) string {
			var parts []string
			for _, a := range names {
				switch {
				case strings.HasPrefix(a, "addr:"):
					parts = append(parts, fmt.Sprintf("b_%s->base", bufOf[strings.TrimPrefix(a, "addr:")]))
				case a == "unit_start":
					parts = append(parts, fmt.Sprint(c.start))
				case a == "unit_count":
					parts = append(parts, fmt.Sprint(c.count))
				case a == "Ct":
					parts = append(parts, fmt.Sprint(l.ct))
				case a == "R":
					parts = append(parts, fmt.Sprint(l.r))
				case strings.HasPrefix(a, "extent:"):
					f := strings.Split(a, ":")
					axis, aerr := strconv.Atoi(f[len(f)-1])
					n, err := l.extent(strings.Join(f[1:len(f)-1], ":"), axis)
					if aerr != nil || err != nil {
						parts = append(parts, "0xdeadbeef /* "+a+": no such extent */")
						continue
					}
					parts = append(parts, fmt.Sprint(n))
				default:
					parts = append(parts, "0xdeadbeef /* unknown "+a+" */")
				}
			}
			return strings.Join(parts, ", ")
		}
		for _, c := range l.cores {
			sb.WriteString("        {\n            CoreRun cr;\n")
			fmt.Fprintf(&sb, "            cr.x = %d;\n            cr.y = %d;\n", c.x, c.y)
			for _, kf := range []struct {
				which string
				f     KernelFile
			}{{"reader", k.Reader}, {"compute", k.Compute}, {"writer", k.Writer}} {
				fmt.Fprintf(&sb, "            cr.%s.file = %q;\n", kf.which, kf.f.Path)
				fmt.Fprintf(&sb, "            cr.%s.entry = &%s::kernel_main;\n", kf.which, ns[kf.f.Path])
				fmt.Fprintf(&sb, "            cr.%s.args = {%s};\n", kf.which, argList(kf.f.RuntimeArgs, c))
			}
			sb.WriteString("            p.cores.push_back(cr);\n        }\n")
		}
		fmt.Fprintf(&sb, "        p.run();  // launch %d\n    }\n", li)
	}
	for _, b := range hp.buffers {
		if b.Role == "output" {
			fmt.Fprintf(&sb, "    write_file_from(b_%s, (dir + \"/%s.out\").c_str());\n", b.Name, b.Name)
		}
	}
	sb.WriteString("    return 0;\n}\n}  // namespace\n\n")
	return sb.String()
}
