package storagetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/vitrine/vitrine/storage"
)

// eventTypes is the event every audited action writes, written out here
// apart from storage's table so that a renamed type is caught.
var eventTypes = map[string]string{
	"key.create": "io.vitrine.key.created", "key.update": "io.vitrine.key.updated", "key.delete": "io.vitrine.key.deleted",
	"group.create": "io.vitrine.group.created", "group.update": "io.vitrine.group.updated",
	"group.delete": "io.vitrine.group.deleted", "rule.create": "io.vitrine.rule.created",
	"rule.delete": "io.vitrine.rule.deleted", "image.create": "io.vitrine.image.added",
	"image.delete": "io.vitrine.image.deleted", "metadata.set": "io.vitrine.metadata.replaced",
	"metadata.merge": "io.vitrine.metadata.merged", "metadata.delete": "io.vitrine.metadata.deleted",
	"shorturl.create": "io.vitrine.shorturl.created", "shorturl.delete": "io.vitrine.shorturl.deleted",
	"filters.reload": "io.vitrine.filters.reloaded",
}

var eventSubjects = map[string]string{"k1": "keys/k1", "g1": "groups/g1", "u/img1": "users/u/images/img1", "filters": "filters"}

var uuid = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// testEvents checks that, with events on, every change the audit log
// records writes one event in its transaction (a change that fails
// writes none, and an event that cannot be written fails the change and
// its audit entry), and that with events off none is written.
func testEvents(t *testing.T, db *storage.DB) {
	start := time.Now().Add(-time.Second)
	db.SetEvents(true)
	steps := auditSteps(t, db)
	for _, s := range steps {
		if err := s.run(); err != nil {
			t.Fatalf("%s %s: %v", s.action, s.target, err)
		}
	}
	if err := db.DeleteImage(ctx(t), "u", "missing"); err == nil {
		t.Fatal("deleting a missing image succeeded")
	}
	err := db.RecordAudit(ctx(t), "nothing.happened", "filters", nil)
	wantErr(t, "RecordAudit(action without an event)", err, storage.ErrInvalid)
	if _, n, _ := db.AuditLog(ctx(t), storage.AuditQuery{}); n != len(steps) {
		t.Fatalf("audit log has %d entries, want %d: a change whose event failed was kept", n, len(steps))
	}
	events := pendingEvents(t, db, len(steps))
	ids := map[string]bool{}
	for i, s := range steps {
		t.Run(s.action, func(t *testing.T) {
			e := events[i]
			if e.Type != eventTypes[s.action] || e.Subject != eventSubjects[s.target] || e.Source != storage.EventSource {
				t.Errorf("event %+v, want type %s subject %s", e, eventTypes[s.action], eventSubjects[s.target])
			}
			if !uuid.MatchString(e.ID) || ids[e.ID] || e.Attempts != 0 {
				t.Errorf("id %q (seen before: %v), attempts %d", e.ID, ids[e.ID], e.Attempts)
			}
			ids[e.ID] = true
			if e.Time.Before(start) || e.Time.After(time.Now().Add(time.Second)) {
				t.Errorf("time %v", e.Time)
			}
			var data map[string]any
			if err := json.Unmarshal(e.Data, &data); err != nil {
				t.Fatalf("data %s: %v", e.Data, err)
			}
			wantEventData(t, s.action, data)
		})
	}
	ce, err := json.Marshal(events[0])
	if err != nil || !json.Valid(ce) {
		t.Fatalf("CloudEvent JSON %s: %v", ce, err)
	}
	var structured map[string]any
	_ = json.Unmarshal(ce, &structured)
	if structured["specversion"] != "1.0" || structured["id"] != events[0].ID || structured["datacontenttype"] != "application/json" {
		t.Errorf("CloudEvent JSON %s", ce)
	}
	db.SetEvents(false)
	if _, err := db.PutKey(ctx(t), storage.Key{PublicKey: "k2", PrivateKey: "p"}); err != nil {
		t.Fatal(err)
	}
	pendingEvents(t, db, len(steps))
}

// wantEventData checks what an event's data names, by its action.
func wantEventData(t *testing.T, action string, data map[string]any) {
	t.Helper()
	want := map[string]any{}
	switch action {
	case "image.create":
		want = map[string]any{"user": "u", "imageIdentifier": "img1", "checksum": "sum-img1", "mimeType": "image/png",
			"width": 10.0, "added": "Fri, 01 Mar 2024 12:00:00 GMT", "originalChecksum": nil}
	case "metadata.set", "metadata.merge", "metadata.delete", "shorturl.create", "shorturl.delete", "image.delete":
		want = map[string]any{"user": "u", "imageIdentifier": "img1"}
	case "key.create", "key.update", "key.delete", "rule.create", "rule.delete":
		want = map[string]any{"publicKey": "k1"}
	case "group.create", "group.update":
		want = map[string]any{"group": "g1", "resources": "[image.get]"}
		if action == "group.update" {
			want["resources"] = "[image.head]"
		}
	case "group.delete":
		want = map[string]any{"group": "g1"}
	case "filters.reload":
		want = map[string]any{"loaded": 2.0}
	}
	for k, v := range want {
		if got, ok := data[k]; !ok || fmt.Sprint(got) != fmt.Sprint(v) {
			t.Errorf("data[%s] = %v, want %v (data %v)", k, got, v, data)
		}
	}
}

