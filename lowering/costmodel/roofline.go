package costmodel

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/tensorforge/tensorforge/ir/target"
)

// Machine is the roofline of one machine at one precision: its peak dense
// compute rate and its DRAM bandwidth, the two ceilings a kernel can hit.
type Machine struct {
	Name        string // the target's name: "h100"
	Description string
	Precision   string  // the compute precision of PeakFLOPS: "bf16"
	PeakFLOPS   float64 // FLOP/s
	Bandwidth   float64 // bytes/s
	Source      string  // where the figures come from
}

// DefaultPrecision is the precision a roofline uses unless told: f32 on a
// CPU, bf16 on the accelerators, whose matrix units run it at full rate.
func DefaultPrecision(t *target.Target) string {
	if t.Family == target.CPU {
		return "f32"
	}
	return "bf16"
}

// MachineFor returns the roofline of target t at a precision ("" for
// DefaultPrecision). A precision the target has no figure for is an error
// that lists the ones it has.
func MachineFor(t *target.Target, precision string) (Machine, error) {
	if precision == "" {
		precision = DefaultPrecision(t)
	}
	peak, ok := t.PeakFLOPS[precision]
	if !ok {
		var known []string
		for p := range t.PeakFLOPS {
			known = append(known, p)
		}
		sort.Strings(known)
		return Machine{}, fmt.Errorf("target '%s' has no peak compute figure for precision '%s' (known: %s)",
			t.Name, precision, strings.Join(known, ", "))
	}
	return Machine{Name: t.Name, Description: t.Description, Precision: precision,
		PeakFLOPS: peak, Bandwidth: t.DRAMBandwidth, Source: t.Source}, nil
}

// Ridge returns the ridge point: the arithmetic intensity (FLOP/byte) at
// which a kernel stops being bound by memory, peak / bandwidth.
func (m Machine) Ridge() float64 { return m.PeakFLOPS / m.Bandwidth }

// Bound is the ceiling a kernel hits.
type Bound string

const (
	// MemoryBound kernels are limited by DRAM bandwidth: intensity < ridge.
	MemoryBound Bound = "memory"
	// ComputeBound kernels are limited by peak compute: intensity >= ridge.
	ComputeBound Bound = "compute"
)

// Point is a kernel (or any amount of work) placed on a roofline.
type Point struct {
	FLOPs, Bytes float64
	// Intensity is FLOPs / Bytes (FLOP/byte); +Inf when Bytes is 0.
	Intensity float64
	// Attainable is min(peak, Intensity * bandwidth) in FLOP/s.
	Attainable float64
	Bound      Bound
	// Time is the least time the machine needs, in seconds:
	// max(FLOPs / peak, Bytes / bandwidth).
	Time float64
}

// Place puts flops of work over bytes of DRAM traffic on the roofline.
// Both must be finite and non-negative.
//
//	on blackhole-p150 at bf16 (332 TFLOP/s, 512 GB/s; ridge 648.4 FLOP/B),
//	5e7 FLOP over 1e6 B: intensity 50 FLOP/B, attainable 50 * 512e9 = 25.6 TFLOP/s,
//	memory bound, time max(5e7 / 332e12, 1e6 / 512e9) = 1.953 us
func (m Machine) Place(flops, bytes float64) Point {
	p := Point{FLOPs: flops, Bytes: bytes}
	switch {
	case bytes > 0:
		p.Intensity = flops / bytes
	case flops > 0:
		p.Intensity = math.Inf(1)
	}
	p.Attainable = math.Min(m.PeakFLOPS, p.Intensity*m.Bandwidth)
	p.Bound = MemoryBound
	if p.Intensity >= m.Ridge() {
		p.Bound = ComputeBound
	}
	p.Time = math.Max(flops/m.PeakFLOPS, bytes/m.Bandwidth)
	return p
}

// PlaceKernel places a kernel (its FLOPs must be known).
func (m Machine) PlaceKernel(k *Kernel) Point {
	return m.Place(float64(k.FLOPs), float64(k.Bytes()))
}
