package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/api/cdn"
	"github.com/vitrine/vitrine/api/outbound"
	"github.com/vitrine/vitrine/api/outbox"
	"github.com/vitrine/vitrine/api/ratelimit"
	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/filters"
	"github.com/vitrine/vitrine/storage"
	"github.com/vitrine/vitrine/web"
)

// App is one vitrine server: New builds it from a configuration, Run
// starts its parts in order, serves until its context ends, and stops the
// parts in the reverse order, each stop waited for. `vitrine serve` is New
// then Run; a test drives the same value without building the binary.
//
// Start (Run's list of steps): tracing, stores (opened and migrated), the
// first admin key, the engine, the variant cache, queue and counters, the
// stored variations, the events outbox, metrics, the rate limiter, the
// filters' initial load (in the background), the API and its listener (so
// /healthz and /status answer at once), the background workers, pprof.
// Every goroutine a step starts is joined at the stop. /readyz answers
// 200 only once the initial filter load has finished and no filter a
// request may need has failed.
//
// Stop (stop): not ready, requests drained, every worker cancelled and
// joined, counters and caches flushed, every engine slot taken and libvips
// shut down, filters closed, the rate limiter's Redis connections closed,
// stores closed. A start that fails part way stops exactly the parts it
// had started.
type App struct {
	cfg     *fileConfig
	dataDir string
	log     *slog.Logger
	// out receives the first admin key, printed once.
	out io.Writer
	// listening, when set, gets the API's address once it listens (tests).
	listening func(net.Addr)

	st        *stores
	eng       *engine.Engine
	fh        *filters.Host
	sync      *filterSync // filters deployed through the API
	variants  *storage.VariantCache
	usage     *storage.Usage
	collector *storage.Collector
	buses     []*outbox.Bus // events.topics
	limits    *ratelimit.Limiter
	loops     []*worker // the background loops, made by startCaches
	deps      api.Deps
	api       *api.Server

	http    *http.Server
	ln      net.Listener
	metrics *http.Server // the metrics' own listener, when metrics.listen is set
	pprof   *http.Server
	workers workers
	// stopTracing flushes and stops the traces' exporter (nil: no tracing).
	stopTracing func(context.Context) error
	// shutdownVips stops libvips for the process once the engine closed:
	// engine.Shutdown (a test that starts several Apps keeps it running).
	shutdownVips func()
}

// New returns the server for cfg, whose data directory is dataDir; it
// opens nothing (Run does).
func New(cfg *fileConfig, dataDir string, log *slog.Logger, out io.Writer) *App {
	return &App{cfg: cfg, dataDir: dataDir, log: log, out: out, shutdownVips: engine.Shutdown}
}

// Run starts the server, serves until ctx ends (SIGTERM or SIGINT for
// `vitrine serve`), then drains and stops it. It returns the error that
// stopped the start or the serving, joined with any error of the stop.
func (a *App) Run(ctx context.Context) (err error) {
	defer func() { err = errors.Join(err, a.stop()) }()
	for _, step := range []func(context.Context) error{
		a.startTracing, a.openStores, a.bootstrapAdmin, a.startEngine, a.startCaches, a.startVariations, a.startEvents,
		a.startMetrics, a.startRateLimits, a.startFilters, a.startAPI, a.startWorkers, a.startPprof,
	} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return a.serve(ctx)
}

// startTracing turns OpenTelemetry traces on when the OTEL_* variables ask
// for them (api/README.md, Tracing).
func (a *App) startTracing(ctx context.Context) error {
	module, _ := buildVersion()
	stop, err := setupTracing(ctx, os.Getenv, module)
	if err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	a.stopTracing = stop
	if stop != nil {
		a.log.Info("tracing on", "service", cmp.Or(os.Getenv("OTEL_SERVICE_NAME"), "vitrine"))
	}
	return nil
}

// openStores opens (and migrates) the database and the blob store.
func (a *App) openStores(ctx context.Context) error {
	st, err := openStores(ctx, a.cfg, a.dataDir)
	a.st = st
	return err
}

// startEngine starts the image engine (libvips).
func (a *App) startEngine(context.Context) error {
	ecfg := a.cfg.Engine
	ecfg.Logger = a.log
	eng, err := engine.New(ecfg)
	if err != nil {
		return err
	}
	a.eng = eng
	raiseGOMAXPROCS(eng.Config().Concurrency)
	return nil
}

