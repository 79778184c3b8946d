package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/vitrine/vitrine/api/cdn"
	"github.com/vitrine/vitrine/api/outbox"
	"github.com/vitrine/vitrine/api/webhook"
	"github.com/vitrine/vitrine/engine/schema"
	"github.com/vitrine/vitrine/storage"
)

// The events worker fans each event out to its sinks (a delivery row per
// matching webhook subscription and CDN purger, storage/deliveries.go);
// the deliveries worker here sends them, each sink on its own schedule, so
// that a receiver that is slow or down holds back nothing but its own
// events (README "Webhooks").

// webhooksConfig is the `webhooks` section.
type webhooksConfig struct {
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
func (c webhooksConfig) Validate() error {
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
	if c.withDefaults().RetryMax < c.withDefaults().RetryMin {
		errs = append(errs, errors.New("webhooks: retryMax must not be under retryMin"))
	}
	return errors.Join(errs...)
}

// withDefaults fills the zero fields.
func (c webhooksConfig) withDefaults() webhooksConfig {
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

// enabled reports webhooks.enabled (default true).
func (c webhooksConfig) enabled() bool { return boolOrTrue(c.Enabled) }

// webhookWants reports whether the subscription w receives e: active,
// made before e, one of its patterns matches e's type, and e belongs to
// one of its users (only "*" takes the events of no user).
func webhookWants(w storage.Webhook, e storage.Event) bool {
	if !w.Active || e.Time.Before(w.Created) {
		return false
	}
	typed := false
	for _, p := range w.Events {
		typed = typed || schema.MatchEvent(p, e.Type)
	}
	if !typed {
		return false
	}
	user, owned := eventUser(e.Subject)
	for _, u := range w.Users {
		if u == "*" || (owned && u == user) {
			return true
		}
	}
	return false
}

// eventUser returns the user a subject belongs to (users/<user>/...).
func eventUser(subject string) (string, bool) {
	rest, ok := strings.CutPrefix(subject, "users/")
	if !ok {
		return "", false
	}
	user, _, _ := strings.Cut(rest, "/")
	return user, true
}

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
	retry(cfg webhooksConfig) retryPolicy
}

// policyOf is s's retry policy under cfg.
func policyOf(s sink, cfg webhooksConfig) retryPolicy {
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

// dispatcher is the deliveries worker's state: the attempts under way per
// sink, and the sinks it knows.
type dispatcher struct {
	db     *storage.DB
	cfg    webhooksConfig
	client *http.Client // the outbound guard's, for webhooks
	// static are the sinks configuration names (CDN purgers), by name.
	static map[string]sink
	log    *slog.Logger
	w      *worker

	mu   sync.Mutex
	busy map[string]int
	// stopped: the worker ended; no attempt starts any more.
	stopped bool
	// inflight counts the attempts started and not yet recorded.
	inflight int
	// backlog: pending deliveries may wait that no attempt under way is
	// before (see pass); an attempt that ends then wakes the worker.
	backlog bool
	// hooks are the sinks as last read, at hooksRead (see sinks).
	hooks     map[string]sink
	hooksRead time.Time
	// tracker keeps how each sink's attempts fare, for the log and
	// /status.
	tracker *outbox.Tracker
	wg      sync.WaitGroup

	// The outcomes waiting to be recorded, and whether an attempt is
	// recording them (record).
	recMu     sync.Mutex
	recQueue  []recording
	recording bool
}

// dueBatch is how many due deliveries a pass reads.
const dueBatch = 256

// lease is how long a claimed delivery stays hidden from other instances:
// longer than an attempt can take, so that only a crash lets another
// instance try it again.
func (d *dispatcher) lease() time.Duration { return d.cfg.Timeout + 30*time.Second }

// pass starts an attempt of each due delivery whose sink has a free slot,
// and returns without waiting for them: one slow receiver holds no pass.
func (d *dispatcher) pass(ctx context.Context) (int, error) {
	d.mu.Lock()
	var full []string
	for s, n := range d.busy {
		if n >= d.cfg.Concurrency {
			full = append(full, s)
		}
	}
	d.mu.Unlock()
	for name, s := range d.static {
		if g, ok := s.(gated); ok && !g.available() {
			full = append(full, name)
		}
	}
	due, err := d.db.DueDeliveries(ctx, dueBatch, full)
	d.mu.Lock()
	// Rows may wait behind what this pass found (a subject's next
	// delivery) or behind an attempt under way; with none of either,
	// every delivery written pending since was written by an instance
	// that says so (handoff) or is due at a later pass.
	d.backlog = len(due) > 0 || err != nil || d.inflight > 0 && d.backlog
	d.mu.Unlock()
	if err != nil || len(due) == 0 {
		return 0, err
	}
	sinks, err := d.sinks(ctx, due)
	if err != nil {
		return 0, err
	}
	started := 0
	for _, dl := range due {
		if !d.reserve(dl.Sink) {
			continue
		}
		ok, err := d.db.ClaimDelivery(ctx, dl, d.lease())
		if !ok || err != nil {
			d.done(dl.Sink)
			if err != nil {
				return started, err
			}
			continue
		}
		if d.start(ctx, dl, sinks[dl.Sink]) {
			started++
		}
	}
	return started, nil
}

// reserve takes a slot of sink for an attempt, if one is free.
func (d *dispatcher) reserve(sink string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped || d.busy[sink] >= d.cfg.Concurrency {
		return false
	}
	d.busy[sink]++
	return true
}

// start runs the attempt of dl, whose slot is reserved, unless the worker
// stopped (then the slot goes back and dl waits for its lease).
func (d *dispatcher) start(ctx context.Context, dl storage.Delivery, s sink) bool {
	d.mu.Lock()
	if d.stopped {
		d.mu.Unlock()
		d.done(dl.Sink)
		return false
	}
	d.wg.Add(1)
	d.inflight++
	d.mu.Unlock()
	go d.attempt(ctx, dl, s)
	return true
}

// fanout is how the events worker writes deliveries during its pass
// (ctx): taken where a slot of the sink is free, and then attempted at
// once; the others pending, for a pass of the deliveries worker.
func (d *dispatcher) fanout(ctx context.Context) storage.EventFanout {
	// reserved are the slots the batch under way took and has not handed
	// over yet (the events worker writes one batch at a time).
	var reserved []string
	return storage.EventFanout{
		Take: func(sink string) bool {
			if g, ok := d.static[sink].(gated); ok && !g.available() {
				return false
			}
			if !d.reserve(sink) {
				return false
			}
			reserved = append(reserved, sink)
			return true
		},
		Lease: d.lease(),
		Written: func(taken []storage.Delivery, pending int) {
			d.handoff(ctx, reserved, taken, pending)
			reserved = nil
		},
	}
}

// handoff starts the attempts of the deliveries the events worker wrote
// taken, gives back the slots it reserved for none, and wakes the worker
// for those written pending.
func (d *dispatcher) handoff(ctx context.Context, reserved []string, taken []storage.Delivery, pending int) {
	if pending > 0 {
		d.mu.Lock()
		d.backlog = true
		d.mu.Unlock()
	}
	for _, dl := range taken {
		if i := slices.Index(reserved, dl.Sink); i >= 0 {
			reserved = slices.Delete(reserved, i, i+1)
		}
	}
	for _, s := range reserved {
		d.done(s)
	}
	if pending > 0 {
		d.w.Wake()
	}
	if len(taken) == 0 {
		return
	}
	sinks, err := d.sinks(ctx, taken)
	if err != nil {
		// Each waits for its lease, then goes as a pending one does.
		d.log.Warn("deliveries", "err", err)
		for _, dl := range taken {
			d.done(dl.Sink)
		}
		return
	}
	for _, dl := range taken {
		d.start(ctx, dl, sinks[dl.Sink])
	}
}

// hooksTTL bounds how long a pass trusts the subscriptions it read
// before: a subscription changed on another instance (its URL or secret)
// is sent to as it now is within hooksTTL. A new one is seen at once (see
// sinks).
const hooksTTL = time.Second

// sinks returns every sink by name: the configured ones (CDN purgers) and
// the subscriptions, read again when the last read is older than hooksTTL
// or lacks a sink one of due names (one created since), so that a sink
// missing from the answer is one the database no longer holds.
func (d *dispatcher) sinks(ctx context.Context, due []storage.Delivery) (map[string]sink, error) {
	if d.client == nil {
		return d.static, nil
	}
	d.mu.Lock()
	cached, fresh := d.hooks, time.Since(d.hooksRead) < hooksTTL
	d.mu.Unlock()
	for _, dl := range due {
		if !fresh {
			break
		}
		_, static := d.static[dl.Sink]
		_, hook := cached[dl.Sink]
		fresh = static || hook
	}
	if fresh {
		return cached, nil
	}
	read := time.Now()
	hooks, err := d.db.Webhooks(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]sink, len(d.static)+len(hooks))
	for name, s := range d.static {
		out[name] = s
	}
	for _, h := range hooks {
		out[storage.WebhookSink(h.ID)] = webhookSink{hook: h, client: d.client}
	}
	d.mu.Lock()
	d.hooks, d.hooksRead = out, read
	d.mu.Unlock()
	return out, nil
}

// attempt sends dl to s and records the outcome: delivered, failed for
// good once its retry window is over, or due again after a backoff.
func (d *dispatcher) attempt(ctx context.Context, dl storage.Delivery, s sink) {
	defer d.wg.Done()
	defer d.ended()
	start := time.Now()
	var r webhook.Result
	if s == nil {
		r = webhook.Result{Err: fmt.Errorf("no sink %s: its subscription or purger is gone", dl.Sink)}
	} else {
		actx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
		actx, span := continueTrace(actx, dl.Event.Traceparent, "events deliver", trace.SpanKindClient, dl.Event)
		if span.IsRecording() {
			span.SetAttributes(attribute.String("vitrine.delivery.sink", dl.Sink))
		}
		r = s.send(actx, dl)
		endSpan(span, r.Err)
		cancel()
	}
	// The slot goes back as soon as the receiver answered: recording the
	// outcome waits for other attempts' (record), not for the receiver.
	d.done(dl.Sink)
	a := storage.DeliveryAttempt{At: start, Status: r.Status, Latency: r.Latency, Response: r.Response}
	state, retry := storage.DeliveryDone, time.Time{}
	if r.Err != nil {
		a.Error = r.Err.Error()
		state, retry = d.next(dl, s)
		if ctx.Err() != nil {
			a.Error, state, retry = "the instance stopped during the attempt", storage.DeliveryPending, time.Now()
		}
	}
	if ctx.Err() == nil {
		d.observe(dl, a, state)
	}
	// Why not ctx: the outcome of an attempt made is recorded even while
	// the instance stops.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := d.record(rctx, storage.DeliveryOutcome{ID: dl.ID, Attempt: a, State: state, Retry: retry}); err != nil {
		d.log.Warn("deliveries", "err", err)
	}
	if hook, ok := s.(webhookSink); ok {
		d.mark(rctx, hook.hook, state)
	}
}

