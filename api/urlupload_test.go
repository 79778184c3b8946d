package api_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/api/outbound"
	"github.com/vitrine/vitrine/storage"
)

// names is a resolver that answers from its map and never asks real DNS.
type names map[string][]string

func (n names) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	answer, ok := n[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host (test resolver)", Name: host, IsNotFound: true}
	}
	var addrs []netip.Addr
	for _, a := range answer {
		addrs = append(addrs, netip.MustParseAddr(a))
	}
	return addrs, nil
}

// recordingDialer dials loopback addresses only, and with dialNothing set
// nothing at all: any other connection fails the test. It records what it
// was asked to dial.
type recordingDialer struct {
	t           *testing.T
	dialNothing bool
	mu          sync.Mutex
	dialed      []string
	d           net.Dialer
}

func (r *recordingDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	r.mu.Lock()
	r.dialed = append(r.dialed, address)
	r.mu.Unlock()
	ap, err := netip.ParseAddrPort(address)
	if r.dialNothing || err != nil || !ap.Addr().IsLoopback() {
		r.t.Errorf("the ingestion guard dialed %s", address)
		return nil, errors.New("test dialer: refused")
	}
	return r.d.DialContext(ctx, network, address)
}

func (r *recordingDialer) calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.dialed...)
}

// origin is a local web server images are fetched from, on 127.0.0.1.
type origin struct {
	url  string // http://127.0.0.1:<port>
	host string // 127.0.0.1:<port>
	png  []byte
	jpg  []byte
	hits atomic.Int64
	// written counts the bytes /endless wrote before its client went away.
	written atomic.Int64
	// stopped is closed when /endless stopped writing.
	stopped chan struct{}
}

func newOrigin(t *testing.T) *origin {
	t.Helper()
	o := &origin{png: pngImage(t, 40, 30, 7), jpg: jpegImage(t, 32, 24), stopped: make(chan struct{})}
	release := make(chan struct{})
	block := func(r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/img.png", func(w http.ResponseWriter, r *http.Request) { w.Write(o.png) })
	mux.HandleFunc("/img.jpg", func(w http.ResponseWriter, r *http.Request) { w.Write(o.jpg) })
	mux.HandleFunc("/png-labelled-html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write(o.png)
	})
	mux.HandleFunc("/auth.png", func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "user" || p != "secret" {
			http.Error(w, "who are you?", http.StatusUnauthorized)
			return
		}
		w.Write(o.png)
	})
	// /r/<n> is a chain of n redirects to /img.png, relative and absolute
	// in turn, with each redirect status.
	mux.HandleFunc("/r/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		loc := "/img.png"
		if n > 1 {
			loc = fmt.Sprintf("/r/%d", n-1)
		}
		if n%2 == 0 {
			loc = o.url + loc
		}
		codes := []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect}
		w.Header().Set("Location", loc)
		w.WriteHeader(codes[n%len(codes)])
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "/loop")
		w.WriteHeader(http.StatusFound)
	})
	mux.HandleFunc("/to", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", r.URL.Query().Get("u"))
		w.WriteHeader(http.StatusFound)
	})
	mux.HandleFunc("/no-location", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusFound) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) { block(r) })
	mux.HandleFunc("/stall", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(o.png)))
		w.Write(o.png[:len(o.png)/2])
		w.(http.Flusher).Flush()
		block(r)
	})
	// /endless streams without a Content-Length until its client goes.
	mux.HandleFunc("/endless", func(w http.ResponseWriter, r *http.Request) {
		defer close(o.stopped)
		chunk := make([]byte, 32<<10)
		copy(chunk, o.png)
		for {
			n, err := w.Write(chunk)
			o.written.Add(int64(n))
			if err != nil {
				return
			}
			w.(http.Flusher).Flush()
			chunk = make([]byte, 32<<10)
		}
	})
	mux.HandleFunc("/announced", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(100<<20))
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("/text", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello, world\n") })
	mux.HandleFunc("/page.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<!doctype html><html><head><title>Photos</title></head><body><img src=photo.jpg></body></html>")
	})
	mux.HandleFunc("/empty", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("/missing", http.NotFound)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.hits.Add(1)
		if r.Header.Get("User-Agent") != "vitrine-ingest/1" {
			t.Errorf("the origin was asked by %q", r.Header.Get("User-Agent"))
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(release) }) // before Close, which waits for the handlers
	o.url, o.host = s.URL, strings.TrimPrefix(s.URL, "http://")
	return o
}

