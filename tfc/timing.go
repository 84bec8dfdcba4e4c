package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tensorforge/tensorforge/ir"
)

// The --timing report. The pass manager's own report gives seconds with
// four decimals, which prints 0.0000 for most passes of a small program;
// this one gives milliseconds with three decimals, and microseconds with
// one below a millisecond, in the layout of mlir-opt's --mlir-timing:
//
//	===-------------------------------------------------------------------------===
//	                         ... Execution time report ...
//	===-------------------------------------------------------------------------===
//	  Total Execution Time: 1.234 ms
//
//	  ----Wall Time----  ----Name----
//	     118.4 µs (  9.6%)  Canonicalizer (canonicalize)
//	      ...
//	      1.234 ms (100.0%)  Total

// passTimer measures the run of every pass of a pipeline.
type passTimer struct {
	names []string
	times []time.Duration
}

// timePipeline returns p with every pass wrapped to measure its run,
// and the timer that collects the measurements. Names, options and the
// pipeline's text (for crash reproducers) are unchanged.
func timePipeline(p ir.Pipeline) (ir.Pipeline, *passTimer) {
	t := &passTimer{}
	out := make(ir.Pipeline, len(p))
	for i, e := range p {
		info := *e.Info
		orig := e.Info.New
		title := info.Title
		if title == "" {
			title = info.Name
		}
		t.names = append(t.names, title+" ("+info.Name+")")
		t.times = append(t.times, 0)
		info.New = func(opts ir.PassOptions) (ir.Pass, error) {
			pass, err := orig(opts)
			if err != nil {
				return nil, err
			}
			return ir.PassFunc(func(m ir.Module, ctx *ir.PassContext) error {
				start := time.Now()
				defer func() { t.times[i] += time.Since(start) }()
				return pass.Run(m, ctx)
			}), nil
		}
		out[i] = ir.PipelineEntry{Info: &info, Options: e.Options}
	}
	return out, t
}

// report writes the timing report of one run that took total.
func (t *passTimer) report(w io.Writer, total time.Duration) {
	var sb strings.Builder
	sb.WriteString("===-------------------------------------------------------------------------===\n")
	sb.WriteString("                         ... Execution time report ...\n")
	sb.WriteString("===-------------------------------------------------------------------------===\n")
	fmt.Fprintf(&sb, "  Total Execution Time: %s\n\n", formatMillis(total))
	sb.WriteString("  ----Wall Time----  ----Name----\n")
	for i, name := range t.names {
		pct := 0.0
		if total > 0 {
			pct = 100 * float64(t.times[i]) / float64(total)
		}
		fmt.Fprintf(&sb, "    %12s (%5.1f%%)  %s\n", formatMillis(t.times[i]), pct, name)
	}
	fmt.Fprintf(&sb, "    %12s (100.0%%)  Total\n", formatMillis(total))
	io.WriteString(w, sb.String())
}

// formatMillis prints a duration in milliseconds with three decimals,
// or, below a millisecond, in microseconds with one.
func formatMillis(d time.Duration) string {
	if d < time.Millisecond {
		return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond))
	}
	return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond))
}
