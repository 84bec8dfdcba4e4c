package main

import (
	"io"
	"sort"

	tritonemit "github.com/tensorforge/tensorforge/emit/triton"
	"github.com/tensorforge/tensorforge/ir"
	"github.com/tensorforge/tensorforge/ir/target"
)

// emitKinds are the values `--emit` accepts, in the order the
// specification lists them. A kind without a registered emitter is
// answered with "not available".
var emitKinds = []string{"tir", "llvm", "so", "ptx", "triton", "metal", "tt", "dot"}

// emitRequest is what an emitter receives: the module after the pipeline
// and where its output goes.
type emitRequest struct {
	Module ir.Module
	Target *target.Target
	Print  ir.PrintOptions
	// Out receives the output of a single-file emitter; the driver writes
	// it to `-o FILE` or standard output.
	Out io.Writer
	// OutPath is the `-o` argument ("" for standard output). Emitters whose
	// outputDir is set write their files under it themselves.
	OutPath string
	// Diags receives located problems (an op the emitter cannot handle).
	Diags *ir.Diagnostics
	// ExactRounding is `--exact-rounding`, for the lowering an emitter runs
	// when the pipeline did not.
	ExactRounding bool
	// Tuned is the tuning cache read from TuneCache (nil for none);
	// TuneSeconds > 0 asks the Triton emitter to tune first.
	Tuned       *tritonemit.TuneCache
	TuneCache   string
	TuneSeconds float64
	// Log receives progress reports (the tuner's).
	Log io.Writer
}

// emitter produces one `--emit` kind. Each lives in its own emit_*.go file
// and registers itself from init.
type emitter struct {
	kind    string // the --emit value: "ptx"
	summary string
	// defaultLevel is the named pipeline run when the command line names no
	// pass, pipeline or -O level: "O2" for a backend, "" (nothing) for tir.
	defaultLevel string
	// level, when set, rewrites the pipeline of a named level (-O2) for
	// this kind: the options of its passes that suit this backend.
	level func(flag, pipeline string) string
	// outputDir means `-o` names a directory the emitter fills (several
	// files), so the driver writes nothing itself.
	outputDir bool
	emit      func(req *emitRequest) error
}

var emitters = map[string]*emitter{}

// registerEmitter makes an --emit kind available.
func registerEmitter(e *emitter) {
	if _, dup := emitters[e.kind]; dup {
		panic("tfc: emitter registered twice: " + e.kind)
	}
	emitters[e.kind] = e
}

// availableEmitKinds lists the registered kinds, in specification order
// first and any others by name.
func availableEmitKinds() []string {
	var out []string
	known := map[string]bool{}
	for _, k := range emitKinds {
		known[k] = true
		if emitters[k] != nil {
			out = append(out, k)
		}
	}
	var extra []string
	for k := range emitters {
		if !known[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	return append(out, extra...)
}

func init() {
	registerEmitter(&emitter{
		kind:    "tir",
		summary: "the IR after the pipeline, as text that parses back",
		emit: func(req *emitRequest) error {
			_, err := io.WriteString(req.Out, ir.Print(req.Module.Operation, req.Print))
			return err
		},
	})
}
