package web

import (
	"context"
	"math"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vitrine/vitrine/api"
)

// usageDays is how many days the charts and the keys page show.
const usageDays = 30

// usageRows is GET /usage, with the sums the charts draw.
type usageRows struct{ api.Usage }

// usage reads one metric's per-day counters over the last n days.
func (q *request) usage(ctx context.Context, metric string, n int) (usageRows, error) {
	var rows usageRows
	err := q.api.getJSON(ctx, "/usage", url.Values{"metric": {metric}, "days": {strconv.Itoa(n)}}, &rows)
	return rows, err
}

// lastDays returns the last n days, oldest first, as YYYY-MM-DD.
func lastDays(now time.Time, n int) []string {
	days := make([]string, n)
	for i := range days {
		days[i] = now.UTC().AddDate(0, 0, i-n+1).Format(time.DateOnly)
	}
	return days
}

// perDay sums a metric's rows per day (over every label the keep function
// accepts; nil keeps all) in the order of days.
func (r usageRows) perDay(days []string, keep func(label string) bool) []float64 {
	idx := make(map[string]int, len(days))
	for i, d := range days {
		idx[d] = i
	}
	out := make([]float64, len(days))
	for _, row := range r.Days {
		if i, ok := idx[row.Day]; ok && (keep == nil || keep(row.Label)) {
			out[i] += float64(row.Value)
		}
	}
	return out
}

// topLabels returns the n labels with the largest sums over days, largest
// first, and their sums.
func (r usageRows) topLabels(days []string, n int) ([]string, []float64) {
	in := make(map[string]bool, len(days))
	for _, d := range days {
		in[d] = true
	}
	sums := map[string]float64{}
	for _, row := range r.Days {
		if in[row.Day] {
			sums[row.Label] += float64(row.Value)
		}
	}
	names := make([]string, 0, len(sums))
	for l := range sums {
		names = append(names, l)
	}
	sort.Slice(names, func(i, j int) bool {
		if sums[names[i]] != sums[names[j]] {
			return sums[names[i]] > sums[names[j]]
		}
		return names[i] < names[j]
	})
	names = names[:min(n, len(names))]
	vals := make([]float64, len(names))
	for i, l := range names {
		vals[i] = sums[l]
	}
	return names, vals
}

// shortDays turns YYYY-MM-DD labels into MM-DD.
func shortDays(days []string) []string {
	out := make([]string, len(days))
	for i, d := range days {
		out[i] = d[5:]
	}
	return out
}

// overviewCharts builds the overview's charts from the usage counters;
// none when the key may not read them.
func (q *request) overviewCharts(ctx context.Context, bytesByUser map[string]int64) ([]chartView, error) {
	if !q.mayAny("usage.get") {
		return nil, nil
	}
	days := lastDays(q.ui.cfg.Now(), usageDays)
	read := map[string]usageRows{}
	for _, m := range []string{"uploads", "upload.bytes", "variant.hits", "variant.misses", "render.us", "renders", "requests", "ratelimit.hits"} {
		r, err := q.usage(ctx, m, usageDays)
		if err != nil {
			return nil, err
		}
		read[m] = r
	}
	days = fromFirstData(days, read)
	labels := shortDays(days)
	uploads, bytes := read["uploads"].perDay(days, nil), read["upload.bytes"].perDay(days, nil)
	hits, misses := read["variant.hits"].perDay(days, nil), read["variant.misses"].perDay(days, nil)
	renderUS, renders := read["render.us"].perDay(days, nil), read["renders"].perDay(days, nil)
	// A day without variant requests (or renders) has no rate (or
	// average), drawn as a gap, not as 0.
	rate, ms := make([]float64, len(days)), make([]float64, len(days))
	for i := range days {
		rate[i], ms[i] = math.NaN(), math.NaN()
		if t := hits[i] + misses[i]; t > 0 {
			rate[i] = 100 * hits[i] / t
		}
		if renders[i] > 0 {
			ms[i] = renderUS[i] / renders[i] / 1000
		}
	}
	class := func(lo, hi int) func(string) bool {
		return func(l string) bool { n, _ := strconv.Atoi(l); return n >= lo && n <= hi }
	}
	reqs := read["requests"]
	charts := []chartSpec{
		{ID: "c-uploads", Title: "Uploads per day", Labels: labels, Series: []chartSeries{{"Uploads", uploads}}},
		{ID: "c-bytes", Title: "Bytes uploaded per day", Labels: labels, Series: []chartSeries{{"Bytes", bytes}},
			Format: func(v float64) string { return humanBytes(int64(v)) }, Binary: true},
		{ID: "c-hits", Title: "Variant cache hit rate", Lines: true, Labels: labels, Series: []chartSeries{{"Hit rate", rate}},
			Format: func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) + " %" }},
		{ID: "c-render", Title: "Average render time of a cache miss", Labels: labels, Series: []chartSeries{{"Render time", ms}},
			Format: func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + " ms" }},
		{ID: "c-requests", Title: "Requests and errors by status", Lines: true, Labels: labels, Series: []chartSeries{
			{"2xx and 3xx", reqs.perDay(days, class(100, 399))},
			{"4xx", reqs.perDay(days, class(400, 499))},
			{"5xx", reqs.perDay(days, class(500, 599))},
		}},
	}
	if names := sortedUsers(bytesByUser); len(names) > 0 {
		if len(names) > 12 {
			names = names[:12]
		}
		vals := make([]float64, len(names))
		for i, n := range names {
			vals[i] = float64(bytesByUser[n])
		}
		charts = append(charts, chartSpec{ID: "c-storage", Title: "Storage per user", Labels: names,
			Series: []chartSeries{{"Bytes", vals}}, Format: func(v float64) string { return humanBytes(int64(v)) }, Binary: true})
	}
	if names, vals := read["ratelimit.hits"].topLabels(days, 12); len(names) > 0 {
		charts = append(charts, chartSpec{ID: "c-ratelimited", Title: "Requests refused by rate limits, per key",
			Labels: names, Series: []chartSeries{{"Refused", vals}}})
	}
	out := make([]chartView, len(charts))
	for i, c := range charts {
		c.Desc = describe(c)
		out[i] = layoutChart(c)
	}
	return out, nil
}

