package cpurt

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Toolchain is the external programs a compile needs: LLVM 14's llc
// (and opt, when present) and a C compiler for the runtime and harness.
type Toolchain struct {
	LLC string
	// Opt, when set, runs LLVM's -O2 middle end before llc.
	Opt string
	CC  string
	// CPU is llc's -mcpu: "native" (the default) tunes for the host.
	CPU string
}

// llvmBin is where Debian and Ubuntu install LLVM 14.
const llvmBin = "/usr/lib/llvm-14/bin"

// InstallHintLLVM and InstallHintCC say how to get the tools.
const (
	InstallHintLLVM = "install LLVM 14 with `apt-get install llvm-14 llvm-14-tools` (or set TFC_LLC to an llc of LLVM 14)"
	InstallHintCC   = "install a C compiler with `apt-get install gcc` (or set CC)"
)

// FindToolchain looks for llc and opt in $TFC_LLC / $TFC_OPT, in
// /usr/lib/llvm-14/bin and on $PATH (llc-14, llc), and for the C compiler
// in $CC, cc and gcc. A missing tool is an error that says how to install
// it.
func FindToolchain() (*Toolchain, error) {
	tc := &Toolchain{CPU: "native"}
	tc.LLC = findTool("TFC_LLC", filepath.Join(llvmBin, "llc"), "llc-14", "llc")
	if tc.LLC == "" {
		return nil, fmt.Errorf("cannot find llc: %s", InstallHintLLVM)
	}
	tc.Opt = findTool("TFC_OPT", filepath.Join(filepath.Dir(tc.LLC), "opt"), filepath.Join(llvmBin, "opt"), "opt-14")
	tc.CC = findTool("CC", "cc", "gcc")
	if tc.CC == "" {
		return nil, fmt.Errorf("cannot find a C compiler (cc or gcc): %s", InstallHintCC)
	}
	return tc, nil
}

// findTool returns the first candidate that exists: the environment
// variable env if set, then absolute paths and names on $PATH.
func findTool(env string, candidates ...string) string {
	if v := os.Getenv(env); v != "" {
		if p, err := exec.LookPath(strings.Fields(v)[0]); err == nil {
			return p
		}
	}
	for _, c := range candidates {
		if filepath.IsAbs(c) {
			if st, err := os.Stat(c); err == nil && !st.IsDir() {
				return c
			}
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	return ""
}

// run executes a tool and returns its standard error in the error.
func run(dir, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 4000 {
			msg = msg[:4000] + "..."
		}
		return fmt.Errorf("%s failed: %v\n%s", filepath.Base(name), err, msg)
	}
	return nil
}

// build turns the LLVM IR text into an executable in dir:
//
//	opt -O2 prog.ll -o prog.bc
//	llc -O3 -relocation-model=pic -mcpu=native -filetype=obj prog.bc -o prog.o
//	cc -O2 prog.o runtime.c harness.c -o prog -lpthread -lm
func (tc *Toolchain) build(dir, llText string) (string, error) {
	ll := filepath.Join(dir, "prog.ll")
	if err := os.WriteFile(ll, []byte(llText), 0o644); err != nil {
		return "", err
	}
	src := "prog.ll"
	if tc.Opt != "" {
		if err := run(dir, tc.Opt, "-O2", "prog.ll", "-o", "prog.bc"); err != nil {
			return "", err
		}
		src = "prog.bc"
	}
	args := []string{"-O3", "-relocation-model=pic", "-filetype=obj", src, "-o", "prog.o"}
	if tc.CPU != "" {
		args = append(args, "-mcpu="+tc.CPU)
	}
	if err := run(dir, tc.LLC, args...); err != nil {
		return "", err
	}
	for name, text := range map[string]string{"runtime.c": runtimeC, "harness.c": harnessC} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return "", err
		}
	}
	if err := run(dir, tc.CC, "-O2", "-std=gnu11", "prog.o", "runtime.c", "harness.c", "-o", "prog", "-lpthread", "-lm"); err != nil {
		return "", err
	}
	return filepath.Join(dir, "prog"), nil
}
