package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/filters"
	"github.com/vitrine/vitrine/storage"
)

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
