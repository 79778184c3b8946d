package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/vitrine/vitrine/storage"
)

// wantQuotaRefusal checks a 403 with service error code 210 and message.
func wantQuotaRefusal(t *testing.T, what string, r response, message string) {
	t.Helper()
	if r.StatusCode != http.StatusForbidden {
		t.Fatalf("%s: %d %s; want 403", what, r.StatusCode, r.body)
	}
	e, _ := r.json(t)["error"].(map[string]any)
	if e["serviceErrorCode"] != float64(storage.QuotaErrorCode) || e["message"] != message ||
		r.Header.Get("X-Service-Error-Message") != message {
		t.Fatalf("%s: %s (header %q); want code %d, message %q", what, r.body, r.Header.Get("X-Service-Error-Message"), storage.QuotaErrorCode, message)
	}
}

// imageBlobs counts alice's image blobs on disk.
func imageBlobs(t *testing.T, e *env) int {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(e.dir, "images", "images", "alice"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return len(entries)
}

// TestQuotaUpload: uploads stop at the images quota with a 403 that names
// it, the usage and the limit, before any blob is written; the bytes the
// user has still answer 200; a user's own quota through the API lifts and
// lowers it, the bytes quota names the image's size; a file over the size
// limit stays a 413; GET /users/<user> shows usage and quotas.
func TestQuotaUpload(t *testing.T) {
	cfg := testConfig()
	cfg.Limits.MaxBodyBytes = 64 << 10
	e := newEnv(t, cfg)
	e.db.SetQuotas(storage.Quotas{Images: 2})
	first := pngImage(t, 40, 30, 1)
	e.upload(first)
	e.upload(pngImage(t, 40, 30, 2))
	r := e.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, pngImage(t, 40, 30, 3))
	wantQuotaRefusal(t, "third image", r, "Quota exceeded: 2 images of 2 (quotas.images)")
	if q, err := e.db.QueueStats(t.Context()); err != nil || q.Pending != 0 || imageBlobs(t, e) != 2 {
		t.Fatalf("the refused upload reserved or wrote a blob: queue %+v, %v; %d blobs", q, err, imageBlobs(t, e))
	}
	if r := e.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, first); r.StatusCode != http.StatusOK {
		t.Fatalf("bytes alice has, at the quota: %d %s; want 200", r.StatusCode, r.body)
	}
	big := make([]byte, 65<<10)
	if r := e.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, big); r.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("a file over the size limit at the quota: %d %s; want 413", r.StatusCode, r.body)
	}

	user := e.get(e.tokenURL("/users/alice", userPriv)).json(t)
	quota, _ := user["quota"].(map[string]any)
	usage, _ := user["usage"].(map[string]any)
	if quota["images"] != float64(2) || quota["bytes"] != float64(0) || usage["images"] != float64(2) || usage["bytes"] == float64(0) {
		t.Fatalf("GET /users/alice = %v", user)
	}
	stored := int64(usage["bytes"].(float64))

	r = e.signed(http.MethodPut, "/users/alice/quota", adminKey, adminPriv, []byte(`{"images": 3}`))
	if r.StatusCode != http.StatusOK {
		t.Fatalf("PUT quota: %d %s", r.StatusCode, r.body)
	}
	got := r.json(t)
	if q := got["quota"].(map[string]any); q["images"] != float64(3) {
		t.Fatalf("PUT quota answered %v", got)
	}
	if o := got["override"].(map[string]any); o["images"] != float64(3) || o["bytes"] != nil || got["updated"] == nil {
		t.Fatalf("PUT quota answered %v", got)
	}
	third := pngImage(t, 40, 30, 3)
	e.upload(third)

	r = e.signed(http.MethodPut, "/users/alice/quota", adminKey, adminPriv, []byte(fmt.Sprintf(`{"images": 0, "bytes": %d}`, stored+int64(len(third)))))
	if r.StatusCode != http.StatusOK {
		t.Fatalf("PUT quota: %d %s", r.StatusCode, r.body)
	}
	stored += int64(len(third))
	fourth := pngImage(t, 40, 30, 4)
	r = e.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, fourth)
	wantQuotaRefusal(t, "past the bytes quota", r,
		fmt.Sprintf("Quota exceeded: %d bytes of %d stored, and the image has %d (quotas.bytes)", stored, stored, len(fourth)))
}