// startRateLimits makes the rate limiter when a rate is configured
// (rateLimits): in process, or on the shared Redis of rateLimits.redis.
func (a *App) startRateLimits(context.Context) error {
	if !a.cfg.RateLimits.Enabled() {
		return nil
	}
	o := ratelimit.Options{Logger: a.log}
	if a.deps.Metrics != nil {
		o.Observer = a.deps.Metrics
	}
	l, err := ratelimit.New(a.cfg.RateLimits, o)
	if err != nil {
		return err
	}
	a.limits, a.deps.RateLimits = l, l
	return nil
}

// startFilters starts loading the WebAssembly filters in the background;
// readiness waits for that first load.
func (a *App) startFilters(ctx context.Context) error {
	var observer filters.Observer // metrics, when on
	if a.deps.Metrics != nil {
		observer = a.deps.Metrics
	}
	fh, err := openFilters(ctx, a.cfg, a.dataDir, a.eng, observer, a.log)
	if err != nil {
		return err
	}
	a.fh = fh
	if len(fh.Current().Status()) > 0 {
		// Guest code keeps its Go processor while it runs (filters.runner):
		// as many more processors as guest calls may run keep the server's
		// own goroutines from waiting behind them. Only with a filter folder
		// at start: the embedded default's empty filters folder runs no
		// guest (a filter added later takes effect here at the next start).
		raiseGOMAXPROCS(a.eng.Config().Concurrency + a.cfg.Filters.MaxRunningCalls())
	}
	floor, busy := a.cfg.Filters.GCHeapFloor(), filters.GuestsBusy(fh.GuestCalls)
	a.workers.start(ctx, func(ctx context.Context) { filters.PaceGC(ctx, floor, busy) })
	a.sync = newFilterSync(a.st.db, a.st.blobs, fh, a.log)
	a.loops = append(a.loops, a.sync.worker(a.cfg.Filters.SyncInterval))
	compile := cmp.Or(a.cfg.Filters.CompileTimeout, filters.DefaultCompileTimeout)
	a.deps.Filters = filterAdmin{h: fh, sync: a.sync, wait: compile,
		maxModule: cmp.Or(a.cfg.Filters.MaxModuleBytes, filters.DefaultMaxModuleBytes),
		rollout:   a.sync.wake.interval + compile}
	return nil
}

// startAPI builds the API and the admin UI and listens on cfg.Listen; the
// listener serves from here on (liveness and /status at once, readiness
// once the filters have loaded).
func (a *App) startAPI(context.Context) error {
	a.deps.Readiness = a.unready
	a.deps.Writes = api.NewWriteGate()
	srv, err := api.New(a.cfg.API, a.deps)
	if err != nil {
		return err
	}
	a.api = srv
	wireFilters(a.fh, a.sync, a.eng, srv)
	ui, err := web.New(web.Config{TrustedProxies: a.cfg.API.TrustedProxies, Logger: a.log}, srv, webSessions{a.st.db})
	if err != nil {
		return err
	}
	var metricsHandler http.Handler
	if a.deps.Metrics != nil && a.metrics == nil {
		metricsHandler = a.deps.Metrics.Handler()
	}
	if a.ln, err = net.Listen("tcp", a.cfg.Listen); err != nil {
		return err
	}
	// An instance reports its filters under its host name and address.
	host, _ := os.Hostname()
	inst := host + " " + a.ln.Addr().String()
	a.sync.instance = func() string { return inst }
	a.http = &http.Server{Handler: tracedHandler(routes(srv, ui, metricsHandler, requestTimeout(a.cfg))), ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout: 120 * time.Second, ErrorLog: slog.NewLogLogger(a.log.Handler(), slog.LevelWarn)}
	a.log.Info("vitrine listening", "addr", "http://"+a.ln.Addr().String(), "database", storage.RedactURL(a.cfg.Database),
		"storage", storage.RedactURL(a.cfg.Storage))
	if a.listening != nil {
		a.listening(a.ln.Addr())
	}
	return nil
}

