// Command vitrine is a self-hosted image storage and transformation service.
//
//	vitrine serve [--config FILE] [--listen ADDR] [--data DIR]
//	vitrine keys add|list|delete|rotate ...
//	vitrine sign [--public KEY] [--private KEY] [--method M] URL
//	vitrine migrate [--dry-run]
//	vitrine filter check|test ...
//
// With no configuration it runs on the embedded default: SQLite at
// DIR/vitrine.db and image files under DIR/images, DIR being ./data.
//
// This file is the wiring only: the subcommands, the configuration file and
// environment, opening the stores, start and stop. The service itself is
// package api; the signing `vitrine sign` prints is api.SignRead and
// api.SignWrite.
package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"image"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/filters"
	"github.com/vitrine/vitrine/storage"
	"github.com/vitrine/vitrine/web"
)

// ---------------------------------------------------------------------------
// Subcommands

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "keys":
		err = runKeys(os.Args[2:])
	case "sign":
		err = runSign(os.Args[2:])
	case "migrate":
		err = runMigrate(os.Args[2:])
	case "filter":
		err = runFilter(os.Args[2:])
	case "fsck":
		err = runFsck(os.Args[2:])
	case "variations":
		err = runVariations(os.Args[2:])
	case "help", "-h", "--help":
		usage()
		return
	default:
		fmt.Fprintf(os.Stderr, "vitrine: unknown command %q\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "vitrine:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `usage:
  vitrine serve [--config FILE] [--listen ADDR] [--data DIR]
  vitrine keys add|list|delete|rotate ...   (vitrine keys -h)
  vitrine sign [--public KEY] [--private KEY] [--method M] URL   (vitrine sign -h)
  vitrine migrate [--dry-run] [--config FILE] [--data DIR]
  vitrine filter check|test <dir> ...   (vitrine filter -h)
  vitrine fsck [--repair] [--json] [--grace D] [--config FILE] [--data DIR]
  vitrine variations [--user U] [--config FILE] [--data DIR]
`)
}

// commonFlags are the flags every subcommand that opens the stores takes.
type commonFlags struct {
	config, data string
}

func (f *commonFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.config, "config", "", "configuration file (YAML)")
	fs.StringVar(&f.data, "data", "./data", "data directory of the embedded default (SQLite and image files)")
}

