package main

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/api/outbox"
	"github.com/vitrine/vitrine/storage"
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

// workers are the server's background goroutines: each runs until the
// workers' context ends, and stop waits for every one of them.
type workers struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// start runs fn in the background until stop. The first start makes the
// context every worker shares, from parent without its cancellation: the
// workers end when stop says, after requests have drained, not when the
// signal arrives.
func (w *workers) start(parent context.Context, fn func(context.Context)) {
	if w.ctx == nil {
		w.ctx, w.cancel = context.WithCancel(context.WithoutCancel(parent))
	}
	w.wg.Go(func() { fn(w.ctx) })
}

// stop cancels every worker and waits for each to return.
func (w *workers) stop() {
	if w.cancel != nil {
		w.cancel()
	}
	w.wg.Wait()
}

// The workers of the server's stores (App.startCaches), one line each:
// what runs, how often by default, and which pass of storage it runs.
//
//	blob queue         blobQueue.interval (10s)     Collector.Drain: the blobs due for deletion; a request that queued one wakes it
//	variant cache      cache.flushInterval (5s)     VariantCache.Flush: the last-use times, and the eviction (App.stop flushes once more)
//	usage counters     audit.flush (5s)             Usage.Flush: the usage counted in memory (the last flush is App.stop's)
//	audit retention    1h                           Usage.PurgeAudit: the audit entries past audit.retention
//	upload token purge 1h                           DB.PurgeUploadTokens: the tokens expired for more than uploadTokenKeep
//	resumable uploads  10m                          Resumable.Sweep: the expired uploads' parts, and the orphans of killed servers
//	erasures           erasure.interval (10s)       the users being erased, a step a pass (paced; erasureWorker)
type storeLoops struct {
	all      []*worker
	collect  *worker
	erasures *worker
}

// storeWorkers makes the workers of the table above.
func storeWorkers(cfg *fileConfig, st *stores, c *storage.Collector, v *storage.VariantCache, u *storage.Usage, log *slog.Logger) storeLoops {
	collect := blobQueueWorker(c, cfg.BlobQueue, log)
	erasures := erasureWorker(st.db, st.blobs, erasurePass(cfg.Erasure, cfg.Audit.Flush), cfg.Erasure.Interval, collect.Wake, log)
	return storeLoops{collect: collect, erasures: erasures, all: []*worker{collect, variantCacheWorker(v, cfg.Cache, log),
		usageWorker(u, cfg.Audit, log), auditWorker(u, log), uploadTokenWorker(st.db, log),
		resumableWorker(storage.NewResumable(st.parts, cfg.Uploads.API.PartSize), log), erasures}}
}

// variationsWorker builds the due stored variations every
// variations.interval, and when an upload queued a job: one job a pass,
// resting after each as long as it took (restAfter).
func variationsWorker(b *api.StoredVariations, log *slog.Logger) *worker {
	w := newWorker("stored variations", b.Interval(), b.Interval(), b.Pass, log)
	w.paced, w.signal = true, b.Wakeups()
	return w
}

// outboxWorkers are the events outbox's: the events worker fans the
// events due out every events.interval and as soon as a change commits;
// the deliveries worker sends the due deliveries every events.interval
// and whenever the fan-out or an attempt says some wait (on stop it waits
// for the attempts under way, each bounded by webhooks.timeout); the
// retention worker deletes the finished deliveries past
// webhooks.retention, hourly.
func outboxWorkers(box *outbox.Outbox, db *storage.DB, interval time.Duration, log *slog.Logger) []*worker {
	fan := newWorker("events", interval, time.Second, box.FanOut, log)
	fan.signal = db.EventsWritten()
	deliver := newWorker("deliveries", interval, time.Second, box.Deliver, log)
	deliver.signal, deliver.stop = box.Wakeups(), box.Stop
	return []*worker{fan, deliver, newWorker("deliveries retention", time.Hour, time.Hour, counted(box.PurgeFinished), log)}
}

