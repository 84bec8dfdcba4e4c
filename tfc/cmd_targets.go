package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/tensorforge/tensorforge/ir/target"
)

func init() {
	registerCommand(&command{
		name:    "targets",
		usage:   "tfc targets",
		summary: "list the machines --target accepts, with their figures",
		run: func(args []string, sio *stdio) int {
			if !noArgs("targets", args, sio) {
				return exitFailure
			}
			fmt.Fprint(sio.out, targetsText())
			return exitOK
		},
	})
}

// targetsText is one row per target, in the order of the target table.
func targetsText() string {
	var sb strings.Builder
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tALIASES\tFAMILY\tDRAM BANDWIDTH\tSCRATCHPAD\tCORES\tSOURCE")
	for _, t := range target.All() {
		aliases := strings.Join(target.Aliases(t.Name), ", ")
		if aliases == "" {
			aliases = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", t.Name, aliases, t.Family,
			formatBandwidth(t.DRAMBandwidth), formatBytes(t.ScratchpadBytes), t.Cores, t.Source)
	}
	tw.Flush()
	return sb.String()
}

// formatBandwidth prints bytes per second as `3.35 TB/s` or `409.6 GB/s`.
func formatBandwidth(bps float64) string {
	if bps >= 1e12 {
		return fmt.Sprintf("%.2f TB/s", bps/1e12)
	}
	return fmt.Sprintf("%.1f GB/s", bps/1e9)
}

// formatBytes prints a byte count with its binary unit: `232448 B (227 KiB)`.
func formatBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d B (%d MiB)", n, n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d B (%d KiB)", n, n>>10)
	}
	return fmt.Sprintf("%d B", n)
}
