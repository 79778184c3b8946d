package api_test

import (
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/storage"
)

// tokenConfig is testConfig with a key that may issue upload tokens for
// alice but not upload itself, and a one-hour uploads.tokenMaxTTL.
func tokenConfig() api.Config {
	cfg := testConfig()
	cfg.AccessControl.Keys = append(cfg.AccessControl.Keys, api.ConfigKey{PublicKey: "issuer", PrivateKey: "issuer-secret",
		Rules: []api.ConfigRule{{Users: api.Users{"alice"}, Resources: []string{"uploadtokens.post"}}}})
	cfg.Uploads.TokenMaxTTL = time.Hour
	return cfg
}

// issue asks for an upload token for alice as alice with body (nil: an
// empty body) and returns it.
func (e *env) issue(body any) api.UploadToken {
	e.t.Helper()
	r := e.issueAs(userKey, userPriv, "alice", body)
	if r.StatusCode != http.StatusCreated {
		e.t.Fatalf("issue %v: %d %s", body, r.StatusCode, r.body)
	}
	var tok api.UploadToken
	if err := json.Unmarshal(r.body, &tok); err != nil {
		e.t.Fatal(err)
	}
	return tok
}

func (e *env) issueAs(pub, priv, user string, body any) response {
	e.t.Helper()
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			e.t.Fatal(err)
		}
	}
	return e.signed(http.MethodPost, "/users/"+user+"/uploadtokens", pub, priv, b)
}

// bearer uploads data for user with the token in the Authorization header.
func (e *env) bearer(user, token string, data []byte, headers ...string) response {
	e.t.Helper()
	return e.request(http.MethodPost, e.url+"/users/"+user+"/images", data,
		append([]string{"Authorization", "Bearer " + token}, headers...)...)
}

// form uploads files for user as a browser's form post does, with the
// token in the query; fields are extra text fields.
func (e *env) form(user, token string, files [][]byte, fields ...string) response {
	e.t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for i := 0; i+1 < len(fields); i += 2 {
		if err := w.WriteField(fields[i], fields[i+1]); err != nil {
			e.t.Fatal(err)
		}
	}
	for i, f := range files {
		part, err := w.CreateFormFile("file", fmt.Sprintf("photo%d.png", i))
		if err != nil {
			e.t.Fatal(err)
		}
		part.Write(f)
	}
	w.Close()
	u := e.url + "/users/" + user + "/images"
	if token != "" {
		u += "?uploadToken=" + token
	}
	return e.request(http.MethodPost, u, b.Bytes(), "Content-Type", w.FormDataContentType())
}

// errCode returns error.serviceErrorCode of an error body.
func (r response) errCode(t *testing.T) int {
	t.Helper()
	e, _ := r.json(t)["error"].(map[string]any)
	n, _ := e["serviceErrorCode"].(float64)
	return int(n)
}

// wantRefusal checks an error answer's status, service error code and
// message.
func wantRefusal(t *testing.T, what string, r response, status, code int, msg string) {
	t.Helper()
	if r.StatusCode != status || r.errCode(t) != code || !strings.Contains(r.errMessage(t), msg) {
		t.Errorf("%s: %d code %d %q, want %d code %d containing %q", what, r.StatusCode, r.errCode(t), r.errMessage(t), status, code, msg)
	}
	if status == http.StatusUnauthorized && !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), `Bearer error="invalid_token"`) {
		t.Errorf("%s: WWW-Authenticate %q, want a Bearer invalid_token challenge", what, r.Header.Get("WWW-Authenticate"))
	}
}

