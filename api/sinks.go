package api

import "context"

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

// SinkReporter says how the sinks of the events outbox fare, for GET
// /status.
type SinkReporter interface {
	Sinks(ctx context.Context) ([]SinkStatus, error)
}