// pendingEvents returns the events not delivered, failing unless there
// are n.
func pendingEvents(t *testing.T, db *storage.DB, n int) []storage.Event {
	t.Helper()
	events, err := db.PendingEvents(ctx(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != n {
		t.Fatalf("%d events pending, want %d: %+v", len(events), n, events)
	}
	return events
}

// delivery records what a deliverer was handed, and fails the events
// fail says to.
type delivery struct {
	mu   sync.Mutex
	log  []storage.Event
	fail func(storage.Event) bool
}

func (d *delivery) deliver(_ context.Context, e storage.Event) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.log = append(d.log, e)
	if d.fail != nil && d.fail(e) {
		return errors.New("broker down")
	}
	return nil
}

// setMetadata changes the metadata of user/id n times (n events).
func setMetadata(t *testing.T, db *storage.DB, user, id string, n int) {
	t.Helper()
	for i := range n {
		if err := db.SetMetadata(ctx(t), user, id, map[string]any{"n": i}); err != nil {
			t.Fatal(err)
		}
	}
}

// testEventsOrder checks that a subject's events are delivered in order:
// an event is not taken while an older one of its subject is pending,
// even one waiting for its retry, and a retried event keeps its ID.
func testEventsOrder(t *testing.T, db *storage.DB) {
	db.SetEvents(true)
	mustInsert(t, db, image("u", "a", base), image("u", "b", base))
	setMetadata(t, db, "u", "a", 2) // a: added, replaced, replaced; b: added
	a1 := pendingEvents(t, db, 4)[0]
	d := &delivery{fail: func(e storage.Event) bool { return e.ID == a1.ID && e.Attempts == 0 }}
	n, err := db.DrainEvents(ctx(t), storage.JobPass{RetryMin: time.Nanosecond, RetryMax: time.Nanosecond}, d.deliver)
	if err == nil || n != 1 {
		t.Fatalf("first drain: %d delivered, %v; want b's one and a's first failed", n, err)
	}
	if n, err = db.DrainEvents(ctx(t), storage.JobPass{RetryMin: time.Nanosecond, RetryMax: time.Nanosecond}, d.deliver); err != nil || n != 3 {
		t.Fatalf("second drain: %d delivered, %v; want a's three", n, err)
	}
	var got []string
	for _, e := range d.log {
		got = append(got, fmt.Sprintf("%s %d", e.Subject, e.Attempts))
	}
	want := []string{"users/u/images/a 0", "users/u/images/b 0", "users/u/images/a 1", "users/u/images/a 0", "users/u/images/a 0"}
	if !slices.Equal(got, want) || d.log[2].ID != a1.ID {
		t.Fatalf("deliveries %v, want %v with the retry keeping id %s", got, want, a1.ID)
	}
	pendingEvents(t, db, 0)

	setMetadata(t, db, "u", "b", 2)
	hour := storage.JobPass{RetryMin: time.Hour, RetryMax: time.Hour}
	down := &delivery{fail: func(storage.Event) bool { return true }}
	for range 2 { // the first fails b's first event; the second finds nothing to take
		_, _ = db.DrainEvents(ctx(t), hour, down.deliver)
	}
	if len(down.log) != 1 {
		t.Fatalf("deliveries while b's first waits for its retry: %+v", down.log)
	}
	pendingEvents(t, db, 2)
}

// testEventsConcurrentDrains checks that two drains at once deliver every
// event once, in order per subject.
func testEventsConcurrentDrains(t *testing.T, db *storage.DB) {
	db.SetEvents(true)
	const subjects, per = 4, 10
	for s := range subjects {
		id := fmt.Sprint("s", s)
		mustInsert(t, db, image("u", id, base))
		setMetadata(t, db, "u", id, per-1)
	}
	order := map[string]int{} // event ID: position in its subject
	for i, e := range pendingEvents(t, db, subjects*per) {
		order[e.ID] = i % per
	}
	d := &delivery{}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	pass := storage.JobPass{RetryMin: time.Hour, RetryMax: time.Hour}
	for i := range 2 {
		wg.Go(func() { _, errs[i] = db.DrainEvents(ctx(t), pass, d.deliver) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if len(d.log) != subjects*per {
		t.Fatalf("%d deliveries, want %d", len(d.log), subjects*per)
	}
	next := map[string]int{}
	for _, e := range d.log {
		if order[e.ID] != next[e.Subject] {
			t.Fatalf("%s: event %d delivered when %d was due (ids taken twice or out of order)", e.Subject, order[e.ID], next[e.Subject])
		}
		next[e.Subject]++
	}
	pendingEvents(t, db, 0)
}

// testEventsTraceparent checks that an event keeps the trace context of
// the change that wrote it (none when it was not traced), and that the
// deliveries it fans out to carry it.
func testEventsTraceparent(t *testing.T, db *storage.DB) {
	db.SetEvents(true)
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	traced := propagation.TraceContext{}.Extract(ctx(t), propagation.MapCarrier{"traceparent": tp})
	if err := db.RecordAudit(traced, "group.delete", "traced", nil); err != nil {
		t.Fatal(err)
	}
	if err := db.RecordAudit(ctx(t), "group.delete", "untraced", nil); err != nil {
		t.Fatal(err)
	}
	events := pendingEvents(t, db, 2)
	if events[0].Traceparent != tp || events[1].Traceparent != "" {
		t.Fatalf("traceparents %q and %q, want %q and none", events[0].Traceparent, events[1].Traceparent, tp)
	}
	fanOut(t, db, events[0], "s1")
	_, due := due(t, db, 10)
	if len(due) != 1 || due[0].Event.Traceparent != tp {
		t.Fatalf("deliveries %+v, want one with traceparent %s", due, tp)
	}
}
