package web_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/api/outbound"
	"github.com/vitrine/vitrine/storage"
	"github.com/vitrine/vitrine/web"
)

// uploadSession is the answer of POST /admin/upload/token.
type uploadSession struct {
	Token, Expires, Endpoint, Fallback, Error string
	Uploads                                   int
}

// askToken posts the upload page's request for an upload token.
func (b *browser) askToken(user, files string) (int, uploadSession) {
	b.t.Helper()
	p := b.do(http.MethodPost, "/admin/upload/token", url.Values{"csrf": {b.token("/admin/upload")}, "user": {user}, "files": {files}}, nil)
	var s uploadSession
	if err := json.Unmarshal([]byte(p.body), &s); err != nil {
		b.t.Fatalf("upload token: %d %q: %v", p.status, p.body, err)
	}
	if ct := p.header.Get("Content-Type"); ct != "application/json" {
		b.t.Fatalf("upload token answered %q", ct)
	}
	return p.status, s
}

// postWithToken uploads data for user with the upload token alone, as a
// browser does.
func (e *env) postWithToken(t *testing.T, user, token string, data []byte) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.url+"/users/"+user+"/images", bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+token)
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	return r
}

// TestUploadToken: the page gets an upload token for the user and the
// number of files it names, which uploads for that user alone, as many
// times as asked; the session's private key is nowhere in the answer.
func TestUploadToken(t *testing.T) {
	e := newEnv(t, web.Config{})
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	status, s := b.askToken("alice", "2")
	if status != http.StatusOK || s.Fallback != "" || s.Error != "" {
		t.Fatalf("upload token: %d %+v", status, s)
	}
	if !strings.HasPrefix(s.Token, "vut_") || s.Endpoint != "/users/alice/uploads" || s.Uploads != 2 || s.Expires == "" {
		t.Fatalf("upload token %+v", s)
	}
	if strings.Contains(s.Token, adminPriv) {
		t.Fatal("the answer carries the private key")
	}
	if r := e.postWithToken(t, "bob", s.Token, pngBytes(t, 40)); r.StatusCode < 400 {
		t.Fatalf("the token uploaded for another user: %d", r.StatusCode)
	}
	for i := range 2 {
		if r := e.postWithToken(t, "alice", s.Token, pngBytes(t, byte(41+i))); r.StatusCode != http.StatusCreated {
			t.Fatalf("upload %d with the token: %d", i+1, r.StatusCode)
		}
	}
	if r := e.postWithToken(t, "alice", s.Token, pngBytes(t, 43)); r.StatusCode < 400 {
		t.Fatalf("a third upload with a token for two: %d", r.StatusCode)
	}
}

// TestUploadTokenBadRequest: a request without a user or with a number of
// files out of range is refused with a message, and no token issued.
func TestUploadTokenBadRequest(t *testing.T) {
	e := newEnv(t, web.Config{})
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	for _, c := range []struct{ user, files, want string }{
		{"", "1", "Name the user"},
		{"alice", "0", "from 1 to 1000"},
		{"alice", "many", "from 1 to 1000"},
		{"alice", "1001", "from 1 to 1000"},
		{"no/such user", "1", "user"},
	} {
		status, s := b.askToken(c.user, c.files)
		if status != http.StatusBadRequest || s.Token != "" || !strings.Contains(s.Error, c.want) {
			t.Errorf("user %q files %q: %d %+v, want 400 saying %q", c.user, c.files, status, s, c.want)
		}
	}
}