// serve serves until ctx ends, then makes the instance unready (for
// shutdownDelay, still serving) and lets in-flight requests finish within
// shutdownTimeout.
func (a *App) serve(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- a.http.Serve(a.ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	timeout := cmp.Or(a.cfg.ShutdownTimeout, 30*time.Second)
	a.log.Info("shutting down: draining requests", "timeout", timeout.String())
	a.api.Drain()
	if d := a.cfg.ShutdownDelay; d > 0 {
		a.log.Info("shutting down: not ready, still serving", "delay", d.String())
		time.Sleep(d)
	}
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := a.http.Shutdown(sctx)
	<-errc // Serve has returned http.ErrServerClosed and closed the listener
	a.ln = nil
	if err != nil {
		// stop closes the connections still open (a.http stays set).
		return fmt.Errorf("shutdown: requests still running after %s: %w", timeout, err)
	}
	a.http = nil
	return nil
}

// stop stops every part that started, in the reverse order of the start,
// each step waited for. The flushes and the engine's stop are bounded by
// shutdownTimeout.
func (a *App) stop() error {
	var errs []error
	for _, s := range []*http.Server{a.http, a.pprof, a.metrics} {
		if s != nil {
			errs = append(errs, s.Close())
		}
	}
	if a.ln != nil {
		_ = a.ln.Close() // listening but never served (a later step failed), or Serve failed
	}
	a.workers.stop()
	ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(a.cfg.ShutdownTimeout, 30*time.Second))
	defer cancel()
	if a.usage != nil {
		errs = append(errs, a.usage.Flush(ctx))
	}
	if a.variants != nil {
		errs = append(errs, a.variants.Close(ctx))
	}
	for _, b := range a.buses {
		errs = append(errs, b.Close(ctx))
	}
	if a.eng != nil {
		// Why only now: libvips must not stop under a render, and a render
		// whose clients all left runs on without a request (api's flights).
		if err := a.eng.Close(ctx); err != nil {
			errs = append(errs, err)
		} else {
			a.shutdownVips()
		}
	}
	if a.fh != nil {
		errs = append(errs, a.fh.Close())
	}
	if a.limits != nil {
		errs = append(errs, a.limits.Close())
	}
	if a.st != nil {
		a.st.Close()
	}
	if a.stopTracing != nil {
		// Last: the spans of everything above are flushed.
		errs = append(errs, a.stopTracing(ctx))
	}
	err := errors.Join(errs...)
	if err != nil {
		a.log.Error("stop", "err", err)
	} else if a.st != nil {
		a.log.Info("stopped")
	}
	return err
}

// unready says what keeps the instance from being ready: the filters'
// initial load still running, or a filter a request may need that failed
// (none when it is ready). The API asks it only once startFilters set a.fh.
func (a *App) unready() []string {
	select {
	case <-a.fh.Initial():
	default:
		return []string{"filters are still loading"}
	}
	if a.sync != nil {
		select {
		case <-a.sync.first:
		default:
			return []string{"filters deployed through the API are still loading"}
		}
	}
	return a.fh.Current().Unready()
}

// startCaches makes the variant cache, the blob queue's collector, the
// usage counters and the erasures, the API's dependencies over them, and
// their workers (workers.go), which start with startWorkers.
func (a *App) startCaches(context.Context) error {
	variants, err := storage.NewVariantCache(a.st.db, a.st.blobs, a.cfg.Cache)
	if err != nil {
		return err
	}
	a.variants = variants
	if a.collector, err = storage.NewCollector(a.st.db, a.st.blobs, a.cfg.BlobQueue); err != nil {
		return err
	}
	a.usage = storage.NewUsage(a.st.db, a.cfg.Audit)
	loops := storeWorkers(a.cfg, a.st, a.collector, variants, a.usage, a.log)
	a.loops = append(a.loops, loops.all...)
	a.deps = api.Deps{DB: a.st.db, Blobs: a.st.blobs, Engine: a.eng, Logger: a.log, Variants: variants,
		Collector: loops.collect, Usage: a.usage, Outbound: a.cfg.Outbound, Erasures: loops.erasures, UploadParts: a.st.parts}
	if boolOrTrue(a.cfg.AccessLog) {
		a.deps.AccessLog = a.log
	}
	return nil
}

// startVariations makes the builder of stored variations and its worker,
// unless variations are off.
func (a *App) startVariations(context.Context) error {
	b, err := api.NewStoredVariations(a.st.db, a.st.blobs, a.eng, a.cfg.Variations)
	if err != nil || b == nil {
		return err
	}
	a.loops = append(a.loops, variationsWorker(b, a.log))
	a.deps.Variations = b
	return nil
}

