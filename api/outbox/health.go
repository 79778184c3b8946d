package outbox

import (
	"log/slog"
	"sync"
	"time"
)

// LogEvery is the most often one sink's failures are logged: a sink that
// keeps failing writes one line per LogEvery, counting those it held back.
const LogEvery = time.Minute

// Tracker keeps how each sink's attempts fare, and logs a sink's failures
// (rate-limited), its deliveries given up on and its recovery.
type Tracker struct {
	log   *slog.Logger
	mu    sync.Mutex
	sinks map[string]*SinkHealth
}

// NewTracker returns a Tracker that logs to log.
func NewTracker(log *slog.Logger) *Tracker {
	return &Tracker{log: log, sinks: map[string]*SinkHealth{}}
}

// SinkHealth is how one sink fares: zero while its attempts succeed;
// else since when they fail and the last failure's error, status and
// first bytes of the answer.
type SinkHealth struct {
	FailingSince time.Time
	LastError    string
	LastStatus   int
	LastResponse string

	logged     time.Time
	suppressed int
}

// Attempt is the outcome of one attempt at a sink, as Observe takes it.
type Attempt struct {
	At       time.Time
	Status   int
	Response string
	// Err is "" when the attempt succeeded.
	Err string
	// GaveUp: the delivery was given up on after this attempt.
	GaveUp bool
}

// maxResponse is how much of a failed answer the health keeps and logs.
const maxResponse = 256

// Observe records a at sink.
func (t *Tracker) Observe(sink string, a Attempt) {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.sinks[sink]
	if h == nil {
		h = &SinkHealth{}
		t.sinks[sink] = h
	}
	if a.Err == "" {
		if !h.FailingSince.IsZero() {
			t.log.Info("events sink recovered", "sink", sink, "failedFor", a.At.Sub(h.FailingSince).Round(time.Millisecond).String())
		}
		*h = SinkHealth{}
		return
	}
	if h.FailingSince.IsZero() {
		h.FailingSince = a.At
	}
	h.LastError, h.LastStatus, h.LastResponse = a.Err, a.Status, clip(a.Response, maxResponse)
	if !a.GaveUp && a.At.Sub(h.logged) < LogEvery {
		h.suppressed++
		return
	}
	args := []any{"sink", sink, "err", a.Err, "status", a.Status, "response", h.LastResponse,
		"failingSince", h.FailingSince.UTC().Format(time.RFC3339), "heldBack", h.suppressed}
	if a.GaveUp {
		t.log.Error("events delivery given up on", args...)
	} else {
		t.log.Warn("events delivery failed", args...)
	}
	h.logged, h.suppressed = a.At, 0
}

// Health returns sink's health (zero when no attempt was seen).
func (t *Tracker) Health(sink string) SinkHealth {
	t.mu.Lock()
	defer t.mu.Unlock()
	if h := t.sinks[sink]; h != nil {
		return *h
	}
	return SinkHealth{}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
