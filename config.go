package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/api/cdn"
	"github.com/vitrine/vitrine/api/outbound"
	"github.com/vitrine/vitrine/api/outbox"
	"github.com/vitrine/vitrine/api/ratelimit"
	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/filters"
	"github.com/vitrine/vitrine/storage"
	"go.yaml.in/yaml/v3"
)

// fileConfig is the configuration file (YAML): the service's own keys, then
// each package's Config under its keys. api's and engine's keys sit at the
// top level; their size limits share the `limits` section, which compose
// hands to both. Every key can be overridden by an environment variable
// (applyEnv).
type fileConfig struct {
	serviceConfig `yaml:",inline"`
	// API is the REST API: authentication, access control, CORS, headers.
	API api.Config `yaml:",inline"`
	// Engine is image processing: presets, profiles, formats, concurrency.
	Engine engine.Config `yaml:",inline"`
	// Limits are every size limit in one place.
	Limits limits `yaml:"limits"`
	// Uploads holds what uploads may be: engine's accepted formats, api's
	// upload tokens and ingestion by URL.
	Uploads uploads `yaml:"uploads"`
	// Filters configures WebAssembly filters.
	Filters filters.Config `yaml:"filters"`
	// Cache bounds the shared variant cache (cacheVariants turns it on).
	Cache storage.CacheConfig `yaml:"cache"`
	// BlobQueue tunes the collector that deletes queued blobs.
	BlobQueue storage.CollectorConfig `yaml:"blobQueue"`
	// Audit sets how long the audit log is kept (audit.retention) and how
	// often usage counters are written (audit.flush).
	Audit storage.UsageConfig `yaml:"audit"`
	// Variations configures stored variations (engine/README.md "Stored variations").
	Variations api.VariationsConfig `yaml:"variations"`
	// Erasure tunes the erasure of users (api/README.md "Erasing a user").
	Erasure ErasureConfig `yaml:"erasure"`
	// Events names where every change is published (api/outbox/README.md "Events").
	Events outbox.EventsConfig `yaml:"events"`
	// Webhooks configures the delivery of events to subscriptions
	// (api/outbox/README.md "Webhooks").
	Webhooks outbox.WebhooksConfig `yaml:"webhooks"`
	// Outbound is the guard of connections made on a user's behalf; the
	// file sets its allowlist (outbound.allow), each caller its caps.
	Outbound outbound.Config `yaml:"outbound"`
	// CDN names the cache tags of the answers (api's) and the purgers
	// changes are sent to (api/cdn/README.md "CDN").
	CDN cdnConfig `yaml:"cdn"`
	// RateLimits limits requests per class, public key and client address
	// (api/README.md "Rate limits"); off unless a rate is set.
	RateLimits ratelimit.Config `yaml:"rateLimits"`
	// Quotas are the default quotas of every user (api/README.md "Quotas"); a
	// user's own, set through the API, override them.
	Quotas storage.Quotas `yaml:"quotas"`
}

// limits is the file's `limits` section: api's request limits and engine's
// image limits side by side.
type limits struct {
	API    api.Limits    `yaml:",inline"`
	Engine engine.Limits `yaml:",inline"`
}

// uploads is the file's `uploads` section: engine's accepted formats and
// api's upload tokens and ingestion by URL side by side.
type uploads struct {
	Engine engine.Uploads `yaml:",inline"`
	API    api.Uploads    `yaml:",inline"`
}

