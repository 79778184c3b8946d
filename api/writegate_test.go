package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// TestWriteGate: a write admitted before a pause keeps the pause from
// draining until it ends; a write during a pause waits for its end, or is
// answered 503 after Hold; on a moved store every write is refused at once.
func TestWriteGate(t *testing.T) {
	ctx := context.Background()
	g := NewWriteGate()
	g.Hold = 200 * time.Millisecond
	leave, err := g.enter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	g.Set(storage.WriteState{Pause: "p1"})
	if g.Drained("p1") {
		t.Fatal("drained with a write in flight")
	}
	leave()
	if !g.Drained("p1") || g.Drained("p2") {
		t.Fatal("not drained once the write ended (or drained for another pause)")
	}
	admitted := make(chan error, 1)
	go func() {
		l, err := g.enter(ctx)
		if err == nil {
			l()
		}
		admitted <- err
	}()
	select {
	case err := <-admitted:
		t.Fatalf("a write was admitted during the pause (%v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	g.Set(storage.WriteState{})
	if err := <-admitted; err != nil {
		t.Fatalf("a write held by a pause that ended: %v", err)
	}
	g.Set(storage.WriteState{Pause: "p3"})
	var e *Error
	if _, err := g.enter(ctx); !errors.As(err, &e) || e.Status != http.StatusServiceUnavailable || e.Header.Get("Retry-After") == "" {
		t.Fatalf("a write held past Hold: %v", err)
	}
	g.Set(storage.WriteState{Moved: "postgres://db + s3://bucket"})
	if _, err := g.enter(ctx); !errors.As(err, &e) || e.Status != http.StatusServiceUnavailable || !strings.Contains(e.Msg, "copied to another") {
		t.Fatalf("a write on a moved store: %v", err)
	}
}
