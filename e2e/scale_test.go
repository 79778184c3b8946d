package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// versitygw is a versitygw S3 server this test started on a loopback port,
// with a posix root holding one bucket.
type versitygw struct {
	addr, root, bucket string
	cmd                *exec.Cmd
	done               chan struct{}
}

// startVersitygw starts versitygw (installed by .ci/s3.sh) on a free port,
// or skips when it is not installed.
func startVersitygw(t *testing.T) *versitygw {
	t.Helper()
	v := &versitygw{root: t.TempDir(), bucket: "scale"}
	if err := os.Mkdir(filepath.Join(v.root, v.bucket), 0o755); err != nil {
		t.Fatal(err)
	}
	v.addr = freeAddr(t)
	v.start(t)
	t.Cleanup(v.stop)
	return v
}

func (v *versitygw) start(t *testing.T) {
	t.Helper()
	bin, err := exec.LookPath("versitygw")
	if err != nil {
		home, _ := os.UserHomeDir()
		bin = filepath.Join(home, "go", "bin", "versitygw")
		if _, err := os.Stat(bin); err != nil {
			t.Skip("versitygw is not installed (.ci/s3.sh installs it)")
		}
	}
	v.cmd = exec.Command(bin, "--port", v.addr, "posix", v.root)
	v.cmd.Env = append(childEnv(), "ROOT_ACCESS_KEY=scale", "ROOT_SECRET_KEY=scalesecret")
	if err := v.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	v.done = make(chan struct{})
	go func() { _ = v.cmd.Wait(); close(v.done) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + v.addr + "/")
		if err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("versitygw did not answer on %s: %v", v.addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (v *versitygw) stop() {
	if v.cmd == nil {
		return
	}
	_ = v.cmd.Process.Kill()
	<-v.done
	v.cmd = nil
}

func (v *versitygw) url() string {
	return "s3://" + v.bucket + "?endpoint=http://" + v.addr + "&region=us-east-1&use_path_style=true"
}

// readWriteKey is the configuration of key k with read-write on user.
func readWriteKey(k key, user string) string {
	return fmt.Sprintf(`accessControl:
  keys:
    - publicKey: %s
      privateKey: %s
      rules:
        - users: [%s]
          group: read-write
`, k.Public, k.Private, user)
}

// rawDo sends one request without failing the test (for goroutines).
func rawDo(c *http.Client, method, u string, body []byte, prepare func(*http.Request)) (int, []byte, http.Header, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		return 0, nil, nil, err
	}
	if prepare != nil {
		prepare(req)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header, err
}

// TestScaleTwoInstances runs two instances on one PostgreSQL schema and one
// versitygw bucket, started at the same moment on the fresh database (so
// both migrate it at once).
func TestScaleTwoInstances(t *testing.T) {
	dsn := postgresDSN(t)
	gw := startVersitygw(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "scale")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "scalesecret")
	user := uniqueName("scale")
	k := key{Public: user, Private: "private-" + user}
	cfg := fmt.Sprintf(`database: %q
storage: %q
shutdownTimeout: 60s
metrics:
  enabled: true
`, dsn, gw.url()) + readWriteKey(k, user)

	var (
		wg   sync.WaitGroup
		srvs [2]*server
		errs [2]error
	)
	for i := range srvs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			srvs[i], errs[i] = tryStart(t, cfg, t.TempDir())
		}()
	}
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		t.Fatalf("starting two instances on one fresh database: %v", err)
	}
	a, b := srvs[0], srvs[1]
	wantMigratedOnce(t, dsn)

	t.Run("CrossInstance", func(t *testing.T) { crossInstance(t, a, b, user, k) })
	t.Run("ConcurrentWriters", func(t *testing.T) { concurrentWriters(t, a, b, user, k) })
	t.Run("StatusFollowsStorage", func(t *testing.T) { statusFollowsStorage(t, a, gw) })
	t.Run("SIGTERMUnderLoad", func(t *testing.T) { sigtermUnderLoad(t, b, user, k) })
}

// wantMigratedOnce checks that schema_migrations lists each step once.
func wantMigratedOnce(t *testing.T, dsn string) {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n, distinct, max int
	if err := db.QueryRow("SELECT COUNT(*), COUNT(DISTINCT version), MAX(version) FROM schema_migrations").Scan(&n, &distinct, &max); err != nil {
		t.Fatal(err)
	}
	if n != distinct || n != max || n < 1 {
		t.Fatalf("schema_migrations: %d rows, %d distinct, last %d; want each step 1..N once", n, distinct, max)
	}
}

