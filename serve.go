package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/filters"
	"github.com/vitrine/vitrine/storage"
	"github.com/vitrine/vitrine/web"
)

const serveUsage = `usage:
  vitrine serve [--config FILE] [--listen ADDR] [--data DIR]
serves the API, the admin UI under /admin and, when configured, the metrics; SIGTERM or SIGINT
drains and stops it, SIGHUP reloads the filters
`

// serve is `vitrine serve`: it opens the stores, starts each part of the
// server in order, serves until SIGTERM or SIGINT, then drains and stops
// the parts in the reverse order.
func serve(ctx context.Context, args []string) error {
	cmd := newCommand("serve", serveUsage)
	var f commonFlags
	f.register(cmd.FlagSet)
	listen := cmd.String("listen", "", "address to listen on (default 127.0.0.1:8080)")
	if _, err := cmd.parse(args, 0, 0); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, err := open(ctx, f)
	if err != nil {
		return err
	}
	defer st.Close()
	if *listen != "" {
		st.cfg.Listen = *listen
	}
	s := &server{st: st, cfg: st.cfg, dataDir: f.data, log: slog.New(slog.NewJSONHandler(os.Stderr, nil))}
	defer s.stop()
	for _, step := range []func(context.Context) error{
		s.bootstrapAdmin, s.startEngine, s.startCaches, s.startMetrics, s.startFilters, s.startAPI, s.startPprof,
	} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return s.serve(ctx)
}

// server is a running `vitrine serve`: the parts each start step adds, and
// what stops them.
type server struct {
	st      *stores
	cfg     *fileConfig
	dataDir string
	log     *slog.Logger

	eng       *engine.Engine
	fh        *filters.Host
	variants  *storage.VariantCache
	collector *storage.Collector
	deps      api.Deps
	metricsLn net.Listener // the metrics' own listener, when metrics.listen is set
	api       *api.Server
	http      *http.Server
	ln        net.Listener

	// stops run in reverse order when serve returns.
	stops []func()
}

// onStop registers fn to run when the server stops.
func (s *server) onStop(fn func()) { s.stops = append(s.stops, fn) }

// stop runs the registered stops, last registered first.
func (s *server) stop() {
	for i := len(s.stops) - 1; i >= 0; i-- {
		s.stops[i]()
	}
}

// startEngine starts the image engine (libvips).
func (s *server) startEngine(context.Context) error {
	ecfg := s.cfg.Engine
	ecfg.Logger = s.log
	eng, err := engine.New(ecfg)
	if err != nil {
		return err
	}
	s.eng = eng
	raiseGOMAXPROCS(eng.Config().Concurrency)
	return nil
}

// raiseGOMAXPROCS lets the Go scheduler run as many goroutines at once as
// the engine runs libvips pipelines, unless GOMAXPROCS is set. Why: a
// goroutine in a cgo call keeps its P until the runtime's monitor takes it
// back, which can be milliseconds, so with one P per CPU and every P held
// by a render, the HTTP code and the next request's database lookups wait.
// On 2 CPUs with 4 pipelines, 200 px thumbnails from stored variations at
// 16 concurrent requests: p99 224 ms with GOMAXPROCS 2, 72 ms with 4, at
// the same throughput (README, Performance).
func raiseGOMAXPROCS(pipelines int) {
	if os.Getenv("GOMAXPROCS") == "" && pipelines > runtime.GOMAXPROCS(0) {
		runtime.GOMAXPROCS(pipelines)
	}
}

// startCaches starts the variant cache, the blob queue's collector and the
// usage counters (flushed once more when the server stops).
func (s *server) startCaches(ctx context.Context) error {
	variants, err := storage.NewVariantCache(s.st.db, s.st.blobs, s.cfg.Cache)
	if err != nil {
		return err
	}
	s.variants = variants
	s.onStop(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := variants.Close(cctx); err != nil {
			s.log.Error("variant cache", "err", err)
		}
	})
	go variants.Run(ctx, func(err error) { s.log.Warn("variant cache", "err", err) })
	if s.collector, err = storage.NewCollector(s.st.db, s.st.blobs, s.cfg.BlobQueue); err != nil {
		return err
	}
	go s.collector.Run(ctx, func(err error) { s.log.Warn("blob queue", "err", err) })
	usage := storage.NewUsage(s.st.db, s.cfg.Audit)
	go usage.Run(ctx, func(err error) { s.log.Warn("usage counters", "err", err) })
	s.onStop(func() {
		fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := usage.Flush(fctx); err != nil {
			s.log.Error("usage counters", "err", err)
		}
	})
	s.deps = api.Deps{DB: s.st.db, Blobs: s.st.blobs, Engine: s.eng, Logger: s.log, Variants: variants, Collector: s.collector, Usage: usage}
	if s.deps.Variations, err = startVariations(ctx, s.st, s.eng, s.log); err != nil {
		return err
	}
	if boolOrTrue(s.cfg.AccessLog) {
		s.deps.AccessLog = s.log
	}
	return nil
}