// parseArgs parses flags wherever they are among the positional arguments
// (flag.Parse stops at the first non-flag) and returns the positionals.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// quietHelp turns -h (whose usage the flag set has printed) into success.
func quietHelp(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// firstOf returns the first non-empty value.
func firstOf(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

// ---------------------------------------------------------------------------
// Configuration file and environment

// fileConfig is the configuration file (YAML). Every key can be overridden
// by an environment variable named after its path: `limits.maxBodyBytes` is
// VITRINE_LIMITS_MAX_BODY_BYTES; lists take comma-separated values.
type fileConfig struct {
	// Listen is the address to serve on (default 127.0.0.1:8080).
	Listen string `yaml:"listen"`
	// Database is sqlite:///path, postgres://... or mysql://... (default
	// sqlite:///<data>/vitrine.db).
	Database string `yaml:"database"`
	// Storage is a blob URL: file:///dir, mem:// or s3://bucket?... (default
	// file:///<data>/images).
	Storage string `yaml:"storage"`
	// Secret encrypts private keys at rest. Default: a random secret kept in
	// <data>/secret, created on first start.
	Secret string `yaml:"secret"`

	HeaderPrefix           string             `yaml:"headerPrefix"`
	ContentNegotiateImages *bool              `yaml:"contentNegotiateImages"`
	IndexRedirect          string             `yaml:"indexRedirect"`
	StatsAllow             []string           `yaml:"statsAllow"`
	TrustedProxies         []string           `yaml:"trustedProxies"`
	Authentication         api.Authentication `yaml:"authentication"`
	AccessControl          api.AccessControl  `yaml:"accessControl"`
	CacheVariants          *bool              `yaml:"cacheVariants"`
	CORS                   api.CORS           `yaml:"cors"`
	Limits                 limits             `yaml:"limits"`

	// TransformationPresets maps names usable in t[] to chains.
	TransformationPresets map[string][]string `yaml:"transformationPresets"`
	// ICCProfiles maps profile names to ICC files for the icc transformation.
	ICCProfiles map[string]string `yaml:"iccProfiles"`
	// DefaultWatermark is the image identifier watermark uses without img.
	DefaultWatermark string `yaml:"defaultWatermark"`
	// Concurrency bounds simultaneous image pipelines (default: twice the CPU count).
	Concurrency int `yaml:"concurrency"`
	// JPEGQuality is the default JPEG output quality (default 80).
	JPEGQuality int `yaml:"jpegQuality"`
	// Output is the policy for transformed and converted images.
	Output output `yaml:"output"`
	// Filters configures WebAssembly filters: dir and allow.
	Filters filters.Config `yaml:"filters"`
	// Debug holds operator diagnostics, all off by default.
	Debug debugConfig `yaml:"debug"`
	// Cache bounds the shared variant cache (cacheVariants turns it on).
	Cache storage.CacheConfig `yaml:"cache"`
	// Metrics configures the Prometheus metrics.
	Metrics metricsConfig `yaml:"metrics"`
	// ShutdownTimeout is how long a stopping server (SIGTERM, SIGINT) lets
	// in-flight requests finish (default 30s).
	ShutdownTimeout time.Duration `yaml:"shutdownTimeout"`
	// ShutdownDelay is how long a stopping server keeps accepting requests
	// with /readyz at 503 before it stops accepting, so that load balancers
	// take it out of rotation first (default 0).
	ShutdownDelay time.Duration `yaml:"shutdownDelay"`
	// AccessLog writes one JSON line per request to stderr (default true).
	AccessLog *bool `yaml:"accessLog"`
	// DatabaseTimeout bounds each database statement (default 5s).
	DatabaseTimeout time.Duration `yaml:"databaseTimeout"`
	// StorageTimeout bounds each blob store operation (default 5s).
	StorageTimeout time.Duration `yaml:"storageTimeout"`
	// BlobQueue tunes the collector that deletes queued blobs.
	BlobQueue storage.CollectorConfig `yaml:"blobQueue"`
	// Variations configures stored variations (README "Stored variations").
	Variations storage.VariationsConfig `yaml:"variations"`
	// DatabaseMaxConns caps connections to a PostgreSQL or MySQL server per
	// instance (default: no cap, 16 kept idle).
	DatabaseMaxConns int `yaml:"databaseMaxConns"`
	// Uploads says which image types may be uploaded.
	Uploads uploads `yaml:"uploads"`
	// PixelPool bounds the pixel buffers kept for guest steps.
	PixelPool pixelPoolConfig `yaml:"pixelPool"`
}

// pixelPoolConfig bounds the idle pixel buffers kept for guest steps.
type pixelPoolConfig struct {
	// MaxIdleMB bounds the idle buffers' bytes (default 192).
	MaxIdleMB int `yaml:"maxIdleMB"`
	// IdleTimeout unmaps a buffer unused this long (default 30s).
	IdleTimeout time.Duration `yaml:"idleTimeout"`
}

// uploads says which image types may be uploaded.
type uploads struct {
	// Formats lists extensions: jpg, png, gif, webp, tif, avif, heic
	// (default jpg, png, gif, webp).
	Formats []string `yaml:"formats"`
}

// output is the policy for transformed and converted images.
type output struct {
	// KeepMetadata keeps EXIF, XMP and IPTC in outputs (default false: removed).
	KeepMetadata bool `yaml:"keepMetadata"`
}

// debugConfig holds diagnostics that are off unless set.
type debugConfig struct {
	// PprofListen, when set, serves net/http/pprof (CPU, heap, allocation
	// and goroutine profiles) on this address, apart from the API. Bind it
	// to loopback: profiles reveal internals and cost CPU while taken.
	PprofListen string `yaml:"pprofListen"`
}

// metricsConfig is the `metrics` section.
type metricsConfig struct {
	// Enabled serves Prometheus metrics at /metrics (default false).
	Enabled bool `yaml:"enabled"`
	// Listen, when set, serves /metrics on this address of its own instead
	// of the main listener (keep it private).
	Listen string `yaml:"listen"`
}

// limits are every size limit in one place.
type limits struct {
	MaxBodyBytes       int64 `yaml:"maxBodyBytes"`
	MaxMetadataBytes   int64 `yaml:"maxMetadataBytes"`
	MaxMetadataDepth   int   `yaml:"maxMetadataDepth"`
	MaxWidth           int   `yaml:"maxWidth"`
	MaxHeight          int   `yaml:"maxHeight"`
	MaxPixels          int64 `yaml:"maxPixels"`
	MaxTransformations int   `yaml:"maxTransformations"`
	MaxFrames          int   `yaml:"maxFrames"`
	MaxAnimationPixels int64 `yaml:"maxAnimationPixels"`
}

// loadConfig reads the file (if any), applies the environment and the
// flags' defaults for the data directory.
func loadConfig(path, dataDir string) (*fileConfig, error) {
	cfg := &fileConfig{}
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		dec := yaml.NewDecoder(strings.NewReader(string(b)))
		dec.KnownFields(true)
		if err := dec.Decode(cfg); err != nil && err.Error() != "EOF" {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	if err := applyEnv(reflect.ValueOf(cfg).Elem(), "VITRINE"); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, err
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:8080"
	}
	if cfg.Database == "" {
		cfg.Database = "sqlite://" + filepath.Join(abs, "vitrine.db")
	}
	if cfg.Storage == "" {
		cfg.Storage = "file://" + filepath.Join(abs, "images")
	}
	// Why: a blob write must end (storageTimeout) well before its
	// reservation lets the blob queue delete it.
	lease, storageTimeout := cfg.BlobQueue.ReservationLease, cfg.StorageTimeout
	if lease <= 0 {
		lease = storage.DefaultReservationLease
	}
	if storageTimeout <= 0 {
		storageTimeout = storage.DefaultBlobTimeout
	}
	if cfg.StorageTimeout < 0 || cfg.DatabaseTimeout < 0 || lease <= 2*storageTimeout {
		return nil, fmt.Errorf("storageTimeout and databaseTimeout must not be negative, and blobQueue.reservationLease (%s) must be longer than twice storageTimeout (%s)", lease, storageTimeout)
	}
	return cfg, nil
}

func (c *fileConfig) api() api.Config {
	return api.Config{
		HeaderPrefix: c.HeaderPrefix, ContentNegotiateImages: c.ContentNegotiateImages,
		IndexRedirect: c.IndexRedirect, StatsAllow: c.StatsAllow, TrustedProxies: c.TrustedProxies,
		Authentication: c.Authentication, AccessControl: c.AccessControl, CacheVariants: c.CacheVariants,
		CORS: c.CORS,
		Limits: api.Limits{MaxBodyBytes: c.Limits.MaxBodyBytes, MaxMetadataBytes: c.Limits.MaxMetadataBytes,
			MaxMetadataDepth: c.Limits.MaxMetadataDepth},
	}
}

func (c *fileConfig) engine() engine.Config {
	return engine.Config{
		Concurrency: c.Concurrency, MaxWidth: c.Limits.MaxWidth, MaxHeight: c.Limits.MaxHeight,
		MaxPixels: c.Limits.MaxPixels, MaxTransformations: c.Limits.MaxTransformations,
		MaxFrames: c.Limits.MaxFrames, MaxAnimationPixels: c.Limits.MaxAnimationPixels,
		Presets: c.TransformationPresets, ICCProfiles: c.ICCProfiles, DefaultWatermark: c.DefaultWatermark,
		JPEGQuality: c.JPEGQuality, KeepMetadata: c.Output.KeepMetadata, UploadFormats: c.Uploads.Formats,
		PixelPoolMaxIdleMB: c.PixelPool.MaxIdleMB, PixelPoolIdle: c.PixelPool.IdleTimeout,
	}
}

// envName turns a yaml key into its environment form: maxBodyBytes →
// MAX_BODY_BYTES.
func envName(key string) string {
	var b strings.Builder
	for i, r := range key {
		if unicode.IsUpper(r) && i > 0 {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}

// applyEnv sets scalar and list fields of v from PREFIX_<KEY> variables,
// recursing into nested structs.
func applyEnv(v reflect.Value, prefix string) error {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if key == "" || key == "-" {
			continue
		}
		name := prefix + "_" + envName(key)
		fv := v.Field(i)
		if f.Type.Kind() == reflect.Struct {
			if err := applyEnv(fv, name); err != nil {
				return err
			}
			continue
		}
		raw, ok := os.LookupEnv(name)
		if !ok {
			continue
		}
		if err := setFromString(fv, raw); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

func setFromString(fv reflect.Value, raw string) error {
	if fv.Type() == reflect.TypeFor[time.Duration]() {
		d, err := time.ParseDuration(raw)
		if err != nil {
			return err
		}
		fv.SetInt(int64(d))
		return nil
	}
	switch fv.Kind() {
	case reflect.String:
		fv.SetString(raw)
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return err
		}
		fv.SetInt(n)
	case reflect.Bool:
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return err
		}
		fv.SetBool(b)
	case reflect.Pointer:
		if fv.Type().Elem().Kind() != reflect.Bool {
			return fmt.Errorf("not settable from the environment")
		}
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return err
		}
		fv.Set(reflect.ValueOf(&b))
	case reflect.Slice:
		if fv.Type().Elem().Kind() != reflect.String {
			return fmt.Errorf("not settable from the environment")
		}
		fv.Set(reflect.ValueOf(splitList(raw)))
	default:
		return fmt.Errorf("not settable from the environment; use the configuration file")
	}
	return nil
}

// ---------------------------------------------------------------------------
// Stores

// stores are the opened persistence components.
type stores struct {
	cfg   *fileConfig
	db    *storage.DB
	blobs *storage.Blobs
}

func (s *stores) Close() {
	if s.blobs != nil {
		s.blobs.Close()
	}
	if s.db != nil {
		s.db.Close()
	}
}

// open loads the configuration and opens the database and blob store.
func open(ctx context.Context, f commonFlags) (*stores, error) {
	st, err := openDB(ctx, f)
	if err != nil {
		return nil, err
	}
	if st.blobs, err = storage.OpenBlobs(ctx, st.cfg.Storage); err != nil {
		st.Close()
		return nil, fmt.Errorf("storage: %w", err)
	}
	st.blobs.SetTimeout(st.cfg.StorageTimeout)
	return st, nil
}

// openDB opens only the database: key management needs no blob store.
func openDB(ctx context.Context, f commonFlags) (*stores, error) {
	cfg, err := loadConfig(f.config, f.data)
	if err != nil {
		return nil, err
	}
	secret, err := loadSecret(cfg, f.data)
	if err != nil {
		return nil, err
	}
	st := &stores{cfg: cfg}
	if st.db, err = storage.Open(ctx, cfg.Database, storage.Options{Secret: secret, MaxOpenConns: cfg.DatabaseMaxConns,
		QueryTimeout: cfg.DatabaseTimeout, ReservationLease: cfg.BlobQueue.ReservationLease, Variations: cfg.Variations}); err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	return st, nil
}

// loadSecret returns the configured secret, or the one kept in
// <data>/secret, creating it on first use.
func loadSecret(cfg *fileConfig, dataDir string) ([]byte, error) {
	if cfg.Secret != "" {
		return []byte(cfg.Secret), nil
	}
	path := filepath.Join(dataDir, "secret")
	if b, err := os.ReadFile(path); err == nil {
		return []byte(strings.TrimSpace(string(b))), nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, err
	}
	s := randomHex(32)
	if err := os.WriteFile(path, []byte(s+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("write secret: %w", err)
	}
	return []byte(s), nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ---------------------------------------------------------------------------
// vitrine serve

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	var f commonFlags
	f.register(fs)
	listen := fs.String("listen", "", "address to listen on (default 127.0.0.1:8080)")
	_ = fs.Parse(args)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
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
	if deps.Variations, err = startVariations(ctx, st, eng, log); err != nil {
		return err
	}
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

// ---------------------------------------------------------------------------
// vitrine migrate

// runMigrate is `vitrine migrate`: it applies the pending schema steps (serve
// does the same at start) or, with --dry-run, prints them and changes
// nothing.
func runMigrate(args []string) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	var f commonFlags
	f.register(fs)
	dry := fs.Bool("dry-run", false, "print the pending steps and their SQL; change nothing")
	if err := fs.Parse(args); err != nil {
		return quietHelp(err)
	}
	cfg, err := loadConfig(f.config, f.data)
	if err != nil {
		return err
	}
	ctx := context.Background()
	db, err := storage.Open(ctx, cfg.Database, storage.Options{SkipMigrate: true})
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	defer db.Close()
	v, err := db.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("database %s (%s) is at step %d of %d\n", redact(cfg.Database), db.Dialect(), v, len(storage.Migrations()))
	if *dry {
		pending, err := db.PendingMigrations(ctx)
		if err != nil {
			return err
		}
		for _, m := range pending {
			fmt.Printf("would apply step %d: %s\n", m.Version, m.Name)
			for _, stmt := range m.Statements(db.Dialect()) {
				fmt.Printf("  %s;\n", stmt)
			}
		}
		return nil
	}
	applied, err := db.Migrate(ctx)
	for _, m := range applied {
		fmt.Printf("applied step %d: %s\n", m.Version, m.Name)
	}
	return err
}

// ---------------------------------------------------------------------------
// vitrine keys

const keysUsage = `usage:
  vitrine keys add <publicKey> [--private KEY] [--group NAME | --resources a,b] [--users a,b | --users '*']
  vitrine keys list
  vitrine keys delete <publicKey>
  vitrine keys rotate <publicKey> [--private KEY]
each also takes --config FILE and --data DIR, the same as serve
`

// runKeys is `vitrine keys`: it manages the key pairs and access rules
// stored in the database, with no server running.
func runKeys(args []string) error { return quietHelp(keysCommand(context.Background(), args)) }

func keysCommand(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, keysUsage)
		return errors.New("keys: missing subcommand")
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(os.Stderr, keysUsage)
		return nil
	}
	fs := flag.NewFlagSet("keys "+args[0], flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	fs.Usage = func() { fmt.Fprint(os.Stderr, keysUsage); fs.PrintDefaults() }
	var f commonFlags
	f.register(fs)
	private := new(string)
	if args[0] == "add" || args[0] == "rotate" {
		fs.StringVar(private, "private", "", "private key (default: 32 random bytes from the system CSPRNG, hex)")
	}
	group, resources, users := new(string), new(string), new(string)
	if args[0] == "add" {
		fs.StringVar(group, "group", "", "group the rule grants (read-only, read-write, all or a configured one)")
		fs.StringVar(resources, "resources", "", "comma-separated resources the rule grants, instead of --group")
		fs.StringVar(users, "users", "", "comma-separated users the rule applies to, or '*' (default: the public key)")
	}
	pos, err := parseArgs(fs, args[1:])
	if err != nil {
		return err
	}
	want := 1
	switch args[0] {
	case "list":
		want = 0
	case "add", "delete", "rotate":
	default:
		fmt.Fprint(os.Stderr, keysUsage)
		return fmt.Errorf("keys: unknown subcommand %q", args[0])
	}
	if len(pos) != want {
		fmt.Fprint(os.Stderr, keysUsage)
		return fmt.Errorf("keys %s: want %d argument(s), got %d", args[0], want, len(pos))
	}
	if want == 1 && !api.ValidName(pos[0]) {
		return fmt.Errorf("keys %s: invalid public key %q (want 1-64 of a-z A-Z 0-9 _ -)", args[0], pos[0])
	}
	st, err := openDB(ctx, f)
	if err != nil {
		return err
	}
	defer st.Close()
	switch args[0] {
	case "list":
		return listKeys(ctx, st)
	case "delete":
		if err := refuseConfigKey(st, pos[0]); err != nil {
			return err
		}
		if err := st.db.DeleteKey(ctx, pos[0]); err != nil {
			return err
		}
		fmt.Printf("Deleted key %s and its access rules.\n", pos[0])
		return nil
	case "rotate":
		return rotateKey(ctx, st, pos[0], *private)
	}
	rule, err := ruleFromFlags(ctx, st, pos[0], *group, *resources, *users)
	if err != nil {
		return err
	}
	return addKey(ctx, st, pos[0], *private, rule)
}

// refuseConfigKey fails for a key defined in the configuration file, which
// the service treats as immutable.
func refuseConfigKey(st *stores, publicKey string) error {
	for _, k := range st.cfg.AccessControl.Keys {
		if k.PublicKey == publicKey {
			return fmt.Errorf("key %s is defined in the configuration file; change it there", publicKey)
		}
	}
	return nil
}

// ruleFromFlags builds the rule `keys add` creates; nil when neither
// --group nor --resources is given.
func ruleFromFlags(ctx context.Context, st *stores, publicKey, group, resources, users string) (*storage.Rule, error) {
	if group != "" && resources != "" {
		return nil, errors.New("keys add: give --group or --resources, not both")
	}
	if group == "" && resources == "" {
		if users != "" {
			return nil, errors.New("keys add: --users needs --group or --resources")
		}
		return nil, nil
	}
	r := &storage.Rule{Group: group, Resources: splitList(resources), Users: []string{publicKey}}
	if resources != "" && len(r.Resources) == 0 {
		return nil, errors.New("keys add: --resources is empty")
	}
	if users != "" {
		if r.Users = splitList(users); len(r.Users) == 0 {
			return nil, errors.New("keys add: --users is empty")
		}
	}
	for _, u := range r.Users {
		if u == "*" && len(r.Users) > 1 {
			return nil, errors.New("keys add: --users '*' stands alone")
		}
		if u != "*" && !api.ValidName(u) {
			return nil, fmt.Errorf("keys add: invalid user %q", u)
		}
	}
	if group == "" || slices.Contains(api.BuiltinGroups(), group) {
		return r, nil
	}
	if _, ok := st.cfg.AccessControl.Groups[group]; ok {
		return r, nil
	}
	if _, err := st.db.Group(ctx, group); errors.Is(err, storage.ErrNotExist) {
		return nil, fmt.Errorf("keys add: group %q is not defined (built-in: %s)", group, strings.Join(api.BuiltinGroups(), ", "))
	} else if err != nil {
		return nil, err
	}
	return r, nil
}

func addKey(ctx context.Context, st *stores, publicKey, private string, rule *storage.Rule) error {
	if err := refuseConfigKey(st, publicKey); err != nil {
		return err
	}
	if _, err := st.db.Rules(ctx, publicKey); err == nil {
		return fmt.Errorf("key %s: %w; use `vitrine keys rotate %s` for a new private key", publicKey, storage.ErrExist, publicKey)
	} else if !errors.Is(err, storage.ErrNotExist) {
		return err
	}
	if private == "" {
		private = randomHex(32)
	}
	if err := createKey(ctx, st, storage.Key{PublicKey: publicKey, PrivateKey: private}, rule); err != nil {
		return err
	}
	printKey("Created key "+publicKey, publicKey, private)
	if rule == nil {
		fmt.Fprintf(os.Stderr, "Note: %s has no access rules yet; add one with --group or --resources.\n", publicKey)
	}
	return nil
}

// createKey stores a key pair with its rule (when given). When the rule
// cannot be stored the key is removed again, so no key is left without the
// access it was created for.
func createKey(ctx context.Context, st *stores, k storage.Key, rule *storage.Rule) error {
	if _, err := st.db.PutKey(ctx, k); err != nil {
		return err
	}
	if rule != nil {
		if _, err := st.db.AddRules(ctx, k.PublicKey, []storage.Rule{*rule}); err != nil {
			if derr := st.db.DeleteKey(ctx, k.PublicKey); derr != nil {
				return errors.Join(err, derr)
			}
			return err
		}
	}
	return nil
}

func rotateKey(ctx context.Context, st *stores, publicKey, private string) error {
	if err := refuseConfigKey(st, publicKey); err != nil {
		return err
	}
	// Rules, unlike Key, tells whether the key exists without decrypting it,
	// so a key sealed under a lost secret can still be given a new one.
	if _, err := st.db.Rules(ctx, publicKey); err != nil {
		return err
	}
	if private == "" {
		private = randomHex(32)
	}
	if _, err := st.db.PutKey(ctx, storage.Key{PublicKey: publicKey, PrivateKey: private}); err != nil {
		return err
	}
	printKey("New private key for "+publicKey, publicKey, private)
	return nil
}

func printKey(title, publicKey, private string) {
	fmt.Printf("%s (the private key is shown only this once):\n  public key:  %s\n  private key: %s\n",
		title, publicKey, private)
}

// listKeys prints one line per rule, configured keys first; private keys
// are never shown.
func listKeys(ctx context.Context, st *stores) error {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "PUBLIC KEY\tSOURCE\tUSERS\tGRANTS")
	configured := map[string]bool{}
	for _, k := range st.cfg.AccessControl.Keys {
		configured[k.PublicKey] = true
		var rules []storage.Rule
		for _, r := range k.Rules {
			rules = append(rules, storage.Rule{Group: r.Group, Resources: r.Resources, Users: r.Users})
		}
		printRules(w, k.PublicKey, "config", rules)
	}
	keys, err := st.db.Keys(ctx)
	if err != nil {
		return err
	}
	for _, k := range keys {
		rules, err := st.db.Rules(ctx, k.PublicKey)
		if err != nil {
			return err
		}
		source := "database"
		if configured[k.PublicKey] {
			source = "database (unused: the config defines it)"
		}
		printRules(w, k.PublicKey, source, rules)
	}
	return w.Flush()
}

func printRules(w io.Writer, publicKey, source string, rules []storage.Rule) {
	if len(rules) == 0 {
		fmt.Fprintf(w, "%s\t%s\t-\t(no rules)\n", publicKey, source)
	}
	for _, r := range rules {
		grants := "group " + r.Group
		if r.Group == "" {
			grants = strings.Join(r.Resources, ",")
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", publicKey, source, strings.Join(r.Users, ","), grants)
	}
}

// ---------------------------------------------------------------------------
// vitrine sign

const signUsage = `usage:
  vitrine sign [--public KEY] [--private KEY] [--method GET|HEAD|POST|PUT|DELETE] [--headers | --query] URL
GET and HEAD print the URL with its accessToken. POST, PUT and DELETE print curl arguments
(-H ... URL) carrying the signature; --headers prints the headers one per line instead, --query
the URL with signature and timestamp parameters. Keys default to $VITRINE_PUBLIC_KEY (else the
user in the URL) and $VITRINE_PRIVATE_KEY (else the key stored under --config/--data).
`

// runSign is `vitrine sign`: it prints what a request needs to pass the
// service's authentication, computed by api.SignRead and api.SignWrite.
func runSign(args []string) error { return quietHelp(signCommand(context.Background(), args)) }

func signCommand(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("sign", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	fs.Usage = func() { fmt.Fprint(os.Stderr, signUsage); fs.PrintDefaults() }
	var f commonFlags
	f.register(fs)
	pub := fs.String("public", "", "public key (default $VITRINE_PUBLIC_KEY, else the user in the URL)")
	priv := fs.String("private", "", "private key (default $VITRINE_PRIVATE_KEY, else the one stored under --config/--data)")
	method := fs.String("method", "GET", "HTTP method of the request")
	headers := fs.Bool("headers", false, "writes: print the headers one per line (Name: value)")
	query := fs.Bool("query", false, "writes: print the URL with signature and timestamp parameters")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return errors.New("sign: want one URL")
	}
	target := pos[0]
	user, err := api.SignURLUser(target)
	if err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	publicKey := firstOf(*pub, os.Getenv("VITRINE_PUBLIC_KEY"), user)
	if publicKey == "" {
		return errors.New("sign: no public key: give --public or set VITRINE_PUBLIC_KEY")
	}
	private := firstOf(*priv, os.Getenv("VITRINE_PRIVATE_KEY"))
	if private == "" {
		if private, err = storedPrivateKey(ctx, f, publicKey); err != nil {
			return err
		}
	}
	m := strings.ToUpper(*method)
	switch m {
	case "GET", "HEAD":
		if *headers || *query {
			return errors.New("sign: --headers and --query are for writes; reads carry an accessToken")
		}
		u, err := api.SignRead(target, publicKey, private)
		if err != nil {
			return fmt.Errorf("sign: %w", err)
		}
		fmt.Println(u)
		return nil
	case "POST", "PUT", "DELETE":
	default:
		return fmt.Errorf("sign: unsupported method %q", *method)
	}
	if *headers && *query {
		return errors.New("sign: give --headers or --query, not both")
	}
	if *query {
		u, err := api.SignWriteQuery(m, target, publicKey, private, time.Now())
		if err != nil {
			return fmt.Errorf("sign: %w", err)
		}
		fmt.Println(u)
		return nil
	}
	s, err := api.SignWrite(m, target, publicKey, private, time.Now())
	if err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	for _, h := range s.Headers() {
		if *headers {
			fmt.Printf("%s: %s\n", h.Name, h.Value)
		} else {
			// Why no space after the colon: the line is meant for an unquoted
			// $(...), where a space would split the argument.
			fmt.Printf("-H %s:%s ", h.Name, h.Value)
		}
	}
	if !*headers {
		fmt.Println(target)
	}
	return nil
}

// storedPrivateKey finds a private key in the configuration file or the
// database, the way the service does.
func storedPrivateKey(ctx context.Context, f commonFlags, publicKey string) (string, error) {
	if f.config == "" {
		// Why: opening a missing data directory would create an empty store
		// (and a new secret) as a side effect of a typo.
		if _, err := os.Stat(f.data); err != nil {
			return "", fmt.Errorf("sign: no private key for %s: give --private, set VITRINE_PRIVATE_KEY, "+
				"or point --data or --config at the service's store", publicKey)
		}
	}
	st, err := openDB(ctx, f)
	if err != nil {
		return "", err
	}
	defer st.Close()
	for _, k := range st.cfg.AccessControl.Keys {
		if k.PublicKey == publicKey {
			return k.PrivateKey, nil
		}
	}
	k, err := st.db.Key(ctx, publicKey)
	if errors.Is(err, storage.ErrNotExist) {
		return "", fmt.Errorf("sign: key %s is neither in the configuration nor in the database: %w", publicKey, err)
	}
	return k.PrivateKey, err
}

// ---------------------------------------------------------------------------
// WebAssembly filters

// openFilters starts loading the filters of filters.dir in the
// background, compiled modules cached under the data directory: the server
// listens meanwhile. Native transformation and preset names are reserved.
func openFilters(ctx context.Context, cfg *fileConfig, dataDir string, eng *engine.Engine, obs filters.Observer, log *slog.Logger) (*filters.Host, error) {
	fc := cfg.Filters
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, err
	}
	fc.CacheDir = filepath.Join(abs, "wasm-cache")
	ec := eng.Config()
	fc.MaxWidth, fc.MaxHeight, fc.MaxPixels = ec.MaxWidth, ec.MaxHeight, ec.MaxPixels
	fc.Reserved = eng.Registry().Names()
	for name := range ec.Presets {
		fc.Reserved = append(fc.Reserved, name)
	}
	fc.Logger = log
	fc.Observer = obs
	return filters.Start(ctx, fc)
}

// wireFilters hands the filters to the engine (transformations) and the
// api (listeners, stats_add counters in GET /stats) and reloads them on
// SIGHUP.
func wireFilters(ctx context.Context, fh *filters.Host, eng *engine.Engine, srv *api.Server, log *slog.Logger) {
	eng.Registry().SetGuests(guestSource{fh})
	srv.Bus.AddSource(filterListeners{fh})
	srv.Bus.On("stats.get", 0, statsCounters(fh))
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				if err := fh.StartReload(); err != nil {
					log.Error("filter reload", "err", err)
				}
			}
		}
	}()
}

