package outbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"gocloud.dev/pubsub"
	_ "gocloud.dev/pubsub/mempubsub"

	"github.com/vitrine/vitrine/api/outbox"
	"github.com/vitrine/vitrine/api/webhook"
	"github.com/vitrine/vitrine/storage"
)

// rig is an Outbox over a SQLite outbox of its own, with its two passes
// run as the server's workers run them: at an interval and when woken.
type rig struct {
	t   *testing.T
	db  *storage.DB
	box *outbox.Outbox
	ctx context.Context // the CLI's: its changes are audited, so they write events
}

// newRig starts o's Outbox (o.DB and o.Log are the rig's) until the test
// ends, passing every interval.
func newRig(t *testing.T, o outbox.Options, interval time.Duration) *rig {
	t.Helper()
	db, err := storage.Open(t.Context(), "sqlite://"+t.TempDir()+"/vitrine.db", storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.SetEvents(true)
	o.DB, o.Log = db, slog.New(slog.NewTextHandler(io.Discard, nil))
	r := &rig{t: t, db: db, box: outbox.New(o), ctx: storage.WithActor(context.Background(), storage.Actor{Key: "cli"})}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	loop := func(pass func(context.Context) (int, error), wake <-chan struct{}) {
		wg.Go(func() {
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for {
				if _, err := pass(ctx); err != nil && ctx.Err() == nil {
					t.Logf("pass: %v", err)
				}
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				case <-wake:
				}
			}
		})
	}
	loop(r.box.FanOut, db.EventsWritten())
	loop(r.box.Deliver, r.box.Wakeups())
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		r.box.Stop()
		_ = db.Close()
	})
	return r
}

// change makes a change to key k (its creation, then each call a rule
// added), and returns its subject.
func (r *rig) change(k string) string {
	r.t.Helper()
	if _, err := r.db.AddRules(r.ctx, k, []storage.Rule{{Resources: []string{"image.get"}, Users: []string{"*"}}}); err != nil {
		if _, err := r.db.CreateKey(r.ctx, storage.Key{PublicKey: k, PrivateKey: "a-private-key-of-some-length"}, nil); err != nil {
			r.t.Fatal(err)
		}
	}
	return "keys/" + k
}

// subscribe subscribes rc to every event of every user.
func (r *rig) subscribe(rc *receiver) string {
	r.t.Helper()
	w := storage.Webhook{ID: fmt.Sprintf("hook%p", rc), URL: rc.srv.URL, Events: []string{"*"}, Users: []string{"*"},
		Secret: rc.secret, Active: true}
	if err := r.db.CreateWebhook(r.ctx, &w); err != nil {
		r.t.Fatal(err)
	}
	return w.ID
}

// receiver is a webhook receiver on loopback that verifies every request
// with the Standard Webhooks reference library.
type receiver struct {
	t      *testing.T
	srv    *httptest.Server
	secret string
	wh     *standardwebhooks.Webhook
	// answer decides the status of the n-th request (0-based); 204 when
	// nil. It may block.
	answer func(n int) int

	mu        sync.Mutex
	requests  int
	inFlight  int
	maxAtOnce int
	tries     map[string]int // requests per event id
	got       []string       // "<subject> <id>" of each event taken (2xx), in order
}

func newReceiver(t *testing.T, answer func(n int) int) *receiver {
	rc := &receiver{t: t, secret: webhook.NewSecret(), answer: answer, tries: map[string]int{}}
	var err error
	if rc.wh, err = standardwebhooks.NewWebhook(rc.secret); err != nil {
		t.Fatal(err)
	}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if err := rc.wh.Verify(body, r.Header); err != nil {
		rc.t.Errorf("signature of %s: %v", r.Header.Get("webhook-id"), err)
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var ev struct{ ID, Subject string }
	if err := json.Unmarshal(body, &ev); err != nil || ev.ID != r.Header.Get("webhook-id") {
		rc.t.Errorf("event %s (%v)", body, err)
	}
	rc.mu.Lock()
	n := rc.requests
	rc.requests++
	rc.tries[ev.ID]++
	rc.inFlight++
	rc.maxAtOnce = max(rc.maxAtOnce, rc.inFlight)
	rc.mu.Unlock()
	status := http.StatusNoContent
	if rc.answer != nil {
		status = rc.answer(n)
	}
	rc.mu.Lock()
	rc.inFlight--
	if status < 300 {
		rc.got = append(rc.got, ev.Subject+" "+ev.ID)
	}
	rc.mu.Unlock()
	w.WriteHeader(status)
}

// taken returns the events taken so far.
func (rc *receiver) taken() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.got)
}

