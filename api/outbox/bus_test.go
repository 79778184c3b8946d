package outbox

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/vitrine/vitrine/storage"
)

// TestAttributesTraceparent: a bus message carries the sending span as
// CloudEvents' distributed tracing extension, and nothing without a span
// (tracing off).
func TestAttributesTraceparent(t *testing.T) {
	e := storage.Event{ID: "e1", Type: "io.vitrine.image.added", Source: "/vitrine", Subject: "users/alice/images/x",
		Time: time.Unix(1, 0), Data: []byte(`{}`)}
	if m := Attributes(context.Background(), e); m["ce-traceparent"] != "" {
		t.Fatalf("traceparent without a span: %q", m["ce-traceparent"])
	}
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	m := Attributes(propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": tp}), e)
	if got := m["ce-traceparent"]; got != tp {
		t.Fatalf("ce-traceparent = %q, want %q", got, tp)
	}
	if m["ce-id"] != "e1" || m["ce-type"] != e.Type || m["ce-source"] != "/vitrine" {
		t.Fatalf("attributes %v", m)
	}
}

// TestNewBus: a topic URL is checked when the configuration is, not when
// it is first published to.
func TestNewBus(t *testing.T) {
	for _, c := range []struct{ url, err string }{
		{"mem://a", ""},
		{"nats://a.b?natsv2", ""},
		{"rabbit://x", ""},
		{"kafkaa://x", "unknown scheme"},
		{"no-scheme", "not a URL"},
	} {
		_, err := NewBus(c.url, c.url)
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("NewBus(%q) = %v, want %q", c.url, err, c.err)
		}
	}
}

// TestBusRedialBackoff: a bus whose broker cannot be reached fails at
// once while its redial backoff runs, says since when and why, and dials
// again once it is over.
func TestBusRedialBackoff(t *testing.T) {
	t.Setenv("NATS_SERVER_URL", "nats://127.0.0.1:1") // nothing listens on port 1
	b, err := NewBus("nats://x?natsv2", "nats://x?natsv2")
	if err != nil {
		t.Fatal(err)
	}
	e := storage.Event{ID: "e1", Time: time.Now()}
	if _, err := b.Publish(context.Background(), e); err == nil || !strings.Contains(err.Error(), "connect to") {
		t.Fatalf("first publish: %v", err)
	}
	if b.Available() {
		t.Fatal("available right after a failed dial")
	}
	_, err = b.Publish(context.Background(), e)
	if err == nil || !strings.Contains(err.Error(), "unreachable since") {
		t.Fatalf("publish during the backoff: %v", err)
	}
	if h := b.Health(); h.DownSince.IsZero() || h.LastError == "" {
		t.Fatalf("health %+v", h)
	}
	deadline := time.Now().Add(2 * redialMax)
	for !b.Available() {
		if time.Now().After(deadline) {
			t.Fatal("never available again")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
