package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"gocloud.dev/pubsub"
	_ "gocloud.dev/pubsub/mempubsub"  // mem:// topics
	_ "gocloud.dev/pubsub/natspubsub" // nats:// topics (NATS_SERVER_URL)
	_ "gocloud.dev/pubsub/rabbitpubsub"

	"github.com/vitrine/vitrine/api/cdn"
	"github.com/vitrine/vitrine/storage"
)

// Every change the audit log records is also an event in the database's
// outbox (storage/events.go), written in the change's transaction. Where
// the events go is here: eventsConfig names the topics, and the events
// worker publishes each event to every one of them, in order per subject,
// at least once (README "Events").

// eventsConfig is the `events` section.
type eventsConfig struct {
	// Topics are gocloud.dev/pubsub topic URLs that every event is
	// published to: mem://name, nats://subject?natsv2 (the server in
	// NATS_SERVER_URL), rabbit://exchange (the server in
	// RABBIT_SERVER_URL). None: no events are written.
	Topics []string `yaml:"topics"`
	// Interval is how often each instance publishes the events due
	// (default 1s).
	Interval time.Duration `yaml:"interval"`
}

// Validate reports a negative interval or an empty topic URL.
func (c eventsConfig) Validate() error {
	if c.Interval < 0 {
		return errors.New("events: interval must not be negative")
	}
	for _, u := range c.Topics {
		if u == "" {
			return errors.New("events: a topic URL is empty")
		}
	}
	return nil
}

// eventsWanted is the one place that decides whether changes write
// event rows: only while something drains them (topics, webhooks, CDN
// purgers), so that an outbox with no consumer does not grow. Why not
// write and drop: a row no one reads costs an insert per change and a
// purge. Webhooks count while they are enabled, with or without
// subscriptions: one made on any instance must hear of the next change
// made on every other.
func eventsWanted(cfg *fileConfig) bool {
	return len(cfg.Events.Topics) > 0 || cfg.Webhooks.enabled() || len(cfg.CDN.Purgers) > 0
}

// eventRetry bounds the backoff of an event whose publication failed:
// short, since a subject's later events wait behind it.
var eventRetry = storage.JobPass{RetryMin: time.Second, RetryMax: time.Minute}

// eventTopics are the opened topics of events.topics.
type eventTopics struct {
	urls   []string
	topics []*pubsub.Topic
}

// openEventTopics opens every topic of urls; on an error it shuts down
// those it opened.
func openEventTopics(ctx context.Context, urls []string) (*eventTopics, error) {
	t := &eventTopics{urls: urls}
	for _, u := range urls {
		topic, err := pubsub.OpenTopic(ctx, u)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("events: topic %s: %w", redact(u), err), t.Close(ctx))
		}
		t.topics = append(t.topics, topic)
	}
	return t, nil
}

// publish sends e to every topic, one message each, and returns when
// every topic has it: the event's row goes only then.
func (t *eventTopics) publish(ctx context.Context, e storage.Event) error {
	for i, topic := range t.topics {
		if err := topic.Send(ctx, eventMessage(ctx, e)); err != nil {
			return fmt.Errorf("events: publish %s to %s: %w", e.ID, redact(t.urls[i]), err)
		}
	}
	return nil
}

// Close flushes and shuts down every topic.
func (t *eventTopics) Close(ctx context.Context) error {
	var errs []error
	for _, topic := range t.topics {
		errs = append(errs, topic.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

// eventMessage is e in CloudEvents' binary mode: the body is the data,
// the attributes are ce- metadata (headers on NATS and RabbitMQ). With
// tracing on, ctx's span goes along as CloudEvents' distributed tracing
// extension (ce-traceparent).
func eventMessage(ctx context.Context, e storage.Event) *pubsub.Message {
	m := &pubsub.Message{Body: e.Data, Metadata: map[string]string{
		"ce-specversion": "1.0",
		"ce-id":          e.ID,
		"ce-source":      e.Source,
		"ce-type":        e.Type,
		"ce-subject":     e.Subject,
		"ce-time":        e.Time.UTC().Format(time.RFC3339Nano),
		"content-type":   "application/json",
	}}
	if trace.SpanContextFromContext(ctx).IsValid() {
		c := propagation.MapCarrier{}
		propagation.TraceContext{}.Inject(ctx, c)
		m.Metadata["ce-traceparent"] = c["traceparent"]
	}
	return m
}

// fanout is where each event goes after the topics: a delivery row per
// sink that wants it (worker_deliveries.go).
type fanout struct {
	db *storage.DB
	// webhooks is false when webhooks are off.
	webhooks bool
	// tags names what an event purges; purgers are the purgers' sinks.
	tags    cdn.Tags
	purgers []string
	// d sends the deliveries: those it takes at once are written taken
	// and handed to it (EventFanout.Take).
	d *dispatcher
}

// sinksOf returns the sinks that want e, of the subscriptions hooks.
func (f *fanout) sinksOf(e storage.Event, hooks []storage.Webhook) []string {
	var out []string
	for _, h := range hooks {
		if webhookWants(h, e) {
			out = append(out, storage.WebhookSink(h.ID))
		}
	}
	if len(f.purgers) > 0 && len(f.tags.PurgeTags(e.Type, e.Subject, e.Data)) > 0 {
		out = append(out, f.purgers...)
	}
	return out
}

// subscriptions returns what gives the subscriptions to match an event
// against during one pass. It reads them again whenever an event is
// newer than the last read: a subscription made before a change then
// committed before it (the change's time is after that commit when one
// client makes both, one after the other), so the read that follows
// sees it. Events older than the read reuse it: one read per batch.
func (f *fanout) subscriptions() func(context.Context, storage.Event) ([]storage.Webhook, error) {
	var hooks []storage.Webhook
	var read time.Time
	return func(ctx context.Context, e storage.Event) ([]storage.Webhook, error) {
		if !f.webhooks || e.Time.Before(read) {
			return hooks, nil
		}
		at := time.Now()
		list, err := f.db.Webhooks(ctx)
		if err != nil {
			return nil, err
		}
		hooks, read = list, at
		return hooks, nil
	}
}

// eventsWorker delivers the events due (storage.DB.DrainEventsTo) every
// events.interval and as soon as a change commits: each goes to every
// topic, then fans out to the webhooks and purgers that want it, written
// taken by the dispatcher where it has a free slot for the sink (so it
// sends them at once, with no read and claim of its own).
func eventsWorker(db *storage.DB, t *eventTopics, f *fanout, cfg eventsConfig, log *slog.Logger) *worker {
	w := newWorker("events", cfg.Interval, time.Second, func(ctx context.Context) (int, error) {
		hooks := f.subscriptions()
		return db.DrainEventsTo(ctx, eventRetry, func(ctx context.Context, e storage.Event) ([]string, error) {
			// The subscriptions first: an instance that cannot read them
			// (a `secret` unlike the other instances') publishes nothing,
			// rather than publishing again on every retry.
			list, err := hooks(ctx, e)
			if err != nil {
				return nil, err
			}
			if len(t.topics) > 0 {
				pctx, span := continueTrace(ctx, e.Traceparent, "events publish", trace.SpanKindProducer, e)
				err = t.publish(pctx, e)
				endSpan(span, err)
				if err != nil {
					return nil, err
				}
			}
			return f.sinksOf(e, list), nil
		}, f.d.fanout(ctx))
	}, log)
	w.signal = db.EventsWritten()
	return w
}
