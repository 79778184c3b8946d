package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vitrine/vitrine/api/cdn/cdntest"
)

// origin sits between Varnish and vitrine, which starts after Varnish
// (each needs the other's address): it forwards to vitrine and counts the
// requests that reach it, so that a hit is a request it never saw.
type origin struct {
	mu     sync.Mutex
	proxy  *httputil.ReverseProxy
	misses atomic.Int64
}

func (o *origin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.misses.Add(1)
	o.mu.Lock()
	p := o.proxy
	o.mu.Unlock()
	if p == nil {
		http.Error(w, "vitrine is not up yet", http.StatusServiceUnavailable)
		return
	}
	p.ServeHTTP(w, r)
}

// TestVarnishInFront runs Debian's Varnish with the xkey vmod and
// api/cdn/README.md's VCL in front of vitrine, which purges it (cdn.purgers): a GET
// through Varnish is a hit the second time; after a DELETE, and after a
// metadata change of an image served with smartSize, the next GET misses
// and answers the new truth.
func TestVarnishInFront(t *testing.T) {
	o := &origin{}
	back := startLoopback(t, o)
	varnish := "http://" + cdntest.StartVarnish(t, "../api/cdn/testdata/vitrine.vcl", back)
	user := uniqueName("cdn")
	k := key{Public: user, Private: "private-" + user}
	s := startServer(t, fmt.Sprintf(`cdn:
  purgers:
    - type: varnish
      url: %s/
`, varnish)+readWriteKey(k, user))
	target, _ := url.Parse(s.URL)
	o.mu.Lock()
	o.proxy = httputil.NewSingleHostReverseProxy(target)
	o.mu.Unlock()

	// through fetches path (signed for reading) through Varnish and says
	// whether it reached vitrine.
	through := func(t *testing.T, path string) (status int, body []byte, miss bool) {
		t.Helper()
		before := o.misses.Load()
		u := signRead(varnish+path, k)
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ = io.ReadAll(resp.Body)
		return resp.StatusCode, body, o.misses.Load() > before
	}
	// untilMiss fetches path through Varnish until the answer is a miss,
	// and logs how long after the API's answer that was.
	untilMiss := func(t *testing.T, what, path string, answered time.Time) (int, []byte) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			status, body, miss := through(t, path)
			if miss {
				t.Logf("%s: Varnish purged %s after the API's answer", what, time.Since(answered).Round(time.Millisecond))
				return status, body
			}
			if time.Now().After(deadline) { // a guard against a hang, not a measure
				t.Fatalf("%s: Varnish still serves its copy 30 s after the API's answer", what)
			}
		}
	}

	// cached fetches path through Varnish until a GET is a hit with the
	// bytes the one before it brought, and returns them. The purge of a
	// change made just before may land after the first GET has filled the
	// cache (delivery is asynchronous), so one miss-then-hit is not enough.
	cached := func(t *testing.T, path string) []byte {
		t.Helper()
		_, body, _ := through(t, path)
		for deadline := time.Now().Add(30 * time.Second); ; {
			status, again, miss := through(t, path)
			if status == http.StatusOK && !miss && bytes.Equal(again, body) {
				return body
			}
			if time.Now().After(deadline) { // a guard against a hang, not a measure
				t.Fatalf("GET through Varnish is no hit after 30 s: %d, miss %v", status, miss)
			}
			body = again
		}
	}

	upload := func(t *testing.T, seed byte) string {
		r := s.write(t, http.MethodPost, "/users/"+user+"/images", testPNG(t, 200, 120, seed), k)
		wantStatus(t, "upload", r, http.StatusCreated)
		var up struct{ ImageIdentifier string }
		r.JSON(t, &up)
		return up.ImageIdentifier
	}

	t.Run("DeleteIsPurged", func(t *testing.T) {
		id := upload(t, 1)
		path := "/users/" + user + "/images/" + id + ".png?t[]=thumbnail:width=50,height=50"
		if status, _, miss := through(t, path); status != http.StatusOK || !miss {
			t.Fatalf("first GET: %d, miss %v", status, miss)
		}
		if status, _, miss := through(t, path); status != http.StatusOK || miss {
			t.Fatalf("second GET: %d, miss %v; want a hit", status, miss)
		}
		other := upload(t, 2)
		otherPath := "/users/" + user + "/images/" + other + ".png"
		through(t, otherPath)
		wantStatus(t, "DELETE", s.write(t, http.MethodDelete, "/users/"+user+"/images/"+id, nil, k), http.StatusOK)
		if status, _ := untilMiss(t, "delete", path, time.Now()); status != http.StatusNotFound {
			t.Fatalf("GET after DELETE through Varnish: %d, want 404", status)
		}
		if status, _, miss := through(t, otherPath); status != http.StatusOK || miss {
			t.Errorf("another image: %d, miss %v; its copy should stay", status, miss)
		}
	})

	t.Run("MetadataChangeIsPurged", func(t *testing.T) {
		id := upload(t, 3)
		meta := "/users/" + user + "/images/" + id + "/metadata"
		wantStatus(t, "PUT metadata", s.write(t, http.MethodPut, meta, []byte(`{"poi":[{"cx":20,"cy":20}]}`), k), http.StatusOK)
		path := "/users/" + user + "/images/" + id + ".png?t[]=smartSize:width=40,height=40"
		before := cached(t, path)
		wantStatus(t, "PUT metadata", s.write(t, http.MethodPut, meta, []byte(`{"poi":[{"cx":180,"cy":100}]}`), k), http.StatusOK)
		status, after := untilMiss(t, "metadata", path, time.Now())
		direct := s.get(t, "/users/"+user+"/images/"+id+".png?t[]=smartSize:width=40,height=40", k)
		if status != http.StatusOK || bytes.Equal(after, before) || !bytes.Equal(after, direct.Body) {
			t.Fatalf("after the change Varnish answers %d, the old crop %v, vitrine's own answer %v",
				status, bytes.Equal(after, before), bytes.Equal(after, direct.Body))
		}
	})
}

// startLoopback serves h on a free loopback port until the test ends and
// returns its host:port.
func startLoopback(t *testing.T, h http.Handler) string {
	t.Helper()
	addr := freeAddr(t)
	srv := &http.Server{Addr: addr, Handler: h}
	go func() { _ = srv.ListenAndServe() }()
	t.Cleanup(func() { _ = srv.Close() })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if resp, err := http.Get("http://" + addr + "/"); err == nil {
			resp.Body.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("the origin on %s did not answer", addr)
		}
	}
}
