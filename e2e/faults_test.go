package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vitrine/vitrine/e2e/faultproxy"
	"github.com/vitrine/vitrine/storage"
)

// TestFaults runs two instances on a PostgreSQL cluster of the test's own
// and versitygw behind a TCP proxy the test controls, under mixed load
// (uploads, deletes, re-uploads of the same bytes, transformations), and
// injects one fault at a time: PostgreSQL restarted, S3 stalled, S3
// refusing connections, an instance killed with SIGKILL. Afterwards no
// acknowledged upload is lost, every listed image fetches its bytes, and
// once the deletion queue drains fsck finds no orphan. It prints each
// fault's requests, 5xx answers and seconds to recover.
//
// It needs PostgreSQL's server binaries (initdb, pg_ctl) and versitygw, and
// runs only with VITRINE_TEST_FAULTS=1 (make test runs it once, apart from
// the rest, because it restarts servers and takes about a minute).
func TestFaults(t *testing.T) {
	if os.Getenv("VITRINE_TEST_FAULTS") == "" {
		t.Skip("set VITRINE_TEST_FAULTS=1 to run (make test does, once)")
	}
	pg := startPostgres(t)
	gw := startVersitygw(t)
	px := faultproxy.Start(t, gw.addr)
	t.Setenv("AWS_ACCESS_KEY_ID", "scale")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "scalesecret")
	user := uniqueName("faults")
	k := key{Public: user, Private: "private-" + user}
	s3 := "s3://" + gw.bucket + "?endpoint=http://" + px.Addr + "&region=us-east-1&use_path_style=true"
	cfg := fmt.Sprintf(`database: %q
storage: %q
storageTimeout: 1s
databaseTimeout: 2s
blobQueue:
  interval: 200ms
  retryMin: 200ms
  retryMax: 1s
  reservationLease: 5s
shutdownTimeout: 5s
`, pg.dsn, s3) + readWriteKey(k, user)
	a := startServer(t, cfg)
	bData := t.TempDir()
	b := startServerData(t, cfg, bData)
	l := &load{user: user, k: k, instances: []*server{a, b}, state: map[string]*tracked{}}

	faults := []struct {
		name   string
		inject func(t *testing.T)
		heal   func(t *testing.T)
	}{
		{"postgres restarted", func(t *testing.T) { pg.restart(t) }, func(*testing.T) {}},
		{"s3 stalled", func(t *testing.T) {
			px.Set(faultproxy.Stall)
			wantStorageDown(t, a)
		}, func(*testing.T) { px.Set(faultproxy.Pass) }},
		{"s3 refused", func(t *testing.T) {
			px.Set(faultproxy.Refuse)
			wantStorageDown(t, a)
		}, func(*testing.T) { px.Set(faultproxy.Pass) }},
		{"instance killed (SIGKILL)", func(t *testing.T) {
			victim := l.instance(1)
			_ = victim.cmd.Process.Signal(syscall.SIGKILL)
			<-victim.done
			victim.stopped = true
			l.replace(1, nil)
		}, func(t *testing.T) { l.replace(1, startServerData(t, cfg, bData)) }},
	}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); l.work(ctx, w) }()
	}
	time.Sleep(time.Second)
	for _, f := range faults {
		before := l.snapshot()
		f.inject(t)
		time.Sleep(2 * time.Second)
		healed := time.Now()
		f.heal(t)
		recovered := l.recover(t, 30*time.Second).Sub(healed)
		time.Sleep(time.Second)
		after := l.snapshot()
		fmt.Printf("fault %-26s %5d requests %4d 5xx (%d of them 500) %4d failed  recovered in %.2f s\n", f.name+":",
			after.requests-before.requests, after.fivexx-before.fivexx, after.fiveHundreds-before.fiveHundreds,
			after.failed-before.failed, recovered.Seconds())
	}
	stop()
	wg.Wait()
	l.verify(t, pg.dsn, gw.url())
}

// wantStorageDown checks that /status answers within a second (the
// client's bound) with storage false while the blob store is down.
func wantStorageDown(t *testing.T, s *server) {
	t.Helper()
	c := &http.Client{Timeout: time.Second}
	status, body, _, err := rawDo(c, http.MethodGet, s.URL+"/status", nil, nil)
	if err != nil {
		t.Fatalf("GET /status while S3 is down: %v (it must answer within a second)", err)
	}
	var st struct {
		Database bool `json:"database"`
		Storage  bool `json:"storage"`
	}
	if err := json.Unmarshal(body, &st); err != nil || status != http.StatusServiceUnavailable || st.Storage || !st.Database {
		t.Fatalf("GET /status while S3 is down: %d %s; want 503 with storage false, database true", status, body)
	}
}

// load is the mixed workload: each worker owns the images it makes, so
// what each should hold is known exactly.
type load struct {
	user      string
	k         key
	mu        sync.Mutex
	instances []*server
	state     map[string]*tracked // by identifier

	requests, fivexx, failed atomic.Int64
	fiveHundreds             atomic.Int64 // 500s among the 5xx: errors not known as an outage
}

