package main

import (
	"strings"

	"github.com/tensorforge/tensorforge/ir"
)

// remarkKinds are the values `--remarks` accepts: the categories the passes
// report remarks under (ctx.Remark(category, ...)), and "all". A test in
// this package checks that every category a pass uses is listed.
var remarkKinds = []string{"fusion", "numerics", "sram", "all"}

// testRemarkKind is the category of the test passes, known only when they
// are registered (TFC_ENABLE_TEST_PASSES=1).
const testRemarkKind = "test"

// knownRemarkKinds lists what --remarks accepts now.
func knownRemarkKinds() []string {
	kinds := append([]string{}, remarkKinds...)
	if ir.LookupPass("test-diagnose") != nil {
		kinds = append(kinds, testRemarkKind)
	}
	return kinds
}

// checkRemarks rejects a --remarks value that names no category: a typo
// would otherwise silently report nothing.
func checkRemarks(names []string) *ir.Diagnostic {
	known := knownRemarkKinds()
	for _, n := range names {
		ok := false
		for _, k := range known {
			ok = ok || n == k
		}
		if !ok {
			return ir.Errorf(ir.Location{}, "--remarks: unknown remark kind '%s' (known: %s)", n, strings.Join(known, ", "))
		}
	}
	return nil
}
