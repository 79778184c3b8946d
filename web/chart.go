package web

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// A small server-rendered SVG chart: bars or lines over a list of labels
// (days, users), with a title and a description for screen readers and a
// table of the numbers beside it, so no script and no outside file is
// needed to read it.

// chartSeries is one named line or set of bars.
// A NaN value is no value: no bar, a gap in a line, "—" in the table (a
// hit rate on a day without requests).
type chartSeries struct {
	Name   string
	Values []float64
}

// chartSpec describes a chart before layout.
type chartSpec struct {
	ID, Title, Desc string
	// Lines draws each series as a line; otherwise the first series is bars.
	Lines  bool
	Labels []string
	Series []chartSeries
	// Format writes a value ("1.2 MB", "87 %"); default a whole number.
	Format func(float64) string
	// Binary steps the axis in powers of 1024 (for bytes), so the ticks
	// read 256 KiB rather than 244.1 KiB.
	Binary bool
}

// chartView is a chart laid out for the template: coordinates in the
// viewBox (chartW × chartH).
type chartView struct {
	ID, Title, Desc string
	// Left is the plot's left edge, after the widest tick label; LabelX
	// where those labels end.
	Left, LabelX string
	Bars         []chartBar
	Lines        []chartLine
	// YTicks are the grid lines with their labels; XLabels a few labels
	// under the axis, shortened to the room each has.
	YTicks  []chartTick
	XLabels []chartTick
	// Table is the data as rows: label, then one value per series.
	Head  []string
	Table [][]string
	Empty bool
}

type chartBar struct {
	X, Y, W, H string
	Tip        string
}

// chartLine is one series as polylines, one per run of days with a value
// (a run of one day is a dot).
type chartLine struct {
	Name, Class string
	Segments    []string
	Dots        []chartDot
}

// chartDot is a value with no neighbour to join: a marker.
type chartDot struct{ X, Y, Tip string }

type chartTick struct {
	Pos, Label string
}

// The viewBox and the plot's margins. The left margin is the widest tick
// label's (chartFrame); the top and bottom ones hold half a tick label and
// the labels under the axis at chartLabelSize, below the lowest tick's.
const (
	chartW, chartH             = 600.0, 230.0
	chartBottom                = 40.0
	chartTop, chartRight       = 14.0, 8.0
	chartPlotH                 = chartH - chartTop - chartBottom
	chartLabelGap              = 6.0
	chartMinLeft               = 32.0
	maxXLabels                 = 6
	chartSeriesClasses         = 4
	chartBarGap                = 0.2
	chartMaxBar                = 48.0
	chartWholeNumberMaxDecimal = 0
)

// f formats a coordinate.
func f(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// niceMax is the top of the axis for the largest value m: four grid
// steps of 1, 2, 2.5 or 5 times a power of ten (whole numbers for counts of at
// least 4), so every tick label is round.
func niceMax(m float64) float64 {
	if m <= 0 {
		return 4
	}
	step := m / 4
	p := math.Pow(10, math.Floor(math.Log10(step)))
	for _, s := range []float64{1, 2, 2.5, 5, 10} {
		// 2.5 only where it stays whole (250, not 2.5), for counts.
		if step <= s*p && (s != 2.5 || p >= 10) {
			return 4 * s * p
		}
	}
	return 40 * p
}

// layoutChart turns a spec into coordinates.
func layoutChart(s chartSpec) chartView {
	format := s.Format
	if format == nil {
		format = func(v float64) string { return strconv.FormatFloat(v, 'f', chartWholeNumberMaxDecimal, 64) }
	}
	v := chartView{ID: s.ID, Title: s.Title, Desc: s.Desc, Head: []string{""}}
	max, any := 0.0, false
	for _, se := range s.Series {
		v.Head = append(v.Head, se.Name)
		for _, x := range se.Values {
			if !math.IsNaN(x) {
				max = math.Max(max, x)
				any = any || x != 0
			}
		}
	}
	v.Empty = len(s.Labels) == 0 || !any
	top := niceMax(max)
	if s.Binary {
		top = niceBinaryMax(max)
	}
	y := func(x float64) float64 { return chartTop + chartPlotH*(1-x/top) }
	for i := 0; i <= 4; i++ {
		val := top * float64(i) / 4
		v.YTicks = append(v.YTicks, chartTick{Pos: f(y(val)), Label: tickLabel(format(val))})
	}
	fr := newChartFrame(v.YTicks, len(s.Labels))
	v.Left, v.LabelX = f(fr.left), f(fr.left-chartLabelGap)
	if len(s.Labels) == 0 {
		return v
	}
	v.XLabels = fr.xLabels(s.Labels)
	for i, l := range s.Labels {
		row := []string{l}
		for _, se := range s.Series {
			if x := at(se.Values, i); math.IsNaN(x) {
				row = append(row, "—")
			} else {
				row = append(row, format(x))
			}
		}
		v.Table = append(v.Table, row)
	}
	if !s.Lines && len(s.Series) > 0 {
		for i, l := range s.Labels {
			val := at(s.Series[0].Values, i)
			if math.IsNaN(val) {
				continue
			}
			// Why a cap: a chart of a day or two would draw slabs.
			w := math.Min(fr.step*(1-chartBarGap), chartMaxBar)
			v.Bars = append(v.Bars, chartBar{X: f(fr.x(i) - w/2), Y: f(y(val)),
				W: f(w), H: f(chartTop + chartPlotH - y(val)), Tip: l + ": " + format(val)})
		}
		return v
	}
	v.Lines = layoutLines(s, fr.x, y, format)
	return v
}

// layoutLines lays out each series as polylines over its runs of values
// and dots for lone values, x mapping a label's index to its place and y a
// value to its height.
func layoutLines(s chartSpec, x func(int) float64, y func(float64) float64, format func(float64) string) []chartLine {
	var lines []chartLine
	for k, se := range s.Series {
		l := chartLine{Name: se.Name, Class: fmt.Sprintf("series-%d", k%chartSeriesClasses)}
		var run []string
		var last chartDot
		end := func() {
			switch {
			case len(run) == 1:
				l.Dots = append(l.Dots, last)
			case len(run) > 1:
				l.Segments = append(l.Segments, strings.Join(run, " "))
			}
			run = nil
		}
		for i, lab := range s.Labels {
			val := at(se.Values, i)
			if math.IsNaN(val) {
				end()
				continue
			}
			last = chartDot{X: f(x(i)), Y: f(y(val)), Tip: se.Name + ", " + lab + ": " + format(val)}
			run = append(run, last.X+","+last.Y)
		}
		end()
		lines = append(lines, l)
	}
	return lines
}

// at is values[i], 0 past the end.
func at(values []float64, i int) float64 {
	if i < len(values) {
		return values[i]
	}
	return 0
}

// niceBinaryMax is niceMax in the binary unit (B, KiB, MiB, ...) that m
// falls in.
func niceBinaryMax(m float64) float64 {
	unit := 1.0
	for m/unit >= 1024 {
		unit *= 1024
	}
	return niceMax(m/unit) * unit
}
