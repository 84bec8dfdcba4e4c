package main

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/graph/eval"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/numeric"
)

// The .npy reader of `tfc run` and `tfc interpret`. It reads the header
// and leaves the data where it is (in the .npy file, or in a .npz archive
// when the member is stored uncompressed), so that `tfc run` can hand the
// native program the file region itself; `interpret` reads the values.
// Every problem with a file is an error naming it and saying what is
// wrong.

// npyArray is one array: its header, and where its data lies.
type npyArray struct {
	source string // for messages: "x.npy", "in.npz: x"
	path   string // the file holding the data ("" when held in data)
	offset int64  // of the data in path
	data   []byte // the data of a compressed .npz member
	descr  string // as written: "<f4"
	kind   byte   // 'f', 'i', 'u', 'b'
	size   int    // bytes per element
	big    bool   // big-endian
	shape  []int64
	// fortran is column-major order (of an array of rank > 1).
	fortran bool
	count   int64 // elements
}

// dtypeName is NumPy's name of the array's dtype: float32, uint16, bool.
func (a *npyArray) dtypeName() string {
	switch a.kind {
	case 'b':
		return "bool"
	case 'f':
		return fmt.Sprintf("float%d", a.size*8)
	case 'i':
		return fmt.Sprintf("int%d", a.size*8)
	case 'u':
		return fmt.Sprintf("uint%d", a.size*8)
	}
	return a.descr
}

// natural is the element type the dtype holds exactly; false for uint64,
// which has none.
func (a *npyArray) natural() (ir.ElemKind, bool) {
	switch fmt.Sprintf("%c%d", a.kind, a.size) {
	case "b1":
		return ir.I1, true
	case "f2":
		return ir.F16, true
	case "f4":
		return ir.F32, true
	case "f8":
		return ir.F64, true
	case "i1":
		return ir.I8, true
	case "i2":
		return ir.I16, true
	case "i4":
		return ir.I32, true
	case "i8":
		return ir.I64, true
	case "u1":
		return ir.UI8, true
	case "u2":
		return ir.UI16, true
	case "u4":
		return ir.UI32, true
	}
	return ir.InvalidElem, false
}

// nbytes is the size of the data.
func (a *npyArray) nbytes() int64 { return a.count * int64(a.size) }

// readNpyFile reads the header of a .npy file.
func readNpyFile(path string) (*npyArray, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open '%s': %s", path, sysError(err, "no such file"))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("cannot read '%s': %v", path, err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("'%s' is a directory, not a .npy file", path)
	}
	a, err := parseNpy(f, st.Size(), path)
	if err != nil {
		return nil, err
	}
	a.path = path
	return a, nil
}

// parseNpy reads the header of the .npy image r (size bytes) and checks
// that the data it announces is there. offset is then the data's.
func parseNpy(r io.ReaderAt, size int64, source string) (*npyArray, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: not a valid .npy file: %s", source, fmt.Sprintf(format, args...))
	}
	var pre [12]byte
	n, _ := r.ReadAt(pre[:], 0)
	if n < 6 || string(pre[:6]) != "\x93NUMPY" {
		return nil, bad("it does not start with the magic string '\\x93NUMPY'")
	}
	if n < 10 {
		return nil, bad("%d bytes, too short for a header", size)
	}
	major := pre[6]
	var hlen, start int64
	switch major {
	case 1:
		hlen, start = int64(binary.LittleEndian.Uint16(pre[8:10])), 10
	case 2, 3:
		if n < 12 {
			return nil, bad("%d bytes, too short for a version %d header", size, major)
		}
		hlen, start = int64(binary.LittleEndian.Uint32(pre[8:12])), 12
	default:
		return nil, bad("unknown format version %d.%d", major, pre[7])
	}
	if start+hlen > size {
		return nil, bad("truncated: the header announces %d bytes, the file has %d after the magic string and length", hlen, size-start)
	}
	text := make([]byte, hlen)
	if _, err := r.ReadAt(text, start); err != nil {
		return nil, bad("cannot read the header: %v", err)
	}
	a := &npyArray{source: source, offset: start + hlen}
	if err := a.parseHeader(string(text)); err != nil {
		return nil, bad("%v", err)
	}
	if avail := size - a.offset; a.nbytes() > avail {
		return nil, fmt.Errorf("%s: truncated .npy file: shape %s of %s needs %d bytes of data, the file has %d after its header",
			source, formatNpyShape(a.shape), a.dtypeName(), a.nbytes(), max(avail, 0))
	}
	return a, nil
}

