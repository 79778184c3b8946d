package main

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/storage"
)

// testWorker drives a worker whose pass reports each call on calls and
// returns the next of results (then 0, nil); rests records what the worker
// asked to rest.
type testWorker struct {
	w      *worker
	calls  chan int
	cancel context.CancelFunc
	done   chan struct{}
	log    *bytes.Buffer

	mu    sync.Mutex
	rests []time.Duration
}

type passResult struct {
	n    int
	err  error
	took time.Duration // the pass sleeps this long
}

func startTestWorker(t *testing.T, interval time.Duration, paced bool, results ...passResult) *testWorker {
	t.Helper()
	tw := &testWorker{calls: make(chan int), done: make(chan struct{}), log: &bytes.Buffer{}}
	var mu sync.Mutex
	call := 0
	pass := func(ctx context.Context) (int, error) {
		mu.Lock()
		call++
		i := call
		mu.Unlock()
		select {
		case tw.calls <- i:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		if i > len(results) {
			return 0, nil
		}
		r := results[i-1]
		time.Sleep(r.took)
		return r.n, r.err
	}
	tw.w = newWorker("test work", interval, time.Hour, pass, slog.New(slog.NewTextHandler(tw.log, nil)))
	tw.w.paced = paced
	tw.w.rest = func(ctx context.Context, d time.Duration) {
		tw.mu.Lock()
		tw.rests = append(tw.rests, d)
		tw.mu.Unlock()
	}
	ctx, cancel := context.WithCancel(t.Context())
	tw.cancel = cancel
	go func() {
		defer close(tw.done)
		tw.w.run(ctx)
	}()
	t.Cleanup(tw.stop)
	return tw
}

// next waits for the next pass and checks it is the want-th.
func (tw *testWorker) next(t *testing.T, want int) {
	t.Helper()
	if got := <-tw.calls; got != want {
		t.Fatalf("pass %d, want pass %d", got, want)
	}
}

// stop cancels the worker's context and waits for run to return.
func (tw *testWorker) stop() {
	tw.cancel()
	<-tw.done
}

func (tw *testWorker) restsAsked() []time.Duration {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	return append([]time.Duration(nil), tw.rests...)
}

// TestWorker: a worker passes at once, on every tick and when woken, logs
// a pass's error under its name, and returns when its context ends; a
// paced worker rests after a pass that worked on something, as long as
// the pass took, and passes again without a tick or a wake; an unpaced one
// never rests.
func TestWorker(t *testing.T) {
	t.Run("passes at start and stops when its context ends", func(t *testing.T) {
		tw := startTestWorker(t, time.Hour, false)
		tw.next(t, 1)
		tw.stop() // returns: run has ended
		select {
		case n := <-tw.calls:
			t.Fatalf("pass %d after the context ended", n)
		default:
		}
	})
	t.Run("passes when woken", func(t *testing.T) {
		tw := startTestWorker(t, time.Hour, false, passResult{n: 1})
		tw.next(t, 1)
		tw.w.Wake()
		tw.next(t, 2)
		tw.w.Wake()
		tw.next(t, 3)
		if r := tw.restsAsked(); len(r) != 0 {
			t.Fatalf("an unpaced worker rested %v", r)
		}
	})
	t.Run("passes on every tick", func(t *testing.T) {
		tw := startTestWorker(t, time.Millisecond, false)
		for i := 1; i <= 3; i++ {
			tw.next(t, i)
		}
	})
	t.Run("logs a pass's error", func(t *testing.T) {
		tw := startTestWorker(t, time.Hour, false, passResult{err: errors.New("disk on fire")})
		tw.next(t, 1)
		tw.w.Wake()
		tw.next(t, 2) // the first pass's error is logged before the worker waits
		tw.stop()
		if got := tw.log.String(); !strings.Contains(got, "test work") || !strings.Contains(got, "disk on fire") {
			t.Fatalf("log %q; want the worker's name and the error", got)
		}
	})
	t.Run("paced: rests as long as a pass took, then passes again", func(t *testing.T) {
		took := 3 * time.Millisecond
		tw := startTestWorker(t, time.Hour, true, passResult{n: 1, took: took}, passResult{n: 1, took: took},
			passResult{n: 0, took: took})
		for i := 1; i <= 3; i++ {
			tw.next(t, i) // no tick (an hour) and no wake: the rests lead to the next pass
		}
		tw.w.Wake()
		tw.next(t, 4) // after a pass that found nothing, the worker waited
		tw.stop()
		r := tw.restsAsked()
		if len(r) != 2 {
			t.Fatalf("rests %v; want one after each of the 2 passes that worked", r)
		}
		for _, d := range r {
			if d < restAfter*took {
				t.Fatalf("rest %v after a pass of at least %v; want at least %v", d, took, restAfter*took)
			}
		}
	})
}

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

// TestUploadTokenWorker: a pass deletes the tokens that expired more than
// a day ago and keeps the others, so that a token expired this morning is
// still told from an unknown one.
func TestUploadTokenWorker(t *testing.T) {
	ctx := context.Background()
	db, err := storage.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "vitrine.db"), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Now()
	for i, expired := range []time.Duration{49 * time.Hour, 23 * time.Hour, -time.Hour} {
		tok := storage.UploadToken{ID: string(rune('a' + i)), Hash: strings.Repeat(string(rune('a'+i)), 64), User: "u",
			PublicKey: "k", Uses: 1, MaxBytes: 1, MaxPixels: 1, Formats: []string{"png"},
			Created: now.Add(-expired - time.Hour), Expires: now.Add(-expired)}
		if err := db.CreateUploadToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := uploadTokenWorker(db, slog.Default()).pass(ctx); err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{false, true, true} {
		_, err := db.UploadToken(ctx, strings.Repeat(string(rune('a'+i)), 64))
		if kept := err == nil; kept != want {
			t.Errorf("token %d kept %v (%v), want %v", i, kept, err, want)
		}
	}
}

// TestVariationBuilderPass: an upload the policy wants gets a job, and a
// pass of the builder's worker takes it and stores the copies at 1/2, 1/4
// and 1/8 (one job a pass: a second pass finds none); an upload it does
// not want gets no job; the running worker, woken, builds a later upload's.
func TestVariationBuilderPass(t *testing.T) {
	dir := t.TempDir()
	cfg, err := loadConfig("", dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := openStores(t.Context(), cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	eng, err := engine.New(cfg.Engine)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close(context.Background()) })
	b, err := api.NewStoredVariations(st.db, st.blobs, eng, cfg.Variations)
	if err != nil || b == nil {
		t.Fatalf("NewStoredVariations = %v, %v", b, err)
	}
	big := commitJPEG(t, st, b, "big", 1600, 1200)
	commitJPEG(t, st, b, "small", 400, 300)
	for _, want := range []int{1, 0} {
		if n, err := b.Pass(t.Context()); err != nil || n != want {
			t.Fatalf("pass = %d, %v; want %d", n, err, want)
		}
	}
	vs, err := st.db.Variations(t.Context(), big)
	if err != nil || len(vs) != 3 || vs[0].Width != 200 || vs[2].Width != 800 {
		t.Fatalf("variations %+v, %v; want 200, 400 and 800 px", vs, err)
	}
	t.Run("worker", func(t *testing.T) {
		var ws workers
		ws.start(t.Context(), variationsWorker(b, slog.New(slog.NewTextHandler(io.Discard, nil))).run)
		defer ws.stop()
		later := commitJPEG(t, st, b, "later", 1600, 1200)
		b.Wake()
		deadline := time.Now().Add(10 * time.Second)
		for {
			vs, err := st.db.Variations(t.Context(), later)
			if err != nil {
				t.Fatal(err)
			}
			if len(vs) == 3 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("variations of an upload the running worker was woken for: %+v", vs)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// commitJPEG stores a w x h JPEG as user u's image id, with a variation
// job when b wants one, as the API does.
func commitJPEG(t *testing.T, st *stores, b *api.StoredVariations, id string, w, h int) storage.Image {
	t.Helper()
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			m.Set(x, y, color.RGBA{uint8(x), uint8(y), uint8(x ^ y), 255})
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, m, &jpeg.Options{Quality: 85}); err != nil {
		t.Fatal(err)
	}
	img := storage.Image{User: "u", Identifier: id, Size: int64(buf.Len()), Extension: "jpg", Mime: "image/jpeg",
		Width: w, Height: h, Checksum: id, BlobToken: storage.NewBlobToken()}
	res, err := st.db.Reserve(t.Context(), img.Key())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.blobs.Put(t.Context(), res.Key, buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	if _, err := st.db.CommitImage(t.Context(), &img, res, b.Wants(w, h, img.Size)); err != nil {
		t.Fatal(err)
	}
	return img
}
