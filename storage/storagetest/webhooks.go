package storagetest

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// hookSecret is a secret in the form the API gives subscriptions.
const hookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

func hook(id string) *storage.Webhook {
	return &storage.Webhook{ID: id, URL: "https://hooks.example.com/" + id, Events: []string{"io.vitrine.image.*"},
		Users: []string{"*"}, Secret: hookSecret, Description: "hook " + id, Active: true}
}

// rawSecret returns the secret column of the webhook id as stored.
func rawSecret(t *testing.T, db *storage.DB, id string) string {
	t.Helper()
	var raw string
	// id is a test constant: no placeholder, so the query reads the same
	// on every dialect.
	if err := db.SQL().QueryRowContext(ctx(t), "SELECT secret FROM webhooks WHERE id = '"+id+"'").Scan(&raw); err != nil {
		t.Fatal(err)
	}
	return raw
}

// testWebhooks checks a subscription's round trip (secret stored as given
// without Options.Secret), ErrExist, ErrNotExist, the validation, the
// update that keeps what it does not name, the failing mark, and the
// audit entries and events each change writes (never the secret).
func testWebhooks(t *testing.T, db *storage.DB) {
	db.SetEvents(true)
	api := storage.WithActor(ctx(t), storage.Actor{Key: "admin", Addr: "192.0.2.7"})
	start := time.Now().Add(-time.Second)
	h1 := hook("h1")
	if err := db.CreateWebhook(api, h1); err != nil {
		t.Fatal(err)
	}
	if h1.Created.Before(start) || !h1.Updated.Equal(h1.Created) {
		t.Fatalf("created %v, updated %v", h1.Created, h1.Updated)
	}
	got, err := db.Webhook(ctx(t), "h1")
	if err != nil {
		t.Fatal(err)
	}
	if !webhookEqual(got, *h1) || got.Secret != hookSecret || !got.FailingSince.IsZero() {
		t.Fatalf("Webhook = %+v, want %+v", got, *h1)
	}
	if raw := rawSecret(t, db, "h1"); raw != hookSecret {
		t.Fatalf("stored secret %q, want it as given (no Options.Secret)", raw)
	}
	wantErr(t, "CreateWebhook(taken id)", db.CreateWebhook(api, hook("h1")), storage.ErrExist)
	_, err = db.Webhook(ctx(t), "nope")
	wantErr(t, "Webhook(missing)", err, storage.ErrNotExist)

	h2 := hook("h2")
	h2.Events, h2.Users, h2.Active = []string{"*"}, []string{"alice", "bob"}, false
	if err := db.CreateWebhook(api, h2); err != nil {
		t.Fatal(err)
	}
	invalid := map[string]func(w *storage.Webhook){
		"no id":            func(w *storage.Webhook) { w.ID = "" },
		"long id":          func(w *storage.Webhook) { w.ID = strings.Repeat("x", 65) },
		"no url":           func(w *storage.Webhook) { w.URL = "" },
		"long url":         func(w *storage.Webhook) { w.URL = "https://x/" + strings.Repeat("x", 2048) },
		"no secret":        func(w *storage.Webhook) { w.Secret = "" },
		"no events":        func(w *storage.Webhook) { w.Events = nil },
		"no users":         func(w *storage.Webhook) { w.Users = []string{} },
		"65 events":        func(w *storage.Webhook) { w.Events = slices.Repeat([]string{"*"}, 65) },
		"65 users":         func(w *storage.Webhook) { w.Users = slices.Repeat([]string{"u"}, 65) },
		"long description": func(w *storage.Webhook) { w.Description = strings.Repeat("d", 1025) },
	}
	for name, spoil := range invalid {
		w := hook("bad")
		spoil(w)
		wantErr(t, "CreateWebhook("+name+")", db.CreateWebhook(api, w), storage.ErrInvalid)
		if name != "no id" && name != "long id" && name != "no secret" {
			w.ID = "h1"
			wantErr(t, "UpdateWebhook("+name+")", db.UpdateWebhook(api, w), storage.ErrInvalid)
		}
	}
	list, err := db.Webhooks(ctx(t))
	if err != nil || len(list) != 2 || !webhookEqual(list[0], *h1) || !webhookEqual(list[1], *h2) || list[1].Secret != hookSecret {
		t.Fatalf("Webhooks = %+v, %v; want h1, h2", list, err)
	}

	// An update replaces what it names and keeps the secret and creation.
	up := &storage.Webhook{ID: "h1", URL: "https://other.example.com/", Events: []string{"io.vitrine.metadata.*", "*.deleted"},
		Users: []string{"alice"}, Description: "", Active: false}
	if err := db.UpdateWebhook(api, up); err != nil {
		t.Fatal(err)
	}
	if up.Secret != hookSecret || !up.Created.Equal(h1.Created) || up.Updated.Before(h1.Updated) || up.URL != "https://other.example.com/" {
		t.Fatalf("UpdateWebhook left %+v", up)
	}
	if got, err := db.Webhook(ctx(t), "h1"); err != nil || !webhookEqual(got, *up) || got.Active {
		t.Fatalf("after update: %+v, %v; want %+v", got, err, *up)
	}
	missing := hook("nope")
	wantErr(t, "UpdateWebhook(missing)", db.UpdateWebhook(api, missing), storage.ErrNotExist)

	webhookFailing(t, db, api)

	if err := db.DeleteWebhook(api, "h2"); err != nil {
		t.Fatal(err)
	}
	_, err = db.Webhook(ctx(t), "h2")
	wantErr(t, "Webhook(deleted)", err, storage.ErrNotExist)
	wantErr(t, "DeleteWebhook(deleted)", db.DeleteWebhook(api, "h2"), storage.ErrNotExist)
	if list, _ := db.Webhooks(ctx(t)); len(list) != 1 || list[0].ID != "h1" {
		t.Fatalf("Webhooks after delete = %+v", list)
	}
	webhookAudit(t, db)
}

