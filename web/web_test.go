package web_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/api/ratelimit"
	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/storage"
	"github.com/vitrine/vitrine/web"
)

func TestMain(m *testing.M) {
	code := m.Run()
	engine.Shutdown()
	os.Exit(code)
}

// sessions adapts the database's sessions to the UI, as main.go does.
type sessions struct{ *storage.DB }

func (s sessions) CreateSession(ctx context.Context, x web.Session) error {
	return s.DB.CreateSession(ctx, storage.Session(x))
}

func (s sessions) Session(ctx context.Context, id string) (web.Session, error) {
	x, err := s.DB.Session(ctx, id)
	if errors.Is(err, storage.ErrNotExist) {
		return web.Session{}, web.ErrNoSession
	}
	return web.Session(x), err
}

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

const adminPriv = "admin-secret"

// env is the UI in front of a real API on a fresh SQLite database.
type env struct {
	url   string
	clock *clock
	db    *storage.DB
	// usage counts the API's requests; a test flushes it to read them.
	usage *storage.Usage
	blobs *storage.Blobs
}

func newEnv(t *testing.T, cfg web.Config) *env {
	t.Helper()
	return newEnvWith(t, cfg, nil)
}

// newEnvWith is newEnv with the API handler the UI calls wrapped by wrap
// (nil: as it is), so a test can act between the UI's requests.
func newEnvWith(t *testing.T, cfg web.Config, wrap func(db *storage.DB, h http.Handler) http.Handler) *env {
	t.Helper()
	return newEnvDeps(t, cfg, wrap, nil)
}

// newEnvDeps is newEnvWith with the API's dependencies changed by deps
// (nil: as they are) before the API is built.
func newEnvDeps(t *testing.T, cfg web.Config, wrap func(db *storage.DB, h http.Handler) http.Handler, deps func(*api.Deps)) *env {
	t.Helper()
	return newEnvLimited(t, cfg, wrap, nil, deps)
}

// newEnvLimited is newEnvDeps with the API's rate limiter, which limits
// (nil: none) makes on the env's clock.
func newEnvLimited(t *testing.T, cfg web.Config, wrap func(db *storage.DB, h http.Handler) http.Handler,
	limits func(now func() time.Time) *ratelimit.Limiter, deps func(*api.Deps)) *env {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	db, err := storage.Open(ctx, "sqlite://"+filepath.Join(dir, "vitrine.db"), storage.Options{Secret: []byte("test-secret")})
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
	usage := storage.NewUsage(db, storage.UsageConfig{})
	c := &clock{t: time.Now()}
	d := api.Deps{DB: db, Blobs: blobs, Engine: eng, Usage: usage}
	if limits != nil {
		d.RateLimits = limits(c.Now)
	}
	if deps != nil {
		deps(&d)
	}
	srv, err := api.New(api.Config{AccessControl: api.AccessControl{Database: true, Keys: []api.ConfigKey{
		{PublicKey: "admin", PrivateKey: adminPriv, Rules: []api.ConfigRule{{Users: api.Users{"*"}, Group: "all"}}},
	}}}, d)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Now = c.Now
	var uiAPI http.Handler = srv
	if wrap != nil {
		uiAPI = wrap(db, srv)
	}
	ui, err := web.New(cfg, uiAPI, sessions{db})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/admin") {
			ui.ServeHTTP(w, r)
			return
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		hs.Close()
		blobs.Close()
		db.Close()
	})
	return &env{url: hs.URL, clock: c, db: db, usage: usage, blobs: blobs}
}

// browser is a cookie-keeping client that does not follow redirects.
type browser struct {
	t      *testing.T
	e      *env
	client *http.Client
}