// ended counts an attempt recorded, and wakes the worker when deliveries
// may wait (backlog): the subject's next delivery may be due now.
func (d *dispatcher) ended() {
	d.mu.Lock()
	d.inflight--
	wake := d.backlog
	d.mu.Unlock()
	if wake {
		d.w.Wake()
	}
}

// recording is an outcome waiting to be written, and where its writer
// says how that went.
type recording struct {
	o    storage.DeliveryOutcome
	done chan error
}

// recordWindow is how long the first outcome to arrive waits for others
// before they are written together: a change's deliveries to several
// receivers end within it, and one transaction then records them all.
const recordWindow = 10 * time.Millisecond

// record writes o with the outcomes of the attempts that end meanwhile, in
// one transaction: the first attempt to arrive waits recordWindow and
// writes what waits, again until nothing does, and every other waits for
// the write of its own.
func (d *dispatcher) record(ctx context.Context, o storage.DeliveryOutcome) error {
	r := recording{o: o, done: make(chan error, 1)}
	d.recMu.Lock()
	d.recQueue = append(d.recQueue, r)
	if d.recording {
		d.recMu.Unlock()
		return <-r.done
	}
	d.recording = true
	for len(d.recQueue) > 0 {
		d.recMu.Unlock()
		time.Sleep(recordWindow)
		d.recMu.Lock()
		batch := d.recQueue
		d.recQueue = nil
		d.recMu.Unlock()
		outs := make([]storage.DeliveryOutcome, len(batch))
		for i, b := range batch {
			outs[i] = b.o
		}
		err := d.db.FinishDeliveries(ctx, outs)
		for _, b := range batch {
			b.done <- err
		}
		d.recMu.Lock()
	}
	d.recording = false
	d.recMu.Unlock()
	return <-r.done
}

