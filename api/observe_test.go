package api

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestSaneRequestID(t *testing.T) {
	for _, c := range []struct {
		id   string
		want bool
	}{
		{"abc-123_x.y:z/1", true},
		{"", false},
		{"has space", false},
		{"new\nline", false},
		{"quote\"", false},
		{string(make([]byte, 129)), false},
	} {
		t.Run(c.id, func(t *testing.T) {
			if got := saneRequestID(c.id); got != c.want {
				t.Fatalf("saneRequestID(%q) = %v, want %v", c.id, got, c.want)
			}
		})
	}
	g := newRequestIDs()
	if a, b := g.next(), g.next(); a == b || !saneRequestID(a) {
		t.Fatalf("generated ids %q, %q: want distinct and sane", a, b)
	}
}

// BenchmarkMetricsPerRequest is what metrics add to one thumbnail request:
// the request histogram, the cache counter, three pipeline stages, two
// queries and one blob read. Divide by a thumbnail's ns/op for the share.
func BenchmarkMetricsPerRequest(b *testing.B) {
	m := NewMetrics()
	for b.Loop() {
		m.observeRequest("image", "GET", 200, time.Millisecond)
		m.observeCache(false)
		m.ObserveStage("decode", "", time.Millisecond)
		m.ObserveStage("transform", "thumbnail", time.Millisecond)
		m.ObserveStage("encode", "jpg", time.Millisecond)
		m.ObserveDB("SELECT", time.Millisecond, nil)
		m.ObserveDB("SELECT", time.Millisecond, nil)
		m.ObserveBlob("get", time.Millisecond, nil)
	}
}

// TestMethodLabelsBounded: requests with methods HTTP does not define are
// counted under one label value, whatever the client sends, so a client
// cannot grow the metrics without bound.
func TestMethodLabelsBounded(t *testing.T) {
	m := NewMetrics()
	for _, method := range []string{"GET", "FOO1", "XYZZY", "BREW", "get"} {
		m.observeRequest("image", method, 405, time.Millisecond)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{`method="GET"`, `method="OTHER"`} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	for _, made := range []string{"FOO1", "XYZZY", "BREW", `method="get"`} {
		if strings.Contains(body, made) {
			t.Errorf("metrics carry the client's invented method %s", made)
		}
	}
	if n := strings.Count(body, `vitrine_http_request_duration_seconds_count{`); n != 2 {
		t.Errorf("%d request series, want 2 (GET and OTHER)", n)
	}
}

// TestRedactToken: the access log never holds an upload token named in a
// path, and leaves every other path as it is.
func TestRedactToken(t *testing.T) {
	for in, want := range map[string]string{
		"/users/alice/uploadtokens/vut_Zq3Xb0c8TQm1kM2y7VnS6pJ4wR9aLhE5dGfUoKiYt0s":      "/users/alice/uploadtokens/vut_…",
		"/users/alice/uploadtokens/vut_Zq3Xb0c8TQm1kM2y7VnS6pJ4wR9aLhE5dGfUoKiYt0s.json": "/users/alice/uploadtokens/vut_…",
		"/users/alice/uploadtokens/3f2a9c4d1e0b7a65":                                     "/users/alice/uploadtokens/3f2a9c4d1e0b7a65",
		"/users/vut_x/images/abc": "/users/vut_x/images/abc",
		"/users/alice/images":     "/users/alice/images",
	} {
		if got := redactToken(in); got != want {
			t.Errorf("redactToken(%q) = %q, want %q", in, got, want)
		}
	}
}