// TestUploadTokenIssue: POST .../uploadtokens answers a fresh token with
// the policy asked for, the server's limits filling in what is left out,
// stores only its hash, audits it, and refuses a policy past the limits
// and a key that may not upload itself.
func TestUploadTokenIssue(t *testing.T) {
	e := newEnv(t, tokenConfig())
	before := time.Now().Truncate(time.Second)
	r := e.issueAs(userKey, userPriv, "alice", nil)
	if r.StatusCode != http.StatusCreated || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("empty body: %d %s, Cache-Control %q", r.StatusCode, r.body, r.Header.Get("Cache-Control"))
	}
	var def api.UploadToken
	if err := json.Unmarshal(r.body, &def); err != nil {
		t.Fatal(err)
	}
	exp, err := http.ParseTime(def.Expires)
	if err != nil || exp.Before(before.Add(15*time.Minute)) || exp.After(time.Now().Add(15*time.Minute)) {
		t.Errorf("expires %q (%v), want 15 minutes from now", def.Expires, err)
	}
	if !strings.HasPrefix(def.Token, "vut_") || len(def.Token) != 47 || len(def.ID) != 16 || def.Uploads != 1 ||
		def.MaxBytes != 64<<20 || def.MaxPixels != 100_000_000 || !slices.Equal(def.Formats, []string{"jpg", "png", "gif", "webp"}) ||
		len(def.Metadata) != 0 || def.Origin != "" {
		t.Errorf("defaults: %+v", def)
	}
	tok := e.issue(map[string]any{"uploads": 3, "maxBytes": 1000, "maxPixels": 5000, "expiresIn": 3600,
		"formats": []string{"png", "JPEG"}, "metadata": map[string]any{"album": "summer", "n": 1},
		"origin": "HTTPS://App.Example:443"})
	if tok.Uploads != 3 || tok.MaxBytes != 1000 || tok.MaxPixels != 5000 || !slices.Equal(tok.Formats, []string{"jpg", "png"}) ||
		tok.Metadata["album"] != "summer" || tok.Origin != "https://app.example" || tok.Token == def.Token || tok.ID == def.ID {
		t.Errorf("policy: %+v", tok)
	}

	sum := sha256.Sum256([]byte(tok.Token))
	var stored int
	if err := e.db.SQL().QueryRow("SELECT COUNT(*) FROM upload_tokens WHERE hash = ?", hex.EncodeToString(sum[:])).Scan(&stored); err != nil || stored != 1 {
		t.Fatalf("rows with the token's hash: %d, %v", stored, err)
	}
	var leaked int
	if err := e.db.SQL().QueryRow("SELECT COUNT(*) FROM upload_tokens WHERE id = ? OR hash = ? OR metadata LIKE ?",
		tok.Token, tok.Token, "%"+tok.Token[4:]+"%").Scan(&leaked); err != nil || leaked != 0 {
		t.Fatalf("the token itself is stored: %d, %v", leaked, err)
	}
	entries, _, err := e.db.AuditLog(t.Context(), storage.AuditQuery{Action: "uploadtoken.create"})
	if err != nil || len(entries) != 2 || entries[0].Actor != userKey || entries[0].Target != "alice/uploadtokens/"+tok.ID ||
		entries[0].Detail["origin"] != "https://app.example" {
		t.Fatalf("audit: %+v, %v", entries, err)
	}

	for _, c := range []struct {
		body any
		msg  string
	}{
		{map[string]any{"uploads": 0}, "uploads must be from 1 to 10000, got 0"},
		{map[string]any{"maxBytes": 64<<20 + 1}, "maxBytes must be from 1 to 67108864 (limits.maxBodyBytes)"},
		{map[string]any{"maxPixels": 100_000_001}, "maxPixels must be from 1 to 100000000 (limits.maxPixels)"},
		{map[string]any{"expiresIn": 3601}, "expiresIn must be from 1 to 3600 seconds (uploads.tokenMaxTTL)"},
		{map[string]any{"formats": []string{"bmp"}}, "format 'bmp' is not accepted for upload (uploads.formats: jpg, png, gif, webp)"},
		{map[string]any{"formats": []string{}}, "formats must name at least one image type"},
		{map[string]any{"metadata": map[string]any{"a.b": 1}}, "Dot characters"},
		{map[string]any{"origin": "ftp://app.example"}, "origin must be a browser origin"},
		{map[string]any{"origin": "https://app.example/upload"}, "origin must be a browser origin"},
		{map[string]any{"size": 10}, `Unknown field "size" in the upload token request (the fields are uploads, maxBytes,`},
		{map[string]any{"uploads": "2"}, "Invalid 'uploads' in the upload token request: want a whole number"},
		{[]int{1}, "Invalid JSON data"},
	} {
		r := e.issueAs(userKey, userPriv, "alice", c.body)
		if r.StatusCode != http.StatusBadRequest || !strings.Contains(r.errMessage(t), c.msg) {
			t.Errorf("%v: %d %q, want 400 containing %q", c.body, r.StatusCode, r.errMessage(t), c.msg)
		}
	}
	r = e.issueAs(roKey, roPriv, "alice", nil)
	if r.StatusCode != http.StatusBadRequest || !strings.HasPrefix(r.errMessage(t), "Permission denied (public key): the access rules of key ") {
		t.Errorf("read-only key: %d %s", r.StatusCode, r.body)
	}
	r = e.issueAs("issuer", "issuer-secret", "alice", nil)
	if r.StatusCode != http.StatusForbidden || !strings.Contains(r.errMessage(t), "may not upload images for alice (images.post)") {
		t.Errorf("key without images.post: %d %s", r.StatusCode, r.body)
	}
	r = e.signed(http.MethodPost, "/users/alice/uploadtokens", userKey, userPriv, nil, "X-Service-Authenticate-Signature", "0000")
	if r.StatusCode != http.StatusBadRequest || r.errCode(t) != 103 {
		t.Errorf("bad signature: %d %s", r.StatusCode, r.body)
	}
}

