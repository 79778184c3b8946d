package api_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/api/openapitest"
	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/storage"
)

func TestMain(m *testing.M) {
	code := m.Run()
	engine.Shutdown()
	os.Exit(code)
}

// env is a running service on a fresh SQLite database and file blob store.
type env struct {
	t     *testing.T
	url   string
	db    *storage.DB
	blobs *storage.Blobs
	dir   string
	srv   *api.Server
	// coll deletes queued blobs when a test calls drain; it does not run
	// by itself, so what a test sees queued stays until then.
	coll *storage.Collector
	// usage counts requests; a test calls its Flush to read the counts.
	usage *storage.Usage
}

// drain deletes every queued blob now.
func (e *env) drain() {
	e.t.Helper()
	if _, err := e.coll.Drain(e.t.Context()); err != nil {
		e.t.Fatal(err)
	}
}

// blobKey is the key of a stored image's bytes.
func (e *env) blobKey(user, id string) string {
	e.t.Helper()
	img, err := e.db.Image(e.t.Context(), user, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return img.Key()
}

// Keys used across the tests.
const (
	userKey   = "alice" // read-write on alice, key named like the user
	userPriv  = "alice-secret"
	roKey     = "reader" // read-only on alice
	roPriv    = "reader-secret"
	adminKey  = "admin" // everything on everyone
	adminPriv = "admin-secret"
)

func testConfig() api.Config {
	return api.Config{AccessControl: api.AccessControl{
		Keys: []api.ConfigKey{
			{PublicKey: userKey, PrivateKey: userPriv, Rules: []api.ConfigRule{{Users: api.Users{"alice"}, Group: "read-write"}}},
			{PublicKey: roKey, PrivateKey: roPriv, Rules: []api.ConfigRule{{Users: api.Users{"alice"}, Group: "read-only"}}},
			{PublicKey: adminKey, PrivateKey: adminPriv, Rules: []api.ConfigRule{{Users: api.Users{"*"}, Group: "all"}}},
		},
	}}
}

func newEnv(t *testing.T, cfg api.Config) *env {
	t.Helper()
	return newEnvWith(t, cfg, nil)
}

// newEnvWith is newEnv with the server's dependencies changed by with
// (when not nil) before the server is built.
func newEnvWith(t *testing.T, cfg api.Config, with func(*api.Deps)) *env {
	t.Helper()
	return newEnvOn(t, "", cfg, with)
}

// newEnvOn is newEnvWith on the database dsn ("": a fresh SQLite file).
func newEnvOn(t *testing.T, dsn string, cfg api.Config, with func(*api.Deps)) *env {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	if dsn == "" {
		dsn = "sqlite://" + filepath.Join(dir, "vitrine.db")
	}
	db, err := storage.Open(ctx, dsn, storage.Options{Secret: []byte("test-secret")})
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := storage.OpenBlobs(ctx, "file://"+filepath.Join(dir, "images"))
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	coll, err := storage.NewCollector(db, blobs, storage.CollectorConfig{})
	if err != nil {
		t.Fatal(err)
	}
	usage := storage.NewUsage(db, storage.UsageConfig{})
	deps := api.Deps{DB: db, Blobs: blobs, Engine: eng, Usage: usage}
	if with != nil {
		with(&deps)
	}
	srv, err := api.New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(checked(t, srv))
	t.Cleanup(func() {
		hs.Close()
		blobs.Close()
		db.Close()
	})
	return &env{t: t, url: hs.URL, db: db, blobs: blobs, dir: dir, srv: srv, coll: coll, usage: usage}
}

// otherInstance is a second server on e's database and blob store, as
// another instance of the service would be, with its dependencies changed
// by with (when not nil).
func (e *env) otherInstance(cfg api.Config, with func(*api.Deps)) *env {
	e.t.Helper()
	eng, err := engine.New(engine.Config{})
	if err != nil {
		e.t.Fatal(err)
	}
	deps := api.Deps{DB: e.db, Blobs: e.blobs, Engine: eng}
	if with != nil {
		with(&deps)
	}
	srv, err := api.New(cfg, deps)
	if err != nil {
		e.t.Fatal(err)
	}
	hs := httptest.NewServer(checked(e.t, srv))
	e.t.Cleanup(hs.Close)
	return &env{t: e.t, url: hs.URL, db: e.db, blobs: e.blobs, dir: e.dir, srv: srv, coll: e.coll, usage: deps.Usage}
}

// checked wraps srv so that every request and response of the test is
// validated against the API reference, api/openapi.yaml; a mismatch fails
// the test naming the route and what differs.
func checked(t *testing.T, srv http.Handler) http.Handler {
	t.Helper()
	c, err := openapitest.New()
	if err != nil {
		t.Fatal(err)
	}
	return c.Handler(t, srv)
}

func hmacHex(key, data string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(data))
	return hex.EncodeToString(m.Sum(nil))
}

// tokenURL appends a valid access token for the key to path (which may
// carry a query).
func (e *env) tokenURL(path, priv string) string {
	u := e.url + path
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + "accessToken=" + hmacHex(priv, u)
}

// response is a read response.
type response struct {
	*http.Response
	body []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, r.body)
	}
	return m
}

// errMessage returns error.message of an error body.
func (r response) errMessage(t *testing.T) string {
	t.Helper()
	e, _ := r.json(t)["error"].(map[string]any)
	msg, _ := e["message"].(string)
	return msg
}

func (e *env) do(req *http.Request) response {
	e.t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{res, b}
}

// get fetches a URL (already tokenised or not) with optional header pairs.
func (e *env) get(url string, headers ...string) response {
	e.t.Helper()
	return e.request(http.MethodGet, url, nil, headers...)
}

func (e *env) request(method, url string, body []byte, headers ...string) response {
	e.t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return e.do(req)
}

// signed sends a signed write as publicKey.
func (e *env) signed(method, path, pub, priv string, body []byte, headers ...string) response {
	e.t.Helper()
	u := e.url + path
	ts := time.Now().UTC().Format("2006-01-02T15:04:05Z")
	sig := hmacHex(priv, method+"|"+u+"|"+pub+"|"+ts)
	h := append([]string{"X-Service-PublicKey", pub, "X-Service-Authenticate-Timestamp", ts,
		"X-Service-Authenticate-Signature", sig}, headers...)
	return e.request(method, u, body, h...)
}

// upload adds an image for alice and returns its identifier.
func (e *env) upload(data []byte) string {
	e.t.Helper()
	r := e.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, data)
	if r.StatusCode != http.StatusCreated && r.StatusCode != http.StatusOK {
		e.t.Fatalf("upload: %d %s", r.StatusCode, r.body)
	}
	id, _ := r.json(e.t)["imageIdentifier"].(string)
	return id
}

// pngImage is a w x h PNG with a colour gradient (seeded so that different
// seeds give different bytes).
func pngImage(t *testing.T, w, h int, seed uint8) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.NRGBA{uint8(x * 255 / w), uint8(y * 255 / h), seed, 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func jpegImage(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.RGBA{uint8(x), uint8(y), 128, 255})
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
