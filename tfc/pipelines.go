package main

import "strings"

// optLevel is a named pipeline selected by `-O0` or `-O2`.
type optLevel struct {
	flag     string // "O2"
	pipeline string // pass pipeline text, as --pass-pipeline takes it
	summary  string
}

// optLevels is the one table of named pipelines; `tfc passes` prints it.
// A level lists only passes that exist: the pipeline grows as passes do.
var optLevels = []optLevel{
	{flag: "O0", pipeline: "legalize-numerics,decompose,lower-to-loops{horizontal=false},sram-alloc", summary: "legalise and lower without fusion"},
	{flag: "O2", pipeline: "canonicalize,cse,legalize-numerics,decompose,fuse,canonicalize,cse,dce,lower-to-loops,sram-alloc", summary: "the full default pipeline"},
}

// lookupOptLevel finds a level by its flag name ("O2").
func lookupOptLevel(flag string) (optLevel, bool) {
	for _, l := range optLevels {
		if l.flag == flag {
			return l, true
		}
	}
	return optLevel{}, false
}

// isOptLevelSpelling reports whether name looks like an -O flag: "O3".
func isOptLevelSpelling(name string) bool {
	if len(name) < 2 || name[0] != 'O' {
		return false
	}
	for _, c := range name[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// optLevelFlags lists the level flags: "-O0, -O2".
func optLevelFlags() string {
	names := make([]string, len(optLevels))
	for i, l := range optLevels {
		names[i] = "-" + l.flag
	}
	return strings.Join(names, ", ")
}