// urlEnv is a service whose ingestion guard uses oc (with the test's
// dialer when oc has none).
func urlEnv(t *testing.T, cfg api.Config, oc outbound.Config) (*env, *recordingDialer) {
	t.Helper()
	d := &recordingDialer{t: t}
	if oc.Dialer == nil {
		oc.Dialer = d
	}
	if oc.Resolver == nil {
		oc.Resolver = names{}
	}
	return newEnvWith(t, cfg, func(deps *api.Deps) { deps.Outbound = oc }), d
}

// byURLPath is where alice's uploads by URL go (uploadImageByURL).
const byURLPath = "/users/alice/images/url"

// byURL asks for an upload of the image at u for alice, signed as alice.
func (e *env) byURL(u string) response {
	e.t.Helper()
	body, err := json.Marshal(map[string]string{"url": u})
	if err != nil {
		e.t.Fatal(err)
	}
	return e.signed(http.MethodPost, byURLPath, userKey, userPriv, body, "Content-Type", "application/json")
}

// uncheckedUpload posts body to alice's images signed as alice, labelled
// contentType, straight to the server: what it sends is a form the
// reference does not describe, so the checker is not in front.
func (e *env) uncheckedUpload(body []byte, contentType string) *httptest.ResponseRecorder {
	e.t.Helper()
	u := e.url + "/users/alice/images"
	ts := time.Now().UTC().Format("2006-01-02T15:04:05Z")
	req := httptest.NewRequest(http.MethodPost, u, bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("X-Service-PublicKey", userKey)
	req.Header.Set("X-Service-Authenticate-Timestamp", ts)
	req.Header.Set("X-Service-Authenticate-Signature", hmacHex(userPriv, "POST|"+u+"|"+userKey+"|"+ts))
	req.Host = strings.TrimPrefix(e.url, "http://")
	rec := httptest.NewRecorder()
	e.srv.ServeHTTP(rec, req)
	return rec
}

// wantNothingStored checks that alice has no image and the blob store no
// blob.
func (e *env) wantNothingStored(what string) {
	e.t.Helper()
	page, err := e.db.Images(e.t.Context(), storage.Query{Users: []string{"alice"}})
	if err != nil {
		e.t.Fatal(err)
	}
	var blobs []string
	filepath.WalkDir(filepath.Join(e.dir, "images"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasPrefix(d.Name(), ".") {
			blobs = append(blobs, p)
		}
		return nil
	})
	if page.Hits != 0 || len(blobs) != 0 {
		e.t.Errorf("%s: %d images and the blobs %v stored, want nothing", what, page.Hits, blobs)
	}
}

func md5Of(b []byte) string {
	s := md5.Sum(b)
	return hex.EncodeToString(s[:])
}

// TestUploadByURL: a JSON body naming a URL uploads the image there
// (PNG, JPEG, a type sniffed whatever the origin says, with the URL's
// credentials, through a host name the allowlist opens), with the
// identifier of its bytes; the same image again is 200; the audit entry
// records the URL without its credentials.
func TestUploadByURL(t *testing.T) {
	o := newOrigin(t)
	e, d := urlEnv(t, testConfig(), outbound.Config{Allow: []string{"127.0.0.1", "images.test"},
		Resolver: names{"images.test": {"127.0.0.1"}}})
	port := o.host[strings.LastIndexByte(o.host, ':')+1:]
	for _, c := range []struct {
		name, url string
		want      []byte
		ext       string
		status    int
	}{
		{"png", o.url + "/img.png", o.png, "png", http.StatusCreated},
		{"jpeg", o.url + "/img.jpg", o.jpg, "jpg", http.StatusCreated},
		{"same png again", o.url + "/img.png#fragment", o.png, "png", http.StatusOK},
		{"labelled text/html", o.url + "/png-labelled-html", o.png, "png", http.StatusOK},
		{"allowed host name", "http://images.test:" + port + "/img.jpg?size=large", o.jpg, "jpg", http.StatusOK},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.byURL(c.url)
			if r.StatusCode != c.status {
				t.Fatalf("%d %s, want %d", r.StatusCode, r.body, c.status)
			}
			m := r.json(t)
			if m["imageIdentifier"] != md5Of(c.want) || m["extension"] != c.ext {
				t.Errorf("answer %v, want the identifier %s and extension %s", m, md5Of(c.want), c.ext)
			}
			if got := r.Header.Get("X-Service-ImageIdentifier"); got != md5Of(c.want) {
				t.Errorf("X-Service-ImageIdentifier %q", got)
			}
		})
	}
	stored := e.get(e.tokenURL("/users/alice/images/"+md5Of(o.png), userPriv))
	if stored.StatusCode != http.StatusOK || md5Of(stored.body) != md5Of(o.png) {
		t.Errorf("stored image: %d, %d bytes, want the origin's bytes", stored.StatusCode, len(stored.body))
	}

	u, _ := url.Parse(o.url + "/auth.png")
	u.User = url.UserPassword("user", "secret")
	r := e.byURL(u.String())
	if r.StatusCode != http.StatusOK {
		t.Fatalf("with credentials: %d %s", r.StatusCode, r.body)
	}
	// A new image, so that its creation is audited.
	e.signed(http.MethodDelete, "/users/alice/images/"+md5Of(o.png), userKey, userPriv, nil)
	if r := e.byURL(u.String()); r.StatusCode != http.StatusCreated {
		t.Fatalf("with credentials, again: %d %s", r.StatusCode, r.body)
	}
	entries, _, err := e.db.AuditLog(t.Context(), storage.AuditQuery{Action: "image.create"})
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 || entries[0].Detail["source"] != o.url+"/auth.png" || entries[2].Detail["source"] != o.url+"/img.png" {
		t.Errorf("audit entries %+v, want the sources without credentials nor fragment", entries)
	}
	for _, a := range d.calls() {
		if a != o.host {
			t.Errorf("dialed %s, want only the origin %s", a, o.host)
		}
	}
}

