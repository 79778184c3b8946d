package api

import (
	"net/http"
	"strconv"

	"github.com/vitrine/vitrine/api/ratelimit"
	"github.com/vitrine/vitrine/storage"
)

// Where each class is counted (api/README.md, Rate limits):
//
//   - reads and writes, per client address: first thing, for every request
//     the API routes (the probes and /openapi.json are not counted);
//   - reads and writes, per public key: once the listeners let the call
//     through on a route that checked its access token or signature, so
//     that nobody can spend a key's budget without holding the key;
//   - renders: when a transformed image is not in the variant cache, just
//     before it renders, per address and (on a route that checked the
//     key) per key;
//   - signin: by the admin UI through LimitSignIn.
//
// Every decision adds its policy to the answer's RateLimit-Policy and
// RateLimit headers; the first refusal answers 429 with Retry-After.

// classOf is the class of a request by its method.
func classOf(method string) ratelimit.Class {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch:
		return ratelimit.Writes
	}
	return ratelimit.Reads
}

// keyAuthenticated reports whether the call proved it holds its public
// key: a guarded route let through after its access token (reads) or
// signature (writes) was checked.
func (c *call) keyAuthenticated() bool {
	if !c.authed || c.publicKey == "" || c.route.public() {
		return false
	}
	switch c.method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// limit counts the call in class per scope, adds the decision to the
// answer's headers and returns the 429 past the limit.
func (c *call) limit(class ratelimit.Class, scope ratelimit.Scope) error {
	if c.s.limits == nil {
		return nil
	}
	id := c.publicKey
	if scope == ratelimit.PerAddress {
		id = ratelimit.AddressKey(c.clientIP())
	}
	return takeLimit(c.s.limits, c, c.w.Header(), class, scope, id)
}

// limitRender counts a render of a variant that was not cached.
func (c *call) limitRender() error {
	if c.s.limits == nil || !c.s.limits.Limits(ratelimit.Renders) {
		return nil
	}
	if err := c.limit(ratelimit.Renders, ratelimit.PerAddress); err != nil {
		return err
	}
	if c.keyAuthenticated() {
		return c.limit(ratelimit.Renders, ratelimit.PerKey)
	}
	return nil
}

// takeLimit takes one request of class from id, writes the decision into
// h and returns the 429 when it is refused.
func takeLimit(l *ratelimit.Limiter, c *call, h http.Header, class ratelimit.Class, scope ratelimit.Scope, id string) error {
	d, ok := l.Take(c.ctx(), class, scope, id)
	if !ok {
		return nil
	}
	ratelimit.SetHeaders(h, d)
	if !d.Limited() {
		return nil
	}
	if c.s.usage != nil {
		label := id
		if scope == ratelimit.PerAddress {
			label = "(address)"
		}
		c.s.usage.Add(storage.MetricRateLimited, label, 1)
	}
	return tooManyRequests(d)
}

// tooManyRequests is the 429 of a refused decision, naming the class, the
// scope and the limit.
func tooManyRequests(d ratelimit.Decision) *Error {
	scope := "public key"
	if d.Policy.Scope == ratelimit.PerAddress {
		scope = "client address"
	}
	secs := d.RetryAfter()
	unit := "seconds"
	if secs == 1 {
		unit = "second"
	}
	e := errorf(http.StatusTooManyRequests, "Rate limit exceeded for %s per %s: the limit is %s; retry in %d %s",
		d.Policy.Class, scope, d.Policy.Limit, secs, unit)
	e.Header = http.Header{"Retry-After": {strconv.Itoa(secs)}}
	return e
}

// LimitSignIn counts a sign-in to the admin UI in the signin class: with
// publicKey empty per client address (every attempt, before the key pair
// is checked), with publicKey per that key (once the pair is verified). It
// adds the decision to h's RateLimit headers and, past the limit, returns
// an *Error with status 429, the message and a Retry-After header.
func (s *Server) LimitSignIn(r *http.Request, h http.Header, publicKey string) error {
	if s.limits == nil {
		return nil
	}
	c := &call{s: s, r: r}
	scope, id := ratelimit.PerKey, publicKey
	if publicKey == "" {
		scope, id = ratelimit.PerAddress, ratelimit.AddressKey(c.clientIP())
	}
	return takeLimit(s.limits, c, h, ratelimit.SignIn, scope, id)
}