// TestQuotaRaceUpload: 8 uploads at once for the last 3 places: exactly 3
// are stored, the others answer the quota's 403, and once the queue is
// drained no blob of a refused upload is left (those the commit refused
// had been written).
func TestQuotaRaceUpload(t *testing.T) {
	e := newEnv(t, testConfig())
	e.db.SetQuotas(storage.Quotas{Images: 3})
	const uploads = 8
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		created int
		errs    []string
	)
	for i := range uploads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := e.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, pngImage(t, 30, 20, uint8(i)))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case r.StatusCode == http.StatusCreated:
				created++
			case r.StatusCode != http.StatusForbidden || r.errMessage(t) != "Quota exceeded: 3 images of 3 (quotas.images)":
				errs = append(errs, fmt.Sprintf("upload %d: %d %s", i, r.StatusCode, r.body))
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 || created != 3 {
		t.Fatalf("%d of %d uploads stored with a quota of 3; other answers: %v", created, uploads, errs)
	}
	e.drain()
	if n := imageBlobs(t, e); n != 3 {
		t.Fatalf("%d image blobs after the drain, want 3", n)
	}
}

// TestQuotaRoutes: GET /users/<user>/quota for any user, by read-only
// keys too; PUT only with quota.put; bodies refused naming the quota;
// `{}` gives the defaults back.
func TestQuotaRoutes(t *testing.T) {
	e := newEnv(t, testConfig())
	e.db.SetQuotas(storage.Quotas{Images: 10, VariantsPerImage: 5})
	r := e.get(e.tokenURL("/users/bob/quota?publicKey=admin", adminPriv))
	if r.StatusCode != http.StatusOK {
		t.Fatalf("GET quota of a user with nothing: %d %s", r.StatusCode, r.body)
	}
	var q struct {
		User     string            `json:"user"`
		Quota    map[string]int64  `json:"quota"`
		Defaults map[string]int64  `json:"defaults"`
		Override map[string]*int64 `json:"override"`
		Updated  *string           `json:"updated"`
		Usage    map[string]int64  `json:"usage"`
	}
	if err := json.Unmarshal(r.body, &q); err != nil {
		t.Fatal(err)
	}
	if q.User != "bob" || q.Quota["images"] != 10 || q.Quota["variantsPerImage"] != 5 || q.Defaults["images"] != 10 ||
		q.Override["images"] != nil || q.Updated != nil || q.Usage["images"] != 0 {
		t.Fatalf("GET quota of bob = %s", r.body)
	}
	if r := e.get(e.tokenURL("/users/alice/quota.json?publicKey=reader", roPriv)); r.StatusCode != http.StatusOK {
		t.Fatalf("GET quota with read-only: %d %s", r.StatusCode, r.body)
	}
	if r := e.signed(http.MethodPut, "/users/alice/quota", userKey, userPriv, []byte(`{"images": 100}`)); r.StatusCode != http.StatusBadRequest ||
		!strings.HasPrefix(r.errMessage(t), "Permission denied (public key): the access rules of key ") {
		t.Fatalf("PUT quota with read-write: %d %s", r.StatusCode, r.body)
	}
	for _, c := range []struct{ body, message string }{
		{`{"images": -1}`, "Quota 'images' must be a whole number from 0 (unlimited) up, or null for the default; got -1"},
		{`{"bytes": 1.5}`, "Quota 'bytes' must be a whole number from 0 (unlimited) up, or null for the default; got 1.5"},
		{`{"variantsPerImage": "5"}`, `Quota 'variantsPerImage' must be a whole number from 0 (unlimited) up, or null for the default; got "5"`},
		{`{"pixels": 5}`, "Unknown quota 'pixels': the quotas are images, bytes, variantsPerImage"},
		{`[1]`, "Invalid JSON data"},
		{`null`, "The quota must be a JSON object of images, bytes, variantsPerImage"},
	} {
		r := e.signed(http.MethodPut, "/users/alice/quota", adminKey, adminPriv, []byte(c.body))
		if r.StatusCode != http.StatusBadRequest || r.errMessage(t) != c.message {
			t.Errorf("PUT %s: %d %s; want 400 %q", c.body, r.StatusCode, r.body, c.message)
		}
	}
	r = e.signed(http.MethodPut, "/users/alice/quota", adminKey, adminPriv, []byte(`{"images": 1, "bytes": null, "variantsPerImage": 0}`))
	if r.StatusCode != http.StatusOK {
		t.Fatalf("PUT quota: %d %s", r.StatusCode, r.body)
	}
	if err := json.Unmarshal(r.body, &q); err != nil {
		t.Fatal(err)
	}
	if q.Quota["images"] != 1 || q.Quota["variantsPerImage"] != 0 || q.Override["bytes"] != nil || *q.Override["variantsPerImage"] != 0 {
		t.Fatalf("PUT quota answered %s", r.body)
	}
	r = e.signed(http.MethodPut, "/users/alice/quota", adminKey, adminPriv, []byte(`{}`))
	q.Override, q.Updated = nil, nil
	if err := json.Unmarshal(r.body, &q); err != nil || r.StatusCode != http.StatusOK {
		t.Fatalf("PUT {}: %d %s", r.StatusCode, r.body)
	}
	if q.Quota["images"] != 10 || q.Override["images"] != nil || q.Updated != nil {
		t.Fatalf("PUT {} answered %s; want the defaults", r.body)
	}
}

