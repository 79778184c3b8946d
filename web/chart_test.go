package web

import (
	"fmt"
	"math"
	"slices"
	"strconv"
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

// TestChartLabelsFit: tick labels drop the zero decimals of round ticks
// and fit left of the plot at the phone size, "1000 ms" and "0.5 MiB"
// included, and labels under the axis are shortened to fit between their
// neighbours and the edges. (TestAdminPhone in e2e checks them drawn.)
func TestChartLabelsFit(t *testing.T) {
	ms := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + " ms" }
	bytes := func(v float64) string { return humanBytes(int64(v)) }
	for _, c := range []struct {
		name string
		spec chartSpec
		want []string
	}{
		{"render time", chartSpec{Labels: []string{"a"}, Series: []chartSeries{{"ms", []float64{820}}}, Format: ms},
			[]string{"0 ms", "250 ms", "500 ms", "750 ms", "1000 ms"}},
		{"bytes", chartSpec{Labels: []string{"a"}, Series: []chartSeries{{"b", []float64{1.5 * (1 << 20)}}}, Format: bytes, Binary: true},
			[]string{"0 B", "512 KiB", "1 MiB", "1.5 MiB", "2 MiB"}},
		{"gigabytes", chartSpec{Labels: []string{"a"}, Series: []chartSeries{{"b", []float64{3.6 * (1 << 30)}}}, Format: bytes, Binary: true},
			[]string{"0 B", "1 GiB", "2 GiB", "3 GiB", "4 GiB"}},
	} {
		v := layoutChart(c.spec)
		var got []string
		labelX, _ := strconv.ParseFloat(v.LabelX, 64)
		for _, tk := range v.YTicks {
			got = append(got, tk.Label)
			if w := labelWidth(tk.Label); labelX-w < 0 {
				t.Errorf("%s: tick %q is %.0f wide, ending at %.0f: cut by the left edge", c.name, tk.Label, w, labelX)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: ticks %q, want %q", c.name, got, c.want)
		}
	}
	var names []string
	for i := range 12 {
		names = append(names, fmt.Sprintf("photographer-with-a-long-name-%d", i))
	}
	v := layoutChart(chartSpec{Labels: names, Series: []chartSeries{{"b", make([]float64, 12)}}})
	right := 0.0
	for _, l := range v.XLabels {
		pos, _ := strconv.ParseFloat(l.Pos, 64)
		w := labelWidth(l.Label)
		if pos-w/2 < right || pos+w/2 > chartW || !strings.HasSuffix(l.Label, "…") {
			t.Errorf("label %q at %.0f (%.0f wide) overlaps the one before (ending at %.0f), the edge or is not shortened", l.Label, pos, w, right)
		}
		right = pos + w/2
	}
}
