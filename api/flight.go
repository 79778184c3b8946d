package api

import (
	"context"
	"sync"
)

// flight computes concurrent identical variant misses once per instance.
// Unlike a plain single-flight, the shared work runs on a context of its
// own that is cancelled only when every caller waiting for it has gone, and
// each caller waits no longer than its own context: no request waits on
// another's slow work past its own deadline, and work nobody wants any more
// stops.
type flight struct {
	mu    sync.Mutex
	calls map[string]*flightCall
}

// flightCall is one computation in progress.
type flightCall struct {
	done    chan struct{}
	v       variant
	err     error
	waiters int
	cancel  context.CancelFunc
}

// do returns fn's result for key, running fn once for all concurrent
// callers with the same key. shared reports that another caller started
// the work.
func (f *flight) do(ctx context.Context, key string, fn func(context.Context) (variant, error)) (v variant, shared bool, err error) {
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[string]*flightCall{}
	}
	fc, shared := f.calls[key]
	if shared {
		fc.waiters++
	} else {
		// The work keeps the first caller's values (logger, request id) but
		// not its cancellation: it ends when the last waiter leaves.
		wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		fc = &flightCall{done: make(chan struct{}), waiters: 1, cancel: cancel}
		f.calls[key] = fc
		go func() {
			fc.v, fc.err = fn(wctx)
			f.mu.Lock()
			f.forget(key, fc)
			f.mu.Unlock()
			cancel()
			close(fc.done)
		}()
	}
	f.mu.Unlock()
	select {
	case <-fc.done:
		return fc.v, shared, fc.err
	case <-ctx.Done():
		f.mu.Lock()
		fc.waiters--
		if fc.waiters == 0 {
			// Nobody wants the result: stop the work, and let a later
			// caller start afresh rather than join a cancelled call.
			fc.cancel()
			f.forget(key, fc)
		}
		f.mu.Unlock()
		return variant{}, shared, ctx.Err()
	}
}

// forget removes fc from the calls in progress unless a newer call for key
// replaced it; f.mu is held.
func (f *flight) forget(key string, fc *flightCall) {
	if f.calls[key] == fc {
		delete(f.calls, key)
	}
}
