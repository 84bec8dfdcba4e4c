package cpurt

import (
	"bytes"
	"crypto/sha256"
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

// compileLL turns the LLVM IR text into prog.o in dir:
//
//	opt -O2 prog.ll -o prog.bc
//	llc -O3 -relocation-model=pic -mcpu=native -filetype=obj prog.bc -o prog.o
func (tc *Toolchain) compileLL(dir, llText string) error {
	ll := filepath.Join(dir, "prog.ll")
	if err := os.WriteFile(ll, []byte(llText), 0o644); err != nil {
		return err
	}
	src := "prog.ll"
	if tc.Opt != "" {
		if err := run(dir, tc.Opt, "-O2", "prog.ll", "-o", "prog.bc"); err != nil {
			return err
		}
		src = "prog.bc"
	}
	args := []string{"-O3", "-relocation-model=pic", "-filetype=obj", src, "-o", "prog.o"}
	if tc.CPU != "" {
		args = append(args, "-mcpu="+tc.CPU)
	}
	return run(dir, tc.LLC, args...)
}

// build turns the LLVM IR text into an executable in dir:
//
//	opt, llc as compileLL
//	cc -O2 prog.o runtime.o harness.o -o prog -lpthread -lm
//
// where runtime.o and harness.o come from the object cache (cObjects).
func (tc *Toolchain) build(dir, llText string) (string, error) {
	// A program built before from the same IR with the same tools is
	// taken from the cache.
	var cached string
	if cache := tc.cacheDir(); cache != "" {
		h := sha256.New()
		cpu := tc.CPU
		if cpu == "native" {
			cpu += " " + hostCPU()
		}
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%s\x00%s\x00%s\x00%s", toolIdentity(tc.LLC), toolIdentity(tc.Opt), cpu,
			toolIdentity(tc.CC), strings.Join(cFlags, " "), runtimeC, harnessC, llText)
		cached = filepath.Join(cache, fmt.Sprintf("prog-%x", h.Sum(nil)[:16]))
		if st, err := os.Stat(cached); err == nil && st.Mode().IsRegular() && st.Mode()&0o100 != 0 {
			return cached, nil
		}
	}
	exe, err := tc.buildFresh(dir, llText)
	if err != nil || cached == "" {
		return exe, err
	}
	if copyInto(exe, cached, 0o755) {
		return cached, nil
	}
	return exe, nil
}

// copyInto copies src to dst through a temporary file and a rename, so
// that a concurrent reader never sees a partial file.
func copyInto(src, dst string, mode os.FileMode) bool {
	data, err := os.ReadFile(src)
	if err != nil {
		return false
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), filepath.Base(dst)+"-*.tmp")
	if err != nil {
		return false
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr == nil && cerr == nil && os.Chmod(tmp.Name(), mode) == nil && os.Rename(tmp.Name(), dst) == nil {
		return true
	}
	os.Remove(tmp.Name())
	return false
}

func (tc *Toolchain) buildFresh(dir, llText string) (string, error) {
	if err := tc.compileLL(dir, llText); err != nil {
		return "", err
	}
	objs, err := tc.cObjects(dir, map[string]string{"runtime": runtimeC, "harness": harnessC})
	if err != nil {
		return "", err
	}
	args := append([]string{"-O2", "prog.o"}, objs["runtime"], objs["harness"])
	args = append(args, "-o", "prog", "-lpthread", "-lm")
	if err := run(dir, tc.CC, args...); err != nil {
		return "", err
	}
	return filepath.Join(dir, "prog"), nil
}

// cFlags compile the runtime and the harness: position-independent (the
// runtime also goes into shared libraries) and with hidden symbols but
// for those marked TF_API.
var cFlags = []string{"-O2", "-std=gnu11", "-fPIC", "-fvisibility=hidden", "-c"}

// cObjects compiles C sources (name -> text) to objects and returns their
// paths. The objects are kept in a cache directory ($TFC_CACHE_DIR, else
// tensorforge/ under the user's cache directory; TFC_CACHE_DIR=off: none), keyed by the text, the
// flags and the compiler, so a compile after the first one only links;
// when the cache cannot be used, they are compiled in dir.
func (tc *Toolchain) cObjects(dir string, sources map[string]string) (map[string]string, error) {
	out := map[string]string{}
	cache := tc.cacheDir()
	for name, text := range sources {
		if cache != "" {
			h := sha256.New()
			fmt.Fprintf(h, "%s\x00%s\x00%s\x00", toolIdentity(tc.CC), strings.Join(cFlags, " "), text)
			obj := filepath.Join(cache, fmt.Sprintf("%s-%x.o", name, h.Sum(nil)[:12]))
			if st, err := os.Stat(obj); err == nil && st.Size() > 0 {
				out[name] = obj
				continue
			}
			if err := tc.compileC(dir, name, text); err != nil {
				return nil, err
			}
			out[name] = filepath.Join(dir, name+".o")
			if copyInto(out[name], obj, 0o644) {
				out[name] = obj
			}
			continue
		}
		if err := tc.compileC(dir, name, text); err != nil {
			return nil, err
		}
		out[name] = filepath.Join(dir, name+".o")
	}
	return out, nil
}

// compileC writes name.c into dir and compiles it to name.o.
func (tc *Toolchain) compileC(dir, name, text string) error {
	if err := os.WriteFile(filepath.Join(dir, name+".c"), []byte(text), 0o644); err != nil {
		return err
	}
	args := append(append([]string(nil), cFlags...), name+".c", "-o", name+".o")
	return run(dir, tc.CC, args...)
}

// cacheDir is the object cache, created on demand; "" when there is none.
func (tc *Toolchain) cacheDir() string {
	base := os.Getenv("TFC_CACHE_DIR")
	if base == "off" {
		return ""
	}
	if base == "" {
		d, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		base = filepath.Join(d, "tensorforge")
	}
	dir := filepath.Join(base, "cpurt")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ""
	}
	return dir
}

// toolIdentity names a tool for the cache keys: its path, size and
// modification time.
func toolIdentity(path string) string {
	if path == "" {
		return ""
	}
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		p = path
	}
	if st, err := os.Stat(p); err == nil {
		return fmt.Sprintf("%s %d %d", p, st.Size(), st.ModTime().UnixNano())
	}
	return p
}

// hostCPU names the host's processor for the program cache (a program
// built for -mcpu=native runs only where its instructions exist): the
// model and feature flags of /proc/cpuinfo's first processor.
func hostCPU() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	var model, flags string
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			if model != "" || flags != "" {
				break // the end of the first processor
			}
			continue
		}
		switch strings.TrimSpace(k) {
		case "model name":
			model = strings.TrimSpace(v)
		case "flags":
			flags = strings.TrimSpace(v)
		}
	}
	return model + "|" + flags
}
