package api

import (
	"net/http"
	"testing"
	"time"
)

// busyErr is an error of another package that asks clients to come back,
// as a busy WebAssembly filter's does.
type busyErr struct{ after time.Duration }

func (busyErr) Error() string               { return "Filter x is busy; try again later" }
func (busyErr) HTTPStatus() int             { return http.StatusServiceUnavailable }
func (busyErr) PublicMessage() string       { return "Filter x is busy; try again later" }
func (b busyErr) RetryAfter() time.Duration { return b.after }

// TestRetryAfter: an error that says when to come back gets Retry-After in
// whole seconds, at least one; one that says 0 gets none.
func TestRetryAfter(t *testing.T) {
	for _, c := range []struct {
		after time.Duration
		want  string
	}{{time.Second, "1"}, {300 * time.Millisecond, "1"}, {2600 * time.Millisecond, "3"}, {0, ""}} {
		e := httpError(busyErr{c.after})
		if e.Status != http.StatusServiceUnavailable || e.Msg != "Filter x is busy; try again later" || e.Header.Get("Retry-After") != c.want {
			t.Errorf("after %s: %d %q Retry-After %q; want 503 and %q", c.after, e.Status, e.Msg, e.Header.Get("Retry-After"), c.want)
		}
	}
}
