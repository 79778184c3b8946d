package api_test

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVariantCacheHeader follows one variant through miss, hit, metadata
// changes (each a miss again, even two in one second) and the image's
// delete (its variant blobs go).
func TestVariantCacheHeader(t *testing.T) {
	e := newEnv(t, testConfig())
	id := e.upload(jpegImage(t, 300, 200))
	path := "/users/alice/images/" + id + ".png?t[]=thumbnail:width=50,height=50"
	fetch := func(want string) []byte {
		t.Helper()
		r := e.get(e.tokenURL(path, userPriv))
		if r.StatusCode != http.StatusOK {
			t.Fatalf("fetch: %d %s", r.StatusCode, r.body)
		}
		if got := r.Header.Get("X-Service-TransformationCache"); got != want {
			t.Fatalf("X-Service-TransformationCache = %q, want %q", got, want)
		}
		return r.body
	}
	first := fetch("Miss")
	if again := fetch("Hit"); !bytes.Equal(first, again) {
		t.Fatal("the hit differs from the miss")
	}
	for i := range 2 {
		r := e.signed(http.MethodPost, "/users/alice/images/"+id+"/metadata", userKey, userPriv, []byte(`{"n":`+string(rune('0'+i))+`}`))
		if r.StatusCode != http.StatusOK {
			t.Fatalf("metadata: %d %s", r.StatusCode, r.body)
		}
		fetch("Miss")
		fetch("Hit")
	}
	// The original is not a variant and has no cache header.
	if r := e.get(e.tokenURL("/users/alice/images/"+id, userPriv)); r.Header.Get("X-Service-TransformationCache") != "" {
		t.Fatalf("original carries a cache header: %v", r.Header)
	}
	dir := filepath.Join(e.dir, "images", "variants", "alice", strings.TrimPrefix(e.blobKey("alice", id), "images/alice/"))
	if entries, err := os.ReadDir(dir); err != nil || len(entries) == 0 {
		t.Fatalf("no variant blobs in %s: %v", dir, err)
	}
	if r := e.signed(http.MethodDelete, "/users/alice/images/"+id, userKey, userPriv, nil); r.StatusCode != http.StatusOK {
		t.Fatalf("delete: %d %s", r.StatusCode, r.body)
	}
	e.drain()
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("variant blobs left after delete: %v", entries)
	}
}