func (e *env) browser(t *testing.T) *browser {
	jar := &cookieJar{m: map[string]*http.Cookie{}}
	return &browser{t: t, e: e, client: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// cookieJar keeps cookies whatever their Secure flag, so tests can see it.
type cookieJar struct {
	mu sync.Mutex
	m  map[string]*http.Cookie
}

func (j *cookieJar) SetCookies(_ *url.URL, cs []*http.Cookie) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, c := range cs {
		if c.MaxAge < 0 {
			delete(j.m, c.Name)
		} else {
			j.m[c.Name] = c
		}
	}
}

func (j *cookieJar) Cookies(*url.URL) []*http.Cookie {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []*http.Cookie
	for _, c := range j.m {
		out = append(out, &http.Cookie{Name: c.Name, Value: c.Value})
	}
	return out
}

type page struct {
	status int
	header http.Header
	body   string
}

func (b *browser) do(method, path string, form url.Values, header http.Header, raw ...io.Reader) page {
	b.t.Helper()
	var rd io.Reader = strings.NewReader(form.Encode())
	if len(raw) > 0 {
		rd = raw[0]
	}
	req, err := http.NewRequest(method, b.e.url+path, rd)
	if err != nil {
		b.t.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	r, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer r.Body.Close()
	var sb strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return page{status: r.StatusCode, header: r.Header, body: sb.String()}
}

// follow gets the page a post redirected to.
func (b *browser) follow(p page) page {
	b.t.Helper()
	if p.status != http.StatusSeeOther {
		b.t.Fatalf("got %d, want a redirect (303)", p.status)
	}
	return b.do(http.MethodGet, p.header.Get("Location"), nil, nil)
}

var csrfInput = regexp.MustCompile(`name="csrf" value="([0-9a-f]{64})"`)

// token returns the CSRF token of the first form on path.
func (b *browser) token(path string) string {
	b.t.Helper()
	p := b.do(http.MethodGet, path, nil, nil)
	m := csrfInput.FindStringSubmatch(p.body)
	if m == nil {
		b.t.Fatalf("GET %s (%d): no CSRF token in the page", path, p.status)
	}
	return m[1]
}

func (b *browser) signIn(pub, priv string) page {
	b.t.Helper()
	return b.do(http.MethodPost, "/admin/signin", url.Values{"csrf": {b.token("/admin/signin")},
		"publicKey": {pub}, "privateKey": {priv}, "next": {"/admin/"}}, nil)
}

func TestSecurityHeaders(t *testing.T) {
	e := newEnv(t, web.Config{})
	p := e.browser(t).do(http.MethodGet, "/admin/signin", nil, nil)
	for name, want := range map[string]string{
		"X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin", "X-Frame-Options": "DENY",
	} {
		if got := p.header.Get(name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	csp := p.header.Get("Content-Security-Policy")
	for _, part := range []string{"frame-ancestors 'none'", "script-src 'self'", "default-src 'none'"} {
		if !strings.Contains(csp, part) {
			t.Errorf("CSP %q lacks %q", csp, part)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(p.body, "<script>") || strings.Contains(p.body, " style=") {
		t.Errorf("inline script or style: CSP %q", csp)
	}
}

func TestSignIn(t *testing.T) {
	e := newEnv(t, web.Config{})
	b := e.browser(t)
	if p := b.do(http.MethodGet, "/admin/keys", nil, nil); p.status != http.StatusSeeOther ||
		p.header.Get("Location") != "/admin/signin?next=%2Fadmin%2Fkeys" {
		t.Fatalf("no session: %d %s", p.status, p.header.Get("Location"))
	}
	if p := b.signIn("admin", "wrong"); p.status != http.StatusUnauthorized || !strings.Contains(p.body, "not valid") {
		t.Fatalf("wrong key: %d", p.status)
	}
	if p := b.do(http.MethodPost, "/admin/signin", url.Values{"publicKey": {"admin"}, "privateKey": {adminPriv}}, nil); p.status != http.StatusForbidden {
		t.Fatalf("sign-in without its CSRF token: %d", p.status)
	}
	p := b.signIn("admin", adminPriv)
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/admin/" {
		t.Fatalf("sign-in: %d %s", p.status, p.header.Get("Location"))
	}
	if p := b.do(http.MethodGet, "/admin/", nil, nil); p.status != 200 || !strings.Contains(p.body, "Overview") {
		t.Fatalf("overview: %d", p.status)
	}
	// Sign-out needs the token too.
	if p := b.do(http.MethodPost, "/admin/signout", nil, nil); p.status != http.StatusForbidden {
		t.Fatalf("sign-out without CSRF: %d", p.status)
	}
	b.do(http.MethodPost, "/admin/signout", url.Values{"csrf": {b.token("/admin/")}}, nil)
	if p := b.do(http.MethodGet, "/admin/", nil, nil); p.status != http.StatusSeeOther {
		t.Fatalf("after sign-out: %d", p.status)
	}
}

// TestSignInThrottle: after three failed sign-ins, as web/README.md says, each
// further attempt waits, twice as long after each failure.
func TestSignInThrottle(t *testing.T) {
	e := newEnv(t, web.Config{})
	b := e.browser(t)
	for i := range 3 {
		if p := b.signIn("admin", "wrong"); p.status != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d", i+1, p.status)
		}
	}
	p := b.signIn("admin", adminPriv)
	if p.status != http.StatusTooManyRequests || p.header.Get("Retry-After") != "1" {
		t.Fatalf("right key right after three failures: %d, want 429 with Retry-After: 1", p.status)
	}
	if !strings.Contains(p.body, "Try again in 1 second.") {
		t.Fatalf("the wait is not said as \"1 second\":\n%s", p.body)
	}
	e.clock.Add(1500 * time.Millisecond)
	if p := b.signIn("admin", "wrong"); p.status != http.StatusUnauthorized {
		t.Fatalf("fourth failure, after the wait: %d", p.status)
	}
	if p := b.signIn("admin", adminPriv); p.status != http.StatusTooManyRequests || p.header.Get("Retry-After") != "2" {
		t.Fatalf("right after the fourth failure: %d, Retry-After %q; want 429, 2", p.status, p.header.Get("Retry-After"))
	}
	e.clock.Add(2 * time.Second)
	if p := b.signIn("admin", adminPriv); p.status != http.StatusSeeOther {
		t.Fatalf("after the wait: %d", p.status)
	}
}

func TestSessionExpiry(t *testing.T) {
	cases := []struct {
		name  string
		steps []time.Duration // time between requests
		ok    bool
	}{
		{"active", []time.Duration{20 * time.Minute, 20 * time.Minute, 20 * time.Minute}, true},
		{"idle", []time.Duration{31 * time.Minute}, false},
		{"absolute", []time.Duration{25 * time.Minute, 25 * time.Minute, 25 * time.Minute, 25 * time.Minute, 25 * time.Minute}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, web.Config{IdleTimeout: 30 * time.Minute, MaxAge: 2 * time.Hour})
			b := e.browser(t)
			b.signIn("admin", adminPriv)
			status := 0
			for _, d := range c.steps {
				e.clock.Add(d)
				status = b.do(http.MethodGet, "/admin/upload", nil, nil).status
			}
			if (status == 200) != c.ok {
				t.Fatalf("last status %d, want ok=%v", status, c.ok)
			}
		})
	}
}

func TestSecureCookie(t *testing.T) {
	cases := []struct {
		name    string
		proxies []string
		proto   string
		secure  bool
	}{
		{"plain http", nil, "", false},
		{"untrusted proxy header", nil, "https", false},
		{"trusted proxy", []string{"127.0.0.1"}, "https", true},
		{"trusted proxy over http", []string{"127.0.0.0/8"}, "http", false},
		{"every proxy trusted", []string{"*"}, "https", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, web.Config{TrustedProxies: c.proxies})
			h := http.Header{}
			if c.proto != "" {
				h.Set("X-Forwarded-Proto", c.proto)
			}
			p := e.browser(t).do(http.MethodGet, "/admin/signin", nil, h)
			ck := p.header.Get("Set-Cookie")
			if !strings.Contains(ck, "HttpOnly") || !strings.Contains(ck, "SameSite=Strict") {
				t.Fatalf("cookie %q", ck)
			}
			if strings.Contains(ck, "Secure") != c.secure {
				t.Fatalf("cookie %q: want Secure=%v", ck, c.secure)
			}
		})
	}
}

