package main

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/api/cdn"
	"github.com/vitrine/vitrine/api/outbox"
	"github.com/vitrine/vitrine/api/webhook"
	"github.com/vitrine/vitrine/storage"
)

// Every change the audit log records is also an event in the database's
// outbox (storage/events.go), written in the change's transaction. Where
// the events go is here: the events worker fans each out to its sinks,
// every topic of eventsConfig and the webhooks and purgers that want it,
// and the deliveries worker sends each sink's on its own schedule, in
// order per subject, at least once (README "Events").

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
	// Retention bounds how long an event waits for a topic that cannot
	// take it (default 72h): past it, that topic's delivery is given up
	// on, logged and counted in /status, never dropped silently.
	Retention time.Duration `yaml:"retention"`
}

// Validate reports a negative interval or retention, or a topic URL that
// is empty, unparsable or of a scheme this binary cannot open.
func (c eventsConfig) Validate() error {
	if c.Interval < 0 {
		return errors.New("events: interval must not be negative")
	}
	if c.Retention < 0 {
		return errors.New("events: retention must not be negative")
	}
	for _, u := range c.Topics {
		if u == "" {
			return errors.New("events: a topic URL is empty")
		}
		if _, err := outbox.NewBus(u, redact(u)); err != nil {
			return err
		}
	}
	return nil
}

// retention is events.retention or its default.
func (c eventsConfig) retention() time.Duration { return cmp.Or(c.Retention, 72*time.Hour) }

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

// eventRetry bounds the backoff of an event whose fan-out failed (the
// subscriptions could not be read): short, since a subject's later
// events wait behind it.
var eventRetry = storage.JobPass{RetryMin: time.Second, RetryMax: time.Minute}

// busSink publishes to one topic of events.topics. Like every sink it
// has its own deliveries, so a broker that is down holds back only its
// own events, which it publishes in order per subject once it is back.
type busSink struct {
	bus *outbox.Bus
	// retryFor is events.retention.
	retryFor time.Duration
}

func (s busSink) send(ctx context.Context, d storage.Delivery) webhook.Result {
	start := time.Now()
	ctx, span := continueTrace(ctx, d.Event.Traceparent, "events publish", trace.SpanKindProducer, d.Event)
	said, err := s.bus.Publish(ctx, d.Event)
	endSpan(span, err)
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
func (s busSink) retry(webhooksConfig) retryPolicy {
	return retryPolicy{min: time.Second, max: 5 * time.Second, giveUp: s.retryFor}
}

// busSinkName is the sink of a topic: its URL without secrets, shortened
// as purgers' names are.
func busSinkName(b *outbox.Bus) string { return sinkName("topic:" + b.Name()) }

// fanout is where each event goes: a delivery row per sink that wants it
// (worker_deliveries.go).
type fanout struct {
	db *storage.DB
	// webhooks is false when webhooks are off.
	webhooks bool
	// topics are the sinks of events.topics: every event goes to each.
	topics []string
	// tags names what an event purges; purgers are the purgers' sinks.
	tags    cdn.Tags
	purgers []string
	// d sends the deliveries: those it takes at once are written taken
	// and handed to it (EventFanout.Take).
	d *dispatcher
}

// sinksOf returns the sinks that want e, of the subscriptions hooks.
func (f *fanout) sinksOf(e storage.Event, hooks []storage.Webhook) []string {
	out := slices.Clone(f.topics)
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

// eventsWorker fans the events due (storage.DB.DrainEventsTo) out every
// events.interval and as soon as a change commits: one delivery per sink
// that wants each (every topic, the webhooks and purgers it matches),
// written taken by the dispatcher where it has a free slot for the sink
// (so it sends them at once, with no read and claim of its own).
func eventsWorker(db *storage.DB, f *fanout, cfg eventsConfig, log *slog.Logger) *worker {
	w := newWorker("events", cfg.Interval, time.Second, func(ctx context.Context) (int, error) {
		hooks := f.subscriptions()
		return db.DrainEventsTo(ctx, eventRetry, func(ctx context.Context, e storage.Event) ([]string, error) {
			// An instance that cannot read the subscriptions (a `secret`
			// unlike the other instances') fans out nothing, rather than
			// an event without the subscriptions that want it.
			list, err := hooks(ctx, e)
			if err != nil {
				return nil, err
			}
			return f.sinksOf(e, list), nil
		}, f.d.fanout(ctx))
	}, log)
	w.signal = db.EventsWritten()
	return w
}

// observe tells the tracker how an attempt at dl's sink went: a failure
// is logged (at most once a minute per sink) and shown in /status.
func (d *dispatcher) observe(dl storage.Delivery, a storage.DeliveryAttempt, state storage.DeliveryState) {
	d.tracker.Observe(dl.Sink, outbox.Attempt{At: time.Now(), Status: a.Status, Response: a.Response, Err: a.Error,
		GaveUp: state == storage.DeliveryFailed})
}

// Sinks is the sinks' part of GET /status: each topic and purger, and
// the webhook subscriptions together.
func (d *dispatcher) Sinks(ctx context.Context) ([]api.SinkStatus, error) {
	backlog, err := d.db.SinkBacklogs(ctx)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var out []api.SinkStatus
	for _, name := range slices.Sorted(maps.Keys(d.static)) {
		st := api.SinkStatus{Sink: name, Kind: "purger"}
		if _, ok := d.static[name].(busSink); ok {
			st.Kind = "topic"
		}
		b := backlog[name]
		st.Pending, st.Failed = b.Pending, b.Failed
		if b.Pending > 0 {
			st.LagSeconds = now.Sub(b.Oldest).Seconds()
		}
		if h := d.tracker.Health(name); !h.FailingSince.IsZero() {
			st.FailingSince = h.FailingSince.UTC().Format(http.TimeFormat)
			st.LastError, st.LastStatus, st.LastResponse = h.LastError, h.LastStatus, h.LastResponse
		}
		out = append(out, st)
	}
	if d.client == nil {
		return out, nil
	}
	hooks := api.SinkStatus{Sink: "webhooks", Kind: "webhooks"}
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
	if hooks.Failing, err = d.db.FailingWebhooks(ctx); err != nil {
		return nil, err
	}
	return append(out, hooks), nil
}