// fromFirstData drops the days (oldest first) before the first day any of
// the counters has a value, so that days before the service counted
// anything are not drawn as zeros; at least the last day stays.
func fromFirstData(days []string, read map[string]usageRows) []string {
	first := len(days) - 1
	for _, r := range read {
		for _, row := range r.Days {
			if i := slices.Index(days, row.Day); i >= 0 && i < first && row.Value != 0 {
				first = i
			}
		}
	}
	return days[first:]
}

// describe summarises a chart in words for its <desc>: per series the
// total (or the last value for rates) and the highest label.
func describe(c chartSpec) string {
	format := c.Format
	if format == nil {
		format = func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }
	}
	s := c.Title + ", " + c.Labels[0] + " to " + c.Labels[len(c.Labels)-1] + "."
	for _, se := range c.Series {
		total, best, bestAt := 0.0, 0.0, ""
		for i, v := range se.Values {
			if math.IsNaN(v) {
				continue
			}
			total += v
			if v > best {
				best, bestAt = v, c.Labels[i]
			}
		}
		if bestAt == "" {
			s += " " + se.Name + ": none."
			continue
		}
		if !c.Lines {
			s += " " + se.Name + ": " + format(total) + " in all;"
		}
		s += " " + se.Name + " highest " + format(best) + " on " + bestAt + "."
	}
	return s
}

// sortedUsers orders user names for the storage chart, biggest first.
func sortedUsers(bytes map[string]int64) []string {
	names := make([]string, 0, len(bytes))
	for n := range bytes {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := bytes[names[i]], bytes[names[j]]
		return a > b || a == b && names[i] < names[j]
	})
	return names
}

// sparkView is a key's requests per day as a small bar chart.
type sparkView struct {
	Label string
	Bars  []chartBar
	Total int64
	// PerDay is the average number of requests a day.
	PerDay string
}

// sparkDays is how many days a key's sparkline covers.
const sparkDays = 14

// keyUsage adds created, last used and requests per day to the keys, when
// the key may read the usage counters.
func (q *request) keyUsage(ctx context.Context, keys []keyRow) error {
	if !q.mayAny("usage.get") || len(keys) == 0 {
		return nil
	}
	rows, err := q.usage(ctx, "key.requests", sparkDays)
	if err != nil {
		if _, denied := denial(err); denied {
			return nil
		}
		return err
	}
	days := lastDays(q.ui.cfg.Now(), sparkDays)
	for i := range keys {
		k := &keys[i]
		k.Usage = true
		if t, ok := rows.Keys[k.PublicKey]; ok {
			k.Created, k.LastUsed = shortTime(t.Created), shortTime(t.LastUsed)
			k.Created, _, _ = strings.Cut(k.Created, " ")
		}
		vals := rows.perDay(days, func(l string) bool { return l == k.PublicKey })
		k.Spark = spark(k.PublicKey, days, vals)
	}
	return nil
}

// shortTime writes an RFC 3339 time as "2006-01-02 15:04", or "—".
func shortTime(s string) string {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04")
}

// spark lays out a sparkline of 140 × 24.
func spark(name string, days []string, vals []float64) sparkView {
	v := sparkView{}
	top := 0.0
	for _, x := range vals {
		top = max(top, x)
		v.Total += int64(x)
	}
	v.Label = strconv.FormatInt(v.Total, 10) + " requests by " + name + " in the last " + strconv.Itoa(len(days)) + " days"
	v.PerDay = "0"
	if len(days) > 0 {
		v.PerDay = strconv.FormatFloat(float64(v.Total)/float64(len(days)), 'f', 1, 64)
	}
	if top == 0 {
		return v
	}
	w := 140.0 / float64(len(vals))
	for i, x := range vals {
		h := 22 * x / top
		v.Bars = append(v.Bars, chartBar{X: f(float64(i)*w + 1), Y: f(24 - h), W: f(w - 2), H: f(h),
			Tip: days[i] + ": " + strconv.FormatFloat(x, 'f', 0, 64)})
	}
	return v
}
