package api

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vitrine/vitrine/api/outbox"
)

// SinkStatus is one sink of the events outbox as GET /status lists it
// (outbox.SinkStatus).
type SinkStatus = outbox.SinkStatus

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