// TestUploadByURLRedirects: redirects are followed up to five, each target
// checked by the guard before any connection; a loop, a sixth redirect, a
// target the guard refuses and a scheme other than http and https are
// 400s, and nothing is stored.
func TestUploadByURLRedirects(t *testing.T) {
	o := newOrigin(t)
	e, d := urlEnv(t, testConfig(), outbound.Config{Allow: []string{"127.0.0.1"}})
	to := func(u string) string { return o.url + "/to?u=" + url.QueryEscape(u) }
	for _, c := range []struct {
		name, url string
		status    int
		msg       string
	}{
		{"loop", o.url + "/loop", 400, "Upload by URL: redirect loop: " + o.url + "/loop redirects back to " + o.url + "/loop"},
		{"six redirects", o.url + "/r/6", 400, "Upload by URL: too many redirects: " + o.url + "/r/6 was redirected more than 5 times"},
		{"to the metadata address", to("http://169.254.169.254/latest/meta-data/"), 400,
			"Refused outbound connection: 169.254.169.254 is a link-local cloud metadata address (" + to("http://169.254.169.254/latest/meta-data/") +
				" redirected to http://169.254.169.254/latest/meta-data/)"},
		{"to another loopback address", to("http://127.0.0.2:" + o.host[len("127.0.0.1:"):] + "/img.png"), 400,
			"Refused outbound connection: 127.0.0.2 is a loopback address"},
		{"to a private address", to("https://10.0.0.1/img.png"), 400, "Refused outbound connection: 10.0.0.1 is a private address"},
		{"to IPv6 loopback", to("http://[::1]/img.png"), 400, "Refused outbound connection: ::1 is a loopback address"},
		{"to a file", to("file:///etc/passwd"), 400, "redirects to a file: URL; only http and https are fetched"},
		{"to gopher", to("gopher://example.com/"), 400, "redirects to a gopher: URL; only http and https are fetched"},
		{"without a Location", o.url + "/no-location", 502, "Upload by URL: " + o.url + "/no-location answered 302 Found without a Location"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.byURL(c.url)
			if r.StatusCode != c.status || !strings.Contains(r.errMessage(t), c.msg) {
				t.Errorf("%d %q, want %d saying %q", r.StatusCode, r.errMessage(t), c.status, c.msg)
			}
			e.wantNothingStored(c.name)
		})
	}
	r := e.byURL(o.url + "/r/5")
	if r.StatusCode != http.StatusCreated || r.json(t)["imageIdentifier"] != md5Of(o.png) {
		t.Errorf("five redirects: %d %s, want the image", r.StatusCode, r.body)
	}
	for _, a := range d.calls() {
		if a != o.host {
			t.Errorf("dialed %s, want only the origin %s", a, o.host)
		}
	}
}

