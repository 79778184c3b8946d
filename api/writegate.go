package api

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// WriteGate admits the writes of one instance (every request but GET, HEAD
// and OPTIONS) under the store's write state (storage's write pause, set
// by `vitrine copy --cutover`): while a pause is in force a write waits
// for its end, up to Hold, then is answered 503 with Retry-After; once the
// store was moved, every write is answered 503 at once, and reads go on.
// Set gives it the state; Drained reports when the writes admitted before
// a pause have all ended.
type WriteGate struct {
	// Hold is how long a write waits out a pause (default 10s).
	Hold time.Duration

	mu       sync.Mutex
	state    storage.WriteState
	inFlight int
	changed  chan struct{} // closed at every change of state or inFlight
}

// NewWriteGate returns a gate that admits every write.
func NewWriteGate() *WriteGate { return &WriteGate{changed: make(chan struct{})} }

// Set gives the gate the store's write state.
func (g *WriteGate) Set(s storage.WriteState) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s != g.state {
		g.state = s
		g.signal()
	}
}

// Drained reports whether pause is in force here and no write admitted
// before it is still running.
func (g *WriteGate) Drained(pause string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return pause != "" && g.state.Pause == pause && g.inFlight == 0
}

func (g *WriteGate) signal() {
	close(g.changed)
	g.changed = make(chan struct{})
}

// enter admits a write, or says why not; leave ends it.
func (g *WriteGate) enter(ctx context.Context) (leave func(), err error) {
	hold := g.Hold
	if hold <= 0 {
		hold = 10 * time.Second
	}
	var timer <-chan time.Time
	for {
		g.mu.Lock()
		s, changed := g.state, g.changed
		if s.Moved != "" {
			g.mu.Unlock()
			e := errorf(http.StatusServiceUnavailable, "This store was copied to another (%s) and takes no more writes: try again once the service runs on the copy", s.Moved)
			e.Header = http.Header{"Retry-After": {"5"}}
			return nil, e
		}
		if s.Pause == "" {
			g.inFlight++
			g.mu.Unlock()
			return sync.OnceFunc(func() {
				g.mu.Lock()
				g.inFlight--
				g.signal()
				g.mu.Unlock()
			}), nil
		}
		g.mu.Unlock()
		if timer == nil {
			t := time.NewTimer(hold)
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-changed:
		case <-timer:
			e := errorf(http.StatusServiceUnavailable, "Writes are paused while the store is copied (vitrine copy --cutover): try again in a few seconds")
			e.Header = retryAfter
			return nil, e
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