// parseHeader reads the header dictionary:
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
func (a *npyArray) parseHeader(h string) error {
	p := &dictParser{s: strings.TrimRight(h, " \n\x00")}
	if !p.eat('{') {
		return fmt.Errorf("the header is not a dictionary: %q", clip(h))
	}
	seen := map[string]bool{}
	for {
		if p.eat('}') {
			break
		}
		key, ok := p.str()
		if !ok {
			return fmt.Errorf("bad key in the header %q", clip(h))
		}
		if !p.eat(':') {
			return fmt.Errorf("no ':' after '%s' in the header", key)
		}
		seen[key] = true
		switch key {
		case "descr":
			d, ok := p.str()
			if !ok {
				return fmt.Errorf("'descr' is not a plain dtype string (structured arrays are not supported): %q", clip(h))
			}
			if err := a.setDescr(d); err != nil {
				return err
			}
		case "fortran_order":
			switch {
			case p.word("True"):
				a.fortran = true
			case p.word("False"):
			default:
				return fmt.Errorf("'fortran_order' is not True or False")
			}
		case "shape":
			shape, err := p.tuple()
			if err != nil {
				return err
			}
			a.shape = shape
		default:
			return fmt.Errorf("unknown key '%s' in the header", key)
		}
		if !p.eat(',') {
			if !p.eat('}') {
				return fmt.Errorf("expected ',' or '}' after '%s' in the header", key)
			}
			break
		}
	}
	p.skip()
	if p.i != len(p.s) {
		return fmt.Errorf("text after the header dictionary")
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return fmt.Errorf("the header has no '%s'", k)
		}
	}
	n, ok := ir.NumElements(a.shape)
	if !ok || n > math.MaxInt64/8 {
		return fmt.Errorf("shape %s has too many elements", formatNpyShape(a.shape))
	}
	a.count = n
	return nil
}

// setDescr reads a dtype string: '<f4', '|b1', '>i2'.
func (a *npyArray) setDescr(d string) error {
	a.descr = d
	if len(d) < 3 {
		return fmt.Errorf("unsupported dtype '%s'", d)
	}
	order, kind, sz := d[0], d[1], d[2:]
	size, err := strconv.Atoi(sz)
	if err != nil || !strings.ContainsRune("<>|=", rune(order)) {
		return fmt.Errorf("unsupported dtype '%s'", d)
	}
	a.kind, a.size, a.big = kind, size, order == '>'
	ok := false
	switch kind {
	case 'b':
		ok = size == 1
	case 'f':
		ok = size == 2 || size == 4 || size == 8
	case 'i', 'u':
		ok = size == 1 || size == 2 || size == 4 || size == 8
	}
	if !ok {
		return fmt.Errorf("unsupported dtype '%s' (tfc reads bool, int8..int64, uint8..uint64, float16, float32 and float64)", d)
	}
	if size == 1 {
		a.big = false
	}
	return nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

func formatNpyShape(shape []int64) string {
	if len(shape) == 0 {
		return "() (a scalar)"
	}
	return eval.FormatShape(shape)
}

// dictParser reads the Python literal of a .npy header.
type dictParser struct {
	s string
	i int
}

func (p *dictParser) skip() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n') {
		p.i++
	}
}

func (p *dictParser) eat(c byte) bool {
	p.skip()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *dictParser) word(w string) bool {
	p.skip()
	if strings.HasPrefix(p.s[p.i:], w) {
		p.i += len(w)
		return true
	}
	return false
}

// str reads a quoted string without escapes.
func (p *dictParser) str() (string, bool) {
	p.skip()
	if p.i >= len(p.s) || (p.s[p.i] != '\'' && p.s[p.i] != '"') {
		return "", false
	}
	q := p.s[p.i]
	end := strings.IndexByte(p.s[p.i+1:], q)
	if end < 0 {
		return "", false
	}
	v := p.s[p.i+1 : p.i+1+end]
	p.i += end + 2
	return v, true
}

