package web

import (
	"fmt"
	"testing"
	"time"
)

// TestThrottleScopes: counts are kept per scope and key; a scope that
// fails on many keys shares one count past maxKeys, so spraying keys
// neither escapes the wait nor grows the memory without bound.
func TestThrottleScopes(t *testing.T) {
	now := time.Unix(1e9, 0)
	th := newThrottle(func() time.Time { return now })
	for range freeFailures {
		th.fail("addr a", "admin")
	}
	if d := th.wait("addr a", "admin"); d != time.Second {
		t.Fatalf("admin from a waits %v, want 1s", d)
	}
	for _, c := range []struct{ scope, key string }{{"addr a", "carol"}, {"addr b", "admin"}, {"device x", "admin"}} {
		if d := th.wait(c.scope, c.key); d != 0 {
			t.Errorf("%s with %s waits %v, want 0", c.scope, c.key, d)
		}
	}
	for i := range maxKeys - 1 + freeFailures {
		th.fail("addr a", fmt.Sprint("k", i))
	}
	if n := len(th.scopes["addr a"]); n != maxKeys+1 {
		t.Errorf("%d counts kept for a, want %d", n, maxKeys+1)
	}
	if d := th.wait("addr a", "never-tried"); d != time.Second {
		t.Errorf("a new key from a scope spraying keys waits %v, want 1s", d)
	}
	if d := th.wait("addr a", "k0"); d != 0 {
		t.Errorf("a key with its own count waits %v, want 0", d)
	}
	th.succeed("addr b", "carol")
	th.succeed("addr a", "k0")
	if th.scopes["addr a"]["k0"] != nil {
		t.Errorf("a success kept its key's count")
	}
	now = now.Add(2 * forgetAfter)
	th.forget(now)
	if len(th.scopes) != 0 {
		t.Errorf("%d scopes kept after forgetAfter", len(th.scopes))
	}
}

// TestThrottleBounded: a client rotating addresses, failing once from each
// or enough to wait itself, keeps at most maxScopes scopes counted, and an
// address that waits longer than the rotating ones still waits.
func TestThrottleBounded(t *testing.T) {
	cases := []struct {
		name     string
		failures int // per rotated address
	}{
		{"one failure each", 1},
		{"each throttled", freeFailures + 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Unix(1e9, 0)
			th := newThrottle(func() time.Time { return now })
			for range freeFailures + 4 {
				th.fail("addr victim", "admin")
			}
			want := th.wait("addr victim", "admin")
			if want < 8*time.Second {
				t.Fatalf("victim waits %v before the flood", want)
			}
			for i := range 3 * maxScopes {
				for range tc.failures {
					th.fail(fmt.Sprint("addr 10.0.", i/256, ".", i%256), "admin")
				}
				if len(th.scopes) > maxScopes {
					t.Fatalf("%d scopes after %d addresses, want at most %d", len(th.scopes), i+1, maxScopes)
				}
			}
			if d := th.wait("addr victim", "admin"); d != want {
				t.Errorf("after the flood the victim waits %v, want %v", d, want)
			}
		})
	}
}
