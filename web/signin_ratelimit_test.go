package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vitrine/vitrine/api/ratelimit"
	"github.com/vitrine/vitrine/web"
)

// signInEnv is the UI with the API's rate limits rl, counted in process
// on the UI's clock.
func signInEnv(t *testing.T, rl ratelimit.Config) *env {
	t.Helper()
	return newEnvLimited(t, web.Config{}, nil, func(now func() time.Time) *ratelimit.Limiter {
		l, err := ratelimit.New(rl, ratelimit.Options{Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}, nil)
}

// TestSignInRateLimit counts every sign-in attempt per client address and
// every verified key pair per public key (rateLimits' signin class); past
// either limit the form answers 429 with Retry-After and the limit's
// message, and no session starts.
func TestSignInRateLimit(t *testing.T) {
	e := signInEnv(t, ratelimit.Config{
		PerAddress: map[string]string{"signin": "3/h"},
		PerKey:     map[string]string{"signin": "1/h"},
	})
	p := e.browser(t).signIn("admin", adminPriv)
	if p.status != http.StatusSeeOther {
		t.Fatalf("first sign-in: %d", p.status)
	}
	if got, want := p.header.Get("RateLimit-Policy"), `"signin-address";q=3;w=3600, "signin-key";q=1;w=3600`; got != want {
		t.Errorf("RateLimit-Policy %q, want %q", got, want)
	}
	if got, want := p.header.Get("RateLimit"), `"signin-address";r=2;t=1200, "signin-key";r=0;t=3600`; got != want {
		t.Errorf("RateLimit %q, want %q", got, want)
	}

	b := e.browser(t)
	p = b.signIn("admin", adminPriv)
	if p.status != http.StatusTooManyRequests || p.header.Get("Retry-After") != "3600" ||
		!strings.Contains(p.body, "Rate limit exceeded for signin per public key: the limit is 1/h (burst 1)") {
		t.Fatalf("a second sign-in with the key: %d, Retry-After %q, want 429 naming the limit:\n%s", p.status, p.header.Get("Retry-After"), p.body)
	}
	if p := b.do(http.MethodGet, "/admin/", nil, nil); p.status != http.StatusSeeOther {
		t.Errorf("the refused sign-in started a session: GET /admin/ answered %d", p.status)
	}

	// A wrong key pair is not counted per key (it proves no key), but
	// per address.
	if p := e.browser(t).signIn("admin", "wrong"); p.status != http.StatusUnauthorized {
		t.Fatalf("a wrong pair: %d, want 401", p.status)
	}
	p = e.browser(t).signIn("admin", adminPriv)
	if p.status != http.StatusTooManyRequests || p.header.Get("Retry-After") != "1200" ||
		!strings.Contains(p.body, "Rate limit exceeded for signin per client address: the limit is 3/h (burst 3)") {
		t.Fatalf("a fourth attempt from the address: %d, Retry-After %q:\n%s", p.status, p.header.Get("Retry-After"), p.body)
	}
	e.clock.Add(time.Hour)
	b = e.browser(t)
	if p := b.signIn("admin", adminPriv); p.status != http.StatusSeeOther {
		t.Fatalf("an hour later: %d", p.status)
	}
	// The overview charts the refusals per key: one of admin's key, one
	// of the address.
	if err := e.usage.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	p = b.do(http.MethodGet, "/admin/", nil, nil)
	for _, want := range []string{"Requests refused by rate limits, per key", "admin", "(address)"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the overview lacks %q", want)
		}
	}
}

// TestSignInAPIRateLimit: when the API's own read limit refuses the
// check of the key pair, the form says so with 429, rather than calling
// the pair wrong (and counting a failure against it).
func TestSignInAPIRateLimit(t *testing.T) {
	e := signInEnv(t, ratelimit.Config{PerAddress: map[string]string{"reads": "1/h"}})
	if p := e.browser(t).signIn("admin", adminPriv); p.status != http.StatusSeeOther {
		t.Fatalf("first sign-in: %d", p.status)
	}
	p := e.browser(t).signIn("admin", adminPriv)
	if p.status != http.StatusTooManyRequests || !strings.Contains(p.body, "Rate limit exceeded for reads per client address") ||
		strings.Contains(p.body, "not valid here") {
		t.Fatalf("second sign-in past the API's read limit: %d\n%s", p.status, p.body)
	}
}