// tuple reads a shape: (), (3,), (2, 3).
func (p *dictParser) tuple() ([]int64, error) {
	if !p.eat('(') {
		return nil, fmt.Errorf("'shape' is not a tuple")
	}
	shape := []int64{}
	for {
		if p.eat(')') {
			return shape, nil
		}
		p.skip()
		j := p.i
		for j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9' {
			j++
		}
		if j == p.i {
			return nil, fmt.Errorf("'shape' holds something other than non-negative integers")
		}
		d, err := strconv.ParseInt(p.s[p.i:j], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("extent %s of 'shape' is too large", p.s[p.i:j])
		}
		p.i = j
		p.word("L") // Python 2 longs
		shape = append(shape, d)
		if !p.eat(',') {
			if !p.eat(')') {
				return nil, fmt.Errorf("bad 'shape' tuple")
			}
			return shape, nil
		}
	}
}

// readNpz reads the arrays of a .npz archive, named by their members
// without '.npy'. Stored members are left in the archive (their data
// region is in it); compressed ones are read into memory.
func readNpz(path string) ([]string, map[string]*npyArray, error) {
	zr, err := zip.OpenReader(path)
	if err != nil {
		if _, serr := os.Stat(path); serr != nil {
			return nil, nil, fmt.Errorf("cannot open '%s': %s", path, sysError(serr, "no such file"))
		}
		return nil, nil, fmt.Errorf("%s: not a valid .npz file: %v", path, err)
	}
	defer zr.Close()
	var names []string
	arrays := map[string]*npyArray{}
	for _, f := range zr.File {
		name := strings.TrimSuffix(f.Name, ".npy")
		source := fmt.Sprintf("%s: %s", path, f.Name)
		if _, dup := arrays[name]; dup {
			return nil, nil, fmt.Errorf("%s: the archive holds '%s' twice", path, f.Name)
		}
		var a *npyArray
		if f.Method == zip.Store {
			off, err := f.DataOffset()
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %v", source, err)
			}
			osf, err := os.Open(path)
			if err != nil {
				return nil, nil, err
			}
			sr := io.NewSectionReader(osf, off, int64(f.CompressedSize64))
			a, err = parseNpy(sr, int64(f.CompressedSize64), source)
			osf.Close()
			if err != nil {
				return nil, nil, err
			}
			a.path, a.offset = path, off+a.offset
		} else {
			rc, err := f.Open()
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %v", source, err)
			}
			data, err := io.ReadAll(io.LimitReader(rc, 1<<40))
			rc.Close()
			if err != nil {
				return nil, nil, fmt.Errorf("%s: cannot decompress: %v", source, err)
			}
			if a, err = parseNpy(bytes.NewReader(data), int64(len(data)), source); err != nil {
				return nil, nil, err
			}
			a.data = data[a.offset : a.offset+a.nbytes()]
			a.offset = 0
		}
		names = append(names, name)
		arrays[name] = a
	}
	return names, arrays, nil
}

// raw returns the array's data bytes.
func (a *npyArray) raw() ([]byte, error) {
	if a.path == "" {
		return a.data, nil
	}
	f, err := os.Open(a.path)
	if err != nil {
		return nil, fmt.Errorf("cannot open '%s': %s", a.path, sysError(err, "no such file"))
	}
	defer f.Close()
	buf := make([]byte, a.nbytes())
	if _, err := f.ReadAt(buf, a.offset); err != nil {
		return nil, fmt.Errorf("%s: cannot read the data: %v", a.source, err)
	}
	return buf, nil
}

// values decodes the data as float64s of its natural element type, in
// row-major order.
func (a *npyArray) values() ([]float64, error) {
	data, err := a.raw()
	if err != nil {
		return nil, err
	}
	var order binary.ByteOrder = binary.LittleEndian
	if a.big {
		order = binary.BigEndian
	}
	out := make([]float64, a.count)
	for i := range out {
		b := data[i*a.size : (i+1)*a.size]
		var v float64
		switch fmt.Sprintf("%c%d", a.kind, a.size) {
		case "b1":
			if b[0] != 0 {
				v = 1
			}
		case "f2":
			v = float64(numeric.F16FromBits(order.Uint16(b)))
		case "f4":
			v = float64(math.Float32frombits(order.Uint32(b)))
		case "f8":
			v = math.Float64frombits(order.Uint64(b))
		case "i1":
			v = float64(int8(b[0]))
		case "i2":
			v = float64(int16(order.Uint16(b)))
		case "i4":
			v = float64(int32(order.Uint32(b)))
		case "i8":
			v = float64(int64(order.Uint64(b)))
		case "u1":
			v = float64(b[0])
		case "u2":
			v = float64(order.Uint16(b))
		case "u4":
			v = float64(order.Uint32(b))
		case "u8":
			v = float64(order.Uint64(b))
		}
		out[i] = v
	}
	if a.fortran && len(a.shape) > 1 {
		out = fromColumnMajor(out, a.shape)
	}
	return out, nil
}

