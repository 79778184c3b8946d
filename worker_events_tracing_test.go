package main

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/vitrine/vitrine/storage"
)

// TestEventMessageTraceparent: a bus message carries the sending span as
// CloudEvents' distributed tracing extension, and nothing without a span
// (tracing off).
func TestEventMessageTraceparent(t *testing.T) {
	e := storage.Event{ID: "e1", Type: "io.vitrine.image.added", Source: "/vitrine", Subject: "users/alice/images/x",
		Time: time.Unix(1, 0), Data: []byte(`{}`)}
	if m := eventMessage(context.Background(), e); m.Metadata["ce-traceparent"] != "" {
		t.Fatalf("traceparent without a span: %q", m.Metadata["ce-traceparent"])
	}
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	m := eventMessage(propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": tp}), e)
	if got := m.Metadata["ce-traceparent"]; got != tp {
		t.Fatalf("ce-traceparent = %q, want %q", got, tp)
	}
	if m.Metadata["ce-id"] != "e1" || m.Metadata["ce-type"] != e.Type {
		t.Fatalf("metadata %v", m.Metadata)
	}
}
