package outbox

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// EventsConfig is the `events` section: where every change is published.
type EventsConfig struct {
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
func (c EventsConfig) Validate() error {
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
		if _, err := NewBus(u, storage.RedactURL(u)); err != nil {
			return err
		}
	}
	return nil
}

// retention is events.retention or its default.
func (c EventsConfig) retention() time.Duration { return cmp.Or(c.Retention, 72*time.Hour) }

// WebhooksConfig is the `webhooks` section: the delivery of events to
// subscriptions.
type WebhooksConfig struct {
	// Enabled offers /webhooks and delivers to its subscriptions (default
	// true). Off, the routes answer 404 and no delivery is made.
	Enabled *bool `yaml:"enabled"`
	// Timeout bounds one attempt, from connecting to the answer's last
	// byte read (default 10s).
	Timeout time.Duration `yaml:"timeout"`
	// Concurrency is how many attempts run at once per subscription
	// (default 4); the subscriptions do not share a limit.
	Concurrency int `yaml:"concurrency"`
	// RetryMin and RetryMax bound the backoff between attempts of a
	// delivery: RetryMin after the first failure, doubling to RetryMax,
	// each wait drawn between its half and its whole (defaults 5s, 1h).
	RetryMin time.Duration `yaml:"retryMin"`
	RetryMax time.Duration `yaml:"retryMax"`
	// RetryFor is how long a delivery is retried before it is given up on
	// and its subscription marked failing (default 24h).
	RetryFor time.Duration `yaml:"retryFor"`
	// Retention is how long finished deliveries and their attempts stay
	// in a subscription's log (default 168h).
	Retention time.Duration `yaml:"retention"`
}

// Validate reports negative durations, RetryMax under RetryMin, or a
// negative concurrency.
func (c WebhooksConfig) Validate() error {
	var errs []error
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"timeout", c.Timeout}, {"retryMin", c.RetryMin}, {"retryMax", c.RetryMax}, {"retryFor", c.RetryFor}, {"retention", c.Retention}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("webhooks: %s must not be negative", d.name))
		}
	}
	if c.Concurrency < 0 {
		errs = append(errs, errors.New("webhooks: concurrency must not be negative"))
	}
	if c.WithDefaults().RetryMax < c.WithDefaults().RetryMin {
		errs = append(errs, errors.New("webhooks: retryMax must not be under retryMin"))
	}
	return errors.Join(errs...)
}

// WithDefaults fills the zero fields.
func (c WebhooksConfig) WithDefaults() WebhooksConfig {
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Timeout, 10*time.Second)
	def(&c.RetryMin, 5*time.Second)
	def(&c.RetryMax, time.Hour)
	def(&c.RetryFor, 24*time.Hour)
	def(&c.Retention, 7*24*time.Hour)
	if c.Concurrency == 0 {
		c.Concurrency = 4
	}
	return c
}

// On reports webhooks.enabled (default true).
func (c WebhooksConfig) On() bool { return c.Enabled == nil || *c.Enabled }

// Wanted is the one place that decides whether changes write event rows:
// only while something drains them (topics, webhooks, CDN purgers), so
// that an outbox with no consumer does not grow. Why not write and drop:
// a row no one reads costs an insert per change and a purge. Webhooks
// count while they are enabled, with or without subscriptions: one made
// on any instance must hear of the next change made on every other.
func Wanted(events EventsConfig, webhooks WebhooksConfig, purgers int) bool {
	return len(events.Topics) > 0 || webhooks.On() || purgers > 0
}
