package api_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/storage"
)

// tusConfig is tokenConfig with parts of the smallest size, so that a
// test image spans several.
func tusConfig() api.Config {
	cfg := tokenConfig()
	cfg.Uploads.PartSize = 64 << 10
	return cfg
}

// tusReq sends a tus request with an upload token (token != "") or signed
// as alice.
func (e *env) tusReq(method, path, token string, body []byte, headers ...string) response {
	e.t.Helper()
	h := append([]string{"Tus-Resumable", "1.0.0"}, headers...)
	if method == http.MethodPatch || (method == http.MethodPost && body != nil) {
		h = append(h, "Content-Type", "application/offset+octet-stream")
	}
	if token != "" {
		return e.request(method, e.url+path, body, append(h, "Authorization", "Bearer "+token)...)
	}
	return e.signed(method, path, userKey, userPriv, body, h...)
}

// createUpload creates a resumable upload of size bytes for alice and
// returns its path.
func (e *env) createUpload(token string, size int) string {
	e.t.Helper()
	r := e.tusReq(http.MethodPost, "/users/alice/uploads", token, nil, "Upload-Length", strconv.Itoa(size))
	if r.StatusCode != http.StatusCreated {
		e.t.Fatalf("create: %d %s", r.StatusCode, r.body)
	}
	loc := r.Header.Get("Location")
	if !strings.HasPrefix(loc, e.url+"/users/alice/uploads/") || r.Header.Get("Upload-Expires") == "" {
		e.t.Fatalf("create: Location %q, Upload-Expires %q", loc, r.Header.Get("Upload-Expires"))
	}
	return strings.TrimPrefix(loc, e.url)
}

// uploadParts lists what the blob store holds of resumable uploads.
func (e *env) uploadParts() []string {
	e.t.Helper()
	var keys []string
	if err := e.blobs.List(e.t.Context(), "uploads/", func(b storage.BlobInfo) error {
		if strings.Contains(b.Key, "/part/") {
			keys = append(keys, b.Key)
		}
		return nil
	}); err != nil {
		e.t.Fatal(err)
	}
	return keys
}

// TestTusUpload: an upload sent in three PATCHes, with a HEAD between,
// becomes the image a POST of the same bytes names; its parts are gone.
func TestTusUpload(t *testing.T) {
	e := newEnv(t, tusConfig())
	img := noisePNG(t, 400, 300)
	if len(img) < 3*(64<<10)/2 {
		t.Fatalf("test image of %d bytes spans too few parts", len(img))
	}
	for _, token := range []string{"", e.issue(map[string]any{"uploads": 2}).Token} {
		path := e.createUpload(token, len(img))
		half := len(img) / 2
		r := e.tusReq(http.MethodPatch, path, token, img[:half], "Upload-Offset", "0")
		if r.StatusCode != http.StatusNoContent || r.Header.Get("Upload-Offset") != strconv.Itoa(half) {
			t.Fatalf("first PATCH: %d offset %q %s", r.StatusCode, r.Header.Get("Upload-Offset"), r.body)
		}
		r = e.tusReq(http.MethodHead, path, token, nil)
		if r.StatusCode != http.StatusOK || r.Header.Get("Upload-Offset") != strconv.Itoa(half) ||
			r.Header.Get("Upload-Length") != strconv.Itoa(len(img)) {
			t.Fatalf("HEAD: %d offset %q length %q", r.StatusCode, r.Header.Get("Upload-Offset"), r.Header.Get("Upload-Length"))
		}
		r = e.tusReq(http.MethodPatch, path, token, img[half:], "Upload-Offset", strconv.Itoa(half))
		if r.StatusCode != http.StatusCreated && r.StatusCode != http.StatusOK {
			t.Fatalf("last PATCH: %d %s", r.StatusCode, r.body)
		}
		id := r.Header.Get("X-Service-ImageIdentifier")
		if id != md5Hex(img) || r.json(t)["imageIdentifier"] != id {
			t.Fatalf("last PATCH named %q (body %s), want %s", id, r.body, md5Hex(img))
		}
		if keys := e.uploadParts(); len(keys) != 0 {
			t.Fatalf("after the upload the store still holds %v", keys)
		}
		// A finished upload names its image (uploads.finishedTTL), for a
		// client that lost the last answer.
		if r := e.tusReq(http.MethodHead, path, token, nil); r.StatusCode != http.StatusOK ||
			r.Header.Get("X-Service-ImageIdentifier") != id || r.Header.Get("Upload-Offset") != strconv.Itoa(len(img)) {
			t.Fatalf("HEAD of a finished upload: %d %v", r.StatusCode, r.Header)
		}
	}
	got, err := e.blobs.Get(t.Context(), e.blobKey("alice", md5Hex(img)))
	if err != nil || string(got) != string(img) {
		t.Fatalf("stored bytes differ from the upload (%v)", err)
	}
}