// serviceConfig are the keys package main owns: where to listen, the stores,
// and how the process starts and stops.
type serviceConfig struct {
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
	// Debug holds operator diagnostics, all off by default.
	Debug debugConfig `yaml:"debug"`
	// Metrics configures the Prometheus metrics.
	Metrics metricsConfig `yaml:"metrics"`
	// ShutdownTimeout is how long a stopping server (SIGTERM, SIGINT) lets
	// in-flight requests finish (default 30s).
	ShutdownTimeout time.Duration `yaml:"shutdownTimeout"`
	// RequestTimeout bounds each request: its context ends then, and the
	// renders, queries and blob reads it started stop (default 60s).
	RequestTimeout time.Duration `yaml:"requestTimeout"`
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
	// DatabaseMaxConns caps connections to a PostgreSQL or MySQL server per
	// instance (default: no cap, 16 kept idle).
	DatabaseMaxConns int `yaml:"databaseMaxConns"`
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

// loadConfig reads the file (if any), applies the environment and the
// flags' defaults for the data directory, and composes the packages'
// Configs.
func loadConfig(path, dataDir string) (*fileConfig, error) {
	cfg := &fileConfig{API: api.FileDefaults()}
	if path != "" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		dec := yaml.NewDecoder(f)
		dec.KnownFields(true)
		// Why io.EOF is fine: an empty file is an empty configuration.
		if err := dec.Decode(cfg); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	if err := applyEnv(cfg, os.LookupEnv); err != nil {
		return nil, err
	}
	if err := cfg.CDN.resolveTokens(os.LookupEnv); err != nil {
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
	if cfg.Filters.Dir == "" {
		cfg.Filters.Dir = defaultFiltersDir(abs)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.compose()
	return cfg, nil
}

// defaultFiltersDir is filters.dir unless set: <data>/filters, which serve
// creates, so that a filter is added by copying its folder there.
func defaultFiltersDir(absData string) string { return filepath.Join(absData, "filters") }

// validate checks what no package's Validate can: how the service's
// timeouts relate to the blob queue's.
func (c *fileConfig) validate() error {
	// Why: a blob write must end (storageTimeout) well before its
	// reservation lets the blob queue delete it.
	lease, storageTimeout := c.BlobQueue.ReservationLease, c.StorageTimeout
	if lease <= 0 {
		lease = storage.DefaultReservationLease
	}
	if storageTimeout <= 0 {
		storageTimeout = storage.DefaultBlobTimeout
	}
	if c.StorageTimeout < 0 || c.DatabaseTimeout < 0 || c.RequestTimeout < 0 || lease <= 2*storageTimeout {
		return fmt.Errorf("storageTimeout, databaseTimeout and requestTimeout must not be negative, and blobQueue.reservationLease (%s) must be longer than twice storageTimeout (%s)", lease, storageTimeout)
	}
	return errors.Join(c.Audit.Validate(), c.Variations.Validate(), c.Erasure.Validate(), c.Events.Validate(), c.Webhooks.Validate(),
		c.Outbound.Validate(), c.CDN.Validate(), c.RateLimits.Validate(), c.Uploads.API.Validate(), c.Quotas.Validate())
}

// compose hands the shared `limits` and `uploads` sections to the
// packages that own their parts, and the `cdn` section's tags to api.
func (c *fileConfig) compose() {
	c.API.Limits = c.Limits.API
	c.API.CDN = c.CDN.Tags
	c.Engine.Limits = c.Limits.Engine
	c.API.Uploads = c.Uploads.API
	c.Engine.Uploads = c.Uploads.Engine
}

// Every key of the configuration file can be set from the environment, in
// a variable named after its path: `limits.maxBodyBytes` is
// VITRINE_LIMITS_MAX_BODY_BYTES. Strings, numbers, booleans and durations
// are written as in the file; a list of strings is comma-separated (or a
// JSON list, for items holding commas); maps and lists of objects are a
// JSON value (`VITRINE_ACCESS_CONTROL_GROUPS='{"uploader":["images.post"]}'`).

// configKey is one settable key of the configuration: a leaf of the file's
// tree (a scalar, a list or a map; sections are walked into).
type configKey struct {
	path  []string      // yaml names from the root: ["limits", "maxBodyBytes"]
	value reflect.Value // the field, settable
	field reflect.StructField
}

// Path is the key as the file writes it: limits.maxBodyBytes.
func (k configKey) Path() string { return strings.Join(k.path, ".") }

// Env is the key's environment variable: VITRINE_LIMITS_MAX_BODY_BYTES.
func (k configKey) Env() string {
	parts := []string{"VITRINE"}
	for _, p := range k.path {
		parts = append(parts, envName(p))
	}
	return strings.Join(parts, "_")
}

// configKeys lists every key of cfg (a pointer to a struct) in file order.
func configKeys(cfg any) []configKey {
	var keys []configKey
	walkKeys(reflect.ValueOf(cfg).Elem(), nil, &keys)
	return keys
}

var durationType = reflect.TypeFor[time.Duration]()

func walkKeys(v reflect.Value, path []string, keys *[]configKey) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		fv := v.Field(i)
		if opts == "inline" {
			walkKeys(fv, path, keys)
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name) // yaml's default
		}
		p := append(append([]string(nil), path...), name)
		if f.Type.Kind() == reflect.Struct && f.Type != durationType {
			walkKeys(fv, p, keys)
			continue
		}
		*keys = append(*keys, configKey{path: p, value: fv, field: f})
	}
}

