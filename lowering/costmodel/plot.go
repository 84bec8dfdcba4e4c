package costmodel

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// PlotFormats are the image formats WritePlot writes.
var PlotFormats = []string{"svg", "png"}

// PlotPoint is a labelled point of a roofline plot.
type PlotPoint struct {
	Label string
	Point Point
}

// KernelPoints places kernels on m's roofline for a plot. Kernels a log-log
// plot cannot show, with no FLOPs (intensity 0) or no bytes (intensity
// infinite), are returned by name in skipped.
func KernelPoints(m Machine, ks []Kernel) (pts []PlotPoint, skipped []string) {
	for i := range ks {
		p := m.PlaceKernel(&ks[i])
		if p.Intensity <= 0 || math.IsInf(p.Intensity, 0) {
			skipped = append(skipped, ks[i].Name)
			continue
		}
		pts = append(pts, PlotPoint{Label: ks[i].Name, Point: p})
	}
	return pts, skipped
}

// WritePlot draws m's roofline on log-log axes, arithmetic intensity
// (FLOP/B) across and attainable throughput (TFLOP/s) up: the memory roof
// rising at the DRAM bandwidth, the compute roof flat at the peak, the
// ridge point where they meet, and the points, labelled. Points at about
// the same intensity share one marker and one label. format is "svg" or
// "png"; the output is the same for the same input.
func WritePlot(w io.Writer, m Machine, title string, pts []PlotPoint, format string) error {
	if format != "svg" && format != "png" {
		return fmt.Errorf("cannot draw a plot as '%s' (formats: %s)", format, strings.Join(PlotFormats, ", "))
	}
	ridge := m.Ridge()
	lo, hi := ridge, ridge
	for _, p := range pts {
		lo, hi = math.Min(lo, p.Point.Intensity), math.Max(hi, p.Point.Intensity)
	}
	// a decade of margin on both sides, on decade boundaries
	xmin := math.Pow(10, math.Floor(math.Log10(lo))-1)
	xmax := math.Pow(10, math.Ceil(math.Log10(hi))+1)
	tflops := func(x float64) float64 { return math.Min(m.PeakFLOPS, x*m.Bandwidth) / 1e12 }

	// The axes are linear in log10 of the values, with decade ticks
	// labelled by the values: gonum's own log scale centres the axis labels
	// in data units, which leaves a large blank band above the plot.
	ylo := math.Floor(math.Log10(tflops(xmin)))
	yhi := math.Ceil(math.Log10(m.PeakFLOPS / 1e12 * 1.5))
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "arithmetic intensity (FLOP/B)"
	p.Y.Label.Text = "attainable throughput (TFLOP/s)"
	p.X.Min, p.X.Max = math.Log10(xmin), math.Log10(xmax)
	p.Y.Min, p.Y.Max = ylo, yhi
	p.X.Tick.Marker = decadeTicks{}
	p.Y.Tick.Marker = decadeTicks{}
	p.Add(plotter.NewGrid())
	lg := func(x, y float64) plotter.XY { return plotter.XY{X: math.Log10(x), Y: math.Log10(y)} }

	roofColor := color.RGBA{R: 31, G: 119, B: 180, A: 255}
	memRoof, err := plotter.NewLine(plotter.XYs{lg(xmin, tflops(xmin)), lg(ridge, tflops(ridge))})
	if err != nil {
		return err
	}
	memRoof.LineStyle.Width, memRoof.LineStyle.Color = vg.Points(2), roofColor
	computeRoof, err := plotter.NewLine(plotter.XYs{lg(ridge, tflops(ridge)), lg(xmax, tflops(xmax))})
	if err != nil {
		return err
	}
	computeRoof.LineStyle.Width, computeRoof.LineStyle.Color = vg.Points(2), color.RGBA{R: 214, G: 39, B: 40, A: 255}
	ridgeDrop, err := plotter.NewLine(plotter.XYs{{X: math.Log10(ridge), Y: ylo}, lg(ridge, tflops(ridge))})
	if err != nil {
		return err
	}
	ridgeDrop.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	ridgeDrop.LineStyle.Color = color.Gray{Y: 110}
	p.Add(memRoof, computeRoof, ridgeDrop)
	p.Legend.Add("memory roof, "+FormatBandwidth(m.Bandwidth), memRoof)
	p.Legend.Add("compute roof, "+FormatCompute(m.PeakFLOPS)+" ("+m.Precision+")", computeRoof)
	// the upper left corner is above the memory roof, where nothing is drawn
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(12), -vg.Points(8)
	p.Legend.Padding = vg.Points(3)

	ridgeMark, err := plotter.NewScatter(plotter.XYs{lg(ridge, tflops(ridge))})
	if err != nil {
		return err
	}
	ridgeMark.GlyphStyle = draw.GlyphStyle{Shape: draw.BoxGlyph{}, Radius: vg.Points(4), Color: color.Gray{Y: 60}}
	ridgeLabel, err := plotter.NewLabels(plotter.XYLabels{
		XYs:    plotter.XYs{lg(ridge, tflops(ridge))},
		Labels: []string{"ridge " + FormatIntensity(ridge)},
	})
	if err != nil {
		return err
	}
	ridgeLabel.Offset = vg.Point{X: vg.Points(-30), Y: vg.Points(8)}
	p.Add(ridgeMark, ridgeLabel)

	if groups := groupPoints(pts); len(groups) > 0 {
		// Points sit on the roof. Below and to the right of a point is
		// free; so is above and to the left of one on the memory roof, which
		// rises to the right. A label goes below unless the point's left
		// neighbour, less than a factor 3 away, has its label there.
		var xys, below, above plotter.XYs
		var belowText, aboveText []string
		prevBelow := false
		for i, g := range groups {
			xy := lg(g.x, tflops(g.x))
			xys = append(xys, xy)
			if i > 0 && prevBelow && g.x < ridge && g.x < 3*groups[i-1].x {
				above, aboveText = append(above, xy), append(aboveText, g.label())
				prevBelow = false
				continue
			}
			below, belowText = append(below, xy), append(belowText, g.label())
			prevBelow = true
		}
		marks, err := plotter.NewScatter(xys)
		if err != nil {
			return err
		}
		marks.GlyphStyle = draw.GlyphStyle{Shape: draw.CircleGlyph{}, Radius: vg.Points(4), Color: color.RGBA{R: 44, G: 160, B: 44, A: 255}}
		p.Add(marks)
		p.Legend.Add("kernels", marks)
		for _, side := range []struct {
			xys    plotter.XYs
			text   []string
			offset vg.Point
			align  text.XAlignment
		}{
			{below, belowText, vg.Point{X: vg.Points(6), Y: vg.Points(-14)}, draw.XLeft},
			{above, aboveText, vg.Point{X: vg.Points(-6), Y: vg.Points(5)}, draw.XRight},
		} {
			if len(side.xys) == 0 {
				continue
			}
			names, err := plotter.NewLabels(plotter.XYLabels{XYs: side.xys, Labels: side.text})
			if err != nil {
				return err
			}
			names.Offset = side.offset
			for i := range names.TextStyle {
				names.TextStyle[i].XAlign = side.align
			}
			p.Add(names)
		}
	}

	p.Title.Padding = vg.Points(6)
	c, err := draw.NewFormattedCanvas(9*vg.Inch, 6*vg.Inch, format)
	if err != nil {
		return err
	}
	// a margin all round, so that the title and the last tick labels are
	// not on the edge of the image
	margin := vg.Points(10)
	p.Draw(draw.Crop(draw.New(c), margin, -margin, margin, -margin))
	_, err = c.WriteTo(w)
	return err
}