// TestUploadTokenDenied: a key that may upload but not issue upload tokens
// gets no token but the reason, and the page sends its files whole.
func TestUploadTokenDenied(t *testing.T) {
	e := newEnv(t, web.Config{})
	admin := e.browser(t)
	admin.signIn("admin", adminPriv)
	if p := admin.do(http.MethodPost, "/admin/groups", url.Values{"csrf": {admin.token("/admin/groups")}, "name": {"uploader"},
		"resources": {"images.post images.get user.get"}}, nil); p.status >= 400 {
		t.Fatalf("create group: %d %s", p.status, p.body)
	}
	if p := admin.do(http.MethodPost, "/admin/keys", url.Values{"csrf": {admin.token("/admin/keys")}, "publicKey": {"uploader"},
		"privateKey": {"uploader-private"}, "group": {"uploader"}, "users": {"alice"}}, nil); p.status >= 400 {
		t.Fatalf("create key: %d %s", p.status, p.body)
	}
	b := e.browser(t)
	b.signIn("uploader", "uploader-private")
	status, s := b.askToken("alice", "3")
	if status != http.StatusOK || s.Token != "" || !strings.Contains(s.Fallback, "may not issue upload tokens for alice") {
		t.Fatalf("upload token for a key without uploadtokens.post: %d %+v", status, s)
	}
	// The page's fallback: the file whole, through the form.
	if p := b.uploadForm("alice", pngBytes(t, 44)); p.status != http.StatusSeeOther {
		t.Fatalf("whole upload by the same key: %d", p.status)
	}
}

// TestUploadTokenWithoutResumable: behind an API that answers no tus
// discovery (OPTIONS without Tus-Version, as a server without resumable
// uploads), the page is told to send files whole, and no token is issued.
func TestUploadTokenWithoutResumable(t *testing.T) {
	var issued int
	e := newEnvWith(t, web.Config{}, func(_ *storage.DB, h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodOptions && strings.HasSuffix(r.URL.Path, "/uploads") {
				http.NotFound(w, r)
				return
			}
			if strings.HasSuffix(r.URL.Path, "/uploadtokens") {
				issued++
			}
			h.ServeHTTP(w, r)
		})
	})
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	status, s := b.askToken("alice", "1")
	if status != http.StatusOK || s.Token != "" || !strings.Contains(s.Fallback, "no resumable uploads") || issued != 0 {
		t.Fatalf("upload token without tus: %d %+v (%d tokens asked for)", status, s, issued)
	}
}

// TestUploadTokenNeedsCSRF: the token is issued only to the page (its CSRF
// token), not to a post from another site.
func TestUploadTokenNeedsCSRF(t *testing.T) {
	e := newEnv(t, web.Config{})
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	p := b.do(http.MethodPost, "/admin/upload/token", url.Values{"user": {"alice"}, "files": {"1"}}, nil)
	if p.status != http.StatusForbidden || strings.Contains(p.body, "vut_") {
		t.Fatalf("token without CSRF: %d %s", p.status, p.body)
	}
}

