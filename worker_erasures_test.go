package main

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// TestErasureConfig: the checks of the erasure section, and the pass it
// makes: its defaults, and a final step that waits twice the usage
// counters' flush.
func TestErasureConfig(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  ErasureConfig
		ok   bool
	}{
		{"zero", ErasureConfig{}, true},
		{"set", ErasureConfig{Batch: 10, Interval: time.Second, Lease: time.Minute}, true},
		{"negative batch", ErasureConfig{Batch: -1}, false},
		{"negative lease", ErasureConfig{Lease: -time.Second}, false},
		{"negative interval", ErasureConfig{Interval: -time.Second}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.cfg.Validate(); (err == nil) != c.ok {
				t.Fatalf("Validate = %v; want ok %v", err, c.ok)
			}
		})
	}
	p := erasurePass(ErasureConfig{}, 0)
	if p.Batch != 100 || p.Lease != 30*time.Second || p.Settle != 10*time.Second || p.Validate() != nil {
		t.Fatalf("default pass %+v", p)
	}
	if p := erasurePass(ErasureConfig{Batch: 7, Lease: time.Second}, 3*time.Second); p.Batch != 7 || p.Lease != time.Second || p.Settle != 6*time.Second {
		t.Fatalf("pass %+v", p)
	}
}

// TestErasureWorkerPass: the worker's pass erases a step at a time,
// passes again at once after a step that worked (1) and waits for its
// tick while the user's blobs are still queued (0), wakes the blob queue
// after every step that queued deletions, and finishes the erasure once
// they are gone.
func TestErasureWorkerPass(t *testing.T) {
	ctx := context.Background()
	db, err := storage.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "vitrine.db"), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	blobs, err := storage.OpenBlobs(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { blobs.Close() })
	for _, id := range []string{"a", "b", "c"} {
		img := &storage.Image{User: "gone", Identifier: id, Size: 1, Extension: "png", Mime: "image/png", BlobToken: storage.NewBlobToken()}
		if err := blobs.Put(ctx, img.Key(), []byte(id)); err != nil {
			t.Fatal(err)
		}
		if _, err := db.InsertImage(ctx, img); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := db.RequestErasure(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	wakes := 0
	p := erasurePass(ErasureConfig{Batch: 2}, time.Millisecond)
	w := erasureWorker(db, blobs, p, time.Hour, func() { wakes++ }, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if !w.paced {
		t.Fatal("the erasure worker is not paced")
	}
	for i, want := range []int{1, 1, 1} { // two batches, then the rows left of gone images
		if n, err := w.pass(ctx); err != nil || n != want {
			t.Fatalf("pass %d = %d, %v; want %d", i, n, err, want)
		}
	}
	if wakes != 3 {
		t.Fatalf("the blob queue was woken %d times, want 3", wakes)
	}
	if n, err := w.pass(ctx); err != nil || n != 0 || wakes != 3 {
		t.Fatalf("pass with the blobs still queued = %d, %v (%d wakes); want 0", n, err, wakes)
	}
	coll, err := storage.NewCollector(db, blobs, storage.CollectorConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := coll.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(erasureWait) // the waiting erasure is due again
	if n, err := w.pass(ctx); err != nil || n != 1 {
		t.Fatalf("final pass = %d, %v; want 1", n, err)
	}
	if e, err := db.LatestErasure(ctx, "gone", true); err != nil || e.Counts["images"] != 3 {
		t.Fatalf("erasure after the final pass: %+v, %v", e, err)
	}
}