// webhookFailing checks SetWebhookFailing and that an update making a
// subscription active again clears the mark.
func webhookFailing(t *testing.T, db *storage.DB, api context.Context) {
	t.Helper()
	failing := func() time.Time {
		t.Helper()
		w, err := db.Webhook(ctx(t), "h1")
		if err != nil {
			t.Fatal(err)
		}
		return w.FailingSince
	}
	at := time.Now().UTC().Truncate(time.Microsecond).Add(-time.Hour)
	if err := db.SetWebhookFailing(ctx(t), "h1", at); err != nil {
		t.Fatal(err)
	}
	if got := failing(); !got.Equal(at) {
		t.Fatalf("failing since %v, want %v", got, at)
	}
	// A later give-up keeps the first mark.
	if err := db.SetWebhookFailing(ctx(t), "h1", at.Add(time.Minute)); err != nil || !failing().Equal(at) {
		t.Fatalf("second mark: %v, failing since %v; want %v", err, failing(), at)
	}
	if err := db.SetWebhookFailing(ctx(t), "h1", time.Time{}); err != nil || !failing().IsZero() {
		t.Fatalf("cleared: %v, failing since %v", err, failing())
	}
	if err := db.SetWebhookFailing(ctx(t), "gone", at); err != nil {
		t.Fatalf("SetWebhookFailing(missing) = %v, want nil", err)
	}
	// Paused it keeps its mark; made active again it loses it.
	if err := db.SetWebhookFailing(ctx(t), "h1", at); err != nil {
		t.Fatal(err)
	}
	w, _ := db.Webhook(ctx(t), "h1")
	w.Description = "still paused"
	if err := db.UpdateWebhook(api, &w); err != nil || !w.FailingSince.Equal(at) {
		t.Fatalf("paused update: %v, failing since %v; want %v", err, w.FailingSince, at)
	}
	w.Active = true
	if err := db.UpdateWebhook(api, &w); err != nil || !w.FailingSince.IsZero() || !failing().IsZero() {
		t.Fatalf("made active: %v, failing since %v", err, w.FailingSince)
	}
}

