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