// TestUploadByURLRefused: without the allowlist, addresses on this
// network are refused before any connection is made, whether named by
// address or by a host name resolving to one: the dialer fails the test
// if it is asked for anything.
func TestUploadByURLRefused(t *testing.T) {
	never := &recordingDialer{t: t, dialNothing: true}
	e, _ := urlEnv(t, testConfig(), outbound.Config{
		Dialer: never,
		Resolver: names{
			"localhost.test": {"127.0.0.1"},
			"metadata.test":  {"169.254.169.254"},
			"mixed.test":     {"8.8.8.8", "10.1.2.3"},
			"mapped.test":    {"::ffff:192.168.1.1"},
		},
	})
	for _, c := range []struct{ url, msg string }{
		{"http://127.0.0.1/img.png", "Refused outbound connection: 127.0.0.1 is a loopback address"},
		{"http://localhost.test/img.png", "Refused outbound connection: localhost.test resolves to a loopback address"},
		{"https://metadata.test/latest/meta-data/", "Refused outbound connection: metadata.test resolves to a link-local cloud metadata address"},
		{"http://mixed.test/", "Refused outbound connection: mixed.test resolves to a private address"},
		{"http://mapped.test/", "Refused outbound connection: mapped.test resolves to a private address"},
		{"http://169.254.169.254/latest/meta-data/", "Refused outbound connection: 169.254.169.254 is a link-local cloud metadata address"},
		{"http://[::1]:8080/", "Refused outbound connection: ::1 is a loopback address"},
		{"http://[::ffff:127.0.0.1]/", "Refused outbound connection: ::ffff:127.0.0.1 is a loopback address"},
		{"http://0.0.0.0/", "Refused outbound connection: 0.0.0.0 is the unspecified address"},
	} {
		t.Run(c.url, func(t *testing.T) {
			r := e.byURL(c.url)
			if r.StatusCode != http.StatusBadRequest || r.errMessage(t) != c.msg {
				t.Errorf("%d %q, want 400 %q", r.StatusCode, r.errMessage(t), c.msg)
			}
			if strings.Contains(r.errMessage(t), "10.1.2.3") || strings.Contains(r.errMessage(t), "192.168.1.1") {
				t.Errorf("the message tells what a name resolves to: %q", r.errMessage(t))
			}
			e.wantNothingStored(c.url)
		})
	}
	if dialed := never.calls(); len(dialed) != 0 {
		t.Errorf("dialed %v", dialed)
	}
}

