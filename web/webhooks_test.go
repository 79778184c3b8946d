package web_test

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/api/outbound"
	"github.com/vitrine/vitrine/storage"
	"github.com/vitrine/vitrine/web"
)

// receiver is a webhook receiver on loopback that verifies each request
// with the secret it is given, with the Standard Webhooks library, and
// answers with status and body.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	secret   string
	status   int
	body     string
	verified []string // the webhook-id of each request that verified
	refused  []error
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{status: http.StatusOK, body: "thanks"}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		defer rc.mu.Unlock()
		wh, err := standardwebhooks.NewWebhook(rc.secret)
		if err == nil {
			err = wh.Verify(body, r.Header)
		}
		if err != nil {
			rc.refused = append(rc.refused, err)
		} else {
			rc.verified = append(rc.verified, r.Header.Get("webhook-id"))
		}
		w.WriteHeader(rc.status)
		io.WriteString(w, rc.body)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) set(f func(rc *receiver)) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	f(rc)
}

// newWebhookEnv is the UI over an API with webhooks on, the outbound
// guard opening loopback (where the test's receivers listen).
func newWebhookEnv(t *testing.T) *env {
	t.Helper()
	guard, err := outbound.New(outbound.Config{Allow: []string{"127.0.0.1"}, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return newEnvDeps(t, web.Config{}, nil, func(d *api.Deps) { d.Webhooks = guard })
}

var secretInput = regexp.MustCompile(`id="created-secret-value" value="(whsec_[A-Za-z0-9+/=]+)"`)

// TestWebhooks walks the webhook pages without JavaScript: the list and
// its navigation entry, refusals shown on the form's field, creation with
// the secret shown once, a test ping verified by the receiver with that
// secret, editing (pausing, and turning active again clearing the failing
// mark), the delivery log with its filter, pages and redelivery, and
// deletion after a confirmation.
func TestWebhooks(t *testing.T) {
	e := newWebhookEnv(t)
	ctx := context.Background()
	rc := newReceiver(t)
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	p := b.do(http.MethodGet, "/admin/webhooks", nil, nil)
	for _, want := range []string{`<a href="/admin/webhooks" aria-current="page">Webhooks</a>`, `id="no-hooks"`, `id="nw-url"`,
		"io.vitrine.image.*", "io.vitrine.metadata.replaced"} {
		if p.status != 200 || !strings.Contains(p.body, want) {
			t.Fatalf("webhooks page (%d) lacks %q:\n%s", p.status, want, p.body)
		}
	}
	create := func(u, events, users string) page {
		return b.do(http.MethodPost, "/admin/webhooks", url.Values{"csrf": {b.token("/admin/webhooks")}, "url": {u},
			"events": {events}, "users": {users}, "description": {"search index"}}, nil)
	}
	t.Run("refusals", func(t *testing.T) {
		for _, c := range []struct{ name, url, events, users, field, message string }{
			{"private address", "http://10.0.0.1/hook", "*", "*", "url", "is refused"},
			{"not http", "ftp://example.com/", "*", "*", "url", "absolute http or https"},
			{"unknown pattern", rc.URL, "io.vitrine.imag.*", "*", "events", "matches no event type"},
			{"no events", rc.URL, " ", "*", "events", "1 to 64 event type patterns"},
			{"bad user", rc.URL, "*", "al ice!", "users", "Invalid user name"},
		} {
			t.Run(c.name, func(t *testing.T) {
				p := create(c.url, c.events, c.users)
				field := regexp.MustCompile(`id="nw-` + c.field + `"[^>]*aria-invalid="true"`)
				if p.status != http.StatusBadRequest || !field.MatchString(p.body) ||
					!strings.Contains(html.UnescapeString(p.body), c.message) || !strings.Contains(p.body, `id="nw-`+c.field+`-error"`) {
					t.Fatalf("%d; want 400 with %q on %s:\n%s", p.status, c.message, c.field, p.body)
				}
				if !strings.Contains(p.body, `value="`+html.EscapeString(c.url)+`"`) {
					t.Fatal("the form lost the URL typed")
				}
			})
		}
		if hooks, err := e.db.Webhooks(ctx); err != nil || len(hooks) != 0 {
			t.Fatalf("refused webhooks were stored: %v %v", hooks, err)
		}
		if p := b.do(http.MethodPost, "/admin/webhooks", url.Values{"url": {rc.URL}, "events": {"*"}}, nil); p.status != http.StatusForbidden {
			t.Fatalf("create without its CSRF token: %d", p.status)
		}
	})
	var id string
	t.Run("create shows the secret once", func(t *testing.T) {
		p := create(rc.URL+"/hook", "io.vitrine.image.*\nio.vitrine.metadata.replaced,io.vitrine.key.*", "")
		loc := p.header.Get("Location")
		m := regexp.MustCompile(`^/admin/webhooks/([0-9a-f]{16})\?done=created$`).FindStringSubmatch(loc)
		if p.status != http.StatusSeeOther || m == nil {
			t.Fatalf("create: %d %q\n%s", p.status, loc, p.body)
		}
		id = m[1]
		stored, err := e.db.Webhook(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(stored.Events, " ") != "io.vitrine.image.* io.vitrine.metadata.replaced io.vitrine.key.*" ||
			strings.Join(stored.Users, " ") != "*" || stored.Description != "search index" || !stored.Active {
			t.Fatalf("stored webhook: %+v", stored)
		}
		if strings.Contains(loc, "whsec_") || strings.Contains(p.header.Get("Set-Cookie"), "whsec_") {
			t.Fatal("the secret travels in the clear")
		}
		p = b.follow(p)
		s := secretInput.FindStringSubmatch(p.body)
		if p.status != 200 || s == nil || s[1] != stored.Secret || !strings.Contains(p.body, "shown only this once") ||
			!strings.Contains(p.body, "wh.Verify(body, r.Header)") || !strings.Contains(p.body, "Webhook created.") {
			t.Fatalf("the page after creation does not show the stored secret once:\n%s", p.body)
		}
		rc.set(func(rc *receiver) { rc.secret = s[1] })
		if p := b.do(http.MethodGet, "/admin/webhooks/"+id, nil, nil); p.status != 200 || strings.Contains(p.body, "whsec_") {
			t.Fatalf("the secret is shown again on reload (%d)", p.status)
		}
		p = b.do(http.MethodGet, "/admin/webhooks", nil, nil)
		list := p.body[strings.Index(p.body, `id="webhooks"`):]
		for _, want := range []string{`href="/admin/webhooks/` + id + `"`, rc.URL + "/hook", "search index",
			`<li class="mono">io.vitrine.image.*</li><li class="mono">io.vitrine.metadata.replaced</li><li class="mono">io.vitrine.key.*</li>`,
			`<span class="badge badge-ok">active</span>`} {
			if !strings.Contains(list, want) {
				t.Fatalf("the list lacks %q:\n%s", want, list)
			}
		}
	})
	base := "/admin/webhooks/" + id
	ping := func() page {
		p := b.do(http.MethodPost, base+"/ping", url.Values{"csrf": {b.token(base)}}, nil)
		if loc := p.header.Get("Location"); p.status != http.StatusSeeOther || loc != base+"#ping-h" {
			t.Fatalf("ping: %d %q", p.status, loc)
		}
		return b.follow(p)
	}
	t.Run("ping", func(t *testing.T) {
		p := ping()
		res := p.body[strings.Index(p.body, `id="ping-result"`):]
		if !strings.Contains(res, "Delivered:") || !strings.Contains(res, "answered 200") || !strings.Contains(res, ">thanks</pre>") {
			t.Fatalf("ping result:\n%s", res)
		}
		rc.mu.Lock()
		verified, refused := len(rc.verified), rc.refused
		rc.mu.Unlock()
		if verified != 1 || len(refused) != 0 {
			t.Fatalf("the receiver verified %d pings with the secret shown, refused %v", verified, refused)
		}
		if p := b.do(http.MethodGet, base, nil, nil); strings.Contains(p.body, `id="ping-result"`) {
			t.Fatal("the ping result is shown again on reload")
		}
		rc.set(func(rc *receiver) { rc.status, rc.body = http.StatusServiceUnavailable, strings.Repeat("<busy>", 200) })
		p = ping()
		res = p.body[strings.Index(p.body, `id="ping-result"`):]
		if !strings.Contains(res, "Not delivered:") || !strings.Contains(res, "503") || !strings.Contains(res, "&lt;busy&gt;&lt;busy&gt;") ||
			!strings.Contains(res, "…</pre>") {
			t.Fatalf("ping of a receiver answering 503:\n%s", res)
		}
		rc.set(func(rc *receiver) { rc.status, rc.body = http.StatusOK, "ok" })
	})
	t.Run("edit", func(t *testing.T) {
		save := func(form url.Values) page {
			form.Set("csrf", b.token(base))
			return b.do(http.MethodPost, base, form, nil)
		}
		p := save(url.Values{"url": {rc.URL + "/v2"}, "events": {"*"}, "users": {"alice, bob"}, "description": {""}})
		if loc := p.header.Get("Location"); p.status != http.StatusSeeOther || loc != base+"?done=saved" {
			t.Fatalf("save: %d %q", p.status, loc)
		}
		w, err := e.db.Webhook(ctx, id)
		if err != nil || w.Active || w.URL != rc.URL+"/v2" || strings.Join(w.Users, ",") != "alice,bob" || w.Description != "" {
			t.Fatalf("after saving paused: %+v %v", w, err)
		}
		if p := b.follow(p); !strings.Contains(p.body, "Webhook saved.") || !strings.Contains(p.body, `<span class="badge">paused</span>`) {
			t.Fatalf("page after save:\n%s", p.body)
		}
		p = save(url.Values{"url": {rc.URL}, "events": {"io.vitrine.nothing"}, "users": {"*"}, "active": {"on"}})
		if p.status != http.StatusBadRequest || !regexp.MustCompile(`id="ew-events"[^>]*aria-invalid="true"`).MatchString(p.body) ||
			!strings.Contains(html.UnescapeString(p.body), "Event pattern 'io.vitrine.nothing' matches no event type") ||
			!strings.Contains(p.body, ">io.vitrine.nothing</textarea>") {
			t.Fatalf("refused edit: %d\n%s", p.status, p.body)
		}
		// Failing, then turned active again: the mark clears.
		since := time.Date(2026, 11, 20, 8, 30, 0, 0, time.UTC)
		if err := e.db.SetWebhookFailing(ctx, id, since); err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{"/admin/webhooks", base} {
			if p := b.do(http.MethodGet, path, nil, nil); !strings.Contains(p.body, `<span class="badge badge-bad">failing since 2026-11-20 08:30 UTC</span>`) {
				t.Fatalf("%s does not say the webhook is failing:\n%s", path, p.body)
			}
		}
		p = save(url.Values{"url": {rc.URL}, "events": {"*"}, "users": {"*"}, "active": {"on"}})
		if w, err := e.db.Webhook(ctx, id); p.status != http.StatusSeeOther || err != nil || !w.Active || !w.FailingSince.IsZero() {
			t.Fatalf("turned active again: %d %+v %v", p.status, w, err)
		}
	})
	t.Run("log", func(t *testing.T) {
		sink := storage.WebhookSink(id)
		// 23 deliveries: the oldest delivered, the next failed after two
		// attempts, the others pending.
		for i := range 23 {
			ev := storage.Event{ID: storage.NewEventID(), Type: "io.vitrine.image.added", Source: "test",
				Subject: fmt.Sprintf("users/alice/images/%032d", i), Time: time.Now(), Data: []byte(`{}`)}
			if err := e.db.FanOut(ctx, ev, []string{sink}); err != nil {
				t.Fatal(err)
			}
		}
		all, _, err := e.db.Deliveries(ctx, sink, storage.DeliveryQuery{Limit: 100})
		if err != nil || len(all) != 23 {
			t.Fatalf("%d deliveries, %v", len(all), err)
		}
		attempt := func(d storage.Delivery, a storage.DeliveryAttempt, state storage.DeliveryState) {
			t.Helper()
			d, err := e.db.Delivery(ctx, sink, d.ID)
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := e.db.ClaimDelivery(ctx, d, time.Minute); !ok || err != nil {
				t.Fatalf("claim %d: %v %v", d.ID, ok, err)
			}
			a.At = time.Now()
			if err := e.db.FinishDelivery(ctx, d.ID, a, state, time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
		delivered, failed := all[22], all[21]
		attempt(delivered, storage.DeliveryAttempt{Status: 200, Latency: 42 * time.Millisecond, Response: "got it"}, storage.DeliveryDone)
		attempt(failed, storage.DeliveryAttempt{Status: 500, Latency: 7 * time.Millisecond, Response: "oops", Error: "status 500"}, storage.DeliveryPending)
		attempt(failed, storage.DeliveryAttempt{Error: "connection refused"}, storage.DeliveryFailed)

		p := b.do(http.MethodGet, base, nil, nil)
		if p.status != 200 || strings.Count(p.body, `<tbody class="delivery"`) != 20 || !strings.Contains(p.body, "23 deliveries · page 1 of 2") ||
			!strings.Contains(p.body, `href="`+base+`?page=2#log-h" rel="next"`) || strings.Contains(p.body, "/redeliver") {
			t.Fatalf("first page of the log (%d):\n%s", p.status, p.body)
		}
		p = b.do(http.MethodGet, base+"?page=2", nil, nil)
		row := func(d storage.Delivery) string {
			i := strings.Index(p.body, fmt.Sprintf(`id="delivery-%d"`, d.ID))
			if i < 0 {
				t.Fatalf("delivery %d is not on the page:\n%s", d.ID, p.body)
			}
			r, _, _ := strings.Cut(p.body[i:], "</tbody>")
			return r
		}
		if r := row(delivered); !strings.Contains(r, `<span class="badge badge-ok">delivered</span>`) || !strings.Contains(r, "1 attempt<") ||
			!strings.Contains(r, "42 ms") || !strings.Contains(r, ">got it</pre>") || !strings.Contains(r, "Finished") ||
			!strings.Contains(r, "/redeliver") {
			t.Fatalf("the delivered delivery:\n%s", r)
		}
		if r := row(failed); !strings.Contains(r, `<span class="badge badge-bad">failed</span>`) || !strings.Contains(r, "2 attempts<") ||
			!strings.Contains(r, "connection refused") || !strings.Contains(r, ">oops</pre>") || !strings.Contains(r, "500") {
			t.Fatalf("the failed delivery:\n%s", r)
		}
		p = b.do(http.MethodGet, base+"?state=failed", nil, nil)
		if strings.Count(p.body, `<tbody class="delivery"`) != 1 || !strings.Contains(p.body, ">1 delivery ") ||
			!strings.Contains(p.body, `<option value="failed" selected>`) {
			t.Fatalf("filtered by failed:\n%s", p.body)
		}
		if p := b.do(http.MethodGet, base+"?state=lost", nil, nil); p.status != http.StatusBadRequest ||
			!strings.Contains(html.UnescapeString(p.body), "Unknown state 'lost'") {
			t.Fatalf("unknown state: %d", p.status)
		}
		p = b.do(http.MethodPost, fmt.Sprintf("%s/deliveries/%d/redeliver", base, failed.ID),
			url.Values{"csrf": {b.token(base)}, "state": {"failed"}}, nil)
		if loc := p.header.Get("Location"); p.status != http.StatusSeeOther || loc != base+"?done=redelivered&state=failed#log-h" {
			t.Fatalf("redeliver: %d %q", p.status, loc)
		}
		if d, err := e.db.Delivery(ctx, sink, failed.ID); err != nil || d.State != storage.DeliveryPending || len(d.Log) != 2 {
			t.Fatalf("after redelivery: %+v %v", d, err)
		}
		if p := b.follow(p); !strings.Contains(p.body, "pending again") || !strings.Contains(p.body, "0 deliveries") {
			t.Fatalf("the log after redelivery:\n%s", p.body)
		}
	})
	t.Run("delete", func(t *testing.T) {
		p := b.do(http.MethodGet, base+"/delete", nil, nil)
		if p.status != 200 || !strings.Contains(p.body, "Nothing more is sent to "+rc.URL) {
			t.Fatalf("confirm delete: %d\n%s", p.status, p.body)
		}
		p = b.do(http.MethodPost, base+"/delete", url.Values{"csrf": {b.token(base + "/delete")}}, nil)
		if loc := p.header.Get("Location"); p.status != http.StatusSeeOther || loc != "/admin/webhooks?deleted="+id {
			t.Fatalf("delete: %d %q", p.status, loc)
		}
		if _, err := e.db.Webhook(ctx, id); !errors.Is(err, storage.ErrNotExist) {
			t.Fatalf("webhook left after delete: %v", err)
		}
		if p := b.follow(p); !strings.Contains(p.body, "Webhook "+id+" and its delivery log were deleted.") || !strings.Contains(p.body, `id="no-hooks"`) {
			t.Fatalf("list after delete:\n%s", p.body)
		}
		if p := b.do(http.MethodGet, base, nil, nil); p.status != http.StatusNotFound || !strings.Contains(p.body, "There is no webhook "+id+".") {
			t.Fatalf("deleted webhook's page: %d", p.status)
		}
	})
}

// TestWebhooksRefusedOrOff: a key without the webhook resources is not
// offered the page and is told why, and a service with webhooks off says
// so instead of a missing page.
func TestWebhooksRefusedOrOff(t *testing.T) {
	e := newWebhookEnv(t)
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	p := b.do(http.MethodPost, "/admin/keys", url.Values{"csrf": {b.token("/admin/keys")}, "publicKey": {"carol"},
		"privateKey": {"carol-private"}, "group": {"read-write"}, "users": {"*"}}, nil)
	if p.status != http.StatusSeeOther {
		t.Fatalf("create key: %d", p.status)
	}
	r := e.browser(t)
	r.signIn("carol", "carol-private")
	if p := r.do(http.MethodGet, "/admin/", nil, nil); strings.Contains(p.body, `href="/admin/webhooks"`) {
		t.Fatal("the navigation offers webhooks to a key without webhooks.get")
	}
	if p := r.do(http.MethodGet, "/admin/webhooks", nil, nil); p.status != http.StatusForbidden ||
		!strings.Contains(p.body, "Not allowed for carol:</strong> listing webhooks") || strings.Contains(p.body, `id="nw-url"`) {
		t.Fatalf("webhooks page for carol: %d\n%s", p.status, p.body)
	}

	off := newEnv(t, web.Config{})
	o := off.browser(t)
	o.signIn("admin", adminPriv)
	if p := o.do(http.MethodGet, "/admin/webhooks", nil, nil); p.status != 200 || !strings.Contains(p.body, `id="webhooks-off"`) ||
		strings.Contains(p.body, `id="nw-url"`) {
		t.Fatalf("webhooks page with webhooks off: %d\n%s", p.status, p.body)
	}
}