// crossInstance: an upload through a is listed, fetched, transformed and
// deleted through b; b hits the variant a made.
func crossInstance(t *testing.T, a, b *server, user string, k key) {
	img := testPNG(t, 120, 80, 3)
	id := md5Hex(img)
	images := "/users/" + user + "/images"
	wantStatus(t, "upload through a", a.write(t, http.MethodPost, images, img, k), http.StatusCreated)

	var list struct {
		Images []struct {
			ImageIdentifier string `json:"imageIdentifier"`
		} `json:"images"`
	}
	r := b.get(t, images+".json", k)
	wantStatus(t, "list through b", r, http.StatusOK)
	r.JSON(t, &list)
	if len(list.Images) != 1 || list.Images[0].ImageIdentifier != id {
		t.Fatalf("list through b: %s, want the image uploaded through a", r.Body)
	}
	r = b.get(t, images+"/"+id, k)
	wantStatus(t, "fetch through b", r, http.StatusOK)
	if md5Hex(r.Body) != id {
		t.Fatal("fetch through b: bytes differ from the upload")
	}
	thumb := images + "/" + id + ".png?t[]=thumbnail:width=40,height=40"
	ra := a.get(t, thumb, k)
	wantStatus(t, "transform through a", ra, http.StatusOK)
	if h := ra.Header.Get("X-Service-TransformationCache"); h != "Miss" {
		t.Fatalf("first transformation through a: cache header %q, want Miss", h)
	}
	rb := b.get(t, thumb, k)
	wantStatus(t, "transform through b", rb, http.StatusOK)
	if h := rb.Header.Get("X-Service-TransformationCache"); h != "Hit" {
		t.Fatalf("same transformation through b: cache header %q, want Hit (the variant a made)", h)
	}
	if !bytes.Equal(ra.Body, rb.Body) {
		t.Fatal("b's cached variant differs from a's")
	}
	// A metadata change through a makes b render again (a new image
	// version), and then hit.
	wantStatus(t, "metadata through a", a.write(t, http.MethodPost, images+"/"+id+"/metadata", []byte(`{"poi":[]}`), k), http.StatusOK)
	for _, want := range []string{"Miss", "Hit"} {
		r := b.get(t, thumb, k)
		wantStatus(t, "transform through b after the metadata change", r, http.StatusOK)
		if h := r.Header.Get("X-Service-TransformationCache"); h != want {
			t.Fatalf("transformation through b after a metadata change through a: cache header %q, want %q", h, want)
		}
	}
	// b's metrics saw the hit, and request ids are echoed (a sane incoming
	// one kept, a bad one replaced).
	r = b.do(t, http.MethodGet, "/metrics", nil, nil)
	wantStatus(t, "metrics", r, http.StatusOK)
	for _, want := range []string{`vitrine_variant_cache_requests_total{result="hit"} 2`,
		`vitrine_http_request_duration_seconds_count{method="GET",route="image",status="200"}`,
		`vitrine_db_query_duration_seconds_count{op="SELECT",result="ok"}`,
		`vitrine_blob_operation_duration_seconds_count{op="get",result="ok"}`, "vitrine_pipelines_waiting 0"} {
		if !strings.Contains(string(r.Body), want) {
			t.Errorf("b's /metrics lacks %s", want)
		}
	}
	for _, c := range []struct{ in, want string }{{"trace-42", "trace-42"}, {"bad id with spaces", ""}} {
		r := b.do(t, http.MethodGet, "/status", nil, func(req *http.Request) { req.Header.Set("X-Request-Id", c.in) })
		got := r.Header.Get("X-Request-Id")
		if (c.want != "" && got != c.want) || (c.want == "" && (got == "" || got == c.in)) {
			t.Errorf("X-Request-Id for %q = %q", c.in, got)
		}
	}
	wantStatus(t, "delete through b", b.write(t, http.MethodDelete, images+"/"+id, nil, k), http.StatusOK)
	wantStatus(t, "fetch through a after delete", a.get(t, images+"/"+id, k), http.StatusNotFound)
	wantStatus(t, "transform through a after delete", a.get(t, thumb, k), http.StatusNotFound)
}

