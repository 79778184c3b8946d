package ratelimit_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vitrine/vitrine/api/ratelimit"
)

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

// namespace is a fresh key prefix, so that tests sharing a Redis never
// share a budget.
func namespace(t *testing.T) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "test-" + strings.ReplaceAll(t.Name(), "/", "-") + "-" + hex.EncodeToString(b)
}

// observer records what a Limiter reports.
type observer struct {
	mu      sync.Mutex
	limited map[string]int
	errors  int
	up      []bool
}

func (o *observer) ObserveRateLimited(class, scope string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.limited == nil {
		o.limited = map[string]int{}
	}
	o.limited[class+"-"+scope]++
}

func (o *observer) ObserveRateLimitStoreError() {
	o.mu.Lock()
	o.errors++
	o.mu.Unlock()
}

func (o *observer) ObserveRateLimitStoreUp(up bool) {
	o.mu.Lock()
	o.up = append(o.up, up)
	o.mu.Unlock()
}

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) count(sub string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Count(s.b.String(), sub)
}

// TestRedisSharedBudget gives two limiters, each with its own connection,
// the same Redis: one budget between them, which the RateLimit header
// counts down whichever instance answers.
func TestRedisSharedBudget(t *testing.T) {
	t.Parallel()
	cfg := ratelimit.Config{PerKey: map[string]string{"writes": "5/h"}, Redis: redisURL(t)}
	ns := namespace(t)
	var ls [2]*ratelimit.Limiter
	for i := range ls {
		l, err := ratelimit.New(cfg, ratelimit.Options{Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		ls[i] = l
	}
	allowed := 0
	for i := range 12 {
		d, ok := ls[i%2].Take(t.Context(), ratelimit.Writes, ratelimit.PerKey, "alice")
		if !ok || d.Open {
			t.Fatalf("request %d: ok %v, decision %+v (is Redis at %s up?)", i, ok, d, cfg.Redis)
		}
		if d.Limited() {
			if d.Result.RetryAfter <= 0 {
				t.Errorf("request %d refused with no RetryAfter: %+v", i, d.Result)
			}
			continue
		}
		allowed++
		if want := 5 - allowed; d.Result.Remaining != want {
			t.Errorf("request %d: remaining %d, want %d", i, d.Result.Remaining, want)
		}
	}
	if allowed != 5 {
		t.Errorf("%d of 12 requests through two instances allowed, want the shared burst of 5", allowed)
	}
	// Another key, and the other scope, have budgets of their own.
	if d, _ := ls[0].Take(t.Context(), ratelimit.Writes, ratelimit.PerKey, "bob"); d.Limited() || d.Open {
		t.Errorf("bob's first write: %+v", d)
	}
}

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestRedisFailOpen points the limiter at a Redis that is not there: every
// request goes through, one log line says so for the whole outage, the
// observer counts each check, and once Redis answers (a forwarder to the
// real one opens on that address) one line says that too.
func TestRedisFailOpen(t *testing.T) {
	t.Parallel()
	real := redisURL(t)
	addr := closedPort(t)
	clk := newClock()
	var logs syncBuffer
	obs := &observer{}
	l, err := ratelimit.New(ratelimit.Config{PerAddress: map[string]string{"reads": "1/h"}, Redis: "redis://" + addr + "/0"},
		ratelimit.Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil)), Observer: obs, Now: clk.Now, Namespace: namespace(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 20 {
		d, ok := l.Take(t.Context(), ratelimit.Reads, ratelimit.PerAddress, "192.0.2.1")
		if !ok || !d.Open || d.Limited() {
			t.Fatalf("request %d with Redis down: ok %v, %+v; want it let through (Open)", i, ok, d)
		}
		if i == 10 {
			clk.Advance(2 * time.Second) // a probe is due: it fails too
		}
	}
	if n := logs.count("the shared store failed"); n != 1 {
		t.Errorf("%d log lines for one outage, want 1:\n%s", n, logs.b.String())
	}
	if obs.errors != 20 || len(obs.up) != 2 || !obs.up[0] || obs.up[1] {
		t.Errorf("observer: %d store errors (want 20), up %v (want [true false])", obs.errors, obs.up)
	}

	// Redis comes back at that address.
	u, err := url.Parse(real)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the closed port was taken meanwhile: %v", err)
	}
	defer ln.Close()
	go forward(ln, u.Host)
	clk.Advance(2 * time.Second)
	d, _ := l.Take(t.Context(), ratelimit.Reads, ratelimit.PerAddress, "192.0.2.1")
	if d.Open || d.Limited() || d.Result.Remaining != 0 {
		t.Fatalf("first request once Redis is back: %+v, want it counted and allowed", d)
	}
	if d, _ := l.Take(t.Context(), ratelimit.Reads, ratelimit.PerAddress, "192.0.2.1"); !d.Limited() {
		t.Errorf("second request of 1/h once Redis is back: %+v, want it refused", d)
	}
	if n := logs.count("the shared store answers again"); n != 1 {
		t.Errorf("%d log lines for the end of the outage, want 1:\n%s", n, logs.b.String())
	}
	if obs.up[len(obs.up)-1] != true || obs.limited["reads-address"] != 1 {
		t.Errorf("observer after the outage: up %v, limited %v", obs.up, obs.limited)
	}
}

// forward copies every connection ln accepts to and from target.
func forward(ln net.Listener, target string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			r, err := net.Dial("tcp", target)
			if err != nil {
				return
			}
			defer r.Close()
			go func() { _, _ = io.Copy(r, c) }()
			_, _ = io.Copy(c, r)
		}()
	}
}