// fromColumnMajor reorders Fortran-order data to row-major.
func fromColumnMajor(data []float64, shape []int64) []float64 {
	strides := make([]int, len(shape))
	s := 1
	for i, d := range shape {
		strides[i] = s
		s *= int(d)
	}
	out := make([]float64, len(data))
	idx := make([]int64, len(shape))
	off := 0
	for o := range out {
		out[o] = data[off]
		for d := len(shape) - 1; d >= 0; d-- {
			idx[d]++
			off += strides[d]
			if idx[d] < shape[d] {
				break
			}
			off -= strides[d] * int(shape[d])
			idx[d] = 0
		}
	}
	return out
}

// npyDescr is the dtype a result of kind k is written with, and whether
// its storage is that dtype's (so the program's bytes are the file's).
// f16, bf16 and f8 are written as float32, as eval.WriteNpy writes them.
func npyDescr(k ir.ElemKind) (descr string, direct bool) {
	switch k {
	case ir.F64:
		return "<f8", true
	case ir.F32:
		return "<f4", true
	case ir.F16, ir.BF16, ir.F8E4M3FN, ir.F8E5M2:
		return "<f4", false
	case ir.I1:
		return "|b1", true
	case ir.I8:
		return "|i1", true
	case ir.I16:
		return "<i2", true
	case ir.I32:
		return "<i4", true
	case ir.I64, ir.Index:
		return "<i8", true
	case ir.UI8:
		return "|u1", true
	case ir.UI16:
		return "<u2", true
	case ir.UI32:
		return "<u4", true
	}
	return "", false
}

// npyHeader is a version 1.0 header padded so that the data starts at a
// multiple of 64 bytes.
func npyHeader(descr string, shape []int64) []byte {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = strconv.FormatInt(d, 10)
	}
	tuple := "(" + strings.Join(dims, ", ")
	if len(shape) == 1 {
		tuple += ","
	}
	tuple += ")"
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, tuple)
	const prefix = 10
	pad := (64 - (prefix+len(dict)+1)%64) % 64
	dict += strings.Repeat(" ", pad) + "\n"
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&b, binary.LittleEndian, uint16(len(dict)))
	b.WriteString(dict)
	return b.Bytes()
}

// createNpy creates path holding the header of an array of kind k (its
// direct dtype) and shape, and returns the offset of the data.
func createNpy(path string, k ir.ElemKind, shape []int64) (int64, error) {
	descr, _ := npyDescr(k)
	h := npyHeader(descr, shape)
	if err := os.WriteFile(path, h, 0o644); err != nil {
		return 0, fmt.Errorf("cannot write '%s': %s", path, sysError(err, "no such directory"))
	}
	return int64(len(h)), nil
}

// writeNpyF32 writes the raw storage of kind k (f16, bf16, f8) as a
// float32 .npy file.
func writeNpyF32(path string, raw []byte, k ir.ElemKind, shape []int64) error {
	n, _ := ir.NumElements(shape)
	h := npyHeader("<f4", shape)
	out := make([]byte, len(h)+int(n)*4)
	copy(out, h)
	dst := out[len(h):]
	size := int(k.ByteSize())
	for i := 0; i < int(n); i++ {
		var f float32
		switch k {
		case ir.BF16:
			f = math.Float32frombits(uint32(binary.LittleEndian.Uint16(raw[2*i:])) << 16)
		default:
			var bits uint64
			if size == 2 {
				bits = uint64(binary.LittleEndian.Uint16(raw[2*i:]))
			} else {
				bits = uint64(raw[i])
			}
			v, _ := numeric.FromBits(bits, k)
			f = float32(v)
		}
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(f))
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		return fmt.Errorf("cannot write '%s': %s", path, sysError(err, "no such directory"))
	}
	return nil
}
