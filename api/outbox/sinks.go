package outbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/vitrine/vitrine/api/cdn"
	"github.com/vitrine/vitrine/api/webhook"
	"github.com/vitrine/vitrine/storage"
)

// sink sends one delivery; the dispatcher times it and records it.
type sink interface {
	send(ctx context.Context, d storage.Delivery) webhook.Result
}

// gated is a sink that can say it is down for now (a bus between
// redials): the dispatcher claims none of its deliveries meanwhile.
type gated interface{ available() bool }

// retryPolicy is how a sink's failed deliveries are retried: a backoff
// from min doubling to max, for giveUp from the fan-out.
type retryPolicy struct{ min, max, giveUp time.Duration }

// retrier is a sink with a policy of its own; the others follow the
// webhooks' (webhooks.retryMin, retryMax, retryFor).
type retrier interface {
	retry(cfg WebhooksConfig) retryPolicy
}

// policyOf is s's retry policy under cfg.
func policyOf(s sink, cfg WebhooksConfig) retryPolicy {
	if r, ok := s.(retrier); ok {
		return r.retry(cfg)
	}
	return retryPolicy{min: cfg.RetryMin, max: cfg.RetryMax, giveUp: cfg.RetryFor}
}

// webhookSink delivers to a subscription.
type webhookSink struct {
	hook   storage.Webhook
	client *http.Client
}

func (s webhookSink) send(ctx context.Context, d storage.Delivery) webhook.Result {
	body, err := d.Event.MarshalJSON()
	if err != nil {
		return webhook.Result{Err: err}
	}
	return webhook.Send(ctx, s.client, s.hook.URL, s.hook.Secret, webhook.Message{ID: d.Event.ID, Body: body})
}

// purgeSink purges an event's tags from one cache.
type purgeSink struct {
	p    cdn.Purger
	tags cdn.Tags
}

// purgeSinkName is the sink of a purger: its name, which says what it
// purges (type and address), so that a purger that the configuration
// drops leaves its pending deliveries to fail instead of going elsewhere.
func purgeSinkName(p cdn.Purger) string { return sinkName("cdn:" + p.Name()) }

// sinkName is name, shortened with a hash of it past the 128 bytes a
// sink's name may take.
func sinkName(name string) string {
	if len(name) > 128 {
		sum := sha256.Sum256([]byte(name))
		name = name[:111] + "~" + hex.EncodeToString(sum[:8])
	}
	return name
}

func (s purgeSink) send(ctx context.Context, d storage.Delivery) webhook.Result {
	start := time.Now()
	tags := s.tags.PurgeTags(d.Event.Type, d.Event.Subject, d.Event.Data)
	if err := s.p.Purge(ctx, tags); err != nil {
		return webhook.Result{Latency: time.Since(start), Err: err}
	}
	return webhook.Result{Status: http.StatusOK, Latency: time.Since(start), Response: "purged " + strings.Join(tags, " ")}
}

// busSink publishes to one topic of events.topics. Like every sink it
// has its own deliveries, so a broker that is down holds back only its
// own events, which it publishes in order per subject once it is back.
type busSink struct {
	bus *Bus
	// retryFor is events.retention.
	retryFor time.Duration
	trace    Tracer
}

func (s busSink) send(ctx context.Context, d storage.Delivery) webhook.Result {
	start := time.Now()
	ctx, end := s.trace.start(ctx, d.Event, "events publish", trace.SpanKindProducer)
	said, err := s.bus.Publish(ctx, d.Event)
	end(err)
	if err != nil {
		return webhook.Result{Latency: time.Since(start), Err: err}
	}
	return webhook.Result{Status: http.StatusOK, Latency: time.Since(start), Response: said}
}

// available: a bus whose connection is down and whose next dial is not
// due yet is passed over, so its backlog is not tried (and logged as
// failed) one delivery after the other.
func (s busSink) available() bool { return s.bus.Available() }

// retry: a broker that returns gets its backlog within seconds, and a
// delivery is given up on only after events.retention.
func (s busSink) retry(WebhooksConfig) retryPolicy {
	return retryPolicy{min: time.Second, max: 5 * time.Second, giveUp: s.retryFor}
}

// busSinkName is the sink of a topic: its URL without secrets, shortened
// as purgers' names are.
func busSinkName(b *Bus) string { return sinkName("topic:" + b.Name()) }