// next decides what follows a failed attempt at s: give up when s's
// retry window is over (or the sink is gone), else retry after its
// backoff, drawn with jitter so that receivers coming back are not hit by
// every instance at once.
func (d *dispatcher) next(dl storage.Delivery, s sink) (storage.DeliveryState, time.Time) {
	if s == nil {
		return storage.DeliveryFailed, time.Time{}
	}
	p := policyOf(s, d.cfg)
	if time.Since(dl.Created) >= p.giveUp {
		return storage.DeliveryFailed, time.Time{}
	}
	return storage.DeliveryPending, time.Now().Add(outbox.Backoff(p.min, p.max, dl.Attempts))
}

// mark keeps the subscription's failing mark: set when a delivery is
// given up on, cleared by the next that succeeds.
func (d *dispatcher) mark(ctx context.Context, h storage.Webhook, state storage.DeliveryState) {
	var err error
	switch {
	case state == storage.DeliveryFailed:
		err = d.db.SetWebhookFailing(ctx, h.ID, time.Now())
		d.log.Warn("webhook failing: a delivery was given up on", "webhook", h.ID, "url", redact(h.URL))
	case state == storage.DeliveryDone && !h.FailingSince.IsZero():
		err = d.db.SetWebhookFailing(ctx, h.ID, time.Time{})
	}
	if err != nil {
		d.log.Warn("deliveries", "err", err)
	}
	if state == storage.DeliveryFailed || state == storage.DeliveryDone && !h.FailingSince.IsZero() {
		// The subscriptions read before no longer hold the mark.
		d.mu.Lock()
		d.hooksRead = time.Time{}
		d.mu.Unlock()
	}
}

// done frees a slot of sink.
func (d *dispatcher) done(sink string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.busy[sink]--; d.busy[sink] <= 0 {
		delete(d.busy, sink)
	}
}

// deliveriesWorker sends the due deliveries every events.interval and
// whenever the events worker fanned something out or an attempt ended;
// on stop it waits for the attempts under way (each bounded by
// webhooks.timeout).
func deliveriesWorker(d *dispatcher, interval time.Duration) *worker {
	d.w = newWorker("deliveries", interval, time.Second, d.pass, d.log)
	d.w.stop = func() {
		d.mu.Lock()
		d.stopped = true
		d.mu.Unlock()
		d.wg.Wait()
	}
	return d.w
}

// retentionWorker deletes finished deliveries older than
// webhooks.retention, hourly.
func retentionWorker(db *storage.DB, cfg webhooksConfig, log *slog.Logger) *worker {
	return newWorker("deliveries retention", time.Hour, time.Hour, counted(func(ctx context.Context) error {
		_, err := db.PurgeDeliveries(ctx, time.Now().Add(-cfg.Retention))
		return err
	}), log)
}