// TestVariantQuotaAPI: an image's renders are cached up to the
// variants-per-image quota; past it they are answered, rendered, and not
// cached, while those cached stay hits.
func TestVariantQuotaAPI(t *testing.T) {
	e := newEnv(t, testConfig())
	e.db.SetQuotas(storage.Quotas{VariantsPerImage: 2})
	id := e.upload(pngImage(t, 80, 60, 1))
	fetch := func(width int, want string) {
		t.Helper()
		r := e.get(e.tokenURL(fmt.Sprintf("/users/alice/images/%s.png?t[]=resize:width=%d", id, width), userPriv))
		if r.StatusCode != http.StatusOK || r.Header.Get("X-Service-OutputWidth") != fmt.Sprint(width) {
			t.Fatalf("width %d: %d %v", width, r.StatusCode, r.Header)
		}
		if got := r.Header.Get("X-Service-TransformationCache"); got != want {
			t.Fatalf("width %d: cache %q, want %q", width, got, want)
		}
	}
	fetch(40, "Miss")
	fetch(41, "Miss")
	fetch(42, "Miss")
	fetch(42, "Miss") // not cached: the image has its 2
	fetch(40, "Hit")
	list := e.get(e.tokenURL("/users/alice/images/"+id+"/variants", userPriv)).json(t)
	if vs, _ := list["variants"].([]any); len(vs) != 2 {
		t.Fatalf("variants = %v; want 2", list)
	}
	e.drain()
	variants := filepath.Join(e.dir, "images", "variants", "alice")
	n := 0
	_ = filepath.WalkDir(variants, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	if n != 2 {
		t.Fatalf("%d variant blobs, want 2", n)
	}
	user := e.get(e.tokenURL("/users/alice", userPriv)).json(t)
	if u := user["usage"].(map[string]any); u["variants"] != float64(2) || u["maxVariantsPerImage"] != float64(2) {
		t.Fatalf("usage = %v", u)
	}
}
