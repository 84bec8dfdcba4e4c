package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// inputFuzzPrograms are the programs FuzzExecInputs feeds: `?` extents
// paired by broadcasting, a static one, a row reduction, integer and
// narrow-float arguments.
var inputFuzzPrograms = []string{
	`func.func @f(%x: tensor<?x3xf32>, %y: tensor<?x3xf32>) -> tensor<?x3xf32> {
  %z = graph.add %x, %y : tensor<?x3xf32>
  return %z : tensor<?x3xf32>
}`,
	`func.func @f(%x: tensor<4x3xbf16>, %y: tensor<?x3xbf16>) -> tensor<4x3xbf16> {
  %z = graph.mul %x, %y : (tensor<4x3xbf16>, tensor<?x3xbf16>) -> tensor<4x3xbf16>
  return %z : tensor<4x3xbf16>
}`,
	`func.func @f(%x: tensor<?x?xf16>, %y: tensor<?xf16>) -> tensor<?x?xf16> {
  %n = graph.rmsnorm %x, %y {eps = 1.0e-05 : f32} : (tensor<?x?xf16>, tensor<?xf16>) -> tensor<?x?xf16>
  return %n : tensor<?x?xf16>
}`,
	`func.func @f(%x: tensor<?xi8>, %y: tensor<?xf32>) -> tensor<?xf32> {
  %d = graph.dequantize %x {scale = 0.5, zero_point = 3} : (tensor<?xi8>) -> tensor<?xf32>
  %z = graph.add %d, %y : tensor<?xf32>
  return %z : tensor<?xf32>
}`,
}

// FuzzExecInputs runs `tfc interpret` (and, at the -O2 choice, the loop
// interpreter after lowering) on fixed programs with arbitrary .npy files
// as their two inputs: whatever the bytes, shapes and dtypes, the result is
// exit status 0 with results, or 1 with a located diagnosis; never a panic,
// an internal error or a read past a buffer.
//
//	go test ./tfc -run '^$' -fuzz FuzzExecInputs -fuzztime 2m
func FuzzExecInputs(f *testing.F) {
	f32 := func(shape string, n int) []byte {
		return npyImage("{'descr': '<f4', 'fortran_order': False, 'shape': "+shape+", }", make([]byte, 4*n))
	}
	f.Add(uint8(0), f32("(2, 3)", 6), f32("(2, 3)", 6))
	f.Add(uint8(1), f32("(2, 3)", 6), f32("(3, 3)", 9))
	f.Add(uint8(4), npyImage("{'descr': '<u2', 'fortran_order': False, 'shape': (4, 3), }", make([]byte, 24)),
		npyImage("{'descr': '<u2', 'fortran_order': False, 'shape': (1, 3), }", make([]byte, 6)))
	f.Add(uint8(2), npyImage("{'descr': '<f2', 'fortran_order': False, 'shape': (2, 5), }", make([]byte, 20)),
		npyImage("{'descr': '<f2', 'fortran_order': False, 'shape': (5,), }", make([]byte, 10)))
	f.Add(uint8(3), npyImage("{'descr': '|i1', 'fortran_order': False, 'shape': (7,), }", make([]byte, 7)), f32("(7,)", 7))
	f.Add(uint8(7), []byte("garbage"), f32("(0, 3)", 0))
	f.Fuzz(func(t *testing.T, choice uint8, x, y []byte) {
		dir := t.TempDir()
		prog := filepath.Join(dir, "p.tir")
		require.NoError(t, os.WriteFile(prog, []byte(inputFuzzPrograms[int(choice)%len(inputFuzzPrograms)]), 0o644))
		xs, ys := filepath.Join(dir, "x.npy"), filepath.Join(dir, "y.npy")
		require.NoError(t, os.WriteFile(xs, x, 0o644))
		require.NoError(t, os.WriteFile(ys, y, 0o644))
		args := []string{"interpret", prog, "--input", "x=" + xs, "--input", "y=" + ys, "--output", filepath.Join(dir, "out")}
		if choice&0x10 != 0 {
			args = append(args, "--cast-inputs")
		}
		if choice&0x20 != 0 {
			args = append(args, "-O2")
		}
		status, _, errOut := runTFC(t, nil, "", args...)
		require.Contains(t, []int{exitOK, exitFailure}, status, "tfc %s exited with %d:\n%s", strings.Join(args, " "), status, errOut)
		if status == exitFailure {
			require.Contains(t, errOut, "error: ")
		}
	})
}
