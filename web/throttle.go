package web

import (
	"sync"
	"time"
)

// throttle slows down failed sign-ins per client address: after
// freeFailures failures the next attempt waits a second, and each further
// failure doubles the wait, up to maxWait. A success clears the address.
// It is kept per instance, in memory: behind a load balancer an attacker
// gets at most the free failures once per instance before waiting.
type throttle struct {
	mu   sync.Mutex
	now  func() time.Time
	addr map[string]*attempts
}

type attempts struct {
	failures int
	until    time.Time // no attempt before this
	last     time.Time
}

const (
	freeFailures = 3
	maxWait      = 5 * time.Minute
	// forgetAfter drops an address that has not failed for this long.
	forgetAfter = time.Hour
)

func newThrottle(now func() time.Time) *throttle {
	return &throttle{now: now, addr: map[string]*attempts{}}
}

// wait returns how long addr must wait before its next attempt; 0 when it
// may try now.
func (t *throttle) wait(addr string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	a, ok := t.addr[addr]
	if !ok {
		return 0
	}
	if d := a.until.Sub(t.now()); d > 0 {
		return d
	}
	return 0
}

// fail records a failed attempt from addr.
func (t *throttle) fail(addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if len(t.addr) > 10000 {
		for k, a := range t.addr {
			if now.Sub(a.last) > forgetAfter {
				delete(t.addr, k)
			}
		}
	}
	a, ok := t.addr[addr]
	if !ok || now.Sub(a.last) > forgetAfter {
		a = &attempts{}
		t.addr[addr] = a
	}
	a.failures++
	a.last = now
	if n := a.failures - freeFailures; n >= 0 {
		d := maxWait
		if n < 20 {
			d = min(time.Second<<n, maxWait)
		}
		a.until = now.Add(d)
	}
}

// succeed clears addr's failures.
func (t *throttle) succeed(addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.addr, addr)
}