// TestUploadWithToken: an upload with the token alone (Bearer, or a
// browser form with ?uploadToken=) is stored as the issuing key's, with the
// token's metadata and its id in the audit entry; each upload spends one
// use, the same bytes again too, and the token's count ends it.
func TestUploadWithToken(t *testing.T) {
	e := newEnv(t, tokenConfig())
	tok := e.issue(map[string]any{"uploads": 3, "metadata": map[string]any{"album": "summer"}})
	img := pngImage(t, 30, 20, 1)
	r := e.bearer("alice", tok.Token, img)
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("Bearer upload: %d %s", r.StatusCode, r.body)
	}
	id, _ := r.json(t)["imageIdentifier"].(string)
	if r.Header.Get("X-Service-ImageIdentifier") != id || r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("headers %v", r.Header)
	}
	md := e.get(e.tokenURL("/users/alice/images/"+id+"/metadata", userPriv)).json(t)
	if md["album"] != "summer" {
		t.Errorf("metadata %v, want the token's", md)
	}
	entries, _, err := e.db.AuditLog(t.Context(), storage.AuditQuery{Action: "image.create"})
	if err != nil || len(entries) != 1 || entries[0].Actor != userKey || entries[0].Detail["uploadToken"] != tok.ID ||
		entries[0].Target != "alice/"+id {
		t.Fatalf("audit: %+v, %v; want alice's upload naming token %s", entries, err, tok.ID)
	}
	if r := e.bearer("alice", tok.Token, img); r.StatusCode != http.StatusOK {
		t.Fatalf("the same bytes again: %d %s, want 200", r.StatusCode, r.body)
	}
	r = e.form("alice", tok.Token, [][]byte{pngImage(t, 30, 20, 2)}, "submit", "Upload")
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("form upload: %d %s", r.StatusCode, r.body)
	}
	r = e.bearer("alice", tok.Token, pngImage(t, 30, 20, 3))
	wantRefusal(t, "fourth upload of a 3-use token", r, http.StatusUnauthorized, 113, "Upload token is used up: it allowed 3 uploads")
	page := e.get(e.tokenURL("/users/alice/images", userPriv)).json(t)
	if hits := page["search"].(map[string]any)["hits"]; hits != 2.0 {
		t.Errorf("alice has %v images, want 2", hits)
	}
}

