package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// testWorker drives a worker whose pass reports each call on calls and
// returns the next of results (then 0, nil); rests records what the worker
// asked to rest.
type testWorker struct {
	w      *worker
	calls  chan int
	cancel context.CancelFunc
	done   chan struct{}
	log    *bytes.Buffer

	mu    sync.Mutex
	rests []time.Duration
}

type passResult struct {
	n    int
	err  error
	took time.Duration // the pass sleeps this long
}

func startTestWorker(t *testing.T, interval time.Duration, paced bool, results ...passResult) *testWorker {
	t.Helper()
	tw := &testWorker{calls: make(chan int), done: make(chan struct{}), log: &bytes.Buffer{}}
	var mu sync.Mutex
	call := 0
	pass := func(ctx context.Context) (int, error) {
		mu.Lock()
		call++
		i := call
		mu.Unlock()
		select {
		case tw.calls <- i:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		if i > len(results) {
			return 0, nil
		}
		r := results[i-1]
		time.Sleep(r.took)
		return r.n, r.err
	}
	tw.w = newWorker("test work", interval, time.Hour, pass, slog.New(slog.NewTextHandler(tw.log, nil)))
	tw.w.paced = paced
	tw.w.rest = func(ctx context.Context, d time.Duration) {
		tw.mu.Lock()
		tw.rests = append(tw.rests, d)
		tw.mu.Unlock()
	}
	ctx, cancel := context.WithCancel(t.Context())
	tw.cancel = cancel
	go func() {
		defer close(tw.done)
		tw.w.run(ctx)
	}()
	t.Cleanup(tw.stop)
	return tw
}

// next waits for the next pass and checks it is the want-th.
func (tw *testWorker) next(t *testing.T, want int) {
	t.Helper()
	if got := <-tw.calls; got != want {
		t.Fatalf("pass %d, want pass %d", got, want)
	}
}

// stop cancels the worker's context and waits for run to return.
func (tw *testWorker) stop() {
	tw.cancel()
	<-tw.done
}

func (tw *testWorker) restsAsked() []time.Duration {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	return append([]time.Duration(nil), tw.rests...)
}

// TestWorker: a worker passes at once, on every tick and when woken, logs
// a pass's error under its name, and returns when its context ends; a
// paced worker rests after a pass that worked on something, as long as
// the pass took, and passes again without a tick or a wake; an unpaced one
// never rests.
func TestWorker(t *testing.T) {
	t.Run("passes at start and stops when its context ends", func(t *testing.T) {
		tw := startTestWorker(t, time.Hour, false)
		tw.next(t, 1)
		tw.stop() // returns: run has ended
		select {
		case n := <-tw.calls:
			t.Fatalf("pass %d after the context ended", n)
		default:
		}
	})
	t.Run("passes when woken", func(t *testing.T) {
		tw := startTestWorker(t, time.Hour, false, passResult{n: 1})
		tw.next(t, 1)
		tw.w.Wake()
		tw.next(t, 2)
		tw.w.Wake()
		tw.next(t, 3)
		if r := tw.restsAsked(); len(r) != 0 {
			t.Fatalf("an unpaced worker rested %v", r)
		}
	})
	t.Run("passes on every tick", func(t *testing.T) {
		tw := startTestWorker(t, time.Millisecond, false)
		for i := 1; i <= 3; i++ {
			tw.next(t, i)
		}
	})
	t.Run("logs a pass's error", func(t *testing.T) {
		tw := startTestWorker(t, time.Hour, false, passResult{err: errors.New("disk on fire")})
		tw.next(t, 1)
		tw.w.Wake()
		tw.next(t, 2) // the first pass's error is logged before the worker waits
		tw.stop()
		if got := tw.log.String(); !strings.Contains(got, "test work") || !strings.Contains(got, "disk on fire") {
			t.Fatalf("log %q; want the worker's name and the error", got)
		}
	})
	t.Run("paced: rests as long as a pass took, then passes again", func(t *testing.T) {
		took := 3 * time.Millisecond
		tw := startTestWorker(t, time.Hour, true, passResult{n: 1, took: took}, passResult{n: 1, took: took},
			passResult{n: 0, took: took})
		for i := 1; i <= 3; i++ {
			tw.next(t, i) // no tick (an hour) and no wake: the rests lead to the next pass
		}
		tw.w.Wake()
		tw.next(t, 4) // after a pass that found nothing, the worker waited
		tw.stop()
		r := tw.restsAsked()
		if len(r) != 2 {
			t.Fatalf("rests %v; want one after each of the 2 passes that worked", r)
		}
		for _, d := range r {
			if d < restAfter*took {
				t.Fatalf("rest %v after a pass of at least %v; want at least %v", d, took, restAfter*took)
			}
		}
	})
}
