package web

import (
	"math"
	"regexp"
	"strings"
	"unicode/utf8"
)

// The room a chart's labels take. The SVG scales with its box, and
// app.css draws its labels at a larger size on phones (where the box is
// narrow) than on wide screens, so every label is laid out to fit at the
// larger size: chartLabelSize, in viewBox units. Widths are estimated
// from DejaVu Sans, the widest of the fonts the stylesheet names (the one
// Debian's system-ui resolves to); narrower fonts only leave more room.
const chartLabelSize = 20.0

// chartFrame places the plot in the viewBox: its left edge after the
// widest tick label and the step between n labels.
type chartFrame struct {
	left, step float64
	n          int
}

func newChartFrame(ticks []chartTick, n int) chartFrame {
	widest := 0.0
	for _, t := range ticks {
		widest = math.Max(widest, labelWidth(t.Label))
	}
	left := math.Max(chartMinLeft, math.Ceil(widest+2*chartLabelGap))
	fr := chartFrame{left: left, n: n}
	if n > 0 {
		fr.step = (chartW - left - chartRight) / float64(n)
	}
	return fr
}

// x is the centre of label i.
func (fr chartFrame) x(i int) float64 { return fr.left + fr.step*(float64(i)+0.5) }

// xLabels are at most maxXLabels of labels, evenly spread, each shortened
// to the room it has: the space to the next label, and twice the space to
// the nearer edge of the viewBox (it is centred on its place).
func (fr chartFrame) xLabels(labels []string) []chartTick {
	every := (len(labels) + maxXLabels - 1) / maxXLabels
	var out []chartTick
	for i := 0; i < len(labels); i += every {
		pos := fr.x(i)
		room := math.Min(fr.step*float64(every), 2*math.Min(pos, chartW-pos)) - chartLabelGap
		out = append(out, chartTick{Pos: f(pos), Label: fitLabel(labels[i], room)})
	}
	return out
}

// trailingZeros are the zero decimals of a number in a label.
var trailingZeros = regexp.MustCompile(`(\d)\.0+(\D|$)`)

// tickLabel is a value's label on the axis, whose ticks are round: "150
// ms" for "150.0 ms", "2 MiB" for "2.0 MiB" ("0.5 MiB" keeps its
// decimal). The table and the tips keep the value's own format.
func tickLabel(s string) string { return trailingZeros.ReplaceAllString(s, "$1$2") }

// fitLabel shortens s with an ellipsis until it is at most room wide.
func fitLabel(s string, room float64) string {
	if labelWidth(s) <= room {
		return s
	}
	r := []rune(s)
	for len(r) > 1 {
		r = r[:len(r)-1]
		if t := strings.TrimRight(string(r), " ") + "…"; labelWidth(t) <= room {
			return t
		}
	}
	return "…"
}

// labelWidth is the width of s at chartLabelSize, from DejaVu Sans's
// advance widths (in ems) by kind of character, rounded up.
func labelWidth(s string) float64 {
	w := 0.0
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			w += 0.64
		case strings.ContainsRune(" .,:;'!|", c):
			w += 0.34
		case strings.ContainsRune("iljtfr-()", c):
			w += 0.42
		case c == 'm' || c == 'w':
			w += 0.98
		case c == 'M' || c == 'W' || c == '%' || c == '—' || c == '…':
			w += 1.0
		case c >= 'a' && c <= 'z':
			w += 0.64
		case c < utf8.RuneSelf:
			w += 0.78
		default:
			w += 1.0
		}
	}
	return w * chartLabelSize
}