// TestUploadByURLFailures: an origin that cannot answer an image in time,
// within the size limit or at all is a clear error and stores nothing;
// a body past the limit is refused while it streams.
func TestUploadByURLFailures(t *testing.T) {
	o := newOrigin(t)
	cfg := testConfig()
	cfg.Limits.MaxBodyBytes = 64 << 10
	e, _ := urlEnv(t, cfg, outbound.Config{Allow: []string{"127.0.0.1"}, Resolver: names{}})
	fast := testConfig()
	fast.Uploads.URLTimeout = 300 * time.Millisecond
	slow, _ := urlEnv(t, fast, outbound.Config{Allow: []string{"127.0.0.1"}})

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + closed.Addr().String() + "/img.png"
	closed.Close()

	for _, c := range []struct {
		name   string
		e      *env
		url    string
		status int
		msg    string
	}{
		{"no answer in time", slow, o.url + "/slow", 504, "Upload by URL: timed out fetching " + o.url + "/slow (uploads.urlTimeout is 300ms)"},
		{"body stalls", slow, o.url + "/stall", 504, "Upload by URL: timed out fetching " + o.url + "/stall (uploads.urlTimeout is 300ms)"},
		{"announced too large", e, o.url + "/announced", 413, "Upload by URL: the image at " + o.url + "/announced is larger than 65536 bytes, the limit"},
		{"not an image", e, o.url + "/text", 415, "Unsupported image type: text/plain"},
		{"an HTML page", e, o.url + "/page.html", 415, "Unsupported image type: text/html"},
		{"empty", e, o.url + "/empty", 415, "Unsupported image type: " + o.url + "/empty answered 200 OK with an empty body"},
		{"not found", e, o.url + "/missing", 502, "Upload by URL: " + o.url + "/missing answered 404 Not Found"},
		{"credentials refused", e, o.url + "/auth.png", 502, "Upload by URL: " + o.url + "/auth.png answered 401 Unauthorized"},
		{"connection refused", e, closedURL, 502, "Upload by URL: could not fetch " + closedURL + ": connection refused"},
		{"no such host", e, "http://nowhere.test/img.png", 502, "Upload by URL: could not fetch http://nowhere.test/img.png: no such host"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := c.e.byURL(c.url)
			if r.StatusCode != c.status || r.errMessage(t) != c.msg {
				t.Errorf("%d %q, want %d %q", r.StatusCode, r.errMessage(t), c.status, c.msg)
			}
			c.e.wantNothingStored(c.name)
		})
	}

	t.Run("streaming past the limit", func(t *testing.T) {
		// /endless never ends by itself: an answer at all shows the fetch
		// stopped while the body streamed, and 413 (not 504 at the 30s
		// uploads.urlTimeout) that it stopped at the limit.
		r := e.byURL(o.url + "/endless")
		want := "Upload by URL: the image at " + o.url + "/endless is larger than 65536 bytes, the limit"
		if r.StatusCode != http.StatusRequestEntityTooLarge || r.errMessage(t) != want {
			t.Errorf("%d %q, want 413 %q", r.StatusCode, r.errMessage(t), want)
		}
		<-o.stopped
		e.wantNothingStored("streaming past the limit")
	})
}