func TestSafeRedirectAfterSignIn(t *testing.T) {
	e := newEnv(t, web.Config{})
	for next, want := range map[string]string{
		"/admin/keys":        "/admin/keys",
		"https://evil.test/": "/admin/",
		"//evil.test/admin/": "/admin/",
		"/admin/signin?x=1":  "/admin/",
		"/other":             "/admin/",
		"/admin/users/a?b=c": "/admin/users/a?b=c",
	} {
		b := e.browser(t)
		p := b.do(http.MethodPost, "/admin/signin", url.Values{"csrf": {b.token("/admin/signin")},
			"publicKey": {"admin"}, "privateKey": {adminPriv}, "next": {next}}, nil)
		if got := p.header.Get("Location"); got != want {
			t.Errorf("next %q: went to %q, want %q", next, got, want)
		}
	}
}

func TestCreateKeyRefusesExisting(t *testing.T) {
	e := newEnv(t, web.Config{})
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	create := func(priv string) page {
		return b.do(http.MethodPost, "/admin/keys", url.Values{"csrf": {b.token("/admin/keys")}, "publicKey": {"carol"},
			"privateKey": {priv}, "group": {"read-only"}, "users": {"carol"}}, nil)
	}
	p := create("first-private")
	if loc := p.header.Get("Location"); p.status != http.StatusSeeOther || loc != "/admin/keys/carol?done=created" {
		t.Fatalf("create: %d %s", p.status, loc)
	}
	if p := b.follow(p); !strings.Contains(p.body, "first-private") {
		t.Fatalf("the key's page does not show the new private key once")
	}
	if p := b.do(http.MethodGet, "/admin/keys/carol?done=created", nil, nil); strings.Contains(p.body, "first-private") {
		t.Fatalf("the key's page shows the private key a second time")
	}
	if p := create("second-private"); p.status != http.StatusBadRequest || !strings.Contains(p.body, "exists already") {
		t.Fatalf("create again: %d", p.status)
	}
	k, err := e.db.Key(context.Background(), "carol")
	if err != nil || k.PrivateKey != "first-private" {
		t.Fatalf("the existing key changed: %+v %v", k, err)
	}
	// A rule the API refuses removes the key again and shows the API's message.
	p = b.do(http.MethodPost, "/admin/keys", url.Values{"csrf": {b.token("/admin/keys")}, "publicKey": {"dave"},
		"group": {"no-such-group"}, "users": {"dave"}}, nil)
	if p.status != http.StatusBadRequest || !strings.Contains(p.body, "no-such-group") {
		t.Fatalf("bad rule: %d", p.status)
	}
	if _, err := e.db.Key(context.Background(), "dave"); !errors.Is(err, storage.ErrNotExist) {
		t.Fatalf("a key whose rule was refused is left behind: %v", err)
	}
}

