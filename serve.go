package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/api/cdn"
	"github.com/vitrine/vitrine/api/outbound"
	"github.com/vitrine/vitrine/api/outbox"
	"github.com/vitrine/vitrine/storage"
	"github.com/vitrine/vitrine/web"
)

const serveUsage = `usage:
  vitrine serve [--config FILE] [--listen ADDR] [--data DIR]
serves the API, the admin UI under /admin and, when configured, the metrics; SIGTERM or SIGINT
drains and stops it, SIGHUP reloads the filters
`

// serve is `vitrine serve`: New, then Run until SIGTERM or SIGINT.
func serve(ctx context.Context, args []string) error {
	cmd := newCommand("serve", serveUsage)
	var f commonFlags
	f.register(cmd.FlagSet)
	listen := cmd.String("listen", "", "address to listen on (default 127.0.0.1:8080)")
	if _, err := cmd.parse(args, 0, 0); err != nil {
		return err
	}
	cfg, err := loadConfig(f.config, f.data)
	if err != nil {
		return err
	}
	if *listen != "" {
		cfg.Listen = *listen
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return New(cfg, f.data, slog.New(slog.NewJSONHandler(os.Stderr, nil)), os.Stdout).Run(ctx)
}

// raiseGOMAXPROCS lets the Go scheduler run at least n goroutines at once,
// unless the operator set GOMAXPROCS. Why: a goroutine in a cgo call (a
// libvips pipeline) or running guest code keeps its P until the runtime's
// monitor takes it back, which can be milliseconds, so with one P per CPU
// and every P held by a render, the HTTP code and the next request's
// database lookups wait. On 2 CPUs with 4 pipelines, 200 px thumbnails from
// stored variations at 16 concurrent requests: p99 224 ms with GOMAXPROCS
// 2, 72 ms with 4, at the same throughput (README, Performance).
func raiseGOMAXPROCS(n int) {
	if os.Getenv("GOMAXPROCS") == "" && n > runtime.GOMAXPROCS(0) {
		runtime.GOMAXPROCS(n)
	}
}

// startCaches makes the variant cache, the blob queue's collector, the
// usage counters, the erasure worker, the variation builder and the event
// topics, and the workers that run them (worker_*.go), which start with
// startWorkers.
func (a *App) startCaches(ctx context.Context) error {
	variants, err := storage.NewVariantCache(a.st.db, a.st.blobs, a.cfg.Cache)
	if err != nil {
		return err
	}
	a.variants = variants
	if a.collector, err = storage.NewCollector(a.st.db, a.st.blobs, a.cfg.BlobQueue); err != nil {
		return err
	}
	a.usage = storage.NewUsage(a.st.db, a.cfg.Audit)
	collect := blobQueueWorker(a.collector, a.cfg.BlobQueue, a.log)
	a.loops = []*worker{collect, variantCacheWorker(variants, a.cfg.Cache, a.log),
		usageWorker(a.usage, a.cfg.Audit, a.log), auditWorker(a.usage, a.log), uploadTokenWorker(a.st.db, a.log),
		resumableWorker(storage.NewResumable(a.st.parts, a.cfg.Uploads.API.PartSize), a.log)}
	erasures := erasureWorker(a.st.db, a.st.blobs, erasurePass(a.cfg.Erasure, a.cfg.Audit.Flush), a.cfg.Erasure.Interval,
		collect.Wake, a.log)
	a.loops = append(a.loops, erasures)
	a.deps = api.Deps{DB: a.st.db, Blobs: a.st.blobs, Engine: a.eng, Logger: a.log, Variants: variants,
		Collector: collect, Usage: a.usage, Outbound: a.cfg.Outbound, Erasures: erasures, UploadParts: a.st.parts}
	b, err := newVariationBuilder(a.st, a.eng)
	if err != nil {
		return err
	}
	if b != nil {
		a.loops = append(a.loops, b.worker(a.log))
		a.deps.Variations = b
	}
	if boolOrTrue(a.cfg.AccessLog) {
		a.deps.AccessLog = a.log
	}
	return a.startEvents(ctx)
}

// startEvents makes the events' workers when something consumes events:
// the events worker fans each event out to its sinks (the topics, the
// webhooks and purgers that want it), the deliveries worker sends each
// sink's deliveries. No broker is dialled here: a topic connects on its
// first delivery, so the server starts while a broker is down.
func (a *App) startEvents(context.Context) error {
	if !eventsWanted(a.cfg) {
		return nil
	}
	cfg := a.cfg.Webhooks.withDefaults()
	d := &dispatcher{db: a.st.db, cfg: cfg, log: a.log, busy: map[string]int{}, tracker: outbox.NewTracker(a.log),
		static: map[string]sink{}}
	if cfg.enabled() {
		guard, err := outboundGuard(a.cfg.Outbound, cfg.Timeout)
		if err != nil {
			return err
		}
		d.client = guard.Client()
		a.deps.Webhooks = guard
	}
	f := &fanout{db: a.st.db, webhooks: d.client != nil, tags: a.cfg.API.CDN, d: d}
	for _, u := range a.cfg.Events.Topics {
		b, err := outbox.NewBus(u, redact(u))
		if err != nil {
			return err
		}
		a.buses = append(a.buses, b)
		name := busSinkName(b)
		d.static[name] = busSink{bus: b, retryFor: a.cfg.Events.retention()}
		f.topics = append(f.topics, name)
	}
	for _, pc := range a.cfg.CDN.Purgers {
		p, err := cdn.NewPurger(pc)
		if err != nil {
			return err
		}
		name := purgeSinkName(p)
		d.static[name] = purgeSink{p: p, tags: f.tags}
		f.purgers = append(f.purgers, name)
	}
	a.deps.Sinks = d
	deliveries := deliveriesWorker(d, a.cfg.Events.Interval)
	a.loops = append(a.loops, eventsWorker(a.st.db, f, a.cfg.Events, a.log), deliveries,
		retentionWorker(a.st.db, cfg, a.log))
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
	a.workers.start(ctx, func(ctx context.Context) { reloadOnHUP(ctx, a.fh, a.log) })
	return nil
}

// startMetrics collects the Prometheus metrics when metrics.enabled, and
// serves them on metrics.listen when that is set.
func (a *App) startMetrics(context.Context) error {
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
	ln, err := net.Listen("tcp", a.cfg.Metrics.Listen)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	a.metrics = &http.Server{Handler: m.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = a.metrics.Serve(ln) }()
	a.log.Info("metrics listening", "addr", "http://"+ln.Addr().String()+"/metrics")
	return nil
}

// startPprof serves net/http/pprof on debug.pprofListen, when set.
func (a *App) startPprof(context.Context) error {
	addr := a.cfg.Debug.PprofListen
	if addr == "" {
		return nil
	}
	pln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("debug.pprofListen: %w", err)
	}
	a.pprof = &http.Server{Handler: pprofMux(), ReadHeaderTimeout: 10 * time.Second}
	a.log.Info("pprof listening", "addr", "http://"+pln.Addr().String()+"/debug/pprof/")
	go func() { _ = a.pprof.Serve(pln) }()
	return nil
}

