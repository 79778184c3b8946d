package outbox

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/vitrine/vitrine/api/cdn"
	"github.com/vitrine/vitrine/storage"
)

// Options is what an Outbox delivers to.
type Options struct {
	DB       *storage.DB
	Events   EventsConfig
	Webhooks WebhooksConfig
	// Client sends to webhook subscriptions (the outbound guard's); nil
	// while webhooks are off.
	Client *http.Client
	// Buses are the topics of Events.Topics (NewBus), Purgers the CDN
	// purgers, which purge the tags Tags names for each event.
	Buses   []*Bus
	Purgers []cdn.Purger
	Tags    cdn.Tags
	Trace   Tracer
	Log     *slog.Logger
}

// Tracer starts the span of work done for an event (name, of kind, with
// attrs) under the trace of the change that wrote it, and returns the
// context to do it in and the span's end, given the work's error. The
// server passes its tracing's; nil starts no span.
type Tracer func(ctx context.Context, e storage.Event, name string, kind trace.SpanKind,
	attrs ...attribute.KeyValue) (context.Context, func(error))

// start continues e's trace in ctx (its traceparent, which a bus sends
// on) and starts t's span there.
func (t Tracer) start(ctx context.Context, e storage.Event, name string, kind trace.SpanKind,
	attrs ...attribute.KeyValue) (context.Context, func(error)) {
	if e.Traceparent != "" {
		ctx = propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": e.Traceparent})
	}
	if t == nil {
		return ctx, func(error) {}
	}
	return t(ctx, e, name, kind, attrs...)
}

// Outbox sends the events outbox (storage/events.go) to its sinks: every
// topic, every CDN purger and every webhook subscription that wants an
// event gets a delivery row of its own (FanOut), which it is sent on its
// own schedule, in order per subject, at least once (Deliver). So a sink
// that is slow or down holds back nothing but its own events (api/outbox/README.md
// "Events", "Webhooks").
type Outbox struct {
	d *dispatcher
	f *fanout
}

// New returns the Outbox of o. Nothing is dialled: a bus connects on its
// first delivery, so the server starts while a broker is down.
func New(o Options) *Outbox {
	cfg := o.Webhooks.WithDefaults()
	d := &dispatcher{db: o.DB, cfg: cfg, client: o.Client, log: o.Log, busy: map[string]int{},
		tracker: NewTracker(o.Log), static: map[string]sink{}, wake: make(chan struct{}, 1), trace: o.Trace}
	f := &fanout{db: o.DB, webhooks: o.Client != nil, tags: o.Tags, d: d}
	for _, b := range o.Buses {
		name := busSinkName(b)
		d.static[name] = busSink{bus: b, retryFor: o.Events.retention(), trace: o.Trace}
		f.topics = append(f.topics, name)
	}
	for _, p := range o.Purgers {
		name := purgeSinkName(p)
		d.static[name] = purgeSink{p: p, tags: o.Tags}
		f.purgers = append(f.purgers, name)
	}
	return &Outbox{d: d, f: f}
}

// FanOut is one pass of the events worker: it writes the deliveries of the
// events due, one per sink that wants each, and starts at once those
// whose sink has a free slot. It returns how many events it handled.
func (o *Outbox) FanOut(ctx context.Context) (int, error) { return o.f.pass(ctx) }

// Deliver is one pass of the deliveries worker: it starts an attempt of
// each due delivery whose sink has a free slot, and returns without
// waiting for them, with how many it started.
func (o *Outbox) Deliver(ctx context.Context) (int, error) { return o.d.pass(ctx) }

// Wakeups says when Deliver should pass again before its interval: an
// attempt ended while deliveries wait, or FanOut wrote some pending.
func (o *Outbox) Wakeups() <-chan struct{} { return o.d.wake }

// Stop makes Deliver start no attempt any more and waits for those under
// way (each bounded by webhooks.timeout) to be recorded.
func (o *Outbox) Stop() { o.d.stop() }

// PurgeFinished deletes the finished deliveries older than
// webhooks.retention.
func (o *Outbox) PurgeFinished(ctx context.Context) error {
	_, err := o.d.db.PurgeDeliveries(ctx, time.Now().Add(-o.d.cfg.Retention))
	return err
}