// startMetrics collects the Prometheus metrics when metrics.enabled, and
// serves them on metrics.listen when that is set.
func (s *server) startMetrics(context.Context) error {
	if !s.cfg.Metrics.Enabled {
		return nil
	}
	m := api.NewMetrics()
	s.eng.SetObserver(m)
	s.st.db.Observe(m.ObserveDB)
	s.st.blobs.Observe(m.ObserveBlob)
	m.WatchCache(s.variants.Stats)
	m.WatchBlobQueue(s.collector.Stats)
	m.WatchEngine(s.eng.Load)
	s.deps.Metrics = m
	if s.cfg.Metrics.Listen == "" {
		return nil
	}
	ln, err := net.Listen("tcp", s.cfg.Metrics.Listen)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	s.metricsLn = ln
	ms := &http.Server{Handler: m.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = ms.Serve(ln) }()
	s.onStop(func() { ms.Close() })
	s.log.Info("metrics listening", "addr", "http://"+ln.Addr().String()+"/metrics")
	return nil
}

// startFilters starts loading the WebAssembly filters in the background.
func (s *server) startFilters(ctx context.Context) error {
	var observer filters.Observer // metrics, when on
	if s.deps.Metrics != nil {
		observer = s.deps.Metrics
	}
	fh, err := openFilters(ctx, s.cfg, s.dataDir, s.eng, observer, s.log)
	if err != nil {
		return err
	}
	if s.cfg.Filters.Dir != "" {
		// Guest code keeps its Go processor while it runs (filters.runner):
		// as many more processors as guest calls may run keep the server's
		// own goroutines from waiting behind them.
		runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + s.cfg.Filters.MaxRunningCalls())
	}
	s.onStop(func() { _ = fh.Close() })
	s.deps.Filters = filterAdmin{h: fh, wait: cmp.Or(s.cfg.Filters.CompileTimeout, filters.DefaultCompileTimeout)}
	s.fh = fh
	return nil
}

// startAPI builds the API and the admin UI and listens on listen.
func (s *server) startAPI(ctx context.Context) error {
	srv, err := api.New(s.cfg.API, s.deps)
	if err != nil {
		return err
	}
	s.api = srv
	wireFilters(ctx, s.fh, s.eng, srv, s.log)
	ui, err := web.New(web.Config{TrustedProxies: s.cfg.API.TrustedProxies, Logger: s.log}, srv, webSessions{s.st.db})
	if err != nil {
		return err
	}
	var metricsHandler http.Handler
	if s.deps.Metrics != nil && s.metricsLn == nil {
		metricsHandler = s.deps.Metrics.Handler()
	}
	if s.ln, err = net.Listen("tcp", s.cfg.Listen); err != nil {
		return err
	}
	s.http = &http.Server{Handler: routes(srv, ui, metricsHandler), ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout: 120 * time.Second, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	s.log.Info("vitrine listening", "addr", "http://"+s.ln.Addr().String(), "database", redact(s.cfg.Database),
		"storage", redact(s.cfg.Storage))
	return nil
}

// startPprof serves net/http/pprof on debug.pprofListen, when set.
func (s *server) startPprof(context.Context) error {
	addr := s.cfg.Debug.PprofListen
	if addr == "" {
		return nil
	}
	pln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("debug.pprofListen: %w", err)
	}
	ps := &http.Server{Handler: pprofMux(), ReadHeaderTimeout: 10 * time.Second}
	s.onStop(func() { ps.Close() })
	s.log.Info("pprof listening", "addr", "http://"+pln.Addr().String()+"/debug/pprof/")
	go func() { _ = ps.Serve(pln) }()
	return nil
}

// serve serves until ctx ends, then stops accepting and lets in-flight
// requests finish; the registered stops then flush the variant cache, and
// libvips stops only once every request has drained.
func (s *server) serve(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- s.http.Serve(s.ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	timeout := s.cfg.ShutdownTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	s.log.Info("shutting down: draining requests", "timeout", timeout.String())
	s.api.Drain()
	if d := s.cfg.ShutdownDelay; d > 0 {
		s.log.Info("shutting down: not ready, still serving", "delay", d.String())
		time.Sleep(d)
	}
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := s.http.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: requests still running after %s: %w", timeout, err)
	}
	// Why only once drained: libvips must not stop under a request. It is
	// registered first, so it runs after every other stop.
	s.stops = append([]func(){engine.Shutdown}, s.stops...)
	s.log.Info("stopped")
	return nil
}

// routes serves the admin UI under /admin, the metrics at GET /metrics when
// metrics is not nil, and everything else from the API. Why not a ServeMux:
// it would clean and redirect paths the API must see as sent.
func routes(apiHandler, ui, metrics http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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

// redact hides credentials in a URL for the log.
func redact(u string) string {
	if at := strings.Index(u, "@"); at > 0 {
		if scheme := strings.Index(u, "://"); scheme > 0 && scheme < at {
			return u[:scheme+3] + "***" + u[at:]
		}
	}
	return u
}

// bootstrapAdmin creates an admin key pair with every resource on every
// user on a first start with no keys at all, and prints it once.
func (s *server) bootstrapAdmin(ctx context.Context) error {
	st := s.st
	if len(st.cfg.API.AccessControl.Keys) > 0 {
		return nil
	}
	keys, err := st.db.Keys(ctx)
	if err != nil {
		return err
	}
	if len(keys) > 0 {
		return nil
	}
	k := storage.Key{PublicKey: "admin", PrivateKey: randomHex(32)}
	if err := createKey(ctx, st, k, &storage.Rule{Group: "all", Users: []string{"*"}}); err != nil {
		return err
	}
	fmt.Printf("Created an admin key pair (shown only this once; it can read and write every user):\n"+
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
