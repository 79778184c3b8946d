package cdn

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
)

// receiver is a local stand-in for a CDN's purge API: it records every
// request and answers with status and body.
type receiver struct {
	mu       sync.Mutex
	requests []recorded
	status   int
	body     string
}

type recorded struct {
	method, path string
	header       http.Header
	body         []byte
}

func newReceiver(t *testing.T, status int, body string) (*receiver, string) {
	t.Helper()
	rc := &receiver{status: status, body: body}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.requests = append(rc.requests, recorded{r.Method, r.URL.Path, r.Header.Clone(), b})
		rc.mu.Unlock()
		w.WriteHeader(rc.status)
		_, _ = io.WriteString(w, rc.body)
	}))
	t.Cleanup(srv.Close)
	return rc, srv.URL
}

func (rc *receiver) got() []recorded {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.requests)
}

// tagList makes n distinct tags.
func tagList(n int) []string {
	tags := make([]string, n)
	for i := range tags {
		tags[i] = fmt.Sprintf("vitrine-image:alice/%d", i)
	}
	return tags
}

// TestFastlyRequest checks the bulk purge by surrogate key as Fastly's API
// reference describes it: POST /service/<id>/purge, the keys space
// separated in Surrogate-Key, the token in Fastly-Key, at most 256 keys a
// request.
func TestFastlyRequest(t *testing.T) {
	t.Parallel()
	rc, base := newReceiver(t, 200, `{"vitrine-all": "108-1391560174-974124"}`)
	p, err := NewPurger(PurgerConfig{Type: TypeFastly, URL: base, ServiceID: "SU1Z0isxPaozGVKXdv0eY", Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	tags := tagList(300)
	if err := p.Purge(context.Background(), append(tags, tags[0], "")); err != nil {
		t.Fatal(err)
	}
	reqs := rc.got()
	if len(reqs) != 2 {
		t.Fatalf("%d requests for 300 keys, want 2 (256 and 44)", len(reqs))
	}
	var sent []string
	for _, r := range reqs {
		if r.method != http.MethodPost || r.path != "/service/SU1Z0isxPaozGVKXdv0eY/purge" {
			t.Errorf("%s %s, want POST /service/SU1Z0isxPaozGVKXdv0eY/purge", r.method, r.path)
		}
		if r.header.Get("Fastly-Key") != "tok" {
			t.Errorf("Fastly-Key %q", r.header.Get("Fastly-Key"))
		}
		if len(r.body) != 0 {
			t.Errorf("body %q, want none (the keys are in the header)", r.body)
		}
		keys := strings.Split(r.header.Get("Surrogate-Key"), " ")
		if len(keys) > 256 {
			t.Errorf("%d keys in one request", len(keys))
		}
		sent = append(sent, keys...)
	}
	if !slices.Equal(sent, tags) {
		t.Errorf("keys sent differ from the tags (each once, in order): %d sent", len(sent))
	}
	if p.Name() != "fastly service SU1Z0isxPaozGVKXdv0eY" {
		t.Errorf("Name() = %q", p.Name())
	}
}

// TestCloudflareRequest checks the purge by cache tag as Cloudflare's API
// reference describes it: POST /zones/<zone>/purge_cache, a JSON body
// {"tags": [...]}, a bearer token, and the answer's `success`.
func TestCloudflareRequest(t *testing.T) {
	t.Parallel()
	rc, base := newReceiver(t, 200, `{"success": true, "errors": [], "messages": [], "result": {"id": "x"}}`)
	p, err := NewPurger(PurgerConfig{Type: TypeCloudflare, URL: base + "/client/v4", ZoneID: "023e105f4ecef8ad9ca31a8372d0c353",
		Token: "cf-token", Batch: 30})
	if err != nil {
		t.Fatal(err)
	}
	tags := tagList(70)
	if err := p.Purge(context.Background(), tags); err != nil {
		t.Fatal(err)
	}
	reqs := rc.got()
	if len(reqs) != 3 {
		t.Fatalf("%d requests for 70 tags in batches of 30, want 3", len(reqs))
	}
	var sent []string
	for _, r := range reqs {
		if r.method != http.MethodPost || r.path != "/client/v4/zones/023e105f4ecef8ad9ca31a8372d0c353/purge_cache" {
			t.Errorf("%s %s", r.method, r.path)
		}
		if r.header.Get("Authorization") != "Bearer cf-token" || r.header.Get("Content-Type") != "application/json" {
			t.Errorf("Authorization %q, Content-Type %q", r.header.Get("Authorization"), r.header.Get("Content-Type"))
		}
		var body map[string][]string
		if err := json.Unmarshal(r.body, &body); err != nil || len(body) != 1 || len(body["tags"]) > 30 {
			t.Fatalf("body %s: want {\"tags\": [at most 30]} (%v)", r.body, err)
		}
		sent = append(sent, body["tags"]...)
	}
	if !slices.Equal(sent, tags) {
		t.Errorf("tags sent differ from the tags: %d sent", len(sent))
	}

	// A 200 whose envelope says it failed is a failure.
	rc.body = `{"success": false, "errors": [{"code": 1134, "message": "not entitled"}]}`
	if err := p.Purge(context.Background(), tags[:1]); err == nil || !strings.Contains(err.Error(), "not entitled") {
		t.Errorf("success false: %v, want an error quoting the answer", err)
	}
}

// TestGenericRequest checks the generic purger: POST to the URL, the JSON
// body {"tags": [...]}, the configured headers and the bearer token.
func TestGenericRequest(t *testing.T) {
	t.Parallel()
	rc, base := newReceiver(t, 204, "")
	p, err := NewPurger(PurgerConfig{Type: TypeHTTP, URL: base + "/hooks/purge?src=vitrine", Token: "t0k",
		Headers: map[string]string{"X-Purge-Source": "vitrine"}, Batch: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Purge(context.Background(), []string{"a", "b", "c"}); err != nil {
		t.Fatal(err)
	}
	reqs := rc.got()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	for i, want := range []string{`{"tags":["a","b"]}`, `{"tags":["c"]}`} {
		r := reqs[i]
		if r.method != http.MethodPost || r.path != "/hooks/purge" || string(r.body) != want {
			t.Errorf("request %d: %s %s %s, want POST /hooks/purge %s", i, r.method, r.path, r.body, want)
		}
		if r.header.Get("X-Purge-Source") != "vitrine" || r.header.Get("Authorization") != "Bearer t0k" {
			t.Errorf("request %d: headers %v", i, r.header)
		}
	}
	if err := p.Purge(context.Background(), nil); err != nil || len(rc.got()) != 2 {
		t.Errorf("no tags: %v, %d requests; want none sent", err, len(rc.got())-2)
	}
}

// TestPurgeErrors checks that every purger reports a 4xx or 5xx answer
// with its status and the start of its body.
func TestPurgeErrors(t *testing.T) {
	t.Parallel()
	for _, status := range []int{403, 500} {
		for _, typ := range []string{TypeVarnish, TypeFastly, TypeCloudflare, TypeHTTP} {
			t.Run(fmt.Sprintf("%s %d", typ, status), func(t *testing.T) {
				t.Parallel()
				answer := `{"msg": "no purge for you"}` + strings.Repeat(".", 1000)
				_, base := newReceiver(t, status, answer)
				cfg := PurgerConfig{Type: typ, URL: base, Token: "t"}
				switch typ {
				case TypeFastly:
					cfg.ServiceID = "s"
				case TypeCloudflare:
					cfg.ZoneID = "z"
				}
				p, err := NewPurger(cfg)
				if err != nil {
					t.Fatal(err)
				}
				err = p.Purge(context.Background(), []string{"vitrine-all"})
				if err == nil {
					t.Fatal("no error")
				}
				msg := err.Error()
				if !strings.Contains(msg, fmt.Sprint(status)) || !strings.Contains(msg, "no purge for you") {
					t.Errorf("error %q: want the status and the body's start", msg)
				}
				if len(msg) > 600 {
					t.Errorf("error of %d bytes: the body should be cut", len(msg))
				}
			})
		}
	}
}

// TestVarnishRequest checks the Varnish purger's requests (the test of
// the real thing is TestVarnish): PURGE to every server, the tags space
// separated in xkey-purge, and a server down does not stop the others.
func TestVarnishRequest(t *testing.T) {
	t.Parallel()
	rc1, u1 := newReceiver(t, 200, "Invalidated 1 objects")
	rc2, u2 := newReceiver(t, 200, "Invalidated 0 objects")
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	p, err := NewPurger(PurgerConfig{Type: TypeVarnish, URL: u1 + "/", URLs: []string{down.URL, u2},
		Headers: map[string]string{"Host": "images.example"}})
	if err != nil {
		t.Fatal(err)
	}
	err = p.Purge(context.Background(), []string{"vitrine-image:alice/a", "vitrine-images:alice"})
	if err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(down.URL, "http://")) {
		t.Errorf("error %v: want one naming the server that is down", err)
	}
	for i, rc := range []*receiver{rc1, rc2} {
		reqs := rc.got()
		if len(reqs) != 1 || reqs[0].method != "PURGE" || reqs[0].header.Get("Xkey-Purge") != "vitrine-image:alice/a vitrine-images:alice" {
			t.Fatalf("server %d: %+v", i, reqs)
		}
	}
}

func TestPurgerConfigValidate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		cfg  PurgerConfig
		bad  string
	}{
		{"varnish", PurgerConfig{Type: "varnish", URL: "http://127.0.0.1:6081/"}, ""},
		{"varnish urls", PurgerConfig{Type: "varnish", URLs: []string{"http://a:6081", "http://b:6081"}}, ""},
		{"fastly", PurgerConfig{Type: "fastly", ServiceID: "abc", Token: "t"}, ""},
		{"cloudflare", PurgerConfig{Type: "cloudflare", ZoneID: "z", Token: "t", Batch: 30}, ""},
		{"http", PurgerConfig{Type: "http", URL: "https://purge.internal/tags"}, ""},
		{"type", PurgerConfig{Type: "akamai"}, "want varnish, fastly, cloudflare or http"},
		{"varnish without url", PurgerConfig{Type: "varnish"}, "needs url"},
		{"fastly without token", PurgerConfig{Type: "fastly", ServiceID: "abc", TokenEnv: "FASTLY_TOKEN"}, "tokenEnv FASTLY_TOKEN was not read"},
		{"fastly batch", PurgerConfig{Type: "fastly", ServiceID: "abc", Token: "t", Batch: 257}, "at most 256"},
		{"cloudflare without zone", PurgerConfig{Type: "cloudflare", Token: "t"}, "needs zoneID"},
		{"zone with a slash", PurgerConfig{Type: "cloudflare", ZoneID: "a/b", Token: "t"}, "zoneID"},
		{"http without url", PurgerConfig{Type: "http"}, "needs url"},
		{"url scheme", PurgerConfig{Type: "http", URL: "ftp://x/"}, "http:// or https://"},
		{"urls elsewhere", PurgerConfig{Type: "http", URL: "http://x/", URLs: []string{"http://y/"}}, "varnish only"},
		{"header", PurgerConfig{Type: "http", URL: "http://x/", Headers: map[string]string{"X-A": "b\r\nX-B: c"}}, "line break"},
		{"timeout", PurgerConfig{Type: "http", URL: "http://x/", Timeout: -1}, "negative"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Validate()
			if c.bad == "" && err != nil || c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad)) {
				t.Errorf("Validate() = %v, want an error with %q", err, c.bad)
			}
		})
	}
}

func TestResolveToken(t *testing.T) {
	t.Parallel()
	env := map[string]string{"CF_TOKEN": "secret", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	c := PurgerConfig{Type: "cloudflare", ZoneID: "z", TokenEnv: "CF_TOKEN"}
	if err := c.ResolveToken(lookup); err != nil || c.Token != "secret" || c.Validate() != nil {
		t.Errorf("ResolveToken: %v, token %q", err, c.Token)
	}
	for _, bad := range []PurgerConfig{
		{Type: "fastly", TokenEnv: "MISSING"},
		{Type: "fastly", TokenEnv: "EMPTY"},
		{Type: "fastly", TokenEnv: "CF_TOKEN", Token: "also"},
	} {
		if err := bad.ResolveToken(lookup); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}
