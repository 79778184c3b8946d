package filters

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// counters are a filter's stats_add counters, kept across calls and
// instances for the life of the process.
type counters struct {
	mu sync.Mutex
	m  map[string]int64
}

// maxCounters is how many counter names one filter may create (ABI.md,
// stats_add): the counters live as long as the process and go into every
// GET /stats, so a guest must not grow them without bound.
const maxCounters = 256

// add adds delta to the counter name, saturating at the int64 bounds; it
// reports false, and changes nothing, when name is new and the filter
// already has maxCounters.
func (c *counters) add(name string, delta int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]int64{}
	}
	if _, ok := c.m[name]; !ok && len(c.m) >= maxCounters {
		return false
	}
	c.m[name] = addSaturating(c.m[name], delta)
	return true
}

// addSaturating returns a+b, or the int64 bound it would pass (ABI.md,
// stats_add): a counter that wrapped around would show a huge count as a
// negative one.
func addSaturating(a, b int64) int64 {
	sum := a + b
	if (sum > a) != (b > 0) {
		if b > 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return sum
}

// snapshot returns a copy of the counters.
func (c *counters) snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.m))
	for k, v := range c.m {
		out[k] = v
	}
	return out
}

// durationWindow is how many recent call durations the percentiles are
// computed from.
const durationWindow = 1024

// Stats are the call counters of one filter.
type Stats struct {
	Calls      int64 `json:"calls"`
	Errors     int64 `json:"errors"`
	Timeouts   int64 `json:"timeouts"`
	Rejections int64 `json:"rejections"`
	// P50Ms and P99Ms are percentiles of the most recent call durations,
	// in milliseconds.
	P50Ms float64 `json:"p50Ms"`
	P99Ms float64 `json:"p99Ms"`
	// Busy counts calls refused because the filter had no room: its
	// queue was full or no instance came free within the queue wait.
	Busy int64 `json:"busy"`
	// Instances is how many instances exist now (idle or busy).
	Instances int `json:"instances"`
	// Waiting is how many calls wait for an instance now.
	Waiting int `json:"waiting"`
}

// metrics counts calls by outcome and keeps a window of durations.
type metrics struct {
	calls, errors, timeouts, rejections, busy atomic.Int64

	mu   sync.Mutex
	ring [durationWindow]time.Duration
	n    int // durations recorded so far
}

// record counts one finished call.
func (m *metrics) record(d time.Duration, err error) {
	m.calls.Add(1)
	switch {
	case err == nil:
	case isKind(err, KindRejected):
		m.rejections.Add(1)
	case isKind(err, KindTimeout):
		m.timeouts.Add(1)
	case isKind(err, KindBusy):
		m.busy.Add(1)
	default:
		m.errors.Add(1)
	}
	m.mu.Lock()
	m.ring[m.n%durationWindow] = d
	m.n++
	m.mu.Unlock()
}

// snapshot returns the counters and percentiles.
func (m *metrics) snapshot() Stats {
	s := Stats{Calls: m.calls.Load(), Errors: m.errors.Load(), Timeouts: m.timeouts.Load(),
		Rejections: m.rejections.Load(), Busy: m.busy.Load()}
	m.mu.Lock()
	ds := slices.Clone(m.ring[:min(m.n, durationWindow)])
	m.mu.Unlock()
	if len(ds) == 0 {
		return s
	}
	slices.Sort(ds)
	pct := func(p float64) float64 {
		return float64(ds[int(p*float64(len(ds)-1))].Microseconds()) / 1000
	}
	s.P50Ms, s.P99Ms = pct(0.50), pct(0.99)
	return s
}
