package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/jpeg"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// copySummary is what `vitrine copy --json` prints.
type copySummary struct {
	Passes []struct {
		Name        string  `json:"name"`
		Rows        int64   `json:"rows"`
		Inserted    int     `json:"inserted"`
		Updated     int     `json:"updated"`
		Deleted     int     `json:"deleted"`
		Blobs       int64   `json:"blobs"`
		CopiedBlobs int     `json:"copiedBlobs"`
		CopiedBytes int64   `json:"copiedBytes"`
		Seconds     float64 `json:"seconds"`
	} `json:"passes"`
	PauseSeconds     float64 `json:"pauseSeconds"`
	PauseWaitSeconds float64 `json:"pauseWaitSeconds"`
	Moved            bool    `json:"moved"`
	Seconds          float64 `json:"seconds"`
	Compare          *struct {
		Rows        int64 `json:"rows"`
		RowsDiffer  int   `json:"rowsDiffer"`
		Blobs       int64 `json:"blobs"`
		BlobsDiffer int   `json:"blobsDiffer"`
		BlobsSummed int   `json:"blobsSummed"`
	} `json:"compare"`
	Failed []string `json:"failed"`
	Error  string   `json:"error"`
}

// storeState is what the test expects a store to hold: each image's
// bytes (nil once deleted) and its last metadata.
type storeState struct {
	mu       sync.Mutex
	bodies   map[string][]byte
	metadata map[string]map[string]any
}

func (s *storeState) set(id string, body []byte, md map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if body != nil || md == nil {
		s.bodies[id] = body
	}
	if md != nil {
		s.metadata[id] = md
	}
}

// copyLoad is the mixed load on a store while it is copied: uploads,
// deletes and metadata changes, recorded in want when acknowledged, and
// renders, which must never fail.
type copyLoad struct {
	stop                    chan struct{}
	wg                      sync.WaitGroup
	paused, moved, readErrs atomic.Int64
	acked                   atomic.Int64
}

func startCopyLoad(t *testing.T, s *server, user string, k key, want *storeState, seeded []string) *copyLoad {
	l := &copyLoad{stop: make(chan struct{})}
	refused := func(status int, body []byte) bool {
		if status != http.StatusServiceUnavailable {
			return false
		}
		if bytes.Contains(body, []byte("copied to another")) {
			l.moved.Add(1)
		} else {
			l.paused.Add(1)
		}
		return true
	}
	for w := range 3 {
		l.wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-l.stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
				id := seeded[(i*3+w)%len(seeded)]
				switch w {
				case 0: // uploads
					body := append(testJPEG(t, 80+i%40, 50, byte(i)), byte(i), byte(i>>8), 'u')
					status, b, _, err := rawDo(client, http.MethodPost, s.URL+"/users/"+user+"/images", body, func(r *http.Request) { signWrite(r, k) })
					if err == nil && status == http.StatusCreated {
						want.set(md5Hex(body), body, nil)
						l.acked.Add(1)
					} else if err != nil || !refused(status, b) {
						t.Errorf("upload while copying: %d %s %v", status, b, err)
						return
					}
				case 1: // metadata
					md := map[string]any{"round": float64(i), "by": "load"}
					js, _ := json.Marshal(md)
					status, b, _, err := rawDo(client, http.MethodPut, s.URL+"/users/"+user+"/images/"+id+"/metadata", js, func(r *http.Request) {
						r.Header.Set("Content-Type", "application/json")
						signWrite(r, k)
					})
					switch {
					case err == nil && status == http.StatusOK:
						want.set(id, nil, md)
						l.acked.Add(1)
					case err == nil && status == http.StatusNotFound: // deleted by the other writer
					case err != nil || !refused(status, b):
						t.Errorf("metadata while copying: %d %s %v", status, b, err)
						return
					}
				case 2: // deletes of the seeded images, from the end
					id = seeded[len(seeded)-1-i%len(seeded)]
					status, b, _, err := rawDo(client, http.MethodDelete, s.URL+"/users/"+user+"/images/"+id, nil, func(r *http.Request) { signWrite(r, k) })
					switch {
					case err == nil && status == http.StatusOK:
						want.set(id, nil, nil)
						l.acked.Add(1)
					case err == nil && status == http.StatusNotFound:
					case err != nil || !refused(status, b):
						t.Errorf("delete while copying: %d %s %v", status, b, err)
						return
					}
					time.Sleep(40 * time.Millisecond)
				}
			}
		})
	}
	l.wg.Go(func() { // renders of images that are never deleted
		for i := 0; ; i++ {
			select {
			case <-l.stop:
				return
			default:
			}
			status, _, _, err := rawDo(client, http.MethodGet, signRead(s.URL+"/users/"+user+"/images/"+seeded[i%100]+".webp?t[]=thumbnail:width=40", k), nil, nil)
			if err != nil || status != http.StatusOK {
				l.readErrs.Add(1)
				t.Errorf("render while copying: %d %v", status, err)
			}
		}
	})
	return l
}

