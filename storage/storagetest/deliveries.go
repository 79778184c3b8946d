package storagetest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// outEvent is an event as the outbox hands it to a fan-out.
func outEvent(id, subject string) storage.Event {
	return storage.Event{ID: id, Type: "io.vitrine.metadata.replaced", Source: storage.EventSource, Subject: subject,
		Time: base, Data: json.RawMessage(`{"id":"` + id + `"}`)}
}

func fanOut(t *testing.T, db *storage.DB, e storage.Event, sinks ...string) {
	t.Helper()
	if err := db.FanOut(ctx(t), e, sinks); err != nil {
		t.Fatal(err)
	}
}

// due returns the due deliveries as "sink event" strings.
func due(t *testing.T, db *storage.DB, limit int, skip ...string) ([]string, []storage.Delivery) {
	t.Helper()
	list, err := db.DueDeliveries(ctx(t), limit, skip)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range list {
		out = append(out, d.Sink+" "+d.Event.ID)
	}
	return out, list
}

// deliveriesOf returns every delivery of sink, newest first, failing
// unless there are n.
func deliveriesOf(t *testing.T, db *storage.DB, sink string, n int) []storage.Delivery {
	t.Helper()
	list, total, err := db.Deliveries(ctx(t), sink, storage.DeliveryQuery{Limit: 100})
	if err != nil || total != n || len(list) != n {
		t.Fatalf("Deliveries(%s) = %d (of %d), %v; want %d", sink, len(list), total, err, n)
	}
	return list
}

