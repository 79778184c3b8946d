package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/vitrine/vitrine/api/webhook"
	"github.com/vitrine/vitrine/storage"
)

// receiver is a webhook receiver on loopback that verifies every request
// with the Standard Webhooks reference library and keeps what it got.
type receiver struct {
	t      *testing.T
	srv    *httptest.Server
	secret string
	wh     *standardwebhooks.Webhook
	// answer decides the status of the n-th request (0-based); 204 when
	// nil. It may block.
	answer func(n int, r *http.Request) int

	mu        sync.Mutex
	requests  int
	got       []string // "<subject> <type> <id>" of each 2xx-answered event, in order
	ids       map[string]int
	inFlight  int
	maxAtOnce int
	arrived   chan string
}

func newReceiver(t *testing.T, answer func(n int, r *http.Request) int) *receiver {
	rc := &receiver{t: t, secret: webhook.NewSecret(), answer: answer, ids: map[string]int{}, arrived: make(chan string, 10000)}
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
	rc.mu.Lock()
	n := rc.requests
	rc.requests++
	rc.inFlight++
	rc.maxAtOnce = max(rc.maxAtOnce, rc.inFlight)
	rc.mu.Unlock()
	defer func() {
		rc.mu.Lock()
		rc.inFlight--
		rc.mu.Unlock()
	}()
	if err := rc.wh.Verify(body, r.Header); err != nil {
		rc.t.Errorf("signature of %s: %v", r.Header.Get("webhook-id"), err)
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var ev struct {
		SpecVersion, ID, Type, Subject, Source string
		Data                                   map[string]any
	}
	if err := json.Unmarshal(body, &ev); err != nil || ev.SpecVersion != "1.0" || ev.ID != r.Header.Get("webhook-id") ||
		ev.Source != storage.EventSource || r.Header.Get("Content-Type") != webhook.ContentType {
		rc.t.Errorf("event %s (%v), headers %v", body, err, r.Header)
	}
	status := http.StatusNoContent
	if rc.answer != nil {
		status = rc.answer(n, r)
	}
	if status < 300 {
		line := ev.Subject + " " + ev.Type + " " + ev.ID
		rc.mu.Lock()
		rc.got = append(rc.got, line)
		rc.ids[ev.ID]++
		rc.mu.Unlock()
		rc.arrived <- line
	}
	w.WriteHeader(status)
}

// wait waits for n events taken (2xx) and returns every one taken.
func (rc *receiver) wait(n int) []string {
	rc.t.Helper()
	timeout := time.After(2 * time.Minute) // a guard against a hang, not a measure
	for range n {
		select {
		case <-rc.arrived:
		case <-timeout:
			rc.mu.Lock()
			defer rc.mu.Unlock()
			rc.t.Fatalf("%d events taken of %d: %v", len(rc.got), n, rc.got)
		}
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.got)
}

// subscribe creates a webhook for rc through the API at base.
func (rc *receiver) subscribe(base string, events, users []string) string {
	rc.t.Helper()
	b, _ := json.Marshal(map[string]any{"url": rc.srv.URL + "/hook", "events": events, "users": users, "secret": rc.secret})
	var created struct{ ID, Secret string }
	if err := json.Unmarshal(call(rc.t, http.MethodPost, base+"/webhooks", string(b)), &created); err != nil || created.Secret != rc.secret {
		rc.t.Fatalf("created %+v (%v)", created, err)
	}
	return created.ID
}

const webhooksAppConfig = `
accessControl:
  keys:
    - publicKey: events
      privateKey: events-secret
      rules: [{group: all, users: "*"}]
events:
  interval: 20ms
webhooks:
  retryMin: 20ms
  retryMax: 100ms
  %s
outbound:
  allow: [127.0.0.1]
`

// runApp runs an App with cfg until the test ends and returns its base URL.
func runApp(t *testing.T, cfg string) string {
	t.Helper()
	a, addr := testApp(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return <-addr
}

// TestWebhooksDelivered: every change reaches the subscriptions that
// match it, signed, once, in order per subject; a subscription sees only
// its event types and users, and nothing from before it existed.
func TestWebhooksDelivered(t *testing.T) {
	base := runApp(t, fmt.Sprintf(webhooksAppConfig, ""))
	upload(t, base, color.NRGBA{G: 255, A: 255}) // before any subscription: no one hears of it
	images, all := newReceiver(t, nil), newReceiver(t, nil)
	images.subscribe(base, []string{"io.vitrine.image.*", "io.vitrine.metadata.*"}, []string{"u"})
	all.subscribe(base, []string{"*"}, []string{"*"})
	other := newReceiver(t, nil)
	other.subscribe(base, []string{"*"}, []string{"someone-else"})
	want := makeChanges(t, base)
	call(t, http.MethodPut, base+"/keys/newkey", `{"privateKey":"a-private-key-of-some-length"}`)

	got := images.wait(len(want))
	for subject, w := range bySubject(want) {
		if g := bySubject(got)[subject]; !slices.Equal(g, w) {
			t.Errorf("%s received %v, want %v", subject, g, w)
		}
	}
	// all: its own creation and the third subscription's, the changes,
	// the key.
	gotAll := all.wait(2 + len(want) + 1)
	if types := bySubject(gotAll); !slices.Equal(types["keys/newkey"], []string{"io.vitrine.key.created"}) {
		t.Errorf("all received %v", gotAll)
	}
	for _, rc := range []*receiver{images, all} {
		for id, n := range rc.ids {
			if n != 1 {
				t.Errorf("event %s received %d times", id, n)
			}
		}
	}
	if len(other.got) != 0 || len(images.got) != len(want) {
		t.Errorf("another user's subscription got %v; the images one got %d events, want %d", other.got, len(images.got), len(want))
	}
}

// TestWebhookRetries: a receiver that fails gets the same event again
// (same webhook-id) until it takes it, and the log shows each attempt;
// one that fails past retryFor is given up on, its subscription marked
// failing, and the mark goes with the next delivery that succeeds.
func TestWebhookRetries(t *testing.T) {
	base := runApp(t, fmt.Sprintf(webhooksAppConfig, "retryFor: 1s"))
	flaky := newReceiver(t, func(n int, _ *http.Request) int {
		if n < 3 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	id := flaky.subscribe(base, []string{"io.vitrine.image.added"}, []string{"*"})
	upload(t, base, color.NRGBA{R: 1, A: 255})
	got := flaky.wait(1)
	var log struct {
		Deliveries []struct {
			EventID, State string
			Attempts       int
			Log            []struct {
				Status int
				Error  *string
			}
		}
	}
	waitFor(t, "the delivery recorded", func() bool {
		if err := json.Unmarshal(read(t, base+"/webhooks/"+id+"/deliveries"), &log); err != nil {
			t.Fatal(err)
		}
		return len(log.Deliveries) == 1 && log.Deliveries[0].State != "pending"
	})
	if len(log.Deliveries) != 1 || log.Deliveries[0].State != "delivered" || log.Deliveries[0].Attempts != 4 ||
		len(log.Deliveries[0].Log) != 4 || log.Deliveries[0].Log[0].Status != 503 || log.Deliveries[0].Log[3].Status != 200 ||
		!strings.HasSuffix(got[0], log.Deliveries[0].EventID) {
		t.Fatalf("log %+v, received %v", log, got)
	}

	// A receiver that never takes anything: given up after retryFor.
	var mended atomic.Bool
	dead := newReceiver(t, func(int, *http.Request) int {
		if mended.Load() {
			return http.StatusOK
		}
		return http.StatusInternalServerError
	})
	deadID := dead.subscribe(base, []string{"io.vitrine.image.added"}, []string{"*"})
	upload(t, base, color.NRGBA{R: 2, A: 255})
	var hook struct {
		Failing      bool
		FailingSince *string
	}
	getHook := func() {
		if err := json.Unmarshal(read(t, base+"/webhooks/"+deadID), &hook); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the webhook failing", func() bool { getHook(); return hook.Failing })
	if hook.FailingSince == nil {
		t.Fatalf("webhook %+v is not failing", hook)
	}
	var failed struct{ Deliveries []struct{ ID int64 } }
	if err := json.Unmarshal(read(t, base+"/webhooks/"+deadID+"/deliveries?state=failed"), &failed); err != nil || len(failed.Deliveries) != 1 {
		t.Fatalf("failed deliveries %+v (%v)", failed, err)
	}
	// The receiver mends; a redelivery of the failed event succeeds and
	// clears the mark.
	mended.Store(true)
	call(t, http.MethodPost, fmt.Sprintf("%s/webhooks/%s/deliveries/%d/redeliver", base, deadID, failed.Deliveries[0].ID), "")
	dead.wait(1)
	waitFor(t, "the failing mark cleared by a delivery", func() bool { getHook(); return !hook.Failing })
}

// read makes a read with the test key's access token and fails unless it
// succeeds.
func read(t *testing.T, rawURL string) []byte {
	t.Helper()
	sep := "?"
	if strings.Contains(rawURL, "?") {
		sep = "&"
	}
	rawURL += sep + "publicKey=events"
	mac := hmac.New(sha256.New, []byte("events-secret"))
	mac.Write([]byte(rawURL))
	res, err := http.Get(rawURL + "&accessToken=" + hex.EncodeToString(mac.Sum(nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d %s", rawURL, res.StatusCode, body)
	}
	return body
}

// waitFor polls cond until it holds, failing the test after a minute (a
// guard against a hang, not a measure).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
	}
}

// TestDeliveriesWaitBehindAnAttempt: a subject's deliveries to a
// receiver that is still answering the one before are written pending and
// go out, in order, as soon as it answers, not at the next tick (an hour
// here: only the wakes can send them); the first of every subject goes at
// once, taken by the instance that fans it out.
func TestDeliveriesWaitBehindAnAttempt(t *testing.T) {
	cfg := strings.Replace(fmt.Sprintf(webhooksAppConfig, "timeout: 1m"), "interval: 20ms", "interval: 1h", 1)
	base := runApp(t, cfg)
	release := make(chan struct{})
	rc := newReceiver(t, func(n int, _ *http.Request) int {
		if n == 0 {
			<-release
		}
		return 204
	})
	rc.subscribe(base, []string{"io.vitrine.image.*", "io.vitrine.metadata.*"}, []string{"u"})
	a := upload(t, base, color.NRGBA{R: 200, A: 255})
	img := base + "/users/u/images/" + a
	call(t, http.MethodPut, img+"/metadata", `{"title":"one"}`)
	call(t, http.MethodPost, img+"/metadata", `{"tag":"two"}`)
	// Another subject's event goes out while the first one's attempt
	// hangs: it waits behind nothing.
	b := upload(t, base, color.NRGBA{G: 200, A: 255})
	if got := rc.wait(1); len(got) != 1 || !strings.HasPrefix(got[0], "users/u/images/"+b+" io.vitrine.image.added") {
		t.Fatalf("while the first attempt hangs: %v, want only %s added", got, b)
	}
	close(release)
	got := rc.wait(3)
	want := []string{"io.vitrine.image.added", "io.vitrine.metadata.replaced", "io.vitrine.metadata.merged"}
	if g := bySubject(got)["users/u/images/"+a]; !slices.Equal(g, want) {
		t.Fatalf("%s received %v, want %v", a, g, want)
	}
}