// TestUploadByURLDocument: a JSON body that is not {"url": "<absolute
// http or https URL>"} is a 400 naming the problem, and fetches nothing;
// a body labelled JSON that is not an object is the image itself.
func TestUploadByURLDocument(t *testing.T) {
	o := newOrigin(t)
	e, _ := urlEnv(t, testConfig(), outbound.Config{Allow: []string{"127.0.0.1"}})
	for _, c := range []struct{ body, msg string }{
		{`{"url": null}`, `Upload by URL: the document has no url: want {"url": "https://..."}`},
		{`{"url": ["http://example.com/"]}`, "Upload by URL: url must be a string, not an array"},
		{`{}`, `Upload by URL: the document has no url: want {"url": "https://..."}`},
		{`{"url": 1}`, "Upload by URL: url must be a string, not a number"},
		{`{"uri": "http://example.com/"}`, `Upload by URL: want the JSON document {"url": "https://..."}: unknown field "uri"`},
		{`{"url": "http://example.com/"} {}`, `Upload by URL: want the JSON document {"url": "https://..."} and nothing after it`},
		{`{"url": "http://example.com/"`, `Upload by URL: want the JSON document {"url": "https://..."}: unexpected EOF`},
		{`{"url": "/img.png"}`, "Upload by URL: url /img.png is not an absolute http or https URL"},
		{`{"url": "ftp://example.com/img.png"}`, "Upload by URL: url ftp://example.com/img.png is not an absolute http or https URL"},
		{`{"url": "file:///etc/passwd"}`, "Upload by URL: url file:///etc/passwd is not an absolute http or https URL"},
		{`{"url": "http://user:pw@:80/"}`, "Upload by URL: url http://:80/ is not an absolute http or https URL"},
		{`{"url": "http://exa mple.com/"}`, `Upload by URL: url is not a URL: "http://exa mple.com/": invalid character " " in host name`},
		{`{"url": "http://e.com/` + strings.Repeat("a", 8<<10) + `"}`, "Upload by URL: url is longer than 8192 bytes"},
		{``, `Upload by URL: the body is empty: want {"url": "https://..."}`},
	} {
		t.Run("body "+c.body[:min(len(c.body), 40)], func(t *testing.T) {
			r := e.signed(http.MethodPost, byURLPath, userKey, userPriv, []byte(c.body), "Content-Type", "application/json; charset=utf-8")
			if r.StatusCode != http.StatusBadRequest || r.errMessage(t) != c.msg {
				t.Errorf("%d %q, want 400 %q", r.StatusCode, r.errMessage(t), c.msg)
			}
		})
	}
	big := `{"url": "http://e.com/", "` + strings.Repeat("x", 16<<10) + `": 1}`
	if r := e.signed(http.MethodPost, byURLPath, userKey, userPriv, []byte(big), "Content-Type", "application/json"); r.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a document over 16 KiB: %d %s, want 413", r.StatusCode, r.body)
	}
	if n := o.hits.Load(); n != 0 {
		t.Errorf("the origin was asked %d times", n)
	}
	e.wantNothingStored("bad documents")

	// A PNG labelled application/json, sent to uploadImage.
	png := pngImage(t, 8, 8, 1)
	if rec := e.uncheckedUpload(png, "application/json"); rec.Code != http.StatusCreated || !strings.Contains(rec.Body.String(), md5Of(png)) {
		t.Errorf("a PNG labelled JSON: %d %s, want it uploaded", rec.Code, rec.Body)
	}
	// Bytes sent to uploadImageByURL are no document.
	r := e.signed(http.MethodPost, byURLPath, userKey, userPriv, png, "Content-Type", "application/json")
	if r.StatusCode != http.StatusBadRequest || !strings.HasPrefix(r.errMessage(t), `Upload by URL: want the JSON document {"url": "https://..."}: invalid character`) {
		t.Errorf("a PNG sent by URL: %d %q, want a 400 naming the document", r.StatusCode, r.errMessage(t))
	}
}

// TestUploadByURLFormerForm: a JSON object labelled application/json sent
// to POST /users/<user>/images is still an upload by URL, as it was before
// uploadImageByURL had a path of its own.
func TestUploadByURLFormerForm(t *testing.T) {
	o := newOrigin(t)
	e, _ := urlEnv(t, testConfig(), outbound.Config{Allow: []string{"127.0.0.1"}})
	rec := e.uncheckedUpload([]byte(`{"url": "`+o.url+`/img.png"}`), "application/json; charset=utf-8")
	if rec.Code != http.StatusCreated || !strings.Contains(rec.Body.String(), md5Of(o.png)) {
		t.Errorf("%d %s, want the origin's PNG uploaded", rec.Code, rec.Body)
	}
	rec = e.uncheckedUpload([]byte(`{"url": 1}`), "application/json")
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "Upload by URL: url must be a string, not a number") {
		t.Errorf("a bad document: %d %s, want the 400 of uploadImageByURL", rec.Code, rec.Body)
	}
}