// unavailable is a refusal a client is told to retry.
type unavailable struct{}

func (unavailable) Error() string         { return "test: the store is away" }
func (unavailable) HTTPStatus() int       { return http.StatusServiceUnavailable }
func (unavailable) PublicMessage() string { return "The blob store did not answer; try again later" }

// TestTusRetryKeepsTheUpload: a last PATCH answered 503 keeps the parts;
// the client's retry (tus-js-client sends a HEAD, finds every byte there)
// stores the image and names it, sending nothing again; afterwards HEAD
// and a PATCH of no bytes name it too, and the parts are gone.
func TestTusRetryKeepsTheUpload(t *testing.T) {
	e := newEnv(t, tusConfig())
	var fail atomic.Bool
	e.srv.Bus.On("images.post", 10, func(context.Context, *api.Event) error {
		if fail.Load() {
			return unavailable{}
		}
		return nil
	})
	img := pngImage(t, 64, 64, 9)
	path := e.createUpload("", len(img))
	half := len(img) / 2
	if r := e.tusReq(http.MethodPatch, path, "", img[:half], "Upload-Offset", "0"); r.StatusCode != http.StatusNoContent {
		t.Fatalf("first PATCH: %d %s", r.StatusCode, r.body)
	}
	fail.Store(true)
	if r := e.tusReq(http.MethodPatch, path, "", img[half:], "Upload-Offset", strconv.Itoa(half)); r.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("last PATCH with the store away: %d %s", r.StatusCode, r.body)
	}
	if len(e.uploadParts()) == 0 {
		t.Fatal("a 503 threw the upload's parts away")
	}
	fail.Store(false)
	r := e.tusReq(http.MethodHead, path, "", nil)
	if r.StatusCode != http.StatusCreated || r.Header.Get("X-Service-ImageIdentifier") != md5Hex(img) ||
		r.Header.Get("Upload-Offset") != strconv.Itoa(len(img)) {
		t.Fatalf("HEAD after the 503: %d %v", r.StatusCode, r.Header)
	}
	if got, err := e.blobs.Get(t.Context(), e.blobKey("alice", md5Hex(img))); err != nil || string(got) != string(img) {
		t.Fatalf("stored bytes differ from the upload (%v)", err)
	}
	if r := e.tusReq(http.MethodPatch, path, "", nil, "Upload-Offset", strconv.Itoa(len(img))); r.StatusCode != http.StatusOK ||
		r.json(t)["imageIdentifier"] != md5Hex(img) {
		t.Fatalf("PATCH of no bytes after the upload: %d %s", r.StatusCode, r.body)
	}
	if keys := e.uploadParts(); len(keys) != 0 {
		t.Fatalf("the parts are still there: %v", keys)
	}
	// Another user's path to it, even with a key that reaches every
	// user, finds no such upload, and neither does another upload token.
	other := strings.Replace(path, "/users/alice/", "/users/bob/", 1)
	for _, r := range []response{
		e.signed(http.MethodHead, other, adminKey, adminPriv, nil, "Tus-Resumable", "1.0.0"),
		e.tusReq(http.MethodHead, path, e.issue(map[string]any{}).Token, nil),
	} {
		if r.StatusCode != http.StatusNotFound || r.Header.Get("X-Service-ImageIdentifier") != "" {
			t.Errorf("HEAD of alice's finished upload by another: %d %v", r.StatusCode, r.Header)
		}
	}
}

// TestTusCreationWithUpload: a POST that carries every byte answers the
// image.
func TestTusCreationWithUpload(t *testing.T) {
	e := newEnv(t, tusConfig())
	img := pngImage(t, 64, 64, 3)
	r := e.tusReq(http.MethodPost, "/users/alice/uploads", "", img, "Upload-Length", strconv.Itoa(len(img)))
	if r.StatusCode != http.StatusCreated || r.Header.Get("X-Service-ImageIdentifier") != md5Hex(img) {
		t.Fatalf("creation with upload: %d %q %s", r.StatusCode, r.Header.Get("X-Service-ImageIdentifier"), r.body)
	}
	if keys := e.uploadParts(); len(keys) != 0 {
		t.Fatalf("the store still holds %v", keys)
	}
}

