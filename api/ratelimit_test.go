package api_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"github.com/vitrine/vitrine/storage"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/api/ratelimit"
)

// fixedClock is a clock that stands still unless a test moves it, so
// that every budget and every header value is exact.
type fixedClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fixedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// limitedEnv is a server whose limiter counts in process on a clock that
// stands still, reporting to metrics.
func limitedEnv(t *testing.T, cfg api.Config, rl ratelimit.Config, m *api.Metrics) *env {
	t.Helper()
	clk := &fixedClock{t: time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)}
	o := ratelimit.Options{Now: clk.Now}
	if m != nil {
		o.Observer = m
	}
	l, err := ratelimit.New(rl, o)
	if err != nil {
		t.Fatal(err)
	}
	return newEnvWith(t, cfg, func(d *api.Deps) { d.RateLimits, d.Metrics = l, m })
}

// wantLimits checks a response's status and RateLimit header fields.
func wantLimits(t *testing.T, step string, r response, status int, policy, limit string) {
	t.Helper()
	if r.StatusCode != status {
		t.Fatalf("%s: %d %s, want %d", step, r.StatusCode, r.body, status)
	}
	if got := r.Header.Get("RateLimit-Policy"); got != policy {
		t.Errorf("%s: RateLimit-Policy\n  %s\nwant\n  %s", step, got, policy)
	}
	if got := r.Header.Get("RateLimit"); got != limit {
		t.Errorf("%s: RateLimit\n  %s\nwant\n  %s", step, got, limit)
	}
}

// want429 checks a refusal: its Retry-After and its message, which names
// the class, the scope and the limit.
func want429(t *testing.T, step string, r response, retryAfter, message string) {
	t.Helper()
	if r.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("%s: %d %s, want 429", step, r.StatusCode, r.body)
	}
	if got := r.Header.Get("Retry-After"); got != retryAfter {
		t.Errorf("%s: Retry-After %q, want %q", step, got, retryAfter)
	}
	if got := r.errMessage(t); got != message {
		t.Errorf("%s: message\n  %s\nwant\n  %s", step, got, message)
	}
	if code, _ := r.json(t)["error"].(map[string]any)["code"].(float64); code != 429 {
		t.Errorf("%s: error.code %v, want 429", step, code)
	}
}