// routes serves the admin UI under /admin, the metrics at GET /metrics when
// metrics is not nil, and everything else from the API. Why not a ServeMux:
// it would clean and redirect paths the API must see as sent.
// Every request's context ends after timeout (requestTimeout): the
// renders, queries and blob reads it started stop with it.
func routes(apiHandler, ui, metrics http.Handler, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		r = r.WithContext(ctx)
		switch {
		case r.URL.Path == "/admin" || strings.HasPrefix(r.URL.Path, "/admin/"):
			ui.ServeHTTP(w, r)
		case metrics != nil && r.URL.Path == "/metrics" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
			metrics.ServeHTTP(w, r)
		default:
			apiHandler.ServeHTTP(w, r)
		}
	})
}

// pprofMux serves net/http/pprof's handlers on a mux of their own, so the
// profiles never appear on the API's address.
func pprofMux() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("/debug/pprof/", pprof.Index)
	m.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	m.HandleFunc("/debug/pprof/profile", pprof.Profile)
	m.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	m.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return m
}

// boolOrTrue reads an optional boolean that defaults to true.
func boolOrTrue(p *bool) bool { return p == nil || *p }

// redact hides credentials in a store URL for the log: the user
// information, and the value of every query parameter whose name says it
// holds a secret (password=, sslpassword=, secret_access_key=, token=...).
func redact(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	if p.User != nil {
		p.User = url.User("***")
	}
	if p.RawQuery != "" {
		q := p.Query()
		for k := range q {
			if secretParam(k) {
				q[k] = []string{"***"}
			}
		}
		p.RawQuery = q.Encode()
	}
	return strings.Replace(p.String(), "%2A%2A%2A", "***", -1)
}

// secretParam reports whether a URL query parameter's name says it holds a
// secret.
func secretParam(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"pass", "pwd", "secret", "token", "credential", "signature"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
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

// webSessions keeps the admin UI's sessions in the database, so every
// instance shares them.
type webSessions struct{ *storage.DB }

func (s webSessions) CreateSession(ctx context.Context, x web.Session) error {
	return s.DB.CreateSession(ctx, storage.Session(x))
}

func (s webSessions) Session(ctx context.Context, idHash string) (web.Session, error) {
	x, err := s.DB.Session(ctx, idHash)
	if errors.Is(err, storage.ErrNotExist) {
		return web.Session{}, web.ErrNoSession
	}
	return web.Session(x), err
}