// statsCounters is the stats.get listener that shows every filter's
// stats_add counters under custom.<filter>. The filter's stats_set values
// share that object (api.Event.SetStat); whichever runs first, a value
// replaces the counter of its name in that response.
func statsCounters(fh *filters.Host) api.Listener {
	return func(ctx context.Context, ev *api.Event) error {
		for name, counters := range fh.Current().Counters() {
			ns, ok := ev.Stats[name].(map[string]any)
			if !ok {
				ns = make(map[string]any, len(counters))
				ev.Stats[name] = ns
			}
			for k, v := range counters {
				if _, set := ns[k]; !set {
					ns[k] = v
				}
			}
		}
		return nil
	}
}

// guestSource gives the engine the transformation filters of the current
// set, and those still loading as guests that answer 503.
type guestSource struct{ h *filters.Host }

func (g guestSource) Guest(name string) (engine.Guest, bool) {
	set := g.h.Current()
	if t, ok := set.Transformation(name); ok {
		return guest{t}, true
	}
	if p, ok := set.Pending(name); ok && p.Manifest().Kind == filters.KindTransformation {
		return loadingGuest{p}, true
	}
	return nil, false
}

func (g guestSource) GuestNames() []string { return g.h.Current().TransformationNames() }

// guest is a transformation filter described from its manifest.
type guest struct{ filters.Transformation }

