package filters

import (
	"context"
	"runtime"
	"sync/atomic"
)

// worker runs the calls of one instance on an OS thread of its own whose
// scheduling priority is lowered (Config.Policy, Config.Nice): a guest that
// burns its whole timeout gets a core only when the server's request
// threads leave it idle (SCHED_IDLE), or competes with them at a fraction
// of their weight (a niceness). Why a thread per instance and not per call:
// starting a thread costs more than a short call, and an instance runs one
// call at a time anyway. The thread ends with the worker (a goroutine that
// exits while locked to its thread takes the thread with it), so the
// lowered priority never leaks to other goroutines.
type worker struct {
	jobs chan func()
}

// priority is how a worker's thread is scheduled: under SCHED_IDLE
// (Config.Policy "idle"), or else at a niceness (0: unchanged).
type priority struct {
	idle bool
	nice int
}

// startWorker starts a worker at the given priority.
func startWorker(p priority) *worker {
	w := &worker{jobs: make(chan func())}
	go func() {
		runtime.LockOSThread() // never unlocked: see worker
		if !p.idle || idlePriority() != nil {
			if p.nice > 0 {
				lowerPriority(p.nice)
			}
		}
		for job := range w.jobs {
			job()
		}
	}()
	return w
}

// do runs f on the worker's thread and waits for it.
func (w *worker) do(f func()) {
	done := make(chan struct{})
	w.jobs <- func() {
		defer close(done)
		f()
	}
	<-done
}

// stop ends the worker and its thread once its job is done.
func (w *worker) stop() { close(w.jobs) }

// runner bounds the guest calls that run at once across every filter of a
// host (Config.MaxRunning). Why: wazero runs guest code on the calling
// goroutine, which keeps its Go processor (P) until the call returns, so
// without a bound enough looping guests would hold every P and starve the
// server's own goroutines; package main (app.go) raises GOMAXPROCS by this bound.
type runner struct {
	slots   chan struct{}
	started atomic.Uint64 // calls that got a slot, ever
}

func newRunner(n int) *runner { return &runner{slots: make(chan struct{}, n)} }

// acquire waits for a running slot until ctx ends.
func (r *runner) acquire(ctx context.Context) error {
	select {
	case r.slots <- struct{}{}:
		r.started.Add(1)
		return nil
	default:
	}
	select {
	case r.slots <- struct{}{}:
		r.started.Add(1)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *runner) release() { <-r.slots }

// GuestCalls says how many guest calls have started running on h since it
// was made, and how many run now.
func (h *Host) GuestCalls() (started uint64, running int) {
	return h.cfg.runner.started.Load(), len(h.cfg.runner.slots)
}