// concurrentWriters: 8 writers upload through both instances at once;
// nothing is lost.
func concurrentWriters(t *testing.T, a, b *server, user string, k key) {
	const writers, each = 8, 5
	images := "/users/" + user + "/images"
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		ids  = map[string]bool{}
		errs []error
	)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				s := []*server{a, b}[(w+i)%2]
				img := testPNG(t, 32+w, 24+i, byte(w*each+i))
				status, body, _, err := rawDo(client, http.MethodPost, s.URL+images, img, func(r *http.Request) { signWrite(r, k) })
				mu.Lock()
				if err != nil || status != http.StatusCreated {
					errs = append(errs, fmt.Errorf("writer %d upload %d: %d %s %v", w, i, status, body, err))
				}
				ids[md5Hex(img)] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatal(errors.Join(errs...))
	}
	for _, s := range []*server{a, b} {
		r := s.get(t, images+".json?limit=100", k)
		wantStatus(t, "list", r, http.StatusOK)
		var list struct {
			Search struct {
				Hits int `json:"hits"`
			} `json:"search"`
			Images []struct {
				ImageIdentifier string `json:"imageIdentifier"`
			} `json:"images"`
		}
		r.JSON(t, &list)
		got := map[string]bool{}
		for _, img := range list.Images {
			got[img.ImageIdentifier] = true
		}
		for id := range ids {
			if !got[id] {
				t.Errorf("%s lists %d images, missing %s", s.URL, len(got), id)
			}
		}
		if len(got) != writers*each {
			t.Errorf("%s lists %d images, want %d", s.URL, len(got), writers*each)
		}
	}
	for id := range ids {
		if r := b.get(t, images+"/"+id, k); r.Status != http.StatusOK || md5Hex(r.Body) != id {
			t.Errorf("fetch %s: %s", id, r)
		}
	}
}

// statusFollowsStorage: stopping versitygw turns /status into 503 within a
// second (the client gives up after one), and starting it again back to
// 200.
func statusFollowsStorage(t *testing.T, s *server, gw *versitygw) {
	c := &http.Client{Timeout: time.Second}
	status := func() (int, string) {
		code, body, _, err := rawDo(c, http.MethodGet, s.URL+"/status", nil, nil)
		if err != nil {
			t.Fatalf("GET /status: %v (it must answer within a second)", err)
		}
		return code, string(body)
	}
	if code, body := status(); code != http.StatusOK {
		t.Fatalf("/status with every backend up: %d %s", code, body)
	}
	gw.stop()
	code, body := status()
	if code != http.StatusServiceUnavailable || !strings.Contains(body, `"storage":false`) || !strings.Contains(body, `"database":true`) {
		t.Fatalf("/status with versitygw stopped: %d %s; want 503, storage false, database true", code, body)
	}
	gw.start(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := status()
		if code == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/status after versitygw came back: %d %s", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// refused reports an error of a request the server never accepted: the
// connection was refused, or closed or reset before the server accepted it.
// Why EOF counts: every request here has a connection of its own (no
// keep-alive), and during a graceful shutdown Go's server never closes a
// connection whose request it has read without answering it; a connection
// that ends before any response byte was still in the kernel's accept queue
// when the listener closed, which the kernel ends with a FIN or a RST.
func refused(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF)
}

// sigtermUnderLoad sends SIGTERM to s while clients keep reading distinct
// transformations and uploading: every request the server accepted must
// succeed, and the process must exit cleanly.
func sigtermUnderLoad(t *testing.T, s *server, user string, k key) {
	images := "/users/" + user + "/images"
	src := testPNG(t, 800, 600, 99)
	wantStatus(t, "upload", s.write(t, http.MethodPost, images, src, k), http.StatusCreated)
	id := md5Hex(src)
	// Fresh connections, so that no request rides an idle keep-alive
	// connection the server is closing.
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	var (
		ok, notAccepted atomic.Int64
		n               atomic.Int64
		mu              sync.Mutex
		failures        []string
		wg              sync.WaitGroup
		stop            = make(chan struct{})
		loaded          = make(chan struct{})
		once            sync.Once
	)
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				i := n.Add(1)
				var (
					status int
					body   []byte
					err    error
				)
				if w == 0 {
					img := testPNG(t, 40, 30+int(i%50), byte(i))
					status, body, _, err = rawDo(c, http.MethodPost, s.URL+images, img, func(r *http.Request) { signWrite(r, k) })
				} else {
					u := signRead(fmt.Sprintf("%s%s/%s.jpg?t[]=resize:width=%d", s.URL, images, id, 100+i), k)
					status, body, _, err = rawDo(c, http.MethodGet, u, nil, nil)
				}
				switch {
				case err != nil && refused(err):
					notAccepted.Add(1)
					return // the listener is closed: this client is done
				case err != nil || status >= 300:
					mu.Lock()
					failures = append(failures, fmt.Sprintf("request %d: %d %.200s %v", i, status, body, err))
					mu.Unlock()
				default:
					if ok.Add(1) == 12 {
						once.Do(func() { close(loaded) })
					}
				}
			}
		}()
	}
	<-loaded
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-s.done
	close(stop)
	wg.Wait()
	s.stopped = true
	if len(failures) > 0 {
		t.Fatalf("%d accepted requests failed during shutdown (%d succeeded):\n%s", len(failures), ok.Load(), strings.Join(failures, "\n"))
	}
	if s.exitErr != nil {
		t.Fatalf("vitrine exited with %v after SIGTERM:\n%s", s.exitErr, s.Stderr)
	}
	if !strings.Contains(s.Stderr.String(), `"msg":"stopped"`) {
		t.Fatalf("vitrine did not report a clean stop:\n%s", s.Stderr)
	}
	t.Logf("%d requests succeeded, %d not accepted after SIGTERM", ok.Load(), notAccepted.Load())
}