// blobQueueWorker deletes the blobs the blob queue holds once due
// (storage.Collector.Drain) every blobQueue.interval (default 10s); a
// request that queued deletions wakes it (api.Deps.Collector).
func blobQueueWorker(c *storage.Collector, cfg storage.CollectorConfig, log *slog.Logger) *worker {
	return newWorker("blob queue", cfg.Interval, 10*time.Second, c.Drain, log)
}

// variantCacheWorker writes the variant cache's last-use times and evicts
// expired and over-cap variants (storage.VariantCache.Flush) every
// cache.flushInterval (default 5s). App.stop flushes once more (Close)
// after the requests and this worker have stopped.
func variantCacheWorker(c *storage.VariantCache, cfg storage.CacheConfig, log *slog.Logger) *worker {
	return newWorker("variant cache", cfg.FlushInterval, 5*time.Second, counted(c.Flush), log)
}

// uploadTokenKeep is how long an upload token is kept after it expired:
// an upload with it is told "expired" rather than "unknown" meanwhile.
const uploadTokenKeep = 24 * time.Hour

// uploadTokenWorker deletes the upload tokens that expired more than
// uploadTokenKeep ago (storage.DB.PurgeUploadTokens), at start and every
// hour.
func uploadTokenWorker(db *storage.DB, log *slog.Logger) *worker {
	return newWorker("upload token purge", time.Hour, time.Hour, func(ctx context.Context) (int, error) {
		_, err := db.PurgeUploadTokens(ctx, time.Now().Add(-uploadTokenKeep))
		return 0, err
	}, log)
}

// resumableGrace is how old an object under uploads/ with no upload must
// be to be deleted: younger, its upload may be being created.
const resumableGrace = time.Hour

// resumableWorker deletes the parts of resumable uploads that expired
// (uploads.resumableTTL) and what killed servers left of parts being
// written (storage.Resumable.Sweep), at start and every ten minutes. Every
// instance sharing the store may run it: a deletion is idempotent.
func resumableWorker(r *storage.Resumable, log *slog.Logger) *worker {
	return newWorker("resumable uploads", 10*time.Minute, 10*time.Minute, func(ctx context.Context) (int, error) {
		rep, err := r.Sweep(ctx, time.Now(), resumableGrace, true)
		return int(rep.Expired.Repaired + rep.Orphans.Repaired), err
	}, log)
}

// usageWorker writes the usage counted in memory (storage.Usage.Flush)
// every audit.flush (default 5s). It does not flush at the end: counts
// added while the server drains come later, so App.stop flushes once the
// requests and the workers have stopped, before the database closes.
func usageWorker(u *storage.Usage, cfg storage.UsageConfig, log *slog.Logger) *worker {
	return newWorker("usage counters", cfg.Flush, usageWorkerInterval, counted(u.Flush), log)
}

// usageWorkerInterval is audit.flush's default.
const usageWorkerInterval = 5 * time.Second

// auditWorker deletes the audit entries past audit.retention
// (storage.Usage.PurgeAudit) at start and every hour.
func auditWorker(u *storage.Usage, log *slog.Logger) *worker {
	return newWorker("audit retention", time.Hour, time.Hour, counted(u.PurgeAudit), log)
}

// Erasing a user (api/README.md "Erasing a user"): DELETE /users/<user> writes
// an erasure (storage.DB.RequestErasure), and the erasure worker of any
// instance takes it a step at a time (storage.DB.EraseStep): how many
// images a step erases, how long a taken erasure is held, how often to
// look and how fast to go is decided here.

// ErasureConfig tunes the erasure of users. The zero value is the
// default.
type ErasureConfig struct {
	// Batch is how many images one step erases, in one transaction
	// (default 100).
	Batch int `yaml:"batch"`
	// Interval is how often every instance looks for due erasures
	// (default 10s); a DELETE on the instance wakes it at once.
	Interval time.Duration `yaml:"interval"`
	// Lease is how long an erasure an instance took stays hidden from the
	// others (default 30s): longer than a step takes. The erasure of an
	// instance that dies is taken again, from its last committed step,
	// once the lease is over.
	Lease time.Duration `yaml:"lease"`
}

