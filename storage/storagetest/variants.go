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

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func memBlobs(t *testing.T) *storage.Blobs {
	t.Helper()
	b, err := storage.OpenBlobs(ctx(t), "mem://")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func newCache(t *testing.T, db *storage.DB, blobs *storage.Blobs, cfg storage.CacheConfig) *storage.VariantCache {
	t.Helper()
	c, err := storage.NewVariantCache(db, blobs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// storedImage inserts an image record (no blob: the variant cache reads
// none) with a fresh blob token.
func storedImage(t *testing.T, db *storage.DB, user, id string) storage.Image {
	t.Helper()
	img := storage.Image{User: user, Identifier: id, Size: 1, Extension: "png", Mime: "image/png",
		Width: 1, Height: 1, Checksum: id, BlobToken: storage.NewBlobToken()}
	if _, err := db.InsertImage(ctx(t), &img); err != nil {
		t.Fatal(err)
	}
	return img
}

func wantTotal(t *testing.T, c *storage.VariantCache, max int64) int64 {
	t.Helper()
	total, err := c.TotalBytes(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if total > max {
		t.Fatalf("cached variants hold %d bytes, cap %d", total, max)
	}
	return total
}

func testVariantCache(t *testing.T, db *storage.DB) {
	blobs := memBlobs(t)
	c := newCache(t, db, blobs, storage.CacheConfig{})
	img, other := storedImage(t, db, "u", "img"), storedImage(t, db, "u", "other")
	data := []byte("variant bytes")
	if _, err := c.Get(ctx(t), img, "h1"); !errors.Is(err, storage.ErrNotExist) {
		t.Fatalf("Get before Put = %v; want ErrNotExist", err)
	}
	for _, h := range []string{"h1", "h2"} {
		if _, err := c.Put(ctx(t), img, storage.VariantName{Hash: h}, data); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Put(ctx(t), other, storage.VariantName{Hash: "h1"}, data); err != nil {
		t.Fatal(err)
	}
	// A second Put of one variant replaces it and counts it once.
	if _, err := c.Put(ctx(t), img, storage.VariantName{Hash: "h1"}, data); err != nil {
		t.Fatal(err)
	}
	got, err := c.Get(ctx(t), img, "h1")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get = %q, %v", got, err)
	}
	if err := c.Flush(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if total, err := c.TotalBytes(ctx(t)); err != nil || total != 3*int64(len(data)) {
		t.Fatalf("TotalBytes = %d, %v; want %d", total, err, 3*len(data))
	}
	if _, err := c.Put(ctx(t), img, storage.VariantName{Hash: ""}, data); !errors.Is(err, storage.ErrInvalid) {
		t.Fatalf("Put with an empty hash = %v; want ErrInvalid", err)
	}
	// Purge removes one image's variants, rows and (once a collector
	// drains the queue) blobs.
	if err := c.Purge(ctx(t), "u", "img"); err != nil {
		t.Fatal(err)
	}
	drain(t, db, blobs)
	for _, h := range []string{"h1", "h2"} {
		if _, err := c.Get(ctx(t), img, h); !errors.Is(err, storage.ErrNotExist) {
			t.Fatalf("Get %s after Purge = %v; want ErrNotExist", h, err)
		}
	}
	if _, err := c.Get(ctx(t), other, "h1"); err != nil {
		t.Fatalf("Purge removed another image's variant: %v", err)
	}
	if total, err := c.TotalBytes(ctx(t)); err != nil || total != int64(len(data)) {
		t.Fatalf("TotalBytes after Purge = %d, %v; want %d", total, err, len(data))
	}
}

// testVariantCacheLRU writes twice the cap in variants while one variant
// keeps being read: the total never passes the cap, the variant in use
// survives, the oldest unused go, and every counted row has its blob.
func testVariantCacheLRU(t *testing.T, db *storage.DB) {
	const size, limit = 100, 1000
	blobs := memBlobs(t)
	clk := &clock{t: base}
	c := newCache(t, db, blobs, storage.CacheConfig{MaxBytes: limit, Now: clk.now})
	img := storedImage(t, db, "u", "img")
	data := bytes.Repeat([]byte{'v'}, size)
	for i := range 2 * limit / size {
		clk.add(time.Second)
		if _, err := c.Put(ctx(t), img, storage.VariantName{Hash: fmt.Sprintf("h%02d", i)}, data); err != nil {
			t.Fatal(err)
		}
		wantTotal(t, c, limit)
		clk.add(time.Second)
		if _, err := c.Get(ctx(t), img, "h00"); err != nil {
			t.Fatalf("after Put %d: the variant in use was evicted: %v", i, err)
		}
		if err := c.Flush(ctx(t)); err != nil {
			t.Fatal(err)
		}
	}
	total := wantTotal(t, c, limit)
	present := 0
	for i := range 2 * limit / size {
		_, err := c.Get(ctx(t), img, fmt.Sprintf("h%02d", i))
		switch {
		case err == nil:
			present++
		case !errors.Is(err, storage.ErrNotExist):
			t.Fatal(err)
		case i >= 2*limit/size-5:
			t.Errorf("recent variant h%02d was evicted before older ones", i)
		}
	}
	if int64(present*size) != total {
		t.Fatalf("%d variant blobs present holding %d bytes, the table counts %d", present, present*size, total)
	}
	if s := c.Stats(); s.Evictions == 0 || s.EvictedBytes != s.Evictions*size {
		t.Fatalf("Stats = %+v; want evictions counted", s)
	}
}

// testVariantCacheShared runs two caches (two instances) on one database
// and bucket: together they write twice the cap; after each flushes, the
// cap holds.
func testVariantCacheShared(t *testing.T, db *storage.DB) {
	const size, limit = 100, 1000
	blobs := memBlobs(t)
	a := newCache(t, db, blobs, storage.CacheConfig{MaxBytes: limit})
	b := newCache(t, db, blobs, storage.CacheConfig{MaxBytes: limit})
	imgs := []storage.Image{storedImage(t, db, "u", "img0"), storedImage(t, db, "u", "img1")}
	data := bytes.Repeat([]byte{'v'}, size)
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for n, c := range []*storage.VariantCache{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range limit / size {
				if _, err := c.Put(ctx(t), imgs[n], storage.VariantName{Hash: fmt.Sprint("h", i)}, data); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, c := range []*storage.VariantCache{a, b} {
		if err := c.Flush(ctx(t)); err != nil {
			t.Fatal(err)
		}
	}
	wantTotal(t, a, limit)
}

func testVariantCacheMaxAge(t *testing.T, db *storage.DB) {
	blobs := memBlobs(t)
	clk := &clock{t: base}
	c := newCache(t, db, blobs, storage.CacheConfig{MaxAge: time.Hour, Now: clk.now})
	img := storedImage(t, db, "u", "img")
	if _, err := c.Put(ctx(t), img, storage.VariantName{Hash: "old"}, []byte("a")); err != nil {
		t.Fatal(err)
	}
	clk.add(50 * time.Minute)
	if _, err := c.Put(ctx(t), img, storage.VariantName{Hash: "new"}, []byte("b")); err != nil {
		t.Fatal(err)
	}
	clk.add(20 * time.Minute)
	// Use does not extend a variant's age.
	if _, err := c.Get(ctx(t), img, "old"); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx(t), img, "old"); !errors.Is(err, storage.ErrNotExist) {
		t.Fatalf("expired variant: Get = %v; want ErrNotExist", err)
	}
	if _, err := c.Get(ctx(t), img, "new"); err != nil {
		t.Fatalf("young variant: %v", err)
	}
}

// testVariantList lists an image's cached variants with their sizes and
// times and the chain and format that made them, most recently used first,
// and nothing of other images.
func testVariantList(t *testing.T, db *storage.DB) {
	blobs := memBlobs(t)
	clk := &clock{t: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}
	c := newCache(t, db, blobs, storage.CacheConfig{Now: clk.now})
	img, other := storedImage(t, db, "u", "img"), storedImage(t, db, "u", "other")
	if got, err := db.Variants(ctx(t), "u", "img"); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("Variants before any = %#v, %v; want empty", got, err)
	}
	start := clk.now()
	for _, v := range []struct {
		img  storage.Image
		hash string
		data string
	}{{img, "h1", "one"}, {img, "h2", "second"}, {other, "h3", "x"}} {
		name := storage.VariantName{Hash: v.hash, Chain: "thumbnail:width=" + v.hash + "|desaturate", Format: "webp"}
		if _, err := c.Put(ctx(t), v.img, name, []byte(v.data)); err != nil {
			t.Fatal(err)
		}
		clk.add(time.Minute)
	}
	if _, err := c.Get(ctx(t), img, "h1"); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(ctx(t)); err != nil {
		t.Fatal(err)
	}
	got, err := db.Variants(ctx(t), "u", "img")
	if err != nil || len(got) != 2 {
		t.Fatalf("Variants = %+v, %v; want 2", got, err)
	}
	if got[0].Hash != "h1" || got[0].Chain != "thumbnail:width=h1|desaturate" || got[0].Format != "webp" || got[0].Size != 3 || !got[0].Created.Equal(start) || !got[0].LastUsed.Equal(start.Add(3*time.Minute)) {
		t.Fatalf("most recently used = %+v", got[0])
	}
	if got[1].Hash != "h2" || got[1].Size != 6 || !got[1].LastUsed.Equal(start.Add(time.Minute)) {
		t.Fatalf("second = %+v", got[1])
	}
	if err := c.Purge(ctx(t), "u", "img"); err != nil {
		t.Fatal(err)
	}
	if got, err := db.Variants(ctx(t), "u", "img"); err != nil || len(got) != 0 {
		t.Fatalf("Variants after Purge = %+v, %v", got, err)
	}
}

// testVariantCacheFlushFailure: a flush that fails (its context is
// cancelled) keeps the last-use times it took; the next flush writes them,
// and a variant used again meanwhile gets its later time.
func testVariantCacheFlushFailure(t *testing.T, db *storage.DB) {
	blobs := memBlobs(t)
	clk := &clock{t: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}
	c := newCache(t, db, blobs, storage.CacheConfig{Now: clk.now})
	img := storedImage(t, db, "u", "img")
	start := clk.now()
	for _, h := range []string{"h1", "h2"} {
		if _, err := c.Put(ctx(t), img, storage.VariantName{Hash: h}, []byte(h)); err != nil {
			t.Fatal(err)
		}
	}
	get := func(h string) {
		t.Helper()
		if _, err := c.Get(ctx(t), img, h); err != nil {
			t.Fatal(err)
		}
	}
	clk.add(time.Minute)
	get("h1")
	get("h2")
	cancelled, cancel := context.WithCancel(ctx(t))
	cancel()
	if err := c.Flush(cancelled); err == nil {
		t.Fatal("Flush with a cancelled context succeeded")
	}
	clk.add(time.Minute)
	get("h1")
	if err := c.Flush(ctx(t)); err != nil {
		t.Fatal(err)
	}
	got, err := db.Variants(ctx(t), "u", "img")
	if err != nil || len(got) != 2 {
		t.Fatalf("Variants = %+v, %v; want 2", got, err)
	}
	for i, want := range []struct {
		hash string
		last time.Time
	}{{"h1", start.Add(2 * time.Minute)}, {"h2", start.Add(time.Minute)}} {
		if got[i].Hash != want.hash || !got[i].LastUsed.Equal(want.last) {
			t.Fatalf("variant %d = %s last used %v; want %s at %v", i, got[i].Hash, got[i].LastUsed, want.hash, want.last)
		}
	}
}
