package main

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/tensorforge/tensorforge/emit/cpurt"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
)

// The shared-library emitter builds the LLVM kernels and the CPU runtime
// into one library, and writes its C header beside it:
//
//	tfc --emit=so -o libmodel.so model.tir
//	libmodel.so   void NAME(buffers..., extents...) and tf_entry_NAME per function
//	libmodel.h    their commented prototypes
//
// (docs/cpu-backend.md, "The shared-library ABI"). It needs llc and a C
// compiler, like `tfc run`.
func init() {
	registerEmitter(&emitter{
		kind:         "so",
		summary:      "a shared library for the host CPU (C ABI: a function per func.func), written to -o FILE.so with FILE.h beside it",
		defaultLevel: "O2",
		emit:         emitSharedLibrary,
	})
}

func emitSharedLibrary(req *emitRequest) error {
	if req.OutPath == "" || req.OutPath == "-" {
		return ir.Errorf(ir.Location{}, "--emit=so writes a shared library, not text: name the file with -o FILE.so (it is not written to standard output)")
	}
	if t := req.Target; t != nil && t.Family != target.CPU {
		return ir.Errorf(ir.Location{}, "--emit=so builds for the host CPU, not target '%s' (name --target=cpu)", t.Name)
	}
	if err := lowerForCPU(req.Module, req.Target, req.ExactRounding); err != nil {
		return err
	}
	header, err := cpurt.SharedHeader(req.Module, filepath.Base(req.OutPath))
	if err != nil {
		return err
	}
	tc, err := cpurt.FindToolchain()
	if err != nil {
		return ir.Errorf(ir.Location{}, "--emit=so: %v", err)
	}
	// The library is built in a temporary directory and handed to the
	// driver, which writes it to -o.
	dir, err := os.MkdirTemp("", "tfc-emit-so-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	lib := filepath.Join(dir, "lib.so")
	if err := cpurt.BuildShared(req.Module, lib, cpurt.Options{Toolchain: tc}); err != nil {
		return err
	}
	data, err := os.ReadFile(lib)
	if err != nil {
		return err
	}
	if _, err := req.Out.Write(data); err != nil {
		return err
	}
	hpath := headerPath(req.OutPath)
	if err := os.WriteFile(hpath, []byte(header), 0o644); err != nil {
		return ir.Errorf(ir.Location{}, "cannot write '%s': %s", hpath, sysError(err, "no such directory"))
	}
	return nil
}

// headerPath is FILE.h for -o FILE.so (or FILE.h beside any other name).
func headerPath(out string) string {
	return strings.TrimSuffix(out, ".so") + ".h"
}
