package outbox

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	amqp "github.com/rabbitmq/amqp091-go"
	"gocloud.dev/pubsub/natspubsub"
	"gocloud.dev/pubsub/rabbitpubsub"

	"github.com/vitrine/vitrine/storage"
)

// Why vitrine opens the NATS and RabbitMQ connections itself rather than
// through gocloud's default openers: those dial once per process and never
// again, so a broker that restarted left every later publish failing
// until vitrine restarted; and a plain NATS publish is never acknowledged
// (an event sent while the server was away counted as sent).

// openNATS connects to NATS_SERVER_URL for the subject of u (its host and
// path). With ?natsv2 the attributes are plain NATS headers, as the
// CloudEvents NATS binding defines them, and the publish is a JetStream
// publish that waits for the stream's acknowledgement whenever a stream
// captures the subject (with the event's id as Nats-Msg-Id, so a
// redelivery within the stream's duplicate window is stored once);
// without it, gocloud's encoding for Go clients, flushed to the server.
func openNATS(ctx context.Context, u *url.URL, sawStream *atomic.Bool) (publisher, error) {
	server := os.Getenv("NATS_SERVER_URL")
	if server == "" {
		return nil, errors.New("NATS_SERVER_URL is not set: it names the NATS server of nats:// topics")
	}
	v2 := false
	for p := range u.Query() {
		if strings.ToLower(p) != "natsv2" {
			return nil, fmt.Errorf("invalid query parameter %q (nats:// takes natsv2)", p)
		}
		v2 = true
	}
	// No reconnects of nats.go's own: a lost connection fails the publishes
	// under way, and the Bus dials a new one, so that a publish never sits
	// in a reconnect buffer while it is counted as sent.
	nc, err := nats.Connect(server, nats.Name("vitrine"), nats.Timeout(dialTimeout), nats.NoReconnect(),
		nats.PingInterval(10*time.Second), nats.MaxPingsOutstanding(2))
	if err != nil {
		return nil, fmt.Errorf("nats %s: %w", storage.RedactURL(server), err)
	}
	subject := path.Join(u.Host, u.Path)
	if !v2 {
		t, err := natspubsub.OpenTopic(nc, subject, nil)
		if err != nil {
			nc.Close()
			return nil, err
		}
		return &gocloudPublisher{topic: t, after: nc.FlushWithContext, closer: func() error { nc.Close(); return nil }}, nil
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	p := &natsPublisher{nc: nc, js: js, subject: subject, sawStream: sawStream}
	if err := p.lookStream(ctx); err != nil {
		nc.Close()
		return nil, err
	}
	return p, nil
}

// natsPublisher publishes with native headers.
type natsPublisher struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	subject string
	// sawStream is the Bus's: set once a stream acknowledged a publish,
	// over every connection since, so that a JetStream that stops
	// answering is a failure, never a fall back to plain NATS.
	sawStream *atomic.Bool

	// mu guards stream and looked: the deliveries worker publishes
	// several deliveries of one topic at once.
	mu sync.Mutex
	// stream captures the subject ("" when none did at looked): its
	// acknowledgement is then what counts.
	stream string
	looked time.Time
}

// streamRecheck is how often a publisher without a stream asks again
// whether one captures its subject now.
const streamRecheck = 30 * time.Second

// lookStream asks JetStream which stream captures the subject. A server
// without JetStream, or no stream for the subject, is plain NATS; any
// other failure fails the connection, so that a publish is never counted
// on a guess.
func (p *natsPublisher) lookStream(ctx context.Context) error {
	name, err := p.js.StreamNameBySubject(ctx, p.subject)
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case err == nil:
		p.stream = name
	case p.sawStream.Load():
		// A stream took this topic's events before: without one now (its
		// server restarted without JetStream, the stream is recovering or
		// was deleted) nothing is published until it answers again.
		return fmt.Errorf("nats: no JetStream stream answers for %s, where one acknowledged its events before: %w", p.subject, err)
	case errors.Is(err, jetstream.ErrStreamNotFound), errors.Is(err, jetstream.ErrJetStreamNotEnabled),
		errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount), errors.Is(err, nats.ErrNoResponders):
		p.stream = ""
	default:
		return fmt.Errorf("nats: which stream captures %s: %w", p.subject, err)
	}
	p.looked = time.Now()
	return nil
}

// mode is the stream to wait for ("" for plain NATS) and whether to ask
// JetStream again first.
func (p *natsPublisher) mode() (stream string, look bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stream, p.looked.IsZero() || p.stream == "" && time.Since(p.looked) > streamRecheck
}

func (p *natsPublisher) publish(ctx context.Context, e storage.Event, attrs map[string]string) (string, error) {
	stream, look := p.mode()
	if look {
		if err := p.lookStream(ctx); err != nil {
			return "", err
		}
		stream, _ = p.mode()
	}
	m := &nats.Msg{Subject: p.subject, Data: e.Data, Header: nats.Header{}}
	for k, v := range attrs {
		m.Header[k] = []string{v} // as they are: NATS headers are case-sensitive
	}
	if stream == "" {
		// Plain NATS: the flush's round trip says the server has the
		// message (it hands it to the subscribers connected now; none
		// acknowledges it). Nats-Msg-Id too, for a stream added later.
		m.Header[jetstream.MsgIDHeader] = []string{e.ID}
		if err := p.nc.PublishMsg(m); err != nil {
			return "", err
		}
		if err := p.nc.FlushWithContext(ctx); err != nil {
			return "", err
		}
		return "published (no JetStream stream captures " + p.subject + ")", nil
	}
	// No retries of the client's own: the deliveries worker retries a
	// failed publish itself, with the same Nats-Msg-Id.
	ack, err := p.js.PublishMsg(ctx, m, jetstream.WithMsgID(e.ID), jetstream.WithRetryAttempts(0))
	if err != nil {
		// The stream may be gone: the next attempt asks again (and, as
		// one answered before, fails until one does).
		p.mu.Lock()
		p.looked = time.Time{}
		p.mu.Unlock()
		return "", fmt.Errorf("stream %s of %s: %w", stream, p.subject, err)
	}
	p.sawStream.Store(true)
	if ack.Duplicate {
		return fmt.Sprintf("stream %s had it already", ack.Stream), nil
	}
	return fmt.Sprintf("stream %s, sequence %d", ack.Stream, ack.Sequence), nil
}

func (p *natsPublisher) close(context.Context) error {
	p.nc.Close()
	return nil
}

// openRabbit dials RABBIT_SERVER_URL and opens the exchange of u through
// gocloud's driver, which publishes in confirm mode: a Send returns once
// the broker confirmed the message.
func openRabbit(ctx context.Context, u *url.URL) (publisher, error) {
	server := os.Getenv("RABBIT_SERVER_URL")
	if server == "" {
		return nil, errors.New("RABBIT_SERVER_URL is not set: it names the RabbitMQ server of rabbit:// topics")
	}
	conn, err := amqp.DialConfig(server, amqp.Config{Dial: amqp.DefaultDial(dialTimeout), Heartbeat: 10 * time.Second,
		Properties: amqp.Table{"connection_name": "vitrine"}})
	if err != nil {
		return nil, fmt.Errorf("rabbitmq %s: %w", storage.RedactURL(server), err)
	}
	t, err := (&rabbitpubsub.URLOpener{Connection: conn}).OpenTopicURL(ctx, u)
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	return &gocloudPublisher{topic: t, closer: conn.Close}, nil
}