// Validate reports a negative batch or duration.
func (c ErasureConfig) Validate() error {
	if c.Batch < 0 || c.Interval < 0 || c.Lease < 0 {
		return errors.New("erasure: batch, interval and lease must not be negative")
	}
	return nil
}

// erasureWait is how long an erasure waiting for its user's blobs to be
// deleted rests before it is looked at again.
const erasureWait = time.Second

// erasureRetryMin and erasureRetryMax bound the backoff after a failed
// step.
const (
	erasureRetryMin = 10 * time.Second
	erasureRetryMax = 10 * time.Minute
)

// erasurePass is the pass of cfg; usageFlush is how often the usage
// counters are written (audit.flush), which the final step waits twice
// for, so that what was counted of the user before the erasure is written
// before it is erased.
func erasurePass(cfg ErasureConfig, usageFlush time.Duration) storage.ErasurePass {
	p := storage.ErasurePass{Batch: cfg.Batch, Lease: cfg.Lease, Wait: erasureWait,
		Settle: 2 * usageFlush, RetryMin: erasureRetryMin, RetryMax: erasureRetryMax}
	if p.Batch <= 0 {
		p.Batch = 100
	}
	if p.Lease <= 0 {
		p.Lease = 30 * time.Second
	}
	if usageFlush <= 0 {
		p.Settle = 2 * usageWorkerInterval
	}
	return p
}

// erasureWorker takes due erasures a step at a time (paced: it rests as
// long as each step took) every erasure.interval and when a DELETE wakes
// it; after a step that queued blob deletions it wakes the blob queue's
// worker, wake.
func erasureWorker(db *storage.DB, blobs *storage.Blobs, p storage.ErasurePass, interval time.Duration, wake func(), log *slog.Logger) *worker {
	pass := func(ctx context.Context) (int, error) {
		s, ok, err := db.EraseStep(ctx, blobs, p)
		if !ok {
			return 0, err
		}
		if s.Done {
			log.Info("user erased", "user", s.User, "erasure", s.Erasure)
		}
		if !s.Waiting {
			wake()
		}
		if s.Waiting {
			return 0, err
		}
		return 1, err
	}
	w := newWorker("erasures", interval, 10*time.Second, pass, log)
	w.paced = true
	return w
}

// watchWrites keeps the instance's write gate in step with the store's
// write state (storage's write pause, `vitrine copy --cutover`): it says
// that the instance serves the store and reads the state once before it
// returns (before the instance serves: a write cannot slip past a pause
// it has not seen), then its loop polls the state every writePoll,
// acknowledges a pause once the writes admitted before it have ended, and
// renews the heartbeat, until ctx ends (then it says the instance serves
// no more).
func watchWrites(ctx context.Context, db *storage.DB, g *api.WriteGate, instance string, log *slog.Logger) func(context.Context) {
	const writePoll, beat = 250 * time.Millisecond, 5 * time.Second
	var lastBeat time.Time
	acked := ""
	step := func(ctx context.Context) {
		if time.Since(lastBeat) >= beat {
			if err := db.Heartbeat(ctx, instance, 3*beat); err == nil {
				lastBeat = time.Now()
			} else if ctx.Err() == nil {
				log.Warn("write pause: heartbeat", "error", err)
			}
		}
		if s, err := db.WriteState(ctx); err == nil {
			g.Set(s)
			if s.Pause != "" && s.Pause != acked && g.Drained(s.Pause) {
				if err := db.AckPause(ctx, s.Pause, instance); err == nil {
					acked = s.Pause
					log.Info("write pause: writes held for vitrine copy --cutover", "pause", s.Pause)
				}
			}
		}
	}
	step(ctx)
	return func(ctx context.Context) {
		tick := time.NewTicker(writePoll)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				_ = db.Leave(context.WithoutCancel(ctx), instance)
				return
			case <-tick.C:
				step(ctx)
			}
		}
	}
}
