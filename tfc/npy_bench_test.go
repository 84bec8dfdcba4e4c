package main

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/tensorforge/tensorforge/emit/cpurt"
)

// BenchmarkRunNeg128MB is `tfc run` of graph.neg on a 128 MB f32 .npy
// (32M elements): compile (cached after the first iteration), map the
// input, run, write the result. bench/cpu/run-neg.sh compares the same
// command with NumPy.
//
//	go test ./tfc -run '^$' -bench RunNeg128MB -benchtime 5x
func BenchmarkRunNeg128MB(b *testing.B) {
	if _, err := cpurt.FindToolchain(); err != nil {
		b.Skip(err)
	}
	dir := b.TempDir()
	const n = 32 << 20
	src := filepath.Join(dir, "neg.tir")
	if err := os.WriteFile(src, []byte("func.func @neg(%x: tensor<?xf32>) -> tensor<?xf32> {\n  %y = graph.neg %x : tensor<?xf32>\n  return %y : tensor<?xf32>\n}\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	data := make([]byte, 4*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(i%1000)-500))
	}
	in := filepath.Join(dir, "x.npy")
	if err := os.WriteFile(in, append(npyHeader("<f4", []int64{n}), data...), 0o644); err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	b.SetBytes(8 * n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var stdout, stderr bytes.Buffer
		sio := &stdio{in: bytes.NewReader(nil), out: &stdout, err: &stderr, getenv: func(string) string { return "" }}
		if status := run([]string{"run", src, "--input", "x=" + in, "--output", out}, sio); status != exitOK {
			b.Fatalf("tfc run: %s", stderr.String())
		}
	}
	b.StopTimer()
	got, err := os.ReadFile(filepath.Join(out, "result0.npy"))
	if err != nil {
		b.Fatal(err)
	}
	off := len(npyHeader("<f4", []int64{n}))
	if v := math.Float32frombits(binary.LittleEndian.Uint32(got[off+4*7:])); v != 493 {
		b.Fatalf("element 7 is %v, not 493", v)
	}
}
