package outbox

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"gocloud.dev/pubsub"
	_ "gocloud.dev/pubsub/mempubsub" // mem:// topics

	"github.com/vitrine/vitrine/storage"
)

// Bus is one topic of events.topics. Its connection is opened by the first
// Publish, not by NewBus, so a server starts while its broker is down; any
// error drops the connection, and the next Publish opens a new one, at
// most once per redial backoff (Available says when the next may try).
type Bus struct {
	u    *url.URL
	name string
	open opener

	// dial serialises the opening of connections: one dial at a time.
	dial sync.Mutex
	// sawStream: a NATS JetStream stream acknowledged this topic's
	// events (brokers.go).
	sawStream atomic.Bool

	mu  sync.Mutex
	pub publisher
	// failures counts the failed dials and publishes since the last
	// success; nextDial is when the next dial may start.
	failures  int
	nextDial  time.Time
	downSince time.Time
	lastErr   string
}

// publisher is one open connection to a topic.
type publisher interface {
	// publish sends m and returns once the broker took it, with what the
	// broker said (a stream's sequence, a confirmation).
	publish(ctx context.Context, e storage.Event, attrs map[string]string) (string, error)
	close(ctx context.Context) error
}

type opener func(ctx context.Context, u *url.URL) (publisher, error)

// The backoff of redials: redialMin after the first failure, doubling to
// redialMax. Why short: while a broker is down nothing is dialled more
// often than this, and once it is back every event waits at most
// redialMax for it.
const (
	redialMin   = 500 * time.Millisecond
	redialMax   = 5 * time.Second
	dialTimeout = 5 * time.Second
)

// NewBus checks the topic URL raw and returns its Bus, not yet connected.
// name is how logs, errors and /status call it (raw without its secrets).
// The schemes: nats:// (a subject on NATS_SERVER_URL), rabbit:// (an
// exchange on RABBIT_SERVER_URL), and every other gocloud.dev/pubsub
// topic scheme this binary has (mem://).
func NewBus(raw, name string) (*Bus, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return nil, fmt.Errorf("events: topic %s: not a URL (nats://subject?natsv2, rabbit://exchange, mem://name)", name)
	}
	b := &Bus{u: u, name: name}
	switch u.Scheme {
	case "nats":
		b.open = func(ctx context.Context, u *url.URL) (publisher, error) { return openNATS(ctx, u, &b.sawStream) }
	case "rabbit":
		b.open = openRabbit
	default:
		if !pubsub.DefaultURLMux().ValidTopicScheme(u.Scheme) {
			return nil, fmt.Errorf("events: topic %s: unknown scheme %q (nats, rabbit, mem)", name, u.Scheme)
		}
		b.open = openGocloud
	}
	return b, nil
}

// Name is the topic as logs and /status show it.
func (b *Bus) Name() string { return b.name }

// Publish sends e to the topic, opening a connection first if it has
// none, and returns what the broker said once it acknowledged e. On an
// error the connection is dropped and the error says why.
func (b *Bus) Publish(ctx context.Context, e storage.Event) (string, error) {
	pub, err := b.connect(ctx)
	if err != nil {
		return "", err
	}
	said, err := pub.publish(ctx, e, Attributes(ctx, e))
	if err != nil {
		b.drop(ctx, pub, err)
		return "", fmt.Errorf("publish to %s: %w", b.name, err)
	}
	b.mu.Lock()
	b.failures, b.downSince, b.lastErr = 0, time.Time{}, ""
	b.mu.Unlock()
	return said, nil
}

// connect returns the open connection, or opens one when the backoff
// allows.
func (b *Bus) connect(ctx context.Context) (publisher, error) {
	if pub, err := b.current(); pub != nil || err != nil {
		return pub, err
	}
	b.dial.Lock()
	defer b.dial.Unlock()
	// Another attempt may have dialled while this one waited.
	if pub, err := b.current(); pub != nil || err != nil {
		return pub, err
	}
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	pub, err := b.open(dctx, b.u)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil {
		b.failed(err)
		return nil, fmt.Errorf("connect to %s: %w", b.name, err)
	}
	b.pub = pub
	return pub, nil
}