// TestUploadWithoutJavaScript posts several files in one multipart form, as
// the upload page does without JavaScript, and checks each reached the
// API; a file the API refuses is reported with the API's message.
func TestUploadWithoutJavaScript(t *testing.T) {
	e := newEnv(t, web.Config{})
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	p := b.uploadForm("alice", pngBytes(t, 1), pngBytes(t, 2), []byte("not an image"))
	if p.status != 200 || strings.Count(p.body, "Uploaded") != 2 || !strings.Contains(p.body, "field-error") {
		t.Fatalf("upload: %d\n%s", p.status, p.body)
	}
	n, err := e.db.Images(context.Background(), storage.Query{Users: []string{"alice"}, Page: 1, Limit: 10})
	if err != nil || n.Hits != 2 {
		t.Fatalf("stored: %+v %v", n.Hits, err)
	}
}

// TestUploadDefaultUser: the upload form does not default the user to the
// signed-in key's name (a key is not a user) but starts empty, and then
// offers the user this browser last uploaded for.
func TestUploadDefaultUser(t *testing.T) {
	e := newEnv(t, web.Config{})
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	userField := regexp.MustCompile(`<input id="up-user" name="user" value="([^"]*)"`)
	for _, c := range []struct{ name, upload, want string }{{"first visit", "", ""}, {"after an upload", "carol", "carol"}} {
		t.Run(c.name, func(t *testing.T) {
			if c.upload != "" {
				b.uploadForm(c.upload, pngBytes(t, 3))
			}
			m := userField.FindStringSubmatch(b.do(http.MethodGet, "/admin/upload", nil, nil).body)
			if m == nil || m[1] != c.want {
				t.Fatalf("user field %q, want value %q", m, c.want)
			}
		})
	}
}

// uploadForm posts files for user through the upload form, as a browser
// without JavaScript does.
func (b *browser) uploadForm(user string, files ...[]byte) page {
	b.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("csrf", b.token("/admin/upload"))
	_ = mw.WriteField("user", user)
	for i, data := range files {
		fw, _ := mw.CreateFormFile("images", fmt.Sprintf("f%d.png", i))
		_, _ = fw.Write(data)
	}
	_ = mw.Close()
	return b.do(http.MethodPost, "/admin/upload", nil, http.Header{"Content-Type": {mw.FormDataContentType()}}, &body)
}

