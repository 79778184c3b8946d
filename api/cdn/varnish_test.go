package cdn

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// vclFile is the VCL README shows (section "CDN"); TestREADMEVCL keeps the
// two the same.
const vclFile = "testdata/vitrine.vcl"

// vclBackendPort is the line of vclFile the test rewrites to point Varnish
// at its own backend.
const vclBackendPort = `.port = "8080";`

// findVarnish returns the paths of varnishd and varnishadm, or skips the
// test naming what is missing.
func findVarnish(t *testing.T) (varnishd, varnishadm string) {
	t.Helper()
	find := func(name string) string {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
		for _, dir := range []string{"/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"} {
			if p := filepath.Join(dir, name); isExecutable(p) {
				return p
			}
		}
		return ""
	}
	varnishd, varnishadm = find("varnishd"), find("varnishadm")
	if varnishd == "" || varnishadm == "" {
		t.Skip("varnishd or varnishadm not found: install Debian's varnish and varnish-modules " +
			"(apt-get install varnish varnish-modules; make test-deps does)")
	}
	return varnishd, varnishadm
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

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

// startVarnish runs varnishd in the foreground with vclFile pointed at
// origin, on a port of its choosing, and returns its address; the test's
// cleanup stops it.
func startVarnish(t *testing.T, origin string) string {
	t.Helper()
	varnishd, varnishadm := findVarnish(t)
	_, port, err := net.SplitHostPort(origin)
	if err != nil {
		t.Fatal(err)
	}
	vcl, err := os.ReadFile(vclFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(vcl, []byte(vclBackendPort)) {
		t.Fatalf("%s has no line %s for the test to rewrite", vclFile, vclBackendPort)
	}
	dir := t.TempDir()
	vclPath := filepath.Join(dir, "vitrine.vcl")
	vcl = bytes.Replace(vcl, []byte(vclBackendPort), []byte(`.port = "`+port+`";`), 1)
	if err := os.WriteFile(vclPath, vcl, 0o644); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")

	// Compile first, so that a missing xkey vmod is a skip naming it
	// rather than a failed start.
	if out, err := exec.Command(varnishd, "-C", "-j", "none", "-n", work+"-compile", "-f", vclPath).CombinedOutput(); err != nil {
		if bytes.Contains(out, []byte("Could not find VMOD xkey")) {
			t.Skip("the xkey vmod is not installed: install Debian's varnish-modules (make test-deps does)")
		}
		t.Fatalf("varnishd -C: %v\n%s", err, out)
	}

	// -j none: no privilege separation, so that the test runs as whoever
	// runs it, root included (the default jail would switch to the
	// varnish user, who cannot read the test's temporary directory).
	// -a 127.0.0.1:0 lets Varnish choose a free port, read back through
	// varnishadm. The rest keeps it small: one thread pool, little
	// memory, a small log.
	cmd := exec.Command(varnishd, "-F", "-j", "none", "-n", work, "-a", "127.0.0.1:0", "-T", "127.0.0.1:0",
		"-f", vclPath, "-s", "malloc,16m", "-l", "2m",
		"-p", "thread_pools=1", "-p", "thread_pool_min=5", "-p", "thread_pool_max=50")
	out, w := io.Pipe()
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited, scanned := make(chan error, 1), make(chan struct{})
	go func() { exited <- cmd.Wait(); w.Close() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := <-exited; err != nil && !isSignal(err) {
			t.Logf("varnishd: %v", err)
		}
		<-scanned
	})

	// Wait for the child to be up, as varnishd reports it; every line
	// goes to the test's log.
	launched := make(chan bool, 1)
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(out)
		up := false
		for sc.Scan() {
			t.Log("varnishd: " + sc.Text())
			if !up && strings.Contains(sc.Text(), "Child launched OK") {
				up = true
				launched <- true
			}
		}
		_, _ = io.Copy(io.Discard, out)
		if !up {
			launched <- false
		}
	}()
	select {
	case ok := <-launched:
		if !ok {
			t.Fatal("varnishd stopped before its child started (its output is above)")
		}
	case <-time.After(time.Minute):
		// Not a timing assertion: a guard against a varnishd that hangs.
		t.Fatal("varnishd did not start its child within a minute")
	}
	addrs, err := exec.Command(varnishadm, "-n", work, "debug.listen_address").CombinedOutput()
	if err != nil {
		t.Fatalf("varnishadm debug.listen_address: %v\n%s", err, addrs)
	}
	// One line per listen address: "a0 127.0.0.1 41234".
	f := strings.Fields(string(addrs))
	if len(f) < 3 {
		t.Fatalf("varnishadm debug.listen_address: %q", addrs)
	}
	return net.JoinHostPort(f[1], f[2])
}

func isSignal(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && !ee.Exited()
}

// TestVarnish runs Debian's Varnish with the xkey vmod and the README's
// VCL in front of a backend that tags its answers as vitrine does: a
// second GET is a hit, a purge through the Varnish purger makes the next
// GET of what it named a miss, and what it did not name stays cached.
func TestVarnish(t *testing.T) {
	origin := &backend{count: map[string]int{}}
	srv := httptest.NewServer(origin)
	defer srv.Close()
	addr := startVarnish(t, strings.TrimPrefix(srv.URL, "http://"))
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