// current is the open connection; nil and an error while the backoff
// forbids a dial; nil, nil when one may dial.
func (b *Bus) current() (publisher, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pub != nil {
		return b.pub, nil
	}
	if wait := time.Until(b.nextDial); wait > 0 {
		return nil, fmt.Errorf("%s is unreachable since %s (%s); the next try is in %s", b.name,
			b.downSince.UTC().Format(time.RFC3339), b.lastErr, wait.Round(time.Millisecond))
	}
	return nil, nil
}

// drop closes pub after err, unless another attempt dropped it already.
func (b *Bus) drop(ctx context.Context, pub publisher, err error) {
	b.mu.Lock()
	mine := b.pub == pub
	if mine {
		b.pub = nil
		b.failed(err)
	}
	b.mu.Unlock()
	if mine {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = pub.close(cctx) // the connection is broken: its close may fail too
	}
}

// failed counts a failure; b.mu is held.
func (b *Bus) failed(err error) {
	b.failures++
	if b.downSince.IsZero() {
		b.downSince = time.Now()
	}
	b.lastErr = err.Error()
	b.nextDial = time.Now().Add(storage.Backoff(redialMin, redialMax, b.failures-1))
}

// Available reports whether a Publish may succeed now: the bus is
// connected, or its next dial is due. The deliveries worker claims no
// delivery of a bus that is not.
func (b *Bus) Available() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pub != nil || !time.Now().Before(b.nextDial)
}

// Health is how a bus fares: since when it has failed, and why (both
// zero while it works).
type Health struct {
	DownSince time.Time
	LastError string
}

// Health returns the bus's health.
func (b *Bus) Health() Health {
	b.mu.Lock()
	defer b.mu.Unlock()
	return Health{DownSince: b.downSince, LastError: b.lastErr}
}

// Close closes the connection, if one is open.
func (b *Bus) Close(ctx context.Context) error {
	b.mu.Lock()
	pub := b.pub
	b.pub = nil
	b.mu.Unlock()
	if pub == nil {
		return nil
	}
	if err := pub.close(ctx); err != nil {
		return fmt.Errorf("events: close %s: %w", b.name, err)
	}
	return nil
}

// Attributes are e's CloudEvents attributes in binary mode (the message's
// headers; the body is e's data): ce-specversion, ce-id, ce-source,
// ce-type, ce-subject, ce-time, content-type, and with tracing on ctx's
// span as the distributed tracing extension (ce-traceparent).
func Attributes(ctx context.Context, e storage.Event) map[string]string {
	m := map[string]string{
		"ce-specversion": "1.0",
		"ce-id":          e.ID,
		"ce-source":      e.Source,
		"ce-type":        e.Type,
		"ce-subject":     e.Subject,
		"ce-time":        e.Time.UTC().Format(time.RFC3339Nano),
		"content-type":   "application/json",
	}
	if trace.SpanContextFromContext(ctx).IsValid() {
		c := propagation.MapCarrier{}
		propagation.TraceContext{}.Inject(ctx, c)
		m["ce-traceparent"] = c["traceparent"]
	}
	return m
}

// gocloudPublisher publishes through a gocloud.dev/pubsub topic, which
// returns from Send once the driver has the broker's answer (RabbitMQ's
// publisher confirms).
type gocloudPublisher struct {
	topic *pubsub.Topic
	// after, when set, runs after each send (a NATS flush).
	after func(ctx context.Context) error
	// closer, when set, closes the connection under the topic.
	closer func() error
}

func (p *gocloudPublisher) publish(ctx context.Context, e storage.Event, attrs map[string]string) (string, error) {
	if err := p.topic.Send(ctx, &pubsub.Message{Body: e.Data, Metadata: attrs}); err != nil {
		return "", err
	}
	if p.after != nil {
		if err := p.after(ctx); err != nil {
			return "", err
		}
	}
	return "published", nil
}

func (p *gocloudPublisher) close(ctx context.Context) error {
	err := p.topic.Shutdown(ctx)
	if p.closer != nil {
		err = errors.Join(err, p.closer())
	}
	return err
}

// openGocloud opens u through gocloud.dev's URL mux.
func openGocloud(ctx context.Context, u *url.URL) (publisher, error) {
	t, err := pubsub.OpenTopic(ctx, u.String())
	if err != nil {
		return nil, err
	}
	return &gocloudPublisher{topic: t}, nil
}
