package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// hookReceiver is a webhook receiver on loopback that verifies every
// request with the secret the UI showed, with the Standard Webhooks
// library, and keeps the event types of those that verified.
type hookReceiver struct {
	*httptest.Server
	mu      sync.Mutex
	secret  string
	types   []string
	refused int
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		defer h.mu.Unlock()
		wh, err := standardwebhooks.NewWebhook(h.secret)
		if err == nil {
			err = wh.Verify(body, r.Header)
		}
		if err != nil {
			h.refused++
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var ev struct{ Type string }
		_ = json.Unmarshal(body, &ev)
		h.types = append(h.types, ev.Type)
		io.WriteString(w, `{"received":true}`)
	}))
	t.Cleanup(h.Close)
	return h
}

// got returns the event types received and how many requests were refused.
func (h *hookReceiver) got() ([]string, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string{}, h.types...), h.refused
}

// TestAdminWebhooks creates a webhook in the UI, copies the secret it
// shows once, pings a local receiver that verifies the signature with
// that secret, uploads an image and finds its delivery in the log, with
// its attempt; the pages must not overflow with a long receiver URL.
func TestAdminWebhooks(t *testing.T) {
	b := newBrowser(t)
	rc := newHookReceiver(t)
	// A short retry window, so that a receiver that always fails gets its
	// subscription marked failing within the test.
	s := startServer(t, "accessControl:\n  database: true\noutbound:\n  allow: [\"127.0.0.1\"]\nevents:\n  interval: 100ms\n  topics: [\"mem://admin-sinks\"]\n"+
		"webhooks:\n  retryMin: 100ms\n  retryMax: 200ms\n  retryFor: 1s\n")
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "receiver down for maintenance", http.StatusServiceUnavailable)
	}))
	t.Cleanup(down.Close)
	admin, ok := parseAdminKey(s.waitOutput(t, "private key:"))
	if !ok {
		t.Fatal("no admin key printed")
	}
	ui := s.URL + "/admin"
	b.signIn(ui, admin, "overview")
	if n := b.count(`nav a[href$="/admin/webhooks"]`); n != 1 {
		t.Fatalf("the navigation has %d Webhooks entries", n)
	}
	b.open(ui+"/webhooks", "webhooks-empty")
	// Where events go: the topic and the subscriptions, each with its
	// backlog.
	if sinks := b.text("#sinks"); !strings.Contains(sinks, "topic:mem://admin-sinks") || !strings.Contains(sinks, "webhooks") {
		t.Fatalf("the sinks table says %q", sinks)
	}

	hookURL := rc.URL + "/receivers/vitrine/" + strings.Repeat("a-rather-long-path-segment/", 5) + "events?tenant=example-tenant-with-a-long-name"
	b.do(chromedp.SetValue(chromedp.ID("nw-url"), hookURL),
		chromedp.SetValue(chromedp.ID("nw-events"), "io.vitrine.imag.*"))
	b.submit(`form[action$="/webhooks"] button[type=submit]`, "webhook-refused")
	if msg := b.text("#nw-events-error"); !strings.Contains(msg, "matches no event type") {
		t.Fatalf("a mistyped pattern: the events field says %q", msg)
	}
	b.do(chromedp.SetValue(chromedp.ID("nw-events"), "io.vitrine.image.*\nio.vitrine.metadata.*"),
		chromedp.SetValue(chromedp.ID("nw-description"), "search index"))
	b.submit(`form[action$="/webhooks"] button[type=submit]`, "webhook-created")
	secret := eval[string](b, `document.getElementById("created-secret-value").value`)
	if !strings.HasPrefix(secret, "whsec_") || !strings.Contains(b.text("#created-secret"), "shown only this once") ||
		!strings.Contains(b.text("#verify-lines"), secret) {
		t.Fatalf("after creation: secret %q, card %q", secret, b.text("#created-secret"))
	}
	rc.mu.Lock()
	rc.secret = secret
	rc.mu.Unlock()
	hook := strings.SplitN(b.location(), "?", 2)[0]
	b.open(hook, "webhook")
	if n := b.count("#created-secret"); n != 0 {
		t.Fatal("the secret is shown again")
	}

	b.submit(`form[action$="/ping"] button[type=submit]`, "webhook-pinged")
	if res := b.text("#ping-result"); !strings.Contains(res, "Delivered") || !strings.Contains(res, "200") || !strings.Contains(res, `{"received":true}`) {
		t.Fatalf("ping result: %q", res)
	}
	if types, refused := rc.got(); len(types) != 1 || types[0] != "io.vitrine.webhook.ping" || refused != 0 {
		t.Fatalf("the receiver verified %v and refused %d", types, refused)
	}

	r := s.writeJSON(t, http.MethodPost, "/webhooks", map[string]any{"url": down.URL + "/hook", "events": []string{"io.vitrine.image.added"},
		"users": []string{"alice"}, "description": "always down"}, admin)
	wantStatus(t, "create a webhook through the API", r, http.StatusCreated)
	var downHook struct{ ID string }
	r.JSON(t, &downHook)
	r = s.write(t, http.MethodPost, "/users/alice/images", testPNG(t, 64, 48, 1), admin)
	wantStatus(t, "upload", r, http.StatusCreated)
	// The delivery goes out from the events worker; the log shows it once
	// it is recorded.
	deadline := time.Now().Add(60 * time.Second)
	for {
		b.do(chromedp.Navigate(hook + "?state=delivered"))
		if b.count("#deliveries tbody.delivery") > 0 {
			break
		}
		if time.Now().After(deadline) {
			types, refused := rc.got()
			t.Fatalf("no delivered delivery in the log within 60 s; the receiver got %v, refused %d", types, refused)
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.open(hook, "webhook-log")
	row := b.text("#deliveries tbody.delivery")
	for _, want := range []string{"io.vitrine.image.added", "users/alice/images/", "delivered", "200", "Redeliver"} {
		if !strings.Contains(row, want) {
			t.Errorf("the log's delivery lacks %q: %q", want, row)
		}
	}
	// At 1280 px the log shows every column, the redeliver button
	// included, without scrolling the table.
	if out := eval[int](b, `Array.from(document.querySelectorAll("#deliveries button")).filter(e => {
		const box = e.closest(".table-scroll").getBoundingClientRect(), r = e.getBoundingClientRect();
		return r.right > box.right || r.left < box.left;
	}).length`); out > 0 {
		t.Errorf("%d redeliver buttons are cut off at 1280 px", out)
	}
	b.do(chromedp.Click(chromedp.CSS("#deliveries details.attempts summary"), chromedp.NodeVisible))
	if a := b.text("#deliveries details.attempts[open] .attempt-list"); !strings.Contains(a, "200") || !strings.Contains(a, "ms") ||
		!strings.Contains(a, `{"received":true}`) {
		t.Errorf("the delivery's attempt: %q", a)
	}
	b.check("webhook-log-attempts")
	if types, refused := rc.got(); len(types) != 2 || types[1] != "io.vitrine.image.added" || refused != 0 {
		t.Errorf("the receiver verified %v and refused %d", types, refused)
	}

	// The receiver that is always down: after retryFor its delivery is
	// failed and its subscription marked failing.
	for deadline := time.Now().Add(60 * time.Second); ; {
		b.do(chromedp.Navigate(ui + "/webhooks/" + downHook.ID + "?state=failed"))
		if b.count("#deliveries tbody.delivery") > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the delivery to a receiver always down did not fail within 60 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.open(ui+"/webhooks/"+downHook.ID, "webhook-failing")
	if badge := b.text(".badge-bad"); !strings.HasPrefix(badge, "failing since ") {
		t.Errorf("the failing webhook's badge: %q", badge)
	}
	if row := b.text("#deliveries tbody.delivery"); !strings.Contains(row, "failed") || !strings.Contains(row, "503") {
		t.Errorf("the failed delivery: %q", row)
	}
	if n := eval[int](b, `Array.from(document.querySelectorAll(".table-scroll")).filter(s => s.scrollWidth > s.clientWidth).length`); n > 0 {
		t.Errorf("the delivery log scrolls sideways at 1280 px")
	}

	b.open(ui+"/webhooks", "webhooks-list")
	if n := b.count("#webhooks .badge-bad"); n != 1 {
		t.Errorf("%d failing badges in the list, want 1", n)
	}
	if list := b.text("#webhooks"); !strings.Contains(list, hookURL) || !strings.Contains(list, "active") || !strings.Contains(list, "search index") {
		t.Errorf("the list shows %q", list)
	}
	if n := eval[int](b, `Array.from(document.querySelectorAll(".table-scroll")).filter(s => s.scrollWidth > s.clientWidth).length`); n > 0 {
		t.Errorf("the list of webhooks scrolls sideways at 1280 px")
	}
	// A long receiver URL wraps: neither page is wider than the screen.
	for _, page := range []string{ui + "/webhooks", hook} {
		b.do(chromedp.Navigate(page))
		for _, w := range []int64{1280, 375} {
			b.do(chromedp.EmulateViewport(w, 900))
			if over := eval[int](b, `document.documentElement.scrollWidth - window.innerWidth`); over > 0 {
				t.Errorf("%s is %d px wider than a %d px screen", page, over, w)
			}
		}
		b.do(chromedp.EmulateViewport(1280, 900))
	}
}