// TestRateLimits walks reads, writes and renders through their budgets
// per key and per address, checking the RateLimit headers of every answer
// and the 429 past each limit.
func TestRateLimits(t *testing.T) {
	m := api.NewMetrics()
	e := limitedEnv(t, testConfig(), ratelimit.Config{
		PerKey:     map[string]string{"reads": "3/h", "writes": "2/h", "renders": "1/h"},
		PerAddress: map[string]string{"reads": "100/h"},
	}, m)
	const (
		addrPolicy = `"reads-address";q=100;w=3600`
		readPolicy = addrPolicy + `, "reads-key";q=3;w=3600`
	)
	user := e.tokenURL("/users/alice", userPriv)

	t.Run("unguarded route: per address only", func(t *testing.T) {
		wantLimits(t, "GET /status", e.get(e.url+"/status"), 200, addrPolicy, `"reads-address";r=99;t=36`)
	})
	t.Run("reads per key", func(t *testing.T) {
		// 3/h is 1200s a request: t is the time until the whole burst is
		// back, and with none left until the next request goes through.
		wantLimits(t, "read 1", e.get(user), 200, readPolicy, `"reads-address";r=98;t=72, "reads-key";r=2;t=1200`)
		wantLimits(t, "read 2", e.get(user), 200, readPolicy, `"reads-address";r=97;t=108, "reads-key";r=1;t=2400`)
		wantLimits(t, "read 3", e.get(user), 200, readPolicy, `"reads-address";r=96;t=144, "reads-key";r=0;t=1200`)
		r := e.get(user)
		wantLimits(t, "read 4", r, 429, readPolicy, `"reads-address";r=95;t=180, "reads-key";r=0;t=1200`)
		want429(t, "read 4", r, "1200", "Rate limit exceeded for reads per public key: the limit is 3/h (burst 3); retry in 1200 seconds")
		if r := e.request(http.MethodHead, user, nil); r.StatusCode != 429 || r.Header.Get("Retry-After") != "1200" {
			t.Errorf("HEAD past the limit: %d, Retry-After %q", r.StatusCode, r.Header.Get("Retry-After"))
		}
	})
	t.Run("a request that does not prove its key spends only the address's budget", func(t *testing.T) {
		for i := range 3 {
			r := e.get(e.url + "/users/alice?publicKey=reader&accessToken=0000")
			wantLimits(t, "bad token", r, 400, addrPolicy, `"reads-address";r=`+[]string{"93", "92", "91"}[i]+`;t=`+[]string{"252", "288", "324"}[i])
		}
		wantLimits(t, "reader's first read", e.get(e.tokenURL("/users/alice?publicKey=reader", roPriv)), 200,
			readPolicy, `"reads-address";r=90;t=360, "reads-key";r=2;t=1200`)
	})

	var id string
	t.Run("writes per key", func(t *testing.T) {
		const policy = `"writes-key";q=2;w=3600`
		up := func(seed uint8) response {
			return e.signed(http.MethodPost, "/users/alice/images", userKey, userPriv, pngImage(t, 40, 30, seed))
		}
		r := up(1)
		wantLimits(t, "upload 1", r, 201, policy, `"writes-key";r=1;t=1800`)
		id, _ = r.json(t)["imageIdentifier"].(string)
		wantLimits(t, "upload 2", up(2), 201, policy, `"writes-key";r=0;t=1800`)
		r = up(3)
		wantLimits(t, "upload 3", r, 429, policy, `"writes-key";r=0;t=1800`)
		want429(t, "upload 3", r, "1800", "Rate limit exceeded for writes per public key: the limit is 2/h (burst 2); retry in 1800 seconds")
	})
	t.Run("renders per key: only variant cache misses", func(t *testing.T) {
		img := func(width string) string {
			return e.tokenURL("/users/alice/images/"+id+".png?publicKey=admin&t[]=thumbnail:width="+width+",height=10", adminPriv)
		}
		r := e.get(img("10"))
		wantLimits(t, "first render", r, 200, readPolicy+`, "renders-key";q=1;w=3600`,
			`"reads-address";r=89;t=396, "reads-key";r=2;t=1200, "renders-key";r=0;t=3600`)
		if r.Header.Get("X-Service-TransformationCache") != "Miss" {
			t.Fatalf("first render: cache %q", r.Header.Get("X-Service-TransformationCache"))
		}
		r = e.get(img("10"))
		wantLimits(t, "the same variant, cached", r, 200, readPolicy, `"reads-address";r=88;t=432, "reads-key";r=1;t=2400`)
		r = e.get(img("12"))
		wantLimits(t, "a new variant", r, 429, readPolicy+`, "renders-key";q=1;w=3600`,
			`"reads-address";r=87;t=468, "reads-key";r=0;t=1200, "renders-key";r=0;t=3600`)
		want429(t, "a new variant", r, "3600", "Rate limit exceeded for renders per public key: the limit is 1/h (burst 1); retry in 3600 seconds")
	})
	t.Run("metrics count the refusals", func(t *testing.T) {
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		for _, want := range []string{
			`vitrine_ratelimit_limited_total{class="reads",scope="key"} 2`, // the GET and the HEAD
			`vitrine_ratelimit_limited_total{class="writes",scope="key"} 1`,
			`vitrine_ratelimit_limited_total{class="renders",scope="key"} 1`,
		} {
			if !strings.Contains(rec.Body.String(), want) {
				t.Errorf("metrics lack %s", want)
			}
		}
		if strings.Contains(rec.Body.String(), "vitrine_ratelimit_store_up") {
			t.Error("vitrine_ratelimit_store_up is exported without a shared store")
		}
	})
	t.Run("usage counts the refusals per key", func(t *testing.T) {
		if err := e.usage.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		rows, err := e.db.UsageSince(context.Background(), storage.MetricRateLimited, "2000-01-01")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		for _, r := range rows {
			got[r.Label] += r.Value
		}
		// The key's GET and HEAD and its upload; admin's new variant.
		if want := map[string]int64{userKey: 3, "admin": 1}; !maps.Equal(got, want) {
			t.Errorf("ratelimit.hits per label %v, want %v", got, want)
		}
	})
}