// webhookAudit checks the audit entries and events testWebhooks' changes
// wrote: one of each per change that succeeded, none with the secret.
func webhookAudit(t *testing.T, db *storage.DB) {
	t.Helper()
	want := []string{"webhook.create h1", "webhook.create h2", "webhook.update h1", "webhook.update h1",
		"webhook.update h1", "webhook.delete h2"}
	entries, n, err := db.AuditLog(ctx(t), storage.AuditQuery{Action: "webhook.", Limit: 100})
	if err != nil || n != len(want) {
		t.Fatalf("AuditLog: %d entries, %v; want %d", n, err, len(want))
	}
	slices.Reverse(entries)
	var got []string
	for _, e := range entries {
		got = append(got, e.Action+" "+e.Target)
		b, _ := json.Marshal(e.Detail)
		if strings.Contains(string(b), hookSecret) {
			t.Errorf("audit detail of %s shows the secret: %s", e.Action, b)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("audit log %q, want %q", got, want)
	}
	if entries[0].Actor != "admin" || entries[0].Detail["url"] != "https://hooks.example.com/h1" {
		t.Errorf("first entry %+v", entries[0])
	}
	types := map[string]string{"webhook.create": "io.vitrine.webhook.created",
		"webhook.update": "io.vitrine.webhook.updated", "webhook.delete": "io.vitrine.webhook.deleted"}
	events := pendingEvents(t, db, len(want))
	for i, w := range want {
		action, id, _ := strings.Cut(w, " ")
		e := events[i]
		var data map[string]any
		if err := json.Unmarshal(e.Data, &data); err != nil {
			t.Fatal(err)
		}
		if e.Type != types[action] || e.Subject != "webhooks/"+id || data["webhook"] != id {
			t.Errorf("event %d: %s %s %s, want %s webhooks/%s", i, e.Type, e.Subject, e.Data, types[action], id)
		}
		if strings.Contains(string(e.Data), hookSecret) {
			t.Errorf("event %d shows the secret: %s", i, e.Data)
		}
	}
	for _, typ := range types {
		if !slices.Contains(storage.EventTypes(), typ) {
			t.Errorf("EventTypes() lacks %s", typ)
		}
	}
}

// webhookEqual compares what a caller sets and the store keeps.
func webhookEqual(a, b storage.Webhook) bool {
	return a.ID == b.ID && a.URL == b.URL && slices.Equal(a.Events, b.Events) && slices.Equal(a.Users, b.Users) &&
		a.Description == b.Description && a.Active == b.Active && a.Created.Equal(b.Created) && a.Updated.Equal(b.Updated)
}

// testWebhookSecretSealed checks that with Options.Secret a subscription's
// secret is encrypted at rest, bound to its row, and read back only with
// the same secret.
func testWebhookSecretSealed(t *testing.T, openSecret func(t *testing.T, secret []byte) (*storage.DB, func(secret []byte) *storage.DB)) {
	db, reopen := openSecret(t, []byte("correct horse battery staple"))
	for _, id := range []string{"h1", "h2"} {
		if err := db.CreateWebhook(ctx(t), hook(id)); err != nil {
			t.Fatal(err)
		}
	}
	raw := rawSecret(t, db, "h1")
	if strings.Contains(raw, hookSecret) || strings.Contains(raw, strings.TrimPrefix(hookSecret, "whsec_")) || !strings.HasPrefix(raw, "v1:") {
		t.Fatalf("stored secret %q is not encrypted", raw)
	}
	if raw == rawSecret(t, db, "h2") {
		t.Fatal("two rows with the same secret store the same ciphertext")
	}
	if w, err := db.Webhook(ctx(t), "h1"); err != nil || w.Secret != hookSecret {
		t.Fatalf("Webhook = %+v, %v", w, err)
	}
	if list, err := db.Webhooks(ctx(t)); err != nil || len(list) != 2 || list[1].Secret != hookSecret {
		t.Fatalf("Webhooks = %+v, %v", list, err)
	}
	// An update does not touch it.
	w := hook("h1")
	w.Secret = ""
	w.URL = "https://changed.example.com/"
	if err := db.UpdateWebhook(ctx(t), w); err != nil || w.Secret != hookSecret || rawSecret(t, db, "h1") != raw {
		t.Fatalf("UpdateWebhook: %v, secret %q; stored changed: %v", err, w.Secret, rawSecret(t, db, "h1") != raw)
	}
	// A sealed secret moved to another row does not open.
	if _, err := db.SQL().ExecContext(ctx(t), "UPDATE webhooks SET secret = '"+raw+"' WHERE id = 'h2'"); err != nil {
		t.Fatal(err)
	}
	_, err := db.Webhook(ctx(t), "h2")
	wantErr(t, "Webhook(secret of another row)", err, storage.ErrDecrypt)
	if reopen == nil {
		return
	}
	wrong := reopen([]byte("wrong secret"))
	_, err = wrong.Webhook(ctx(t), "h1")
	wantErr(t, "Webhook with the wrong secret", err, storage.ErrDecrypt)
	_, err = wrong.Webhooks(ctx(t))
	wantErr(t, "Webhooks with the wrong secret", err, storage.ErrDecrypt)
	right := reopen([]byte("correct horse battery staple"))
	if w, err := right.Webhook(ctx(t), "h1"); err != nil || w.Secret != hookSecret {
		t.Fatalf("Webhook after reopen = %+v, %v", w, err)
	}
}

// testEventsWritten checks that EventsWritten signals once after a
// committed change while events are on, and not while they are off nor
// after a change that failed.
func testEventsWritten(t *testing.T, db *storage.DB) {
	signalled := func() bool {
		select {
		case <-db.EventsWritten():
			return true
		default:
			return false
		}
	}
	put := func(k string) {
		t.Helper()
		if _, err := db.PutKey(ctx(t), storage.Key{PublicKey: k, PrivateKey: "p"}); err != nil {
			t.Fatal(err)
		}
	}
	put("off")
	if signalled() {
		t.Fatal("signal while events are off")
	}
	db.SetEvents(true)
	put("k1")
	put("k2")
	if !signalled() {
		t.Fatal("no signal after a change with events on")
	}
	if signalled() {
		t.Fatal("two signals wait: at most one should")
	}
	if err := db.DeleteKey(ctx(t), "missing"); err == nil {
		t.Fatal("deleting a missing key succeeded")
	}
	if signalled() {
		t.Fatal("signal after a change that failed")
	}
	if err := db.CreateWebhook(ctx(t), hook("h1")); err != nil || !signalled() {
		t.Fatalf("CreateWebhook: %v; signalled: false", err)
	}
	db.SetEvents(false)
	if err := db.DeleteWebhook(ctx(t), "h1"); err != nil || signalled() {
		t.Fatalf("DeleteWebhook with events off: %v; signalled: true", err)
	}
	pendingEvents(t, db, 3)
}
