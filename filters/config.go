package filters

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
)

// Capabilities a manifest may ask for beyond the sandbox (ABI.md section 6).
const (
	CapClock  = "clock"
	CapRandom = "random"
)

// Defaults of the load limits.
const (
	DefaultMaxModuleBytes = 32 << 20
	DefaultCompileTimeout = 60 * time.Second
)

// The scheduling policies of guest threads (Config.Policy).
const (
	PolicyIdle = "idle"
	PolicyNice = "nice"
)

// Config is the filters part of the service configuration. The zero value
// loads nothing (no Dir) and grants no capability.
type Config struct {
	// Dir holds one folder per filter (`filters.dir`, VITRINE_FILTERS_DIR).
	// Empty means no filters.
	Dir string `yaml:"dir"`
	// Allow lists the capabilities the operator grants to filters that ask
	// for them: "clock", "random". A filter asking for one not listed is
	// refused at load.
	Allow []string `yaml:"allow"`
	// MaxRunning bounds the guest calls that run at once across every
	// filter (default: the number of CPUs); calls beyond it wait in their
	// filter's queue. package main (app.go) raises GOMAXPROCS by as much, so that running
	// guests never hold the processors the server's own work needs.
	MaxRunning int `yaml:"maxRunning"`
	// MaxQueue caps how many calls may wait for one filter (default 64); a
	// manifest's limits.queue may ask for fewer. A call that finds its
	// filter's queue full answers 503 with Retry-After at once.
	MaxQueue int `yaml:"maxQueue"`
	// MaxQueueWait caps how long a call waits for an instance and a
	// running slot (default 10s); a manifest's limits.queueMs may ask for
	// less. A call that waits longer answers 503 with Retry-After.
	MaxQueueWait time.Duration `yaml:"maxQueueWait"`
	// Nice is the scheduling priority of the threads that run guest code,
	// 1-19 as nice(1) counts: higher yields more to the server's own
	// threads (default 10: a guest gets about a tenth of a core that
	// native work wants too).
	Nice int `yaml:"nice"`
	// Policy is how the threads that run guest code are scheduled: "nice"
	// (the default: the normal policy at Nice) or "idle" (Linux's
	// SCHED_IDLE: a guest runs on a core only when no other thread wants
	// it, and gives it up the moment one wakes). Where SCHED_IDLE is not
	// available, "idle" falls back to Nice.
	Policy string `yaml:"policy"`
	// GCHeapFloorMB: while guest code runs, package main (filters.go) lets
	// Go's heap grow to at least this many MB between garbage collections
	// (default off, as is any negative value: Go's own pacing). Every
	// collection stops the world, which waits for each running guest to
	// reach its next loop back-edge on its low-priority thread (filters/README.md,
	// Admission and isolation). Off by default: measured, it did not help
	// (filters/README.md).
	GCHeapFloorMB int `yaml:"gcHeapFloorMB"`
	// IdleTimeout closes instances that have not been used for this long
	// (default 60s); a filter keeps at least none, and starts one again
	// on demand.
	IdleTimeout time.Duration `yaml:"idleTimeout"`
	// RetainMemoryMB: an instance whose linear memory grew past this is
	// closed after its call instead of being kept for the next one
	// (default 64), so that one large image does not pin its memory.
	RetainMemoryMB int `yaml:"retainMemoryMB"`
	// MaxModuleBytes refuses a filter.wasm larger than this at load, before
	// it is read (default 32 MiB). Compilation time and memory grow with
	// the module, much faster than linearly for hostile code, so the limit
	// keeps one file from costing gigabytes; 32 MiB is about ten times a
	// real filter (the SDK's Go examples, built with the standard
	// toolchain, are 3.4 MB).
	MaxModuleBytes int64 `yaml:"maxModuleBytes"`
	// CompileTimeout bounds loading one filter in the background: compiling
	// its module and starting its first instance (default 60s, some thirty
	// times what a 3.4 MB Go filter takes on an idle core, for a loaded
	// machine). A filter not loaded by then is marked failed; a compilation
	// cannot be interrupted, so it runs on at low priority and its result
	// is dropped.
	CompileTimeout time.Duration `yaml:"compileTimeout"`
	// SyncInterval is how often every instance polls the active set of
	// filters deployed through the API (default 5s); package main
	// (filters.go) loads a changed set in the background and a
	// change made through this instance at once.
	SyncInterval time.Duration `yaml:"syncInterval"`
	// CacheDir keeps compiled modules across restarts (wazero's compilation
	// cache); package main (filters.go) puts it under the data directory. Empty keeps them in
	// memory only.
	CacheDir string `yaml:"-"`
	// MaxWidth, MaxHeight and MaxPixels bound what pixels_write accepts:
	// main sets them to the engine's image limits. Zero leaves that bound
	// to the guest's memory.
	MaxWidth  int   `yaml:"-"`
	MaxHeight int   `yaml:"-"`
	MaxPixels int64 `yaml:"-"`
	// Reserved are names a filter may not take: the engine's native
	// transformations.
	Reserved []string `yaml:"-"`
	// RetireGrace is how long a filter replaced or removed by a reload keeps
	// its warm instances for requests that resolved it before the reload
	// (default 30s); such requests can call it later too, on fresh instances.
	RetireGrace time.Duration `yaml:"-"`
	// Logger receives load reasons and guest log lines; default slog.Default().
	Logger *slog.Logger `yaml:"-"`
	// Observer, when set, is told of every finished call (metrics).
	Observer Observer `yaml:"-"`
	// Trace, when set, starts a span named name with attrs under ctx's
	// span, and returns ctx carrying it and the function that ends it with
	// its outcome (nil on success). A call has two spans, filter.wait (for
	// an instance and a running slot) and then filter.run (the guest at
	// work); Transformation.Reserve has filter.reserve. Each has the
	// filter's name, version and kind (vitrine.filter.*). package main
	// gives the service's tracing, which engine shares; nil starts none.
	Trace func(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, func(error)) `yaml:"-"`

	runner *runner // MaxRunning's slots, shared by a host's filters
}

