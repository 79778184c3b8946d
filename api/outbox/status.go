package outbox

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"
)

// SinkStatus is one sink of the events outbox as GET /status lists it: a
// topic of events.topics, a CDN purger, or the webhook subscriptions
// together (each subscription's own state is in GET /webhooks/<id>).
type SinkStatus struct {
	// Sink names it: topic:<url without secrets>, cdn:<purger>, webhooks.
	Sink string `json:"sink"`
	// Kind is topic, purger or webhooks.
	Kind string `json:"kind"`
	// Pending counts the deliveries waiting for it; LagSeconds is how long
	// the oldest of them has waited (0 with none).
	Pending    int     `json:"pending"`
	LagSeconds float64 `json:"lagSeconds"`
	// Failed counts the deliveries given up on that the log still keeps.
	Failed int `json:"failed"`
	// FailingSince is when its attempts started failing (HTTP date), while
	// they do; LastError, LastStatus and LastResponse are its last failed
	// attempt's (a purger's answer: the first 256 bytes of its body).
	FailingSince string `json:"failingSince,omitempty"`
	LastError    string `json:"lastError,omitempty"`
	LastStatus   int    `json:"lastStatus,omitempty"`
	LastResponse string `json:"lastResponse,omitempty"`
	// Failing counts the subscriptions marked failing (webhooks only).
	Failing int `json:"failing,omitempty"`
}

// Sinks is the sinks' part of GET /status: each topic and purger, and
// the webhook subscriptions together.
func (o *Outbox) Sinks(ctx context.Context) ([]SinkStatus, error) {
	backlog, err := o.d.db.SinkBacklogs(ctx)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var out []SinkStatus
	for _, name := range slices.Sorted(maps.Keys(o.d.static)) {
		st := SinkStatus{Sink: name, Kind: "purger"}
		if _, ok := o.d.static[name].(busSink); ok {
			st.Kind = "topic"
		}
		b := backlog[name]
		st.Pending, st.Failed = b.Pending, b.Failed
		if b.Pending > 0 {
			st.LagSeconds = now.Sub(b.Oldest).Seconds()
		}
		if h := o.d.tracker.Health(name); !h.FailingSince.IsZero() {
			st.FailingSince = h.FailingSince.UTC().Format(http.TimeFormat)
			st.LastError, st.LastStatus, st.LastResponse = h.LastError, h.LastStatus, h.LastResponse
		}
		out = append(out, st)
	}
	if o.d.client == nil {
		return out, nil
	}
	hooks := SinkStatus{Sink: "webhooks", Kind: "webhooks"}
	var oldest time.Time
	for name, b := range backlog {
		if !strings.HasPrefix(name, "webhook:") {
			continue
		}
		hooks.Pending, hooks.Failed = hooks.Pending+b.Pending, hooks.Failed+b.Failed
		if b.Pending > 0 && (oldest.IsZero() || b.Oldest.Before(oldest)) {
			oldest = b.Oldest
		}
	}
	if !oldest.IsZero() {
		hooks.LagSeconds = now.Sub(oldest).Seconds()
	}
	// Why a count: /status and every metrics scrape come here, and
	// reading the subscriptions would decrypt every secret.
	if hooks.Failing, err = o.d.db.FailingWebhooks(ctx); err != nil {
		return nil, err
	}
	return append(out, hooks), nil
}
