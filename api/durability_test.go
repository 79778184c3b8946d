package api_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/storage"
	"github.com/vitrine/vitrine/storage/storagetest"
)

// TestInterleavings forces the orders of concurrent requests that lost
// data before (storage/README.md "Several instances"): two API servers share one
// database and one bucket, and a gate on each server's blob store holds a
// chosen operation until the test lets it go, so the order is the test's,
// not the clock's. After each case every listed image fetches
// byte-identical through both servers, and once the queue drains fsck
// finds nothing. Every database runs with file and S3 blobs.
func TestInterleavings(t *testing.T) {
	dbs := map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "vitrine.db") },
		"postgres": func(t *testing.T) string { return storagetest.PostgresDSN(t) },
		"mysql":    func(t *testing.T) string { return storagetest.MySQLDSN(t) },
	}
	stores := map[string]func(t *testing.T) string{
		"file": func(t *testing.T) string { return "file://" + filepath.Join(t.TempDir(), "images") },
		"s3":   func(t *testing.T) string { return storagetest.S3URL(t) },
	}
	cases := []struct {
		name string
		fn   func(t *testing.T, a, b *instance)
	}{
		{"ReuploadWhileDeleteDrains", reuploadWhileDeleteDrains},
		{"ReuploadBeforeOldBlobGoes", reuploadBeforeOldBlobGoes},
		{"DeleteMissingWhileUploading", deleteMissingWhileUploading},
		{"UploadVsUploadSameBytes", uploadVsUpload},
		{"DeleteVsDelete", deleteVsDelete},
		{"DeleteVsRenderStore", deleteVsRenderStore},
		{"DeleteVsRenderRead", deleteVsRenderRead},
	}
	for _, dbName := range []string{"sqlite", "postgres", "mysql"} {
		for _, storeName := range []string{"file", "s3"} {
			t.Run(dbName+"-"+storeName, func(t *testing.T) {
				for _, c := range cases {
					t.Run(c.name, func(t *testing.T) {
						a, b := newPair(t, dbs[dbName](t), stores[storeName](t))
						c.fn(t, a, b)
						checkConsistent(t, a, b)
					})
				}
			})
		}
	}
}

// instance is one API server of a pair, with the gate on its blob store.
type instance struct {
	*env
	gate *gate
}