// attemptRows counts the logged attempts of the delivery id, whether or
// not the delivery is still there.
func attemptRows(t *testing.T, db *storage.DB, id int64) int {
	t.Helper()
	var n int
	q := fmt.Sprintf("SELECT COUNT(*) FROM delivery_attempts WHERE delivery_id = %d", id)
	if err := db.SQL().QueryRowContext(ctx(t), q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// claim claims d, failing unless it is won.
func claim(t *testing.T, db *storage.DB, d storage.Delivery, lease time.Duration) {
	t.Helper()
	if ok, err := db.ClaimDelivery(ctx(t), d, lease); err != nil || !ok {
		t.Fatalf("ClaimDelivery(%d) = %v, %v", d.ID, ok, err)
	}
}

func finish(t *testing.T, db *storage.DB, id int64, a storage.DeliveryAttempt, state storage.DeliveryState, retry time.Time) {
	t.Helper()
	if err := db.FinishDelivery(ctx(t), id, a, state, retry); err != nil {
		t.Fatal(err)
	}
}

// testFanOut checks that a fan-out writes one pending delivery per sink
// carrying the event as it was, and that repeating it writes nothing new.
func testFanOut(t *testing.T, db *storage.DB) {
	e := outEvent("e1", "users/u/images/a")
	fanOut(t, db, e, "webhook:a", "webhook:b")
	fanOut(t, db, e, "webhook:a", "webhook:b")
	fanOut(t, db, e, "webhook:a", "cdn:c")
	for _, s := range []string{"webhook:a", "webhook:b", "cdn:c"} {
		d := deliveriesOf(t, db, s, 1)[0]
		if d.Sink != s || d.Event.ID != e.ID || d.Event.Type != e.Type || d.Event.Subject != e.Subject ||
			!d.Event.Time.Equal(e.Time) || string(d.Event.Data) != string(e.Data) || d.Event.Source != storage.EventSource {
			t.Errorf("%s: delivery %+v, event %+v; want %+v", s, d, d.Event, e)
		}
		if d.State != storage.DeliveryPending || d.Attempts != 0 || !d.Finished.IsZero() || len(d.Log) != 0 ||
			d.Created.IsZero() || d.Due.After(time.Now()) {
			t.Errorf("%s: new delivery %+v", s, d)
		}
	}
	if err := db.FanOut(ctx(t), outEvent("e2", "x"), nil); err != nil {
		t.Errorf("FanOut to no sink: %v", err)
	}
	wantErr(t, "FanOut(empty sink)", db.FanOut(ctx(t), outEvent("e3", "x"), []string{""}), storage.ErrInvalid)
	wantErr(t, "FanOut(long sink)", db.FanOut(ctx(t), outEvent("e3", "x"), []string{strings.Repeat("s", 129)}), storage.ErrInvalid)
	if got, _ := due(t, db, 100); len(got) != 3 {
		t.Fatalf("due %q, want the three deliveries of e1", got)
	}
}

// testDueDeliveries checks that only the oldest pending delivery of each
// sink and subject is due, oldest first, without the sinks skipped and
// the ones whose due time has not come.
func testDueDeliveries(t *testing.T, db *storage.DB) {
	for _, e := range []storage.Event{outEvent("a1", "A"), outEvent("a2", "A"), outEvent("b1", "B"), outEvent("a3", "A")} {
		fanOut(t, db, e, "s1", "s2")
	}
	check := func(what string, want []string, limit int, skip ...string) []storage.Delivery {
		t.Helper()
		got, list := due(t, db, limit, skip...)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: due %q, want %q", what, got, want)
		}
		return list
	}
	all := check("heads", []string{"s1 a1", "s2 a1", "s1 b1", "s2 b1"}, 100)
	check("skip s2", []string{"s1 a1", "s1 b1"}, 100, "s2")
	check("skip both", nil, 100, "s1", "s2")
	check("limit", []string{"s1 a1", "s2 a1"}, 2)

	// A claimed head is hidden for its lease and still holds back its
	// subject's next event on its sink.
	claim(t, db, all[0], time.Hour)
	check("s1 a1 claimed", []string{"s2 a1", "s1 b1", "s2 b1"}, 100)
	// Back to pending with a retry in an hour: not due, still the head.
	finish(t, db, all[0].ID, storage.DeliveryAttempt{At: time.Now(), Status: 503}, storage.DeliveryPending, time.Now().Add(time.Hour))
	check("s1 a1 waits for its retry", []string{"s2 a1", "s1 b1", "s2 b1"}, 100)
	// Delivered: the next of the subject is due on that sink only.
	claim(t, db, all[1], time.Hour)
	finish(t, db, all[1].ID, storage.DeliveryAttempt{At: time.Now(), Status: 200}, storage.DeliveryDone, time.Time{})
	check("s2 a1 delivered", []string{"s2 a2", "s1 b1", "s2 b1"}, 100)
	// Failed for good: the subject goes on too.
	retried := all[0]
	retried.Attempts = 1
	claim(t, db, retried, time.Hour)
	finish(t, db, all[0].ID, storage.DeliveryAttempt{At: time.Now(), Error: "gave up"}, storage.DeliveryFailed, time.Time{})
	check("s1 a1 failed", []string{"s1 a2", "s2 a2", "s1 b1", "s2 b1"}, 100)
}

// testClaimDelivery checks the compare-and-swap: a claim with a stale
// attempts count loses, a finished delivery cannot be claimed, a lease
// that ran out makes the delivery due again, and of two claims at once
// exactly one wins.
func testClaimDelivery(t *testing.T, db *storage.DB) {
	const n = 8
	for i := range n {
		fanOut(t, db, outEvent(fmt.Sprint("e", i), fmt.Sprint("subject", i)), "s")
	}
	_, list := due(t, db, 100)
	if len(list) != n {
		t.Fatalf("%d due, want %d", len(list), n)
	}
	d := list[0]
	claim(t, db, d, 0) // a lease already over: due again at once
	if ok, err := db.ClaimDelivery(ctx(t), d, time.Hour); ok || err != nil {
		t.Fatalf("claim with stale attempts = %v, %v; want false, nil", ok, err)
	}
	_, again := due(t, db, 1)
	if len(again) != 1 || again[0].ID != d.ID || again[0].Attempts != 1 {
		t.Fatalf("after a lease ran out: due %+v, want delivery %d with 1 attempt", again, d.ID)
	}
	claim(t, db, again[0], time.Hour)
	finish(t, db, d.ID, storage.DeliveryAttempt{At: time.Now(), Status: 204}, storage.DeliveryDone, time.Time{})
	done := again[0]
	done.Attempts = 2
	if ok, err := db.ClaimDelivery(ctx(t), done, time.Hour); ok || err != nil {
		t.Fatalf("claim of a delivered one = %v, %v; want false, nil", ok, err)
	}

	for _, d := range list[1:] {
		var wg sync.WaitGroup
		var won [2]bool
		var errs [2]error
		for i := range 2 {
			wg.Go(func() { won[i], errs[i] = db.ClaimDelivery(ctx(t), d, time.Hour) })
		}
		wg.Wait()
		if errs[0] != nil || errs[1] != nil || won[0] == won[1] {
			t.Fatalf("delivery %d claimed twice at once: won %v, errors %v", d.ID, won, errs)
		}
	}
	if got, _ := due(t, db, 100); len(got) != 0 {
		t.Fatalf("due after every claim: %q", got)
	}
}

// testDeliveryLog checks FinishDelivery's three outcomes, the attempts
// log, and Deliveries' order, state filter and paging.
func testDeliveryLog(t *testing.T, db *storage.DB) {
	for i := range 3 {
		fanOut(t, db, outEvent(fmt.Sprint("e", i), fmt.Sprint("subject", i)), "s")
	}
	fanOut(t, db, outEvent("other", "subject0"), "other")
	_, list := due(t, db, 100, "other")
	ok, retried, failed := list[0], list[1], list[2]
	at := time.Now().UTC().Truncate(time.Microsecond)
	long := strings.Repeat("r", 2000)

	claim(t, db, ok, time.Hour)
	finish(t, db, ok.ID, storage.DeliveryAttempt{At: at, Status: 500, Latency: 120 * time.Millisecond,
		Response: long, Error: "receiver answered 500"}, storage.DeliveryPending, time.Now().Add(-time.Second))
	ok.Attempts = 1
	claim(t, db, ok, time.Hour)
	finish(t, db, ok.ID, storage.DeliveryAttempt{At: at.Add(time.Second), Status: 200, Latency: 3 * time.Millisecond,
		Response: "thanks"}, storage.DeliveryDone, time.Time{})

	retry := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)
	claim(t, db, retried, time.Hour)
	finish(t, db, retried.ID, storage.DeliveryAttempt{At: at, Error: "connection refused"}, storage.DeliveryPending, retry)

	claim(t, db, failed, time.Hour)
	finish(t, db, failed.ID, storage.DeliveryAttempt{At: at, Status: 410, Response: "gone"}, storage.DeliveryFailed, time.Time{})

	d, err := db.Delivery(ctx(t), "s", ok.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d.State != storage.DeliveryDone || d.Attempts != 2 || d.Finished.IsZero() || d.LastStatus != 200 || d.LastError != "" {
		t.Errorf("delivered: %+v", d)
	}
	if len(d.Log) != 2 {
		t.Fatalf("log %+v, want 2 attempts", d.Log)
	}
	first, second := d.Log[0], d.Log[1]
	if !first.At.Equal(at) || first.Status != 500 || first.Latency != 120*time.Millisecond ||
		first.Response != long[:1024] || first.Error != "receiver answered 500" {
		t.Errorf("first attempt %+v", first)
	}
	if !second.At.Equal(at.Add(time.Second)) || second.Status != 200 || second.Response != "thanks" || second.Error != "" {
		t.Errorf("second attempt %+v", second)
	}
	if d, _ := db.Delivery(ctx(t), "s", retried.ID); d.State != storage.DeliveryPending || !d.Due.Equal(retry) ||
		d.LastError != "connection refused" || d.LastStatus != 0 || len(d.Log) != 1 || !d.Finished.IsZero() {
		t.Errorf("pending again: %+v", d)
	}
	if d, _ := db.Delivery(ctx(t), "s", failed.ID); d.State != storage.DeliveryFailed || d.LastStatus != 410 ||
		d.Finished.IsZero() || len(d.Log) != 1 || d.Log[0].Response != "gone" {
		t.Errorf("failed: %+v", d)
	}
	_, err = db.Delivery(ctx(t), "other", ok.ID)
	wantErr(t, "Delivery(another sink's id)", err, storage.ErrNotExist)
	_, err = db.Delivery(ctx(t), "s", 1<<40)
	wantErr(t, "Delivery(unknown id)", err, storage.ErrNotExist)

	ids := func(q storage.DeliveryQuery) ([]int64, int) {
		t.Helper()
		list, n, err := db.Deliveries(ctx(t), "s", q)
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, d := range list {
			out = append(out, d.ID)
		}
		return out, n
	}
	cases := []struct {
		name string
		q    storage.DeliveryQuery
		want []int64
		hits int
	}{
		{"all, newest first", storage.DeliveryQuery{}, []int64{failed.ID, retried.ID, ok.ID}, 3},
		{"delivered", storage.DeliveryQuery{State: storage.DeliveryDone, Filter: true}, []int64{ok.ID}, 1},
		{"pending", storage.DeliveryQuery{State: storage.DeliveryPending, Filter: true}, []int64{retried.ID}, 1},
		{"failed", storage.DeliveryQuery{State: storage.DeliveryFailed, Filter: true}, []int64{failed.ID}, 1},
		{"page 2 of 1", storage.DeliveryQuery{Page: 2, Limit: 1}, []int64{retried.ID}, 3},
		{"page 2 of 2", storage.DeliveryQuery{Page: 2, Limit: 2}, []int64{ok.ID}, 3},
		{"past the end", storage.DeliveryQuery{Page: 5, Limit: 2}, nil, 3},
	}
	for _, c := range cases {
		if got, n := ids(c.q); !slices.Equal(got, c.want) || n != c.hits {
			t.Errorf("%s: %v (%d hits), want %v (%d)", c.name, got, n, c.want, c.hits)
		}
	}
	list, _, _ = db.Deliveries(ctx(t), "s", storage.DeliveryQuery{})
	if len(list[2].Log) != 2 || len(list[0].Log) != 1 {
		t.Errorf("Deliveries without the attempts: %+v", list)
	}
	for _, st := range []storage.DeliveryState{storage.DeliveryPending, storage.DeliveryDone, storage.DeliveryFailed} {
		if name := st.String(); name != map[storage.DeliveryState]string{0: "pending", 1: "delivered", 2: "failed"}[st] {
			t.Errorf("state %d is named %q", st, name)
		}
	}
}

// testRedeliver checks that a finished delivery becomes pending again,
// due now, its log kept, and that a pending or unknown one cannot.
func testRedeliver(t *testing.T, db *storage.DB) {
	fanOut(t, db, outEvent("e1", "A"), "s")
	fanOut(t, db, outEvent("e2", "B"), "s")
	_, list := due(t, db, 100)
	d, pending := list[0], list[1]
	claim(t, db, d, time.Hour)
	finish(t, db, d.ID, storage.DeliveryAttempt{At: time.Now(), Status: 500}, storage.DeliveryFailed, time.Time{})
	if err := db.Redeliver(ctx(t), "s", d.ID); err != nil {
		t.Fatal(err)
	}
	got, err := db.Delivery(ctx(t), "s", d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != storage.DeliveryPending || got.Attempts != 0 || !got.Finished.IsZero() || len(got.Log) != 1 ||
		got.Event.ID != "e1" || got.Due.After(time.Now()) || got.Created.Before(d.Created) {
		t.Fatalf("redelivered: %+v", got)
	}
	if ids, _ := due(t, db, 100); !slices.Equal(ids, []string{"s e1", "s e2"}) {
		t.Fatalf("due after a redelivery: %q", ids)
	}
	wantErr(t, "Redeliver(pending)", db.Redeliver(ctx(t), "s", pending.ID), storage.ErrPending)
	wantErr(t, "Redeliver(redelivered, pending)", db.Redeliver(ctx(t), "s", d.ID), storage.ErrPending)
	wantErr(t, "Redeliver(unknown)", db.Redeliver(ctx(t), "s", 1<<40), storage.ErrNotExist)
	wantErr(t, "Redeliver(another sink's)", db.Redeliver(ctx(t), "t", d.ID), storage.ErrNotExist)
	// Delivered ones too.
	got.Attempts = 0
	claim(t, db, got, time.Hour)
	finish(t, db, d.ID, storage.DeliveryAttempt{At: time.Now(), Status: 200}, storage.DeliveryDone, time.Time{})
	if err := db.Redeliver(ctx(t), "s", d.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.Delivery(ctx(t), "s", d.ID); got.State != storage.DeliveryPending || len(got.Log) != 2 {
		t.Fatalf("delivered, redelivered: %+v", got)
	}
}

// testPurgeDeliveries checks that a purge deletes the deliveries finished
// before its cutoff with their attempts, and keeps the later and pending
// ones.
func testPurgeDeliveries(t *testing.T, db *storage.DB) {
	for i := range 3 {
		fanOut(t, db, outEvent(fmt.Sprint("e", i), fmt.Sprint("subject", i)), "s")
	}
	_, list := due(t, db, 100)
	old, recent, pending := list[0], list[1], list[2]
	for _, d := range []storage.Delivery{old, recent, pending} {
		claim(t, db, d, time.Hour)
	}
	finish(t, db, old.ID, storage.DeliveryAttempt{At: time.Now(), Status: 200}, storage.DeliveryDone, time.Time{})
	finishedOld, err := db.Delivery(ctx(t), "s", old.ID)
	if err != nil {
		t.Fatal(err)
	}
	for time.Now().UnixMicro() <= finishedOld.Finished.UnixMicro() {
		time.Sleep(time.Microsecond) // the next finish must come after the cutoff
	}
	cutoff := finishedOld.Finished.Add(time.Microsecond)
	finish(t, db, recent.ID, storage.DeliveryAttempt{At: time.Now(), Status: 500}, storage.DeliveryFailed, time.Time{})
	finish(t, db, pending.ID, storage.DeliveryAttempt{At: time.Now(), Status: 500}, storage.DeliveryPending, time.Now())

	if n, err := db.PurgeDeliveries(ctx(t), finishedOld.Finished); err != nil || n != 0 {
		t.Fatalf("PurgeDeliveries(before any finished) = %d, %v; want 0", n, err)
	}
	if n, err := db.PurgeDeliveries(ctx(t), cutoff); err != nil || n != 1 {
		t.Fatalf("PurgeDeliveries = %d, %v; want 1", n, err)
	}
	_, err = db.Delivery(ctx(t), "s", old.ID)
	wantErr(t, "Delivery(purged)", err, storage.ErrNotExist)
	if n := attemptRows(t, db, old.ID); n != 0 {
		t.Fatalf("%d attempts of the purged delivery left", n)
	}
	left := deliveriesOf(t, db, "s", 2)
	if left[0].ID != pending.ID || left[1].ID != recent.ID || len(left[0].Log) != 1 || len(left[1].Log) != 1 {
		t.Fatalf("left after the purge: %+v", left)
	}
	if n, err := db.PurgeDeliveries(ctx(t), time.Now().Add(time.Minute)); err != nil || n != 1 {
		t.Fatalf("PurgeDeliveries(now) = %d, %v; want 1 (the pending one stays)", n, err)
	}
	if left := deliveriesOf(t, db, "s", 1); left[0].ID != pending.ID || attemptRows(t, db, recent.ID) != 0 {
		t.Fatalf("left after the second purge: %+v", left)
	}
}

// testDeleteWebhookDeliveries checks that deleting a subscription deletes
// its deliveries, pending and logged, with their attempts, and only
// those; and that an attempt that finishes after the delete leaves no row.
func testDeleteWebhookDeliveries(t *testing.T, db *storage.DB) {
	if err := db.CreateWebhook(ctx(t), hook("h1")); err != nil {
		t.Fatal(err)
	}
	sink := storage.WebhookSink("h1")
	for i := range 3 {
		fanOut(t, db, outEvent(fmt.Sprint("e", i), fmt.Sprint("subject", i)), sink, "cdn:x")
	}
	_, list := due(t, db, 100, "cdn:x")
	for _, d := range list {
		claim(t, db, d, time.Hour)
	}
	finish(t, db, list[0].ID, storage.DeliveryAttempt{At: time.Now(), Status: 200}, storage.DeliveryDone, time.Time{})
	finish(t, db, list[1].ID, storage.DeliveryAttempt{At: time.Now(), Status: 500}, storage.DeliveryPending, time.Now())
	if err := db.DeleteWebhook(ctx(t), "h1"); err != nil {
		t.Fatal(err)
	}
	deliveriesOf(t, db, sink, 0)
	deliveriesOf(t, db, "cdn:x", 3)
	// The third was being attempted while its subscription went.
	if err := db.FinishDelivery(ctx(t), list[2].ID, storage.DeliveryAttempt{At: time.Now(), Status: 200},
		storage.DeliveryDone, time.Time{}); err != nil {
		t.Fatalf("FinishDelivery of a deleted delivery: %v", err)
	}
	for _, d := range list {
		if n := attemptRows(t, db, d.ID); n != 0 {
			t.Errorf("delivery %d: %d attempts left after its subscription was deleted", d.ID, n)
		}
	}
	if ids, _ := due(t, db, 100); len(ids) != 3 || strings.Contains(strings.Join(ids, ","), sink) {
		t.Fatalf("due after the delete: %q", ids)
	}
}

// testFanOutTaken checks the deliveries a drain writes taken: a sink the
// caller takes gets its delivery claimed (hidden from DueDeliveries, its
// first attempt counted), except behind an earlier pending delivery of the
// same subject, which it waits for as a pending one; a sink not taken gets
// a pending one; a transaction's outcome reaches Written.
func testFanOutTaken(t *testing.T, db *storage.DB) {
	db.SetEvents(true)
	mustInsert(t, db, image("u", "a", base), image("u", "b", base))
	setMetadata(t, db, "u", "a", 1) // a: added, replaced; b: added
	var taken []storage.Delivery
	pending := 0
	f := storage.EventFanout{
		Take:  func(sink string) bool { return sink == "fast" },
		Lease: time.Hour,
		Written: func(tk []storage.Delivery, n int) {
			taken = append(taken, tk...)
			pending += n
		},
	}
	pass := storage.JobPass{RetryMin: time.Hour, RetryMax: time.Hour}
	n, err := db.DrainEventsTo(ctx(t), pass, func(context.Context, storage.Event) ([]string, error) {
		return []string{"fast", "slow"}, nil
	}, f)
	if err != nil || n != 3 {
		t.Fatalf("drained %d, %v; want 3", n, err)
	}
	var got []string
	for _, d := range taken {
		if d.ID == 0 || d.Attempts != 0 || d.Event.Type != "io.vitrine.image.added" {
			t.Errorf("taken %+v", d)
		}
		got = append(got, d.Sink+" "+d.Event.Subject)
	}
	slices.Sort(got)
	if want := []string{"fast users/u/images/a", "fast users/u/images/b"}; !slices.Equal(got, want) || pending != 4 {
		t.Fatalf("taken %v and %d pending; want %v and 4 (3 slow, a's second fast behind its first)", got, pending, want)
	}
	// The taken ones are claimed: due are the slow sink's heads only.
	if d, _ := due(t, db, 10); len(d) != 2 || !strings.HasPrefix(d[0], "slow ") || !strings.HasPrefix(d[1], "slow ") {
		t.Fatalf("due %v, want the slow sink's two heads", d)
	}
	// a's first fast delivery done: its second is due.
	var first storage.Delivery
	for _, d := range taken {
		if d.Event.Subject == "users/u/images/a" {
			first = d
		}
	}
	finish(t, db, first.ID, storage.DeliveryAttempt{At: base, Status: 204}, storage.DeliveryDone, time.Time{})
	d, list := due(t, db, 10, "slow")
	if len(d) != 1 || list[0].Event.Type != "io.vitrine.metadata.replaced" || list[0].Attempts != 0 {
		t.Fatalf("due after a's first: %v %+v, want a's second to the fast sink", d, list)
	}
}

// testFanOutReplayed checks a drain whose deliveries are there already
// (its fan-out repeated after a crash): a sink that has the event gets
// nothing new and nothing taken, though its delivery is done, while the
// drain's other deliveries are taken with the ids they were written
// under.
func testFanOutReplayed(t *testing.T, db *storage.DB) {
	db.SetEvents(true)
	mustInsert(t, db, image("u", "a", base), image("u", "b", base))
	events := pendingEvents(t, db, 2)
	fanOut(t, db, events[0], "fast")
	_, list := due(t, db, 10)
	claim(t, db, list[0], time.Hour)
	finish(t, db, list[0].ID, storage.DeliveryAttempt{At: base, Status: 200}, storage.DeliveryDone, time.Time{})
	var taken []storage.Delivery
	f := storage.EventFanout{
		Take:    func(string) bool { return true },
		Lease:   time.Hour,
		Written: func(tk []storage.Delivery, _ int) { taken = append(taken, tk...) },
	}
	pass := storage.JobPass{RetryMin: time.Hour, RetryMax: time.Hour}
	n, err := db.DrainEventsTo(ctx(t), pass, func(context.Context, storage.Event) ([]string, error) {
		return []string{"fast", "other"}, nil
	}, f)
	if err != nil || n != 2 {
		t.Fatalf("drained %d, %v; want 2", n, err)
	}
	deliveriesOf(t, db, "fast", 2)
	deliveriesOf(t, db, "other", 2)
	var got []string
	for _, d := range taken {
		stored, err := db.Delivery(ctx(t), d.Sink, d.ID)
		if err != nil || stored.Event.ID != d.Event.ID || stored.Attempts != 1 || stored.State != storage.DeliveryPending {
			t.Errorf("taken %s %s as %d: stored %+v, %v", d.Sink, d.Event.ID, d.ID, stored, err)
		}
		got = append(got, d.Sink+" "+d.Event.ID)
	}
	slices.Sort(got)
	want := []string{"fast " + events[1].ID, "other " + events[0].ID, "other " + events[1].ID}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("taken %v, want %v (not fast's delivery of %s, there before)", got, want, events[0].ID)
	}
}

// testFinishDeliveries checks outcomes recorded together: those that end
// alike and those that do not each get their state, status and one
// logged attempt, and an outcome of a delivery that is gone records
// nothing.
func testFinishDeliveries(t *testing.T, db *storage.DB) {
	for i := range 4 {
		fanOut(t, db, outEvent(fmt.Sprint("e", i), fmt.Sprint("subject", i)), "cdn:x")
	}
	_, list := due(t, db, 10)
	if len(list) != 4 {
		t.Fatalf("due %d, want 4", len(list))
	}
	for _, d := range list {
		claim(t, db, d, time.Hour)
	}
	retry := time.Now().Add(time.Hour).Truncate(time.Microsecond)
	outcomes := []storage.DeliveryOutcome{
		{ID: list[0].ID, Attempt: storage.DeliveryAttempt{At: base, Status: 200}, State: storage.DeliveryDone},
		{ID: list[1].ID, Attempt: storage.DeliveryAttempt{At: base, Status: 503, Error: "busy"}, State: storage.DeliveryPending, Retry: retry},
		{ID: list[2].ID, Attempt: storage.DeliveryAttempt{At: base, Status: 200}, State: storage.DeliveryDone},
		{ID: 1 << 40, Attempt: storage.DeliveryAttempt{At: base, Status: 200}, State: storage.DeliveryDone},
		{ID: list[3].ID, Attempt: storage.DeliveryAttempt{At: base, Status: 410, Error: "gone"}, State: storage.DeliveryFailed},
	}
	if err := db.FinishDeliveries(ctx(t), outcomes); err != nil {
		t.Fatal(err)
	}
	for i, o := range outcomes {
		if i == 3 {
			if n := attemptRows(t, db, o.ID); n != 0 {
				t.Errorf("%d attempts of a delivery that is not there", n)
			}
			continue
		}
		d, err := db.Delivery(ctx(t), "cdn:x", o.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d.State != o.State || d.LastStatus != o.Attempt.Status || d.LastError != o.Attempt.Error || len(d.Log) != 1 ||
			d.Log[0].Status != o.Attempt.Status {
			t.Errorf("outcome %d: delivery %+v, want %+v", i, d, o)
		}
		if o.State == storage.DeliveryPending && !d.Due.Equal(retry) || o.State != storage.DeliveryPending && d.Finished.IsZero() {
			t.Errorf("outcome %d: due %v, finished %v", i, d.Due, d.Finished)
		}
	}
}
