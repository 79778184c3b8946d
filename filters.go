package main

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"syscall"
	"time"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/filters"
)

// openFilters starts loading the filters of filters.dir in the
// background, compiled modules cached under the data directory: the server
// listens meanwhile. The default folder, <data>/filters, is created; a
// folder set in the configuration is not, so that a mistyped path fails
// the load instead of loading nothing. Native transformation and preset
// names are reserved.
func openFilters(ctx context.Context, cfg *fileConfig, dataDir string, eng *engine.Engine, obs filters.Observer, log *slog.Logger) (*filters.Host, error) {
	fc := cfg.Filters
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, err
	}
	if fc.Dir == defaultFiltersDir(abs) {
		if err := os.MkdirAll(fc.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("filters: %w", err)
		}
	}
	log.Info("filters folder", "dir", fc.Dir, "reload", "POST /filters/reload or SIGHUP")
	fc.CacheDir = filepath.Join(abs, "wasm-cache")
	ec := eng.Config()
	fc.MaxWidth, fc.MaxHeight, fc.MaxPixels = ec.MaxWidth, ec.MaxHeight, ec.MaxPixels
	fc.Reserved = eng.Registry().Names()
	for name := range ec.Presets {
		fc.Reserved = append(fc.Reserved, name)
	}
	fc.Logger = log
	fc.Observer = obs
	fc.Trace = traceSpan
	return filters.Start(ctx, fc)
}

// wireFilters hands the filters to the engine (transformations) and the
// api (listeners, stats_add counters in GET /stats).
func wireFilters(fh *filters.Host, sync *filterSync, eng *engine.Engine, srv *api.Server) {
	eng.Registry().SetGuests(guestSource{fh, sync})
	srv.Bus.AddSource(filterListeners{fh})
	srv.Bus.On("stats.get", 0, statsCounters(fh))
}