// waitFor polls cond until it holds, failing the test after a minute (a
// guard against a hang, not a measure).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
	}
}

// TestEverySinkItsOwnProgress: a webhook that fails its first answers, a
// healthy one and a topic each get every event once taken, in order per
// subject; the failing one's retries carry the same id and its delivery
// log keeps every attempt; and /status's sinks say so.
func TestEverySinkItsOwnProgress(t *testing.T) {
	// A name of its own: mem:// topics live as long as the process.
	u := fmt.Sprintf("mem://progress-%d", time.Now().UnixNano())
	topic, err := pubsub.OpenTopic(t.Context(), u) // the subscription needs the topic
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = topic.Shutdown(context.Background()) })
	sub, err := pubsub.OpenSubscription(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Shutdown(context.Background()) })
	bus, err := outbox.NewBus(u, u)
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, outbox.Options{Client: &http.Client{}, Buses: []*outbox.Bus{bus},
		Webhooks: outbox.WebhooksConfig{RetryMin: 10 * time.Millisecond, RetryMax: 40 * time.Millisecond}}, 20*time.Millisecond)
	flaky := newReceiver(t, func(n int) int {
		if n < 3 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	healthy := newReceiver(t, nil)
	flakyID := r.subscribe(flaky)
	r.subscribe(healthy)
	var subjects []string
	for i := range 12 {
		subjects = append(subjects, r.change(fmt.Sprintf("k%d", i%3)))
	}

	var onBus []string
	for len(keysOf(onBus, subjects)) < len(subjects) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		m, err := sub.Receive(ctx)
		cancel()
		if err != nil {
			t.Fatalf("the topic's event %d: %v", len(onBus), err)
		}
		m.Ack()
		if m.Metadata["ce-source"] != storage.EventSource {
			t.Errorf("ce-source = %q, want %q", m.Metadata["ce-source"], storage.EventSource)
		}
		onBus = append(onBus, m.Metadata["ce-subject"]+" "+m.Metadata["ce-id"])
	}
	for _, rc := range []*receiver{flaky, healthy} {
		waitFor(t, "every event taken", func() bool { return len(rc.taken()) >= len(subjects) })
	}
	// Every sink took each key's four changes; the webhooks in the one
	// order the outbox keeps per subject (a mem:// subscription may hand
	// messages over out of order, so the topic's are compared as a set).
	want := byKey(keysOf(healthy.taken(), subjects))
	got := byKey(keysOf(flaky.taken(), subjects))
	published := byKey(keysOf(onBus, subjects))
	for _, s := range subjects[:3] {
		if len(want[s]) != 4 || !slices.Equal(got[s], want[s]) {
			t.Errorf("%s: the flaky receiver took %v, the healthy one %v: want the same four in the same order", s, got[s], want[s])
		}
		if !slices.Equal(slices.Sorted(slices.Values(published[s])), slices.Sorted(slices.Values(want[s]))) {
			t.Errorf("%s: the topic took %v, the webhooks %v", s, published[s], want[s])
		}
	}
	flaky.mu.Lock()
	retried := 0
	for _, n := range flaky.tries {
		retried += n - 1
	}
	flaky.mu.Unlock()
	if retried != 3 {
		t.Errorf("the flaky receiver was sent %d retries, want 3 (the same ids again)", retried)
	}
	waitFor(t, "the attempts recorded", func() bool {
		ds, _, err := r.db.Deliveries(t.Context(), storage.WebhookSink(flakyID), storage.DeliveryQuery{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		attempts := 0
		for _, d := range ds {
			attempts += len(d.Log)
		}
		return attempts == len(ds)+3
	})
	sinks, err := r.box.Sinks(t.Context())
	if err != nil || len(sinks) != 2 || sinks[0].Kind != "topic" || sinks[1].Kind != "webhooks" || sinks[1].Failing != 0 {
		t.Errorf("sinks %+v (%v), want the topic and the webhooks, none failing", sinks, err)
	}
}

// keysOf keeps the lines ("<subject> <id>") of subjects (the webhooks
// also hear of their own creation, webhooks/<id>).
func keysOf(lines, subjects []string) []string {
	return slices.DeleteFunc(slices.Clone(lines), func(l string) bool {
		subject, _, _ := strings.Cut(l, " ")
		return !slices.Contains(subjects, subject)
	})
}

// byKey groups lines ("<subject> <id>") by subject, in order.
func byKey(lines []string) map[string][]string {
	out := map[string][]string{}
	for _, l := range lines {
		subject, id, _ := strings.Cut(l, " ")
		out[subject] = append(out[subject], id)
	}
	return out
}

// TestSlowSinkHoldsNothingElse: a receiver that does not answer holds at
// most webhooks.concurrency attempts of its own, and another
// subscription's events go out meanwhile.
func TestSlowSinkHoldsNothingElse(t *testing.T) {
	r := newRig(t, outbox.Options{Client: &http.Client{}, Webhooks: outbox.WebhooksConfig{Concurrency: 2, Timeout: time.Minute}},
		20*time.Millisecond)
	release := make(chan struct{})
	slow := newReceiver(t, func(int) int { <-release; return http.StatusOK })
	defer close(release)
	fast := newReceiver(t, nil)
	r.subscribe(slow)
	r.subscribe(fast)
	const n = 6
	for i := range n {
		r.change(fmt.Sprintf("s%d", i))
	}
	waitFor(t, "the fast receiver's events", func() bool { return len(fast.taken()) >= n })
	slow.mu.Lock()
	defer slow.mu.Unlock()
	if slow.maxAtOnce > 2 || slow.requests > 2 {
		t.Fatalf("the slow receiver had %d requests, %d at once; webhooks.concurrency is 2", slow.requests, slow.maxAtOnce)
	}
}

// TestGivenUpMarksTheSubscription: a receiver that fails past
// webhooks.retryFor has the delivery given up on (failed, never dropped)
// and its subscription marked failing, and /status counts it.
func TestGivenUpMarksTheSubscription(t *testing.T) {
	r := newRig(t, outbox.Options{Client: &http.Client{}, Webhooks: outbox.WebhooksConfig{RetryMin: 10 * time.Millisecond,
		RetryMax: 20 * time.Millisecond, RetryFor: 200 * time.Millisecond}}, 20*time.Millisecond)
	dead := newReceiver(t, func(int) int { return http.StatusInternalServerError })
	id := r.subscribe(dead)
	r.change("gone")
	waitFor(t, "the subscription marked failing", func() bool {
		w, err := r.db.Webhook(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		return !w.FailingSince.IsZero()
	})
	failed, _, err := r.db.Deliveries(t.Context(), storage.WebhookSink(id),
		storage.DeliveryQuery{State: storage.DeliveryFailed, Filter: true})
	if err != nil || len(failed) == 0 {
		t.Fatalf("failed deliveries %+v (%v), want the given-up one kept", failed, err)
	}
	sinks, err := r.box.Sinks(t.Context())
	if err != nil || len(sinks) != 1 || sinks[0].Failing != 1 || sinks[0].Failed == 0 {
		t.Errorf("sinks %+v (%v), want the webhooks with one failing and the given-up delivery counted", sinks, err)
	}
}