// TestUploadTokenRefusals: each refusal says why, with its status and
// service error code, and stores nothing; a refused upload leaves the
// token's uses as they were.
func TestUploadTokenRefusals(t *testing.T) {
	e := newEnv(t, tokenConfig())
	img := pngImage(t, 30, 20, 9)
	tok := e.issue(nil)

	expired := storage.UploadToken{ID: "expired0", Hash: hashHex("vut_expired"), User: "alice", PublicKey: userKey, Uses: 1,
		MaxBytes: 1000, MaxPixels: 1000, Formats: []string{"png"}, Created: time.Now().Add(-2 * time.Hour), Expires: time.Now().Add(-time.Hour)}
	if err := e.db.CreateUploadToken(t.Context(), expired); err != nil {
		t.Fatal(err)
	}
	revoked := e.issue(nil)
	if r := e.signed(http.MethodDelete, "/users/alice/uploadtokens/"+revoked.Token, userKey, userPriv, nil); r.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %d %s", r.StatusCode, r.body)
	}
	if _, err := e.db.CreateKey(t.Context(), storage.Key{PublicKey: "temp", PrivateKey: "temp-secret"},
		[]storage.Rule{{Group: "read-write", Users: []string{"alice"}}}); err != nil {
		t.Fatal(err)
	}
	r := e.issueAs("temp", "temp-secret", "alice", nil)
	var orphan api.UploadToken
	if err := json.Unmarshal(r.body, &orphan); err != nil || r.StatusCode != http.StatusCreated {
		t.Fatalf("issue as temp: %d %s", r.StatusCode, r.body)
	}
	if err := e.db.DeleteKey(t.Context(), "temp"); err != nil {
		t.Fatal(err)
	}
	bound := e.issue(map[string]any{"origin": "https://app.example"})
	small := e.issue(map[string]any{"maxBytes": 100, "maxPixels": 500, "formats": []string{"jpg"}})

	cases := []struct {
		name         string
		send         func() response
		status, code int
		msg          string
	}{
		{"unknown", func() response { return e.bearer("alice", "vut_"+strings.Repeat("A", 43), img) },
			http.StatusUnauthorized, 110, "Unknown upload token"},
		{"unknown in the query", func() response { return e.form("alice", "nonsense", [][]byte{img}) },
			http.StatusUnauthorized, 110, "Unknown upload token"},
		{"expired", func() response { return e.bearer("alice", "vut_expired", img) },
			http.StatusUnauthorized, 111, "Upload token expired at " + expired.Expires.UTC().Format(http.TimeFormat)},
		{"revoked", func() response { return e.bearer("alice", revoked.Token, img) },
			http.StatusUnauthorized, 112, "Upload token was revoked at"},
		{"another user's", func() response { return e.bearer("bob", tok.Token, img) },
			http.StatusForbidden, 114, "Upload token is for user alice, not bob"},
		{"reading the listing", func() response {
			return e.get(e.url + "/users/alice/images?uploadToken=" + tok.Token)
		}, http.StatusForbidden, 115, "An upload token authorises only uploads"},
		{"deleting an image", func() response {
			return e.request(http.MethodDelete, e.url+"/users/alice/images/abc", nil, "Authorization", "Bearer "+tok.Token)
		}, http.StatusForbidden, 115, "An upload token authorises only uploads"},
		{"writing metadata", func() response {
			return e.request(http.MethodPut, e.url+"/users/alice/images/abc/metadata", []byte(`{}`), "Authorization", "Bearer "+tok.Token)
		}, http.StatusForbidden, 115, "An upload token authorises only uploads"},
		{"issuing tokens", func() response {
			return e.request(http.MethodPost, e.url+"/users/alice/uploadtokens", nil, "Authorization", "Bearer "+tok.Token)
		}, http.StatusForbidden, 115, "An upload token authorises only uploads"},
		{"from another origin", func() response { return e.bearer("alice", bound.Token, img, "Origin", "https://evil.example") },
			http.StatusForbidden, 116, "Upload token is for pages on https://app.example, not https://evil.example"},
		{"issuer deleted", func() response { return e.bearer("alice", orphan.Token, img) },
			http.StatusForbidden, 117, "The key that issued this upload token, temp, may no longer upload images for alice"},
		{"past its bytes", func() response { return e.bearer("alice", small.Token, img) },
			http.StatusRequestEntityTooLarge, 0, "Image too large for the upload token: it allows at most 100 bytes"},
		{"past its bytes, in a form", func() response { return e.form("alice", small.Token, [][]byte{img}) },
			http.StatusRequestEntityTooLarge, 0, "Image too large for the upload token: it allows at most 100 bytes"},
		{"a type it does not take", func() response { return e.bearer("alice", small.Token, pngImage(t, 2, 2, 1)) },
			http.StatusUnsupportedMediaType, 203, "Image type png is not accepted by the upload token (it accepts jpg)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantRefusal(t, c.name, c.send(), c.status, c.code, c.msg)
		})
	}
	pixels := e.issue(map[string]any{"maxPixels": 500})
	wantRefusal(t, "past its pixels", e.bearer("alice", pixels.Token, img), http.StatusRequestEntityTooLarge, 0,
		"Image too large for the upload token: 30x20 is 600 pixels; it allows at most 500")
	page := e.get(e.tokenURL("/users/alice/images", userPriv)).json(t)
	if hits := page["search"].(map[string]any)["hits"]; hits != 0.0 {
		t.Fatalf("refused uploads stored %v images", hits)
	}
	// A refused upload spent nothing: the 1-use token still uploads.
	for _, tk := range []api.UploadToken{tok, pixels} {
		if r := e.bearer("alice", tk.Token, pngImage(t, 20, 20, byte(len(tk.ID)))); r.StatusCode != http.StatusCreated && r.StatusCode != http.StatusOK {
			t.Errorf("the token after refused uploads: %d %s", r.StatusCode, r.body)
		}
	}
	// Another Bearer credential alone is taken for a mistyped token; with
	// a signature it is a proxy's, and the signature is what counts.
	r = e.request(http.MethodPost, e.url+"/users/alice/images", img, "Authorization", "Bearer gateway-token")
	if r.StatusCode != http.StatusUnauthorized || r.errCode(t) != 110 ||
		!strings.HasPrefix(r.errMessage(t), "Unknown upload token: the Bearer credential is not an upload token (those start with vut_); issue one with POST /users/alice/uploadtokens") {
		t.Errorf("foreign Bearer: %d %s, want the token refusal", r.StatusCode, r.body)
	}
	r = e.request(http.MethodPost, e.url+"/users/alice/images", img, "Authorization", "Bearer gateway-token",
		"X-Service-Authenticate-Timestamp", time.Now().UTC().Format("2006-01-02T15:04:05Z"))
	if r.StatusCode != http.StatusBadRequest || r.errCode(t) != 101 {
		t.Errorf("foreign Bearer with a timestamp: %d %s, want the missing signature", r.StatusCode, r.body)
	}
}

