package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Regression tests of defects reported against the driver from outside.

// An error that is already located keeps its one location: it used to be
// wrapped again and read `<stdin>:1:1: error: <stdin>:1:1: error: ...`.
func TestLocatedErrorIsNotWrappedAgain(t *testing.T) {
	src := `func.func @f(%x: tensor<1000000000000x4xf32>) -> tensor<1000000000000x4xf32> {
  %y = graph.exp %x : tensor<1000000000000x4xf32>
  return %y : tensor<1000000000000x4xf32>
}
`
	status, _, errOut := runTFC(t, nil, src, "interpret", "-", "--random-inputs", "1", "--output", t.TempDir())
	require.Equal(t, exitFailure, status, errOut)
	assert.Contains(t, errOut, "<stdin>:1:1: error: @f: argument #0: shape 1000000000000x4 is too large")
	assert.Equal(t, 1, strings.Count(errOut, "error:"), errOut)
}
