package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/api/outbound"
	"github.com/vitrine/vitrine/storage"
)

// loopbackOnly dials loopback addresses only; any other address fails the
// test (tests send traffic to loopback only).
type loopbackOnly struct {
	t *testing.T
	d net.Dialer
}

func (l *loopbackOnly) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !ap.Addr().IsLoopback() {
		l.t.Errorf("outbound connection to %s", address)
		return nil, errors.New("test: only loopback")
	}
	return l.d.DialContext(ctx, network, address)
}

// webhookEnv is a service with webhooks on, its outbound guard opening
// 127.0.0.1 for the test's receivers.
func webhookEnv(t *testing.T) *env {
	t.Helper()
	guard, err := outbound.New(outbound.Config{Allow: []string{"127.0.0.1"}, Dialer: &loopbackOnly{t: t}})
	if err != nil {
		t.Fatal(err)
	}
	return newEnvWith(t, testConfig(), func(d *api.Deps) { d.Webhooks = guard })
}

// hookReceiver is a webhook receiver on 127.0.0.1 that verifies every
// request with the Standard Webhooks library and answers status.
type hookReceiver struct {
	url string

	mu     sync.Mutex
	secret string
	status int
	got    []hookRequest
}

// hookRequest is one request a hookReceiver took.
type hookRequest struct {
	header http.Header
	body   []byte
	// verified is the library's verdict on the signature.
	verified error
}

func newHookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	rcv := &hookReceiver{status: http.StatusOK}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rcv.mu.Lock()
		defer rcv.mu.Unlock()
		wh, err := standardwebhooks.NewWebhook(rcv.secret)
		if err == nil {
			err = wh.Verify(body, r.Header)
		}
		rcv.got = append(rcv.got, hookRequest{header: r.Header.Clone(), body: body, verified: err})
		w.WriteHeader(rcv.status)
		fmt.Fprintf(w, "answered %d", rcv.status)
	}))
	t.Cleanup(hs.Close)
	rcv.url = hs.URL + "/hook"
	return rcv
}

// set sets the secret the receiver verifies with and the status it
// answers.
func (r *hookReceiver) set(secret string, status int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secret, r.status = secret, status
}

func (r *hookReceiver) requests() []hookRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// hookJSON decodes a body into v, failing the test when it does not.
func hookJSON(t *testing.T, r response, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("%s: %v", r.body, err)
	}
}

