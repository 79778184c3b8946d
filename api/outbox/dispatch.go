package outbox

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/vitrine/vitrine/api/webhook"
	"github.com/vitrine/vitrine/storage"
)

// dispatcher is the deliveries worker's state: the attempts under way per
// sink, and the sinks it knows.
type dispatcher struct {
	db     *storage.DB
	cfg    WebhooksConfig
	client *http.Client // the outbound guard's, for webhooks
	// static are the sinks configuration names (CDN purgers), by name.
	static map[string]sink
	log    *slog.Logger
	// wake holds a wake-up for the deliveries worker (Outbox.Wakeups).
	wake  chan struct{}
	trace Tracer

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
	tracker *Tracker
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
		d.wakeUp()
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
		actx, end := d.trace.start(actx, dl.Event, "events deliver", trace.SpanKindClient,
			attribute.String("vitrine.delivery.sink", dl.Sink))
		r = s.send(actx, dl)
		end(r.Err)
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
		d.wakeUp()
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
	return storage.DeliveryPending, time.Now().Add(storage.Backoff(p.min, p.max, dl.Attempts))
}

// mark keeps the subscription's failing mark: set when a delivery is
// given up on, cleared by the next that succeeds.
func (d *dispatcher) mark(ctx context.Context, h storage.Webhook, state storage.DeliveryState) {
	var err error
	switch {
	case state == storage.DeliveryFailed:
		err = d.db.SetWebhookFailing(ctx, h.ID, time.Now())
		d.log.Warn("webhook failing: a delivery was given up on", "webhook", h.ID, "url", storage.RedactURL(h.URL))
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

// wakeUp makes the deliveries worker pass now (Outbox.Wakeups).
func (d *dispatcher) wakeUp() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// stop ends the dispatcher: no attempt starts any more, and it returns
// once the attempts under way are recorded.
func (d *dispatcher) stop() {
	d.mu.Lock()
	d.stopped = true
	d.mu.Unlock()
	d.wg.Wait()
}

// observe tells the tracker how an attempt at dl's sink went: a failure
// is logged (at most once a minute per sink) and shown in /status.
func (d *dispatcher) observe(dl storage.Delivery, a storage.DeliveryAttempt, state storage.DeliveryState) {
	d.tracker.Observe(dl.Sink, Attempt{At: time.Now(), Status: a.Status, Response: a.Response, Err: a.Error,
		GaveUp: state == storage.DeliveryFailed})
}
