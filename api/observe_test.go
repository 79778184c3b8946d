package api

import (
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