func hashHex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func md5Hex(b []byte) string {
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:])
}

// TestUploadTokenSingleUseConcurrent: of concurrent uploads with a 1-use
// token, exactly one is stored; the others are told it is used up, and
// the blobs they wrote are collected.
func TestUploadTokenSingleUseConcurrent(t *testing.T) {
	e := newEnv(t, tokenConfig())
	tok := e.issue(nil)
	const n = 8
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		statuses []int
		start    = make(chan struct{})
	)
	for i := range n {
		img := pngImage(t, 40, 30, byte(i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			req, err := http.NewRequest(http.MethodPost, e.url+"/users/alice/images", bytes.NewReader(img))
			if err != nil {
				t.Error(err)
				return
			}
			req.Header.Set("Authorization", "Bearer "+tok.Token)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			res.Body.Close()
			mu.Lock()
			statuses = append(statuses, res.StatusCode)
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	slices.Sort(statuses)
	want := append([]int{http.StatusCreated}, slices.Repeat([]int{http.StatusUnauthorized}, n-1)...)
	if !slices.Equal(statuses, want) {
		t.Fatalf("statuses %v, want one 201 and %d 401", statuses, n-1)
	}
	e.drain()
	var blobs []string
	if err := e.blobs.List(t.Context(), "images/alice/", func(b storage.BlobInfo) error {
		blobs = append(blobs, b.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	page := e.get(e.tokenURL("/users/alice/images", userPriv)).json(t)
	if hits := page["search"].(map[string]any)["hits"]; hits != 1.0 || len(blobs) != 1 {
		t.Fatalf("%v images and blobs %v, want the one that won", hits, blobs)
	}
}

// TestUploadTokenCORS: a browser's preflight of a token upload is answered
// for any origin (CORS otherwise off); the upload itself is readable by
// the token's origin, refused from another, and readable by any page for
// a token that names none.
func TestUploadTokenCORS(t *testing.T) {
	e := newEnv(t, tokenConfig())
	pre := e.request(http.MethodOptions, e.url+"/users/alice/images", nil, "Origin", "https://app.example",
		"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization, content-type")
	h := pre.Header
	if pre.StatusCode != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		h.Get("Access-Control-Allow-Methods") != "OPTIONS, POST" || !strings.Contains(h.Get("Access-Control-Allow-Headers"), "Authorization") ||
		h.Get("Access-Control-Max-Age") != "3600" || !strings.Contains(h.Get("Vary"), "Origin") {
		t.Fatalf("preflight: %d %v", pre.StatusCode, h)
	}
	query := e.request(http.MethodOptions, e.url+"/users/alice/images?uploadToken=x", nil, "Origin", "https://app.example",
		"Access-Control-Request-Method", "POST")
	if query.StatusCode != http.StatusNoContent || query.Header.Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Errorf("preflight with the token in the URL: %d %v", query.StatusCode, query.Header)
	}
	other := e.request(http.MethodOptions, e.url+"/users/alice/images", nil, "Origin", "https://app.example",
		"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "x-service-publickey")
	if other.StatusCode == http.StatusNoContent || other.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight of a signed upload with CORS off: %d %v, want it left to cors", other.StatusCode, other.Header)
	}

	bound := e.issue(map[string]any{"origin": "https://app.example", "uploads": 2})
	r := e.bearer("alice", bound.Token, pngImage(t, 10, 10, 1), "Origin", "https://app.example")
	if r.StatusCode != http.StatusCreated || r.Header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		!strings.Contains(strings.ToLower(r.Header.Get("Access-Control-Expose-Headers")), "x-service-imageidentifier") ||
		!strings.Contains(r.Header.Get("Vary"), "Origin") {
		t.Fatalf("upload from the token's origin: %d %v", r.StatusCode, r.Header)
	}
	r = e.bearer("alice", bound.Token, pngImage(t, 10, 10, 2), "Origin", "https://evil.example")
	if r.StatusCode != http.StatusForbidden || r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("upload from another origin: %d %v, want 403 no page may read", r.StatusCode, r.Header)
	}
	small := e.issue(map[string]any{"origin": "https://app.example", "maxBytes": 10})
	r = e.bearer("alice", small.Token, pngImage(t, 10, 10, 3), "Origin", "https://app.example")
	if r.StatusCode != http.StatusRequestEntityTooLarge || r.Header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		!strings.Contains(strings.ToLower(r.Header.Get("Access-Control-Expose-Headers")), "x-service-error-message") {
		t.Errorf("a refusal by the policy: %d %v, want the page to read it", r.StatusCode, r.Header)
	}
	free := e.issue(nil)
	r = e.bearer("alice", free.Token, pngImage(t, 10, 10, 4), "Origin", "https://any.example")
	if r.StatusCode != http.StatusCreated || r.Header.Get("Access-Control-Allow-Origin") != "https://any.example" {
		t.Errorf("token without origin: %d %v", r.StatusCode, r.Header)
	}
}

// TestUploadTokenRevoke: DELETE revokes a token named by itself or its
// id, answers the first revocation again, is audited, and finds neither
// another user's token nor an unknown one.
func TestUploadTokenRevoke(t *testing.T) {
	e := newEnv(t, tokenConfig())
	a, b := e.issue(nil), e.issue(nil)
	r := e.signed(http.MethodDelete, "/users/alice/uploadtokens/"+a.Token, userKey, userPriv, nil)
	var rev api.UploadTokenRevoked
	if err := json.Unmarshal(r.body, &rev); err != nil || r.StatusCode != http.StatusOK || rev.ID != a.ID {
		t.Fatalf("revoke by token: %d %s", r.StatusCode, r.body)
	}
	again := e.signed(http.MethodDelete, "/users/alice/uploadtokens/"+a.ID, userKey, userPriv, nil)
	if again.StatusCode != http.StatusOK || !bytes.Equal(again.body, r.body) {
		t.Errorf("revoke again by id: %d %s, want %s", again.StatusCode, again.body, r.body)
	}
	for _, path := range []string{"/users/bob/uploadtokens/" + b.Token, "/users/bob/uploadtokens/" + b.ID, "/users/alice/uploadtokens/0123456789abcdef",
		"/users/alice/uploadtokens/vut_unknown"} {
		if r := e.signed(http.MethodDelete, path, adminKey, adminPriv, nil); r.StatusCode != http.StatusNotFound {
			t.Errorf("DELETE %s: %d %s, want 404", path, r.StatusCode, r.body)
		}
	}
	if r := e.signed(http.MethodDelete, "/users/alice/uploadtokens/"+b.ID, roKey, roPriv, nil); r.StatusCode != http.StatusBadRequest {
		t.Errorf("read-only key revoked: %d %s", r.StatusCode, r.body)
	}
	if r := e.bearer("alice", b.Token, pngImage(t, 10, 10, 1)); r.StatusCode != http.StatusCreated {
		t.Errorf("the other token after a failed revocation: %d %s", r.StatusCode, r.body)
	}
	entries, n, err := e.db.AuditLog(t.Context(), storage.AuditQuery{Action: "uploadtoken.revoke"})
	if err != nil || n != 1 || entries[0].Target != "alice/uploadtokens/"+a.ID || entries[0].Actor != userKey {
		t.Errorf("audit %+v, %v", entries, err)
	}
}

// TestUploadForm: the upload route takes a multipart/form-data body (a
// plain HTML form) with one file, signed or with a token; a form without a
// file or with two is refused.
func TestUploadForm(t *testing.T) {
	e := newEnv(t, tokenConfig())
	tok := e.issue(map[string]any{"uploads": 5})
	img := pngImage(t, 12, 12, 7)
	r := e.form("alice", tok.Token, [][]byte{img}, "caption", "ignored")
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("form: %d %s", r.StatusCode, r.body)
	}
	if id := r.json(t)["imageIdentifier"]; id != md5Hex(img) {
		t.Errorf("identifier %v, want the MD5 of the file, not of the form", id)
	}
	wantRefusal(t, "no file", e.form("alice", tok.Token, nil, "caption", "x"), http.StatusBadRequest, 201, "No image attached")
	wantRefusal(t, "two files", e.form("alice", tok.Token, [][]byte{img, pngImage(t, 12, 12, 8)}),
		http.StatusBadRequest, 0, "Send one file per upload")
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	part, _ := w.CreateFormFile("file", "a.png")
	part.Write(pngImage(t, 12, 12, 9))
	w.Close()
	r = e.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, b.Bytes(), "Content-Type", w.FormDataContentType())
	if r.StatusCode != http.StatusCreated {
		t.Errorf("signed form: %d %s", r.StatusCode, r.body)
	}
	r = e.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, []byte("--x\r\nbroken"), "Content-Type", "multipart/form-data; boundary=x")
	if r.StatusCode != http.StatusBadRequest || r.errMessage(t) != "Invalid multipart/form-data body" {
		t.Errorf("broken form: %d %s", r.StatusCode, r.body)
	}
}
