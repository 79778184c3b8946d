package api

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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

// SinkReporter says how the sinks of the events outbox fare, for GET
// /status.
type SinkReporter interface {
	Sinks(ctx context.Context) ([]SinkStatus, error)
}

// WatchSinks exports the sinks of the events outbox, read from r at each
// scrape: per sink (and kind) its pending deliveries, the age of the
// oldest, those given up on, and whether its attempts fail now.
func (m *Metrics) WatchSinks(r SinkReporter) {
	m.reg.MustRegister(sinkCollector{r})
}

var (
	sinkPending = prometheus.NewDesc("vitrine_events_sink_pending", "Deliveries waiting for the sink.",
		[]string{"sink", "kind"}, nil)
	sinkLag = prometheus.NewDesc("vitrine_events_sink_lag_seconds", "How long the sink's oldest pending delivery has waited.",
		[]string{"sink", "kind"}, nil)
	sinkFailed = prometheus.NewDesc("vitrine_events_sink_failed", "Deliveries to the sink given up on, still in the log.",
		[]string{"sink", "kind"}, nil)
	sinkFailing = prometheus.NewDesc("vitrine_events_sink_failing", "1 while the sink's attempts fail (on this instance).",
		[]string{"sink", "kind"}, nil)
)

type sinkCollector struct{ r SinkReporter }

func (c sinkCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{sinkPending, sinkLag, sinkFailed, sinkFailing} {
		ch <- d
	}
}

func (c sinkCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	sinks, err := c.r.Sinks(ctx)
	if err != nil {
		return // the database's own metrics say why
	}
	for _, s := range sinks {
		failing := 0.0
		if s.FailingSince != "" || s.Failing > 0 {
			failing = 1
		}
		for d, v := range map[*prometheus.Desc]float64{sinkPending: float64(s.Pending), sinkLag: s.LagSeconds,
			sinkFailed: float64(s.Failed), sinkFailing: failing} {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, s.Sink, s.Kind)
		}
	}
}