// pointGroup is the points drawn as one marker.
type pointGroup struct {
	x      float64
	labels []string
}

func (g pointGroup) label() string {
	if len(g.labels) <= 3 {
		return strings.Join(g.labels, ", ")
	}
	return fmt.Sprintf("%s, %s and %d more", g.labels[0], g.labels[1], len(g.labels)-2)
}

// groupPoints merges points whose intensities differ by less than 5%, which
// a plot would draw on top of each other, in order of intensity; a group's
// labels keep the order of pts.
func groupPoints(pts []PlotPoint) []pointGroup {
	order := make([]int, len(pts))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return pts[order[i]].Point.Intensity < pts[order[j]].Point.Intensity })
	var out []pointGroup
	var members [][]int
	for _, i := range order {
		x := pts[i].Point.Intensity
		if n := len(out); n > 0 && x <= out[n-1].x*1.05 {
			members[n-1] = append(members[n-1], i)
			continue
		}
		out = append(out, pointGroup{x: x})
		members = append(members, []int{i})
	}
	for g, idx := range members {
		sort.Ints(idx)
		for _, i := range idx {
			out[g].labels = append(out[g].labels, pts[i].Label)
		}
	}
	return out
}

// decadeTicks marks an axis in log10 units: a labelled major tick at every
// integer (a decade: "0.01", "1", "1000") and minor ticks at the logs of
// 2..9 times it.
type decadeTicks struct{}

func (decadeTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for d := math.Floor(lo); d <= math.Ceil(hi); d++ {
		if d >= lo && d <= hi {
			ts = append(ts, plot.Tick{Value: d, Label: strconv.FormatFloat(math.Pow(10, d), 'f', -1, 64)})
		}
		for i := 2; i < 10; i++ {
			if v := d + math.Log10(float64(i)); v >= lo && v <= hi {
				ts = append(ts, plot.Tick{Value: v})
			}
		}
	}
	return ts
}
