package ratelimit_test

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vitrine/vitrine/api/ratelimit"
)

// clock is a settable clock for the in-process store.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestParseRate(t *testing.T) {
	t.Parallel()
	good := []struct {
		in   string
		want ratelimit.Limit
		rate string
	}{
		{"20/s", ratelimit.Limit{Count: 20, Period: time.Second, Burst: 20}, "20/s"},
		{"600/m", ratelimit.Limit{Count: 600, Period: time.Minute, Burst: 600}, "600/m"},
		{"10/h", ratelimit.Limit{Count: 10, Period: time.Hour, Burst: 10}, "10/h"},
		{"5/d", ratelimit.Limit{Count: 5, Period: 24 * time.Hour, Burst: 5}, "5/d"},
		{"100/10s", ratelimit.Limit{Count: 100, Period: 10 * time.Second, Burst: 100}, "100/10s"},
		{" 3 / 15m ", ratelimit.Limit{Count: 3, Period: 15 * time.Minute, Burst: 3}, "3/900s"},
	}
	for _, tc := range good {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ratelimit.ParseRate(tc.in)
			if err != nil || got != tc.want {
				t.Fatalf("ParseRate(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
			if got.Rate() != tc.rate {
				t.Errorf("Rate() = %q, want %q", got.Rate(), tc.rate)
			}
		})
	}
	for _, in := range []string{"", "20", "0/s", "-1/s", "x/s", "20/y", "20/500ms", "20/1.5s", "20/48h", "2000000/s", "20/"} {
		t.Run("bad "+in, func(t *testing.T) {
			if l, err := ratelimit.ParseRate(in); err == nil {
				t.Fatalf("ParseRate(%q) = %+v, want an error", in, l)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		cfg  ratelimit.Config
		want string // part of the error; "" for none
	}{
		{"zero", ratelimit.Config{}, ""},
		{"good", ratelimit.Config{PerKey: map[string]string{"reads": "20/s", "renders": "5/s"},
			PerAddress: map[string]string{"writes": "60/m", "signin": "5/m"}, Burst: 10, Redis: "redis://127.0.0.1:6379/0",
			RedisTimeout: 50 * time.Millisecond}, ""},
		{"unknown class", ratelimit.Config{PerKey: map[string]string{"uploads": "1/s"}}, `rateLimits.perKey: unknown class "uploads"`},
		{"bad rate", ratelimit.Config{PerAddress: map[string]string{"reads": "fast"}}, "rateLimits.perAddress.reads: invalid rate"},
		{"negative burst", ratelimit.Config{Burst: -1}, "rateLimits.burst"},
		{"negative timeout", ratelimit.Config{RedisTimeout: -time.Second}, "rateLimits.redisTimeout"},
		{"redis scheme", ratelimit.Config{PerKey: map[string]string{"reads": "1/s"}, Redis: "http://127.0.0.1:6379"}, "rateLimits.redis: want a redis://"},
		{"redis without rates", ratelimit.Config{Redis: "redis://127.0.0.1:6379"}, "no rate is"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestMemoryGCRA walks one key through a burst, a refusal and the refill,
// on a clock the test moves: 10/s with a burst of 3 takes 100ms per
// request back from a budget of 300ms.
func TestMemoryGCRA(t *testing.T) {
	t.Parallel()
	clk := newClock()
	m := ratelimit.NewMemory(clk.Now, 0)
	lim := ratelimit.Limit{Count: 10, Period: time.Second, Burst: 3}
	ms := time.Millisecond
	steps := []struct {
		advance time.Duration
		want    ratelimit.Result
	}{
		{0, ratelimit.Result{Allowed: true, Remaining: 2, ResetAfter: 100 * ms}},
		{0, ratelimit.Result{Allowed: true, Remaining: 1, ResetAfter: 200 * ms}},
		{0, ratelimit.Result{Allowed: true, Remaining: 0, ResetAfter: 300 * ms}},
		{0, ratelimit.Result{RetryAfter: 100 * ms, ResetAfter: 300 * ms}},
		{50 * ms, ratelimit.Result{RetryAfter: 50 * ms, ResetAfter: 250 * ms}},
		{50 * ms, ratelimit.Result{Allowed: true, Remaining: 0, ResetAfter: 300 * ms}},
		{250 * ms, ratelimit.Result{Allowed: true, Remaining: 1, ResetAfter: 150 * ms}},
		{time.Second, ratelimit.Result{Allowed: true, Remaining: 2, ResetAfter: 100 * ms}},
	}
	for i, s := range steps {
		clk.Advance(s.advance)
		got, err := m.Allow(t.Context(), "k", lim)
		if err != nil || got != s.want {
			t.Fatalf("step %d (after +%s): %+v, %v; want %+v", i, s.advance, got, err, s.want)
		}
	}
	// Another key has its own budget.
	if got, _ := m.Allow(t.Context(), "other", lim); !got.Allowed || got.Remaining != 2 {
		t.Errorf("another key: %+v, want its whole burst", got)
	}
}

// TestMemoryExactCounts checks that exactly Burst requests go through at
// one instant, then exactly Count more per Period.
func TestMemoryExactCounts(t *testing.T) {
	t.Parallel()
	for _, rate := range []string{"20/s", "600/m", "7/h", "3/d", "100/10s"} {
		t.Run(rate, func(t *testing.T) {
			lim, err := ratelimit.ParseRate(rate)
			if err != nil {
				t.Fatal(err)
			}
			clk := newClock()
			m := ratelimit.NewMemory(clk.Now, 0)
			count := func() int {
				n := 0
				for range 3 * lim.Count {
					if r, _ := m.Allow(t.Context(), "k", lim); r.Allowed {
						n++
					}
				}
				return n
			}
			if n := count(); n != lim.Burst {
				t.Fatalf("at once: %d allowed, want %d", n, lim.Burst)
			}
			clk.Advance(lim.Period)
			if n := count(); n != lim.Count {
				t.Fatalf("one period later: %d allowed, want %d", n, lim.Count)
			}
		})
	}
}

// TestMemoryBounded floods the store with new keys: it keeps at most its
// maximum, keeps the key throttled hardest, and forgets keys whose burst
// is whole again.
func TestMemoryBounded(t *testing.T) {
	t.Parallel()
	clk := newClock()
	m := ratelimit.NewMemory(clk.Now, 128)
	slow := ratelimit.Limit{Count: 1, Period: time.Hour, Burst: 5}
	for range 5 {
		m.Allow(t.Context(), "hot", slow)
	}
	for i := range 10_000 {
		if _, err := m.Allow(t.Context(), fmt.Sprint("addr-", i), slow); err != nil {
			t.Fatal(err)
		}
		if n := m.Len(); n > 128 {
			t.Fatalf("after %d keys the store holds %d, more than its 128", i+1, n)
		}
	}
	if r, _ := m.Allow(t.Context(), "hot", slow); r.Allowed {
		t.Error("the flood of new keys reset the exhausted key's budget")
	}

	idle := ratelimit.NewMemory(clk.Now, 0)
	fast := ratelimit.Limit{Count: 10, Period: time.Second, Burst: 10}
	for i := range 100 {
		idle.Allow(t.Context(), fmt.Sprint("idle-", i), fast)
	}
	if n := idle.Len(); n != 100 {
		t.Fatalf("holds %d keys, want 100", n)
	}
	clk.Advance(2 * time.Minute)
	idle.Allow(t.Context(), "new", fast) // the first request after sweepEvery sweeps
	if n := idle.Len(); n != 1 {
		t.Errorf("after the idle keys' budgets filled up the store still holds %d keys, want only the new one", n)
	}
}

func TestLimiterTake(t *testing.T) {
	t.Parallel()
	clk := newClock()
	l, err := ratelimit.New(ratelimit.Config{
		PerKey:     map[string]string{"reads": "20/s", "writes": "2/m"},
		PerAddress: map[string]string{"reads": "600/m", "signin": "5/m"},
		Burst:      4,
	}, ratelimit.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, ok := l.Take(ctx, ratelimit.Renders, ratelimit.PerKey, "alice"); ok {
		t.Error("renders have no policy, yet Take counted one")
	}
	if _, ok := l.Take(ctx, ratelimit.Writes, ratelimit.PerAddress, "192.0.2.1"); ok {
		t.Error("writes per address have no policy, yet Take counted one")
	}
	if l.Limits(ratelimit.Renders) || !l.Limits(ratelimit.SignIn) {
		t.Error("Limits does not follow the configuration")
	}
	// The burst applies to every policy; each key and scope has its own.
	for _, who := range []struct {
		class ratelimit.Class
		scope ratelimit.Scope
		id    string
	}{
		{ratelimit.Reads, ratelimit.PerKey, "alice"},
		{ratelimit.Reads, ratelimit.PerKey, "bob"},
		{ratelimit.Writes, ratelimit.PerKey, "alice"},
		{ratelimit.Reads, ratelimit.PerAddress, "alice"},
	} {
		allowed := 0
		var last ratelimit.Decision
		for range 10 {
			d, ok := l.Take(ctx, who.class, who.scope, who.id)
			if !ok {
				t.Fatalf("%+v: no policy", who)
			}
			if !d.Limited() {
				allowed++
			}
			last = d
		}
		if allowed != 4 {
			t.Errorf("%+v: %d of 10 allowed, want the burst of 4", who, allowed)
		}
		if last.Policy.Name() != string(who.class)+"-"+string(who.scope) || last.Policy.Limit.Burst != 4 {
			t.Errorf("%+v: policy %+v", who, last.Policy)
		}
	}
}

func TestSetHeaders(t *testing.T) {
	t.Parallel()
	key := ratelimit.Policy{Class: ratelimit.Reads, Scope: ratelimit.PerKey, Limit: ratelimit.Limit{Count: 20, Period: time.Second, Burst: 20}}
	addr := ratelimit.Policy{Class: ratelimit.Reads, Scope: ratelimit.PerAddress, Limit: ratelimit.Limit{Count: 600, Period: time.Minute, Burst: 10}}
	ms := time.Millisecond
	cases := []struct {
		name       string
		ds         []ratelimit.Decision
		policy, rl string
	}{
		{"allowed",
			[]ratelimit.Decision{{Policy: key, Result: ratelimit.Result{Allowed: true, Remaining: 19, ResetAfter: 50 * ms}}},
			`"reads-key";q=20;w=1`, `"reads-key";r=19;t=1`},
		{"two policies, the last request of a burst",
			[]ratelimit.Decision{
				{Policy: addr, Result: ratelimit.Result{Allowed: true, Remaining: 0, ResetAfter: 1000 * ms}},
				{Policy: key, Result: ratelimit.Result{Allowed: true, Remaining: 3, ResetAfter: 850 * ms}},
			},
			`"reads-address";q=600;w=60;vitrine-burst=10, "reads-key";q=20;w=1`,
			// 600/m is 100ms a request: with 9 more of the burst's 1s
			// taken back, the next request goes through in 100ms.
			`"reads-address";r=0;t=1, "reads-key";r=3;t=1`},
		{"refused",
			[]ratelimit.Decision{{Policy: key, Result: ratelimit.Result{RetryAfter: 2300 * ms, ResetAfter: 3 * time.Second}}},
			`"reads-key";q=20;w=1`, `"reads-key";r=0;t=3`},
		{"store failed",
			[]ratelimit.Decision{{Policy: key, Open: true}},
			`"reads-key";q=20;w=1`, ""},
		{"a whole burst left",
			[]ratelimit.Decision{{Policy: addr, Result: ratelimit.Result{Allowed: true, Remaining: 9, ResetAfter: 100 * ms}}},
			`"reads-address";q=600;w=60;vitrine-burst=10`, `"reads-address";r=9;t=1`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for _, d := range tc.ds {
				ratelimit.SetHeaders(h, d)
			}
			if got := h.Get("RateLimit-Policy"); got != tc.policy {
				t.Errorf("RateLimit-Policy: %s\nwant              %s", got, tc.policy)
			}
			if got := h.Get("RateLimit"); got != tc.rl {
				t.Errorf("RateLimit: %s\nwant       %s", got, tc.rl)
			}
			if len(h.Values("RateLimit")) > 1 || len(h.Values("RateLimit-Policy")) > 1 {
				t.Errorf("a list split over several field lines: %v", h)
			}
		})
	}
	refused := ratelimit.Decision{Policy: key, Result: ratelimit.Result{RetryAfter: 2300 * ms}}
	if got := refused.RetryAfter(); got != 3 {
		t.Errorf("RetryAfter of 2.3s = %d, want 3", got)
	}
	if got := (ratelimit.Decision{Policy: key, Result: ratelimit.Result{RetryAfter: ms}}).RetryAfter(); got != 1 {
		t.Errorf("RetryAfter of 1ms = %d, want 1 (never 0)", got)
	}
}

func TestAddressKey(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"192.0.2.7":            "192.0.2.7",
		"::ffff:192.0.2.7":     "192.0.2.7",
		"2001:db8:1:2:3:4:5:6": "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff::1": "2001:db8:1:2::/64",
		"2001:db8:1:3::1":      "2001:db8:1:3::/64",
		"::1":                  "::/64",
	} {
		a, err := netip.ParseAddr(in)
		if err != nil {
			if want != "" {
				t.Fatal(err)
			}
			continue
		}
		if got := ratelimit.AddressKey(a); got != want {
			t.Errorf("AddressKey(%s) = %s, want %s", in, got, want)
		}
	}
}

// Take with a context that has ended before the check does not count.
func TestLimiterEndedRequest(t *testing.T) {
	t.Parallel()
	l, err := ratelimit.New(ratelimit.Config{PerKey: map[string]string{"reads": "1/h"}}, ratelimit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	// The in-process store needs no context: it still counts.
	if d, _ := l.Take(ctx, ratelimit.Reads, ratelimit.PerKey, "a"); d.Open || d.Limited() {
		t.Errorf("first request: %+v", d)
	}
	if d, _ := l.Take(ctx, ratelimit.Reads, ratelimit.PerKey, "a"); !d.Limited() {
		t.Errorf("second request of 1/h: %+v, want it refused", d)
	}
}