func (l *copyLoad) end() {
	close(l.stop)
	l.wg.Wait()
}

// verifyStore checks, through the server s, that every image of want is
// there with its bytes and its metadata, and that every deleted one is
// gone.
func verifyStore(t *testing.T, s *server, user string, k key, want *storeState) (present, deleted int) {
	t.Helper()
	for id, body := range want.bodies {
		r := s.get(t, "/users/"+user+"/images/"+id, k)
		if body == nil {
			wantStatus(t, "image deleted before the cutover", r, http.StatusNotFound)
			deleted++
			continue
		}
		if r.Status != http.StatusOK || !bytes.Equal(r.Body, body) {
			t.Fatalf("image %s on the copy: %d, %d bytes; want the %d bytes acknowledged", id, r.Status, len(r.Body), len(body))
		}
		present++
		if md, ok := want.metadata[id]; ok {
			var got map[string]any
			s.get(t, "/users/"+user+"/images/"+id+"/metadata", k).JSON(t, &got)
			if fmt.Sprint(got) != fmt.Sprint(md) {
				t.Fatalf("metadata of %s on the copy: %v, want %v", id, got, md)
			}
		}
	}
	return present, deleted
}

// countFiles counts the regular files under dir (a versitygw bucket).
func countFiles(dir string) int {
	n := 0
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			n++
		}
		return nil
	})
	return n
}

func copyCLI(t *testing.T, args ...string) copySummary {
	t.Helper()
	out, errOut, err := runCLI(t, nil, append([]string{"copy", "--json"}, args...)...)
	var s copySummary
	if jerr := json.Unmarshal([]byte(out), &s); jerr != nil || err != nil || s.Error != "" {
		t.Fatalf("vitrine copy %v: %v\n%s\n%s", args, err, out, errOut)
	}
	return s
}