func (g guest) Describe() engine.Description {
	m := g.Manifest()
	d := engine.Description{Name: m.Name, Kind: "wasm", Description: m.Description}
	for _, name := range m.ParamNames() {
		p := m.Params[name]
		pd := engine.ParamDesc{Name: name, Type: engine.ParamType(p.Type), Required: p.Required,
			Min: p.Min, Max: p.Max, Values: p.Values, Description: p.Description}
		if v, ok := p.DefaultValue(); ok {
			pd.Default = v
		}
		d.Params = append(d.Params, pd)
	}
	return d
}

// loadingGuest is a transformation filter still loading: its step fails
// with 503 when the chain is parsed, before any pixel is decoded.
type loadingGuest struct{ p filters.Pending }

func (g loadingGuest) CheckParams(map[string]string) (map[string]string, error) {
	return nil, g.p.Err()
}
func (g loadingGuest) ContentHash() string { return "" }
func (g loadingGuest) TransformTo(context.Context, *image.NRGBA, map[string]string, map[string]any, func(*image.NRGBA) error) error {
	return g.p.Err()
}

// filterListeners gives the api's bus the listener filters of the current
// set, asked on every event; a fatal listener still loading fails its
// events with 503.
type filterListeners struct{ h *filters.Host }

func (f filterListeners) Subscriptions() []api.Subscription {
	set := f.h.Current()
	ls, pending := set.Listeners(), set.PendingListeners()
	out := make([]api.Subscription, 0, len(ls)+len(pending))
	for _, l := range ls {
		out = append(out, api.Subscription{Patterns: l.Events(), Priority: l.Priority(),
			Listener: func(ctx context.Context, ev *api.Event) error { return l.Handle(ctx, ev) }})
	}
	for _, p := range pending {
		m := p.Manifest()
		out = append(out, api.Subscription{Patterns: m.Events, Priority: m.Priority,
			Listener: func(context.Context, *api.Event) error { return p.Err() }})
	}
	return out
}

