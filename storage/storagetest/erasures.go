package storagetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// erasurePass is a pass that erases two images a step, never waits long
// and finishes as soon as nothing is left.
var erasurePass = storage.ErasurePass{Batch: 2, Lease: time.Hour, Wait: time.Millisecond,
	RetryMin: time.Hour, RetryMax: time.Hour}

// erasureFixture is what plantErasure stores: one user to erase with
// something in every table an erasure empties, and one to keep.
type erasureFixture struct {
	gone, kept []*storage.Image
	data       map[string][]byte // blob bytes by key, of the kept user
	keptBlobs  []string          // every blob of the kept user
	goneBlobs  []string          // every blob of the erased user
}

// plantErasure stores n images of gone (metadata, a short URL, a cached
// variant and analysis properties each, stored variations for the first,
// usage counters, a webhook for gone alone and one for gone and kept) and
// two of kept (metadata and a variant each).
func plantErasure(t *testing.T, db *storage.DB, blobs *storage.Blobs, n int) erasureFixture {
	t.Helper()
	f := erasureFixture{data: map[string][]byte{}}
	cache := newCache(t, db, blobs, storage.CacheConfig{})
	store := func(user, id string, variations bool) *storage.Image {
		img := bigImage(user, id)
		img.Checksum = "sum-" + id
		img.Properties = &storage.Properties{BlurHash: "LKO2?U%2Tw=w", AverageColor: "#808080", PHash: 7, HasPHash: true}
		data := []byte("bytes of " + user + "/" + id)
		commitUpload(t, db, blobs, img, data, variations)
		if err := db.SetMetadata(ctx(t), user, id, map[string]any{"owner": user}); err != nil {
			t.Fatal(err)
		}
		name := storage.VariantName{Hash: "h-" + id, Chain: "thumbnail:width=10", Format: "png"}
		if _, err := cache.Put(ctx(t), *img, name, []byte("variant of "+id)); err != nil {
			t.Fatal(err)
		}
		keys := []string{img.Key(), storage.VariantKey(user, id, img.BlobToken, name.Hash)}
		if user == "kept" {
			f.kept = append(f.kept, img)
			f.keptBlobs = append(f.keptBlobs, keys...)
			f.data[img.Key()] = data
		} else {
			f.gone = append(f.gone, img)
			f.goneBlobs = append(f.goneBlobs, keys...)
			u := storage.ShortURL{ID: fmt.Sprintf("s%06d", len(f.gone)), User: user, Image: id, Extension: "png"}
			if err := db.InsertShortURL(ctx(t), u); err != nil {
				t.Fatal(err)
			}
		}
		return img
	}
	for i := range n {
		store("gone", fmt.Sprintf("g%02d", i), i == 0)
	}
	store("kept", "k1", false)
	store("kept", "k2", false)
	var asked []int
	if _, err := db.DrainVariationJobs(ctx(t), hourly, fakeBuilder(db, blobs, &asked, nil)); err != nil {
		t.Fatal(err)
	}
	vs, err := db.Variations(ctx(t), *f.gone[0])
	if err != nil || len(vs) != 3 {
		t.Fatalf("Variations = %v, %v; want 3", vs, err)
	}
	for _, v := range vs {
		f.goneBlobs = append(f.goneBlobs, v.Key)
	}
	day := time.Now().UTC().Format(time.DateOnly)
	if err := db.AddUsage(ctx(t), []storage.UsageCount{
		{Day: day, Metric: storage.MetricUploads, Label: "gone", Value: int64(n), Last: time.Now()},
		{Day: day, Metric: storage.MetricUploadBytes, Label: "gone", Value: 100, Last: time.Now()},
		{Day: day, Metric: storage.MetricUploads, Label: "kept", Value: 2, Last: time.Now()},
	}); err != nil {
		t.Fatal(err)
	}
	alone, both := hook("alone"), hook("both")
	alone.Users, both.Users = []string{"gone"}, []string{"gone", "kept"}
	for _, w := range []*storage.Webhook{alone, both, hook("every")} {
		if err := db.CreateWebhook(ctx(t), w); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// eraseAll runs erasure steps, draining the blob queue after each, until
// one finishes the erasure; it fails after limit steps.
func eraseAll(t *testing.T, db *storage.DB, blobs *storage.Blobs, p storage.ErasurePass, limit int) []storage.ErasureStep {
	t.Helper()
	var steps []storage.ErasureStep
	for range limit {
		s, ok, err := db.EraseStep(ctx(t), blobs, p)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			steps = append(steps, s)
		}
		if s.Done {
			return steps
		}
		drain(t, db, blobs)
		if !ok || s.Waiting {
			time.Sleep(2 * p.Wait) // the erasure is due again after p.Wait
		}
	}
	t.Fatalf("no erasure finished within %d steps: %+v", limit, steps)
	return nil
}

// testErasure erases a user with something in every table an erasure
// empties: a second request while it runs is the same erasure; the user's
// new images are refused until it is done; it goes a batch of images at
// a time with its counts; when done nothing of the user is left in the
// database or the store (fsck finds nothing), the other user is untouched
// (rows and bytes), the webhook scoped to the user alone is gone and the
// shared one no longer names it, the receipt lists every image with its
// checksum and hashes to the recorded hash, and one user.erase audit
// entry and event say so, as done by the actor who asked.
func testErasure(t *testing.T, db *storage.DB) {
	blobs := memBlobs(t)
	db.SetEvents(true)
	f := plantErasure(t, db, blobs, 5)
	asker := storage.WithActor(ctx(t), storage.Actor{Key: "admin", Addr: "192.0.2.7"})
	// A delivery of an event of gone's image waits for a purger (and one
	// of kept's), and the outbox holds the events of gone's uploads: the
	// erasure takes gone's, unsent.
	for _, user := range []string{"gone", "kept"} {
		ev := storage.Event{ID: storage.NewEventID(), Type: "io.vitrine.image.deleted", Source: storage.EventSource,
			Subject: "users/" + user + "/images/x", Time: time.Now(), Data: []byte(`{}`)}
		if err := db.FanOut(ctx(t), ev, []string{"cdn:test"}); err != nil {
			t.Fatal(err)
		}
	}
	goneEvents := func() (n int) {
		events, err := db.PendingEvents(ctx(t), 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range events {
			if strings.HasPrefix(ev.Subject, "users/gone/") {
				n++
			}
		}
		return n
	}
	if goneEvents() == 0 {
		t.Fatal("no event of gone's uploads in the outbox")
	}

	e, created, err := db.RequestErasure(asker, "gone")
	if err != nil || !created || e.State != storage.ErasurePending || e.Actor != "admin" || e.User != "gone" {
		t.Fatalf("RequestErasure = %+v, %v, %v; want a new pending erasure by admin", e, created, err)
	}
	again, created, err := db.RequestErasure(ctx(t), "gone")
	if err != nil || created || again.ID != e.ID {
		t.Fatalf("second RequestErasure = %+v, %v, %v; want erasure %d again", again, created, err, e.ID)
	}
	if busy, err := db.Erasing(ctx(t), "gone"); err != nil || !busy {
		t.Fatalf("Erasing(gone) = %v, %v", busy, err)
	}
	late := image("gone", "late", base)
	_, err = db.InsertImage(ctx(t), late)
	wantErr(t, "InsertImage while erasing", err, storage.ErrErasing)
	if busy, err := db.Erasing(ctx(t), "kept"); err != nil || busy {
		t.Fatalf("Erasing(kept) = %v, %v", busy, err)
	}

	s, ok, err := db.EraseStep(ctx(t), blobs, erasurePass)
	if err != nil || !ok || s.Images != 2 || s.Done || s.User != "gone" {
		t.Fatalf("first step = %+v, %v, %v; want 2 images of gone", s, ok, err)
	}
	mid, err := db.LatestErasure(ctx(t), "gone", false)
	if err != nil || mid.State != storage.ErasureRunning || mid.Counts["images"] != 2 || mid.Counts["metadata"] != 2 ||
		mid.Counts["variants"] != 2 || mid.Counts["variations"] != 3 || mid.Started.IsZero() {
		t.Fatalf("after one step: %+v, %v", mid, err)
	}
	steps := append([]storage.ErasureStep{s}, eraseAll(t, db, blobs, erasurePass, 50)...)
	var images int
	for _, s := range steps {
		images += s.Images
	}
	if images != 5 || steps[len(steps)-1].Images != 0 {
		t.Fatalf("steps %+v erased %d images; want 5", steps, images)
	}

	done, err := db.LatestErasure(ctx(t), "gone", true)
	if err != nil || done.ID != e.ID || done.State != storage.ErasureDone || done.Finished.Before(done.Started) {
		t.Fatalf("LatestErasure = %+v, %v; want erasure %d done", done, err, e.ID)
	}
	want := map[string]int64{"images": 5, "metadata": 5, "properties": 5, "shortUrls": 5, "variants": 5,
		"variations": 3, "variationJobs": 0, "imageCounts": 1, "usageCounters": 2, "webhooks": 2, "strayBlobs": 0}
	for k, n := range want {
		if done.Counts[k] != n {
			t.Errorf("counts[%s] = %d, want %d (%v)", k, done.Counts[k], n, done.Counts)
		}
	}
	if done.Counts["deliveries"] != 1 || done.Counts["events"] == 0 || goneEvents() != 0 {
		t.Errorf("counts %v, %d events of gone left; want 1 delivery and the events erased", done.Counts, goneEvents())
	}
	if b, err := db.SinkBacklogs(ctx(t)); err != nil || b["cdn:test"].Pending != 1 {
		t.Errorf("backlog %+v (%v): want kept's delivery pending", b, err)
	}
	var receipt bytes.Buffer
	if err := db.WriteReceipt(ctx(t), &receipt, "gone"); err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(receipt.Bytes()); hex.EncodeToString(sum[:]) != done.ReceiptSHA256 {
		t.Fatalf("receipt hashes to %x, erasure says %s", sum, done.ReceiptSHA256)
	}
	var r struct {
		Erasure     int64            `json:"erasure"`
		User        string           `json:"user"`
		RequestedBy string           `json:"requestedBy"`
		Finished    string           `json:"finished"`
		Counts      map[string]int64 `json:"counts"`
		Images      []struct {
			ID       string `json:"imageIdentifier"`
			Checksum string `json:"checksum"`
			Size     int64  `json:"size"`
		} `json:"images"`
	}
	if err := json.Unmarshal(receipt.Bytes(), &r); err != nil {
		t.Fatalf("receipt %s: %v", receipt.String(), err)
	}
	if r.Erasure != e.ID || r.User != "gone" || r.RequestedBy != "admin" || r.Finished == "" || r.Counts["images"] != 5 || len(r.Images) != 5 {
		t.Fatalf("receipt %s", receipt.String())
	}
	for i, img := range f.gone {
		if got := r.Images[i]; got.ID != img.Identifier || got.Checksum != img.Checksum || got.Size != img.Size {
			t.Errorf("receipt image %d = %+v, want %s %s %d", i, got, img.Identifier, img.Checksum, img.Size)
		}
	}

	wantNothingLeft(t, db, blobs, f)
	for _, k := range f.keptBlobs {
		wantBlob(t, blobs, k, true)
	}
	for k, data := range f.data {
		if got, err := blobs.Get(ctx(t), k); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("kept blob %s = %q, %v", k, got, err)
		}
	}
	for _, img := range f.kept {
		if md, err := db.Metadata(ctx(t), "kept", img.Identifier); err != nil || md["owner"] != "kept" {
			t.Fatalf("kept metadata = %v, %v", md, err)
		}
	}
	hooks, err := db.Webhooks(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, w := range hooks {
		users = append(users, w.ID+":"+fmt.Sprint(w.Users))
	}
	if fmt.Sprint(users) != "[both:[kept] every:[*]]" {
		t.Fatalf("webhooks after the erasure: %v", users)
	}
	usage, err := db.UsageSince(ctx(t), storage.MetricUploads, "2000-01-01")
	if err != nil || len(usage) != 1 || usage[0].Label != "kept" {
		t.Fatalf("uploads usage after the erasure = %+v, %v", usage, err)
	}

	entries, _, err := db.AuditLog(ctx(t), storage.AuditQuery{Action: "user.erase"})
	if err != nil || len(entries) != 1 {
		t.Fatalf("user.erase entries = %+v, %v", entries, err)
	}
	if a := entries[0]; a.Actor != "admin" || a.Addr != "192.0.2.7" || a.Target != "gone" ||
		a.Detail["receiptSha256"] != done.ReceiptSHA256 || fmt.Sprint(a.Detail["erasure"]) != fmt.Sprint(e.ID) {
		t.Fatalf("user.erase entry = %+v", a)
	}
	if entries, _, err := db.AuditLog(ctx(t), storage.AuditQuery{Action: "image.delete"}); err != nil || len(entries) != 0 {
		t.Fatalf("image.delete entries = %d, %v; want none (the receipt lists the images)", len(entries), err)
	}
	events, err := db.PendingEvents(ctx(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	var erased []storage.Event
	for _, ev := range events {
		if ev.Type == "io.vitrine.user.erased" {
			erased = append(erased, ev)
		}
	}
	if len(erased) != 1 || erased[0].Subject != "users/gone" {
		t.Fatalf("user.erased events = %+v", erased)
	}
	var data map[string]any
	if err := json.Unmarshal(erased[0].Data, &data); err != nil || data["user"] != "gone" || data["receiptSha256"] != done.ReceiptSHA256 {
		t.Fatalf("user.erased data = %s, %v", erased[0].Data, err)
	}

	// Done: nothing more to erase, and the user may upload again.
	if s, ok, err := db.EraseStep(ctx(t), blobs, erasurePass); err != nil || ok {
		t.Fatalf("step after done = %+v, %v, %v; want none due", s, ok, err)
	}
	last, created, err := db.RequestErasure(ctx(t), "gone")
	if err != nil || created || last.ID != e.ID || last.State != storage.ErasureDone {
		t.Fatalf("RequestErasure with nothing left = %+v, %v, %v; want the finished erasure", last, created, err)
	}
	_, _, err = db.RequestErasure(ctx(t), "never")
	wantErr(t, "RequestErasure(never)", err, storage.ErrNotExist)
	mustInsert(t, db, image("gone", "again", base))
	next, created, err := db.RequestErasure(ctx(t), "gone")
	if err != nil || !created || next.ID == e.ID {
		t.Fatalf("RequestErasure with a new image = %+v, %v, %v; want a new erasure", next, created, err)
	}
}

// wantNothingLeft checks that nothing of f's erased user is left: no row
// in any table, no blob, and a clean fsck that checked one erased user.
func wantNothingLeft(t *testing.T, db *storage.DB, blobs *storage.Blobs, f erasureFixture) {
	t.Helper()
	for _, k := range f.goneBlobs {
		wantBlob(t, blobs, k, false)
	}
	for _, p := range []string{"images/gone/", "variants/gone/", "variations/gone/"} {
		if err := blobs.List(ctx(t), p, func(b storage.BlobInfo) error { return fmt.Errorf("blob %s is left", b.Key) }); err != nil {
			t.Fatal(err)
		}
	}
	if stats, err := db.UserStats(ctx(t)); err != nil || fmt.Sprint(stats) != "[{kept 2 "+fmt.Sprint(f.kept[0].Size+f.kept[1].Size)+"}]" {
		t.Fatalf("UserStats = %+v, %v", stats, err)
	}
	r, err := storage.Check(ctx(t), db, blobs, storage.CheckOptions{Grace: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Clean() || r.ErasedUsers != 1 || r.Queue.Pending != 0 {
		t.Fatalf("fsck after the erasure: %+v", r)
	}
}

// testErasureLeftovers: fsck reports rows and blobs of an erased user
// that something left (a blob no row names, a usage counter written
// late), and its repair deletes the blobs; a user who uploaded again is
// not checked.
func testErasureLeftovers(t *testing.T, db *storage.DB) {
	blobs := memBlobs(t)
	mustInsert(t, db, image("gone", "a", base))
	if _, _, err := db.RequestErasure(ctx(t), "gone"); err != nil {
		t.Fatal(err)
	}
	eraseAll(t, db, blobs, erasurePass, 20)
	stray := storage.ImageKey("gone", "stray", storage.NewBlobToken())
	if err := blobs.Put(ctx(t), stray, []byte("stray")); err != nil {
		t.Fatal(err)
	}
	day := time.Now().UTC().Format(time.DateOnly)
	if err := db.AddUsage(ctx(t), []storage.UsageCount{{Day: day, Metric: storage.MetricUploads, Label: "gone", Value: 1, Last: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	r, err := storage.Check(ctx(t), db, blobs, storage.CheckOptions{Grace: time.Hour, Repair: true})
	if err != nil {
		t.Fatal(err)
	}
	f := r.ErasedUserLeftovers
	if f.Count != 2 || f.Repaired != 1 || !slices.Equal(f.Examples, []string{"gone: 1 usageCounters", stray}) {
		t.Fatalf("leftovers = %+v", f)
	}
	wantBlob(t, blobs, stray, false)
	mustInsert(t, db, image("gone", "b", base))
	if r, err = storage.Check(ctx(t), db, blobs, storage.CheckOptions{Grace: time.Hour}); err != nil || r.ErasedUsers != 0 {
		t.Fatalf("fsck of a user who uploaded again: %+v, %v", r, err)
	}
}

// testErasureFailures: a step that fails (the store cannot be listed)
// records its error and is not due again before its backoff, and the
// erasure goes on from there once it is; a pass with a bound that is not
// positive is refused.
func testErasureFailures(t *testing.T, db *storage.DB) {
	blobs := memBlobs(t)
	mustInsert(t, db, image("gone", "a", base))
	if _, _, err := db.RequestErasure(ctx(t), "gone"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.EraseStep(ctx(t), blobs, storage.ErasurePass{}); !errors.Is(err, storage.ErrInvalid) {
		t.Fatalf("EraseStep without bounds = %v; want ErrInvalid", err)
	}
	boom := errors.New("boom")
	blobs.Intercept(func(_ context.Context, op, _ string) error {
		if op == "list" {
			return boom
		}
		return nil
	})
	pass := erasurePass
	pass.RetryMin, pass.RetryMax = 50*time.Millisecond, 50*time.Millisecond
	var failed bool
	for range 5 {
		_, _, err := db.EraseStep(ctx(t), blobs, pass)
		if failed = errors.Is(err, boom); failed || err != nil {
			break
		}
	}
	if !failed {
		t.Fatal("no step failed on a store that cannot be listed")
	}
	e, err := db.LatestErasure(ctx(t), "gone", false)
	if err != nil || e.Failures != 1 || e.LastError == "" || e.Counts["images"] != 1 {
		t.Fatalf("after a failed step: %+v, %v", e, err)
	}
	if s, ok, err := db.EraseStep(ctx(t), blobs, pass); ok || err != nil {
		t.Fatalf("step within the backoff = %+v, %v, %v; want none due", s, ok, err)
	}
	blobs.Intercept(nil)
	time.Sleep(60 * time.Millisecond) // past the backoff
	eraseAll(t, db, blobs, pass, 20)
	if e, err = db.LatestErasure(ctx(t), "gone", true); err != nil || e.Failures != 0 || e.LastError != "" {
		t.Fatalf("done after a failure: %+v, %v", e, err)
	}
}

// testErasureConcurrent: four workers stepping the same erasures at once
// (two users) erase each image once: the receipts list every image once
// and the counts add up.
func testErasureConcurrent(t *testing.T, db *storage.DB) {
	blobs := memBlobs(t)
	for _, u := range []string{"a", "b"} {
		for i := range 12 {
			mustInsert(t, db, image(u, fmt.Sprintf("i%02d", i), base))
		}
		if _, _, err := db.RequestErasure(ctx(t), u); err != nil {
			t.Fatal(err)
		}
	}
	pass := erasurePass
	pass.Batch = 1
	coll, err := storage.NewCollector(db, blobs, storage.CollectorConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			for range 200 {
				_, _, err := db.EraseStep(ctx(t), blobs, pass)
				if err == nil {
					_, err = coll.Drain(ctx(t))
				}
				if err != nil {
					errs <- err
					return
				}
				a, errA := db.Erasing(ctx(t), "a")
				b, errB := db.Erasing(ctx(t), "b")
				if err := errors.Join(errA, errB); err != nil || (!a && !b) {
					errs <- err
					return
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range []string{"a", "b"} {
		e, err := db.LatestErasure(ctx(t), u, true)
		if err != nil || e.Counts["images"] != 12 {
			t.Fatalf("erasure of %s = %+v, %v; want 12 images, done", u, e, err)
		}
		var receipt bytes.Buffer
		if err := db.WriteReceipt(ctx(t), &receipt, u); err != nil {
			t.Fatal(err)
		}
		var r struct {
			Images []struct {
				ID string `json:"imageIdentifier"`
			} `json:"images"`
		}
		if err := json.Unmarshal(receipt.Bytes(), &r); err != nil || len(r.Images) != 12 {
			t.Fatalf("receipt of %s = %s, %v", u, receipt.String(), err)
		}
	}
}

// testErasureRacesUploads: images committed while the erasure is asked
// for either commit first, and are erased (the receipt lists them), or
// are refused; none survives the erasure.
func testErasureRacesUploads(t *testing.T, db *storage.DB) {
	blobs := memBlobs(t)
	mustInsert(t, db, image("gone", "first", base))
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		committed = map[string]bool{"first": true}
		start     = make(chan struct{})
	)
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Go(func() {
			<-start
			for i := 0; ; i++ {
				id := fmt.Sprintf("w%d-%03d", w, i)
				_, err := db.InsertImage(ctx(t), image("gone", id, base))
				if errors.Is(err, storage.ErrErasing) {
					return
				}
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				committed[id] = true
				mu.Unlock()
			}
		})
	}
	close(start)
	time.Sleep(5 * time.Millisecond) // let some uploads commit first
	if _, created, err := db.RequestErasure(ctx(t), "gone"); err != nil || !created {
		t.Fatalf("RequestErasure = %v, %v", created, err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	pass := erasurePass
	pass.Batch = 50
	eraseAll(t, db, blobs, pass, 100)
	var receipt bytes.Buffer
	if err := db.WriteReceipt(ctx(t), &receipt, "gone"); err != nil {
		t.Fatal(err)
	}
	var r struct {
		Images []struct {
			ID string `json:"imageIdentifier"`
		} `json:"images"`
	}
	if err := json.Unmarshal(receipt.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, img := range r.Images {
		listed[img.ID] = true
	}
	if len(listed) != len(committed) {
		t.Errorf("receipt lists %d images, %d committed", len(listed), len(committed))
	}
	for id := range committed {
		if !listed[id] {
			t.Errorf("committed image %s is not in the receipt", id)
		}
	}
	if stats, err := db.UserStats(ctx(t)); err != nil || len(stats) != 0 {
		t.Fatalf("UserStats after the erasure = %+v, %v", stats, err)
	}
}
