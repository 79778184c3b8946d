package cdn

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/vitrine/vitrine/api/cdn/cdntest"
)

// vclFile is the VCL api/cdn/README.md shows (section "CDN"); TestREADMEVCL keeps the
// two the same.
const vclFile = "testdata/vitrine.vcl"

// backend is the origin behind Varnish: it serves, at any path, a
// cacheable body tagged as vitrine tags an image of that path
// (/users/<user>/images/<id>), and counts the requests per path.
type backend struct {
	mu    sync.Mutex
	count map[string]int
}

func (b *backend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	b.count[r.URL.Path]++
	n := b.count[r.URL.Path]
	b.mu.Unlock()
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var tags Tags
	if len(parts) == 4 {
		tags.Set(w.Header(), []string{tags.All(), tags.User(parts[1]), tags.Image(parts[1], parts[3])})
	}
	w.Header().Set("Cache-Control", "public, max-age=31536000")
	w.Header().Set("Content-Type", "text/plain")
	_, _ = io.WriteString(w, r.URL.Path+" version "+string(rune('0'+n)))
}

func (b *backend) requests(path string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.count[path]
}

// TestVarnish runs Debian's Varnish with the xkey vmod and api/cdn/README.md's
// VCL in front of a backend that tags its answers as vitrine does: a
// second GET is a hit, a purge through the Varnish purger makes the next
// GET of what it named a miss, and what it did not name stays cached.
func TestVarnish(t *testing.T) {
	origin := &backend{count: map[string]int{}}
	srv := httptest.NewServer(origin)
	defer srv.Close()
	addr := cdntest.StartVarnish(t, vclFile, strings.TrimPrefix(srv.URL, "http://"))
	base := "http://" + addr
	ctx := context.Background()

	get := func(t *testing.T, path string) *http.Response {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", path, resp.Status)
		}
		return resp
	}
	a, b := "/users/alice/images/a", "/users/bob/images/b"
	var tags Tags
	purger, err := NewPurger(PurgerConfig{Type: TypeVarnish, URL: base + "/"})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("miss then hit", func(t *testing.T) {
		get(t, a)
		resp := get(t, a)
		get(t, b)
		get(t, b)
		if n := origin.requests(a); n != 1 {
			t.Errorf("backend saw %d requests for %s, want 1 (the second GET a hit)", n, a)
		}
		if n := origin.requests(b); n != 1 {
			t.Errorf("backend saw %d requests for %s, want 1", n, b)
		}
		for _, h := range []string{"xkey", "Surrogate-Key", "Cache-Tag"} {
			if v := resp.Header.Get(h); v != "" {
				t.Errorf("a client sees %s: %s; the VCL should remove it", h, v)
			}
		}
	})
	t.Run("purge", func(t *testing.T) {
		if err := purger.Purge(ctx, []string{tags.Image("alice", "a")}); err != nil {
			t.Fatal(err)
		}
		get(t, a)
		if n := origin.requests(a); n != 2 {
			t.Errorf("backend saw %d requests for %s after its purge, want 2", n, a)
		}
		get(t, b)
		if n := origin.requests(b); n != 1 {
			t.Errorf("backend saw %d requests for %s, which the purge did not name, want 1", n, b)
		}
	})
	t.Run("purge of nothing cached", func(t *testing.T) {
		if err := purger.Purge(ctx, []string{tags.Image("carol", "never")}); err != nil {
			t.Errorf("purge of a tag no object carries: %v, want nil (nothing to retry)", err)
		}
	})
	t.Run("purge from an address outside the acl", func(t *testing.T) {
		// 127.0.0.2 is loopback too, but not in the VCL's acl.
		dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
		client := &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}}
		outsider, err := NewPurger(PurgerConfig{Type: TypeVarnish, URL: base + "/", Client: client})
		if err != nil {
			t.Fatal(err)
		}
		err = outsider.Purge(ctx, []string{tags.All()})
		if err == nil || !strings.Contains(err.Error(), "403") {
			t.Fatalf("purge from 127.0.0.2: %v, want a 403", err)
		}
		get(t, b)
		if n := origin.requests(b); n != 1 {
			t.Errorf("backend saw %d requests for %s after a refused purge, want 1", n, b)
		}
	})
	t.Run("purge all", func(t *testing.T) {
		if err := purger.Purge(ctx, []string{tags.All()}); err != nil {
			t.Fatal(err)
		}
		get(t, a)
		get(t, b)
		if na, nb := origin.requests(a), origin.requests(b); na != 3 || nb != 2 {
			t.Errorf("backend saw %d and %d requests after purging %s, want 3 and 2", na, nb, tags.All())
		}
	})
}