// TestCopyToPostgresAndS3 moves a store of VITRINE_COPY_IMAGES images
// (default 2000; metadata, short URLs, variations, a webhook, a quota, a
// database key with a rule) on SQLite and files to PostgreSQL and S3
// (versitygw) while it takes uploads, deletes, metadata changes and
// renders: a first copy killed (SIGKILL) half-way, then a rerun with
// --cutover. Every change acknowledged (all were before the pause: the
// source answers 503 from then on) is on the copy, served by an instance
// on it; no render failed; the rerun did not copy again what the killed
// run had. Then the copy goes back from PostgreSQL and S3 to SQLite and
// files, while it serves, and is checked the same way.
func TestCopyToPostgresAndS3(t *testing.T) {
	dsn := postgresDSN(t)
	gw := startVersitygw(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "scale")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "scalesecret")
	n := 2000 // 5,000 for the numbers of e2e/README.md; 2,000 keeps CI, under -race, well inside its timeout
	if v, err := strconv.Atoi(os.Getenv("VITRINE_COPY_IMAGES")); err == nil && v > 0 {
		n = v
	}
	const user = "mover"
	admin := key{Public: "admin", Private: "admin-private"}
	common := fmt.Sprintf(`variations:
  minWidth: 16
  interval: 200ms
outbound:
  allow: [127.0.0.1]
accessControl:
  keys:
    - publicKey: %s
      privateKey: %s
      rules: [{users: ["*"], group: all}]
`, admin.Public, admin.Private)
	data := t.TempDir()
	s := startServerData(t, common, data)
	out := mustCLI(t, nil, "keys", "add", "dbkey", "--users", user, "--group", "read-write", "--config", s.Config, "--data", data)
	dbKey := key{Public: "dbkey", Private: printedPrivate(t, out)}
	bodies := make([][]byte, n)
	seeded := uploadMany(t, s, user, admin, n, func(i int) []byte {
		bodies[i] = append(testJPEG(t, 48+i%32, 32+i%16, byte(i)), byte(i), byte(i>>8), byte(i>>16))
		return bodies[i]
	})
	want := &storeState{bodies: map[string][]byte{}, metadata: map[string]map[string]any{}}
	for i, id := range seeded {
		want.bodies[id] = bodies[i]
		if i%10 == 0 {
			md := map[string]any{"i": float64(i), "name": fmt.Sprint("seed ", i)}
			wantStatus(t, "metadata", s.writeJSON(t, http.MethodPut, "/users/"+user+"/images/"+id+"/metadata", md, admin), http.StatusOK)
			want.metadata[id] = md
		}
	}
	var shorts []string
	for _, id := range seeded[:20] {
		r := s.writeJSON(t, http.MethodPost, "/users/"+user+"/images/"+id+"/shorturls",
			map[string]string{"user": user, "imageIdentifier": id, "extension": "png", "query": "t[]=desaturate"}, admin)
		wantStatus(t, "short URL", r, http.StatusCreated)
		var made struct{ ID string }
		r.JSON(t, &made)
		shorts = append(shorts, made.ID)
	}
	wantStatus(t, "webhook", s.writeJSON(t, http.MethodPost, "/webhooks", map[string]any{"url": "http://127.0.0.1:9/hook",
		"events": []string{"io.vitrine.image.*"}, "users": []string{user}}, admin), http.StatusCreated)
	wantStatus(t, "quota", s.writeJSON(t, http.MethodPut, "/users/"+user+"/quota", map[string]any{"images": 100000}, admin), http.StatusOK)

	target := fmt.Sprintf("database: %q\nstorage: %q\nsecret: the-copy-has-its-own\n%s", dsn, gw.url(), common)
	targetFile := filepath.Join(t.TempDir(), "target.yaml")
	if err := os.WriteFile(targetFile, []byte(target), 0o600); err != nil {
		t.Fatal(err)
	}
	load := startCopyLoad(t, s, user, admin, want, seeded)

	// A first copy, throttled, killed once it has copied some blobs.
	killed := exec.Command(binary, "copy", "--to", targetFile, "--rate", "1", "--config", s.Config, "--data", data)
	killed.Env = childEnv()
	if err := killed.Start(); err != nil {
		t.Fatal(err)
	}
	bucket := filepath.Join(gw.root, gw.bucket)
	for deadline := time.Now().Add(3 * time.Minute); countFiles(bucket) < n/5; {
		if time.Now().After(deadline) {
			t.Fatalf("the first copy wrote %d blobs in 3 minutes", countFiles(bucket))
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = killed.Process.Kill()
	_ = killed.Wait()
	atKill := countFiles(bucket)

	cut := copyCLI(t, "--to", targetFile, "--cutover", "--config", s.Config, "--data", data)
	time.Sleep(300 * time.Millisecond) // writes are refused from now on
	load.end()
	bulk := cut.Passes[0]
	if !cut.Moved || cut.Compare == nil || cut.Compare.RowsDiffer != 0 || cut.Compare.BlobsDiffer != 0 || load.moved.Load() == 0 {
		t.Fatalf("cutover: %+v, compare %+v; %d writes refused as moved", cut, cut.Compare, load.moved.Load())
	}
	if int64(bulk.CopiedBlobs) >= bulk.Blobs-int64(atKill)/2 {
		t.Fatalf("the rerun's first pass copied %d of %d blobs; the killed run had written %d", bulk.CopiedBlobs, bulk.Blobs, atKill)
	}
	t.Logf("copy of %d images: killed with %d blobs written; rerun passes %+v; writes paused %.2f s (%d writes waited it out or were refused, %d refused as moved); %d changes acknowledged during the copy; compare %+v",
		n, atKill, cut.Passes, cut.PauseSeconds, load.paused.Load(), load.moved.Load(), load.acked.Load(), *cut.Compare)
	r := s.get(t, "/users/"+user+"/images/"+seeded[0], admin)
	wantStatus(t, "a read from the moved source", r, http.StatusOK)
	// A sample of renders, to compare with the copy's.
	renders := map[string][]byte{}
	for i, id := range seeded[:10] {
		path := fmt.Sprintf("/users/%s/images/%s.png?t[]=thumbnail:width=%d&t[]=desaturate", user, id, 20+i)
		got := s.get(t, path, admin)
		wantStatus(t, "a render from the moved source", got, http.StatusOK)
		renders[path] = got.Body
	}
	s.Stop()

	// An instance on the copy serves every acknowledged change.
	c := startServerData(t, target, t.TempDir())
	present, deleted := verifyStore(t, c, user, admin, want)
	if deleted == 0 || present < n/2 {
		t.Fatalf("the copy holds %d images and %d deletions", present, deleted)
	}
	for _, id := range shorts {
		wantStatus(t, "short URL on the copy", c.do(t, http.MethodGet, "/s/"+id, nil, nil), http.StatusOK)
	}
	for path, want := range renders {
		if got := c.get(t, path, admin); got.Status != http.StatusOK || !bytes.Equal(got.Body, want) {
			t.Fatalf("render %s on the copy: %d, %d bytes; the source rendered %d", path, got.Status, len(got.Body), len(want))
		}
	}
	wantStatus(t, "the database key on the copy (sealed again with the copy's secret)", c.get(t, "/users/"+user+"/images/"+seeded[0], dbKey), http.StatusOK)
	hooks := c.get(t, "/webhooks", admin)
	if hooks.Status != http.StatusOK || !strings.Contains(string(hooks.Body), "127.0.0.1:9/hook") {
		t.Fatalf("webhooks on the copy: %s", hooks)
	}
	if q := c.get(t, "/users/"+user+"/quota", admin); q.Status != http.StatusOK || !strings.Contains(string(q.Body), "100000") {
		t.Fatalf("quota on the copy: %s", q)
	}
	wantStatus(t, "an upload on the copy", c.write(t, http.MethodPost, "/users/"+user+"/images", testPNG(t, 33, 21, 3), admin), http.StatusCreated)
	fsck := mustCLI(t, nil, "fsck", "--config", c.Config, "--data", c.DataDir)
	t.Logf("fsck of the copy:\n%s", fsck)

	// And back, from PostgreSQL and S3 to SQLite and files, while the
	// copy serves.
	back := t.TempDir()
	backFile := filepath.Join(back, "vitrine.yaml")
	if err := os.WriteFile(backFile, []byte(common), 0o600); err != nil {
		t.Fatal(err)
	}
	ret := copyCLI(t, "--to", backFile, "--to-data", back, "--cutover", "--config", c.Config, "--data", c.DataDir)
	if !ret.Moved || ret.Compare.RowsDiffer != 0 {
		t.Fatalf("copy back: %+v", ret)
	}
	c.Stop()
	b := startServerData(t, common, back)
	verifyStore(t, b, user, admin, want)
	wantStatus(t, "the database key back on SQLite", b.get(t, "/users/"+user+"/images/"+seeded[0], dbKey), http.StatusOK)
	t.Logf("copy back: passes %+v, writes paused %.2f s", ret.Passes, ret.PauseSeconds)
}

// noiseJPEG is a w x h JPEG of random pixels: about as many bytes as a
// photograph of that size.
func noiseJPEG(t *testing.T, w, h int, seed int64) []byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = byte(rng.UintN(256))
		if i%4 == 3 {
			img.Pix[i] = 255
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 85}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestCopyThroughput is the benchmark of e2e/README.md "Moving a store":
// VITRINE_COPY_BENCH images (photograph-sized JPEGs) on SQLite and files,
// copied to PostgreSQL and versitygw on loopback while the source serves
// idle, then a cutover while one writer uploads. It logs images/s, MB/s
// and the write pause.
func TestCopyThroughput(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("VITRINE_COPY_BENCH"))
	if n <= 0 {
		t.Skip("set VITRINE_COPY_BENCH=<images> (e.g. 2000) to run the copy benchmark")
	}
	dsn := postgresDSN(t)
	gw := startVersitygw(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "scale")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "scalesecret")
	admin := key{Public: "admin", Private: "admin-private"}
	cfg := fmt.Sprintf("accessControl:\n  keys:\n    - publicKey: %s\n      privateKey: %s\n      rules: [{users: [\"*\"], group: all}]\n", admin.Public, admin.Private)
	data := t.TempDir()
	s := startServerData(t, cfg, data)
	var total atomic.Int64
	uploadMany(t, s, "bench", admin, n, func(i int) []byte {
		b := noiseJPEG(t, 480, 360, int64(i))
		total.Add(int64(len(b)))
		return b
	})
	targetFile := filepath.Join(t.TempDir(), "target.yaml")
	if err := os.WriteFile(targetFile, []byte(fmt.Sprintf("database: %q\nstorage: %q\n%s", dsn, gw.url(), cfg)), 0o600); err != nil {
		t.Fatal(err)
	}
	one := copyCLI(t, "--to", targetFile, "--config", s.Config, "--data", data)
	p := one.Passes[0]
	t.Logf("bulk copy of %d images (%d bytes, %d rows): %.1f s, %.0f images/s, %.1f MB/s",
		n, p.CopiedBytes, p.Rows, p.Seconds, float64(n)/p.Seconds, float64(p.CopiedBytes)/1e6/p.Seconds)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			_, _, _, _ = rawDo(client, http.MethodPost, s.URL+"/users/bench/images", noiseJPEG(t, 64, 48, int64(n+i)), func(r *http.Request) { signWrite(r, admin) })
		}
	})
	cut := copyCLI(t, "--to", targetFile, "--cutover", "--config", s.Config, "--data", data)
	close(stop)
	wg.Wait()
	t.Logf("cutover with one writer: passes %+v; writes paused %.2f s (%.2f s waiting for the instance)", cut.Passes, cut.PauseSeconds, cut.PauseWaitSeconds)
}