// TestWebhooks drives the subscriptions through the API: create (with the
// only sight of the secret), the refusals, list, get, update, a signed
// test ping the Standard Webhooks library verifies, the delivery log and
// its redelivery, access control, and delete.
func TestWebhooks(t *testing.T) {
	e := webhookEnv(t)
	rcv := newHookReceiver(t)
	admin := func(method, path, body string) response {
		t.Helper()
		return e.signed(method, path, adminKey, adminPriv, []byte(body), "Content-Type", "application/json")
	}
	adminGet := func(path string) response {
		t.Helper()
		return e.get(e.tokenURL(path+sep(path)+"publicKey="+adminKey, adminPriv))
	}
	list := func() []api.Webhook {
		t.Helper()
		r := adminGet("/webhooks")
		var l api.WebhookList
		hookJSON(t, r, &l)
		if r.StatusCode != 200 {
			t.Fatalf("GET /webhooks: %d %s", r.StatusCode, r.body)
		}
		return l.Webhooks
	}
	var first, second api.WebhookCreated
	const ownSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

	t.Run("Create", func(t *testing.T) {
		r := admin(http.MethodPost, "/webhooks", `{"url":"`+rcv.url+`"}`)
		if r.StatusCode != http.StatusCreated {
			t.Fatalf("POST /webhooks: %d %s", r.StatusCode, r.body)
		}
		hookJSON(t, r, &first)
		if loc := r.Header.Get("Location"); loc != "/webhooks/"+first.ID || first.ID == "" {
			t.Errorf("Location %q, id %q", loc, first.ID)
		}
		if !strings.HasPrefix(first.Secret, "whsec_") {
			t.Errorf("secret %q", first.Secret)
		}
		if _, err := standardwebhooks.NewWebhook(first.Secret); err != nil {
			t.Errorf("the library refuses secret %q: %v", first.Secret, err)
		}
		w := first.Webhook
		if w.URL != rcv.url || !slices.Equal(w.Events, []string{"*"}) || !slices.Equal(w.Users, []string{"*"}) ||
			!w.Active || w.Failing || w.FailingSince != nil || w.Description != "" || w.Created != w.Updated {
			t.Errorf("defaults: %+v", w)
		}
		r = admin(http.MethodPost, "/webhooks", `{"url":"https://hooks.example.com/v","events":["io.vitrine.image.*",
			"io.vitrine.metadata.replaced"],"users":["alice"],"description":"search index","active":false,"secret":"`+ownSecret+`"}`)
		if r.StatusCode != http.StatusCreated {
			t.Fatalf("POST /webhooks with every field: %d %s", r.StatusCode, r.body)
		}
		hookJSON(t, r, &second)
		if second.Secret != ownSecret || second.Active || second.Description != "search index" ||
			!slices.Equal(second.Users, []string{"alice"}) || len(second.Events) != 2 || second.ID == first.ID {
			t.Errorf("with every field: %+v", second)
		}
	})

	t.Run("Refused", func(t *testing.T) {
		cases := []struct{ name, body, msg string }{
			{"no url", `{"events":["*"]}`, "needs a url"},
			{"ftp", `{"url":"ftp://example.com/hook"}`, "http or https"},
			{"relative", `{"url":"/hook"}`, "http or https"},
			{"credentials", `{"url":"https://user:pw@example.com/hook"}`, "credentials"},
			{"private address", `{"url":"http://10.0.0.1/hook"}`, "outbound.allow"},
			{"metadata address", `{"url":"http://169.254.169.254/latest"}`, "outbound.allow"},
			{"unknown event", `{"url":"https://example.com/","events":["io.vitrine.imag.*"]}`, "io.vitrine.imag.*"},
			{"no events", `{"url":"https://example.com/","events":[]}`, "1 to 64"},
			{"bad user", `{"url":"https://example.com/","users":["bad name!"]}`, "Invalid user name"},
			{"no users", `{"url":"https://example.com/","users":[]}`, "1 to 64"},
			{"short secret", `{"url":"https://example.com/","secret":"whsec_c2hvcnQ="}`, "secret"},
			{"not a secret", `{"url":"https://example.com/","secret":"hunter2"}`, "secret"},
			{"long description", `{"url":"https://example.com/","description":"` + strings.Repeat("d", 1025) + `"}`, "1024"},
			{"not JSON", `{"url":`, "Invalid JSON"},
		}
		for _, c := range cases {
			r := admin(http.MethodPost, "/webhooks", c.body)
			if r.StatusCode != http.StatusBadRequest || !strings.Contains(r.errMessage(t), c.msg) {
				t.Errorf("%s: %d %s; want 400 saying %q", c.name, r.StatusCode, r.body, c.msg)
			}
		}
		if n := len(list()); n != 2 {
			t.Fatalf("%d webhooks after the refusals, want 2", n)
		}
	})

	t.Run("ListAndGet", func(t *testing.T) {
		r := adminGet("/webhooks")
		if strings.Contains(string(r.body), first.Secret) || strings.Contains(string(r.body), ownSecret) ||
			strings.Contains(string(r.body), `"secret"`) {
			t.Fatalf("the list shows a secret: %s", r.body)
		}
		l := list()
		if len(l) != 2 || l[0].ID != first.ID || l[1].ID != second.ID || l[1].Description != "search index" {
			t.Fatalf("list %+v, want the two oldest first", l)
		}
		r = adminGet("/webhooks/" + first.ID)
		var w api.Webhook
		hookJSON(t, r, &w)
		if r.StatusCode != 200 || w.ID != first.ID || w.URL != rcv.url || strings.Contains(string(r.body), first.Secret) {
			t.Fatalf("GET one: %d %s", r.StatusCode, r.body)
		}
		if r := adminGet("/webhooks/nope"); r.StatusCode != 404 {
			t.Fatalf("GET unknown: %d %s", r.StatusCode, r.body)
		}
	})

	t.Run("Update", func(t *testing.T) {
		r := admin(http.MethodPut, "/webhooks/"+second.ID, `{"active":true,"description":"paused no more"}`)
		var w api.Webhook
		hookJSON(t, r, &w)
		if r.StatusCode != 200 || !w.Active || w.Description != "paused no more" || w.URL != second.URL ||
			!slices.Equal(w.Events, second.Events) || !slices.Equal(w.Users, second.Users) || w.Created != second.Created {
			t.Fatalf("partial update: %d %s", r.StatusCode, r.body)
		}
		r = admin(http.MethodPut, "/webhooks/"+second.ID, `{"events":["io.vitrine.image.added"],"users":["*"]}`)
		hookJSON(t, r, &w)
		if r.StatusCode != 200 || !slices.Equal(w.Events, []string{"io.vitrine.image.added"}) || !w.Active ||
			w.Description != "paused no more" {
			t.Fatalf("second update: %d %s", r.StatusCode, r.body)
		}
		refused := []struct{ name, body, msg string }{
			{"secret", `{"secret":"` + ownSecret + `"}`, "cannot be changed"},
			{"private address", `{"url":"http://192.168.1.1/"}`, "outbound.allow"},
			{"unknown event", `{"events":["io.vitrine.imag.*"]}`, "matches no event type"},
		}
		for _, c := range refused {
			if r := admin(http.MethodPut, "/webhooks/"+second.ID, c.body); r.StatusCode != 400 || !strings.Contains(r.errMessage(t), c.msg) {
				t.Errorf("PUT %s: %d %s", c.name, r.StatusCode, r.body)
			}
		}
		if r := admin(http.MethodPut, "/webhooks/nope", `{"active":false}`); r.StatusCode != 404 {
			t.Errorf("PUT unknown: %d %s", r.StatusCode, r.body)
		}
		if got, err := e.db.Webhook(t.Context(), second.ID); err != nil || got.Secret != ownSecret || got.URL != second.URL {
			t.Fatalf("stored after the updates: %+v, %v", got, err)
		}
	})

	t.Run("Ping", func(t *testing.T) {
		rcv.set(first.Secret, http.StatusOK)
		r := admin(http.MethodPost, "/webhooks/"+first.ID+"/ping", "")
		var p api.PingResult
		hookJSON(t, r, &p)
		if r.StatusCode != 200 || !p.Delivered || p.Status != 200 || p.Response != "answered 200" || p.Error != nil {
			t.Fatalf("ping: %d %s", r.StatusCode, r.body)
		}
		got := rcv.requests()
		if len(got) != 1 {
			t.Fatalf("receiver got %d requests, want 1", len(got))
		}
		req := got[0]
		if req.verified != nil {
			t.Fatalf("the Standard Webhooks library refuses the signature: %v (headers %v)", req.verified, req.header)
		}
		var ce struct {
			SpecVersion, ID, Type, Subject, Source string
			Data                                   map[string]string
		}
		if err := json.Unmarshal(req.body, &ce); err != nil {
			t.Fatal(err)
		}
		if req.header.Get("webhook-id") != p.ID || ce.ID != p.ID || ce.Type != "io.vitrine.webhook.ping" ||
			ce.SpecVersion != "1.0" || ce.Subject != "webhooks/"+first.ID || ce.Data["webhook"] != first.ID ||
			req.header.Get("Content-Type") != "application/cloudevents+json" {
			t.Fatalf("ping request %v %s", req.header, req.body)
		}

		rcv.set(first.Secret, http.StatusInternalServerError)
		r = admin(http.MethodPost, "/webhooks/"+first.ID+"/ping", "")
		hookJSON(t, r, &p)
		if r.StatusCode != 200 || p.Delivered || p.Status != 500 || p.Error == nil || !strings.Contains(*p.Error, "500") ||
			p.Response != "answered 500" {
			t.Fatalf("ping answered 500: %d %s", r.StatusCode, r.body)
		}
		if got := rcv.requests(); len(got) != 2 || got[1].verified != nil {
			t.Fatalf("second ping: %d requests, verified %v", len(got), got[len(got)-1].verified)
		}
		if r := admin(http.MethodPost, "/webhooks/nope/ping", ""); r.StatusCode != 404 {
			t.Fatalf("ping unknown: %d %s", r.StatusCode, r.body)
		}
	})

	var delivered, failed, pending storage.Delivery
	t.Run("Deliveries", func(t *testing.T) {
		sink := storage.WebhookSink(first.ID)
		ctx := t.Context()
		for i := range 3 {
			ev := storage.Event{ID: fmt.Sprint("event-", i), Type: "io.vitrine.image.added", Source: storage.EventSource,
				Subject: fmt.Sprint("users/alice/images/img", i), Time: time.Now(), Data: json.RawMessage(`{}`)}
			if err := e.db.FanOut(ctx, ev, []string{sink, storage.WebhookSink(second.ID)}); err != nil {
				t.Fatal(err)
			}
		}
		due, err := e.db.DueDeliveries(ctx, 10, []string{storage.WebhookSink(second.ID)})
		if err != nil || len(due) != 3 {
			t.Fatalf("due %+v, %v", due, err)
		}
		for _, d := range due {
			if ok, err := e.db.ClaimDelivery(ctx, d, time.Hour); !ok || err != nil {
				t.Fatalf("claim %d: %v %v", d.ID, ok, err)
			}
		}
		delivered, failed, pending = due[0], due[1], due[2]
		finish := func(d storage.Delivery, a storage.DeliveryAttempt, st storage.DeliveryState) {
			t.Helper()
			a.At = time.Now()
			if err := e.db.FinishDelivery(ctx, d.ID, a, st, time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
		finish(delivered, storage.DeliveryAttempt{Status: 200, Latency: 5 * time.Millisecond, Response: "ok"}, storage.DeliveryDone)
		finish(failed, storage.DeliveryAttempt{Status: 500, Response: "down", Error: "receiver answered 500"}, storage.DeliveryFailed)
		finish(pending, storage.DeliveryAttempt{Error: "connection refused"}, storage.DeliveryPending)

		base := "/webhooks/" + first.ID + "/deliveries"
		var l api.DeliveryList
		r := adminGet(base)
		hookJSON(t, r, &l)
		if r.StatusCode != 200 || l.Search.Hits != 3 || len(l.Deliveries) != 3 {
			t.Fatalf("GET deliveries: %d %s", r.StatusCode, r.body)
		}
		var states []string
		for _, d := range l.Deliveries {
			states = append(states, fmt.Sprintf("%d %s %s %d", d.ID, d.EventID, d.State, len(d.Log)))
		}
		want := []string{fmt.Sprintf("%d event-2 pending 1", pending.ID), fmt.Sprintf("%d event-1 failed 1", failed.ID),
			fmt.Sprintf("%d event-0 delivered 1", delivered.ID)}
		if !slices.Equal(states, want) {
			t.Fatalf("deliveries %q, want %q", states, want)
		}
		p, f := l.Deliveries[0], l.Deliveries[1]
		if p.NextAttempt == nil || p.Finished != nil || p.LastError == nil || *p.LastError != "connection refused" ||
			f.Finished == nil || f.NextAttempt != nil || f.LastStatus != 500 || f.Log[0].Response != "down" ||
			p.Type != "io.vitrine.image.added" || p.Subject != "users/alice/images/img2" || p.Attempts != 1 {
			t.Fatalf("pending %+v, failed %+v", p, f)
		}
		r = adminGet(base + "?state=delivered")
		hookJSON(t, r, &l)
		if len(l.Deliveries) != 1 || l.Deliveries[0].ID != delivered.ID || l.Search.Hits != 1 {
			t.Fatalf("state=delivered: %s", r.body)
		}
		r = adminGet(base + "?limit=1&page=2")
		hookJSON(t, r, &l)
		if len(l.Deliveries) != 1 || l.Deliveries[0].ID != failed.ID || l.Search.Hits != 3 || l.Search.Page != 2 {
			t.Fatalf("limit=1&page=2: %s", r.body)
		}
		for _, q := range []string{"state=lost", "limit=0", "limit=101", "page=0"} {
			if r := adminGet(base + "?" + q); r.StatusCode != 400 {
				t.Errorf("%s: %d %s", q, r.StatusCode, r.body)
			}
		}
		r = adminGet(fmt.Sprintf("%s/%d", base, delivered.ID))
		var d api.Delivery
		hookJSON(t, r, &d)
		if r.StatusCode != 200 || d.State != "delivered" || len(d.Log) != 1 || d.Log[0].Status != 200 ||
			d.Log[0].Response != "ok" || d.Log[0].Error != nil || d.Log[0].Latency != 0.005 {
			t.Fatalf("GET one delivery: %d %s", r.StatusCode, r.body)
		}
		notFound := []string{
			fmt.Sprintf("/webhooks/%s/deliveries/%d", second.ID, delivered.ID), // another subscription's
			base + "/999999",
			"/webhooks/nope/deliveries",
		}
		for _, p := range notFound {
			if r := adminGet(p); r.StatusCode != 404 {
				t.Errorf("GET %s: %d %s", p, r.StatusCode, r.body)
			}
		}
	})

	t.Run("Redeliver", func(t *testing.T) {
		path := func(d storage.Delivery) string {
			return fmt.Sprintf("/webhooks/%s/deliveries/%d/redeliver", first.ID, d.ID)
		}
		r := admin(http.MethodPost, path(failed), "")
		var d api.Delivery
		hookJSON(t, r, &d)
		if r.StatusCode != http.StatusAccepted || d.State != "pending" || d.Attempts != 0 || d.Finished != nil ||
			d.NextAttempt == nil || len(d.Log) != 1 || d.EventID != "event-1" {
			t.Fatalf("redeliver failed: %d %s", r.StatusCode, r.body)
		}
		for _, p := range []storage.Delivery{failed, pending} {
			if r := admin(http.MethodPost, path(p), ""); r.StatusCode != http.StatusConflict {
				t.Errorf("redeliver pending %d: %d %s", p.ID, r.StatusCode, r.body)
			}
		}
		if r := admin(http.MethodPost, path(delivered), ""); r.StatusCode != http.StatusAccepted {
			t.Errorf("redeliver delivered: %d %s", r.StatusCode, r.body)
		}
		for _, p := range []string{
			fmt.Sprintf("/webhooks/%s/deliveries/999999/redeliver", first.ID),
			fmt.Sprintf("/webhooks/%s/deliveries/%d/redeliver", second.ID, delivered.ID),
			"/webhooks/nope/deliveries/1/redeliver",
		} {
			if r := admin(http.MethodPost, p, ""); r.StatusCode != 404 {
				t.Errorf("POST %s: %d %s", p, r.StatusCode, r.body)
			}
		}
	})

	t.Run("AccessControl", func(t *testing.T) {
		// read-write and read-only hold no webhooks.* resource.
		for _, k := range []struct{ pub, priv string }{{userKey, userPriv}, {roKey, roPriv}} {
			reqs := []response{
				e.get(e.tokenURL("/webhooks?publicKey="+k.pub, k.priv)),
				e.get(e.tokenURL("/webhooks/"+first.ID+"?publicKey="+k.pub, k.priv)),
				e.signed(http.MethodPost, "/webhooks", k.pub, k.priv, []byte(`{"url":"https://example.com/"}`)),
				e.signed(http.MethodPut, "/webhooks/"+first.ID, k.pub, k.priv, []byte(`{"active":false}`)),
				e.signed(http.MethodDelete, "/webhooks/"+first.ID, k.pub, k.priv, nil),
				e.signed(http.MethodPost, "/webhooks/"+first.ID+"/ping", k.pub, k.priv, nil),
				e.get(e.tokenURL("/webhooks/"+first.ID+"/deliveries?publicKey="+k.pub, k.priv)),
				e.signed(http.MethodPost, fmt.Sprintf("/webhooks/%s/deliveries/%d/redeliver", first.ID, failed.ID), k.pub, k.priv, nil),
			}
			for i, r := range reqs {
				if r.StatusCode != 400 || !strings.HasPrefix(r.errMessage(t), "Permission denied (public key): the access rules of key ") {
					t.Errorf("%s, request %d: %d %s", k.pub, i, r.StatusCode, r.body)
				}
			}
		}
		if l := list(); len(l) != 2 || !l[0].Active {
			t.Fatalf("after the refused changes: %+v", l)
		}
		if n := len(rcv.requests()); n != 2 {
			t.Fatalf("a refused ping reached the receiver (%d requests)", n)
		}
	})

	t.Run("Delete", func(t *testing.T) {
		r := admin(http.MethodDelete, "/webhooks/"+first.ID, "")
		if r.StatusCode != 200 || r.json(t)["id"] != first.ID {
			t.Fatalf("DELETE: %d %s", r.StatusCode, r.body)
		}
		if r := adminGet("/webhooks/" + first.ID); r.StatusCode != 404 {
			t.Fatalf("GET deleted: %d", r.StatusCode)
		}
		if r := admin(http.MethodDelete, "/webhooks/"+first.ID, ""); r.StatusCode != 404 {
			t.Fatalf("DELETE again: %d", r.StatusCode)
		}
		if _, n, err := e.db.Deliveries(t.Context(), storage.WebhookSink(first.ID), storage.DeliveryQuery{}); err != nil || n != 0 {
			t.Fatalf("%d deliveries of the deleted subscription left, %v", n, err)
		}
		if _, n, _ := e.db.Deliveries(t.Context(), storage.WebhookSink(second.ID), storage.DeliveryQuery{}); n != 3 {
			t.Fatalf("the other subscription has %d deliveries, want 3", n)
		}
		if l := list(); len(l) != 1 || l[0].ID != second.ID {
			t.Fatalf("list after delete: %+v", l)
		}
	})

	t.Run("Audit", func(t *testing.T) {
		entries, _, err := e.db.AuditLog(t.Context(), storage.AuditQuery{Action: "webhook.", Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, a := range slices.Backward(entries) {
			got = append(got, a.Actor+" "+a.Action)
		}
		want := []string{"admin webhook.create", "admin webhook.create", "admin webhook.update", "admin webhook.update",
			"admin webhook.delete"}
		if !slices.Equal(got, want) {
			t.Fatalf("audit %q, want %q", got, want)
		}
	})
}

// TestWebhooksOff checks that without an outbound guard every /webhooks
// route answers 404, saying webhooks are off.
func TestWebhooksOff(t *testing.T) {
	e := newEnv(t, testConfig())
	gets := []string{"/webhooks", "/webhooks/h1", "/webhooks/h1/deliveries", "/webhooks/h1/deliveries/1"}
	for _, p := range gets {
		r := e.get(e.tokenURL(p+"?publicKey="+adminKey, adminPriv))
		if r.StatusCode != 404 || !strings.Contains(r.errMessage(t), "Webhooks are turned off") {
			t.Errorf("GET %s: %d %s", p, r.StatusCode, r.body)
		}
	}
	writes := []struct{ method, path, body string }{
		{http.MethodPost, "/webhooks", `{"url":"https://example.com/"}`},
		{http.MethodPut, "/webhooks/h1", `{"active":false}`},
		{http.MethodDelete, "/webhooks/h1", ``},
		{http.MethodPost, "/webhooks/h1/ping", ``},
		{http.MethodPost, "/webhooks/h1/deliveries/1/redeliver", ``},
	}
	for _, w := range writes {
		r := e.signed(w.method, w.path, adminKey, adminPriv, []byte(w.body), "Content-Type", "application/json")
		if r.StatusCode != 404 || !strings.Contains(r.errMessage(t), "Webhooks are turned off") {
			t.Errorf("%s %s: %d %s", w.method, w.path, r.StatusCode, r.body)
		}
	}
	if list, err := e.db.Webhooks(t.Context()); err != nil || len(list) != 0 {
		t.Fatalf("webhooks stored while off: %+v, %v", list, err)
	}
}
