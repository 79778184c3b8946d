package e2e

import (
	"bytes"
	"database/sql"
	"fmt"
	"image/jpeg"
	"image/png"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The server's life cycle seen from outside: readiness while the filters
// load, a rolling restart of two instances behind a balancer that follows
// /readyz, two instances racing for the first admin key, and SIGTERM while
// renders and variation builds run.

// TestReadyWaitsForFilters starts an instance whose filters take seconds
// to load (a module of nested blocks that compiles slowly, and the SDK's
// duotone example): /readyz answers 503 naming the reason while /status
// and /healthz answer 200; once /readyz answers 200, every request sent
// after it succeeds, those using either filter among them.
func TestReadyWaitsForFilters(t *testing.T) {
	dir := onlyFilters(t, "duotone")
	// 20,000 nested blocks compile in 2-3 s on an idle core (filters'
	// README); the filters compile one at a time, duotone as well.
	writeFilterFolder(t, dir, "slow", `"kind": "transformation"`, nestedBlocksModule(20000))
	user := uniqueName("ready")
	k := key{Public: user, Private: "private-" + user}
	s := startServer(t, fmt.Sprintf("filters:\n  dir: %s\n  compileTimeout: 120s\n", dir)+readWriteKey(k, user))
	images := "/users/" + user + "/images/"

	var id string
	t.Run("not ready while the filters load", func(t *testing.T) {
		status, body := probe(t, s, "/readyz")
		if status != http.StatusServiceUnavailable || body != "Service Unavailable\nfilters are still loading\n" {
			t.Fatalf("/readyz while loading: %d %q, want 503 naming the filters", status, body)
		}
		for _, path := range []string{"/status", "/healthz"} {
			if status, body := probe(t, s, path); status != http.StatusOK {
				t.Errorf("%s while loading: %d %q, want 200", path, status, body)
			}
		}
		img := testPNG(t, 320, 240, 4)
		wantStatus(t, "upload while loading", s.write(t, http.MethodPost, images[:len(images)-1], img, k), http.StatusCreated)
		id = md5Hex(img)
	})

	t.Run("ready once loaded, and every request then succeeds", func(t *testing.T) {
		polls, unready := 0, 0
		for deadline := time.Now().Add(3 * time.Minute); ; polls++ {
			status, body := probe(t, s, "/readyz")
			if status == http.StatusOK {
				break
			}
			if status != http.StatusServiceUnavailable || body != "Service Unavailable\nfilters are still loading\n" {
				t.Fatalf("/readyz after %d polls: %d %q", polls, status, body)
			}
			unready++
			if time.Now().After(deadline) {
				t.Fatalf("/readyz still 503 after 3 minutes: %q", body)
			}
			time.Sleep(20 * time.Millisecond)
		}
		chains := []string{
			"t[]=duotone:dark=202020,light=f0f0f0",
			"t[]=slow",
			"t[]=thumbnail:width=100,height=100&t[]=duotone:dark=000000,light=ffffff&t[]=slow",
		}
		sent, failed := 0, 0
		for round := range 5 {
			for i, chain := range chains {
				r := s.get(t, fmt.Sprintf("%s%s.png?%s&t[]=resize:width=%d", images, id, chain, 200+10*round+i), k)
				sent++
				if !checkStatus(t, "t[]="+chain+" after /readyz 200", r, http.StatusOK) {
					failed++
				}
			}
			status, body := probe(t, s, "/readyz")
			sent++
			if status != http.StatusOK {
				failed++
				t.Errorf("/readyz after the first 200: %d %q", status, body)
			}
		}
		t.Logf("/readyz answered 503 %d times, then 200; %d requests sent after the first 200, %d failed", unready, sent, failed)
	})
}

// probe sends GET path without the API reference's check (the probes are
// plain text) and returns the status and body.
func probe(t *testing.T, s *server, path string) (int, string) {
	t.Helper()
	status, body, _, err := rawDo(http.DefaultClient, http.MethodGet, s.URL+path, nil, nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return status, string(body)
}

// onlyFilters is a filters directory with the SDK's examples named (built
// by exampleFilters) and no other.
func onlyFilters(t *testing.T, names ...string) string {
	t.Helper()
	dir := exampleFilters(t)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		keep := false
		for _, n := range names {
			keep = keep || e.Name() == n
		}
		if !keep {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// postgresDatabase creates a database of its own on the VITRINE_TEST_POSTGRES
// server, dropped when the test ends, and returns its URL; it skips naming
// the variable when that is not set.
func postgresDatabase(t *testing.T) string {
	t.Helper()
	base := postgresServer(t)
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	name := uniqueName("lifecycle")
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		admin.Close()
		t.Fatalf("create database on VITRINE_TEST_POSTGRES: %v", err)
	}
	t.Cleanup(func() {
		defer admin.Close()
		// FORCE: a connection of a stopped instance may linger a moment.
		if _, err := admin.Exec("DROP DATABASE " + name + " WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// postgresServer returns VITRINE_TEST_POSTGRES, or skips naming it.
func postgresServer(t *testing.T) string {
	t.Helper()
	base := os.Getenv("VITRINE_TEST_POSTGRES")
	if base == "" {
		t.Skip("set VITRINE_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable to run")
	}
	return base
}

// terminate sends SIGTERM to s and waits (at most two minutes) for it to
// exit; it returns the exit error (nil for status 0).
func (s *server) terminate(t *testing.T) error {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("%s did not exit within two minutes of SIGTERM", s.URL)
	}
	s.stopped = true
	return s.exitErr
}

// TestTwoInstancesFirstStart, ten rounds: two instances start at the same
// moment on a fresh PostgreSQL database with no keys configured; exactly
// one prints the first admin key, the key reads through both, and both
// stop with status 0.
func TestTwoInstancesFirstStart(t *testing.T) {
	postgresServer(t)
	raced := 0
	for round := range 10 {
		t.Run(fmt.Sprintf("round %d", round), func(t *testing.T) {
			// The instances share the database, so they share the secret
			// that encrypts its private keys (README, Configuration).
			cfg := fmt.Sprintf("database: %q\nsecret: %s\n", postgresDatabase(t), uniqueName("secret"))
			srvs := startTogether(t, cfg, cfg)
			var k key
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				var ok bool
				if k, ok = parseAdminKey(srvs[0].Stdout.String()); ok {
					break
				}
				if k, ok = parseAdminKey(srvs[1].Stdout.String()); ok {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("neither instance printed the admin key within 10 s of answering")
				}
			}
			for i, s := range srvs {
				r := s.get(t, "/users/admin/images", k)
				checkStatus(t, fmt.Sprintf("the admin key through instance %d", i), r, http.StatusOK)
				bad := key{Public: k.Public, Private: k.Private + "x"}
				if r := s.get(t, "/users/admin/images", bad); r.Status == http.StatusOK {
					t.Errorf("instance %d accepted a wrong private key: %s", i, r)
				}
			}
			banners := 0
			for i, s := range srvs {
				if err := s.terminate(t); err != nil {
					t.Errorf("instance %d exited with %v:\n%s", i, err, s.Stderr)
				}
				banners += strings.Count(s.Stdout.String(), adminKeyBanner)
				if strings.Contains(s.Stderr.String(), "another instance created the first admin key") {
					raced++
				}
			}
			if banners != 1 {
				t.Errorf("the admin key was printed %d times, want once:\n%s\n%s", banners, srvs[0].Stdout, srvs[1].Stdout)
			}
		})
	}
	t.Logf("10 rounds; in %d both instances tried to create the key and one logged that the other had", raced)
}

// startTogether starts one instance per configuration at the same moment,
// each on a data directory of its own, and waits until every one answers
// GET /status.
func startTogether(t *testing.T, cfgs ...string) []*server {
	t.Helper()
	srvs := make([]*server, len(cfgs))
	errs := make([]error, len(cfgs))
	var wg sync.WaitGroup
	for i, cfg := range cfgs {
		wg.Go(func() { srvs[i], errs[i] = tryStart(t, cfg, t.TempDir()) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("starting instance %d: %v", i, err)
		}
	}
	return srvs
}

// TestStopMidFlight uploads large JPEGs, so that the variation builder is
// busy, starts 8 renders of large PNGs and sends SIGTERM once the server
// counts them all in flight: every render answers 200 with a whole image,
// the server exits with status 0 without a libvips warning, and, started
// again on the same data, builds every image's variations.
func TestStopMidFlight(t *testing.T) {
	user := uniqueName("midflight")
	k := key{Public: user, Private: "private-" + user}
	// retryMin: a build cut short by the stop counts as a try, retried
	// after the backoff.
	cfg := "metrics:\n  enabled: true\nvariations:\n  interval: 1s\n  retryMin: 1s\n  retryMax: 2s\n" + readWriteKey(k, user)
	data := t.TempDir()
	s := startServerData(t, cfg, data)
	images := "/users/" + user + "/images"
	const uploads, renders = 8, 8
	var ids []string
	t.Run("upload", func(t *testing.T) {
		// Encoded first and sent back to back, so that the builder (which
		// rests as long as each build took) has seconds of work queued.
		pic := testPicture(4000, 3000, 10)
		var jpgs [][]byte
		for i := range uploads {
			for p := 2; p < 64*pic.Stride; p += 4 { // the blue of the top 64 rows: another image each time
				pic.Pix[p] = byte(30 * i)
			}
			var buf bytes.Buffer
			if err := jpeg.Encode(&buf, pic, &jpeg.Options{Quality: 90}); err != nil {
				t.Fatal(err)
			}
			jpgs = append(jpgs, buf.Bytes())
		}
		for _, img := range jpgs {
			wantStatus(t, "upload", s.write(t, http.MethodPost, images, img, k), http.StatusCreated)
			ids = append(ids, md5Hex(img))
		}
	})

	type result struct {
		status int
		body   []byte
		err    error
	}
	results := make([]result, renders)
	t.Run("SIGTERM with renders in flight", func(t *testing.T) {
		var wg sync.WaitGroup
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		for i := range renders {
			u := signRead(fmt.Sprintf("%s%s/%s.png?t[]=resize:width=%d", s.URL, images, ids[i%uploads], 2900+i), k)
			wg.Go(func() {
				r := &results[i]
				r.status, r.body, _, r.err = rawDo(c, http.MethodGet, u, nil, nil)
			})
		}
		waitInFlight(t, s, renders)
		built, _ := filepath.Glob(filepath.Join(data, "images", "variations", user, "*", "*"))
		if len(built) == 3*uploads {
			t.Fatalf("every variation was stored before the renders were in flight: nothing for the stop to interrupt")
		}
		err := s.terminate(t)
		wg.Wait()
		if err != nil {
			t.Errorf("exit after SIGTERM: %v", err)
		}
		for i, r := range results {
			if r.err != nil || r.status != http.StatusOK {
				t.Errorf("render %d: %d %v %.200s", i, r.status, r.err, r.body)
				continue
			}
			img, err := png.Decode(bytes.NewReader(r.body))
			if err != nil {
				t.Errorf("render %d: %d bytes that do not decode: %v", i, len(r.body), err)
			} else if w := img.Bounds().Dx(); w != 2900+i {
				t.Errorf("render %d is %d px wide, want %d", i, w, 2900+i)
			}
		}
		for _, bad := range []string{"VIPS-WARNING", "VIPS-CRITICAL", "panic", "SIGSEGV"} {
			if strings.Contains(s.Stderr.String(), bad) {
				t.Errorf("stderr has %s:\n%s", bad, s.Stderr)
			}
		}
		after, _ := filepath.Glob(filepath.Join(data, "images", "variations", user, "*", "*"))
		t.Logf("%d renders in flight at SIGTERM, all answered 200 with a whole PNG; %d of %d variation blobs stored then, %d at the exit",
			renders, len(built), 3*uploads, len(after))
	})

	t.Run("started again, the variations get built", func(t *testing.T) {
		s := startServerData(t, cfg, data)
		for _, id := range ids {
			waitVariations(t, data, user, id, 3)
		}
		r := s.get(t, images+"/"+ids[0]+".jpg?t[]=resize:width=300", k)
		wantStatus(t, "a reducing chain", r, http.StatusOK)
		if src := r.Header.Get("X-Service-Source"); !strings.HasPrefix(src, "variation-") {
			t.Errorf("a reducing chain read %q, want a stored variation", src)
		}
		if err := s.terminate(t); err != nil {
			t.Fatalf("second exit: %v", err)
		}
		if out, errOut, err := runCLI(t, nil, "fsck", "--json", "--grace", "1ns", "--config", s.Config, "--data", data); err != nil {
			t.Errorf("fsck after the variations were built: %v\n%s%s", err, out, errOut)
		}
	})
}

// waitInFlight waits until the server counts n requests in flight
// (vitrine_http_requests_in_flight, which leaves /metrics out).
func waitInFlight(t *testing.T, s *server, n int) {
	t.Helper()
	want := fmt.Sprintf("vitrine_http_requests_in_flight %d\n", n)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		_, body := probe(t, s, "/metrics")
		if strings.Contains(body, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server never counted %d requests in flight", n)
		}
	}
}

// waitVariations waits (at most two minutes) until the image has n stored
// variation blobs in the file store under data.
func waitVariations(t *testing.T, data, user, id string, n int) {
	t.Helper()
	pattern := filepath.Join(data, "images", "variations", user, id+".*", "*")
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		files, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("image %s has %d variation blobs after two minutes, want %d: %v", id, len(files), n, files)
		}
	}
}

// readyProxy is a load balancer in front of instances: it polls each
// backend's /readyz every 50 ms and sends a request to a backend whose
// last poll answered 200 (round robin). It retries nothing: every request
// gets a connection of its own (Go's transport retries a request only on a
// reused one), and a transport error is a 502 to the client.
type readyProxy struct {
	URL      string
	mu       sync.Mutex
	backends []*backend
	next     int
	tr       *http.Transport
	errs     []string // transport errors
}

// backend is one instance behind the proxy.
type backend struct {
	url    string
	ready  bool
	served int // requests sent to url
}

// startReadyProxy serves on a loopback port until the test ends.
func startReadyProxy(t *testing.T, urls ...string) *readyProxy {
	t.Helper()
	p := &readyProxy{tr: &http.Transport{DisableKeepAlives: true}}
	for _, u := range urls {
		p.backends = append(p.backends, &backend{url: u})
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.URL = "http://" + ln.Addr().String()
	srv := &http.Server{Handler: p}
	go func() { _ = srv.Serve(ln) }()
	stop := make(chan struct{})
	polled := make(chan struct{})
	go p.poll(stop, polled)
	t.Cleanup(func() {
		close(stop)
		<-polled
		srv.Close()
	})
	return p
}

// poll asks every backend's /readyz every 50 ms until stop.
func (p *readyProxy) poll(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for {
		p.mu.Lock()
		urls := make([]string, len(p.backends))
		for i, b := range p.backends {
			urls[i] = b.url
		}
		p.mu.Unlock()
		for i, u := range urls {
			status, _, _, err := rawDo(c, http.MethodGet, u+"/readyz", nil, nil)
			p.mu.Lock()
			if b := p.backends[i]; b.url == u { // not replaced meanwhile
				b.ready = err == nil && status == http.StatusOK
			}
			p.mu.Unlock()
		}
		select {
		case <-stop:
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// pick returns the next ready backend's address, or "".
func (p *readyProxy) pick() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for range p.backends {
		b := p.backends[p.next%len(p.backends)]
		p.next++
		if b.ready {
			b.served++
			return b.url
		}
	}
	return ""
}

func (p *readyProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := p.pick()
	if target == "" {
		http.Error(w, "no ready backend", http.StatusServiceUnavailable)
		return
	}
	u, _ := url.Parse(target) // a server's URL
	rp := &httputil.ReverseProxy{
		Transport: p.tr,
		// The Host header stays the proxy's: signatures cover the URL the
		// client signed.
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host, pr.Out.Host = u.Scheme, u.Host, pr.In.Host
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			p.mu.Lock()
			p.errs = append(p.errs, fmt.Sprintf("%s %s via %s: %v", r.Method, r.URL.Path, target, err))
			p.mu.Unlock()
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	rp.ServeHTTP(w, r)
}

// replace puts a new instance at slot i, not ready until a poll says so.
func (p *readyProxy) replace(i int, u string) {
	p.mu.Lock()
	p.backends[i] = &backend{url: u}
	p.mu.Unlock()
}

// state returns whether backend i is ready and how many requests it got.
func (p *readyProxy) state(i int) (ready bool, served int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.backends[i].ready, p.backends[i].served
}

// waitFor waits (at most two minutes) until cond holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within two minutes", what)
		}
	}
}

// mixedLoad sends uploads, native renders and renders with a guest step
// through the proxy, each worker until stop or its bound.
type mixedLoad struct {
	base, user string
	k          key
	ids        []string // images the renders read
	ok         atomic.Int64
	sent       atomic.Int64
	mu         sync.Mutex
	failures   []string
}

// work runs worker w: 0 uploads, 1 and 2 native chains, 3 a guest step.
func (l *mixedLoad) work(w int, stop <-chan struct{}) {
	images := l.base + "/users/" + l.user + "/images"
	c := &http.Client{Timeout: time.Minute}
	for n := range 20000 { // a bound; stop ends it long before
		select {
		case <-stop:
			return
		default:
		}
		id := l.ids[n%len(l.ids)]
		var (
			status int
			body   []byte
			err    error
		)
		switch w {
		case 0:
			status, body, _, err = rawDo(c, http.MethodPost, images, pngBytes(w, n), func(r *http.Request) { signWrite(r, l.k) })
		case 1:
			status, body, _, err = rawDo(c, http.MethodGet, signRead(fmt.Sprintf("%s/%s.jpg?t[]=resize:width=%d&t[]=desaturate", images, id, 100+n%300), l.k), nil, nil)
		case 2:
			status, body, _, err = rawDo(c, http.MethodGet, signRead(fmt.Sprintf("%s/%s.webp?t[]=crop:x=10,y=10,width=%d,height=100&t[]=rotate:angle=90", images, id, 100+n%200), l.k), nil, nil)
		default:
			status, body, _, err = rawDo(c, http.MethodGet, signRead(fmt.Sprintf("%s/%s.png?t[]=thumbnail:width=%d,height=90&t[]=duotone:dark=202020,light=f0f0f0", images, id, 60+n%200), l.k), nil, nil)
		}
		l.sent.Add(1)
		if err != nil || status < 200 || status > 299 {
			l.mu.Lock()
			l.failures = append(l.failures, fmt.Sprintf("worker %d request %d: %d %.200s %v", w, n, status, body, err))
			l.mu.Unlock()
			continue
		}
		l.ok.Add(1)
	}
}

// TestRollingRestart runs two instances on one PostgreSQL database and one
// file blob store behind readyProxy, under a mixed load, and restarts one
// after the other (SIGTERM with shutdownDelay, so that the proxy sees 503
// before the instance stops accepting; then started again on the same
// configuration and data): no request fails, and every exit is status 0.
func TestRollingRestart(t *testing.T) {
	dsn := postgresDatabase(t)
	filterDir := onlyFilters(t, "duotone")
	blobs := t.TempDir()
	user := uniqueName("rolling")
	k := key{Public: user, Private: "private-" + user}
	cfg := fmt.Sprintf(`database: %q
storage: "file://%s"
secret: %s
shutdownDelay: 1s
filters:
  dir: %s
`, dsn, blobs, uniqueName("secret"), filterDir) + readWriteKey(k, user)
	data := []string{t.TempDir(), t.TempDir()}
	srvs := []*server{startServerData(t, cfg, data[0]), startServerData(t, cfg, data[1])}
	p := startReadyProxy(t, srvs[0].URL, srvs[1].URL)
	for i := range srvs {
		waitFor(t, fmt.Sprintf("instance %d ready", i), func() bool { ready, _ := p.state(i); return ready })
	}
	l := &mixedLoad{base: p.URL, user: user, k: k}
	for i := range 3 {
		img := testJPEG(t, 640, 480, byte(i))
		wantStatus(t, "upload", srvs[i%2].write(t, http.MethodPost, "/users/"+user+"/images", img, k), http.StatusCreated)
		l.ids = append(l.ids, md5Hex(img))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() { l.work(w, stop) })
	}
	defer func() { // a failed step still ends the load
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}()
	// progress waits until the load has had n more successes.
	progress := func(t *testing.T, n int64) {
		t.Helper()
		from := l.ok.Load()
		waitFor(t, fmt.Sprintf("%d more requests succeeding", n), func() bool { return l.ok.Load() >= from+n })
	}
	progress(t, 40)
	top := t // the instances started again outlive the step that starts them
	for i, name := range []string{"A", "B"} {
		t.Run("restart "+name, func(t *testing.T) {
			old := srvs[i]
			err := old.terminate(t)
			if err != nil {
				t.Errorf("instance %s exited with %v:\n%s", name, err, old.Stderr)
			}
			if ready, _ := p.state(i); ready {
				t.Errorf("the proxy still took instance %s for ready once it had exited", name)
			}
			progress(t, 20) // the other instance serves alone
			srvs[i] = startServerData(top, cfg, data[i])
			p.replace(i, srvs[i].URL)
			waitFor(t, "instance "+name+" ready again", func() bool { ready, _ := p.state(i); return ready })
			waitFor(t, "instance "+name+" serving again", func() bool { _, served := p.state(i); return served >= 20 })
		})
	}
	progress(t, 20)
	close(stop)
	wg.Wait()
	t.Run("no request failed", func(t *testing.T) {
		_, servedA := p.state(0)
		_, servedB := p.state(1)
		t.Logf("%d requests sent through the proxy, %d succeeded, %d failed; after the restarts A served %d, B %d",
			l.sent.Load(), l.ok.Load(), len(l.failures), servedA, servedB)
		if len(l.failures) > 0 || len(p.errs) > 0 {
			t.Errorf("%d requests failed:\n%s\nproxy transport errors:\n%s", len(l.failures),
				strings.Join(l.failures, "\n"), strings.Join(p.errs, "\n"))
		}
	})
	t.Run("both stop with status 0", func(t *testing.T) {
		for i, s := range srvs {
			if err := s.terminate(t); err != nil {
				t.Errorf("instance %d exited with %v:\n%s", i, err, s.Stderr)
			}
		}
	})
}
