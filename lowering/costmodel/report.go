package costmodel

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// This file prints what the model finds, in fixed units so that the same
// program always prints the same text: bytes and FLOPs as exact integers,
// bandwidth in GB/s, compute in TFLOP/s, intensity in FLOP/B, time in us.

// FormatBandwidth prints bytes/s in GB/s: "3350.0 GB/s".
func FormatBandwidth(bps float64) string { return fmt.Sprintf("%.1f GB/s", bps/1e9) }

// FormatCompute prints FLOP/s in TFLOP/s: "989.000 TFLOP/s".
func FormatCompute(flops float64) string { return fmt.Sprintf("%.3f TFLOP/s", flops/1e12) }

// FormatIntensity prints FLOP/byte: "50.000 FLOP/B", "inf FLOP/B".
func FormatIntensity(ai float64) string { return formatIntensity(ai) + " FLOP/B" }

func formatIntensity(ai float64) string {
	if math.IsInf(ai, 1) {
		return "inf"
	}
	return fmt.Sprintf("%.3f", ai)
}

// FormatTime prints seconds in microseconds: "1.953 us".
func FormatTime(s float64) string { return fmt.Sprintf("%.3f us", s*1e6) }

// FormatCount prints a FLOP or byte count given as a float exactly when it
// is integral: "50000000", else with three decimals.
func FormatCount(n float64) string {
	if n == math.Trunc(n) && math.Abs(n) < 1e18 {
		return fmt.Sprintf("%.0f", n)
	}
	return fmt.Sprintf("%.3f", n)
}

// WriteRoofline prints one amount of work placed on a machine's roofline:
//
//	machine               blackhole-p150 (Tenstorrent Blackhole p150)
//	precision             bf16
//	peak compute          332.000 TFLOP/s
//	DRAM bandwidth        512.0 GB/s
//	ridge point           648.438 FLOP/B
//	work                  50000000 FLOP
//	DRAM traffic          1000000 B
//	arithmetic intensity  50.000 FLOP/B
//	attainable            25.600 TFLOP/s
//	bound                 memory (intensity below the ridge point)
//	minimal time          1.953 us
func WriteRoofline(w io.Writer, m Machine, p Point) {
	why := "intensity below the ridge point"
	if p.Bound == ComputeBound {
		why = "intensity at or above the ridge point"
	}
	rows := [][2]string{
		{"machine", m.Name + " (" + m.Description + ")"},
		{"precision", m.Precision},
		{"peak compute", FormatCompute(m.PeakFLOPS)},
		{"DRAM bandwidth", FormatBandwidth(m.Bandwidth)},
		{"ridge point", FormatIntensity(m.Ridge())},
		{"work", FormatCount(p.FLOPs) + " FLOP"},
		{"DRAM traffic", FormatCount(p.Bytes) + " B"},
		{"arithmetic intensity", FormatIntensity(p.Intensity)},
		{"attainable", FormatCompute(p.Attainable)},
		{"bound", string(p.Bound) + " (" + why + ")"},
		{"minimal time", FormatTime(p.Time)},
	}
	if m.Source != "" {
		rows = append(rows, [2]string{"figures from", m.Source})
	}
	for _, r := range rows {
		fmt.Fprintf(w, "%-22s%s\n", r[0], r[1])
	}
}

// MachineLine describes a machine's roofline in one line:
// "h100 (NVIDIA H100 SXM5), bf16: peak 989.000 TFLOP/s, DRAM 3350.0 GB/s, ridge 295.224 FLOP/B".
func MachineLine(m Machine) string {
	return fmt.Sprintf("%s (%s), %s: peak %s, DRAM %s, ridge %s", m.Name, m.Description, m.Precision,
		FormatCompute(m.PeakFLOPS), FormatBandwidth(m.Bandwidth), FormatIntensity(m.Ridge()))
}