// tracked is what the test knows of one image: its bytes, and whether an
// acknowledged request last created it (present), deleted it (absent), or
// a failed request left it either way (unknown).
type tracked struct {
	data  []byte
	state string
}

type counts struct{ requests, fivexx, fiveHundreds, failed int64 }

func (l *load) snapshot() counts {
	return counts{l.requests.Load(), l.fivexx.Load(), l.fiveHundreds.Load(), l.failed.Load()}
}

func (l *load) instance(i int) *server {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.instances[i]
}

func (l *load) replace(i int, s *server) {
	l.mu.Lock()
	l.instances[i] = s
	l.mu.Unlock()
}

// do sends one request through instance i (the other when i is down).
func (l *load) do(i int, method, path string, body []byte, write bool) (int, []byte) {
	s := l.instance(i % 2)
	if s == nil {
		s = l.instance((i + 1) % 2)
	}
	u := s.URL + path
	var prepare func(*http.Request)
	if write {
		prepare = func(r *http.Request) { signWrite(r, l.k) }
	} else {
		u = signRead(u, l.k)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	status, b, _, err := rawDo(c, method, u, body, prepare)
	l.requests.Add(1)
	switch {
	case err != nil:
		l.failed.Add(1)
		return 0, nil
	case status >= 500:
		l.fivexx.Add(1)
		if status == http.StatusInternalServerError {
			l.fiveHundreds.Add(1)
		}
	}
	return status, b
}

func (l *load) set(id string, data []byte, state string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.state[id]
	if t == nil {
		t = &tracked{data: data}
		l.state[id] = t
	}
	t.state = state
}

// work runs one worker until ctx ends: upload new bytes, fetch a
// transformation, delete, upload the deleted bytes again.
func (l *load) work(ctx context.Context, w int) {
	images := "/users/" + l.user + "/images"
	var mine [][]byte // bytes this worker uploaded, present or not
	rng := rand.New(rand.NewPCG(uint64(w), 7))
	for n := 0; ctx.Err() == nil; n++ {
		switch n % 4 {
		case 0, 3: // a new image, or the bytes of an earlier one again
			data := pngBytes(w, n)
			if n%4 == 3 && len(mine) > 0 {
				data = mine[rng.IntN(len(mine))]
			} else {
				mine = append(mine, data)
			}
			id := md5Hex(data)
			l.mu.Lock()
			prev := "absent"
			if t := l.state[id]; t != nil {
				prev = t.state
			}
			l.mu.Unlock()
			status, _ := l.do(n, http.MethodPost, images, data, true)
			switch {
			case status == http.StatusCreated || status == http.StatusOK:
				l.set(id, data, "present")
			case prev != "present":
				l.set(id, data, "unknown")
			}
		case 1:
			if len(mine) == 0 {
				continue
			}
			id := md5Hex(mine[rng.IntN(len(mine))])
			l.do(n, http.MethodGet, images+"/"+id+".jpg?t[]=thumbnail:width=24,height=24&t[]=desaturate", nil, false)
		case 2:
			if len(mine) == 0 {
				continue
			}
			data := mine[rng.IntN(len(mine))]
			id := md5Hex(data)
			status, _ := l.do(n, http.MethodDelete, images+"/"+id, nil, true)
			switch status {
			case http.StatusOK, http.StatusNotFound:
				l.set(id, data, "absent")
			default:
				l.set(id, data, "unknown")
			}
		}
	}
}

// recover waits until an upload succeeds through every running instance and
// returns when.
func (l *load) recover(t *testing.T, limit time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(limit)
	for i := 0; ; i++ {
		ok := true
		for j := range 2 {
			data := pngBytes(100+j, i)
			status, _ := l.do(j, http.MethodPost, "/users/"+l.user+"/images", data, true)
			if status != http.StatusCreated && status != http.StatusOK {
				ok = false
				break
			}
			l.set(md5Hex(data), data, "present")
		}
		if ok {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("no upload succeeded through both instances within %s of the fault's end", limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// verify waits for the deletion queue to drain, then checks every tracked
// image through both instances and the listing, and runs fsck.
func (l *load) verify(t *testing.T, dsn, blobURL string) {
	db, err := storage.Open(t.Context(), dsn, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	blobs, err := storage.OpenBlobs(t.Context(), blobURL)
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	start := time.Now()
	for {
		q, err := db.QueueStats(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if q.Pending == 0 {
			break
		}
		if time.Since(start) > time.Minute {
			t.Fatalf("the blob queue did not drain within a minute: %+v", q)
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Printf("queue drained %.2f s after the load stopped\n", time.Since(start).Seconds())
	var lost, present, absent, unknown int
	images := "/users/" + l.user + "/images"
	for id, tr := range l.state {
		for i := range 2 {
			status, body := l.do(i, http.MethodGet, images+"/"+id, nil, false)
			switch {
			case status == http.StatusOK && md5Hex(body) != id:
				t.Errorf("image %s fetches other bytes through instance %d", id, i)
			case tr.state == "present" && status != http.StatusOK:
				lost++
				t.Errorf("acknowledged upload %s lost: GET through instance %d answers %d", id, i, status)
			case tr.state == "absent" && status != http.StatusNotFound:
				t.Errorf("deleted image %s answers %d through instance %d", id, status, i)
			case tr.state == "unknown" && status != http.StatusOK && status != http.StatusNotFound:
				t.Errorf("image %s answers %d through instance %d", id, status, i)
			}
		}
		switch tr.state {
		case "present":
			present++
		case "absent":
			absent++
		default:
			unknown++
		}
	}
	listed, withoutBytes := 0, 0
	for page := 1; ; page++ {
		status, body := l.do(0, http.MethodGet, fmt.Sprintf("%s.json?limit=100&page=%d", images, page), nil, false)
		if status != http.StatusOK {
			t.Fatalf("listing page %d: %d %s", page, status, body)
		}
		var list struct {
			Images []struct {
				ImageIdentifier string `json:"imageIdentifier"`
			} `json:"images"`
		}
		if err := json.Unmarshal(body, &list); err != nil {
			t.Fatal(err)
		}
		for _, img := range list.Images {
			listed++
			if status, _ := l.do(1, http.MethodGet, images+"/"+img.ImageIdentifier, nil, false); status != http.StatusOK {
				withoutBytes++
				t.Errorf("listed image %s answers %d", img.ImageIdentifier, status)
			}
		}
		if len(list.Images) < 100 {
			break
		}
	}
	rep, err := storage.Check(t.Context(), db, blobs, storage.CheckOptions{Grace: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	orphans := rep.OrphanImageBlobs.Count + rep.OrphanVariantBlobs.Count + rep.VariantsOfDeletedImages.Count
	fmt.Printf("after the faults: %d images tracked (%d acknowledged present, %d deleted, %d unknown), %d acknowledged uploads lost, "+
		"%d listed, %d listed without bytes, fsck: %d orphans, %d records without blob\n",
		len(l.state), present, absent, unknown, lost, listed, withoutBytes, orphans,
		rep.ImagesWithoutBlob.Count+rep.VariantsWithoutBlob.Count)
	if orphans != 0 || rep.ImagesWithoutBlob.Count != 0 {
		t.Errorf("fsck after the queue drained: %+v", rep)
	}
}

// pngBytes is a small PNG, different for every (worker, n): its first
// pixel spells them.
func pngBytes(w, n int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, 24, 16))
	for y := range 16 {
		for x := range 24 {
			img.Set(x, y, color.NRGBA{R: byte(x * 10), G: byte(y * 15), B: byte(w), A: 255})
		}
	}
	img.Set(0, 0, color.NRGBA{R: byte(w), G: byte(n >> 8), B: byte(n), A: 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err) // encoding to memory does not fail
	}
	return buf.Bytes()
}

// postgres is a PostgreSQL cluster this test made and runs on a loopback
// port.
type postgres struct {
	dir, bin, dsn string
	port          int
	asUser        []string // runuser prefix when running as root
}

// startPostgres makes and starts a cluster in a temporary directory, or
// skips when PostgreSQL's server binaries are not installed.
func startPostgres(t *testing.T) *postgres {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(bins) == 0 {
		t.Skip("PostgreSQL server binaries (initdb, pg_ctl) are not installed")
	}
	p := &postgres{bin: filepath.Dir(bins[len(bins)-1])}
	dir, err := os.MkdirTemp("", "vitrine-pg-")
	if err != nil {
		t.Fatal(err)
	}
	p.dir = dir
	t.Cleanup(func() { os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		// initdb refuses to run as root: the cluster belongs to postgres.
		if out, err := exec.Command("chown", "postgres", dir).CombinedOutput(); err != nil {
			t.Skipf("cannot give the cluster to the postgres user: %v %s", err, out)
		}
		p.asUser = []string{"runuser", "-u", "postgres", "--"}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.port = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	p.run(t, "initdb", "-D", filepath.Join(dir, "data"), "-A", "trust", "-U", "postgres", "--no-sync")
	p.run(t, "pg_ctl", p.ctlArgs("start")...)
	t.Cleanup(func() { _ = p.cmd("pg_ctl", "-D", filepath.Join(dir, "data"), "-m", "immediate", "stop").Run() })
	p.dsn = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", p.port)
	return p
}

func (p *postgres) ctlArgs(action string) []string {
	return []string{"-D", filepath.Join(p.dir, "data"), "-w", "-l", filepath.Join(p.dir, "log"),
		"-o", fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1", p.port, p.dir), action}
}

func (p *postgres) cmd(name string, args ...string) *exec.Cmd {
	argv := append(append([]string{}, p.asUser...), append([]string{filepath.Join(p.bin, name)}, args...)...)
	return exec.Command(argv[0], argv[1:]...)
}

func (p *postgres) run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := p.cmd(name, args...).CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(p.dir, "log"))
		t.Fatalf("%s: %v\n%s\n%s", name, err, out, log)
	}
}

// restart stops the server (fast: connections are cut) and starts it.
func (p *postgres) restart(t *testing.T) {
	t.Helper()
	p.run(t, "pg_ctl", append([]string{"-m", "fast"}, p.ctlArgs("restart")...)...)
}