// startEvents makes the events outbox and its workers when something
// consumes events (outbox.Wanted): the events worker fans each event out
// to its sinks (the topics, the webhooks and purgers that want it), the
// deliveries worker sends each sink's deliveries. No broker is dialled
// here: a topic connects on its first delivery, so the server starts
// while a broker is down.
func (a *App) startEvents(context.Context) error {
	if !outbox.Wanted(a.cfg.Events, a.cfg.Webhooks, len(a.cfg.CDN.Purgers)) {
		return nil
	}
	o := outbox.Options{DB: a.st.db, Events: a.cfg.Events, Webhooks: a.cfg.Webhooks, Tags: a.cfg.API.CDN,
		Trace: traceEvent, Log: a.log}
	if a.cfg.Webhooks.On() {
		guard, err := outboundGuard(a.cfg.Outbound, a.cfg.Webhooks.WithDefaults().Timeout)
		if err != nil {
			return err
		}
		o.Client, a.deps.Webhooks = guard.Client(), guard
	}
	for _, u := range a.cfg.Events.Topics {
		b, err := outbox.NewBus(u, storage.RedactURL(u))
		if err != nil {
			return err
		}
		o.Buses = append(o.Buses, b)
	}
	for _, pc := range a.cfg.CDN.Purgers {
		p, err := cdn.NewPurger(pc)
		if err != nil {
			return err
		}
		o.Purgers = append(o.Purgers, p)
	}
	box := outbox.New(o)
	a.buses, a.deps.Sinks = o.Buses, box
	a.loops = append(a.loops, outboxWorkers(box, a.st.db, a.cfg.Events.Interval, a.log)...)
	return nil
}

// outboundGuard is the guard of connections made on a user's behalf, with
// the file's allowlist and a caller's time cap.
func outboundGuard(c outbound.Config, timeout time.Duration) (*outbound.Guard, error) {
	c.Timeout = timeout
	c.MaxBytes = 1 << 20
	return outbound.New(c)
}

// startWorkers starts the background work: the loops startCaches made
// and the filter reload on SIGHUP.
func (a *App) startWorkers(ctx context.Context) error {
	for _, w := range a.loops {
		a.workers.start(ctx, w.run)
	}
	a.workers.start(ctx, a.fh.ReloadOnHUP)
	a.workers.start(ctx, watchWrites(ctx, a.st.db, a.deps.Writes, a.sync.instance(), a.log))
	return nil
}

// startMetrics collects the Prometheus metrics when metrics.enabled, and
// serves them on metrics.listen when that is set.
func (a *App) startMetrics(ctx context.Context) error {
	if !a.cfg.Metrics.Enabled {
		return nil
	}
	m := api.NewMetrics()
	a.eng.SetObserver(m)
	a.st.db.Observe(m.ObserveDB)
	a.st.blobs.Observe(m.ObserveBlob)
	m.WatchCache(a.variants.Stats)
	m.WatchBlobQueue(a.collector.Stats)
	m.WatchEngine(a.eng.Load)
	if a.deps.Sinks != nil {
		m.WatchSinks(a.deps.Sinks)
	}
	a.deps.Metrics = m
	if a.cfg.Metrics.Listen == "" {
		return nil
	}
	srv, err := a.serveAside(ctx, "metrics", "metrics", a.cfg.Metrics.Listen, m.Handler(), "/metrics")
	a.metrics = srv
	return err
}

// startPprof serves net/http/pprof on debug.pprofListen, when set.
func (a *App) startPprof(ctx context.Context) error {
	if a.cfg.Debug.PprofListen == "" {
		return nil
	}
	srv, err := a.serveAside(ctx, "pprof", "debug.pprofListen", a.cfg.Debug.PprofListen, pprofMux(), "/debug/pprof/")
	a.pprof = srv
	return err
}

// serveAside serves h on a listener of its own at addr (the metrics',
// pprof's), in a worker: stop closes it and joins the worker, and an
// error that ends its serving is logged. name calls it in the log,
// setting names addr's configuration key in errors, path is where it
// serves.
func (a *App) serveAside(ctx context.Context, name, setting, addr string, h http.Handler, path string) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", setting, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	a.log.Info(name+" listening", "addr", "http://"+ln.Addr().String()+path)
	a.workers.start(ctx, func(context.Context) {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			a.log.Error(name+" stopped serving", "err", err)
		}
	})
	return srv, nil
}

// bootstrapAdmin creates an admin key pair with every resource on every
// user on a first start with no keys at all, and prints it once. Instances
// starting together on a new database race for it: the one whose key is
// stored prints it, the others find it there and go on.
func (a *App) bootstrapAdmin(ctx context.Context) error {
	if len(a.cfg.API.AccessControl.Keys) > 0 {
		return nil
	}
	keys, err := a.st.db.Keys(ctx)
	if err != nil || len(keys) > 0 {
		return err
	}
	k := storage.Key{PublicKey: "admin", PrivateKey: randomHex(32)}
	err = createKey(ctx, a.st, k, &storage.Rule{Group: "all", Users: []string{"*"}})
	if errors.Is(err, storage.ErrExist) {
		a.log.Info("another instance created the first admin key")
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(a.out, "Created an admin key pair (shown only this once; it can read and write every user):\n"+
		"  public key:  %s\n  private key: %s\n", k.PublicKey, k.PrivateKey)
	return nil
}
