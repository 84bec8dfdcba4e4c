package main

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

// npyImage builds a .npy file image with a version 1.0 header.
func npyImage(dict string, data []byte) []byte {
	h := dict + strings.Repeat(" ", (64-(10+len(dict)+1)%64)%64) + "\n"
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&b, binary.LittleEndian, uint16(len(h)))
	b.WriteString(h)
	b.Write(data)
	return b.Bytes()
}

// FuzzParseNpy: whatever the bytes, the reader returns an array whose
// data lies within the file, or an error naming the file; never a panic.
//
//	go test ./tfc -run '^$' -fuzz FuzzParseNpy -fuzztime 2m
func FuzzParseNpy(f *testing.F) {
	f.Add(npyImage("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", make([]byte, 24)))
	f.Add(npyImage("{'descr': '|b1', 'fortran_order': False, 'shape': (4,), }", []byte{0, 1, 2, 1}))
	f.Add(npyImage("{'descr': '>i2', 'fortran_order': True, 'shape': (2, 2), }", make([]byte, 8)))
	f.Add(npyImage("{'descr': '<f2', 'fortran_order': False, 'shape': (), }", make([]byte, 2)))
	f.Add(npyImage("{'descr': '<u8', 'fortran_order': False, 'shape': (0, 5), }", nil))
	f.Add(npyImage("{'descr': '<f8', 'fortran_order': False, 'shape': (9223372036854775807, 2), }", nil))
	f.Add(npyImage("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", make([]byte, 4)))
	f.Add(npyImage("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", make([]byte, 5)))
	f.Add([]byte("\x93NUMPY\x02\x00\x10\x00\x00\x00{'descr': '<i4'}"))
	f.Add([]byte("\x93NUMPY\x01\x00\xff\xff{"))
	f.Add([]byte("not a numpy file"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := parseNpy(bytes.NewReader(data), int64(len(data)), "in.npy")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "in.npy: ") {
				t.Fatalf("the error does not name the file: %v", err)
			}
			return
		}
		if a.offset < 0 || a.count < 0 || a.offset+a.nbytes() > int64(len(data)) {
			t.Fatalf("data [%d, +%d) outside the %d-byte file", a.offset, a.nbytes(), len(data))
		}
		a.data = data[a.offset : a.offset+a.nbytes()]
		vals, err := a.values()
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(vals)) != a.count {
			t.Fatalf("%d values for %d elements", len(vals), a.count)
		}
	})
}

// The diagnoses of broken files, which used to be Go runtime errors.
func TestParseNpyErrors(t *testing.T) {
	for _, c := range []struct {
		data []byte
		want string
	}{
		{[]byte("\x93NUMPY"), "in.npy: not a valid .npy file: 6 bytes, too short for a header"},
		{[]byte("PK\x03\x04 not numpy at all"), "it does not start with the magic string"},
		{[]byte("\x93NUMPY\x01\x00\xff\xff{"), "truncated: the header announces 65535 bytes"},
		{npyImage("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", make([]byte, 5)), "in.npy: truncated .npy file: shape 3 of float32 needs 12 bytes of data, the file has 5 after its header"},
		{npyImage("{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", nil), "unsupported dtype '<c8'"},
		{npyImage("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", nil), "structured arrays are not supported"},
		{npyImage("{'descr': '<f4', 'shape': (1,), }", nil), "the header has no 'fortran_order'"},
		{npyImage("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", nil), "'shape' holds something other than non-negative integers"},
		{npyImage("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", nil), "has too many elements"},
	} {
		_, err := parseNpy(bytes.NewReader(c.data), int64(len(c.data)), "in.npy")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want an error containing %q", c.data, err, c.want)
		}
	}
}