// TestUploadByURLAuthorisation: nothing is fetched for a request that is
// not authenticated or not allowed, nor for a listener that asks for the
// upload before authentication; an upload token's policy holds for the
// fetched image, and the upload is audited with the token and the URL.
func TestUploadByURLAuthorisation(t *testing.T) {
	o := newOrigin(t)
	e, _ := urlEnv(t, tokenConfig(), outbound.Config{Allow: []string{"127.0.0.1"}})
	body := []byte(`{"url": "` + o.url + `/img.png"}`)
	post := byURLPath
	bearer := func(token string, body []byte) response {
		return e.request(http.MethodPost, e.url+post, body, "Authorization", "Bearer "+token, "Content-Type", "application/json")
	}
	for _, c := range []struct {
		name   string
		r      func() response
		status int
	}{
		{"unsigned", func() response {
			return e.request(http.MethodPost, e.url+post, body, "Content-Type", "application/json")
		}, 400},
		{"read-only key", func() response {
			return e.signed(http.MethodPost, post, roKey, roPriv, body, "Content-Type", "application/json")
		}, 400},
		{"bad signature", func() response {
			return e.signed(http.MethodPost, post, userKey, "wrong", body, "Content-Type", "application/json")
		}, 400},
		{"unknown token", func() response { return bearer("vut_nope", body) }, 401},
	} {
		t.Run(c.name, func(t *testing.T) {
			if r := c.r(); r.StatusCode != c.status {
				t.Errorf("%d %s, want %d", r.StatusCode, r.body, c.status)
			}
		})
	}
	if n := o.hits.Load(); n != 0 {
		t.Errorf("the origin was asked %d times before any request was authenticated", n)
	}

	t.Run("token policy", func(t *testing.T) {
		small := e.issue(map[string]any{"maxBytes": len(o.png) - 1, "uploads": 5})
		r := bearer(small.Token, body)
		wantRefusal(t, "too large for the token", r, http.StatusRequestEntityTooLarge, 0,
			fmt.Sprintf("Image too large for the upload token: it allows at most %d bytes", len(o.png)-1))
		jpegOnly := e.issue(map[string]any{"formats": []string{"jpg"}})
		r = bearer(jpegOnly.Token, body)
		wantRefusal(t, "a type the token does not take", r, http.StatusUnsupportedMediaType, 203,
			"Image type png is not accepted by the upload token (it accepts jpg)")
		e.wantNothingStored("token policy")

		tok := e.issue(map[string]any{"formats": []string{"png"}, "metadata": map[string]any{"from": "url"}})
		if r := bearer(tok.Token, body); r.StatusCode != http.StatusCreated {
			t.Fatalf("with a token: %d %s", r.StatusCode, r.body)
		}
		r = bearer(tok.Token, []byte(`{"url": "`+o.url+`/img.jpg"}`))
		wantRefusal(t, "token used up", r, http.StatusUnauthorized, 113, "Upload token is used up")
		entries, _, err := e.db.AuditLog(t.Context(), storage.AuditQuery{Action: "image.create"})
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 || entries[0].Actor != userKey || entries[0].Detail["uploadToken"] != tok.ID ||
			entries[0].Detail["source"] != o.url+"/img.png" {
			t.Errorf("audit %+v, want the issuing key's image.create with the token and the source", entries)
		}
	})

	t.Run("listener before authentication", func(t *testing.T) {
		before := o.hits.Load()
		e.srv.Bus.On("images.post", 200, func(ctx context.Context, ev *api.Event) error {
			_, err := ev.Body(ctx)
			return err
		})
		r := e.signed(http.MethodPost, post, userKey, userPriv, []byte(`{"url": "`+o.url+`/img.jpg"}`), "Content-Type", "application/json")
		if r.StatusCode != http.StatusInternalServerError || !strings.Contains(r.errMessage(t), "fetched only once the request is authenticated") {
			t.Errorf("%d %q, want a 500 saying why", r.StatusCode, r.errMessage(t))
		}
		if n := o.hits.Load() - before; n != 0 {
			t.Errorf("the origin was asked %d times", n)
		}
	})
}
