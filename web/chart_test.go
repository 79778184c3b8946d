package web

import (
	"math"
	"strings"
	"testing"
)

// TestChartLayout checks the axis top, the bar geometry and the table of a
// small bar chart, and that a chart with nothing counted says so.
func TestChartLayout(t *testing.T) {
	cases := []struct {
		max, top float64
	}{{0, 4}, {3, 4}, {31, 40}, {50, 80}, {0.2, 0.2}, {999, 1000}, {561, 800}}
	for _, c := range cases {
		if got := niceMax(c.max); got < c.max || got-c.top > 1e-9 || c.top-got > 1e-9 {
			t.Errorf("niceMax(%v) = %v, want %v", c.max, got, c.top)
		}
	}
	v := layoutChart(chartSpec{ID: "c", Title: "T", Labels: []string{"a", "b"}, Series: []chartSeries{{"n", []float64{1, 4}}}})
	if v.Empty || len(v.Bars) != 2 || v.Bars[1].Y != f(chartTop) || v.Bars[1].H != f(chartPlotH) {
		t.Fatalf("bars %+v", v.Bars)
	}
	if got := v.YTicks[len(v.YTicks)-1].Label; got != "4" {
		t.Errorf("top tick %q, want 4", got)
	}
	if len(v.Table) != 2 || strings.Join(v.Table[1], " ") != "b 4" {
		t.Errorf("table %v", v.Table)
	}
	lines := layoutChart(chartSpec{ID: "l", Lines: true, Labels: []string{"a", "b", "c"},
		Series: []chartSeries{{"x", []float64{1, 2, 3}}, {"y", []float64{0, 0, 1}}}})
	if len(lines.Lines) != 2 || len(lines.Lines[0].Segments) != 1 || strings.Count(lines.Lines[0].Segments[0], ",") != 3 || lines.Lines[1].Class != "series-1" {
		t.Errorf("lines %+v", lines.Lines)
	}
	// No value (NaN) is a gap in a line, a dot when alone, "—" in the
	// table, and no bar.
	nan := math.NaN()
	gaps := layoutChart(chartSpec{ID: "g", Lines: true, Labels: []string{"a", "b", "c", "d", "e"},
		Series: []chartSeries{{"x", []float64{1, 2, nan, 3, nan}}}})
	if segs, dots := gaps.Lines[0].Segments, gaps.Lines[0].Dots; len(segs) != 1 || strings.Count(segs[0], ",") != 2 || len(dots) != 1 ||
		dots[0].Tip != "x, d: 3" {
		t.Errorf("a line with gaps: segments %q, dots %+v", segs, dots)
	}
	if got := gaps.Table[2][1]; got != "—" {
		t.Errorf("table cell of no value %q", got)
	}
	if bars := layoutChart(chartSpec{ID: "b", Labels: []string{"a", "b"}, Series: []chartSeries{{"n", []float64{nan, 2}}}}); len(bars.Bars) != 1 || bars.Empty {
		t.Errorf("bars with no value on one day %+v", bars.Bars)
	}
	if e := layoutChart(chartSpec{ID: "e", Labels: []string{"a"}, Series: []chartSeries{{"n", []float64{0}}}}); !e.Empty {
		t.Error("a chart of zeros is not marked empty")
	}
}

func TestBrowserName(t *testing.T) {
	cases := map[string]string{
		"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/120.0 Safari/537.36":    "Chrome on Linux",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Version/17.0 Mobile Safari/604.1": "Safari on iOS",
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:120.0) Gecko/20100101 Firefox/120.0":                             "Firefox on Windows",
		"Go-http-client/1.1": "Go-http-client/1.1",
	}
	for ua, want := range cases {
		if got := browserName(ua); got != want {
			t.Errorf("browserName(%q) = %q, want %q", ua, got, want)
		}
	}
}

func TestNiceBinaryMax(t *testing.T) {
	for m, want := range map[float64]float64{561: 800, 36352: 40 * 1024, 3 << 20: 4 << 20} {
		if got := niceBinaryMax(m); got != want {
			t.Errorf("niceBinaryMax(%v) = %v, want %v", m, got, want)
		}
	}
}
