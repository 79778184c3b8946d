package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// drain runs one collector pass over db's queue and fails on an error.
func drain(t *testing.T, db *storage.DB, blobs *storage.Blobs) {
	t.Helper()
	c, err := storage.NewCollector(db, blobs, storage.CollectorConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Drain(ctx(t)); err != nil {
		t.Fatal(err)
	}
}

func wantBlob(t *testing.T, blobs *storage.Blobs, key string, want bool) {
	t.Helper()
	ok, err := blobs.Exists(ctx(t), key)
	if err != nil {
		t.Fatal(err)
	}
	if ok != want {
		t.Fatalf("blob %s exists = %v, want %v", key, ok, want)
	}
}

func wantQueue(t *testing.T, db *storage.DB, pending int64) {
	t.Helper()
	s, err := db.QueueStats(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if s.Pending != pending {
		t.Fatalf("blob_queue holds %+v; want %d pending", s, pending)
	}
}

// upload stores img the way the API does: reserve its key, write the blob,
// commit the row.
func upload(t *testing.T, db *storage.DB, blobs *storage.Blobs, img *storage.Image, data []byte) (storage.Reservation, bool) {
	t.Helper()
	return commitUpload(t, db, blobs, img, data, false)
}

// commitUpload is upload, with a variation job when variations.
func commitUpload(t *testing.T, db *storage.DB, blobs *storage.Blobs, img *storage.Image, data []byte, variations bool) (storage.Reservation, bool) {
	t.Helper()
	img.BlobToken = storage.NewBlobToken()
	res, err := db.Reserve(ctx(t), img.Key())
	if err != nil {
		t.Fatal(err)
	}
	if err := blobs.Put(ctx(t), res.Key, data); err != nil {
		t.Fatal(err)
	}
	created, err := db.CommitImage(ctx(t), img, res, variations)
	if err != nil {
		t.Fatal(err)
	}
	return res, created
}

// testQueueUpload: a committed upload claims its reservation (nothing
// queued, the blob stays through a drain); a second upload of the same
// image does not commit, and its blob is collected; the row keeps naming
// the first blob.
func testQueueUpload(t *testing.T, db *storage.DB) {
	blobs := memBlobs(t)
	first := image("u", "a", base)
	first.Metadata = map[string]any{"k": "v"}
	res1, created := upload(t, db, blobs, first, []byte("one"))
	if !created {
		t.Fatal("first upload not created")
	}
	wantQueue(t, db, 0)
	if md, err := db.Metadata(ctx(t), "u", "a"); err != nil || md["k"] != "v" {
		t.Fatalf("metadata committed with the image = %v, %v", md, err)
	}
	second := image("u", "a", base)
	res2, created := upload(t, db, blobs, second, []byte("two"))
	if created || second.BlobToken != first.BlobToken {
		t.Fatalf("second upload: created %v, token %q; want the first's %q", created, second.BlobToken, first.BlobToken)
	}
	wantQueue(t, db, 1)
	drain(t, db, blobs)
	wantQueue(t, db, 0)
	wantBlob(t, blobs, res1.Key, true)
	wantBlob(t, blobs, res2.Key, false)
}

// testQueueReservationLost: a reservation a collector took before its
// writer committed fails the commit, and nothing is written.
func testQueueReservationLost(t *testing.T, db *storage.DB) {
	blobs := memBlobs(t)
	img := image("u", "late", base)
	img.BlobToken = storage.NewBlobToken()
	res, err := db.Reserve(ctx(t), img.Key())
	if err != nil {
		t.Fatal(err)
	}
	if err := blobs.Put(ctx(t), res.Key, []byte("x")); err != nil {
		t.Fatal(err)
	}
	// As if the lease ran out: the collector takes it and deletes the blob.
	if err := db.Release(ctx(t), res); err != nil {
		t.Fatal(err)
	}
	drain(t, db, blobs)
	wantBlob(t, blobs, res.Key, false)
	// The writer's bytes land after the collector's deletion.
	if err := blobs.Put(ctx(t), res.Key, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CommitImage(ctx(t), img, res, false); !errors.Is(err, storage.ErrReservationLost) {
		t.Fatalf("commit after the reservation was collected = %v; want ErrReservationLost", err)
	}
	// The key is queued again, so the late bytes go too.
	drain(t, db, blobs)
	wantBlob(t, blobs, res.Key, false)
	wantQueue(t, db, 0)
	if _, err := db.Image(ctx(t), "u", "late"); !errors.Is(err, storage.ErrNotExist) {
		t.Fatalf("image row after a lost reservation: %v", err)
	}
}

// testQueueDelete: deleting an image queues its blob and its variants'
// blobs in the same transaction; a drain deletes them all, and a re-upload
// of the same bytes gets a new key that the old deletion cannot touch.
func testQueueDelete(t *testing.T, db *storage.DB) {
	blobs := memBlobs(t)
	c := newCache(t, db, blobs, storage.CacheConfig{})
	img := image("u", "d", base)
	res, _ := upload(t, db, blobs, img, []byte("bytes"))
	for _, h := range []string{"h1", "h2"} {
		if stored, err := c.Put(ctx(t), *img, storage.VariantName{Hash: h}, []byte("variant")); err != nil || !stored {
			t.Fatalf("variant Put = %v, %v", stored, err)
		}
	}
	if err := db.DeleteImage(ctx(t), "u", "d"); err != nil {
		t.Fatal(err)
	}
	wantQueue(t, db, 3)
	again := image("u", "d", base)
	res2, created := upload(t, db, blobs, again, []byte("bytes"))
	if !created || res2.Key == res.Key {
		t.Fatalf("re-upload: created %v, key %s (old %s)", created, res2.Key, res.Key)
	}
	drain(t, db, blobs)
	wantQueue(t, db, 0)
	wantBlob(t, blobs, res.Key, false)
	for _, h := range []string{"h1", "h2"} {
		wantBlob(t, blobs, storage.VariantKey("u", "d", img.BlobToken, h), false)
	}
	wantBlob(t, blobs, res2.Key, true)
	if err := db.DeleteImage(ctx(t), "u", "d"); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteImage(ctx(t), "u", "d"); !errors.Is(err, storage.ErrNotExist) {
		t.Fatalf("second delete = %v; want ErrNotExist", err)
	}
	wantQueue(t, db, 1)
}

// testQueueVariantOfDeletedImage: a variant rendered from an image deleted
// before it is recorded is not stored, and its blob is collected.
func testQueueVariantOfDeletedImage(t *testing.T, db *storage.DB) {
	blobs := memBlobs(t)
	c := newCache(t, db, blobs, storage.CacheConfig{})
	img := image("u", "gone", base)
	upload(t, db, blobs, img, []byte("bytes"))
	if err := db.DeleteImage(ctx(t), "u", "gone"); err != nil {
		t.Fatal(err)
	}
	stored, err := c.Put(ctx(t), *img, storage.VariantName{Hash: "h"}, []byte("variant"))
	if err != nil || stored {
		t.Fatalf("Put for a deleted image = %v, %v; want not stored", stored, err)
	}
	// And not for a re-upload of the same bytes either: that is another blob.
	again := image("u", "gone", base)
	upload(t, db, blobs, again, []byte("bytes"))
	if stored, err := c.Put(ctx(t), *img, storage.VariantName{Hash: "h"}, []byte("variant")); err != nil || stored {
		t.Fatalf("Put for the old upload of a re-uploaded image = %v, %v; want not stored", stored, err)
	}
	drain(t, db, blobs)
	wantQueue(t, db, 0)
	wantBlob(t, blobs, storage.VariantKey("u", "gone", img.BlobToken, "h"), false)
	if total, err := c.TotalBytes(ctx(t)); err != nil || total != 0 {
		t.Fatalf("TotalBytes = %d, %v; want 0", total, err)
	}
}

// testQueueFailures: a blob store that fails a deletion leaves the row
// queued with its error, retried after the backoff until it succeeds.
func testQueueFailures(t *testing.T, db *storage.DB) {
	blobs := memBlobs(t)
	img := image("u", "f", base)
	res, _ := upload(t, db, blobs, img, []byte("bytes"))
	var mu sync.Mutex
	fail := true
	blobs.Intercept(func(_ context.Context, op, _ string) error {
		mu.Lock()
		defer mu.Unlock()
		if op == "delete" && fail {
			return errors.New("injected outage")
		}
		return nil
	})
	if err := db.DeleteImage(ctx(t), "u", "f"); err != nil {
		t.Fatal(err)
	}
	c, err := storage.NewCollector(db, blobs, storage.CollectorConfig{RetryMin: time.Millisecond, RetryMax: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := c.Drain(ctx(t)); n != 0 || err == nil {
		t.Fatalf("Drain during an outage = %d, %v; want 0 and the error", n, err)
	}
	if s, err := db.QueueStats(ctx(t)); err != nil || s.Pending != 1 || s.Failing != 1 {
		t.Fatalf("QueueStats after a failure = %+v, %v", s, err)
	}
	wantBlob(t, blobs, res.Key, true)
	mu.Lock()
	fail = false
	mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err := c.Drain(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the failed deletion was never retried")
		}
		time.Sleep(5 * time.Millisecond)
	}
	wantQueue(t, db, 0)
	wantBlob(t, blobs, res.Key, false)
}

// testQueueConcurrentCollectors: two collectors (two instances) drain one
// queue at once; every row is finished exactly once.
func testQueueConcurrentCollectors(t *testing.T, db *storage.DB) {
	blobs := memBlobs(t)
	const n = 60
	for i := range n {
		img := image("u", fmt.Sprint("c", i), base)
		upload(t, db, blobs, img, bytes.Repeat([]byte{byte(i)}, 10))
		if err := db.DeleteImage(ctx(t), img.User, img.Identifier); err != nil {
			t.Fatal(err)
		}
	}
	wantQueue(t, db, n)
	var wg sync.WaitGroup
	done := make([]int, 2)
	errs := make([]error, 2)
	for i := range 2 {
		c, err := storage.NewCollector(db, blobs, storage.CollectorConfig{})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			done[i], errs[i] = c.Drain(ctx(t))
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if done[0]+done[1] != n {
		t.Fatalf("collectors finished %d + %d rows; want %d in all", done[0], done[1], n)
	}
	wantQueue(t, db, 0)
	if err := blobs.List(ctx(t), "images/", func(b storage.BlobInfo) error {
		return fmt.Errorf("blob %s survived", b.Key)
	}); err != nil {
		t.Fatal(err)
	}
}

// testQueueHeld: while a hold on blob deletions is in force (a backup
// runs), the collector deletes nothing, on any instance; the deletions
// go once it is released, and the hold's own row leaves no trace.
func testQueueHeld(t *testing.T, db *storage.DB) {
	blobs := memBlobs(t)
	img := image("u", "held", base)
	res, _ := upload(t, db, blobs, img, []byte("bytes"))
	release, err := db.HoldBlobDeletions(ctx(t), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteImage(ctx(t), "u", "held"); err != nil {
		t.Fatal(err)
	}
	c, err := storage.NewCollector(db, blobs, storage.CollectorConfig{RetryMin: time.Millisecond, RetryMax: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Drain(ctx(t)); err != nil {
		t.Fatal(err)
	}
	wantBlob(t, blobs, res.Key, true)
	if st := c.Stats(); st.Failed != 0 {
		t.Fatalf("a deletion put off by a hold counted as failed: %+v", st)
	}
	release()
	time.Sleep(5 * time.Millisecond) // the held deletion's retry is due
	if _, err := c.Drain(ctx(t)); err != nil {
		t.Fatal(err)
	}
	wantBlob(t, blobs, res.Key, false)
	wantQueue(t, db, 0)
}