// TestVariantCacheCap writes twice the cache's cap in variants through one
// server: the variants on disk never hold more than the cap, and the most
// recent ones are kept.
func TestVariantCacheCap(t *testing.T) {
	const limit = 64 << 10
	user := uniqueName("cap")
	k := key{Public: user, Private: "private-" + user}
	metricsAddr := freeAddr(t)
	s := startServer(t, fmt.Sprintf(`cache:
  maxBytes: %d
metrics:
  enabled: true
  listen: %s
`, limit, metricsAddr)+readWriteKey(k, user))
	images := "/users/" + user + "/images"
	src := testPNG(t, 300, 200, 5)
	wantStatus(t, "upload", s.write(t, http.MethodPost, images, src, k), http.StatusCreated)
	id := md5Hex(src)
	variants := filepath.Join(s.DataDir, "images", "variants", user, id)
	written := 0
	var last string
	for i := 0; written < 2*limit; i++ {
		last = fmt.Sprintf("%s/%s.png?t[]=resize:width=%d", images, id, 120+i)
		r := s.get(t, last, k)
		wantStatus(t, "transform", r, http.StatusOK)
		written += len(r.Body)
		if total := dirSize(t, variants); total > limit {
			t.Fatalf("after %d bytes of variants the cache holds %d bytes, over its cap %d", written, total, limit)
		}
	}
	if r := s.get(t, last, k); r.Header.Get("X-Service-TransformationCache") != "Hit" {
		t.Fatalf("the most recent variant was evicted: %v", r.Header)
	}
	// metrics.listen serves the metrics apart, and not on the main address.
	r := s.do(t, http.MethodGet, "http://"+metricsAddr+"/metrics", nil, nil)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), "vitrine_variant_cache_evictions_total") ||
		!strings.Contains(string(r.Body), "vitrine_blob_queue_failures_total") {
		t.Fatalf("metrics on metrics.listen: %s", r)
	}
	if r := s.do(t, http.MethodGet, "/metrics", nil, nil); r.Status != http.StatusNotFound {
		t.Fatalf("/metrics on the main address with metrics.listen set: %s", r)
	}
}

// dirSize sums the sizes of the files under dir (0 when it is missing).
func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			total += info.Size()
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return total
}

// TestCLIMigrate: `vitrine migrate --dry-run` on a fresh data directory
// lists every step and changes nothing; `vitrine migrate` applies them; a
// database from the future is refused by migrate and serve alike.
func TestCLIMigrate(t *testing.T) {
	data := t.TempDir()
	dry := mustCLI(t, nil, "migrate", "--dry-run", "--data", data)
	if !strings.Contains(dry, "is at step 0 of ") || !strings.Contains(dry, "would apply step 1: initial schema") ||
		!strings.Contains(dry, "CREATE TABLE") {
		t.Fatalf("migrate --dry-run on a fresh database:\n%s", dry)
	}
	if again := mustCLI(t, nil, "migrate", "--dry-run", "--data", data); !strings.Contains(again, "is at step 0 of ") {
		t.Fatalf("the dry run changed the database:\n%s", again)
	}
	applied := mustCLI(t, nil, "migrate", "--data", data)
	if !strings.Contains(applied, "applied step 1: initial schema") {
		t.Fatalf("migrate:\n%s", applied)
	}
	after := mustCLI(t, nil, "migrate", "--dry-run", "--data", data)
	if strings.Contains(after, "would apply") {
		t.Fatalf("steps still pending after migrate:\n%s", after)
	}

	db, err := storage.Open(context.Background(), "sqlite://"+filepath.Join(data, "vitrine.db"), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.SQL().Exec("INSERT INTO schema_migrations (version, name, applied) VALUES (999, 'future', 0)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, args := range [][]string{{"migrate", "--data", data}, {"serve", "--data", data, "--listen", "127.0.0.1:0"}} {
		_, errOut, err := runCLI(t, nil, args...)
		if err == nil || !strings.Contains(errOut, "step 999") || !strings.Contains(errOut, "upgrade vitrine") {
			t.Errorf("vitrine %s on a newer database: %v\n%s", args[0], err, errOut)
		}
	}
}
