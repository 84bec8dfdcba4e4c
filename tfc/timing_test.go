package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --timing printed seconds with four decimals, 0.0000 for most passes;
// durations are now milliseconds with three decimals, microseconds with
// one below a millisecond.
func TestTimingUnits(t *testing.T) {
	for d, want := range map[time.Duration]string{
		400 * time.Nanosecond:    "0.4 µs",
		12345 * time.Nanosecond:  "12.3 µs",
		999 * time.Microsecond:   "999.0 µs",
		time.Millisecond:         "1.000 ms",
		12754 * time.Microsecond: "12.754 ms",
		2 * time.Second:          "2000.000 ms",
	} {
		assert.Equal(t, want, formatMillis(d))
	}
	status, _, errOut := runTFC(t, nil, twoExps, "--timing", "--cse", "--dce", "-")
	require.Equal(t, exitOK, status, errOut)
	line := regexp.MustCompile(`(?m)^ +([0-9]+\.[0-9]{3} ms|[0-9]+\.[0-9] µs) \( *[0-9]+\.[0-9]%\)  `)
	assert.Len(t, line.FindAllString(errOut, -1), 3, errOut)
	assert.Contains(t, errOut, "  CSE (cse)\n")
	assert.NotContains(t, errOut, "seconds")
	assert.Equal(t, 1, strings.Count(errOut, "Execution time report"), "one report, not the pass manager's too")
}
