package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/storage"
)

// testBuilder stands in for the server's variation worker (package main,
// which api may not import): images at least 1024 px wide or high get
// variations at 1/2, 1/4 and 1/8, built with a real engine when the test
// drains their jobs.
type testBuilder struct {
	db    *storage.DB
	blobs *storage.Blobs
	eng   *engine.Engine
}

func (testBuilder) Wake() {}

func (testBuilder) Wants(w, h int, _ int64) bool { return max(w, h) >= 1024 }

// drain builds the variations of every due job and returns how many it
// finished.
func (b testBuilder) drain(ctx context.Context) (int, error) {
	p := storage.JobPass{RetryMin: time.Hour, RetryMax: time.Hour}
	return b.db.DrainVariationJobs(ctx, p, func(ctx context.Context, user, id string) error {
		img, err := b.db.Image(ctx, user, id)
		if err != nil {
			return err
		}
		src, err := b.blobs.Get(ctx, img.Key())
		if err != nil {
			return err
		}
		vs, err := b.eng.BuildVariations(ctx, src, []int{2, 4, 8})
		if err != nil {
			return err
		}
		built := make([]storage.BuiltVariation, len(vs))
		for i, v := range vs {
			built[i] = storage.BuiltVariation(v)
		}
		_, err = b.db.StoreVariations(ctx, b.blobs, img, built)
		return err
	})
}

// withVariations serves e's stores through a server that builds stored
// variations with a real engine (drained by the test) and picks them.
func withVariations(t *testing.T, e *env) testBuilder {
	t.Helper()
	eng, err := engine.New(engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	b := testBuilder{db: e.db, blobs: e.blobs, eng: eng}
	srv, err := api.New(testConfig(), api.Deps{DB: e.db, Blobs: e.blobs, Engine: eng, Variations: b})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	e.url, e.srv = hs.URL, srv
	return b
}

// TestStoredVariations: an upload queues its variations, the builder makes
// them (1/2, 1/4, 1/8); a reducing chain is served from the one at the
// scale a render from the original decodes at, whatever follows or is
// asked for (histogram, PNG), and says so (X-Service-Source, replayed on a
// cache hit); a crop first, or a size only the full decode gives, from the
// original; deleting the image deletes the variations' blobs through the
// blob queue.
func TestStoredVariations(t *testing.T) {
	e := newEnv(t, testConfig())
	b := withVariations(t, e)
	id := e.upload(jpegImage(t, 2400, 1800))
	if n, err := b.drain(t.Context()); err != nil || n != 1 {
		t.Fatalf("drain = %d, %v; want 1", n, err)
	}
	img, err := e.db.Image(t.Context(), "alice", id)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := e.db.Variations(t.Context(), img)
	if err != nil || len(vs) != 3 || vs[0].Width != 300 || vs[1].Width != 600 || vs[2].Width != 1200 {
		t.Fatalf("variations %+v, %v; want 300, 600 and 1200", vs, err)
	}
	path := "/users/alice/images/" + id
	for _, c := range []struct{ query, want, cache string }{
		{".jpg?t[]=resize:width=500", "variation-600", "Miss"},
		{".jpg?t[]=resize:width=500", "variation-600", "Hit"},
		{".jpg?t[]=thumbnail:width=1000,height=700", "variation-1200", "Miss"},
		{".jpg?t[]=resize:width=2000", "original", "Miss"},
		{".jpg?t[]=crop:width=100,height=100", "original", "Miss"},
		{".jpg?t[]=resize:width=250", "variation-300", "Miss"},
		{".png?t[]=resize:width=500", "variation-600", "Miss"},
		{".jpg?t[]=resize:width=500&t[]=histogram", "variation-600", "Miss"},
	} {
		r := e.get(e.tokenURL(path+c.query, userPriv))
		if r.StatusCode != http.StatusOK || r.Header.Get("X-Service-Source") != c.want ||
			r.Header.Get("X-Service-TransformationCache") != c.cache {
			t.Fatalf("GET %s: %d, source %q cache %q; want %s, %s (%s)", c.query, r.StatusCode,
				r.Header.Get("X-Service-Source"), r.Header.Get("X-Service-TransformationCache"), c.want, c.cache, r.body)
		}
	}
	if r := e.signed(http.MethodDelete, path, userKey, userPriv, nil); r.StatusCode != http.StatusOK {
		t.Fatalf("delete: %d %s", r.StatusCode, r.body)
	}
	e.drain()
	for _, v := range vs {
		if ok, err := e.blobs.Exists(t.Context(), v.Key); err != nil || ok {
			t.Fatalf("variation blob %s exists = %v, %v after the delete", v.Key, ok, err)
		}
	}
}