func pngBytes(t *testing.T, seed byte) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, 8, 8))
	for i := range img.Pix {
		img.Pix[i] = seed * byte(i)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestOriginalHeaders: the image page lists the headers the original is
// served with, not those of an error.
func TestOriginalHeaders(t *testing.T) {
	e := newEnv(t, web.Config{})
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	data := pngBytes(t, 3)
	b.uploadForm("alice", data)
	p := b.do(http.MethodGet, "/admin/users/alice/images/"+md5Hex(data), nil, nil)
	if p.status != 200 {
		t.Fatalf("image page: %d", p.status)
	}
	_, headers, ok := strings.Cut(p.body, "Response headers of the original")
	if !ok {
		t.Fatalf("no headers on the image page:\n%s", p.body)
	}
	headers, _, _ = strings.Cut(headers, "</section>")
	if !regexp.MustCompile(`Content-Type</th><td[^>]*>image/png<`).MatchString(headers) || strings.Contains(headers, "Error-Message") {
		t.Fatalf("headers of the original:\n%s", headers)
	}
}

func md5Hex(b []byte) string {
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:])
}

// TestConfiguredKeyIsReadOnly: a key from the configuration file cannot
// change through the API, so its page offers no change and says where to
// make one.
func TestConfiguredKeyIsReadOnly(t *testing.T) {
	e := newEnv(t, web.Config{})
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	p := b.do(http.MethodGet, "/admin/keys/admin", nil, nil)
	if p.status != 200 || !strings.Contains(p.body, "defined in the configuration file") {
		t.Fatalf("page of a configured key: %d\n%s", p.status, p.body)
	}
	for _, action := range []string{"/admin/keys/admin/rules", "/admin/keys/admin/rotate", "/admin/keys/admin/delete"} {
		if strings.Contains(p.body, `action="`+action) {
			t.Errorf("the page of a configured key has a form for %s", action)
		}
	}
	// The new-key form stays: the store itself may change.
	if p := b.do(http.MethodGet, "/admin/keys", nil, nil); !strings.Contains(p.body, `id="nk-public"`) {
		t.Errorf("no new-key form on a database store")
	}
}

// TestSessionEndsWithItsKey: once its key is deleted, a session's next
// page or form post goes to the sign-in page, which says why.
func TestSessionEndsWithItsKey(t *testing.T) {
	e := newEnv(t, web.Config{})
	admin := e.browser(t)
	admin.signIn("admin", adminPriv)
	if p := admin.do(http.MethodPost, "/admin/keys", url.Values{"csrf": {admin.token("/admin/keys")}, "publicKey": {"carol"},
		"privateKey": {"carol-private"}, "group": {"read-only"}, "users": {"carol"}}, nil); p.status >= 400 {
		t.Fatalf("create carol: %d", p.status)
	}
	carol := e.browser(t)
	if p := carol.signIn("carol", "carol-private"); p.status != http.StatusSeeOther {
		t.Fatalf("sign in as carol: %d", p.status)
	}
	csrf := carol.token("/admin/")
	if p := admin.do(http.MethodPost, "/admin/keys/carol/delete", url.Values{"csrf": {admin.token("/admin/keys/carol")}, "confirm": {"yes"}}, nil); p.status != http.StatusSeeOther {
		t.Fatalf("delete carol: %d", p.status)
	}
	p := carol.do(http.MethodPost, "/admin/signout", url.Values{"csrf": {csrf}}, nil)
	if loc := p.header.Get("Location"); p.status != http.StatusSeeOther || !strings.HasPrefix(loc, "/admin/signin?ended=key") {
		t.Fatalf("a post of a deleted key's session: %d %s", p.status, loc)
	}
	if p := carol.do(http.MethodGet, "/admin/signin?ended=key", nil, nil); !strings.Contains(p.body, "rotated or deleted") {
		t.Fatalf("the sign-in page does not say why the session ended")
	}
	if p := carol.do(http.MethodGet, "/admin/keys", nil, nil); p.status != http.StatusSeeOther || strings.Contains(p.header.Get("Location"), "ended") {
		t.Fatalf("the ended session is still known: %d %s", p.status, p.header.Get("Location"))
	}
}

