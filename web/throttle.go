package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
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

// Failed sign-ins are counted per public key, and per browser where the
// browser has signed in with that key before (a device cookie), else per
// client address. Why not per address alone: behind a proxy that is not
// in trustedProxies every browser shares the proxy's address, and one
// attacker's failures would lock every administrator out. Guessing a key
// still waits, since the attacker's attempts on it are counted together;
// an administrator whose browser has signed in before is not held up by
// them.

const (
	deviceCookie = "vitrine_device"
	// deviceMaxAge is how long a browser stays known, in seconds.
	deviceMaxAge = 90 * 24 * 3600
)

// throttleKey is what a sign-in with publicKey is counted against.
func (u *UI) throttleKey(r *http.Request, publicKey string) string {
	if id, ok := u.knownDevice(r, publicKey); ok {
		return "device " + id + " " + publicKey
	}
	return "addr " + u.clientAddr(r) + " " + publicKey
}

// rememberDevice marks the browser as one that signed in with publicKey.
func (u *UI) rememberDevice(w http.ResponseWriter, r *http.Request, publicKey string) {
	id := randomToken()[:32]
	http.SetCookie(w, u.cookie(r, deviceCookie, publicKey+"."+id+"."+u.deviceMAC(publicKey, id), deviceMaxAge))
}

// knownDevice returns the browser's id when its device cookie is this
// instance's and names publicKey.
func (u *UI) knownDevice(r *http.Request, publicKey string) (string, bool) {
	c, err := r.Cookie(deviceCookie)
	if err != nil {
		return "", false
	}
	parts := strings.Split(c.Value, ".")
	if len(parts) != 3 || parts[0] != publicKey || !hmac.Equal([]byte(parts[2]), []byte(u.deviceMAC(parts[0], parts[1]))) {
		return "", false
	}
	return parts[1], true
}

func (u *UI) deviceMAC(publicKey, id string) string {
	m := hmac.New(sha256.New, u.deviceKey)
	m.Write([]byte(publicKey + "\x00" + id))
	return hex.EncodeToString(m.Sum(nil))
}
