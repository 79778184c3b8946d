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

// serve is `vitrine serve`.
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
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if err := bootstrapAdmin(ctx, st); err != nil {
		return err
	}
	ecfg := st.cfg.engine()
	ecfg.Logger = log
	eng, err := engine.New(ecfg)
	if err != nil {
		return err
	}
	drained := false
	defer func() {
		// Why only once drained: libvips must not stop under a request.
		if drained {
			engine.Shutdown()
		}
	}()
	variants, err := storage.NewVariantCache(st.db, st.blobs, st.cfg.Cache)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := variants.Close(cctx); err != nil {
			log.Error("variant cache", "err", err)
		}
	}()
	go variants.Run(ctx, func(err error) { log.Warn("variant cache", "err", err) })
	collector, err := storage.NewCollector(st.db, st.blobs, st.cfg.BlobQueue)
	if err != nil {
		return err
	}
	go collector.Run(ctx, func(err error) { log.Warn("blob queue", "err", err) })
	deps := api.Deps{DB: st.db, Blobs: st.blobs, Engine: eng, Logger: log, Variants: variants, Collector: collector}
	if boolOrTrue(st.cfg.AccessLog) {
		deps.AccessLog = log
	}
	var metricsLn net.Listener
	if st.cfg.Metrics.Enabled {
		m := api.NewMetrics()
		eng.SetObserver(m)
		st.db.Observe(m.ObserveDB)
		st.blobs.Observe(m.ObserveBlob)
		m.WatchCache(variants.Stats)
		m.WatchBlobQueue(collector.Stats)
		m.WatchEngine(eng.Load)
		deps.Metrics = m
		if st.cfg.Metrics.Listen != "" {
			if metricsLn, err = net.Listen("tcp", st.cfg.Metrics.Listen); err != nil {
				return fmt.Errorf("metrics: %w", err)
			}
			ms := &http.Server{Handler: m.Handler(), ReadHeaderTimeout: 10 * time.Second}
			go func() { _ = ms.Serve(metricsLn) }()
			defer ms.Close()
			log.Info("metrics listening", "addr", "http://"+metricsLn.Addr().String()+"/metrics")
		}
	}
	var observer filters.Observer // metrics, when on
	if deps.Metrics != nil {
		observer = deps.Metrics
	}
	fh, err := openFilters(ctx, st.cfg, f.data, eng, observer, log)
	if err != nil {
		return err
	}
	if st.cfg.Filters.Dir != "" {
		// Guest code keeps its Go processor while it runs (filters.runner):
		// as many more processors as guest calls may run keep the server's
		// own goroutines from waiting behind them.
		runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + st.cfg.Filters.MaxRunningCalls())
	}
	defer fh.Close()
	deps.Filters = filterAdmin{h: fh, wait: cmp.Or(st.cfg.Filters.CompileTimeout, filters.DefaultCompileTimeout)}
	srv, err := api.New(st.cfg.api(), deps)
	if err != nil {
		return err
	}
	wireFilters(ctx, fh, eng, srv, log)
	ui, err := web.New(web.Config{TrustedProxies: st.cfg.api().TrustedProxies, Logger: log}, srv, webSessions{st.db})
	if err != nil {
		return err
	}
	var metricsHandler http.Handler
	if deps.Metrics != nil && metricsLn == nil {
		metricsHandler = deps.Metrics.Handler()
	}
	ln, err := net.Listen("tcp", st.cfg.Listen)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: routes(srv, ui, metricsHandler), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	log.Info("vitrine listening", "addr", "http://"+ln.Addr().String(), "database", redact(st.cfg.Database),
		"storage", redact(st.cfg.Storage))
	errc := make(chan error, 1)
	if addr := st.cfg.Debug.PprofListen; addr != "" {
		pln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("debug.pprofListen: %w", err)
		}
		ps := &http.Server{Handler: pprofMux(), ReadHeaderTimeout: 10 * time.Second}
		defer ps.Close()
		log.Info("pprof listening", "addr", "http://"+pln.Addr().String()+"/debug/pprof/")
		go func() { _ = ps.Serve(pln) }()
	}
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Stop accepting, let in-flight requests finish, then (deferred above)
	// flush the variant cache, stop libvips, close the blob store and the
	// database.
	timeout := st.cfg.ShutdownTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	log.Info("shutting down: draining requests", "timeout", timeout.String())
	srv.Drain()
	if d := st.cfg.ShutdownDelay; d > 0 {
		log.Info("shutting down: not ready, still serving", "delay", d.String())
		time.Sleep(d)
	}
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: requests still running after %s: %w", timeout, err)
	}
	drained = true
	log.Info("stopped")
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
func bootstrapAdmin(ctx context.Context, st *stores) error {
	if len(st.cfg.AccessControl.Keys) > 0 {
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
