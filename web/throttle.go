package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// throttle slows down failed sign-ins per scope (a client address, or a
// browser that signed in before) and public key: after freeFailures
// failures the next attempt waits a second, and each further failure
// doubles the wait, up to maxWait. A success clears the count. It is kept
// per instance, in memory: behind a load balancer an attacker gets at most
// the free failures once per instance before waiting.
type throttle struct {
	mu  sync.Mutex
	now func() time.Time
	// scopes holds each scope's counts by public key; past maxKeys keys a
	// scope's further keys share one count (anyKey), so trying many keys
	// neither escapes the throttle nor fills the memory.
	scopes map[string]map[string]*attempts
}

type attempts struct {
	failures int
	until    time.Time // no attempt before this
	last     time.Time
}

const (
	freeFailures = 3
	maxWait      = 5 * time.Minute
	// forgetAfter drops a count that has not failed for this long.
	forgetAfter = time.Hour
	// maxKeys is how many public keys one scope is counted for apart.
	maxKeys = 10
	anyKey  = "\x00any"
	// maxScopes is how many scopes are counted at most: a client rotating
	// addresses adds one a failure, and past it the least useful go
	// (evict).
	maxScopes = 10000
)

func newThrottle(now func() time.Time) *throttle {
	return &throttle{now: now, scopes: map[string]map[string]*attempts{}}
}

// key is the count a sign-in with key from scope falls under.
func (t *throttle) key(scope, key string) string {
	if keys := t.scopes[scope]; keys[key] == nil && len(keys) >= maxKeys {
		return anyKey
	}
	return key
}

// wait returns how long a sign-in with key from scope must wait before it
// is tried; 0 when it may be tried now.
func (t *throttle) wait(scope, key string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	a := t.scopes[scope][t.key(scope, key)]
	if a == nil {
		return 0
	}
	return max(a.until.Sub(t.now()), 0)
}

// fail records a failed sign-in with key from scope.
func (t *throttle) fail(scope, key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if _, known := t.scopes[scope]; !known && len(t.scopes) >= maxScopes {
		t.evict(now)
	}
	keys := t.scopes[scope]
	if keys == nil {
		keys = map[string]*attempts{}
		t.scopes[scope] = keys
	}
	key = t.key(scope, key)
	a := keys[key]
	if a == nil || now.Sub(a.last) > forgetAfter {
		a = &attempts{}
		keys[key] = a
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

// forget drops counts that have not failed for forgetAfter.
func (t *throttle) forget(now time.Time) {
	for scope, keys := range t.scopes {
		for k, a := range keys {
			if now.Sub(a.last) > forgetAfter {
				delete(keys, k)
			}
		}
		if len(keys) == 0 {
			delete(t.scopes, scope)
		}
	}
}

// evict makes room for new scopes: it forgets expired counts, then, while
// more than three quarters of maxScopes remain, drops the scopes whose wait
// ends first (those not waiting at all before any), the least recently
// failed of equals. A throttled scope thus outlives a flood of new
// addresses, and evicting a quarter at once keeps the sort rare.
func (t *throttle) evict(now time.Time) {
	t.forget(now)
	keep := maxScopes * 3 / 4
	if len(t.scopes) <= keep {
		return
	}
	type rank struct {
		scope       string
		until, last time.Time
	}
	all := make([]rank, 0, len(t.scopes))
	for scope, keys := range t.scopes {
		r := rank{scope: scope}
		for _, a := range keys {
			if a.until.After(r.until) {
				r.until = a.until
			}
			if a.last.After(r.last) {
				r.last = a.last
			}
		}
		if !r.until.After(now) {
			r.until = time.Time{} // not waiting: all alike
		}
		all = append(all, r)
	}
	slices.SortFunc(all, func(a, b rank) int {
		if c := a.until.Compare(b.until); c != 0 {
			return c
		}
		return a.last.Compare(b.last)
	})
	for _, r := range all[:len(all)-keep] {
		delete(t.scopes, r.scope)
	}
}

// succeed clears the failures of key from scope.
func (t *throttle) succeed(scope, key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.scopes[scope], key)
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

// throttleScope is where a sign-in with publicKey is counted: the
// browser, when it signed in with that key before, else its address.
func (u *UI) throttleScope(r *http.Request, publicKey string) string {
	if id, ok := u.knownDevice(r, publicKey); ok {
		return "device " + id
	}
	return "addr " + u.clientAddr(r)
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