// WriteKernelRoofline prints the kernels of a program on a machine's
// roofline, one row each, and a total whose time is the sum of the
// kernels' (they run one after another). Every kernel's FLOPs must be
// known.
//
//	kernel           kind  FLOP       DRAM B     FLOP/B  TFLOP/s  bound   time us  ops
//	rms_silu_mul_k0  row   503316480  201342976  2.500   8.375    memory  60.102   cast, mul, ...
//	total                  503316480  201342976  2.500                    60.102
func WriteKernelRoofline(w io.Writer, m Machine, ks []Kernel) {
	t := newTable("kernel", "kind", "FLOP>", "DRAM B>", "FLOP/B>", "TFLOP/s>", "bound", "time us>", "ops")
	var time float64
	for i := range ks {
		k := &ks[i]
		p := m.PlaceKernel(k)
		time += p.Time
		t.row(k.Name, kindOf(k), fmt.Sprint(k.FLOPs), fmt.Sprint(k.Bytes()), formatIntensity(p.Intensity),
			fmt.Sprintf("%.3f", p.Attainable/1e12), string(p.Bound), fmt.Sprintf("%.3f", p.Time*1e6), opsOf(k))
	}
	tot := Sum(ks)
	all := m.Place(float64(tot.FLOPs), float64(tot.Bytes()))
	t.row("total", "", fmt.Sprint(tot.FLOPs), fmt.Sprint(tot.Bytes()), formatIntensity(all.Intensity),
		"", "", fmt.Sprintf("%.3f", time*1e6), "")
	t.write(w)
}

// WriteTraffic prints the DRAM traffic of each kernel and the total:
//
//	kernel           kind  read B     written B  total B    ops
//	rms_silu_mul_k0  row   134234112  67108864   201342976  cast, mul, ...
//	total                  134234112  67108864   201342976
func WriteTraffic(w io.Writer, ks []Kernel) {
	t := newTable("kernel", "kind", "read B>", "written B>", "total B>", "ops")
	for i := range ks {
		k := &ks[i]
		t.row(k.Name, kindOf(k), fmt.Sprint(k.BytesRead()), fmt.Sprint(k.BytesWritten()), fmt.Sprint(k.Bytes()), opsOf(k))
	}
	tot := Sum(ks)
	t.row("total", "", fmt.Sprint(tot.Read), fmt.Sprint(tot.Written), fmt.Sprint(tot.Bytes()), "")
	t.write(w)
}

// kindOf is a kernel's kind, with a row kernel's schedule.
func kindOf(k *Kernel) string {
	if k.Schedule != "" {
		return k.Kind + " " + k.Schedule
	}
	return k.Kind
}

// opsOf lists a kernel's ops, or "-".
func opsOf(k *Kernel) string {
	if len(k.Ops) == 0 {
		return "-"
	}
	return strings.Join(k.Ops, ", ")
}

// table is a text table: columns padded to their widest cell, numbers
// (a header ending in '>') aligned right, two spaces between columns,
// no trailing blanks.
type table struct {
	header []string
	right  []bool
	rows   [][]string
}

func newTable(header ...string) *table {
	t := &table{}
	for _, h := range header {
		r := strings.HasSuffix(h, ">")
		t.header = append(t.header, strings.TrimSuffix(h, ">"))
		t.right = append(t.right, r)
	}
	return t
}

func (t *table) row(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer) {
	widths := make([]int, len(t.header))
	for _, r := range append([][]string{t.header}, t.rows...) {
		for i, c := range r {
			widths[i] = max(widths[i], len(c))
		}
	}
	for _, r := range append([][]string{t.header}, t.rows...) {
		var sb strings.Builder
		for i, c := range r {
			if i > 0 {
				sb.WriteString("  ")
			}
			pad := strings.Repeat(" ", widths[i]-len(c))
			if t.right[i] {
				sb.WriteString(pad + c)
			} else {
				sb.WriteString(c + pad)
			}
		}
		io.WriteString(w, strings.TrimRight(sb.String(), " ")+"\n")
	}
}