// newPair starts two API servers on one database and one bucket, each
// with its own connections, gate and (not running) collector.
func newPair(t *testing.T, dsn, blobURL string) (a, b *instance) {
	t.Helper()
	eng, err := engine.New(engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	start := func() *instance {
		db, err := storage.Open(t.Context(), dsn, storage.Options{Secret: []byte("test-secret")})
		if err != nil {
			t.Fatal(err)
		}
		blobs, err := storage.OpenBlobs(t.Context(), blobURL)
		if err != nil {
			t.Fatal(err)
		}
		g := &gate{}
		blobs.Intercept(g.intercept)
		coll, err := storage.NewCollector(db, blobs, storage.CollectorConfig{})
		if err != nil {
			t.Fatal(err)
		}
		srv, err := api.New(testConfig(), api.Deps{DB: db, Blobs: blobs, Engine: eng})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(checked(t, srv))
		t.Cleanup(func() {
			g.openAll()
			hs.Close()
			blobs.Close()
			db.Close()
		})
		return &instance{env: &env{t: t, url: hs.URL, db: db, blobs: blobs, srv: srv, coll: coll}, gate: g}
	}
	return start(), start()
}

// gate holds the blob operations a test names until it releases them.
type gate struct {
	mu    sync.Mutex
	holds []*hold
}

// hold is one held kind of operation.
type hold struct {
	op, keyPart string
	reached     chan struct{} // closed when the first matching operation arrives
	release     chan struct{} // closed by the test
	once        sync.Once
}

// hold makes the next operations op on a key containing keyPart wait.
func (g *gate) hold(op, keyPart string) *hold {
	h := &hold{op: op, keyPart: keyPart, reached: make(chan struct{}), release: make(chan struct{})}
	g.mu.Lock()
	g.holds = append(g.holds, h)
	g.mu.Unlock()
	return h
}

func (g *gate) intercept(ctx context.Context, op, key string) error {
	g.mu.Lock()
	var h *hold
	for _, x := range g.holds {
		if x.op == op && strings.Contains(key, x.keyPart) {
			h = x
			break
		}
	}
	g.mu.Unlock()
	if h == nil {
		return nil
	}
	h.once.Do(func() { close(h.reached) })
	select {
	case <-h.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// openAll releases every hold (at cleanup, so nothing stays blocked).
func (g *gate) openAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, h := range g.holds {
		select {
		case <-h.release:
		default:
			close(h.release)
		}
	}
	g.holds = nil
}

// wait blocks until an operation reached h.
func (h *hold) wait(t *testing.T) {
	t.Helper()
	select {
	case <-h.reached:
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s operation on a key containing %q arrived", h.op, h.keyPart)
	}
}

// let releases h's operations.
func (h *hold) let() { close(h.release) }

// async sends a request in the background; receive its answer from the
// channel.
func async(f func() response) <-chan response {
	c := make(chan response, 1)
	go func() { c <- f() }()
	return c
}

func receive(t *testing.T, c <-chan response) response {
	t.Helper()
	select {
	case r := <-c:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("no answer within 30 s")
		return response{}
	}
}

func wantCode(t *testing.T, what string, r response, codes ...int) {
	t.Helper()
	for _, c := range codes {
		if r.StatusCode == c {
			return
		}
	}
	t.Fatalf("%s: %d %s; want %v", what, r.StatusCode, r.body, codes)
}

func (i *instance) post(data []byte) response {
	return i.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, data)
}

func (i *instance) del(id string) response {
	return i.signed(http.MethodDelete, "/users/alice/images/"+id, userKey, userPriv, nil)
}

// reuploadWhileDeleteDrains is the reported loss: X is deleted through A
// while the same bytes are uploaded again through B, and A's blob deletion
// runs between B's blob write and B's commit.
func reuploadWhileDeleteDrains(t *testing.T, a, b *instance) {
	data := pngImage(t, 16, 12, 1)
	id := a.upload(data)
	wantCode(t, "delete", a.del(id), http.StatusOK)
	put := b.gate.hold("put", "images/alice/"+id)
	up := async(func() response { return b.post(data) })
	put.wait(t)
	a.drain() // the deleted upload's blob goes while B's write is held
	put.let()
	wantCode(t, "re-upload", receive(t, up), http.StatusCreated)
}

// reuploadBeforeOldBlobGoes: X is deleted through A, and A's collector
// takes the deletion but is held before it deletes the blob; meanwhile the
// same bytes are uploaded again through B and committed. The old blob's
// deletion must not take the new upload's bytes.
func reuploadBeforeOldBlobGoes(t *testing.T, a, b *instance) {
	data := pngImage(t, 16, 12, 7)
	id := a.upload(data)
	wantCode(t, "delete", a.del(id), http.StatusOK)
	del := a.gate.hold("delete", "images/alice/"+id)
	drained := async(func() response { a.drain(); return response{} })
	del.wait(t)
	wantCode(t, "re-upload", b.post(data), http.StatusCreated)
	del.let()
	receive(t, drained)
}

// deleteMissingWhileUploading: a DELETE of an identifier that does not
// exist yet arrives while its first upload writes its blob; it answers 404
// and touches nothing.
func deleteMissingWhileUploading(t *testing.T, a, b *instance) {
	data := pngImage(t, 16, 12, 2)
	put := b.gate.hold("put", "images/alice/")
	up := async(func() response { return b.post(data) })
	put.wait(t)
	wantCode(t, "delete before the upload commits", a.del(md5hex(data)), http.StatusNotFound)
	a.drain()
	put.let()
	wantCode(t, "upload", receive(t, up), http.StatusCreated)
}

// uploadVsUpload: the same bytes uploaded through both servers at once,
// both blob writes held until both arrived: one upload creates the image,
// the other answers with it, and the loser's blob is collected.
func uploadVsUpload(t *testing.T, a, b *instance) {
	data := pngImage(t, 16, 12, 3)
	pa, pb := a.gate.hold("put", "images/alice/"), b.gate.hold("put", "images/alice/")
	ra := async(func() response { return a.post(data) })
	rb := async(func() response { return b.post(data) })
	pa.wait(t)
	pb.wait(t)
	pa.let()
	pb.let()
	x, y := receive(t, ra), receive(t, rb)
	if x.StatusCode+y.StatusCode != http.StatusCreated+http.StatusOK {
		t.Fatalf("uploads answered %d and %d; want one 201 and one 200", x.StatusCode, y.StatusCode)
	}
}

// deleteVsDelete: both servers delete X at once; one answers 200, the other
// 404; both collectors drain at once while one blob deletion is held.
func deleteVsDelete(t *testing.T, a, b *instance) {
	data := pngImage(t, 16, 12, 4)
	id := a.upload(data)
	ra := async(func() response { return a.del(id) })
	rb := async(func() response { return b.del(id) })
	x, y := receive(t, ra), receive(t, rb)
	if x.StatusCode+y.StatusCode != http.StatusOK+http.StatusNotFound {
		t.Fatalf("deletes answered %d and %d; want one 200 and one 404", x.StatusCode, y.StatusCode)
	}
	del := a.gate.hold("delete", "images/alice/"+id)
	da := async(func() response { a.drain(); return response{} })
	del.wait(t)
	b.drain() // finds the row taken by A's collector and leaves it
	del.let()
	receive(t, da)
}

// deleteVsRenderStore: X is deleted while B stores the variant it has just
// rendered; the variant is answered but never recorded, and its blob goes.
func deleteVsRenderStore(t *testing.T, a, b *instance) {
	deleteDuringRender(t, a, b, "put", "variants/alice/", http.StatusOK)
}

// deleteVsRenderRead: X is deleted (and its blob with it) while B is about
// to read its bytes to render; B answers 404, and nothing is left.
func deleteVsRenderRead(t *testing.T, a, b *instance) {
	deleteDuringRender(t, a, b, "get", "images/alice/", http.StatusNotFound)
}

// deleteDuringRender deletes an image through A, and drains A's queue,
// while B's render of it is held at its blob operation op on the image's
// keys under prefix; B's render then answers want.
func deleteDuringRender(t *testing.T, a, b *instance, op, prefix string, want int) {
	id := a.upload(pngImage(t, 64, 48, byte(len(op)+len(prefix))))
	held := b.gate.hold(op, prefix+id)
	get := async(func() response {
		return b.get(b.tokenURL("/users/alice/images/"+id+".png?t[]=thumbnail:width=20", userPriv))
	})
	held.wait(t)
	wantCode(t, "delete during the render", a.del(id), http.StatusOK)
	a.drain()
	held.let()
	wantCode(t, "render of the deleted image", receive(t, get), want)
}

// checkConsistent drains both queues, then checks the invariant: every
// image either server lists fetches byte-identical through both (compared
// with what the first listing's checksum names), and fsck finds nothing.
func checkConsistent(t *testing.T, a, b *instance) {
	t.Helper()
	a.gate.openAll()
	b.gate.openAll()
	a.drain()
	b.drain()
	for _, i := range []*instance{a, b} {
		r := i.get(i.tokenURL("/users/alice/images", userPriv))
		wantCode(t, "listing", r, http.StatusOK)
		images, _ := r.json(t)["images"].([]any)
		for _, x := range images {
			id, _ := x.(map[string]any)["imageIdentifier"].(string)
			for _, j := range []*instance{a, b} {
				got := j.get(j.tokenURL("/users/alice/images/"+id, userPriv))
				if got.StatusCode != http.StatusOK || md5hex(got.body) != id {
					t.Fatalf("listed image %s fetches %d with %d bytes (md5 %s)", id, got.StatusCode, len(got.body), md5hex(got.body))
				}
			}
		}
	}
	rep, err := storage.Check(t.Context(), a.db, a.blobs, storage.CheckOptions{Grace: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Clean() || rep.Queue.Pending != 0 || rep.VariantBlobBytes != rep.VariantRecordBytes {
		t.Fatalf("fsck after the queue drained: %+v", rep)
	}
}

func md5hex(b []byte) string {
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:])
}