// TestRefusalsAre403: a key that may only read gets every change it posts
// anyway refused with 403 (the API's refusal, whatever the form), and its
// pages offer none of those forms.
func TestRefusalsAre403(t *testing.T) {
	e := newEnv(t, web.Config{})
	admin := e.browser(t)
	admin.signIn("admin", adminPriv)
	data := pngBytes(t, 5)
	admin.uploadForm("alice", data)
	id := md5Hex(data)
	if p := admin.do(http.MethodPost, "/admin/keys", url.Values{"csrf": {admin.token("/admin/keys")}, "publicKey": {"viewer"},
		"privateKey": {"viewer-private"}, "group": {"read-only"}, "users": {"alice"}}, nil); p.status >= 400 {
		t.Fatalf("create viewer: %d", p.status)
	}
	b := e.browser(t)
	b.signIn("viewer", "viewer-private")
	csrf := b.token("/admin/")
	image := "/admin/users/alice/images/" + id
	p := b.do(http.MethodGet, image, nil, nil)
	for _, action := range []string{image + "/metadata", image + "/shorturls", image + "/delete"} {
		if strings.Contains(p.body, `"`+action+`"`) {
			t.Errorf("the image page offers %s to a read-only key", action)
		}
	}
	if strings.Contains(p.body, `href="/admin/upload"`) {
		t.Errorf("the navigation offers Upload to a read-only key")
	}
	if p := b.do(http.MethodGet, "/admin/upload", nil, nil); p.status != http.StatusForbidden || strings.Contains(p.body, `id="upload-form"`) {
		t.Errorf("upload page of a read-only key: %d", p.status)
	}
	for _, c := range []struct {
		path string
		form url.Values
	}{
		{image + "/metadata", url.Values{"metadata": {`{"a": 1}`}}},
		{image + "/shorturls", url.Values{"query": {""}, "extension": {"png"}}},
		{image + "/shorturls/delete", url.Values{"id": {"abcdefg"}}},
		{image + "/delete", nil},
		{"/admin/keys", url.Values{"publicKey": {"eve"}, "group": {"all"}, "users": {"*"}}},
		{"/admin/keys/viewer/rules", url.Values{"group": {"all"}, "users": {"*"}}},
		{"/admin/keys/viewer/rotate", nil},
		{"/admin/keys/viewer/delete", url.Values{"confirm": {"yes"}}},
		{"/admin/filters/reload", nil},
	} {
		form := url.Values{"csrf": {csrf}}
		for k, v := range c.form {
			form[k] = v
		}
		if p := b.do(http.MethodPost, c.path, form, nil); p.status != http.StatusForbidden {
			t.Errorf("POST %s by a read-only key: %d, want 403", c.path, p.status)
		}
	}
	if p := b.uploadForm("alice", pngBytes(t, 6)); p.status != http.StatusForbidden {
		t.Errorf("upload by a read-only key: %d, want 403", p.status)
	}
}

// TestMetadataEditorKeepsCharacters: &, < and > in metadata appear in the
// editor as themselves (HTML-escaped by the page), not as \u0026 and the
// like, so saving the editor's text again keeps them.
func TestMetadataEditorKeepsCharacters(t *testing.T) {
	e := newEnv(t, web.Config{})
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	data := pngBytes(t, 7)
	b.uploadForm("alice", data)
	page := "/admin/users/alice/images/" + md5Hex(data)
	doc := `{"title": "Tom & Jerry <3 >", "n": 1.50}`
	if p := b.do(http.MethodPost, page+"/metadata", url.Values{"csrf": {b.token(page)}, "metadata": {doc}}, nil); p.status != http.StatusSeeOther {
		t.Fatalf("save metadata: %d", p.status)
	}
	p := b.do(http.MethodGet, page, nil, nil)
	if strings.Contains(p.body, `\u00`) || !strings.Contains(p.body, `&#34;title&#34;: &#34;Tom &amp; Jerry &lt;3 &gt;&#34;`) ||
		!strings.Contains(p.body, `&#34;n&#34;: 1.50`) {
		_, md, _ := strings.Cut(p.body, `id="metadata"`)
		md, _, _ = strings.Cut(md, "</textarea>")
		t.Fatalf("metadata editor shows %s", md)
	}
}

