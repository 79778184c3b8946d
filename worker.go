package main

import (
	"context"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// worker is the one shape of the server's background loops (worker_*.go):
// the blob queue's collector, the variation builder, the variant cache's
// and the usage counters' flushes, the audit log's and the upload tokens'
// purges. It runs its pass at once, then every interval and whenever
// woken, until its context ends; a pass's error goes to the log. The pass
// is a single pass that storage offers (Collector.Drain,
// DB.DrainVariationJobs, Usage.Flush, ...): what to do and when lives
// here, the tables and transactions there.
//
// A paced worker rests after a pass that worked on something, restAfter
// times as long as the pass took, and then passes again at once; so its
// backlog drains a pass at a time, at a bounded share of a core.
type worker struct {
	name     string
	interval time.Duration
	// pass does one round of work and returns how much it worked on (a
	// paced worker passes again at once after resting when it is not 0).
	pass  func(context.Context) (int, error)
	paced bool
	log   *slog.Logger
	wake  chan struct{}
	// rest waits d or until ctx ends (sleep when nil; tests replace it).
	rest func(ctx context.Context, d time.Duration)
	// signal, when set, wakes the worker as Wake does (storage's
	// EventsWritten).
	signal <-chan struct{}
	// stop, when set, runs when the worker ends, before run returns: it
	// waits for work the passes started and did not wait for.
	stop func()
}

// restAfter is how long a paced worker rests after a pass, as a multiple
// of the time the pass took. Why: building an image's copies decodes it
// three times (0.4 s of a core for 12 MP), and building flat out beside
// back-to-back uploads slowed their median by 5-34% on 2 cores
// (e2e/load/upload.sh); resting as long as it worked caps the builder at
// half a core, and a backlog drains once uploads pause.
const restAfter = 1

// newWorker returns the worker named name (in its log lines) that runs
// pass every interval, or every def when interval is not positive.
func newWorker(name string, interval, def time.Duration, pass func(context.Context) (int, error), log *slog.Logger) *worker {
	if interval <= 0 {
		interval = def
	}
	return &worker{name: name, interval: interval, pass: pass, log: log, wake: make(chan struct{}, 1)}
}

// Wake makes the worker pass now instead of at its next tick (at once, or
// after the pass or rest under way).
func (w *worker) Wake() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run passes until ctx ends. Started with App.workers.start, it is joined
// before the stores close.
func (w *worker) run(ctx context.Context) {
	t := time.NewTicker(w.interval)
	defer t.Stop()
	if w.stop != nil {
		defer w.stop()
	}
	for {
		start := time.Now()
		n, err := w.tracedPass(ctx)
		if err != nil && ctx.Err() == nil {
			w.log.Warn(w.name, "err", err)
		}
		if w.paced && n > 0 && ctx.Err() == nil {
			w.restFor(ctx, restAfter*time.Since(start))
			if ctx.Err() != nil {
				return
			}
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-w.wake:
		case <-w.signal:
		}
	}
}

// tracedPass runs one pass in a span of its own (a root: a background
// job), named after the worker, with the items it handled.
func (w *worker) tracedPass(ctx context.Context) (int, error) {
	if !tracingOn.Load() {
		return w.pass(ctx)
	}
	pctx, span := otel.Tracer(tracerName).Start(ctx, "worker "+w.name, trace.WithNewRoot(),
		trace.WithAttributes(attribute.String("vitrine.worker.name", w.name)))
	n, err := w.pass(pctx)
	span.SetAttributes(attribute.Int("vitrine.worker.items", n))
	endSpan(span, err)
	return n, err
}

// restFor waits d, or until ctx ends.
func (w *worker) restFor(ctx context.Context, d time.Duration) {
	if w.rest != nil {
		w.rest(ctx, d)
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// counted adapts a pass that reports only an error to the worker's pass:
// it works on nothing that a paced worker would pass again for.
func counted(pass func(context.Context) error) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) { return 0, pass(ctx) }
}