// envName turns a yaml key into its environment form: maxBodyBytes →
// MAX_BODY_BYTES. A run of capitals is one word (tokenMaxTTL →
// TOKEN_MAX_TTL, maxIdleMB → MAX_IDLE_MB).
func envName(key string) string {
	var b strings.Builder
	rs := []rune(key)
	for i, r := range rs {
		if i > 0 && unicode.IsUpper(r) && (!unicode.IsUpper(rs[i-1]) || i+1 < len(rs) && unicode.IsLower(rs[i+1])) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}

// applyEnv sets every key of cfg whose variable lookup finds.
func applyEnv(cfg any, lookup func(string) (string, bool)) error {
	for _, k := range configKeys(cfg) {
		raw, ok := lookup(k.Env())
		if !ok {
			continue
		}
		if err := setFromString(k.value, raw); err != nil {
			return fmt.Errorf("%s (%s): %w", k.Env(), k.Path(), err)
		}
	}
	return nil
}

// setFromString sets fv from an environment value.
func setFromString(fv reflect.Value, raw string) error {
	if fv.Type() == durationType {
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
			return setFromJSON(fv, raw)
		}
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return err
		}
		fv.Set(reflect.ValueOf(&b))
	case reflect.Slice:
		if fv.Type().Elem().Kind() != reflect.String || strings.HasPrefix(strings.TrimSpace(raw), "[") {
			return setFromJSON(fv, raw)
		}
		fv.Set(reflect.ValueOf(splitList(raw)).Convert(fv.Type()))
	default:
		return setFromJSON(fv, raw)
	}
	return nil
}

// setFromJSON decodes a JSON value into fv the way the file's YAML would
// be (JSON is YAML's flow style), with the same key names and checks.
func setFromJSON(fv reflect.Value, raw string) error {
	dec := yaml.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.KnownFields(true)
	p := reflect.New(fv.Type())
	if err := dec.Decode(p.Interface()); err != nil {
		return fmt.Errorf("want a JSON value: %w", err)
	}
	fv.Set(p.Elem())
	return nil
}

// cdnConfig is the `cdn` section (api/cdn/README.md "CDN"): the cache tags api
// writes on its answers, and the purgers that changes are sent to.
type cdnConfig struct {
	// Tags are cdn.tagPrefix and cdn.tagHeaders; compose hands them to api.
	Tags cdn.Tags `yaml:",inline"`
	// Purgers are the caches each change's tags are purged from
	// (cdn.NewPurger builds each one); none purges nothing.
	Purgers []cdn.PurgerConfig `yaml:"purgers"`
}

// resolveTokens reads the tokens that purgers name by tokenEnv, through
// lookup (os.LookupEnv).
func (c *cdnConfig) resolveTokens(lookup func(string) (string, bool)) error {
	var errs []error
	for i := range c.Purgers {
		if err := c.Purgers[i].ResolveToken(lookup); err != nil {
			errs = append(errs, fmt.Errorf("cdn.purgers[%d]: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

// Validate checks the tags' settings and every purger.
func (c cdnConfig) Validate() error {
	errs := []error{c.Tags.Validate()}
	for i, p := range c.Purgers {
		if err := p.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("cdn.purgers[%d]: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

// requestTimeout is requestTimeout with its default.
func requestTimeout(cfg *fileConfig) time.Duration {
	if cfg.RequestTimeout > 0 {
		return cfg.RequestTimeout
	}
	return 60 * time.Second
}

// boolOrTrue reads an optional boolean that defaults to true.
func boolOrTrue(p *bool) bool { return p == nil || *p }