// origin serves images to fetch by URL on loopback.
func origin(t *testing.T, img []byte) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/photo.png", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(img)
	})
	mux.HandleFunc("/page.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<!doctype html><title>Not an image</title>"))
	})
	mux.HandleFunc("/huge.png", func(w http.ResponseWriter, r *http.Request) {
		// Says it is larger than limits.maxBodyBytes; refused on that.
		w.Header().Set("Content-Type", "image/png")
		w.Header().Set("Content-Length", "1099511627776")
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// urlForm posts the upload form with a URL and no file, as a browser
// without JavaScript does.
func (b *browser) urlForm(user, source string, extra url.Values) page {
	b.t.Helper()
	f := url.Values{"csrf": {b.token("/admin/upload")}, "user": {user}, "url": {source}}
	for k, v := range extra {
		f[k] = v
	}
	return b.do(http.MethodPost, "/admin/upload", f, nil)
}

// TestUploadByURL: the form's URL field has the service fetch the image
// (outbound.allow opens the loopback origin here) and lands on the
// uploaded image, as a file upload does; the JSON answer of the page's
// script says the same.
func TestUploadByURL(t *testing.T) {
	img := pngBytes(t, 50)
	o := origin(t, img)
	e := newEnvDeps(t, web.Config{}, nil, func(d *api.Deps) { d.Outbound = outbound.Config{Allow: []string{"127.0.0.1"}} })
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	p := b.follow(b.urlForm("alice", o.URL+"/photo.png", nil))
	if !strings.Contains(p.body, md5Hex(img)) || !strings.Contains(p.body, "1 image uploaded for alice") {
		t.Fatalf("after upload by URL: %d\n%s", p.status, p.body)
	}
	j := b.urlForm("alice", o.URL+"/photo.png", url.Values{"format": {"json"}})
	var rs []struct{ File, ID, Error string }
	if err := json.Unmarshal([]byte(j.body), &rs); err != nil || len(rs) != 1 || rs[0].ID != md5Hex(img) || rs[0].File != o.URL+"/photo.png" {
		t.Fatalf("upload by URL as JSON: %d %s", j.status, j.body)
	}
}

// TestUploadByURLErrors: each URL the API will not take is shown on the
// form with the API's reason, and nothing is stored.
func TestUploadByURLErrors(t *testing.T) {
	o := origin(t, pngBytes(t, 51))
	allowed := newEnvDeps(t, web.Config{}, nil, func(d *api.Deps) { d.Outbound = outbound.Config{Allow: []string{"127.0.0.1"}} })
	// Without outbound.allow, loopback is a private address: refused
	// before any connection.
	closed := newEnv(t, web.Config{})
	for _, c := range []struct {
		name   string
		e      *env
		source string
		status int
		want   string
	}{
		{"private address", closed, o.URL + "/photo.png", http.StatusBadRequest, "loopback address"},
		{"not an image", allowed, o.URL + "/page.html", http.StatusBadRequest, "Unsupported image type"},
		{"too large", allowed, o.URL + "/huge.png", http.StatusBadRequest, "larger than"},
		{"origin fails", allowed, o.URL + "/missing.png", http.StatusBadRequest, "404 Not Found"},
		{"not a URL", allowed, "photo.png", http.StatusBadRequest, "not an absolute http or https URL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := c.e.browser(t)
			b.signIn("admin", adminPriv)
			p := b.urlForm("alice", c.source, nil)
			if p.status != c.status || !strings.Contains(p.body, `class="field-error"`) || !strings.Contains(p.body, c.want) {
				t.Fatalf("%s: %d, want %d saying %q\n%s", c.source, p.status, c.status, c.want, p.body)
			}
			n, err := c.e.db.Images(t.Context(), storage.Query{Users: []string{"alice"}, Page: 1, Limit: 10})
			if err != nil || n.Hits != 0 {
				t.Fatalf("stored after a refused URL: %d %v", n.Hits, err)
			}
		})
	}
}

// TestUploadNothing: the form without a file or a URL says to give one.
func TestUploadNothing(t *testing.T) {
	e := newEnv(t, web.Config{})
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	p := b.urlForm("alice", " ", nil)
	if p.status != http.StatusBadRequest || !strings.Contains(p.body, "Choose at least one image, or give the URL of one.") {
		t.Fatalf("empty upload form: %d\n%s", p.status, p.body)
	}
}

// TestUploadResultsJSON: what the page's script reads after a resumable
// upload, the uploaded image's link and thumbnail, as the page without
// JavaScript lists it.
func TestUploadResultsJSON(t *testing.T) {
	e := newEnv(t, web.Config{})
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	data := pngBytes(t, 52)
	b.uploadForm("alice", data)
	p := b.do(http.MethodGet, "/admin/upload?"+url.Values{"user": {"alice"}, "uploaded": {md5Hex(data)}, "format": {"json"}}.Encode(), nil, nil)
	var rs []struct{ ID, Href, Thumb string }
	if err := json.Unmarshal([]byte(p.body), &rs); err != nil || len(rs) != 1 || rs[0].ID != md5Hex(data) ||
		rs[0].Href != "/admin/users/alice/images/"+md5Hex(data) || !strings.Contains(rs[0].Thumb, "accessToken=") {
		t.Fatalf("results as JSON: %d %s", p.status, p.body)
	}
}
