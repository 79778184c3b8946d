package ratelimit

import (
	"math"
	"net/http"
	"strconv"
	"time"
)

// SetHeaders adds d to the RateLimit-Policy and RateLimit header fields of
// h, after the policies already there, in the syntax of the IETF httpapi
// draft "RateLimit header fields for HTTP": each a list of quoted policy
// names with parameters.
//
//	RateLimit-Policy: "reads-key";q=20;w=1, "reads-address";q=600;w=60
//	RateLimit: "reads-key";r=19;t=1, "reads-address";r=599;t=1
//
// In RateLimit-Policy, q requests per w seconds is the policy's rate; a
// burst other than q is added as vitrine-burst. In RateLimit, r is how
// many requests may come at once now, and t how many seconds until the
// whole burst is available again, or, when r is 0, until the next request
// is accepted (for a refused one, its Retry-After). A decision the store
// could not make (Open) adds its policy but no RateLimit item.
func SetHeaders(h http.Header, d Decision) {
	p := d.Policy
	item := strconv.Quote(p.Name()) + ";q=" + strconv.Itoa(p.Limit.Count) +
		";w=" + strconv.FormatInt(int64(p.Limit.Period/time.Second), 10)
	if p.Limit.Burst != p.Limit.Count {
		item += ";vitrine-burst=" + strconv.Itoa(p.Limit.Burst)
	}
	appendItem(h, "RateLimit-Policy", item)
	if d.Open {
		return
	}
	appendItem(h, "RateLimit", strconv.Quote(p.Name())+";r="+strconv.Itoa(d.Result.Remaining)+
		";t="+strconv.Itoa(ceilSeconds(d.window())))
}

// window is the t parameter's time: until the next request is accepted
// when none may come now, else until the whole burst is back.
func (d Decision) window() time.Duration {
	r := d.Result
	switch {
	case !r.Allowed:
		return r.RetryAfter
	case r.Remaining == 0:
		// The next request is accepted once the TAT is Burst-1 intervals
		// ahead of now.
		return max(r.ResetAfter-time.Duration(d.Policy.Limit.Burst-1)*d.Policy.Limit.interval(), 0)
	}
	return r.ResetAfter
}

// RetryAfter is the Retry-After of a refused request, in whole seconds,
// at least 1.
func (d Decision) RetryAfter() int { return max(ceilSeconds(d.Result.RetryAfter), 1) }

func ceilSeconds(d time.Duration) int { return int(math.Ceil(d.Seconds())) }

// appendItem adds a list member to a structured-field list header, on its
// one line.
func appendItem(h http.Header, name, item string) {
	if v := h.Get(name); v != "" {
		item = v + ", " + item
	}
	h.Set(name, item)
}
