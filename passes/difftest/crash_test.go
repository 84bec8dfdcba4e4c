package difftest

import (
	"os"
	"runtime/debug"
)

// A fuzzing worker's own output is discarded, so a worker that dies of a
// fatal error (exit status 2: a stack overflow, memory exhausted) leaves
// only "fuzzing process hung or terminated unexpectedly". With
// TFC_CRASH_OUTPUT=FILE in the environment, the runtime's report of such
// a crash is appended to FILE.
func init() {
	name := os.Getenv("TFC_CRASH_OUTPUT")
	if name == "" {
		return
	}
	f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		panic(err)
	}
	if err := debug.SetCrashOutput(f, debug.CrashOptions{}); err != nil {
		panic(err)
	}
}