// noTrace is what a filter traces with when Config.Trace is nil: nothing.
func noTrace(ctx context.Context, _ string, _ ...attribute.KeyValue) (context.Context, func(error)) {
	return ctx, func(error) {}
}

// Observer is told of every finished call of a filter: its name, its kind
// ("transformation" or "listener"), how long it took and its error (nil on
// success). It must be safe for concurrent use and quick.
type Observer interface {
	ObserveFilter(filter, kind string, d time.Duration, err error)
}

// Validate reports the first configuration problem.
func (c Config) Validate() error {
	for _, a := range c.Allow {
		if a != CapClock && a != CapRandom {
			return fmt.Errorf("filters: allow: unknown capability %q (want clock or random)", a)
		}
	}
	if c.MaxWidth < 0 || c.MaxHeight < 0 || c.MaxPixels < 0 || c.RetireGrace < 0 {
		return fmt.Errorf("filters: limits and retireGrace must not be negative")
	}
	switch {
	case c.MaxRunning < 0:
		return fmt.Errorf("filters: maxRunning must not be negative, got %d", c.MaxRunning)
	case c.MaxQueue < 0:
		return fmt.Errorf("filters: maxQueue must not be negative, got %d", c.MaxQueue)
	case c.MaxQueueWait < 0:
		return fmt.Errorf("filters: maxQueueWait must not be negative, got %s", c.MaxQueueWait)
	case c.Nice < 0 || c.Nice > 19:
		return fmt.Errorf("filters: nice: want 1-19, got %d", c.Nice)
	case c.Policy != "" && c.Policy != PolicyIdle && c.Policy != PolicyNice:
		return fmt.Errorf("filters: policy: want %s or %s, got %q", PolicyIdle, PolicyNice, c.Policy)
	case c.IdleTimeout < 0:
		return fmt.Errorf("filters: idleTimeout must not be negative, got %s", c.IdleTimeout)
	case c.RetainMemoryMB < 0:
		return fmt.Errorf("filters: retainMemoryMB must not be negative, got %d", c.RetainMemoryMB)
	case c.SyncInterval < 0:
		return fmt.Errorf("filters: syncInterval must not be negative, got %s", c.SyncInterval)
	case c.MaxModuleBytes < 0 || c.CompileTimeout < 0:
		return fmt.Errorf("filters: maxModuleBytes and compileTimeout must not be negative")
	}
	return nil
}

// withDefaults returns c with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.MaxModuleBytes == 0 {
		c.MaxModuleBytes = DefaultMaxModuleBytes
	}
	if c.CompileTimeout == 0 {
		c.CompileTimeout = DefaultCompileTimeout
	}
	if c.RetireGrace == 0 {
		c.RetireGrace = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.MaxRunning == 0 {
		c.MaxRunning = runtime.NumCPU()
	}
	if c.MaxQueue == 0 {
		c.MaxQueue = 64
	}
	if c.MaxQueueWait == 0 {
		c.MaxQueueWait = 10 * time.Second
	}
	if c.Nice == 0 {
		c.Nice = 10
	}
	if c.Policy == "" {
		c.Policy = PolicyNice
	}
	if c.GCHeapFloorMB == 0 {
		c.GCHeapFloorMB = DefaultGCHeapFloorMB
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = time.Minute
	}
	if c.RetainMemoryMB == 0 {
		c.RetainMemoryMB = 64
	}
	if c.runner == nil {
		c.runner = newRunner(c.MaxRunning)
	}
	return c
}

// DefaultGCHeapFloorMB is GCHeapFloorMB's default: off.
const DefaultGCHeapFloorMB = -1

// GCHeapFloor is GCHeapFloorMB with its default applied, in bytes (0: off).
func (c Config) GCHeapFloor() uint64 {
	mb := c.withDefaults().GCHeapFloorMB
	if mb < 0 {
		return 0
	}
	return uint64(mb) << 20
}

// MaxRunningCalls is MaxRunning with its default applied: how many guest
// calls may run at once.
func (c Config) MaxRunningCalls() int { return c.withDefaults().MaxRunning }

// allowed reports whether the operator grants capability cap.
func (c Config) allowed(capability string) bool { return slices.Contains(c.Allow, capability) }