// TestTusRefusals: each bad request is a 4xx naming what was wrong, and
// nothing is stored.
func TestTusRefusals(t *testing.T) {
	e := newEnv(t, tusConfig())
	img := pngImage(t, 200, 200, 9)

	t.Run("offset mismatch", func(t *testing.T) {
		path := e.createUpload("", len(img))
		e.tusReq(http.MethodPatch, path, "", img[:100], "Upload-Offset", "0")
		r := e.tusReq(http.MethodPatch, path, "", img[50:150], "Upload-Offset", "50")
		wantRefusal(t, "PATCH at 50", r, http.StatusConflict, 140, "Upload-Offset 50 does not match the upload's offset 100")
		if r := e.tusReq(http.MethodHead, path, "", nil); r.Header.Get("Upload-Offset") != "100" {
			t.Errorf("offset after the refusal: %q, want 100", r.Header.Get("Upload-Offset"))
		}
		if r := e.tusReq(http.MethodDelete, path, "", nil); r.StatusCode != http.StatusNoContent {
			t.Errorf("DELETE: %d %s", r.StatusCode, r.body)
		}
	})
	t.Run("past the declared length", func(t *testing.T) {
		path := e.createUpload("", 100)
		r := e.tusReq(http.MethodPatch, path, "", img[:200], "Upload-Offset", "0")
		wantRefusal(t, "PATCH of 200 bytes", r, http.StatusRequestEntityTooLarge, 142, "past the upload's end")
		e.tusReq(http.MethodDelete, path, "", nil)
	})
	t.Run("not an image", func(t *testing.T) {
		junk := []byte(strings.Repeat("not an image ", 100))
		path := e.createUpload("", len(junk))
		r := e.tusReq(http.MethodPatch, path, "", junk, "Upload-Offset", "0")
		if r.StatusCode < 400 || r.StatusCode >= 500 || r.errMessage(t) == "" {
			t.Errorf("last PATCH of junk: %d %s", r.StatusCode, r.body)
		}
		if r := e.tusReq(http.MethodHead, path, "", nil); r.StatusCode != http.StatusNotFound {
			t.Errorf("HEAD after a refused upload: %d", r.StatusCode)
		}
	})
	t.Run("above the token's maxBytes", func(t *testing.T) {
		tok := e.issue(map[string]any{"maxBytes": 1000}).Token
		r := e.tusReq(http.MethodPost, "/users/alice/uploads", tok, nil, "Upload-Length", "5000")
		wantRefusal(t, "create", r, http.StatusRequestEntityTooLarge, 141, "Upload-Length 5000 is above the limit of 1000 bytes (the upload token's maxBytes)")
	})
	t.Run("token policy on the bytes", func(t *testing.T) {
		tok := e.issue(map[string]any{"formats": []string{"jpg"}}).Token
		path := e.createUpload(tok, len(img))
		r := e.tusReq(http.MethodPatch, path, tok, img, "Upload-Offset", "0")
		wantRefusal(t, "png with a jpg token", r, http.StatusUnsupportedMediaType, 203, "not accepted by the upload token")
	})
	t.Run("unknown and foreign uploads", func(t *testing.T) {
		r := e.tusReq(http.MethodHead, "/users/alice/uploads/0123456789abcdef0123456789abcdef", "", nil)
		if r.StatusCode != http.StatusNotFound || r.Header.Get("X-Service-Error-InternalCode") != "143" {
			t.Errorf("HEAD of an unknown upload: %d code %q", r.StatusCode, r.Header.Get("X-Service-Error-InternalCode"))
		}
		path := e.createUpload("", len(img))
		tok := e.issue(nil).Token
		r = e.tusReq(http.MethodPatch, path, tok, img, "Upload-Offset", "0")
		wantRefusal(t, "PATCH with another credential's token", r, http.StatusNotFound, 143, "Unknown upload")
		e.tusReq(http.MethodDelete, path, "", nil)
	})
	t.Run("protocol", func(t *testing.T) {
		r := e.signed(http.MethodPost, "/users/alice/uploads", userKey, userPriv, nil, "Upload-Length", "10")
		wantRefusal(t, "without Tus-Resumable", r, http.StatusPreconditionFailed, 146, "Tus-Resumable")
		r = e.tusReq(http.MethodPost, "/users/alice/uploads", "", nil, "Upload-Defer-Length", "1")
		wantRefusal(t, "deferred length", r, http.StatusBadRequest, 146, "Upload-Defer-Length is not supported")
		r = e.request(http.MethodPost, e.url+"/users/alice/uploads", nil, "Tus-Resumable", "1.0.0", "Upload-Length", "10")
		if r.StatusCode != http.StatusBadRequest {
			t.Errorf("unsigned create: %d %s", r.StatusCode, r.body)
		}
		r = e.request(http.MethodOptions, e.url+"/users/alice/uploads", nil)
		if r.StatusCode != http.StatusNoContent || r.Header.Get("Tus-Version") != "1.0.0" ||
			!strings.Contains(r.Header.Get("Tus-Extension"), "expiration") {
			t.Errorf("OPTIONS: %d %v", r.StatusCode, r.Header)
		}
	})
	if keys := e.uploadParts(); len(keys) != 0 {
		t.Errorf("the store still holds %v", keys)
	}
	if _, err := e.db.Image(t.Context(), "alice", md5Hex(img)); err == nil {
		t.Errorf("a refused upload was stored")
	}
}

