package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vitrine/vitrine/api"
	"github.com/vitrine/vitrine/engine"
	"github.com/vitrine/vitrine/filters"
	"github.com/vitrine/vitrine/storage"
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
// percent percent of images, chosen per image (filters.CanaryBucket).
type canaryGuest struct {
	guest
	canary  guest
	percent int
}

// For returns the version that serves the image subject names.
func (c canaryGuest) For(subject string) engine.Guest {
	if filters.CanaryBucket(subject) < c.percent {
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

// filterSync keeps this instance's filters deployed through the API in
// step with the active set (filters/README.md, Filters through the API): every
// filters.syncInterval, and at once after a change made through this
// instance, it reads the set's revision; when it changed it fetches the
// bundles it lacks from the blob store and hands them to the host, which
// loads them in the background as a reload does and swaps each in once it
// is ready. Every pass also reports what the instance serves, with a
// heartbeat, for GET /filters.
type filterSync struct {
	db       *storage.DB
	blobs    *storage.Blobs
	h        *filters.Host
	log      *slog.Logger
	instance func() string

	// revision is the set's revision last deployed, -1 before the first.
	revision int64
	// bundles are the bundles of the last deployment, by version.
	bundles map[string]filters.Bundle
	// canaries maps a filter's name to its canary's percent, read by
	// every request (guestSource).
	canaries atomic.Pointer[map[string]int]
	// wake is the sync's worker, woken after a change made here.
	wake *worker
	// first is closed once the first deployment has loaded or failed.
	first     chan struct{}
	firstOnce sync.Once
	// handed is the revision last handed to the host (loaded or loading).
	handed atomic.Int64

	// read is the last read of the active set that notLoaded made, and
	// when it started; readMu serialises those reads.
	readMu  sync.Mutex
	read    storage.FilterSet
	readErr error
	readAt  time.Time
	// kinds caches each version's manifest kind (a version never changes).
	kinds sync.Map
}

func newFilterSync(db *storage.DB, blobs *storage.Blobs, h *filters.Host, log *slog.Logger) *filterSync {
	s := &filterSync{db: db, blobs: blobs, h: h, log: log, revision: -1, bundles: map[string]filters.Bundle{},
		first: make(chan struct{}), instance: func() string { return "" }}
	s.canaries.Store(&map[string]int{})
	s.handed.Store(-1)
	return s
}

// defaultSyncInterval is filters.syncInterval's default.
const defaultSyncInterval = 5 * time.Second

// worker is the sync's loop.
func (s *filterSync) worker(interval time.Duration) *worker {
	w := newWorker("filter sync", interval, defaultSyncInterval, s.pass, s.log)
	w.stop = s.done
	s.wake = w
	return w
}

// done releases readiness when the worker ends before a first deployment.
func (s *filterSync) done() { s.firstOnce.Do(func() { close(s.first) }) }

// pass deploys the active set when it changed, then reports.
func (s *filterSync) pass(ctx context.Context) (int, error) {
	n, err := s.deploy(ctx)
	if err != nil {
		return n, err
	}
	return n, s.report(ctx)
}

// deploy loads the active set when its revision changed, and waits for
// the loads (at most filters.compileTimeout each); a bundle that cannot be
// fetched leaves the revision to be tried again at the next pass.
func (s *filterSync) deploy(ctx context.Context) (int, error) {
	set, err := s.db.FilterSet(ctx)
	if err != nil {
		return 0, err
	}
	if set.Revision == s.revision {
		return 0, nil
	}
	want := map[string]filters.Bundle{}
	bundles := map[string]filters.Bundle{}
	canaries := map[string]int{}
	var errs []error
	add := func(key, name, version string) {
		b, err := s.bundle(ctx, name, version)
		if err != nil {
			errs = append(errs, err)
			return
		}
		want[key], bundles[version] = b, b
	}
	for name, d := range set.Filters {
		if !d.Enabled {
			continue
		}
		add(name, name, d.Version)
		if d.Canary != "" && d.Percent > 0 {
			add(filters.CanaryKey(name), name, d.Canary)
			canaries[name] = d.Percent
		}
	}
	fetchErr := errors.Join(errs...)
	if fetchErr != nil && s.revision != -1 {
		return 0, fetchErr // keep serving the set loaded before; the next pass tries again
	}
	// Why the first deployment goes ahead without what it could not
	// fetch: a new instance would otherwise never be ready; it serves the
	// rest and tries again at the next pass.
	s.log.Info("filter sync: deploying", "revision", set.Revision, "filters", len(want))
	w, err := s.h.Deploy(want)
	if err != nil {
		return 0, err
	}
	// Why the percents before the loads finish: a canary still loading is
	// not in the set yet, and guestSource serves the main version.
	s.canaries.Store(&canaries)
	s.bundles = bundles
	s.handed.Store(set.Revision)
	if fetchErr == nil {
		s.revision = set.Revision
	}
	// Why a report before the loads finish: the instance that took the
	// change waits for every instance's (api, rollout), and "loading"
	// with the version says this one has it.
	if err := s.report(ctx); err != nil {
		s.log.Warn("filter sync: report", "err", err)
	}
	w.Wait(ctx)
	s.firstOnce.Do(func() { close(s.first) })
	return len(want), fetchErr
}

// bundle returns the bundle of version, from the last deployment or the
// blob store.
func (s *filterSync) bundle(ctx context.Context, name, version string) (filters.Bundle, error) {
	if b, ok := s.bundles[version]; ok && b.Name == name {
		return b, nil
	}
	data, err := s.blobs.Get(ctx, storage.FilterBlobKey(version))
	if err != nil {
		return filters.Bundle{}, fmt.Errorf("filter %s version %s: %w", name, version, err)
	}
	// A stored bundle is the tar PUT wrote, after its checks: bounded by
	// what a PUT takes.
	m, w, err := api.ReadFilterBundle(bytes.NewReader(data), api.DefaultBundleLimits(api.MaxFilterBundleBytes))
	if err != nil {
		return filters.Bundle{}, fmt.Errorf("filter %s version %s: %w", name, version, err)
	}
	return filters.Bundle{Name: name, Version: version, Manifest: m, Wasm: w}, nil
}

// report records what this instance serves now.
func (s *filterSync) report(ctx context.Context) error {
	inst := s.instance()
	if inst == "" {
		return nil
	}
	var running []api.FilterRunning
	for _, st := range s.h.Current().Status() {
		running = append(running, api.FilterRunning{Name: st.Name, Source: st.Source, Version: st.Version,
			Target: st.Target, ContentHash: st.ContentHash, State: st.State, Error: st.Error})
	}
	data, err := json.Marshal(running)
	if err != nil {
		return err
	}
	return s.db.ReportFilterInstance(ctx, inst, data)
}

// lookupTimeout bounds notLoaded's reads of the database.
const lookupTimeout = 2 * time.Second

// notLoaded answers for a transformation name that the host's set does not
// hold: when the active set has it enabled, this instance has not loaded
// it yet (its sync has not passed since the change), and the answer is a
// KindUnavailable error (503, Retry-After), never "not registered"; the
// sync is woken when the change is news to it. nil when no filter of that
// name is deployed, enabled and a transformation.
func (s *filterSync) notLoaded(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	set, err := s.freshSet(ctx)
	if err != nil {
		return &filters.Error{Kind: filters.KindUnavailable, Filter: name, Err: err,
			Msg: "Cannot tell whether filter " + name + " is deployed: the database did not answer; try again"}
	}
	d, ok := set.Filters[name]
	if !ok || !d.Enabled || s.kind(ctx, name, d.Version) != filters.KindTransformation {
		return nil
	}
	if set.Revision > s.handed.Load() && s.wake != nil {
		s.wake.Wake()
	}
	return &filters.Error{Kind: filters.KindUnavailable, Filter: name,
		Msg: "Filter " + name + " version " + d.Version[:12] + " is being deployed and has not loaded on this instance yet; try again"}
}

// freshSet reads the active set, as it is at least since the call: calls
// made while a read is under way share the next read, so a burst of
// requests for unknown names makes one query at a time.
func (s *filterSync) freshSet(ctx context.Context) (storage.FilterSet, error) {
	arrived := time.Now()
	s.readMu.Lock()
	defer s.readMu.Unlock()
	if s.readAt.After(arrived) {
		return s.read, s.readErr
	}
	start := time.Now()
	s.read, s.readErr = s.db.FilterSet(ctx)
	s.readAt = start
	return s.read, s.readErr
}

// kind is the manifest kind of a recorded version ("" when unknown).
func (s *filterSync) kind(ctx context.Context, name, version string) string {
	if k, ok := s.kinds.Load(version); ok {
		return k.(string)
	}
	v, err := s.db.FilterVersion(ctx, name, version)
	if err != nil {
		return ""
	}
	var m struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(v.Manifest, &m) // a recorded manifest passed the checks
	s.kinds.Store(version, m.Kind)
	return m.Kind
}