// TestPostRedirectGet: every form post that succeeds answers with a
// redirect (so a reload posts nothing), and rotation and rule deletion
// ask first on a page of their own, changing nothing until confirmed.
func TestPostRedirectGet(t *testing.T) {
	e := newEnv(t, web.Config{})
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	ctx := context.Background()
	post := func(path string, form url.Values) page {
		t.Helper()
		if form == nil {
			form = url.Values{}
		}
		form.Set("csrf", b.token("/admin/"))
		p := b.do(http.MethodPost, path, form, nil)
		if p.status != http.StatusSeeOther {
			t.Fatalf("POST %s: %d, want 303", path, p.status)
		}
		return p
	}
	post("/admin/keys", url.Values{"publicKey": {"eve"}, "privateKey": {"eve-1"}, "group": {"read-only"}, "users": {"eve"}})
	post("/admin/keys/eve/rules", url.Values{"group": {"read-write"}, "users": {"bob"}})
	rules, err := e.db.Rules(ctx, "eve")
	if err != nil || len(rules) != 2 {
		t.Fatalf("rules of eve: %v %v", rules, err)
	}

	if p := b.do(http.MethodGet, "/admin/keys/eve/rotate", nil, nil); p.status != 200 || !strings.Contains(p.body, `action="/admin/keys/eve/rotate"`) {
		t.Fatalf("rotation's confirmation page: %d", p.status)
	}
	if k, _ := e.db.Key(ctx, "eve"); k.PrivateKey != "eve-1" {
		t.Fatal("the confirmation page rotated the key")
	}
	p := b.follow(post("/admin/keys/eve/rotate", nil))
	k, _ := e.db.Key(ctx, "eve")
	if k.PrivateKey == "eve-1" || !strings.Contains(p.body, k.PrivateKey) {
		t.Fatal("the rotated key's page does not show its new private key")
	}

	ruleDelete := fmt.Sprintf("/admin/keys/eve/rules/%d/delete", rules[1].ID)
	if p := b.do(http.MethodGet, ruleDelete, nil, nil); p.status != 200 || !strings.Contains(p.body, `action="`+ruleDelete+`"`) {
		t.Fatalf("rule deletion's confirmation page: %d", p.status)
	}
	if rs, _ := e.db.Rules(ctx, "eve"); len(rs) != 2 {
		t.Fatal("the confirmation page deleted the rule")
	}
	post(ruleDelete, nil)
	if rs, _ := e.db.Rules(ctx, "eve"); len(rs) != 1 {
		t.Fatalf("after deleting: %d rules", len(rs))
	}

	post("/admin/filters/reload", nil)
	data := pngBytes(t, 9)
	up := b.uploadForm("alice", data)
	if p := b.follow(up); !strings.Contains(p.body, md5Hex(data)) || !strings.Contains(p.body, "Uploaded") {
		t.Fatalf("upload result page: %d", p.status)
	}
	image := "/admin/users/alice/images/" + md5Hex(data)
	post(image+"/metadata", url.Values{"metadata": {`{"a": 1}`}})
	post(image+"/shorturls", url.Values{"query": {""}, "extension": {"png"}})
}

// TestUploadHintFollowsFormats: the upload page names the types the
// service accepts (uploads.formats, by default JPEG, PNG, GIF and WebP),
// and no other.
func TestUploadHintFollowsFormats(t *testing.T) {
	e := newEnv(t, web.Config{})
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	p := b.do(http.MethodGet, "/admin/upload", nil, nil)
	if !strings.Contains(p.body, "JPEG, PNG, GIF or WebP; several at once.") || strings.Contains(p.body, "TIFF") || strings.Contains(p.body, "AVIF") {
		_, hint, _ := strings.Cut(p.body, `id="up-types"`)
		t.Fatalf("upload hint: %.120s", hint)
	}
	if !strings.Contains(p.body, `accept=".jpg,image/jpeg,.png,image/png,.gif,image/gif,.webp,image/webp"`) {
		t.Fatalf("the file input does not accept exactly the upload types")
	}
}

// TestErrorPagesHaveNavigation: a page that cannot be shown says what was
// not found, in words about what was asked for (not the API's bare "Not
// Found"), inside the usual frame with its navigation.
func TestErrorPagesHaveNavigation(t *testing.T) {
	e := newEnv(t, web.Config{})
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	data := pngBytes(t, 4)
	b.uploadForm("alice", data)
	for _, c := range []struct {
		path, want string
	}{
		{"/admin/keys/nobody", "There is no key nobody."},
		{"/admin/keys/bad%20name", "“bad name” cannot be a key name"},
		{"/admin/users/nobody", "There is no user nobody: no image is stored for it and no key has its name."},
		{"/admin/users/bad%20name", "“bad name” cannot be a user name"},
		{"/admin/users/alice/images/0123", "User alice has no image 0123."},
		{"/admin/users/alice/images/bad%20id", "User alice has no image bad id."},
		{"/admin/no/such/page", "There is no page at /admin/no/such/page."},
		{"/admin/access?key=nobody", "There is no key nobody."},
	} {
		t.Run(c.path, func(t *testing.T) {
			p := b.do(http.MethodGet, c.path, nil, nil)
			if p.status != http.StatusNotFound {
				t.Errorf("status %d, want 404", p.status)
			}
			if !strings.Contains(p.body, htmlText(c.want)) {
				t.Errorf("no %q in the page:\n%s", c.want, p.body)
			}
			if !strings.Contains(p.body, `<nav aria-label="Main">`) || strings.Contains(p.body, ">Not Found<") {
				t.Errorf("the page has no navigation, or the API's bare Not Found")
			}
		})
	}
}