// TestTusExpiry: past uploads.resumableTTL an upload answers 410, and a
// sweep deletes its parts.
func TestTusExpiry(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	cfg := tusConfig()
	cfg.Uploads.ResumableTTL = time.Minute // a shift the signatures' window allows
	e := newEnvWith(t, cfg, func(d *api.Deps) { d.Now = func() time.Time { return time.Unix(0, now.Load()) } })
	img := noisePNG(t, 200, 200)
	path := e.createUpload("", len(img))
	e.tusReq(http.MethodPatch, path, "", img[:1000], "Upload-Offset", "0")
	now.Add(int64(61 * time.Second))
	r := e.tusReq(http.MethodHead, path, "", nil)
	if r.StatusCode != http.StatusGone || r.Header.Get("X-Service-Error-InternalCode") != "144" {
		t.Fatalf("HEAD of an expired upload: %d %v", r.StatusCode, r.Header)
	}
	res := storage.NewResumable(e.blobs, 0)
	rep, err := res.Sweep(t.Context(), time.Unix(0, now.Load()), time.Hour, false)
	if err != nil || rep.Expired.Count != 1 || rep.Expired.Repaired != 0 {
		t.Fatalf("sweep: %+v %v", rep, err)
	}
	if rep, err = res.Sweep(t.Context(), time.Unix(0, now.Load()), time.Hour, true); err != nil || rep.Expired.Repaired != 1 {
		t.Fatalf("sweep with repair: %+v %v", rep, err)
	}
	if keys := e.uploadParts(); len(keys) != 0 {
		t.Fatalf("after the sweep the store still holds %v", keys)
	}
}

// TestTusConcurrentCompletionSpendsOnce: an upload whose bytes are all
// there but whose storing failed (503) is completed by four HEADs at once,
// as a client's retries racing each other do: it is stored once, one
// answer says 201 and the others 200 with the same image, and the upload
// token loses one use, not four.
func TestTusConcurrentCompletionSpendsOnce(t *testing.T) {
	e := newEnv(t, tusConfig())
	var fail atomic.Bool
	var entered atomic.Int32
	release := make(chan struct{})
	e.srv.Bus.On("images.post", 10, func(context.Context, *api.Event) error {
		if fail.Load() {
			return unavailable{}
		}
		// Hold the storing until the four HEADs are all in, or long
		// enough that those kept out are waiting on the first.
		if entered.Add(1) == 4 {
			close(release)
		}
		select {
		case <-release:
		case <-time.After(2 * time.Second):
		}
		return nil
	})
	tok := e.issue(map[string]any{"uploads": 5})
	img := pngImage(t, 64, 64, 11)
	path := e.createUpload(tok.Token, len(img))
	fail.Store(true)
	if r := e.tusReq(http.MethodPatch, path, tok.Token, img, "Upload-Offset", "0"); r.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("PATCH with the store away: %d %s", r.StatusCode, r.body)
	}
	fail.Store(false)
	answers := make(chan response, 4)
	for range 4 {
		go func() { answers <- e.tusReq(http.MethodHead, path, tok.Token, nil) }()
	}
	created := 0
	for range 4 {
		r := <-answers
		if r.StatusCode == http.StatusCreated {
			created++
		} else if r.StatusCode != http.StatusOK {
			t.Fatalf("HEAD: %d %s", r.StatusCode, r.body)
		}
		if got := r.Header.Get("X-Service-ImageIdentifier"); got != md5Hex(img) {
			t.Fatalf("HEAD named %q, want %s", got, md5Hex(img))
		}
	}
	if created != 1 {
		t.Errorf("%d of 4 answers said 201 Created; want 1", created)
	}
	stored, err := e.db.UploadToken(t.Context(), hashHex(tok.Token))
	if err != nil {
		t.Fatal(err)
	}
	if stored.UsesLeft != 4 {
		t.Errorf("the token has %d of 5 uses left after one upload; want 4", stored.UsesLeft)
	}
}