// TestRateLimitPerAddress counts every request of a client address, as
// trustedProxies determine it, whatever its key and path; an IPv6 client
// is counted by its /64.
func TestRateLimitPerAddress(t *testing.T) {
	cfg := testConfig()
	cfg.TrustedProxies = []string{"127.0.0.1"}
	e := limitedEnv(t, cfg, ratelimit.Config{PerAddress: map[string]string{"reads": "2/h", "writes": "1/m"}}, nil)
	from := func(addr string) []string { return []string{"X-Forwarded-For", addr} }
	user := e.tokenURL("/users/alice", userPriv)
	wantLimits(t, "first", e.get(user, from("192.0.2.1")...), 200, `"reads-address";q=2;w=3600`, `"reads-address";r=1;t=1800`)
	wantLimits(t, "an unknown path", e.get(e.url+"/nothing/here", from("192.0.2.1")...), 404,
		`"reads-address";q=2;w=3600`, `"reads-address";r=0;t=1800`)
	r := e.get(e.tokenURL("/users/alice?publicKey=reader", roPriv), from("192.0.2.1")...)
	want429(t, "third, with another key", r, "1800", "Rate limit exceeded for reads per client address: the limit is 2/h (burst 2); retry in 1800 seconds")
	if r := e.get(e.url+"/nothing/here", from("192.0.2.1")...); r.StatusCode != 429 {
		t.Errorf("an unknown path past the limit: %d, want 429", r.StatusCode)
	}
	wantLimits(t, "another address", e.get(user, from("192.0.2.2")...), 200, `"reads-address";q=2;w=3600`, `"reads-address";r=1;t=1800`)
	e.get(user, from("2001:db8:1:2::1")...)
	e.get(user, from("2001:db8:1:2::2")...)
	if r := e.get(user, from("2001:db8:1:2:ffff::3")...); r.StatusCode != 429 {
		t.Errorf("a third address of the same IPv6 /64: %d, want 429", r.StatusCode)
	}
	if r := e.get(user, from("2001:db8:1:3::1")...); r.StatusCode != 200 {
		t.Errorf("another /64: %d, want 200", r.StatusCode)
	}
	// Writes have a budget of their own, counted before the signature is
	// checked.
	w := e.signed(http.MethodPut, "/users/alice/images/nope/metadata", userKey, userPriv, []byte(`{}`), from("192.0.2.1")...)
	wantLimits(t, "a write", w, 404, `"writes-address";q=1;w=60`, `"writes-address";r=0;t=60`)
	w = e.request(http.MethodDelete, e.url+"/users/alice/images/nope", nil, from("192.0.2.1")...)
	want429(t, "a second write, unsigned", w, "60", "Rate limit exceeded for writes per client address: the limit is 1/m (burst 1); retry in 60 seconds")
	// The probes are never counted.
	for range 3 {
		if r := e.get(e.url+"/healthz", from("192.0.2.1")...); r.StatusCode != 200 || r.Header.Get("RateLimit") != "" {
			t.Fatalf("/healthz: %d %v", r.StatusCode, r.Header)
		}
	}
}

// TestRateLimitsOff checks that without a limiter no answer carries the
// headers.
func TestRateLimitsOff(t *testing.T) {
	e := newEnv(t, testConfig())
	for range 3 {
		r := e.get(e.tokenURL("/users/alice", userPriv))
		if r.StatusCode != 200 || r.Header.Get("RateLimit-Policy") != "" || r.Header.Get("RateLimit") != "" {
			t.Fatalf("%d %v", r.StatusCode, r.Header)
		}
	}
}