// TestDuplicateUploadSaysSo: uploading an image the user has already says
// it existed, with and without JavaScript.
func TestDuplicateUploadSaysSo(t *testing.T) {
	e := newEnv(t, web.Config{})
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	data, other := pngBytes(t, 8), pngBytes(t, 9)
	if p := b.follow(b.uploadForm("alice", data)); strings.Contains(p.body, "Already existed") {
		t.Fatalf("a first upload says it existed")
	}
	p := b.follow(b.uploadForm("alice", data, other))
	if strings.Count(p.body, "Already existed") != 1 || strings.Count(p.body, ">Uploaded<") != 1 ||
		!strings.Contains(p.body, "2 images sent for alice, of which 1 already existed.") {
		t.Fatalf("upload of a duplicate and a new image:\n%s", p.body)
	}
	// As upload.js posts: one file, format=json.
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("csrf", b.token("/admin/upload"))
	_ = mw.WriteField("user", "alice")
	_ = mw.WriteField("format", "json")
	fw, _ := mw.CreateFormFile("images", "again.png")
	_, _ = fw.Write(data)
	_ = mw.Close()
	p = b.do(http.MethodPost, "/admin/upload", nil, http.Header{"Content-Type": {mw.FormDataContentType()}}, &body)
	if p.status != 200 || !strings.Contains(p.body, `"existed":true`) {
		t.Fatalf("JSON upload of a duplicate: %d %s", p.status, p.body)
	}
}

// TestOverviewTilesNameTheirUser: the latest uploads, across users, say
// whose each image is.
func TestOverviewTilesNameTheirUser(t *testing.T) {
	e := newEnv(t, web.Config{})
	b := e.browser(t)
	b.signIn("admin", adminPriv)
	b.uploadForm("alice", pngBytes(t, 1))
	b.uploadForm("bob", pngBytes(t, 2))
	p := b.do(http.MethodGet, "/admin/", nil, nil)
	for _, user := range []string{"alice", "bob"} {
		if !strings.Contains(p.body, `<span class="tile-user">`+user+`</span>`) {
			t.Errorf("no tile names user %s", user)
		}
	}
}

// TestThrottleIsNotALockout: behind a proxy that is not trusted every
// browser has the proxy's address; an attacker's failures there slow down
// guessing, but neither lock out an administrator whose browser signed in
// before nor a key the attacker does not try.
func TestThrottleIsNotALockout(t *testing.T) {
	e := newEnv(t, web.Config{})
	admin := e.browser(t)
	if p := admin.signIn("admin", adminPriv); p.status != http.StatusSeeOther {
		t.Fatalf("first sign-in: %d", p.status)
	}
	admin.do(http.MethodPost, "/admin/keys", url.Values{"csrf": {admin.token("/admin/keys")}, "publicKey": {"carol"},
		"privateKey": {"carol-private"}, "group": {"read-only"}, "users": {"carol"}}, nil)
	admin.do(http.MethodPost, "/admin/signout", url.Values{"csrf": {admin.token("/admin/")}}, nil)

	attacker := e.browser(t)
	for range 8 {
		attacker.signIn("admin", "guess")
	}
	if p := attacker.signIn("admin", adminPriv); p.status != http.StatusTooManyRequests {
		t.Fatalf("the attacker's next attempt: %d, want 429", p.status)
	}
	if p := e.browser(t).signIn("admin", adminPriv); p.status != http.StatusTooManyRequests {
		t.Fatalf("a new browser at the attacker's address: %d, want 429 (guessing admin waits)", p.status)
	}
	if p := admin.signIn("admin", adminPriv); p.status != http.StatusSeeOther {
		t.Fatalf("the administrator's own browser: %d, want to sign in", p.status)
	}
	if p := e.browser(t).signIn("carol", "carol-private"); p.status != http.StatusSeeOther {
		t.Fatalf("another key from the same address: %d, want to sign in", p.status)
	}
}