// filterAdmin serves GET /filters and POST /filters/reload.
type filterAdmin struct {
	h *filters.Host
	// wait bounds how long POST /filters/reload waits for the filters it
	// loads: filters.compileTimeout.
	wait time.Duration
}

func (a filterAdmin) Filters() any { return a.h.Current().Status() }

func (a filterAdmin) ReloadFilters(ctx context.Context) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, a.wait)
	defer cancel()
	set, err := a.h.Reload(ctx)
	return set.Status(), err
}

const filterUsage = `usage:
  vitrine filter check <dir> [--allow clock,random] [--max-module-bytes N] [--compile-timeout D]
  vitrine filter test <dir> --image IN --out OUT [--param k=v ...] [--allow clock,random]
check loads the filter as the server would (manifest, ABI marker, exports, imports, start), within
the same limits, and says why it would be refused. test runs one transformation filter on IN through the same host and
engine code as the server and writes OUT (its extension picks the format).
`

// paramFlags collects repeated --param k=v.
type paramFlags []string

func (p *paramFlags) String() string { return strings.Join(*p, ",") }
func (p *paramFlags) Set(v string) error {
	if !strings.Contains(v, "=") {
		return fmt.Errorf("want k=v, got %q", v)
	}
	*p = append(*p, v)
	return nil
}