// reloadOnHUP reloads the filters on every SIGHUP until ctx ends.
func reloadOnHUP(ctx context.Context, fh *filters.Host, log *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
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
// set, and those still loading as guests that answer 503. A filter with a
// canary loaded is a canaryGuest.
type guestSource struct {
	h    *filters.Host
	sync *filterSync // nil: no canaries
}

func (g guestSource) Guest(name string) (engine.Guest, bool) {
	set := g.h.Current()
	if t, ok := set.Transformation(name); ok {
		if g.sync != nil {
			if p := g.sync.percent(name); p > 0 {
				if c, ok := set.Transformation(filters.CanaryKey(name)); ok {
					return canaryGuest{guest: guest{t}, canary: guest{c}, percent: p}, true
				}
			}
		}
		return guest{t}, true
	}
	if p, ok := set.Pending(name); ok && p.Manifest().Kind == filters.KindTransformation {
		return loadingGuest{p.Err()}, true
	}
	if p, ok := set.Unavailable(name); ok && p.Manifest().Kind == filters.KindTransformation {
		return loadingGuest{p.Err()}, true
	}
	if g.sync != nil && !filters.IsCanaryKey(name) {
		if err := g.sync.notLoaded(name); err != nil {
			return loadingGuest{err}, true
		}
	}
	return nil, false
}

func (g guestSource) GuestNames() []string { return g.h.Current().TransformationNames() }

// guest is a transformation filter described from its manifest, whose
// parameters are the one schema native transformations are described with
// (schema.Param): a guest's int default is a number, as a native one's.
type guest struct{ filters.Transformation }

func (g guest) Describe() engine.Description {
	m := g.Manifest()
	d := engine.Description{Name: m.Name, Kind: "wasm", Description: m.Description, Params: []engine.ParamDesc{}}
	for _, name := range m.ParamNames() {
		d.Params = append(d.Params, engine.ParamDesc(m.Params[name].Param))
	}
	return d
}

// canaryGuest is a transformation filter with a canary version served for
// percent percent of images, chosen per image (canaryBucket).
type canaryGuest struct {
	guest
	canary  guest
	percent int
}

// For returns the version that serves the image subject names.
func (c canaryGuest) For(subject string) engine.Guest {
	if canaryBucket(subject) < c.percent {
		return c.canary
	}
	return c.guest
}

// loadingGuest is a transformation filter this instance cannot run now:
// still loading, deployed through the API but not loaded here yet, or
// unavailable or failed here. Its step fails with err (503, Retry-After)
// when the chain is parsed, before any pixel is decoded.
type loadingGuest struct{ err error }

func (g loadingGuest) CheckParams(map[string]string) (map[string]string, error) {
	return nil, g.err
}
func (g loadingGuest) ContentHash() string { return "" }
func (g loadingGuest) TransformTo(context.Context, *image.NRGBA, map[string]string, map[string]any, func(*image.NRGBA) error) error {
	return g.err
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

// filterAdmin serves GET /filters and POST /filters/reload, and checks the
// filters deployed through the API (api.FilterDeployer).
type filterAdmin struct {
	h    *filters.Host
	sync *filterSync
	// wait bounds how long POST /filters/reload waits for the filters it
	// loads: filters.compileTimeout.
	wait time.Duration
	// maxModule is filters.maxModuleBytes.
	maxModule int64
	// rollout is how long a push waits for every instance to load it:
	// filters.syncInterval plus filters.compileTimeout.
	rollout time.Duration
}

func (a filterAdmin) Filters() []api.FilterStatus { return filterStatuses(a.h.Current().Status()) }

func (a filterAdmin) ReloadFilters(ctx context.Context) ([]api.FilterStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, a.wait)
	defer cancel()
	set, err := a.h.Reload(ctx)
	return filterStatuses(set.Status()), err
}

// CheckFilter compiles and starts the bundle as a reload would, then drops
// it.
func (a filterAdmin) CheckFilter(ctx context.Context, name string, manifest, wasm []byte) (string, string, error) {
	version := filters.BundleVersion(manifest, wasm)
	m, err := a.h.Check(ctx, filters.Bundle{Name: name, Version: version, Manifest: manifest, Wasm: wasm})
	if err != nil {
		return "", "", err
	}
	return version, m.Kind, nil
}

// DeployLimits are filters.maxModuleBytes and the rollout's wait.
func (a filterAdmin) DeployLimits() api.DeployLimits {
	return api.DeployLimits{MaxModuleBytes: a.maxModule, RolloutWait: a.rollout}
}

// SyncFilters wakes the sync worker.
func (a filterAdmin) SyncFilters() {
	if a.sync != nil && a.sync.wake != nil {
		a.sync.wake.Wake()
	}
}

var _ api.FilterDeployer = filterAdmin{}

// filterStatuses is the filters' own status in the api's terms.
func filterStatuses(list []filters.Status) []api.FilterStatus {
	out := make([]api.FilterStatus, len(list))
	for i, f := range list {
		out[i] = api.FilterStatus{Name: f.Name, Source: f.Source, Version: f.Version, Target: f.Target, State: f.State, Loaded: f.Loaded,
			ContentHash: f.ContentHash, Error: f.Error, Counters: f.Counters}
		if f.Manifest != nil {
			out[i].Manifest, _ = json.Marshal(f.Manifest) // a parsed manifest always marshals
		}
		// Why a conversion: api.FilterStats has filters.Stats' fields, so a
		// field added to one and not the other stops the build here.
		out[i].Stats = (*api.FilterStats)(f.Stats)
	}
	return out
}

// percent is the canary percent of the filter name (0: none).
func (s *filterSync) percent(name string) int { return (*s.canaries.Load())[name] }

// canaryBucket places subject (user/identifier) in one of 100 buckets by
// its SHA-256: a canary at p percent serves the subjects in buckets below
// p, so one image always gets the same version, and raising p only moves
// images from the main version to the canary.
func canaryBucket(subject string) int {
	sum := sha256.Sum256([]byte(subject))
	return int(binary.BigEndian.Uint64(sum[:8]) % 100)
}

// gcPaceInterval is how often paceGC looks again.
const gcPaceInterval = time.Second

// paceGC, while busy says guest code runs (or ran since it last asked),
// lets Go's heap grow to at least floor bytes between garbage collections
// (and to twice the live heap, Go's default, when that is more); otherwise
// it leaves Go's default pacing. It does nothing when floor is 0 or the
// operator set GOGC, and gives Go's default back when ctx ends.
//
// Why: every collection stops the world twice, and a stop waits for every
// goroutine to reach a safe point. A goroutine running compiled guest code
// reaches one only at its next loop back-edge, on a thread at low priority
// (filters.policy) that the kernel may leave waiting for tens of milliseconds
// while native work holds the cores, and meanwhile every other goroutine
// waits too. The server's live Go heap is tens of megabytes (images live in
// libvips' memory, not Go's), so a thumbnail workload collects about once a
// second under Go's default; with the floor, every few seconds
// (filters/README.md, Admission and isolation).
func paceGC(ctx context.Context, floor uint64, busy func() bool) {
	if floor == 0 || os.Getenv("GOGC") != "" {
		return
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	set := 100
	defer func() {
		if set != 100 {
			debug.SetGCPercent(100)
		}
	}()
	t := time.NewTicker(gcPaceInterval)
	defer t.Stop()
	for {
		p := 100
		if busy() {
			metrics.Read(sample)
			var live uint64
			if sample[0].Value.Kind() == metrics.KindUint64 {
				live = sample[0].Value.Uint64()
			}
			p = gcPercentFor(live, floor)
		}
		if p != set {
			debug.SetGCPercent(p)
			set = p
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// gcPercentFor is the GOGC under which a heap of live bytes grows to at
// least floor bytes before the next collection (and never below Go's
// default of 100). It is rounded down to a multiple of 25 so that a live
// heap moving by a few kilobytes does not change it every second.
func gcPercentFor(live, floor uint64) int {
	live = max(live, 1<<20)
	if live*2 >= floor {
		return 100
	}
	p := int((floor-live)*100/live) / 25 * 25
	return max(p, 100)
}

// guestsBusy returns a busy for paceGC: true while a guest call of calls
// runs or when one started since the last question.
func guestsBusy(calls func() (started uint64, running int)) func() bool {
	var last uint64
	return func() bool {
		started, running := calls()
		busy := running > 0 || started != last
		last = started
		return busy
	}
}