// TestRedisSlow points the limiter at a server that accepts connections
// and never answers: the check gives up after rateLimits.redisTimeout and
// the request goes through.
func TestRedisSlow(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held sync.WaitGroup // the accept loop and the connections it holds
	stop := make(chan struct{})
	held.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held.Go(func() {
				<-stop
				c.Close()
			})
		}
	})
	defer func() {
		close(stop)
		ln.Close()
		held.Wait()
	}()
	obs := &observer{}
	l, err := ratelimit.New(ratelimit.Config{PerKey: map[string]string{"reads": "1/h"}, Redis: "redis://" + ln.Addr().String(),
		RedisTimeout: 20 * time.Millisecond}, ratelimit.Options{Observer: obs, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 3 {
		if d, _ := l.Take(t.Context(), ratelimit.Reads, ratelimit.PerKey, "alice"); !d.Open {
			t.Fatalf("request %d to a Redis that never answers: %+v, want it let through (Open)", i, d)
		}
	}
	if obs.errors != 3 {
		t.Errorf("%d store errors, want 3", obs.errors)
	}
}

// TestRedisRemainingAsInProcess: the RateLimit header's remaining count
// from Redis is the in-process limiter's, request for request, through a
// burst and past it (Redis's GCRA works in floating-point seconds, which
// once answered one fewer).
func TestRedisRemainingAsInProcess(t *testing.T) {
	r, err := ratelimit.NewRedis(redisURL(t), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	m := ratelimit.NewMemory(nil, 0)
	key := namespace(t)
	for _, l := range []ratelimit.Limit{{Count: 20, Period: time.Second, Burst: 20}, {Count: 7, Period: time.Minute, Burst: 3},
		{Count: 1000, Period: time.Hour, Burst: 50}} {
		for i := range l.Burst + 2 {
			got, err := r.Allow(t.Context(), key+l.Rate(), l)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := m.Allow(t.Context(), key+l.Rate(), l)
			if got.Allowed != want.Allowed || got.Remaining != want.Remaining {
				t.Fatalf("%s request %d: Redis allowed %v with %d remaining, in process %v with %d",
					l.Rate(), i, got.Allowed, got.Remaining, want.Allowed, want.Remaining)
			}
		}
	}
}