// runFilter is `vitrine filter`: the test kit for filter authors.
func runFilter(args []string) error { return quietHelp(filterCommand(context.Background(), args)) }

func filterCommand(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(os.Stderr, filterUsage)
		if len(args) == 0 {
			return errors.New("filter: missing subcommand")
		}
		return nil
	}
	fs := flag.NewFlagSet("filter "+args[0], flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	fs.Usage = func() { fmt.Fprint(os.Stderr, filterUsage); fs.PrintDefaults() }
	allow := fs.String("allow", "", "capabilities to grant, as filters.allow does: clock,random")
	maxModule := fs.Int64("max-module-bytes", filters.DefaultMaxModuleBytes, "refuse a larger filter.wasm, as filters.maxModuleBytes does")
	compileTimeout := fs.Duration("compile-timeout", filters.DefaultCompileTimeout, "bound on compiling and starting, as filters.compileTimeout")
	in := fs.String("image", "", "test: input image")
	out := fs.String("out", "", "test: output image (png, jpg, webp, gif, avif)")
	var params paramFlags
	fs.Var(&params, "param", "test: a parameter k=v (repeat)")
	pos, err := parseArgs(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return fmt.Errorf("filter %s: want one filter folder", args[0])
	}
	eng, err := engine.New(engine.Config{})
	if err != nil {
		return err
	}
	defer engine.Shutdown()
	cfg := filters.Config{Allow: splitList(*allow), Reserved: eng.Registry().Names(),
		MaxModuleBytes: *maxModule, CompileTimeout: *compileTimeout,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	switch args[0] {
	case "check":
		m, err := filters.Check(ctx, cfg, pos[0])
		if err != nil {
			return err
		}
		fmt.Printf("ok: %s %s (%s, ABI %d)\n", m.Name, m.Version, m.Kind, m.ABI)
		return nil
	case "test":
		return testFilter(ctx, eng, cfg, pos[0], *in, *out, params)
	}
	fs.Usage()
	return fmt.Errorf("filter: unknown subcommand %q", args[0])
}

// testFilter runs one transformation filter on an image file.
func testFilter(ctx context.Context, eng *engine.Engine, cfg filters.Config, dir, in, out string, params []string) error {
	if in == "" || out == "" {
		return errors.New("filter test: --image and --out are required")
	}
	f, err := filters.Open(ctx, cfg, dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if f.Manifest().Kind != filters.KindTransformation {
		return fmt.Errorf("filter test: %s is a %s; test runs transformations", f.Name(), f.Manifest().Kind)
	}
	eng.Registry().SetGuests(oneGuest{name: f.Name(), g: guest{filters.Transformation{Filter: f}}})
	src, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	step := f.Name()
	if len(params) > 0 {
		step += ":" + strings.Join(params, ",")
	}
	chain, err := eng.ParseChain([]string{step})
	if err != nil {
		return err
	}
	format := strings.ToLower(strings.TrimPrefix(filepath.Ext(out), "."))
	if format == "jpeg" {
		format = "jpg"
	}
	start := time.Now()
	res, err := eng.Process(ctx, src, engine.Request{Chain: chain, Format: format})
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, res.Data, 0o644); err != nil {
		return err
	}
	fmt.Printf("wrote %s: %dx%d %s in %s\n", out, res.Width, res.Height, res.Mime, time.Since(start).Round(time.Millisecond))
	return nil
}

// oneGuest is the guest set of `vitrine filter test`.
type oneGuest struct {
	name string
	g    engine.Guest
}

func (o oneGuest) Guest(name string) (engine.Guest, bool) { return o.g, name == o.name }
func (o oneGuest) GuestNames() []string                   { return []string{o.name} }