const envRedis = "VITRINE_TEST_REDIS"

// redisURL is the Redis of VITRINE_TEST_REDIS; the test skips without it.
func redisURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv(envRedis)
	if u == "" {
		t.Skip("set " + envRedis + "=redis://127.0.0.1:6379/0 to run")
	}
	return u
}

// TestRateLimitRedisShared runs two servers, each with its own limiter on
// the same Redis, and one key reading through both in turn: they share
// one budget, and the headers of either say what is left of it.
func TestRateLimitRedisShared(t *testing.T) {
	cfg := ratelimit.Config{PerKey: map[string]string{"reads": "4/h"}, Redis: redisURL(t)}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	ns := "test-api-" + hex.EncodeToString(b)
	var envs [2]*env
	for i := range envs {
		l, err := ratelimit.New(cfg, ratelimit.Options{Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		envs[i] = newEnvWith(t, testConfig(), func(d *api.Deps) { d.RateLimits = l })
	}
	allowed := 0
	for i := range 10 {
		e := envs[i%2]
		r := e.get(e.tokenURL("/users/alice", userPriv))
		switch r.StatusCode {
		case 200:
			allowed++
			if want := `"reads-key";r=` + string(rune('0'+4-allowed)); !strings.HasPrefix(r.Header.Get("RateLimit"), want+";") {
				t.Errorf("request %d (server %d): RateLimit %q, want %s;t=…", i, i%2, r.Header.Get("RateLimit"), want)
			}
		case 429:
			if r.Header.Get("Retry-After") == "" || !strings.HasPrefix(r.Header.Get("RateLimit"), `"reads-key";r=0;`) {
				t.Errorf("request %d refused with Retry-After %q, RateLimit %q", i, r.Header.Get("Retry-After"), r.Header.Get("RateLimit"))
			}
		default:
			t.Fatalf("request %d: %d %s", i, r.StatusCode, r.body)
		}
	}
	if allowed != 4 {
		t.Errorf("%d of 10 reads through two servers allowed, want the shared 4", allowed)
	}
}

// TestRateLimitRedisDown points the limiter at a loopback port where no
// Redis listens: every request is served (never a 5xx), the answers carry
// the policies but no RateLimit (nothing was counted), the log says so
// once, and the metrics count each check and show the store down.
func TestRateLimitRedisDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var logs bytes.Buffer
	var mu sync.Mutex
	m := api.NewMetrics()
	l, err := ratelimit.New(ratelimit.Config{
		PerKey:     map[string]string{"reads": "1/h"},
		PerAddress: map[string]string{"reads": "1/h"},
		Redis:      "redis://" + addr,
	}, ratelimit.Options{Observer: m, Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	e := newEnvWith(t, testConfig(), func(d *api.Deps) { d.RateLimits, d.Metrics = l, m })
	for i := range 10 {
		r := e.get(e.tokenURL("/users/alice", userPriv))
		if r.StatusCode != 200 {
			t.Fatalf("request %d with Redis down: %d %s", i, r.StatusCode, r.body)
		}
		if r.Header.Get("RateLimit-Policy") != `"reads-address";q=1;w=3600, "reads-key";q=1;w=3600` || r.Header.Get("RateLimit") != "" {
			t.Errorf("request %d: RateLimit-Policy %q, RateLimit %q", i, r.Header.Get("RateLimit-Policy"), r.Header.Get("RateLimit"))
		}
	}
	mu.Lock()
	if n := strings.Count(logs.String(), "the shared store failed"); n != 1 {
		t.Errorf("%d log lines for one outage, want 1:\n%s", n, logs.String())
	}
	mu.Unlock()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{"vitrine_ratelimit_store_errors_total 20", "vitrine_ratelimit_store_up 0"} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
